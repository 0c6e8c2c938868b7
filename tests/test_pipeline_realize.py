"""Realizing a pipeline schedule as per-core programs, and ``--periodic-diagnostics``."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner, Result

from raptor_cp.cli import main
from raptor_cp.errors import ScheduleViolationError, TimingUnavailableError
from raptor_cp.graph import ComputeGraph
from raptor_cp.periodic.analysis import analyse_periodic
from raptor_cp.periodic.rendezvous_order import (
    QUANTUM_NS,
    Action,
    UnitCuts,
    simulate_rendezvous,
)
from raptor_cp.periodic.steps import Compute, Load, Recv, Send, Signal, Store, Wait
from raptor_cp.pipeline.initial import initial_pipeline
from raptor_cp.pipeline.realize import pipeline_events, realize_pipeline, same_stage_transfers
from raptor_cp.schedule import Schedule
from raptor_cp.targets.pim import PimTarget
from raptor_cp.targets.registry import resolve_target
from raptor_cp.workload.load import load_workload
from raptor_cp.workload.lowering import default_lanes, lower

LENET = Path(__file__).parent / "data" / "models" / "lenet5.onnx"
MNIST8 = Path(__file__).parent / "data" / "pimcomp" / "mnist8.json"
THREE_CORES = PimTarget.from_file(
    Path(__file__).parent / "data" / "configs" / "three_cores" / "config.json"
)

# Stage 0: A (core 0) -> B (core 1), a direct transfer; stage 1: C then D on core 2.
# A and B publish to C through global memory; C -> D stays on core 2.
EDGES = [(0, 1, 8), (0, 2, 16), (1, 2, 4), (2, 3, 2)]


def _tiny() -> tuple[ComputeGraph, Schedule, np.ndarray]:
    src, dst, nbytes = (np.array(c, dtype=np.int64) for c in zip(*EDGES, strict=True))
    graph = ComputeGraph(
        names=("A", "B", "C", "D"),
        cost=np.array([10, 20, 30, 5], dtype=np.int64),
        edge_src=src,
        edge_dst=dst,
        edge_bytes=nbytes,
        operation=np.arange(4, dtype=np.int64),
        lane=np.zeros(4, dtype=np.int64),
        operation_names=("A", "B", "C", "D"),
        name="tiny",
    )
    schedule = Schedule(
        core_order=((0,), (1,), (2, 3)),
        start_ns=np.array([0, 10, 0, 30]),
        scheduler="pipeline",
        stage=(0, 0, 1),
    )
    return graph, schedule, np.array([0, 0, 1, 1])


def test_tiny_two_stage_pipeline_realizes_to_exact_steps() -> None:
    graph, schedule, stage = _tiny()
    realization = realize_pipeline(graph, schedule, stage)
    # Registers are allocated per core in program order: core 0 and 1 wait on their
    # restart permission (FREE of stage 1) as register 0, at the end of their generation
    # (publications are double-buffered); core 2 on READY of stage 0. Core 2 alone forms
    # stage 1's release tree over stage 0: its root signals the restart permission to
    # producer cores 0 and 1, in that order, at its entry.
    assert realization.cores == [
        [Compute(10), Store(16), Signal(2, 0), Send(1, 8), Wait(0, 1)],
        [Recv(0, 8), Compute(20), Store(4), Signal(2, 0), Wait(0, 1)],
        [Signal(0, 0), Signal(1, 0), Wait(0, 2), Load(16), Load(4), Compute(35)],
    ]
    assert realization.tasks[2] == [(), (), (2,), (2, 0), (2, 1), (2, 3)]
    assert realization.counts() == {
        "compute": 3,
        "load": 2,
        "recv": 1,
        "send": 1,
        "signal": 4,
        "store": 2,
        "wait": 3,
    }


def test_tiny_pipeline_overlaps_generations_without_deadlock() -> None:
    graph, schedule, stage = _tiny()
    events, _ = pipeline_events(graph, THREE_CORES, schedule, stage)
    analysis = analyse_periodic(events)
    assert analysis.recurrence.status == "ok"
    assert analysis.queue is not None and analysis.queue.run.status == "converged"
    assert analysis.core_work_ns[2] > 35  # the loads' local writes join its compute
    assert analysis.estimate.ns is not None
    assert analysis.estimate.ns >= max(analysis.core_work_ns.values())


def test_double_buffering_lets_each_stage_run_a_generation_ahead() -> None:
    # Three stages on cores 0, 1, 2 (60, 100 and 160 us of work), with edges that skip a
    # stage. Single-buffered, a producer's next store waited for every reader to finish
    # its generation, and those waits chained across the stages: 310.4 us per sample
    # (found by a random search over small pipelines, none of which got slower). With
    # two copies of every publication, core 2's own loop binds.
    us = 1_000
    graph = ComputeGraph(
        names=tuple(f"t{i}" for i in range(6)),
        cost=np.array([10, 50, 100, 100, 10, 50], dtype=np.int64) * us,
        edge_src=np.array([0, 0, 1, 2, 0, 1, 2, 0, 2, 3]),
        edge_dst=np.array([1, 2, 2, 3, 3, 3, 4, 5, 5, 5]),
        edge_bytes=np.full(10, 4),
        name="skips",
    )
    stage = np.array([0, 0, 1, 2, 2, 2])
    schedule = Schedule(
        ((0, 1), (2,), (3, 4, 5)),
        np.array([0, 10, 60, 160, 260, 270]) * us,
        "pipeline",
        (0, 1, 2),
    )
    events, _ = pipeline_events(graph, THREE_CORES, schedule, stage)
    analysis = analyse_periodic(events)
    busiest = max(analysis.core_work_ns.values())
    assert 160 * us <= busiest < 161 * us
    assert analysis.estimate.ns is not None
    assert analysis.estimate.ns < busiest + us


def _release_graph(readers: int) -> tuple[ComputeGraph, Schedule, np.ndarray]:
    """Producer P (core 0, stage 0) read by ``readers`` tasks R0.. on cores 1.. (stage 1)."""
    n = readers + 1
    graph = ComputeGraph(
        names=("P", *(f"R{i}" for i in range(readers))),
        cost=np.full(n, 10, dtype=np.int64),
        edge_src=np.zeros(readers, dtype=np.int64),
        edge_dst=np.arange(1, n, dtype=np.int64),
        edge_bytes=np.full(readers, 4, dtype=np.int64),
        name="fan",
    )
    schedule = Schedule(
        core_order=tuple((t,) for t in range(n)),
        start_ns=np.zeros(n),
        scheduler="pipeline",
        stage=(0, *([1] * readers)),
    )
    return graph, schedule, np.array([0, *([1] * readers)])


def test_release_tree_keeps_core_identities_and_order() -> None:
    # Four reader cores 1..4 over producer core 0: heap tree 1 <- (2, 3), 2 <- (4).
    realization = realize_pipeline(*_release_graph(4))
    entry = [[s for s in core if isinstance(s, Signal | Wait)][:2] for core in realization.cores]
    assert entry[1] == [Wait(0, 2), Signal(0, 0)]  # root: its children, then the permission
    assert entry[2] == [Wait(0, 1), Signal(1, 0)]  # core 4's token, then to the root
    assert entry[3][0] == Signal(1, 0)
    assert entry[4][0] == Signal(2, 0)
    producer = realization.cores[0]
    assert producer[0] == Compute(10)
    assert [s for s in producer if isinstance(s, Wait)] == [Wait(0, 1)]  # one, not four
    assert producer[-1] == Wait(0, 1)  # at the end of the generation: double buffering


def test_registers_come_from_an_allocation_within_the_register_file() -> None:
    # A reader of 40 producer cores: one READY register per producer stage, not one
    # register per (core, peer) pair as before (41 and more registers).
    producers = 40
    n = producers + 1
    graph = ComputeGraph(
        names=(*(f"P{i}" for i in range(producers)), "R"),
        cost=np.full(n, 10, dtype=np.int64),
        edge_src=np.arange(producers, dtype=np.int64),
        edge_dst=np.full(producers, producers, dtype=np.int64),
        edge_bytes=np.full(producers, 4, dtype=np.int64),
        name="gather",
    )
    schedule = Schedule(
        tuple((t,) for t in range(n)), np.zeros(n), "pipeline", (*([0] * producers), 1)
    )
    stage = np.array([*([0] * producers), 1])
    realization = realize_pipeline(graph, schedule, stage, registers=32)
    used = {s.register for core in realization.cores for s in core if isinstance(s, Wait | Signal)}
    assert used == {0}
    # The reader (the tree's only node) permits the producers in core order, then waits
    # once for all 40 READY tokens.
    reader = realization.cores[producers]
    assert reader[:producers] == [Signal(p, 0) for p in range(producers)]
    assert reader[producers] == Wait(0, producers)
    # Each key takes one register per publication copy in the emitted program.
    message = r"^core 0 needs 2 event registers \(1 per publication copy\); the target has 1$"
    with pytest.raises(TimingUnavailableError, match=message):
        realize_pipeline(graph, schedule, stage, registers=1)
    realize_pipeline(graph, schedule, stage, registers=2)


BACKWARD = "tiny: edge 0 runs from stage 1 back to stage 0"
CONTRADICTION = (
    "tiny: the per-core orders contradict the dependencies (task 2 follows a cycle of "
    "dependencies and core orders)"
)


def test_backward_cross_stage_edge_is_rejected() -> None:
    graph, schedule, _ = _tiny()
    with pytest.raises(ScheduleViolationError, match=re.escape(BACKWARD)):
        realize_pipeline(graph, schedule, np.array([1, 0, 0, 0]))


def test_core_orders_against_dependencies_are_rejected() -> None:
    graph, _, stage = _tiny()
    schedule = Schedule(((0,), (1,), (3, 2)), np.zeros(4), "pipeline", (0, 0, 1))
    with pytest.raises(ScheduleViolationError, match=re.escape(CONTRADICTION)):
        realize_pipeline(graph, schedule, stage)


def test_requests_match_the_boundary_demand_on_lenet() -> None:
    target = resolve_target("arch-a")
    workload = load_workload(LENET)
    graph = lower(workload, target, lanes=default_lanes(workload, target))
    plan = initial_pipeline(graph, target, 2).plan
    events, realization = pipeline_events(
        graph, target, plan.schedule, plan.task_stage(graph.num_tasks)
    )
    counts = realization.counts()
    assert counts["store"] == plan.boundary.stores
    assert counts["load"] == plan.boundary.loads
    assert counts["send"] == counts["recv"]
    steps = [step for core in realization.cores for step in core]
    assert sum(s.nbytes for s in steps if isinstance(s, Store)) == plan.boundary.store_bytes
    assert sum(s.nbytes for s in steps if isinstance(s, Load)) == plan.boundary.load_bytes
    # The shared-memory term is the controller's service only, as in the event graph
    # (before, the boundary demand priced whole requests: flits and local memory too).
    assert events.memory_service_ns == plan.boundary.service_ns > 0


def _compile(out: Path, *extra: str) -> Result:
    args = ["compile", str(LENET), "--target", "arch-a", "--pipeline", "2", "--out", str(out)]
    return CliRunner().invoke(main, [*args, *extra])


def test_periodic_diagnostics_are_written_without_changing_the_schedule(tmp_path: Path) -> None:
    plain, first, second = tmp_path / "plain", tmp_path / "first", tmp_path / "second"
    for out, extra in ((plain, ()), (first, ("--periodic-diagnostics",))):
        result = _compile(out, *extra)
        assert result.exit_code == 0, result.output
    assert (plain / "schedule.json").read_bytes() == (first / "schedule.json").read_bytes()
    assert not (plain / "reports" / "pipeline_periodic.json").exists()
    document = json.loads((first / "reports" / "pipeline_periodic.json").read_text())
    assert document["selection_eligible"] is False
    assert document["recurrence"]["status"] == "ok"
    assert document["queue"]["status"] == "converged"
    assert document["pipeline"]["depth"] == 2
    assert any("release tree" in effect for effect in document["missing_effects"])
    assert document["memory_controller"]["status"] == "converged"
    assert document["memory_service"]["baseline_service_ns"] > 0
    # Deterministic: a second compile writes the same bytes (the document has no wall times).
    result = _compile(second, "--periodic-diagnostics")
    assert result.exit_code == 0, result.output
    periodic = Path("reports") / "pipeline_periodic.json"
    assert (second / periodic).read_bytes() == (first / periodic).read_bytes()


def test_periodic_diagnostics_need_pipeline_mode(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["compile", str(LENET), "--periodic-diagnostics", "--out", str(tmp_path / "o")]
    )
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "error: --periodic-diagnostics needs pipeline mode (--pipeline N > 1)"
    ]


def test_unit_cuts_are_memoised_per_core_only_when_cores_price_tasks_differently() -> None:
    graph, _, _ = _tiny()
    per_core = replace(graph, core_cost=np.array([[10, 11, 12]] * 4, dtype=np.int64))
    cuts = UnitCuts(per_core, THREE_CORES, QUANTUM_NS)
    assert [cuts(0, c) for c in range(3)] == [{(0, 0): 10}, {(0, 0): 11}, {(0, 0): 12}]
    alike = UnitCuts(graph, THREE_CORES, QUANTUM_NS)
    alike.warm()
    assert [alike(t, 2) for t in range(4)] == [{(0, 0): ns} for ns in (10, 20, 30, 5)]


@pytest.mark.parametrize("model", [LENET, MNIST8])
def test_rendezvous_and_units_follow_the_simulated_order_on_every_core(model: Path) -> None:
    target = resolve_target("arch-a")
    workload = load_workload(model)
    graph = lower(workload, target, lanes=default_lanes(workload, target))
    plan = initial_pipeline(graph, target, 2).plan
    stage = plan.task_stage(graph.num_tasks)
    direct = same_stage_transfers(graph, plan.schedule, stage)
    assert direct, "the test needs same-stage transfers"
    cuts = UnitCuts(graph, target, QUANTUM_NS)
    simulated = simulate_rendezvous(
        graph, target.step_timing(), plan.schedule, plan.schedule.start_ns, direct, cuts
    ).entries()
    _, realization = pipeline_events(graph, target, plan.schedule, stage)
    edge_of = {
        (u, v): e for e, (u, v) in enumerate(zip(graph.edge_src, graph.edge_dst, strict=True))
    }
    cut = 0
    for core, (steps, owners, parts) in enumerate(
        zip(realization.cores, realization.tasks, realization.parts, strict=True)
    ):
        realized: list[tuple[object, ...]] = []
        for step, who, part in zip(steps, owners, parts, strict=True):
            if isinstance(step, (Send, Recv)):
                realized.append(("transfer", edge_of[who]))
            elif isinstance(step, Compute):
                realized.extend(("unit", t, p) for t, p in zip(who, part, strict=True))
                assert step.ns == sum(cuts(t, core)[p] for t, p in zip(who, part, strict=True))
        expected = [
            ("unit", e.task, e.part) if e.action is Action.TASK else ("transfer", e.edge)
            for e in simulated[core]
        ]
        assert realized == expected, f"core {core}"
        cut += sum(1 for x in realized if x[0] == "unit" and x[2] != (0, 0))
    if model == MNIST8:
        assert cut, "mnist8's long matrix tasks are cut into units"


def test_without_step_timing_a_transfer_sits_at_its_producers_finish() -> None:
    # A (core 0, 0..10) feeds B on core 1, which first runs F (0..15). The receive
    # sits at A's finish, after F: core 1 does not idle waiting for A before F.
    graph = ComputeGraph(
        names=("A", "F", "B"),
        cost=np.array([10, 15, 5]),
        edge_src=np.array([0]),
        edge_dst=np.array([2]),
        edge_bytes=np.array([4]),
    )
    schedule = Schedule(
        core_order=((0,), (1, 2)),
        start_ns=np.array([0, 0, 15]),
        scheduler="pipeline",
        stage=(0, 0),
    )
    realization = realize_pipeline(graph, schedule, np.zeros(3, dtype=np.int64))
    assert realization.cores[0] == [Compute(10), Send(1, 4)]
    assert realization.cores[1] == [Compute(15), Recv(0, 4), Compute(5)]
