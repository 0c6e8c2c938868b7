"""The optimality audit of a batch of models: the library form of ``raptor-cp verify``.

`verify` expands the model arguments into files, loads and lowers every
instance before any solving (so a bad input costs nothing and leaves no
report), then audits each one in the chosen mode:

* ``latency``: the latency scheduler against the CP-SAT latency model
  (`raptor_cp.audit.latency`);
* ``pipeline``: the prefix-DP partition against the CP-SAT partition model and
  the exact DP at the ``pipeline`` depth (`raptor_cp.audit.partition`); when the
  exact model is small enough (``max_entries`` stage-cost entries) every range
  is priced at every core count in one batch first;
* ``packing``: per model, the initial partition as ``compile`` builds it, then
  per stage the reuse-first stage packer against the CP-SAT packing model and
  the stage's lower bounds on cores and demand (`raptor_cp.audit.packing`).

The report is a function of the inputs and the settings: CP-SAT runs with a
deterministic-time budget, a fixed seed and, with several workers, interleaved
search (`raptor_cp.models.solve`). Only the measured wall times differ between
two runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from raptor_cp.audit.packing import PackingBounds
from raptor_cp.audit.partition import PartitionDetails
from raptor_cp.audit.record import AuditRecord
from raptor_cp.errors import InvalidInputError, NotFoundWithinBudgetError
from raptor_cp.flows import DEFAULT_PIPELINE_DEPTH, DEFAULT_SCHEDULER, Progress, lower
from raptor_cp.problems import LatencyProblem, PartitionProblem
from raptor_cp.reports.output import count, format_ns
from raptor_cp.targets.registry import DEFAULT_TARGET, resolve_target

if TYPE_CHECKING:
    from raptor_cp.graph import ComputeGraph
    from raptor_cp.models.solve import SolveSettings
    from raptor_cp.pipeline.stage_costs import StageCosts
    from raptor_cp.targets.base import SchedulingTarget

VERIFY_MODES = ("latency", "pipeline", "packing")
"""What ``verify`` audits: latency schedules, pipeline partitions (prefix DP against
CP-SAT) and stage packings (reuse-first packer against CP-SAT)."""
HEURISTIC = {"pipeline": "prefix-dp", "packing": "stage"}
"""The heuristic audited in each non-latency mode (``scheduler`` is for latency only)."""


def _quiet(phase: str, detail: str) -> None:
    """The default progress callback: report nothing."""


@dataclass(frozen=True)
class VerifySettings:
    """The options of one ``verify`` run (see docs/cli.md)."""

    target: str = DEFAULT_TARGET
    scheduler: str = DEFAULT_SCHEDULER
    time_limit_s: float = 10.0
    """CP-SAT budget per instance, in deterministic-time units."""
    workers: int = 8
    lanes: int | None = None
    bits: int | None = None
    mode: str = "latency"
    pipeline: int = DEFAULT_PIPELINE_DEPTH
    """Pipeline depth of the ``pipeline`` and ``packing`` audits."""
    cores: int | None = None
    """Scale the target to this many cores (``--cores``)."""
    wall_cap_s: float | None = None
    """Wall-clock cap of each CP-SAT run (``--wall-cap``); None: deterministic time only."""

    def solve_settings(self) -> SolveSettings:
        """The CP-SAT settings of every run: deterministic, with the optional wall cap."""
        from raptor_cp.models.solve import SolveSettings

        return SolveSettings(self.time_limit_s, self.workers, wall_cap_s=self.wall_cap_s)

    def __post_init__(self) -> None:
        if self.mode not in VERIFY_MODES:
            raise InvalidInputError(
                f"verify --mode {self.mode} is not available; available modes: "
                f"{', '.join(VERIFY_MODES)}"
            )

    @property
    def heuristic(self) -> str:
        return HEURISTIC.get(self.mode, self.scheduler)

    def to_json(self) -> dict[str, object]:
        settings: dict[str, object] = {
            "mode": self.mode,
            "target": self.target,
            "scheduler": self.heuristic,
            "time_limit": self.time_limit_s,
            "workers": self.workers,
            "lanes": self.lanes,
            "bits": self.bits,
        }
        if self.mode != "latency":
            settings["pipeline"] = self.pipeline
        if self.cores is not None:
            settings["cores"] = self.cores
        settings["wall_cap_s"] = self.wall_cap_s
        return settings

    def describe(self) -> str:
        """The settings as one Markdown line under the audit table."""
        depth = "" if self.mode == "latency" else f", pipeline depth {self.pipeline}"
        target = self.target if self.cores is None else f"{self.target} --cores {self.cores}"
        return (
            f"Settings: mode {self.mode}, target {target}, heuristic {self.heuristic}{depth}, "
            f"CP-SAT time limit {self.time_limit_s:g} deterministic-time units per instance, "
            f"workers {self.workers}, lanes {'auto' if self.lanes is None else self.lanes}, bits "
            f"{'of the model' if self.bits is None else self.bits}"
            + ("." if self.wall_cap_s is None else f", wall-clock cap {self.wall_cap_s:g} s.")
        )


@dataclass(frozen=True)
class VerifyReport:
    """Every record of one ``verify`` run, with what produced it."""

    records: tuple[AuditRecord, ...]
    details: tuple[PartitionDetails, ...]
    """The partition audit's quantization evidence (``pipeline`` mode only)."""
    settings: VerifySettings
    warnings: tuple[str, ...]
    packing_bounds: tuple[PackingBounds, ...] = ()
    """Every audited stage's lower bounds (``packing`` mode only)."""

    @property
    def disagrees(self) -> bool:
        return any(record.disagrees for record in self.records)


