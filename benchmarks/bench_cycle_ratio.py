"""Howard vs bisection on Dasdan's cycle-ratio graphs, and their growth with V + E.

Usage::

    python benchmarks/bench_cycle_ratio.py [--repeat 3] [--sizes 1000 4000 16000 64000]
        [--out benchmarks/results/cycle_ratio_<date>.md]

Part 1 runs `maximum_cycle_ratio` and `minimum_cycle_ratio` with both methods on
every graph listed in ``benchmarks/data/mcr-dasdan/reference_cycle_ratios.csv``
(A. Dasdan's benchmark graphs, see PROVENANCE.md there) and checks each result
against the certified exact reference ratio (a graph without a cycle must give
None). It prints the largest graphs (core-big and iscas-small) one by one and a
summary of all of them.

Part 2 times both methods on two seeded synthetic families of growing size and
fits the log-log slope of time against ``V + E`` (1 is linear growth):

* ``random``: Dasdan's generator shape -- a ring through all ``V`` nodes plus
  random distinct arcs up to ``E = 3V``, weights uniform in 1..10000, transit
  times in 1..10;
* ``pipeline``: the shape of the periodic diagnostic's event graphs -- ``P``
  cores of ``K = V / P`` events chained by distance-0 edges (delays 10..1000 ns),
  one completion-to-entry recurrence (distance 1) per core, ``K / 8``
  distance-0 transfers from each core to the next and a distance-1 release
  back; ``P = sqrt(V / 8)`` rounded to a power of two.

Times are ``time.perf_counter`` around the library call (including the strong
component and deadlock checks, after one warm-up call has done the imports), the
median of ``--repeat`` runs (one run when ``V + E`` exceeds 100,000). The
machine may be shared: compare rows of one run.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import pathlib
import statistics
import time
from collections.abc import Callable
from fractions import Fraction

import numpy as np
from bench_scaling import machine_info

from raptor_cp.periodic import (
    METHODS,
    CycleRatio,
    PeriodicGraph,
    maximum_cycle_ratio,
    minimum_cycle_ratio,
)
from raptor_cp.periodic.dasdan import read_dasdan

HERE = pathlib.Path(__file__).resolve().parent
DATA = HERE / "data" / "mcr-dasdan"
SEED = 20261130
LARGE = ("core-big/", "iscas-small/")
Solve = Callable[[PeriodicGraph, str], CycleRatio | None]
OBJECTIVES: tuple[tuple[str, Solve, str], ...] = (
    ("max", maximum_cycle_ratio, "max_ratio_exact"),
    ("min", minimum_cycle_ratio, "min_ratio_exact"),
)


def timed(
    solve: Solve, graph: PeriodicGraph, method: str, repeat: int
) -> tuple[float, CycleRatio | None]:
    """Median wall seconds of ``repeat`` calls and the (identical) result of the last."""
    seconds = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = solve(graph, method)
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds), result


def dasdan_part(repeat: int) -> list[str]:
    """Part 1: per-graph rows for the largest graphs, then a summary of all."""
    lines = [
        f"## Dasdan's graphs (median of {repeat}; ms; it = Howard policy evaluations, "
        "tests/sweeps = bisection positive-cycle tests and graph sweeps)",
        "",
        "| graph | V | E | obj | exact ratio | Howard ms | it | bisection ms | tests | sweeps |",
        "|---|---:|---:|---|---|---:|---:|---:|---:|---:|",
    ]
    rows = list(csv.DictReader((DATA / "reference_cycle_ratios.csv").open()))
    checked = {method: [0, 0] for method in METHODS}
    totals = dict.fromkeys(METHODS, 0.0)
    worst = dict.fromkeys(METHODS, 0)
    for row in rows:
        graph = read_dasdan(DATA / row["graph"]).graph
        for objective, solve, key in OBJECTIVES:
            expected = Fraction(row[key]) if row[key] else None
            cells = []
            for method in METHODS:
                seconds, result = timed(solve, graph, method, repeat)
                got = None if result is None else result.ratio
                exact = result is None or result.exact
                checked[method][0] += got == expected and exact
                checked[method][1] += 1
                totals[method] += seconds
                if result is not None:
                    worst[method] = max(worst[method], result.iterations)
                    steps = str(result.iterations)
                    if method == "bisection":
                        steps += f" | {result.sweeps}"
                else:
                    steps = "-" if method == "howard" else "- | -"
                cells.append(f"{seconds * 1e3:.1f} | {steps}")
            if row["graph"].startswith(LARGE):
                shown = "none (acyclic)" if expected is None else str(expected)
                lines.append(
                    f"| {row['graph']} | {graph.num_nodes} | {graph.num_edges} | {objective} | "
                    f"{shown} | {' | '.join(cells)} |"
                )
    lines += [
        "",
        f"All {len(rows)} graphs, max and min ({checked['howard'][1]} cases, of which "
        f"{sum(not row['max_ratio_exact'] for row in rows) * 2} acyclic ones that must "
        "report no ratio):",
        "",
        "| method | reproduced exactly | total s | most iterations/tests on one case |",
        "|---|---:|---:|---:|",
    ]
    for method in METHODS:
        good, cases = checked[method]
        lines.append(f"| {method} | {good}/{cases} | {totals[method]:.2f} | {worst[method]} |")
    return lines


def random_graph(rng: np.random.Generator, nodes: int) -> PeriodicGraph:
    """Dasdan's generator shape: a Hamiltonian ring plus random distinct arcs, E = 3V."""
    arcs = 3 * nodes
    u = list(range(nodes))
    v = [(i + 1) % nodes for i in range(nodes)]
    seen = set(zip(u, v, strict=True))
    while len(u) < arcs:
        a, b = (int(x) for x in rng.integers(0, nodes, 2))
        if a != b and (a, b) not in seen:
            seen.add((a, b))
            u.append(a)
            v.append(b)
    weights = rng.integers(1, 10_001, arcs)
    return PeriodicGraph(nodes, u, v, weights, rng.integers(1, 11, arcs), name="random")


