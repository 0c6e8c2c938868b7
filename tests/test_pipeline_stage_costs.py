"""Stage costs: batched ordered packing over group ranges, against brute force."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pytest

from raptor_cp.graph import ComputeGraph
from raptor_cp.heuristics.ordered_packing import ordered_packing
from raptor_cp.heuristics.range_packing import UNAVAILABLE, RangePacker, capacity_reach
from raptor_cp.pipeline.groups import pipeline_groups
from raptor_cp.pipeline.spans import DependencySpans
from raptor_cp.pipeline.stage_costs import StageCosts, packing_order
from raptor_cp.problems import (
    PackingProblem,
    PackingSolution,
    Status,
    check_packing,
    packing_demand,
)
from raptor_cp.targets.generic import GenericTarget


@dataclass(frozen=True)
class SmallCores(GenericTarget):
    """Generic cores with ``slots`` weight slots each."""

    slots: int = 5

    def capacity(self, core: int) -> int:
        return self.slots


def _layer_graph() -> ComputeGraph:
    """conv (2 lanes x 2 array groups + 2 sums) -> relu (2 lanes) -> fc (2 lanes, 1 group)."""
    names = (
        "conv/l0/ag0", "conv/l0/ag1", "conv/l0/sum",
        "conv/l1/ag0", "conv/l1/ag1", "conv/l1/sum",
        "relu/l0", "relu/l1", "fc/l0", "fc/l1",
    )  # fmt: skip
    cost = [30, 20, 5, 35, 25, 5, 4, 4, 40, 45]
    weights = [(0,), (1,), (), (0,), (1,), (), (), (), (2,), (2,)]
    edges = [(0, 2, 8), (1, 2, 8), (3, 5, 8), (4, 5, 8), (2, 6, 16), (5, 7, 16),
             (6, 8, 16), (7, 8, 4), (7, 9, 16)]  # fmt: skip
    src, dst, nbytes = (np.array(c, dtype=np.int64) for c in zip(*edges, strict=True))
    return ComputeGraph(
        names=names,
        cost=np.array(cost, dtype=np.int64),
        edge_src=src,
        edge_dst=dst,
        edge_bytes=nbytes,
        task_weights=tuple(weights),
        weight_size=np.array([2, 2, 3], dtype=np.int64),
        operation=np.array([0, 0, 0, 0, 0, 0, 1, 1, 2, 2], dtype=np.int64),
        lane=np.array([0, 0, 0, 1, 1, 1, 0, 1, 0, 1], dtype=np.int64),
        operation_names=("conv", "relu", "fc"),
        name="layers",
    )


def _brute_force_ordered(loads: list[int], weights: list[tuple[int, ...]], size: list[int],
                         capacity: int, cores: int) -> int | None:  # fmt: skip
    """Least max run load over every split of the sequence into <= ``cores`` fitting runs."""
    n = len(loads)
    best = None
    for runs in range(1, min(cores, n) + 1):
        for cuts in itertools.combinations(range(1, n), runs - 1):
            bounds = [0, *cuts, n]
            fits = all(
                sum(size[w] for w in {w for t in range(a, b) for w in weights[t]}) <= capacity
                for a, b in itertools.pairwise(bounds)
            )
            if fits:
                worst = max(sum(loads[a:b]) for a, b in itertools.pairwise(bounds))
                best = worst if best is None else min(best, worst)
    return best


def _brute_force_chain(graph: ComputeGraph, tasks: set[int]) -> int:
    """Longest compute chain with every task in ``tasks``."""
    finish: dict[int, int] = {}
    for t in graph.topological_order.tolist():
        if t in tasks:
            preds = [int(graph.edge_src[e]) for e in graph.predecessor_edges(t)]
            finish[t] = graph.cost_on(t, 0) + max(
                (finish[p] for p in preds if p in tasks), default=0
            )
    return max(finish.values())


def _brute_force_span(graph: ComputeGraph, tasks: set[int]) -> int:
    """Latest ASAP finish minus earliest ASAP start of ``tasks`` (whole-graph ASAP times)."""
    finish: dict[int, int] = {}
    for t in graph.topological_order.tolist():
        preds = [int(graph.edge_src[e]) for e in graph.predecessor_edges(t)]
        finish[t] = graph.cost_on(t, 0) + max((finish[p] for p in preds), default=0)
    return max(finish[t] for t in tasks) - min(finish[t] - graph.cost_on(t, 0) for t in tasks)


def test_packing_order_is_weight_major_inside_a_group() -> None:
    graph = _layer_graph()
    order = packing_order(graph, pipeline_groups(graph))
    assert order.tolist() == [0, 3, 1, 4, 2, 5, 6, 7, 8, 9]


@pytest.mark.parametrize("slots", [3, 4, 5, 7])
def test_stage_cost_matches_brute_force_ordered_packing_and_span(slots: int) -> None:
    graph = _layer_graph()
    target = SmallCores(4, ns_per_byte=1, slots=slots)
    groups = pipeline_groups(graph)
    costs = StageCosts(graph, target, groups)
    incident = np.zeros(graph.num_tasks, dtype=np.int64)
    for a, b, nbytes in zip(graph.edge_src, graph.edge_dst, graph.edge_bytes, strict=True):
        incident[[a, b]] += target.mean_transfer_ns(int(nbytes))
    for first in range(groups.count):
        for stop in range(first + 1, groups.count + 1):
            sequence = costs.stage_tasks(first, stop).tolist()
            span = _brute_force_span(graph, set(sequence))
            for cores in range(1, 5):
                packed = _brute_force_ordered(
                    [int(graph.cost[t] + incident[t]) for t in sequence],
                    [graph.task_weights[t] for t in sequence],
                    graph.weight_size.tolist(),
                    slots,
                    cores,
                )
                expected = None if packed is None else max(packed, span)
                assert costs(first, stop, cores) == expected, (first, stop, cores)


def test_stage_assignment_fits_capacity_and_costs_at_most_the_stage_cost() -> None:
    graph = _layer_graph()
    costs = StageCosts(graph, SmallCores(4, ns_per_byte=1, slots=4), pipeline_groups(graph))
    for cores in (2, 3, 4):
        core, evidence = costs.assignment(0, 3, cores)
        problem = costs.packing_problem(0, 3, cores)
        order = costs.stage_tasks(0, 3).tolist()
        in_problem_order = tuple(
            core[costs.groups.range_tasks(0, 3).tolist().index(t)] for t in order
        )
        check_packing(
            problem, PackingSolution(in_problem_order, status=Status.FEASIBLE, solver="ordered")
        )
        assert max(packing_demand(problem, in_problem_order)) <= costs.packing_cost(0, 3, cores)
        assert evidence["packer"] == "ordered"


def test_too_few_cores_for_the_weights_is_unavailable() -> None:
    graph = _layer_graph()
    costs = StageCosts(graph, SmallCores(4, slots=3), pipeline_groups(graph))
    # conv needs its two 2-slot groups on separate 3-slot cores; fc's 3-slot group a third.
    assert costs(0, 3, 2) is None
    assert costs(0, 3, 3) is not None


def test_range_packer_is_exact_like_ordered_packing_without_edges() -> None:
    rng = np.random.default_rng(7)
    for _ in range(60):
        n, kinds = int(rng.integers(1, 14)), int(rng.integers(1, 6))
        loads = rng.integers(0, 40, n)
        weights = [
            tuple(rng.integers(0, kinds, int(rng.integers(0, 3))).tolist()) for _ in range(n)
        ]
        size = rng.integers(1, 4, kinds).tolist()
        capacity = max(4, *(sum(size[w] for w in set(ws)) for ws in weights))
        packer = RangePacker(loads, capacity_reach(weights, size, capacity))
        queries = [(a, b, k) for a in range(n) for b in range(a + 1, n + 1) for k in range(1, 5)]
        starts, stops, cores = (np.array(c) for c in zip(*queries, strict=True))
        for (a, b, k), cost in zip(
            queries, packer.costs(starts, stops, cores).tolist(), strict=True
        ):
            problem = PackingProblem(
                tuple(loads[a:b].tolist()), tuple(weights[a:b]), tuple(size), k, capacity
            )
            reference = ordered_packing(problem)
            assert cost == (UNAVAILABLE if reference is None else reference.cost)
            if reference is not None:
                assert len(packer.runs(a, b, cost)) <= k


def test_dependency_spans_are_asap_extents_bounding_the_longest_inner_chain() -> None:
    graph = _layer_graph()
    groups = pipeline_groups(graph)
    spans = DependencySpans(graph, groups)
    for first in range(groups.count):
        for stop in range(first + 1, groups.count + 1):
            tasks = set(groups.range_tasks(first, stop).tolist())
            assert spans(first, stop) == _brute_force_span(graph, tasks)
            assert spans(first, stop) >= _brute_force_chain(graph, tasks)
    # relu + fc: the chain relu/l1 -> fc/l1 is 49 ns; relu/l0 starts 5 ns before relu/l1.
    assert (spans(1, 3), _brute_force_chain(graph, set(groups.range_tasks(1, 3).tolist()))) == (
        54,
        49,
    )


def test_dependency_span_of_a_chain_of_groups_is_its_compute_sum() -> None:
    n = 9
    graph = ComputeGraph(
        names=tuple(f"t{i}" for i in range(n)),
        cost=np.arange(1, n + 1, dtype=np.int64),
        edge_src=np.arange(n - 1),
        edge_dst=np.arange(1, n),
        edge_bytes=np.zeros(n - 1, dtype=np.int64),
    )
    spans = DependencySpans(graph, pipeline_groups(graph))
    firsts, stops = np.triu_indices(n + 1, k=1)
    expected = [sum(range(a + 1, b + 1)) for a, b in zip(firsts, stops, strict=True)]
    assert spans.batch(firsts, stops).tolist() == expected


def test_a_whole_curve_equals_the_costs_asked_one_core_count_at_a_time() -> None:
    graph = _layer_graph()
    groups = pipeline_groups(graph)
    batch = StageCosts(graph, SmallCores(4, ns_per_byte=1, slots=4), groups)
    single = StageCosts(graph, SmallCores(4, ns_per_byte=1, slots=4), groups)
    for first in range(groups.count):
        for stop in range(first + 1, groups.count + 1):
            curve = batch.curve(first, stop, 6).tolist()
            expected = [single(first, stop, k) for k in range(1, 7)]
            assert curve == [UNAVAILABLE if c is None else c for c in expected]
