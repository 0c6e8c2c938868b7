"""Tests of PEFT: exactness against a textbook implementation, validity, reservations."""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from raptor_cp.bounds import lower_bounds
from raptor_cp.errors import NotFoundWithinBudgetError
from raptor_cp.evaluation import evaluate
from raptor_cp.graph import DIRECT_RECEIVE, ComputeGraph
from raptor_cp.heuristics.list_common import data_ready_ns
from raptor_cp.heuristics.peft import HopTransferRows, PeftScheduler, optimistic_cost_table
from raptor_cp.problems import LatencyProblem, Status
from raptor_cp.problems.latency import check_schedule
from raptor_cp.solvers import make_solver, solve
from raptor_cp.targets.base import SchedulingTarget
from raptor_cp.targets.generic import GenericTarget
from raptor_cp.targets.ipu import IpuTarget

DATA = Path(__file__).parent / "data"


# -- targets -------------------------------------------------------------------------


@dataclass(frozen=True)
class MeshTarget(GenericTarget):
    """Cores on a grid; a transfer costs 3 ns per hop plus the bytes (hop-invariant)."""

    columns: int = 2

    def hops(self, src: int, dst: int) -> int:
        (r1, c1), (r2, c2) = divmod(src, self.columns), divmod(dst, self.columns)
        return abs(r1 - r2) + abs(c1 - c2)

    def transfer_ns(self, src: int, dst: int, nbytes: int, direct: bool = False) -> int:
        return 0 if src == dst else 3 * self.hops(src, dst) + nbytes

    def mean_transfer_ns(self, nbytes: int, direct: bool = False) -> int:
        pairs = [(a, b) for a in range(self.cores) for b in range(self.cores) if a != b]
        return math.ceil(sum(self.transfer_ns(a, b, nbytes) for a, b in pairs) / len(pairs))


@dataclass(frozen=True)
class UphillTarget(GenericTarget):
    """Sending to a higher core id costs double: transfers do not follow hop distance."""

    def transfer_ns(self, src: int, dst: int, nbytes: int, direct: bool = False) -> int:
        return 0 if src == dst else nbytes * (2 if dst > src else 1)

    def mean_transfer_ns(self, nbytes: int, direct: bool = False) -> int:
        return math.ceil(1.5 * nbytes)


@dataclass(frozen=True)
class SlotTarget(GenericTarget):
    """Generic cores that each hold ``slots`` resident-weight slots."""

    slots: int = 1

    def capacity(self, core: int) -> int:
        return self.slots


# -- graphs --------------------------------------------------------------------------


def read_matrix(path: Path) -> list[list[int]]:
    with path.open() as handle:
        return [[int(v) for v in row[1:]] for row in list(csv.reader(handle))[1:]]


def matrix_graph(folder: str, prefix: str) -> ComputeGraph:
    """A heterogeneous graph from a connectivity matrix (edge cost) and a w(i, p) matrix."""
    comm = np.array(read_matrix(DATA / folder / f"{prefix}_task_connectivity.csv"))
    work = np.array(read_matrix(DATA / folder / f"{prefix}_task_exe_time.csv"))
    src, dst = np.nonzero(comm)
    return ComputeGraph(
        names=tuple(f"T{i}" for i in range(work.shape[0])),
        cost=work.min(axis=1),
        edge_src=src,
        edge_dst=dst,
        edge_bytes=comm[src, dst],
        core_cost=work,
        name=prefix,
    )


def random_graph(seed: int, cores: int, heterogeneous: bool, tasks: int = 18) -> ComputeGraph:
    """A random DAG (edges go from lower to higher ids), zero costs and bytes included."""
    rng = np.random.default_rng(seed)
    src, dst = np.nonzero(np.triu(rng.random((tasks, tasks)) < 0.2, k=1))
    return ComputeGraph(
        names=tuple(f"t{i}" for i in range(tasks)),
        cost=rng.integers(0, 20, size=tasks),
        edge_src=src,
        edge_dst=dst,
        edge_bytes=rng.integers(0, 15, size=src.shape[0]),
        core_cost=rng.integers(0, 20, size=(tasks, cores)) if heterogeneous else None,
        name=f"random{seed}",
    )


# -- textbook PEFT ---------------------------------------------------------------------


