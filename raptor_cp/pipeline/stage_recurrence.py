"""Where a pipeline stage's time goes: its cores' occupancy against its own recurrence.

A realized pipeline (`raptor_cp.pipeline.realize`) runs one in-order program
per core, one generation per pass, and its same-stage transfers are blocking
rendezvous (pimsim-nn's ``send``/``recv``). Per stage, two figures say whether
the stage is held back by work or by coupling:

* **occupancy**: the busiest core's time per generation in its compute runs and
  transfers, each transfer priced as the rendezvous simulation prices the time
  it keeps its sender and its receiver busy
  (`raptor_cp.periodic.rendezvous_order.transfer_busy_ns`). It is about what
  the stage would recur at if its cores never waited for each other (a
  receive posted after its request has arrived skips that flit, so a
  recurrence can come a few ns below it: a diagnostic, not a bound);
* **own recurrence**: the maximum cycle ratio of the stage's compute, send and
  receive steps alone (`raptor_cp.periodic.cycle_ratio`), without the other
  stages, loads, stores or synchronization, and how many cores its critical
  cycle crosses.

A stage whose own recurrence is far above its occupancy, through a cycle that
crosses many cores, is coupled: a blocking transfer joins two cores'
generations, so a core whose program holds both ends of a long chain (a skip
connection's fork and join, or tasks from the start and the end of the stage)
makes the stage recur at that chain's length rather than at any core's work.
On ResNet-18's depth-8 selection (arch-a) the last stage's occupancy is
1.40 ms and its own recurrence 3.44 ms across 17 cores (docs/benchmarks.md,
"Twelfth pass"). The figures are read-only diagnostics, never fed back into
selection. Time per stage: one maximum cycle ratio over its events, ``O(V E)``
at worst for Howard's method, typically near linear.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from raptor_cp.periodic.cycle_ratio import maximum_cycle_ratio
from raptor_cp.periodic.events import build_events
from raptor_cp.periodic.rendezvous_order import transfer_busy_ns
from raptor_cp.periodic.steps import Compute, Recv, Send, Step
from raptor_cp.pipeline.realize import PipelineRealization
from raptor_cp.schedule import Schedule
from raptor_cp.targets.base import StepTiming

TransferFilter = Callable[[int, int], bool]
"""Whether to keep the transfer from producer task to consumer task (both ids)."""


@dataclass(frozen=True)
class StageRecurrence:
    """The occupancy and the own recurrence of one stage (module docstring), in ns."""

    stage: int
    cores: int
    core_work_ns: int
    """The busiest core's own work (compute runs, local reads and writes)."""
    occupancy_ns: int
    own_recurrence_ns: float | None
    """None: the stage's steps form no cycle (a stage without cores' work)."""
    critical_cycle_cores: int
    """Cores the critical cycle of the own recurrence crosses (0 without one)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "cores": self.cores,
            "core_work_ns": self.core_work_ns,
            "occupancy_ns": self.occupancy_ns,
            "own_recurrence_ns": self.own_recurrence_ns,
            "critical_cycle_cores": self.critical_cycle_cores,
        }


def core_stages(schedule: Schedule, task_stage: np.ndarray) -> np.ndarray:
    """Each core's stage from the tasks it runs; -1 for a core without tasks (unlike
    `Schedule.stage`, which gives a stage's whole region, idle cores included)."""
    stage = np.full(schedule.num_cores, -1, dtype=np.int64)
    stage[schedule.core] = task_stage
    return stage


def occupancy_ns(programs: list[list[Step]], timing: StepTiming) -> np.ndarray:
    """Per core, the time its compute runs, sends and receives keep it busy per generation."""
    busy = np.zeros(len(programs), dtype=np.int64)
    for c, program in enumerate(programs):
        for step in program:
            if isinstance(step, Compute):
                busy[c] += step.ns
            elif isinstance(step, Send):
                busy[c] += transfer_busy_ns(timing, c, step.peer, step.nbytes)[0]
            elif isinstance(step, Recv):
                busy[c] += transfer_busy_ns(timing, step.peer, c, step.nbytes)[1]
    return busy


def own_recurrence(
    realization: PipelineRealization,
    mine: np.ndarray,
    timing: StepTiming,
    keep: TransferFilter | None = None,
) -> tuple[float | None, int, int]:
    """The maximum cycle ratio of the compute, send and receive steps of the cores where
    ``mine`` holds, alone; the cores its critical cycle crosses; the busiest core's own
    work. ``keep`` leaves out the transfers it rejects (None: keep all), e.g. to see what
    a stage would recur at if some transfers did not couple their cores."""

    def kept(c: int, i: int, step: Step) -> bool:
        if isinstance(step, Compute):
            return True
        if not isinstance(step, (Send, Recv)):
            return False
        producer, consumer = realization.tasks[c][i][:2]
        return keep is None or keep(producer, consumer)

    steps = [
        [step for i, step in enumerate(program) if kept(c, i, step)] if mine[c] else []
        for c, program in enumerate(realization.cores)
    ]
    events = build_events(steps, timing, "stage")
    work = int(events.core_work.max()) if len(events.core_work) else 0
    ratio = maximum_cycle_ratio(events.recurrence_graph)
    if ratio is None:
        return None, 0, work
    return float(ratio.ratio), len(ratio.witness.cores), work


def stage_recurrences(
    realization: PipelineRealization, core_stage: np.ndarray, timing: StepTiming
) -> list[StageRecurrence]:
    """Every stage's occupancy and own recurrence; ``core_stage`` gives each core's stage
    (-1: idle)."""
    occupied = occupancy_ns(realization.cores, timing)
    result = []
    for s in range(int(core_stage.max()) + 1 if core_stage.size else 0):
        mine = core_stage == s
        ratio, crossed, work = own_recurrence(realization, mine, timing)
        result.append(
            StageRecurrence(
                s, int(mine.sum()), work, int(occupied[mine].max(initial=0)), ratio, crossed
            )
        )
    return result
