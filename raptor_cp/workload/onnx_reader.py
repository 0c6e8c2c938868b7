"""Read an ONNX model into a target-neutral `Workload`.

The reader keeps what a scheduler needs (operator kinds, tensor shapes, how output
rows depend on input rows) and drops the rest:

* **Shapes** come from ONNX shape inference after the *shape path* (tensors
  derived only from initializers, ``Constant`` and ``Shape`` outputs) is folded;
  see `raptor_cp.workload.onnx_graph`. Shape-path nodes cost nothing at run time
  and become no operation.
* **The data path** (everything reading a model input, transitively) maps onto
  `Operation` as in PIMCOMP-NN's decomposition (see ARCHITECTURE.md, "The PIM
  lowering"): Conv/Gemm/MatMul with a constant right operand are WEIGHTED,
  activation-activation MatMuls, element-wise ops, normalisations, pooling and
  reductions are VECTOR, Transposes that move data are TRANSPOSE and Concats
  CONCAT (cost-bearing data movement, `raptor_cp.workload.movement`), reshapes
  and friends (and transposes of unit dimensions only) are zero-cost VIEWs. Any
  other operator raises `UnsupportedOperatorError`: nothing is dropped silently.
* **Constants** (initializers and shape-path values read on the data path, other
  than a crossbar weight) are recorded per operation (`Operation.constants`) for
  the baseline memory estimate.

Rows are the lane axis (`raptor_cp.workload.model.lane_axis`); a window says
which input rows an output row reads.

References
----------
X. Qi et al., "PIMCOMP: An End-to-End DNN Compiler for Processing-In-Memory
Accelerators", IEEE TCAD, 2024 (unrolled weight matrices of height
``kh*kw*Cin/groups`` and width ``Cout``).
"""

from __future__ import annotations

import math
import pathlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from raptor_cp.errors import InvalidInputError, UnsupportedOperatorError
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
from raptor_cp.workload.movement import is_runtime_free
from raptor_cp.workload.onnx_graph import (
    OnnxGraph,
    Shape,
    analyse,
    default_opset,
    infer_static_shapes,
    load_model,
    node_label,
)

if TYPE_CHECKING:
    import onnx

