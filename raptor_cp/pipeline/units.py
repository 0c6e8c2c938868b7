"""Partition units: the contiguous runs of groups the initial prefix DP cuts between.

The seeds' initialization DP costs ``O(G² Q Kpack + S G² Q²)`` for ``G``
groups (scheduling.md, "Complexity and limits"): fine for networks of a few
hundred operations, hopeless for a chain of 10^5 single-task operations. When
a graph has more than `UNIT_LIMIT` groups, consecutive groups are therefore
merged into at most `UNIT_LIMIT` *units* of about equal weight, and the DP
places its stage boundaries between units only; the refinement
(`raptor_cp.pipeline.beam`) then moves boundaries group by group. With at most
`UNIT_LIMIT` groups every group is its own unit and nothing changes.

A group's weight is its compute plus the mean group compute, so that runs of
weightless groups (views, reshapes) are merged too; cuts fall at the first group
where the cumulative weight reaches each multiple of ``total / UNIT_LIMIT``.
Units are contiguous, so every unit range is a group range and the stage costs
are those of `StageCosts`. ``O(G)``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from raptor_cp.graph import ComputeGraph
from raptor_cp.pipeline.groups import PipelineGroups
from raptor_cp.pipeline.stage_costs import StageCosts
from raptor_cp.problems import Stage

UNIT_LIMIT = 128
"""Most units the prefix DP partitions; beyond it groups are merged (module docstring)."""


def unit_bounds(graph: ComputeGraph, groups: PipelineGroups, limit: int = UNIT_LIMIT) -> np.ndarray:
    """Group offsets of the units: unit ``u`` is groups ``[bounds[u], bounds[u + 1])``."""
    count = groups.count
    if count <= limit:
        return np.arange(count + 1, dtype=np.int64)
    work = np.add.reduceat(graph.cost[groups.ordered_tasks], groups.offsets[:-1]).astype(float)
    weight = work + work.mean() + 1.0
    cumulative = np.cumsum(weight)
    marks = cumulative[-1] * np.arange(1, limit) / limit
    cuts = np.searchsorted(cumulative, marks, side="left") + 1
    inner = np.unique(np.clip(cuts, 1, count - 1))
    return np.concatenate([[0], inner, [count]]).astype(np.int64)


class UnitCosts:
    """``stage_cost`` of the partition over units: units ``[f, s)`` priced as their groups."""

    def __init__(self, costs: StageCosts, bounds: np.ndarray) -> None:
        self.costs = costs
        self.bounds = np.asarray(bounds, dtype=np.int64)
        self._group = self.bounds.tolist()
        self._fewest: dict[tuple[int, int], tuple[int, int] | None] | None = None

    @property
    def count(self) -> int:
        """Number of units."""
        return len(self._group) - 1

    def __call__(self, first: int, stop: int, cores: int) -> int | None:
        return self.costs(self._group[first], self._group[stop], cores)

    def tabulate(self, cores: Sequence[int]) -> None:
        """Price every unit range at every core count of ``cores`` in one batch."""
        self.costs.tabulate(cores, self.bounds)

    def floor(self, cores: int) -> int:
        """The largest single-unit stage cost on ``cores`` cores (0 if none is available).

        It bounds every partition's maximum stage cost when stages have at most
        ``cores`` cores: packing costs are exact on fixed loads, so they cannot
        shrink when a range grows or grow when cores are added, and spans only
        grow with the range.
        """
        return self.costs.range_floor(self.bounds, cores)

    def fewest(self, first: int, stop: int) -> tuple[int, int] | None:
        """Fewest cores with an available cost of units ``[first, stop)`` and that cost.

        The `raptor_cp.heuristics.prefix_dp.FewestCores` answer, for every unit
        range in one batch on the first call (`StageCosts.fewest_cores`).
        """
        if self._fewest is None:
            firsts, stops = np.triu_indices(len(self._group), k=1)
            found = self.costs.fewest_cores(self.bounds[firsts], self.bounds[stops])
            self._fewest = {
                (int(f), int(s)): found[i]
                for i, (f, s) in enumerate(zip(firsts.tolist(), stops.tolist(), strict=True))
            }
        return self._fewest[first, stop]

    def stages(self, stages: Sequence[Stage]) -> tuple[Stage, ...]:
        """Unit stages as group stages."""
        return tuple(Stage(self._group[s.first], self._group[s.stop], s.cores) for s in stages)
