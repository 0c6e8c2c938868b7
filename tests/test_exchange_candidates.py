"""Candidate plans for admission: batching, canonical lowering keys, spread placement."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from raptor_cp.errors import NotFoundWithinBudgetError
from raptor_cp.evaluation import evaluate
from raptor_cp.exchange import candidates as exchange_candidates
from raptor_cp.exchange.admission import AdmissionLimits, admit
from raptor_cp.exchange.candidates import (
    CandidateOptions,
    WorkloadCandidates,
    batch_graph,
    lowering_key,
    scheduled,
    spread_schedule,
)
from raptor_cp.exchange.planning import build_exchange_plan
from raptor_cp.graph import ComputeGraph
from raptor_cp.problems import LatencyProblem
from raptor_cp.problems.latency import check_schedule
from raptor_cp.targets.ipu import MK2, IpuTarget
from raptor_cp.workload.lowering import lower
from raptor_cp.workload.model import ALL_ROWS, SAME_ROWS, Operation, OpKind, Workload

TARGET = IpuTarget.preset("ipu-mk2", weight_block_bytes=4096).with_tiles(8)


def _mlp() -> Workload:
    """8 rows: fc1 (64 x 128) -> relu -> fc2 (128 x 64, reads all rows)."""
    ops = (
        Operation("x", "Input", OpKind.INPUT, output_shape=(8, 64)),
        Operation("fc1", "Gemm", OpKind.WEIGHTED, ("x",), (SAME_ROWS,), (8, 128), 8, 64, 128, 1),
        Operation(
            "relu", "Relu", OpKind.VECTOR, ("fc1",), (SAME_ROWS,), (8, 128), 8, vector_per_row=128
        ),
        Operation("fc2", "Gemm", OpKind.WEIGHTED, ("relu",), (ALL_ROWS,), (8, 64), 8, 128, 64, 1),
    )
    return Workload("mlp", ops)


def _chain() -> Workload:
    """Two element-wise operations of 4 rows in a chain."""
    ops = (
        Operation("x", "Input", OpKind.INPUT, output_shape=(4, 16)),
        Operation("a", "Relu", OpKind.VECTOR, ("x",), (SAME_ROWS,), (4, 16), 8, vector_per_row=16),
        Operation("b", "Relu", OpKind.VECTOR, ("a",), (SAME_ROWS,), (4, 16), 8, vector_per_row=16),
    )
    return Workload("chain", ops)


def test_batch_copies_share_weights_and_keep_their_own_edges() -> None:
    graph = ComputeGraph(
        names=("p", "q"),
        cost=np.array([3, 4]),
        edge_src=np.array([0]),
        edge_dst=np.array([1]),
        edge_bytes=np.array([16]),
        task_weights=((0,), ()),
        weight_size=np.array([100]),
        weight_names=("w",),
    )
    two = batch_graph(graph, 2)
    assert two.names == ("b0/p", "b0/q", "b1/p", "b1/q")
    assert (two.edge_src.tolist(), two.edge_dst.tolist()) == ([0, 2], [1, 3])
    assert two.edge_bytes.tolist() == [16, 16]
    assert two.task_weights == ((0,), (), (0,), ())
    assert two.weight_size.tolist() == [100]
    assert two.distinct_weight_slots() == 100
    assert batch_graph(graph, 1) is graph


def test_lane_counts_beyond_every_operation_rows_are_one_lowering() -> None:
    workload = _mlp()
    assert lowering_key(workload, TARGET, 8) == lowering_key(workload, TARGET, 1000)
    assert lowering_key(workload, TARGET, 4) != lowering_key(workload, TARGET, 8)


def test_block_budgets_that_cut_every_matrix_alike_are_one_lowering() -> None:
    # the largest matrix has 128 x 64 one-byte weights = 8 KiB: any block >= 8 KiB keeps it whole
    workload = _mlp()
    whole = [replace(TARGET, weight_block_bytes=b) for b in (8192, 65536)]
    assert lowering_key(workload, whole[0], 8) == lowering_key(workload, whole[1], 8)
    assert lowering_key(workload, TARGET, 8) != lowering_key(workload, whole[0], 8)


def test_spread_keeps_the_lanes_of_an_element_wise_chain_on_one_tile() -> None:
    problem = LatencyProblem(lower(_chain(), TARGET, lanes=4), TARGET)
    schedule = spread_schedule(problem, 8)
    # a/l0..l3 are tasks 0..3, b/l0..l3 tasks 4..7: 4 lanes over 8 tiles, lane l on tile 2l
    assert schedule.core_order == ((0, 4), (), (1, 5), (), (2, 6), (), (3, 7), ())
    assert build_exchange_plan(problem, schedule).steps == ()


def test_spread_placement_passes_the_checker_with_replicated_weights() -> None:
    problem = LatencyProblem(lower(_mlp(), TARGET, lanes=8), TARGET)
    schedule = spread_schedule(problem, 8)
    assert schedule.cores_used == 8
    check_schedule(problem, replace(schedule, start_ns=evaluate(problem, schedule).start_ns))


def test_spread_fails_when_some_weights_fit_no_tile() -> None:
    # four 4 KiB blocks, three tiles of 6,000 B: one block per tile, the fourth fits nowhere
    small = IpuTarget(replace(MK2, tiles=3, sram_bytes=6000), "tiny", weight_block_bytes=4096)
    problem = LatencyProblem(lower(_mlp(), small, lanes=2), small)
    with pytest.raises(
        NotFoundWithinBudgetError,
        match=r"^mlp: spread placement: the weights of task 'fc2/l\d/ag0\.1' fit on none of 3 "
        r"tiles$",
    ):
        spread_schedule(problem, 3)


def test_a_scheduler_placement_on_fewer_tiles_leaves_the_rest_idle() -> None:
    graph = lower(_mlp(), TARGET, lanes=8)
    schedule = scheduled(graph, TARGET, "heft", 3)
    assert len(schedule.core_order) == 8
    assert schedule.core_order[3:] == ((),) * 5
    assert sorted(t for order in schedule.core_order for t in order) == list(range(graph.num_tasks))


def test_default_options_halve_lanes_per_batch_and_tile_budgets() -> None:
    target = IpuTarget.preset("ipu-mk2")
    workload = _mlp()
    one = CandidateOptions.for_workload(workload, target)
    assert one.weight_block_bytes == (159744, 79872)
    assert one.tile_budgets == (1472, 736, 368)
    assert one.block_lanes == ((8, 4, 2), (8, 4, 2))
    two = CandidateOptions.for_workload(workload, target, batch=2)
    assert two.block_lanes == ((4, 2, 1), (4, 2, 1))
    fixed = CandidateOptions.for_workload(workload, target, lanes=3)
    assert fixed.configurations() == [(3, 159744), (3, 79872)]


def test_equivalent_candidates_are_built_once_and_admission_selects_a_checked_plan(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # lanes 8 and 16 lower alike, so do both blocks (every matrix is <= 8 KiB): one
    # lowering, and one spread plan per tile budget under four labels each
    options = CandidateOptions(lanes=(8, 16), weight_block_bytes=(8192, 65536), tile_budgets=(8, 4))
    source = WorkloadCandidates(_mlp(), replace(TARGET, weight_block_bytes=None), options)
    records = source.expanded()
    assert len(records) == 8
    assert len({r.key for r in records}) == 2
    assert len(source.built) == 2
    state = admit(source, 1 << 16, AdmissionLimits(penalties=(0,)))
    assert state.selected is not None
    spread = {f"lanes={n} block={b} tiles=8 spread" for n in (8, 16) for b in (8192, 65536)}
    assert spread - set(state.aliases[records[0].key]) == {records[0].label}
    built = source.built[state.selected]
    assert built.problem.graph.num_tasks == 24
    # a second admission over the same source (another budget) schedules nothing again
    runs: list[int] = []
    real = exchange_candidates.scheduled

    def counted(*args: object) -> object:
        runs.append(1)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(exchange_candidates, "scheduled", counted)
    again = admit(source, 1 << 10, AdmissionLimits(penalties=(0,)))
    assert again.placed == state.placed
    assert runs == []
