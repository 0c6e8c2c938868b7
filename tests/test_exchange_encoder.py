"""The exact encoder on hand-made plans: words, bytes and cycles worked by hand.

Every instruction is 4 bytes; rows are padded to 8. See the encoder's docstring
for the instruction model.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raptor_cp.exchange.encoder import (
    PATCH,
    cut_pieces,
    encode_exchange,
    phase_errors,
    place_allocations,
    schedule_pieces,
    tile_errors,
)
from raptor_cp.exchange.footprint import estimate_footprint, estimate_row
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
    TransferMode,
)
from raptor_cp.exchange.planning import build_exchange_plan
from raptor_cp.heuristics.heft import HeftScheduler
from raptor_cp.problems import LatencyProblem
from raptor_cp.targets.ipu import IpuTarget
from raptor_cp.workload.lowering import lower
from raptor_cp.workload.model import ALL_ROWS, SAME_ROWS, Operation, OpKind, Workload

# allocations: 0 out on tile 0, 1 out on tile 1, 2 and 3 in on tile 2, 4 in on tile 3,
# 5 out on tile 2, 6 in on tile 1
OUT0, OUT1, IN2, IN2B, IN3, OUT2, IN1 = range(7)


def _plan(steps: list[Step], limit: int = 4096) -> ExchangePlan:
    allocations = (
        Allocation(0, "out0"),
        Allocation(1, "out1"),
        Allocation(2, "in2"),
        Allocation(2, "in2b"),
        Allocation(3, "in3"),
        Allocation(2, "out2"),
        Allocation(1, "in1"),
    )
    return ExchangePlan("test", 4, limit, allocations, tuple(steps))


def _unicast(index: int, words: int, mode: TransferMode = TransferMode.ORDINARY) -> Phase:
    """Tile 0 sends ``words`` to tile 1."""
    return Phase(
        index,
        (
            TileRow(0, sends=(Send(0, words, (1,), Address(OUT0, 0), mode=mode),)),
            TileRow(1, receives=(Receive(0, 0, words, Address(IN1, 0)),)),
        ),
    )


def test_unicast_encodes_as_the_estimate_prices_it() -> None:
    # sender: entry, setsrc, send, return = 16; receiver: entry, setdst, setmux (both at
    # cycle 0), delay 4 (the stream waits for the last word), neutral, return = 24.
    # The estimate: 8 + 8 = 16 and 8 + 8 + 4 = 20 -> 24.
    plan = _plan([_unicast(0, 4)])
    encoding = encode_exchange(plan)
    assert encoding.rows[0, 0].words == (
        ("entry",),
        ("setsrc", PATCH),
        ("send", (1,), 4, "ordinary"),
        ("return",),
    )
    assert encoding.rows[0, 1].words == (
        ("entry",),
        ("setdst", PATCH),
        ("setmux", 0),
        ("delay", 4),
        ("neutral",),
        ("return",),
    )
    assert encoding.footprint.rows == estimate_footprint(plan).rows == {(0, 0): 16, (0, 1): 24}
    assert encoding.exchange_cycles == {0: 4}
    assert [e.error for e in phase_errors(estimate_footprint(plan), encoding.footprint)] == [0.0]


def test_split_pieces_reuse_the_source_pointer_and_one_receive_run() -> None:
    # limit 100: 250 words -> pieces of 100, 100, 50 words at cycles 0, 100, 200.
    # sender: entry, setsrc, setlen 100, send, setlen 100, send, send, return = 32
    #   (estimate: 12 + 12 + 8 + 8 = 40: it sets the address for every piece)
    # receiver: one back-to-back run from tile 0, no word between pieces; the 250-cycle
    #   wait before `neutral` takes three delays of at most 100 cycles:
    #   entry, setdst, setmux, delay 100, delay 100, delay 50, neutral, return = 32
    #   (estimate: 3 x 8 + 4 + 8 = 36 -> 40)
    encoding = encode_exchange(_plan([_unicast(0, 250)], limit=100))
    assert [w[0] for w in encoding.rows[0, 0].words] == [
        "entry",
        "setsrc",
        "setlen",
        "send",
        "setlen",
        "send",
        "send",
        "return",
    ]
    assert encoding.rows[0, 1].words[3:6] == (("delay", 100), ("delay", 100), ("delay", 50))
    assert encoding.footprint.rows == {(0, 0): 32, (0, 1): 32}
    assert encoding.exchange_cycles == {0: 250}


def test_separate_allocations_may_be_contiguous_after_placement() -> None:
    # Tile 2 receives two 4-word payloads from tile 0 into allocations 2 and 3, which
    # placement lays out at 0 and 16: the second receive continues the first.
    # exact: entry, setmux, setdst, neutral, return = 20 -> 24
    # estimate (before placement): 8 + 2 x 8 + 2 x 4 = 32
    # sender: both payloads from out0 at 0 and 16: entry, setsrc, send, send, return
    #   = 20 -> 24 (estimate 8 + 2 x 8 = 24)
    sends = (Send(0, 4, (2,), Address(OUT0, 0)), Send(1, 4, (2,), Address(OUT0, 16)))
    receives = (Receive(0, 0, 4, Address(IN2, 0)), Receive(1, 0, 4, Address(IN2B, 0)))
    plan = _plan([Phase(0, (TileRow(0, sends=sends), TileRow(2, receives=receives)))])
    assert place_allocations(plan)[:4] == (0, 0, 0, 16)
    encoding = encode_exchange(plan)
    assert encoding.rows[0, 2].patches == (0,)
    assert encoding.footprint.rows == {(0, 0): 24, (0, 2): 24}
    assert estimate_footprint(plan).rows == {(0, 0): 24, (0, 2): 32}


def test_scheduled_order_can_break_receive_continuity() -> None:
    # Capture order on tile 2: from tile 0 into (in2, 0), then from tile 1 into (in2, 16):
    # contiguous, one address (estimate patches 1). Tile 0 first sends 4 words to tile 3,
    # so the exchange schedule delivers tile 1's payload first (cycles 0-4) and tile 0's
    # second (4-8): two addresses, the second timed at cycle 4. Words: entry, setdst,
    # setmux 1, delay 4, setdst, setmux 0, delay 4, neutral, return = 36 -> 40;
    # the estimate 8 + 16 + 4 = 28 -> 32.
    receives = (Receive(1, 0, 4, Address(IN2, 0)), Receive(0, 1, 4, Address(IN2, 16)))
    rows = (
        TileRow(0, sends=(Send(2, 4, (3,), Address(OUT0, 0)), Send(1, 4, (2,), Address(OUT0, 16)))),
        TileRow(1, sends=(Send(0, 4, (2,), Address(OUT1, 0)),)),
        TileRow(2, receives=receives),
        TileRow(3, receives=(Receive(2, 0, 4, Address(IN3, 0)),)),
    )
    encoding = encode_exchange(_plan([Phase(0, rows)]))
    row = encoding.rows[0, 2]
    assert row.words == (
        ("entry",),
        ("setdst", PATCH),
        ("setmux", 1),
        ("delay", 4),
        ("setdst", PATCH),
        ("setmux", 0),
        ("delay", 4),
        ("neutral",),
        ("return",),
    )
    assert row.patches == (16, 0)
    assert estimate_row(rows[2], 4096, False).patches == 1
    assert estimate_footprint(_plan([Phase(0, rows)])).rows[0, 2] == 32
    assert (row.nbytes, encoding.exchange_cycles[0]) == (40, 8)


def test_gaps_cost_a_neutral_and_a_delay() -> None:
    # Tile 0 sends 8 words to tile 3 (cycles 0-8), then 4 to tile 2 (8-12); tile 1 sends
    # 4 to tile 2 (0-4). Tile 2 idles 4-8: entry, setdst, setmux 1, delay 4, neutral,
    # delay 4, setdst, setmux 0, delay 4, neutral, return = 44 -> 48. The estimate:
    # 8 + 2 x 8 + 2 x 4 = 32 (the second receive at 32 does not continue the first,
    # which ends at 16).
    receives = (Receive(0, 1, 4, Address(IN2, 0)), Receive(1, 0, 4, Address(IN2, 32)))
    rows = (
        TileRow(0, sends=(Send(2, 8, (3,), Address(OUT0, 0)), Send(1, 4, (2,), Address(OUT0, 32)))),
        TileRow(1, sends=(Send(0, 4, (2,), Address(OUT1, 0)),)),
        TileRow(2, receives=receives),
        TileRow(3, receives=(Receive(2, 0, 8, Address(IN3, 0)),)),
    )
    encoding = encode_exchange(_plan([Phase(0, rows)]))
    assert [w[0] for w in encoding.rows[0, 2].words] == [
        "entry",
        "setdst",
        "setmux",
        "delay",
        "neutral",
        "delay",
        "setdst",
        "setmux",
        "delay",
        "neutral",
        "return",
    ]
    assert encoding.rows[0, 2].words[5] == ("delay", 4)
    assert encoding.footprint.rows[0, 2] == 48
    assert estimate_footprint(_plan([Phase(0, rows)])).rows[0, 2] == 32


def test_a_send_and_a_mux_change_in_one_cycle_combine() -> None:
    # Tile 2 receives 4 words from tile 0 while it sends 4 words to tile 3, both at cycle 0.
    # entry, setdst, setsrc, send+mux, neutral, return = 24 (setmux folded into the send)
    # estimate: 8 + 8 (send) + 8 + 4 (receive) = 28 -> 32
    rows = (
        TileRow(0, sends=(Send(0, 4, (2,), Address(OUT0, 0)),)),
        TileRow(
            2,
            sends=(Send(1, 4, (3,), Address(OUT2, 0)),),
            receives=(Receive(0, 0, 4, Address(IN2, 0)),),
        ),
        TileRow(3, receives=(Receive(1, 2, 4, Address(IN3, 0)),)),
    )
    plan = _plan([Phase(0, rows)])
    encoding = encode_exchange(plan)
    assert encoding.rows[0, 2].words == (
        ("entry",),
        ("setdst", PATCH),
        ("setsrc", PATCH),
        ("send+mux", (3,), 4, "ordinary", 0),
        ("neutral",),
        ("return",),
    )
    assert encoding.footprint.rows[0, 2] == 24
    assert estimate_footprint(plan).rows[0, 2] == 32


def test_a_receive_may_not_end_inside_its_tiles_own_send() -> None:
    # Tile 1 sends 10 words to tile 3 from cycle 0 (the lower tile goes first); tile 2's
    # 4 words for tile 1 could start at 0, but would end at 4, inside tile 1's send, where
    # its stream cannot issue the neutral: they wait until cycle 10. Tile 1: entry,
    # setsrc, send, setdst, setmux 2 (at 10, right after its send), delay 4, neutral,
    # return = 32.
    allocations = (Allocation(1, "out1"), Allocation(2, "out2"), Allocation(1, "in1"))
    allocations += (Allocation(3, "in3"),)
    rows = (
        TileRow(
            1,
            sends=(Send(0, 10, (3,), Address(0, 0)),),
            receives=(Receive(1, 2, 4, Address(2, 0)),),
        ),
        TileRow(2, sends=(Send(1, 4, (1,), Address(1, 0)),)),
        TileRow(3, receives=(Receive(0, 1, 10, Address(3, 0)),)),
    )
    encoding = encode_exchange(ExchangePlan("t", 4, 4096, allocations, (Phase(0, rows),)))
    assert encoding.exchange_cycles == {0: 14}
    assert [w[0] for w in encoding.rows[0, 1].words] == [
        "entry",
        "setsrc",
        "send",
        "setdst",
        "setmux",
        "delay",
        "neutral",
        "return",
    ]


def test_back_to_back_receives_from_other_senders_cost_the_seed_price() -> None:
    # Tiles 0-3 each send 4 words to tile 4, which receives them back to back (cycles
    # 0-16) into one allocation: entry, setdst, then per sender setmux + the 4-cycle wait
    # that times the next switch, neutral, return = 12 words = 48 B. The seed prices
    # 8 + 4 x 8 + 4 = 44 -> 48 B: each receive's "source/neutral controls" are a mux
    # word and a timing word.
    allocations = (*(Allocation(t, "out") for t in range(4)), Allocation(4, "in"))
    rows = tuple(TileRow(t, sends=(Send(t, 4, (4,), Address(t, 0)),)) for t in range(4))
    receives = tuple(Receive(t, t, 4, Address(4, 16 * t)) for t in range(4))
    plan = ExchangePlan("t", 5, 4096, allocations, (Phase(0, (*rows, TileRow(4, (), receives))),))
    encoding = encode_exchange(plan)
    assert [w[0] for w in encoding.rows[0, 4].words].count("setmux") == 4
    assert encoding.footprint.rows[0, 4] == estimate_footprint(plan).rows[0, 4] == 48


@pytest.mark.parametrize(
    ("mode", "exact"), [(TransferMode.PAIRED, 16), (TransferMode.ORDINARY, 24)]
)
def test_paired_lengths_count_64_bit_units(mode: TransferMode, exact: int) -> None:
    # 128 words: paired = 64 units, no setlen: entry, setsrc, send, return = 16;
    # ordinary = 128 units > 64: + setlen = 20 -> 24. The estimate counts Word32
    # equivalents either way: 12 + 8 = 20 -> 24.
    plan = _plan([_unicast(0, 128, mode)])
    assert encode_exchange(plan).footprint.rows[0, 0] == exact
    assert estimate_footprint(plan).rows[0, 0] == 24


def test_identical_normalized_rows_share_exactly() -> None:
    # The same unicast in three phases at different addresses: tile 0 rows of 16 bytes
    # with one patch share: 16 + 4 + 3 x 4 = 32 (copies 48); receivers 24 + 4 + 12 = 40.
    phases = [
        _unicast(0, 4),
        Phase(
            1,
            (
                TileRow(0, sends=(Send(0, 4, (1,), Address(OUT0, 64)),)),
                TileRow(1, receives=(Receive(0, 0, 4, Address(IN1, 64)),)),
            ),
        ),
        _unicast(2, 4),
    ]
    footprint = encode_exchange(_plan(phases)).footprint
    assert footprint.tile_bytes[:2] == (48, 72)
    assert footprint.shared_tile_bytes[:2] == (32, 40)
    assert footprint.shared_tile_bytes[2:] == (8, 8)  # inactive rows, stored once


def test_rows_that_differ_in_delays_do_not_share() -> None:
    # Tile 1 sends the same 4 words to tile 2 in both phases. In phase 1 tile 0's 8-word
    # send (the lower tile wins the tie at cycle 0) holds tile 2 for cycles 0-8, so tile 1
    # waits: entry, delay 8, setsrc, send, return = 20 -> 24, against 16 in phase 0.
    # Different normalized rows: no sharing, 16 + 24 = 40. The estimate, blind to
    # delays, shares them: 16 + 4 + 2 x 4 = 28.
    first = Phase(
        0,
        (
            TileRow(1, sends=(Send(0, 4, (2,), Address(OUT1, 0)),)),
            TileRow(2, receives=(Receive(0, 1, 4, Address(IN2, 0)),)),
        ),
    )
    second = Phase(
        1,
        (
            TileRow(0, sends=(Send(1, 8, (2,), Address(OUT0, 0)),)),
            TileRow(1, sends=(Send(0, 4, (2,), Address(OUT1, 0)),)),
            TileRow(
                2, receives=(Receive(1, 0, 8, Address(IN2, 0)), Receive(0, 1, 4, Address(IN2, 32)))
            ),
        ),
    )
    plan = _plan([first, second])
    encoding = encode_exchange(plan)
    assert encoding.rows[1, 1].words[1] == ("delay", 8)
    footprint = encoding.footprint
    assert footprint.shared_tile_bytes[1] == footprint.tile_bytes[1] == 40
    assert estimate_footprint(plan).shared_tile_bytes[1] == 28


def test_iterated_source_pointer_is_register_based_and_never_shared() -> None:
    # In a Repeat body the send's source advances 16 bytes per iteration:
    # entry, setsrc+ 16, send, return = 16, no patch; excluded from sharing, so with an
    # identical-looking later row tile 0 stores 16 + 16 = 32.
    body = Phase(
        0,
        (
            TileRow(0, sends=(Send(0, 4, (1,), Address(OUT0, 0), source_stride=16),)),
            TileRow(1, receives=(Receive(0, 0, 4, Address(IN1, 0)),)),
        ),
    )
    encoding = encode_exchange(_plan([Repeat(3, (body,)), _unicast(1, 4)]))
    assert encoding.rows[0, 0].words[1] == ("setsrc+", 16)
    assert encoding.rows[0, 0].patches == ()
    assert encoding.footprint.shared_tile_bytes[0] == 32


def test_placement_covers_every_repeat_iteration() -> None:
    # in1 is received at offset 0 with stride 16 over 3 iterations: extent 16 + 2 x 16 = 48;
    # out0 likewise. Allocations on one tile are stacked, 8-byte aligned.
    body = Phase(
        0,
        (
            TileRow(0, sends=(Send(0, 4, (1,), Address(OUT0, 0), source_stride=16),)),
            TileRow(1, receives=(Receive(0, 0, 4, Address(IN1, 0), stride=16),)),
        ),
    )
    second = Phase(
        1,
        (
            TileRow(0, sends=(Send(0, 3, (1,), Address(OUT0, 0)),)),
            TileRow(1, receives=(Receive(0, 0, 3, Address(OUT1, 0)),)),
        ),
    )
    bases = place_allocations(_plan([Repeat(3, (body,)), second]))
    # tile 1: out1 (id 1) extent 12 -> 16 at 0, in1 (id 6) at 16
    assert (bases[OUT0], bases[OUT1], bases[IN1]) == (0, 0, 16)


def test_error_tables_compare_per_phase_and_per_tile() -> None:
    # phase 0: the split unicast (limit 100): estimate 40 + 40 = 80, exact 32 + 32 = 64
    # phase 1: a 4-word unicast: estimate = exact = 16 + 24 = 40
    plan = _plan([_unicast(0, 250), _unicast(1, 4)], limit=100)
    estimate, exact = estimate_footprint(plan), encode_exchange(plan).footprint
    rows = [(e.key, e.estimated, e.encoded) for e in phase_errors(estimate, exact)]
    assert rows == [(0, 80, 64), (1, 40, 40)]
    assert phase_errors(estimate, exact)[0].error == pytest.approx(16 / 64)
    # tiles without sharing: tile 0 40 + 16 = 56 vs 32 + 16 = 48; tile 1 40 + 24 vs 32 + 24
    tiles = [(e.key, e.estimated, e.encoded) for e in tile_errors(estimate, exact, shared=False)]
    assert tiles == [(0, 56, 48), (1, 64, 56), (2, 16, 16), (3, 16, 16)]


def test_a_lowered_schedule_encodes_every_row_the_estimate_prices() -> None:
    # Four lanes of a 2-layer MLP on 4 tiles, scheduled by HEFT: both models price the
    # same (phase, tile) rows and the same phases.
    ops = (
        Operation("x", "Input", OpKind.INPUT, output_shape=(8, 64)),
        Operation("fc1", "Gemm", OpKind.WEIGHTED, ("x",), (SAME_ROWS,), (8, 128), 8, 64, 128, 1),
        Operation(
            "relu", "Relu", OpKind.VECTOR, ("fc1",), (SAME_ROWS,), (8, 128), 8, vector_per_row=128
        ),
        Operation("fc2", "Gemm", OpKind.WEIGHTED, ("relu",), (ALL_ROWS,), (8, 64), 8, 128, 64, 1),
    )
    target = IpuTarget.preset("ipu-mk2", weight_block_bytes=4096).with_tiles(4)
    problem = LatencyProblem(lower(Workload("mlp", ops), target, lanes=4), target)
    schedule = HeftScheduler().solve(problem).schedule
    assert schedule is not None
    plan = build_exchange_plan(problem, schedule)
    estimate, exact = estimate_footprint(plan), encode_exchange(plan).footprint
    assert estimate.rows.keys() == exact.rows.keys()
    assert estimate.phases == exact.phases
    assert len(estimate.rows) > 0


@st.composite
def _random_phase(draw: st.DrawFn) -> ExchangePlan:
    """A one-phase plan on 5 tiles: each tile sends 0-3 payloads to random other tiles."""
    tiles, limit = 5, draw(st.sampled_from([3, 8, 4096]))
    allocations = [Allocation(t, "out") for t in range(tiles)]
    allocations += [Allocation(t, "in") for t in range(tiles)]
    sends: dict[int, list[Send]] = {t: [] for t in range(tiles)}
    receives: dict[int, list[Receive]] = {t: [] for t in range(tiles)}
    end = [0] * (2 * tiles)
    payload = 0
    for tile in range(tiles):
        for _ in range(draw(st.integers(0, 3))):
            others = [t for t in range(tiles) if t != tile]
            receivers = sorted(draw(st.sets(st.sampled_from(others), min_size=1)))
            words = draw(st.integers(1, 12))
            sends[tile].append(Send(payload, words, tuple(receivers), Address(tile, end[tile])))
            end[tile] += 4 * words
            for r in receivers:
                receives[r].append(
                    Receive(payload, tile, words, Address(tiles + r, end[tiles + r]))
                )
                end[tiles + r] += 4 * words
            payload += 1
    rows = tuple(
        TileRow(t, tuple(sends[t]), tuple(receives[t]))
        for t in range(tiles)
        if sends[t] or receives[t]
    )
    return ExchangePlan("random", tiles, limit, tuple(allocations), (Phase(0, rows),))


@settings(max_examples=60, deadline=None)
@given(_random_phase())
def test_no_tile_switches_its_mux_inside_its_own_send(plan: ExchangePlan) -> None:
    # The schedule's rule, checked on the pieces: on every tile, sends do not overlap,
    # receives do not overlap, and no receive starts or ends strictly inside a send
    # (a receive may start with the send: send+mux). Encoding then never needs an
    # instruction inside a send (it would raise).
    ((phase, _),) = plan.stored_phases()
    bases = np.asarray(place_allocations(plan))
    pieces = cut_pieces(phase, plan.max_transfer_words, bases)
    start = schedule_pieces(phase, pieces, plan.tiles)
    end = start + pieces.words
    sends_of = {t: [] for t in range(plan.tiles)}
    receives_of = {t: [] for t in range(plan.tiles)}
    for k in range(start.size):
        sends_of[int(pieces.sender[k])].append((int(start[k]), int(end[k])))
        for r in phase.sends.receivers_of(int(pieces.send[k])).tolist():
            receives_of[r].append((int(start[k]), int(end[k])))
    for t in range(plan.tiles):
        for spans in (sorted(sends_of[t]), sorted(receives_of[t])):
            assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))
        for a, b in sends_of[t]:
            assert not any(a < x < b for r in receives_of[t] for x in r)
    encoding = encode_exchange(plan)
    assert encoding.exchange_cycles[0] == int(end.max(initial=0))
