"""Building blocks shared by the insertion-based list schedulers (HEFT, PEFT).

A list scheduler visits tasks in priority order and, for each one, prices every
core: when its inputs can be there (`data_ready_ns`), when the core has an idle
gap long enough after that (`CoreTimelines`), and whether the core still has room
for the task's resident weights (`ResidentWeights`). The scheduler then applies
its own selection rule (HEFT: earliest finish; PEFT: earliest finish plus the
optimistic cost table).

All times are integer ns in int64 numpy arrays indexed by core.
"""

from __future__ import annotations

import heapq
import time
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable
from functools import lru_cache

import numpy as np

from raptor_cp.bounds import lower_bounds
from raptor_cp.evaluation import evaluate
from raptor_cp.graph import ComputeGraph
from raptor_cp.problems import LatencyProblem, LatencySolution, Status
from raptor_cp.schedule import Schedule
from raptor_cp.targets.base import SchedulingTarget


def list_solution(
    problem: LatencyProblem,
    schedule: Schedule,
    solver: str,
    began: float,
    details: dict[str, object] | None = None,
) -> LatencySolution:
    """A list scheduler's `LatencySolution`: `evaluate`'s makespan and the analytic bound.

    Status is OPTIMAL when the makespan meets the bound (`raptor_cp.bounds`:
    a proof that no schedule is shorter), FEASIBLE otherwise. ``began`` is the
    ``time.perf_counter()`` at which the solver started.
    """
    objective = evaluate(problem, schedule).makespan_ns
    bound = lower_bounds(problem.graph, problem.target).makespan_ns
    return LatencySolution(
        schedule=schedule,
        status=Status.OPTIMAL if objective == bound else Status.FEASIBLE,
        solver=solver,
        objective=objective,
        bound=bound,
        wall_s=time.perf_counter() - began,
        details=details or {},
    )


