"""``trace.json``: a schedule in the Chrome trace-event format (opens in Perfetto).

Process 0 ("cores") has one thread per used core; every task is a complete
event (``"ph": "X"``) from its evaluated start to its finish. Process 1
("transfers") shows each cross-core edge whose transfer takes time as a complete
event from its producer's finish to its arrival at the consumer's core
(``target.transfer_ns``). Transfers leaving one core may overlap in time, and
trace viewers require the events of one thread to nest, so each core's link is
split into as many sub-lanes as it needs (greedy interval partitioning in
order of (start, end, edge id); deterministic).

Timestamps are microseconds, as the format requires, written with nanosecond
precision (``ns / 1000`` prints exactly with at most three decimals).

References
----------
Trace Event Format, https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU
"""

from __future__ import annotations

import heapq

from raptor_cp.evaluation import Evaluation, edge_delays
from raptor_cp.problems import LatencyProblem
from raptor_cp.schedule import Schedule

CORES_PID = 0
TRANSFERS_PID = 1


def _us(ns: int) -> float | int:
    """Microseconds with nanosecond precision; whole microseconds print as integers."""
    return ns // 1000 if ns % 1000 == 0 else ns / 1000


def _metadata(pid: int, tid: int | None, kind: str, value: object) -> dict[str, object]:
    key = "sort_index" if kind.endswith("sort_index") else "name"
    event: dict[str, object] = {"name": kind, "ph": "M", "pid": pid, "args": {key: value}}
    if tid is not None:
        event["tid"] = tid
    return event


def _complete(
    pid: int, tid: int, name: str, start_ns: int, end_ns: int, args: dict[str, object]
) -> dict[str, object]:
    return {
        "name": name,
        "ph": "X",
        "pid": pid,
        "tid": tid,
        "ts": _us(start_ns),
        "dur": _us(end_ns - start_ns),
        "args": args,
    }


def transfer_intervals(
    problem: LatencyProblem, schedule: Schedule, finish_ns: list[int]
) -> list[tuple[int, int, int]]:
    """``(sent_ns, arrived_ns, edge)`` of every edge whose transfer takes time, sorted.

    A transfer leaves when its producer finishes and arrives ``transfer_ns`` later,
    exactly as `raptor_cp.evaluation` times it (no link contention).
    """
    delay = edge_delays(problem, schedule.core).tolist()
    src = problem.graph.edge_src.tolist()
    intervals = [
        (finish_ns[src[e]], finish_ns[src[e]] + delay[e], e) for e in range(len(delay)) if delay[e]
    ]
    intervals.sort()
    return intervals


def _sub_lanes(intervals: list[tuple[int, int, int]]) -> list[int]:
    """Assign each interval (sorted by start) the lowest free lane whose last event ended."""
    free: list[int] = []
    busy: list[tuple[int, int]] = []  # (end, lane)
    lanes_used = 0
    assigned = []
    for start, end, _ in intervals:
        while busy and busy[0][0] <= start:
            heapq.heappush(free, heapq.heappop(busy)[1])
        if free:
            lane = heapq.heappop(free)
        else:
            lane = lanes_used
            lanes_used += 1
        assigned.append(lane)
        heapq.heappush(busy, (end, lane))
    return assigned


def trace_document(
    problem: LatencyProblem, schedule: Schedule, evaluation: Evaluation
) -> dict[str, object]:
    """Build the trace-event document of ``schedule`` timed by ``evaluation``."""
    graph = problem.graph
    names = graph.names
    start = [int(t) for t in evaluation.start_ns]
    finish = [int(t) for t in evaluation.finish_ns]
    operation = graph.operation.tolist()
    lane = graph.lane.tolist()
    events: list[dict[str, object]] = [
        _metadata(CORES_PID, None, "process_name", "cores"),
        _metadata(CORES_PID, None, "process_sort_index", CORES_PID),
    ]
    for core, order in enumerate(schedule.core_order):
        if not order:
            continue
        events.append(_metadata(CORES_PID, core, "thread_name", f"core {core}"))
        events.append(_metadata(CORES_PID, core, "thread_sort_index", core))
        for t in order:
            args = {"task": t, "operation": graph.operation_names[operation[t]], "lane": lane[t]}
            events.append(_complete(CORES_PID, core, names[t], start[t], finish[t], args))

    intervals = transfer_intervals(problem, schedule, finish)
    if intervals:
        events.append(_metadata(TRANSFERS_PID, None, "process_name", "transfers"))
        events.append(_metadata(TRANSFERS_PID, None, "process_sort_index", TRANSFERS_PID))
    core = schedule.core.tolist()
    src = graph.edge_src.tolist()
    dst = graph.edge_dst.tolist()
    by_link: dict[int, list[tuple[int, int, int]]] = {}
    for interval in intervals:
        by_link.setdefault(core[src[interval[2]]], []).append(interval)
    tid = 0
    for link in sorted(by_link):
        link_intervals = by_link[link]
        sub_lane = _sub_lanes(link_intervals)
        for k in range(max(sub_lane) + 1):
            label = f"core {link} link" + (f" #{k + 1}" if k else "")
            events.append(_metadata(TRANSFERS_PID, tid + k, "thread_name", label))
            events.append(_metadata(TRANSFERS_PID, tid + k, "thread_sort_index", tid + k))
        for (sent, arrived, edge), k in zip(link_intervals, sub_lane, strict=True):
            a, b = src[edge], dst[edge]
            args = {
                "edge": edge,
                "from": names[a],
                "to": names[b],
                "to_core": core[b],
                "bytes": int(graph.edge_bytes[edge]),
            }
            name = f"{names[a]} -> {names[b]}"
            events.append(_complete(TRANSFERS_PID, tid + k, name, sent, arrived, args))
        tid += max(sub_lane) + 1
    return {"traceEvents": events, "displayTimeUnit": "ns"}
