"""The parts of a transfer the event builder prices separately, per target.

`raptor_cp.periodic.events` splits every communication into its phases (a
control flit, the source's local read, the payload's flits, the destination's
local write, the global memory's service) because the queue engine serializes
some of them on a source switch or the memory controller and not others. A
`SchedulingTarget` prices whole transfers; `step_timing` gives the phases:

* `PimStepTiming` for a `PimTarget`: the same pimsim-nn formulas the target
  uses (``Memory::transport``, ``Network::transfer``), read from the target's
  resolved network table and memory timings so nothing is priced twice. Each
  phase is rounded up to whole nanoseconds on its own (the target rounds a
  whole transfer once), so a sum of phases can exceed the target's
  `transfer_ns` by at most one nanosecond per phase.
* `ProtocolStepTiming` for any other target: a payload costs the target's
  `transfer_ns`, a global request its `global_read_ns` / `global_write_ns`;
  control flits and local memory are free and SYNC completes at once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

from raptor_cp.targets.base import SchedulingTarget
from raptor_cp.targets.pim import PimTarget

GLOBAL_MEMORY = -1
"""``dst`` of `StepTiming.control_ns` / `StepTiming.data_ns` for the global memory."""


class StepTiming(Protocol):
    """Integer-nanosecond prices of the phases of a communication step."""

    def cycle_ns(self) -> int:
        """One core clock period: scalar issue, and SYNC's local execution."""
        ...

    def control_ns(self, src: int, dst: int) -> int:
        """A one-flit control message from core ``src`` to ``dst`` (or `GLOBAL_MEMORY`)."""
        ...

    def data_ns(self, src: int, dst: int, nbytes: int) -> int:
        """The flits of an ``nbytes`` payload from core ``src`` to ``dst`` (or `GLOBAL_MEMORY`)."""
        ...

    def local_read_ns(self, nbytes: int) -> int:
        """A core's local-memory read of ``nbytes``."""
        ...

    def local_write_ns(self, nbytes: int) -> int:
        """A core's local-memory write of ``nbytes``."""
        ...

    def global_read_ns(self, nbytes: int) -> int:
        """The global memory's service of one ``nbytes`` read (no network, no local write)."""
        ...

    def global_write_ns(self, nbytes: int) -> int:
        """The global memory's service of one ``nbytes`` write (no network, no local read)."""
        ...


@dataclass(frozen=True)
class PimStepTiming:
    """`StepTiming` of a pimsim-nn chip, from the `PimTarget` that prices its transfers.

    A message of ``b`` bytes costs ``ceil(b / bus_width) × L[src][dst]`` ns
    (``Network::transfer``); a memory access ``ceil(b / data_width) × cycles ×
    period`` (``Memory::transport``). The core period is rounded up to whole ns.
    """

    target: PimTarget

    def cycle_ns(self) -> int:
        return math.ceil(self.target.config.chip.core.period)

    def _flit_ns(self, src: int, dst: int) -> int:
        # The target's resolved per-flit latencies (network table or mesh model).
        return self.target.flit_ns(src, None if dst == GLOBAL_MEMORY else dst)

    def control_ns(self, src: int, dst: int) -> int:
        return self._flit_ns(src, dst)

    def data_ns(self, src: int, dst: int, nbytes: int) -> int:
        flits = -(-nbytes // self.target.config.chip.network.bus_width)
        return flits * self._flit_ns(src, dst)

    def local_read_ns(self, nbytes: int) -> int:
        return self.target.local_memory_ns(nbytes, write=False)

    def local_write_ns(self, nbytes: int) -> int:
        return self.target.local_memory_ns(nbytes, write=True)

    def global_read_ns(self, nbytes: int) -> int:
        return self.target.global_memory_ns(nbytes, write=False)

    def global_write_ns(self, nbytes: int) -> int:
        return self.target.global_memory_ns(nbytes, write=True)


@dataclass(frozen=True)
class ProtocolStepTiming:
    """`StepTiming` from the `SchedulingTarget` protocol alone (targets other than PIM).

    The payload phase carries the whole `transfer_ns`; the memory controller's
    service is the target's `global_read_ns` / `global_write_ns`.
    """

    target: SchedulingTarget

    def cycle_ns(self) -> int:
        return 0

    def control_ns(self, src: int, dst: int) -> int:
        return 0

    def data_ns(self, src: int, dst: int, nbytes: int) -> int:
        return 0 if dst == GLOBAL_MEMORY else self.target.transfer_ns(src, dst, nbytes)

    def local_read_ns(self, nbytes: int) -> int:
        return 0

    def local_write_ns(self, nbytes: int) -> int:
        return 0

    def global_read_ns(self, nbytes: int) -> int:
        return self.target.global_read_ns(nbytes)

    def global_write_ns(self, nbytes: int) -> int:
        return self.target.global_write_ns(nbytes)


def step_timing(target: SchedulingTarget) -> StepTiming:
    """The phase prices of ``target``: `PimStepTiming` for PIM, else `ProtocolStepTiming`."""
    if isinstance(target, PimTarget):
        return PimStepTiming(target)
    return ProtocolStepTiming(target)
