"""The compile flows behind ``raptor-cp compile`` and the library API, without printing.

Every caller (the CLI, ``verify``, the benchmarks, a notebook) runs the same
sequence: load the workload, resolve the target, lower one onto the other
(`prepare`), state the problem, solve it, check the answer independently,
evaluate it, and hand typed results to `raptor_cp.reports` for writing::

    import raptor_cp

    result = raptor_cp.compile("resnet18.onnx", target="arch-a")
    result.makespan_ns, result.solution.solver

Three flows share `prepare`: `compile_latency` (the ``auto`` portfolio, a list
scheduler or CP-SAT on a `LatencyProblem`, optionally polished with CP-SAT),
`compile_pipeline` (a `PipelineProblem` at a depth) and
`compile_exchange` (IPU exchange-table admission). `compile` picks one from
its arguments. Progress is reported through an optional ``progress(phase,
detail)`` callback after each phase, and solvers may `raptor_cp.progress.tick`
what a long phase is doing; nothing here prints or writes files.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from raptor_cp.bounds import LowerBounds, interval_lower_bound, lower_bounds
from raptor_cp.critical_chain import ChainBreakdown, critical_chain
from raptor_cp.errors import (
    CapabilityUnavailableError,
    InvalidConfigError,
    InvalidInputError,
    NotFoundWithinBudgetError,
    ProvedInfeasibleError,
    RaptorError,
    TimingUnavailableError,
)
from raptor_cp.evaluation import Evaluation, evaluate
from raptor_cp.graph import ComputeGraph
from raptor_cp.pipeline.sweep import DepthOutcome, sweep_depths, sweep_document
from raptor_cp.problems import (
    LatencyProblem,
    LatencySolution,
    PipelineProblem,
    PipelineSolution,
    Status,
    check,
    relative_gap,
)
from raptor_cp.progress import Progress, reporting
from raptor_cp.reports.output import count, format_ns
from raptor_cp.solvers import DEFAULT_METHOD, solve
from raptor_cp.targets.base import SchedulingTarget
from raptor_cp.targets.registry import DEFAULT_TARGET, resolve_target, scale_target
from raptor_cp.workload.model import Workload

if TYPE_CHECKING:
    from raptor_cp.emit.backend import BackendAttempt
    from raptor_cp.emit.program import EmittedProgram
    from raptor_cp.exchange.admission import Admission, AdmissionLimits
    from raptor_cp.exchange.candidates import WorkloadCandidates
    from raptor_cp.pipeline.plan import PipelinePlan
    from raptor_cp.pipeline.selection import Candidate


DEFAULT_SCHEDULER = "auto"
"""The latency scheduler when none is given: the portfolio of list schedulers
(`raptor_cp.heuristics.portfolio`), PEFT first and winning ties, so never longer than
the seeds' PEFT (docs/architecture.md, "Default scheduler")."""
DEFAULT_PIPELINE_DEPTH = 4
"""Depth of ``compile --mode pipeline`` without ``--pipeline N``."""


def _quiet(phase: str, detail: str) -> None:
    """The default progress callback: report nothing."""


@dataclass(frozen=True, eq=False)
class Prepared:
    """A workload lowered onto a target: what every flow starts from."""

    workload: Workload
    target: SchedulingTarget
    graph: ComputeGraph
    lanes: int
    """Lanes per operation the graph was lowered with (``--lanes`` capped at the rows of
    the tallest operation, beyond which more lanes change nothing)."""
    notes: tuple[str, ...] = ()
    """What lowering adjusted (a capped ``--lanes``), reported like target warnings."""

    @property
    def warnings(self) -> tuple[str, ...]:
        """The target's warnings, then `notes`: what the user should know about this run."""
        return (*self.target.warnings, *self.notes)

    @property
    def model(self) -> str:
        """The workload's name."""
        return self.workload.name


def lower(
    workload: Workload, target: SchedulingTarget, lanes: int | None = None
) -> tuple[ComputeGraph, int]:
    """Lower ``workload`` onto ``target`` with ``lanes`` (default: chosen for the pair).

    Returns the graph and the lane count used: ``lanes`` capped at
    `raptor_cp.workload.lowering.max_lanes` (more lanes give the same graph).
    Raises `InvalidInputError` when the graph has no task: an empty model (or
    one of views only) has nothing to schedule, and "0 tasks, exit 0" would hide it.
    """
    from raptor_cp.workload.lowering import default_lanes, max_lanes
    from raptor_cp.workload.lowering import lower as lower_graph

    lanes_used = lanes if lanes is not None else default_lanes(workload, target)
    lanes_used = min(lanes_used, max_lanes(workload))
    graph = lower_graph(workload, target, lanes=lanes_used)
    if graph.num_tasks == 0:
        kinds = sorted({op.kind.value for op in workload.operations})
        why = (
            f"its operations ({', '.join(kinds)}) lower to no task"
            if kinds
            else "the model has no operations"
        )
        raise InvalidInputError(f"{workload.source or workload.name}: nothing to schedule: {why}")
    return graph, lanes_used


