"""Report writers: deterministic JSON, staged output directories, schedule/trace/Gantt files."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from raptor_cp.bounds import lower_bounds
from raptor_cp.errors import InvalidInputError
from raptor_cp.evaluation import evaluate
from raptor_cp.flows import LatencyResult, Prepared
from raptor_cp.graph import ComputeGraph
from raptor_cp.problems import LatencyProblem, LatencySolution, Status
from raptor_cp.reports.gantt import write_gantt
from raptor_cp.reports.output import dumps, format_ns, staged_directory
from raptor_cp.reports.schedule_json import FORMAT, FORMAT_VERSION, schedule_document
from raptor_cp.reports.trace import trace_document
from raptor_cp.schedule import Schedule
from raptor_cp.targets.generic import GenericTarget
from raptor_cp.workload.model import Workload


@pytest.fixture
def fork_join() -> tuple[LatencyProblem, LatencySolution]:
    """a -> {b, c} -> d on three cores with 1 ns per byte.

    a (core 0) sends to b (core 1, 100 B) and c (core 2, 50 B) at t=10: the two
    transfers leave core 0 together, so its link shows them as one merged event.
    """
    graph = ComputeGraph(
        names=("a", "b", "c", "d"),
        cost=[10, 20, 30, 5],
        edge_src=[0, 0, 1, 2],
        edge_dst=[1, 2, 3, 3],
        edge_bytes=[100, 50, 8, 7],
        name="fork_join",
    )
    problem = LatencyProblem(graph, GenericTarget(3, ns_per_byte=1))
    schedule = Schedule(((0, 3), (1,), (2,)), start_ns=[0, 110, 60, 138], scheduler="hand")
    return problem, LatencySolution(schedule, status=Status.FEASIBLE, solver="hand")


def test_dumps_sorts_keys_and_inlines_records() -> None:
    value = {"b": [{"y": 1, "x": [2, 3]}], "a": {"z": 0}, "c": [[1], []]}
    text = dumps(value)
    assert text.splitlines() == [
        "{",
        '  "a": {"z": 0},',
        '  "b": [',
        '    {"x": [2, 3], "y": 1}',
        "  ],",
        '  "c": [',
        "    [1],",
        "    []",
        "  ]",
        "}",
    ]
    assert text.endswith("}\n")
    assert json.loads(text) == value


def test_dumps_rejects_nan() -> None:
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        dumps({"x": float("nan")})


def test_format_ns_picks_the_natural_unit() -> None:
    assert [format_ns(n) for n in (0, 7, 999, 25_000, 1_234_567, 2_500_000_000)] == [
        "0 ns",
        "7 ns",
        "999 ns",
        "25.0 µs",
        "1.23 ms",
        "2.50 s",
    ]


def test_staged_directory_appears_only_on_success(tmp_path: Path) -> None:
    out = tmp_path / "deep" / "out"
    with staged_directory(out, ["a.txt"]) as staging:
        (staging / "a.txt").write_text("new")
        assert not out.exists()
    assert (out / "a.txt").read_text() == "new"
    assert sorted(p.name for p in tmp_path.joinpath("deep").iterdir()) == ["out"]


def test_staged_directory_failure_leaves_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with pytest.raises(RuntimeError, match="boom"), staged_directory(out, ["a.txt"]) as staging:
        (staging / "a.txt").write_text("partial")
        raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []


def test_staged_directory_failure_keeps_previous_output(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "a.txt").write_text("old")
    with pytest.raises(RuntimeError, match="boom"), staged_directory(out, ["a.txt"]) as staging:
        (staging / "a.txt").write_text("partial")
        raise RuntimeError("boom")
    assert (out / "a.txt").read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_staged_directory_replaces_previous_output_whole(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "a.txt").write_text("old")
    (out / "b.png").write_text("stale plot")
    with staged_directory(out, ["a.txt", "b.png"]) as staging:
        (staging / "a.txt").write_text("new")
    assert sorted(p.name for p in out.iterdir()) == ["a.txt"]
    assert (out / "a.txt").read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_staged_directory_refuses_foreign_files(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with (
        pytest.raises(
            InvalidInputError,
            match=r"refusing to replace a directory holding files raptor-cp did not write "
            r"\(notes.txt\); choose another --out",
        ),
        staged_directory(tmp_path, ["a.txt"]),
    ):
        pass
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def test_staged_directory_refuses_a_file(tmp_path: Path) -> None:
    target = tmp_path / "out"
    target.write_text("x")
    with (
        pytest.raises(InvalidInputError, match="out: exists and is not a directory"),
        staged_directory(target, ["a.txt"]),
    ):
        pass


def test_schedule_document_fields(fork_join: tuple[LatencyProblem, LatencySolution]) -> None:
    problem, solution = fork_join
    evaluation = evaluate(problem, solution.schedule)
    bounds = lower_bounds(problem.graph, problem.target)
    prepared = Prepared(Workload("toy", ()), problem.target, problem.graph, lanes=1)
    doc = schedule_document(LatencyResult(prepared, problem, solution, evaluation, bounds))
    assert doc["format"] == FORMAT and doc["version"] == FORMAT_VERSION
    assert (doc["mode"], doc["model"], doc["target"], doc["scheduler"]) == (
        "latency",
        "toy",
        "generic:3:1",
        "hand",
    )
    assert doc["makespan_ns"] == 143
    assert doc["lower_bound_ns"] == 45  # critical path a, c, d without transfers
    assert doc["cores_used"] == 3
    assert doc["tasks"][3] == {
        "name": "d",
        "core": 0,
        "start_ns": 138,
        "end_ns": 143,
        "operation": "d",
        "lane": 0,
    }
    assert doc["core_order"] == [["a", "d"], ["b"], ["c"]]
    assert doc["core_work_ns"] == [15, 20, 30]
    assert doc["summary"]["transfer_work_ns"] == 100 + 50 + 8 + 7


def test_trace_has_one_thread_per_used_core(
    fork_join: tuple[LatencyProblem, LatencySolution],
) -> None:
    problem, solution = fork_join
    trace = trace_document(problem, solution.schedule, evaluate(problem, solution.schedule))
    events = trace["traceEvents"]
    names = {
        (e["pid"], e["tid"]): e["args"]["name"]
        for e in events
        if e["ph"] == "M" and e["name"] == "thread_name"
    }
    assert names == {
        (0, 0): "core 0",
        (0, 1): "core 1",
        (0, 2): "core 2",
        (1, 0): "core 0 link",
        (1, 1): "core 1 link",
        (1, 2): "core 2 link",
    }
    tasks = {
        e["name"]: (e["tid"], e["ts"], e["dur"]) for e in events if e["ph"] == "X" and e["pid"] == 0
    }
    assert tasks == {
        "a": (0, 0, 0.01),
        "b": (1, 0.11, 0.02),
        "c": (2, 0.06, 0.03),
        "d": (0, 0.138, 0.005),
    }
    transfers = sorted(
        (e["tid"], e["name"], e["ts"], e["dur"], e["args"])
        for e in events
        if e["pid"] == 1 and e["ph"] == "X"
    )
    merged = {"transfers": 2, "bytes": 150, "first": "a -> c", "last": "a -> b"}
    single = {"edge": 2, "from": "b", "to": "d", "to_core": 0, "bytes": 8}
    assert transfers == [
        (0, "2 transfers", 0.01, 0.1, merged),  # a -> c and a -> b overlap: one event
        (1, "b -> d", 0.13, 0.008, single),
        (2, "c -> d", 0.09, 0.007, {"edge": 3, "from": "c", "to": "d", "to_core": 0, "bytes": 7}),
    ]


def test_trace_has_at_most_two_tracks_per_core_whatever_the_edges() -> None:
    fan = 200
    graph = ComputeGraph(
        names=("root", *(f"leaf{i}" for i in range(fan))),
        cost=[1] * (fan + 1),
        edge_src=[0] * fan,
        edge_dst=list(range(1, fan + 1)),
        edge_bytes=list(range(1, fan + 1)),
        name="fan",
    )
    problem = LatencyProblem(graph, GenericTarget(4, ns_per_byte=1))
    orders = (
        (0, *range(1, fan + 1, 3)),
        tuple(range(2, fan + 1, 3)),
        tuple(range(3, fan + 1, 3)),
        (),
    )
    schedule = Schedule(orders, start_ns=[0] * (fan + 1), scheduler="hand")
    evaluation = evaluate(problem, schedule)
    events = trace_document(problem, schedule, evaluation)["traceEvents"]
    tracks = {(e["pid"], e["tid"]) for e in events if e["ph"] == "X"}
    assert len(tracks) <= 2 * problem.target.cores
    (link,) = [e for e in events if e["ph"] == "X" and e["pid"] == 1]
    assert link["args"]["transfers"] == sum(1 for o in orders[1:] for _ in o)


def test_trace_lanes_never_overlap(fork_join: tuple[LatencyProblem, LatencySolution]) -> None:
    problem, solution = fork_join
    trace = trace_document(problem, solution.schedule, evaluate(problem, solution.schedule))
    lanes: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for e in trace["traceEvents"]:
        if e["ph"] == "X":
            start = round(e["ts"] * 1000)
            lanes.setdefault((e["pid"], e["tid"]), []).append(
                (start, start + round(e["dur"] * 1000))
            )
    for intervals in lanes.values():
        intervals.sort()
        assert all(a[1] <= b[0] for a, b in itertools.pairwise(intervals))


def test_gantt_writes_a_png(
    tmp_path: Path, fork_join: tuple[LatencyProblem, LatencySolution]
) -> None:
    problem, solution = fork_join
    path = tmp_path / "gantt.png"
    write_gantt(path, problem, solution.schedule, evaluate(problem, solution.schedule), "t", 45)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
