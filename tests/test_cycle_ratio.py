"""Maximum/minimum cycle ratio: Dasdan's references, brute force, deadlocks, witnesses, CLI."""

from __future__ import annotations

import csv
import itertools
import json
import re
from fractions import Fraction
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from raptor_cp.cli.cycle_ratio import cycle_ratio_command
from raptor_cp.errors import InvalidInstanceError, RaptorError
from raptor_cp.periodic import (
    METHODS,
    DeadlockError,
    PeriodicGraph,
    maximum_cycle_ratio,
    minimum_cycle_ratio,
)
from raptor_cp.periodic.bisection import bisection
from raptor_cp.periodic.dasdan import read_dasdan

DATA = Path(__file__).parent / "data" / "mcr"
REFERENCES = [
    row
    for row in csv.DictReader((DATA / "reference_cycle_ratios.csv").open())
    if (DATA / row["graph"]).exists()
]


def _reference(row: dict[str, str], key: str) -> Fraction | None:
    return Fraction(row[key]) if row[key] else None


def _cycle_ratio(graph: PeriodicGraph, cycle: tuple[int, ...]) -> Fraction:
    ids = list(cycle)
    return Fraction(int(graph.w[ids].sum()), int(graph.d[ids].sum()))


def _assert_is_cycle(graph: PeriodicGraph, cycle: tuple[int, ...]) -> None:
    assert cycle[0] == min(cycle)
    for edge, nxt in zip(cycle, cycle[1:] + cycle[:1], strict=True):
        assert graph.v[edge] == graph.u[nxt]
    assert len({int(graph.u[e]) for e in cycle}) == len(cycle)


# -- Dasdan's graphs ------------------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("row", REFERENCES, ids=[row["graph"] for row in REFERENCES])
def test_dasdan_reference_ratio_is_reproduced_exactly(row: dict[str, str], method: str) -> None:
    graph = read_dasdan(DATA / row["graph"]).graph
    for solve, key in (
        (maximum_cycle_ratio, "max_ratio_exact"),
        (minimum_cycle_ratio, "min_ratio_exact"),
    ):
        expected = _reference(row, key)
        result = solve(graph, method)
        if expected is None:
            assert result is None
            continue
        assert result is not None
        assert result.exact
        assert result.ratio == expected
        assert _cycle_ratio(graph, result.cycle) == expected
        _assert_is_cycle(graph, result.cycle)


def test_the_copied_references_cover_acyclic_and_cyclic_graphs() -> None:
    acyclic = [row for row in REFERENCES if not row["max_ratio_exact"]]
    assert len(REFERENCES) == 23
    assert len(acyclic) == 4


def test_sample_graph_witness_lists_the_critical_cycle() -> None:
    graph = read_dasdan(DATA / "tests" / "sample.d").graph
    result = maximum_cycle_ratio(graph)
    assert result is not None
    assert (result.ratio, result.cycle) == (Fraction(50, 13), (0, 1))
    assert (result.witness.delay, result.witness.distance, result.witness.length) == (100, 26, 2)
    assert [(e.source, e.target) for e in result.witness.edges] == [(0, 1), (1, 0)]
    assert result.objective == "max"
    assert result.method == "howard"


# -- brute force on random small graphs ----------------------------------------------


def _brute_force(graph: PeriodicGraph) -> tuple[Fraction | None, Fraction | None, bool]:
    """(max, min) ratio over every simple cycle and parallel-edge choice; deadlock flag."""
    simple = nx.DiGraph()
    simple.add_nodes_from(range(graph.num_nodes))
    parallel: dict[tuple[int, int], list[int]] = {}
    for e in range(graph.num_edges):
        parallel.setdefault((int(graph.u[e]), int(graph.v[e])), []).append(e)
        simple.add_edge(int(graph.u[e]), int(graph.v[e]))
    ratios: list[Fraction] = []
    deadlock = False
    for nodes in nx.simple_cycles(simple):
        hops = list(zip(nodes, nodes[1:] + nodes[:1], strict=True))
        for choice in itertools.product(*(parallel[hop] for hop in hops)):
            total_d = int(graph.d[list(choice)].sum())
            if total_d == 0:
                deadlock = True
            else:
                ratios.append(Fraction(int(graph.w[list(choice)].sum()), total_d))
    if not ratios:
        return None, None, deadlock
    return max(ratios), min(ratios), deadlock


@st.composite
def _graphs(draw: st.DrawFn) -> PeriodicGraph:
    nodes = draw(st.integers(1, 6))
    node = st.integers(0, nodes - 1)
    edges = draw(
        st.lists(
            st.tuples(node, node, st.integers(-30, 60), st.sampled_from([0, 0, 1, 1, 2, 5])),
            max_size=12,
        )
    )
    return PeriodicGraph.from_edges(nodes, edges)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(_graphs())
