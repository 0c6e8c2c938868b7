"""The seeds' cost-model rules (issue 17): data movement, direct receives, sub-byte payloads,
baseline memory, nominal versus physical costs and untimed Softmax.

Each test pins one rule of scheduling.md "Costs and interpretation" or
scheduling-implementation.md "Transfer accounting and transpose costs" /
"Priorities, placement, and recovery limits"; every expected number is worked out
in the comment above it.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pytest

from raptor_cp.emit.order import ItemKind, pipeline_items
from raptor_cp.errors import TimingUnavailableError
from raptor_cp.evaluation import edge_delays
from raptor_cp.graph import DIRECT_RECEIVE, PLAIN, SCALAR_PROJECTION, ComputeGraph
from raptor_cp.periodic.steps import Compute
from raptor_cp.pipeline.baseline import baseline_demand
from raptor_cp.pipeline.diagnostics import pipeline_periodic
from raptor_cp.pipeline.groups import pipeline_groups
from raptor_cp.pipeline.initial import initial_pipeline
from raptor_cp.pipeline.realize import pipeline_events, realize_pipeline
from raptor_cp.pipeline.spans import DependencySpans
from raptor_cp.problems import LatencyProblem
from raptor_cp.schedule import Schedule
from raptor_cp.targets.base import FixedWork, MatrixWork, MoveWork, VectorWork, Work
from raptor_cp.targets.generic import GenericTarget
from raptor_cp.targets.pim import PimTarget
from raptor_cp.targets.registry import resolve_target
from raptor_cp.workload.lowering import lower
from raptor_cp.workload.model import (
    ALL_ROWS,
    SAME_ROWS,
    Operation,
    OpKind,
    RowWindow,
    WindowKind,
    Workload,
    lane_axis,
    lane_rows,
)
from raptor_cp.workload.movement import concat_blocks, is_runtime_free, transpose_runs

CONFIGS = Path(__file__).parent / "data" / "configs"


@dataclass(frozen=True)
class MoveTarget(GenericTarget):
    """Generic cores pricing moves distinctly: runs x (elements + 1), +100 if strided."""

    def execution_ns(self, work: Work) -> int:
        if isinstance(work, MoveWork):
            runs = sum(count * (elements + 1) for count, elements in work.blocks)
            return runs + (100 if work.strided else 0)
        return super().execution_ns(work)


def source(name: str, shape: tuple[int, ...], bits: int = 8) -> Operation:
    return Operation(name, "input", OpKind.INPUT, output_shape=shape, bits=bits)


def relu(name: str, producer: str, shape: tuple[int, ...], bits: int = 8) -> Operation:
    per_row = int(np.prod(shape)) // shape[-2]
    return Operation(
        name, "Relu", OpKind.VECTOR, (producer,), (SAME_ROWS,), shape, bits=bits,
        vector_per_row=per_row,
    )  # fmt: skip


# -- runs of transposes and concatenations ---------------------------------------------


def test_transposing_unit_dimensions_only_is_a_runtime_free_view() -> None:
    assert is_runtime_free((1, 4, 1, 8), (0, 2, 1, 3))
    assert not is_runtime_free((1, 4, 3, 8), (0, 2, 1, 3))


def test_transpose_keeping_the_innermost_dimension_copies_contiguous_runs() -> None:
    # (2, 3, 4) -> (3, 2, 4): the output's rows are runs of 4 elements, 6 in all.
    # A lane of output row 0 holds x[0, :, :]: 12 elements contiguous in the source,
    # one run.
    assert transpose_runs((2, 3, 4), (1, 0, 2), 0, 2) == (((6, 4),), False)
    assert transpose_runs((2, 3, 4), (1, 0, 2), 0, 1) == (((1, 12),), False)


@pytest.mark.parametrize("shape", [(2, 3, 4), (2, 1, 3, 4), (4, 1, 2, 3), (2, 3, 1, 1, 2)])
def test_transpose_runs_are_the_lanes_maximal_contiguous_source_pieces(
    shape: tuple[int, ...],
) -> None:
    # Against numpy: the source indices a lane copies, in destination order, split
    # wherever the next index is not the previous one plus one. Lanes cut the lane
    # axis (shape[-2], or the tokens of a sequence-first (T, 1, ...) layout).
    source = np.arange(int(np.prod(shape))).reshape(shape)
    checked = 0
    for perm in itertools.permutations(range(len(shape))):
        if is_runtime_free(shape, perm):
            continue
        moved = source.transpose(perm)
        axis, rows = lane_axis(moved.shape), lane_rows(moved.shape)
        assert axis is not None
        for lo, hi in {(0, rows), (0, 1), (rows - 1, rows)}:
            (blocks, strided) = transpose_runs(shape, perm, lo, hi)
            read = moved[(slice(None),) * axis + (slice(lo, hi),)].ravel()
            if strided:  # the innermost dimension moves: runs of it, gathered at a stride
                ((count, run),) = blocks
                assert count * run == read.size
                steps = np.diff(read.reshape(count, run), axis=1)
                assert np.all(steps == steps[0, 0]) and steps[0, 0] != 1
                continue
            pieces = 1 + int(np.count_nonzero(np.diff(read) != 1))
            assert blocks == ((pieces, read.size // pieces),)
            checked += 1
    assert checked


def test_concat_blocks_follow_a_sequence_first_lane_axis() -> None:
    # (5, 1, 8) and (5, 1, 4) joined on the last axis into (5, 1, 12): the lane axis
    # is the 5 tokens, so lane rows [1, 3) copy 2 blocks of 8 and 2 blocks of 4.
    assert concat_blocks([(5, 1, 8), (5, 1, 4)], 2, 1, 3) == (((2, 8),), ((2, 4),))
    # Joined on the tokens into (7, 1, 4): rows [4, 7) are 1 row of the first input
    # and 2 of the second, each row one block of 4 elements per input row.
    assert concat_blocks([(5, 1, 4), (2, 1, 4)], 0, 4, 7) == (((1, 4),), ((1, 8),))


def test_transpose_moving_the_innermost_dimension_is_strided() -> None:
    # (3, 4) -> (4, 3): each output row of 3 elements gathers a source column (stride 4).
    assert transpose_runs((3, 4), (1, 0), 0, 4) == (((4, 3),), True)


def test_concat_blocks_are_per_input_and_outer_row() -> None:
    # (2, 3, 4) ++ (2, 5, 4) along axis 1 (the lane axis), lane rows [2, 6): input 0 gives
    # its row 2 (one run of 4 per outer index, 2 outer), input 1 its rows 0..2 (12 each).
    assert concat_blocks([(2, 3, 4), (2, 5, 4)], 1, 2, 6) == (((2, 4),), ((2, 12),))


# -- lowering: transposes and concatenations are cost-bearing tasks ------------------------


def _transpose_workload(bits: int = 8) -> Workload:
    # x (4, 6) -> relu -> transpose (6, 4) -> relu2
    return Workload(
        "moves",
        (
            source("x", (4, 6), bits),
            relu("a", "x", (4, 6), bits),
            Operation(
                "t", "Transpose", OpKind.TRANSPOSE, ("a",), (ALL_ROWS,), (6, 4), bits=bits,
                perm=(1, 0), move_shapes=((4, 6),),
            ),
            relu("b", "t", (6, 4), bits),
        ),
    )  # fmt: skip


def test_transpose_charges_strided_runs_and_counts_as_a_bulk_move_nominally() -> None:
    graph = lower(_transpose_workload(), MoveTarget(2), lanes=2)
    t = [graph.names.index(f"t/l{i}") for i in range(2)]
    # Lane rows [0, 3) of 6: 3 strided runs of 4 elements: 3 x 5 + 100 = 115 physical;
    # nominally one bulk move of 12 elements: 13 (scheduling-implementation.md).
    assert graph.cost[t].tolist() == [115, 115]
    assert graph.nominal_cost[t].tolist() == [13, 13]
    relu_a = graph.names.index("a/l0")
    assert graph.cost[relu_a] == graph.nominal_cost[relu_a]


def test_partitioning_ranks_by_nominal_costs_and_evaluation_by_physical_ones() -> None:
    graph = lower(_transpose_workload(), MoveTarget(2), lanes=1)
    spans = DependencySpans(graph, pipeline_groups(graph))
    # a (24 elements) -> t -> b (24). One lane: t copies 6 strided runs of 4 elements,
    # 6 x 5 + 100 = 130 physical, one bulk move of 24 elements = 25 nominal. The
    # partition's dependency span uses the nominal chain 24 + 25 + 24.
    assert graph.nominal_cost.tolist() == [24, 25, 24]
    assert graph.cost.tolist() == [24, 130, 24]
    assert spans(0, len(pipeline_groups(graph).tasks)) == 24 + 25 + 24


def _concat_workload() -> Workload:
    # Two relus (3 rows x 4) concatenated along the last axis into (3, 8).
    return Workload(
        "cat",
        (
            source("x", (3, 4)),
            relu("a", "x", (3, 4)),
            relu("b", "x", (3, 4)),
            Operation(
                "cat", "Concat", OpKind.CONCAT, ("a", "b"), (SAME_ROWS, SAME_ROWS), (3, 8),
                axis=1, move_shapes=((3, 4), (3, 4)),
            ),
            relu("c", "cat", (3, 8)),
        ),
    )  # fmt: skip


def test_concat_copies_one_block_per_input_and_row_and_receives_directly() -> None:
    graph = lower(_concat_workload(), MoveTarget(2), lanes=1)
    cat = graph.names.index("cat/l0")
    # 3 rows x 2 inputs, blocks of 4: 6 x 5 = 30.
    assert graph.cost[cat] == 30
    into = graph.edge_dst == cat
    # a and b publish their whole 12-byte fragments into the assembly: direct receives.
    assert graph.edge_kind[into].tolist() == [DIRECT_RECEIVE, DIRECT_RECEIVE]
    assert graph.edge_kind[graph.edge_dst != cat].tolist() == [PLAIN]


def test_direct_receives_omit_the_endpoint_memory_charges_on_pim() -> None:
    target = resolve_target("arch-a")
    assert isinstance(target, PimTarget)
    full = target.transfer_ns(0, 1, 4096)
    direct = target.transfer_ns(0, 1, 4096, direct=True)
    timing = target.step_timing()
    endpoint = timing.local_read_ns(4096) + timing.local_write_ns(4096)
    assert full - direct == endpoint
    assert target.mean_transfer_ns(4096) - target.mean_transfer_ns(4096, direct=True) == endpoint
    graph = lower(_concat_workload(), target, lanes=1)
    problem = LatencyProblem(graph, target)
    core = np.array([0, 1, 2, 2])  # a, b on cores 0, 1; cat and c on core 2
    delays = edge_delays(problem, core)
    into = np.flatnonzero(graph.edge_kind == DIRECT_RECEIVE)
    assert delays[into].tolist() == [
        target.transfer_ns(0, 2, 12, direct=True),
        target.transfer_ns(1, 2, 12, direct=True),
    ]


# -- sub-byte payloads ------------------------------------------------------------------


def test_sub_byte_payloads_are_analyzable_but_rejected_by_pim_communication_lowering() -> None:
    target = resolve_target("arch-a")
    workload = _transpose_workload(bits=4)
    graph = lower(workload, target, lanes=2)
    # The graph keeps the 4-bit payload width (sizes are rounded once per fragment,
    # test_lowering pins that); PIM communication lowering then refuses it.
    assert set(graph.payload_bits.tolist()) == {4}
    plan = initial_pipeline(graph, target, 2).plan
    stage = plan.task_stage(graph.num_tasks)
    message = re.escape("communicates 4-bit elements; byte-addressed PIM communication")
    with pytest.raises(TimingUnavailableError, match=message):
        pipeline_events(graph, target, plan.schedule, stage)
    document = pipeline_periodic(plan, graph, target, "moves", 2)
    assert document["status"] == "unavailable"
    assert "byte-addressed PIM communication lowering" in document["reason"]


def test_a_target_without_complete_step_timing_gives_an_unavailable_report() -> None:
    target = GenericTarget(4)
    graph = lower(_transpose_workload(), target, lanes=2)
    plan = initial_pipeline(graph, target, 2).plan
    document = pipeline_periodic(plan, graph, target, "moves", 2)
    assert document["status"] == "unavailable"
    assert document["reason"].startswith("target generic:4 has no complete step timing")
    assert "interval_estimate" not in document


# -- baseline memory ------------------------------------------------------------------


def test_inputs_constants_and_outputs_supply_the_baseline_requests() -> None:
    # x (4 rows x 6, 8-bit) is read by a's two lanes (12 B each); b reads a constant of
    # shape (6, 4) with b's rows: 12 B per lane, and a broadcast one of shape (4,):
    # 4 B per lane, the same piece; b's lanes are the outputs (12 B each).
    workload = _transpose_workload()
    ops = list(workload.operations)
    ops[3] = replace(ops[3], constants=((6, 4), (4,)))
    graph = lower(replace(workload, operations=tuple(ops)), MoveTarget(2), lanes=2)
    base = graph.baseline
    rows = sorted(
        zip(
            [graph.names[t] for t in base.task.tolist()],
            base.nbytes.tolist(),
            base.write.tolist(),
            strict=True,
        )
    )
    assert rows == [
        ("a/l0", 12, False), ("a/l1", 12, False),
        ("b/l0", 4, False), ("b/l0", 12, False), ("b/l0", 12, True),
        ("b/l1", 4, False), ("b/l1", 12, False), ("b/l1", 12, True),
    ]  # fmt: skip
    shared = base.piece[base.nbytes == 4]
    assert shared.size == 2 and shared[0] == shared[1]
    assert np.unique(base.piece).size == base.requests - 1
    # Generic targets have no memory-controller price: the demand counts, costs 0.
    # On two cores each lane of b loads the broadcast piece; on one core it is loaded once.
    b_lanes = np.asarray([graph.names.index(f"b/l{lane}") for lane in range(2)])
    apart = np.zeros(graph.num_tasks, dtype=np.int64)
    apart[b_lanes[1]] = 1
    demand = baseline_demand(graph, MoveTarget(2), apart)
    assert (demand.loads, demand.folded_loads, demand.stores, demand.service_ns) == (6, 0, 2, 0)
    together = baseline_demand(graph, MoveTarget(2), np.zeros(graph.num_tasks, dtype=np.int64))
    assert (together.loads, together.folded_loads, together.load_bytes) == (5, 1, 4 * 12 + 4)


def test_the_interval_memory_term_includes_the_baseline_service() -> None:
    target = resolve_target("arch-a")
    graph = lower(_transpose_workload(), target, lanes=2)
    plan = initial_pipeline(graph, target, 2).plan
    timing = target.step_timing()
    # 2 loads of 12 B of x and 2 stores of 12 B of b's lanes, priced by the controller.
    expected = 2 * timing.global_read_ns(12) + 2 * timing.global_write_ns(12)
    assert plan.baseline.service_ns == expected > 0
    assert plan.estimate.baseline_memory_ns == expected
    assert plan.estimate.memory_service_ns == plan.boundary.service_ns + expected


# -- untimed Softmax --------------------------------------------------------------------


def test_softmax_gets_no_timed_work_in_the_pim_queue_model() -> None:
    # A (core 0) -> Softmax S (core 1) in one stage: S's 500 ns are not timed, its
    # receive still is. S stays in core 1's program as a zero-ns run, so the
    # emitted program still runs it.
    graph = ComputeGraph(
        names=("A", "S"),
        cost=np.array([100, 500]),
        edge_src=np.array([0]),
        edge_dst=np.array([1]),
        edge_bytes=np.array([64]),
        operation_names=("A", "S"),
        operation_types=("Relu", "Softmax"),
        name="soft",
    )
    schedule = Schedule(((0,), (1,)), np.zeros(2), "pipeline", (0, 0))
    stage = np.zeros(2, dtype=np.int64)
    target = PimTarget.from_file(CONFIGS / "three_cores" / "config.json")
    timed = realize_pipeline(graph, schedule, stage)
    untimed = realize_pipeline(graph, schedule, stage, frozenset({"Softmax"}))
    assert [type(s).__name__ for s in timed.cores[1]] == ["Recv", "Compute"]
    assert untimed.cores[1][1:] == [Compute(0)]
    assert untimed.tasks[1][1] == (1,)
    program = pipeline_items(graph, untimed)
    assert [item.task for item in program[1] if item.kind is ItemKind.TASK] == [1]
    events, _ = pipeline_events(graph, target, schedule, stage)
    timing = target.step_timing()
    assert events.core_work.tolist()[:2] == [
        100 + timing.local_read_ns(64),
        timing.local_write_ns(64),
    ]


# -- scalar projections ---------------------------------------------------------------


def test_a_one_row_gather_is_a_scalar_projection_of_one_row() -> None:
    # tokens (4 rows x 6) -> gather row 2 (a stride-0 window) -> head (1 row).
    workload = Workload(
        "cls",
        (
            source("x", (4, 6)),
            relu("tok", "x", (4, 6)),
            Operation(
                "g", "Gather", OpKind.VIEW, ("tok",),
                (RowWindow(WindowKind.SLIDING, stride=0, pad=-2),), (1, 6),
            ),
            relu("head", "g", (1, 6)),
        ),
    )  # fmt: skip
    graph = lower(workload, MoveTarget(2), lanes=4)
    head = graph.names.index("head/l0")
    into = np.flatnonzero(graph.edge_dst == head)
    # Only tok's lane 2 (row 2, 6 B) is read, as a scalar projection.
    assert [graph.names[s] for s in graph.edge_src[into].tolist()] == ["tok/l2"]
    assert graph.edge_bytes[into].tolist() == [6]
    assert graph.edge_kind[into].tolist() == [SCALAR_PROJECTION]


def test_work_descriptions_are_distinct_kinds() -> None:
    # The four work kinds price differently on the generic target (1 ns per element).
    target = GenericTarget(1)
    assert target.execution_ns(MoveWork(((2, 3),), 8)) == 6
    assert target.execution_ns(VectorWork(6, 1, 8)) == 6
    assert target.execution_ns(MatrixWork(1, 2, 3, 1, 8)) == 6
    assert target.execution_ns(FixedWork(6)) == 6
