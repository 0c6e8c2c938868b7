"""A pipeline split given by hand, built and realized as selection builds a candidate.

Shared by the experiments in this directory: ``FIRST:STOP:CORES`` per stage, as
`benchmarks/bench_stage_split.py` reads them, or ``FIRST:STOP:CORES:packed`` for a
stage whose assignment is the stage packer's (`raptor_cp.heuristics.stage_packing.pack_stage`:
the least maximum per-core demand it finds) instead of the ordered runs the product
keeps whenever order holds the stage's weights (docs/benchmarks.md, "Twenty-second
pass").
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import raptor_cp
from raptor_cp.pipeline.beam import realized_cost
from raptor_cp.pipeline.initial import initial_pipeline
from raptor_cp.pipeline.plan import PipelinePlan
from raptor_cp.pipeline.realize import PipelineRealization, target_realization
from raptor_cp.pipeline.stage_costs import StageCosts
from raptor_cp.pipeline.stage_recurrence import core_stages
from raptor_cp.problems import PipelineProblem, Stage
from raptor_cp.targets.base import StepTiming

MODELS = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "models"


@dataclass(frozen=True)
class HandSplit:
    """The split's problem, stage costs, stages, placed plan and realized programs."""

    problem: PipelineProblem
    costs: StageCosts
    stages: list[Stage]
    plan: PipelinePlan
    timing: StepTiming
    realization: PipelineRealization
    core_stage: np.ndarray
    """Per core, its stage (-1: idle)."""


def hand_split(model: str, target: str, specs: list[str]) -> HandSplit:
    """Build ``specs`` (``FIRST:STOP:CORES`` each) for ``model`` (a name in
    tests/data/models or a path) on ``target``; exits when the target has no step
    timing."""
    shipped = MODELS / f"{model}.onnx"
    prepared = raptor_cp.prepare(shipped if shipped.exists() else model, target)
    problem = PipelineProblem(prepared.graph, prepared.target, len(specs))
    costs = initial_pipeline(problem.graph, problem.target, problem.depth).costs
    fields = [text.split(":") for text in specs]
    packed = {int(f[0]) for f in fields if f[3:] == ["packed"]}
    if packed:
        costs.assignment = _packed_assignment(costs, packed)  # type: ignore[method-assign]
    stages = [Stage(*(int(x) for x in f[:3])) for f in fields]
    plan, _ = realized_cost(problem, costs, stages, "hand-made split")
    timing = problem.target.step_timing()
    if timing is None:
        raise SystemExit(f"target {target} has no step timing")
    task_stage = plan.task_stage(problem.graph.num_tasks)
    realization = target_realization(problem.graph, problem.target, plan.schedule, task_stage)
    core_stage = core_stages(plan.schedule, task_stage)
    return HandSplit(problem, costs, stages, plan, timing, realization, core_stage)


def _packed_assignment(costs: StageCosts, firsts: set[int]) -> Callable[..., object]:
    """``costs.assignment`` with the stage packer's assignment for the stages that
    start at a group of ``firsts`` (the product's otherwise)."""
    product = costs.assignment

    def assignment(first: int, stop: int, cores: int) -> object:
        found = costs._reuse_packing(first, stop, cores) if first in firsts else None
        return product(first, stop, cores) if found is None else found

    return assignment
