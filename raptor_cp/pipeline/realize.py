"""Realize a pipeline schedule as per-core `Step` programs and its periodic event graph.

`realize_pipeline` turns a placed pipeline (`PipelinePlan`) into one in-order
program per physical core, one generation (one inference) each, which
`raptor_cp.periodic.events.build_events` turns into the periodic event graph
of the seeds' "Periodic dependency diagnostics" (scheduling.md). What is
modelled:

* **Compute.** Each task is an atomic compute run of ``graph.cost_on(task,
  core)`` ns on its core (the physical cost), in the schedule's per-core order;
  consecutive compute with no communication between is merged into one
  `Compute` step (lanes and loop iterations are never expanded; zero-ns runs
  are dropped). Tasks of an operator type the target's queue model does not
  time (`StepTiming.untimed_operations`: Softmax on PIM, whose ``vsoftmax``
  the seeds say pimsim-nn omits) get no timed work; their transfers keep
  their costs (scheduling.md, "Default throughput selection").
* **Same-stage transfers.** An edge between two cores of one stage is a direct
  `Send` on the producer after its compute and a `Recv` on the consumer before
  its compute (same-core edges cost nothing). Where the target times the
  phases of a transfer (`StepTiming`), the rendezvous are placed by simulating
  the programs (`raptor_cp.periodic.rendezvous_order`: a free core takes a
  transfer whose partner is free and whose data is ready, else its next task;
  the stages run side by side, edges between stages are not simulated);
  otherwise each transfer sits at its producer's estimated finish. Both give
  every task and transfer a time, and one topological order of dependencies,
  core orders and transfers (Kahn's algorithm, earliest stage, then time; ties:
  transfers first, then id) ranks them; a core's program is its tasks and
  transfers sorted by that rank. Both ends of a transfer share its rank, so the
  blocked transfer of smallest rank always has its partner posted: no cycle
  of waiting transfers. Placing each rendezvous at the producer's list-schedule
  rank instead made cores wait on partners busy with earlier work: on ResNet-18
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
    producer WAITs for that permission before its first store that ``t`` reads.
    Publications are single-buffered.

  Registers are allocated per core in program order from the target's event
  register file (`StepTiming.event_registers`), one per (role, stage) key:
  at most ``3 (S - 1)`` for ``S`` stages. A core needing more registers than
  the file holds raises `TimingUnavailableError`. The realization places no
  stage barrier, so no dissemination barrier appears in the programs.
* **Payload widths.** Byte-addressed PIM communication lowering rejects a
  transfer or publication of sub-byte elements (`StepTiming.byte_addressed`;
  scheduling-implementation.md, "Transfer accounting and transpose costs"):
  `pipeline_events` raises `TimingUnavailableError` naming the task.

Omitted effects are listed in `REALIZATION_EFFECTS` (the report adds them to
the model's own list). Time ``O((T + E) log (T + E) + E K)`` for ``T`` tasks, ``E``
edges and ``K`` the most transfers pending on one core in the simulation; the
programs have ``O(T + E)`` steps.
"""

from __future__ import annotations

import heapq
import itertools
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from raptor_cp.errors import ScheduleViolationError, TimingUnavailableError
from raptor_cp.graph import SCALAR_PROJECTION, ComputeGraph
from raptor_cp.periodic.events import EventGraph, build_events
from raptor_cp.periodic.rendezvous_order import Action, simulate_rendezvous
from raptor_cp.periodic.steps import Compute, Load, Recv, Send, Signal, Step, Store, Wait
from raptor_cp.pipeline.boundary import publication_bytes
from raptor_cp.schedule import Schedule
from raptor_cp.targets.base import SchedulingTarget

REALIZATION_EFFECTS = (
    "function inputs, constants and final output collection are baseline requests: their "
    "controller service is in the memory term, their positions and input arrival are not "
    "modelled",
    "no load folding or strided transfer splitting; hand-made graphs estimate publication "
    "sizes from consumer reads",
    "publications are single-buffered; a release tree per (reader stage, producer stage) "
    "couples the entries of the reader cores",
    "rendezvous are placed by a simulation that prices transfers alone (no switch queues) "
    "and keeps payloads received ahead of need within half a core's local memory",
    "receives into assembly storage still pay the endpoint read and write in the event graph "
    "(the schedule's estimate omits them as duplicates of the assembly copy)",
    "compute runs are serial at the scheduler's cost (overlapping units can make them shorter)",
)
"""Effects of the realization that the event graph does not capture."""

_ENTRY, _WAIT_READY, _LOAD, _COMPUTE, _WAIT_FREE, _STORE, _READY, _XFER = range(8)
"""Ranks of step kinds sharing one task key (program order within a key)."""
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
        run's tasks, a transfer's producer and consumer, a store's producer, a
        wait's or signal's first task; release-tree steps at entry: empty).
    """

    cores: list[list[Step]]
    tasks: list[list[tuple[int, ...]]]

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
"""A program entry before sorting: (sort key, step, tasks it realizes)."""


ProgramTimes = tuple[Sequence[int], Mapping[int, int]]
"""Start of every task and of every same-stage transfer (edge id -> start) that orders the
programs: the rendezvous simulation's (`target_realization`) or the list schedule's."""


def list_schedule_times(
    graph: ComputeGraph, schedule: Schedule, transfers: Sequence[int]
) -> ProgramTimes:
    """Tasks at their estimated starts, each transfer at its producer's estimated finish."""
    start = schedule.start_ns.tolist()
    core = schedule.core.tolist()
    src = graph.edge_src.tolist()
    return start, {e: start[src[e]] + graph.cost_on(src[e], core[src[e]]) for e in transfers}


