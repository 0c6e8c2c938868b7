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
them (`raptor_cp.pipeline.selection.PipelineSelection.backend_order`: the
2.1 % rule applied again to the remaining candidates, so the backend takes
them first to last with `first_remaining`). The ``beam`` solver lists every
schedule it evaluated with the queue model; the ``initial`` solver costs one
candidate, so there a rejection ends the compile. Candidates are ranked by
their queue estimates (the seeds' judge), not by the emitted programs':
emission lowers the same realization
(`raptor_cp.pipeline.realize.target_realization`) with the baseline requests
placed rather than priced as one aggregate term, and lowering adds only issue
clocks and rounding (docs/emission.md, the round trip); ranking by emitted
programs would lower up to 32 candidates where one usually suffices.

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

    The first is the solution's plan, the selected candidate.
    """
    assert solution.plan is not None and solution.selection is not None
    return [
        Candidate(c.index, "initial partition" if c.parent is None else c.move, c.plan)
        for c in solution.selection.backend_order()
    ]


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
