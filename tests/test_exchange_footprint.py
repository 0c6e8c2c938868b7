"""The seed's footprint estimate on hand-made plans, every byte count worked by hand.

Prices (seed): send 8 (+4 over 64 words), receive 8 (+4 when its address does not
continue the preceding receive), entry/return 8, rows rounded up to 8. Sharing:
k rows of R bytes with p patches cost min(kR, R + 4p + 4pk).
"""

from __future__ import annotations

import pytest

from raptor_cp.exchange.footprint import (
    align,
    estimate_footprint,
    estimate_row,
    shared_bytes,
)
from raptor_cp.exchange.plan import (
    Address,
    Allocation,
    ExchangePlan,
    Phase,
    Receive,
    Repeat,
    Send,
    Step,
    TileRow,
)

A, B, C = 0, 1, 2  # receive allocations on tile 1 (see `_plan`)
OUT0, OUT2 = 3, 4  # output allocations on tiles 0 and 2


def _plan(steps: list[Step], tiles: int = 3, limit: int = 4096) -> ExchangePlan:
    allocations = (
        Allocation(1, "A"),
        Allocation(1, "B"),
        Allocation(1, "C"),
        Allocation(0, "out0"),
        Allocation(2, "out2"),
        Allocation(0, "in0"),
    )
    return ExchangePlan("test", tiles, limit, allocations, tuple(steps))


def _unicasts(
    index: int, words: list[int], addresses: list[tuple[int, int]], sender: int = 0
) -> Phase:
    """Tile ``sender`` sends each payload to tile 1, which receives it at the address."""
    out = OUT0 if sender == 0 else OUT2
    sends, receives, offset = [], [], 0
    for p, (w, (allocation, at)) in enumerate(zip(words, addresses, strict=True)):
        sends.append(Send(p, w, (1,), Address(out, offset)))
        receives.append(Receive(p, sender, w, Address(allocation, at)))
        offset += 4 * w
    rows = sorted(
        [TileRow(sender, sends=tuple(sends)), TileRow(1, receives=tuple(receives))],
        key=lambda r: r.tile,
    )
    return Phase(index, tuple(rows))


def test_contiguous_receives_set_one_address() -> None:
    # tile 1: entry 8 + 3 receives x 8 + one address 4 = 36 -> 40
    # tile 0: entry 8 + 3 sends x 8 = 32
    plan = _plan([_unicasts(0, [4, 4, 4], [(A, 0), (A, 16), (A, 32)])])
    footprint = estimate_footprint(plan)
    assert footprint.rows == {(0, 0): 32, (0, 1): 40}


def test_separate_allocations_never_look_contiguous() -> None:
    # B's offset 16 and C's offset 32 equal the previous receive's end offset, but in
    # other allocations: 8 + 3 x 8 + 3 addresses x 4 = 44 -> 48 (contiguous case: 40)
    plan = _plan([_unicasts(0, [4, 4, 4], [(A, 0), (B, 16), (C, 32)])])
    assert estimate_footprint(plan).rows[0, 1] == 48


def test_phases_accumulate_per_tile_before_the_maximum() -> None:
    # phase 0: tile 0 sends 4 one-word payloads to tile 1 (contiguous receives):
    #   tile 0: 8 + 4 x 8 = 40; tile 1: 8 + 4 x 8 + 4 = 44 -> 48; tile 2 inactive: 8
    # phase 1: tile 2 sends 4 one-word payloads to tile 0:
    #   tile 2: 40; tile 0: 48; tile 1 inactive: 8
    # per tile: tile 0 40 + 48 = 88, tile 1 48 + 8 = 56, tile 2 8 + 40 = 48;
    # the busiest tile holds 88, not the 48 + 48 = 96 the per-phase maxima sum to.
    one = _unicasts(0, [1, 1, 1, 1], [(A, 0), (A, 4), (A, 8), (A, 12)])
    two = Phase(
        1,
        (
            TileRow(0, receives=tuple(Receive(p, 2, 1, Address(5, 4 * p)) for p in range(4))),
            TileRow(2, sends=tuple(Send(p, 1, (0,), Address(OUT2, 4 * p)) for p in range(4))),
        ),
    )
    footprint = estimate_footprint(_plan([one, two]))
    assert footprint.tile_bytes == (88, 56, 48)
    assert footprint.busiest(shared=False) == (0, 88)
    assert footprint.phase_bytes() == {0: 88, 1: 88}


