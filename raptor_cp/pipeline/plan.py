"""Assemble a pipeline `Schedule` from stages, packings and the core layout, and estimate it.

Given the ordered groups, the partition (contiguous group ranges with core
budgets) and each stage's constructive packing (an abstract core per task), the
assembly

1. lays the stages out on contiguous core regions (`PipelineCoreLayout`) and
   checks every region's adjacency;
2. places each stage on its region (`StagePlacer`: retained packing,
   topology-aware greedy or replicated weights, ranked by cycle bound with
   the 1 % span tie rule);
3. orders each core's tasks by the stage's earliest-ready list schedule
   (`StagePlacer.timing`, consistent with the dependencies) and gives every
   core its stage (-1 idle);
4. prices the cross-stage boundary demand (`boundary_demand`) and the baseline
   demand of function inputs, constants and outputs (`baseline_demand`, each
   core loading a shared piece once).

The plan's *analytic interval proxy* is the maximum of three terms, each
reported on its own: the largest per-core work (serial compute plus incident
same-stage transfers, hop-aware), the largest stage span (dependency
completion of one stage's work when its cross-stage inputs are ready at the
start of the interval) and the serialized shared-memory service: the memory
controller's service of the boundary and baseline requests, shared by all
stages and never added to a stage span. All three use the physical costs
(`ComputeGraph.cost`), not the nominal priorities partitioning and packing
rank by. The seeds call the within-generation span a latency, not an
initiation interval: the selected schedule's interval is its queue estimate
(`raptor_cp.pipeline.beam`, the target's `estimate_realized_schedule_cost`),
and this proxy is kept under its own name (``analytic_interval``) for
schedules no queue comparison ran on. Estimated starts in the schedule are
relative to the start of the task's stage in one interval.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from raptor_cp.errors import ScheduleViolationError
from raptor_cp.graph import ComputeGraph
from raptor_cp.pipeline.baseline import BaselineDemand, baseline_demand
from raptor_cp.pipeline.boundary import BoundaryDemand, boundary_demand
from raptor_cp.pipeline.groups import PipelineGroups
from raptor_cp.pipeline.layout import PipelineCoreLayout, StagePlacement, StagePlacer, check_region
from raptor_cp.problems import Stage
from raptor_cp.schedule import Schedule
from raptor_cp.targets.base import SchedulingTarget

SCHEDULER = "pipeline"
"""``Schedule.scheduler`` of pipeline schedules."""


@dataclass(frozen=True)
class IntervalEstimate:
    """The analytic interval proxy and its three terms (integer ns)."""

    core_work_ns: int
    """Largest per-core serial compute plus incident same-stage transfers."""
    stage_span_ns: int
    """Largest stage span."""
    memory_service_ns: int
    """Serialized shared-memory service: boundary stores and loads plus the baseline."""
    baseline_memory_ns: int = 0
    """The baseline requests' part of ``memory_service_ns`` (inputs, constants, outputs)."""

    @property
    def interval_ns(self) -> int:
        return max(self.core_work_ns, self.stage_span_ns, self.memory_service_ns)

    @property
    def binding(self) -> str:
        """The term equal to the interval (first of core work, stage span, memory on ties)."""
        terms = (
            ("core_work", self.core_work_ns),
            ("stage_span", self.stage_span_ns),
            ("memory_service", self.memory_service_ns),
        )
        return next(name for name, value in terms if value == self.interval_ns)

    def to_json(self) -> dict[str, object]:
        return {
            "interval_ns": self.interval_ns,
            "core_work_ns": self.core_work_ns,
            "stage_span_ns": self.stage_span_ns,
            "memory_service_ns": self.memory_service_ns,
            "baseline_memory_ns": self.baseline_memory_ns,
            "binding": self.binding,
        }


@dataclass(frozen=True, eq=False)
class PipelinePlan:
    """A placed pipeline schedule with everything its reports need."""

    groups: PipelineGroups
    stages: tuple[Stage, ...]
    layout: PipelineCoreLayout
    placements: tuple[StagePlacement, ...]
    boundary: BoundaryDemand
    baseline: BaselineDemand
    estimate: IntervalEstimate
    schedule: Schedule

    @property
    def budgets(self) -> tuple[int, ...]:
        return tuple(stage.cores for stage in self.stages)

    @property
    def interval_ns(self) -> int:
        return self.estimate.interval_ns

    def task_stage(self, num_tasks: int) -> np.ndarray:
        """Stage of every task id."""
        return task_stages(self.placements, num_tasks)


