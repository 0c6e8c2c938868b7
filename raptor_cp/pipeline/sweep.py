"""Depth sweeps: one pipeline selection per depth, the lowest interval kept.

A depth ``N`` only allows more stages than a smaller one, yet each depth's
selection (scheduling.md, "Default throughput selection") starts from its own
prefix-DP seed and spends its own 32 queue evaluations, so a larger depth can
end with a higher interval: on the shipped models 8 of 13 model/target pairs
have a depth worse than a smaller one (docs/benchmarks.md, "Tenth pass").
``compile --pipeline N --pipeline-sweep`` runs the selections of depths 2, 4,
8, ... below ``N`` and of ``N`` itself and keeps the lowest interval (ties: the
smaller depth, fewer stages in flight). The selections are deterministic, so
its result at ``N`` is never above any swept depth's own selection, nor above a
sweep at any power of two up to ``N``, at the price of one selection per depth:
``O(log N)`` selections.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


def sweep_depths(depth: int) -> tuple[int, ...]:
    """The depths a sweep up to ``depth`` (>= 2) runs: the powers of two from 2 below
    it, then ``depth`` itself."""
    if depth < 2:
        raise ValueError(f"a pipeline sweep needs a depth of at least 2, got {depth}")
    powers = []
    power = 2
    while power < depth:
        powers.append(power)
        power *= 2
    return (*powers, depth)


@dataclass(frozen=True)
class DepthOutcome:
    """What one depth's selection of a sweep ended with: its interval and selection
    facts, or -- when that depth's bounded search found no schedule -- why not."""

    depth: int
    interval_ns: int | None
    interval_source: str | None
    """``queue estimate``, or ``analytic proxy`` when no queue comparison ran."""
    stages: int | None
    core_budgets: tuple[int, ...]
    queue_evaluations_used: int | None
    termination: str | None
    not_found: str | None = None
    """The `NotFoundWithinBudgetError` of a depth whose search found no schedule."""

    def to_json(self) -> dict[str, Any]:
        if self.not_found is not None:
            return {"depth": self.depth, "not_found": self.not_found}
        return {
            "depth": self.depth,
            "interval_ns": self.interval_ns,
            "interval_source": self.interval_source,
            "stages": self.stages,
            "core_budgets": list(self.core_budgets),
            "queue_evaluations_used": self.queue_evaluations_used,
            "termination": self.termination,
        }


KEEP_RULE = "lowest interval; ties: the smaller depth"


def sweep_document(outcomes: tuple[DepthOutcome, ...], selected: int) -> dict[str, Any]:
    """``reports/pipeline_sweep.json`` and the summary's ``sweep``: every depth's outcome
    and the one kept."""
    return {
        "requested_depth": outcomes[-1].depth,
        "selected_depth": selected,
        "rule": KEEP_RULE,
        "depths": [outcome.to_json() for outcome in outcomes],
    }
