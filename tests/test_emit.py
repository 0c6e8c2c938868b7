"""``compile --emit``: pimsim-nn programs that read back, round-trip and cannot deadlock."""

from __future__ import annotations

import gzip
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner, Result

from raptor_cp import flows
from raptor_cp.cli import main
from raptor_cp.cli.compile import summary_line
from raptor_cp.emit.files import write_emission
from raptor_cp.emit.program import EmittedProgram
from raptor_cp.graph import ComputeGraph
from raptor_cp.pipeline.plan import PipelinePlan
from raptor_cp.reports.output import format_ns
from raptor_cp.targets.base import SchedulingTarget
from raptor_cp.targets.pim.artifact import TIMING_FIELDS, load_artifact
from raptor_cp.targets.pim.isa import COLUMN, MVMUL, SCALAR, SETBW, VECTOR

DATA = Path(__file__).parent / "data"
LENET = DATA / "models" / "lenet5.onnx"


def run(*args: object) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture(scope="module")
def lenet_latency() -> flows.LatencyResult:
    result = flows.compile(LENET, "arch-a", emit=True)
    assert isinstance(result, flows.LatencyResult)
    return result


@pytest.fixture(scope="module")
def lenet_pipeline() -> flows.PipelineResult:
    result = flows.compile(LENET, "arch-a", pipeline=2, emit=True)
    assert isinstance(result, flows.PipelineResult)
    return result


def test_a_pipeline_compile_predicts_the_program_it_would_emit(
    lenet_pipeline: flows.PipelineResult,
) -> None:
    """Without ``--emit`` the compile predicts the program ``--emit`` writes: the plan with
    the baseline requests placed, which the selection's estimate leaves out."""
    plain = flows.compile(LENET, "arch-a", pipeline=2)
    assert isinstance(plain, flows.PipelineResult) and plain.program is None
    prediction = emitted(lenet_pipeline).prediction
    assert plain.plan.task_stage(plain.problem.graph.num_tasks).tolist() == (
        lenet_pipeline.plan.task_stage(lenet_pipeline.problem.graph.num_tasks).tolist()
    )
    assert plain.prediction == {k: v for k, v in prediction.items() if "single" not in k}
    assert plain.program_interval_ns == prediction["realized_queue_interval_ns"] is not None
    assert plain.program_interval_reason is None
    summary = plain.summary()
    assert summary["program_interval_ns"] == plain.program_interval_ns
    assert summary["interval_ns"] == prediction["schedule_interval_ns"]
    line = summary_line({**summary, "out": "o"})
    assert f"(queue estimate; program {format_ns(plain.program_interval_ns)}; " in line
    # A program whose queue run does not converge has no interval; the reason says why
    # and the summary line leaves the figure out.
    reason = "processed-event bound 100 = 16(V+E) reached after 3 generation(s)"
    unconverged = {"realized_queue_interval_ns": None, "realized_queue_reason": reason}
    stalled = replace(plain, prediction={**prediction, **unconverged})
    assert (stalled.program_interval_ns, stalled.program_interval_reason) == (None, reason)
    assert "program" not in summary_line({**stalled.summary(), "out": "o"})


def emitted(result: flows.CompileResult) -> EmittedProgram:
    assert result.program is not None
    return result.program


def test_a_core_loads_each_shared_constant_once() -> None:
    # LeNet-5's convolution lanes read their bias whole: one piece per operation,
    # which some of the 8 cores read for several lanes. A latency program makes no
    # boundary loads, so its `ld`s are the baseline loads left after folding, core
    # by core, as the selection counts them.
    from raptor_cp.pipeline.baseline import baseline_demand
    from raptor_cp.targets.pim.isa import LD

    result = flows.compile_latency(flows.prepare(LENET, "arch-a", cores=8), emit=True)
    graph, target = result.prepared.graph, result.prepared.target
    core = result.solution.schedule.core
    base = graph.baseline
    kept = base.first_loads(core)
    loads = core[base.task[kept & ~base.write]]
    expected = np.bincount(loads, minlength=target.cores)
    program = emitted(result).lowered.cores
    made = [int((program[c].op == LD).sum()) if c in program else 0 for c in range(target.cores)]
    assert made == expected.tolist()
    demand = baseline_demand(graph, target, core)
    assert demand.loads == sum(made) and demand.folded_loads > 0


