"""Pipeline groups: one group per operation, groups in topological order."""

from __future__ import annotations

import numpy as np
import pytest

from raptor_cp.errors import InvalidInstanceError
from raptor_cp.graph import ComputeGraph
from raptor_cp.pipeline.groups import pipeline_groups


def _graph(
    operation: list[int], edges: list[tuple[int, int]], names: tuple[str, ...]
) -> ComputeGraph:
    n = len(operation)
    src, dst = zip(*edges, strict=True) if edges else ((), ())
    return ComputeGraph(
        names=tuple(f"t{i}" for i in range(n)),
        cost=np.ones(n, dtype=np.int64),
        edge_src=np.array(src, dtype=np.int64),
        edge_dst=np.array(dst, dtype=np.int64),
        edge_bytes=np.ones(len(edges), dtype=np.int64),
        operation=np.array(operation, dtype=np.int64),
        lane=np.zeros(n, dtype=np.int64),
        operation_names=names,
        name="g",
    )


def test_lanes_of_an_operation_form_one_group_in_topological_order() -> None:
    # Operation 2 feeds operation 0, which feeds operation 1: ids are not in order.
    graph = _graph([2, 2, 0, 0, 1], [(0, 2), (1, 3), (2, 4), (3, 4)], ("b", "c", "a"))
    groups = pipeline_groups(graph)
    assert groups.operation == (2, 0, 1)
    assert groups.names == ("a", "b", "c")
    assert groups.tasks == ((0, 1), (2, 3), (4,))
    assert groups.range_tasks(0, 2).tolist() == [0, 1, 2, 3]
    assert groups.group_of_task(5).tolist() == [0, 0, 1, 1, 2]


def test_independent_operations_keep_their_id_order() -> None:
    graph = _graph([1, 0, 2], [], ("x", "y", "z"))
    assert pipeline_groups(graph).operation == (0, 1, 2)


def test_tasks_inside_a_group_follow_the_graph_topological_order() -> None:
    # Within operation 0, task 2 feeds task 0 (a reduction-like dependency).
    graph = _graph([0, 0, 0], [(2, 0), (1, 0)], ("op",))
    assert pipeline_groups(graph).tasks == ((1, 2, 0),)


def test_operations_depending_on_each_other_through_lanes_are_rejected() -> None:
    # a/lane0 -> b/lane0 -> a/lane1: no contiguous stage order exists.
    graph = _graph([0, 0, 1], [(0, 2), (2, 1)], ("a", "b"))
    with pytest.raises(
        InvalidInstanceError,
        match=r"^g: operation 'a' and its lanes depend on each other through another "
        r"operation; pipeline groups need an acyclic operation graph$",
    ):
        pipeline_groups(graph)
