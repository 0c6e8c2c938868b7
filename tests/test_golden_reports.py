"""Golden files for every report the CLI writes or prints (STYLE.md habit 13).

Each case runs one command on a small shipped input and compares every file it
writes (and its stdout) with ``tests/golden/<case>/``. Wall-clock fields are
the only ones that differ between runs; they are replaced by ``"<wall>"``
before comparing. A change that shifts a schedule, a report field or a
decision shows up as a reviewed diff: regenerate with
``RAPTOR_UPDATE_GOLDEN=1 pytest tests/test_golden_reports.py`` and commit the
new files with the change.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from raptor_cp.cli import main

DATA = Path(__file__).parent / "data"
GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("RAPTOR_UPDATE_GOLDEN") == "1"
WALL_KEYS = re.compile(r"(^|_)(wall|seconds)$|_s$|^phase_times_s$")
"""Keys whose values are measured wall times (``*_wall_s``, ``seconds``, ``phase_times_s``);
``wall_capped`` is a fact of the run, compared like any other."""

CASES: dict[str, list[str]] = {
    "pipeline-lenet5": [
        "compile", str(DATA / "models" / "lenet5.onnx"), "--pipeline", "2",
        "--periodic-diagnostics", "--json", "--out", "{out}",
    ],
    "exchange-lenet5": [
        "compile", str(DATA / "models" / "lenet5.onnx"), "--target", "ipu-mk2",
        "--exchange-budget", "65536", "--json", "--out", "{out}",
    ],
    "verify-latency": [
        "verify", str(DATA / "raptor" / "fork_join.json"), "--target", "generic:2",
        "--time-limit", "2", "--workers", "1", "--out", "{out}/report.md",
    ],
    "verify-latency-json": [
        "verify", str(DATA / "raptor" / "fork_join.json"), "--target", "generic:2",
        "--time-limit", "2", "--workers", "1", "--json",
    ],
    "verify-pipeline": [
        "verify", str(DATA / "models" / "lenet5.onnx"), "--mode", "pipeline", "--pipeline",
        "2", "--time-limit", "2", "--workers", "1", "--out", "{out}/report.md",
    ],
    "verify-packing-json": [
        "verify", str(DATA / "models" / "lenet5.onnx"), "--mode", "packing", "--pipeline",
        "2", "--time-limit", "2", "--workers", "1", "--json",
    ],
    "periodic": [
        "periodic", str(DATA / "pimsim_fixtures" / "throughput.json"), "--target",
        str(DATA / "pimsim_fixtures" / "throughput_config.json"), "--json",
    ],
    "inspect-lenet5": ["inspect", str(DATA / "models" / "lenet5.onnx"), "--json"],
    "cycle-ratio": ["cycle-ratio", str(DATA / "mcr" / "core" / "gerez.d"), "--json"],
}  # fmt: skip
"""Case name → raptor-cp arguments (``{out}`` is the case's output directory)."""


def _mask(value: object, key: str = "") -> object:
    """``value`` with every wall-clock field replaced by ``"<wall>"``."""
    if WALL_KEYS.search(key):
        return "<wall>"
    if isinstance(value, dict):
        return {k: _mask(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask(v) for v in value]
    return value


def _normalise(text: str, out: Path) -> str:
    """JSON is masked and re-rendered; text has the output path replaced."""
    text = text.replace(str(out), "{out}").replace(str(DATA), "{data}")
    try:
        document = json.loads(text)
    except json.JSONDecodeError:
        return text
    return json.dumps(_mask(document), indent=1, sort_keys=True) + "\n"


@pytest.mark.parametrize("case", sorted(CASES))
def test_report_matches_golden(case: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = [arg.format(out=out) for arg in CASES[case]]
    if "{out}/report.md" in CASES[case]:
        out.mkdir()
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    produced = {"stdout": _normalise(result.stdout, out)}
    if out.is_dir():
        for path in sorted(p for p in out.rglob("*") if p.is_file()):
            name = path.relative_to(out).as_posix()
            if name in ("trace.json", "schedule.json") and case.startswith("exchange"):
                continue  # schedule and trace formats are pinned by test_cli's golden pair
            produced[name] = _normalise(path.read_text(encoding="utf-8"), out)
    golden = GOLDEN / case
    if UPDATE:
        shutil.rmtree(golden, ignore_errors=True)
        for name, text in produced.items():
            (golden / name).parent.mkdir(parents=True, exist_ok=True)
            (golden / name).write_text(text, encoding="utf-8")
    expected = {
        p.relative_to(golden).as_posix(): p.read_text(encoding="utf-8")
        for p in sorted(golden.rglob("*"))
        if p.is_file()
    }
    assert sorted(produced) == sorted(expected)
    for name, text in produced.items():
        assert text == expected[name], f"{case}/{name} differs from its golden file"
