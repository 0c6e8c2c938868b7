"""The event graph, its builder and the queue engine on hand-built graphs with known intervals."""

from __future__ import annotations

import heapq
from collections import Counter, deque
from dataclasses import dataclass

import numpy as np
import pytest

from raptor_cp.cli.periodic import summary_lines
from raptor_cp.errors import InvalidInstanceError, TimingUnavailableError
from raptor_cp.periodic import DeadlockError, maximum_cycle_ratio
from raptor_cp.periodic.analysis import (
    DEADLOCK_REASON,
    MemoryService,
    QueueModel,
    analyse_periodic,
    check_timing_range,
)
from raptor_cp.periodic.events import (
    NO_RESOURCE,
    Compute,
    EventGraph,
    EventKind,
    Load,
    Recv,
    Send,
    Signal,
    Store,
    Wait,
    build_events,
)
from raptor_cp.periodic.graph import PeriodicGraph
from raptor_cp.periodic.queue_engine import (
    STATUS_CONVERGED,
    STATUS_UNAVAILABLE,
    queue_estimate,
    run_queue,
    with_queues,
)
from raptor_cp.reports.periodic_report import periodic_document


@dataclass(frozen=True)
class FakeTiming:
    """Round numbers: 2 ns per control flit, 1 ns per payload byte and per local byte."""

    def cycle_ns(self) -> int:
        return 1

    def control_ns(self, src: int, dst: int) -> int:
        return 2

    def data_ns(self, src: int, dst: int, nbytes: int) -> int:
        return nbytes

    def local_read_ns(self, nbytes: int) -> int:
        return nbytes

    def local_write_ns(self, nbytes: int) -> int:
        return nbytes

    def global_read_ns(self, nbytes: int) -> int:
        return 10 * nbytes

    def global_write_ns(self, nbytes: int) -> int:
        return 20 * nbytes


def events_of(
    n: int,
    edges: list[tuple[int, int, int, int]],
    core: list[int],
    resource: list[int],
    service: list[int],
    num_cores: int,
    release: list[int] | None = None,
) -> EventGraph:
    base = PeriodicGraph.from_edges(n, edges, name="tiny")
    graph = PeriodicGraph(n, base.u, base.v, base.w, base.d, core=core, name="tiny")
    return EventGraph(
        graph,
        resource,
        service,
        list(range(n)) if release is None else release,
        num_cores,
        [EventKind.OTHER] * n,
        [-1] * n,
        [0] * num_cores,
    )


def ping_pong() -> EventGraph:
    """Core 0 event 0, core 1 event 1: 3 ns there, 5 ns back one generation later."""
    return events_of(2, [(0, 1, 3, 0), (1, 0, 5, 1)], [0, 1], [-1, -1], [0, 0], 2)


def test_ping_pong_interval_is_the_round_trip() -> None:
    events = ping_pong()
    run = run_queue(events)
    assert run.status == STATUS_CONVERGED
    assert run.interval_ns == 8.0
    assert run.generation_ends == (3, 11, 19, 27, 35)
    assert maximum_cycle_ratio(events.recurrence_graph).ratio == 8


def test_memory_bound_case_is_set_by_the_controller() -> None:
    # Per core: entry -> request (controller, 10 ns) -> 1 ns back to the entry. Alone each
    # core repeats every 12 ns; the shared controller needs 2 x 10 ns per generation.
    edges = [(0, 1, 1, 0), (1, 0, 1, 1), (2, 3, 1, 0), (3, 2, 1, 1)]
    events = events_of(4, edges, [0, 0, 1, 1], [-1, 2, -1, 2], [0, 10, 0, 10], 2)
    analysis = analyse_periodic(events, model=QueueModel(memory_controller=True))
    assert analysis.recurrence.interval_ns == 12.0
    assert analysis.memory.service_ns == 20
    assert (analysis.estimate.ns, analysis.estimate.bound_by) == (20, "memory_service")
    # The base queue estimate omits global arbitration (the seeds); the separate
    # memory_controller estimate serves the requests in arrival order.
    assert analysis.queue is not None and analysis.memory_controller is not None
    assert (analysis.queue.run.status, analysis.queue.interval_ns) == (STATUS_CONVERGED, 12.0)
    controller = analysis.memory_controller
    assert (controller.run.status, controller.interval_ns) == (STATUS_CONVERGED, 20.0)
    assert analyse_periodic(events).memory_controller is None


