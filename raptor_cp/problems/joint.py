"""The joint partition + packing problem: stage cuts and every task's core decided together.

The production path splits pipeline mode in two: packing curves per stage and a
partition over those curves. `JointProblem` states the undivided question on
tiny instances, so that the CP-SAT joint model (`raptor_cp.models.joint_partition`)
can measure what the split costs (`raptor_cp.audit.joint`). `check_joint`
validates a `JointSolution` with the packing and partition checkers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from raptor_cp.errors import InvalidInstanceError, ScheduleViolationError
from raptor_cp.problems.base import Solution
from raptor_cp.problems.packing import (
    PackingProblem,
    PackingSolution,
    check_packing,
    packing_demand,
)
from raptor_cp.problems.partition import (
    PartitionProblem,
    PartitionSolution,
    Stage,
    check_partition,
)

Task = tuple[int, tuple[int, ...]]
"""``(load ns, weight ids)`` of one task of a `JointProblem`."""


@dataclass(frozen=True)
class JointProblem:
    """Ordered groups of tasks onto ``cores`` cores cut into at most ``max_stages`` stages.

    Each core belongs to at most one stage; a stage's tasks sit on its cores,
    whose distinct weights must fit ``capacity``; the objective is the maximum
    per-core demand: compute load plus, for each edge ``(a, b, ns)`` whose tasks
    are in the same stage on different cores, ``ns`` on both cores (the seeds'
    incident same-stage transfer proxy, as `PackingProblem` charges it; a
    cross-stage edge is not part of any stage's cost). Tasks are numbered in
    group order (group 0's first).
    """

    groups: tuple[tuple[Task, ...], ...]
    weight_size: tuple[int, ...]
    cores: int
    capacity: int
    max_stages: int
    edges: tuple[tuple[int, int, int], ...] = ()
    name: str = "joint"

    def __post_init__(self) -> None:
        if not self.groups or any(not group for group in self.groups):
            raise InvalidInstanceError(f"{self.name}: needs groups, each with at least one task")
        if self.max_stages < 1:
            raise InvalidInstanceError(f"{self.name}: pipeline depth must be >= 1")
        self.segment_packing(0, len(self.groups), self.cores)  # validates cores, tasks, edges

    @cached_property
    def group_start(self) -> tuple[int, ...]:
        """Index of each group's first task, then the task count."""
        starts = [0]
        for group in self.groups:
            starts.append(starts[-1] + len(group))
        return tuple(starts)

    @cached_property
    def tasks(self) -> tuple[Task, ...]:
        """Every task, in group order."""
        return tuple(task for group in self.groups for task in group)

    @cached_property
    def group_of(self) -> tuple[int, ...]:
        """The group of each task."""
        return tuple(g for g, group in enumerate(self.groups) for _ in group)

    @property
    def num_tasks(self) -> int:
        return self.group_start[-1]

    def segment_packing(self, first: int, stop: int, cores: int) -> PackingProblem:
        """The packing problem of groups ``[first, stop)`` on ``cores`` cores (its edges)."""
        low, high = self.group_start[first], self.group_start[stop]
        tasks = self.tasks[low:high]
        return PackingProblem(
            loads=tuple(load for load, _ in tasks),
            task_weights=tuple(weights for _, weights in tasks),
            weight_size=self.weight_size,
            cores=cores,
            capacity=self.capacity,
            edges=tuple(
                (a - low, b - low, ns)
                for a, b, ns in self.edges
                if low <= min(a, b) and max(a, b) < high
            ),
            name=f"{self.name}[{first}:{stop}]",
        )

    def partition_problem(self, pack: Callable[[PackingProblem], int | None]) -> PartitionProblem:
        """The partition over ``pack``'s curves: a segment's cost is ``pack`` of its packing."""
        return PartitionProblem(
            num_groups=len(self.groups),
            cores=self.cores,
            max_stages=self.max_stages,
            stage_cost=lambda first, stop, k: pack(self.segment_packing(first, stop, k)),
            name=self.name,
        )


@dataclass(frozen=True)
class JointSolution(Solution):
    """Stages and a core per task; stage ``i`` owns the next ``stages[i].cores`` cores.

    ``objective`` is the maximum per-core demand (`joint_demand`).
    """

    stages: tuple[Stage, ...] | None
    core: tuple[int, ...] | None


def check_joint(problem: JointProblem, solution: JointSolution) -> None:
    """Validate stages (as `check_partition` does), core blocks, capacities and the objective."""
    if solution.stages is None:
        return
    core = solution.core
    if core is None or len(core) != problem.num_tasks:
        raise ScheduleViolationError(f"{problem.name}: needs one core for each task")
    block: dict[int, int] = {}
    running = 0
    for stage in solution.stages:
        block[stage.first] = running
        running += stage.cores

    def stage_demand(first: int, stop: int, cores: int) -> int:
        """Max core demand of one stage; `check_partition` calls it once the stages are valid."""
        base = block[first]
        local = []
        for t in range(problem.group_start[first], problem.group_start[stop]):
            if not base <= core[t] < base + cores:
                raise ScheduleViolationError(
                    f"{problem.name}: task {t} on core {core[t]}, outside its stage's cores "
                    f"[{base}, {base + cores})"
                )
            local.append(core[t] - base)
        packing = problem.segment_packing(first, stop, cores)
        check_packing(
            packing, PackingSolution(tuple(local), status=solution.status, solver=solution.solver)
        )
        return max(packing_demand(packing, tuple(local)))

    partition = PartitionProblem(
        len(problem.groups), problem.cores, problem.max_stages, stage_demand, problem.name
    )
    check_partition(
        partition,
        PartitionSolution(
            solution.stages,
            status=solution.status,
            solver=solution.solver,
            objective=solution.objective,
        ),
    )


def joint_demand(problem: JointProblem, group_stage: list[int], core: tuple[int, ...]) -> int:
    """Maximum per-core demand of a placement, given each group's stage index."""
    demand = [0] * problem.cores
    for (load, _), p in zip(problem.tasks, core, strict=True):
        demand[p] += load
    for a, b, ns in problem.edges:
        same_stage = group_stage[problem.group_of[a]] == group_stage[problem.group_of[b]]
        if same_stage and core[a] != core[b]:
            demand[core[a]] += ns
            demand[core[b]] += ns
    return max(demand)
