"""Large-neighbourhood search: improve a latency schedule window by window with CP-SAT.

For graphs too large for the exact model (`raptor_cp.models.latency`, thousands
of PIM tasks), each step frees a *window* of tasks, fixes everything else, and
asks CP-SAT for the shortest makespan of the whole schedule under that
restriction; a result is accepted only if `check` passes and `evaluate`'s
makespan is strictly shorter (issue #13).

Neighbourhoods (cycled in this order, each centred on a task of the current
critical chain, walking the chain from its end):

* ``time``: the ``size`` tasks whose start is nearest the centre's start
  (``size`` adapts: it grows after a window solved to optimality without
  improvement and shrinks after one its budget stopped);
* ``cores``: tasks within that time span on the centre's core and the nearest
  cores by hops (a group of cores);
* ``chain``: the critical chain around the centre plus the other lanes of the
  operations it passes through (a chain of stages).

The sub-model of one window ``S`` (starting at ``a``, the earliest start in ``S``):

* a task of ``S`` picks one of at most ``candidates`` cores: its own, then the
  cores already holding all its weights, then cores with room for them, nearest
  by hops first; one optional interval per candidate, a ``resident`` literal per
  weight a candidate core would newly hold, and that core's free capacity;
* a task outside ``S`` keeps its core; if it starts before ``a`` and does not
  depend on ``S`` (through dependencies or core order) its start is a constant,
  otherwise a variable kept in its core's order by precedences;
* precedences carry the target's transfer time: a constant for two fixed cores,
  ``on[u,p] => start[v] >= end[u] + sum_q transfer(p, q) on[v,q]`` when a
  candidate choice is involved (exact over the candidates; a direct receive
  into assembly storage is priced as such, ``transfer_ns(..., direct=True)``);
* one no-overlap per core that some task of ``S`` may use; the objective is the
  makespan; the current schedule is the hint.

Every piece of the sub-model is a restriction of the exact model, so any
solution is a valid schedule; the new core orders sort tasks by (start, finish,
topological rank) and `check_schedule` re-validates them before acceptance.

Budget: CP-SAT deterministic time summed over windows, each window getting
`WINDOW_BUDGET` units (or what is left) and being charged at least
`WINDOW_CHARGE_PER_CONSTRAINT` per constraint of its model; a wall-clock cap
applies to the whole search only when asked for (``wall_cap_s``, as in
`raptor_cp.models.solve`) and is reported when it cuts. Window positions come
from a generator seeded with ``seed``: identical inputs give identical results.
Cost per window: ``O(T + E + |S| K^2)`` model terms for ``K`` candidates; the
model is built in Python, which dominates wall time on large graphs.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from raptor_cp.errors import ScheduleViolationError
from raptor_cp.evaluation import Evaluation, edge_delays, evaluate, task_costs
from raptor_cp.models.solve import SearchProgress, SolveSettings, run_cpsat
from raptor_cp.problems import LatencyProblem, Status
from raptor_cp.problems.latency import check_schedule
from raptor_cp.schedule import Schedule
from raptor_cp.targets.base import UNLIMITED_CAPACITY

if TYPE_CHECKING:
    from ortools.sat.python import cp_model

Options = dict[int, list[tuple[int, "cp_model.IntVar"]]]
"""Per free task, its (candidate core, literal) pairs."""

NEIGHBOURHOODS = ("time", "cores", "chain")
WINDOW_BUDGET = 0.5
"""Deterministic units one window may use (less when the budget has less left). The same for
every budget, so the search of a smaller budget is a prefix of the search of a larger one."""
WINDOW_TUNING: dict[str, object] = {
    "linearization_level": 0,
    "symmetry_level": 0,
    "add_lp_constraints_lazily": True,
    "cp_model_presolve": False,
    "cp_model_probing_level": 0,
}
"""CP-SAT parameters of the window solves. Symmetry detection, the LP relaxation, presolve
and probing are barely counted in deterministic time but dominated wall time: on ResNet-18
windows they cost 5x (PIMCOMP-NN chip) and a further 3.5x (arch-a) the wall time for
the same objectives."""
WINDOW_CHARGE_PER_CONSTRAINT = 1 / 25_000
"""Deterministic units a window is charged at least per model constraint. Building and
loading a window's model is not counted in CP-SAT's deterministic time (about 0.4 s per
10,000 constraints here), so without this floor a budget would allow unboundedly many
cheap windows; the floor keeps the charge a deterministic function of the model."""
WINDOW_GROWTH = 1.5
WINDOW_MIN_TASKS, WINDOW_MAX_TASKS = 20, 2000
"""Adaptive window size: a window solved to optimality without improvement grows by
`WINDOW_GROWTH`, one stopped by its budget without improvement shrinks, within these."""
MODEL_FACTOR = 10
"""A window is halved (earliest tasks kept) until at most this many times its size are modelled."""


@dataclass
class LnsResult:
    """What `improve_by_lns` found: the best schedule (the incumbent if nothing improved)."""

    schedule: Schedule
    makespan: int
    windows: int = 0
    accepted: int = 0
    deterministic_time: float = 0.0
    wall_capped: bool = False
    rejected: int = 0
    """Window results that failed `check` (a model defect; never accepted)."""
    history: list[tuple[str, int, float, int]] = field(default_factory=list)
    """(neighbourhood, window size, deterministic time so far, makespan) of every accepted
    window: the anytime curve of the search."""


class _Instance:
    """Static data of the problem the windows share (costs, topological rank, delays)."""

    def __init__(self, problem: LatencyProblem) -> None:
        self.problem = problem
        graph, target = problem.graph, problem.target
        self.graph = graph
        self.cores = target.cores
        self.topo_rank = np.empty(graph.num_tasks, dtype=np.int64)
        self.topo_rank[graph.topological_order] = np.arange(graph.num_tasks)
        self.capacity = np.array([target.capacity(p) for p in range(self.cores)], np.int64)
        self.hops = np.array(
            [[target.hops(a, b) for b in range(self.cores)] for a in range(self.cores)], np.int64
        )
        self.weights = [tuple(sorted(set(w))) for w in graph.task_weights]

    def cost(self, task: int, core: int) -> int:
        return self.graph.cost_on(task, core)


def improve_by_lns(
    problem: LatencyProblem,
    incumbent: Schedule,
    budget: float,
    bound: int,
    *,
    seed: int = 0,
    size: int = 120,
    candidates: int = 6,
    progress: SearchProgress | None = None,
    wall_cap_s: float | None = None,
) -> LnsResult:
    """Improve ``incumbent`` by window re-optimisation within ``budget`` deterministic units.

    Stops when the budget is spent, the makespan meets ``bound``, or a wall-clock
    cap cuts (``wall_capped``): after ``wall_cap_s`` seconds when given (None: no
    cap, as `raptor_cp.models.solve.SolveSettings.wall_cap_s`), each window's solve
    then being capped by what is left of it. ``progress`` hears (makespan, bound)
    after each accepted window. ``incumbent`` must pass `check_schedule`.
    """
    check_schedule(problem, incumbent)
    instance = _Instance(problem)
    current = _current(problem, incumbent)
    result = LnsResult(incumbent, current.timing.makespan_ns)
    rng = np.random.default_rng(seed)
    began = time.perf_counter()
    while result.makespan > bound and result.deterministic_time < budget - 1e-9:
        left = None if wall_cap_s is None else wall_cap_s - (time.perf_counter() - began)
        if left is not None and left <= 0:
            result.wall_capped = True
            break
        chain = _critical_chain(instance, current)
        kind = NEIGHBOURHOODS[result.windows % len(NEIGHBOURHOODS)]
        centre = chain[int(rng.integers(0, len(chain)))]
        window = _window(instance, current, kind, centre, chain, size)
        allowed = min(WINDOW_BUDGET, budget - result.deterministic_time)
        cap = None if left is None else max(left, 1e-3)
        settings = SolveSettings(max(allowed, 1e-3), 1, seed, deterministic=True, wall_cap_s=cap)
        schedule, spent, capped, proved = _solve_window(
            instance, current, window, candidates, settings
        )
        result.windows += 1
        result.deterministic_time += spent
        result.wall_capped |= capped
        if schedule is not None:
            try:
                check_schedule(problem, schedule)
            except ScheduleViolationError:
                result.rejected += 1
                schedule = None
        candidate = None if schedule is None else _current(problem, schedule)
        if candidate is None or candidate.timing.makespan_ns >= result.makespan:
            # Nothing better in a window solved to optimality: widen; unsolved: narrow.
            grown = int(size * WINDOW_GROWTH) if proved else int(size / WINDOW_GROWTH)
            size = min(max(grown, WINDOW_MIN_TASKS), WINDOW_MAX_TASKS)
            continue
        assert schedule is not None
        current = candidate
        result.schedule, result.makespan = schedule, candidate.timing.makespan_ns
        result.accepted += 1
        result.history.append(
            (kind, len(window), round(result.deterministic_time, 3), result.makespan)
        )
        if progress is not None:
            progress(result.makespan, bound)
    return result


def _critical_chain(instance: _Instance, current: _Current) -> list[int]:
    """Tasks of one critical chain, last task first: each starts when its binding input ends.

    From the last-finishing task (smallest id on ties), step to the core
    predecessor or dependency whose finish (plus transfer) equals the start.
    """
    graph = instance.graph
    schedule, timing, delay = current.schedule, current.timing, current.delay
    core, slot = schedule.core, schedule.slot
    finish = timing.finish_ns
    task = int(np.argmax(finish))
    chain = [task]
    while timing.start_ns[task] > 0:
        start = int(timing.start_ns[task])
        nxt = -1
        for e in graph.predecessor_edges(task).tolist():
            if int(finish[graph.edge_src[e]]) + int(delay[e]) == start:
                nxt = int(graph.edge_src[e])
                break
        if nxt < 0 and slot[task] > 0:
            nxt = schedule.core_order[int(core[task])][int(slot[task]) - 1]
        if nxt < 0:
            break
        chain.append(nxt)
        task = nxt
    return chain


def _window(
    instance: _Instance,
    current: _Current,
    kind: str,
    centre: int,
    chain: list[int],
    size: int,
) -> np.ndarray:
    """The free tasks of one neighbourhood (module docstring), at most ``size``."""
    schedule = current.schedule
    start = current.timing.start_ns
    by_distance = np.argsort(np.abs(start - start[centre]), kind="stable")
    if kind == "time":
        return np.sort(by_distance[:size])
    span = by_distance[: 4 * size]
    if kind == "cores":
        near = np.argsort(instance.hops[int(schedule.core[centre])], kind="stable")[:4]
        picked = span[np.isin(schedule.core[span], near)]
        return np.sort(picked[:size])
    graph = instance.graph
    position = chain.index(centre)
    stretch = chain[max(0, position - size // 8) : position + size // 8 + 1]
    operations = np.unique(graph.operation[stretch])
    picked = span[np.isin(graph.operation[span], operations)]
    return np.unique(np.concatenate([np.asarray(stretch, np.int64), picked[: size - len(stretch)]]))


def _candidate_cores(
    instance: _Instance, task: int, home: int, used: np.ndarray, resident: np.ndarray, count: int
) -> list[int]:
    """Home core, then holders of all the task's weights, then cores with room, by hops."""
    weights = list(instance.weights[task])
    size = instance.graph.weight_size
    order = np.argsort(instance.hops[home], kind="stable").tolist()
    if not weights:
        return order[:count]
    missing = size[weights] @ ~resident[weights]
    holders = [p for p in order if missing[p] == 0 and p != home]
    roomy = [
        p
        for p in order
        if missing[p] > 0 and p != home and used[p] + missing[p] <= instance.capacity[p]
    ]
    return [home, *holders, *roomy][:count]


