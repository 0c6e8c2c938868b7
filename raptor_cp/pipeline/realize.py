"""Realize a pipeline schedule as per-core `Step` programs and its periodic event graph.

`realize_pipeline` turns a placed pipeline (`PipelinePlan`) into one in-order
program per physical core, one generation (one inference) each, which
`raptor_cp.periodic.events.build_events` turns into the periodic event graph
of the seeds' "Periodic dependency diagnostics" (scheduling.md). What is
modelled:

* **Compute.** Each task runs ``graph.cost_on(task, core)`` ns on its core (the
  physical cost), in the schedule's per-core order. Where the target times the
  phases of a transfer, a matrix task longer than `QUANTUM_NS` is cut into
  units of consecutive products, as latency emission cuts it, so that a
  rendezvous can sit between two units instead of waiting for the whole task
  (`raptor_cp.periodic.rendezvous_order`); the emitted program runs the same
  units. Consecutive units with no communication between are merged into one
  `Compute` step (lanes and loop iterations are never expanded). Tasks of an
  operator type the target's queue model does not time
  (`StepTiming.untimed_operations`: Softmax on PIM, whose ``vsoftmax`` the
  seeds say pimsim-nn omits) get no timed work; their transfers keep their
  costs (scheduling.md, "Default throughput selection"). A run of such tasks
  alone between two transfers is a zero-ns `Compute` step: it times nothing,
  but the emitted program takes its tasks from the steps and must still run
  them.
* **Same-stage transfers.** An edge between two cores of one stage is a direct
  `Send` on the producer after its compute and a `Recv` on the consumer before
  its compute (same-core edges cost nothing). Where the target times the
  phases of a transfer (`StepTiming`), the rendezvous are placed by simulating
  the programs (`raptor_cp.periodic.rendezvous_order`: a free core takes a
  transfer whose partner is free and whose data is ready, else its next task;
  the stages run side by side, edges between stages are not simulated);
  otherwise each transfer sits at its producer's estimated finish (tasks
  whole). Both give every unit and transfer a time, and one topological order
  of dependencies, core orders and transfers (Kahn's algorithm, earliest
  stage, then time; ties: transfers first, then task id and part) ranks them;
  a core's program is its units and transfers sorted by that rank, a task's
  loads before its first unit and its stores after its last. Both ends of a
  transfer share its rank, so the blocked transfer of smallest rank always has
  its partner posted: no cycle of waiting transfers. Placing each rendezvous
  at the producer's list-schedule rank instead made cores wait on partners
  busy with earlier work: on ResNet-18
  (arch-a) the latency schedule realized as one stage took 18.3 ms per pass
  in the queue engine, 5.5 ms with the simulated order (docs/benchmarks.md).
* **Cross-stage transfers** go through global memory (`boundary_demand`): one
  `Store` of ``publication_bytes`` per shared publication on its producer's
  core after its compute, a separate `Store` of the edge's bytes per
  scalar-projection read, and one `Load` of the edge's bytes per consumer
  transfer on the consumer's core before its compute (repeated loads of one
  publication on one reader core stay separate: no load folding).
* **Synchronization** (scheduling.md, "Periodic dependency diagnostics": READY/FREE
  registers come from an allocation; the downstream release tree and restart
  permissions keep their core identities and order). Per generation:

  - *READY*: after each store, the producer SIGNALs its reader cores (ascending)
    on their READY register of the producer's stage; a reader WAITs once, for
    every READY token of that stage it receives, before its first load from it
    (one WAIT takes all of a register's tokens, so the count is exact whatever
    order they arrive in);
  - *release tree*: for every pair (reader stage ``t``, producer stage ``s``),
    the cores of ``t`` that load from ``s``, ascending, form a binary heap-ordered
    tree. At its entry each such core WAITs for its children's release tokens,
    then SIGNALs its parent; the entry of generation ``k`` follows the core's
    completion of ``k - 1`` (the distance-1 edge), so the tokens release the
    preceding generation's publications;
  - *restart permission*: the tree's root then SIGNALs every producer core of
    ``s`` that ``t`` loads from (ascending) on its FREE register for ``t``; a
    producer WAITs for that permission at the end of its generation, after its
    last step.

  Publications are *double-buffered*: generation ``k`` stores into copy
  ``k mod 2``. The permission a producer takes at the end of generation ``k``
  says that every reader has entered ``k``, i.e. finished ``k - 1``, whose copy
  the producer overwrites next, in ``k + 1``. So a producer may run a whole
  generation ahead of its slowest reader, where a single buffer would hold its
  store of ``k + 1`` until every reader had finished ``k`` (the seeds'
  reader-entry release, whose permission the producer took right before that
  store): on ResNet-50 (arch-a) three stages split at ``blocks.13`` ran at
  9.17 ms per sample single-buffered and 5.95 ms double-buffered, so
  selection kept two stages before (docs/benchmarks.md, "Tenth pass"). The
  emitted program runs two generations per round, one per copy, each with its
  own READY, release and FREE registers (`raptor_cp.emit.order.unrolled`,
  which shows why one set would mix two generations' tokens); the timing of
  the two is the same, so the event graph holds one.

  Registers are allocated per core in program order from the target's event
  register file (`StepTiming.event_registers`), one per (role, stage) key and
  copy: at most ``6 (S - 1)`` for ``S`` stages. A core needing more registers
  than the file holds raises `TimingUnavailableError`. The realization places
  no stage barrier, so no dissemination barrier appears in the programs.
* **Payload widths.** Byte-addressed PIM communication lowering rejects a
  transfer or publication of sub-byte elements (`StepTiming.byte_addressed`;
  scheduling-implementation.md, "Transfer accounting and transpose costs"):
  `pipeline_events` raises `TimingUnavailableError` naming the task.

Omitted effects are listed in `REALIZATION_EFFECTS` (the report adds them to
the model's own list). Time ``O((U + E) log (U + E) + E K)`` for ``U`` compute
units (tasks, or their cuts: a task of ``w`` ns has at most about
``w / QUANTUM_NS + 1``), ``E`` edges and ``K`` the most transfers pending on one
core in the simulation; the programs have ``O(T + E)`` steps for ``T`` tasks
(units with nothing between them merge into one compute run).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from raptor_cp.errors import ScheduleViolationError, TimingUnavailableError
from raptor_cp.graph import SCALAR_PROJECTION, ComputeGraph
from raptor_cp.periodic import _ranked_order
from raptor_cp.periodic.arrays import int64_array
from raptor_cp.periodic.events import EventGraph, build_events
from raptor_cp.periodic.rendezvous_order import (
    QUANTUM_NS,
    UnitCuts,
    simulate_rendezvous,
)
from raptor_cp.periodic.steps import Compute, Load, Recv, Send, Signal, Step, Store, Wait
from raptor_cp.pipeline.boundary import publication_bytes
from raptor_cp.schedule import Schedule
from raptor_cp.targets.base import SchedulingTarget

REALIZATION_EFFECTS = (
    "function inputs, constants and final output collection are baseline requests: their "
    "controller service is in the memory term, their positions and input arrival are not "
    "modelled (the compile's program_interval_ns places them as the emitted program does)",
    "no load folding or strided transfer splitting; hand-made graphs estimate publication "
    "sizes from consumer reads",
    "publications are double-buffered: a producer runs at most one generation ahead of "
    "its slowest reader; a release tree per (reader stage, producer stage) couples the "
    "entries of the reader cores",
    "rendezvous are placed by a simulation that prices transfers alone (no switch queues) "
    "and keeps payloads received ahead of need within half a core's local memory",
    "receives into assembly storage still pay the endpoint read and write in the event graph "
    "(the schedule's estimate omits them as duplicates of the assembly copy)",
    "compute runs are serial at the scheduler's cost (overlapping units can make them shorter)",
)
"""Effects of the realization that the event graph does not capture."""

_ENTRY, _WAIT_READY, _LOAD, _COMPUTE, _STORE, _READY, _XFER = range(7)
"""Ranks of step kinds sharing one task key (program order within a key)."""
_END = 1 << 62
"""The sort key of a generation's last steps, the restart permissions' WAITs (above every
rank)."""
COPIES = 2
"""Copies of every publication (double buffering), hence event registers per key."""
READY, RELEASE, FREE = "ready", "release", "free"
"""Roles of an event register: READY tokens of a producer stage at a reader, release
tokens of a tree's children, the restart permission of a downstream stage at a producer."""


