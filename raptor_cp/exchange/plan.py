"""`ExchangePlan`: who sends what to whom in each exchange phase of a BSP program.

A plan lists, in program order, exchange phases and `Repeat` blocks (a body of
phases the program runs ``count`` times but stores once). A phase has one
`TileRow` per *active* tile (a tile that sends or receives); every other tile
has an inactive row, which holds only its entry and return. A row's sends give
the payload length in 32-bit words, the receiving tiles (several = multicast)
and the source pointer; its receives give the sending tile, the length and the
receive address. Addresses are an allocation id plus a byte offset: before
placement nothing says where allocations lie, so two allocations are never
contiguous. Inside a Repeat body a pointer may advance by a fixed ``stride``
bytes per iteration (an *iterated* pointer).

A `Phase` has two views of one content: its ``rows`` (objects, for people,
tests and JSON) and its columns, `SendColumns` and `ReceiveColumns` (numpy
arrays, one entry per send or receive in row order: ascending tile, each row's
transfers in order), which the footprint estimate and the exact encoder read.
A phase built from one view computes the other on first use, so plans with
hundreds of thousands of transfers never create an object per transfer. The
JSON form is in `raptor_cp.exchange.plan_json`.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields, replace

import numpy as np

from raptor_cp.errors import InvalidInstanceError
from raptor_cp.limits import MAX_CORES


class TransferMode(enum.Enum):
    """How a transfer's length is counted: 32-bit words, or 64-bit pairs of words."""

    ORDINARY = "ordinary"
    PAIRED = "paired"


@dataclass(frozen=True)
class Address:
    """A byte ``offset`` inside allocation ``allocation`` (before placement)."""

    allocation: int
    offset: int


@dataclass(frozen=True)
class Send:
    """One payload leaving a tile, once, for every tile in ``receivers``."""

    payload: int
    words: int
    receivers: tuple[int, ...]
    source: Address
    source_stride: int = 0
    """Bytes the source pointer advances per Repeat iteration (0: the same data each time)."""
    mode: TransferMode = TransferMode.ORDINARY


@dataclass(frozen=True)
class Receive:
    """One payload arriving from ``sender`` at ``address``."""

    payload: int
    sender: int
    words: int
    address: Address
    stride: int = 0
    """Bytes the receive pointer advances per Repeat iteration."""


@dataclass(frozen=True)
class TileRow:
    """What one tile does in one phase, in the plan's (capture) order."""

    tile: int
    sends: tuple[Send, ...] = ()
    receives: tuple[Receive, ...] = ()


def _ints(values: Sequence[int] | np.ndarray) -> np.ndarray:
    return np.asarray(values, dtype=np.int64).reshape(-1)


def distinct(values: np.ndarray) -> np.ndarray:
    """The sorted distinct ``values`` (`numpy.unique` by sorting: its hashing is ~10x slower
    on the few-hundred-thousand int64 keys plans have, numpy 2.4)."""
    ordered = np.sort(values)
    return ordered[np.diff(ordered, prepend=ordered[:1] - 1) != 0]


@dataclass(frozen=True, eq=False)
class SendColumns:
    """A phase's sends in row order; send ``k`` goes to `receivers_of` ``(k)``."""

    tile: np.ndarray
    payload: np.ndarray
    words: np.ndarray
    allocation: np.ndarray
    offset: np.ndarray
    stride: np.ndarray
    paired: np.ndarray
    """Bool: the transfer counts 64-bit pairs (`TransferMode.PAIRED`)."""
    receivers_start: np.ndarray
    receivers: np.ndarray

    def __len__(self) -> int:
        return int(self.tile.size)

    def fanout(self) -> np.ndarray:
        """Receivers of each send."""
        return np.diff(self.receivers_start)

    def receivers_of(self, k: int) -> np.ndarray:
        return self.receivers[self.receivers_start[k] : self.receivers_start[k + 1]]


@dataclass(frozen=True, eq=False)
class ReceiveColumns:
    """A phase's receives in row order."""

    tile: np.ndarray
    payload: np.ndarray
    sender: np.ndarray
    words: np.ndarray
    allocation: np.ndarray
    offset: np.ndarray
    stride: np.ndarray

    def __len__(self) -> int:
        return int(self.tile.size)


def _same_columns(a: SendColumns | ReceiveColumns, b: SendColumns | ReceiveColumns) -> bool:
    return all(np.array_equal(getattr(a, f.name), getattr(b, f.name)) for f in fields(a))


