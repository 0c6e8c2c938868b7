"""``raptor-cp exchange`` on a hand-made plan and ``compile --exchange-budget`` on LeNet-5."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from raptor_cp.cli import main
from raptor_cp.cli_exchange import exchange_command
from raptor_cp.exchange_format import (
    Address,
    Allocation,
    ExchangePlan,
    Phase,
    Receive,
    Send,
    TileRow,
)
from raptor_cp.exchange_json import load_plan
from raptor_cp.exchange_json import write_plan as save_plan

MODELS = Path(__file__).parent / "data" / "models"


def _plan(path: Path) -> Path:
    """Tile 0 sends two 4-word payloads to tile 1, which receives them back to back.

    Estimate: tile 0 8 + 2 x 8 = 24; tile 1 8 + 2 x 8 + one address 4 = 28 -> 32.
    Exact: tile 0 entry, setsrc, send, send, return = 20 -> 24 (the second send's
    source continues the first); tile 1 entry, setmux, setdst, neutral, return
    = 20 -> 24 (one mux selection and one address for both pieces).
    """
    plan = ExchangePlan(
        "pair",
        2,
        4096,
        (Allocation(0, "out"), Allocation(1, "in")),
        (
            Phase(
                0,
                (
                    TileRow(
                        0,
                        sends=(
                            Send(0, 4, (1,), Address(0, 0)),
                            Send(1, 4, (1,), Address(0, 16)),
                        ),
                    ),
                    TileRow(
                        1,
                        receives=(
                            Receive(0, 0, 4, Address(1, 0)),
                            Receive(1, 0, 4, Address(1, 16)),
                        ),
                    ),
                ),
            ),
        ),
    )
    save_plan(plan, path)
    return path


def test_footprint_only_prints_the_estimate_and_no_exact_figures(tmp_path: Path) -> None:
    result = CliRunner().invoke(exchange_command, [str(_plan(tmp_path / "p.json")), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["estimate"]["busiest_bytes"] == 32
    assert report["estimate"]["busiest_tile"] == 1
    assert report["estimate"]["phase_bytes"] == {"0": 56}
    assert report["fragments"] == 4
    assert report["exact"] is not None
    only = CliRunner().invoke(
        exchange_command, [str(tmp_path / "p.json"), "--footprint-only", "--json"]
    )
    assert json.loads(only.output)["exact"] is None


def test_the_exact_encoder_gives_the_error_per_phase_and_on_the_busiest_tile(
    tmp_path: Path,
) -> None:
    result = CliRunner().invoke(exchange_command, [str(_plan(tmp_path / "p.json")), "--json"])
    report = json.loads(result.output)
    assert report["exact"]["busiest_bytes"] == 24
    assert report["phase_errors"] == [
        {"phase": 0, "estimate_bytes": 56, "exact_bytes": 48, "error": pytest.approx(1 / 6)}
    ]
    assert report["busiest_error"] == pytest.approx(1 / 3)
    text = CliRunner().invoke(exchange_command, [str(tmp_path / "p.json")]).output
    assert "busiest-tile error (estimate vs exact, with sharing): +33.3 %" in text
    assert "    0          56         48   +16.7 %" in text


def test_a_missing_plan_is_one_error_line_and_exit_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(exchange_command, [str(tmp_path / "none.json")])
    assert result.exit_code == 2
    assert result.output == (
        f"error: {tmp_path / 'none.json'}: cannot read exchange plan: No such file or directory\n"
    )


def test_compile_with_an_exchange_budget_writes_the_plan_and_the_admission_report(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    args = ["compile", str(MODELS / "lenet5.onnx"), "--target", "ipu-mk2", "--lanes", "4"]
    args += ["--exchange-budget", "4096", "--placement-finalists", "1", "--out", str(out)]
    result = CliRunner().invoke(main, [*args, "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["exchange"]["exact_bytes"] <= 4096
    assert summary["lanes"] == 4
    report = json.loads((out / "reports" / "exchange_admission.json").read_text())
    selected = [c for c in report["candidates"] if c["decision"] == "selected"]
    assert [c["key"] for c in selected] == [report["selected"]]
    assert selected[0]["exact_bytes"] == summary["exchange"]["exact_bytes"]
    assert all("estimate_bytes" in c and "ranking" in c for c in report["candidates"])
    assert report["limits"]["placement_finalists"] == 1
    plan = load_plan(out / "exchange_plan.json")
    assert plan.tiles == 1472
    assert sorted(p.name for p in out.iterdir()) == [
        "exchange_plan.json",
        "reports",
        "schedule.json",
        "trace.json",
    ]


def test_compile_fails_with_the_report_when_no_exact_table_fits(tmp_path: Path) -> None:
    # 8 B holds one inactive row: no plan with two phases fits
    out = tmp_path / "out"
    args = ["compile", str(MODELS / "lenet5.onnx"), "--target", "ipu-mk2", "--lanes", "4"]
    args += ["--exchange-budget", "8", "--placement-finalists", "1", "--out", str(out)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    error = result.output.splitlines()[-1]
    assert error.startswith("error: lenet5: no exchange plan within 8 B per tile: smallest exact ")
    assert error.endswith(f"; see {out}/reports/exchange_admission.json")
    report = json.loads((out / "reports" / "exchange_admission.json").read_text())
    assert report["selected"] is None
    assert len(report["attempts"]) == 3
    assert not (out / "schedule.json").exists()


def test_an_exchange_budget_needs_an_ipu_target(tmp_path: Path) -> None:
    args = ["compile", str(MODELS / "lenet5.onnx"), "--target", "generic:4"]
    result = CliRunner().invoke(main, [*args, "--exchange-budget", "4096"])
    assert result.exit_code == 2
    assert result.output.endswith(
        "error: --exchange-budget needs an ipu target (ipu-mk1, ipu-mk2), got generic:4\n"
    )
