"""The quality gate: golden metrics a change may improve but never worsen.

`metrics` reduces a suite run to the figures that judge schedule quality: per
(study, variant) the number of proved-optimal answers and the mean gap to the
bound (percent, rounded to 0.01), and per cell its objective (intervals and
makespans on fixed instances). `compare` checks a run against the golden file
(``benchmarks/golden_metrics.json``): fewer optimal answers, a larger mean gap,
a larger objective or a cell that now fails is a regression; the opposite is an
improvement, which the change should record by updating the file
(``raptor-cp report SUITE --golden FILE --update-golden``). Times never enter
the gate.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from raptor_cp.errors import InvalidInputError
from raptor_cp.files import read_json
from raptor_cp.suite.cells import Row
from raptor_cp.suite.summary import summarize

GAP_TOLERANCE_PCT = 0.01
"""Mean-gap changes within this many percentage points are neither better nor worse."""


def metrics(rows: list[Row] | tuple[Row, ...]) -> dict[str, Any]:
    """The golden metrics of a run (see the module docstring)."""
    summary = {
        f"{s.study} / {s.variant}": {
            "optimal": s.optimal,
            "errors": s.errors,
            "mean_gap_pct": None if s.mean_gap_pct is None else round(s.mean_gap_pct, 2),
        }
        for s in summarize(rows)
    }
    objectives = {
        _cell_key(row): row.get("objective") if row.get("status") != "error" else None
        for row in rows
    }
    return {"summaries": summary, "objectives": objectives}


def _cell_key(row: Row) -> str:
    part = "" if row.get("part") is None else f" [{row['part']}]"
    return f"{row['study']} / {row['workload']}{part} / {row['target']} / {row['variant']}"


@dataclass
class Verdict:
    """What a run did to the golden metrics."""

    regressions: list[str] = field(default_factory=list)
    improvements: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.regressions


def compare(current: dict[str, Any], golden: dict[str, Any]) -> Verdict:
    """Regressions and improvements of ``current`` against ``golden``."""
    verdict = Verdict()
    for key, was in golden.get("summaries", {}).items():
        now = current["summaries"].get(key)
        if now is None:
            verdict.regressions.append(f"{key}: missing from this run")
            continue
        _judge(
            verdict, key, "optimal answers", was["optimal"], now["optimal"], higher_is_better=True
        )
        _judge(verdict, key, "failed cells", was["errors"], now["errors"], higher_is_better=False)
        if was["mean_gap_pct"] is not None and now["mean_gap_pct"] is not None:
            delta = now["mean_gap_pct"] - was["mean_gap_pct"]
            if abs(delta) > GAP_TOLERANCE_PCT:
                _judge(verdict, key, "mean gap %", was["mean_gap_pct"], now["mean_gap_pct"], False)
    for key, was in golden.get("objectives", {}).items():
        now = current["objectives"].get(key, "missing")
        if now == "missing":
            verdict.regressions.append(f"{key}: missing from this run")
        elif was is not None and now is None:
            verdict.regressions.append(f"{key}: failed (was {was})")
        elif was is None and now is not None:
            verdict.improvements.append(f"{key}: now {now} (failed before)")
        elif was is not None and now is not None:
            _judge(verdict, key, "objective", was, now, higher_is_better=False)
    for key in sorted(set(current["objectives"]) - set(golden.get("objectives", {}))):
        verdict.improvements.append(f"{key}: new cell ({current['objectives'][key]})")
    return verdict


def _judge(
    verdict: Verdict, key: str, what: str, was: float, now: float, higher_is_better: bool
) -> None:
    if now == was:
        return
    better = now > was if higher_is_better else now < was
    (verdict.improvements if better else verdict.regressions).append(
        f"{key}: {what} {was} -> {now}"
    )


def load_golden(path: Path) -> dict[str, Any]:
    """The golden metrics file; a missing or malformed file is one clear error."""
    data = read_json(path)
    if not isinstance(data, dict) or "summaries" not in data or "objectives" not in data:
        raise InvalidInputError(f"{path}: not a golden-metrics file (summaries, objectives)")
    return data


def write_golden(path: Path, current: dict[str, Any]) -> None:
    """Write ``current`` as the new golden metrics (sorted, one key per line)."""
    path.write_text(json.dumps(current, indent=1, sort_keys=True) + "\n", encoding="utf-8")
