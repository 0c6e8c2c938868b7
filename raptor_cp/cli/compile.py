"""``raptor-cp compile``: schedule a model on a target and write the output directory.

The command checks its options, runs `raptor_cp.flows.compile` with a progress
reporter, writes the result with `raptor_cp.reports.compile_output` and prints
one summary line (or the ``--json`` summary).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from raptor_cp.cli.common import (
    PositiveFinite,
    Reporter,
    UserError,
    bits_option,
    cores_option,
    json_option,
    lanes_option,
    model_argument,
    model_path,
    target_option,
)
from raptor_cp.exchange.admission import DEFAULT_FRAGMENT_LIMIT, AdmissionLimits
from raptor_cp.flows import DEFAULT_PIPELINE_DEPTH, DEFAULT_SCHEDULER
from raptor_cp.forked import usable_cpus
from raptor_cp.problems import LatencyProblem, PipelineProblem
from raptor_cp.solvers import methods

DEFAULT_OUT = Path("raptor-out")


@click.command("compile", short_help="Schedule a model; write schedule.json, trace.json.")
@model_argument
@target_option
@cores_option
@click.option(
    "--mode",
    type=click.Choice(["latency", "pipeline"]),
    default="latency",
    show_default=True,
    help="What to optimise: one inference's latency, or pipeline throughput (depth 4 "
    "unless --pipeline N).",
)
@click.option(
    "--pipeline",
    "pipeline",
    type=click.IntRange(min=1),
    help="Pipeline depth N: N > 1 selects pipeline mode with at most N stages; 1 is latency.",
)
@click.option(
    "--pipeline-sweep",
    is_flag=True,
    help="Pipeline mode: also select at depths 2, 4, 8... below N and keep the lowest "
    "interval (never above a sweep at a smaller power of two; one selection per depth).",
)
@click.option(
    "--pipeline-evaluations",
    type=click.IntRange(min=2),
    help="Pipeline mode, beam: queue evaluations per selection (default 32, the seeds'; "
    "4 constructive packings each). More search for a lower interval, at about the same "
    "time per evaluation.",
)
@click.option(
    "--pipeline-method",
    type=click.Choice(methods(PipelineProblem)),
    help="Pipeline selection: beam (default; queue-aware refinement of the initial partition) "
    "or initial (the prefix-DP partition alone, no queue comparison).",
)
@click.option(
    "--scheduler",
    type=click.Choice(methods(LatencyProblem)),
    default=DEFAULT_SCHEDULER,
    show_default=True,
    help="Latency scheduler: auto (the best of peft, heft and their replica variants), one "
    "of them, cpop, or cpsat (exact; small graphs).",
)
@click.option(
    "--polish",
    type=PositiveFinite(),
    metavar="SECONDS",
    help="Improve the heuristic's schedule with CP-SAT for this many deterministic-time "
    "units (about seconds; the result is never longer and is checked).",
)
@click.option(
    "--time-limit",
    type=PositiveFinite(),
    metavar="UNITS",
    help="--scheduler cpsat: CP-SAT budget in deterministic-time units (default 10).",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=DEFAULT_OUT,
    show_default=True,
    help="Output directory (replaced as a whole when the compile succeeds).",
)
@lanes_option
@bits_option
@click.option("--plot", is_flag=True, help="Also write gantt.png.")
@json_option
@click.option("--example", is_flag=True, help="Compile the bundled ResNet-18 (no MODEL).")
@click.option(
    "--periodic-diagnostics",
    is_flag=True,
    help="Pipeline mode: also write reports/pipeline_periodic.json (recurrence, queue estimate).",
)
@click.option(
    "--emit",
    "emit_dir",
    type=click.Path(path_type=Path),
    help="PIM targets: also write the schedule as a pimsim-nn program, its chip config and "
    "network table to this directory (docs/emission.md).",
)
@click.option(
    "--emit-format",
    type=click.Choice(["json", "dir", "pim"]),
    default="json",
    show_default=True,
    help="With --emit: one program.json.gz, or program/ with core_<id>.json or core_<id>.pim.",
)
@click.option(
    "--exchange-budget",
    type=click.IntRange(min=1),
    help="IPU targets: exchange-table bytes per tile; admit a plan within it (docs/exchange.md).",
)
@click.option(
    "--expanded-plan-finalists",
    type=click.IntRange(min=1),
    default=16,
    show_default=True,
    help="With --exchange-budget: expanded plans kept per planning configuration.",
)
@click.option(
    "--placement-finalists",
    type=click.IntRange(min=1),
    default=4,
    show_default=True,
    help="With --exchange-budget: candidates placed by the scheduler (+ the min-storage one).",
)
@click.option(
    "--exchange-schedule-finalists",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="With --exchange-budget: candidates encoded exactly (+ the min-storage one).",
)
@click.option(
    "--fragment-limit",
    type=click.IntRange(min=1),
    default=DEFAULT_FRAGMENT_LIMIT,
    show_default=True,
    help="With --exchange-budget: never encode a plan with a phase of more transfer pieces.",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    help="Pipeline mode: CPUs that build and evaluate each selection round's candidates side "
    "by side (default: every CPU this process may use; 1: one at a time; the schedule is the "
    "same).",
)
def compile_command(
    model: Path | None,
    target: str,
    cores: int | None,
    mode: str,
    pipeline: int | None,
    pipeline_sweep: bool,
    pipeline_evaluations: int | None,
    pipeline_method: str | None,
    scheduler: str,
    polish: float | None,
    time_limit: float | None,
    out: Path,
    lanes: int | None,
    bits: int | None,
    plot: bool,
    as_json: bool,
    example: bool,
    periodic_diagnostics: bool,
    emit_dir: Path | None,
    emit_format: str,
    exchange_budget: int | None,
    expanded_plan_finalists: int,
    placement_finalists: int,
    exchange_schedule_finalists: int,
    fragment_limit: int,
    jobs: int | None,
) -> None:
    """Schedule MODEL on a target and write schedule.json and trace.json to --out.

    With --pipeline N (N > 1) or --mode pipeline, write schedule.json and
    reports/pipeline_selection.json instead (see docs/cli.md). With --emit DIR,
    also write the pimsim-nn program (docs/emission.md).
    """
    from raptor_cp.flows import BackendRejectedError, ExchangeNotAdmittedError, compile
    from raptor_cp.reports.compile_output import (
        check_output,
        write_admission_failure,
        write_compile_output,
        write_selection_failure,
    )

    ctx = click.get_current_context()
    _check_emit(ctx, out, emit_dir, exchange_budget)
    depth = _pipeline_depth(ctx, mode, pipeline, plot)
    if depth is not None and exchange_budget is not None:
        raise UserError("--exchange-budget is available in latency mode only")
    settings = _search_options(scheduler, polish, time_limit, depth, exchange_budget)
    if depth is None and periodic_diagnostics:
        raise UserError("--periodic-diagnostics needs pipeline mode (--pipeline N > 1)")
    if depth is None and pipeline_method is not None:
        raise UserError("--pipeline-method needs pipeline mode (--pipeline N > 1)")
    if depth is None and pipeline_sweep:
        raise UserError("--pipeline-sweep needs pipeline mode (--pipeline N > 1)")
    if depth is None and pipeline_evaluations is not None:
        raise UserError("--pipeline-evaluations needs pipeline mode (--pipeline N > 1)")
    if pipeline_evaluations is not None and pipeline_method not in (None, "beam"):
        raise UserError(
            f"--pipeline-evaluations is the beam's budget; --pipeline-method {pipeline_method} "
            "evaluates no candidates"
        )
    if depth is None and jobs is not None:
        raise UserError("--jobs needs pipeline mode (--pipeline N > 1)")
    limits = None
    if exchange_budget is not None:
        limits = AdmissionLimits(
            expanded_plan_finalists,
            placement_finalists,
            exchange_schedule_finalists,
            fragment_limit,
        )
    check_output(out)
    if emit_dir is not None:
        from raptor_cp.emit.files import check_emission

        check_emission(emit_dir)
    with Reporter(quiet=as_json) as progress, model_path(model, example) as path:
        try:
            result = compile(
                path,
                target,
                pipeline=depth,
                pipeline_method=pipeline_method,
                pipeline_sweep=pipeline_sweep,
                pipeline_evaluations=pipeline_evaluations,
                scheduler=scheduler,
                settings=settings,
                polish=polish,
                lanes=lanes,
                cores=cores,
                bits=bits,
                periodic=periodic_diagnostics,
                exchange_budget=exchange_budget,
                exchange_limits=limits,
                emit=emit_dir is not None,
                jobs=usable_cpus() if jobs is None else jobs,
                progress=progress,
            )
        except ExchangeNotAdmittedError as error:
            report = write_admission_failure(error.admission, out)
            raise UserError(f"{error}; see {report}") from None
        except BackendRejectedError as error:
            report = write_selection_failure(error.result, out)
            raise UserError(f"{error}; see {report}") from None
    files = write_compile_output(result, out, plot)
    progress("write", f"{out}/")
    summary = {**result.summary(), "out": str(out), "files": files}
    if emit_dir is not None and result.program is not None:
        from raptor_cp.emit.files import write_emission

        source = {"model": result.prepared.model, "compile_mode": result.mode}
        emitted = write_emission(result.program, emit_dir, emit_format, source)
        progress("emit", f"{emit_dir}/")
        summary["emission"] |= {"out": str(emit_dir), "files": emitted}
    click.echo(json.dumps(summary, sort_keys=True) if as_json else summary_line(summary))


def _search_options(
    scheduler: str,
    polish: float | None,
    time_limit: float | None,
    depth: int | None,
    exchange_budget: int | None,
) -> dict[str, float] | None:
    """The scheduler settings of ``--time-limit``; rejects combinations that mean nothing."""
    given = [name for name, value in (("--polish", polish), ("--time-limit", time_limit)) if value]
    if given and depth is not None:
        raise UserError(f"{given[0]} is a latency-mode option; pipeline mode has its own search")
    if given and exchange_budget is not None:
        raise UserError(f"{given[0]} is not available with --exchange-budget")
    if time_limit is not None and scheduler != "cpsat":
        raise UserError(
            "--time-limit is the budget of --scheduler cpsat; to improve a heuristic's "
            "schedule with CP-SAT use --polish SECONDS"
        )
    if polish is not None and scheduler == "cpsat":
        raise UserError(
            "--polish improves a heuristic's schedule; --scheduler cpsat takes --time-limit"
        )
    return None if time_limit is None else {"time_limit_s": time_limit}


def _check_emit(
    ctx: click.Context, out: Path, emit_dir: Path | None, exchange_budget: int | None
) -> None:
    """``--emit`` needs its own directory and a PIM target's latency or pipeline mode."""
    from click.core import ParameterSource

    if emit_dir is None:
        if ctx.get_parameter_source("emit_format") is not ParameterSource.DEFAULT:
            raise UserError("--emit-format needs --emit DIR")
        return
    if exchange_budget is not None:
        raise UserError("--emit writes pimsim-nn programs; --exchange-budget is for IPU targets")
    if emit_dir.resolve() == out.resolve():
        raise UserError(f"--emit {emit_dir} must differ from --out")


