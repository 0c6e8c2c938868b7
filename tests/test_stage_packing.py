"""Tests of reuse-first stage packing and the fewest-cores (bin packing) variant."""

from __future__ import annotations

import dataclasses
import itertools
import random

import numpy as np
import pytest

from raptor_cp.errors import ScheduleViolationError
from raptor_cp.heuristics.stage_packing import (
    _Assignment,
    _SwapFit,
    cores_needed,
    fewest_cores,
    pack_stage,
)
from raptor_cp.problems import (
    FewestCoresSolution,
    PackingProblem,
    Status,
    check_fewest_cores,
    check_packing,
    packing_demand,
)


def brute_force(problem: PackingProblem) -> tuple[int | None, int | None]:
    """(least maximum demand on ``problem.cores`` cores, fewest cores) by enumeration."""
    best = fewest = None
    for core in itertools.product(range(problem.cores), repeat=problem.num_tasks):
        held: list[set[int]] = [set() for _ in range(problem.cores)]
        for t, p in enumerate(core):
            held[p].update(problem.task_weights[t])
        if any(sum(problem.weight_size[w] for w in ws) > problem.capacity for ws in held):
            continue
        demand = max(packing_demand(problem, core), default=0)
        best = demand if best is None else min(best, demand)
        fewest = len(set(core)) if fewest is None else min(fewest, len(set(core)))
    return best, fewest


def random_problem(rng: random.Random, with_edges: bool) -> PackingProblem:
    n, kinds, cores = rng.randint(1, 6), rng.randint(1, 5), rng.randint(1, 3)
    sizes = tuple(rng.randint(1, 5) for _ in range(kinds))
    weights = tuple(
        tuple(rng.sample(range(kinds), rng.randint(0, min(2, kinds)))) for _ in range(n)
    )
    widest = max(sum(sizes[w] for w in set(ws)) for ws in weights)
    edges = ()
    if with_edges:
        edges = tuple(
            (rng.randrange(n), rng.randrange(n), rng.randint(0, 6))
            for _ in range(rng.randint(0, 6))
        )
    loads = tuple(rng.randint(0, 9) for _ in range(n))
    return PackingProblem(loads, weights, sizes, cores, widest + rng.randint(0, 5), edges)


@pytest.mark.parametrize("with_edges", [False, True])
def test_heuristics_never_beat_brute_force_and_respect_their_bounds(with_edges: bool) -> None:
    rng = random.Random(21 + with_edges)
    for _ in range(250):
        problem = random_problem(rng, with_edges)
        best, fewest = brute_force(problem)
        packed = pack_stage(problem)
        check_packing(problem, packed)
        counted = fewest_cores(problem)
        check_fewest_cores(problem, counted)
        if best is None:
            assert packed.core is None and counted.core is None
            continue
        assert packed.objective is not None and packed.bound is not None
        assert packed.objective >= best >= packed.bound
        assert packed.status != Status.OPTIMAL or packed.objective == best
        assert counted.objective is not None and counted.bound is not None
        assert counted.objective >= fewest >= counted.bound


def test_lanes_sharing_a_weight_are_packed_onto_its_core() -> None:
    # Two weights of a whole core each, four lanes per weight: every core holds one
    # weight and its lanes; the demand is the four lanes' load.
    weights = ((0,),) * 4 + ((1,),) * 4
    problem = PackingProblem((3,) * 8, weights, (6, 6), 2, 6)
    solution = pack_stage(problem)
    assert solution.core == (0, 0, 0, 0, 1, 1, 1, 1)
    assert (solution.objective, solution.status) == (12, Status.OPTIMAL)


def test_rebalance_moves_lanes_off_a_stacked_core() -> None:
    # Reuse-first stacks all four lanes of weight 0 on one core; with room for a
    # second copy, bottleneck moves spread them out.
    problem = PackingProblem((5, 5, 5, 5), ((0,),) * 4, (1,), 2, 10)
    solution = pack_stage(problem)
    assert solution.details["constructed"]["reuse-first"] == 20
    assert solution.details["moves"]["reuse-first"] == 2
    assert solution.details["rebalanced"]["reuse-first"] == 10
    assert solution.objective == solution.bound == 10


def test_transfers_keep_partners_together() -> None:
    # Without the edge, {0, 1} / {2, 3} and {0, 2} / {1, 3} tie; the 9 ns transfer
    # between tasks 0 and 3 is saved only by putting them on one core.
    problem = PackingProblem((4, 4, 4, 4), ((),) * 4, (), 2, 0, edges=((0, 3, 9),))
    solution = pack_stage(problem)
    assert solution.core is not None and solution.core[0] == solution.core[3]
    assert solution.objective == 8