def barrier() -> EventGraph:
    """A barrier (0) releases two controller requests at once: request 1 of core 0 is
    followed by 100 ns of work, request 2 of core 1 by none; both end the generation."""
    edges = [(0, 1, 0, 0), (0, 2, 0, 0), (1, 3, 100, 0), (2, 4, 0, 0), (3, 0, 0, 1), (4, 0, 0, 1)]
    return events_of(5, edges, [0, 0, 1, 0, 1], [-1, 2, 2, -1, -1], [0, 10, 10, 0, 0], 2)


def test_reversed_tie_order_changes_the_interval() -> None:
    estimate = queue_estimate(barrier())
    # Index order serves core 0's request first: 10 + 100; reversed, it waits: 20 + 100.
    assert estimate.interval_ns == 110.0
    assert estimate.alternative_tie_interval_ns == 120.0
    assert estimate.run.core_wait_ns == {0: 0.0, 1: 10.0}
    assert estimate.reversed_run.core_wait_ns == {0: 10.0, 1: 0.0}
    assert estimate.run.max_request_wait_ns == 10
    assert estimate.larger_interval_ns == 120.0


def test_last_payload_of_a_generation_precedes_the_next_generations_first_request() -> None:
    # Core 0 loads 1 byte, then sends 4 bytes to core 1, which computes 50 ns after each
    # receive. The payload of generation k and the load request of k + 1 reach core 0's
    # switch in the same ns; program order puts the payload first (by event index alone
    # the request, numbered before it, took the switch and held it for the controller's
    # 2 + 10 ns). Core 1's cycle: 50 compute + 2 permission + 4 read + 4 payload + 4 write.
    steps = [[Load(1), Send(1, 4)], [Recv(0, 4), Compute(50)]]
    estimate = queue_estimate(build_events(steps, FakeTiming()))
    assert (estimate.interval_ns, estimate.alternative_tie_interval_ns) == (64.0, 64.0)
    # The request waits 4 ns for the payload each generation, never the reverse.
    assert estimate.run.core_wait_ns == {0: 4.0, 1: 0.0}


def switch_then_memory(held: bool) -> EventGraph:
    """Core 0 issues two switch requests at once (2 ns each); the first goes on to the
    controller (10 ns) and, when ``held``, keeps the switch until the controller is done."""
    edges = [(0, 1, 0, 0), (0, 2, 0, 0), (1, 3, 0, 0), (3, 0, 0, 1), (2, 0, 0, 1)]
    release = [0, 3, 2, 3] if held else None
    return events_of(4, edges, [0] * 4, [-1, 0, 0, 1], [0, 2, 2, 10], 1, release)


def test_switch_is_occupied_until_transport_completion() -> None:
    held = run_queue(switch_then_memory(held=True))
    assert held.interval_ns == 14.0
    assert held.core_wait_ns == {0: 12.0}
    free = run_queue(switch_then_memory(held=False))
    assert free.interval_ns == 12.0
    assert free.core_wait_ns == {0: 2.0}


def test_convergence_needs_two_agreeing_windows() -> None:
    # A 2-generation pattern (3 ns, then 5 ns) converges: both windows span 8 ns.
    events = events_of(2, [(0, 1, 3, 0), (1, 0, 5, 0), (1, 0, 0, 1)], [0, 0], [-1, -1], [0, 0], 1)
    with pytest.raises(DeadlockError):
        maximum_cycle_ratio(events.recurrence_graph)
    alternating = events_of(2, [(0, 1, 3, 1), (1, 0, 5, 1)], [0, 0], [NO_RESOURCE] * 2, [0, 0], 1)
    run = run_queue(alternating)
    assert run.status == STATUS_CONVERGED
    assert run.interval_ns == 4.0


