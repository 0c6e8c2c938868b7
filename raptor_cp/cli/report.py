"""``raptor-cp report SUITE.toml --out DIR``: run a comparison suite and write its report.

The command loads the suite (`raptor_cp.suite.spec.load_suite`), runs its cells
on the chosen executor (`raptor_cp.suite.runner.run_suite`) and writes
report.md, report.html, results.csv, results.json and the plots
(`raptor_cp.reports.suite_report`). A failed cell is recorded in the report and
never stops the suite; ``--resume`` continues an interrupted run from what it
wrote. docs/reports.md documents the suite format, the outputs and the
executors.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import click


@click.command("report", short_help="Run a comparison suite; write tables and plots.")
@click.argument("suite", type=click.Path(path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), required=True, help="Output directory.")
@click.option(
    "--executor",
    type=click.Choice(["local", "dask"]),
    default="local",
    show_default=True,
    help="local: a process pool; dask: a Dask cluster (--address, or a LocalCluster here).",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Processes (local pool or LocalCluster workers).",
)
@click.option("--address", help="Dask scheduler address, tcp://HOST:PORT (with --executor dask).")
@click.option("--resume", is_flag=True, help="Continue a run in --out; skip the cells it wrote.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.option(
    "--golden",
    type=click.Path(path_type=Path),
    help="Compare with these golden metrics; exit 1 if any figure got worse.",
)
@click.option("--update-golden", is_flag=True, help="With --golden: write this run's metrics.")
@click.pass_context
def report_command(
    ctx: click.Context,
    suite: Path,
    out: Path,
    executor: str,
    workers: int,
    address: str | None,
    resume: bool,
    quiet: bool,
    golden: Path | None,
    update_golden: bool,
) -> None:
    """Run the comparison SUITE (a TOML file) and write its report into --out.

    With --golden FILE, also compare the run's quality figures with FILE: exit
    status 1 (and the list) when any got worse; --update-golden rewrites FILE.
    """
    from raptor_cp.reports.suite_report import write_suite_report
    from raptor_cp.suite.runner import run_suite
    from raptor_cp.suite.spec import load_suite

    parsed = load_suite(suite)
    run = run_suite(
        parsed,
        out,
        executor=executor,
        workers=workers,
        address=address,
        resume=resume,
        show_progress=not quiet,
    )
    command = shlex.join(["raptor-cp", "report", str(suite), "--out", str(out)])
    if executor != "local" or workers != 1:
        command += f" --executor {executor} --workers {workers}"
    files = write_suite_report(run, out, command)
    failed = sum(1 for row in run.rows if row["status"] == "error")
    click.echo(
        f"{parsed.name}: {len(run.rows)} rows from {len(parsed.cells())} cells "
        f"({failed} failed, {run.resumed} resumed), wrote {len(files)} files to {out}/"
    )
    if golden is not None:
        ctx.exit(_gate(run.rows, golden, update_golden))


def _gate(rows: tuple[dict[str, object], ...], golden: Path, update: bool) -> int:
    """Compare with (or rewrite) the golden metrics; the exit status."""
    from raptor_cp.suite.gate import compare, load_golden, metrics, write_golden

    current = metrics(rows)
    if update:
        write_golden(golden, current)
        click.echo(f"wrote golden metrics to {golden}")
        return 0
    verdict = compare(current, load_golden(golden))
    for line in verdict.improvements:
        click.echo(f"better: {line}")
    for line in verdict.regressions:
        click.echo(f"WORSE: {line}")
    if verdict.improvements and verdict.passed:
        click.echo(f"figures improved: update {golden} with --update-golden in the same commit")
    return 0 if verdict.passed else 1
