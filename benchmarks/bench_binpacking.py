"""Stage packing against known optima: plain bin packing, then shared weights of a real model.

Usage::

    python benchmarks/bench_binpacking.py heuristic
    python benchmarks/bench_binpacking.py cpsat [--time-limit 10] [--workers 1] [--every 1]
                                                [--formulation auto|assignment]
                                                [--only-unproved]
    python benchmarks/bench_binpacking.py shared [--time-limit 10] [--workers 1]
    python benchmarks/bench_binpacking.py summary

Plain bin packing (``benchmarks/data/bpp``, see its README): Falkenauer u120, u250,
u500, u1000 (80 instances, OR-Library files) and t120, t249, t501 (55, BPPLIB
files), Scholl bin1data and bin2data (1200 ``.BPP`` files), read with
`raptor_cp.workload.bpp_reader`, with the BPPLIB optimal bin counts (lower bound
= upper bound for all). An instance becomes a `FewestCoresProblem` with one task per
item, each with its own weight of the item's size, zero loads, ``capacity`` = bin
capacity and ``cores`` = item count; the fewest cores used is the bin count.

* ``heuristic``: on every instance, first fit decreasing
  (`raptor_cp.heuristics.bin_packing.first_fit_decreasing`, the old `fewest_cores`
  answered exactly this), `pack_bins(effort=0)` (best fit decreasing, MBS' and
  the bounds only) and `fewest_cores` (the same plus the neighbourhood search of
  `pack_bins` at its default effort). Times are ``time.perf_counter`` around each
  call; each row records the 1-minute load average.
* ``cpsat``: `CpSatBinPackingModel` hinted with `fewest_cores`, **deterministic**
  budget (``SolveSettings(deterministic=True)``, ``--time-limit`` units);
  ``--formulation auto`` (the default: the arc-flow model with its HiGHS LP bound)
  or ``assignment`` (the symmetry-broken assignment model with the L2/DFF bound as
  a constraint). ``--only-unproved`` keeps the instances where the heuristic
  does not meet its own bound (L2, DFF); ``--every N`` then keeps every N-th
  instance in file order over all sets. A hint meeting a bound is returned as
  optimal without a search (column ``search``).
* ``shared``: stage problems cut from ``tests/data/models/resnet18.onnx`` lowered
  on ``arch-a`` with 4 lanes: the tasks of 1 or 3 consecutive operations starting
  at a weighted operation, loads = task costs (ns), weights = array groups (shared
  by the lanes), capacity 96 slots (arch-a's crossbars per core), edges between
  the chosen tasks priced ``target.transfer_ns(0, 1, bytes)`` (neighbouring cores)
  or dropped. `pack_stage` vs `CpSatPackingModel` (hinted with it) on
  ``max(2, cores_needed)`` and ``max(4, 2 cores_needed)`` cores, and `fewest_cores`
  vs `CpSatBinPackingModel`; deterministic budgets as for ``cpsat``.

Each mode appends one CSV row per instance to ``benchmarks/results/binpacking_<mode>.csv``
(``binpacking_cpsat_assignment.csv`` for the assignment formulation) as it goes (a
rerun starts the file afresh); ``summary`` writes
``benchmarks/results/binpacking_summary.md`` from the CSVs present.
"""

from __future__ import annotations

import argparse
import csv
import os
import pathlib
import platform
import statistics
import sys
import time
from collections.abc import Iterator

import numpy as np

from raptor_cp.heuristics.bin_packing import first_fit_decreasing, pack_bins
from raptor_cp.heuristics.stage_packing import (
    cores_needed,
    fewest_cores,
    pack_stage,
)
from raptor_cp.problems import (
    FewestCoresProblem,
    PackingProblem,
    Status,
    check_fewest_cores,
    check_packing,
)
from raptor_cp.workload.bpp_reader import read_bin_packing

ROOT = pathlib.Path(__file__).resolve().parent
DATA = ROOT / "data" / "bpp"
RESULTS = ROOT / "results"
MODEL = ROOT.parent / "tests" / "data" / "models" / "resnet18.onnx"
SHARED_WINDOWS = (3, 15, 24, 26, 35, 37, 41, 47)
"""First operations of the shared-weight windows (weighted ops of resnet18)."""


