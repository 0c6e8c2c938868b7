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

The event loop is C (`raptor_cp.periodic._rendezvous_core`, built by ``pip
install``); this module cuts the units, prices the transfers, and reads the
programs back (`SimulatedPrograms`). In Python the loop took 0.5-0.9 s of a
ResNet-50 candidate's realization (docs/benchmarks.md, "Sixth pass").
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import IntEnum

import numpy as np

from raptor_cp.errors import ScheduleViolationError
from raptor_cp.graph import ComputeGraph
from raptor_cp.periodic import _rendezvous_core
from raptor_cp.periodic.arrays import int64_array
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


@dataclass(frozen=True)
class SimulatedPrograms:
    """Every core's simulated program (module docstring), column-wise.

    Core ``c``'s entries, in start order, are rows ``first[c] : first[c] +
    count[c]`` of ``action`` (`Action`), ``start_ns`` and ``ref``: a unit's
    index in ``units`` or a transfer's index in ``edges``.
    """

    units: list[tuple[int, tuple[int, int], int]]
    """Every core's units in its order, core after core: (task, part, ns)."""
    edges: np.ndarray
    """The rendezvous edges, as given."""
    src_core: np.ndarray
    """Per rendezvous edge, its sender's core."""
    dst_core: np.ndarray
    """Per rendezvous edge, its receiver's core."""
    first: np.ndarray
    """Per core, the row of its first entry."""
    count: np.ndarray
    """Per core, its number of entries (its units and its ends of transfers)."""
    action: np.ndarray
    start_ns: np.ndarray
    ref: np.ndarray

    def unit_order(self, core: int) -> tuple[list[tuple[int, tuple[int, int], int]], list[int]]:
        """Core ``core``'s units in program order and their simulated starts."""
        rows = slice(int(self.first[core]), int(self.first[core] + self.count[core]))
        task = self.action[rows] == Action.TASK
        units = self.units
        return [units[i] for i in self.ref[rows][task].tolist()], self.start_ns[rows][task].tolist()

    def send_times(self) -> dict[int, int]:
        """Per rendezvous edge, when its transfer starts."""
        sends = self.action == Action.SEND
        return dict(
            zip(self.edges[self.ref[sends]].tolist(), self.start_ns[sends].tolist(), strict=True)
        )

    def entries(self) -> list[list[Entry]]:
        """Every core's entries as `Entry` objects."""
        edge, src_core, dst_core = (a.tolist() for a in (self.edges, self.src_core, self.dst_core))
        found: list[list[Entry]] = []
        for first, count in zip(self.first.tolist(), self.count.tolist(), strict=True):
            rows = slice(first, first + count)
            row: list[Entry] = []
            for action, at, i in zip(
                self.action[rows].tolist(), self.start_ns[rows].tolist(),
                self.ref[rows].tolist(), strict=True,
            ):  # fmt: skip
                if action == Action.TASK:
                    task, part, ns = self.units[i]
                    row.append(Entry(Action.TASK, at, task=task, part=part, ns=ns))
                elif action == Action.SEND:
                    row.append(Entry(Action.SEND, at, edge=edge[i], peer=dst_core[i]))
                else:
                    row.append(Entry(Action.RECV, at, edge=edge[i], peer=src_core[i]))
            found.append(row)
        return found


def transfer_busy_ns(timing: StepTiming, src: int, dst: int, nbytes: int) -> tuple[int, int]:
    """How long a transfer keeps its sender and its receiver busy: the request and the
    permission flits plus the source read, and on top of that, for the receiver, the
    payload and its write (the target's phase prices)."""
    send = timing.control_ns(src, dst) + timing.control_ns(dst, src) + timing.local_read_ns(nbytes)
    return send, send + timing.data_ns(src, dst, nbytes) + timing.local_write_ns(nbytes)


