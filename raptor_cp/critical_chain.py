"""Why a schedule takes as long as it does: its critical chain and the resource that binds it.

The lower bound ``max(critical path, work / cores)`` assumes free communication
and cores that never wait for one another; a schedule far above it (ResNet-50
on arch-a: 5.5x) is held up by something the bound leaves out. `critical_chain`
walks back from the task that finishes last: each task started either when
the data of a predecessor arrived (a *data* link, carrying that edge's transfer
time) or when the task before it on its core finished (a *core* link). With
`raptor_cp.evaluation`'s earliest starts one of them is always tight, so the
chain covers the makespan exactly (idle time only before the first task), and
it splits into three parts:

* ``transfer_ns``: transfer times on the chain's data links (communication);
* ``queue_ns``: the run time of chain tasks the chain reached through a core
  link, i.e. work that delayed the next chain task only because both share a
  core (core contention: too few cores in use, often because resident weights
  pin work to the cores that hold them);
* ``dependency_ns``: the rest of the chain's run time (the dependencies).

`ChainBreakdown.binding` names the largest part. Ties at one start prefer a
data link (lowest edge id) over the core link, so the walk is deterministic.
``O(T + E)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from raptor_cp.evaluation import Evaluation, edge_delays, placement, task_costs

if TYPE_CHECKING:
    from raptor_cp.problems.latency import LatencyProblem
    from raptor_cp.schedule import Schedule

BINDING_WORDS = {
    "dependency": "dependencies",
    "transfer": "transfers between cores",
    "queue": "tasks queueing on busy cores",
}
"""How a summary line names each part of the chain."""


@dataclass(frozen=True)
class ChainBreakdown:
    """The makespan's critical chain split by cause (integer ns, summing to the makespan)."""

    dependency_ns: int
    transfer_ns: int
    queue_ns: int
    idle_ns: int
    """Before the chain's first task (0 for schedules from `raptor_cp.evaluation`)."""
    tasks: int
    """Tasks on the chain."""

    @property
    def binding(self) -> str:
        """``dependency``, ``transfer`` or ``queue``: the largest part (that order on ties)."""
        parts = {"dependency": self.dependency_ns, "transfer": self.transfer_ns}
        parts["queue"] = self.queue_ns
        return max(parts, key=lambda name: parts[name])

    def share(self, part: str) -> float:
        """``part``'s fraction of the chain (0 for an empty chain)."""
        total = self.dependency_ns + self.transfer_ns + self.queue_ns + self.idle_ns
        return getattr(self, f"{part}_ns") / total if total else 0.0


def critical_chain(
    problem: LatencyProblem, schedule: Schedule, evaluation: Evaluation
) -> ChainBreakdown:
    """The critical chain of ``schedule`` as ``evaluation`` times it (module docstring)."""
    graph = problem.graph
    if graph.num_tasks == 0:
        return ChainBreakdown(0, 0, 0, 0, 0)
    core, slot = placement(problem, schedule)
    cost = task_costs(problem, core).tolist()
    delay = edge_delays(problem, core).tolist()
    start = evaluation.start_ns.tolist()
    finish = evaluation.finish_ns.tolist()
    src = graph.edge_src.tolist()
    order = schedule.core_order
    task = int(np.argmax(evaluation.finish_ns))
    parts = {"dependency": 0, "transfer": 0, "queue": 0}
    entered_by_core = False
    tasks = 0
    while True:
        tasks += 1
        parts["queue" if entered_by_core else "dependency"] += cost[task]
        at = start[task]
        link = next(
            (e for e in graph.predecessor_edges(task).tolist() if finish[src[e]] + delay[e] == at),
            None,
        )
        if link is not None:
            parts["transfer"] += delay[link]
            task, entered_by_core = src[link], False
            continue
        position = int(slot[task])
        before = order[int(core[task])][position - 1] if position else None
        if before is not None and finish[before] == at:
            task, entered_by_core = before, True
            continue
        return ChainBreakdown(parts["dependency"], parts["transfer"], parts["queue"], at, tasks)
