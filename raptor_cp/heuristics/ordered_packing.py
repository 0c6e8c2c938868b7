"""Ordered packing curves: a stage's tasks, in order, cut into consecutive runs per core.

An *ordered* assignment of a `PackingProblem` on ``k`` cores is a linear
partition of the task sequence ``0..T-1`` into at most ``k`` consecutive runs,
run ``r`` on core ``r``. Its cost is the maximum per-core demand of
`packing_demand`: a run's serial compute plus the transfer time of every edge
with exactly one end inside the run. Every run's distinct resident weights must
fit the core capacity; when no ordered assignment on ``k`` cores does, the
answer is *unavailable* (None). The seeds ("Throughput scheduling uses one
bounded joint optimizer") build such curves for every stage a partition proposes;
one query is the ``Kpack`` of their complexity table.

Algorithm: bottleneck binary search with a greedy feasibility probe, the classic
method for the chains-on-chains (linear bottleneck partition) problem (Pinar and
Aykanat 2004 survey it; Frederickson 1991 gives exact parametric variants).

* Preprocessing, ``O(T + R + E log E)``: prefix sums of the loads, and for each
  start ``i`` the capacity *reach* ``reach[i]``, the largest ``j`` such that tasks
  ``[i, j)`` fit one core, by a two-pointer sweep over weight multiplicities
  (``R`` weight references).
* Probe ``B``: from ``i = 0``, a run ends at the furthest ``j <= reach[i]`` whose
  demand is at most ``B``; the next run starts there.

  - Compute only (no edges): the run demand is its load, monotone in ``j``, so the
    end is one bisection of the prefix sums, ``O(log T)`` per run. Both constraints
    (load <= B, weights fit) hold for every sub-run of a feasible run, hence the
    greedy uses the fewest runs for ``B`` and the binary search returns the
    **exact** minimum cost over ordered assignments.
  - With edges the demand of ``[i, j)`` is ``load + inc(i, j) - 2 internal(i, j)``
    (incident transfer time minus twice the edges inside the run), not monotone in
    ``j``: a run can become cheaper when it takes in a task's partner. For each
    visited start the demands of all ends within reach (and within the load limit
    of the largest bound probed so far) are computed once, vectorised from the
    edges sorted by their later end, and kept as a suffix minimum, so the furthest
    end with demand <= ``B`` is one ``searchsorted``. The greedy ignores what its
    end costs the next run, and the number of runs is not monotone in ``B``, so
    this is a documented **heuristic** (exactness is claimed only for one core and
    when the cost meets the load lower bound).

* Search for ``k`` cores: between the load bound ``max(max load, ceil(total / k))``
  and the best probe found with at most ``k`` runs. Probes are shared along a
  curve: a probe at ``B`` that needs ``r`` runs bounds every ``k >= r`` from above
  by its cost and every ``k < r`` from below by ``B + 1`` (a proof without edges,
  a search hint with them). A success moves the upper end to the probe's actual
  cost, not to ``B``.

Availability is exact in both cases: the greedy with an unlimited bound uses the
fewest runs the capacity allows (``min_runs``), so ``k < min_runs`` is
unavailable and every ``k >= min_runs`` has a finite, constructive cost. The
curve is non-increasing: a packing stays feasible with idle extra cores.

Complexity: a probe costs ``O(r log T)`` for ``r`` runs (plus, with edges,
``O(w + E_w)`` the first time a start is visited or its window grows, for ``w``
ends within reach and ``E_w`` edges among them; kept windows take ``O(w)``
memory each, ``O(T^2)`` at worst over all starts). One query does ``O(log L)``
probes for the width ``L`` of its initial bracket; recording a probe costs
``O(K)``. A curve of ``K`` cores stops searching as soon as the cost meets the
largest task load, which no core count beats. Measured on resnet18 lowered for
arch-a with 4 lanes (1170 tasks, 3467 edges), the curve for 1..168 cores takes
about 0.08 s without and 0.3 s with edges.

References
----------
A. Pinar and C. Aykanat, "Fast optimal load balancing algorithms for 1D
partitioning", J. Parallel and Distributed Computing 64(8), 2004 (probes and
bottleneck search).
G. N. Frederickson, "Optimal algorithms for tree partitioning", SODA 1991.
"""

