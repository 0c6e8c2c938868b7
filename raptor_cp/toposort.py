"""The one topological sort: Kahn's algorithm, smallest ready node first, with a cycle witness.

Readers order operations, `ComputeGraph` orders tasks, pipeline mode orders
operation groups and the periodic analysis orders its distance-0 events; all of
them need the same deterministic order (a node list that is already
topological keeps its order; nothing depends on hashing) and, on failure, a
cycle to name in the error. Callers turn `CycleFound` into their own
`RaptorError` with their own names for the nodes.

Complexity: ``O((V + E) log V)`` time (the heap of ready nodes), ``O(V + E)``
storage; the cycle walk on failure is ``O(V + E)``.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence

import numpy as np


class CycleFound(Exception):
    """The nodes are not a DAG; ``cycle`` is one cycle in dependency order.

    Each node of ``cycle`` is a predecessor of the next and the last one a
    predecessor of the first; the cycle starts at its smallest node.
    """

    def __init__(self, cycle: list[int]) -> None:
        super().__init__(cycle)
        self.cycle = cycle


def topological_order(
    num_nodes: int, src: Sequence[int] | np.ndarray, dst: Sequence[int] | np.ndarray
) -> list[int]:
    """Order nodes ``0..num_nodes-1`` so that every edge ``src[e] -> dst[e]`` goes forward.

    Among ready nodes the smallest goes first. Raises `CycleFound` when some
    nodes cannot be ordered: starting from the smallest of them, the walk follows
    each node's smallest unordered predecessor until a node repeats.

    >>> topological_order(3, [2, 1], [0, 2])
    [1, 2, 0]
    """
    source = np.asarray(src, dtype=np.int64)
    target = np.asarray(dst, dtype=np.int64)
    by_source = np.argsort(source, kind="stable")
    starts = np.searchsorted(source[by_source], np.arange(num_nodes + 1)).tolist()
    successors = target[by_source].tolist()
    indegree = np.bincount(target, minlength=num_nodes).tolist()
    ready = [node for node in range(num_nodes) if indegree[node] == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        node = heapq.heappop(ready)
        order.append(node)
        for succ in successors[starts[node] : starts[node + 1]]:
            indegree[succ] -= 1
            if indegree[succ] == 0:
                heapq.heappush(ready, succ)
    if len(order) < num_nodes:
        raise CycleFound(_cycle(source, target, indegree))
    return order


def _cycle(source: np.ndarray, target: np.ndarray, indegree: list[int]) -> list[int]:
    """A cycle among the nodes Kahn's algorithm could not order (see `topological_order`)."""
    blocked = np.asarray(indegree) > 0
    keep = blocked[source] & blocked[target]
    predecessors: dict[int, int] = {}
    for s, t in zip(source[keep].tolist(), target[keep].tolist(), strict=True):
        if t not in predecessors or s < predecessors[t]:
            predecessors[t] = s
    walk = [int(np.flatnonzero(blocked)[0])]
    position = {walk[0]: 0}
    while True:
        pred = predecessors[walk[-1]]
        if pred in position:
            cycle = walk[position[pred] :][::-1]
            first = cycle.index(min(cycle))
            return cycle[first:] + cycle[:first]
        position[pred] = len(walk)
        walk.append(pred)


CYCLE_SHOWN = 5
"""Nodes of a cycle an error message names before eliding the rest."""


def cycle_text(
    names: Sequence[str], shown: int = CYCLE_SHOWN, render: Callable[[str], str] = repr
) -> str:
    """``'a' -> 'b' -> 'a'`` for the cycle through ``names``; a long cycle is elided.

    Beyond ``shown`` nodes the text names the first ones and the length, so
    that a 200,000-task cycle costs one short line, not megabytes.

    >>> cycle_text(["a", "b"])
    "'a' -> 'b' -> 'a'"
    >>> cycle_text([str(i) for i in range(9)], shown=3)
    "'0' -> '1' -> '2' -> ... (a cycle of 9)"
    """
    if len(names) > shown:
        return " -> ".join(map(render, names[:shown])) + f" -> ... (a cycle of {len(names)})"
    return " -> ".join(map(render, [*names, names[0]]))


def order_from_predecessors(predecessors: Sequence[Sequence[int]]) -> list[int]:
    """`topological_order` of nodes given as lists of their predecessors (readers' form).

    >>> order_from_predecessors([[2], [], [1]])
    [1, 2, 0]
    """
    src = [pred for preds in predecessors for pred in preds]
    dst = [node for node, preds in enumerate(predecessors) for _ in preds]
    return topological_order(len(predecessors), src, dst)
