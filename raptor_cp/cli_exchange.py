"""``raptor-cp exchange PLAN.json`` and the IPU branch of ``compile --exchange-budget``.

``exchange`` prices a saved exchange plan (`raptor_cp.exchange_json`): the
footprint estimate of every stored phase and of the busiest tile, with and
without structural sharing; without ``--footprint-only`` it also runs the exact
encoder and prints the estimate's error per phase and on the busiest tile
(``(estimate - exact) / exact``). ``--json`` prints one object instead.

`compile_admitted` is what ``compile --target ipu-mk1|ipu-mk2 --exchange-budget
BYTES`` runs: budget-aware admission (`raptor_cp.heuristics.exchange_admission`)
over the candidates of `raptor_cp.heuristics.exchange_candidates`, then the
usual checked schedule files plus ``exchange_plan.json`` (the selected plan)
and ``reports/exchange_admission.json`` (every candidate's estimate, exact
size, error, decision and ranking reason). When no candidate's exact table
fits, the report and the closest plan are still written and the command fails
with `NotFoundWithinBudgetError` (exit 2): a bounded search found nothing, which
proves nothing infeasible.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from raptor_cp.heuristics.exchange_admission import DEFAULT_FRAGMENT_LIMIT

if TYPE_CHECKING:
    from raptor_cp.heuristics.exchange_admission import Admission
    from raptor_cp.heuristics.exchange_candidates import WorkloadCandidates
    from raptor_cp.heuristics.exchange_footprint import Footprint
    from raptor_cp.targets.base import SchedulingTarget
    from raptor_cp.workload.model import Workload

EXCHANGE_FILES = ("exchange_plan.json", "reports")
"""What ``compile --exchange-budget`` writes besides the usual compile files."""
REPORT = "reports/exchange_admission.json"


@click.command("exchange", short_help="Estimate (and encode) a saved exchange plan's table size.")
@click.argument("plan", type=click.Path(path_type=Path))
@click.option("--footprint-only", is_flag=True, help="Only the estimate; skip the exact encoder.")
@click.option(
    "--phase",
    "phases",
    type=int,
    multiple=True,
    help="Report (and encode) only this stored phase; repeatable.",
)
@click.option(
    "--fragment-limit",
    type=click.IntRange(min=1),
    default=DEFAULT_FRAGMENT_LIMIT,
    show_default=True,
    help="Do not encode a phase with more transfer pieces than this.",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print one JSON object on stdout and nothing else."
)
def exchange_command(
    plan: Path,
    footprint_only: bool,
    phases: tuple[int, ...],
    fragment_limit: int,
    as_json: bool,
) -> None:
    """Estimate the exchange-table bytes of PLAN; compare with the exact encoding."""
    from raptor_cp.cli import UserError
    from raptor_cp.errors import RaptorError

    try:
        report = exchange_report(plan, footprint_only, phases, fragment_limit)
    except RaptorError as error:
        raise UserError(" ".join(str(error).split())) from None
    if as_json:
        click.echo(json.dumps(report, sort_keys=True))
        return
    for line in _exchange_lines(report):
        click.echo(line)


def exchange_report(
    path: Path,
    footprint_only: bool,
    phases: tuple[int, ...] = (),
    fragment_limit: int = DEFAULT_FRAGMENT_LIMIT,
) -> dict[str, Any]:
    """The facts ``exchange`` prints, as a JSON-ready dict.

    Without ``phases`` every stored phase is reported and, unless
    ``footprint_only``, encoded; the exact busiest tile is given only when every
    phase was encoded. Phases with more than ``fragment_limit`` transfer pieces
    are not encoded and are listed under ``not_encoded``.

    Raises
    ------
    InvalidInputError
        When a requested phase is not a stored phase of the plan.
    """
    from raptor_cp.errors import InvalidInputError
    from raptor_cp.exchange_json import load_plan
    from raptor_cp.heuristics.exchange_candidates import phase_fragments
    from raptor_cp.heuristics.exchange_encoder import encode_exchange
    from raptor_cp.heuristics.exchange_footprint import estimate_footprint

    plan = load_plan(path)
    pieces = phase_fragments(plan)
    unknown = sorted(set(phases) - set(pieces))
    if unknown:
        raise InvalidInputError(
            f"{path}: --phase {unknown[0]}: not a stored phase (stored: "
            f"{', '.join(map(str, pieces)) or 'none'})"
        )
    chosen = [k for k in pieces if not phases or k in phases]
    began = time.perf_counter()
    estimate = estimate_footprint(plan)
    estimate_s = time.perf_counter() - began
    estimated = estimate.phase_bytes()
    report: dict[str, Any] = {
        "plan": str(path),
        "name": plan.name,
        "tiles": plan.tiles,
        "stored_phases": len(estimate.phases),
        "executed_phases": sum(1 for _ in plan.executed_phases()),
        "fragments": sum(pieces.values()),
        "fragment_limit": fragment_limit,
        "estimate": _footprint_json(estimate, estimate_s),
        "exact": None,
        "busiest_error": None,
        "phases": [
            {"phase": k, "fragments": pieces[k], "estimate_bytes": estimated[k]} for k in chosen
        ],
        "not_encoded": [],
    }
    if footprint_only:
        return report
    report["not_encoded"] = [k for k in chosen if pieces[k] > fragment_limit]
    encoded = [k for k in chosen if pieces[k] <= fragment_limit]
    began = time.perf_counter()
    exact = encode_exchange(plan, phases=set(encoded)).footprint
    seconds = time.perf_counter() - began
    exact_bytes = exact.phase_bytes()
    for entry in report["phases"]:
        if entry["phase"] in exact_bytes:
            entry["exact_bytes"] = exact_bytes[entry["phase"]]
            entry["error"] = _error(entry["estimate_bytes"], entry["exact_bytes"])
    if len(encoded) == len(pieces):
        report["exact"] = _footprint_json(exact, seconds)
        estimated_busiest = estimate.busiest(shared=True)[1]
        report["busiest_error"] = _error(estimated_busiest, exact.busiest(shared=True)[1])
    else:
        report["exact_seconds"] = round(seconds, 4)
    return report


def _error(estimated: int, exact: int) -> float | None:
    return None if exact == 0 else (estimated - exact) / exact


def _footprint_json(footprint: Footprint, seconds: float) -> dict[str, Any]:
    tile, shared = footprint.busiest(shared=True)
    unshared_tile, unshared = footprint.busiest(shared=False)
    return {
        "busiest_tile": tile,
        "busiest_bytes": shared,
        "busiest_unshared_tile": unshared_tile,
        "busiest_unshared_bytes": unshared,
        "seconds": round(seconds, 4),
    }


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:+.1f} %"


def _exchange_lines(report: dict[str, Any]) -> list[str]:
    """``exchange``'s human-readable text."""

    def busiest(kind: str, facts: dict[str, Any]) -> str:
        return (
            f"{kind:<9}busiest tile {facts['busiest_bytes']:,} B (tile {facts['busiest_tile']}) "
            f"with sharing, {facts['busiest_unshared_bytes']:,} B (tile "
            f"{facts['busiest_unshared_tile']}) without; {1000 * facts['seconds']:.1f} ms"
        )

    lines = [
        f"{report['name']}: {report['tiles']} tiles, {report['stored_phases']} stored phases "
        f"({report['executed_phases']} executed), {report['fragments']:,} transfer pieces",
        busiest("estimate", report["estimate"]),
    ]
    if report["exact"] is not None:
        lines.append(busiest("exact", report["exact"]))
        lines.append(
            "busiest-tile error (estimate vs exact, with sharing): "
            f"{_percent(report['busiest_error'])}"
        )
    elif "exact_seconds" in report:
        lines.append(
            f"exact    {len(report['phases']) - len(report['not_encoded'])} phase(s) "
            f"encoded in {1000 * report['exact_seconds']:.1f} ms"
        )
    lines.append("phase  fragments  estimate B    exact B     error")
    for e in report["phases"]:
        exact = f"{e['exact_bytes']:>9,}" if "exact_bytes" in e else f"{'-':>9}"
        error = _percent(e["error"]) if "exact_bytes" in e else "-"
        lines.append(
            f"{e['phase']:>5}  {e['fragments']:>9,}  {e['estimate_bytes']:>10,}  {exact}  "
            f"{error:>8}"
        )
    for k in report["not_encoded"]:
        pieces = next(e["fragments"] for e in report["phases"] if e["phase"] == k)
        lines.append(
            f"phase {k} not encoded: {pieces:,} fragments over the fragment limit "
            f"{report['fragment_limit']:,} (--fragment-limit)"
        )
    return lines


