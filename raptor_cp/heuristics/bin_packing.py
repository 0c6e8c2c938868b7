"""One-dimensional bin packing: fewest bins of one capacity holding every item.

`pack_bins` is the heuristic behind `raptor_cp.heuristics.stage_packing.fewest_cores`
(whenever the weight sets of a stage are disjoint, which makes the fewest-cores
question plain bin packing) and ``raptor-cp pack``. It runs cheap constructions
first and stops as soon as one meets a lower bound (`raptor_cp.heuristics.packing_bounds`):

1. **Best fit decreasing** (Johnson 1973), ``O(n log n)``; stop if it meets L2.
2. **Minimum bin slack**, MBS' (Gupta and Ho 1999; Fleszar and Hindi 2002): bins
   are filled one at a time, each with the largest remaining item plus the subset
   of the remaining items that leaves the least slack. The subset is an exact
   subset-sum over the ``MBS_POOL`` largest items that fit, on a bitset (one
   big-integer shift-or per item), stopping at the first exact fill; among subsets
   of equal fill it takes the largest items, as MBS's lexicographic search does.
   ``O(n MBS_POOL)`` big-integer operations plus ``O(n B)`` list work for ``B``
   bins. Then the DFF bound is computed; stop if the better of the two packings
   meets it.
3. **Large-neighbourhood search** from that packing: repeatedly take the least
   filled bin ``E`` and ``k`` other bins (``k`` uniform in ``1..LNS_GROUP``; each
   drawn, with probability 1/2, from the bins that are not full), pool their
   items in a random order (by size, half of the time) and refill the ``k`` bins
   one after the other with the fullest subset of the pool (the same subset-sum);
   ``E`` gets the rest. The move is kept when that rest fits and the sum of the
   squared loads of the ``k + 1`` bins does not decrease (the objective of Fleszar
   and Hindi's VNS): slack drains into ``E`` until it empties (one bin less), and
   moves of equal value let the search drift across plateaus. Like the bin-pair
   exchanges of that VNS and of weight annealing (Loh, Golden and Wasil 2008), but
   with exact subset-sum refills of up to nine bins instead of one- or two-item
   swaps. (Keeping a move only when the sorted fills of the ``k`` bins grow
   lexicographically solved 13 fewer of the 440 u, bin1 C3 and bin2 W1 instances.)

The search stops at the bound or after ``effort * n`` work units (one per item
a refill scans, one per move); ``effort=0`` stops after MBS'. Randomness comes
from ``random.Random(seed)``: identical inputs give identical packings.

Measured on the Falkenauer (u, t) and Scholl (bin1, bin2) sets (docs/benchmarks.md,
"Stage packing"): phase 3 is where most instances that MBS' misses are solved.
A budgeted bin-completion search (Korf 2003) before it, and inside its moves,
was tried and dropped: it solved no instance the search did not, for the same
budget. The triplet instances (Falkenauer t: every optimal bin holds exactly
three items that fill it exactly) stay one bin above the optimum: the moves
reach full bins of three items but not the one perfect matching.

References
----------
D. S. Johnson, "Near-optimal bin packing algorithms", PhD thesis, MIT, 1973.
J. N. D. Gupta and J. C. Ho, "A new heuristic algorithm for the one-dimensional
bin-packing problem", Production Planning & Control 10(6), 1999 (MBS).
K. Fleszar and K. S. Hindi, "New heuristics for one-dimensional bin-packing",
Computers & Operations Research 29(7), 2002 (MBS', perturbation MBS' and VNS).
R. E. Korf, "An improved algorithm for optimal bin packing", IJCAI 2003 (bin completion).
K.-H. Loh, B. Golden and E. Wasil, "Solving the one-dimensional bin packing
problem with a weight annealing heuristic", Computers & Operations Research 35(7), 2008.
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Sequence
from dataclasses import dataclass

from raptor_cp.errors import InvalidInstanceError
from raptor_cp.heuristics.packing_bounds import dff_bound, martello_toth_l2

DEFAULT_EFFORT = 128
"""Work units per item the neighbourhood search may spend (on the 1,335 benchmark
instances: 64 solved 1,195 to 1,211 depending on the seed, 128 solved 1,243)."""
MBS_POOL = 64
"""Largest remaining items MBS' considers for one bin's subset-sum."""
LNS_GROUP = 8
"""Most bins refilled together with the least filled one in one move."""
OPEN_TRIES = 8
"""Random draws a move spends looking for a bin that is not full."""


@dataclass(frozen=True)
class BinPacking:
    """A packing: ``bins[i]`` is the bin of item ``i`` (bins numbered by first item)."""

    bins: tuple[int, ...]
    count: int
    lower_bound: int
    method: str
    """The phase that produced it (best-fit-decreasing, mbs, lns)."""
    work: int
    """Work units spent by the neighbourhood search."""

    @property
    def optimal(self) -> bool:
        return self.count == self.lower_bound


def check_sizes(sizes: Sequence[int], capacity: int) -> None:
    """Raise `InvalidInstanceError` unless every size is in ``[0, capacity]``."""
    for i, size in enumerate(sizes):
        if not 0 <= size <= capacity:
            raise InvalidInstanceError(
                f"item {i} has size {size}; sizes must lie in [0, capacity {capacity}]"
            )


def first_fit_decreasing(sizes: Sequence[int], capacity: int) -> tuple[int, ...]:
    """Each item, largest first (ties: index), into the first bin it fits. ``O(n B)``."""
    check_sizes(sizes, capacity)
    loads: list[int] = []
    bins = [0] * len(sizes)
    for i in sorted(range(len(sizes)), key=lambda i: (-sizes[i], i)):
        for b, load in enumerate(loads):
            if load + sizes[i] <= capacity:
                loads[b] += sizes[i]
                bins[i] = b
                break
        else:
            bins[i] = len(loads)
            loads.append(sizes[i])
    return _renumber(bins)


def best_fit_decreasing(sizes: Sequence[int], capacity: int) -> tuple[int, ...]:
    """Each item, largest first (ties: index), into the fullest bin it fits (ties: oldest).

    Open bins are kept sorted by free space, so a placement is one bisection:
    ``O(n log n)`` comparisons plus the list updates.
    """
    check_sizes(sizes, capacity)
    free: list[tuple[int, int]] = []  # (free space, bin), ascending
    bins = [0] * len(sizes)
    opened = 0
    for i in sorted(range(len(sizes)), key=lambda i: (-sizes[i], i)):
        k = bisect.bisect_left(free, (sizes[i], -1))
        if k == len(free):
            b, left = opened, capacity - sizes[i]
            opened += 1
        else:
            room, b = free.pop(k)
            left = room - sizes[i]
        bins[i] = b
        bisect.insort(free, (left, b))
    return _renumber(bins)


def minimum_bin_slack(sizes: Sequence[int], capacity: int) -> tuple[int, ...]:
    """MBS' (module docstring, phase 2): bins filled one at a time with the least slack."""
    check_sizes(sizes, capacity)
    remaining = sorted(range(len(sizes)), key=lambda i: (-sizes[i], i))
    bins = [0] * len(sizes)
    b = 0
    while remaining:
        first, rest = remaining[0], remaining[1:]
        room = capacity - sizes[first]
        # rest is sorted by size descending: skip the items that do not fit.
        start = bisect.bisect_left(rest, -room, key=lambda i: -sizes[i])
        pool = rest[start : start + MBS_POOL]
        _, chosen = _fullest_subset([sizes[i] for i in pool], room)
        taken = {pool[j] for j in chosen}
        taken.add(first)
        for i in taken:
            bins[i] = b
        b += 1
        remaining = [i for i in rest if i not in taken]
    return _renumber(bins)


