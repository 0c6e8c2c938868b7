"""``schedule.json``: the schedule a compile produced, as documented in docs/cli.md.

One writer for both modes. Every document has the same core: format and
version, mode, model, target, scheduler, status, cores, every task's core,
start, end, operation and lane, each core's order and work. Latency documents
add the makespan, its bounds and gap, how the solver found it (the portfolio's
winner and members, the polish) and the evaluation summary; pipeline documents add
each core's and task's stage, the core budgets and the interval estimate (task
times there are relative to the start of the task's stage within one interval,
cross-stage inputs ready at 0).

The document holds only decisions and their evaluated timing (no wall-clock
times, no timestamps), so identical inputs give byte-identical files.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from raptor_cp.bounds import interval_lower_bound
from raptor_cp.graph import ComputeGraph
from raptor_cp.schedule import Schedule

if TYPE_CHECKING:
    from raptor_cp.flows import CompileResult, LatencyResult, PipelineResult

FORMAT = "raptor-cp-schedule"
FORMAT_VERSION = 1
"""Bumped whenever a field changes meaning or disappears (adding fields keeps it)."""


def schedule_document(result: CompileResult) -> dict[str, object]:
    """Build the ``schedule.json`` document of a compile (see the module docstring)."""
    if result.mode == "pipeline":
        return _pipeline_document(result)  # type: ignore[arg-type]
    return _latency_document(result)  # type: ignore[arg-type]


def _core(
    result: CompileResult,
    schedule: Schedule,
    start: list[int],
    end: list[int],
    stage: list[int] | None,
) -> tuple[dict[str, object], dict[str, object]]:
    """The fields every mode shares: (leading fields, trailing fields)."""
    graph: ComputeGraph = result.problem.graph
    target = result.problem.target
    names = graph.names
    core = schedule.core.tolist()
    operation = graph.operation.tolist()
    lane = graph.lane.tolist()
    tasks = []
    for t in range(graph.num_tasks):
        task: dict[str, object] = {"name": names[t], "core": core[t]}
        if stage is not None:
            task["stage"] = stage[t]
        task.update(
            start_ns=start[t],
            end_ns=end[t],
            operation=graph.operation_names[operation[t]],
            lane=lane[t],
        )
        tasks.append(task)
    head = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "mode": result.mode,
        "model": result.prepared.model,
        "target": target.name,
    }
    tail = {
        "cores": target.cores,
        "tasks": tasks,
        "core_order": [[names[t] for t in order] for order in schedule.core_order],
    }
    return head, tail


def _latency_document(result: LatencyResult) -> dict[str, object]:
    solution, evaluation, bounds = result.solution, result.evaluation, result.bounds
    schedule = solution.schedule
    assert schedule is not None
    start = [int(t) for t in evaluation.start_ns]
    finish = [int(t) for t in evaluation.finish_ns]
    head, tail = _core(result, schedule, start, finish, None)
    return {
        **head,
        "scheduler": solution.solver,
        "status": solution.status.value,
        "makespan_ns": int(evaluation.makespan_ns),
        "lower_bound_ns": bounds.makespan_ns,
        "solver_bound_ns": None if solution.bound is None else int(solution.bound),
        "gap": result.gap,
        "lower_bounds": {
            "critical_path_ns": bounds.critical_path_ns,
            "work_per_core_ns": bounds.work_per_core_ns,
            "head_work_tail_ns": bounds.head_work_tail_ns,
            "cores_needed": bounds.cores_needed,
        },
        **result.solver_facts(),
        "cores_used": int(evaluation.cores_used),
        "summary": {
            "makespan_ns": int(evaluation.makespan_ns),
            "serial_work_ns": int(evaluation.serial_work_ns),
            "critical_path_ns": int(evaluation.critical_path_ns),
            "transfer_work_ns": int(evaluation.transfer_work_ns),
            "cores_used": int(evaluation.cores_used),
        },
        **tail,
        "core_work_ns": [int(w) for w in evaluation.per_core_work_ns],
    }


def _pipeline_document(result: PipelineResult) -> dict[str, object]:
    plan = result.solution.plan
    assert plan is not None
    graph, target = result.problem.graph, result.problem.target
    schedule = plan.schedule
    start = schedule.start_ns.tolist()
    cost = graph.cost.tolist()
    end = [s + c for s, c in zip(start, cost, strict=True)]
    stage = plan.task_stage(graph.num_tasks).tolist()
    head, tail = _core(result, schedule, start, end, stage)
    work = [0] * target.cores
    compute = [0] * target.cores
    for placement in plan.placements:
        for p, ns in placement.timing.core_demand.items():
            work[p] = ns
        for p, ns in placement.timing.core_compute.items():
            compute[p] = ns
    return {
        **head,
        "scheduler": schedule.scheduler,
        "status": result.solution.status.value,
        "pipeline_depth": result.problem.depth,
        "stages": len(plan.stages),
        "interval_ns": result.interval_ns,
        "interval_source": result.interval_source,
        "program_interval_ns": result.program_interval_ns,
        "program_interval_reason": result.program_interval_reason,
        "analytic_interval": plan.estimate.to_json(),
        "lower_bound_ns": interval_lower_bound(graph, target)["interval_ns"],
        "cores_used": schedule.cores_used,
        "core_budgets": list(plan.budgets),
        "core_stage": list(schedule.stage or ()),
        **tail,
        "core_work_ns": work,
        "core_compute_ns": compute,
    }
