"""The ONNX side of the reader: parse a model, find its shape path, infer static shapes.

Exporters compute reshape targets at run time (``Shape -> Slice -> Concat ->
Reshape``, PyTorch's ``Mod``/``Where`` chains), which ONNX shape inference alone
cannot follow. The *shape path* is every tensor that derives only from
initializers, ``Constant`` nodes and ``Shape``/``Size`` outputs; it costs nothing
at run time. `infer_static_shapes` alternates ``onnx.shape_inference.infer_shapes``
(with data propagation) and evaluating shape-path nodes with the ONNX reference
evaluator, feeding folded values back as initializers, until nothing more folds
(a fixpoint, two or three rounds on the shipped ViT models).

Weights are often stripped (initializer shapes only), so a node is evaluated only
when all its input values are known and small (`FOLD_LIMIT`); anything else keeps
the shape inference gives it. `raptor_cp.workload.onnx_reader` turns the data path
into operations.
"""

from __future__ import annotations

import math
import pathlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from raptor_cp.errors import InvalidInputError, UnsupportedOperatorError

if TYPE_CHECKING:
    import onnx

Shape = tuple[int, ...]

FOLD_LIMIT = 1 << 16
"""Largest input (in elements) the shape-path folder evaluates; bigger constants are
weights, whose values never decide a shape, so only their inferred shapes are kept."""

DEFAULT_DOMAINS = ("", "ai.onnx")
SHAPE_OPS = frozenset({"Shape", "Size"})
"""Ops whose output depends only on their input's shape: always on the shape path."""


def load_model(path: pathlib.Path, source: str) -> onnx.ModelProto:
    """Parse a binary ONNX file without touching external weight data."""
    import onnx
    from google.protobuf.message import DecodeError

    if not path.exists():
        raise InvalidInputError(f"{source}: no such file")
    if not path.is_file():
        raise InvalidInputError(f"{source}: not a regular file")
    try:
        model = onnx.load(str(path), format="protobuf", load_external_data=False)
    except OSError as error:
        raise InvalidInputError(f"{source}: cannot read: {error.strerror}") from None
    except DecodeError as error:
        raise InvalidInputError(f"{source}: not a valid ONNX model ({error})") from None
    if model.ir_version <= 0 or not model.HasField("graph"):
        raise InvalidInputError(f"{source}: not a valid ONNX model (no IR version or no graph)")
    return model


def default_opset(model: onnx.ModelProto) -> int:
    """Version of the default operator set (decides default attributes)."""
    return next((o.version for o in model.opset_import if o.domain in DEFAULT_DOMAINS), 1)


def node_label(node: onnx.NodeProto) -> str:
    """How messages name a node: its name, else its first output (nodes may be unnamed)."""
    return node.name or next(o for o in node.output if o)


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split())


@dataclass(frozen=True)
class OnnxGraph:
    """The parsed graph: nodes in file order and which tensors are on the shape path."""

    nodes: tuple[onnx.NodeProto, ...]
    initializers: dict[str, onnx.TensorProto]
    inputs: tuple[onnx.ValueInfoProto, ...]
    """Real model inputs (graph inputs that are not initializers)."""
    static: frozenset[str]
    """Shape-path tensors: initializers, Constant/Shape outputs and what derives only from them."""
    static_node: tuple[bool, ...]
    used: frozenset[str]
    """Tensors read by a node or listed as graph outputs."""
    producer: dict[str, int]

    def describe(self, tensor: str) -> str:
        """Where ``tensor`` comes from, for error messages."""
        if tensor in self.producer:
            return f"output of node '{node_label(self.nodes[self.producer[tensor]])}'"
        return "initializer" if tensor in self.initializers else "graph input"


def analyse(model: onnx.ModelProto, source: str, supported: frozenset[str]) -> OnnxGraph:
    """Check node order and operator support, and split the shape path from the data path.

    A data-path node whose op type is not in ``supported`` is rejected here, before
    shape inference can fail on it with a less useful message.
    """
    graph = model.graph
    initializers = {t.name: t for t in graph.initializer}
    inputs = tuple(i for i in graph.input if i.name not in initializers)
    defined = set(initializers) | {i.name for i in inputs}
    static = set(initializers)
    producer: dict[str, int] = {}
    static_node: list[bool] = []
    for index, node in enumerate(graph.node):
        if not any(node.output):
            raise InvalidInputError(f"{source}: node #{index} ({node.op_type}) has no output")
        label = node_label(node)
        present = [x for x in node.input if x]
        for tensor in present:
            if tensor not in defined:
                raise InvalidInputError(
                    f"{source}: node '{label}' reads tensor '{tensor}', which no earlier node, "
                    "initializer or graph input defines (the graph is not topologically sorted)"
                )
        if node.domain not in DEFAULT_DOMAINS:
            raise UnsupportedOperatorError(
                f"{source}: node '{label}' has unsupported op type '{node.domain}.{node.op_type}'"
            )
        is_static = node.op_type in SHAPE_OPS or all(x in static for x in present)
        if not is_static and node.op_type not in supported:
            raise UnsupportedOperatorError(
                f"{source}: node '{label}' has unsupported op type '{node.op_type}'"
            )
        static_node.append(is_static)
        for tensor in (o for o in node.output if o):
            if tensor in defined:
                raise InvalidInputError(
                    f"{source}: node '{label}' redefines tensor '{tensor}' "
                    "(tensors are single-assignment)"
                )
            defined.add(tensor)
            producer[tensor] = index
            if is_static:
                static.add(tensor)
    outputs = [o.name for o in graph.output]
    for tensor in outputs:
        if tensor not in defined:
            raise InvalidInputError(f"{source}: graph output '{tensor}' is never produced")
    used = {x for node in graph.node for x in node.input if x} | set(outputs)
    return OnnxGraph(
        nodes=tuple(graph.node),
        initializers=initializers,
        inputs=inputs,
        static=frozenset(static),
        static_node=tuple(static_node),
        used=frozenset(used),
        producer=producer,
    )


