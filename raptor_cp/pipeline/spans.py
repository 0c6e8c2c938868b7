"""Dependency spans of group ranges: the longest compute chain inside a candidate stage.

A stage's work cannot finish faster than its longest chain of dependent tasks,
whatever its core budget (the seeds' "dependency priority": ordered packing plus
dependency tail "biases cuts away from long dependent groups"). For a range of
groups ``[first, stop)`` the span is the longest path by task compute cost over
the edges with both ends in the range; transfers are left out. The costs are
the *nominal* priorities (`ComputeGraph.nominal_cost`: a transpose counts as one
bulk move), as partitioning ranks by (scheduling-implementation.md,
"Priorities, placement, and recovery limits"); placement and evaluation use the
physical costs.

For a fixed ``first`` the spans of every ``stop`` come from one sweep over the
groups in order (groups are topological, so a group's tasks only need the
finish times of earlier groups of the range and of earlier levels of their own
group). Each group's tasks are split once into dependency levels inside the
group; a sweep is then one numpy ``maximum.at`` per (group, level). Rows are
computed lazily, once per ``first``: ``O(G (T + E))`` array work for every range.
"""

from __future__ import annotations

import numpy as np

from raptor_cp.graph import ComputeGraph
from raptor_cp.pipeline.groups import PipelineGroups


class DependencySpans:
    """``span(first, stop)``: longest compute chain of groups ``[first, stop)`` (ns)."""

    def __init__(self, graph: ComputeGraph, groups: PipelineGroups) -> None:
        self.cost = graph.nominal_cost
        self.num_tasks = graph.num_tasks
        self.group = groups.group_of_task(graph.num_tasks)
        self.levels: list[list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = [
            self._levels(graph, np.asarray(tasks, dtype=np.int64)) for tasks in groups.tasks
        ]
        self._rows: dict[int, np.ndarray] = {}

    def _levels(
        self, graph: ComputeGraph, tasks: np.ndarray
    ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Per dependency level of one group: (tasks, predecessor sources, local consumer)."""
        group = int(self.group[tasks[0]])
        level = {}
        preds: dict[int, list[int]] = {}
        for t in tasks.tolist():
            sources = graph.edge_src[graph.predecessor_edges(t)].tolist()
            preds[t] = sources
            inside = [level[s] for s in sources if self.group[s] == group]
            level[t] = 1 + max(inside) if inside else 0
        depth = max(level.values()) + 1
        out = []
        for d in range(depth):
            members = [t for t in tasks.tolist() if level[t] == d]
            src: list[int] = []
            dst: list[int] = []
            for i, t in enumerate(members):
                src.extend(preds[t])
                dst.extend([i] * len(preds[t]))
            out.append(
                (
                    np.asarray(members, dtype=np.int64),
                    np.asarray(src, dtype=np.int64),
                    np.asarray(dst, dtype=np.int64),
                )
            )
        return out

    def row(self, first: int) -> np.ndarray:
        """``row[stop - first - 1]`` = span of ``[first, stop)`` for every ``stop > first``."""
        found = self._rows.get(first)
        if found is not None:
            return found
        finish = np.zeros(self.num_tasks, dtype=np.int64)
        spans = np.zeros(len(self.levels) - first, dtype=np.int64)
        best = 0
        for g in range(first, len(self.levels)):
            for members, src, dst in self.levels[g]:
                ready = np.zeros(members.shape[0], dtype=np.int64)
                if src.size:
                    # Tasks of groups before ``first`` were never written: they count 0.
                    np.maximum.at(ready, dst, finish[src])
                finish[members] = ready + self.cost[members]
                best = max(best, int(finish[members].max()))
            spans[g - first] = best
        self._rows[first] = spans
        return spans

    def __call__(self, first: int, stop: int) -> int:
        return int(self.row(first)[stop - first - 1])
