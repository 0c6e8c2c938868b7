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

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from raptor_cp.errors import ScheduleViolationError
from raptor_cp.graph import ComputeGraph
from raptor_cp.heuristics.replication import plan_copies
from raptor_cp.periodic.arrays import int64_array
from raptor_cp.pipeline import _stage_placement
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


@dataclass(frozen=True)
class StageArrays:
    """One stage in the form the compiled loops read (`raptor_cp.pipeline._stage_placement`).

    Tasks are numbered by position in ``tasks``; ``pred_start``/``pred_source``
    list each task's same-stage predecessor edges (CSR, source positions) and
    ``nbytes``/``direct`` those edges' payloads in the same order;
    ``weight_start``/``weight`` each task's distinct weights as local ids, whose
    global ids are ``weight_ids``.
    """

    tasks: tuple[int, ...]
    cost: np.ndarray
    pred_start: np.ndarray
    pred_source: np.ndarray
    nbytes: tuple[int, ...]
    direct: tuple[bool, ...]
    weight_start: np.ndarray
    weight: np.ndarray
    weight_ids: np.ndarray


@dataclass(frozen=True)
class RegionPrices:
    """A stage's transfer prices on its region, in the compiled loops' form.

    `raptor_cp.targets.base.TransferTerms` of the region's cores, and each of the
    stage's edges' unit count and constant term (``units``, ``constant``, in
    `StageArrays` edge order); ``fixed`` and ``per_unit`` are empty arrays when
    the price does not depend on the pair.
    """

    region: tuple[int, ...]
    fixed: np.ndarray
    per_unit: np.ndarray
    units: np.ndarray
    constant: np.ndarray

    def loop_arguments(self, stage: StageArrays) -> tuple[object, ...]:
        """The arguments every loop of `_stage_placement` starts with."""
        return (
            len(self.region),
            stage.cost,
            stage.pred_start,
            stage.pred_source,
            self.units,
            self.constant,
            self.fixed,
            self.per_unit,
        )


