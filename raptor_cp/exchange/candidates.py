"""Candidate exchange plans of one workload on an IPU, for `raptor_cp.exchange.admission`.

A candidate varies what the seed varies before an exchange table exists:

- the planning configuration: lanes per operation (the lowering's row chunks)
  and the tile weight budget (`ExchangeTarget.with_weight_block`, which cuts
  weights in `weight_tiling`),
  which together fix the task graph;
- the tile budget: how many tiles (the first ``n``) the placement may use;
- the placement: `spread_schedule`, a cheap constructive placement that every
  expanded plan gets, and the list scheduler's (PEFT by default) placement on
  the same tile budget, made only for placement finalists.

Defaults (`CandidateOptions.for_workload`): block budgets of a quarter and an
eighth of the tile SRAM; for each, the lowering's default lane count
(`default_lanes`: the largest graph within its task budget) divided by the
batch, then halved twice; tile budgets of the whole chip, a half and a quarter.

Canonical keys. `lowering_key` names a task graph by what lowering actually
uses -- per operation its lane count ``min(lanes, rows)`` and its weight tiling
-- so lane counts beyond an operation's rows, or block budgets that cut every
matrix the same way, are recognised as the same graph before anything is
lowered. A plan's key is a SHA-256 fingerprint of that key with the batch, the
placement (tile of every task) and each tile's task order: two candidates with
equal keys have equal exchange plans, so a candidate whose placement turns out
equal to a known one is not planned, estimated or encoded again.

Batches. `batch_graph` replicates a lowered graph per batch item (independent
inferences) with shared weights: tasks, edges and costs are copied, weight ids
and operation ids are not, so copies of a task may share a tile's weight and a
tile keeps one allocation per operation for every copy.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from dataclasses import dataclass, replace

import numpy as np

from raptor_cp.errors import NotFoundWithinBudgetError, ProvedInfeasibleError
from raptor_cp.exchange.admission import ExactRecord, PlanRecord, Progress
from raptor_cp.exchange.encoder import encode_exchange
from raptor_cp.exchange.footprint import estimate_footprint
from raptor_cp.exchange.plan import ExchangePlan
from raptor_cp.exchange.planning import bsp_makespan_ns, build_exchange_plan
from raptor_cp.graph import BaselineMemory, ComputeGraph
from raptor_cp.problems import LatencyProblem
from raptor_cp.schedule import Schedule
from raptor_cp.solvers import solve
from raptor_cp.targets.base import ExchangeTarget
from raptor_cp.workload.lowering import default_lanes, lower
from raptor_cp.workload.model import OpKind, Workload

SPREAD = "spread"
"""Placement name of `spread_schedule`."""
PLAN_CACHE = 3
"""Exchange plans kept in memory (the largest hold a few hundred thousand transfers)."""


def batch_graph(graph: ComputeGraph, batch: int) -> ComputeGraph:
    """``batch`` independent copies of ``graph`` sharing its weights (module docstring).

    Task ``t`` of copy ``k`` is task ``k * T + t``, named ``b{k}/<name>``; the
    graph itself is returned for a batch of 1.
    """
    if batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    if batch == 1:
        return graph
    n = graph.num_tasks
    base = graph.baseline
    offsets = np.repeat(np.arange(batch, dtype=np.int64) * n, graph.num_edges)
    return ComputeGraph(
        names=tuple(f"b{k}/{name}" for k in range(batch) for name in graph.names),
        cost=np.tile(graph.cost, batch),
        edge_src=np.tile(graph.edge_src, batch) + offsets,
        edge_dst=np.tile(graph.edge_dst, batch) + offsets,
        edge_bytes=np.tile(graph.edge_bytes, batch),
        task_weights=graph.task_weights * batch,
        weight_size=graph.weight_size,
        weight_names=graph.weight_names,
        operation=np.tile(graph.operation, batch),
        lane=np.tile(graph.lane, batch),
        operation_names=graph.operation_names,
        name=f"{graph.name} x{batch}",
        nominal_cost=np.tile(graph.nominal_cost, batch),
        edge_kind=np.tile(graph.edge_kind, batch),
        output_bytes=None if graph.output_bytes is None else np.tile(graph.output_bytes, batch),
        payload_bits=np.tile(graph.payload_bits, batch),
        operation_types=graph.operation_types,
        baseline=BaselineMemory(
            np.tile(base.task, batch)
            + np.repeat(np.arange(batch, dtype=np.int64) * n, base.requests),
            np.tile(base.nbytes, batch),
            np.tile(base.write, batch),
            _batch_pieces(base.piece, batch),
        ),
    )


def _batch_pieces(piece: np.ndarray, batch: int) -> np.ndarray:
    """Baseline pieces of ``batch`` copies: each copy is another inference, so no copy
    shares a piece with another (`raptor_cp.graph.BaselineMemory`)."""
    if not piece.size:
        return piece
    shifted = piece - piece.min()
    span = int(shifted.max()) + 1
    return np.concatenate([shifted + k * span for k in range(batch)])


def lowering_key(workload: Workload, target: ExchangeTarget, lanes: int) -> tuple[object, ...]:
    """What `lower` uses of ``lanes`` and the block budget: equal keys, equal graphs."""
    parts: list[object] = [target.cost_key()]
    for op in workload.operations:
        if op.kind in (OpKind.VECTOR, OpKind.TRANSPOSE, OpKind.CONCAT):
            parts.append(min(lanes, op.rows))
        elif op.kind is OpKind.WEIGHTED:
            tiling = target.weight_tiling(op.weight_height, op.weight_width, op.bits)
            parts.append((min(lanes, op.rows), tiling.row_slices, tiling.column_blocks))
    return tuple(parts)


def spread_schedule(problem: LatencyProblem, tiles: int, slots: int | None = None) -> Schedule:
    """Deal every operation's tasks evenly over a span of the first ``tiles`` tiles.

    Within an operation, tasks are taken by weight, then lane, then id (batch
    copies of a lane stay together), and the ``k``-th of ``m`` goes to tile
    ``start + k * span // m`` (mod ``tiles``). An operation without weights
    spans every tile from tile 0, so lane ``l`` of consecutive element-wise
    operations lands on the same tile and needs no exchange. An operation with
    ``G`` distinct weights spans ``min(tiles, G * r)`` tiles, each weight on
    about ``r`` consecutive tiles (its replicas, which split the lanes), where
    ``r = tiles * SRAM // (2 * distinct weight bytes)`` keeps the replicas within
    half of the SRAM; successive weighted operations start where the previous
    span ended. A task whose weights do not fit its tile's free SRAM moves to
    the next tile (cyclically) that holds them or has room. Each tile runs its
    tasks by operation, then id: a topological order, as operations are
    numbered in workload order. ``O(T log T)`` plus the capacity probes; no
    timing search. ``slots`` is ``graph.distinct_weight_slots()``, when known.

    Raises
    ------
    NotFoundWithinBudgetError
        When some task's weights fit on none of the ``tiles`` tiles.
    """
    graph, target = problem.graph, problem.target
    operation = graph.operation
    n = graph.num_tasks
    ops = len(graph.operation_names)
    first_weight = np.array([w[0] if w else -1 for w in graph.task_weights], dtype=np.int64)
    order = np.lexsort((np.arange(n), graph.lane, first_weight, operation))
    counts = np.bincount(operation, minlength=ops)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n) - np.repeat(starts, counts)
    used = first_weight >= 0
    groups = np.zeros(ops, dtype=np.int64)
    pairs = np.unique(operation[used] * max(graph.num_weights, 1) + first_weight[used])
    np.add.at(groups, pairs // max(graph.num_weights, 1), 1)
    if slots is None:
        slots = graph.distinct_weight_slots()
    replicas = max(1, tiles * target.capacity(0) // max(1, 2 * slots))
    span = np.where(groups > 0, np.minimum(tiles, groups * replicas), tiles)
    begin = np.zeros(ops, dtype=np.int64)
    cursor = 0
    for op in np.flatnonzero(groups).tolist():
        begin[op] = cursor
        cursor = (cursor + int(span[op])) % tiles
    home = (begin[operation] + rank * span[operation] // np.maximum(counts[operation], 1)) % tiles
    core = _fit_weights(problem, home.tolist(), tiles)
    order = np.lexsort((np.arange(n), operation, core))
    bounds = np.searchsorted(core[order], np.arange(target.cores + 1)).tolist()
    ordered = order.tolist()
    core_order = tuple(tuple(ordered[bounds[p] : bounds[p + 1]]) for p in range(target.cores))
    return Schedule(core_order, np.zeros(n, dtype=np.int64), SPREAD)


def _fit_weights(problem: LatencyProblem, home: list[int], tiles: int) -> np.ndarray:
    """Move each task whose weights overflow its home tile to the next tile they fit."""
    graph, target = problem.graph, problem.target
    size = graph.weight_size.tolist()
    free = [target.capacity(t) for t in range(tiles)]
    held: list[set[int]] = [set() for _ in range(tiles)]
    for task, weights in enumerate(graph.task_weights):
        if not weights:
            continue
        for step in range(tiles):
            tile = (home[task] + step) % tiles
            need = sum(size[w] for w in weights if w not in held[tile])
            if need <= free[tile]:
                break
        else:
            raise NotFoundWithinBudgetError(
                f"{graph.name}: spread placement: the weights of task "
                f"{graph.names[task]!r} fit on none of {tiles} tiles"
            )
        free[tile] -= need
        held[tile].update(weights)
        home[task] = tile
    return np.asarray(home, dtype=np.int64)


def scheduled(graph: ComputeGraph, target: ExchangeTarget, scheduler: str, tiles: int) -> Schedule:
    """``scheduler``'s schedule on the first ``tiles`` tiles, idle tiles appended.

    Raises
    ------
    NotFoundWithinBudgetError, ProvedInfeasibleError
        When the scheduler finds no schedule on that many tiles.
    """
    budget = target if tiles == target.cores else target.with_tiles(tiles)
    solution = solve(LatencyProblem(graph, budget), scheduler)
    if solution.schedule is None:
        raise NotFoundWithinBudgetError(
            f"{graph.name}: {scheduler} found no schedule on {tiles} tiles "
            f"({solution.status.value})"
        )
    order = solution.schedule.core_order + ((),) * (target.cores - tiles)
    return replace(solution.schedule, core_order=order)


def fingerprint(lowering: tuple[object, ...], batch: int, schedule: Schedule) -> str:
    """The canonical key of a plan: lowering, batch, placement and tile orders (16 hex)."""
    digest = hashlib.sha256(repr((lowering, batch)).encode())
    for order in schedule.core_order:
        digest.update(np.asarray(order, dtype=np.int64).tobytes())
        digest.update(b"|")
    return digest.hexdigest()[:16]


@dataclass(frozen=True)
class CandidateOptions:
    """The variation admission explores (module docstring)."""

    lanes: tuple[int, ...]
    """Lane counts; with ``block_lanes`` empty, used for every block budget."""
    weight_block_bytes: tuple[int, ...]
    tile_budgets: tuple[int, ...]
    scheduler: str = "peft"
    batch: int = 1
    block_lanes: tuple[tuple[int, ...], ...] = ()
    """Per block budget, its lane counts (overrides ``lanes``)."""

    @classmethod
    def for_workload(
        cls,
        workload: Workload,
        target: ExchangeTarget,
        lanes: int | None = None,
        scheduler: str = "peft",
        batch: int = 1,
    ) -> CandidateOptions:
        """The defaults of the module docstring; ``lanes`` fixes the lane count."""
        sram = target.tile_memory_bytes
        blocks = (sram // 4, sram // 8)
        per_block = []
        for block in blocks:
            if lanes is not None:
                per_block.append((lanes,))
                continue
            base = max(1, default_lanes(workload, target.with_weight_block(block)))
            first = max(1, base // batch)
            per_block.append(tuple(dict.fromkeys(max(1, first >> k) for k in range(3))))
        tiles = target.cores
        budgets = tuple(dict.fromkeys(max(1, tiles >> k) for k in range(3)))
        return cls(per_block[0], blocks, budgets, scheduler, batch, tuple(per_block))

    def configurations(self) -> list[tuple[int, int]]:
        """Every (lanes, block bytes) pair, block budgets first."""
        lanes = self.block_lanes or (self.lanes,) * len(self.weight_block_bytes)
        return [
            (count, block)
            for block, counts in zip(self.weight_block_bytes, lanes, strict=True)
            for count in counts
        ]


@dataclass(frozen=True)
class Built:
    """What one candidate's plan is built from."""

    problem: LatencyProblem
    target: ExchangeTarget
    """``problem.target``, typed."""
    lowering: tuple[object, ...]
    lanes: int
    schedule: Schedule


