"""Initial pipeline pieces: spare cores, the interval estimate's terms, compact stage runs."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from raptor_cp.errors import NotFoundWithinBudgetError
from raptor_cp.graph import ComputeGraph
from raptor_cp.heuristics.range_packing import UNAVAILABLE
from raptor_cp.pipeline.groups import pipeline_groups
from raptor_cp.pipeline.initial import add_spare_cores, initial_pipeline
from raptor_cp.pipeline.plan import IntervalEstimate
from raptor_cp.pipeline.stage_costs import StageCosts
from raptor_cp.problems import Stage
from raptor_cp.problems.pipeline import PipelineProblem, check_pipeline_schedule
from raptor_cp.reports.pipeline_selection import task_stage_runs
from raptor_cp.targets.generic import GenericTarget


def test_spare_cores_go_to_the_most_loaded_stage_per_core() -> None:
    stages = (Stage(0, 2, 1), Stage(2, 3, 2), Stage(3, 5, 1))
    # Work per core: 90, 30, 40 -> stage 0 twice (45, then 30), then stage 2 (40 > 30).
    grown = add_spare_cores(stages, 7, work=[90, 60, 40], tasks=[10, 10, 10])
    assert [s.cores for s in grown] == [3, 2, 2]
    assert [(s.first, s.stop) for s in grown] == [(0, 2), (2, 3), (3, 5)]


def test_ties_go_to_the_earlier_stage() -> None:
    grown = add_spare_cores((Stage(0, 1, 1), Stage(1, 2, 1)), 3, work=[50, 50], tasks=[9, 9])
    assert [s.cores for s in grown] == [2, 1]


def test_a_stage_never_gets_more_cores_than_tasks_and_the_rest_stay_idle() -> None:
    grown = add_spare_cores((Stage(0, 1, 1), Stage(1, 2, 1)), 10, work=[100, 1], tasks=[2, 3])
    assert [s.cores for s in grown] == [2, 3]


def test_the_interval_is_the_largest_term_and_names_it() -> None:
    estimate = IntervalEstimate(core_work_ns=10, stage_span_ns=25, memory_service_ns=25)
    assert estimate.interval_ns == 25
    assert estimate.binding == "stage_span"
    assert IntervalEstimate(7, 3, 9).binding == "memory_service"
    assert IntervalEstimate(9, 9, 9).binding == "core_work"


def test_task_stage_runs_are_compact() -> None:
    assert task_stage_runs(np.array([0, 0, 1, 1, 1, 0, 2])) == [
        [0, 2, 0],
        [2, 5, 1],
        [5, 6, 0],
        [6, 7, 2],
    ]
    assert task_stage_runs(np.array([], dtype=np.int64)) == []


@dataclass(frozen=True)
class _Slots(GenericTarget):
    slots: int = 3

    def capacity(self, core: int) -> int:
        return self.slots


def _alternating() -> ComputeGraph:
    """Four one-task operations alternating weights A, B, A, B of 3 slots each."""
    return ComputeGraph(
        names=("a0", "b0", "a1", "b1"),
        cost=np.array([4, 4, 4, 4], dtype=np.int64),
        edge_src=np.array([0, 1, 2], dtype=np.int64),
        edge_dst=np.array([1, 2, 3], dtype=np.int64),
        edge_bytes=np.array([1, 1, 1], dtype=np.int64),
        task_weights=((0,), (1,), (0,), (1,)),
        weight_size=np.array([3, 3], dtype=np.int64),
        name="alternating",
    )


def test_reuse_first_packing_rescues_what_order_cannot_fit() -> None:
    # Four one-task operations alternating weights A, B, A, B of 3 slots on two 3-slot
    # cores: every ordered cut needs four runs, reuse puts A and B on a core each.
    graph = _alternating()
    result = initial_pipeline(graph, _Slots(2), 4)
    assert result.partition.solver == "single-stage-fallback"
    assert result.partition.details["fallback"] == "prefix DP: not_found"
    assert [s.cores for s in result.plan.stages] == [2]
    assert result.packing[0]["packer"] == "reuse-first"
    assert result.packing[0]["reason"] == "order alone cannot hold the stage's weights on 2 cores"
    cores = result.plan.schedule.core.tolist()
    assert cores[0] == cores[2] != cores[1] == cores[3]
    problem = PipelineProblem(graph, _Slots(2), 4)
    check_pipeline_schedule(problem, result.plan.groups, result.plan.schedule)


def test_a_budget_below_the_capacity_bound_is_refused_without_packing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A, B alternating on 3-slot cores need two cores whatever the order: asking for
    # one core must not run the (seconds-long on large stages) reuse-first packer.
    graph = _alternating()
    costs = StageCosts(graph, _Slots(4), pipeline_groups(graph))
    packed: list[tuple[int, int, int]] = []
    real = costs._reuse_packing
    monkeypatch.setattr(costs, "_reuse_packing", lambda *a: packed.append(a) or real(*a))
    assert costs.capacity_bound(0, 4) == 2
    assert costs.allocation_cost(0, 4, 1) is None
    assert costs.curve(0, 4, 1).tolist() == [UNAVAILABLE]
    with pytest.raises(NotFoundWithinBudgetError, match=r"no packing on 1 cores fits capacity 3"):
        costs.assignment(0, 4, 1)
    assert packed == [(0, 4, 1)]  # only `assignment`'s own attempt on its budget
    assert costs.allocation_cost(0, 4, 2) is not None
    assert packed == [(0, 4, 1), (0, 4, 2)]


def test_allocation_curves_use_reuse_first_where_order_cannot_hold_the_weights() -> None:
    graph = _alternating()
    costs = StageCosts(graph, _Slots(4), pipeline_groups(graph))
    assert [costs(0, 4, k) for k in (1, 2, 3, 4)][:3] == [None, None, None]
    bound, (_core, evidence) = costs.reuse_first(0, 4, 4)  # type: ignore[misc]
    assert (bound, evidence["packer"]) == (2, "reuse-first")
    demand = max(int(evidence["demand_ns"]), costs.span(0, 4))  # type: ignore[call-overload]
    # On three cores order cannot hold the stage: reuse-first fills the curve from 2 cores.
    assert costs.curve(0, 4, 3).tolist() == [UNAVAILABLE, demand, demand]
    assert [costs.allocation_cost(0, 4, k) for k in (1, 2, 3)] == [None, demand, demand]
    # On four cores order holds it: the curve stays ordered-only.
    assert costs.curve(0, 4, 4).tolist()[:3] == [UNAVAILABLE] * 3
