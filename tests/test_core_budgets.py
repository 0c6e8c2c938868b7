"""Tests of minimax core budgets and the memoised stage-cost cache."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from raptor_cp.errors import InvalidInstanceError
from raptor_cp.heuristics.core_budgets import CostCache, minimax_budgets


def table_cost(curves: dict[tuple[int, int], list[int | None]]):
    """``stage_cost`` reading ``curves[(first, stop)][cores - 1]`` (None past the end)."""

    def cost(first: int, stop: int, cores: int) -> int | None:
        curve = curves[first, stop]
        return curve[cores - 1] if cores <= len(curve) else None

    return cost


def brute_force(ranges: list[tuple[int, int]], cores: int, cost) -> int | None:
    """Least maximum stage cost over every budget vector (each >= 1, total <= cores)."""
    best = None
    for budgets in itertools.product(range(1, cores + 1), repeat=len(ranges)):
        if sum(budgets) > cores:
            continue
        values = [cost(f, t, k) for (f, t), k in zip(ranges, budgets, strict=True)]
        if None not in values and (best is None or max(values) < best):
            best = max(values)
    return best


def random_curves(seed: int, stages: int, cores: int) -> dict[tuple[int, int], list[int | None]]:
    """Random, often non-monotone curves with unavailable entries, for stages (i, i+1)."""
    rng = np.random.default_rng(seed)
    curves: dict[tuple[int, int], list[int | None]] = {}
    for i in range(stages):
        need = int(rng.integers(1, 3))
        curves[i, i + 1] = [
            None if k < need or rng.random() < 0.15 else int(rng.integers(0, 40))
            for k in range(1, cores + 1)
        ]
    return curves


@pytest.mark.parametrize("seed", range(40))
def test_minimax_matches_brute_force_on_random_curves(seed: int) -> None:
    rng = np.random.default_rng(1000 + seed)
    stages, cores = int(rng.integers(1, 4)), int(rng.integers(1, 8))
    cost = table_cost(random_curves(seed, stages, cores))
    ranges = [(i, i + 1) for i in range(stages)]
    budgets = minimax_budgets(ranges, cores, cost)
    expected = brute_force(ranges, cores, cost)
    if expected is None:
        assert budgets is None
        return
    assert budgets is not None
    assert all(k >= 1 for k in budgets) and sum(budgets) <= cores
    values = [cost(f, t, k) for (f, t), k in zip(ranges, budgets, strict=True)]
    assert None not in values
    assert max(values) == expected


def test_minimax_is_the_fewest_cores_reaching_the_optimum() -> None:
    # ceil(60 / k) and ceil(10 / k) on 8 cores: 9 is optimal with (7, 1); 8 would need 10 cores.
    cost = table_cost({(0, 1): [-(-60 // k) for k in range(1, 9)], (1, 2): [10, 5, 4, 3]})
    assert minimax_budgets([(0, 1), (1, 2)], 8, cost) == (7, 1)


def test_leftover_cores_go_to_the_next_bottleneck_when_the_worst_cannot_improve() -> None:
    # The optimum 20 needs (2, 2); stage 0 is flat from 2 cores, so both leftover cores
    # go to stage 1 (15 -> 10 -> 8).
    cost = table_cost({(0, 1): [40, 20, 20, 20, 20], (1, 2): [30, 15, 10, 8, 8]})
    assert minimax_budgets([(0, 1), (1, 2)], 6, cost) == (2, 4)


def test_leftover_crosses_a_plateau_of_a_flat_curve() -> None:
    # Stage 1 only improves at 4 cores: the optimum 30 needs (1, 1); the leftover 3 cores
    # are handed to stage 0 one at a time (30 -> 20 -> 15 -> 12) since stage 1 cannot use 1.
    cost = table_cost({(0, 1): [30, 20, 15, 12, 12], (1, 2): [25, 25, 25, 5, 5]})
    assert minimax_budgets([(0, 1), (1, 2)], 5, cost) == (4, 1)
    # With one more core stage 1 crosses its plateau once stage 0 stops improving.
    cost = table_cost({(0, 1): [30, 20, 20, 20, 20, 20], (1, 2): [25, 25, 25, 5, 5, 5]})
    assert minimax_budgets([(0, 1), (1, 2)], 6, cost) == (2, 4)


def test_more_cores_that_cost_more_stay_idle() -> None:
    cost = table_cost({(0, 1): [9, 4, None, 7, 8]})
    assert minimax_budgets([(0, 1)], 5, cost) == (2,)


def test_too_few_cores_for_the_stages_is_none() -> None:
    cost = table_cost({(0, 1): [None, 3, 2], (1, 2): [None, 3, 2]})
    assert minimax_budgets([(0, 1), (1, 2)], 3, cost) is None
    assert minimax_budgets([(0, 1), (1, 2)], 1, cost) is None


def test_no_stage_needs_no_core() -> None:
    assert minimax_budgets([], 4, table_cost({})) == ()


def test_cost_cache_evaluates_each_triple_once() -> None:
    calls: list[tuple[int, int, int]] = []

    def cost(first: int, stop: int, cores: int) -> int:
        calls.append((first, stop, cores))
        return stop - first + cores

    cache = CostCache(cost)
    assert [cache(0, 2, 1), cache(0, 2, 1), cache(0, 1, 3)] == [3, 3, 4]
    shared = CostCache(cache)
    assert shared(0, 2, 1) == 3
    assert calls == [(0, 2, 1), (0, 1, 3)]
    assert shared.queries == cache.queries == 2


def test_negative_stage_cost_is_rejected() -> None:
    cache = CostCache(lambda first, stop, cores: -3)
    with pytest.raises(
        InvalidInstanceError,
        match=r"^stage_cost\(0, 1, 2\) returned -3; expected a non-negative integer or None$",
    ):
        cache(0, 1, 2)
