"""The periodic diagnostic document (``pipeline_periodic.json`` and ``raptor-cp periodic``).

`periodic_document` writes a `PeriodicAnalysis` (`raptor_cp.periodic.analysis`:
recurrence, its cross-check, queue estimates, interval estimate) down as JSON,
with the effects the abstract execution model leaves out; `unavailable_document`
writes the explicit ``unavailable`` report of a program the model cannot time
(a target without complete timing, timing outside the supported range, a form
the target's lowering rejects). The estimates are conditional on that model,
not simulator predictions or guaranteed lower bounds, so the document is never
eligible for schedule selection. Formatting only: nothing is analysed here.
"""

from __future__ import annotations

from typing import Any

from raptor_cp.periodic.analysis import DEADLOCK_REASON, PeriodicAnalysis, Recurrence
from raptor_cp.periodic.events import NO_RESOURCE, EventGraph, EventKind
from raptor_cp.periodic.queue_engine import QueueEstimate

STATUS_ANALYSED = "analysed"
STATUS_UNAVAILABLE = "unavailable"

TIMING_GRAPH_LIMIT = 128
"""Documents of graphs with at most this many events include ``timing_graph``."""

MISSING_EFFECTS = (
    "network contention past each source switch's FIFO (links, destination switches)",
    "local-memory port contention between a core's units; each phase is priced alone",
    "issue and retirement of communication instructions; clock-phase ordering",
    "the recurrence omits memory-controller arbitration and the bootstrap generations "
    "(the queue estimates model the bootstrap; the memory_controller estimate arbitration)",
)
"""Effects the abstract execution model does not capture, for every document."""
NO_NETWORK_QUEUES = (
    "source-switch FIFOs are not modelled (--no-model-network-queues): messages do not "
    "wait for earlier messages of their switch"
)
NO_MEMORY_CONTROLLER = (
    "memory-controller arbitration is not modelled in the queue estimate (requests do not "
    "wait for each other; --model-memory-controller adds the memory_controller estimate)"
)


def periodic_document(
    analysis: PeriodicAnalysis,
    *,
    source: str,
    target: str,
    missing_effects: tuple[str, ...] = (),
) -> dict[str, Any]:
    """The JSON-ready periodic diagnostic of ``analysis``.

    ``source`` and ``target`` name what was analysed; ``missing_effects`` adds
    frontend-specific omissions to `MISSING_EFFECTS` and the graph's notes.
    """
    events = analysis.events
    memory, estimate, model = analysis.memory, analysis.estimate, analysis.model
    document: dict[str, Any] = {
        "source": source,
        "target": target,
        "status": STATUS_ANALYSED,
        "selection_eligible": False,
        "model": {
            "network_queues": model.network_queues,
            "memory_controller": model.memory_controller,
        },
        "events": events.num_events,
        "dependencies": events.num_edges,
        "recurrence_edges": analysis.recurrence_edges,
        "active_cores": list(analysis.active_cores),
        "recurrence": _recurrence(events, analysis.recurrence),
        "cross_check": _cross_check(events, analysis),
        "generation_span_ns": analysis.generation_span_ns,
        "single_pass": (
            {
                "latency_ns": None,
                "alternative_tie_latency_ns": None,
                "reason": DEADLOCK_REASON,
                "unqueued_ns": None,
            }
            if analysis.single_pass is None
            else analysis.single_pass.to_json()
        ),
        "core_work_ns": {str(c): ns for c, ns in analysis.core_work_ns.items()},
        "busiest_core": analysis.busiest_core,
        "memory_service": {
            "requests": memory.requests,
            "loads": memory.loads,
            "stores": memory.stores,
            "service_ns": memory.service_ns,
            "baseline_service_ns": memory.baseline_service_ns,
        },
        "interval_estimate": {
            "recurrence_ns": estimate.recurrence_ns,
            "core_work_ns": estimate.core_work_ns,
            "memory_service_ns": estimate.memory_service_ns,
            "ns": estimate.ns,
            "bound_by": estimate.bound_by,
        },
        "queue": _queue(analysis.queue),
        "memory_controller": None
        if not model.memory_controller
        else _queue(analysis.memory_controller),
        "missing_effects": [
            *MISSING_EFFECTS,
            *([] if model.network_queues else [NO_NETWORK_QUEUES]),
            *([] if model.memory_controller else [NO_MEMORY_CONTROLLER]),
            *missing_effects,
            *events.notes,
        ],
    }
    if events.num_events <= TIMING_GRAPH_LIMIT:
        document["timing_graph"] = timing_graph(events)
    return document


