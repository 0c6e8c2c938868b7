"""``raptor-cp compile --pipeline N``: the throughput-mode compile path.

`raptor_cp.cli.compile_command` loads and lowers the model, then calls
`compile_pipeline`, which builds the initial pipeline schedule
(`raptor_cp.pipeline.initial.initial_pipeline`), checks it with the independent
pipeline checker, and writes, all or nothing (`staged_directory`):

* ``schedule.json``: mode ``pipeline``, the stage of every core, the per-core
  order, core budgets and ``interval_ns`` (deterministic);
* ``reports/pipeline_selection.json``: groups, stages, budgets, bounds, the
  partition's evidence and phase times (see `raptor_cp.pipeline.report`);
* with ``--periodic-diagnostics``, ``reports/pipeline_periodic.json``: the
  periodic diagnostic of the realized schedule (`periodic_report`), computed
  after the schedule is fixed and never fed back into it (deterministic).

It returns the ``--json`` summary (``interval_ns``, ``stages``...). Heavy
modules are imported inside the function so that ``raptor-cp --help`` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from raptor_cp.errors import InvalidInputError
from raptor_cp.reports.output import dumps, format_ns, staged_directory

if TYPE_CHECKING:
    from raptor_cp.cli import _Progress
    from raptor_cp.graph import ComputeGraph
    from raptor_cp.pipeline.schedule import PipelinePlan
    from raptor_cp.targets.base import SchedulingTarget
    from raptor_cp.workload.model import Workload

DEFAULT_PIPELINE_DEPTH = 4
"""Depth of ``--mode pipeline`` without ``--pipeline N``."""
REPORT_DIR = "reports"
SELECTION_REPORT = "pipeline_selection.json"
PERIODIC_REPORT = "pipeline_periodic.json"


def _check_report_dir(out: Path) -> None:
    """Refuse to replace ``out`` when its ``reports/`` holds files raptor-cp did not write."""
    reports = out / REPORT_DIR
    if not reports.is_dir():
        return
    foreign = sorted(
        p.name for p in reports.iterdir() if p.name not in (SELECTION_REPORT, PERIODIC_REPORT)
    )
    if foreign:
        raise InvalidInputError(
            f"{out}: refusing to replace a directory whose {REPORT_DIR}/ holds files raptor-cp "
            f"did not write ({', '.join(foreign[:3])}); choose another --out"
        )


def compile_pipeline(
    workload: Workload,
    target: SchedulingTarget,
    graph: ComputeGraph,
    depth: int,
    out: Path,
    progress: _Progress,
    periodic: bool = False,
) -> dict[str, Any]:
    """Schedule ``graph`` as a pipeline of at most ``depth`` stages, check it, write it.

    With ``periodic``, also write `PERIODIC_REPORT` (`periodic_report`).

    Raises
    ------
    ProvedInfeasibleError
        When one copy of every weight exceeds the chip (`LatencyProblem`).
    NotFoundWithinBudgetError
        When no partition or stage packing is found (bounded search).
    ScheduleViolationError
        When the schedule fails the pipeline check (a bug).
    """
    from raptor_cp.pipeline.check import check_pipeline
    from raptor_cp.pipeline.initial import initial_pipeline
    from raptor_cp.pipeline.report import (
        interval_lower_bound,
        schedule_document,
        selection_document,
    )
    from raptor_cp.problems import LatencyProblem

    _check_report_dir(out)
    problem = LatencyProblem(graph, target)  # validates capacity and fleet feasibility
    result = initial_pipeline(graph, target, depth)
    plan = result.plan
    progress.done(
        "partition",
        f"{len(plan.stages)} stages, core budgets {list(plan.budgets)} "
        f"({result.partition.solver}: {result.partition.status.value})",
    )
    check_pipeline(problem, plan.groups, plan.schedule, depth)
    progress.done("check", f"interval {format_ns(plan.interval_ns)} ({plan.estimate.binding})")
    status = "feasible"
    files = ["schedule.json", f"{REPORT_DIR}/{SELECTION_REPORT}"]
    periodic_json = None
    if periodic:
        periodic_json = periodic_report(plan, graph, target, workload.name, depth)
        queue = periodic_json["queue"]
        progress.done(
            "periodic",
            f"recurrence {periodic_json['recurrence']['status']}, queue {queue['status']}",
        )
        files.append(f"{REPORT_DIR}/{PERIODIC_REPORT}")
    from raptor_cp.cli import OUTPUT_FILES

    with staged_directory(out, OUTPUT_FILES) as staging:
        document = schedule_document(plan, graph, target, workload.name, depth, status)
        (staging / "schedule.json").write_text(dumps(document), encoding="utf-8")
        (staging / REPORT_DIR).mkdir()
        selection = selection_document(
            plan,
            graph,
            target,
            workload.name,
            depth,
            result.partition,
            result.stage_costs,
            result.packing,
            result.phase_times_s,
            result.work,
        )
        (staging / REPORT_DIR / SELECTION_REPORT).write_text(dumps(selection), encoding="utf-8")
        if periodic_json is not None:
            text = dumps(periodic_json)
            (staging / REPORT_DIR / PERIODIC_REPORT).write_text(text, encoding="utf-8")
    progress.done("write", f"{out}/")
    return {
        "mode": "pipeline",
        "model": workload.name,
        "target": target.name,
        "scheduler": plan.schedule.scheduler,
        "status": status,
        "tasks": graph.num_tasks,
        "cores": target.cores,
        "cores_used": plan.schedule.cores_used,
        "pipeline": depth,
        "stages": len(plan.stages),
        "core_budgets": list(plan.budgets),
        "interval_ns": plan.interval_ns,
        "interval": plan.estimate.to_json(),
        "lower_bound_ns": interval_lower_bound(graph, target)["interval_ns"],
        "out": str(out),
        "files": files,
    }


def periodic_report(
    plan: PipelinePlan,
    graph: ComputeGraph,
    target: SchedulingTarget,
    model: str,
    depth: int,
) -> dict[str, Any]:
    """The ``pipeline_periodic.json`` document of a placed pipeline (read-only).

    The schedule is realized as per-core programs
    (`raptor_cp.pipeline.realize`) and analysed by `analyse_periodic`; the
    realization's omissions join the model's ``missing_effects``.
    """
    from raptor_cp.periodic.analysis import analyse_periodic
    from raptor_cp.pipeline.realize import REALIZATION_EFFECTS, pipeline_events
    from raptor_cp.reports.periodic_report import periodic_document

    stage = plan.task_stage(graph.num_tasks)
    events, realization = pipeline_events(graph, target, plan.schedule, stage, name=model)
    document = periodic_document(
        analyse_periodic(events),
        source=f"{model} pipeline schedule (depth {depth})",
        target=target.name,
        missing_effects=REALIZATION_EFFECTS,
    )
    document["pipeline"] = {
        "depth": depth,
        "stages": len(plan.stages),
        "core_budgets": list(plan.budgets),
        "schedule_interval_ns": plan.interval_ns,
        "steps": realization.counts(),
    }
    return document


def summary_line(summary: dict[str, Any]) -> str:
    """The one line ``compile --pipeline N`` prints without ``--json``."""
    stages = f"{summary['stages']} stage{'' if summary['stages'] == 1 else 's'}"
    return (
        f"{summary['model']} on {summary['target']}: {summary['tasks']} tasks in {stages} on "
        f"{summary['cores_used']}/{summary['cores']} cores, "
        f"interval {format_ns(summary['interval_ns'])} (lower bound "
        f"{format_ns(summary['lower_bound_ns'])}), pipeline depth {summary['pipeline']}, "
        f"wrote {summary['out']}/"
    )
