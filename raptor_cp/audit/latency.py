"""Audit a latency scheduler against the CP-SAT latency model on the same problem.

The heuristic's schedule is checked and re-timed (`check_schedule`); the
trivial bound comes from `raptor_cp.bounds`. Besides the shared rules of
`raptor_cp.audit.record.disagreements`, a schedule that fails the check and a
reported objective that differs from `evaluate`'s are disagreements.

Instances whose exact model exceeds the CP-SAT model's ``max_size`` still get a
record (heuristic against the trivial bound) marked as skipped.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from raptor_cp.audit.record import LATENCY_WORDS, AuditRecord, disagreements
from raptor_cp.bounds import lower_bounds
from raptor_cp.errors import NotFoundWithinBudgetError, ScheduleViolationError
from raptor_cp.problems import LatencyProblem
from raptor_cp.problems.latency import check_schedule
from raptor_cp.schedule import Schedule
from raptor_cp.solvers import Solver

if TYPE_CHECKING:
    from raptor_cp.models.latency import CpSatLatencyModel


def _run_heuristic(
    problem: LatencyProblem, solver: Solver
) -> tuple[Schedule | None, int | None, str | None, list[str], float]:
    """Run, check and evaluate a heuristic: (schedule, makespan, failure, disagreements, wall)."""
    began = time.perf_counter()
    try:
        solution = solver.solve(problem)
    except NotFoundWithinBudgetError as error:
        return None, None, f"not found within budget: {error}", [], time.perf_counter() - began
    wall_s = time.perf_counter() - began
    if solution.schedule is None:
        return None, None, f"no schedule ({solution.status.value})", [], wall_s
    try:
        makespan = check_schedule(problem, solution.schedule)
    except ScheduleViolationError as error:
        return (
            None,
            None,
            f"invalid schedule: {error}",
            [f"heuristic schedule fails check: {error}"],
            wall_s,
        )
    notes = []
    if solution.objective is not None and solution.objective != makespan:
        notes.append(f"heuristic reports {solution.objective} ns but evaluate gives {makespan} ns")
    return solution.schedule, makespan, None, notes, wall_s


def audit_latency(
    problem: LatencyProblem,
    heuristic_solver: Solver,
    cpsat_model: CpSatLatencyModel,
    name: str,
) -> AuditRecord:
    """Solve ``problem`` with both solvers and record how they compare.

    The heuristic's (valid) schedule hints CP-SAT. CP-SAT is skipped, with the
    reason recorded, when its model exceeds ``cpsat_model.max_size``.
    """
    bounds = lower_bounds(problem.graph, problem.target)
    schedule, makespan, failure, notes, heuristic_wall = _run_heuristic(problem, heuristic_solver)
    status = objective = bound = skipped = None
    cpsat_wall, capped = 0.0, False
    plan = cpsat_model.plan(problem)
    if plan.too_large:
        skipped = f"too large: {plan.describe_size()}"
    else:
        solution = cpsat_model.solve(problem, hint=schedule)
        status, objective, bound = solution.status, solution.objective, solution.bound
        cpsat_wall, capped = solution.wall_s, bool(solution.details.get("wall_capped"))
    best_bound = max(bounds.makespan_ns, bound or 0)
    found = disagreements(notes, makespan, None, status, objective, best_bound, LATENCY_WORDS)
    return AuditRecord(
        instance=name,
        mode="latency",
        target=problem.target.name,
        tasks=problem.graph.num_tasks,
        heuristic=heuristic_solver.name,
        heuristic_objective=makespan,
        heuristic_failure=failure,
        heuristic_wall_s=heuristic_wall,
        critical_path_ns=bounds.critical_path_ns,
        work_per_core_ns=bounds.work_per_core_ns,
        cpsat_status=status,
        cpsat_objective=objective,
        cpsat_bound=bound,
        cpsat_wall_s=cpsat_wall,
        cpsat_skipped=skipped,
        disagreements=found,
        cpsat_wall_capped=capped,
    )
