"""`ExchangePlan` validation and its JSON form: round trips and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from raptor_cp.errors import InvalidInputError, InvalidInstanceError
from raptor_cp.exchange.plan import (
    Address,
    Allocation,
    ExchangePlan,
    Phase,
    Receive,
    Repeat,
    Send,
    TileRow,
    TransferMode,
)
from raptor_cp.exchange.plan_json import load_plan, plan_to_json, write_plan

ALLOCATIONS = (Allocation(0, "out"), Allocation(1, "in"), Allocation(2, "in"))


def _rows(stride: int = 0) -> tuple[TileRow, ...]:
    return (
        TileRow(0, sends=(Send(0, 4, (1, 2), Address(0, 0), stride, TransferMode.PAIRED),)),
        TileRow(1, receives=(Receive(0, 0, 4, Address(1, 0), stride),)),
        TileRow(2, receives=(Receive(0, 0, 4, Address(2, 8)),)),
    )


def _plan(*steps: Phase | Repeat) -> ExchangePlan:
    return ExchangePlan("p", 3, 4096, ALLOCATIONS, steps, (5, 6, 7))


def test_a_plan_survives_a_json_round_trip(tmp_path: Path) -> None:
    plan = _plan(Phase(0, _rows()), Repeat(2, (Phase(1, _rows(stride=16)),)))
    path = tmp_path / "plan.json"
    write_plan(plan, path)
    loaded = load_plan(path)
    assert loaded.name == str(path)
    assert (loaded.steps, loaded.allocations, loaded.compute_ns) == (
        plan.steps,
        plan.allocations,
        plan.compute_ns,
    )
    assert plan_to_json(loaded) == {**plan_to_json(plan), "name": str(path)}


def test_stored_and_executed_phases_differ_by_repeats() -> None:
    first, body = Phase(0, _rows()), Phase(1, _rows(stride=16))
    plan = _plan(first, Repeat(3, (body,)))
    assert [(p.index, n) for p, n in plan.stored_phases()] == [(0, 1), (1, 3)]
    assert [p.index for p in plan.executed_phases()] == [0, 1, 1, 1]


def test_a_send_nobody_receives_is_rejected() -> None:
    with pytest.raises(
        InvalidInstanceError,
        match=r"^p: phase 0 tile 2: payload 0 from tile 0 sent but never received$",
    ):
        _plan(Phase(0, _rows()[:2]))


def test_lengths_must_agree_between_sender_and_receiver() -> None:
    rows = (*_rows()[:2], TileRow(2, receives=(Receive(0, 0, 5, Address(2, 0)),)))
    with pytest.raises(
        InvalidInstanceError, match=r"^p: phase 0 tile 2: payload 0 sent as 4 words, received as 5$"
    ):
        _plan(Phase(0, rows))


def test_a_receive_into_another_tiles_allocation_is_rejected() -> None:
    rows = (*_rows()[:2], TileRow(2, receives=(Receive(0, 0, 4, Address(1, 0)),)))
    with pytest.raises(
        InvalidInstanceError,
        match=r"^p: phase 0 tile 2 receive 0: allocation 1 is on tile 1, not 2$",
    ):
        _plan(Phase(0, rows))


def test_iterated_pointers_need_a_repeat() -> None:
    with pytest.raises(
        InvalidInstanceError,
        match=r"^p: phase 0 tile 0 send 0: an iterated pointer \(stride != 0\) "
        r"outside a Repeat body$",
    ):
        _plan(Phase(0, _rows(stride=16)))


def test_a_sender_cannot_receive_its_own_multicast() -> None:
    rows = (TileRow(0, sends=(Send(0, 4, (0, 1), Address(0, 0)),)), *_rows()[1:])
    with pytest.raises(
        InvalidInstanceError,
        match=r"^p: phase 0 tile 0 send 0: receivers must be distinct ascending other tiles "
        r"in 0\.\.2$",
    ):
        _plan(Phase(0, rows))


def test_empty_rows_are_rejected() -> None:
    with pytest.raises(
        InvalidInstanceError,
        match=r"^p: phase 0 tile 1: a row needs a send or a receive \(leave inactive tiles out\)$",
    ):
        _plan(Phase(0, (TileRow(1),)))


def test_a_repeat_runs_at_least_twice() -> None:
    with pytest.raises(
        InvalidInstanceError, match=r"^p: repeat: needs count >= 2 and a body, got count 1$"
    ):
        _plan(Repeat(1, (Phase(0, _rows()),)))


def test_malformed_json_names_the_file_and_the_field(tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    document = plan_to_json(_plan(Phase(0, _rows())))
    document["steps"][0]["rows"][0]["sends"][0]["words"] = "four"  # type: ignore[index]
    path.write_text(json.dumps(document))
    with pytest.raises(
        InvalidInputError,
        match=r"plan\.json: steps\[0\]\.rows\[0\]\.sends\[0\]\.words: expected an integer$",
    ):
        load_plan(path)
    path.write_text("{")
    with pytest.raises(InvalidInputError, match=r"plan\.json: invalid JSON at line 1 column "):
        load_plan(path)
    path.write_text(json.dumps({"format": "other"}))
    with pytest.raises(
        InvalidInputError,
        match=r'plan\.json: format/version: expected "format": "raptor-exchange-plan", '
        r'"version": 1$',
    ):
        load_plan(path)
