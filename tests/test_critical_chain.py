"""The critical chain of a schedule and the summary line of a result far from its bound."""

from __future__ import annotations

import numpy as np
import pytest

from raptor_cp.cli.compile import summary_line
from raptor_cp.critical_chain import ChainBreakdown, critical_chain
from raptor_cp.evaluation import evaluate
from raptor_cp.graph import ComputeGraph
from raptor_cp.heuristics.peft import PeftScheduler
from raptor_cp.problems import LatencyProblem
from raptor_cp.schedule import Schedule
from raptor_cp.targets.generic import GenericTarget


def _chain(
    graph: ComputeGraph, target: GenericTarget, orders: tuple[tuple[int, ...], ...]
) -> tuple[ChainBreakdown, int]:
    problem = LatencyProblem(graph, target)
    schedule = Schedule(orders, start_ns=[0] * graph.num_tasks, scheduler="hand")
    evaluation = evaluate(problem, schedule)
    return critical_chain(problem, schedule, evaluation), int(evaluation.makespan_ns)


def test_a_transfer_on_the_chain_is_counted_as_transfer() -> None:
    graph = ComputeGraph(("a", "b"), [10, 10], [0], [1], [500], name="pair")
    chain, makespan = _chain(graph, GenericTarget(2, ns_per_byte=1), ((0,), (1,)))
    assert chain == ChainBreakdown(20, 500, 0, 0, 2)
    assert (chain.binding, makespan) == ("transfer", 520)


def test_independent_tasks_on_one_core_queue() -> None:
    graph = ComputeGraph(("a", "b", "c"), [10, 20, 30], [], [], [], name="three")
    chain, makespan = _chain(graph, GenericTarget(3), ((0, 1, 2), (), ()))
    assert chain == ChainBreakdown(30, 0, 30, 0, 3)  # c runs itself; a and b only queue
    assert makespan == 60
    assert chain.binding == "dependency"  # ties go to the dependencies
    longer = ComputeGraph(("a", "b", "c"), [30, 20, 10], [], [], [], name="three")
    assert _chain(longer, GenericTarget(3), ((0, 1, 2), (), ()))[0].binding == "queue"


@pytest.mark.parametrize("seed", range(8))
def test_the_chain_covers_the_makespan_exactly(seed: int) -> None:
    rng = np.random.default_rng(seed)
    tasks = 30
    pairs = [(i, j) for i in range(tasks) for j in range(i + 1, tasks) if rng.random() < 0.15]
    graph = ComputeGraph(
        names=tuple(f"t{i}" for i in range(tasks)),
        cost=rng.integers(0, 20, tasks),
        edge_src=[i for i, _ in pairs],
        edge_dst=[j for _, j in pairs],
        edge_bytes=rng.integers(0, 30, len(pairs)),
        name=f"random{seed}",
    )
    problem = LatencyProblem(graph, GenericTarget(3, ns_per_byte=1))
    solution = PeftScheduler().solve(problem)
    evaluation = evaluate(problem, solution.schedule)
    chain = critical_chain(problem, solution.schedule, evaluation)
    parts = chain.dependency_ns + chain.transfer_ns + chain.queue_ns + chain.idle_ns
    assert parts == evaluation.makespan_ns
    assert chain.idle_ns == 0


SUMMARY = {
    "mode": "latency",
    "model": "m",
    "target": "arch-a",
    "tasks": 10,
    "cores": 168,
    "cores_used": 20,
    "lower_bound_ns": 1_000_000,
    "solver_bound_ns": 1_000_000,
    "scheduler": "peft",
    "status": "feasible",
    "out": "o",
}


def test_a_makespan_far_above_its_bound_names_what_binds() -> None:
    chain = {"dependency_ns": 500_000, "transfer_ns": 100_000, "queue_ns": 4_900_000}
    summary = {
        **SUMMARY,
        "makespan_ns": 5_500_000,
        "gap": 4.5 / 5.5,
        "critical_chain": {**chain, "binding": "queue"},
    }
    assert summary_line(summary) == (
        "m on arch-a: 10 tasks on 20/168 cores, makespan 5.50 ms (lower bound 1.00 ms, gap "
        "81.8 %; 5.5x the bound: 89 % of the critical chain is tasks queueing on busy cores), "
        "peft, feasible, wrote o/"
    )


def test_a_makespan_near_its_bound_says_nothing_more() -> None:
    chain = {"dependency_ns": 1_500_000, "transfer_ns": 0, "queue_ns": 0, "binding": "dependency"}
    summary = {**SUMMARY, "makespan_ns": 1_500_000, "gap": 0.5 / 1.5, "critical_chain": chain}
    assert summary_line(summary).endswith(
        "makespan 1.50 ms (lower bound 1.00 ms, gap 33.3 %), peft, feasible, wrote o/"
    )


def test_a_pipeline_interval_far_above_its_bound_names_the_binding_term() -> None:
    summary = {
        **SUMMARY,
        "mode": "pipeline",
        "stages": 1,
        "pipeline": 4,
        "interval_ns": 3_100_000,
        "interval_source": "analytic proxy",
        "interval_binding": "stage_span",
        "program_interval_ns": None,
    }
    assert (
        "(analytic proxy; lower bound 1.00 ms; 3.1x the bound, set by stage span), pipeline depth 4"
        in (summary_line(summary))
    )


def test_a_queue_estimated_interval_far_above_its_bound_names_the_queue_term() -> None:
    summary = {
        **SUMMARY,
        "mode": "pipeline",
        "stages": 3,
        "pipeline": 4,
        "interval_ns": 2_500_000,
        "interval_source": "queue estimate",
        "interval_binding": "queue_reversed",
        "program_interval_ns": 2_750_000,
    }
    assert (
        "(queue estimate; program 2.75 ms; lower bound 1.00 ms; 2.5x the bound, set by queue "
        "reversed)" in summary_line(summary)
    )
