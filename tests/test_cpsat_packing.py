"""Tests of the CP-SAT packing models against brute force, the heuristics and known optima."""

from __future__ import annotations

import pathlib
import random

import pytest
from test_stage_packing import brute_force, random_problem, shared_zero_weight

from raptor_cp.errors import RaptorError
from raptor_cp.heuristics.stage_packing import fewest_cores, pack_stage
from raptor_cp.models.arc_flow import LP_PROOF
from raptor_cp.models.packing import SKIPPED, CpSatBinPackingModel, CpSatPackingModel, _add_hint
from raptor_cp.models.solve import SolveSettings, run_cpsat
from raptor_cp.problems import (
    FewestCoresSolution,
    PackingProblem,
    PackingSolution,
    Status,
    check_fewest_cores,
    check_packing,
)

BPP = pathlib.Path(__file__).parent / "data" / "bpp"
EXACT = CpSatPackingModel(settings=SolveSettings(5.0, 1))
BINS = CpSatBinPackingModel(settings=SolveSettings(5.0, 1))


def plain_bin_packing(sizes: list[int], capacity: int, name: str = "bpp") -> PackingProblem:
    n = len(sizes)
    return PackingProblem(
        (0,) * n, tuple((i,) for i in range(n)), tuple(sizes), n, capacity, name=name
    )


def read_bpp(name: str) -> PackingProblem:
    values = [int(x) for x in (BPP / name).read_text().split()]
    return plain_bin_packing(values[2 : 2 + values[0]], values[1], name)


@pytest.mark.parametrize("with_edges", [False, True])
def test_heuristic_is_never_below_the_cpsat_optimum_nor_that_below_the_bound(
    with_edges: bool,
) -> None:
    rng = random.Random(31 + with_edges)
    for _ in range(40):
        problem = random_problem(rng, with_edges)
        best, fewest = brute_force(problem)
        heuristic, exact = pack_stage(problem), EXACT.solve(problem)
        counted, bins = fewest_cores(problem), BINS.solve(problem)
        for solution in (heuristic, exact):
            check_packing(problem, solution)
        for solution in (counted, bins):
            check_fewest_cores(problem, solution)
        if best is None:
            assert exact.status == bins.status == Status.INFEASIBLE
            continue
        assert exact.status == Status.OPTIMAL and exact.objective == best
        assert heuristic.objective is not None and exact.bound is not None
        assert heuristic.objective >= exact.objective >= exact.bound >= heuristic.bound
        assert bins.status == Status.OPTIMAL and bins.objective == fewest
        assert counted.objective is not None and counted.objective >= bins.objective


def test_unhinted_models_reach_the_same_optima() -> None:
    rng = random.Random(33)
    for _ in range(20):
        problem = random_problem(rng, with_edges=True)
        best, fewest = brute_force(problem)
        exact = CpSatPackingModel(settings=SolveSettings(5.0, 1), use_hint=False).solve(problem)
        bins = CpSatBinPackingModel(settings=SolveSettings(5.0, 1), use_hint=False).solve(problem)
        assert exact.objective == best and bins.objective == fewest
        assert exact.details["hint"] == "none"


def test_transfer_terms_are_charged_as_packing_demand() -> None:
    # 2 cores, loads 4 each; the heavy edge 0-3 must stay inside a core, the light
    # edges 0-1 and 2-3 are cut: each core pays 4 + 4 + 1 + 1.
    edges = ((0, 3, 50), (0, 1, 1), (2, 3, 1))
    problem = PackingProblem((4, 4, 4, 4), ((),) * 4, (), 2, 0, edges)
    solution = EXACT.solve(problem)
    assert solution.core is not None and solution.core[0] == solution.core[3]
    assert (solution.objective, solution.status) == (10, Status.OPTIMAL)


def test_shared_weights_cap_the_copies() -> None:
    # Weight 0 (4 slots) fits once per core next to nothing else; its lanes must
    # share the core that holds it although a second core would balance the load.
    weights = ((0,), (0,), (0,), (1,))
    problem = PackingProblem((5, 5, 5, 1), weights, (4, 4), 2, 4)
    solution = EXACT.solve(problem)
    assert (solution.objective, solution.status) == (15, Status.OPTIMAL)


def test_bins_beat_the_shared_weight_construction_on_a_small_instance() -> None:
    # Plain [5, 4, 4, 3, 2, 2] with an empty weight shared by every item: the
    # assignment model (weight sets overlap) finds the 2 bins the constructor misses.
    problem = shared_zero_weight((5, 4, 4, 3, 2, 2))
    heuristic = fewest_cores(problem)
    solution = BINS.solve(problem)
    check_fewest_cores(problem, solution)
    assert heuristic.objective == 3
    assert (solution.objective, solution.bound, solution.status) == (2, 2, Status.OPTIMAL)
    assert solution.details["hint"] == "fewest-cores: 3 cores"
    assert solution.details["formulation"] == "assignment"


