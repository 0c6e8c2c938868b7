"""The queue interval of a pipeline partition given by hand: stage ranges and core budgets.

Usage::

    python benchmarks/bench_stage_split.py MODEL TARGET FIRST:STOP:CORES ...

Each ``FIRST:STOP:CORES`` is one stage: the operation groups ``[FIRST, STOP)``
(`raptor_cp.pipeline.groups`, in the selection's order; ``--groups`` lists
them) on ``CORES`` cores. The stages are packed, placed and realized exactly
as pipeline selection builds a candidate (`raptor_cp.pipeline.beam.realized_cost`)
and evaluated by the queue engine in both tie orders; the script prints the
larger (the candidate's estimate), each order's, the busiest core's work and
the memory controller's service, with the command that reproduces them. It
answers "what would this split cost?" without a selection, e.g. for a split
the search never proposes; docs/benchmarks.md ("Tenth pass") used it to
compare three stages of ResNet-50 under single and double buffering (run it
from each commit's tree).

``--per-stage`` adds, per stage, where its time goes: the busiest core's work,
its occupancy (`raptor_cp.pipeline.stage_recurrence`: that work plus the time
its transfers keep it busy), the stage's list-schedule span (the placement's
timing, which the packing and placement compare), the finish of the
rendezvous simulation that orders the stage's programs
(`raptor_cp.periodic.rendezvous_order`), the same simulation
with transfers that take no core time (what the list schedule assumes), and
the stage's own recurrence: the maximum cycle ratio of its cores' compute,
send and receive steps alone, without the other stages, loads or
synchronization, with the number of cores its critical cycle crosses, and the
same without the stage's long transfers (`LONG_GROUPS`: a skip connection's
join). docs/benchmarks.md ("Eleventh pass", "Twelfth pass") reads it.

``--program`` sets the split's program (the realization with the baseline
requests placed, as ``--emit`` writes it; `raptor_cp.emit.program`) beside
its realization: per stage, the largest time one of its cores waits for the
memory controller per generation, and both queue intervals with the
controller (docs/benchmarks.md, "Fifteenth pass", where the program loses).

``--generations N`` runs the queue engine on the split's programs in both tie
orders for up to ``N`` generations with no bound on processed events (the
selection's bound is ``16 (V + E)``) and prints each generation's length: it
shows why a candidate's run does not converge, or the cycle of generations it
repeats (docs/benchmarks.md, "Twenty-first pass": six on ViT at depth 4).
"""

from __future__ import annotations

import argparse
import pathlib
import sys
from dataclasses import dataclass

import numpy as np

import raptor_cp
from raptor_cp.emit.program import pipeline_program_events
from raptor_cp.graph import ComputeGraph
from raptor_cp.periodic.events import build_events
from raptor_cp.periodic.queue_engine import queue_estimate, run_queue, with_queues
from raptor_cp.periodic.rendezvous_order import (
    QUANTUM_NS,
    Action,
    UnitCuts,
    simulate_rendezvous,
    transfer_busy_ns,
)
from raptor_cp.pipeline.beam import realized_cost
from raptor_cp.pipeline.initial import initial_pipeline
from raptor_cp.pipeline.plan import PipelinePlan
from raptor_cp.pipeline.realize import pipeline_events, same_stage_transfers, target_realization
from raptor_cp.pipeline.stage_recurrence import core_stages, own_recurrence, stage_recurrences
from raptor_cp.problems import PipelineProblem, Stage
from raptor_cp.targets.base import SchedulingTarget, StepTiming

