"""What each kind of target answers to the protocol's capability questions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from raptor_cp.errors import CapabilityUnavailableError
from raptor_cp.exchange.planning import build_exchange_plan
from raptor_cp.graph import ComputeGraph
from raptor_cp.problems import LatencyProblem
from raptor_cp.schedule import Schedule
from raptor_cp.targets.base import SchedulingTarget
from raptor_cp.targets.pim.timing import PimStepTiming
from raptor_cp.targets.registry import resolve_target

ARTIFACTS = Path(__file__).parent / "data" / "pimsim_fixtures"


@pytest.mark.parametrize("spec", ["generic:4", "ipu-mk1"])
def test_targets_without_phase_prices_have_no_step_timing(spec: str) -> None:
    assert resolve_target(spec).step_timing() is None


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
    assert programs.effects == ()  # no vsoftmax, scalar issue modelled


@pytest.mark.parametrize("spec", ["generic:4", "ipu-mk1", "arch-a"])
def test_every_target_kind_satisfies_the_protocol_with_no_warnings(spec: str) -> None:
    target = resolve_target(spec)
    assert isinstance(target, SchedulingTarget)
    assert target.warnings == ()


@pytest.mark.parametrize("spec", ["generic:4", "arch-a"])
def test_targets_without_an_exchange_are_not_bulk_synchronous(spec: str) -> None:
    assert resolve_target(spec).exchange() is None


def test_ipu_answers_the_exchange_questions_from_its_chip() -> None:
    target = resolve_target("ipu-mk2")
    machine = target.exchange()
    assert machine is target
    assert (machine.max_transfer_words, machine.tile_memory_bytes) == (4096, 638976)
    assert machine.block_bytes == 638976 // 4
    smaller = machine.with_weight_block(4096).with_tiles(8)
    assert (smaller.block_bytes, smaller.cores, smaller.name) == (4096, 8, "ipu-mk2:8")
    assert smaller.cost_key() != machine.cost_key()  # fewer tiles: another chip
    assert machine.with_weight_block(4096).cost_key() == machine.cost_key()
    # 100 ns of compute, one sync (90 cycles), 100 B at 4 B/cycle: 115 cycles at 1.85 GHz.
    assert machine.superstep_ns(100, 100) == 100 + 63


def test_exchange_plan_on_a_pim_chip_names_target_and_capability() -> None:
    graph = ComputeGraph(
        names=("a",),
        cost=np.array([1]),
        edge_src=np.zeros(0, dtype=np.int64),
        edge_dst=np.zeros(0, dtype=np.int64),
        edge_bytes=np.zeros(0, dtype=np.int64),
        name="one",
    )
    schedule = Schedule(((0,),) + ((),) * 167, np.zeros(1, dtype=np.int64), "by hand")
    with pytest.raises(CapabilityUnavailableError) as error:
        build_exchange_plan(LatencyProblem(graph, resolve_target("arch-a")), schedule)
    assert str(error.value) == "exchange plans need an ipu target (ipu-mk1, ipu-mk2), got arch-a"
    assert (error.value.target, error.value.capability) == ("arch-a", "exchange")