def three_generation_cycle(drifting: bool = False) -> EventGraph:
    """Events 0 -> 1 -> 2 -> 0 on core 0, each edge one generation back (1, 2 and 4 ns):
    each generation's circuit closes at another event, so from generation 1 on the
    lengths repeat 4, 2, 1 ns (cyclicity 3). ``drifting`` adds event 3 on core 1, a
    self-loop of 2 ns: it never ends a generation, but it finishes each one earlier
    relative to the generation's end (2k ns against about 7k/3)."""
    edges = [(0, 1, 1, 1), (1, 2, 2, 1), (2, 0, 4, 1)]
    if not drifting:
        return events_of(3, edges, [0, 0, 0], [NO_RESOURCE] * 3, [0] * 3, 1)
    return events_of(4, [*edges, (3, 3, 2, 1)], [0, 0, 0, 1], [NO_RESOURCE] * 4, [0] * 4, 2)


def test_a_run_that_repeats_a_cycle_of_three_generations_converges() -> None:
    events = three_generation_cycle()
    run = run_queue(events)
    lengths = np.diff(run.generation_ends).tolist()
    assert lengths == [4, 2, 1] * 3
    # Two-generation windows never agree within 1 % (sums of 6, 3 and 5 ns, in turn) ...
    ends = np.asarray(run.generation_ends)
    windows = ends[2:] - ends[:-2]
    early, late = windows[:-2], windows[2:]
    assert (abs(late - early) > 0.01 * np.maximum(early, late)).all()
    # ... but generation 9 closes the cycle twice: generations 4-9 repeat 1-6 exactly.
    assert (run.status, run.window_generations, run.generations) == (STATUS_CONVERGED, 3, 10)
    assert run.interval_ns == pytest.approx(7 / 3)
    assert run.interval_ns == pytest.approx(
        float(maximum_cycle_ratio(events.recurrence_graph).ratio)
    )
    assert list(run.generation_ends) == reference_ends(events, False, run.generations)


def test_periodic_summary_names_the_cycle_a_run_repeats() -> None:
    analysis = analyse_periodic(three_generation_cycle())
    doc = {**periodic_document(analysis, source="s", target="t"), "instructions": 3}
    assert doc["queue"]["window_generations"] == 3
    assert doc["queue"]["alternative_tie_window_generations"] == 3
    queue_line = next(line for line in summary_lines(doc) if line.startswith("queue:"))
    assert queue_line.startswith("queue: 2.33333 ns after 10 generations, repeating a cycle of 3 (")


def test_a_cycle_proves_recurrence_only_when_every_event_repeats() -> None:
    # The generation lengths repeat 4, 2, 1 as before, but event 3 drifts within them:
    # no state recurs, and the run goes on past generation 9 until its event bound.
    run = run_queue(three_generation_cycle(drifting=True))
    assert np.diff(run.generation_ends).tolist() == [4, 2, 1] * 10
    assert (run.status, run.window_generations) == (STATUS_UNAVAILABLE, None)
    assert run.reason == (
        "processed-event bound 128 = 16(V+E) reached after 31 generation(s) without convergence"
    )


def test_generation_bound_makes_the_run_unavailable() -> None:
    run = run_queue(ping_pong(), max_generations=4)
    assert run.status == STATUS_UNAVAILABLE
    assert run.interval_ns is None
    assert run.reason == (
        "generation bound: event 0 (OTHER, core 0) completed 4 generations before the "
        "interval converged (4 generation(s) finished everywhere)"
    )


def test_generations_after_an_event_stops_do_not_converge() -> None:
    # Event 0 (1 ns on switch 0, then 3 ns) and event 1 (2 ns on the same switch, back to
    # back) share the switch. Event 1 reaches a bound of 5 generations first; after that
    # event 0 no longer waits for it and its generations shorten to 4 ns (ends 3, 6, 11,
    # 15, 19), which the window test accepted, against the 5 ns of the unbounded run.
    events = events_of(2, [(0, 0, 3, 1), (1, 1, 0, 1)], [0, 0], [0, 0], [1, 2], 1)
    assert run_queue(events).interval_ns == 5.0
    capped = run_queue(events, max_generations=5)
    assert capped.status == STATUS_UNAVAILABLE
    assert capped.reason is not None and capped.reason.startswith("generation bound: event 1")


