"""PEFT and HEFT started from a weight-replication plan (portfolio members).

Each runs `raptor_cp.heuristics.replication.plan_replication` and then its list
scheduler with the plan's copies resident from the start, so a task chooses
among the cores holding a copy of its weights (and, where free slots remain,
any other core that can take one, as the seeds' reservations allow). Without a
plan (unlimited capacity, or no placement of the first copies found) they run
their base scheduler unchanged and say so in ``details["replication"]``.
Cost: one plan plus one base-scheduler run.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar

from raptor_cp.heuristics.heft import heft_schedule
from raptor_cp.heuristics.list_common import list_solution
from raptor_cp.heuristics.peft import peft_schedule
from raptor_cp.heuristics.replication import ReplicationPlan, plan_replication
from raptor_cp.problems import LatencyProblem, LatencySolution


def _plan_details(plan: ReplicationPlan | None) -> dict[str, object]:
    if plan is None:
        return {"replication": "none (unlimited capacity or no first-copy placement)"}
    return {
        "replication": plan.first_copies,
        "replicas": plan.replicas,
        "max_copies": int(plan.copies.max(initial=0)),
    }


@dataclass(frozen=True)
class ReplicatedPeftScheduler:
    """PEFT from a replication plan (module docstring)."""

    name: ClassVar[str] = "peft-replicas"

    def solve(self, problem: LatencyProblem) -> LatencySolution:
        began = time.perf_counter()
        plan = plan_replication(problem.graph, problem.target)
        reserved = None if plan is None else plan.reserved
        schedule, details = peft_schedule(problem, reserved=reserved, name=self.name)
        return list_solution(problem, schedule, self.name, began, details | _plan_details(plan))


@dataclass(frozen=True)
class ReplicatedHeftScheduler:
    """HEFT from a replication plan (module docstring)."""

    name: ClassVar[str] = "heft-replicas"

    def solve(self, problem: LatencyProblem) -> LatencySolution:
        began = time.perf_counter()
        plan = plan_replication(problem.graph, problem.target)
        reserved = None if plan is None else plan.reserved
        schedule = heft_schedule(problem, reserved=reserved, name=self.name)
        return list_solution(problem, schedule, self.name, began, _plan_details(plan))
