"""`PimTarget`: a processing-in-memory chip priced exactly as pimsim-nn charges time.

Every formula below is read from pimsim-nn's source (upstream wangxy-2000/pimsim-nn
0399bc6, HEAPLab fork f7446df); the file each comes from is named where it is used.
Where the simulator has a quirk we reproduce it and say so ("quirk:").

Time. pimsim-nn is a SystemC model with the default 1 ps time resolution: every
``sc_time(x, SC_NS)`` it builds is ``x`` rounded half up to a whole picosecond. We do
the same arithmetic on exact integers (a configured period is the exact binary value
of the JSON double, as a fraction), sum the picoseconds of one operation and round the
sum *up* to whole nanoseconds. With whole-nanosecond periods, as in every shipped
config, every cost is exact; otherwise it is at most 1 ns above the simulator's.

Cost of a lone operation: no queueing at the single-port memories or the per-core
network switches and no pipeline stalls; those contentions are the schedule's business.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from raptor_cp.errors import InvalidConfigError, InvalidInstanceError
from raptor_cp.targets.base import (
    FixedWork,
    MatrixWork,
    MoveWork,
    RealizedScheduleCost,
    RecurrenceRequest,
    TransferTerms,
    VectorWork,
    WeightTiling,
    Work,
)
from raptor_cp.targets.pim.config import PimConfig, check_chip, load_pim_config
from raptor_cp.targets.pim.timing import (
    PS_PER_NS,
    MemoryTiming,
    PimStepTiming,
    ceil_div,
    round_half_up,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from raptor_cp.periodic.steps import Step
    from raptor_cp.targets.pim.artifact import PimInstructionFrontend


def _mesh_latency(hops: int) -> int:
    """pimsim-nn's mesh minimum, 2·hops + 2 ns per flit (COST_MODEL.md, network table)."""
    return 2 * hops + 2


