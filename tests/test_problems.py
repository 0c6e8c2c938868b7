"""LatencyProblem's own checks: structure, per-core costs, and the fleet capacity bound."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

from raptor_cp.errors import InvalidInstanceError, ProvedInfeasibleError
from raptor_cp.graph import ComputeGraph
from raptor_cp.problems import LatencyProblem
from raptor_cp.targets.generic import GenericTarget


@dataclass(frozen=True)
class TwoSlotCores(GenericTarget):
    """Generic cores that each hold two resident-weight slots."""

    def capacity(self, core: int) -> int:
        return 2


def weighted(sizes: list[int]) -> ComputeGraph:
    return ComputeGraph(
        names=tuple(f"t{i}" for i in range(len(sizes))),
        cost=[1] * len(sizes),
        edge_src=[],
        edge_dst=[],
        edge_bytes=[],
        task_weights=tuple((i,) for i in range(len(sizes))),
        weight_size=sizes,
        name="g",
    )


def test_weights_beyond_the_fleet_capacity_are_proved_infeasible() -> None:
    message = (
        "g: one copy of every resident weight needs 5 slots but generic:2 holds 4 in 2 cores "
        "(at least 3 cores of 2 needed)"
    )
    with pytest.raises(ProvedInfeasibleError, match=re.escape(message)):
        LatencyProblem(weighted([2, 2, 1]), TwoSlotCores(2))


def test_weights_that_fill_the_fleet_exactly_are_accepted() -> None:
    problem = LatencyProblem(weighted([2, 1, 1]), TwoSlotCores(2))
    assert problem.graph.num_tasks == 3


def test_per_core_costs_must_match_the_target() -> None:
    graph = ComputeGraph(("a",), [1], [], [], [], core_cost=[[1, 2, 3]], name="g")
    with pytest.raises(InvalidInstanceError, match=re.escape("g: per-core costs for 3 cores")):
        LatencyProblem(graph, GenericTarget(2))
