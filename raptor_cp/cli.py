"""The ``raptor-cp`` command: ``compile`` a model onto a target, ``inspect`` its graph.

Every user mistake surfaces as a `RaptorError`; the command prints it as one
``error: ...`` line on stderr and exits with status 2 (click's usage errors exit
2 as well). Heavy modules (onnx, ortools, matplotlib) and the pipeline itself
are imported inside the commands so ``raptor-cp --help`` stays fast.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from raptor_cp import __version__
from raptor_cp.cli_cycle_ratio import cycle_ratio_command
from raptor_cp.cli_exchange import exchange_command
from raptor_cp.cli_pack import pack_command
from raptor_cp.cli_periodic import periodic_command
from raptor_cp.errors import (
    InvalidInputError,
    NotFoundWithinBudgetError,
    ProvedInfeasibleError,
    RaptorError,
)
from raptor_cp.problems import LatencyProblem, Status
from raptor_cp.reports.output import dumps, format_ns, staged_directory
from raptor_cp.solvers import LATENCY_SOLVERS, latency_solver
from raptor_cp.targets.registry import DEFAULT_TARGET, PRESETS, resolve_target

if TYPE_CHECKING:
    from raptor_cp.bounds import LowerBounds
    from raptor_cp.evaluate import Evaluation
    from raptor_cp.graph import ComputeGraph
    from raptor_cp.problems import LatencySolution
    from raptor_cp.targets.base import SchedulingTarget
    from raptor_cp.workload.model import Workload

DEFAULT_SCHEDULER = "peft"
"""The latency scheduler ``compile`` uses when ``--scheduler`` is not given (the seeds'
production choice; HEFT has no resident-weight recovery and fails on full PIM models)."""
DEFAULT_OUT = Path("raptor-out")
OUTPUT_FILES = ("schedule.json", "trace.json", "gantt.png", "reports", "exchange_plan.json")
"""Every file ``compile`` may write; an output directory holding others is never replaced."""
EXAMPLE_MODEL = "resnet18.onnx"
"""The model ``compile --example`` schedules, bundled in ``raptor_cp/data``."""


class UserError(click.ClickException):
    """A mistake the user can fix: printed as one ``error:`` line, exit status 2."""

    exit_code = 2

    def show(self, file: object = None) -> None:
        click.echo(f"error: {self.format_message()}", err=True)


class _Group(click.Group):
    """A command group that turns `RaptorError` and `OSError` into `UserError`."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except RaptorError as error:
            raise UserError(_one_line(str(error))) from None
        except OSError as error:
            where = f"{error.filename}: " if error.filename else ""
            raise UserError(_one_line(where + (error.strerror or str(error)))) from None


def _one_line(message: str) -> str:
    return " ".join(message.split())


