"""`build_exchange_plan`: supersteps, payloads, multicast, addresses and Repeat folding."""

from __future__ import annotations

import numpy as np
import pytest

from raptor_cp.errors import InvalidConfigError, ScheduleViolationError
from raptor_cp.exchange.plan import (
    Address,
    Allocation,
    ExchangePlan,
    Phase,
    Receive,
    Repeat,
    Send,
    TileRow,
)
from raptor_cp.exchange.planning import bsp_makespan_ns, build_exchange_plan, supersteps
from raptor_cp.graph import ComputeGraph
from raptor_cp.problems import LatencyProblem
from raptor_cp.schedule import Schedule
from raptor_cp.targets.generic import GenericTarget
from raptor_cp.targets.ipu import IpuTarget

TARGET = IpuTarget.preset("ipu-mk2").with_tiles(4)


def _graph(
    names: list[str],
    operation: list[int],
    edges: list[tuple[int, int, int]],
    cost: list[int] | None = None,
) -> ComputeGraph:
    src, dst, nbytes = zip(*edges, strict=True) if edges else ((), (), ())
    return ComputeGraph(
        names=tuple(names),
        cost=np.asarray(cost or [10] * len(names)),
        edge_src=np.asarray(src, dtype=np.int64),
        edge_dst=np.asarray(dst, dtype=np.int64),
        edge_bytes=np.asarray(nbytes, dtype=np.int64),
        operation=np.asarray(operation),
        operation_names=tuple(f"op{k}" for k in range(max(operation) + 1)),
        name="g",
    )


def _schedule(orders: list[list[int]], tasks: int) -> Schedule:
    return Schedule(tuple(tuple(o) for o in orders), np.zeros(tasks, dtype=np.int64), "hand")


def _fan_out() -> tuple[LatencyProblem, Schedule]:
    """a0, a1 (op0) on tile 0; b (op1) on tile 1; c, d (op2) on tile 2.

    Edges in order: a0 -> b 40 B, a1 -> b 16 B, a0 -> c 40 B, a0 -> d 40 B.
    """
    graph = _graph(
        ["a0", "a1", "b", "c", "d"],
        [0, 0, 1, 2, 2],
        [(0, 2, 40), (1, 2, 16), (0, 3, 40), (0, 4, 40)],
        cost=[10, 20, 5, 7, 8],
    )
    return LatencyProblem(graph, TARGET), _schedule([[0, 1], [2], [3, 4], []], 5)


def test_tasks_after_a_cross_tile_edge_move_to_the_next_superstep() -> None:
    # a0 = a1 = 0 (same tile); b, c, d read a0 across the exchange: 1
    problem, schedule = _fan_out()
    assert supersteps(problem, schedule).tolist() == [0, 0, 1, 1, 1]


def test_a_payload_is_multicast_once_and_received_once_per_tile() -> None:
    # a0's 40 B (10 words) go to tiles 1 and 2 in one send; tile 2 receives them once
    # although c and d both read them. a1's 16 B (4 words) go to tile 1 only.
    # Output allocation op0@0 (id 0): a0 at 0 (its largest edge, 40 B), a1 at 40.
    # Receive allocations by receiving tile: op0@1 (id 1), op0@2 (id 2). The two
    # payloads are not one transfer: they go to different receivers.
    problem, schedule = _fan_out()
    plan = build_exchange_plan(problem, schedule)
    assert plan.allocations == (
        Allocation(0, "op0 out"),
        Allocation(1, "op0 in"),
        Allocation(2, "op0 in"),
    )
    assert plan.steps == (
        Phase(
            0,
            (
                TileRow(
                    0,
                    sends=(
                        Send(0, 10, (1, 2), Address(0, 0)),
                        Send(1, 4, (1,), Address(0, 40)),
                    ),
                ),
                TileRow(
                    1,
                    receives=(
                        Receive(0, 0, 10, Address(1, 0)),
                        Receive(1, 0, 4, Address(1, 40)),
                    ),
                ),
                TileRow(2, receives=(Receive(0, 0, 10, Address(2, 0)),)),
            ),
        ),
    )
    assert (plan.tiles, plan.max_transfer_words, plan.name) == (4, 4096, "g")


