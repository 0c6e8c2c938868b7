"""The periodic diagnostic of a placed pipeline: ``reports/pipeline_periodic.json``.

The seeds' "Periodic dependency diagnostics": the selected schedule is realized
as per-core programs (`raptor_cp.pipeline.realize`) and analysed by the shared
periodic analysis: the bounded bisection for the recurrence, the queue estimate
with the source switches' FIFOs and the separate ``memory_controller`` estimate
with the controller's FIFO. The baseline requests (function inputs, constants,
outputs) join the aggregate memory-service term without positions. It is
read-only: computed after the schedule is fixed and never fed back into it. The
realization's omissions join the model's ``missing_effects``. Per stage, the
document adds its cores' occupancy and its own recurrence
(`raptor_cp.pipeline.stage_recurrence`): whether a stage is held back by work or
by transfers that couple its cores' generations. A target without
complete step timing, a sub-byte payload or a register file too small gives an
explicit ``unavailable`` report (scheduling.md: "Unsupported or incomplete target
timing produces an `unavailable` report").
"""

from __future__ import annotations

from typing import Any

from raptor_cp.graph import ComputeGraph
from raptor_cp.pipeline.plan import PipelinePlan
from raptor_cp.targets.base import RealizedScheduleCost, SchedulingTarget


def pipeline_periodic(
    plan: PipelinePlan,
    graph: ComputeGraph,
    target: SchedulingTarget,
    model: str,
    depth: int,
    selected: RealizedScheduleCost | None = None,
) -> dict[str, Any]:
    """The ``pipeline_periodic.json`` document of a placed pipeline (read-only).

    ``selected`` is the selection's own queue evidence on the same schedule
    (None when no queue comparison ran); the document repeats its intervals
    beside the diagnostic's ``memory_controller`` estimate, which the same
    realization, step timing and queue engine (with the controller's FIFO)
    make equal.
    """
    from raptor_cp.errors import TimingUnavailableError
    from raptor_cp.periodic.analysis import QueueModel, analyse_periodic
    from raptor_cp.pipeline.realize import REALIZATION_EFFECTS, pipeline_events
    from raptor_cp.pipeline.stage_recurrence import core_stages, stage_recurrences
    from raptor_cp.reports.periodic_report import periodic_document, unavailable_document

    source = f"{model} pipeline schedule (depth {depth})"
    stage = plan.task_stage(graph.num_tasks)
    try:
        events, realization = pipeline_events(graph, target, plan.schedule, stage, name=model)
        analysis = analyse_periodic(
            events,
            model=QueueModel(memory_controller=True),
            baseline_service_ns=plan.baseline.service_ns,
        )
    except TimingUnavailableError as error:
        document = unavailable_document(
            str(error), source=source, target=target.name, missing_effects=REALIZATION_EFFECTS
        )
        steps = stage_recurrence = None
    else:
        document = periodic_document(
            analysis, source=source, target=target.name, missing_effects=REALIZATION_EFFECTS
        )
        steps = realization.counts()
        timing = target.step_timing()
        assert timing is not None  # pipeline_events raised otherwise
        core_stage = core_stages(plan.schedule, stage)
        stage_recurrence = [
            entry.to_json() for entry in stage_recurrences(realization, core_stage, timing)
        ]
    document["pipeline"] = {
        "depth": depth,
        "stages": len(plan.stages),
        "core_budgets": list(plan.budgets),
        "analytic_interval_ns": plan.interval_ns,
        "selection_queue": None
        if selected is None
        else {
            "estimate_ns": selected.estimate_ns,
            "index_interval_ns": selected.index_interval_ns,
            "reversed_interval_ns": selected.reversed_interval_ns,
        },
        "steps": steps,
        "stage_recurrence": stage_recurrence,
    }
    return document
