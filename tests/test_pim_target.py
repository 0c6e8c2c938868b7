"""`PimTarget` costs recomputed by hand from shipped configs, field by field.

pimsim-64 (pimsim-nn example latency_config.json) fields used below:
core period 1; matrix: period 1, pipeline_mode true, dac_resolution 1, dac_count 128,
xbar_size 128x128, cell_precision 8, xbar_latency 30, sample_hold 1, adc_latency 10,
adc_count 2, shift_adder 1, output_buffer 1, dac_latency 1 (default), input_buffer 0
(never read); vector_width 16, vector_latency_cycle 4; local memory data_width 64,
period 1, read 1, write 1 cycle; global memory data_width 16, period 1, read 1, write 1;
bus_width 8; network_mesh_64.json: L[0][9] = L[9][0] = 6, L[0][5] = 18, L[5][0] = 12,
L[c][-10] = 15 for every core.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

from raptor_cp.errors import InvalidInstanceError
from raptor_cp.targets.base import (
    GLOBAL_MEMORY,
    FixedWork,
    MatrixWork,
    SchedulingTarget,
    VectorWork,
    WeightTiling,
)
from raptor_cp.targets.pim import PimTarget

DATA = Path(__file__).parent / "data" / "configs"


@pytest.fixture(scope="module")
def pimsim64() -> PimTarget:
    return PimTarget.from_file(DATA / "pimsim-nn" / "latency_config.json")


@pytest.fixture(scope="module")
def pimcomp() -> PimTarget:
    return PimTarget.from_file(DATA / "PIMCOMP-NN" / "config.json")


@pytest.fixture(scope="module")
def three() -> PimTarget:
    return PimTarget.from_file(DATA / "three_cores" / "config.json")


def test_pim_target_satisfies_the_protocol(pimsim64: PimTarget) -> None:
    assert isinstance(pimsim64, SchedulingTarget)


def test_mvm_one_crossbar_8_bits(pimsim64: PimTarget) -> None:
    # input_times = 8 // 1 = 8; dac_times = 128 // 128 = 1; adc_times = 128 // 2 = 64
    # xbar_read_cycle = ceil(30 / 1) = 30; front = 0 + 1 + 30 + 1 = 32
    # back step = max(10, 1 + 1) = 10; back = 10 + 1 + 1 + 63 * 10 = 642
    # pipelined: 32 + 642 + (8 * 1 - 1) * max(32, 642) = 674 + 4494 = 5168 cycles = 5168 ns
    # read 128 rows * 1 B * 8 = 1024 B -> ceil(1024 / 64) = 16 accesses * 1 cycle = 16 ns
    # write int(8 * 128 / 8) = 128 cols * 1 B * 1 crossbar = 128 B -> 2 accesses = 2 ns
    # total 16 + 5168 + 2 = 5186 ns
    assert (
        pimsim64.execution_ns(MatrixWork(mvms=1, rows=128, cols=128, crossbars=1, bits=8)) == 5186
    )


def test_mvm_time_scales_with_mvms_and_group_write(pimsim64: PimTarget) -> None:
    # 3 crossbars: write 128 * 1 * 3 = 384 B -> 6 accesses = 6 ns; 16 + 5168 + 6 = 5190
    # 4 MVMs: 4 * 5190 = 20760 ns (used rows/cols do not change the time)
    work = MatrixWork(mvms=4, rows=100, cols=300, crossbars=3, bits=8)
    assert pimsim64.execution_ns(work) == 20760


def test_mvm_without_pipeline_serialises_stages(tmp_path: Path) -> None:
    data = json.loads((DATA / "pimsim-nn" / "latency_config.json").read_text())
    data["chip_config"]["core_config"]["matrix_config"]["pipeline_mode"] = False
    data["chip_config"]["network_config"].pop("net_config_file_path")
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    # (32 + 642) * 8 = 5392 cycles; 16 + 5392 + 2 = 5410 ns
    target = PimTarget.from_file(path)
    assert target.execution_ns(MatrixWork(1, 128, 128, 1, 8)) == 5410


def test_mvm_with_default_fractional_matrix_period() -> None:
    # HEAPLab fixture: all matrix fields default; period 1/1.28 = 0.78125 ns exactly.
    # input_times 8, dac_times 128 // 128 = 1, adc_times 128 // 1 = 128
    # xbar_read_cycle = ceil(30 / 0.78125) = ceil(38.4) = 39; front = 1 + 39 + 1 = 41
    # back step = max(1, 1 + 1) = 2; back = 1 + 1 + 1 + 127 * 2 = 257
    # cycles = 41 + 257 + 7 * 257 = 2097; 2097 * 0.78125 = 1638.28125 ns -> 1638281 ps
    # local memory defaults: data_width 16, read 8, write 10 cycles of 1 ns
    # read 1024 B -> 64 accesses * 8 = 512 ns; write int(2 * 128 / 8) = 32 B -> 2 * 10 = 20 ns
    # 512000 + 1638281 + 20000 = 2170281 ps -> rounded up to 2171 ns
    target = PimTarget.from_file(DATA / "heaplab" / "latency_config.json")
    assert target.execution_ns(MatrixWork(1, 128, 128, 1, 8)) == 2171


def test_two_operand_vector_add(pimsim64: PimTarget) -> None:
    # 100 elements * ceil(8 / 8) = 100 B; read ceil(100 / 64) = 2 accesses = 2 ns, twice = 4
    # compute ceil(100 / 16) = 7 steps * 4 = 28 ns (no period applied)
    # write 100 B = 2 ns; total 4 + 28 + 2 = 34 ns
    assert pimsim64.execution_ns(VectorWork(elements=100, operands=2, bits=8)) == 34


def test_one_operand_vector_op_reads_once(pimsim64: PimTarget) -> None:
    # 2 + 28 + 2 = 32 ns
    assert pimsim64.execution_ns(VectorWork(elements=100, operands=1, bits=8)) == 32


def test_three_operands_cost_two_binary_ops(pimsim64: PimTarget) -> None:
    assert pimsim64.execution_ns(VectorWork(elements=100, operands=3, bits=8)) == 2 * 34


def test_vector_writeback_uses_the_output_width_it_is_given(pimsim64: PimTarget) -> None:
    # 100 8-bit elements: reads 100 B = 2 accesses = 2 ns each, twice = 4; compute 7 * 4 =
    # 28 ns. Written at 16 bits (obiw, a widening op) 200 B = 4 accesses = 4 ns: 36 ns;
    # at the input width 100 B = 2 ns: 34 ns (the oracle's VectorUnit width rule).
    widening = VectorWork(elements=100, operands=2, bits=8, output_bits=16)
    plain = VectorWork(elements=100, operands=2, bits=8)
    assert (pimsim64.execution_ns(widening), pimsim64.execution_ns(plain)) == (36, 34)


def test_zero_width_vector_work_moves_no_bytes(pimsim64: PimTarget) -> None:
    # pimsim-nn before any setbw: widths 0, only the 7 compute steps of 4 ns remain.
    assert pimsim64.execution_ns(VectorWork(elements=100, operands=2, bits=0)) == 28


def test_matrix_work_reads_at_the_input_width_and_writes_at_the_output_width(
    pimsim64: PimTarget,
) -> None:
    same = pimsim64.execution_ns(MatrixWork(1, 128, 128, 1, 8))
    wide_out = pimsim64.execution_ns(MatrixWork(1, 128, 128, 1, 8, input_bits=8, output_bits=16))
    wide_in = pimsim64.execution_ns(MatrixWork(1, 128, 128, 1, 8, input_bits=16, output_bits=8))
    assert same < wide_out < wide_in  # twice the write-back; twice the reads and DAC steps
    assert pimsim64.execution_ns(MatrixWork(1, 128, 128, 1, 8, 8, 8)) == same


def test_fixed_work_costs_its_ns(pimsim64: PimTarget) -> None:
    assert pimsim64.execution_ns(FixedWork(ns=123)) == 123


def test_vector_work_without_operands_is_rejected(pimsim64: PimTarget) -> None:
    with pytest.raises(
        InvalidInstanceError, match=r"^vector work needs at least 1 operand, got 0$"
    ):
        pimsim64.execution_ns(VectorWork(elements=4, operands=0, bits=8))


def test_transfer_uses_the_table(pimsim64: PimTarget) -> None:
    # request 1 flit * L[0][9] 6 + ready 1 flit * L[9][0] 6 = 12
    # sender read 100 B = 2 ns; data ceil(100 / 8) = 13 flits * 6 = 78; receiver write 2 ns
    # 12 + 2 + 78 + 2 = 94 ns
    assert pimsim64.transfer_ns(0, 9, 100) == 94


def test_transfer_follows_the_asymmetric_table(pimsim64: PimTarget) -> None:
    # 0 -> 5: 18 + 12 + 2 + 13 * 18 + 2 = 268; 5 -> 0: 12 + 18 + 2 + 13 * 12 + 2 = 190
    assert (pimsim64.transfer_ns(0, 5, 100), pimsim64.transfer_ns(5, 0, 100)) == (268, 190)


def test_transfer_to_the_same_core_is_free(pimsim64: PimTarget) -> None:
    assert pimsim64.transfer_ns(7, 7, 10_000) == 0


def test_global_read_and_write(pimsim64: PimTarget) -> None:
    # ld: 1 flit * 15 + global read ceil(100 / 16) = 7 ns + local write 2 ns = 24 ns
    # st: local read 2 ns + 13 flits * 15 = 195 + global write 7 ns = 204 ns
    assert (pimsim64.global_read_ns(100), pimsim64.global_write_ns(100)) == (24, 204)


def test_step_timing_splits_a_transfer_into_its_phases(pimsim64: PimTarget) -> None:
    # The phases of test_transfer_uses_the_table: request and ready flits 6 ns each, local
    # read 2 ns, 13 data flits * 6 = 78 ns, local write 2 ns; they sum to transfer_ns.
    timing = pimsim64.step_timing()
    request, ready = timing.control_ns(0, 9), timing.control_ns(9, 0)
    read, data, write = (
        timing.local_read_ns(100),
        timing.data_ns(0, 9, 100),
        timing.local_write_ns(100),
    )
    assert (request, ready, read, data, write) == (6, 6, 2, 78, 2)
    assert request + ready + read + data + write == pimsim64.transfer_ns(0, 9, 100)
    # Global memory alone (no network, no local side): ceil(100 / 16) = 7 accesses of 1 ns;
    # core 0's flit to the memory node is 15 ns; the core clock is 1 ns.
    assert (timing.global_read_ns(100), timing.global_write_ns(100)) == (7, 7)
    assert (timing.control_ns(0, GLOBAL_MEMORY), timing.cycle_ns()) == (15, 1)


def test_mean_transfer_by_hand(three: PimTarget) -> None:
    # L: 0->1 1, 1->0 2, 0->2 3, 2->0 4, 1->2 5, 2->1 6; bus 4 B; local memory 4 B/access,
    # 1 ns read and write. 4 bytes: 1 flit; endpoint 1 + 1 = 2 ns.
    # pairs: 1+2+1+2 = 6, 2+1+2+2 = 7, 3+4+3+2 = 12, 4+3+4+2 = 13, 5+6+5+2 = 18, 6+5+6+2 = 19
    # sum 75 / 6 pairs = 12.5 -> 13 (halves up)
    assert [three.transfer_ns(s, d, 4) for s, d in [(0, 1), (1, 0), (0, 2)]] == [6, 7, 12]
    assert three.mean_transfer_ns(4) == 13


def test_mean_transfer_is_the_rounded_mean_of_all_pairs(pimsim64: PimTarget) -> None:
    for nbytes in (0, 1, 100, 4096):
        pairs = [(s, d) for s in range(64) for d in range(64) if s != d]
        mean = Fraction(sum(pimsim64.transfer_ns(s, d, nbytes) for s, d in pairs), len(pairs))
        assert pimsim64.mean_transfer_ns(nbytes) == int(mean + Fraction(1, 2))


def test_global_memory_flit_is_the_mean_over_cores(three: PimTarget) -> None:
    # L[c][-10] = 10, 20, 40: mean 70 / 3 = 23.3 -> 23 ns per flit
    # ld 4 B: 23 + global read (default data_width 16, 8 cycles) 8 + local write 1 = 32
    # st 4 B: local read 1 + 1 flit 23 + global write (10 cycles) 10 = 34
    assert (three.global_read_ns(4), three.global_write_ns(4)) == (32, 34)


def test_complete_table_gives_no_warning(pimsim64: PimTarget, three: PimTarget) -> None:
    assert (pimsim64.warnings, three.warnings) == ((), ())


def test_empty_table_warns_that_messages_cost_nothing() -> None:
    table = DATA / "heaplab" / "network.json"
    target = PimTarget.from_file(DATA / "heaplab" / "throughput_config.json")
    assert target.warnings == (
        f"{table}: 2 of 2 core pairs have no latency entry; they cost 0 ns per flit, "
        "as in pimsim-nn",
        f"{table}: 2 of 2 cores have no latency entry to global memory node -10; "
        "they cost 0 ns per flit, as in pimsim-nn",
    )
    # Only the local memory is charged (defaults: 16 B/access, read 8, write 10 cycles):
    # 100 B -> ceil(100 / 16) = 7 accesses; read 7 * 8 = 56, write 7 * 10 = 70 -> 126 ns
    assert target.transfer_ns(0, 1, 100) == 126


def test_absent_network_file_falls_back_to_the_mesh(pimcomp: PimTarget) -> None:
    config = DATA / "PIMCOMP-NN" / "config.json"
    assert pimcomp.warnings == (
        f"{config}: network file network.json not found next to the config; "
        "using the mesh model 2*hops+2 ns per flit",
    )
    assert pimcomp.describe()["network"] == "mesh 2*hops+2 (network.json not found next to config)"


def test_mesh_transfer_by_hand(pimcomp: PimTarget) -> None:
    # 12x12 grid: core 13 = (1, 1), 2 hops from core 0 -> 2 * 2 + 2 = 6 ns per flit
    # local memory 64 B/access, read 20, write 30 cycles; bus 32 B
    # 6 + 6 + read 2 * 20 + ceil(100 / 32) = 4 flits * 6 + write 2 * 30 = 136 ns
    assert pimcomp.transfer_ns(0, 13, 100) == 136


def test_mesh_puts_global_memory_one_hop_away(pimcomp: PimTarget) -> None:
    # ld 100 B: 1 flit * (2 * 1 + 2) + global read ceil(100 / 32) = 4 * 40 + local write 2 * 30
    assert pimcomp.global_read_ns(100) == 4 + 160 + 60


def test_coordinates_and_hops_are_row_major(pimcomp: PimTarget) -> None:
    assert (pimcomp.coordinates(13), pimcomp.coordinates(135)) == ((1, 1), (11, 3))
    assert pimcomp.hops(0, 135) == 14
    assert pimcomp.hops(135, 135) == 0


def test_capacity_is_crossbars_per_core(pimcomp: PimTarget) -> None:
    assert pimcomp.capacity(0) == 64


def test_weight_tiling_cuts_rows_by_crossbar_height(pimcomp: PimTarget) -> None:
    # 2-bit cells, 8-bit weights: 128 * 2 // 8 = 32 columns per crossbar; 100 cols -> 4
    assert pimcomp.weight_tiling(300, 100, 8) == WeightTiling(
        row_slices=(128, 128, 44), column_blocks=(100,), crossbars_per_block=(4,)
    )


def test_weight_tiling_splits_columns_wider_than_a_core(pimcomp: PimTarget) -> None:
    # ceil(3000 / 32) = 94 crossbars > 64: blocks of 64 * 32 = 2048 columns
    # 3000 = 2048 + 952; ceil(952 / 32) = 30 crossbars
    assert pimcomp.weight_tiling(128, 3000, 8) == WeightTiling(
        row_slices=(128,), column_blocks=(2048, 952), crossbars_per_block=(64, 30)
    )


def test_weights_no_wider_than_a_cell_use_every_column(pimcomp: PimTarget) -> None:
    # bits 1 and 2 <= cell_precision 2: 128 columns per crossbar; 129 columns -> 2
    tiling = WeightTiling(row_slices=(10,), column_blocks=(129,), crossbars_per_block=(2,))
    assert pimcomp.weight_tiling(10, 129, 1) == tiling
    assert pimcomp.weight_tiling(10, 129, 2) == tiling


def test_weight_tiling_of_an_empty_matrix_is_rejected(pimcomp: PimTarget) -> None:
    with pytest.raises(
        InvalidInstanceError,
        match=r"^cannot tile a 0x5 weight matrix at 8 bits onto \(128, 128\) crossbars$",
    ):
        pimcomp.weight_tiling(0, 5, 8)


def test_describe_summarises_the_chip(pimsim64: PimTarget) -> None:
    table = DATA / "pimsim-nn" / "network_mesh_64.json"
    assert pimsim64.describe() == {
        "kind": "pim",
        "name": str(DATA / "pimsim-nn" / "latency_config.json"),
        "config": str(DATA / "pimsim-nn" / "latency_config.json"),
        "cores": 64,
        "layout": [8, 8],
        "crossbars_per_core": 64,
        "crossbar": [128, 128],
        "cell_precision": 8,
        "bus_width_bytes": 8,
        "network": f"table {table}",
        "mvm_ns_8bit": 5186,
        "warnings": [],
    }
