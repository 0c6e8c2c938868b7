"""Read Dasdan's DIMACS-like cycle-ratio graphs (``.d`` files) into a `PeriodicGraph`.

Format (A. Dasdan, "Experimental analysis of the fastest optimum cycle ratio and
mean algorithms", ACM TODAES 2004; github.com/alidasdan/graph-benchmarks)::

    c optional comment lines, anywhere
    p <name> <n> <m>
    a <u> <v> <weight> <transit>      (m lines; nodes 1..n)

Blank lines are skipped. Arc ``i`` (0-based, in file order) becomes edge ``i``
with delay ``weight`` and iteration distance ``transit``, so the graph's cycle
ratio is Dasdan's ``sum(weight) / sum(transit)``. Weights lie within
``[-2^53, 2^53]`` and transits within ``[0, 2^53]`` (`raptor_cp.limits`).

The graph holds only the nodes that arcs touch, numbered ``0..k-1`` in the order
of their file ids (`DasdanGraph.node_ids` maps them back), so memory follows the
arcs read, ``O(m)``, never the ``n`` the ``p`` line declares: isolated nodes
have no cycle through them. Every deviation is an `InvalidInputError` naming
the file and line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from raptor_cp.errors import InvalidInputError
from raptor_cp.files import read_text
from raptor_cp.limits import MAX_INTEGER, check_integer
from raptor_cp.periodic.graph import PeriodicGraph


@dataclass(frozen=True)
class DasdanGraph:
    """A ``.d`` file: the problem name from its ``p`` line and the graph of its arcs."""

    name: str
    graph: PeriodicGraph
    """Node ``x`` is the file's node ``node_ids[x]``."""
    node_ids: tuple[int, ...]
    """The file's (1-based) id of each graph node, ascending."""


def read_dasdan(path: Path) -> DasdanGraph:
    """Parse ``path``; raises `InvalidInputError` (one line, naming the line) if malformed."""
    return parse_dasdan(read_text(path), str(path))


def parse_dasdan(text: str, where: str) -> DasdanGraph:
    """Parse the text of a ``.d`` file; ``where`` names it in error messages."""
    header: tuple[str, int, int] | None = None
    rows: list[tuple[int, int, int, int]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if not fields or fields[0] == "c":
            continue
        at = f"{where}:{number}"
        if fields[0] == "p":
            if header is not None:
                raise InvalidInputError(f"{at}: second 'p' line")
            header = _problem(fields, at)
        elif fields[0] == "a":
            if header is None:
                raise InvalidInputError(f"{at}: arc before the 'p <name> <n> <m>' line")
            if len(rows) == header[2]:
                raise InvalidInputError(f"{at}: more arcs than the {header[2]} announced")
            rows.append(_arc(fields, at, header[1]))
        else:
            raise InvalidInputError(
                f"{at}: expected a 'c', 'p' or 'a' line, got {line.strip()[:40]!r}"
            )
    if header is None:
        raise InvalidInputError(f"{where}: no 'p <name> <n> <m>' line")
    name, _, arcs = header
    if len(rows) != arcs:
        raise InvalidInputError(
            f"{where}: {len(rows)} arc{'s' * (len(rows) != 1)} but the 'p' line announces {arcs}"
        )
    node_ids = sorted({end for u, v, _, _ in rows for end in (u, v)})
    index = {node: i for i, node in enumerate(node_ids)}
    edges = [(index[u], index[v], w, d) for u, v, w, d in rows]
    graph = PeriodicGraph.from_edges(len(node_ids), edges, name=where)
    return DasdanGraph(name, graph, tuple(node_ids))


def _problem(fields: list[str], at: str) -> tuple[str, int, int]:
    if len(fields) != 4:
        raise InvalidInputError(f"{at}: expected 'p <name> <n> <m>', got {len(fields)} fields")
    nodes, arcs = _ints(fields[2:], at, "'p <name> <n> <m>'")
    if nodes < 1 or arcs < 0:
        raise InvalidInputError(f"{at}: need n >= 1 nodes and m >= 0 arcs, got n={nodes} m={arcs}")
    return fields[1], nodes, arcs


def _arc(fields: list[str], at: str, nodes: int) -> tuple[int, int, int, int]:
    expected = "'a <u> <v> <weight> <transit>'"
    if len(fields) != 5:
        raise InvalidInputError(f"{at}: expected {expected}, got {len(fields)} fields")
    u, v, weight, transit = _ints(fields[1:], at, expected)
    for end in (u, v):
        if not 1 <= end <= nodes:
            raise InvalidInputError(f"{at}: node {end} is outside 1..{nodes}")
    if transit < 0:
        raise InvalidInputError(f"{at}: transit time {transit} is negative")
    check_integer(weight, f"{at}: weight", minimum=-MAX_INTEGER)
    check_integer(transit, f"{at}: transit time")
    return u, v, weight, transit


def _ints(fields: list[str], at: str, expected: str) -> list[int]:
    try:
        return [int(field) for field in fields]
    except ValueError:
        raise InvalidInputError(f"{at}: expected integers in {expected}") from None
