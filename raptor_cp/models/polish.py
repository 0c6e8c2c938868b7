"""Polish: improve a latency incumbent with CP-SAT within a deterministic-time budget.

`polish` takes a problem, an incumbent `LatencySolution` (usually the ``auto``
portfolio's) and a budget, and returns a solution that

* has a schedule that passed `check` and is never longer than the incumbent's
  (when nothing better is found, or the budget is spent, it *is* the incumbent);
* carries the best proved lower bound known: the exact model's bound when the
  exact model ran, else the analytic bounds (`raptor_cp.bounds`), never less
  than the incumbent's bound; and the gap to it;
* says ``optimal`` when the makespan meets that bound.

Method (issue #13):

* ``exact``: graphs whose exact model (`raptor_cp.models.latency`) is within
  ``max_size`` are solved by it with the incumbent as hint, so CP-SAT starts
  from the incumbent and can prove optimality;
* ``lns``: larger graphs go through large-neighbourhood search
  (`raptor_cp.models.lns`), which accepts only checked improvements.

Determinism: the budget is CP-SAT deterministic time with a fixed seed (and
interleaved search when several workers run), so identical inputs give
identical results; the wall-clock safeguard of `raptor_cp.models.solve` is the
one machine-dependent exception and is reported as ``wall_capped``.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import ClassVar

from raptor_cp.bounds import lower_bounds
from raptor_cp.check import check
from raptor_cp.evaluate import evaluate
from raptor_cp.models.latency import DEFAULT_MAX_SIZE, CpSatLatencyModel, plan_latency_model
from raptor_cp.models.lns import improve_by_lns
from raptor_cp.models.solve import Progress, SolveSettings
from raptor_cp.problems import LatencyProblem, LatencySolution, Status

DEFAULT_WORKERS = 1
"""One worker: deterministic without interleaving, and deterministic time tracks wall
time closely on a loaded machine (interleaved workers can take many times longer)."""


def polish(
    problem: LatencyProblem,
    incumbent: LatencySolution,
    settings: SolveSettings,
    progress: Progress | None = None,
    max_size: int = DEFAULT_MAX_SIZE,
) -> LatencySolution:
    """Improve ``incumbent`` within ``settings.time_limit_s`` (module docstring).

    ``progress`` receives (best makespan, proved bound) on every improvement.
    ``settings.wall_cap_s`` overrides the wall-clock safeguard of the whole polish.
    Raises ``ValueError`` if the incumbent has no schedule.
    """
    if incumbent.schedule is None or incumbent.objective is None:
        raise ValueError("polish needs an incumbent with a schedule")
    began = time.perf_counter()
    check(problem, incumbent.schedule)
    analytic = lower_bounds(problem.graph, problem.target).makespan_ns
    bound = max(analytic, incumbent.bound or 0)
    base = {
        "start_solver": incumbent.solver,
        "start_makespan_ns": incumbent.objective,
        "winner": incumbent.details.get("winner", incumbent.solver),
    }
    if incumbent.objective <= bound:
        return _result(incumbent, incumbent, bound, began, {**base, "method": "none"})
    if progress is not None:
        progress(incumbent.objective, bound)
    plan = plan_latency_model(problem, max_size)
    if not plan.too_large:
        model = CpSatLatencyModel(
            time_limit_s=settings.time_limit_s,
            workers=settings.workers,
            seed=settings.seed,
            deterministic=settings.deterministic,
            wall_cap_s=settings.wall_cap_s,
            hint_with=None,
            max_size=max_size,
        )
        found = model.solve(problem, hint=incumbent.schedule, progress=progress)
        bound = max(bound, found.bound or 0)
        details = {
            **base,
            "method": "exact",
            "backend_status": found.details.get("backend_status"),
            "deterministic_time": found.details.get("deterministic_time"),
            "wall_capped": found.details.get("wall_capped", False),
        }
        better = found if (found.objective or incumbent.objective) < incumbent.objective else None
        return _result(incumbent, better, bound, began, details)
    search = improve_by_lns(
        problem,
        incumbent.schedule,
        settings.time_limit_s,
        bound,
        seed=settings.seed,
        progress=progress,
        wall_cap_s=settings.wall_cap_s,
    )
    details = {
        **base,
        "method": "lns",
        "windows": search.windows,
        "accepted_windows": search.accepted,
        "rejected_windows": search.rejected,
        "trajectory": [[t, m] for _, _, t, m in search.history],
        "deterministic_time": round(search.deterministic_time, 3),
        "wall_capped": search.wall_capped,
    }
    better = None
    if search.makespan < incumbent.objective:
        better = dataclasses.replace(
            incumbent,
            schedule=search.schedule,
            objective=evaluate(problem, search.schedule).makespan_ns,
            solver="lns",
        )
    return _result(incumbent, better, bound, began, details)


def _result(
    incumbent: LatencySolution,
    better: LatencySolution | None,
    bound: int,
    began: float,
    details: dict[str, object],
) -> LatencySolution:
    """The polished solution: ``better`` if given, else the incumbent, with the bound."""
    chosen = better or incumbent
    assert chosen.objective is not None and chosen.objective <= (incumbent.objective or 0)
    return LatencySolution(
        schedule=chosen.schedule,
        status=Status.OPTIMAL if chosen.objective <= bound else Status.FEASIBLE,
        solver=PolishedScheduler.name,
        objective=chosen.objective,
        bound=bound,
        wall_s=incumbent.wall_s + time.perf_counter() - began,
        details={**incumbent.details, "polish": {**details, "improved": better is not None}},
    )


@dataclass(frozen=True)
class PolishedScheduler:
    """Run the ``start`` solver (default ``auto``), then `polish` its solution.

    Parameters
    ----------
    time_limit_s:
        Polish budget (deterministic units; wall seconds when not ``deterministic``).
    workers, seed, deterministic:
        CP-SAT settings (`raptor_cp.models.solve.SolveSettings`).
    start:
        Registry name of the solver giving the incumbent.
    wall_cap_s:
        Wall-clock safeguard override (`SolveSettings.wall_cap_s`).
    max_size:
        Exact-model size limit; larger graphs use LNS.
    """

    name: ClassVar[str] = "polish"
    time_limit_s: float = 10.0
    workers: int = DEFAULT_WORKERS
    seed: int = 0
    deterministic: bool = True
    start: str = "auto"
    max_size: int = DEFAULT_MAX_SIZE
    wall_cap_s: float | None = None

    def solve(self, problem: LatencyProblem, progress: Progress | None = None) -> LatencySolution:
        """The start solver's solution, polished within the budget."""
        from raptor_cp.solvers import latency_solver

        settings = SolveSettings(
            self.time_limit_s, self.workers, self.seed, self.deterministic, self.wall_cap_s
        )
        incumbent = latency_solver(self.start).solve(problem)
        return polish(problem, incumbent, settings, progress, self.max_size)
