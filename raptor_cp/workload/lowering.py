"""Lowering: a target-neutral `Workload` onto one target as a `ComputeGraph`.

A task is (operation, lane, array group), following the reference PIM
decomposition (ARCHITECTURE.md, "The PIM lowering", after PIMCOMP-NN):

- a lane is a contiguous chunk of an operation's output rows (the lane axis of
  `raptor_cp.workload.model`); an operation with ``rows`` rows gets
  ``min(lanes, rows)`` lanes and lane ``i`` covers rows
  ``[i*rows//L, (i+1)*rows//L)``;
- a WEIGHTED operation's weight matrix is cut by `SchedulingTarget.weight_tiling`
  into row slices and column blocks; each (row slice, column block) is an *array
  group*, one resident weight shared by every lane of the operation. Each lane
  has one matrix task per array group and, when there are several row slices, one
  vector task per column block that sums the partial results;
- a VECTOR operation is one task per lane, a TASK operation one task with its
  named resident weights (one name, one weight);
- a TRANSPOSE or CONCAT operation is one task per lane that copies its runs
  (`raptor_cp.workload.movement`): a transpose charges memory traffic per run and
  strided vector work, a concatenation one block per input and outer row. Its
  *nominal* cost (`ComputeGraph.nominal_cost`, used by partitioning and packing)
  counts a transpose as one bulk move of the lane's elements; its physical cost
  is the run decomposition (scheduling-implementation.md, "Priorities,
  placement, and recovery limits"). A concatenation's inputs are received
  directly into its assembly storage: an edge carrying a producer's whole
  fragment is a ``DIRECT_RECEIVE`` and omits the endpoint-memory charges its
  block copy already makes (scheduling.md, "Costs and interpretation");
- INPUT operations have no task: their data comes from global memory. VIEW
  operations have no task either: a consumer of a view depends on the view's
  sources (see `_Lowering.sources` and `_Lowering.traced`).

Edge bytes are exact projections (seeds, "Transfer accounting"): a consumer lane's
rows are projected through its `RowWindow` onto the producer's rows, and every
producer lane (and column block) overlapping them is charged separately. A read
through a proven view chain (FLAT and TAKE views) or by a transpose that moves
the lane axis is projected element by element
(`raptor_cp.workload.projection`); only an unproven view makes its consumer
read every row of the source. Sizes
are carried in bits and rounded up to bytes once per fragment, so sub-byte
payloads stay analyzable (a 4-bit row of 3 elements is not rounded to 2 bytes
before it is multiplied by its rows); byte-addressed PIM communication lowering
rejects them later (`raptor_cp.pipeline.realize`). One approximation: an
array-group task receives only its row slice's share of the input,
``ceil(bits * slice_height / weight_height)``, because the unrolled input vector
is cut along the weight rows; the real share of a sliding window depends on
which kernel positions the slice holds.

Baseline memory (`raptor_cp.graph.BaselineMemory`, the seeds' separate estimate
for function inputs, constants and outputs): a task reading a model input loads
its projected fragments from global memory (one request per fragment); the
publishing tasks of an operation load their lane's share of each of its
constants (the whole constant when it is broadcast over the rows); and the
publishing tasks of every operation no other operation reads (the function
outputs) store their fragments. Every lane reading a broadcast constant reads
the same *piece* (one per operation, constant and column block), which a core
loads once whatever number of its tasks read it (`BaselineMemory.first_loads`);
any other request is a piece of its own.

Costs are priced once per distinct work description by the target. Capacity is
not checked here: callers run `ComputeGraph.validate` with the target's
capacities.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from raptor_cp.errors import InvalidInputError
from raptor_cp.graph import (
    DIRECT_RECEIVE,
    PLAIN,
    SCALAR_PROJECTION,
    BaselineMemory,
    ComputeGraph,
)
from raptor_cp.limits import MAX_TASKS
from raptor_cp.targets.base import (
    FixedWork,
    MatrixWork,
    MoveWork,
    SchedulingTarget,
    VectorWork,
    WeightTiling,
    Work,
)
from raptor_cp.workload.model import (
    Operation,
    OpKind,
    RowWindow,
    ViewKind,
    WindowKind,
    Workload,
    rows_align,
)
from raptor_cp.workload.movement import concat_blocks, transpose_runs
from raptor_cp.workload.projection import (
    EXACT_ELEMENTS,
    lane_rows_of,
    read_size,
    row_reads,
    taken_source,
    transposed_reads,
)

TASK_BUDGET = 20_000
"""Largest graph `default_lanes` aims for (see there)."""

Fragment = tuple[int, int, bool]
"""(producer task, bits, through a scalar projection) of one projected piece of an input."""
GLOBAL = -1
"""The producer of a model input's fragments: global memory (a baseline load, no edge)."""
UNKNOWN_OUTPUT = -8
"""Output bits of a TASK (its output size is not given): `ComputeGraph.output_bytes` -1."""
_ONE_TASK_PER_LANE = (OpKind.VECTOR, OpKind.TRANSPOSE, OpKind.CONCAT)
LANED_KINDS = (*_ONE_TASK_PER_LANE, OpKind.WEIGHTED)
"""Operations whose rows are split into lanes (the others make one task or none)."""


