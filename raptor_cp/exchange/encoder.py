"""Encode a plan's exchange rows exactly: the reference the footprint estimate is measured on.

The estimate (`raptor_cp.exchange.footprint`) prices rows in capture
order before placement. The encoder places the allocations, schedules every
transfer on exchange cycles and emits each row's instruction words in that
scheduled order, so the effects the seed lists as the estimate's blind spots
appear: pointer reuse, delays, bidirectional instruction combinations, paired
lengths and exact normalized-row sharing.

Instruction model. Every instruction is one 32-bit word (PopLibs prices
exchange code at 4 bytes per exchange instruction: ``DynamicSlice.cpp``,
row ``embedding_planner_exchange_code_model`` of the reference data's
``poplar_exchange_code_observations.csv``). The instruction set is this
project's model, built from the seed's price categories; it is exact for the
model, not a copy of a real ISA:

=============  ===========================================================
``entry``      first word of every row
``return``     last word of every row; the row is padded to 8 bytes
``setsrc a``   set the source pointer to address ``a`` (a patch); omitted
               when the pointer already holds ``a`` (the previous send's end)
``setsrc+ s``  iterated source pointer: load from a register, advance by ``s``
``setlen n``   length register, for transfers over 64 units
``send``       send one piece to its receivers (a multicast is one send)
``send+mux``   a send and a ``setmux`` issued in the same cycle, combined
``setmux t``   select sending tile ``t``; omitted while ``t`` is selected
``neutral``    deselect after a receive run (before a gap, and at the end)
``setdst a``   set the receive pointer (a patch); omitted when it continues
``setdst+ s``  iterated receive pointer
``delay c``    wait ``c`` cycles until the tile's next transfer starts
=============  ===========================================================

A transfer's length counts units: words in ordinary mode, 64-bit pairs in
paired mode; pieces are cut at ``plan.max_transfer_words`` units. Timing: a
tile sends one word per cycle and receives one word per cycle (4 bytes per
cycle each way, ``ipu_targets.csv``); a piece occupies its sender and all its
receivers for its words' cycles. Pieces are list-scheduled: repeatedly the
piece that can start earliest (each sender's pieces in row order; ties to the
lower sender tile) starts as soon as its sender and receivers are free.

Placement. On each tile, allocations are laid out in id order from address 0,
each rounded up to 8 bytes, so the end of one allocation can meet the start of
the next, which the estimate (before placement) never assumes.

Sharing follows the estimate's rule (`shared_bytes`) with the normalized word
sequence (addresses replaced by a placeholder) as the key.
"""

from __future__ import annotations

import heapq
from collections import defaultdict, deque
from dataclasses import dataclass

import numpy as np

from raptor_cp.exchange.footprint import (
    INACTIVE_ROW,
    LONG_PAYLOAD_WORDS,
    Footprint,
    FootprintAccumulator,
    RowCost,
    align,
    split,
)
from raptor_cp.exchange.plan import ExchangePlan, Phase, Receive, TileRow, TransferMode

WORD_BYTES = 4
PATCH = "@"
"""Placeholder of an address operand in a normalized row."""

Instruction = tuple[object, ...]


@dataclass(frozen=True)
class EncodedRow:
    """One row's normalized words, its patch values (absolute addresses) and its bytes."""

    words: tuple[Instruction, ...]
    patches: tuple[int, ...]
    nbytes: int


@dataclass(frozen=True)
class Encoding:
    """The exact encoding of a plan."""

    footprint: Footprint
    rows: dict[tuple[int, int], EncodedRow]
    """Active rows keyed ``(phase index, tile)``."""
    exchange_cycles: dict[int, int]
    """Cycles each stored phase's exchange takes (the end of its last transferred word)."""
    bases: tuple[int, ...]
    """Placed start address of each allocation."""


@dataclass(frozen=True)
class _Piece:
    sender: int
    receivers: tuple[int, ...]
    payload: int
    units: int
    words: int
    offset: int
    """Byte offset of the piece inside its payload."""
    source: int
    stride: int
    mode: TransferMode


@dataclass(frozen=True)
class _Event:
    start: int
    end: int
    piece: _Piece
    receive: Receive | None
    """The receiving side, or None for the send."""


def place_allocations(plan: ExchangePlan) -> tuple[int, ...]:
    """Base address of every allocation (see "Placement" in the module docstring)."""
    extent = [0] * len(plan.allocations)
    for phase, count in plan.stored_phases():
        last = count - 1
        for row in phase.rows:
            for s in row.sends:
                end = s.source.offset + WORD_BYTES * s.words + s.source_stride * last
                extent[s.source.allocation] = max(extent[s.source.allocation], end)
            for r in row.receives:
                end = r.address.offset + WORD_BYTES * r.words + r.stride * last
                extent[r.address.allocation] = max(extent[r.address.allocation], end)
    bases = []
    top: dict[int, int] = defaultdict(int)
    for a, allocation in enumerate(plan.allocations):
        bases.append(top[allocation.tile])
        top[allocation.tile] += align(extent[a])
    return tuple(bases)


