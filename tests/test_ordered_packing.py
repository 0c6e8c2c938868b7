"""Tests of ordered packing (consecutive runs of tasks per core), single query and batched."""

from __future__ import annotations

import dataclasses
import itertools
import random
from collections.abc import Iterator

import numpy as np
import pytest

from raptor_cp.errors import InvalidInstanceError
from raptor_cp.heuristics.ordered_packing import OrderedPacking, demand_lower_bound, ordered_packing
from raptor_cp.heuristics.range_packing import UNAVAILABLE, RangePacker, capacity_reach
from raptor_cp.problems import PackingProblem, Status, check_packing, packing_demand


def ordered_packing_curve(problem: PackingProblem, max_cores: int) -> list[OrderedPacking | None]:
    """One single query per core count ``1..max_cores``."""
    return [ordered_packing(problem, k) for k in range(1, max_cores + 1)]


def brute_force(problem: PackingProblem, cores: int) -> int | None:
    """Cheapest ordered assignment on ``cores`` cores by enumerating every cut set."""
    n = problem.num_tasks
    best = None
    on_k = dataclasses.replace(problem, cores=cores)
    for runs in range(1, min(cores, n) + 1):
        for cuts in itertools.combinations(range(1, n), runs - 1):
            bounds = (0, *cuts, n)
            held = [
                {w for t in range(bounds[r], bounds[r + 1]) for w in problem.task_weights[t]}
                for r in range(runs)
            ]
            if any(sum(problem.weight_size[w] for w in ws) > problem.capacity for ws in held):
                continue
            core = tuple(r for r in range(runs) for _ in range(bounds[r], bounds[r + 1]))
            cost = max(packing_demand(on_k, core))
            best = cost if best is None else min(best, cost)
    return best


def random_problem(rng: random.Random, with_edges: bool) -> PackingProblem:
    n, kinds = rng.randint(1, 8), rng.randint(1, 4)
    sizes = tuple(rng.randint(1, 4) for _ in range(kinds))
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
    return PackingProblem(loads, weights, sizes, 1, widest + rng.randint(0, 4), edges)


def test_curve_is_exact_without_edges() -> None:
    rng = random.Random(11)
    for _ in range(300):
        problem = random_problem(rng, with_edges=False)
        curve = ordered_packing_curve(problem, 5)
        for k, entry in enumerate(curve, start=1):
            expected = brute_force(problem, k)
            if expected is None:
                assert entry is None
                continue
            assert entry is not None and entry.exact
            assert entry.cost == expected


def test_curve_with_edges_never_beats_the_brute_force_optimum() -> None:
    rng = random.Random(12)
    for _ in range(300):
        problem = random_problem(rng, with_edges=True)
        for k, entry in enumerate(ordered_packing_curve(problem, 5), start=1):
            expected = brute_force(problem, k)
            assert (entry is None) == (expected is None)
            if entry is not None and expected is not None:
                assert entry.cost >= expected
                assert not entry.exact or entry.cost == expected


def test_every_entry_is_a_checked_constructive_assignment() -> None:
    rng = random.Random(13)
    for _ in range(100):
        problem = random_problem(rng, with_edges=True)
        for k, entry in enumerate(ordered_packing_curve(problem, 4), start=1):
            if entry is None:
                continue
            on_k = dataclasses.replace(problem, cores=k)
            solution = entry.solution(on_k)
            check_packing(on_k, solution)  # capacity, core ids and objective == demand
            assert entry.runs <= k and list(entry.assignment()) == sorted(entry.assignment())


def test_unavailable_when_capacity_cannot_be_met_in_order() -> None:
    # Weights alternate A, B, A, B and a core holds one of them: in order every task
    # needs its own run, although two cores suffice when order is free.
    problem = PackingProblem((1, 1, 1, 1), ((0,), (1,), (0,), (1,)), (2, 2), 2, 2)
    curve = ordered_packing_curve(problem, 4)
    assert curve[:3] == [None, None, None]
    assert curve[3] is not None and curve[3].starts == (0, 1, 2, 3)
    assert ordered_packing(problem) is None


def test_curve_is_non_increasing_and_keeps_the_largest_load_once_reached() -> None:
    problem = PackingProblem((5, 1, 1, 1, 1, 5), ((),) * 6, (), 1, 0)
    costs = [entry.cost for entry in ordered_packing_curve(problem, 6) if entry is not None]
    assert costs == [14, 7, 5, 5, 5, 5]
    assert demand_lower_bound(problem, 3) == 5


