"""PEFT: Predict Earliest Finish Time list scheduling with resident-weight reservations.

PEFT (Arabnejad & Barbosa 2014) ranks tasks and picks cores with one table, the
Optimistic Cost Table::

    OCT(t, p) = max over successors s of
                min over p' of ( OCT(s, p') + w(s, p') + c̄(t, s) · [p' != p] )

(0 for exit tasks): the cost of the rest of the graph if ``t`` runs on ``p`` and
every later task got its best core with no waiting. ``c̄`` is
``target.mean_transfer_ns(bytes)``. Because ``c̄`` is one number per edge, the
inner minimum is ``min(X_s[p], min(X_s) + c̄)`` with ``X_s = OCT(s, ·) + w(s, ·)``,
so the table costs ``O(E · P)`` instead of the paper's ``O(E · P²)``; the
identity is exact (``c̄ >= 0``), heterogeneous ``core_cost`` included.

Order
    The ready task (all predecessors placed) with the largest ``rank_oct``
    goes next, smaller task id on ties (`list_order`). ``rank_oct`` is the mean
    of the task's OCT row; we rank by the row *sum* (P times the mean), which
    orders identically and stays an exact integer.
Core
    For each eligible core, ``O_EFT = EFT + OCT(t, p)``, where EFT uses the
    insertion policy (earliest idle gap after the data arrive, as in HEFT).
    Smallest ``O_EFT`` wins; ties go to the smaller EFT, then the lower core id.
    Appending after a core's last task is priced for all cores at once; a gap is
    searched only on cores that an index of idle gaps (`_IdleGaps`) says could
    hold the task, whose bound ``ready + w + OCT`` can still reach the best
    ``O_EFT``, in increasing bound order, and only up to the latest start that
    could still tie. The result is the same as scanning every gap.

Resident-weight reservations (seeds: scheduling.md "Capacity and recovery",
scheduling-implementation.md "Priorities, placement, and recovery limits"):

* A task is eligible on a core only if its weights not yet resident there fit the
  core's free capacity (`ResidentWeights`); placing it reserves them.
* When the distinct weights need more than half the fleet's one-copy capacity
  (``2 · sum(weight_size) > sum(capacity)``), placement prefers reuse: if some
  eligible core already holds all of the task's weights, only those cores
  compete on ``O_EFT``. Otherwise every eligible core competes on ``O_EFT``
  (communication and load).
* If a task fits no core, the reservations are rebuilt by the reuse-first
  constructor (`pack_resident_weights`: forward best fit, one reverse
  traversal, at most 16 single-choice replays sharing 65,536 candidate checks)
  on the tasks in largest-weight-first order (slots descending, PEFT order on
  ties; the seeds' "largest-weight-first and shared reuse-first best fit").
  Each core then reserves the union of the weights the constructor put there,
  and PEFT runs again: a task is eligible on every core that reserves all its
  weights and, beyond the seeds, on any other core whose free slots still take
  a replica (`Reservations.reserve`). Keeping only the reserved cores
  concentrated the work: on PIMCOMP-NN's ResNet-18 (16-bit) on arch-a the
  makespan was 250 ms on 60 cores, with replicas 14.1 ms on 168 cores.
  A successful first pass is never replaced. If the
  constructor finds nothing, `NotFoundWithinBudgetError` reports the budget
  spent: a bounded search failed, nothing is proved infeasible.

Transfers: when a target's transfer time depends only on hop distance and
bytes (checked once over all core pairs, ``O(P²)`` like the seeds' cached PEFT
centre distances), `HopTransferRows` prices a row of ``P`` transfers with one
table lookup per distinct byte count; otherwise it asks the target per core.

Cost: ``O(E · P)`` for the table and for the data-ready times, ``O(T log T)``
for the order, plus the gap searches, which can remain superlinear (the seeds
say so too): on 10^5-task layered graphs over 168 cores they dominate the run.
Memory: the ``T x P`` int64 table.

References
----------
H. Arabnejad, J. G. Barbosa, "List scheduling algorithm for heterogeneous systems
by an optimistic cost table", IEEE TPDS 25(3):682-694, 2014.
H. Topcuoglu, S. Hariri, M.-Y. Wu, "Performance-effective and low-complexity task
scheduling for heterogeneous computing", IEEE TPDS 13(3):260-274, 2002.
"""

