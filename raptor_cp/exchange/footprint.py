"""Estimate the encoded exchange-table bytes of a plan from its geometry alone.

The reference is the seed "Exchange footprint model": a ranking model used
before placement and scheduling, neither an upper nor a lower bound. A row is
one tile's code for one exchange phase; it costs

- 8 bytes per send for address setup and sending, plus 4 for a payload over
  64 words; a multicast is one send, counted once at the source;
- 8 bytes per receive for the source and neutral controls, plus 4 when the
  receive address is not the end of the preceding receive in the row (an
  address is an allocation plus an offset, so separate allocations never look
  contiguous; the first receive of a row always sets its address);
- 8 bytes for entry and return; the row is rounded up to 8-byte alignment.

Transfers longer than the ISA limit (``plan.max_transfer_words``) are split and
each piece is priced as a transfer of its own. Lengths are counted as ordinary
32-bit words whatever the transfer mode, as the seed's capture estimator does.
Rows accumulate per tile over the phases; the table's size is the busiest tile.
A Repeat body is stored once. A tile with nothing to do in a phase still has an
8-byte inactive row.

Structural sharing (the seed's extension). Each row gets a signature: its
ordered send routes (receiver tiles, so also the fanout), payload lengths and
modes, its ordered receive routes (sender tiles) and lengths with the
receive-pointer continuation decisions, plus the row's estimated size and patch
count; absolute addresses are left out. Its patches are its address values
(one per send piece, one per receive that sets its address). On one tile, ``k``
rows with the same signature, each ``R`` bytes with ``p`` patches, are stored
as one row: the second occurrence adds the shared patch offsets and the address
values of both invocations, later ones only their address values::

    shared(R, p, k) = R + 4p + 4pk          (k >= 2)

and the estimate keeps ``min(kR, shared)``, since an emitter would not share a
row whose patches cost more than the copies. Inactive rows have no patches and
are stored once. Rows in a Repeat body that send from an iterated source
pointer are never shared. Signatures are exact (the row's integer columns as
bytes, receiver sets as exact ids), not hashes, so equal keys are equal structure.

Cost: ``O(n log n)`` numpy work for ``n`` transfers, plus one signature per
active row in Python.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass

import numpy as np

from raptor_cp.exchange.plan import ExchangePlan, Phase, SendColumns, TileRow, distinct

SEND_BYTES = 8
"""Address setup and send, per send (seed)."""
LONG_PAYLOAD_BYTES = 4
"""Extra bytes of a send whose payload exceeds `LONG_PAYLOAD_WORDS` (seed)."""
LONG_PAYLOAD_WORDS = 64
RECEIVE_BYTES = 8
"""Source and neutral controls, per receive (seed)."""
RECEIVE_ADDRESS_BYTES = 4
"""A receive address that does not continue the preceding receive (seed)."""
ENTRY_RETURN_BYTES = 8
"""Entry and return of every row, active or not (seed)."""
ALIGNMENT = 8
"""Rows are rounded up to this many bytes (seed)."""
PATCH_OFFSET_BYTES = 4
"""Stored once per patch of a shared row: where in the row the address goes."""
PATCH_VALUE_BYTES = 4
"""Stored per patch and invocation of a shared row: the address value."""


def align(nbytes: int) -> int:
    """``nbytes`` rounded up to `ALIGNMENT`."""
    return -(-nbytes // ALIGNMENT) * ALIGNMENT


def shared_bytes(row_bytes: int, patches: int, occurrences: int) -> int:
    """Bytes of ``occurrences`` rows of one signature on one tile (module docstring)."""
    if occurrences < 2:
        return row_bytes * occurrences
    shared = row_bytes + PATCH_OFFSET_BYTES * patches + PATCH_VALUE_BYTES * patches * occurrences
    return min(row_bytes * occurrences, shared)


@dataclass(frozen=True)
class RowCost:
    """One row's bytes, its patch count and its sharing key (None: never shared)."""

    nbytes: int
    patches: int
    key: Hashable | None


