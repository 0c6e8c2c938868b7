"""``compile`` with the ``auto`` portfolio, ``--polish`` and ``--scheduler cpsat --time-limit``."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from raptor_cp.cli import main

STG = str(Path(__file__).parent / "data" / "stg" / "rand0090.stg")
"""52 tasks; on generic:4 ``auto`` (HEFT) gives 78 ns against a bound of 72 ns."""


def _compile(out: Path, *args: str) -> tuple[str, str, dict]:
    """Run ``compile`` on `STG` (generic:4); (stdout, stderr, schedule.json)."""
    result = CliRunner().invoke(main, ["compile", STG, "-t", "generic:4", "--out", str(out), *args])
    assert result.exit_code == 0, result.output
    return result.stdout, result.stderr, json.loads((out / "schedule.json").read_text())


def test_auto_names_its_winner_and_every_member(tmp_path: Path) -> None:
    stdout, _, document = _compile(tmp_path / "out")
    assert stdout == (
        f"rand0090 on generic:4: 52 tasks on 4/4 cores, makespan 78 ns (lower bound 72 ns, gap "
        f"7.7 %), auto (heft won), feasible, wrote {tmp_path / 'out'}/\n"
    )
    assert (document["scheduler"], document["winner"], document["status"]) == (
        "auto",
        "heft",
        "feasible",
    )
    assert document["members"] == {
        "heft": 78,
        "heft-replicas": "skipped: weight capacity unlimited",
        "peft": 87,
        "peft-replicas": "skipped: weight capacity unlimited",
    }
    assert document["gap"] == (78 - 72) / 78
    assert document["lower_bounds"]["head_work_tail_ns"] <= document["lower_bound_ns"] == 72


def test_polish_improves_reports_and_is_deterministic(tmp_path: Path) -> None:
    stdout, stderr, document = _compile(tmp_path / "a", "--polish", "0.05")
    polish = document["polish"]
    assert (polish["method"], polish["start_makespan_ns"], polish["improved"]) == (
        "exact",
        78,
        True,
    )
    assert polish["wall_capped"] is False
    makespan = document["makespan_ns"]
    assert 72 <= makespan < 78
    assert f"auto (heft won), polish exact 78 ns -> {makespan} ns, " in stdout
    phases = [line.split()[0] for line in stderr.splitlines() if not line.endswith(" ...")]
    assert phases == [  # lines ending in "..." are the search's heartbeat (after about 2 s)
        "load",
        "lower",
        "schedule",
        "polish",
        "check",
        "write",
    ]
    _, _, again = _compile(tmp_path / "b", "--polish", "0.05")
    assert again == document


def test_polish_of_an_optimal_incumbent_does_no_search(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["compile", STG, "-t", "generic:2", "--out", str(tmp_path), "--polish", "5", "--json"]
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert (summary["makespan_ns"], summary["status"], summary["gap"]) == (144, "optimal", 0.0)
    assert summary["polish"] == {
        "budget": 5.0,
        "improved": False,
        "method": "none",
        "start_makespan_ns": 144,
    }


def test_cpsat_takes_its_budget_from_time_limit(tmp_path: Path) -> None:
    fork_join = str(Path(__file__).parent / "data" / "raptor" / "fork_join.json")
    args = ["compile", fork_join, "-t", "generic:2", "--out", str(tmp_path), "--json"]
    result = CliRunner().invoke(main, [*args, "--scheduler", "cpsat", "--time-limit", "1"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert (summary["scheduler"], summary["status"], summary["makespan_ns"]) == (
        "cpsat",
        "optimal",
        190,
    )
    assert summary["wall_capped"] is False
    assert "winner" not in summary and "polish" not in summary
