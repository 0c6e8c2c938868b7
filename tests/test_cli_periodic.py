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
        "6 events, 8 dependencies, 2 active cores"
    )
    # Core 1's lldi (one 10-cycle local write) sets the pace; the two SYNCs take 1 ns each.
    assert lines[1] == (
        "recurrence: 10 ns (ratio 10/1, bisection); critical cycle of 3 dependencies through core 1"
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


def test_method_both_reports_bisection_with_howard_as_cross_check() -> None:
    result = run(DATA / "sync_tokens.json", "-t", DATA / "sync_tokens_config.json", "--json")
    default = json.loads(result.stdout)
    assert default["recurrence"]["method"] == "bisection"  # the seeds' bounded analysis
    assert default["cross_check"] is None
    result = run(
        DATA / "sync_tokens.json", "-t", DATA / "sync_tokens_config.json", "--method", "both"
    )
    assert result.exit_code == 0, result.output
    assert "cross-check: howard 10 ns (agrees exactly)" in result.stdout.splitlines()
    result = run(
        DATA / "sync_tokens.json", "-t", DATA / "sync_tokens_config.json", "--method", "both",
        "--json",
    )  # fmt: skip
    report = json.loads(result.stdout)
    assert report["cross_check"]["method"] == "howard"
    assert report["cross_check"]["ratio"] == report["recurrence"]["ratio"] == "10/1"
    assert report["cross_check"]["agrees"] is True
    assert report["recurrence"]["sweeps"] > 0


def _fan_out(tmp_path: Path) -> tuple[Path, Path]:
    """Core 0 sends 4096 bytes to core 1, then to core 2 (a 3-core mesh chip)."""
    config = tmp_path / "three.json"
    chip = {"network_config": {"layout": [1, 3]}, "core_cnt": 3}
    config.write_text(json.dumps({"chip_config": chip}))
    artifact = tmp_path / "fan.json"
    groups = {f"core{c}": [1] for c in range(3)}
    artifact.write_text(
        json.dumps(
            {
                "config": {"core_cnt": 3, "array_group_map": groups},
                "core0": [
                    {"op": "send", "core": 1, "size": 4096},
                    {"op": "send", "core": 2, "size": 4096},
                ],
                "core1": [{"op": "recv", "core": 0, "size": 4096}],
                "core2": [{"op": "recv", "core": 0, "size": 4096}],
            }
        )
    )
    return artifact, config


def test_model_switches_change_the_model_and_are_reported(tmp_path: Path) -> None:
    artifact, config = _fan_out(tmp_path)
    base = json.loads(run(artifact, "-t", config, "--json").stdout)
    assert base["model"] == {"network_queues": True, "memory_controller": False}
    assert base["memory_controller"] is None
    assert any("--model-memory-controller" in e for e in base["missing_effects"])
    off = json.loads(run(artifact, "-t", config, "--json", "--no-model-network-queues").stdout)
    assert off["model"]["network_queues"] is False
    assert any("--no-model-network-queues" in e for e in off["missing_effects"])
    # Queued, the second request waits for the first payload on core 0's switch.
    assert off["queue"]["interval_ns"] < base["queue"]["interval_ns"]
    mc = json.loads(run(artifact, "-t", config, "--json", "--model-memory-controller").stdout)
    assert mc["memory_controller"]["status"] == "converged"
    issue = json.loads(run(artifact, "-t", config, "--json", "--no-model-issue").stdout)
    assert any("--no-model-issue" in e for e in issue["missing_effects"])


def test_timing_outside_the_supported_range_is_an_unavailable_report(tmp_path: Path) -> None:
    # A local memory of 10**12 cycles of 1000 ns per 16-byte access: one lldi of 2**20
    # bytes takes 65536 * 10**15 ns, beyond the supported 2**53 - 1 ns.
    config = tmp_path / "slow.json"
    memory = {"period": 1000, "write_latency_cycle": 10**12}
    chip = {
        "core_config": {"local_memory_config": memory},
        "network_config": {"layout": [1, 1]},
        "core_cnt": 1,
    }
    config.write_text(json.dumps({"chip_config": chip}))
    artifact = tmp_path / "huge.json"
    layout = {"core_cnt": 1, "array_group_map": {"core0": [1]}}
    artifact.write_text(json.dumps({"config": layout, "core0": [{"op": "lldi", "len": 2**20}]}))
    result = run(artifact, "-t", config, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["status"] == "unavailable"
    assert report["reason"] == (
        f"{artifact}: a time of {2**16 * 10**15} ns is outside the supported range "
        f"(at most {2**53 - 1} ns)"
    )
    assert "recurrence" not in report
    text = run(artifact, "-t", config)
    assert text.stdout.splitlines()[1].startswith("unavailable: ")
