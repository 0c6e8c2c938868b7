"""The pipeline problem: a graph as a pipeline of at most ``depth`` stages, for throughput.

`PipelineProblem` is what ``compile --pipeline N`` solves (the seeds' "Default
throughput selection"); its solution is a placed `PipelinePlan` whose
``objective`` is the plan's interval in ns. `check_pipeline` knows nothing about
how the plan was built. It enforces, in this order:

1. placement: every task exactly once, on a core the target has
   (`raptor_cp.evaluation.placement`);
2. stages: every core has one stage (``-1`` only for idle cores), the stages
   are ``0..S-1`` with at most ``max_stages`` of them, each with at least one core;
3. groups: every task's core belongs to the stage of its group, stages cover
   contiguous ranges of the ordered groups, and no dependency goes to an
   earlier stage;
4. resident-weight capacity per core (`check_capacity`);
5. per-core order: no task after one of its successors on the same core.

Each failure raises `ScheduleViolationError` with one line naming the task or core.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from raptor_cp.errors import InvalidConfigError, ScheduleViolationError
from raptor_cp.evaluation import placement
from raptor_cp.graph import ComputeGraph
from raptor_cp.problems.base import Solution
from raptor_cp.problems.latency import LatencyProblem, check_capacity, check_core_order
from raptor_cp.schedule import Schedule
from raptor_cp.targets.base import SchedulingTarget

if TYPE_CHECKING:
    from raptor_cp.pipeline.groups import PipelineGroups
    from raptor_cp.pipeline.plan import PipelinePlan
    from raptor_cp.pipeline.selection import PipelineSelection


@dataclass(frozen=True, eq=False)
class PipelineProblem:
    """Run ``graph`` on ``target`` as a pipeline of at most ``depth`` stages.

    Raises
    ------
    InvalidConfigError
        When ``depth`` is below 1.
    InvalidInstanceError, ProvedInfeasibleError
        As `LatencyProblem` (malformed graph, a task that fits no core, weights
        exceeding the chip).
    """

    graph: ComputeGraph
    target: SchedulingTarget
    depth: int

    def __post_init__(self) -> None:
        if self.depth < 1:
            raise InvalidConfigError(f"pipeline depth must be >= 1, got {self.depth}")
        _ = self.latency  # validates the graph, capacities and fleet feasibility

    @cached_property
    def latency(self) -> LatencyProblem:
        """The same graph and target as a latency problem (placement, capacity rules)."""
        return LatencyProblem(self.graph, self.target)


@dataclass(frozen=True)
class PipelineSolution(Solution):
    """A placed pipeline (None when nothing was found); ``objective`` is its interval in ns.

    The interval is the selected candidate's queue estimate when the selection
    compared candidates by the target's queue model, otherwise the plan's
    analytic proxy (``selection`` says which). ``selection`` is the evidence of
    how the plan was chosen, which ``reports/pipeline_selection.json`` records.
    """

    plan: PipelinePlan | None
    selection: PipelineSelection | None = None


def check_pipeline(problem: PipelineProblem, solution: PipelineSolution) -> None:
    """Raise `ScheduleViolationError` unless ``solution``'s plan is a valid pipeline schedule."""
    if solution.plan is None:
        return
    check_pipeline_schedule(problem, solution.plan.groups, solution.plan.schedule)


def check_pipeline_schedule(
    problem: PipelineProblem, groups: PipelineGroups, schedule: Schedule
) -> None:
    """Raise `ScheduleViolationError` unless ``schedule`` is a valid pipeline schedule."""
    max_stages = problem.depth
    graph = problem.graph
    names = graph.names
    core, slot = placement(problem.latency, schedule)
    stage_of_core = _core_stages(problem, schedule, max_stages)
    task_stage = stage_of_core[core]
    idle = np.flatnonzero(task_stage < 0)
    if idle.size:
        t = int(idle[0])
        raise ScheduleViolationError(
            f"task {names[t]!r} is on core {int(core[t])}, which has no stage"
        )
    group_stage: list[int] = []
    for g, tasks in enumerate(groups.tasks):
        stages = np.unique(task_stage[list(tasks)])
        if stages.size != 1:
            raise ScheduleViolationError(
                f"group {groups.names[g]!r} is split over stages {stages.tolist()}; all lanes of "
                "an operation share one stage"
            )
        group_stage.append(int(stages[0]))
    for g in range(1, groups.count):
        if group_stage[g] not in (group_stage[g - 1], group_stage[g - 1] + 1):
            raise ScheduleViolationError(
                f"group {groups.names[g]!r} is in stage {group_stage[g]} after group "
                f"{groups.names[g - 1]!r} in stage {group_stage[g - 1]}; stages must be "
                "contiguous ranges of the ordered groups"
            )
    if group_stage[0] != 0:
        raise ScheduleViolationError(f"the first group is in stage {group_stage[0]}, not 0")
    if group_stage[-1] != int(stage_of_core.max()):
        raise ScheduleViolationError(
            f"stages {group_stage[-1] + 1}..{int(stage_of_core.max())} have cores but no group"
        )
    backwards = np.flatnonzero(task_stage[graph.edge_src] > task_stage[graph.edge_dst])
    if backwards.size:
        e = int(backwards[0])
        a, b = int(graph.edge_src[e]), int(graph.edge_dst[e])
        raise ScheduleViolationError(
            f"task {names[b]!r} in stage {int(task_stage[b])} depends on {names[a]!r} in the "
            f"later stage {int(task_stage[a])}"
        )
    check_capacity(problem.latency, core)
    check_core_order(problem.latency, core, slot)


def _core_stages(problem: PipelineProblem, schedule: Schedule, max_stages: int) -> np.ndarray:
    """The stage of every core, after checking the stage list itself."""
    cores = problem.target.cores
    if schedule.stage is None or len(schedule.stage) != cores:
        count = "no" if schedule.stage is None else str(len(schedule.stage))
        raise ScheduleViolationError(
            f"a pipeline schedule needs one stage per core: {count} stages for {cores} cores"
        )
    stage = np.asarray(schedule.stage, dtype=np.int64)
    bad = np.flatnonzero(stage < -1)
    if bad.size:
        raise ScheduleViolationError(f"core {int(bad[0])} has stage {int(stage[bad[0]])}")
    count = int(stage.max()) + 1
    if not 1 <= count <= max_stages:
        raise ScheduleViolationError(f"{count} stages, allowed 1..{max_stages}")
    empty = [s for s in range(count) if not (stage == s).any()]
    if empty:
        raise ScheduleViolationError(f"stage {empty[0]} has no core")
    return stage
