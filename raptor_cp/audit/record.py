"""One audit record for every mode, and the one rule set that finds disagreements.

An `AuditRecord` puts side by side, for one instance: the heuristic's objective
(checked by the problem's checker and recomputed) or why it has none, the
trivial lower bound, and what CP-SAT found and proved. Gaps are the heuristic's
excess over a reference, ``100 (heuristic - reference) / reference``, against
CP-SAT's best answer and against the best proved bound. The same record serves
latency (objective: makespan), packing (maximum per-core demand) and partition
(maximum stage cost) audits, so ``verify`` prints one table shape for all.

A *disagreement* (`disagreements`) is evidence that a solver, a checker or a
model has a bug, or that a heuristic gave up where an answer exists.
"""

from __future__ import annotations

from dataclasses import dataclass

from raptor_cp.problems import Status


@dataclass(frozen=True)
class Vocabulary:
    """How the disagreement messages of one mode name its answer and objective."""

    answer: str
    """``schedule`` or ``answer``: what the heuristic produced."""
    objective: str
    """``makespan`` or ``objective``: the quantity compared."""
    nothing: str
    """``no schedule`` or ``nothing``: what the heuristic found when it failed."""


LATENCY_WORDS = Vocabulary("schedule", "makespan", "no schedule")
PIPELINE_WORDS = Vocabulary("answer", "objective", "nothing")


def disagreements(
    notes: list[str],
    heuristic: int | None,
    heuristic_status: Status | None,
    exact_status: Status | None,
    exact_objective: int | None,
    best_bound: int,
    words: Vocabulary,
) -> tuple[str, ...]:
    """``notes`` plus the disagreements of a heuristic's answer with the exact solver's.

    ``heuristic`` is the heuristic's checked objective (None when it has no valid
    answer); ``best_bound`` the strongest proved lower bound (trivial bound raised
    to CP-SAT's). The rules, in order:

    * the heuristic found nothing but CP-SAT found an answer (unless an earlier
      note already explains the failure, such as a failed check);
    * the heuristic has a valid answer but CP-SAT proved infeasibility;
    * the heuristic claims infeasibility but CP-SAT found an answer;
    * the heuristic's objective is below a proved lower bound.
    """
    found = list(notes)
    if heuristic is None and exact_objective is not None and not found:
        found.append(f"heuristic found {words.nothing} but CP-SAT found {exact_objective} ns")
    if heuristic is not None and exact_status == Status.INFEASIBLE:
        found.append(f"heuristic has a valid {words.answer} but CP-SAT proved infeasibility")
    if heuristic is None and heuristic_status == Status.INFEASIBLE and exact_objective is not None:
        found.append(f"heuristic claims infeasibility but CP-SAT found {exact_objective} ns")
    if heuristic is not None and heuristic < best_bound:
        message = (
            f"heuristic {words.objective} {heuristic} ns is below the proved bound {best_bound} ns"
        )
        if message not in found:
            found.append(message)
    return tuple(found)


def excess_pct(value: int | None, reference: int | None) -> float | None:
    """``100 (value - reference) / reference``; None when unknown (or reference 0, value not)."""
    if value is None or reference is None:
        return None
    if reference == 0:
        return 0.0 if value == 0 else None
    return 100.0 * (value - reference) / reference


@dataclass(frozen=True)
class AuditRecord:
    """Heuristic against CP-SAT on one instance (objectives and bounds in integer ns)."""

    instance: str
    mode: str
    target: str
    tasks: int
    heuristic: str
    heuristic_objective: int | None
    """The heuristic's objective as its problem's checker recomputes it; None if it has none."""
    heuristic_failure: str | None
    """Why there is no (valid) heuristic objective."""
    heuristic_wall_s: float
    critical_path_ns: int
    """First term of the trivial bound (latency: critical path; packing: largest load;
    partition: the caller's floor)."""
    work_per_core_ns: int
    """Second term of the trivial bound (latency and packing: work / cores; partition: 0)."""
    cpsat_status: Status | None
    """None when CP-SAT was skipped."""
    cpsat_objective: int | None
    cpsat_bound: int | None
    """CP-SAT's proved bound."""
    cpsat_wall_s: float
    cpsat_skipped: str | None
    disagreements: tuple[str, ...]
    cpsat_wall_capped: bool = False
    """CP-SAT was stopped by the wall-clock cap, not its deterministic budget: its
    status, objective and bound depend on the machine (`raptor_cp.models.solve`)."""

    @property
    def lower_bound(self) -> int:
        """The trivial bound: the larger of its two terms."""
        return max(self.critical_path_ns, self.work_per_core_ns)

    @property
    def best_bound(self) -> int:
        """The strongest proved lower bound on the optimum."""
        return self.lower_bound if self.cpsat_bound is None else self.cpsat_bound

    @property
    def proved_optimal(self) -> bool:
        """CP-SAT's answer is proved optimal."""
        return self.cpsat_status == Status.OPTIMAL

    @property
    def gap_vs_cpsat_pct(self) -> float | None:
        """Heuristic excess over CP-SAT's best answer, in percent."""
        return excess_pct(self.heuristic_objective, self.cpsat_objective)

    @property
    def gap_vs_bound_pct(self) -> float | None:
        """Heuristic excess over the best proved bound, in percent."""
        return excess_pct(self.heuristic_objective, self.best_bound)

    @property
    def disagrees(self) -> bool:
        return bool(self.disagreements)