MODELS = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "models"


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model", help="a model name in tests/data/models or a path")
    parser.add_argument("target")
    parser.add_argument("stages", nargs="*", help="FIRST:STOP:CORES per stage")
    parser.add_argument("--groups", action="store_true", help="list the operation groups")
    parser.add_argument("--per-stage", action="store_true", help="where each stage's time goes")
    parser.add_argument("--generations", type=int, help="N generations' lengths per tie order")
    parser.add_argument("--program", action="store_true", help="the program's controller waits")
    args = parser.parse_args(argv)
    shipped = MODELS / f"{args.model}.onnx"
    prepared = raptor_cp.prepare(shipped if shipped.exists() else args.model, args.target)
    problem = PipelineProblem(prepared.graph, prepared.target, max(1, len(args.stages)))
    costs = initial_pipeline(problem.graph, problem.target, problem.depth).costs
    if args.groups:
        for index, name in enumerate(costs.groups.names):
            print(index, name)
        return
    stages = [Stage(*(int(x) for x in text.split(":"))) for text in args.stages]
    plan, cost = realized_cost(problem, costs, stages, "hand-made split")
    print(f"python benchmarks/bench_stage_split.py {' '.join(argv)}")
    if args.generations:
        print_generations(problem.graph, problem.target, plan, args.generations)
    if cost.index_interval_ns is None or cost.reversed_interval_ns is None:
        print(f"unavailable: {'; '.join(cost.reasons)}")
        return
    larger = max(cost.index_interval_ns, cost.reversed_interval_ns)
    memory = "n/a" if cost.memory_service_ns is None else f"{cost.memory_service_ns / 1e6:.3f} ms"
    print(
        f"queue interval {larger / 1e6:.3f} ms (index ties {cost.index_interval_ns / 1e6:.3f}, "
        f"reversed {cost.reversed_interval_ns / 1e6:.3f}); busiest core "
        f"{max(cost.core_work_ns) / 1e6:.3f} ms; memory controller {memory}"
    )
    if args.program:
        print_program(problem.graph, problem.target, plan)
    if args.per_stage:
        print_per_stage(
            problem.graph, problem.target, plan, costs.groups.group_of_task(problem.graph.num_tasks)
        )


@dataclass(frozen=True)
class FreeTransfers:
    """A target's step timing with transfers that take no core time (what the list
    schedule assumes); the receive budget is the target's."""

    timing: StepTiming

    @property
    def local_memory_bytes(self) -> int:
        return self.timing.local_memory_bytes

    def control_ns(self, src: int, dst: int) -> int:
        return 0

    def data_ns(self, src: int, dst: int, nbytes: int) -> int:
        return 0

    def local_read_ns(self, nbytes: int) -> int:
        return 0

    def local_write_ns(self, nbytes: int) -> int:
        return 0


def simulated_finish(
    graph: ComputeGraph,
    target: SchedulingTarget,
    timing: StepTiming | FreeTransfers,
    plan: PipelinePlan,
    stages: np.ndarray,
) -> np.ndarray:
    """Per core, when its entries of the rendezvous simulation end (the stages side by side)."""
    schedule = plan.schedule
    transfers = same_stage_transfers(graph, schedule, stages)
    cuts = UnitCuts(graph, target, QUANTUM_NS)
    programs = simulate_rendezvous(
        graph,
        timing,  # type: ignore[arg-type]  # FreeTransfers has the phases the simulation reads
        schedule,
        schedule.start_ns,
        transfers,
        cuts,
    )
    src, nbytes = graph.edge_src.tolist(), graph.edge_bytes.tolist()
    core = schedule.core.tolist()
    finish = np.zeros(schedule.num_cores, dtype=np.int64)
    for c, entries in enumerate(programs.entries()):
        for x in entries:
            if x.action is Action.TASK:
                end = x.start_ns + x.ns
            else:
                a = core[src[x.edge]]
                b = x.peer if x.action is Action.SEND else c
                send, receive = transfer_busy_ns(timing, a, b, nbytes[x.edge])  # type: ignore[arg-type]
                end = x.start_ns + (send if x.action is Action.SEND else receive)
            finish[c] = max(finish[c], end)
    return finish


