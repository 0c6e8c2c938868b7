"""``raptor-cp verify``: the optimality audit of a batch of models, as a report.

The command runs `raptor_cp.audit.verify` with a progress reporter and prints
the report (`raptor_cp.reports.audit`), optionally also writing it atomically
to a file. Exit status 0 when every instance agrees, 1 when any disagrees, 2 on
bad input (before any instance is solved).

The Markdown report holds no wall times, so two runs on the same inputs give
byte-identical reports; the JSON report holds the measured wall times
(``*_wall_s``) and only those differ between runs.
"""

from __future__ import annotations

from pathlib import Path

import click

from raptor_cp.cli.common import (
    MAX_WORKERS,
    PositiveFinite,
    Reporter,
    bits_option,
    cores_option,
    json_option,
    lanes_option,
    target_option,
)
from raptor_cp.flows import DEFAULT_PIPELINE_DEPTH, DEFAULT_SCHEDULER
from raptor_cp.problems import LatencyProblem
from raptor_cp.solvers import methods


@click.command("verify", short_help="Audit a heuristic against CP-SAT on small models.")
@click.argument(
    "models", metavar="MODEL...", nargs=-1, required=True, type=click.Path(path_type=Path)
)
@click.option(
    "--mode",
    default="latency",
    show_default=True,
    help="What to audit: latency (scheduler vs CP-SAT), pipeline (prefix-DP partition vs "
    "CP-SAT) or packing (stage packer vs CP-SAT on each stage).",
)
@click.option(
    "--pipeline",
    "pipeline",
    type=click.IntRange(min=1),
    default=DEFAULT_PIPELINE_DEPTH,
    show_default=True,
    help="Pipeline depth of the pipeline and packing audits.",
)
@target_option
@cores_option
@click.option(
    "--scheduler",
    type=click.Choice([m for m in methods(LatencyProblem) if m != "cpsat"]),
    default=DEFAULT_SCHEDULER,
    show_default=True,
    help="Heuristic to audit.",
)
@click.option(
    "--time-limit",
    type=PositiveFinite(),
    default=10.0,
    show_default=True,
    help="CP-SAT budget per instance, in deterministic-time units (not wall seconds).",
)
@click.option(
    "--wall-cap",
    type=PositiveFinite(),
    help="Stop each CP-SAT run after this many wall-clock seconds even if its "
    "deterministic budget is not spent (default: no cap). Results it cuts are marked "
    "wall_capped and depend on the machine.",
)
@lanes_option
@bits_option
@click.option(
    "--workers",
    type=click.IntRange(min=1, max=MAX_WORKERS),
    default=8,
    show_default=True,
    help=f"CP-SAT workers, 1..{MAX_WORKERS}.",
)
@json_option
@click.option("--out", type=click.Path(path_type=Path), help="Also write the report to this file.")
@click.pass_context
def verify_command(
    ctx: click.Context,
    models: tuple[Path, ...],
    mode: str,
    pipeline: int,
    target: str,
    cores: int | None,
    scheduler: str,
    time_limit: float,
    wall_cap: float | None,
    lanes: int | None,
    bits: int | None,
    workers: int,
    as_json: bool,
    out: Path | None,
) -> None:
    """Audit a heuristic against CP-SAT on each MODEL (files or directories).

    Exit status 0 when every instance agrees, 1 when any disagrees, 2 on bad input.
    """
    from raptor_cp.audit.verify import VerifySettings, expand_models, verify
    from raptor_cp.reports.audit import verify_json, verify_markdown
    from raptor_cp.reports.output import dumps, staged_file

    settings = VerifySettings(
        target, scheduler, time_limit, workers, lanes, bits, mode, pipeline, cores, wall_cap
    )
    paths = expand_models(models)
    with staged_file(out) as staging:
        report = verify(paths, settings, Reporter(quiet=as_json))
        text = dumps(verify_json(report)) if as_json else verify_markdown(report)
        if staging is not None:
            staging.write_text(text, encoding="utf-8")
    click.echo(text, nl=False)
    ctx.exit(1 if report.disagrees else 0)
