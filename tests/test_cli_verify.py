"""``raptor-cp verify``: the audit report, its determinism, disagreements and bad inputs."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from raptor_cp.cli import main
from raptor_cp.reports.audit import WALL_CAP_FOOTNOTE

STG = Path(__file__).parent / "data" / "stg"
FAST = ("--time-limit", "1", "--workers", "1")
"""A small deterministic CP-SAT budget: every instance below is proved optimal well within it."""
RECORD_FIELDS = {
    "instance",
    "mode",
    "target",
    "tasks",
    "heuristic",
    "heuristic_makespan_ns",
    "heuristic_failure",
    "heuristic_wall_s",
    "critical_path_ns",
    "work_per_core_ns",
    "lower_bound_ns",
    "cpsat_status",
    "wall_capped",
    "cpsat_objective_ns",
    "cpsat_bound_ns",
    "cpsat_wall_s",
    "cpsat_skipped",
    "best_bound_ns",
    "proved_optimal",
    "gap_vs_cpsat_pct",
    "gap_vs_bound_pct",
    "disagreements",
}


def _graph(path: Path, name: str, costs: list[int], weights: list[int] | None = None) -> Path:
    """A raptor-graph chain ``t0 -> t1 -> ...`` (no edges when ``weights`` are given).

    With ``weights``, task ``ti`` instead stands alone and holds weight ``wi`` of
    ``weights[i]`` slots.
    """
    tasks: list[dict[str, object]] = [{"name": f"t{i}", "cost": c} for i, c in enumerate(costs)]
    document: dict[str, object] = {"format": "raptor-graph", "version": 1, "name": name}
    if weights is None:
        document["edges"] = [
            {"src": f"t{i}", "dst": f"t{i + 1}", "bytes": 8} for i in range(len(costs) - 1)
        ]
    else:
        document["weights"] = [{"name": f"w{i}", "size": s} for i, s in enumerate(weights)]
        for i, task in enumerate(tasks):
            task["weights"] = [f"w{i}"]
    document["tasks"] = tasks
    path.write_text(json.dumps(document))
    return path


def _three_core_chip(path: Path) -> Path:
    """A pimsim-nn config: 3 cores of 3 crossbars each (raptor-graph weights are crossbars)."""
    chip = {
        "core_cnt": 3,
        "core_config": {"matrix_config": {"xbar_array_count": 3}},
        "network_config": {"layout": [1, 3]},
    }
    path.write_text(json.dumps({"chip_config": chip}))
    return path


def _run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, ["verify", *(str(a) for a in args)])


def _rows(markdown: str) -> list[list[str]]:
    """The table's data rows, split into cells."""
    lines = [line for line in markdown.splitlines() if line.startswith("| ")]
    return [[cell.strip() for cell in line.strip("|").split(" | ")] for line in lines[1:]]


# -- reports ------------------------------------------------------------------------------


def test_markdown_table_has_a_row_per_instance(tmp_path: Path) -> None:
    chain = _graph(tmp_path / "chain.json", "chain", [3, 3, 3])
    pair = _graph(tmp_path / "pair.json", "pair", [4, 5], weights=[1, 1])
    result = _run(chain, pair, "--target", "generic:2", *FAST)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "All 2 instances agree; CP-SAT proved 2 optimal, skipped 0."
    assert _rows(result.stdout) == [
        [str(chain), "generic:2", "3", "auto", "9", "9", "9", "9", "optimal", "0.0", "0.0", ""],
        [str(pair), "generic:2", "2", "auto", "5", "5", "5", "5", "optimal", "0.0", "0.0", ""],
    ]
    assert lines[-1] == (
        "Settings: mode latency, target generic:2, heuristic auto, CP-SAT time limit 1 "
        "deterministic-time units per instance, workers 1, lanes auto, bits of the model."
    )
    progress = result.stderr.splitlines()
    assert len(progress) == 2
    assert re.fullmatch(
        rf"\[1/2\] {re.escape(str(chain))}: 3 tasks \.\.\. auto 9 ns, CP-SAT 9 ns \(optimal\), "
        r"agree, \d+\.\d\d s",
        progress[0],
    )
    assert progress[1].startswith(f"[2/2] {pair}: 2 tasks ... auto 5 ns, CP-SAT 5 ns (optimal)")


