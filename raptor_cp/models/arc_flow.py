"""Arc-flow CP-SAT model of bin packing (Valério de Carvalho 1999): fewest bins, proved.

The fewest-cores question of a `PackingProblem` whose weight sets are pairwise
disjoint is plain bin packing of the sets' slot totals (`weight_groups`: tasks
with the same set are one item). Its arc-flow formulation:

* **Graph** (`arc_flow_graph`): nodes are the loads ``0..capacity`` reachable by
  packing items in non-increasing size order; for each distinct size ``w`` (with
  ``b`` items of it) and each node ``u`` reachable with larger sizes only, a
  chain of at most ``b`` arcs ``u -> u + w -> u + 2w ...`` within the capacity;
  plus one *loss* arc from every other node to ``capacity``. Every bin's items,
  sorted by size, are a path from ``0`` to ``capacity`` (the Valério de Carvalho
  reductions: sizes in non-increasing order along a path, at most ``b`` arcs of
  size ``w`` in a row).
* **Model**: an integer flow ``f[a]`` per arc, ``z`` units leave node 0 and reach
  ``capacity``, conservation at every other node, and for each size exactly as
  many arcs of that size carry flow as there are items of it. Minimise ``z``,
  with ``z`` between the lower bound (`cores_needed`) and the hint's bin count.

Its LP relaxation is the Gilmore-Gomory bound, far stronger than the assignment
model's: rounded up, it equals the optimum on 211 of the 212 Falkenauer and Scholl
instances where L2 falls short (0.15 s per instance on average, 3.7 s at most,
graph included). `CpSatArcFlowModel.solve` first solves that LP with HiGHS
(`arc_flow_lp_bound`, scipy) and returns the hint as OPTIMAL when it meets the
rounded LP value; otherwise the bound is a constraint of the CP-SAT model, whose
own linear relaxation, cut off by its time budget, proved less (on Scholl
N4W1B1R9 it stayed at 167 for 10 deterministic seconds where the LP gives 167.4).
There are no bin labels, so no symmetry to break.
An optimal flow is decomposed into ``z`` paths, each path a bin; items of equal
size are interchangeable.

Size: at most ``(capacity + 1)`` nodes and ``(capacity + 1) * sizes`` arcs; in
practice much fewer (20k arcs on the largest Scholl bin2 instances, capacity
1000 and 500 items). Above ``max_size`` arcs `build` raises `RaptorError`.

References
----------
J. M. Valério de Carvalho, "Exact solution of bin-packing problems using column
generation and branch-and-bound", Annals of Operations Research 86, 1999.
F. Brandão and J. P. Pedroso, "Bin packing and related problems: general arc-flow
formulation with graph compression", Computers & Operations Research 69, 2016.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from raptor_cp.errors import InvalidInstanceError, RaptorError
from raptor_cp.heuristics.stage_packing import disjoint, weight_groups
from raptor_cp.models.solve import CpSatRun, SolveSettings, run_cpsat
from raptor_cp.problems import FewestCoresSolution, PackingProblem, Status, check_fewest_cores

if TYPE_CHECKING:
    from ortools.sat.python import cp_model

DEFAULT_MAX_ARCS = 200_000
"""Default model-size limit (arcs)."""
LOSS = -1
"""Size index of a loss arc."""
LP_PROOF = "not run: the hint meets the arc-flow LP bound"
"""``details["search"]`` of a solve answered by the hint and the LP bound alone."""
LP_GUARD = 1e-6
"""Relative amount taken off the LP optimum before rounding it up (solver tolerance)."""


@dataclass(frozen=True)
class ArcFlowGraph:
    """The reduced arc-flow graph of one bin-packing instance (module docstring)."""

    capacity: int
    sizes: tuple[int, ...]
    """Distinct positive item sizes, descending."""
    demand: tuple[int, ...]
    """Items of each size."""
    arcs: tuple[tuple[int, int, int], ...]
    """``(tail, head, size index)``; size index `LOSS` for a loss arc."""


def arc_flow_graph(sizes: Sequence[int], capacity: int) -> ArcFlowGraph:
    """The graph of the positive ``sizes`` (module docstring). ``O(capacity * sum(b))``."""
    count = Counter(s for s in sizes if s > 0)
    distinct = sorted(count, reverse=True)
    if distinct and distinct[0] > capacity:
        raise InvalidInstanceError(f"no bin of capacity {capacity} holds an item of {distinct[0]}")
    reached = {0}
    arcs: list[tuple[int, int, int]] = []
    for j, w in enumerate(distinct):
        heads = set()
        for u in sorted(reached):
            v = u
            for _ in range(count[w]):
                if v + w > capacity:
                    break
                arcs.append((v, v + w, j))
                heads.add(v + w)
                v += w
        reached |= heads
    unique = sorted(set(arcs))
    loss = [(u, capacity, LOSS) for u in sorted(reached) if 0 < u < capacity]
    return ArcFlowGraph(
        capacity, tuple(distinct), tuple(count[w] for w in distinct), tuple(unique + loss)
    )


def arc_flow_lp_bound(graph: ArcFlowGraph) -> int | None:
    """``ceil`` of the arc-flow LP optimum (the Gilmore-Gomory bound), by HiGHS; None if
    the LP solve does not end optimal.

    The LP value is rounded up after subtracting a relative guard of ``LP_GUARD``
    against solver tolerances, so a bound is never above the LP optimum's ceiling.
    The same flow constraints as the CP-SAT model, with continuous flows.
    """
    import numpy as np
    from scipy import sparse
    from scipy.optimize import linprog

    if not graph.sizes:
        return 0
    nodes = sorted({u for u, _, _ in graph.arcs} | {v for _, v, _ in graph.arcs})
    row = {u: r for r, u in enumerate(nodes)}
    arcs = len(graph.arcs)
    rows, cols, vals = [], [], []
    for a, (u, v, _) in enumerate(graph.arcs):
        rows += [row[u], row[v]]
        cols += [a, a]
        vals += [-1.0, 1.0]
    rows += [row[0], row[graph.capacity]]  # column ``arcs`` is the bin count
    cols += [arcs, arcs]
    vals += [1.0, -1.0]
    balance = sparse.csr_matrix((vals, (rows, cols)), shape=(len(nodes), arcs + 1))
    item_arcs = [(j, a) for a, (_, _, j) in enumerate(graph.arcs) if j != LOSS]
    demand = sparse.csr_matrix(
        ([1.0] * len(item_arcs), ([j for j, _ in item_arcs], [a for _, a in item_arcs])),
        shape=(len(graph.sizes), arcs + 1),
    )
    cost = np.zeros(arcs + 1)
    cost[arcs] = 1.0
    result = linprog(
        cost,
        A_eq=sparse.vstack([balance, demand]).tocsr(),
        b_eq=np.concatenate([np.zeros(len(nodes)), np.asarray(graph.demand, dtype=float)]),
        bounds=(0, None),
        method="highs",
    )
    if result.status != 0:
        return None
    value = float(result.fun)
    return math.ceil(value - LP_GUARD * max(1.0, value))


@dataclass(frozen=True)
class ArcFlowVars:
    """Variables of one built arc-flow model."""

    problem: PackingProblem
    items: tuple[tuple[int, ...], ...]
    """Tasks of each item (a weight-set group)."""
    item_size: tuple[int, ...]
    graph: ArcFlowGraph
    flow: list[cp_model.IntVar]
    """``flow[a]`` on ``graph.arcs[a]``."""
    bins: cp_model.IntVar
    lower: int


@dataclass(frozen=True)
class CpSatArcFlowModel:
    """Fewest cores of a `PackingProblem` with disjoint weight sets, by arc flow.

    Parameters are those of `raptor_cp.models.packing.CpSatBinPackingModel`
    (search settings and ``max_size``, here in arcs); `solve` takes the hint and
    lower bound from its caller. Not a registered solver: `CpSatBinPackingModel`
    (method ``cpsat`` of `FewestCoresProblem`) runs it when the weight sets are
    disjoint and reports its answer under its own name.
    """

    name: ClassVar[str] = "cpsat-arcflow"

    settings: SolveSettings = field(default_factory=SolveSettings)
    max_size: int = DEFAULT_MAX_ARCS

    def solve(
        self, problem: PackingProblem, lower: int, hint: Sequence[int] | None = None
    ) -> FewestCoresSolution:
        """Minimise the cores; ``lower`` is a proved bound, ``hint`` a valid core per task."""
        began = time.perf_counter()
        upper = None if hint is None else len(set(hint))
        _, item_size = plain_items(problem)
        lp = arc_flow_lp_bound(arc_flow_graph(item_size, problem.capacity))
        lower = max(lower, lp or 0)
        if hint is not None and upper == lower:
            label = {p: i for i, p in enumerate(dict.fromkeys(hint))}
            details: dict[str, object] = {"lp_bound": lp, "search": LP_PROOF}
            return FewestCoresSolution(
                tuple(label[p] for p in hint),
                status=Status.OPTIMAL,
                solver=self.name,
                objective=lower,
                bound=lower,
                wall_s=time.perf_counter() - began,
                details=details,
            )
        model, variables = self.build(problem, lower, upper)
        if hint is not None:
            _add_hint(model, variables, hint)
        solution = self.extract(run_cpsat(model, self.settings), variables)
        details = {**solution.details, "lp_bound": lp}
        return dataclasses.replace(solution, wall_s=time.perf_counter() - began, details=details)

    def build(
        self, problem: PackingProblem, lower: int, upper: int | None = None
    ) -> tuple[cp_model.CpModel, ArcFlowVars]:
        """The model of ``problem`` with ``lower <= bins <= upper`` (module docstring)."""
        from ortools.sat.python import cp_model

        items, item_size = plain_items(problem)
        graph = arc_flow_graph(item_size, problem.capacity)
        if len(graph.arcs) > self.max_size:
            raise RaptorError(
                f"{problem.name}: arc-flow model too large ({len(graph.arcs)} arcs > max_size "
                f"{self.max_size}); raise max_size or use the assignment model"
            )
        top = min(problem.cores, len(items) if upper is None else upper)
        model = cp_model.CpModel()
        model.name = f"arcflow:{problem.name}"
        bins = model.new_int_var(lower, max(lower, top), "bins")
        model.add(bins <= top)  # infeasible when the bound exceeds the cores
        flow = [
            model.new_int_var(0, top if j == LOSS else graph.demand[j], f"flow[{u},{v},{j}]")
            for u, v, j in graph.arcs
        ]
        into: dict[int, list[cp_model.IntVar]] = {}
        out: dict[int, list[cp_model.IntVar]] = {}
        by_size: list[list[cp_model.IntVar]] = [[] for _ in graph.sizes]
        for (u, v, j), f in zip(graph.arcs, flow, strict=True):
            out.setdefault(u, []).append(f)
            into.setdefault(v, []).append(f)
            if j != LOSS:
                by_size[j].append(f)
        for node in sorted(set(into) | set(out)):
            if node == 0:
                model.add(sum(out[0]) == bins)
            elif node == graph.capacity:
                model.add(sum(into[node]) == bins)
            else:
                model.add(sum(into.get(node, [])) == sum(out.get(node, [])))
        for j, arcs in enumerate(by_size):
            model.add(sum(arcs) == graph.demand[j])
        if not graph.sizes:  # only empty items: they share one bin (or none exist)
            model.add(bins == min(1, len(items)))
        model.minimize(bins)
        return model, ArcFlowVars(problem, items, item_size, graph, flow, bins, lower)

    def extract(self, run: CpSatRun, variables: ArcFlowVars) -> FewestCoresSolution:
        """A checked `FewestCoresSolution` from a flow decomposition (cores ``0..bins-1``)."""
        problem = variables.problem
        details: dict[str, object] = {
            "backend_status": run.backend_status,
            "cpsat_objective": run.objective,
            "cpsat_bound": run.bound,
            "deterministic_time": run.deterministic_time,
            "arcs": len(variables.graph.arcs),
            "formulation": "arc-flow",
        }
        bound = variables.lower if run.bound is None else max(run.bound, variables.lower)
        if not run.has_solution:
            return FewestCoresSolution(
                None,
                status=run.status,
                solver=self.name,
                bound=bound,
                wall_s=run.wall_s,
                details=details,
            )
        flows = [run.solver.value(f) for f in variables.flow]
        core = _decompose(variables, flows)
        used = len(set(core))
        assert run.objective is not None
        if used > run.objective:
            raise AssertionError(
                f"arc flow on {problem.name}: CP-SAT objective {run.objective}, {used} cores used"
            )
        status = Status.OPTIMAL if used == bound else Status.FEASIBLE
        solution = FewestCoresSolution(
            core,
            status=status,
            solver=self.name,
            objective=used,
            bound=bound,
            wall_s=run.wall_s,
            details=details,
        )
        check_fewest_cores(problem, solution)
        return solution


def plain_items(problem: PackingProblem) -> tuple[tuple[tuple[int, ...], ...], tuple[int, ...]]:
    """The weight-set groups of ``problem`` and their slots, if no weight is in two groups.

    Raises `InvalidInstanceError` otherwise (shared weights are not plain bin packing).
    """
    groups = weight_groups(problem)
    if not disjoint(groups):
        raise InvalidInstanceError(
            f"{problem.name}: weight sets overlap; the arc-flow model needs plain bin packing"
        )
    items = tuple(tuple(tasks) for tasks in groups.values())
    sizes = tuple(sum(problem.weight_size[w] for w in s) for s in groups)
    return items, sizes


def _add_hint(model: cp_model.CpModel, variables: ArcFlowVars, core: Sequence[int]) -> None:
    """Hint the flow of the hinted packing: each bin's sizes, descending, as a path."""
    graph = variables.graph
    index = {(u, j): a for a, (u, _, j) in enumerate(graph.arcs)}
    size_index = {w: j for j, w in enumerate(graph.sizes)}
    loads: dict[int, list[int]] = {}
    for item, tasks in enumerate(variables.items):
        if variables.item_size[item] > 0:
            loads.setdefault(core[tasks[0]], []).append(variables.item_size[item])
    flow = [0] * len(graph.arcs)
    for sizes in loads.values():
        u = 0
        for w in sorted(sizes, reverse=True):
            flow[index[u, size_index[w]]] += 1
            u += w
        if u < graph.capacity:
            flow[index[u, LOSS]] += 1
    for f, value in zip(variables.flow, flow, strict=True):
        model.add_hint(f, value)
    model.add_hint(variables.bins, len(loads) if graph.sizes else min(1, len(variables.items)))


def _decompose(variables: ArcFlowVars, flows: list[int]) -> tuple[int, ...]:
    """A core per task from the flow: ``bins`` paths from 0 to ``capacity``, one per core."""
    graph = variables.graph
    out: dict[int, list[int]] = {}
    for a, (u, _, _) in enumerate(graph.arcs):
        out.setdefault(u, []).append(a)
    holders: dict[int, list[int]] = {}
    for item in range(len(variables.items) - 1, -1, -1):
        holders.setdefault(variables.item_size[item], []).append(item)
    flows = list(flows)
    item_core = [0] * len(variables.items)
    core = 0
    while any(flows[a] for a in out.get(0, [])):
        u = 0
        while u != graph.capacity:
            a = next(a for a in out[u] if flows[a] > 0)
            flows[a] -= 1
            _, u, j = graph.arcs[a]
            if j != LOSS:
                item_core[holders[graph.sizes[j]].pop()] = core
        core += 1
    cores = [0] * variables.problem.num_tasks
    for item, tasks in enumerate(variables.items):
        for t in tasks:
            cores[t] = item_core[item]  # empty items stay on core 0
    return tuple(cores)