def program_ranks(
    graph: ComputeGraph,
    schedule: Schedule,
    task_stage: np.ndarray,
    transfers: Sequence[int],
    times: ProgramTimes,
) -> tuple[list[int], dict[int, int]]:
    """Positions of every task and of every same-stage transfer in one topological order.

    The order covers the dependencies, every core's order, and each transfer
    between its producer and its consumer. Kahn's algorithm takes the ready node
    of the earliest stage, then the earliest time of ``times``; ties: transfers
    before tasks, then id. Returns (task ranks, edge id -> rank); raises
    `ScheduleViolationError` when the core orders contradict the dependencies.
    ``O((T + E) log (T + E))``.
    """
    n = graph.num_tasks
    x = len(transfers)
    successors: list[list[int]] = [[] for _ in range(n + x)]
    indegree = [0] * (n + x)
    src, dst = graph.edge_src.tolist(), graph.edge_dst.tolist()
    via = set(transfers)
    for e, (u, v) in enumerate(zip(src, dst, strict=True)):
        if e not in via:
            successors[u].append(v)
            indegree[v] += 1
    for i, e in enumerate(transfers):
        successors[src[e]].append(n + i)
        successors[n + i].append(dst[e])
        indegree[n + i] += 1
        indegree[dst[e]] += 1
    for order in schedule.core_order:
        for u, v in itertools.pairwise(order):
            successors[u].append(v)
            indegree[v] += 1
    task_time, transfer_time = times
    stage = task_stage.tolist()
    key = [(stage[t], int(task_time[t]), 1, t) for t in range(n)]
    key.extend((stage[src[e]], transfer_time[e], 0, n + i) for i, e in enumerate(transfers))
    heap = [key[t] for t in range(n + x) if indegree[t] == 0]
    heapq.heapify(heap)
    rank = [-1] * (n + x)
    position = 0
    while heap:
        node = heapq.heappop(heap)[3]
        rank[node] = position
        position += 1
        for v in successors[node]:
            indegree[v] -= 1
            if indegree[v] == 0:
                heapq.heappush(heap, key[v])
    if position != n + x:
        stuck = min(t for t in range(n) if rank[t] < 0)
        raise ScheduleViolationError(
            f"{graph.name}: the per-core orders contradict the dependencies (task {stuck} "
            "follows a cycle of dependencies and core orders)"
        )
    return rank[:n], {e: rank[n + i] for i, e in enumerate(transfers)}


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
    times: ProgramTimes | None = None,
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
    if times is None:
        times = list_schedule_times(graph, schedule, direct)
    rank, transfer_rank = program_ranks(graph, schedule, task_stage, direct, times)
    scalar = (graph.edge_kind == SCALAR_PROJECTION).tolist()
    # items[c]: (key, step, tasks); a key sorts a core's program (module docstring).
    items: list[list[Item]] = [[] for _ in range(num_cores)]
    boundary = _Boundary(rank, core_of, stage_of, publication_bytes(graph).tolist())
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
    for c, order in enumerate(schedule.core_order):
        for t in order:
            ns = 0 if graph.operation_type(t) in untimed else graph.cost_on(t, c)
            items[c].append(((rank[t], _COMPUTE), Compute(ns), (t,)))
    boundary.realize(items)
    for entries in items:
        entries.sort(key=lambda item: item[0])
    cores: list[list[Step]] = []
    tasks: list[list[tuple[int, ...]]] = []
    for entries in _allocate_registers(items, registers):
        steps, owners = _merge_compute(entries)
        cores.append(steps)
        tasks.append(owners)
    return PipelineRealization(cores, tasks)


