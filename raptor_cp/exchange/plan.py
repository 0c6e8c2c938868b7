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

The JSON form (`plan_to_json`, `load_plan`) is what ``raptor-cp exchange`` reads::

    {"format": "raptor-exchange-plan", "version": 1, "name": "...", "tiles": 1472,
     "max_transfer_words": 4096, "compute_ns": [...],
     "allocations": [{"tile": 0, "label": "fc1 out"}, ...],
     "steps": [{"phase": 0, "rows": [{"tile": 0,
                 "sends": [{"payload": 0, "words": 48, "receivers": [3, 4],
                            "source": [0, 0], "source_stride": 0, "mode": "ordinary"}],
                 "receives": [{"payload": 1, "sender": 2, "words": 8,
                               "address": [1, 0], "stride": 0}]}]},
               {"repeat": 4, "body": [{"phase": 1, "rows": [...]}]}]}
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from raptor_cp.errors import InvalidInputError, InvalidInstanceError
from raptor_cp.files import read_json

FORMAT = "raptor-exchange-plan"
VERSION = 1


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


@dataclass(frozen=True)
class Phase:
    """One exchange phase: the rows of its active tiles, in ascending tile order."""

    index: int
    rows: tuple[TileRow, ...] = ()


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
    plan, phase, tile and field at fault.
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


class _Validator:
    """Structural checks of an `ExchangePlan`, one message per first fault found."""

    def __init__(self, plan: ExchangePlan) -> None:
        self.plan = plan

    def fail(self, where: str, message: str) -> None:
        raise InvalidInstanceError(f"{self.plan.name}: {where}: {message}")

    def run(self) -> None:
        plan = self.plan
        if plan.tiles < 1 or plan.max_transfer_words < 1:
            self.fail("plan", "tiles and max_transfer_words must be >= 1")
        for a, allocation in enumerate(plan.allocations):
            if not 0 <= allocation.tile < plan.tiles:
                self.fail(f"allocation {a}", f"tile {allocation.tile} outside 0..{plan.tiles - 1}")
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

    def address(self, where: str, address: Address, tile: int, stride: int, repeat: bool) -> None:
        allocations = self.plan.allocations
        if not 0 <= address.allocation < len(allocations):
            self.fail(where, f"unknown allocation {address.allocation}")
        if allocations[address.allocation].tile != tile:
            self.fail(
                where,
                f"allocation {address.allocation} is on tile "
                f"{allocations[address.allocation].tile}, not {tile}",
            )
        if address.offset < 0:
            self.fail(where, f"negative offset {address.offset}")
        if stride and not repeat:
            self.fail(where, "an iterated pointer (stride != 0) outside a Repeat body")

    def phase(self, phase: Phase, repeat: bool) -> None:
        tiles = self.plan.tiles
        sent: dict[tuple[int, int, int], int] = {}  # (receiver, payload, sender) -> words
        received: dict[tuple[int, int, int], int] = {}
        previous = -1
        for row in phase.rows:
            where = f"phase {phase.index} tile {row.tile}"
            if not previous < row.tile < tiles:
                self.fail(where, f"rows need distinct ascending tiles in 0..{tiles - 1}")
            previous = row.tile
            if not row.sends and not row.receives:
                self.fail(where, "a row needs a send or a receive (leave inactive tiles out)")
            for k, send in enumerate(row.sends):
                at = f"{where} send {k}"
                receivers = send.receivers
                if send.words < 1 or not receivers:
                    self.fail(at, "needs words >= 1 and at least one receiver")
                if list(receivers) != sorted(set(receivers)) or not (
                    receivers[0] >= 0 and receivers[-1] < tiles and row.tile not in receivers
                ):
                    self.fail(
                        at, f"receivers must be distinct ascending other tiles in 0..{tiles - 1}"
                    )
                self.address(at, send.source, row.tile, send.source_stride, repeat)
                for r in receivers:
                    if (r, send.payload, row.tile) in sent:
                        self.fail(at, f"payload {send.payload} sent to tile {r} twice")
                    sent[r, send.payload, row.tile] = send.words
            for k, receive in enumerate(row.receives):
                at = f"{where} receive {k}"
                key = (row.tile, receive.payload, receive.sender)
                if receive.words < 1 or key in received:
                    self.fail(at, "needs words >= 1 and a (payload, sender) not received before")
                self.address(at, receive.address, row.tile, receive.stride, repeat)
                received[key] = receive.words
        for key in sorted(sent.keys() ^ received.keys()):
            tile, payload, sender = key
            side = "sent but never received" if key in sent else "received but never sent"
            self.fail(
                f"phase {phase.index} tile {tile}", f"payload {payload} from tile {sender} {side}"
            )
        for key in sorted(sent):
            if sent[key] != received[key]:
                self.fail(
                    f"phase {phase.index} tile {key[0]}",
                    f"payload {key[1]} sent as {sent[key]} words, received as {received[key]}",
                )