class StagePlacer:
    """Places the stages of one graph on one target (shares the price caches).

    `place` is memoised per (tasks, packing, region): pipeline selection keeps
    one placer for all its candidates, and a stage a move leaves unchanged (same
    groups, budget and cores) reuses its placement. Placement is deterministic,
    so the memo changes no result. The greedy, replicated and timing loops are
    compiled (`raptor_cp.pipeline._stage_placement`); this class prepares their
    arrays and reads their results back.
    """

    def __init__(self, graph: ComputeGraph, target: SchedulingTarget) -> None:
        self.graph = graph
        self.target = target
        self.cost = graph.cost.tolist()
        self.weights = [sorted(set(w)) for w in graph.task_weights]
        self.src = graph.edge_src.tolist()
        self.dst = graph.edge_dst.tolist()
        self.nbytes = graph.edge_bytes.tolist()
        self.direct = graph.edge_direct.tolist()
        self._edge_terms: dict[tuple[int, bool], tuple[int, int]] = {}
        self._placed: dict[PlacementKey, StagePlacement] = {}

    def stage_edges(self, tasks: Sequence[int], member: np.ndarray) -> list[int]:
        """Edges with both ends among ``tasks`` (``member`` marks them), by consumer order."""
        edges: list[int] = []
        for t in tasks:
            edges.extend(e for e in self.graph.predecessor_edges(t).tolist() if member[self.src[e]])
        return edges

    def stage(self, tasks: Sequence[int], edges: Sequence[int]) -> StageArrays:
        """``tasks`` (topological order) and their same-stage ``edges`` as `StageArrays`.

        Raises
        ------
        ScheduleViolationError
            If an edge has an end outside ``tasks``.
        """
        position = {t: i for i, t in enumerate(tasks)}
        try:
            consumer = [position[self.dst[e]] for e in edges]
            producer = [position[self.src[e]] for e in edges]
        except KeyError as missing:
            raise ScheduleViolationError(
                f"a stage edge reaches task {missing.args[0]}, which is not in the stage"
            ) from None
        order = sorted(range(len(edges)), key=consumer.__getitem__)
        ordered = [edges[i] for i in order]
        counts = np.bincount(np.array(consumer, dtype=np.int64), minlength=len(tasks))
        local: dict[int, int] = {}
        weight: list[int] = []
        weight_start = [0]
        for t in tasks:
            for w in self.weights[t]:
                weight.append(local.setdefault(w, len(local)))
            weight_start.append(len(weight))
        return StageArrays(
            tasks=tuple(tasks),
            cost=int64_array([self.cost[t] for t in tasks]),
            pred_start=int64_array(np.concatenate([[0], np.cumsum(counts)])),
            pred_source=int64_array([producer[i] for i in order]),
            nbytes=tuple(self.nbytes[e] for e in ordered),
            direct=tuple(self.direct[e] for e in ordered),
            weight_start=int64_array(weight_start),
            weight=int64_array(weight),
            weight_ids=int64_array(list(local)),
        )

    def prices(self, stage: StageArrays, region: Sequence[int]) -> RegionPrices:
        """The transfer prices of ``stage``'s edges among ``region``'s cores."""
        terms = self.target.transfer_terms(region)
        units: list[int] = []
        constant: list[int] = []
        for key in zip(stage.nbytes, stage.direct, strict=True):
            found = self._edge_terms.get(key)
            if found is None:
                found = self._edge_terms[key] = (terms.units(key[0]), terms.constant(*key))
            units.append(found[0])
            constant.append(found[1])
        empty = int64_array([])
        return RegionPrices(
            region=tuple(region),
            fixed=empty if terms.fixed is None else int64_array(terms.fixed).ravel(),
            per_unit=empty if terms.per_unit is None else int64_array(terms.per_unit).ravel(),
            units=int64_array(units),
            constant=int64_array(constant),
        )

    def timing(self, stage: StageArrays, prices: RegionPrices, position: np.ndarray) -> StageTiming:
        """Demand, per-core order and span of ``stage`` with task ``i`` on region core
        ``position[i]``.

        The order is an earliest-ready list schedule with the placement fixed:
        a task becomes available once every same-stage predecessor is scheduled;
        available tasks are taken by (data-ready time, position in ``tasks``) and
        start when their core is free. Each core's order is therefore consistent
        with the dependencies, and lanes of successive operations interleave on a
        core instead of waiting for a whole operation (the order of ``tasks``
        alone would serialise operations that share a core). O((T + E) log T).

        Raises
        ------
        ScheduleViolationError
            If the stage's edges form a cycle.
        """
        k, t = len(prices.region), len(stage.tasks)
        demand, compute = np.zeros(k, dtype=np.int64), np.zeros(k, dtype=np.int64)
        start, sequence = np.zeros(t, dtype=np.int64), np.zeros(t, dtype=np.int64)
        core = int64_array(position)
        scheduled, span, window = _stage_placement.timing(
            *prices.loop_arguments(stage), core, demand, compute, start, sequence
        )
        if scheduled != t:
            raise ScheduleViolationError(f"the edges among a stage's {t} tasks form a cycle")
        _, first = np.unique(core, return_index=True)
        used = core[np.sort(first)].tolist()
        region, tasks = prices.region, stage.tasks
        order = sequence.tolist()
        begin = start.tolist()
        return StageTiming(
            core_demand={region[c]: int(demand[c]) for c in used},
            core_compute={region[c]: int(compute[c]) for c in used},
            start_ns={tasks[i]: begin[i] for i in order},
            sequence=tuple(tasks[i] for i in order),
            span_ns=span,
            window_ns=window,
        )

    def greedy(self, stage: StageArrays, prices: RegionPrices) -> np.ndarray | None:
        """Topology-aware greedy placement (see the module docstring): the region core
        position of every task, or None if a task fits nowhere."""
        capacity = int64_array([self.target.capacity(p) for p in prices.region])
        size = self.graph.weight_size[stage.weight_ids]
        position = np.zeros(len(stage.tasks), dtype=np.int64)
        placed = _stage_placement.greedy(
            *prices.loop_arguments(stage),
            stage.weight_start,
            stage.weight,
            int64_array(size),
            capacity,
            position,
        )
        return position if placed else None

    def replicated(self, stage: StageArrays, prices: RegionPrices) -> np.ndarray | None:
        """Earliest-finish placement over planned weight copies (module docstring): the
        region core position of every task, or None when `plan_copies` has no plan
        (or, which a plan rules out, no core holds all of a task's weights).

        ``O(T k + E k)`` for ``T`` tasks, ``E`` edges and ``k`` region cores, after
        the plan's own cost.
        """
        capacity = np.array([self.target.capacity(p) for p in prices.region], dtype=np.int64)
        plan = plan_copies(self.graph, stage.tasks, capacity)
        if plan is None:
            return None
        position = np.zeros(len(stage.tasks), dtype=np.int64)
        placed = _stage_placement.replicated(
            *prices.loop_arguments(stage),
            stage.weight_start,
            stage.weight,
            int64_array(plan.reserved[stage.weight_ids]).ravel(),
            position,
        )
        return position if placed else None

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
        stage = self.stage(tasks, self.stage_edges(tasks, member))
        prices = self.prices(stage, region)
        first_use: dict[int, int] = {}
        for a in assignment:
            first_use.setdefault(int(a), len(first_use))
        if len(first_use) > len(region):
            raise ScheduleViolationError(
                f"stage packing uses {len(first_use)} cores but the stage has {len(region)}"
            )
        retained = int64_array([first_use[int(a)] for a in assignment])
        options: list[tuple[str, np.ndarray | None]] = [
            ("retained", retained),
            ("greedy", self.greedy(stage, prices)),
            ("replicated", self.replicated(stage, prices)),
        ]
        timings = {
            name: self.timing(stage, prices, position)
            for name, position in options
            if position is not None
        }
        names = list(timings)
        winner = names[rank_placements([timings[name] for name in names])]
        chosen = dict(options)[winner]
        assert chosen is not None
        return StagePlacement(
            tasks=tuple(tasks),
            cores=tuple(region[i] for i in chosen.tolist()),
            candidate=winner,
            timing=timings[winner],
            candidates={
                name: timings[name].cycle_ns if name in timings else None for name, _ in options
            },
        )
