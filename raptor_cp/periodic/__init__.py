"""Periodic (pipelined) dependency analysis: the indexed event graph and its cycle ratio.

`PeriodicGraph` holds constraints ``t(v, k) >= t(u, k - d) + w``;
`maximum_cycle_ratio` gives the smallest initiation interval they allow (exact,
as a fraction, with a witness cycle), `minimum_cycle_ratio` its counterpart.
"""

from raptor_cp.periodic.cycle_ratio import (
    METHODS,
    CycleRatio,
    CycleWitness,
    DeadlockError,
    WitnessEdge,
    maximum_cycle_ratio,
    minimum_cycle_ratio,
)
from raptor_cp.periodic.graph import PeriodicGraph

__all__ = [
    "METHODS",
    "CycleRatio",
    "CycleWitness",
    "DeadlockError",
    "PeriodicGraph",
    "WitnessEdge",
    "maximum_cycle_ratio",
    "minimum_cycle_ratio",
]
