"""``raptor-cp pack INSTANCE``: fewest bins for a one-dimensional bin-packing instance.

INSTANCE is a BPPLIB file (item count, capacity, one size per line) or an
OR-Library multi-instance file such as Falkenauer's ``binpack1.txt``
(`raptor_cp.workload.bpp_reader`). Each instance becomes a plain
`FewestCoresProblem` (`FewestCoresProblem.bin_packing`: one task per item, each
with its own weight of the item's size, zero loads), is solved through the solver
registry by the fewest-cores heuristic (``--solver heuristic``: method
``fewest-cores``, best fit decreasing, MBS' and a neighbourhood search) or by
CP-SAT (``--solver cpsat``: method ``cpsat``, the arc-flow formulation, hinted
with the heuristic and never answering worse than it), and the answer is checked
with `raptor_cp.problems.check`.

Output: one line per instance, ``FILE (NAME): N items, capacity C: B bins, lower
bound L, STATUS (SOLVER)``. ``--json`` prints one object per instance (a BPPLIB
file) or ``{"file": ..., "instances": [...]}`` (an OR-Library file); an instance
object holds ``name``, ``items``, ``capacity``, ``solver``, ``bins``,
``lower_bound``, ``status`` (``optimal`` when the bins meet the lower bound,
else ``feasible``), ``assignment`` (the bin of every item, in file order, bins
numbered from 0 by first item), ``loads`` (per bin) and ``best_known`` (the
OR-Library header's value, or null). Nothing depends on timing except a CP-SAT
run the wall-clock safeguard stops (`raptor_cp.models.solve`), so identical
inputs give identical output.

A malformed file gives one ``error:`` line naming the file and line, exit 2
(`raptor_cp.cli.common.RaptorGroup`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from raptor_cp.workload.bpp_reader import BinPackingInstance

PACK_SOLVERS = {"heuristic": "fewest-cores", "cpsat": "cpsat"}
"""``--solver`` choices and the `FewestCoresProblem` methods they run."""


@click.command("pack", short_help="Fewest bins for a bin-packing instance (BPPLIB format).")
@click.argument("instance", type=click.Path(path_type=Path))
@click.option(
    "--solver",
    type=click.Choice(list(PACK_SOLVERS)),
    default="heuristic",
    show_default=True,
    help="The fewest-cores heuristic, or CP-SAT (arc flow) hinted with it.",
)
@click.option(
    "--time-limit",
    type=click.FloatRange(min=0, min_open=True),
    default=10.0,
    show_default=True,
    help="CP-SAT budget per instance, in deterministic-time units.",
)
@click.option(
    "--workers", type=click.IntRange(min=1), default=1, show_default=True, help="CP-SAT workers."
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print one JSON object on stdout and nothing else."
)
def pack_command(
    instance: Path, solver: str, time_limit: float, workers: int, as_json: bool
) -> None:
    """Pack INSTANCE into the fewest bins and print the bins and the lower bound."""
    from raptor_cp.workload.bpp_reader import read_bin_packing

    instances = read_bin_packing(instance)
    settings = {"time_limit_s": time_limit, "workers": workers} if solver == "cpsat" else {}
    reports = [_solve(item, PACK_SOLVERS[solver], settings) for item in instances]
    if as_json:
        orlib = instances[0].best_known is not None  # BPPLIB files have no header value
        payload: Any = {"file": str(instance), "instances": reports} if orlib else reports[0]
        click.echo(json.dumps(payload, sort_keys=True))
        return
    for report in reports:
        click.echo(
            f"{instance} ({report['name']}): {report['items']} items, capacity "
            f"{report['capacity']}: {report['bins']} bins, lower bound {report['lower_bound']}, "
            f"{report['status']} ({report['solver']})"
        )


def _solve(instance: BinPackingInstance, method: str, settings: dict[str, Any]) -> dict:
    """Solve and check one instance; its report (module docstring)."""
    from raptor_cp.problems import FewestCoresProblem, check
    from raptor_cp.solvers import solve

    problem = FewestCoresProblem.bin_packing(instance.sizes, instance.capacity, instance.name)
    solution = solve(problem, method, **settings)
    check(problem, solution)
    assert solution.core is not None and solution.objective is not None
    assert solution.bound is not None
    loads = [0] * solution.objective
    for i, b in enumerate(solution.core):
        loads[b] += instance.sizes[i]
    return {
        "name": instance.name,
        "items": len(instance.sizes),
        "capacity": instance.capacity,
        "solver": solution.solver,
        "bins": solution.objective,
        "lower_bound": solution.bound,
        "status": "optimal" if solution.objective == solution.bound else "feasible",
        "assignment": list(solution.core),
        "loads": loads,
        "best_known": instance.best_known,
    }
