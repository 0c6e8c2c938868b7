"""raptor-cp: schedule deep-learning compute graphs onto spatial accelerators.

The production path is a set of documented heuristics (PEFT/HEFT list
scheduling for latency, pipeline partitioning for throughput); CP-SAT models of
the same problems stand beside them to audit optimality. The library API
(docs/api.md)::

    import raptor_cp

    result = raptor_cp.compile("model.onnx", target="arch-a")          # latency
    result = raptor_cp.compile("model.onnx", pipeline=4)               # throughput
    prepared = raptor_cp.prepare("model.onnx", "generic:8")            # load + lower
    solution = raptor_cp.solve(raptor_cp.LatencyProblem(prepared.graph, prepared.target),
                               method="cpsat", time_limit_s=5)
    raptor_cp.check(problem, solution)

Names are imported on first use, so ``import raptor_cp`` (and ``raptor-cp
--help``) stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_API: dict[str, str] = {
    "compile": "raptor_cp.flows",
    "prepare": "raptor_cp.flows",
    "lower": "raptor_cp.flows",
    "Prepared": "raptor_cp.flows",
    "LatencyResult": "raptor_cp.flows",
    "PipelineResult": "raptor_cp.flows",
    "load_workload": "raptor_cp.workload.load",
    "resolve_target": "raptor_cp.targets.registry",
    "solve": "raptor_cp.solvers",
    "methods": "raptor_cp.solvers",
    "check": "raptor_cp.problems",
    "evaluate": "raptor_cp.evaluation",
    "lower_bounds": "raptor_cp.bounds",
    "verify": "raptor_cp.audit.verify",
    "VerifySettings": "raptor_cp.audit.verify",
    "SolveSettings": "raptor_cp.models.solve",
    "LatencyProblem": "raptor_cp.problems",
    "PackingProblem": "raptor_cp.problems",
    "FewestCoresProblem": "raptor_cp.problems",
    "PartitionProblem": "raptor_cp.problems",
    "JointProblem": "raptor_cp.problems",
    "PipelineProblem": "raptor_cp.problems",
    "Status": "raptor_cp.problems",
    "RaptorError": "raptor_cp.errors",
}
"""Public name → the module that defines it."""

__all__ = sorted([*_API, "__version__"])


def __getattr__(name: str) -> Any:
    """Import a public name's module on first use (PEP 562)."""
    if name not in _API:
        raise AttributeError(f"module 'raptor_cp' has no attribute {name!r}")
    value = getattr(importlib.import_module(_API[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
