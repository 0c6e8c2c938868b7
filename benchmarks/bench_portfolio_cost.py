"""Cost of ``auto`` over one list scheduler on 10^5-task layered DAGs (issue #13).

Usage::

    python benchmarks/bench_portfolio_cost.py [--tasks 100000] [--targets generic:16:1 arch-a]

Each target gets the seeded random layered DAG of `bench_scaling` (costs
100..1000 ns, 64..4096 bytes per edge). Times PEFT alone, HEFT alone and
``auto`` (`time.perf_counter` around ``solve``, problem construction included,
one run each, cold adjacency caches via `bench_scaling.fresh`) and reports
``auto / PEFT``. The layered DAGs have no resident weights, so the replica
members are skipped: on capacity-limited targets their cost adds one
replication plan plus a PEFT and a HEFT pass (see the PIM rows of
docs/benchmarks.md for those wall times).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from bench_scaling import SEED, fresh, machine_info, random_layered_dag

from raptor_cp.problems import LatencyProblem
from raptor_cp.solvers import solve
from raptor_cp.targets.registry import resolve_target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=100_000)
    parser.add_argument("--targets", nargs="+", default=["generic:16:1", "arch-a"])
    args = parser.parse_args()
    print("# Portfolio cost\n")
    print(machine_info(("raptor-cp", "numpy")) + "\n")
    print("| target | tasks | edges | PEFT s | HEFT s | CPOP s | auto s | auto / PEFT | winner |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|", flush=True)
    for spec in args.targets:
        target = resolve_target(spec)
        graph = random_layered_dag(
            np.random.default_rng([SEED, args.tasks]),
            args.tasks,
            cost_range=(100, 1000),
            bytes_range=(64, 4096),
            name=f"layered{args.tasks}",
        )
        seconds = {}
        for name in ("peft", "heft", "cpop", "auto"):
            began = time.perf_counter()
            solution = solve(LatencyProblem(fresh(graph), target), name)
            seconds[name] = time.perf_counter() - began
        print(
            f"| {spec} | {graph.num_tasks} | {graph.num_edges} | {seconds['peft']:.2f} "
            f"| {seconds['heft']:.2f} | {seconds['cpop']:.2f} | {seconds['auto']:.2f} "
            f"| {seconds['auto'] / seconds['peft']:.2f} | {solution.details['winner']} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
