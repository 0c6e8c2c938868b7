"""Partition units: merged groups for the prefix DP on graphs with many operations."""

from __future__ import annotations

import itertools

import numpy as np
from test_pipeline_stage_costs import SmallCores

from raptor_cp.graph import ComputeGraph
from raptor_cp.heuristics.prefix_dp import SPARE_UNITS, initial_partition
from raptor_cp.pipeline.groups import pipeline_groups
from raptor_cp.pipeline.initial import partition_problem, tabulate_grid
from raptor_cp.pipeline.stage_costs import StageCosts
from raptor_cp.pipeline.units import UnitCosts, unit_bounds
from raptor_cp.targets.generic import GenericTarget


def _chain(n: int, weights: int = 0) -> ComputeGraph:
    return ComputeGraph(
        names=tuple(f"t{i}" for i in range(n)),
        cost=np.array([10 + (7 * i) % 13 for i in range(n)], dtype=np.int64),
        edge_src=np.arange(n - 1),
        edge_dst=np.arange(1, n),
        edge_bytes=np.full(n - 1, 8, dtype=np.int64),
        task_weights=tuple((i % weights,) if weights else () for i in range(n)),
        weight_size=np.ones(weights, dtype=np.int64),
    )


def test_few_groups_are_their_own_units() -> None:
    graph = _chain(20)
    assert unit_bounds(graph, pipeline_groups(graph), limit=20).tolist() == list(range(21))


def test_many_groups_merge_into_at_most_the_limit_of_contiguous_units() -> None:
    graph = _chain(1000)
    bounds = unit_bounds(graph, pipeline_groups(graph), limit=16)
    assert bounds[0] == 0 and bounds[-1] == 1000
    assert 8 <= len(bounds) - 1 <= 16
    assert np.all(np.diff(bounds) > 0)
    # Units weigh about the same: none holds more than twice its share of groups.
    assert int(np.diff(bounds).max()) <= 2 * 1000 // 16


def test_unit_partition_covers_every_group_of_a_long_chain() -> None:
    graph = _chain(3000)
    problem, units = partition_problem(graph, GenericTarget(8), 4)
    assert problem.num_groups == units.count <= 128
    tabulate_grid(problem, units, SPARE_UNITS)
    solution = initial_partition(problem)
    assert solution.stages is not None
    stages = units.stages(solution.stages)
    assert (stages[0].first, stages[-1].stop) == (0, 3000)
    assert all(a.stop == b.first for a, b in itertools.pairwise(stages))


def test_fewest_cores_agrees_with_trying_every_core_count() -> None:
    graph = _chain(40, weights=12)
    target = SmallCores(6, slots=3)
    groups = pipeline_groups(graph)
    costs = UnitCosts(StageCosts(graph, target, groups), unit_bounds(graph, groups, limit=10))
    for first in range(costs.count):
        for stop in range(first + 1, costs.count + 1):
            scan = next(
                ((k, c) for k in range(1, 7) if (c := costs(first, stop, k)) is not None), None
            )
            assert costs.fewest(first, stop) == scan, (first, stop)
