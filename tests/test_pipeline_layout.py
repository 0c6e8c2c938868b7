"""PipelineCoreLayout: snake regions, adjacency, capacity and placement ranking."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
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
from raptor_cp.targets.base import TransferTerms
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

    def transfer_terms(self, cores: Sequence[int]) -> TransferTerms:
        hops = np.array([[self.hops(a, b) for b in cores] for a in cores], dtype=np.int64)
        return TransferTerms(0 * hops, self.ns_per_byte * hops, 1, lambda nbytes, direct: 0)


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
    stage = placer.stage(list(range(7)), [])
    assert placer.greedy(stage, placer.prices(stage, (0,))) is None


def test_replicated_placement_runs_the_lanes_of_one_weight_side_by_side() -> None:
    # Six 3-slot workers of two weights on four 4-slot cores: one copy per core, so
    # two copies of each weight; retained packing keeps three lanes on one core.
    graph = _fan_graph()
    placer = StagePlacer(graph, Grid(12, ns_per_byte=0, slots=4))
    region = snake_order(placer.target)[:4]
    stage = placer.stage(list(range(7)), [])
    prices = placer.prices(stage, region)
    core = placer.replicated(stage, prices)
    assert core is not None
    workers = core[1:].tolist()
    assert {len({core[t] for t in lanes}) for lanes in ((1, 2, 3), (4, 5, 6))} == {2}
    assert len(set(workers)) == 4
    timing = placer.timing(stage, prices, core)
    retained = placer.timing(stage, prices, np.array([0, 0, 0, 0, 1, 1, 1]))
    assert (timing.span_ns, retained.span_ns) == (20, 35)  # two lanes a core against 5 + 30


def test_replicated_placement_needs_limited_capacity() -> None:
    graph = _fan_graph()
    placer = StagePlacer(graph, GenericTarget(4))
    stage = placer.stage(list(range(7)), [])
    assert placer.replicated(stage, placer.prices(stage, (0, 1, 2, 3))) is None


def _timing(demand: int, span: int, compute: int = 0, window: int = 0) -> StageTiming:
    return StageTiming({0: demand}, {0: compute}, {}, (), span, window)


def test_span_breaks_ties_within_one_percent_of_the_best_demand() -> None:
    assert rank_placements([_timing(1000, 50), _timing(1010, 10)]) == 1
    assert rank_placements([_timing(1000, 50), _timing(1011, 10)]) == 0
    assert rank_placements([_timing(1000, 10, 7), _timing(1000, 10, 5)]) == 1
    assert rank_placements([_timing(1000, 10, 5), _timing(1000, 10, 5)]) == 0


def test_a_core_window_longer_than_the_demand_decides_the_rank() -> None:
    # Retained packing's shape: low demand, but one core busy over a long window.
    retained, spread = _timing(1000, 9000, window=4000), _timing(1500, 3000, window=3000)
    assert rank_placements([retained, spread]) == 1
    assert rank_placements([_timing(1000, 9000, window=1005), _timing(1010, 10)]) == 1


def test_the_window_runs_from_a_cores_first_start_to_its_last_finish() -> None:
    # Core 0 runs a (0..2) and c (5..6) around b's 3 ns on core 1 plus two 1 ns hops.
    graph = ComputeGraph(
        names=("a", "b", "c"),
        cost=np.array([2, 3, 1]),
        edge_src=np.array([0, 1]),
        edge_dst=np.array([1, 2]),
        edge_bytes=np.array([1, 1]),
    )
    placer = StagePlacer(graph, Grid(2, ns_per_byte=1))
    member = np.ones(3, dtype=bool)
    stage = placer.stage([0, 1, 2], placer.stage_edges([0, 1, 2], member))
    timing = placer.timing(stage, placer.prices(stage, (0, 1)), np.array([0, 1, 0]))
    hop = placer.target.transfer_ns(0, 1, 1)
    assert timing.span_ns == 2 + hop + 3 + hop + 1
    assert timing.window_ns == timing.span_ns
    assert timing.cycle_ns == max(timing.demand_ns, timing.window_ns)


def test_snake_path_stays_connected_through_a_partial_last_row() -> None:
    # pimcomp: 136 cores on a 12 x 12 layout, so the last row holds only cores 132..135.
    from raptor_cp.pipeline.layout import snake_order
    from raptor_cp.targets.registry import resolve_target

    target = resolve_target("pimcomp")
    path = snake_order(target)
    assert sorted(path) == list(range(136))
    assert all(target.hops(a, b) == 1 for a, b in itertools.pairwise(path))
