"""The compiled Kahn loop of `program_ranks` against the rule restated plainly."""

from __future__ import annotations

import heapq
import random

import numpy as np
import pytest

from raptor_cp.periodic import _ranked_order


def _csr(nodes: int, edges: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    successors: list[list[int]] = [[] for _ in range(nodes)]
    for a, b in edges:
        successors[a].append(b)
    start = np.concatenate([[0], np.cumsum([len(s) for s in successors])]).astype(np.int64)
    flat = np.array([b for s in successors for b in s], dtype=np.int64)
    return start, flat


def _plain(priority: list[int], edges: list[tuple[int, int]]) -> list[int]:
    """Kahn's algorithm, the ready node of least priority first; -1 where never ready."""
    missing = [0] * len(priority)
    for _, b in edges:
        missing[b] += 1
    ready = [(p, v) for v, p in enumerate(priority) if missing[v] == 0]
    heapq.heapify(ready)
    rank = [-1] * len(priority)
    position = 0
    while ready:
        _, v = heapq.heappop(ready)
        rank[v] = position
        position += 1
        for a, b in edges:
            if a == v:
                missing[b] -= 1
                if missing[b] == 0:
                    heapq.heappush(ready, (priority[b], b))
    return rank


@pytest.mark.parametrize("seed", range(20))
def test_random_graphs_rank_as_the_plain_rule(seed: int) -> None:
    rng = random.Random(seed)
    nodes = rng.randint(1, 60)
    order = list(range(nodes))
    rng.shuffle(order)
    edges = [
        (order[i], order[j])
        for i in range(nodes)
        for j in range(i + 1, nodes)
        if rng.random() < 0.08
    ]
    if seed % 4 == 3 and nodes > 2:  # a cycle: the nodes on and behind it stay unranked
        edges += [(order[0], order[-1]), (order[-1], order[0])]
    priority = rng.sample(range(10 * nodes), nodes)
    start, successor = _csr(nodes, edges)
    rank = np.empty(nodes, dtype=np.int64)
    ranked = _ranked_order.run(np.array(priority, dtype=np.int64), start, successor, rank)
    expected = _plain(priority, edges)
    assert rank.tolist() == expected
    assert ranked == sum(r >= 0 for r in expected)
    if seed % 4 == 3 and nodes > 2:
        assert ranked < nodes


def test_inconsistent_arrays_are_refused() -> None:
    rank = np.empty(2, dtype=np.int64)
    start = np.array([0, 1, 1], dtype=np.int64)
    with pytest.raises(ValueError, match="lengths disagree"):
        _ranked_order.run(np.zeros(2, np.int64), start, np.zeros(3, np.int64), rank)
    with pytest.raises(TypeError, match="int64"):
        _ranked_order.run(np.zeros(2, np.int32), start, np.ones(1, np.int64), rank)
