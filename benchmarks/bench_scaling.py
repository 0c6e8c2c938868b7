"""PEFT wall time on lowered DNN models and on synthetic layered DAGs of growing size.

Usage::

    python benchmarks/bench_scaling.py [--sizes 1000 10000 100000] [--repeat 3]

Part 1 lowers ResNet-18, ResNet-50, VGG-16 and ViT-B/16 (``tests/data/models``)
(and the one-encoder-layer ViT) for ``arch-a`` and times PEFT on each. A model
whose resident weights exceed the target's crossbars is reported with the error
raptor-cp raises and is tried on ``arch-b`` (the other PIMCOMP machine); if it
fits neither, it is timed on ``arch-a uncapped`` (`UncappedTarget`: arch-a's
costs and transfers, no capacity check), which measures the scheduler only.

Part 2 times PEFT on seeded random layered DAGs (`random_layered_dag`) of each
size on three targets: ``generic:16:1``, ``generic:64:1`` (1 ns per byte between
distinct cores) and ``arch-a`` (168 PIM cores, hop-priced transfers). For each
target it reports the log-log slope of time against tasks (least squares over
the sizes): 1 is linear growth, 2 quadratic.

Times are ``time.perf_counter`` around `PeftScheduler.solve` (which includes the
final `evaluate` and the lower bounds), the median of ``--repeat`` runs (one run
for sizes of 10^5 and above). The machine may be shared: compare rows of one run.
"""

from __future__ import annotations

import argparse
import datetime
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from importlib.metadata import version

import numpy as np

from raptor_cp.errors import RaptorError
from raptor_cp.graph import ComputeGraph
from raptor_cp.heuristics.peft import PeftScheduler
from raptor_cp.problems import LatencyProblem, LatencySolution
from raptor_cp.targets.base import UNLIMITED_CAPACITY, SchedulingTarget
from raptor_cp.targets.registry import resolve_target
from raptor_cp.workload.load import load_workload
from raptor_cp.workload.lowering import lower

MODELS = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "models"
MODEL_FILES = (
    "resnet18.onnx",
    "resnet50.onnx",
    "vgg16.onnx",
    "vit_b16.onnx",
    "vit_b16_1layer.onnx",
)
SYNTHETIC_TARGETS = ("generic:16:1", "generic:64:1", "arch-a")
SEED = 20260501


class UncappedTarget:
    """``target`` with unlimited resident-weight capacity per core (everything else delegated).

    Only for timing PEFT on models whose weights exceed every shipped chip: the
    schedule is not realisable on the real target.
    """

    def __init__(self, target: SchedulingTarget) -> None:
        self._target = target

    def __getattr__(self, attribute: str) -> object:
        return getattr(self._target, attribute)

    @property
    def name(self) -> str:
        return f"{self._target.name}, capacity unlimited"

    def capacity(self, core: int) -> int:
        return UNLIMITED_CAPACITY


def machine_info(packages: tuple[str, ...] = ("raptor-cp", "numpy")) -> str:
    """One Markdown block: command, date, platform, CPUs, Python, versions and git commit."""
    versions = ", ".join(f"{name} {version(name)}" for name in packages)
    git = ["git", "-C", str(pathlib.Path(__file__).resolve().parent)]
    commit, package = (
        subprocess.run([*git, *args], capture_output=True, text=True, check=False).stdout.strip()
        for args in (
            ["describe", "--always"],
            ["status", "--porcelain", "--untracked-files=no", "--", "../raptor_cp"],
        )
    )
    return "\n".join(
        [
            f"Command: `{' '.join([os.path.basename(sys.executable), *sys.argv])}`",
            "",
            f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}",
            f"- platform: {platform.platform()} ({platform.machine()})",
            f"- CPUs: {os.cpu_count()} ({platform.processor() or 'unknown processor'})",
            f"- Python {platform.python_version()}; {versions}",
            f"- raptor-cp commit: {commit or 'unknown'} "
            f"(raptor_cp/ {'has uncommitted changes' if package else 'as committed'})",
        ]
    )


def random_layered_dag(
    rng: np.random.Generator,
    tasks: int,
    cost_range: tuple[int, int] = (10, 100),
    bytes_range: tuple[int, int] = (0, 0),
    max_preds: int = 3,
    name: str = "layered",
) -> ComputeGraph:
    """A random layered DAG: ``tasks`` tasks in layers of mean width ``sqrt(tasks)``.

    Layer widths are uniform in ``[1, 2w - 1]`` with ``w = round(sqrt(tasks))``
    (the last layer takes the remainder). Every task after the first layer draws
    ``1..max_preds`` predecessors uniformly, with replacement, from the previous
    layer (duplicates merged). Costs and edge bytes are uniform integers in the
    inclusive ranges given. Edges are sorted by (consumer, producer).
    """
    width = max(1, round(tasks**0.5))
    widths: list[int] = []
    while sum(widths) < tasks:
        widths.append(min(int(rng.integers(1, 2 * width)), tasks - sum(widths)))
    bounds = np.concatenate([[0], np.cumsum(widths)])
    layer = np.repeat(np.arange(len(widths)), widths)
    later = np.arange(int(bounds[1]), tasks)
    count = rng.integers(1, max_preds + 1, size=later.size)
    dst = np.repeat(later, count)
    prev = layer[dst] - 1
    src = bounds[prev] + (rng.random(dst.size) * (bounds[prev + 1] - bounds[prev])).astype(np.int64)
    keys = np.unique(dst * tasks + src)
    dst, src = keys // tasks, keys % tasks
    return ComputeGraph(
        names=tuple(str(t) for t in range(tasks)),
        cost=rng.integers(cost_range[0], cost_range[1] + 1, size=tasks),
        edge_src=src,
        edge_dst=dst,
        edge_bytes=rng.integers(bytes_range[0], bytes_range[1] + 1, size=src.size),
        name=name,
    )


