"""Lower per-core items to pimsim-nn instructions, with local-memory addresses.

Input: each core's `Item` list (`raptor_cp.emit.order`), the lowered graph with
each task's work description, and the `PimTarget`. Output: a `LoweredProgram`,
one `CoreProgram` per active core plus the ``array_group_map``.

What each item becomes (register use below; an ``sldi`` is written only when a
register does not already hold the value):

* a **matrix task** (``MatrixWork``): ``setbw`` when the widths change
  (``ibiw`` = its input width, ``obiw`` = its output width; so before the
  core's first ``mvmul``), then per product ``sldi r3, out + i × stride`` and
  ``mvmul rd=r3 rs1=r4 group=g mbiw=bits``. ``g`` is the array group of the
  task's resident weight on this core: each core's ``array_group_map`` lists
  its distinct weights in order of first use with their crossbar counts, as
  the schedule placed them. ``stride`` is the bytes one ``mvmul`` writes
  (``floor(cell_precision × xbar_cols / bits) × out_B × crossbars``), ``r4``
  the task's first input buffer;
* a **vector task** (``VectorWork``): ``operands - 1`` ops (one for a single
  operand) of ``len = elements`` -- ``vvadd``/``vvmul`` (two operands, written
  at the input/output width) or ``vrelu``/``vsigm`` (one) -- reading the task's
  first two input buffers (``r6``, ``r7``) and writing its output (``r5``).
  Priced by the same formula, this is the task's cost exactly;
* a **move task** (``MoveWork``: a transpose's or concatenation's runs): one
  ``lmv`` per contiguous run (``len`` = its bytes: a local read and write) or
  one ``vmv`` per strided run (``len`` = its elements: read, vector steps,
  write), as the target prices them;
* a task of an operator the target does not time (`StepTiming.untimed_operations`:
  Softmax, whose ``vsoftmax`` pimsim-nn f7446df rejects) gets no instruction,
  as its prediction gets no time;
* **send/recv** of an edge: ``sldi r2, buffer`` and ``send rd=r2 rs1=r2
  core=peer size=bytes`` (the producer's output buffer) or ``recv rd=r2
  core=peer size=bytes`` (a receive buffer);
* **ld/st** (pipeline stage boundaries, and the baseline requests: network
  input and constant loads before their task, output stores after it): the
  global address in ``r0``/``r1`` (high/low word), the local buffer in ``r2``;
  publications (each of their copies, `raptor_cp.emit.order.unrolled`)
  and baseline requests get consecutive global addresses in order of first use;
* **sync/wait**: ``sync core=peer event_register=e`` and ``wait
  event_register=e wait_value=n``, with the realization's registers renumbered
  densely per destination core (pimsim-nn has 32).

Buffers: each task's output (the larger of what its instructions write -- for
a vector task the graph's output fragment when it knows it, since a
reduction's single op spans all its partial sums -- its publication and its
largest outgoing edge) and one per received or loaded edge;
a task reads its edges' receive/load buffers, or its producers' outputs on the
same core. Their addresses come from `raptor_cp.emit.allocate`. Element-level
layout is not modelled: the products of a matrix task all read its input
buffer's start (the unrolling of sliding windows into input vectors, which
PIMCOMP-NN emits as ``lmv`` copies, is neither priced by the schedule nor
emitted).

Resource limits are candidate-specific backend failures
(`raptor_cp.emit.allocate.BackendResourceError`): local memory, more than 32
event registers on a core, a field beyond 32 bits. A task without matrix,
vector or move work (a workload with fixed costs) cannot be emitted at all
(`InvalidInputError`). Time ``O(N + B log B)`` for ``N`` instructions and ``B``
buffers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from raptor_cp.emit.allocate import BackendResourceError, Buffer, allocate
from raptor_cp.emit.order import CoreItems, Item, ItemKind, unrolled
from raptor_cp.errors import InvalidInputError
from raptor_cp.graph import ComputeGraph
from raptor_cp.pipeline.boundary import publication_bytes
from raptor_cp.targets.base import MatrixWork, MoveWork, VectorWork
from raptor_cp.targets.pim.isa import (
    CODE,
    COLUMN,
    FIELDS,
    INT32,
    LD,
    LMV,
    MVMUL,
    RECV,
    REGISTERS,
    SCALAR,
    SEND,
    SETBW,
    SLDI,
    ST,
    SYNC,
    WAIT,
    CoreProgram,
)
from raptor_cp.targets.pim.target import PimTarget

R_GLOBAL, R_TRANSFER, R_OUT, R_IN, R_VD, R_V1, R_V2 = 0, 2, 3, 4, 5, 6, 7
"""Registers: global address pair (0, 1), transfer buffer, mvmul out/in, vector rd/rs1/rs2."""
VECTOR_OP = {
    (False, False): CODE["vrelu"],
    (False, True): CODE["vsigm"],
    (True, False): CODE["vvadd"],
    (True, True): CODE["vvmul"],
}
"""Opcode of a vector task by (two operands, written at the output width)."""
VMV = CODE["vmv"]
WIDTH = len(FIELDS) + 1
"""Columns of a row under construction: the opcode, then `FIELDS`."""


@dataclass(frozen=True)
class LoweredProgram:
    """The instructions of every active core and what the backend found."""

    core_cnt: int
    array_group_map: dict[int, tuple[int, ...]]
    cores: dict[int, CoreProgram]
    local_peak_bytes: dict[int, int]
    """Highest local-memory byte in use on each active core."""
    local_limit_bytes: int
    event_registers: dict[int, int]
    """Event registers each core receives tokens on (cores with none omitted)."""
    global_bytes: int
    """Global memory taken by stored publications."""

    @property
    def instructions(self) -> int:
        return sum(len(p) for p in self.cores.values())


def lower_program(
    graph: ComputeGraph, target: PimTarget, items: CoreItems, copies: int = 1
) -> LoweredProgram:
    """The instructions of ``items`` (module docstring), ``copies`` generations per stream.

    With ``copies`` > 1 every core's stream runs its items that many times, each on
    its own copy of the publications and its own event registers
    (`raptor_cp.emit.order.unrolled`: double buffering); one local-memory
    allocation serves them all, since a generation's buffers are dead at its end.
    """
    if len(graph.work) != graph.num_tasks:
        raise InvalidInputError(
            f"{graph.name}: the graph carries no work descriptions; only lowered workloads "
            "can be emitted"
        )
    chip = target.config.chip
    rounds = unrolled(items, copies)
    registers = _event_registers(rounds)
    global_address, global_bytes = _global_layout(
        rounds, chip.global_memory.data_width, graph.baseline.piece.tolist()
    )
    untimed = target.step_timing().untimed_operations
    lowering = _Lowering(graph, target, global_address, untimed)
    cores: dict[int, CoreProgram] = {}
    groups: dict[int, tuple[int, ...]] = {}
    peaks: dict[int, int] = {}
    for c, core_items in enumerate(items):
        if not core_items:
            continue
        program, group_map, peak = lowering.core(c, core_items, rounds[c], registers)
        if len(program):
            cores[c], groups[c], peaks[c] = program, group_map, peak
    limit = min(chip.core.local_memory.memory_size, 2**31 - 1)
    counts = {d: len(m) for d, m in sorted(registers.items())}
    return LoweredProgram(chip.core_cnt, groups, cores, peaks, limit, counts, global_bytes)


def _event_registers(items: CoreItems) -> dict[int, dict[int, int]]:
    """Per destination core, the realization's registers renumbered 0, 1, ... (sorted)."""
    used: dict[int, set[int]] = {}
    for c, core_items in enumerate(items):
        for item in core_items:
            if item.kind is ItemKind.WAIT:
                used.setdefault(c, set()).add(item.register)
            elif item.kind is ItemKind.SIGNAL:
                used.setdefault(item.peer, set()).add(item.register)
    dense: dict[int, dict[int, int]] = {}
    for core, registers in sorted(used.items()):
        if len(registers) > REGISTERS:
            raise BackendResourceError(
                f"core {core}: needs {len(registers)} event registers for its waits; "
                f"pimsim-nn has {REGISTERS}"
            )
        dense[core] = {r: k for k, r in enumerate(sorted(registers))}
    return dense


