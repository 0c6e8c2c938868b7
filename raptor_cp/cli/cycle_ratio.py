"""``raptor-cp cycle-ratio GRAPH``: the maximum (or minimum) cycle ratio of a Dasdan ``.d`` graph.

GRAPH is in Dasdan's DIMACS-like format (`raptor_cp.periodic.dasdan`): arcs
``a u v weight transit`` with 1-based nodes; the ratio of a cycle is
``sum(weight) / sum(transit)``. The command prints the exact ratio as a
fraction and a critical cycle (nodes 1-based, as in the file; text output elides
cycles after 128 nodes, ``--json`` lists them all).

Outcomes and exit status:

* a ratio: printed, exit 0;
* no cycle at all: ``acyclic: no cycle, no cycle ratio`` (``"ratio": null`` with
  ``--json``), exit 0 -- a valid graph whose answer is "no recurrence bound";
* a cycle of zero-transit arcs (a deadlock: the ratio would be infinite or
  undefined) or a malformed file: one ``error:`` line naming the file (and the
  line, for format errors), exit 2.

``--json`` prints one object: ``graph``, ``name``, ``objective``, ``method``,
``ratio`` (``"p/q"``), ``value`` (float), ``exact``, ``bound`` (``"p/q"``, equal to
``ratio`` when exact), ``cycle`` (nodes in order), ``arcs`` (1-based arc numbers
in file order), ``weight`` and ``transit`` (cycle totals), ``iterations``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from raptor_cp.periodic.cycle_ratio import CycleRatio
    from raptor_cp.periodic.dasdan import DasdanGraph


@click.command("cycle-ratio", short_help="Maximum/minimum cycle ratio of a Dasdan .d graph.")
@click.argument("graph", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--min", "minimum", is_flag=True, help="Minimum instead of maximum cycle ratio.")
@click.option(
    "--method",
    type=click.Choice(["howard", "bisection"]),
    default="howard",
    show_default=True,
    help="Howard's policy iteration, or the bounded bisection of the periodic diagnostic.",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print one JSON object on stdout and nothing else."
)
def cycle_ratio_command(graph: Path, minimum: bool, method: str, as_json: bool) -> None:
    """Print the exact maximum (or --min minimum) cycle ratio of GRAPH and a critical cycle."""
    from raptor_cp.cli.common import UserError
    from raptor_cp.errors import RaptorError
    from raptor_cp.periodic.cycle_ratio import (
        DeadlockError,
        maximum_cycle_ratio,
        minimum_cycle_ratio,
    )
    from raptor_cp.periodic.dasdan import read_dasdan

    solve = minimum_cycle_ratio if minimum else maximum_cycle_ratio
    try:
        parsed = read_dasdan(graph)
    except RaptorError as error:
        raise UserError(" ".join(str(error).split())) from None
    try:
        result = solve(parsed.graph, method)
    except DeadlockError as error:
        raise UserError(_deadlock(graph, parsed, error.cycle)) from None
    report = _report(graph, parsed, result, minimum, method)
    if as_json:
        click.echo(json.dumps(report, sort_keys=True))
        return
    for line in _lines(report):
        click.echo(line)


def _file_nodes(parsed: DasdanGraph, cycle: tuple[int, ...]) -> list[int]:
    """The file's node ids of the sources of ``cycle``'s arcs."""
    return [parsed.node_ids[int(parsed.graph.u[e])] for e in cycle]


def _deadlock(path: Path, parsed: DasdanGraph, cycle: tuple[int, ...]) -> str:
    from raptor_cp.periodic.cycle_ratio import cycle_text

    nodes = cycle_text(_file_nodes(parsed, cycle))
    return f"{path}: deadlock: cycle of zero-transit arcs through nodes {nodes}; no finite ratio"


def _report(
    path: Path,
    parsed: DasdanGraph,
    result: CycleRatio | None,
    minimum: bool,
    method: str,
) -> dict[str, Any]:
    report: dict[str, Any] = {
        "graph": str(path),
        "name": parsed.name,
        "objective": "min" if minimum else "max",
        "method": method,
    }
    if result is None:
        empty = dict.fromkeys(("ratio", "value", "exact", "bound", "weight", "transit"))
        return {**report, **empty, "cycle": [], "arcs": [], "iterations": 0}
    return {
        **report,
        "ratio": _fraction(result.ratio),
        "value": float(result.ratio),
        "exact": result.exact,
        "bound": _fraction(result.bound),
        "cycle": _file_nodes(parsed, result.cycle),
        "arcs": [e + 1 for e in result.cycle],
        "weight": result.witness.delay,
        "transit": result.witness.distance,
        "iterations": result.iterations,
    }


def _fraction(value: Any) -> str:
    return f"{value.numerator}/{value.denominator}"


def _lines(report: dict[str, Any]) -> list[str]:
    head = f"{report['graph']} ({report['name']})"
    if report["ratio"] is None:
        return [f"{head}: acyclic: no cycle, no cycle ratio"]
    kind = "minimum" if report["objective"] == "min" else "maximum"
    steps = "tests" if report["method"] == "bisection" else "iterations"
    lines = [
        f"{head}: {kind} cycle ratio {report['ratio']} = {report['value']:.6f} "
        f"({report['method']}, {report['iterations']} {steps})"
    ]
    if not report["exact"]:
        ends = (
            (report["bound"], report["ratio"])
            if kind == "minimum"
            else (report["ratio"], report["bound"])
        )
        lines.append(
            f"not pinned within the test budget: the optimum lies in [{ends[0]}, {ends[1]}]"
        )
    from raptor_cp.periodic.cycle_ratio import cycle_text

    arcs = len(report["cycle"])
    lines.append(
        f"critical cycle: {cycle_text(report['cycle'])} ({arcs} arc{'s' * (arcs != 1)}, "
        f"weight {report['weight']}, transit {report['transit']})"
    )
    return lines