def list_order(graph: ComputeGraph, priority: np.ndarray) -> np.ndarray:
    """Tasks in list-scheduling order: the ready task of highest priority goes next.

    Ties go to the smaller task id. Taking only *ready* tasks (all predecessors
    already listed) keeps the order topological even when zero-cost tasks and free
    transfers give a successor the same priority as its predecessor.
    """
    n = graph.num_tasks
    key = priority.tolist()
    waiting = np.bincount(graph.edge_dst, minlength=n).tolist()
    dst = graph.edge_dst.tolist()
    ready = [(-key[t], t) for t in range(n) if waiting[t] == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        _, task = heapq.heappop(ready)
        order.append(task)
        for e in graph.successor_edges(task).tolist():
            waiting[dst[e]] -= 1
            if waiting[dst[e]] == 0:
                heapq.heappush(ready, (-key[dst[e]], dst[e]))
    return np.asarray(order, dtype=np.int64)


class TransferRows:
    """``transfer_ns(src, p, nbytes, direct)`` for every core ``p`` as one array, memoised.

    DNN graphs repeat a few tensor sizes, so most rows come from the cache; the
    cache is bounded, in rows and in total entries (``2^22`` int64, 32 MiB), so
    random byte counts or many cores cannot exhaust memory. On a target with
    `SchedulingTarget.uniform_transfers` a row is built in ``O(P)`` from one
    memoised price per byte count and nothing of size ``P`` is kept.
    """

    def __init__(self, target: SchedulingTarget, cache_rows: int = 4096) -> None:
        cores = target.cores
        if target.uniform_transfers:
            self.row = uniform_rows(target, cache_rows)
            return

        def row(src: int, nbytes: int, direct: bool = False) -> np.ndarray:
            values = np.array(
                [target.transfer_ns(src, p, nbytes, direct) for p in range(cores)], np.int64
            )
            values.setflags(write=False)
            return values

        self.row = lru_cache(maxsize=min(cache_rows, max(16, CACHE_ENTRIES // cores)))(row)


CACHE_ENTRIES = 1 << 22
"""Most int64 entries a transfer-row cache keeps (32 MiB)."""


def uniform_price(target: SchedulingTarget, cache_sizes: int) -> Callable[[int, bool], int]:
    """``price(nbytes, direct)``: a uniform target's transfer between distinct cores, memoised."""
    cores = target.cores

    def price(nbytes: int, direct: bool = False) -> int:
        return target.transfer_ns(0, 1, nbytes, direct) if cores > 1 else 0

    return lru_cache(maxsize=cache_sizes)(price)


def uniform_rows(
    target: SchedulingTarget, cache_sizes: int
) -> Callable[[int, int, bool], np.ndarray]:
    """``row(src, nbytes, direct)`` of a target with uniform transfers: the price everywhere
    but ``src``, built in ``O(P)`` (nothing of size ``P`` is kept)."""
    cores = target.cores
    price = uniform_price(target, cache_sizes)

    def row(src: int, nbytes: int, direct: bool = False) -> np.ndarray:
        values = np.full(cores, price(nbytes, direct), dtype=np.int64)
        values[src] = 0
        return values

    return row


def data_ready_ns(
    graph: ComputeGraph,
    task: int,
    core: np.ndarray,
    finish: np.ndarray,
    rows: TransferRows,
    cores: int,
) -> np.ndarray:
    """Per core, when every input of ``task`` can be there.

    ``core`` and ``finish`` give the placement of the (already scheduled)
    predecessors; each contributes its finish plus its transfer to each core.
    """
    ready = np.zeros(cores, dtype=np.int64)
    edges = graph.predecessor_edges(task)
    for pred, nbytes, direct in zip(
        graph.edge_src[edges].tolist(),
        graph.edge_bytes[edges].tolist(),
        graph.edge_direct[edges].tolist(),
        strict=True,
    ):
        np.maximum(ready, rows.row(int(core[pred]), nbytes, direct) + finish[pred], out=ready)
    return ready


class CoreTimelines:
    """Busy intervals of each core, sorted by time, for insertion-based placement.

    Intervals on a core never overlap, so their finishes are sorted too and a
    bisection finds the first interval that ends after a given time.
    """

    def __init__(self, cores: int) -> None:
        self._starts: list[list[int]] = [[] for _ in range(cores)]
        self._finishes: list[list[int]] = [[] for _ in range(cores)]
        self._tasks: list[list[int]] = [[] for _ in range(cores)]
        self.last_finish = np.zeros(cores, dtype=np.int64)
        """Finish of the last interval on each core (0 when idle)."""
        self.widest_gap = np.zeros(cores, dtype=np.int64)
        """Per core, an upper bound on its longest idle gap before ``last_finish``:
        gaps only appear when a task is appended after idle time, and insertion only
        shrinks them, so the widest gap ever opened bounds the current ones."""

    def append_starts(self, ready: np.ndarray) -> np.ndarray:
        """Start on each core after everything already there: an upper bound on
        `gap_start`, and equal to it on cores with ``last_finish <= ready``."""
        return np.maximum(ready, self.last_finish)

    def gap_start(self, core: int, ready: int, duration: int) -> int:
        """Earliest start >= ``ready`` of an idle gap of ``duration`` on ``core``.

        Scans the gaps between intervals that end after ``ready`` (Topcuoglu et
        al. 2002, insertion-based policy); falls back to appending at the end.
        """
        starts = self._starts[core]
        finishes = self._finishes[core]
        begin = ready
        for j in range(bisect_right(finishes, ready), len(starts)):
            if begin + duration <= starts[j]:
                return begin
            begin = finishes[j]
        return begin

    def place(self, core: int, task: int, start: int, finish: int) -> None:
        """Record ``task`` on ``core`` over ``[start, finish)``; it must fit a gap."""
        index = bisect_right(self._finishes[core], start)
        if index == len(self._starts[core]):
            opened = start - int(self.last_finish[core])
            self.widest_gap[core] = max(int(self.widest_gap[core]), opened)
        self._starts[core].insert(index, start)
        self._finishes[core].insert(index, finish)
        self._tasks[core].insert(index, task)
        self.last_finish[core] = self._finishes[core][-1]

    def core_order(self) -> tuple[tuple[int, ...], ...]:
        """Per core, its tasks in time order (the `Schedule.core_order`)."""
        return tuple(tuple(tasks) for tasks in self._tasks)


class ResidentWeights:
    """Distinct resident weights per core and which cores can still take a task.

    A weight already resident on a core is reused at no extra cost; a task fits a
    core when the slots of its weights not yet there fit the free capacity.
    When all weights together fit the smallest core, capacity can never bind and
    every core is always eligible.
    """

    def __init__(self, graph: ComputeGraph, target: SchedulingTarget) -> None:
        self._graph = graph
        self.capacity = np.array([target.capacity(p) for p in range(target.cores)], np.int64)
        self.used = np.zeros(target.cores, dtype=np.int64)
        self.binding = int(graph.weight_size.sum()) > int(self.capacity.min())
        # which weight is resident where: W x P, needed (and allocated) only when binding
        self._resident = np.zeros((graph.num_weights, target.cores * self.binding), dtype=bool)
        self._all = np.ones(target.cores, dtype=bool)
        self._ids: dict[int, np.ndarray] = {}

    def weight_ids(self, task: int) -> np.ndarray:
        """``task``'s distinct weight ids, ascending (memoised: asked several times per task)."""
        ids = self._ids.get(task)
        if ids is None:
            ids = self._ids[task] = np.array(sorted(set(self._graph.task_weights[task])), np.int64)
        return ids

    def new_slots(self, task: int) -> np.ndarray:
        """Per core, the slots ``task`` would add (its weights not yet resident there)."""
        weights = self.weight_ids(task)
        missing = ~self._resident[weights]
        return self._graph.weight_size[weights] @ missing

    def eligible(self, task: int) -> np.ndarray:
        """Boolean mask of the cores with room for ``task``'s weights."""
        if not self.binding:
            return self._all
        return self.used + self.new_slots(task) <= self.capacity

    def reserve(self, reserved: np.ndarray) -> None:
        """Make ``reserved[w, p]`` weights resident on their cores (at most once each)."""
        added = reserved & ~self._resident
        self.used += self._graph.weight_size @ added
        self._resident |= added

    def add(self, task: int, core: int) -> None:
        """Make ``task``'s weights resident on ``core``."""
        if not self.binding:
            return
        weights = self.weight_ids(task)
        missing = ~self._resident[weights, core]
        self.used[core] += int(self._graph.weight_size[weights][missing].sum())
        self._resident[weights, core] = True


class Reservations:
    """Resident-weight reservations grown task by task (HEFT and PEFT share them).

    Reuse preference (seeds, PEFT reservations): when the distinct weights need
    more than half the fleet's one-copy capacity, a task goes to a core already
    holding all its weights whenever one has room.

    Headroom: a core may take a *replica* of a weight (a copy while another core
    already holds it) only if, afterwards, the fleet's free slots cut into chunks
    of the largest weight that is resident nowhere yet (``sum_p floor(free_p / m) * m``)
    still cover one copy of every such weight. Without it the greedy replicates
    early weights until late ones fit nowhere (or only in fragments) and recovery
    has to concentrate the work. First copies and reuse are always allowed, so the
    rule never empties a candidate set that capacity alone would leave non-empty.
    """

    def __init__(self, graph: ComputeGraph, target: SchedulingTarget) -> None:
        self._graph = graph
        self.resident = ResidentWeights(graph, target)
        fleet = sum(target.capacity(p) for p in range(target.cores))
        self.prefer_reuse = 2 * int(graph.weight_size.sum()) > fleet
        self._placed = np.zeros(graph.num_weights, dtype=bool)
        self._unplaced_slots = int(graph.weight_size.sum())
        self._unplaced_sizes = Counter(graph.weight_size.tolist())

    def eligible(self, task: int) -> np.ndarray:
        weights = self.resident
        if not weights.binding:
            return weights.eligible(task)
        new = weights.new_slots(task)
        fits = weights.used + new <= weights.capacity
        task_weights = self._graph.task_weights[task]
        if self.prefer_reuse and task_weights:
            holders = fits & (new == 0)
            if holders.any():
                return holders
        ids = weights.weight_ids(task)
        fresh = self._graph.weight_size[ids[~self._placed[ids]]]
        later = self._unplaced_sizes - Counter(fresh.tolist())
        chunk = max(later, default=0)
        if chunk == 0:
            return fits
        free = weights.capacity - weights.used
        chunks = (free // chunk).sum() - free // chunk + np.maximum(free - new, 0) // chunk
        roomy = fits & ((new == 0) | (chunks * chunk >= self._unplaced_slots - int(fresh.sum())))
        return roomy if roomy.any() else fits

    def reserve(self, reserved: np.ndarray) -> None:
        """Make weights resident up front: ``reserved[w, p]`` puts weight ``w`` on core ``p``.

        Used after the reuse-first constructor: its placement is kept, and tasks may
        still take replicas wherever free slots remain.
        """
        if not self.resident.binding:
            return
        self.resident.reserve(reserved)
        fresh = reserved.any(axis=1) & ~self._placed
        self._unplaced_slots -= int(self._graph.weight_size[fresh].sum())
        self._unplaced_sizes -= Counter(self._graph.weight_size[fresh].tolist())
        self._placed |= fresh

    def add(self, task: int, core: int) -> None:
        if not self.resident.binding:
            return
        self.resident.add(task, core)
        ids = self.resident.weight_ids(task)
        fresh = ids[~self._placed[ids]]
        self._unplaced_slots -= int(self._graph.weight_size[fresh].sum())
        self._unplaced_sizes -= Counter(self._graph.weight_size[fresh].tolist())
        self._placed[fresh] = True
