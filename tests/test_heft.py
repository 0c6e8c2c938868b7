"""Tests of the HEFT baseline: the Topcuoglu 2002 example, validity, capacity, bounds."""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from raptor_cp.bounds import lower_bounds
from raptor_cp.errors import NotFoundWithinBudgetError
from raptor_cp.evaluation import evaluate
from raptor_cp.graph import ComputeGraph
from raptor_cp.heuristics.heft import HeftScheduler, heft_schedule, upward_rank
from raptor_cp.problems import LatencyProblem, Status
from raptor_cp.problems.latency import check_schedule
from raptor_cp.solvers import solve
from raptor_cp.targets.generic import GenericTarget
from raptor_cp.workload.topcuoglu import read_topcuoglu

TOPCUOGLU = Path(__file__).parent / "data" / "topcuoglu"


@dataclass(frozen=True)
class SmallCoresTarget(GenericTarget):
    """A generic target whose cores hold ``slots`` resident-weight slots each."""

    slots: int = 1

    def capacity(self, core: int) -> int:
        return self.slots


def reference(quantity: str) -> dict[str, str]:
    with (TOPCUOGLU / "reference_values.csv").open(newline="") as handle:
        return {
            row["task_or_scope"]: row["value"]
            for row in csv.DictReader(handle)
            if row["quantity"] == quantity
        }


def topcuoglu_problem() -> LatencyProblem:
    return LatencyProblem(*read_topcuoglu(TOPCUOGLU))


