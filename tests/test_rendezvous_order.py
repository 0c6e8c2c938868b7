"""The rendezvous simulation (`simulate_rendezvous`) against its documented rules,
restated plainly in Python, on random schedules (a cross-check of the compiled loop)."""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np
import pytest

from raptor_cp.errors import ScheduleViolationError
from raptor_cp.graph import ComputeGraph
from raptor_cp.periodic.rendezvous_order import MEMORY_SHARE, Action, simulate_rendezvous
from raptor_cp.schedule import Schedule


@dataclass(frozen=True)
class Timing:
    """Round numbers and a small local memory, so that the receive budget binds."""

    local_memory_bytes: int

    def control_ns(self, src: int, dst: int) -> int:
        return 2 + abs(src - dst)

    def data_ns(self, src: int, dst: int, nbytes: int) -> int:
        return nbytes

    def local_read_ns(self, nbytes: int) -> int:
        return nbytes // 2

    def local_write_ns(self, nbytes: int) -> int:
        return nbytes // 2


def reference_programs(
    graph: ComputeGraph,
    timing: Timing,
    schedule: Schedule,
    start_ns: np.ndarray,
    transfers: list[int],
    cuts: dict[int, dict[tuple[int, int], int]],
) -> list[list[tuple[int, int, int, tuple[int, int], int, int]]]:
    """Every core's entries ``(action, start, task, part, edge, peer)`` by the module
    docstring's rules: a core that becomes free takes the first pending transfer (by
    its consumer's estimated start, then edge) whose partner is free and whose receiver
    may take it, else its next unit if the unit's task has its inputs, else it idles."""
    core = schedule.core.tolist()
    src, dst, nbytes = graph.edge_src.tolist(), graph.edge_dst.tolist(), graph.edge_bytes.tolist()
    budget = MEMORY_SHARE * timing.local_memory_bytes
    units = [
        [
            (t, part, ns, k == len(cuts[t]) - 1)
            for t in order
            for k, (part, ns) in enumerate(cuts[t].items())
        ]
        for order in schedule.core_order
    ]
    missing = [0] * graph.num_tasks
    for e in transfers:
        missing[dst[e]] += 1
    pending: list[set[int]] = [set() for _ in units]
    position, busy, held = [0] * len(units), [False] * len(units), [0] * len(units)
    received = [0] * graph.num_tasks
    programs: list[list[tuple[int, int, int, tuple[int, int], int, int]]] = [[] for _ in units]
    events: list[tuple[int, int, int, int]] = []
    sequence = 0

    def push(time: int, c: int, finished: int = -1) -> None:
        nonlocal sequence
        sequence += 1
        heapq.heappush(events, (time, sequence, c, finished))

    def may_receive(e: int) -> bool:
        b = core[dst[e]]
        next_task = units[b][position[b]][0] if position[b] < len(units[b]) else -1
        return held[b] + nbytes[e] <= budget or next_task == dst[e]

    for c in range(len(units)):
        if units[c]:
            push(0, c)
    while events:
        now, _, c, finished = heapq.heappop(events)
        busy[c] = False
        if finished >= 0:
            held[c] -= received[finished]
            for e in transfers:
                if src[e] == finished:
                    pending[c].add(e)
                    pending[core[dst[e]]].add(e)
        for e in sorted(pending[c], key=lambda e: (int(start_ns[dst[e]]), e)):
            a, b = core[src[e]], core[dst[e]]
            if busy[b if a == c else a] or not may_receive(e):
                continue
            programs[a].append((Action.SEND, now, -1, (0, 0), e, b))
            programs[b].append((Action.RECV, now, -1, (0, 0), e, a))
            busy[a] = busy[b] = True
            missing[dst[e]] -= 1
            received[dst[e]] += nbytes[e]
            held[b] += nbytes[e]
            pending[a].discard(e)
            pending[b].discard(e)
            push(now + 2 * timing.control_ns(a, b) + timing.local_read_ns(nbytes[e]), a)
            push(
                now + 2 * timing.control_ns(a, b) + timing.local_read_ns(nbytes[e])
                + timing.data_ns(a, b, nbytes[e]) + timing.local_write_ns(nbytes[e]),
                b,
            )  # fmt: skip
            break
        else:
            if position[c] < len(units[c]) and not missing[units[c][position[c]][0]]:
                task, part, ns, last = units[c][position[c]]
                position[c] += 1
                busy[c] = True
                programs[c].append((Action.TASK, now, task, part, -1, -1))
                push(now + ns, c, task if last else -1)
    return programs


def random_schedule(seed: int) -> tuple[ComputeGraph, Schedule, np.ndarray, dict]:
    """A random DAG (edges from lower to higher task ids) on 2-5 cores, each core's
    order ascending, some tasks cut into several units."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(6, 30))
    pairs = sorted({(int(a), int(b)) for a, b in rng.integers(0, n, size=(2 * n, 2)) if a < b})
    graph = ComputeGraph(
        names=tuple(f"t{i}" for i in range(n)),
        cost=rng.integers(1, 40, size=n),
        edge_src=np.array([a for a, _ in pairs], dtype=np.int64),
        edge_dst=np.array([b for _, b in pairs], dtype=np.int64),
        edge_bytes=rng.integers(1, 64, size=len(pairs)),
    )
    cores = int(rng.integers(2, 6))
    placed = rng.integers(0, cores, size=n)
    order = tuple(tuple(int(t) for t in np.flatnonzero(placed == c)) for c in range(cores))
    start = rng.integers(0, 100, size=n)
    schedule = Schedule(core_order=order, start_ns=start, scheduler="test")
    cuts = {
        t: {(k, k + 1): int(rng.integers(1, 20)) for k in range(int(rng.integers(1, 4)))}
        for t in range(n)
    }
    return graph, schedule, start, cuts


@pytest.mark.parametrize("seed", range(30))
def test_simulation_follows_the_documented_rules_on_random_schedules(seed: int) -> None:
    graph, schedule, start, cuts = random_schedule(seed)
    core = schedule.core
    transfers = np.flatnonzero(core[graph.edge_src] != core[graph.edge_dst]).tolist()
    timing = Timing(local_memory_bytes=int(np.random.default_rng(seed).integers(40, 400)))
    found = simulate_rendezvous(
        graph,
        timing,
        schedule,
        start,
        transfers,
        lambda t, c: cuts[t],  # type: ignore[arg-type]
    ).entries()
    expected = reference_programs(graph, timing, schedule, start, transfers, cuts)
    assert [
        [(x.action, x.start_ns, x.task, x.part, x.edge, x.peer) for x in row] for row in found
    ] == expected


def test_core_orders_against_the_dependencies_are_a_schedule_violation() -> None:
    # B (core 1) feeds A (core 0) but core 0 runs A first and core 1 needs A's output.
    graph = ComputeGraph(
        names=("A", "B", "C"),
        cost=np.array([5, 5, 5]),
        edge_src=np.array([1, 0]),
        edge_dst=np.array([0, 2]),
        edge_bytes=np.array([4, 4]),
    )
    schedule = Schedule(core_order=((0,), (2, 1)), start_ns=np.array([0, 0, 0]), scheduler="t")
    with pytest.raises(ScheduleViolationError, match="cannot go on"):
        simulate_rendezvous(
            graph, Timing(1024), schedule, schedule.start_ns, [0, 1],
            lambda t, c: {(0, 0): 5},  # type: ignore[arg-type]
        )  # fmt: skip
