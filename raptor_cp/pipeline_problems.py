"""Problem and solution types of pipeline (throughput) mode.

Two problems sit under `raptor-cp compile --pipeline N` and its audits:

* `PackingProblem`: put one stage's tasks onto ``cores`` identical cores so that
  each core's distinct resident weights fit its capacity, minimising the maximum
  per-core demand (serial compute plus incident same-stage transfer time).
  Plain bin packing is the special case where every task has its own weight
  and loads are zero (the feasibility variant: fewest cores).
* `PartitionProblem`: cut ordered operation groups into at most ``max_stages``
  contiguous stages with integer core budgets (>= 1 each, total <= ``cores``),
  minimising the maximum stage cost read from packing-cost curves.

The heuristics (`heuristics/ordered_packing.py`, `heuristics/prefix_dp.py`) and
the CP-SAT models (`models/packing.py`, `models/partition.py`) take these same
objects and return the same solution types, which `check_packing` and
`check_partition` validate.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from raptor_cp.errors import InvalidInstanceError, ScheduleViolationError
from raptor_cp.problems import HasGap, Status


@dataclass(frozen=True)
class PackingProblem:
    """Tasks with loads and resident weights onto ``cores`` cores of ``capacity`` slots.

    Parameters
    ----------
    loads:
        Serial compute time (ns) of each task.
    task_weights:
        Weight ids each task needs resident on its core.
    weight_size:
        Slots of each weight.
    cores, capacity:
        Number of identical cores and the slots each holds.
    edges:
        ``(a, b, ns)`` same-stage transfers: when ``a`` and ``b`` sit on different
        cores, both cores are charged ``ns`` (the seeds' incident-transfer proxy).
    name:
        For messages and audit rows.
    """

    loads: tuple[int, ...]
    task_weights: tuple[tuple[int, ...], ...]
    weight_size: tuple[int, ...]
    cores: int
    capacity: int
    edges: tuple[tuple[int, int, int], ...] = ()
    name: str = "packing"

    def __post_init__(self) -> None:
        n = len(self.loads)
        if len(self.task_weights) != n:
            raise InvalidInstanceError(
                f"{self.name}: {len(self.task_weights)} weight lists for {n} tasks"
            )
        if self.cores < 1 or self.capacity < 0:
            raise InvalidInstanceError(
                f"{self.name}: needs >= 1 core and a non-negative capacity, got "
                f"{self.cores} cores of {self.capacity} slots"
            )
        if any(load < 0 for load in self.loads):
            raise InvalidInstanceError(f"{self.name}: negative task load")
        if any(size < 0 for size in self.weight_size):
            raise InvalidInstanceError(f"{self.name}: negative weight size")
        for t, weights in enumerate(self.task_weights):
            for w in weights:
                if not 0 <= w < len(self.weight_size):
                    raise InvalidInstanceError(f"{self.name}: task {t} uses unknown weight {w}")
            need = sum(self.weight_size[w] for w in set(weights))
            if need > self.capacity:
                raise InvalidInstanceError(
                    f"{self.name}: oversized task {t} needs {need} slots but a core holds "
                    f"{self.capacity}"
                )
        for a, b, ns in self.edges:
            if not (0 <= a < n and 0 <= b < n) or ns < 0:
                raise InvalidInstanceError(f"{self.name}: bad edge ({a}, {b}, {ns})")

    @property
    def num_tasks(self) -> int:
        return len(self.loads)

    @cached_property
    def distinct_weight_slots(self) -> int:
        """Slots of one copy of every weight some task uses."""
        used = {w for weights in self.task_weights for w in weights}
        return sum(self.weight_size[w] for w in sorted(used))

    @property
    def cores_lower_bound(self) -> int:
        """Distinct-weight union / capacity, rounded up (at least 1 for a non-empty stage)."""
        if self.capacity == 0:
            return 1
        return max(1 if self.loads else 0, -(-self.distinct_weight_slots // self.capacity))


@dataclass(frozen=True)
class PackingSolution(HasGap):
    """A core per task (or None when nothing was found) with its quality evidence."""

    core: tuple[int, ...] | None
    status: Status
    solver: str
    objective: int | None = None
    """Maximum per-core demand (compute plus incident transfers), as `packing_demand` says."""
    bound: int | None = None
    wall_s: float = 0.0
    details: dict[str, object] = field(default_factory=dict)


def packing_demand(problem: PackingProblem, core: tuple[int, ...]) -> tuple[int, ...]:
    """Per-core demand of an assignment: serial compute plus incident transfers."""
    demand = [0] * problem.cores
    for task, p in enumerate(core):
        demand[p] += problem.loads[task]
    for a, b, ns in problem.edges:
        if core[a] != core[b]:
            demand[core[a]] += ns
            demand[core[b]] += ns
    return tuple(demand)


def check_packing(problem: PackingProblem, solution: PackingSolution) -> None:
    """Validate an assignment: every task on a real core, capacity respected, objective exact."""
    if solution.core is None:
        return
    if len(solution.core) != problem.num_tasks:
        raise ScheduleViolationError(
            f"{problem.name}: {len(solution.core)} cores for {problem.num_tasks} tasks"
        )
    resident: list[set[int]] = [set() for _ in range(problem.cores)]
    for task, p in enumerate(solution.core):
        if not 0 <= p < problem.cores:
            raise ScheduleViolationError(f"{problem.name}: task {task} on unknown core {p}")
        resident[p].update(problem.task_weights[task])
    for p, weights in enumerate(resident):
        used = sum(problem.weight_size[w] for w in weights)
        if used > problem.capacity:
            raise ScheduleViolationError(
                f"{problem.name}: core {p} holds {used} weight slots, capacity {problem.capacity}"
            )
    demand = max(packing_demand(problem, solution.core), default=0)
    if solution.objective is not None and solution.objective != demand:
        raise ScheduleViolationError(
            f"{problem.name}: reported objective {solution.objective} but the assignment's "
            f"maximum demand is {demand}"
        )


StageCost = Callable[[int, int, int], "int | None"]
"""``stage_cost(first, stop, cores)``: cost of groups ``[first, stop)`` on ``cores`` cores,
or None when no packing is available."""


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
class PartitionSolution(HasGap):
    """Stages in order (or None) with quality evidence."""

    stages: tuple[Stage, ...] | None
    status: Status
    solver: str
    objective: int | None = None
    """Maximum stage cost."""
    bound: int | None = None
    wall_s: float = 0.0
    details: dict[str, object] = field(default_factory=dict)


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
    worst = max(int(cost) for cost in costs if cost is not None)
    if solution.objective is not None and solution.objective != worst:
        raise ScheduleViolationError(
            f"{problem.name}: reported objective {solution.objective} but the worst stage "
            f"costs {worst}"
        )
