"""The periodic diagnostic of a placed pipeline: ``reports/pipeline_periodic.json``.

The seeds' "Periodic dependency diagnostics": the selected schedule is realized
as per-core programs (`raptor_cp.pipeline.realize`) and analysed by the shared
periodic analysis (recurrence and queue estimate). It is read-only: computed
after the schedule is fixed and never fed back into it. The realization's
omissions join the model's ``missing_effects``.
"""

from __future__ import annotations

from typing import Any

from raptor_cp.graph import ComputeGraph
from raptor_cp.pipeline.plan import PipelinePlan
from raptor_cp.targets.base import SchedulingTarget


def pipeline_periodic(
    plan: PipelinePlan,
    graph: ComputeGraph,
    target: SchedulingTarget,
    model: str,
    depth: int,
) -> dict[str, Any]:
    """The ``pipeline_periodic.json`` document of a placed pipeline (read-only)."""
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
