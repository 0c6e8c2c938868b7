"""Tests of the CP-SAT latency model against brute force, the heuristics and the checker."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from raptor_cp.bounds import lower_bounds
from raptor_cp.errors import NotFoundWithinBudgetError, RaptorError
from raptor_cp.evaluation import evaluate
from raptor_cp.graph import ComputeGraph
from raptor_cp.models.latency import CpSatLatencyModel, plan_latency_model
from raptor_cp.models.solve import SolveSettings
from raptor_cp.problems import LatencyProblem, LatencySolution, Status
from raptor_cp.problems.latency import check_schedule
from raptor_cp.schedule import Schedule
from raptor_cp.solvers import make_solver, solve
from raptor_cp.targets.generic import GenericTarget
from raptor_cp.workload.topcuoglu import read_topcuoglu

TOPCUOGLU = Path(__file__).parent / "data" / "cpsat_topcuoglu"
FAST = {"settings": SolveSettings(10.0, 2), "hint_with": None}


@dataclass(frozen=True)
class SlotsTarget(GenericTarget):
    """Generic cores with a finite resident-weight capacity per core."""

    slots: tuple[int, ...] = ()

    def capacity(self, core: int) -> int:
        return self.slots[core]


@dataclass(frozen=True)
class LineTarget(GenericTarget):
    """Cores on a line; a transfer costs ``bytes * hops`` (depends on the core pair)."""

    def transfer_ns(self, src: int, dst: int, nbytes: int, direct: bool = False) -> int:
        return nbytes * abs(src - dst)

    def mean_transfer_ns(self, nbytes: int, direct: bool = False) -> int:
        pairs = [(a, b) for a in range(self.num_cores) for b in range(self.num_cores) if a != b]
        return math.ceil(nbytes * sum(abs(a - b) for a, b in pairs) / max(len(pairs), 1))


def random_graph(seed: int, tasks: int, cores: int, heterogeneous: bool = False) -> ComputeGraph:
    """A random DAG (edge i->j, i<j, with probability 0.35) with costs 1..9, bytes 1..6."""
    rng = np.random.default_rng(seed)
    pairs = [(i, j) for i in range(tasks) for j in range(i + 1, tasks) if rng.random() < 0.35]
    cost = rng.integers(1, 10, tasks)
    return ComputeGraph(
        names=tuple(f"t{i}" for i in range(tasks)),
        cost=cost,
        edge_src=[i for i, _ in pairs],
        edge_dst=[j for _, j in pairs],
        edge_bytes=rng.integers(1, 7, len(pairs)),
        core_cost=rng.integers(1, 10, (tasks, cores)) if heterogeneous else None,
        name=f"random{seed}",
    )


def independent_tasks(costs: list[int], weights: list[int], sizes: list[int]) -> ComputeGraph:
    """Independent tasks, task ``t`` needing resident weight ``weights[t]``."""
    return ComputeGraph(
        names=tuple(f"t{i}" for i in range(len(costs))),
        cost=costs,
        edge_src=[],
        edge_dst=[],
        edge_bytes=[],
        task_weights=tuple((w,) for w in weights),
        weight_size=sizes,
        weight_names=tuple(f"w{i}" for i in range(len(sizes))),
        name="independent",
    )


def weighted_graph(seed: int, tasks: int) -> ComputeGraph:
    """`random_graph` whose tasks each need one of four weights of 3, 2, 2 and 1 slots."""
    graph = random_graph(seed, tasks, 2)
    weights = np.random.default_rng(seed).integers(0, 4, tasks).tolist()
    return dataclasses.replace(
        graph,
        task_weights=tuple((w,) for w in weights),
        weight_size=[3, 2, 2, 1],
        weight_names=("w0", "w1", "w2", "w3"),
    )


# Seeds chosen so that each case is not settled by the trivial lower bound alone.
SMALL = {
    # optimum 17 > lower bound 16
    "homogeneous-free-comm": lambda: LatencyProblem(random_graph(29, 7, 2), GenericTarget(2)),
    # optimum 34 > lower bound 28
    "uniform-comm": lambda: LatencyProblem(random_graph(2, 7, 2), GenericTarget(2, 2)),
    # optimum 19 > lower bound 15
    "heterogeneous": lambda: LatencyProblem(random_graph(3, 7, 3, True), GenericTarget(3, 1)),
    # optimum 19 > lower bound 16
    "pairwise-line": lambda: LatencyProblem(random_graph(13, 6, 3), LineTarget(3)),
    # optimum 22, 18 without the capacity limit
    "capacity": lambda: LatencyProblem(weighted_graph(21, 7), SlotsTarget(2, slots=(4, 4))),
}


def brute_force_makespan(problem: LatencyProblem) -> int | None:
    """Exact optimum by enumerating every list schedule (None if capacity admits none).

    Appending tasks in every dependency-respecting global order to every core,
    each as early as its core and data allow, reaches every left-shifted
    schedule, and some left-shifted schedule is optimal.
    """
    graph, target = problem.graph, problem.target
    n, cores = graph.num_tasks, target.cores
    preds = [
        [(int(graph.edge_src[e]), int(graph.edge_bytes[e])) for e in graph.predecessor_edges(t)]
        for t in range(n)
    ]
    size = graph.weight_size.tolist()
    core, finish, free = [-1] * n, [0] * n, [0] * cores
    resident: list[set[int]] = [set() for _ in range(cores)]
    best: list[int | None] = [None]

    def search(placed: int) -> None:
        if placed == n:
            best[0] = max(finish)
            return
        for t in range(n):
            if core[t] >= 0 or any(core[s] < 0 for s, _ in preds[t]):
                continue
            for p in range(cores):
                new = set(graph.task_weights[t]) - resident[p]
                load = sum(size[w] for w in resident[p] | new)
                if load > target.capacity(p):
                    continue
                ready = max(
                    (finish[s] + target.transfer_ns(core[s], p, b) for s, b in preds[t]), default=0
                )
                end = max(ready, free[p]) + graph.cost_on(t, p)
                if best[0] is not None and end >= best[0]:
                    continue
                core[t], finish[t], before = p, end, free[p]
                free[p] = end
                resident[p] |= new
                search(placed + 1)
                resident[p] -= new
                core[t], finish[t], free[p] = -1, 0, before

    search(0)
    return best[0]


def assert_valid_optimum(problem: LatencyProblem, solution: LatencySolution) -> None:
    """OPTIMAL, passes check, and evaluate reproduces the CP-SAT objective."""
    assert solution.status == Status.OPTIMAL
    assert solution.schedule is not None
    check_schedule(problem, solution.schedule)
    makespan = evaluate(problem, solution.schedule).makespan_ns
    assert makespan == solution.objective == solution.details["cpsat_objective"]
    assert solution.bound == solution.objective


@pytest.mark.parametrize("instance", sorted(SMALL))
def test_cpsat_optimum_equals_brute_force(instance: str) -> None:
    problem = SMALL[instance]()
    solution = CpSatLatencyModel(**FAST).solve(problem)
    assert_valid_optimum(problem, solution)
    assert solution.objective == brute_force_makespan(problem)


@pytest.mark.parametrize("heuristic", ["heft", "peft"])
@pytest.mark.parametrize("instance", sorted(SMALL))
def test_heuristic_is_no_better_than_cpsat_optimum(heuristic: str, instance: str) -> None:
    problem = SMALL[instance]()
    found = solve(problem, heuristic)
    assert found.schedule is not None
    check_schedule(problem, found.schedule)
    optimum = CpSatLatencyModel(**FAST).solve(problem, hint=found.schedule)
    assert_valid_optimum(problem, optimum)
    lower = lower_bounds(problem.graph, problem.target).makespan_ns
    assert evaluate(problem, found.schedule).makespan_ns >= optimum.objective >= lower


def test_topcuoglu_optimum_is_73_below_heft_80() -> None:
    graph, target = read_topcuoglu(TOPCUOGLU)
    problem = LatencyProblem(graph, target)
    heft = solve(problem, "heft")
    solution = CpSatLatencyModel(**FAST).solve(problem, hint=heft.schedule)
    assert_valid_optimum(problem, solution)
    assert (heft.objective, solution.objective) == (80, 73)
    assert solution.details["transfer_model"] == "uniform"
    assert solution.details["hint"] == "heft"


def test_capacity_raises_the_optimum() -> None:
    # One core must hold t0's 4-slot weight alone, so t1..t3 share the other core.
    graph = independent_tasks([10, 10, 10, 10], [0, 1, 2, 3], [4, 2, 1, 1])
    free = CpSatLatencyModel(**FAST).solve(LatencyProblem(graph, GenericTarget(2)))
    capped = LatencyProblem(graph, SlotsTarget(2, slots=(4, 4)))
    limited = CpSatLatencyModel(**FAST).solve(capped)
    assert_valid_optimum(capped, limited)
    assert (free.objective, limited.objective) == (20, 30)
    assert sorted(len(order) for order in limited.schedule.core_order) == [1, 3]


def test_capacity_infeasible_instance_is_proved_infeasible() -> None:
    # Three distinct 3-slot weights, two cores of 5 slots: the 9 slots fit the fleet's
    # 10, but every core holds only one weight.
    problem = LatencyProblem(
        independent_tasks([1, 1, 1], [0, 1, 2], [3, 3, 3]), SlotsTarget(2, slots=(5, 5))
    )
    solution = CpSatLatencyModel(**FAST).solve(problem)
    assert (solution.status, solution.schedule, solution.objective) == (
        Status.INFEASIBLE,
        None,
        None,
    )
    with pytest.raises(NotFoundWithinBudgetError):
        solve(problem, "heft")


def test_two_deterministic_runs_give_the_same_schedule() -> None:
    # Unhinted and stopped by the budget: the schedule is CP-SAT's own search result.
    problem = LatencyProblem(random_graph(1, 40, 4), GenericTarget(4, 1))
    model = CpSatLatencyModel(settings=SolveSettings(0.08, 2), hint_with=None)
    first, second = model.solve(problem), model.solve(problem)
    assert first.schedule is not None and second.schedule is not None
    assert (first.status, first.objective, first.bound) == (
        second.status,
        second.objective,
        second.bound,
    )
    assert first.schedule.core_order == second.schedule.core_order
    assert first.schedule.start_ns.tolist() == second.schedule.start_ns.tolist()


def test_budget_cut_run_is_feasible_with_a_gap() -> None:
    # Pinned on OR-Tools 9.15 with a deterministic budget: 121 ns found, 114 ns proved.
    problem = LatencyProblem(random_graph(1, 40, 4), GenericTarget(4, 1))
    solution = CpSatLatencyModel(settings=SolveSettings(0.08, 2), hint_with=None).solve(problem)
    assert solution.status == Status.FEASIBLE
    check_schedule(problem, solution.schedule)
    trivial = lower_bounds(problem.graph, problem.target).makespan_ns
    assert solution.objective > solution.bound >= trivial
    assert 0 < solution.gap < 1


def test_budget_cut_run_without_a_schedule_is_not_found() -> None:
    # Pinned on OR-Tools 9.15: no schedule within 0.08 deterministic seconds, unhinted.
    problem = LatencyProblem(random_graph(4, 40, 4), GenericTarget(4, 1))
    solution = CpSatLatencyModel(settings=SolveSettings(0.08, 2), hint_with=None).solve(problem)
    assert (solution.status, solution.schedule, solution.objective) == (
        Status.NOT_FOUND,
        None,
        None,
    )
    assert solution.bound >= lower_bounds(problem.graph, problem.target).makespan_ns


def test_too_large_instance_is_refused_before_tabulating_transfers() -> None:
    problem = LatencyProblem(random_graph(1, 7, 3), GenericTarget(3))
    with pytest.raises(
        RaptorError,
        match=r"^random1 on generic:3: exact latency model too large \(at least 21 literals > "
        r"max_size 20\); raise max_size or audit a smaller instance$",
    ):
        CpSatLatencyModel(max_size=20, **FAST).solve(problem)


def test_pairwise_transfers_count_p_squared_terms_per_edge() -> None:
    problem = LatencyProblem(random_graph(4, 6, 3), LineTarget(3))
    plan = plan_latency_model(problem, max_size=18)
    assert (plan.size, plan.too_large) == (18 + 9 * problem.graph.num_edges, True)
    assert plan.describe_size() == f"{plan.size} literals"


@pytest.mark.parametrize(
    ("target", "transfer", "interchangeable"),
    [
        (GenericTarget(3), "none", True),
        (GenericTarget(3, 2), "uniform", True),
        (LineTarget(3), "pairwise", False),
        (SlotsTarget(3, slots=(4, 4, 5)), "none", False),
    ],
)
def test_plan_picks_the_transfer_formulation(
    target: GenericTarget, transfer: str, interchangeable: bool
) -> None:
    plan = plan_latency_model(LatencyProblem(random_graph(1, 7, 3), target))
    assert (plan.transfer, plan.interchangeable_cores) == (transfer, interchangeable)


def test_heterogeneous_costs_disable_symmetry_breaking() -> None:
    plan = plan_latency_model(LatencyProblem(random_graph(3, 7, 3, True), GenericTarget(3)))
    assert not plan.interchangeable_cores


def test_invalid_hint_is_not_used() -> None:
    problem = LatencyProblem(random_graph(1, 7, 3), GenericTarget(3))
    everything_on_core_0_twice = Schedule(
        (tuple(range(7)), tuple(range(7)), ()), np.zeros(7, dtype=np.int64), "broken"
    )
    solution = CpSatLatencyModel(**FAST).solve(problem, hint=everything_on_core_0_twice)
    assert (
        solution.details["hint"] == "broken rejected: task 't0' is scheduled 2 times (cores 0, 1)"
    )
    assert_valid_optimum(problem, solution)


def test_hint_with_runs_the_named_heuristic() -> None:
    problem = LatencyProblem(random_graph(2, 7, 2), GenericTarget(2, 2))
    settings = {**FAST, "hint_with": "peft"}
    assert CpSatLatencyModel(**settings).solve(problem).details["hint"] == "peft"


def test_empty_graph_has_makespan_zero() -> None:
    graph = ComputeGraph(names=(), cost=[], edge_src=[], edge_dst=[], edge_bytes=[], name="empty")
    solution = CpSatLatencyModel(**FAST).solve(LatencyProblem(graph, GenericTarget(2)))
    assert (solution.status, solution.objective, solution.schedule.core_order) == (
        Status.OPTIMAL,
        0,
        ((), ()),
    )


def test_registry_builds_the_cpsat_model() -> None:
    model = make_solver(LatencyProblem, "cpsat", settings=SolveSettings(1.0, 1))
    assert model == CpSatLatencyModel(settings=SolveSettings(1.0, 1))
