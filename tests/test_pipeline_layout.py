"""PipelineCoreLayout: snake regions, adjacency, capacity and placement ranking."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pytest

from raptor_cp.errors import ScheduleViolationError
from raptor_cp.graph import ComputeGraph
from raptor_cp.pipeline.layout import (
    PipelineCoreLayout,
    StagePlacer,
    StageTiming,
    check_region,
    rank_placements,
    snake_order,
)
from raptor_cp.targets.generic import GenericTarget
from raptor_cp.targets.registry import resolve_target


@dataclass(frozen=True)
class Grid(GenericTarget):
    """``rows`` x ``cols`` mesh; transfers cost ``ns_per_byte`` per byte per hop."""

    rows: int = 3
    cols: int = 4
    slots: int = 4

    def coordinates(self, core: int) -> tuple[int, int]:
        return divmod(core, self.cols)

    def hops(self, src: int, dst: int) -> int:
        (r1, c1), (r2, c2) = self.coordinates(src), self.coordinates(dst)
        return abs(r1 - r2) + abs(c1 - c2)

    def capacity(self, core: int) -> int:
        return self.slots

    def transfer_ns(self, src: int, dst: int, nbytes: int, direct: bool = False) -> int:
        return nbytes * self.ns_per_byte * self.hops(src, dst)


def test_snake_order_visits_neighbours_one_hop_apart() -> None:
    grid = Grid(12)
    path = snake_order(grid)
    assert path == (0, 1, 2, 3, 7, 6, 5, 4, 8, 9, 10, 11)
    assert all(grid.hops(a, b) == 1 for a, b in itertools.pairwise(path))


@pytest.mark.parametrize("budgets", [[1, 167], [42, 42, 42, 42], [5, 60, 3, 100], [13] * 12])
def test_regions_on_arch_a_are_contiguous_and_disjoint(budgets: list[int]) -> None:
    target = resolve_target("arch-a")
    layout = PipelineCoreLayout.build(target, budgets)
    assert [len(r) for r in layout.regions] == budgets
    cores = [p for region in layout.regions for p in region]
    assert len(set(cores)) == len(cores)
    for stage, region in enumerate(layout.regions):
        check_region(target, region, stage)
    stage = layout.stage_of_core(target.cores)
    assert stage.count(-1) == target.cores - sum(budgets)


def test_budgets_beyond_the_chip_are_rejected() -> None:
    with pytest.raises(
        ScheduleViolationError,
        match=r"^stage budgets \[8, 5\] need 13 cores but generic:12 has 12$",
    ):
        PipelineCoreLayout.build(Grid(12), [8, 5])


def test_a_region_split_in_two_is_not_adjacent() -> None:
    with pytest.raises(
        ScheduleViolationError,
        match=r"^stage 2: core 11 is not connected to core 0 through the stage's own cores$",
    ):
        check_region(Grid(12), (0, 1, 11), 2)


def _fan_graph() -> ComputeGraph:
    """One source feeding six workers; workers 0-2 use weight 0, 3-5 weight 1 (3 slots each)."""
    n = 7
    return ComputeGraph(
        names=tuple(f"t{i}" for i in range(n)),
        cost=np.array([5, 10, 10, 10, 10, 10, 10], dtype=np.int64),
        edge_src=np.zeros(6, dtype=np.int64),
        edge_dst=np.arange(1, 7, dtype=np.int64),
        edge_bytes=np.full(6, 2, dtype=np.int64),
        task_weights=((), (0,), (0,), (0,), (1,), (1,), (1,)),
        weight_size=np.array([3, 3], dtype=np.int64),
        name="fan",
    )


def test_placement_respects_capacity_on_every_core() -> None:
    graph = _fan_graph()
    target = Grid(12, ns_per_byte=1, slots=4)
    placer = StagePlacer(graph, target)
    region = snake_order(target)[:4]
    placement = placer.place(list(range(7)), [0, 0, 0, 0, 1, 1, 1], region)
    resident: dict[int, set[int]] = {}
    for t, p in zip(placement.tasks, placement.cores, strict=True):
        assert p in region
        resident.setdefault(p, set()).update(graph.task_weights[t])
    assert all(3 * len(ws) <= 4 for ws in resident.values())
    assert placement.timing.demand_ns == max(placement.timing.core_demand.values())


def test_greedy_placement_gives_up_when_a_task_fits_nowhere() -> None:
    graph = _fan_graph()
    target = Grid(12, ns_per_byte=1, slots=3)
    placer = StagePlacer(graph, target)
    assert placer.greedy(list(range(7)), (0,), []) is None


def _timing(demand: int, span: int, compute: int = 0) -> StageTiming:
    return StageTiming({0: demand}, {0: compute}, {}, (), span)


def test_span_breaks_ties_within_one_percent_of_the_best_demand() -> None:
    assert rank_placements([_timing(1000, 50), _timing(1010, 10)]) == 1
    assert rank_placements([_timing(1000, 50), _timing(1011, 10)]) == 0
    assert rank_placements([_timing(1000, 10, 7), _timing(1000, 10, 5)]) == 1
    assert rank_placements([_timing(1000, 10, 5), _timing(1000, 10, 5)]) == 0


def test_snake_path_stays_connected_through_a_partial_last_row() -> None:
    # pimcomp: 136 cores on a 12 x 12 layout, so the last row holds only cores 132..135.
    from raptor_cp.pipeline.layout import snake_order
    from raptor_cp.targets.registry import resolve_target

    target = resolve_target("pimcomp")
    path = snake_order(target)
    assert sorted(path) == list(range(136))
    assert all(target.hops(a, b) == 1 for a, b in itertools.pairwise(path))
