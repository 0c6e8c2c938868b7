"""Encode a plan's exchange rows exactly: the reference the footprint estimate is measured on.

The estimate (`raptor_cp.exchange.footprint`) prices rows in capture
order before placement. The encoder places the allocations, schedules every
transfer piece on exchange cycles and emits each row's instruction words in
that scheduled order, so the effects the seed lists as the estimate's blind
spots appear: pointer reuse, delays, bidirectional instruction combinations,
paired lengths and exact normalized-row sharing.

Instruction model (docs/exchange.md, "The exact encoder", word by word). Every
instruction is one 32-bit word (PopLibs prices exchange code at 4 bytes per
exchange instruction: ``DynamicSlice.cpp``, row
``embedding_planner_exchange_code_model`` of the reference data's
``poplar_exchange_code_observations.csv``). The instruction set is this
project's model of an IPU-like, statically timed exchange, built from the
seed's price categories; it is exact for the model, not a copy of a real ISA.

A tile's row is one straight-line instruction stream. Only ``send`` and
``delay`` take time: ``send`` occupies its tile for the piece's words (one
word per cycle), ``delay c`` for ``c`` cycles; every other instruction is
issued between cycles. A tile receives through a multiplexer (*mux*) that
selects one sending tile: every word the selected sender puts out while it is
selected is written at the tile's receive pointer, which then advances. So an
instruction that changes the mux or the receive pointer must be issued at the
exact cycle its transfer starts or ends, and the stream must *wait* for that
cycle (with ``delay``) unless a ``send`` of its own fills the time:

=============  ===========================================================
``entry``      first word of every row
``return``     last word of every row; the row is padded to 8 bytes
``setsrc a``   set the source pointer to address ``a`` (a patch); omitted
               when the pointer already holds ``a`` (the previous piece's end)
``setsrc+ s``  iterated source pointer: load from a register, advance by ``s``
``setlen n``   length register, for pieces over 64 units
``send``       send one piece (at most ``max_transfer_words`` units) to its
               receivers; a multicast is one send
``send+mux``   a send and a ``setmux`` starting in the same cycle, combined
``setmux t``   at a receive's first cycle, select sending tile ``t``; omitted
               when the previous receive came from ``t`` and ended that cycle
``neutral``    at a receive's last cycle, deselect: before an idle gap and
               after the row's last receive (a new ``setmux`` replaces it
               when another sender follows without a gap)
``setdst a``   at a receive's first cycle, set the receive pointer (a patch);
               omitted when it continues the previous receive's end
``setdst+ s``  iterated receive pointer
``delay c``    wait ``c`` cycles, ``1 <= c <= max_transfer_words`` (one count
               field, as wide as a transfer length); longer waits chain delays
=============  ===========================================================

Consecutive pieces from one sender into contiguous receive space therefore
cost the receiver nothing between them (the mux stays, the pointer continues),
while each receive from another sender or into another place costs a mux or
pointer word plus the wait that times it.

Timing. A tile sends one word per cycle and receives one word per cycle
(4 bytes per cycle each way, ``ipu_targets.csv``); a piece occupies its
sender and all its receivers for its words' cycles. Pieces are list-scheduled
(`schedule_pieces`): repeatedly the piece that can start earliest (each
sender's pieces in row order; ties to the lower sender tile) starts as soon as
its sender and receivers are free *and* no tile would have to switch its mux
inside one of its own sends, which its stream cannot interrupt: a receive may
start on a receiver only before, at the start of (``send+mux``) or after the
receiver's own send, and may not end strictly inside it; a send may not
contain the end of one of its tile's receives.

Placement. On each tile, allocations are laid out in id order from address 0,
each rounded up to 8 bytes, so the end of one allocation can meet the start of
the next, which the estimate (before placement) never assumes.

Sharing follows the estimate's rule (`shared_bytes`) with the normalized word
sequence (addresses replaced by a placeholder) as the key.

Cost: per phase, the list schedule is ``O(q log q)`` heap steps for ``q``
pieces, each re-evaluation a vectorised look at the piece's receivers; the
words are then built with numpy, ``O(e log e)`` for ``e`` (piece, receiver)
events, plus one signature per active row.
"""