def _pipeline_depth(ctx: click.Context, mode: str, pipeline: int | None, plot: bool) -> int | None:
    """The pipeline depth ``compile`` runs with, or None for latency mode.

    ``--pipeline N`` with N > 1 implies pipeline mode; ``--mode pipeline`` alone
    uses `DEFAULT_PIPELINE_DEPTH`; ``--pipeline 1`` is latency mode.
    """
    from click.core import ParameterSource

    explicit_mode = ctx.get_parameter_source("mode") is not ParameterSource.DEFAULT
    if pipeline == 1 and mode == "pipeline" and explicit_mode:
        raise UserError("--pipeline 1 is latency mode; pipeline mode needs --pipeline N > 1")
    if pipeline is not None and pipeline > 1 and explicit_mode and mode == "latency":
        raise UserError(f"--pipeline {pipeline} selects pipeline mode; drop --mode latency")
    if not ((pipeline is not None and pipeline > 1) or mode == "pipeline"):
        return None
    if ctx.get_parameter_source("scheduler") is not ParameterSource.DEFAULT:
        raise UserError("--scheduler chooses the latency scheduler; pipeline mode has its own")
    if plot:
        raise UserError("--plot is not available in pipeline mode yet")
    return pipeline if pipeline is not None else DEFAULT_PIPELINE_DEPTH


