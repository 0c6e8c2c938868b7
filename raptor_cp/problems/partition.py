"""The partition problem of pipeline mode: ordered groups into contiguous stages.

`PartitionProblem` cuts ordered operation groups into at most ``max_stages``
contiguous stages with integer core budgets (>= 1 each, total <= ``cores``),
minimising the maximum stage cost read from packing-cost curves -- or, with a
``stage_memory`` term, the larger of that maximum and the memory demand summed
over the stages (the pipeline selection's cheap proxy,
`raptor_cp.pipeline.proxy`: shared-memory service is serialized, so it adds up
over stages instead of taking their maximum). The prefix DP
(`raptor_cp.heuristics.prefix_dp`) and the CP-SAT model (`raptor_cp.models.partition`)
return `PartitionSolution`, which `check_partition` validates.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from raptor_cp.errors import InvalidInstanceError, ScheduleViolationError
from raptor_cp.problems.base import Solution

StageCost = Callable[[int, int, int], "int | None"]
"""``stage_cost(first, stop, cores)``: cost of groups ``[first, stop)`` on ``cores`` cores,
or None when no packing is available."""
StageMemory = Callable[[int, int], int]
"""``stage_memory(first, stop)``: the memory demand groups ``[first, stop)`` add as a stage."""


@dataclass(frozen=True, eq=False)
class PartitionProblem:
    """Ordered groups into contiguous stages with core budgets, minimising the max stage cost.

    ``stage_cost`` must be deterministic; it is usually backed by ordered-packing
    curves and cached by the caller.
    """

    num_groups: int
    cores: int
    max_stages: int
    stage_cost: StageCost
    name: str = "partition"
    stage_memory: StageMemory | None = None
    """Optional additive term: the objective is ``max(max stage cost, sum of memory)``."""

    def objective(self, stages: Sequence[Stage], costs: Sequence[int]) -> int:
        """The objective of ``stages`` whose stage costs are ``costs``."""
        worst = max(costs)
        if self.stage_memory is None:
            return worst
        return max(worst, sum(self.stage_memory(s.first, s.stop) for s in stages))

    def __post_init__(self) -> None:
        if self.num_groups < 1:
            raise InvalidInstanceError(f"{self.name}: no groups to partition")
        if self.max_stages < 1:
            raise InvalidInstanceError(f"{self.name}: pipeline depth must be >= 1")
        if self.cores < 1:
            raise InvalidInstanceError(f"{self.name}: needs at least one core")


@dataclass(frozen=True)
class Stage:
    """Groups ``[first, stop)`` on ``cores`` cores."""

    first: int
    stop: int
    cores: int


@dataclass(frozen=True)
class PartitionSolution(Solution):
    """Stages in order (or None); ``objective`` is the maximum stage cost."""

    stages: tuple[Stage, ...] | None


def check_partition(problem: PartitionProblem, solution: PartitionSolution) -> None:
    """Validate stages: contiguous cover of every group, budgets >= 1, totals, objective."""
    if solution.stages is None:
        return
    stages = solution.stages
    if not stages or len(stages) > problem.max_stages:
        raise ScheduleViolationError(
            f"{problem.name}: {len(stages)} stages, allowed 1..{problem.max_stages}"
        )
    expected = 0
    for index, stage in enumerate(stages):
        if stage.first != expected or stage.stop <= stage.first:
            raise ScheduleViolationError(
                f"{problem.name}: stage {index} covers groups [{stage.first}, {stage.stop}), "
                f"expected a non-empty range starting at {expected}"
            )
        if stage.cores < 1:
            raise ScheduleViolationError(f"{problem.name}: stage {index} has no core")
        expected = stage.stop
    if expected != problem.num_groups:
        raise ScheduleViolationError(
            f"{problem.name}: stages cover {expected} of {problem.num_groups} groups"
        )
    total = sum(stage.cores for stage in stages)
    if total > problem.cores:
        raise ScheduleViolationError(
            f"{problem.name}: stages use {total} cores, only {problem.cores} exist"
        )
    costs = [problem.stage_cost(s.first, s.stop, s.cores) for s in stages]
    if any(cost is None for cost in costs):
        index = costs.index(None)
        raise ScheduleViolationError(
            f"{problem.name}: stage {index} has no available packing on {stages[index].cores} cores"
        )
    worst = problem.objective(stages, [int(cost) for cost in costs if cost is not None])
    if solution.objective is not None and solution.objective != worst:
        raise ScheduleViolationError(
            f"{problem.name}: reported objective {solution.objective} but the stages give {worst}"
        )
