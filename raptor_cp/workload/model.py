"""The target-neutral workload: operations, their shapes and how their rows depend.

Every reader (ONNX, PIMCOMP-NN node lists, raptor JSON, STG) produces a `Workload`;
lowering turns it into a `ComputeGraph` for one target. Nothing here knows about
crossbars, cores or nanoseconds.

Rows are the *lane axis*: the dimension that lanes chunk (`lane_axis`). For a
tensor of rank >= 2 it is ``shape[-2]`` (H of NCHW, tokens of ``[1, T, D]`` and
of attention's ``[1, heads, T, d]``, the batch of ``[N, D]``), except that a
unit ``shape[-2]`` outside a 4-D image is skipped for the nearest longer axis
before it: the tokens of the sequence-first ``[T, 1, D]`` layout that
``nn.MultiheadAttention`` exports. A rank <= 1 tensor is one row.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from raptor_cp.errors import InvalidInputError


class OpKind(enum.Enum):
    """What an operation costs on an accelerator."""

    INPUT = "input"
    """A model input: data arrives from global memory, no task."""
    WEIGHTED = "weighted"
    """A matrix-vector product against a static weight matrix (crossbar work)."""
    VECTOR = "vector"
    """Element-wise, reduction, pooling or activation-activation work on the vector unit."""
    VIEW = "view"
    """A runtime-free view or shape-plumbing node (cost 0, no task)."""
    TRANSPOSE = "transpose"
    """A permutation that moves data: memory traffic, strided vector work (one task per lane)."""
    CONCAT = "concat"
    """A concatenation: one block copy per input and outer row (one task per lane)."""
    TASK = "task"
    """A plain task with a given integer cost (STG and hand-made task graphs)."""


class WindowKind(enum.Enum):
    """How a consumer's output rows map onto the rows of one of its inputs."""

    SAME = "same"
    """Output row r needs input row r (element-wise)."""
    SLIDING = "sliding"
    """Output row r needs input rows [r*stride - pad, r*stride - pad + (kernel-1)*dilation]."""
    ALL = "all"
    """Any output row needs every input row (Gemm, flatten, global pool, token mixing)."""


class ViewKind(enum.Enum):
    """How a VIEW's output elements map onto its source's elements.

    Lowering projects a consumer's reads through a FLAT or TAKE view element by
    element, onto exactly the producer rows they come from (the seeds' statically
    proven projections); an OPAQUE view is an unproven projection, whose consumers
    depend on, and receive, all of its source.
    """

    FLAT = "flat"
    """Row-major element order unchanged: output element ``i`` is source element ``i``
    (Reshape, Flatten, Squeeze, Unsqueeze, a Transpose of unit dimensions only)."""
    TAKE = "take"
    """One constant index along one axis of the source (a Gather of a scalar index):
    ``Operation.axis`` and ``Operation.take_index``."""
    OPAQUE = "opaque"
    """Any other view (Slice, Expand, Split, a Gather of a tensor index)."""


@dataclass(frozen=True)
class RowWindow:
    """The projection of a consumer's output-row range onto an input's rows."""

    kind: WindowKind = WindowKind.ALL
    kernel: int = 1
    stride: int = 1
    pad: int = 0
    dilation: int = 1

    def input_rows(self, lo: int, hi: int, input_rows: int) -> tuple[int, int]:
        """Half-open input-row range needed by output rows ``[lo, hi)``, clipped to the input.

        >>> RowWindow(WindowKind.SLIDING, kernel=3, stride=1, pad=1).input_rows(0, 4, 8)
        (0, 5)
        """
        if self.kind is WindowKind.ALL:
            return 0, input_rows
        if self.kind is WindowKind.SAME:
            return min(lo, input_rows), min(hi, input_rows)
        first = lo * self.stride - self.pad
        last = (hi - 1) * self.stride - self.pad + (self.kernel - 1) * self.dilation
        return max(first, 0), min(last + 1, input_rows)


SAME_ROWS = RowWindow(WindowKind.SAME)
ALL_ROWS = RowWindow(WindowKind.ALL)


def lane_axis(shape: Sequence[int]) -> int | None:
    """The lane axis of a tensor shape (non-negative), None below rank 2.

    ``shape[-2]``, unless it is a unit axis of a tensor that is not 4-D: then the
    nearest axis before it longer than one, if any. A 4-D tensor keeps ``H``
    whatever its extent, because convolutions and pools cut NCHW images by rows.
    Without the skip, a ``[197, 1, 2304]`` projection would be one row: one task
    holding the whole tensor.

    >>> lane_axis((1, 64, 56, 56)), lane_axis((197, 1, 2304)), lane_axis((1, 512, 1, 1))
    (2, 0, 2)
    """
    rank = len(shape)
    if rank < 2:
        return None
    if shape[-2] == 1 and rank != 4:
        for axis in range(rank - 3, -1, -1):
            if shape[axis] > 1:
                return axis
    return rank - 2


def lane_rows(shape: Sequence[int]) -> int:
    """Extent of the lane axis of a tensor shape (1 below rank 2)."""
    axis = lane_axis(shape)
    return 1 if axis is None else int(shape[axis])


