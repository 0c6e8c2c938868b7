"""``reports/pipeline_selection.json``: how a pipeline compile chose its schedule.

A JSON-ready dict rendered by `raptor_cp.reports.output.dumps` (sorted keys, no
timestamps) from the solver's `PipelineSelection`. It follows the seeds' list
(scheduling.md, "Default throughput selection": "Spatial costs, eligibility,
selection, and backend attempts ... search parents, compact task-stage runs,
core budgets, recurrence contributions, termination, attempts, queue budget,
and phase times"):

* ``interval``: the selected schedule's interval and where it comes from (the
  selected candidate's queue estimate, or the analytic proxy when no queue
  comparison ran, with the reason);
* ``costs``: the selected candidate's Spatial costs: the target's queue
  evidence (both tie orders, core work, memory-controller service, binding
  term, the generations each tie order ran and its ``window_generations``: 2
  by the one-percent test, or the cycle it repeats exactly), the analytic
  proxy of the placed plan (``analytic_interval``: per-core work, stage span,
  boundary service; the stage span is a latency, not an initiation interval)
  and the ranking proxy;
* ``candidates``: every candidate built, with its stages, core budgets, search
  parent and move, proxy, whether the move relieved a bottleneck stage of its
  parent (``relieves_parent_bottleneck``: the shortlist ranked it at its proxy
  value if so, 2.1 % higher if not), analytic interval, ``queue_estimate_ns``
  and eligibility (candidate 0 is the initialized schedule; the latency schedule as
  one stage is a second root, ``latency_candidate`` says which candidate or why
  none); ``search_parents`` and ``rounds`` give the beam's history,
  ``attempts`` every proposal tried and its outcome;
* ``selection``: the 2.1 % near-equivalence decision; ``termination``;
  ``queue_budget`` (``queue_evaluations_used`` of 32, constructive packings
  used of 128); ``recurrence_contributions`` of the selected schedule per
  stage; ``task_stage_runs`` (compact runs of consecutive task ids in one
  stage) and per-stage rows of the selected plan;
* ``phase_times_s``: measured wall times (initialization phases, the latency
  schedule, then neighbourhood scoring, constructive packing,
  dependency-witness analysis and queue execution with the realization; the
  last two are summed over the processes evaluating a round side by side,
  `raptor_cp.forked`, so they can exceed ``total``): the one field that
  differs between two runs.

No field is a placeholder: a value that does not exist is None next to a
``*_why`` field saying why.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from raptor_cp.bounds import interval_lower_bound
from raptor_cp.pipeline.plan import PipelinePlan
from raptor_cp.pipeline.selection import MARGIN, Candidate, PipelineSelection
from raptor_cp.targets.base import RealizedScheduleCost

if TYPE_CHECKING:
    from raptor_cp.flows import PipelineResult

SELECTION_FORMAT = "raptor-cp-pipeline-selection"
FORMAT_VERSION = 2
BACKEND_WHY = (
    "compiled without --emit: no candidate was lowered to instructions, so there was no "
    "backend resource retry"
)


def task_stage_runs(task_stage: np.ndarray) -> list[list[int]]:
    """Compact ``[first task, stop task, stage]`` runs of consecutive task ids in one stage."""
    if task_stage.size == 0:
        return []
    change = np.flatnonzero(np.diff(task_stage)) + 1
    starts = np.concatenate([[0], change])
    stops = np.concatenate([change, [task_stage.size]])
    return [[int(a), int(b), int(task_stage[a])] for a, b in zip(starts, stops, strict=True)]


def _ns(value: Fraction) -> float:
    return round(float(value), 3)


def queue_evidence(cost: RealizedScheduleCost) -> dict[str, object]:
    """The target's evidence on one realized schedule, as JSON."""
    return {
        "status": cost.status,
        "reasons": list(cost.reasons),
        "static_support": cost.static_support,
        "estimate_ns": cost.estimate_ns,
        "binding": cost.binding,
        "index_interval_ns": cost.index_interval_ns,
        "reversed_interval_ns": cost.reversed_interval_ns,
        "core_work_ns": max(cost.core_work_ns, default=None),
        "memory_service_ns": cost.memory_service_ns,
        "generations": list(cost.generations),
        "window_generations": list(cost.window_generations),
        "events": cost.events,
    }


