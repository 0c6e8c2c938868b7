"""``raptor-cp exchange PLAN.json``: the exchange-table footprint of a saved plan.

``exchange`` prices a saved exchange plan (`raptor_cp.exchange.plan`): the
footprint estimate of every stored phase and of the busiest tile, with and
without structural sharing; without ``--footprint-only`` it also runs the exact
encoder and prints the estimate's error per phase and on the busiest tile
(``(estimate - exact) / exact``). ``--json`` prints one object instead.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from raptor_cp.exchange.footprint import Footprint


@click.command("exchange", short_help="Estimate (and encode) a saved exchange plan's table size.")
@click.argument("plan", type=click.Path(path_type=Path))
@click.option("--footprint-only", is_flag=True, help="Only the estimate; skip the exact encoder.")
@click.option(
    "--json", "as_json", is_flag=True, help="Print one JSON object on stdout and nothing else."
)
def exchange_command(plan: Path, footprint_only: bool, as_json: bool) -> None:
    """Estimate the exchange-table bytes of PLAN; compare with the exact encoding."""
    from raptor_cp.cli.common import UserError
    from raptor_cp.errors import RaptorError

    try:
        report = exchange_report(plan, footprint_only)
    except RaptorError as error:
        raise UserError(" ".join(str(error).split())) from None
    if as_json:
        click.echo(json.dumps(report, sort_keys=True))
        return
    for line in _exchange_lines(report):
        click.echo(line)


def exchange_report(path: Path, footprint_only: bool) -> dict[str, Any]:
    """The facts ``exchange`` prints, as a JSON-ready dict."""
    from raptor_cp.exchange.candidates import count_fragments
    from raptor_cp.exchange.encoder import encode_exchange, phase_errors
    from raptor_cp.exchange.footprint import estimate_footprint
    from raptor_cp.exchange.plan import load_plan

    plan = load_plan(path)
    began = time.perf_counter()
    estimate = estimate_footprint(plan)
    estimate_s = time.perf_counter() - began
    report: dict[str, Any] = {
        "plan": str(path),
        "name": plan.name,
        "tiles": plan.tiles,
        "stored_phases": len(estimate.phases),
        "executed_phases": sum(1 for _ in plan.executed_phases()),
        "fragments": count_fragments(plan),
        "estimate": _footprint_json(estimate, estimate_s),
        "exact": None,
        "phase_errors": None,
        "busiest_error": None,
    }
    if footprint_only:
        return report
    began = time.perf_counter()
    exact = encode_exchange(plan).footprint
    report["exact"] = _footprint_json(exact, time.perf_counter() - began)
    report["phase_errors"] = [
        {"phase": e.key, "estimate_bytes": e.estimated, "exact_bytes": e.encoded, "error": e.error}
        for e in phase_errors(estimate, exact)
    ]
    estimated, encoded = estimate.busiest(shared=True)[1], exact.busiest(shared=True)[1]
    report["busiest_error"] = None if encoded == 0 else (estimated - encoded) / encoded
    return report


def _footprint_json(footprint: Footprint, seconds: float) -> dict[str, Any]:
    tile, shared = footprint.busiest(shared=True)
    unshared_tile, unshared = footprint.busiest(shared=False)
    return {
        "busiest_tile": tile,
        "busiest_bytes": shared,
        "busiest_unshared_tile": unshared_tile,
        "busiest_unshared_bytes": unshared,
        "phase_bytes": {str(p): b for p, b in footprint.phase_bytes().items()},
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
    if report["exact"] is None:
        lines.append("phase  estimate B")
        lines += [f"{p:>5}  {b:>10,}" for p, b in report["estimate"]["phase_bytes"].items()]
        return lines
    lines.append(busiest("exact", report["exact"]))
    lines.append(
        f"busiest-tile error (estimate vs exact, with sharing): {_percent(report['busiest_error'])}"
    )
    lines.append("phase  estimate B    exact B     error")
    lines += [
        f"{e['phase']:>5}  {e['estimate_bytes']:>10,}  {e['exact_bytes']:>9,}  "
        f"{_percent(e['error']):>8}"
        for e in report["phase_errors"]
    ]
    return lines