from __future__ import annotations

import time
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from functools import lru_cache
from typing import ClassVar

import numpy as np

from raptor_cp.errors import NotFoundWithinBudgetError
from raptor_cp.graph import ComputeGraph
from raptor_cp.heuristics.list_common import (
    CoreTimelines,
    Reservations,
    TransferRows,
    data_ready_ns,
    list_order,
    list_solution,
)
from raptor_cp.heuristics.resident_packing import (
    MAX_REPLAYS,
    REPLAY_CHECK_BUDGET,
    pack_resident_weights,
)
from raptor_cp.problems import LatencyProblem, LatencySolution
from raptor_cp.schedule import Schedule
from raptor_cp.targets.base import SchedulingTarget

_NEVER = np.iinfo(np.int64).max // 4
_PROBE_BYTES = (1, 1 << 20)
"""Byte counts at which `HopTransferRows` compares every core pair with its distance class."""


class HopTransferRows(TransferRows):
    """`TransferRows` priced from hop distances: one lookup per (byte count, hops).

    The constructor computes every core pair's hop distance once and checks, for
    two probe sizes (1 byte and 1 MiB: latency- and bandwidth-dominated), that
    ``transfer_ns`` equals the value of one representative pair at the same
    distance; ``O(P²)`` target calls, once per solve. If the target passes, the
    row for ``(src, nbytes)`` is the per-distance cost vector of ``nbytes``
    (memoised per byte count) indexed by ``src``'s hop row; otherwise the exact
    per-core rows of `TransferRows` are used.
    """

    hop_invariant: bool = False
    """True when rows come from the hop-distance tables."""

    def __init__(self, target: SchedulingTarget, cache_sizes: int = 65_536) -> None:
        super().__init__(target)
        cores = target.cores
        hops = np.array(
            [[target.hops(a, b) for b in range(cores)] for a in range(cores)], dtype=np.int64
        )
        distances, first = np.unique(hops, return_index=True)
        pairs = [divmod(int(i), cores) for i in first]
        position = np.searchsorted(distances, hops)

        def by_distance(nbytes: int) -> np.ndarray:
            return np.array([target.transfer_ns(a, b, nbytes) for a, b in pairs], np.int64)

        for nbytes in _PROBE_BYTES:
            exact = np.array(
                [target.transfer_ns(a, b, nbytes) for a in range(cores) for b in range(cores)],
                dtype=np.int64,
            )
            if not np.array_equal(exact, by_distance(nbytes)[position].ravel()):
                return
        costs = lru_cache(maxsize=cache_sizes)(by_distance)

        def row(src: int, nbytes: int) -> np.ndarray:
            return costs(nbytes)[position[src]]

        self.row = row
        self.hop_invariant = True


def _work(graph: ComputeGraph, cores: int) -> np.ndarray:
    """``w(t, p)`` as a read-only ``(T, P)`` array (a broadcast view when homogeneous)."""
    if graph.core_cost is not None:
        return graph.core_cost
    return np.broadcast_to(graph.cost[:, None], (graph.num_tasks, cores))


def optimistic_cost_table(graph: ComputeGraph, target: SchedulingTarget) -> np.ndarray:
    """PEFT's Optimistic Cost Table, ``(T, P)`` int64 (see the module docstring).

    ``OCT(t, p) = max_s min(OCT(s, p) + w(s, p), min_p' (OCT(s, p') + w(s, p')) + c̄(t, s))``,
    which equals the paper's definition because ``c̄ >= 0``. ``O(E · P)``.
    """
    cores = target.cores
    work = _work(graph, cores)
    unique, inverse = np.unique(graph.edge_bytes, return_inverse=True)
    mean_comm = np.array([target.mean_transfer_ns(int(b)) for b in unique], np.int64)[inverse]
    table = np.zeros((graph.num_tasks, cores), dtype=np.int64)
    best_tail = np.zeros(graph.num_tasks, dtype=np.int64)
    dst = graph.edge_dst
    for task in graph.topological_order[::-1].tolist():
        edges = graph.successor_edges(task)
        if edges.size:
            succ = dst[edges]
            same_core = table[succ] + work[succ]
            best_core = best_tail[succ] + mean_comm[edges]
            table[task] = np.minimum(same_core, best_core[:, None]).max(axis=0)
        best_tail[task] = (table[task] + work[task]).min()
    return table


