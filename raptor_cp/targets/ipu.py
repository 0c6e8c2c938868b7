"""`IpuTarget`: a tile-based, bulk-synchronous (Graphcore-IPU-style) chip.

A tile is a core with its own SRAM; tiles talk only through the all-to-all
exchange, in bulk-synchronous supersteps: every tile computes, all tiles sync,
then the exchange moves data at a fixed rate per tile. A superstep therefore
costs ``max tile compute + sync + exchange`` (`IpuTarget.superstep_ns`).
The list schedulers see the same protocol as on the PIM chip: one edge between
two tiles costs one sync plus its words at the exchange rate (`transfer_ns`),
every pair of distinct tiles is one hop apart, and a weight slot is one byte of
tile SRAM.

Chip facts come from ``ipu_targets.csv`` (kept with its sources in the project's
reference data, ``data/ipu``); each number below names its row as
``csv: chip / field``. Where a number is derived or assumed it says so.

Tile compute model (derived and assumed, not measured):

- Matrix work runs on the tile's AMP (accumulating matrix product) units at
  ``amp_flops_per_cycle`` FLOPs per cycle for operands of at most 16 bits
  (narrower data such as FP8 is computed at the FP16 rate) and a quarter of that
  for wider operands. Mk1: 124.5 TFLOP/s FP16 / (1,216 tiles x 1.6 GHz) = 63.99,
  so 64; its FP32 peak 31.1 TFLOP/s gives 15.98, so the quarter rate.
  Mk2: 250 TFLOP/s FP16 / (1,472 tiles x ~1.33 GHz, the M2000 clock named in the
  ``aggregate_exchange_bw_mk2_bow`` row) = 127.7, so 128; the quarter rate for
  FP32 is assumed from Mk1 (no Mk2 FP32 figure is in the data).
- Vector work (element-wise, reductions, activation x activation products) runs
  on the six worker threads (csv: worker_threads_per_tile = 6), which issue in
  turn, so the tile issues one 64-bit vector instruction per cycle in total
  (assumption). An instruction handles 64 / 16 = 4 elements of at most 16 bits
  or 2 of wider ones; ``k > 2`` operands cost ``k - 1`` passes.
- A task uses all six workers; there is no per-task launch overhead.

Resident weights: capacity is the whole tile SRAM in bytes. Activations, code
and exchange tables also live there and are *not* charged against it; the
exchange-table footprint is checked separately (`raptor_cp.exchange.footprint`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from raptor_cp.errors import InvalidConfigError, InvalidInstanceError
from raptor_cp.limits import check_cores
from raptor_cp.targets.base import (
    FixedWork,
    MatrixWork,
    MoveWork,
    RealizedScheduleCost,
    TransferTerms,
    VectorWork,
    WeightTiling,
    Work,
)

if TYPE_CHECKING:
    from raptor_cp.periodic.steps import Step

VECTOR_BITS = 64
"""Width of one vector instruction (assumption, see the module docstring)."""

WIDE_OPERAND_BITS = 16
"""Operands wider than this run at the quarter (FP32) AMP rate and half the vector rate."""


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _balanced(total: int, parts: int) -> tuple[int, ...]:
    """``total`` cut into ``parts`` near-equal sizes, larger parts first."""
    size, larger = divmod(total, parts)
    return (size + 1,) * larger + (size,) * (parts - larger)


@dataclass(frozen=True)
class IpuChip:
    """The facts of one IPU generation that timing and exchange depend on."""

    chip: str
    """Chip name as the reference data spells it."""
    tiles: int
    sram_bytes: int
    """SRAM per tile."""
    clock_mhz: int
    workers: int
    """Worker threads per tile."""
    exchange_bytes_per_cycle: int
    """Bytes one tile sends (and receives) per cycle on the exchange."""
    sync_cycles: int
    """Cost of one chip-wide sync."""
    amp_flops_per_cycle: int
    """FP16 AMP FLOPs per cycle per tile (derived, see the module docstring)."""
    max_transfer_words: int
    """ISA limit on one transfer's length in 32-bit words (a guess, see `MK1`)."""


