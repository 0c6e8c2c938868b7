"""The initial pipeline schedule: steps 1–2 of the seeds' "Default throughput selection".

`initial_pipeline` runs, on a lowered graph and a target:

1. `pipeline_groups`: all lanes of an operation form one group, in topological order;
2. `StageCosts`: the partition's stage costs (ordered packing / dependency priority),
   tabulated for every range at the prefix DP's grid budgets in one batch;
3. `initial_partition` (`raptor_cp.heuristics.prefix_dp`): the prefix DP over group
   prefixes and at most 16 spare-core units, then minimax core budgets; when no
   partition has an ordered packing for every stage, one stage on every core
   (`single_stage_fallback`), packed reuse-first;
4. `add_spare_cores`: cores the minimax budgets leave idle (their stage curves are
   flat) join the stages, one at a time, each to the stage with the most compute
   per core (ties: lowest stage) — the seeds' "idle spare cores", which a feasible
   packing tolerates;
5. `StageCosts.assignment`: each stage's constructive packing on its final budget
   (ordered runs, or the reuse-first stage packer when order cannot hold the
   stage's weights on its cores);
6. `assemble_pipeline`: layout, placement, per-core order, boundary demand and the
   analytic interval proxy.

`InitialPipelineSolver` (method ``initial``) keeps this schedule without
refinement or queue comparison; the default solver, ``beam``
(`raptor_cp.pipeline.beam`), refines it (the seeds' steps 3–8).
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import ClassVar

from raptor_cp.errors import InvalidConfigError
from raptor_cp.graph import ComputeGraph
from raptor_cp.heuristics.prefix_dp import SPARE_UNITS, SpareGrid, initial_partition
from raptor_cp.pipeline.groups import pipeline_groups
from raptor_cp.pipeline.plan import PipelinePlan, assemble_pipeline
from raptor_cp.pipeline.stage_costs import StageCosts
from raptor_cp.pipeline.units import UnitCosts, unit_bounds
from raptor_cp.problems import (
    PartitionProblem,
    PartitionSolution,
    PipelineProblem,
    PipelineSolution,
    Stage,
    Status,
)
from raptor_cp.progress import tick
from raptor_cp.targets.base import SchedulingTarget


@dataclass(frozen=True, eq=False)
class InitialPipeline:
    """The initial schedule with the evidence its report records."""

    plan: PipelinePlan
    partition: PartitionSolution
    costs: StageCosts
    """The stage costs the partition was priced with (memo kept for refinement)."""
    assignments: tuple[tuple[int, ...], ...]
    """Per stage: the constructive packing (`StageCosts.assignment`)."""
    packing: tuple[dict[str, object], ...]
    """Per stage: the constructive packing's evidence."""
    phase_times_s: dict[str, float] = field(default_factory=dict)
    work: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class InitialPipelineSolver:
    """`initial_pipeline` as a registered solver of `PipelineProblem` (method ``initial``).

    The initialized schedule is selected as it is: one candidate, no queue
    comparison, so its ``objective`` is the plan's analytic interval proxy; the
    status is FEASIBLE (nothing is proved).
    """

    name: ClassVar[str] = "initial"

    spare_units: int = SPARE_UNITS

    def solve(self, problem: PipelineProblem) -> PipelineSolution:
        from raptor_cp.pipeline.proxy import SelectionProxy
        from raptor_cp.pipeline.selection import Candidate, Decision, PipelineSelection

        began = time.perf_counter()
        result = initial_pipeline(problem.graph, problem.target, problem.depth, self.spare_units)
        proxy = SelectionProxy.of(result.costs, problem.target)
        candidate = Candidate(
            0, result.plan.stages, None, "initial partition", 0,
            proxy.score(result.plan.stages), result.plan, result.packing, None,
        )  # fmt: skip
        rule = "initial solver: the initialized schedule, no refinement or queue comparison"
        selection = PipelineSelection(
            solver=self.name,
            initial=result,
            candidates=(candidate,),
            decision=Decision(0, None, (), None, rule),
            termination="no refinement: the initial solver builds one candidate",
            constructive_packings=(1, 1),
            phase_times_s=dict(result.phase_times_s),
            work=dict(result.work),
        )
        return PipelineSolution(
            result.plan,
            selection=selection,
            status=Status.FEASIBLE,
            solver=self.name,
            objective=result.plan.interval_ns,
            wall_s=time.perf_counter() - began,
        )


def partition_problem(
    graph: ComputeGraph, target: SchedulingTarget, depth: int
) -> tuple[PartitionProblem, UnitCosts]:
    """The `PartitionProblem` of ``graph`` on ``target`` with at most ``depth`` stages.

    Its groups are the partition units (`raptor_cp.pipeline.units`): the
    operation groups themselves unless there are more than `UNIT_LIMIT`.
    """
    groups = pipeline_groups(graph)
    costs = UnitCosts(StageCosts(graph, target, groups), unit_bounds(graph, groups))
    problem = PartitionProblem(costs.count, target.cores, depth, costs, name=graph.name)
    return problem, costs


def tabulate_grid(problem: PartitionProblem, costs: UnitCosts, spare_units: int) -> None:
    """Price every unit range at the budgets of the prefix DP's spare grid in one batch."""
    grid = SpareGrid.of(problem, spare_units)
    budgets = [grid.budget(j) for j in range(grid.units + 1) if grid.budget(j) <= problem.cores]
    costs.tabulate(budgets)