def bin_packing_instances() -> Iterator[tuple[str, str, tuple[int, ...], int, int]]:
    """``(set, name, sizes, capacity, optimal bins)`` of every plain instance, in file order."""
    optimum: dict[str, int] = {}
    for sub in ("falkenauer", "scholl"):
        with open(DATA / sub / "optimal_bins.csv") as handle:
            for row in csv.DictReader(handle):
                optimum[row["instance"]] = int(row["bpplib_ub"])
    for k in range(1, 5):
        for instance in read_bin_packing(DATA / "falkenauer" / f"binpack{k}.txt"):
            group = f"falkenauer_{instance.name.split('_')[0]}"
            name = f"Falkenauer_{instance.name}"
            yield group, instance.name, instance.sizes, instance.capacity, optimum[name]
    for path in sorted((DATA / "falkenauer" / "triplets").glob("*.txt")):
        (instance,) = read_bin_packing(path)
        group = f"falkenauer_{path.stem.split('_')[1]}"
        yield group, path.stem, instance.sizes, instance.capacity, optimum[path.stem]
    for folder in ("bin1data", "bin2data"):
        for path in sorted((DATA / "scholl" / folder).glob("*.BPP")):
            (instance,) = read_bin_packing(path)
            group = f"scholl_{folder}"
            yield group, path.stem, instance.sizes, instance.capacity, optimum[path.stem]


def plain_problem(name: str, sizes: tuple[int, ...], capacity: int) -> FewestCoresProblem:
    n = len(sizes)
    return FewestCoresProblem(
        (0,) * n, tuple((i,) for i in range(n)), sizes, n, capacity, name=name
    )


class Rows:
    """Appends CSV rows to ``binpacking_<mode>.csv``.

    The file is reopened for every row, so rows keep landing in the file at that
    path even if another process replaces it meanwhile (a version-control
    checkout, say); a held handle would write to the replaced file.
    """

    def __init__(self, mode: str, fields: list[str]) -> None:
        self.path = RESULTS / f"binpacking_{mode}.csv"
        self.fields = fields
        with open(self.path, "w", newline="") as handle:
            csv.DictWriter(handle, fieldnames=fields).writeheader()

    def add(self, row: dict[str, object]) -> None:
        with open(self.path, "a", newline="") as handle:
            csv.DictWriter(handle, fieldnames=self.fields).writerow(row)


def run_heuristic() -> None:
    fields = [
        "set", "instance", "n", "optimal", "ffd_bins", "ffd_s", "fast_bins", "fast_s", "bins",
        "bound", "method", "work", "wall_s", "load1",
    ]  # fmt: skip
    rows = Rows("heuristic", fields)
    for group, name, sizes, capacity, optimal in bin_packing_instances():
        problem = plain_problem(name, sizes, capacity)
        began = time.perf_counter()
        ffd = first_fit_decreasing(sizes, capacity)
        ffd_wall = time.perf_counter() - began
        began = time.perf_counter()
        fast = pack_bins(sizes, capacity, effort=0)
        fast_wall = time.perf_counter() - began
        began = time.perf_counter()
        solution = fewest_cores(problem)
        wall = time.perf_counter() - began
        check_fewest_cores(problem, solution)
        rows.add(
            {
                "set": group, "instance": name, "n": len(sizes), "optimal": optimal,
                "ffd_bins": max(ffd) + 1, "ffd_s": f"{ffd_wall:.5f}",
                "fast_bins": fast.count, "fast_s": f"{fast_wall:.5f}",
                "bins": solution.objective, "bound": solution.bound,
                "method": solution.details["bin_packing"], "work": solution.details["work"],
                "wall_s": f"{wall:.5f}", "load1": f"{os.getloadavg()[0]:.2f}",
            }
        )  # fmt: skip


