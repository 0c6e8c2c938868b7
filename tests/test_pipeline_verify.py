"""``verify --mode pipeline`` and ``--mode packing``: audits in the latency table format."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from raptor_cp.cli import main

DATA = Path(__file__).parent / "data"
LENET = DATA / "models" / "lenet5.onnx"
MNIST = DATA / "pimcomp" / "mnist8.json"
FAST = ("--time-limit", "2", "--workers", "1")


def _run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, ["verify", *(str(a) for a in args)])


def _rows(text: str) -> list[list[str]]:
    return [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in text.splitlines()
        if line.startswith(f"| {DATA}")
    ]


def test_partition_audit_agrees_with_cpsat_on_small_models() -> None:
    result = _run(LENET, MNIST, "--mode", "pipeline", "--pipeline", "4", *FAST)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "All 2 instances agree; CP-SAT proved 2 optimal, skipped 0."
    rows = _rows(result.stdout)
    assert len(rows) == 4
    audit, quantization = rows[:2], rows[2:]
    for row in audit:
        assert row[3] == "prefix-dp" and row[8] == "optimal"
        assert int(row[4]) >= int(row[6]) == int(row[7])  # DP >= CP-SAT optimum = bound
    for row in quantization:
        assert row[1] == "4"
        grid, exact, loss = int(row[4]), int(row[5]), int(row[6])
        assert loss == grid - exact >= 0
    assert lines[-1].startswith("Settings: mode pipeline, target arch-a, heuristic prefix-dp, ")
    assert "pipeline depth 4" in lines[-1]


def test_partition_audit_json_holds_the_quantization_details() -> None:
    result = _run(LENET, "--mode", "pipeline", "--pipeline", "2", "--json", *FAST)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["summary"]["disagreements"] == 0
    (record,) = report["records"]
    assert (record["mode"], record["heuristic"]) == ("pipeline", "prefix-dp")
    (details,) = report["partition_details"]
    assert details["depth"] == 2
    assert details["quantization_loss_ns"] == (
        details["grid_objective_ns"] - details["exact_dp_objective_ns"]
    )
    assert report["settings"]["mode"] == "pipeline"
    assert report["settings"]["pipeline"] == 2


def test_packing_audit_has_one_row_per_stage() -> None:
    result = _run(LENET, "--mode", "packing", "--pipeline", "2", *FAST)
    assert result.exit_code == 0, result.output
    rows = _rows(result.stdout)
    stages = len(rows) // 2
    audit, bounds = rows[:stages], rows[stages:]
    assert [row[0] for row in audit] == [f"{LENET} stage {s}" for s in range(stages)]
    assert stages >= 1
    for row in audit:
        assert row[3] == "stage"
        assert int(row[4]) >= int(row[7]) >= int(row[5])  # heuristic >= bound >= trivial bound
    for row, stage in zip(bounds, audit, strict=True):
        assert row[0] == stage[0] and int(row[8]) == int(stage[5])  # the same demand bound
        l1, l2, dff, lp, needed = (int(cell) for cell in row[3:8])
        assert l1 <= l2 <= needed and dff <= needed and needed <= int(row[1])
        assert lp >= l1
    assert result.stdout.splitlines()[-1].startswith("Settings: mode packing, ")


def test_packing_audit_json_holds_the_stage_bounds() -> None:
    result = _run(LENET, "--mode", "packing", "--pipeline", "2", "--json", *FAST)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    bounds = report["packing_bounds"]
    assert [b["instance"] for b in bounds] == [r["instance"] for r in report["records"]]
    for b, record in zip(bounds, report["records"], strict=True):
        assert b["demand_bound_ns"] == record["lower_bound_ns"]
        assert b["cores_needed"] == max(b["cores_l1"], b["cores_l2"], b["cores_dff"])


def test_unknown_mode_lists_every_audit() -> None:
    result = _run(LENET, "--mode", "exchange")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "error: verify --mode exchange is not available; available modes: latency, pipeline, "
        "packing"
    ]