MK1 = IpuChip(
    chip="GC2 (Colossus Mk1)",
    tiles=1216,  # csv: GC2 (Colossus Mk1) / tiles_per_chip (Poplar report, Jia et al. 2019)
    sram_bytes=262144,  # csv: GC2 (Colossus Mk1) / sram_per_tile (256 KiB)
    clock_mhz=1600,  # csv: GC2 (Colossus Mk1) / clock_report (1,600.0 MHz)
    workers=6,  # csv: GC2 (Colossus Mk1) / worker_threads_per_tile
    exchange_bytes_per_cycle=4,  # csv: IPU (Poplar target) / exchange_bytes_per_cycle_per_tile
    sync_cycles=90,  # csv: IPU (Poplar target) / sync_cost_estimate (CTCLossPlan syncCycles)
    amp_flops_per_cycle=64,  # derived: csv GC2 / fp16_mixed_peak 124.5 TFLOP/s / (1216 x 1.6 GHz)
    # Guess, no source in data/ipu: a transfer's length field holds 4,096 words (16 KiB);
    # longer payloads are split (the seed's "transfer lengths split at the ISA limit").
    max_transfer_words=4096,
)
"""IPU Mk1 (GC2): 1,216 tiles x 256 KiB at 1.6 GHz."""

MK2 = IpuChip(
    chip="GC200 (Colossus Mk2)",
    tiles=1472,  # csv: GC200 (Colossus Mk2) / tiles_per_chip
    sram_bytes=638976,  # csv: GC200 (Colossus Mk2) / sram_per_tile (624 KiB)
    clock_mhz=1850,  # csv: GC200 (Colossus Mk2) / clock_report_bow (1,850.0 MHz, Bow)
    workers=6,  # csv: GC200 (Colossus Mk2) / threads_per_chip 8,832 = 6 x 1,472
    exchange_bytes_per_cycle=4,  # csv: IPU (Poplar target) / exchange_bytes_per_cycle_per_tile
    sync_cycles=90,  # csv: IPU (Poplar target) / sync_cost_estimate
    amp_flops_per_cycle=128,  # derived: csv GC200 / fp16_peak 250 TFLOP/s / (1472 x ~1.33 GHz)
    max_transfer_words=4096,  # guess, as MK1
)
"""IPU Mk2 (GC200) at the Bow clock: 1,472 tiles x 624 KiB at 1.85 GHz."""

PRESET_CHIPS: dict[str, IpuChip] = {"ipu-mk1": MK1, "ipu-mk2": MK2}
IPU_PRESETS: tuple[str, ...] = tuple(PRESET_CHIPS)
"""Names `IpuTarget.preset` accepts (``--target ipu-mk1`` / ``ipu-mk2``)."""


