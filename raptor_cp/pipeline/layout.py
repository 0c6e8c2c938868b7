"""PipelineCoreLayout: topology-aware core regions per stage and stage-local placement.

Regions. The chip's cores are ordered along a snake (boustrophedon) path over
their grid coordinates: rows by increasing row, alternate rows reversed, so that
consecutive cores of a full mesh are one hop apart. Stage ``s`` takes the next
``budget[s]`` cores of that path; stages therefore occupy contiguous regions in
stage order, and the producer/consumer traffic of neighbouring stages crosses
one region boundary. Cores left over after the last stage are idle (stage -1).
`check_region` verifies the adjacency the construction promises: every region is
connected through one-hop links (O(k²) per region of k cores, O(P²) overall as in
the seeds' complexity table).

Placement. Within a region, a stage's tasks need a physical core each. Two
candidates are priced (seeds: scheduling.md, "Placement ranks maximum per-core
compute/incident-transfer demand, then stage completion and compute load; within
1% demand, stage span breaks the tie"; scheduling-implementation.md, "Priorities,
placement, and recovery limits"):

* ``retained``: the constructive packing's assignment (the capacity evidence),
  its cores numbered by first use in topological order and laid along the
  region's snake path, so that consecutive chunks of the order sit side by side;
* ``greedy``: topology-aware greedy in physical task (topological) order: each
  task goes to the region core where its weights fit and the core's demand after
  placing it, with hop-aware incident transfers, is smallest (then fewest new
  weight slots, then snake position). It is skipped when some task fits nowhere;
  the retained assignment always remains.
* ``replicated``: the stage's weight copies planned on the region first
  (`raptor_cp.heuristics.replication.plan_copies`: balanced first copies, then
  water-filling of work per copy over the free slots), then each task, in
  topological order, on the core holding its weights where it finishes
  earliest (hop-aware transfers from its placed producers; ties: lower demand,
  then snake position). Retained packing puts a layer's lanes on the one core
  that holds its weights, so they run one after another and the stage's span,
  which bounds the pipeline's interval through its restart synchronization,
  grows with the lanes; copies on the stage's spare slots let them run side by
  side. Skipped when the plan finds no first-copy placement or no weight has
  capacity limits.

Each candidate's demand is the maximum over its cores of serial compute plus
incident same-stage transfer time (``target.transfer_ns`` between the actual
cores, charged to both endpoints: a placement proxy, not elapsed time); its
cycle bound is the larger of demand and the longest core window (a core's first
task start to its last task finish in the stage's list timing). Among
candidates within 1 % of the lowest cycle bound (integer test
``100 b <= 101 best``), the smallest stage span wins, then the lowest maximum
compute load, then the candidate order above.

Why the cycle bound and not demand first, as the seeds rank: the seeds call
their rule a placement heuristic, not a timing model, and in the realized
programs a core restarts once its window closes (`StageTiming.cycle_ns`).
Measured on ResNet-18 (arch-a; `benchmarks/bench_stage_placement.py`,
docs/benchmarks.md): on the depth-8 initial partition demand-first keeps the
retained packing of the 146-core first stage (demand 2.01 ms, but one
layer's lanes run one after another on the core holding its weights: span
9.83 ms), queue interval 7.50 ms; the cycle bound picks greedy (3.25 ms span),
5.05 ms. On equal splits into 1 to 8 stages the two rules agree but once
(three stages: 5.09 against 5.06 ms).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from raptor_cp.errors import ScheduleViolationError
from raptor_cp.graph import ComputeGraph
from raptor_cp.heuristics.replication import plan_copies
from raptor_cp.targets.base import SchedulingTarget

TIE_PERCENT = 1
"""Demands within this many percent of the best are tied; stage span decides (seeds)."""

PlacementKey = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]
"""What a placement depends on: the stage's tasks, their packing and the region's cores."""


def snake_order(target: SchedulingTarget) -> tuple[int, ...]:
    """Every core of ``target`` along the boustrophedon path over its coordinates."""
    coords = [target.coordinates(p) for p in range(target.cores)]
    rows = sorted({r for r, _ in coords})
    rank = {r: i for i, r in enumerate(rows)}

    last = len(rows) - 1

    def key(core: int) -> tuple[int, int, int]:
        # Directions alternate counting back from the last row, which runs left to
        # right: a partial last row (core_cnt < rows x cols) then starts at column 0,
        # right below where the row before it ends.
        row, col = coords[core]
        return (row, -col if (last - rank[row]) % 2 else col, core)

    return tuple(sorted(range(target.cores), key=key))


@dataclass(frozen=True)
class PipelineCoreLayout:
    """Contiguous core regions of the stages along the snake path.

    Parameters
    ----------
    regions:
        Physical cores of each stage, in snake-path order.
    """

    regions: tuple[tuple[int, ...], ...]

    @classmethod
    def build(cls, target: SchedulingTarget, budgets: Sequence[int]) -> PipelineCoreLayout:
        """Give stage ``s`` the next ``budgets[s]`` cores of the snake path.

        Raises
        ------
        ScheduleViolationError
            If a budget is below 1 or the budgets exceed the target's cores.
        """
        if any(b < 1 for b in budgets):
            raise ScheduleViolationError(
                f"every stage needs at least one core, got {list(budgets)}"
            )
        if sum(budgets) > target.cores:
            raise ScheduleViolationError(
                f"stage budgets {list(budgets)} need {sum(budgets)} cores but {target.name} "
                f"has {target.cores}"
            )
        path = snake_order(target)
        bounds = np.concatenate([[0], np.cumsum(budgets)]).tolist()
        regions = tuple(path[a:b] for a, b in itertools.pairwise(bounds))
        return cls(regions)

    def stage_of_core(self, cores: int) -> tuple[int, ...]:
        """Stage of every core id (-1 for idle cores)."""
        stage = [-1] * cores
        for s, region in enumerate(self.regions):
            for p in region:
                stage[p] = s
        return tuple(stage)


def check_region(target: SchedulingTarget, region: Sequence[int], stage: int) -> None:
    """Raise `ScheduleViolationError` unless ``region`` is connected by one-hop links.

    A region whose consecutive cores are one hop apart (what `snake_order` builds)
    is a path, hence connected: ``O(R)`` target calls. Otherwise a search over
    all pairs decides, ``O(R²)``.
    """
    if not region:
        raise ScheduleViolationError(f"stage {stage} has no core")
    if all(target.hops(a, b) == 1 for a, b in itertools.pairwise(region)):
        return
    reached = {region[0]}
    frontier = [region[0]]
    while frontier:
        a = frontier.pop()
        for b in region:
            if b not in reached and target.hops(a, b) == 1:
                reached.add(b)
                frontier.append(b)
    if len(reached) != len(region):
        missing = next(p for p in region if p not in reached)
        raise ScheduleViolationError(
            f"stage {stage}: core {missing} is not connected to core {region[0]} through "
            "the stage's own cores"
        )


@dataclass(frozen=True)
class StageTiming:
    """Demand and span of one stage under a placement (integer ns)."""

    core_demand: dict[int, int]
    """Per physical core: serial compute plus incident same-stage transfers."""
    core_compute: dict[int, int]
    start_ns: dict[int, int]
    """Start of every task, relative to the stage's start."""
    sequence: tuple[int, ...]
    """The tasks in scheduling order; each core runs its tasks in this order."""
    span_ns: int
    """Completion of the stage's last task when its cross-stage inputs are ready at 0."""
    window_ns: int
    """The longest core window: from a core's first task start to its last task finish."""

    @property
    def demand_ns(self) -> int:
        return max(self.core_demand.values(), default=0)

    @property
    def compute_ns(self) -> int:
        return max(self.core_compute.values(), default=0)

    @property
    def cycle_ns(self) -> int:
        """The larger of demand and the longest core window: what one generation holds a core.

        A core starts its next generation only when its window closes, a reader
        core releases a stage's publications only when it enters the next
        generation (scheduling.md, "Periodic dependency diagnostics"), and
        blocking rendezvous keep a core at most one generation ahead of its
        partners: a stage restarts about once per window, not once per demand.
        """
        return max(self.demand_ns, self.window_ns)


