"""Joint partition + packing of tiny instances: what splitting the pipeline problem costs.

The production path splits pipeline mode in two: packing curves per stage
(``stage_cost(first, stop, cores)``) and a partition over those curves
(`raptor_cp.heuristics.prefix_dp`). `CpSatJointModel` decides the stage cuts
and every task's core together on a `JointProblem`, and `raptor_cp.audit.joint` compares
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
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from raptor_cp.errors import RaptorError
from raptor_cp.models.solve import CpSatRun, SolveSettings, run_cpsat
from raptor_cp.problems import (
    JointProblem,
    JointSolution,
    Stage,
    Status,
    check_joint,
)
from raptor_cp.problems.joint import joint_demand

if TYPE_CHECKING:
    from ortools.sat.python import cp_model

DEFAULT_MAX_SIZE = 4_000
"""Literals above which the joint model is refused (see `CpSatJointModel.size`)."""


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

    name: ClassVar[str] = "cpsat"

    settings: SolveSettings = field(default_factory=SolveSettings)
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
        settings = self.settings
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
        details: dict[str, object] = {
            "backend_status": run.backend_status,
            "wall_capped": run.wall_capped,
        }
        if not run.has_solution:
            return JointSolution(
                None,
                None,
                status=run.status,
                solver=self.name,
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
            status=Status.OPTIMAL if objective == run.bound else Status.FEASIBLE,
            solver=self.name,
            objective=objective,
            bound=run.bound,
            wall_s=run.wall_s,
            details=details,
        )
        check_joint(problem, solution)
        assert run.objective is not None and objective <= run.objective
        return solution