# -- compile --exchange-budget -------------------------------------------------


def compile_admitted(
    workload: Workload,
    target: SchedulingTarget,
    *,
    lanes: int | None,
    scheduler: str,
    budget: int,
    finalists: tuple[int, int, int],
    fragment_limit: int,
    out: Path,
    plot: bool,
    progress: Callable[[str, str], None],
) -> dict[str, Any]:
    """Admit an exchange plan within ``budget`` bytes per tile and write the compile output.

    Parameters
    ----------
    lanes:
        A fixed lane count (``--lanes``), or None to vary it (`CandidateOptions`).
    finalists:
        ``(expanded_plan_finalists, placement_finalists, exchange_schedule_finalists)``.
    fragment_limit:
        Transfer pieces per phase above which a plan is not encoded exactly.
    progress:
        Called with (phase, detail) after each step, as ``compile``'s progress lines:
        every lowering, expanded plan, placement and exact encoding of admission.

    Raises
    ------
    InvalidConfigError
        When ``target`` is not an IPU.
    NotFoundWithinBudgetError
        When no candidate's exact table fits (the report is written first).
    """
    from raptor_cp.errors import InvalidConfigError, NotFoundWithinBudgetError
    from raptor_cp.heuristics.exchange_admission import AdmissionLimits, admit
    from raptor_cp.heuristics.exchange_candidates import CandidateOptions, WorkloadCandidates
    from raptor_cp.targets.ipu import IpuTarget

    if not isinstance(target, IpuTarget):
        raise InvalidConfigError(
            f"--exchange-budget needs an ipu target (ipu-mk1, ipu-mk2), got {target.name}"
        )
    expanded, placement, schedule = finalists
    limits = AdmissionLimits(expanded, placement, schedule, fragment_limit)
    options = CandidateOptions.for_workload(workload, target, lanes, scheduler)
    source = WorkloadCandidates(workload, target, options, progress)
    began = time.perf_counter()
    state = admit(source, budget, limits, progress)
    steps = [*state.attempts, *([state.exhaustion] if state.exhaustion else [])]
    placed = sum(a.placements_run for a in steps)
    encoded = sum(a.encodings_run for a in steps)
    skipped = len(state.reported)
    progress(
        "admit",
        f"{len(state.expanded)} expanded, {placed} placed, {encoded} encoded exactly, "
        f"{len(state.attempts)} attempt(s)"
        + (", exhaustive fallback" if state.exhaustion else "")
        + (f", {skipped} kept from encoding by the fragment limit" if skipped else "")
        + f"; admission {time.perf_counter() - began:.1f} s",
    )
    if state.selected is None:
        _write_admission(out, source, state, state.closest())
        closest = state.closest()
        found = (
            "no candidate could be encoded"
            if closest is None
            else f"smallest exact table {state.exact[closest].exact_bytes} B "
            f"({state.records[closest].label})"
        )
        raise NotFoundWithinBudgetError(
            f"{workload.name}: no exchange plan within {budget} B per tile: {found}; "
            f"see {out / REPORT}"
        )
    return _write_selected(workload, out, source, state, state.selected, plot, progress)


