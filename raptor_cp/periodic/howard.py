"""Howard's policy iteration for the maximum cycle ratio, in exact integer arithmetic.

The multichain policy iteration of Cochet-Terrasson, Cohen, Gaubert, McGettrick
and Quadrat (1998), in the cycle-ratio form Dasdan (2004) found the fastest in
practice. A *policy* picks one out-edge per node; each component of the policy
graph holds one cycle whose ratio ``p/q`` (reduced) is the component's value
``lambda`` and whose smallest node is its root. Node potentials are kept scaled,
``X = q * x``, so every quantity is a Python integer:
``X(x) = q*w(e) - p*d(e) + X(next)`` along the policy edge ``e``, ``X(root) = 0``.

Improvement, as in the multichain policy iteration (Puterman 1994, 9.2):

1. *ratio step*: a node with an out-edge into a strictly larger ``lambda``
   switches to the edge with the largest ``lambda``, then the largest value,
   then the smallest id; if any node switched, re-evaluate;
2. *potential step*: otherwise a node switches to the out-edge into the same
   ``lambda`` with the largest ``q*w - p*d + X(next)`` if that exceeds ``X``
   strictly (smallest id on ties).

``lambda`` never decreases; when it stays put the potentials grow (the roots of
surviving cycles keep ``X = 0``), so no policy repeats and the loop ends. At the
end, for every edge ``lambda(u) >= lambda(v)`` and, when equal,
``X(u) >= q*w - p*d + X(v)``: summed around any cycle (on which ``lambda`` is
constant) this proves the cycle's ratio is at most ``lambda``. That certificate
is re-checked edge by edge in integers before the result is returned.

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
from math import gcd

import numpy as np

from raptor_cp.errors import InvalidInstanceError
from raptor_cp.periodic.graph import PeriodicGraph, canonical_cycle


INT64_LIMIT = 2**61
"""Howard's scaled integers stay below ``4 * sum|w| * sum d``; that product must fit in int64."""


