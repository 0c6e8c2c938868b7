"""Timing evaluation of a schedule: recompute every start from the per-core order.

The evaluator trusts nothing a scheduler estimated. Given each core's task order,
a task starts as soon as (a) the task before it on its core has finished and
(b) every predecessor has finished and its data has crossed to this core
(``target.transfer_ns``; zero on the same core). It reports the quantities the
seeds keep apart: serial work, per-core work, the dependency critical path
(transfer delays of the chosen cores, but *no* core-order constraints), summed
transfer work and the single-inference completion (makespan, which *does*
include core order).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING, NoReturn

import numpy as np

from raptor_cp.errors import ScheduleViolationError
from raptor_cp.schedule import Schedule

if TYPE_CHECKING:
    from raptor_cp.problems.latency import LatencyProblem


@dataclass(frozen=True, eq=False)
class Evaluation:
    """Timing of one schedule, all in integer nanoseconds."""

    start_ns: np.ndarray
    """Earliest start of each task under the schedule's core order."""
    finish_ns: np.ndarray
    """``start_ns`` plus the task's cost on its core."""
    serial_work_ns: int
    """Sum of every task's cost on its core (one-core execution time)."""
    per_core_work_ns: tuple[int, ...]
    """Busy time of each core of the target."""
    critical_path_ns: int
    """Longest dependency path with the chosen cores' costs and transfer delays,
    ignoring core order (what unlimited cores with this placement would reach)."""
    transfer_work_ns: int
    """Sum of ``transfer_ns`` over the edges whose endpoints are on different cores."""
    makespan_ns: int
    """Completion of the last task, core order included."""
    cores_used: int
    """Cores with at least one task."""


def placement(problem: LatencyProblem, schedule: Schedule) -> tuple[np.ndarray, np.ndarray]:
    """Core and slot of every task, after checking the schedule places each task once.

    Returns
    -------
    (core, slot):
        Two int64 arrays indexed by task id.

    Raises
    ------
    ScheduleViolationError
        On a wrong number of start times, an unknown task id, a task on a core the
        target does not have, or a task scheduled twice or never.
    """
    graph, target = problem.graph, problem.target
    n = graph.num_tasks
    if schedule.num_tasks != n:
        raise ScheduleViolationError(
            f"schedule has {schedule.num_tasks} start times for {n} tasks of {graph.name}"
        )
    lengths = [len(order) for order in schedule.core_order]
    tasks = np.fromiter(itertools.chain.from_iterable(schedule.core_order), dtype=np.int64)
    cores = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
    offsets = np.cumsum(lengths, dtype=np.int64) - np.asarray(lengths, dtype=np.int64)
    slots = np.arange(tasks.shape[0], dtype=np.int64) - np.repeat(offsets, lengths)
    unknown = np.flatnonzero((tasks < 0) | (tasks >= n))
    if unknown.size:
        i = int(unknown[0])
        raise ScheduleViolationError(
            f"core {int(cores[i])} lists unknown task id {int(tasks[i])} (tasks are 0..{n - 1})"
        )
    outside = np.flatnonzero(cores >= target.cores)
    if outside.size:
        i = int(outside[0])
        raise ScheduleViolationError(
            f"task {graph.names[int(tasks[i])]!r} is on core {int(cores[i])} but target "
            f"{target.name} has {target.cores} cores (0..{target.cores - 1})"
        )
    count = np.bincount(tasks, minlength=n)
    if (count > 1).any():
        task = int(np.flatnonzero(count > 1)[0])
        where = ", ".join(str(int(p)) for p in cores[tasks == task])
        raise ScheduleViolationError(
            f"task {graph.names[task]!r} is scheduled {int(count[task])} times (cores {where})"
        )
    if (count == 0).any():
        task = int(np.flatnonzero(count == 0)[0])
        raise ScheduleViolationError(f"task {graph.names[task]!r} is not scheduled on any core")
    core = np.empty(n, dtype=np.int64)
    slot = np.empty(n, dtype=np.int64)
    core[tasks] = cores
    slot[tasks] = slots
    return core, slot


def task_costs(problem: LatencyProblem, core: np.ndarray) -> np.ndarray:
    """Cost of each task on its assigned core."""
    graph = problem.graph
    if graph.core_cost is None:
        return graph.cost
    return graph.core_cost[np.arange(graph.num_tasks), core]