@pytest.mark.parametrize("fmt", ["json", "dir", "pim"])
def test_every_format_reads_back_as_the_emitted_instructions(
    lenet_latency: flows.LatencyResult, tmp_path: Path, fmt: str
) -> None:
    program = emitted(lenet_latency)
    files = write_emission(program, tmp_path / "e", fmt, {"model": "lenet5"})
    artifact = load_artifact(tmp_path / "e" / files[0])
    assert artifact.core_cnt == 168
    assert sorted(c for c, p in artifact.cores.items() if len(p)) == sorted(program.lowered.cores)
    timing = [COLUMN[f] for f in TIMING_FIELDS]
    for core, expected in program.lowered.cores.items():
        got = artifact.cores[core]
        assert np.array_equal(got.op, expected.op)
        assert np.array_equal(got.values[:, timing], expected.values[:, timing])
        assert tuple(artifact.array_group_map[core]) == program.lowered.array_group_map[core]


def test_emission_is_byte_identical_across_runs(
    lenet_latency: flows.LatencyResult, tmp_path: Path
) -> None:
    again = flows.compile(LENET, "arch-a", emit=True)
    write_emission(emitted(lenet_latency), tmp_path / "a", "json", {})
    write_emission(emitted(again), tmp_path / "b", "json", {})
    for name in ("program.json.gz", "config.json", "network.json", "emission.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_every_core_sets_precision_first_and_ends_in_the_reorder_buffer(
    lenet_pipeline: flows.PipelineResult,
) -> None:
    for program in emitted(lenet_pipeline).lowered.cores.values():
        op = program.op
        computes = np.flatnonzero(np.isin(op, [MVMUL, *VECTOR]))
        if computes.size:
            assert SETBW in op[: computes[0]].tolist()
        assert int(op[-1]) not in SCALAR


def test_mvmul_groups_follow_the_placed_weights(lenet_latency: flows.LatencyResult) -> None:
    result = lenet_latency
    program = emitted(result)
    graph, schedule = result.problem.graph, result.solution.schedule
    assert schedule is not None
    for core, instructions in program.lowered.cores.items():
        used = {
            graph.task_weights[t][0] for t in schedule.core_order[core] if graph.task_weights[t]
        }
        groups = program.lowered.array_group_map[core]
        assert sorted(groups) == sorted(int(graph.weight_size[w]) for w in used)
        mvmul = instructions.op == MVMUL
        assert set(instructions.column("group")[mvmul].tolist()) == set(range(len(groups)))


