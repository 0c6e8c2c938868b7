"""Cross-stage boundary demand: global-memory stores and loads between pipeline stages.

Stages of a pipeline exchange data through shared (global) memory (seeds:
scheduling.md, "Throughput scheduling uses one bounded joint optimizer"):

* **one store per shared publication**: a producer task whose output is read by
  a task of another stage writes it once, however many cross-stage consumers
  read it. Publication identity is the seeds' (scheduling.md, "Costs and
  interpretation"): result generation (one per inference), payload type (the
  producer's element width, one per task) and physical source fragment (the
  producer task), so partial reads of one fragment share its store;
* **scalar projections keep separate stores**: a cross-stage read through a
  scalar-index projection (`raptor_cp.graph.SCALAR_PROJECTION`) stores its own
  bytes, rounded per contiguous source run (each such edge reads one run of one
  producer fragment);
* **one load per consumer transfer**: every cross-stage edge is one read of its
  projected bytes by the consumer, even when one reader core loads the same
  publication twice (no load folding);
* same-stage transfers are direct core-to-core sends and cost no memory traffic.

Each request is priced on its own (request rounding precedes aggregation) and
the service times are summed: memory service is serialized and shared by all
stages, so it enters the interval estimate once and is never added to a stage
span. The serialized term is the target's *memory-controller* service only
(`controller_prices`, seeds: "The target adapter supplies access width and
read/write service times"): the request's flits, the requester's local-memory
read or write and the network are not serialized by the controller and belong
to the requesting core's time, not to the shared service (issue 17: ResNet-18
at depth 4 on arch-a, 2.20 ms with them, 1.63 ms without).

Publication size. A lowered graph records each task's output fragment
(`ComputeGraph.output_bytes`): the publication stores it whole. Where that size
is unknown (hand-made graphs, given-cost tasks) it is estimated as the most that
one consumer lane of one operation reads from it, summing the row-slice shares
its array-group tasks read. Function inputs, constants and outputs are the
seeds' separate baseline estimate (`raptor_cp.pipeline.baseline`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from raptor_cp.graph import SCALAR_PROJECTION, ComputeGraph
from raptor_cp.targets.base import SchedulingTarget


@dataclass(frozen=True)
class BoundaryDemand:
    """Global-memory traffic between stages, per request kind (integer bytes and ns)."""

    stores: int
    """Shared publications written once each, plus one per scalar-projection read."""
    store_bytes: int
    store_ns: int
    loads: int
    """Cross-stage consumer transfers, one read each."""
    load_bytes: int
    load_ns: int
    stage_store_ns: tuple[int, ...]
    """Store service charged by each producing stage."""
    stage_load_ns: tuple[int, ...]
    """Load service charged by each consuming stage."""

    @property
    def service_ns(self) -> int:
        """Serialized shared-memory service of one pipeline interval."""
        return self.store_ns + self.load_ns

    def to_json(self) -> dict[str, object]:
        return {
            "stores": self.stores,
            "store_bytes": self.store_bytes,
            "store_ns": self.store_ns,
            "loads": self.loads,
            "load_bytes": self.load_bytes,
            "load_ns": self.load_ns,
            "service_ns": self.service_ns,
            "stage_store_ns": list(self.stage_store_ns),
            "stage_load_ns": list(self.stage_load_ns),
        }


def publication_bytes(graph: ComputeGraph) -> np.ndarray:
    """Stored bytes of every task's publication: its output fragment (module docstring).

    Where the graph does not know a task's output size, the most that one consumer
    lane reads from it (0 for a task nobody reads).
    """
    estimate = _read_estimate(graph)
    if graph.output_bytes is None:
        return estimate
    return np.where(graph.output_bytes >= 0, graph.output_bytes, estimate)


def _read_estimate(graph: ComputeGraph) -> np.ndarray:
    """The most bytes one consumer lane of one operation reads from each task."""
    size = np.zeros(graph.num_tasks, dtype=np.int64)
    if graph.num_edges == 0:
        return size
    dst = graph.edge_dst
    reader = graph.operation[dst] * (int(graph.lane.max()) + 1) + graph.lane[dst]
    keys, inverse = np.unique(
        np.stack([graph.edge_src, reader], axis=1), axis=0, return_inverse=True
    )
    summed = np.zeros(keys.shape[0], dtype=np.int64)
    np.add.at(summed, inverse.reshape(-1), graph.edge_bytes)
    np.maximum.at(size, keys[:, 0], summed)
    return size


Price = Callable[[int], int]
"""ns of one memory request of the given bytes."""


def controller_prices(target: SchedulingTarget) -> tuple[Price, Price]:
    """The memory controller's read and write service of one request, in that order.

    A target with phase prices (`SchedulingTarget.step_timing`) answers the
    controller's own service (``StepTiming.global_read_ns`` /
    ``global_write_ns``: PIM ``Memory::transport`` of the global memory). A
    target without them has no finer price than its whole request
    (`SchedulingTarget.global_read_ns` / ``global_write_ns``; 0 on the generic
    and IPU targets).
    """
    timing = target.step_timing()
    if timing is None:
        return target.global_read_ns, target.global_write_ns
    return timing.global_read_ns, timing.global_write_ns


def priced(nbytes: np.ndarray, price: Price) -> np.ndarray:
    """``price(b)`` of every entry, calling the target once per distinct byte count."""
    if nbytes.size == 0:
        return np.zeros(0, dtype=np.int64)
    distinct, inverse = np.unique(nbytes, return_inverse=True)
    values = np.array([price(int(b)) for b in distinct.tolist()], dtype=np.int64)
    return values[inverse.reshape(-1)]


def boundary_demand(
    graph: ComputeGraph, target: SchedulingTarget, task_stage: np.ndarray, stages: int
) -> BoundaryDemand:
    """Stores and loads the stage assignment ``task_stage`` (stage of every task) implies.

    O(T + E) plus one target query per distinct request size.
    """
    task_stage = np.asarray(task_stage, dtype=np.int64)
    read, write = controller_prices(target)
    src, dst = graph.edge_src, graph.edge_dst
    cross = np.flatnonzero(task_stage[src] != task_stage[dst])
    load_bytes = graph.edge_bytes[cross]
    load_ns = priced(load_bytes, read)
    scalar = cross[graph.edge_kind[cross] == SCALAR_PROJECTION]
    producers = np.unique(src[np.setdiff1d(cross, scalar)])
    writers = np.concatenate([producers, src[scalar]])
    store_bytes = np.concatenate([publication_bytes(graph)[producers], graph.edge_bytes[scalar]])
    store_ns = priced(store_bytes, write)
    stage_store = np.zeros(stages, dtype=np.int64)
    np.add.at(stage_store, task_stage[writers], store_ns)
    stage_load = np.zeros(stages, dtype=np.int64)
    np.add.at(stage_load, task_stage[dst[cross]], load_ns)
    return BoundaryDemand(
        stores=int(writers.shape[0]),
        store_bytes=int(store_bytes.sum()),
        store_ns=int(store_ns.sum()),
        loads=int(cross.shape[0]),
        load_bytes=int(load_bytes.sum()),
        load_ns=int(load_ns.sum()),
        stage_store_ns=tuple(stage_store.tolist()),
        stage_load_ns=tuple(stage_load.tolist()),
    )