def pipeline_graph(rng: np.random.Generator, nodes: int) -> PeriodicGraph:
    """The periodic diagnostic's shape: per-core event chains, one recurrence per core."""
    cores = 1 << max(0, round(np.log2(np.sqrt(nodes / 8))))
    events = nodes // cores
    edges: list[tuple[int, int, int, int]] = []
    for core in range(cores):
        base = core * events
        delays = rng.integers(10, 1001, events - 1)
        edges += [(base + j, base + j + 1, int(delays[j]), 0) for j in range(events - 1)]
        edges.append((base + events - 1, base, int(rng.integers(1, 51)), 1))
        if core + 1 < cores:
            sources = rng.choice(events, size=max(1, events // 8), replace=False)
            targets = rng.integers(0, events, sources.size)
            delays = rng.integers(10, 501, sources.size)
            edges += [
                (base + int(s), base + events + int(t), int(c), 0)
                for s, t, c in zip(sources, targets, delays, strict=True)
            ]
            edges.append((base + events, base + events - 1, int(rng.integers(1, 51)), 1))
    return PeriodicGraph.from_edges(cores * events, edges, name="pipeline")


def growth_part(sizes: list[int], repeat: int) -> list[str]:
    """Part 2: both methods on seeded synthetic graphs of each size, and the slopes."""
    lines = [
        f"## Growth with V + E (seed {SEED}, maximum ratio, median of {repeat})",
        "",
        "| family | V | E | ratio | Howard s | it | bisection s | tests | sweeps |",
        "|---|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    slopes = []
    for family, build in (("random", random_graph), ("pipeline", pipeline_graph)):
        rng = np.random.default_rng(SEED)
        scale: list[int] = []
        seconds: dict[str, list[float]] = {method: [] for method in METHODS}
        for size in sizes:
            graph = build(rng, size)
            runs = 1 if graph.num_nodes + graph.num_edges > 100_000 else repeat
            results = {}
            for method in METHODS:
                elapsed, results[method] = timed(maximum_cycle_ratio, graph, method, runs)
                seconds[method].append(elapsed)
            howard, split = results["howard"], results["bisection"]
            if howard is None or split is None or howard.ratio != split.ratio:
                raise AssertionError(f"{family} {size}: Howard {howard}, bisection {split}")
            scale.append(graph.num_nodes + graph.num_edges)
            lines.append(
                f"| {family} | {graph.num_nodes} | {graph.num_edges} | {howard.ratio} | "
                f"{seconds['howard'][-1]:.3f} | {howard.iterations} | "
                f"{seconds['bisection'][-1]:.3f} | {split.iterations} | {split.sweeps} |"
            )
        for method in METHODS:
            slope = np.polyfit(np.log10(scale), np.log10(seconds[method]), 1)[0]
            slopes.append(f"| {family} | {method} | {slope:.2f} |")
    header = ["", "| family | method | log-log slope of time vs V + E |", "|---|---|---:|"]
    return [*lines, *header, *slopes]


def cpu_model() -> str:
    """The first ``model name`` of /proc/cpuinfo, or "unknown" elsewhere."""
    info = pathlib.Path("/proc/cpuinfo")
    if info.exists():
        for line in info.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 4000, 16000, 64000])
    today = datetime.datetime.now(datetime.timezone.utc).date()
    parser.add_argument(
        "--out", type=pathlib.Path, default=HERE / "results" / f"cycle_ratio_{today}.md"
    )
    args = parser.parse_args()
    warm_up = PeriodicGraph.from_edges(1, [(0, 0, 1, 1)])
    for method in METHODS:  # imports (scipy, the solver modules) outside the timings
        maximum_cycle_ratio(warm_up, method)
    lines = ["# Maximum / minimum cycle ratio: Howard vs bisection", "", machine_info()]
    lines += [f"- CPU model: {cpu_model()}", ""]
    for part in (dasdan_part(args.repeat), growth_part(sorted(args.sizes), args.repeat)):
        print("\n".join(part), "\n", flush=True)
        lines += [*part, ""]
    args.out.write_text("\n".join(lines))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
