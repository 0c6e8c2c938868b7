"""The schedule result every scheduler returns (the seeds' MergeScheduleResult).

A schedule fixes, for every task, its core and its slot in that core's order,
plus the scheduler's estimated start. Timing is recomputed from the order by
`raptor_cp.evaluation`; `raptor_cp.check` validates the schedule independently of
whoever produced it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np


@dataclass(frozen=True, eq=False)
class Schedule:
    """Core assignment, contiguous per-core slots and estimated starts.

    Parameters
    ----------
    core_order:
        For each core, its task ids in execution order (slot 0 first). Cores
        without work have an empty tuple.
    start_ns:
        The scheduler's estimated start time of each task.
    scheduler:
        Name of the solver that produced it (``heft``, ``peft``, ``cpsat``...).
    stage:
        For pipeline schedules, the stage of each core (``-1`` for idle cores).
    """

    core_order: tuple[tuple[int, ...], ...]
    start_ns: np.ndarray
    scheduler: str
    stage: tuple[int, ...] | None = None
    metadata: dict[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        start = np.asarray(self.start_ns, dtype=np.int64)
        start.setflags(write=False)
        object.__setattr__(self, "start_ns", start)

    @property
    def num_cores(self) -> int:
        return len(self.core_order)

    @property
    def num_tasks(self) -> int:
        return int(self.start_ns.shape[0])

    @cached_property
    def core(self) -> np.ndarray:
        """Core of each task (``-1`` for a task that appears on no core)."""
        core = np.full(self.num_tasks, -1, dtype=np.int64)
        for p, order in enumerate(self.core_order):
            core[list(order)] = p
        return core

    @cached_property
    def slot(self) -> np.ndarray:
        """Position of each task in its core's order."""
        slot = np.full(self.num_tasks, -1, dtype=np.int64)
        for order in self.core_order:
            slot[list(order)] = np.arange(len(order))
        return slot

    @property
    def cores_used(self) -> int:
        return sum(1 for order in self.core_order if order)
