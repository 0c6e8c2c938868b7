"""Initial pipeline partition: a prefix DP over group ranges and quantized spare cores.

Seeds (scheduling.md, "Throughput scheduling uses one bounded joint
optimizer"): initialization computes one ordered partition of the operation
groups with a prefix DP that jointly assigns operation prefixes and at most
sixteen units of spare core capacity; each configured stage reserves one
physical core; if the quality grid has no feasible state, a minimum-resource
prefix DP checks every physical core count per segment; the seed minimises the
maximum stage cost over the legal active-stage counts; no empty stage is
inserted between dependent operations. Here the stage "packing/dependency
priority" is the problem's ``stage_cost(first, stop, cores)``.

Quantization rule (the spare grid)
----------------------------------
``S = min(max_stages, G, P)`` stages are legal (stages are non-empty and hold
at least one core). Each reserves one core; the ``spare = P - S`` others are
cut into units of ``u = max(1, ceil(spare / Q))`` cores, ``Q = spare_units``
(16 by default, the seeds' value; ``Q = 0`` leaves every stage one core). A stage
given ``j`` units has budget ``1 + u j``. A partition with ``s`` active stages
may use ``q <= min(Q, floor((P - s) / u))`` units in total, so at most ``Q``
units as the seeds require, and with ``s = S`` all ``floor(spare / u)`` units.
The grid is *exact* (every budget vector with total ``<= P`` is on it) iff
``u = 1`` and ``Q >= P - 1``; then the result is the optimum of the
`PartitionProblem` and is reported OPTIMAL. Otherwise the quantization can cost
quality: ``details["grid_objective"]`` is the best grid value, and
`raptor_cp.models.partition.partition_audit` measures the loss against the
unquantized optimum (``spare_units = P - 1`` makes this DP exact).

Quality DP: ``f[s][g][q]`` = the least maximum stage cost covering groups
``[0, g)`` with ``s`` stages using ``q`` units::

    f[s][g][q] = min_{g' < g, j <= q} max(f[s-1][g'][q-j], cost(g', g, 1 + u j))

The seed is the ``(s, q)`` minimising ``f[s][G][q]`` over the legal ``s`` and
``q``; ties take the fewest stages, then the fewest units. Backtracking takes,
among optimal predecessors, the shortest last stage (largest ``g'``), then the
fewest units.

Feasibility completion (only when no grid state is feasible): for each segment
the fewest cores ``need(g', g)`` with an available cost is found by checking
every physical core count ``1..P`` (or asked of a `FewestCores` stage cost); a
binary search over the segment costs at ``need`` finds the least threshold ``T``
for which a minimum-resource prefix DP
``h[s][g] = min_{g'} h[s-1][g'] + need(g', g)`` over segments costing ``<= T``
reaches ``h[s][G] <= P`` (fewest stages first). The completion is complete over
the curves: if any budget vector ``b`` makes a partition available, then
``need <= b`` stage by stage, so the partition passes with ``T`` = its worst
cost at ``need``. NOT_FOUND therefore means the curves admit no partition at
all, which is still a packing (bounded-search) limitation, not proved
hardware infeasibility.

Final budgets: whichever DP chose the ranges, `minimax_budgets` redistributes
all ``P`` cores over them (exact for the ranges, never worse than the DP's own
budgets, which are one feasible vector); cores no stage can use stay idle. So
idle spare cores left by quantization go to the bottleneck stages.

Complexity: the quality grid makes ``O(G² Q)`` stage-cost queries and
``O(S G² Q²)`` DP steps (vectorised per ``(s, g)``), storing ``O(G² Q + S G Q)``;
the completion adds ``O(G² P)`` queries and ``O(S G² log G)`` steps with
``O(G² + S G)`` storage; the final allocation ``O(S P)`` queries. Every query
goes through one `CostCache`, so a ``(first, stop, cores)`` triple is evaluated
once.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar, Protocol, runtime_checkable

import numpy as np

from raptor_cp.errors import InvalidConfigError
from raptor_cp.heuristics.core_budgets import CostCache, minimax_budgets
from raptor_cp.heuristics.range_packing import UNAVAILABLE
from raptor_cp.problems import PartitionProblem, PartitionSolution, Stage, Status


@runtime_checkable
class FewestCores(Protocol):
    """A stage cost that knows each segment's fewest cores with an available cost.

    ``fewest(first, stop)`` is ``(k, stage_cost(first, stop, k))`` for the least
    such ``k``, or None when no core count is available. The feasibility
    completion uses it instead of trying every core count; it must agree with
    that scan (`raptor_cp.pipeline.units.UnitCosts` answers it from the exact
    capacity availability of ordered packing, in one batch).
    """

    def fewest(self, first: int, stop: int) -> tuple[int, int] | None: ...


SPARE_UNITS = 16
"""Spare-capacity units of the initialization grid (seeds: at most sixteen)."""

_START = np.iinfo(np.int64).min
"""``f[0][0][0]``: the maximum over no stage, below every cost."""


@dataclass(frozen=True)
class SpareGrid:
    """The quantized spare-core grid of one problem (see the module docstring)."""

    stages: int
    """Legal stage count ``S = min(max_stages, G, P)``; each reserves one core."""
    unit: int
    """Cores per spare unit ``u``."""
    units: int
    """Most units one partition may use (``Q``)."""
    cores: int

    @classmethod
    def of(cls, problem: PartitionProblem, spare_units: int) -> SpareGrid:
        stages = min(problem.max_stages, problem.num_groups, problem.cores)
        spare = problem.cores - stages
        if spare_units == 0:
            return cls(stages, 1, 0, problem.cores)
        return cls(stages, max(1, -(-spare // spare_units)), spare_units, problem.cores)

    def budget(self, units: int) -> int:
        return 1 + self.unit * units

    def max_units(self, active_stages: int) -> int:
        """Units a partition with ``active_stages`` stages may use."""
        return min(self.units, (self.cores - active_stages) // self.unit)

    @property
    def exact(self) -> bool:
        """Every budget vector with total ``<= P`` is on the grid."""
        return self.unit == 1 and self.units >= self.cores - 1


@dataclass(frozen=True)
class PrefixDpPartitioner:
    """The seeds' initialization as a solver: `initial_partition` with its one setting."""

    name: ClassVar[str] = "prefix-dp"

    spare_units: int = SPARE_UNITS

    def solve(self, problem: PartitionProblem) -> PartitionSolution:
        return initial_partition(problem, self.spare_units)