def test_event_budget_makes_the_run_unavailable() -> None:
    run = run_queue(ping_pong(), event_budget=5)
    assert run.status == STATUS_UNAVAILABLE
    assert run.processed_events == 5
    assert run.reason == (
        "processed-event bound 5 = 16(V+E) reached after 2 generation(s) without convergence"
    )


def test_default_event_budget_is_sixteen_times_v_plus_e() -> None:
    # A core repeating every 1 ns beside one repeating every 1000 ns: the fast one spends
    # the 16 * (V + E) = 64 events before the slow one finishes its second generation.
    events = events_of(2, [(0, 0, 1, 1), (1, 1, 1000, 1)], [0, 1], [-1, -1], [0, 0], 2)
    run = run_queue(events)
    assert run.status == STATUS_UNAVAILABLE
    assert run.processed_events == 64
    assert run.reason == (
        "processed-event bound 64 = 16(V+E) reached after 1 generation(s) without convergence"
    )


def test_stalled_run_is_unavailable() -> None:
    events = events_of(2, [(0, 1, 1, 0), (1, 0, 1, 0)], [0, 1], [-1, -1], [0, 0], 2)
    run = run_queue(events)
    assert run.status == STATUS_UNAVAILABLE
    assert run.reason == (
        "stalled after 0 generation(s): event 0 (OTHER, core 0) waits in generation 0 for "
        "tokens that never arrive"
    )


def test_event_without_dependency_is_rejected() -> None:
    with pytest.raises(InvalidInstanceError, match=r"^tiny: event 1 has no dependency: "):
        events_of(2, [(0, 0, 1, 1)], [0, 0], [-1, -1], [0, 0], 1)


def test_negative_delay_is_rejected() -> None:
    with pytest.raises(InvalidInstanceError, match=r"^tiny: edge 0 has delay -1, not >= 0$"):
        events_of(1, [(0, 0, -1, 1)], [0], [-1], [0], 1)


def test_release_must_follow_the_queued_event() -> None:
    edges = [(0, 1, 0, 0), (1, 0, 0, 1)]
    with pytest.raises(InvalidInstanceError, match="event 0 is released by event 1, which is not"):
        events_of(2, edges, [0, 0], [-1, 0], [0, 1], 1, release=[1, 1])


def ping_pong_steps() -> list[list]:
    return [
        [Compute(10), Send(1, 4), Recv(1, 4)],
        [Recv(0, 4), Compute(5), Send(0, 4)],
    ]


def test_built_ping_pong_follows_the_send_recv_protocol() -> None:
    # 10 compute, 2 request, 2 permission, 4 read, 4 payload, 4 write, 5 compute,
    # 2 request, 2 permission, 4 read, 4 payload, 4 write = 47 ns per round trip.
    events = build_events(ping_pong_steps(), FakeTiming())
    kinds = [EventKind(int(k)).name for k in events.kind]
    assert kinds.count("PERMISSION") == 2 and kinds.count("PAYLOAD") == 2
    assert maximum_cycle_ratio(events.recurrence_graph).ratio == 47
    run = run_queue(events)
    assert run.interval_ns == 47.0
    assert run.generation_ends[0] == 47
    assert events.core_work.tolist() == [10 + 4 + 4, 4 + 5 + 4]


def test_send_completes_at_payload_enqueue() -> None:
    # Core 0 sends 100 bytes then computes 1 ns: it is done long before the payload lands.
    events = build_events([[Send(1, 100), Compute(1)], [Recv(0, 100)]], FakeTiming())
    analysis = analyse_periodic(events)
    # Core 0 repeats every 2 + 2 + 100 + 1 ns (request, permission, read, compute); core 1
    # every 2 + 100 + 100 + 100 (permission, source read, payload, write): the request of
    # the next generation is already there when its RECV is posted.
    ratio = analysis.recurrence.ratio
    assert ratio is not None and ratio.ratio == 302
    assert ratio.witness.cores == (0, 1)
    assert analysis.generation_span_ns == 2 + 302
    assert analysis.queue is not None and analysis.queue.interval_ns == 302