class PimTarget:
    """A pimsim-nn chip behind the `SchedulingTarget` protocol.

    Cores sit row-major on the ``layout`` grid. Network latency per flit comes from the
    config's network table (a pair missing from the table costs 0, as in the simulator)
    or, when the config names no table or the named file does not exist, from the mesh
    model 2·hops + 2 ns per flit, with global memory one hop from every core (4 ns).
    """

    def __init__(self, config: PimConfig, name: str) -> None:
        self._config = config
        self._name = name
        chip = config.chip
        core = chip.core
        self._cores = chip.core_cnt
        self._layout = chip.network.layout
        self._bus_width = chip.network.bus_width
        self._local = MemoryTiming.of(core.local_memory)
        self._global = MemoryTiming.of(chip.global_memory)
        self._matrix_cache: dict[tuple[int, int], int] = {}
        self._endpoint_cache: dict[int, int] = {}
        self._warnings: list[str] = []
        cols = self._layout[1]
        self._row_of = [core // cols for core in range(self._cores)]
        self._col_of = [core % cols for core in range(self._cores)]
        self._network, self._latency, self._gm_latency = self._network_latencies()
        n = self._cores
        # Request flit src->dst plus "receiver ready" flit dst->src (TransferUnit send/recv).
        self._handshake = [
            [self._latency[s][d] + self._latency[d][s] for d in range(n)] for s in range(n)
        ]
        self._pair_latency_sum = sum(
            self._latency[s][d] for s in range(n) for d in range(n) if s != d
        )
        self._handshake_table = np.array(self._handshake, dtype=np.int64).reshape(n, n)
        self._latency_table = np.array(self._latency, dtype=np.int64).reshape(n, n)
        self._max_handshake = max(max(row) for row in self._handshake)
        self._max_latency = max(max(row) for row in self._latency)
        self._gm_latency_sum = sum(self._gm_latency)

    def with_cores(self, cores: int) -> PimTarget:
        """``--cores``: the same cores, ``cores`` of them on a grown (or shrunk) mesh.

        The grid keeps the preset's aspect ratio: ``cols = ceil(sqrt(cores * c / r))``
        and ``rows = ceil(cores / cols)``, so that only the last row may be partial.
        The target is named ``<name>:<cores>``. A configuration with a network
        table cannot be scaled: the table prices only the pairs it lists.
        """
        if self._config.network is not None:
            raise InvalidConfigError(
                f"{self._name}: --cores needs the mesh network model, but this configuration "
                f"has a network table ({self._config.network.source}) for its "
                f"{self._cores} cores"
            )
        rows, cols = self._layout
        new_cols = max(1, min(cores, math.ceil(math.sqrt(cores * cols / rows))))
        layout = (-(-cores // new_cols), new_cols)
        chip = self._config.chip
        network = dataclasses.replace(chip.network, layout=layout)
        config = dataclasses.replace(
            self._config,
            chip=dataclasses.replace(chip, core_cnt=cores, network=network),
            network_file=None,
        )
        check_chip(config.chip, f"{self._name} with --cores {cores}")
        return PimTarget(config, f"{self._name}:{cores}")

    @classmethod
    def from_file(cls, path: str | Path, name: str | None = None) -> PimTarget:
        """Load a pimsim-nn config file; the target is named ``name`` or the path."""
        config = load_pim_config(path)
        return cls(config, str(path) if name is None else name)

    def _network_latencies(self) -> tuple[str, list[list[int]], list[int]]:
        """How the network is modelled, and its ns-per-flit tables core->core, core->memory."""
        n = self._cores
        table = self._config.network
        gm = self._config.chip.global_memory_switch_id
        if table is None:
            named = self._config.network_file
            if named is not None:
                model = f"mesh 2*hops+2 ({named} not found next to config)"
                self._warnings.append(
                    f"{self._config.source}: network file {named} not found next to the "
                    "config; using the mesh model 2*hops+2 ns per flit"
                )
            else:
                model = "mesh 2*hops+2 (no net_config_file_path in config)"
            latency = [[_mesh_latency(self.hops(s, d)) for d in range(n)] for s in range(n)]
            return model, latency, [_mesh_latency(1)] * n
        get = table.latency.get
        latency = [[get((s, d), 0) for d in range(n)] for s in range(n)]
        gm_latency = [get((s, gm), 0) for s in range(n)]
        missing_pairs = sum(
            (s, d) not in table.latency for s in range(n) for d in range(n) if s != d
        )
        if missing_pairs:
            self._warnings.append(
                f"{table.source}: {missing_pairs} of {n * (n - 1)} core pairs have no latency "
                "entry; they cost 0 ns per flit, as in pimsim-nn"
            )
        missing_gm = sum((s, gm) not in table.latency for s in range(n))
        if missing_gm:
            self._warnings.append(
                f"{table.source}: {missing_gm} of {n} cores have no latency entry to global "
                f"memory node {gm}; they cost 0 ns per flit, as in pimsim-nn"
            )
        return f"table {table.source}", latency, gm_latency

    @property
    def name(self) -> str:
        return self._name

    @property
    def cores(self) -> int:
        return self._cores

    @property
    def config(self) -> PimConfig:
        return self._config

    @property
    def warnings(self) -> tuple[str, ...]:
        """What the user should know about how the config was read (CLI prints them)."""
        return tuple(self._warnings)

    def coordinates(self, core: int) -> tuple[int, int]:
        if not 0 <= core < self._cores:
            raise ValueError(f"core {core} outside 0..{self._cores - 1}")
        cols = self._layout[1]
        return (core // cols, core % cols)

    def hops(self, src: int, dst: int) -> int:
        """Manhattan distance on the layout grid (cores row-major); not range-checked (hot path)."""
        rows, cols = self._row_of, self._col_of
        return abs(rows[src] - rows[dst]) + abs(cols[src] - cols[dst])

    def capacity(self, core: int) -> int:
        return self._config.chip.core.matrix.xbar_array_count

    def weight_columns_per_crossbar(self, bits: int) -> int:
        """Weight columns one crossbar holds: ``bits`` wider than a cell take several cells."""
        matrix = self._config.chip.core.matrix
        cols = matrix.xbar_size[1]
        if bits <= matrix.cell_precision:
            return cols
        return cols * matrix.cell_precision // bits

    def weight_tiling(self, height: int, width: int, bits: int) -> WeightTiling:
        """Row slices of crossbar height; columns split when one slice exceeds a core.

        An array group spans ``ceil(width / columns_per_crossbar)`` crossbars; when that
        exceeds one core's crossbars the columns are cut into blocks of at most
        ``capacity × columns_per_crossbar`` (the last block narrower).
        """
        per_xbar = self.weight_columns_per_crossbar(bits) if bits >= 1 else 0
        if height < 1 or width < 1 or per_xbar < 1:
            raise InvalidInstanceError(
                f"cannot tile a {height}x{width} weight matrix at {bits} bits onto "
                f"{self._config.chip.core.matrix.xbar_size} crossbars"
            )
        xbar_rows = self._config.chip.core.matrix.xbar_size[0]
        rows = tuple(min(xbar_rows, height - top) for top in range(0, height, xbar_rows))
        block = self.capacity(0) * per_xbar
        blocks = tuple(min(block, width - left) for left in range(0, width, block))
        return WeightTiling(
            row_slices=rows,
            column_blocks=blocks,
            crossbars_per_block=tuple(ceil_div(b, per_xbar) for b in blocks),
        )

    def execution_ns(self, work: Work) -> int:
        if isinstance(work, FixedWork):
            return work.ns
        if isinstance(work, MatrixWork):
            one = self._mvm_ps(work.bits, work.read_bits, work.written_bits, work.crossbars)
            return ceil_div(work.mvms * one, PS_PER_NS)
        if isinstance(work, VectorWork):
            return ceil_div(self._vector_ps(work), PS_PER_NS)
        if isinstance(work, MoveWork):
            return ceil_div(self._move_ps(work), PS_PER_NS)
        raise TypeError(f"unknown work {work!r}")

    def _mvm_ps(self, bits: int, input_bits: int, output_bits: int, crossbars: int) -> int:
        """One ``mvmul`` on an array group of ``crossbars`` crossbars (mbiw ``bits``).

        ``ArrayGroup::th_processMVM`` + ``XbarArray::calcXbarArrayLatency``: the input
        read and the DAC steps use ``input_bits`` (ibiw), the write-back
        ``output_bits`` (obiw) over the array group's physical width, the weight
        columns per crossbar ``bits`` (mbiw). The latency uses the whole crossbar
        (xbar_size), not the used part of it. 0-bit widths (pimsim-nn before any
        ``setbw``) move no bytes and take no DAC steps: the pipelined latency is then
        ``min(front, back)`` cycles, as the simulator's formula gives.
        """
        key = (bits, input_bits, output_bits, crossbars)
        cached = self._matrix_cache.get(key)
        if cached is not None:
            return cached
        if bits < 1 or min(input_bits, output_bits) < 0:
            raise InvalidInstanceError(
                f"matrix work needs at least 1 weight bit and non-negative widths, got weights "
                f"{bits}, input {input_bits}, output {output_bits}"
            )
        m = self._config.chip.core.matrix
        xbar_rows, xbar_cols = m.xbar_size
        in_bytes, out_bytes = ceil_div(input_bits, 8), ceil_div(output_bits, 8)
        # Quirk: XbarArray::divideWithCeiling truncates for positive operands.
        input_times = input_bits // m.dac_resolution
        dac_times = xbar_rows // m.dac_count
        adc_times = xbar_cols // m.adc_count
        xbar_read_cycle = math.ceil(Fraction(m.xbar_latency) / Fraction(m.period))
        # input_buffer_latency_cycle is always 0: Config.hpp never reads it from JSON (quirk).
        front = m.dac_latency_cycle + xbar_read_cycle + m.sample_hold_latency_cycle
        back_step = max(
            m.adc_latency_cycle, m.shift_adder_latency_cycle + m.output_buffer_latency_cycle
        )
        back = (
            m.adc_latency_cycle
            + m.shift_adder_latency_cycle
            + m.output_buffer_latency_cycle
            + (adc_times - 1) * back_step
        )
        steps = input_times * dac_times
        if m.pipeline_mode:
            cycles = front + back + (steps - 1) * max(front, back)
        else:
            cycles = (front + back) * steps
        compute = Fraction(m.period) * cycles * PS_PER_NS
        compute_ps = round_half_up(compute.numerator, compute.denominator)
        # Quirk: the input read is multiplied by 8 ("for compare with mnsim").
        read_ps = self._local.read_ps(xbar_rows * in_bytes * 8)
        # getWeightShape: int(cell_precision * cols / mbiw) weight columns per crossbar.
        written = (m.cell_precision * xbar_cols // bits) * out_bytes * crossbars
        total = read_ps + compute_ps + self._local.write_ps(written)
        self._matrix_cache[key] = total
        return total

    def _vector_ps(self, work: VectorWork) -> int:
        """``VectorUnit::process``: operand reads, compute steps, write-back.

        One- and two-operand ops exist in the ISA; ``operands`` = k > 2 is charged as the
        k - 1 two-operand ops it takes. Each operand read is ``len × ceil(bits/8)``
        bytes, the write-back ``len × ceil(output_bits/8)`` (the oracle's width rule:
        ``inst_use_output_byte`` ops write at obiw, the others at ibiw; the caller
        says which through ``output_bits``). 0-bit widths (pimsim-nn before any
        ``setbw``) move no bytes.
        """
        if work.operands < 1:
            raise InvalidInstanceError(f"vector work needs at least 1 operand, got {work.operands}")
        read = work.elements * ceil_div(work.bits, 8)
        written = work.elements * ceil_div(work.written_bits, 8)
        reads = 1 if work.operands == 1 else 2
        one_op = (
            reads * self._local.read_ps(read)
            + self._vector_steps_ps(work.elements)
            + self._local.write_ps(written)
        )
        return max(1, work.operands - 1) * one_op

    def _vector_steps_ps(self, elements: int) -> int:
        """Compute steps of ``elements`` on the vector unit.

        Quirk: compute latency is vector_latency_cycle × steps *nanoseconds*; the core
        period is not applied (getVectorComputeLatencyCyclePower feeds sc_time in SC_NS).
        """
        core = self._config.chip.core
        return ceil_div(elements, core.vector_width) * core.vector_latency_cycle * PS_PER_NS

    def _move_ps(self, work: MoveWork) -> int:
        """Local-memory moves, one read and one write per run, each rounded on its own.

        A contiguous run is an ``lmv`` (``TransferUnit``: local read then write of its
        bytes). A strided run gathers its source through the vector unit (``vmv``),
        which charges the run's payload bytes and its compute steps
        (scheduling-implementation.md, "Transfer accounting and transpose costs").
        Sub-byte runs round up to whole bytes per run.
        """
        total = 0
        for count, elements in work.blocks:
            nbytes = ceil_div(elements * work.bits, 8)
            one = self._local.read_ps(nbytes) + self._local.write_ps(nbytes)
            if work.strided:
                one += self._vector_steps_ps(elements)
            total += count * one
        return total

    def _endpoint_ns(self, nbytes: int, direct: bool) -> int:
        """Sender's local read plus receiver's local write of a message (0 when ``direct``).

        A direct receive lands in its consumer's assembly storage, whose own
        per-block copy (`MoveWork`) already charges that read and write: the edge
        does not charge them again (scheduling.md, "Costs and interpretation").
        """
        if direct:
            return 0
        cached = self._endpoint_cache.get(nbytes)
        if cached is None:
            local = self._local
            cached = ceil_div(local.read_ps(nbytes) + local.write_ps(nbytes), PS_PER_NS)
            if len(self._endpoint_cache) < 65_536:  # memoised per size (hot path), bounded
                self._endpoint_cache[nbytes] = cached
        return cached

    def step_timing(self) -> PimStepTiming:
        """The phase prices of a communication step, from this chip's resolved tables."""
        return PimStepTiming(
            core_cycle_ns=math.ceil(self._config.chip.core.period),
            bus_width=self._bus_width,
            latency=self._latency,
            memory_latency=self._gm_latency,
            local=self._local,
            global_memory=self._global,
            local_memory_bytes=self._config.chip.core.local_memory.memory_size,
        )

    def exchange(self) -> None:
        """None: not a bulk-synchronous exchange machine."""
        return None

    def estimate_realized_schedule_cost(
        self,
        programs: Sequence[Sequence[Step]],
        name: str,
        recurrence: RecurrenceRequest = False,
        baseline_service_ns: int = 0,
    ) -> RealizedScheduleCost:
        """Event extraction with this chip's step timing and the shared queue engine.

        `raptor_cp.periodic.schedule_cost.queue_schedule_cost`; imported on demand,
        like the artifact reader.
        """
        from raptor_cp.periodic.schedule_cost import queue_schedule_cost

        return queue_schedule_cost(
            programs, self.step_timing(), name, recurrence, baseline_service_ns
        )

    def instruction_frontend(self) -> PimInstructionFrontend:
        """pimsim-nn instruction files (`raptor_cp.targets.pim.artifact`).

        Imported on demand: only ``raptor-cp periodic`` reads artifacts, and the
        reader pulls in `raptor_cp.periodic`.
        """
        from raptor_cp.targets.pim.artifact import PimInstructionFrontend

        return PimInstructionFrontend(self, self._config.chip.core.matrix.xbar_size)

    def transfer_ns(self, src: int, dst: int, nbytes: int, direct: bool = False) -> int:
        """send/recv (``TransferUnit``): 1-flit request, 1-flit ready, read, flits, write.

        ``Network::transfer``: a message of b bytes costs ceil(b / bus_width) × L[src][dst].
        A ``direct`` receive into assembly storage omits the endpoint read and write
        (`_endpoint_ns`). Assumes the recv is posted; cores are not range-checked (hot path).
        """
        if src == dst:
            return 0
        flits = ceil_div(nbytes, self._bus_width)
        return (
            self._handshake[src][dst]
            + flits * self._latency[src][dst]
            + self._endpoint_ns(nbytes, direct)
        )

    def transfer_terms(self, cores: Sequence[int]) -> TransferTerms:
        """`transfer_ns` among ``cores``: handshake, flits × per-flit latency, endpoint memory."""
        index = np.asarray(cores, dtype=np.int64)
        pairs = np.ix_(index, index)
        return TransferTerms(
            fixed=self._handshake_table[pairs],
            per_unit=self._latency_table[pairs],
            unit_bytes=self._bus_width,
            constant=self._endpoint_ns,
        )

    def mean_transfer_ns(self, nbytes: int, direct: bool = False) -> int:
        """Exact mean of `transfer_ns` over ordered pairs of distinct cores, halves up.

        Summed over pairs, handshake plus data cost (flits + 2) × ΣL; the endpoint
        memory term is the same for every pair. 0 on a single-core chip.
        """
        n = self._cores
        if n == 1:
            return 0
        flits = ceil_div(nbytes, self._bus_width)
        network = round_half_up((flits + 2) * self._pair_latency_sum, n * (n - 1))
        return network + self._endpoint_ns(nbytes, direct)

    def max_transfer_ns(self, nbytes: int) -> int:
        """The dearest handshake plus the dearest per-flit latency (an upper bound)."""
        if self._cores == 1:
            return 0
        flits = ceil_div(nbytes, self._bus_width)
        return self._max_handshake + flits * self._max_latency + self._endpoint_ns(nbytes, False)

    @property
    def uniform_transfers(self) -> bool:
        """False: the network prices each pair of cores (mesh hops or a latency table)."""
        return False

    def global_read_ns(self, nbytes: int) -> int:
        """``ld``: 1 flit to global memory, global read, local write.

        Quirk: the data coming back is charged 0 flits (response_data_size = 0). The flit
        latency is the mean over cores of L[core][global memory], halves up.
        """
        flit = round_half_up(self._gm_latency_sum, self._cores)
        memory = self._global.read_ps(nbytes) + self._local.write_ps(nbytes)
        return flit + ceil_div(memory, PS_PER_NS)

    def global_write_ns(self, nbytes: int) -> int:
        """``st``: local read, ceil(bytes / bus_width) flits to global memory, global write."""
        flits = ceil_div(nbytes, self._bus_width)
        network = round_half_up(flits * self._gm_latency_sum, self._cores)
        memory = self._local.read_ps(nbytes) + self._global.write_ps(nbytes)
        return network + ceil_div(memory, PS_PER_NS)

    def describe(self) -> dict[str, object]:
        chip = self._config.chip
        matrix = chip.core.matrix
        return {
            "kind": "pim",
            "name": self._name,
            "config": self._config.source,
            "cores": self._cores,
            "layout": list(self._layout),
            "crossbars_per_core": matrix.xbar_array_count,
            "crossbar": list(matrix.xbar_size),
            "cell_precision": matrix.cell_precision,
            "bus_width_bytes": self._bus_width,
            "network": self._network,
            "mvm_ns_8bit": self.execution_ns(MatrixWork(1, *matrix.xbar_size, 1, 8)),
            "warnings": list(self._warnings),
        }