def test_json_report_is_the_only_output(tmp_path: Path) -> None:
    chain = _graph(tmp_path / "chain.json", "chain", [3, 3, 3])
    result = _run(chain, "--target", "generic:2", "--scheduler", "heft", "--json", *FAST)
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    report = json.loads(result.stdout)
    assert sorted(report) == ["records", "settings", "summary", "warnings"]
    assert report["summary"] == {
        "instances": 1,
        "disagreements": 0,
        "proved_optimal": 1,
        "cpsat_skipped": 0,
        "wall_capped": 0,
    }
    assert report["settings"] == {
        "mode": "latency",
        "target": "generic:2",
        "scheduler": "heft",
        "time_limit": 1.0,
        "workers": 1,
        "lanes": None,
        "bits": None,
        "wall_cap_s": None,
    }
    assert report["warnings"] == []
    (record,) = report["records"]
    assert set(record) == RECORD_FIELDS
    assert record["instance"] == str(chain)
    assert record["heuristic"] == "heft"
    assert record["heuristic_makespan_ns"] == record["cpsat_objective_ns"] == 9
    assert record["cpsat_status"] == "optimal"
    assert record["disagreements"] == []


def test_directory_stands_for_its_model_files_sorted(tmp_path: Path) -> None:
    models = tmp_path / "models"
    (models / "nested").mkdir(parents=True)
    _graph(models / "b.json", "b", [2, 2])
    _graph(models / "a.json", "a", [1, 1])
    _graph(models / "nested" / "c.json", "c", [1])  # not recursive
    (models / "notes.txt").write_text("not a model")
    result = _run(models, "--target", "generic:2", "--json", *FAST)
    assert result.exit_code == 0, result.output
    instances = [r["instance"] for r in json.loads(result.stdout)["records"]]
    assert instances == [str(models / "a.json"), str(models / "b.json")]


def test_report_file_is_stdout_and_identical_across_runs(tmp_path: Path) -> None:
    models = tmp_path / "models"
    models.mkdir()
    shutil.copy(STG / "rand0000.stg", models)
    _graph(models / "tight.json", "tight", [10] * 5, weights=[1, 1, 3, 1, 3])
    reports = []
    for run in ("first", "second"):
        out = tmp_path / run / "audit.md"  # the parent directory is created
        result = _run(models, "--target", "generic:4", "--out", out, "--time-limit", "1")
        assert result.exit_code == 0, result.output
        assert out.read_text() == result.stdout
        assert sorted(p.name for p in out.parent.iterdir()) == ["audit.md"]  # no temp file left
        reports.append(out.read_bytes())
    assert reports[0] == reports[1]
    assert [row[0] for row in _rows(reports[0].decode())] == [
        str(models / "rand0000.stg"),
        str(models / "tight.json"),
    ]


def test_too_large_instance_is_skipped_not_an_error(tmp_path: Path) -> None:
    # 168 mesh cores: 4 edges x 168^2 pairwise transfer terms exceed the model-size limit.
    chain = _graph(tmp_path / "chain.json", "chain", [3] * 5)
    result = _run(chain, "--json")
    assert result.exit_code == 0, result.output
    (record,) = json.loads(result.stdout)["records"]
    assert record["target"] == "arch-a"
    assert record["cpsat_status"] is None
    assert record["cpsat_skipped"].startswith("too large: ")
    assert record["heuristic_makespan_ns"] is not None


# -- disagreements ------------------------------------------------------------------------


def test_heft_capacity_failure_is_a_disagreement_with_exit_1(tmp_path: Path) -> None:
    # Five tasks, each holding its own weight of 1, 1, 3, 1, 3 crossbars, on 3 cores of 3.
    # HEFT puts t0, t1, t2 on cores 0, 1, 2 and t3 on core 0 (earliest finish, lowest
    # id), leaving no core with 3 free crossbars for t4. CP-SAT puts the three 1s together.
    tight = _graph(tmp_path / "tight.json", "tight", [10] * 5, weights=[1, 1, 3, 1, 3])
    chip = _three_core_chip(tmp_path / "chip.json")
    out = tmp_path / "audit.md"
    result = _run(tight, "--target", chip, "--scheduler", "heft", "--out", out, *FAST)
    assert result.exit_code == 1, result.output
    assert result.stdout.splitlines()[0] == (
        f"**DISAGREE on 1 of 1 instances: {tight}**; CP-SAT proved 1 optimal, skipped 0."
    )
    (row,) = _rows(result.stdout)
    assert row[4].startswith("none (not found within budget: heft: no core has room")
    assert row[6:9] == ["30", "30", "optimal"]
    assert row[11] == "**DISAGREE**: heuristic found no schedule but CP-SAT found 30 ns"
    assert out.read_text() == result.stdout
    assert re.fullmatch(
        rf"\[1/1\] {re.escape(str(tight))}: 5 tasks \.\.\. heft none, CP-SAT 30 ns "
        r"\(optimal\), DISAGREE, \d+\.\d\d s\n",
        result.stderr,
    )

    agreed = _run(tight, "--target", chip, "--scheduler", "peft", "--json", *FAST)
    assert agreed.exit_code == 0, agreed.output
    assert json.loads(agreed.stdout)["records"][0]["heuristic_makespan_ns"] == 30