def expand_models(models: Sequence[Path]) -> list[Path]:
    """The model files named by ``models``: files as given, directories expanded.

    A directory stands for the files directly inside it whose extension
    `load_workload` accepts (case-insensitive), sorted by name; it is an error
    for it to hold none. A missing path is an error.
    """
    from raptor_cp.workload.load import EXTENSIONS

    paths: list[Path] = []
    for model in models:
        if model.is_dir():
            found = sorted(
                (p for p in model.iterdir() if p.is_file() and p.suffix.lower() in EXTENSIONS),
                key=lambda p: p.name,
            )
            if not found:
                raise InvalidInputError(
                    f"{model}: directory holds no model file ({', '.join(EXTENSIONS)})"
                )
            paths.extend(found)
        elif model.exists():
            paths.append(model)
        else:
            raise InvalidInputError(f"{model}: no such file or directory")
    return paths


def verify(
    models: Sequence[Path], settings: VerifySettings, progress: Progress = _quiet
) -> VerifyReport:
    """Audit every model of ``models`` (files or directories) under ``settings``.

    ``progress`` gets ``("audit-start", "[i/n] name: size")`` before and
    ``("audit", outcome)`` after each instance. Raises `RaptorError` for a bad
    input file or target before any instance is solved.
    """
    paths = expand_models(models)
    target = resolve_target(settings.target, settings.cores)
    warnings = tuple(target.warnings)
    for warning in warnings:
        progress("warning", warning)
    if settings.mode == "latency":
        instances = [(str(path), _latency_problem(path, target, settings)) for path in paths]
        records = _audit_latency(instances, settings, progress)
        return VerifyReport(tuple(records), (), settings, warnings)
    batch = [_pipeline_instance(path, target, settings) for path in paths]
    records, details, bounds = _audit_pipeline(batch, settings, target, progress)
    return VerifyReport(tuple(records), tuple(details), settings, warnings, tuple(bounds))


def outcome(record: AuditRecord) -> str:
    """``heft 30 ns, CP-SAT 30 ns (optimal), agree``: one record for a progress line."""
    objective = record.heuristic_objective
    heuristic = "none" if objective is None else format_ns(objective)
    if record.cpsat_status is None:
        cpsat = "skipped (too large)"
    elif record.cpsat_objective is None:
        cpsat = record.cpsat_status.value
    else:
        cpsat = f"{format_ns(record.cpsat_objective)} ({record.cpsat_status.value})"
    verdict = "DISAGREE" if record.disagrees else "agree"
    return f"{record.heuristic} {heuristic}, CP-SAT {cpsat}, {verdict}"


def _latency_problem(
    path: Path, target: SchedulingTarget, settings: VerifySettings
) -> LatencyProblem:
    """Load ``path`` and lower it onto ``target`` as a latency problem (as ``compile`` does)."""
    from raptor_cp.workload.load import load_workload

    workload = load_workload(path, bits=settings.bits)
    graph, _ = lower(workload, target, settings.lanes)
    return LatencyProblem(graph, target)


def _audit_latency(
    instances: Sequence[tuple[str, LatencyProblem]],
    settings: VerifySettings,
    progress: Progress,
) -> list[AuditRecord]:
    from raptor_cp.audit.latency import audit_latency
    from raptor_cp.models.latency import CpSatLatencyModel
    from raptor_cp.solvers import make_solver

    heuristic = make_solver(LatencyProblem, settings.scheduler)
    exact = CpSatLatencyModel(settings.solve_settings())
    records = []
    for i, (name, problem) in enumerate(instances, start=1):
        tasks = count(problem.graph.num_tasks, "task")
        progress("audit-start", f"[{i}/{len(instances)}] {name}: {tasks}")
        record = audit_latency(problem, heuristic, exact, name)
        progress("audit", outcome(record))
        records.append(record)
    return records


