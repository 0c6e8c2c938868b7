"""CP-SAT twins of the stage packers: min-max demand, and fewest cores (bin packing).

Both models are exact for the problem `check_packing` defines:

* ``x[t,p]``: task (or weight-set group) on core ``p``, exactly one core each.
* Resident weights: ``resident[w,p] >= x[t,p]`` for every task ``t`` using ``w``
  and ``sum_w size(w) resident[w,p] <= capacity`` (times ``used[p]`` in the
  fewest-cores model). A weight with a single user needs no literal of its own:
  its user's ``x[t,p]`` plays that role.
* `CpSatPackingModel` (``cores = problem.cores``) minimises ``peak >=
  demand[p] = sum_t load(t) x[t,p] + sum_e ns(e) cut[e,p]`` with ``cut[e,p] >=
  |x[a,p] - x[b,p]|`` per edge ``e = (a, b)`` (parallel and opposite edges merged,
  self-loops dropped): core ``p`` pays for an edge with exactly one end on it, as
  `packing_demand` charges. ``peak`` lies between `demand_lower_bound` and, when a
  hint is given, the hint's objective.
* `CpSatBinPackingModel` minimises ``sum_p used[p]`` with the capacity scaled by
  ``used[p]`` (plus ``x[g,p] <= used[p]`` for groups without weight slots),
  ``used[p] >= used[p+1]`` and ``sum_p used[p] >= cores_needed``. Tasks with the
  same weight set form one group (they add no slots to a core holding them, so
  some optimum keeps them together), and only as many cores as the hint uses (or
  ``problem.cores``, at most the number of groups) are modelled.

Symmetry breaking (cores are identical): with the items in the order weight slots
descending, then load descending, then id, relabelling cores by first appearance
along that order maps any solution onto one where item ``k`` sits on a core
``<= k``; moreover the longest prefix of that order whose items pairwise cannot
share a core (their weight union exceeds the capacity; e.g. plain bin-packing
items larger than half a bin) is pinned to cores ``0, 1, ...``. Both hold at once
for the relabelled solution, and so does ``used[p] >= used[p+1]``. The hint is
relabelled the same way.

A hint that already meets the lower bound (`demand_lower_bound`, `cores_needed`)
is proved optimal by it: `solve` then returns it as OPTIMAL without building a
model (``details["search"]`` says so). Otherwise the hint guides the search.

Fewest cores of plain bin packing (no weight in two weight sets) goes by default
to the arc-flow model of `raptor_cp.models.arc_flow`, whose LP relaxation proves
what the assignment model cannot (its bound here is `cores_needed` plus what
branching proves); `CpSatBinPackingModel` then only passes the bound and hint.
Measured on the Falkenauer and Scholl sets in docs/benchmarks.md ("Stage packing").

Size: ``I P`` assignment literals for ``I`` items and ``P`` modelled cores, plus
``W_s P`` resident literals for the ``W_s`` weights with several users, plus
``E P`` cut literals for the merged edges. Above ``max_size`` `build` raises
`RaptorError`.

References
----------
The assignment formulation with symmetry-broken identical bins follows the
OR-Tools ``bin_packing_sat`` sample; L2 bounds: Martello and Toth (1990).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from raptor_cp.errors import InvalidConfigError, RaptorError, ScheduleViolationError
from raptor_cp.heuristics.ordered_packing import demand_lower_bound
from raptor_cp.heuristics.stage_packing import (
    cores_needed,
    disjoint,
    fewest_cores,
    pack_stage,
    weight_groups,
)
from raptor_cp.models.solve import CpSatRun, SolveSettings, run_cpsat
from raptor_cp.problems import (
    FewestCoresSolution,
    PackingProblem,
    PackingSolution,
    Status,
    check_fewest_cores,
    check_packing,
    packing_demand,
)

if TYPE_CHECKING:
    from ortools.sat.python import cp_model

DEFAULT_MAX_SIZE = 200_000
"""Default model-size limit (literals, see the module docstring)."""
SKIPPED = "not run: the hint meets the lower bound"
"""``details["search"]`` of a solve answered by its hint alone (see the module docstring)."""
FORMULATIONS = ("auto", "assignment", "arc-flow")
"""The fewest-cores models `CpSatBinPackingModel` can build."""


@dataclass(frozen=True)
class PackingVars:
    """Variables of one built packing model, keyed by item and core ids."""

    problem: PackingProblem
    items: tuple[tuple[int, ...], ...]
    """Tasks of each item: one task each, or a weight-set group (fewest cores)."""
    cores: int
    """Modelled cores."""
    x: list[list[cp_model.IntVar]]
    """``x[i][p]``: item ``i`` on core ``p``."""
    order: tuple[int, ...]
    """Items in symmetry-breaking order."""
    pinned: int
    """Length of the pinned prefix of ``order``."""
    resident: dict[tuple[int, int], cp_model.IntVar]
    """``resident[w, p]`` for the weights with several users."""
    used: list[cp_model.IntVar]
    """``used[p]`` (fewest-cores model only)."""
    cut: dict[tuple[int, int, int], cp_model.IntVar]
    """``cut[a, b, p]``: core ``p`` pays for the merged edge ``(a, b)`` (min-max model only)."""
    peak: cp_model.IntVar | None
    """The maximum demand (min-max model only)."""
    size: int
    """Model size in literals."""
    lower: int
    """The bound the objective was constrained to (`demand_lower_bound` or `cores_needed`)."""


@dataclass(frozen=True)
class CpSatPackingModel:
    """Exact min-max-demand packing on ``problem.cores`` cores (module docstring).

    Parameters
    ----------
    settings:
        Search budget and reproducibility (`raptor_cp.models.solve.SolveSettings`).
    use_hint:
        Hint the search with `pack_stage` (and cap the objective at its value)
        when `solve` gets no explicit hint.
    max_size:
        Model-size limit above which `build` refuses the instance.
    """

    name: ClassVar[str] = "cpsat"

    settings: SolveSettings = field(default_factory=SolveSettings)
    use_hint: bool = True
    max_size: int = DEFAULT_MAX_SIZE

    def solve(
        self, problem: PackingProblem, hint: PackingSolution | None = None
    ) -> PackingSolution:
        """Minimise the maximum demand; the status says what was proved."""
        began = time.perf_counter()
        settings = self.settings
        if hint is None and self.use_hint:
            hint = pack_stage(problem)
        core, note = _usable_hint(problem, hint)
        upper = max(packing_demand(problem, core), default=0) if core is not None else None
        lower = demand_lower_bound(problem)
        if core is not None and upper == lower:
            details = {"hint": note, "search": SKIPPED}
            wall = time.perf_counter() - began
            return PackingSolution(
                core,
                status=Status.OPTIMAL,
                solver=self.name,
                objective=upper,
                bound=lower,
                wall_s=wall,
                details=details,
            )
        model, variables = self.build(problem, upper)
        if core is not None:
            _add_hint(model, variables, core)
        solution = self.extract(run_cpsat(model, settings), variables)
        details = {**solution.details, "hint": note}
        return dataclasses.replace(solution, wall_s=time.perf_counter() - began, details=details)

    def build(
        self, problem: PackingProblem, upper: int | None = None
    ) -> tuple[cp_model.CpModel, PackingVars]:
        """The model of ``problem``; ``upper`` (a known solution's demand) caps the objective."""
        from ortools.sat.python import cp_model

        edges: dict[tuple[int, int], int] = {}
        for a, b, ns in problem.edges:
            if a != b and ns > 0:
                key = (min(a, b), max(a, b))
                edges[key] = edges.get(key, 0) + ns
        items = tuple((t,) for t in range(problem.num_tasks))
        cores = problem.cores
        size = _size(problem, items, cores) + len(edges) * cores
        _refuse_large(problem, size, self.max_size)
        model = cp_model.CpModel()
        model.name = f"packing:{problem.name}"
        symmetry = _symmetry(problem, items, cores)
        x, resident = _assignment(model, problem, items, cores, symmetry, None)
        lower = demand_lower_bound(problem)
        top = sum(problem.loads) + 2 * sum(edges.values())
        peak = model.new_int_var(
            lower, max(lower, top if upper is None else min(top, upper)), "peak"
        )
        cut = {
            (a, b, p): model.new_bool_var(f"cut[{a},{b},{p}]")
            for a, b in edges
            for p in range(cores)
        }
        for (a, b, p), literal in cut.items():
            model.add(literal >= x[a][p] - x[b][p])
            model.add(literal >= x[b][p] - x[a][p])
        for p in range(cores):
            demand = sum(problem.loads[t] * x[t][p] for t in range(problem.num_tasks))
            transfer = sum(ns * cut[a, b, p] for (a, b), ns in edges.items())
            model.add(peak >= demand + transfer)
        model.minimize(peak)
        variables = PackingVars(
            problem, items, cores, x, *symmetry, resident, [], cut, peak, size, lower
        )
        return model, variables

    def extract(self, run: CpSatRun, variables: PackingVars) -> PackingSolution:
        """A checked `PackingSolution`; a disagreement with `packing_demand` is a model bug."""
        problem = variables.problem
        details = _run_details(run, variables)
        bound = None if run.bound is None else max(run.bound, variables.lower)
        if not run.has_solution:
            return PackingSolution(
                None,
                status=run.status,
                solver=self.name,
                objective=None,
                bound=bound,
                wall_s=run.wall_s,
                details=details,
            )
        core = _cores(run, variables)
        objective = max(packing_demand(problem, core), default=0)
        assert run.objective is not None and bound is not None
        if objective > run.objective or (
            run.status == Status.OPTIMAL and objective != run.objective
        ):
            raise AssertionError(
                f"cpsat packing on {problem.name}: CP-SAT objective {run.objective}, "
                f"packing_demand {objective}"
            )
        status = Status.OPTIMAL if objective == bound else Status.FEASIBLE
        solution = PackingSolution(
            core,
            status=status,
            solver=self.name,
            objective=objective,
            bound=bound,
            wall_s=run.wall_s,
            details=details,
        )
        check_packing(problem, solution)
        return solution


@dataclass(frozen=True)
class CpSatBinPackingModel:
    """Exact fewest-cores packing (at most ``problem.cores``), see the module docstring.

    Parameters are those of `CpSatPackingModel`; the hint comes from `fewest_cores`.
    ``formulation`` picks the model: ``assignment`` (here), ``arc-flow``
    (`raptor_cp.models.arc_flow`, only when no weight is in two weight sets, i.e.
    plain bin packing) or ``auto`` (arc flow when it applies). Whatever CP-SAT
    returns, `solve` never answers worse than a valid hint: it falls back to the
    hint (``details["fallback"]``) when CP-SAT finds nothing better.
    """

    name: ClassVar[str] = "cpsat"

    settings: SolveSettings = field(default_factory=SolveSettings)
    use_hint: bool = True
    max_size: int = DEFAULT_MAX_SIZE
    formulation: str = "auto"

    def __post_init__(self) -> None:
        if self.formulation not in FORMULATIONS:
            raise InvalidConfigError(
                f"unknown bin-packing formulation {self.formulation!r}; "
                f"choose one of {', '.join(FORMULATIONS)}"
            )

    def solve(
        self, problem: PackingProblem, hint: FewestCoresSolution | None = None
    ) -> FewestCoresSolution:
        """Minimise the cores used; the status says what was proved."""
        began = time.perf_counter()
        settings = self.settings
        if hint is None and self.use_hint:
            hint = fewest_cores(problem)
        core, note = None, "none"
        if hint is not None and hint.core is not None:
            try:
                check_fewest_cores(problem, hint)
            except ScheduleViolationError as error:
                note = f"{hint.solver} rejected: {error}"
            else:
                core, note = hint.core, f"{hint.solver}: {hint.objective} cores"
        lower = cores_needed(problem)
        if hint is not None and hint.bound is not None:
            lower = max(lower, hint.bound)  # the heuristic's bound is proved as well
        if core is not None and len(set(core)) == lower:
            label = {p: i for i, p in enumerate(dict.fromkeys(core))}
            details = {"hint": note, "search": SKIPPED}
            return FewestCoresSolution(
                tuple(label[p] for p in core),
                status=Status.OPTIMAL,
                solver=self.name,
                objective=lower,
                bound=lower,
                wall_s=time.perf_counter() - began,
                details=details,
            )
        formulation = self.formulation
        if formulation == "auto":
            formulation = "arc-flow" if disjoint(weight_groups(problem)) else "assignment"
        if formulation == "arc-flow":
            from raptor_cp.models.arc_flow import CpSatArcFlowModel

            solution = CpSatArcFlowModel(settings, self.max_size).solve(problem, lower, core)
        else:
            model, variables = self.build(problem, None if core is None else len(set(core)))
            if core is not None:
                group = {t: i for i, tasks in enumerate(variables.items) for t in tasks}
                cores = [0] * len(variables.items)
                for t, p in enumerate(core):
                    cores[group[t]] = p
                _add_hint(model, variables, cores)
            solution = self.extract(run_cpsat(model, settings), variables)
        details = {**solution.details, "hint": note, "formulation": formulation}
        if core is not None and (solution.objective is None or solution.objective > len(set(core))):
            label = {p: i for i, p in enumerate(dict.fromkeys(core))}
            bound = max(lower, solution.bound or 0)
            used = len(label)
            details["fallback"] = f"CP-SAT {solution.status.value}: kept the hint"
            solution = FewestCoresSolution(
                tuple(label[p] for p in core),
                status=Status.OPTIMAL if used == bound else Status.FEASIBLE,
                solver=self.name,
                objective=used,
                bound=bound,
                details=details,
            )
            check_fewest_cores(problem, solution)
        return dataclasses.replace(
            solution, solver=self.name, wall_s=time.perf_counter() - began, details=details
        )

    def build(
        self, problem: PackingProblem, upper: int | None = None
    ) -> tuple[cp_model.CpModel, PackingVars]:
        """The model of ``problem`` on ``min(problem.cores, groups, upper)`` cores."""
        from ortools.sat.python import cp_model

        items = tuple(tuple(tasks) for tasks in weight_groups(problem).values())
        cores = min(problem.cores, len(items), problem.cores if upper is None else upper)
        size = _size(problem, items, cores) + cores
        _refuse_large(problem, size, self.max_size)
        model = cp_model.CpModel()
        model.name = f"binpacking:{problem.name}"
        symmetry = _symmetry(problem, items, cores)
        used = [model.new_bool_var(f"used[{p}]") for p in range(cores)]
        x, resident = _assignment(model, problem, items, cores, symmetry, used)
        for p in range(cores - 1):
            model.add(used[p] >= used[p + 1])
        lower = cores_needed(problem)
        model.add(sum(used) >= lower)
        model.minimize(sum(used))
        variables = PackingVars(
            problem, items, cores, x, *symmetry, resident, used, {}, None, size, lower
        )
        return model, variables

    def extract(self, run: CpSatRun, variables: PackingVars) -> FewestCoresSolution:
        """A checked `FewestCoresSolution` (cores relabelled ``0..used-1``)."""
        problem = variables.problem
        details = _run_details(run, variables)
        bound = variables.lower if run.bound is None else max(run.bound, variables.lower)
        if not run.has_solution:
            return FewestCoresSolution(
                None,
                status=run.status,
                solver=self.name,
                objective=None,
                bound=bound,
                wall_s=run.wall_s,
                details=details,
            )
        core = _cores(run, variables)
        label = {p: i for i, p in enumerate(dict.fromkeys(core))}
        core = tuple(label[p] for p in core)
        used = len(label)
        assert run.objective is not None
        if used > run.objective or (run.status == Status.OPTIMAL and used != run.objective):
            raise AssertionError(
                f"cpsat bin packing on {problem.name}: CP-SAT objective {run.objective}, "
                f"{used} cores used"
            )
        status = Status.OPTIMAL if used == bound else Status.FEASIBLE
        solution = FewestCoresSolution(
            core,
            status=status,
            solver=self.name,
            objective=used,
            bound=bound,
            wall_s=run.wall_s,
            details=details,
        )
        check_fewest_cores(problem, solution)
        return solution


def _slots(problem: PackingProblem, weights: set[int]) -> int:
    return sum(problem.weight_size[w] for w in weights)


def _item_weights(problem: PackingProblem, item: tuple[int, ...]) -> set[int]:
    return {w for t in item for w in problem.task_weights[t]}


def _size(problem: PackingProblem, items: Sequence[tuple[int, ...]], cores: int) -> int:
    users: dict[int, int] = {}
    for item in items:
        for w in _item_weights(problem, item):
            users[w] = users.get(w, 0) + 1
    return (len(items) + sum(1 for n in users.values() if n > 1)) * cores


def _refuse_large(problem: PackingProblem, size: int, max_size: int) -> None:
    if size > max_size:
        raise RaptorError(
            f"{problem.name}: exact packing model too large ({size} literals > max_size "
            f"{max_size}); raise max_size or audit a smaller instance"
        )


def _symmetry(
    problem: PackingProblem, items: Sequence[tuple[int, ...]], cores: int
) -> tuple[tuple[int, ...], int]:
    """Symmetry order (slots, load descending, id) and its pinned pairwise-conflicting prefix."""
    weights = [_item_weights(problem, item) for item in items]
    load = [sum(problem.loads[t] for t in item) for item in items]
    order = sorted(range(len(items)), key=lambda i: (-_slots(problem, weights[i]), -load[i], i))
    pinned = 0
    while pinned < min(len(order), cores):
        item = weights[order[pinned]]
        if any(_slots(problem, item | weights[j]) <= problem.capacity for j in order[:pinned]):
            break
        pinned += 1
    return tuple(order), pinned


def _assignment(
    model: cp_model.CpModel,
    problem: PackingProblem,
    items: Sequence[tuple[int, ...]],
    cores: int,
    symmetry: tuple[tuple[int, ...], int],
    used: list[cp_model.IntVar] | None,
) -> tuple[list[list[cp_model.IntVar]], dict[tuple[int, int], cp_model.IntVar]]:
    """Assignment and residency literals with the capacity (scaled by ``used`` when given)."""
    x = [[model.new_bool_var(f"x[{i},{p}]") for p in range(cores)] for i in range(len(items))]
    for i in range(len(items)):
        model.add_exactly_one(x[i])
    order, pinned = symmetry
    for k, i in enumerate(order):
        if k < pinned:
            model.add(x[i][k] == 1)
        for p in range(k + 1, cores):
            model.add(x[i][p] == 0)
    users: dict[int, list[int]] = {}
    for i, item in enumerate(items):
        for w in sorted(_item_weights(problem, item)):
            users.setdefault(w, []).append(i)
    resident: dict[tuple[int, int], cp_model.IntVar] = {}
    for p in range(cores):
        terms = []
        for w in sorted(users):
            if len(users[w]) == 1:
                terms.append(problem.weight_size[w] * x[users[w][0]][p])
                continue
            resident[w, p] = model.new_bool_var(f"resident[{w},{p}]")
            for i in users[w]:
                model.add_implication(x[i][p], resident[w, p])
            terms.append(problem.weight_size[w] * resident[w, p])
        if used is None:
            model.add(sum(terms) <= problem.capacity)
        else:
            model.add(sum(terms) <= problem.capacity * used[p])
            for i in range(len(items)):
                if not _slots(problem, _item_weights(problem, items[i])):
                    model.add_implication(x[i][p], used[p])  # else capacity implies it
    return x, resident


def _usable_hint(
    problem: PackingProblem, hint: PackingSolution | None
) -> tuple[tuple[int, ...] | None, str]:
    if hint is None or hint.core is None:
        return None, "none" if hint is None else f"{hint.solver} found none"
    try:
        check_packing(problem, hint)
    except ScheduleViolationError as error:
        return None, f"{hint.solver} rejected: {error}"
    return hint.core, hint.solver


def _add_hint(model: cp_model.CpModel, variables: PackingVars, core: Sequence[int]) -> None:
    """Hint every variable from item cores relabelled by first appearance along the order."""
    label: dict[int, int] = {}
    for i in variables.order:
        label.setdefault(core[i], len(label))
    hinted = [label[p] for p in core]
    for i, row in enumerate(variables.x):
        for p, literal in enumerate(row):
            model.add_hint(literal, hinted[i] == p)
    held = {
        (w, hinted[i])
        for i, item in enumerate(variables.items)
        for w in _item_weights(variables.problem, item)
    }
    for key, literal in variables.resident.items():
        model.add_hint(literal, key in held)
    for p, literal in enumerate(variables.used):
        model.add_hint(literal, p < len(label))
    for (a, b, p), literal in variables.cut.items():
        model.add_hint(literal, (hinted[a] == p) != (hinted[b] == p))
    if variables.peak is not None:
        model.add_hint(variables.peak, max(packing_demand(variables.problem, hinted), default=0))


def _cores(run: CpSatRun, variables: PackingVars) -> tuple[int, ...]:
    core = [0] * variables.problem.num_tasks
    for i, row in enumerate(variables.x):
        p = next(p for p, literal in enumerate(row) if run.solver.boolean_value(literal))
        for t in variables.items[i]:
            core[t] = p
    return tuple(core)


def _run_details(run: CpSatRun, variables: PackingVars) -> dict[str, object]:
    return {
        "backend_status": run.backend_status,
        "cpsat_objective": run.objective,
        "cpsat_bound": run.bound,
        "deterministic_time": run.deterministic_time,
        "wall_capped": run.wall_capped,
        "model_size": variables.size,
        "modelled_cores": variables.cores,
        "pinned": variables.pinned,
    }
