"""Reuse-first resident-weight packing of a pipeline stage (seeds: ``IndexedResidentWeights``).

Two questions about a `PackingProblem`:

* `pack_stage`: put every task on one of exactly ``problem.cores`` cores, each
  core's distinct weights within capacity, minimising the maximum per-core demand
  (`packing_demand`: serial compute plus incident same-stage transfers).
* `fewest_cores`: the fewest cores whose capacity holds the tasks' weights (loads
  and edges ignored). Plain one-dimensional bin packing is the case where every
  task has its own weight.

`pack_stage` compares constructive candidates (seeds, "Capacity and recovery":
"Pipeline packing compares arrival/load-aware candidates and uses constructive
recovery"), improves each by bottleneck moves and keeps the best (the first in
this list on ties):

1. **Ordered**: the `ordered_packing` assignment (consecutive runs).
2. **Load-aware**: tasks by load descending (ties: task id), each on the fitting
   core with the least demand after placing it (transfers to already placed
   neighbours included), then fewest new weight slots, then lowest core id.
3. **Reuse-first**: tasks grouped by their weight set (groups by total load
   descending, then first task; inside a group load descending). A task goes to a
   fitting core adding the fewest new slots: among cores already holding all its
   weights the least loaded; otherwise best fit (least free slots left), then least
   demand; then the lowest core id.
4. **Recovery**, only when 2 and 3 both fail: the shared constructor
   `pack_resident_weights` (forward best fit, one reverse traversal, at most 16
   single-choice replays sharing 65,536 candidate checks) in the reuse-first
   order, which establishes feasibility; its placement is then rebalanced.

**Bottleneck moves** (`_Assignment.rebalance`): repeatedly take the most loaded
core (lowest id on ties) and move one of its tasks to the core where the larger
of the two new demands is smallest, provided both end below the current maximum
and the weights fit; when no move qualifies, exchange one of its tasks with a task
of another core under the same rule. The pair (maximum demand, cores at the
maximum) decreases strictly, so the descent ends; it also stops once
``REBALANCE_CHECK_BUDGET`` evaluations are spent (a move prices ``P`` cores, a swap
``T`` partners, per task of the bottleneck core). A move or swap changes only the
two cores' demands: a neighbour on a third core is charged the edge before and
after.

**Ruin and recreate** (`_Assignment.ruin_and_recreate`), on the winner only and
only while it is above the demand bound: ``RECREATE_MOVES`` (64) times, empty the
most loaded core and 1-3 random others and put their tasks back greedily (the
recreate rule of a move: random order by weight set or by load; each task on the group's
fitting core with the least demand after it, or with the fewest new slots); keep
the move when the group's (largest demand, sum of squared demands) does not grow,
else undo it (``random.Random(0)``: deterministic); stop early after
``RECREATE_PATIENCE`` (16) moves in a row that lower nothing. A kept move is followed by one
more bottleneck descent. On the 60 ResNet-18 stage problems of
``benchmarks/bench_binpacking.py shared`` it turned 3 of the 13 cases where the
descent ended above CP-SAT's answer into ties (256 moves: 5, at 3.6 times the time).

Bounds: `demand_lower_bound` (largest load, total load / cores) for the demand;
`cores_needed` (distinct-weight union / capacity, and the bin-packing bounds of
`raptor_cp.heuristics.packing_bounds`, Martello-Toth L2 and the Fekete-Schepers
DFF bound, on the distinct weight sizes: every packing contains a bin packing
of one copy of each weight) for the cores. A solution meeting its bound is
OPTIMAL. Fewer cores than `cores_needed` is a proof of infeasibility (INFEASIBLE);
a failed construction is only NOT_FOUND.

Complexity: candidate construction is ``O(T log T + T P W_t + E)`` for ``W_t``
weights per task, with an ``O(P W)`` core x weight count matrix; the moves are
bounded by their budget, each evaluation being numpy work over ``P`` cores (move)
or ``T`` tasks (swap). `fewest_cores` runs the constructor once per tried core
count, from the bound up to the first success.

References
----------
S. Martello and P. Toth, "Lower bounds and reduction procedures for the bin
packing problem", Discrete Applied Mathematics 28(1), 1990 (bound L2).
D. S. Johnson, "Near-optimal bin packing algorithms", PhD thesis, MIT, 1973
(best fit decreasing).
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from raptor_cp.heuristics.bin_packing import pack_bins
from raptor_cp.heuristics.ordered_packing import demand_lower_bound, ordered_packing
from raptor_cp.heuristics.packing_bounds import bin_bounds
from raptor_cp.heuristics.resident_packing import pack_resident_weights
from raptor_cp.problems import (
    FewestCoresProblem,
    FewestCoresSolution,
    PackingProblem,
    PackingSolution,
    Status,
)

REBALANCE_CHECK_BUDGET = 1 << 20
"""(task, core) move evaluations one rebalance may spend."""
RECREATE_MOVES = 64
"""Ruin-and-recreate moves tried on the winning candidate."""
RECREATE_PATIENCE = 16
"""Ruin and recreate stops after this many moves in a row that improve nothing."""
MOVE_BLOCK = 64
"""Tasks a bottleneck move prices together (bounds its ``tasks x P`` arrays)."""


def cores_needed(problem: PackingProblem) -> int:
    """A lower bound on the cores any packing of ``problem`` uses (see the module docstring)."""
    if not problem.loads:
        return 0
    used = sorted({w for weights in problem.task_weights for w in weights})
    if problem.capacity == 0:
        return 1
    sizes = [problem.weight_size[w] for w in used]
    return max(problem.cores_lower_bound, bin_bounds(sizes, problem.capacity).best)


def weight_groups(problem: PackingProblem) -> dict[tuple[int, ...], list[int]]:
    """Tasks by their sorted distinct weight set, in order of first task.

    Tasks of one group add no slots to a core that holds one of them.
    """
    groups: dict[tuple[int, ...], list[int]] = {}
    for t, weights in enumerate(problem.task_weights):
        groups.setdefault(tuple(sorted(set(weights))), []).append(t)
    return groups


def disjoint(sets: Iterable[tuple[int, ...]]) -> bool:
    """Whether no weight is in two of ``sets`` (each set without repeats)."""
    seen: set[int] = set()
    for weights in sets:
        if not seen.isdisjoint(weights):
            return False
        seen.update(weights)
    return True


def fewest_cores(problem: FewestCoresProblem) -> FewestCoresSolution:
    """Fewest cores (at most ``problem.cores``) holding the tasks' weights.

    Tasks with the same weight set always share a core (they add no slots), so
    one item per weight set is packed. When no weight belongs to two sets the
    question is plain bin packing of the sets' slot totals, answered by
    `raptor_cp.heuristics.bin_packing.pack_bins` (best fit decreasing, MBS' and a
    neighbourhood search, stopping at the bound). Otherwise best fit decreasing
    by the shared constructor, items by set size descending (ties: first task):
    first on ``min(cores, weight sets)`` cores, then on ``m = cores_needed,
    cores_needed + 1, ...`` cores until it succeeds with fewer cores than it used
    before; each run includes the constructor's bounded recovery.
    """
    began = time.perf_counter()
    bound = cores_needed(problem)
    if bound > problem.cores:
        return FewestCoresSolution(
            None,
            status=Status.INFEASIBLE,
            solver="fewest-cores",
            bound=bound,
            wall_s=time.perf_counter() - began,
        )
    groups = weight_groups(problem)
    sets = sorted(groups, key=lambda s: (-sum(problem.weight_size[w] for w in s), groups[s][0]))
    details: dict[str, object]
    if disjoint(sets):
        packing = pack_bins(
            [sum(problem.weight_size[w] for w in s) for s in sets], problem.capacity
        )
        bound = max(bound, packing.lower_bound)
        best = packing.bins if packing.count <= problem.cores else None
        details = {"bin_packing": packing.method, "work": packing.work, "bins": packing.count}
    else:
        best, details = _shared_fewest(problem, sets, bound)
    wall = time.perf_counter() - began
    if best is None:
        return FewestCoresSolution(
            None,
            status=Status.NOT_FOUND,
            solver="fewest-cores",
            bound=bound,
            wall_s=wall,
            details=details,
        )
    relabel = {p: i for i, p in enumerate(dict.fromkeys(best))}
    core = [0] * problem.num_tasks
    for s, p in zip(sets, best, strict=True):
        for t in groups[s]:
            core[t] = relabel[p]
    used = len(relabel)
    status = Status.OPTIMAL if used == bound else Status.FEASIBLE
    return FewestCoresSolution(
        tuple(core),
        status=status,
        solver="fewest-cores",
        objective=used,
        bound=bound,
        wall_s=wall,
        details=details,
    )


def _shared_fewest(
    problem: PackingProblem, sets: list[tuple[int, ...]], bound: int
) -> tuple[tuple[int, ...] | None, dict[str, object]]:
    """The shared constructor's fewest cores for overlapping weight sets (`fewest_cores`)."""

    def attempt(cores: int) -> tuple[int, ...] | None:
        packing = pack_resident_weights(
            range(len(sets)), sets, problem.weight_size, [problem.capacity] * cores
        )
        attempts.append((cores, packing.found, packing.constructions, packing.candidate_checks))
        return packing.cores

    attempts: list[tuple[int, bool, int, int]] = []
    best = attempt(min(problem.cores, len(sets)))
    if best is not None:
        for cores in range(bound, len(set(best))):
            found = attempt(cores)
            if found is not None:
                best = found
                break
    return best, {"attempts": attempts}


