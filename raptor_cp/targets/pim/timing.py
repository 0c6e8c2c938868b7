"""pimsim-nn's time arithmetic, and the phase prices of a communication step on a PIM chip.

pimsim-nn is a SystemC model with the default 1 ps time resolution: every
``sc_time(x, SC_NS)`` it builds is ``x`` rounded half up to a whole picosecond
(`round_half_up`). `MemoryTiming` is ``Memory::transport`` on exact integers.

`PimStepTiming` is the `StepTiming` a `PimTarget` hands the periodic event
builder (`raptor_cp.periodic.events`): the same formulas the target uses for
whole transfers (``Memory::transport``, ``Network::transfer``), over the
target's resolved network table and memory timings, so nothing is priced twice.
Each phase is rounded up to whole nanoseconds on its own (the target rounds a
whole transfer once), so a sum of phases can exceed the target's
`transfer_ns` by at most one nanosecond per phase.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from raptor_cp.targets.base import GLOBAL_MEMORY
from raptor_cp.targets.pim.config import MemoryConfig

PS_PER_NS = 1000
EVENT_REGISTERS = 32
"""Event registers per core (pimsim-nn ``TransferUnit``: 32 counters, index unchecked)."""
UNTIMED_OPERATIONS = frozenset({"Softmax", "OP_SOFTMAX"})
"""Operator types lowered to ``vsoftmax``, which the seeds say pimsim-nn omits before
fetch, so the queue model gives them no timed work (scheduling.md, "Default throughput
selection"). pimsim-nn f7446df in fact rejects ``vsoftmax``; an emitter drops it."""


def ceil_div(a: int, b: int) -> int:
    """``ceil(a / b)`` for integers, ``b > 0``."""
    return -(-a // b)


def round_half_up(num: int, den: int) -> int:
    """``num / den`` to the nearest integer, halves up (SystemC's ``sc_time`` rounding)."""
    return (2 * num + den) // (2 * den)


@dataclass(frozen=True)
class MemoryTiming:
    """``Memory::transport``: ``ceil(bytes / data_width) × cycles × period`` ns per request.

    The picoseconds of one access (cycles × period × 1000) are kept as an exact fraction
    ``*_num / *_den`` so that a request's time is rounded once, as the simulator does.
    """

    data_width: int
    read_num: int
    read_den: int
    write_num: int
    write_den: int

    @classmethod
    def of(cls, memory: MemoryConfig) -> MemoryTiming:
        period_ps = Fraction(memory.period) * PS_PER_NS
        read = memory.read_latency_cycle * period_ps
        write = memory.write_latency_cycle * period_ps
        return cls(
            memory.data_width, read.numerator, read.denominator, write.numerator, write.denominator
        )

    def read_ps(self, nbytes: int) -> int:
        accesses = -(-nbytes // self.data_width)
        return round_half_up(accesses * self.read_num, self.read_den)

    def write_ps(self, nbytes: int) -> int:
        accesses = -(-nbytes // self.data_width)
        return round_half_up(accesses * self.write_num, self.write_den)

    def ns(self, nbytes: int, write: bool) -> int:
        """One read (or write) of ``nbytes``, rounded up to whole nanoseconds."""
        return ceil_div(self.write_ps(nbytes) if write else self.read_ps(nbytes), PS_PER_NS)


@dataclass(frozen=True)
class PimStepTiming:
    """`StepTiming` of a pimsim-nn chip, built by its `PimTarget` (`PimTarget.step_timing`).

    A message of ``b`` bytes costs ``ceil(b / bus_width) × L[src][dst]`` ns
    (``Network::transfer``); a memory access ``ceil(b / data_width) × cycles ×
    period`` (``Memory::transport``). The core period is rounded up to whole ns.
    """

    core_cycle_ns: int
    """The core clock period, rounded up to whole ns."""
    bus_width: int
    """Bytes per flit."""
    latency: Sequence[Sequence[int]]
    """ns per flit from core to core (the network table or the mesh model)."""
    memory_latency: Sequence[int]
    """ns per flit from each core to the global memory."""
    local: MemoryTiming
    global_memory: MemoryTiming
    local_memory_bytes: int
    """One core's local memory (``local_memory.memory_size``)."""
    event_registers: int = EVENT_REGISTERS
    byte_addressed: bool = True
    """Local and global memories are byte-addressed: sub-byte payloads cannot be lowered."""
    untimed_operations: frozenset[str] = UNTIMED_OPERATIONS

    def cycle_ns(self) -> int:
        return self.core_cycle_ns

    def _flit_ns(self, src: int, dst: int) -> int:
        return self.memory_latency[src] if dst == GLOBAL_MEMORY else self.latency[src][dst]

    def control_ns(self, src: int, dst: int) -> int:
        return self._flit_ns(src, dst)

    def data_ns(self, src: int, dst: int, nbytes: int) -> int:
        return ceil_div(nbytes, self.bus_width) * self._flit_ns(src, dst)

    def local_read_ns(self, nbytes: int) -> int:
        return self.local.ns(nbytes, write=False)

    def local_write_ns(self, nbytes: int) -> int:
        return self.local.ns(nbytes, write=True)

    def global_read_ns(self, nbytes: int) -> int:
        return self.global_memory.ns(nbytes, write=False)

    def global_write_ns(self, nbytes: int) -> int:
        return self.global_memory.ns(nbytes, write=True)