def initial_partition(
    problem: PartitionProblem, spare_units: int = SPARE_UNITS
) -> PartitionSolution:
    """The prefix-DP seed partition of ``problem`` with minimax core budgets.

    Parameters
    ----------
    problem:
        Ordered groups, cores, pipeline depth and the stage-cost curves.
    spare_units:
        ``Q``, the spare-capacity units of the quality grid (seeds: 16). Larger
        values trade time for less quantization loss; ``problem.cores - 1`` makes
        the DP exact.

    Returns
    -------
    PartitionSolution
        OPTIMAL (with ``bound == objective``) when the grid is exact, FEASIBLE
        otherwise, NOT_FOUND (stages None) when neither DP finds a partition
        whose stages all have an available cost. ``details`` holds ``path``
        (``grid`` or ``completion``), the grid (``unit_cores``, ``spare_units``,
        ``grid_exact``), ``grid_objective``, ``active_stages``, ``idle_cores`` and
        ``stage_cost_queries``.
    """
    if spare_units < 0:
        raise InvalidConfigError(f"prefix DP spare_units must be >= 0, got {spare_units}")
    began = time.perf_counter()
    cost = CostCache(problem.stage_cost)
    grid = SpareGrid.of(problem, spare_units)
    details: dict[str, object] = {
        "unit_cores": grid.unit,
        "spare_units": grid.units,
        "grid_exact": grid.exact,
    }
    found = _grid_partition(problem, grid, cost)
    if found is not None:
        details["path"] = "grid"
        details["grid_objective"], ranges = found
    else:
        details["path"] = "completion"
        details["grid_objective"] = None
        ranges = _completion_partition(problem, grid.stages, cost)
    budgets = None if ranges is None else minimax_budgets(ranges, problem.cores, cost)
    if ranges is None or budgets is None:
        details["stage_cost_queries"] = cost.queries
        details["reason"] = "no partition whose stages all have an available cost"
        return PartitionSolution(
            None,
            status=Status.NOT_FOUND,
            solver="prefix-dp",
            wall_s=time.perf_counter() - began,
            details=details,
        )
    stages = tuple(Stage(first, stop, k) for (first, stop), k in zip(ranges, budgets, strict=True))
    costs = [cost(stage.first, stage.stop, stage.cores) for stage in stages]
    # minimax budgets are all available; a memory term is not minimised here, only counted
    objective = problem.objective(stages, [c for c in costs if c is not None])
    details["active_stages"] = len(stages)
    details["idle_cores"] = problem.cores - sum(budgets)
    details["stage_cost_queries"] = cost.queries
    exact = grid.exact and details["path"] == "grid" and problem.stage_memory is None
    return PartitionSolution(
        stages,
        status=Status.OPTIMAL if exact else Status.FEASIBLE,
        solver="prefix-dp",
        objective=objective,
        bound=objective if exact else None,
        wall_s=time.perf_counter() - began,
        details=details,
    )


def _usable(first: int, stop: int, groups: int, stages: int) -> bool:
    """Whether ``[first, stop)`` can be a stage of some partition into at most ``stages``."""
    return 1 + (first > 0) + (stop < groups) <= stages


