"""Stage costs of a graph's pipeline groups: the ``stage_cost`` of its `PartitionProblem`.

``stage_cost(first, stop, cores)`` prices the tasks of groups ``[first, stop)``
on ``cores`` cores as the larger of two terms (the seeds' stage "packing /
dependency priority", scheduling.md, "Throughput scheduling uses one bounded
joint optimizer"):

* the **packing cost**: the ordered-packing curve of the stage's `PackingProblem`
  (`raptor_cp.heuristics.ordered_packing`): maximum per-core serial compute plus
  incident same-stage transfer time; None (unavailable) when no ordered
  assignment fits the cores' resident-weight capacity;
* the **dependency span** (`DependencySpans`): the stage's longest compute chain,
  which no core budget shortens.

The stage's `PackingProblem` has the graph's task costs as loads, the tasks'
resident weights (renumbered per stage), the smallest core capacity of the
target, and one edge per same-stage dependency priced at
``target.mean_transfer_ns(bytes)``: packing is abstract, physical distances are
only known after layout, where placement prices them hop by hop.

Packing order. Ordered packing cuts a task sequence into consecutive runs, so
the sequence decides which tasks can share a core's weights. Lanes of one
operation use the same array groups; in topological (lane-major) order every run
would need every array group of its lanes and large layers would replicate their
weights once per lane. The packing order is therefore *weight-major* inside each
group: tasks with resident weights first, by their smallest weight id, then by
topological position (so each array group's lanes are consecutive), then the
tasks without weights (reductions, vector work) in topological order. Groups
stay in their order. This is a choice of this module, documented in
docs/architecture.md.

Caching. Each range's ordered search is built once and queried for every core
count the partition asks for (one `ordered_packing` per count; the DP asks
its grid budgets for one range in a row, `minimax_budgets` a contiguous run of
counts), so only the last range's `PackingProblem` is kept; costs are memoised
per ``(first, stop, cores)``. `assignment` rebuilds the ordered packing of a
chosen stage and, when order alone cannot fit the cores, falls back to the
reuse-first stage packer (`raptor_cp.heuristics.stage_packing.pack_stage`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from raptor_cp.errors import NotFoundWithinBudgetError
from raptor_cp.graph import ComputeGraph
from raptor_cp.heuristics.ordered_packing import ordered_packing
from raptor_cp.pipeline.groups import PipelineGroups
from raptor_cp.pipeline.spans import DependencySpans
from raptor_cp.pipeline_problems import PackingProblem
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

    queries: int = 0
    """Distinct ``(first, stop, cores)`` priced."""
    problems: int = 0
    """Stage `PackingProblem` objects built."""
    packing_s: float = 0.0
    spans_s: float = 0.0


class StageCosts:
    """``stage_cost(first, stop, cores)`` over the groups of one graph on one target."""

    def __init__(self, graph: ComputeGraph, target: SchedulingTarget, groups: PipelineGroups):
        self.graph = graph
        self.groups = groups
        self.capacity = min(target.capacity(p) for p in range(target.cores))
        self.order = packing_order(graph, groups)
        self.position = np.empty(graph.num_tasks, dtype=np.int64)
        self.position[self.order] = np.arange(graph.num_tasks)
        self.offsets = groups.offsets
        group = groups.group_of_task(graph.num_tasks)
        ns = _mean_transfer(graph.edge_bytes, target)
        keep = np.flatnonzero(ns > 0)
        by_dst = keep[np.argsort(group[graph.edge_dst[keep]], kind="stable")]
        self.edge_dst_group = group[graph.edge_dst[by_dst]]
        self.edge_src_group = group[graph.edge_src[by_dst]]
        self.edge_a = self.position[graph.edge_src[by_dst]]
        self.edge_b = self.position[graph.edge_dst[by_dst]]
        self.edge_ns = ns[by_dst]
        self.spans = DependencySpans(graph, groups)
        self.stats = StageCostStats()
        self._costs: dict[tuple[int, int, int], int | None] = {}
        self._last: tuple[tuple[int, int], PackingProblem] | None = None

    def packing_problem(self, first: int, stop: int, cores: int) -> PackingProblem:
        """The `PackingProblem` of groups ``[first, stop)`` on ``cores`` cores.

        Task ``i`` of the problem is ``stage_tasks(first, stop)[i]``.
        """
        if self._last is not None and self._last[0] == (first, stop):
            problem = self._last[1]
            return problem if problem.cores == cores else _with_cores(problem, cores)
        self.stats.problems += 1
        base = int(self.offsets[first])
        tasks = self.order[base : int(self.offsets[stop])].tolist()
        local: dict[int, int] = {}
        task_weights = tuple(
            tuple(local.setdefault(w, len(local)) for w in self.graph.task_weights[t])
            for t in tasks
        )
        size = self.graph.weight_size
        lo, hi = np.searchsorted(self.edge_dst_group, [first, stop])
        inside = np.flatnonzero(self.edge_src_group[lo:hi] >= first) + lo
        edges = zip(
            (self.edge_a[inside] - base).tolist(),
            (self.edge_b[inside] - base).tolist(),
            self.edge_ns[inside].tolist(),
            strict=True,
        )
        problem = PackingProblem(
            loads=tuple(self.graph.cost[self.order[base : base + len(tasks)]].tolist()),
            task_weights=task_weights,
            weight_size=tuple(int(size[w]) for w in local),
            cores=cores,
            capacity=self.capacity,
            edges=tuple(edges),
            name=f"{self.graph.name}: stage of groups [{first}, {stop})",
        )
        self._last = ((first, stop), problem)
        return problem

    def stage_tasks(self, first: int, stop: int) -> np.ndarray:
        """Tasks of groups ``[first, stop)`` in packing order."""
        return self.order[int(self.offsets[first]) : int(self.offsets[stop])]

    def packing_cost(self, first: int, stop: int, cores: int) -> int | None:
        """Ordered-packing cost of the stage on ``cores`` cores (None: unavailable)."""
        key = (first, stop, cores)
        if key in self._costs:
            return self._costs[key]
        began = time.perf_counter()
        self.stats.queries += 1
        packing = ordered_packing(self.packing_problem(first, stop, cores))
        cost = None if packing is None else packing.cost
        self._costs[key] = cost
        self.stats.packing_s += time.perf_counter() - began
        return cost

    def span(self, first: int, stop: int) -> int:
        """Dependency span of groups ``[first, stop)``."""
        began = time.perf_counter()
        value = self.spans(first, stop)
        self.stats.spans_s += time.perf_counter() - began
        return value

    def __call__(self, first: int, stop: int, cores: int) -> int | None:
        cost = self.packing_cost(first, stop, cores)
        return None if cost is None else max(cost, self.span(first, stop))

    def assignment(self, first: int, stop: int, cores: int) -> tuple[tuple[int, ...], str]:
        """A constructive packing of the stage on ``cores`` cores, aligned with
        ``groups.range_tasks(first, stop)`` (topological order), and its packer.

        The ordered packing when it fits (``ordered``); otherwise the reuse-first
        stage packer (``stage``). Raises `NotFoundWithinBudgetError` when neither
        finds one (a bounded-search result, not a proof).
        """
        from raptor_cp.heuristics.stage_packing import pack_stage

        problem = self.packing_problem(first, stop, cores)
        packing = ordered_packing(problem)
        if packing is not None:
            core, packer = packing.assignment(), "ordered"
        else:
            solution = pack_stage(problem)
            if solution.core is None:
                raise NotFoundWithinBudgetError(
                    f"{problem.name}: no packing on {cores} cores fits capacity "
                    f"{self.capacity} ({solution.status.value})"
                )
            core, packer = solution.core, "stage"
        by_task = np.empty(self.graph.num_tasks, dtype=np.int64)
        by_task[self.stage_tasks(first, stop)] = core
        return tuple(by_task[self.groups.range_tasks(first, stop)].tolist()), packer


def _with_cores(problem: PackingProblem, cores: int) -> PackingProblem:
    """``problem`` on another core count (validation is repeated; it is O(T + R))."""
    import dataclasses

    return dataclasses.replace(problem, cores=cores)


def _mean_transfer(nbytes: np.ndarray, target: SchedulingTarget) -> np.ndarray:
    """``target.mean_transfer_ns`` of every entry, one target query per distinct size."""
    if nbytes.size == 0:
        return np.zeros(0, dtype=np.int64)
    distinct, inverse = np.unique(nbytes, return_inverse=True)
    price = np.array([target.mean_transfer_ns(int(b)) for b in distinct.tolist()], np.int64)
    return price[inverse.reshape(-1)]
