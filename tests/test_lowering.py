"""Lowering a hand-built `Workload` into tasks, weights and exact projected bytes.

Every expected number below is worked out by hand in the comment above it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

import pytest

from raptor_cp.errors import InvalidInputError
from raptor_cp.graph import ComputeGraph
from raptor_cp.targets.base import FixedWork, MatrixWork, VectorWork, WeightTiling, Work
from raptor_cp.targets.generic import GenericTarget
from raptor_cp.workload.lowering import TASK_BUDGET, default_lanes, lower
from raptor_cp.workload.model import (
    ALL_ROWS,
    SAME_ROWS,
    Operation,
    OpKind,
    RowWindow,
    WindowKind,
    Workload,
)


@dataclass(frozen=True)
class CrossbarTarget:
    """A tiny crossbar machine: ``xbar_rows`` x ``xbar_cols`` crossbars, ``per_core`` a core.

    Weights are cut into ``xbar_rows``-high row slices; when one slice needs more
    crossbars than a core holds, the columns are split into blocks of
    ``per_core * xbar_cols``. Distinctive prices show the target did the pricing.
    """

    xbar_rows: int = 8
    xbar_cols: int = 2
    per_core: int = 8
    cores: int = 2
    name: str = "crossbar"

    def capacity(self, core: int) -> int:
        return self.per_core

    def weight_tiling(self, height: int, width: int, bits: int) -> WeightTiling:
        slices = tuple(min(self.xbar_rows, height - r) for r in range(0, height, self.xbar_rows))
        span = self.per_core * self.xbar_cols
        blocks = tuple(min(span, width - c) for c in range(0, width, span))
        return WeightTiling(slices, blocks, tuple(math.ceil(b / self.xbar_cols) for b in blocks))

    def execution_ns(self, work: Work) -> int:
        if isinstance(work, MatrixWork):
            return work.mvms * (work.rows + work.cols) + work.crossbars
        if isinstance(work, VectorWork):
            return work.elements * work.operands * 2
        assert isinstance(work, FixedWork)
        return 3 * work.ns


def sliding(kernel: int, stride: int, pad: int) -> RowWindow:
    return RowWindow(WindowKind.SLIDING, kernel=kernel, stride=stride, pad=pad)


def source(name: str, shape: tuple[int, ...]) -> Operation:
    return Operation(name, "input", OpKind.INPUT, output_shape=shape)


def edges(graph: ComputeGraph) -> list[tuple[str, str, int]]:
    """Edges by task name, in graph order."""
    return [
        (graph.names[s], graph.names[d], b)
        for s, d, b in zip(
            graph.edge_src.tolist(), graph.edge_dst.tolist(), graph.edge_bytes.tolist(), strict=True
        )
    ]


def weights(graph: ComputeGraph) -> list[tuple[str, ...]]:
    """Per task, the names of its resident weights."""
    return [tuple(graph.weight_names[w] for w in ws) for ws in graph.task_weights]


def weighted(
    name: str,
    producer: str,
    window: RowWindow,
    shape: tuple[int, ...],
    matrix: tuple[int, int],
    mvm_per_row: int,
    bits: int = 8,
) -> Operation:
    """A conv/FC reading ``producer`` with a ``matrix`` = (height, width) weight."""
    height, width = matrix
    return Operation(
        name, "Conv", OpKind.WEIGHTED, (producer,), (window,), shape, bits=bits,
        weight_height=height, weight_width=width, mvm_per_row=mvm_per_row,
    )  # fmt: skip


def vector(
    name: str,
    producers: tuple[str, ...],
    window: RowWindow,
    shape: tuple[int, ...],
    per_row: int,
    bits: int = 8,
) -> Operation:
    """An element-wise or reduction op with one operand stream per producer."""
    return Operation(
        name, "Relu", OpKind.VECTOR, producers, (window,) * len(producers), shape, bits=bits,
        vector_per_row=per_row, vector_operands=len(producers),
    )  # fmt: skip


def view(name: str, producer: str, window: RowWindow, shape: tuple[int, ...]) -> Operation:
    return Operation(name, "Reshape", OpKind.VIEW, (producer,), (window,), shape)


def test_sliding_conv_chain_projects_exact_bytes_between_lanes() -> None:
    # conv1 rows 8 in 3 lanes [0,2) [2,5) [5,8); one output row = 4 ch x 8 cols = 32 B.
    # conv2 (stride 2) rows 4 in lanes [0,1) [1,2) [2,4) needs conv1 rows
    # [0,2) -> 2 rows of l0; [1,4) -> 1 row of l0, 2 of l1; [3,8) -> 2 rows of l1, 3 of l2.
    workload = Workload(
        "chain",
        (
            source("x", (1, 2, 8, 8)),
            weighted("conv1", "x", sliding(3, 1, 1), (1, 4, 8, 8), (18, 4), 8),
            weighted("conv2", "conv1", sliding(3, 2, 1), (1, 4, 4, 4), (36, 4), 4),
        ),
    )
    graph = lower(workload, GenericTarget(2), lanes=3)
    assert graph.names == (
        "conv1/l0/ag0.0", "conv1/l1/ag0.0", "conv1/l2/ag0.0",
        "conv2/l0/ag0.0", "conv2/l1/ag0.0", "conv2/l2/ag0.0",
    )  # fmt: skip
    # generic cost = mvms x rows x cols: conv1 (2|3|3 rows x 8) x 18 x 4, conv2 (1|1|2 x 4) x 36 x 4
    assert graph.cost.tolist() == [1152, 1728, 1728, 576, 576, 1152]
    assert edges(graph) == [
        ("conv1/l0/ag0.0", "conv2/l0/ag0.0", 64),
        ("conv1/l0/ag0.0", "conv2/l1/ag0.0", 32),
        ("conv1/l1/ag0.0", "conv2/l1/ag0.0", 64),
        ("conv1/l1/ag0.0", "conv2/l2/ag0.0", 64),
        ("conv1/l2/ag0.0", "conv2/l2/ag0.0", 96),
    ]
    assert graph.weight_names == ("conv1/ag0.0", "conv2/ag0.0")
    assert graph.weight_size.tolist() == [0, 0]
    assert graph.task_weights == ((0,), (0,), (0,), (1,), (1,), (1,))
    assert graph.operation_names == ("conv1", "conv2")
    assert graph.operation.tolist() == [0, 0, 0, 1, 1, 1]
    assert graph.lane.tolist() == [0, 1, 2, 0, 1, 2]
    assert graph.name == "chain"


def test_three_row_slices_are_summed_by_a_reduction_task() -> None:
    # conv weight 18 x 3 on 8-row crossbars: slices 8, 8, 2, each 2 crossbars (3 cols / 2).
    # act row = 2 ch x 5 = 10 B. conv lane [0,2) reads act rows [0,3): 20 B of l0, 10 B of l1;
    # slice shares ceil(20*8/18)=9, ceil(10*8/18)=5, ceil(20*2/18)=3, ceil(10*2/18)=2.
    workload = Workload(
        "slices",
        (
            source("x", (1, 2, 4, 5)),
            vector("act", ("x",), SAME_ROWS, (1, 2, 4, 5), 10),
            weighted("conv", "act", sliding(3, 1, 1), (1, 3, 4, 5), (18, 3), 5),
            vector("relu", ("conv",), SAME_ROWS, (1, 3, 4, 5), 15),
        ),
    )
    graph = lower(workload, CrossbarTarget(), lanes=2)
    assert graph.names == (
        "act/l0", "act/l1",
        "conv/l0/ag0.0", "conv/l0/ag1.0", "conv/l0/ag2.0", "conv/l0/sum.0",
        "conv/l1/ag0.0", "conv/l1/ag1.0", "conv/l1/ag2.0", "conv/l1/sum.0",
        "relu/l0", "relu/l1",
    )  # fmt: skip
    # act: 20 elements x 1 operand x 2; MVM: 10 mvms x (8|8|2 rows + 3 cols) + 2 crossbars;
    # sum: (3-1) x 10 mvms x 3 cols = 60 elements x 2 operands x 2; relu: 30 elements x 2.
    assert graph.cost.tolist() == [40, 40, 112, 112, 52, 240, 112, 112, 52, 240, 60, 60]
    assert graph.weight_names == ("conv/ag0.0", "conv/ag1.0", "conv/ag2.0")
    assert graph.weight_size.tolist() == [2, 2, 2]
    assert weights(graph)[2:6] == [("conv/ag0.0",), ("conv/ag1.0",), ("conv/ag2.0",), ()]
    assert weights(graph)[6:10] == weights(graph)[2:6]
    # partial sums: 10 mvms x 3 cols x 1 B = 30 B; the sum publishes 2 rows x 15 B = 30 B.
    assert edges(graph) == [
        ("act/l0", "conv/l0/ag0.0", 9), ("act/l1", "conv/l0/ag0.0", 5),
        ("act/l0", "conv/l0/ag1.0", 9), ("act/l1", "conv/l0/ag1.0", 5),
        ("act/l0", "conv/l0/ag2.0", 3), ("act/l1", "conv/l0/ag2.0", 2),
        ("conv/l0/ag0.0", "conv/l0/sum.0", 30),
        ("conv/l0/ag1.0", "conv/l0/sum.0", 30),
        ("conv/l0/ag2.0", "conv/l0/sum.0", 30),
        ("act/l0", "conv/l1/ag0.0", 5), ("act/l1", "conv/l1/ag0.0", 9),
        ("act/l0", "conv/l1/ag1.0", 5), ("act/l1", "conv/l1/ag1.0", 9),
        ("act/l0", "conv/l1/ag2.0", 2), ("act/l1", "conv/l1/ag2.0", 3),
        ("conv/l1/ag0.0", "conv/l1/sum.0", 30),
        ("conv/l1/ag1.0", "conv/l1/sum.0", 30),
        ("conv/l1/ag2.0", "conv/l1/sum.0", 30),
        ("conv/l0/sum.0", "relu/l0", 30),
        ("conv/l1/sum.0", "relu/l1", 30),
    ]  # fmt: skip


def test_column_blocks_publish_their_share_of_each_row() -> None:
    # 5 output columns need 3 crossbars but a core holds 2: blocks of 4 and 1 columns
    # (2 and 1 crossbars). A 4-bit output row of 5 ch x 3 cols is 60 bits; block shares
    # are ceil(60*4/5) = 48 bits = 6 B and 12 bits -> 2 B, rounded to bytes once per
    # fragment (rounding the row to 8 B first gave 7 B: sub-byte payloads stay exact).
    workload = Workload(
        "blocks",
        (
            source("x", (1, 2, 2, 3)),
            weighted("conv", "x", SAME_ROWS, (1, 5, 2, 3), (2, 5), 3, bits=4),
            vector("relu", ("conv",), SAME_ROWS, (1, 5, 2, 3), 15, bits=4),
        ),
    )
    graph = lower(workload, CrossbarTarget(per_core=2), lanes=2)
    assert graph.names == (
        "conv/l0/ag0.0", "conv/l0/ag0.1", "conv/l1/ag0.0", "conv/l1/ag0.1", "relu/l0", "relu/l1",
    )  # fmt: skip
    # 3 mvms x (2 rows + 4|1 cols) + 2|1 crossbars; relu 15 elements x 2
    assert graph.cost.tolist() == [20, 10, 20, 10, 30, 30]
    assert graph.weight_names == ("conv/ag0.0", "conv/ag0.1")
    assert graph.weight_size.tolist() == [2, 1]
    assert graph.task_weights == ((0,), (1,), (0,), (1,), (), ())
    assert edges(graph) == [
        ("conv/l0/ag0.0", "relu/l0", 6),
        ("conv/l0/ag0.1", "relu/l0", 2),
        ("conv/l1/ag0.0", "relu/l1", 6),
        ("conv/l1/ag0.1", "relu/l1", 2),
    ]
    assert graph.payload_bits.tolist() == [4] * 6
    assert graph.output_bytes.tolist() == [6, 2, 6, 2, 8, 8]


def test_a_broadcast_bias_is_one_piece_per_column_block() -> None:
    # The conv above with a (5,) bias (4-bit, 20 bits): blocks of 4 and 1 columns
    # load ceil(20*4/5) = 16 bits = 2 B and 4 bits -> 1 B of it. Both lanes read
    # each block's share: one piece per block, which a core loads once.
    conv = weighted("conv", "x", SAME_ROWS, (1, 5, 2, 3), (2, 5), 3, bits=4)
    workload = Workload("bias", (source("x", (1, 2, 2, 3)), replace(conv, constants=((5,),))))
    graph = lower(workload, CrossbarTarget(per_core=2), lanes=2)
    base = graph.baseline
    shared = [p for p in set(base.piece.tolist()) if (base.piece == p).sum() > 1]
    assert len(shared) == 2  # the input rows each lane reads are pieces of their own
    bias = {
        graph.names[t]: (n, p)
        for t, n, p in zip(
            base.task.tolist(), base.nbytes.tolist(), base.piece.tolist(), strict=True
        )
        if p in shared
    }
    assert {name: n for name, (n, _) in bias.items()} == {
        "conv/l0/ag0.0": 2, "conv/l0/ag0.1": 1, "conv/l1/ag0.0": 2, "conv/l1/ag0.1": 1,
    }  # fmt: skip
    assert bias["conv/l0/ag0.0"][1] == bias["conv/l1/ag0.0"][1]
    assert bias["conv/l0/ag0.1"][1] == bias["conv/l1/ag0.1"][1]
    assert bias["conv/l0/ag0.0"][1] != bias["conv/l0/ag0.1"][1]


def test_views_collapse_onto_their_sources() -> None:
    # act rows 4 in lanes [0,2) [2,4), 2 ch x 2 cols = 4 B a row, 8 B a lane.
    # "same" (SAME view, same rows) keeps lanes; "flat" (ALL view, 1 row) needs all act rows;
    # "tall" (SAME view but 8 rows over act's 4) cannot keep rows and needs all of them too.
    workload = Workload(
        "views",
        (
            source("x", (1, 2, 4, 2)),
            view("xview", "x", SAME_ROWS, (1, 2, 4, 2)),
            vector("act", ("xview",), SAME_ROWS, (1, 2, 4, 2), 4),
            view("same", "act", SAME_ROWS, (1, 2, 4, 2)),
            vector("relu", ("same",), SAME_ROWS, (1, 2, 4, 2), 4),
            view("flat", "same", ALL_ROWS, (1, 16)),
            weighted("fc", "flat", SAME_ROWS, (1, 3), (16, 3), 1),
            view("tall", "act", SAME_ROWS, (1, 8, 2)),
            vector("neg", ("tall",), SAME_ROWS, (1, 8, 2), 2),
        ),
    )
    graph = lower(workload, GenericTarget(2), lanes=2)
    assert graph.names == (
        "act/l0",
        "act/l1",
        "relu/l0",
        "relu/l1",
        "fc/l0/ag0.0",
        "neg/l0",
        "neg/l1",
    )
    assert graph.operation_names == ("act", "relu", "fc", "neg")
    assert edges(graph) == [
        ("act/l0", "relu/l0", 8),
        ("act/l1", "relu/l1", 8),
        ("act/l0", "fc/l0/ag0.0", 8),
        ("act/l1", "fc/l0/ag0.0", 8),
        ("act/l0", "neg/l0", 8),
        ("act/l1", "neg/l0", 8),
        ("act/l0", "neg/l1", 8),
        ("act/l1", "neg/l1", 8),
    ]


def test_parallel_edges_are_merged_with_summed_bytes() -> None:
    # sq reads act twice (x * x): one edge per lane pair carrying 2 x 3 B.
    workload = Workload(
        "square",
        (
            source("x", (1, 4, 3)),
            vector("act", ("x",), SAME_ROWS, (1, 4, 3), 3),
            vector("sq", ("act", "act"), SAME_ROWS, (1, 4, 3), 3),
        ),
    )
    graph = lower(workload, GenericTarget(1), lanes=4)
    assert edges(graph) == [(f"act/l{i}", f"sq/l{i}", 6) for i in range(4)]


def stg_workload(w_size_in_t1: int = 3) -> Workload:
    return Workload(
        "stg",
        (
            Operation("t0", "stg", OpKind.TASK, task_cost=5, resident=(("w", 3),)),
            Operation(
                "t1",
                "stg",
                OpKind.TASK,
                ("t0",),
                (ALL_ROWS,),
                task_cost=7,
                input_bytes=(10,),
                resident=(("w", w_size_in_t1), ("v", 2)),
            ),
            Operation("t2", "stg", OpKind.TASK, ("t0",), (ALL_ROWS,), task_cost=2),
            Operation(
                "t3",
                "stg",
                OpKind.TASK,
                ("t1", "t2"),
                (ALL_ROWS, ALL_ROWS),
                task_cost=1,
                input_bytes=(4, 6),
                resident=(("v", 2),),
            ),
        ),
        source="tiny.stg",
    )


def test_task_graph_keeps_costs_bytes_and_shares_weights_by_name() -> None:
    graph = lower(stg_workload(), CrossbarTarget())
    assert graph.names == ("t0", "t1", "t2", "t3")
    assert graph.cost.tolist() == [15, 21, 6, 3]  # priced by the target: 3 x task_cost
    assert graph.weight_names == ("w", "v")
    assert graph.weight_size.tolist() == [3, 2]
    assert graph.task_weights == ((0,), (0, 1), (), (1,))
    assert edges(graph) == [("t0", "t1", 10), ("t0", "t2", 0), ("t1", "t3", 4), ("t2", "t3", 6)]
    assert graph.lane.tolist() == [0, 0, 0, 0]
    graph.validate([5, 5])


def test_conflicting_weight_sizes_are_rejected() -> None:
    with pytest.raises(
        InvalidInputError,
        match=re.escape("tiny.stg: operation 't1': weight 'w' has size 4 but size 3 elsewhere"),
    ):
        lower(stg_workload(w_size_in_t1=4), GenericTarget(2))


def test_task_input_bytes_are_split_over_producer_lanes() -> None:
    # act rows [0,1) and [1,3) publish 4 B and 8 B; 9 B split: ceil(9*4/12)=3, ceil(9*8/12)=6.
    workload = Workload(
        "split",
        (
            source("x", (1, 3, 4)),
            vector("act", ("x",), SAME_ROWS, (1, 3, 4), 4),
            Operation(
                "t", "stg", OpKind.TASK, ("act",), (ALL_ROWS,), task_cost=1, input_bytes=(9,)
            ),
        ),
    )
    graph = lower(workload, GenericTarget(2), lanes=2)
    assert edges(graph) == [("act/l0", "t", 3), ("act/l1", "t", 6)]


def test_lanes_beyond_rows_are_clamped_to_one_row_each() -> None:
    workload = Workload(
        "clamp",
        (
            source("x", (1, 3, 4)),
            vector("v", ("x",), SAME_ROWS, (1, 3, 4), 4),
            vector("gap", ("v",), ALL_ROWS, (1, 4), 12),
        ),
    )
    graph = lower(workload, GenericTarget(2), lanes=10)
    assert graph.names == ("v/l0", "v/l1", "v/l2", "gap/l0")
    assert graph.cost.tolist() == [4, 4, 4, 12]
    assert edges(graph) == [("v/l0", "gap/l0", 4), ("v/l1", "gap/l0", 4), ("v/l2", "gap/l0", 4)]


def test_default_lanes_give_small_models_one_lane_per_row() -> None:
    workload = Workload(
        "small",
        (
            source("x", (1, 2, 4, 5)),
            weighted("conv", "x", sliding(3, 1, 1), (1, 3, 4, 5), (18, 3), 5),
        ),
    )
    assert default_lanes(workload, CrossbarTarget()) == 4
    assert lower(workload, CrossbarTarget()).lane.tolist() == [0] * 4 + [1] * 4 + [2] * 4 + [3] * 4


def test_default_lanes_is_the_largest_count_within_the_task_budget() -> None:
    # 80-row weight on 8-row crossbars: 10 array groups + 1 sum = 11 tasks a lane,
    # plus one TASK op: 1 + 11 L <= 20,000 gives L = 1818.
    workload = Workload(
        "big",
        (
            source("x", (1, 10_000, 80)),
            weighted("fc", "x", SAME_ROWS, (1, 10_000, 4), (80, 4), 1),
            Operation("tail", "stg", OpKind.TASK, ("fc",), (ALL_ROWS,), task_cost=1),
        ),
    )
    target = CrossbarTarget()
    assert default_lanes(workload, target) == 1818
    assert lower(workload, target).num_tasks == 1 + 11 * 1818 <= TASK_BUDGET
    assert lower(workload, target, lanes=1819).num_tasks > TASK_BUDGET


def test_zero_lanes_are_rejected() -> None:
    with pytest.raises(InvalidInputError, match=re.escape("tiny.stg: lanes must be >= 1, got 0")):
        lower(stg_workload(), GenericTarget(1), lanes=0)


def test_input_bytes_must_match_inputs() -> None:
    workload = Workload(
        "bad",
        (
            Operation("a", "stg", OpKind.TASK, task_cost=1),
            Operation("b", "stg", OpKind.TASK, ("a",), (ALL_ROWS,), input_bytes=(1, 2)),
        ),
    )
    with pytest.raises(
        InvalidInputError, match=re.escape("bad: operation 'b': 1 inputs but 2 input_bytes")
    ):
        lower(workload, GenericTarget(1))


def test_weighted_operation_needs_a_weight_matrix() -> None:
    workload = Workload(
        "bad",
        (Operation("fc", "Gemm", OpKind.WEIGHTED, output_shape=(1, 4), weight_width=4),),
    )
    with pytest.raises(
        InvalidInputError,
        match=re.escape(
            "bad: weighted operation 'fc' needs positive weight_height, weight_width and "
            "mvm_per_row, got 0, 4, 0"
        ),
    ):
        lower(workload, GenericTarget(1), lanes=1)


def test_non_positive_bits_are_rejected() -> None:
    with pytest.raises(
        InvalidInputError, match=re.escape("operation 't': bits must be >= 1, got 0")
    ):
        Operation("t", "stg", OpKind.TASK, bits=0)


def test_negative_weight_size_is_rejected() -> None:
    workload = Workload("bad", (Operation("t", "stg", OpKind.TASK, resident=(("w", -1),)),))
    with pytest.raises(
        InvalidInputError, match=re.escape("bad: operation 't': weight 'w' has negative size -1")
    ):
        lower(workload, GenericTarget(1))


def test_inputs_alone_lower_to_an_empty_graph() -> None:
    workload = Workload(
        "empty",
        (
            source("x", (1, 4)),
            Operation("view", "Identity", OpKind.VIEW, ("x",), (SAME_ROWS,), (1, 4)),
        ),
    )
    graph = lower(workload, GenericTarget(1))
    assert graph.num_tasks == 0
    assert graph.num_edges == 0
    graph.validate([1])
