"""``trace.json``: a schedule in the Chrome trace-event format (opens in Perfetto).

Process 0 ("cores") has one thread per used core; every task is a complete
event (``"ph": "X"``) from its evaluated start to its finish. Process 1
("transfers") has one thread per core that sends data (``core 12 link``): the
transfers of cross-core edges that take time, each from its producer's finish
to its arrival at the consumer's core (``target.transfer_ns``). Transfers
leaving one core may overlap, and trace viewers need the events of one thread
to nest, so overlapping transfers of one link are merged into one event
(``"5 transfers"``, with their count, total bytes and first and last edge); a
transfer that overlaps no other keeps its own event (``"a -> b"``, with edge,
endpoints, destination core and bytes). The trace therefore has at most two
tracks per core, whatever the number of edges: an earlier layout with one
sub-lane per overlapping transfer gave ViT-B/16 (one layer) 186,580 transfer
tracks and 132 MB, more than Perfetto opens comfortably (docs/benchmarks.md
has the sizes). Merging sweeps each link's transfers in (start, end, edge id)
order: ``O(E log E)``, deterministic.

Timestamps are microseconds, as the format requires, written with nanosecond
precision (``ns / 1000`` prints exactly with at most three decimals).

References
----------
Trace Event Format, https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU
"""

from __future__ import annotations

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


def _merged(intervals: list[tuple[int, int, int]]) -> list[list[tuple[int, int, int]]]:
    """Group a link's intervals (sorted) into runs that overlap; touching ones stay apart."""
    groups: list[list[tuple[int, int, int]]] = []
    end = None
    for interval in intervals:
        if end is not None and interval[0] < end:
            groups[-1].append(interval)
            end = max(end, interval[1])
        else:
            groups.append([interval])
            end = interval[1]
    return groups


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
    for tid, link in enumerate(sorted(by_link)):
        events.append(_metadata(TRANSFERS_PID, tid, "thread_name", f"core {link} link"))
        events.append(_metadata(TRANSFERS_PID, tid, "thread_sort_index", tid))
        for group in _merged(by_link[link]):
            sent = group[0][0]
            arrived = max(end for _, end, _ in group)
            first, last = group[0][2], group[-1][2]
            if len(group) == 1:
                name = f"{names[src[first]]} -> {names[dst[first]]}"
                args: dict[str, object] = {
                    "edge": first,
                    "from": names[src[first]],
                    "to": names[dst[first]],
                    "to_core": core[dst[first]],
                    "bytes": int(graph.edge_bytes[first]),
                }
            else:
                name = f"{len(group)} transfers"
                args = {
                    "transfers": len(group),
                    "bytes": int(graph.edge_bytes[[e for _, _, e in group]].sum()),
                    "first": f"{names[src[first]]} -> {names[dst[first]]}",
                    "last": f"{names[src[last]]} -> {names[dst[last]]}",
                }
            events.append(_complete(TRANSFERS_PID, tid, name, sent, arrived, args))
    return {"traceEvents": events, "displayTimeUnit": "ns"}
