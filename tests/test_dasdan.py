"""Reading Dasdan's ``.d`` cycle-ratio graphs."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from raptor_cp.errors import InvalidInputError
from raptor_cp.periodic.dasdan import parse_dasdan, read_dasdan

DATA = Path(__file__).parent / "data" / "mcr"


def test_sample_file_becomes_a_zero_based_graph() -> None:
    parsed = read_dasdan(DATA / "tests" / "sample.d")
    graph = parsed.graph
    assert parsed.name == "sample-253926760"
    assert (graph.num_nodes, graph.num_edges) == (4, 7)
    assert graph.u.tolist() == [0, 1, 1, 2, 3, 1, 3]
    assert graph.v.tolist() == [1, 0, 2, 0, 2, 3, 0]
    assert graph.w.tolist() == [40, 60, 50, 30, 60, 70, 30]
    assert graph.d.tolist() == [9, 17, 8, 24, 22, 14, 20]


def test_parallel_arcs_and_self_loops_are_kept_in_file_order() -> None:
    graph = read_dasdan(DATA / "core" / "gr11d.d").graph
    assert graph.num_edges == 7
    assert [(int(a), int(b)) for a, b in zip(graph.u, graph.v, strict=True)].count((1, 2)) == 2
    loops = read_dasdan(DATA / "core" / "green3.d").graph
    assert int(np.sum(loops.u == loops.v)) == 3


def test_blank_lines_trailing_spaces_and_missing_final_newline_are_accepted() -> None:
    assert read_dasdan(DATA / "core" / "bad.d").graph.num_edges == 4
    assert read_dasdan(DATA / "core" / "gr-paper.d").graph.num_edges == 12


def test_comments_are_skipped_anywhere() -> None:
    parsed = parse_dasdan("c head\np g 2 1\nc between\n\na 1 2 -5 0\nc tail\n", "x.d")
    assert (parsed.name, parsed.graph.w.tolist(), parsed.graph.d.tolist()) == ("g", [-5], [0])


def test_graph_without_arcs_is_read_as_empty() -> None:
    parsed = read_dasdan(DATA / "core" / "gr7.d")
    assert (parsed.graph.num_nodes, parsed.graph.num_edges, parsed.node_ids) == (0, 0, ())


def test_memory_follows_the_arcs_not_the_declared_node_count() -> None:
    parsed = parse_dasdan("p g 1000000000 2\na 5 999999999 3 1\na 999999999 5 4 1\n", "x.d")
    assert parsed.graph.num_nodes == 2
    assert parsed.node_ids == (5, 999999999)
    assert (parsed.graph.u.tolist(), parsed.graph.v.tolist()) == ([0, 1], [1, 0])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a 1 2 3 4\n", "x.d:1: arc before the 'p <name> <n> <m>' line"),
        ("p g 2\n", "x.d:1: expected 'p <name> <n> <m>', got 3 fields"),
        ("p g two 1\n", "x.d:1: expected integers in 'p <name> <n> <m>'"),
        ("p g 0 0\n", "x.d:1: need n >= 1 nodes and m >= 0 arcs, got n=0 m=0"),
        ("p g 2 1\np g 2 1\n", "x.d:2: second 'p' line"),
        ("p g 2 1\na 1 2 3\n", "x.d:2: expected 'a <u> <v> <weight> <transit>', got 4 fields"),
        ("p g 2 1\na 1 2 3.5 1\n", "x.d:2: expected integers in 'a <u> <v> <weight> <transit>'"),
        ("p g 2 1\na 0 2 3 1\n", "x.d:2: node 0 is outside 1..2"),
        ("p g 2 1\na 1 3 3 1\n", "x.d:2: node 3 is outside 1..2"),
        ("p g 2 1\na 1 2 3 -1\n", "x.d:2: transit time -1 is negative"),
        (
            "p g 2 1\na 1 2 1" + "0" * 40 + " 1\n",
            "x.d:2: weight 1000000000...0000000000 (41 digits) is outside the accepted range "
            "-2^53..2^53",
        ),
        (
            "p g 2 1\na 1 2 1 9007199254740993\n",
            "x.d:2: transit time 9007199254740993 is outside the accepted range 0..2^53",
        ),
        ("p g 2 1\na 1 2 3 1\na 2 1 3 1\n", "x.d:3: more arcs than the 1 announced"),
        ("p g 2 2\na 1 2 3 1\n", "x.d: 1 arc but the 'p' line announces 2"),
        ("p g 2 1\ne 1 2\n", "x.d:2: expected a 'c', 'p' or 'a' line, got 'e 1 2'"),
        ("c only a comment\n", "x.d: no 'p <name> <n> <m>' line"),
    ],
)
def test_malformed_file_is_rejected_naming_the_line(text: str, message: str) -> None:
    with pytest.raises(InvalidInputError, match=f"^{re.escape(message)}$"):
        parse_dasdan(text, "x.d")


def test_binary_file_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "g.d"
    path.write_bytes(b"\xff\xfe\x00p")
    with pytest.raises(
        InvalidInputError, match=re.escape(f"{path}: not UTF-8 text (bad byte at offset ")
    ):
        read_dasdan(path)
