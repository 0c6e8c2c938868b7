"""Howard's compiled policy iteration against its rules restated plainly.

tests/test_cycle_ratio.py checks the ratios against brute force and bisection;
here the evaluation and the whole iteration (raptor_cp/periodic/howard.py's
module docstring) are restated over dicts and lists, so the cycle chosen among
ties and the number of evaluations are pinned too. Evaluation: every policy
node reaches one cycle; the cycle's smallest node is its root, its ratio is
summed weight over summed distance in lowest terms, and the potential is
``X(root) = 0``, ``X(x) = q w(x) - p d(x) + X(succ(x))``.
"""

from __future__ import annotations

import math
import random
from fractions import Fraction

import numpy as np
import pytest

from raptor_cp.periodic import _policy_iteration
from raptor_cp.periodic.cycle_ratio import DeadlockError, maximum_cycle_ratio
from raptor_cp.periodic.graph import PeriodicGraph, canonical_cycle
from raptor_cp.periodic.howard import howard


def cycle_of(x: int, succ: list[int]) -> list[int]:
    """The policy cycle ``x`` reaches."""
    seen: list[int] = []
    while x not in seen:
        seen.append(x)
        x = succ[x]
    return seen[seen.index(x) :]


def plain(
    size: int, nodes: list[int], succ: list[int], weight: list[int], distance: list[int]
) -> tuple[list[int], list[int], list[int], list[int], list[int]]:
    """(lam_p, lam_q, value, component, roots) by following each node to its cycle."""
    root_of: dict[int, int] = {}
    ratio: dict[int, tuple[int, int]] = {}
    for x in nodes:
        cycle = cycle_of(x, succ)
        root = min(cycle)
        total_w, total_d = sum(weight[y] for y in cycle), sum(distance[y] for y in cycle)
        common = math.gcd(total_w, total_d)
        ratio[root] = (total_w // common, total_d // common)
        root_of[x] = root
    roots = sorted(ratio)

    lam_p, lam_q, value, component = [0] * size, [1] * size, [0] * size, [0] * size
    for x in nodes:
        root = root_of[x]
        lam_p[x], lam_q[x] = ratio[root]
        component[x] = roots.index(root)
        total, y = 0, x
        while y != root:
            total += lam_q[x] * weight[y] - lam_p[x] * distance[y]
            y = succ[y]
        value[x] = total
    return lam_p, lam_q, value, component, roots


def plain_howard(graph: PeriodicGraph, edges: list[int]) -> tuple[Fraction, tuple[int, ...], int]:
    """Howard's iteration as howard.py's module docstring states it, over ``edges``.

    Start: every node takes its out-edge of largest weight (smallest id on ties).
    Repeat: evaluate; rank the cycles by ratio (ties: smaller root first); if some
    node has an out-edge into a higher rank, switch, round by round, each such
    node to the edge of highest rank, then largest ``q w - p d + X`` (the head's
    ratio and potential), then smallest id, taking that rank at once (a round
    reads the ranks of its start; the next round looks at the edges entering the
    switched nodes); else switch each node with an out-edge into its own rank
    whose ``q w - p d + X(head)`` (its own ratio) exceeds its potential to the
    largest such, smallest id on ties; stop when nothing switches.
    """
    u, v = graph.u.tolist(), graph.v.tolist()
    w, d = graph.w.tolist(), graph.d.tolist()
    nodes = sorted({u[e] for e in edges})
    size = graph.num_nodes
    policy = {x: max((e for e in edges if u[e] == x), key=lambda e: (w[e], -e)) for x in nodes}
    evaluations = 0
    while True:
        evaluations += 1
        heads = [v[policy[x]] if x in policy else x for x in range(size)]
        lam_p, lam_q, value, component, roots = plain(
            size,
            nodes,
            heads,
            [w[policy[x]] if x in policy else 0 for x in range(size)],
            [d[policy[x]] if x in policy else 0 for x in range(size)],
        )
        ratio = [Fraction(lam_p[r], lam_q[r]) for r in roots]
        order = sorted(range(len(roots)), key=lambda i: (ratio[i], i))
        rank = [order.index(component[x]) for x in range(size)]
        start_rank, slots, switched = list(rank), list(edges), False
        while True:
            chosen: dict[int, tuple[tuple[int, int, int], int]] = {}
            for e in slots:
                a, b = u[e], v[e]
                if start_rank[b] > start_rank[a]:
                    key = (start_rank[b], lam_q[b] * w[e] - lam_p[b] * d[e] + value[b], -e)
                    if a not in chosen or key > chosen[a][0]:
                        chosen[a] = (key, e)
            if not chosen:
                break
            raised = {a: start_rank[v[e]] for a, (_, e) in chosen.items()}
            for a, (_, e) in chosen.items():
                policy[a] = e
            start_rank = [raised.get(x, start_rank[x]) for x in range(size)]
            slots = [e for e in edges if v[e] in raised]
            switched = True
        if switched:
            continue
        gains: dict[int, tuple[tuple[int, int], int]] = {}
        for e in edges:
            a, b = u[e], v[e]
            val = lam_q[a] * w[e] - lam_p[a] * d[e] + value[b]
            better = a not in gains or (val, -e) > gains[a][0]
            if rank[a] == rank[b] and val > value[a] and better:
                gains[a] = ((val, -e), e)
        if not gains:
            break
        for a, (_, e) in gains.items():
            policy[a] = e
    best = max(range(len(roots)), key=lambda i: (ratio[i], -roots[i]))
    cycle, x = [], roots[best]
    while not cycle or x != roots[best]:
        cycle.append(policy[x])
        x = v[policy[x]]
    return ratio[best], canonical_cycle(cycle), evaluations


def random_graph(seed: int) -> PeriodicGraph:
    """Up to 25 nodes, 1-4 edges a node, distances 0-2; weights -20..40 for odd seeds,
    0..2 for even ones, which also repeat every third edge (many equal ratios and
    potentials, and parallel twins: the tie rules decide)."""
    rng = random.Random(seed)
    n = rng.randint(2, 25)
    m = rng.randint(n, 4 * n)
    low, high = (-20, 40) if seed % 2 else (0, 2)
    edges = [
        (rng.randrange(n), rng.randrange(n), rng.randint(low, high), rng.choice([0, 1, 1, 2]))
        for _ in range(m)
    ]
    if seed % 2 == 0:
        edges += edges[::3]
    u, v, w, d = (list(column) for column in zip(*edges, strict=True))
    return PeriodicGraph(n, u, v, w, d, name=f"random{seed}")


def test_compiled_iteration_follows_the_rules() -> None:
    compared = evaluations = 0
    for seed in range(1500):
        graph = random_graph(seed)
        try:
            maximum_cycle_ratio(graph, "bisection")
        except DeadlockError:
            continue
        edges = np.flatnonzero(graph.recurrent_edges)
        if edges.size == 0:
            continue
        found = howard(graph, graph.w.astype(np.int64), edges)
        expected = plain_howard(graph, edges.tolist())
        assert (found.ratio, found.cycle, found.iterations) == expected, seed
        compared += 1
        evaluations = max(evaluations, found.iterations)
    assert compared > 50 and evaluations > 2  # the iteration ran several rounds


def test_iteration_refuses_a_policy_that_is_not_a_nodes_edge() -> None:
    # Two nodes, edges 0->1 and 1->0 (slots sorted by source); node 0's policy names
    # the edge leaving node 1.
    arrays = [np.array(a, dtype=np.int64) for a in ([0, 1], [1, 0], [1, 1], [1, 1], [0, 1])]
    into_start, into = np.array([0, 1, 2], dtype=np.int64), np.array([1, 0], dtype=np.int64)
    nodes, policy = np.array([0, 1], dtype=np.int64), np.array([1, 1], dtype=np.int64)
    outputs = [np.zeros(2, dtype=np.int64) for _ in range(5)]
    with pytest.raises(ValueError, match="a node's policy is not one of its edges"):
        _policy_iteration.iterate(*arrays, into_start, into, nodes, policy, *outputs)
