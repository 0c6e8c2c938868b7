"""Baseline memory demand: the global-memory traffic of function inputs, constants, outputs.

The seeds keep it apart from the cross-stage boundary demand (scheduling.md,
"Costs and interpretation": "Function inputs, constants, and outputs supply a
separate baseline estimate"): every inference loads its inputs and run-time
constants and stores its outputs through the same memory controller, wherever
the stage boundaries fall. Lowering records the requests
(`raptor_cp.graph.BaselineMemory`). Priced after placement ("The scheduler
evaluates boundary demand again after physical placement"), a core's reads of
one piece fold into one load, the load the emitted program makes
(`BaselineMemory.first_loads`); each remaining request is priced on its own by
the controller's service (`raptor_cp.pipeline.boundary.controller_prices`;
request rounding precedes aggregation). The sum joins the serialized
shared-memory service of the interval estimate and is reported on its own. It
stays approximate before bufferization and aliasing, and the periodic event
graph does not place these requests (their aggregate service bound stays in its
memory term). ``O(B log B)`` for ``B`` requests plus one target query per
distinct request size.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from raptor_cp.graph import ComputeGraph
from raptor_cp.pipeline.boundary import controller_prices, priced
from raptor_cp.targets.base import SchedulingTarget


@dataclass(frozen=True)
class BaselineDemand:
    """Global-memory requests of function inputs and constants (loads) and outputs (stores)."""

    loads: int
    """Load requests after folding."""
    folded_loads: int
    """Reads that share a load made by another task on their core."""
    load_bytes: int
    load_ns: int
    stores: int
    store_bytes: int
    store_ns: int

    @property
    def service_ns(self) -> int:
        """Serialized controller service of one inference's baseline requests."""
        return self.load_ns + self.store_ns

    def to_json(self) -> dict[str, object]:
        return {
            "loads": self.loads,
            "folded_loads": self.folded_loads,
            "load_bytes": self.load_bytes,
            "load_ns": self.load_ns,
            "stores": self.stores,
            "store_bytes": self.store_bytes,
            "store_ns": self.store_ns,
            "service_ns": self.service_ns,
        }


def baseline_demand(
    graph: ComputeGraph, target: SchedulingTarget, core_of_task: np.ndarray
) -> BaselineDemand:
    """The baseline requests of ``graph``, placed by ``core_of_task`` (each task's core),
    priced by ``target``'s memory controller."""
    read, write = controller_prices(target)
    base = graph.baseline
    kept = base.first_loads(core_of_task)
    loads = base.nbytes[kept & ~base.write]
    stores = base.nbytes[base.write]
    return BaselineDemand(
        loads=int(loads.shape[0]),
        folded_loads=int((~kept).sum()),
        load_bytes=int(loads.sum()),
        load_ns=int(priced(loads, read).sum()),
        stores=int(stores.shape[0]),
        store_bytes=int(stores.sum()),
        store_ns=int(priced(stores, write).sum()),
    )
