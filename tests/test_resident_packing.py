"""Tests of the reuse-first resident-weight constructor."""

from __future__ import annotations

import numpy as np
import pytest

from raptor_cp.heuristics.resident_packing import (
    MAX_REPLAYS,
    REPLAY_CHECK_BUDGET,
    pack_resident_weights,
)


def resident_slots(
    order: list[int],
    cores: tuple[int, ...],
    task_weights: list[tuple[int, ...]],
    sizes: list[int],
    num_cores: int,
) -> list[int]:
    """Slots of the distinct weights each core ends up holding."""
    held: list[set[int]] = [set() for _ in range(num_cores)]
    for task, core in zip(order, cores, strict=True):
        held[core].update(task_weights[task])
    return [sum(sizes[w] for w in weights) for weights in held]


def test_limits_are_the_seeds_values() -> None:
    assert (MAX_REPLAYS, REPLAY_CHECK_BUDGET) == (16, 65_536)


def test_forward_best_fit_reuses_resident_weights() -> None:
    # Task 1 shares weight 0 with task 0 and joins it at no cost; task 2 goes where the
    # least capacity is left after placing it (core 0: 3 - 2 - 1 = 0).
    result = pack_resident_weights([0, 1, 2], [(0,), (0,), (1,)], [2, 1], [3, 3])
    assert result.cores == (0, 0, 0)
    assert (result.constructions, result.candidate_checks, result.failed_task) == (0, 6, None)


def test_reuse_wins_over_best_fit() -> None:
    # Task 0 (weights 0 and 1, 4 slots) fits only core 0. Core 1 would be the tighter fit
    # for task 1 (weight 0), but core 0 already holds that weight.
    result = pack_resident_weights([0, 1], [(0, 1), (0,)], [1, 3], [5, 1])
    assert result.cores == (0, 0)


def test_cores_follow_the_given_order() -> None:
    # Same tasks, reversed order: cores stay aligned with the order positions.
    result = pack_resident_weights([2, 1, 0], [(0,), (0,), (1,)], [2, 1], [3, 3])
    assert result.cores == (0, 0, 0)
    assert pack_resident_weights([], [], [], [1]).cores == ()


def test_reverse_traversal_succeeds_where_forward_fails() -> None:
    # Forward: A (1 slot) best-fits core 1, B (2) takes core 0, C (2) fits nowhere.
    # Reverse: C best-fits core 1, B and A share core 0.
    order, weights, sizes, caps = [0, 1, 2], [(0,), (1,), (2,)], [1, 2, 2], [3, 2]
    result = pack_resident_weights(order, weights, sizes, caps)
    assert result.cores == (0, 0, 1)
    assert (result.constructions, result.failed_task, result.replay_checks) == (1, 2, 0)
    assert resident_slots(order, result.cores, weights, sizes, 2) == [3, 2]


def test_single_choice_replay_deviates_at_the_failing_tasks_earlier_choice() -> None:
    # Weights a=0, b=1 (1 slot each), c=2 (2 slots), d=3 (1 slot); cores hold 3 and 2.
    # Forward: {a,b} -> core 1, {c} -> core 0, then {d,b} fits nowhere. Reverse fails too.
    # The first replay moves the decision that placed b (the failing task's weight) off
    # core 1; {c} then takes core 1 and {d,b} fits on core 0.
    order, weights, sizes, caps = [0, 1, 2], [(0, 1), (2,), (3, 1)], [1, 1, 2, 1], [3, 2]
    result = pack_resident_weights(order, weights, sizes, caps)
    assert result.cores == (0, 1, 0)
    assert (result.constructions, result.failed_task) == (2, 2)
    # forward 3 tasks + reverse 3 tasks, then the replay prices positions 0..2: 2 cores each
    assert (result.candidate_checks, result.replay_checks) == (18, 6)
    assert resident_slots(order, result.cores, weights, sizes, 2) == [3, 2]


def test_search_stops_after_sixteen_replays() -> None:
    # 21 distinct one-slot weights on 20 one-slot cores cannot fit. Forward and reverse
    # each price 21 tasks x 20 cores = 420 candidates; forward puts task i on core i.
    # Replay 1 deviates at position 19, where no other core is free: 20 candidates.
    # Replay k >= 2 deviates at position 20 - k and prices positions 20-k..20 before
    # failing at 20: (k + 1) x 20 candidates.
    n = 21
    result = pack_resident_weights(range(n), [(t,) for t in range(n)], [1] * n, [1] * 20)
    replays = 20 + sum((k + 1) * 20 for k in range(2, 17))
    assert result.cores is None
    assert not result.found
    assert (result.constructions, result.failed_task) == (17, 20)
    assert (result.candidate_checks, result.replay_checks) == (840 + replays, replays)


def test_replays_share_the_check_budget() -> None:
    # With 100 replay checks: replay 1 prices 20, replay 2 prices 60, replay 3 prices its
    # deviation (20) and would exceed the budget at its next task, which ends the search.
    n = 21
    result = pack_resident_weights(
        range(n), [(t,) for t in range(n)], [1] * n, [1] * 20, replay_check_budget=100
    )
    assert result.cores is None
    assert (result.constructions, result.replay_checks, result.candidate_checks) == (4, 100, 940)


def test_replay_count_is_capped_by_max_replays() -> None:
    n = 21
    result = pack_resident_weights(
        range(n), [(t,) for t in range(n)], [1] * n, [1] * 20, max_replays=2
    )
    assert (result.constructions, result.replay_checks) == (3, 20 + 60)


@pytest.mark.parametrize("seed", range(12))
def test_found_placements_respect_capacities(seed: int) -> None:
    rng = np.random.default_rng(seed)
    cores = int(rng.integers(2, 6))
    caps = rng.integers(3, 8, size=cores).tolist()
    sizes = rng.integers(1, 4, size=8).tolist()
    weights = [
        tuple(rng.choice(8, size=int(rng.integers(0, 3)), replace=False).tolist())
        for _ in range(15)
    ]
    weights = [w for w in weights if sum(sizes[i] for i in w) <= max(caps)]
    order = rng.permutation(len(weights)).tolist()
    result = pack_resident_weights(order, weights, sizes, caps)
    if result.found:
        assert result.cores is not None
        used = resident_slots(order, result.cores, weights, sizes, cores)
        assert all(u <= c for u, c in zip(used, caps, strict=True))
    assert result.replay_checks <= REPLAY_CHECK_BUDGET
    assert result.constructions <= 1 + MAX_REPLAYS
