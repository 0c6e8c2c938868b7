"""Pipeline (throughput) mode: groups, stage costs, core layout, boundary demand, schedule.

The seeds' steps 1–2 of "Default throughput selection": group every lane of an
operation, partition the ordered groups into stages with core budgets
(`raptor_cp.heuristics.prefix_dp`), pack each stage (`raptor_cp.heuristics`),
lay the stages out on the chip (`layout`), price the cross-stage traffic
(`boundary`) and assemble the schedule and its report (`schedule`).
"""
