"""What the cost model gives the shipped models: latency, pipeline interval, periodic estimate.

Usage::

    python benchmarks/bench_cost_model.py [--models lenet5 resnet18 ...] [--target arch-a]
        [--depth 4] [--out benchmarks/results/cost_model_<label>.md]
    python benchmarks/bench_cost_model.py --memory-terms [--models ...]

For every model (ONNX files of ``tests/data/models`` and PIMCOMP-NN node lists
of ``tests/data/pimcomp``, named by file stem) on one target: the PEFT latency
makespan (`compile_latency`), the selected pipeline schedule's interval
estimate at ``--depth`` with its binding term, memory-service term and that
term's baseline part (`compile_pipeline`), and that schedule's periodic
diagnostic (the interval estimate, the queue engine's interval and, where the
report has it, the ``memory_controller`` estimate, `pipeline_periodic`). It is the
before/after table of issue 17 (docs/benchmarks.md, "Cost model corrections"):
run it on two checkouts and compare rows. Wall times are for orientation only;
the machine may be shared.

``--memory-terms`` prices the selected schedule's cross-stage boundary three
ways on one checkout, to attribute the change of the memory term: whole-request
prices (``global_read_ns``/``global_write_ns``) with publication sizes estimated
from consumer reads (the old rule), the memory controller's service with the
same sizes, and the controller's service with whole source fragments (the
seeds' rules, `boundary_demand`).
"""

from __future__ import annotations

import argparse
import dataclasses
import pathlib
import time
from typing import Any

import numpy as np
from bench_scaling import machine_info

from raptor_cp.errors import RaptorError
from raptor_cp.flows import compile_latency, compile_pipeline, prepare
from raptor_cp.pipeline.boundary import controller_prices, priced, publication_bytes

HERE = pathlib.Path(__file__).resolve().parent
DATA = HERE.parent / "tests" / "data"
DEFAULT_MODELS = ("lenet5", "mobilenetv2", "resnet18", "resnet50", "vit_b16_1layer", "mnist8")
"""Shipped models that fit arch-a (ONNX, then PIMCOMP-NN's mnist8)."""


def model_path(name: str) -> pathlib.Path:
    """The shipped file of model ``name`` (ONNX first, then PIMCOMP-NN JSON)."""
    for candidate in (DATA / "models" / f"{name}.onnx", DATA / "pimcomp" / f"{name}.json"):
        if candidate.exists():
            return candidate
    raise SystemExit(f"error: no shipped model named {name}")


def _get(document: dict[str, Any] | None, *keys: str) -> Any:
    value: Any = document
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def row(name: str, target: str, depth: int) -> dict[str, Any]:
    """One table row (module docstring)."""
    began = time.perf_counter()
    prepared = prepare(model_path(name), target)
    out: dict[str, Any] = {"model": name, "tasks": prepared.graph.num_tasks}
    try:
        out["makespan_ns"] = compile_latency(prepared).makespan_ns
    except RaptorError as error:
        out["makespan_ns"] = f"error: {error}"
    try:
        result = compile_pipeline(prepared, depth, periodic=True)
    except RaptorError as error:
        out["interval_ns"] = f"error: {error}"
        return out
    estimate = result.summary()["interval"]
    document = result.periodic
    out.update(
        interval_ns=estimate["interval_ns"],
        binding=estimate["binding"],
        memory_service_ns=estimate["memory_service_ns"],
        baseline_memory_ns=estimate.get("baseline_memory_ns"),
        stages=len(result.solution.plan.stages),  # type: ignore[union-attr]
        periodic_ns=_get(document, "interval_estimate", "ns"),
        periodic_bound_by=_get(document, "interval_estimate", "bound_by"),
        queue_ns=_get(document, "queue", "interval_ns"),
        controller_queue_ns=_get(document, "memory_controller", "interval_ns"),
        wall_s=time.perf_counter() - began,
    )
    return out


def memory_terms(name: str, target: str, depth: int) -> str:
    """The three boundary prices of the selected schedule (module docstring), one line."""
    prepared = prepare(model_path(name), target)
    graph, chip = prepared.graph, prepared.target
    plan = compile_pipeline(prepared, depth).solution.plan
    assert plan is not None
    stage = plan.task_stage(graph.num_tasks)
    cross = np.flatnonzero(stage[graph.edge_src] != stage[graph.edge_dst])
    writers = np.unique(graph.edge_src[cross])
    estimated = publication_bytes(dataclasses.replace(graph, output_bytes=None))[writers]
    loads = graph.edge_bytes[cross]
    read, write = controller_prices(chip)
    whole = priced(loads, chip.global_read_ns).sum() + priced(estimated, chip.global_write_ns).sum()
    controller = priced(loads, read).sum() + priced(estimated, write).sum()
    return (
        f"| {name} | {len(plan.stages)} | {int(whole):,} | {int(controller):,} | "
        f"{plan.boundary.service_ns:,} | {plan.baseline.service_ns:,} |"
    )


COLUMNS = (
    "model",
    "tasks",
    "makespan_ns",
    "stages",
    "interval_ns",
    "binding",
    "memory_service_ns",
    "baseline_memory_ns",
    "periodic_ns",
    "periodic_bound_by",
    "queue_ns",
    "controller_queue_ns",
    "wall_s",
)


def _fmt(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.1f}" if value >= 100 else f"{value:.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(DEFAULT_MODELS))
    parser.add_argument("--target", default="arch-a")
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--out", type=pathlib.Path)
    parser.add_argument("--memory-terms", action="store_true")
    args = parser.parse_args()
    if args.memory_terms:
        print("| model | stages | whole requests, read sizes | controller, read sizes | "
              "controller, whole fragments | baseline |")  # fmt: skip
        print("|---|---:|---:|---:|---:|---:|")
        for name in args.models:
            print(memory_terms(name, args.target, args.depth), flush=True)
        return
    lines = [
        f"# Cost model figures on {args.target}, pipeline depth {args.depth}",
        "",
        machine_info(),
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    for name in args.models:
        values = row(name, args.target, args.depth)
        lines.append("| " + " | ".join(_fmt(values.get(c)) for c in COLUMNS) + " |")
        print(lines[-1], flush=True)
    if args.out is not None:
        args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