def prepare(
    model: str | Path | Workload,
    target: str | SchedulingTarget = DEFAULT_TARGET,
    *,
    lanes: int | None = None,
    bits: int | None = None,
    cores: int | None = None,
    progress: Progress = _quiet,
) -> Prepared:
    """Load ``model`` (a path or a `Workload`), resolve ``target`` and lower one onto the other.

    ``cores`` scales the target to that many cores (``--cores``,
    `raptor_cp.targets.registry.scale_target`). Raises `RaptorError` subclasses
    for a bad file, target or lane count.
    """
    from raptor_cp.workload.load import load_workload

    workload = model if isinstance(model, Workload) else load_workload(model, bits=bits)
    target_obj = resolve_target(target) if isinstance(target, str) else target
    if cores is not None:
        target_obj = scale_target(target_obj, cores)
    progress("load", f"{workload.name}: {count(len(workload.operations), 'operation')}")
    for warning in target_obj.warnings:
        progress("warning", warning)
    graph, lanes_used = lower(workload, target_obj, lanes)
    notes: tuple[str, ...] = ()
    if lanes is not None and lanes > lanes_used:
        from raptor_cp.workload.lowering import LANED_KINDS

        laned = any(op.kind in LANED_KINDS for op in workload.operations)
        notes = (
            f"--lanes {lanes} capped at {lanes_used}: {workload.name}'s tallest operation has "
            f"{lanes_used} row{'s' * (lanes_used != 1)}, so more lanes give the same graph"
            if laned
            else f"--lanes {lanes} has no effect: {workload.name} is a task graph (no rows to "
            "split); it is lowered with 1 lane",
        )
    progress(
        "lower",
        f"{count(graph.num_tasks, 'task')}, {count(graph.num_edges, 'edge')}, "
        f"{count(lanes_used, 'lane')} on {target_obj.name}",
    )
    for note in notes:
        progress("warning", note)
    return Prepared(workload, target_obj, graph, lanes_used, notes)


@dataclass(frozen=True, eq=False)
class LatencyResult:
    """A checked, evaluated latency schedule of one model on one target."""

    prepared: Prepared
    problem: LatencyProblem
    solution: LatencySolution
    """The solver's answer; its schedule is set and passed `check`."""
    evaluation: Evaluation
    bounds: LowerBounds
    exchange: ExchangeAdmission | None = None
    """The exchange-table admission that chose this schedule (``--exchange-budget``)."""
    program: EmittedProgram | None = None
    """The schedule lowered to a verified pimsim-nn program (``--emit``)."""

    mode = "latency"

    @property
    def makespan_ns(self) -> int:
        return int(self.evaluation.makespan_ns)

    @property
    def best_bound_ns(self) -> int:
        """The best proved lower bound: the analytic bounds' or the solver's, if higher."""
        return max(self.bounds.makespan_ns, self.solution.bound or 0)

    @property
    def gap(self) -> float | None:
        """``(makespan - best_bound_ns) / makespan`` (`raptor_cp.problems.relative_gap`)."""
        return relative_gap(self.makespan_ns, self.best_bound_ns)

    @cached_property
    def chain(self) -> ChainBreakdown:
        """The schedule's critical chain split by cause (`raptor_cp.critical_chain`)."""
        schedule = self.solution.schedule
        assert schedule is not None
        return critical_chain(self.problem, schedule, self.evaluation)

    def solver_facts(self) -> dict[str, Any]:
        """How the schedule was found, for the summary and ``schedule.json``.

        ``winner`` and ``members`` (the ``auto`` portfolio: the member whose schedule
        won, and each member's makespan or why it has none), ``polish`` (the CP-SAT
        polish: method, whether it improved, starting makespan, deterministic time,
        ``wall_capped``, ...) and, for CP-SAT, ``wall_capped``; only the keys that apply.
        """
        details = self.solution.details
        facts = {key: details[key] for key in ("winner", "members", "polish") if key in details}
        if self.solution.solver == "cpsat":
            facts["wall_capped"] = bool(details.get("wall_capped", False))
        return facts

    def summary(self) -> dict[str, Any]:
        """The facts of the one-line summary and of ``compile --json``."""
        target = self.problem.target
        summary: dict[str, Any] = {
            "mode": self.mode,
            "model": self.prepared.model,
            "target": target.name,
            "scheduler": self.solution.solver,
            "status": self.solution.status.value,
            "tasks": self.problem.graph.num_tasks,
            "cores": target.cores,
            "cores_used": int(self.evaluation.cores_used),
            "makespan_ns": self.makespan_ns,
            "lower_bound_ns": self.bounds.makespan_ns,
            "solver_bound_ns": self.solution.bound,
            "gap": self.gap,
            "lanes": self.prepared.lanes,
            "warnings": list(self.prepared.warnings),
            "critical_chain": {
                "dependency_ns": self.chain.dependency_ns,
                "transfer_ns": self.chain.transfer_ns,
                "queue_ns": self.chain.queue_ns,
                "binding": self.chain.binding,
            },
        }
        summary.update(self.solver_facts())
        if self.exchange is not None:
            summary["exchange"] = self.exchange.summary()
        if self.program is not None:
            summary["emission"] = emission_summary(self.program)
        return summary


