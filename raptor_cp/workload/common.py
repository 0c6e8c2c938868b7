"""What every non-ONNX workload reader shares: reading a file with one-line errors
and ordering a named DAG deterministically.

The readers (`pimcomp_reader`, `stg_reader`, `raptor_json`) each phrase their
own cycle message (node names, task ids with line numbers, JSON tasks), so
`topological_order` reports a cycle as a list of indices and lets the caller
word it.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from raptor_cp.errors import InvalidInputError


def read_text(path: str | Path) -> str:
    """The UTF-8 text of ``path``; a missing or unreadable file is an `InvalidInputError`."""
    file = Path(path)
    if not file.exists():
        raise InvalidInputError(f"{path}: no such file")
    if not file.is_file():
        raise InvalidInputError(f"{path}: not a regular file")
    try:
        return file.read_bytes().decode("utf-8")
    except UnicodeDecodeError as error:
        raise InvalidInputError(
            f"{path}: not UTF-8 text (bad byte at offset {error.start})"
        ) from None
    except OSError as error:
        raise InvalidInputError(f"{path}: cannot read: {error.strerror}") from None


def read_json(path: str | Path) -> Any:
    """Parse ``path`` as JSON.

    A syntax error, including a truncated file, becomes
    ``"<path>: invalid JSON at line L column C: <reason>"``.
    """
    text = read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise InvalidInputError(
            f"{path}: invalid JSON at line {error.lineno} column {error.colno}: {error.msg}"
        ) from None


class CycleFound(Exception):
    """Internal signal from `topological_order`; readers turn it into an `InvalidInputError`.

    ``cycle`` lists node indices in dependency order, smallest index first: each
    one is a predecessor of the next, and the last one is a predecessor of the first.
    """

    def __init__(self, cycle: list[int]) -> None:
        super().__init__(cycle)
        self.cycle = cycle


def topological_order(predecessors: Sequence[Sequence[int]]) -> list[int]:
    """Order nodes ``0..n-1`` so that every predecessor comes before its successors.

    Kahn's algorithm; among ready nodes the smallest index goes first, so a file
    that is already in a topological order keeps its order and the result never
    depends on hashing.

    Raises
    ------
    CycleFound
        With one cycle, found by starting from the smallest-index node that
        could not be ordered and following its smallest-index unordered
        predecessor until a node repeats; reported from its smallest index.

    >>> topological_order([[2], [], [1]])
    [1, 2, 0]
    """
    n = len(predecessors)
    successors: list[list[int]] = [[] for _ in range(n)]
    indegree = [0] * n
    for node, preds in enumerate(predecessors):
        for pred in preds:
            successors[pred].append(node)
            indegree[node] += 1
    ready = [node for node in range(n) if indegree[node] == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        node = heapq.heappop(ready)
        order.append(node)
        for succ in successors[node]:
            indegree[succ] -= 1
            if indegree[succ] == 0:
                heapq.heappush(ready, succ)
    if len(order) == n:
        return order
    blocked = [indegree[node] > 0 for node in range(n)]
    walk = [blocked.index(True)]
    position = {walk[0]: 0}
    while True:
        pred = min(p for p in predecessors[walk[-1]] if blocked[p])
        if pred in position:
            cycle = walk[position[pred] :][::-1]
            first = cycle.index(min(cycle))
            raise CycleFound(cycle[first:] + cycle[:first])
        position[pred] = len(walk)
        walk.append(pred)
