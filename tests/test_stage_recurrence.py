"""Per-stage occupancy and own recurrence (`raptor_cp.pipeline.stage_recurrence`)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from raptor_cp.cli import main
from raptor_cp.periodic.steps import Compute, Recv, Send, Step
from raptor_cp.pipeline.realize import PipelineRealization
from raptor_cp.pipeline.stage_recurrence import occupancy_ns, own_recurrence, stage_recurrences
from raptor_cp.targets.pim import PimTarget

THREE_CORES = PimTarget.from_file(
    Path(__file__).parent / "data" / "configs" / "three_cores" / "config.json"
)
LENET = Path(__file__).parent / "data" / "models" / "lenet5.onnx"
WORK = 100_000
"""ns of each task: far above a transfer's price, so the recurrences count tasks."""

A, B, C = 0, 1, 2
"""Tasks A -> B -> C on cores 0, 1, 2; A -> C is the skip connection."""


def _realization(skip: bool) -> PipelineRealization:
    """A on core 0, B on core 1, C on core 2; with ``skip``, core 2 receives A's output
    first, as an early receive ahead of need puts it, and core 0 sends it first."""
    cores: list[list[Step]] = [
        [Compute(WORK), Send(1, 64)],
        [Recv(0, 64), Compute(WORK), Send(2, 64)],
        [Recv(1, 64), Compute(WORK)],
    ]
    tasks = [[(A,), (A, B)], [(A, B), (B,), (B, C)], [(B, C), (C,)]]
    if skip:
        cores[0].insert(1, Send(2, 64))
        tasks[0].insert(1, (A, C))
        cores[2].insert(0, Recv(0, 64))
        tasks[2].insert(0, (A, C))
    parts = [[((0, 0),) if isinstance(s, Compute) else () for s in core] for core in cores]
    return PipelineRealization(cores, tasks, parts)


def test_a_chain_recurs_at_its_busiest_core_and_a_skip_couples_the_whole_chain() -> None:
    timing = THREE_CORES.step_timing()
    stage = np.zeros(3, dtype=np.int64)
    chain = stage_recurrences(_realization(False), stage, timing)[0]
    coupled = stage_recurrences(_realization(True), stage, timing)[0]
    # The chain overlaps generations: each core recurs at its own task and transfers.
    assert chain.own_recurrence_ns is not None
    assert WORK <= chain.own_recurrence_ns < 1.1 * WORK
    assert chain.critical_cycle_cores <= 2
    # Core 2 posts generation k + 1's receive of the skip only once it has finished k,
    # and core 0 sends to core 1 only after the skip: B and C of every generation run one
    # after the other, two tasks per generation where the chain recurs at one.
    assert coupled.own_recurrence_ns is not None
    assert coupled.own_recurrence_ns >= 2 * WORK
    assert coupled.critical_cycle_cores == 3
    # Its cores are no busier than the chain's (two small transfers more).
    assert coupled.occupancy_ns < 1.1 * WORK
    assert (coupled.cores, coupled.core_work_ns) == (3, chain.core_work_ns)


def test_leaving_out_the_skip_gives_the_chains_recurrence() -> None:
    timing = THREE_CORES.step_timing()
    mine = np.ones(3, dtype=bool)
    chain = own_recurrence(_realization(False), mine, timing)
    without_skip = own_recurrence(_realization(True), mine, timing, lambda u, v: (u, v) != (A, C))
    assert without_skip == chain


def test_a_receive_keeps_its_core_busier_than_the_send_keeps_its_own() -> None:
    # The receiver waits for the payload and writes it; the sender only for the permission
    # and its read.
    busy = occupancy_ns(_realization(True).cores, THREE_CORES.step_timing())
    assert busy[2] - WORK > busy[0] - WORK > 0


def test_periodic_diagnostics_report_each_stage_below_the_whole_recurrence(
    tmp_path: Path,
) -> None:
    args = ["compile", str(LENET), "--target", "arch-a", "--pipeline", "2"]
    result = CliRunner().invoke(main, [*args, "--periodic-diagnostics", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    document = json.loads((tmp_path / "reports" / "pipeline_periodic.json").read_text())
    entries = document["pipeline"]["stage_recurrence"]
    assert [e["stage"] for e in entries] == list(range(document["pipeline"]["stages"]))
    assert sum(e["cores"] for e in entries) == len(document["active_cores"])
    # A stage's steps alone form fewer and shorter cycles than the whole programs.
    for entry in entries:
        assert entry["core_work_ns"] <= entry["occupancy_ns"]
        assert entry["own_recurrence_ns"] <= document["recurrence"]["interval_ns"]
