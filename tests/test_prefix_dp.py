"""Tests of the prefix-DP initial partition against brute-force enumeration."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
import pytest

from raptor_cp.errors import InvalidConfigError
from raptor_cp.heuristics.prefix_dp import PrefixDpPartitioner, SpareGrid, initial_partition
from raptor_cp.problems import PartitionProblem, Stage, Status, check_partition

CostFn = Callable[[int, int, int], "int | None"]


def work_cost(
    work: list[int], slots: list[int], capacity: int, penalty: dict[tuple[int, int, int], int]
) -> CostFn:
    """``ceil(work / cores) + penalty``; None when the cores cannot hold the groups' weights."""

    def cost(first: int, stop: int, cores: int) -> int | None:
        if cores * capacity < sum(slots[first:stop]):
            return None
        return -(-sum(work[first:stop]) // cores) + penalty.get((first, stop, cores), 0)

    return cost


def random_problem(seed: int, max_cores: int = 8) -> PartitionProblem:
    """3-6 groups, 1-``max_cores`` cores, depth 1-4, capacity limits and a non-monotone penalty."""
    rng = np.random.default_rng(seed)
    groups = int(rng.integers(3, 7))
    cores = int(rng.integers(1, max_cores + 1))
    work = rng.integers(1, 60, groups).tolist()
    slots = rng.integers(0, 5, groups).tolist()
    penalty = {
        (f, t, k): int(rng.integers(0, 25))
        for f in range(groups)
        for t in range(f + 1, groups + 1)
        for k in range(1, cores + 1)
        if rng.random() < 0.3
    }
    return PartitionProblem(
        num_groups=groups,
        cores=cores,
        max_stages=int(rng.integers(1, 5)),
        stage_cost=work_cost(work, slots, 4, penalty),
        name=f"random{seed}",
    )


def brute_force_optimum(problem: PartitionProblem) -> int | None:
    """Least maximum stage cost over every contiguous partition and every budget vector."""
    groups, cores = problem.num_groups, problem.cores
    best = None
    for s in range(1, min(problem.max_stages, groups, cores) + 1):
        for cuts in itertools.combinations(range(1, groups), s - 1):
            bounds = (0, *cuts, groups)
            ranges = list(itertools.pairwise(bounds))
            for budgets in itertools.product(range(1, cores - s + 2), repeat=s):
                if sum(budgets) > cores:
                    continue
                values = [
                    problem.stage_cost(f, t, k) for (f, t), k in zip(ranges, budgets, strict=True)
                ]
                if None in values:
                    continue
                stages = [Stage(f, t, k) for (f, t), k in zip(ranges, budgets, strict=True)]
                value = problem.objective(stages, values)  # type: ignore[arg-type]
                if best is None or value < best:
                    best = value
    return best


@pytest.mark.parametrize("seed", range(60))
def test_exact_grid_matches_brute_force(seed: int) -> None:
    problem = random_problem(seed)
    solution = initial_partition(problem)
    expected = brute_force_optimum(problem)
    assert solution.details["grid_exact"] is True  # P <= 17 with 16 units of one core
    if expected is None:
        assert solution.stages is None and solution.status == Status.NOT_FOUND
        return
    check_partition(problem, solution)
    assert solution.objective == expected
    assert solution.status == Status.OPTIMAL and solution.bound == expected


@pytest.mark.parametrize("seed", range(6))
def test_quantized_grid_is_never_better_than_the_optimum(seed: int) -> None:
    base = random_problem(100 + seed)
    problem = PartitionProblem(base.num_groups, 23, 3, base.stage_cost, base.name)
    quantized = initial_partition(problem)
    exact = initial_partition(problem, spare_units=problem.cores - 1)
    expected = brute_force_optimum(problem)
    check_partition(problem, quantized)
    check_partition(problem, exact)
    stages = min(3, problem.num_groups)
    assert quantized.details["unit_cores"] == -(-(23 - stages) // 16) == 2
    assert quantized.status == Status.FEASIBLE and quantized.bound is None
    assert exact.status == Status.OPTIMAL
    assert exact.objective == expected
    assert quantized.objective is not None and expected is not None
    assert quantized.objective >= expected
    assert quantized.details["grid_objective"] >= quantized.objective


@pytest.mark.parametrize("seed", range(30))
def test_coarse_grid_finds_a_partition_whenever_one_exists(seed: int) -> None:
    # One spare unit of up to 7 cores: the grid often has no feasible state and the
    # completion must still find a partition, never better than the optimum.
    problem = random_problem(200 + seed)
    solution = initial_partition(problem, spare_units=1)
    expected = brute_force_optimum(problem)
    check_partition(problem, solution)
    if expected is None:
        assert solution.stages is None
        return
    assert solution.objective is not None and solution.objective >= expected
    assert solution.status == (Status.OPTIMAL if problem.cores <= 2 else Status.FEASIBLE)


def test_spare_grid_reserves_one_core_per_legal_stage() -> None:
    problem = PartitionProblem(10, 40, 4, lambda f, t, k: 1)
    grid = SpareGrid.of(problem, 16)
    assert (grid.stages, grid.unit, grid.units) == (4, 3, 16)  # ceil(36 / 16) = 3
    assert grid.max_units(4) == 12  # 4 + 3 * 12 = 40
    assert grid.max_units(1) == 13  # 1 + 3 * 13 = 40, within 16 units
    assert grid.budget(2) == 7
    assert not grid.exact
    assert SpareGrid.of(PartitionProblem(2, 3, 5, lambda f, t, k: 1), 16).stages == 2
    # No spare core at full depth: fewer active stages still get one-core units.
    no_spare = SpareGrid.of(PartitionProblem(2, 2, 2, lambda f, t, k: 1), 16)
    assert (no_spare.unit, no_spare.max_units(2), no_spare.max_units(1)) == (1, 0, 1)
    assert no_spare.exact
    assert SpareGrid.of(PartitionProblem(2, 2, 2, lambda f, t, k: 1), 0).max_units(1) == 0


def test_empty_grid_falls_back_to_feasibility_completion() -> None:
    # Each group needs 6 cores' capacity; 24 cores, depth 4: spare 20 in units of 2, so
    # budgets are odd and every grid partition needs 25+ cores. At their fewest cores two
    # and four stages cost 10 (one stage pays a penalty): the fewer stages win, and the
    # backtracking takes the shortest last stage.
    cost = work_cost([60, 60, 60, 60], [6] * 4, 1, {(0, 4, 24): 5})
    problem = PartitionProblem(4, 24, 4, cost)
    solution = initial_partition(problem)
    check_partition(problem, solution)
    assert solution.details["path"] == "completion"
    assert solution.details["grid_objective"] is None
    assert solution.stages == (Stage(0, 3, 18), Stage(3, 4, 6))
    assert solution.objective == 10 == brute_force_optimum(problem)
    assert solution.status == Status.FEASIBLE


def test_completion_minimises_the_cost_at_the_fewest_cores() -> None:
    # Grid budgets are 1 and 3 (unit 2): group 1 is only available on exactly 2 cores.
    def cost(first: int, stop: int, cores: int) -> int | None:
        if first <= 1 < stop and cores != 2:
            return None
        return 10 * (stop - first)

    problem = PartitionProblem(3, 5, 1, cost)
    assert SpareGrid.of(problem, 2).unit == 2
    solution = initial_partition(problem, spare_units=2)
    check_partition(problem, solution)
    assert solution.details["path"] == "completion"
    assert solution.stages == (Stage(0, 3, 2),)


def test_no_available_partition_is_not_found() -> None:
    problem = PartitionProblem(3, 4, 3, lambda first, stop, cores: None)
    solution = initial_partition(problem)
    check_partition(problem, solution)
    assert solution.stages is None and solution.status == Status.NOT_FOUND
    assert solution.details["reason"] == "no partition whose stages all have an available cost"


def test_ties_take_the_fewest_active_stages() -> None:
    # Cost is the group count whatever the cores: one stage of 3 groups costs 3, as
    # the best three-stage split can only cost 1; a flat cost 5 makes every count tie.
    problem = PartitionProblem(3, 6, 3, lambda first, stop, cores: 5)
    solution = initial_partition(problem)
    assert solution.stages == (Stage(0, 3, 1),)
    assert solution.details["idle_cores"] == 5


def test_more_stages_win_when_they_lower_the_worst_stage() -> None:
    problem = PartitionProblem(4, 4, 4, lambda first, stop, cores: (stop - first) * 10)
    solution = initial_partition(problem)
    assert solution.stages == tuple(Stage(i, i + 1, 1) for i in range(4))
    assert solution.objective == 10


def test_leftover_cores_go_to_the_bottleneck() -> None:
    # Depth 1: 19 spare cores in units of 2 leave the grid's single stage 19 cores
    # (ceil(200 / 19) = 11); the minimax budgets hand it the idle 20th core.
    problem = PartitionProblem(2, 20, 1, work_cost([100, 100], [0, 0], 1, {}))
    solution = initial_partition(problem)
    assert solution.stages == (Stage(0, 2, 20),)
    assert solution.objective == 10
    assert solution.details["grid_objective"] == 11


def test_each_stage_cost_triple_is_queried_once() -> None:
    calls: list[tuple[int, int, int]] = []
    base = random_problem(7)

    def counted(first: int, stop: int, cores: int) -> int | None:
        calls.append((first, stop, cores))
        return base.stage_cost(first, stop, cores)

    problem = PartitionProblem(base.num_groups, base.cores, base.max_stages, counted)
    solution = initial_partition(problem)
    assert len(calls) == len(set(calls)) == solution.details["stage_cost_queries"]


def test_solver_wrapper_passes_its_setting() -> None:
    problem = PartitionProblem(4, 24, 4, work_cost([60] * 4, [6] * 4, 1, {}))
    assert PrefixDpPartitioner(spare_units=23).solve(problem).details["path"] == "grid"


def test_negative_spare_units_are_rejected() -> None:
    problem = PartitionProblem(2, 2, 2, lambda first, stop, cores: 1)
    with pytest.raises(InvalidConfigError, match=r"^prefix DP spare_units must be >= 0, got -1$"):
        initial_partition(problem, spare_units=-1)