def _pair(second_receivers: list[int], a0_bytes: int = 16) -> ExchangePlan:
    """a0, a1 (op0) on tile 0 send 16 B each to b (tile 1) and, per the list, c (tile 2).

    a0 also sends ``a0_bytes`` to d on tile 0 itself, which sets the size of its output.
    """
    edges = [(0, 2, 16), (0, 3, 16), (0, 4, a0_bytes)]
    edges += [(1, 2 if r == 1 else 3, 16) for r in second_receivers]
    graph = _graph(["a0", "a1", "b", "c", "d"], [0, 0, 1, 1, 2], edges)
    return build_exchange_plan(
        LatencyProblem(graph, TARGET), _schedule([[0, 1, 4], [2], [3], []], 5)
    )


def test_consecutive_payloads_to_the_same_receivers_are_one_transfer() -> None:
    # a0's 16 B at offset 0 and a1's 16 B at 16 both go to tiles 1 and 2: one 8-word
    # send, one 8-word receive on each receiver (allocations: op0 out 0, op0 in 1 and 2).
    plan = _pair([1, 2])
    (phase,) = plan.steps
    assert isinstance(phase, Phase)
    assert phase.rows == (
        TileRow(0, sends=(Send(0, 8, (1, 2), Address(0, 0)),)),
        TileRow(1, receives=(Receive(0, 0, 8, Address(1, 0)),)),
        TileRow(2, receives=(Receive(0, 0, 8, Address(2, 0)),)),
    )


@pytest.mark.parametrize(
    ("second_receivers", "a0_bytes"), [([1], 16), ([1, 2], 32)], ids=["receivers", "gap"]
)
def test_payloads_stay_apart_with_other_receivers_or_a_gap_between_them(
    second_receivers: list[int], a0_bytes: int
) -> None:
    # other receivers: a1 goes to tile 1 only; gap: a0's output is 32 B (its edge to d),
    # so a1's data starts at 32, not where a0's 16-byte payload ends
    (phase,) = _pair(second_receivers, a0_bytes).steps
    assert isinstance(phase, Phase)
    assert [len(row.sends) for row in phase.rows if row.sends] == [2]


def test_receives_are_grouped_by_sending_tile_whatever_the_edge_order() -> None:
    # z on tile 2 reads y (tile 1, edge 0) and x (tile 0, edge 1): it receives x's data
    # first; each producer operation has its own receive allocation (ids 2 and 3).
    graph = _graph(["x", "y", "z"], [0, 1, 2], [(1, 2, 8), (0, 2, 8)])
    plan = build_exchange_plan(LatencyProblem(graph, TARGET), _schedule([[0], [1], [2], []], 3))
    (phase,) = plan.steps
    assert isinstance(phase, Phase)
    assert phase.rows[2] == TileRow(
        2, receives=(Receive(0, 0, 2, Address(2, 0)), Receive(1, 1, 2, Address(3, 0)))
    )


def test_bsp_time_sums_supersteps_of_compute_sync_and_exchange() -> None:
    # superstep 0: tile 0 computes a0 + a1 = 30 ns; superstep 1: max(b 5, c + d 15) = 15
    # phase 0: tile 0 sends 14 words (the multicast once), tile 1 receives 14:
    #   (90 + 14) cycles / 1.85 GHz = 56.2 -> 57 ns; total 30 + 15 + 57 = 102
    problem, schedule = _fan_out()
    plan = build_exchange_plan(problem, schedule)
    assert plan.compute_ns == (30, 15)
    assert bsp_makespan_ns(plan, TARGET) == 102


