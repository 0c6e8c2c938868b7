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
from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np

from raptor_cp.collector import collector_paused
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
            order, STATUS_UNAVAILABLE, "no events: every core is idle", None, (), 0, None, 0
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
        return simulation.first
    stuck = [x for x in range(events.num_events) if simulation.gen[x] == 0]
    if run.processed_events >= budget or not stuck:
        return run.reason or "generation 0 did not complete"
    return (
        f"generation 0 cannot complete: {simulation._describe(stuck[0])} waits for tokens "
        "that never arrive"
    )


SINGLE, PAIR, GENERAL = 0, 1, 2
"""In-edges of an event: exactly one, exactly two (both of distance 0), or any other set."""


class _Network:
    """The run-independent form of an `EventGraph`: plain lists the event loop indexes.

    Built once per graph and shared by its runs (both tie orders). Edges are
    listed by source (``out_*``, rows ``out_start[x]:out_start[x + 1]``) and by
    target (``in_*``), each row in ascending edge id. ``O(V + E)``.
    """

    def __init__(self, events: EventGraph) -> None:
        g = events.graph
        n = g.num_nodes
        self.events = events
        self.num_edges = g.num_edges
        self.core: list[int] = g.core.tolist()
        self.resource: list[int] = events.resource.tolist()
        self.service: list[int] = events.service.tolist()
        self.memory = events.memory_resource
        by_source = np.argsort(g.u, kind="stable")
        self.out_start: list[int] = np.searchsorted(g.u[by_source], np.arange(n + 1)).tolist()
        self.out_edge: list[int] = by_source.tolist()
        self.out_target: list[int] = g.v[by_source].tolist()
        self.out_delay: list[int] = g.w[by_source].tolist()
        self.out_distance: list[int] = g.d[by_source].tolist()
        in_start, by_target = events.in_edge_index
        self.in_start: list[int] = in_start.tolist()
        self.in_edge: list[int] = by_target.tolist()
        self.in_distance: list[int] = g.d[by_target].tolist()
        self.missing: list[int] = np.bincount(g.v[g.d == 0], minlength=n).tolist()
        """Per event, its distance-0 in-edges (the tokens generation 0 waits for)."""
        degree = np.diff(in_start)
        late = np.bincount(g.v[g.d > 0], minlength=n)
        self.mode: list[int] = np.where(
            late > 0, GENERAL, np.where(degree == 1, SINGLE, np.where(degree == 2, PAIR, GENERAL))
        ).tolist()
        """Per event, `SINGLE`, `PAIR` or `GENERAL` (how the loop tracks its in-tokens)."""
        release = events.release.tolist()
        frees: list[tuple[int, ...]] = [()] * n
        for x, (r, y) in enumerate(zip(self.resource, release, strict=True)):
            if r != NO_RESOURCE and y == x:
                frees[x] = (r,)
        for x, y in enumerate(release):
            if y != x:
                frees[y] = (*frees[y], self.resource[x])
        self.frees = frees
        """Per event, the resources its completion frees: its own, then the one it releases."""