def task_stages(placements: Sequence[StagePlacement], num_tasks: int) -> np.ndarray:
    """Stage of every task id (-1 for a task no placement holds)."""
    stage = np.full(num_tasks, -1, dtype=np.int64)
    for s, placement in enumerate(placements):
        stage[list(placement.tasks)] = s
    return stage


def assemble_pipeline(
    graph: ComputeGraph,
    target: SchedulingTarget,
    groups: PipelineGroups,
    stages: Sequence[Stage],
    assignments: Sequence[Sequence[int]],
    placer: StagePlacer | None = None,
) -> PipelinePlan:
    """Lay out, place, order and estimate a partition (see the module docstring).

    Parameters
    ----------
    stages:
        Contiguous group ranges covering every group, with core budgets.
    assignments:
        Per stage, the abstract core ``0..budget-1`` of each of its tasks in the
        order of ``groups.range_tasks(stage.first, stage.stop)``.
    placer:
        The `StagePlacer` to use (default: a new one); a caller assembling many
        partitions of one graph passes one, so unchanged stages reuse placements.

    Raises
    ------
    ScheduleViolationError
        If the stages do not cover the groups, the budgets exceed the target, an
        assignment does not match its stage, or a region is not connected.
    """
    stages = tuple(stages)
    if len(assignments) != len(stages):
        raise ScheduleViolationError(f"{len(assignments)} packings for {len(stages)} stages")
    layout = PipelineCoreLayout.build(target, [s.cores for s in stages])
    placer = placer or StagePlacer(graph, target)
    placements: list[StagePlacement] = []
    expected = 0
    for index, (stage, assignment, region) in enumerate(
        zip(stages, assignments, layout.regions, strict=True)
    ):
        if stage.first != expected or stage.stop <= stage.first:
            raise ScheduleViolationError(
                f"stage {index} covers groups [{stage.first}, {stage.stop}), expected a "
                f"non-empty range starting at {expected}"
            )
        expected = stage.stop
        check_region(target, region, index)
        tasks = groups.range_tasks(stage.first, stage.stop).tolist()
        if len(assignment) != len(tasks):
            raise ScheduleViolationError(
                f"stage {index}: packing covers {len(assignment)} of {len(tasks)} tasks"
            )
        placements.append(placer.place(tasks, assignment, region))
    if expected != groups.count:
        raise ScheduleViolationError(f"stages cover {expected} of {groups.count} groups")
    return plan_of_placements(graph, target, groups, stages, layout, placements)


def plan_of_placements(
    graph: ComputeGraph,
    target: SchedulingTarget,
    groups: PipelineGroups,
    stages: Sequence[Stage],
    layout: PipelineCoreLayout,
    placements: Sequence[StagePlacement],
) -> PipelinePlan:
    """Steps 3-4 of the module docstring: order the placed stages and estimate the plan."""
    stages = tuple(stages)
    orders: list[list[int]] = [[] for _ in range(target.cores)]
    start = np.zeros(graph.num_tasks, dtype=np.int64)
    core_of_task = np.zeros(graph.num_tasks, dtype=np.int64)
    for placement in placements:
        core = dict(zip(placement.tasks, placement.cores, strict=True))
        for t in placement.timing.sequence:
            orders[core[t]].append(t)
            start[t] = placement.timing.start_ns[t]
            core_of_task[t] = core[t]
    stage_of_core = layout.stage_of_core(target.cores)
    task_stage = task_stages(placements, graph.num_tasks)
    boundary = boundary_demand(graph, target, task_stage, len(stages))
    baseline = baseline_demand(graph, target, core_of_task)
    estimate = IntervalEstimate(
        core_work_ns=max(p.timing.demand_ns for p in placements),
        stage_span_ns=max(p.timing.span_ns for p in placements),
        memory_service_ns=boundary.service_ns + baseline.service_ns,
        baseline_memory_ns=baseline.service_ns,
    )
    schedule = Schedule(
        core_order=tuple(tuple(o) for o in orders),
        start_ns=start,
        scheduler=SCHEDULER,
        stage=stage_of_core,
        metadata={"interval_ns": estimate.interval_ns, "core_budgets": [s.cores for s in stages]},
    )
    return PipelinePlan(
        groups=groups,
        stages=stages,
        layout=layout,
        placements=tuple(placements),
        boundary=boundary,
        baseline=baseline,
        estimate=estimate,
        schedule=schedule,
    )