def reference_peft(graph: ComputeGraph, target: SchedulingTarget) -> tuple[list, list, list]:
    """PEFT written straight from Arabnejad & Barbosa (2014), O(T P^2) and plain Python.

    Returns (OCT table, core per task, start per task). Same documented tie-breaks as
    the library: ready task of highest mean OCT (smaller id on ties); core of smallest
    O_EFT, then smaller EFT, then lower id; insertion into the first idle slot.
    """
    n, cores = graph.num_tasks, target.cores
    edges = list(
        zip(
            graph.edge_src.tolist(), graph.edge_dst.tolist(), graph.edge_bytes.tolist(), strict=True
        )
    )
    succ = {t: [(d, b) for s, d, b in edges if s == t] for t in range(n)}
    preds = {t: [(s, b) for s, d, b in edges if d == t] for t in range(n)}

    def w(t: int, p: int) -> int:
        return graph.cost_on(t, p)

    table: dict[int, list[int]] = {}

    def oct_row(t: int) -> list[int]:
        if t not in table:
            table[t] = [
                max(
                    (
                        min(
                            oct_row(s)[q] + w(s, q) + (target.mean_transfer_ns(b) if q != p else 0)
                            for q in range(cores)
                        )
                        for s, b in succ[t]
                    ),
                    default=0,
                )
                for p in range(cores)
            ]
        return table[t]

    rank = {t: Fraction(sum(oct_row(t)), cores) for t in range(n)}
    core, start, finish = [-1] * n, [0] * n, [0] * n
    busy: list[list[tuple[int, int]]] = [[] for _ in range(cores)]
    while len([t for t in range(n) if core[t] >= 0]) < n:
        ready = [t for t in range(n) if core[t] < 0 and all(core[s] >= 0 for s, _ in preds[t])]
        task = min(ready, key=lambda t: (-rank[t], t))
        options = []
        for p in range(cores):
            at = max(
                (finish[s] + target.transfer_ns(core[s], p, b) for s, b in preds[task]),
                default=0,
            )
            for slot_start, slot_end in sorted(busy[p]):
                if at + w(task, p) <= slot_start:
                    break
                at = max(at, slot_end)
            eft = at + w(task, p)
            options.append((eft + table[task][p], eft, p, at))
        _, eft, p, at = min(options)
        core[task], start[task], finish[task] = p, at, eft
        busy[p].append((at, eft))
    return [table[t] for t in range(n)], core, start


def assert_matches_reference(problem: LatencyProblem) -> int:
    """PEFT's table and schedule equal the textbook ones; return the makespan."""
    expected_table, expected_core, expected_start = reference_peft(problem.graph, problem.target)
    table = optimistic_cost_table(problem.graph, problem.target)
    solution = PeftScheduler().solve(problem)
    assert solution.schedule is not None
    assert table.tolist() == expected_table
    assert solution.schedule.core.tolist() == expected_core
    assert solution.schedule.start_ns.tolist() == expected_start
    check_schedule(problem, solution.schedule)
    assert solution.objective == solution.details["estimated_makespan_ns"]
    return int(solution.objective)


# -- exactness ---------------------------------------------------------------------------


def test_arabnejad_sample_dag_reproduces_the_papers_table_and_schedule() -> None:
    problem = LatencyProblem(matrix_graph("peft_arabnejad2014", "peftgraph"), GenericTarget(3, 1))
    table = optimistic_cost_table(problem.graph, problem.target)
    assert table.tolist() == [
        [64, 68, 86],
        [42, 39, 42],
        [27, 41, 43],
        [42, 39, 50],
        [28, 37, 28],
        [42, 39, 44],
        [13, 16, 22],
        [13, 16, 33],
        [13, 16, 20],
        [0, 0, 0],
    ]
    assert assert_matches_reference(problem) == 122
    schedule = PeftScheduler().solve(problem).schedule
    assert schedule is not None
    assert schedule.core_order == ((0, 3, 1, 2, 6), (5, 7, 9), (4, 8))
    assert schedule.start_ns.tolist() == [0, 29, 51, 22, 35, 29, 83, 54, 81, 106]


def test_topcuoglu_dag_matches_the_textbook_implementation() -> None:
    problem = LatencyProblem(matrix_graph("peft_topcuoglu", "canonicalgraph"), GenericTarget(3, 1))
    # Not a published value: PEFT's makespan on the HEFT paper's DAG (HEFT gets 80).
    assert assert_matches_reference(problem) == 85


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(
    "target",
    [GenericTarget(3, 1), GenericTarget(2, 0), MeshTarget(4, 1), UphillTarget(3, 1)],
    ids=["generic3", "generic2-free", "mesh4", "uphill3"],
)
@pytest.mark.parametrize("heterogeneous", [True, False], ids=["hetero", "homo"])
def test_random_graphs_match_the_textbook_implementation(
    seed: int, target: SchedulingTarget, heterogeneous: bool
) -> None:
    graph = random_graph(seed, target.cores, heterogeneous)
    assert_matches_reference(LatencyProblem(graph, target))


