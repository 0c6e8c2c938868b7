"""raptor-cp ``auto`` against every list heuristic of SAGA on the STG-50 pairs (issue #13).

Usage (SAGA's newest release needs Python >= 3.12, so it lives in its own venv
with raptor-cp installed beside it; raptor_cp itself never imports saga)::

    python3.12 -m venv /work/venv-saga
    /work/venv-saga/bin/pip install anrg-saga==2.1.0 --no-deps
    /work/venv-saga/bin/pip install pysmt pydantic networkx numpy scipy pandas matplotlib -e .
    cd benchmarks && PYTHONHASHSEED=0 /work/venv-saga/bin/python bench_saga_latency.py \
        --out results/saga_latency.csv [--limit N] [--slow-limit 20]

Every scheduler class of ``saga.schedulers`` that builds with no arguments is
run, except the exact ones (``BruteForceScheduler``, ``SMTScheduler``). The
instance conversion is `bench_saga.to_saga` (equal costs, no communication on
``generic:P``); each SAGA schedule is re-timed with raptor-cp's `evaluate`
from its per-core order, and that re-timed makespan is the one compared
(SAGA's own value is kept in the CSV; a schedule that does not place every
task is reported as not re-timed, and a scheduler that raises is recorded
with its error; both are left out of the comparison).
Schedulers in ``SLOW`` (seconds per instance) run only on the first
``--slow-limit`` instances. The summary counts, per SAGA scheduler and for the
best of them, the pairs where it is shorter than raptor-cp ``auto``.
"""

from __future__ import annotations

import argparse
import csv
import logging
import math
import pathlib
import time

from bench_saga import STG, from_saga, to_saga
from bench_scaling import machine_info

from raptor_cp.errors import ScheduleViolationError
from raptor_cp.evaluation import evaluate
from raptor_cp.flows import prepare
from raptor_cp.problems import LatencyProblem
from raptor_cp.solvers import solve
from raptor_cp.targets.generic import GenericTarget
from raptor_cp.workload.load import load_workload

EXACT = frozenset({"BruteForceScheduler", "SMTScheduler"})
SLOW = frozenset({"DPSScheduler"})
"""About 24 s per 50-task instance on the benchmark machine."""


def saga_schedulers() -> dict[str, object]:
    """Every heuristic scheduler of saga that builds without arguments, by class name."""
    import saga.schedulers as module

    found = {}
    for name in sorted(dir(module)):
        if not name.endswith("Scheduler") or name in EXACT:
            continue
        try:
            found[name] = getattr(module, name)()
        except Exception:
            continue
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--slow-limit", type=int, default=20)
    parser.add_argument("--out", type=pathlib.Path, required=True)
    args = parser.parse_args()
    logging.getLogger().setLevel(logging.ERROR)
    schedulers = saga_schedulers()
    files = sorted((STG / "50").glob("*.stg"))[: args.limit]
    rows = []
    with args.out.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["instance", "procs", "scheduler", "saga_makespan", "retimed", "seconds"])
        for index, path in enumerate(files):
            workload = load_workload(path)
            for procs in (2, 4, 8, 16):
                target = GenericTarget(procs)
                graph = prepare(workload, target).graph
                problem = LatencyProblem(graph, target)
                began = time.perf_counter()
                auto = solve(problem, "auto")
                row = {"auto": auto.objective, "instance": path.name, "procs": procs}
                writer.writerow(
                    [
                        path.name,
                        procs,
                        "raptor auto",
                        auto.objective,
                        auto.objective,
                        f"{time.perf_counter() - began:.4f}",
                    ]
                )
                for name, scheduler in schedulers.items():
                    if name in SLOW and index >= args.slow_limit:
                        continue
                    task_graph, network = to_saga(graph, target)
                    began = time.perf_counter()
                    try:
                        schedule = scheduler.schedule(network, task_graph)  # type: ignore[attr-defined]
                    except Exception as error:  # a saga bug: recorded, not compared
                        row[name] = None
                        writer.writerow([path.name, procs, name, f"error: {error!r}", "", ""])
                        continue
                    seconds = time.perf_counter() - began
                    try:
                        retimed: int | None = evaluate(
                            problem, from_saga(graph, procs, schedule)
                        ).makespan_ns
                    except ScheduleViolationError:
                        retimed = None
                    row[name] = retimed
                    writer.writerow(
                        [path.name, procs, name, schedule.makespan, retimed, f"{seconds:.4f}"]
                    )
                handle.flush()
                rows.append(row)
    print("# raptor-cp auto vs SAGA heuristics, STG-50\n")
    print(machine_info(("raptor-cp", "anrg-saga")) + "\n")
    print("| SAGA scheduler | pairs run | re-timed | shorter than auto | equal | longer |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in schedulers:
        ran = [r for r in rows if name in r]
        timed = [r for r in ran if r[name] is not None]
        shorter = sum(r[name] < r["auto"] for r in timed)
        equal = sum(r[name] == r["auto"] for r in timed)
        print(
            f"| {name} | {len(ran)} | {len(timed)} | {shorter} | {equal} "
            f"| {len(timed) - shorter - equal} |"
        )
    best = [min((r[n] for n in schedulers if r.get(n) is not None), default=math.inf) for r in rows]
    beaten = [r for r, b in zip(rows, best, strict=True) if b < r["auto"]]
    print(f"\nBest SAGA heuristic shorter than auto on {len(beaten)} of {len(rows)} pairs", end="")
    print(": " + ", ".join(f"{r['instance']}/P={r['procs']}" for r in beaten) if beaten else ".")


if __name__ == "__main__":
    main()