def test_both_methods_match_brute_force_enumeration(graph: PeriodicGraph) -> None:
    best, worst, deadlock = _brute_force(graph)
    for method in METHODS:
        if deadlock:
            with pytest.raises(DeadlockError):
                maximum_cycle_ratio(graph, method)
            continue
        high = maximum_cycle_ratio(graph, method)
        low = minimum_cycle_ratio(graph, method)
        if best is None:
            assert high is None and low is None
            continue
        assert high is not None and low is not None
        assert (high.ratio, high.bound, low.ratio, low.bound) == (best, best, worst, worst)
        for result in (high, low):
            _assert_is_cycle(graph, result.cycle)
            assert _cycle_ratio(graph, result.cycle) == result.ratio


@settings(max_examples=100, deadline=None, derandomize=True, database=None)
@given(_graphs())
def test_howard_and_bisection_pick_the_same_ratio_and_repeat_their_cycles(
    graph: PeriodicGraph,
) -> None:
    if graph.zero_distance_cycle() is not None:
        return
    howard = maximum_cycle_ratio(graph, "howard")
    split = maximum_cycle_ratio(graph, "bisection")
    assert (howard is None) == (split is None)
    if howard is not None and split is not None:
        assert howard.ratio == split.ratio
        assert maximum_cycle_ratio(graph, "howard") == howard
        assert maximum_cycle_ratio(graph, "bisection") == split


# -- deadlock, acyclic, bad input ----------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
def test_zero_distance_cycle_is_a_deadlock(method: str) -> None:
    graph = PeriodicGraph.from_edges(
        4, [(0, 1, 5, 1), (2, 3, 1, 0), (3, 2, -9, 0), (1, 0, 2, 1)], name="g"
    )
    with pytest.raises(
        DeadlockError,
        match=re.escape(
            "g: deadlock: cycle of distance-0 edges through nodes 2 -> 3 -> 2; "
            "no period satisfies it"
        ),
    ) as caught:
        maximum_cycle_ratio(graph, method)
    assert caught.value.cycle == (1, 2)
    with pytest.raises(DeadlockError):
        minimum_cycle_ratio(graph, method)


def test_zero_distance_self_loop_is_a_deadlock() -> None:
    graph = PeriodicGraph.from_edges(2, [(0, 1, 1, 1), (1, 1, 0, 0), (1, 0, 1, 1)])
    with pytest.raises(DeadlockError) as caught:
        maximum_cycle_ratio(graph)
    assert caught.value.cycle == (1,)


def test_long_deadlock_message_stops_after_128_nodes() -> None:
    ring = PeriodicGraph.from_edges(200, [(i, (i + 1) % 200, 1, 0) for i in range(200)], name="g")
    with pytest.raises(DeadlockError, match=r"-> 127 -> \.\.\. \(200 nodes\); no period") as caught:
        maximum_cycle_ratio(ring)
    assert caught.value.cycle == tuple(range(200))


def test_zero_distance_path_inside_a_recurrence_is_not_a_deadlock() -> None:
    graph = PeriodicGraph.from_edges(3, [(0, 1, 4, 0), (1, 2, 5, 0), (2, 0, 3, 2)])
    for method in METHODS:
        result = maximum_cycle_ratio(graph, method)
        assert result is not None
        assert result.ratio == 6


@pytest.mark.parametrize("method", METHODS)
def test_acyclic_graph_has_no_ratio(method: str) -> None:
    graph = PeriodicGraph.from_edges(3, [(0, 1, 4, 0), (1, 2, 5, 3), (0, 2, 1, 1)])
    assert maximum_cycle_ratio(graph, method) is None
    assert minimum_cycle_ratio(graph, method) is None
    assert maximum_cycle_ratio(PeriodicGraph.from_edges(0, []), method) is None


def test_unknown_method_is_rejected() -> None:
    graph = PeriodicGraph.from_edges(1, [(0, 0, 1, 1)])
    with pytest.raises(
        RaptorError, match=re.escape("unknown cycle-ratio method 'karp'; valid: howard, bisection")
    ):
        maximum_cycle_ratio(graph, "karp")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"d": [-1]}, "g: edge 0 has iteration distance -1, not >= 0"),
        ({"v": [2]}, "g: edge 0 has target 2 (nodes are 0..1)"),
        ({"w": [1.5]}, "g: w must be a 1-D integer array"),
        ({"u": [0, 1]}, "g: edge arrays u, v, w, d differ in length"),
        ({"core": [0]}, "g: core must hold 2 ids >= -1"),
        ({"link": [-2]}, "g: link must hold 1 ids >= -1"),
    ],
)
def test_malformed_periodic_graph_is_rejected(kwargs: dict[str, list[float]], message: str) -> None:
    arrays: dict[str, object] = {"u": [0], "v": [1], "w": [3], "d": [1], **kwargs}
    with pytest.raises(InvalidInstanceError, match=re.escape(message)):
        PeriodicGraph(2, name="g", **arrays)  # type: ignore[arg-type]


def test_howard_refuses_weights_beyond_int64_and_bisection_takes_them() -> None:
    big = 2**40
    graph = PeriodicGraph.from_edges(2, [(0, 1, big, 2**22), (1, 0, 1, 0)], name="g")
    with pytest.raises(
        InvalidInstanceError,
        match=re.escape(
            f"g: sum|w| * sum d = {(big + 1) * 2**22} is too large for Howard's int64 "
            "arithmetic (limit 2^61); use method 'bisection' (unbounded integers)"
        ),
    ):
        maximum_cycle_ratio(graph, "howard")
    result = maximum_cycle_ratio(graph, "bisection")
    assert result is not None
    assert result.ratio == Fraction(big + 1, 2**22)