def random_packers(seed: int, count: int) -> Iterator[tuple[PackingProblem, RangePacker]]:
    """``count`` random edge-free problems with the batched engine over their tasks."""
    rng = random.Random(seed)
    for _ in range(count):
        problem = random_problem(rng, with_edges=False)
        reach = capacity_reach(problem.task_weights, problem.weight_size, problem.capacity)
        yield problem, RangePacker(np.array(problem.loads, dtype=np.int64), reach)


def test_single_query_agrees_with_the_batched_engine_without_edges() -> None:
    for problem, packer in random_packers(14, 100):
        n = problem.num_tasks
        ks = np.arange(1, 5)
        batched = packer.costs(np.zeros(4, dtype=np.int64), np.full(4, n), ks)
        for k, cost in zip(ks.tolist(), batched.tolist(), strict=True):
            alone = ordered_packing(problem, k)
            assert (alone is None) == (cost == UNAVAILABLE)
            assert alone is None or alone.cost == cost


def test_a_run_takes_in_a_partner_to_save_its_transfer() -> None:
    # Tasks 1 and 2 exchange 10 ns. Cutting between them costs both runs 10 more;
    # the greedy looks past the first end above the bound and keeps them together.
    problem = PackingProblem((3, 1, 1, 3), ((),) * 4, (), 2, 0, edges=((1, 2, 10),))
    packing = ordered_packing(problem)
    assert packing is not None
    assert packing.starts == (0, 3)
    assert packing.cost == 5


def test_one_core_costs_the_total_load_and_is_optimal_at_the_bound() -> None:
    problem = PackingProblem((2, 3), ((0,), (0,)), (4,), 1, 4, edges=((0, 1, 7),))
    packing = ordered_packing(problem)
    assert packing is not None and (packing.cost, packing.exact) == (5, True)
    assert packing.solution(problem).status == Status.OPTIMAL


def test_zero_cores_are_rejected() -> None:
    problem = PackingProblem((1,), ((),), (), 1, 0, name="stage0")
    with pytest.raises(
        InvalidInstanceError, match=r"^stage0: ordered packing needs >= 1 core, got 0$"
    ):
        ordered_packing(problem, 0)


def test_empty_stage_costs_nothing() -> None:
    problem = PackingProblem((), (), (), 1, 0)
    packing = ordered_packing(problem)
    assert packing is not None and (packing.cost, packing.assignment()) == (0, ())


def _plain_probe(
    prefix: list[int], reach: list[int], start: int, stop: int, bound: int, limit: int
) -> tuple[bool, int, int]:
    """`RangePacker._probe` for one range, restated from its docstring."""
    never = np.iinfo(np.int64).max
    if start >= stop:
        return True, 0, never
    largest, grow, runs, pos = 0, never, 0, start
    while True:
        base = prefix[pos]
        by_bound = max(j for j in range(len(prefix)) if prefix[j] <= base + bound)
        end = min(by_bound, reach[pos], stop)
        if by_bound < min(reach[pos], stop):  # the bound cut this run short
            grow = min(grow, prefix[min(end + 1, len(prefix) - 1)] - base)
        largest = max(largest, prefix[end] - base)
        runs += 1
        if end <= pos:  # stuck: the next task exceeds the bound or fits no core
            return False, largest, grow
        if end >= stop:
            return runs <= limit, largest, grow
        if runs >= limit:
            return False, largest, grow
        pos = end


def test_the_compiled_probe_runs_the_greedy_as_documented() -> None:
    rng = random.Random(20261202)
    for problem, packer in random_packers(20261202, 60):
        n = problem.num_tasks
        queries = [
            (a, b, rng.randint(0, 20), rng.randint(0, n + 1))
            for a in range(n + 1)
            for b in range(a, n + 1)
        ]
        columns = zip(*queries, strict=True)
        starts, stops, bounds, limits = (np.array(c, dtype=np.int64) for c in columns)
        ok, largest, grow = packer._probe(starts, stops, bounds, limits)
        prefix, reached = packer.prefix.tolist(), packer.reach.tolist()
        for i, query in enumerate(queries):
            expected = _plain_probe(prefix, reached, *query)
            assert (bool(ok[i]), int(largest[i]), int(grow[i])) == expected


def test_the_compiled_probe_refuses_a_negative_bound_or_a_range_outside() -> None:
    packer = RangePacker(np.array([1, 2, 3], dtype=np.int64), np.array([3, 3, 3]))
    one = np.array([0], dtype=np.int64)
    for stop, bound in ((3, -1), (4, 5)):
        with pytest.raises(ValueError, match="outside the sequence or a bound is negative"):
            packer._probe(one, np.array([stop]), np.array([bound]), np.array([3]))