def unavailable_document(
    reason: str, *, source: str, target: str, missing_effects: tuple[str, ...] = ()
) -> dict[str, Any]:
    """The explicit ``unavailable`` report: no estimate, the reason, the model's omissions."""
    return {
        "source": source,
        "target": target,
        "status": STATUS_UNAVAILABLE,
        "reason": reason,
        "selection_eligible": False,
        "missing_effects": [*MISSING_EFFECTS, *missing_effects],
    }


def _queue(estimate: QueueEstimate | None) -> dict[str, Any]:
    if estimate is None:
        return {"status": STATUS_UNAVAILABLE, "reason": DEADLOCK_REASON}
    return estimate.to_json()


def _cross_check(events: EventGraph, analysis: PeriodicAnalysis) -> dict[str, Any] | None:
    """The cross-check's result and whether it agrees with the primary method exactly."""
    checked = analysis.cross_check
    if checked is None:
        return None
    primary = analysis.recurrence
    document = _recurrence(events, checked)
    same_ratio = (primary.ratio is None) == (checked.ratio is None) and (
        primary.ratio is None
        or checked.ratio is None
        or (primary.ratio.ratio == checked.ratio.ratio and primary.ratio.exact)
    )
    document["agrees"] = primary.status == checked.status and same_ratio
    return document


def _recurrence(events: EventGraph, recurrence: Recurrence) -> dict[str, Any]:
    status, method = recurrence.status, recurrence.method
    if recurrence.deadlock is not None:
        return {
            "status": status,
            "method": method,
            "interval_ns": None,
            "cycle": [describe_event(events, x) for x in recurrence.deadlock],
        }
    result = recurrence.ratio
    if result is None:
        return {"status": status, "method": method, "interval_ns": None}
    witness = result.witness.to_json()
    shown = sorted(
        {e["source"] for e in witness["edges"]} | {e["target"] for e in witness["edges"]}
    )
    witness["events"] = [describe_event(events, x) for x in shown]
    witness["breakdown"] = events.cycle_breakdown(result.cycle)
    return {
        "status": status,
        "method": method,
        "interval_ns": recurrence.interval_ns,
        "ratio": f"{result.ratio.numerator}/{result.ratio.denominator}",
        "exact": result.exact,
        "bound": f"{result.bound.numerator}/{result.bound.denominator}",
        "iterations": result.iterations,
        "sweeps": result.sweeps,
        "witness": witness,
    }


def describe_event(events: EventGraph, x: int) -> dict[str, Any]:
    """One event as ``{"id", "kind", "core", "step"}``."""
    return {
        "id": x,
        "kind": EventKind(int(events.kind[x])).name.lower(),
        "core": int(events.graph.core[x]),
        "step": int(events.step[x]),
    }


def timing_graph(events: EventGraph) -> dict[str, Any]:
    """Every event (with its resource and service) and dependency, for focused checks.

    Resources are ``"switch:<core>"`` or ``"memory"``; dependencies keep payload
    enqueue, switch dispatch and delivery apart as separate events.
    """
    g = events.graph
    rows = []
    for x in range(events.num_events):
        r = int(events.resource[x])
        resource = (
            None if r == NO_RESOURCE else "memory" if r == events.memory_resource else f"switch:{r}"
        )
        rows.append(
            {
                **describe_event(events, x),
                "resource": resource,
                "service_ns": int(events.service[x]),
                "released_by": int(events.release[x]),
            }
        )
    dependencies = [
        {"from": a, "to": b, "delay_ns": w, "distance": d}
        for a, b, w, d in zip(g.u.tolist(), g.v.tolist(), g.w.tolist(), g.d.tolist(), strict=True)
    ]
    return {"events": rows, "dependencies": dependencies}