def test_transfer_rows_use_hop_tables_only_when_the_target_allows() -> None:
    mesh, uphill = MeshTarget(6, 1, columns=3), UphillTarget(3, 1)
    assert HopTransferRows(mesh).hop_invariant
    assert not HopTransferRows(uphill).hop_invariant
    for target in (mesh, uphill):
        rows = HopTransferRows(target)
        for src in range(target.cores):
            expected = [target.transfer_ns(src, p, 7) for p in range(target.cores)]
            assert rows.row(src, 7).tolist() == expected


@dataclass(frozen=True)
class DirectCheaperIpu(IpuTarget):
    """An IPU whose direct receives (into assembly storage) cost half: direct must be honoured."""

    def transfer_ns(self, src: int, dst: int, nbytes: int, direct: bool = False) -> int:
        full = super().transfer_ns(src, dst, nbytes)
        return full // 2 if direct else full


@pytest.mark.parametrize("direct_share", [0.0, 0.5])
def test_two_class_data_ready_times_equal_the_per_edge_maxima(direct_share: float) -> None:
    # An IPU (distance 0 on the tile, 1 elsewhere): the O(k + P) data-ready times
    # equal the per-edge maxima over transfer rows, wherever the predecessors are,
    # with direct receives priced as such.
    small = IpuTarget.preset("ipu-mk2").with_tiles(6)
    target = DirectCheaperIpu(small.chip, small.name)
    rows = HopTransferRows(target)
    assert rows.two_classes
    graph = layered_graph(3, 60, 6)
    rng = np.random.default_rng(3)
    kinds = np.where(rng.random(graph.num_edges) < direct_share, DIRECT_RECEIVE, 0)
    graph = replace(graph, edge_kind=kinds)
    assert graph.edge_direct.any() == (direct_share > 0)
    for _ in range(20):
        core = rng.integers(0, 6, size=graph.num_tasks)
        finish = rng.integers(0, 500, size=graph.num_tasks)
        for task in range(graph.num_tasks):
            expected = data_ready_ns(graph, task, core, finish, rows, 6)
            assert rows.data_ready(graph, task, core, finish).tolist() == expected.tolist()
    assert not HopTransferRows(MeshTarget(6, 1, columns=3)).two_classes


# -- validity on larger graphs -------------------------------------------------------------