@dataclass(frozen=True)
class PipelineRealization:
    """Per-core programs of one pipeline generation.

    Attributes
    ----------
    cores:
        ``cores[c]``: core ``c``'s steps in program order (empty: idle core).
    tasks:
        ``tasks[c][i]``: the task ids step ``i`` of core ``c`` realizes (a compute
        run's: the task of each of its units, a transfer's producer and consumer,
        a store's producer, a wait's or signal's first task; release-tree steps
        at entry: empty).
    parts:
        ``parts[c][i]``: a compute run's unit parts, one per entry of
        ``tasks[c][i]`` (products ``[first, stop)``, ``(0, 0)`` for a whole
        task); empty for other steps.
    """

    cores: list[list[Step]]
    tasks: list[list[tuple[int, ...]]]
    parts: list[list[tuple[tuple[int, int], ...]]]

    def counts(self) -> dict[str, int]:
        """Steps per kind over all cores (sorted kind names)."""
        tally = Counter(type(s).__name__.lower() for steps in self.cores for s in steps)
        return dict(sorted(tally.items()))


@dataclass(frozen=True)
class _Register:
    """An event register before allocation: its role and the stage it concerns."""

    role: str
    stage: int


@dataclass(frozen=True)
class _PendingWait:
    """A WAIT on a register not allocated yet."""

    register: _Register
    count: int


