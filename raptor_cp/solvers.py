"""One registry of solvers keyed by problem type, and ``solve(problem, method=...)``.

Every solver is a small frozen dataclass with a class-level ``name`` (its
registry key) and one ``solve(problem)`` method; its fields are its settings
(STYLE.md habit 4). CP-SAT models take their search settings as one
`raptor_cp.models.solve.SolveSettings` in a ``settings`` field; `solve` and
`make_solver` accept those settings as keywords too (``time_limit_s``,
``workers``, ``seed``, ``deterministic``), scipy style::

    solve(problem)                                  # the problem's default method
    solve(problem, method="cpsat", time_limit_s=5)  # CP-SAT with a 5-unit budget

Classes are named by ``"module:Class"`` strings and imported on first use, so
importing the registry (as ``raptor-cp --help`` does) costs no ortools import.
Cross-solver tests iterate over `SOLVERS`: registering a solver is what makes
it tested against the checker and the other solvers of its problem.
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any, ClassVar, Protocol

from raptor_cp.errors import RaptorError
from raptor_cp.problems import (
    FewestCoresProblem,
    JointProblem,
    LatencyProblem,
    PackingProblem,
    PartitionProblem,
    PipelineProblem,
    Solution,
)


class Solver(Protocol):
    """A solver of one problem type: a frozen dataclass whose fields are its settings."""

    name: ClassVar[str]

    def solve(self, problem: Any) -> Solution: ...


SOLVERS: dict[type, dict[str, str]] = {
    LatencyProblem: {
        "auto": "raptor_cp.heuristics.portfolio:PortfolioScheduler",
        "heft": "raptor_cp.heuristics.heft:HeftScheduler",
        "peft": "raptor_cp.heuristics.peft:PeftScheduler",
        "cpop": "raptor_cp.heuristics.cpop:CpopScheduler",
        "peft-replicas": "raptor_cp.heuristics.replicated:ReplicatedPeftScheduler",
        "heft-replicas": "raptor_cp.heuristics.replicated:ReplicatedHeftScheduler",
        "cpsat": "raptor_cp.models.latency:CpSatLatencyModel",
    },
    PackingProblem: {
        "stage": "raptor_cp.heuristics.stage_packing:StagePacker",
        "ordered": "raptor_cp.heuristics.ordered_packing:OrderedPacker",
        "cpsat": "raptor_cp.models.packing:CpSatPackingModel",
    },
    FewestCoresProblem: {
        "fewest-cores": "raptor_cp.heuristics.stage_packing:FewestCoresPacker",
        "cpsat": "raptor_cp.models.packing:CpSatBinPackingModel",
    },
    PartitionProblem: {
        "prefix-dp": "raptor_cp.heuristics.prefix_dp:PrefixDpPartitioner",
        "cpsat": "raptor_cp.models.partition:CpSatPartitionModel",
    },
    JointProblem: {
        "cpsat": "raptor_cp.models.joint_partition:CpSatJointModel",
    },
    PipelineProblem: {
        "beam": "raptor_cp.pipeline.beam:BeamPipelineSolver",
        "initial": "raptor_cp.pipeline.initial:InitialPipelineSolver",
    },
}
"""Problem type → method name → ``"module:Class"`` of the solver."""

DEFAULT_METHOD: dict[type, str] = {
    LatencyProblem: "auto",
    PackingProblem: "stage",
    FewestCoresProblem: "fewest-cores",
    PartitionProblem: "prefix-dp",
    JointProblem: "cpsat",
    PipelineProblem: "beam",
}
"""The method `solve` uses when none is given: the production heuristic of each problem
(for latency the ``auto`` portfolio, whose first member and tie-break is the seeds' PEFT;
docs/architecture.md, "Default scheduler")."""

SETTING_NAMES = ("time_limit_s", "workers", "seed", "deterministic", "wall_cap_s")
"""Keywords of `raptor_cp.models.solve.SolveSettings`, accepted by every CP-SAT solver."""


def methods(problem_type: type) -> tuple[str, ...]:
    """The method names registered for ``problem_type``, sorted."""
    return tuple(sorted(SOLVERS.get(problem_type, {})))


def make_solver(problem_type: type, method: str | None = None, **settings: Any) -> Solver:
    """Instantiate the solver registered for ``problem_type`` as ``method`` with ``settings``.

    Raises
    ------
    RaptorError
        For a problem type without solvers or an unknown method (the message lists
        the valid ones).
    """
    table = SOLVERS.get(problem_type)
    if table is None:
        raise RaptorError(f"no solver is registered for {problem_type.__name__}")
    method = DEFAULT_METHOD[problem_type] if method is None else method
    if method not in table:
        valid = ", ".join(sorted(table))
        raise RaptorError(f"unknown method {method!r} for {problem_type.__name__}; valid: {valid}")
    module_name, class_name = table[method].split(":")
    solver_class = getattr(importlib.import_module(module_name), class_name)
    cpsat = {key: settings.pop(key) for key in SETTING_NAMES if key in settings}
    if cpsat:
        if "settings" not in {f.name for f in dataclasses.fields(solver_class)}:
            raise RaptorError(f"{method} takes no CP-SAT settings ({', '.join(sorted(cpsat))})")
        from raptor_cp.models.solve import SolveSettings

        base = settings.pop("settings", SolveSettings())
        settings["settings"] = dataclasses.replace(base, **cpsat)
    return solver_class(**settings)


def solve(problem: Any, method: str | None = None, **settings: Any) -> Solution:
    """Solve ``problem`` with the solver registered as ``method`` (default: production).

    ``settings`` are the solver's fields (and, for CP-SAT, the `SolveSettings`
    keywords). The answer is not checked here; pass it to `raptor_cp.check`.
    """
    return make_solver(type(problem), method, **settings).solve(problem)
