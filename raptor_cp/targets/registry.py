"""Turn a ``--target`` string into a `SchedulingTarget`, from one table of presets.

A spec is a preset name (`TARGET_PRESETS`: the shipped pimsim-nn configs and the
IPU generations), ``generic:P[:NS_PER_BYTE]``, or the path of a pimsim-nn chip
config JSON. The same table writes the ``--target`` help (`target_help`) and
the list in the unknown-target error, so a new preset is one row here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from raptor_cp.errors import InvalidConfigError
from raptor_cp.targets.base import SchedulingTarget
from raptor_cp.targets.generic import GenericTarget
from raptor_cp.targets.ipu import IpuTarget
from raptor_cp.targets.pim import PimTarget, load_pim_config

_PRESET_DIR = Path(__file__).with_name("presets")


def _pim_preset(name: str) -> SchedulingTarget:
    """The shipped pimsim-nn config ``presets/<name>.json`` (sources in ``PRESETS.md``)."""
    config = load_pim_config(_PRESET_DIR / f"{name}.json", label=f"{name} preset")
    return PimTarget(config, name)


@dataclass(frozen=True)
class Preset:
    """One ``--target`` preset: its name, kind of chip, a one-line summary and its factory."""

    name: str
    kind: str
    """``pim`` (a pimsim-nn config) or ``ipu``."""
    summary: str
    """What the chip is, in a few words (``--target`` help)."""
    build: Callable[[str], SchedulingTarget]
    """Builds the target from the preset's name."""


TARGET_PRESETS: tuple[Preset, ...] = (
    Preset("arch-a", "pim", "PIMCOMP Arch-A, 168 cores x 96 crossbars", _pim_preset),
    Preset("arch-b", "pim", "PIMCOMP Arch-B, 138 cores x 128 crossbars", _pim_preset),
    Preset("pimcomp", "pim", "PIMCOMP-NN's config, 136 cores x 64 crossbars", _pim_preset),
    Preset("pimsim-64", "pim", "pimsim-nn's example, 64 cores with a flit table", _pim_preset),
    Preset("ipu-mk1", "ipu", "Graphcore GC2, 1,216 tiles x 256 KiB", IpuTarget.preset),
    Preset("ipu-mk2", "ipu", "Graphcore GC200, 1,472 tiles x 624 KiB", IpuTarget.preset),
)
"""Every preset, in the order help and errors list them."""

_BY_NAME = {preset.name: preset for preset in TARGET_PRESETS}

PRESETS: tuple[str, ...] = tuple(p.name for p in TARGET_PRESETS if p.kind == "pim")
"""Shipped pimsim-nn configs; their sources are in ``presets/PRESETS.md``."""

DEFAULT_TARGET = "arch-a"

GENERIC_SPEC = "generic:P[:NS_PER_BYTE]"


def preset_names(kind: str | None = None) -> tuple[str, ...]:
    """Names of the presets of ``kind`` (every preset when None), in table order."""
    return tuple(p.name for p in TARGET_PRESETS if kind is None or p.kind == kind)


def target_help() -> str:
    """The ``--target`` option's help text: every preset with its summary, and the other forms."""
    presets = "; ".join(f"{p.name} ({p.summary})" for p in TARGET_PRESETS)
    return (
        f"A preset, {GENERIC_SPEC} (P identical cores) or a pimsim-nn chip config path. "
        f"Presets: {presets}."
    )


def resolve_target(spec: str, cores: int | None = None) -> SchedulingTarget:
    """The target a ``--target`` string names, with ``cores`` cores if given (``--cores``).

    ``cores`` scales the target with its ``with_cores``: a preset or mesh config
    grows its grid, ``generic:P`` becomes ``generic:cores``, an IPU gets ``cores``
    tiles; the scaled target is named ``<name>:<cores>`` (or ``generic:<cores>``).

    Raises
    ------
    InvalidConfigError
        For a malformed config or generic spec, a spec that is none of the three,
        or ``cores`` outside ``1..`` the target kind's limit (`raptor_cp.limits`).
    """
    target = _resolve(spec)
    return target if cores is None else scale_target(target, cores)


def scale_target(target: SchedulingTarget, cores: int) -> SchedulingTarget:
    """``target`` with ``cores`` cores (``--cores``; see `resolve_target`)."""
    if cores < 1:
        raise InvalidConfigError(f"--cores must be at least 1, got {cores}")
    scale = getattr(target, "with_cores", None)
    if scale is None:
        raise InvalidConfigError(f"{target.name}: this target cannot be scaled with --cores")
    return scale(cores)  # type: ignore[no-any-return]


def _resolve(spec: str) -> SchedulingTarget:
    if not spec:
        raise InvalidConfigError(
            f"--target is empty: give a preset ({', '.join(preset_names())}), {GENERIC_SPEC} "
            "or a pimsim-nn config path"
        )
    preset = _BY_NAME.get(spec)
    if preset is not None:
        return preset.build(spec)
    if spec.startswith("generic:"):
        return GenericTarget.parse(spec)
    if Path(spec).is_dir():
        raise InvalidConfigError(f"{spec}: is a directory, not a pimsim-nn config file")
    if Path(spec).exists():
        return PimTarget.from_file(spec)
    raise InvalidConfigError(
        f"unknown target {spec!r}: not a preset ({', '.join(preset_names())}), not "
        f"{GENERIC_SPEC}, and no file {spec} exists"
    )
