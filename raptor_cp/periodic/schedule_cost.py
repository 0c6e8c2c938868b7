"""The queue-model cost of a realized whole schedule, for targets with step timing.

scheduling.md, "Default throughput selection": production "extracts execution
events from realized Spatial and evaluates them with the shared queue engine".
`queue_schedule_cost` is that evaluation for any target that prices the phases
of a step (`raptor_cp.targets.base.StepTiming`); a target adapter answers
`SchedulingTarget.estimate_realized_schedule_cost` with it (the PIM adapter
does). In order:

1. extraction bounds: at most `MAX_CORE_STEPS` steps per core (the seeds' one
   million operation visits per physical core; adding cores does not lower
   another core's allowance) and `MAX_NON_WORK_STEPS` non-compute steps in all
   (two million non-work event visits per candidate); beyond either the cost
   is unavailable, not truncated;
2. event extraction (`raptor_cp.periodic.events.build_events`); a static form
   it rejects (an unmatched SEND/RECV, token counts that drift) makes the
   static support `UNSUPPORTED`;
3. the queue engine in event-index and in reversed tie order, with the source
   switches' and the memory controller's FIFOs (production "models controller
   arrival arbitration", scheduling.md; the periodic diagnostic reports this
   run as its ``memory_controller`` estimate) -- each run must converge
   (its complete-state recurrence within the engine's generation and event
   bounds), otherwise its reason is recorded and the cost is unavailable;
4. on request (always, or when a predicate on the cost so far holds), the
   critical recurrence (`maximum_cycle_ratio`, Howard, exact) as
   `RecurrenceGuidance`: the delay the witness cycle spends on each core.

Nothing here changes the programs; the result is the typed evidence that
selection compares (`RealizedScheduleCost`). Time: the extraction
``O(N + (F + S) log(F + S))``, two queue runs ``O(K (E + V log V))`` and, with
``recurrence``, one cycle-ratio analysis.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

from raptor_cp.errors import InvalidInstanceError, TimingUnavailableError
from raptor_cp.periodic.steps import Compute, Step
from raptor_cp.targets.base import (
    AVAILABLE,
    SUPPORTED,
    UNAVAILABLE_COST,
    UNSUPPORTED,
    RealizedScheduleCost,
    RecurrenceGuidance,
    RecurrenceRequest,
    StepTiming,
)

MAX_CORE_STEPS = 1_000_000
"""Steps one core's program may have (the seeds' per-core operation-visit allowance)."""
MAX_NON_WORK_STEPS = 2_000_000
"""Non-compute steps of all cores together (the seeds' non-work event visits per candidate)."""


def queue_schedule_cost(
    programs: Sequence[Sequence[Step]],
    timing: StepTiming | None,
    name: str,
    recurrence: RecurrenceRequest = False,
    baseline_service_ns: int = 0,
) -> RealizedScheduleCost:
    """Extract, run and summarise one realized schedule (see the module docstring).

    ``recurrence`` (`RecurrenceRequest`): a predicate is asked about the cost
    without the recurrence, once both queue runs have converged.

    ``baseline_service_ns`` (function inputs, constants, outputs, not placed in
    the programs) joins the memory-service term, as in the periodic analysis.
    """
    from raptor_cp.periodic.analysis import check_timing_range
    from raptor_cp.periodic.events import build_events
    from raptor_cp.periodic.queue_engine import STATUS_CONVERGED, queue_estimate

    if timing is None:
        return RealizedScheduleCost.unavailable(f"{name}: the target has no complete step timing")

    longest = max(range(len(programs)), key=lambda c: len(programs[c]), default=None)
    if longest is not None and len(programs[longest]) > MAX_CORE_STEPS:
        return RealizedScheduleCost.unavailable(
            f"{name}: core {longest} has {len(programs[longest])} steps, above the extraction "
            f"bound of {MAX_CORE_STEPS} per core"
        )
    non_work = sum(1 for steps in programs for step in steps if not isinstance(step, Compute))
    if non_work > MAX_NON_WORK_STEPS:
        return RealizedScheduleCost.unavailable(
            f"{name}: {non_work} non-compute steps, above the extraction bound of "
            f"{MAX_NON_WORK_STEPS} per schedule"
        )
    began = time.perf_counter()
    try:
        events = build_events([list(steps) for steps in programs], timing, name)
    except InvalidInstanceError as error:
        return RealizedScheduleCost.unavailable(f"unsupported static form: {error}", UNSUPPORTED)
    try:
        check_timing_range(events, baseline_service_ns)
    except TimingUnavailableError as error:
        return RealizedScheduleCost.unavailable(str(error), SUPPORTED)
    wall = [("extraction", time.perf_counter() - began)]
    began = time.perf_counter()
    estimate = queue_estimate(events, network_queues=True, memory_controller=True)
    wall.append(("queue", time.perf_counter() - began))
    runs = (estimate.run, estimate.reversed_run)
    reasons = [
        f"{run.tie_order} tie order: {run.reason}" for run in runs if run.status != STATUS_CONVERGED
    ]
    cost = RealizedScheduleCost(
        status=UNAVAILABLE_COST if reasons else AVAILABLE,
        reasons=tuple(reasons),
        static_support=SUPPORTED,
        index_interval_ns=estimate.run.interval_ns,
        reversed_interval_ns=estimate.reversed_run.interval_ns,
        core_work_ns=tuple(events.core_work.tolist()),
        memory_service_ns=events.memory_service_ns + baseline_service_ns,
        generations=(estimate.run.generations, estimate.reversed_run.generations),
        events=events.num_events,
        window_generations=(
            estimate.run.window_generations,
            estimate.reversed_run.window_generations,
        ),
        wall_s=tuple(wall),
    )
    if reasons or not (recurrence(cost) if callable(recurrence) else recurrence):
        return cost
    began = time.perf_counter()
    guidance = _recurrence(events, reasons)
    wall.append(("recurrence", time.perf_counter() - began))
    return replace(
        cost,
        status=UNAVAILABLE_COST if reasons else AVAILABLE,
        reasons=tuple(reasons),
        recurrence=guidance,
        recurrence_analysed=True,
        wall_s=tuple(wall),
    )


def _recurrence(events: object, reasons: list[str]) -> RecurrenceGuidance | None:
    """The critical cycle's ratio and per-core delays; a deadlock adds a reason."""
    from raptor_cp.periodic.cycle_ratio import DeadlockError, maximum_cycle_ratio
    from raptor_cp.periodic.events import EventGraph

    assert isinstance(events, EventGraph)
    graph = events.recurrence_graph
    try:
        found = maximum_cycle_ratio(graph, "howard")
    except DeadlockError:
        reasons.append("deadlock: a cycle of distance-0 dependencies")
        return None
    if found is None:
        return None
    cycle = list(found.cycle)
    delay: dict[int, int] = {}
    for e in cycle:
        core = int(graph.core[int(graph.u[e])])
        delay[core] = delay.get(core, 0) + int(graph.w[e])
    return RecurrenceGuidance(
        ratio_ns=float(found.ratio),
        distance=int(graph.d[cycle].sum()),
        core_delay_ns=dict(sorted(delay.items())),
    )
