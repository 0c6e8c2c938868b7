"""The `SchedulingTarget` protocol: every hardware fact a scheduler may ask for.

Heuristics, CP-SAT models and evaluators talk to hardware only through this
protocol. Lowering describes each task's work in target-neutral units
(`MatrixWork`, `VectorWork`, `FixedWork`) and the target prices it in integer
nanoseconds.

Analyses beyond scheduling ask the target for what they need, never for its
config (ARCHITECTURE.md, "Hardware semantics live only in a target adapter"):

* `SchedulingTarget.step_timing`: the phase prices of a communication step
  (`StepTiming`) for the periodic event builder, or None when the target knows
  no more than whole transfers (generic and IPU targets): the periodic
  diagnostic is then ``unavailable`` (scheduling.md, "Unsupported or incomplete
  target timing produces an `unavailable` report").
* `SchedulingTarget.instruction_frontend`: the reader of instruction artifacts
  compiled for the chip (`InstructionFrontend`), or None.
* `SchedulingTarget.exchange`: the target as a bulk-synchronous tile machine
  (`ExchangeTarget`: transfer length limit, tile memory, superstep timing,
  tile- and block-budget variants, whole-chip hop and transfer tables) for
  exchange planning and list schedulers' transfer tables, or None.
* `SchedulingTarget.estimate_realized_schedule_cost`: the read-only
  whole-schedule query of pipeline selection (`RealizedScheduleCost`); a
  target without a queue model answers it ``unavailable``.

An optional capability a target lacks is answered with None; a caller that
cannot go on without it raises `raptor_cp.errors.CapabilityUnavailableError`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    import numpy as np

    from raptor_cp.periodic.steps import Step

UNLIMITED_CAPACITY = 2**62
"""Resident-weight capacity of a core that has no limit (generic targets)."""


@dataclass(frozen=True)
class MatrixWork:
    """``mvms`` matrix-vector products on one array group of ``crossbars`` crossbars.

    ``rows`` and ``cols`` are the used part of the weight slice (rows of the unrolled
    weight matrix, output columns); ``bits`` is the weight precision, and the input
    and output precision unless ``input_bits`` / ``output_bits`` say otherwise (an
    instruction's ``setbw`` widths).
    """

    mvms: int
    rows: int
    cols: int
    crossbars: int
    bits: int
    input_bits: int | None = None
    output_bits: int | None = None

    @property
    def read_bits(self) -> int:
        return self.bits if self.input_bits is None else self.input_bits

    @property
    def written_bits(self) -> int:
        return self.bits if self.output_bits is None else self.output_bits


@dataclass(frozen=True)
class VectorWork:
    """``elements`` vector-unit elements reading ``operands`` input streams of ``bits``.

    ``output_bits`` is the width each result element is written at (default
    ``bits``): an instruction's output width for the ops that write at it.
    """

    elements: int
    operands: int
    bits: int
    output_bits: int | None = None

    @property
    def written_bits(self) -> int:
        return self.bits if self.output_bits is None else self.output_bits


@dataclass(frozen=True)
class MoveWork:
    """Data movement in local memory: ``count`` runs of ``elements`` elements per block.

    ``blocks`` lists ``(count, elements)`` pairs: each run is read and written as one
    request (rounded per run, scheduling.md "Costs and interpretation": "Memory work is
    rounded at its actual fragment/run granularity"). ``strided`` runs gather their
    source at a stride other than one and so also pass through the vector unit, which
    charges their payload, not the strided address footprint
    (scheduling-implementation.md, "Transfer accounting and transpose costs").
    """

    blocks: tuple[tuple[int, int], ...]
    bits: int
    strided: bool = False

    @property
    def elements(self) -> int:
        return sum(count * elements for count, elements in self.blocks)


@dataclass(frozen=True)
class FixedWork:
    """Work whose cost is given in nanoseconds by the workload itself (STG, raptor JSON)."""

    ns: int


Work = MatrixWork | VectorWork | MoveWork | FixedWork


@dataclass(frozen=True)
class WeightTiling:
    """How a target cuts a weight matrix into array groups.

    An array group is one crossbar-height slice of the rows spanning
    ``crossbars_per_group`` crossbars; ``column_blocks`` > 1 when one slice over all
    output columns would not fit a single core, so the columns are split too.
    """

    row_slices: tuple[int, ...]
    """Height (used rows) of each row slice."""
    column_blocks: tuple[int, ...]
    """Width (output columns) of each column block."""
    crossbars_per_block: tuple[int, ...]
    """Crossbars one (row slice, column block) array group occupies, per column block."""


GLOBAL_MEMORY = -1
"""``dst`` of `StepTiming.control_ns` / `StepTiming.data_ns` for the global memory."""


class StepTiming(Protocol):
    """Integer-nanosecond prices of the phases of a communication step.

    `raptor_cp.periodic.events` splits every communication into its phases (a
    control flit, the source's local read, the payload's flits, the
    destination's local write, the global memory's service) because the queue
    engine serializes some of them on a source switch or the memory controller
    and not others; a `SchedulingTarget` prices whole transfers, its
    `SchedulingTarget.step_timing` the phases.
    """

    @property
    def event_registers(self) -> int:
        """Event registers per core (SYNC/WAIT counters) a program may allocate."""
        ...

    @property
    def byte_addressed(self) -> bool:
        """Whether communication lowering needs byte-sized elements (PIM: it does)."""
        ...

    @property
    def untimed_operations(self) -> frozenset[str]:
        """Operator types the queue model gives no timed work (PIM: Softmax)."""
        ...

    @property
    def local_memory_bytes(self) -> int:
        """Bytes of one core's local memory (received payloads wait there)."""
        ...

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
class InstructionPrograms:
    """An instruction artifact read as one in-order `Step` program per core (one generation).

    The input of `raptor_cp.periodic.events.build_events` (with the target's
    `SchedulingTarget.step_timing`).
    """

    source: str
    """The artifact's path, naming the event graph in messages."""
    instructions: int
    """Instructions read, over all cores."""
    cores: list[list[Step]]
    """``cores[c]``: core ``c``'s steps; an empty list is an idle core."""
    origin: list[list[int]]
    """``origin[c][i]``: the index of the (first) instruction of step ``i`` of core ``c``."""
    effects: tuple[str, ...] = ()
    """Approximations made reading this artifact, listed with a report's missing effects."""


class InstructionFrontend(Protocol):
    """Reads the instruction artifacts compiled for one target (an optional capability)."""

    def read(self, path: str | Path, *, model_issue: bool = True) -> InstructionPrograms:
        """The artifact at ``path`` as step programs priced by the target.

        ``model_issue=False`` omits scalar issue time (``--no-model-issue``).
        Raises `raptor_cp.errors.InvalidInputError` naming the file and field.
        """
        ...


AVAILABLE = "available"
"""`RealizedScheduleCost.status` of an estimate every selection property holds for."""
UNAVAILABLE_COST = "unavailable"
"""`RealizedScheduleCost.status` when some property is missing (``reasons`` say which)."""
SUPPORTED, UNSUPPORTED, UNKNOWN_SUPPORT = "supported", "unsupported", "unknown"
"""`RealizedScheduleCost.static_support`: the programs' static forms are (not) lowerable,
or the target cannot tell."""


@dataclass(frozen=True)
class TransferTerms:
    """`SchedulingTarget.transfer_ns` among some cores, in the form compiled loops read.

    For positions ``i != j`` of the cores asked about::

        transfer_ns(cores[i], cores[j], nbytes, direct)
            == fixed[i, j] + ceil(nbytes / unit_bytes) * per_unit[i, j] + constant(nbytes, direct)

    and 0 for ``i == j``. ``fixed`` and ``per_unit`` (int64, ``k x k``) are None
    when the price does not depend on the pair (`SchedulingTarget.uniform_transfers`):
    then nothing of size ``k²`` is built.
    """

    fixed: np.ndarray | None
    per_unit: np.ndarray | None
    unit_bytes: int
    constant: Callable[[int, bool], int]

    def units(self, nbytes: int) -> int:
        """``ceil(nbytes / unit_bytes)``: the count ``per_unit`` is charged for."""
        return -(-nbytes // self.unit_bytes)


@dataclass(frozen=True)
class RecurrenceGuidance:
    """The critical recurrence of a realized schedule: where its cycle spends its time.

    From the maximum cycle ratio of the event graph (services on the in-edges):
    the ratio, the witness cycle's iteration distance, and per core the delay
    of the witness edges leaving that core's events. Guidance for the search
    only (scheduling.md: "maximum-cycle-ratio analysis for bounded search
    guidance"); it never ranks candidates.
    """

    ratio_ns: float
    distance: int
    core_delay_ns: dict[int, int]


@dataclass(frozen=True)
class RealizedScheduleCost:
    """A target's evidence on one realized whole schedule (scheduling.md, "Default
    throughput selection", ``estimateRealizedScheduleCost``).

    The two intervals are the queue engine's converged generation intervals in
    event-index and in reversed tie order (the two arbitration policies); the
    per-core work and the memory controller's serialized service are the other
    two terms of the seeds' maximum. ``estimate_ns`` is that maximum, rounded up
    to whole ns, when every property holds (``status`` `AVAILABLE`); otherwise
    ``reasons`` names each missing property and ``estimate_ns`` is None.
    """

    status: str
    reasons: tuple[str, ...]
    static_support: str
    """`SUPPORTED`, `UNSUPPORTED` or `UNKNOWN_SUPPORT`."""
    index_interval_ns: float | None
    reversed_interval_ns: float | None
    core_work_ns: tuple[int, ...]
    """Per core, its in-order work per generation (empty when unknown)."""
    memory_service_ns: int | None
    """Total memory-controller service per generation (None when unknown)."""
    generations: tuple[int, int]
    """Generations each tie order ran (index, reversed)."""
    events: int
    """Events of the extracted graph (0 when none was built)."""
    window_generations: tuple[int | None, int | None] = (None, None)
    """Generations per convergence window of each tie order (index, reversed): 2 by the
    one-percent test, or the length of an exactly repeating cycle
    (`raptor_cp.periodic.queue_engine`); None where a run did not converge."""
    recurrence: RecurrenceGuidance | None = None
    """The critical recurrence, when asked for and proved."""
    recurrence_analysed: bool = False
    """Whether the critical recurrence was analysed (None above then means: no cycle)."""
    wall_s: tuple[tuple[str, float], ...] = ()
    """Measured seconds of each phase of the query (``extraction``, ``queue``,
    ``recurrence``), in that order; the one field that differs between runs."""

    @classmethod
    def unavailable(cls, reason: str, support: str = UNKNOWN_SUPPORT) -> RealizedScheduleCost:
        """A cost the target cannot give at all, for ``reason``."""
        return cls(UNAVAILABLE_COST, (reason,), support, None, None, (), None, (0, 0), 0)

    @property
    def available(self) -> bool:
        return self.status == AVAILABLE

    def terms(self) -> dict[str, float]:
        """The known terms of the maximum: both tie orders, core work, memory service."""
        found: dict[str, float] = {}
        if self.index_interval_ns is not None:
            found["queue_index"] = self.index_interval_ns
        if self.reversed_interval_ns is not None:
            found["queue_reversed"] = self.reversed_interval_ns
        if self.core_work_ns:
            found["core_work"] = max(self.core_work_ns)
        if self.memory_service_ns is not None:
            found["memory_service"] = self.memory_service_ns
        return found

    @property
    def estimate_ns(self) -> int | None:
        """The larger queue estimate (and the other terms' maximum), whole ns rounded up."""
        if not self.available:
            return None
        return math.ceil(max(self.terms().values()))

    @property
    def binding(self) -> str | None:
        """The term equal to the estimate (first of the `terms` order on ties)."""
        if not self.available:
            return None
        terms = self.terms()
        top = max(terms.values())
        return next(name for name, value in terms.items() if value == top)


@runtime_checkable
class SchedulingTarget(Protocol):
    """The hardware as schedulers see it. All times are integer nanoseconds."""

    @property
    def name(self) -> str:
        """Short name used in reports (preset name or config path)."""
        ...

    @property
    def cores(self) -> int:
        """Number of cores (processing elements, tiles)."""
        ...

    def hops(self, src: int, dst: int) -> int:
        """Topological distance between two cores (0 for the same core)."""
        ...

    def coordinates(self, core: int) -> tuple[int, int]:
        """Grid position (row, column) of a core, for clustering and plots."""
        ...

    def capacity(self, core: int) -> int:
        """Resident-weight capacity of a core in weight slots (crossbars on PIM)."""
        ...

    def weight_tiling(self, height: int, width: int, bits: int) -> WeightTiling:
        """Cut a ``height`` x ``width`` weight matrix into array groups."""
        ...

    def execution_ns(self, work: Work) -> int:
        """Time one core needs for ``work``."""
        ...

    def transfer_ns(self, src: int, dst: int, nbytes: int, direct: bool = False) -> int:
        """Time to move ``nbytes`` from core ``src`` to core ``dst`` (0 when equal).

        ``direct``: the receive lands in its consumer's assembly storage
        (`ComputeGraph.edge_direct`), whose block copy already charges the
        endpoint memory; the transfer then omits its own endpoint-memory charges.
        """
        ...

    def mean_transfer_ns(self, nbytes: int, direct: bool = False) -> int:
        """Average of `transfer_ns` over ordered pairs of distinct cores (for priorities)."""
        ...

    def max_transfer_ns(self, nbytes: int) -> int:
        """An upper bound of `transfer_ns` over every pair of cores (`raptor_cp.limits` horizon)."""
        ...

    def transfer_terms(self, cores: Sequence[int]) -> TransferTerms:
        """`transfer_ns` among ``cores`` as tables (`TransferTerms`), for compiled loops.

        ``O(k²)`` for ``k`` cores on a target whose price depends on the pair, ``O(1)``
        otherwise.
        """
        ...

    @property
    def uniform_transfers(self) -> bool:
        """True when `transfer_ns` is the same between every pair of distinct cores.

        Schedulers then price a core's row of transfers in ``O(P)`` from one value
        instead of tabulating the ``P x P`` pairs.
        """
        ...

    def global_read_ns(self, nbytes: int) -> int:
        """Service time of one global-memory read of ``nbytes``."""
        ...

    def global_write_ns(self, nbytes: int) -> int:
        """Service time of one global-memory write of ``nbytes``."""
        ...

    def describe(self) -> dict[str, object]:
        """A JSON-ready summary of the target for reports and `inspect`."""
        ...

    @property
    def warnings(self) -> tuple[str, ...]:
        """What the user should know about how the target was read (the CLI prints them)."""
        ...

    def step_timing(self) -> StepTiming | None:
        """Phase prices of communication steps, for the periodic event builder.

        None when the target has no complete phase-level timing: analyses that
        need it report ``unavailable`` rather than price phases as free.
        """
        ...

    def instruction_frontend(self) -> InstructionFrontend | None:
        """The reader of instruction artifacts compiled for this target; None without one."""
        ...

    def exchange(self) -> ExchangeTarget | None:
        """This target as a bulk-synchronous exchange machine; None when it is not one."""
        ...

    def estimate_realized_schedule_cost(
        self,
        programs: Sequence[Sequence[Step]],
        name: str,
        recurrence: RecurrenceRequest = False,
        baseline_service_ns: int = 0,
    ) -> RealizedScheduleCost:
        """The queue model's cost of a realized schedule, read-only.

        ``programs[c]`` is core ``c``'s in-order steps of one generation (the
        Spatial realization, `raptor_cp.pipeline.realize`); ``name`` names it in
        reasons; ``recurrence`` says whether the critical recurrence is added as
        guidance (`RecurrenceRequest`); ``baseline_service_ns`` is the controller service of the
        baseline requests (function inputs, constants, outputs) the programs do
        not place, which joins the memory term. A target without a queue model
        is never `AVAILABLE`: its cost says ``unavailable`` and why.
        """
        ...


RecurrenceRequest = bool | Callable[[RealizedScheduleCost], bool]
"""Whether `SchedulingTarget.estimate_realized_schedule_cost` adds the critical
recurrence: always, never, or when a predicate holds for the cost without it
(pipeline selection analyses only candidates that can still join the beam: a
recurrence guides only a parent's moves)."""


class ExchangeTarget(SchedulingTarget, Protocol):
    """A bulk-synchronous tile machine: what exchange planning and admission ask of it.

    Tiles compute, sync, then move data on an all-to-all exchange (the seed
    "Exchange footprint model"); a target is one when its
    `SchedulingTarget.exchange` returns it.
    """

    @property
    def max_transfer_words(self) -> int:
        """ISA limit on one transfer's length in 32-bit words (longer payloads are split)."""
        ...

    @property
    def tile_memory_bytes(self) -> int:
        """Memory of one tile in bytes (weights, activations, code, exchange tables)."""
        ...

    @property
    def block_bytes(self) -> int:
        """Largest weight block `weight_tiling` puts on one tile."""
        ...

    def superstep_ns(self, compute_ns: int, exchange_bytes: int) -> int:
        """The busiest tile's ``compute_ns``, one sync, then ``exchange_bytes`` on the exchange."""
        ...

    def with_tiles(self, tiles: int) -> ExchangeTarget:
        """The same machine cut down to its first ``tiles`` tiles."""
        ...

    def with_weight_block(self, nbytes: int) -> ExchangeTarget:
        """The same machine with weight blocks of at most ``nbytes``."""
        ...

    def cost_key(self) -> Hashable:
        """What prices work and memory: equal keys and block budgets lower to equal graphs."""
        ...

    def hop_matrix(self) -> np.ndarray:
        """`hops` of every pair of tiles as one ``(P, P)`` int64 array (all-to-all: 0 or 1)."""
        ...

    def transfer_matrix_ns(self, nbytes: int) -> np.ndarray:
        """`transfer_ns` of every pair of tiles for ``nbytes`` as one ``(P, P)`` int64 array."""
        ...
