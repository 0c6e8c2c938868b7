"""The one CP-SAT solve wrapper every model in `raptor_cp.models` goes through.

It sets the search parameters from `SolveSettings`, runs the solver, and maps
the backend status onto `raptor_cp.problems.Status` together with the objective,
the proved bound and the gap, so that every CP-SAT model reports its evidence
the same way.

Determinism
-----------
With ``deterministic=True`` (the default) a run is a function of the model and
the settings alone, not of the machine's load:

* the budget is ``max_deterministic_time`` (CP-SAT's work counter, calibrated to
  be roughly one second per unit) instead of a wall-clock limit, so the search
  stops at the same point on every run;
* ``random_seed`` is fixed;
* with more than one worker, ``interleave_search`` is switched on: it makes the
  workers run in synchronised batches, which the parameter documentation
  describes as "deterministic (independently of num_workers!)". Without it
  parallel CP-SAT is not reproducible whatever the time limit.

The price is that a deterministic budget of ``time_limit_s`` units may take more
or less wall time than ``time_limit_s`` seconds (on a loaded 2-core machine,
interleaved workers overshot a budget of 2 units by up to 4x and took 40x the
wall time). Interleaved search is also somewhat weaker than free-running workers.

Wall-clock cap. Deterministic runs have no wall-clock limit unless
``wall_cap_s`` asks for one (``verify --wall-cap SECONDS``). A cap makes a run
stop after that many seconds even if its deterministic budget is not spent;
such a run is marked ``wall_capped`` (in `CpSatRun`, every model's
``details["wall_capped"]``, and ``verify``'s reports, with a footnote in
Markdown) because its result then depends on the machine's speed and load:
two reports that differ say why. Before this option existed a hidden cap of
``10 x budget + 5 s`` applied; it turned ``rand0090.stg``'s ``73 optimal``
into ``74 feasible`` on a loaded machine without saying so.

``deterministic=False`` uses ``time_limit_s`` as a wall-clock limit and
free-running workers; results then depend on timing (and ``wall_cap_s`` is
not used). Identity of results across CPUs, operating systems or OR-Tools
versions is not promised by OR-Tools and is not claimed here.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from raptor_cp.errors import InvalidConfigError, RaptorError
from raptor_cp.problems import Status, relative_gap
from raptor_cp.progress import ticker

if TYPE_CHECKING:
    from ortools.sat.python import cp_model

SearchProgress = Callable[[int | None, int | None], None]
"""Called with (best objective so far, best proved bound) whenever either improves;
either may be None while unknown. Only reports: it never changes the search. (Not a
`raptor_cp.progress.Progress`: models turn it into `raptor_cp.progress.tick` lines.)"""


@dataclass(frozen=True)
class SolveSettings:
    """Search budget and reproducibility settings of one CP-SAT run.

    Parameters
    ----------
    time_limit_s:
        Budget: deterministic-time units when ``deterministic`` is set, wall-clock
        seconds otherwise.
    workers:
        Number of parallel search workers (``num_workers``).
    seed:
        ``random_seed`` of the search.
    deterministic:
        Make the run reproducible (see the module docstring for how).
    wall_cap_s:
        Deterministic runs only: stop after this many wall-clock seconds even if
        the deterministic budget is not spent (None: no cap). A run it stops is
        ``wall_capped``.
    """

    time_limit_s: float = 10.0
    workers: int = 8
    seed: int = 0
    deterministic: bool = True
    wall_cap_s: float | None = None

    def __post_init__(self) -> None:
        if not (math.isfinite(self.time_limit_s) and self.time_limit_s > 0):
            raise InvalidConfigError(
                f"CP-SAT time_limit_s must be positive and finite, got {self.time_limit_s}"
            )
        if self.wall_cap_s is not None and not (
            math.isfinite(self.wall_cap_s) and self.wall_cap_s > 0
        ):
            raise InvalidConfigError(
                f"CP-SAT wall_cap_s must be positive and finite, got {self.wall_cap_s}"
            )
        if self.workers < 1:
            raise InvalidConfigError(f"CP-SAT workers must be at least 1, got {self.workers}")
        if self.seed < 0:
            raise InvalidConfigError(f"CP-SAT seed must be non-negative, got {self.seed}")


@dataclass(frozen=True)
class CpSatRun:
    """The outcome of one CP-SAT run, on the project's status scale.

    ``objective`` and ``bound`` are integers because every raptor-cp objective is
    (ns, slots, cores); they are None when the model has no objective or, for
    ``objective``, when no solution was found. ``solver`` holds the finished
    `CpSolver` so a model's ``extract`` can read variable values.
    """

    status: Status
    objective: int | None
    bound: int | None
    wall_s: float
    deterministic_time: float
    backend_status: str
    solver: cp_model.CpSolver
    wall_capped: bool = False
    """True when the wall-clock cap (``SolveSettings.wall_cap_s``), not the deterministic
    budget, ended the run: its result depends on the machine."""

    @property
    def gap(self) -> float | None:
        """``|objective - bound| / |objective|`` (see `relative_gap`)."""
        return relative_gap(self.objective, self.bound)

    @property
    def has_solution(self) -> bool:
        return self.status in (Status.OPTIMAL, Status.FEASIBLE)


def run_cpsat(
    model: cp_model.CpModel,
    settings: SolveSettings,
    progress: SearchProgress | None = None,
    tuning: dict[str, object] | None = None,
) -> CpSatRun:
    """Solve ``model`` under ``settings`` and map the result onto `Status`.

    ``progress`` (see `SearchProgress`; minimisation models) is told every new
    solution and every better bound, from CP-SAT's solution and bound callbacks
    (on CP-SAT's threads).
    ``tuning`` sets further CP-SAT parameters by name (search effort only, e.g.
    the LNS windows' ``linearization_level``; never the settings above).

    UNKNOWN (time limit without a solution) becomes NOT_FOUND, never INFEASIBLE:
    only a proof is reported as infeasibility. A model without objective that
    has a solution is OPTIMAL, as CP-SAT reports it. Raises `RaptorError` when CP-SAT
    rejects the model as invalid.
    """
    from ortools.sat.python import cp_model

    problem = model.validate()
    if problem:
        raise RaptorError(f"invalid CP-SAT model: {problem.splitlines()[0]}")
    solver = cp_model.CpSolver()
    params = solver.parameters
    params.num_workers = settings.workers
    params.random_seed = settings.seed
    for name, value in (tuning or {}).items():
        setattr(params, name, value)
    if settings.deterministic:
        params.max_deterministic_time = settings.time_limit_s
        params.interleave_search = settings.workers > 1
        if settings.wall_cap_s is not None:
            params.max_time_in_seconds = settings.wall_cap_s
    else:
        params.max_time_in_seconds = settings.time_limit_s
    callback = None if progress is None else _progress_callback(progress)
    if callback is not None:
        solver.best_bound_callback = callback.on_bound
    began = time.perf_counter()
    code = solver.solve(model, callback)
    wall_s = time.perf_counter() - began
    if code == cp_model.MODEL_INVALID:
        raise RaptorError(f"invalid CP-SAT model: {solver.solution_info() or 'rejected by CP-SAT'}")
    status = {
        cp_model.OPTIMAL: Status.OPTIMAL,
        cp_model.FEASIBLE: Status.FEASIBLE,
        cp_model.INFEASIBLE: Status.INFEASIBLE,
        cp_model.UNKNOWN: Status.NOT_FOUND,
    }[code]
    has_objective = model.has_objective()
    objective = None
    if has_objective and status in (Status.OPTIMAL, Status.FEASIBLE):
        objective = round(solver.objective_value)
    bound = None
    if has_objective and status != Status.INFEASIBLE:
        # The objective is integral, so rounding the float bound inwards keeps it proved.
        raw = solver.best_objective_bound
        if model.proto.objective.scaling_factor < 0:  # CP-SAT encodes maximise this way
            bound = math.floor(raw + 1e-6)
            bound = bound if objective is None else max(bound, objective)
        else:
            bound = math.ceil(raw - 1e-6)
            bound = bound if objective is None else min(bound, objective)
    return CpSatRun(
        status=status,
        objective=objective,
        bound=bound,
        wall_s=wall_s,
        deterministic_time=solver.deterministic_time,
        backend_status=solver.status_name(code),
        solver=solver,
        wall_capped=settings.deterministic
        and settings.wall_cap_s is not None
        and status in (Status.FEASIBLE, Status.NOT_FOUND)
        and solver.deterministic_time < settings.time_limit_s,
    )


def search_ticker(phase: str, unit: Callable[[int], str]) -> SearchProgress | None:
    """A `SearchProgress` ticking ``"<phase>: best <x>, bound <y>"`` to the current
    `raptor_cp.progress` sink, values written with ``unit``; None outside `reporting`."""
    tell = ticker(phase)
    if tell is None:
        return None

    def report(best: int | None, bound: int | None) -> None:
        found = "none yet" if best is None else unit(best)
        tell(f"best {found}, bound {'unknown' if bound is None else unit(bound)}")

    return report


def _progress_callback(progress: SearchProgress) -> cp_model.CpSolverSolutionCallback:
    """A solution callback forwarding (objective, bound) of a minimisation to ``progress``.

    Its ``on_bound`` method is meant for ``CpSolver.best_bound_callback``. The
    class is defined here so that importing this module does not import ortools.
    """
    from ortools.sat.python import cp_model

    class ProgressCallback(cp_model.CpSolverSolutionCallback):
        def __init__(self) -> None:
            super().__init__()
            self.objective: int | None = None

        def on_solution_callback(self) -> None:
            self.objective = round(self.objective_value)
            progress(self.objective, math.ceil(self.best_objective_bound - 1e-6))

        def on_bound(self, bound: float) -> None:
            progress(self.objective, math.ceil(bound - 1e-6))

    return ProgressCallback()
