"""Realize a pipeline schedule as per-core `Step` programs and its periodic event graph.

`realize_pipeline` turns a placed pipeline (`PipelinePlan`) into one in-order
program per physical core, one generation (one inference) each, which
`raptor_cp.periodic.events.build_events` turns into the periodic event graph
of the seeds' "Periodic dependency diagnostics" (scheduling.md). What is
modelled:

* **Compute.** Each task is an atomic compute run of ``graph.cost_on(task,
  core)`` ns on its core, in the schedule's per-core order; consecutive compute
  with no communication between is merged into one `Compute` step (lanes and
  loop iterations are never expanded; zero-ns runs are dropped).
* **Same-stage transfers.** An edge between two cores of one stage is a direct
  `Send` on the producer after its compute and a `Recv` on the consumer before
  its compute (same-core edges cost nothing). To keep the blocking SEND/RECV
  rendezvous free of crossed-send deadlocks, every core orders its transfers by
  one global key, ``(rank(producer), rank(consumer), edge id)``, where ``rank``
  is a task's position in one topological order of the dependencies together
  with every core's order (Kahn's algorithm, ties by stage, estimated start,
  then task id). A core's program is its tasks and transfers sorted by that
  key, a task's compute sorting just before its own sends; a receive is thus
  posted at its producer's finish rank, possibly before computes of earlier
  tasks of its core (the payload is buffered in local memory). Since both ends
  use the same total order, the blocked transfer with the smallest key always
  has its partner posted: no cycle of waiting transfers.
* **Cross-stage transfers** go through global memory (`boundary_demand`): one
  `Store` of ``publication_bytes`` per shared publication on its producer's
  core after its compute, one `Load` of the edge's bytes per consumer transfer
  on the consumer's core before its compute (repeated loads of one publication
  on one reader core stay separate: no load folding).
* **READY/FREE.** Event registers are per (owner core, peer core): register
  ``p`` of a reader is READY from producer core ``p``, register ``P + r`` of a
  producer is FREE from reader core ``r`` (``P`` cores). After each store the
  producer SIGNALs READY to every reader core of the publication (ascending);
  a reader WAITs before its first load of a publication for exactly the READY
  tokens of that producer it has not consumed yet (the producer's program
  order, so the count is exact). At its entry each reader core SIGNALs FREE to
  every producer core it loads from, once per generation: the entry of
  generation ``k`` follows the reader's completion of ``k - 1`` (the
  distance-1 edge), so the token releases the preceding generation's buffers.
  A producer WAITs for one FREE from each reader core before its first store
  that reader loads: publications are single-buffered.

Omitted effects are listed in `REALIZATION_EFFECTS` (the report adds them to
the model's own list). Time ``O(T log T + E log E)`` for ``T`` tasks and ``E``
edges; the programs have ``O(T + E)`` steps.
"""

from __future__ import annotations

import heapq
import itertools
from collections import Counter
from dataclasses import dataclass

import numpy as np

from raptor_cp.errors import ScheduleViolationError
from raptor_cp.graph import ComputeGraph
from raptor_cp.periodic.events import EventGraph, build_events
from raptor_cp.periodic.steps import Compute, Load, Recv, Send, Signal, Step, Store, Wait
from raptor_cp.pipeline.boundary import publication_bytes
from raptor_cp.schedule import Schedule
from raptor_cp.targets.base import SchedulingTarget

REALIZATION_EFFECTS = (
    "function inputs, constants and final output collection are not in the graph: no "
    "baseline memory traffic and no input arrival are modelled",
    "publication store sizes are estimated from consumer reads (boundary demand); no load "
    "folding or strided transfer splitting",
    "READY/FREE use one event register per (core, peer core) pair and single-buffered "
    "publications; register-file limits, dissemination barriers and restart permissions "
    "are not modelled",
    "receives are posted at their producer's finish rank, possibly before earlier computes; "
    "local-memory capacity for the buffered payloads is not checked",
    "compute runs are serial at the scheduler's cost (overlapping units can make them shorter)",
)
"""Effects of the realization that the event graph does not capture."""