def _write_selected(
    workload: Workload,
    out: Path,
    source: WorkloadCandidates,
    state: Admission,
    key: str,
    plot: bool,
    progress: Callable[[str, str], None],
) -> dict[str, Any]:
    """Check candidate ``key``'s schedule and write every output file; return the summary."""
    from dataclasses import replace

    from raptor_cp.bounds import lower_bounds
    from raptor_cp.check import check
    from raptor_cp.cli import OUTPUT_FILES, write_schedule_files
    from raptor_cp.evaluate import evaluate
    from raptor_cp.exchange_json import write_plan
    from raptor_cp.problems import LatencySolution, Status
    from raptor_cp.reports.exchange_admission import admission_report
    from raptor_cp.reports.output import dumps, format_ns, staged_directory

    record, built = state.records[key], source.built[key]
    problem = built.problem
    evaluation = evaluate(problem, built.schedule)
    schedule = replace(built.schedule, start_ns=evaluation.start_ns)
    check(problem, schedule)
    bounds = lower_bounds(problem.graph, problem.target)
    solution = LatencySolution(
        schedule, Status.FEASIBLE, record.placement, int(evaluation.makespan_ns), bounds.makespan_ns
    )
    progress("check", f"{record.label}: makespan {format_ns(int(evaluation.makespan_ns))}")
    plan = source.plan(key)
    files = ["schedule.json", "trace.json", *(["gantt.png"] if plot else [])]
    with staged_directory(out, OUTPUT_FILES) as staging:
        write_schedule_files(staging, problem, solution, evaluation, bounds, workload.name, plot)
        write_plan(plan, staging / "exchange_plan.json")
        (staging / "reports").mkdir()
        (staging / REPORT).write_text(dumps(admission_report(state), 3), encoding="utf-8")
    progress("write", f"{out}/")
    exact = state.exact[key]
    return {
        "mode": "latency",
        "model": workload.name,
        "target": problem.target.name,
        "scheduler": record.placement,
        "status": solution.status.value,
        "tasks": problem.graph.num_tasks,
        "cores": problem.target.cores,
        "cores_used": int(evaluation.cores_used),
        "makespan_ns": int(evaluation.makespan_ns),
        "lower_bound_ns": bounds.makespan_ns,
        "out": str(out),
        "files": [*files, "exchange_plan.json", REPORT],
        "lanes": record.details["lanes"],
        "exchange": {
            "budget_bytes": state.budget,
            "selected": record.label,
            "bsp_makespan_ns": record.execution_ns,
            "estimate_bytes": record.estimate_bytes,
            "exact_bytes": exact.exact_bytes,
            "weight_block_bytes": record.details["weight_block_bytes"],
            "tile_budget": record.tile_budget,
            "candidates": len(state.records),
            "fragment_limit": state.limits.fragment_limit,
            "over_fragment_limit": len(state.reported),
        },
    }


def _write_admission(
    out: Path, source: WorkloadCandidates, state: Admission, closest: str | None
) -> None:
    """On failure: the admission report and the closest plan, nothing else."""
    from raptor_cp.cli import OUTPUT_FILES
    from raptor_cp.exchange_json import write_plan
    from raptor_cp.reports.exchange_admission import admission_report
    from raptor_cp.reports.output import dumps, staged_directory

    with staged_directory(out, OUTPUT_FILES) as staging:
        if closest is not None:
            write_plan(source.plan(closest), staging / "exchange_plan.json")
        (staging / "reports").mkdir()
        (staging / REPORT).write_text(dumps(admission_report(state), 3), encoding="utf-8")
