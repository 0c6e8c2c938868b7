"""Howard's policy iteration for the maximum cycle ratio, in exact integer arithmetic.

The multichain policy iteration of Cochet-Terrasson, Cohen, Gaubert, McGettrick
and Quadrat (1998), in the cycle-ratio form Dasdan (2004) found the fastest in
practice. A *policy* picks one out-edge per node; each component of the policy
graph holds one cycle whose reduced ratio ``p/q`` is the ``lambda`` of all its
nodes and whose smallest node is its root. Potentials are kept scaled,
``X = q * x``, so everything is an integer: ``X(root) = 0`` and
``X(x) = q*w(e) - p*d(e) + X(next)`` along the policy edge ``e``.

Improvement, as in multichain policy iteration (Puterman 1994, section 9.2):

1. *ratio step*: while some node has an out-edge into a strictly larger
   ``lambda``, it switches to the edge with the largest ``lambda`` (then the
   largest value, then the smallest id) and takes that ``lambda`` at once, so
   its predecessors can follow in the same step (a cascade, checked round by
   round over the in-edges of the nodes that just changed). No cycle can form
   among switched nodes; if any node switched, re-evaluate;
2. *potential step*: otherwise a node switches to the out-edge into the same
   ``lambda`` with the largest ``q*w - p*d + X(next)`` if that exceeds ``X``
   strictly (smallest id on ties).

``lambda`` never decreases; when it stays put the potentials grow (roots of
surviving cycles keep ``X = 0``), so no policy repeats and the loop ends. At the
end every edge has ``lambda(u) >= lambda(v)`` and, when equal,
``X(u) >= q*w - p*d + X(v)``; summed around any cycle (on which ``lambda`` is
constant) this proves that no cycle ratio exceeds ``lambda``. That certificate
is re-checked edge by edge in Python integers before the result is returned.

The iteration (evaluation and both steps) is a compiled loop
(`_policy_iteration.c`) in int64; the inputs must keep ``sum|w| * sum d``
below 2^61 so no intermediate overflows.

References
----------
J. Cochet-Terrasson, G. Cohen, S. Gaubert, M. Mc Gettrick, J.-P. Quadrat,
"Numerical computation of spectral elements in max-plus algebra", IFAC SSC 1998.
A. Dasdan, "Experimental analysis of the fastest optimum cycle ratio and mean
algorithms", ACM TODAES 9(4):385-418, 2004.
M. L. Puterman, "Markov Decision Processes", Wiley 1994, section 9.2.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from raptor_cp.errors import InvalidInstanceError
from raptor_cp.periodic import _policy_iteration
from raptor_cp.periodic.arrays import int64_array
from raptor_cp.periodic.graph import PeriodicGraph, canonical_cycle

INT64_LIMIT = 2**61
"""Bound on ``sum|w| * sum d``: potentials stay below four times it, inside int64."""


@dataclass(frozen=True)
class HowardOutcome:
    """The optimum ratio, a cycle attaining it and the number of policy evaluations."""

    ratio: Fraction
    cycle: tuple[int, ...]
    iterations: int


@dataclass(frozen=True)
class _Edges:
    """The analysed edges sorted by (source, id) as slots, and their in-edge index."""

    u: np.ndarray
    v: np.ndarray
    w: np.ndarray
    d: np.ndarray
    ids: np.ndarray
    into: np.ndarray
    into_start: np.ndarray


@dataclass(frozen=True)
class _Values:
    """A policy's evaluation: per node ``lam_p / lam_q`` and potential ``value``; the
    policy cycles' roots (ascending) and each node's cycle index in ``roots`` (0 for
    nodes outside the analysed edges)."""

    lam_p: np.ndarray
    lam_q: np.ndarray
    value: np.ndarray
    roots: list[int]
    component: np.ndarray


def howard(graph: PeriodicGraph, weights: np.ndarray, edges: np.ndarray) -> HowardOutcome:
    """Maximum of ``sum(weights) / sum(d)`` over the cycles formed by ``edges``.

    Parameters
    ----------
    graph:
        Supplies endpoints and distances.
    weights:
        Per-edge int64 weight of every edge of ``graph`` (the delays, or their
        negation for a minimum).
    edges:
        Ascending ids of the edges that lie on cycles (`PeriodicGraph.recurrent_edges`),
        non-empty, with no zero-distance cycle among them; every endpoint then has
        an out-edge in ``edges``.

    Returns the exact ratio, the policy cycle attaining it (rotated to start at
    its smallest edge id; the one with the smallest root among ties) and the
    number of policy evaluations. An iteration costs ``O(V + E + C log C)`` for
    ``C`` policy cycles; storage is ``O(V + E)``.

    Raises `InvalidInstanceError` when ``sum|w| * sum d`` over ``edges`` reaches
    2^61 (int64 could overflow); the bisection has no such limit.
    """
    ids = edges[np.lexsort((edges, graph.u[edges]))]
    span = sum(abs(w) for w in weights[ids].tolist()) * sum(graph.d[ids].tolist())
    if span >= INT64_LIMIT:
        raise InvalidInstanceError(
            f"{graph.name}: sum|w| * sum d = {span} is too large for Howard's int64 "
            "arithmetic (limit 2^61); use method 'bisection' (unbounded integers)"
        )
    into = np.argsort(graph.v[ids], kind="stable")
    into_start = np.zeros(graph.num_nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(graph.v[ids], minlength=graph.num_nodes), out=into_start[1:])
    arcs = _Edges(graph.u[ids], graph.v[ids], weights[ids], graph.d[ids], ids, into, into_start)
    nodes = arcs.u[np.flatnonzero(np.diff(arcs.u, prepend=-1))]  # arcs.u is sorted
    policy = np.full(graph.num_nodes, -1, dtype=np.int64)
    policy[nodes] = _group_best(arcs.u, (arcs.w,), ids)
    size = graph.num_nodes
    lam_p, lam_q, value, component = (np.empty(size, dtype=np.int64) for _ in range(4))
    roots = np.empty(nodes.shape[0], dtype=np.int64)
    iterations, cycles = _policy_iteration.iterate(
        *(int64_array(a) for a in (arcs.u, arcs.v, arcs.w, arcs.d, ids, into_start, into, nodes)),
        policy, lam_p, lam_q, value, component, roots,
    )  # fmt: skip
    values = _Values(lam_p, lam_q, value, roots[:cycles].tolist(), component)
    ratios = [Fraction(int(lam_p[r]), int(lam_q[r])) for r in values.roots]
    _certify(graph.name, arcs, values)
    best = max(range(len(ratios)), key=lambda i: (ratios[i], -values.roots[i]))
    root = values.roots[best]
    cycle = [int(policy[root])]
    while int(arcs.v[cycle[-1]]) != root:
        cycle.append(int(policy[arcs.v[cycle[-1]]]))
    return HowardOutcome(ratios[best], canonical_cycle(int(ids[s]) for s in cycle), iterations)


def _group_best(group: np.ndarray, keys: tuple[np.ndarray, ...], ids: np.ndarray) -> np.ndarray:
    """Per value of ``group``, the index maximizing ``keys`` lexicographically (first key
    most significant), ties to the smallest edge id; one index per group, by group."""
    order = np.lexsort((-ids, *reversed(keys), group))
    last = np.flatnonzero(np.append(group[order][1:] != group[order][:-1], True))
    return order[last]


def _certify(name: str, arcs: _Edges, values: _Values) -> None:
    """Check the final policy's optimality certificate on every edge, in Python integers."""
    p, q, x = values.lam_p.tolist(), values.lam_q.tolist(), values.value.tolist()
    for a, b, w, d in zip(
        arcs.u.tolist(), arcs.v.tolist(), arcs.w.tolist(), arcs.d.tolist(), strict=True
    ):
        order = p[a] * q[b] - p[b] * q[a]
        if order < 0 or (order == 0 and x[a] < q[a] * w - p[a] * d + x[b]):
            raise AssertionError(f"{name}: Howard's final policy fails its certificate at {a}->{b}")
