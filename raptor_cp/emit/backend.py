"""Backend retries: select again among the already costed candidates, each at most once.

The seeds' "Default throughput selection": static preflight does not prove
backend legality, so the selected candidate runs through lowering, allocation
and verification (`raptor_cp.emit.program`). A candidate-specific resource
failure (`BackendResourceError`: local memory, event registers, 32-bit fields)
discards that candidate, records the rejection and selects again among the
remaining costed candidates with the same policy, the first remaining one
being the reference; each candidate is tried at most once and no constraint is
relaxed. Any other failure (a deadlock, a bug) stops at once. When every
candidate fails, `BackendExhaustedError` lists each attempt and its cause
(``backend_attempts`` in ``reports/pipeline_selection.json``).

`costed_candidates` is the one seam between selection and the backend: it
lists the candidates selection has costed, in the order its policy prefers
them. The selection of `raptor_cp.pipeline.initial` costs one candidate, the
initial partition, so today that list has one entry and a rejection ends the
compile; the bounded refinement (issue #11) will list every evaluated
schedule here and pass its own policy as ``select``.

Time ``O(C²)`` policy calls and at most ``C`` lowerings for ``C`` candidates.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from raptor_cp.emit.allocate import BackendResourceError
from raptor_cp.errors import NotFoundWithinBudgetError

if TYPE_CHECKING:
    from raptor_cp.pipeline.plan import PipelinePlan
    from raptor_cp.problems import PipelineSolution

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class Candidate(Generic[T]):
    """A costed candidate: its index in the selection report, a label, and the schedule."""

    index: int
    label: str
    schedule: T


@dataclass(frozen=True)
class BackendAttempt:
    """One candidate through the backend: ``emitted`` or ``rejected`` with the cause."""

    candidate: int
    label: str
    result: str
    cause: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "candidate": self.candidate,
            "label": self.label,
            "result": self.result,
            "cause": self.cause,
        }


class BackendExhaustedError(NotFoundWithinBudgetError):
    """Every costed candidate failed the backend; ``attempts`` says why, one by one."""

    def __init__(self, message: str, attempts: tuple[BackendAttempt, ...]) -> None:
        super().__init__(message)
        self.attempts = attempts


def costed_candidates(solution: PipelineSolution) -> list[Candidate[PipelinePlan]]:
    """The costed candidates of a pipeline selection, preferred first (module docstring).

    The solution's plan is the selected candidate; today it is the only one.
    """
    assert solution.plan is not None
    return [Candidate(0, "initial partition", solution.plan)]


def first_remaining(remaining: Sequence[Candidate[T]]) -> Candidate[T]:
    """The selection policy of a single costed candidate: the first one left."""
    return remaining[0]


def select_for_backend(
    candidates: Sequence[Candidate[T]],
    lower: Callable[[T], R],
    select: Callable[[Sequence[Candidate[T]]], Candidate[T]] = first_remaining,
) -> tuple[Candidate[T], R, tuple[BackendAttempt, ...]]:
    """Lower the selected candidate; on a resource failure select again (module docstring).

    Returns the candidate that passed, its lowered program and every attempt.
    """
    remaining = list(candidates)
    attempts: list[BackendAttempt] = []
    while remaining:
        chosen = select(remaining)
        try:
            program = lower(chosen.schedule)
        except BackendResourceError as error:
            attempts.append(BackendAttempt(chosen.index, chosen.label, "rejected", str(error)))
            remaining = [c for c in remaining if c.index != chosen.index]
            continue
        attempts.append(BackendAttempt(chosen.index, chosen.label, "emitted"))
        return chosen, program, tuple(attempts)
    causes = "; ".join(f"candidate {a.candidate} ({a.label}): {a.cause}" for a in attempts)
    raise BackendExhaustedError(
        f"no costed candidate passed the backend ({len(attempts)} attempted): {causes}",
        tuple(attempts),
    )