from __future__ import annotations

import bisect
import dataclasses
import time
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from raptor_cp.errors import InvalidInstanceError
from raptor_cp.problems import PackingProblem, PackingSolution, Status

_MORE = -1
"""Run count of a failed probe: more runs than allowed, or a task fits in no run."""


def demand_lower_bound(problem: PackingProblem, cores: int | None = None) -> int:
    """``max(largest task load, ceil(total load / cores))``: no assignment does better.

    Every task's load is charged to its core and the loads sum over all cores;
    transfer terms only add. ``cores`` defaults to ``problem.cores``.
    """
    cores = problem.cores if cores is None else cores
    total = sum(problem.loads)
    return max(max(problem.loads, default=0), -(-total // cores))


@dataclass(frozen=True)
class OrderedPacking:
    """An ordered assignment on ``cores`` cores: run ``r`` (tasks ``starts[r]`` up to
    the next start) on core ``r``.

    ``cost`` is its maximum per-core demand, exactly as `packing_demand` computes it
    for a problem with ``cores`` cores. ``exact`` says that no ordered assignment on
    ``cores`` cores costs less (always true without edges).
    """

    cores: int
    cost: int
    starts: tuple[int, ...]
    num_tasks: int
    exact: bool

    @property
    def runs(self) -> int:
        return len(self.starts)

    def assignment(self) -> tuple[int, ...]:
        """Core of every task."""
        bounds = (*self.starts, self.num_tasks)
        return tuple(r for r in range(self.runs) for _ in range(bounds[r], bounds[r + 1]))

    def solution(self, problem: PackingProblem) -> PackingSolution:
        """This assignment as a `PackingSolution` of ``problem`` (which needs >= ``runs`` cores).

        OPTIMAL only when the cost meets `demand_lower_bound`, which holds for every
        assignment, ordered or not.
        """
        bound = demand_lower_bound(problem)
        status = Status.OPTIMAL if self.cost == bound else Status.FEASIBLE
        return PackingSolution(
            self.assignment(),
            status=status,
            solver="ordered",
            objective=self.cost,
            bound=bound,
            details={"runs": self.runs},
        )


def ordered_packing(problem: PackingProblem, cores: int | None = None) -> OrderedPacking | None:
    """The cheapest ordered assignment found on ``cores`` cores (default ``problem.cores``).

    None when the capacity admits no ordered assignment on that many cores.

    Examples
    --------
    Loads 4, 1, 1, 4 on two cores: the cut in the middle costs 5.

    >>> p = PackingProblem((4, 1, 1, 4), ((),) * 4, (), cores=2, capacity=0)
    >>> ordered_packing(p).starts, ordered_packing(p).cost
    ((0, 2), 5)
    """
    cores = problem.cores if cores is None else cores
    _check_cores(problem, cores)
    search = _OrderedSearch(problem, cores)
    if search.min_runs > cores:
        return None
    return search.best(cores, search.first)


@dataclass(frozen=True)
class OrderedPacker:
    """`ordered_packing` as a registered solver of `PackingProblem` (no settings).

    NOT_FOUND when the capacity admits no ordered assignment on ``problem.cores``
    cores: order alone cannot realise every packing, so this proves nothing.
    """

    name: ClassVar[str] = "ordered"

    def solve(self, problem: PackingProblem) -> PackingSolution:
        began = time.perf_counter()
        found = ordered_packing(problem)
        if found is None:
            return PackingSolution(
                None,
                status=Status.NOT_FOUND,
                solver=self.name,
                bound=demand_lower_bound(problem),
                wall_s=time.perf_counter() - began,
            )
        return dataclasses.replace(found.solution(problem), wall_s=time.perf_counter() - began)


def ordered_packing_curve(problem: PackingProblem, max_cores: int) -> list[OrderedPacking | None]:
    """Ordered packings for ``k = 1..max_cores`` cores (entry ``k - 1``); None = unavailable.

    ``problem.cores`` is not used: each entry answers its own core count. Costs
    are non-increasing in ``k``.
    """
    _check_cores(problem, max_cores)
    search = _OrderedSearch(problem, max_cores)
    curve: list[OrderedPacking | None] = []
    best: OrderedPacking | None = None
    floor = max(problem.loads, default=0)
    for k in range(1, max_cores + 1):
        if k < search.min_runs:
            curve.append(None)
            continue
        if best is not None and best.cost <= floor:
            best = dataclasses.replace(best, cores=k, exact=True)
        else:
            best = search.best(k, search.first if best is None else best)
        curve.append(best)
    return curve


def _check_cores(problem: PackingProblem, cores: int) -> None:
    if cores < 1:
        raise InvalidInstanceError(f"{problem.name}: ordered packing needs >= 1 core, got {cores}")


@dataclass(frozen=True)
class _Probe:
    runs: int
    cost: int
    starts: tuple[int, ...]


class _OrderedSearch:
    """Preprocessed sequence and probe bookkeeping of one problem (see the module docstring)."""

    def __init__(self, problem: PackingProblem, max_runs: int) -> None:
        self.problem = problem
        self.n = problem.num_tasks
        self.max_runs = max_runs
        self.prefix = [0, *np.cumsum(problem.loads, dtype=np.int64).tolist()]
        self.reach = _capacity_reach(problem)
        edges = [(min(a, b), max(a, b), ns) for a, b, ns in problem.edges if a != b and ns > 0]
        self.has_edges = bool(edges)
        self.windows: dict[int, tuple[int, np.ndarray, np.ndarray]] = {}
        if self.has_edges:
            edges.sort(key=lambda e: (e[1], e[0]))
            first, last, ns = np.array(edges, dtype=np.int64).T
            self.edge_first, self.edge_ns = first, ns
            self.edge_ptr = np.searchsorted(last, np.arange(self.n + 1), side="left")
            incident = np.zeros(self.n, dtype=np.int64)
            np.add.at(incident, first, ns)
            np.add.at(incident, last, ns)
            self.incident_prefix = np.concatenate(([0], np.cumsum(incident)))
            self.load_prefix = np.array(self.prefix, dtype=np.int64)
        self.raise_floor = [0] * (max_runs + 2)
        """``raise_floor[k]``: a probe above it needed more than ``k`` runs."""
        self.by_runs: list[_Probe | None] = [None] * (max_runs + 1)
        self.first = self._capacity_only()
        self.min_runs = self.first.runs if self.first.runs != _MORE else max_runs + 1

    def best(self, k: int, upper: _Probe | OrderedPacking) -> OrderedPacking:
        """Binary search for ``k`` cores from a feasible ``upper`` (at most ``k`` runs)."""
        hi = _Probe(len(upper.starts), upper.cost, upper.starts)
        recorded = self.by_runs[k]
        if recorded is not None and recorded.cost < hi.cost:
            hi = recorded
        bound = demand_lower_bound(self.problem, k)
        lo = max(bound, self.raise_floor[k])
        while lo < hi.cost:
            mid = (lo + hi.cost) // 2
            probe = self._probe(mid)
            if probe.runs != _MORE and probe.runs <= k:
                hi = probe
            else:
                lo = mid + 1
        exact = not self.has_edges or k == 1 or hi.cost == bound
        return OrderedPacking(k, hi.cost, hi.starts, self.n, exact)

    def _record(self, bound: int, probe: _Probe) -> _Probe:
        """Share a probe along the curve (see the module docstring)."""
        limit = probe.runs if probe.runs != _MORE else self.max_runs + 1
        for k in range(1, limit):
            self.raise_floor[k] = max(self.raise_floor[k], bound + 1)
        if probe.runs != _MORE:
            for r in range(probe.runs, self.max_runs + 1):
                held = self.by_runs[r]
                if held is None or probe.cost < held.cost:
                    self.by_runs[r] = probe
        return probe

    def _capacity_only(self) -> _Probe:
        """Runs as long as capacity allows: the fewest runs possible."""
        starts: list[int] = []
        cost, i = 0, 0
        while i < self.n:
            if len(starts) == self.max_runs:
                return _Probe(_MORE, 0, ())
            starts.append(i)
            end = self.reach[i]
            cost = max(cost, self._demand(i, end))
            i = end
        return self._record(-1, _Probe(len(starts), cost, tuple(starts)))

    def _probe(self, bound: int) -> _Probe:
        starts: list[int] = []
        cost, i = 0, 0
        while i < self.n:
            if len(starts) == self.max_runs:
                return self._record(bound, _Probe(_MORE, 0, ()))
            end, demand = self._run_end(i, bound)
            if end == i:
                return self._record(bound, _Probe(_MORE, 0, ()))
            starts.append(i)
            cost = max(cost, demand)
            i = end
        return self._record(bound, _Probe(len(starts), cost, tuple(starts)))

    def _run_end(self, i: int, bound: int) -> tuple[int, int]:
        """Furthest end ``j`` of a run from ``i`` with demand <= ``bound`` (``i`` if none)."""
        stop = min(
            self.reach[i], bisect.bisect_right(self.prefix, self.prefix[i] + bound, lo=i) - 1
        )
        if not self.has_edges:
            return stop, self.prefix[stop] - self.prefix[i]
        window = self.windows.get(i)
        if window is None or window[0] < stop:
            window = self._window(i, stop)
        _, demand, suffix_min = window
        count = int(np.searchsorted(suffix_min, bound, side="right"))
        if count == 0:
            return i, 0
        return i + count, int(demand[count - 1])

    def _window(self, i: int, stop: int) -> tuple[int, np.ndarray, np.ndarray]:
        """Demands of the runs ``[i, j)`` for ``i < j <= stop``, with their suffix minimum."""
        ends = np.arange(i + 1, stop + 1)
        base, top = self.edge_ptr[i], self.edge_ptr[stop]
        inside = np.where(self.edge_first[base:top] >= i, self.edge_ns[base:top], 0)
        internal = np.concatenate(([0], np.cumsum(inside)))
        demand = (
            self.load_prefix[ends]
            - self.load_prefix[i]
            + self.incident_prefix[ends]
            - self.incident_prefix[i]
            - 2 * internal[self.edge_ptr[ends] - base]
        )
        suffix_min = np.minimum.accumulate(demand[::-1])[::-1]
        self.windows[i] = (stop, demand, suffix_min)
        return self.windows[i]

    def _demand(self, i: int, j: int) -> int:
        """Demand of the run ``[i, j)``."""
        load = self.prefix[j] - self.prefix[i]
        if not self.has_edges:
            return load
        lo, hi = int(self.edge_ptr[i]), int(self.edge_ptr[j])
        internal = int(self.edge_ns[lo:hi][self.edge_first[lo:hi] >= i].sum())
        incident = int(self.incident_prefix[j] - self.incident_prefix[i])
        return load + incident - 2 * internal


def _capacity_reach(problem: PackingProblem) -> list[int]:
    """``reach[i]``: largest ``j`` with the distinct weights of tasks ``[i, j)`` within capacity.

    Two pointers over weight multiplicities, ``O(T + R)``. Every task fits alone
    (`PackingProblem` rejects oversized tasks), so ``reach[i] > i``.
    """
    n = problem.num_tasks
    weights = [sorted(set(w)) for w in problem.task_weights]
    size = problem.weight_size
    count = [0] * len(size)
    used, j = 0, 0
    reach = [0] * n
    for i in range(n):
        while j < n:
            extra = sum(size[w] for w in weights[j] if count[w] == 0)
            if used + extra > problem.capacity:
                break
            for w in weights[j]:
                count[w] += 1
            used += extra
            j += 1
        reach[i] = j
        for w in weights[i]:
            count[w] -= 1
            if count[w] == 0:
                used -= size[w]
    return reach
