"""The ``raptor-cp`` command: outputs, summaries, determinism and one-line errors."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest
from click.testing import CliRunner, Result

from raptor_cp.cli import main
from raptor_cp.flows import DEFAULT_SCHEDULER
from raptor_cp.problems import LatencyProblem, LatencySolution, Status

PHASES = ("load", "lower", "schedule", "check", "write")


def _raptor_graph(path: Path, weight_size: int = 4, cyclic: bool = False) -> Path:
    """A four-task diamond a -> {b, c} -> d; ``a`` and ``d`` share weight ``w``."""
    edges = [("a", "b", 256), ("a", "c", 128), ("b", "d", 64), ("c", "d", 64)]
    if cyclic:
        edges.append(("d", "a", 8))
    document = {
        "format": "raptor-graph",
        "version": 1,
        "name": "diamond",
        "weights": [{"name": "w", "size": weight_size}],
        "tasks": [
            {"name": "a", "cost": 100, "weights": ["w"]},
            {"name": "b", "cost": 300},
            {"name": "c", "cost": 200},
            {"name": "d", "cost": 50, "weights": ["w"]},
        ],
        "edges": [{"src": s, "dst": d, "bytes": b} for s, d, b in edges],
    }
    path.write_text(json.dumps(document))
    return path


def _unknown_op_onnx(path: Path) -> Path:
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 8, 8])
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Frobnicate", ["r"], ["y"], name="frob"),
    ]
    graph = helper.make_graph(nodes, "tiny", [x], [y])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def _config(path: Path, chip: dict[str, object]) -> Path:
    path.write_text(json.dumps({"chip_config": chip}))
    return path


def _run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def _assert_one_line_error(result: Result, message: str, as_json: bool) -> None:
    """Exit 2, nothing on stdout, ``error: message`` as the single error line, last on stderr.

    Without ``--json`` the progress lines of the phases that succeeded come first.
    """
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert lines[-1] == f"error: {message}"
    assert [line for line in lines if line.startswith("error:")] == [lines[-1]]
    if as_json:
        assert len(lines) == 1


# -- the bundled example, through the real console script ---------------------------------


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess, Path]:
    """``raptor-cp compile --example`` run once as a subprocess, shared by the tests below."""
    out = tmp_path_factory.mktemp("example") / "out"
    script = Path(sys.executable).with_name("raptor-cp")
    process = subprocess.run(
        [str(script), "compile", "--example", "--out", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    return process, out


def test_example_prints_one_summary_line(
    example: tuple[subprocess.CompletedProcess, Path],
) -> None:
    process, out = example
    assert process.returncode == 0, process.stderr
    pattern = (
        r"resnet18 on arch-a: \d+ tasks on \d+/168 cores, makespan \S+ \S+ "
        rf"\(lower bound \S+ \S+, gap \S+ %\), {DEFAULT_SCHEDULER} \((peft|heft)\S* won\), "
        rf"feasible, wrote {re.escape(str(out))}/\n"
    )
    assert re.fullmatch(pattern, process.stdout)
    assert [line.split()[0] for line in process.stderr.splitlines()] == list(PHASES)
    assert sorted(p.name for p in out.iterdir()) == ["schedule.json", "trace.json"]


def test_example_schedule_json_is_consistent(
    example: tuple[subprocess.CompletedProcess, Path],
) -> None:
    _, out = example
    doc = json.loads((out / "schedule.json").read_text())
    assert (doc["format"], doc["version"], doc["mode"]) == ("raptor-cp-schedule", 1, "latency")
    assert (doc["model"], doc["target"], doc["scheduler"]) == (
        "resnet18",
        "arch-a",
        DEFAULT_SCHEDULER,
    )
    tasks = doc["tasks"]
    assert doc["makespan_ns"] == max(t["end_ns"] for t in tasks)
    assert doc["makespan_ns"] >= doc["lower_bound_ns"] > 0
    ordered = [name for order in doc["core_order"] for name in order]
    assert sorted(ordered) == sorted(t["name"] for t in tasks)
    assert doc["cores_used"] == sum(1 for order in doc["core_order"] if order)
    core_of = {t["name"]: t["core"] for t in tasks}
    for core, order in enumerate(doc["core_order"]):
        assert all(core_of[name] == core for name in order)


def test_example_trace_has_one_thread_per_used_core(
    example: tuple[subprocess.CompletedProcess, Path],
) -> None:
    _, out = example
    trace = json.loads((out / "trace.json").read_text())
    schedule = json.loads((out / "schedule.json").read_text())
    events = trace["traceEvents"]
    for event in events:
        assert event["ph"] in ("M", "X")
        if event["ph"] == "X":
            assert {"name", "pid", "tid", "ts", "dur"} <= event.keys() and event["dur"] >= 0
    threads = {
        e["tid"]: e["args"]["name"]
        for e in events
        if e["ph"] == "M" and e["name"] == "thread_name" and e["pid"] == 0
    }
    used = [p for p, order in enumerate(schedule["core_order"]) if order]
    assert threads == {p: f"core {p}" for p in used}
    task_events = [e for e in events if e["ph"] == "X" and e["pid"] == 0]
    assert len(task_events) == len(schedule["tasks"])


def test_example_is_byte_identical_across_runs(
    example: tuple[subprocess.CompletedProcess, Path], tmp_path: Path
) -> None:
    _, first = example
    second = tmp_path / "again"
    result = _run("compile", "--example", "--out", second)
    assert result.exit_code == 0, result.output
    for name in ("schedule.json", "trace.json"):
        assert (first / name).read_bytes() == (second / name).read_bytes(), name


def test_help_imports_no_heavy_module() -> None:
    code = (
        "import sys\n"
        "from raptor_cp.cli import main\n"
        "for args in (['--help'], ['compile', '--help'], ['inspect', '--help']):\n"
        "    try:\n"
        "        main(args)\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print(sorted(m for m in ('onnx', 'ortools', 'matplotlib') if m in sys.modules))\n"
    )
    process = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert process.stdout.splitlines()[-1] == "[]"


# -- small graphs -------------------------------------------------------------------------


def test_json_summary_is_the_only_output(tmp_path: Path) -> None:
    model = _raptor_graph(tmp_path / "diamond.json")
    out = tmp_path / "out"
    result = _run("compile", model, "--target", "generic:4:1", "--out", out, "--json")
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    assert len(result.stdout.splitlines()) == 1
    summary = json.loads(result.stdout)
    assert summary == {
        "mode": "latency",
        "model": "diamond",
        "target": "generic:4:1",
        "scheduler": DEFAULT_SCHEDULER,
        "status": summary["status"],
        "tasks": 4,
        "cores": 4,
        "cores_used": summary["cores_used"],
        "makespan_ns": json.loads((out / "schedule.json").read_text())["makespan_ns"],
        "lower_bound_ns": 450,  # a, b, d
        "solver_bound_ns": 450,
        "gap": (summary["makespan_ns"] - 450) / summary["makespan_ns"],
        "winner": "peft",  # HEFT ties; ties go to PEFT
        "members": {
            "heft": summary["makespan_ns"],
            "heft-replicas": "skipped: weight capacity unlimited",
            "peft": summary["makespan_ns"],
            "peft-replicas": "skipped: weight capacity unlimited",
        },
        "lanes": 1,
        "out": str(out),
        "files": ["schedule.json", "trace.json"],
        "warnings": [],
        "critical_chain": summary["critical_chain"],
    }
    assert summary["status"] in ("optimal", "feasible")
    assert summary["makespan_ns"] >= 450
    chain = summary["critical_chain"]
    assert (
        chain["dependency_ns"] + chain["transfer_ns"] + chain["queue_ns"]
        == (summary["makespan_ns"])
    )


def test_plot_writes_a_png(tmp_path: Path) -> None:
    model = _raptor_graph(tmp_path / "diamond.json")
    out = tmp_path / "out"
    result = _run("compile", model, "--target", "arch-a", "--out", out, "--plot")
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == ["gantt.png", "schedule.json", "trace.json"]
    assert (out / "gantt.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_rerun_replaces_the_previous_output(tmp_path: Path) -> None:
    model = _raptor_graph(tmp_path / "diamond.json")
    out = tmp_path / "out"
    assert _run("compile", model, "-t", "generic:2", "--out", out, "--plot").exit_code == 0
    assert _run("compile", model, "-t", "generic:2", "--out", out).exit_code == 0
    assert sorted(p.name for p in out.iterdir()) == ["schedule.json", "trace.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["diamond.json", "out"]


def test_out_holding_other_files_is_left_alone(tmp_path: Path) -> None:
    model = _raptor_graph(tmp_path / "diamond.json")
    result = _run("compile", model, "-t", "generic:2", "--out", tmp_path, "--json")
    _assert_one_line_error(
        result,
        f"{tmp_path}: refusing to replace a directory holding files raptor-cp did not write "
        "(diamond.json); choose another --out",
        as_json=True,
    )
    assert [p.name for p in tmp_path.iterdir()] == ["diamond.json"]


BAD_INPUTS = {
    "truncated_json": "{dir}/m.json: invalid JSON at line 1 column 52: Expecting value",
    "cyclic_graph": "{dir}/m.json: dependency cycle through tasks 'a' -> 'b' -> 'd' -> 'a'",
    "unknown_onnx_op": "{dir}/m.onnx: node 'frob' has unsupported op type 'Frobnicate'",
    "missing_config_field": "{dir}/cfg.json: chip_config.network_config.layout: missing; "
    "expected [rows, cols] (pimsim-nn's default [0, 0] is not a valid grid)",
    "bad_config_value": "{dir}/cfg.json: chip_config.core_cnt: expected a positive integer, "
    'got "abc"',
    "oversized_weights": "diamond: oversized task 'a' needs 97 weight slots but the largest "
    "core holds 96",
    "unknown_preset": "unknown target 'arch-z': not a preset (arch-a, arch-b, pimcomp, "
    "pimsim-64, ipu-mk1, ipu-mk2), not generic:P[:NS_PER_BYTE], and no file arch-z exists",
    "missing_model": "{dir}/absent.onnx: no such file",
}
"""Each bad input (built by the test below) and the one-line error it must produce."""


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_exits_2_with_one_line_and_no_output(
    tmp_path: Path, case: str, as_json: bool
) -> None:
    model: Path = tmp_path / "m.json"
    target = "arch-a"
    if case == "truncated_json":
        model.write_text('{"format": "raptor-graph", "version": 1, "tasks": [')
    elif case == "cyclic_graph":
        _raptor_graph(model, cyclic=True)
    elif case == "unknown_onnx_op":
        model = _unknown_op_onnx(tmp_path / "m.onnx")
    elif case == "oversized_weights":
        _raptor_graph(model, weight_size=97)
    elif case == "missing_model":
        model = tmp_path / "absent.onnx"
    else:
        _raptor_graph(model)
        if case == "missing_config_field":
            target = str(_config(tmp_path / "cfg.json", {"core_cnt": 4}))
        elif case == "bad_config_value":
            chip = {"core_cnt": "abc", "network_config": {"layout": [2, 2]}}
            target = str(_config(tmp_path / "cfg.json", chip))
        elif case == "unknown_preset":
            target = "arch-z"
    inputs = sorted(p.name for p in tmp_path.iterdir())
    args = ["compile", model, "--target", target, "--out", tmp_path / "out"]
    result = _run(*args, *(["--json"] if as_json else []))
    _assert_one_line_error(result, BAD_INPUTS[case].format(dir=tmp_path), as_json)
    assert sorted(p.name for p in tmp_path.iterdir()) == inputs


def test_example_and_model_together_are_rejected(tmp_path: Path) -> None:
    model = _raptor_graph(tmp_path / "diamond.json")
    result = _run("compile", model, "--example", "--out", tmp_path / "out")
    _assert_one_line_error(result, "give either MODEL or --example, not both", as_json=True)


def test_unknown_scheduler_is_a_usage_error(tmp_path: Path) -> None:
    model = _raptor_graph(tmp_path / "diamond.json")
    result = _run("compile", model, "--scheduler", "magic", "--out", tmp_path / "out")
    assert result.exit_code == 2
    assert "Invalid value for '--scheduler': 'magic' is not one of" in result.stderr
    assert not (tmp_path / "out").exists()


# -- inspect ------------------------------------------------------------------------------


def test_inspect_json_reports_sizes_slots_and_bounds(tmp_path: Path) -> None:
    model = _raptor_graph(tmp_path / "diamond.json", weight_size=97)
    result = _run("inspect", model, "--target", "arch-a", "--json")
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    report = json.loads(result.stdout)
    assert report == {
        "model": "diamond",
        "target": "arch-a",
        "cores": 168,
        "lanes": 1,
        "operations": 4,
        "operations_by_kind": {"task": 4},
        "operations_by_type": {"task": 4},
        "tasks": 4,
        "edges": 4,
        "edge_bytes": 512,
        "weights": 1,
        "weight_slots_needed": 97,
        "weight_slots_available": 168 * 96,
        "largest_task_slots": 97,
        "core_capacity_slots": 96,
        "lower_bound_ns": 450,
        "lower_bounds": {
            "critical_path_ns": 450,
            "work_per_core_ns": 4,
            "head_work_tail_ns": 401,
            "cores_needed": 2,
        },
        "warnings": [],
    }


def test_inspect_text_on_an_unlimited_target(tmp_path: Path) -> None:
    model = _raptor_graph(tmp_path / "diamond.json")
    result = _run("inspect", model, "--target", "generic:2")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "diamond on generic:2 (2 cores)",
        "operations: 4 (task 4)",
        "operator types: task 4",
        "tasks: 4, edges: 4 (512 bytes), lanes: 1",
        "weights: 1, weight slots needed 4 of unlimited available; largest task 4 of "
        "unlimited per core",
        "lower bounds: makespan 450 ns (critical path 450 ns, work/cores 325 ns, "
        "head+work+tail 425 ns), cores needed 1",
    ]


# -- golden files and solver outcomes -----------------------------------------------------

GOLDEN = Path(__file__).parent / "golden"


@pytest.mark.parametrize("name", ["schedule.json", "trace.json"])
def test_diamond_output_matches_golden(tmp_path: Path, name: str) -> None:
    """A change of format or of the default scheduler's decisions shows up as a reviewed diff.

    To accept a deliberate change, rerun the compile below and copy the file over
    ``tests/golden/diamond-arch-a.<name>``.
    """
    model = _raptor_graph(tmp_path / "diamond.json")
    out = tmp_path / "out"
    assert _run("compile", model, "--target", "arch-a", "--out", out).exit_code == 0
    golden = GOLDEN / f"diamond-arch-a.{name}"
    assert (out / name).read_text() == golden.read_text()


@dataclass(frozen=True)
class _GivesUp:
    """A stand-in solver that ends its search without a schedule."""

    name: ClassVar[str] = "gives-up"

    def solve(self, problem: LatencyProblem) -> LatencySolution:
        return LatencySolution(None, status=Status.NOT_FOUND, solver=self.name)


def test_solver_without_schedule_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("raptor_cp.flows.solve", lambda problem, method: _GivesUp().solve(problem))
    model = _raptor_graph(tmp_path / "diamond.json")
    result = _run("compile", model, "--out", tmp_path / "out", "--json")
    _assert_one_line_error(
        result, f"diamond: {DEFAULT_SCHEDULER} found no schedule (not_found)", as_json=True
    )
    assert not (tmp_path / "out").exists()