# -- witness -------------------------------------------------------------------------


def test_witness_names_cores_and_links_and_totals_the_whole_cycle() -> None:
    ring = 200
    u = np.arange(ring)
    v = (u + 1) % ring
    d = (u == ring - 1).astype(np.int64)
    graph = PeriodicGraph(
        ring, u, v, w=np.full(ring, 3), d=d, core=u % 3, link=np.where(u < 5, u + 10, -1)
    )
    result = maximum_cycle_ratio(graph, "bisection")
    assert result is not None
    assert result.ratio == 600
    witness = result.witness
    assert (witness.delay, witness.distance, witness.length) == (600, 1, ring)
    assert len(witness.edges) == 128 and witness.truncated
    assert [e.edge for e in witness.edges] == list(range(128))
    assert witness.cores == (0, 1, 2)
    assert witness.links == (10, 11, 12, 13, 14)
    assert witness.to_json()["edges"][0] == {
        "edge": 0,
        "source": 0,
        "target": 1,
        "delay": 3,
        "distance": 0,
        "link": 10,
    }


def test_minimum_reports_the_original_delays() -> None:
    graph = PeriodicGraph.from_edges(2, [(0, 0, 7, 2), (0, 1, 1, 1), (1, 0, 2, 1)])
    result = minimum_cycle_ratio(graph)
    assert result is not None
    assert (result.ratio, result.cycle, result.objective) == (Fraction(3, 2), (1, 2), "min")
    assert (result.witness.delay, result.witness.distance) == (3, 2)


# -- the documented bounds -------------------------------------------------------------


def test_bisection_stays_within_its_test_and_sweep_bounds() -> None:
    graph = read_dasdan(DATA / "iscas-small" / "s208.d").graph
    edges = np.flatnonzero(graph.recurrent_edges)
    outcome = bisection(graph, graph.w.tolist(), edges)
    assert outcome.ratio == outcome.bound == Fraction(8405, 44)
    assert outcome.tests <= 64
    assert outcome.sweeps <= outcome.tests * (outcome.back_edges + 1)
    assert outcome.back_edges <= int((graph.d[edges] > 0).sum())


def test_bisection_out_of_tests_reports_a_certified_bracket() -> None:
    graph = read_dasdan(DATA / "iscas-small" / "s208.d").graph
    edges = np.flatnonzero(graph.recurrent_edges)
    outcome = bisection(graph, graph.w.tolist(), edges, max_tests=1)
    assert outcome.tests == 1
    assert outcome.ratio <= Fraction(8405, 44) < outcome.bound
    assert _cycle_ratio(graph, outcome.cycle) == outcome.ratio


# -- CLI -----------------------------------------------------------------------------


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cycle_ratio_command, list(args))
    return result.exit_code, result.output


def test_cli_prints_the_ratio_and_cycle() -> None:
    code, out = _run(str(DATA / "tests" / "sample.d"))
    assert code == 0
    assert out.splitlines() == [
        f"{DATA / 'tests' / 'sample.d'} (sample-253926760): maximum cycle ratio 50/13 = "
        "3.846154 (howard, 2 iterations)",
        "critical cycle: 1 -> 2 -> 1 (2 arcs, weight 100, transit 26)",
    ]


def test_cli_json_gives_the_minimum_as_a_fraction() -> None:
    code, out = _run(str(DATA / "tests" / "sample.d"), "--min", "--json", "--method", "bisection")
    assert code == 0
    report = json.loads(out)
    assert report["ratio"] == "200/69"
    assert report["value"] == pytest.approx(200 / 69)
    assert (report["cycle"], report["arcs"]) == ([1, 2, 4, 3], [1, 6, 5, 4])
    assert (report["weight"], report["transit"], report["exact"]) == (200, 69, True)


def test_cli_acyclic_graph_says_so_and_succeeds() -> None:
    code, out = _run(str(DATA / "tests" / "small.d"), "--json")
    assert code == 0
    report = json.loads(out)
    assert (report["ratio"], report["value"], report["cycle"]) == (None, None, [])
    code, out = _run(str(DATA / "tests" / "small.d"))
    assert out.endswith("(small.netD-428344096): acyclic: no cycle, no cycle ratio\n")


def test_cli_zero_transit_cycle_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "dead.d"
    path.write_text("p dead 3 3\na 1 2 3 0\na 2 1 4 0\na 2 3 1 1\n")
    code, out = _run(str(path))
    assert code == 2
    assert out == (
        f"error: {path}: deadlock: cycle of zero-transit arcs through nodes "
        "1 -> 2 -> 1; no finite ratio\n"
    )


def test_cli_malformed_file_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.d"
    path.write_text("p bad 2 1\na 1 two 3 1\n")
    code, out = _run(str(path))
    assert code == 2
    assert out == f"error: {path}:2: expected integers in 'a <u> <v> <weight> <transit>'\n"
