"""Stage costs of a graph's pipeline groups: the ``stage_cost`` of its `PartitionProblem`.

``stage_cost(first, stop, cores)`` prices the tasks of groups ``[first, stop)``
on ``cores`` cores as the larger of two terms (the seeds' stage "packing /
dependency priority", scheduling.md, "Throughput scheduling uses one bounded
joint optimizer"):

* the **packing cost**: the exact ordered-packing (bottleneck) cost of the
  stage's tasks in packing order (`RangePacker`), where each task's load is its
  *nominal* compute priority (`ComputeGraph.nominal_cost`: a transpose counts as
  one bulk move, scheduling-implementation.md "Priorities, placement, and
  recovery limits") plus the transfer time of every edge incident to it, priced
  at ``target.mean_transfer_ns(bytes, direct)``; None (unavailable) when no ordered
  assignment fits the cores' resident-weight capacity;
* the **dependency span** (`DependencySpans`): the stage's longest compute chain,
  which no core budget shortens.

Transfers. `PackingProblem` charges an edge to both cores only when its ends sit
on different cores of the same stage. Charging every incident edge to each task
instead over-counts edges inside a run and edges to other stages, so the packing
cost bounds from above the `packing_demand` of the ordered assignment it
constructs; in exchange the loads no longer depend on the range, and one
preprocessing of the whole sequence answers every range (``O(G² Q)`` queries in
seconds, where a per-range `raptor_cp.heuristics.ordered_packing` search costs
``O(T)`` Python work per query). Mean transfer times are used because packing is
abstract; placement prices transfers hop by hop once cores are known.

Packing order. Ordered packing cuts a task sequence into consecutive runs, so
the sequence decides which tasks can share a core's weights. Lanes of one
operation use the same array groups; in topological (lane-major) order every run
would need every array group of its lanes and large layers would replicate their
weights once per lane. The packing order is therefore *weight-major* inside each
group: tasks with resident weights first, by their smallest weight id, then by
topological position (so each array group's lanes are consecutive), then the
tasks without weights (reductions, vector work) in topological order. Groups
stay in their order, so groups ``[first, stop)`` are one contiguous range.

Caching. `tabulate` prices every range at given core counts in one batch (the
partition DP's grid budgets); any other query prices its range's whole curve
``1..P`` in one batch, and `prefetch` prices the curves of many ranges at once
(the refinement's neighbourhood). Costs are memoised per ``(first, stop, cores)``.
`assignment` returns the constructive ordered runs of a chosen stage, or, when
order alone cannot hold its weights on its cores, the reuse-first stage
packer's (`raptor_cp.heuristics.stage_packing.pack_stage`) assignment on the
stage's exact `PackingProblem`. The allocation curves (`curve`, what minimax
budgets read) use that reuse-first packing too when order cannot hold a
stage even on all the cores its block has (seeds: the allocator "uses
reuse-first resident-weight packing when order alone cannot realize a
capacity bound").
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from raptor_cp.errors import NotFoundWithinBudgetError
from raptor_cp.graph import ComputeGraph
from raptor_cp.heuristics.range_packing import UNAVAILABLE, RangePacker, capacity_reach
from raptor_cp.pipeline.groups import PipelineGroups
from raptor_cp.pipeline.spans import DependencySpans
from raptor_cp.problems import PackingProblem
from raptor_cp.targets.base import SchedulingTarget


def packing_order(graph: ComputeGraph, groups: PipelineGroups) -> np.ndarray:
    """Every task, group by group, weight-major inside a group (see the module docstring)."""
    rank = np.empty(graph.num_tasks, dtype=np.int64)
    rank[graph.topological_order] = np.arange(graph.num_tasks)
    order: list[int] = []
    for tasks in groups.tasks:

        def key(t: int) -> tuple[int, int, int]:
            weights = graph.task_weights[t]
            return (0, min(weights), int(rank[t])) if weights else (1, 0, int(rank[t]))

        order.extend(sorted(tasks, key=key))
    return np.asarray(order, dtype=np.int64)


@dataclass
class StageCostStats:
    """Work and time spent answering stage-cost queries."""

    priced: int = 0
    """``(first, stop, cores)`` triples priced by the range packer."""
    batches: int = 0
    packing_s: float = 0.0
    spans_s: float = 0.0


class StageCosts:
    """``stage_cost(first, stop, cores)`` over the groups of one graph on one target."""

    def __init__(self, graph: ComputeGraph, target: SchedulingTarget, groups: PipelineGroups):
        self.graph = graph
        self.groups = groups
        self.cores = target.cores
        self.capacity = min(target.capacity(p) for p in range(target.cores))
        self.order = packing_order(graph, groups)
        self.position = np.empty(graph.num_tasks, dtype=np.int64)
        self.position[self.order] = np.arange(graph.num_tasks)
        self.offsets = groups.offsets
        self.group = groups.group_of_task(graph.num_tasks)
        self.edge_ns = _mean_transfer(graph.edge_bytes, graph.edge_direct, target)
        incident = np.zeros(graph.num_tasks, dtype=np.int64)
        np.add.at(incident, graph.edge_src, self.edge_ns)
        np.add.at(incident, graph.edge_dst, self.edge_ns)
        loads = (graph.nominal_cost + incident)[self.order]
        sizes = graph.weight_size.tolist()
        reach = capacity_reach(
            [graph.task_weights[t] for t in self.order.tolist()], sizes, self.capacity
        )
        self.packer = RangePacker(loads, reach)
        self.spans = DependencySpans(graph, groups)
        self.stats = StageCostStats()
        self._costs: dict[tuple[int, int, int], int | None] = {}
        self._curves: set[tuple[int, int]] = set()
        """Ranges whose whole curve ``1..P`` is priced."""
        self._spans: dict[tuple[int, int], int] = {}
        self._bounds: dict[tuple[int, int], int] = {}
        """`capacity_bound` per range."""
        self._reuse: dict[
            tuple[int, int], tuple[int, tuple[tuple[int, ...], dict[str, object]]] | None
        ] = {}

    def _price(self, firsts: np.ndarray, stops: np.ndarray, cores: np.ndarray) -> None:
        """Price a batch of ``(first, stop, cores)`` queries into the memo."""
        began = time.perf_counter()
        starts, ends = self.offsets[firsts], self.offsets[stops]
        costs = self.packer.costs(starts, ends, cores)
        for f, t, k, c in zip(
            firsts.tolist(), stops.tolist(), cores.tolist(), costs.tolist(), strict=True
        ):
            self._costs[f, t, k] = None if c == UNAVAILABLE else c
        self.stats.priced += int(firsts.shape[0])
        self.stats.batches += 1
        self.stats.packing_s += time.perf_counter() - began

    def tabulate(self, cores: Sequence[int], bounds: np.ndarray | None = None) -> None:
        """Price every range between ``bounds`` (group offsets; default every group
        boundary) at every core count of ``cores`` in one batch."""
        if bounds is None:
            bounds = np.arange(self.groups.count + 1, dtype=np.int64)
        firsts, stops = np.triu_indices(len(bounds), k=1)
        firsts, stops = bounds[firsts], bounds[stops]
        ks = np.asarray(sorted(set(cores)), dtype=np.int64)
        self._price(
            np.repeat(firsts, ks.shape[0]),
            np.repeat(stops, ks.shape[0]),
            np.tile(ks, firsts.shape[0]),
        )

    def range_floor(self, bounds: np.ndarray, cores: int) -> int:
        """The largest cost on ``cores`` cores of the ranges between consecutive ``bounds``
        (0 if none is available): a lower bound on every partition along those bounds
        whose stages have at most ``cores`` cores (see `UnitCosts.floor`)."""
        pairs = list(itertools.pairwise(bounds.tolist()))
        missing = [(a, b) for a, b in pairs if (a, b, cores) not in self._costs]
        if missing:
            firsts, stops = (np.asarray(c, dtype=np.int64) for c in zip(*missing, strict=True))
            self._price(firsts, stops, np.full(firsts.shape, cores, dtype=np.int64))
        costs = [self(a, b, cores) for a, b in pairs]
        return max((c for c in costs if c is not None), default=0)

    def fewest_cores(self, firsts: np.ndarray, stops: np.ndarray) -> list[tuple[int, int] | None]:
        """Per group range: the fewest cores (at most the target's) with an available
        cost, and the stage cost there; None when the whole chip is too small.

        Availability is exact (`RangePacker.min_runs`), so this agrees with trying
        every core count; all ranges are priced in one batch.
        """
        firsts = np.asarray(firsts, dtype=np.int64)
        stops = np.asarray(stops, dtype=np.int64)
        runs = self.packer.min_runs(self.offsets[firsts], self.offsets[stops])
        able = np.flatnonzero(runs <= self.cores)
        missing = [
            i
            for i in able.tolist()
            if (int(firsts[i]), int(stops[i]), int(runs[i])) not in self._costs
        ]
        if missing:
            self._price(firsts[missing], stops[missing], runs[missing])
        found: list[tuple[int, int] | None] = [None] * firsts.shape[0]
        for i in able.tolist():
            cost = self(int(firsts[i]), int(stops[i]), int(runs[i]))
            assert cost is not None  # min_runs cores always hold the range in order
            found[i] = (int(runs[i]), cost)
        return found

    def packing_cost(self, first: int, stop: int, cores: int) -> int | None:
        """Ordered-packing cost of the stage on ``cores`` cores (None: unavailable)."""
        key = (first, stop, cores)
        if key not in self._costs:
            if cores > self.cores:
                ks = np.arange(1, cores + 1, dtype=np.int64)
                self._price(np.full(ks.shape, first), np.full(ks.shape, stop), ks)
            else:
                self.prefetch([(first, stop)])
        return self._costs[key]

    def prefetch(self, ranges: Iterable[tuple[int, int]]) -> None:
        """Price the whole curve ``1..P`` of every range not priced yet, in one batch."""
        todo = [r for r in dict.fromkeys(ranges) if r not in self._curves]
        if not todo:
            return
        firsts, stops = (np.asarray(c, dtype=np.int64) for c in zip(*todo, strict=True))
        ks = np.arange(1, self.cores + 1, dtype=np.int64)
        self._price(
            np.repeat(firsts, ks.shape[0]), np.repeat(stops, ks.shape[0]), np.tile(ks, len(todo))
        )
        self._curves.update(todo)

    def curve(self, first: int, stop: int, max_cores: int) -> np.ndarray:
        """The stage's allocation curve for ``k = 1..max_cores``, `UNAVAILABLE` where no
        constructive packing is known (`raptor_cp.heuristics.core_budgets.CostCurves`).

        The ordered-packing costs (``self(first, stop, k)``); where order alone
        cannot hold the weights even on ``max_cores`` cores, the reuse-first
        packing at the capacity bound (`reuse_first`) fills every ``k`` from that
        bound on -- a feasible packing stays feasible with idle extra cores.
        """
        if max_cores > self.cores:
            self.packing_cost(first, stop, max_cores)
        else:
            self.prefetch([(first, stop)])
        span = self.span(first, stop)
        values = [self._costs[first, stop, k] for k in range(1, max_cores + 1)]
        if values[-1] is None:
            found = self.reuse_first(first, stop, max_cores)
            if found is not None:
                bound, assignment = found
                demand = int(assignment[1]["demand_ns"])  # type: ignore[call-overload]
                values = [
                    v if v is not None or k < bound else demand
                    for k, v in enumerate(values, start=1)
                ]
        return np.array(
            [UNAVAILABLE if v is None else max(v, span) for v in values], dtype=np.int64
        )

    def allocation_cost(self, first: int, stop: int, cores: int) -> int | None:
        """The stage's allocation cost on ``cores`` cores: ``curve(first, stop, cores)``'s
        last entry (ordered packing, or reuse-first when order cannot hold the stage on
        ``cores`` cores), None when unavailable."""
        value = self(first, stop, cores)
        if value is not None:
            return value
        found = self.reuse_first(first, stop, cores)
        if found is None:
            return None
        return max(int(found[1][1]["demand_ns"]), self.span(first, stop))  # type: ignore[call-overload]

    def reuse_first(
        self, first: int, stop: int, cores: int
    ) -> tuple[int, tuple[tuple[int, ...], dict[str, object]]] | None:
        """The reuse-first stage packing at the capacity bound, for a budget of ``cores``.

        ``(bound, (cores, evidence))``: ``bound`` is the cores the stage's weights
        need at least (`capacity_bound`), the packing is `pack_stage` on that
        many cores (cores in ``groups.range_tasks`` order, evidence as
        `assignment`'s), memoised per range; None when the bound exceeds
        ``cores`` or the packer finds nothing (bounded search). The bound is
        checked first: a budget that cannot hold the stage's weights in any
        order is refused without packing (the packing costs seconds on a large
        stage, the bound milliseconds).
        """
        if self.capacity_bound(first, stop) > min(cores, self.cores):
            return None
        key = (first, stop)
        if key not in self._reuse:
            bound = self.capacity_bound(first, stop)
            packed = self._reuse_packing(first, stop, bound)
            self._reuse[key] = None if packed is None else (bound, packed)
        return self._reuse[key]

    def capacity_bound(self, first: int, stop: int) -> int:
        """The fewest cores the stage's weights need, whatever the order
        (`raptor_cp.heuristics.stage_packing.cores_needed`), memoised per range."""
        found = self._bounds.get((first, stop))
        if found is None:
            from raptor_cp.heuristics.stage_packing import cores_needed

            problem = self.packing_problem(first, stop, self.cores)
            found = self._bounds[first, stop] = cores_needed(problem)
        return found

    def _reuse_packing(
        self, first: int, stop: int, cores: int
    ) -> tuple[tuple[int, ...], dict[str, object]] | None:
        """`pack_stage` of the stage on ``cores`` cores (None when it finds nothing)."""
        from raptor_cp.heuristics.stage_packing import pack_stage

        problem = self.packing_problem(first, stop, cores)
        solution = pack_stage(problem)
        if solution.core is None:
            return None
        by_task = np.empty(self.graph.num_tasks, dtype=np.int64)
        by_task[self.stage_tasks(first, stop)] = solution.core
        evidence: dict[str, object] = {
            "packer": "reuse-first",
            "packing_cost_ns": None,
            "reason": f"order alone cannot hold the stage's weights on {cores} cores",
            "demand_ns": solution.objective,
            "status": solution.status.value,
        }
        return tuple(by_task[self.groups.range_tasks(first, stop)].tolist()), evidence

    def span(self, first: int, stop: int) -> int:
        """Dependency span of groups ``[first, stop)`` (memoised per range)."""
        value = self._spans.get((first, stop))
        if value is None:
            began = time.perf_counter()
            value = self._spans[first, stop] = self.spans(first, stop)
            self.stats.spans_s += time.perf_counter() - began
        return value

    def __call__(self, first: int, stop: int, cores: int) -> int | None:
        cost = self.packing_cost(first, stop, cores)
        return None if cost is None else max(cost, self.span(first, stop))

    def stage_tasks(self, first: int, stop: int) -> np.ndarray:
        """Tasks of groups ``[first, stop)`` in packing order."""
        return self.order[int(self.offsets[first]) : int(self.offsets[stop])]

    def packing_problem(self, first: int, stop: int, cores: int) -> PackingProblem:
        """The exact `PackingProblem` of groups ``[first, stop)`` on ``cores`` cores.

        Task ``i`` of the problem is ``stage_tasks(first, stop)[i]``; weights are
        renumbered in order of first use; edges are the same-stage dependencies
        with their mean transfer time (zero-time edges left out).
        """
        base = int(self.offsets[first])
        tasks = self.stage_tasks(first, stop)
        local: dict[int, int] = {}
        task_weights = tuple(
            tuple(local.setdefault(w, len(local)) for w in self.graph.task_weights[t])
            for t in tasks.tolist()
        )
        src, dst = self.graph.edge_src, self.graph.edge_dst
        inside = np.flatnonzero(
            (self.group[src] >= first) & (self.group[dst] < stop) & (self.edge_ns > 0)
        )
        edges = zip(
            (self.position[src[inside]] - base).tolist(),
            (self.position[dst[inside]] - base).tolist(),
            self.edge_ns[inside].tolist(),
            strict=True,
        )
        size = self.graph.weight_size
        return PackingProblem(
            loads=tuple(self.graph.nominal_cost[tasks].tolist()),
            task_weights=task_weights,
            weight_size=tuple(int(size[w]) for w in local),
            cores=cores,
            capacity=self.capacity,
            edges=tuple(edges),
            name=f"{self.graph.name}: stage of groups [{first}, {stop})",
        )

    def assignment(
        self, first: int, stop: int, cores: int
    ) -> tuple[tuple[int, ...], dict[str, object]]:
        """A constructive packing of the stage on ``cores`` cores and its evidence.

        The core of every task of ``groups.range_tasks(first, stop)`` (topological
        order): the ordered runs at the stage's packing cost when order holds the
        weights on ``cores`` cores; otherwise -- order alone cannot realize the
        capacity bound -- the reuse-first stage packer
        (`raptor_cp.heuristics.stage_packing.pack_stage`) on the stage's exact
        `PackingProblem` (seeds: the allocator "uses reuse-first resident-weight
        packing when order alone cannot realize a capacity bound"). Raises
        `NotFoundWithinBudgetError` when neither packs the stage (a bounded-search
        result, not a proof).
        """
        cost = self.packing_cost(first, stop, cores)
        if cost is None:
            packed = self._reuse_packing(first, stop, cores)
            if packed is None:
                fallback = self.reuse_first(first, stop, cores)
                if fallback is None:
                    raise NotFoundWithinBudgetError(
                        f"{self.graph.name}: stage of groups [{first}, {stop}): no packing on "
                        f"{cores} cores fits capacity {self.capacity}"
                    )
                packed = fallback[1]
            return packed
        base, end = int(self.offsets[first]), int(self.offsets[stop])
        starts = self.packer.runs(base, end, cost)
        bounds = [*starts, end]
        runs = [r for r in range(len(starts)) for _ in range(bounds[r], bounds[r + 1])]
        by_task = np.empty(self.graph.num_tasks, dtype=np.int64)
        by_task[self.stage_tasks(first, stop)] = runs
        evidence: dict[str, object] = {
            "packer": "ordered",
            "packing_cost_ns": cost,
            "runs": len(starts),
        }
        return tuple(by_task[self.groups.range_tasks(first, stop)].tolist()), evidence


def _mean_transfer(nbytes: np.ndarray, direct: np.ndarray, target: SchedulingTarget) -> np.ndarray:
    """``target.mean_transfer_ns`` of every edge, one target query per distinct size and kind."""
    if nbytes.size == 0:
        return np.zeros(0, dtype=np.int64)
    keys = np.stack([nbytes, direct.astype(np.int64)], axis=1)
    distinct, inverse = np.unique(keys, axis=0, return_inverse=True)
    price = np.array(
        [target.mean_transfer_ns(int(b), direct=bool(d)) for b, d in distinct.tolist()], np.int64
    )
    return price[inverse.reshape(-1)]
