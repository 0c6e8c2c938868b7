"""What each kind of target answers to the protocol's capability questions."""

from __future__ import annotations

from pathlib import Path

import pytest

from raptor_cp.targets.base import ProtocolStepTiming, SchedulingTarget
from raptor_cp.targets.pim.timing import PimStepTiming
from raptor_cp.targets.registry import resolve_target

ARTIFACTS = Path(__file__).parent / "data" / "pimsim_fixtures"


@pytest.mark.parametrize("spec", ["generic:4", "ipu-mk1"])
def test_targets_without_phase_prices_answer_protocol_step_timing(spec: str) -> None:
    target = resolve_target(spec)
    timing = target.step_timing()
    assert isinstance(timing, ProtocolStepTiming)
    assert timing.target is target


@pytest.mark.parametrize("spec", ["generic:4", "ipu-mk2"])
def test_targets_without_an_instruction_format_have_no_frontend(spec: str) -> None:
    assert resolve_target(spec).instruction_frontend() is None


def test_pim_target_reads_its_instruction_artifacts() -> None:
    target = resolve_target(str(ARTIFACTS / "throughput_config.json"))
    assert isinstance(target.step_timing(), PimStepTiming)
    frontend = target.instruction_frontend()
    assert frontend is not None
    programs = frontend.read(ARTIFACTS / "throughput.json")
    assert (programs.source, programs.instructions) == (str(ARTIFACTS / "throughput.json"), 3)
    assert [len(steps) for steps in programs.cores] == [1, 1]
    assert frontend.effects[0].startswith("vector ops are priced at setbw's input precision")


@pytest.mark.parametrize("spec", ["generic:4", "ipu-mk1", "arch-a"])
def test_every_target_kind_satisfies_the_protocol_with_no_warnings(spec: str) -> None:
    target = resolve_target(spec)
    assert isinstance(target, SchedulingTarget)
    assert target.warnings == ()
