"""Build the `ExchangePlan` of a schedule on an IPU: supersteps, payloads, transfers, addresses.

Supersteps. The schedule's per-tile order is kept; a task runs in the earliest
superstep after its tile's previous task and after every producer on another
tile has crossed an exchange::

    step(t) = max(step(previous task on t's tile),
                  max over producers p of step(p) + (1 if p is on another tile else 0))

Exchange phase ``k`` lies between compute supersteps ``k`` and ``k + 1``. A
cross-tile edge ``p -> t`` is sent in phase ``step(p)``, as soon as ``p`` is done,
so that every tile needing ``p``'s data gets it from one multicast.

Payloads. Edges of one producer carrying the same byte count are one payload,
multicast once to every tile that needs it (each tile receives it once however
many of its tasks read it). This is exact for the fan-out lowering creates
(all-rows windows, column blocks reading the same input); with sliding windows
over unaligned lanes two different slices of equal size would be merged.
Lengths are whole 32-bit words.

Addresses (before placement). A tile keeps one output allocation per operation
it computes, holding its tasks' outputs at increasing offsets in execution
order (a task's output is as large as its largest outgoing edge); a send reads
its producer's output from the start. A tile keeps one receive allocation per
producer operation whose data it receives. A tile's receives are grouped by
sending tile (ascending), each sender's in its send order, and land at
increasing offsets in that order: what one sender sends back to back lands
back to back.

Transfers (logical-span coalescing, seed "Exchange footprint model"). A
tile's consecutive payloads that go to the same receivers and lie one after
the other in its memory therefore also lie one after the other on every
receiver: they are one transfer, a `Send` with their summed length and one
`Receive` per receiver, so the footprint estimate and the encoder both see the
concrete spans. Sends of a tile are listed in producer execution order.

Repeat bodies. Consecutive phases whose rows are identical except that every
address advances by the same stride from one phase to the next, with identical
compute between them (per tile, the same operations and costs in the same
order), are folded into one `Repeat` whose body is the first phase; pointers
with a non-zero stride are iterated.

`bsp_makespan_ns` prices the plan as bulk-synchronous supersteps.

Cost: ``O(E log E)`` numpy work for ``E`` edges (supersteps level by level,
payloads, transfers and addresses sorted once), plus one `Allocation` object per
allocation.
"""

from __future__ import annotations

import numpy as np

from raptor_cp.errors import CapabilityUnavailableError, ScheduleViolationError
from raptor_cp.evaluation import placement, task_costs
from raptor_cp.exchange.plan import (
    Allocation,
    ExchangePlan,
    Phase,
    ReceiveColumns,
    Repeat,
    SendColumns,
    Step,
    distinct,
)
from raptor_cp.problems import LatencyProblem
from raptor_cp.schedule import Schedule
from raptor_cp.targets.base import ExchangeTarget
from raptor_cp.targets.registry import preset_names

WORD_BYTES = 4