def test_shared_constructor_recovers_when_both_greedy_candidates_fail() -> None:
    # Found by random search: the load-aware and reuse-first greedy constructions
    # fail, and the shared constructor succeeds with its reverse traversal.
    problem = PackingProblem((4, 1, 1, 4, 2), ((2,), (1, 3), (0,), (2,), (1,)), (3, 3, 4, 2), 2, 7)
    solution = pack_stage(problem)
    check_packing(problem, solution)
    assert list(solution.details["constructed"]) == ["recovery"]
    assert solution.details["recovery_constructions"] == 1
    assert solution.objective == 9


def test_fewer_cores_than_the_weights_need_is_proved_infeasible() -> None:
    # Three weights of 6 slots, cores of 10: no two fit together (L2 = 3 > 2 cores).
    problem = PackingProblem((1, 1, 1), ((0,), (1,), (2,)), (6, 6, 6), 2, 10)
    assert cores_needed(problem) == 3
    assert pack_stage(problem).status == Status.INFEASIBLE
    assert fewest_cores(problem).status == Status.INFEASIBLE


def test_empty_stage_is_packed_at_no_cost() -> None:
    problem = PackingProblem((), (), (), 2, 4)
    assert (pack_stage(problem).objective, pack_stage(problem).status) == (0, Status.OPTIMAL)
    assert (fewest_cores(problem).objective, fewest_cores(problem).status) == (0, Status.OPTIMAL)


def test_fewest_cores_solves_small_plain_bin_packing() -> None:
    # One weight per item, zero loads: plain bin packing with 3 optimal bins.
    sizes = (6, 6, 6, 4, 4, 4)
    problem = PackingProblem((0,) * 6, tuple((i,) for i in range(6)), sizes, 6, 10)
    solution = fewest_cores(problem)
    check_fewest_cores(problem, solution)
    assert (solution.objective, solution.status) == (3, Status.OPTIMAL)


def test_tasks_with_the_same_weights_share_a_core() -> None:
    problem = PackingProblem((1,) * 6, ((0,), (1,), (0,), (1,), (0,), (1,)), (3, 3), 6, 5)
    solution = fewest_cores(problem)
    assert solution.core == (0, 1, 0, 1, 0, 1)
    assert solution.objective == 2


def shared_zero_weight(sizes: tuple[int, ...]) -> PackingProblem:
    """One weight per item plus an empty weight every item uses: the weight sets
    overlap, so `fewest_cores` takes its shared-weight path on a plain instance."""
    n = len(sizes)
    return PackingProblem((0,) * n, tuple((i, n) for i in range(n)), (*sizes, 0), n, 10)


def test_replays_find_two_cores_where_best_fit_decreasing_needs_three() -> None:
    # Best fit decreasing: 5+4, 3+3+3, then 2 needs a third bin. On two cores the
    # forward and reverse constructions fail and a single-choice replay finds
    # 5+3+2 / 4+3+3.
    solution = fewest_cores(shared_zero_weight((5, 4, 3, 3, 3, 2)))
    assert solution.details["attempts"] == [(6, True, 0, 36), (2, True, 5, 40)]
    assert (solution.objective, solution.status) == (2, Status.OPTIMAL)


def test_shared_weight_construction_can_stay_above_the_optimum() -> None:
    # 5+3+2 / 4+4+2 fits two bins, but neither best fit decreasing nor its bounded
    # recovery on two cores finds it: a heuristic answer, not a proof.
    problem = shared_zero_weight((5, 4, 4, 3, 2, 2))
    assert brute_force(dataclasses.replace(problem, cores=2))[1] == 2
    solution = fewest_cores(problem)
    assert (solution.objective, solution.bound, solution.status) == (3, 2, Status.FEASIBLE)


def test_disjoint_weight_sets_go_to_the_bin_packing_heuristic() -> None:
    # The same instance with one weight per item is plain bin packing: MBS' fills
    # 5+3+2 after best fit decreasing's 5+4 and finds the two bins.
    sizes = (5, 4, 4, 3, 2, 2)
    problem = PackingProblem((0,) * 6, tuple((i,) for i in range(6)), sizes, 6, 10)
    solution = fewest_cores(problem)
    check_fewest_cores(problem, solution)
    assert (solution.objective, solution.bound, solution.status) == (2, 2, Status.OPTIMAL)
    assert solution.details["bin_packing"] == "mbs"


def test_plain_bin_packing_needing_more_bins_than_cores_is_not_found() -> None:
    # The bounds allow 3 bins, the optimum is 4 (9+1, then 4+4, 4+4, 3): on 3 cores
    # nothing is found and nothing is proved.
    sizes = (9, 4, 4, 4, 4, 3, 1)
    problem = PackingProblem((0,) * 7, tuple((i,) for i in range(7)), sizes, 3, 10)
    assert cores_needed(problem) == 3 and brute_force(problem) == (None, None)
    solution = fewest_cores(problem)
    assert (solution.core, solution.status, solution.details["bins"]) == (
        None,
        Status.NOT_FOUND,
        4,
    )


