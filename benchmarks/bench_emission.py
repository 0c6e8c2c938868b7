"""Emission time against program size: order, lower + allocate, deadlock check, write.

Usage::

    python benchmarks/bench_emission.py [--models lenet5 mobilenetv2 resnet18 resnet50]
        [--target arch-a] [--pipeline resnet18] [--depth 4]
        [--out benchmarks/results/emission_<date>.md]

Each model (``tests/data/models/<name>.onnx``) is compiled for latency (PEFT,
default lanes; not timed), then the emission steps of ``compile --emit`` are
timed one by one in CPU seconds (``time.process_time``, steadier than wall
time on a shared machine; the wall total is given too): the rendezvous order
(`raptor_cp.emit.latency_order`), lowering with local-memory allocation
(`raptor_cp.emit.lower`), the static deadlock check
(`raptor_cp.emit.rendezvous`), the compile's prediction of the program (event
graph, single pass and, for pipelines, the queue interval) and writing
``program.json.gz`` with its config. The ``--pipeline`` models are also
emitted at ``--depth``. The log-log slope of the emission CPU time (order +
lower + check + write) against the instruction count over the latency rows is
printed (1 is linear).
"""

from __future__ import annotations

import argparse
import datetime
import math
import pathlib
import tempfile
import time
from typing import Any

import numpy as np
from bench_scaling import machine_info

from raptor_cp import flows
from raptor_cp.emit.files import write_emission
from raptor_cp.emit.latency_order import latency_items
from raptor_cp.emit.lower import lower_program
from raptor_cp.emit.order import item_steps, pipeline_items, with_baseline
from raptor_cp.emit.program import EmittedProgram
from raptor_cp.emit.rendezvous import check_rendezvous
from raptor_cp.periodic.analysis import dependency_finish
from raptor_cp.periodic.events import build_events
from raptor_cp.periodic.queue_engine import run_queue
from raptor_cp.periodic.rendezvous_order import QUANTUM_NS, UnitCuts
from raptor_cp.periodic.single_pass import single_pass
from raptor_cp.pipeline.realize import COPIES, target_realization

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent


def _timed(phase: str, times: dict[str, float], action: Any) -> Any:
    began = time.process_time()
    value = action()
    times[phase] = time.process_time() - began
    return value


def measure(result: flows.CompileResult) -> dict[str, Any]:
    """Time the emission steps of one compile result."""
    graph, target = result.problem.graph, result.problem.target
    times: dict[str, float] = {}
    wall = time.perf_counter()
    cuts = UnitCuts(graph, target, QUANTUM_NS)
    if isinstance(result, flows.LatencyResult):
        schedule = result.solution.schedule
        starts = result.evaluation.start_ns
        items = _timed(
            "order",
            times,
            lambda: with_baseline(graph, latency_items(graph, target, schedule, starts, cuts)),
        )
        looping, mode = False, "latency"
    else:
        plan = result.solution.plan

        def order() -> Any:
            stage = plan.task_stage(graph.num_tasks)
            realization = target_realization(graph, target, plan.schedule, stage, cuts)
            return with_baseline(graph, pipeline_items(graph, realization))

        items = _timed("order", times, order)
        looping, mode = True, "pipeline"
    generations = COPIES if looping else 1
    lowered = _timed("lower", times, lambda: lower_program(graph, target, items, generations))
    check = _timed("check", times, lambda: check_rendezvous(lowered.cores, looping))

    def predict() -> tuple[int | None, float | None]:
        events = build_events(item_steps(items, cuts), target.step_timing(), "bench")
        interval = run_queue(events).interval_ns if looping else None
        return single_pass(events, dependency_finish(events)).latency_ns, interval

    single, interval = _timed("predict", times, predict)
    prediction = {"realized_single_pass_ns": single, "realized_queue_interval_ns": interval}
    prediction["schedule_interval_ns"] = getattr(result, "interval_ns", None)
    program = EmittedProgram(mode, generations, target, lowered, check, prediction)
    with tempfile.TemporaryDirectory() as folder:
        _timed(
            "write",
            times,
            lambda: write_emission(program, pathlib.Path(folder) / "e", "json", {}),
        )
    emission = times["order"] + times["lower"] + times["check"] + times["write"]
    return {
        "model": result.prepared.model,
        "mode": mode,
        "tasks": graph.num_tasks,
        "instructions": lowered.instructions,
        **{k: round(v, 2) for k, v in times.items()},
        "emission_s": round(emission, 2),
        "wall_s": round(time.perf_counter() - wall, 2),
        "us_per_instruction": round(1e6 * emission / lowered.instructions, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--models", nargs="+", default=["lenet5", "mobilenetv2", "resnet18", "resnet50"]
    )
    parser.add_argument("--target", default="arch-a")
    parser.add_argument("--pipeline", nargs="*", default=["resnet18"])
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--out", type=pathlib.Path)
    args = parser.parse_args()
    models = ROOT / "tests" / "data" / "models"
    rows = [measure(flows.compile(models / f"{m}.onnx", args.target)) for m in args.models]
    rows += [
        measure(flows.compile(models / f"{m}.onnx", args.target, pipeline=args.depth))
        for m in args.pipeline
    ]
    latency = [r for r in rows if r["mode"] == "latency"]
    x = np.log([r["instructions"] for r in latency])
    y = np.log([max(r["emission_s"], 1e-3) for r in latency])
    slope = float(np.polyfit(x, y, 1)[0]) if len(latency) > 1 else math.nan
    columns = [
        "model", "mode", "tasks", "instructions", "order", "lower", "check", "predict",
        "write", "emission_s", "wall_s", "us_per_instruction",
    ]  # fmt: skip
    command = ["--models", *args.models, "--target", args.target]
    command += ["--pipeline", *args.pipeline, "--depth", str(args.depth)]
    lines = [
        f"# Emission time on {args.target}",
        "",
        f"Measured {datetime.date.today()} (CPU seconds per step; wall_s is the whole) with",
        "",
        "```bash",
        "python benchmarks/bench_emission.py " + " ".join(command),
        "```",
        "",
        machine_info(),
        "",
        "| " + " | ".join(columns) + " |",
        "|" + "---|" * len(columns),
        *("| " + " | ".join(str(r[c]) for c in columns) + " |" for r in rows),
        "",
        f"Log-log slope of emission CPU seconds against instructions (latency rows): {slope:.2f}",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out is not None:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
