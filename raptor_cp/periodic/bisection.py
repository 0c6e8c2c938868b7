"""The documented maximum-cycle-ratio analysis: bisection on positive-cycle tests.

A *test* at a candidate period ``II = p/q`` asks whether the edge weights
``q*w - p*d`` (the delays ``w - II*d`` scaled to integers) close a positive
cycle, i.e. whether some cycle has a ratio above ``II``. It runs longest-path
relaxations from a virtual source (all potentials start at 0) in *sweeps*: one
sweep visits the nodes in a topological order of the distance-0 edges and
relaxes all out-edges of each node whose potential changed since its last
visit. Distance-0 edges and forward recurrences settle within the sweep; a
recurrence edge pointing backward in the order (a *back edge*, self-loops
included) carries its update to the next sweep.

* If a sweep leaves no node pending, every edge is satisfied: no positive
  cycle, the ratio is at most ``II`` (*feasible*).
* A node still pending after sweep ``s`` has a predecessor chain through at
  least ``s`` back edges; after ``R + 1`` sweeps, ``R`` the number of back
  edges (at most the number of distance>0 edges), the chain must repeat a
  node. So a test ends after at most ``R + 1`` sweeps, earlier when the
  predecessor graph, checked after every sweep in ``O(V)``, already holds a
  cycle. A predecessor cycle always has positive weight (each of its edges was
  set by a strict improvement), so it is a witness with ratio above ``II``.

The bisection keeps ``lo``, the ratio of the best witness cycle (a certified
lower bound), and ``hi``, a proved upper bound (initially ``sum|w|``, then the
last feasible ``II``). Each round tests the midpoint; after a new witness it
first tests ``lo`` itself, which is feasible exactly when ``lo`` is the optimum.
Cycle ratios are fractions with denominators at most ``Dmax`` (the largest
total distance of a simple cycle), so once ``hi - lo < 1 / (den(lo) * Dmax)`` no
other ratio fits in the interval and ``lo`` is exact without a further test.
The 1-ns bracket of the documented analysis is reached on the way; the run
stops after at most ``max_tests`` (64) tests, then reporting ``[lo, hi]``.

Time ``O(L (R + 1) (V + E))`` for ``L <= 64`` tests; storage ``O(V + E)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from raptor_cp.periodic.graph import PeriodicGraph, canonical_cycle

MAX_TESTS = 64
"""Positive-cycle tests one bisection may run (the documented bound)."""


@dataclass(frozen=True)
class BisectionOutcome:
    """Result of `bisection`.

    ``ratio`` is the ratio of ``cycle``, the best witness found; ``bound`` is a
    proved upper bound on every cycle ratio, equal to ``ratio`` when the optimum
    was pinned (the normal case). ``tests`` and ``sweeps`` count the work done.
    """

    ratio: Fraction
    bound: Fraction
    cycle: tuple[int, ...]
    tests: int
    sweeps: int
    back_edges: int


class _Tester:
    """Positive-cycle tests on one edge set, reusing the index and scratch arrays."""

    def __init__(self, graph: PeriodicGraph, weights: list[int], edges: np.ndarray) -> None:
        nodes = np.unique(np.concatenate([graph.u[edges], graph.v[edges]]))
        self.order = graph.sweep_order(nodes, edges)
        position = {node: i for i, node in enumerate(self.order)}
        ordered = sorted(edges.tolist(), key=lambda e: (position[int(graph.u[e])], e))
        self.edge = ordered
        self.src = [int(graph.u[e]) for e in ordered]
        self.dst = [int(graph.v[e]) for e in ordered]
        self.w = [weights[e] for e in ordered]
        self.d = [int(graph.d[e]) for e in ordered]
        size = graph.num_nodes
        self.start = [0] * size
        self.end = [0] * size
        for slot, node in enumerate(self.src):
            if self.end[node] == 0:
                self.start[node] = slot
            self.end[node] = slot + 1
        self.back_edges = sum(
            1 for s, t in zip(self.src, self.dst, strict=True) if position[t] <= position[s]
        )
        self.size = size
        self.sweeps = 0

    def test(self, ratio: Fraction) -> tuple[int, ...] | None:
        """Edge ids, in order, of a positive cycle under ``w - ratio*d``; None if there is none."""
        p, q = ratio.numerator, ratio.denominator
        cost = [q * w - p * d for w, d in zip(self.w, self.d, strict=True)]
        dist = [0] * self.size
        pred = [-1] * self.size
        pending = [False] * self.size
        for node in self.order:
            pending[node] = True
        order, start, end, dst = self.order, self.start, self.end, self.dst
        for _ in range(self.back_edges + 1):
            self.sweeps += 1
            for x in order:
                if not pending[x]:
                    continue
                pending[x] = False
                base = dist[x]
                for slot in range(start[x], end[x]):
                    y = dst[slot]
                    candidate = base + cost[slot]
                    if candidate > dist[y]:
                        dist[y] = candidate
                        pred[y] = slot
                        pending[y] = True
            if not any(pending[x] for x in order):
                return None
            cycle = self._pred_cycle(pred)
            if cycle is not None:
                return cycle
        raise AssertionError("a node is pending after R+1 sweeps but no predecessor cycle")

    def _pred_cycle(self, pred: list[int]) -> tuple[int, ...] | None:
        """The first predecessor cycle met scanning walks from nodes in sweep order."""
        mark = [-1] * self.size
        for first in self.order:
            x = first
            while x >= 0 and mark[x] < 0:
                mark[x] = first
                x = self.src[pred[x]] if pred[x] >= 0 else -1
            if x >= 0 and mark[x] == first:
                slots = [pred[x]]
                while self.src[slots[-1]] != x:
                    slots.append(pred[self.src[slots[-1]]])
                return tuple(self.edge[slot] for slot in reversed(slots))
        return None


def bisection(
    graph: PeriodicGraph, weights: list[int], edges: np.ndarray, max_tests: int = MAX_TESTS
) -> BisectionOutcome:
    """Maximum of ``sum(weights) / sum(d)`` over the cycles formed by ``edges``.

    Same preconditions as `raptor_cp.periodic.howard.howard`: ``edges`` are the
    ascending ids of the edges on cycles, non-empty, with no zero-distance cycle.
    The returned cycle is rotated to start at its smallest edge id.
    """
    tester = _Tester(graph, weights, edges)
    src = graph.u.tolist()
    top: dict[int, int] = {}
    bottom: dict[int, int] = {}
    for edge in edges.tolist():
        top[src[edge]] = max(top.get(src[edge], 0), weights[edge])
        bottom[src[edge]] = min(bottom.get(src[edge], 0), weights[edge])
    floor, hi = Fraction(sum(bottom.values()) - 1), Fraction(sum(top.values()))
    longest = int(np.sort(graph.d[edges])[::-1][: len(tester.order)].sum())
    best = tester.test(floor)
    if best is None:
        raise AssertionError(f"no positive cycle below the floor {floor}")
    lo = _ratio(graph, weights, best)
    tests = 1
    lo_tested = last_at_lo = False
    while tests < max_tests:
        if (hi - lo) * lo.denominator * longest < 1:
            hi = lo
            break
        at_lo = not lo_tested and not last_at_lo
        probe = lo if at_lo else (lo + hi) / 2
        tests += 1
        last_at_lo = at_lo
        lo_tested = lo_tested or at_lo
        cycle = tester.test(probe)
        if cycle is None:
            hi = probe
            if at_lo:
                break
            continue
        ratio = _ratio(graph, weights, cycle)
        if ratio <= probe:
            raise AssertionError(f"witness ratio {ratio} does not exceed the tested {probe}")
        if ratio > lo:
            lo, best, lo_tested = ratio, cycle, False
    return BisectionOutcome(lo, hi, canonical_cycle(best), tests, tester.sweeps, tester.back_edges)


def _ratio(graph: PeriodicGraph, weights: list[int], cycle: tuple[int, ...]) -> Fraction:
    return Fraction(sum(weights[e] for e in cycle), sum(int(graph.d[e]) for e in cycle))
