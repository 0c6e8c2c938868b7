"""Problem and solution types shared by the heuristics and the CP-SAT models.

A heuristic and its CP-SAT twin take the same frozen problem object and return
the same solution type, which `raptor_cp.check` validates and
`raptor_cp.evaluate` scores: an audit compares like with like.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import ClassVar, Protocol

from raptor_cp.errors import InvalidInstanceError, ProvedInfeasibleError
from raptor_cp.graph import ComputeGraph
from raptor_cp.schedule import Schedule
from raptor_cp.targets.base import SchedulingTarget


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


class HasGap:
    """Mixin of every solution type: the relative gap between its objective and bound."""

    objective: int | None
    bound: int | None

    @property
    def gap(self) -> float | None:
        """``|objective - bound| / |objective|`` (see `relative_gap`)."""
        return relative_gap(self.objective, self.bound)


@dataclass(frozen=True)
class LatencyProblem:
    """Schedule every task of ``graph`` on the cores of ``target`` to minimise makespan."""

    graph: ComputeGraph
    target: SchedulingTarget

    def __post_init__(self) -> None:
        if self.graph.core_cost is not None and self.graph.core_cost.shape[1] != self.target.cores:
            raise InvalidInstanceError(
                f"{self.graph.name}: per-core costs for {self.graph.core_cost.shape[1]} cores "
                f"but target {self.target.name} has {self.target.cores}"
            )
        capacities = [self.target.capacity(p) for p in range(self.target.cores)]
        self.graph.validate(capacities)
        slots = self.graph.distinct_weight_slots()
        if slots > sum(capacities):
            raise ProvedInfeasibleError(
                f"{self.graph.name}: one copy of every resident weight needs {slots} slots "
                f"but {self.target.name} holds {sum(capacities)} in {self.target.cores} cores "
                f"(at least {-(-slots // max(capacities))} cores of {max(capacities)} needed)"
            )


@dataclass(frozen=True)
class LatencySolution(HasGap):
    """What a latency solver returns: a schedule (if found) with its quality evidence."""

    schedule: Schedule | None
    status: Status
    solver: str
    objective: int | None = None
    """Makespan in ns of ``schedule`` as `evaluate` computes it."""
    bound: int | None = None
    """A proved lower bound on the optimal makespan, when the solver has one."""
    wall_s: float = 0.0
    details: dict[str, object] = field(default_factory=dict)


class LatencySolver(Protocol):
    """A latency scheduler: a small frozen dataclass whose fields are its settings."""

    name: ClassVar[str]

    def solve(self, problem: LatencyProblem) -> LatencySolution: ...
