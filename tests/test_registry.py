"""Cross-solver tests over the registry: registering a solver is what gets it tested.

For every problem type in `raptor_cp.solvers.SOLVERS`, every registered method
solves the same small instances; each answer must pass the problem's own
checker, report the objective the checker recomputes, never beat a proved
bound, and a heuristic's answer is never better than the CP-SAT optimum
(STYLE.md habit 7).
"""

from __future__ import annotations

import dataclasses
import random

import pytest
from test_cpsat_partition import tiny_joint
from test_prefix_dp import random_problem

from raptor_cp.errors import RaptorError
from raptor_cp.graph import ComputeGraph
from raptor_cp.models.solve import SolveSettings
from raptor_cp.problems import (
    FewestCoresProblem,
    LatencyProblem,
    PackingProblem,
    PipelineProblem,
    Solution,
    Status,
    check,
)
from raptor_cp.solvers import DEFAULT_METHOD, SOLVERS, make_solver, methods, solve
from raptor_cp.targets.generic import GenericTarget

FAST = {"time_limit_s": 10.0, "workers": 2}


def _graph(seed: int) -> ComputeGraph:
    """A random DAG of 7 tasks with edge bytes, one weight per task."""
    rng = random.Random(seed)
    n = 7
    edges = sorted({(a, b) for b in range(1, n) for a in rng.sample(range(b), k=min(b, 2))})
    return ComputeGraph(
        names=tuple(f"t{i}" for i in range(n)),
        cost=[rng.randint(1, 9) for _ in range(n)],
        edge_src=[a for a, _ in edges],
        edge_dst=[b for _, b in edges],
        edge_bytes=[rng.randint(0, 4) for _ in edges],
        name=f"dag{seed}",
    )


def _packing(seed: int) -> PackingProblem:
    rng = random.Random(seed)
    n = 7
    return PackingProblem(
        loads=tuple(rng.randint(1, 9) for _ in range(n)),
        task_weights=tuple((rng.randrange(4),) for _ in range(n)),
        weight_size=(2, 2, 3, 1),
        cores=3,
        capacity=4,
        edges=((0, 1, 2), (2, 5, 3)),
        name=f"pack{seed}",
    )


INSTANCES = {
    LatencyProblem: [LatencyProblem(_graph(s), GenericTarget(2, ns_per_byte=1)) for s in range(3)],
    PackingProblem: [_packing(s) for s in range(3)],
    FewestCoresProblem: [
        *(
            FewestCoresProblem(**{f.name: getattr(p, f.name) for f in dataclasses.fields(p)})
            for p in (_packing(s) for s in range(3))
        ),
        # Plain bin packing (disjoint weight sets): the bin-packing heuristic and the
        # arc-flow model; bounds 3, optimum 4 (9 + 1, 4 + 4, 4 + 4, 3).
        FewestCoresProblem.bin_packing((9, 4, 4, 4, 4, 3, 1), 10, "plain"),
    ],
    type(random_problem(0)): [random_problem(s, max_cores=5) for s in range(3)],
    type(tiny_joint()): [tiny_joint()],
    PipelineProblem: [PipelineProblem(_graph(s), GenericTarget(3), 2) for s in range(2)],
}
"""Small instances of every registered problem type (exact solvers prove them quickly)."""

CASES = [
    (problem_type, method, index)
    for problem_type, table in SOLVERS.items()
    for method in sorted(table)
    for index in range(len(INSTANCES[problem_type]))
]


def _solve(problem: object, method: str) -> Solution:
    settings = FAST if method == "cpsat" else {}
    return solve(problem, method, **settings)


def test_every_registered_problem_type_has_instances_and_a_default() -> None:
    assert set(INSTANCES) == set(SOLVERS) == set(DEFAULT_METHOD)


@pytest.mark.parametrize(
    ("problem_type", "method", "index"),
    CASES,
    ids=[f"{t.__name__}-{m}-{i}" for t, m, i in CASES],
)
def test_every_solver_answers_checked_and_within_its_bound(
    problem_type: type, method: str, index: int
) -> None:
    problem = INSTANCES[problem_type][index]
    solution = _solve(problem, method)
    assert make_solver(problem_type, method).name == solution.solver == method
    check(problem, solution)  # raises on any rule broken, including a wrong objective
    if solution.objective is not None and solution.bound is not None:
        assert solution.objective >= solution.bound
    if solution.status == Status.OPTIMAL:
        assert solution.objective == solution.bound


@pytest.mark.parametrize(
    "problem_type", [t for t in SOLVERS if "cpsat" in SOLVERS[t]], ids=lambda t: t.__name__
)
def test_no_heuristic_beats_the_cpsat_optimum(problem_type: type) -> None:
    """CP-SAT proves every instance; no solver finds better, or anything where none exists."""
    for problem in INSTANCES[problem_type]:
        exact = _solve(problem, "cpsat")
        assert exact.status in (Status.OPTIMAL, Status.INFEASIBLE), problem
        for method in methods(problem_type):
            found = _solve(problem, method)
            if exact.status == Status.INFEASIBLE:
                assert found.objective is None, (problem, method)
            elif found.objective is not None:
                assert exact.objective is not None
                assert found.objective >= exact.objective, (problem, method)


def test_an_unknown_method_names_the_valid_ones() -> None:
    problem = INSTANCES[LatencyProblem][0]
    with pytest.raises(RaptorError, match=r"^unknown method 'best' for LatencyProblem; valid: "):
        solve(problem, "best")


def test_cpsat_settings_travel_as_keywords() -> None:
    model = make_solver(LatencyProblem, "cpsat", time_limit_s=3.0, workers=1, seed=5)
    assert model.settings == SolveSettings(3.0, 1, 5)


def test_a_heuristic_refuses_cpsat_settings() -> None:
    with pytest.raises(RaptorError, match=r"^peft takes no CP-SAT settings \(time_limit_s\)$"):
        make_solver(LatencyProblem, "peft", time_limit_s=3.0)


def test_check_refuses_a_solution_of_another_problem() -> None:
    packing = INSTANCES[PackingProblem][0]
    latency = INSTANCES[LatencyProblem][0]
    with pytest.raises(TypeError, match="PackingSolution answers a PackingProblem"):
        check(latency, _solve(packing, "stage"))