@pytest.mark.parametrize("pipeline", [None, 2])
def test_periodic_on_the_emission_directory_round_trips(
    tmp_path: Path, pipeline: int | None
) -> None:
    depth = ["--pipeline", pipeline] if pipeline else []
    out, emit = tmp_path / "out", tmp_path / "emit"
    result = run("compile", LENET, *depth, "--out", out, "--emit", emit, "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["emission"]["out"] == str(emit)
    periodic = run("periodic", emit, "--json")
    assert periodic.exit_code == 0, periodic.output
    trip = json.loads(periodic.stdout)["round_trip"]
    assert trip["holds"] is True
    assert abs(trip["difference_percent"]) <= 2
    assert trip["schedule_ns"] == (summary["interval_ns"] if pipeline else summary["makespan_ns"])
    text = run("periodic", emit).stdout
    assert "(holds within 2%)" in text


def test_throughput_config_loops_long_enough(lenet_pipeline: flows.PipelineResult) -> None:
    from raptor_cp.emit.files import chip_files

    program = emitted(lenet_pipeline)
    config, network = chip_files(program)
    interval = program.prediction["realized_queue_interval_ns"]
    assert isinstance(interval, int)  # whole ns rounded up, as a candidate's estimate
    assert config["sim_config"]["sim_mode"] == 0
    assert config["sim_config"]["sim_time"] * 1e6 >= 8 * interval
    assert config["chip_config"]["network_config"]["net_config_file_path"] == "network.json"
    # arch-a names no table: the mesh model, 2 * hops + 2 ns per flit, and 4 ns to memory.
    assert network["latency"]["0"]["1"] == 4 and network["latency"]["0"]["15"] == 6
    assert network["latency"]["0"]["-10"] == 4 and network["energy"] == {}


def test_pipeline_selection_records_the_backend_attempt(
    lenet_pipeline: flows.PipelineResult,
) -> None:
    from raptor_cp.reports.pipeline_selection import selection_document

    attempts = selection_document(lenet_pipeline)["backend_attempts"]
    assert attempts == [
        {"candidate": 0, "label": "initial partition", "result": "emitted", "cause": None}
    ]


def test_a_rejected_selection_emits_the_next_costed_candidate_with_its_queue_estimate(
    lenet_pipeline: flows.PipelineResult, monkeypatch: pytest.MonkeyPatch
) -> None:
    from raptor_cp.emit import program as emit_program
    from raptor_cp.emit.allocate import BackendResourceError
    from raptor_cp.emit.program import emit_pipeline_plan

    selection = lenet_pipeline.solution.selection
    assert selection is not None
    order = selection.backend_order()
    assert order[0] is selection.selected and len(order) > 1
    real = emit_program.emit_pipeline

    def reject_the_selected(
        graph: ComputeGraph, target: SchedulingTarget, plan: PipelinePlan, interval: int | None
    ) -> EmittedProgram:
        if plan is selection.selected.plan:
            raise BackendResourceError("core 0: local memory exhausted (test)")
        return real(graph, target, plan, interval)

    monkeypatch.setattr(emit_program, "emit_pipeline", reject_the_selected)
    problem = lenet_pipeline.problem
    assert lenet_pipeline.solution.plan is selection.selected.plan
    solution, program, attempts = emit_pipeline_plan(
        problem.graph, problem.target, lenet_pipeline.solution
    )
    assert [a.result for a in attempts] == ["rejected", "emitted"]
    assert attempts[1].candidate == order[1].index
    assert solution.plan is order[1].plan and solution.objective == order[1].estimate_ns
    assert program.prediction["schedule_interval_ns"] == order[1].estimate_ns


def small_memory_config(tmp_path: Path, memory: int) -> Path:
    preset = Path(flows.__file__).parent / "targets" / "presets" / "arch-a.json"
    config = json.loads(preset.read_text())
    config["chip_config"]["core_config"]["local_memory_config"]["memory_size"] = memory
    path = tmp_path / "small.json"
    path.write_text(json.dumps(config))
    return path


def test_a_pipeline_that_fits_no_local_memory_lists_every_attempt(tmp_path: Path) -> None:
    config = small_memory_config(tmp_path, 256)
    out = tmp_path / "out"
    args = (
        "compile",
        LENET,
        "-t",
        config,
        "--pipeline",
        "2",
        "--out",
        out,
        "--emit",
        tmp_path / "e",
    )
    result = run(*args)
    assert result.exit_code == 2
    report = tmp_path / "out.failed" / "reports" / "pipeline_selection.json"
    document = json.loads(report.read_text())
    costed = [c["index"] for c in document["candidates"] if c["queue_estimate_ns"] is not None]
    assert result.stderr.splitlines()[-1].startswith(
        f"error: lenet5: no costed candidate passed the backend ({len(costed)} attempted): "
        "candidate 0 (initial partition): core "
    )
    assert result.stderr.rstrip().endswith(f"; see {report}")
    attempts = document["backend_attempts"]
    assert sorted(a["candidate"] for a in attempts) == sorted(costed)
    assert attempts[0]["candidate"] == document["selection"]["selected"]
    assert all(a["result"] == "rejected" for a in attempts)
    assert all("local memory exhausted" in a["cause"] for a in attempts)
    assert not (tmp_path / "e").exists() and not out.exists()


def test_a_latency_schedule_that_fits_no_local_memory_fails_in_one_line(tmp_path: Path) -> None:
    config = small_memory_config(tmp_path, 256)
    result = run("compile", LENET, "-t", config, "--out", tmp_path / "o", "--emit", tmp_path / "e")
    assert result.exit_code == 2
    (line,) = [x for x in result.stderr.splitlines() if x.startswith("error:")]
    assert line.startswith("error: core 0: local memory exhausted at program position 1: ")
    assert not (tmp_path / "o").exists() and not (tmp_path / "e").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("-t", "generic:4"),
            "error: --emit writes pimsim-nn programs and needs a pimsim-nn target",
        ),
        (("--emit-format", "dir"), "error: --emit-format needs --emit DIR"),
    ],
)
def test_emit_option_errors(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    emit = () if "--emit-format" in args else ("--emit", tmp_path / "e")
    result = run("compile", LENET, *args, "--out", tmp_path / "o", *emit)
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1].startswith(message)