# -- bad inputs ---------------------------------------------------------------------------

BAD_INPUTS = {
    "missing_file": "{dir}/absent.json: no such file or directory",
    "empty_directory": "{dir}/empty: directory holds no model file (.json, .onnx, .stg)",
    "truncated_model": ("{dir}/bad.json: invalid JSON at line 1 column 52: Expecting value"),
    "unknown_extension": (
        "{dir}/notes.txt: unknown workload format '.txt' (accepted: .json, .onnx, .stg)"
    ),
    "unknown_mode": "verify --mode exchange is not available; available modes: latency, "
    "pipeline, packing",
    "out_is_a_directory": "{dir}/empty: is a directory; --out takes a file name",
}
"""Each bad input (built by the test below, beside a good model) and its one-line error."""


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_exits_2_with_one_line_and_no_report(
    tmp_path: Path, case: str, as_json: bool
) -> None:
    good = _graph(tmp_path / "good.json", "good", [1, 1])
    (tmp_path / "empty").mkdir()
    out = tmp_path / "audit.md"
    out.write_text("previous report\n")
    models: list[str | Path] = [good]
    options: list[str | Path] = ["--target", "generic:2", "--out", out, *FAST]
    if case == "missing_file":
        models.append(tmp_path / "absent.json")
    elif case == "empty_directory":
        models.append(tmp_path / "empty")
    elif case == "truncated_model":
        models.append(tmp_path / "bad.json")
        models[-1].write_text('{"format": "raptor-graph", "version": 1, "tasks": [')
    elif case == "unknown_extension":
        models.append(tmp_path / "notes.txt")
        models[-1].write_text("hello")
    elif case == "unknown_mode":
        options += ["--mode", "exchange"]
    elif case == "out_is_a_directory":
        options[3] = tmp_path / "empty"
    before = sorted(p.name for p in tmp_path.iterdir())
    result = _run(*models, *options, *(["--json"] if as_json else []))
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr.splitlines() == [f"error: {BAD_INPUTS[case].format(dir=tmp_path)}"]
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert out.read_text() == "previous report\n"


def test_cpsat_is_not_a_heuristic_to_audit(tmp_path: Path) -> None:
    chain = _graph(tmp_path / "chain.json", "chain", [3, 3, 3])
    result = _run(chain, "--scheduler", "cpsat")
    assert result.exit_code == 2
    assert result.stderr == (
        "error: Invalid value for '--scheduler': 'cpsat' is not one of 'auto', 'cpop', "
        "'heft', 'heft-replicas', 'peft', 'peft-replicas' (see main verify --help)\n"
    )


def test_verify_help_imports_no_heavy_module() -> None:
    code = (
        "import sys\n"
        "from raptor_cp.cli import main\n"
        "try:\n"
        "    main(['verify', '--help'], prog_name='raptor-cp')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in ('onnx', 'ortools', 'matplotlib') if m in sys.modules))\n"
    )
    process = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert "Usage: raptor-cp verify [OPTIONS] MODEL..." in process.stdout
    assert process.stdout.splitlines()[-1] == "[]"


def test_a_result_the_wall_cap_cut_is_marked_with_a_footnote(tmp_path: Path) -> None:
    stg = Path(__file__).parent / "data" / "stg" / "rand0090.stg"
    args = [stg, "-t", "generic:4", "--time-limit", "1000", "--wall-cap", "0.05"]
    markdown = _run(*args, "--workers", "1")
    assert markdown.exit_code == 0, markdown.output
    lines = markdown.stdout.splitlines()
    assert lines[0].endswith(", stopped by the wall-clock cap 1[^wall].")
    row = next(line for line in lines if line.startswith(f"| {stg} |"))
    assert re.search(r"\| (feasible|not_found)\[\^wall\] \|", row)  # depends on the machine
    assert WALL_CAP_FOOTNOTE in lines
    assert lines[-1].endswith(", wall-clock cap 0.05 s.")
    document = json.loads(_run(*args, "--workers", "1", "--json").stdout)
    assert document["records"][0]["wall_capped"] is True
    assert document["summary"]["wall_capped"] == 1
    assert document["settings"]["wall_cap_s"] == 0.05


def test_without_a_wall_cap_nothing_is_marked(tmp_path: Path) -> None:
    chain = _graph(tmp_path / "chain.json", "chain", [3, 3, 3])
    result = _run(chain, "-t", "generic:2", "--time-limit", "1", "--workers", "1")
    assert "[^wall]" not in result.stdout
