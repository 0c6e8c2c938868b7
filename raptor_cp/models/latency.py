"""CP-SAT twin of the latency heuristics: minimise the makespan of a `LatencyProblem`.

The model is a flexible job shop with communication delays and resident
weights, exact for the problem `raptor_cp.check` and `raptor_cp.evaluation` define:

* ``on[t,p]``: task ``t`` runs on core ``p``; exactly one core per task. An
  optional interval of size ``graph.cost_on(t, p)`` starting at ``start[t]`` is
  present iff ``on[t,p]``; one no-overlap per core.
* Precedence ``t -> s`` carrying ``b`` bytes: ``start[s] >= end[t]`` always, plus
  the transfer delay when the cores differ, modelled three ways by what the
  target's ``transfer_ns`` depends on (decided by tabulating it for every core
  pair and every byte count of the graph):

  - ``none``: every transfer is free, plain precedences suffice;
  - ``uniform``: the delay ``d(b)`` is the same for every pair of distinct cores
    (``generic:P:ns_per_byte``): one literal ``same[e]`` per edge, implied-only
    (``same[e] and on[t,p] => on[s,p]``) and ``start[s] >= end[t] + d(b) (1 - same[e])``;
  - ``pairwise``: the delay depends on the pair (meshes): for each core ``p``,
    ``on[t,p] => start[s] >= end[t] + sum_q transfer_ns(p, q, b) on[s,q]``. Exact
    without pair literals, but ``P^2`` terms per edge.

* Resident weights: ``resident[w,p] >= on[t,p]`` for every task ``t`` using
  weight ``w``, and ``sum_w size(w) resident[w,p] <= capacity(p)`` on every core
  with a finite capacity.
* Objective: ``makespan = max_t end[t]``. A redundant cumulative of all tasks
  with capacity ``P`` and ``makespan >= bounds.lower_bounds(...).makespan_ns``
  (valid for every schedule) strengthen the bound.
* Symmetry breaking, only when cores are interchangeable (same cost column,
  same capacity, transfer ``none`` or ``uniform``): with ``t_0, t_1, ...`` the
  topological order, ``on[t_k,p] = 0`` for ``p > k``. Valid because relabelling
  cores by their first appearance along that order maps any schedule onto one
  that satisfies it and has the same makespan. The hint is relabelled the same
  way so it stays feasible.

Size limit: the model has ``T P`` task-core literals, ``W P`` resident-weight
literals on capacity-limited targets and ``E (P + 1)`` (uniform) or ``E P^2``
(pairwise) transfer terms. Their sum is the model *size*; above ``max_size``
`CpSatLatencyModel.build` raises `RaptorError` instead of building a model CP-SAT
could not solve anyway, and the audit records the instance as skipped.

The time horizon ``sum_t max_p cost(t,p) + sum_e max_pq transfer`` bounds every
left-shifted schedule, so it never cuts off the optimum. The hint (a heuristic's
schedule) only guides the search: the bound and any infeasibility proof do not
depend on it.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from raptor_cp.bounds import lower_bounds
from raptor_cp.errors import NotFoundWithinBudgetError, RaptorError, ScheduleViolationError
from raptor_cp.evaluation import evaluate
from raptor_cp.models.solve import CpSatRun, SolveSettings, run_cpsat, search_ticker
from raptor_cp.problems import LatencyProblem, LatencySolution, Status
from raptor_cp.problems.latency import check_schedule
from raptor_cp.reports.output import format_ns
from raptor_cp.schedule import Schedule
from raptor_cp.targets.base import UNLIMITED_CAPACITY, SchedulingTarget

if TYPE_CHECKING:
    from ortools.sat.python import cp_model

    from raptor_cp.graph import ComputeGraph

DEFAULT_MAX_SIZE = 100_000
"""Default model-size limit (literals plus transfer terms, see the module docstring)."""


@dataclass(frozen=True)
class LatencyModelPlan:
    """What the exact model of one problem looks like, decided before building it.

    ``size`` is exact unless ``too_large`` was detected early, in which case it
    is the part counted so far (already above the limit) and ``size_is_exact``
    is False.
    """

    transfer: str
    """``none``, ``uniform`` or ``pairwise`` (see the module docstring)."""
    size: int
    size_is_exact: bool
    max_size: int
    interchangeable_cores: bool
    capacity_limited: bool
    delay_tables: dict[tuple[int, bool], np.ndarray]
    """``pairwise`` only: per distinct edge (byte count, direct receive), the ``P x P``
    matrix of ``transfer_ns``."""
    uniform_delays: dict[tuple[int, bool], int]
    """``none`` and ``uniform``: per distinct edge (byte count, direct receive), the delay
    between distinct cores."""

    @property
    def too_large(self) -> bool:
        return self.size > self.max_size

    def describe_size(self) -> str:
        """``"N literals"`` (or ``"at least N literals"``) for messages and audit records."""
        return f"{'' if self.size_is_exact else 'at least '}{self.size} literals"

    def edge_delay(self, key: tuple[int, bool]) -> int:
        """The dearest transfer of an edge of ``key`` (`edge_keys`) between two cores."""
        if self.delay_tables:
            return int(self.delay_tables[key].max())
        return self.uniform_delays.get(key, 0)


def edge_keys(graph: ComputeGraph) -> list[tuple[int, bool]]:
    """Per edge, what its transfer price depends on: (bytes, direct receive)."""
    return list(zip(graph.edge_bytes.tolist(), graph.edge_direct.tolist(), strict=True))


def plan_latency_model(
    problem: LatencyProblem, max_size: int = DEFAULT_MAX_SIZE
) -> LatencyModelPlan:
    """Decide the transfer formulation and count the model size of ``problem``.

    Decides per distinct byte count and edge kind (`edge_keys`) whether transfers
    are uniform (one call on a target with `SchedulingTarget.uniform_transfers`,
    else a scan of the core pairs that stops at the first pair that differs),
    stopping early once the instance is known to exceed ``max_size``. ``P x P``
    tables are kept only for a ``pairwise`` model within ``max_size``, so they
    hold at most ``max_size`` entries in all.
    """
    graph, target = problem.graph, problem.target
    cores = target.cores
    capacities = [target.capacity(p) for p in range(cores)]
    capacity_limited = any(c < UNLIMITED_CAPACITY for c in capacities)
    used_weights = {w for weights in graph.task_weights for w in weights}
    size = graph.num_tasks * cores + (len(used_weights) * cores if capacity_limited else 0)
    same_costs = graph.core_cost is None or bool((graph.core_cost == graph.core_cost[:, :1]).all())
    interchangeable = same_costs and len(set(capacities)) == 1

    def plan(
        transfer: str,
        size: int,
        exact: bool,
        tables: dict[tuple[int, bool], np.ndarray] | None = None,
        delays: dict[tuple[int, bool], int] | None = None,
    ) -> LatencyModelPlan:
        return LatencyModelPlan(
            transfer=transfer,
            size=size,
            size_is_exact=exact,
            max_size=max_size,
            interchangeable_cores=interchangeable and transfer != "pairwise",
            capacity_limited=capacity_limited,
            delay_tables=tables or {},
            uniform_delays=delays or {},
        )

    if size > max_size:
        return plan("unknown", size, False)
    if cores == 1 or graph.num_edges == 0:
        return plan("none", size, True)
    keys = sorted(set(edge_keys(graph)))
    delays: dict[tuple[int, bool], int] = {}
    for key in keys:
        delay = _uniform_delay(target, *key)
        if delay is None:
            pairwise_size = size + graph.num_edges * cores * cores
            if pairwise_size > max_size:
                return plan("pairwise", pairwise_size, True)
            tables = {k: _delay_table(target, *k) for k in keys}
            return plan("pairwise", pairwise_size, True, tables=tables)
        delays[key] = delay
    if not any(delays.values()):
        return plan("none", size, True, delays=delays)
    delayed = sum(int(delays[key] > 0) for key in edge_keys(graph))
    return plan("uniform", size + delayed * (cores + 1), True, delays=delays)


def _uniform_delay(target: SchedulingTarget, nbytes: int, direct: bool) -> int | None:
    """The transfer time between any two distinct cores, or None if pairs differ."""
    delay = target.transfer_ns(0, 1, nbytes, direct)
    if target.uniform_transfers:
        return delay
    cores = range(target.cores)
    for p in cores:
        if any(target.transfer_ns(p, q, nbytes, direct) != delay for q in cores if q != p):
            return None
    return delay


def _delay_table(target: SchedulingTarget, nbytes: int, direct: bool) -> np.ndarray:
    cores = range(target.cores)
    return np.array(
        [[target.transfer_ns(p, q, nbytes, direct) for q in cores] for p in cores], np.int64
    )


@dataclass(frozen=True)
class LatencyVars:
    """The CP-SAT variables of one built latency model, keyed by task and core ids."""

    problem: LatencyProblem
    plan: LatencyModelPlan
    start: list[cp_model.IntVar]
    end: list[cp_model.IntVar]
    on: list[list[cp_model.IntVar]]
    """``on[t][p]``: task ``t`` runs on core ``p``."""
    resident: dict[tuple[int, int], cp_model.IntVar]
    makespan: cp_model.IntVar
    topo_rank: np.ndarray


@dataclass(frozen=True)
class CpSatLatencyModel:
    """Exact makespan minimisation with CP-SAT (see the module docstring for the model).

    Parameters
    ----------
    settings:
        Search budget and reproducibility (`raptor_cp.models.solve.SolveSettings`).
    hint_with:
        Registry name of the heuristic whose schedule hints the search when
        `solve` gets no explicit hint; None for no hint.
    max_size:
        Model-size limit above which the instance is refused as too large.
    """

    name: ClassVar[str] = "cpsat"

    settings: SolveSettings = field(default_factory=SolveSettings)
    hint_with: str | None = "peft"
    max_size: int = DEFAULT_MAX_SIZE

    def plan(self, problem: LatencyProblem) -> LatencyModelPlan:
        """The formulation and size this model would use for ``problem``."""
        return plan_latency_model(problem, self.max_size)

    def solve(self, problem: LatencyProblem, hint: Schedule | None = None) -> LatencySolution:
        """Minimise the makespan; ``hint`` (or the ``hint_with`` heuristic's schedule) guides it.

        Inside `raptor_cp.progress.reporting`, the best makespan and the proved
        bound are ticked as the search finds them (``cpsat: best 1.23 ms, bound ...``).

        Returns a solution whose status says what was proved: OPTIMAL, FEASIBLE
        with a bound, NOT_FOUND (budget ran out) or INFEASIBLE (proved). Raises
        `RaptorError` when the instance exceeds ``max_size``.
        """
        began = time.perf_counter()
        settings = self.settings  # validate the settings before any work
        hint_note = "none"
        if hint is None and self.hint_with is not None:
            hint, hint_note = _heuristic_hint(problem, self.hint_with)
        model, variables = self.build(problem)
        hint_note = _add_hint(model, variables, hint) if hint is not None else hint_note
        progress = search_ticker(self.name, format_ns)
        solution = self.extract(run_cpsat(model, settings, progress), variables)
        details = {**solution.details, "hint": hint_note}
        return dataclasses.replace(solution, wall_s=time.perf_counter() - began, details=details)

    def build(self, problem: LatencyProblem) -> tuple[cp_model.CpModel, LatencyVars]:
        """Build the CP-SAT model of ``problem`` and return it with its variables."""
        from ortools.sat.python import cp_model

        plan = self.plan(problem)
        if plan.too_large:
            raise RaptorError(
                f"{problem.graph.name} on {problem.target.name}: exact latency model too large "
                f"({plan.describe_size()} > max_size {self.max_size}); raise max_size or "
                "audit a smaller instance"
            )
        graph, target = problem.graph, problem.target
        cores, tasks = target.cores, graph.num_tasks
        costs = np.array([[graph.cost_on(t, p) for p in range(cores)] for t in range(tasks)])
        costs = costs.reshape(tasks, cores)
        edge_delay = [plan.edge_delay(key) for key in edge_keys(graph)]
        horizon = int(costs.max(axis=1, initial=0).sum()) + sum(edge_delay)
        topo = graph.topological_order.tolist()
        topo_rank = np.empty(tasks, dtype=np.int64)
        topo_rank[topo] = np.arange(tasks)

        model = cp_model.CpModel()
        model.name = f"latency:{graph.name}@{target.name}"
        start = [model.new_int_var(0, horizon, f"start[{t}]") for t in range(tasks)]
        end = [model.new_int_var(0, horizon, f"end[{t}]") for t in range(tasks)]
        on = [[model.new_bool_var(f"on[{t},{p}]") for p in range(cores)] for t in range(tasks)]
        per_core: list[list[cp_model.IntervalVar]] = [[] for _ in range(cores)]
        whole: list[cp_model.IntervalVar] = []
        for t in range(tasks):
            model.add_exactly_one(on[t])
            for p in range(cores):
                per_core[p].append(
                    model.new_optional_fixed_size_interval_var(
                        start[t], int(costs[t, p]), on[t][p], f"run[{t},{p}]"
                    )
                )
            if (costs[t] == costs[t, 0]).all():
                size: cp_model.LinearExprT = int(costs[t, 0])
            else:
                size = model.new_int_var_from_domain(
                    cp_model.Domain.from_values(sorted(set(costs[t].tolist()))), f"cost[{t}]"
                )
                model.add(size == sum(int(costs[t, p]) * on[t][p] for p in range(cores)))
            whole.append(model.new_interval_var(start[t], size, end[t], f"task[{t}]"))
        for p in range(cores):
            model.add_no_overlap(per_core[p])
        model.add_cumulative(whole, [1] * tasks, cores)

        self._add_precedences(model, plan, problem, start, end, on)
        resident = self._add_capacity(model, problem, on) if plan.capacity_limited else {}
        if plan.interchangeable_cores:
            for k, t in enumerate(topo[: cores - 1]):
                for p in range(k + 1, cores):
                    model.add(on[t][p] == 0)

        trivial = lower_bounds(graph, target).makespan_ns
        makespan = model.new_int_var(min(trivial, horizon), horizon, "makespan")
        if end:  # CP-SAT's max of nothing is infeasible; an empty graph has makespan 0
            model.add_max_equality(makespan, end)
        model.minimize(makespan)
        return model, LatencyVars(problem, plan, start, end, on, resident, makespan, topo_rank)

    @staticmethod
    def _add_precedences(
        model: cp_model.CpModel,
        plan: LatencyModelPlan,
        problem: LatencyProblem,
        start: list[cp_model.IntVar],
        end: list[cp_model.IntVar],
        on: list[list[cp_model.IntVar]],
    ) -> None:
        """Precedences with the transfer formulation the plan chose."""
        graph = problem.graph
        cores = problem.target.cores
        edges = zip(graph.edge_src.tolist(), graph.edge_dst.tolist(), edge_keys(graph), strict=True)
        for e, (t, s, key) in enumerate(edges):
            model.add(start[s] >= end[t])
            if plan.transfer == "uniform" and plan.uniform_delays[key] > 0:
                delay = plan.uniform_delays[key]
                same = model.new_bool_var(f"same[{e}]")
                for p in range(cores):
                    model.add_bool_or([~same, ~on[t][p], on[s][p]])
                model.add(start[s] >= end[t] + delay - delay * same)
            elif plan.transfer == "pairwise":
                table = plan.delay_tables[key]
                for p in range(cores):
                    if table[p].any():
                        delay = sum(int(table[p, q]) * on[s][q] for q in range(cores))
                        model.add(start[s] >= end[t] + delay).only_enforce_if(on[t][p])

    @staticmethod
    def _add_capacity(
        model: cp_model.CpModel, problem: LatencyProblem, on: list[list[cp_model.IntVar]]
    ) -> dict[tuple[int, int], cp_model.IntVar]:
        """Resident-weight literals and the per-core capacity constraints."""
        graph, target = problem.graph, problem.target
        users: dict[int, list[int]] = {}
        for t, weights in enumerate(graph.task_weights):
            for w in sorted(set(weights)):
                users.setdefault(w, []).append(t)
        resident: dict[tuple[int, int], cp_model.IntVar] = {}
        for p in range(target.cores):
            capacity = target.capacity(p)
            if capacity >= UNLIMITED_CAPACITY:
                continue
            for w in sorted(users):
                resident[w, p] = model.new_bool_var(f"resident[{w},{p}]")
                for t in users[w]:
                    model.add_implication(on[t][p], resident[w, p])
            load = sum(int(graph.weight_size[w]) * resident[w, p] for w in sorted(users))
            model.add(load <= capacity)
        return resident

    def extract(self, run: CpSatRun, variables: LatencyVars) -> LatencySolution:
        """Turn a finished run into a checked, evaluated `LatencySolution`.

        The schedule orders each core's tasks by (start, end, topological rank),
        which keeps zero-duration tasks behind their same-core predecessors. It
        must pass `check`, and `evaluate` must reproduce the CP-SAT objective
        (or improve on it by left-shifting when the run was only FEASIBLE);
        anything else is a model bug and raises ``AssertionError``.
        """
        problem = variables.problem
        trivial = lower_bounds(problem.graph, problem.target).makespan_ns
        details: dict[str, object] = {
            "backend_status": run.backend_status,
            "cpsat_objective": run.objective,
            "cpsat_bound": run.bound,
            "deterministic_time": run.deterministic_time,
            "wall_capped": run.wall_capped,
            "transfer_model": variables.plan.transfer,
            "model_size": variables.plan.size,
            "symmetry_breaking": variables.plan.interchangeable_cores,
        }
        bound = None if run.bound is None else max(run.bound, trivial)
        if not run.has_solution:
            return LatencySolution(
                None,
                status=run.status,
                solver=self.name,
                bound=bound,
                wall_s=run.wall_s,
                details=details,
            )
        solver = run.solver
        cores = problem.target.cores
        core = [
            next(p for p in range(cores) if solver.boolean_value(variables.on[t][p]))
            for t in range(problem.graph.num_tasks)
        ]
        start = [solver.value(v) for v in variables.start]
        end = [solver.value(v) for v in variables.end]
        orders: list[list[int]] = [[] for _ in range(cores)]
        for t in sorted(range(len(core)), key=lambda t: (start[t], end[t], variables.topo_rank[t])):
            orders[core[t]].append(t)
        schedule = Schedule(tuple(tuple(o) for o in orders), np.array(start), self.name)
        check_schedule(problem, schedule)
        makespan = evaluate(problem, schedule).makespan_ns
        assert run.objective is not None and bound is not None
        if makespan > run.objective or (run.status == Status.OPTIMAL and makespan != run.objective):
            raise AssertionError(
                f"cpsat latency model disagrees with evaluate on {problem.graph.name}: "
                f"CP-SAT objective {run.objective} ns, evaluated {makespan} ns"
            )
        if bound > makespan:
            raise AssertionError(
                f"cpsat latency on {problem.graph.name}: bound {bound} ns above a valid "
                f"schedule of {makespan} ns"
            )
        status = Status.OPTIMAL if makespan == bound else Status.FEASIBLE
        return LatencySolution(
            schedule,
            status=status,
            solver=self.name,
            objective=makespan,
            bound=bound,
            wall_s=run.wall_s,
            details=details,
        )


def _heuristic_hint(problem: LatencyProblem, solver_name: str) -> tuple[Schedule | None, str]:
    """The schedule of registry solver ``solver_name``, or None with the reason."""
    from raptor_cp.solvers import solve

    try:
        solution = solve(problem, solver_name)
    except NotFoundWithinBudgetError as error:
        return None, f"{solver_name} found none: {error}"
    if solution.schedule is None:
        return None, f"{solver_name} found none: {solution.status.value}"
    return solution.schedule, solver_name


def _add_hint(model: cp_model.CpModel, variables: LatencyVars, hint: Schedule) -> str:
    """Hint core choices, starts and residency from ``hint``; returns how it went.

    A hint that fails `check` is not used (the note says why). Cores are
    relabelled by first appearance in topological order when symmetry breaking
    is on, so the hint satisfies it.
    """
    problem = variables.problem
    try:
        check_schedule(problem, hint)
    except ScheduleViolationError as error:
        return f"{hint.scheduler} rejected: {error}"
    timing = evaluate(problem, hint)
    core = hint.core.tolist()
    cores = problem.target.cores
    label = list(range(cores))
    if variables.plan.interchangeable_cores:
        first_seen: list[int] = []
        for t in problem.graph.topological_order.tolist():
            if core[t] not in first_seen:
                first_seen.append(core[t])
        unused = [p for p in range(cores) if p not in first_seen]
        for new, old in enumerate(first_seen + unused):
            label[old] = new
    for t, old in enumerate(core):
        model.add_hint(variables.start[t], int(timing.start_ns[t]))
        model.add_hint(variables.end[t], int(timing.finish_ns[t]))
        for p in range(cores):
            model.add_hint(variables.on[t][p], p == label[old])
    placed = {(w, label[p]) for t, p in enumerate(core) for w in problem.graph.task_weights[t]}
    for key, literal in variables.resident.items():
        model.add_hint(literal, key in placed)
    model.add_hint(variables.makespan, int(timing.makespan_ns))
    return hint.scheduler
