"""Stage placement rules against the queue model, on fixed partitions.

Usage::

    python benchmarks/bench_stage_placement.py [--model resnet18|FILE] [--target arch-a]
        [--stages 1 2 3 4 8]

Why: pipeline selection compares candidates by their queue estimate, but each
candidate's stages are placed by a cheap rule (`raptor_cp.pipeline.layout`).
This bench isolates that rule. For each stage count ``S`` it splits the
model's operation groups into ``S`` contiguous ranges of equal group count,
gives them equal core budgets (and, with ``--initial``, takes the initial
partition of the prefix DP at those depths), and assembles the plan twice: with the
placement rule in the code (least cycle bound, ``max(demand, longest core
window)``) and with the seeds' demand-first rule (lowest per-core demand, 1 %
span tie). For each it prints the placement chosen per stage, each stage's
list-schedule span, and the realized plan's queue interval (the target's
`estimate_realized_schedule_cost`, both tie orders) and single pass.
It also realizes the default latency schedule (`auto`) as one stage, the
back-to-back latency figure in the same model.

Integer nanoseconds in, milliseconds out; deterministic (times aside).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from unittest import mock

import numpy as np

from raptor_cp.flows import Prepared, compile_latency, prepare
from raptor_cp.periodic.analysis import dependency_finish
from raptor_cp.periodic.single_pass import single_pass
from raptor_cp.pipeline import layout
from raptor_cp.pipeline.baseline import baseline_demand
from raptor_cp.pipeline.initial import initial_pipeline
from raptor_cp.pipeline.plan import assemble_pipeline
from raptor_cp.pipeline.realize import pipeline_events
from raptor_cp.pipeline.stage_costs import StageCosts
from raptor_cp.problems.partition import Stage
from raptor_cp.schedule import Schedule

MODELS = Path(__file__).resolve().parent.parent / "tests" / "data" / "models"


def demand_first(timings: Sequence[layout.StageTiming]) -> int:
    """The seeds' rule: lowest demand; within 1 %, shortest span, then compute, then order."""
    best = min(t.demand_ns for t in timings)
    tied = [
        (t.span_ns, t.compute_ns, i)
        for i, t in enumerate(timings)
        if 100 * t.demand_ns <= (100 + layout.TIE_PERCENT) * best
    ]
    return min(tied)[2]


def equal_stages(groups: int, cores: int, count: int) -> list[Stage]:
    """``count`` contiguous group ranges of near-equal size on near-equal core budgets."""
    bounds = np.linspace(0, groups, count + 1).round().astype(int).tolist()
    budgets = [cores // count + (1 if i < cores % count else 0) for i in range(count)]
    return [Stage(bounds[i], bounds[i + 1], budgets[i]) for i in range(count)]


def measure(prepared: Prepared, schedule: Schedule, stage: np.ndarray) -> tuple[float, float]:
    """Queue interval (larger tie order, baseline service included, as selection prices
    candidates) and single pass of a realized schedule, in ms."""
    graph, target = prepared.graph, prepared.target
    events, realization = pipeline_events(graph, target, schedule, stage)
    baseline = baseline_demand(graph, target, schedule.core).service_ns
    cost = target.estimate_realized_schedule_cost(realization.cores, graph.name, False, baseline)
    passes = single_pass(events, dependency_finish(events))
    assert cost.estimate_ns is not None and passes.latency_ns is not None, cost.reasons
    return cost.estimate_ns / 1e6, passes.latency_ns / 1e6


def plan_row(
    prepared: Prepared,
    costs: StageCosts,
    stages: list[Stage],
    rule: Callable[[Sequence[layout.StageTiming]], int],
    name: str,
) -> str:
    """One table row: ``stages`` assembled under placement ``rule``, realized and measured."""
    graph, target = prepared.graph, prepared.target
    assignments = [costs.assignment(s.first, s.stop, s.cores)[0] for s in stages]
    with mock.patch.object(layout, "rank_placements", rule):
        plan = assemble_pipeline(graph, target, costs.groups, stages, assignments)
    interval, single = measure(prepared, plan.schedule, plan.task_stage(graph.num_tasks))
    chosen = " ".join(p.candidate for p in plan.placements)
    spans = " ".join(f"{p.timing.span_ns / 1e6:.2f}" for p in plan.placements)
    shape = " ".join(f"[{s.first},{s.stop})x{s.cores}" for s in stages)
    return f"| {shape} | {name} | {chosen} | {spans} | {interval:.3f} | {single:.3f} |"


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model", default="resnet18", help="a shipped ONNX model's name or a model file"
    )
    parser.add_argument("--target", default="arch-a")
    parser.add_argument("--stages", type=int, nargs="*", default=[1, 2, 3, 4, 8])
    parser.add_argument(
        "--initial",
        type=int,
        nargs="*",
        default=[4, 8],
        help="also the initial partition at these depths",
    )
    args = parser.parse_args(argv)
    began = time.perf_counter()
    path = Path(args.model)
    prepared = prepare(path if path.is_file() else MODELS / f"{args.model}.onnx", args.target)
    graph = prepared.graph
    costs = initial_pipeline(graph, prepared.target, 2).costs
    latency = compile_latency(prepared)
    one_stage = np.zeros(graph.num_tasks, dtype=np.int64)
    interval, single = measure(prepared, latency.solution.schedule, one_stage)
    print(f"# Stage placement rules: {args.model} on {args.target} (times in ms)\n")
    print(
        f"`auto` latency schedule: makespan {latency.makespan_ns / 1e6:.3f} ms; realized as "
        f"one stage: queue interval {interval:.3f} ms, single pass {single:.3f} ms\n"
    )
    print("| stages (groups x cores) | rule | placements | spans | queue interval | single pass |")
    print("|---:|---|---|---|---:|---:|")
    partitions = [equal_stages(costs.groups.count, prepared.target.cores, n) for n in args.stages]
    partitions += [
        list(initial_pipeline(graph, prepared.target, depth).plan.stages) for depth in args.initial
    ]
    for stages in partitions:
        for rule, name in ((layout.rank_placements, "cycle bound"), (demand_first, "demand first")):
            print(plan_row(prepared, costs, stages, rule, name), flush=True)
    print(
        f"\nCommand: python benchmarks/bench_stage_placement.py --model {args.model} "
        f"--target {args.target} --stages {' '.join(map(str, args.stages))} "
        f"--initial {' '.join(map(str, args.initial))} "
        f"({time.perf_counter() - began:.0f} s)"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
