"""The periodic diagnostic document (``pipeline_periodic.json`` and ``raptor-cp periodic``).

`periodic_document` analyses an `EventGraph` two ways and writes both down:

* the *recurrence*: the maximum cycle ratio of the dependencies with each
  event's service on its in-edges (`EventGraph.recurrence_graph`), with a
  witness cycle; a cycle of distance-0 edges is reported as a deadlock;
* the *queue estimate*: the queue engine's converged interval in event-index and
  reversed tie order (`raptor_cp.periodic.queue_engine`).

The *interval estimate* is ``max(recurrence, largest per-core work, aggregate
memory-controller service)``. Each service appears in at most one term's own
accounting and the terms are combined by a maximum, never a sum, so no service
is counted twice. The within-generation dependency span (longest distance-0
path) is reported separately; it is not an initiation interval. These are
conditional estimates for the abstract execution model, not simulator
predictions or guaranteed lower bounds: the document lists the effects the
model leaves out and is never eligible for schedule selection.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from raptor_cp.periodic.cycle_ratio import DeadlockError, maximum_cycle_ratio
from raptor_cp.periodic.events import NO_RESOURCE, EventGraph, EventKind
from raptor_cp.periodic.queue_engine import queue_estimate

TIMING_GRAPH_LIMIT = 128
"""Documents of graphs with at most this many events include ``timing_graph``."""

MISSING_EFFECTS = (
    "network contention past each source switch's FIFO (links, destination switches)",
    "local-memory port contention between a core's units; each phase is priced alone",
    "issue and retirement of communication instructions; clock-phase ordering",
    "the recurrence omits memory-controller arbitration and the bootstrap generations "
    "(the queue estimate models both)",
)
"""Effects the abstract execution model does not capture, for every document."""


def periodic_document(
    events: EventGraph,
    *,
    source: str,
    target: str,
    method: str = "howard",
    missing_effects: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Analyse ``events`` and return the JSON-ready periodic diagnostic.

    ``source`` and ``target`` name what was analysed; ``missing_effects`` adds
    frontend-specific omissions to `MISSING_EFFECTS` and the graph's notes.
    """
    g = events.graph
    cores = sorted({int(c) for c in g.core.tolist() if c >= 0})
    work = {c: int(events.core_work[c]) for c in cores}
    busiest = max(cores, key=lambda c: (work[c], -c), default=None)
    requests = events.memory_requests
    kinds = events.kind[requests]
    memory = {
        "requests": int(requests.size),
        "loads": int(np.count_nonzero(kinds == EventKind.LOAD_SERVICE)),
        "stores": int(np.count_nonzero(kinds == EventKind.STORE_SERVICE)),
        "service_ns": events.memory_service_ns,
    }
    recurrence, deadlock = _recurrence(events, method)
    if deadlock is not None:
        reason = "deadlock: a cycle of distance-0 dependencies; no generation can complete"
        queue: dict[str, Any] = {"status": "unavailable", "reason": reason}
    else:
        queue = queue_estimate(events).to_json()
    terms = {
        "recurrence_ns": recurrence.get("interval_ns") or 0,
        "core_work_ns": work[busiest] if busiest is not None else 0,
        "memory_service_ns": memory["service_ns"],
    }
    bound_by = max(terms, key=lambda name: terms[name])
    estimated = deadlock is None and busiest is not None
    document: dict[str, Any] = {
        "source": source,
        "target": target,
        "selection_eligible": False,
        "events": events.num_events,
        "dependencies": events.num_edges,
        "recurrence_edges": int(np.count_nonzero(g.d > 0)),
        "active_cores": cores,
        "recurrence": recurrence,
        "generation_span_ns": None if deadlock else _span(events),
        "core_work_ns": {str(c): work[c] for c in cores},
        "busiest_core": busiest,
        "memory_service": memory,
        "interval_estimate": {
            **terms,
            "ns": terms[bound_by] if estimated else None,
            "bound_by": bound_by.removesuffix("_ns") if estimated else None,
        },
        "queue": queue,
        "missing_effects": [*MISSING_EFFECTS, *missing_effects, *events.notes],
    }
    if events.num_events <= TIMING_GRAPH_LIMIT:
        document["timing_graph"] = timing_graph(events)
    return document


def _recurrence(events: EventGraph, method: str) -> tuple[dict[str, Any], DeadlockError | None]:
    graph = events.recurrence_graph
    try:
        result = maximum_cycle_ratio(graph, method)
    except DeadlockError as error:
        nodes = [int(graph.u[e]) for e in error.cycle]
        return {
            "status": "deadlock",
            "method": method,
            "interval_ns": None,
            "cycle": [describe_event(events, x) for x in nodes],
        }, error
    if result is None:
        return {"status": "acyclic", "method": method, "interval_ns": None}, None
    witness = result.witness.to_json()
    shown = sorted(
        {e["source"] for e in witness["edges"]} | {e["target"] for e in witness["edges"]}
    )
    witness["events"] = [describe_event(events, x) for x in shown]
    return {
        "status": "ok",
        "method": method,
        "interval_ns": float(result.ratio),
        "ratio": f"{result.ratio.numerator}/{result.ratio.denominator}",
        "exact": result.exact,
        "bound": f"{result.bound.numerator}/{result.bound.denominator}",
        "iterations": result.iterations,
        "witness": witness,
    }, None


def _span(events: EventGraph) -> int:
    """Longest path over distance-0 dependencies, services included (one generation)."""
    g = events.recurrence_graph
    zero = np.flatnonzero(g.d == 0)
    finish = [0] * g.num_nodes
    order = g.sweep_order(np.arange(g.num_nodes), zero)
    successors: list[list[int]] = [[] for _ in range(g.num_nodes)]
    for e in zero.tolist():
        successors[int(g.u[e])].append(e)
    w, v = g.w.tolist(), g.v.tolist()
    for x in order:
        for e in successors[x]:
            finish[v[e]] = max(finish[v[e]], finish[x] + w[e])
    return max(finish, default=0)


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