_ENTRY, _WAIT_READY, _LOAD, _COMPUTE, _WAIT_FREE, _STORE, _READY, _XFER = range(8)
"""Ranks of step kinds sharing one task key (program order within a key)."""


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
        wait's or signal's first task; FREE signals at entry: empty).
    """

    cores: list[list[Step]]
    tasks: list[list[tuple[int, ...]]]

    def counts(self) -> dict[str, int]:
        """Steps per kind over all cores (sorted kind names)."""
        tally = Counter(type(s).__name__.lower() for steps in self.cores for s in steps)
        return dict(sorted(tally.items()))


def task_ranks(graph: ComputeGraph, schedule: Schedule, task_stage: np.ndarray) -> np.ndarray:
    """Position of every task in one topological order of dependencies and core orders.

    Kahn's algorithm with ties by (stage, estimated start, task id). Raises
    `ScheduleViolationError` when the core orders contradict the dependencies.
    """
    n = graph.num_tasks
    successors: list[list[int]] = [[] for _ in range(n)]
    indegree = np.zeros(n, dtype=np.int64)
    for u, v in zip(graph.edge_src.tolist(), graph.edge_dst.tolist(), strict=True):
        successors[u].append(v)
        indegree[v] += 1
    for order in schedule.core_order:
        for u, v in itertools.pairwise(order):
            successors[u].append(v)
            indegree[v] += 1
    start = schedule.start_ns.tolist()
    stage = task_stage.tolist()
    heap = [(stage[t], start[t], t) for t in range(n) if indegree[t] == 0]
    heapq.heapify(heap)
    rank = np.full(n, -1, dtype=np.int64)
    position = 0
    while heap:
        _, _, t = heapq.heappop(heap)
        rank[t] = position
        position += 1
        for v in successors[t]:
            indegree[v] -= 1
            if indegree[v] == 0:
                heapq.heappush(heap, (stage[v], start[v], v))
    if position != n:
        stuck = int(np.flatnonzero(rank < 0)[0])
        raise ScheduleViolationError(
            f"{graph.name}: the per-core orders contradict the dependencies (task {stuck} "
            "follows a cycle of dependencies and core orders)"
        )
    return rank


def realize_pipeline(
    graph: ComputeGraph, schedule: Schedule, task_stage: np.ndarray
) -> PipelineRealization:
    """The per-core programs of ``schedule`` (see the module docstring).

    ``task_stage`` gives every task's stage (`PipelinePlan.task_stage`). Raises
    `ScheduleViolationError` if a task is unscheduled, a cross-stage edge runs
    backwards, or the core orders contradict the dependencies.
    """
    task_stage = np.asarray(task_stage, dtype=np.int64)
    num_cores = schedule.num_cores
    core = schedule.core
    if np.any(core < 0) or np.any(task_stage < 0):
        bad = int(np.flatnonzero((core < 0) | (task_stage < 0))[0])
        raise ScheduleViolationError(f"{graph.name}: task {bad} has no core or no stage")
    rank = task_ranks(graph, schedule, task_stage).tolist()
    core_of, stage_of = core.tolist(), task_stage.tolist()
    src, dst, nbytes = (a.tolist() for a in (graph.edge_src, graph.edge_dst, graph.edge_bytes))
    published = publication_bytes(graph).tolist()
    # items[c]: (key, step, tasks); a key sorts a core's program (module docstring).
    items: list[list[tuple[tuple[int, ...], Step, tuple[int, ...]]]] = [
        [] for _ in range(num_cores)
    ]
    readers: dict[int, set[int]] = {}
    loads: list[tuple[int, int, int]] = []
    for e, (u, v, b) in enumerate(zip(src, dst, nbytes, strict=True)):
        cu, cv = core_of[u], core_of[v]
        if stage_of[u] == stage_of[v]:
            if cu != cv:
                key = (rank[u], _XFER, rank[v], e)
                items[cu].append((key, Send(cv, b), (u, v)))
                items[cv].append((key, Recv(cu, b), (u, v)))
            continue
        if stage_of[u] > stage_of[v]:
            raise ScheduleViolationError(
                f"{graph.name}: edge {e} runs from stage {stage_of[u]} back to stage {stage_of[v]}"
            )
        readers.setdefault(u, set()).add(cv)
        loads.append((v, u, e))
    for c, order in enumerate(schedule.core_order):
        for t in order:
            ns = graph.cost_on(t, c)
            items[c].append(((rank[t], _COMPUTE), Compute(ns), (t,)))
    _boundary(items, readers, loads, rank, core_of, published, nbytes, num_cores)
    cores: list[list[Step]] = []
    tasks: list[list[tuple[int, ...]]] = []
    for entries in items:
        entries.sort(key=lambda item: item[0])
        steps, owners = _merge_compute(entries)
        cores.append(steps)
        tasks.append(owners)
    return PipelineRealization(cores, tasks)


def _boundary(
    items: list[list[tuple[tuple[int, ...], Step, tuple[int, ...]]]],
    readers: dict[int, set[int]],
    loads: list[tuple[int, int, int]],
    rank: list[int],
    core_of: list[int],
    published: list[int],
    nbytes: list[int],
    num_cores: int,
) -> None:
    """Add the stores, loads and READY/FREE steps of the cross-stage edges to ``items``."""
    # Producer side, in program (rank) order: FREE waits, the store, READY signals.
    ready_position: dict[tuple[int, int], int] = {}
    """(publication, reader core) -> its READY token's 1-based position from its producer."""
    signalled: Counter[tuple[int, int]] = Counter()
    freed: set[tuple[int, int]] = set()
    for u in sorted(readers, key=lambda t: rank[t]):
        c, key = core_of[u], rank[u]
        for r in sorted(readers[u]):
            if (c, r) not in freed:
                freed.add((c, r))
                items[c].append(((key, _WAIT_FREE, r), Wait(num_cores + r, 1), (u,)))
                items[r].append(((-1, _ENTRY, c), Signal(c, num_cores + r), ()))
        items[c].append(((key, _STORE), Store(published[u]), (u,)))
        for r in sorted(readers[u]):
            items[c].append(((key, _READY, r), Signal(r, c), (u,)))
            signalled[c, r] += 1
            ready_position[u, r] = signalled[c, r]
    # Consumer side: per load, wait for the producer's READY tokens not yet consumed.
    consumed: Counter[tuple[int, int]] = Counter()
    for v, u, e in sorted(loads, key=lambda x: (rank[x[0]], rank[x[1]], x[2])):
        r, c = core_of[v], core_of[u]
        needed = ready_position[u, r] - consumed[r, c]
        if needed > 0:
            consumed[r, c] += needed
            items[r].append(((rank[v], _WAIT_READY, rank[u], e), Wait(c, needed), (v,)))
        items[r].append(((rank[v], _LOAD, rank[u], e), Load(nbytes[e]), (v, u)))
    # A reader may skip a producer's late tokens only if it never loads them: impossible,
    # since each READY goes to a core that loads that publication.
    for (r, c), count in sorted(consumed.items()):
        if count != signalled[c, r]:
            raise ScheduleViolationError(
                f"core {r} consumes {count} of {signalled[c, r]} READY tokens from core {c}"
            )


def _merge_compute(
    entries: list[tuple[tuple[int, ...], Step, tuple[int, ...]]],
) -> tuple[list[Step], list[tuple[int, ...]]]:
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


def pipeline_events(
    graph: ComputeGraph,
    target: SchedulingTarget,
    schedule: Schedule,
    task_stage: np.ndarray,
    name: str | None = None,
) -> tuple[EventGraph, PipelineRealization]:
    """The periodic event graph of a pipeline schedule, priced by ``target``'s step timing."""
    realization = realize_pipeline(graph, schedule, task_stage)
    events = build_events(realization.cores, target.step_timing(), name or graph.name)
    return events, realization
