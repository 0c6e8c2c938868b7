"""``auto`` portfolio and polish on the Kasahara STG 50-task set (issue #13).

Usage::

    python benchmarks/bench_latency_stg.py [--procs 2,4,8,16] [--limit N]
        [--polish 1 5] [--workers 1] --out benchmarks/results/latency_stg.csv

For every (instance, P) pair on ``generic:P`` (no communication) the script runs
each portfolio member (PEFT, HEFT, CPOP), ``auto``, and `polish` from ``auto``'s
incumbent with each ``--polish`` budget (CP-SAT deterministic units, seed 0,
``--workers`` workers), and records makespan, proved bound, status and wall
seconds. Optimal share and gaps use the published lower bound of
``benchmarks/data/stg-kasahara/reference_makespan.csv`` (the optimum where one
is published), like ``bench_stg.py``; ``proved`` counts pairs whose makespan
meets raptor-cp's own proved bound (analytic or CP-SAT).

Polish runs are deterministic: the search for budget ``b`` is the prefix of the
search for a larger budget. So a larger budget is run only on pairs where the
smaller one stopped without proving optimality; elsewhere its result is the
smaller budget's (same schedule, same proof) and counted with the same time.
Every polished schedule is re-checked with `check` and re-timed with `evaluate`.
Rows are appended to ``--out`` as pairs finish; the summary goes to stdout.
"""

from __future__ import annotations

import argparse
import csv
import pathlib
import statistics
import time

from bench_scaling import machine_info

from raptor_cp.evaluation import evaluate
from raptor_cp.flows import prepare
from raptor_cp.models.polish import polish
from raptor_cp.models.solve import SolveSettings
from raptor_cp.problems import LatencyProblem, LatencySolution, Status
from raptor_cp.problems.latency import check_schedule
from raptor_cp.solvers import solve
from raptor_cp.targets.generic import GenericTarget

DATA = pathlib.Path(__file__).resolve().parent / "data" / "stg-kasahara"
MEMBERS = ("peft", "heft", "cpop")


def references(
    procs: list[int], limit: int | None, skip: int = 0
) -> list[tuple[str, int, str, int]]:
    """(instance, P, published status, published lower bound) rows, sorted; the first
    ``skip`` instances left out, then at most ``limit``."""
    with (DATA / "reference_makespan.csv").open(newline="") as handle:
        rows = [
            (r["instance"], int(r["procs"]), r["status"], int(r["lower_bound"]))
            for r in csv.DictReader(handle)
            if int(r["procs"]) in procs
        ]
    chosen = set(sorted({r[0] for r in rows})[skip:][:limit])
    return sorted(r for r in rows if r[0] in chosen)


def confirmed(problem: LatencyProblem, solution: LatencySolution) -> int:
    """The makespan of ``solution`` after `check` and `evaluate` agree with it."""
    assert solution.schedule is not None and solution.objective is not None
    check_schedule(problem, solution.schedule)
    makespan = evaluate(problem, solution.schedule).makespan_ns
    if makespan != solution.objective:
        raise AssertionError(f"{problem.graph.name}: objective {solution.objective} != {makespan}")
    return makespan


def run_pair(
    instance: str, procs: int, budgets: list[float], workers: int, wall_cap: float | None = None
) -> dict[str, object]:
    """One CSV row: every member, auto, and each polish budget on (instance, procs)."""
    prepared = prepare(DATA / instance, GenericTarget(procs))
    problem = LatencyProblem(prepared.graph, prepared.target)
    row: dict[str, object] = {"instance": instance, "procs": procs}
    for name in (*MEMBERS, "auto"):
        began = time.perf_counter()
        solution = solve(problem, name)
        row[name] = confirmed(problem, solution)
        row[f"{name}_s"] = round(time.perf_counter() - began, 4)
        if name == "auto":
            row["auto_winner"] = solution.details["winner"]
            row["bound"] = solution.bound
            incumbent = solution
    previous: LatencySolution | None = None
    previous_s = 0.0
    for budget in budgets:
        key = f"polish{budget:g}"
        if previous is not None and previous.status == Status.OPTIMAL:
            polished, seconds = previous, previous_s
        else:
            began = time.perf_counter()
            settings = SolveSettings(budget, workers, wall_cap_s=wall_cap)
            polished = polish(problem, incumbent, settings)
            seconds = row["auto_s"] + time.perf_counter() - began  # type: ignore[operator]
        row[key] = confirmed(problem, polished)
        row[f"{key}_bound"] = polished.bound
        row[f"{key}_status"] = polished.status.value
        row[f"{key}_s"] = round(float(seconds), 4)
        row[f"{key}_wall_capped"] = polished.details["polish"].get("wall_capped", False)
        previous, previous_s = polished, float(seconds)
    return row


