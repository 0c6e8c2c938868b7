"""Every problem raptor-cp solves, its solution type, and one `check` for all of them.

A heuristic and its CP-SAT twin take the same frozen problem object and return
the same solution type (a `Solution` subclass); `check` validates any solution
against its problem with the problem's own independent checker, whoever
produced it (STYLE.md habit 6).

| problem | solution | checker |
|---|---|---|
| `LatencyProblem` | `LatencySolution` | `check_latency` |
| `PackingProblem` | `PackingSolution` | `check_packing` |
| `FewestCoresProblem` | `FewestCoresSolution` | `check_fewest_cores` |
| `PartitionProblem` | `PartitionSolution` | `check_partition` |
| `JointProblem` | `JointSolution` | `check_joint` |
| `PipelineProblem` | `PipelineSolution` | `check_pipeline` |
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from raptor_cp.problems.base import Solution, Status, relative_gap
from raptor_cp.problems.joint import JointProblem, JointSolution, check_joint
from raptor_cp.problems.latency import LatencyProblem, LatencySolution, check_latency
from raptor_cp.problems.packing import (
    FewestCoresProblem,
    FewestCoresSolution,
    PackingProblem,
    PackingSolution,
    check_fewest_cores,
    check_packing,
    packing_demand,
)
from raptor_cp.problems.partition import (
    PartitionProblem,
    PartitionSolution,
    Stage,
    StageCost,
    check_partition,
)
from raptor_cp.problems.pipeline import PipelineProblem, PipelineSolution, check_pipeline

CHECKERS: dict[type[Solution], tuple[type, Callable[[Any, Any], None]]] = {
    LatencySolution: (LatencyProblem, check_latency),
    PackingSolution: (PackingProblem, check_packing),
    FewestCoresSolution: (FewestCoresProblem, check_fewest_cores),
    PartitionSolution: (PartitionProblem, check_partition),
    JointSolution: (JointProblem, check_joint),
    PipelineSolution: (PipelineProblem, check_pipeline),
}
"""Solution type → (the problem type it answers, its checker)."""


def check(problem: object, solution: Solution) -> None:
    """Validate ``solution`` against ``problem`` with the problem's own checker.

    Raises
    ------
    ScheduleViolationError
        When the solution breaks a rule of its problem (the message names the
        task, core or stage and the rule).
    TypeError
        When ``solution`` is not a solution of ``problem``'s type (a programming error).
    """
    try:
        problem_type, checker = CHECKERS[type(solution)]
    except KeyError:
        raise TypeError(f"no checker for {type(solution).__name__}") from None
    if type(problem) is not problem_type:
        raise TypeError(
            f"{type(solution).__name__} answers a {problem_type.__name__}, "
            f"not a {type(problem).__name__}"
        )
    checker(problem, solution)


__all__ = [
    "CHECKERS",
    "FewestCoresProblem",
    "FewestCoresSolution",
    "JointProblem",
    "JointSolution",
    "LatencyProblem",
    "LatencySolution",
    "PackingProblem",
    "PackingSolution",
    "PartitionProblem",
    "PartitionSolution",
    "PipelineProblem",
    "PipelineSolution",
    "Solution",
    "Stage",
    "StageCost",
    "Status",
    "check",
    "check_fewest_cores",
    "check_joint",
    "check_latency",
    "check_packing",
    "check_partition",
    "check_pipeline",
    "packing_demand",
    "relative_gap",
]
