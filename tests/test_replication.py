"""Weight-replication plan and the list schedulers started from it."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from latency_strategies import SlotTarget, latency_problems

from raptor_cp.errors import NotFoundWithinBudgetError
from raptor_cp.graph import ComputeGraph
from raptor_cp.heuristics.replication import plan_replication
from raptor_cp.problems import LatencyProblem
from raptor_cp.problems.latency import check_schedule, resident_slots
from raptor_cp.solvers import solve
from raptor_cp.targets.generic import GenericTarget


def heavy_weight_graph() -> ComputeGraph:
    """Eight 10 ns tasks share 1-slot weight 0; four 1 ns tasks each hold a 2-slot weight."""
    empty = np.array([], dtype=np.int64)
    return ComputeGraph(
        names=tuple(f"t{i}" for i in range(12)),
        cost=np.array([10] * 8 + [1] * 4),
        edge_src=empty,
        edge_dst=empty,
        edge_bytes=empty,
        task_weights=tuple([(0,)] * 8 + [(1,), (2,), (3,), (4,)]),
        weight_size=np.array([1, 2, 2, 2, 2]),
    )


def test_replicas_spread_a_heavy_weight_that_reuse_preference_concentrates() -> None:
    # 9 of 12 slots are distinct weights, so the seeds' reservations prefer reuse and
    # run all eight weight-0 tasks on the one core that holds it.
    problem = LatencyProblem(heavy_weight_graph(), SlotTarget(4, 0, 3))
    seeds = solve(problem, "peft")
    replicated = solve(problem, "peft-replicas")
    assert replicated.schedule is not None
    check_schedule(problem, replicated.schedule)
    assert seeds.objective == 81
    assert replicated.objective == 21
    assert replicated.details["replicas"] == 3


def test_plan_gives_the_heaviest_weight_every_free_slot() -> None:
    plan = plan_replication(heavy_weight_graph(), SlotTarget(4, 0, 3))
    assert plan is not None
    assert plan.first_copies == "balanced"
    assert plan.copies.tolist() == [4, 1, 1, 1, 1]


def test_no_plan_when_capacity_is_unlimited() -> None:
    assert plan_replication(heavy_weight_graph(), GenericTarget(4)) is None


@settings(max_examples=60, deadline=None)
@given(latency_problems())
def test_plan_fits_every_core_and_places_every_used_weight(problem: LatencyProblem) -> None:
    graph, target = problem.graph, problem.target
    plan = plan_replication(graph, target)
    if plan is None:
        return
    capacity = np.array([target.capacity(p) for p in range(target.cores)])
    assert (graph.weight_size @ plan.reserved <= capacity).all()
    users = np.zeros(graph.num_weights, dtype=np.int64)
    for weights in graph.task_weights:
        users[list(set(weights))] += 1
    assert ((plan.copies >= 1) == (users > 0)).all()
    assert (plan.copies <= np.minimum(users, target.cores)).all()


@settings(max_examples=40, deadline=None)
@given(latency_problems())
def test_replicated_schedulers_pass_check(problem: LatencyProblem) -> None:
    for name in ("peft-replicas", "heft-replicas"):
        try:
            solution = solve(problem, name)
        except NotFoundWithinBudgetError:  # HEFT has no capacity recovery
            assert name == "heft-replicas"
            continue
        assert solution.schedule is not None
        check_schedule(problem, solution.schedule)
        capacity = [
            target_capacity
            for target_capacity in map(problem.target.capacity, range(problem.target.cores))
        ]
        assert (resident_slots(problem, solution.schedule.core) <= capacity).all()
