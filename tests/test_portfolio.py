"""The ``auto`` portfolio: never longer than a member, ties to PEFT, records who won."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from latency_strategies import SlotTarget, latency_problems

from raptor_cp.errors import NotFoundWithinBudgetError
from raptor_cp.graph import ComputeGraph
from raptor_cp.heuristics.portfolio import DEFAULT_MEMBERS, PortfolioScheduler
from raptor_cp.problems import LatencyProblem, Status
from raptor_cp.problems.latency import check_schedule
from raptor_cp.solvers import solve
from raptor_cp.targets.generic import GenericTarget


def independent(costs: list[int]) -> ComputeGraph:
    n = len(costs)
    empty = np.array([], dtype=np.int64)
    return ComputeGraph(tuple(f"t{i}" for i in range(n)), np.array(costs), empty, empty, empty)


@settings(max_examples=60, deadline=None)
@given(latency_problems())
def test_auto_is_never_longer_than_any_member(problem: LatencyProblem) -> None:
    alone: dict[str, int] = {}
    for member in DEFAULT_MEMBERS:
        try:
            objective = solve(problem, member).objective
        except NotFoundWithinBudgetError:
            continue
        assert objective is not None
        alone[member] = objective
    if not alone:  # auto fails exactly when every member does
        with pytest.raises(NotFoundWithinBudgetError):
            PortfolioScheduler().solve(problem)
        return
    auto = PortfolioScheduler().solve(problem)
    assert auto.schedule is not None and auto.objective is not None
    check_schedule(problem, auto.schedule)
    assert auto.objective <= min(alone.values())


def test_ties_go_to_peft_the_first_member() -> None:
    problem = LatencyProblem(independent([5, 5]), GenericTarget(2))
    auto = PortfolioScheduler().solve(problem)
    assert auto.details["winner"] == "peft"
    assert auto.solver == "auto"


def test_a_member_meeting_the_bound_ends_the_run_as_optimal() -> None:
    problem = LatencyProblem(independent([5, 5]), GenericTarget(2))
    auto = PortfolioScheduler().solve(problem)
    assert auto.status == Status.OPTIMAL
    assert auto.details["members"]["heft"] == "skipped: peft met the lower bound"


def test_replica_members_are_skipped_on_unlimited_capacity() -> None:
    problem = LatencyProblem(independent([3, 5, 4]), GenericTarget(2))
    members = (
        PortfolioScheduler(members=("heft", "peft-replicas")).solve(problem).details["members"]
    )
    assert members == {"heft": 7, "peft-replicas": "skipped: weight capacity unlimited"}


def test_the_winner_is_the_shortest_member() -> None:
    # HEFT puts the long task first; PEFT's rank leaves out the task's own cost.
    problem = LatencyProblem(independent([2, 2, 4]), GenericTarget(2))
    auto = PortfolioScheduler(members=("peft", "heft")).solve(problem)
    members = auto.details["members"]
    assert auto.objective == min(members.values())
    assert members[auto.details["winner"]] == auto.objective


def test_heuristic_meeting_the_analytic_bound_reports_optimal() -> None:
    problem = LatencyProblem(independent([4, 4, 4, 4]), GenericTarget(2))
    for name in ("peft", "heft", "cpop"):
        solution = solve(problem, name)
        assert (solution.objective, solution.bound, solution.status) == (8, 8, Status.OPTIMAL)


def test_heuristic_above_the_bound_stays_feasible() -> None:
    problem = LatencyProblem(independent([3, 3, 2, 2, 2]), GenericTarget(2))
    solution = solve(problem, "heft")
    assert (solution.objective, solution.bound, solution.status) == (7, 6, Status.FEASIBLE)


def test_no_member_finding_a_schedule_reports_every_reason() -> None:
    # Three 2-slot weights cannot share two 3-slot cores: HEFT (no recovery) finds nothing.
    graph = ComputeGraph(
        ("a", "b", "c"),
        np.array([1, 1, 1]),
        np.array([], dtype=np.int64),
        np.array([], dtype=np.int64),
        np.array([], dtype=np.int64),
        task_weights=((0,), (1,), (2,)),
        weight_size=np.array([2, 2, 2]),
    )
    problem = LatencyProblem(graph, SlotTarget(2, 0, 3))
    with pytest.raises(
        NotFoundWithinBudgetError,
        match=r"^auto: no member found a schedule \(heft: not found: heft: no core has room",
    ):
        PortfolioScheduler(members=("heft",)).solve(problem)
