"""The single-pass (latency-mode) estimate: one generation of the queue engine."""

from __future__ import annotations

from test_queue_engine import FakeTiming as Timing  # round numbers, global writes 20 ns/B

from raptor_cp.periodic.analysis import analyse_periodic, dependency_finish
from raptor_cp.periodic.events import Compute, Load, Recv, Send, build_events
from raptor_cp.periodic.single_pass import single_pass


def test_two_loads_serialize_on_the_one_memory_port() -> None:
    # Each core: request 2 ns, controller 10 x 8 = 80 ns, local write 8 ns, then 5 ns of work.
    events = build_events([[Load(8), Compute(5)], [Load(8), Compute(5)]], Timing())
    analysis = analyse_periodic(events)
    assert analysis.generation_span_ns == 2 + 80  # the span ends at the last event
    # The second request waits for the first one's 80 ns of service.
    result = single_pass(events, dependency_finish(events))
    assert result.latency_ns == 2 + 80 + 80 + 8 + 5
    assert result.unqueued_ns == 2 + 80 + 8 + 5
    assert analysis.single_pass == result


def test_trailing_work_after_the_last_event_counts() -> None:
    events = build_events([[Compute(7), Send(1, 4), Compute(30)], [Recv(0, 4)]], Timing())
    # Request 2 + permission 2 + read 4 = enqueue at 15; the sender then works 30 ns.
    assert single_pass(events, dependency_finish(events)).latency_ns == 7 + 2 + 2 + 4 + 30


def test_crossed_sends_have_no_single_pass() -> None:
    events = build_events(
        [[Send(1, 4), Recv(1, 4)], [Send(0, 4), Recv(0, 4)]], Timing(), name="crossed"
    )
    result = single_pass(events, [0] * events.num_events)
    assert result.latency_ns is None and result.alternative_tie_latency_ns is None
    assert result.reason is not None and result.reason == (
        "generation 0 cannot complete: event 2 (SEND_ENQUEUE, core 0 step 0) waits for "
        "tokens that never arrive"
    )
    assert analyse_periodic(events).single_pass is None
