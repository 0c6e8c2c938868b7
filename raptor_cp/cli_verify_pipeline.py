"""``raptor-cp verify --mode pipeline`` and ``--mode packing``: the pipeline audits of a batch.

`raptor_cp.cli_verify.verify` expands the MODEL arguments and calls
`pipeline_instances` (load, lower and build every partition problem before any
solving, so a bad input costs nothing) and then `audit_pipeline_instances`:

* ``pipeline``: per model, the prefix DP against the CP-SAT partition model on
  the same stage-cost curves (`raptor_cp.pipeline.audit.audit_partition`) at the
  ``--pipeline`` depth; when the exact model is small enough
  (``max_entries`` stage-cost entries) every range is priced at every core count
  in one batch first. The quantization loss of the DP's 16-unit grid against the
  exact DP is reported in a second table.
* ``packing``: per model, the initial partition (as ``compile`` builds it), then
  per stage the reuse-first stage packer against the CP-SAT packing model on the
  stage's exact `PackingProblem` (`raptor_cp.pipeline.audit.audit_packing`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from raptor_cp.audit import AuditRecord

if TYPE_CHECKING:
    from raptor_cp.cli import _Progress
    from raptor_cp.cli_verify import VerifySettings
    from raptor_cp.graph import ComputeGraph
    from raptor_cp.pipeline.audit import PackingBounds, PartitionDetails
    from raptor_cp.pipeline.stage_costs import StageCosts
    from raptor_cp.pipeline_problems import PartitionProblem
    from raptor_cp.targets.base import SchedulingTarget


@dataclass(frozen=True, eq=False)
class PipelineInstance:
    """One lowered model with its partition problem and stage costs."""

    name: str
    graph: ComputeGraph
    problem: PartitionProblem
    costs: StageCosts


def pipeline_instances(
    paths: Sequence[Path], target: SchedulingTarget, settings: VerifySettings
) -> list[PipelineInstance]:
    """Load and lower every model and build its partition problem (no solving)."""
    from raptor_cp.cli import _lower, _Progress
    from raptor_cp.pipeline.initial import partition_problem
    from raptor_cp.problems import LatencyProblem
    from raptor_cp.workload.load import load_workload

    instances = []
    for path in paths:
        workload = load_workload(path, bits=settings.bits)
        graph, _ = _lower(workload, target, settings.lanes, _Progress(quiet=True))
        LatencyProblem(graph, target)  # capacity and fleet feasibility, as compile checks
        problem, costs = partition_problem(graph, target, settings.pipeline)
        instances.append(PipelineInstance(str(path), graph, problem, costs))
    return instances


def audit_pipeline_instances(
    instances: Sequence[PipelineInstance],
    mode: str,
    settings: VerifySettings,
    target: SchedulingTarget,
    progress: _Progress,
) -> tuple[list[AuditRecord], list[PartitionDetails] | list[PackingBounds]]:
    """Audit each instance (``mode`` pipeline or packing), one progress line per record.

    The second list holds the partition audits' quantization details (``pipeline``)
    or every audited stage's lower bounds (``packing``).
    """
    from raptor_cp.cli_verify import outcome

    records: list[AuditRecord] = []
    details: list[PartitionDetails] = []
    bounds: list[PackingBounds] = []
    for i, instance in enumerate(instances, start=1):
        began = time.perf_counter()
        if not progress.quiet:
            line = (
                f"[{i}/{len(instances)}] {instance.name}: {instance.problem.num_groups} groups ... "
            )
            click.echo(line, err=True, nl=False)
        if mode == "pipeline":
            record, detail = _audit_partition(instance, settings, target)
            records.append(record)
            details.append(detail)
            outcomes = [outcome(record)]
        else:
            stage_records, stage_bounds = _audit_stages(instance, settings, target)
            records.extend(stage_records)
            bounds.extend(stage_bounds)
            outcomes = [f"{len(stage_records)} stages"] + [outcome(r) for r in stage_records]
        progress.say(f"{'; '.join(outcomes)}, {time.perf_counter() - began:.2f} s")
    return records, details if mode == "pipeline" else bounds


def _audit_partition(
    instance: PipelineInstance, settings: VerifySettings, target: SchedulingTarget
) -> tuple[AuditRecord, PartitionDetails]:
    from raptor_cp.heuristics.prefix_dp import SPARE_UNITS
    from raptor_cp.models.partition import CpSatPartitionModel, partition_entries
    from raptor_cp.pipeline.audit import audit_partition
    from raptor_cp.pipeline.initial import tabulate_grid

    model = CpSatPartitionModel(time_limit_s=settings.time_limit_s, workers=settings.workers)
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
    instance: PipelineInstance, settings: VerifySettings, target: SchedulingTarget
) -> tuple[list[AuditRecord], list[PackingBounds]]:
    from raptor_cp.errors import NotFoundWithinBudgetError
    from raptor_cp.heuristics.prefix_dp import SPARE_UNITS, initial_partition
    from raptor_cp.models.packing import CpSatPackingModel
    from raptor_cp.pipeline.audit import audit_packing, packing_bounds
    from raptor_cp.pipeline.initial import final_stages, tabulate_grid

    problem, costs = instance.problem, instance.costs
    tabulate_grid(problem, costs, SPARE_UNITS)
    partition = initial_partition(problem, SPARE_UNITS)
    if partition.stages is None:
        raise NotFoundWithinBudgetError(
            f"{instance.name}: the prefix DP found no partition to audit the packing of"
        )
    model = CpSatPackingModel(time_limit_s=settings.time_limit_s, workers=settings.workers)
    stages = final_stages(instance.graph, costs, partition.stages, problem.cores)
    problems = [
        (f"{instance.name} stage {s}", costs.packing_problem(stage.first, stage.stop, stage.cores))
        for s, stage in enumerate(stages)
    ]
    records = [audit_packing(stage, model, name, target.name) for name, stage in problems]
    return records, [packing_bounds(stage, name) for name, stage in problems]


def render_quantization(details: Sequence[PartitionDetails]) -> str:
    """The partition audit's second table: the DP's grid against the exact DP."""
    lines = [
        "| instance | depth | DP path | unit cores | grid objective ns | exact DP ns "
        "| quantization loss ns |",
        "|" + "---|" * 7,
    ]
    for d in details:
        cells = [
            d.instance,
            d.depth,
            d.dp_path,
            d.unit_cores,
            d.grid_objective,
            d.exact_dp_objective,
            d.quantization_loss,
        ]
        lines.append("| " + " | ".join("—" if c is None else str(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"
