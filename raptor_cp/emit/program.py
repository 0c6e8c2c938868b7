"""Emit a checked schedule as a pimsim-nn program: lower, allocate, verify, predict.

The seeds' steps 9–10 of "Default throughput selection" ("lower, allocate,
verify, and emit only the selected program"), for both compile modes:

1. order each core's items (`raptor_cp.emit.order`: the latency schedule's
   time-ordered rendezvous, or the pipeline realization);
2. lower them to instructions with local-memory addresses
   (`raptor_cp.emit.lower`, `raptor_cp.emit.allocate`): a resource limit is a
   candidate-specific `BackendResourceError`;
3. verify that the blocking rendezvous order cannot deadlock
   (`raptor_cp.emit.rendezvous`; a `DeadlockError` stops the compile);
4. predict the program with the periodic model before lowering (the
   realized schedule), next to what the schedule itself predicted, so that
   ``raptor-cp periodic`` on the written program can check the round trip
   (`raptor_cp.emit.round_trip`).

Nothing here writes files (`raptor_cp.emit.files` does).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from raptor_cp.emit.backend import BackendAttempt, costed_candidates, select_for_backend
from raptor_cp.emit.latency_order import latency_items
from raptor_cp.emit.lower import LoweredProgram, lower_program
from raptor_cp.emit.order import CoreItems, item_steps, pipeline_items, with_baseline
from raptor_cp.emit.rendezvous import RendezvousCheck, check_rendezvous
from raptor_cp.errors import CapabilityUnavailableError
from raptor_cp.graph import ComputeGraph
from raptor_cp.periodic.analysis import dependency_finish
from raptor_cp.periodic.events import EventGraph, build_events
from raptor_cp.periodic.queue_engine import queue_estimate
from raptor_cp.periodic.rendezvous_order import QUANTUM_NS, UnitCuts
from raptor_cp.periodic.single_pass import single_pass
from raptor_cp.pipeline.plan import PipelinePlan
from raptor_cp.pipeline.realize import COPIES, target_realization
from raptor_cp.problems import PipelineSolution
from raptor_cp.schedule import Schedule
from raptor_cp.targets.base import SchedulingTarget
from raptor_cp.targets.pim.isa import OPCODES
from raptor_cp.targets.pim.target import PimTarget


@dataclass(frozen=True)
class EmittedProgram:
    """A verified program in memory, with everything its files and reports need."""

    mode: str
    """``latency`` (one pass) or ``pipeline`` (each core loops its stream)."""
    generations_per_round: int
    """Inferences one pass of every stream runs: 1, or `COPIES` for a double-buffered
    pipeline (`raptor_cp.emit.order.unrolled`)."""
    target: PimTarget
    lowered: LoweredProgram
    check: RendezvousCheck
    prediction: dict[str, Any]
    """The schedule's figure and the realized schedule's (`raptor_cp.emit.round_trip`)."""

    def report(self) -> dict[str, Any]:
        """The ``emission.json`` facts (without file names)."""
        lowered = self.lowered
        ops: Counter[str] = Counter()
        for program in lowered.cores.values():
            codes, counts = np.unique(program.op, return_counts=True)
            for code, count in zip(codes.tolist(), counts.tolist(), strict=True):
                ops[OPCODES[code]] += count
        return {
            "mode": self.mode,
            "generations_per_round": self.generations_per_round,
            "target": self.target.name,
            "instructions": lowered.instructions,
            "instructions_by_op": dict(sorted(ops.items())),
            "active_cores": sorted(lowered.cores),
            "backend": {
                "local_memory_limit_bytes": lowered.local_limit_bytes,
                "local_memory_peak_bytes": max(lowered.local_peak_bytes.values(), default=0),
                "local_memory_peak_core": max(
                    lowered.local_peak_bytes,
                    key=lambda c: lowered.local_peak_bytes[c],
                    default=None,
                ),
                "event_registers_max": max(lowered.event_registers.values(), default=0),
                "global_memory_bytes": lowered.global_bytes,
            },
            "rendezvous_check": {
                "status": "passed",
                "mode": "throughput (each stream loops)" if self.mode == "pipeline" else "latency",
                "rounds": self.check.rounds,
                "transfers": self.check.transfers,
                "tokens": self.check.tokens,
            },
            "prediction": self.prediction,
        }


def pim_target(target: SchedulingTarget) -> PimTarget:
    """``target`` as a `PimTarget`, or `CapabilityUnavailableError`."""
    if not isinstance(target, PimTarget):
        raise CapabilityUnavailableError(
            f"--emit writes pimsim-nn programs and needs a pimsim-nn target, got {target.name}",
            target=target.name,
            capability="instruction emission",
        )
    return target


def emit_latency(
    graph: ComputeGraph,
    target: SchedulingTarget,
    schedule: Schedule,
    start_ns: np.ndarray,
    makespan_ns: int,
) -> EmittedProgram:
    """Lower, allocate and verify a checked latency schedule; predict its program."""
    chip = pim_target(target)
    cuts = UnitCuts(graph, chip, QUANTUM_NS)
    items = with_baseline(graph, latency_items(graph, chip, schedule, start_ns, cuts))
    lowered, check = _backend(graph, chip, items, looping=False)
    realized = build_events(item_steps(items, cuts), chip.step_timing(), graph.name)
    passes = single_pass(realized, dependency_finish(realized))
    prediction = {
        "schedule_makespan_ns": makespan_ns,
        "realized_unqueued_ns": passes.unqueued_ns,
        "realized_single_pass_ns": passes.latency_ns,
    }
    return EmittedProgram("latency", 1, chip, lowered, check, prediction)


def emit_pipeline(
    graph: ComputeGraph,
    target: SchedulingTarget,
    plan: PipelinePlan,
    interval_ns: int | None = None,
) -> EmittedProgram:
    """Lower, allocate and verify a checked pipeline plan; predict its looping program.

    The program is the plan's realization (`raptor_cp.pipeline.realize.pipeline_events`:
    its READY/FREE registers, byte-payload and register checks) with the baseline
    requests placed around their tasks, two generations per round, one per copy of
    the double-buffered publications (`raptor_cp.emit.order.unrolled`); it is predicted from one
    generation (the two time alike), and its predicted interval is the larger of the
    queue engine's two tie orders, as selection estimates a candidate. ``interval_ns``
    is the schedule's own interval as the compile reports it (the selection's queue estimate of the
    plan); None takes the plan's analytic proxy (a selection without queue
    comparison).
    """
    chip = pim_target(target)
    items, realized = _pipeline_program(graph, chip, plan)
    lowered, check = _backend(graph, chip, items, looping=True, copies=COPIES)
    prediction = {
        **_queue_prediction(plan, realized, interval_ns),
        "realized_single_pass_ns": single_pass(realized, dependency_finish(realized)).latency_ns,
    }
    return EmittedProgram("pipeline", COPIES, chip, lowered, check, prediction)


def pipeline_prediction(
    graph: ComputeGraph, target: SchedulingTarget, plan: PipelinePlan, interval_ns: int | None
) -> dict[str, Any]:
    """The queue figures of `emit_pipeline`'s prediction for ``plan``, without lowering
    the program (``schedule_interval_ns``, ``realized_queue_interval_ns``,
    ``realized_queue_reason``; not the single pass).

    Selection estimates a candidate without the baseline requests' positions (their
    service joins the memory term; scheduling.md, "Periodic dependency
    diagnostics"); this is the interval of the program that places them. Raises
    `CapabilityUnavailableError` for a target without pimsim-nn programs and
    `TimingUnavailableError` for a plan the periodic model cannot time.
    """
    return _queue_prediction(plan, pipeline_program_events(graph, target, plan), interval_ns)


def pipeline_program_events(
    graph: ComputeGraph, target: SchedulingTarget, plan: PipelinePlan
) -> EventGraph:
    """The periodic event graph of one generation of the program `emit_pipeline` writes
    for ``plan``; raises as `pipeline_prediction` does."""
    return _pipeline_program(graph, pim_target(target), plan)[1]


def _pipeline_program(
    graph: ComputeGraph, chip: PimTarget, plan: PipelinePlan
) -> tuple[CoreItems, EventGraph]:
    """One generation of ``plan``'s program and its periodic event graph: the plan's
    realization (`raptor_cp.pipeline.realize.target_realization`, with its register,
    byte-payload and timing checks) with the baseline requests placed around their
    tasks, its tasks cut once for both."""
    cuts = UnitCuts(graph, chip, QUANTUM_NS)
    stage = plan.task_stage(graph.num_tasks)
    realization = target_realization(graph, chip, plan.schedule, stage, cuts)
    items = with_baseline(graph, pipeline_items(graph, realization))
    return items, build_events(item_steps(items, cuts), chip.step_timing(), graph.name)


def _queue_prediction(
    plan: PipelinePlan, realized: EventGraph, interval_ns: int | None
) -> dict[str, Any]:
    """The schedule's interval (``interval_ns``; None: the plan's analytic proxy) beside
    the queue engine's on the program's events, the larger of the two tie orders."""
    queue = queue_estimate(realized)
    larger = queue.larger_interval_ns  # whole ns rounded up, as a candidate's estimate
    return {
        "schedule_interval_ns": plan.interval_ns if interval_ns is None else interval_ns,
        "realized_queue_interval_ns": None if larger is None else math.ceil(larger),
        "realized_queue_reason": queue.run.reason or queue.reversed_run.reason,
    }


def emit_pipeline_plan(
    graph: ComputeGraph, target: SchedulingTarget, solution: PipelineSolution
) -> tuple[PipelineSolution, EmittedProgram, tuple[BackendAttempt, ...]]:
    """Emit a pipeline selection, selecting again on backend rejection (`raptor_cp.emit.backend`).

    Returns the solution of the candidate that passed (``solution`` itself unless
    it was rejected), its program and every backend attempt.
    """
    pim_target(target)
    selection = solution.selection
    assert selection is not None

    def lower(plan: PipelinePlan) -> EmittedProgram:
        return emit_pipeline(graph, target, plan, selection.candidate_of(plan).estimate_ns)

    chosen, program, attempts = select_for_backend(costed_candidates(solution), lower)
    if chosen.schedule is not solution.plan:
        estimate = selection.candidate_of(chosen.schedule).estimate_ns
        objective = chosen.schedule.interval_ns if estimate is None else estimate
        solution = replace(solution, plan=chosen.schedule, objective=objective)
    return solution, program, attempts


def _backend(
    graph: ComputeGraph, target: PimTarget, items: CoreItems, looping: bool, copies: int = 1
) -> tuple[LoweredProgram, RendezvousCheck]:
    """Lower ``items``, ``copies`` generations per stream, and check the program: one pass,
    or ``looping`` streams."""
    lowered = lower_program(graph, target, items, copies)
    return lowered, check_rendezvous(lowered.cores, looping)