def print_generations(
    graph: ComputeGraph, target: SchedulingTarget, plan: PipelinePlan, generations: int
) -> None:
    """The ``--generations`` lines (module docstring), lengths in ms."""
    timing = target.step_timing()
    if timing is None:
        print(f"--generations: target {target.name} has no step timing")
        return
    programs = target_realization(graph, target, plan.schedule, plan.task_stage(graph.num_tasks))
    events = with_queues(build_events(programs.cores, timing, graph.name), True, True)
    for reverse in (False, True):
        run = run_queue(events, reverse, generations, event_budget=2**62)
        lengths = np.diff(np.asarray(run.generation_ends)) / 1e6
        order = "reversed" if reverse else "index"
        print(f"{order} ties, {run.status} after {run.generations} generations:")
        print("  " + " ".join(f"{x:.3f}" for x in lengths))


def print_program(graph: ComputeGraph, target: SchedulingTarget, plan: PipelinePlan) -> None:
    """The ``--program`` lines (module docstring), times in ms."""
    stage = plan.task_stage(graph.num_tasks)
    core_stage = core_stages(plan.schedule, stage)
    realization, _ = pipeline_events(graph, target, plan.schedule, stage)
    program = pipeline_program_events(graph, target, plan)
    for label, events in (("realization", realization), ("program", program)):
        queue = queue_estimate(events)
        longest: dict[int, float] = {}
        for core, wait in (queue.run.core_wait_ns or {}).items():
            s = int(core_stage[core])
            longest[s] = max(longest.get(s, 0.0), wait)
        waits = ", ".join(f"stage {s} {w / 1e6:.3f}" for s, w in sorted(longest.items()))
        print(
            f"{label}: queue interval {_ms(queue.interval_ns)} ms (reversed ties "
            f"{_ms(queue.alternative_tie_interval_ns)}), memory service "
            f"{events.memory_service_ns / 1e6:.3f} ms; longest controller wait per "
            f"generation: {waits}"
        )


LONG_GROUPS = 2
"""A same-stage transfer is long when its consumer's group is more than this many groups
after its producer's (a skip connection's join, for instance)."""


def print_per_stage(
    graph: ComputeGraph, target: SchedulingTarget, plan: PipelinePlan, group: np.ndarray
) -> None:
    """The ``--per-stage`` table (module docstring), times in ms; ``group`` is every task's
    operation group."""
    timing = target.step_timing()
    if timing is None:
        print(f"--per-stage: target {target.name} has no step timing")
        return
    stages = plan.task_stage(graph.num_tasks)
    core_stage = core_stages(plan.schedule, stages)
    priced = simulated_finish(graph, target, timing, plan, stages)
    free = simulated_finish(graph, target, FreeTransfers(timing), plan, stages)
    realization = target_realization(graph, target, plan.schedule, stages)
    print(
        "stage  cores  busiest core  occupancy  list span  simulated  transfers free  "
        "own recurrence  cycle cores  without long"
    )
    for entry, placement in zip(
        stage_recurrences(realization, core_stage, timing), plan.placements, strict=True
    ):
        mine = core_stage == entry.stage
        short = own_recurrence(
            realization, mine, timing, lambda u, v: group[v] - group[u] <= LONG_GROUPS
        )[0]
        print(
            f"{entry.stage:>5}  {entry.cores:>5}  {entry.core_work_ns / 1e6:>12.3f}  "
            f"{entry.occupancy_ns / 1e6:>9.3f}  {placement.timing.span_ns / 1e6:>9.3f}  "
            f"{priced[mine].max() / 1e6:>9.3f}  {free[mine].max() / 1e6:>14.3f}  "
            f"{_ms(entry.own_recurrence_ns):>14}  {entry.critical_cycle_cores:>11}  "
            f"{_ms(short):>12}"
        )


def _ms(ns: float | None) -> str:
    return "none" if ns is None else f"{ns / 1e6:.3f}"


if __name__ == "__main__":
    main(sys.argv[1:])