_ELEMENTWISE = frozenset(
    {
        "Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Relu", "LeakyRelu", "Clip",
        "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Erf", "Gelu", "Sqrt", "Exp",
        "Neg", "Reciprocal", "Where", "Cast", "BatchNormalization", "Softmax",
        "LogSoftmax", "LayerNormalization",
    }
)  # fmt: skip
_SAME_VIEWS = frozenset({"Identity", "Dropout"})
_FLAT_VIEWS = _SAME_VIEWS | {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose"}
"""Views that keep the row-major element order (a Transpose only of unit dimensions)."""
_ALL_VIEWS = frozenset(
    {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Slice", "Gather", "Expand", "Split"}
)  # fmt: skip
_MOVES = frozenset({"Transpose", "Concat"})
_POOLS = frozenset({"MaxPool", "AveragePool"})
_REDUCTIONS = frozenset(
    {"GlobalAveragePool", "GlobalMaxPool", "ReduceMean", "ReduceSum", "ReduceMax"}
)
_MATMULS = frozenset({"MatMul", "Gemm"})
_SUPPORTED = (
    _ELEMENTWISE | _SAME_VIEWS | _ALL_VIEWS | _MOVES | _POOLS | _REDUCTIONS | _MATMULS | {"Conv"}
)
_MULTI_OUTPUT = frozenset({"Split"})
"""Data-path ops whose outputs beyond the first may be used (one VIEW per output)."""


def read_onnx(path: str | pathlib.Path, bits: int = 8) -> Workload:
    """Read the ONNX model at ``path`` as a `Workload` of ``bits``-bit operations.

    Weight bytes are never loaded (``load_external_data=False``): shipped models
    keep only the initializers' shapes, and a model with real weights reads the
    same way.

    Parameters
    ----------
    path:
        A binary ONNX model file.
    bits:
        Element precision stored in every `Operation.bits`.

    Raises
    ------
    InvalidInputError
        The file is unreadable or not ONNX, the graph is not topologically sorted,
        shape inference fails, or a data-path tensor has no static shape.
    UnsupportedOperatorError
        A data-path node uses an operator (or a form of one) that cannot be lowered.
    """
    source = str(path)
    if isinstance(bits, bool) or not isinstance(bits, int) or bits <= 0:
        raise InvalidInputError(f"{source}: bits must be a positive integer, got {bits!r}")
    model = load_model(pathlib.Path(path), source)
    graph = analyse(model, source, _SUPPORTED)
    shapes = infer_static_shapes(model, graph, source)
    operations = _Lowering(source, graph, shapes, bits, default_opset(model)).run()
    return Workload(name=pathlib.Path(path).stem, operations=tuple(operations), source=source)


def _attribute(node: onnx.NodeProto, name: str, default: Any) -> Any:
    """Value of attribute ``name`` (strings decoded), or ``default``."""
    from onnx import helper

    for attribute in node.attribute:
        if attribute.name == name:
            value = helper.get_attribute_value(attribute)
            return value.decode() if isinstance(value, bytes) else value
    return default


@dataclass(frozen=True)
class _Lowered:
    """What a handler decides for one data-path node (the caller adds names and shapes)."""

    kind: OpKind
    inputs: tuple[str, ...]
    """Activation tensors read, in operand order."""
    windows: tuple[RowWindow, ...]
    weight_height: int = 0
    weight_width: int = 0
    mvm_per_row: int = 0
    vector_per_row: int = 0
    vector_operands: int = 1
    perm: tuple[int, ...] = ()
    axis: int = 0
    move_shapes: tuple[Shape, ...] = ()
    view: ViewKind = ViewKind.OPAQUE
    take_index: int = 0
    weight: str | None = None
    """The static input held in crossbars (not a run-time constant)."""


class _Lowering:
    """Turns the data path of an analysed, shape-inferred graph into Operations."""

    def __init__(
        self,
        source: str,
        graph: OnnxGraph,
        shapes: dict[str, Shape | None],
        bits: int,
        opset: int,
    ) -> None:
        self.source = source
        self.graph = graph
        self.shapes = shapes
        self.bits = bits
        self.opset = opset
        self.operations: list[Operation] = []
        self.op_of: dict[str, str] = {}
        """Activation tensor -> name of the Operation producing it."""
        self.taken: set[str] = set()

    def run(self) -> list[Operation]:
        """Operations in graph order: model inputs first, then data-path nodes."""
        for info in self.graph.inputs:
            self._emit(info.name, info.name, "Input", _Lowered(OpKind.INPUT, (), ()))
        handlers: dict[str, Callable[[onnx.NodeProto, str], _Lowered]] = {
            "Conv": self._conv,
            **dict.fromkeys(_MATMULS, self._matmul),
            **dict.fromkeys(_ELEMENTWISE, self._elementwise),
            **dict.fromkeys(_POOLS, self._pool),
            **dict.fromkeys(_REDUCTIONS, self._reduction),
            **dict.fromkeys(_SAME_VIEWS | _ALL_VIEWS, self._view),
            "Transpose": self._transpose,
            "Concat": self._concat,
        }
        for index, node in enumerate(self.graph.nodes):
            if self.graph.static_node[index]:
                continue
            label = node_label(node)
            outputs = [o for o in node.output if o]
            extra = [o for o in node.output[1:] if o and o in self.graph.used]
            if extra and node.op_type not in _MULTI_OUTPUT:
                raise UnsupportedOperatorError(
                    f"{self.source}: node '{label}' ({node.op_type}) has its extra output "
                    f"'{extra[0]}' in use; only its first output is supported"
                )
            if node.op_type in _MULTI_OUTPUT:
                for tensor in outputs:
                    self._emit(tensor, tensor, node.op_type, self._view(node, tensor))
            else:
                lowered = handlers[node.op_type](node, outputs[0])
                self._emit(label, outputs[0], node.op_type, lowered, self._constants(node, lowered))
        return self.operations

    def _constants(self, node: onnx.NodeProto, lowered: _Lowered) -> tuple[Shape, ...]:
        """Shapes of the static tensors ``node`` reads at run time (not views, not weights)."""
        if lowered.kind is OpKind.VIEW:
            return ()
        statics = [x for x in node.input if x and x in self.graph.static and x != lowered.weight]
        return tuple(shape for x in statics if (shape := self.shapes.get(x)) is not None)

    def _emit(
        self,
        base: str,
        tensor: str,
        op_type: str,
        lowered: _Lowered,
        constants: tuple[Shape, ...] = (),
    ) -> None:
        """Append the Operation producing ``tensor`` under a unique name derived from ``base``.

        A clashing name gets the first free suffix ``#2``, ``#3``... in graph order.
        """
        name, suffix = base, 1
        while name in self.taken:
            suffix += 1
            name = f"{base}#{suffix}"
        self.taken.add(name)
        self.op_of[tensor] = name
        self.operations.append(
            Operation(
                name=name,
                op_type=op_type,
                kind=lowered.kind,
                inputs=tuple(self.op_of[x] for x in lowered.inputs),
                windows=lowered.windows,
                output_shape=self.shape(tensor),
                bits=self.bits,
                weight_height=lowered.weight_height,
                weight_width=lowered.weight_width,
                mvm_per_row=lowered.mvm_per_row,
                vector_per_row=lowered.vector_per_row,
                vector_operands=lowered.vector_operands,
                perm=lowered.perm,
                axis=lowered.axis,
                move_shapes=lowered.move_shapes,
                view=lowered.view,
                take_index=lowered.take_index,
                constants=constants,
            )
        )

    def shape(self, tensor: str) -> Shape:
        """The static, non-empty shape of ``tensor``; anything else is an input error."""
        shape = self.shapes.get(tensor)
        where = self.graph.describe(tensor)
        if shape is None:
            raise InvalidInputError(
                f"{self.source}: cannot infer a static shape for tensor '{tensor}' ({where})"
            )
        if any(d <= 0 for d in shape):
            raise InvalidInputError(
                f"{self.source}: tensor '{tensor}' ({where}) has an empty shape {list(shape)}"
            )
        return shape

    def _activations(self, node: onnx.NodeProto) -> tuple[str, ...]:
        return tuple(x for x in node.input if x and x not in self.graph.static)

    def _unsupported(self, node: onnx.NodeProto, what: str) -> UnsupportedOperatorError:
        return UnsupportedOperatorError(
            f"{self.source}: node '{node_label(node)}' ({node.op_type}) {what}"
        )

    def _require_static(self, node: onnx.NodeProto, positions: Sequence[int], role: str) -> None:
        for position in positions:
            if position < len(node.input) and node.input[position]:
                tensor = node.input[position]
                if tensor not in self.graph.static:
                    raise self._unsupported(node, f"has a non-constant {role} '{tensor}'")

    def _sliding(self, node: onnx.NodeProto, x: Shape, y: Shape, kernel: int) -> RowWindow:
        """Row window of a 2-D convolution or pool over NCHW rows (H), honouring auto_pad."""
        stride = int(_attribute(node, "strides", [1, 1])[0])
        dilation = int(_attribute(node, "dilations", [1, 1])[0])
        auto_pad = _attribute(node, "auto_pad", "NOTSET")
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            total = max((y[2] - 1) * stride + (kernel - 1) * dilation + 1 - x[2], 0)
            pad = total // 2 if auto_pad == "SAME_UPPER" else total - total // 2
        elif auto_pad == "VALID":
            pad = 0
        else:
            pad = int(_attribute(node, "pads", [0, 0, 0, 0])[0])
        return RowWindow(
            WindowKind.SLIDING, kernel=kernel, stride=stride, pad=pad, dilation=dilation
        )

    def _conv(self, node: onnx.NodeProto, output: str) -> _Lowered:
        """Unrolled weight ``(Cin/groups*kh*kw) x Cout``, one MVM per output column."""
        self._require_static(node, (1,), "weight")
        self._require_static(node, (2,), "bias")
        x, y, w = self.shape(node.input[0]), self.shape(output), self.shape(node.input[1])
        if len(x) != 4:
            raise self._unsupported(
                node, f"has a rank-{len(x)} input; only 2-D (NCHW) is supported"
            )
        return _Lowered(
            OpKind.WEIGHTED,
            (node.input[0],),
            (self._sliding(node, x, y, w[2]),),
            weight_height=math.prod(w[1:]),
            weight_width=w[0],
            mvm_per_row=y[3],
            weight=node.input[1],
        )

    def _matmul(self, node: onnx.NodeProto, output: str) -> _Lowered:
        """MatMul/Gemm: crossbar work against a constant right operand, else vector MACs."""
        a, b = node.input[0], node.input[1]
        trans_a = node.op_type == "Gemm" and bool(_attribute(node, "transA", 0))
        trans_b = node.op_type == "Gemm" and bool(_attribute(node, "transB", 0))
        self._require_static(node, (2,), "bias")
        if a in self.graph.static:
            raise self._unsupported(
                node,
                f"has a constant left operand '{a}'; "
                "only a constant right operand (the weight) is supported",
            )
        sa, sb, so = self.shape(a), self.shape(b), self.shape(output)
        # A's rows are the output rows when both operands are matrices and A is not transposed.
        row_aligned = len(sa) >= 2 and len(sb) >= 2 and not trans_a and rows_align(sa, so)
        a_window = SAME_ROWS if row_aligned else ALL_ROWS
        if b not in self.graph.static:
            # Activation x activation: every output element is K multiply-accumulates.
            k = sa[-2] if trans_a else sa[-1]
            return _Lowered(
                OpKind.VECTOR,
                (a, b),
                (a_window, ALL_ROWS),  # B's rows are the contraction axis: all are read.
                vector_per_row=math.prod(so) * k // lane_rows(so),
                vector_operands=2,
            )
        if len(sb) > 2 and math.prod(sb[:-2]) != 1:
            raise self._unsupported(node, f"has a batched constant weight of shape {list(sb)}")
        if len(sb) == 1:
            k, n = sb[0], 1  # a vector weight: the output drops the N axis
        else:
            k, n = (sb[-1], sb[-2]) if trans_b else (sb[-2], sb[-1])
        return _Lowered(
            OpKind.WEIGHTED,
            (a,),
            (a_window,),
            weight_height=k,
            weight_width=n,
            mvm_per_row=math.prod(so) // n // lane_rows(so),
            weight=b,
        )

    def _rows_reduced(self, node: onnx.NodeProto, shape: Shape) -> bool:
        """Whether a normalisation reduces over the lane axis (then every row needs all rows)."""
        row_axis = lane_axis(shape)
        if row_axis is None:
            return False
        rank = len(shape)
        if node.op_type in ("Softmax", "LogSoftmax"):
            axis = int(_attribute(node, "axis", -1 if self.opset >= 13 else 1)) % rank
            return axis == row_axis if self.opset >= 13 else axis <= row_axis
        if node.op_type == "LayerNormalization":
            return int(_attribute(node, "axis", -1)) % rank <= row_axis
        return False

    def _elementwise(self, node: onnx.NodeProto, output: str) -> _Lowered:
        """Vector work over each output row; a broadcast operand with other rows is read whole."""
        so = self.shape(output)
        inputs = self._activations(node)
        reduced = self._rows_reduced(node, so)
        windows = tuple(
            SAME_ROWS if not reduced and rows_align(self.shape(x), so) else ALL_ROWS for x in inputs
        )
        return _Lowered(
            OpKind.VECTOR,
            inputs,
            windows,
            vector_per_row=math.prod(so) // lane_rows(so),
            vector_operands=min(len(inputs), 2),
        )

    def _pool(self, node: onnx.NodeProto, output: str) -> _Lowered:
        """A kh x kw window per output element, sliding over rows like a convolution."""
        x, y = self.shape(node.input[0]), self.shape(output)
        if len(x) != 4:
            raise self._unsupported(
                node, f"has a rank-{len(x)} input; only 2-D (NCHW) is supported"
            )
        kh, kw = (int(k) for k in _attribute(node, "kernel_shape", [1, 1]))
        return _Lowered(
            OpKind.VECTOR,
            (node.input[0],),
            (self._sliding(node, x, y, kh),),
            vector_per_row=math.prod(y) // lane_rows(y) * kh * kw,
        )

    def _reduction(self, node: onnx.NodeProto, output: str) -> _Lowered:
        """Every input element is read once, spread over the output rows (rounded up)."""
        x, y = self.shape(node.input[0]), self.shape(output)
        return _Lowered(
            OpKind.VECTOR,
            (node.input[0],),
            (ALL_ROWS,),
            vector_per_row=-(-math.prod(x) // lane_rows(y)),
        )

    def _transpose(self, node: onnx.NodeProto, output: str) -> _Lowered:
        """A permutation that moves data, or a view when it only moves unit dimensions.

        Output row ``r`` reads input row ``r`` when the output's lane axis is the
        input's lane axis moved, otherwise every input row.
        """
        (source,) = self._activations(node)
        shape = self.shape(source)
        perm = tuple(int(p) for p in _attribute(node, "perm", range(len(shape))[::-1]))
        if is_runtime_free(shape, perm):
            return self._view(node, output)
        output_shape = self.shape(output)
        output_axis = lane_axis(output_shape)
        same = (
            output_axis is not None
            and perm[output_axis] == lane_axis(shape)
            and lane_rows(shape) == lane_rows(output_shape)
        )
        return _Lowered(
            OpKind.TRANSPOSE,
            (source,),
            (SAME_ROWS if same else ALL_ROWS,),
            perm=perm,
            move_shapes=(shape,),
        )

    def _concat(self, node: onnx.NodeProto, output: str) -> _Lowered:
        """One block per input and outer row; constant inputs are copied too.

        Along the lane axis an input's rows are shifted by the rows before it (a
        kernel-1 sliding window with that offset as padding); along any other axis
        the rows line up (SAME). An input whose lane axis is another one is read
        whole (ALL).
        """
        inputs = [x for x in node.input if x]
        shapes = tuple(self.shape(x) for x in inputs)
        output_shape = self.shape(output)
        rank = len(shapes[0])
        axis = int(_attribute(node, "axis", 0)) % rank
        row_axis = lane_axis(output_shape)
        windows: list[RowWindow] = []
        offset = 0
        for x, shape in zip(inputs, shapes, strict=True):
            if x not in self.graph.static:
                if row_axis is None or lane_axis(shape) != row_axis:
                    windows.append(ALL_ROWS)
                elif axis == row_axis:
                    windows.append(RowWindow(WindowKind.SLIDING, pad=offset))
                else:
                    windows.append(SAME_ROWS)
            offset += shape[axis]
        return _Lowered(
            OpKind.CONCAT,
            self._activations(node),
            tuple(windows),
            axis=axis,
            move_shapes=shapes,
        )

    def _view(self, node: onnx.NodeProto, output: str) -> _Lowered:
        """Zero-cost data movement; only Identity and Dropout keep rows in place.

        The reshape family (and a Transpose of unit dimensions, which reaches here)
        keeps the row-major element order: a FLAT view. A Gather of one constant
        index is a TAKE view; along the lane axis it reads one row, a scalar
        projection (a kernel-1 window of stride 0 at that row), not all rows.
        Lowering projects reads through FLAT and TAKE views element by element.
        """
        self.shape(output)
        inputs = self._activations(node)
        window = SAME_ROWS if node.op_type in _SAME_VIEWS else ALL_ROWS
        view, axis, index = ViewKind.OPAQUE, 0, 0
        if node.op_type in _FLAT_VIEWS:
            view = ViewKind.FLAT
        elif node.op_type == "Gather" and len(inputs) == 1 and inputs[0] == node.input[0]:
            taken = self._taken(node)
            if taken is not None:
                view, (axis, index) = ViewKind.TAKE, taken
                if axis == lane_axis(self.shape(node.input[0])):
                    window = RowWindow(WindowKind.SLIDING, stride=0, pad=-index)
        return _Lowered(
            OpKind.VIEW,
            inputs,
            (window,) * len(inputs),
            axis=axis,
            view=view,
            take_index=index,
        )

    def _taken(self, node: onnx.NodeProto) -> tuple[int, int] | None:
        """(axis, index) of a Gather whose index is one constant, both normalised."""
        from onnx import numpy_helper

        shape = self.shape(node.input[0])
        axis = int(_attribute(node, "axis", 0)) % len(shape)
        index = node.input[1]
        tensor = self.graph.initializers.get(index)
        if tensor is None and index in self.graph.producer:
            constant = self.graph.nodes[self.graph.producer[index]]
            if constant.op_type == "Constant":
                tensor = _attribute(constant, "value", None)
        if tensor is None:
            return None
        value = numpy_helper.to_array(tensor)
        if value.shape != ():
            return None
        return axis, int(value) % shape[axis]