INACTIVE_ROW = RowCost(align(ENTRY_RETURN_BYTES), 0, ("inactive",))
"""An inactive row: entry and return only, no addresses."""


@dataclass(frozen=True)
class Footprint:
    """Exchange-table bytes of a plan, per row and per tile, with and without sharing.

    ``rows`` holds active rows only, keyed ``(phase index, tile)``; a Repeat body's
    phase appears once under its own index. Tile totals include inactive rows.
    """

    tiles: int
    phases: tuple[int, ...]
    """Stored phase indices in program order."""
    rows: dict[tuple[int, int], int]
    tile_bytes: tuple[int, ...]
    """Per tile, every row stored separately."""
    shared_tile_bytes: tuple[int, ...]
    """Per tile, with structural sharing."""

    def busiest(self, shared: bool = True) -> tuple[int, int]:
        """``(tile, bytes)`` of the tile with the largest table (lowest tile on ties)."""
        table = self.shared_tile_bytes if shared else self.tile_bytes
        best = max(range(self.tiles), key=lambda t: (table[t], -t))
        return best, table[best]

    def phase_bytes(self) -> dict[int, int]:
        """Per stored phase, the bytes of its active rows summed over tiles (no sharing)."""
        total = dict.fromkeys(self.phases, 0)
        for (phase, _), nbytes in self.rows.items():
            total[phase] += nbytes
        return total


class FootprintAccumulator:
    """Sums row costs per tile, with and without sharing, into a `Footprint`.

    The estimator and the exact encoder share it, so both count rows, inactive
    rows, Repeat bodies and sharing the same way and differ only in row costs.
    """

    def __init__(self, tiles: int, inactive: RowCost) -> None:
        self.tiles = tiles
        self.inactive = inactive
        self.rows: dict[tuple[int, int], int] = {}
        self.phases: list[int] = []
        self._unshared = [0] * tiles
        self._excluded = [0] * tiles
        self._active = [0] * tiles
        self._groups: list[dict[Hashable, list[int]]] = [{} for _ in range(tiles)]

    def add_phase(self, phase: int, rows: Iterable[tuple[int, RowCost]]) -> None:
        """Record one stored phase: ``(tile, cost)`` of each active row."""
        self.phases.append(phase)
        for tile, cost in rows:
            self.rows[phase, tile] = cost.nbytes
            self._active[tile] += 1
            self._add(tile, cost, 1)

    def _add(self, tile: int, cost: RowCost, count: int) -> None:
        self._unshared[tile] += cost.nbytes * count
        if cost.key is None:
            self._excluded[tile] += cost.nbytes * count
            return
        group = self._groups[tile].setdefault(cost.key, [cost.nbytes, cost.patches, 0])
        group[2] += count

    def finish(self) -> Footprint:
        inactive = self.inactive
        shared = []
        for tile in range(self.tiles):
            idle = len(self.phases) - self._active[tile]
            if idle:
                self._add(tile, inactive, idle)
            groups = self._groups[tile].values()
            shared.append(self._excluded[tile] + sum(shared_bytes(r, p, k) for r, p, k in groups))
        return Footprint(
            tiles=self.tiles,
            phases=tuple(self.phases),
            rows=self.rows,
            tile_bytes=tuple(self._unshared),
            shared_tile_bytes=tuple(shared),
        )


class RouteIds:
    """Exact small ids for receiver sets: equal ids, equal tuples (used in row signatures)."""

    def __init__(self) -> None:
        self._ids: dict[bytes, int] = {}
        self._keys: list[bytes] = []

    def of(self, sends: SendColumns) -> np.ndarray:
        """The id of every send's receiver set."""
        starts, receivers = sends.receivers_start.tolist(), sends.receivers
        return np.asarray(
            [self._id(receivers[starts[k] : starts[k + 1]].tobytes()) for k in range(len(sends))],
            dtype=np.int64,
        )

    def _id(self, key: bytes) -> int:
        known = self._ids.get(key)
        if known is None:
            known = self._ids[key] = len(self._keys)
            self._keys.append(key)
        return known

    def receivers(self, route: int) -> tuple[int, ...]:
        """The receiver tiles of ``route``."""
        return tuple(np.frombuffer(self._keys[route], dtype=np.int64).tolist())


