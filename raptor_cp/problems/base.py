"""What every problem's solution shares: one status scale, the evidence fields and the gap.

A heuristic and its CP-SAT twin take the same frozen problem object and return
the same solution type (STYLE.md habits 2 and 3): scipy's ``OptimizeResult``
fields, typed, on one status scale. Each problem module subclasses `Solution`
with the one field its answer needs (a schedule, a core per task, stages...).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Status(enum.Enum):
    """One status scale for every solver (heuristic or exact)."""

    OPTIMAL = "optimal"
    """Proved optimal (objective == bound)."""
    FEASIBLE = "feasible"
    """A solution with a gap to the bound (time limit, or a heuristic)."""
    NOT_FOUND = "not_found"
    """No solution within the search budget or time limit; nothing is proved."""
    INFEASIBLE = "infeasible"
    """Proved that no solution exists (exact solvers only)."""


def relative_gap(objective: int | None, bound: int | None) -> float | None:
    """``|objective - bound| / |objective|`` (0 when the objective is 0), None when unknown."""
    if objective is None or bound is None:
        return None
    if objective == 0:
        return 0.0
    return abs(objective - bound) / abs(objective)


@dataclass(frozen=True, kw_only=True)
class Solution:
    """The evidence every solver reports, whatever the problem.

    Subclasses add their answer as their first (positional) field; these fields
    are keyword-only.
    """

    status: Status
    solver: str
    """Registry name of the solver that produced it."""
    objective: int | None = None
    """The objective value of the answer, recomputed by the problem's checker."""
    bound: int | None = None
    """A proved bound on the optimum (lower for minimisation), when the solver has one."""
    wall_s: float = 0.0
    details: dict[str, object] = field(default_factory=dict)

    @property
    def gap(self) -> float | None:
        """``|objective - bound| / |objective|`` (see `relative_gap`)."""
        return relative_gap(self.objective, self.bound)
