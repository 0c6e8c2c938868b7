"""``raptor-cp exchange PLAN.json``: the exchange-table footprint of a saved plan.

``exchange`` prices a saved exchange plan (`raptor_cp.exchange.plan_json`): the
footprint estimate of every stored phase and of the busiest tile, with and
without structural sharing; without ``--footprint-only`` it also runs the exact
encoder and prints the estimate's error per phase and on the busiest tile
(``(estimate - exact) / exact``). ``--phase K`` (repeatable) restricts the
report and the encoding to stored phases; a phase with more transfer pieces
than ``--fragment-limit`` is not encoded. ``--json`` prints one object instead.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from raptor_cp.exchange.admission import DEFAULT_FRAGMENT_LIMIT

if TYPE_CHECKING:
    from raptor_cp.exchange.footprint import Footprint


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
    from raptor_cp.cli.common import UserError
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
    from raptor_cp.exchange.candidates import phase_fragments
    from raptor_cp.exchange.encoder import encode_exchange
    from raptor_cp.exchange.footprint import estimate_footprint
    from raptor_cp.exchange.plan_json import load_plan

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
