"""Turn a ``--target`` string into a `SchedulingTarget`.

A spec is a pimsim-nn preset name (`PRESETS`), an IPU preset (`IPU_PRESETS`),
``generic:P[:NS_PER_BYTE]``, or the path of a pimsim-nn chip config JSON.
"""

from __future__ import annotations

from pathlib import Path

from raptor_cp.errors import InvalidConfigError
from raptor_cp.targets.base import SchedulingTarget
from raptor_cp.targets.generic import GenericTarget
from raptor_cp.targets.ipu import IPU_PRESETS, IpuTarget
from raptor_cp.targets.pim import PimTarget, load_pim_config

PRESETS: tuple[str, ...] = ("arch-a", "arch-b", "pimcomp", "pimsim-64")
"""Shipped pimsim-nn configs; their sources are in ``presets/PRESETS.md``."""

DEFAULT_TARGET = "arch-a"

_PRESET_DIR = Path(__file__).with_name("presets")


def resolve_target(spec: str) -> SchedulingTarget:
    """The target a ``--target`` string names.

    Raises
    ------
    InvalidConfigError
        For a malformed config or generic spec, or a spec that is none of the three.
    """
    if spec in PRESETS:
        config = load_pim_config(_PRESET_DIR / f"{spec}.json", label=f"{spec} preset")
        return PimTarget(config, spec)
    if spec in IPU_PRESETS:
        return IpuTarget.preset(spec)
    if spec.startswith("generic:"):
        return GenericTarget.parse(spec)
    if Path(spec).exists():
        return PimTarget.from_file(spec)
    raise InvalidConfigError(
        f"unknown target {spec!r}: not a preset ({', '.join(PRESETS + IPU_PRESETS)}), not "
        f"generic:P[:NS_PER_BYTE], and no file {spec} exists"
    )