# -- JSON ----------------------------------------------------------------------


def plan_to_json(plan: ExchangePlan) -> dict[str, object]:
    """The JSON document of ``plan`` (see the module docstring)."""

    def phase(p: Phase) -> dict[str, object]:
        rows = []
        for row in p.rows:
            sends = [
                {
                    "payload": s.payload,
                    "words": s.words,
                    "receivers": list(s.receivers),
                    "source": [s.source.allocation, s.source.offset],
                    "source_stride": s.source_stride,
                    "mode": s.mode.value,
                }
                for s in row.sends
            ]
            receives = [
                {
                    "payload": r.payload,
                    "sender": r.sender,
                    "words": r.words,
                    "address": [r.address.allocation, r.address.offset],
                    "stride": r.stride,
                }
                for r in row.receives
            ]
            rows.append({"tile": row.tile, "sends": sends, "receives": receives})
        return {"phase": p.index, "rows": rows}

    steps = [
        {"repeat": s.count, "body": [phase(p) for p in s.body]}
        if isinstance(s, Repeat)
        else phase(s)
        for s in plan.steps
    ]
    return {
        "format": FORMAT,
        "version": VERSION,
        "name": plan.name,
        "tiles": plan.tiles,
        "max_transfer_words": plan.max_transfer_words,
        "compute_ns": list(plan.compute_ns),
        "allocations": [{"tile": a.tile, "label": a.label} for a in plan.allocations],
        "steps": steps,
    }


def write_plan(plan: ExchangePlan, path: str | Path) -> None:
    """Write ``plan`` as JSON to ``path``."""
    Path(path).write_text(json.dumps(plan_to_json(plan), indent=1) + "\n")


def load_plan(path: str | Path) -> ExchangePlan:
    """Read a plan written by `write_plan`; errors name the file and the field."""
    return plan_from_json(read_json(path), str(path))


