"""Tests of the heuristic-vs-CP-SAT audit records, Markdown table and JSON."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from raptor_cp.audit.latency import audit_latency
from raptor_cp.audit.record import AuditRecord
from raptor_cp.errors import NotFoundWithinBudgetError
from raptor_cp.graph import ComputeGraph
from raptor_cp.heuristics.heft import HeftScheduler
from raptor_cp.heuristics.peft import PeftScheduler
from raptor_cp.models.latency import CpSatLatencyModel, LatencyModelPlan, plan_latency_model
from raptor_cp.models.solve import SolveSettings
from raptor_cp.problems import LatencyProblem, LatencySolution, Status
from raptor_cp.reports.audit import record_json, render_markdown, to_json
from raptor_cp.schedule import Schedule
from raptor_cp.targets.generic import GenericTarget

CPSAT = CpSatLatencyModel(SolveSettings(10.0, 2), hint_with=None)


def chain_and_pair() -> LatencyProblem:
    """t0 -> t1 -> t2 (3 ns each) beside t3 (4 ns) on two free-comm cores: optimum 9."""
    graph = ComputeGraph(
        names=("t0", "t1", "t2", "t3"),
        cost=[3, 3, 3, 4],
        edge_src=[0, 1],
        edge_dst=[1, 2],
        edge_bytes=[1, 1],
        name="chain",
    )
    return LatencyProblem(graph, GenericTarget(2))


@dataclass(frozen=True)
class SlotsTarget(GenericTarget):
    """Generic cores with a finite resident-weight capacity per core."""

    slots: tuple[int, ...] = ()

    def capacity(self, core: int) -> int:
        return self.slots[core]


@dataclass(frozen=True)
class GivesUp:
    """A heuristic that never finds a schedule."""

    name: ClassVar[str] = "gives-up"

    def solve(self, problem: LatencyProblem) -> LatencySolution:
        raise NotFoundWithinBudgetError("gave up after 0 of 0 candidates")


@dataclass(frozen=True)
class Fixed:
    """A heuristic that returns a fixed schedule and claims a fixed objective."""

    schedule: Schedule
    claimed: int | None = None
    name: ClassVar[str] = "fixed"

    def solve(self, problem: LatencyProblem) -> LatencySolution:
        return LatencySolution(
            self.schedule, status=Status.FEASIBLE, solver=self.name, objective=self.claimed
        )


@dataclass(frozen=True)
class Claims:
    """A stand-in CP-SAT model that returns a fixed (possibly wrong) solution."""

    solution: LatencySolution
    max_size: int = 1000

    def plan(self, problem: LatencyProblem) -> LatencyModelPlan:
        return plan_latency_model(problem, self.max_size)

    def solve(self, problem: LatencyProblem, hint: Schedule | None = None) -> LatencySolution:
        return self.solution


def serial(problem: LatencyProblem) -> Schedule:
    """Every task on core 0 in id order, as early as possible."""
    graph = problem.graph
    start = np.concatenate([[0], np.cumsum(graph.cost)[:-1]])
    orders = (tuple(range(graph.num_tasks)),) + ((),) * (problem.target.cores - 1)
    return Schedule(orders, start, "serial")


def test_agreeing_heuristic_is_compared_with_the_proved_optimum() -> None:
    problem = chain_and_pair()
    record = audit_latency(problem, Fixed(serial(problem)), CPSAT, "chain")
    assert (record.heuristic_objective, record.cpsat_objective, record.cpsat_bound) == (13, 9, 9)
    assert (record.lower_bound, record.proved_optimal, record.disagreements) == (9, True, ())
    assert record.gap_vs_cpsat_pct == record.gap_vs_bound_pct == 100 * (13 - 9) / 9


def test_fake_heuristic_failure_is_flagged() -> None:
    record = audit_latency(chain_and_pair(), GivesUp(), CPSAT, "chain")
    assert record.heuristic_objective is None
    assert record.heuristic_failure == "not found within budget: gave up after 0 of 0 candidates"
    assert record.disagreements == ("heuristic found no schedule but CP-SAT found 9 ns",)
    table = render_markdown([record])
    assert table.startswith("**DISAGREE on 1 of 1 instances: chain**")
    assert "| **DISAGREE**: heuristic found no schedule but CP-SAT found 9 ns |" in table


def test_real_heft_capacity_failure_is_flagged() -> None:
    # HEFT's greedy placements leave no 3-slot hole for t4's weight w1, although
    # CP-SAT (and PEFT, with its constructor recovery) place every task. The unused
    # 4-slot w0 keeps the headroom rule from steering HEFT away from the dead end.
    graph = ComputeGraph(
        names=tuple(f"t{i}" for i in range(6)),
        cost=[10] * 6,
        edge_src=[],
        edge_dst=[],
        edge_bytes=[],
        task_weights=((4,), (3,), (4,), (2,), (1,), (2,)),
        weight_size=[4, 3, 3, 1, 1],
        weight_names=("w0", "w1", "w2", "w3", "w4"),
        name="tight",
    )
    problem = LatencyProblem(graph, SlotsTarget(3, slots=(3, 3, 3)))
    record = audit_latency(problem, HeftScheduler(), CPSAT, "tight")
    assert record.cpsat_status == Status.OPTIMAL
    assert record.heuristic_failure is not None
    assert record.heuristic_failure.startswith("not found within budget: ")
    assert record.disagreements == (
        f"heuristic found no schedule but CP-SAT found {record.cpsat_objective} ns",
    )


def test_invalid_heuristic_schedule_is_flagged() -> None:
    problem = chain_and_pair()
    backwards = dataclasses.replace(serial(problem), core_order=((2, 1, 0, 3), ()))
    record = audit_latency(problem, Fixed(backwards), CPSAT, "chain")
    assert record.heuristic_objective is None
    assert record.disagreements == (
        "heuristic schedule fails check: task 't0' is placed after its successor 't1' on core 0",
    )


def test_heuristic_schedule_against_proved_infeasibility_is_flagged() -> None:
    problem = chain_and_pair()
    infeasible = Claims(LatencySolution(None, status=Status.INFEASIBLE, solver="cpsat"))
    record = audit_latency(problem, Fixed(serial(problem)), infeasible, "chain")
    assert record.disagreements == (
        "heuristic has a valid schedule but CP-SAT proved infeasibility",
    )


def test_heuristic_below_a_proved_bound_is_flagged() -> None:
    problem = chain_and_pair()
    too_high = Claims(LatencySolution(None, status=Status.NOT_FOUND, solver="cpsat", bound=20))
    record = audit_latency(problem, Fixed(serial(problem)), too_high, "chain")
    assert record.disagreements == ("heuristic makespan 13 ns is below the proved bound 20 ns",)


def test_misreported_heuristic_objective_is_flagged() -> None:
    problem = chain_and_pair()
    record = audit_latency(problem, Fixed(serial(problem), claimed=8), CPSAT, "chain")
    assert record.disagreements == ("heuristic reports 8 ns but evaluate gives 13 ns",)


def test_too_large_instance_keeps_the_heuristic_against_the_lower_bound() -> None:
    problem = chain_and_pair()
    small = dataclasses.replace(CPSAT, max_size=5)
    record = audit_latency(problem, HeftScheduler(), small, "chain")
    assert (record.cpsat_status, record.cpsat_skipped) == (None, "too large: at least 8 literals")
    assert (record.heuristic_objective, record.best_bound, record.gap_vs_cpsat_pct) == (9, 9, None)
    assert record.gap_vs_bound_pct == 0.0
    assert "| skipped (too large: at least 8 literals) |" in render_markdown([record])


def test_markdown_summarises_agreement() -> None:
    problem = chain_and_pair()
    records = [
        audit_latency(problem, HeftScheduler(), CPSAT, "chain"),
        audit_latency(problem, PeftScheduler(), CPSAT, "chain"),
    ]
    lines = render_markdown(records).splitlines()
    assert lines[0] == "All 2 instances agree; CP-SAT proved 2 optimal, skipped 0."
    assert lines[4] == ("| chain | generic:2 | 4 | heft | 9 | 9 | 9 | 9 | optimal | 0.0 | 0.0 |  |")


def test_json_round_trips_with_the_summary() -> None:
    problem = chain_and_pair()
    records = [
        audit_latency(problem, GivesUp(), CPSAT, "chain"),
        audit_latency(problem, HeftScheduler(), CPSAT, "chain"),
    ]
    document = json.loads(json.dumps(to_json(records)))
    assert document["summary"] == {
        "instances": 2,
        "disagreements": 1,
        "proved_optimal": 2,
        "cpsat_skipped": 0,
        "wall_capped": 0,
    }
    first = document["records"][0]
    assert (first["heuristic"], first["cpsat_status"], first["gap_vs_cpsat_pct"]) == (
        "gives-up",
        "optimal",
        None,
    )
    assert set(first) == set(record_json(records[0]))


def test_record_json_names_every_field() -> None:
    record = audit_latency(chain_and_pair(), HeftScheduler(), CPSAT, "chain")
    fields = {f.name for f in dataclasses.fields(AuditRecord)}
    renamed = {"heuristic_objective", "cpsat_objective", "cpsat_bound", "cpsat_wall_capped"}
    exported = set(record_json(record))
    assert fields - renamed <= exported
    renames = {"heuristic_makespan_ns", "cpsat_objective_ns", "cpsat_bound_ns", "wall_capped"}
    assert renames <= exported