def recurrence_contributions(candidate: Candidate) -> dict[str, object]:
    """Per stage, the delay the critical recurrence cycle spends on its cores."""
    cost = candidate.cost
    if cost is None or cost.recurrence is None:
        if cost is None:
            why = "no queue comparison ran, so no recurrence was analysed"
        elif cost.recurrence_analysed:
            why = "the event graph has no cycle"
        else:
            why = (
                "not analysed: its queue estimate ranked behind the beam's two best when it "
                "was evaluated, and a recurrence only guides a parent's moves"
            )
        return {"ratio_ns": None, "why": why}
    stage_of_core = candidate.plan.schedule.stage or ()
    per_stage: dict[int, int] = {}
    for core, ns in cost.recurrence.core_delay_ns.items():
        stage = stage_of_core[core] if core < len(stage_of_core) else -1
        per_stage[stage] = per_stage.get(stage, 0) + ns
    return {
        "ratio_ns": cost.recurrence.ratio_ns,
        "distance": cost.recurrence.distance,
        "stage_delay_ns": [{"stage": s, "delay_ns": ns} for s, ns in sorted(per_stage.items())],
    }


def _candidate_row(candidate: Candidate, selected: int) -> dict[str, object]:
    cost = candidate.cost
    row: dict[str, object] = {
        "index": candidate.index,
        "parent": candidate.parent,
        "round": candidate.round,
        "move": candidate.move,
        "stage_ranges": [[s.first, s.stop] for s in candidate.stages],
        "core_budgets": [s.cores for s in candidate.stages],
        "proxy": None if candidate.proxy is None else candidate.proxy.to_json(),
        "relieves_parent_bottleneck": candidate.relieves_bottleneck,
        "analytic_interval_ns": candidate.plan.interval_ns,
        "queue_estimate_ns": candidate.estimate_ns,
        "selected": candidate.index == selected,
        "selection_eligible": cost is not None and cost.available,
    }
    if candidate.parent is None:
        row["parent_why"] = (
            "the initialized schedule is the search's root"
            if candidate.index == 0
            else "a second root: the latency schedule as one stage, evaluated with the first "
            "round (not proposed by a move)"
        )
        row["relieves_parent_bottleneck_why"] = "a root has no parent"
    if candidate.proxy is None:
        row["proxy_why"] = "a stage has no packing at its budget under the allocation costs"
    if cost is None:
        row["queue_estimate_why"] = "not queue-evaluated: " + (
            "a single candidate skips the queue comparison"
            if candidate.index == 0
            else "the queue evaluation budget was spent"
        )
        row["eligibility_reasons"] = ["no queue estimate"]
    else:
        row["queue"] = queue_evidence(cost)
        row["eligibility_reasons"] = list(cost.reasons)
        row["recurrence_contributions"] = recurrence_contributions(candidate)
    return row


def _stage_rows(plan: PipelinePlan, candidate: Candidate) -> list[dict[str, object]]:
    rows = []
    proxy = candidate.proxy
    for s, (stage, placement, region, evidence) in enumerate(
        zip(plan.stages, plan.placements, plan.layout.regions, candidate.packing, strict=True)
    ):
        timing = placement.timing
        rows.append(
            {
                "stage": s,
                "groups": [stage.first, stage.stop],
                "operations": [plan.groups.names[stage.first], plan.groups.names[stage.stop - 1]],
                "tasks": len(placement.tasks),
                "core_budget": stage.cores,
                "cores": list(region),
                "cores_used": len(set(placement.cores)),
                "stage_cost_ns": None if proxy is None else proxy.stage_cost[s],
                "packing": evidence,
                "core_work_ns": timing.demand_ns,
                "compute_ns": timing.compute_ns,
                "span_ns": timing.span_ns,
                "window_ns": timing.window_ns,
                "placement": placement.candidate,
                "placement_candidates": dict(placement.candidates),
                "store_ns": plan.boundary.stage_store_ns[s],
                "load_ns": plan.boundary.stage_load_ns[s],
            }
        )
    return rows


def _backend_attempts(result: PipelineResult) -> dict[str, object]:
    """Each costed candidate the backend tried (``--emit``), and why there were none."""
    attempts: dict[str, object] = {
        "backend_attempts": [a.to_json() for a in result.backend_attempts]
    }
    if result.program is None and not result.backend_attempts:
        attempts["backend_attempts_why"] = BACKEND_WHY
    return attempts


def _interval(selection: PipelineSelection, chosen: Candidate) -> dict[str, object]:
    if chosen.estimate_ns is not None:
        return {
            "interval_ns": chosen.estimate_ns,
            "source": "queue estimate",
            "binding": None if chosen.cost is None else chosen.cost.binding,
        }
    return {
        "interval_ns": chosen.plan.interval_ns,
        "source": "analytic proxy",
        "binding": chosen.plan.estimate.binding,
        "why": selection.decision.rule,
    }


