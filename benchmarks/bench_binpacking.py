"""Stage packing against known optima: plain bin packing, then shared weights of a real model.

Usage::

    python benchmarks/bench_binpacking.py heuristic
    python benchmarks/bench_binpacking.py cpsat [--time-limit 10] [--workers 2] [--every 1]
        [--wall-clock]
    python benchmarks/bench_binpacking.py shared [--time-limit 10] [--workers 2] [--wall-clock]
    python benchmarks/bench_binpacking.py summary

Plain bin packing (``benchmarks/data/bpp``, see its README): Falkenauer u120 and
u250 (40 instances, OR-Library files) and Scholl bin1data/bin2data (1200 ``.BPP``
files), with the BPPLIB optimal bin counts (lower bound = upper bound for all).
An instance becomes a `PackingProblem` with one task per item, each with its own
weight of the item's size, zero loads, ``capacity`` = bin capacity and
``cores`` = item count; the fewest cores used is the bin count.

* ``heuristic``: `fewest_cores` (best fit decreasing with the shared constructor's
  recovery) on every instance.
* ``cpsat``: `CpSatBinPackingModel` hinted with `fewest_cores`, budget
  ``--time-limit`` in CP-SAT deterministic units (reproducible; ``--wall-clock``
  makes it wall-clock seconds with free-running workers, so that results depend
  on the machine's load; each row records the mode and the 1-minute load
  average); ``--every N`` keeps every N-th Scholl instance in file order (all
  Falkenauer instances are always run).
  A hint that meets the lower bound is returned as optimal without search.
* ``shared``: stage problems cut from ``tests/data/models/resnet18.onnx`` lowered
  on ``arch-a`` with 4 lanes: the tasks of 1 or 3 consecutive operations starting
  at a weighted operation, loads = task costs (ns), weights = array groups (shared
  by the lanes), capacity 96 slots (arch-a's crossbars per core), edges between
  the chosen tasks priced ``target.transfer_ns(0, 1, bytes)`` (neighbouring cores)
  or dropped. `pack_stage` vs `CpSatPackingModel` (hinted with it) on
  ``max(2, cores_needed)`` and ``max(4, 2 cores_needed)`` cores, and `fewest_cores`
  vs `CpSatBinPackingModel`.

Each mode appends one CSV row per instance to ``benchmarks/results/binpacking_<mode>.csv``
as it goes (a rerun starts the file afresh); ``summary`` writes
``benchmarks/results/binpacking_summary.md`` from the CSVs present. Heuristic
times are ``time.perf_counter`` around the solve call.
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

from raptor_cp.heuristics.stage_packing import (
    cores_needed,
    fewest_cores,
    pack_stage,
)
from raptor_cp.problems import PackingProblem, check_fewest_cores, check_packing

ROOT = pathlib.Path(__file__).resolve().parent
DATA = ROOT / "data" / "bpp"
RESULTS = ROOT / "results"
MODEL = ROOT.parent / "tests" / "data" / "models" / "resnet18.onnx"
SHARED_WINDOWS = (3, 15, 24, 26, 35, 37, 41, 47)
"""First operations of the shared-weight windows (weighted ops of resnet18)."""


def bin_packing_instances() -> Iterator[tuple[str, str, list[int], int, int]]:
    """``(set, name, sizes, capacity, optimal bins)`` of every plain instance, in file order."""
    optimum: dict[str, int] = {}
    for sub in ("falkenauer", "scholl"):
        with open(DATA / sub / "optimal_bins.csv") as handle:
            for row in csv.DictReader(handle):
                optimum[row["instance"]] = int(row["bpplib_ub"])
    for path in ("binpack1.txt", "binpack2.txt"):
        tokens = (DATA / "falkenauer" / path).read_text().split()
        count, pos = int(tokens[0]), 1
        for _ in range(count):
            ident, capacity, n = tokens[pos], int(tokens[pos + 1]), int(tokens[pos + 2])
            sizes = [int(x) for x in tokens[pos + 4 : pos + 4 + n]]
            pos += 4 + n
            yield f"falkenauer_{ident[:4]}", ident, sizes, capacity, optimum[f"Falkenauer_{ident}"]
    for folder in ("bin1data", "bin2data"):
        for path in sorted((DATA / "scholl" / folder).glob("*.BPP")):
            values = [int(x) for x in path.read_text().split()]
            n, capacity = values[0], values[1]
            yield f"scholl_{folder}", path.stem, values[2 : 2 + n], capacity, optimum[path.stem]


def plain_problem(name: str, sizes: list[int], capacity: int) -> PackingProblem:
    n = len(sizes)
    return PackingProblem(
        (0,) * n, tuple((i,) for i in range(n)), tuple(sizes), n, capacity, name=name
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
    rows = Rows("heuristic", ["set", "instance", "n", "optimal", "bound", "bins", "wall_s"])
    for group, name, sizes, capacity, optimal in bin_packing_instances():
        problem = plain_problem(name, sizes, capacity)
        began = time.perf_counter()
        solution = fewest_cores(problem)
        wall = time.perf_counter() - began
        check_fewest_cores(problem, solution)
        rows.add(
            {
                "set": group, "instance": name, "n": len(sizes), "optimal": optimal,
                "bound": solution.bound, "bins": solution.objective, "wall_s": f"{wall:.4f}",
            }
        )  # fmt: skip


MODE = {True: "deterministic", False: "wall-clock"}
"""The ``mode`` column of a CP-SAT row: how its budget was counted."""


def run_cpsat(time_limit: float, workers: int, every: int, deterministic: bool) -> None:
    from raptor_cp.models.packing import CpSatBinPackingModel
    from raptor_cp.models.solve import SolveSettings

    model = CpSatBinPackingModel(SolveSettings(time_limit, workers, deterministic=deterministic))
    fields = [
        "set", "instance", "n", "optimal", "hint_bins", "bins", "bound", "status", "wall_s",
        "time_limit_s", "workers", "load1", "mode",
    ]  # fmt: skip
    rows = Rows("cpsat", fields)
    scholl = 0
    for group, name, sizes, capacity, optimal in bin_packing_instances():
        if group.startswith("scholl"):
            scholl += 1
            if (scholl - 1) % every:
                continue
        problem = plain_problem(name, sizes, capacity)
        hint = fewest_cores(problem)
        solution = model.solve(problem, hint)
        check_fewest_cores(problem, solution)
        rows.add(
            {
                "set": group, "instance": name, "n": len(sizes), "optimal": optimal,
                "hint_bins": hint.objective, "bins": solution.objective,
                "bound": solution.bound, "status": solution.status.value,
                "wall_s": f"{solution.wall_s:.3f}", "time_limit_s": time_limit,
                "workers": workers, "load1": f"{os.getloadavg()[0]:.2f}",
                "mode": MODE[deterministic],
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


def run_shared(time_limit: float, workers: int, deterministic: bool) -> None:
    import dataclasses

    from raptor_cp.errors import RaptorError
    from raptor_cp.models.packing import CpSatBinPackingModel, CpSatPackingModel
    from raptor_cp.models.solve import SolveSettings

    solve = SolveSettings(time_limit, workers, deterministic=deterministic)
    packing = CpSatPackingModel(solve)
    binpacking = CpSatBinPackingModel(solve)
    fields = [
        "instance", "tasks", "edges", "weights", "cores", "bound", "heuristic", "heuristic_s",
        "cpsat", "cpsat_bound", "cpsat_status", "cpsat_s", "time_limit_s", "workers", "load1",
        "mode",
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
                    "time_limit_s": time_limit, "workers": workers,
                    "load1": f"{os.getloadavg()[0]:.2f}", "mode": MODE[deterministic],
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
                    time_limit_s=time_limit, workers=workers,
                    load1=f"{os.getloadavg()[0]:.2f}", mode=MODE[deterministic],
                )  # fmt: skip
            rows.add(row)


def read(mode: str) -> list[dict[str, str]]:
    path = RESULTS / f"binpacking_{mode}.csv"
    if not path.exists():
        return []
    with open(path) as handle:
        return list(csv.DictReader(handle))


def plain_table(rows: list[dict[str, str]], column: str) -> list[str]:
    """Per set: bin counts in ``column`` against the optimum (empty = no solution found)."""
    lines = [
        "| set | instances | optimal | no solution | mean excess bins | max excess | wall s |",
        "|---|---|---|---|---|---|---|",
    ]
    sets = list(dict.fromkeys(r["set"] for r in rows))
    for group in [*sets, "all"]:
        chosen = [r for r in rows if group in ("all", r["set"])]
        excess = [int(r[column]) - int(r["optimal"]) for r in chosen if r[column]]
        wall = sum(float(r["wall_s"]) for r in chosen)
        lines.append(
            f"| {group} | {len(chosen)} | {sum(e == 0 for e in excess)} | "
            f"{len(chosen) - len(excess)} | {statistics.mean(excess):.3f} | {max(excess)} | "
            f"{wall:.1f} |"
        )
    return lines


def settings(rows: list[dict[str, str]]) -> str:
    """The CP-SAT settings and machine load recorded in ``rows``."""
    limits = sorted({r["time_limit_s"] for r in rows})
    workers = sorted({r["workers"] for r in rows})
    load = [float(r["load1"]) for r in rows]
    modes = sorted({r.get("mode") or MODE[False] for r in rows})  # older CSVs: wall clock
    budget = " / ".join(
        f"{', '.join(limits)} {'deterministic units' if m == MODE[True] else 's wall clock'}"
        for m in modes
    )
    dependent = "" if modes == [MODE[True]] else " (wall-clock results depend on the load)"
    return (
        f"CP-SAT: limit {budget} per solve, {', '.join(workers)} workers; 1-minute load "
        f"average after each solve: mean {statistics.mean(load):.1f}, max {max(load):.1f}"
        f"{dependent}."
    )


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
        lines += ["## `fewest_cores` on plain bin packing (all instances)", ""]
        lines += [*plain_table(heuristic, "bins"), ""]
    cpsat = read("cpsat")
    if cpsat:
        lines += ["## `CpSatBinPackingModel` (hinted with `fewest_cores`)", ""]
        lines += [settings(cpsat), ""]
        lines += [*plain_table(cpsat, "bins"), ""]
        lines += ["Mean and max excess are over the instances with a solution.", ""]
        lines += ["The hint on the same instances:", ""]
        lines += [*plain_table([{**r, "wall_s": "0"} for r in cpsat], "hint_bins"), ""]
    shared = read("shared")
    if shared:
        lines += ["## Shared-weight stage packing (resnet18, arch-a, 4 lanes)", ""]
        lines += [settings(shared), ""]
        lines += [
            "| instance | tasks | edges | weights | cores | bound | heuristic | cpsat | "
            "cpsat bound | status | heuristic / cpsat | cpsat s |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
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
                f"{r['cpsat_bound']} | {r['cpsat_status']} | {ratio} | {r['cpsat_s']} |"
            )
    (RESULTS / "binpacking_summary.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["heuristic", "cpsat", "shared", "summary"])
    parser.add_argument("--time-limit", type=float, default=10.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--every", type=int, default=1)
    parser.add_argument(
        "--wall-clock",
        dest="deterministic",
        action="store_false",
        help="CP-SAT budget in wall-clock seconds (load-dependent) instead of the default "
        "deterministic units",
    )
    args = parser.parse_args()
    if args.mode == "heuristic":
        run_heuristic()
    elif args.mode == "cpsat":
        run_cpsat(args.time_limit, args.workers, args.every, args.deterministic)
    elif args.mode == "shared":
        run_shared(args.time_limit, args.workers, args.deterministic)
    summary()


if __name__ == "__main__":
    main()