def row_bounds(tiles: np.ndarray, active: np.ndarray) -> np.ndarray:
    """Where each tile of ``active`` starts and ends in ``tiles`` (ascending): ``(A, 2)``."""
    return np.stack(
        (np.searchsorted(tiles, active, "left"), np.searchsorted(tiles, active, "right")), axis=1
    )


def estimate_rows(
    phase: Phase, limit: int, in_repeat: bool, routes: RouteIds
) -> list[tuple[int, RowCost]]:
    """The seed's price of every active row of ``phase``, with patches and signature.

    Vectorised over transfers; ``O(n log n)`` for ``n`` transfers plus one
    signature per row (module docstring).
    """
    sends, receives = phase.sends, phase.receives
    full, rest = np.divmod(sends.words, limit)
    pieces = full + (rest > 0)
    long = full * (limit > LONG_PAYLOAD_WORDS) + (rest > LONG_PAYLOAD_WORDS)
    send_bytes = SEND_BYTES * pieces + LONG_PAYLOAD_BYTES * long
    receive_pieces = -(-receives.words // limit)
    continued = np.zeros(len(receives), dtype=bool)
    continued[1:] = (
        (receives.tile[1:] == receives.tile[:-1])
        & (receives.allocation[1:] == receives.allocation[:-1])
        & (receives.offset[1:] == receives.offset[:-1] + 4 * receives.words[:-1])
    )
    receive_bytes = RECEIVE_BYTES * receive_pieces + RECEIVE_ADDRESS_BYTES * ~continued
    active = distinct(np.concatenate((sends.tile, receives.tile)))
    at_send = np.searchsorted(active, sends.tile)
    at_receive = np.searchsorted(active, receives.tile)
    size = active.size
    nbytes = (
        ENTRY_RETURN_BYTES
        + np.bincount(at_send, send_bytes, minlength=size)
        + np.bincount(at_receive, receive_bytes, minlength=size)
    ).astype(np.int64)
    nbytes = -(-nbytes // ALIGNMENT) * ALIGNMENT
    patches = (
        np.bincount(at_send, pieces, minlength=size)
        + np.bincount(at_receive, ~continued, minlength=size)
    ).astype(np.int64)
    send_signature = np.stack((routes.of(sends), sends.words, sends.paired), axis=1)
    receive_signature = np.stack((receives.sender, receives.words, continued), axis=1)
    iterated = np.zeros(size, dtype=bool)
    if in_repeat:
        iterated[at_send[sends.stride != 0]] = True
    s_bounds = row_bounds(sends.tile, active).tolist()
    r_bounds = row_bounds(receives.tile, active).tolist()
    costs = []
    for k, (tile, row_bytes, row_patches) in enumerate(
        zip(active.tolist(), nbytes.tolist(), patches.tolist(), strict=True)
    ):
        key = None
        if not iterated[k]:
            (a, b), (c, d) = s_bounds[k], r_bounds[k]
            key = (
                "row",
                send_signature[a:b].tobytes(),
                receive_signature[c:d].tobytes(),
                row_bytes,
                row_patches,
            )
        costs.append((tile, RowCost(row_bytes, row_patches, key)))
    return costs


def estimate_row(row: TileRow, limit: int, in_repeat: bool) -> RowCost:
    """The seed's price of one active row (`estimate_rows` on a phase of that row alone)."""
    return estimate_rows(Phase(0, (row,)), limit, in_repeat, RouteIds())[0][1]


def estimate_footprint(plan: ExchangePlan) -> Footprint:
    """The seed's footprint estimate of ``plan`` (see the module docstring)."""
    accumulator = FootprintAccumulator(plan.tiles, INACTIVE_ROW)
    routes = RouteIds()
    for phase, count in plan.stored_phases():
        rows = estimate_rows(phase, plan.max_transfer_words, count > 1, routes)
        accumulator.add_phase(phase.index, rows)
    return accumulator.finish()
