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
* *Ties.* Events due at the same time are processed in event-index order (or,
  for the sensitivity run, reversed); the FIFOs inherit that order. The two
  orders are sensitivity checks, not bounds over every tie order.

Generation ``k`` ends when every event has completed it; with ``G(k)`` its end,
the run converges at the first ``k >= 4`` where the adjacent two-generation
windows ``G(k-2) - G(k-4)`` and ``G(k) - G(k-2)`` agree within one percent (the
oracle's threshold) and reports their mean, ``(G(k) - G(k-4)) / 4``. Per-core
queue waits (time queued events spent waiting for their resource, by the
event's core) are averaged over those four body generations; the maximum
memory-request wait covers every generation, bootstrap included.

Bounds: an event completes at most `MAX_GENERATIONS` generations and the run
processes at most ``16 (V + E)`` heap events; when a bound (or a stall: events
waiting for tokens that never come) stops the run first, the result is
``unavailable`` with the reason. Time ``O(K (E + V log V))`` for ``K``
generations, storage ``O(V + E + B)`` for ``B`` pending tokens.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any

import numpy as np

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

    def to_json(self) -> dict[str, Any]:
        return {
            **self.run.to_json(),
            "alternative_tie_interval_ns": self.alternative_tie_interval_ns,
            "alternative_tie_status": self.reversed_run.status,
            "alternative_tie_reason": self.reversed_run.reason,
        }


def queue_estimate(
    events: EventGraph, network_queues: bool = True, memory_controller: bool = True
) -> QueueEstimate:
    """Run `run_queue` in event-index and in reversed tie order.

    ``network_queues`` and ``memory_controller`` say which resources queue
    (`with_queues`): the source switches' FIFOs and the memory controller's.
    """
    events = with_queues(events, network_queues, memory_controller)
    return QueueEstimate(run_queue(events), run_queue(events, reverse_ties=True))


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
    n = events.num_events
    budget = EVENT_BUDGET_FACTOR * (n + events.num_edges) if event_budget is None else event_budget
    order = "reversed" if reverse_ties else "index"
    if n == 0:
        return QueueRun(
            order, STATUS_UNAVAILABLE, "no events: every core is idle", None, (), 0, None, 0
        )
    return _Simulation(events, reverse_ties, max_generations, budget).run(order)


def first_generation(events: EventGraph, reverse_ties: bool = False) -> list[int] | str:
    """Completion time of every event in generation 0 when no later generation runs.

    Returns the reason instead when generation 0 cannot complete (a stall or the
    event budget). Used by `raptor_cp.periodic.single_pass`.
    """
    if events.num_events == 0:
        return "no events: every core is idle"
    budget = EVENT_BUDGET_FACTOR * (events.num_events + events.num_edges)
    simulation = _Simulation(events, reverse_ties, 1, budget)
    run = simulation.run("reversed" if reverse_ties else "index")
    if run.generation_ends:
        return simulation.first
    stuck = [x for x in range(events.num_events) if simulation.gen[x] == 0]
    if run.processed_events >= budget or not stuck:
        return run.reason or "generation 0 did not complete"
    return (
        f"generation 0 cannot complete: {simulation._describe(stuck[0])} waits for tokens "
        "that never arrive"
    )


class _Simulation:
    """State of one run; see the module docstring."""

    def __init__(
        self, events: EventGraph, reverse_ties: bool, max_generations: int, budget: int
    ) -> None:
        g = events.graph
        n = g.num_nodes
        self.events = events
        self.n = n
        self.max_generations = max_generations
        self.budget = budget
        self.tie = [n - 1 - x for x in range(n)] if reverse_ties else list(range(n))
        self.w = g.w.tolist()
        self.d = g.d.tolist()
        self.v = g.v.tolist()
        start, order = events.in_edge_index
        start, order = start.tolist(), order.tolist()
        self.into = [order[start[x] : start[x + 1]] for x in range(n)]
        self.out = [g.out_edges(x).tolist() for x in range(n)]
        self.core = g.core.tolist()
        self.resource = events.resource.tolist()
        self.service = events.service.tolist()
        self.release = events.release.tolist()
        self.released_by = [-1] * n
        for x, y in enumerate(self.release):
            if y != x:
                self.released_by[y] = x
        self.memory = events.memory_resource
        self.tokens: list[list[int]] = [[] for _ in range(g.num_edges)]
        self.gen = [0] * n
        self.missing = [sum(1 for e in self.into[x] if self.d[e] == 0) for x in range(n)]
        self.busy = [False] * n  # scheduled: in the heap, a resource FIFO or service
        self.arrival = [0] * n
        self.holder = [-1] * (events.num_cores + 1)
        self.fifo: list[list[int]] = [[] for _ in range(events.num_cores + 1)]
        self.heap: list[tuple[int, int, int]] = []
        self.done = [0] * max_generations
        self.end = [0] * max_generations
        self.ends: list[int] = []
        self.waits = [[0] * (events.num_cores + 1) for _ in range(max_generations)]
        self.max_request_wait = 0
        self.first = [0] * n
        """Completion time of each event in generation 0."""
        self.capped = -1
        self.now = 0

    def run(self, order: str) -> QueueRun:
        for x in range(self.n):
            if self.missing[x] == 0:
                self._schedule(x)
        processed = 0
        converged_at = -1
        while self.heap and converged_at < 0:
            if processed >= self.budget:
                reason = (
                    f"processed-event bound {self.budget} = {EVENT_BUDGET_FACTOR}(V+E) reached "
                    f"after {len(self.ends)} generation(s) without convergence"
                )
                return self._unavailable(order, reason, processed)
            time, _, x = heapq.heappop(self.heap)
            processed += 1
            self.now = time
            r = self.resource[x]
            if r != NO_RESOURCE and self.arrival[x] < 0:
                self._arrive(x, r)
            elif self._complete(x):
                converged_at = len(self.ends) - 1
        if converged_at < 0:
            return self._unavailable(order, self._stall_reason(), processed)
        k = converged_at
        interval = (self.ends[k] - self.ends[k - 2 * WINDOW]) / (2 * WINDOW)
        body = range(k - 2 * WINDOW + 1, k + 1)
        queued = sorted({self.core[x] for x in range(self.n) if self.resource[x] != NO_RESOURCE})
        waits = {c: sum(self.waits[j][c] for j in body) / (2 * WINDOW) for c in queued}
        return QueueRun(
            order,
            STATUS_CONVERGED,
            None,
            interval,
            tuple(self.ends),
            processed,
            waits,
            self.max_request_wait,
        )

    def _unavailable(self, order: str, reason: str, processed: int) -> QueueRun:
        return QueueRun(
            order,
            STATUS_UNAVAILABLE,
            reason,
            None,
            tuple(self.ends),
            processed,
            None,
            self.max_request_wait,
        )

    def _describe(self, x: int) -> str:
        kind = EventKind(int(self.events.kind[x])).name
        step = int(self.events.step[x])
        where = f" step {step}" if step >= 0 else ""
        return f"event {x} ({kind}, core {self.core[x]}{where})"

    def _stall_reason(self) -> str:
        if self.capped >= 0:
            return (
                f"generation bound: {self._describe(self.capped)} completed "
                f"{self.max_generations} generations before the interval converged "
                f"({len(self.ends)} generation(s) finished everywhere)"
            )
        waiting = min(range(self.n), key=lambda x: (self.gen[x], x))
        return (
            f"stalled after {len(self.ends)} generation(s): {self._describe(waiting)} waits "
            f"in generation {self.gen[waiting]} for tokens that never arrive"
        )

    def _schedule(self, x: int) -> None:
        """``x`` has every token of its current generation: consume them and queue it."""
        k = self.gen[x]
        ready = self.now
        for e in self.into[x]:
            if k >= self.d[e]:
                token = self.tokens[e].pop(0)
                ready = max(ready, token)
        self.busy[x] = True
        self.arrival[x] = -1
        heapq.heappush(self.heap, (ready, self.tie[x], x))

    def _arrive(self, x: int, r: int) -> None:
        self.arrival[x] = self.now
        if self.holder[r] < 0:
            self._start(x, r)
        else:
            self.fifo[r].append(x)

    def _start(self, x: int, r: int) -> None:
        self.holder[r] = x
        wait = self.now - self.arrival[x]
        k = self.gen[x]
        self.waits[k][self.core[x]] += wait
        if r == self.memory:
            self.max_request_wait = max(self.max_request_wait, wait)
        heapq.heappush(self.heap, (self.now + self.service[x], self.tie[x], x))

    def _release(self, r: int) -> None:
        self.holder[r] = -1
        if self.fifo[r]:
            self._start(self.fifo[r].pop(0), r)

    def _complete(self, x: int) -> bool:
        """``x`` completes its generation; True when that made the interval converge."""
        now, k = self.now, self.gen[x]
        if k == 0:
            self.first[x] = now
        r = self.resource[x]
        if r != NO_RESOURCE and self.release[x] == x:
            self._release(r)
        held = self.released_by[x]
        if held >= 0:
            self._release(self.resource[held])
        for e in self.out[x]:
            y = self.v[e]
            queue = self.tokens[e]
            queue.append(now + self.w[e])
            if (
                len(queue) == 1
                and not self.busy[y]
                and self.d[e] <= self.gen[y] < self.max_generations
            ):
                self.missing[y] -= 1
                if self.missing[y] == 0:
                    self._schedule(y)
        self.busy[x] = False
        self.gen[x] = k + 1
        converged = self._count(k, now)
        if k + 1 >= self.max_generations:
            if self.capped < 0:
                self.capped = x
            return converged
        self.missing[x] = sum(1 for e in self.into[x] if k + 1 >= self.d[e] and not self.tokens[e])
        if self.missing[x] == 0:
            self._schedule(x)
        return converged

    def _count(self, k: int, now: int) -> bool:
        """Record that one event finished generation ``k``; True on convergence."""
        self.done[k] += 1
        self.end[k] = max(self.end[k], now)
        if self.done[k] < self.n:
            return False
        self.ends.append(self.end[k])
        j = len(self.ends) - 1
        if j < 2 * WINDOW:
            return False
        early = self.ends[j - WINDOW] - self.ends[j - 2 * WINDOW]
        late = self.ends[j] - self.ends[j - WINDOW]
        return 100 * abs(late - early) <= CONVERGENCE_PERCENT * max(early, late)
