"""Where each rendezvous goes in a core's program: found by simulating the program.

pimsim-nn's ``send`` and ``recv`` block both cores until the other side
arrives, and with a reorder buffer of one nothing else runs meanwhile. Placing
every rendezvous where the schedule's timeline has it (right after the
producer, say) couples the cores: a core that runs late makes each partner
wait, the partner's partners wait in turn, and on ResNet-18 such chains of
thousands of waits tripled the single pass. So the order is found by a
simulation of the program itself, a list scheduler of rendezvous:

* each core runs its tasks in the schedule's core order, cut into *units* of
  at most `QUANTUM_NS` (a matrix task into runs of consecutive products; any
  other task is one unit), so that a partner never waits for a long task;
* a core that becomes free first takes a transfer whose other side is also
  free and whose data is ready (the producer has finished), the one whose
  consumer the schedule starts first (ties: edge id); failing that, its next
  unit if the unit's inputs have arrived; failing both, it idles until a
  partner frees up;
* a receiver holds received payloads until their consumer has run; it takes
  a payload its next unit does not need only while those held payloads stay
  within `MEMORY_SHARE` of its local memory (a payload its next unit needs is
  always taken, so the simulation cannot stall on the budget). Without it,
  eager receives overflowed the 1 MiB local memory on ViT-B/16 and the 16-bit
  PIMCOMP-NN ResNet-18;
* a transfer keeps the sender busy for the request, the permission and the
  source read, the receiver until the payload is written (the phase prices of
  the target's `StepTiming`); queues at switches are not simulated.

Each core's program is its units and transfers in the order they started. A
transfer starts at the same simulated moment on both of its cores and a core
does one thing at a time, so all programs follow one global order of
transfers (by start time, then edge): blocking rendezvous cannot deadlock,
whatever the real timing (`raptor_cp.emit.rendezvous` checks the emitted
program anyway).

Two users, both with tasks cut into units: latency emission
(`raptor_cp.emit.latency_order`: every cross-core edge is a rendezvous) and
the pipeline realization (`raptor_cp.pipeline.realize`: only a stage's own
cross-core edges are rendezvous; edges between stages go through global memory
and are not simulated, so the stages run side by side as they do in steady
state). Kept whole, a long matrix task held its partners' rendezvous until it
ended: the `auto` latency schedule of ResNet-18 on arch-a, realized as one
pipeline stage, ran a sample every 5.49 ms with whole tasks and every 4.61 ms
with units (PIMCOMP-NN's ResNet-18 on its chip: 16.39 and 13.79 ms;
docs/benchmarks.md).

Time ``O((U + X) log(U + X) + X K)`` for ``U`` units, ``X`` cross-core edges
and ``K`` the most transfers pending on one core at a time.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import IntEnum

import numpy as np

from raptor_cp.errors import ScheduleViolationError
from raptor_cp.graph import ComputeGraph
from raptor_cp.schedule import Schedule
from raptor_cp.targets.base import MatrixWork, SchedulingTarget, StepTiming

QUANTUM_NS = 4_000
"""Longest unit a matrix task is cut into (a few transfers' worth of time)."""
MEMORY_SHARE = 0.5
"""Share of a core's local memory that payloads received ahead of need may hold."""


class Action(IntEnum):
    """What a core does in one entry of its simulated program."""

    TASK = 0
    SEND = 1
    RECV = 2


@dataclass(frozen=True)
class Entry:
    """One entry of a core's simulated program: a unit of ``task`` (products ``part``,
    ``(0, 0)`` for the whole task) or one side of edge ``edge``'s rendezvous with ``peer``,
    started at ``start_ns``."""

    action: Action
    start_ns: int
    task: int = -1
    part: tuple[int, int] = (0, 0)
    edge: int = -1
    peer: int = -1
    ns: int = 0
    """A unit's ns (`UnitCuts`); 0 for a rendezvous."""


class UnitCuts:
    """Every task's units on a core, for one graph and target, memoised.

    A task's units map its parts (products ``[first, stop)``, or ``(0, 0)`` for
    the whole task) to their ns, in product order: a matrix task longer than
    ``quantum`` ns is cut into runs of consecutive products, each at most about
    ``quantum`` ns and priced as the task's execution time up to its last
    product less that up to its first (so a task's units add up to its cost);
    any other task is one whole unit, priced ``graph.cost_on``; a task of an
    operator the target does not time (Softmax on PIM) costs 0. Cutting prices
    the target's execution time at every cut, so the pipeline selection keeps
    one `UnitCuts` for all its candidates (`warm` before forking evaluations
    fills it for every task once) instead of pricing ``U`` cuts per candidate.
    Tasks are keyed by core only when the graph prices cores differently.
    ``O(U)`` storage for ``U`` units.
    """

    def __init__(self, graph: ComputeGraph, target: SchedulingTarget, quantum: int) -> None:
        self.graph = graph
        self.target = target
        self.quantum = quantum
        timing = target.step_timing()
        self._untimed = frozenset() if timing is None else timing.untimed_operations
        self._by_core = graph.core_cost is not None
        self._memo: dict[int | tuple[int, int], dict[tuple[int, int], int]] = {}

    def warm(self) -> None:
        """Cut every task now (graphs that price all cores alike; otherwise cuts stay lazy)."""
        if not self._by_core and len(self._memo) < self.graph.num_tasks:
            for task in range(self.graph.num_tasks):
                self(task, 0)

    def __call__(self, task: int, core: int) -> dict[tuple[int, int], int]:
        """The units of ``task`` on ``core``: part -> ns, in product order."""
        key: int | tuple[int, int] = (task, core) if self._by_core else task
        found = self._memo.get(key)
        if found is None:
            found = self._memo[key] = self._cut(task, core)
        return found

    def _cut(self, task: int, core: int) -> dict[tuple[int, int], int]:
        graph = self.graph
        if graph.operation_type(task) in self._untimed:
            return {(0, 0): 0}
        whole = graph.cost_on(task, core)
        work = graph.work[task] if graph.work else None
        products = work.mvms if isinstance(work, MatrixWork) else 0
        if products < 2 or whole <= self.quantum:
            return {(0, 0): whole}
        assert isinstance(work, MatrixWork)
        size = max(1, self.quantum * products // whole)
        bounds = [*range(0, products, size), products]
        until = [self.target.execution_ns(replace(work, mvms=k)) for k in bounds]
        return {
            (a, b): until[i + 1] - until[i] for i, (a, b) in enumerate(itertools.pairwise(bounds))
        }


def simulate_rendezvous(
    graph: ComputeGraph,
    timing: StepTiming,
    schedule: Schedule,
    start_ns: np.ndarray,
    transfers: Sequence[int],
    cuts: UnitCuts,
) -> list[list[Entry]]:
    """Every core's simulated program (module docstring), entries in start order.

    ``transfers`` are the edges that are rendezvous (each joins two cores);
    every other edge is ignored. ``start_ns`` ranks the transfers a core could
    take (their consumers' estimated starts); ``cuts`` gives each task's units.
    Raises `ScheduleViolationError` when the core orders contradict the
    dependencies (the simulation cannot finish).
    """
    return _Simulation(graph, timing, schedule, start_ns, transfers, cuts).run()


class _Simulation:
    def __init__(
        self,
        graph: ComputeGraph,
        timing: StepTiming,
        schedule: Schedule,
        start_ns: np.ndarray,
        transfers: Sequence[int],
        cuts: UnitCuts,
    ) -> None:
        self.graph = graph
        self.budget = MEMORY_SHARE * timing.local_memory_bytes
        self.schedule = schedule
        core = schedule.core.tolist()
        self.core = core
        src, dst = graph.edge_src.tolist(), graph.edge_dst.tolist()
        nbytes = graph.edge_bytes.tolist()
        start = start_ns.tolist()
        self.src, self.dst, self.nbytes = src, dst, nbytes
        cores = schedule.num_cores
        self.units: list[list[tuple[int, tuple[int, int], int, bool]]] = [[] for _ in range(cores)]
        for c, order in enumerate(schedule.core_order):
            for t in order:
                parts = cuts(t, c)
                for k, (part, ns) in enumerate(parts.items()):
                    self.units[c].append((t, part, ns, k == len(parts) - 1))
        self.missing = [0] * graph.num_tasks
        self.outgoing: list[list[int]] = [[] for _ in range(graph.num_tasks)]
        self.key: dict[int, tuple[int, int]] = {}
        self.send_ns: dict[int, int] = {}
        self.recv_ns: dict[int, int] = {}
        for e in transfers:
            a, b = core[src[e]], core[dst[e]]
            self.missing[dst[e]] += 1
            self.outgoing[src[e]].append(e)
            self.key[e] = (start[dst[e]], e)
            handshake = timing.control_ns(a, b) + timing.control_ns(b, a)
            send = handshake + timing.local_read_ns(nbytes[e])
            self.send_ns[e] = send
            self.recv_ns[e] = (
                send + timing.data_ns(a, b, nbytes[e]) + timing.local_write_ns(nbytes[e])
            )
        self.pending: list[list[tuple[int, int]]] = [[] for _ in range(cores)]
        self.next_unit = [0] * cores
        self.busy = [False] * cores
        self.entries: list[list[Entry]] = [[] for _ in range(cores)]
        self.events: list[tuple[int, int, int, int]] = []  # (time, sequence, core, finished task)
        self.sequence = 0
        self.transfers_left = len(self.key)
        self.held = [0] * cores
        """Bytes each core has received for consumers that have not run yet."""
        self.received = [0] * graph.num_tasks

    def push(self, time: int, core: int, finished: int = -1) -> None:
        self.sequence += 1
        heapq.heappush(self.events, (time, self.sequence, core, finished))

    def run(self) -> list[list[Entry]]:
        for c in range(self.schedule.num_cores):
            if self.units[c]:
                self.push(0, c)
        while self.events:
            now, _, c, finished = heapq.heappop(self.events)
            self.busy[c] = False
            if finished >= 0:
                self.held[c] -= self.received[finished]
                for e in self.outgoing[finished]:
                    for end in (c, self.core[self.dst[e]]):
                        bisect.insort(self.pending[end], self.key[e])
            self.act(c, now)
        left = [c for c in range(self.schedule.num_cores) if self.next_unit[c] < len(self.units[c])]
        if left or self.transfers_left:
            raise ScheduleViolationError(
                f"{self.graph.name}: the per-core orders contradict the dependencies "
                f"(core {left[0] if left else '?'} cannot go on)"
            )
        return self.entries

    def act(self, c: int, now: int) -> None:
        """Start what free core ``c`` can do at ``now`` (module docstring)."""
        for position, (_, e) in enumerate(self.pending[c]):
            a, b = self.core[self.src[e]], self.core[self.dst[e]]
            partner = b if a == c else a
            if self.busy[partner] or not self.may_receive(e, b):
                continue
            self.start_transfer(e, a, b, now)
            del self.pending[c][position]
            self.pending[partner].remove(self.key[e])
            return
        i = self.next_unit[c]
        if i == len(self.units[c]):
            return
        task, part, ns, last = self.units[c][i]
        if self.missing[task]:
            return
        self.next_unit[c] = i + 1
        self.busy[c] = True
        self.entries[c].append(Entry(Action.TASK, now, task=task, part=part, ns=ns))
        self.push(now + ns, c, task if last else -1)

    def may_receive(self, e: int, b: int) -> bool:
        """Whether core ``b`` may take edge ``e``'s payload now (the memory budget)."""
        if self.held[b] + self.nbytes[e] <= self.budget:
            return True
        i = self.next_unit[b]
        return i < len(self.units[b]) and self.units[b][i][0] == self.dst[e]

    def start_transfer(self, e: int, a: int, b: int, now: int) -> None:
        self.entries[a].append(Entry(Action.SEND, now, edge=e, peer=b))
        self.entries[b].append(Entry(Action.RECV, now, edge=e, peer=a))
        self.busy[a] = self.busy[b] = True
        self.missing[self.dst[e]] -= 1
        self.received[self.dst[e]] += self.nbytes[e]
        self.held[b] += self.nbytes[e]
        self.transfers_left -= 1
        self.push(now + self.send_ns[e], a)
        self.push(now + self.recv_ns[e], b)
