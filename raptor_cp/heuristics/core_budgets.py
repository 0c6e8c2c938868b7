"""Minimax core budgets: share a pool of cores among fixed stages, minimising the worst stage.

Seeds (scheduling.md, "Throughput scheduling uses one bounded joint
optimizer"): every proposed partition receives a minimax core budget for its
changed stages, unchanged stages keep theirs, and "a feasible packing remains
feasible with idle extra cores". `minimax_budgets` solves that allocation
exactly over the stage-cost curves ``stage_cost(first, stop, cores)`` (usually
ordered-packing curves, see `raptor_cp.pipeline_problems.StageCost`).

Algorithm (binary search on the answer)
---------------------------------------
For ``n`` stages sharing ``C`` cores, each stage can get at most
``top = C - (n - 1)`` cores (the others need one each), so each curve is
tabulated for ``k = 1..top``: ``n top <= S P`` queries, the seeds' bound for
one constructive allocation. Curves need not be monotone and may be
unavailable (None) anywhere. Since idle cores are allowed, a stage that reaches
cost ``T`` with ``k'`` cores can do so within any ``k >= k'``; the *envelope*
``env(k) = min_{k' <= k} cost(k')`` is therefore non-increasing, and

* ``need(T)`` = the fewest cores whose envelope is ``<= T`` (the first ``k``
  with ``cost(k) <= T``);
* ``T`` is achievable iff ``sum_i need_i(T) <= C`` (take ``b_i = need_i(T)``).

Achievability is monotone in ``T``, so a binary search over the sorted distinct
finite curve values finds the optimum ``T*`` exactly, for any curve shape. The
budgets are ``b_i = need_i(T*)``; the stage's cost at ``b_i`` is its envelope
value, so `raptor_cp.pipeline_problems.check_partition` (which evaluates
``stage_cost`` at the budget itself) sees a cost ``<= T*``.

Leftover cores ``C - sum b_i`` then go to the bottleneck: repeatedly the stage
with the largest current cost (ties: lowest stage index) receives the fewest
extra cores that strictly lower its cost (crossing plateaus of flat curves);
a stage no leftover can improve is dropped. Cores that improve no stage stay
idle (on a non-monotone curve more cores can cost more, so they are not forced
onto a stage). This does not change ``T*``; it lowers the other stages' costs
in bottleneck order.

Time: ``O(n P)`` stage-cost queries plus ``O(n P log(n P))`` arithmetic;
storage ``O(n P)``.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from raptor_cp.errors import InvalidInstanceError
from raptor_cp.heuristics.range_packing import UNAVAILABLE
from raptor_cp.problems import StageCost


class CostCache:
    """Memoised ``stage_cost(first, stop, cores)`` that also validates and counts queries.

    Each distinct ``(first, stop, cores)`` reaches the wrapped callable once;
    ``queries`` counts those calls (the seeds' ``Kpack`` units of work).
    Wrapping a `CostCache` again returns a cache sharing the same table.
    """

    def __init__(self, stage_cost: StageCost) -> None:
        if isinstance(stage_cost, CostCache):
            self._cost: StageCost = stage_cost._cost
            self._table: dict[tuple[int, int, int], int | None] = stage_cost._table
        else:
            self._cost = stage_cost
            self._table = {}

    @property
    def queries(self) -> int:
        """Distinct ``(first, stop, cores)`` triples evaluated so far."""
        return len(self._table)

    def __call__(self, first: int, stop: int, cores: int) -> int | None:
        key = (first, stop, cores)
        if key in self._table:
            return self._table[key]
        value = self._cost(first, stop, cores)
        if value is not None:
            if int(value) != value or value < 0:
                raise InvalidInstanceError(
                    f"stage_cost({first}, {stop}, {cores}) returned {value!r}; expected a "
                    "non-negative integer or None"
                )
            value = int(value)
        self._table[key] = value
        return value


@runtime_checkable
class CostCurves(Protocol):
    """A stage cost that hands out a range's whole curve at once.

    ``curve(first, stop, max_cores)[k - 1]`` must equal ``stage_cost(first, stop, k)``
    for ``k = 1..max_cores``, with `UNAVAILABLE` for None (`StageCosts` answers it
    from its batch-priced memo, sparing one call per core count).
    """

    def curve(self, first: int, stop: int, max_cores: int) -> np.ndarray: ...


def _cost_curve(stage_cost: StageCost, first: int, stop: int, max_cores: int) -> np.ndarray:
    """``stage_cost(first, stop, k)`` for ``k = 1..max_cores`` (index ``k - 1``), None as
    `UNAVAILABLE`."""
    if isinstance(stage_cost, CostCurves):
        return stage_cost.curve(first, stop, max_cores)
    values = (stage_cost(first, stop, k) for k in range(1, max_cores + 1))
    return np.array([UNAVAILABLE if v is None else v for v in values], dtype=np.int64)


def minimax_budgets(
    stage_ranges: Sequence[tuple[int, int]], cores_available: int, stage_cost: StageCost
) -> tuple[int, ...] | None:
    """Core budgets for ``stage_ranges`` minimising the maximum stage cost.

    Parameters
    ----------
    stage_ranges:
        ``(first, stop)`` group range of each stage, in order.
    cores_available:
        Cores the stages share; budgets are ``>= 1`` each and total at most this.
    stage_cost:
        ``stage_cost(first, stop, cores) -> int | None`` (None: no packing).

    Returns
    -------
    tuple of int or None
        One budget per stage (see the module docstring for the choice among
        optimal vectors and for idle cores), or None when no budget vector gives
        every stage an available cost.
    """
    n = len(stage_ranges)
    if n == 0:
        return ()
    top = cores_available - (n - 1)
    if top < 1:
        return None
    curves = [_cost_curve(stage_cost, first, stop, top) for first, stop in stage_ranges]
    envelopes = [np.minimum.accumulate(curve) for curve in curves]
    # -envelope is non-decreasing: searchsorted finds the first k reaching a cost.
    rising = [-envelope for envelope in envelopes]
    if any(envelope[-1] == UNAVAILABLE for envelope in envelopes):
        return None

    def needs(limit: int) -> list[int] | None:
        """Fewest cores per stage to reach ``limit``; None if their total exceeds the pool."""
        counts = [int(np.searchsorted(r, -limit, side="left")) + 1 for r in rising]
        return counts if sum(counts) <= cores_available else None

    candidates = np.unique(np.concatenate(envelopes))
    candidates = candidates[candidates != UNAVAILABLE]
    low, high = 0, len(candidates) - 1
    if needs(int(candidates[high])) is None:
        return None
    while low < high:
        middle = (low + high) // 2
        if needs(int(candidates[middle])) is None:
            low = middle + 1
        else:
            high = middle
    budgets = needs(int(candidates[low]))
    assert budgets is not None
    _give_leftover(budgets, cores_available - sum(budgets), envelopes, rising)
    return tuple(budgets)


def _give_leftover(
    budgets: list[int], leftover: int, envelopes: list[np.ndarray], rising: list[np.ndarray]
) -> None:
    """Hand leftover cores to the bottleneck stage while that strictly lowers its cost."""
    heap = [
        (-int(env[b - 1]), i) for i, (env, b) in enumerate(zip(envelopes, budgets, strict=True))
    ]
    heapq.heapify(heap)
    while leftover > 0 and heap:
        negative_cost, i = heapq.heappop(heap)
        # First k (1-based) whose envelope is strictly below the current cost.
        better = int(np.searchsorted(rising[i], negative_cost, side="right")) + 1
        extra = better - budgets[i]
        if better > len(envelopes[i]) or extra > leftover:
            continue
        budgets[i] = better
        leftover -= extra
        heapq.heappush(heap, (-int(envelopes[i][better - 1]), i))
