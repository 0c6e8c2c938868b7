"""The single-pass latency of an `EventGraph`: one generation through the queue engine.

pimsim-nn's latency mode runs every core's stream once and reports the last
core's finish. The within-generation dependency span (`PeriodicAnalysis
.generation_span_ns`) prices each event alone; on a program whose cores share
the chip's one global-memory port that is far too short (PIMCOMP-NN's
ResNet-18: 6.36 ms of span, 12.82 ms of memory-controller service, 13.64 ms
simulated). One generation of the queue engine (`raptor_cp.periodic.queue_engine`)
keeps the span's dependencies and adds the queues: each source switch and the
memory controller serve their requests one at a time in arrival order, and a
global request holds its source switch until the controller has served it. No
event of a later generation runs, so nothing of a second pass contends.

A core finishes at its last event plus the work after it, which is the delay
of its completion-to-entry edge: the latency is the largest ``t(u, 0) + w``
over edges of distance 1, and at least the latest event. The same rule over
the queue-free completion times (`raptor_cp.periodic.analysis.dependency_finish`)
gives the single pass without queues, so that the two differ by the queueing
alone.

Time ``O(E + V log V)`` per tie order; two runs (event-index and reversed ties)
give the sensitivity the queue estimate reports too.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from raptor_cp.periodic.events import EventGraph
from raptor_cp.periodic.queue_engine import first_generation


@dataclass(frozen=True)
class SinglePass:
    """The completion of one generation in both tie orders (ns), or why there is none."""

    latency_ns: int | None
    """Event-index tie order; None when the generation cannot complete."""
    alternative_tie_latency_ns: int | None
    """Reversed tie order."""
    reason: str | None
    """Why ``latency_ns`` is None."""
    unqueued_ns: int
    """The same pass without any queue (every event priced alone)."""

    def to_json(self) -> dict[str, object]:
        return {
            "latency_ns": self.latency_ns,
            "alternative_tie_latency_ns": self.alternative_tie_latency_ns,
            "reason": self.reason,
            "unqueued_ns": self.unqueued_ns,
        }


def single_pass(events: EventGraph, unqueued: list[int]) -> SinglePass:
    """Run one generation of ``events`` in both tie orders (module docstring).

    ``unqueued`` is every event's queue-free completion (`dependency_finish`).
    """
    latencies: list[int | None] = []
    reason = None
    for reverse in (False, True):
        times = first_generation(events, reverse)
        if isinstance(times, str):
            latencies.append(None)
            reason = reason or times
            continue
        latencies.append(_pass_end(events, np.asarray(times, dtype=np.int64)))
    quiet = _pass_end(events, np.asarray(unqueued, dtype=np.int64))
    return SinglePass(latencies[0], latencies[1], reason, quiet)


def _pass_end(events: EventGraph, times: np.ndarray) -> int:
    """The last core's finish: its latest event, or an event plus the work after it."""
    g = events.graph
    later = np.flatnonzero(g.d > 0)
    trailing = times[g.u[later]] + g.w[later]
    return int(max(times.max(initial=0), trailing.max(initial=0)))
