"""Audit a heuristic against its CP-SAT twin on the same problem.

An `AuditRecord` puts side by side, for one instance: the heuristic's makespan
(checked by `raptor_cp.check`, scored by `raptor_cp.evaluate`) or why it has
none, the trivial lower bound of `raptor_cp.bounds`, and what CP-SAT found and
proved. Gaps are the heuristic's excess over a reference,
``100 (heuristic - reference) / reference``, against CP-SAT's best schedule and
against the best proved bound.

A *disagreement* is evidence that a solver, the checker or the model has a bug
or that a heuristic gave up where a schedule exists:

* the heuristic found nothing but CP-SAT found a schedule;
* the heuristic's schedule fails `check`;
* the heuristic has a schedule but CP-SAT proved the instance infeasible;
* the heuristic's makespan is below a proved lower bound;
* the heuristic's reported objective differs from `evaluate`'s.

Instances whose exact model exceeds the CP-SAT model's ``max_size`` still get a
record (heuristic against the trivial bound) marked as skipped.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from raptor_cp.bounds import lower_bounds
from raptor_cp.check import check
from raptor_cp.errors import NotFoundWithinBudgetError, ScheduleViolationError
from raptor_cp.evaluate import evaluate
from raptor_cp.problems import LatencyProblem, LatencySolver, Status
from raptor_cp.schedule import Schedule

if TYPE_CHECKING:
    from raptor_cp.models.latency import CpSatLatencyModel


@dataclass(frozen=True)
class AuditRecord:
    """Heuristic against CP-SAT on one instance (times in integer ns)."""

    instance: str
    mode: str
    target: str
    tasks: int
    heuristic: str
    heuristic_makespan: int | None
    """Makespan of the heuristic's schedule as `evaluate` computes it; None if it has none."""
    heuristic_failure: str | None
    """Why there is no (valid) heuristic makespan."""
    heuristic_wall_s: float
    critical_path_ns: int
    work_per_core_ns: int
    cpsat_status: Status | None
    """None when CP-SAT was skipped."""
    cpsat_objective: int | None
    cpsat_bound: int | None
    """CP-SAT's proved bound, already raised to the trivial lower bound."""
    cpsat_wall_s: float
    cpsat_skipped: str | None
    disagreements: tuple[str, ...]

    @property
    def lower_bound(self) -> int:
        """The trivial bound: max(critical path, work per core)."""
        return max(self.critical_path_ns, self.work_per_core_ns)

    @property
    def best_bound(self) -> int:
        """The strongest proved lower bound on the optimum."""
        return self.lower_bound if self.cpsat_bound is None else self.cpsat_bound

    @property
    def proved_optimal(self) -> bool:
        """CP-SAT's schedule is proved optimal."""
        return self.cpsat_status == Status.OPTIMAL

    @property
    def gap_vs_cpsat_pct(self) -> float | None:
        """Heuristic excess over CP-SAT's best schedule, in percent."""
        return _excess_pct(self.heuristic_makespan, self.cpsat_objective)

    @property
    def gap_vs_bound_pct(self) -> float | None:
        """Heuristic excess over the best proved bound, in percent."""
        return _excess_pct(self.heuristic_makespan, self.best_bound)

    @property
    def disagrees(self) -> bool:
        return bool(self.disagreements)

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict of the fields and derived quantities."""
        return {
            "instance": self.instance,
            "mode": self.mode,
            "target": self.target,
            "tasks": self.tasks,
            "heuristic": self.heuristic,
            "heuristic_makespan_ns": self.heuristic_makespan,
            "heuristic_failure": self.heuristic_failure,
            "heuristic_wall_s": self.heuristic_wall_s,
            "critical_path_ns": self.critical_path_ns,
            "work_per_core_ns": self.work_per_core_ns,
            "lower_bound_ns": self.lower_bound,
            "cpsat_status": None if self.cpsat_status is None else self.cpsat_status.value,
            "cpsat_objective_ns": self.cpsat_objective,
            "cpsat_bound_ns": self.cpsat_bound,
            "cpsat_wall_s": self.cpsat_wall_s,
            "cpsat_skipped": self.cpsat_skipped,
            "best_bound_ns": self.best_bound,
            "proved_optimal": self.proved_optimal,
            "gap_vs_cpsat_pct": self.gap_vs_cpsat_pct,
            "gap_vs_bound_pct": self.gap_vs_bound_pct,
            "disagreements": list(self.disagreements),
        }


def _excess_pct(value: int | None, reference: int | None) -> float | None:
    if value is None or reference is None:
        return None
    if reference == 0:
        return 0.0 if value == 0 else None
    return 100.0 * (value - reference) / reference


def _run_heuristic(
    problem: LatencyProblem, solver: LatencySolver
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
        check(problem, solution.schedule)
    except ScheduleViolationError as error:
        return (
            None,
            None,
            f"invalid schedule: {error}",
            [f"heuristic schedule fails check: {error}"],
            wall_s,
        )
    makespan = evaluate(problem, solution.schedule).makespan_ns
    notes = []
    if solution.objective is not None and solution.objective != makespan:
        notes.append(f"heuristic reports {solution.objective} ns but evaluate gives {makespan} ns")
    return solution.schedule, makespan, None, notes, wall_s


def audit_latency(
    problem: LatencyProblem,
    heuristic_solver: LatencySolver,
    cpsat_model: CpSatLatencyModel,
    name: str,
) -> AuditRecord:
    """Solve ``problem`` with both solvers and record how they compare.

    The heuristic's (valid) schedule hints CP-SAT. CP-SAT is skipped, with the
    reason recorded, when its model exceeds ``cpsat_model.max_size``.
    """
    bounds = lower_bounds(problem.graph, problem.target)
    schedule, makespan, failure, disagreements, heuristic_wall = _run_heuristic(
        problem, heuristic_solver
    )
    status = objective = bound = skipped = None
    cpsat_wall = 0.0
    plan = cpsat_model.plan(problem)
    if plan.too_large:
        skipped = f"too large: {plan.describe_size()}"
    else:
        solution = cpsat_model.solve(problem, hint=schedule)
        status, objective, bound = solution.status, solution.objective, solution.bound
        cpsat_wall = solution.wall_s
    best_bound = max(bounds.makespan_ns, bound or 0)
    if schedule is None and objective is not None and not disagreements:
        disagreements.append(f"heuristic found no schedule but CP-SAT found {objective} ns")
    if makespan is not None and status == Status.INFEASIBLE:
        disagreements.append("heuristic has a valid schedule but CP-SAT proved infeasibility")
    if makespan is not None and makespan < best_bound:
        disagreements.append(
            f"heuristic makespan {makespan} ns is below the proved bound {best_bound} ns"
        )
    return AuditRecord(
        instance=name,
        mode="latency",
        target=problem.target.name,
        tasks=problem.graph.num_tasks,
        heuristic=heuristic_solver.name,
        heuristic_makespan=makespan,
        heuristic_failure=failure,
        heuristic_wall_s=heuristic_wall,
        critical_path_ns=bounds.critical_path_ns,
        work_per_core_ns=bounds.work_per_core_ns,
        cpsat_status=status,
        cpsat_objective=objective,
        cpsat_bound=bound,
        cpsat_wall_s=cpsat_wall,
        cpsat_skipped=skipped,
        disagreements=tuple(disagreements),
    )


def _cell(value: object) -> str:
    text = "—" if value is None else str(value)
    return text.replace("|", "\\|")


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}"


def render_markdown(records: list[AuditRecord]) -> str:
    """A Markdown audit table with a summary line; disagreements are bold ``DISAGREE`` cells."""
    disagreeing = [r for r in records if r.disagrees]
    optimal = sum(r.proved_optimal for r in records)
    skipped = sum(r.cpsat_skipped is not None for r in records)
    if disagreeing:
        names = ", ".join(r.instance for r in disagreeing)
        summary = f"**DISAGREE on {len(disagreeing)} of {len(records)} instances: {names}**"
    else:
        summary = f"All {len(records)} instances agree"
    summary += f"; CP-SAT proved {optimal} optimal, skipped {skipped}."
    header = (
        "| instance | target | tasks | heuristic | heuristic ns | lower bound ns | CP-SAT ns "
        "| bound ns | CP-SAT status | gap vs CP-SAT % | gap vs bound % | DISAGREE |"
    )
    lines = [summary, "", header, "|" + "---|" * 12]
    for r in records:
        heuristic = (
            r.heuristic_makespan
            if r.heuristic_makespan is not None
            else f"none ({r.heuristic_failure})"
        )
        status = f"skipped ({r.cpsat_skipped})" if r.cpsat_status is None else r.cpsat_status.value
        verdict = "**DISAGREE**: " + "; ".join(r.disagreements) if r.disagrees else ""
        cells = [
            r.instance,
            r.target,
            r.tasks,
            r.heuristic,
            heuristic,
            r.lower_bound,
            r.cpsat_objective,
            r.best_bound,
            status,
            _pct(r.gap_vs_cpsat_pct),
            _pct(r.gap_vs_bound_pct),
            verdict,
        ]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


def to_json(records: list[AuditRecord]) -> dict[str, object]:
    """The audit as a JSON-ready dict: a summary and one entry per record."""
    return {
        "summary": {
            "instances": len(records),
            "disagreements": sum(r.disagrees for r in records),
            "proved_optimal": sum(r.proved_optimal for r in records),
            "cpsat_skipped": sum(r.cpsat_skipped is not None for r in records),
        },
        "records": [r.to_json() for r in records],
    }
