"""Audit the beam's selection against the exact optimum of its own cost proxy.

The beam refinement (`raptor_cp.pipeline.beam`) ranks proposals by a cheap
proxy and picks by queue estimates. `audit_selection` asks where its pick sits
against the exact optimum of that proxy over every partition and budget
vector: the same stage allocation costs (`StageCosts.allocation_cost`) and the
same memory demand (`RangeMemory`), as a `PartitionProblem` with a
``stage_memory`` term solved by the CP-SAT partition model
(`raptor_cp.models.partition`), whose objective is ``max(largest stage cost,
summed memory demand)`` -- the proxy's value.

The record's heuristic objective is the selected candidate's proxy; CP-SAT's
is the proxy optimum. The beam does not minimise the proxy (it minimises the
queue estimate among proxy-ranked proposals), so a gap is expected and is the
point of the audit; a selected proxy *below* CP-SAT's proved bound is a
disagreement (a bug). `SelectionDetails` adds the queue estimates of the
initialized schedule, the selected one and the proxy optimum's own schedule
(packed, placed and realized the way the search builds candidates), so the
report shows whether the proxy's optimum is also a good interval.

Only instances with at most ``max_entries`` stage-cost entries
(``G (G + 1) / 2 * P``) are solved exactly; every range's curve is priced in
one batch first.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from raptor_cp.audit.record import PIPELINE_WORDS, AuditRecord, disagreements
from raptor_cp.bounds import interval_lower_bound
from raptor_cp.errors import NotFoundWithinBudgetError
from raptor_cp.pipeline.beam import realized_cost
from raptor_cp.pipeline.proxy import RangeMemory
from raptor_cp.pipeline.stage_costs import StageCosts
from raptor_cp.problems import PartitionProblem, PipelineProblem, Stage, Status, check
from raptor_cp.solvers import solve

if TYPE_CHECKING:
    from raptor_cp.models.partition import CpSatPartitionModel


@dataclass(frozen=True)
class SelectionDetails:
    """What the selection audit adds to its record (integer ns; None: not available)."""

    instance: str
    depth: int
    selected: int
    """Evaluation index of the selected candidate."""
    selected_stages: tuple[tuple[int, int, int], ...]
    selected_queue_ns: int | None
    initial_proxy_ns: int | None
    initial_queue_ns: int | None
    optimum_stages: tuple[tuple[int, int, int], ...] | None
    """The proxy optimum's ``(first, stop, cores)`` stages (None: CP-SAT found none)."""
    optimum_queue_ns: int | None
    optimum_queue_why: str | None
    """Why the optimum has no queue estimate (None when it has one)."""


def audit_selection(
    problem: PipelineProblem, cpsat_model: CpSatPartitionModel, name: str
) -> tuple[AuditRecord, SelectionDetails]:
    """Run the beam on ``problem`` and compare its pick with the proxy optimum (module doc)."""
    from raptor_cp.models.partition import partition_entries

    solution = solve(problem, "beam")
    check(problem, solution)
    selection = solution.selection
    assert selection is not None
    chosen, initial = selection.selected, selection.candidates[0]
    costs = selection.initial.costs
    groups = costs.groups
    memory = RangeMemory(problem.graph, groups, problem.target)
    proxy = PartitionProblem(
        groups.count,
        problem.target.cores,
        problem.depth,
        costs.allocation_cost,
        name=f"{name}: selection proxy",
        stage_memory=lambda first, stop: sum(memory(first, stop)),
    )
    heuristic = None if chosen.proxy is None else chosen.proxy.value
    if heuristic is not None:
        stage_costs = [costs.allocation_cost(s.first, s.stop, s.cores) for s in chosen.stages]
        assert heuristic == proxy.objective(chosen.stages, stage_costs)  # type: ignore[arg-type]
    entries = partition_entries(proxy)
    cpsat = None
    skipped = None
    if entries > cpsat_model.max_entries:
        skipped = f"{entries} stage-cost entries > max_entries {cpsat_model.max_entries}"
    else:
        costs.prefetch(itertools.combinations(range(groups.count + 1), 2))
        cpsat = cpsat_model.solve(proxy)
    optimum_stages = None if cpsat is None or cpsat.stages is None else cpsat.stages
    optimum_queue, why = _optimum_queue(problem, costs, optimum_stages, name)
    # The proxy leaves the baseline memory out: only the compute terms bound it.
    floor = interval_lower_bound(problem.graph, problem.target)["compute_ns"]
    status = None if cpsat is None else cpsat.status
    objective = None if cpsat is None else cpsat.objective
    found = disagreements([], heuristic, Status.FEASIBLE, status, objective, floor, PIPELINE_WORDS)
    record = AuditRecord(
        instance=name,
        mode="pipeline",
        target=problem.target.name,
        tasks=problem.graph.num_tasks,
        heuristic="beam (proxy of its pick)",
        heuristic_objective=heuristic,
        heuristic_failure=None if heuristic is not None else "the pick has no proxy",
        heuristic_wall_s=solution.wall_s,
        critical_path_ns=floor,
        work_per_core_ns=0,
        cpsat_status=status,
        cpsat_objective=objective,
        cpsat_bound=None if cpsat is None else cpsat.bound,
        cpsat_wall_s=0.0 if cpsat is None else cpsat.wall_s,
        cpsat_skipped=skipped,
        disagreements=found,
    )
    details = SelectionDetails(
        instance=name,
        depth=problem.depth,
        selected=chosen.index,
        selected_stages=chosen.canonical,
        selected_queue_ns=chosen.estimate_ns,
        initial_proxy_ns=None if initial.proxy is None else initial.proxy.value,
        initial_queue_ns=initial.estimate_ns,
        optimum_stages=None
        if optimum_stages is None
        else tuple((s.first, s.stop, s.cores) for s in optimum_stages),
        optimum_queue_ns=optimum_queue,
        optimum_queue_why=why,
    )
    return record, details


def _optimum_queue(
    problem: PipelineProblem, costs: StageCosts, stages: tuple[Stage, ...] | None, name: str
) -> tuple[int | None, str | None]:
    """The queue estimate of the proxy optimum's schedule, or why there is none."""
    if stages is None:
        return None, "CP-SAT found no proxy optimum"
    try:
        _, cost = realized_cost(problem, costs, stages, f"{name} proxy optimum")
    except NotFoundWithinBudgetError as error:
        return None, f"not packed: {error}"
    if cost.estimate_ns is None:
        return None, "; ".join(cost.reasons)
    return cost.estimate_ns, None
