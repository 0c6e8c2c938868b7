"""``schedule.json``: the schedule a compile produced, as documented in docs/cli.md.

The document holds only decisions and their evaluated timing (no wall-clock
times, no timestamps), so identical inputs give byte-identical files.
"""

from __future__ import annotations

from raptor_cp.bounds import LowerBounds
from raptor_cp.evaluate import Evaluation
from raptor_cp.problems import LatencyProblem, LatencySolution

FORMAT = "raptor-cp-schedule"
FORMAT_VERSION = 1
"""Bumped whenever a field changes meaning or disappears (adding fields keeps it)."""


def schedule_document(
    problem: LatencyProblem,
    solution: LatencySolution,
    evaluation: Evaluation,
    bounds: LowerBounds,
    model: str,
) -> dict[str, object]:
    """Build the ``schedule.json`` document of a latency schedule.

    Parameters
    ----------
    problem, solution:
        The scheduled problem and the solver's answer (its schedule must be set).
    evaluation:
        `raptor_cp.evaluate.evaluate` of that schedule: the timing reported here.
    bounds:
        Lower bounds of the graph on the target, to judge the makespan against.
    model:
        The workload's name.
    """
    schedule = solution.schedule
    if schedule is None:
        raise ValueError("schedule_document needs a solution with a schedule")
    graph = problem.graph
    names = graph.names
    core = schedule.core.tolist()
    start = [int(t) for t in evaluation.start_ns]
    finish = [int(t) for t in evaluation.finish_ns]
    operation = graph.operation.tolist()
    lane = graph.lane.tolist()
    tasks = [
        {
            "name": names[t],
            "core": core[t],
            "start_ns": start[t],
            "end_ns": finish[t],
            "operation": graph.operation_names[operation[t]],
            "lane": lane[t],
        }
        for t in range(graph.num_tasks)
    ]
    return {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "mode": "latency",
        "model": model,
        "target": problem.target.name,
        "scheduler": solution.solver,
        "status": solution.status.value,
        "makespan_ns": int(evaluation.makespan_ns),
        "lower_bound_ns": bounds.makespan_ns,
        "solver_bound_ns": None if solution.bound is None else int(solution.bound),
        "lower_bounds": {
            "critical_path_ns": bounds.critical_path_ns,
            "work_per_core_ns": bounds.work_per_core_ns,
            "cores_needed": bounds.cores_needed,
        },
        "cores": problem.target.cores,
        "cores_used": int(evaluation.cores_used),
        "summary": {
            "makespan_ns": int(evaluation.makespan_ns),
            "serial_work_ns": int(evaluation.serial_work_ns),
            "critical_path_ns": int(evaluation.critical_path_ns),
            "transfer_work_ns": int(evaluation.transfer_work_ns),
            "cores_used": int(evaluation.cores_used),
        },
        "tasks": tasks,
        "core_order": [[names[t] for t in order] for order in schedule.core_order],
        "core_work_ns": [int(w) for w in evaluation.per_core_work_ns],
    }
