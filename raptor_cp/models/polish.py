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
identical results. No wall-clock limit applies unless ``settings.wall_cap_s``
asks for one (`raptor_cp.models.solve`); a polish it cuts is ``wall_capped``
and its result depends on the machine.

Progress: inside `raptor_cp.progress.reporting`, the incumbent and every
improvement are ticked as ``polish: best <makespan>, bound <bound>`` (the exact
model ticks its own search as ``cpsat: ...``).
"""

from __future__ import annotations

import dataclasses
import time

from raptor_cp.bounds import lower_bounds
from raptor_cp.evaluation import evaluate
from raptor_cp.models.latency import DEFAULT_MAX_SIZE, CpSatLatencyModel, plan_latency_model
from raptor_cp.models.lns import improve_by_lns
from raptor_cp.models.solve import SolveSettings, search_ticker
from raptor_cp.problems import LatencyProblem, LatencySolution, Status
from raptor_cp.problems.latency import check_schedule
from raptor_cp.reports.output import format_ns

DEFAULT_WORKERS = 1
"""One worker: deterministic without interleaving, and deterministic time tracks wall
time closely on a loaded machine (interleaved workers can take many times longer)."""


def polish_settings(budget: float) -> SolveSettings:
    """The CP-SAT settings of ``polish`` with ``budget`` deterministic units (`DEFAULT_WORKERS`)."""
    return SolveSettings(budget, workers=DEFAULT_WORKERS)


def polish(
    problem: LatencyProblem,
    incumbent: LatencySolution,
    settings: SolveSettings,
    max_size: int = DEFAULT_MAX_SIZE,
) -> LatencySolution:
    """Improve ``incumbent`` within ``settings.time_limit_s`` (module docstring).

    The result keeps the incumbent's ``solver`` and ``details`` and adds
    ``details["polish"]``: the method (``none`` when the incumbent already
    meets the bound, ``exact`` or ``lns``), whether it improved, the starting
    makespan, the deterministic time spent and ``wall_capped``. Raises
    ``ValueError`` if the incumbent has no schedule.
    """
    if incumbent.schedule is None or incumbent.objective is None:
        raise ValueError("polish needs an incumbent with a schedule")
    began = time.perf_counter()
    check_schedule(problem, incumbent.schedule)
    analytic = lower_bounds(problem.graph, problem.target).makespan_ns
    bound = max(analytic, incumbent.bound or 0)
    base: dict[str, object] = {
        "budget": settings.time_limit_s,
        "start_makespan_ns": incumbent.objective,
    }
    if incumbent.objective <= bound:
        return _result(incumbent, None, bound, began, {**base, "method": "none"})
    progress = search_ticker("polish", format_ns)
    if progress is not None:
        progress(incumbent.objective, bound)
    plan = plan_latency_model(problem, max_size)
    if not plan.too_large:
        model = CpSatLatencyModel(settings, hint_with=None, max_size=max_size)
        found = model.solve(problem, hint=incumbent.schedule)
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
        )
    return _result(incumbent, better, bound, began, details)


def _result(
    incumbent: LatencySolution,
    better: LatencySolution | None,
    bound: int,
    began: float,
    details: dict[str, object],
) -> LatencySolution:
    """The polished solution: ``better``'s schedule if given, else the incumbent's."""
    chosen = better or incumbent
    assert chosen.objective is not None and chosen.objective <= (incumbent.objective or 0)
    return LatencySolution(
        schedule=chosen.schedule,
        status=Status.OPTIMAL if chosen.objective <= bound else Status.FEASIBLE,
        solver=incumbent.solver,
        objective=chosen.objective,
        bound=bound,
        wall_s=incumbent.wall_s + time.perf_counter() - began,
        details={**incumbent.details, "polish": {**details, "improved": better is not None}},
    )
