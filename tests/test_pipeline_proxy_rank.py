"""How the refinement's proxy ranks proposals (`raptor_cp.pipeline.proxy.ProxyScore.key`)."""

from __future__ import annotations

from raptor_cp.pipeline.proxy import ProxyScore, relieves
from raptor_cp.problems import Stage

STAGES = (Stage(0, 2, 1), Stage(2, 4, 1))


def ranked(*entries: tuple[str, int, bool]) -> list[str]:
    """Names of ``(name, proxy value, relieves a bottleneck)`` in rank order."""
    keys = [
        (ProxyScore((value,), 0).key(relieved, STAGES), name) for name, value, relieved in entries
    ]
    return [name for _, name in sorted(keys)]


def test_a_bottleneck_move_within_the_margin_ranks_first() -> None:
    # 2.1 % of 1,000,000 is 21,000: the bottleneck move is 2.0 % worse by the proxy.
    assert ranked(("elsewhere", 1_000_000, False), ("bottleneck", 1_020_000, True)) == [
        "bottleneck",
        "elsewhere",
    ]


def test_a_move_elsewhere_better_by_more_than_the_margin_ranks_first() -> None:
    assert ranked(("elsewhere", 1_000_000, False), ("bottleneck", 1_022_000, True)) == [
        "elsewhere",
        "bottleneck",
    ]


def test_at_exactly_the_margin_the_bottleneck_move_ranks_first() -> None:
    assert ranked(("elsewhere", 1_000_000, False), ("bottleneck", 1_021_000, True)) == [
        "bottleneck",
        "elsewhere",
    ]


def test_moves_of_one_kind_and_moves_apart_by_more_than_the_margin_rank_by_value() -> None:
    assert ranked(
        ("b", 1_010_000, True), ("a", 1_000_000, True), ("d", 1_030_000, False), ("c", 1_001, False)
    ) == ["c", "a", "b", "d"]


def test_equal_values_rank_by_the_next_worst_stage() -> None:
    worse = ProxyScore((900, 800), 0).key(False, STAGES)
    better = ProxyScore((900, 700), 0).key(False, STAGES)
    assert sorted([worse, better]) == [better, worse]


def chain_span(first: int, stop: int) -> int:
    """One chain of unit groups: a range's dependency span is its length."""
    return stop - first


def two_chains(first: int, stop: int) -> int:
    """Groups 0-1 and 2-3 are two parallel chains: a range's span is its longer part."""
    return max(min(stop, 2) - first, stop - max(first, 2))


BOTTLENECK = Stage(2, 4, 3)
"""The parent is ``(0, 2, 2), (2, 4, 3)``; its second stage binds."""


def test_a_split_or_a_core_transfer_relieves_the_bottleneck() -> None:
    split = (Stage(0, 2, 2), Stage(2, 3, 2), Stage(3, 4, 1))
    transfer = (Stage(0, 2, 1), Stage(2, 4, 4))
    assert relieves(BOTTLENECK, split, chain_span)
    assert relieves(BOTTLENECK, transfer, chain_span)


def test_a_merge_relieves_only_when_it_keeps_the_chain() -> None:
    merged = (Stage(0, 4, 5),)
    assert not relieves(BOTTLENECK, merged, chain_span)
    assert relieves(BOTTLENECK, merged, two_chains)


def test_a_boundary_move_relieves_only_when_no_stage_over_its_groups_grows() -> None:
    grown = (Stage(0, 1, 1), Stage(1, 4, 4))
    shrunk = (Stage(0, 3, 3), Stage(3, 4, 2))
    # Group 1 lengthens the bottleneck's chain on one chain, runs beside it on two.
    assert not relieves(BOTTLENECK, grown, chain_span)
    assert relieves(BOTTLENECK, grown, two_chains)
    # Group 2 joins a stage whose chain is longer on one chain, as long on two.
    assert not relieves(BOTTLENECK, shrunk, chain_span)
    assert relieves(BOTTLENECK, shrunk, two_chains)


def test_stages_apart_from_the_bottleneck_do_not_count() -> None:
    assert relieves(BOTTLENECK, (Stage(0, 1, 1), Stage(1, 2, 1), Stage(2, 4, 3)), chain_span)
