"""Registry of solvers by name, imported lazily so `--help` stays fast."""

from __future__ import annotations

import importlib

from raptor_cp.errors import RaptorError
from raptor_cp.problems import LatencySolver

LATENCY_SOLVERS: dict[str, str] = {
    "auto": "raptor_cp.heuristics.portfolio:PortfolioScheduler",
    "heft": "raptor_cp.heuristics.heft:HeftScheduler",
    "peft": "raptor_cp.heuristics.peft:PeftScheduler",
    "cpop": "raptor_cp.heuristics.cpop:CpopScheduler",
    "peft-replicas": "raptor_cp.heuristics.replicated:ReplicatedPeftScheduler",
    "heft-replicas": "raptor_cp.heuristics.replicated:ReplicatedHeftScheduler",
    "cpsat": "raptor_cp.models.latency:CpSatLatencyModel",
}


def latency_solver(name: str, **settings: object) -> LatencySolver:
    """Instantiate the latency solver registered as ``name`` with ``settings``."""
    try:
        module_name, class_name = LATENCY_SOLVERS[name].split(":")
    except KeyError:
        valid = ", ".join(sorted(LATENCY_SOLVERS))
        raise RaptorError(f"unknown scheduler {name!r}; valid: {valid}") from None
    solver_class = getattr(importlib.import_module(module_name), class_name)
    return solver_class(**settings)
