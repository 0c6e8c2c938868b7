"""Audit the reuse-first stage packer against the CP-SAT packing model on one stage.

The record's objective is the packing's maximum per-core demand; its trivial
bound terms are the largest task load (no core finishes faster) and the total
load over the cores. A packing that fails `check_packing` is a disagreement,
besides the shared rules of `raptor_cp.audit.record.disagreements`.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from raptor_cp.audit.record import PIPELINE_WORDS, AuditRecord, disagreements
from raptor_cp.errors import ScheduleViolationError
from raptor_cp.heuristics.ordered_packing import demand_lower_bound
from raptor_cp.heuristics.stage_packing import pack_stage
from raptor_cp.problems import (
    PackingProblem,
    check_packing,
    packing_demand,
)

if TYPE_CHECKING:
    from raptor_cp.models.packing import CpSatPackingModel


def packing_size(problem: PackingProblem) -> int:
    """An upper bound on the literals of the exact packing model (tasks, weights, edges x cores)."""
    weights = {w for ws in problem.task_weights for w in ws}
    return (problem.num_tasks + len(weights) + len(problem.edges)) * problem.cores


def audit_packing(
    problem: PackingProblem, cpsat_model: CpSatPackingModel, name: str, target: str
) -> AuditRecord:
    """`pack_stage` against the CP-SAT packing model on ``problem`` (hinted by the former).

    CP-SAT is skipped, with the reason, when `packing_size` exceeds the model's
    ``max_size``.
    """
    began = time.perf_counter()
    solution = pack_stage(problem)
    heuristic_wall = time.perf_counter() - began
    notes: list[str] = []
    demand = failure = None
    if solution.core is None:
        failure = f"no packing ({solution.status.value})"
    else:
        try:
            check_packing(problem, solution)
            demand = max(packing_demand(problem, solution.core), default=0)
        except ScheduleViolationError as error:
            failure = f"invalid packing: {error}"
            notes.append(f"heuristic packing fails check: {error}")
    status = objective = bound = skipped = None
    cpsat_wall, capped = 0.0, False
    size = packing_size(problem)
    if size > cpsat_model.max_size:
        skipped = f"too large: up to {size} literals > max_size {cpsat_model.max_size}"
    else:
        exact = cpsat_model.solve(problem, hint=solution if demand is not None else None)
        status, objective, bound, cpsat_wall = (
            exact.status,
            exact.objective,
            exact.bound,
            exact.wall_s,
        )
        capped = bool(exact.details.get("wall_capped"))
    lower = demand_lower_bound(problem)
    found = disagreements(
        notes, demand, solution.status, status, objective, max(lower, bound or 0), PIPELINE_WORDS
    )
    largest = max(problem.loads, default=0)
    return AuditRecord(
        instance=name,
        mode="packing",
        target=target,
        tasks=problem.num_tasks,
        heuristic=solution.solver,
        heuristic_objective=demand,
        heuristic_failure=failure,
        heuristic_wall_s=heuristic_wall,
        critical_path_ns=largest,
        work_per_core_ns=-(-sum(problem.loads) // problem.cores),
        cpsat_status=status,
        cpsat_objective=objective,
        cpsat_bound=bound,
        cpsat_wall_s=cpsat_wall,
        cpsat_skipped=skipped,
        disagreements=found,
        cpsat_wall_capped=capped,
    )
