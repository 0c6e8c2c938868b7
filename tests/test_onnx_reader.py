"""Tests of `raptor_cp.workload.onnx_reader`: the shipped models and hand-built graphs."""

from __future__ import annotations

import collections
import pathlib
import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from raptor_cp.errors import InvalidInputError, UnsupportedOperatorError
from raptor_cp.workload.model import (
    ALL_ROWS,
    SAME_ROWS,
    OpKind,
    RowWindow,
    WindowKind,
    lane_axis,
    lane_rows,
    rows_align,
)
from raptor_cp.workload.onnx_graph import FOLD_LIMIT
from raptor_cp.workload.onnx_reader import read_onnx

MODELS = pathlib.Path(__file__).parent / "data" / "models"
MODEL_NAMES = [
    "lenet5",
    "resnet18",
    "resnet50",
    "vgg16",
    "mobilenetv2",
    "vit_b16_1layer",
    "vit_b16",
]


def _model_path(name: str) -> pathlib.Path:
    return MODELS / f"{name}.onnx"


def _save(
    path: pathlib.Path,
    nodes: list[onnx.NodeProto],
    inputs: list[onnx.ValueInfoProto],
    outputs: list[onnx.ValueInfoProto],
    initializers: list[onnx.TensorProto] = (),
) -> pathlib.Path:
    """Write a small opset-17 model built with onnx.helper (real initializer bytes)."""
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, path)
    return path


def _float(name: str, shape: list[int | str] | None = None) -> onnx.ValueInfoProto:
    """A float tensor; ``None`` leaves the shape to inference (``[]`` would mean a scalar)."""
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _weight(name: str, shape: tuple[int, ...]) -> onnx.TensorProto:
    return numpy_helper.from_array(np.ones(shape, np.float32), name)


def _kind_counts(name: str) -> collections.Counter[tuple[str, OpKind]]:
    workload = read_onnx(_model_path(name))
    return collections.Counter((op.op_type, op.kind) for op in workload.operations)


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_shipped_model_loads_with_one_input_first(name: str) -> None:
    workload = read_onnx(_model_path(name))
    assert workload.name == name
    assert workload.source == str(_model_path(name))
    assert workload.operations[0].kind is OpKind.INPUT
    assert sum(op.kind is OpKind.INPUT for op in workload.operations) == 1
    assert all(op.bits == 8 for op in workload.operations)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("lenet5", {("Conv", OpKind.WEIGHTED): 2, ("Gemm", OpKind.WEIGHTED): 3}),
        (
            "resnet18",
            {
                ("Conv", OpKind.WEIGHTED): 20,
                ("Gemm", OpKind.WEIGHTED): 1,
                ("Add", OpKind.VECTOR): 8,
            },
        ),
        (
            "resnet50",
            {
                ("Conv", OpKind.WEIGHTED): 53,
                ("Gemm", OpKind.WEIGHTED): 1,
                ("Add", OpKind.VECTOR): 16,
            },
        ),
        ("vgg16", {("Conv", OpKind.WEIGHTED): 13, ("Gemm", OpKind.WEIGHTED): 3}),
        (
            "mobilenetv2",
            {
                ("Conv", OpKind.WEIGHTED): 52,
                ("Gemm", OpKind.WEIGHTED): 1,
                ("Clip", OpKind.VECTOR): 35,
            },
        ),
        (
            "vit_b16_1layer",
            {
                ("Conv", OpKind.WEIGHTED): 1,
                ("Gemm", OpKind.WEIGHTED): 2,
                ("MatMul", OpKind.WEIGHTED): 3,
                ("MatMul", OpKind.VECTOR): 2,
                ("Softmax", OpKind.VECTOR): 1,
                ("LayerNormalization", OpKind.VECTOR): 3,
            },
        ),
        (
            "vit_b16",
            {
                ("Conv", OpKind.WEIGHTED): 1,
                ("Gemm", OpKind.WEIGHTED): 13,
                ("MatMul", OpKind.WEIGHTED): 36,
                ("MatMul", OpKind.VECTOR): 24,
                ("Softmax", OpKind.VECTOR): 12,
                ("LayerNormalization", OpKind.VECTOR): 25,
            },
        ),
    ],
)
def test_main_operator_counts_match_the_model_readme(
    name: str, expected: dict[tuple[str, OpKind], int]
) -> None:
    counts = _kind_counts(name)
    assert {key: counts[key] for key in expected} == expected
    weighted = sum(n for (_, kind), n in counts.items() if kind is OpKind.WEIGHTED)
    assert weighted == sum(n for (_, kind), n in expected.items() if kind is OpKind.WEIGHTED)