def add_spare_cores(
    stages: Sequence[Stage], cores: int, work: Sequence[int], tasks: Sequence[int]
) -> tuple[Stage, ...]:
    """Hand the ``cores`` the stages leave idle to the stages (see the module docstring).

    ``work[s]`` is stage ``s``'s total compute; each spare core goes to the stage
    with the largest ``work / budget`` (exact rationals; ties: lowest stage index)
    among the stages with fewer cores than ``tasks[s]``, their task count (a core
    more than tasks would stay empty). Cores no stage can take stay idle.
    """
    budgets = [stage.cores for stage in stages]
    heap = [
        (-Fraction(w, b), s)
        for s, (w, b) in enumerate(zip(work, budgets, strict=True))
        if b < tasks[s]
    ]
    heapq.heapify(heap)
    for _ in range(cores - sum(budgets)):
        if not heap:
            break
        _, s = heapq.heappop(heap)
        budgets[s] += 1
        if budgets[s] < tasks[s]:
            heapq.heappush(heap, (-Fraction(work[s], budgets[s]), s))
    return tuple(Stage(st.first, st.stop, b) for st, b in zip(stages, budgets, strict=True))


def single_stage_fallback(
    problem: PartitionProblem, failed: PartitionSolution
) -> PartitionSolution:
    """One stage on every core, for when no partition has ordered packings.

    Order alone cannot always realise a capacity bound (seeds: the allocator
    "uses reuse-first resident-weight packing when order alone cannot realize a
    capacity bound"); `StageCosts.assignment` then packs the single stage with
    the reuse-first stage packer, or raises `NotFoundWithinBudgetError`.
    """
    return PartitionSolution(
        (Stage(0, problem.num_groups, problem.cores),),
        status=Status.FEASIBLE,
        solver="single-stage-fallback",
        details={**failed.details, "fallback": f"prefix DP: {failed.status.value}"},
    )


def final_stages(
    graph: ComputeGraph, costs: StageCosts, stages: Sequence[Stage], cores: int
) -> tuple[Stage, ...]:
    """The partition's stages with the idle cores added (`add_spare_cores`)."""
    members = [costs.groups.range_tasks(s.first, s.stop) for s in stages]
    work = [int(graph.nominal_cost[m].sum()) for m in members]
    return add_spare_cores(stages, cores, work, [len(m) for m in members])


def initial_pipeline(
    graph: ComputeGraph, target: SchedulingTarget, depth: int, spare_units: int = SPARE_UNITS
) -> InitialPipeline:
    """Build the initial pipeline schedule of ``graph`` on ``target`` (module docstring).

    Raises
    ------
    InvalidConfigError
        If ``depth`` is below 1.
    NotFoundWithinBudgetError
        If a stage cannot be packed, including the single stage of
        `single_stage_fallback` (bounded search; not a proof of infeasibility).
    """
    if depth < 1:
        raise InvalidConfigError(f"pipeline depth must be >= 1, got {depth}")
    times: dict[str, float] = {}
    began = time.perf_counter()
    tick("partition", f"grouping {graph.num_tasks:,} tasks")
    problem, units = partition_problem(graph, target, depth)
    costs = units.costs
    times["grouping"] = time.perf_counter() - began

    mark = time.perf_counter()
    tick("partition", f"pricing the stage costs of {problem.num_groups} partition units")
    tabulate_grid(problem, units, spare_units)
    tick("partition", f"prefix DP over {problem.num_groups} partition units, depth {depth}")
    partition = initial_partition(problem, spare_units)
    partition_s = time.perf_counter() - mark
    times["stage_cost_pricing"] = costs.stats.packing_s
    times["dependency_spans"] = costs.stats.spans_s
    times["partition_dp"] = partition_s - costs.stats.packing_s - costs.stats.spans_s
    if partition.stages is None:
        partition = single_stage_fallback(problem, partition)

    mark = time.perf_counter()
    groups = costs.groups
    stages = final_stages(graph, costs, units.stages(partition.stages), target.cores)
    assignments: list[tuple[int, ...]] = []
    evidence: list[dict[str, object]] = []
    for index, stage in enumerate(stages, start=1):
        tick("partition", f"packing stage {index} of {len(stages)} on {stage.cores} cores")
        core, details = costs.assignment(stage.first, stage.stop, stage.cores)
        assignments.append(core)
        evidence.append(details)
    times["stage_packing"] = time.perf_counter() - mark

    mark = time.perf_counter()
    tick("partition", "placing the stages on the mesh")
    plan = assemble_pipeline(graph, target, groups, stages, assignments)
    times["placement"] = time.perf_counter() - mark
    times["initialization"] = time.perf_counter() - began
    return InitialPipeline(
        plan=plan,
        partition=partition,
        costs=costs,
        assignments=tuple(assignments),
        packing=tuple(evidence),
        phase_times_s=times,
        work={
            "groups": groups.count,
            "partition_units": units.count,
            "stage_cost_queries": int(partition.details.get("stage_cost_queries", 0)),
            "stage_costs_priced": costs.stats.priced,
            "pricing_batches": costs.stats.batches,
            "stage_packings": len(assignments),
        },
    )