class _Reader:
    """Typed access to a parsed JSON document; every error names the field path."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, field: str, expected: str) -> InvalidInputError:
        return InvalidInputError(f"{self.source}: {field}: expected {expected}")

    def as_obj(self, value: object, field: str) -> dict[str, object]:
        if not isinstance(value, dict):
            raise self.fail(field, "an object")
        return value

    def as_list(self, value: object, field: str) -> list[object]:
        if not isinstance(value, list):
            raise self.fail(field, "a list")
        return value

    def as_int(
        self, data: dict[str, object], key: str, field: str, default: int | None = None
    ) -> int:
        value = data.get(key, default)
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.fail(f"{field}.{key}", "an integer")
        return value

    def address(self, value: object, field: str) -> Address:
        pair = self.as_list(value, field)
        if len(pair) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) for v in pair):
            raise self.fail(field, "[allocation, byte offset] integers")
        return Address(int(pair[0]), int(pair[1]))  # type: ignore[arg-type]

    def send(self, value: object, field: str) -> Send:
        data = self.as_obj(value, field)
        receivers = self.as_list(data.get("receivers"), f"{field}.receivers")
        if not all(isinstance(r, int) and not isinstance(r, bool) for r in receivers):
            raise self.fail(f"{field}.receivers", "a list of tile integers")
        mode = data.get("mode", TransferMode.ORDINARY.value)
        if mode not in ("ordinary", "paired"):
            raise self.fail(f"{field}.mode", '"ordinary" or "paired"')
        return Send(
            payload=self.as_int(data, "payload", field),
            words=self.as_int(data, "words", field),
            receivers=tuple(int(r) for r in receivers),  # type: ignore[call-overload]
            source=self.address(data.get("source"), f"{field}.source"),
            source_stride=self.as_int(data, "source_stride", field, 0),
            mode=TransferMode(mode),
        )

    def receive(self, value: object, field: str) -> Receive:
        data = self.as_obj(value, field)
        return Receive(
            payload=self.as_int(data, "payload", field),
            sender=self.as_int(data, "sender", field),
            words=self.as_int(data, "words", field),
            address=self.address(data.get("address"), f"{field}.address"),
            stride=self.as_int(data, "stride", field, 0),
        )

    def phase(self, value: object, field: str) -> Phase:
        data = self.as_obj(value, field)
        rows = []
        for r, row_value in enumerate(self.as_list(data.get("rows", []), f"{field}.rows")):
            at = f"{field}.rows[{r}]"
            row = self.as_obj(row_value, at)
            sends = self.as_list(row.get("sends", []), f"{at}.sends")
            receives = self.as_list(row.get("receives", []), f"{at}.receives")
            rows.append(
                TileRow(
                    tile=self.as_int(row, "tile", at),
                    sends=tuple(self.send(s, f"{at}.sends[{k}]") for k, s in enumerate(sends)),
                    receives=tuple(
                        self.receive(v, f"{at}.receives[{k}]") for k, v in enumerate(receives)
                    ),
                )
            )
        return Phase(self.as_int(data, "phase", field), tuple(rows))


def plan_from_json(data: object, source: str) -> ExchangePlan:
    """Build and validate a plan from a parsed JSON document read from ``source``."""
    read = _Reader(source)
    top = read.as_obj(data, "document")
    if top.get("format") != FORMAT or top.get("version") != VERSION:
        raise read.fail("format/version", f'"format": "{FORMAT}", "version": {VERSION}')
    allocations = []
    for a, value in enumerate(read.as_list(top.get("allocations", []), "allocations")):
        entry = read.as_obj(value, f"allocations[{a}]")
        label = entry.get("label", "")
        if not isinstance(label, str):
            raise read.fail(f"allocations[{a}].label", "a string")
        allocations.append(Allocation(read.as_int(entry, "tile", f"allocations[{a}]"), label))
    steps: list[Step] = []
    for s, value in enumerate(read.as_list(top.get("steps", []), "steps")):
        field = f"steps[{s}]"
        entry = read.as_obj(value, field)
        if "repeat" in entry:
            body = read.as_list(entry.get("body"), f"{field}.body")
            phases = tuple(read.phase(p, f"{field}.body[{k}]") for k, p in enumerate(body))
            steps.append(Repeat(read.as_int(entry, "repeat", field), phases))
        else:
            steps.append(read.phase(entry, field))
    compute = read.as_list(top.get("compute_ns", []), "compute_ns")
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in compute):
        raise read.fail("compute_ns", "a list of integers")
    return ExchangePlan(
        name=source,
        tiles=read.as_int(top, "tiles", "document"),
        max_transfer_words=read.as_int(top, "max_transfer_words", "document"),
        allocations=tuple(allocations),
        steps=tuple(steps),
        compute_ns=tuple(int(v) for v in compute),  # type: ignore[call-overload]
    )
