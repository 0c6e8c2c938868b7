"""Experiment: lag cuts inside pipeline stages, priced as selection prices a candidate.

Usage::

    python benchmarks/experiments/lag_cut.py MODEL TARGET CUTS FIRST:STOP:CORES ...

The stages are built as `benchmarks/bench_stage_split.py` builds them. ``CUTS``
is a comma-separated list of cut sets, each a ``+``-separated list of group
indices: a task of group ``g`` runs ``lag`` generations behind, ``lag`` the
number of cut points of its stage at or below ``g`` (software pipelining within
a stage, no global memory). A transfer whose consumer lags its producer carries
the previous generation's payload, so both cores make it first in their
programs (after the release-tree entry steps), in one order shared by all
cores (edge id); each core then runs its steps of the largest lag, and so on
down to lag 0, each in the realized order, and ends with its restart
permissions. A compute run mixing lags is split by its units' prices. The
script prints every stage's occupancy and own recurrence
(`raptor_cp.pipeline.stage_recurrence`) and the plan's queue interval
(`raptor_cp.periodic.schedule_cost.queue_schedule_cost`, as selection prices a
candidate), then, per cut set, the cut stages' own recurrences and the plan's
interval with those stages' programs reordered.

Timing only: the programs are not emitted (a first generation would need a
prologue, and a reader of stores made at different lags would see mixed
generations). It answers "would lag cuts decouple these stages?"
(docs/benchmarks.md, "Twelfth pass").
"""

from __future__ import annotations

import sys

import numpy as np
from split import hand_split

from raptor_cp.periodic.rendezvous_order import QUANTUM_NS, UnitCuts
from raptor_cp.periodic.schedule_cost import queue_schedule_cost
from raptor_cp.periodic.steps import Compute, Recv, Send, Step
from raptor_cp.pipeline.realize import PipelineRealization
from raptor_cp.pipeline.stage_recurrence import occupancy_ns, own_recurrence


def lagged(
    realization: PipelineRealization,
    mine: np.ndarray,
    lag: np.ndarray,
    edge_of: dict[tuple[int, int], int],
    price: UnitCuts,
) -> PipelineRealization:
    """The programs with the cores where ``mine`` holds reordered for ``lag`` (per task);
    other cores keep theirs. On a reordered core: the release-tree entry steps, the
    transfers across lags, each lag's steps from the largest down (a compute run mixing
    lags split by its units' prices; a load, store, READY wait or signal with its task),
    and the steps after its last task's (the restart-permission WAITs)."""
    top = int(lag.max())
    cores: list[list[Step]] = []
    tasks: list[list[tuple[int, ...]]] = []
    for c, program in enumerate(realization.cores):
        owners = realization.tasks[c]
        if not mine[c]:
            cores.append(list(program))
            tasks.append(list(owners))
            continue
        worked = [i for i, who in enumerate(owners) if who]
        tail = worked[-1] + 1 if worked else 0
        head: list[tuple[Step, tuple[int, ...]]] = []
        across: list[tuple[int, Step, tuple[int, ...]]] = []
        phases: list[list[tuple[Step, tuple[int, ...]]]] = [[] for _ in range(top + 1)]
        for i, step in enumerate(program[:tail]):
            who = owners[i]
            if not who:
                head.append((step, who))
            elif isinstance(step, (Send, Recv)):
                u, v = who[:2]
                if lag[v] > lag[u]:
                    across.append((edge_of[u, v], step, who))
                else:
                    phases[lag[u]].append((step, who))
            elif isinstance(step, Compute):
                ns = [0] * (top + 1)
                for t, part in zip(who, realization.parts[c][i], strict=True):
                    units = price(t, c)
                    ns[lag[t]] += units[part] if part in units else sum(units.values())
                for level in range(top + 1):
                    if ns[level]:
                        phases[level].append((Compute(ns[level]), ()))
            else:
                phases[lag[who[0]]].append((step, who))
        across.sort(key=lambda entry: entry[0])
        ordered = head + [(s, w) for _, s, w in across]
        ordered += [entry for level in range(top, -1, -1) for entry in phases[level]]
        ordered += list(zip(program[tail:], owners[tail:], strict=True))
        cores.append([s for s, _ in ordered])
        tasks.append([w for _, w in ordered])
    parts = [[() for _ in core] for core in cores]
    return PipelineRealization(cores, tasks, parts)


def main(argv: list[str]) -> None:
    model, target, cuts, *stage_specs = argv
    split = hand_split(model, target, stage_specs)
    graph, timing, costs = split.problem.graph, split.timing, split.costs
    realization, core_stage, stages = split.realization, split.core_stage, split.stages
    group = costs.groups.group_of_task(graph.num_tasks)
    group_stage = np.concatenate([np.full(st.stop - st.first, i) for i, st in enumerate(stages)])
    edges = zip(graph.edge_src.tolist(), graph.edge_dst.tolist(), strict=True)
    edge_of = {(u, v): e for e, (u, v) in enumerate(edges)}
    price = UnitCuts(graph, split.problem.target, QUANTUM_NS)
    occupied = occupancy_ns(realization.cores, timing)
    print(f"python benchmarks/experiments/lag_cut.py {' '.join(argv)}")

    def report(label: str, programs: PipelineRealization, cut_stages: list[int]) -> None:
        own = []
        for s in cut_stages:
            ratio, crossed, _ = own_recurrence(programs, core_stage == s, timing)
            own.append(f"stage {s} {_ms(ratio)} ({crossed} cores)")
        cost = queue_schedule_cost(
            programs.cores, timing, label, baseline_service_ns=split.plan.baseline.service_ns
        )
        whole = cost.reasons[0] if cost.reasons else _ms(cost.estimate_ns)
        print(f"{label}: own recurrence {', '.join(own)}; plan interval {whole}")

    everywhere = list(range(len(stages)))
    busiest = ", ".join(f"{s} {_ms(float(occupied[core_stage == s].max()))}" for s in everywhere)
    print(f"occupancy: stage {busiest}")
    report("no cut", realization, everywhere)
    for spec in cuts.split(","):
        points = sorted(int(x) for x in spec.split("+"))
        cut_stages = sorted({int(group_stage[p]) for p in points})
        lag = np.zeros(graph.num_tasks, dtype=np.int64)
        for p in points:
            lag += (group_stage[group] == group_stage[p]) & (group >= p)
        mine = np.isin(core_stage, cut_stages)
        report(f"cuts {points}", lagged(realization, mine, lag, edge_of, price), cut_stages)


def _ms(ns: float | None) -> str:
    return "none" if ns is None else f"{ns / 1e6:.3f} ms"


if __name__ == "__main__":
    main(sys.argv[1:])