def summary_line(summary: dict[str, Any]) -> str:
    """The one line ``compile`` prints without ``--json``."""

    where = f"{summary['cores_used']}/{summary['cores']} cores"
    line = _mode_line(summary, where)
    emission = summary.get("emission")
    if emission is None or "out" not in emission:
        return line
    return (
        f"{line}; emitted {emission['instructions']} instructions on {emission['cores']} "
        f"cores to {emission['out']}/"
    )


def _mode_line(summary: dict[str, Any], where: str) -> str:
    from raptor_cp.reports.output import format_ns

    if summary["mode"] == "pipeline":
        stages = f"{summary['stages']} stage{'' if summary['stages'] == 1 else 's'}"
        sweep = summary.get("sweep")
        swept = "" if sweep is None else f" (kept from a sweep to {sweep['requested_depth']})"
        program = summary["program_interval_ns"]
        as_program = "" if program is None else f"; program {format_ns(program)}"
        return (
            f"{summary['model']} on {summary['target']}: {summary['tasks']} tasks in {stages} "
            f"on {where}, interval {format_ns(summary['interval_ns'])} "
            f"({summary['interval_source']}{as_program}; lower bound "
            f"{format_ns(summary['lower_bound_ns'])}{_far_from_bound(summary)}), pipeline depth "
            f"{summary['pipeline']}{swept}, wrote {summary['out']}/"
        )
    bound = max(summary["lower_bound_ns"], summary["solver_bound_ns"] or 0)
    gap = "" if summary["gap"] is None else f", gap {100 * summary['gap']:.1f} %"
    return (
        f"{summary['model']} on {summary['target']}: {summary['tasks']} tasks on {where}, "
        f"makespan {format_ns(summary['makespan_ns'])} (lower bound "
        f"{format_ns(bound)}{gap}{_far_from_bound(summary)}), {_solver_words(summary)}, "
        f"{summary['status']}, wrote {summary['out']}/"
    )