def best_bounds(rows: list[dict[str, str]], refs: dict[tuple[str, int], tuple[str, int]]) -> dict:
    """Per pair, the best lower bound known: the published one or any bound raptor-cp proved."""
    best = {}
    for r in rows:
        key = (r["instance"], int(r["procs"]))
        proved = [int(r[k]) for k in r if k == "bound" or k.endswith("_bound")]
        best[key] = max([refs[key][1], *proved])
    return best


def summary(rows: list[dict[str, str]], refs: dict[tuple[str, int], tuple[str, int]]) -> str:
    """Markdown table per solver column: optimal share, gaps to the best bound, time.

    *Optimal*: the makespan equals the best lower bound known (published or proved
    here), so it is the optimum. *Proved*: raptor-cp's own bound (analytic or
    CP-SAT) meets the makespan. Gaps are (makespan - best bound) / best bound, in %.
    """
    bound = best_bounds(rows, refs)
    keys = [
        k for k in rows[0] if k in (*MEMBERS, "auto") or (k.startswith("polish") and "_" not in k)
    ]
    lines = [
        "| solver | pairs | optimal | optimal % | proved by raptor-cp | mean gap % | max gap % "
        "| mean s/pair | max s/pair |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for key in keys:
        made = [(int(r[key]), bound[r["instance"], int(r["procs"])]) for r in rows]
        gaps = [100.0 * (m - b) / b for m, b in made]
        optimal = sum(m == b for m, b in made)
        own = f"{key}_bound" if f"{key}_bound" in rows[0] else "bound"
        proved = sum(int(r[key]) <= int(r[own]) for r in rows)
        seconds = [float(r[f"{key}_s"]) for r in rows]
        lines.append(
            f"| {key} | {len(rows)} | {optimal} | {100 * optimal / len(rows):.1f} | {proved} "
            f"| {statistics.fmean(gaps):.3f} | {max(gaps):.2f} | {statistics.fmean(seconds):.3f} "
            f"| {max(seconds):.2f} |"
        )
    worse = sum(int(r["auto"]) > min(int(r["peft"]), int(r["heft"])) for r in rows)
    counts = {m: sum(r["auto_winner"] == m for r in rows) for m in MEMBERS}
    capped = sum(r[k] == "True" for r in rows for k in r if k.endswith("_wall_capped"))
    lines += [
        "",
        f"auto longer than HEFT or PEFT on {worse} pairs; winners {counts}; "
        f"polish runs cut by the wall-clock safeguard: {capped}.",
    ]
    return "\n".join(lines)


def read_rows(path: pathlib.Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--procs", default="2,4,8,16")
    parser.add_argument("--limit", type=int, default=None, help="only the first N instances")
    parser.add_argument("--skip", type=int, default=0, help="leave out the first N instances")
    parser.add_argument("--polish", type=float, nargs="*", default=[1.0, 5.0])
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--out", type=pathlib.Path, required=True)
    parser.add_argument(
        "--summarize", action="store_true", help="only summarise an existing --out CSV"
    )
    parser.add_argument("--wall-cap", type=float, default=None, help="wall safeguard, s")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="keep the rows of --out whose polish the wall-clock safeguard did not cut",
    )
    args = parser.parse_args()
    budgets = sorted(args.polish)
    refs = references([int(p) for p in args.procs.split(",")], args.limit, args.skip)
    refs_by_pair = {(i, p): (status, lb) for i, p, status, lb in refs}
    if args.summarize:
        print(summary(read_rows(args.out), refs_by_pair))
        return
    kept = {}
    if args.resume and args.out.exists():
        kept = {
            (r["instance"], int(r["procs"])): r
            for r in read_rows(args.out)
            if not any(r[k] == "True" for k in r if k.endswith("_wall_capped"))
        }
    with args.out.open("w", newline="") as handle:
        writer: csv.DictWriter[str] | None = None
        for instance, procs, _, _ in refs:
            row = kept.get((instance, procs)) or run_pair(
                instance, procs, budgets, args.workers, args.wall_cap
            )
            if writer is None:
                writer = csv.DictWriter(handle, list(row))
                writer.writeheader()
            writer.writerow(row)
            handle.flush()
    print("# Latency portfolio and polish on STG-50\n")
    print(machine_info(("raptor-cp", "ortools")) + "\n")
    print(summary(read_rows(args.out), refs_by_pair))


if __name__ == "__main__":
    main()