class WorkloadCandidates:
    """A `CandidateSource` over one workload and IPU target (module docstring).

    Lowerings are memoized by `lowering_key`, estimates by `fingerprint`,
    placements and exact encodings by the candidate's key, so a second admission over the
    same source (another budget) rebuilds nothing but the cheap spread
    placements; the last `PLAN_CACHE` plans stay in memory and older ones are
    rebuilt on demand.
    """

    def __init__(
        self,
        workload: Workload,
        target: ExchangeTarget,
        options: CandidateOptions,
        progress: Progress | None = None,
    ) -> None:
        self.workload = workload
        self.target = target
        self.options = options
        self.progress = progress or (lambda stage, detail: None)
        self.built: dict[str, Built] = {}
        self.failures: dict[str, str] = {}
        """Label -> why a configuration or tile budget produced no candidate."""
        self._graphs: dict[tuple[object, ...], Built] = {}
        self._records: dict[str, PlanRecord] = {}
        self._placed: dict[str, PlanRecord | str] = {}
        self._exact: dict[str, ExactRecord] = {}
        self._plans: OrderedDict[str, ExchangePlan] = OrderedDict()

    # -- CandidateSource -------------------------------------------------------

    def expanded(self) -> list[PlanRecord]:
        """A spread plan per configuration and tile budget (equivalent ones once)."""
        records = []
        for lanes, block in self.options.configurations():
            target = self.target.with_weight_block(block)
            key = lowering_key(self.workload, target, lanes)
            base = self._graphs.get(key)
            if base is None:
                graph = batch_graph(lower(self.workload, target, lanes), self.options.batch)
                empty = Schedule((), np.zeros(0, dtype=np.int64), SPREAD)
                base = Built(LatencyProblem(graph, target), target, key, lanes, empty)
                self._graphs[key] = base
                self.progress("lower", f"lanes={lanes} block={block}: {graph.num_tasks:,} tasks")
            slots = base.problem.graph.distinct_weight_slots()
            configuration = f"lanes={lanes} block={block}"
            if self.options.batch > 1:
                configuration = f"batch={self.options.batch} {configuration}"
            for tiles in self.options.tile_budgets:
                label = f"{configuration} tiles={tiles} {SPREAD}"
                try:
                    schedule = spread_schedule(base.problem, tiles, slots)
                except NotFoundWithinBudgetError as error:
                    self.failures[label] = str(error)
                    continue
                built = replace(base, lanes=lanes, schedule=schedule)
                record = self._record(built, label, configuration, tiles)
                records.append(record)
                self.progress(
                    "expand",
                    f"{label}: estimate {record.estimate_bytes:,} B, largest phase "
                    f"{record.largest_phase[1]:,} fragments",
                )
        return records

    def place(self, record: PlanRecord) -> PlanRecord | str:
        """The scheduler's plan on ``record``'s graph and tile budget (memoized by key)."""
        known = self._placed.get(record.key)
        if known is not None:
            return known
        built = self.built[record.key]
        scheduler = self.options.scheduler
        try:
            schedule = scheduled(built.problem.graph, built.target, scheduler, record.tile_budget)
        except (NotFoundWithinBudgetError, ProvedInfeasibleError) as error:
            self._placed[record.key] = str(error)
            return str(error)
        label = f"{record.configuration} tiles={record.tile_budget} {scheduler}"
        placed = self._record(
            replace(built, schedule=schedule), label, record.configuration, record.tile_budget
        )
        self._placed[record.key] = placed
        return placed

    def encode(self, record: PlanRecord) -> ExactRecord:
        """The exact encoder on ``record``'s plan (memoized by key)."""
        known = self._exact.get(record.key)
        if known is not None:
            return known
        plan = self.plan(record.key)
        began = time.perf_counter()
        exact = encode_exchange(plan).footprint
        elapsed = time.perf_counter() - began
        result = self._exact[record.key] = ExactRecord(
            exact_bytes=exact.busiest(shared=True)[1],
            exact_unshared_bytes=exact.busiest(shared=False)[1],
            phase_bytes=tuple(sorted(exact.phase_bytes().items())),
            encode_s=elapsed,
        )
        return result

    # -- plans -----------------------------------------------------------------

    def plan(self, key: str) -> ExchangePlan:
        """The exchange plan of candidate ``key`` (rebuilt when no longer cached)."""
        plan = self._plans.get(key)
        if plan is None:
            built = self.built[key]
            plan = self._cache(key, build_exchange_plan(built.problem, built.schedule))
        self._plans.move_to_end(key)
        return plan

    def _cache(self, key: str, plan: ExchangePlan) -> ExchangePlan:
        self._plans[key] = plan
        while len(self._plans) > PLAN_CACHE:
            self._plans.popitem(last=False)
        return plan

    def _record(self, built: Built, label: str, configuration: str, tiles: int) -> PlanRecord:
        schedule = built.schedule
        key = fingerprint(built.lowering, self.options.batch, schedule)
        known = self._records.get(key)
        if known is not None:  # equivalent work: the same plan, nothing is redone
            return replace(known, label=label)
        self.built[key] = built
        plan = self._cache(key, build_exchange_plan(built.problem, schedule))
        began = time.perf_counter()
        footprint = estimate_footprint(plan)
        elapsed = time.perf_counter() - began
        pieces = phase_fragments(plan)
        largest = max(pieces.items(), key=lambda item: (item[1], -item[0]), default=(0, 0))
        record = PlanRecord(
            key=key,
            label=label,
            configuration=configuration,
            placement=schedule.scheduler,
            tile_budget=tiles,
            execution_ns=bsp_makespan_ns(plan, built.target),
            estimate_bytes=footprint.busiest(shared=True)[1],
            estimate_unshared_bytes=footprint.busiest(shared=False)[1],
            fragments=sum(pieces.values()),
            largest_phase=largest,
            phase_estimates=tuple(sorted(footprint.phase_bytes().items())),
            details={
                "batch": self.options.batch,
                "lanes": built.lanes,
                "weight_block_bytes": built.target.block_bytes,
                "tasks": built.problem.graph.num_tasks,
                "tiles_used": schedule.cores_used,
                "stored_phases": len(footprint.phases),
            },
            estimate_s=elapsed,
        )
        self._records[key] = record
        return record


def phase_fragments(plan: ExchangePlan) -> dict[int, int]:
    """Per stored phase, its transfer pieces (TX and RX fragments, split at the ISA limit)."""
    limit = plan.max_transfer_words
    return {
        phase.index: int(
            (-(-phase.sends.words // limit)).sum() + (-(-phase.receives.words // limit)).sum()
        )
        for phase, _ in plan.stored_phases()
    }
