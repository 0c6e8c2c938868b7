"""The packing problems of pipeline mode: one stage's tasks onto identical cores.

* `PackingProblem`: put one stage's tasks onto ``cores`` identical cores so that
  each core's distinct resident weights fit its capacity, minimising the maximum
  per-core demand (serial compute plus incident same-stage transfer time).
* `FewestCoresProblem`: the same tasks onto as few of those cores as their
  weights allow (loads and edges ignored). Plain one-dimensional bin packing is
  the case where every task has its own weight.

The heuristics (`heuristics/ordered_packing.py`, `heuristics/stage_packing.py`)
and the CP-SAT models (`models/packing.py`) take these same objects and return
the same solution types, which `check_packing` and `check_fewest_cores` validate.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from raptor_cp.errors import InvalidInstanceError, ScheduleViolationError
from raptor_cp.problems.base import Solution


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
class PackingSolution(Solution):
    """A core per task (or None when nothing was found); ``objective`` is the maximum
    per-core demand (compute plus incident transfers), as `packing_demand` says."""

    core: tuple[int, ...] | None


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


@dataclass(frozen=True)
class FewestCoresProblem(PackingProblem):
    """The fewest of ``cores`` cores whose capacity holds the tasks' distinct weights.

    Same fields as `PackingProblem`; loads and edges play no part. Plain bin
    packing of item sizes ``s_i`` into bins of ``capacity`` is the instance where
    task ``i`` has its own weight of size ``s_i`` (`bin_packing`).
    """

    @classmethod
    def bin_packing(
        cls, sizes: tuple[int, ...], capacity: int, name: str = "bin-packing"
    ) -> FewestCoresProblem:
        """Plain bin packing: task ``i`` with its own weight of ``sizes[i]``, zero load, and
        one core per item (at least one), so that any packing fits.

        >>> FewestCoresProblem.bin_packing((6, 4), 10).task_weights
        ((0,), (1,))
        """
        n = len(sizes)
        return cls((0,) * n, tuple((i,) for i in range(n)), sizes, max(1, n), capacity, name=name)


@dataclass(frozen=True)
class FewestCoresSolution(Solution):
    """A core per task using ``objective`` distinct cores (None when nothing was found)."""

    core: tuple[int, ...] | None


def check_fewest_cores(problem: FewestCoresProblem, solution: FewestCoresSolution) -> None:
    """`check_packing` on ``problem`` (capacities, core ids) plus the reported core count."""
    check_packing(
        problem, PackingSolution(solution.core, status=solution.status, solver=solution.solver)
    )
    if solution.core is not None and len(set(solution.core)) != solution.objective:
        raise ScheduleViolationError(
            f"{problem.name}: reported {solution.objective} cores but the assignment uses "
            f"{len(set(solution.core))}"
        )
