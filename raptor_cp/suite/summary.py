"""Aggregate a suite run's rows: per study and variant, how often and how close to optimal.

`summarize` computes, for every (study, variant): cells run, failures, how many
answers are proved optimal (status ``optimal``, i.e. the objective meets a
proved bound, or it equals a reference value published as optimal), how many
match or beat the published reference, the mean and largest gap to the best
proved bound and to the reference (percent), and the mean wall time. The golden
metrics of `raptor_cp.suite.gate` are taken from these figures.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from raptor_cp.suite.cells import Row


@dataclass(frozen=True)
class Summary:
    """The figures of one (study, variant) over its rows."""

    study: str
    variant: str
    rows: int
    errors: int
    optimal: int
    at_reference: int
    """Objective equal to or better than the published reference."""
    with_reference: int
    mean_gap_pct: float | None
    max_gap_pct: float | None
    mean_gap_vs_reference_pct: float | None
    mean_wall_s: float | None

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def is_optimal(row: Row) -> bool:
    """Proved optimal: meets a proved bound, or equals a reference published as optimal."""
    if row.get("status") == "optimal":
        return True
    reference, objective = row.get("reference"), row.get("objective")
    return bool(row.get("reference_optimal")) and objective is not None and objective == reference


def summarize(rows: list[Row] | tuple[Row, ...]) -> list[Summary]:
    """One `Summary` per (study, variant), in the order they first appear."""
    groups: dict[tuple[str, str], list[Row]] = {}
    for row in rows:
        groups.setdefault((row["study"], row["variant"]), []).append(row)
    return [_summary(study, variant, group) for (study, variant), group in groups.items()]


def _summary(study: str, variant: str, rows: list[Row]) -> Summary:
    ok = [r for r in rows if r.get("status") != "error"]
    gaps = [100 * r["gap"] for r in ok if r.get("gap") is not None]
    referenced = [r for r in ok if r.get("gap_vs_reference") is not None]
    versus = [100 * r["gap_vs_reference"] for r in referenced]
    walls = [r["wall_s"] for r in ok if r.get("wall_s") is not None]
    return Summary(
        study=study,
        variant=variant,
        rows=len(rows),
        errors=len(rows) - len(ok),
        optimal=sum(is_optimal(r) for r in ok),
        at_reference=sum(r["gap_vs_reference"] <= 0 for r in referenced),
        with_reference=len(referenced),
        mean_gap_pct=_mean(gaps),
        max_gap_pct=max(gaps) if gaps else None,
        mean_gap_vs_reference_pct=_mean(versus),
        mean_wall_s=_mean(walls),
    )


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None
