"""Audit the reuse-first stage packer against the CP-SAT packing model on one stage.

The record's objective is the packing's maximum per-core demand; its trivial
bound terms are the largest task load (no core finishes faster) and the total
load over the cores. A packing that fails `check_packing` is a disagreement,
besides the shared rules of `raptor_cp.audit.record.disagreements`.

`packing_bounds` adds the stage's lower bounds (`PackingBounds`): on the cores
its distinct weights need (L1, Martello-Toth L2, the Fekete-Schepers DFF bound of
`raptor_cp.heuristics.packing_bounds`, the rounded arc-flow LP bound of
`raptor_cp.models.arc_flow`) and on the demand (`demand_lower_bound`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from raptor_cp.audit.record import PIPELINE_WORDS, AuditRecord, disagreements
from raptor_cp.errors import ScheduleViolationError
from raptor_cp.heuristics.ordered_packing import demand_lower_bound
from raptor_cp.heuristics.stage_packing import cores_needed, pack_stage
from raptor_cp.problems import (
    PackingProblem,
    check_packing,
    packing_demand,
)

if TYPE_CHECKING:
    from raptor_cp.models.packing import CpSatPackingModel


@dataclass(frozen=True)
class PackingBounds:
    """What the packing audit adds to its record: the stage's lower bounds.

    On cores (every packing of the stage holds one copy of each distinct weight,
    a bin packing of their sizes): ``cores_l1`` the slot total over the capacity,
    ``cores_l2`` Martello-Toth L2, ``cores_dff`` the Fekete-Schepers bound,
    ``cores_lp`` the rounded arc-flow LP bound (None if the LP solve failed) and
    ``cores_needed`` the one the packers use (`cores_needed`, without the LP). On
    the demand: ``demand_ns`` (`demand_lower_bound`).
    """

    instance: str
    cores: int
    weights: int
    cores_l1: int
    cores_l2: int
    cores_dff: int
    cores_lp: int | None
    cores_needed: int
    demand_ns: int


def packing_bounds(problem: PackingProblem, name: str) -> PackingBounds:
    """The `PackingBounds` of ``problem`` (capacity 0 holds only empty weight sets).

    ``O(n log n)`` for L1/L2, the DFF bound's numpy work, and one HiGHS LP on the
    arc-flow graph of the distinct weight sizes (`raptor_cp.models.arc_flow`).
    """
    from raptor_cp.heuristics.packing_bounds import bin_bounds
    from raptor_cp.models.arc_flow import arc_flow_graph, arc_flow_lp_bound

    used = sorted({w for weights in problem.task_weights for w in weights})
    sizes = [problem.weight_size[w] for w in used if problem.weight_size[w] > 0]
    bounds = bin_bounds(sizes, max(problem.capacity, 1))
    lp = arc_flow_lp_bound(arc_flow_graph(sizes, max(problem.capacity, 1)))
    return PackingBounds(
        instance=name,
        cores=problem.cores,
        weights=len(used),
        cores_l1=bounds.l1,
        cores_l2=bounds.l2,
        cores_dff=bounds.dff,
        cores_lp=lp,
        cores_needed=cores_needed(problem),
        demand_ns=demand_lower_bound(problem),
    )


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
