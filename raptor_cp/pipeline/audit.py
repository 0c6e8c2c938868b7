"""Pipeline audits in the latency audit's format: partition (prefix DP) and stage packing.

Both return `raptor_cp.audit.AuditRecord`, so ``verify`` prints one table shape
for every mode: heuristic objective, lower bound, CP-SAT objective and bound,
status, gaps, disagreements. In these records ``heuristic_makespan`` is the
heuristic's objective (the partition's maximum stage cost, or the packing's
maximum per-core demand) and the trivial bound is split as follows:

* packing: ``critical_path_ns`` is the largest task load (no core finishes
  faster) and ``work_per_core_ns`` the total load over the cores;
* partition: ``critical_path_ns`` is ``floor_ns``, a bound the caller proves for
  its stage costs (for `StageCosts`: the largest single-group cost on every
  core, since those costs grow with the range and shrink with cores), and
  ``work_per_core_ns`` is 0.

A *disagreement* is evidence of a bug: the heuristic's answer fails its check,
its reported objective differs from the recomputed one, it lies below a proved
bound, or one side proves infeasible what the other solved.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from raptor_cp.audit import AuditRecord
from raptor_cp.errors import ScheduleViolationError
from raptor_cp.heuristics.ordered_packing import demand_lower_bound
from raptor_cp.heuristics.stage_packing import cores_needed, pack_stage
from raptor_cp.pipeline_problems import (
    PackingProblem,
    PartitionProblem,
    check_packing,
    packing_demand,
)
from raptor_cp.problems import Status

if TYPE_CHECKING:
    from raptor_cp.models.packing import CpSatPackingModel
    from raptor_cp.models.partition import CpSatPartitionModel


@dataclass(frozen=True)
class PartitionDetails:
    """What the partition audit adds to its record: the DP's quantization evidence."""

    instance: str
    depth: int
    dp_path: str
    unit_cores: int
    grid_objective: int | None
    exact_dp_objective: int | None
    """The DP with every core count on its grid (exact); None when CP-SAT was skipped."""
    quantization_loss: int | None

    def to_json(self) -> dict[str, object]:
        return {
            "instance": self.instance,
            "depth": self.depth,
            "dp_path": self.dp_path,
            "unit_cores": self.unit_cores,
            "grid_objective_ns": self.grid_objective,
            "exact_dp_objective_ns": self.exact_dp_objective,
            "quantization_loss_ns": self.quantization_loss,
        }


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

    def to_json(self) -> dict[str, object]:
        return {
            "instance": self.instance,
            "cores": self.cores,
            "weights": self.weights,
            "cores_l1": self.cores_l1,
            "cores_l2": self.cores_l2,
            "cores_dff": self.cores_dff,
            "cores_lp": self.cores_lp,
            "cores_needed": self.cores_needed,
            "demand_bound_ns": self.demand_ns,
        }


def packing_bounds(problem: PackingProblem, name: str) -> PackingBounds:
    """The `PackingBounds` of ``problem`` (capacity 0 holds only empty weight sets)."""
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


