"""Write a compile's output directory, all files or none.

`write_compile_output` renders a `CompileResult` into ``--out``:

* latency: ``schedule.json``, ``trace.json`` (Chrome trace) and, with ``plot``,
  ``gantt.png``; an exchange-admitted schedule adds ``exchange_plan.json`` and
  ``reports/exchange_admission.json``;
* pipeline: ``schedule.json`` and ``reports/pipeline_selection.json``, plus
  ``reports/pipeline_periodic.json`` when the periodic diagnostic ran and
  ``reports/pipeline_sweep.json`` after a depth sweep.

Files are written into a staging directory that replaces ``out`` only once
every file is complete (`staged_directory`). A failed exchange admission writes
its diagnostic into the sibling ``<out>.failed`` (`failed_output`), so that the
previous good ``out`` stays intact.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from raptor_cp.reports.output import check_destination, dumps, format_ns, staged_directory

if TYPE_CHECKING:
    from raptor_cp.flows import CompileResult, ExchangeAdmission, LatencyResult, PipelineResult

REPORT_DIR = "reports"
SELECTION_REPORT = "pipeline_selection.json"
PERIODIC_REPORT = "pipeline_periodic.json"
SWEEP_REPORT = "pipeline_sweep.json"
ADMISSION_REPORT = "exchange_admission.json"
EXCHANGE_PLAN = "exchange_plan.json"
OUTPUT_FILES = (
    "schedule.json",
    "trace.json",
    "gantt.png",
    EXCHANGE_PLAN,
    REPORT_DIR,
    *(
        f"{REPORT_DIR}/{name}"
        for name in (SELECTION_REPORT, PERIODIC_REPORT, SWEEP_REPORT, ADMISSION_REPORT)
    ),
)
"""Every path ``compile`` may write, relative to ``--out``; an output directory holding
anything else, at any depth, is never replaced."""
FAILED_SUFFIX = ".failed"
"""A failed admission's diagnostic goes to ``<out>.failed`` beside ``out``."""


def check_output(out: Path) -> None:
    """Fail now, before any work, if ``out`` could not be replaced by a compile's files."""
    check_destination(out, OUTPUT_FILES)


def failed_output(out: Path) -> Path:
    """Where a failed ``--exchange-budget`` compile writes its diagnostic: ``<out>.failed``."""
    return out.with_name(out.name + FAILED_SUFFIX)


def write_compile_output(result: CompileResult, out: Path, plot: bool = False) -> list[str]:
    """Write every output file of ``result`` into ``out``; return their relative paths."""
    if result.mode == "pipeline":
        return _write_pipeline(result, out)  # type: ignore[arg-type]
    return _write_latency(result, out, plot)  # type: ignore[arg-type]


def _write_latency(result: LatencyResult, out: Path, plot: bool) -> list[str]:
    from raptor_cp.reports.schedule_json import schedule_document
    from raptor_cp.reports.trace import trace_document

    problem, solution, evaluation = result.problem, result.solution, result.evaluation
    schedule = solution.schedule
    assert schedule is not None
    files = ["schedule.json", "trace.json", *(["gantt.png"] if plot else [])]
    with staged_directory(out, OUTPUT_FILES) as staging:
        (staging / "schedule.json").write_text(dumps(schedule_document(result)), encoding="utf-8")
        trace = trace_document(problem, schedule, evaluation)
        (staging / "trace.json").write_text(dumps(trace), encoding="utf-8")
        if plot:
            from raptor_cp.reports.gantt import write_gantt

            title = (
                f"{result.prepared.model} on {problem.target.name}, {solution.solver}: makespan "
                f"{format_ns(int(evaluation.makespan_ns))}"
            )
            bound = result.bounds.makespan_ns
            write_gantt(staging / "gantt.png", problem, schedule, evaluation, title, bound)
        if result.exchange is not None:
            files += _write_exchange(result.exchange, staging)
    return files


def _write_exchange(admission: ExchangeAdmission, staging: Path) -> list[str]:
    """The admitted (or, on failure, the closest) plan and the admission report."""
    from raptor_cp.exchange.plan_json import write_plan
    from raptor_cp.reports.exchange_admission import admission_report

    files = []
    key = admission.selected or admission.state.closest()
    if key is not None:
        write_plan(admission.source.plan(key), staging / EXCHANGE_PLAN)
        files.append(EXCHANGE_PLAN)
    (staging / REPORT_DIR).mkdir()
    report = dumps(admission_report(admission.state), 3)
    (staging / REPORT_DIR / ADMISSION_REPORT).write_text(report, encoding="utf-8")
    return [*files, f"{REPORT_DIR}/{ADMISSION_REPORT}"]


def write_admission_failure(admission: ExchangeAdmission, out: Path) -> Path:
    """On failed admission: the admission report and the closest plan in ``<out>.failed``.

    ``out`` itself, perhaps a previous good result, is not touched. Returns the
    report's path.
    """
    failed = failed_output(out)
    with staged_directory(failed, OUTPUT_FILES) as staging:
        _write_exchange(admission, staging)
    return failed / REPORT_DIR / ADMISSION_REPORT


def _write_pipeline(result: PipelineResult, out: Path) -> list[str]:
    from raptor_cp.reports.pipeline_selection import selection_document
    from raptor_cp.reports.schedule_json import schedule_document

    files = ["schedule.json", f"{REPORT_DIR}/{SELECTION_REPORT}"]
    with staged_directory(out, OUTPUT_FILES) as staging:
        (staging / "schedule.json").write_text(dumps(schedule_document(result)), encoding="utf-8")
        (staging / REPORT_DIR).mkdir()
        selection = dumps(selection_document(result))
        (staging / REPORT_DIR / SELECTION_REPORT).write_text(selection, encoding="utf-8")
        if result.periodic is not None:
            periodic = dumps(result.periodic)
            (staging / REPORT_DIR / PERIODIC_REPORT).write_text(periodic, encoding="utf-8")
            files.append(f"{REPORT_DIR}/{PERIODIC_REPORT}")
        if result.sweep:
            sweep = dumps(result.sweep_document())
            (staging / REPORT_DIR / SWEEP_REPORT).write_text(sweep, encoding="utf-8")
            files.append(f"{REPORT_DIR}/{SWEEP_REPORT}")
    return files


def write_selection_failure(result: PipelineResult, out: Path) -> Path:
    """When the backend rejected every candidate: ``pipeline_selection.json`` with the attempts.

    It goes to ``<out>.failed``, as a failed admission's diagnostic does. Returns its path.
    """
    from raptor_cp.reports.pipeline_selection import selection_document

    failed = failed_output(out)
    with staged_directory(failed, OUTPUT_FILES) as staging:
        (staging / REPORT_DIR).mkdir()
        selection = dumps(selection_document(result))
        (staging / REPORT_DIR / SELECTION_REPORT).write_text(selection, encoding="utf-8")
    return failed / REPORT_DIR / SELECTION_REPORT