@dataclass(frozen=True)
class _PendingSignal:
    """A SIGNAL to ``core``'s register not allocated yet."""

    core: int
    register: _Register


Item = tuple[tuple[int, ...], Step | _PendingWait | _PendingSignal, tuple[int, ...]]
"""A program entry other than compute before sorting: (sort key, step, tasks it realizes)."""


Unit = tuple[int, tuple[int, int], int]
"""A compute unit of a core's program: (task, products ``[first, stop)`` -- ``(0, 0)`` for
the whole task -- and its ns)."""

WHOLE = (0, 0)
"""The part of a unit that is its whole task."""


@dataclass(frozen=True)
class ProgramOrder:
    """What orders the programs: every core's compute units in program order with their
    starts, and the start of every same-stage transfer (edge id -> start). From the
    rendezvous simulation (`target_realization`) or the list schedule
    (`list_schedule_order`)."""

    units: list[list[Unit]]
    unit_start: list[list[int]]
    transfer_time: Mapping[int, int]


def list_schedule_order(
    graph: ComputeGraph, schedule: Schedule, transfers: Sequence[int], untimed: frozenset[str]
) -> ProgramOrder:
    """Whole tasks at their estimated starts, each transfer at its producer's estimated
    finish; a task of an ``untimed`` operator type gets no timed work."""
    start = schedule.start_ns.tolist()
    core = schedule.core.tolist()
    src = graph.edge_src.tolist()
    units = [
        [
            (t, WHOLE, 0 if graph.operation_type(t) in untimed else graph.cost_on(t, c))
            for t in order
        ]
        for c, order in enumerate(schedule.core_order)
    ]
    return ProgramOrder(
        units,
        [[start[t] for t in order] for order in schedule.core_order],
        {e: start[src[e]] + graph.cost_on(src[e], core[src[e]]) for e in transfers},
    )


