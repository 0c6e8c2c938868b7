"""Cross-stage boundary demand: one store per shared publication, one load per transfer."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np

from raptor_cp.bounds import interval_lower_bound
from raptor_cp.graph import SCALAR_PROJECTION, BaselineMemory, ComputeGraph
from raptor_cp.pipeline.boundary import boundary_demand, controller_prices, publication_bytes
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
    controller = target.step_timing()
    assert controller is not None
    stage = np.array([0, 0, 1, 1, 1, 1, 1])
    demand = boundary_demand(_graph(), target, stage, 2)
    # A/l0 is read by three tasks of stage 1 and A/l1 by three: two publications.
    assert demand.stores == 2
    assert demand.store_bytes == 200
    assert demand.store_ns == 2 * controller.global_write_ns(100)
    # Every cross-stage edge is one load; B -> C stays inside stage 1.
    assert demand.loads == 6
    assert demand.load_bytes == 100 + 40 + 60 + 30 + 50 + 50
    reads = [controller.global_read_ns(b) for b in (100, 40, 60, 30, 50, 50)]
    assert demand.load_ns == sum(reads)
    assert demand.service_ns == demand.store_ns + demand.load_ns
    assert demand.stage_store_ns == (demand.store_ns, 0)
    assert demand.stage_load_ns == (0, demand.load_ns)


def test_shared_service_is_the_memory_controller_only() -> None:
    # The serialized term excludes the request flits and the requester's local memory
    # (scheduling.md: the adapter supplies read/write service times): the whole-request
    # prices the boundary used before are larger.
    target = resolve_target("arch-a")
    demand = boundary_demand(_graph(), target, np.array([0, 0, 1, 1, 1, 1, 1]), 2)
    whole = 2 * target.global_write_ns(100) + sum(
        target.global_read_ns(b) for b in (100, 40, 60, 30, 50, 50)
    )
    assert demand.service_ns < whole
    read, write = controller_prices(target)
    timing = target.step_timing()
    assert timing is not None
    assert (read(64), write(64)) == (timing.global_read_ns(64), timing.global_write_ns(64))
    assert read(64) < target.global_read_ns(64)


def test_publication_is_the_whole_source_fragment() -> None:
    # Identity = (generation, payload type, physical source fragment): two consumers
    # reading different rows of A/l0 share one store of A/l0's whole 256-byte fragment
    # (before, the store was sized by the largest consumer read, 100 bytes).
    graph = replace(_graph(), output_bytes=np.array([256, 256, 32, 32, 8, 64, 64]))
    demand = boundary_demand(graph, resolve_target("arch-a"), np.array([0, 0, 1, 1, 1, 1, 1]), 2)
    assert (demand.stores, demand.store_bytes) == (2, 512)
    assert publication_bytes(graph).tolist() == [256, 256, 32, 32, 8, 64, 64]


def test_scalar_projections_keep_separate_stores() -> None:
    # A/l1 -> D/l0/ag0 is a scalar projection (one source run): it gets its own store of
    # its 50 bytes beside A/l1's shared publication, and its load stays one load.
    kind = np.zeros(len(EDGES), dtype=np.int64)
    kind[6] = SCALAR_PROJECTION
    graph = replace(_graph(), edge_kind=kind)
    stage = np.array([0, 0, 1, 1, 1, 1, 1])
    plain = boundary_demand(_graph(), resolve_target("arch-a"), stage, 2)
    demand = boundary_demand(graph, resolve_target("arch-a"), stage, 2)
    assert (demand.stores, demand.store_bytes) == (plain.stores + 1, plain.store_bytes + 50)
    assert demand.loads == plain.loads


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


def test_range_memory_sums_to_the_boundary_demand_of_every_partition() -> None:
    from raptor_cp.pipeline.groups import pipeline_groups
    from raptor_cp.pipeline.proxy import RangeMemory

    graph = _graph()
    target = resolve_target("arch-a")
    memory = RangeMemory(graph, pipeline_groups(graph), target)
    group = graph.operation.tolist()  # one group per operation, in operation order here
    for cuts in ([1], [2], [3], [1, 3], [2, 3], [1, 2, 3]):
        bounds = [0, *cuts, 4]
        stage = [next(s for s in range(len(bounds) - 1) if g < bounds[s + 1]) for g in group]
        demand = boundary_demand(graph, target, np.array(stage), len(bounds) - 1)
        total = sum(sum(memory(a, b)) for a, b in itertools.pairwise(bounds))
        assert total == demand.service_ns > 0, cuts


def test_the_interval_bound_includes_the_baseline_memory_service() -> None:
    # Every generation loads its inputs and constants through the controller,
    # wherever the boundaries fall: 40 baseline loads of 768 B on arch-a cost more
    # than the 7 unit tasks spread over 168 cores.
    chip = resolve_target("arch-a")
    read, _ = controller_prices(chip)
    tasks, sizes, reads = np.arange(40) % 7, np.full(40, 768), np.zeros(40, dtype=bool)
    loads = BaselineMemory(tasks, sizes, reads, np.arange(40))
    bound = interval_lower_bound(replace(_graph(), baseline=loads), chip)
    assert bound["baseline_memory_ns"] == 40 * read(768) > bound["compute_ns"] == 1
    assert bound["interval_ns"] == bound["baseline_memory_ns"]
    assert interval_lower_bound(_graph(), chip)["interval_ns"] == 1
    # Reads of one piece fold on a core, so the bound counts each piece once: no
    # placement loads it fewer times.
    shared = BaselineMemory(tasks, sizes, reads, np.arange(40) % 4)
    bound = interval_lower_bound(replace(_graph(), baseline=shared), chip)
    assert bound["baseline_memory_ns"] == 4 * read(768)
