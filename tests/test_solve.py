"""Tests of the one CP-SAT solve wrapper: settings, status mapping, bounds, determinism."""

from __future__ import annotations

import numpy as np
import pytest
from ortools.sat.python import cp_model

from raptor_cp.errors import InvalidConfigError, RaptorError
from raptor_cp.models.solve import SolveSettings, run_cpsat
from raptor_cp.problems import Status

ONE_WORKER = SolveSettings(time_limit_s=5.0, workers=1)


def queens(n: int) -> tuple[cp_model.CpModel, list[cp_model.IntVar]]:
    """The n-queens model: one queen per column, distinct rows and diagonals."""
    model = cp_model.CpModel()
    rows = [model.new_int_var(0, n - 1, f"q[{i}]") for i in range(n)]
    model.add_all_different(rows)
    model.add_all_different([rows[i] + i for i in range(n)])
    model.add_all_different([rows[i] - i for i in range(n)])
    return model, rows


def queens_near_targets(n: int, seed: int) -> tuple[cp_model.CpModel, list[cp_model.IntVar]]:
    """n-queens minimising the distance of each queen to a random target row."""
    model, rows = queens(n)
    targets = np.random.default_rng(seed).integers(0, n, n).tolist()
    distance = [model.new_int_var(0, n, f"d[{i}]") for i in range(n)]
    for i in range(n):
        model.add_abs_equality(distance[i], rows[i] - targets[i])
    model.minimize(sum(distance))
    return model, rows


def test_minimum_is_optimal_with_zero_gap() -> None:
    model = cp_model.CpModel()
    x = model.new_int_var(0, 10, "x")
    model.add(x >= 3)
    model.minimize(x)
    run = run_cpsat(model, ONE_WORKER)
    assert (run.status, run.objective, run.bound, run.gap) == (Status.OPTIMAL, 3, 3, 0.0)
    assert run.solver.value(x) == 3


def test_maximum_keeps_an_upper_bound() -> None:
    model = cp_model.CpModel()
    x = model.new_int_var(0, 10, "x")
    model.add(x <= 7)
    model.maximize(x)
    run = run_cpsat(model, ONE_WORKER)
    assert (run.status, run.objective, run.bound) == (Status.OPTIMAL, 7, 7)


def test_contradiction_is_proved_infeasible() -> None:
    model = cp_model.CpModel()
    x = model.new_int_var(0, 10, "x")
    model.add(x >= 5)
    model.add(x <= 3)
    model.minimize(x)
    run = run_cpsat(model, ONE_WORKER)
    assert (run.status, run.objective, run.bound, run.backend_status) == (
        Status.INFEASIBLE,
        None,
        None,
        "INFEASIBLE",
    )


def test_budget_without_a_solution_is_not_found_not_infeasible() -> None:
    model, _ = queens(20)
    run = run_cpsat(model, SolveSettings(time_limit_s=1e-4, workers=1))
    assert (run.status, run.backend_status, run.objective) == (Status.NOT_FOUND, "UNKNOWN", None)
    assert not run.has_solution


def test_budget_with_a_solution_is_feasible_with_a_gap() -> None:
    # Pinned on OR-Tools 9.15 under a deterministic budget.
    model, _ = queens_near_targets(40, seed=0)
    run = run_cpsat(model, SolveSettings(time_limit_s=0.2, workers=1))
    assert run.status == Status.FEASIBLE
    assert run.objective > run.bound >= 0
    assert run.gap == (run.objective - run.bound) / run.objective


def test_feasibility_model_has_no_objective_or_bound() -> None:
    model, rows = queens(8)
    run = run_cpsat(model, ONE_WORKER)
    assert (run.status, run.objective, run.bound, run.gap) == (Status.OPTIMAL, None, None, None)
    assert run.has_solution
    assert len({run.solver.value(r) for r in rows}) == 8


def test_invalid_model_raises() -> None:
    model = cp_model.CpModel()
    model.new_int_var(5, 3, "empty")
    with pytest.raises(
        RaptorError, match=r'^invalid CP-SAT model: var #0 has no domain\(\): name: "empty"$'
    ):
        run_cpsat(model, ONE_WORKER)