def random_layered_problem(
    seed: int, tasks: int = 60, width: int = 6, cores: int = 4, ns_per_byte: int = 1
) -> LatencyProblem:
    """A layered DAG: each task after the first layer reads 1-3 tasks of the layer above.

    Odd seeds get heterogeneous per-core costs; some tasks cost 0 (like views).
    """
    rng = np.random.default_rng(seed)
    src: list[int] = []
    dst: list[int] = []
    for task in range(width, tasks):
        above = (task // width - 1) * width
        for pred in sorted(set(rng.integers(above, above + width, size=3).tolist())):
            src.append(pred)
            dst.append(task)
    core_cost = rng.integers(0, 50, size=(tasks, cores)) if seed % 2 else None
    graph = ComputeGraph(
        names=tuple(f"t{i}" for i in range(tasks)),
        cost=rng.integers(0, 50, size=tasks),
        edge_src=src,
        edge_dst=dst,
        edge_bytes=rng.integers(0, 40, size=len(src)),
        core_cost=core_cost,
        name=f"layered{seed}",
    )
    return LatencyProblem(graph, GenericTarget(cores, ns_per_byte=ns_per_byte))


def test_topcuoglu_makespan_is_80() -> None:
    solution = HeftScheduler().solve(topcuoglu_problem())
    assert solution.objective == int(reference("heft_makespan")["all"]) == 80


def test_topcuoglu_schedule_matches_the_paper() -> None:
    problem = topcuoglu_problem()
    schedule = heft_schedule(problem)
    finish = evaluate(problem, schedule).finish_ns
    for name, text in reference("heft_schedule").items():
        core, begin, end = map(int, re.fullmatch(r"P(\d+) \[(\d+),(\d+)\]", text).groups())
        task = problem.graph.names.index(name)
        assert (int(schedule.core[task]), int(schedule.start_ns[task]), int(finish[task])) == (
            core,
            begin,
            end,
        ), name


def test_topcuoglu_upward_ranks_match_the_paper() -> None:
    problem = topcuoglu_problem()
    ranks = upward_rank(problem) / problem.target.cores
    for name, value in reference("rank_u").items():
        assert ranks[problem.graph.names.index(name)] == pytest.approx(float(value), abs=0.01)


def test_solution_reports_status_bound_and_solver() -> None:
    problem = topcuoglu_problem()
    solution = solve(problem, "heft")
    assert solution.status is Status.FEASIBLE
    assert solution.solver == "heft"
    assert solution.schedule.scheduler == "heft"
    assert solution.bound == lower_bounds(problem.graph, problem.target).makespan_ns
    assert solution.wall_s > 0


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("ns_per_byte", [0, 1])
def test_schedule_passes_check_and_evaluate_matches_estimate(seed: int, ns_per_byte: int) -> None:
    problem = random_layered_problem(seed, ns_per_byte=ns_per_byte)
    solution = HeftScheduler().solve(problem)
    check_schedule(problem, solution.schedule)
    evaluation = evaluate(problem, solution.schedule)
    assert evaluation.start_ns.tolist() == solution.schedule.start_ns.tolist()
    assert solution.objective == evaluation.makespan_ns


@pytest.mark.parametrize("seed", range(8))
def test_makespan_is_at_least_the_lower_bound(seed: int) -> None:
    problem = random_layered_problem(seed, tasks=80, width=10, cores=3)
    solution = HeftScheduler().solve(problem)
    assert solution.objective >= solution.bound > 0


def test_insertion_fills_an_idle_gap() -> None:
    # a (fast on core 0) -> b (fast on core 1) leaves core 1 idle over [0, 15) while
    # a's 5 bytes travel; c, listed last, fits that gap instead of following b.
    graph = ComputeGraph(
        names=("a", "b", "c"),
        cost=[10, 1, 3],
        edge_src=[0],
        edge_dst=[1],
        edge_bytes=[5],
        core_cost=[[10, 100], [100, 1], [3, 3]],
    )
    schedule = heft_schedule(LatencyProblem(graph, GenericTarget(2, ns_per_byte=1)))
    assert schedule.core_order == ((0,), (2, 1))
    assert schedule.start_ns.tolist() == [0, 15, 0]


def test_equal_finish_goes_to_the_lowest_core() -> None:
    graph = ComputeGraph(names=("solo",), cost=[4], edge_src=[], edge_dst=[], edge_bytes=[])
    schedule = heft_schedule(LatencyProblem(graph, GenericTarget(3)))
    assert schedule.core_order == ((0,), (), ())


def test_zero_cost_successor_with_equal_rank_waits_for_its_predecessor() -> None:
    # view (id 0) depends on producer (id 1) with zero cost and free transfer: equal ranks,
    # and the smaller id must still not be listed before its predecessor.
    graph = ComputeGraph(
        names=("view", "producer"), cost=[0, 0], edge_src=[1], edge_dst=[0], edge_bytes=[0]
    )
    problem = LatencyProblem(graph, GenericTarget(2))
    assert upward_rank(problem).tolist() == [0, 0]
    check_schedule(problem, heft_schedule(problem))


def test_capacity_forces_tasks_sharing_a_weight_together() -> None:
    # A chain alternating two weights; transfers make one core the natural choice,
    # but each core holds one weight, so w0's tasks and w1's tasks must split.
    graph = ComputeGraph(
        names=("a", "b", "c", "d"),
        cost=[5, 5, 5, 5],
        edge_src=[0, 1, 2],
        edge_dst=[1, 2, 3],
        edge_bytes=[50, 50, 50],
        task_weights=((0,), (1,), (0,), (1,)),
        weight_size=[1, 1],
    )
    problem = LatencyProblem(graph, SmallCoresTarget(2, ns_per_byte=1, slots=1))
    schedule = heft_schedule(problem)
    check_schedule(problem, schedule)
    assert schedule.core_order == ((0, 2), (1, 3))


def test_no_core_with_room_is_not_found_within_budget() -> None:
    graph = ComputeGraph(
        names=("a", "b", "c"),
        cost=[3, 2, 1],
        edge_src=[],
        edge_dst=[],
        edge_bytes=[],
        task_weights=((0,), (1,), (2,)),
        weight_size=[2, 2, 2],
    )
    # 6 slots fit the fleet's 6, but a 3-slot core holds only one 2-slot weight.
    problem = LatencyProblem(graph, SmallCoresTarget(2, slots=3))
    with pytest.raises(
        NotFoundWithinBudgetError,
        match=r"^heft: no core has room for the resident weights of task 'c' \(core 0 would "
        r"need 2 more slots, 1 free\); HEFT has no capacity recovery$",
    ):
        HeftScheduler().solve(problem)
