"""Experiment: lag cuts inside one stage, measured on the stage's own recurrence.

Usage::

    python benchmarks/experiments/lag_cut.py MODEL TARGET STAGE CUTS FIRST:STOP:CORES ...

The stages are built as `benchmarks/bench_stage_split.py` builds them. ``CUTS``
is a comma-separated list of cut sets, each a ``+``-separated list of group
indices: a task of group ``g`` runs ``lag`` generations behind, ``lag`` the
number of cut points at or below ``g`` (software pipelining within the stage,
no global memory). A transfer whose consumer lags its producer carries the
previous generation's payload, so both cores make it first in their programs,
in one order shared by all cores (edge id); each core then runs its steps of
the largest lag, and so on down to lag 0, each in the realized order. A compute
run mixing lags is split by its units' prices. The script prints the stage's
occupancy, its own recurrence without cuts and with each cut set
(`raptor_cp.pipeline.stage_recurrence`).

Timing only: the programs are not emitted, and a stage whose loads or stores
mixed lags would need a prologue and its readers would see mixed generations;
it answers "would a lag cut decouple this stage?" (docs/benchmarks.md,
"Twelfth pass").
"""

from __future__ import annotations

import pathlib
import sys

import numpy as np

import raptor_cp
from raptor_cp.periodic.rendezvous_order import QUANTUM_NS, UnitCuts
from raptor_cp.periodic.steps import Compute, Recv, Send, Step
from raptor_cp.pipeline.beam import realized_cost
from raptor_cp.pipeline.initial import initial_pipeline
from raptor_cp.pipeline.realize import PipelineRealization, target_realization
from raptor_cp.pipeline.stage_recurrence import occupancy_ns, own_recurrence
from raptor_cp.problems import PipelineProblem, Stage

MODELS = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "models"


def lagged(
    realization: PipelineRealization,
    mine: np.ndarray,
    lag: np.ndarray,
    edge_of: dict[tuple[int, int], int],
    price: UnitCuts,
) -> PipelineRealization:
    """The stage's compute, send and receive steps reordered for ``lag`` (per task)."""
    top = int(lag.max())
    cores: list[list[Step]] = []
    tasks: list[list[tuple[int, ...]]] = []
    for c, program in enumerate(realization.cores):
        if not mine[c]:
            cores.append([])
            tasks.append([])
            continue
        first: list[tuple[int, Step, tuple[int, ...]]] = []
        phases: list[list[tuple[Step, tuple[int, ...]]]] = [[] for _ in range(top + 1)]
        for i, step in enumerate(program):
            who = realization.tasks[c][i]
            if isinstance(step, (Send, Recv)):
                u, v = who[:2]
                if lag[v] > lag[u]:
                    first.append((edge_of[u, v], step, who))
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
        first.sort(key=lambda entry: entry[0])
        ordered = [(s, w) for _, s, w in first]
        ordered += [entry for level in range(top, -1, -1) for entry in phases[level]]
        cores.append([s for s, _ in ordered])
        tasks.append([w for _, w in ordered])
    parts = [[() for _ in core] for core in cores]
    return PipelineRealization(cores, tasks, parts)


def main(argv: list[str]) -> None:
    model, target, stage_text, cuts, *stage_specs = argv
    stage = int(stage_text)
    shipped = MODELS / f"{model}.onnx"
    prepared = raptor_cp.prepare(shipped if shipped.exists() else model, target)
    problem = PipelineProblem(prepared.graph, prepared.target, len(stage_specs))
    costs = initial_pipeline(problem.graph, problem.target, problem.depth).costs
    stages = [Stage(*(int(x) for x in text.split(":"))) for text in stage_specs]
    plan, _ = realized_cost(problem, costs, stages, "hand-made split")
    graph, timing = problem.graph, problem.target.step_timing()
    if timing is None:
        raise SystemExit(f"target {target} has no step timing")
    task_stage = plan.task_stage(graph.num_tasks)
    realization = target_realization(graph, problem.target, plan.schedule, task_stage)
    core_stage = np.full(plan.schedule.num_cores, -1, dtype=np.int64)
    core_stage[plan.schedule.core] = task_stage
    mine = core_stage == stage
    group = costs.groups.group_of_task(graph.num_tasks)
    edges = zip(graph.edge_src.tolist(), graph.edge_dst.tolist(), strict=True)
    edge_of = {(u, v): e for e, (u, v) in enumerate(edges)}
    price = UnitCuts(graph, problem.target, QUANTUM_NS)
    print(f"python benchmarks/experiments/lag_cut.py {' '.join(argv)}")
    busiest = occupancy_ns(realization.cores, timing)[mine].max()
    print(f"stage {stage}: occupancy {_ms(float(busiest))}")
    ratio, crossed, _ = own_recurrence(realization, mine, timing)
    print(f"no cut: own recurrence {_ms(ratio)} ({crossed} cores)")
    for spec in cuts.split(","):
        points = sorted(int(x) for x in spec.split("+"))
        lag = np.searchsorted(np.asarray(points), group, side="right")
        ratio, crossed, _ = own_recurrence(
            lagged(realization, mine, lag, edge_of, price), mine, timing
        )
        print(f"cuts {points}: own recurrence {_ms(ratio)} ({crossed} cores)")


def _ms(ns: float | None) -> str:
    return "none" if ns is None else f"{ns / 1e6:.3f} ms"


if __name__ == "__main__":
    main(sys.argv[1:])
