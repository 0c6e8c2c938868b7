"""Optimality audits: a heuristic against its CP-SAT twin on the same problem.

`record` holds the one neutral `AuditRecord` and the one rule set that finds
disagreements; `latency`, `packing`, `partition` and `joint` audit one problem
each; `verify` runs a batch of models (``raptor-cp verify``). Reports are
formatted by `raptor_cp.reports.audit`.
"""
