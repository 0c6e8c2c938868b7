"""``reports/pipeline_selection.json``: how a pipeline compile chose its schedule.

A JSON-ready dict rendered by `raptor_cp.reports.output.dumps` (sorted keys, no
timestamps). It follows the seeds' names (scheduling.md, "Default throughput selection": costs,
eligibility, selection, attempts, search parents, compact task-stage runs, core
budgets, recurrence contributions, termination, queue budget, phase times); the
bounded beam refinement is not implemented, so there is one candidate (the
initial partition), no search parent and no recurrence analysis, and those
fields say so. ``phase_times_s`` holds measured wall times: it is the one field
that differs between two runs on the same inputs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from raptor_cp.bounds import interval_lower_bound
from raptor_cp.pipeline.plan import PipelinePlan

if TYPE_CHECKING:
    from raptor_cp.flows import PipelineResult

SELECTION_FORMAT = "raptor-cp-pipeline-selection"
FORMAT_VERSION = 1
TERMINATION = "initial partition (refinement not implemented)"
QUEUE_EVALUATIONS = 32
"""The seeds' queue-evaluation budget of the (not yet implemented) refinement."""
CONSTRUCTIVE_PACKINGS = 128
"""The seeds' constructive allocation / physical packing budget; the initial schedule's
allocation and placement use one of them."""


def task_stage_runs(task_stage: np.ndarray) -> list[list[int]]:
    """Compact ``[first task, stop task, stage]`` runs of consecutive task ids in one stage."""
    if task_stage.size == 0:
        return []
    change = np.flatnonzero(np.diff(task_stage)) + 1
    starts = np.concatenate([[0], change])
    stops = np.concatenate([change, [task_stage.size]])
    return [[int(a), int(b), int(task_stage[a])] for a, b in zip(starts, stops, strict=True)]


def _stage_rows(
    plan: PipelinePlan, stage_costs: list[int | None], packing: list[dict[str, object]]
) -> list[dict[str, object]]:
    rows = []
    for s, (stage, placement, region, evidence) in enumerate(
        zip(plan.stages, plan.placements, plan.layout.regions, packing, strict=True)
    ):
        timing = placement.timing
        rows.append(
            {
                "stage": s,
                "groups": [stage.first, stage.stop],
                "operations": [plan.groups.names[stage.first], plan.groups.names[stage.stop - 1]],
                "tasks": len(placement.tasks),
                "core_budget": stage.cores,
                "cores": list(region),
                "cores_used": len(set(placement.cores)),
                "stage_cost_ns": stage_costs[s],
                "packing": evidence,
                "core_work_ns": timing.demand_ns,
                "compute_ns": timing.compute_ns,
                "span_ns": timing.span_ns,
                "placement": placement.candidate,
                "placement_candidates": dict(placement.candidates),
                "store_ns": plan.boundary.stage_store_ns[s],
                "load_ns": plan.boundary.stage_load_ns[s],
            }
        )
    return rows


def selection_document(result: PipelineResult) -> dict[str, object]:
    """Build ``reports/pipeline_selection.json`` of a pipeline compile (module docstring).

    The selection evidence (`InitialPipeline`) holds the initial partition as the
    prefix DP returned it, each stage's cost at its final budget and packing
    evidence, and the phases' wall times and work counts.
    """
    plan, selection = result.solution.plan, result.solution.selection
    assert plan is not None and selection is not None
    graph, target = result.problem.graph, result.problem.target
    model, depth = result.prepared.model, result.problem.depth
    partition = selection.partition
    stage_costs, packing = selection.stage_costs, selection.packing
    phase_times_s, work = selection.phase_times_s, selection.work
    estimate = plan.estimate.to_json()
    candidate = {
        "index": 0,
        "origin": "initial partition",
        "core_budgets": list(plan.budgets),
        "stage_ranges": [[s.first, s.stop] for s in plan.stages],
        "partition_objective_ns": partition.objective,
        "interval_ns": plan.interval_ns,
        "queue_estimate_ns": None,
        "selection_eligible": True,
    }
    return {
        "format": SELECTION_FORMAT,
        "version": FORMAT_VERSION,
        "model": model,
        "target": target.name,
        "pipeline_depth": depth,
        "groups": [
            {"group": g, "operation": name, "tasks": len(tasks)}
            for g, (name, tasks) in enumerate(
                zip(plan.groups.names, plan.groups.tasks, strict=True)
            )
        ],
        "stages": _stage_rows(plan, stage_costs, packing),
        "core_budgets": list(plan.budgets),
        "partition_core_budgets": [s.cores for s in partition.stages or ()],
        "idle_cores": target.cores - sum(plan.budgets),
        "task_stage_runs": task_stage_runs(plan.task_stage(graph.num_tasks)),
        "costs": estimate,
        "boundary": plan.boundary.to_json(),
        "baseline_memory": plan.baseline.to_json(),
        "bounds": {
            **{f"lower_{k}": v for k, v in interval_lower_bound(graph, target).items()},
            "partition_objective_ns": partition.objective,
            "partition_bound_ns": partition.bound,
            "partition_status": partition.status.value,
        },
        "partition": {
            "solver": partition.solver,
            **{k: partition.details[k] for k in sorted(partition.details)},
        },
        "candidates": [candidate],
        "selection": {
            "selected": 0,
            "policy": "single candidate: queue analysis and comparison skipped",
            "near_equivalence_margin": 0.021,
        },
        "eligibility": {"selection_eligible": True, "reasons": []},
        "search_parents": [],
        "recurrence_contributions": None,
        "attempts": [{"candidate": 0, "result": "selected"}],
        "backend_attempts": [a.to_json() for a in result.backend_attempts],
        "termination": TERMINATION,
        "queue_budget": {
            "queue_evaluations": QUEUE_EVALUATIONS,
            "queue_evaluations_used": 0,
            "constructive_packings": CONSTRUCTIVE_PACKINGS,
            "constructive_packings_used": 1,
        },
        "work": dict(work),
        "phase_times_s": {k: round(v, 6) for k, v in phase_times_s.items()},
    }
