"""The JSON form of an `ExchangePlan`: what ``raptor-cp exchange`` reads and ``compile`` writes.

::

    {"format": "raptor-exchange-plan", "version": 1, "name": "...", "tiles": 1472,
     "max_transfer_words": 4096, "compute_ns": [...],
     "allocations": [{"tile": 0, "label": "fc1 out"}, ...],
     "steps": [{"phase": 0, "rows": [{"tile": 0,
                 "sends": [{"payload": 0, "words": 48, "receivers": [3, 4],
                            "source": [0, 0], "source_stride": 0, "mode": "ordinary"}],
                 "receives": [{"payload": 1, "sender": 2, "words": 8,
                               "address": [1, 0], "stride": 0}]}]},
               {"repeat": 4, "body": [{"phase": 1, "rows": [...]}]}]}

Reading errors name the file and the field path; the plan is then validated
(`ExchangePlan`), whose errors name the phase, tile and transfer.
"""

from __future__ import annotations

import json
from pathlib import Path

from raptor_cp.errors import InvalidInputError
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
from raptor_cp.files import read_json
from raptor_cp.limits import MAX_INTEGER

FORMAT = "raptor-exchange-plan"
VERSION = 1


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


def _integer(value: object) -> bool:
    """An integer (not a bool) within ``[-2^53, 2^53]`` (`raptor_cp.limits`)."""
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) <= MAX_INTEGER


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
        if not _integer(value):
            raise self.fail(f"{field}.{key}", "an integer within 2^53")
        return value

    def address(self, value: object, field: str) -> Address:
        pair = self.as_list(value, field)
        if len(pair) != 2 or not all(_integer(v) for v in pair):
            raise self.fail(field, "[allocation, byte offset] integers")
        return Address(int(pair[0]), int(pair[1]))  # type: ignore[arg-type]

    def send(self, value: object, field: str) -> Send:
        data = self.as_obj(value, field)
        receivers = self.as_list(data.get("receivers"), f"{field}.receivers")
        if not all(_integer(r) for r in receivers):
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
    if not all(_integer(v) for v in compute):
        raise read.fail("compute_ns", "a list of integers")
    return ExchangePlan(
        name=source,
        tiles=read.as_int(top, "tiles", "document"),
        max_transfer_words=read.as_int(top, "max_transfer_words", "document"),
        allocations=tuple(allocations),
        steps=tuple(steps),
        compute_ns=tuple(int(v) for v in compute),  # type: ignore[call-overload]
    )
