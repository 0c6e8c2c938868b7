"""Ordered packing of one stage: its tasks, in order, cut into consecutive runs, one per core.

An *ordered* assignment of a `PackingProblem` on ``k`` cores is a linear
partition of the task sequence ``0..T-1`` into at most ``k`` consecutive runs,
run ``r`` on core ``r``. Its cost is the maximum per-core demand of
`packing_demand`: a run's serial compute plus the transfer time of every edge
with exactly one end inside the run. Every run's distinct resident weights must
fit the core capacity; when no ordered assignment on ``k`` cores does, the
answer is *unavailable* (None). The seeds ("Throughput scheduling uses one
bounded joint optimizer") build such curves for every stage a partition proposes;
one query is the ``Kpack`` of their complexity table.

This module answers one query on one `PackingProblem` with its exact demand,
edges included (the reuse-first stage packer's ``ordered`` candidate and the
``ordered`` solver). The partition's curves price thousands of ranges of one
task sequence at once with the batched form of the same greedy probe,
`raptor_cp.heuristics.range_packing`, on loads that fold each task's incident
transfers in (monotone, so batching is exact there); both share `capacity_reach`.
On edge-free problems the two return the same cost and runs (tested).

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
    ``j``: a run can become cheaper when it takes in a task's partner. At each run
    start the demands of all ends within reach and within the load limit ``B``
    are computed, vectorised from the edges sorted by their later end, with
    their suffix minimum, so the furthest end with demand <= ``B`` is one
    ``searchsorted``. Windows are not kept between runs or probes: keeping them
    cost ``O(T²)`` memory when loads are small against the bound. The greedy ignores what its
    end costs the next run, and the number of runs is not monotone in ``B``, so
    this is a documented **heuristic** (exactness is claimed only for one core and
    when the cost meets the load lower bound).

* Search for ``k`` cores: between the load bound ``max(max load, ceil(total / k))``
  and the capacity-only runs (the greedy with an unlimited bound). A success
  moves the upper end to the probe's actual cost, not to ``B``.

Availability is exact in both cases: the capacity-only greedy uses the fewest
runs the capacity allows, so fewer cores are unavailable and every larger count
has a finite, constructive cost.

Complexity: a probe costs ``O(r log T)`` for ``r`` runs (plus, with edges,
``O(w + E_w)`` per run for its ``w`` ends within reach and the load limit and
the ``E_w`` edges among them: a run's window holds at most the loads of ``B``,
so the windows of one probe overlap little and total ``O(T + E)`` when the
runs fill their bound); storage ``O(T + E)``. One query does ``O(log L)``
probes for the width ``L`` of its initial bracket.

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
from raptor_cp.heuristics.range_packing import capacity_reach
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
    if search.first.runs == _MORE:
        return None
    return search.best()


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


def _check_cores(problem: PackingProblem, cores: int) -> None:
    if cores < 1:
        raise InvalidInstanceError(f"{problem.name}: ordered packing needs >= 1 core, got {cores}")


@dataclass(frozen=True)
class _Probe:
    runs: int
    cost: int
    starts: tuple[int, ...]


class _OrderedSearch:
    """Preprocessed sequence and probes of one problem on ``cores`` cores (module docstring)."""

    def __init__(self, problem: PackingProblem, cores: int) -> None:
        self.problem = problem
        self.n = problem.num_tasks
        self.cores = cores
        self.prefix = [0, *np.cumsum(problem.loads, dtype=np.int64).tolist()]
        self.reach = capacity_reach(
            problem.task_weights, problem.weight_size, problem.capacity
        ).tolist()
        edges = [(min(a, b), max(a, b), ns) for a, b, ns in problem.edges if a != b and ns > 0]
        self.has_edges = bool(edges)
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
        self.first = self._capacity_only()

    def best(self) -> OrderedPacking:
        """Binary search between the load bound and the capacity-only runs (feasible)."""
        hi = self.first
        bound = demand_lower_bound(self.problem, self.cores)
        lo = bound
        while lo < hi.cost:
            mid = (lo + hi.cost) // 2
            probe = self._probe(mid)
            if probe.runs != _MORE:
                hi = probe
            else:
                lo = mid + 1
        exact = not self.has_edges or self.cores == 1 or hi.cost == bound
        return OrderedPacking(self.cores, hi.cost, hi.starts, self.n, exact)

    def _capacity_only(self) -> _Probe:
        """Runs as long as capacity allows: the fewest runs possible."""
        starts: list[int] = []
        cost, i = 0, 0
        while i < self.n:
            if len(starts) == self.cores:
                return _Probe(_MORE, 0, ())
            starts.append(i)
            end = self.reach[i]
            cost = max(cost, self._demand(i, end))
            i = end
        return _Probe(len(starts), cost, tuple(starts))

    def _probe(self, bound: int) -> _Probe:
        starts: list[int] = []
        cost, i = 0, 0
        while i < self.n:
            if len(starts) == self.cores:
                return _Probe(_MORE, 0, ())
            end, demand = self._run_end(i, bound)
            if end == i:
                return _Probe(_MORE, 0, ())
            starts.append(i)
            cost = max(cost, demand)
            i = end
        return _Probe(len(starts), cost, tuple(starts))

    def _run_end(self, i: int, bound: int) -> tuple[int, int]:
        """Furthest end ``j`` of a run from ``i`` with demand <= ``bound`` (``i`` if none)."""
        stop = min(
            self.reach[i], bisect.bisect_right(self.prefix, self.prefix[i] + bound, lo=i) - 1
        )
        if not self.has_edges:
            return stop, self.prefix[stop] - self.prefix[i]
        demand, suffix_min = self._window(i, stop)
        count = int(np.searchsorted(suffix_min, bound, side="right"))
        if count == 0:
            return i, 0
        return i + count, int(demand[count - 1])

    def _window(self, i: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
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
        return demand, np.minimum.accumulate(demand[::-1])[::-1]

    def _demand(self, i: int, j: int) -> int:
        """Demand of the run ``[i, j)``."""
        load = self.prefix[j] - self.prefix[i]
        if not self.has_edges:
            return load
        lo, hi = int(self.edge_ptr[i]), int(self.edge_ptr[j])
        internal = int(self.edge_ns[lo:hi][self.edge_first[lo:hi] >= i].sum())
        incident = int(self.incident_prefix[j] - self.incident_prefix[i])
        return load + incident - 2 * internal
