"""The refinement's ordered neighbourhood: legal joint partition/allocation moves of a schedule.

scheduling.md, "Throughput scheduling uses one bounded joint optimizer": the
neighbourhood "moves operation groups across adjacent stage boundaries,
inserts a boundary, or removes consecutive boundaries"; groups keep the
initialization's topological order; "coalescing compacts later stages"; "each
changed block redistributes its core pool" by minimax budgets while unchanged
stages keep theirs; "core coordinates also transfer powers of two between
stages, including one core"; depth and the physical cores stay fixed; no stage
is empty. `neighbours` streams, for one parent, in this order:

1. **shift**: the boundary between stages ``i`` and ``i + 1`` moves by ``±1,
   ±2, ±4, ...`` groups while both stages keep a group (moving ``d`` groups
   across; the geometric steps cross flat stretches of the cost curves in
   ``O(log G)`` moves per boundary);
2. **split**: a boundary is inserted into stage ``i`` (while fewer than
   ``depth`` stages): at every group position when the stage has at most
   `SPLIT_POSITIONS` + 1 groups, otherwise at the `SPLIT_POSITIONS` positions
   where the stage's cumulative compute crosses ``j / (SPLIT_POSITIONS + 1)``;
3. **merge**: stages ``i..j`` (``j > i``) become one, later stages move down;
4. **cores**: ``2^e`` cores (``e = 0, 1, ...``) move from stage ``i`` to stage
   ``j``, ranges unchanged, stage ``i`` keeping at least one core.

Moves 1-3 give their changed block the block's pooled cores through the
caller's ``allocate`` (minimax budgets, then spare cores), which may refuse
(None: no budget vector gives every changed stage an ordered packing). A
parent with ``S`` stages proposes ``O(S log G + S K + S² + S² log P)`` moves
(``K`` = `SPLIT_POSITIONS`), independent of the number of tasks; the seeds
count ``O(G + S² log P)`` with a split at every group, which a chain of 10^5
operations could not afford.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from raptor_cp.problems import Stage

SPLIT_POSITIONS = 32
"""Split positions tried per stage when it has more groups (work quantiles)."""

Allocate = Callable[[Sequence[tuple[int, int]], int], "tuple[int, ...] | None"]
"""``allocate(ranges, pool)``: budgets for a changed block of stage ranges sharing ``pool``
cores, or None when none gives every stage an available cost."""


@dataclass(frozen=True)
class Proposal:
    """One neighbour of a parent schedule."""

    stages: tuple[Stage, ...]
    move: str
    """What changed, in words (``shift boundary 1 by -2 groups``...)."""
    changed: tuple[int, ...]
    """The parent's stage indices the move changes."""

    @property
    def canonical(self) -> tuple[tuple[int, int, int], ...]:
        """The stage/budget vector: equal vectors are the same proposal."""
        return tuple((s.first, s.stop, s.cores) for s in self.stages)


def split_positions(first: int, stop: int, work_prefix: np.ndarray) -> list[int]:
    """Group positions strictly inside ``[first, stop)`` where a split is tried (see module)."""
    inner = stop - first - 1
    if inner <= SPLIT_POSITIONS:
        return list(range(first + 1, stop))
    base = int(work_prefix[first])
    total = int(work_prefix[stop]) - base
    marks = [base + total * j // (SPLIT_POSITIONS + 1) for j in range(1, SPLIT_POSITIONS + 1)]
    found = np.searchsorted(work_prefix, marks, side="left")
    return sorted({min(max(int(c), first + 1), stop - 1) for c in found.tolist()})


def neighbours(
    parent: Sequence[Stage], depth: int, allocate: Allocate, work_prefix: np.ndarray
) -> Iterator[Proposal]:
    """Every legal move of ``parent`` in the order of the module docstring.

    ``work_prefix[g]`` is the compute of groups ``[0, g)`` (split positions).
    Moves whose block ``allocate`` refuses are left out.
    """
    stages = tuple(parent)
    yield from _shifts(stages, allocate)
    if len(stages) < depth:
        yield from _splits(stages, allocate, work_prefix)
    yield from _merges(stages, allocate)
    yield from _transfers(stages)


def _replace(
    stages: tuple[Stage, ...],
    i: int,
    j: int,
    ranges: Sequence[tuple[int, int]],
    allocate: Allocate,
) -> tuple[Stage, ...] | None:
    """``stages`` with stages ``i..j`` replaced by ``ranges`` on their pooled cores."""
    pool = sum(s.cores for s in stages[i : j + 1])
    if pool < len(ranges):
        return None
    budgets = allocate(ranges, pool)
    if budgets is None:
        return None
    block = tuple(Stage(a, b, k) for (a, b), k in zip(ranges, budgets, strict=True))
    return stages[:i] + block + stages[j + 1 :]


def _shifts(stages: tuple[Stage, ...], allocate: Allocate) -> Iterator[Proposal]:
    for i in range(len(stages) - 1):
        left, right = stages[i], stages[i + 1]
        for sign in (-1, 1):
            step = 1
            while True:
                cut = left.stop + sign * step
                if not left.first < cut < right.stop:
                    break
                ranges = [(left.first, cut), (cut, right.stop)]
                found = _replace(stages, i, i + 1, ranges, allocate)
                if found is not None:
                    yield Proposal(
                        found, f"shift boundary {i} by {sign * step:+d} groups", (i, i + 1)
                    )
                step *= 2


def _splits(
    stages: tuple[Stage, ...], allocate: Allocate, work_prefix: np.ndarray
) -> Iterator[Proposal]:
    for i, stage in enumerate(stages):
        if stage.stop - stage.first < 2 or stage.cores < 2:
            continue
        for cut in split_positions(stage.first, stage.stop, work_prefix):
            ranges = [(stage.first, cut), (cut, stage.stop)]
            found = _replace(stages, i, i, ranges, allocate)
            if found is not None:
                yield Proposal(found, f"split stage {i} at group {cut}", (i,))


def _merges(stages: tuple[Stage, ...], allocate: Allocate) -> Iterator[Proposal]:
    for i in range(len(stages)):
        for j in range(i + 1, len(stages)):
            ranges = [(stages[i].first, stages[j].stop)]
            found = _replace(stages, i, j, ranges, allocate)
            if found is not None:
                yield Proposal(found, f"merge stages {i}..{j}", tuple(range(i, j + 1)))


def _transfers(stages: tuple[Stage, ...]) -> Iterator[Proposal]:
    for i, giver in enumerate(stages):
        for j, taker in enumerate(stages):
            if i == j:
                continue
            amount = 1
            while amount < giver.cores:
                moved = list(stages)
                moved[i] = Stage(giver.first, giver.stop, giver.cores - amount)
                moved[j] = Stage(taker.first, taker.stop, taker.cores + amount)
                yield Proposal(
                    tuple(moved), f"move {amount} core(s) from stage {i} to stage {j}", (i, j)
                )
                amount *= 2
