"""Cross-stage boundary demand: one store per shared publication, one load per transfer."""

from __future__ import annotations

import numpy as np

from raptor_cp.graph import ComputeGraph
from raptor_cp.pipeline.boundary import boundary_demand, publication_bytes
from raptor_cp.targets.generic import GenericTarget
from raptor_cp.targets.registry import resolve_target

EDGES = [
    (0, 2, 100),  # A/l0 -> B/l0
    (0, 3, 40),  # A/l0 -> B/l1
    (1, 3, 60),  # A/l1 -> B/l1
    (2, 4, 10),  # B/l0 -> C
    (3, 4, 20),  # B/l1 -> C
    (0, 4, 30),  # A/l0 -> C (skip connection)
    (1, 5, 50),  # A/l1 -> D/l0/ag0
    (1, 6, 50),  # A/l1 -> D/l0/ag1: one consumer lane reads 100 bytes of A/l1
]


def _graph() -> ComputeGraph:
    src, dst, nbytes = (np.array(c, dtype=np.int64) for c in zip(*EDGES, strict=True))
    return ComputeGraph(
        names=("A/l0", "A/l1", "B/l0", "B/l1", "C", "D/l0/ag0", "D/l0/ag1"),
        cost=np.ones(7, dtype=np.int64),
        edge_src=src,
        edge_dst=dst,
        edge_bytes=nbytes,
        operation=np.array([0, 0, 1, 1, 2, 3, 3], dtype=np.int64),
        lane=np.array([0, 1, 0, 1, 0, 0, 0], dtype=np.int64),
        operation_names=("A", "B", "C", "D"),
        name="boundary",
    )


def test_publication_size_is_the_largest_read_of_one_consumer_lane() -> None:
    assert publication_bytes(_graph()).tolist() == [100, 100, 10, 20, 0, 0, 0]


def test_one_store_per_shared_publication_and_one_load_per_consumer_transfer() -> None:
    target = resolve_target("arch-a")
    stage = np.array([0, 0, 1, 1, 1, 1, 1])
    demand = boundary_demand(_graph(), target, stage, 2)
    # A/l0 is read by three tasks of stage 1 and A/l1 by three: two publications.
    assert demand.stores == 2
    assert demand.store_bytes == 200
    assert demand.store_ns == 2 * target.global_write_ns(100)
    # Every cross-stage edge is one load; B -> C stays inside stage 1.
    assert demand.loads == 6
    assert demand.load_bytes == 100 + 40 + 60 + 30 + 50 + 50
    reads = [target.global_read_ns(b) for b in (100, 40, 60, 30, 50, 50)]
    assert demand.load_ns == sum(reads)
    assert demand.service_ns == demand.store_ns + demand.load_ns
    assert demand.stage_store_ns == (demand.store_ns, 0)
    assert demand.stage_load_ns == (0, demand.load_ns)


def test_same_stage_transfers_cost_no_memory_traffic() -> None:
    demand = boundary_demand(_graph(), resolve_target("arch-a"), np.zeros(7, dtype=np.int64), 1)
    assert (demand.stores, demand.loads, demand.service_ns) == (0, 0, 0)


def test_a_later_stage_reading_a_publication_adds_loads_but_not_stores() -> None:
    target = resolve_target("arch-a")
    two = boundary_demand(_graph(), target, np.array([0, 0, 1, 1, 1, 1, 1]), 2)
    three = boundary_demand(_graph(), target, np.array([0, 0, 1, 1, 2, 1, 1]), 3)
    # C moves to stage 2: B/l0 and B/l1 now publish too; A/l0 is still stored once.
    assert three.stores == two.stores + 2
    assert three.loads == two.loads + 2
    assert three.stage_store_ns[0] == two.stage_store_ns[0]


def test_targets_without_global_memory_cost_charge_nothing() -> None:
    demand = boundary_demand(_graph(), GenericTarget(4), np.array([0, 0, 1, 1, 1, 1, 1]), 2)
    assert (demand.stores, demand.loads, demand.service_ns) == (2, 6, 0)