def _columns(rows: Sequence[TileRow]) -> tuple[SendColumns, ReceiveColumns]:
    sends = [(row.tile, s) for row in rows for s in row.sends]
    receives = [(row.tile, r) for row in rows for r in row.receives]
    fanout = [len(s.receivers) for _, s in sends]
    send_columns = SendColumns(
        tile=_ints([t for t, _ in sends]),
        payload=_ints([s.payload for _, s in sends]),
        words=_ints([s.words for _, s in sends]),
        allocation=_ints([s.source.allocation for _, s in sends]),
        offset=_ints([s.source.offset for _, s in sends]),
        stride=_ints([s.source_stride for _, s in sends]),
        paired=np.asarray([s.mode is TransferMode.PAIRED for _, s in sends], dtype=bool),
        receivers_start=_ints(np.concatenate(([0], np.cumsum(fanout, dtype=np.int64)))),
        receivers=_ints([r for _, s in sends for r in s.receivers]),
    )
    receive_columns = ReceiveColumns(
        tile=_ints([t for t, _ in receives]),
        payload=_ints([r.payload for _, r in receives]),
        sender=_ints([r.sender for _, r in receives]),
        words=_ints([r.words for _, r in receives]),
        allocation=_ints([r.address.allocation for _, r in receives]),
        offset=_ints([r.address.offset for _, r in receives]),
        stride=_ints([r.stride for _, r in receives]),
    )
    return send_columns, receive_columns


def _rows(sends: SendColumns, receives: ReceiveColumns) -> tuple[TileRow, ...]:
    send_tile, receive_tile = sends.tile.tolist(), receives.tile.tolist()
    by_tile: dict[int, tuple[list[Send], list[Receive]]] = {}
    starts, receivers = sends.receivers_start.tolist(), sends.receivers.tolist()
    for k, (payload, words, allocation, offset, stride, paired) in enumerate(
        zip(
            *(getattr(sends, name).tolist() for name in ("payload", "words", "allocation")),
            sends.offset.tolist(),
            sends.stride.tolist(),
            sends.paired.tolist(),
            strict=True,
        )
    ):
        mode = TransferMode.PAIRED if paired else TransferMode.ORDINARY
        send = Send(
            payload,
            words,
            tuple(receivers[starts[k] : starts[k + 1]]),
            Address(allocation, offset),
            stride,
            mode,
        )
        by_tile.setdefault(send_tile[k], ([], []))[0].append(send)
    columns = (receives.payload, receives.sender, receives.words, receives.allocation)
    for k, (payload, sender, words, allocation, offset, stride) in enumerate(
        zip(
            *(c.tolist() for c in columns),
            receives.offset.tolist(),
            receives.stride.tolist(),
            strict=True,
        )
    ):
        receive = Receive(payload, sender, words, Address(allocation, offset), stride)
        by_tile.setdefault(receive_tile[k], ([], []))[1].append(receive)
    return tuple(TileRow(t, tuple(s), tuple(r)) for t, (s, r) in sorted(by_tile.items()))


