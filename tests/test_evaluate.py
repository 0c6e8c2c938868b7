"""Tests of `raptor_cp.evaluation` on hand-computed schedules."""

from __future__ import annotations

import numpy as np
import pytest

from raptor_cp.errors import ScheduleViolationError
from raptor_cp.evaluation import evaluate
from raptor_cp.graph import ComputeGraph
from raptor_cp.problems import LatencyProblem
from raptor_cp.schedule import Schedule
from raptor_cp.targets.generic import GenericTarget

A, B, C, D = range(4)


def four_task_problem() -> LatencyProblem:
    """a -> b, a -> c, b -> d, c -> d with costs 3, 4, 2, 5 ns on 3 cores, 1 ns/byte."""
    graph = ComputeGraph(
        names=("a", "b", "c", "d"),
        cost=[3, 4, 2, 5],
        edge_src=[A, A, B, C],
        edge_dst=[B, C, D, D],
        edge_bytes=[10, 20, 5, 8],
        name="four",
    )
    return LatencyProblem(graph, GenericTarget(3, ns_per_byte=1))


def test_four_task_schedule_matches_hand_computation() -> None:
    # core 0 runs a, b, c; core 1 runs d; core 2 idles.
    # a [0,3]; b [3,7] (same core, no transfer); c waits for b on its core: [7,9];
    # d: b's data at 7+5=12, c's at 9+8=17 -> [17,22].
    schedule = Schedule(((A, B, C), (D,), ()), [0, 3, 7, 17], "hand")
    result = evaluate(four_task_problem(), schedule)
    assert result.start_ns.tolist() == [0, 3, 7, 17]
    assert result.finish_ns.tolist() == [3, 7, 9, 22]
    assert result.makespan_ns == 22
    # Without core order c could run at [3,5]; d then waits for max(7+5, 5+8) = 13: 13+5.
    assert result.critical_path_ns == 18
    assert result.serial_work_ns == 14
    assert result.per_core_work_ns == (9, 5, 0)
    assert result.transfer_work_ns == 5 + 8
    assert result.cores_used == 2


def test_cross_core_transfers_delay_starts() -> None:
    # core 0: a, c, d; core 1: b. b gets a's data at 3+10=13 -> [13,17];
    # c [3,5]; d waits for b's data 17+5=22 -> [22,27]. Core order costs nothing here.
    schedule = Schedule(((A, C, D), (B,), ()), [0, 13, 3, 22], "hand")
    result = evaluate(four_task_problem(), schedule)
    assert result.start_ns.tolist() == [0, 13, 3, 22]
    assert result.makespan_ns == 27
    assert result.critical_path_ns == 27
    assert result.transfer_work_ns == 10 + 5
    assert result.per_core_work_ns == (10, 4, 0)


def test_recomputes_timing_ignoring_the_estimated_starts() -> None:
    schedule = Schedule(((A, B, C), (D,), ()), [100, 200, 300, 400], "hand")
    assert evaluate(four_task_problem(), schedule).start_ns.tolist() == [0, 3, 7, 17]


def test_heterogeneous_costs_use_the_assigned_core() -> None:
    graph = ComputeGraph(
        names=("x", "y"),
        cost=[1, 1],
        edge_src=[0],
        edge_dst=[1],
        edge_bytes=[4],
        core_cost=[[2, 7], [9, 3]],
    )
    problem = LatencyProblem(graph, GenericTarget(2, ns_per_byte=1))
    result = evaluate(problem, Schedule(((0,), (1,)), [0, 6], "hand"))
    assert result.finish_ns.tolist() == [2, 9]
    assert result.serial_work_ns == 5
    assert result.per_core_work_ns == (2, 3)


def test_cross_core_cycle_is_a_deadlock() -> None:
    # b waits for a (behind d on core 1); d waits for c (behind b on core 0).
    graph = ComputeGraph(
        names=("a", "b", "c", "d"),
        cost=[1, 1, 1, 1],
        edge_src=[A, C],
        edge_dst=[B, D],
        edge_bytes=[0, 0],
    )
    problem = LatencyProblem(graph, GenericTarget(2))
    schedule = Schedule(((B, C), (D, A)), np.zeros(4), "hand")
    with pytest.raises(
        ScheduleViolationError,
        match=r"^deadlock: task 'a' waits on itself through a cycle of 4 tasks in "
        r"dependencies and core order$",
    ):
        evaluate(problem, schedule)


def test_empty_graph_has_zero_makespan() -> None:
    graph = ComputeGraph(names=(), cost=[], edge_src=[], edge_dst=[], edge_bytes=[])
    result = evaluate(LatencyProblem(graph, GenericTarget(2)), Schedule(((), ()), [], "hand"))
    assert (result.makespan_ns, result.critical_path_ns, result.cores_used) == (0, 0, 0)
