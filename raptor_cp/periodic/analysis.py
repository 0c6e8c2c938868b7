"""The periodic diagnostic of an `EventGraph`: recurrence, queue estimate and interval terms.

`analyse_periodic` analyses an event graph two ways (scheduling.md, "Periodic
dependency diagnostics" and "Post-codegen instruction diagnostic"):

* the *recurrence*: the maximum cycle ratio of the dependencies with each
  event's service on its in-edges (`EventGraph.recurrence_graph`), with a
  witness cycle; a cycle of distance-0 edges is a deadlock. The seeds' analysis
  is the bounded bisection (`DEFAULT_METHOD`: at most 64 tests of at most
  ``R + 1`` sweeps, a 1 ns bracket or better, witness detail limited to 128
  edges); ``cross_check`` also runs Howard's exact policy iteration and both
  results are reported;
* the *queue estimate*: the queue engine's converged interval in event-index and
  reversed tie order (`raptor_cp.periodic.queue_engine`). The base estimate
  models the source switches' FIFOs (``network_queues``) but not memory
  arbitration; ``memory_controller`` adds the separate ``memory_controller``
  estimate in which the controller serves requests in predicted arrival order;
* the *single-pass latency*: one generation through the queue engine
  (`raptor_cp.periodic.single_pass`), what pimsim-nn's latency mode measures.
  It always queues at the memory controller (a pass over one shared port is
  not a latency without it: PIMCOMP-NN's ResNet-18 takes 6.36 ms of
  dependency span but 12.82 ms of controller service and 13.64 ms in
  pimsim-nn) and at the switches as ``network_queues`` says.

The *interval estimate* is ``max(recurrence, largest per-core work, aggregate
memory-controller service)``; the aggregate service includes the baseline
requests (function inputs, constants, outputs) whose positions the event graph
does not model (``baseline_service_ns``). Each service appears in at most one
term's own accounting and the terms are combined by a maximum, never a sum, so
no service is counted twice. The within-generation dependency span (longest
distance-0 path) is reported separately; it is not an initiation interval.
These are conditional estimates for the abstract execution model, not
simulator predictions or guaranteed lower bounds
(`raptor_cp.reports.periodic_report` lists the effects the model leaves out).

Timing outside `MAX_TIMING_NS` (the supported numeric range) raises
`TimingUnavailableError`, which diagnostics report as ``unavailable``.

Time: the cycle-ratio method's (twice with ``cross_check``), plus two queue
runs per estimate and two single generations, plus ``O(V + E)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from raptor_cp.errors import TimingUnavailableError
from raptor_cp.periodic.cycle_ratio import CycleRatio, DeadlockError, maximum_cycle_ratio
from raptor_cp.periodic.events import MAX_TIMING_NS, EventGraph, EventKind
from raptor_cp.periodic.queue_engine import QueueEstimate, queue_estimate, with_queues
from raptor_cp.periodic.single_pass import SinglePass, single_pass

DEADLOCK_REASON = "deadlock: a cycle of distance-0 dependencies; no generation can complete"
"""Why the queue estimate is unavailable when the recurrence deadlocks."""
DEFAULT_METHOD = "bisection"
"""The seeds' bounded analysis; Howard is the exact cross-check."""
CROSS_CHECK_METHOD = "howard"


@dataclass(frozen=True)
class QueueModel:
    """Which queues the queue engine models (the ``raptor-cp periodic`` switches)."""

    network_queues: bool = True
    """Source-switch FIFOs (``--model-network-queues/--no-model-network-queues``)."""
    memory_controller: bool = False
    """Also the ``memory_controller`` estimate with the controller's FIFO
    (``--model-memory-controller``)."""


@dataclass(frozen=True)
class Recurrence:
    """The recurrence bound, or why there is none.

    Exactly one of three: ``ratio`` (a critical cycle), ``deadlock`` (the events
    around a cycle of distance-0 dependencies), or neither (no cycle at all).
    """

    method: str
    """Maximum-cycle-ratio method: ``howard`` or ``bisection``."""
    ratio: CycleRatio | None
    deadlock: tuple[int, ...] | None
    """Event ids around a same-generation cycle, in cycle order."""

    @property
    def status(self) -> str:
        """``ok``, ``acyclic`` or ``deadlock``."""
        if self.deadlock is not None:
            return "deadlock"
        return "acyclic" if self.ratio is None else "ok"

    @property
    def interval_ns(self) -> float | None:
        """The ratio in nanoseconds (None without one)."""
        return None if self.ratio is None else float(self.ratio.ratio)


@dataclass(frozen=True)
class MemoryService:
    """The global memory controller's requests and their total service per generation."""

    requests: int
    loads: int
    stores: int
    service_ns: int
    """Service of the modelled requests plus ``baseline_service_ns``."""
    baseline_service_ns: int = 0
    """Service of baseline requests (inputs, constants, outputs) not placed in the graph."""


@dataclass(frozen=True)
class IntervalEstimate:
    """``max`` of three terms; ``ns`` and ``bound_by`` are None on deadlock or idle cores."""

    recurrence_ns: float
    """The recurrence interval, 0 without one."""
    core_work_ns: int
    """The busiest core's work, 0 when every core is idle."""
    memory_service_ns: int
    ns: float | None
    bound_by: str | None
    """``recurrence``, ``core_work`` or ``memory_service``: the largest term (first on ties)."""


