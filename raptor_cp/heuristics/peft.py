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
    searched only on cores that an index of idle gaps (`IdleGaps`) says could
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
Memory: the ``T x P`` int64 table with per-core costs, a ``T`` vector without
(`optimistic_cost_table`); ``O(P)`` per core otherwise (timelines, the idle-gap
index with one row per core, transfer rows).

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
    uniform_price,
    uniform_rows,
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

    On a target with `SchedulingTarget.uniform_transfers` the rows are those of
    `uniform_rows` (``O(P)``, no table; trivially hop-invariant). Otherwise the
    constructor computes every core pair's hop distance once and checks, for
    two probe sizes (1 byte and 1 MiB: latency- and bandwidth-dominated), that
    ``transfer_ns`` equals the value of one representative pair at the same
    distance; ``O(P²)`` target calls, once per solve, or one array each from an
    exchange machine's ``hop_matrix()`` and ``transfer_matrix_ns(nbytes)``
    (`SchedulingTarget.exchange`), and a ``P x P`` int32 table. If the target
    passes, the row for ``(src, nbytes)`` is the per-distance cost vector of
    ``nbytes`` (memoised per byte count) indexed by ``src``'s hop row; otherwise
    the exact per-core rows of `TransferRows` are used.
    """

    hop_invariant: bool = False
    """True when rows come from the hop-distance tables (or are uniform)."""
    two_classes: bool = False
    """True when, besides, the only distances are 0 (the same core) and 1 (any other)."""

    def __init__(self, target: SchedulingTarget, cache_sizes: int = 65_536) -> None:
        super().__init__(target)
        cores = self._cores = target.cores
        if target.uniform_transfers:
            price = uniform_price(target, cache_sizes)
            self.row = uniform_rows(target, cache_sizes)
            self._costs = lambda nbytes, direct=False: np.array(
                [0, price(nbytes, direct)], np.int64
            )
            self.hop_invariant = True
            self.two_classes = cores > 1
            return
        machine = target.exchange()
        pair_matrix = None if machine is None else machine.transfer_matrix_ns
        if machine is not None:
            hops = np.asarray(machine.hop_matrix(), dtype=np.int64)
        else:
            hops = np.array(
                [[target.hops(a, b) for b in range(cores)] for a in range(cores)], dtype=np.int64
            )
        distances, first = np.unique(hops, return_index=True)
        pairs = [divmod(int(i), cores) for i in first]
        position = np.searchsorted(distances, hops).astype(np.int32)
        only_self_at_zero = bool(np.array_equal(hops == 0, np.eye(cores, dtype=bool)))
        del hops

        def by_distance(nbytes: int, direct: bool = False) -> np.ndarray:
            return np.array([target.transfer_ns(a, b, nbytes, direct) for a, b in pairs], np.int64)

        for nbytes in _PROBE_BYTES:
            reference = by_distance(nbytes)
            if pair_matrix is not None:
                exact = np.asarray(pair_matrix(nbytes), dtype=np.int64)
                if not np.array_equal(exact, reference[position]):
                    return
                continue
            for a in range(cores):
                row = [target.transfer_ns(a, b, nbytes) for b in range(cores)]
                if not np.array_equal(row, reference[position[a]]):
                    return
        costs = lru_cache(maxsize=cache_sizes)(by_distance)

        def row(src: int, nbytes: int, direct: bool = False) -> np.ndarray:
            return costs(nbytes, direct)[position[src]]

        self.row = row
        self._costs = costs
        self.hop_invariant = True
        self.two_classes = distances.tolist() == [0, 1] and only_self_at_zero

    def data_ready(
        self, graph: ComputeGraph, task: int, core: np.ndarray, finish: np.ndarray
    ) -> np.ndarray:
        """`data_ready_ns`, in ``O(k + P)`` numpy work for ``k`` inputs with two classes.

        With two classes a predecessor reaches its own core at ``finish + c0`` and
        every other core at ``finish + c1``; so every core gets the largest
        ``finish + c1`` except the core of that largest one, which gets the
        largest from other cores, and each predecessor's core also its own
        ``finish + c0``. Equal to `data_ready_ns` (same maxima, same ints).
        """
        cores = self._cores
        if not self.two_classes:
            return data_ready_ns(graph, task, core, finish, self, cores)
        edges = graph.predecessor_edges(task)
        ready = np.zeros(cores, dtype=np.int64)
        if not edges.size:
            return ready
        pred = graph.edge_src[edges]
        costs = np.array(
            [
                self._costs(b, d)
                for b, d in zip(
                    graph.edge_bytes[edges].tolist(), graph.edge_direct[edges].tolist(), strict=True
                )
            ],
            np.int64,
        )
        where, done = core[pred], finish[pred]
        far = done + costs[:, 1]
        best = int(np.argmax(far))
        home = int(where[best])
        away = far[where != home]
        ready[:] = far[best]
        ready[home] = away.max() if away.size else 0
        np.maximum.at(ready, where, done + costs[:, 0])
        return ready


def _work(graph: ComputeGraph, cores: int) -> np.ndarray:
    """``w(t, p)`` as a read-only ``(T, P)`` array (a broadcast view when homogeneous)."""
    if graph.core_cost is not None:
        return graph.core_cost
    return np.broadcast_to(graph.cost[:, None], (graph.num_tasks, cores))


def optimistic_cost_table(graph: ComputeGraph, target: SchedulingTarget) -> np.ndarray:
    """PEFT's Optimistic Cost Table, ``(T, P)`` int64 (see the module docstring).

    ``OCT(t, p) = max_s min(OCT(s, p) + w(s, p), min_p' (OCT(s, p') + w(s, p')) + c̄(t, s))``,
    which equals the paper's definition because ``c̄ >= 0``. ``O(E · P)``.

    On homogeneous cores (no ``core_cost``) every row is constant: if each
    successor's row is, ``min(X, X + c̄) = X`` makes ``t``'s row constant too. The
    table is then one column, ``OCT(t) = max_s OCT(s) + w(s)``, returned as a
    read-only ``(T, P)`` broadcast view: ``O(E)`` time and ``O(T)`` memory, the
    same values.
    """
    cores = target.cores
    if graph.core_cost is None:
        column = np.zeros(graph.num_tasks, dtype=np.int64)
        for task in graph.topological_order[::-1].tolist():
            succ = graph.edge_dst[graph.successor_edges(task)]
            if succ.size:
                column[task] = (column[succ] + graph.cost[succ]).max()
        return np.broadcast_to(column[:, None], (graph.num_tasks, cores))
    work = _work(graph, cores)
    keys = np.stack([graph.edge_bytes, graph.edge_direct.astype(np.int64)], axis=1)
    unique, inverse = np.unique(keys.reshape(-1, 2), axis=0, return_inverse=True)
    mean_comm = np.array(
        [target.mean_transfer_ns(int(b), direct=bool(d)) for b, d in unique.tolist()], np.int64
    )[inverse.reshape(-1)]
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


def _rank(graph: ComputeGraph, table: np.ndarray) -> np.ndarray:
    """PEFT's priority: the OCT row sum, or the one column (same order) without per-core costs."""
    return table.sum(axis=1) if graph.core_cost is not None else table[:, 0]


class IdleGaps:
    """The idle gaps of every core, indexed for insertion queries.

    A core's gaps are its maximal idle intervals before its last finish, in time
    order (per-core sorted lists of starts and ends). A task of duration ``d > 0``
    ready at ``r`` fits a core exactly when one of its gaps is ``>= d`` long and
    ends at or after ``r + d``. ``latest[p, k]`` bounds from above the latest end
    of a gap of core ``p`` at least ``threshold[k]`` long (thresholds grow by
    a factor ~1.09), which makes that test a vectorised necessary condition over all
    cores. Filling a gap leaves ``latest`` stale-high (still an upper bound); a
    search that scans a core to the end without a fit recomputes its row.
    Thresholds stop at the first one above the ``longest`` duration queried (the
    last level also holds every longer gap), so the index takes ``P x L`` int64
    with ``L`` about ``12 + 11.4 log10(longest)``: 148 levels for 1 ms tasks.
    Zero-duration tasks fit between any two intervals and are left to
    `CoreTimelines.gap_start`, which finds them in ``O(log n)``.
    """

    def __init__(self, cores: int, longest: int) -> None:
        self._start: list[list[int]] = [[] for _ in range(cores)]
        self._end: list[list[int]] = [[] for _ in range(cores)]
        threshold = [1]
        while threshold[-1] <= longest:
            threshold.append(max(threshold[-1] + 1, threshold[-1] * 1091 // 1000))
        self._threshold = np.asarray(threshold, dtype=np.int64)
        self._rows = np.arange(cores)
        self.latest = np.full((cores, self._threshold.shape[0]), -1, dtype=np.int64)

    def _level(self, length: np.ndarray | int) -> np.ndarray:
        """Index of the largest threshold ``<= length`` (-1 for 0)."""
        return np.searchsorted(self._threshold, length, side="right") - 1

    def may_fit(self, ready: np.ndarray, duration: np.ndarray | int) -> np.ndarray:
        """Per core: False only if no gap can hold ``duration`` (per core, or one for all)."""
        level = np.maximum(self._level(duration), 0)
        latest = (
            self.latest[:, int(level)] if np.ndim(level) == 0 else self.latest[self._rows, level]
        )
        return (duration == 0) | (latest >= ready + duration)

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
    rows: HopTransferRows,
    reservations: Reservations,
    counters: _Counters,
    name: str = "peft",
) -> Schedule | int:
    """Place every task of ``order``; return the schedule, or the first task that fits no core.

    On homogeneous cores a task's duration and OCT row are constants and are used
    as scalars (the same sums, fewer ``O(P)`` array operations).
    """
    graph, target = problem.graph, problem.target
    cores = target.cores
    work = _work(graph, cores)
    uniform = graph.core_cost is None
    costs, column = graph.cost.tolist(), table[:, 0].tolist()
    core = np.full(graph.num_tasks, -1, dtype=np.int64)
    start = np.zeros(graph.num_tasks, dtype=np.int64)
    finish = np.zeros(graph.num_tasks, dtype=np.int64)
    timelines = CoreTimelines(cores)
    longest = (graph.cost if uniform else graph.core_cost).max(initial=0)
    gaps = IdleGaps(cores, int(longest))
    counters.passes += 1
    for task in order:
        eligible = reservations.eligible(task)
        if not eligible.any():
            return task
        counters.candidate_checks += int(np.count_nonzero(eligible))
        duration: np.ndarray | int = costs[task] if uniform else work[task]
        optimistic: np.ndarray | int = column[task] if uniform else table[task]
        ready = rows.data_ready(graph, task, core, finish)
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
                timelines,
                gaps,
                gappy,
                ready,
                np.broadcast_to(duration, (cores,)),
                np.broadcast_to(optimistic, (cores,)),
                bound,
                begin,
                total,
            )
        best = total.min()
        tied = np.flatnonzero(total == best)
        length = np.broadcast_to(duration, (cores,))
        chosen = int(tied[np.argmin(begin[tied] + length[tied])])
        core[task] = chosen
        start[task] = begin[chosen]
        finish[task] = begin[chosen] + length[chosen]
        gaps.occupy(chosen, int(start[task]), int(finish[task]), int(timelines.last_finish[chosen]))
        timelines.place(chosen, task, int(start[task]), int(finish[task]))
        reservations.add(task, chosen)
    counters.extra["estimated_makespan_ns"] = int(finish.max()) if graph.num_tasks else 0
    return Schedule(timelines.core_order(), start, name)


def _search_gaps(
    timelines: CoreTimelines,
    gaps: IdleGaps,
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
    name: str = "peft",
) -> tuple[Schedule, dict[str, object]]:
    """Run PEFT on ``problem``: the schedule (with PEFT's starts) and its counters.

    ``reserved`` (``(W, P)`` bool, e.g. a `replication.ReplicationPlan`) makes
    those weights resident before the first task, as the constructor's
    reservations are after a failed pass. ``name`` labels the schedule.

    Raises
    ------
    NotFoundWithinBudgetError
        When a task fits no core and the reuse-first constructor finds no
        placement within its budget.
    """
    graph, target = problem.graph, problem.target
    table = optimistic_cost_table(graph, target)
    order = list_order(graph, _rank(graph, table)).tolist()
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
