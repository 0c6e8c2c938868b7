"""Ordered packing of every contiguous range of one task sequence, batched over ranges.

The partition DP prices ``O(G² Q)`` stages (seeds' complexity table: joint
initialization ``O(G² Q Kpack)``), each a contiguous range of one fixed task
sequence (`raptor_cp.pipeline.stage_costs.packing_order`). Building a
`PackingProblem` and an ordered search per stage costs ``O(T)`` Python work per
query, minutes for ResNet-50. This module answers the same bottleneck question
for many ``(start, stop, cores)`` queries at once with numpy, after one
``O(T + R)`` preprocessing of the whole sequence:

* ``reach[i]``: the largest ``j`` such that the distinct resident weights of
  positions ``[i, j)`` fit one core (two pointers over weight multiplicities).
  Capacity feasibility is hereditary, so a range's reach is ``min(reach[i], stop)``.
* Loads are fixed per position. Callers fold transfers into them (stage costs
  charge every incident edge to each task, an upper bound on the incident
  transfer demand of any run, see `stage_costs`), so a run's demand is the sum of
  its loads: monotone in the run's end.
* Probe ``(start, stop, B, k)``: from ``start``, each run ends at the furthest
  position within reach whose load sum stays ``<= B``; the probe succeeds when it
  reaches ``stop`` within ``k`` runs. With monotone demand and hereditary
  capacity this greedy uses the fewest runs for ``B``, so the least ``B`` that
  succeeds is the **exact** minimum over ordered assignments of the loads (the
  linear-partition bottleneck problem; Olstad and Manne 1995 use the same
  greedy probe inside a bottleneck search).
* Parallel bottleneck search: all queries search their own ``B`` between the
  load bound ``max(largest load, ceil(total / k))`` and ``total``, starting with
  one probe at ``bound + largest load`` (enough without capacity limits). A
  successful probe lowers the upper end to its largest run (a feasible
  bottleneck); a failed one raises the lower end to the least bound at which one
  of its bound-cut runs would grow (below it the greedy repeats itself), the
  classic jumps of exact parametric search. Every round probes all open
  queries in one call of a compiled loop (`_range_probe.c`); the search
  itself is numpy over the queries.

Unavailable (`UNAVAILABLE`): ``k`` is below the fewest runs the capacity allows
(``min_runs``). Each finite cost is constructive: `runs` replays the greedy at
that bound and returns the run starts.

Time: ``O(T + R)`` Python preprocessing, then per batch of ``M`` queries with at
most ``K`` cores ``O(log L)`` rounds of probes of at most ``K`` runs each
(``O(M K log L log T)`` for a load range ``L``); storage ``O(T + M)``.

References
----------
B. Olstad and F. Manne, "Efficient partitioning of sequences", IEEE Trans.
Computers 44(11), 1995.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from raptor_cp.heuristics import _range_probe
from raptor_cp.periodic.arrays import int64_array

UNAVAILABLE = np.iinfo(np.int64).max
"""The one sentinel of an unavailable cost in integer arrays (a query whose core count
cannot hold the range's weights in order; `raptor_cp.heuristics.core_budgets` and the
prefix DP read it too). The largest int64, so that a minimum skips it."""


def capacity_reach(
    task_weights: Sequence[Sequence[int]], weight_size: Sequence[int], capacity: int
) -> np.ndarray:
    """``reach[i]``: largest ``j`` with the distinct weights of positions ``[i, j)`` fitting.

    A position whose own weights exceed ``capacity`` gets ``reach[i] == i``.
    """
    n = len(task_weights)
    weights = [sorted(set(w)) for w in task_weights]
    count: dict[int, int] = {}
    used, j = 0, 0
    reach = np.zeros(n, dtype=np.int64)
    for i in range(n):
        j = max(j, i)
        while j < n:
            extra = sum(weight_size[w] for w in weights[j] if not count.get(w))
            if used + extra > capacity:
                break
            for w in weights[j]:
                count[w] = count.get(w, 0) + 1
            used += extra
            j += 1
        reach[i] = j
        if j > i:
            for w in weights[i]:
                count[w] -= 1
                if count[w] == 0:
                    used -= weight_size[w]
    return reach


class RangePacker:
    """Batched ordered packing over ranges of one sequence (see the module docstring)."""

    def __init__(self, loads: np.ndarray, reach: np.ndarray) -> None:
        self.loads = np.asarray(loads, dtype=np.int64)
        self.reach = int64_array(reach)
        n = self.loads.shape[0]
        self.prefix = np.concatenate([[0], np.cumsum(self.loads)])
        self.table = [self.loads.copy()]
        width = 1
        while 2 * width <= n:
            last = self.table[-1]
            self.table.append(np.maximum(last[:-width], last[width:]))
            width *= 2

    def range_max(self, starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
        """Largest load in each non-empty ``[start, stop)`` (sparse table, O(1) per range)."""
        length = stops - starts
        level = np.floor(np.log2(np.maximum(length, 1))).astype(np.int64)
        out = np.zeros(starts.shape[0], dtype=np.int64)
        for lv in np.unique(level).tolist():
            sel = np.flatnonzero(level == lv)
            row = self.table[lv]
            out[sel] = np.maximum(row[starts[sel]], row[stops[sel] - (1 << lv)])
        return out

    def _probe(
        self, starts: np.ndarray, stops: np.ndarray, bound: np.ndarray, limit: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Run the greedy with run bound ``bound`` on each range, at most ``limit`` runs.

        Returns ``(ok, largest, next_bound)``: whether the range was covered, the
        largest run load (a feasible bottleneck when ok), and the least bound at
        which some run cut by ``bound`` would take one more task (below it the
        greedy repeats the same runs, so a failed probe fails there too). The
        loop is compiled (`raptor_cp.heuristics._range_probe`), one query after
        the other.
        """
        m = starts.shape[0]
        ok = np.empty(m, dtype=np.int64)
        largest = np.empty(m, dtype=np.int64)
        next_bound = np.empty(m, dtype=np.int64)
        _range_probe.probe(
            int64_array(starts),
            int64_array(stops),
            int64_array(bound),
            int64_array(limit),
            self.prefix,
            self.reach,
            ok,
            largest,
            next_bound,
        )
        return ok.astype(bool), largest, next_bound

    def min_runs(self, starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
        """Fewest runs the capacity allows for each range (huge where a task fits no core)."""
        m = starts.shape[0]
        pos = np.asarray(starts, dtype=np.int64).copy()
        stops = np.asarray(stops, dtype=np.int64)
        runs = np.zeros(m, dtype=np.int64)
        never = np.iinfo(np.int64).max
        live = np.flatnonzero(pos < stops)
        while live.size:
            p = pos[live]
            end = np.minimum(self.reach[p], stops[live])
            stuck = end <= p
            runs[live[stuck]] = never
            runs[live[~stuck]] += 1
            pos[live] = end
            live = live[~stuck & (end < stops[live])]
        return runs

    def costs(self, starts: np.ndarray, stops: np.ndarray, cores: np.ndarray) -> np.ndarray:
        """Exact ordered bottleneck cost of each query, `UNAVAILABLE` where capacity forbids."""
        starts = np.asarray(starts, dtype=np.int64)
        stops = np.asarray(stops, dtype=np.int64)
        cores = np.asarray(cores, dtype=np.int64)
        total = self.prefix[stops] - self.prefix[starts]
        largest = self.range_max(starts, stops)
        low = np.maximum(largest, -(-total // cores))
        high = total.copy()
        result = np.full(starts.shape[0], UNAVAILABLE, dtype=np.int64)
        able = np.flatnonzero(self.min_runs(starts, stops) <= cores)
        if able.size == 0:
            return result
        # Probing by (start, cores) keeps the lockstep lookups nearly sorted (faster).
        able = able[np.lexsort((cores[able], starts[able]))]
        lo, hi = low[able], high[able]
        s, e, k = starts[able], stops[able], cores[able]
        guess = np.minimum(lo + largest[able], hi)
        open_ = np.arange(able.shape[0])
        while open_.size:
            fits, run_max, grow = self._probe(s[open_], e[open_], guess[open_], k[open_])
            hi[open_[fits]] = run_max[fits]
            failed = open_[~fits]
            lo[failed] = np.minimum(np.maximum(guess[failed] + 1, grow[~fits]), hi[failed])
            open_ = open_[lo[open_] < hi[open_]]
            guess[open_] = (lo[open_] + hi[open_]) // 2
        result[able] = lo
        return result

    def runs(self, start: int, stop: int, bound: int) -> list[int]:
        """Start positions of the greedy runs of ``[start, stop)`` under ``bound``."""
        starts: list[int] = []
        pos = start
        while pos < stop:
            end = int(np.searchsorted(self.prefix, self.prefix[pos] + bound, side="right")) - 1
            end = min(end, int(self.reach[pos]), stop)
            if end <= pos:
                raise ValueError(f"position {pos} exceeds bound {bound} or fits no core")
            starts.append(pos)
            pos = end
        return starts
