"""Audit reports: the Markdown table and JSON of `AuditRecord` lists (formatting only).

``verify`` prints one table shape for every mode; the partition audit adds a
second table of the prefix DP's quantization evidence (`render_quantization`),
the packing audit one of each stage's lower bounds (`render_packing_bounds`).
The Markdown holds no wall times, so identical runs give identical reports.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from raptor_cp.audit.packing import PackingBounds
    from raptor_cp.audit.partition import PartitionDetails
    from raptor_cp.audit.record import AuditRecord
    from raptor_cp.audit.verify import VerifyReport


WALL_CAP_MARK = "[^wall]"
"""Footnote mark after the CP-SAT status of a run the wall-clock cap stopped."""
WALL_CAP_FOOTNOTE = (
    "[^wall]: stopped by the wall-clock cap (`--wall-cap`) before its deterministic budget "
    "was spent: this status, answer and bound depend on the machine's speed and load."
)


def record_json(record: AuditRecord) -> dict[str, object]:
    """A JSON-ready dict of one record's fields and derived quantities."""
    r = record
    return {
        "instance": r.instance,
        "mode": r.mode,
        "target": r.target,
        "tasks": r.tasks,
        "heuristic": r.heuristic,
        "heuristic_makespan_ns": r.heuristic_objective,
        "heuristic_failure": r.heuristic_failure,
        "heuristic_wall_s": r.heuristic_wall_s,
        "critical_path_ns": r.critical_path_ns,
        "work_per_core_ns": r.work_per_core_ns,
        "lower_bound_ns": r.lower_bound,
        "cpsat_status": None if r.cpsat_status is None else r.cpsat_status.value,
        "cpsat_objective_ns": r.cpsat_objective,
        "cpsat_bound_ns": r.cpsat_bound,
        "cpsat_wall_s": r.cpsat_wall_s,
        "cpsat_skipped": r.cpsat_skipped,
        "wall_capped": r.cpsat_wall_capped,
        "best_bound_ns": r.best_bound,
        "proved_optimal": r.proved_optimal,
        "gap_vs_cpsat_pct": r.gap_vs_cpsat_pct,
        "gap_vs_bound_pct": r.gap_vs_bound_pct,
        "disagreements": list(r.disagreements),
    }


def details_json(details: PartitionDetails) -> dict[str, object]:
    """A JSON-ready dict of one partition audit's quantization evidence."""
    return {
        "instance": details.instance,
        "depth": details.depth,
        "dp_path": details.dp_path,
        "unit_cores": details.unit_cores,
        "grid_objective_ns": details.grid_objective,
        "exact_dp_objective_ns": details.exact_dp_objective,
        "quantization_loss_ns": details.quantization_loss,
    }


def packing_bounds_json(bounds: PackingBounds) -> dict[str, object]:
    """A JSON-ready dict of one stage's lower bounds (packing audit)."""
    return {
        "instance": bounds.instance,
        "cores": bounds.cores,
        "weights": bounds.weights,
        "cores_l1": bounds.cores_l1,
        "cores_l2": bounds.cores_l2,
        "cores_dff": bounds.cores_dff,
        "cores_lp": bounds.cores_lp,
        "cores_needed": bounds.cores_needed,
        "demand_bound_ns": bounds.demand_ns,
    }


def _cell(value: object) -> str:
    text = "—" if value is None else str(value)
    return text.replace("|", "\\|")


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}"


