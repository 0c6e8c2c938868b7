"""Lowering time and graph size of every shipped ONNX model on a target, and HEFT time.

Usage::

    python benchmarks/bench_lowering.py [--target arch-a] [--repeat 3]

Prints one Markdown row per model (operations, tasks, edges, weights, weight
slots needed vs available, lanes, median lowering time) and then the HEFT wall
time on the largest model whose weights fit the target. Models are read from
``tests/data/models`` (copies of the published exports, see ORIGIN.md there).
"""

from __future__ import annotations

import argparse
import pathlib
import platform
import statistics
import sys
import time

from raptor_cp.bounds import lower_bounds
from raptor_cp.errors import RaptorError
from raptor_cp.heuristics.heft import HeftScheduler
from raptor_cp.problems import LatencyProblem
from raptor_cp.targets.registry import resolve_target
from raptor_cp.workload.load import load_workload
from raptor_cp.workload.lowering import default_lanes, lower

MODELS = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "models"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="arch-a")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    target = resolve_target(args.target)
    print(
        f"# {' '.join(sys.argv)}  ({platform.processor() or platform.machine()}, "
        f"Python {platform.python_version()})"
    )
    print(
        "| model | ops | lanes | tasks | edges | weights | slots needed / available "
        "| fits | lower (median s) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---|---:|")
    fitting = []
    for path in sorted(MODELS.glob("*.onnx")):
        workload = load_workload(path)
        times = []
        for _ in range(args.repeat):
            began = time.perf_counter()
            graph = lower(workload, target)
            times.append(time.perf_counter() - began)
        bounds = lower_bounds(graph, target)
        fits = bounds.cores_needed <= target.cores
        try:
            graph.validate([target.capacity(p) for p in range(target.cores)])
        except RaptorError as error:
            fits = False
            print(f"<!-- {path.name}: {error} -->")
        if fits:
            fitting.append((graph.num_tasks, path.name, graph))
        print(
            f"| {path.stem} | {len(workload.operations)} | {default_lanes(workload, target)} "
            f"| {graph.num_tasks} | {graph.num_edges} | {graph.num_weights} "
            f"| {bounds.weight_slots} / {bounds.capacity_slots} | {'yes' if fits else 'no'} "
            f"| {statistics.median(times):.3f} |"
        )
    if not fitting:
        return
    tasks, name, graph = max(fitting, key=lambda item: (item[0], item[1]))
    began = time.perf_counter()
    try:
        solution = HeftScheduler().solve(LatencyProblem(graph, target))
        outcome = f"makespan {solution.objective} ns (lower bound {solution.bound} ns)"
    except RaptorError as error:
        outcome = f"failed: {error}"
    print(f"\nHEFT on {name} ({tasks} tasks): {time.perf_counter() - began:.2f} s, {outcome}")


if __name__ == "__main__":
    main()
