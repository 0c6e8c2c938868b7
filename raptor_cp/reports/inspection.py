"""The facts ``raptor-cp inspect`` prints about a lowered model (formatting only).

`inspection` gathers sizes, operator counts, weight slots and lower bounds of a
`Prepared` model as a JSON-ready dict; `inspection_lines` renders it as text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from raptor_cp.reports.output import format_ns
from raptor_cp.targets.base import UNLIMITED_CAPACITY

if TYPE_CHECKING:
    from raptor_cp.bounds import LowerBounds
    from raptor_cp.flows import Prepared


def inspection(prepared: Prepared, bounds: LowerBounds) -> dict[str, Any]:
    """The facts ``inspect`` prints, as a JSON-ready dict."""
    workload, target, graph = prepared.workload, prepared.target, prepared.graph
    lanes = prepared.lanes
    kinds: dict[str, int] = {}
    op_types: dict[str, int] = {}
    for op in workload.operations:
        kinds[op.kind.value] = kinds.get(op.kind.value, 0) + 1
        op_types[op.op_type] = op_types.get(op.op_type, 0) + 1
    sizes = graph.weight_size.tolist()
    largest_task = max((sum(sizes[w] for w in ws) for ws in graph.task_weights), default=0)
    largest_core = max(target.capacity(p) for p in range(target.cores))
    unlimited = largest_core >= UNLIMITED_CAPACITY
    return {
        "model": workload.name,
        "target": target.name,
        "cores": target.cores,
        "lanes": lanes,
        "operations": len(workload.operations),
        "operations_by_kind": kinds,
        "operations_by_type": op_types,
        "tasks": graph.num_tasks,
        "edges": graph.num_edges,
        "edge_bytes": int(graph.edge_bytes.sum()),
        "weights": graph.num_weights,
        "weight_slots_needed": bounds.weight_slots,
        "weight_slots_available": None if unlimited else bounds.capacity_slots,
        "largest_task_slots": int(largest_task),
        "core_capacity_slots": None if unlimited else largest_core,
        "lower_bound_ns": bounds.makespan_ns,
        "lower_bounds": {
            "critical_path_ns": bounds.critical_path_ns,
            "work_per_core_ns": bounds.work_per_core_ns,
            "head_work_tail_ns": bounds.head_work_tail_ns,
            "cores_needed": bounds.cores_needed,
        },
        "warnings": list(prepared.warnings),
    }


def inspection_lines(report: dict[str, Any]) -> list[str]:
    """``inspect``'s human-readable text."""

    def counts(table: dict[str, int]) -> str:
        return ", ".join(f"{key} {table[key]}" for key in sorted(table))

    available = report["weight_slots_available"]
    capacity = report["core_capacity_slots"]
    bounds = report["lower_bounds"]
    return [
        f"{report['model']} on {report['target']} ({report['cores']} cores)",
        f"operations: {report['operations']} ({counts(report['operations_by_kind'])})",
        f"operator types: {counts(report['operations_by_type'])}",
        f"tasks: {report['tasks']}, edges: {report['edges']} ({report['edge_bytes']} bytes), "
        f"lanes: {report['lanes']}",
        f"weights: {report['weights']}, weight slots needed {report['weight_slots_needed']} "
        f"of {'unlimited' if available is None else available} available; largest task "
        f"{report['largest_task_slots']} of {'unlimited' if capacity is None else capacity} "
        "per core",
        f"lower bounds: makespan {format_ns(report['lower_bound_ns'])} (critical path "
        f"{format_ns(bounds['critical_path_ns'])}, work/cores "
        f"{format_ns(bounds['work_per_core_ns'])}, head+work+tail "
        f"{format_ns(bounds['head_work_tail_ns'])}), cores needed {bounds['cores_needed']}",
    ]
