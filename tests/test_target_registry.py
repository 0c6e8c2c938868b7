"""`resolve_target`: presets, generic specs, config paths and unknown specs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import raptor_cp.targets.registry as registry
from raptor_cp.errors import InvalidConfigError
from raptor_cp.targets.base import SchedulingTarget
from raptor_cp.targets.generic import GenericTarget
from raptor_cp.targets.pim import PimTarget
from raptor_cp.targets.registry import (
    DEFAULT_TARGET,
    PRESETS,
    TARGET_PRESETS,
    preset_names,
    resolve_target,
    target_help,
)

DATA = Path(__file__).parent / "data" / "configs"
PRESET_DIR = Path(registry.__file__).with_name("presets")


@pytest.mark.parametrize(
    ("preset", "cores", "crossbars", "layout"),
    [
        ("arch-a", 168, 96, (12, 14)),
        ("arch-b", 138, 128, (12, 12)),
        ("pimcomp", 136, 64, (12, 12)),
        ("pimsim-64", 64, 64, (8, 8)),
    ],
)
def test_preset_resolves_to_its_chip(
    preset: str, cores: int, crossbars: int, layout: tuple[int, int]
) -> None:
    target = resolve_target(preset)
    assert isinstance(target, PimTarget)
    assert (target.name, target.cores, target.capacity(0)) == (preset, cores, crossbars)
    assert target.config.chip.network.layout == layout


def test_presets_list_every_shipped_config() -> None:
    assert DEFAULT_TARGET == "arch-a"
    assert PRESETS == ("arch-a", "arch-b", "pimcomp", "pimsim-64")
    notes = (PRESET_DIR / "PRESETS.md").read_text()
    assert all(f"`{name}`" in notes for name in PRESETS)


def test_arch_presets_use_the_mesh_without_warning() -> None:
    for preset in ("arch-a", "arch-b"):
        target = resolve_target(preset)
        assert isinstance(target, PimTarget)
        assert target.warnings == ()
        assert target.describe()["network"] == "mesh 2*hops+2 (no net_config_file_path in config)"


def test_arch_a_keeps_pimcomp_fields() -> None:
    target = resolve_target("arch-a")
    assert isinstance(target, PimTarget)
    pimcomp = PimTarget.from_file(DATA / "PIMCOMP-NN" / "config.json").config.chip
    chip = target.config.chip
    assert chip.core.local_memory == pimcomp.core.local_memory
    assert chip.global_memory == pimcomp.global_memory
    assert chip.core.matrix.cell_precision == pimcomp.core.matrix.cell_precision == 2
    assert chip.network.bus_width == pimcomp.network.bus_width


def test_pimcomp_preset_warns_about_its_missing_network_file() -> None:
    target = resolve_target("pimcomp")
    assert isinstance(target, PimTarget)
    assert target.warnings == (
        "pimcomp preset: network file network.json not found next to the config; "
        "using the mesh model 2*hops+2 ns per flit",
    )


def test_pimsim_64_preset_is_the_shipped_example() -> None:
    for preset_file, original in [
        ("pimsim-64.json", "pimsim-nn/latency_config.json"),
        ("network_mesh_64.json", "pimsim-nn/network_mesh_64.json"),
        ("pimcomp.json", "PIMCOMP-NN/config.json"),
    ]:
        assert (PRESET_DIR / preset_file).read_bytes() == (DATA / original).read_bytes()
    target = resolve_target("pimsim-64")
    assert target.transfer_ns(0, 9, 100) == 94  # hand-worked in test_pim_target.py


def test_generic_spec_resolves() -> None:
    target = resolve_target("generic:4")
    assert isinstance(target, SchedulingTarget)
    assert target == GenericTarget(4)
    assert resolve_target("generic:4:2") == GenericTarget(4, 2)


def test_bad_generic_spec_is_rejected() -> None:
    with pytest.raises(InvalidConfigError, match=r"^bad generic target 'generic:x'"):
        resolve_target("generic:x")


def test_config_path_resolves_to_a_pim_target() -> None:
    path = DATA / "pimsim-nn" / "latency_config.json"
    target = resolve_target(str(path))
    assert isinstance(target, PimTarget)
    assert (target.name, target.cores) == (str(path), 64)


def test_malformed_config_path_reports_the_config_error() -> None:
    path = DATA / "malformed" / "core_cnt_negative.json"
    expected = f"{path}: chip_config.core_cnt: expected a positive integer, got -4"
    with pytest.raises(InvalidConfigError, match="^" + re.escape(expected) + "$"):
        resolve_target(str(path))


def test_unknown_spec_lists_presets() -> None:
    expected = (
        "unknown target 'arch-z': not a preset (arch-a, arch-b, pimcomp, pimsim-64, ipu-mk1, "
        "ipu-mk2), not generic:P[:NS_PER_BYTE], and no file arch-z exists"
    )
    with pytest.raises(InvalidConfigError, match="^" + re.escape(expected) + "$"):
        resolve_target("arch-z")


def test_every_preset_row_resolves_to_its_kind() -> None:
    for preset in TARGET_PRESETS:
        target = resolve_target(preset.name)
        assert (target.name, target.describe()["kind"]) == (preset.name, preset.kind)
    assert preset_names("ipu") == ("ipu-mk1", "ipu-mk2")
    assert preset_names("pim") == PRESETS


def test_target_help_lists_every_preset_and_the_other_forms() -> None:
    text = target_help()
    assert text.startswith(
        "A preset, generic:P[:NS_PER_BYTE] (P identical cores) or a pimsim-nn chip config path. "
        "Presets: arch-a (PIMCOMP Arch-A, 168 cores x 96 crossbars); arch-b"
    )
    assert all(f"{p.name} ({p.summary})" in text for p in TARGET_PRESETS)
    assert text.endswith("ipu-mk2 (Graphcore GC200, 1,472 tiles x 624 KiB).")


@pytest.mark.parametrize("name", ["ipu-mk1", "ipu-mk2"])
def test_ipu_presets_resolve(name: str) -> None:
    target = resolve_target(name)
    assert target.name == name
    assert target.cores in (1216, 1472)