@dataclass(frozen=True, eq=False)
class PipelineResult:
    """A checked pipeline schedule of one model on one target at one depth."""

    prepared: Prepared
    problem: PipelineProblem
    solution: PipelineSolution
    """The selected plan (set, and passed `check`) with its selection evidence."""
    periodic: dict[str, Any] | None = None
    """The periodic diagnostic of the realized schedule (``--periodic-diagnostics``)."""
    program: EmittedProgram | None = None
    """The selected plan lowered to a verified pimsim-nn program (``--emit``)."""
    backend_attempts: tuple[BackendAttempt, ...] = ()
    """Each costed candidate the backend tried, in order (``--emit``)."""
    sweep: tuple[DepthOutcome, ...] = ()
    """With a depth sweep, each swept depth's outcome (`raptor_cp.pipeline.sweep`)."""
    prediction: dict[str, Any] | None = None
    """The periodic model's prediction of the plan's pimsim-nn program, with the baseline
    requests placed: its queue figures (`raptor_cp.emit.program.pipeline_prediction`),
    or with ``--emit`` the emitted program's whole prediction; None with
    `prediction_reason` when there is none."""
    prediction_reason: str | None = None
    """Why `prediction` is None: the target writes no program, or cannot time this plan."""

    mode = "pipeline"

    @property
    def program_interval_ns(self) -> int | None:
        """The predicted interval of the plan's program (None: see `program_interval_reason`)."""
        return None if self.prediction is None else self.prediction["realized_queue_interval_ns"]

    @property
    def program_interval_reason(self) -> str | None:
        """Why `program_interval_ns` is None (the queue run did not converge, the target
        writes no program or cannot time the plan); None when it has a value."""
        if self.prediction is None:
            return self.prediction_reason
        return self.prediction["realized_queue_reason"]

    @property
    def interval_ns(self) -> int:
        """The selected schedule's interval: its queue estimate, or the analytic proxy."""
        assert self.solution.objective is not None
        return self.solution.objective

    @property
    def plan(self) -> PipelinePlan:
        """The placed plan of the result (the emitted one with ``--emit``)."""
        assert self.solution.plan is not None
        return self.solution.plan

    @property
    def candidate(self) -> Candidate:
        """The selection's candidate of `plan`: the selected one, unless the backend
        rejected it and emitted the next costed candidate (`raptor_cp.emit.backend`)."""
        assert self.solution.selection is not None
        return self.solution.selection.candidate_of(self.plan)

    @property
    def interval_source(self) -> str:
        """``queue estimate`` or ``analytic proxy`` (no queue comparison ran)."""
        return "queue estimate" if self.candidate.estimate_ns is not None else "analytic proxy"

    @property
    def interval_binding(self) -> str:
        """The term of `interval_ns` that binds it: a `RealizedScheduleCost.binding`
        (``queue_index``, ``queue_reversed``, ``core_work``, ``memory_service``) for a
        queue estimate, the analytic proxy's binding term otherwise."""
        cost = self.candidate.cost
        if cost is not None and cost.binding is not None:
            return cost.binding
        return self.plan.estimate.binding

    def summary(self) -> dict[str, Any]:
        """The facts of the one-line summary and of ``compile --json``."""
        plan, selection = self.solution.plan, self.solution.selection
        assert plan is not None and selection is not None
        target = self.problem.target
        summary: dict[str, Any] = {
            "mode": self.mode,
            "model": self.prepared.model,
            "target": target.name,
            "scheduler": plan.schedule.scheduler,
            "status": self.solution.status.value,
            "tasks": self.problem.graph.num_tasks,
            "cores": target.cores,
            "cores_used": plan.schedule.cores_used,
            "pipeline": self.problem.depth,
            "stages": len(plan.stages),
            "core_budgets": list(plan.budgets),
            "interval_ns": self.interval_ns,
            "interval_source": self.interval_source,
            "interval_binding": self.interval_binding,
            "program_interval_ns": self.program_interval_ns,
            "program_interval_reason": self.program_interval_reason,
            "analytic_interval": plan.estimate.to_json(),
            "selection": {
                "solver": selection.solver,
                "candidates": len(selection.candidates),
                "selected": self.candidate.index,
                "queue_evaluations_used": selection.queue_evaluations[0],
            },
            "lower_bound_ns": interval_lower_bound(self.problem.graph, target)["interval_ns"],
            "lanes": self.prepared.lanes,
            "warnings": list(self.prepared.warnings),
        }
        if self.program is not None:
            summary["emission"] = emission_summary(self.program)
        if self.sweep:
            summary["sweep"] = self.sweep_document()
        return summary

    def sweep_document(self) -> dict[str, Any]:
        """The depth sweep's report (``reports/pipeline_sweep.json``)."""
        return sweep_document(self.sweep, self.problem.depth)

    def depth_outcome(self) -> DepthOutcome:
        """This result's depth and what its selection ended with, for a sweep."""
        assert self.solution.selection is not None
        selection = self.solution.selection
        return DepthOutcome(
            self.problem.depth,
            self.interval_ns,
            self.interval_source,
            len(self.plan.stages),
            tuple(self.plan.budgets),
            selection.queue_evaluations[0],
            selection.termination,
        )