def _pieces(row: TileRow, limit: int, bases: tuple[int, ...]) -> list[_Piece]:
    pieces = []
    for send in row.sends:
        paired = send.mode is TransferMode.PAIRED
        units = -(-send.words // 2) if paired else send.words
        offset = 0
        for piece in split(units, limit):
            words = min(2 * piece if paired else piece, send.words - offset // WORD_BYTES)
            source = bases[send.source.allocation] + send.source.offset + offset
            pieces.append(
                _Piece(
                    row.tile,
                    send.receivers,
                    send.payload,
                    piece,
                    words,
                    offset,
                    source,
                    send.source_stride,
                    send.mode,
                )
            )
            offset += WORD_BYTES * words
    return pieces


def schedule_phase(
    phase: Phase, limit: int, bases: tuple[int, ...], tiles: int
) -> list[tuple[int, _Piece]]:
    """``(start cycle, piece)`` of every piece of ``phase`` (module docstring, "Timing")."""
    queues = {
        row.tile: deque((p, np.asarray(p.receivers)) for p in _pieces(row, limit, bases))
        for row in phase.rows
        if row.sends
    }
    send_free: dict[int, int] = defaultdict(int)
    receive_free = np.zeros(tiles, dtype=np.int64)
    heap = [(0, tile) for tile in queues]
    heapq.heapify(heap)
    scheduled = []
    while heap:
        bound, tile = heapq.heappop(heap)
        piece, receivers = queues[tile][0]
        start = max(send_free[tile], int(receive_free[receivers].max()))
        if start > bound:
            heapq.heappush(heap, (start, tile))
            continue
        queues[tile].popleft()
        scheduled.append((start, piece))
        end = start + piece.words
        send_free[tile] = end
        receive_free[receivers] = end
        if queues[tile]:
            heapq.heappush(heap, (end, tile))
    return scheduled


def _encode_row(
    events: list[_Event], bases: tuple[int, ...]
) -> tuple[list[Instruction], list[int]]:
    """Instruction words and patch values of one tile's events (module docstring)."""
    events.sort(key=lambda ev: (ev.start, ev.receive is None))
    send_starts = {ev.start for ev in events if ev.receive is None}
    combined: dict[int, int] = {}
    words: list[Instruction] = [("entry",)]
    patches: list[int] = []
    source: tuple[bool, int] | None = None
    target: tuple[bool, int] | None = None
    mux: int | None = None
    busy = 0
    received = 0
    for ev in events:
        piece = ev.piece
        if ev.receive is not None and mux is not None and ev.start > received:
            words.append(("neutral",))
            mux = None
        if ev.start > busy:
            words.append(("delay", ev.start - busy))
        if ev.receive is not None:
            if mux != piece.sender:
                if ev.start in send_starts:
                    combined[ev.start] = piece.sender
                else:
                    words.append(("setmux", piece.sender))
                mux = piece.sender
            receive = ev.receive
            address = bases[receive.address.allocation] + receive.address.offset + piece.offset
            iterated = receive.stride != 0
            if (iterated, address) != target:
                words.append(("setdst+", receive.stride) if iterated else ("setdst", PATCH))
                if not iterated:
                    patches.append(address)
            target = (iterated, address + WORD_BYTES * piece.words)
            received = ev.end
        else:
            iterated = piece.stride != 0
            if (iterated, piece.source) != source:
                words.append(("setsrc+", piece.stride) if iterated else ("setsrc", PATCH))
                if not iterated:
                    patches.append(piece.source)
            source = (iterated, piece.source + WORD_BYTES * piece.words)
            if piece.units > LONG_PAYLOAD_WORDS:
                words.append(("setlen", piece.units))
            transfer = (piece.receivers, piece.units, piece.mode.value)
            if ev.start in combined:
                words.append(("send+mux", *transfer, combined.pop(ev.start)))
            else:
                words.append(("send", *transfer))
        busy = max(busy, ev.end)
    if mux is not None:
        words.append(("neutral",))
    words.append(("return",))
    return words, patches


def encode_exchange(plan: ExchangePlan, bases: tuple[int, ...] | None = None) -> Encoding:
    """Encode every stored row of ``plan``; ``bases`` defaults to `place_allocations`."""
    if bases is None:
        bases = place_allocations(plan)
    accumulator = FootprintAccumulator(plan.tiles, INACTIVE_ROW)
    encoded: dict[tuple[int, int], EncodedRow] = {}
    cycles: dict[int, int] = {}
    for phase, count in plan.stored_phases():
        receives = {(row.tile, r.payload, r.sender): r for row in phase.rows for r in row.receives}
        events: dict[int, list[_Event]] = {row.tile: [] for row in phase.rows}
        scheduled = schedule_phase(phase, plan.max_transfer_words, bases, plan.tiles)
        for start, piece in scheduled:
            end = start + piece.words
            events[piece.sender].append(_Event(start, end, piece, None))
            for r in piece.receivers:
                receive = receives[r, piece.payload, piece.sender]
                events[r].append(_Event(start, end, piece, receive))
        cycles[phase.index] = max((start + p.words for start, p in scheduled), default=0)
        costs = []
        for row in phase.rows:
            words, patches = _encode_row(events[row.tile], bases)
            nbytes = align(WORD_BYTES * len(words))
            encoded[phase.index, row.tile] = EncodedRow(tuple(words), tuple(patches), nbytes)
            iterated = count > 1 and any(s.source_stride for s in row.sends)
            key = None if iterated else ("row", tuple(words))
            costs.append((row.tile, RowCost(nbytes, len(patches), key)))
        accumulator.add_phase(phase.index, costs)
    return Encoding(accumulator.finish(), encoded, cycles, bases)


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
