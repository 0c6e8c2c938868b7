"""Run decomposition of data movement: what a transpose or a concatenation copies, per lane.

The seeds charge data movement at its actual run granularity (scheduling.md,
"Costs and interpretation": "Transposes charge memory traffic and strided
vector work; concatenation charges per-input blocks per outer row";
scheduling-implementation.md, "Transfer accounting and transpose costs").
This module says which runs one lane (output rows ``[lo, hi)`` of the output's
lane axis, `raptor_cp.workload.model.lane_axis`) copies, as ``(count, elements)``
pairs; the target prices them (`raptor_cp.targets.base.MoveWork`).

* **Transpose** (`transpose_runs`): a *run* is the longest piece of the lane's
  output that is contiguous in the source too: the lane's trailing dimensions
  whose source strides chain (each the product of the extents inside it). When
  the innermost dimension moves, the source stride is not one and the run is
  the innermost dimension, gathered through the vector unit (``strided``).
  Unit dimensions, and the lane axis cut to one row, are ignored; a
  permutation that only moves unit dimensions is runtime-free (a view,
  `is_runtime_free`).
* **Concatenation** (`concat_blocks`): each input contributes one contiguous block
  per *outer row* (the index over the dimensions before the axis). A lane cuts the
  lane axis: along an axis before it, every block splits into per-row-range pieces;
  along the lane axis itself, an input contributes only its rows inside the lane;
  along an axis after it, the lane's rows select its blocks.

A rank <= 1 tensor is one row. Complexity
``O(A D)`` for ``A`` inputs of rank ``D``, constant auxiliary space beyond
the result (the seeds' "Concat cost extraction").
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from raptor_cp.workload.model import lane_axis
from raptor_cp.workload.projection import row_major_strides

Blocks = tuple[tuple[int, int], ...]
"""``(count, elements)`` pairs: ``count`` runs of ``elements`` elements each."""


def _kept(shape: Sequence[int], perm: Sequence[int]) -> list[int]:
    """The permutation restricted to the non-unit input dimensions, as input dim ids."""
    return [p for p in perm if shape[p] != 1]


def is_runtime_free(input_shape: Sequence[int], perm: Sequence[int]) -> bool:
    """True when ``perm`` keeps every non-unit dimension in order (a pure view).

    >>> is_runtime_free((1, 197, 1, 64), (0, 2, 1, 3))
    True
    >>> is_runtime_free((1, 197, 12, 64), (0, 2, 1, 3))
    False
    """
    kept = _kept(input_shape, perm)
    return kept == sorted(kept)


def transpose_runs(
    input_shape: Sequence[int], perm: Sequence[int], lo: int, hi: int
) -> tuple[Blocks, bool]:
    """The runs output rows ``[lo, hi)`` of ``Transpose(perm)`` copy, and whether strided.

    ``perm[i]`` is the input dimension of output dimension ``i`` (ONNX). Returns
    ``(((count, elements),), strided)``.

    >>> transpose_runs((1, 197, 12, 64), (0, 2, 1, 3), 0, 4)  # 4 of 197 token rows
    (((48, 64),), False)
    >>> transpose_runs((1, 12, 197, 64), (0, 1, 3, 2), 0, 64)  # K^T: innermost moves
    (((768, 197),), True)
    """
    out = [int(input_shape[p]) for p in perm]
    axis = lane_axis(out)
    if axis is not None:
        out[axis] = hi - lo
    source_strides = row_major_strides(input_shape)
    strides = [source_strides[p] for p in perm]
    # The lane's box in destination order, unit dimensions dropped: (extent, source stride).
    dims = [(extent, stride) for extent, stride in zip(out, strides, strict=True) if extent != 1]
    elements = math.prod(out)
    if not dims:
        return ((1, elements),), False
    run, stride = dims[-1]
    if stride != 1:
        return ((elements // run, run),), True
    for extent, stride in reversed(dims[:-1]):
        if stride != run:
            break
        run *= extent
    return ((elements // run, run),), False


def concat_blocks(
    input_shapes: Sequence[Sequence[int]], axis: int, lo: int, hi: int
) -> tuple[Blocks, ...]:
    """Per input, the blocks output rows ``[lo, hi)`` of a concatenation copy from it.

    ``axis`` is normalised (``0 <= axis < rank``). An input with no rows in the
    lane contributes ``()``.

    >>> concat_blocks([(1, 3, 4, 5), (1, 2, 4, 5)], 1, 0, 2)  # channels, lanes cut H
    (((3, 10),), ((2, 10),))
    >>> concat_blocks([(1, 3, 4), (1, 3, 2)], 2, 1, 3)  # last axis: one block per row
    (((2, 4),), ((2, 2),))
    >>> concat_blocks([(1, 2, 8), (1, 3, 8)], 1, 1, 4)  # the lane axis: rows 1-2, 2-3
    (((1, 8),), ((1, 16),))
    >>> concat_blocks([(5, 1, 8), (5, 1, 4)], 2, 0, 2)  # lane axis 0 of (5, 1, 12)
    (((2, 8),), ((2, 4),))
    """
    share = hi - lo
    found: list[Blocks] = []
    output_shape = list(input_shapes[0])
    output_shape[axis] = sum(shape[axis] for shape in input_shapes)
    row_axis = lane_axis(output_shape)
    if row_axis is None:
        return tuple(((1, math.prod(s)),) for s in input_shapes)
    offset = 0
    for shape in input_shapes:
        outer = math.prod(shape[:axis])
        row = math.prod(shape[row_axis + 1 :])
        if row_axis < axis:
            found.append(((outer // shape[row_axis] * share, math.prod(shape[axis:])),))
        elif axis == row_axis:
            first, last = max(lo, offset), min(hi, offset + shape[axis])
            found.append(((outer, (last - first) * row),) if last > first else ())
            offset += shape[axis]
        else:
            pieces = outer * math.prod(shape[axis:row_axis])
            found.append(((pieces, share * row),))
    return tuple(found)