def run_cpsat(
    time_limit: float, workers: int, every: int, formulation: str, unproved: bool
) -> None:
    from raptor_cp.models.packing import CpSatBinPackingModel
    from raptor_cp.models.solve import SolveSettings

    model = CpSatBinPackingModel(SolveSettings(time_limit, workers), formulation=formulation)
    fields = [
        "set", "instance", "n", "optimal", "hint_bins", "hint_bound", "bins", "bound",
        "status", "search", "fallback", "deterministic_time", "wall_s", "time_limit",
        "workers", "formulation",
    ]  # fmt: skip
    mode = "cpsat" if formulation == "auto" else f"cpsat_{formulation}"
    rows = Rows(mode, fields)
    kept = 0
    for group, name, sizes, capacity, optimal in bin_packing_instances():
        problem = plain_problem(name, sizes, capacity)
        hint = fewest_cores(problem)
        if unproved and hint.status == Status.OPTIMAL:
            continue
        kept += 1
        if (kept - 1) % every:
            continue
        began = time.perf_counter()
        solution = model.solve(problem, hint)
        wall = time.perf_counter() - began
        check_fewest_cores(problem, solution)
        assert solution.objective is not None and hint.objective is not None
        assert solution.objective <= hint.objective
        rows.add(
            {
                "set": group, "instance": name, "n": len(sizes), "optimal": optimal,
                "hint_bins": hint.objective, "hint_bound": hint.bound,
                "bins": solution.objective, "bound": solution.bound,
                "status": solution.status.value,
                "search": solution.details.get("search", "searched"),
                "fallback": solution.details.get("fallback", ""),
                "deterministic_time": solution.details.get("deterministic_time", ""),
                "wall_s": f"{wall:.3f}", "time_limit": time_limit, "workers": workers,
                "formulation": solution.details.get("formulation", ""),
            }
        )  # fmt: skip


def shared_problems() -> Iterator[tuple[str, PackingProblem]]:
    """Stage problems of resnet18 on arch-a (see the module docstring)."""
    from raptor_cp.flows import prepare

    prepared = prepare(MODEL, "arch-a", lanes=4)
    graph, target = prepared.graph, prepared.target
    windows = {
        (first, min(first + width, len(graph.operation_names)))
        for first in SHARED_WINDOWS
        for width in (1, 3)
    }
    for first, stop in sorted(windows):
        ops = list(range(first, stop))
        tasks = np.flatnonzero(np.isin(graph.operation, ops))
        index = {int(t): i for i, t in enumerate(tasks)}
        src, dst, nbytes = (
            graph.edge_src.tolist(),
            graph.edge_dst.tolist(),
            graph.edge_bytes.tolist(),
        )
        pairs = zip(src, dst, nbytes, strict=True)
        edges = tuple(
            (index[a], index[b], target.transfer_ns(0, 1, size))
            for a, b, size in pairs
            if a in index and b in index
        )
        for with_edges in (False, True):
            name = f"resnet18:ops{ops[0]}-{ops[-1]}{':edges' if with_edges else ''}"
            yield (
                name,
                PackingProblem(
                    tuple(int(graph.cost[t]) for t in tasks),
                    tuple(graph.task_weights[t] for t in tasks),
                    tuple(int(s) for s in graph.weight_size),
                    cores=len(tasks),
                    capacity=target.capacity(0),
                    edges=edges if with_edges else (),
                    name=name,
                ),
            )


