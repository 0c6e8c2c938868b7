"""``compile --pipeline N`` end to end, the pipeline checker, and determinism."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner, Result

from raptor_cp.cli import main
from raptor_cp.errors import ScheduleViolationError
from raptor_cp.pipeline.groups import pipeline_groups
from raptor_cp.pipeline.initial import initial_pipeline
from raptor_cp.problems import LatencyProblem
from raptor_cp.problems.pipeline import PipelineProblem, check_pipeline_schedule
from raptor_cp.schedule import Schedule
from raptor_cp.targets.registry import resolve_target
from raptor_cp.workload.load import load_workload
from raptor_cp.workload.lowering import default_lanes, lower

DATA = Path(__file__).parent / "data"
LENET = DATA / "models" / "lenet5.onnx"


def _run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def _compile(model: Path, target: str, depth: int, out: Path) -> dict[str, object]:
    result = _run("compile", model, "--target", target, "--pipeline", depth, "--out", out, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _check_outputs(model: Path, target: str, depth: int, out: Path) -> None:
    """The summary, schedule.json and the selection report agree; the schedule passes the check."""
    summary = _compile(model, target, depth, out)
    schedule = json.loads((out / "schedule.json").read_text())
    report = json.loads((out / "reports" / "pipeline_selection.json").read_text())
    assert (summary["mode"], schedule["mode"]) == ("pipeline", "pipeline")
    assert summary["interval_ns"] == schedule["interval_ns"] == report["interval"]["interval_ns"]
    assert summary["stages"] == schedule["stages"] == len(report["stages"]) <= depth
    assert summary["core_budgets"] == schedule["core_budgets"] == report["core_budgets"]
    assert schedule["interval_ns"] >= schedule["lower_bound_ns"] > 0
    # The interval is the selected candidate's queue estimate: the larger of the two tie
    # orders, core work and memory service, rounded up; the analytic proxy keeps its name.
    assert summary["interval_source"] == schedule["interval_source"] == "queue estimate"
    # The program's prediction (baseline requests placed) is reported beside it.
    assert summary["program_interval_ns"] == schedule["program_interval_ns"] > 0
    assert summary["program_interval_reason"] is schedule["program_interval_reason"] is None
    queue = report["costs"]["queue"]
    assert (
        schedule["interval_ns"]
        == queue["estimate_ns"]
        == math.ceil(
            max(
                queue["index_interval_ns"],
                queue["reversed_interval_ns"],
                queue["core_work_ns"],
                queue["memory_service_ns"],
            )
        )
    )
    selected = [c for c in report["candidates"] if c["selected"]]
    assert [c["index"] for c in selected] == [report["selection"]["selected"]]
    assert selected[0]["queue_estimate_ns"] == schedule["interval_ns"]
    # Every proposed candidate says whether its move was guided; a root says why not.
    for row in report["candidates"]:
        if row["parent"] is None:
            assert row["relieves_parent_bottleneck"] is None
            assert row["relieves_parent_bottleneck_why"] == "a root has no parent"
        else:
            assert isinstance(row["relieves_parent_bottleneck"], bool)
    terms = schedule["analytic_interval"]
    assert terms["interval_ns"] == max(
        terms["core_work_ns"], terms["stage_span_ns"], terms["memory_service_ns"]
    )
    budget = report["queue_budget"]
    assert (budget["queue_evaluations"], budget["constructive_packings"]) == (32, 128)
    assert 2 <= budget["queue_evaluations_used"] <= 32
    assert budget["queue_evaluations_used"] == sum(
        c["queue_estimate_ns"] is not None for c in report["candidates"]
    )
    # Rebuild the schedule from the document and run the independent checker on it.
    workload = load_workload(model)
    target_obj = resolve_target(target)
    graph = lower(workload, target_obj, lanes=default_lanes(workload, target_obj))
    index = {name: t for t, name in enumerate(graph.names)}
    orders = tuple(tuple(index[name] for name in order) for order in schedule["core_order"])
    rebuilt = Schedule(
        orders,
        np.array([t["start_ns"] for t in schedule["tasks"]]),
        "pipeline",
        tuple(schedule["core_stage"]),
    )
    check_pipeline_schedule(
        PipelineProblem(graph, target_obj, depth), pipeline_groups(graph), rebuilt
    )
    counts = [schedule["core_stage"].count(s) for s in range(schedule["stages"])]
    assert counts == schedule["core_budgets"]


@pytest.mark.parametrize("depth", [2, 4])
def test_lenet5_compiles_to_a_checked_pipeline(depth: int, tmp_path: Path) -> None:
    _check_outputs(LENET, "arch-a", depth, tmp_path / "out")


def test_pimcomp_node_list_compiles_on_the_pimcomp_preset(tmp_path: Path) -> None:
    _check_outputs(DATA / "pimcomp" / "mnist8.json", "pimcomp", 4, tmp_path / "out")


@pytest.mark.slow
@pytest.mark.parametrize("depth", [2, 4])
def test_resnet18_compiles_to_a_checked_pipeline(depth: int, tmp_path: Path) -> None:
    _check_outputs(DATA / "models" / "resnet18.onnx", "arch-a", depth, tmp_path / "out")


def test_two_runs_write_identical_reports(tmp_path: Path) -> None:
    _compile(LENET, "arch-a", 4, tmp_path / "a")
    _compile(LENET, "arch-a", 4, tmp_path / "b")
    for name in ("schedule.json",):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    first, second = (
        [
            line
            for line in (tmp_path / run / "reports" / "pipeline_selection.json")
            .read_text()
            .splitlines()
            if '"phase_times_s"' not in line
        ]
        for run in ("a", "b")
    )
    assert first == second


def test_mode_pipeline_without_a_depth_uses_four(tmp_path: Path) -> None:
    result = _run("compile", LENET, "--mode", "pipeline", "--out", tmp_path / "o", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["pipeline"] == 4


def test_pipeline_one_is_latency_mode(tmp_path: Path) -> None:
    result = _run("compile", LENET, "--pipeline", 1, "--out", tmp_path / "o", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["mode"] == "latency"


CONFLICTS = {
    "pipeline_one": (
        ("--mode", "pipeline", "--pipeline", "1"),
        "--pipeline 1 is latency mode; pipeline mode needs --pipeline N > 1",
    ),
    "latency_depth": (
        ("--mode", "latency", "--pipeline", "3"),
        "--pipeline 3 selects pipeline mode; drop --mode latency",
    ),
    "plot": (("--pipeline", "2", "--plot"), "--plot is not available in pipeline mode yet"),
    "scheduler": (
        ("--pipeline", "2", "--scheduler", "heft"),
        "--scheduler chooses the latency scheduler; pipeline mode has its own",
    ),
}


@pytest.mark.parametrize(("args", "message"), CONFLICTS.values(), ids=CONFLICTS.keys())
def test_conflicting_options_are_one_line_errors(
    args: tuple[str, ...], message: str, tmp_path: Path
) -> None:
    result = _run("compile", LENET, *args, "--out", tmp_path / "o")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [f"error: {message}"]
    assert not (tmp_path / "o").exists()


def test_a_model_larger_than_the_chip_is_proved_infeasible(tmp_path: Path) -> None:
    result = _run(
        "compile", DATA / "models" / "vgg16.onnx", "--pipeline", 4, "--out", tmp_path / "o"
    )
    assert result.exit_code == 2
    assert "one copy of every resident weight needs 33804 slots" in result.stderr.splitlines()[-1]
    assert not (tmp_path / "o").exists()


def test_foreign_files_in_reports_are_never_replaced(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "reports").mkdir(parents=True)
    (out / "reports" / "notes.txt").write_text("mine")
    result = _run("compile", LENET, "--pipeline", 2, "--out", out)
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        f"error: {out}: refusing to replace a directory holding files raptor-cp did not write "
        "(reports/notes.txt); choose another --out"
    )
    assert (out / "reports" / "notes.txt").read_text() == "mine"


# -- the independent checker on broken schedules --------------------------------------------


@pytest.fixture(scope="module")
def lenet_plan() -> tuple[LatencyProblem, object, Schedule]:
    workload = load_workload(LENET)
    target = resolve_target("arch-a")
    graph = lower(workload, target, lanes=default_lanes(workload, target))
    result = initial_pipeline(graph, target, 2)
    assert len(result.plan.stages) == 2
    return PipelineProblem(graph, target, 2), result.plan.groups, result.plan.schedule


def _moved(schedule: Schedule, task: int, core: int) -> Schedule:
    orders = [list(o) for o in schedule.core_order]
    for order in orders:
        if task in order:
            order.remove(task)
    orders[core].append(task)
    return dataclasses.replace(schedule, core_order=tuple(tuple(o) for o in orders))


def test_the_checker_accepts_the_initial_schedule(lenet_plan: tuple) -> None:
    problem, groups, schedule = lenet_plan
    check_pipeline_schedule(problem, groups, schedule)


def test_a_task_on_an_idle_core_is_rejected(lenet_plan: tuple) -> None:
    problem, groups, schedule = lenet_plan
    idle = schedule.stage.index(-1)
    bad = _moved(schedule, 0, idle)
    with pytest.raises(ScheduleViolationError, match=rf"on core {idle}, which has no stage$"):
        check_pipeline_schedule(problem, groups, bad)


def test_lanes_of_one_operation_in_two_stages_are_rejected(lenet_plan: tuple) -> None:
    problem, groups, schedule = lenet_plan
    other = schedule.stage.index(1)
    bad = _moved(schedule, groups.tasks[0][0], other)
    with pytest.raises(ScheduleViolationError, match=r"is split over stages \[0, 1\]"):
        check_pipeline_schedule(problem, groups, bad)


def test_more_stages_than_the_depth_are_rejected(lenet_plan: tuple) -> None:
    problem, groups, schedule = lenet_plan
    with pytest.raises(ScheduleViolationError, match=r"^2 stages, allowed 1\.\.1$"):
        check_pipeline_schedule(dataclasses.replace(problem, depth=1), groups, schedule)


def test_a_task_after_its_successor_on_one_core_is_rejected(lenet_plan: tuple) -> None:
    problem, groups, schedule = lenet_plan
    core = next(
        p
        for p, order in enumerate(schedule.core_order)
        if any(
            int(problem.graph.edge_dst[e]) in order
            for t in order
            for e in problem.graph.successor_edges(t).tolist()
        )
    )
    orders = list(schedule.core_order)
    orders[core] = tuple(reversed(orders[core]))
    bad = dataclasses.replace(schedule, core_order=tuple(orders))
    with pytest.raises(ScheduleViolationError, match=r"is placed after its successor"):
        check_pipeline_schedule(problem, groups, bad)


class _Tight:
    """A target like ``base`` whose cores hold only ``slots`` weight slots."""

    def __init__(self, base: object, slots: int) -> None:
        self.base, self.slots = base, slots

    def __getattr__(self, name: str) -> object:
        return getattr(self.base, name)

    def capacity(self, core: int) -> int:
        return self.slots


def test_weights_beyond_a_core_capacity_are_rejected(lenet_plan: tuple) -> None:
    problem, groups, schedule = lenet_plan
    graph = problem.graph
    stage1 = [p for p, s in enumerate(schedule.stage) if s == 1]
    orders = [list(o) for o in schedule.core_order]
    gathered = sorted(t for p in stage1 for t in orders[p])
    for p in stage1:
        orders[p] = []
    orders[stage1[0]] = gathered
    bad = dataclasses.replace(schedule, core_order=tuple(tuple(o) for o in orders))
    largest = max(int(graph.weight_size[list(w)].sum()) for w in graph.task_weights)
    tight = PipelineProblem(graph, _Tight(problem.target, largest), 2)
    with pytest.raises(
        ScheduleViolationError,
        match=rf"^core {stage1[0]} needs \d+ resident weight slots but "
        rf"holds {largest}$",
    ):
        check_pipeline_schedule(tight, groups, bad)
