"""Joint partition + packing of tiny instances: what splitting the pipeline problem costs.

The production path splits pipeline mode in two: packing curves per stage
(``stage_cost(first, stop, cores)``) and a partition over those curves
(`raptor_cp.heuristics.prefix_dp`). `CpSatJointModel` decides the stage cuts
and every task's core together on a `JointProblem`, and `joint_audit` compares
it with the prefix DP over a given packer's curves. Since each core belongs to
one stage, the joint optimum equals the partition optimum over *exact* packing
curves; the audit's difference therefore measures the packer's and the
quantized grid's loss, never a modelling difference.

Model
-----
``st[g]`` is the stage of group ``g``: ``st[0] = 0`` and ``st[g+1] - st[g]`` is
0 or 1, so stages are contiguous, ordered and non-empty (every group has a
task). ``cs[p]`` is the stage of core ``p`` (value ``S`` = idle), non-decreasing
in ``p``: identical cores can be relabelled so, hence stage ``i`` owns a block
of consecutive cores, the `JointSolution` convention. ``on[t,p]`` puts each task
on one core, and ``on[t,p] and st[g(t)] = s`` implies ``cs[p] = s``;
``resident[w,p]`` carries the weight-union capacity of each core. An edge
``(a, b, ns)`` charges ``ns`` to core ``p`` when ``same_stage[e]`` (the groups'
stages are equal, reified) and exactly one endpoint is on ``p``; the objective
is the maximum per-core demand (load plus charges), as `PackingProblem` prices a
stage.
Instances above ``max_size`` literals are refused with a `RaptorError`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, ClassVar

from raptor_cp.errors import InvalidInstanceError, RaptorError, ScheduleViolationError
from raptor_cp.heuristics.prefix_dp import SPARE_UNITS, initial_partition
from raptor_cp.models.solve import CpSatRun, SolveSettings, run_cpsat
from raptor_cp.pipeline_problems import (
    PackingProblem,
    PackingSolution,
    PartitionProblem,
    PartitionSolution,
    Stage,
    check_packing,
    check_partition,
    packing_demand,
)
from raptor_cp.problems import HasGap, Status

if TYPE_CHECKING:
    from ortools.sat.python import cp_model

DEFAULT_MAX_SIZE = 4_000
"""Literals above which the joint model is refused (see `CpSatJointModel.size`)."""

Task = tuple[int, tuple[int, ...]]
"""``(load ns, weight ids)`` of one task of a `JointProblem`."""


@dataclass(frozen=True)
class JointProblem:
    """Ordered groups of tasks onto ``cores`` cores cut into at most ``max_stages`` stages.

    Each core belongs to at most one stage; a stage's tasks sit on its cores,
    whose distinct weights must fit ``capacity``; the objective is the maximum
    per-core demand: compute load plus, for each edge ``(a, b, ns)`` whose tasks
    are in the same stage on different cores, ``ns`` on both cores (the seeds'
    incident same-stage transfer proxy, as `PackingProblem` charges it; a
    cross-stage edge is not part of any stage's cost). Tasks are numbered in
    group order (group 0's first).
    """

    groups: tuple[tuple[Task, ...], ...]
    weight_size: tuple[int, ...]
    cores: int
    capacity: int
    max_stages: int
    edges: tuple[tuple[int, int, int], ...] = ()
    name: str = "joint"

    def __post_init__(self) -> None:
        if not self.groups or any(not group for group in self.groups):
            raise InvalidInstanceError(f"{self.name}: needs groups, each with at least one task")
        if self.max_stages < 1:
            raise InvalidInstanceError(f"{self.name}: pipeline depth must be >= 1")
        self.segment_packing(0, len(self.groups), self.cores)  # validates cores, tasks, edges

    @cached_property
    def group_start(self) -> tuple[int, ...]:
        """Index of each group's first task, then the task count."""
        starts = [0]
        for group in self.groups:
            starts.append(starts[-1] + len(group))
        return tuple(starts)

    @cached_property
    def tasks(self) -> tuple[Task, ...]:
        """Every task, in group order."""
        return tuple(task for group in self.groups for task in group)

    @cached_property
    def group_of(self) -> tuple[int, ...]:
        """The group of each task."""
        return tuple(g for g, group in enumerate(self.groups) for _ in group)

    @property
    def num_tasks(self) -> int:
        return self.group_start[-1]

    def segment_packing(self, first: int, stop: int, cores: int) -> PackingProblem:
        """The packing problem of groups ``[first, stop)`` on ``cores`` cores (its edges)."""
        low, high = self.group_start[first], self.group_start[stop]
        tasks = self.tasks[low:high]
        return PackingProblem(
            loads=tuple(load for load, _ in tasks),
            task_weights=tuple(weights for _, weights in tasks),
            weight_size=self.weight_size,
            cores=cores,
            capacity=self.capacity,
            edges=tuple(
                (a - low, b - low, ns)
                for a, b, ns in self.edges
                if low <= min(a, b) and max(a, b) < high
            ),
            name=f"{self.name}[{first}:{stop}]",
        )

    def partition_problem(self, pack: Callable[[PackingProblem], int | None]) -> PartitionProblem:
        """The partition over ``pack``'s curves: a segment's cost is ``pack`` of its packing."""
        return PartitionProblem(
            num_groups=len(self.groups),
            cores=self.cores,
            max_stages=self.max_stages,
            stage_cost=lambda first, stop, k: pack(self.segment_packing(first, stop, k)),
            name=self.name,
        )


@dataclass(frozen=True)
class JointSolution(HasGap):
    """Stages and a core per task; stage ``i`` owns the next ``stages[i].cores`` cores."""

    stages: tuple[Stage, ...] | None
    core: tuple[int, ...] | None
    status: Status
    solver: str
    objective: int | None = None
    """Maximum per-core demand (`joint_demand`)."""
    bound: int | None = None
    wall_s: float = 0.0
    details: dict[str, object] = field(default_factory=dict)


def check_joint(problem: JointProblem, solution: JointSolution) -> None:
    """Validate stages (as `check_partition` does), core blocks, capacities and the objective."""
    if solution.stages is None:
        return
    core = solution.core
    if core is None or len(core) != problem.num_tasks:
        raise ScheduleViolationError(f"{problem.name}: needs one core for each task")
    block: dict[int, int] = {}
    running = 0
    for stage in solution.stages:
        block[stage.first] = running
        running += stage.cores

    def stage_demand(first: int, stop: int, cores: int) -> int:
        """Max core demand of one stage; `check_partition` calls it once the stages are valid."""
        base = block[first]
        local = []
        for t in range(problem.group_start[first], problem.group_start[stop]):
            if not base <= core[t] < base + cores:
                raise ScheduleViolationError(
                    f"{problem.name}: task {t} on core {core[t]}, outside its stage's cores "
                    f"[{base}, {base + cores})"
                )
            local.append(core[t] - base)
        packing = problem.segment_packing(first, stop, cores)
        check_packing(packing, PackingSolution(tuple(local), solution.status, solution.solver))
        return max(packing_demand(packing, tuple(local)))

    partition = PartitionProblem(
        len(problem.groups), problem.cores, problem.max_stages, stage_demand, problem.name
    )
    check_partition(
        partition,
        PartitionSolution(solution.stages, solution.status, solution.solver, solution.objective),
    )


def joint_demand(problem: JointProblem, group_stage: list[int], core: tuple[int, ...]) -> int:
    """Maximum per-core demand of a placement, given each group's stage index."""
    demand = [0] * problem.cores
    for (load, _), p in zip(problem.tasks, core, strict=True):
        demand[p] += load
    for a, b, ns in problem.edges:
        same_stage = group_stage[problem.group_of[a]] == group_stage[problem.group_of[b]]
        if same_stage and core[a] != core[b]:
            demand[core[a]] += ns
            demand[core[b]] += ns
    return max(demand)


@dataclass(frozen=True)
class JointVars:
    """The CP-SAT variables of one joint model."""

    problem: JointProblem
    stage_of_group: list[cp_model.IntVar]
    stage_of_core: list[cp_model.IntVar]
    on: list[list[cp_model.IntVar]]
    """``on[t][p]``: task ``t`` runs on core ``p``."""
    worst: cp_model.IntVar


@dataclass(frozen=True)
class CpSatJointModel:
    """Exact joint stage cuts and task placement of a tiny `JointProblem`."""

    name: ClassVar[str] = "cpsat-joint"

    time_limit_s: float = 10.0
    workers: int = 8
    seed: int = 0
    deterministic: bool = True
    max_size: int = DEFAULT_MAX_SIZE

    def size(self, problem: JointProblem) -> int:
        """Literals: task-core, weight-core, edge-core, group-stage and core-stage choices."""
        stages = min(problem.max_stages, len(problem.groups), problem.cores)
        weights = len({w for _, ws in problem.tasks for w in ws})
        per_core = problem.num_tasks + weights + len(problem.edges) + stages + 1
        return per_core * problem.cores + len(problem.groups) * stages + len(problem.edges)

    def solve(self, problem: JointProblem) -> JointSolution:
        """Minimise the maximum per-core demand over stage cuts and placements together.

        Raises `RaptorError` when the model would exceed ``max_size`` literals.
        """
        began = time.perf_counter()
        settings = SolveSettings(self.time_limit_s, self.workers, self.seed, self.deterministic)
        model, variables = self.build(problem)
        solution = self.extract(run_cpsat(model, settings), variables)
        return dataclasses.replace(solution, wall_s=time.perf_counter() - began)

    def build(self, problem: JointProblem) -> tuple[cp_model.CpModel, JointVars]:
        """Build the joint model (see the module docstring)."""
        from ortools.sat.python import cp_model

        size = self.size(problem)
        if size > self.max_size:
            raise RaptorError(
                f"{problem.name}: joint model too large ({size} literals > max_size "
                f"{self.max_size}); audit a smaller instance"
            )
        groups, cores = len(problem.groups), problem.cores
        stages = min(problem.max_stages, groups, cores)
        model = cp_model.CpModel()
        model.name = f"joint:{problem.name}"
        st = [model.new_int_var(0, stages - 1, f"stage_of_group[{g}]") for g in range(groups)]
        in_stage = [
            [model.new_bool_var(f"in_stage[{g},{s}]") for s in range(stages)] for g in range(groups)
        ]
        model.add(st[0] == 0)
        for g in range(groups):
            model.add_exactly_one(in_stage[g])
            model.add(st[g] == sum(s * in_stage[g][s] for s in range(stages)))
            if g + 1 < groups:
                model.add(st[g + 1] >= st[g])
                model.add(st[g + 1] <= st[g] + 1)
        cs = [model.new_int_var(0, stages, f"stage_of_core[{p}]") for p in range(cores)]
        owns = [
            [model.new_bool_var(f"owns[{p},{s}]") for s in range(stages + 1)] for p in range(cores)
        ]
        for p in range(cores):
            model.add_exactly_one(owns[p])
            model.add(cs[p] == sum(s * owns[p][s] for s in range(stages + 1)))
            if p + 1 < cores:
                model.add(cs[p + 1] >= cs[p])
        tasks, group_of = problem.tasks, problem.group_of
        on = [[model.new_bool_var(f"on[{t},{p}]") for p in range(cores)] for t in range(len(tasks))]
        for t, g in enumerate(group_of):
            model.add_exactly_one(on[t])
            for p in range(cores):
                for s in range(stages):
                    model.add_bool_or([~on[t][p], ~in_stage[g][s], owns[p][s]])
        demand = [[load * on[t][p] for t, (load, _) in enumerate(tasks)] for p in range(cores)]
        for e, (a, b, ns) in enumerate(problem.edges):
            ga, gb = sorted((group_of[a], group_of[b]))
            same = model.new_bool_var(f"same_stage[{e}]")
            model.add(st[gb] == st[ga]).only_enforce_if(same)
            model.add(st[gb] > st[ga]).only_enforce_if(~same)
            for p in range(cores):
                charged = model.new_bool_var(f"charged[{e},{p}]")
                model.add_bool_or([~same, ~on[a][p], on[b][p], charged])
                model.add_bool_or([~same, ~on[b][p], on[a][p], charged])
                demand[p].append(ns * charged)
        users: dict[int, list[int]] = {}
        for t, (_, weights) in enumerate(tasks):
            for w in sorted(set(weights)):
                users.setdefault(w, []).append(t)
        horizon = sum(load for load, _ in tasks) + sum(ns for _, _, ns in problem.edges)
        worst = model.new_int_var(0, horizon, "worst")
        for p in range(cores):
            resident = {w: model.new_bool_var(f"resident[{w},{p}]") for w in sorted(users)}
            for w, literal in resident.items():
                for t in users[w]:
                    model.add_implication(on[t][p], literal)
            model.add(
                sum(problem.weight_size[w] * literal for w, literal in resident.items())
                <= problem.capacity
            )
            model.add(worst >= sum(demand[p]))
        model.minimize(worst)
        return model, JointVars(problem, st, cs, on, worst)

    def extract(self, run: CpSatRun, variables: JointVars) -> JointSolution:
        """Stages from the group stages, core blocks from the core stages; checked."""
        problem = variables.problem
        details: dict[str, object] = {"backend_status": run.backend_status}
        if not run.has_solution:
            return JointSolution(
                None,
                None,
                run.status,
                self.name,
                bound=run.bound,
                wall_s=run.wall_s,
                details=details,
            )
        solver = run.solver
        group_stage = [solver.value(v) for v in variables.stage_of_group]
        core_stage = [solver.value(v) for v in variables.stage_of_core]
        stages = []
        for s in range(group_stage[-1] + 1):
            members = [g for g, value in enumerate(group_stage) if value == s]
            stages.append(Stage(members[0], members[-1] + 1, core_stage.count(s)))
        core = tuple(
            next(p for p, literal in enumerate(row) if solver.boolean_value(literal))
            for row in variables.on
        )
        objective = joint_demand(problem, group_stage, core)
        solution = JointSolution(
            tuple(stages),
            core,
            Status.OPTIMAL if objective == run.bound else Status.FEASIBLE,
            self.name,
            objective,
            run.bound,
            run.wall_s,
            details,
        )
        check_joint(problem, solution)
        assert run.objective is not None and objective <= run.objective
        return solution


def joint_audit(
    problem: JointProblem,
    pack: Callable[[PackingProblem], int | None],
    model: CpSatJointModel | None = None,
    spare_units: int = SPARE_UNITS,
) -> dict[str, object]:
    """The joint CP-SAT optimum against the prefix DP over ``pack``'s packing curves.

    ``splitting_loss`` is the DP objective minus the joint objective (when both
    exist and the joint model proved its optimum): what the packer's curves and
    the quantized grid cost. ``disagreements`` lists a DP objective below the
    joint bound (the packer reported a cost no placement achieves) and a DP
    that found nothing where the joint model found a placement.
    """
    model = model or CpSatJointModel()
    partition = problem.partition_problem(pack)
    dp = initial_partition(partition, spare_units)
    check_partition(partition, dp)
    joint = model.solve(problem)
    disagreements = []
    if dp.objective is not None and joint.bound is not None and dp.objective < joint.bound:
        disagreements.append(f"dp objective {dp.objective} below the joint bound {joint.bound}")
    if dp.stages is None and joint.stages is not None:
        disagreements.append("dp found no partition where the joint model found a placement")
    splitting_loss = None
    if joint.status == Status.OPTIMAL and dp.objective is not None and joint.objective is not None:
        splitting_loss = dp.objective - joint.objective
    return {
        "instance": problem.name,
        "tasks": problem.num_tasks,
        "groups": len(problem.groups),
        "cores": problem.cores,
        "dp_status": dp.status.value,
        "dp_objective": dp.objective,
        "dp_stages": None if dp.stages is None else [dataclasses.astuple(s) for s in dp.stages],
        "joint_status": joint.status.value,
        "joint_objective": joint.objective,
        "joint_bound": joint.bound,
        "joint_stages": (
            None if joint.stages is None else [dataclasses.astuple(s) for s in joint.stages]
        ),
        "joint_wall_s": joint.wall_s,
        "splitting_loss": splitting_loss,
        "disagreements": disagreements,
    }
