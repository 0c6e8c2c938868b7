"""Dependency spans of group ranges: the stage's dependency priority, from cached task times.

A stage's work cannot finish faster than its dependency chains allow, whatever
its core budget (the seeds' "dependency priority": ordered packing plus
dependency tail "biases cuts away from long dependent groups"). The seeds
cache per-task pipeline priorities once, in ``O(T + D)`` time and ``O(T + G)``
space (scheduling.md, "Complexity and limits", cached pipeline priorities), so
that a range's priority costs no graph traversal. Here the cached times are
the as-soon-as-possible schedule on unlimited cores with free transfers
(`ComputeGraph.asap_finish`) priced by the *nominal* priorities
(`ComputeGraph.nominal_cost`: a transpose counts as one bulk move), as
partitioning ranks by (scheduling-implementation.md, "Priorities, placement,
and recovery limits"): task ``t`` runs from ``start(t)`` to ``finish(t)``.
The span of groups ``[first, stop)`` is

    max finish(t) - min start(t)  over the tasks t of the range,

the time the range's work occupies in that schedule. It bounds from above the
longest compute chain with both ends in the range (a chain ``a -> ... -> b``
inside the range has ``finish(b) >= start(a) + its length``), with equality on
a chain of groups and whenever the range's earliest task starts a longest
chain; it can exceed that chain when the range holds a branch that starts
earlier than its own predecessors in the range would allow (a shortcut
convolution cut off from the block input). As a priority it only biases cuts;
it is not a timing guarantee.

Per group the largest finish and the smallest start are kept, and a sparse
table over groups answers any range in ``O(1)``: ``O(T + E + G log G)``
preprocessing, ``O(G log G)`` storage, vectorised batches.
"""

from __future__ import annotations

import numpy as np

from raptor_cp.graph import ComputeGraph
from raptor_cp.pipeline.groups import PipelineGroups


class DependencySpans:
    """``span(first, stop)``: the ASAP time groups ``[first, stop)`` occupy (ns)."""

    def __init__(self, graph: ComputeGraph, groups: PipelineGroups) -> None:
        finish = graph.asap_finish(graph.nominal_cost)
        start = finish - graph.nominal_cost
        ordered = groups.ordered_tasks
        cuts = groups.offsets[:-1]
        self._high = [np.maximum.reduceat(finish[ordered], cuts)]
        self._low = [np.minimum.reduceat(start[ordered], cuts)]
        width = 1
        while 2 * width <= groups.count:
            high, low = self._high[-1], self._low[-1]
            self._high.append(np.maximum(high[:-width], high[width:]))
            self._low.append(np.minimum(low[:-width], low[width:]))
            width *= 2

    def batch(self, firsts: np.ndarray, stops: np.ndarray) -> np.ndarray:
        """Span of each non-empty range ``[firsts[i], stops[i])``."""
        firsts = np.asarray(firsts, dtype=np.int64)
        stops = np.asarray(stops, dtype=np.int64)
        level = np.floor(np.log2(np.maximum(stops - firsts, 1))).astype(np.int64)
        out = np.zeros(firsts.shape[0], dtype=np.int64)
        for lv in np.unique(level).tolist():
            sel = np.flatnonzero(level == lv)
            a, b = firsts[sel], stops[sel] - (1 << lv)
            high = np.maximum(self._high[lv][a], self._high[lv][b])
            low = np.minimum(self._low[lv][a], self._low[lv][b])
            out[sel] = high - low
        return out

    def __call__(self, first: int, stop: int) -> int:
        return int(self.batch(np.array([first]), np.array([stop]))[0])
