"""Periodic diagnostics of realized pipeline schedules on the shipped models.

Usage::

    python benchmarks/bench_periodic_pipeline.py [--models resnet50 ...] [--targets arch-a pimcomp]
        [--depths 2 4 8] [--out benchmarks/results/periodic_pipeline_<date>.md]

For every model of ``tests/data/models`` that fits the target (vgg16 and
vit_b16 do not fit arch-a or pimcomp and are skipped) and every depth: the
initial pipeline schedule (`initial_pipeline`), its realization as an event
graph (`pipeline_events`), the recurrence by Howard's policy iteration and by
bisection (both timed, ``time.perf_counter``, one run each), and the queue
engine in both tie orders (`queue_estimate`: time, status or reason,
generations, processed events, interval). The log-log slope of queue time and
Howard time against ``V + E`` is fitted over all rows (1 is linear growth).
The machine may be shared: compare rows of one run.
"""

from __future__ import annotations

import argparse
import datetime
import pathlib
import time

import numpy as np
from bench_scaling import machine_info

from raptor_cp.errors import RaptorError
from raptor_cp.flows import prepare
from raptor_cp.periodic import DeadlockError, maximum_cycle_ratio
from raptor_cp.periodic.queue_engine import queue_estimate
from raptor_cp.pipeline.initial import initial_pipeline
from raptor_cp.pipeline.realize import pipeline_events

HERE = pathlib.Path(__file__).resolve().parent
MODELS = HERE.parent / "tests" / "data" / "models"
DEFAULT_MODELS = ("lenet5", "mobilenetv2", "resnet18", "resnet50", "vit_b16_1layer")
"""The shipped models that fit arch-a and pimcomp (vgg16, vit_b16 do not)."""


def _timed(function, *args):  # type: ignore[no-untyped-def]
    began = time.perf_counter()
    value = function(*args)
    return value, time.perf_counter() - began


def _ratio(graph, method: str) -> tuple[str, float]:  # type: ignore[no-untyped-def]
    began = time.perf_counter()
    try:
        result = maximum_cycle_ratio(graph, method)
        text = "acyclic" if result is None else f"{float(result.ratio):.1f}"
    except DeadlockError:
        text = "deadlock"
    return text, time.perf_counter() - began


def row(model: str, target_name: str, depth: int) -> dict[str, object]:
    """One benchmark row (see the module docstring)."""
    prepared = prepare(MODELS / f"{model}.onnx", target_name)
    graph, target = prepared.graph, prepared.target
    try:
        result, plan_s = _timed(initial_pipeline, graph, target, depth)
    except RaptorError as error:
        return {"model": model, "target": target_name, "depth": depth, "error": str(error)}
    plan = result.plan
    stage = plan.task_stage(graph.num_tasks)
    (events, _), build_s = _timed(pipeline_events, graph, target, plan.schedule, stage)
    recurrence = events.recurrence_graph
    howard, howard_s = _ratio(recurrence, "howard")
    bisection, bisection_s = _ratio(recurrence, "bisection")
    queue, queue_s = _timed(queue_estimate, events)
    run = queue.run
    return {
        "model": model,
        "target": target_name,
        "depth": depth,
        "tasks": graph.num_tasks,
        "stages": len(plan.stages),
        "V": events.num_events,
        "E": events.num_edges,
        "plan_s": plan_s,
        "build_s": build_s,
        "howard": howard,
        "howard_s": howard_s,
        "bisection": bisection,
        "bisection_s": bisection_s,
        "queue": run.status if run.reason is None else f"{run.status}: {run.reason}",
        "generations": run.generations,
        "processed": run.processed_events,
        "queue_interval": run.interval_ns,
        "reversed": queue.alternative_tie_interval_ns,
        "queue_s": queue_s,
        "core_work": int(events.core_work.max()),
        "memory": events.memory_service_ns,
        "schedule_interval": plan.interval_ns,
    }


def _slope(rows: list[dict[str, object]], key: str) -> str:
    pairs = [(r["V"] + r["E"], r[key]) for r in rows if "error" not in r and r[key] > 0]  # type: ignore[operator]
    if len(pairs) < 2:
        return "n/a"
    x, y = (np.log(np.array(c, dtype=float)) for c in zip(*pairs, strict=True))
    return f"{np.polyfit(x, y, 1)[0]:.2f}"


def _fmt(value: object) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.2f}" if value < 1000 else f"{value:.0f}"
    return str(value)


COLUMNS = [
    "model",
    "target",
    "depth",
    "tasks",
    "stages",
    "V",
    "E",
    "plan_s",
    "build_s",
    "howard",
    "howard_s",
    "bisection",
    "bisection_s",
    "queue",
    "generations",
    "processed",
    "queue_interval",
    "reversed",
    "queue_s",
    "core_work",
    "memory",
    "schedule_interval",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(DEFAULT_MODELS))
    parser.add_argument("--targets", nargs="+", default=["arch-a", "pimcomp"])
    parser.add_argument("--depths", nargs="+", type=int, default=[2, 4, 8])
    parser.add_argument("--out", type=pathlib.Path)
    args = parser.parse_args()
    rows = []
    for target in args.targets:
        for model in args.models:
            for depth in args.depths:
                rows.append(row(model, target, depth))
                print({k: _fmt(v) for k, v in rows[-1].items()}, flush=True)
    lines = [
        "# Periodic diagnostics of realized pipeline schedules",
        "",
        machine_info(),
        "",
        "Times in seconds; intervals, core work and memory service in ns. `howard` / "
        "`bisection`: the recurrence (maximum cycle ratio); `queue`: the index-order run's "
        "status (reason when unavailable); `reversed`: `alternative_tie_interval_ns`; "
        "`memory`: controller service per generation; `schedule_interval`: the pipeline "
        "schedule's own estimate.",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | {r['target']} | {r['depth']} | error: {r['error']} |")
        else:
            lines.append("| " + " | ".join(_fmt(r[c]) for c in COLUMNS) + " |")
    lines += [
        "",
        f"Log-log slope against V + E: queue engine {_slope(rows, 'queue_s')}, "
        f"Howard {_slope(rows, 'howard_s')}, bisection {_slope(rows, 'bisection_s')}.",
    ]
    text = "\n".join(lines) + "\n"
    if args.out is None:
        stamp = datetime.date.today().isoformat()
        args.out = HERE / "results" / f"periodic_pipeline_{stamp}.md"
    args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
