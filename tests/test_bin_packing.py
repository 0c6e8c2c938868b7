"""Tests of the bin-packing heuristic: constructions, the neighbourhood search and its stops."""

from __future__ import annotations

import pathlib
import random

import pytest

from raptor_cp.errors import InvalidInstanceError
from raptor_cp.heuristics.bin_packing import (
    best_fit_decreasing,
    first_fit_decreasing,
    minimum_bin_slack,
    pack_bins,
)
from raptor_cp.workload.bpp_reader import read_bin_packing

BPP = pathlib.Path(__file__).parent / "data" / "bpp"


def optimal_bins(sizes: list[int], capacity: int) -> int:
    """Fewest bins by exhaustive search (items largest first, bins by distinct load)."""
    order = sorted(sizes, reverse=True)

    def fits(i: int, loads: list[int]) -> bool:
        if i == len(order):
            return True
        tried = set()
        for b, load in enumerate(loads):
            if load + order[i] <= capacity and load not in tried:
                tried.add(load)
                loads[b] += order[i]
                if fits(i + 1, loads):
                    return True
                loads[b] -= order[i]
        return False

    return next(bins for bins in range(len(order) + 1) if fits(0, [0] * bins))


def loads(bins: tuple[int, ...], sizes: list[int]) -> list[int]:
    total = [0] * (max(bins) + 1)
    for i, b in enumerate(bins):
        total[b] += sizes[i]
    return total


def test_constructions_on_a_small_instance() -> None:
    sizes = [5, 4, 4, 3, 2, 2]
    assert first_fit_decreasing(sizes, 10) == (0, 0, 1, 1, 1, 2)  # 5+4, 4+3+2, 2
    assert best_fit_decreasing(sizes, 10) == (0, 0, 1, 1, 1, 2)
    assert minimum_bin_slack(sizes, 10) == (0, 1, 1, 0, 0, 1)  # 5+3+2, 4+4+2


def test_best_fit_takes_the_fullest_bin_first_fit_the_first() -> None:
    # 9 and 7 open two bins, 4 joins the 7 (1 slot left); 1 fits both bins: first fit
    # puts it beside the 9, best fit into the fuller 7 + 4.
    assert first_fit_decreasing([9, 7, 4, 1], 12) == (0, 1, 1, 0)
    assert best_fit_decreasing([9, 7, 4, 1], 12) == (0, 1, 1, 1)


def test_pack_bins_against_brute_force() -> None:
    rng = random.Random(11)
    for _ in range(150):
        capacity = rng.randint(5, 30)
        sizes = [rng.randint(1, capacity) for _ in range(rng.randint(1, 9))]
        packing = pack_bins(sizes, capacity)
        best = optimal_bins(sizes, capacity)
        assert max(loads(packing.bins, sizes)) <= capacity
        assert packing.count >= best >= packing.lower_bound
        assert packing.count == len(set(packing.bins))
        assert not packing.optimal or packing.count == best


def test_stops_at_best_fit_decreasing_when_it_meets_l2() -> None:
    packing = pack_bins([6, 6, 6, 4, 4, 4], 10)
    assert (packing.count, packing.lower_bound, packing.method, packing.work) == (
        3,
        3,
        "best-fit-decreasing",
        0,
    )


def test_neighbourhood_search_empties_a_bin_the_constructions_leave() -> None:
    # Best fit decreasing and MBS' need 5 bins; 18+1+... 4 bins suffice (brute force).
    sizes = [1, 6, 6, 8, 9, 11, 4, 18, 9, 9]
    assert optimal_bins(sizes, 21) == 4
    assert max(best_fit_decreasing(sizes, 21)) + 1 == 5
    assert max(minimum_bin_slack(sizes, 21)) + 1 == 5
    packing = pack_bins(sizes, 21)
    assert (packing.count, packing.lower_bound, packing.method) == (4, 4, "lns")
    assert max(loads(packing.bins, sizes)) <= 21
    assert pack_bins(sizes, 21, effort=0).count == 5


def test_published_optima_of_scholl_instances() -> None:
    for name, optimum in (("N1C1W1_A.BPP", 25), ("N1C1W1_C.BPP", 20)):
        (instance,) = read_bin_packing(BPP / name)
        packing = pack_bins(list(instance.sizes), instance.capacity)
        assert (packing.count, packing.lower_bound) == (optimum, optimum)


def test_same_seed_same_packing_and_the_seed_matters_only_to_the_search() -> None:
    (instance,) = read_bin_packing(BPP / "Falkenauer_t120_00.txt")
    sizes = list(instance.sizes)
    assert pack_bins(sizes, 1000, seed=3) == pack_bins(sizes, 1000, seed=3)
    assert pack_bins(sizes, 1000, effort=0, seed=1) == pack_bins(sizes, 1000, effort=0, seed=2)


def test_triplets_stay_one_bin_above_the_optimum() -> None:
    # Falkenauer t120_00: 40 bins of exactly three items filling them; MBS' and the
    # search reach 41 (module docstring).
    (instance,) = read_bin_packing(BPP / "Falkenauer_t120_00.txt")
    packing = pack_bins(list(instance.sizes), instance.capacity)
    assert (packing.count, packing.lower_bound) == (41, 40)


def test_empty_and_zero_size_items() -> None:
    assert pack_bins([], 10).count == 0
    zeros = pack_bins([0, 0], 10)
    assert (zeros.count, zeros.lower_bound, zeros.bins) == (1, 1, (0, 0))
    assert pack_bins([0, 0], 0).count == 1


def test_a_size_outside_the_capacity_is_rejected() -> None:
    with pytest.raises(
        InvalidInstanceError, match=r"^item 1 has size 11; sizes must lie in \[0, capacity 10\]$"
    ):
        pack_bins([3, 11], 10)
