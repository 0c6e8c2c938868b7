"""Audit the prefix-DP partition against the CP-SAT partition model and the exact DP.

`compare_partition` solves one `PartitionProblem` three ways over one shared
cost table: the prefix DP on its quantized grid (the production path), the
same DP with every core count on its grid (``spare_units = P - 1``: exact) and
the CP-SAT model. The quantization loss is the production DP's objective minus
the exact optimum. `audit_partition` turns the comparison into the shared
`AuditRecord` (objective: the maximum stage cost) plus `PartitionDetails`.

Disagreements specific to partitions (evidence of a bug): the exact DP unequal
to a proved CP-SAT optimum, or a partition found where the other side proved
there is none; the shared rules of `raptor_cp.audit.record.disagreements` are
applied with the caller's floor as the trivial bound.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from raptor_cp.audit.record import PIPELINE_WORDS, AuditRecord, disagreements
from raptor_cp.heuristics.core_budgets import CostCache
from raptor_cp.heuristics.prefix_dp import SPARE_UNITS, initial_partition
from raptor_cp.problems import (
    PartitionProblem,
    PartitionSolution,
    Status,
    check_partition,
    relative_gap,
)

if TYPE_CHECKING:
    from raptor_cp.models.partition import CpSatPartitionModel


@dataclass(frozen=True)
class PartitionComparison:
    """The three partitions of one problem and what they say about each other."""

    dp: PartitionSolution
    """The production prefix DP (quantized grid)."""
    exact_dp: PartitionSolution | None
    """The DP with every budget on its grid; None when CP-SAT was skipped."""
    cpsat: PartitionSolution | None
    """None when skipped (too many stage-cost entries)."""
    skipped: str | None
    stage_cost_queries: int
    disagreements: tuple[str, ...]

    @property
    def quantization_loss(self) -> int | None:
        """The production DP's objective minus the exact optimum."""
        if self.exact_dp is None or self.dp.objective is None or self.exact_dp.objective is None:
            return None
        return self.dp.objective - self.exact_dp.objective

    @property
    def quantization_loss_rel(self) -> float | None:
        """`quantization_loss` over the DP's objective (`relative_gap`)."""
        exact = None if self.exact_dp is None else self.exact_dp.objective
        return relative_gap(self.dp.objective, exact)


def compare_partition(
    problem: PartitionProblem,
    model: CpSatPartitionModel | None = None,
    spare_units: int = SPARE_UNITS,
) -> PartitionComparison:
    """Solve ``problem`` with the DP, the exact DP and CP-SAT (see the module docstring).

    Both exact solvers run only when the instance has at most
    ``model.max_entries`` stage-cost entries.
    """
    from raptor_cp.models.partition import CpSatPartitionModel, partition_entries

    model = model or CpSatPartitionModel()
    cost = CostCache(problem.stage_cost)  # one table for all three solvers
    problem = dataclasses.replace(problem, stage_cost=cost)
    dp = initial_partition(problem, spare_units)
    check_partition(problem, dp)
    entries = partition_entries(problem)
    if entries > model.max_entries:
        skipped = f"{entries} stage-cost entries > max_entries {model.max_entries}"
        return PartitionComparison(dp, None, None, skipped, cost.queries, ())
    exact = initial_partition(problem, max(problem.cores - 1, 0))
    cpsat = model.solve(problem)
    found = []
    if dp.objective is not None and cpsat.bound is not None and dp.objective < cpsat.bound:
        found.append(f"dp objective {dp.objective} below cpsat bound {cpsat.bound}")
    if cpsat.status == Status.OPTIMAL and exact.objective != cpsat.objective:
        found.append(f"exact dp {exact.objective} != cpsat optimum {cpsat.objective}")
    if cpsat.status == Status.INFEASIBLE and exact.stages is not None:
        found.append("exact dp found a partition cpsat proved infeasible")
    if dp.stages is None and cpsat.stages is not None:
        found.append("dp found no partition where cpsat found one")
    return PartitionComparison(dp, exact, cpsat, None, cost.queries, tuple(found))


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


def audit_partition(
    problem: PartitionProblem,
    cpsat_model: CpSatPartitionModel,
    name: str,
    target: str,
    tasks: int,
    floor_ns: int,
) -> tuple[AuditRecord, PartitionDetails]:
    """The prefix DP against the CP-SAT partition model (`compare_partition`) as a record.

    ``floor_ns`` must be a valid lower bound on every partition's objective (for
    `StageCosts`: the largest single-group cost on every core, since those costs
    grow with the range and shrink with cores); it is the record's trivial bound
    and is checked against the DP like a proved bound.
    """
    comparison = compare_partition(problem, cpsat_model)
    dp, cpsat = comparison.dp, comparison.cpsat
    status = None if cpsat is None else cpsat.status
    objective = None if cpsat is None else cpsat.objective
    found = disagreements(
        list(comparison.disagreements),
        dp.objective,
        dp.status,
        status,
        objective,
        floor_ns,
        PIPELINE_WORDS,
    )
    record = AuditRecord(
        instance=name,
        mode="pipeline",
        target=target,
        tasks=tasks,
        heuristic="prefix-dp",
        heuristic_objective=dp.objective,
        heuristic_failure=None if dp.objective is not None else f"no partition ({dp.status.value})",
        heuristic_wall_s=dp.wall_s,
        critical_path_ns=floor_ns,
        work_per_core_ns=0,
        cpsat_status=status,
        cpsat_objective=objective,
        cpsat_bound=None if cpsat is None else cpsat.bound,
        cpsat_wall_s=0.0 if cpsat is None else cpsat.wall_s,
        cpsat_skipped=comparison.skipped,
        disagreements=found,
        cpsat_wall_capped=cpsat is not None and bool(cpsat.details.get("wall_capped")),
    )
    details = PartitionDetails(
        instance=name,
        depth=problem.max_stages,
        dp_path=str(dp.details["path"]),
        unit_cores=int(dp.details["unit_cores"]),
        grid_objective=dp.details["grid_objective"],
        exact_dp_objective=None if comparison.exact_dp is None else comparison.exact_dp.objective,
        quantization_loss=comparison.quantization_loss,
    )
    return record, details