def test_mobilenetv2_has_17_depthwise_convs_of_height_9() -> None:
    workload = read_onnx(_model_path("mobilenetv2"))
    depthwise = [op for op in workload.operations if op.op_type == "Conv" and op.weight_height == 9]
    assert len(depthwise) == 17
    assert all(op.weight_width == op.output_shape[1] for op in depthwise)


def test_resnet18_stem_conv_pool_and_fc_fields() -> None:
    ops = read_onnx(_model_path("resnet18")).operations
    conv, relu, pool = ops[1], ops[2], ops[3]
    assert (conv.op_type, conv.inputs, conv.output_shape) == ("Conv", ("input",), (1, 64, 112, 112))
    assert (conv.weight_height, conv.weight_width) == (7 * 7 * 3, 64)
    assert (conv.rows, conv.mvm_per_row) == (112, 112)
    assert conv.windows == (RowWindow(WindowKind.SLIDING, kernel=7, stride=2, pad=3),)
    assert (relu.kind, relu.vector_per_row, relu.windows) == (OpKind.VECTOR, 64 * 112, (SAME_ROWS,))
    assert pool.op_type == "MaxPool"
    assert pool.vector_per_row == 64 * 56 * 3 * 3
    assert pool.windows == (RowWindow(WindowKind.SLIDING, kernel=3, stride=2, pad=1),)
    gap, flatten, fc = ops[-3:]
    assert (gap.vector_per_row, gap.windows) == (512 * 7 * 7, (ALL_ROWS,))
    assert (flatten.kind, fc.inputs) == (OpKind.VIEW, (flatten.name,))
    assert (fc.weight_height, fc.weight_width, fc.mvm_per_row) == (512, 1000, 1)


def test_vit_shape_path_is_folded_away() -> None:
    workload = read_onnx(_model_path("vit_b16_1layer"))
    names = workload.by_name()
    folded_types = {"Shape", "Constant", "ConstantOfShape", "Equal", "Where", "Mod", "Expand"}
    assert not [op.name for op in workload.operations if op.op_type in folded_types]
    for folded in ("/layers/layers.0/attn/Sqrt", "/layers/layers.0/attn/Cast", "/Mul"):
        assert folded not in names
    # The class token comes from the (folded) Expand of an initializer: one activation input.
    assert names["/Concat_1"].inputs == ("/Transpose",)
    assert names["/Concat_1"].output_shape == (1, 197, 768)


def test_vit_attention_matmuls_are_two_operand_vector_work() -> None:
    names = read_onnx(_model_path("vit_b16_1layer")).by_name()
    scores = names["/layers/layers.0/attn/MatMul_1"]
    mixed = names["/layers/layers.0/attn/MatMul_2"]
    assert scores.inputs == ("/layers/layers.0/attn/Mul", "/layers/layers.0/attn/Mul_1")
    for op, out in ((scores, (1, 12, 197, 197)), (mixed, (1, 12, 197, 64))):
        assert (op.kind, op.output_shape, op.vector_operands) == (OpKind.VECTOR, out, 2)
        assert op.vector_per_row == 12 * 64 * 197  # (elements per row) * K
        assert op.windows == (SAME_ROWS, ALL_ROWS)  # B's rows are the contraction axis
    softmax = names["/layers/layers.0/attn/Softmax"]
    assert (softmax.vector_per_row, softmax.windows) == (12 * 197, (SAME_ROWS,))


def test_vit_static_matmuls_and_transposed_gemms_are_weighted() -> None:
    names = read_onnx(_model_path("vit_b16_1layer")).by_name()
    qkv = names["/layers/layers.0/attn/MatMul"]
    assert (qkv.weight_height, qkv.weight_width, qkv.output_shape) == (768, 2304, (197, 1, 2304))
    # Sequence-first (197, 1, 2304): the lane axis skips the unit batch for the tokens.
    assert (qkv.rows, qkv.mvm_per_row, qkv.windows) == (197, 1, (SAME_ROWS,))
    out_proj = names["/layers/layers.0/attn/Gemm"]  # transB=1, weight reached through Identity
    assert (out_proj.weight_height, out_proj.weight_width, out_proj.mvm_per_row) == (768, 768, 1)
    head = names["/head/Gemm"]
    assert (head.weight_height, head.weight_width, head.inputs) == (768, 1000, ("/Gather",))
    patch = names["/patch/Conv"]
    assert (patch.weight_height, patch.weight_width, patch.mvm_per_row) == (16 * 16 * 3, 768, 14)


