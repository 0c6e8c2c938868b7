"""``raptor-cp periodic``: text and JSON reports, deadlocks and input errors."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from raptor_cp.cli.periodic import periodic_command

DATA = Path(__file__).parent / "data" / "pimsim_fixtures"


def run(*args: object) -> Result:
    return CliRunner().invoke(periodic_command, [str(a) for a in args])


def test_sync_tokens_summary() -> None:
    result = run(DATA / "sync_tokens.json", "--target", DATA / "sync_tokens_config.json")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == (
        f"{DATA / 'sync_tokens.json'} on {DATA / 'sync_tokens_config.json'}: 5 instructions, "
        "6 events, 8 dependencies, 2 active core(s)"
    )
    # Core 1's lldi (one 10-cycle local write) sets the pace; the two SYNCs take 1 ns each.
    assert lines[1] == (
        "recurrence: 10 ns (ratio 10/1, howard); critical cycle of 3 dependencies through core(s) 1"
    )
    assert lines[2] == "work: busiest core 1 10 ns; memory controller 0 ns (0 loads, 0 stores)"
    assert lines[3] == "interval estimate: 10 ns (bound by recurrence)"
    assert lines[4] == (
        "queue: 10 ns after 5 generations (reversed ties: 10 ns); max memory-request wait 0 ns"
    )


def test_throughput_json_report(tmp_path: Path) -> None:
    out = tmp_path / "periodic.json"
    result = run(
        DATA / "throughput.json",
        "-t",
        DATA / "throughput_config.json",
        "--json",
        "--method",
        "bisection",
        "--out",
        out,
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report == json.loads(out.read_text())
    assert report["selection_eligible"] is False
    assert report["recurrence"]["ratio"] == "2/1"
    assert report["recurrence"]["method"] == "bisection"
    assert report["core_work_ns"] == {"0": 1, "1": 2}
    assert report["interval_estimate"]["ns"] == 2
    assert report["queue"]["status"] == "converged"
    assert report["queue"]["interval_ns"] == 2.0
    assert report["queue"]["alternative_tie_interval_ns"] == 2.0
    assert [e["kind"] for e in report["timing_graph"]["events"]] == ["entry", "entry"]
    assert report["instructions"] == 3


def test_directory_without_instructions_has_no_estimate() -> None:
    result = run(DATA / "directory", "-t", DATA / "latency_config.json")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[1:4] == [
        "recurrence: no cycle (no event repeats)",
        "work: every core is idle",
        "queue: unavailable: no events: every core is idle",
    ]


def test_deadlock_is_reported_with_exit_status_1(tmp_path: Path) -> None:
    artifact = tmp_path / "crossed.json"
    config = {"core_cnt": 2, "array_group_map": {"core0": [1], "core1": [1]}}
    artifact.write_text(
        json.dumps(
            {
                "config": config,
                "core0": [
                    {"op": "send", "core": 1, "size": 4},
                    {"op": "recv", "core": 1, "size": 4},
                ],
                "core1": [
                    {"op": "send", "core": 0, "size": 4},
                    {"op": "recv", "core": 0, "size": 4},
                ],
            }
        )
    )
    result = run(artifact, "-t", DATA / "throughput_config.json")
    assert result.exit_code == 1
    assert result.stdout.splitlines()[1].startswith(
        "deadlock: a cycle of same-generation dependencies: "
    )


def test_malformed_artifact_is_one_error_line() -> None:
    result = run(DATA / "missing_map", "-t", DATA / "latency_config.json")
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: {DATA / 'missing_map' / 'config.json'}: array_group_map: missing; expected "
        '{"core<id>": [crossbars per array group]}\n'
    )


def test_wait_that_never_completes_is_an_error() -> None:
    result = run(DATA / "latency_timeout.json", "-t", DATA / "latency_config.json")
    assert result.exit_code == 2
    assert result.stderr.endswith("a WAIT never completes (deadlock)\n")


def test_non_pim_target_is_rejected() -> None:
    result = run(DATA / "throughput.json", "-t", "generic:2")
    assert result.exit_code == 2
    assert result.stderr == (
        "error: --target generic:2: instruction artifacts need a pimsim-nn target "
        "(a preset or a chip config path)\n"
    )
