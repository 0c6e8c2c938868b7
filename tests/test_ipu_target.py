"""`IpuTarget`: preset facts, tile compute, exchange timing and weight tiling by hand.

Preset facts (ipu_targets.csv): Mk1 1,216 tiles x 262,144 B at 1,600 MHz; Mk2 1,472
tiles x 638,976 B at 1,850 MHz; 6 workers, 4 exchange bytes per cycle, sync 90 cycles.
AMP FP16 FLOPs per cycle per tile (derived): Mk1 64, Mk2 128.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from raptor_cp.errors import InvalidConfigError, InvalidInstanceError
from raptor_cp.heuristics.heft import HeftScheduler
from raptor_cp.heuristics.peft import PeftScheduler
from raptor_cp.problems import LatencyProblem
from raptor_cp.problems.latency import check_schedule
from raptor_cp.targets.base import (
    FixedWork,
    MatrixWork,
    SchedulingTarget,
    VectorWork,
)
from raptor_cp.targets.ipu import IPU_PRESETS, MK1, MK2, IpuTarget
from raptor_cp.workload.lowering import lower
from raptor_cp.workload.model import ALL_ROWS, SAME_ROWS, Operation, OpKind, Workload


@pytest.fixture(scope="module")
def mk1() -> IpuTarget:
    return IpuTarget.preset("ipu-mk1")


@pytest.fixture(scope="module")
def mk2() -> IpuTarget:
    return IpuTarget.preset("ipu-mk2")


def _mlp() -> Workload:
    """8 rows x 64 -> fc1 128 -> relu -> fc2 64 (rows = tokens), 8-bit."""
    return Workload(
        "mlp",
        (
            Operation("x", "Input", OpKind.INPUT, output_shape=(8, 64)),
            Operation(
                "fc1", "Gemm", OpKind.WEIGHTED, ("x",), (SAME_ROWS,), (8, 128), 8, 64, 128, 1
            ),
            Operation(
                "relu",
                "Relu",
                OpKind.VECTOR,
                ("fc1",),
                (SAME_ROWS,),
                (8, 128),
                8,
                vector_per_row=128,
            ),
            Operation(
                "fc2", "Gemm", OpKind.WEIGHTED, ("relu",), (ALL_ROWS,), (8, 64), 8, 128, 64, 1
            ),
        ),
    )


def test_ipu_target_satisfies_the_protocol(mk2: IpuTarget) -> None:
    assert isinstance(mk2, SchedulingTarget)


def test_ipu_has_no_step_timing_and_no_warnings(mk2: IpuTarget) -> None:
    assert mk2.step_timing() is None
    # One sync (90 cycles) plus 100 B at 4 B/cycle (25 cycles) at 1.85 GHz: ceil(62.2) = 63 ns.
    assert mk2.transfer_ns(0, 1, 100) == 63
    assert mk2.warnings == ()


def test_presets_carry_the_chip_facts(mk1: IpuTarget, mk2: IpuTarget) -> None:
    assert IPU_PRESETS == ("ipu-mk1", "ipu-mk2")
    assert (mk1.name, mk1.cores, mk1.capacity(0), mk1.chip.clock_mhz) == (
        "ipu-mk1",
        1216,
        262144,
        1600,
    )
    assert (mk2.name, mk2.cores, mk2.capacity(1471), mk2.chip.clock_mhz) == (
        "ipu-mk2",
        1472,
        638976,
        1850,
    )
    for target in (mk1, mk2):
        facts = target.describe()
        assert facts["worker_threads_per_tile"] == 6
        assert facts["exchange_bytes_per_cycle_per_tile"] == 4
        assert facts["sync_cycles"] == 90
    assert (mk1.chip.amp_flops_per_cycle, mk2.chip.amp_flops_per_cycle) == (64, 128)


def test_presets_match_their_source_rows() -> None:
    with (Path(__file__).parent / "data" / "ipu" / "ipu_targets.csv").open() as f:
        facts = {(row["chip"], row["field"]): float(row["value"]) for row in csv.DictReader(f)}
    mk1, mk2, poplar = "GC2 (Colossus Mk1)", "GC200 (Colossus Mk2)", "IPU (Poplar target)"
    assert (MK1.tiles, MK1.sram_bytes, MK1.clock_mhz, MK1.workers) == (
        facts[mk1, "tiles_per_chip"],
        facts[mk1, "sram_per_tile"],
        facts[mk1, "clock_report"],
        facts[mk1, "worker_threads_per_tile"],
    )
    assert (MK2.tiles, MK2.sram_bytes, MK2.clock_mhz, MK2.workers * MK2.tiles) == (
        facts[mk2, "tiles_per_chip"],
        facts[mk2, "sram_per_tile"],
        facts[mk2, "clock_report_bow"],
        facts[mk2, "threads_per_chip"],
    )
    for chip in (MK1, MK2):
        assert chip.exchange_bytes_per_cycle == facts[poplar, "exchange_bytes_per_cycle_per_tile"]
        assert chip.sync_cycles == facts[poplar, "sync_cost_estimate"]
    # AMP rates: FP16 peak / (tiles x clock); Mk2's 250 TFLOP/s is at the M2000's ~1.33 GHz
    assert round(facts[mk1, "fp16_mixed_peak"] * 1e12 / (1216 * 1.6e9)) == MK1.amp_flops_per_cycle
    assert round(facts[mk2, "fp16_peak"] * 1e12 / (1472 * 1.33e9)) == MK2.amp_flops_per_cycle
    assert round(facts[mk1, "fp16_mixed_peak"] / facts[mk1, "fp32_peak"]) == 4


def test_unknown_preset_is_rejected() -> None:
    with pytest.raises(
        InvalidConfigError,
        match=r"^unknown ipu preset 'ipu-mk3': expected one of ipu-mk1, ipu-mk2$",
    ):
        IpuTarget.preset("ipu-mk3")


def test_weight_block_outside_the_tile_is_rejected() -> None:
    with pytest.raises(
        InvalidConfigError,
        match=r"^ipu target ipu-mk1: weight_block_bytes must be in 1\.\.262144 \(the tile SRAM\), "
        r"got 262145$",
    ):
        IpuTarget.preset("ipu-mk1", weight_block_bytes=262145)


def test_exchange_is_all_to_all(mk2: IpuTarget) -> None:
    assert (mk2.hops(3, 3), mk2.hops(0, 1471), mk2.hops(700, 2)) == (0, 1, 1)
    assert mk2.coordinates(5) == (0, 5)


def test_pair_matrices_equal_the_per_pair_methods(mk2: IpuTarget) -> None:
    small = mk2.with_tiles(5)
    pairs = [(a, b) for a in range(5) for b in range(5)]
    assert small.hop_matrix().ravel().tolist() == [small.hops(a, b) for a, b in pairs]
    assert small.transfer_matrix_ns(1000).ravel().tolist() == [
        small.transfer_ns(a, b, 1000) for a, b in pairs
    ]


@pytest.mark.parametrize(("preset", "ns"), [("ipu-mk1", 213), ("ipu-mk2", 184)])
def test_transfer_is_one_sync_plus_words_at_4_bytes_per_cycle(preset: str, ns: int) -> None:
    # 1000 B / 4 B per cycle = 250 cycles + 90 sync = 340 cycles;
    # Mk1: 340 / 1.6 GHz = 212.5 -> 213 ns; Mk2: 340 / 1.85 GHz = 183.8 -> 184 ns
    target = IpuTarget.preset(preset)
    assert target.transfer_ns(0, 1, 1000) == ns
    assert target.mean_transfer_ns(1000) == ns
    assert target.transfer_ns(7, 7, 1000) == 0


def test_superstep_is_compute_plus_sync_plus_exchange(mk2: IpuTarget) -> None:
    # 500 ns compute + (90 + ceil(10 / 4) = 93 cycles -> 93 / 1.85 = 50.3 -> 51 ns)
    assert mk2.superstep_ns(500, 10) == 551
    # a sync with nothing to exchange: 90 / 1.85 = 48.6 -> 49 ns
    assert mk2.transfer_ns(0, 1, 0) == 49


def test_matrix_work_runs_at_the_amp_rate(mk1: IpuTarget, mk2: IpuTarget) -> None:
    # 197 rows through a 768 x 64 block: 2 x 197 x 768 x 64 = 19,365,888 FLOPs
    # Mk2 FP8/FP16: / 128 = 151,296 cycles / 1.85 GHz = 81,781.6 -> 81,782 ns
    # Mk1 FP32 (quarter rate 16): 1,210,368 cycles / 1.6 GHz = 756,480 ns
    assert mk2.execution_ns(MatrixWork(197, 768, 64, 49152, 8)) == 81782
    assert mk1.execution_ns(MatrixWork(197, 768, 64, 196608, 32)) == 756480


def test_vector_work_issues_one_64_bit_instruction_per_cycle(
    mk1: IpuTarget, mk2: IpuTarget
) -> None:
    # 1000 FP16 elements, 4 per instruction: 250 cycles / 1.6 GHz = 156.25 -> 157 ns
    assert mk1.execution_ns(VectorWork(1000, 2, 16)) == 157
    # three operands: two passes = 500 cycles / 1.85 GHz = 270.3 -> 271 ns
    assert mk2.execution_ns(VectorWork(1000, 3, 8)) == 271
    # FP32: 2 per instruction, 500 cycles on Mk1 = 312.5 -> 313 ns
    assert mk1.execution_ns(VectorWork(1000, 1, 32)) == 313
    assert mk1.execution_ns(FixedWork(77)) == 77


def test_weights_are_cut_into_balanced_column_blocks(mk2: IpuTarget) -> None:
    # ViT fc1 768 x 3072 at FP8 with blocks of 638,976 / 4 = 159,744 B: one column of
    # 768 B fits, so no row cut; 159,744 // 768 = 208 columns per block at most ->
    # ceil(3072 / 208) = 15 blocks of 205 (12 of them) and 204 (3); 768 x 205 = 157,440 B
    tiling = mk2.weight_tiling(768, 3072, 8)
    assert tiling.row_slices == (768,)
    assert tiling.column_blocks == (205,) * 12 + (204,) * 3
    assert tiling.crossbars_per_block == (157440,) * 12 + (156672,) * 3


def test_rows_are_cut_only_when_one_column_exceeds_the_block() -> None:
    # 3000 x 4 FP16 weights, block 2000 B: a column is 6000 B -> 3 row slices of 1000
    # rows (2000 B each); 2000 // 2000 = 1 column per block -> 4 blocks of 2000 B
    target = IpuTarget.preset("ipu-mk1", weight_block_bytes=2000)
    tiling = target.weight_tiling(3000, 4, 16)
    assert tiling.row_slices == (1000, 1000, 1000)
    assert tiling.column_blocks == (1, 1, 1, 1)
    assert tiling.crossbars_per_block == (2000,) * 4


def test_empty_weight_matrix_is_rejected(mk1: IpuTarget) -> None:
    with pytest.raises(
        InvalidInstanceError, match=r"^cannot tile a 0x4 weight matrix at 8 bits onto ipu-mk1$"
    ):
        mk1.weight_tiling(0, 4, 8)


def test_list_schedulers_run_unchanged_on_the_ipu() -> None:
    # PEFT on 8 tiles of a Mk2 and HEFT on the full chip both pass the checker.
    small = IpuTarget.preset("ipu-mk2", weight_block_bytes=4096).with_tiles(8)
    assert (small.name, small.cores) == ("ipu-mk2:8", 8)
    problem = LatencyProblem(lower(_mlp(), small, lanes=4), small)
    solution = PeftScheduler().solve(problem)
    assert solution.schedule is not None
    check_schedule(problem, solution.schedule)
    full = IpuTarget.preset("ipu-mk2")
    problem = LatencyProblem(lower(_mlp(), full, lanes=4), full)
    solution = HeftScheduler().solve(problem)
    assert solution.schedule is not None
    check_schedule(problem, solution.schedule)
    assert solution.schedule.cores_used > 1
