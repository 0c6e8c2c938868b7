"""Reading pimsim-nn chip configs: defaults, shipped files, and one-line errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from raptor_cp.errors import InvalidConfigError
from raptor_cp.targets.pim.config import (
    ChipConfig,
    CoreConfig,
    MatrixConfig,
    MemoryConfig,
    NetworkConfig,
    load_pim_config,
)

DATA = Path(__file__).parent / "data" / "configs"
MALFORMED = DATA / "malformed"


def _exactly(message: str) -> str:
    return "^" + re.escape(message) + "$"


def test_minimal_config_takes_config_hpp_defaults() -> None:
    # HEAPLab's fixture sets only core_cnt 1, xbar_array_count 4 and layout [1, 1].
    config = load_pim_config(DATA / "heaplab" / "latency_config.json")
    default_memory = MemoryConfig(
        data_width=16, period=1.0, read_latency_cycle=8, write_latency_cycle=10
    )
    assert config.chip == ChipConfig(
        core_cnt=1,
        global_memory_switch_id=-10,
        core=CoreConfig(
            period=1.0,
            vector_width=16,
            vector_latency_cycle=8,
            global_memory_switch_id=-10,
            local_memory=default_memory,
            matrix=MatrixConfig(
                xbar_array_count=4,
                period=0.78125,
                pipeline_mode=True,
                dac_resolution=1,
                dac_latency_cycle=1,
                dac_count=128,
                xbar_size=(128, 128),
                cell_precision=2,
                xbar_latency=30.0,
                sample_hold_latency_cycle=1,
                adc_latency_cycle=1,
                adc_count=1,
                shift_adder_latency_cycle=1,
                output_buffer_latency_cycle=1,
            ),
        ),
        global_memory=default_memory,
        network=NetworkConfig(bus_width=16, layout=(1, 1), net_config_file_path="network.json"),
    )


@pytest.mark.parametrize(
    ("path", "cores", "layout"),
    [
        ("pimsim-nn/latency_config.json", 64, (8, 8)),
        ("PIMCOMP-NN/config.json", 136, (12, 12)),
        ("heaplab/latency_config.json", 1, (1, 1)),
        ("heaplab/throughput_config.json", 2, (1, 2)),
        ("heaplab/sync_tokens_config.json", 2, (1, 2)),
    ],
)
def test_shipped_chip_config_loads(path: str, cores: int, layout: tuple[int, int]) -> None:
    config = load_pim_config(DATA / path)
    assert (config.chip.core_cnt, config.chip.network.layout) == (cores, layout)


def test_pimsim_example_fields_are_read() -> None:
    chip = load_pim_config(DATA / "pimsim-nn" / "latency_config.json").chip
    matrix = chip.core.matrix
    assert (matrix.xbar_array_count, matrix.cell_precision, matrix.xbar_latency) == (64, 8, 30.0)
    assert (matrix.adc_latency_cycle, matrix.adc_count, matrix.period) == (10, 2, 1.0)
    assert (chip.core.vector_width, chip.core.vector_latency_cycle) == (16, 4)
    assert chip.core.local_memory == MemoryConfig(64, 1.0, 1, 1)
    assert chip.global_memory == MemoryConfig(16, 1.0, 1, 1)
    assert chip.network.bus_width == 8


def test_network_table_is_read_relative_to_the_config() -> None:
    config = load_pim_config(DATA / "pimsim-nn" / "latency_config.json")
    assert config.network is not None
    latency = config.network.latency
    assert (latency[0, 9], latency[0, 5], latency[5, 0], latency[0, -10]) == (6, 18, 12, 15)
    assert len(latency) == 64 * 63 + 2 * 64  # no self pairs; both directions to node -10


def test_empty_network_table_loads_with_no_entries() -> None:
    config = load_pim_config(DATA / "heaplab" / "throughput_config.json")
    assert config.network is not None
    assert dict(config.network.latency) == {}


def test_absent_network_file_leaves_the_table_unset() -> None:
    config = load_pim_config(DATA / "PIMCOMP-NN" / "config.json")
    assert (config.network_file, config.network) == ("network.json", None)


def test_whole_float_is_accepted_for_an_integer_field(tmp_path: Path) -> None:
    path = tmp_path / "cfg.json"
    path.write_text(
        json.dumps({"chip_config": {"core_cnt": 4.0, "network_config": {"layout": [2, 2]}}})
    )
    assert load_pim_config(path).chip.core_cnt == 4


def test_label_replaces_the_path_in_messages() -> None:
    expected = 'my chip: chip_config.core_cnt: expected a positive integer, got "abc"'
    with pytest.raises(InvalidConfigError, match=_exactly(expected)):
        load_pim_config(MALFORMED / "core_cnt_string.json", label="my chip")


def test_missing_config_file_is_named() -> None:
    path = DATA / "nowhere.json"
    with pytest.raises(InvalidConfigError, match=_exactly(f"{path}: no such file")):
        load_pim_config(path)


def test_pimsyn_library_is_not_a_chip_config() -> None:
    path = DATA / "PIMSYN-NN" / "config.json"
    expected = (
        f"{path}: chip_config: missing (a pimsim-nn config needs at least "
        "chip_config.network_config.layout)"
    )
    with pytest.raises(InvalidConfigError, match=_exactly(expected)):
        load_pim_config(path)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "bad_json.json",
            "invalid JSON at line 1 column 32: Expecting property name enclosed in double quotes",
        ),
        ("core_cnt_string.json", 'chip_config.core_cnt: expected a positive integer, got "abc"'),
        ("core_cnt_negative.json", "chip_config.core_cnt: expected a positive integer, got -4"),
        (
            "data_width_zero.json",
            "chip_config.core_config.local_memory_config.data_width: "
            "expected a positive integer, got 0",
        ),
        (
            "layout_three.json",
            "chip_config.network_config.layout: "
            "expected 2 positive integers [rows, cols], got [2, 2, 1]",
        ),
        (
            "layout_too_small.json",
            "chip_config.network_config.layout: a 2x2 grid holds 4 cores, fewer than core_cnt 8",
        ),
        (
            "layout_missing.json",
            "chip_config.network_config.layout: missing; expected [rows, cols] "
            "(pimsim-nn's default [0, 0] is not a valid grid)",
        ),
        (
            "pipeline_mode_number.json",
            "chip_config.core_config.matrix_config.pipeline_mode: expected true or false, got 1",
        ),
        (
            "matrix_period_string.json",
            'chip_config.core_config.matrix_config.period: expected a positive number, got "fast"',
        ),
        (
            "xbar_size_zero.json",
            "chip_config.core_config.matrix_config.xbar_size: "
            "expected 2 positive integers [rows, cols], got [128, 0]",
        ),
        (
            "cell_precision_fraction.json",
            "chip_config.core_config.matrix_config.cell_precision: "
            "expected a positive integer, got 1.5",
        ),
        (
            "gm_switch_mismatch.json",
            "chip_config.core_config.global_memory_switch_id: "
            "expected the chip's global_memory_switch_id -10, got -5",
        ),
        (
            "gm_switch_is_core.json",
            "chip_config.global_memory_switch_id: expected an id outside the cores 0..3, got 3",
        ),
        ("top_level_list.json", "expected an object, got [1, 2]"),
        ("chip_config_number.json", "chip_config: expected an object, got 5"),
    ],
)
def test_malformed_config_gives_one_line(name: str, message: str) -> None:
    path = MALFORMED / name
    with pytest.raises(InvalidConfigError, match=_exactly(f"{path}: {message}")):
        load_pim_config(path)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("net_value", 'latency.0.1: expected a non-negative whole number of ns, got "x"'),
        ("net_key", "latency.zero: expected an integer node id"),
        ("net_fraction", "latency.0.1: expected a non-negative whole number of ns, got 2.5"),
        ("net_no_latency", "latency: missing (expected {src: {dst: ns per flit}})"),
        ("net_bad_json", "invalid JSON at line 2 column 1: Expecting ',' delimiter"),
    ],
)
def test_malformed_network_table_names_the_table(name: str, message: str) -> None:
    table = MALFORMED / f"{name}.json"
    with pytest.raises(InvalidConfigError, match=_exactly(f"{table}: {message}")):
        load_pim_config(MALFORMED / f"{name}_config.json")