def test_loads_and_stores_share_the_controller_fifo() -> None:
    # Core 0 loads 1 byte (10 ns service), core 1 stores 1 byte (20 ns) and a zero-byte
    # store (0 ns): 30 ns of controller service per generation.
    events = build_events([[Load(1)], [Store(1), Store(0)]], FakeTiming())
    assert events.memory_service_ns == 30
    assert events.memory_requests.size == 3
    assert (events.resource[events.memory_requests] == events.memory_resource).all()
    analysis = analyse_periodic(events, model=QueueModel(memory_controller=True))
    assert analysis.memory == MemoryService(requests=3, loads=1, stores=2, service_ns=30)
    queue = analysis.memory_controller
    assert queue is not None and queue.run.status == STATUS_CONVERGED
    assert queue.interval_ns is not None and queue.interval_ns >= 30


def test_without_network_queues_a_switch_does_not_serialize_its_messages() -> None:
    # Two events of core 0 share its switch (10 ns each) after one entry: queued they
    # finish 10 and 20 ns after it; unqueued both at 10 ns.
    edges = [(0, 1, 0, 0), (0, 2, 0, 0), (1, 0, 0, 1), (2, 0, 0, 1)]
    events = events_of(3, edges, [0, 0, 0], [-1, 0, 0], [0, 10, 10], 1)
    assert run_queue(with_queues(events, True, True)).interval_ns == 20.0
    assert run_queue(with_queues(events, False, True)).interval_ns == 10.0
    assert with_queues(events, True, True) is events


def test_signals_feed_counting_waits() -> None:
    steps = [[Signal(1, 0), Signal(1, 0)], [Compute(10), Wait(0, 1), Wait(0, 1)]]
    events = build_events(steps, FakeTiming())
    assert events.notes == ()
    run = run_queue(events)
    assert run.interval_ns == 10.0


def test_wait_counts_must_match_the_signals() -> None:
    steps = [[Signal(1, 3)], [Wait(3, 2)]]
    message = (
        r"^events: core 1 event register 3: WAITs consume 2 token\(s\) per generation but "
        r"SYNCs deliver 1; a WAIT never completes \(deadlock\)$"
    )
    with pytest.raises(InvalidInstanceError, match=message):
        build_events(steps, FakeTiming())


def test_tokens_from_several_cores_are_noted() -> None:
    steps = [[Signal(2, 0)], [Signal(2, 0)], [Wait(0, 1), Wait(0, 1)]]
    events = build_events(steps, FakeTiming())
    assert events.notes == (
        "core 2 event register 0: tokens from 2 cores assigned to its WAITs in "
        "(source core, program) order",
    )


def test_unmatched_send_is_rejected() -> None:
    message = (
        r"^events: core 0 sends 2 time\(s\) to core 1, which receives 1 time\(s\) from it "
        r"per generation$"
    )
    with pytest.raises(InvalidInstanceError, match=message):
        build_events([[Send(1, 4), Send(1, 4)], [Recv(0, 4)]], FakeTiming())


def test_crossed_sends_deadlock() -> None:
    events = build_events([[Send(1, 4), Recv(1, 4)], [Send(0, 4), Recv(0, 4)]], FakeTiming())
    analysis = analyse_periodic(events)
    assert analysis.recurrence.status == "deadlock"
    assert (analysis.queue, analysis.estimate.ns, analysis.generation_span_ns) == (None, None, None)
    doc = periodic_document(analysis, source="crossed", target="fake")
    # Each core's permission waits for its own SEND to complete, which needs the other's.
    assert {e["kind"] for e in doc["recurrence"]["cycle"]} == {"permission", "send_enqueue"}
    assert doc["queue"] == {"status": STATUS_UNAVAILABLE, "reason": DEADLOCK_REASON}
    assert doc["interval_estimate"]["bound_by"] is None


def test_document_has_timing_graph_and_is_not_selectable() -> None:
    analysis = analyse_periodic(build_events(ping_pong_steps(), FakeTiming()))
    doc = periodic_document(analysis, source="s", target="t")
    assert doc["selection_eligible"] is False
    assert len(doc["timing_graph"]["events"]) == doc["events"] == 12
    assert doc["recurrence"]["witness"]["cores"] == [0, 1]
    assert doc["queue"]["alternative_tie_interval_ns"] == 47.0