@dataclass(frozen=True)
class HowardOutcome:
    """The optimum ratio, a cycle attaining it and the number of policy evaluations."""

    ratio: Fraction
    cycle: tuple[int, ...]
    iterations: int


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
    number of policy evaluations. Each iteration costs ``O(V + E log E)``
    (value determination in Python integers, improvement vectorized in int64).

    Raises `InvalidInstanceError` when ``sum|w| * sum d`` over ``edges`` reaches
    2^61, beyond which int64 could overflow; the bisection has no such limit.
    """
    order = np.lexsort((edges, graph.u[edges]))
    ids = edges[order]
    eu, ev, ew, ed = graph.u[ids], graph.v[ids], weights[ids], graph.d[ids]
    span = int(np.abs(ew).sum()) * int(ed.sum())
    if span >= INT64_LIMIT:
        raise InvalidInstanceError(
            f"{graph.name}: sum|w| * sum d = {span} is too large for Howard's int64 "
            "arithmetic (limit 2^61); use method 'bisection' (unbounded integers)"
        )
    nodes = np.unique(eu)
    policy = np.full(graph.num_nodes, -1, dtype=np.int64)
    policy[nodes] = _group_best(eu, (ew,), ids)
    iterations = 0
    while True:
        iterations += 1
        values = _evaluate(nodes, policy, ew, ed, ev)
        ratios = [Fraction(int(values.lam_p[r]), int(values.lam_q[r])) for r in values.roots]
        rank_of_cycle = np.empty(len(ratios), dtype=np.int64)
        rank_of_cycle[sorted(range(len(ratios)), key=ratios.__getitem__)] = range(len(ratios))
        rank = rank_of_cycle[values.component]
        if not _improve(policy, eu, ev, ew, ed, ids, values, rank):
            break
    _certify(graph.name, eu, ev, ew, ed, values)
    best = max(range(len(ratios)), key=lambda i: (ratios[i], -values.roots[i]))
    root = values.roots[best]
    cycle = [int(policy[root])]
    while int(ev[cycle[-1]]) != root:
        cycle.append(int(policy[ev[cycle[-1]]]))
    return HowardOutcome(
        ratios[best], canonical_cycle(int(ids[slot]) for slot in cycle), iterations
    )


@dataclass(frozen=True)
class _Values:
    """A policy's evaluation: per node ``lam_p / lam_q``, potential ``value`` and the index
    of its policy cycle in ``roots`` (the smallest node of each cycle, ascending)."""

    lam_p: np.ndarray
    lam_q: np.ndarray
    value: np.ndarray
    roots: list[int]
    component: np.ndarray


def _group_best(group: np.ndarray, keys: tuple[np.ndarray, ...], ids: np.ndarray) -> np.ndarray:
    """Per run of equal ``group`` values (sorted), the index maximizing ``keys`` (lexicographic,
    first key most significant), ties to the smallest edge id."""
    order = np.lexsort((-ids, *reversed(keys), group))
    last = np.flatnonzero(np.append(group[order][1:] != group[order][:-1], True))
    return order[last]


def _evaluate(
    nodes: np.ndarray, policy: np.ndarray, ew: np.ndarray, ed: np.ndarray, ev: np.ndarray
) -> _Values:
    """Ratio ``p/q``, scaled potential ``X`` and policy cycle of every node under ``policy``.

    Pointer doubling finds the policy cycles (``succ^(2^k)`` of any node lies on
    its cycle once ``2^k >= V``) and sums the tree paths into them, both in
    ``O(V log V)`` vectorized steps; only the cycles themselves are walked in Python.
    """
    size = policy.shape[0]
    steps = max(1, size.bit_length())
    succ = np.arange(size)
    cw = np.zeros(size, dtype=np.int64)
    cd = np.zeros(size, dtype=np.int64)
    succ[nodes], cw[nodes], cd[nodes] = ev[policy[nodes]], ew[policy[nodes]], ed[policy[nodes]]
    jump = succ
    for _ in range(steps):
        jump = jump[jump]
    on_cycle = np.zeros(size, dtype=bool)
    on_cycle[jump[nodes]] = True
    lam_p = np.zeros(size, dtype=np.int64)
    lam_q = np.ones(size, dtype=np.int64)
    value = np.zeros(size, dtype=np.int64)
    component = np.zeros(size, dtype=np.int64)
    nxt, weight, dist = succ.tolist(), cw.tolist(), cd.tolist()
    done = [False] * size
    roots: list[int] = []
    for root in np.flatnonzero(on_cycle).tolist():
        if done[root]:
            continue
        cycle = [root]
        while nxt[cycle[-1]] != root:
            cycle.append(nxt[cycle[-1]])
        total_w = sum(weight[x] for x in cycle)
        total_d = sum(dist[x] for x in cycle)
        common = gcd(total_w, total_d)
        p, q = total_w // common, total_d // common
        roots.append(root)
        potential = 0
        for x in reversed(cycle):
            done[x] = True
            if x != root:
                potential += q * weight[x] - p * dist[x]
                value[x] = potential
        lam_p[cycle], lam_q[cycle], component[cycle] = p, q, len(roots) - 1
    lam_p, lam_q, component = lam_p[jump], lam_q[jump], component[jump]
    path = np.where(on_cycle, 0, lam_q * cw - lam_p * cd)
    hop = np.where(on_cycle, np.arange(size), succ)
    for _ in range(steps):
        path = path + path[hop]
        hop = hop[hop]
    return _Values(lam_p, lam_q, path + value[hop], roots, component)


def _improve(
    policy: np.ndarray,
    eu: np.ndarray,
    ev: np.ndarray,
    ew: np.ndarray,
    ed: np.ndarray,
    ids: np.ndarray,
    values: _Values,
    rank: np.ndarray,
) -> bool:
    """Apply the ratio step, or if it changes nothing the potential step; True if changed.

    Ratios are compared through ``rank``, each node's position among the
    distinct policy-cycle ratios sorted exactly, so both steps vectorize.
    """
    lam_p, lam_q, value = values.lam_p, values.lam_q, values.value
    rank_u, rank_v = rank[eu], rank[ev]
    up = np.flatnonzero(rank_v > rank_u)
    if up.size:
        v = ev[up]
        val = lam_q[v] * ew[up] - lam_p[v] * ed[up] + value[v]
        chosen = up[_group_best(eu[up], (rank_v[up], val), ids[up])]
        policy[eu[chosen]] = chosen
        return True
    same = np.flatnonzero(rank_v == rank_u)
    u, v = eu[same], ev[same]
    val = lam_q[u] * ew[same] - lam_p[u] * ed[same] + value[v]
    gain = val > value[u]
    if not gain.any():
        return False
    better = same[gain]
    chosen = better[_group_best(eu[better], (val[gain],), ids[better])]
    policy[eu[chosen]] = chosen
    return True


def _certify(
    name: str, eu: np.ndarray, ev: np.ndarray, ew: np.ndarray, ed: np.ndarray, values: _Values
) -> None:
    """Check the final policy's optimality certificate on every edge, in Python integers."""
    p, q, x = values.lam_p.tolist(), values.lam_q.tolist(), values.value.tolist()
    for a, b, w, d in zip(eu.tolist(), ev.tolist(), ew.tolist(), ed.tolist()):
        order = p[a] * q[b] - p[b] * q[a]
        if order < 0 or (order == 0 and x[a] < q[a] * w - p[a] * d + x[b]):
            raise AssertionError(f"{name}: Howard's final policy fails its certificate at {a}->{b}")