def render_packing_bounds(details: Sequence[PackingBounds]) -> str:
    """The packing audit's second table: each stage's lower bounds on cores and demand."""
    lines = [
        "| instance | cores | weights | cores L1 | cores L2 | cores DFF | cores LP "
        "| cores needed | demand bound ns |",
        "|" + "---|" * 9,
    ]
    for d in details:
        cells = [
            d.instance, d.cores, d.weights, d.cores_l1, d.cores_l2, d.cores_dff,
            d.cores_lp, d.cores_needed, d.demand_ns,
        ]  # fmt: skip
        lines.append("| " + " | ".join("—" if c is None else str(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


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
    disagreements: list[str] = []
    demand = failure = None
    if solution.core is None:
        failure = f"no packing ({solution.status.value})"
    else:
        try:
            check_packing(problem, solution)
            demand = max(packing_demand(problem, solution.core), default=0)
        except ScheduleViolationError as error:
            failure = f"invalid packing: {error}"
            disagreements.append(f"heuristic packing fails check: {error}")
    status = objective = bound = skipped = None
    cpsat_wall = 0.0
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
    lower = demand_lower_bound(problem)
    _compare(disagreements, demand, objective, status, max(lower, bound or 0), solution.status)
    largest = max(problem.loads, default=0)
    return AuditRecord(
        instance=name,
        mode="packing",
        target=target,
        tasks=problem.num_tasks,
        heuristic=solution.solver,
        heuristic_makespan=demand,
        heuristic_failure=failure,
        heuristic_wall_s=heuristic_wall,
        critical_path_ns=largest,
        work_per_core_ns=-(-sum(problem.loads) // problem.cores),
        cpsat_status=status,
        cpsat_objective=objective,
        cpsat_bound=bound,
        cpsat_wall_s=cpsat_wall,
        cpsat_skipped=skipped,
        disagreements=tuple(disagreements),
    )


def audit_partition(
    problem: PartitionProblem,
    cpsat_model: CpSatPartitionModel,
    name: str,
    target: str,
    tasks: int,
    floor_ns: int,
) -> tuple[AuditRecord, PartitionDetails]:
    """The prefix DP against the CP-SAT partition model (`partition_audit`) as a record.

    ``floor_ns`` must be a valid lower bound on every partition's objective
    (see the module docstring); it is checked against the DP like a proved bound.
    """
    from raptor_cp.models.partition import partition_audit

    raw = partition_audit(problem, cpsat_model)
    dp = raw["dp_objective"]
    skipped = raw.get("cpsat_skipped")
    status = None if skipped else Status(raw["cpsat_status"])
    objective = None if skipped else raw["cpsat_objective"]
    bound = None if skipped else raw["cpsat_bound"]
    disagreements = [str(d) for d in raw.get("disagreements", [])]
    dp_status = Status(raw["dp_status"])
    # partition_audit already compares the DP with CP-SAT's bound; add the floor.
    _compare(disagreements, dp, objective, status, floor_ns, dp_status)
    cpsat_wall = 0.0 if skipped else float(raw["cpsat_wall_s"])
    record = AuditRecord(
        instance=name,
        mode="pipeline",
        target=target,
        tasks=tasks,
        heuristic="prefix-dp",
        heuristic_makespan=dp,
        heuristic_failure=None if dp is not None else f"no partition ({dp_status.value})",
        heuristic_wall_s=float(raw["dp_wall_s"]),
        critical_path_ns=floor_ns,
        work_per_core_ns=0,
        cpsat_status=status,
        cpsat_objective=objective,
        cpsat_bound=bound,
        cpsat_wall_s=cpsat_wall,
        cpsat_skipped=skipped,
        disagreements=tuple(disagreements),
    )
    details = PartitionDetails(
        instance=name,
        depth=problem.max_stages,
        dp_path=str(raw["dp_path"]),
        unit_cores=int(raw["dp_unit_cores"]),
        grid_objective=raw["dp_grid_objective"],
        exact_dp_objective=None if skipped else raw["exact_dp_objective"],
        quantization_loss=None if skipped else raw["quantization_loss"],
    )
    return record, details


def _compare(
    notes: list[str],
    heuristic: int | None,
    objective: int | None,
    status: Status | None,
    best_bound: int,
    heuristic_status: Status,
) -> None:
    """Append the disagreements shared by both audits to ``notes``."""
    if heuristic is None and objective is not None and not notes:
        notes.append(f"heuristic found nothing but CP-SAT found {objective} ns")
    if heuristic is not None and status == Status.INFEASIBLE:
        notes.append("heuristic has a valid answer but CP-SAT proved infeasibility")
    if heuristic is None and heuristic_status == Status.INFEASIBLE and objective is not None:
        notes.append(f"heuristic claims infeasibility but CP-SAT found {objective} ns")
    if heuristic is not None and heuristic < best_bound:
        message = f"heuristic objective {heuristic} ns is below the proved bound {best_bound} ns"
        if message not in notes:
            notes.append(message)
