"""The latency problem: schedule every task of a graph on a target to minimise makespan.

`LatencyProblem` is what HEFT, PEFT and the CP-SAT latency model all solve, and
`check_latency` the independent checker every one of their schedules goes
through. It knows nothing about who produced a schedule and enforces, in this
order:

1. placement: one start time per task, every task exactly once, on a core the
   target has (`raptor_cp.evaluation.placement`);
2. resident-weight capacity: the distinct weights of the tasks on a core fit
   ``target.capacity(core)``;
3. core order against dependencies: no task is placed after one of its
   successors on the same core, and the core orders do not deadlock through
   dependencies across cores;
4. estimated starts: no negative start, and each task starts no earlier than the
   task before it on its core finishes, nor before each predecessor's finish plus
   its transfer to this core. Starting later is legal (idle time); by induction
   these rules imply every start is at or after `evaluate`'s earliest start.

Each failure raises `ScheduleViolationError` with one line naming the task (or
core) and the rule.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from raptor_cp.errors import InvalidInstanceError, ProvedInfeasibleError, ScheduleViolationError
from raptor_cp.evaluation import edge_delays, evaluate, placement, task_costs
from raptor_cp.graph import ComputeGraph
from raptor_cp.limits import check_horizon
from raptor_cp.problems.base import Solution
from raptor_cp.schedule import Schedule
from raptor_cp.targets.base import SchedulingTarget


@dataclass(frozen=True)
class LatencyProblem:
    """Schedule every task of ``graph`` on the cores of ``target`` to minimise makespan.

    Raises
    ------
    InvalidInstanceError
        When the graph is malformed, a task fits no core, or the horizon (slowest
        costs plus dearest transfers) exceeds `raptor_cp.limits.MAX_TIME_NS`.
    ProvedInfeasibleError
        When one copy of every resident weight exceeds the whole chip.
    """

    graph: ComputeGraph
    target: SchedulingTarget

    def __post_init__(self) -> None:
        if self.graph.core_cost is not None and self.graph.core_cost.shape[1] != self.target.cores:
            raise InvalidInstanceError(
                f"{self.graph.name}: per-core costs for {self.graph.core_cost.shape[1]} cores "
                f"but target {self.target.name} has {self.target.cores}"
            )
        capacities = [self.target.capacity(p) for p in range(self.target.cores)]
        self.graph.validate(capacities)
        check_horizon(self.graph, self.target)
        slots = self.graph.distinct_weight_slots()
        if slots > sum(capacities):
            raise ProvedInfeasibleError(
                f"{self.graph.name}: one copy of every resident weight needs {slots} slots "
                f"but {self.target.name} holds {sum(capacities)} in {self.target.cores} cores "
                f"(at least {-(-slots // max(capacities))} cores of {max(capacities)} needed)"
            )


@dataclass(frozen=True)
class LatencySolution(Solution):
    """A schedule (if found) with its quality evidence; ``objective`` is its makespan in ns."""

    schedule: Schedule | None


def check_latency(problem: LatencyProblem, solution: LatencySolution) -> None:
    """Raise `ScheduleViolationError` unless ``solution`` is valid and its objective exact.

    A solution without a schedule passes (there is nothing to check).
    """
    if solution.schedule is None:
        return
    makespan = check_schedule(problem, solution.schedule)
    if solution.objective is not None and solution.objective != makespan:
        raise ScheduleViolationError(
            f"{problem.graph.name}: reported makespan {solution.objective} ns but the schedule's "
            f"is {makespan} ns"
        )


def check_schedule(problem: LatencyProblem, schedule: Schedule) -> int:
    """Raise unless ``schedule`` is a valid schedule of ``problem``; return its makespan."""
    core, slot = placement(problem, schedule)
    check_capacity(problem, core)
    check_core_order(problem, core, slot)
    makespan = int(evaluate(problem, schedule).makespan_ns)  # raises on a cross-core deadlock
    _check_starts(problem, schedule, core)
    return makespan


def resident_slots(problem: LatencyProblem, core: np.ndarray) -> np.ndarray:
    """Per core, the weight slots of the union of its tasks' resident weights."""
    graph = problem.graph
    counts = [len(w) for w in graph.task_weights]
    weights = np.fromiter(itertools.chain.from_iterable(graph.task_weights), dtype=np.int64)
    pair_core = np.repeat(core, counts)
    stride = max(graph.num_weights, 1)
    keys = np.unique(pair_core * stride + weights)
    slots = np.zeros(problem.target.cores, dtype=np.int64)
    np.add.at(slots, keys // stride, graph.weight_size[keys % stride])
    return slots


def check_capacity(problem: LatencyProblem, core: np.ndarray) -> None:
    """Raise if the distinct resident weights placed on a core exceed its capacity."""
    target = problem.target
    need = resident_slots(problem, core)
    capacity = np.array([target.capacity(p) for p in range(target.cores)], dtype=np.int64)
    over = np.flatnonzero(need > capacity)
    if over.size:
        p = int(over[0])
        raise ScheduleViolationError(
            f"core {p} needs {int(need[p])} resident weight slots but holds {int(capacity[p])}"
        )


def check_core_order(problem: LatencyProblem, core: np.ndarray, slot: np.ndarray) -> None:
    """Raise if a task sits after one of its successors on the same core."""
    graph = problem.graph
    src, dst = graph.edge_src, graph.edge_dst
    bad = np.flatnonzero((core[src] == core[dst]) & (slot[src] > slot[dst]))
    if bad.size:
        e = int(bad[0])
        a, b = int(src[e]), int(dst[e])
        raise ScheduleViolationError(
            f"task {graph.names[a]!r} is placed after its successor {graph.names[b]!r} "
            f"on core {int(core[a])}"
        )


def _check_starts(problem: LatencyProblem, schedule: Schedule, core: np.ndarray) -> None:
    """Check the estimated starts against core order and data arrival (smallest task first)."""
    graph = problem.graph
    names = graph.names
    start = schedule.start_ns
    finish = start + task_costs(problem, core)
    negative = np.flatnonzero(start < 0)
    if negative.size:
        t = int(negative[0])
        raise ScheduleViolationError(f"task {names[t]!r} starts at negative time {int(start[t])}")
    arrival = finish[graph.edge_src] + edge_delays(problem, core)
    late_edges = np.flatnonzero(start[graph.edge_dst] < arrival)
    prev = np.array([o[i - 1] for o in schedule.core_order for i in range(1, len(o))], np.int64)
    nxt = np.array([o[i] for o in schedule.core_order for i in range(1, len(o))], np.int64)
    overlaps = np.flatnonzero(start[nxt] < finish[prev])
    by_edge = int(graph.edge_dst[late_edges].min()) if late_edges.size else graph.num_tasks
    by_core = int(nxt[overlaps].min()) if overlaps.size else graph.num_tasks
    if by_core < by_edge:
        i = int(overlaps[nxt[overlaps] == by_core][0])
        p = int(prev[i])
        raise ScheduleViolationError(
            f"task {names[by_core]!r} starts at {int(start[by_core])} ns before "
            f"{names[p]!r}, the task before it on core {int(core[p])}, finishes at "
            f"{int(finish[p])} ns"
        )
    if by_edge < graph.num_tasks:
        e = int(late_edges[graph.edge_dst[late_edges] == by_edge][0])
        p = int(graph.edge_src[e])
        raise ScheduleViolationError(
            f"task {names[by_edge]!r} starts at {int(start[by_edge])} ns before the data of "
            f"{names[p]!r} (core {int(core[p])}) reaches core {int(core[by_edge])} at "
            f"{int(arrival[e])} ns"
        )
