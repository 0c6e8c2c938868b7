"""Reuse-first resident-weight packing: a core for every task under per-core capacities.

A core holds the *distinct* resident weights of the tasks placed on it; a task
whose weights are already there costs no extra slots (reuse). This module finds,
by construction, a core for each task of a given order such that every core's
distinct weights fit its capacity. It is the shared constructive recovery of the
latency reservations (`raptor_cp.heuristics.peft`) and of pipeline stage packing.

Policy (seeds: scheduling.md "Capacity and recovery";
scheduling-implementation.md "Priorities, placement, and recovery limits"):

1. **Forward construction**, tasks in the given order. A task's candidates are
   the cores where the slots of its weights not yet resident fit the free
   capacity. Among them it takes the key ``(new slots, free slots left after
   placing it, core id)`` smallest: reuse first (a core already holding all its
   weights adds nothing), then best fit (least capacity left), then the lowest
   core id. Every (task, core) pair priced is one *candidate check*.
2. If some task fits no core, **one reverse traversal** (same rule, tasks in
   reverse order).
3. If that fails too, at most ``max_replays`` (16) **single-choice replays** of
   the forward construction. Each replays the forward decisions verbatim up to
   one decision point, takes there the best candidate *other* than the forward
   choice, and continues greedily. Decision points are the forward decisions
   that added slots before the failure: first those that placed one of the
   failing task's own weights (its earlier choices), then the others, each group
   most recent first. Replays share one budget of ``replay_check_budget``
   (65,536) candidate checks; a replay that would exceed it stops, and so does
   the search.

The forward and reverse constructions are not budgeted (``O(T P)`` checks each).
Scratch buffers (the core x weight residency bitmap, used slots, choices) are
allocated once and reset per construction; the O(T) snapshot of the failed
forward decisions is taken only after the forward construction fails. Failure
is a bounded-search result, never a proof of infeasibility.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

MAX_REPLAYS = 16
"""Single-choice replays after the reverse traversal fails (seeds)."""
REPLAY_CHECK_BUDGET = 65_536
"""Candidate checks all replays share (seeds)."""

_FITS_NOWHERE = -1
_OUT_OF_BUDGET = -2
_NO_FAILURE = -3
_NEVER = np.iinfo(np.int64).max


@dataclass(frozen=True)
class ResidentPacking:
    """Outcome of `pack_resident_weights`."""

    cores: tuple[int, ...] | None
    """Core of ``order[i]`` for each position ``i``; None when no placement was found."""
    constructions: int
    """Constructions after the forward one: 0, 1 (reverse), up to ``1 + max_replays``."""
    candidate_checks: int
    """(task, core) candidates priced over all constructions."""
    replay_checks: int
    """The part of ``candidate_checks`` spent by replays (at most the replay budget)."""
    failed_task: int | None
    """The task the forward construction could not place (None if it succeeded)."""

    @property
    def found(self) -> bool:
        return self.cores is not None


def pack_resident_weights(
    order: Sequence[int],
    task_weights: Sequence[Sequence[int]],
    weight_size: Sequence[int] | np.ndarray,
    capacities: Sequence[int],
    *,
    max_replays: int = MAX_REPLAYS,
    replay_check_budget: int = REPLAY_CHECK_BUDGET,
) -> ResidentPacking:
    """Place the tasks of ``order`` on cores so each core's distinct weights fit.

    Parameters
    ----------
    order:
        Task ids in construction order (each at most once).
    task_weights:
        Indexed by task id: the weight ids the task needs resident on its core.
    weight_size:
        Slots of each weight id.
    capacities:
        Slots of each core.
    max_replays, replay_check_budget:
        Limits of the replay phase (see the module docstring).

    Returns
    -------
    ResidentPacking
        Cores aligned with ``order``, or None with the search counts.

    Examples
    --------
    Two tasks sharing weight 0 reuse one core; the third goes best fit:

    >>> pack_resident_weights([0, 1, 2], [(0,), (0,), (1,)], [2, 1], [3, 3]).cores
    (0, 0, 0)
    """
    packer = _Packer(order, task_weights, weight_size, capacities)
    n = len(packer.order)
    packer.reset()
    failed = packer.construct(range(n), _NEVER)
    if failed == _NO_FAILURE:
        return packer.result(found=True, failed_task=None, replay_checks=0)
    snapshot_core = packer.choice[:failed].copy()
    snapshot_added = packer.added[:failed].copy()
    failed_task = packer.order[failed]

    packer.constructions += 1
    packer.reset()
    if packer.construct(range(n - 1, -1, -1), _NEVER) == _NO_FAILURE:
        return packer.result(found=True, failed_task=failed_task, replay_checks=0)

    before_replays = packer.checks
    limit = before_replays + replay_check_budget
    status = _FITS_NOWHERE
    for point in packer.decision_points(failed, snapshot_added)[:max_replays]:
        packer.constructions += 1
        packer.replay_prefix(point, snapshot_core, snapshot_added)
        status = packer.construct(range(point, n), limit, exclude=int(snapshot_core[point]))
        if status in (_NO_FAILURE, _OUT_OF_BUDGET):
            break
    return packer.result(
        found=status == _NO_FAILURE,
        failed_task=failed_task,
        replay_checks=packer.checks - before_replays,
    )


class _Packer:
    """Scratch state of the constructions (reused between them)."""

    def __init__(
        self,
        order: Sequence[int],
        task_weights: Sequence[Sequence[int]],
        weight_size: Sequence[int] | np.ndarray,
        capacities: Sequence[int],
    ) -> None:
        self.order = [int(t) for t in order]
        weights = [sorted(set(task_weights[t])) for t in self.order]
        self.count = np.array([len(w) for w in weights], dtype=np.int64)
        self.indptr = np.concatenate([[0], np.cumsum(self.count)]).tolist()
        self.flat = np.fromiter(itertools.chain.from_iterable(weights), dtype=np.int64)
        self.size = np.asarray(weight_size, dtype=np.int64)
        self.capacity = np.asarray(capacities, dtype=np.int64)
        cores = self.capacity.shape[0]
        self.resident = np.zeros((cores, self.size.shape[0]), dtype=bool)
        self.used = np.zeros(cores, dtype=np.int64)
        self.choice = np.full(len(self.order), -1, dtype=np.int64)
        self.added = np.zeros(len(self.order), dtype=np.int64)
        self.checks = 0
        self.constructions = 0

    def result(self, found: bool, failed_task: int | None, replay_checks: int) -> ResidentPacking:
        return ResidentPacking(
            cores=tuple(self.choice.tolist()) if found else None,
            constructions=self.constructions,
            candidate_checks=self.checks,
            replay_checks=replay_checks,
            failed_task=failed_task,
        )

    def reset(self) -> None:
        """Empty every core."""
        self.resident.fill(False)
        self.used.fill(0)

    def construct(self, positions: range, limit: int, exclude: int = -1) -> int:
        """Place ``positions`` in sequence on top of the current scratch state.

        The first position may not use core ``exclude``. Returns `_NO_FAILURE`,
        the position that fits nowhere, or `_OUT_OF_BUDGET` when pricing the next
        position would take the total checks past ``limit``.
        """
        cores = self.capacity.shape[0]
        for pos in positions:
            if self.checks + cores > limit:
                return _OUT_OF_BUDGET
            if self._place(pos, exclude) == _FITS_NOWHERE:
                return pos
            exclude = -1
        return _NO_FAILURE

    def _place(self, pos: int, exclude: int) -> int:
        ids = self.flat[self.indptr[pos] : self.indptr[pos + 1]]
        sizes = self.size[ids]
        new = int(sizes.sum()) - self.resident[:, ids] @ sizes
        fits = self.used + new <= self.capacity
        if exclude >= 0:
            fits[exclude] = False
        self.checks += fits.shape[0]
        if not fits.any():
            return _FITS_NOWHERE
        new_fit = np.where(fits, new, _NEVER)
        left = np.where(new_fit == new_fit.min(), self.capacity - self.used - new, _NEVER)
        core = int(np.argmin(left))
        self.resident[core, ids] = True
        self.used[core] += new[core]
        self.choice[pos] = core
        self.added[pos] = new[core]
        return core

    def decision_points(self, failed: int, added: np.ndarray) -> list[int]:
        """Forward decisions before ``failed`` that added slots, in replay order."""
        own = set(self.flat[self.indptr[failed] : self.indptr[failed + 1]].tolist())

        def placed_own(pos: int) -> bool:
            ids = self.flat[self.indptr[pos] : self.indptr[pos + 1]].tolist()
            return not own.isdisjoint(ids)

        adding = np.flatnonzero(added > 0)[::-1].tolist()
        return sorted(adding, key=lambda pos: not placed_own(pos))

    def replay_prefix(self, point: int, core: np.ndarray, added: np.ndarray) -> None:
        """Reset the scratch state to the forward decisions before ``point`` (no checks)."""
        self.resident.fill(False)
        rows = np.repeat(core[:point], self.count[:point])
        self.resident[rows, self.flat[: self.indptr[point]]] = True
        self.used.fill(0)
        np.add.at(self.used, core[:point], added[:point])
        self.choice[:point] = core[:point]
        self.added[:point] = added[:point]