def timed_median(run: Callable[[], LatencySolution], repeat: int) -> tuple[float, LatencySolution]:
    """Median wall seconds of ``repeat`` calls of ``run`` and the last solution."""
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        solution = run()
        times.append(time.perf_counter() - began)
    return statistics.median(times), solution


def fresh(graph: ComputeGraph) -> ComputeGraph:
    """A copy of ``graph`` without its cached adjacency, so every timed run starts cold."""
    return ComputeGraph(
        names=graph.names,
        cost=graph.cost,
        edge_src=graph.edge_src,
        edge_dst=graph.edge_dst,
        edge_bytes=graph.edge_bytes,
        task_weights=graph.task_weights,
        weight_size=graph.weight_size,
        weight_names=graph.weight_names,
        operation=graph.operation,
        lane=graph.lane,
        operation_names=graph.operation_names,
        core_cost=graph.core_cost,
        name=graph.name,
    )


def peft_time(graph: ComputeGraph, target: SchedulingTarget, repeat: int) -> tuple[float, int]:
    """Median PEFT wall seconds on ``graph`` and its makespan in ns."""
    seconds, solution = timed_median(
        lambda: PeftScheduler().solve(LatencyProblem(fresh(graph), target)), repeat
    )
    assert solution.objective is not None
    return seconds, solution.objective


def model_rows(repeat: int) -> list[str]:
    """Markdown rows of part 1 (one per model and target tried)."""
    rows = []
    for file in MODEL_FILES:
        workload = load_workload(MODELS / file)
        for spec in ("arch-a", "arch-b", "arch-a uncapped"):
            target = resolve_target(spec.split()[0])
            if spec.endswith("uncapped"):
                target = UncappedTarget(target)  # type: ignore[assignment]
            began = time.perf_counter()
            graph = lower(workload, target)
            lowering = time.perf_counter() - began
            try:
                seconds, makespan = peft_time(graph, target, repeat)
            except RaptorError as error:
                rows.append(
                    f"| {file} | {spec} | {graph.num_tasks} | {graph.num_edges} "
                    f"| {lowering:.2f} | error: {error} | | |"
                )
                print(rows[-1], flush=True)
                continue
            rows.append(
                f"| {file} | {spec} | {graph.num_tasks} | {graph.num_edges} | {lowering:.2f} "
                f"| ok | {seconds:.2f} | {makespan} |"
            )
            print(rows[-1], flush=True)
            break
    return rows


def synthetic_rows(sizes: list[int], repeat: int) -> tuple[list[str], list[str]]:
    """Markdown rows of part 2 (one per target and size) and the slope rows."""
    rows, slopes = [], []
    for spec in SYNTHETIC_TARGETS:
        target = resolve_target(spec)
        seconds_by_size = []
        for tasks in sizes:
            rng = np.random.default_rng([SEED, tasks])
            graph = random_layered_dag(
                rng, tasks, cost_range=(100, 1000), bytes_range=(64, 4096), name=f"layered{tasks}"
            )
            runs = 1 if tasks >= 100_000 else repeat
            seconds, makespan = peft_time(graph, target, runs)
            seconds_by_size.append(seconds)
            rows.append(
                f"| {spec} | {target.cores} | {tasks} | {graph.num_edges} | {runs} "
                f"| {seconds:.3f} | {1e6 * seconds / tasks:.1f} | {makespan} |"
            )
            print(rows[-1], flush=True)
        if len(sizes) < 2:
            continue
        slope = np.polyfit(np.log10(sizes), np.log10(seconds_by_size), 1)[0]
        steps = ", ".join(
            f"{np.log10(b / a) / np.log10(m / n):.2f}"
            for n, m, a, b in zip(
                sizes, sizes[1:], seconds_by_size, seconds_by_size[1:], strict=False
            )
        )
        slopes.append(f"| {spec} | {target.cores} | {slope:.2f} | {steps} |")
    return rows, slopes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-models", action="store_true")
    args = parser.parse_args()
    print("# PEFT scaling\n")
    print(machine_info(("raptor-cp", "numpy", "onnx")) + "\n")
    if not args.skip_models:
        print(f"## Lowered models (PEFT, median of {args.repeat})\n")
        print("| model | target | tasks | edges | lowering s | status | PEFT s | makespan ns |")
        print("|---|---|---:|---:|---:|---|---:|---:|", flush=True)
        model_rows(args.repeat)
    print(f"\n## Synthetic layered DAGs (seed {SEED}, PEFT)\n")
    print("| target | cores | tasks | edges | runs | PEFT s | us/task | makespan ns |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|", flush=True)
    _, slopes = synthetic_rows(sorted(args.sizes), args.repeat)
    print("\n## Growth (log-log slope of PEFT time vs tasks)\n")
    print("| target | cores | slope (fit) | slope per step |")
    print("|---|---:|---:|---|")
    print("\n".join(slopes))


if __name__ == "__main__":
    main()