def run_shared(time_limit: float, workers: int) -> None:
    import dataclasses

    from raptor_cp.errors import RaptorError
    from raptor_cp.models.packing import CpSatBinPackingModel, CpSatPackingModel
    from raptor_cp.models.solve import SolveSettings

    packing = CpSatPackingModel(SolveSettings(time_limit, workers))
    binpacking = CpSatBinPackingModel(SolveSettings(time_limit, workers))
    fields = [
        "instance", "tasks", "edges", "weights", "cores", "bound", "heuristic", "heuristic_s",
        "cpsat", "cpsat_bound", "cpsat_status", "cpsat_s", "deterministic_time", "time_limit",
        "workers",
    ]  # fmt: skip
    rows = Rows("shared", fields)
    for name, unlimited in shared_problems():
        weights = len({w for ws in unlimited.task_weights for w in ws})
        fewest = fewest_cores(unlimited)
        exact = binpacking.solve(unlimited, fewest)
        check_fewest_cores(unlimited, exact)
        if not unlimited.edges:
            rows.add(
                {
                    "instance": name, "tasks": unlimited.num_tasks, "edges": 0,
                    "weights": weights, "cores": "fewest", "bound": fewest.bound,
                    "heuristic": fewest.objective, "heuristic_s": f"{fewest.wall_s:.3f}",
                    "cpsat": exact.objective, "cpsat_bound": exact.bound,
                    "cpsat_status": exact.status.value, "cpsat_s": f"{exact.wall_s:.3f}",
                    "deterministic_time": exact.details.get("deterministic_time", ""),
                    "time_limit": time_limit, "workers": workers,
                }
            )  # fmt: skip
        needed = cores_needed(unlimited)
        for cores in (max(2, needed), max(4, 2 * needed)):
            problem = dataclasses.replace(unlimited, cores=cores)
            heuristic = pack_stage(problem)
            check_packing(problem, heuristic)
            row: dict[str, object] = {
                "instance": name, "tasks": problem.num_tasks, "edges": len(problem.edges),
                "weights": weights, "cores": cores, "bound": heuristic.bound,
                "heuristic": heuristic.objective, "heuristic_s": f"{heuristic.wall_s:.3f}",
            }  # fmt: skip
            try:
                solution = packing.solve(problem, heuristic)
            except RaptorError as error:  # the model-size limit
                row.update(cpsat_status=f"skipped: {error}")
            else:
                check_packing(problem, solution)
                row.update(
                    cpsat=solution.objective, cpsat_bound=solution.bound,
                    cpsat_status=solution.status.value, cpsat_s=f"{solution.wall_s:.3f}",
                    deterministic_time=solution.details.get("deterministic_time", ""),
                    time_limit=time_limit, workers=workers,
                )  # fmt: skip
            rows.add(row)


def read(mode: str) -> list[dict[str, str]]:
    path = RESULTS / f"binpacking_{mode}.csv"
    if not path.exists():
        return []
    with open(path) as handle:
        return list(csv.DictReader(handle))