class _Boundary:
    """The cross-stage stores, loads and synchronization of one realization."""

    def __init__(
        self, rank: list[int], core_of: list[int], stage_of: list[int], published: list[int]
    ) -> None:
        self.rank, self.core_of, self.stage_of, self.published = rank, core_of, stage_of, published
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
        """Add stores, loads, READY, release tree and restart permissions to ``items``."""
        rank, core_of, stage_of = self.rank, self.core_of, self.stage_of
        producers: dict[tuple[int, int], set[int]] = {}
        """(producer stage s, reader stage t) -> producer cores of s that t loads from."""
        tree: dict[tuple[int, int], set[int]] = {}
        """(reader stage t, producer stage s) -> reader cores of t loading from s."""
        ready: Counter[tuple[int, int]] = Counter()
        permitted: set[tuple[int, int]] = set()
        for u, scalar_edge in sorted(self.readers, key=lambda k: (rank[k[0]], k[1])):
            c, s = core_of[u], stage_of[u]
            size = self.published[u] if scalar_edge < 0 else self.scalar_bytes[scalar_edge]
            readers = sorted(self.readers[u, scalar_edge])
            for t in sorted({self.core_stage[r] for r in readers}):
                producers.setdefault((s, t), set()).add(c)
                if (c, t) not in permitted:
                    permitted.add((c, t))
                    wait = _PendingWait(_Register(FREE, t), 1)
                    items[c].append(((rank[u], _WAIT_FREE, t), wait, (u,)))
            items[c].append(((rank[u], _STORE, scalar_edge), Store(size), (u,)))
            for r in readers:
                tree.setdefault((self.core_stage[r], s), set()).add(r)
                signal = _PendingSignal(r, _Register(READY, s))
                items[c].append(((rank[u], _READY, scalar_edge, r), signal, (u,)))
                ready[r, s] += 1
        waiting: set[tuple[int, int]] = set()
        for v, u, e, nbytes in sorted(self.loads, key=lambda x: (rank[x[0]], rank[x[1]], x[2])):
            r, s = core_of[v], stage_of[u]
            if (r, s) not in waiting:
                waiting.add((r, s))
                wait = _PendingWait(_Register(READY, s), ready[r, s])
                items[r].append(((rank[v], _WAIT_READY, -1, s), wait, (v,)))
            items[r].append(((rank[v], _LOAD, rank[u], e), Load(nbytes), (v, u)))
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


def _allocate_registers(items: list[list[Item]], registers: int | None) -> list[list[Item]]:
    """Replace register keys by event registers, allocated per core in program order.

    A core's registers are numbered in the order its program first waits on each
    key; a SIGNAL names the register its destination core allocated. ``items``
    are sorted programs. Raises `TimingUnavailableError` when a core needs more
    than ``registers``. ``O(N)`` for ``N`` entries.
    """
    allocation: list[dict[_Register, int]] = []
    for c, entries in enumerate(items):
        table: dict[_Register, int] = {}
        for _, step, _ in entries:
            if isinstance(step, _PendingWait) and step.register not in table:
                table[step.register] = len(table)
        if registers is not None and len(table) > registers:
            raise TimingUnavailableError(
                f"core {c} needs {len(table)} event registers; the target has {registers}"
            )
        allocation.append(table)
    return [
        [(key, _allocated(step, c, allocation), who) for key, step, who in entries]
        for c, entries in enumerate(items)
    ]


def _allocated(
    step: Step | _PendingWait | _PendingSignal, core: int, allocation: list[dict[_Register, int]]
) -> Step:
    if isinstance(step, _PendingWait):
        return Wait(allocation[core][step.register], step.count)
    if isinstance(step, _PendingSignal):
        return Signal(step.core, allocation[step.core][step.register])
    return step


def _merge_compute(entries: list[Item]) -> tuple[list[Step], list[tuple[int, ...]]]:
    """Merge consecutive `Compute` entries into one run; drop zero-ns runs."""
    steps: list[Step] = []
    owners: list[tuple[int, ...]] = []
    run_ns, run_tasks = 0, ()

    def flush() -> None:
        nonlocal run_ns, run_tasks
        if run_tasks and run_ns > 0:
            steps.append(Compute(run_ns))
            owners.append(run_tasks)
        run_ns, run_tasks = 0, ()

    for _, step, who in entries:
        if isinstance(step, Compute):
            run_ns += step.ns
            run_tasks = run_tasks + who
            continue
        flush()
        steps.append(step)
        owners.append(who)
    flush()
    return steps, owners


def target_realization(
    graph: ComputeGraph, target: SchedulingTarget, schedule: Schedule, task_stage: np.ndarray
) -> PipelineRealization:
    """The per-core programs of a pipeline schedule for ``target``.

    With the target's step timing: its untimed operations and event-register
    file, and, on a byte-addressed target, the check that communicated payloads
    have byte-sized elements (`TimingUnavailableError` otherwise, as for a core
    that needs more event registers than it has). Without step timing the
    programs are realized without those limits (the target cannot time them).
    Pipeline selection realizes its candidates with this, and `pipeline_events`
    builds the periodic diagnostic's event graph from it, so both see the same
    programs.
    """
    timing = target.step_timing()
    if timing is None:
        return realize_pipeline(graph, schedule, task_stage)
    task_stage = np.asarray(task_stage, dtype=np.int64)
    if timing.byte_addressed:
        _check_byte_payloads(graph, schedule.core, task_stage)
    direct = same_stage_transfers(graph, schedule, task_stage)
    programs = simulate_rendezvous(
        graph, target, timing, schedule, schedule.start_ns, direct, quantum=None
    )
    task_time = [0] * graph.num_tasks
    transfer_time: dict[int, int] = {}
    for entries in programs:
        for entry in entries:
            if entry.action is Action.TASK:
                task_time[entry.task] = entry.start_ns
            elif entry.action is Action.SEND:
                transfer_time[entry.edge] = entry.start_ns
    return realize_pipeline(
        graph,
        schedule,
        task_stage,
        timing.untimed_operations,
        timing.event_registers,
        (task_time, transfer_time),
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