@pytest.mark.parametrize(
    ("steps", "breakdown", "delay"),
    [
        # Same core: the two computes (10 + 5). Across cores: each source read after the
        # partner's permission and each destination write after the payload (4 per side,
        # both ways). Switches: two requests and two permissions (2 each), two payloads (4).
        (ping_pong_steps(), (15, 16, 16, 0), 47),
        # The controller serves 64 bytes read (10 ns each) and 32 written (20 ns each); the
        # core writes the loaded bytes, computes and reads the stored ones (64 + 10 + 32);
        # the load's request flit (2) and the store's payload (32) hold the switch.
        ([[Load(64), Compute(10), Store(32)]], (106, 0, 34, 1280), 1420),
    ],
    ids=["ping-pong", "load-compute-store"],
)
def test_witness_breakdown_splits_the_whole_cycle_by_where_its_time_goes(
    steps: list[list], breakdown: tuple[int, int, int, int], delay: int
) -> None:
    analysis = analyse_periodic(build_events(steps, FakeTiming()))
    witness = periodic_document(analysis, source="s", target="t")["recurrence"]["witness"]
    names = ("same_core_ns", "cross_core_ns", "switch_service_ns", "memory_service_ns")
    assert witness["breakdown"] == dict(zip(names, breakdown, strict=True))
    assert sum(breakdown) == witness["delay"] == delay


def max_plus_ends(events: EventGraph, generations: int) -> list[int]:
    """Reference: ``G(k)`` of the unrolled max-plus recursion (no queues), each event's
    generations in order, as the engine runs them."""
    g = events.graph
    order = g.sweep_order(np.arange(g.num_nodes), np.arange(g.num_edges))
    times = np.zeros((generations, g.num_nodes), dtype=np.int64)
    for k in range(generations):
        for x in order:
            edges = events.in_edges(x)
            arcs = zip(g.u[edges], g.w[edges], g.d[edges], strict=True)
            ready = [times[k - d, u] + w for u, w, d in arcs if k >= d]
            times[k, x] = max([0, *ready, *([times[k - 1, x]] if k else [])])
    return times.max(axis=1).tolist()


@pytest.mark.parametrize("seed", range(12))
def test_engine_without_queues_is_the_max_plus_recursion(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 12))
    edges = [(x, x + 1, int(rng.integers(0, 20)), 0) for x in range(n - 1)]
    edges.append((n - 1, 0, int(rng.integers(0, 20)), 1))
    for _ in range(n):
        a, b = sorted(rng.choice(n, size=2, replace=False).tolist())
        edges.append((a, b, int(rng.integers(0, 50)), 0))
        edges.append((b, a, int(rng.integers(0, 50)), int(rng.integers(1, 3))))
    events = events_of(n, edges, [0] * n, [-1] * n, [0] * n, 1)
    run = run_queue(events, event_budget=10**6)
    assert run.generations >= 5
    assert list(run.generation_ends) == max_plus_ends(events, run.generations)


def test_bisection_is_the_default_and_howard_the_cross_check() -> None:
    events = ping_pong()
    default = analyse_periodic(events)
    assert (default.recurrence.method, default.cross_check) == ("bisection", None)
    checked = analyse_periodic(events, cross_check=True)
    assert checked.cross_check is not None and checked.cross_check.method == "howard"
    assert checked.cross_check.ratio is not None and checked.recurrence.ratio is not None
    assert checked.cross_check.ratio.ratio == checked.recurrence.ratio.ratio == 8
    doc = periodic_document(checked, source="s", target="t")
    assert doc["cross_check"]["agrees"] is True
    assert doc["recurrence"]["sweeps"] == checked.recurrence.ratio.sweeps > 0


def test_timing_whose_total_leaves_the_supported_range_is_unavailable() -> None:
    # Every delay fits, their sum does not: 2 x 2**52 + 1 > 2**53 - 1.
    half = 2**52
    events = events_of(2, [(0, 1, half, 0), (1, 0, half + 1, 1)], [0, 1], [-1, -1], [0, 0], 2)
    with pytest.raises(TimingUnavailableError, match=r"outside the supported range"):
        analyse_periodic(events)
    assert check_timing_range(ping_pong()) is None


