"""Progress of long phases: `raptor_cp.progress.tick` and the CLI reporter's heartbeat."""

from __future__ import annotations

import time

import pytest

from raptor_cp.cli.common import Reporter
from raptor_cp.progress import TICK, reporting, tick


def test_tick_outside_reporting_does_nothing() -> None:
    tick("partition", "pricing")  # no callback installed: no error, no output


def test_ticks_reach_the_flow_callback_only_inside_reporting() -> None:
    seen: list[tuple[str, str]] = []
    with reporting(lambda phase, detail: seen.append((phase, detail))):
        tick("partition", "packing stage 1 of 3")
    tick("partition", "after the block")
    assert seen == [(TICK, "partition: packing stage 1 of 3")]


def test_a_long_activity_prints_heartbeats_until_its_phase_ends(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Reporter, "HEARTBEAT_S", 0.3)
    with Reporter(quiet=False) as progress:
        progress(TICK, "partition: pricing 100 stage costs")
        time.sleep(0.8)
        progress("partition", "3 stages")
        time.sleep(0.8)
    lines = capsys.readouterr().err.splitlines()
    assert lines[-1].startswith("partition") and lines[-1].endswith("s  3 stages")
    beats = lines[:-1]
    assert beats and all(
        line.startswith("partition") and line.endswith("s  pricing 100 stage costs ...")
        for line in beats
    )


def test_a_quick_activity_prints_nothing_more(capsys: pytest.CaptureFixture[str]) -> None:
    with Reporter(quiet=False) as progress:
        progress(TICK, "partition: pricing")
        progress("partition", "done")
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("partition") and line.endswith("s  done")


def test_quiet_reporting_prints_no_heartbeat(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Reporter, "HEARTBEAT_S", 0.1)
    with Reporter(quiet=True) as progress:
        progress(TICK, "partition: pricing")
        time.sleep(0.5)
    assert capsys.readouterr().err == ""