def _ceil_div(numerator: int, denominator: int) -> int:
    return -(-numerator // denominator)


def _lane_bounds(rows: int, lanes: int) -> list[int]:
    """Row boundaries of the ``min(lanes, rows)`` lanes of a ``rows``-row operation."""
    count = min(lanes, rows)
    return [i * rows // count for i in range(count + 1)]


def _tiling(op: Operation, target: SchedulingTarget, where: str) -> WeightTiling:
    """The target's array groups for a WEIGHTED operation, after checking its matrix."""
    if op.weight_height < 1 or op.weight_width < 1 or op.mvm_per_row < 1:
        raise InvalidInputError(
            f"{where}: weighted operation {op.name!r} needs positive weight_height, "
            f"weight_width and mvm_per_row, got {op.weight_height}, {op.weight_width}, "
            f"{op.mvm_per_row}"
        )
    return target.weight_tiling(op.weight_height, op.weight_width, op.bits)


def _tasks_per_lane(op: Operation, target: SchedulingTarget, where: str) -> int:
    """Tasks one lane of a WEIGHTED, VECTOR, TRANSPOSE or CONCAT operation lowers to."""
    if op.kind in _ONE_TASK_PER_LANE:
        return 1
    tiling = _tiling(op, target, where)
    slices, blocks = len(tiling.row_slices), len(tiling.column_blocks)
    return slices * blocks + (blocks if slices > 1 else 0)


def _laned(workload: Workload, target: SchedulingTarget) -> tuple[int, list[tuple[int, int]]]:
    """(tasks of TASK operations, ``(rows, tasks_per_lane)`` of every laned operation)."""
    where = workload.source or workload.name
    fixed = 0
    laned: list[tuple[int, int]] = []
    for op in workload.operations:
        if op.kind is OpKind.TASK:
            fixed += 1
        elif op.kind in LANED_KINDS:
            laned.append((op.rows, _tasks_per_lane(op, target, where)))
    return fixed, laned


def task_count(workload: Workload, target: SchedulingTarget, lanes: int) -> int:
    """Tasks `lower` makes with ``lanes``, counted from the tiling without lowering.

    ``fixed + sum(min(L, rows_op) * tasks_per_lane_op)``, ``O(operations)``.
    """
    fixed, laned = _laned(workload, target)
    return fixed + sum(min(lanes, rows) * per_lane for rows, per_lane in laned)


def max_lanes(workload: Workload) -> int:
    """Most lanes that make a difference: the rows of the tallest laned operation (1 if none).

    A larger ``lanes`` gives the same graph.
    """
    return max((op.rows for op in workload.operations if op.kind in LANED_KINDS), default=1)


def default_lanes(workload: Workload, target: SchedulingTarget) -> int:
    """The largest lane count whose graph has at most `TASK_BUDGET` tasks (at least 1).

    Lanes trade graph size for parallelism: more lanes expose more independent
    tasks to spread over cores, but every scheduler's time grows with the task
    count, and lanes beyond an operation's rows add nothing. The task count of
    ``L`` lanes is computed exactly from the target's tiling without lowering
    (`task_count`), and the largest ``L`` up to the tallest operation's rows that
    fits the budget is taken. Small models
    therefore get one lane per row (full row parallelism) and large ones fewer,
    coarser lanes; the graph stays within `TASK_BUDGET` tasks unless a single
    lane already exceeds it (then ``1``). 20,000 tasks keep the Python heuristics (whose
    work grows like tasks x cores) within seconds on 168-core targets.
    """
    fixed, laned = _laned(workload, target)
    if not laned:
        return 1

    def tasks(lanes: int) -> int:
        return fixed + sum(min(lanes, rows) * per_lane for rows, per_lane in laned)

    low, high = 1, max(rows for rows, _ in laned)
    while low < high:
        middle = (low + high + 1) // 2
        if tasks(middle) <= TASK_BUDGET:
            low = middle
        else:
            high = middle - 1
    return low


def lower(workload: Workload, target: SchedulingTarget, lanes: int | None = None) -> ComputeGraph:
    """Decompose ``workload`` into the tasks, edges and weights of ``target``.

    Parameters
    ----------
    workload:
        Operations in topological order.
    target:
        Prices every task (`SchedulingTarget.execution_ns`) and tiles weights.
    lanes:
        Maximum lanes per operation; `default_lanes` when omitted.

    Returns
    -------
    ComputeGraph
        Tasks in operation order, then lane, then array group (row slice, column
        block) and reductions; edges sorted by (consumer, producer) with the bytes of
        parallel edges summed; weights numbered in order of first use.
    """
    if lanes is None:
        lanes = default_lanes(workload, target)
    where = workload.source or workload.name
    if lanes < 1:
        raise InvalidInputError(f"{where}: lanes must be >= 1, got {lanes}")
    tasks = task_count(workload, target, lanes)
    if tasks > MAX_TASKS:
        raise InvalidInputError(
            f"{where}: {lanes} lanes per operation make {tasks:,} tasks, above the limit of "
            f"{MAX_TASKS:,} (docs/cli.md, Limits); choose fewer lanes"
        )
    lowering = _Lowering(workload, target, lanes)
    for op in workload.operations:
        lowering.add(op)
    return lowering.graph()


@dataclass(frozen=True)
class _Publisher:
    """Which task publishes each (lane, column block) of an operation's output."""

    bounds: list[int]
    """Lane row boundaries (length lanes + 1)."""
    tasks: list[list[int]]
    """Publishing task per lane and column block (`GLOBAL` for a model input)."""
    block_widths: tuple[int, ...]
    row_bits: int
    """Bits of one output row (elements x element bits, not rounded)."""

    def fragments(self, lo: int, hi: int, scalar: bool = False) -> list[Fragment]:
        """Each producer fragment overlapping rows ``[lo, hi)`` with its bits.

        ``scalar`` marks them as read through a scalar projection.
        """
        found: list[Fragment] = []
        lane = bisect.bisect_right(self.bounds, lo) - 1
        while lane < len(self.tasks) and self.bounds[lane] < hi:
            overlap = min(hi, self.bounds[lane + 1]) - max(lo, self.bounds[lane])
            found += self.lane_fragments(lane, overlap * self.row_bits, scalar)
            lane += 1
        return found

    def lane_fragments(self, lane: int, bits: int, scalar: bool = False) -> list[Fragment]:
        """The fragments of ``bits`` read from ``lane``: with several column blocks, a
        block carries its share of the columns, rounded up to whole bits."""
        if len(self.block_widths) == 1:
            return [(self.tasks[lane][0], bits, scalar)]
        width = sum(self.block_widths)
        return [
            (task, _ceil_div(bits * block, width), scalar)
            for task, block in zip(self.tasks[lane], self.block_widths, strict=True)
        ]


class _Lowering:
    """Accumulates tasks, weights and edges while operations are added in order."""

    def __init__(self, workload: Workload, target: SchedulingTarget, lanes: int) -> None:
        self.workload = workload
        self.target = target
        self.lanes = lanes
        self.where = workload.source or workload.name
        self.ops = workload.by_name()
        self.published: dict[str, _Publisher] = {}
        self.names: list[str] = []
        self.cost: list[int] = []
        self.nominal: list[int] = []
        self.operation: list[int] = []
        self.lane: list[int] = []
        self.task_weights: list[tuple[int, ...]] = []
        self.output_bits: list[int] = []
        self.payload_bits: list[int] = []
        self.work: list[Work] = []
        self.operation_names: list[str] = []
        self.operation_types: list[str] = []
        self.weight_ids: dict[str, int] = {}
        self.weight_size: list[int] = []
        self.src: list[int] = []
        self.dst: list[int] = []
        self.nbytes: list[int] = []
        self.kind: list[int] = []
        self.memory: list[tuple[int, int, bool, int]] = []
        """Baseline requests: (task, bytes, write, piece)."""
        self.pieces: dict[tuple[str, int, int], int] = {}
        """The piece of each broadcast constant's column block: (operation, constant, block)."""
        self.unshared = 0
        """Pieces read by one request only, counted down from -1 (`baseline_request`)."""
        self.prices: dict[Work, int] = {}
        self.projected: dict[tuple[str, int, int], list[Fragment]] = {}
        """Fragments behind rows [a, b) of an input, memoised: ALL windows repeat them."""

    # -- building blocks -------------------------------------------------------

    def price(self, work: Work) -> int:
        """The target's price of ``work``, memoised per work description."""
        price = self.prices.get(work)
        if price is None:
            price = self.prices[work] = self.target.execution_ns(work)
        return price

    def task(
        self,
        name: str,
        work: Work,
        lane: int,
        output_bits: int,
        weights: tuple[int, ...] = (),
        nominal: Work | None = None,
    ) -> int:
        """Append a task priced by the target; ``nominal`` prices its priority if it differs."""
        op = self.ops[self.operation_names[-1]]
        self.names.append(name)
        self.cost.append(self.price(work))
        self.nominal.append(self.cost[-1] if nominal is None else self.price(nominal))
        self.work.append(work)
        self.operation.append(len(self.operation_names) - 1)
        self.lane.append(lane)
        self.task_weights.append(weights)
        self.output_bits.append(output_bits)
        self.payload_bits.append(op.bits)
        return len(self.names) - 1

    def weight(self, op: Operation, name: str, size: int) -> int:
        """Id of the resident weight ``name``, created on first use."""
        known = self.weight_ids.get(name)
        if known is None:
            if size < 0:
                raise InvalidInputError(
                    f"{self.where}: operation {op.name!r}: weight {name!r} has negative size {size}"
                )
            self.weight_ids[name] = known = len(self.weight_size)
            self.weight_size.append(size)
        elif self.weight_size[known] != size:
            raise InvalidInputError(
                f"{self.where}: operation {op.name!r}: weight {name!r} has size {size} but "
                f"size {self.weight_size[known]} elsewhere"
            )
        return known

    def edges(self, fragments: Sequence[Fragment], consumer: int, direct: bool = False) -> None:
        """Edges from the producers of ``fragments`` (bits) to ``consumer``, in whole bytes.

        A model input's fragment is a baseline load of ``consumer`` instead. With
        ``direct`` (an assembly consumer), a fragment that is its producer's whole
        output is a direct receive.
        """
        for producer, bits, scalar in fragments:
            nbytes = _ceil_div(bits, 8)
            if producer == GLOBAL:
                self.baseline_request(consumer, nbytes, write=False)
                continue
            self.src.append(producer)
            self.dst.append(consumer)
            self.nbytes.append(nbytes)
            if scalar:
                self.kind.append(SCALAR_PROJECTION)
            elif direct and bits == self.output_bits[producer]:
                self.kind.append(DIRECT_RECEIVE)
            else:
                self.kind.append(PLAIN)

    def constants(
        self,
        op: Operation,
        lo: int,
        hi: int,
        publishers: Sequence[int],
        widths: Sequence[int] = (1,),
    ) -> None:
        """Baseline loads of ``op``'s constants for output rows ``[lo, hi)``.

        A constant with the operation's rows is read in its lane's share, any other
        whole, as a piece every lane shares; with several column blocks
        (``widths``) each publisher loads its block's share.
        """
        for k, shape in enumerate(op.constants):
            elements = math.prod(shape)
            laned = len(shape) >= 2 and rows_align(shape, op.output_shape)
            if laned:
                elements = elements // op.rows * (hi - lo)
            bits = elements * op.bits
            for block, (task, width) in enumerate(zip(publishers, widths, strict=True)):
                share = _ceil_div(_ceil_div(bits * width, sum(widths)), 8)
                piece = (
                    None if laned else self.pieces.setdefault((op.name, k, block), len(self.pieces))
                )
                self.baseline_request(task, share, write=False, piece=piece)

    def baseline_request(
        self, task: int, nbytes: int, write: bool, piece: int | None = None
    ) -> None:
        """Record a baseline request of ``task``; without ``piece`` it is a piece of its own."""
        if piece is None:
            self.unshared -= 1
            piece = self.unshared
        self.memory.append((task, nbytes, write, piece))

    # -- dependencies ----------------------------------------------------------

    def sources(
        self, name: str, lo: int, hi: int, scalar: bool = False
    ) -> list[tuple[_Publisher, int, int, bool]]:
        """Task-producing operations and row ranges behind rows ``[lo, hi)`` of ``name``.

        Views are collapsed: a SAME-window view onto a source with as many rows keeps
        the rows; a scalar-index view (a SLIDING window of stride 0, a Gather of one
        lane row) projects onto its row and marks the read as a scalar projection;
        any other view needs all rows of its source (conservative, as the seeds keep
        complete producer dependencies for unproven projections). A model input
        publishes `GLOBAL` fragments.
        """
        op = self.ops[name]
        if op.kind is OpKind.VIEW:
            found: list[tuple[_Publisher, int, int, bool]] = []
            for source, window in zip(op.inputs, op.windows, strict=True):
                rows = self.ops[source].rows
                if window.kind is WindowKind.SAME and rows == op.rows:
                    found += self.sources(source, lo, hi, scalar)
                elif window.kind is WindowKind.SLIDING and window.stride == 0:
                    first, last = window.input_rows(lo, hi, rows)
                    found += self.sources(source, first, last, True) if first < last else []
                else:
                    found += self.sources(source, 0, rows, scalar)
            return found
        publisher = self.published.get(name)
        return [] if publisher is None else [(publisher, lo, hi, scalar)]

    def traced(self, name: str, flat: np.ndarray) -> list[Fragment] | None:
        """Producer fragments holding the elements ``flat`` (flat indices) of ``name``.

        Follows FLAT and TAKE views element by element to the publishing operation
        and charges each of its lanes the elements read there
        (`raptor_cp.workload.projection`); a lane with none gives no fragment. None
        when a view on the way is unproven (OPAQUE, several inputs, or shapes that
        do not fit its kind) or a scalar projection, which the row path
        (`sources`) keeps apart.
        """
        op = self.ops[name]
        if op.kind is OpKind.VIEW:
            scalar = any(w.kind is WindowKind.SLIDING for w in op.windows)
            if len(op.inputs) != 1 or op.view is ViewKind.OPAQUE or scalar:
                return None
            source = self.ops[op.inputs[0]]
            shape = source.output_shape
            taken = shape[op.axis] if op.view is ViewKind.TAKE and op.axis < len(shape) else 1
            if op.elements * taken != source.elements:
                return None  # the view's shapes do not fit its kind: keep it unproven
            if op.view is ViewKind.TAKE:
                flat = taken_source(flat, shape, op.axis, op.take_index)
            return self.traced(source.name, flat)
        publisher = self.published.get(name)
        if publisher is None:
            return []
        rows = lane_rows_of(flat, op.output_shape)
        lanes = np.searchsorted(publisher.bounds, rows, side="right") - 1
        counts = np.bincount(lanes, minlength=len(publisher.tasks)).tolist()
        element_bits = publisher.row_bits // op.row_elements
        found: list[Fragment] = []
        for lane, count in enumerate(counts):
            if count:
                found += publisher.lane_fragments(lane, count * element_bits)
        return found

    def input_fragments(self, name: str, window: RowWindow, lo: int, hi: int) -> list[Fragment]:
        """Producer fragments that consumer rows ``[lo, hi)`` read from input ``name``.

        A read through a view is projected element by element when the view chain
        is proven and the read has at most `EXACT_ELEMENTS` elements (`traced`),
        otherwise row by row (`sources`).
        """
        op = self.ops[name]
        first, last = window.input_rows(lo, hi, op.rows)
        if first >= last:
            return []
        found = self.projected.get((name, first, last))
        if found is None:
            if op.kind is OpKind.VIEW and read_size(op.output_shape, first, last) <= EXACT_ELEMENTS:
                found = self.traced(name, row_reads(op.output_shape, first, last))
            if found is None:
                found = [
                    fragment
                    for publisher, a, b, scalar in self.sources(name, first, last)
                    for fragment in publisher.fragments(a, b, scalar)
                ]
            self.projected[name, first, last] = found
        return found

    def fragments(self, op: Operation, lo: int, hi: int) -> list[Fragment]:
        """Producer fragments that ``op``'s rows ``[lo, hi)`` read from all its inputs.

        A TRANSPOSE that moves the lane axis (an ALL window) reads exactly the input
        elements its rows copy, when that read is small enough to trace.
        """
        found: list[Fragment] = []
        for name, window in zip(op.inputs, op.windows, strict=True):
            exact = None
            moved = op.kind is OpKind.TRANSPOSE and window.kind is WindowKind.ALL
            if moved and read_size(op.output_shape, lo, hi) <= EXACT_ELEMENTS:
                exact = self.traced(name, transposed_reads(op.move_shapes[0], op.perm, lo, hi))
            found += self.input_fragments(name, window, lo, hi) if exact is None else exact
        return found

    # -- operations ------------------------------------------------------------

    def add(self, op: Operation) -> None:
        if op.kind is OpKind.INPUT:
            self.published[op.name] = _Publisher(
                [0, op.rows], [[GLOBAL]], (1,), op.row_elements * op.bits
            )
            return
        if op.kind is OpKind.VIEW:
            return
        self.operation_names.append(op.name)
        self.operation_types.append(op.op_type)
        if op.kind is OpKind.WEIGHTED:
            self.add_weighted(op)
        elif op.kind is OpKind.TASK:
            self.add_task(op)
        else:
            self.add_laned(op)

    def add_weighted(self, op: Operation) -> None:
        tiling = _tiling(op, self.target, self.where)
        slices, blocks = tiling.row_slices, tiling.column_blocks
        crossbars = tiling.crossbars_per_block
        weights = [
            [self.weight(op, f"{op.name}/ag{s}.{c}", crossbars[c]) for c in range(len(blocks))]
            for s in range(len(slices))
        ]
        bounds = _lane_bounds(op.rows, self.lanes)
        width = sum(blocks)
        published: list[list[int]] = []
        for lane in range(len(bounds) - 1):
            lo, hi = bounds[lane], bounds[lane + 1]
            mvms = (hi - lo) * op.mvm_per_row
            fragment_bits = (hi - lo) * op.row_elements * op.bits
            shares = [_ceil_div(fragment_bits * b, width) for b in blocks]
            incoming = self.fragments(op, lo, hi)
            by_height: dict[int, list[Fragment]] = {}  # slices of equal height read equal shares
            groups: list[list[int]] = []
            for s, height in enumerate(slices):
                share = by_height.get(height)
                if share is None:
                    share = by_height[height] = [
                        (src, _ceil_div(b * height, op.weight_height), scalar)
                        for src, b, scalar in incoming
                    ]
                row: list[int] = []
                for c, block in enumerate(blocks):
                    work = MatrixWork(mvms, height, block, crossbars[c], op.bits)
                    partial = mvms * block * op.bits if len(slices) > 1 else shares[c]
                    name = f"{op.name}/l{lane}/ag{s}.{c}"
                    row.append(self.task(name, work, lane, partial, (weights[s][c],)))
                    self.edges(share, row[-1])
                groups.append(row)
            if len(slices) == 1:
                published.append(groups[0])
            else:
                sums: list[int] = []
                for c, block in enumerate(blocks):
                    work = VectorWork((len(slices) - 1) * mvms * block, 2, op.bits)
                    sums.append(self.task(f"{op.name}/l{lane}/sum.{c}", work, lane, shares[c]))
                    partial = mvms * block * op.bits
                    self.edges([(group[c], partial, False) for group in groups], sums[-1])
                published.append(sums)
            self.constants(op, lo, hi, published[-1], blocks)
        self.published[op.name] = _Publisher(bounds, published, blocks, op.row_elements * op.bits)

    def add_laned(self, op: Operation) -> None:
        """VECTOR, TRANSPOSE and CONCAT operations: one task per lane."""
        bounds = _lane_bounds(op.rows, self.lanes)
        published: list[list[int]] = []
        for lane in range(len(bounds) - 1):
            lo, hi = bounds[lane], bounds[lane + 1]
            work, nominal = self.laned_work(op, lo, hi)
            bits = (hi - lo) * op.row_elements * op.bits
            task = self.task(f"{op.name}/l{lane}", work, lane, bits, nominal=nominal)
            self.edges(self.fragments(op, lo, hi), task, direct=op.kind is OpKind.CONCAT)
            self.constants(op, lo, hi, [task])
            published.append([task])
        self.published[op.name] = _Publisher(bounds, published, (1,), op.row_elements * op.bits)

    def laned_work(self, op: Operation, lo: int, hi: int) -> tuple[Work, Work | None]:
        """The physical work of output rows ``[lo, hi)`` and its nominal work if different."""
        if op.kind is OpKind.VECTOR:
            return VectorWork((hi - lo) * op.vector_per_row, op.vector_operands, op.bits), None
        if op.kind is OpKind.TRANSPOSE:
            blocks, strided = transpose_runs(op.move_shapes[0], op.perm, lo, hi)
            bulk = MoveWork(((1, (hi - lo) * op.row_elements),), op.bits)
            return MoveWork(blocks, op.bits, strided), bulk
        pieces = concat_blocks(op.move_shapes, op.axis, lo, hi)
        blocks = tuple(pair for piece in pieces for pair in piece if pair[0] and pair[1])
        return MoveWork(blocks, op.bits), None

    def add_task(self, op: Operation) -> None:
        """One task; ``input_bytes[k]`` is split over input ``k``'s producer fragments.

        The split is proportional to the fragments' projected sizes, rounded up, so
        a single producer task (every STG graph) receives exactly ``input_bytes[k]``.
        """
        if op.input_bytes and len(op.input_bytes) != len(op.inputs):
            raise InvalidInputError(
                f"{self.where}: operation {op.name!r}: {len(op.inputs)} inputs but "
                f"{len(op.input_bytes)} input_bytes"
            )
        weights = tuple(dict.fromkeys(self.weight(op, name, size) for name, size in op.resident))
        task = self.task(op.name, FixedWork(op.task_cost), 0, UNKNOWN_OUTPUT, weights)
        for k, (name, window) in enumerate(zip(op.inputs, op.windows, strict=True)):
            incoming = self.input_fragments(name, window, 0, op.rows)
            wanted = 8 * op.input_bytes[k] if op.input_bytes else 0
            total = sum(b for _, b, _ in incoming)
            split = [(src, _ceil_div(wanted * b, total), sc) for src, b, sc in incoming]
            self.edges(split, task)
        self.published[op.name] = _Publisher(
            [0, op.rows], [[task]], (1,), op.row_elements * op.bits
        )

    def outputs(self) -> None:
        """Baseline stores of the function outputs: operations no operation reads."""
        read = {name for op in self.workload.operations for name in op.inputs}
        for op in self.workload.operations:
            if op.name in read or op.kind is OpKind.INPUT:
                continue
            for publisher, lo, hi, _ in self.sources(op.name, 0, op.rows):
                for task, bits, _ in publisher.fragments(lo, hi):
                    if task != GLOBAL:
                        self.baseline_request(task, _ceil_div(bits, 8), write=True)

    # -- result ----------------------------------------------------------------

    def graph(self) -> ComputeGraph:
        """The finished graph; parallel edges merged, edges sorted by (dst, src)."""
        self.outputs()
        n = len(self.names)
        src = np.asarray(self.src, dtype=np.int64)
        dst = np.asarray(self.dst, dtype=np.int64)
        nbytes = np.asarray(self.nbytes, dtype=np.int64)
        kind = np.asarray(self.kind, dtype=np.int64)
        if src.size:
            key = dst * n + src
            order = np.argsort(key, kind="stable")
            key, nbytes, kind = key[order], nbytes[order], kind[order]
            starts = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
            key = key[starts]
            nbytes = np.add.reduceat(nbytes, starts)
            # Merged reads: a scalar part keeps the store apart; direct only if all parts are.
            scalar = np.maximum.reduceat(kind == SCALAR_PROJECTION, starts)
            direct = np.minimum.reduceat(kind == DIRECT_RECEIVE, starts)
            kind = np.where(scalar, SCALAR_PROJECTION, np.where(direct, DIRECT_RECEIVE, PLAIN))
            src, dst = key % n, key // n
        memory = sorted(self.memory)
        return ComputeGraph(
            names=tuple(self.names),
            cost=np.asarray(self.cost, dtype=np.int64),
            edge_src=src,
            edge_dst=dst,
            edge_bytes=nbytes,
            task_weights=tuple(self.task_weights),
            weight_size=np.asarray(self.weight_size, dtype=np.int64),
            weight_names=tuple(self.weight_ids),
            operation=np.asarray(self.operation, dtype=np.int64),
            lane=np.asarray(self.lane, dtype=np.int64),
            operation_names=tuple(self.operation_names),
            name=self.workload.name,
            nominal_cost=np.asarray(self.nominal, dtype=np.int64),
            edge_kind=kind,
            output_bytes=np.asarray([_ceil_div(b, 8) for b in self.output_bits], np.int64),
            # UNKNOWN_OUTPUT rounds to -1: "unknown, estimate from the reads".
            payload_bits=np.asarray(self.payload_bits, dtype=np.int64),
            operation_types=tuple(self.operation_types),
            baseline=BaselineMemory(
                np.asarray([m[0] for m in memory], dtype=np.int64),
                np.asarray([m[1] for m in memory], dtype=np.int64),
                np.asarray([m[2] for m in memory], dtype=bool),
                np.asarray([m[3] for m in memory], dtype=np.int64),
            ),
            work=tuple(self.work),
        )
