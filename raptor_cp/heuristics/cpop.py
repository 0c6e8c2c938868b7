"""CPOP: Critical-Path-on-a-Processor list scheduling (Topcuoglu, Hariri & Wu 2002, §4.2).

Priority is ``rank_u(t) + rank_d(t)``: the longest path through ``t`` with
mean costs and mean communication. Tasks whose priority equals the longest
path's length form the critical path (followed from the entry with the largest
priority, always to the successor of equal priority, smallest id on ties); all
of them go to the *critical-path processor*, the core minimising their summed
cost (lowest id on ties), whenever their resident weights fit there. Every other
task goes to its earliest-finish core with insertion, as in HEFT, and the ready
task of largest priority is listed next. The placement machinery, including the
resident-weight reservations, is HEFT's (`raptor_cp.heuristics.heft`).

Ranks are scaled by ``P`` like `upward_rank` so they stay exact integers.
Cost: ``O(E)`` for the downward rank and critical path on top of HEFT's.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from raptor_cp.heuristics.heft import heft_schedule, upward_rank
from raptor_cp.heuristics.list_common import list_solution
from raptor_cp.problems import LatencyProblem, LatencySolution


def downward_rank(problem: LatencyProblem) -> np.ndarray:
    """``rank_d(t) = max over predecessors s of (rank_d(s) + w̄(s) + c̄(s, t))`` times ``P``."""
    graph, target = problem.graph, problem.target
    cores = target.cores
    work = graph.core_cost.sum(axis=1) if graph.core_cost is not None else graph.cost * cores
    comm = [
        cores * target.mean_transfer_ns(b, direct=d)
        for b, d in zip(graph.edge_bytes.tolist(), graph.edge_direct.tolist(), strict=True)
    ]
    work_list = work.tolist()
    src = graph.edge_src.tolist()
    rank = [0] * graph.num_tasks
    for task in graph.topological_order.tolist():
        rank[task] = max(
            (rank[src[e]] + work_list[src[e]] + comm[e] for e in graph.predecessor_edges(task)),
            default=0,
        )
    return np.asarray(rank, dtype=np.int64)


def critical_path_pins(problem: LatencyProblem, priority: np.ndarray) -> np.ndarray:
    """Per task, the critical-path processor for critical-path tasks, -1 for the others."""
    graph = problem.graph
    pin = np.full(graph.num_tasks, -1, dtype=np.int64)
    if graph.num_tasks == 0:
        return pin
    length = int(priority.max())
    dst = graph.edge_dst
    entries = [t for t in range(graph.num_tasks) if graph.predecessor_edges(t).size == 0]
    task: int | None = min((t for t in entries if priority[t] == length), default=None)
    path: list[int] = []
    while task is not None:
        path.append(task)
        successors = dst[graph.successor_edges(task)]
        task = min((int(s) for s in successors if priority[s] == length), default=None)
    costs = graph.core_cost
    pin[path] = 0 if costs is None else int(np.argmin(costs[path].sum(axis=0)))
    return pin


@dataclass(frozen=True)
class CpopScheduler:
    """CPOP latency scheduler (no settings); see the module docstring."""

    name: ClassVar[str] = "cpop"

    def solve(self, problem: LatencyProblem) -> LatencySolution:
        """Schedule ``problem``; objective is `evaluate`'s makespan, bound the lower bounds'."""
        began = time.perf_counter()
        priority = upward_rank(problem) + downward_rank(problem)
        pins = critical_path_pins(problem, priority)
        schedule = heft_schedule(problem, priority=priority, pin=pins, name=self.name)
        return list_solution(problem, schedule, self.name, began)
