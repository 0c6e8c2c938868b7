"""raptor-cp: schedule deep-learning compute graphs onto spatial accelerators.

The production path is a set of documented heuristics (HEFT/PEFT list scheduling
for latency, pipeline partitioning for throughput); CP-SAT models of the same
problems stand beside them to audit optimality on small instances.
"""

__version__ = "0.1.0"
