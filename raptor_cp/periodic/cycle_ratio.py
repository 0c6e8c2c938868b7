"""Maximum and minimum cycle ratio of a `PeriodicGraph`: the recurrence bound on the period.

For a cycle ``C``, ``ratio(C) = sum(w) / sum(d)``. With the constraints
``t(v, k) >= t(u, k - d) + w``, a periodic schedule ``t(x, k) = t(x, 0) + k * II``
exists exactly when ``II >= max_C ratio(C)``, so the maximum cycle ratio is the
smallest initiation interval the dependencies allow. The minimum is the maximum
of the negated weights, negated.

Two methods, both exact on integer inputs and returning a `fractions.Fraction`:

* ``"howard"`` (default, the fast path): policy iteration,
  `raptor_cp.periodic.howard`, certified edge by edge in integers;
* ``"bisection"``: the documented bounded analysis, `raptor_cp.periodic.bisection`
  (at most 64 positive-cycle tests of at most ``R + 1`` sweeps each).

Before either runs, a cycle of distance-0 edges is rejected with `DeadlockError`:
its events wait on each other within one generation, so no period works (in a
timed event graph it is a circuit without tokens). A graph without any cycle has
no recurrence bound: the functions return None.

Only the edges inside strong components take part (found in ``O(V + E)``).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from raptor_cp.errors import InvalidInstanceError, RaptorError
from raptor_cp.periodic.graph import NO_LABEL, PeriodicGraph

METHODS = ("howard", "bisection")
"""The ``method`` names `maximum_cycle_ratio` accepts."""

WITNESS_DETAIL = 128
"""Edges of a witness listed one by one; totals always cover the whole cycle."""


class DeadlockError(InvalidInstanceError):
    """The graph has a cycle of distance-0 edges: no period satisfies it.

    ``cycle`` holds the cycle's edge ids, starting at its smallest id.
    """

    def __init__(self, message: str, cycle: tuple[int, ...]) -> None:
        super().__init__(message)
        self.cycle = cycle


@dataclass(frozen=True)
class WitnessEdge:
    """One edge of a witness cycle: ``t(target, k) >= t(source, k - distance) + delay``."""

    edge: int
    source: int
    target: int
    delay: int
    distance: int
    link: int


@dataclass(frozen=True)
class CycleWitness:
    """A critical cycle in detail.

    ``delay`` and ``distance`` total the whole cycle (their quotient is the
    ratio), ``length`` counts its edges, ``edges`` lists the first
    `WITNESS_DETAIL` of them in cycle order, and ``cores`` / ``links`` are the
    distinct labelled cores of its nodes and links of its edges, ascending, over
    the whole cycle.
    """

    delay: int
    distance: int
    length: int
    edges: tuple[WitnessEdge, ...]
    cores: tuple[int, ...]
    links: tuple[int, ...]

    @property
    def truncated(self) -> bool:
        """True when the cycle has more edges than ``edges`` lists."""
        return self.length > len(self.edges)

    def to_json(self) -> dict[str, Any]:
        return {
            "delay": self.delay,
            "distance": self.distance,
            "length": self.length,
            "truncated": self.truncated,
            "cores": list(self.cores),
            "links": list(self.links),
            "edges": [vars(edge).copy() for edge in self.edges],
        }


@dataclass(frozen=True)
class CycleRatio:
    """The optimum cycle ratio of a graph and a cycle attaining it.

    Attributes
    ----------
    ratio:
        The ratio of ``cycle``: the maximum (or minimum) cycle ratio when
        ``exact``.
    bound:
        Proved bound on the other side: no cycle ratio exceeds it (for a
        minimum: none is below it). Equal to ``ratio`` unless a bisection ran
        out of tests.
    cycle:
        Edge ids of the critical cycle in order, starting at its smallest id.
    witness:
        The cycle in detail (totals, first edges, cores, links).
    objective:
        ``"max"`` or ``"min"``.
    method:
        ``"howard"`` or ``"bisection"``.
    iterations:
        Policy evaluations (Howard) or positive-cycle tests (bisection).
    sweeps:
        Bisection sweeps over the graph, all tests together (0 for Howard).
    """

    ratio: Fraction
    bound: Fraction
    cycle: tuple[int, ...]
    witness: CycleWitness
    objective: str
    method: str
    iterations: int
    sweeps: int

    @property
    def exact(self) -> bool:
        return self.ratio == self.bound


def maximum_cycle_ratio(graph: PeriodicGraph, method: str = "howard") -> CycleRatio | None:
    """The largest ``sum(w) / sum(d)`` over the cycles of ``graph``, or None if it has none.

    Raises `DeadlockError` when a cycle has total distance 0 and `RaptorError`
    for an unknown ``method`` (see `METHODS`).

    Examples
    --------
    >>> g = PeriodicGraph.from_edges(2, [(0, 1, 3, 0), (1, 0, 4, 2), (1, 1, 3, 1)])
    >>> maximum_cycle_ratio(g).ratio
    Fraction(7, 2)
    """
    return _optimum(graph, method, "max")


def minimum_cycle_ratio(graph: PeriodicGraph, method: str = "howard") -> CycleRatio | None:
    """The smallest ``sum(w) / sum(d)`` over the cycles of ``graph``, or None if it has none.

    Computed as the maximum ratio under negated delays. Raises like
    `maximum_cycle_ratio`.
    """
    return _optimum(graph, method, "min")


def _optimum(graph: PeriodicGraph, method: str, objective: str) -> CycleRatio | None:
    if method not in METHODS:
        raise RaptorError(f"unknown cycle-ratio method {method!r}; valid: {', '.join(METHODS)}")
    deadlock = graph.zero_distance_cycle()
    if deadlock is not None:
        raise DeadlockError(
            f"{graph.name}: deadlock: cycle of distance-0 edges through nodes "
            f"{cycle_text(graph.u[list(deadlock)].tolist())}; no period satisfies it",
            deadlock,
        )
    edges = np.flatnonzero(graph.recurrent_edges)
    if edges.size == 0:
        return None
    sign = 1 if objective == "max" else -1
    weights = sign * graph.w
    if method == "howard":
        from raptor_cp.periodic.howard import howard

        found = howard(graph, weights, edges)
        ratio, bound, cycle = found.ratio, found.ratio, found.cycle
        iterations, sweeps = found.iterations, 0
    else:
        from raptor_cp.periodic.bisection import bisection

        searched = bisection(graph, weights.tolist(), edges)
        ratio, bound, cycle = searched.ratio, searched.bound, searched.cycle
        iterations, sweeps = searched.tests, searched.sweeps
    return CycleRatio(
        ratio=sign * ratio,
        bound=sign * bound,
        cycle=cycle,
        witness=witness(graph, cycle),
        objective=objective,
        method=method,
        iterations=iterations,
        sweeps=sweeps,
    )


def cycle_text(nodes: list[int]) -> str:
    """``a -> b -> ... -> a`` for the cycle through ``nodes``, eliding after `WITNESS_DETAIL`."""
    if len(nodes) > WITNESS_DETAIL:
        shown = " -> ".join(map(str, nodes[:WITNESS_DETAIL]))
        return f"{shown} -> ... ({len(nodes)} nodes)"
    return " -> ".join(map(str, [*nodes, nodes[0]]))


def witness(graph: PeriodicGraph, cycle: tuple[int, ...]) -> CycleWitness:
    """Describe the cycle of edge ids ``cycle`` (totals over all of it, first edges in detail)."""
    ids = np.asarray(cycle, dtype=np.int64)
    cores = np.unique(graph.core[graph.u[ids]])
    links = np.unique(graph.link[ids])
    return CycleWitness(
        delay=sum(graph.w[ids].tolist()),
        distance=sum(graph.d[ids].tolist()),
        length=len(cycle),
        edges=tuple(
            WitnessEdge(
                edge=int(e),
                source=int(graph.u[e]),
                target=int(graph.v[e]),
                delay=int(graph.w[e]),
                distance=int(graph.d[e]),
                link=int(graph.link[e]),
            )
            for e in cycle[:WITNESS_DETAIL]
        ),
        cores=tuple(int(c) for c in cores if c != NO_LABEL),
        links=tuple(int(x) for x in links if x != NO_LABEL),
    )