def pack_bins(
    sizes: Sequence[int], capacity: int, effort: int = DEFAULT_EFFORT, seed: int = 0
) -> BinPacking:
    """Fewest bins of ``capacity`` holding ``sizes`` (module docstring); checked.

    >>> pack_bins([6, 6, 6, 4, 4, 4], 10).count
    3
    """
    check_sizes(sizes, capacity)
    n = len(sizes)
    nonzero = any(sizes)
    bound = max(martello_toth_l2(sizes, capacity), 1 if n and not nonzero else 0)
    best = best_fit_decreasing(sizes, capacity)
    result = BinPacking(best, _count(best), bound, "best-fit-decreasing", 0)
    if result.optimal:
        return _checked(result, sizes, capacity)
    mbs = minimum_bin_slack(sizes, capacity)
    if _count(mbs) < result.count:
        result = BinPacking(mbs, _count(mbs), bound, "mbs", 0)
    bound = max(bound, dff_bound(sizes, capacity))
    result = BinPacking(result.bins, result.count, bound, result.method, 0)
    if result.optimal or effort <= 0:
        return _checked(result, sizes, capacity)
    search = _Neighbourhood(sizes, capacity, result.bins, bound, random.Random(seed))
    improved = search.run(effort * n)
    if _count(improved) < result.count:
        result = BinPacking(improved, _count(improved), bound, "lns", search.work)
    else:
        result = BinPacking(result.bins, result.count, bound, result.method, search.work)
    return _checked(result, sizes, capacity)


