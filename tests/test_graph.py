"""`ComputeGraph.validate`, its topological order, and the lower bounds of `raptor_cp.bounds`."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pytest

from raptor_cp.bounds import critical_path_ns, lower_bounds
from raptor_cp.errors import InvalidInstanceError
from raptor_cp.graph import BaselineMemory, ComputeGraph
from raptor_cp.targets.base import UNLIMITED_CAPACITY
from raptor_cp.targets.generic import GenericTarget


@dataclass(frozen=True)
class SlotTarget:
    """Just enough of a target for `lower_bounds`: ``cores`` cores of ``slots`` slots."""

    cores: int
    slots: int

    def capacity(self, core: int) -> int:
        return self.slots


def graph(
    costs: list[int],
    edges: list[tuple[int, int]] | None = None,
    nbytes: list[int] | None = None,
    **fields: object,
) -> ComputeGraph:
    """Tasks named a, b, c... with the given costs and ``(src, dst)`` edges."""
    edges = edges or []
    return ComputeGraph(
        names=tuple("abcdefgh"[: len(costs)]),
        cost=np.array(costs),
        edge_src=np.array([s for s, _ in edges], dtype=np.int64),
        edge_dst=np.array([d for _, d in edges], dtype=np.int64),
        edge_bytes=np.array(nbytes if nbytes is not None else [0] * len(edges), dtype=np.int64),
        name="g",
        **fields,  # type: ignore[arg-type]
    )


DIAMOND = [(0, 1), (0, 2), (1, 3), (2, 3)]


def test_cycle_is_rejected() -> None:
    # a -> b -> c -> b: after a, b still waits for c, so b is the first stuck task.
    cyclic = graph([1, 1, 1], [(0, 1), (1, 2), (2, 1)])
    with pytest.raises(
        InvalidInstanceError, match=re.escape("g: dependency cycle through task 'b'")
    ):
        cyclic.validate()


def test_self_loop_is_rejected() -> None:
    with pytest.raises(
        InvalidInstanceError, match=re.escape("g: dependency cycle through task 'a' (self-loop)")
    ):
        graph([1, 1], [(0, 1), (0, 0)]).validate()


def test_negative_cost_is_rejected() -> None:
    with pytest.raises(InvalidInstanceError, match=re.escape("g: task 'b' has negative cost -3")):
        graph([1, -3]).validate()


def test_negative_cost_on_one_core_is_rejected() -> None:
    hetero = graph([1, 1], core_cost=np.array([[1, 2], [4, -2]]))
    with pytest.raises(InvalidInstanceError, match=re.escape("g: task 'b' has negative cost -2")):
        hetero.validate()


def test_negative_bytes_are_rejected() -> None:
    with pytest.raises(
        InvalidInstanceError, match=re.escape("g: edge 'a' -> 'b' has negative bytes")
    ):
        graph([1, 1], [(0, 1)], [-1]).validate()


def test_dangling_edge_target_is_rejected() -> None:
    with pytest.raises(
        InvalidInstanceError,
        match=re.escape("g: edge 1 has dangling target 5 (tasks are 0..1)"),
    ):
        graph([1, 1], [(0, 1), (1, 5)]).validate()


def test_dangling_edge_source_is_rejected() -> None:
    with pytest.raises(
        InvalidInstanceError,
        match=re.escape("g: edge 0 has dangling source -1 (tasks are 0..1)"),
    ):
        graph([1, 1], [(-1, 1)]).validate()


def test_edge_arrays_of_different_lengths_are_rejected() -> None:
    with pytest.raises(InvalidInstanceError, match=re.escape("g: edge arrays differ in length")):
        graph([1, 1], [(0, 1)], [1, 2]).validate()


@pytest.mark.parametrize(
    ("sizes", "writes", "why"),
    [
        ([4, 8], [False, False], "are not two reads of one size (4 and 8 bytes)"),
        ([4, 4], [False, True], "are not two reads of one size (4 and 4 bytes)"),
    ],
)
def test_a_shared_baseline_piece_is_read_whole_by_every_request(
    sizes: list[int], writes: list[bool], why: str
) -> None:
    # Requests of one piece read the same bytes: a core loads them once.
    shared = BaselineMemory(np.array([0, 1]), np.array(sizes), np.array(writes), np.array([7, 7]))
    with pytest.raises(InvalidInstanceError, match=re.escape(f"share piece 7 but {why}")):
        graph([1, 1], baseline=shared).validate()
    apart = BaselineMemory(np.array([0, 1]), np.array(sizes), np.array(writes), np.array([6, 7]))
    graph([1, 1], baseline=apart).validate()


def test_cost_count_must_match_tasks() -> None:
    short = ComputeGraph(
        names=("a", "b"), cost=np.array([1]), edge_src=[], edge_dst=[], edge_bytes=[], name="g"
    )
    with pytest.raises(InvalidInstanceError, match=re.escape("g: 1 costs for 2 tasks")):
        short.validate()


def test_oversized_task_is_rejected_with_its_slot_count() -> None:
    # b needs weights 0 (3 slots) and 1 (4 slots) = 7 slots on one core; the largest holds 6.
    heavy = graph([1, 1], task_weights=((0,), (0, 1)), weight_size=np.array([3, 4]))
    with pytest.raises(
        InvalidInstanceError,
        match=re.escape("g: oversized task 'b' needs 7 weight slots but the largest core holds 6"),
    ):
        heavy.validate([4, 6])
    heavy.validate([4, 7])


def test_topological_order_takes_the_smallest_ready_task_first() -> None:
    # c -> a, d -> b: ready {c, d}; c frees a (id 0), which beats d.
    assert graph([1, 1, 1, 1], [(2, 0), (3, 1)]).topological_order.tolist() == [2, 0, 3, 1]


def test_edges_are_grouped_by_endpoint_in_edge_order() -> None:
    diamond = graph([1, 1, 1, 1], DIAMOND)
    assert diamond.successor_edges(0).tolist() == [0, 1]
    assert diamond.predecessor_edges(3).tolist() == [2, 3]
    assert diamond.predecessor_edges(0).tolist() == []


def test_bounds_of_a_diamond_on_two_generic_cores() -> None:
    # a(3) -> b(4), c(5) -> d(2): longest path a, c, d = 10; work 14 over 2 cores = 7.
    bounds = lower_bounds(graph([3, 4, 5, 2], DIAMOND), GenericTarget(2))
    assert bounds.critical_path_ns == 10
    assert bounds.work_per_core_ns == 7
    assert bounds.makespan_ns == 10
    assert bounds.cores_needed == 1
    assert bounds.weight_slots == 0
    assert bounds.capacity_slots == UNLIMITED_CAPACITY


def test_work_bound_dominates_on_wide_graphs() -> None:
    # four independent 5 ns tasks on 3 cores: path 5, work ceil(20 / 3) = 7.
    bounds = lower_bounds(graph([5, 5, 5, 5]), GenericTarget(3))
    assert (bounds.critical_path_ns, bounds.work_per_core_ns, bounds.makespan_ns) == (5, 7, 7)


def test_capacity_bound_counts_each_distinct_weight_once() -> None:
    # weights of 3, 3 and 2 slots (weight 0 shared by a and b) = 8 slots; 4-slot cores -> 2.
    weighted = graph(
        [3, 4, 5, 2],
        DIAMOND,
        task_weights=((0,), (0, 1), (2,), ()),
        weight_size=np.array([3, 3, 2]),
    )
    bounds = lower_bounds(weighted, SlotTarget(cores=3, slots=4))
    assert bounds.weight_slots == 8
    assert bounds.cores_needed == 2
    assert bounds.capacity_slots == 12
    assert bounds.work_per_core_ns == 5  # ceil(14 / 3)


def test_heterogeneous_bounds_use_each_task_fastest_core() -> None:
    # fastest costs a 1, b 4, c 2, d 2: path a, b, d = 7; work ceil(9 / 2) = 5.
    hetero = graph([0, 0, 0, 0], DIAMOND, core_cost=np.array([[3, 1], [4, 8], [5, 2], [2, 2]]))
    assert critical_path_ns(hetero) == 7
    assert lower_bounds(hetero, GenericTarget(2)).work_per_core_ns == 5


def test_empty_graph_has_zero_bounds() -> None:
    bounds = lower_bounds(graph([]), SlotTarget(cores=2, slots=4))
    assert (bounds.critical_path_ns, bounds.work_per_core_ns, bounds.cores_needed) == (0, 0, 0)
