"""PIMCOMP-NN / PIMSYN-NN node-list reader: real models and every error path."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from raptor_cp.errors import InvalidInputError, UnsupportedOperatorError
from raptor_cp.workload.model import OpKind, RowWindow, ViewKind, WindowKind
from raptor_cp.workload.pimcomp_reader import read_pimcomp

DATA = Path(__file__).parent / "data" / "pimcomp"


def exactly(message: str) -> str:
    return f"^{re.escape(message)}$"


def node(name: str, op: str, out: list[int], providers: tuple[str, ...] = (), **extra: Any) -> dict:
    raw: dict[str, Any] = {"name": name, "operation": op, "output_dim": out, "bitwidth": 16}
    if providers:
        raw["provider"] = list(providers)
        raw["provider_num"] = len(providers)
    return raw | extra


CONV = {
    "input_channel": 3,
    "output_channel": 4,
    "kernel_h": 3,
    "kernel_w": 3,
    "stride_h": 1,
    "stride_w": 1,
    "pad_h0": 1,
    "pad_h1": 1,
    "pad_w0": 1,
    "pad_w1": 1,
}


def write(tmp_path: Path, nodes: Any) -> Path:
    path = tmp_path / "model.json"
    path.write_text(json.dumps(nodes))
    return path


def small(tmp_path: Path, *extra: dict) -> Path:
    """input -> conv -> relu, plus ``extra`` nodes, in the PIMCOMP-NN layout."""
    nodes = [
        node("x", "OP_INPUT", [1, 3, 8, 8]),
        node("conv", "OP_CONV", [1, 4, 8, 8], ("x",), param=CONV),
        node("relu", "OP_RELU", [1, 4, 8, 8], ("conv",)),
        *extra,
    ]
    return write(tmp_path, {"node_list": nodes, "reshape_info": {}})


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.glob("*.json")))
def test_shipped_model_loads_in_topological_order(name: str) -> None:
    workload = read_pimcomp(DATA / name)
    assert workload.operations[0].kind is OpKind.INPUT
    assert workload.name == Path(name).stem
    assert {op.bits for op in workload.operations} == {16}


def test_resnet18_has_20_convs_and_1_fc_as_weighted_ops() -> None:
    workload = read_pimcomp(DATA / "resnet18.json")
    weighted = Counter(op.op_type for op in workload.operations if op.kind is OpKind.WEIGHTED)
    assert weighted == {"OP_CONV": 20, "OP_FC": 1}
    assert len(workload.operations) == 41


def test_resnet18_first_conv_is_unrolled_with_its_h_window() -> None:
    conv = read_pimcomp(DATA / "resnet18.json").by_name()["resnetv15_conv0_fwd"]
    assert (conv.weight_height, conv.weight_width, conv.mvm_per_row) == (7 * 7 * 3, 64, 112)
    assert conv.rows == 112
    assert conv.windows == (RowWindow(WindowKind.SLIDING, kernel=7, stride=2, pad=3),)


def test_resnet18_fc_global_pool_and_residual_add() -> None:
    ops = read_pimcomp(DATA / "resnet18.json").operations
    fc = next(op for op in ops if op.op_type == "OP_FC")
    assert (fc.weight_height, fc.weight_width, fc.mvm_per_row, fc.rows) == (512, 1000, 1, 1)
    assert fc.windows == (RowWindow(WindowKind.ALL),)
    pools = [op for op in ops if op.op_type == "OP_POOL"]
    assert [p.windows[0].kind for p in pools] == [WindowKind.SLIDING, WindowKind.ALL]
    assert pools[1].vector_per_row == 512 * 7 * 7
    adds = [op for op in ops if op.op_type == "OP_ELTWISE"]
    assert {(a.vector_operands, a.windows[0].kind) for a in adds} == {(2, WindowKind.SAME)}


def test_alexnet_lrn_softmax_are_vector_and_dropout_is_a_view() -> None:
    ops = read_pimcomp(DATA / "alexnet.json").operations
    kinds = {(op.op_type, op.kind, op.windows[0].kind) for op in ops if op.inputs}
    assert ("OP_LRN", OpKind.VECTOR, WindowKind.SAME) in kinds
    assert ("OP_SOFTMAX", OpKind.VECTOR, WindowKind.SAME) in kinds
    assert ("OP_DROPOUT", OpKind.VIEW, WindowKind.SAME) in kinds
    assert ("OP_RESHAPE", OpKind.VIEW, WindowKind.ALL) in kinds


def test_mnist8_static_reshape_is_the_matmul_weight() -> None:
    ops = read_pimcomp(DATA / "mnist8.json").by_name()
    assert "Parameter193_reshape1" not in ops
    matmul = ops["Times212_Output_0"]
    assert matmul.kind is OpKind.WEIGHTED
    assert matmul.inputs == ("Pooling160_Output_0_reshape0",)
    assert (matmul.weight_height, matmul.weight_width, matmul.mvm_per_row) == (256, 10, 1)


def test_mnist8_missing_conv_pads_are_inferred_from_shapes() -> None:
    conv = read_pimcomp(DATA / "mnist8.json").by_name()["Convolution28_Output_0"]
    assert conv.windows == (RowWindow(WindowKind.SLIDING, kernel=5, stride=1, pad=2),)


def test_pimsyn_node_array_without_input_dim_loads() -> None:
    workload = read_pimcomp(DATA / "pimsyn_msra_A.json")
    assert len(workload.operations) == 51
    conv = workload.by_name()["onnx::MaxPool_39"]
    assert (conv.weight_height, conv.weight_width) == (7 * 7 * 3, 96)


def test_bits_override_replaces_the_file_bitwidth() -> None:
    workload = read_pimcomp(DATA / "mnist8.json", bits=8)
    assert {op.bits for op in workload.operations} == {8}


def test_providers_out_of_order_are_sorted(tmp_path: Path) -> None:
    nodes = [
        node("relu", "OP_RELU", [1, 4, 8, 8], ("conv",)),
        node("conv", "OP_CONV", [1, 4, 8, 8], ("x",), param=CONV),
        node("x", "OP_INPUT", [1, 3, 8, 8]),
    ]
    workload = read_pimcomp(write(tmp_path, nodes))
    assert [op.name for op in workload.operations] == ["x", "conv", "relu"]


def test_clip_is_vector_concat_copies_blocks_and_shuffle_is_a_view(tmp_path: Path) -> None:
    path = small(
        tmp_path,
        node("clip", "OP_CLIP", [1, 4, 8, 8], ("conv",), param={"min": 0, "max": 6}),
        node("cat", "OP_CONCAT", [1, 8, 8, 8], ("relu", "clip")),
        node("shuffle", "OP_SHUFFLE", [1, 8, 8, 8], ("cat",), param={"split_factor": 2}),
    )
    ops = read_pimcomp(path).by_name()
    assert (ops["clip"].kind, ops["clip"].windows) == (OpKind.VECTOR, (RowWindow(WindowKind.SAME),))
    assert ops["clip"].vector_per_row == 4 * 8
    # A channel concatenation copies one block per provider and outer row (the seeds);
    # lanes cut H, so each provider's rows line up with the output's.
    assert (ops["cat"].kind, ops["cat"].axis) == (OpKind.CONCAT, 1)
    assert ops["cat"].windows == (RowWindow(WindowKind.SAME), RowWindow(WindowKind.SAME))
    assert ops["cat"].move_shapes == ((1, 4, 8, 8), (1, 4, 8, 8))
    assert (ops["shuffle"].kind, ops["shuffle"].windows[0].kind) == (OpKind.VIEW, WindowKind.ALL)
    # A shuffle permutes the channels: an unproven projection, unlike a flatten.
    assert ops["shuffle"].view is ViewKind.OPAQUE


def test_flatten_and_reshape_keep_the_element_order(tmp_path: Path) -> None:
    path = small(tmp_path, node("flat", "OP_FLATTEN", [1, 256], ("relu",)))
    assert read_pimcomp(path).by_name()["flat"].view is ViewKind.FLAT


def test_matmul_of_two_activations_is_vector_work(tmp_path: Path) -> None:
    nodes = [
        node("q", "OP_INPUT", [1, 16, 8]),
        node("k", "OP_INPUT", [1, 8, 16]),
        node("scores", "OP_MATMUL", [1, 16, 16], ("q", "k")),
    ]
    scores = read_pimcomp(write(tmp_path, nodes)).by_name()["scores"]
    assert scores.kind is OpKind.VECTOR
    assert (scores.vector_operands, scores.vector_per_row) == (2, 16 * 8)


def test_grouped_conv_weight_height_divides_by_group(tmp_path: Path) -> None:
    depthwise = CONV | {"input_channel": 4, "output_channel": 4, "group": 4}
    nodes = [
        node("x", "OP_INPUT", [1, 4, 8, 8]),
        node("dw", "OP_CONV", [1, 4, 8, 8], ("x",), param=depthwise),
    ]
    dw = read_pimcomp(write(tmp_path, nodes)).by_name()["dw"]
    assert (dw.weight_height, dw.weight_width) == (9, 4)


def test_unknown_operation_is_unsupported(tmp_path: Path) -> None:
    path = small(tmp_path, node("g", "OP_GELU", [1, 4, 8, 8], ("relu",)))
    message = (
        f"{path}: node 'g': unsupported operation 'OP_GELU' (supported: OP_CLIP, OP_CONCAT, "
        "OP_CONV, OP_DROPOUT, OP_ELTWISE, OP_FC, OP_FLATTEN, OP_INPUT, OP_LRN, OP_MATMUL, "
        "OP_POOL, OP_RELU, OP_RESHAPE, OP_SHUFFLE, OP_SOFTMAX)"
    )
    with pytest.raises(UnsupportedOperatorError, match=exactly(message)):
        read_pimcomp(path)


def test_missing_param_field_names_node_and_field(tmp_path: Path) -> None:
    param = {k: v for k, v in CONV.items() if k != "kernel_h"} | {"input_channel": 4}
    path = small(tmp_path, node("c2", "OP_CONV", [1, 4, 8, 8], ("relu",), param=param))
    message = f"{path}: node 'c2' (OP_CONV): missing field 'param.kernel_h'"
    with pytest.raises(InvalidInputError, match=exactly(message)):
        read_pimcomp(path)


def test_missing_output_dim_names_node_and_field(tmp_path: Path) -> None:
    path = small(tmp_path, {"name": "r2", "operation": "OP_RELU", "provider": ["relu"]})
    message = f"{path}: node 'r2' (OP_RELU): missing field 'output_dim'"
    with pytest.raises(InvalidInputError, match=exactly(message)):
        read_pimcomp(path)


def test_missing_name_names_the_node_position(tmp_path: Path) -> None:
    path = small(tmp_path, {"operation": "OP_RELU"})
    with pytest.raises(InvalidInputError, match=exactly(f"{path}: node #3: missing field 'name'")):
        read_pimcomp(path)


def test_missing_provider_list_is_rejected(tmp_path: Path) -> None:
    path = small(tmp_path, node("r2", "OP_RELU", [1, 4, 8, 8], provider_num=1))
    message = f"{path}: node 'r2' (OP_RELU): missing field 'provider'"
    with pytest.raises(InvalidInputError, match=exactly(message)):
        read_pimcomp(path)


def test_missing_bitwidth_is_rejected_unless_bits_are_given(tmp_path: Path) -> None:
    raw = node("r2", "OP_RELU", [1, 4, 8, 8], ("relu",))
    del raw["bitwidth"]
    path = small(tmp_path, raw)
    message = f"{path}: node 'r2' (OP_RELU): missing field 'bitwidth'"
    with pytest.raises(InvalidInputError, match=exactly(message)):
        read_pimcomp(path)
    assert read_pimcomp(path, bits=4).by_name()["r2"].bits == 4


def test_non_positive_bits_are_rejected(tmp_path: Path) -> None:
    path = small(tmp_path)
    message = f"{path}: bits must be a positive integer, got 0"
    with pytest.raises(InvalidInputError, match=exactly(message)):
        read_pimcomp(path, bits=0)


def test_bad_param_value_is_rejected(tmp_path: Path) -> None:
    bad = CONV | {"input_channel": 4, "stride_h": 0}
    path = small(tmp_path, node("c2", "OP_CONV", [1, 4, 8, 8], ("relu",), param=bad))
    message = (
        f"{path}: node 'c2' (OP_CONV): field 'param.stride_h': expected a positive integer, got 0"
    )
    with pytest.raises(InvalidInputError, match=exactly(message)):
        read_pimcomp(path)


def test_unknown_provider_is_rejected(tmp_path: Path) -> None:
    path = small(tmp_path, node("r2", "OP_RELU", [1, 4, 8, 8], ("nope",)))
    message = f"{path}: node 'r2' (OP_RELU): provider 'nope' is not a node of the file"
    with pytest.raises(InvalidInputError, match=exactly(message)):
        read_pimcomp(path)


def test_duplicate_node_name_is_rejected(tmp_path: Path) -> None:
    path = small(tmp_path, node("relu", "OP_RELU", [1, 4, 8, 8], ("conv",)))
    message = f"{path}: duplicate node name 'relu' (nodes #2 and #3)"
    with pytest.raises(InvalidInputError, match=exactly(message)):
        read_pimcomp(path)


def test_cycle_is_rejected_with_its_nodes(tmp_path: Path) -> None:
    nodes = [
        node("x", "OP_INPUT", [1, 4, 8, 8]),
        node("a", "OP_ELTWISE", [1, 4, 8, 8], ("x", "b")),
        node("b", "OP_RELU", [1, 4, 8, 8], ("a",)),
    ]
    path = write(tmp_path, nodes)
    message = f"{path}: dependency cycle through nodes 'a' -> 'b' -> 'a'"
    with pytest.raises(InvalidInputError, match=exactly(message)):
        read_pimcomp(path)


def test_conv_output_height_must_follow_from_pads(tmp_path: Path) -> None:
    path = small(
        tmp_path, node("c2", "OP_CONV", [1, 4, 7, 8], ("relu",), param=CONV | {"input_channel": 4})
    )
    message = (
        f"{path}: node 'c2' (OP_CONV): output height 7 does not match input height 8 with "
        "kernel_h 3, stride_h 1, dilation_h 1, pads 1+1 (expected 8)"
    )
    with pytest.raises(InvalidInputError, match=exactly(message)):
        read_pimcomp(path)


def test_conv_channels_must_match_shapes(tmp_path: Path) -> None:
    path = small(tmp_path, node("c2", "OP_CONV", [1, 4, 8, 8], ("relu",), param=CONV))
    message = (
        f"{path}: node 'c2' (OP_CONV): param input_channel 3, output_channel 4, group 1 do not "
        "fit input [1, 4, 8, 8] and output_dim [1, 4, 8, 8]"
    )
    with pytest.raises(InvalidInputError, match=exactly(message)):
        read_pimcomp(path)


def test_eltwise_with_three_operands_is_unsupported(tmp_path: Path) -> None:
    path = small(tmp_path, node("sum", "OP_ELTWISE", [1, 4, 8, 8], ("conv", "relu", "conv")))
    message = f"{path}: node 'sum' (OP_ELTWISE): 3 operands, at most 2 are supported"
    with pytest.raises(UnsupportedOperatorError, match=exactly(message)):
        read_pimcomp(path)


def test_unary_op_with_two_providers_is_rejected(tmp_path: Path) -> None:
    path = small(tmp_path, node("r2", "OP_RELU", [1, 4, 8, 8], ("conv", "relu")))
    message = f"{path}: node 'r2' (OP_RELU): expected 1 activation provider, found 2"
    with pytest.raises(InvalidInputError, match=exactly(message)):
        read_pimcomp(path)


def test_view_that_changes_element_count_is_rejected(tmp_path: Path) -> None:
    path = small(tmp_path, node("flat", "OP_FLATTEN", [1, 255], ("relu",)))
    message = (
        f"{path}: node 'flat' (OP_FLATTEN): output_dim [1, 255] does not have as many elements "
        "as provider 'relu' [1, 4, 8, 8]"
    )
    with pytest.raises(InvalidInputError, match=exactly(message)):
        read_pimcomp(path)


def test_top_level_must_be_node_list_or_array(tmp_path: Path) -> None:
    path = write(tmp_path, {"nodes": []})
    message = f"{path}: expected a JSON object with a 'node_list' array or a JSON array of nodes"
    with pytest.raises(InvalidInputError, match=exactly(message)):
        read_pimcomp(path)


def test_truncated_json_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "cut.json"
    path.write_text('{"node_list": [\n  {"name": "x",')
    message = (
        f"{path}: invalid JSON at line 2 column 16: "
        "Expecting property name enclosed in double quotes"
    )
    with pytest.raises(InvalidInputError, match=exactly(message)):
        read_pimcomp(path)