class Phase:
    """One exchange phase: its rows (ascending tile order) and, equivalently, its columns.

    ``Phase(index, rows)`` builds it from `TileRow` objects; `Phase.from_columns`
    from `SendColumns` and `ReceiveColumns`. Either view is computed from the
    other on first use (module docstring). Two phases are equal when their
    index and columns are.
    """

    __slots__ = ("_receives", "_rows", "_sends", "index")

    def __init__(self, index: int, rows: Sequence[TileRow] = ()) -> None:
        self.index = index
        self._rows: tuple[TileRow, ...] | None = tuple(rows)
        self._sends: SendColumns | None = None
        self._receives: ReceiveColumns | None = None

    @classmethod
    def from_columns(cls, index: int, sends: SendColumns, receives: ReceiveColumns) -> Phase:
        """A phase given by its columns (in row order; see `SendColumns`)."""
        phase = cls.__new__(cls)
        phase.index = index
        phase._rows = None
        phase._sends = sends
        phase._receives = receives
        return phase

    @property
    def given_rows(self) -> tuple[TileRow, ...] | None:
        """The rows as constructed, or None for a phase built from columns."""
        return self._rows

    @property
    def rows(self) -> tuple[TileRow, ...]:
        if self._rows is None:
            self._rows = _rows(self.sends, self.receives)
        return self._rows

    @property
    def sends(self) -> SendColumns:
        if self._sends is None:
            self._sends, self._receives = _columns(self.rows)
        return self._sends

    @property
    def receives(self) -> ReceiveColumns:
        if self._receives is None:
            self._sends, self._receives = _columns(self.rows)
        return self._receives

    def with_strides(self, send_strides: np.ndarray, receive_strides: np.ndarray) -> Phase:
        """The same phase with these pointer strides (Repeat folding)."""
        return Phase.from_columns(
            self.index,
            replace(self.sends, stride=_ints(send_strides)),
            replace(self.receives, stride=_ints(receive_strides)),
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Phase):
            return NotImplemented
        return (
            self.index == other.index
            and _same_columns(self.sends, other.sends)
            and _same_columns(self.receives, other.receives)
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Phase({self.index}, {self.rows!r})"


@dataclass(frozen=True)
class Repeat:
    """``body`` executed ``count`` times and stored once."""

    count: int
    body: tuple[Phase, ...]


Step = Phase | Repeat


@dataclass(frozen=True)
class Allocation:
    """A buffer in one tile's SRAM; ``label`` says what it holds (for reports)."""

    tile: int
    label: str = ""


@dataclass(frozen=True, eq=False)
class ExchangePlan:
    """The exchange of one candidate schedule (see the module docstring).

    ``compute_ns`` optionally gives the busiest tile's compute in each superstep,
    in executed order (one more superstep than executed phases), for BSP timing.
    Construction validates the plan and raises `InvalidInstanceError` naming the
    plan, phase, tile and field at fault (``O(transfers log transfers)``, vectorised).
    """

    name: str
    tiles: int
    max_transfer_words: int
    allocations: tuple[Allocation, ...]
    steps: tuple[Step, ...]
    compute_ns: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        _Validator(self).run()

    def stored_phases(self) -> Iterator[tuple[Phase, int]]:
        """Each stored phase once, in program order, with how often it runs.

        The count is 1 outside Repeat bodies and the Repeat's count (>= 2) inside one.
        """
        for step in self.steps:
            if isinstance(step, Repeat):
                for phase in step.body:
                    yield phase, step.count
            else:
                yield step, 1

    def executed_phases(self) -> Iterator[Phase]:
        """Phases in execution order, Repeat bodies as often as they run."""
        for step in self.steps:
            if isinstance(step, Repeat):
                for _ in range(step.count):
                    yield from step.body
            else:
                yield step


class _Places:
    """Names transfer ``k`` of a phase for error messages: ``phase P tile T send J``."""

    def __init__(self, phase: int, tiles: np.ndarray, kind: str) -> None:
        self.phase, self.tiles, self.kind = phase, tiles, kind

    def __call__(self, k: int) -> str:
        tile = int(self.tiles[k])
        position = k - int(np.searchsorted(self.tiles, tile, side="left"))
        return f"phase {self.phase} tile {tile} {self.kind} {position}"


def _first(mask: np.ndarray) -> int | None:
    hits = np.flatnonzero(mask)
    return int(hits[0]) if hits.size else None


class _Validator:
    """Structural checks of an `ExchangePlan`, one message for the first fault found.

    Row structure is checked on the rows a phase was built from; everything else
    on its columns, check by check (sends, then receives, then their matching).
    """

    def __init__(self, plan: ExchangePlan) -> None:
        self.plan = plan
        self.allocation_tile = _ints([a.tile for a in plan.allocations])

    def fail(self, where: str, message: str) -> None:
        raise InvalidInstanceError(f"{self.plan.name}: {where}: {message}")

    def run(self) -> None:
        plan = self.plan
        if plan.tiles < 1 or plan.max_transfer_words < 1:
            self.fail("plan", "tiles and max_transfer_words must be >= 1")
        if plan.tiles > MAX_CORES:
            self.fail("plan", f"{plan.tiles} tiles exceed the limit of {MAX_CORES:,} (docs/cli.md)")
        bad = _first((self.allocation_tile < 0) | (self.allocation_tile >= plan.tiles))
        if bad is not None:
            self.fail(
                f"allocation {bad}",
                f"tile {plan.allocations[bad].tile} outside 0..{plan.tiles - 1}",
            )
        if any(ns < 0 for ns in plan.compute_ns):
            self.fail("compute_ns", "negative superstep time")
        seen: set[int] = set()
        for step in plan.steps:
            if isinstance(step, Repeat) and (step.count < 2 or not step.body):
                self.fail("repeat", f"needs count >= 2 and a body, got count {step.count}")
        for phase, count in plan.stored_phases():
            if phase.index in seen:
                self.fail(f"phase {phase.index}", "phase index used twice")
            seen.add(phase.index)
            self.phase(phase, count > 1)

    def row_structure(self, phase: Phase) -> None:
        tiles = self.plan.tiles
        previous = -1
        for row in phase.given_rows or ():
            where = f"phase {phase.index} tile {row.tile}"
            if not previous < row.tile < tiles:
                self.fail(where, f"rows need distinct ascending tiles in 0..{tiles - 1}")
            previous = row.tile
            if not row.sends and not row.receives:
                self.fail(where, "a row needs a send or a receive (leave inactive tiles out)")

    def addresses(
        self,
        where: _Places,
        allocation: np.ndarray,
        offset: np.ndarray,
        stride: np.ndarray,
        tile: np.ndarray,
        repeat: bool,
    ) -> None:
        known = (allocation >= 0) & (allocation < self.allocation_tile.size)
        bad = _first(~known)
        if bad is not None:
            self.fail(where(bad), f"unknown allocation {allocation[bad]}")
        owner = self.allocation_tile[allocation]
        bad = _first(owner != tile)
        if bad is not None:
            self.fail(
                where(bad), f"allocation {allocation[bad]} is on tile {owner[bad]}, not {tile[bad]}"
            )
        bad = _first(offset < 0)
        if bad is not None:
            self.fail(where(bad), f"negative offset {offset[bad]}")
        if not repeat:
            bad = _first(stride != 0)
            if bad is not None:
                self.fail(where(bad), "an iterated pointer (stride != 0) outside a Repeat body")

    def phase(self, phase: Phase, repeat: bool) -> None:
        self.row_structure(phase)
        tiles = self.plan.tiles
        s, r = phase.sends, phase.receives
        s_at, r_at = _Places(phase.index, s.tile, "send"), _Places(phase.index, r.tile, "receive")
        fanout = s.fanout()
        bad = _first((s.words < 1) | (fanout < 1))
        if bad is not None:
            self.fail(s_at(bad), "needs words >= 1 and at least one receiver")
        owner = np.repeat(s.tile, fanout)
        receivers = s.receivers
        follows = np.ones(receivers.size, dtype=bool)
        follows[1:] = receivers[1:] > receivers[:-1]
        follows[s.receivers_start[:-1]] = True
        wrong = (receivers < 0) | (receivers >= tiles) | (receivers == owner) | ~follows
        bad = _first(np.logical_or.reduceat(wrong, s.receivers_start[:-1])) if wrong.size else None
        if bad is not None:
            self.fail(
                s_at(bad), f"receivers must be distinct ascending other tiles in 0..{tiles - 1}"
            )
        self.addresses(s_at, s.allocation, s.offset, s.stride, s.tile, repeat)
        send_of = np.repeat(np.arange(len(s)), fanout)
        sent = np.stack((receivers, s.payload[send_of], owner))
        order = np.lexsort(sent[::-1])
        twice = np.flatnonzero((np.diff(sent[:, order], axis=1) == 0).all(axis=0))
        if twice.size:
            k = int(order[twice + 1].min())
            self.fail(
                s_at(int(send_of[k])),
                f"payload {s.payload[send_of[k]]} sent to tile {receivers[k]} twice",
            )
        received = np.stack((r.tile, r.payload, r.sender))
        order_in = np.lexsort(received[::-1])
        again = np.flatnonzero((np.diff(received[:, order_in], axis=1) == 0).all(axis=0))
        bad = _first(r.words < 1)
        if again.size:
            repeated = int(order_in[again + 1].min())
            bad = repeated if bad is None else min(bad, repeated)
        if bad is not None:
            self.fail(r_at(bad), "needs words >= 1 and a (payload, sender) not received before")
        self.addresses(r_at, r.allocation, r.offset, r.stride, r.tile, repeat)
        self.matching(phase.index, sent, s.words[send_of], received, r.words)

    def matching(
        self,
        index: int,
        sent: np.ndarray,
        sent_words: np.ndarray,
        received: np.ndarray,
        received_words: np.ndarray,
    ) -> None:
        """Every (receiver, payload, sender) sent is received once with the same length."""
        keys = np.concatenate((sent, received), axis=1)
        side = np.concatenate((np.zeros(sent.shape[1], bool), np.ones(received.shape[1], bool)))
        words = np.concatenate((sent_words, received_words))
        order = np.lexsort((side, *keys[::-1]))
        keys, side, words = keys[:, order], side[order], words[order]
        paired = np.zeros(side.size, dtype=bool)
        if side.size > 1:
            equal = (keys[:, 1:] == keys[:, :-1]).all(axis=0)
            paired[1:] |= equal
            paired[:-1] |= equal
        bad = _first(~paired)
        if bad is not None:
            tile, payload, sender = keys[:, bad].tolist()
            what = "received but never sent" if side[bad] else "sent but never received"
            self.fail(f"phase {index} tile {tile}", f"payload {payload} from tile {sender} {what}")
        bad = _first(~side & np.r_[words[1:] != words[:-1], False])
        if bad is not None:
            tile, payload, _ = keys[:, bad].tolist()
            self.fail(
                f"phase {index} tile {tile}",
                f"payload {payload} sent as {words[bad]} words, received as {words[bad + 1]}",
            )