from __future__ import annotations

import heapq
from collections.abc import Collection
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from raptor_cp.exchange.footprint import (
    ALIGNMENT,
    INACTIVE_ROW,
    LONG_PAYLOAD_WORDS,
    Footprint,
    FootprintAccumulator,
    RouteIds,
    RowCost,
    row_bounds,
)
from raptor_cp.exchange.plan import ExchangePlan, Phase, distinct

WORD_BYTES = 4
PATCH = "@"
"""Placeholder of an address operand in a normalized row."""

Instruction = tuple[object, ...]

# Word codes: one int64 row (code, a, b, c, d) per instruction word.
ENTRY, RETURN, DELAY, NEUTRAL, SETDST, SETDST_ITER = range(6)
SETSRC, SETSRC_ITER, SETLEN, SETMUX, SEND, SEND_MUX = range(6, 12)
# Issue order of instructions timed at the same cycle on one tile.
_ORDER = {NEUTRAL: 0, SETDST: 1, SETDST_ITER: 1, SETSRC: 2, SETSRC_ITER: 2, SETLEN: 3}
_ORDER.update({SETMUX: 4, SEND: 5})


@dataclass(frozen=True)
class EncodedRow:
    """One row's normalized words, its patch values (absolute addresses) and its bytes."""

    words: tuple[Instruction, ...]
    patches: tuple[int, ...]
    nbytes: int


@dataclass(frozen=True, eq=False)
class _PhaseCode:
    """One phase's encoded words: rows in ascending tile order, as arrays."""

    tiles: np.ndarray
    bounds: np.ndarray
    """``(rows, 2)``: each row's slice of ``words``."""
    words: np.ndarray
    """``(W, 5)`` int64 word codes."""
    patch: np.ndarray
    """Per word, its patch value, or -1."""