def edge_delays(problem: LatencyProblem, core: np.ndarray) -> np.ndarray:
    """``transfer_ns`` of every edge for the given placement (0 on the same core)."""
    graph, target = problem.graph, problem.target
    src_core = core[graph.edge_src]
    dst_core = core[graph.edge_dst]
    cross = np.flatnonzero(src_core != dst_core)
    delay = np.zeros(graph.num_edges, dtype=np.int64)
    delay[cross] = [
        target.transfer_ns(a, b, nbytes, direct)
        for a, b, nbytes, direct in zip(
            src_core[cross].tolist(),
            dst_core[cross].tolist(),
            graph.edge_bytes[cross].tolist(),
            graph.edge_direct[cross].tolist(),
            strict=True,
        )
    ]
    return delay


def evaluate(problem: LatencyProblem, schedule: Schedule) -> Evaluation:
    """Recompute the timing of ``schedule`` on ``problem`` from its per-core order.

    One Kahn pass over the dependency edges plus the core-order chains, O(T + E + P)
    plus one ``transfer_ns`` call per cross-core edge.

    Raises
    ------
    ScheduleViolationError
        If a task is placed wrongly (see `placement`) or the core order deadlocks
        against the dependencies; the message names a task on the cycle.
    """
    graph = problem.graph
    n = graph.num_tasks
    core, slot = placement(problem, schedule)
    cost = task_costs(problem, core)
    delay = edge_delays(problem, core)

    by_src = np.argsort(graph.edge_src, kind="stable")
    first_edge = np.searchsorted(graph.edge_src[by_src], np.arange(n + 1)).tolist()
    succ = graph.edge_dst[by_src].tolist()
    succ_delay = delay[by_src].tolist()
    next_on_core = [-1] * n
    for order in schedule.core_order:
        for a, b in itertools.pairwise(order):
            next_on_core[a] = b
    waiting = (np.bincount(graph.edge_dst, minlength=n) + (slot > 0)).tolist()
    cost_list = cost.tolist()
    data_ready = [0] * n
    path_ready = [0] * n
    core_free = [0] * n
    start = [0] * n
    path_finish = [0] * n
    finish = [0] * n
    stack = [t for t in range(n) if waiting[t] == 0]
    done = 0
    while stack:
        t = stack.pop()
        done += 1
        s = max(data_ready[t], core_free[t])
        f = s + cost_list[t]
        pf = path_ready[t] + cost_list[t]
        start[t], finish[t], path_finish[t] = s, f, pf
        for k in range(first_edge[t], first_edge[t + 1]):
            d = succ[k]
            x = succ_delay[k]
            if f + x > data_ready[d]:
                data_ready[d] = f + x
            if pf + x > path_ready[d]:
                path_ready[d] = pf + x
            waiting[d] -= 1
            if waiting[d] == 0:
                stack.append(d)
        nxt = next_on_core[t]
        if nxt >= 0:
            core_free[nxt] = f
            waiting[nxt] -= 1
            if waiting[nxt] == 0:
                stack.append(nxt)
    if done < n:
        _raise_deadlock(problem, schedule, core, slot, waiting)

    per_core = np.zeros(problem.target.cores, dtype=np.int64)
    np.add.at(per_core, core, cost)
    start_ns = np.asarray(start, dtype=np.int64)
    finish_ns = np.asarray(finish, dtype=np.int64)
    start_ns.setflags(write=False)
    finish_ns.setflags(write=False)
    return Evaluation(
        start_ns=start_ns,
        finish_ns=finish_ns,
        serial_work_ns=int(cost.sum()),
        per_core_work_ns=tuple(per_core.tolist()),
        critical_path_ns=max(path_finish, default=0),
        transfer_work_ns=int(delay.sum()),
        makespan_ns=max(finish, default=0),
        cores_used=schedule.cores_used,
    )


def _raise_deadlock(
    problem: LatencyProblem,
    schedule: Schedule,
    core: np.ndarray,
    slot: np.ndarray,
    waiting: list[int],
) -> NoReturn:
    """Name a task on a cycle of dependencies and core order, then raise.

    Every task left waiting has a waiting predecessor (on its core or by an edge),
    so walking back from the smallest waiting task, always taking the core
    predecessor first and otherwise the waiting dependency of smallest edge id,
    must revisit a task: that task lies on the cycle.
    """
    graph = problem.graph
    task = next(t for t, w in enumerate(waiting) if w > 0)
    seen: dict[int, int] = {}
    while task not in seen:
        seen[task] = len(seen)
        s = int(slot[task])
        before = schedule.core_order[int(core[task])][s - 1] if s > 0 else -1
        if before >= 0 and waiting[before] > 0:
            task = before
            continue
        preds = graph.edge_src[graph.predecessor_edges(task)].tolist()
        task = next(p for p in preds if waiting[p] > 0)
    length = len(seen) - seen[task]
    raise ScheduleViolationError(
        f"deadlock: task {graph.names[task]!r} waits on itself through a cycle of "
        f"{length} tasks in dependencies and core order"
    )