def simulate_rendezvous(
    graph: ComputeGraph,
    timing: StepTiming,
    schedule: Schedule,
    start_ns: np.ndarray,
    transfers: Sequence[int],
    cuts: UnitCuts,
) -> SimulatedPrograms:
    """Every core's simulated program (module docstring), entries in start order.

    ``transfers`` are the edges that are rendezvous (each joins two cores);
    every other edge is ignored. ``start_ns`` ranks the transfers a core could
    take (their consumers' estimated starts); ``cuts`` gives each task's units.
    Raises `ScheduleViolationError` when the core orders contradict the
    dependencies (the simulation cannot finish).
    """
    return _Simulation(graph, timing, schedule, start_ns, transfers, cuts).run()


class _Simulation:
    """One run: the inputs as the flat int64 arrays the compiled loop
    (`raptor_cp.periodic._rendezvous_core`) reads, and its entries read back."""

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
        cores = schedule.num_cores
        self.units: list[tuple[int, tuple[int, int], int]] = []
        """Every core's units in its order, core after core: (task, part, ns)."""
        last: list[bool] = []
        unit_start = [0]
        for c, order in enumerate(schedule.core_order):
            for t in order:
                parts = cuts(t, c)
                self.units.extend((t, part, ns) for part, ns in parts.items())
                last.extend([False] * (len(parts) - 1) + [True])
            unit_start.append(len(self.units))
        self.unit_start = int64_array(unit_start)
        self.unit_task = int64_array([u[0] for u in self.units])
        self.unit_ns = int64_array([u[2] for u in self.units])
        self.unit_last = int64_array(last)
        self.edge = int64_array(transfers)
        src, dst = graph.edge_src[self.edge], graph.edge_dst[self.edge]
        core = schedule.core
        self.src_core, self.dst_core, self.dst_task = (
            int64_array(core[src]),
            int64_array(core[dst]),
            int64_array(dst),
        )
        self.nbytes = int64_array(graph.edge_bytes[self.edge])
        send_ns, recv_ns = [], []
        phases: dict[tuple[int, int, int], tuple[int, int]] = {}
        """(source core, destination core, bytes) -> (send, receive) ns: lanes repeat them."""
        for key in zip(
            self.src_core.tolist(), self.dst_core.tolist(), self.nbytes.tolist(), strict=True
        ):
            found = phases.get(key)
            if found is None:
                found = phases[key] = transfer_busy_ns(timing, *key)
            send_ns.append(found[0])
            recv_ns.append(found[1])
        self.send_ns, self.recv_ns = int64_array(send_ns), int64_array(recv_ns)
        self.key = int64_array(np.asarray(start_ns)[dst])
        n = graph.num_tasks
        self.missing = int64_array(np.bincount(dst, minlength=n))
        by_source = np.argsort(src, kind="stable")
        self.out_transfer = int64_array(by_source)
        self.out_start = int64_array(np.searchsorted(src[by_source], np.arange(n + 1)))
        touching = np.bincount(self.src_core, minlength=cores) + np.bincount(
            self.dst_core, minlength=cores
        )
        size = np.diff(self.unit_start) + touching
        self.entry_start = int64_array(np.concatenate([[0], np.cumsum(size)]))

    def run(self) -> SimulatedPrograms:
        total = int(self.entry_start[-1])
        kind, time, ref = (np.zeros(total, dtype=np.int64) for _ in range(3))
        count = np.zeros(self.schedule.num_cores, dtype=np.int64)
        left, transfers_left = _rendezvous_core.run(
            self.unit_start,
            self.unit_task,
            self.unit_ns,
            self.unit_last,
            self.missing,
            self.out_start,
            self.out_transfer,
            self.src_core,
            self.dst_core,
            self.dst_task,
            self.nbytes,
            self.send_ns,
            self.recv_ns,
            self.key,
            self.edge,
            self.entry_start,
            kind,
            time,
            ref,
            count,
            float(self.budget),
        )
        if left >= 0 or transfers_left:
            raise ScheduleViolationError(
                f"{self.graph.name}: the per-core orders contradict the dependencies "
                f"(core {left if left >= 0 else '?'} cannot go on)"
            )
        return SimulatedPrograms(
            self.units, self.edge, self.src_core, self.dst_core, self.entry_start[:-1], count,
            kind, time, ref,
        )  # fmt: skip