@dataclass(frozen=True)
class PeriodicAnalysis:
    """Everything `analyse_periodic` finds about one event graph."""

    events: EventGraph
    recurrence: Recurrence
    cross_check: Recurrence | None
    """Howard's result when `analyse_periodic` ran it as the cross-check."""
    model: QueueModel
    queue: QueueEstimate | None
    """None when the recurrence deadlocks (`DEADLOCK_REASON`)."""
    memory_controller: QueueEstimate | None
    """With the controller's FIFO; None unless ``model.memory_controller`` (or deadlock)."""
    active_cores: tuple[int, ...]
    """Cores with at least one event, ascending."""
    core_work_ns: dict[int, int]
    """Work of each active core per generation."""
    busiest_core: int | None
    """The active core with the most work (lowest id on ties); None when all are idle."""
    memory: MemoryService
    generation_span_ns: int | None
    """Longest distance-0 path, services included; None on deadlock."""
    single_pass: SinglePass | None
    """One generation with queues: the latency-mode estimate; None on deadlock."""
    recurrence_edges: int
    """Dependencies across generations (distance > 0)."""
    estimate: IntervalEstimate


def analyse_periodic(
    events: EventGraph,
    method: str = DEFAULT_METHOD,
    *,
    cross_check: bool = False,
    model: QueueModel = QueueModel(),
    baseline_service_ns: int = 0,
) -> PeriodicAnalysis:
    """The recurrence, queue estimates and interval estimate of ``events`` (module docstring).

    ``method`` computes the recurrence; with ``cross_check`` the other method
    (Howard for bisection, bisection for Howard) runs too. Raises
    `TimingUnavailableError` when the timing exceeds `MAX_TIMING_NS`.
    """
    check_timing_range(events, baseline_service_ns)
    g = events.graph
    cores = sorted({int(c) for c in g.core.tolist() if c >= 0})
    work = {c: int(events.core_work[c]) for c in cores}
    busiest = max(cores, key=lambda c: (work[c], -c), default=None)
    requests = events.memory_requests
    kinds = events.kind[requests]
    memory = MemoryService(
        requests=int(requests.size),
        loads=int(np.count_nonzero(kinds == EventKind.LOAD_SERVICE)),
        stores=int(np.count_nonzero(kinds == EventKind.STORE_SERVICE)),
        service_ns=events.memory_service_ns + baseline_service_ns,
        baseline_service_ns=baseline_service_ns,
    )
    recurrence = _recurrence(events, method)
    other = CROSS_CHECK_METHOD if method != CROSS_CHECK_METHOD else DEFAULT_METHOD
    checked = _recurrence(events, other) if cross_check else None
    deadlocked = recurrence.deadlock is not None
    terms: dict[str, float] = {
        "recurrence": recurrence.interval_ns or 0,
        "core_work": work[busiest] if busiest is not None else 0,
        "memory_service": memory.service_ns,
    }
    bound_by = max(terms, key=lambda name: terms[name])
    estimated = not deadlocked and busiest is not None
    finish = [] if deadlocked else dependency_finish(events)
    return PeriodicAnalysis(
        events=events,
        recurrence=recurrence,
        cross_check=checked,
        model=model,
        queue=None if deadlocked else queue_estimate(events, model.network_queues, False),
        memory_controller=None
        if deadlocked or not model.memory_controller
        else queue_estimate(events, model.network_queues, True),
        active_cores=tuple(cores),
        core_work_ns=work,
        busiest_core=busiest,
        memory=memory,
        generation_span_ns=None if deadlocked else max(finish, default=0),
        single_pass=None
        if deadlocked
        else single_pass(with_queues(events, model.network_queues, True), finish),
        recurrence_edges=int(np.count_nonzero(g.d > 0)),
        estimate=IntervalEstimate(
            recurrence_ns=terms["recurrence"],
            core_work_ns=work[busiest] if busiest is not None else 0,
            memory_service_ns=memory.service_ns,
            ns=terms[bound_by] if estimated else None,
            bound_by=bound_by if estimated else None,
        ),
    )


def check_timing_range(events: EventGraph, extra_ns: int = 0) -> None:
    """Raise `TimingUnavailableError` when the timing leaves the supported range.

    The range is `MAX_TIMING_NS` for the sum of every delay, every service and
    ``extra_ns`` (scheduling.md: "Timing outside the supported numeric range
    produces an explicit unavailable result"). Sums in Python integers, ``O(V + E)``.
    """
    total = sum(events.graph.w.tolist()) + sum(events.service.tolist()) + extra_ns
    total += sum(events.core_work.tolist())
    if total > MAX_TIMING_NS:
        raise TimingUnavailableError(
            f"{events.name}: delays and services total {total} ns, outside the supported "
            f"range (at most {MAX_TIMING_NS} ns)"
        )


def _recurrence(events: EventGraph, method: str) -> Recurrence:
    graph = events.recurrence_graph
    try:
        result = maximum_cycle_ratio(graph, method)
    except DeadlockError as error:
        return Recurrence(method, None, tuple(int(graph.u[e]) for e in error.cycle))
    return Recurrence(method, result, None)


def dependency_finish(events: EventGraph) -> list[int]:
    """Each event's completion in one generation without queues (services included).

    ``O(V + E)``; the distance-0 dependencies must be acyclic.
    """
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
    return finish