@dataclass(frozen=True, eq=False)
class _PipelineInstance:
    """One lowered model with its partition problem and stage costs."""

    name: str
    graph: ComputeGraph
    problem: PartitionProblem
    costs: StageCosts


def _pipeline_instance(
    path: Path, target: SchedulingTarget, settings: VerifySettings
) -> _PipelineInstance:
    """Load and lower one model and build its partition problem (no solving)."""
    from raptor_cp.pipeline.initial import partition_problem
    from raptor_cp.workload.load import load_workload

    workload = load_workload(path, bits=settings.bits)
    graph, _ = lower(workload, target, settings.lanes)
    LatencyProblem(graph, target)  # capacity and fleet feasibility, as compile checks
    problem, costs = partition_problem(graph, target, settings.pipeline)
    return _PipelineInstance(str(path), graph, problem, costs)


def _audit_pipeline(
    instances: Sequence[_PipelineInstance],
    settings: VerifySettings,
    target: SchedulingTarget,
    progress: Progress,
) -> tuple[list[AuditRecord], list[PartitionDetails], list[PackingBounds]]:
    """Audit each instance (mode ``pipeline`` or ``packing``), one progress line each.

    Besides the records: the partition audits' quantization details (``pipeline``)
    or every audited stage's lower bounds (``packing``).
    """
    records: list[AuditRecord] = []
    details: list[PartitionDetails] = []
    bounds: list[PackingBounds] = []
    for i, instance in enumerate(instances, start=1):
        groups = instance.problem.num_groups
        progress("audit-start", f"[{i}/{len(instances)}] {instance.name}: {count(groups, 'group')}")
        if settings.mode == "pipeline":
            record, detail = _audit_partition(instance, settings, target)
            records.append(record)
            details.append(detail)
            outcomes = [outcome(record)]
        else:
            stage_records, stage_bounds = _audit_stages(instance, settings, target)
            records.extend(stage_records)
            bounds.extend(stage_bounds)
            outcomes = [count(len(stage_records), "stage")] + [outcome(r) for r in stage_records]
        progress("audit", "; ".join(outcomes))
    return records, details, bounds


def _audit_partition(
    instance: _PipelineInstance, settings: VerifySettings, target: SchedulingTarget
) -> tuple[AuditRecord, PartitionDetails]:
    from raptor_cp.audit.partition import audit_partition
    from raptor_cp.heuristics.prefix_dp import SPARE_UNITS
    from raptor_cp.models.partition import CpSatPartitionModel, partition_entries
    from raptor_cp.pipeline.initial import tabulate_grid

    model = CpSatPartitionModel(settings.solve_settings())
    problem, costs = instance.problem, instance.costs
    if partition_entries(problem) <= model.max_entries:
        costs.tabulate(range(1, problem.cores + 1))
    else:
        tabulate_grid(problem, costs, SPARE_UNITS)
    floor = costs.group_floor(problem.cores)
    return audit_partition(
        problem, model, instance.name, target.name, instance.graph.num_tasks, floor
    )


def _audit_stages(
    instance: _PipelineInstance, settings: VerifySettings, target: SchedulingTarget
) -> tuple[list[AuditRecord], list[PackingBounds]]:
    from raptor_cp.audit.packing import audit_packing, packing_bounds
    from raptor_cp.heuristics.prefix_dp import SPARE_UNITS, initial_partition
    from raptor_cp.models.packing import CpSatPackingModel
    from raptor_cp.pipeline.initial import final_stages, tabulate_grid

    problem, costs = instance.problem, instance.costs
    tabulate_grid(problem, costs, SPARE_UNITS)
    partition = initial_partition(problem, SPARE_UNITS)
    if partition.stages is None:
        raise NotFoundWithinBudgetError(
            f"{instance.name}: the prefix DP found no partition to audit the packing of"
        )
    model = CpSatPackingModel(settings.solve_settings())
    stages = final_stages(instance.graph, costs, partition.stages, problem.cores)
    problems = [
        (f"{instance.name} stage {s}", costs.packing_problem(stage.first, stage.stop, stage.cores))
        for s, stage in enumerate(stages)
    ]
    records = [audit_packing(stage, model, name, target.name) for name, stage in problems]
    return records, [packing_bounds(stage, name) for name, stage in problems]
