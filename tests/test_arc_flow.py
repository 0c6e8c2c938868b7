"""Tests of the arc-flow bin-packing model: graph, LP bound, decomposition, CP-SAT optimum."""

from __future__ import annotations

import random

import pytest
from test_bin_packing import optimal_bins

from raptor_cp.errors import InvalidInstanceError
from raptor_cp.heuristics.stage_packing import fewest_cores
from raptor_cp.models.arc_flow import (
    LOSS,
    CpSatArcFlowModel,
    arc_flow_graph,
    arc_flow_lp_bound,
    plain_items,
)
from raptor_cp.models.solve import SolveSettings
from raptor_cp.problems import PackingProblem, Status, check_fewest_cores

MODEL = CpSatArcFlowModel(SolveSettings(5.0, 1))


def plain(sizes: list[int], capacity: int) -> PackingProblem:
    n = len(sizes)
    return PackingProblem((0,) * n, tuple((i,) for i in range(n)), tuple(sizes), n, capacity)


def test_graph_keeps_sizes_non_increasing_along_a_path() -> None:
    # Sizes 5, 3, 3 in bins of 8: 0 -5-> 5, 0 -3-> 3 -3-> 6 and 5 -3-> 8; never 3 then 5.
    graph = arc_flow_graph([3, 5, 3], 8)
    assert (graph.sizes, graph.demand) == ((5, 3), (1, 2))
    item_arcs = [(u, v, j) for u, v, j in graph.arcs if j != LOSS]
    assert item_arcs == [(0, 3, 1), (0, 5, 0), (3, 6, 1), (5, 8, 1)]
    assert [(u, v) for u, v, j in graph.arcs if j == LOSS] == [(3, 8), (5, 8), (6, 8)]


def test_lp_bound_rounds_up_the_gilmore_gomory_value() -> None:
    # Bounds L2 = DFF = 3, optimum 4 (9 + 1, 4 + 4, 4 + 4, 3): the LP value exceeds 3.
    assert arc_flow_lp_bound(arc_flow_graph([9, 4, 4, 4, 4, 3, 1], 10)) == 4
    assert arc_flow_lp_bound(arc_flow_graph([6, 6, 6, 4, 4, 4], 10)) == 3
    assert arc_flow_lp_bound(arc_flow_graph([], 10)) == 0


def test_cpsat_reaches_the_brute_force_optimum_and_checks_it() -> None:
    rng = random.Random(17)
    for _ in range(25):
        capacity = rng.randint(5, 25)
        sizes = [rng.randint(1, capacity) for _ in range(rng.randint(1, 9))]
        problem = plain(sizes, capacity)
        solution = MODEL.solve(problem, lower=0)
        check_fewest_cores(problem, solution)
        assert (solution.objective, solution.status) == (
            optimal_bins(sizes, capacity),
            Status.OPTIMAL,
        )


def test_hint_and_lp_bound_together_skip_the_search() -> None:
    problem = plain([9, 4, 4, 4, 4, 3, 1], 10)
    hint = fewest_cores(problem)
    assert hint.core is not None
    solution = MODEL.solve(problem, lower=3, hint=hint.core)
    assert (solution.objective, solution.bound, solution.details["lp_bound"]) == (4, 4, 4)
    assert solution.status == Status.OPTIMAL


def test_groups_sharing_a_weight_set_are_one_item_and_empty_ones_sit_on_core_0() -> None:
    # Tasks 0 and 2 use weight 0 (6 slots), task 1 weight 1 (6 slots), task 3 none.
    problem = PackingProblem((1,) * 4, ((0,), (1,), (0,), ()), (6, 6), 4, 10)
    assert plain_items(problem) == (((0, 2), (1,), (3,)), (6, 6, 0))
    solution = MODEL.solve(problem, lower=0)
    check_fewest_cores(problem, solution)
    assert solution.objective == 2 and solution.core is not None
    assert solution.core[0] == solution.core[2] and solution.core[3] == 0


def test_too_few_cores_is_proved_infeasible() -> None:
    problem = PackingProblem((0,) * 3, ((0,), (1,), (2,)), (6, 6, 6), 2, 10)
    assert MODEL.solve(problem, lower=0).status == Status.INFEASIBLE


def test_overlapping_weight_sets_are_refused() -> None:
    problem = PackingProblem((0, 0), ((0, 1), (1,)), (2, 2), 2, 4, name="shared")
    with pytest.raises(
        InvalidInstanceError,
        match=r"^shared: weight sets overlap; the arc-flow model needs plain bin packing$",
    ):
        MODEL.solve(problem, lower=0)