def rows_align(a: Sequence[int], b: Sequence[int]) -> bool:
    """Whether row ``r`` of shape ``a`` lines up with row ``r`` of shape ``b``.

    The lane axes have the same extent and, unless that is one row, the same
    position counted from the last axis (broadcasting aligns shapes on the right).

    >>> rows_align((197, 1, 768), (197, 1, 2304)), rows_align((197, 768), (197, 1, 768))
    (True, False)
    """
    rows = lane_rows(a)
    if rows != lane_rows(b):
        return False
    axis_a, axis_b = lane_axis(a), lane_axis(b)
    return rows == 1 or (
        axis_a is not None and axis_b is not None and len(a) - axis_a == len(b) - axis_b
    )


@dataclass(frozen=True)
class Operation:
    """One workload operation with everything lowering needs, in target-neutral units.

    Attributes
    ----------
    name, op_type:
        Unique name and the source operator type (``Conv``, ``OP_FC``, ``stg``...).
    kind:
        What it costs (see `OpKind`).
    inputs, windows:
        Producer operation names (activations only) and, per input, the row window.
    output_shape:
        Shape of the single output tensor.
    bits:
        Element precision of activations and weights.
    weight_height, weight_width, mvm_per_row:
        For WEIGHTED: the unrolled weight matrix (``kh*kw*Cin/groups`` x ``Cout``) and
        how many matrix-vector products one output row takes (``Wo`` for a conv).
    vector_per_row, vector_operands:
        For VECTOR: vector-unit elements processed per output row, and whether the
        op reads one or two operand streams.
    perm, axis, move_shapes:
        For TRANSPOSE: ``perm`` (output dim ``i`` is input dim ``perm[i]``) and
        ``move_shapes`` = (input shape,). For CONCAT: ``axis`` (normalised) and
        ``move_shapes`` = every operand's shape in order, constants included (see
        `raptor_cp.workload.movement`). For a TAKE view: ``axis`` (normalised).
    view, take_index:
        For VIEW: how its elements map onto its source's (`ViewKind`) and, for
        TAKE, the index taken along ``axis``.
    constants:
        Shapes of the constant tensors the operation reads at run time (biases,
        scales, constant operands; not crossbar weights): the seeds' baseline
        memory estimate loads them.
    task_cost:
        For TASK: the given integer cost.
    """

    name: str
    op_type: str
    kind: OpKind
    inputs: tuple[str, ...] = ()
    windows: tuple[RowWindow, ...] = ()
    output_shape: tuple[int, ...] = (1,)
    bits: int = 8
    weight_height: int = 0
    weight_width: int = 0
    mvm_per_row: int = 0
    vector_per_row: int = 0
    vector_operands: int = 1
    perm: tuple[int, ...] = ()
    axis: int = 0
    move_shapes: tuple[tuple[int, ...], ...] = ()
    view: ViewKind = ViewKind.OPAQUE
    take_index: int = 0
    constants: tuple[tuple[int, ...], ...] = ()
    task_cost: int = 0
    input_bytes: tuple[int, ...] = field(default=())
    """For TASK graphs only: bytes sent along each input edge (empty means 0)."""
    resident: tuple[tuple[str, int], ...] = ()
    """For TASK graphs only: named resident weights and their sizes in slots.

    Tasks naming the same weight share it when they run on the same core."""

    def __post_init__(self) -> None:
        if len(self.windows) != len(self.inputs):
            raise InvalidInputError(
                f"operation {self.name!r}: {len(self.inputs)} inputs but "
                f"{len(self.windows)} row windows"
            )
        if self.bits < 1:
            raise InvalidInputError(f"operation {self.name!r}: bits must be >= 1, got {self.bits}")
        if any(d <= 0 for d in self.output_shape):
            raise InvalidInputError(
                f"operation {self.name!r}: output shape {list(self.output_shape)} "
                "has a non-positive dimension"
            )

    @property
    def rows(self) -> int:
        """Extent of the output's lane axis."""
        return lane_rows(self.output_shape)

    @property
    def elements(self) -> int:
        """Number of output elements."""
        return math.prod(self.output_shape)

    @property
    def row_elements(self) -> int:
        """Elements of one output row."""
        return self.elements // self.rows


@dataclass(frozen=True)
class Workload:
    """A named DAG of operations in a topological order, as a reader produced it."""

    name: str
    operations: tuple[Operation, ...]
    source: str = ""
    """Where the workload came from (a path), for error messages and reports."""

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for op in self.operations:
            if op.name in seen:
                raise InvalidInputError(
                    f"{self.source or self.name}: duplicate operation {op.name!r}"
                )
            for producer in op.inputs:
                if producer not in seen:
                    raise InvalidInputError(
                        f"{self.source or self.name}: operation {op.name!r} reads {producer!r}, "
                        "which is not defined before it (unknown name or a cycle)"
                    )
            seen.add(op.name)

    def by_name(self) -> dict[str, Operation]:
        """Operations keyed by name."""
        return {op.name: op for op in self.operations}