def selection_document(result: PipelineResult) -> dict[str, object]:
    """Build ``reports/pipeline_selection.json`` of a pipeline compile (module docstring)."""
    plan, selection = result.solution.plan, result.solution.selection
    assert plan is not None and selection is not None
    graph, target = result.problem.graph, result.problem.target
    chosen = result.candidate
    initial = selection.initial
    partition = initial.partition
    decision = selection.decision
    queue_used, queue_budget = selection.queue_evaluations
    packings_used, packings_budget = selection.constructive_packings
    costs: dict[str, object] = {
        "analytic_interval": plan.estimate.to_json(),
        "proxy": None if chosen.proxy is None else chosen.proxy.to_json(),
    }
    if chosen.proxy is None:
        costs["proxy_why"] = "a stage has no packing at its budget under the allocation costs"
    if chosen.cost is None:
        costs["queue"] = None
        costs["queue_why"] = decision.rule
    else:
        costs["queue"] = queue_evidence(chosen.cost)
    return {
        "format": SELECTION_FORMAT,
        "version": FORMAT_VERSION,
        "model": result.prepared.model,
        "target": target.name,
        "pipeline_depth": result.problem.depth,
        "solver": selection.solver,
        "groups": [
            {"group": g, "operation": name, "tasks": len(tasks)}
            for g, (name, tasks) in enumerate(
                zip(plan.groups.names, plan.groups.tasks, strict=True)
            )
        ],
        "interval": _interval(selection, chosen),
        "stages": _stage_rows(plan, chosen),
        "core_budgets": list(plan.budgets),
        "partition_core_budgets": [s.cores for s in partition.stages or ()],
        "idle_cores": target.cores - sum(plan.budgets),
        "task_stage_runs": task_stage_runs(plan.task_stage(graph.num_tasks)),
        "costs": costs,
        "boundary": plan.boundary.to_json(),
        "baseline_memory": plan.baseline.to_json(),
        "bounds": {
            **{f"lower_{k}": v for k, v in interval_lower_bound(graph, target).items()},
            "partition_objective_ns": partition.objective,
            "partition_bound_ns": partition.bound,
            "partition_status": partition.status.value,
            **(
                {"partition_bound_why": "the prefix DP proves its objective only on an exact grid"}
                if partition.bound is None
                else {}
            ),
        },
        "partition": {
            "solver": partition.solver,
            **{k: partition.details[k] for k in sorted(partition.details)},
        },
        "candidates": [_candidate_row(c, decision.selected) for c in selection.candidates],
        "selection": {
            "selected": decision.selected,
            "best": decision.best,
            "ties": list(decision.ties),
            "band_ns": None if decision.band_ns is None else [_ns(v) for v in decision.band_ns],
            "rule": decision.rule,
            "near_equivalence_margin": float(MARGIN),
            **({"best_why": decision.rule} if decision.best is None else {}),
        },
        "eligibility": {
            "selection_eligible": chosen.cost is not None and chosen.cost.available,
            "reasons": ["single candidate: no queue estimate needed"]
            if chosen.cost is None
            else list(chosen.cost.reasons),
        },
        "search_parents": [
            {"candidate": c.index, "parent": c.parent, "round": c.round, "move": c.move}
            for c in selection.candidates
            if c.parent is not None
        ],
        "rounds": [
            {"round": r, "beam": list(beam), "evaluated": list(found)}
            for r, beam, found in selection.rounds
        ],
        "recurrence_contributions": recurrence_contributions(chosen),
        "attempts": [
            {
                "round": a.round,
                "parent": a.parent,
                "move": a.move,
                "stages": [list(s) for s in a.stages],
                "outcome": a.outcome,
                "candidate": a.candidate,
            }
            for a in selection.attempts
        ],
        **_backend_attempts(result),
        "termination": selection.termination,
        "latency_candidate": selection.latency_root or None,
        **(
            {}
            if selection.latency_root
            else {"latency_candidate_why": "the search did not run (a single candidate)"}
        ),
        "queue_budget": {
            "queue_evaluations": queue_budget,
            "queue_evaluations_used": queue_used,
            "constructive_packings": packings_budget,
            "constructive_packings_used": packings_used,
        },
        "work": dict(selection.work),
        "phase_times_s": {k: round(v, 6) for k, v in selection.phase_times_s.items()},
    }