def _ranges(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The concatenation of ``range(lo[i], hi[i])`` over ``i``."""
    counts = hi - lo
    return np.repeat(lo - (np.cumsum(counts) - counts), counts) + np.arange(int(counts.sum()))


def _first_seen(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ids numbering distinct ``keys`` by first occurrence: (id per entry, first index per id)."""
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    rank = np.empty_like(first)
    rank[np.argsort(first, kind="stable")] = np.arange(first.size)
    return rank[inverse.ravel()], np.sort(first)


def _exclusive_sums(group: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Per entry, the sum of ``values`` over earlier entries of its group (entry order)."""
    order = np.argsort(group, kind="stable")
    total = np.cumsum(values[order])
    sorted_group = group[order]
    first = np.searchsorted(sorted_group, sorted_group, side="left")
    result = np.empty_like(values)
    result[order] = total - values[order] - np.where(first > 0, total[first - 1], 0)
    return result


def supersteps(problem: LatencyProblem, schedule: Schedule) -> np.ndarray:
    """The superstep of every task (see the module docstring).

    Raises
    ------
    ScheduleViolationError
        When the schedule places a task wrongly or its core order contradicts
        the dependencies.
    """
    core, _ = placement(problem, schedule)
    return _supersteps(problem, schedule, core)


def _supersteps(problem: LatencyProblem, schedule: Schedule, core: np.ndarray) -> np.ndarray:
    """Longest paths over edges and core-order links, one topological level at a time."""
    graph = problem.graph
    n = graph.num_tasks
    chains = [np.asarray(order, dtype=np.int64) for order in schedule.core_order if len(order) > 1]
    empty = np.zeros(0, dtype=np.int64)
    src = np.concatenate([graph.edge_src, *(c[:-1] for c in chains), empty])
    dst = np.concatenate([graph.edge_dst, *(c[1:] for c in chains), empty])
    weight = np.zeros(src.size, dtype=np.int64)
    weight[: graph.num_edges] = core[graph.edge_src] != core[graph.edge_dst]
    by_src = np.argsort(src, kind="stable")
    bounds = np.searchsorted(src[by_src], np.arange(n + 1))
    waiting = np.bincount(dst, minlength=n)
    step = np.zeros(n, dtype=np.int64)
    frontier = np.flatnonzero(waiting == 0)
    done = 0
    while frontier.size:
        done += frontier.size
        edges = by_src[_ranges(bounds[frontier], bounds[frontier + 1])]
        heads = dst[edges]
        np.maximum.at(step, heads, step[src[edges]] + weight[edges])
        np.subtract.at(waiting, heads, 1)
        ready = np.sort(heads[waiting[heads] == 0])
        frontier = ready[np.diff(ready, prepend=-1) != 0]
    if done < n:
        stuck = int(np.flatnonzero(waiting > 0)[0])
        raise ScheduleViolationError(
            f"deadlock: task {graph.names[stuck]!r} waits on a cycle of dependencies and core order"
        )
    return step


def build_exchange_plan(problem: LatencyProblem, schedule: Schedule) -> ExchangePlan:
    """The exchange plan of ``schedule`` (see the module docstring).

    Raises
    ------
    CapabilityUnavailableError
        When ``problem.target`` is not a bulk-synchronous exchange machine
        (`SchedulingTarget.exchange` is None).
    ScheduleViolationError
        When the schedule is not a valid placement and order of the graph.
    """
    target = problem.target.exchange()
    if target is None:
        raise CapabilityUnavailableError(
            f"exchange plans need an ipu target ({', '.join(preset_names('ipu'))}), "
            f"got {problem.target.name}",
            target=problem.target.name,
            capability="exchange",
        )
    core, slot = placement(problem, schedule)
    step = _supersteps(problem, schedule, core)
    builder = _Builder(problem, schedule, core, slot, step)
    phases = builder.phases()
    steps = _fold_repeats(phases, builder.compute_signatures())
    return ExchangePlan(
        name=problem.graph.name,
        tiles=target.cores,
        max_transfer_words=target.max_transfer_words,
        allocations=tuple(builder.allocations),
        steps=tuple(steps),
        compute_ns=tuple(builder.compute()),
    )


def _empty_phase(index: int) -> Phase:
    none = np.zeros(0, dtype=np.int64)
    sends = SendColumns(
        none, none, none, none, none, none, np.zeros(0, bool), np.zeros(1, np.int64), none
    )
    return Phase.from_columns(
        index, sends, ReceiveColumns(none, none, none, none, none, none, none)
    )


class _Builder:
    """Allocations, payloads, transfers and phases of one schedule."""

    def __init__(
        self,
        problem: LatencyProblem,
        schedule: Schedule,
        core: np.ndarray,
        slot: np.ndarray,
        step: np.ndarray,
    ) -> None:
        self.graph = problem.graph
        self.schedule = schedule
        self.tiles = len(schedule.core_order)
        self.core, self.slot, self.step = core, slot, step
        self.cost = task_costs(problem, core)
        self.allocations: list[Allocation] = []
        # tasks in (tile, execution order)
        self.by_tile = np.fromiter(
            (t for order in schedule.core_order for t in order), dtype=np.int64
        )

    def new_allocations(self, kind: str, operation: np.ndarray, tile: np.ndarray) -> np.ndarray:
        """Allocation ids for (operation, tile) entries, numbered by first occurrence."""
        local, first = _first_seen(operation * self.tiles + tile)
        names = self.graph.operation_names
        base = len(self.allocations)
        self.allocations += [
            Allocation(t, f"{names[op]} {kind}")
            for op, t in zip(operation[first].tolist(), tile[first].tolist(), strict=True)
        ]
        return base + local

    def output_addresses(self) -> tuple[np.ndarray, np.ndarray]:
        """(allocation, offset) of each task's output in its operation's allocation on its tile."""
        graph = self.graph
        size = np.zeros(graph.num_tasks, dtype=np.int64)
        np.maximum.at(size, graph.edge_src, graph.edge_bytes)
        nbytes = WORD_BYTES * (-(-size // WORD_BYTES))
        tasks = self.by_tile[nbytes[self.by_tile] > 0]
        allocation = np.full(graph.num_tasks, -1, dtype=np.int64)
        offset = np.zeros(graph.num_tasks, dtype=np.int64)
        allocation[tasks] = self.new_allocations("out", graph.operation[tasks], self.core[tasks])
        offset[tasks] = _exclusive_sums(allocation[tasks], nbytes[tasks])
        return allocation, offset

    def phases(self) -> list[Phase]:
        """Every phase: payloads, coalesced transfers, sends and receives (module docstring)."""
        graph, tiles = self.graph, self.tiles
        core, step, slot = self.core, self.step, self.slot
        count = int(step.max(initial=0))
        src, dst, nbytes = graph.edge_src, graph.edge_dst, graph.edge_bytes
        cross = np.flatnonzero((core[src] != core[dst]) & (nbytes > 0))
        if not cross.size:
            return [_empty_phase(k) for k in range(count)]
        s, b, tile = src[cross], nbytes[cross], core[dst[cross]]
        # One payload per (producer, bytes), numbered in (phase, tile, producer slot,
        # bytes, edge) order, the send order of each tile.
        send_order = np.lexsort((cross, b, slot[s], core[s], step[s]))
        payload_of_sorted, first = _first_seen((s * (int(b.max()) + 1) + b)[send_order])
        payload = np.empty(cross.size, dtype=np.int64)
        payload[send_order] = payload_of_sorted
        pairs = distinct(payload * tiles + tile)
        starts = np.searchsorted(pairs // tiles, np.arange(first.size + 1))
        receivers = pairs % tiles
        head = send_order[first]
        task = s[head]
        words = -(-b[head] // WORD_BYTES)
        out_allocation, out_offset = self.output_addresses()
        run, heads = self._coalesce(task, words, starts, receivers, out_allocation, out_offset)
        runs = heads.size
        run_words = np.zeros(runs, dtype=np.int64)
        np.add.at(run_words, run, words)
        run_task = task[heads]
        run_fanout = (starts[heads + 1] - starts[heads]).astype(np.int64)
        run_receivers = receivers[_ranges(starts[heads], starts[heads + 1])]
        # Receives: grouped by sender (runs are numbered in send order), one
        # allocation per (producer operation, receiving tile).
        entry_run = np.repeat(np.arange(runs), run_fanout)
        entry_phase = step[run_task][entry_run]
        order = np.lexsort((entry_run, run_receivers, entry_phase))
        entry_run, entry_tile, entry_phase = (
            entry_run[order],
            run_receivers[order],
            entry_phase[order],
        )
        allocation = self.new_allocations("in", graph.operation[run_task][entry_run], entry_tile)
        offset = _exclusive_sums(allocation, WORD_BYTES * run_words[entry_run])
        sends = SendColumns(
            tile=core[run_task],
            payload=np.arange(runs, dtype=np.int64),
            words=run_words,
            allocation=out_allocation[run_task],
            offset=out_offset[run_task],
            stride=np.zeros(runs, dtype=np.int64),
            paired=np.zeros(runs, dtype=bool),
            receivers_start=np.concatenate(([0], np.cumsum(run_fanout))),
            receivers=run_receivers,
        )
        receives = ReceiveColumns(
            tile=entry_tile,
            payload=entry_run,
            sender=core[run_task][entry_run],
            words=run_words[entry_run],
            allocation=allocation,
            offset=offset,
            stride=np.zeros(entry_run.size, dtype=np.int64),
        )
        send_phase = step[run_task]
        phase_ids = np.arange(count + 1)
        s_cut = np.searchsorted(send_phase, phase_ids)
        r_cut = np.searchsorted(entry_phase, phase_ids)
        return [
            Phase.from_columns(
                k,
                _slice_sends(sends, s_cut[k], s_cut[k + 1]),
                _slice(receives, r_cut[k], r_cut[k + 1]),
            )
            for k in range(count)
        ]

    def _coalesce(
        self,
        task: np.ndarray,
        words: np.ndarray,
        starts: np.ndarray,
        receivers: np.ndarray,
        out_allocation: np.ndarray,
        out_offset: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Runs of payloads sent as one transfer: (run of each payload, first payload of each run).

        Payload ``p`` joins ``p - 1``'s run when both leave the same tile in the same
        phase for the same receivers and ``p``'s data starts where ``p - 1``'s ends.
        """
        fanout = np.diff(starts)
        same_set = np.zeros(task.size, dtype=bool)
        candidates = np.flatnonzero(fanout[1:] == fanout[:-1]) + 1
        if candidates.size:
            positions = _ranges(starts[candidates], starts[candidates + 1])
            shift = np.repeat(fanout[candidates], fanout[candidates])
            differs = receivers[positions] != receivers[positions - shift]
            owner = np.repeat(np.arange(candidates.size), fanout[candidates])
            same_set[candidates] = np.bincount(owner, differs, minlength=candidates.size) == 0
        allocation, offset = out_allocation[task], out_offset[task]
        joined = np.zeros(task.size, dtype=bool)
        joined[1:] = (
            same_set[1:]
            & (self.step[task[1:]] == self.step[task[:-1]])
            & (self.core[task[1:]] == self.core[task[:-1]])
            & (allocation[1:] == allocation[:-1])
            & (offset[1:] == offset[:-1] + WORD_BYTES * words[:-1])
        )
        return np.cumsum(~joined) - 1, np.flatnonzero(~joined)

    def compute(self) -> list[int]:
        """Busiest tile's compute time in each superstep."""
        steps = int(self.step.max(initial=0)) + 1
        busy = np.zeros(steps * self.tiles, dtype=np.int64)
        np.add.at(busy, self.step * self.tiles + self.core, self.cost)
        return busy.reshape(steps, self.tiles).max(axis=1).tolist()

    def compute_signatures(self) -> list[bytes]:
        """Per superstep, each tile's (operation, cost) sequence: the Repeat compute check."""
        tasks = self.by_tile
        step = self.step[tasks]
        order = np.argsort(step, kind="stable")  # by step, then tile and execution order
        tasks, step = tasks[order], step[order]
        rows = np.stack((self.core[tasks], self.graph.operation[tasks], self.cost[tasks]), axis=1)
        cut = np.searchsorted(step, np.arange(int(self.step.max(initial=0)) + 2))
        return [rows[cut[k] : cut[k + 1]].tobytes() for k in range(cut.size - 1)]


def _slice_sends(sends: SendColumns, lo: int, hi: int) -> SendColumns:
    a, b = int(sends.receivers_start[lo]), int(sends.receivers_start[hi])
    return SendColumns(
        tile=sends.tile[lo:hi],
        payload=sends.payload[lo:hi],
        words=sends.words[lo:hi],
        allocation=sends.allocation[lo:hi],
        offset=sends.offset[lo:hi],
        stride=sends.stride[lo:hi],
        paired=sends.paired[lo:hi],
        receivers_start=sends.receivers_start[lo : hi + 1] - a,
        receivers=sends.receivers[a:b],
    )


def _slice(receives: ReceiveColumns, lo: int, hi: int) -> ReceiveColumns:
    return ReceiveColumns(
        *(getattr(receives, name)[lo:hi] for name in ReceiveColumns.__dataclass_fields__)
    )


def _strides(a: Phase, b: Phase) -> tuple[np.ndarray, np.ndarray] | None:
    """How far every pointer advances from ``a`` to ``b``; None when they differ otherwise."""
    x, y = a.sends, b.sends
    if len(x) != len(y) or len(a.receives) != len(b.receives):
        return None
    same = ("tile", "words", "paired", "allocation", "receivers_start", "receivers")
    if not all(np.array_equal(getattr(x, f), getattr(y, f)) for f in same):
        return None
    u, v = a.receives, b.receives
    if not all(
        np.array_equal(getattr(u, f), getattr(v, f))
        for f in ("tile", "sender", "words", "allocation")
    ):
        return None
    return y.offset - x.offset, v.offset - u.offset


def _fold_repeats(phases: list[Phase], compute: list[bytes]) -> list[Step]:
    """Fold runs of phases that repeat with constant strides (see the module docstring).

    Phase ``j`` and the compute superstep ``j + 1`` after it form one iteration;
    a run extends from phase ``j`` to ``j + 1`` when the strides between them
    equal the run's and superstep ``j + 2`` computes what superstep ``j + 1`` did.
    Runs are taken greedily from the first phase.
    """
    steps: list[Step] = []
    i = 0
    while i < len(phases):
        j, strides = i, None
        while j + 1 < len(phases):
            found = _strides(phases[j], phases[j + 1])
            if found is None or (
                strides is not None
                and not (
                    np.array_equal(found[0], strides[0]) and np.array_equal(found[1], strides[1])
                )
            ):
                break
            if compute[j + 2] != compute[j + 1]:
                break
            strides, j = found, j + 1
        if strides is None:
            steps.append(phases[i])
        else:
            steps.append(Repeat(j - i + 1, (phases[i].with_strides(*strides),)))
        i = j + 1
    return steps


def bsp_makespan_ns(plan: ExchangePlan, target: ExchangeTarget) -> int:
    """Bulk-synchronous time of ``plan``: supersteps of compute, sync and exchange.

    Each executed phase costs one sync plus the words of its busiest tile (the
    larger of what it sends and receives; a multicast leaves its sender once),
    a lower bound on the exchange a cycle-level schedule achieves.
    """
    total = sum(plan.compute_ns)
    for phase, count in plan.stored_phases():
        sent = np.bincount(phase.sends.tile, phase.sends.words, minlength=plan.tiles)
        received = np.bincount(phase.receives.tile, phase.receives.words, minlength=plan.tiles)
        busiest = int(max(sent.max(initial=0), received.max(initial=0)))
        total += count * target.superstep_ns(0, WORD_BYTES * busiest)
    return total