def test_arc_flow_proves_what_the_bounds_cannot() -> None:
    # Bounds 3, optimum 4: the hint meets neither L2 nor the DFF bound, the arc-flow
    # LP (its value rounds up to 4) proves the hint optimal without a search.
    problem = plain_bin_packing([9, 4, 4, 4, 4, 3, 1], 10)
    hint = fewest_cores(problem)
    assert (hint.objective, hint.bound) == (4, 3)
    solution = BINS.solve(problem, hint)
    check_fewest_cores(problem, solution)
    assert (solution.objective, solution.bound, solution.status) == (4, 4, Status.OPTIMAL)
    assert solution.details["search"] == LP_PROOF


def test_arc_flow_search_beats_a_weak_hint() -> None:
    problem = plain_bin_packing([5, 4, 4, 3, 2, 2], 10)
    weak = FewestCoresSolution(
        (0, 1, 2, 0, 1, 2), status=Status.FEASIBLE, solver="test", objective=3, bound=2
    )
    solution = BINS.solve(problem, weak)
    check_fewest_cores(problem, solution)
    assert (solution.objective, solution.status, solution.details["formulation"]) == (
        2,
        Status.OPTIMAL,
        "arc-flow",
    )


def test_cpsat_keeps_the_hint_when_it_finds_nothing_better() -> None:
    # The arc-flow model cut off at a tiny budget on a triplet instance: the answer is
    # never worse than the hint.
    problem = read_bpp("Falkenauer_t120_00.txt")
    hint = fewest_cores(problem)
    solution = CpSatBinPackingModel(SolveSettings(0.01, 1)).solve(problem, hint)
    check_fewest_cores(problem, solution)
    assert (hint.objective, solution.objective, solution.bound) == (41, 41, 40)
    assert solution.details["fallback"] == "CP-SAT not_found: kept the hint"
    assert solution.status == Status.FEASIBLE


@pytest.mark.parametrize(("name", "optimal"), [("N1C1W1_A.BPP", 25), ("N1C1W1_C.BPP", 20)])
def test_scholl_instances_reach_their_known_optimum(name: str, optimal: int) -> None:
    problem = read_bpp(name)
    solution = BINS.solve(problem)
    check_fewest_cores(problem, solution)
    assert (solution.objective, solution.status) == (optimal, Status.OPTIMAL)
    assert fewest_cores(problem).objective in (optimal, optimal + 1)


def test_a_hint_at_the_lower_bound_is_returned_without_search() -> None:
    bins = BINS.solve(plain_bin_packing([6, 6, 6, 4, 4, 4], 10))
    assert (bins.objective, bins.status, bins.details["search"]) == (3, Status.OPTIMAL, SKIPPED)
    balanced = EXACT.solve(PackingProblem((3, 3, 3, 3), ((),) * 4, (), 2, 0))
    assert (balanced.objective, balanced.details["search"]) == (6, SKIPPED)


def test_a_hint_breaking_capacity_is_rejected_and_the_search_still_runs() -> None:
    problem = PackingProblem((1, 1), ((0,), (1,)), (2, 2), 2, 2, name="tight")
    bad = PackingSolution((0, 0), status=Status.FEASIBLE, solver="test", objective=2)
    solution = EXACT.solve(problem, bad)
    assert solution.details["hint"] == (
        "test rejected: tight: core 0 holds 4 weight slots, capacity 2"
    )
    assert (solution.objective, solution.status) == (1, Status.OPTIMAL)


def test_too_few_cores_for_the_weights_is_proved_infeasible() -> None:
    problem = PackingProblem((1, 1, 1), ((0,), (1,), (2,)), (6, 6, 6), 2, 10)
    assert EXACT.solve(problem).status == Status.INFEASIBLE
    assert BINS.solve(problem).status == Status.INFEASIBLE


@pytest.mark.parametrize("model", [EXACT, BINS])
def test_relabelled_hint_satisfies_the_symmetry_breaking(
    model: CpSatPackingModel | CpSatBinPackingModel,
) -> None:
    # Fix every hinted value: the model must stay feasible. The hint puts the big
    # items on high cores, so it only fits after relabelling.
    sizes = [6, 6, 3, 3, 2, 2]
    problem = PackingProblem((1, 2, 3, 4, 5, 6), tuple((i,) for i in range(6)), tuple(sizes), 4, 10)
    hint = (3, 2, 3, 2, 1, 1)
    model_, variables = model.build(problem)
    _add_hint(model_, variables, hint)
    proto = model_.proto
    for var, value in zip(proto.solution_hint.vars, proto.solution_hint.values, strict=True):
        model_.add(model_.get_int_var_from_proto_index(var) == value)
    assert variables.pinned == 2
    assert run_cpsat(model_, SolveSettings(5.0, workers=1)).has_solution


def test_oversized_model_is_refused() -> None:
    problem = PackingProblem((1,) * 10, ((),) * 10, (), 10, 0, name="big")
    with pytest.raises(
        RaptorError, match=r"^big: exact packing model too large \(100 literals > max_size 99\)"
    ):
        CpSatPackingModel(max_size=99).build(problem)
