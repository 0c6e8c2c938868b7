"""Run decomposition of data movement: what a transpose or a concatenation copies, per lane.

The seeds charge data movement at its actual run granularity (scheduling.md,
"Costs and interpretation": "Transposes charge memory traffic and strided
vector work; concatenation charges per-input blocks per outer row";
scheduling-implementation.md, "Transfer accounting and transpose costs").
This module says which runs one lane (output rows ``[lo, hi)`` of the lane
axis ``r - 2``, `raptor_cp.workload.model`) copies, as ``(count, elements)``
pairs; the target prices them (`raptor_cp.targets.base.MoveWork`).

* **Transpose** (`transpose_runs`): a *run* is the longest destination-contiguous
  piece that is also contiguous in the source: the output's trailing dimensions
  that the permutation leaves in place. When the innermost dimension moves, the
  source stride is not one and the run is the innermost dimension, gathered
  through the vector unit (``strided``). Unit dimensions are ignored; a
  permutation that only moves unit dimensions is runtime-free (a view,
  `is_runtime_free`).
* **Concatenation** (`concat_blocks`): each input contributes one contiguous block
  per *outer row* (the index over the dimensions before the axis). A lane cuts the
  lane axis: along an axis before it, every block splits into per-row-range pieces;
  along the lane axis itself, an input contributes only its rows inside the lane;
  along the last axis, the outer rows are the lane's rows.

Lane-axis conventions are those of `raptor_cp.workload.model.lane_rows` (the
lane axis is ``shape[-2]``, a rank <= 1 tensor is one row). Complexity
``O(A D)`` for ``A`` inputs of rank ``D``, constant auxiliary space beyond
the result (the seeds' "Concat cost extraction").
"""

from __future__ import annotations

import math
from collections.abc import Sequence

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
    rank = len(perm)
    out = [int(input_shape[p]) for p in perm]
    rows = out[-2] if rank >= 2 else 1
    share = hi - lo
    lane_elements = math.prod(out) // rows * share
    kept = [i for i in range(rank) if out[i] != 1]
    if not kept:
        return ((1, lane_elements),), False
    source = [perm[i] for i in kept]
    strided = source[-1] != max(source)
    # The run: the output's trailing non-unit dims taken in place from the input's
    # trailing non-unit dims (strided: the innermost non-unit dim alone).
    length = 1
    if not strided:
        order = sorted(source)
        while length < len(source) and source[-length - 1] == order[-length - 1]:
            length += 1
    run_dims = kept[-length:]
    run = math.prod(out[i] for i in run_dims)
    if rank >= 2 and rank - 2 in run_dims:
        # The lane axis lies inside the run: the lane copies its share of every run.
        run = run // rows * share
    return ((lane_elements // run, run),), strided


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
    """
    rank = len(input_shapes[0])
    share = hi - lo
    found: list[Blocks] = []
    if rank < 2:
        return tuple(((1, math.prod(s)),) for s in input_shapes)
    row_axis = rank - 2
    offset = 0
    for shape in input_shapes:
        outer = math.prod(shape[:axis])
        if axis == rank - 1:
            found.append(((outer // shape[row_axis] * share, shape[-1]),))
        elif axis == row_axis:
            first, last = max(lo, offset), min(hi, offset + shape[axis])
            found.append(((outer, (last - first) * shape[-1]),) if last > first else ())
            offset += shape[axis]
        else:
            pieces = outer * math.prod(shape[axis:row_axis])
            found.append(((pieces, share * shape[-1]),))
    return tuple(found)
