"""The refinement's cheap proxy: stage packing/dependency costs and aggregate memory demand.

scheduling.md, "Throughput scheduling uses one bounded joint optimizer": "A
cheap proxy ranks the neighborhood before physical packing and queue
analysis. It uses ordered-packing curves, dependency spans and aggregate
shared-memory demand." For a proposed partition with core budgets:

* each stage's cost is its allocation cost at its budget,
  ``max(packing cost, dependency span)`` (`StageCosts.allocation_cost`: the
  ordered-packing cost, or the reuse-first packing's demand when order
  cannot hold the stage's weights on that many cores), None when neither
  packs it;
* the memory demand is the memory controller's serialized service of the
  cross-stage traffic (`RangeMemory`): the requests of
  `raptor_cp.pipeline.boundary.boundary_demand` (one store per publication
  read by a later stage, scalar projections stored apart, one load per
  cross-stage consumer transfer) priced by its `controller_prices`, the
  controller's service alone, as the queue model serializes it;
* the proxy value is ``max(largest stage cost, memory demand)``: the two
  terms of the interval a placement cannot shorten. Memory service is shared
  by all stages, so it enters once and is never added to a stage.

`ProxyScore.key` ranks proposals by their value, proposals that relieve a
bottleneck stage of the parent first among ties (scheduling.md: "processor
service and critical recurrence contributions guide ties toward affected
bottlenecks"), then by the stage costs sorted in decreasing order (the
next-worst stage), then by the canonical stage/budget vector. Values within
the seeds' 2.1 % near-equivalence margin (`raptor_cp.pipeline.selection.MARGIN`)
are ties: a proposal that relieves no bottleneck stage ranks as if its value
were 2.1 % higher. The proxy cannot separate such proposals (on ResNet-18,
arch-a, depth 8 the 32 evaluated candidates' values lie within 1.1 % of each
other while their queue estimates range over 3.5-6.4 ms), and a move that
leaves the stage binding the parent's recurrence as it is keeps that
recurrence: with exact ties only, 8 of the 30 evaluated neighbours returned
their parent's estimate exactly (docs/benchmarks.md, "Fourteenth pass").

A move *relieves* a bottleneck stage (`relieves`) when it changes that stage
and no stage of the proposal that holds some of its groups has a longer
dependency span (`StageCosts.span`, the seeds' third proxy ingredient) than
it had: a split or a core transfer always does, a merge does not once it
lengthens the stage's chain, and a boundary move does when neither stage
that now holds its groups has a longer span than the bottleneck had. A stage's own
recurrence follows its chain when its cores' programs couple (a core that
waits for a transfer from a later part of the chain), which is what binds the
stages of these plans (docs/benchmarks.md, "Twelfth pass"); the proxy's
packing term pools a merged block's cores and its memory term drops the
removed boundary's traffic, so a merge often has the lowest value of all.
Counted as guided, merges took 13 of the 32 evaluations on ResNet-18 at
depth 8, none better than its parent (docs/benchmarks.md, "Seventeenth
pass").
Exact rationals: deterministic.

`RangeMemory` answers a stage range from edges sorted by consumer group and
tasks in group order: ``O(E_range + T_range)`` numpy work per new range,
memoised; ``O(T + E)`` preprocessing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from raptor_cp.graph import SCALAR_PROJECTION, ComputeGraph
from raptor_cp.pipeline.boundary import controller_prices, priced, publication_bytes
from raptor_cp.pipeline.groups import PipelineGroups
from raptor_cp.pipeline.selection import MARGIN
from raptor_cp.pipeline.stage_costs import StageCosts
from raptor_cp.problems import Stage
from raptor_cp.targets.base import SchedulingTarget


class RangeMemory:
    """Memory-controller service of the stores and loads a stage range implies (ns).

    The same requests as `raptor_cp.pipeline.boundary.boundary_demand`, priced
    by the same `controller_prices`, but per stage range: a range's loads are
    its cross-stage consumer transfers (edges into it from an earlier group);
    its stores are one per publication read by a later stage through a plain
    or direct edge, plus one per scalar-projection read by a later stage (its
    own bytes). Summed over a partition's stages it equals the boundary
    demand's service.
    """

    def __init__(
        self, graph: ComputeGraph, groups: PipelineGroups, target: SchedulingTarget
    ) -> None:
        read, write = controller_prices(target)
        group = groups.group_of_task(graph.num_tasks)
        src, dst = group[graph.edge_src], group[graph.edge_dst]
        order = np.argsort(dst, kind="stable")
        self._edge_src_group = src[order]
        self._edge_load = priced(graph.edge_bytes, read)[order]
        self._edge_start = np.searchsorted(dst[order], np.arange(groups.count + 1))
        scalar = graph.edge_kind == SCALAR_PROJECTION
        last = np.full(graph.num_tasks, -1, dtype=np.int64)
        np.maximum.at(last, graph.edge_src[~scalar], dst[~scalar])
        tasks = groups.ordered_tasks
        self._last_reader = last[tasks]
        self._store = priced(publication_bytes(graph), write)[tasks]
        self._task_start = groups.offsets
        by_source = np.argsort(src[scalar], kind="stable")
        self._scalar_dst = dst[scalar][by_source]
        self._scalar_store = priced(graph.edge_bytes[scalar], write)[by_source]
        self._scalar_start = np.searchsorted(src[scalar][by_source], np.arange(groups.count + 1))
        self._memo: dict[tuple[int, int], tuple[int, int]] = {}

    def __call__(self, first: int, stop: int) -> tuple[int, int]:
        """``(store_ns, load_ns)`` of groups ``[first, stop)`` as one stage."""
        key = (first, stop)
        found = self._memo.get(key)
        if found is None:
            a, b = int(self._edge_start[first]), int(self._edge_start[stop])
            loads = int(self._edge_load[a:b][self._edge_src_group[a:b] < first].sum())
            a, b = int(self._task_start[first]), int(self._task_start[stop])
            stores = int(self._store[a:b][self._last_reader[a:b] >= stop].sum())
            a, b = int(self._scalar_start[first]), int(self._scalar_start[stop])
            stores += int(self._scalar_store[a:b][self._scalar_dst[a:b] >= stop].sum())
            found = self._memo[key] = (stores, loads)
        return found


@dataclass(frozen=True)
class ProxyScore:
    """The proxy of one proposal (integer ns)."""

    stage_cost: tuple[int, ...]
    """``max(packing, span)`` of each stage at its budget."""
    memory_ns: int
    """Memory-controller service of all cross-stage stores and loads."""

    @property
    def value(self) -> int:
        return max(max(self.stage_cost), self.memory_ns)

    def key(self, relieves_bottleneck: bool, stages: Sequence[Stage]) -> tuple[object, ...]:
        """Rank of the proposal (lower first; see the module docstring)."""
        canonical = tuple((s.first, s.stop, s.cores) for s in stages)
        standing = Fraction(self.value) * (1 if relieves_bottleneck else 1 + MARGIN)
        return (
            standing,
            not relieves_bottleneck,
            tuple(sorted(self.stage_cost, reverse=True)),
            canonical,
        )

    def to_json(self) -> dict[str, object]:
        return {
            "value_ns": self.value,
            "stage_cost_ns": list(self.stage_cost),
            "memory_ns": self.memory_ns,
        }


def relieves(bottleneck: Stage, proposal: Sequence[Stage], span: Callable[[int, int], int]) -> bool:
    """Whether no stage of ``proposal`` holding some of ``bottleneck``'s groups has a longer
    dependency span than ``bottleneck`` (``span(first, stop)``; see the module docstring).

    The caller asks only about bottleneck stages the move changes. ``O(S)`` span
    lookups for ``S`` stages (memoised per range by `StageCosts.span`).
    """
    limit = span(bottleneck.first, bottleneck.stop)
    return all(
        span(stage.first, stage.stop) <= limit
        for stage in proposal
        if stage.first < bottleneck.stop and bottleneck.first < stage.stop
    )


class SelectionProxy:
    """Scores proposals with one graph's stage costs and range memory."""

    def __init__(self, costs: StageCosts, memory: RangeMemory) -> None:
        self.costs = costs
        self.memory = memory

    @classmethod
    def of(cls, costs: StageCosts, target: SchedulingTarget) -> SelectionProxy:
        """The proxy of ``costs``'s graph and groups on ``target``."""
        return cls(costs, RangeMemory(costs.graph, costs.groups, target))

    def score(self, stages: Sequence[Stage]) -> ProxyScore | None:
        """The proxy of ``stages`` (None when a stage has no ordered packing at its budget)."""
        costs = []
        memory = 0
        for stage in stages:
            cost = self.costs.allocation_cost(stage.first, stage.stop, stage.cores)
            if cost is None:
                return None
            costs.append(cost)
            stores, loads = self.memory(stage.first, stage.stop)
            memory += stores + loads
        return ProxyScore(tuple(costs), memory)