def test_bits_is_stored_on_every_operation() -> None:
    workload = read_onnx(_model_path("lenet5"), bits=4)
    assert {op.bits for op in workload.operations} == {4}


def test_non_positive_bits_is_rejected() -> None:
    path = _model_path("lenet5")
    with pytest.raises(InvalidInputError, match=re.escape(f"{path}: bits must be a positive")):
        read_onnx(path, bits=0)


@pytest.mark.parametrize(
    ("file", "reason"),
    [
        ("truncated_resnet18.onnx", "Error parsing message with type 'onnx.ModelProto'"),
        ("not_onnx.onnx", "Error parsing message with type 'onnx.ModelProto'"),
    ],
)
def test_malformed_file_is_not_a_valid_onnx_model(file: str, reason: str) -> None:
    path = MODELS / "bad" / file
    message = f"{path}: not a valid ONNX model ({reason})"
    with pytest.raises(InvalidInputError, match=f"^{re.escape(message)}$"):
        read_onnx(path)


def test_empty_file_is_not_a_valid_onnx_model(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "empty.onnx"
    path.write_bytes(b"")
    message = f"{path}: not a valid ONNX model (no IR version or no graph)"
    with pytest.raises(InvalidInputError, match=f"^{re.escape(message)}$"):
        read_onnx(path)


def test_missing_file_is_reported(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "absent.onnx"
    with pytest.raises(InvalidInputError, match=f"^{re.escape(f'{path}: no such file')}$"):
        read_onnx(path)


@pytest.mark.parametrize(
    ("node", "op_name"),
    [
        (helper.make_node("TopK", ["x", "k"], ["values", "indices"], name="topk_0"), "TopK"),
        (
            helper.make_node("Foo", ["x"], ["values"], name="topk_0", domain="com.acme"),
            "com.acme.Foo",
        ),
    ],
)
def test_unsupported_operator_is_named(
    tmp_path: pathlib.Path, node: onnx.NodeProto, op_name: str
) -> None:
    k = numpy_helper.from_array(np.array([2], np.int64), "k")
    path = _save(tmp_path / "model.onnx", [node], [_float("x", [1, 4, 8])], [_float("values")], [k])
    message = f"{path}: node 'topk_0' has unsupported op type '{op_name}'"
    with pytest.raises(UnsupportedOperatorError, match=f"^{re.escape(message)}$"):
        read_onnx(path)


def test_model_with_real_weights_loads(tmp_path: pathlib.Path) -> None:
    big = (400, 300)  # Transpose input larger than FOLD_LIMIT: shape from inference only
    assert big[0] * big[1] > FOLD_LIMIT
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("Flatten", ["r"], ["f"], name="flat"),
        helper.make_node("Transpose", ["w2"], ["w2t"], name="w2_t", perm=[1, 0]),
        helper.make_node("MatMul", ["f", "w2t"], ["m"], name="fc1"),
        helper.make_node("Transpose", ["w3"], ["w3t"], name="w3_t", perm=[1, 0]),
        helper.make_node("MatMul", ["m", "w3t"], ["m3"], name="fc2"),
        helper.make_node("Add", ["m3", "b"], ["y"], name="bias"),
    ]
    inits = [_weight("w", (4, 3, 3, 3)), _weight("w2", (300, 256)), _weight("w3", big)]
    inits.append(_weight("b", (400,)))
    path = _save(tmp_path / "real.onnx", nodes, [_float("x", [1, 3, 8, 8])], [_float("y")], inits)
    ops = read_onnx(path).operations
    assert [op.name for op in ops] == ["x", "conv", "relu", "flat", "fc1", "fc2", "bias"]
    fc1, fc2, bias = ops[4], ops[5], ops[6]
    assert (fc1.kind, fc1.weight_height, fc1.weight_width) == (OpKind.WEIGHTED, 256, 300)
    assert (fc2.weight_height, fc2.weight_width, fc2.output_shape) == (300, 400, (1, 400))
    assert (bias.inputs, bias.vector_operands, bias.windows) == (("fc2",), 1, (SAME_ROWS,))


def test_unsorted_graph_is_rejected(tmp_path: pathlib.Path) -> None:
    nodes = [
        helper.make_node("Sigmoid", ["a"], ["y"], name="sig"),
        helper.make_node("Relu", ["x"], ["a"], name="relu"),
    ]
    path = _save(tmp_path / "m.onnx", nodes, [_float("x", [2, 3])], [_float("y", [2, 3])])
    message = (
        f"{path}: node 'sig' reads tensor 'a', which no earlier node, initializer or graph "
        "input defines (the graph is not topologically sorted)"
    )
    with pytest.raises(InvalidInputError, match=f"^{re.escape(message)}$"):
        read_onnx(path)


def test_symbolic_input_shape_is_rejected(tmp_path: pathlib.Path) -> None:
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    path = _save(tmp_path / "m.onnx", nodes, [_float("x", ["N", 3])], [_float("y", ["N", 3])])
    message = f"{path}: cannot infer a static shape for tensor 'x' (graph input)"
    with pytest.raises(InvalidInputError, match=f"^{re.escape(message)}$"):
        read_onnx(path)


def test_used_second_output_is_rejected(tmp_path: pathlib.Path) -> None:
    node = helper.make_node("MaxPool", ["x"], ["y", "idx"], name="pool", kernel_shape=[2, 2])
    outputs = [_float("y"), helper.make_tensor_value_info("idx", TensorProto.INT64, None)]
    path = _save(tmp_path / "m.onnx", [node], [_float("x", [1, 1, 4, 4])], outputs)
    message = (
        f"{path}: node 'pool' (MaxPool) has its extra output 'idx' in use; "
        "only its first output is supported"
    )
    with pytest.raises(UnsupportedOperatorError, match=f"^{re.escape(message)}$"):
        read_onnx(path)


def test_split_outputs_become_one_view_each(tmp_path: pathlib.Path) -> None:
    nodes = [
        helper.make_node("Split", ["x", "sizes"], ["a", "b"], name="split", axis=2),
        helper.make_node("Mul", ["a", "b"], ["y"], name="mul"),
    ]
    sizes = numpy_helper.from_array(np.array([3, 3], np.int64), "sizes")
    path = _save(tmp_path / "m.onnx", nodes, [_float("x", [1, 8, 6])], [_float("y")], [sizes])
    ops = read_onnx(path).operations
    assert [(op.name, op.kind) for op in ops[1:3]] == [("a", OpKind.VIEW), ("b", OpKind.VIEW)]
    assert (ops[3].inputs, ops[3].vector_operands, ops[3].vector_per_row) == (("a", "b"), 2, 3)


def test_constant_left_matmul_operand_is_rejected(tmp_path: pathlib.Path) -> None:
    node = helper.make_node("MatMul", ["w", "x"], ["y"], name="mm")
    path = _save(
        tmp_path / "m.onnx",
        [node],
        [_float("x", [8, 5])],
        [_float("y")],
        [_weight("w", (4, 8))],
    )
    message = (
        f"{path}: node 'mm' (MatMul) has a constant left operand 'w'; "
        "only a constant right operand (the weight) is supported"
    )
    with pytest.raises(UnsupportedOperatorError, match=f"^{re.escape(message)}$"):
        read_onnx(path)


def test_unnamed_and_duplicate_nodes_get_unique_names(tmp_path: pathlib.Path) -> None:
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("Cast", ["r"], ["c"], name="x", to=TensorProto.FLOAT),
        helper.make_node("Sigmoid", ["c"], ["y"], name="x"),
    ]
    path = _save(tmp_path / "m.onnx", nodes, [_float("x", [2, 3])], [_float("y")])
    ops = read_onnx(path).operations
    assert [op.name for op in ops] == ["x", "r", "x#2", "x#3"]
    assert [op.inputs for op in ops] == [(), ("x",), ("r",), ("x#2",)]
    assert ops[2].kind is OpKind.VECTOR  # a Cast reading the data path is vector work