def plain_table(rows: list[dict[str, str]], column: str, wall: str) -> list[str]:
    """Per set: bin counts in ``column`` against the optimum; ``wall`` the time column."""
    lines = [
        "| set | instances | optimal | share | mean excess bins | max excess | ms per 1,000 "
        "items | max s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    sets = list(dict.fromkeys(r["set"] for r in rows))
    for group in [*sets, "all"]:
        chosen = [r for r in rows if group in ("all", r["set"])]
        excess = [int(r[column]) - int(r["optimal"]) for r in chosen]
        seconds = [float(r[wall]) for r in chosen]
        items = sum(int(r["n"]) for r in chosen)
        optimal = sum(e == 0 for e in excess)
        lines.append(
            f"| {group} | {len(chosen)} | {optimal} | {optimal / len(chosen):.1%} | "
            f"{statistics.mean(excess):.3f} | {max(excess)} | {1e6 * sum(seconds) / items:.1f} | "
            f"{max(seconds):.3f} |"
        )
    return lines


def summary() -> None:
    lines = [
        "# Stage packing benchmark: bin packing and shared weights",
        "",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {sys.version.split()[0]}. Produced by `benchmarks/bench_binpacking.py` "
        "(see its docstring for the instances and settings).",
        "",
    ]
    heuristic = read("heuristic")
    if heuristic:
        lines += ["## First fit decreasing (the old `fewest_cores`), all instances", ""]
        lines += [*plain_table(heuristic, "ffd_bins", "ffd_s"), ""]
        lines += ["## `pack_bins(effort=0)`: best fit decreasing, MBS', bounds; all instances", ""]
        lines += [*plain_table(heuristic, "fast_bins", "fast_s"), ""]
        lines += ["## `fewest_cores` (`pack_bins`, default effort), all instances", ""]
        lines += [*plain_table(heuristic, "bins", "wall_s"), ""]
        proved = sum(r["bins"] == r["bound"] for r in heuristic)
        load = [float(r["load1"]) for r in heuristic]
        lines += [
            f"Proved optimal by its own bound (L2 or DFF): {proved} of {len(heuristic)}. "
            f"1-minute load average during the run: mean {statistics.mean(load):.1f}, "
            f"max {max(load):.1f} (times scale with it).",
            "",
        ]
    for mode, title in (("cpsat", "arc flow"), ("cpsat_assignment", "assignment model")):
        cpsat = read(mode)
        if not cpsat:
            continue
        limits = sorted({r["time_limit"] for r in cpsat})
        workers = sorted({r["workers"] for r in cpsat})
        lines += [f"## `CpSatBinPackingModel` ({title}, hinted with `fewest_cores`)", ""]
        lines += [
            f"Deterministic budget {', '.join(limits)} units per solve, "
            f"{', '.join(workers)} worker(s); {len(cpsat)} instances.",
            "",
        ]
        lines += [*plain_table(cpsat, "bins", "wall_s"), ""]
        proved = sum(r["status"] == "optimal" for r in cpsat)
        searches = {}
        for r in cpsat:
            searches[r["search"]] = searches.get(r["search"], 0) + 1
        fallback = sum(bool(r["fallback"]) for r in cpsat)
        worse = sum(int(r["bins"]) > int(r["hint_bins"]) for r in cpsat)
        lines += [
            f"Proved optimal: {proved} of {len(cpsat)} ({proved / len(cpsat):.1%}); "
            f"answers worse than the hint: {worse}; hint kept after a search found nothing "
            f"better: {fallback}. Searches: "
            + ", ".join(f"{k}: {v}" for k, v in sorted(searches.items()))
            + ".",
            "",
        ]
        lines += ["The hint on the same instances:", ""]
        lines += [*plain_table([{**r, "wall_s": "0"} for r in cpsat], "hint_bins", "wall_s"), ""]
    shared = read("shared")
    if shared:
        limits = sorted({r["time_limit"] for r in shared if r["time_limit"]})
        equal = sum(r["heuristic"] == r["cpsat"] for r in shared)
        lines += ["## Shared-weight stage packing (resnet18, arch-a, 4 lanes)", ""]
        lines += [
            f"CP-SAT deterministic budget {', '.join(limits)} units. Heuristic equals "
            f"CP-SAT on {equal} of {len(shared)}.",
            "",
        ]
        lines += [
            "| instance | tasks | edges | weights | cores | bound | heuristic | cpsat | "
            "cpsat bound | status | heuristic / cpsat | heuristic s | cpsat s |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in shared:
            ratio = (
                f"{int(r['heuristic']) / int(r['cpsat']):.3f}"
                if r["cpsat"] and int(r["cpsat"]) > 0
                else ""
            )
            lines.append(
                f"| {r['instance']} | {r['tasks']} | {r['edges']} | {r['weights']} | "
                f"{r['cores']} | {r['bound']} | {r['heuristic']} | {r['cpsat']} | "
                f"{r['cpsat_bound']} | {r['cpsat_status']} | {ratio} | {r['heuristic_s']} | "
                f"{r['cpsat_s']} |"
            )
    (RESULTS / "binpacking_summary.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["heuristic", "cpsat", "shared", "summary"])
    parser.add_argument("--time-limit", type=float, default=10.0)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--every", type=int, default=1)
    parser.add_argument("--formulation", choices=["auto", "assignment"], default="auto")
    parser.add_argument("--only-unproved", action="store_true")
    args = parser.parse_args()
    if args.mode == "heuristic":
        run_heuristic()
    elif args.mode == "cpsat":
        run_cpsat(args.time_limit, args.workers, args.every, args.formulation, args.only_unproved)
    elif args.mode == "shared":
        run_shared(args.time_limit, args.workers)
    summary()


if __name__ == "__main__":
    main()