@dataclass(frozen=True)
class ProgramRanks:
    """Positions in one topological order of units and transfers (`program_ranks`)."""

    unit: list[int]
    """Per unit, in `ProgramOrder.units` order (core by core)."""
    first: list[int]
    """Per task: its first unit's rank (where its loads go)."""
    last: list[int]
    """Per task: its last unit's rank (where its stores go)."""
    transfer: dict[int, int]
    """Per same-stage transfer (edge id)."""


def program_ranks(
    graph: ComputeGraph, task_stage: np.ndarray, transfers: Sequence[int], order: ProgramOrder
) -> ProgramRanks:
    """Positions of every compute unit and of every same-stage transfer in one topological
    order.

    The order covers the dependencies (a task's last unit before its consumers'
    first), every core's order of units, and each transfer between its
    producer and its consumer. Kahn's algorithm takes the ready node of the
    earliest stage, then the earliest start of ``order``; ties: transfers
    before units, then task id and part. Raises `ScheduleViolationError` when
    the core orders contradict the dependencies. The nodes, edges and keys are
    numpy arrays, the keys ranked into one priority by a lexicographic sort;
    the loop is compiled (`raptor_cp.periodic._ranked_order`).
    ``O((U + E) log (U + E))`` for ``U`` units.
    """
    n = graph.num_tasks
    counts = [len(units) for units in order.units]
    count = sum(counts)
    task = np.fromiter((u[0] for units in order.units for u in units), np.int64, count)
    part = np.fromiter((u[1][0] for units in order.units for u in units), np.int64, count)
    at = np.fromiter((a for starts in order.unit_start for a in starts), np.int64, count)
    first, last = np.full(n, -1, dtype=np.int64), np.full(n, -1, dtype=np.int64)
    seen, position = np.unique(task, return_index=True)
    first[seen] = position
    seen, position = np.unique(task[::-1], return_index=True)
    last[seen] = count - 1 - position
    missing = np.flatnonzero(first < 0)
    if missing.size:
        raise ScheduleViolationError(f"{graph.name}: task {missing[0]} is in no core's order")
    via = np.asarray(transfers, dtype=np.int64)
    plain = np.ones(graph.num_edges, dtype=bool)
    plain[via] = False
    src, dst = graph.edge_src, graph.edge_dst
    unit_core = np.repeat(np.arange(len(counts)), counts)
    chain = np.flatnonzero(unit_core[1:] == unit_core[:-1])
    hop = count + np.arange(via.size)
    tails = np.concatenate([chain, last[src[plain]], last[src[via]], hop])
    heads = np.concatenate([chain + 1, first[dst[plain]], hop, first[dst[via]]])
    successor = heads[np.argsort(tails, kind="stable")]
    successor_start = np.concatenate(
        [[0], np.cumsum(np.bincount(tails, minlength=count + via.size))]
    )
    stage = np.asarray(task_stage, dtype=np.int64)
    at_key = np.concatenate(
        [at, np.fromiter((order.transfer_time[e] for e in transfers), np.int64, via.size)]
    )
    node = np.arange(count + via.size)
    priority = np.empty_like(node)
    priority[
        np.lexsort(
            (
                node,
                np.concatenate([part, np.zeros(via.size, dtype=np.int64)]),
                np.concatenate([task, n + np.arange(via.size)]),
                np.concatenate([np.ones(count, np.int64), np.zeros(via.size, np.int64)]),
                at_key,
                np.concatenate([stage[task], stage[src[via]]]),
            )
        )
    ] = node
    rank = np.empty_like(node)
    ranked = _ranked_order.run(priority, int64_array(successor_start), int64_array(successor), rank)
    if ranked != node.size:
        stuck = int(task[rank[:count] < 0].min())
        raise ScheduleViolationError(
            f"{graph.name}: the per-core orders contradict the dependencies (task {stuck} "
            "follows a cycle of dependencies and core orders)"
        )
    return ProgramRanks(
        rank[:count].tolist(),
        rank[first].tolist(),
        rank[last].tolist(),
        dict(zip(via.tolist(), rank[count:].tolist(), strict=True)),
    )