def infer_static_shapes(
    model: onnx.ModelProto, graph: OnnxGraph, source: str
) -> dict[str, Shape | None]:
    """Alternate ONNX shape inference and shape-path folding until nothing more folds.

    Returns every tensor's static shape, or None where it stays unknown.
    """
    import onnx
    from onnx import numpy_helper

    values: dict[str, np.ndarray] = {
        name: numpy_helper.to_array(tensor)
        for name, tensor in graph.initializers.items()
        if tensor.data_location != onnx.TensorProto.EXTERNAL
        and math.prod(tensor.dims) <= FOLD_LIMIT
    }
    pending = [i for i, is_static in enumerate(graph.static_node) if is_static]
    folded: set[int] = set()
    opsets = {
        "" if o.domain in DEFAULT_DOMAINS else o.domain: o.version for o in model.opset_import
    }
    while True:
        shapes = _infer(model, graph, values, folded, source)
        for name, value in values.items():
            shapes[name] = tuple(value.shape)
        for name, tensor in graph.initializers.items():
            shapes[name] = tuple(tensor.dims)
        progress = [i for i in pending if _try_fold(graph, i, values, shapes, opsets, source)]
        if not progress:
            return shapes
        folded.update(progress)
        pending = [i for i in pending if i not in folded]


def _try_fold(
    graph: OnnxGraph,
    index: int,
    values: dict[str, np.ndarray],
    shapes: dict[str, Shape | None],
    opsets: dict[str, int],
    source: str,
) -> bool:
    """Evaluate shape-path node ``index`` into ``values`` if its inputs are known."""
    from onnx.reference import ReferenceEvaluator

    node = graph.nodes[index]
    feeds: dict[str, np.ndarray] = {}
    for tensor in (x for x in node.input if x):
        if node.op_type in SHAPE_OPS:
            shape = shapes.get(tensor)
            if shape is None:
                return False
            # Shape/Size read only the extent: a zero-stride view stands in for the data.
            feeds[tensor] = np.broadcast_to(np.zeros((), np.float32), shape)
        elif tensor in values and values[tensor].size <= FOLD_LIMIT:
            feeds[tensor] = values[tensor]
        else:
            return False
    try:
        results = ReferenceEvaluator(node, opsets=opsets).run(None, feeds)
    except (ValueError, TypeError, IndexError, KeyError, RuntimeError) as error:
        raise InvalidInputError(
            f"{source}: cannot evaluate constant node '{node_label(node)}' "
            f"({node.op_type}): {_one_line(error)}"
        ) from None
    for tensor, value in zip(node.output, results, strict=False):
        if tensor:
            values[tensor] = np.asarray(value)
    return True


def _infer(
    model: onnx.ModelProto,
    graph: OnnxGraph,
    values: dict[str, np.ndarray],
    folded: set[int],
    source: str,
) -> dict[str, Shape | None]:
    """Run ONNX shape inference on the graph with folded nodes replaced by their values.

    Initializers whose values are unknown or large enter as typed graph inputs, so
    real weights are never copied.
    """
    import onnx
    from onnx import helper, numpy_helper

    known = [numpy_helper.from_array(value, name) for name, value in values.items()]
    opaque = [
        helper.make_tensor_value_info(name, tensor.data_type, list(tensor.dims))
        for name, tensor in graph.initializers.items()
        if name not in values
    ]
    work = helper.make_graph(
        nodes=[node for i, node in enumerate(graph.nodes) if i not in folded],
        name=model.graph.name or "graph",
        inputs=[*graph.inputs, *opaque],
        outputs=list(model.graph.output),
        initializer=known,
        value_info=[v for v in model.graph.value_info if v.name not in values],
    )
    # IR < 4 only sees initializers that are also graph inputs; IR 4 semantics read them all.
    work_model = helper.make_model(
        work, opset_imports=list(model.opset_import), ir_version=max(model.ir_version, 4)
    )
    work_model.functions.extend(model.functions)
    try:
        inferred = onnx.shape_inference.infer_shapes(work_model, strict_mode=True, data_prop=True)
    except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError) as error:
        raise InvalidInputError(f"{source}: shape inference failed ({_one_line(error)})") from None
    infos = [*inferred.graph.input, *inferred.graph.value_info, *inferred.graph.output]
    return {info.name: _static_shape(info) for info in infos}


def _static_shape(info: onnx.ValueInfoProto) -> Shape | None:
    """The fully static shape of a tensor value info, or None."""
    tensor_type = info.type.tensor_type if info.type.HasField("tensor_type") else None
    if tensor_type is None or not tensor_type.HasField("shape"):
        return None
    dims = tensor_type.shape.dim
    if not all(d.HasField("dim_value") for d in dims):
        return None
    return tuple(int(d.dim_value) for d in dims)