def layered_graph(seed: int, tasks: int, width: int) -> ComputeGraph:
    """A seeded layered DAG: each task reads 1-3 tasks of the previous layer."""
    rng = np.random.default_rng(seed)
    src: list[int] = []
    dst: list[int] = []
    for t in range(width, tasks):
        layer_start = (t // width - 1) * width
        preds = np.unique(rng.integers(layer_start, layer_start + width, size=3))
        src += preds.tolist()
        dst += [t] * preds.shape[0]
    return ComputeGraph(
        names=tuple(f"t{i}" for i in range(tasks)),
        cost=rng.integers(0, 100, size=tasks),
        edge_src=np.array(src),
        edge_dst=np.array(dst),
        edge_bytes=rng.integers(0, 50, size=len(src)),
        name=f"layered{seed}",
    )


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(
    "target", [GenericTarget(8, 1), MeshTarget(16, 1, columns=4)], ids=["generic8", "mesh16"]
)
def test_schedules_pass_check_and_evaluate_to_the_estimate(
    seed: int, target: SchedulingTarget
) -> None:
    problem = LatencyProblem(layered_graph(seed, 600, 30), target)
    solution = PeftScheduler().solve(problem)
    assert solution.schedule is not None
    check_schedule(problem, solution.schedule)
    evaluation = evaluate(problem, solution.schedule)
    assert evaluation.start_ns.tolist() == solution.schedule.start_ns.tolist()
    assert solution.objective == evaluation.makespan_ns == solution.details["estimated_makespan_ns"]
    assert solution.objective >= solution.bound == lower_bounds(problem.graph, target).makespan_ns


def test_solution_reports_status_bound_and_counters() -> None:
    problem = LatencyProblem(layered_graph(0, 200, 20), GenericTarget(4, 1))
    solution = solve(problem, "peft")
    assert isinstance(make_solver(LatencyProblem, "peft"), PeftScheduler)
    assert (solution.status, solution.solver) == (Status.FEASIBLE, "peft")
    assert solution.gap is not None and 0 <= solution.gap < 1
    assert solution.details["passes"] == 1
    assert solution.details["recovery"] is False
    assert solution.details["candidate_checks"] == 200 * 4
    assert solution.wall_s > 0


# -- resident-weight reservations ---------------------------------------------------------------


def weighted_graph(
    weights: list[tuple[int, ...]],
    sizes: list[int],
    edges: tuple[tuple[int, int, int], ...] = (),
    cost: int = 10,
) -> ComputeGraph:
    n = len(weights)
    return ComputeGraph(
        names=tuple(f"t{i}" for i in range(n)),
        cost=[cost] * n,
        edge_src=[e[0] for e in edges],
        edge_dst=[e[1] for e in edges],
        edge_bytes=[e[2] for e in edges],
        task_weights=tuple(weights),
        weight_size=sizes,
        weight_names=tuple(f"w{i}" for i in range(len(sizes))),
        name="weighted",
    )


def test_tight_capacity_makes_tasks_reuse_resident_weights() -> None:
    # Two weights, three one-slot cores: the distinct weights (2 slots) exceed half the
    # fleet (1.5), so t1 joins t0 on the core already holding w0 instead of idling core 1.
    graph = weighted_graph([(0,), (0,), (1,)], [1, 1])
    solution = PeftScheduler().solve(LatencyProblem(graph, SlotTarget(3, 0, slots=1)))
    assert solution.schedule is not None
    assert solution.details["prefer_reuse"] is True
    assert solution.schedule.core.tolist() == [0, 0, 1]
    assert solution.objective == 20


def test_roomy_capacity_places_by_optimistic_finish() -> None:
    graph = weighted_graph([(0,), (0,), (1,)], [1, 1])
    solution = PeftScheduler().solve(LatencyProblem(graph, SlotTarget(3, 0, slots=4)))
    assert solution.schedule is not None
    assert solution.details["prefer_reuse"] is False
    assert solution.schedule.core.tolist() == [0, 1, 2]
    assert solution.objective == 10


def test_full_core_is_not_eligible_even_when_it_would_finish_first() -> None:
    # t1 reads 100 bytes from t0; on t0's core it would finish at 20, but that core is
    # full of w0, so t1 pays the transfer on core 1.
    graph = weighted_graph([(0,), (1,)], [2, 2], edges=((0, 1, 100),))
    problem = LatencyProblem(graph, SlotTarget(2, 1, slots=2))
    solution = PeftScheduler().solve(problem)
    assert solution.schedule is not None
    assert solution.schedule.core.tolist() == [0, 1]
    assert solution.schedule.start_ns.tolist() == [0, 110]
    check_schedule(problem, solution.schedule)


def test_greedy_failure_is_recovered_by_constructor_reservations() -> None:
    # Three 3-slot cores. The unused 4-slot w0 keeps the headroom chunk at 4 slots, so
    # the headroom rule finds no roomy core and falls back to plain fit, which leaves
    # no core with 3 free slots for t4's w1. The constructor (largest weight first)
    # reserves the weights and PEFT reruns inside the reservations.
    graph = weighted_graph([(4,), (3,), (4,), (2,), (1,), (2,)], [4, 3, 3, 1, 1])
    problem = LatencyProblem(graph, SlotTarget(3, 0, slots=3))
    solution = PeftScheduler().solve(problem)
    assert solution.schedule is not None
    check_schedule(problem, solution.schedule)
    assert solution.details["recovery"] is True
    assert solution.details["recovered_task"] == "t4"
    assert (solution.details["passes"], solution.details["constructions"]) == (2, 0)
    assert solution.schedule.core_order == ((3, 5), (4,), (0, 1, 2))
    assert solution.objective == 30


def test_exhausted_recovery_reports_the_budget_not_infeasibility() -> None:
    # 21 two-slot weights on 20 three-slot cores (42 of 60 slots, but one weight per
    # core): forward, reverse and 16 replays fail.
    # Checks: 2 x 21 x 20 for forward and reverse, then 20 + sum_{k=2..16} (k+1) x 20
    # for the replays (see test_resident_packing.test_search_stops_after_sixteen_replays).
    graph = weighted_graph([(t,) for t in range(21)], [2] * 21)
    problem = LatencyProblem(graph, SlotTarget(20, 0, slots=3))
    with pytest.raises(
        NotFoundWithinBudgetError,
        match=r"^peft: task 't20' fits no core of generic:20; a resident-weight placement of "
        r"weighted was not found within budget \(17 constructions, 3860 candidate checks\)$",
    ):
        PeftScheduler().solve(problem)


def test_recovery_budget_is_a_setting() -> None:
    graph = weighted_graph([(t,) for t in range(21)], [2] * 21)
    problem = LatencyProblem(graph, SlotTarget(20, 0, slots=3))
    with pytest.raises(NotFoundWithinBudgetError, match=r"\(2 constructions, 860 candidate"):
        PeftScheduler(max_replays=1).solve(problem)