def same_stage_transfers(
    graph: ComputeGraph, schedule: Schedule, task_stage: np.ndarray
) -> list[int]:
    """Edges between two cores of one stage (the direct rendezvous), ascending."""
    src, dst, core = graph.edge_src, graph.edge_dst, schedule.core
    crossing = (task_stage[src] == task_stage[dst]) & (core[src] != core[dst])
    return np.flatnonzero(crossing).tolist()


def realize_pipeline(
    graph: ComputeGraph,
    schedule: Schedule,
    task_stage: np.ndarray,
    untimed: frozenset[str] = frozenset(),
    registers: int | None = None,
    order: ProgramOrder | None = None,
) -> PipelineRealization:
    """The per-core programs of ``schedule`` (see the module docstring).

    ``task_stage`` gives every task's stage (`PipelinePlan.task_stage`); tasks of
    an operator type in ``untimed`` get no timed work; ``registers`` bounds each
    core's event registers (None: no bound). Raises `ScheduleViolationError` if
    a task is unscheduled, a cross-stage edge runs backwards, or the core orders
    contradict the dependencies, and `TimingUnavailableError` when a core needs
    more than ``registers`` event registers.
    """
    task_stage = np.asarray(task_stage, dtype=np.int64)
    num_cores = schedule.num_cores
    core = schedule.core
    if np.any(core < 0) or np.any(task_stage < 0):
        bad = int(np.flatnonzero((core < 0) | (task_stage < 0))[0])
        raise ScheduleViolationError(f"{graph.name}: task {bad} has no core or no stage")
    core_of, stage_of = core.tolist(), task_stage.tolist()
    src, dst, nbytes = (a.tolist() for a in (graph.edge_src, graph.edge_dst, graph.edge_bytes))
    direct = same_stage_transfers(graph, schedule, task_stage)
    if order is None:
        order = list_schedule_order(graph, schedule, direct, untimed)
    ranks = program_ranks(graph, task_stage, direct, order)
    transfer_rank = ranks.transfer
    scalar = (graph.edge_kind == SCALAR_PROJECTION).tolist()
    # items[c]: core c's transfers, loads, stores and synchronization as (key, step, tasks);
    # keys sort them, and its compute units go between them by rank (`_merge_compute`).
    items: list[list[Item]] = [[] for _ in range(num_cores)]
    boundary = _Boundary(ranks, core_of, stage_of, publication_bytes(graph).tolist())
    for e, (u, v, b) in enumerate(zip(src, dst, nbytes, strict=True)):
        cu, cv = core_of[u], core_of[v]
        if stage_of[u] == stage_of[v]:
            if cu != cv:
                key = (transfer_rank[e], _XFER, e)
                items[cu].append((key, Send(cv, b), (u, v)))
                items[cv].append((key, Recv(cu, b), (u, v)))
            continue
        if stage_of[u] > stage_of[v]:
            raise ScheduleViolationError(
                f"{graph.name}: edge {e} runs from stage {stage_of[u]} back to stage {stage_of[v]}"
            )
        boundary.read(e, u, v, b, scalar[e])
    boundary.realize(items)
    for entries in items:
        entries.sort(key=lambda item: item[0])
    cores: list[list[Step]] = []
    tasks: list[list[tuple[int, ...]]] = []
    parts: list[list[tuple[tuple[int, int], ...]]] = []
    allocation = _allocate_registers(items, registers)
    ranked = 0
    for c, (entries, units) in enumerate(zip(items, order.units, strict=True)):
        unit_ranks = ranks.unit[ranked : ranked + len(units)]
        ranked += len(units)
        steps, owners, owned_parts = _merge_compute(entries, units, unit_ranks, c, allocation)
        cores.append(steps)
        tasks.append(owners)
        parts.append(owned_parts)
    return PipelineRealization(cores, tasks, parts)


