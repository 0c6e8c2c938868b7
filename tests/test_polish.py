"""Polish: CP-SAT improvement of a latency incumbent, exact model or LNS."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from latency_strategies import latency_problems

from raptor_cp.errors import InvalidConfigError
from raptor_cp.evaluation import evaluate
from raptor_cp.flows import compile_latency, prepare
from raptor_cp.graph import ComputeGraph
from raptor_cp.models.polish import polish, polish_settings
from raptor_cp.models.solve import SolveSettings
from raptor_cp.problems import LatencyProblem, LatencySolution, Status
from raptor_cp.problems.latency import check_schedule
from raptor_cp.progress import TICK, reporting
from raptor_cp.solvers import solve
from raptor_cp.targets.generic import GenericTarget
from raptor_cp.targets.registry import resolve_target
from raptor_cp.workload.load import load_workload
from raptor_cp.workload.lowering import lower

MODELS = "tests/data/models"


def anomaly() -> LatencyProblem:
    """Five independent tasks 3, 3, 2, 2, 2 on two cores: list scheduling gives 7, optimum 6."""
    empty = np.array([], dtype=np.int64)
    graph = ComputeGraph(
        tuple("abcde"), np.array([3, 3, 2, 2, 2]), empty, empty, empty, name="anomaly"
    )
    return LatencyProblem(graph, GenericTarget(2))


def lenet() -> LatencyProblem:
    target = resolve_target("arch-a")
    return LatencyProblem(lower(load_workload(f"{MODELS}/lenet5.onnx"), target), target)


def auto(problem: LatencyProblem) -> LatencySolution:
    solution = solve(problem, "auto")
    assert isinstance(solution, LatencySolution)
    return solution


def test_exact_polish_proves_the_optimum_the_heuristics_miss() -> None:
    problem = anomaly()
    incumbent = auto(problem)
    assert (incumbent.objective, incumbent.status) == (7, Status.FEASIBLE)
    polished = polish(problem, incumbent, SolveSettings(5.0, workers=1))
    assert polished.schedule is not None
    check_schedule(problem, polished.schedule)
    assert (polished.objective, polished.bound, polished.status) == (6, 6, Status.OPTIMAL)
    assert polished.details["polish"]["method"] == "exact"
    assert polished.details["polish"]["improved"] is True
    assert polished.details["winner"] == incumbent.details["winner"]
    assert polished.solver == "auto"


def test_incumbent_meeting_the_bound_is_returned_without_search() -> None:
    empty = np.array([], dtype=np.int64)
    graph = ComputeGraph(("a", "b"), np.array([4, 4]), empty, empty, empty)
    problem = LatencyProblem(graph, GenericTarget(2))
    incumbent = auto(problem)
    polished = polish(problem, incumbent, SolveSettings(1.0, workers=1))
    assert polished.schedule is incumbent.schedule
    assert polished.status == Status.OPTIMAL
    assert polished.details["polish"]["method"] == "none"


def test_an_exhausted_budget_returns_the_incumbent() -> None:
    problem = lenet()
    incumbent = solve(problem, "peft")
    polished = polish(problem, incumbent, SolveSettings(1e-6, workers=1), max_size=0)
    assert polished.schedule is incumbent.schedule
    assert polished.objective == incumbent.objective
    assert polished.details["polish"]["improved"] is False


def test_an_incumbent_without_schedule_is_refused() -> None:
    problem = anomaly()
    empty = dataclasses.replace(solve(problem, "peft"), schedule=None)
    with pytest.raises(ValueError, match=r"^polish needs an incumbent with a schedule$"):
        polish(problem, empty, SolveSettings(1.0))


@settings(max_examples=25, deadline=None)
@given(latency_problems(max_tasks=8))
def test_polish_is_never_longer_than_its_incumbent_and_passes_check(
    problem: LatencyProblem,
) -> None:
    incumbent = auto(problem)
    polished = polish(problem, incumbent, SolveSettings(0.2, workers=1))
    assert polished.schedule is not None and polished.objective is not None
    check_schedule(problem, polished.schedule)
    assert polished.objective == evaluate(problem, polished.schedule).makespan_ns
    assert polished.objective <= (incumbent.objective or 0)
    assert polished.bound is not None and polished.bound <= polished.objective
    assert (polished.status == Status.OPTIMAL) == (polished.objective == polished.bound)


def test_lns_on_a_pim_model_improves_or_keeps() -> None:
    problem = lenet()
    incumbent = solve(problem, "peft")
    polished = polish(problem, incumbent, SolveSettings(0.3, workers=1), max_size=0)
    assert polished.schedule is not None and polished.objective is not None
    check_schedule(problem, polished.schedule)
    assert polished.objective <= (incumbent.objective or 0)
    assert polished.details["polish"]["method"] == "lns"
    assert polished.details["polish"]["windows"] >= 1
    assert polished.details["polish"]["rejected_windows"] == 0
    assert polished.details["polish"]["wall_capped"] is False


def test_a_wall_cap_that_cuts_lns_is_reported() -> None:
    problem = lenet()
    incumbent = solve(problem, "peft")
    capped = SolveSettings(5.0, workers=1, wall_cap_s=1e-9)
    polished = polish(problem, incumbent, capped, max_size=0)
    assert polished.details["polish"]["wall_capped"] is True
    assert polished.schedule is incumbent.schedule


def test_exact_polish_gives_the_same_schedule_twice() -> None:
    problem = anomaly()
    first, second = (polish(problem, auto(problem), polish_settings(5.0)) for _ in range(2))
    assert first.schedule is not None and second.schedule is not None
    assert first.schedule.core_order == second.schedule.core_order
    assert np.array_equal(first.schedule.start_ns, second.schedule.start_ns)


@pytest.mark.slow
def test_lns_gives_the_same_schedule_twice() -> None:
    problem = lenet()
    incumbent = solve(problem, "peft")
    runs = [polish(problem, incumbent, polish_settings(1.0), max_size=0) for _ in range(2)]
    first, second = runs
    assert first.schedule is not None and second.schedule is not None
    assert first.details["polish"]["accepted_windows"] >= 1
    assert first.schedule.core_order == second.schedule.core_order
    assert np.array_equal(first.schedule.start_ns, second.schedule.start_ns)


def test_progress_ticks_the_incumbent_then_the_search_best_and_bound() -> None:
    seen: list[str] = []
    problem = anomaly()
    with reporting(lambda phase, detail: seen.append(detail) if phase == TICK else None):
        polished = polish(problem, auto(problem), polish_settings(5.0))
    assert seen[0] == "polish: best 7 ns, bound 6 ns"
    assert any(line.startswith("cpsat: best ") for line in seen)
    assert seen[-1].endswith(f"best {polished.objective} ns, bound 6 ns")


def test_compile_latency_polishes_and_checks() -> None:
    prepared = prepare(f"{MODELS}/lenet5.onnx", "arch-a", lanes=2)
    plain = compile_latency(prepared)
    polished = compile_latency(prepared, polish=0.2)
    assert polished.makespan_ns <= plain.makespan_ns
    assert polished.solution.details["polish"]["start_makespan_ns"] == plain.makespan_ns
    assert polished.summary()["polish"]["method"] in ("exact", "lns", "none")
    assert polished.summary()["winner"] == plain.summary()["winner"]


def test_polish_of_cpsat_is_refused() -> None:
    prepared = prepare(f"{MODELS}/lenet5.onnx", "arch-a", lanes=1)
    with pytest.raises(
        InvalidConfigError,
        match=r"^polish improves a heuristic's schedule; cpsat's budget is its time_limit_s$",
    ):
        compile_latency(prepared, "cpsat", polish=1.0)
