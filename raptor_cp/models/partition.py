"""CP-SAT twin of the pipeline partition.

`CpSatPartitionModel` solves the same `PartitionProblem` as
`raptor_cp.heuristics.prefix_dp.initial_partition` exactly over the tabulated
curves; `raptor_cp.audit.partition` puts the two side by side and measures the
DP's quantization loss. (The joint partition + packing model of tiny instances
is `raptor_cp.models.joint_partition`.)

Model (a path of stages through the group boundaries)
-----------------------------------------------------
Every ``(first, stop, k)`` with ``k <= P`` is tabulated, refusing instances
with more than ``max_entries`` entries (``G (G + 1) / 2 * P``). Per segment only
the *Pareto* budgets are kept: ``k`` whose cost is strictly below every smaller
budget's (a dominated budget can be replaced by a smaller one at no greater
cost, so this is exact). Literal ``x[f,t,k]`` selects stage ``[f, t)`` on ``k``
cores. Flow conservation (one unit leaves group boundary 0, boundaries
``1..G-1`` pass it on, one unit reaches ``G``) makes the selected arcs one path
``0 -> G``, i.e. non-empty contiguous stages: every arc goes forward, so exactly
one selected arc covers each group. Then ``sum k x <= P``, ``sum x <= max_stages``
and, per group ``g``, ``worst >= sum_{f <= g < t} cost x`` (exactly one term is
selected; summing per group is tighter in the LP than one row per arc); with a
memory term also ``worst >= sum memory(f, t) x`` over all arcs. Minimise
``worst``. (A dominated budget is still dominated with the memory term, which
does not depend on the budget.) The prefix DP's answer is the hint; the bound does not
depend on it.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from raptor_cp.errors import RaptorError
from raptor_cp.heuristics.core_budgets import CostCache
from raptor_cp.heuristics.prefix_dp import initial_partition
from raptor_cp.models.solve import CpSatRun, SolveSettings, run_cpsat
from raptor_cp.problems import (
    PartitionProblem,
    PartitionSolution,
    Stage,
    Status,
    check_partition,
)

if TYPE_CHECKING:
    from ortools.sat.python import cp_model

DEFAULT_MAX_ENTRIES = 20_000
"""Stage-cost entries ``G (G + 1) / 2 * P`` above which the partition model is refused."""


def partition_entries(problem: PartitionProblem) -> int:
    """Stage-cost entries the exact partition model tabulates."""
    return problem.num_groups * (problem.num_groups + 1) // 2 * problem.cores


@dataclass(frozen=True)
class PartitionVars:
    """The CP-SAT variables of one partition model."""

    problem: PartitionProblem
    arcs: list[tuple[int, int, int, int]]
    """``(first, stop, cores, cost)`` of each Pareto stage choice."""
    x: list[cp_model.IntVar]
    """``x[i]``: arc ``arcs[i]`` is a stage."""
    worst: cp_model.IntVar


@dataclass(frozen=True)
class CpSatPartitionModel:
    """Exact partition over the tabulated stage costs (see the module docstring)."""

    name: ClassVar[str] = "cpsat"

    settings: SolveSettings = field(default_factory=SolveSettings)
    hint_with_dp: bool = True
    max_entries: int = DEFAULT_MAX_ENTRIES

    def solve(self, problem: PartitionProblem) -> PartitionSolution:
        """Minimise the maximum stage cost; the prefix DP's partition hints the search.

        The model and the hinting DP share one `CostCache`. Raises `RaptorError`
        when the instance has more than ``max_entries`` stage-cost entries.
        """
        began = time.perf_counter()
        settings = self.settings
        problem = dataclasses.replace(problem, stage_cost=CostCache(problem.stage_cost))
        model, variables = self.build(problem)
        if self.hint_with_dp:
            _hint_partition(model, variables, initial_partition(problem))
        solution = self.extract(run_cpsat(model, settings), variables)
        return dataclasses.replace(solution, wall_s=time.perf_counter() - began)

    def build(self, problem: PartitionProblem) -> tuple[cp_model.CpModel, PartitionVars]:
        """Tabulate the Pareto stage choices and build the flow model."""
        from ortools.sat.python import cp_model

        entries = partition_entries(problem)
        if entries > self.max_entries:
            raise RaptorError(
                f"{problem.name}: exact partition model too large ({problem.num_groups} groups, "
                f"{problem.cores} cores: {entries} stage-cost entries > max_entries "
                f"{self.max_entries}); raise max_entries or audit a smaller instance"
            )
        groups = problem.num_groups
        cost = CostCache(problem.stage_cost)
        arcs: list[tuple[int, int, int, int]] = []
        for first in range(groups):
            for stop in range(first + 1, groups + 1):
                cheapest = None
                for k in range(1, problem.cores + 1):
                    value = cost(first, stop, k)
                    if value is not None and (cheapest is None or value < cheapest):
                        cheapest = value
                        arcs.append((first, stop, k, value))
        model = cp_model.CpModel()
        model.name = f"partition:{problem.name}"
        x = [model.new_bool_var(f"x[{f},{t},{k}]") for f, t, k, _ in arcs]
        leaving: list[list[cp_model.IntVar]] = [[] for _ in range(groups + 1)]
        entering: list[list[cp_model.IntVar]] = [[] for _ in range(groups + 1)]
        covering: list[list[tuple[int, cp_model.IntVar]]] = [[] for _ in range(groups)]
        for (first, stop, _, value), literal in zip(arcs, x, strict=True):
            leaving[first].append(literal)
            entering[stop].append(literal)
            for g in range(first, stop):
                covering[g].append((value, literal))
        model.add(sum(leaving[0]) == 1)
        model.add(sum(entering[groups]) == 1)
        for g in range(1, groups):
            model.add(sum(entering[g]) == sum(leaving[g]))
        model.add(
            sum(k * literal for (_, _, k, _), literal in zip(arcs, x, strict=True)) <= problem.cores
        )
        model.add(sum(x) <= problem.max_stages)
        memory = [
            0 if problem.stage_memory is None else problem.stage_memory(f, t) for f, t, _, _ in arcs
        ]
        top = max((a[3] for a in arcs), default=0) + sum(memory)
        worst = model.new_int_var(0, top, "worst")
        for terms in covering:
            model.add(worst >= sum(value * literal for value, literal in terms))
        if problem.stage_memory is not None:
            model.add(worst >= sum(m * literal for m, literal in zip(memory, x, strict=True)))
        model.minimize(worst)
        return model, PartitionVars(problem, arcs, x, worst)

    def extract(self, run: CpSatRun, variables: PartitionVars) -> PartitionSolution:
        """The selected path as checked stages; status from the run, objective recomputed."""
        problem = variables.problem
        details: dict[str, object] = {
            "backend_status": run.backend_status,
            "arcs": len(variables.arcs),
            "deterministic_time": run.deterministic_time,
            "wall_capped": run.wall_capped,
        }
        if not run.has_solution:
            return PartitionSolution(
                None,
                status=run.status,
                solver=self.name,
                bound=run.bound,
                wall_s=run.wall_s,
                details=details,
            )
        chosen = {
            f: (t, k, c)
            for (f, t, k, c), literal in zip(variables.arcs, variables.x, strict=True)
            if run.solver.boolean_value(literal)
        }
        stages: list[Stage] = []
        first = 0
        while first < problem.num_groups:
            stop, k, _ = chosen[first]
            stages.append(Stage(first, stop, k))
            first = stop
        objective = problem.objective(stages, [chosen[s.first][2] for s in stages])
        solution = PartitionSolution(
            tuple(stages),
            status=Status.OPTIMAL if objective == run.bound else Status.FEASIBLE,
            solver=self.name,
            objective=objective,
            bound=run.bound,
            wall_s=run.wall_s,
            details=details,
        )
        check_partition(problem, solution)
        assert run.objective is not None and objective <= run.objective
        return solution


def _hint_partition(
    model: cp_model.CpModel, variables: PartitionVars, hint: PartitionSolution
) -> None:
    """Hint the arcs of ``hint``'s stages, each mapped onto its best Pareto budget."""
    if hint.stages is None:
        return
    picked: set[int] = set()
    for stage in hint.stages:
        options = [
            i
            for i, (f, t, k, _) in enumerate(variables.arcs)
            if (f, t) == (stage.first, stage.stop) and k <= stage.cores
        ]
        picked.add(options[-1])  # arcs of a segment are in increasing k, decreasing cost
    for i, literal in enumerate(variables.x):
        model.add_hint(literal, i in picked)
    model.add_hint(variables.worst, max(variables.arcs[i][3] for i in picked))