@dataclass(frozen=True)
class _Current:
    """The schedule being improved with its timing and per-edge transfer delays."""

    schedule: Schedule
    timing: Evaluation
    delay: np.ndarray


def _current(problem: LatencyProblem, schedule: Schedule) -> _Current:
    return _Current(schedule, evaluate(problem, schedule), edge_delays(problem, schedule.core))


def _solve_window(
    instance: _Instance,
    current: _Current,
    window: np.ndarray,
    candidates: int,
    settings: SolveSettings,
) -> tuple[Schedule | None, float, bool, bool]:
    """Re-optimise ``window``: the new schedule (None without a solution), the deterministic
    time spent, whether the wall-clock safeguard cut the solve, and whether the window's
    optimum was proved.

    Tasks split four ways (see the module docstring): ``free`` (the window),
    *constants* (not reachable from the window: start kept), *variables*
    (reachable, starting before the horizon: core and order kept, start free)
    and the *tail* (reachable, starting at or after the horizon). The tail is
    not modelled task by task: each tail task entered from a modelled task
    contributes ``start + tail length`` to the makespan, where the tail length
    is its longest path to the end through the tail (costs and current
    delays), which is exact because the tail keeps its cores and order.
    """
    from ortools.sat.python import cp_model

    problem, graph = instance.problem, instance.graph
    schedule, timing = current.schedule, current.timing
    n = graph.num_tasks
    core = schedule.core
    window = window[np.argsort(timing.start_ns[window], kind="stable")]
    while True:
        free = np.zeros(n, dtype=bool)
        free[window] = True
        moving = _dependent_tasks(instance, schedule, free)
        span_end = int(timing.finish_ns[window].max())
        horizon_ns = 2 * span_end - int(timing.start_ns[window].min())
        tail = moving & ~free & (timing.start_ns >= horizon_ns)
        modelled = moving & ~tail
        if int(modelled.sum()) <= MODEL_FACTOR * len(window) or len(window) <= 8:
            break
        window = window[: len(window) // 2]  # keep the earliest half: a narrower time span
    tail_length = _tail_lengths(instance, current, tail)
    cost_now = task_costs(problem, core)
    horizon = int(timing.makespan_ns) + int(cost_now.sum())

    # Every task outside the window keeps its core: residency and used slots.
    resident = np.zeros((graph.num_weights, instance.cores), dtype=bool)
    for t in np.flatnonzero(~free).tolist():
        resident[list(instance.weights[t]), int(core[t])] = True
    used = graph.weight_size @ resident

    model = cp_model.CpModel()
    start: list[cp_model.LinearExprT] = [int(x) for x in timing.start_ns.tolist()]
    end: list[cp_model.LinearExprT] = [int(x) for x in timing.finish_ns.tolist()]
    options: Options = {}
    per_core: dict[int, list[cp_model.IntervalVar]] = {}
    entry: dict[int, cp_model.IntVar] = {}
    """Tail tasks entered from a modelled task: their start, bounded below by those inputs."""
    constant_end = np.zeros(instance.cores, dtype=np.int64)
    head: dict[int, int] = {}
    """Per core, its first tail task."""
    for p, order in enumerate(schedule.core_order):
        fixed = [t for t in order if not moving[t]]
        constant_end[p] = int(timing.finish_ns[fixed[-1]]) if fixed else 0
        first_tail = next((t for t in order if tail[t]), None)
        if first_tail is not None:
            head[p] = first_tail
    for t in np.flatnonzero(modelled).tolist():
        start[t] = model.new_int_var(0, horizon, f"s{t}")
        if not free[t]:
            end[t] = start[t] + int(cost_now[t])
            per_core.setdefault(int(core[t]), []).append(
                model.new_fixed_size_interval_var(start[t], int(cost_now[t]), f"f{t}")
            )
            continue
        cands = _candidate_cores(instance, t, int(core[t]), used, resident, candidates)
        end[t] = model.new_int_var(0, horizon, f"e{t}")
        lits = []
        for p in cands:
            lit = model.new_bool_var(f"on{t},{p}")
            lits.append((p, lit))
            cost = instance.cost(t, p)
            model.add(end[t] == start[t] + cost).only_enforce_if(lit)
            model.add(start[t] >= int(constant_end[p])).only_enforce_if(lit)
            per_core.setdefault(p, []).append(
                model.new_optional_fixed_size_interval_var(start[t], cost, lit, f"i{t},{p}")
            )
            if p in head:
                model.add(_entry(model, entry, head[p], horizon) >= end[t]).only_enforce_if(lit)
        model.add_exactly_one(lit for _, lit in lits)
        options[t] = lits
    for intervals in per_core.values():
        model.add_no_overlap(intervals)
    # Core order of the tasks that keep their core.
    for order in schedule.core_order:
        kept = [t for t in order if not free[t]]
        for a, b in itertools.pairwise(kept):
            if modelled[b]:
                model.add(start[b] >= end[a])
            elif tail[b] and modelled[a]:
                model.add(_entry(model, entry, b, horizon) >= end[a])
    added = _add_window_capacity(model, instance, options, resident, used)
    _add_window_edges(model, instance, current, modelled, tail, options, start, end, entry, horizon)
    makespan = model.new_int_var(0, horizon, "makespan")
    ends = [end[t] for t in np.flatnonzero(modelled).tolist()]
    ends += [entry[y] + int(tail_length[y]) for y in sorted(entry)]
    model.add_max_equality(makespan, ends or [0])
    model.add(makespan >= _tail_floor(instance, current, moving, tail, tail_length))
    model.add(makespan >= int(timing.finish_ns[~moving].max(initial=0)))
    model.minimize(makespan)
    _hint_current(model, instance, current, modelled, options, start, end, entry, added)
    model.add_hint(makespan, int(timing.makespan_ns))
    run = run_cpsat(model, settings, tuning=WINDOW_TUNING)
    proved = run.status == Status.OPTIMAL
    spent = max(run.deterministic_time, len(model.proto.constraints) * WINDOW_CHARGE_PER_CONSTRAINT)
    if not run.has_solution:
        return None, spent, run.wall_capped, proved
    solver = run.solver
    new_core = core.copy()
    new_start = timing.start_ns.copy()
    for t in np.flatnonzero(modelled).tolist():
        new_start[t] = solver.value(start[t])
    for t, lits in options.items():
        new_core[t] = next(p for p, lit in lits if solver.boolean_value(lit))
    reordered = _reorder(instance, schedule, new_core, new_start, moving, tail)
    return reordered, spent, run.wall_capped, proved


def _hint_current(
    model: cp_model.CpModel,
    instance: _Instance,
    current: _Current,
    modelled: np.ndarray,
    options: Options,
    start: list[cp_model.LinearExprT],
    end: list[cp_model.LinearExprT],
    entry: dict[int, cp_model.IntVar],
    added: dict[tuple[int, int], cp_model.IntVar],
) -> None:
    """Hint every variable with the current schedule (a feasible solution of the window)."""
    timing, core = current.timing, current.schedule.core
    for t in np.flatnonzero(modelled).tolist():
        model.add_hint(start[t], int(timing.start_ns[t]))
    for t, lits in options.items():
        model.add_hint(end[t], int(timing.finish_ns[t]))
        for p, lit in lits:
            model.add_hint(lit, p == int(core[t]))
    for y, var in entry.items():
        model.add_hint(var, int(timing.start_ns[y]))
    home = {(w, int(core[t])) for t in options for w in instance.weights[t]}
    for key, lit in added.items():
        model.add_hint(lit, key in home)


def _entry(
    model: cp_model.CpModel, entry: dict[int, cp_model.IntVar], task: int, horizon: int
) -> cp_model.IntVar:
    """The start variable of tail task ``task`` (created on first use)."""
    if task not in entry:
        entry[task] = model.new_int_var(0, horizon, f"y{task}")
    return entry[task]


def _reorder(
    instance: _Instance,
    schedule: Schedule,
    core: np.ndarray,
    start: np.ndarray,
    moving: np.ndarray,
    tail: np.ndarray,
) -> Schedule | None:
    """Core orders: constants as before, modelled tasks by (start, finish, topological rank),
    then the tail as before; starts are `evaluate`'s. None if the orders deadlock."""
    cost = task_costs(instance.problem, core)
    keys = np.lexsort((instance.topo_rank, start + cost, start))
    middle: list[list[int]] = [[] for _ in range(instance.cores)]
    for t in keys.tolist():
        if moving[t] and not tail[t]:
            middle[int(core[t])].append(t)
    orders = [
        tuple(t for t in order if not moving[t])
        + tuple(middle[p])
        + tuple(t for t in order if tail[t])
        for p, order in enumerate(schedule.core_order)
    ]
    reordered = Schedule(tuple(orders), start, schedule.scheduler)
    try:  # the estimated starts of the new orders are their evaluated (earliest) starts
        timing = evaluate(instance.problem, reordered)
    except ScheduleViolationError:
        return None
    return Schedule(tuple(orders), timing.start_ns, schedule.scheduler)


def _tail_lengths(instance: _Instance, current: _Current, tail: np.ndarray) -> np.ndarray:
    """Per tail task, its cost plus the longest (delay + tail length) over tail successors.

    Successors are dependencies and the next task on the core; tasks are visited
    in reverse topological order of that graph restricted to the tail (Kahn).
    """
    graph = instance.graph
    n = graph.num_tasks
    cost = task_costs(instance.problem, current.schedule.core).tolist()
    next_on_core = [-1] * n
    for order in current.schedule.core_order:
        for a, b in itertools.pairwise(order):
            next_on_core[a] = b
    dst = graph.edge_dst.tolist()
    delay = current.delay.tolist()
    src = graph.edge_src.tolist()
    in_tail = tail.tolist()
    pending = [0] * n
    for t in np.flatnonzero(tail).tolist():
        pending[t] = sum(in_tail[dst[e]] for e in graph.successor_edges(t).tolist())
        pending[t] += next_on_core[t] >= 0 and in_tail[next_on_core[t]]
    previous_on_core = [-1] * n
    for t, b in enumerate(next_on_core):
        if b >= 0:
            previous_on_core[b] = t
    length = [0] * n
    stack = [t for t in np.flatnonzero(tail).tolist() if pending[t] == 0]
    while stack:
        t = stack.pop()
        best = 0
        for e in graph.successor_edges(t).tolist():
            if in_tail[dst[e]]:
                best = max(best, delay[e] + length[dst[e]])
        if next_on_core[t] >= 0 and in_tail[next_on_core[t]]:
            best = max(best, length[next_on_core[t]])
        length[t] = cost[t] + best
        inputs = [src[e] for e in graph.predecessor_edges(t).tolist()]
        if previous_on_core[t] >= 0:
            inputs.append(previous_on_core[t])
        for u in inputs:
            if in_tail[u]:
                pending[u] -= 1
                if pending[u] == 0:
                    stack.append(u)
    return np.asarray(length, dtype=np.int64)


def _add_window_capacity(
    model: cp_model.CpModel,
    instance: _Instance,
    options: Options,
    resident: np.ndarray,
    used: np.ndarray,
) -> dict[tuple[int, int], cp_model.IntVar]:
    """A ``resident`` literal per (weight, candidate core) not yet held there, within capacity."""
    size = instance.graph.weight_size
    added: dict[tuple[int, int], cp_model.IntVar] = {}
    for t, lits in options.items():
        for p, lit in lits:
            for w in instance.weights[t]:
                if resident[w, p]:
                    continue
                if (w, p) not in added:
                    added[w, p] = model.new_bool_var(f"r{w},{p}")
                model.add_implication(lit, added[w, p])
    by_core: dict[int, list[tuple[int, cp_model.IntVar]]] = {}
    for (w, p), lit in added.items():
        by_core.setdefault(p, []).append((w, lit))
    for p, items in by_core.items():
        if instance.capacity[p] >= UNLIMITED_CAPACITY:
            continue
        load = sum(int(size[w]) * lit for w, lit in items)
        model.add(load <= int(instance.capacity[p] - used[p]))
    return added


def _add_window_edges(
    model: cp_model.CpModel,
    instance: _Instance,
    current: _Current,
    modelled: np.ndarray,
    tail: np.ndarray,
    options: Options,
    start: list[cp_model.LinearExprT],
    end: list[cp_model.LinearExprT],
    entry: dict[int, cp_model.IntVar],
    horizon: int,
) -> None:
    """Precedences into modelled and tail-entry tasks, with their transfer times.

    Between two tasks that keep their cores the delay is the current one; when
    a window task is involved it is exact over the candidate cores:
    ``on[u,p] => start[v] >= end[u] + sum_q transfer(p, q) on[v,q]``.
    """
    graph = instance.graph
    target = instance.problem.target
    core = current.schedule.core.tolist()
    delay = current.delay.tolist()
    for e, (u, v, nbytes, direct) in enumerate(
        zip(
            graph.edge_src.tolist(),
            graph.edge_dst.tolist(),
            graph.edge_bytes.tolist(),
            graph.edge_direct.tolist(),
            strict=True,
        )
    ):
        if tail[v] and not modelled[u]:
            continue  # inside the tail, or a constant input: `_tail_floor`
        if not (modelled[v] or tail[v]):
            continue  # both constants
        after = _entry(model, entry, v, horizon) if tail[v] else start[v]
        if u not in options and v not in options:
            model.add(after >= end[u] + delay[e])
            continue
        sources: list[tuple[int, cp_model.IntVar | None]] = list(options.get(u, [(core[u], None)]))
        targets: list[tuple[int, cp_model.IntVar | None]] = list(options.get(v, [(core[v], None)]))
        model.add(after >= end[u])
        for p, lit in sources:
            delays = [
                (target.transfer_ns(p, q, nbytes, direct) if p != q else 0, x) for q, x in targets
            ]
            if all(d == 0 for d, _ in delays):
                continue
            if len(delays) == 1:
                delay_expr: cp_model.LinearExprT = delays[0][0]
            else:
                delay_expr = sum(d * x for d, x in delays if d and x is not None)
            constraint = model.add(after >= end[u] + delay_expr)
            if lit is not None:
                constraint.only_enforce_if(lit)


def _tail_floor(
    instance: _Instance,
    current: _Current,
    moving: np.ndarray,
    tail: np.ndarray,
    tail_length: np.ndarray,
) -> int:
    """Makespan the tail reaches from constant inputs alone (dependencies and core order)."""
    graph = instance.graph
    finish = current.timing.finish_ns
    into = np.flatnonzero(tail[graph.edge_dst] & ~moving[graph.edge_src])
    floor = finish[graph.edge_src[into]] + current.delay[into] + tail_length[graph.edge_dst[into]]
    best = int(floor.max(initial=0))
    for order in current.schedule.core_order:
        first = next((i for i, t in enumerate(order) if moving[t]), None)
        if first is not None and first > 0 and tail[order[first]]:
            best = max(best, int(finish[order[first - 1]]) + int(tail_length[order[first]]))
    return best


def _dependent_tasks(instance: _Instance, schedule: Schedule, free: np.ndarray) -> np.ndarray:
    """Tasks reachable from ``free`` through dependencies and core order (``free`` included)."""
    graph = instance.graph
    reached = free.copy()
    next_on_core = np.full(graph.num_tasks, -1, dtype=np.int64)
    for order in schedule.core_order:
        if len(order) > 1:
            next_on_core[list(order[:-1])] = order[1:]
    stack = np.flatnonzero(free).tolist()
    dst = graph.edge_dst
    while stack:
        t = stack.pop()
        following = dst[graph.successor_edges(t)].tolist()
        if next_on_core[t] >= 0:
            following.append(int(next_on_core[t]))
        for s in following:
            if not reached[s]:
                reached[s] = True
                stack.append(s)
    return reached