@pytest.mark.parametrize(("auto_pad", "pad"), [("SAME_UPPER", 1), ("SAME_LOWER", 2), ("VALID", 0)])
def test_conv_auto_pad_sets_the_top_padding(
    tmp_path: pathlib.Path, auto_pad: str, pad: int
) -> None:
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="c", strides=[2, 2], auto_pad=auto_pad)
    path = _save(
        tmp_path / "m.onnx",
        [node],
        [_float("x", [1, 1, 7, 7])],
        [_float("y")],
        [_weight("w", (2, 1, 4, 4))],
    )
    conv = read_onnx(path).operations[1]
    assert conv.windows == (RowWindow(WindowKind.SLIDING, kernel=4, stride=2, pad=pad),)
    assert (conv.weight_height, conv.weight_width) == (16, 2)


@pytest.mark.parametrize(("axis", "window"), [(-1, SAME_ROWS), (1, ALL_ROWS)])
def test_softmax_over_the_row_axis_reads_all_rows(
    tmp_path: pathlib.Path, axis: int, window: RowWindow
) -> None:
    node = helper.make_node("Softmax", ["x"], ["y"], name="sm", axis=axis)
    path = _save(tmp_path / "m.onnx", [node], [_float("x", [1, 5, 6])], [_float("y")])
    softmax = read_onnx(path).operations[1]
    assert (softmax.windows, softmax.vector_per_row) == ((window,), 6)


