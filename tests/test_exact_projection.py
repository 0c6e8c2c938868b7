"""Reads through views and lane-moving transposes are projected element by element.

`raptor_cp.workload.projection` follows a consumer's read through FLAT and TAKE
views (`ViewKind`) and through a transpose's permutation onto exactly the
producer rows it touches (scheduling.md: proven projections support
many-to-many edges); OPAQUE views keep the conservative "every row" read. Each
expected edge below is worked out in the comment above it.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from raptor_cp.graph import ComputeGraph
from raptor_cp.targets.generic import GenericTarget
from raptor_cp.workload.lowering import lower
from raptor_cp.workload.model import (
    ALL_ROWS,
    SAME_ROWS,
    Operation,
    OpKind,
    ViewKind,
    Workload,
    lane_axis,
    lane_rows,
)
from raptor_cp.workload.onnx_reader import read_onnx
from raptor_cp.workload.projection import (
    lane_rows_of,
    read_size,
    row_reads,
    taken_source,
    transposed_reads,
)

MODELS = Path(__file__).parent / "data" / "models"


def source(name: str, shape: tuple[int, ...]) -> Operation:
    return Operation(name, "input", OpKind.INPUT, output_shape=shape)


def relu(name: str, producer: str, shape: tuple[int, ...]) -> Operation:
    per_row = int(np.prod(shape)) // shape[-2]
    return Operation(
        name, "Relu", OpKind.VECTOR, (producer,), (SAME_ROWS,), shape, vector_per_row=per_row
    )


def view(
    name: str, producer: str, shape: tuple[int, ...], kind: ViewKind, axis: int = 0, index: int = 0
) -> Operation:
    return Operation(
        name, "Reshape", OpKind.VIEW, (producer,), (ALL_ROWS,), shape,
        view=kind, axis=axis, take_index=index,
    )  # fmt: skip


def reads_into(graph: ComputeGraph, consumer: str) -> list[tuple[str, int]]:
    """(producer task, bytes) of every edge into ``consumer``, by producer."""
    into = np.flatnonzero(graph.edge_dst == graph.names.index(consumer))
    return sorted(
        (graph.names[s], b)
        for s, b in zip(graph.edge_src[into].tolist(), graph.edge_bytes[into].tolist(), strict=True)
    )


# -- the index arithmetic, against numpy's own --------------------------------------


def rows_of(tensor: np.ndarray, first: int, last: int) -> np.ndarray:
    """Rows ``[first, last)`` of ``tensor`` along its lane axis, by numpy slicing."""
    axis = lane_axis(tensor.shape)
    if axis is None:
        return tensor
    return tensor[(slice(None),) * axis + (slice(first, last),)]


# Shapes whose lane axis is shape[-2], and sequence-first ones whose unit
# shape[-2] is skipped (lane axis 0 of (3, 1, 4), 1 of (2, 3, 1, 1, 2)).
SHAPES = [(4, 6), (2, 3, 4), (2, 1, 3, 4), (3, 1, 4), (2, 3, 1, 1, 2)]


@pytest.mark.parametrize("shape", [(5,), *SHAPES])
def test_row_reads_are_the_elements_of_the_rows(shape: tuple[int, ...]) -> None:
    flat = np.arange(int(np.prod(shape))).reshape(shape)
    rows = lane_rows(shape)
    for first, last in [(0, rows), (0, 1), (rows - 1, rows)]:
        expected = rows_of(flat, first, last)
        assert row_reads(shape, first, last).tolist() == expected.ravel().tolist()
        assert read_size(shape, first, last) == expected.size
        assert set(lane_rows_of(expected.ravel(), shape).tolist()) <= set(range(first, last))


@pytest.mark.parametrize("shape", [(2, 3), *SHAPES[1:]])
def test_transposed_reads_are_what_numpy_transpose_puts_in_the_rows(
    shape: tuple[int, ...],
) -> None:
    flat = np.arange(int(np.prod(shape))).reshape(shape)
    for perm in itertools.permutations(range(len(shape))):
        moved = flat.transpose(perm)
        rows = lane_rows(moved.shape)
        for lo, hi in [(0, rows), (0, 1), (rows - 1, rows)]:
            expected = rows_of(moved, lo, hi).ravel().tolist()
            assert transposed_reads(shape, perm, lo, hi).tolist() == expected


@pytest.mark.parametrize(("shape", "axis"), [((3, 4), 0), ((3, 4), 1), ((2, 3, 4), 1)])
def test_taken_source_is_numpy_take(shape: tuple[int, ...], axis: int) -> None:
    flat = np.arange(int(np.prod(shape))).reshape(shape)
    for index in range(shape[axis]):
        taken = np.take(flat, index, axis=axis).ravel()
        positions = np.arange(taken.size)
        assert taken_source(positions, shape, axis, index).tolist() == taken.tolist()


# -- lowering ------------------------------------------------------------------------


def test_a_transpose_moving_the_lane_axis_reads_only_the_rows_it_copies() -> None:
    # a: (4, 6), one row (6 B) per lane. r = Reshape(a) to (4, 2, 3) has 2 rows,
    # so the transpose t = (1, 0, 2) -> (2, 4, 3) moves the lane axis (ALL window).
    # t's row j is r[j, :, :] = a's row j: each t lane reads one a lane, 6 B.
    workload = Workload(
        "w",
        (
            source("x", (4, 6)),
            relu("a", "x", (4, 6)),
            view("r", "a", (4, 2, 3), ViewKind.FLAT),
            Operation(
                "t", "Transpose", OpKind.TRANSPOSE, ("r",), (ALL_ROWS,), (2, 4, 3),
                perm=(1, 0, 2), move_shapes=((4, 2, 3),),
            ),
        ),
    )  # fmt: skip
    graph = lower(workload, GenericTarget(2), lanes=4)
    for j in range(4):
        assert reads_into(graph, f"t/l{j}") == [(f"a/l{j}", 6)]


def take_chain(reshape: ViewKind) -> ComputeGraph:
    """a (4 x 6, one 6-byte row per lane) -> s = Reshape(a) to (2, 2, 6), a ``reshape``
    view -> g = s[1] (TAKE, axis 0, index 1), (2, 6) -> h = Relu(g), lowered."""
    workload = Workload(
        "w",
        (
            source("x", (4, 6)),
            relu("a", "x", (4, 6)),
            view("s", "a", (2, 2, 6), reshape),
            view("g", "s", (2, 6), ViewKind.TAKE, axis=0, index=1),
            relu("h", "g", (2, 6)),
        ),
    )
    return lower(workload, GenericTarget(2), lanes=4)


def test_a_take_view_reads_only_the_taken_rows() -> None:
    # g's row i is a's row 2 + i, so h's lane i reads a's lane 2 + i, 6 B.
    graph = take_chain(ViewKind.FLAT)
    assert reads_into(graph, "h/l0") == [("a/l2", 6)]
    assert reads_into(graph, "h/l1") == [("a/l3", 6)]


def test_an_opaque_view_keeps_the_conservative_read_of_every_row() -> None:
    # With an OPAQUE reshape (an unproven projection) every h lane depends on,
    # and receives, all four a lanes (6 B each).
    graph = take_chain(ViewKind.OPAQUE)
    assert reads_into(graph, "h/l0") == [(f"a/l{i}", 6) for i in range(4)]


def test_a_view_whose_shapes_do_not_fit_its_kind_stays_unproven() -> None:
    # A "FLAT" view of 2 x 6 elements onto a 24-element source cannot keep the
    # element order: h's lane reads all four a lanes, as through an OPAQUE view.
    workload = Workload(
        "w",
        (
            source("x", (4, 6)),
            relu("a", "x", (4, 6)),
            view("s", "a", (2, 6), ViewKind.FLAT),
            relu("h", "s", (2, 6)),
        ),
    )
    graph = lower(workload, GenericTarget(2), lanes=4)
    assert reads_into(graph, "h/l0") == [(f"a/l{i}", 6) for i in range(4)]


def test_the_onnx_reader_marks_views_flat_or_take() -> None:
    workload = read_onnx(MODELS / "vit_b16_1layer.onnx")
    ops = workload.by_name()
    attn = "/layers/layers.0/attn/"
    assert ops[attn + "Reshape_2"].view is ViewKind.FLAT
    assert ops[attn + "Squeeze"].view is ViewKind.FLAT
    # Q and K: indices 0 and 1 along axis 0 of (3, 197, 1, 768).
    for gather, index in (("Gather", 0), ("Gather_1", 1)):
        op = ops[attn + gather]
        assert (op.view, op.axis, op.take_index) == (ViewKind.TAKE, 0, index)
    # The class token: row 0 of the (1, 197, 768) tokens, a TAKE along the lane axis.
    token = ops["/Gather"]
    assert (token.view, token.axis, token.take_index) == (ViewKind.TAKE, 1, 0)


def test_vit_attention_reads_its_qkv_projection_once() -> None:
    # ViT's QKV transpose (one lane per token of its (3, 197, 1, 1, 768) output)
    # feeds Q, K and V's transposes through Squeeze, Gather and Reshape views.
    # Each of its elements is read by exactly one of them, so its out-edges carry
    # its output once (453,888 B), not once per reading lane (268 MB when it was
    # one task read through unproven views).
    workload = read_onnx(MODELS / "vit_b16_1layer.onnx")
    graph = lower(workload, GenericTarget(168))
    qkv = graph.operation_names.index("/layers/layers.0/attn/Transpose_1")
    tasks = np.flatnonzero(graph.operation == qkv)
    assert tasks.size == 197
    out = np.isin(graph.edge_src, tasks)
    assert int(graph.edge_bytes[out].sum()) == int(graph.output_bytes[tasks].sum()) == 453_888


def test_vit_qkv_projection_has_a_lane_per_token_reading_its_token() -> None:
    # Sequence-first (197, 1, 768): the lane axis is the tokens. The input is a FLAT
    # view of the (1, 197, 768) LayerNorm output, element order unchanged, so QKV
    # lane r (token r) reads exactly LayerNorm lane r's 768 B.
    graph = lower(read_onnx(MODELS / "vit_b16_1layer.onnx"), GenericTarget(168), lanes=197)
    norm = "/layers/layers.0/n1/LayerNormalization"
    for lane in range(197):
        reads = reads_into(graph, f"/layers/layers.0/attn/MatMul/l{lane}/ag0.0")
        assert reads == [(f"{norm}/l{lane}", 768)]