def _grid_partition(
    problem: PartitionProblem, grid: SpareGrid, cost: CostCache
) -> tuple[int, list[tuple[int, int]]] | None:
    """The quality DP: (best grid objective, stage ranges), or None with no feasible state."""
    groups, stages = problem.num_groups, grid.stages
    units = grid.units
    per_stage = min(units, (problem.cores - 1) // grid.unit)  # a budget never exceeds P
    table = np.full((groups + 1, groups + 1, per_stage + 1), UNAVAILABLE, dtype=np.int64)
    for first in range(groups):
        for stop in range(first + 1, groups + 1):
            if not _usable(first, stop, groups, stages):
                continue
            others = (first > 0) + (stop < groups)  # each other stage needs a core
            for j in range(min(per_stage, (problem.cores - 1 - others) // grid.unit) + 1):
                value = cost(first, stop, grid.budget(j))
                if value is not None:
                    table[first, stop, j] = value
    # shift[j, q] = q - j where 0 <= j <= per_stage and j <= q; else the padding column.
    j_index = np.arange(per_stage + 1)[:, None]
    q_index = np.arange(units + 1)[None, :]
    shift = np.where(j_index <= q_index, q_index - j_index, units + 1)
    best = np.full((stages + 1, groups + 1, units + 2), UNAVAILABLE, dtype=np.int64)
    best[0, 0, 0] = _START
    for s in range(1, stages + 1):
        for stop in range(s, groups + 1):
            previous = best[s - 1, s - 1 : stop][:, shift]  # (g', j, q)
            step = table[s - 1 : stop, stop][:, :, None]  # (g', j, 1)
            best[s, stop, : units + 1] = np.maximum(previous, step).min(axis=(0, 1))
    choice = None
    for s in range(1, stages + 1):
        row = best[s, groups, : grid.max_units(s) + 1]
        q = int(np.argmin(row))
        if row[q] != UNAVAILABLE and (choice is None or row[q] < choice[0]):
            choice = (int(row[q]), s, q)
    if choice is None:
        return None
    value, s, q = choice
    ranges: list[tuple[int, int]] = []
    stop = groups
    while s > 0:
        target = int(best[s, stop, q])
        first, j = next(
            (first, j)
            for first in range(stop - 1, s - 2, -1)
            for j in range(min(per_stage, q) + 1)
            if max(int(best[s - 1, first, q - j]), int(table[first, stop, j])) == target
        )
        ranges.append((first, stop))
        stop, s, q = first, s - 1, q - j
    return value, ranges[::-1]


def _completion_partition(
    problem: PartitionProblem, stages: int, cost: CostCache
) -> list[tuple[int, int]] | None:
    """Feasibility completion: ranges minimising the max cost at fewest cores within P."""
    groups, cores = problem.num_groups, problem.cores
    too_many = cores + 1  # marks no segment / no cover: every total above P is infeasible
    need = np.full((groups + 1, groups + 1), too_many, dtype=np.int64)
    at_need = np.full((groups + 1, groups + 1), UNAVAILABLE, dtype=np.int64)
    fewest = problem.stage_cost.fewest if isinstance(problem.stage_cost, FewestCores) else None
    for first in range(groups):
        for stop in range(first + 1, groups + 1):
            if not _usable(first, stop, groups, stages):
                continue
            others = (first > 0) + (stop < groups)  # each other stage needs a core
            if fewest is not None:
                found = fewest(first, stop)
                if found is not None and found[0] <= cores - others:
                    need[first, stop], at_need[first, stop] = found
                continue
            for k in range(1, cores - others + 1):
                value = cost(first, stop, k)
                if value is not None:
                    need[first, stop], at_need[first, stop] = k, value
                    break
    thresholds = np.unique(at_need[at_need != UNAVAILABLE])

    def fewest_cores(limit: int) -> np.ndarray:
        """``h[s][g]``: fewest cores covering ``[0, g)`` with ``s`` stages costing <= limit."""
        allowed = np.where(at_need <= limit, need, too_many)
        h = np.full((stages + 1, groups + 1), too_many, dtype=np.int64)
        h[0, 0] = 0
        for s in range(1, stages + 1):
            for stop in range(s, groups + 1):
                total = h[s - 1, s - 1 : stop] + allowed[s - 1 : stop, stop]
                h[s, stop] = min(int(total.min()), too_many)
        return h

    def feasible(limit: int) -> bool:
        return bool((fewest_cores(limit)[1:, groups] <= cores).any())

    if len(thresholds) == 0 or not feasible(int(thresholds[-1])):
        return None
    low, high = 0, len(thresholds) - 1
    while low < high:
        middle = (low + high) // 2
        if feasible(int(thresholds[middle])):
            high = middle
        else:
            low = middle + 1
    limit = int(thresholds[low])
    h = fewest_cores(limit)
    s = next(s for s in range(1, stages + 1) if h[s, groups] <= cores)
    ranges: list[tuple[int, int]] = []
    stop = groups
    while s > 0:
        first = next(
            first
            for first in range(stop - 1, s - 2, -1)
            if at_need[first, stop] <= limit and h[s - 1, first] + need[first, stop] == h[s, stop]
        )
        ranges.append((first, stop))
        stop, s = first, s - 1
    return ranges[::-1]