class Encoding:
    """The exact encoding of a plan: footprint, cycles, placement and every row's words."""

    def __init__(
        self,
        footprint: Footprint,
        exchange_cycles: dict[int, int],
        bases: tuple[int, ...],
        codes: dict[int, _PhaseCode],
        routes: RouteIds,
    ) -> None:
        self.footprint = footprint
        self.exchange_cycles = exchange_cycles
        """Cycles each stored phase's exchange takes (the end of its last transferred word)."""
        self.bases = bases
        """Placed start address of each allocation."""
        self._codes = codes
        self._routes = routes

    @cached_property
    def rows(self) -> dict[tuple[int, int], EncodedRow]:
        """Active rows keyed ``(phase index, tile)``, as instruction tuples."""
        rows = {}
        for phase, code in self._codes.items():
            for tile, (lo, hi) in zip(code.tiles.tolist(), code.bounds.tolist(), strict=True):
                words = tuple(self._instruction(w) for w in code.words[lo:hi].tolist())
                patches = tuple(p for p in code.patch[lo:hi].tolist() if p >= 0)
                nbytes = -(-WORD_BYTES * len(words) // ALIGNMENT) * ALIGNMENT
                rows[phase, tile] = EncodedRow(words, patches, nbytes)
        return rows

    def _instruction(self, word: list[int]) -> Instruction:
        code, a, b, c, d = word
        if code in (SEND, SEND_MUX):
            mode = "paired" if c else "ordinary"
            transfer = (self._routes.receivers(a), b, mode)
            return ("send", *transfer) if code == SEND else ("send+mux", *transfer, d)
        name = {
            ENTRY: "entry",
            RETURN: "return",
            NEUTRAL: "neutral",
            DELAY: "delay",
            SETDST: "setdst",
            SETDST_ITER: "setdst+",
            SETSRC: "setsrc",
            SETSRC_ITER: "setsrc+",
            SETLEN: "setlen",
            SETMUX: "setmux",
        }[code]
        if code in (ENTRY, RETURN, NEUTRAL):
            return (name,)
        if code in (SETDST, SETSRC):
            return (name, PATCH)
        return (name, a)


def place_allocations(plan: ExchangePlan) -> tuple[int, ...]:
    """Base address of every allocation (see "Placement" in the module docstring)."""
    extent = np.zeros(len(plan.allocations), dtype=np.int64)
    for phase, count in plan.stored_phases():
        for columns in (phase.sends, phase.receives):
            end = columns.offset + WORD_BYTES * columns.words + columns.stride * (count - 1)
            np.maximum.at(extent, columns.allocation, end)
    size = -(-extent // ALIGNMENT) * ALIGNMENT
    tile = np.asarray([a.tile for a in plan.allocations], dtype=np.int64)
    order = np.lexsort((np.arange(tile.size), tile))
    ends = np.cumsum(size[order])
    first = np.searchsorted(tile[order], tile[order], side="left")
    bases = np.empty_like(size)
    bases[order] = ends - size[order] - np.where(first > 0, ends[first - 1], 0)
    return tuple(bases.tolist())


@dataclass(frozen=True, eq=False)
class Pieces:
    """A phase's sends cut at the ISA limit, in row order (module docstring, "Timing")."""

    send: np.ndarray
    """The send each piece belongs to."""
    sender: np.ndarray
    units: np.ndarray
    """Length in transfer units (words, or 64-bit pairs in paired mode)."""
    words: np.ndarray
    offset: np.ndarray
    """Byte offset of the piece inside its payload."""
    source: np.ndarray
    """Placed source address of the piece."""


def cut_pieces(phase: Phase, limit: int, bases: np.ndarray) -> Pieces:
    """Every send of ``phase`` cut into pieces of at most ``limit`` units."""
    sends = phase.sends
    units = np.where(sends.paired, -(-sends.words // 2), sends.words)
    count = -(-units // limit)
    send = np.repeat(np.arange(len(sends)), count)
    k = np.arange(send.size) - np.repeat(np.cumsum(count) - count, count)
    piece_units = np.minimum(limit, units[send] - k * limit)
    per_unit = np.where(sends.paired, 2, 1)[send]
    done = k * limit * per_unit
    words = np.minimum(piece_units * per_unit, sends.words[send] - done)
    offset = WORD_BYTES * done
    source = bases[sends.allocation[send]] + sends.offset[send] + offset
    return Pieces(send, sends.tile[send], piece_units, words, offset, source)


def schedule_pieces(phase: Phase, pieces: Pieces, tiles: int) -> np.ndarray:
    """Start cycle of every piece (module docstring, "Timing")."""
    sends = phase.sends
    starts, receivers = sends.receivers_start, sends.receivers
    send_start = np.zeros(tiles, dtype=np.int64)
    send_free = np.zeros(tiles, dtype=np.int64)
    receive_free = np.zeros(tiles, dtype=np.int64)
    start = np.zeros(pieces.send.size, dtype=np.int64)
    sender, words, send = pieces.sender.tolist(), pieces.words.tolist(), pieces.send.tolist()
    first = np.flatnonzero(np.diff(pieces.sender, prepend=-1) != 0).tolist()
    heap = [(0, sender[k], k) for k in first]
    heapq.heapify(heap)
    while heap:
        bound, tile, k = heapq.heappop(heap)
        j = send[k]
        targets = receivers[starts[j] : starts[j + 1]]
        at = _earliest(bound, tile, targets, words[k], send_start, send_free, receive_free)
        if at > bound:
            heapq.heappush(heap, (at, tile, k))
            continue
        start[k] = at
        end = at + words[k]
        send_start[tile] = at
        send_free[tile] = end
        receive_free[targets] = end
        if k + 1 < len(sender) and sender[k + 1] == tile:
            heapq.heappush(heap, (end, tile, k + 1))
    return start


def _earliest(
    now: int,
    sender: int,
    receivers: np.ndarray,
    length: int,
    send_start: np.ndarray,
    send_free: np.ndarray,
    receive_free: np.ndarray,
) -> int:
    """Earliest start from cycle ``now`` at which no tile switches its mux inside its own send.

    Every piece scheduled so far starts by ``now``, so on each tile only its latest
    send and its latest receive can still be under way: the arrays hold those.
    """
    at = max(now, int(send_free[sender]), int(receive_free[receivers].max()))
    while True:
        busy = send_free[receivers]
        blocked = busy > at
        if blocked.any():
            begun = send_start[receivers]
            inside = blocked & ((begun != at) | (busy > at + length))
            if inside.any():
                at = int(busy[inside].max())
                continue
        own = int(receive_free[sender])
        if at < own < at + length:
            at = own
            continue
        return at


def _receive_events(
    phase: Phase, pieces: Pieces, start: np.ndarray, bases: np.ndarray, tiles: int
) -> dict[str, np.ndarray]:
    """One event per (piece, receiver), sorted by (receiving tile, start)."""
    sends, receives = phase.sends, phase.receives
    fanout = sends.fanout()[pieces.send]
    piece = np.repeat(np.arange(pieces.send.size), fanout)
    position = np.arange(piece.size) - np.repeat(np.cumsum(fanout) - fanout, fanout)
    tile = sends.receivers[sends.receivers_start[pieces.send][piece] + position]
    _, payload = np.unique(np.concatenate((sends.payload, receives.payload)), return_inverse=True)
    payloads = int(payload.max(initial=0)) + 1
    send_payload, receive_payload = payload[: len(sends)], payload[len(sends) :]
    receive_key = (receives.tile * payloads + receive_payload) * tiles + receives.sender
    order = np.argsort(receive_key, kind="stable")
    event_key = (tile * payloads + send_payload[pieces.send][piece]) * tiles + pieces.sender[piece]
    index = order[np.searchsorted(receive_key[order], event_key)]
    address = bases[receives.allocation[index]] + receives.offset[index] + pieces.offset[piece]
    events = {
        "tile": tile,
        "start": start[piece],
        "end": start[piece] + pieces.words[piece],
        "words": pieces.words[piece],
        "sender": pieces.sender[piece],
        "address": address,
        "stride": receives.stride[index],
    }
    by_time = np.lexsort((events["start"], tile))
    return {name: values[by_time] for name, values in events.items()}


def _actions(
    phase: Phase, pieces: Pieces, start: np.ndarray, events: dict[str, np.ndarray], routes: RouteIds
) -> np.ndarray:
    """Every timed instruction: ``(A, 10)`` rows (tile, cycle, order, code, a, b, c, d, patch,
    cycles it occupies the stream), sorted by tile, cycle and issue order."""
    parts = []
    tile, begin, end = events["tile"], events["start"], events["end"]
    if tile.size:
        same = np.r_[False, tile[1:] == tile[:-1]]
        previous_end = np.r_[0, end[:-1]]
        joined = (
            same
            & (previous_end == begin)
            & np.r_[False, events["sender"][1:] == events["sender"][:-1]]
        )
        gap = same & ~joined & (begin > previous_end)
        last = np.r_[tile[1:] != tile[:-1], True]
        parts.append(_rows(tile[gap], previous_end[gap], NEUTRAL))
        parts.append(_rows(tile[last], end[last], NEUTRAL))
        iterated = events["stride"] != 0
        address = events["address"]
        continued = (
            same
            & (iterated == np.r_[False, iterated[:-1]])
            & (address == np.r_[0, address[:-1] + WORD_BYTES * events["words"][:-1]])
        )
        fixed = ~continued & ~iterated
        parts.append(_rows(tile[fixed], begin[fixed], SETDST, patch=address[fixed]))
        moving = ~continued & iterated
        parts.append(_rows(tile[moving], begin[moving], SETDST_ITER, a=events["stride"][moving]))
        parts.append(_rows(tile[~joined], begin[~joined], SETMUX, a=events["sender"][~joined]))
    sends = phase.sends
    if pieces.send.size:
        sender, stride = pieces.sender, sends.stride[pieces.send]
        same = np.r_[False, sender[1:] == sender[:-1]]
        iterated = stride != 0
        source = pieces.source
        continued = (
            same
            & (iterated == np.r_[False, iterated[:-1]])
            & (source == np.r_[0, source[:-1] + WORD_BYTES * pieces.words[:-1]])
        )
        fixed, moving = ~continued & ~iterated, ~continued & iterated
        parts.append(_rows(sender[fixed], start[fixed], SETSRC, patch=source[fixed]))
        parts.append(_rows(sender[moving], start[moving], SETSRC_ITER, a=stride[moving]))
        long = pieces.units > LONG_PAYLOAD_WORDS
        parts.append(_rows(sender[long], start[long], SETLEN, a=pieces.units[long]))
        route = routes.of(sends)[pieces.send]
        paired = sends.paired[pieces.send].astype(np.int64)
        parts.append(
            _rows(sender, start, SEND, a=route, b=pieces.units, c=paired, busy=pieces.words)
        )
    actions = np.concatenate(parts) if parts else np.zeros((0, 10), dtype=np.int64)
    return actions[np.lexsort((actions[:, 2], actions[:, 1], actions[:, 0]))]


def _rows(
    tile: np.ndarray,
    cycle: np.ndarray,
    code: int,
    a: np.ndarray | int = 0,
    b: np.ndarray | int = 0,
    c: np.ndarray | int = 0,
    d: np.ndarray | int = 0,
    patch: np.ndarray | int = -1,
    busy: np.ndarray | int = 0,
) -> np.ndarray:
    n = tile.size
    columns = (tile, cycle, _ORDER[code], code, a, b, c, d, patch, busy)
    return np.stack([np.broadcast_to(np.asarray(x, dtype=np.int64), (n,)) for x in columns], 1)


def _words(actions: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows' words with delays and send/mux combinations: (tile per word, words, patch)."""
    if not actions.size:
        return np.zeros(0, np.int64), np.zeros((0, 5), np.int64), np.zeros(0, np.int64)
    tile, cycle, code = actions[:, 0], actions[:, 1], actions[:, 3]
    combine = np.r_[
        (code[:-1] == SETMUX)
        & (code[1:] == SEND)
        & (tile[:-1] == tile[1:])
        & (cycle[:-1] == cycle[1:]),
        False,
    ]
    after = np.r_[False, combine[:-1]]
    actions = actions.copy()
    actions[after, 3] = SEND_MUX
    actions[after, 7] = actions[combine, 4]
    actions = actions[~combine]
    tile, cycle, code = actions[:, 0], actions[:, 1], actions[:, 3]
    advance = actions[:, 9]
    same = np.r_[False, tile[1:] == tile[:-1]]
    clock = np.where(same, np.r_[0, cycle[:-1] + advance[:-1]], 0)
    wait = cycle - clock
    if (wait < 0).any():
        raise AssertionError("exchange schedule asks a tile to act inside its own send")
    delays = -(-wait // limit)
    # Expand: each action is preceded by its delays; rows get entry and return.
    row_start = ~same
    row_end = np.r_[tile[1:] != tile[:-1], True]
    count = delays + 1 + row_start + row_end
    total = int(count.sum())
    owner = np.repeat(np.arange(tile.size), count)
    q = np.arange(total) - np.repeat(np.cumsum(count) - count, count)
    q_delay = q - row_start[owner]
    words = np.zeros((total, 5), dtype=np.int64)
    patch = np.full(total, -1, dtype=np.int64)
    is_entry = row_start[owner] & (q == 0)
    is_delay = ~is_entry & (q_delay < delays[owner])
    is_action = ~is_entry & (q_delay == delays[owner])
    is_return = ~is_entry & ~is_delay & ~is_action
    words[is_entry, 0] = ENTRY
    words[is_return, 0] = RETURN
    words[is_delay, 0] = DELAY
    full = q_delay[is_delay] < delays[owner[is_delay]] - 1
    remainder = wait[owner[is_delay]] - (delays[owner[is_delay]] - 1) * limit
    words[is_delay, 1] = np.where(full, limit, remainder)
    words[is_action] = actions[owner[is_action], 3:8]
    patch[is_action] = actions[owner[is_action], 8]
    return tile[owner], words, patch


def _encode_phase(
    plan: ExchangePlan, phase: Phase, count: int, bases: np.ndarray, routes: RouteIds
) -> tuple[_PhaseCode, list[tuple[int, RowCost]], int]:
    limit, tiles = plan.max_transfer_words, plan.tiles
    pieces = cut_pieces(phase, limit, bases)
    start = schedule_pieces(phase, pieces, tiles)
    events = _receive_events(phase, pieces, start, bases, tiles)
    word_tile, words, patch = _words(_actions(phase, pieces, start, events, routes), limit)
    active = distinct(word_tile)
    bounds = row_bounds(word_tile, active)
    code = _PhaseCode(active, bounds, words, patch)
    iterated = set()
    if count > 1:
        iterated = set(phase.sends.tile[phase.sends.stride != 0].tolist())
    has_patch = np.r_[0, np.cumsum(patch >= 0)]
    costs = []
    for tile, (lo, hi) in zip(active.tolist(), bounds.tolist(), strict=True):
        nbytes = -(-WORD_BYTES * (hi - lo) // ALIGNMENT) * ALIGNMENT
        key = None if tile in iterated else ("row", words[lo:hi].tobytes())
        costs.append((tile, RowCost(nbytes, int(has_patch[hi] - has_patch[lo]), key)))
    cycles = int((start + pieces.words).max(initial=0))
    return code, costs, cycles


def encode_exchange(
    plan: ExchangePlan,
    bases: tuple[int, ...] | None = None,
    phases: Collection[int] | None = None,
) -> Encoding:
    """Encode every stored row of ``plan``, or only those of the stored ``phases``.

    ``bases`` defaults to `place_allocations` (of the whole plan). With
    ``phases``, the footprint counts those phases only.
    """
    if bases is None:
        bases = place_allocations(plan)
    placed = np.asarray(bases, dtype=np.int64)
    accumulator = FootprintAccumulator(plan.tiles, INACTIVE_ROW)
    routes = RouteIds()
    codes: dict[int, _PhaseCode] = {}
    cycles: dict[int, int] = {}
    for phase, count in plan.stored_phases():
        if phases is not None and phase.index not in phases:
            continue
        code, costs, cycles[phase.index] = _encode_phase(plan, phase, count, placed, routes)
        codes[phase.index] = code
        accumulator.add_phase(phase.index, costs)
    return Encoding(accumulator.finish(), cycles, tuple(bases), codes, routes)


@dataclass(frozen=True)
class FootprintError:
    """One line of the seed's comparison tables: estimate against encoded bytes."""

    key: int
    """Phase index or tile."""
    estimated: int
    encoded: int

    @property
    def error(self) -> float | None:
        """``(estimated - encoded) / encoded`` (None when nothing was encoded)."""
        return None if self.encoded == 0 else (self.estimated - self.encoded) / self.encoded


def phase_errors(estimate: Footprint, exact: Footprint) -> tuple[FootprintError, ...]:
    """Per stored phase, active-row bytes summed over tiles, estimate against exact."""
    estimated, encoded = estimate.phase_bytes(), exact.phase_bytes()
    return tuple(FootprintError(p, estimated[p], encoded[p]) for p in exact.phases)


def tile_errors(
    estimate: Footprint, exact: Footprint, shared: bool = True
) -> tuple[FootprintError, ...]:
    """Per tile, whole-table bytes (with or without sharing), estimate against exact."""
    a = estimate.shared_tile_bytes if shared else estimate.tile_bytes
    b = exact.shared_tile_bytes if shared else exact.tile_bytes
    return tuple(FootprintError(t, a[t], b[t]) for t in range(exact.tiles))
