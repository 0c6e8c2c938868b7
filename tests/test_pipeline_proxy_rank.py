"""How the refinement's proxy ranks proposals (`raptor_cp.pipeline.proxy.ProxyScore.key`)."""

from __future__ import annotations

from raptor_cp.pipeline.proxy import ProxyScore
from raptor_cp.problems import Stage

STAGES = (Stage(0, 2, 1), Stage(2, 4, 1))


def ranked(*entries: tuple[str, int, bool]) -> list[str]:
    """Names of ``(name, proxy value, touches a bottleneck)`` in rank order."""
    keys = [
        (ProxyScore((value,), 0).key(touches, STAGES), name) for name, value, touches in entries
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