def pack_stage(problem: PackingProblem) -> PackingSolution:
    """Minimise the maximum per-core demand on ``problem.cores`` cores (module docstring)."""
    began = time.perf_counter()
    bound = demand_lower_bound(problem)
    needed = cores_needed(problem)
    if needed > problem.cores:
        details: dict[str, object] = {"cores_needed": needed}
        wall = time.perf_counter() - began
        return PackingSolution(
            None,
            status=Status.INFEASIBLE,
            solver="stage",
            objective=None,
            bound=None,
            wall_s=wall,
            details=details,
        )
    candidates: dict[str, _Assignment] = {}
    ordered = ordered_packing(problem)
    if ordered is not None:
        candidates["ordered"] = _Assignment.from_cores(problem, ordered.assignment())
    by_load = sorted(range(problem.num_tasks), key=lambda t: (-problem.loads[t], t))
    load_aware = _Assignment(problem).construct(by_load, reuse_first=False)
    if load_aware is not None:
        candidates["load-aware"] = load_aware
    reuse_order = _reuse_order(problem)
    reuse = _Assignment(problem).construct(reuse_order, reuse_first=True)
    if reuse is not None:
        candidates["reuse-first"] = reuse
    details = {}
    if load_aware is None and reuse is None:
        packing = pack_resident_weights(
            reuse_order, problem.task_weights, problem.weight_size,
            [problem.capacity] * problem.cores,
        )  # fmt: skip
        details["recovery_constructions"] = packing.constructions
        details["recovery_checks"] = packing.candidate_checks
        if packing.cores is not None:
            core = [0] * problem.num_tasks
            for t, p in zip(reuse_order, packing.cores, strict=True):
                core[t] = p
            candidates["recovery"] = _Assignment.from_cores(problem, tuple(core))
    if not candidates:
        wall = time.perf_counter() - began
        return PackingSolution(
            None,
            status=Status.NOT_FOUND,
            solver="stage",
            objective=None,
            bound=bound,
            wall_s=wall,
            details=details,
        )
    constructed = {name: int(a.demand.max(initial=0)) for name, a in candidates.items()}
    moves = {name: a.rebalance(REBALANCE_CHECK_BUDGET) for name, a in candidates.items()}
    final = {name: int(a.demand.max(initial=0)) for name, a in candidates.items()}
    winner = min(final, key=final.__getitem__)  # first in candidate order on ties
    best = candidates[winner]
    if final[winner] > bound:
        kept = best.ruin_and_recreate(random.Random(0), RECREATE_MOVES, bound)
        details["recreated"] = kept
        if kept:
            best.rebalance(REBALANCE_CHECK_BUDGET)
    objective = int(best.demand.max(initial=0))
    details.update(constructed=constructed, moves=moves, rebalanced=final, winner=winner)
    status = Status.OPTIMAL if objective == bound else Status.FEASIBLE
    core = tuple(best.core.tolist())
    wall = time.perf_counter() - began
    return PackingSolution(
        core,
        status=status,
        solver="stage",
        objective=objective,
        bound=bound,
        wall_s=wall,
        details=details,
    )


