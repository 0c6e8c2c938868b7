"""Cross-stage boundary demand: global-memory stores and loads between pipeline stages.

Stages of a pipeline exchange data through shared (global) memory (seeds:
scheduling.md, "Throughput scheduling uses one bounded joint optimizer"):

* **one store per shared publication**: a producer task whose output is read by
  a task of another stage writes it once, however many cross-stage consumers
  read it;
* **one load per consumer transfer**: every cross-stage edge is one read of its
  projected bytes by the consumer, even when one reader core loads the same
  publication twice (no load folding);
* same-stage transfers are direct core-to-core sends and cost no memory traffic.

Each request is priced on its own by the target (``global_write_ns``,
``global_read_ns``; request rounding precedes aggregation) and the service times
are summed: memory service is serialized and shared by all stages, so it enters
the interval estimate once and is never added to a stage span.

Publication size. The graph keeps the bytes each consumer reads (edge bytes, an
exact projection) but not the size of a producer's output. The stored bytes of
a publication are estimated as the most that one consumer lane of one operation
reads from it, summing the row-slice shares its array-group tasks read: for the
usual windows that is the whole fragment. Function inputs, constants and outputs
(the seeds' separate baseline estimate) are not in the graph and are not counted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from raptor_cp.graph import ComputeGraph
from raptor_cp.targets.base import SchedulingTarget


@dataclass(frozen=True)
class BoundaryDemand:
    """Global-memory traffic between stages, per request kind (integer bytes and ns)."""

    stores: int
    """Shared publications written once each."""
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
    """Estimated output bytes of every task (0 for a task nobody reads), see the module doc."""
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


def _priced(nbytes: np.ndarray, price: object) -> np.ndarray:
    """``price(b)`` of every entry, calling the target once per distinct byte count."""
    if nbytes.size == 0:
        return np.zeros(0, dtype=np.int64)
    distinct, inverse = np.unique(nbytes, return_inverse=True)
    values = np.array([price(int(b)) for b in distinct.tolist()], dtype=np.int64)  # type: ignore[operator]
    return values[inverse.reshape(-1)]


def boundary_demand(
    graph: ComputeGraph, target: SchedulingTarget, task_stage: np.ndarray, stages: int
) -> BoundaryDemand:
    """Stores and loads the stage assignment ``task_stage`` (stage of every task) implies.

    O(T + E) plus one target query per distinct request size.
    """
    task_stage = np.asarray(task_stage, dtype=np.int64)
    src, dst = graph.edge_src, graph.edge_dst
    cross = np.flatnonzero(task_stage[src] != task_stage[dst])
    load_bytes = graph.edge_bytes[cross]
    load_ns = _priced(load_bytes, target.global_read_ns)
    producers = np.unique(src[cross])
    store_bytes = publication_bytes(graph)[producers]
    store_ns = _priced(store_bytes, target.global_write_ns)
    stage_store = np.zeros(stages, dtype=np.int64)
    np.add.at(stage_store, task_stage[producers], store_ns)
    stage_load = np.zeros(stages, dtype=np.int64)
    np.add.at(stage_load, task_stage[dst[cross]], load_ns)
    return BoundaryDemand(
        stores=int(producers.shape[0]),
        store_bytes=int(store_bytes.sum()),
        store_ns=int(store_ns.sum()),
        loads=int(cross.shape[0]),
        load_bytes=int(load_bytes.sum()),
        load_ns=int(load_ns.sum()),
        stage_store_ns=tuple(stage_store.tolist()),
        stage_load_ns=tuple(stage_load.tolist()),
    )
