"""Pipeline groups: all lanes of an operation form one group, groups in topological order.

Stages are contiguous ranges of groups (seeds: scheduling.md, "Throughput
scheduling uses one bounded joint optimizer": "Initialization groups all lanes
of an operation"). The order must be topological over the operation graph so
that every dependency goes from a stage to itself or to a later stage; among
ready operations the smallest operation id comes first (deterministic, and for
lowered workloads, whose operations are already in topological order, it keeps
the workload's order). Within a group, tasks follow the graph's deterministic
topological order, so the concatenated tasks of any range of groups are in
topological order too.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from raptor_cp.errors import InvalidInstanceError
from raptor_cp.graph import ComputeGraph
from raptor_cp.toposort import CycleFound, topological_order


@dataclass(frozen=True, eq=False)
class PipelineGroups:
    """The ordered groups of a graph.

    Parameters
    ----------
    operation:
        Graph operation id of each group, in group order.
    tasks:
        Task ids of each group, in the graph's topological order.
    names:
        Operation name of each group.
    """

    operation: tuple[int, ...]
    tasks: tuple[tuple[int, ...], ...]
    names: tuple[str, ...]

    @property
    def count(self) -> int:
        return len(self.operation)

    @cached_property
    def offsets(self) -> np.ndarray:
        """``offsets[g]``: tasks in groups ``[0, g)`` (length ``count + 1``)."""
        sizes = np.array([len(t) for t in self.tasks], dtype=np.int64)
        return np.concatenate([[0], np.cumsum(sizes)])

    @cached_property
    def ordered_tasks(self) -> np.ndarray:
        """Every task, group by group: ``ordered_tasks[offsets[a]:offsets[b]]`` is groups [a, b)."""
        flat = [t for group in self.tasks for t in group]
        return np.asarray(flat, dtype=np.int64)

    def range_tasks(self, first: int, stop: int) -> np.ndarray:
        """Tasks of groups ``[first, stop)`` in topological order."""
        return self.ordered_tasks[self.offsets[first] : self.offsets[stop]]

    def group_of_task(self, num_tasks: int) -> np.ndarray:
        """Group index of every task id."""
        group = np.empty(num_tasks, dtype=np.int64)
        group[self.ordered_tasks] = np.repeat(
            np.arange(self.count, dtype=np.int64), np.diff(self.offsets)
        )
        return group


def pipeline_groups(graph: ComputeGraph) -> PipelineGroups:
    """Group the tasks of ``graph`` by operation and order the groups topologically.

    Raises
    ------
    InvalidInstanceError
        When the graph has no task, or when two operations depend on each other
        through different lanes (the operation graph has a cycle, so no
        contiguous stage order exists); the message names an operation on it.
    """
    if graph.num_tasks == 0:
        raise InvalidInstanceError(f"{graph.name}: no task to pipeline")
    operation = graph.operation
    present = np.unique(operation)
    index = np.full(int(present.max()) + 1, -1, dtype=np.int64)
    index[present] = np.arange(present.shape[0])
    n = present.shape[0]
    src = index[operation[graph.edge_src]]
    dst = index[operation[graph.edge_dst]]
    cross = src != dst
    pairs = np.unique(src[cross] * n + dst[cross])
    try:
        order = topological_order(n, pairs // n, pairs % n)
    except CycleFound as found:
        stuck = int(present[found.cycle[0]])
        raise InvalidInstanceError(
            f"{graph.name}: operation {_op_name(graph, stuck)!r} and its lanes depend on "
            "each other through another operation; pipeline groups need an acyclic "
            "operation graph"
        ) from None
    by_group: list[list[int]] = [[] for _ in range(n)]
    for task in graph.topological_order.tolist():
        by_group[int(index[operation[task]])].append(task)
    ops = [int(present[g]) for g in order]
    return PipelineGroups(
        operation=tuple(ops),
        tasks=tuple(tuple(by_group[g]) for g in order),
        names=tuple(_op_name(graph, op) for op in ops),
    )


def _op_name(graph: ComputeGraph, op: int) -> str:
    names = graph.operation_names
    return names[op] if op < len(names) else str(op)