def _solver_words(summary: dict[str, Any]) -> str:
    """``auto (heft won)``, ``auto (peft won), polish lns 2.65 ms -> 2.61 ms`` or ``peft``."""
    from raptor_cp.reports.output import format_ns

    words = summary["scheduler"]
    if "winner" in summary:
        words += f" ({summary['winner']} won)"
    polish = summary.get("polish")
    if polish is not None:
        start = format_ns(polish["start_makespan_ns"])
        words += f", polish {polish['method']} {start} -> {format_ns(summary['makespan_ns'])}"
    return words


FAR_FROM_BOUND = 2.0
"""A makespan at least this many times its lower bound is called out in the summary line."""


def _far_from_bound(summary: dict[str, Any]) -> str:
    """What holds a result at `FAR_FROM_BOUND` times its lower bound or more; else nothing.

    Latency: ``"; 5.5x the bound: 83 % of the critical chain is tasks queueing on
    busy cores"`` (`raptor_cp.critical_chain`). Pipeline: ``"; 3.1x the bound, set by
    queue recurrence"``, the term of the reported interval that binds
    (`raptor_cp.flows.PipelineResult.interval_binding`).
    """
    from raptor_cp.critical_chain import BINDING_WORDS

    pipeline = summary["mode"] == "pipeline"
    value = summary["interval_ns" if pipeline else "makespan_ns"]
    bound = max(summary["lower_bound_ns"], summary.get("solver_bound_ns") or 0)
    if bound <= 0 or value < FAR_FROM_BOUND * bound:
        return ""
    if pipeline:
        binding = summary["interval_binding"].replace("_", " ")
        return f"; {value / bound:.1f}x the bound, set by {binding}"
    chain = summary["critical_chain"]
    binding = chain["binding"]
    total = chain["dependency_ns"] + chain["transfer_ns"] + chain["queue_ns"]
    share = 100 * chain[f"{binding}_ns"] / total if total else 0.0
    return (
        f"; {value / bound:.1f}x the bound: {share:.0f} % of the critical chain is "
        f"{BINDING_WORDS[binding]}"
    )