@dataclass(frozen=True)
class StagePacker:
    """`pack_stage` as a registered solver of `PackingProblem` (no settings)."""

    name: ClassVar[str] = "stage"

    def solve(self, problem: PackingProblem) -> PackingSolution:
        return pack_stage(problem)


@dataclass(frozen=True)
class FewestCoresPacker:
    """`fewest_cores` as a registered solver of `FewestCoresProblem` (no settings)."""

    name: ClassVar[str] = "fewest-cores"

    def solve(self, problem: FewestCoresProblem) -> FewestCoresSolution:
        return fewest_cores(problem)


def _reuse_order(problem: PackingProblem) -> list[int]:
    """Tasks grouped by weight set, groups by total load descending, loads descending inside."""
    members = sorted(
        weight_groups(problem).values(), key=lambda ts: (-sum(problem.loads[t] for t in ts), ts[0])
    )
    return [t for ts in members for t in sorted(ts, key=lambda t: (-problem.loads[t], t))]


class _Assignment:
    """A (partial) assignment with per-core weight counts, used slots and demands."""

    def __init__(self, problem: PackingProblem) -> None:
        self.problem = problem
        n, cores = problem.num_tasks, problem.cores
        self.size = np.asarray(problem.weight_size, dtype=np.int64)
        self.weights = [np.array(sorted(set(w)), dtype=np.int64) for w in problem.task_weights]
        self.slots = np.array([int(self.size[w].sum()) for w in self.weights], dtype=np.int64)
        self.weight_ptr = _offsets([w.shape[0] for w in self.weights])
        self.weight_task = np.repeat(np.arange(n), np.diff(self.weight_ptr))
        self.weight_id = np.concatenate([*self.weights, np.zeros(0, dtype=np.int64)])
        """Task-weight incidences: task ``t``'s are ``weight_ptr[t]:weight_ptr[t + 1]``."""
        self.load = np.asarray(problem.loads, dtype=np.int64)
        edges = [(a, b, ns) for a, b, ns in problem.edges if a != b and ns > 0]
        self.edge_a, self.edge_b, self.edge_ns = np.array(edges, dtype=np.int64).reshape(-1, 3).T
        neighbours: list[list[tuple[int, int]]] = [[] for _ in range(n)]
        for a, b, ns in edges:
            neighbours[a].append((b, ns))
            neighbours[b].append((a, ns))
        self.neighbours = neighbours
        """Per task, its ``(neighbour, ns)`` transfers, for the scalar updates of `place`."""
        self.weight_list = [w.tolist() for w in self.weights]
        self.size_list = self.size.tolist()
        self.load_list = self.load.tolist()
        self.nbr_ptr = _offsets([len(lst) for lst in neighbours])
        self.nbr_all = np.array([u for lst in neighbours for u, _ in lst], dtype=np.int64)
        self.nbr_ns_all = np.array([ns for lst in neighbours for _, ns in lst], dtype=np.int64)
        """Neighbour incidences: task ``t``'s are ``nbr_ptr[t]:nbr_ptr[t + 1]``."""
        self.shift = self.load + self._sum_at(n, self.edge_a, self.edge_b, self.edge_ns)
        """A task's load plus all its incident transfer time."""
        self.core = np.full(n, -1, dtype=np.int64)
        self.count = np.zeros((cores, self.size.shape[0]), dtype=np.int32)
        self.used = np.zeros(cores, dtype=np.int64)
        self.demand = np.zeros(cores, dtype=np.int64)
        self.checks = 0
        """Evaluations spent by the current `rebalance`."""

    @classmethod
    def from_cores(cls, problem: PackingProblem, core: Sequence[int]) -> _Assignment:
        assignment = cls(problem)
        for t, p in enumerate(core):
            assignment.place(t, p)
        return assignment

    def new_slots(self, t: int) -> np.ndarray:
        """Slots task ``t`` would add on each core."""
        w = self.weights[t]
        return self.slots[t] - (self.count[:, w] > 0).astype(np.int64) @ self.size[w]

    def neighbour_ns_on(self, t: int) -> tuple[np.ndarray, int]:
        """Per core, transfer ns of ``t``'s placed neighbours there; and their total."""
        at = slice(self.nbr_ptr[t], self.nbr_ptr[t + 1])
        cores = self.core[self.nbr_all[at]]
        placed = cores >= 0
        ns = self.nbr_ns_all[at][placed]
        on = np.zeros(self.used.shape[0], dtype=np.int64)
        np.add.at(on, cores[placed], ns)
        return on, int(ns.sum())

    @staticmethod
    def _sum_at(n: int, a: np.ndarray, b: np.ndarray, ns: np.ndarray) -> np.ndarray:
        """Per task, the ``ns`` of the edges ``(a, b)`` it ends."""
        total = np.zeros(n, dtype=np.int64)
        np.add.at(total, a, ns)
        np.add.at(total, b, ns)
        return total

    def place(self, t: int, p: int) -> None:
        """Put ``t`` on core ``p``: its new weights fill slots there, and each transfer to
        a placed neighbour on another core is charged to both cores. Scalar updates: a
        task has few weights and neighbours, and `ruin_and_recreate` places tasks one
        by one."""
        count, size, core, demand = self.count[p], self.size_list, self.core, self.demand
        for w in self.weight_list[t]:
            if count[w] == 0:
                self.used[p] += size[w]
            count[w] += 1
        charged = self.load_list[t]
        for u, ns in self.neighbours[t]:
            q = core[u]
            if q >= 0 and q != p:
                demand[q] += ns
                charged += ns
        demand[p] += charged
        core[t] = p

    def remove(self, t: int) -> None:
        """Undo `place` of ``t``."""
        core, demand = self.core, self.demand
        p = int(core[t])
        core[t] = -1
        count, size = self.count[p], self.size_list
        for w in self.weight_list[t]:
            count[w] -= 1
            if count[w] == 0:
                self.used[p] -= size[w]
        charged = self.load_list[t]
        for u, ns in self.neighbours[t]:
            q = core[u]
            if q >= 0 and q != p:
                demand[q] -= ns
                charged += ns
        demand[p] -= charged

    def construct(self, order: Sequence[int], reuse_first: bool) -> _Assignment | None:
        """Place ``order`` by the load-aware or reuse-first rule; None if a task fits nowhere."""
        capacity = self.problem.capacity
        ids = np.arange(self.used.shape[0])
        for t in order:
            new = self.new_slots(t)
            fits = self.used + new <= capacity
            if not fits.any():
                return None
            on, total = self.neighbour_ns_on(t)
            after = self.demand + int(self.load[t]) + total - on
            if reuse_first:
                fewest = np.where(fits, new, np.iinfo(np.int64).max)
                best = fewest == fewest.min()
                left = capacity - self.used - new if fewest.min() > 0 else np.zeros_like(new)
                keys = (ids, after, np.where(best, left, capacity + 1))
            else:
                keys = (ids, new, np.where(fits, after, np.iinfo(np.int64).max))
            self.place(t, int(np.lexsort(keys)[0]))
        return self

    def ruin_and_recreate(self, rng: random.Random, moves: int, bound: int) -> int:
        """Re-place the tasks of the most loaded core and 1-3 others (module docstring).

        Each move empties the chosen cores and puts their tasks back, in a random
        order by weight set (half of the time) or by load, each on the fitting core
        of the group with the least demand after it (ties: fewest new slots), or,
        half of the time, the fewest new slots first. A move is kept when the
        group's (largest demand, sum of squared demands) does not grow; otherwise it
        is undone. Stops at ``bound`` or after ``RECREATE_PATIENCE`` moves in a row
        that do not lower that key. Returns the number of moves kept.
        """
        cores = self.used.shape[0]
        kept = idle = 0
        for _ in range(moves):
            if cores < 2 or int(self.demand.max()) <= bound or idle >= RECREATE_PATIENCE:
                break
            p = int(np.argmax(self.demand))
            others = [q for q in range(cores) if q != p]
            group = [p, *rng.sample(others, min(rng.randint(1, 3), len(others)))]
            tasks = np.flatnonzero(np.isin(self.core, group)).tolist()
            before = self._group_key(group)
            original = list(zip(tasks, self.core[tasks].tolist(), strict=True))
            for t in tasks:
                self.remove(t)
            rng.shuffle(tasks)
            if rng.random() < 0.5:
                tasks.sort(key=lambda t: (self.weights[t].tolist(), -int(self.load[t])))
            else:
                tasks.sort(key=lambda t: -int(self.load[t]))
            reuse = rng.random() < 0.5
            placed = []
            for t in tasks:
                q = self._group_place(t, group, reuse)
                if q < 0:
                    break
                self.place(t, q)
                placed.append(t)
            after = self._group_key(group) if len(placed) == len(tasks) else None
            if after is not None and after <= before:
                kept += 1
                idle = 0 if after < before else idle + 1
                continue
            idle += 1
            for t in placed:
                self.remove(t)
            for t, q in original:
                self.place(t, q)
        return kept

    def _group_key(self, group: list[int]) -> tuple[int, int]:
        demand = self.demand[group].tolist()
        return max(demand), sum(d * d for d in demand)

    def _group_place(self, t: int, group: list[int], reuse: bool) -> int:
        """The core of ``group`` for ``t`` (`ruin_and_recreate`), or -1 if none fits.

        Among the fitting cores the least (demand after, new slots) wins, or with
        ``reuse`` the least (new slots, demand after); then the lowest core id.
        """
        weights, size, capacity = self.weight_list[t], self.size_list, self.problem.capacity
        placed = [(int(self.core[u]), ns) for u, ns in self.neighbours[t]]
        total = sum(ns for q, ns in placed if q >= 0)
        best: tuple[int, int, int] | None = None
        for q in group:
            count = self.count[q]
            new = sum(size[w] for w in weights if count[w] == 0)
            if self.used[q] + new > capacity:
                continue
            after = int(self.demand[q]) + self.load_list[t] + total
            after -= sum(ns for r, ns in placed if r == q)
            key = (new, after, q) if reuse else (after, new, q)
            if best is None or key < best:
                best = key
        return -1 if best is None else best[2]

    def rebalance(self, budget: int) -> int:
        """Bottleneck moves and swaps (module docstring) within ``budget`` evaluations.

        Returns the number of moves and swaps made.
        """
        changes = 0
        self.checks = 0
        while True:
            p = int(np.argmax(self.demand))
            worst = int(self.demand[p])
            move = self._best_move(p, worst, budget)
            if move is not None:
                t, q = move
                self.remove(t)
                self.place(t, q)
            else:
                swap = self._best_swap(p, worst, budget)
                if swap is None:
                    return changes
                t, u = swap
                q = int(self.core[u])
                self.remove(t)
                self.remove(u)
                self.place(t, q)
                self.place(u, p)
            changes += 1

    def _best_move(self, p: int, worst: int, budget: int) -> tuple[int, int] | None:
        """Task of core ``p`` and target core whose move leaves both below ``worst``.

        Each task prices every core (``P`` evaluations of the budget); the least
        (larger demand, target's demand, task, core) wins, a task's target being its
        least loaded admissible core (lowest id on ties). Tasks are priced
        `MOVE_BLOCK` at a time as ``tasks x P`` arrays.
        """
        cores = self.used.shape[0]
        tasks = np.flatnonzero(self.core == p)
        tasks = tasks[: max(0, (budget - self.checks) // cores)]
        self.checks += cores * tasks.shape[0]
        choice: tuple[int, int, int, int] | None = None
        for start in range(0, tasks.shape[0], MOVE_BLOCK):
            block = tasks[start : start + MOVE_BLOCK]
            on = self._neighbour_ns_block(block)
            shift = self.load[block] + on.sum(axis=1)
            left = worst - shift + 2 * on[:, p]
            there = self.demand + shift[:, None] - 2 * on
            fits = self.used + self._new_slots_block(block) <= self.problem.capacity
            ok = (there < worst) & fits
            ok[:, p] = False
            ok &= (left < worst)[:, None]
            masked = np.where(ok, there, np.iinfo(np.int64).max)
            target = masked.argmin(axis=1)
            least = masked[np.arange(block.shape[0]), target]
            for i in np.flatnonzero(ok.any(axis=1)).tolist():
                there_q = int(least[i])
                key = (max(int(left[i]), there_q), there_q, int(block[i]), int(target[i]))
                if choice is None or key < choice:
                    choice = key
        return None if choice is None else (choice[2], choice[3])

    def _neighbour_ns_block(self, block: np.ndarray) -> np.ndarray:
        """`neighbour_ns_on` of each task of ``block``, as a ``len(block) x P`` array."""
        row, at = _rows_of(self.nbr_ptr, block)
        where = self.core[self.nbr_all[at]]
        placed = where >= 0
        on = np.zeros((block.shape[0], self.used.shape[0]), dtype=np.int64)
        np.add.at(on, (row[placed], where[placed]), self.nbr_ns_all[at][placed])
        return on

    def _new_slots_block(self, block: np.ndarray) -> np.ndarray:
        """`new_slots` of each task of ``block``, as a ``len(block) x P`` array."""
        row, at = _rows_of(self.weight_ptr, block)
        w = self.weight_id[at]
        new = np.zeros((block.shape[0], self.used.shape[0]), dtype=np.int64)
        np.add.at(new, row, self.size[w][:, None] * (self.count[:, w] == 0).T)
        return new

    def _best_swap(self, p: int, worst: int, budget: int) -> tuple[int, int] | None:
        """Task ``t`` of core ``p`` and task ``u`` elsewhere whose exchange leaves both cores
        below ``worst`` (the smaller larger demand wins; ties: ``t``, then ``u``).

        For all ``u`` at once: ``t`` leaves ``p`` for ``q = core(u)``, then ``u`` leaves
        ``q`` for ``p``, each step priced like a move with ``u``'s neighbour transfers
        corrected for ``t``'s new place. Capacity is checked for the cheapest
        candidates first.
        """
        n = self.core.shape[0]
        a, b, ns = self.edge_a, self.edge_b, self.edge_ns
        to_p = np.zeros(n, dtype=np.int64)
        np.add.at(to_p, a, np.where(self.core[b] == p, ns, 0))
        np.add.at(to_p, b, np.where(self.core[a] == p, ns, 0))
        same = self._sum_at(n, a, b, np.where(self.core[a] == self.core[b], ns, 0))
        fit = _SwapFit(self)
        choice: tuple[int, int, int] | None = None
        for t in np.flatnonzero(self.core == p).tolist():
            if self.checks + n > budget:
                break
            self.checks += n
            on, _ = self.neighbour_ns_on(t)
            with_t = np.zeros(n, dtype=np.int64)
            at = slice(self.nbr_ptr[t], self.nbr_ptr[t + 1])
            np.add.at(with_t, self.nbr_all[at], self.nbr_ns_all[at])
            shift_t = int(self.shift[t])
            at_p = worst - shift_t + 2 * int(on[p]) + self.shift - 2 * (to_p - with_t)
            at_q = (
                self.demand[self.core] + shift_t - 2 * on[self.core]
                - self.shift + 2 * (same + with_t)
            )  # fmt: skip
            larger = np.maximum(at_p, at_q)
            ok = (self.core != p) & (larger < worst)
            if choice is not None:
                ok &= larger < choice[0]
            if not ok.any():
                continue
            ok[ok] = fit.partners(t, np.flatnonzero(ok))
            if ok.any():
                u = int(np.flatnonzero(ok)[np.argmin(larger[ok])])
                choice = (int(larger[u]), t, u)
        return None if choice is None else (choice[1], choice[2])


class _SwapFit:
    """Capacity checks of `_Assignment._best_swap`'s exchanges, for many partners at once.

    Exchanging ``t`` (on core ``p``) with ``u`` (on core ``q``) fits when both cores
    keep their distinct weights within capacity: ``p`` loses the weights only ``t``
    holds there and gains ``u``'s weights it lacks or just lost; ``q`` likewise.
    The assignment does not change during one `_best_swap`, so what ``u`` frees on
    its own core is computed once; a check of ``t`` against ``k`` partners is then
    ``O((I + k) W_t)`` numpy work for ``I`` task-weight incidences and ``W_t``
    weights of ``t``.
    """

    def __init__(self, assignment: _Assignment) -> None:
        self.assignment = a = assignment
        held = a.count[a.core[a.weight_task], a.weight_id]
        self.frees = self._per_task(a.size[a.weight_id] * (held == 1))
        """Slots each task frees on its own core by leaving it."""

    def _per_task(self, values: np.ndarray) -> np.ndarray:
        """Per task, the sum of ``values`` over its task-weight incidences."""
        total = np.concatenate(([0], np.cumsum(values, dtype=np.int64)))
        ptr = self.assignment.weight_ptr
        return total[ptr[1:]] - total[ptr[:-1]]

    def partners(self, t: int, partners: np.ndarray) -> np.ndarray:
        """Whether exchanging ``t`` with each of ``partners`` (other cores) fits."""
        a = self.assignment
        capacity = a.problem.capacity
        p, mine = int(a.core[t]), a.weights[t]
        on_p = a.count[p]
        gone = np.zeros(on_p.shape[0], dtype=bool)
        gone[mine[on_p[mine] == 1]] = True
        joins_p = self._per_task(a.size[a.weight_id] * ((on_p == 0) | gone)[a.weight_id])
        fits = a.used[p] - int(a.size[mine][gone[mine]].sum()) + joins_p[partners] <= capacity
        q = a.core[partners]
        joins_q = np.zeros(partners.shape[0], dtype=np.int64)
        for w in mine.tolist():
            there = a.count[q, w]
            holds = np.zeros(a.core.shape[0], dtype=bool)
            holds[a.weight_task[a.weight_id == w]] = True
            joins_q += a.size[w] * ((there == 0) | (holds[partners] & (there == 1)))
        return fits & (a.used[q] - self.frees[partners] + joins_q <= capacity)


def _offsets(lengths: Sequence[int]) -> np.ndarray:
    """CSR offsets of consecutive runs of ``lengths``."""
    return np.concatenate(([0], np.cumsum(lengths, dtype=np.int64)))


def _rows_of(ptr: np.ndarray, block: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The CSR entries of rows ``block``: each entry's position in ``block`` and its index."""
    lengths = ptr[block + 1] - ptr[block]
    row = np.repeat(np.arange(block.shape[0]), lengths)
    first = np.repeat(ptr[block] - (np.cumsum(lengths) - lengths), lengths)
    return row, first + np.arange(row.shape[0])