def test_repeat_body_is_stored_once() -> None:
    # one unicast of 4 words: tile 0 16, tile 1 8 + 8 + 4 = 20 -> 24, tile 2 inactive 8
    body = _unicasts(0, [4], [(A, 0)])
    once = estimate_footprint(_plan([body]))
    repeated = estimate_footprint(_plan([Repeat(5, (body,))]))
    assert repeated.tile_bytes == once.tile_bytes == (16, 24, 8)
    assert repeated.rows == {(0, 0): 16, (0, 1): 24}


def test_multicast_is_counted_once_at_the_source() -> None:
    # tile 0 sends 4 words to tiles 1, 2 and 3: 8 + 8 = 16 (three unicasts: 8 + 24 = 32);
    # every receiver: 8 + 8 + 4 = 20 -> 24
    allocations = [Allocation(0, "out")] + [Allocation(t, "in") for t in (1, 2, 3)]
    rows = [TileRow(0, sends=(Send(0, 4, (1, 2, 3), Address(0, 0)),))] + [
        TileRow(t, receives=(Receive(0, 0, 4, Address(t, 0)),)) for t in (1, 2, 3)
    ]
    plan = ExchangePlan("multicast", 4, 4096, tuple(allocations), (Phase(0, tuple(rows)),))
    assert estimate_footprint(plan).rows == {(0, 0): 16, (0, 1): 24, (0, 2): 24, (0, 3): 24}


def test_transfers_are_split_at_the_isa_limit() -> None:
    # limit 100 words: 250 words -> pieces 100, 100, 50
    # send: 12 + 12 + 8 = 32, + 8 = 40; receive: 3 x 8 + 4 (first piece) + 8 = 36 -> 40
    plan = _plan([_unicasts(0, [250], [(A, 0)])], limit=100)
    assert estimate_footprint(plan).rows == {(0, 0): 40, (0, 1): 40}
    # unsplit: send 12 + 8 = 20 -> 24; receive 8 + 4 + 8 = 20 -> 24
    assert estimate_footprint(_plan([_unicasts(0, [250], [(A, 0)])])).rows[0, 0] == 24


@pytest.mark.parametrize(("words", "nbytes"), [(64, 16), (65, 24)])
def test_payloads_over_64_words_cost_4_more(words: int, nbytes: int) -> None:
    # 64 words: 8 + 8 = 16; 65 words: 8 + 12 = 20 -> 24
    row = TileRow(0, sends=(Send(0, words, (1,), Address(OUT0, 0)),))
    assert estimate_row(row, 4096, False).nbytes == nbytes


def test_rows_are_rounded_to_8_bytes() -> None:
    # one receive: 8 + 8 + 4 = 20 -> 24; three sends: 8 + 24 = 32 stays 32
    assert align(20) == 24 and align(32) == 32
    receive = TileRow(1, receives=(Receive(0, 0, 4, Address(A, 0)),))
    sends = TileRow(0, sends=tuple(Send(p, 4, (1,), Address(OUT0, 16 * p)) for p in range(3)))
    assert estimate_row(receive, 4096, False).nbytes == 24
    assert estimate_row(sends, 4096, False).nbytes == 32


def test_relocated_compatible_rows_share() -> None:
    # The same unicast in three phases from and to different addresses.
    # tile 0: R = 16, p = 1 (its source address): 16 + 4 + 3 x 4 = 32 (copies: 48)
    # tile 1: R = 24, p = 1 (its receive address): 24 + 4 + 3 x 4 = 40 (copies: 72)
    phases = [
        _unicasts(0, [4], [(A, 0)]),
        _unicasts(1, [4], [(B, 64)]),
        _unicasts(2, [4], [(A, 512)]),
    ]
    footprint = estimate_footprint(_plan(phases))
    assert footprint.tile_bytes[:2] == (48, 72)
    assert footprint.shared_tile_bytes[:2] == (32, 40)


def test_second_occurrence_adds_offsets_and_both_values_later_ones_only_values() -> None:
    # R = 16, p = 1: k = 2 -> 16 + 4 (offset) + 2 x 4 (values) = 28; k = 3 -> 28 + 4 = 32
    assert [shared_bytes(16, 1, k) for k in (1, 2, 3)] == [16, 28, 32]