def test_check_fewest_cores_rejects_a_wrong_count() -> None:
    problem = PackingProblem((0, 0), ((0,), (1,)), (1, 1), 2, 1, name="bins")
    wrong = FewestCoresSolution((0, 1), status=Status.FEASIBLE, solver="test", objective=1)
    with pytest.raises(
        ScheduleViolationError, match=r"^bins: reported 1 cores but the assignment uses 2$"
    ):
        check_fewest_cores(problem, wrong)


def test_one_core_is_the_whole_stage() -> None:
    problem = PackingProblem((2, 3), ((0,), (1,)), (1, 1), 1, 2, edges=((0, 1, 5),))
    solution = pack_stage(dataclasses.replace(problem))
    assert (solution.core, solution.objective, solution.status) == ((0, 0), 5, Status.OPTIMAL)


def _demands_after(assignment: _Assignment, moves: list[tuple[int, int]]) -> tuple[int, ...]:
    """Per-core demands (`packing_demand`) with each ``(task, core)`` of ``moves`` applied,
    or ``()`` when some core's distinct weights then exceed its capacity."""
    problem = assignment.problem
    core = assignment.core.tolist()
    for t, p in moves:
        core[t] = p
    held: list[set[int]] = [set() for _ in range(problem.cores)]
    for t, p in enumerate(core):
        held[p].update(problem.task_weights[t])
    if any(sum(problem.weight_size[w] for w in ws) > problem.capacity for ws in held):
        return ()
    return packing_demand(problem, tuple(core))


def _rebalance_reference(
    assignment: _Assignment, p: int
) -> tuple[tuple[int, int] | None, tuple[int, int] | None]:
    """The bottleneck move and swap of core ``p`` by pricing every re-placed assignment
    whole (the rules of `_Assignment.rebalance`, without its incremental closed forms)."""
    worst = int(assignment.demand[p])
    cores = assignment.problem.cores
    moves, swaps = [], []
    for t in np.flatnonzero(assignment.core == p).tolist():
        admissible = []
        for q in range(cores):
            demand = _demands_after(assignment, [(t, q)]) if q != p else ()
            if demand and demand[p] < worst and demand[q] < worst:
                admissible.append((demand[q], q, demand[p]))
        if admissible:
            there, q, left = min(admissible)
            moves.append((max(left, there), there, t, q))
        for u in np.flatnonzero(assignment.core != p).tolist():
            q = int(assignment.core[u])
            demand = _demands_after(assignment, [(t, q), (u, p)])
            if demand and max(demand[p], demand[q]) < worst:
                swaps.append((max(demand[p], demand[q]), t, u))
    move = min(moves)[2:] if moves else None
    swap = min(swaps)[1:] if swaps else None
    return move, swap


def test_bottleneck_move_and_swap_match_re_placing_each_pair() -> None:
    """The vectorized pricing of moves and swaps (demands and capacity at once over
    cores or partners) picks what re-placing every candidate pair picks, and every
    swap's capacity check agrees with re-placing the pair."""
    rng = random.Random(7)
    compared = {"move": 0, "swap": 0}
    for _ in range(300):
        n, kinds, cores = rng.randint(2, 14), rng.randint(1, 6), rng.randint(2, 5)
        sizes = tuple(rng.randint(1, 4) for _ in range(kinds))
        weights = tuple(
            tuple(rng.sample(range(kinds), rng.randint(0, min(3, kinds)))) for _ in range(n)
        )
        edges = tuple(
            (rng.randrange(n), rng.randrange(n), rng.randint(0, 9))
            for _ in range(rng.randint(0, 2 * n))
        )
        loads = tuple(rng.randint(1, 30) for _ in range(n))
        core = [rng.randrange(cores) for _ in range(n)]
        held = [set() for _ in range(cores)]
        for t, p in enumerate(core):
            held[p].update(weights[t])
        capacity = max(sum(sizes[w] for w in ws) for ws in held) + rng.randint(0, 1)
        problem = PackingProblem(loads, weights, sizes, cores, capacity, edges)
        assignment = _Assignment.from_cores(problem, core)
        assert tuple(assignment.demand.tolist()) == packing_demand(problem, tuple(core))
        p = int(np.argmax(assignment.demand))
        worst = int(assignment.demand[p])
        move, swap = _rebalance_reference(assignment, p)
        assert assignment._best_move(p, worst, 1 << 30) == move
        assert assignment._best_swap(p, worst, 1 << 30) == swap
        partners = np.flatnonzero(assignment.core != p)
        fit = _SwapFit(assignment)
        for t in np.flatnonzero(assignment.core == p).tolist():
            fits = [
                bool(_demands_after(assignment, [(t, int(assignment.core[u])), (u, p)]))
                for u in partners.tolist()
            ]
            assert fit.partners(t, partners).tolist() == fits
        compared["move"] += move is not None
        compared["swap"] += swap is not None
    assert min(compared.values()) >= 20, compared