def rank_placements(timings: Sequence[StageTiming]) -> int:
    """Index of the best of ``timings`` (candidate order breaks the last tie).

    Lowest cycle bound ``max(demand, span)`` (`StageTiming.cycle_ns`), except that
    every candidate within `TIE_PERCENT` of it (``100 b <= (100 + TIE_PERCENT)
    best``) competes on stage span, then on the largest compute load.
    """
    best = min(t.cycle_ns for t in timings)
    tied = [
        (t.span_ns, t.compute_ns, index)
        for index, t in enumerate(timings)
        if 100 * t.cycle_ns <= (100 + TIE_PERCENT) * best
    ]
    return min(tied)[2]


@dataclass(frozen=True)
class StagePlacement:
    """The chosen physical core of every task of a stage, with its timing."""

    tasks: tuple[int, ...]
    """The stage's tasks in topological order."""
    cores: tuple[int, ...]
    """Physical core of ``tasks[i]``."""
    candidate: str
    """``retained``, ``greedy`` or ``replicated``."""
    timing: StageTiming
    candidates: dict[str, int | None]
    """Cycle bound of every candidate priced (None when a candidate found no placement)."""


class StagePlacer:
    """Places the stages of one graph on one target (shares the adjacency and price caches).

    `place` is memoised per (tasks, packing, region): pipeline selection keeps
    one placer for all its candidates, and a stage a move leaves unchanged (same
    groups, budget and cores) reuses its placement. Placement is deterministic,
    so the memo changes no result.
    """

    def __init__(self, graph: ComputeGraph, target: SchedulingTarget) -> None:
        self.graph = graph
        self.target = target
        self.cost = graph.cost.tolist()
        self.weights = [sorted(set(w)) for w in graph.task_weights]
        self.size = graph.weight_size.tolist()
        self.src = graph.edge_src.tolist()
        self.dst = graph.edge_dst.tolist()
        self.nbytes = graph.edge_bytes.tolist()
        self.direct = graph.edge_direct.tolist()
        self._prices: dict[tuple[int, int, int, bool], int] = {}
        self._placed: dict[PlacementKey, StagePlacement] = {}

    def transfer(self, a: int, b: int, edge: int) -> int:
        """``target.transfer_ns`` of ``edge`` from core ``a`` to ``b``, memoised (0 on one core)."""
        if a == b:
            return 0
        key = (a, b, self.nbytes[edge], self.direct[edge])
        price = self._prices.get(key)
        if price is None:
            price = self._prices[key] = self.target.transfer_ns(*key)
        return price

    def stage_edges(self, tasks: Sequence[int], member: np.ndarray) -> list[int]:
        """Edges with both ends among ``tasks`` (``member`` marks them), by consumer order."""
        edges: list[int] = []
        for t in tasks:
            edges.extend(e for e in self.graph.predecessor_edges(t).tolist() if member[self.src[e]])
        return edges

    def timing(
        self, tasks: Sequence[int], core: dict[int, int], edges: Sequence[int]
    ) -> StageTiming:
        """Demand, per-core order and span of ``tasks`` placed by ``core``.

        The order is an earliest-ready list schedule with the placement fixed:
        a task becomes available once every same-stage predecessor is scheduled;
        available tasks are taken by (data-ready time, position in ``tasks``) and
        start when their core is free. Each core's order is therefore consistent
        with the dependencies, and lanes of successive operations interleave on a
        core instead of waiting for a whole operation (the order of ``tasks``
        alone would serialise operations that share a core). O((T + E) log T).
        """
        compute: dict[int, int] = {}
        for t in tasks:
            compute[core[t]] = compute.get(core[t], 0) + self.cost[t]
        demand = dict(compute)
        succs: dict[int, list[int]] = {}
        waiting = dict.fromkeys(tasks, 0)
        for e in edges:
            a, b = core[self.src[e]], core[self.dst[e]]
            if a != b:
                ns = self.transfer(a, b, e)
                demand[a] += ns
                demand[b] += ns
            succs.setdefault(self.src[e], []).append(e)
            waiting[self.dst[e]] += 1
        rank = {t: i for i, t in enumerate(tasks)}
        ready = dict.fromkeys(tasks, 0)
        heap = [(0, rank[t], t) for t in tasks if waiting[t] == 0]
        heapq.heapify(heap)
        free: dict[int, int] = {}
        opened: dict[int, int] = {}
        start: dict[int, int] = {}
        sequence: list[int] = []
        span = 0
        while heap:
            at, _, t = heapq.heappop(heap)
            p = core[t]
            begin = max(at, free.get(p, 0))
            opened.setdefault(p, begin)
            finish = free[p] = begin + self.cost[t]
            start[t] = begin
            sequence.append(t)
            span = max(span, finish)
            for e in succs.get(t, ()):
                d = self.dst[e]
                ready[d] = max(ready[d], finish + self.transfer(p, core[d], e))
                waiting[d] -= 1
                if waiting[d] == 0:
                    heapq.heappush(heap, (ready[d], rank[d], d))
        window = max((free[p] - opened[p] for p in opened), default=0)
        return StageTiming(demand, compute, start, tuple(sequence), span, window)

    def greedy(
        self, tasks: Sequence[int], region: Sequence[int], edges: Sequence[int]
    ) -> dict[int, int] | None:
        """Topology-aware greedy placement (see the module docstring); None if a task fits nowhere.

        Vectorised over the region: per task, the new weight slots and the hop-aware
        incident transfers of every candidate core are numpy rows (transfer rows
        are cached per (source core, bytes)).
        """
        k = len(region)
        local: dict[int, int] = {}
        for t in tasks:
            for w in self.weights[t]:
                local.setdefault(w, len(local))
        size = np.array([self.size[w] for w in local], dtype=np.int64)
        resident = np.zeros((k, len(local)), dtype=bool)
        capacity = np.array([self.target.capacity(p) for p in region], dtype=np.int64)
        used = np.zeros(k, dtype=np.int64)
        demand = np.zeros(k, dtype=np.int64)
        preds: dict[int, list[int]] = {}
        for e in edges:
            preds.setdefault(self.dst[e], []).append(e)
        rows: dict[tuple[int, int, bool], np.ndarray] = {}

        index: dict[int, int] = {}
        never = np.iinfo(np.int64).max
        for t in tasks:
            ids = [local[w] for w in self.weights[t]]
            new = int(size[ids].sum()) - resident[:, ids] @ size[ids]
            fits = used + new <= capacity
            if not fits.any():
                return None
            incident = np.zeros(k, dtype=np.int64)
            for e in preds.get(t, ()):
                incident += self._row(rows, region, index[self.src[e]], e)
            key = np.where(fits, demand + self.cost[t] + incident, never)
            tied = key == key.min()
            i = int(np.argmin(np.where(tied, new, never)))
            index[t] = i
            resident[i, ids] = True
            used[i] += new[i]
            demand[i] += self.cost[t] + incident[i]
            for e in preds.get(t, ()):
                q = index[self.src[e]]
                demand[q] += self._row(rows, region, q, e)[i]
        return {t: region[i] for t, i in index.items()}

    def replicated(
        self, tasks: Sequence[int], region: Sequence[int], edges: Sequence[int]
    ) -> dict[int, int] | None:
        """Earliest-finish placement over planned weight copies (module docstring).

        None when `plan_copies` has no plan. ``O(T k + E k)`` numpy work for ``T``
        tasks, ``E`` edges and ``k`` region cores, after the plan's own cost.
        """
        capacity = np.array([self.target.capacity(p) for p in region], dtype=np.int64)
        plan = plan_copies(self.graph, tasks, capacity)
        if plan is None:
            return None
        k = len(region)
        everywhere = np.ones(k, dtype=bool)
        free = np.zeros(k, dtype=np.int64)
        demand = np.zeros(k, dtype=np.int64)
        preds: dict[int, list[int]] = {}
        for e in edges:
            preds.setdefault(self.dst[e], []).append(e)
        index: dict[int, int] = {}
        finish: dict[int, int] = {}
        rows: dict[tuple[int, int, bool], np.ndarray] = {}
        never = np.iinfo(np.int64).max
        for t in tasks:
            weights = self.weights[t]
            allowed = plan.reserved[weights].all(axis=0) if weights else everywhere
            ready = np.zeros(k, dtype=np.int64)
            incident = np.zeros(k, dtype=np.int64)
            for e in preds.get(t, ()):
                row = self._row(rows, region, index[self.src[e]], e)
                np.maximum(ready, finish[self.src[e]] + row, out=ready)
                incident += row
            end = np.where(allowed, np.maximum(ready, free) + self.cost[t], never)
            tied = end == end.min()
            i = int(np.argmin(np.where(tied, demand + incident, never)))
            index[t] = i
            finish[t] = free[i] = int(end[i])
            demand[i] += self.cost[t] + incident[i]
            for e in preds.get(t, ()):
                q = index[self.src[e]]
                demand[q] += self._row(rows, region, q, e)[i]
        return {t: region[i] for t, i in index.items()}

    def _row(
        self,
        rows: dict[tuple[int, int, bool], np.ndarray],
        region: Sequence[int],
        i: int,
        e: int,
    ) -> np.ndarray:
        """Transfer time of ``edge`` from region core ``i`` to every region core (cached)."""
        key = (i, self.nbytes[e], self.direct[e])
        found = rows.get(key)
        if found is None:
            found = rows[key] = np.array(
                [self.transfer(region[i], p, e) for p in region], dtype=np.int64
            )
        return found

    def place(
        self, tasks: Sequence[int], assignment: Sequence[int], region: Sequence[int]
    ) -> StagePlacement:
        """Rank the candidates for one stage and return the winner.

        Parameters
        ----------
        tasks:
            The stage's tasks in topological order.
        assignment:
            The constructive packing: an abstract core ``0..len(region)-1`` per task.
        region:
            The stage's physical cores in snake order.
        """
        key = (tuple(tasks), tuple(int(a) for a in assignment), tuple(region))
        found = self._placed.get(key)
        if found is None:
            found = self._placed[key] = self._place(tasks, assignment, region)
        return found

    def memo_size(self) -> int:
        """How many placements are memoised (a mark for `memo_after`)."""
        return len(self._placed)

    def memo_after(self, mark: int) -> list[tuple[PlacementKey, StagePlacement]]:
        """The placements memoised since `memo_size` returned ``mark``, for `adopt`: a
        placer in a forked child hands back what it placed."""
        return list(itertools.islice(self._placed.items(), mark, None))

    def adopt(self, entries: Sequence[tuple[PlacementKey, StagePlacement]]) -> None:
        """Memoise placements another placer of the same graph and target made."""
        for key, placement in entries:
            self._placed.setdefault(key, placement)

    def _place(
        self, tasks: Sequence[int], assignment: Sequence[int], region: Sequence[int]
    ) -> StagePlacement:
        member = np.zeros(self.graph.num_tasks, dtype=bool)
        member[list(tasks)] = True
        edges = self.stage_edges(tasks, member)
        first_use: dict[int, int] = {}
        for a in assignment:
            first_use.setdefault(int(a), len(first_use))
        if len(first_use) > len(region):
            raise ScheduleViolationError(
                f"stage packing uses {len(first_use)} cores but the stage has {len(region)}"
            )
        retained = {t: region[first_use[int(a)]] for t, a in zip(tasks, assignment, strict=True)}
        options: list[tuple[str, dict[int, int] | None]] = [
            ("retained", retained),
            ("greedy", self.greedy(tasks, region, edges)),
            ("replicated", self.replicated(tasks, region, edges)),
        ]
        timings = {
            name: self.timing(tasks, core, edges) for name, core in options if core is not None
        }
        names = list(timings)
        winner = names[rank_placements([timings[name] for name in names])]
        chosen = dict(options)[winner]
        assert chosen is not None
        return StagePlacement(
            tasks=tuple(tasks),
            cores=tuple(chosen[t] for t in tasks),
            candidate=winner,
            timing=timings[winner],
            candidates={
                name: timings[name].cycle_ns if name in timings else None for name, _ in options
            },
        )