def _count(bins: Sequence[int]) -> int:
    return max(bins) + 1 if bins else 0


def _renumber(bins: Sequence[int]) -> tuple[int, ...]:
    """Bins numbered ``0, 1, ...`` in order of their first item."""
    label: dict[int, int] = {}
    return tuple(label.setdefault(b, len(label)) for b in bins)


def _checked(result: BinPacking, sizes: Sequence[int], capacity: int) -> BinPacking:
    """``result`` after checking every bin's load and the count (a failure is a bug)."""
    loads = [0] * result.count
    for i, b in enumerate(result.bins):
        loads[b] += sizes[i]
    if any(load > capacity for load in loads) or result.count < result.lower_bound:
        raise AssertionError(f"bin packing: invalid packing {result}")
    return BinPacking(
        _renumber(result.bins), result.count, result.lower_bound, result.method, result.work
    )


def _fullest_subset(pool: Sequence[int], room: int) -> tuple[int, list[int]]:
    """The largest sum ``<= room`` of a subset of ``pool`` and that subset (indices).

    A bitset subset-sum over ``pool`` in order, stopping when ``room`` is reached;
    among subsets of that sum it takes the earliest items (the reconstruction drops
    an item whenever the sum is reachable without it). ``O(len(pool))`` big-integer
    operations on ``room + 1`` bits.
    """
    if room <= 0:
        return 0, []
    mask = (1 << (room + 1)) - 1
    reach = [1]
    current = 1
    for size in pool:
        current = (current | (current << size)) & mask
        reach.append(current)
        if current >> room:
            break
    total = target = current.bit_length() - 1
    chosen = []
    for j in range(len(reach) - 2, -1, -1):
        if target and not (reach[j] >> target) & 1:
            chosen.append(j)
            target -= pool[j]
    return total, chosen


class _Neighbourhood:
    """The large-neighbourhood search of phase 3 on a packing's bins."""

    def __init__(
        self,
        sizes: Sequence[int],
        capacity: int,
        bins: Sequence[int],
        bound: int,
        rng: random.Random,
    ) -> None:
        self.sizes = sizes
        self.capacity = capacity
        self.bound = bound
        self.rng = rng
        self.work = 0
        self.items: list[list[int]] = [[] for _ in range(_count(bins))]
        for i, b in enumerate(bins):
            self.items[b].append(i)
        self.loads = [sum(sizes[i] for i in items) for items in self.items]

    def run(self, budget: int) -> tuple[int, ...]:
        """Moves until the bins meet the bound or ``budget`` work units are spent."""
        rng, capacity, sizes = self.rng, self.capacity, self.sizes
        while len(self.items) > self.bound and self.work < budget:
            loads = self.loads
            m = len(loads)
            emptiest = loads.index(min(loads))
            size = min(rng.randint(1, LNS_GROUP), m - 1)
            group: set[int] = set()
            while len(group) < size:
                b = rng.randrange(m)
                if rng.random() < 0.5:  # prefer a bin that is not full
                    for _ in range(OPEN_TRIES):
                        if loads[b] < capacity and b != emptiest and b not in group:
                            break
                        b = rng.randrange(m)
                if b != emptiest:
                    group.add(b)
            members = sorted(group)
            self.work += 1
            pool = [i for b in (emptiest, *members) for i in self.items[b]]
            rng.shuffle(pool)
            if rng.random() < 0.5:
                pool.sort(key=lambda i: -sizes[i])
            fills: list[tuple[int, list[int]]] = []
            for _ in members:
                self.work += len(pool)
                fill, chosen = _fullest_subset([sizes[i] for i in pool], capacity)
                taken = set(chosen)
                fills.append((fill, [pool[j] for j in chosen]))
                pool = [i for j, i in enumerate(pool) if j not in taken]
            rest = sum(sizes[i] for i in pool)
            before = sum(loads[b] ** 2 for b in members) + loads[emptiest] ** 2
            if rest > capacity or sum(f * f for f, _ in fills) + rest * rest < before:
                continue
            for b, (fill, chosen) in zip(members, fills, strict=True):
                self.items[b], loads[b] = chosen, fill
            self.items[emptiest], loads[emptiest] = pool, rest
            self._drop_empty()
        bins = [0] * len(sizes)
        for b, items in enumerate(self.items):
            for i in items:
                bins[i] = b
        return tuple(bins)

    def _drop_empty(self) -> None:
        keep = [b for b in range(len(self.items)) if self.items[b]]
        if len(keep) < len(self.items):
            self.items = [self.items[b] for b in keep]
            self.loads = [self.loads[b] for b in keep]
