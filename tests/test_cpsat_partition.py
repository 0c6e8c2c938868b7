"""Tests of the CP-SAT partition and joint models against brute force and the prefix DP."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest
from test_prefix_dp import brute_force_optimum, random_problem

from raptor_cp.audit.joint import compare_joint
from raptor_cp.audit.partition import compare_partition
from raptor_cp.errors import InvalidInstanceError, RaptorError, ScheduleViolationError
from raptor_cp.heuristics.prefix_dp import initial_partition
from raptor_cp.models.joint_partition import CpSatJointModel
from raptor_cp.models.partition import CpSatPartitionModel
from raptor_cp.models.solve import SolveSettings
from raptor_cp.problems import (
    JointProblem,
    JointSolution,
    PackingProblem,
    PartitionProblem,
    Stage,
    Status,
    check_joint,
    check_partition,
    packing_demand,
)

FAST = {"settings": SolveSettings(10.0, 2)}


@pytest.mark.parametrize("seed", range(15))
def test_cpsat_matches_brute_force_and_the_exact_dp(seed: int) -> None:
    problem = random_problem(seed)
    solution = CpSatPartitionModel(**FAST).solve(problem)
    expected = brute_force_optimum(problem)
    check_partition(problem, solution)
    if expected is None:
        assert solution.stages is None and solution.status == Status.INFEASIBLE
        return
    assert solution.status == Status.OPTIMAL
    assert solution.objective == solution.bound == expected
    assert initial_partition(problem).objective == expected


def test_cpsat_without_hint_finds_the_same_optimum() -> None:
    problem = random_problem(3)
    hinted = CpSatPartitionModel(**FAST).solve(problem)
    plain = CpSatPartitionModel(**FAST, hint_with_dp=False).solve(problem)
    assert plain.objective == hinted.objective == brute_force_optimum(problem)


def parity_problem() -> PartitionProblem:
    """Groups 0 | 1-2 cost 10 only on even budgets; 0-1 | 2 costs 50 on any budget.

    With 20 cores and depth 2 the spare 18 cores come in units of 2, so the grid
    only has odd budgets: it picks the 50 split, and the minimax budgets cannot
    repair a range choice. The unquantized optimum is (10, 10) cores at cost 10.
    """
    table = {(0, 2): 50, (2, 3): 50, (0, 3): 100, (1, 2): 100}

    def cost(first: int, stop: int, cores: int) -> int:
        if (first, stop) in ((0, 1), (1, 3)):
            return 10 if cores % 2 == 0 else 100
        return table[first, stop]

    return PartitionProblem(3, 20, 2, cost, name="parity")


def test_audit_reports_the_quantization_loss() -> None:
    record = compare_partition(parity_problem(), CpSatPartitionModel(**FAST))
    assert record.exact_dp is not None and record.cpsat is not None
    assert record.dp.details["unit_cores"] == 2
    assert record.dp.objective == 50
    assert record.exact_dp.objective == record.cpsat.objective == record.cpsat.bound == 10
    assert record.cpsat.status == Status.OPTIMAL
    assert record.quantization_loss == 40
    assert record.quantization_loss_rel == pytest.approx(0.8)
    assert record.disagreements == ()


def test_dp_is_never_below_cpsat() -> None:
    problem = parity_problem()
    dp = initial_partition(problem)
    cpsat = CpSatPartitionModel(**FAST).solve(problem)
    check_partition(problem, dp)
    check_partition(problem, cpsat)
    assert dp.status == Status.FEASIBLE
    assert cpsat.bound is not None and dp.objective is not None
    assert dp.objective >= cpsat.bound


def test_too_large_partition_model_is_refused() -> None:
    problem = PartitionProblem(40, 64, 4, lambda first, stop, cores: 1, name="big")
    with pytest.raises(
        RaptorError,
        match=(
            r"^big: exact partition model too large \(40 groups, 64 cores: 52480 stage-cost "
            r"entries > max_entries 20000\); raise max_entries or audit a smaller instance$"
        ),
    ):
        CpSatPartitionModel(**FAST).build(problem)


def test_audit_skips_exact_solvers_on_large_instances() -> None:
    problem = PartitionProblem(40, 64, 4, lambda first, stop, cores: stop - first, name="big")
    record = compare_partition(problem, CpSatPartitionModel(**FAST))
    assert record.skipped == "52480 stage-cost entries > max_entries 20000"
    assert record.dp.objective == 10 and record.quantization_loss is None


# --- joint partition + packing -------------------------------------------------------------


def exact_pack(packing: PackingProblem) -> int | None:
    """Least maximum core demand over every assignment that fits the capacity."""
    best = None
    for core in itertools.product(range(packing.cores), repeat=packing.num_tasks):
        resident: list[set[int]] = [set() for _ in range(packing.cores)]
        for task, p in enumerate(core):
            resident[p].update(packing.task_weights[task])
        if any(sum(packing.weight_size[w] for w in ws) > packing.capacity for ws in resident):
            continue
        demand = max(packing_demand(packing, core))
        best = demand if best is None or demand < best else best
    return best


def round_robin_pack(packing: PackingProblem) -> int | None:
    """Task ``i`` on core ``i mod cores``: a deliberately naive packer."""
    core = tuple(t % packing.cores for t in range(packing.num_tasks))
    resident: list[set[int]] = [set() for _ in range(packing.cores)]
    for task, p in enumerate(core):
        resident[p].update(packing.task_weights[task])
    if any(sum(packing.weight_size[w] for w in ws) > packing.capacity for ws in resident):
        return None
    return max(packing_demand(packing, core))


def tiny_joint() -> JointProblem:
    """Three groups, six tasks, four cores of three slots (weights 0-2 take two), two edges."""
    return JointProblem(
        groups=(
            ((8, (0,)), (3, (0,)), (5, (1,))),
            ((7, (2,)), (2, (3,))),
            ((4, (3,)),),
        ),
        weight_size=(2, 2, 2, 1),
        cores=4,
        capacity=3,
        max_stages=2,
        edges=((2, 3, 6), (4, 5, 3)),
        name="tiny",
    )


def test_joint_model_equals_the_dp_over_exact_curves() -> None:
    problem = tiny_joint()
    joint = CpSatJointModel(**FAST).solve(problem)
    check_joint(problem, joint)
    partition = problem.partition_problem(exact_pack)
    dp = initial_partition(partition)
    assert joint.status == Status.OPTIMAL
    assert dp.status == Status.OPTIMAL
    assert joint.objective == dp.objective == brute_force_optimum(partition) == 11
    # The cut pays: one stage on all four cores would be charged the same-stage edges.
    single = exact_pack(problem.segment_packing(0, 3, 4))
    assert joint.stages is not None and len(joint.stages) == 2
    assert single is not None and single > joint.objective


def test_segment_packing_keeps_only_the_edges_inside_the_segment() -> None:
    problem = tiny_joint()
    assert problem.segment_packing(1, 3, 2).edges == ((1, 2, 3),)
    assert problem.segment_packing(0, 1, 2).edges == ()
    assert problem.segment_packing(0, 3, 2).edges == ((2, 3, 6), (4, 5, 3))


def test_joint_model_is_never_worse_than_the_dp_over_heuristic_curves() -> None:
    problem = tiny_joint()
    record = compare_joint(problem, round_robin_pack, CpSatJointModel(**FAST))
    exact = compare_joint(problem, exact_pack, CpSatJointModel(**FAST))
    assert record.joint.status == Status.OPTIMAL
    assert record.splitting_loss is not None and record.splitting_loss > 0
    assert exact.splitting_loss == 0
    assert record.disagreements == exact.disagreements == ()


def test_check_joint_rejects_a_task_outside_its_stage_cores() -> None:
    problem = tiny_joint()
    stages = (Stage(0, 2, 3), Stage(2, 3, 1))
    core = (0, 0, 1, 2, 2, 0)  # task 5 (stage 1) on core 0, which stage 0 owns
    with pytest.raises(
        ScheduleViolationError,
        match=r"^tiny: task 5 on core 0, outside its stage's cores \[3, 4\)$",
    ):
        check_joint(problem, JointSolution(stages, core, status=Status.FEASIBLE, solver="test"))


def test_check_joint_rejects_an_over_capacity_core() -> None:
    problem = tiny_joint()
    stages = (Stage(0, 2, 3), Stage(2, 3, 1))
    core = (0, 0, 0, 1, 2, 3)  # weights 0 and 1 (4 slots) on core 0
    with pytest.raises(
        ScheduleViolationError, match=r"^tiny\[0:2\]: core 0 holds 4 weight slots, capacity 3$"
    ):
        check_joint(problem, JointSolution(stages, core, status=Status.FEASIBLE, solver="test"))


def test_joint_problem_rejects_an_empty_group() -> None:
    with pytest.raises(
        InvalidInstanceError, match=r"^g: needs groups, each with at least one task$"
    ):
        JointProblem(
            groups=(((1, ()),), ()), weight_size=(), cores=2, capacity=1, max_stages=2, name="g"
        )


def test_too_large_joint_model_is_refused() -> None:
    problem = tiny_joint()
    with pytest.raises(
        RaptorError,
        match=r"^tiny: joint model too large \(68 literals > max_size 10\); audit a smaller "
        r"instance$",
    ):
        CpSatJointModel(**FAST, max_size=10).build(problem)


@pytest.mark.parametrize("seed", range(12))
def test_cpsat_with_a_memory_term_matches_brute_force(seed: int) -> None:
    base = random_problem(seed, max_cores=5)
    rng = np.random.default_rng(100 + seed)
    memory = {
        (f, t): int(rng.integers(0, 40))
        for f in range(base.num_groups)
        for t in range(f + 1, base.num_groups + 1)
    }
    problem = dataclasses.replace(base, stage_memory=lambda f, t: memory[f, t])
    expected = brute_force_optimum(problem)
    solution = CpSatPartitionModel(SolveSettings(10.0, 1)).solve(problem)
    if expected is None:
        assert solution.stages is None
        return
    check_partition(problem, solution)
    assert (solution.objective, solution.status) == (expected, Status.OPTIMAL)