def test_emit_directory_must_differ_from_out(tmp_path: Path) -> None:
    result = run("compile", LENET, "--out", tmp_path / "o", "--emit", tmp_path / "o")
    assert result.exit_code == 2
    assert result.stderr == f"error: --emit {tmp_path / 'o'} must differ from --out\n"


def test_gzip_program_starts_with_its_config(
    lenet_latency: flows.LatencyResult, tmp_path: Path
) -> None:
    write_emission(emitted(lenet_latency), tmp_path / "e", "json", {})
    with gzip.open(tmp_path / "e" / "program.json.gz", "rt") as handle:
        head = handle.read(40)
    assert head.startswith('{"config":{"array_group_map": {"core0": ')


def test_the_pipeline_round_trip_reads_the_larger_tie_order() -> None:
    from raptor_cp.emit.round_trip import program_figure

    both = {"memory_controller": {"interval_ns": 10.0, "alternative_tie_interval_ns": 12.5}}
    assert program_figure("pipeline", both) == 12.5
    one = {"memory_controller": {"interval_ns": 10.0, "alternative_tie_interval_ns": None}}
    assert program_figure("pipeline", one) is None


def test_unrolled_items_alternate_copies_and_register_sets() -> None:
    from raptor_cp.emit.order import Item, ItemKind, unrolled

    producer = [
        Item(ItemKind.TASK, task=0),
        Item(ItemKind.STORE, task=0, nbytes=8),
        Item(ItemKind.SIGNAL, peer=1, register=0),
        Item(ItemKind.STORE, task=0, nbytes=4, request=3),  # a network output: one address
        Item(ItemKind.WAIT, register=1, count=1),
    ]
    reader = [Item(ItemKind.WAIT, register=0, count=1), Item(ItemKind.LOAD, edge=0, nbytes=8)]
    first, second = unrolled([producer, reader], 2)
    assert unrolled([producer, reader], 1) == [producer, reader]
    assert first[:5] == [
        *producer[:2],
        Item(ItemKind.SIGNAL, peer=1, register=0),
        producer[3],
        Item(ItemKind.WAIT, register=2, count=1),
    ]
    assert first[5:] == [
        producer[0],
        Item(ItemKind.STORE, task=0, nbytes=8, copy=1),
        Item(ItemKind.SIGNAL, peer=1, register=1),
        producer[3],
        Item(ItemKind.WAIT, register=3, count=1),
    ]
    assert second == [
        Item(ItemKind.WAIT, register=0, count=1),
        reader[1],
        Item(ItemKind.WAIT, register=1, count=1),
        Item(ItemKind.LOAD, edge=0, nbytes=8, copy=1),
    ]


def test_a_pipeline_program_runs_two_generations_on_two_copies(
    lenet_pipeline: flows.PipelineResult,
) -> None:
    from raptor_cp.emit.lower import global_key, lower_program
    from raptor_cp.emit.order import ItemKind, pipeline_items, unrolled, with_baseline
    from raptor_cp.pipeline.realize import pipeline_events
    from raptor_cp.targets.pim.isa import SYNC, WAIT

    program = emitted(lenet_pipeline)
    assert program.report()["generations_per_round"] == 2
    problem, plan = lenet_pipeline.problem, lenet_pipeline.plan
    graph = problem.graph
    stage = plan.task_stage(graph.num_tasks)
    _, realization = pipeline_events(graph, problem.target, plan.schedule, stage)
    items = with_baseline(graph, pipeline_items(graph, realization))
    piece = graph.baseline.piece.tolist()
    stored = {
        global_key(i, piece)
        for core in unrolled(items, 2)
        for i in core
        if i.kind is ItemKind.STORE
    }
    publications = {k for k in stored if k[0] == "publication"}
    assert publications and {k[2] for k in publications} == {0, 1}
    assert len(publications) == 2 * len({k[1] for k in publications})
    # Local buffers die with their generation: both copies reuse one allocation.
    single = lower_program(graph, problem.target, items)
    assert program.lowered.local_peak_bytes == single.local_peak_bytes
    assert program.lowered.global_bytes > single.global_bytes
    for c, core_items in enumerate(items):
        ops = program.lowered.cores[c].op if c in program.lowered.cores else np.array([])
        events = [i for i in core_items if i.kind in (ItemKind.SIGNAL, ItemKind.WAIT)]
        assert int(np.isin(ops, [SYNC, WAIT]).sum()) == 2 * len(events)
