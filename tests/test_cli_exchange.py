"""``raptor-cp exchange`` on a hand-made plan and ``compile --exchange-budget`` on LeNet-5."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from raptor_cp.cli import main
from raptor_cp.cli.exchange import exchange_command
from raptor_cp.exchange.plan import (
    Address,
    Allocation,
    ExchangePlan,
    Phase,
    Receive,
    Send,
    TileRow,
)
from raptor_cp.exchange.plan_json import load_plan
from raptor_cp.exchange.plan_json import write_plan as save_plan

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
    assert report["phases"][0]["estimate_bytes"] == 56
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
    assert report["phases"] == [
        {
            "phase": 0,
            "fragments": 4,
            "estimate_bytes": 56,
            "exact_bytes": 48,
            "error": pytest.approx(1 / 6),
        }
    ]
    assert report["busiest_error"] == pytest.approx(1 / 3)
    text = CliRunner().invoke(exchange_command, [str(tmp_path / "p.json")]).output
    assert "busiest-tile error (estimate vs exact, with sharing): +33.3 %" in text
    assert "    0          4          56         48   +16.7 %" in text


def _two_phases(path: Path) -> Path:
    """Phase 0 as in `_plan`; phase 1: tile 1 sends 4 words back to tile 0."""
    first = load_plan(_plan(path))
    back = Phase(
        1,
        (
            TileRow(0, receives=(Receive(0, 1, 4, Address(3, 0)),)),
            TileRow(1, sends=(Send(0, 4, (0,), Address(2, 0)),)),
        ),
    )
    allocations = (*first.allocations, Allocation(1, "out1"), Allocation(0, "in0"))
    save_plan(ExchangePlan("two", 2, 4096, allocations, (*first.steps, back)), path)
    return path


def test_phase_options_report_and_encode_only_the_chosen_phases(tmp_path: Path) -> None:
    path = str(_two_phases(tmp_path / "p.json"))
    report = json.loads(
        CliRunner().invoke(exchange_command, [path, "--phase", "1", "--json"]).output
    )
    # phase 1: tile 1 16 + tile 0 24 = 40, estimated and encoded alike
    assert report["phases"] == [
        {"phase": 1, "fragments": 2, "estimate_bytes": 40, "exact_bytes": 40, "error": 0.0}
    ]
    assert report["exact"] is None  # the busiest tile needs every phase
    both = json.loads(
        CliRunner()
        .invoke(exchange_command, [path, "--phase", "0", "--phase", "1", "--json"])
        .output
    )
    assert [e["phase"] for e in both["phases"]] == [0, 1]
    assert both["exact"] is not None
    wrong = CliRunner().invoke(exchange_command, [path, "--phase", "7"])
    assert wrong.exit_code == 2
    assert wrong.output == f"error: {path}: --phase 7: not a stored phase (stored: 0, 1)\n"


def test_a_phase_over_the_fragment_limit_is_reported_and_not_encoded(tmp_path: Path) -> None:
    path = str(_two_phases(tmp_path / "p.json"))
    result = CliRunner().invoke(exchange_command, [path, "--fragment-limit", "3"])
    assert result.exit_code == 0, result.output
    assert (
        "phase 0 not encoded: 4 fragments over the fragment limit 3 (--fragment-limit)"
        in result.output
    )
    report = json.loads(
        CliRunner().invoke(exchange_command, [path, "--fragment-limit", "3", "--json"]).output
    )
    assert report["not_encoded"] == [0]
    assert "exact_bytes" not in report["phases"][0]
    assert report["phases"][1]["exact_bytes"] == 40


def test_a_missing_plan_is_one_error_line_and_exit_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(exchange_command, [str(tmp_path / "none.json")])
    assert result.exit_code == 2
    assert result.output == (f"error: {tmp_path / 'none.json'}: no such file\n")


def test_compile_with_an_exchange_budget_writes_the_plan_and_the_admission_report(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    args = ["compile", str(MODELS / "lenet5.onnx"), "--target", "ipu-mk2", "--lanes", "4"]
    args += ["--exchange-budget", "4096", "--placement-finalists", "1", "--out", str(out)]
    shown = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "shown")])
    stages = {line.split()[0] for line in shown.output.splitlines()}
    assert {"lower", "expand", "placing", "place", "encode", "admit"} <= stages
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


def test_a_failed_admission_keeps_the_previous_output_and_reports_beside_it(
    tmp_path: Path,
) -> None:
    # 8 B holds one inactive row: no plan with two phases fits
    out = tmp_path / "out"
    lenet = ["compile", str(MODELS / "lenet5.onnx"), "--target", "ipu-mk2", "--lanes", "4"]
    assert CliRunner().invoke(main, [*lenet, "--out", str(out)]).exit_code == 0
    previous = {p.name: p.read_bytes() for p in out.iterdir()}
    args = [*lenet, "--exchange-budget", "8", "--placement-finalists", "1", "--out", str(out)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    error = result.output.splitlines()[-1]
    assert error.startswith("error: lenet5: no exchange plan within 8 B per tile: smallest exact ")
    assert error.endswith(f"; see {out}.failed/reports/exchange_admission.json")
    failed = tmp_path / "out.failed"
    report = json.loads((failed / "reports" / "exchange_admission.json").read_text())
    assert report["selected"] is None
    assert len(report["attempts"]) == 3
    assert report["exhaustion"]["note"].endswith("none fits the budget")
    assert not (failed / "schedule.json").exists()
    assert {p.name: p.read_bytes() for p in out.iterdir()} == previous
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "out.failed"]


def test_the_fragment_limit_biting_in_compile_is_reported(tmp_path: Path) -> None:
    # LeNet-5 at 4 lanes has phases of more than 8 transfer pieces: no plan may be
    # encoded, every placed candidate says why, and compile finds nothing
    out = tmp_path / "out"
    args = ["compile", str(MODELS / "lenet5.onnx"), "--target", "ipu-mk2", "--lanes", "4"]
    args += ["--exchange-budget", "4096", "--fragment-limit", "8", "--out", str(out)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert "no candidate could be encoded" in result.output
    assert "skip" in result.output and "over the limit 8" in result.output
    failed = tmp_path / "out.failed"
    report = json.loads((failed / "reports" / "exchange_admission.json").read_text())
    assert report["limits"]["fragment_limit"] == 8
    assert report["attempts"][0]["over_fragment_limit"]
    decisions = {c["decision"] for c in report["candidates"]}
    assert any(
        d.startswith("not encoded: phase ") and d.endswith("over the limit 8") for d in decisions
    )


def test_an_exchange_budget_needs_an_ipu_target(tmp_path: Path) -> None:
    args = ["compile", str(MODELS / "lenet5.onnx"), "--target", "generic:4"]
    result = CliRunner().invoke(main, [*args, "--exchange-budget", "4096"])
    assert result.exit_code == 2
    assert result.output.endswith(
        "error: --exchange-budget needs an ipu target (ipu-mk1, ipu-mk2), got generic:4\n"
    )