class _Boundary:
    """The cross-stage stores, loads and synchronization of one realization."""

    def __init__(
        self, ranks: ProgramRanks, core_of: list[int], stage_of: list[int], published: list[int]
    ) -> None:
        self.first, self.last = ranks.first, ranks.last
        self.core_of, self.stage_of, self.published = core_of, stage_of, published
        self.core_stage = {c: stage_of[t] for t, c in enumerate(core_of)}
        self.readers: dict[tuple[int, int], set[int]] = {}
        """Publication (producer task, -1 or scalar edge id) -> reader cores."""
        self.loads: list[tuple[int, int, int, int]] = []
        """(consumer, producer, edge, bytes) of every cross-stage read."""
        self.scalar_bytes: dict[int, int] = {}

    def read(self, edge: int, u: int, v: int, nbytes: int, scalar: bool) -> None:
        """Record the cross-stage read ``u -> v`` (edge ``edge``)."""
        key = (u, edge if scalar else -1)
        self.readers.setdefault(key, set()).add(self.core_of[v])
        self.loads.append((v, u, edge, nbytes))
        if scalar:
            self.scalar_bytes[edge] = nbytes

    def realize(self, items: list[list[Item]]) -> None:
        """Add stores, loads, READY, release tree and restart permissions to ``items``: a
        producer's stores after its task's last unit and its permission WAIT at the end
        of the generation, a consumer's loads before its task's first unit."""
        first, last, core_of, stage_of = self.first, self.last, self.core_of, self.stage_of
        producers: dict[tuple[int, int], set[int]] = {}
        """(producer stage s, reader stage t) -> producer cores of s that t loads from."""
        tree: dict[tuple[int, int], set[int]] = {}
        """(reader stage t, producer stage s) -> reader cores of t loading from s."""
        ready: Counter[tuple[int, int]] = Counter()
        permitted: set[tuple[int, int]] = set()
        for u, scalar_edge in sorted(self.readers, key=lambda k: (last[k[0]], k[1])):
            c, s = core_of[u], stage_of[u]
            size = self.published[u] if scalar_edge < 0 else self.scalar_bytes[scalar_edge]
            readers = sorted(self.readers[u, scalar_edge])
            for t in sorted({self.core_stage[r] for r in readers}):
                producers.setdefault((s, t), set()).add(c)
                if (c, t) not in permitted:
                    permitted.add((c, t))
                    wait = _PendingWait(_Register(FREE, t), 1)
                    items[c].append(((_END, t), wait, (u,)))
            items[c].append(((last[u], _STORE, scalar_edge), Store(size), (u,)))
            for r in readers:
                tree.setdefault((self.core_stage[r], s), set()).add(r)
                signal = _PendingSignal(r, _Register(READY, s))
                items[c].append(((last[u], _READY, scalar_edge, r), signal, (u,)))
                ready[r, s] += 1
        waiting: set[tuple[int, int]] = set()
        for v, u, e, nbytes in sorted(self.loads, key=lambda x: (first[x[0]], last[x[1]], x[2])):
            r, s = core_of[v], stage_of[u]
            if (r, s) not in waiting:
                waiting.add((r, s))
                wait = _PendingWait(_Register(READY, s), ready[r, s])
                items[r].append(((first[v], _WAIT_READY, -1, s), wait, (v,)))
            items[r].append(((first[v], _LOAD, last[u], e), Load(nbytes), (v, u)))
        for (t, s), members in sorted(tree.items()):
            _release_tree(items, sorted(members), s, sorted(producers[s, t]), t)