def test_broadcast_operand_with_other_rows_reads_all_rows(tmp_path: pathlib.Path) -> None:
    nodes = [helper.make_node("Add", ["x", "v"], ["y"], name="add")]
    path = _save(
        tmp_path / "m.onnx", nodes, [_float("x", [4, 6]), _float("v", [1, 6])], [_float("y")]
    )
    add = read_onnx(path).operations[2]
    assert (add.inputs, add.windows) == (("x", "v"), (SAME_ROWS, ALL_ROWS))


def test_initializers_listed_as_graph_inputs_are_weights_not_inputs(tmp_path: pathlib.Path) -> None:
    nodes = [helper.make_node("Gemm", ["x", "w"], ["y"], name="fc", transB=1)]
    inputs = [_float("x", [2, 6]), _float("w", [4, 6])]  # IR 3 style: weights are graph inputs
    graph = helper.make_graph(nodes, "g", inputs, [_float("y")], [_weight("w", (4, 6))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 9)], ir_version=3)
    path = tmp_path / "ir3.onnx"
    onnx.save(model, path)
    ops = read_onnx(path).operations
    assert [(op.name, op.kind) for op in ops] == [("x", OpKind.INPUT), ("fc", OpKind.WEIGHTED)]
    assert (ops[1].weight_height, ops[1].weight_width, ops[1].output_shape) == (6, 4, (2, 4))


def test_data_dependent_shape_names_tensor_and_node(tmp_path: pathlib.Path) -> None:
    nodes = [helper.make_node("Reshape", ["x", "target"], ["r"], name="reshape")]
    target = helper.make_tensor_value_info("target", TensorProto.INT64, [2])
    path = _save(tmp_path / "m.onnx", nodes, [_float("x", [2, 6]), target], [_float("r")])
    message = f"{path}: cannot infer a static shape for tensor 'r' (output of node 'reshape')"
    with pytest.raises(InvalidInputError, match=f"^{re.escape(message)}$"):
        read_onnx(path)


def test_shape_inference_failure_is_one_line(tmp_path: pathlib.Path) -> None:
    nodes = [helper.make_node("Add", ["x", "v"], ["y"], name="add")]
    path = _save(
        tmp_path / "m.onnx", nodes, [_float("x", [2, 3]), _float("v", [4, 5])], [_float("y")]
    )
    pattern = f"^{re.escape(f'{path}: shape inference failed (')}[^\n]*node name: add[^\n]*\\)$"
    with pytest.raises(InvalidInputError, match=pattern):
        read_onnx(path)


def test_vit_transposes_concat_and_class_token_gather_are_costed_as_the_seeds_say() -> None:
    names = read_onnx(_model_path("vit_b16_1layer")).by_name()
    # The class-token Concat copies blocks (the seeds) instead of being a free view; it
    # joins the constant token and the patches along the lane (token) axis: the patch
    # rows are shifted by the one constant row.
    cat = names["/Concat_1"]
    assert (cat.kind, cat.axis, cat.move_shapes) == (
        OpKind.CONCAT, 1, ((1, 1, 768), (1, 196, 768))
    )  # fmt: skip
    assert cat.windows == (RowWindow(WindowKind.SLIDING, pad=1),)
    assert cat.constants == ((1, 1, 768),)
    transposes = collections.Counter(op.kind for op in names.values() if op.op_type == "Transpose")
    # Seven move data (the patch embedding's (1, 768, 196) -> (1, 196, 768) among them);
    # attention's (1, 197, 768) <-> (197, 1, 768) only moves a unit dimension: two views.
    assert transposes == {OpKind.TRANSPOSE: 7, OpKind.VIEW: 2}
    # The final Gather takes token 0 only: a scalar projection, not every row.
    gather = names["/Gather"]
    assert (gather.kind, gather.windows) == (
        OpKind.VIEW, (RowWindow(WindowKind.SLIDING, stride=0, pad=0),)
    )  # fmt: skip


