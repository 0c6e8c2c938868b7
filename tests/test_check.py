"""Tests of `raptor_cp.check`: each rule on a hand-built bad schedule, exact messages."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from raptor_cp.errors import ScheduleViolationError
from raptor_cp.graph import ComputeGraph
from raptor_cp.problems import LatencyProblem
from raptor_cp.problems.latency import check_schedule
from raptor_cp.schedule import Schedule
from raptor_cp.targets.generic import GenericTarget

A, B, C, D = range(4)


@dataclass(frozen=True)
class SmallCoresTarget(GenericTarget):
    """A generic target whose cores hold ``slots`` resident-weight slots each."""

    slots: int = 1

    def capacity(self, core: int) -> int:
        return self.slots


def problem(target: GenericTarget | None = None) -> LatencyProblem:
    """a -> b, a -> c, b -> d, c -> d, costs 3, 4, 2, 5; a and b share weight w0, c uses w1."""
    graph = ComputeGraph(
        names=("a", "b", "c", "d"),
        cost=[3, 4, 2, 5],
        edge_src=[A, A, B, C],
        edge_dst=[B, C, D, D],
        edge_bytes=[10, 20, 5, 8],
        task_weights=((0,), (0,), (1,), ()),
        weight_size=[1, 1],
        name="four",
    )
    return LatencyProblem(graph, target or GenericTarget(3, ns_per_byte=1))


def test_valid_schedule_passes() -> None:
    check_schedule(problem(), Schedule(((A, B, C), (D,), ()), [0, 3, 7, 17], "hand"))


def test_late_start_is_legal_idle_time() -> None:
    check_schedule(problem(), Schedule(((A, B, C), (D,), ()), [1, 5, 20, 30], "hand"))


def test_wrong_number_of_starts_is_rejected() -> None:
    with pytest.raises(
        ScheduleViolationError, match=r"^schedule has 3 start times for 4 tasks of four$"
    ):
        check_schedule(problem(), Schedule(((A, B, C), (D,), ()), [0, 3, 7], "hand"))


def test_missing_task_is_rejected() -> None:
    with pytest.raises(ScheduleViolationError, match=r"^task 'c' is not scheduled on any core$"):
        check_schedule(problem(), Schedule(((A, B), (D,), ()), [0, 3, 7, 17], "hand"))


def test_duplicated_task_is_rejected() -> None:
    with pytest.raises(
        ScheduleViolationError, match=r"^task 'b' is scheduled 2 times \(cores 0, 1\)$"
    ):
        check_schedule(problem(), Schedule(((A, B, C), (B, D), ()), [0, 3, 7, 17], "hand"))


def test_unknown_task_id_is_rejected() -> None:
    with pytest.raises(
        ScheduleViolationError, match=r"^core 1 lists unknown task id 7 \(tasks are 0\.\.3\)$"
    ):
        check_schedule(problem(), Schedule(((A, B, C), (D, 7), ()), [0, 3, 7, 17], "hand"))


def test_core_out_of_range_is_rejected() -> None:
    with pytest.raises(
        ScheduleViolationError,
        match=r"^task 'd' is on core 3 but target generic:3:1 has 3 cores \(0\.\.2\)$",
    ):
        check_schedule(problem(), Schedule(((A, B, C), (), (), (D,)), [0, 3, 7, 17], "hand"))


def test_shared_weight_fits_one_slot() -> None:
    target = SmallCoresTarget(3, ns_per_byte=1, slots=1)
    check_schedule(problem(target), Schedule(((A, B), (C, D), ()), [0, 3, 23, 25], "hand"))


def test_capacity_overflow_is_rejected() -> None:
    target = SmallCoresTarget(3, ns_per_byte=1, slots=1)
    with pytest.raises(
        ScheduleViolationError, match=r"^core 0 needs 2 resident weight slots but holds 1$"
    ):
        check_schedule(problem(target), Schedule(((A, B, C), (D,), ()), [0, 3, 7, 17], "hand"))


def test_task_after_its_successor_on_a_core_is_rejected() -> None:
    with pytest.raises(
        ScheduleViolationError, match=r"^task 'a' is placed after its successor 'b' on core 0$"
    ):
        check_schedule(problem(), Schedule(((B, A, C), (D,), ()), [0, 3, 7, 17], "hand"))


def test_cross_core_order_cycle_is_rejected() -> None:
    # a waits behind d on core 1, d waits for b's data, b waits for a's data.
    with pytest.raises(
        ScheduleViolationError,
        match=r"^deadlock: task 'a' waits on itself through a cycle of 3 tasks in "
        r"dependencies and core order$",
    ):
        check_schedule(problem(), Schedule(((B, C), (D, A), ()), [0, 0, 0, 0], "hand"))


def test_negative_start_is_rejected() -> None:
    with pytest.raises(ScheduleViolationError, match=r"^task 'a' starts at negative time -1$"):
        check_schedule(problem(), Schedule(((A, B, C), (D,), ()), [-1, 3, 7, 17], "hand"))


def test_start_before_core_predecessor_finishes_is_rejected() -> None:
    # c is data-ready at 3 but b occupies core 0 until 7.
    with pytest.raises(
        ScheduleViolationError,
        match=r"^task 'c' starts at 5 ns before 'b', the task before it on core 0, "
        r"finishes at 7 ns$",
    ):
        check_schedule(problem(), Schedule(((A, B, C), (D,), ()), [0, 3, 5, 17], "hand"))


def test_start_before_data_arrives_is_rejected() -> None:
    # d needs c's 8 bytes: 9 + 8 = 17 on core 1.
    with pytest.raises(
        ScheduleViolationError,
        match=r"^task 'd' starts at 16 ns before the data of 'c' \(core 0\) reaches core 1 "
        r"at 17 ns$",
    ):
        check_schedule(problem(), Schedule(((A, B, C), (D,), ()), [0, 3, 7, 16], "hand"))


def test_starts_must_be_consistent_with_each_other_not_only_with_the_earliest() -> None:
    # Every start is at or after evaluate's earliest start, but b was delayed to 10,
    # so c cannot start at its earliest 7 behind b on core 0.
    with pytest.raises(
        ScheduleViolationError,
        match=r"^task 'c' starts at 7 ns before 'b', the task before it on core 0, "
        r"finishes at 14 ns$",
    ):
        check_schedule(problem(), Schedule(((A, B, C), (D,), ()), [0, 10, 7, 17], "hand"))