class _IdleGaps:
    """The idle gaps of every core, indexed for insertion queries.

    A core's gaps are its maximal idle intervals before its last finish, in time
    order (per-core sorted lists of starts and ends). A task of duration ``d > 0``
    ready at ``r`` fits a core exactly when one of its gaps is ``>= d`` long and
    ends at or after ``r + d``. ``latest[p, k]`` bounds from above the latest end
    of a gap of core ``p`` at least ``threshold[k]`` long (thresholds grow by
    a factor ~1.09), which makes that test a vectorised necessary condition over all
    cores. Filling a gap leaves ``latest`` stale-high (still an upper bound); a
    search that scans a core to the end without a fit recomputes its row.
    Zero-duration tasks fit between any two intervals and are left to
    `CoreTimelines.gap_start`, which finds them in ``O(log n)``.
    """

    def __init__(self, cores: int) -> None:
        self._start: list[list[int]] = [[] for _ in range(cores)]
        self._end: list[list[int]] = [[] for _ in range(cores)]
        threshold = [1]
        while threshold[-1] < 1 << 61:
            threshold.append(max(threshold[-1] + 1, threshold[-1] * 1091 // 1000))
        self._threshold = np.asarray(threshold, dtype=np.int64)
        self._rows = np.arange(cores)
        self.latest = np.full((cores, self._threshold.shape[0]), -1, dtype=np.int64)

    def _level(self, length: np.ndarray | int) -> np.ndarray:
        """Index of the largest threshold ``<= length`` (-1 for 0)."""
        return np.searchsorted(self._threshold, length, side="right") - 1

    def may_fit(self, ready: np.ndarray, duration: np.ndarray) -> np.ndarray:
        """Per core: False only if no gap can hold ``duration`` from ``ready`` on."""
        level = np.maximum(self._level(duration), 0)
        return (duration == 0) | (self.latest[self._rows, level] >= ready + duration)

    def earliest(self, core: int, ready: int, duration: int, latest_start: int) -> int | None:
        """Earliest start in ``[ready, latest_start]`` of a gap that holds ``duration > 0``."""
        starts, ends = self._start[core], self._end[core]
        for i in range(bisect_left(ends, ready + duration), len(starts)):
            begin = starts[i]
            if begin > latest_start:
                return None
            if begin <= ready or ends[i] - begin >= duration:
                return max(begin, ready)
        # No gap of this core holds the task: tighten its stale `latest` row.
        ends_array = np.asarray(ends, dtype=np.int64)
        level = self._level(ends_array - np.asarray(starts, dtype=np.int64))
        row = np.full(self._threshold.shape[0], -1, dtype=np.int64)
        np.maximum.at(row, level, ends_array)
        self.latest[core] = np.maximum.accumulate(row[::-1])[::-1]
        return None

    def occupy(self, core: int, start: int, finish: int, last_finish: int) -> None:
        """Record ``[start, finish)`` on ``core`` whose last finish was ``last_finish``."""
        starts, ends = self._start[core], self._end[core]
        if start >= last_finish:
            if start > last_finish:
                starts.append(last_finish)
                ends.append(start)
                self.latest[core, : int(self._level(start - last_finish)) + 1] = start
            return
        j = bisect_right(ends, start)
        if j == len(ends) or starts[j] > start:
            return  # a zero-duration task between two adjacent intervals
        pieces = [(a, b) for a, b in ((starts[j], start), (finish, ends[j])) if a < b]
        starts[j : j + 1] = [a for a, _ in pieces]
        ends[j : j + 1] = [b for _, b in pieces]


@dataclass
class _Counters:
    candidate_checks: int = 0
    gap_searches: int = 0
    passes: int = 0
    extra: dict[str, object] = field(default_factory=dict)


def _peft_pass(
    problem: LatencyProblem,
    order: list[int],
    table: np.ndarray,
    rows: TransferRows,
    reservations: Reservations,
    counters: _Counters,
    name: str = "peft",
) -> Schedule | int:
    """Place every task of ``order``; return the schedule, or the first task that fits no core."""
    graph, target = problem.graph, problem.target
    cores = target.cores
    work = _work(graph, cores)
    core = np.full(graph.num_tasks, -1, dtype=np.int64)
    start = np.zeros(graph.num_tasks, dtype=np.int64)
    finish = np.zeros(graph.num_tasks, dtype=np.int64)
    timelines = CoreTimelines(cores)
    gaps = _IdleGaps(cores)
    counters.passes += 1
    for task in order:
        eligible = reservations.eligible(task)
        if not eligible.any():
            return task
        counters.candidate_checks += int(np.count_nonzero(eligible))
        duration = work[task]
        optimistic = table[task]
        ready = data_ready_ns(graph, task, core, finish, rows, cores)
        begin = timelines.append_starts(ready)
        total = np.where(eligible, begin + duration + optimistic, _NEVER)
        # Appending is exact where the core is free by `ready`; elsewhere a gap may
        # start earlier, which matters only if one can hold the task and its bound
        # ``ready + w + OCT`` can still reach the best O_EFT.
        bound = ready + duration + optimistic
        gappy = eligible & (timelines.last_finish > ready) & (bound <= total.min())
        gappy = np.flatnonzero(gappy & gaps.may_fit(ready, duration))
        if gappy.size:
            counters.gap_searches += _search_gaps(
                timelines, gaps, gappy, ready, duration, optimistic, bound, begin, total
            )
        best = total.min()
        tied = np.flatnonzero(total == best)
        chosen = int(tied[np.argmin(begin[tied] + duration[tied])])
        core[task] = chosen
        start[task] = begin[chosen]
        finish[task] = begin[chosen] + duration[chosen]
        gaps.occupy(chosen, int(start[task]), int(finish[task]), int(timelines.last_finish[chosen]))
        timelines.place(chosen, task, int(start[task]), int(finish[task]))
        reservations.add(task, chosen)
    counters.extra["estimated_makespan_ns"] = int(finish.max()) if graph.num_tasks else 0
    return Schedule(timelines.core_order(), start, name)


def _search_gaps(
    timelines: CoreTimelines,
    gaps: _IdleGaps,
    cores: np.ndarray,
    ready: np.ndarray,
    duration: np.ndarray,
    optimistic: np.ndarray,
    bound: np.ndarray,
    begin: np.ndarray,
    total: np.ndarray,
) -> int:
    """Price insertion into idle gaps on ``cores``, updating ``begin`` and ``total`` in place.

    Cores are visited by increasing ``bound``; the visit stops once the bound
    exceeds the best ``total`` found so far. Returns the number of gap searches.
    """
    cores = cores[np.argsort(bound[cores], kind="stable")]
    best = int(total.min())
    searches = 0
    for p, low, at, length, tail in zip(
        cores.tolist(),
        bound[cores].tolist(),
        ready[cores].tolist(),
        duration[cores].tolist(),
        optimistic[cores].tolist(),
        strict=True,
    ):
        if low > best:
            break
        searches += 1
        if length:
            found = gaps.earliest(p, at, length, best - length - tail)
        else:
            found = timelines.gap_start(p, at, 0)
        if found is None:
            continue
        begin[p] = found
        total[p] = found + length + tail
        best = min(best, int(total[p]))
    return searches


def _constructor_reservations(
    problem: LatencyProblem, order: list[int], failed: int, max_replays: int, budget: int
) -> tuple[np.ndarray, dict[str, object]]:
    """Reserved weights per core from the reuse-first constructor (``(W, P)`` bool)."""
    graph, target = problem.graph, problem.target
    slots = np.array(
        [int(graph.weight_size[list(set(w))].sum()) for w in graph.task_weights], np.int64
    )
    by_slots = np.asarray(order, dtype=np.int64)
    by_slots = by_slots[np.argsort(-slots[by_slots], kind="stable")]
    capacities = [target.capacity(p) for p in range(target.cores)]
    packing = pack_resident_weights(
        by_slots.tolist(),
        graph.task_weights,
        graph.weight_size,
        capacities,
        max_replays=max_replays,
        replay_check_budget=budget,
    )
    if packing.cores is None:
        raise NotFoundWithinBudgetError(
            f"peft: task {graph.names[failed]!r} fits no core of {target.name}; a "
            f"resident-weight placement of {graph.name} was not found within budget "
            f"({packing.constructions} constructions, {packing.candidate_checks} "
            "candidate checks)"
        )
    reserved = np.zeros((graph.num_weights, target.cores), dtype=bool)
    for task, p in zip(by_slots.tolist(), packing.cores, strict=True):
        reserved[list(graph.task_weights[task]), p] = True
    stats = {
        "constructions": packing.constructions,
        "constructor_checks": packing.candidate_checks,
        "recovered_task": graph.names[failed],
    }
    return reserved, stats


def peft_schedule(
    problem: LatencyProblem,
    max_replays: int = MAX_REPLAYS,
    replay_check_budget: int = REPLAY_CHECK_BUDGET,
    reserved: np.ndarray | None = None,
    priority: np.ndarray | None = None,
    name: str = "peft",
) -> tuple[Schedule, dict[str, object]]:
    """Run PEFT on ``problem``: the schedule (with PEFT's starts) and its counters.

    ``reserved`` (``(W, P)`` bool, e.g. a `replication.ReplicationPlan`) makes
    those weights resident before the first task, as the constructor's
    reservations are after a failed pass. ``priority`` replaces ``rank_oct`` as
    the list order (the portfolio's rank variants); None keeps PEFT's. ``name``
    labels the schedule.

    Raises
    ------
    NotFoundWithinBudgetError
        When a task fits no core and the reuse-first constructor finds no
        placement within its budget.
    """
    graph, target = problem.graph, problem.target
    table = optimistic_cost_table(graph, target)
    order = list_order(graph, table.sum(axis=1) if priority is None else priority).tolist()
    rows = HopTransferRows(target)
    counters = _Counters()
    tracked = Reservations(graph, target)
    if reserved is not None:
        tracked.reserve(reserved)
    result = _peft_pass(problem, order, table, rows, tracked, counters, name)
    counters.extra["prefer_reuse"] = tracked.prefer_reuse
    counters.extra["recovery"] = isinstance(result, int)
    if isinstance(result, int):
        reserved, stats = _constructor_reservations(
            problem, order, result, max_replays, replay_check_budget
        )
        counters.extra.update(stats)
        seeded = Reservations(graph, target)
        seeded.reserve(reserved)
        result = _peft_pass(problem, order, table, rows, seeded, counters, name)
        assert isinstance(result, Schedule), "constructor reservations admit every task"
    details: dict[str, object] = {
        "candidate_checks": counters.candidate_checks,
        "gap_searches": counters.gap_searches,
        "passes": counters.passes,
        "hop_invariant_transfers": rows.hop_invariant,
        **counters.extra,
    }
    return result, details


@dataclass(frozen=True)
class PeftScheduler:
    """PEFT latency scheduler with resident-weight reservations (module docstring).

    Parameters
    ----------
    max_replays, replay_check_budget:
        Limits of the reuse-first recovery (seeds: 16 replays, 65,536 checks).
    """

    name: ClassVar[str] = "peft"
    max_replays: int = MAX_REPLAYS
    replay_check_budget: int = REPLAY_CHECK_BUDGET

    def solve(self, problem: LatencyProblem) -> LatencySolution:
        """Schedule ``problem``; objective is `evaluate`'s makespan, bound the lower bounds'."""
        began = time.perf_counter()
        schedule, details = peft_schedule(problem, self.max_replays, self.replay_check_budget)
        return list_solution(problem, schedule, self.name, began, details)
