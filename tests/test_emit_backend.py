"""The backend pieces of emission: allocation, the rendezvous check, registers, retries."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raptor_cp.emit.allocate import Buffer, LocalMemoryExhausted, allocate, slot_bytes
from raptor_cp.emit.backend import (
    BackendExhaustedError,
    Candidate,
    select_for_backend,
)
from raptor_cp.emit.rendezvous import DeadlockError, check_rendezvous
from raptor_cp.targets.pim.isa import CODE, COLUMN, FIELDS, CoreProgram


def program(*ops: tuple[str, dict[str, int]]) -> CoreProgram:
    values = np.zeros((len(ops), len(FIELDS)), dtype=np.int64)
    for i, (_, fields) in enumerate(ops):
        for name, value in fields.items():
            values[i, COLUMN[name]] = value
    return CoreProgram(np.array([CODE[op] for op, _ in ops], dtype=np.uint8), values)


def send(peer: int) -> tuple[str, dict[str, int]]:
    return ("send", {"core": peer, "size": 64})


def recv(peer: int) -> tuple[str, dict[str, int]]:
    return ("recv", {"core": peer, "size": 64})


VRELU = ("vrelu", {"len": 8})


# -- rendezvous ----------------------------------------------------------------------


def test_matched_transfers_in_one_order_pass() -> None:
    cores = {
        0: program(VRELU, send(1), recv(2)),
        1: program(recv(0), send(2)),
        2: program(recv(1), send(0)),
    }
    check = check_rendezvous(cores, looping=False)
    assert (check.rounds, check.transfers, check.tokens) == (1, 3, 0)


def test_crossed_sends_name_the_cycle_of_waiting_cores() -> None:
    cores = {0: program(VRELU, send(1), recv(1)), 1: program(send(0), recv(0))}
    with pytest.raises(DeadlockError) as error:
        check_rendezvous(cores, looping=False)
    assert str(error.value) == (
        "deadlock under blocking rendezvous: a cycle of waiting cores: core 0 (instruction 1: "
        "send to core 1) -> core 1 (instruction 0: send to core 0) -> core 0 (2 core(s) blocked)"
    )
    assert error.value.cycle == (0, 1)


def test_a_recv_whose_sender_finished_is_a_chain() -> None:
    cores = {0: program(send(1)), 1: program(recv(0), recv(0))}
    with pytest.raises(DeadlockError, match=r"core 0, which has finished its stream \(1 core"):
        check_rendezvous(cores, looping=False)


def test_a_send_to_a_core_without_instructions_is_named() -> None:
    with pytest.raises(DeadlockError, match="-> core 3, which has no instructions"):
        check_rendezvous({0: program(send(3))}, looping=False)


def test_a_wait_nobody_signals_is_named() -> None:
    cores = {0: program(("wait", {"event_register": 4, "wait_value": 1}))}
    with pytest.raises(DeadlockError, match="wait register 4 for 1\\) -> no core signals"):
        check_rendezvous(cores, looping=False)


def test_looping_streams_with_tokens_run_their_rounds() -> None:
    # A producer waits for FREE (register 1) from its reader, stores, signals READY; the
    # reader frees at entry and waits for READY (register 0) before its load.
    cores = {
        0: program(
            ("wait", {"event_register": 1, "wait_value": 1}),
            ("st", {"size": 64}),
            ("sync", {"core": 1, "event_register": 0}),
        ),
        1: program(
            ("sync", {"core": 0, "event_register": 1}),
            ("wait", {"event_register": 0, "wait_value": 1}),
            ("ld", {"size": 64}),
        ),
    }
    check = check_rendezvous(cores, looping=True)
    assert check.rounds >= 3 and check.tokens >= 6


def test_a_wait_for_more_tokens_than_signalled_deadlocks() -> None:
    # Core 1 waits for two READY tokens per round but core 0 signals one.
    cores = {
        0: program(("sync", {"core": 1, "event_register": 0}), VRELU),
        1: program(("wait", {"event_register": 0, "wait_value": 2}), VRELU),
    }
    with pytest.raises(DeadlockError, match="chain of waiting cores"):
        check_rendezvous(cores, looping=False)


# -- allocation ---------------------------------------------------------------------------


def test_slot_bytes_leaves_one_access_of_gap() -> None:
    assert slot_bytes(64, 64) == 128
    assert slot_bytes(65, 64) == 192
    assert slot_bytes(0, 64) == 64


def test_buffers_reuse_freed_space() -> None:
    buffers = [Buffer("a", 100, 0, 1), Buffer("b", 100, 1, 2), Buffer("c", 100, 2, 3)]
    allocation = allocate(buffers, 64, 1 << 20, core=0)
    assert allocation.address == {"a": 0, "b": 192, "c": 0}
    assert allocation.peak_bytes == 384


def test_exhausted_memory_names_core_position_and_live_buffers() -> None:
    buffers = [Buffer("a", 100, 0, 5), Buffer("b", 100, 3, 4)]
    with pytest.raises(LocalMemoryExhausted) as error:
        allocate(buffers, 64, 300, core=7)
    assert str(error.value) == (
        "core 7: local memory exhausted at program position 3: 384 bytes needed, 300 "
        "available; live buffers: a, b"
    )


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 500), st.integers(0, 30), st.integers(0, 10)),
        min_size=1,
        max_size=40,
    )
)
def test_live_buffers_never_overlap(spans: list[tuple[int, int, int]]) -> None:
    buffers = [
        Buffer(f"b{i}", size, first, first + length)
        for i, (size, first, length) in enumerate(spans)
    ]
    allocation = allocate(buffers, 16, 1 << 30, core=0)
    for i, a in enumerate(buffers):
        start_a = allocation.address[a.name]
        assert start_a + slot_bytes(a.nbytes, 16) <= allocation.peak_bytes
        for b in buffers[i + 1 :]:
            if a.first <= b.last and b.first <= a.last:
                start_b = allocation.address[b.name]
                end_a = start_a + slot_bytes(a.nbytes, 16)
                end_b = start_b + slot_bytes(b.nbytes, 16)
                assert end_a <= start_b or end_b <= start_a


# -- retries ------------------------------------------------------------------------------------


def test_a_rejected_candidate_is_replaced_by_the_next_one_once() -> None:
    from raptor_cp.emit.allocate import BackendResourceError

    def lower(name: str) -> str:
        if name == "big":
            raise BackendResourceError("core 1: local memory exhausted")
        return name.upper()

    candidates = [Candidate(0, "first", "big"), Candidate(1, "second", "small")]
    chosen, lowered, attempts = select_for_backend(candidates, lower)
    assert (chosen.index, lowered) == (1, "SMALL")
    assert [(a.candidate, a.result, a.cause) for a in attempts] == [
        (0, "rejected", "core 1: local memory exhausted"),
        (1, "emitted", None),
    ]
    with pytest.raises(BackendExhaustedError) as error:
        select_for_backend(candidates[:1], lower)
    assert str(error.value) == (
        "no costed candidate passed the backend (1 attempted): candidate 0 (first): core 1: "
        "local memory exhausted"
    )


def test_a_systemic_failure_stops_the_retries() -> None:
    def lower(name: str) -> str:
        raise DeadlockError("deadlock", (0,))

    with pytest.raises(DeadlockError):
        select_for_backend([Candidate(0, "a", "x"), Candidate(1, "b", "y")], lower)
