"""Howard's compiled policy evaluation against its rule restated plainly.

`raptor_cp.periodic._policy_evaluation.evaluate` (used by
`raptor_cp.periodic.howard._evaluate`): every policy node reaches one cycle;
the cycle's smallest node is its root, its ratio is summed weight over summed
distance in lowest terms, and the potential is ``X(root) = 0``,
``X(x) = q w(x) - p d(x) + X(succ(x))``. Nodes outside the policy get ratio
0/1, potential 0 and component 0.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from raptor_cp.periodic import _policy_evaluation


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


def random_policy(seed: int) -> tuple[int, list[int], list[int], list[int], list[int]]:
    """A functional graph on a random subset of up to 60 nodes, distances 1-3."""
    rng = random.Random(seed)
    size = rng.randint(1, 60)
    nodes = sorted(rng.sample(range(size), rng.randint(1, size)))
    succ = [0] * size
    for x in nodes:
        succ[x] = rng.choice(nodes)
    weight = [rng.randint(-50, 50) if x in nodes else 0 for x in range(size)]
    distance = [rng.randint(1, 3) if x in nodes else 0 for x in range(size)]
    return size, nodes, succ, weight, distance


@pytest.mark.parametrize("seed", range(40))
def test_compiled_evaluation_follows_the_rule(seed: int) -> None:
    size, nodes, succ, weight, distance = random_policy(seed)
    outputs = [np.empty(size, dtype=np.int64) for _ in range(4)]
    roots = np.empty(len(nodes), dtype=np.int64)
    cycles = _policy_evaluation.evaluate(
        np.array(nodes, dtype=np.int64),
        np.array(succ, dtype=np.int64),
        np.array(weight, dtype=np.int64),
        np.array(distance, dtype=np.int64),
        *outputs,
        roots,
    )
    lam_p, lam_q, value, component, expected_roots = plain(size, nodes, succ, weight, distance)
    assert roots[:cycles].tolist() == expected_roots
    assert [a.tolist() for a in outputs] == [lam_p, lam_q, value, component]


def test_the_random_policies_have_several_cycles_and_trees() -> None:
    shapes = set()
    for seed in range(40):
        _, nodes, succ, _, _ = random_policy(seed)
        cycles = len({min(cycle_of(x, succ)) for x in nodes})
        shapes.add("several cycles" if cycles > 1 else "one cycle")
        if any(x not in cycle_of(x, succ) for x in nodes):
            shapes.add("trees")
    assert shapes == {"several cycles", "one cycle", "trees"}


def test_evaluation_refuses_a_policy_that_leaves_its_nodes() -> None:
    arrays = [np.zeros(3, dtype=np.int64) for _ in range(7)]
    succ = np.array([2, 0, 0], dtype=np.int64)  # node 0 points at node 2, not a policy node
    with pytest.raises(ValueError, match="a policy edge leaves the nodes"):
        _policy_evaluation.evaluate(
            np.array([0, 1], dtype=np.int64), succ, *arrays[:6], arrays[6][:2]
        )
    with pytest.raises(ValueError, match="nodes must be ascending node ids"):
        _policy_evaluation.evaluate(
            np.array([1, 0], dtype=np.int64), succ, *arrays[:6], arrays[6][:2]
        )
