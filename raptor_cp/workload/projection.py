"""Element-exact projections of a consumer's reads through views and transposes.

Lowering charges an edge the bytes its consumer reads from its producer
(seeds, scheduling.md: "Statically proven physical-slot projections support
many-to-many edges; unproven projections retain complete producer
dependencies"). Row windows prove most reads; what they cannot prove is a read
through a view that moves the lane axis (ViT's attention reshapes its
``(197, 1, 2304)`` projection into ``(3, 197, 1, 1, 768)`` and takes Q, K and V
apart) or by a transpose that moves it. These functions follow such a read
element by element, as flat row-major indices:

* `row_reads`: the elements rows ``[first, last)`` of a tensor hold;
* `transposed_reads`: the input elements output rows ``[lo, hi)`` of a
  ``Transpose(perm)`` copy;
* `taken_source`: where a TAKE view's elements (`ViewKind.TAKE`) lie in its
  source (a FLAT view keeps them in place);
* `lane_rows_of`: the lane-axis row of each element of a producer.

Each costs time and memory linear in the elements read, which lowering caps at
`EXACT_ELEMENTS` per read; a larger read keeps the conservative projection.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from raptor_cp.workload.model import lane_axis, lane_rows

EXACT_ELEMENTS = 1 << 22
"""Most elements one read is projected exactly (32 MiB of int64 indices)."""


def row_major_strides(shape: Sequence[int]) -> list[int]:
    """Row-major element strides of ``shape``.

    >>> row_major_strides((2, 3, 4))
    [12, 4, 1]
    """
    strides = [1] * len(shape)
    for axis in range(len(shape) - 2, -1, -1):
        strides[axis] = strides[axis + 1] * int(shape[axis + 1])
    return strides


def _box(extents: Sequence[tuple[int, int]], strides: Sequence[int]) -> np.ndarray:
    """Flat indices ``sum(i_k * strides[k])`` over the box ``i_k in [lo_k, hi_k)``, row-major."""
    flat = np.zeros(1, dtype=np.int64)
    for (lo, hi), stride in zip(extents, strides, strict=True):
        flat = (flat[:, None] + np.arange(lo, hi, dtype=np.int64)[None, :] * stride).ravel()
    return flat


def _rows_box(shape: Sequence[int], first: int, last: int) -> list[tuple[int, int]]:
    """Every axis whole except the lane axis (`lane_axis`), cut to ``[first, last)``."""
    extents = [(0, int(d)) for d in shape]
    axis = lane_axis(shape)
    if axis is not None:
        extents[axis] = (first, last)
    return extents


def row_reads(shape: Sequence[int], first: int, last: int) -> np.ndarray:
    """Flat indices of the elements of rows ``[first, last)`` of a ``shape`` tensor.

    >>> row_reads((2, 3, 2), 1, 2).tolist()  # row 1 of both outer blocks
    [2, 3, 8, 9]
    """
    return _box(_rows_box(shape, first, last), row_major_strides(shape))


def read_size(shape: Sequence[int], first: int, last: int) -> int:
    """How many elements `row_reads` (and `transposed_reads`) return, without building them."""
    return math.prod(int(d) for d in shape) // lane_rows(shape) * (last - first)


def transposed_reads(
    input_shape: Sequence[int], perm: Sequence[int], lo: int, hi: int
) -> np.ndarray:
    """Flat input indices that output rows ``[lo, hi)`` of ``Transpose(perm)`` copy.

    ``perm[i]`` is the input dimension of output dimension ``i`` (ONNX).

    >>> transposed_reads((2, 3), (1, 0), 0, 1).tolist()  # output (3, 2), row 0 = column 0
    [0, 3]
    """
    output_shape = [int(input_shape[p]) for p in perm]
    strides = row_major_strides(input_shape)
    return _box(_rows_box(output_shape, lo, hi), [strides[p] for p in perm])


def taken_source(
    flat: np.ndarray, source_shape: Sequence[int], axis: int, index: int
) -> np.ndarray:
    """Source indices of a TAKE view's elements ``flat``: ``index`` put back at ``axis``.

    >>> taken_source(np.array([0, 1, 2]), (2, 3), 0, 1).tolist()  # row 1 of a 2 x 3
    [3, 4, 5]
    """
    inner = math.prod(int(d) for d in source_shape[axis + 1 :])
    outer, within = np.divmod(flat, inner)
    return (outer * int(source_shape[axis]) + index) * inner + within


def lane_rows_of(flat: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """The lane-axis row (`lane_axis`; 0 below rank 2) of each flat index.

    >>> lane_rows_of(np.array([0, 2, 3, 5]), (2, 1, 3)).tolist()  # the lane axis is axis 0
    [0, 0, 1, 1]
    """
    axis = lane_axis(shape)
    if axis is None:
        return np.zeros_like(flat)
    inner = math.prod(int(d) for d in shape[axis + 1 :])
    return (flat // inner) % int(shape[axis])