class _Progress:
    """Phase timings on stderr (silent with ``--json``)."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.last = time.perf_counter()

    def done(self, phase: str, detail: str) -> None:
        now = time.perf_counter()
        self.say(f"{phase:<9}{now - self.last:7.2f} s  {detail}")
        self.last = now

    def say(self, message: str) -> None:
        if not self.quiet:
            click.echo(message, err=True)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="raptor-cp")
def main() -> None:
    """Schedule deep-learning compute graphs onto spatial accelerators.

    MODEL is an ONNX file, a PIMCOMP-NN node list (.json), a raptor task graph
    (.json) or a Standard Task Graph (.stg). See docs/cli.md for every option and
    output field.
    """


_model_argument = click.argument("model", required=False, type=click.Path(path_type=Path))
_target_option = click.option(
    "--target",
    "-t",
    default=DEFAULT_TARGET,
    show_default=True,
    help=f"Preset ({', '.join(PRESETS)}, generic:P[:NS_PER_BYTE]) or a pimsim-nn config path.",
)
_lanes_option = click.option(
    "--lanes",
    type=click.IntRange(min=1),
    help="Lanes (output-row chunks) per operation; default: chosen per model and target.",
)
_bits_option = click.option(
    "--bits", type=click.IntRange(min=1), help="Activation/weight precision (default: the model's)."
)
_json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print one JSON object on stdout and nothing else."
)


@main.command("compile", short_help="Schedule a model; write schedule.json, trace.json.")
@_model_argument
@_target_option
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
    "--scheduler",
    type=click.Choice(sorted(LATENCY_SOLVERS)),
    default=DEFAULT_SCHEDULER,
    show_default=True,
    help="Latency scheduler.",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=DEFAULT_OUT,
    show_default=True,
    help="Output directory (replaced as a whole when the compile succeeds).",
)
@_lanes_option
@_bits_option
@click.option("--plot", is_flag=True, help="Also write gantt.png.")
@_json_option
@click.option("--example", is_flag=True, help="Compile the bundled ResNet-18 (no MODEL).")
@click.option(
    "--periodic-diagnostics",
    is_flag=True,
    help="Pipeline mode: also write reports/pipeline_periodic.json (recurrence, queue estimate).",
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
def compile_command(
    model: Path | None,
    target: str,
    mode: str,
    pipeline: int | None,
    scheduler: str,
    out: Path,
    lanes: int | None,
    bits: int | None,
    plot: bool,
    as_json: bool,
    example: bool,
    periodic_diagnostics: bool,
    exchange_budget: int | None,
    expanded_plan_finalists: int,
    placement_finalists: int,
    exchange_schedule_finalists: int,
) -> None:
    """Schedule MODEL on a target and write schedule.json and trace.json to --out.

    With --pipeline N (N > 1) or --mode pipeline, write schedule.json and
    reports/pipeline_selection.json instead (see docs/cli.md).
    """
    depth = _pipeline_depth(click.get_current_context(), mode, pipeline, plot)
    if depth is not None and exchange_budget is not None:
        raise UserError("--exchange-budget is available in latency mode only")
    if depth is None and periodic_diagnostics:
        raise UserError("--periodic-diagnostics needs pipeline mode (--pipeline N > 1)")
    progress = _Progress(quiet=as_json)
    if depth is not None:
        from raptor_cp.cli_pipeline import compile_pipeline, summary_line

        with _model_path(model, example) as path:
            workload, target_obj, graph, lanes_used = _prepare(path, target, lanes, bits, progress)
        summary = compile_pipeline(
            workload, target_obj, graph, depth, out, progress, periodic=periodic_diagnostics
        )
        summary["lanes"] = lanes_used
        summary["warnings"] = list(getattr(target_obj, "warnings", ()))
        click.echo(json.dumps(summary, sort_keys=True) if as_json else summary_line(summary))
        return
    with _model_path(model, example) as path:
        workload, target_obj, graph, lanes_used = _prepare(path, target, lanes, bits, progress)
    if exchange_budget is None:
        summary = _compile(workload, target_obj, graph, scheduler, out, plot, progress)
    else:
        from raptor_cp.cli_exchange import compile_admitted

        finalists = (expanded_plan_finalists, placement_finalists, exchange_schedule_finalists)
        summary = compile_admitted(
            workload,
            target_obj,
            lanes=lanes,
            scheduler=scheduler,
            budget=exchange_budget,
            finalists=finalists,
            out=out,
            plot=plot,
            progress=progress.done,
        )
        lanes_used = summary["lanes"]
    summary["lanes"] = lanes_used
    summary["warnings"] = list(getattr(target_obj, "warnings", ()))
    if as_json:
        click.echo(json.dumps(summary, sort_keys=True))
        return
    click.echo(
        f"{summary['model']} on {summary['target']}: {summary['tasks']} tasks on "
        f"{summary['cores_used']}/{summary['cores']} cores, makespan "
        f"{format_ns(summary['makespan_ns'])} (lower bound "
        f"{format_ns(summary['lower_bound_ns'])}), {summary['scheduler']}, wrote {out}/"
    )


def _pipeline_depth(ctx: click.Context, mode: str, pipeline: int | None, plot: bool) -> int | None:
    """The pipeline depth ``compile`` runs with, or None for latency mode.

    ``--pipeline N`` with N > 1 implies pipeline mode; ``--mode pipeline`` alone
    uses `DEFAULT_PIPELINE_DEPTH`; ``--pipeline 1`` is latency mode.
    """
    from click.core import ParameterSource

    from raptor_cp.cli_pipeline import DEFAULT_PIPELINE_DEPTH

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


@main.command("inspect", short_help="Print a lowered model's size, weight slots, bounds.")
@_model_argument
@_target_option
@_lanes_option
@_bits_option
@_json_option
def inspect_command(
    model: Path | None, target: str, lanes: int | None, bits: int | None, as_json: bool
) -> None:
    """Describe MODEL lowered for a target: sizes, weight slots and lower bounds."""
    from raptor_cp.bounds import lower_bounds

    progress = _Progress(quiet=True)
    with _model_path(model, example=False) as path:
        workload, target_obj, graph, lanes_used = _prepare(path, target, lanes, bits, progress)
    if not as_json:
        for warning in getattr(target_obj, "warnings", ()):
            click.echo(f"warning: {warning}", err=True)
    bounds = lower_bounds(graph, target_obj)
    report = _inspection(workload, target_obj, graph, lanes_used, bounds)
    if as_json:
        click.echo(json.dumps(report, sort_keys=True))
        return
    for line in _inspection_lines(report):
        click.echo(line)


@main.command("verify", short_help="Audit a heuristic against CP-SAT on small models.")
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
    default=4,
    show_default=True,
    help="Pipeline depth of the pipeline and packing audits.",
)
@_target_option
@click.option(
    "--scheduler",
    type=click.Choice(sorted(set(LATENCY_SOLVERS) - {"cpsat"})),
    default=DEFAULT_SCHEDULER,
    show_default=True,
    help="Heuristic to audit.",
)
@click.option(
    "--time-limit",
    type=click.FloatRange(min=0, min_open=True),
    default=10.0,
    show_default=True,
    help="CP-SAT budget per instance, in deterministic-time units (not wall seconds).",
)
@_lanes_option
@_bits_option
@click.option(
    "--workers", type=click.IntRange(min=1), default=8, show_default=True, help="CP-SAT workers."
)
@_json_option
@click.option("--out", type=click.Path(path_type=Path), help="Also write the report to this file.")
@click.pass_context
def verify_command(
    ctx: click.Context,
    models: tuple[Path, ...],
    mode: str,
    pipeline: int,
    target: str,
    scheduler: str,
    time_limit: float,
    lanes: int | None,
    bits: int | None,
    workers: int,
    as_json: bool,
    out: Path | None,
) -> None:
    """Audit a heuristic against CP-SAT on each MODEL (files or directories).

    Exit status 0 when every instance agrees, 1 when any disagrees, 2 on bad input.
    """
    from raptor_cp.cli_verify import VerifySettings, verify

    settings = VerifySettings(target, scheduler, time_limit, workers, lanes, bits, mode, pipeline)
    ctx.exit(verify(models, mode, settings, as_json, out))


@contextmanager
def _model_path(model: Path | None, example: bool) -> Iterator[Path]:
    """The model file to read: MODEL, or the bundled example with ``--example``."""
    if example and model is not None:
        raise UserError("give either MODEL or --example, not both")
    if example:
        from importlib.resources import as_file, files

        with as_file(files("raptor_cp") / "data" / EXAMPLE_MODEL) as path:
            yield path
        return
    if model is None:
        raise UserError("missing MODEL (a model file; or use --example)")
    if not model.exists():
        raise InvalidInputError(f"{model}: no such file")
    if not model.is_file():
        raise InvalidInputError(f"{model}: not a file")
    yield model


def _prepare(
    path: Path, target_spec: str, lanes: int | None, bits: int | None, progress: _Progress
) -> tuple[Workload, SchedulingTarget, ComputeGraph, int]:
    """Load the workload, resolve the target and lower one onto the other."""
    from raptor_cp.workload.load import load_workload

    workload = load_workload(path, bits=bits)
    target = resolve_target(target_spec)
    progress.done("load", f"{workload.name}: {len(workload.operations)} operations")
    for warning in getattr(target, "warnings", ()):
        progress.say(f"warning: {warning}")
    graph, lanes_used = _lower(workload, target, lanes, progress)
    return workload, target, graph, lanes_used


def _lower(
    workload: Workload, target: SchedulingTarget, lanes: int | None, progress: _Progress
) -> tuple[ComputeGraph, int]:
    """Lower ``workload`` onto ``target`` with ``lanes`` (default: chosen for the pair)."""
    from raptor_cp.workload.lowering import default_lanes, lower

    lanes_used = lanes if lanes is not None else default_lanes(workload, target)
    graph = lower(workload, target, lanes=lanes_used)
    progress.done(
        "lower",
        f"{graph.num_tasks} tasks, {graph.num_edges} edges, {lanes_used} lanes on {target.name}",
    )
    return graph, lanes_used


def _compile(
    workload: Workload,
    target: SchedulingTarget,
    graph: ComputeGraph,
    scheduler: str,
    out: Path,
    plot: bool,
    progress: _Progress,
) -> dict[str, Any]:
    """Schedule, check, evaluate and write; return the summary of the result."""
    from raptor_cp.bounds import lower_bounds
    from raptor_cp.check import check
    from raptor_cp.evaluate import evaluate

    problem = LatencyProblem(graph, target)
    bounds = lower_bounds(graph, target)
    solution = latency_solver(scheduler).solve(problem)
    if solution.schedule is None:
        _no_schedule(scheduler, solution.status, workload.name)
    progress.done("schedule", f"{scheduler}: {solution.status.value}")
    check(problem, solution.schedule)
    evaluation = evaluate(problem, solution.schedule)
    progress.done("check", f"makespan {format_ns(int(evaluation.makespan_ns))}")
    _write(out, problem, solution, evaluation, bounds, workload.name, plot)
    progress.done("write", f"{out}/")
    return {
        "mode": "latency",
        "model": workload.name,
        "target": target.name,
        "scheduler": scheduler,
        "status": solution.status.value,
        "tasks": graph.num_tasks,
        "cores": target.cores,
        "cores_used": int(evaluation.cores_used),
        "makespan_ns": int(evaluation.makespan_ns),
        "lower_bound_ns": bounds.makespan_ns,
        "out": str(out),
        "files": ["schedule.json", "trace.json", *(["gantt.png"] if plot else [])],
    }


def _no_schedule(scheduler: str, status: Status, model: str) -> NoReturn:
    if status is Status.INFEASIBLE:
        raise ProvedInfeasibleError(f"{model}: {scheduler} proved that no schedule exists")
    raise NotFoundWithinBudgetError(f"{model}: {scheduler} found no schedule ({status.value})")


def _write(
    out: Path,
    problem: LatencyProblem,
    solution: LatencySolution,
    evaluation: Evaluation,
    bounds: LowerBounds,
    model: str,
    plot: bool,
) -> None:
    """Write every output file into a staging directory that then replaces ``out``."""
    with staged_directory(out, OUTPUT_FILES) as staging:
        write_schedule_files(staging, problem, solution, evaluation, bounds, model, plot)


def write_schedule_files(
    staging: Path,
    problem: LatencyProblem,
    solution: LatencySolution,
    evaluation: Evaluation,
    bounds: LowerBounds,
    model: str,
    plot: bool,
) -> None:
    """Write schedule.json, trace.json and (with ``plot``) gantt.png into ``staging``."""
    from raptor_cp.reports.schedule_json import schedule_document
    from raptor_cp.reports.trace import trace_document

    schedule = solution.schedule
    document = schedule_document(problem, solution, evaluation, bounds, model)
    (staging / "schedule.json").write_text(dumps(document), encoding="utf-8")
    trace = trace_document(problem, schedule, evaluation)
    (staging / "trace.json").write_text(dumps(trace), encoding="utf-8")
    if plot:
        from raptor_cp.reports.gantt import write_gantt

        title = (
            f"{model} on {problem.target.name}, {solution.solver}: makespan "
            f"{format_ns(int(evaluation.makespan_ns))}"
        )
        write_gantt(staging / "gantt.png", problem, schedule, evaluation, title, bounds.makespan_ns)


def _inspection(
    workload: Workload,
    target: SchedulingTarget,
    graph: ComputeGraph,
    lanes: int,
    bounds: LowerBounds,
) -> dict[str, Any]:
    """The facts ``inspect`` prints, as a JSON-ready dict."""
    from raptor_cp.targets.base import UNLIMITED_CAPACITY

    kinds: dict[str, int] = {}
    op_types: dict[str, int] = {}
    for op in workload.operations:
        kinds[op.kind.value] = kinds.get(op.kind.value, 0) + 1
        op_types[op.op_type] = op_types.get(op.op_type, 0) + 1
    sizes = graph.weight_size.tolist()
    largest_task = max((sum(sizes[w] for w in ws) for ws in graph.task_weights), default=0)
    largest_core = max(target.capacity(p) for p in range(target.cores))
    unlimited = largest_core >= UNLIMITED_CAPACITY
    return {
        "model": workload.name,
        "target": target.name,
        "cores": target.cores,
        "lanes": lanes,
        "operations": len(workload.operations),
        "operations_by_kind": kinds,
        "operations_by_type": op_types,
        "tasks": graph.num_tasks,
        "edges": graph.num_edges,
        "edge_bytes": int(graph.edge_bytes.sum()),
        "weights": graph.num_weights,
        "weight_slots_needed": bounds.weight_slots,
        "weight_slots_available": None if unlimited else bounds.capacity_slots,
        "largest_task_slots": int(largest_task),
        "core_capacity_slots": None if unlimited else largest_core,
        "lower_bound_ns": bounds.makespan_ns,
        "lower_bounds": {
            "critical_path_ns": bounds.critical_path_ns,
            "work_per_core_ns": bounds.work_per_core_ns,
            "cores_needed": bounds.cores_needed,
        },
        "warnings": list(getattr(target, "warnings", ())),
    }


def _inspection_lines(report: dict[str, Any]) -> list[str]:
    """``inspect``'s human-readable text."""

    def counts(table: dict[str, int]) -> str:
        return ", ".join(f"{key} {table[key]}" for key in sorted(table))

    available = report["weight_slots_available"]
    capacity = report["core_capacity_slots"]
    bounds = report["lower_bounds"]
    return [
        f"{report['model']} on {report['target']} ({report['cores']} cores)",
        f"operations: {report['operations']} ({counts(report['operations_by_kind'])})",
        f"operator types: {counts(report['operations_by_type'])}",
        f"tasks: {report['tasks']}, edges: {report['edges']} ({report['edge_bytes']} bytes), "
        f"lanes: {report['lanes']}",
        f"weights: {report['weights']}, weight slots needed {report['weight_slots_needed']} "
        f"of {'unlimited' if available is None else available} available; largest task "
        f"{report['largest_task_slots']} of {'unlimited' if capacity is None else capacity} "
        "per core",
        f"lower bounds: makespan {format_ns(report['lower_bound_ns'])} (critical path "
        f"{format_ns(bounds['critical_path_ns'])}, work/cores "
        f"{format_ns(bounds['work_per_core_ns'])}), cores needed {bounds['cores_needed']}",
    ]


main.add_command(cycle_ratio_command)
main.add_command(periodic_command)
main.add_command(exchange_command)
main.add_command(pack_command)