def _release_tree(
    items: list[list[Item]], nodes: list[int], s: int, producers: list[int], t: int
) -> None:
    """Entry steps of the release tree of reader cores ``nodes`` (stage ``t``) over stage ``s``.

    Node ``i``'s parent is ``(i - 1) // 2``: each waits for its children's tokens,
    then signals its parent; the root signals every producer core's restart
    permission instead (module docstring).
    """
    for i, r in enumerate(nodes):
        children = sum(1 for j in (2 * i + 1, 2 * i + 2) if j < len(nodes))
        if children:
            items[r].append(((-1, _ENTRY, s, 0), _PendingWait(_Register(RELEASE, s), children), ()))
        if i > 0:
            parent = _PendingSignal(nodes[(i - 1) // 2], _Register(RELEASE, s))
            items[r].append(((-1, _ENTRY, s, 1), parent, ()))
            continue
        for p in producers:
            items[r].append(((-1, _ENTRY, s, 2, p), _PendingSignal(p, _Register(FREE, t)), ()))


def _allocate_registers(
    items: list[list[Item]], registers: int | None
) -> list[dict[_Register, int]]:
    """Per core, the event register of each register key, allocated in program order.

    A core's registers are numbered in the order its program first waits on each
    key; a SIGNAL names the register its destination core allocated
    (`_merge_compute` puts them in). ``items`` are sorted programs. Raises
    `TimingUnavailableError` when a core needs more than ``registers`` with one
    set per publication copy (`COPIES`). ``O(N)`` for ``N`` entries.
    """
    allocation: list[dict[_Register, int]] = []
    for c, entries in enumerate(items):
        table: dict[_Register, int] = {}
        for _, step, _ in entries:
            if type(step) is _PendingWait and step.register not in table:
                table[step.register] = len(table)
        if registers is not None and COPIES * len(table) > registers:
            raise TimingUnavailableError(
                f"core {c} needs {COPIES * len(table)} event registers ({len(table)} per "
                f"publication copy); the target has {registers}"
            )
        allocation.append(table)
    return allocation


def _merge_compute(
    entries: list[Item],
    units: list[Unit],
    unit_ranks: list[int],
    core: int,
    allocation: list[dict[_Register, int]],
) -> tuple[list[Step], list[tuple[int, ...]], list[tuple[tuple[int, int], ...]]]:
    """Core ``core``'s steps: its sorted non-compute ``entries`` with its compute
    ``units`` (program order, ranks ``unit_ranks``) between them, consecutive units
    merged into one `Compute` run (zero-ns runs kept: module docstring), register
    keys replaced by ``allocation``'s registers.

    A unit sorts as ``(rank, _COMPUTE)`` among the entries: before an entry of a
    larger rank, or of its own rank and a later kind (its task's stores). Ranks
    increase along a core's units, so each entry's place among them is a binary
    search and the runs between entries are slices. Returns the steps, each
    step's tasks (a run: the task of each unit) and each step's parts (a run:
    each unit's part; other steps: empty).
    """
    steps: list[Step] = []
    owners: list[tuple[int, ...]] = []
    parts: list[tuple[tuple[int, int], ...]] = []
    unit_tasks = [t for t, _, _ in units]
    unit_parts = [part for _, part, _ in units]
    elapsed = [0, *itertools.accumulate(ns for _, _, ns in units)]
    rank = np.fromiter((key[0] for key, _, _ in entries), np.int64, len(entries))
    before = np.fromiter((key[1] < _COMPUTE for key, _, _ in entries), bool, len(entries))
    ordered = np.asarray(unit_ranks, dtype=np.int64)
    stops = np.where(
        before, np.searchsorted(ordered, rank, "left"), np.searchsorted(ordered, rank, "right")
    ).tolist()
    registers = allocation[core]

    def run(first: int, stop: int) -> None:
        """Units ``[first, stop)`` as one compute run."""
        steps.append(Compute(elapsed[stop] - elapsed[first]))
        owners.append(tuple(unit_tasks[first:stop]))
        parts.append(tuple(unit_parts[first:stop]))

    done = 0
    for (_, step, who), stop in zip(entries, stops, strict=True):
        if stop > done:
            run(done, stop)
            done = stop
        if type(step) is _PendingWait:
            steps.append(Wait(registers[step.register], step.count))
        elif type(step) is _PendingSignal:
            steps.append(Signal(step.core, allocation[step.core][step.register]))
        else:
            steps.append(step)  # type: ignore[arg-type]  # neither pending kind: a Step
        owners.append(who)
        parts.append(())
    if len(units) > done:
        run(done, len(units))
    return steps, owners, parts


def target_realization(
    graph: ComputeGraph,
    target: SchedulingTarget,
    schedule: Schedule,
    task_stage: np.ndarray,
    cuts: UnitCuts | None = None,
) -> PipelineRealization:
    """The per-core programs of a pipeline schedule for ``target``.

    With the target's step timing: its untimed operations and event-register
    file, and, on a byte-addressed target, the check that communicated payloads
    have byte-sized elements (`TimingUnavailableError` otherwise, as for a core
    that needs more event registers than it has). Without step timing the
    programs are realized without those limits (the target cannot time them).
    Pipeline selection realizes its candidates with this, and `pipeline_events`
    builds the periodic diagnostic's event graph from it, so both see the same
    programs. ``cuts`` are the tasks' units (`UnitCuts` with `QUANTUM_NS`; None:
    cut afresh), shared by a caller that realizes many schedules of one graph.
    """
    timing = target.step_timing()
    if timing is None:
        return realize_pipeline(graph, schedule, task_stage)
    task_stage = np.asarray(task_stage, dtype=np.int64)
    if timing.byte_addressed:
        _check_byte_payloads(graph, schedule.core, task_stage)
    direct = same_stage_transfers(graph, schedule, task_stage)
    if cuts is None:
        cuts = UnitCuts(graph, target, QUANTUM_NS)
    programs = simulate_rendezvous(graph, timing, schedule, schedule.start_ns, direct, cuts)
    units: list[list[Unit]] = []
    starts: list[list[int]] = []
    for c in range(schedule.num_cores):
        core_units, core_starts = programs.unit_order(c)
        units.append(core_units)
        starts.append(core_starts)
    transfer_time = programs.send_times()
    return realize_pipeline(
        graph,
        schedule,
        task_stage,
        timing.untimed_operations,
        timing.event_registers,
        ProgramOrder(units, starts, transfer_time),
    )


def pipeline_events(
    graph: ComputeGraph,
    target: SchedulingTarget,
    schedule: Schedule,
    task_stage: np.ndarray,
    name: str | None = None,
) -> tuple[EventGraph, PipelineRealization]:
    """The periodic event graph of a pipeline schedule, priced by ``target``'s step timing.

    Raises `TimingUnavailableError` when the target has no complete step timing,
    a communicated payload has sub-byte elements on a byte-addressed target, or a
    core needs more event registers than the target has.
    """
    timing = target.step_timing()
    if timing is None:
        raise TimingUnavailableError(
            f"target {target.name} has no complete step timing (only whole transfers): "
            "the periodic model cannot price communication phases"
        )
    realization = target_realization(graph, target, schedule, task_stage)
    events = build_events(realization.cores, timing, name or graph.name)
    return events, realization


def _check_byte_payloads(graph: ComputeGraph, core: np.ndarray, stage: np.ndarray) -> None:
    """Reject communication of sub-byte elements (byte-addressed PIM lowering)."""
    src, dst = graph.edge_src, graph.edge_dst
    moved = (core[src] != core[dst]) | (stage[src] != stage[dst])
    bits = graph.payload_bits[src[moved]]
    bad = np.flatnonzero(bits % 8 != 0)
    if bad.size:
        task = int(src[moved][bad[0]])
        raise TimingUnavailableError(
            f"{graph.name}: task {graph.names[task]!r} communicates {int(bits[bad[0]])}-bit "
            "elements; byte-addressed PIM communication lowering requires byte-sized elements"
        )