def render_markdown(records: list[AuditRecord]) -> str:
    """A Markdown audit table with a summary line; disagreements are bold ``DISAGREE`` cells."""
    disagreeing = [r for r in records if r.disagrees]
    optimal = sum(r.proved_optimal for r in records)
    skipped = sum(r.cpsat_skipped is not None for r in records)
    if disagreeing:
        names = ", ".join(r.instance for r in disagreeing)
        summary = f"**DISAGREE on {len(disagreeing)} of {len(records)} instances: {names}**"
    else:
        summary = f"All {len(records)} instances agree"
    capped = sum(r.cpsat_wall_capped for r in records)
    summary += f"; CP-SAT proved {optimal} optimal, skipped {skipped}"
    summary += f", stopped by the wall-clock cap {capped}{WALL_CAP_MARK}." if capped else "."
    header = (
        "| instance | target | tasks | heuristic | heuristic ns | lower bound ns | CP-SAT ns "
        "| bound ns | CP-SAT status | gap vs CP-SAT % | gap vs bound % | DISAGREE |"
    )
    lines = [summary, "", header, "|" + "---|" * 12]
    for r in records:
        heuristic = (
            r.heuristic_objective
            if r.heuristic_objective is not None
            else f"none ({r.heuristic_failure})"
        )
        status = f"skipped ({r.cpsat_skipped})" if r.cpsat_status is None else r.cpsat_status.value
        if r.cpsat_wall_capped:
            status += WALL_CAP_MARK
        verdict = "**DISAGREE**: " + "; ".join(r.disagreements) if r.disagrees else ""
        cells = [
            r.instance,
            r.target,
            r.tasks,
            r.heuristic,
            heuristic,
            r.lower_bound,
            r.cpsat_objective,
            r.best_bound,
            status,
            _pct(r.gap_vs_cpsat_pct),
            _pct(r.gap_vs_bound_pct),
            verdict,
        ]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    if any(r.cpsat_wall_capped for r in records):
        lines += ["", WALL_CAP_FOOTNOTE]
    return "\n".join(lines) + "\n"


def to_json(records: list[AuditRecord]) -> dict[str, object]:
    """The audit as a JSON-ready dict: a summary and one entry per record."""
    return {
        "summary": {
            "instances": len(records),
            "disagreements": sum(r.disagrees for r in records),
            "proved_optimal": sum(r.proved_optimal for r in records),
            "cpsat_skipped": sum(r.cpsat_skipped is not None for r in records),
            "wall_capped": sum(r.cpsat_wall_capped for r in records),
        },
        "records": [record_json(r) for r in records],
    }


def render_quantization(details: Sequence[PartitionDetails]) -> str:
    """The partition audit's second table: the DP's grid against the exact DP."""
    lines = [
        "| instance | depth | DP path | unit cores | grid objective ns | exact DP ns "
        "| quantization loss ns |",
        "|" + "---|" * 7,
    ]
    for d in details:
        cells = [
            d.instance,
            d.depth,
            d.dp_path,
            d.unit_cores,
            d.grid_objective,
            d.exact_dp_objective,
            d.quantization_loss,
        ]
        lines.append("| " + " | ".join("—" if c is None else str(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


def render_packing_bounds(bounds: Sequence[PackingBounds]) -> str:
    """The packing audit's second table: each stage's lower bounds on cores and demand."""
    lines = [
        "| instance | cores | weights | cores L1 | cores L2 | cores DFF | cores LP "
        "| cores needed | demand bound ns |",
        "|" + "---|" * 9,
    ]
    for b in bounds:
        cells = [
            b.instance,
            b.cores,
            b.weights,
            b.cores_l1,
            b.cores_l2,
            b.cores_dff,
            b.cores_lp,
            b.cores_needed,
            b.demand_ns,
        ]
        lines.append("| " + " | ".join("—" if c is None else str(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


def verify_markdown(report: VerifyReport) -> str:
    """The ``verify`` report in Markdown: the audit table, the partition or stage-bounds
    table, the settings."""
    extra = ""
    if report.settings.mode == "pipeline":
        extra = "\n" + render_quantization(report.details)
    elif report.settings.mode == "packing":
        extra = "\n" + render_packing_bounds(report.packing_bounds)
    return render_markdown(list(report.records)) + extra + "\n" + report.settings.describe() + "\n"


def verify_json(report: VerifyReport) -> dict[str, object]:
    """The ``verify`` report as a JSON-ready dict (``verify --json``)."""
    document: dict[str, object] = dict(to_json(list(report.records)))
    if report.settings.mode == "pipeline":
        document["partition_details"] = [details_json(d) for d in report.details]
    elif report.settings.mode == "packing":
        document["packing_bounds"] = [packing_bounds_json(b) for b in report.packing_bounds]
    document["settings"] = report.settings.to_json()
    document["warnings"] = list(report.warnings)
    return document