def reference_ends(events: EventGraph, reverse_ties: bool, generations: int) -> list[int]:
    """Reference: ``G(k)`` for the first ``generations`` generations by the module
    docstring's rules, restated plainly (a cross-check of the compiled event loop).

    Heap entries are ``(time, generation, tie, phase, event)``: phase 0 arrives at the
    event's resource, phase 1 completes it. A completion frees the event's own resource
    (unless another event releases it) and those of the events it releases, hands out
    its tokens, then every event it fed and itself start when their tokens are in.
    """
    g = events.graph
    n = g.num_nodes
    in_edges = [events.in_edges(x).tolist() for x in range(n)]
    out_edges = [sorted(np.flatnonzero(g.u == x).tolist()) for x in range(n)]
    releases = [[y for y in range(n) if events.release[y] == x and y != x] for x in range(n)]
    tokens: list[deque[int]] = [deque() for _ in range(g.num_edges)]
    gen, busy, arrival = [0] * n, [False] * n, [0] * n
    holder: dict[int, int] = {}
    waiting: dict[int, deque[int]] = {}
    heap: list[tuple[int, int, int, int, int]] = []
    ends: list[int] = []
    done: Counter[int] = Counter()

    def start(x: int, now: int) -> None:
        needed = [e for e in in_edges[x] if gen[x] >= g.d[e]]
        if busy[x] or any(not tokens[e] for e in needed):
            return
        ready = max([now, *(tokens[e].popleft() for e in needed)])
        tie = n - 1 - x if reverse_ties else x
        busy[x] = True
        heapq.heappush(heap, (ready, gen[x], tie, int(events.resource[x] == NO_RESOURCE), x))

    for x in range(n):
        start(x, 0)
    while len(ends) < generations:
        now, k, tie, phase, x = heapq.heappop(heap)
        if phase == 0:
            r = int(events.resource[x])
            arrival[x] = now
            if r in holder:
                waiting.setdefault(r, deque()).append(x)
            else:
                holder[r] = x
                heapq.heappush(heap, (now + int(events.service[x]), k, tie, 1, x))
            continue
        own = [int(events.resource[x])] if events.release[x] == x else []
        for r in [r for r in own if r != NO_RESOURCE] + [
            int(events.resource[y]) for y in releases[x]
        ]:
            if waiting.get(r):
                y = waiting[r].popleft()
                holder[r] = y
                y_tie = n - 1 - y if reverse_ties else y
                heapq.heappush(heap, (now + int(events.service[y]), gen[y], y_tie, 1, y))
            else:
                del holder[r]
        for e in out_edges[x]:
            tokens[e].append(now + int(g.w[e]))
        gen[x], busy[x] = k + 1, False
        done[k] += 1
        if done[k] == n:
            ends.append(now)
        for e in out_edges[x]:
            start(int(g.v[e]), now)
        start(x, now)
    return ends


def random_program(seed: int) -> list[list]:
    """Three to five cores, steps drawn in one global order (so the rendezvous cannot
    deadlock): compute, global loads and stores, and transfers between two cores."""
    rng = np.random.default_rng(seed)
    cores = int(rng.integers(3, 6))
    steps: list[list] = [[] for _ in range(cores)]
    for _ in range(int(rng.integers(6, 20))):
        a, b = rng.choice(cores, size=2, replace=False).tolist()
        kind = int(rng.integers(0, 4))
        if kind == 0:
            steps[a].append(Compute(int(rng.integers(1, 30))))
        elif kind == 1:
            steps[a].append(Load(int(rng.integers(0, 4))))
        elif kind == 2:
            steps[a].append(Store(int(rng.integers(0, 4))))
        else:
            nbytes = int(rng.integers(1, 8))
            steps[a].append(Send(b, nbytes))
            steps[b].append(Recv(a, nbytes))
    return steps


@pytest.mark.parametrize("seed", range(24))
def test_engine_follows_the_documented_rules_on_random_programs(seed: int) -> None:
    events = build_events(random_program(seed), FakeTiming())
    estimate = queue_estimate(events)
    for run, reverse in ((estimate.run, False), (estimate.reversed_run, True)):
        assert run.status == STATUS_CONVERGED
        assert list(run.generation_ends) == reference_ends(events, reverse, run.generations)