@pytest.mark.parametrize("workers", [1, 3])
def test_deterministic_runs_repeat_exactly(workers: int) -> None:
    # Both runs stop on the budget with a solution (FEASIBLE), the case where timing could leak.
    settings = SolveSettings(time_limit_s=0.2, workers=workers, seed=5)
    results = []
    for _ in range(2):
        model, rows = queens_near_targets(20, seed=1)
        run = run_cpsat(model, settings)
        assert run.status == Status.FEASIBLE
        values = [run.solver.value(r) for r in rows]
        results.append((run.objective, run.bound, run.deterministic_time, values))
    assert results[0] == results[1]


def test_wall_clock_mode_uses_a_time_limit() -> None:
    model, _ = queens(8)
    run = run_cpsat(model, SolveSettings(time_limit_s=5.0, workers=2, deterministic=False))
    assert run.status == Status.OPTIMAL
    assert run.solver.parameters.max_time_in_seconds == 5.0
    assert not run.solver.parameters.interleave_search


def test_deterministic_mode_sets_its_parameters() -> None:
    model, _ = queens(8)
    run = run_cpsat(model, SolveSettings(time_limit_s=2.0, workers=4, seed=9))
    params = run.solver.parameters
    assert (params.max_deterministic_time, params.interleave_search) == (2.0, True)
    assert (params.num_workers, params.random_seed) == (4, 9)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"time_limit_s": 0.0}, r"^CP-SAT time_limit_s must be positive and finite, got 0\.0$"),
        ({"workers": 0}, r"^CP-SAT workers must be at least 1, got 0$"),
        ({"seed": -1}, r"^CP-SAT seed must be non-negative, got -1$"),
        ({"time_limit_s": float("nan")}, r"^CP-SAT time_limit_s must be positive and finite"),
        ({"wall_cap_s": 0.0}, r"^CP-SAT wall_cap_s must be positive and finite, got 0\.0$"),
    ],
)
def test_bad_settings_are_rejected(settings: dict[str, float], message: str) -> None:
    with pytest.raises(InvalidConfigError, match=message):
        SolveSettings(**settings)


def _hard_model() -> cp_model.CpModel:
    """A 60-variable all-different quadratic assignment: no proof within milliseconds."""
    rng = np.random.default_rng(0)
    model = cp_model.CpModel()
    n = 60
    xs = [model.new_int_var(0, n - 1, f"x[{i}]") for i in range(n)]
    model.add_all_different(xs)
    ys = [model.new_int_var(0, (n - 1) ** 2, f"y[{i}]") for i in range(n)]
    for i in range(n):
        model.add_multiplication_equality(ys[i], [xs[i], xs[(7 * i + 3) % n]])
    model.minimize(sum(int(w) * y for w, y in zip(rng.integers(1, 1000, n), ys, strict=True)))
    return model


def test_deterministic_runs_have_no_wall_clock_limit_by_default() -> None:
    model = cp_model.CpModel()
    x = model.new_int_var(0, 10, "x")
    model.minimize(x)
    run = run_cpsat(model, SolveSettings(time_limit_s=1.0, workers=1))
    assert (run.objective, run.wall_capped) == (0, False)
    assert run.solver.parameters.max_time_in_seconds == float("inf")


def test_a_run_the_wall_cap_stops_is_marked_wall_capped() -> None:
    settings = SolveSettings(time_limit_s=1000.0, workers=1, wall_cap_s=0.05)
    run = run_cpsat(_hard_model(), settings)
    assert run.solver.parameters.max_time_in_seconds == 0.05
    assert run.deterministic_time < 1000.0
    assert run.status in (Status.FEASIBLE, Status.NOT_FOUND)
    assert run.wall_capped


def test_a_run_its_deterministic_budget_stops_is_not_wall_capped() -> None:
    run = run_cpsat(_hard_model(), SolveSettings(time_limit_s=0.05, workers=1, wall_cap_s=600.0))
    assert run.status in (Status.FEASIBLE, Status.NOT_FOUND)
    assert not run.wall_capped
