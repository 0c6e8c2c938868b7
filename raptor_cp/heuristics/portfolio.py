"""``auto``: a portfolio of the list schedulers; the shortest schedule wins.

Members, in tie-break order (issue #13; each measured in docs/benchmarks.md):

* ``peft``: the seeds' latency scheduler (`raptor_cp.heuristics.peft`), first so
  that ties go to it;
* ``heft``: upward-rank order, earliest finish (`raptor_cp.heuristics.heft`);
  on the STG-50 set it is optimal on 70 % of pairs against PEFT's 51 %, because
  PEFT's rank leaves out the task's own cost;
* ``peft-replicas`` and ``heft-replicas``: the same schedulers started from a
  weight-replication plan (`raptor_cp.heuristics.replication`); only run when
  some core's resident-weight capacity is finite, since elsewhere they equal
  their base member.

CPOP (`raptor_cp.heuristics.cpop`, registered as ``cpop``) was measured as a
member and left out: it won 4 of the 720 STG-50 pairs and none of the nine PIM
models, and took 107 s of ``auto``'s 245 s on 10^5 tasks (docs/benchmarks.md).

Every member's makespan is `evaluate`'s. The winner is the smallest makespan,
earlier member on ties. A member that reaches the analytic lower bound ends the
run (no later member can beat it). A member that finds no schedule within its
budget (`NotFoundWithinBudgetError`) is recorded and skipped; if all fail, the
portfolio raises with every member's reason. Cost: the sum of the members' (at
most four list-scheduling passes plus one replication plan), measured in
docs/benchmarks.md on 10^5 tasks.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import ClassVar

from raptor_cp.errors import NotFoundWithinBudgetError
from raptor_cp.problems import LatencyProblem, LatencySolution, Status
from raptor_cp.targets.base import UNLIMITED_CAPACITY

DEFAULT_MEMBERS = ("peft", "heft", "peft-replicas", "heft-replicas")
"""Portfolio members by registry name, in tie-break order."""
CAPACITY_MEMBERS = frozenset({"peft-replicas", "heft-replicas"})
"""Members that differ from their base member only under finite weight capacity."""


@dataclass(frozen=True)
class PortfolioScheduler:
    """Run ``members`` (registry names) and keep the shortest schedule (module docstring)."""

    name: ClassVar[str] = "auto"
    members: tuple[str, ...] = DEFAULT_MEMBERS

    def solve(self, problem: LatencyProblem) -> LatencySolution:
        """Best member's solution, relabelled ``auto``; ``details`` names the winner.

        ``details["winner"]`` is the winning member, ``details["members"]`` maps
        each member to its makespan (ns), or to why it has none (no schedule
        found, not run because capacity is unlimited, or not run because an
        earlier member met the bound).
        """
        from raptor_cp.solvers import make_solver

        began = time.perf_counter()
        target = problem.target
        unlimited = all(target.capacity(p) >= UNLIMITED_CAPACITY for p in range(target.cores))
        outcomes: dict[str, object] = {}
        best: tuple[LatencySolution, str] | None = None
        for member in self.members:
            if best is not None and best[0].status == Status.OPTIMAL:
                outcomes[member] = f"skipped: {best[1]} met the lower bound"
                continue
            if unlimited and member in CAPACITY_MEMBERS:
                outcomes[member] = "skipped: weight capacity unlimited"
                continue
            try:
                solution = make_solver(LatencyProblem, member).solve(problem)
            except NotFoundWithinBudgetError as error:
                outcomes[member] = f"not found: {error}"
                continue
            assert solution.objective is not None
            outcomes[member] = solution.objective
            if best is None or solution.objective < (best[0].objective or 0):
                best = (solution, member)
        if best is None:
            reasons = "; ".join(f"{m}: {r}" for m, r in outcomes.items())
            raise NotFoundWithinBudgetError(f"auto: no member found a schedule ({reasons})")
        solution, winner = best
        details = {**solution.details, "winner": winner, "members": outcomes}
        return dataclasses.replace(
            solution, solver=self.name, wall_s=time.perf_counter() - began, details=details
        )