class _Simulation:
    """State of one run; see the module docstring."""

    def __init__(
        self, network: _Network, reverse_ties: bool, max_generations: int, budget: int
    ) -> None:
        n = len(network.core)
        self.network = network
        self.events = network.events
        self.n = n
        self.core = network.core
        self.resource = network.resource
        self.reverse_ties = reverse_ties
        self.max_generations = max_generations
        self.budget = budget
        self.gen = [0] * n
        self.ends: list[int] = []
        num_resources = self.events.num_cores + 1
        self.waits = [[0] * num_resources for _ in range(max_generations)]
        self.max_request_wait = 0
        self.first = [0] * n
        """Completion time of each event in generation 0."""
        self.capped = -1

    def run(self, order: str) -> QueueRun:
        """`_loop` with the cyclic garbage collector paused.

        A run allocates ``O(V + E)`` lists and tuples and no reference cycles;
        left on, the collector would re-scan the whole process heap (the
        caller's graphs and plans) several times per run for nothing.
        """
        with collector_paused():
            return self._loop(order)

    def _loop(self, order: str) -> QueueRun:
        """The event loop: scheduling, arrivals, starts, releases and completions, inlined.

        The heap holds at most one entry per event, an integer key
        ``time << shift | generation << tagged | tie << 1 | phase`` (phase 0:
        arrival at the event's resource, 1: completion), so the processing
        order is fixed by ``(time, generation, tie)`` alone (the generation is
        added when the key is pushed; keys queued as tokens carry none); every
        key pushed is due no earlier than the one
        being processed, so the processed times never decrease. The smallest
        key pushed while processing one event waits in ``nxt`` instead of the
        heap: the next iteration takes it by one `heapq.heappushpop`, which
        returns it at once when it is due first (often the case). An event
        with one or two in-edges of distance 0 (`SINGLE`, `PAIR`: nearly all)
        needs no missing-token count: it is ready when each of its FIFOs holds
        a token, and those FIFOs hold the event's keys rather than times; other
        events (`GENERAL`) count the FIFOs still empty. An event that reached
        the generation bound stays busy. All of this only avoids Python object
        and call overhead (this loop is the hot path of pipeline selection).
        """
        net, n = self.network, self.n
        tokens: list[list[int]] = [[] for _ in range(net.num_edges)]
        ties = range(n - 1, -1, -1) if self.reverse_ties else range(n)
        tagged = (2 * n).bit_length()  # bits of tie << 1 | phase
        mask = (1 << tagged) - 1
        shift = tagged + self.max_generations.bit_length()  # pushed generations: < the bound
        # Key parts: start_tag[x] = tie << 1 | phase of its first heap entry; done_key[x] adds
        # its service to the completion tag; who[tag] is the event.
        start_tag = [(t << 1) | (r == NO_RESOURCE) for t, r in zip(ties, net.resource, strict=True)]
        done_key = [(ns << shift) | (t << 1) | 1 for t, ns in zip(ties, net.service, strict=True)]
        started = [(ns << shift) | 1 for ns in net.service]  # arrival key -> completion key
        who = [0] * (2 * n)
        for x, t in enumerate(ties):
            who[2 * t] = who[2 * t + 1] = x
        # Per event: its in-edges' FIFOs as (FIFO, distance) (GENERAL), its FIFO (SINGLE),
        # its two FIFOs (PAIR); its out-edges as (FIFO, target, delay << shift | target's
        # start tag, target's mode, the target's other FIFO (PAIR) or (delay, distance)).
        start = net.in_start
        mode = net.mode
        ins_edges = [net.in_edge[start[x] : start[x + 1]] for x in range(n)]
        ins = [
            [(tokens[e], net.in_distance[i]) for i, e in enumerate(edges, start[x])]
            if mode[x] == GENERAL
            else tokens[edges[0]]
            if mode[x] == SINGLE
            else (tokens[edges[0]], tokens[edges[1]])
            for x, edges in enumerate(ins_edges)
        ]
        targets, delays = net.out_target, net.out_delay
        aux: list[object] = [None] * net.num_edges
        for e, y, we, de in zip(net.out_edge, targets, delays, net.out_distance, strict=True):
            m = mode[y]
            if m == PAIR:
                first_fifo, second_fifo = ins[y]
                aux[e] = second_fifo if tokens[e] is first_fifo else first_fifo
            elif m == GENERAL:
                aux[e] = (we, de)
        flat = list(
            zip(
                [tokens[e] for e in net.out_edge],
                targets,
                [(we << shift) | start_tag[y] for we, y in zip(delays, targets, strict=True)],
                [mode[y] for y in targets],
                [aux[e] for e in net.out_edge],
                strict=True,
            )
        )
        start = net.out_start
        outs = [flat[start[x] : start[x + 1]] for x in range(n)]
        resource, frees, core = net.resource, net.frees, net.core
        gen, waits, first, ends = self.gen, self.waits, self.first, self.ends
        missing = list(net.missing)
        busy = [False] * n  # scheduled (heap, resource FIFO or service) or at the bound
        arrival = [0] * n
        num_resources = self.events.num_cores + 1
        holder = [-1] * num_resources
        fifo: list[deque[int]] = [deque() for _ in range(num_resources)]
        memory, max_generations = net.memory, self.max_generations
        done = [0] * max_generations
        push, pop, pushpop = heapq.heappush, heapq.heappop, heapq.heappushpop
        max_wait = 0
        # Each key is due a delay or a service after a processed one: every time stays below
        # horizon, and ``none`` above every key says that ``nxt`` is empty.
        horizon = (self.budget + 1) * (max(net.out_delay, default=0) + max(net.service) + 1)
        none = 1 << (horizon.bit_length() + shift)
        single, pair = SINGLE, PAIR

        heap = [start_tag[x] for x in range(n) if missing[x] == 0]  # time 0
        heapq.heapify(heap)
        for key in heap:
            busy[who[key]] = True
        nxt = none
        window = 2 * WINDOW
        processed = 0
        for processed in range(1, self.budget + 1):
            if nxt != none:
                key = pushpop(heap, nxt)
                nxt = none
            elif heap:
                key = pop(heap)
            else:
                processed -= 1
                break
            x = who[key & mask]
            if not key & 1:
                # Arrival at the resource's FIFO; start at once when it is free.
                r = resource[x]
                arrival[x] = key >> shift
                if holder[r] < 0:
                    holder[r] = x
                    nxt = key + started[x]
                else:
                    fifo[r].append(x)
                continue
            # x completes generation k: free what it holds, hand out its tokens.
            now = key >> shift
            base = now << shift
            k = gen[x]
            if k == 0:
                first[x] = now
            for rr in frees[x]:
                queue_r = fifo[rr]
                if queue_r:
                    y = queue_r.popleft()
                    holder[rr] = y
                    wait = now - arrival[y]
                    waits[gen[y]][core[y]] += wait
                    if rr == memory and wait > max_wait:
                        max_wait = wait
                    due = base + done_key[y] + (gen[y] << tagged)
                    if due < nxt:
                        due, nxt = nxt, due
                    if due != none:
                        push(heap, due)
                else:
                    holder[rr] = -1
            for queue, y, wkey, m, other in outs[x]:
                if m == single:
                    due = base + wkey
                    if queue or busy[y]:
                        queue.append(due)
                        continue
                elif m == pair:
                    due = base + wkey
                    if queue or busy[y] or not other:
                        queue.append(due)
                        continue
                    token = other.pop(0)
                    if token > due:
                        due = token
                else:
                    we, de = other
                    queue.append(now + we)
                    if len(queue) > 1 or busy[y] or de > gen[y]:
                        continue
                    m = missing[y] - 1
                    missing[y] = m
                    if m:
                        continue
                    ky = gen[y]
                    ready = now
                    for q, d in ins[y]:
                        if ky >= d:
                            token = q.pop(0)
                            if token > ready:
                                ready = token
                    due = (ready << shift) | (wkey & mask)
                due += gen[y] << tagged
                busy[y] = True
                if due < nxt:
                    due, nxt = nxt, due
                if due != none:
                    push(heap, due)
            k1 = k + 1
            gen[x] = k1
            count = done[k] + 1
            done[k] = count
            if count == n:
                ends.append(now)  # the latest completion of generation k: times never decrease
                j = len(ends) - 1
                if j >= window:
                    early = ends[j - WINDOW] - ends[j - window]
                    late = ends[j] - ends[j - WINDOW]
                    if 100 * abs(late - early) <= CONVERGENCE_PERCENT * max(early, late):
                        self.max_request_wait = max_wait
                        return self._converged(order, j, processed)
            if k1 >= max_generations:
                if self.capped < 0:
                    self.capped = x
                continue  # x stays busy: it never runs again
            m = mode[x]
            if m == single:
                queue = ins[x]
                if not queue:
                    busy[x] = False
                    continue
                due = queue.pop(0)
                if due < base:
                    due = base | start_tag[x]
            elif m == pair:
                queue, other = ins[x]
                if not (queue and other):
                    busy[x] = False
                    continue
                due = queue.pop(0)
                token = other.pop(0)
                if token > due:
                    due = token
                if due < base:
                    due = base | start_tag[x]
            else:
                count = 0
                for q, d in ins[x]:
                    if k1 >= d and not q:
                        count += 1
                missing[x] = count
                if count:
                    busy[x] = False
                    continue
                ready = now
                for q, d in ins[x]:
                    if k1 >= d:
                        token = q.pop(0)
                        if token > ready:
                            ready = token
                due = (ready << shift) | start_tag[x]
            due += k1 << tagged
            if due < nxt:
                due, nxt = nxt, due
            if due != none:
                push(heap, due)
        self.max_request_wait = max_wait
        if nxt != none or heap:
            reason = (
                f"processed-event bound {self.budget} = {EVENT_BUDGET_FACTOR}(V+E) reached "
                f"after {len(ends)} generation(s) without convergence"
            )
            return self._unavailable(order, reason, processed)
        return self._unavailable(order, self._stall_reason(), processed)

    def _converged(self, order: str, k: int, processed: int) -> QueueRun:
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
