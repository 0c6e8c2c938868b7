"""Build the `ExchangePlan` of a schedule on an IPU: supersteps, payloads, addresses.

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
producer operation whose data it receives; payloads land at increasing offsets
in the order they are first received. Sends of a tile are listed in producer
execution order, receives in the graph's edge order (capture order).

Repeat bodies. Consecutive phases whose rows are identical except that every
address advances by the same stride from one phase to the next, with identical
compute between them (per tile, the same operations and costs in the same
order), are folded into one `Repeat` whose body is the first phase; pointers
with a non-zero stride are iterated.

`bsp_makespan_ns` prices the plan as bulk-synchronous supersteps.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import replace

import numpy as np

from raptor_cp.errors import CapabilityUnavailableError, ScheduleViolationError
from raptor_cp.evaluation import placement, task_costs
from raptor_cp.exchange.plan import (
    Address,
    Allocation,
    ExchangePlan,
    Phase,
    Receive,
    Repeat,
    Send,
    Step,
    TileRow,
)
from raptor_cp.problems import LatencyProblem
from raptor_cp.schedule import Schedule
from raptor_cp.targets.base import ExchangeTarget
from raptor_cp.targets.registry import preset_names

WORD_BYTES = 4


def _words(nbytes: int) -> int:
    return -(-nbytes // WORD_BYTES)


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
    graph = problem.graph
    n = graph.num_tasks
    core_list = core.tolist()
    src, dst = graph.edge_src.tolist(), graph.edge_dst.tolist()
    next_on_core = [-1] * n
    waiting = np.bincount(graph.edge_dst, minlength=n).tolist()
    for order in schedule.core_order:
        for a, b in itertools.pairwise(order):
            next_on_core[a] = b
            waiting[b] += 1
    step = [0] * n
    stack = [t for t in range(n) if waiting[t] == 0]
    done = 0
    while stack:
        t = stack.pop()
        done += 1
        for e in graph.successor_edges(t).tolist():
            d = dst[e]
            step[d] = max(step[d], step[t] + (core_list[src[e]] != core_list[d]))
            waiting[d] -= 1
            if waiting[d] == 0:
                stack.append(d)
        d = next_on_core[t]
        if d >= 0:
            step[d] = max(step[d], step[t])
            waiting[d] -= 1
            if waiting[d] == 0:
                stack.append(d)
    if done < n:
        stuck = next(t for t in range(n) if waiting[t] > 0)
        raise ScheduleViolationError(
            f"deadlock: task {graph.names[stuck]!r} waits on a cycle of dependencies and core order"
        )
    return np.asarray(step, dtype=np.int64)


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
    graph = problem.graph
    core, slot = placement(problem, schedule)
    step = _supersteps(problem, schedule, core)
    builder = _Builder(problem, schedule, core, slot, step)
    phases = builder.phases()
    compute = builder.compute()
    steps = _fold_repeats(phases, builder.compute_signatures())
    return ExchangePlan(
        name=graph.name,
        tiles=target.cores,
        max_transfer_words=target.max_transfer_words,
        allocations=tuple(builder.allocations),
        steps=tuple(steps),
        compute_ns=tuple(compute),
    )


class _Builder:
    """Payloads, allocations and rows of one schedule."""

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
        self.core = core.tolist()
        self.slot = slot.tolist()
        self.step = step.tolist()
        self.cost = task_costs(problem, core).tolist()
        self.allocations: list[Allocation] = []
        self._allocation_ids: dict[tuple[str, int, int], int] = {}

    def allocation(self, kind: str, operation: int, tile: int) -> int:
        key = (kind, operation, tile)
        known = self._allocation_ids.get(key)
        if known is None:
            label = f"{self.graph.operation_names[operation]} {kind}"
            known = self._allocation_ids[key] = len(self.allocations)
            self.allocations.append(Allocation(tile, label))
        return known

    def output_addresses(self) -> dict[int, Address]:
        """Start of each task's output in its operation's output allocation on its tile."""
        graph = self.graph
        size = np.zeros(graph.num_tasks, dtype=np.int64)
        np.maximum.at(size, graph.edge_src, graph.edge_bytes)
        operation = graph.operation.tolist()
        addresses: dict[int, Address] = {}
        end: dict[int, int] = defaultdict(int)
        for tile, order in enumerate(self.schedule.core_order):
            for task in order:
                nbytes = WORD_BYTES * _words(int(size[task]))
                if nbytes:
                    allocation = self.allocation("out", operation[task], tile)
                    addresses[task] = Address(allocation, end[allocation])
                    end[allocation] += nbytes
        return addresses

    def phases(self) -> list[Phase]:
        """Every phase's rows: payloads, multicast receivers, sends and receives."""
        graph = self.graph
        tiles = len(self.schedule.core_order)
        core, step, slot = (
            np.asarray(x, dtype=np.int64) for x in (self.core, self.step, self.slot)
        )
        count = int(step.max(initial=0))
        src, dst, nbytes = graph.edge_src, graph.edge_dst, graph.edge_bytes
        cross = np.flatnonzero((core[src] != core[dst]) & (nbytes > 0))
        if not cross.size:
            return [Phase(k, ()) for k in range(count)]
        s, b, tile = src[cross], nbytes[cross], core[dst[cross]]
        phase = step[s]
        # One payload per (producer, bytes), numbered in (phase, tile, producer slot,
        # bytes, edge) order, the send order of each tile; `first` holds the position
        # in that order of each payload's first edge.
        send_order = np.lexsort((cross, b, slot[s], core[s], phase))
        key = (s * (int(b.max()) + 1) + b)[send_order]
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        rank = np.empty_like(first)
        rank[np.argsort(first)] = np.arange(first.size)
        payload = np.empty(cross.size, dtype=np.int64)
        payload[send_order] = rank[inverse.ravel()]
        pairs = np.unique(payload * tiles + tile)
        bounds = np.searchsorted(pairs // tiles, np.arange(first.size + 1)).tolist()
        receiver_tiles = (pairs % tiles).tolist()
        s_list, phase_list, tile_list = s.tolist(), phase.tolist(), tile.tolist()
        payload_list = payload.tolist()
        words = ((b + WORD_BYTES - 1) // WORD_BYTES).tolist()
        source = self.output_addresses()
        rows: dict[tuple[int, int], tuple[list[Send], list[Receive]]] = defaultdict(
            lambda: ([], [])
        )
        for p, i in enumerate(send_order[np.sort(first)].tolist()):
            receivers = tuple(receiver_tiles[bounds[p] : bounds[p + 1]])
            task = s_list[i]
            rows[phase_list[i], self.core[task]][0].append(
                Send(p, words[i], receivers, source[task])
            )
        # Receives in capture order (phase, receiving tile, edge), once per payload and tile.
        capture = np.lexsort((cross, tile, phase))
        _, received = np.unique((payload * tiles + tile)[capture], return_index=True)
        operation = graph.operation[s].tolist()
        allocations: dict[tuple[int, int], int] = {}
        end: dict[int, int] = defaultdict(int)
        for i in capture[np.sort(received)].tolist():
            key_in = (operation[i], tile_list[i])
            allocation = allocations.get(key_in)
            if allocation is None:
                allocation = allocations[key_in] = self.allocation("in", *key_in)
            rows[phase_list[i], tile_list[i]][1].append(
                Receive(
                    payload_list[i],
                    self.core[s_list[i]],
                    words[i],
                    Address(allocation, end[allocation]),
                )
            )
            end[allocation] += WORD_BYTES * words[i]
        by_phase: list[list[TileRow]] = [[] for _ in range(count)]
        for (k, t), (sends, receives) in sorted(rows.items()):
            by_phase[k].append(TileRow(t, tuple(sends), tuple(receives)))
        return [Phase(k, tuple(r)) for k, r in enumerate(by_phase)]

    def compute(self) -> list[int]:
        """Busiest tile's compute time in each superstep."""
        cost = self.cost
        busy: dict[tuple[int, int], int] = defaultdict(int)
        for task, tile in enumerate(self.core):
            busy[self.step[task], tile] += cost[task]
        compute = [0] * (max(self.step, default=0) + 1)
        for (k, _), ns in busy.items():
            compute[k] = max(compute[k], ns)
        return compute

    def compute_signatures(self) -> list[tuple[object, ...]]:
        """Per superstep, each tile's (operation, cost) sequence: the Repeat compute check."""
        cost = self.cost
        operation = self.graph.operation.tolist()
        per_step: list[list[tuple[int, tuple[tuple[int, int], ...]]]] = [
            [] for _ in range(max(self.step, default=0) + 1)
        ]
        for tile, order in enumerate(self.schedule.core_order):
            by_step: dict[int, list[tuple[int, int]]] = defaultdict(list)
            for task in order:
                by_step[self.step[task]].append((operation[task], cost[task]))
            for k, work in by_step.items():
                per_step[k].append((tile, tuple(work)))
        return [tuple(sorted(s)) for s in per_step]


def _strides(a: Phase, b: Phase) -> tuple[int, ...] | None:
    """How far every pointer advances from ``a`` to ``b``; None when they differ otherwise."""
    if [r.tile for r in a.rows] != [r.tile for r in b.rows]:
        return None
    strides: list[int] = []
    for x, y in zip(a.rows, b.rows, strict=True):
        if len(x.sends) != len(y.sends) or len(x.receives) != len(y.receives):
            return None
        for s, t in zip(x.sends, y.sends, strict=True):
            if (s.words, s.receivers, s.mode, s.source.allocation) != (
                t.words,
                t.receivers,
                t.mode,
                t.source.allocation,
            ):
                return None
            strides.append(t.source.offset - s.source.offset)
        for r, q in zip(x.receives, y.receives, strict=True):
            if (r.sender, r.words, r.address.allocation) != (
                q.sender,
                q.words,
                q.address.allocation,
            ):
                return None
            strides.append(q.address.offset - r.address.offset)
    return tuple(strides)


def _with_strides(phase: Phase, strides: tuple[int, ...]) -> Phase:
    it = iter(strides)
    rows = []
    for row in phase.rows:
        sends = tuple(replace(s, source_stride=next(it)) for s in row.sends)
        receives = tuple(replace(r, stride=next(it)) for r in row.receives)
        rows.append(TileRow(row.tile, sends, receives))
    return Phase(phase.index, tuple(rows))


def _fold_repeats(phases: list[Phase], compute: list[tuple[object, ...]]) -> list[Step]:
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
            if found is None or (strides is not None and found != strides):
                break
            if compute[j + 2] != compute[j + 1]:
                break
            strides, j = found, j + 1
        if strides is None:
            steps.append(phases[i])
        else:
            steps.append(Repeat(j - i + 1, (_with_strides(phases[i], strides),)))
        i = j + 1
    return steps


def bsp_makespan_ns(plan: ExchangePlan, target: ExchangeTarget) -> int:
    """Bulk-synchronous time of ``plan``: supersteps of compute, sync and exchange.

    Each executed phase costs one sync plus the words of its busiest tile (the
    larger of what it sends and receives; a multicast leaves its sender once),
    a lower bound on the exchange a cycle-level schedule achieves.
    """
    total = sum(plan.compute_ns)
    for phase in plan.executed_phases():
        busiest = 0
        for row in phase.rows:
            sent = sum(s.words for s in row.sends)
            busiest = max(busiest, sent, sum(r.words for r in row.receives))
        total += target.superstep_ns(0, WORD_BYTES * busiest)
    return total
