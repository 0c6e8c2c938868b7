"""What the cost model gives the shipped models: latency, pipeline interval, periodic estimate.

Usage::

    python benchmarks/bench_cost_model.py [--models lenet5 resnet18 ...] [--target arch-a]
        [--depth 4] [--out benchmarks/results/cost_model_<label>.md]

For every model (ONNX files of ``tests/data/models`` and PIMCOMP-NN node lists
of ``tests/data/pimcomp``, named by file stem) on one target: the PEFT latency
makespan (`compile_latency`), the selected pipeline schedule's interval
estimate at ``--depth`` with its binding term and memory-service term
(`compile_pipeline`), and that schedule's periodic diagnostic (the interval
estimate and the queue engine's interval, `pipeline_periodic`). It is the
before/after table of issue 17 (docs/benchmarks.md, "Cost model corrections"):
run it on two checkouts and compare rows. Wall times are for orientation only;
the machine may be shared.
"""

from __future__ import annotations

import argparse
import pathlib
import time
from typing import Any

from bench_scaling import machine_info

from raptor_cp.errors import RaptorError
from raptor_cp.flows import compile_latency, compile_pipeline, prepare

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
        stages=len(result.solution.plan.stages),  # type: ignore[union-attr]
        periodic_ns=_get(document, "interval_estimate", "ns"),
        periodic_bound_by=_get(document, "interval_estimate", "bound_by"),
        queue_ns=_get(document, "queue", "interval_ns"),
        wall_s=time.perf_counter() - began,
    )
    return out


COLUMNS = (
    "model",
    "tasks",
    "makespan_ns",
    "stages",
    "interval_ns",
    "binding",
    "memory_service_ns",
    "periodic_ns",
    "periodic_bound_by",
    "queue_ns",
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
    args = parser.parse_args()
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
