"""Lower bounds on the makespan, on the cores a graph needs and on a pipeline's interval.

The makespan and core bounds are valid for every schedule on the given target: the critical path
uses each task's fastest cost and free communication; the work bound spreads the
fastest costs perfectly over all cores; the capacity bound counts the cores one
copy of every distinct resident weight needs.
"""

from __future__ import annotations

from dataclasses import dataclass

from raptor_cp.graph import ComputeGraph
from raptor_cp.targets.base import UNLIMITED_CAPACITY, SchedulingTarget


@dataclass(frozen=True)
class LowerBounds:
    """Lower bounds of one graph on one target (ns, ns, cores)."""

    critical_path_ns: int
    work_per_core_ns: int
    cores_needed: int
    weight_slots: int
    """Distinct resident-weight slots (one copy of every weight)."""
    capacity_slots: int
    """Resident-weight slots of the whole target (UNLIMITED_CAPACITY if unbounded)."""

    @property
    def makespan_ns(self) -> int:
        """The stronger of the two makespan bounds."""
        return max(self.critical_path_ns, self.work_per_core_ns)


def critical_path_ns(graph: ComputeGraph) -> int:
    """Longest path by fastest task cost, ignoring communication."""
    return int(graph.asap_finish(graph.min_cost()).max()) if graph.num_tasks else 0


def lower_bounds(graph: ComputeGraph, target: SchedulingTarget) -> LowerBounds:
    """Compute every bound of this module for ``graph`` on ``target``."""
    total = int(graph.min_cost().sum())
    slots = graph.distinct_weight_slots()
    capacities = [target.capacity(p) for p in range(target.cores)]
    largest = max(capacities)
    if largest >= UNLIMITED_CAPACITY:
        cores_needed = 1 if graph.num_tasks else 0
        capacity_slots = UNLIMITED_CAPACITY
    else:
        cores_needed = max(1, -(-slots // largest)) if graph.num_tasks else 0
        capacity_slots = sum(capacities)
    return LowerBounds(
        critical_path_ns=critical_path_ns(graph),
        work_per_core_ns=-(-total // target.cores),
        cores_needed=cores_needed,
        weight_slots=slots,
        capacity_slots=capacity_slots,
    )


def interval_lower_bound(graph: ComputeGraph, target: SchedulingTarget) -> dict[str, int]:
    """Bounds every pipeline interval of this model: its largest task and work / cores.

    Both bound the largest per-core compute, hence the interval estimate.
    """
    total = int(graph.cost.sum())
    largest = int(graph.cost.max()) if graph.num_tasks else 0
    per_core = -(-total // target.cores)
    return {
        "interval_ns": max(largest, per_core),
        "largest_task_ns": largest,
        "work_per_core_ns": per_core,
    }