def _ping_pong(cost_b2: int = 10) -> tuple[LatencyProblem, Schedule]:
    """a0..a3 (op0) on tile 0 and b0..b3 (op1) on tile 1 swap 32 B every superstep."""
    edges = [(i, 4 + i + 1, 32) for i in range(3)] + [(4 + i, i + 1, 32) for i in range(3)]
    cost = [10] * 8
    cost[6] = cost_b2
    graph = _graph(
        [f"a{i}" for i in range(4)] + [f"b{i}" for i in range(4)], [0] * 4 + [1] * 4, edges, cost
    )
    return LatencyProblem(graph, TARGET), _schedule([[0, 1, 2, 3], [4, 5, 6, 7], [], []], 8)


def test_phases_repeating_with_constant_strides_fold_into_a_repeat() -> None:
    # Supersteps a_i = b_i = i; phase k sends a_k to tile 1 and b_k to tile 0. Outputs
    # lie 32 B apart (op0 out id 0, op1 out id 1) and so do the receives (op1 in @0 id 2,
    # op0 in @1 id 3): three phases fold into Repeat(3) with every stride 32.
    problem, schedule = _ping_pong()
    plan = build_exchange_plan(problem, schedule)
    body = Phase(
        0,
        (
            TileRow(
                0,
                sends=(Send(0, 8, (1,), Address(0, 0), source_stride=32),),
                receives=(Receive(1, 1, 8, Address(2, 0), stride=32),),
            ),
            TileRow(
                1,
                sends=(Send(1, 8, (0,), Address(1, 0), source_stride=32),),
                receives=(Receive(0, 0, 8, Address(3, 0), stride=32),),
            ),
        ),
    )
    assert plan.steps == (Repeat(3, (body,)),)
    # BSP: 4 supersteps of 10 ns + 3 phases of (90 + 8) cycles = 53 ns each = 199
    assert bsp_makespan_ns(plan, TARGET) == 199


def test_different_compute_between_phases_prevents_folding() -> None:
    # b2 costs 11: superstep 2 differs from 1 and 3, so no two phases form a run.
    problem, schedule = _ping_pong(cost_b2=11)
    plan = build_exchange_plan(problem, schedule)
    assert [type(step).__name__ for step in plan.steps] == ["Phase"] * 3
    assert [step.index for step in plan.steps if isinstance(step, Phase)] == [0, 1, 2]


def test_zero_byte_edges_synchronise_without_transfers() -> None:
    # a -> b carries nothing across tiles: b still waits one superstep, phase 0 is empty
    graph = _graph(["a", "b"], [0, 1], [(0, 1, 0)])
    problem = LatencyProblem(graph, TARGET)
    plan = build_exchange_plan(problem, _schedule([[0], [1], [], []], 2))
    assert plan.steps == (Phase(0, ()),)
    assert plan.allocations == ()


def test_same_tile_edges_are_not_exchanged() -> None:
    graph = _graph(["a", "b"], [0, 1], [(0, 1, 64)])
    plan = build_exchange_plan(LatencyProblem(graph, TARGET), _schedule([[0, 1], [], [], []], 2))
    assert plan.steps == ()
    assert plan.compute_ns == (20,)


def test_core_order_against_dependencies_is_a_deadlock() -> None:
    graph = _graph(["a", "b"], [0, 1], [(0, 1, 64)])
    with pytest.raises(
        ScheduleViolationError,
        match=r"^deadlock: task 'a' waits on a cycle of dependencies and core order$",
    ):
        build_exchange_plan(LatencyProblem(graph, TARGET), _schedule([[1, 0], [], [], []], 2))


def test_plans_need_an_ipu_target() -> None:
    graph = _graph(["a"], [0], [])
    with pytest.raises(
        InvalidConfigError,
        match=r"^exchange plans need an ipu target \(ipu-mk1, ipu-mk2\), got generic:2$",
    ):
        build_exchange_plan(LatencyProblem(graph, GenericTarget(2)), _schedule([[0], []], 1))