def test_constants_other_than_the_weight_are_recorded(tmp_path: pathlib.Path) -> None:
    nodes = [
        helper.make_node("Conv", ["x", "w", "cb"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Mul", ["c", "scale"], ["y"], name="scale"),
    ]
    inits = [_weight("w", (4, 3, 3, 3)), _weight("cb", (4,)), _weight("scale", (1, 4, 1, 1))]
    path = _save(tmp_path / "k.onnx", nodes, [_float("x", [1, 3, 8, 8])], [_float("y")], inits)
    ops = read_onnx(path).by_name()
    assert ops["conv"].constants == ((4,),)
    assert ops["scale"].constants == ((1, 4, 1, 1),)


def test_a_transpose_of_unit_dimensions_stays_a_free_view(tmp_path: pathlib.Path) -> None:
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Transpose", ["r"], ["t"], name="swap", perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["r"], ["u"], name="unit", perm=[1, 0, 2, 3]),
        helper.make_node("Add", ["t", "t"], ["y"], name="add"),
        helper.make_node("Relu", ["u"], ["z"], name="relu2"),
    ]
    shape = [1, 2, 4, 8]
    path = _save(tmp_path / "t.onnx", nodes, [_float("x", shape)], [_float("y"), _float("z")])
    ops = read_onnx(path).by_name()
    assert (ops["swap"].kind, ops["swap"].perm) == (OpKind.TRANSPOSE, (0, 2, 1, 3))
    assert ops["unit"].kind is OpKind.VIEW


def test_lane_axis_skips_a_unit_axis_outside_images() -> None:
    assert lane_axis((1, 64, 56, 56)) == 2  # NCHW: rows of H
    assert lane_axis((1, 512, 1, 1)) == 2  # a pooled image keeps H: one row, not 512
    assert lane_axis((1, 3, 1, 8)) == 2  # every 4-D tensor keeps H
    assert lane_axis((197, 1, 2304)) == 0  # sequence-first: the tokens
    assert lane_axis((3, 197, 1, 1, 768)) == 1  # the nearest longer axis before
    assert lane_axis((1, 1, 768)) == 1  # nothing longer before it: shape[-2] stays
    assert (lane_axis((1, 768)), lane_axis((768,))) == (0, None)
    assert (lane_rows((197, 1, 2304)), lane_rows((768,))) == (197, 1)
    assert rows_align((197, 1, 768), (197, 1, 2304))
    # (197, 768) broadcast against (197, 1, 768) pairs its rows with the unit axis.
    assert not rows_align((197, 768), (197, 1, 768))
    assert rows_align((1, 1, 768), (1, 512, 1, 1))  # one row each: the whole tensor


def test_windows_read_inputs_whole_when_their_lane_axes_differ(tmp_path: pathlib.Path) -> None:
    # a (5, 1, 4): lane axis 0 (5 tokens); b (5, 2, 4) and the (5, 3, 4) join: axis 1.
    # Joined along axis 1, b's rows shift by a's one row, but a's rows are not the
    # output's: a is read whole. Adding a to itself keeps its rows.
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="a"),
        helper.make_node("Relu", ["y"], ["b"], name="b"),
        helper.make_node("Concat", ["a", "b"], ["cat"], name="cat", axis=1),
        helper.make_node("Add", ["a", "a"], ["sum"], name="sum"),
    ]
    path = _save(
        tmp_path / "m.onnx",
        nodes,
        [_float("x", [5, 1, 4]), _float("y", [5, 2, 4])],
        [_float("cat"), _float("sum")],
    )
    ops = read_onnx(path).by_name()
    assert (ops["a"].rows, ops["b"].rows, ops["cat"].rows) == (5, 2, 3)
    assert ops["cat"].windows == (ALL_ROWS, RowWindow(WindowKind.SLIDING, pad=1))
    assert ops["sum"].windows == (SAME_ROWS, SAME_ROWS)
