"""The queue engine: run an `EventGraph` over generations with timestamped tokens.

The engine is a discrete-event simulation of the max-plus system
``t(v, k) >= t(u, k - d) + w`` in which queued events also wait for their
resource (scheduling.md, "Post-codegen instruction diagnostic"):

* *Tokens.* When event ``u`` completes generation ``j`` it appends the token
  ``t(u, j) + w`` to each out-edge's FIFO; the FIFO's head is the token the
  target needs for its current generation (edges with ``k < d`` are satisfied by
  the bootstrap, time 0). Tokens carry dependencies across generations; the
  graph is never copied. Each event's generations complete in order (one
  pending occurrence per event, so the heap holds at most one entry per event).
* *Resources.* An event with a resource arrives when its tokens are in and joins
  the resource's FIFO in arrival order: a source switch, or the memory
  controller, where reads, writes and zero-byte requests share one FIFO. It
  starts when the resource is free, completes ``service`` later, and frees the
  resource when its release event completes (a global request keeps its source
  switch until the controller has served it). Independent cores and switches
  stay concurrent; no global request order is imposed.
* *Ties.* Events due at the same time are processed generation by generation,
  and within one generation in event-index order (or, for the sensitivity
  run, reversed); the FIFOs inherit that order. Earlier generations first
  keeps a core's program order at its own switch: the payload a core enqueues
  at the end of generation ``k`` and the first request of ``k + 1`` it issues
  in the same ns reach the switch in that order (pimsim-nn issues them in
  program order). By event index alone the request, numbered near its core's
  entry, overtook the payload: on PIMCOMP-NN's ResNet-18 at depth 4 the
  payload then waited 10.2 µs behind a global load, and the interval came out
  2.4 % above the same program with its issue clocks (which break the tie).
  The two orders are sensitivity checks, not bounds over every tie order.

Generation ``k`` ends when every event has completed it; with ``G(k)`` its end,
the run converges at the first ``k >= 4`` where the adjacent two-generation
windows ``G(k-2) - G(k-4)`` and ``G(k) - G(k-2)`` agree within one percent (the
oracle's threshold) and reports their mean, ``(G(k) - G(k-4)) / 4``.

A run may instead settle into a cycle of ``c > 2`` generations whose lengths
differ by more than one percent, and two-generation windows never agree: a
candidate that ViT's search on ``pimcomp`` meets at depth 4 repeats 6.372,
7.026, 7.689, 6.387, 7.041 and 7.709 ms to the nanosecond from its first
generation, and pimsim-nn runs its program in a cycle too (docs/benchmarks.md,
"Twenty-first pass"). A max-plus system's generations become periodic after a
transient with some cyclicity ``c`` (Baccelli et al., *Synchronization and
Linearity*, 1992, ch. 3), and the one-percent test proves only ``c <= 2``. So
the run also converges at the first ``k`` that closes a cycle of ``c``
generations twice: each of the last ``2c`` generations repeats the one ``c``
before it exactly, in length and in shape (every event's completion relative to
its generation's end, compared by a 64-bit fingerprint that sums a fixed mix of
each event's index times its completion). Every event has then repeated its
timing ``c`` generations later, twice over: the complete-state recurrence the
seeds ask both tie orders to establish, stricter than one-percent agreement. It
reports the mean of the two cycles, ``(G(k) - G(k-2c)) / (2c)``, and
``window_generations`` says which test passed (2, or ``c``). The one-percent test
is tried first at each generation. Per-core queue waits (time queued events
spent waiting for their resource, by the event's core) are averaged over the
body generations of both windows; the maximum memory-request wait covers every
generation, bootstrap included.

Bounds: an event completes at most `MAX_GENERATIONS` generations and the run
processes at most ``16 (V + E)`` heap events; when a bound (or a stall: events
waiting for tokens that never come) stops the run first, the result is
``unavailable`` with the reason. Convergence is accepted only while no event
has stopped at the generation bound: the generations that end after that run
without the competition of the stopped events' next ones, and the window test
could pass on them (two events sharing a switch, bounded at 5 generations,
once "converged" at 4 ns where the unbounded run gives 5 ns;
``tests/test_queue_engine.py``). Time ``O(K (E + V log V))`` for ``K``
generations, storage ``O(V + E + B)`` for ``B`` pending tokens.

The event loop is C (`raptor_cp.periodic._queue_core`, built by ``pip install``):
in Python it took about 1.6 µs per processed event and was most of a pipeline
selection's time (docs/benchmarks.md, "Queue engine in C"). This module keeps
the rest: preparing the graph as flat arrays, the two tie orders, and turning a
run's outcome into a `QueueRun` with its reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from raptor_cp.periodic import _queue_core
from raptor_cp.periodic.arrays import int64_array
from raptor_cp.periodic.events import NO_RESOURCE, EventGraph, EventKind
from raptor_cp.periodic.graph import PeriodicGraph

MAX_GENERATIONS = 64
"""Generations one event may complete (the documented per-event bound)."""
EVENT_BUDGET_FACTOR = 16
"""The run processes at most ``EVENT_BUDGET_FACTOR * (V + E)`` heap events."""
CONVERGENCE_PERCENT = 1
"""Adjacent two-generation windows must agree within this percentage."""
WINDOW = 2
"""Generations per convergence window."""

STATUS_CONVERGED = "converged"
STATUS_UNAVAILABLE = "unavailable"


@dataclass(frozen=True)
class QueueRun:
    """One queue-engine run in one tie order.

    Attributes
    ----------
    tie_order:
        ``"index"`` or ``"reversed"``.
    status:
        `STATUS_CONVERGED` or `STATUS_UNAVAILABLE`.
    reason:
        Why the run is unavailable (None when it converged).
    interval_ns:
        Mean generation interval over the two converged windows (None if unavailable).
    window_generations:
        Generations per window when the run converged: `WINDOW` by the one-percent
        test, or the length of the cycle the run repeats exactly (None if unavailable).
    generation_ends:
        ``G(k)``, the completion time of each finished generation.
    processed_events:
        Heap events processed (arrivals and completions).
    core_wait_ns:
        Per core with queued events, its mean queue wait per body generation
        (None if unavailable).
    max_request_wait_ns:
        Longest wait of a memory-controller request, all generations (0 if none).
    """

    tie_order: str
    status: str
    reason: str | None
    interval_ns: float | None
    window_generations: int | None
    generation_ends: tuple[int, ...]
    processed_events: int
    core_wait_ns: dict[int, float] | None
    max_request_wait_ns: int

    @property
    def generations(self) -> int:
        return len(self.generation_ends)

    def to_json(self) -> dict[str, Any]:
        return {
            "tie_order": self.tie_order,
            "status": self.status,
            "reason": self.reason,
            "interval_ns": self.interval_ns,
            "window_generations": self.window_generations,
            "generations": self.generations,
            "processed_events": self.processed_events,
            "core_wait_ns": None
            if self.core_wait_ns is None
            else {str(c): ns for c, ns in sorted(self.core_wait_ns.items())},
            "max_request_wait_ns": self.max_request_wait_ns,
        }


@dataclass(frozen=True)
class QueueEstimate:
    """The index-order run and its reversed-tie sensitivity run on the same graph."""

    run: QueueRun
    reversed_run: QueueRun

    @property
    def interval_ns(self) -> float | None:
        return self.run.interval_ns

    @property
    def alternative_tie_interval_ns(self) -> float | None:
        return self.reversed_run.interval_ns

    @property
    def larger_interval_ns(self) -> float | None:
        """The larger of the two tie orders' intervals, None unless both converged.

        The seeds' candidate estimate takes the larger arbitration policy; the index
        order alone depends on how a graph's events happen to be numbered (a program
        read back from instructions numbers them differently from its realization).
        """
        both = (self.run.interval_ns, self.reversed_run.interval_ns)
        return None if None in both else max(both)  # type: ignore[type-var]

    def to_json(self) -> dict[str, Any]:
        return {
            **self.run.to_json(),
            "alternative_tie_interval_ns": self.alternative_tie_interval_ns,
            "alternative_tie_status": self.reversed_run.status,
            "alternative_tie_reason": self.reversed_run.reason,
            "alternative_tie_window_generations": self.reversed_run.window_generations,
        }


def queue_estimate(
    events: EventGraph, network_queues: bool = True, memory_controller: bool = True
) -> QueueEstimate:
    """Run `run_queue` in event-index and in reversed tie order.

    ``network_queues`` and ``memory_controller`` say which resources queue
    (`with_queues`): the source switches' FIFOs and the memory controller's.
    The two runs share one `_Network` (the adjacency built once, ``O(V + E)``).
    """
    events = with_queues(events, network_queues, memory_controller)
    network = _Network(events)
    return QueueEstimate(_run(network, False), _run(network, True))


def with_queues(events: EventGraph, network_queues: bool, memory_controller: bool) -> EventGraph:
    """``events`` with only the chosen resources queueing (``raptor-cp periodic`` switches).

    An event whose resource is not modelled keeps its service as a plain delay
    (folded into its in-edges, as in `EventGraph.recurrence_graph`) and stops
    holding anything: the switches' FIFOs go with ``network_queues=False``
    (``--no-model-network-queues``), the controller's FIFO with
    ``memory_controller=False`` (the base estimate, scheduling.md: "The base
    recurrence estimate omits global arbitration"). Dependencies and the
    recurrence graph are unchanged. ``O(V + E)``.
    """
    resource = events.resource
    switch = (resource >= 0) & (resource < events.num_cores)
    drop = (switch & (not network_queues)) | (
        (resource == events.memory_resource) & (not memory_controller)
    )
    if not drop.any():
        return events
    g = events.graph
    folded = np.where(drop, events.service, 0)
    graph = PeriodicGraph(
        g.num_nodes, g.u, g.v, g.w + folded[g.v], g.d, g.core, g.link, name=g.name
    )
    return EventGraph(
        graph,
        np.where(drop, NO_RESOURCE, resource),
        np.where(drop, 0, events.service),
        np.where(drop, np.arange(g.num_nodes), events.release),
        events.num_cores,
        events.kind,
        events.step,
        events.core_work,
        events.notes,
    )


def run_queue(
    events: EventGraph,
    reverse_ties: bool = False,
    max_generations: int = MAX_GENERATIONS,
    event_budget: int | None = None,
) -> QueueRun:
    """Execute ``events`` until the generation interval converges or a bound stops it.

    ``event_budget`` defaults to ``16 (V + E)``; both bounds are parameters so
    tests can reach them on small graphs.
    """
    return _run(_Network(events), reverse_ties, max_generations, event_budget)


def _run(
    network: _Network,
    reverse_ties: bool,
    max_generations: int = MAX_GENERATIONS,
    event_budget: int | None = None,
) -> QueueRun:
    """`run_queue` on a prepared `_Network`."""
    events = network.events
    n = events.num_events
    budget = EVENT_BUDGET_FACTOR * (n + events.num_edges) if event_budget is None else event_budget
    order = "reversed" if reverse_ties else "index"
    if n == 0:
        return QueueRun(
            order, STATUS_UNAVAILABLE, "no events: every core is idle", None, None, (), 0, None, 0
        )
    return _Simulation(network, reverse_ties, max_generations, budget).run(order)


def first_generation(events: EventGraph, reverse_ties: bool = False) -> list[int] | str:
    """Completion time of every event in generation 0 when no later generation runs.

    Returns the reason instead when generation 0 cannot complete (a stall or the
    event budget). Used by `raptor_cp.periodic.single_pass`.
    """
    if events.num_events == 0:
        return "no events: every core is idle"
    budget = EVENT_BUDGET_FACTOR * (events.num_events + events.num_edges)
    simulation = _Simulation(_Network(events), reverse_ties, 1, budget)
    run = simulation.run("reversed" if reverse_ties else "index")
    if run.generation_ends:
        return simulation.first.tolist()
    stuck = np.flatnonzero(simulation.gen == 0)
    if run.processed_events >= budget or not stuck.size:
        return run.reason or "generation 0 did not complete"
    return (
        f"generation 0 cannot complete: {simulation._describe(int(stuck[0]))} waits for tokens "
        "that never arrive"
    )


class _Network:
    """The run-independent form of an `EventGraph`: the flat int64 arrays the loop indexes.

    Built once per graph and shared by its runs (both tie orders). Edges are
    listed by source (``out_*``, rows ``out_start[x]:out_start[x + 1]``) and by
    target (``in_*``), each row in ascending edge id; ``free_resource`` rows
    (``free_start``) list the resources an event's completion frees: its own
    (unless another event releases it), then those of the events it releases,
    by event index. ``O(V + E)``.
    """

    def __init__(self, events: EventGraph) -> None:
        g = events.graph
        n = g.num_nodes
        self.events = events
        by_source = np.argsort(g.u, kind="stable")
        self.out_start = int64_array(np.searchsorted(g.u[by_source], np.arange(n + 1)))
        self.out_edge = int64_array(by_source)
        self.out_target = int64_array(g.v[by_source])
        self.out_delay = int64_array(g.w[by_source])
        self.out_distance = int64_array(g.d[by_source])
        in_start, by_target = events.in_edge_index
        self.in_start = int64_array(in_start)
        self.in_edge = int64_array(by_target)
        self.in_distance = int64_array(g.d[by_target])
        self.resource = int64_array(events.resource)
        self.service = int64_array(events.service)
        self.core = int64_array(g.core)
        index = np.arange(n)
        own = (events.resource != NO_RESOURCE) & (events.release == index)
        released = events.release != index
        holders = np.concatenate([index[own], events.release[released]])
        parts = np.concatenate([np.zeros(int(own.sum())), np.ones(int(released.sum()))])
        sources = np.concatenate([index[own], index[released]])
        order = np.lexsort((sources, parts, holders))
        self.free_resource = int64_array(
            np.concatenate([events.resource[own], events.resource[released]])[order]
        )
        self.free_start = int64_array(np.searchsorted(holders[order], np.arange(n + 1)))


class _Simulation:
    """One run (`_queue_core.run`) and what it leaves: per event its generations
    completed and its generation-0 completion time; see the module docstring."""

    def __init__(
        self, network: _Network, reverse_ties: bool, max_generations: int, budget: int
    ) -> None:
        n = network.events.num_events
        self.network = network
        self.events = network.events
        self.reverse_ties = reverse_ties
        self.max_generations = max_generations
        self.budget = budget
        self.num_resources = self.events.num_cores + 1
        self.gen = np.zeros(n, dtype=np.int64)
        self.first = np.zeros(n, dtype=np.int64)
        """Completion time of each event in generation 0."""
        self.waits = np.zeros((max_generations, self.num_resources), dtype=np.int64)
        """Per generation and core, the time its queued events waited for their resource."""
        self.ends: list[int] = []
        self.capped = -1

    def run(self, order: str) -> QueueRun:
        """Run the compiled event loop once and read its outcome."""
        net = self.network
        converged, window, ends, processed, max_wait, capped, pending = _queue_core.run(
            net.out_start,
            net.out_edge,
            net.out_target,
            net.out_delay,
            net.out_distance,
            net.in_start,
            net.in_edge,
            net.in_distance,
            net.resource,
            net.service,
            net.core,
            net.free_start,
            net.free_resource,
            self.first,
            self.gen,
            self.waits.reshape(-1),
            self.num_resources,
            self.events.memory_resource,
            self.reverse_ties,
            self.max_generations,
            self.budget,
            2 * WINDOW,
            CONVERGENCE_PERCENT,
        )
        self.ends = ends
        self.capped = capped
        if converged >= 0:
            return self._converged(order, converged, window, processed, max_wait)
        if pending:
            reason = (
                f"processed-event bound {self.budget} = {EVENT_BUDGET_FACTOR}(V+E) reached "
                f"after {len(ends)} generation(s) without convergence"
            )
            return self._unavailable(order, reason, processed, max_wait)
        return self._unavailable(order, self._stall_reason(), processed, max_wait)

    def _converged(
        self, order: str, k: int, window: int, processed: int, max_wait: int
    ) -> QueueRun:
        span = 2 * window
        interval = (self.ends[k] - self.ends[k - span]) / span
        body = self.waits[k - span + 1 : k + 1].sum(axis=0)
        queued = np.unique(self.network.core[self.network.resource != NO_RESOURCE]).tolist()
        waits = {c: int(body[c]) / span for c in queued}
        return QueueRun(
            order,
            STATUS_CONVERGED,
            None,
            interval,
            window,
            tuple(self.ends),
            processed,
            waits,
            max_wait,
        )

    def _unavailable(self, order: str, reason: str, processed: int, max_wait: int) -> QueueRun:
        return QueueRun(
            order,
            STATUS_UNAVAILABLE,
            reason,
            None,
            None,
            tuple(self.ends),
            processed,
            None,
            max_wait,
        )

    def _describe(self, x: int) -> str:
        kind = EventKind(int(self.events.kind[x])).name
        step = int(self.events.step[x])
        where = f" step {step}" if step >= 0 else ""
        return f"event {x} ({kind}, core {int(self.network.core[x])}{where})"

    def _stall_reason(self) -> str:
        if self.capped >= 0:
            return (
                f"generation bound: {self._describe(self.capped)} completed "
                f"{self.max_generations} generations before the interval converged "
                f"({len(self.ends)} generation(s) finished everywhere)"
            )
        waiting = int(np.argmin(self.gen))  # the first event of the fewest generations
        return (
            f"stalled after {len(self.ends)} generation(s): {self._describe(waiting)} waits "
            f"in generation {int(self.gen[waiting])} for tokens that never arrive"
        )
