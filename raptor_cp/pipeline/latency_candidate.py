"""The latency schedule as a one-stage pipeline: a second root of the selection.

A pipeline of one stage that runs the production latency schedule (`auto`) on
every core is always legal, and its queue interval is back-to-back latency:
the emitted latency program's single pass, slightly less where one sample's
tail overlaps the next one's head. The seeds' search starts from the prefix-DP
partition alone, whose stage packings are built for per-core demand rather
than for a short dependency span, so on some chips no candidate within the 32
evaluations came back below back-to-back latency (PIMCOMP-NN's ResNet-18 on
its own chip, docs/benchmarks.md). Evaluating this schedule as one more
candidate makes "pipelining never runs slower than the latency program" a
property of the selection rather than of the search's luck; the 2.1 %
near-equivalence rule still decides whether it replaces the initialized
schedule. The deviation from the seeds is recorded in docs/architecture.md.

The placement keeps the latency schedule's cores and per-core order; its timing fields
(demand, span, window) are those of the stage placer with that placement.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from raptor_cp.graph import ComputeGraph
from raptor_cp.pipeline.groups import PipelineGroups
from raptor_cp.pipeline.layout import PipelineCoreLayout, StagePlacement, StagePlacer
from raptor_cp.pipeline.plan import PipelinePlan, plan_of_placements
from raptor_cp.problems import Stage
from raptor_cp.schedule import Schedule
from raptor_cp.targets.base import SchedulingTarget

PLACEMENT = "latency"
"""`StagePlacement.candidate` of the one stage of a latency candidate."""


def latency_stage_plan(
    graph: ComputeGraph,
    target: SchedulingTarget,
    groups: PipelineGroups,
    schedule: Schedule,
    placer: StagePlacer,
) -> PipelinePlan:
    """``schedule`` (a latency schedule of ``graph``) as a pipeline of one stage on every core."""
    stages = (Stage(0, groups.count, target.cores),)
    layout = PipelineCoreLayout.build(target, [target.cores])
    tasks = groups.range_tasks(0, groups.count).tolist()
    core = [int(schedule.core[t]) for t in tasks]
    region = list(dict.fromkeys(core))
    index = {p: i for i, p in enumerate(region)}
    every = np.ones(graph.num_tasks, dtype=bool)
    stage = placer.stage(tasks, placer.stage_edges(tasks, every))
    on_core = np.array([index[p] for p in core], dtype=np.int64)
    timing = placer.timing(stage, placer.prices(stage, region), on_core)
    start = schedule.start_ns.tolist()
    position = {t: i for order in schedule.core_order for i, t in enumerate(order)}
    sequence = tuple(sorted(tasks, key=lambda t: (start[t], position[t])))
    kept = replace(timing, start_ns={t: start[t] for t in tasks}, sequence=sequence)
    placement = StagePlacement(
        tasks=tuple(tasks),
        cores=tuple(core),
        candidate=PLACEMENT,
        timing=kept,
        candidates={PLACEMENT: kept.cycle_ns},
    )
    return plan_of_placements(graph, target, groups, stages, layout, [placement])