GlobalKey = tuple[str, int, int]
"""What a LOAD or STORE addresses: ("publication", producer, copy) or ("baseline", piece, 0)."""


def global_key(item: Item, piece: Sequence[int]) -> GlobalKey:
    """The `GlobalKey` of a STORE or of a baseline LOAD: a baseline request addresses its
    piece (``piece``: `BaselineMemory.piece`), which every core reading it loads."""
    if item.request >= 0:
        return ("baseline", piece[item.request], 0)
    return ("publication", item.task, item.copy)


def _global_layout(
    items: CoreItems, width: int, piece: Sequence[int]
) -> tuple[dict[GlobalKey, int], int]:
    """Global address of every publication and baseline piece, in order of first use."""
    address: dict[GlobalKey, int] = {}
    top = 0
    for core_items in items:
        for item in core_items:
            if item.kind is ItemKind.STORE or (item.kind is ItemKind.LOAD and item.request >= 0):
                key = global_key(item, piece)
                if key not in address:
                    address[key] = top
                    top += -(-max(item.nbytes, 1) // width) * width
    if top > INT32[1]:
        raise BackendResourceError(
            f"stored publications need {top} bytes of global memory, beyond 32-bit addresses"
        )
    return address, top


class _Stream:
    """One core's instruction rows under construction, with its register contents."""

    def __init__(self) -> None:
        self.rows: list[list[int]] = []
        self.blocks: list[np.ndarray] = []
        self.registers: list[int | None] = [None] * REGISTERS
        self.widths: tuple[int, int] | None = None

    def emit(self, op: int, **fields: int) -> None:
        row = [op] + [0] * len(FIELDS)
        for name, value in fields.items():
            row[COLUMN[name] + 1] = value
        self.rows.append(row)

    def load(self, register: int, value: int) -> None:
        """``sldi register, value`` unless the register holds it already."""
        if self.registers[register] != value:
            self.emit(SLDI, rd=register, imm=value)
            self.registers[register] = value

    def precision(self, ibiw: int, obiw: int) -> None:
        if self.widths != (ibiw, obiw):
            self.emit(SETBW, ibiw=ibiw, obiw=obiw)
            self.widths = (ibiw, obiw)

    def block(self, rows: np.ndarray) -> None:
        self._flush()
        self.blocks.append(rows)

    def _flush(self) -> None:
        if self.rows:
            self.blocks.append(np.asarray(self.rows, dtype=np.int64).reshape(-1, WIDTH))
            self.rows = []

    def program(self) -> CoreProgram:
        self._flush()
        rows = np.concatenate(self.blocks) if self.blocks else np.zeros((0, WIDTH), np.int64)
        ops = rows[:, 0]
        scalar = np.isin(ops, list(SCALAR))
        keep = len(ops) - int(np.argmin(scalar[::-1])) if (~scalar).any() else 0
        rows = rows[:keep]  # a core must end with a reorder-buffer op (pimsim-nn hangs else)
        return CoreProgram(rows[:, 0], rows[:, 1:])


class _Lowering:
    """Per-core lowering state shared by all cores of one program."""

    def __init__(
        self,
        graph: ComputeGraph,
        target: PimTarget,
        global_address: dict[GlobalKey, int],
        untimed: frozenset[str],
    ) -> None:
        self.graph = graph
        self.target = target
        self.global_address = global_address
        self.untimed = untimed
        chip = target.config.chip
        self.matrix = chip.core.matrix
        self.width = chip.core.local_memory.data_width
        self.limit = chip.core.local_memory.memory_size
        self.published = publication_bytes(graph).tolist()
        known = graph.output_bytes
        self.known_output = [-1] * graph.num_tasks if known is None else known.tolist()
        self.src = graph.edge_src.tolist()
        self.dst = graph.edge_dst.tolist()
        self.nbytes = graph.edge_bytes.tolist()
        self.out_edges = [graph.successor_edges(t).tolist() for t in range(graph.num_tasks)]
        self.in_edges = [graph.predecessor_edges(t).tolist() for t in range(graph.num_tasks)]
        base = graph.baseline
        self.piece = base.piece.tolist()
        self.read_pieces: dict[int, list[int]] = {}
        """The baseline pieces each task reads (its core loads each once, `with_baseline`)."""
        reads = ~base.write
        for task, piece in zip(base.task[reads].tolist(), base.piece[reads].tolist(), strict=True):
            self.read_pieces.setdefault(task, []).append(piece)

    # -- sizes -------------------------------------------------------------------

    def stride(self, work: MatrixWork) -> int:
        """Bytes one ``mvmul`` writes (``ArrayGroup``: the whole group's weight columns)."""
        columns = self.matrix.cell_precision * self.matrix.xbar_size[1] // work.bits
        return columns * -(-work.written_bits // 8) * work.crossbars

    def output_bytes(self, task: int) -> int:
        work = self.graph.work[task]
        if isinstance(work, MatrixWork):
            written = work.mvms * self.stride(work)
        elif isinstance(work, VectorWork) and self.known_output[task] >= 0:
            written = self.known_output[task]  # a reduction's op spans its partial sums
        elif isinstance(work, VectorWork):
            written = work.elements * -(-work.written_bits // 8)
        elif isinstance(work, MoveWork):
            written = -(-work.elements * work.bits // 8)
        else:
            raise InvalidInputError(
                f"{self.graph.name}: task {self.graph.names[task]!r} has a fixed cost from the "
                "workload; pimsim-nn instructions need matrix, vector or move work"
            )
        largest_edge = max((self.nbytes[e] for e in self.out_edges[task]), default=0)
        return max(written, self.published[task], largest_edge)

    # -- one core ----------------------------------------------------------------

    def core(
        self, c: int, items: list[Item], rounds: list[Item], registers: dict[int, dict[int, int]]
    ) -> tuple[CoreProgram, tuple[int, ...], int]:
        """Core ``c``'s instructions for ``rounds`` (its ``items`` unrolled, one generation
        per publication copy), with local buffers allocated over one generation's
        ``items``: a generation's buffers are dead at its end, so every copy reuses them."""
        graph = self.graph
        received = {item.edge for item in items if item.kind in (ItemKind.RECV, ItemKind.LOAD)}
        tasks = {item.task for item in items if item.kind is ItemKind.TASK}
        uses: dict[str, list[int]] = {}
        sizes: dict[str, int] = {}

        def use(name: str, position: int, nbytes: int) -> None:
            span = uses.setdefault(name, [position, position])
            span[1] = position
            sizes[name] = nbytes

        inputs: dict[int, list[str]] = {}
        for p, item in enumerate(items):
            kind = item.kind
            if kind is ItemKind.TASK:
                t = item.task
                use(f"out:{t}", p, self.output_bytes(t))
                names = []
                for e in self.in_edges[t]:
                    if e in received:
                        names.append(f"in:{e}")
                    elif self.src[e] in tasks:
                        names.append(f"out:{self.src[e]}")
                    else:
                        raise AssertionError(f"edge {e} reaches core {c} by no transfer")
                names += [f"base:{piece}" for piece in self.read_pieces.get(t, ())]
                for name in names:
                    use(name, p, sizes.get(name, 0))
                inputs[t] = names
            elif kind is ItemKind.LOAD and item.request >= 0:
                use(f"base:{self.piece[item.request]}", p, item.nbytes)
            elif kind in (ItemKind.SEND, ItemKind.STORE):
                producer = self.src[item.edge] if kind is ItemKind.SEND else item.task
                use(f"out:{producer}", p, self.output_bytes(producer))
            elif kind in (ItemKind.RECV, ItemKind.LOAD):
                use(f"in:{item.edge}", p, item.nbytes)
        buffers = [Buffer(name, sizes[name], first, last) for name, (first, last) in uses.items()]
        allocation = allocate(buffers, self.width, self.limit, c)
        address = allocation.address

        stream = _Stream()
        weights: dict[int, int] = {}
        crossbars: list[int] = []
        for item in rounds:
            kind = item.kind
            if kind is ItemKind.TASK:
                t = item.task
                work = graph.work[t]
                out = address[f"out:{t}"]
                sources = [address[name] for name in inputs[t]] or [out]
                if isinstance(work, MatrixWork):
                    (w,) = graph.task_weights[t]
                    if w not in weights:
                        weights[w] = len(crossbars)
                        crossbars.append(int(graph.weight_size[w]))
                    first, stop = item.part if item.part[1] else (0, work.mvms)
                    self.matrix_task(stream, work, weights[w], out, sources[0], t, first, stop)
                elif graph.operation_type(t) in self.untimed:
                    continue
                elif isinstance(work, VectorWork):
                    self.vector_task(stream, work, out, sources, t)
                else:
                    assert isinstance(work, MoveWork)
                    self.move_task(stream, work, out, sources[0])
            elif kind is ItemKind.SEND:
                stream.load(R_TRANSFER, address[f"out:{self.src[item.edge]}"])
                stream.emit(SEND, rd=R_TRANSFER, rs1=R_TRANSFER, core=item.peer, size=item.nbytes)
            elif kind is ItemKind.RECV:
                stream.load(R_TRANSFER, address[f"in:{item.edge}"])
                stream.emit(RECV, rd=R_TRANSFER, core=item.peer, size=item.nbytes)
            elif kind in (ItemKind.LOAD, ItemKind.STORE):
                where = (
                    self.global_address[global_key(item, self.piece)]
                    if item.request >= 0 or (kind is ItemKind.STORE)
                    else self.global_address[("publication", self.src[item.edge], item.copy)]
                )
                stream.load(R_GLOBAL, where >> 32)
                stream.load(R_GLOBAL + 1, where & 0xFFFFFFFF)
                if kind is ItemKind.LOAD:
                    local = (
                        f"base:{self.piece[item.request]}"
                        if item.request >= 0
                        else f"in:{item.edge}"
                    )
                    stream.load(R_TRANSFER, address[local])
                    stream.emit(LD, rd=R_TRANSFER, rs1=R_GLOBAL, size=item.nbytes)
                else:
                    stream.load(R_TRANSFER, address[f"out:{item.task}"])
                    stream.emit(ST, rd=R_GLOBAL, rs1=R_TRANSFER, size=item.nbytes)
            elif kind is ItemKind.SIGNAL:
                register = registers[item.peer][item.register]
                stream.emit(SYNC, core=item.peer, event_register=register)
            else:
                register = registers[c][item.register]
                stream.emit(WAIT, event_register=register, wait_value=item.count)
        return stream.program(), tuple(crossbars), allocation.peak_bytes

    def matrix_task(
        self,
        stream: _Stream,
        work: MatrixWork,
        group: int,
        out: int,
        source: int,
        task: int,
        first: int,
        stop: int,
    ) -> None:
        """Products ``[first, stop)`` of a matrix task: ``sldi`` + ``mvmul`` each."""
        count = stop - first
        if count < 1:
            return
        stream.precision(work.read_bits, work.written_bits)
        stream.load(R_IN, source)
        stride = self.stride(work)
        last = out + (stop - 1) * stride
        if last > INT32[1]:
            raise BackendResourceError(
                f"task {self.graph.names[task]!r}: output address {last} beyond 32 bits"
            )
        rows = np.zeros((2 * count, WIDTH), dtype=np.int64)
        rows[0::2, 0] = SLDI
        rows[0::2, 1 + COLUMN["rd"]] = R_OUT
        rows[0::2, 1 + COLUMN["imm"]] = out + stride * np.arange(first, stop, dtype=np.int64)
        rows[1::2, 0] = MVMUL
        rows[1::2, 1 + COLUMN["rd"]] = R_OUT
        rows[1::2, 1 + COLUMN["rs1"]] = R_IN
        rows[1::2, 1 + COLUMN["group"]] = group
        rows[1::2, 1 + COLUMN["mbiw"]] = work.bits
        if stream.registers[R_OUT] == out + first * stride:
            rows = rows[1:]
        stream.block(rows)
        stream.registers[R_OUT] = last

    def vector_task(
        self, stream: _Stream, work: VectorWork, out: int, sources: list[int], task: int
    ) -> None:
        if work.elements < 1:
            return
        if work.elements > INT32[1]:
            raise BackendResourceError(
                f"task {self.graph.names[task]!r}: a vector op of {work.elements} elements is "
                "beyond pimsim-nn's 32-bit len"
            )
        stream.precision(work.bits, work.written_bits)
        two = work.operands >= 2
        op = VECTOR_OP[two, work.written_bits != work.bits]
        stream.load(R_VD, out)
        stream.load(R_V1, sources[0])
        if two:
            stream.load(R_V2, sources[min(1, len(sources) - 1)])
        for _ in range(max(1, work.operands - 1)):
            stream.emit(op, rd=R_VD, rs1=R_V1, rs2=R_V2 if two else 0, len=work.elements)

    def move_task(self, stream: _Stream, work: MoveWork, out: int, source: int) -> None:
        """One ``lmv`` per contiguous run, one ``vmv`` per strided run (`PimTarget` prices)."""
        stream.load(R_VD, out)
        stream.load(R_V1, source)
        if work.strided:
            stream.precision(work.bits, work.bits)
        rows = []
        for count, elements in work.blocks:
            nbytes = -(-elements * work.bits // 8)
            if nbytes > INT32[1]:
                raise BackendResourceError(f"a move run of {nbytes} bytes is beyond 32 bits")
            row = [0] * WIDTH
            row[1 + COLUMN["rd"]], row[1 + COLUMN["rs1"]] = R_VD, R_V1
            if work.strided:
                row[0], row[1 + COLUMN["len"]] = VMV, elements
            else:
                row[0], row[1 + COLUMN["len"]], row[1 + COLUMN["size"]] = LMV, nbytes, nbytes
            rows += [row] * count
        if rows:
            stream.block(np.asarray(rows, dtype=np.int64))
