"""Read PIMCOMP-NN node lists (the JSON its ONNX frontend writes) into a `Workload`.

Two layouts carry the same node schema: PIMCOMP-NN's ``{"node_list": [...],
"reshape_info": ...}`` and PIMSYN-NN's bare list of nodes. A node has ``name``,
``operation`` (``OP_CONV``, ``OP_FC``...), ``param``, ``output_dim``,
``provider`` (producer names) and ``bitwidth``; ``input_dim`` is optional in the
wild (PIMSYN-NN's msra_A omits it), so input shapes are taken from the
providers' ``output_dim`` instead.

Static tensors: a view-type node (reshape, flatten...) whose providers are all
static, in particular one with no provider at all, holds a constant, not an
activation. It becomes no operation and is not an input of its consumers.
PIMCOMPv2's ``mnist8.json`` needs this: ``Parameter193_reshape1`` is a
provider-less ``OP_RESHAPE`` of shape ``[256, 10]``, the weight of its
``OP_MATMUL``, which therefore is crossbar work like an FC layer.

Fused flags (``with_act``, ``with_bn``, ``with_clip``) are ignored: PIMCOMP
folds them into the crossbar output path, so they add no operation.

``OP_CONCAT`` is cost-bearing data movement (CONCAT: one block per provider and
outer row, `raptor_cp.workload.movement`); the other view-type nodes are
zero-cost VIEWs. Static providers other than an ``OP_MATMUL``'s crossbar weight
(an ``OP_ELTWISE`` constant operand, say) are recorded as run-time constants
(`Operation.constants`) for the baseline memory estimate.

References
----------
X. Sun et al., "PIMCOMP: An End-to-End DNN Compiler for Processing-In-Memory
Accelerators", IEEE TCAD, 2024 (github.com/sunxt99/PIMCOMP-NN).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from raptor_cp.errors import InvalidInputError, UnsupportedOperatorError
from raptor_cp.files import excerpt, read_json
from raptor_cp.limits import MAX_INTEGER
from raptor_cp.toposort import CycleFound, cycle_text, order_from_predecessors
from raptor_cp.workload.model import (
    ALL_ROWS,
    SAME_ROWS,
    Operation,
    OpKind,
    RowWindow,
    ViewKind,
    WindowKind,
    Workload,
    lane_axis,
    lane_rows,
    rows_align,
)

_VIEW_OPS = ("OP_DROPOUT", "OP_FLATTEN", "OP_RESHAPE", "OP_SHUFFLE")
_FLAT_VIEW_OPS = frozenset({"OP_DROPOUT", "OP_FLATTEN", "OP_RESHAPE"})
"""Views that keep the element order (a channel shuffle permutes it)."""
_STATIC_WHEN_PROVIDERS_ARE = (*_VIEW_OPS, "OP_CONCAT")
"""Node types holding a constant when all their providers are static."""


@dataclass(frozen=True)
class _Node:
    """One validated node of the file, before it becomes an `Operation`."""

    source: str
    index: int
    name: str
    op: str
    raw: dict[str, Any]
    output_shape: tuple[int, ...]
    providers: tuple[str, ...]

    def error(self, message: str) -> InvalidInputError:
        return InvalidInputError(f"{self.source}: node {self.name!r} ({self.op}): {message}")

    def param(self, key: str, default: int | None = None, minimum: int = 1) -> int:
        """Integer ``param.<key>`` (``default`` when absent, if one is given)."""
        params = self.raw.get("param")
        if params is None:
            raise self.error("missing field 'param'")
        if not isinstance(params, dict):
            raise self.error("field 'param': expected an object")
        value = params.get(key)
        if value is None:
            if default is None:
                raise self.error(f"missing field 'param.{key}'")
            return default
        return _check_int(value, minimum, lambda m: self.error(f"field 'param.{key}': {m}"))

    def either_param(self, first: str, second: str) -> int:
        """``param.<first>``, or ``param.<second>`` where a file uses that spelling."""
        params = self.raw.get("param")
        if isinstance(params, dict) and params.get(first) is None and second in params:
            return self.param(second)
        return self.param(first)


@dataclass(frozen=True)
class _Input:
    """An activation provider of a node and the shape it produces."""

    name: str
    shape: tuple[int, ...]


def _check_int(value: Any, minimum: int, error: Callable[[str], InvalidInputError]) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        expected = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise error(f"expected {expected}, got {excerpt(value)}")
    if value > MAX_INTEGER:
        raise error(f"expected at most 2^53, got {excerpt(value)}")
    return value


def read_pimcomp(path: str | Path, bits: int | None = None) -> Workload:
    """Read a PIMCOMP-NN or PIMSYN-NN model JSON file.

    Parameters
    ----------
    path:
        The ``.json`` file.
    bits:
        Activation/weight precision for every operation; ``None`` keeps each
        node's ``bitwidth``.
    """
    return pimcomp_workload(read_json(path), str(path), bits)


def pimcomp_workload(document: Any, source: str, bits: int | None = None) -> Workload:
    """Build the `Workload` of an already parsed PIMCOMP-NN document (see `read_pimcomp`)."""
    if bits is not None and (isinstance(bits, bool) or not isinstance(bits, int) or bits < 1):
        raise InvalidInputError(f"{source}: bits must be a positive integer, got {bits!r}")
    if isinstance(document, dict) and isinstance(document.get("node_list"), list):
        raw_nodes = document["node_list"]
    elif isinstance(document, list):
        raw_nodes = document
    else:
        raise InvalidInputError(
            f"{source}: expected a JSON object with a 'node_list' array or a JSON array of nodes"
        )
    nodes = [_parse_node(raw, index, source) for index, raw in enumerate(raw_nodes)]
    index_of: dict[str, int] = {}
    for node in nodes:
        if node.name in index_of:
            raise InvalidInputError(
                f"{source}: duplicate node name {node.name!r} (nodes #{index_of[node.name]} "
                f"and #{node.index})"
            )
        index_of[node.name] = node.index
    predecessors: list[list[int]] = []
    for node in nodes:
        for provider in node.providers:
            if provider not in index_of:
                raise node.error(f"provider {provider!r} is not a node of the file")
        predecessors.append([index_of[p] for p in node.providers])
    try:
        order = order_from_predecessors(predecessors)
    except CycleFound as found:
        names = cycle_text([nodes[i].name for i in found.cycle])
        raise InvalidInputError(f"{source}: dependency cycle through nodes {names}") from None

    shapes: dict[str, tuple[int, ...]] = {}
    static: set[str] = set()
    operations: list[Operation] = []
    for i in order:
        node = nodes[i]
        shapes[node.name] = node.output_shape
        if node.op in _STATIC_WHEN_PROVIDERS_ARE and all(p in static for p in node.providers):
            static.add(node.name)
            continue
        acts = [_Input(p, shapes[p]) for p in node.providers if p not in static]
        statics = [_Input(p, shapes[p]) for p in node.providers if p in static]
        if node.op != "OP_INPUT" and not acts:
            raise node.error("no activation provider (every provider is a static tensor)")
        node_bits = bits if bits is not None else _node_bits(node)
        operation = _BUILDERS[node.op](node, acts, statics, node_bits)
        if operation.kind is not OpKind.WEIGHTED and operation.kind is not OpKind.VIEW:
            operation = replace(operation, constants=tuple(i.shape for i in statics))
        operations.append(operation)
    return Workload(name=Path(source).stem, operations=tuple(operations), source=source)


def _parse_node(raw: Any, index: int, source: str) -> _Node:
    where = f"{source}: node #{index}"
    if not isinstance(raw, dict):
        raise InvalidInputError(f"{where}: expected a JSON object")
    for key in ("name", "operation"):
        if key not in raw:
            raise InvalidInputError(f"{where}: missing field {key!r}")
        if not isinstance(raw[key], str) or not raw[key]:
            raise InvalidInputError(f"{where}: field {key!r}: expected a non-empty string")
    name, op = raw["name"], raw["operation"]
    if op not in _BUILDERS:
        raise UnsupportedOperatorError(
            f"{source}: node {name!r}: unsupported operation {op!r} "
            f"(supported: {', '.join(sorted(_BUILDERS))})"
        )
    where = f"{source}: node {name!r} ({op})"
    if "output_dim" not in raw:
        raise InvalidInputError(f"{where}: missing field 'output_dim'")
    dims = raw["output_dim"]
    if (
        not isinstance(dims, list)
        or not dims
        or any(
            isinstance(d, bool) or not isinstance(d, int) or not 1 <= d <= MAX_INTEGER for d in dims
        )
    ):
        raise InvalidInputError(
            f"{where}: field 'output_dim': expected a non-empty list of positive integers "
            f"(at most 2^53), got {excerpt(dims)}"
        )
    providers = raw.get("provider")
    if providers is None:
        if raw.get("provider_num", 0) != 0:
            raise InvalidInputError(f"{where}: missing field 'provider'")
        providers = []
    if not isinstance(providers, list) or not all(isinstance(p, str) for p in providers):
        raise InvalidInputError(f"{where}: field 'provider': expected a list of node names")
    return _Node(source, index, name, op, raw, tuple(dims), tuple(providers))


def _node_bits(node: _Node) -> int:
    if "bitwidth" not in node.raw:
        raise node.error("missing field 'bitwidth'")
    return _check_int(node.raw["bitwidth"], 1, lambda m: node.error(f"field 'bitwidth': {m}"))


# -- shape helpers -------------------------------------------------------------


def _single(node: _Node, acts: list[_Input]) -> _Input:
    if len(acts) != 1:
        raise node.error(f"expected 1 activation provider, found {len(acts)}")
    return acts[0]


def _row_elements(shape: tuple[int, ...]) -> int:
    return math.prod(shape) // lane_rows(shape)


def _same_or_all(source: tuple[int, ...], output: tuple[int, ...]) -> RowWindow:
    """SAME where input and output have the same rows, else ALL (broadcast, reshaped rows)."""
    return SAME_ROWS if rows_align(source, output) else ALL_ROWS


def _same_elements(node: _Node, act: _Input) -> None:
    if math.prod(act.shape) != math.prod(node.output_shape):
        raise node.error(
            f"output_dim {list(node.output_shape)} does not have as many elements as "
            f"provider {act.name!r} {list(act.shape)}"
        )


def _nchw(node: _Node, act: _Input) -> None:
    if len(act.shape) != 4 or len(node.output_shape) != 4:
        raise node.error(
            f"expected 4-D (N, C, H, W) input and output, got provider {act.name!r} "
            f"{list(act.shape)} and output_dim {list(node.output_shape)}"
        )


def _sliding(node: _Node, act: _Input, kernel: int, stride: int, dilation: int) -> RowWindow:
    """The H window of a conv/pool, checking output height against the pads.

    Given pads must reproduce the output height with floor or ceil rounding
    (Caffe pools round up). Missing pads (``auto_pad`` SAME in mnist8) are
    inferred from the shapes, the odd pad row going to the bottom (SAME_UPPER).
    """
    height, out_height = act.shape[2], node.output_shape[2]
    span = (kernel - 1) * dilation + 1
    params = node.raw["param"]
    if params.get("pad_h0") is None and params.get("pad_h1") is None:
        total = max((out_height - 1) * stride + span - height, 0)
        if total > 2 * (span - 1):
            raise node.error(
                f"output height {out_height} cannot come from input height {height} with "
                f"kernel_h {kernel}, stride_h {stride}, dilation_h {dilation}"
            )
        return RowWindow(WindowKind.SLIDING, kernel, stride, total // 2, dilation)
    top = node.param("pad_h0", default=node.param("pad_h1", default=0, minimum=0), minimum=0)
    bottom = node.param("pad_h1", default=top, minimum=0)
    reach = height + top + bottom - span
    expected = reach // stride + 1 if reach >= 0 else 0
    if out_height not in (expected, -(-reach // stride) + 1) or expected == 0:
        raise node.error(
            f"output height {out_height} does not match input height {height} with kernel_h "
            f"{kernel}, stride_h {stride}, dilation_h {dilation}, pads {top}+{bottom} "
            f"(expected {expected})"
        )
    return RowWindow(WindowKind.SLIDING, kernel, stride, top, dilation)


# -- one builder per operation ---------------------------------------------------

_Builder = Callable[[_Node, list[_Input], list[_Input], int], Operation]


def _input(node: _Node, acts: list[_Input], statics: list[_Input], bits: int) -> Operation:
    if node.providers:
        raise node.error(f"an input node has providers {list(node.providers)}")
    return Operation(node.name, node.op, OpKind.INPUT, output_shape=node.output_shape, bits=bits)


def _conv(node: _Node, acts: list[_Input], statics: list[_Input], bits: int) -> Operation:
    act = _single(node, acts)
    _nchw(node, act)
    cin, cout = node.param("input_channel"), node.param("output_channel")
    group = node.param("group", default=1)
    if cin != act.shape[1] or cout != node.output_shape[1] or cin % group:
        raise node.error(
            f"param input_channel {cin}, output_channel {cout}, group {group} do not fit "
            f"input {list(act.shape)} and output_dim {list(node.output_shape)}"
        )
    kernel_h, kernel_w = node.param("kernel_h"), node.param("kernel_w")
    window = _sliding(
        node, act, kernel_h, node.param("stride_h"), node.param("dilation_h", default=1)
    )
    return Operation(
        node.name,
        node.op,
        OpKind.WEIGHTED,
        inputs=(act.name,),
        windows=(window,),
        output_shape=node.output_shape,
        bits=bits,
        weight_height=kernel_h * kernel_w * cin // group,
        weight_width=cout,
        mvm_per_row=node.output_shape[3],
    )


def _matrix(
    node: _Node, act: _Input, height: int, width: int, bits: int, input_size: int
) -> Operation:
    """A weighted op applying a ``height x width`` matrix to every input vector."""
    vectors, rows = math.prod(node.output_shape) // width, lane_rows(node.output_shape)
    if (
        input_size % height
        or math.prod(node.output_shape) % width
        or input_size // height != vectors
        or vectors % rows
    ):
        raise node.error(
            f"a {height} x {width} weight does not map input {list(act.shape)} onto "
            f"output_dim {list(node.output_shape)}"
        )
    return Operation(
        node.name,
        node.op,
        OpKind.WEIGHTED,
        inputs=(act.name,),
        windows=(ALL_ROWS,),
        output_shape=node.output_shape,
        bits=bits,
        weight_height=height,
        weight_width=width,
        mvm_per_row=vectors // rows,
    )


def _fc(node: _Node, acts: list[_Input], statics: list[_Input], bits: int) -> Operation:
    act = _single(node, acts)
    height = node.either_param("num_input", "input_channel")
    width = node.either_param("num_output", "output_channel")
    return _matrix(node, act, height, width, bits, math.prod(act.shape))


def _matmul(node: _Node, acts: list[_Input], statics: list[_Input], bits: int) -> Operation:
    if len(node.providers) != 2:
        raise node.error(f"expected 2 providers, found {len(node.providers)}")
    shapes = {i.name: i.shape for i in acts + statics}
    left, right = node.providers
    if right not in {a.name for a in acts} and left in {a.name for a in acts}:
        weight = shapes[right]
        if len(weight) < 2:
            raise node.error(f"static operand {right!r} {list(weight)} is not a matrix")
        act = _Input(left, shapes[left])
        return _matrix(node, act, weight[-2], weight[-1], bits, math.prod(act.shape))
    return Operation(
        node.name,
        node.op,
        OpKind.VECTOR,
        inputs=tuple(a.name for a in acts),
        windows=tuple(ALL_ROWS for _ in acts),
        output_shape=node.output_shape,
        bits=bits,
        vector_per_row=_row_elements(node.output_shape) * shapes[left][-1],
        vector_operands=len(acts),
    )


def _pool(node: _Node, acts: list[_Input], statics: list[_Input], bits: int) -> Operation:
    act = _single(node, acts)
    _nchw(node, act)
    if act.shape[1] != node.output_shape[1]:
        raise node.error(
            f"output_dim {list(node.output_shape)} has not the channels of input {list(act.shape)}"
        )
    if node.param("global", default=0, minimum=0):
        window, area = ALL_ROWS, act.shape[2] * act.shape[3]
    else:
        kernel_h = node.param("kernel_h")
        window = _sliding(node, act, kernel_h, node.param("stride_h"), 1)
        area = kernel_h * node.param("kernel_w")
    return Operation(
        node.name,
        node.op,
        OpKind.VECTOR,
        inputs=(act.name,),
        windows=(window,),
        output_shape=node.output_shape,
        bits=bits,
        vector_per_row=_row_elements(node.output_shape) * area,
    )


def _unary(node: _Node, acts: list[_Input], statics: list[_Input], bits: int) -> Operation:
    act = _single(node, acts)
    _same_elements(node, act)
    return Operation(
        node.name,
        node.op,
        OpKind.VECTOR,
        inputs=(act.name,),
        windows=(_same_or_all(act.shape, node.output_shape),),
        output_shape=node.output_shape,
        bits=bits,
        vector_per_row=_row_elements(node.output_shape),
    )


def _eltwise(node: _Node, acts: list[_Input], statics: list[_Input], bits: int) -> Operation:
    if len(acts) > 2:
        raise UnsupportedOperatorError(
            f"{node.source}: node {node.name!r} (OP_ELTWISE): {len(acts)} operands, "
            "at most 2 are supported"
        )
    return Operation(
        node.name,
        node.op,
        OpKind.VECTOR,
        inputs=tuple(a.name for a in acts),
        windows=tuple(_same_or_all(a.shape, node.output_shape) for a in acts),
        output_shape=node.output_shape,
        bits=bits,
        vector_per_row=_row_elements(node.output_shape),
        vector_operands=len(acts),
    )


def _concat(node: _Node, acts: list[_Input], statics: list[_Input], bits: int) -> Operation:
    """Providers joined along ``param.axis`` (default 1, the channels), in provider order."""
    shapes = {i.name: i.shape for i in acts + statics}
    ordered = [shapes[p] for p in node.providers]
    rank = len(node.output_shape)
    axis = node.param("axis", default=1, minimum=-rank) if "param" in node.raw else 1
    if not -rank <= axis < rank:
        raise node.error(f"param axis {axis} outside the output rank {rank}")
    axis %= rank
    joined = sum(s[axis] for s in ordered) if all(len(s) == rank for s in ordered) else -1
    others = {tuple(d for i, d in enumerate(s) if i != axis) for s in ordered}
    expected = tuple(d for i, d in enumerate(node.output_shape) if i != axis)
    if joined != node.output_shape[axis] or others != {expected}:
        raise node.error(
            f"providers {[list(s) for s in ordered]} do not concatenate along axis {axis} "
            f"into output_dim {list(node.output_shape)}"
        )
    row_axis = lane_axis(node.output_shape)
    windows: list[RowWindow] = []
    offset = 0
    for name, shape in zip(node.providers, ordered, strict=True):
        if name in {a.name for a in acts}:
            if row_axis is None or lane_axis(shape) != row_axis:
                windows.append(ALL_ROWS)
            elif axis == row_axis:
                windows.append(RowWindow(WindowKind.SLIDING, pad=offset))
            else:
                windows.append(SAME_ROWS)
        offset += shape[axis]
    return Operation(
        node.name,
        node.op,
        OpKind.CONCAT,
        inputs=tuple(a.name for a in acts),
        windows=tuple(windows),
        output_shape=node.output_shape,
        bits=bits,
        axis=axis,
        move_shapes=tuple(ordered),
    )


def _view(node: _Node, acts: list[_Input], statics: list[_Input], bits: int) -> Operation:
    act = _single(node, acts)
    _same_elements(node, act)
    same = node.op == "OP_DROPOUT"
    windows = (_same_or_all(act.shape, node.output_shape) if same else ALL_ROWS,)
    return Operation(
        node.name,
        node.op,
        OpKind.VIEW,
        inputs=tuple(a.name for a in acts),
        windows=windows,
        output_shape=node.output_shape,
        bits=bits,
        view=ViewKind.FLAT if node.op in _FLAT_VIEW_OPS else ViewKind.OPAQUE,
    )


_BUILDERS: dict[str, _Builder] = {
    "OP_INPUT": _input,
    "OP_CONV": _conv,
    "OP_FC": _fc,
    "OP_MATMUL": _matmul,
    "OP_POOL": _pool,
    "OP_RELU": _unary,
    "OP_CLIP": _unary,
    "OP_LRN": _unary,
    "OP_SOFTMAX": _unary,
    "OP_ELTWISE": _eltwise,
    "OP_CONCAT": _concat,
    **{op: _view for op in _VIEW_OPS},
}