def emission_summary(program: EmittedProgram) -> dict[str, Any]:
    """The ``emission`` object of the compile summary: size and the program's prediction."""
    return {
        "instructions": program.lowered.instructions,
        "cores": len(program.lowered.cores),
        **program.prediction,
    }


class BackendRejectedError(NotFoundWithinBudgetError):
    """No costed pipeline candidate passed the backend; ``result`` holds the attempts."""

    def __init__(self, message: str, result: PipelineResult) -> None:
        super().__init__(message)
        self.result = result


CompileResult = LatencyResult | PipelineResult

_Problem = TypeVar("_Problem", LatencyProblem, PipelineProblem)


def _with_advice(prepared: Prepared, state: Callable[[], _Problem]) -> _Problem:
    """``state()``, with `capacity_advice` added to a proof that the weights exceed the chip."""
    try:
        return state()
    except ProvedInfeasibleError as error:
        raise ProvedInfeasibleError(f"{error}; {capacity_advice(prepared)}") from None


def capacity_advice(prepared: Prepared) -> str:
    """What to do when one copy of the model's weights exceeds the target.

    Names the presets whose chip holds the model (each checked by lowering it
    with one lane, which does not change its weights, and stating the latency
    problem: ``O(presets x lowering)``, a fraction of a second for VGG-16) and
    the ``--cores`` that would give this target enough slots.
    """
    from raptor_cp.targets.registry import preset_names

    fitting = []
    for name in preset_names():
        if name == prepared.target.name:
            continue
        try:
            target = resolve_target(name)
            graph, _ = lower(prepared.workload, target, 1)
            LatencyProblem(graph, target)
        except RaptorError:
            continue
        fitting.append(name)
    holders = f"presets that hold it: {', '.join(fitting)}" if fitting else "no preset holds it"
    target = prepared.target
    largest = max(target.capacity(p) for p in range(target.cores))
    needed = -(-prepared.graph.distinct_weight_slots() // largest)
    if not hasattr(target, "with_cores"):
        return holders
    return f"{holders}; or give the target more cores: --cores {needed} or more"


def compile_latency(
    prepared: Prepared,
    scheduler: str = DEFAULT_SCHEDULER,
    progress: Progress = _quiet,
    settings: Mapping[str, Any] | None = None,
    polish: float | None = None,
    emit: bool = False,
) -> LatencyResult:
    """Schedule a prepared model for latency with ``scheduler``, check and evaluate it.

    ``settings`` are the scheduler's keyword settings (e.g. ``time_limit_s`` for
    ``cpsat``), as `raptor_cp.solvers.solve` takes them. ``polish`` (deterministic
    CP-SAT units, about seconds) improves the heuristic's schedule with CP-SAT
    (`raptor_cp.models.polish`): never longer, checked, ``optimal`` when it meets a
    proved bound; the CP-SAT search ticks its best-so-far and bound to ``progress``.
    With ``emit``, also lower the (polished) schedule to a verified pimsim-nn program
    (`raptor_cp.emit.program`).

    Raises
    ------
    InvalidConfigError
        When ``polish`` is not a positive finite budget or is given for ``cpsat``
        (whose budget is its ``time_limit_s``).
    ProvedInfeasibleError
        When the weights exceed the chip, or an exact solver proved no schedule exists.
    NotFoundWithinBudgetError
        When the scheduler's bounded search found no schedule.
    """
    polish_budget = None
    if polish is not None:
        from raptor_cp.models.polish import polish_settings

        if scheduler == "cpsat":
            raise InvalidConfigError(
                "polish improves a heuristic's schedule; cpsat's budget is its time_limit_s"
            )
        polish_budget = polish_settings(polish)  # validates the budget before any work
    problem = _with_advice(prepared, lambda: LatencyProblem(prepared.graph, prepared.target))
    bounds = lower_bounds(prepared.graph, prepared.target)
    with reporting(progress):
        solution = solve(problem, scheduler, **(settings or {}))
    if solution.schedule is None:
        name = prepared.model
        if solution.status is Status.INFEASIBLE:
            raise ProvedInfeasibleError(f"{name}: {scheduler} proved that no schedule exists")
        raise NotFoundWithinBudgetError(
            f"{name}: {scheduler} found no schedule ({solution.status.value})"
        )
    progress("schedule", f"{_scheduled(solution)}: {solution.status.value}")
    if polish_budget is not None:
        from raptor_cp.models.polish import polish as polish_solution

        with reporting(progress):
            solution = polish_solution(problem, solution, polish_budget)
        progress("polish", _polished(solution))
    check(problem, solution)
    evaluation = evaluate(problem, solution.schedule)
    progress("check", f"makespan {format_ns(int(evaluation.makespan_ns))}")
    program = None
    if emit:
        from raptor_cp.emit.program import emit_latency

        program = emit_latency(
            prepared.graph,
            prepared.target,
            solution.schedule,
            evaluation.start_ns,
            int(evaluation.makespan_ns),
        )
        _emitted(progress, program)
    return LatencyResult(prepared, problem, solution, evaluation, bounds, program=program)


def _emitted(progress: Progress, program: EmittedProgram) -> None:
    prediction = program.prediction
    figure = "queue interval" if program.mode == "pipeline" else "single pass"
    value = prediction.get("realized_queue_interval_ns", prediction["realized_single_pass_ns"])
    progress(
        "emit",
        f"{program.lowered.instructions} instructions on {len(program.lowered.cores)} cores, "
        f"predicted {figure} {'n/a' if value is None else format_ns(int(value))}",
    )


def _scheduled(solution: LatencySolution) -> str:
    """``auto (peft-replicas won)``, or the solver's name."""
    winner = solution.details.get("winner")
    return solution.solver if winner is None else f"{solution.solver} ({winner} won)"


def _polished(solution: LatencySolution) -> str:
    """The polish phase's progress detail: method, start -> result, bound, status."""
    facts = solution.details["polish"]
    assert solution.objective is not None and solution.bound is not None
    start = format_ns(int(facts["start_makespan_ns"]))
    capped = ", stopped by the wall-clock cap" if facts.get("wall_capped") else ""
    return (
        f"{facts['method']}: {start} -> {format_ns(solution.objective)}, bound "
        f"{format_ns(solution.bound)}, {solution.status.value}{capped}"
    )


def _select_pipeline(
    prepared: Prepared,
    depth: int,
    method: str | None,
    options: Mapping[str, Any],
    progress: Progress,
) -> PipelineResult:
    """One pipeline selection at ``depth``, checked (`compile_pipeline`)."""
    problem = _with_advice(
        prepared, lambda: PipelineProblem(prepared.graph, prepared.target, depth)
    )
    with reporting(progress):
        solution = solve(problem, method, **options)
    plan, selection = solution.plan, solution.selection
    if plan is None or selection is None or solution.objective is None:
        raise NotFoundWithinBudgetError(f"{prepared.model}: no pipeline schedule found")
    partition = selection.initial.partition
    progress(
        "partition",
        f"initial: {count(len(partition.stages or ()), 'stage')} ({partition.solver}: "
        f"{partition.status.value})",
    )
    used, budget = selection.queue_evaluations
    progress(
        "select",
        f"{selection.solver}: {count(len(selection.candidates), 'candidate')}, {used}/{budget} "
        f"queue evaluations, candidate {selection.decision.selected}: "
        f"{count(len(plan.stages), 'stage')}, core budgets {list(plan.budgets)}",
    )
    check(problem, solution)
    result = PipelineResult(prepared, problem, solution)
    progress("check", f"interval {format_ns(result.interval_ns)} ({result.interval_source})")
    return result


def _sweep_pipeline(
    prepared: Prepared,
    depth: int,
    method: str | None,
    options: Mapping[str, Any],
    progress: Progress,
) -> PipelineResult:
    """One selection per depth of `sweep_depths`; the lowest interval is kept (ties: the
    smaller depth). A depth whose bounded search finds no schedule is recorded and
    skipped; when none finds one, the last depth's error is raised. Holds at most two
    selections' results at a time."""
    depths = sweep_depths(depth)
    best: PipelineResult | None = None
    outcomes: list[DepthOutcome] = []
    for swept in depths:
        progress("sweep", f"depth {swept} of {list(depths)}")
        try:
            found = _select_pipeline(prepared, swept, method, options, progress)
        except NotFoundWithinBudgetError as error:
            if swept == depths[-1] and best is None:
                raise
            progress("sweep", f"depth {swept}: {error}")
            outcomes.append(DepthOutcome(swept, None, None, None, (), None, None, str(error)))
            continue
        outcomes.append(found.depth_outcome())
        if best is None or found.interval_ns < best.interval_ns:
            best = found
    assert best is not None
    found_at = ", ".join(
        f"depth {o.depth} {format_ns(o.interval_ns)}" for o in outcomes if o.interval_ns
    )
    progress("sweep", f"kept depth {best.problem.depth}: {found_at}")
    return replace(best, sweep=tuple(outcomes))


def compile_pipeline(
    prepared: Prepared,
    depth: int,
    *,
    periodic: bool = False,
    progress: Progress = _quiet,
    method: str | None = None,
    settings: Mapping[str, Any] | None = None,
    emit: bool = False,
    jobs: int = 1,
    sweep: bool = False,
    evaluations: int | None = None,
) -> PipelineResult:
    """Select a pipeline schedule of at most ``depth`` stages and check it.

    ``method`` and ``settings`` choose the registered pipeline solver (default
    ``beam``, the queue-aware selection; ``initial`` keeps the initialized
    schedule). ``jobs`` CPUs evaluate each beam round's candidates side by side
    (`raptor_cp.forked`; the selection is the same for every ``jobs``).

    ``evaluations`` (``beam`` only; at least 2, the search's two roots) replaces
    the seeds' budget of 32 queue evaluations and 128 constructive packings by
    ``evaluations`` and four times as many: the same search run longer, for a
    user who trades compile time for interval (docs/cli.md, "A longer search").

    With ``sweep``, run the selection at every depth of
    `raptor_cp.pipeline.sweep.sweep_depths` and keep the lowest interval (ties:
    the smaller depth); the result records every depth's outcome.

    With ``periodic``, also analyse the realized schedule's periodic execution
    (read-only: the schedule does not change). With ``emit``, lower the selected
    plan to a verified pimsim-nn program; a candidate the backend rejects is
    replaced by the next costed one (`raptor_cp.emit.backend`).

    Raises
    ------
    ProvedInfeasibleError
        When one copy of every weight exceeds the chip.
    NotFoundWithinBudgetError
        When no partition or stage packing is found (bounded search).
    SelectionStoppedError
        When candidates must be compared but one lacks a queue cost (the target
        has no queue model, an unsupported static form, no converged recurrence).
    BackendRejectedError
        With ``emit``, when the backend rejects every costed candidate.
    """
    options = dict(settings or {})
    if jobs < 1:
        raise InvalidConfigError(f"jobs must be at least 1, got {jobs}")
    from raptor_cp.pipeline.beam import PACKINGS_PER_EVALUATION, BeamPipelineSolver

    beam = (method or DEFAULT_METHOD[PipelineProblem]) == BeamPipelineSolver.name
    if jobs > 1 and beam:
        options["jobs"] = jobs
    if evaluations is not None:
        if not beam:
            raise InvalidConfigError(
                f"a queue evaluation budget is the {BeamPipelineSolver.name} selection's; "
                f"method {method!r} evaluates no candidates"
            )
        if evaluations < 2:
            raise InvalidConfigError(
                f"the queue evaluation budget must be at least 2 (the search's two roots), "
                f"got {evaluations}"
            )
        options["queue_evaluations"] = evaluations
        options["constructive_packings"] = PACKINGS_PER_EVALUATION * evaluations
    if sweep:
        result = _sweep_pipeline(prepared, depth, method, options, progress)
    else:
        result = _select_pipeline(prepared, depth, method, options, progress)
    problem, solution, plan = result.problem, result.solution, result.plan
    if emit:
        from raptor_cp.emit.backend import BackendExhaustedError
        from raptor_cp.emit.program import emit_pipeline_plan

        try:
            emitted, program, attempts = emit_pipeline_plan(
                prepared.graph, prepared.target, solution
            )
        except BackendExhaustedError as error:
            rejected = replace(result, backend_attempts=error.attempts)
            raise BackendRejectedError(f"{prepared.model}: {error}", rejected) from None
        if emitted.plan is not plan:
            check(problem, emitted)
        _emitted(progress, program)
        result = PipelineResult(prepared, problem, emitted, None, program, attempts, result.sweep)
    result = _predicted(result, progress)
    if periodic:
        from raptor_cp.pipeline.diagnostics import pipeline_periodic

        document = pipeline_periodic(
            result.plan,
            prepared.graph,
            prepared.target,
            prepared.model,
            problem.depth,
            result.candidate.cost,
        )
        if document["status"] == "unavailable":
            progress("periodic", f"unavailable: {document['reason']}")
        else:
            recurrence, queue = document["recurrence"]["status"], document["queue"]["status"]
            progress("periodic", f"recurrence {recurrence}, queue {queue}")
        result = replace(result, periodic=document)
    return result


def _predicted(result: PipelineResult, progress: Progress) -> PipelineResult:
    """``result`` with its program's prediction: the emitted program's (``--emit``
    reported it), else the one `raptor_cp.emit.program.pipeline_prediction` makes
    without lowering (one more realization and queue run of the selected plan)."""
    if result.program is not None:
        return replace(result, prediction=result.program.prediction)
    from raptor_cp.emit.program import pipeline_prediction

    graph, target = result.problem.graph, result.problem.target
    try:
        prediction = pipeline_prediction(graph, target, result.plan, result.interval_ns)
    except (CapabilityUnavailableError, TimingUnavailableError) as error:
        progress("program", f"no prediction: {error}")
        return replace(result, prediction_reason=str(error))
    result = replace(result, prediction=prediction)
    value = result.program_interval_ns
    figure = result.program_interval_reason if value is None else format_ns(value)
    progress("program", f"interval {figure} (baseline requests placed)")
    return result


@dataclass(frozen=True, eq=False)
class ExchangeAdmission:
    """How exchange-table admission chose a schedule (or failed to)."""

    source: WorkloadCandidates
    state: Admission
    selected: str | None
    """Key of the admitted candidate; None when none fits."""

    def summary(self) -> dict[str, Any]:
        """The ``exchange`` object of the compile summary (selected candidate only)."""
        assert self.selected is not None
        record, exact = self.state.records[self.selected], self.state.exact[self.selected]
        return {
            "budget_bytes": self.state.budget,
            "selected": record.label,
            "bsp_makespan_ns": record.execution_ns,
            "estimate_bytes": record.estimate_bytes,
            "exact_bytes": exact.exact_bytes,
            "weight_block_bytes": record.details["weight_block_bytes"],
            "tile_budget": record.tile_budget,
            "candidates": len(self.state.records),
            "fragment_limit": self.state.limits.fragment_limit,
            "over_fragment_limit": len(self.state.reported),
        }


class ExchangeNotAdmittedError(NotFoundWithinBudgetError):
    """No candidate's exact exchange table fits the budget (bounded search, not a proof).

    ``admission`` holds every candidate's evidence, for the diagnostic report.
    """

    def __init__(self, message: str, admission: ExchangeAdmission) -> None:
        super().__init__(message)
        self.admission = admission


def compile_exchange(
    prepared: Prepared,
    budget: int,
    limits: AdmissionLimits,
    *,
    lanes: int | None = None,
    scheduler: str = DEFAULT_SCHEDULER,
    progress: Progress = _quiet,
) -> LatencyResult:
    """Admit an IPU exchange plan within ``budget`` bytes per tile and check its schedule.

    ``lanes`` fixes the lane count (``--lanes``); None lets admission vary it
    (`CandidateOptions`). The result's schedule is the admitted candidate's.
    ``progress`` hears every lowering, expanded plan, placement (before and
    after), fragment-limit skip and exact encoding of admission, then its totals.

    Raises
    ------
    CapabilityUnavailableError
        When the target has no exchange (not an IPU).
    ExchangeNotAdmittedError
        When no candidate's exact table fits (carries the admission evidence).
    """
    from raptor_cp.exchange.admission import admit
    from raptor_cp.exchange.candidates import CandidateOptions, WorkloadCandidates
    from raptor_cp.targets.registry import preset_names

    workload, target = prepared.workload, prepared.target
    machine = target.exchange()
    if machine is None:
        raise CapabilityUnavailableError(
            f"--exchange-budget needs an ipu target ({', '.join(preset_names('ipu'))}), "
            f"got {target.name}",
            target=target.name,
            capability="exchange",
        )
    options = CandidateOptions.for_workload(workload, machine, lanes, scheduler)
    source = WorkloadCandidates(workload, machine, options, progress)
    began = time.perf_counter()
    state = admit(source, budget, limits, progress)
    steps = [*state.attempts, *([state.exhaustion] if state.exhaustion else [])]
    placed = sum(a.placements_run for a in steps)
    encoded = sum(a.encodings_run for a in steps)
    skipped = len(state.reported)
    progress(
        "admit",
        f"{len(state.expanded)} expanded, {placed} placed, {encoded} encoded exactly, "
        f"{count(len(state.attempts), 'attempt')}"
        + (", exhaustive fallback" if state.exhaustion else "")
        + (f", {skipped} kept from encoding by the fragment limit" if skipped else "")
        + f"; admission {time.perf_counter() - began:.1f} s",
    )
    admission = ExchangeAdmission(source, state, state.selected)
    if state.selected is None:
        closest = state.closest()
        found = (
            "no candidate could be encoded"
            if closest is None
            else f"smallest exact table {state.exact[closest].exact_bytes} B "
            f"({state.records[closest].label})"
        )
        raise ExchangeNotAdmittedError(
            f"{workload.name}: no exchange plan within {budget} B per tile: {found}", admission
        )
    key = state.selected
    record, built = state.records[key], source.built[key]
    problem = built.problem
    evaluation = evaluate(problem, built.schedule)
    schedule = replace(built.schedule, start_ns=evaluation.start_ns)
    bounds = lower_bounds(problem.graph, problem.target)
    solution = LatencySolution(
        schedule,
        status=Status.FEASIBLE,
        solver=record.placement,
        objective=int(evaluation.makespan_ns),
        bound=bounds.makespan_ns,
    )
    check(problem, solution)
    progress("check", f"{record.label}: makespan {format_ns(int(evaluation.makespan_ns))}")
    lanes_used = int(record.details["lanes"])
    chosen = Prepared(workload, target, problem.graph, lanes_used)
    return LatencyResult(chosen, problem, solution, evaluation, bounds, admission)


def compile(
    model: str | Path | Workload,
    target: str | SchedulingTarget = DEFAULT_TARGET,
    *,
    pipeline: int | None = None,
    pipeline_method: str | None = None,
    scheduler: str = DEFAULT_SCHEDULER,
    settings: Mapping[str, Any] | None = None,
    polish: float | None = None,
    lanes: int | None = None,
    bits: int | None = None,
    cores: int | None = None,
    periodic: bool = False,
    exchange_budget: int | None = None,
    exchange_limits: AdmissionLimits | None = None,
    emit: bool = False,
    jobs: int = 1,
    pipeline_sweep: bool = False,
    pipeline_evaluations: int | None = None,
    progress: Progress = _quiet,
) -> CompileResult:
    """Compile ``model`` for ``target``: the library form of ``raptor-cp compile``.

    Parameters
    ----------
    model:
        A workload file (ONNX, PIMCOMP-NN JSON, raptor-graph JSON, STG) or a `Workload`.
    target:
        A preset name, ``generic:P[:NS_PER_BYTE]``, a pimsim-nn config path, or a target.
    pipeline:
        Pipeline depth ``N > 1`` for throughput mode; None or 1 for latency mode.
    pipeline_method:
        Pipeline solver (`raptor_cp.solvers.methods(PipelineProblem)`; default ``beam``).
    scheduler:
        Latency scheduler (`raptor_cp.solvers.methods(LatencyProblem)`); default ``auto``.
    settings:
        The scheduler's keyword settings, e.g. ``{"time_limit_s": 30}`` for ``cpsat``.
    polish:
        Latency mode: improve the heuristic's schedule with CP-SAT for this many
        deterministic units (`compile_latency`).
    lanes, bits:
        Lanes per operation (default: chosen per model and target) and precision.
    cores:
        Scale the target to this many cores (``--cores``).
    periodic:
        Pipeline mode: also run the periodic diagnostic of the selected schedule.
    exchange_budget, exchange_limits:
        IPU targets: admit an exchange plan within this many bytes per tile.
    emit:
        PIM targets: also lower the schedule to a verified pimsim-nn program
        (``result.program``; `raptor_cp.emit.files.write_emission` writes it).
    jobs:
        Pipeline mode: CPUs the selection may use (`compile_pipeline`).
    pipeline_sweep:
        Pipeline mode: select at depths 2, 4, ... below ``pipeline`` and at
        ``pipeline``, and keep the lowest interval (`raptor_cp.pipeline.sweep`).
    pipeline_evaluations:
        Pipeline mode, ``beam``: queue evaluations of each selection instead of
        the seeds' 32 (`compile_pipeline`).
    progress:
        ``progress(phase, detail)`` after each phase.

    docs/api.md shows it at work.
    """
    if pipeline_sweep and (pipeline is None or pipeline < 2):
        raise InvalidConfigError("a depth sweep needs pipeline mode (pipeline depth > 1)")
    if pipeline_evaluations is not None and (pipeline is None or pipeline < 2):
        raise InvalidConfigError(
            "a queue evaluation budget needs pipeline mode (pipeline depth > 1)"
        )
    if pipeline is not None and pipeline > 1 and (settings or polish is not None):
        raise InvalidConfigError("settings and polish are latency-scheduler options, not pipeline")
    if exchange_budget is not None and (settings or polish is not None):
        raise InvalidConfigError(
            "settings and polish are not available with exchange admission (it picks the schedule)"
        )
    prepared = prepare(model, target, lanes=lanes, bits=bits, cores=cores, progress=progress)
    if emit:
        from raptor_cp.emit.program import pim_target

        pim_target(prepared.target)
    if pipeline is not None and pipeline > 1:
        return compile_pipeline(
            prepared,
            pipeline,
            method=pipeline_method,
            periodic=periodic,
            progress=progress,
            emit=emit,
            jobs=jobs,
            sweep=pipeline_sweep,
            evaluations=pipeline_evaluations,
        )
    if exchange_budget is not None:
        from raptor_cp.exchange.admission import AdmissionLimits

        return compile_exchange(
            prepared,
            exchange_budget,
            exchange_limits or AdmissionLimits(),
            lanes=lanes,
            scheduler=scheduler,
            progress=progress,
        )
    return compile_latency(prepared, scheduler, progress, settings, polish, emit=emit)
