"""Tests of the bin-packing lower bounds: L1, Martello-Toth L2 and the Fekete-Schepers DFF bound."""

from __future__ import annotations

import random
import warnings

import pytest
from test_bin_packing import optimal_bins

from raptor_cp.errors import InvalidInstanceError
from raptor_cp.heuristics.packing_bounds import (
    bin_bounds,
    dff_bound,
    l1_bound,
    martello_toth_l2,
)


def l2_reference(sizes: list[int], capacity: int) -> int:
    """L2 straight from Martello and Toth's definition, one ``alpha`` at a time."""
    s = [x for x in sizes if x > 0]
    best = -(-sum(s) // capacity) if s else 0
    for alpha in [0, *sorted({x for x in s if 2 * x <= capacity})]:
        big = [x for x in s if x > capacity - alpha]
        mid = [x for x in s if capacity - alpha >= x and 2 * x > capacity]
        small = [x for x in s if alpha <= x and 2 * x <= capacity]
        free = len(mid) * capacity - sum(mid)
        best = max(best, len(big) + len(mid) + max(0, -(-(sum(small) - free) // capacity)))
    return best


def test_l2_beats_the_continuous_bound_on_large_items() -> None:
    assert l1_bound([6, 6, 6], 10) == 2
    assert martello_toth_l2([6, 6, 6], 10) == 3
    assert martello_toth_l2([6, 6, 6, 4, 4, 4], 10) == 3
    assert martello_toth_l2([5, 5, 5, 5], 10) == 2
    assert martello_toth_l2([], 10) == 0
    assert martello_toth_l2([0, 0], 0) == 0


def test_l2_counts_what_the_medium_items_leave_for_the_small_ones() -> None:
    # alpha = 3: the three 7s take a bin each and leave 3 free each; the 3s fit there.
    assert martello_toth_l2([7, 7, 7, 3, 3, 3], 10) == 3
    # alpha = 4: the 4s do not fit beside the 7s and need a fourth bin.
    assert martello_toth_l2([7, 7, 7, 4, 4], 10) == 4


def test_l2_matches_its_definition_on_random_instances() -> None:
    rng = random.Random(5)
    for _ in range(300):
        capacity = rng.randint(1, 30)
        sizes = [rng.randint(0, capacity) for _ in range(rng.randint(0, 12))]
        assert martello_toth_l2(sizes, capacity) == l2_reference(sizes, capacity)


def test_dff_bound_sees_that_three_medium_items_never_share_a_bin() -> None:
    # Seven items of 0.35: the continuous bound and L2 say 3 (2.45 rounded up), but
    # a bin holds two of them; u_2 maps each to 1/2 and proves 4.
    sizes = [35] * 7
    assert (l1_bound(sizes, 100), martello_toth_l2(sizes, 100)) == (3, 3)
    assert dff_bound(sizes, 100) == 4 == optimal_bins(sizes, 100)
    assert bin_bounds(sizes, 100).best == 4
    assert bin_bounds(sizes, 100, dff=False).best == 3


def test_bounds_never_exceed_the_optimum() -> None:
    rng = random.Random(7)
    for _ in range(200):
        capacity = rng.randint(2, 20)
        sizes = [rng.randint(1, capacity) for _ in range(rng.randint(1, 8))]
        bounds = bin_bounds(sizes, capacity)
        assert bounds.best <= optimal_bins(sizes, capacity)
        assert bounds.l1 <= bounds.l2


def test_an_item_larger_than_the_capacity_is_rejected() -> None:
    for bound in (l1_bound, martello_toth_l2, dff_bound):
        with pytest.raises(
            InvalidInstanceError, match=r"^no bin of capacity 0 holds an item of 5$"
        ):
            bound([5, 0], 0)


def test_dff_bound_with_huge_capacities_is_exact_not_overflowed() -> None:
    # k * capacity * items overflows int64 here (k * 2^60 wraps to 0 for k = 16): the
    # bound must still be computed exactly and silently, as for the same ratios at 10.
    capacity = 2**60
    sizes = [capacity // 3 + 1] * 300
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert dff_bound(sizes, capacity) == 150 == dff_bound([4] * 300, 10)
