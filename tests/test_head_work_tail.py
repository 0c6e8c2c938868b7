"""The head-work-tail makespan bound: valid, and stronger than its two parts where work waits."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from latency_strategies import latency_problems

from raptor_cp.bounds import head_work_tail_ns, lower_bounds
from raptor_cp.graph import ComputeGraph
from raptor_cp.problems import LatencyProblem
from raptor_cp.solvers import solve
from raptor_cp.targets.generic import GenericTarget


def test_work_that_waits_for_a_long_task_raises_the_bound() -> None:
    # A (4 ns) feeds four 2 ns tasks on 2 cores: critical path 6, work 12/2 = 6, optimum 8.
    graph = ComputeGraph(
        tuple("abcde"),
        np.array([4, 2, 2, 2, 2]),
        np.array([0, 0, 0, 0]),
        np.array([1, 2, 3, 4]),
        np.zeros(4, dtype=np.int64),
    )
    bounds = lower_bounds(graph, GenericTarget(2))
    assert (bounds.critical_path_ns, bounds.work_per_core_ns) == (6, 6)
    assert bounds.head_work_tail_ns == bounds.makespan_ns == 8
    problem = LatencyProblem(graph, GenericTarget(2))
    assert solve(problem, "heft").objective == 8


@settings(max_examples=80, deadline=None)
@given(latency_problems(max_tasks=12, weights=False))
def test_bound_never_exceeds_a_schedule(problem: LatencyProblem) -> None:
    solution = solve(problem, "auto")
    assert solution.objective is not None
    assert head_work_tail_ns(problem.graph, problem.target.cores) <= solution.objective