def test_short_rows_keep_copies_when_patches_cost_more() -> None:
    # R = 32 with p = 3 (three sends): two copies 64 < 32 + 12 + 2 x 12 = 68
    assert shared_bytes(32, 3, 2) == 64
    sends = tuple(Send(p, 4, (1,), Address(OUT0, 16 * p)) for p in range(3))
    receives = tuple(Receive(p, 0, 4, Address(A, 16 * p)) for p in range(3))
    phase = [Phase(k, (TileRow(0, sends=sends), TileRow(1, receives=receives))) for k in (0, 1)]
    assert estimate_footprint(_plan(phase)).shared_tile_bytes[0] == 64


def test_inactive_rows_share_without_patch_data() -> None:
    # tile 2 is idle in all 5 phases: 5 x 8 = 40 bytes as copies, 8 shared (no patches)
    phases = [_unicasts(k, [4], [(A, 16 * k)]) for k in range(5)]
    footprint = estimate_footprint(_plan(phases))
    assert footprint.tile_bytes[2] == 40
    assert footprint.shared_tile_bytes[2] == 8


def test_changed_routes_do_not_share() -> None:
    # tile 0 sends 4 words to tile 1 in phase 0 and to tile 2 in phase 1: 16 + 16
    allocations = (Allocation(0, "out"), Allocation(1, "in"), Allocation(2, "in"))
    phases = tuple(
        Phase(
            k,
            (
                TileRow(0, sends=(Send(0, 4, (t,), Address(0, 0)),)),
                TileRow(t, receives=(Receive(0, 0, 4, Address(t, 0)),)),
            ),
        )
        for k, t in ((0, 1), (1, 2))
    )
    footprint = estimate_footprint(ExchangePlan("routes", 3, 4096, allocations, phases))
    assert footprint.shared_tile_bytes[0] == footprint.tile_bytes[0] == 32


def test_changed_payloads_do_not_share() -> None:
    # 4 then 5 words from tile 0 to tile 1: sender 16 + 16, receiver 24 + 24, no sharing
    phases = [_unicasts(0, [4], [(A, 0)]), _unicasts(1, [5], [(A, 0)])]
    footprint = estimate_footprint(_plan(phases))
    assert footprint.shared_tile_bytes[:2] == footprint.tile_bytes[:2] == (32, 48)


def test_iterated_senders_are_excluded_from_sharing() -> None:
    # Phase 0 is a Repeat body whose send's source advances 16 bytes per iteration;
    # phase 1 has the same row with a fixed pointer. Excluded: tile 0 pays 16 + 16 = 32;
    # with a fixed pointer in the body both share: 16 + 4 + 2 x 4 = 28.
    fixed = _unicasts(0, [4], [(A, 0)])
    sends = (Send(0, 4, (1,), Address(OUT0, 0), source_stride=16),)
    iterated = Phase(0, (TileRow(0, sends=sends), fixed.rows[1]))
    later = _unicasts(1, [4], [(A, 64)])
    excluded = estimate_footprint(_plan([Repeat(3, (iterated,)), later]))
    shared = estimate_footprint(_plan([Repeat(3, (fixed,)), later]))
    assert excluded.shared_tile_bytes[0] == 32
    assert shared.shared_tile_bytes[0] == 28
    # the receiver rows of both plans still share: 24 + 4 + 2 x 4 = 36
    assert excluded.shared_tile_bytes[1] == shared.shared_tile_bytes[1] == 36


def test_busiest_tile_ties_go_to_the_lowest_tile() -> None:
    # phase 0: tile 0 -> tile 1, phase 1: tile 1 -> tile 0, 4 words each:
    # tiles 0 and 1 both hold 16 (send) + 24 (receive) = 40; tile 2 two inactive rows 16
    back = Phase(
        1,
        (
            TileRow(0, receives=(Receive(0, 1, 4, Address(5, 0)),)),
            TileRow(1, sends=(Send(0, 4, (0,), Address(A, 0)),)),
        ),
    )
    footprint = estimate_footprint(_plan([_unicasts(0, [4], [(A, 0)]), back]))
    assert footprint.tile_bytes == (40, 40, 16)
    assert footprint.busiest(shared=False) == (0, 40)
    assert footprint.busiest(shared=True) == (0, 40)
