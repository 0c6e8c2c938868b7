"""Weight replication planned jointly with placement, for capacity-limited latency schedules.

Why: a PIM core can run a task only where the task's weights are resident.
The seeds' reservations (scheduling-implementation.md, "Priorities, placement,
and recovery limits") grow residency task by task and, when weights fill more
than half the chip, send a task to a core already holding its weights. On
PIMCOMP-NN's ResNet-18 (16-bit) on its 144-core chip that keeps one copy of
the first convolution's two 4-slot weights, so its 112 lanes (41 ms of work
each) run on two cores while 36 cores idle: 48.0 ms against a 3.89 ms bound.
PIMCOMP-NN's main lever is the opposite: replicate the weights of heavy layers
across cores. This module decides how many copies each weight gets and where
they go, before list scheduling, so the list scheduler only chooses among the
copies (`raptor_cp.heuristics.peft`, ``reserved=``).

Plan (all decisions integer and tie-broken by id, so the plan is deterministic):

1. **Units.** Tasks are grouped by their set of distinct weights (one weight per
   array-group task on PIM). A unit's *work* is the sum of its tasks' fastest
   costs, its *size* the slots of its weights.
2. **First copies**, largest size first (then most work, then id): each goes to
   the least-loaded core with room (load: the work per copy of the units it
   holds), ties to the fullest core, then the lowest id. If one fits nowhere,
   the seeds' reuse-first constructor (`pack_resident_weights`, best fit with
   its bounded retries) places all first copies instead; if that fails too,
   there is no plan and the caller keeps the seeds' reservations.
3. **Replicas**: repeatedly take the unit with the largest work per copy
   ``work / copies`` (compared exactly: loads are kept as integers scaled by
   ``lcm(1..P)`` for ``P`` cores, which every copy count divides) and add a copy on the
   least-loaded core that does not hold it and has room for its missing slots.
   A unit stops when it has as many copies as tasks or cores, or no core has
   room. This water-filling keeps the heaviest per-copy load as low as the
   free slots allow: the greedy minimax of ``max_u work_u / copies_u`` under
   the capacity.

Cost: ``O(U P)`` for the first copies and ``O(C (P + log U) + C r)`` for the
``C`` replicas (``r``: copies of the unit whose load changes), with ``U`` units
and ``P`` cores, each load comparison on integers of ``O(P)`` bits (``lcm(1..P)``
has about ``1.44 P``); ``O(W P)`` bits for the residency.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from raptor_cp.graph import ComputeGraph
from raptor_cp.heuristics.resident_packing import pack_resident_weights
from raptor_cp.targets.base import UNLIMITED_CAPACITY, SchedulingTarget


@dataclass(frozen=True)
class ReplicationPlan:
    """Where every weight copy goes: ``reserved[w, p]`` is True when core ``p`` holds ``w``."""

    reserved: np.ndarray
    copies: np.ndarray
    """Copies of each weight (0 for weights no task uses)."""
    first_copies: str
    """``balanced`` (step 2's least-loaded placement) or ``constructor`` (seeds' fallback)."""

    @property
    def replicas(self) -> int:
        """Copies beyond the first of every used weight."""
        return int(np.maximum(self.copies - 1, 0).sum())


@dataclass
class _Units:
    """Tasks grouped by their distinct weight set (see the module docstring)."""

    weights: list[tuple[int, ...]]
    work: list[int]
    tasks: list[int]


def _units(graph: ComputeGraph, tasks: Sequence[int]) -> _Units:
    cost = graph.min_cost().tolist()
    index: dict[tuple[int, ...], int] = {}
    units = _Units([], [], [])
    for task in tasks:
        key = tuple(sorted(set(graph.task_weights[task])))
        if not key:
            continue
        u = index.setdefault(key, len(units.weights))
        if u == len(units.weights):
            units.weights.append(key)
            units.work.append(0)
            units.tasks.append(0)
        units.work[u] += cost[task]
        units.tasks[u] += 1
    return units


class _Cores:
    """Residency, used slots and per-copy load of every core while the plan grows."""

    def __init__(self, graph: ComputeGraph, capacity: np.ndarray) -> None:
        self.size = graph.weight_size
        self.capacity = capacity
        self.used = np.zeros(capacity.shape[0], dtype=np.int64)
        self.resident = np.zeros((graph.num_weights, capacity.shape[0]), dtype=bool)
        self.scale = math.lcm(*range(1, capacity.shape[0] + 1))
        """Loads are ``scale`` times the work per copy: exact integers (copies <= cores)."""
        self.load = [0] * capacity.shape[0]

    def missing(self, weights: tuple[int, ...]) -> np.ndarray:
        """Per core, the slots ``weights`` would add."""
        ids = np.asarray(weights, dtype=np.int64)
        return self.size[ids] @ ~self.resident[ids]

    def least_loaded(self, weights: tuple[int, ...], exclude: set[int]) -> int | None:
        """Core with room for ``weights``: least load, then least free slots after, then id."""
        new = self.missing(weights)
        free = self.capacity - self.used - new
        best: tuple[int, int, int] | None = None
        for p in np.flatnonzero(free >= 0).tolist():
            if p in exclude:
                continue
            key = (self.load[p], int(free[p]), p)
            if best is None or key < best:
                best = key
        return None if best is None else best[2]

    def put(self, weights: tuple[int, ...], core: int) -> None:
        self.used[core] += int(self.missing(weights)[core])
        self.resident[list(weights), core] = True


def plan_replication(graph: ComputeGraph, target: SchedulingTarget) -> ReplicationPlan | None:
    """Decide weight copies and their cores (module docstring); None when no plan applies.

    Returns None when capacity is unlimited (replication is free there and the
    list schedulers replicate as they go) or when no placement of the first
    copies is found.
    """
    capacity = np.array([target.capacity(p) for p in range(target.cores)], dtype=np.int64)
    return plan_copies(graph, range(graph.num_tasks), capacity)


def plan_copies(
    graph: ComputeGraph, tasks: Sequence[int], capacity: np.ndarray
) -> ReplicationPlan | None:
    """`plan_replication` for the weights of ``tasks`` on cores of slots ``capacity``.

    Core ``i`` of the plan is ``capacity[i]``'s core: a pipeline stage plans the
    copies of its own tasks on its own region (`raptor_cp.pipeline.layout`).
    None when capacity is unlimited, no task of ``tasks`` holds a weight, or no
    placement of the first copies is found.
    """
    if (capacity >= UNLIMITED_CAPACITY).any() or graph.num_weights == 0:
        return None
    units = _units(graph, tasks)
    if not units.weights:
        return None
    cores = _Cores(graph, capacity)
    holders: list[list[int]] = [[] for _ in units.weights]
    first = _place_first_copies(graph, units, cores, holders)
    if first is None:
        return None
    _add_replicas(units, cores, holders, len(capacity))
    return ReplicationPlan(cores.resident, cores.resident.sum(axis=1), first)


def _place_first_copies(
    graph: ComputeGraph, units: _Units, cores: _Cores, holders: list[list[int]]
) -> str | None:
    """Step 2: balanced first copies, else the seeds' constructor; None if both fail."""
    size = [int(graph.weight_size[list(w)].sum()) for w in units.weights]
    order = sorted(range(len(units.weights)), key=lambda u: (-size[u], -units.work[u], u))
    for u in order:
        p = cores.least_loaded(units.weights[u], set())
        if p is None:
            break
        cores.put(units.weights[u], p)
        cores.load[p] += units.work[u] * cores.scale
        holders[u].append(p)
    else:
        return "balanced"
    packing = pack_resident_weights(
        order, units.weights, graph.weight_size, cores.capacity.tolist()
    )
    if packing.cores is None:
        return None
    cores.used.fill(0)
    cores.resident.fill(False)
    cores.load = [0] * len(cores.load)
    for u in range(len(holders)):
        holders[u].clear()
    for u, p in zip(order, packing.cores, strict=True):
        cores.put(units.weights[u], p)
        cores.load[p] += units.work[u] * cores.scale
        holders[u].append(p)
    return "constructor"


def _add_replicas(units: _Units, cores: _Cores, holders: list[list[int]], core_count: int) -> None:
    """Step 3: water-filling of ``work / copies`` over the free slots."""
    scale = cores.scale
    heap = [(-units.work[u] * scale, u) for u in range(len(units.weights))]
    heapq.heapify(heap)
    while heap:
        _, u = heapq.heappop(heap)
        copies = len(holders[u])
        if copies >= min(units.tasks[u], core_count):
            continue
        p = cores.least_loaded(units.weights[u], set(holders[u]))
        if p is None:
            continue
        old, new = units.work[u] * scale // copies, units.work[u] * scale // (copies + 1)
        for q in holders[u]:
            cores.load[q] += new - old
        cores.put(units.weights[u], p)
        cores.load[p] += new
        holders[u].append(p)
        heapq.heappush(heap, (-new, u))