@dataclass(frozen=True)
class IpuTarget:
    """An IPU behind the `SchedulingTarget` protocol (see the module docstring).

    Parameters
    ----------
    chip:
        The generation's facts (`MK1`, `MK2`, or a variant made with
        `dataclasses.replace`, e.g. fewer tiles for small experiments).
    target_name:
        Name in reports.
    weight_block_bytes:
        Largest weight block `weight_tiling` puts on one tile; ``None`` means a
        quarter of the tile SRAM (an assumption that leaves room for a few
        blocks, activations and code per tile). A tile budget that admission can
        vary to trade parallelism against replication and exchange.
    """

    chip: IpuChip
    target_name: str
    weight_block_bytes: int | None = None

    def __post_init__(self) -> None:
        c = self.chip
        fields = (c.tiles, c.sram_bytes, c.clock_mhz, c.workers, c.exchange_bytes_per_cycle)
        if min(*fields, c.amp_flops_per_cycle, c.max_transfer_words) < 1 or c.sync_cycles < 0:
            raise InvalidConfigError(f"ipu target {self.target_name}: non-positive chip field")
        check_cores(c.tiles, f"ipu target {self.target_name}")
        if self.weight_block_bytes is not None and not 1 <= self.weight_block_bytes <= c.sram_bytes:
            raise InvalidConfigError(
                f"ipu target {self.target_name}: weight_block_bytes must be in "
                f"1..{c.sram_bytes} (the tile SRAM), got {self.weight_block_bytes}"
            )

    @property
    def block_bytes(self) -> int:
        """The weight block limit in force (`weight_block_bytes` or a quarter of the SRAM)."""
        if self.weight_block_bytes is None:
            return self.chip.sram_bytes // 4
        return self.weight_block_bytes

    @classmethod
    def preset(cls, name: str, weight_block_bytes: int | None = None) -> IpuTarget:
        """The target of preset ``name`` (`IPU_PRESETS`)."""
        chip = PRESET_CHIPS.get(name)
        if chip is None:
            raise InvalidConfigError(
                f"unknown ipu preset {name!r}: expected one of {', '.join(IPU_PRESETS)}"
            )
        return cls(chip, name, weight_block_bytes)

    def with_tiles(self, tiles: int) -> IpuTarget:
        """The same chip cut down to ``tiles`` tiles (small experiments and tests)."""
        return replace(
            self, chip=replace(self.chip, tiles=tiles), target_name=f"{self.name}:{tiles}"
        )

    def with_cores(self, cores: int) -> IpuTarget:
        """``--cores``: the same tiles, ``cores`` of them (more than the chip has, too)."""
        return self.with_tiles(cores)

    # -- protocol ------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.target_name

    @property
    def cores(self) -> int:
        return self.chip.tiles

    def hops(self, src: int, dst: int) -> int:
        """0 on the same tile, else 1: the exchange is all-to-all."""
        return 0 if src == dst else 1

    def coordinates(self, core: int) -> tuple[int, int]:
        """Tiles on one line: the exchange has no geometry the model uses."""
        if not 0 <= core < self.chip.tiles:
            raise ValueError(f"tile {core} outside 0..{self.chip.tiles - 1}")
        return (0, core)

    def capacity(self, core: int) -> int:
        """Tile SRAM in bytes (one weight slot = one byte)."""
        return self.chip.sram_bytes

    def weight_tiling(self, height: int, width: int, bits: int) -> WeightTiling:
        """Blocks of at most `block_bytes`, cut by columns first.

        Whole-height column blocks need no partial-sum reduction, so rows are
        cut only when one column alone exceeds the block; both cuts are
        balanced (sizes differ by at most one), which keeps tile compute even
        in a superstep. ``crossbars_per_block`` holds each block's bytes (its
        weight slots), counted at the tallest row slice.
        """
        if height < 1 or width < 1 or bits < 1:
            raise InvalidInstanceError(
                f"cannot tile a {height}x{width} weight matrix at {bits} bits onto {self.name}"
            )
        element = _ceil_div(bits, 8)
        limit = self.block_bytes
        rows = _balanced(height, _ceil_div(height * element, limit))
        tallest = rows[0]
        columns = _balanced(width, _ceil_div(width, max(1, limit // (tallest * element))))
        return WeightTiling(
            row_slices=rows,
            column_blocks=columns,
            crossbars_per_block=tuple(tallest * c * element for c in columns),
        )

    def execution_ns(self, work: Work) -> int:
        if isinstance(work, FixedWork):
            return work.ns
        if isinstance(work, MatrixWork):
            return self.cycles_ns(self.matrix_cycles(work))
        if isinstance(work, VectorWork):
            return self.cycles_ns(self.vector_cycles(work))
        if isinstance(work, MoveWork):
            # A copy within tile memory: one load/store pass, i.e. a one-operand vector op
            # over every run (a stride changes addressing, not the pass count).
            copy = VectorWork(1, 1, work.bits)
            return self.cycles_ns(
                sum(
                    count * self.vector_cycles(replace(copy, elements=n))
                    for count, n in work.blocks
                )
            )
        raise TypeError(f"unknown work {work!r}")

    def transfer_ns(self, src: int, dst: int, nbytes: int, direct: bool = False) -> int:
        """One sync plus ``nbytes`` at the exchange rate; 0 on the same tile.

        The exchange writes straight into the receiver's buffer, so a ``direct``
        receive costs the same.
        """
        if src == dst:
            return 0
        return self._exchange_ns(nbytes, direct)

    def _exchange_ns(self, nbytes: int, direct: bool = False) -> int:
        return self.superstep_ns(0, nbytes)

    def transfer_terms(self, cores: Sequence[int]) -> TransferTerms:
        """Every pair of distinct tiles costs the same: a constant per transfer."""
        return TransferTerms(None, None, 1, self._exchange_ns)

    def mean_transfer_ns(self, nbytes: int, direct: bool = False) -> int:
        """Every pair of distinct tiles costs the same; 0 on a one-tile chip."""
        return 0 if self.chip.tiles == 1 else self.superstep_ns(0, nbytes)

    def max_transfer_ns(self, nbytes: int) -> int:
        """Every pair of distinct tiles costs the same."""
        return self.mean_transfer_ns(nbytes)

    @property
    def uniform_transfers(self) -> bool:
        """True: the exchange is all-to-all."""
        return True

    def global_read_ns(self, nbytes: int) -> int:
        """0: model inputs are taken to be in tile SRAM (streaming memory is not modelled)."""
        return 0

    def global_write_ns(self, nbytes: int) -> int:
        """0: outputs stay in tile SRAM (streaming memory is not modelled)."""
        return 0

    @property
    def warnings(self) -> tuple[str, ...]:
        return ()

    def step_timing(self) -> None:
        """None: whole transfers only, no phase prices (periodic reports are ``unavailable``)."""
        return None

    def instruction_frontend(self) -> None:
        """None: no instruction format is modelled for this target."""
        return None

    def estimate_realized_schedule_cost(
        self,
        programs: Sequence[Sequence[Step]],
        name: str,
        recurrence: bool = False,
        baseline_service_ns: int = 0,
    ) -> RealizedScheduleCost:
        """Unavailable: the IPU is priced per bulk-synchronous superstep, not per step."""
        return RealizedScheduleCost.unavailable(
            f"{name}: target {self.name} is bulk-synchronous (supersteps and an exchange); "
            "it has no queue model of a realized pipeline schedule"
        )

    # -- exchange capability -------------------------------------------------

    def exchange(self) -> IpuTarget:
        """The IPU is the bulk-synchronous exchange machine (`ExchangeTarget`)."""
        return self

    @property
    def max_transfer_words(self) -> int:
        return self.chip.max_transfer_words

    @property
    def tile_memory_bytes(self) -> int:
        return self.chip.sram_bytes

    def with_weight_block(self, nbytes: int) -> IpuTarget:
        """The same chip with weight blocks of at most ``nbytes`` (`weight_block_bytes`)."""
        return replace(self, weight_block_bytes=nbytes)

    def cost_key(self) -> IpuChip:
        """The chip's facts: they price every task; the block budget is `block_bytes`."""
        return self.chip

    def hop_matrix(self) -> np.ndarray:
        """`hops` of every pair of tiles as one ``(P, P)`` array."""
        return 1 - np.eye(self.chip.tiles, dtype=np.int64)

    def transfer_matrix_ns(self, nbytes: int) -> np.ndarray:
        """`transfer_ns` of every pair of tiles as one ``(P, P)`` array."""
        return self.hop_matrix() * self.superstep_ns(0, nbytes)

    def describe(self) -> dict[str, object]:
        c = self.chip
        return {
            "kind": "ipu",
            "name": self.name,
            "chip": c.chip,
            "cores": c.tiles,
            "sram_bytes_per_tile": c.sram_bytes,
            "clock_mhz": c.clock_mhz,
            "worker_threads_per_tile": c.workers,
            "exchange_bytes_per_cycle_per_tile": c.exchange_bytes_per_cycle,
            "sync_cycles": c.sync_cycles,
            "amp_flops_per_cycle_fp16": c.amp_flops_per_cycle,
            "max_transfer_words": c.max_transfer_words,
            "weight_block_bytes": self.block_bytes,
            "capacity": "tile SRAM bytes (1 slot = 1 byte)",
        }

    # -- bulk-synchronous timing ---------------------------------------------

    def cycles_ns(self, cycles: int) -> int:
        """``cycles`` tile clock cycles in whole nanoseconds, rounded up."""
        return _ceil_div(cycles * 1000, self.chip.clock_mhz)

    def exchange_cycles(self, nbytes: int) -> int:
        """Cycles one tile needs to send or receive ``nbytes``."""
        return _ceil_div(nbytes, self.chip.exchange_bytes_per_cycle)

    def superstep_ns(self, compute_ns: int, exchange_bytes: int) -> int:
        """A superstep: the busiest tile's compute, one sync, then the exchange.

        ``exchange_bytes`` is what the busiest tile sends or receives in the
        exchange phase (a tile moves `exchange_bytes_per_cycle` each way per cycle).
        """
        return compute_ns + self.cycles_ns(
            self.chip.sync_cycles + self.exchange_cycles(exchange_bytes)
        )

    def matrix_cycles(self, work: MatrixWork) -> int:
        """AMP cycles of ``mvms`` products of a ``rows`` x ``cols`` block (2 FLOPs per MAC)."""
        rate = self.chip.amp_flops_per_cycle
        if work.bits > WIDE_OPERAND_BITS:
            rate = max(1, rate // 4)
        return _ceil_div(2 * work.mvms * work.rows * work.cols, rate)

    def vector_cycles(self, work: VectorWork) -> int:
        """One 64-bit vector instruction per cycle over ``elements`` (see the module docstring)."""
        if work.operands < 1:
            raise InvalidInstanceError(f"vector work needs at least 1 operand, got {work.operands}")
        lanes = VECTOR_BITS // (WIDE_OPERAND_BITS if work.bits <= WIDE_OPERAND_BITS else 32)
        return _ceil_div(work.elements, lanes) * max(1, work.operands - 1)
