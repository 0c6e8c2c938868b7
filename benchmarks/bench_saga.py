"""raptor-cp's HEFT and PEFT side by side with the HEFT and CPoP of SAGA (``anrg-saga``).

Usage (optional benchmark extra; raptor_cp itself never imports saga)::

    pip install anrg-saga==2.0.2 --no-deps && pip install pysmt pydantic networkx numpy
    PYTHONHASHSEED=0 python benchmarks/bench_saga.py [--seeds 5] [--sizes 100 300 500]

SAGA (github.com/ANRGUSC/saga, "Scheduling Algorithms Gathered") is licensed for
non-commercial use only, so it stays a benchmark-only dependency. Its package
``saga.schedulers`` imports every scheduler, hence ``pysmt`` (pure Python, no
solver needed); ``pydantic``, ``networkx`` and ``numpy`` are what the HEFT and
CPoP code paths use. Its other declared dependencies are not needed here.

Instance sets
    * the 180 Kasahara STG 50-task graphs (``benchmarks/data/stg-kasahara/50``; no
      communication) on ``generic:P`` for P = 2, 4, 8, 16, with the best known
      makespans of ``reference_makespan.csv``;
    * seeded random layered DAGs (``bench_scaling.random_layered_dag``) of
      ``--sizes`` tasks, costs 10..100 ns, edge bytes uniform in
      ``1..round(2 * CCR * 55)`` (mean communication / mean cost ~ CCR) for
      CCR = 0.1, 1, 10, on ``generic:P:1`` for P = 4, 16.

Conversion (`to_saga`): the one of ``raptor-cp report``'s saga adapter
(``benchmarks/adapters/saga_scheduler.py``): each task becomes a saga task of
the same cost, each edge a dependency whose size is its transfer time, on ``P``
nodes of speed 1 with links of speed 1, so saga's ``size / speed`` equals
raptor's transfer time; saga's self-links have infinite speed (free transfers on
one node), as in raptor. SAGA's
``TaskGraph.create`` adds a zero-cost ``__super_source__``/``__super_sink__``
when a graph has several entries/exits; they carry no data and are dropped when
a saga schedule is read back. Every saga schedule is re-timed by raptor-cp's
`evaluate` from its per-core order: equal makespans confirm the conventions.
The Topcuoglu example cannot be used for that check: its execution-time matrix
is not ``cost / speed`` (saga's only heterogeneity model), e.g. task 1 costs
14/16/9 and task 2 13/19/18 on the three processors.

Timing: ``time.perf_counter`` around raptor's ``LatencyProblem`` construction
(input validation) plus ``solve``, and around saga's ``schedule`` call (its
``TaskGraph.create`` is not counted), inputs rebuilt before every call and
saga's memoised (``lru_cache``) ranks cleared, so no run reuses another's work; the four
runs of an instance alternate their order from one instance to the next.
Makespan ratios are arithmetic means of per-instance ratios; wall-time ratios
are geometric means of per-instance ``saga / raptor``.
"""

from __future__ import annotations

import argparse
import csv
import logging
import math
import os
import pathlib
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from adapters import saga_scheduler as saga_adapter
from bench_scaling import fresh, machine_info, random_layered_dag

from raptor_cp.evaluation import evaluate
from raptor_cp.graph import ComputeGraph
from raptor_cp.heuristics.heft import HeftScheduler, upward_rank
from raptor_cp.heuristics.list_common import list_order
from raptor_cp.heuristics.peft import PeftScheduler
from raptor_cp.problems import LatencyProblem
from raptor_cp.schedule import Schedule
from raptor_cp.suite.external import instance_json
from raptor_cp.targets.generic import GenericTarget
from raptor_cp.workload.load import load_workload
from raptor_cp.workload.lowering import lower

STG = pathlib.Path(__file__).resolve().parent / "data" / "stg-kasahara"
SEED = 20260502
MEAN_COST = 55
"""Mean of the random DAGs' uniform 10..100 ns task costs."""
SAGA_VERSION = "2.0.2"


def to_saga(graph: ComputeGraph, target: GenericTarget) -> tuple[object, object]:
    """saga ``(TaskGraph, Network)`` equivalent to ``(graph, target)``: the suite adapter's
    conversion (`adapters.saga_scheduler.to_saga`) of raptor-cp's external instance."""
    return saga_adapter.to_saga(instance_json(LatencyProblem(graph, target)))


def from_saga(graph: ComputeGraph, cores: int, schedule: object) -> Schedule:
    """The saga ``schedule`` as a raptor `Schedule` (per-core order by start; starts are
    left to `evaluate`, which re-times every saga schedule)."""
    index = {name: t for t, name in enumerate(graph.names)}
    order = saga_adapter.core_orders(schedule, cores, set(index))
    start = np.zeros(graph.num_tasks, dtype=np.int64)
    return Schedule(tuple(tuple(index[n] for n in o) for o in order), start, "saga")


def clear_saga_caches() -> None:
    """Empty saga's memoised ranks so that no timed call reuses a previous one's."""
    from saga.schedulers import cpop

    cpop.upward_rank.cache_clear()
    cpop.cpop_ranks.cache_clear()


@dataclass
class Outcome:
    """Makespans (ns) and wall seconds of the four schedulers on one instance."""

    makespan: dict[str, float] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    saga_retimed_ok: bool = True
    same_ranks: bool = False
    same_order: bool = False
    reference: int | None = None


def run_instance(graph: ComputeGraph, target: GenericTarget, flip: bool) -> Outcome:
    """Run raptor HEFT/PEFT and saga HEFT/CPoP on one instance (order reversed if ``flip``)."""
    from saga.schedulers.cpop import CpopScheduler
    from saga.schedulers.cpop import upward_rank as saga_upward_rank
    from saga.schedulers.heft import HeftScheduler as SagaHeft
    from saga.schedulers.heft import heft_rank_sort

    outcome = Outcome()
    saga_schedules = {}

    def raptor(name: str, solver: HeftScheduler | PeftScheduler) -> Callable[[], None]:
        def go() -> None:
            began = time.perf_counter()
            solution = solver.solve(LatencyProblem(fresh(graph), target))
            outcome.seconds[name] = time.perf_counter() - began
            assert solution.objective is not None
            outcome.makespan[name] = solution.objective

        return go

    def saga(name: str, scheduler: SagaHeft | CpopScheduler) -> Callable[[], None]:
        def go() -> None:
            task_graph, network = to_saga(graph, target)
            clear_saga_caches()
            began = time.perf_counter()
            schedule = scheduler.schedule(network, task_graph)
            outcome.seconds[name] = time.perf_counter() - began
            outcome.makespan[name] = schedule.makespan
            saga_schedules[name] = schedule

        return go

    runs = [
        raptor("raptor HEFT", HeftScheduler()),
        saga("saga HEFT", SagaHeft()),
        raptor("raptor PEFT", PeftScheduler()),
        saga("saga CPoP", CpopScheduler()),
    ]
    for run in reversed(runs) if flip else runs:
        run()
    problem = LatencyProblem(graph, target)
    for name, schedule in saga_schedules.items():
        retimed = evaluate(problem, from_saga(graph, target.cores, schedule)).makespan_ns
        outcome.saga_retimed_ok &= math.isclose(retimed, outcome.makespan[name])
    task_graph, network = to_saga(graph, target)
    saga_order = [name for name in heft_rank_sort(network, task_graph) if name in graph.names]
    rank = upward_rank(problem)
    outcome.same_order = saga_order == [graph.names[t] for t in list_order(graph, rank).tolist()]
    saga_rank = saga_upward_rank(network, task_graph)
    outcome.same_ranks = all(
        math.isclose(saga_rank[name], r / target.cores, rel_tol=1e-9, abs_tol=1e-6)
        for name, r in zip(graph.names, rank.tolist(), strict=True)
    )
    return outcome


PAIRS = (
    ("raptor HEFT", "saga HEFT"),
    ("raptor PEFT", "saga HEFT"),
    ("raptor HEFT", "saga CPoP"),
    ("raptor PEFT", "saga CPoP"),
)
TIME_PAIRS = (
    ("saga HEFT", "raptor HEFT"),
    ("saga HEFT", "raptor PEFT"),
    ("saga CPoP", "raptor HEFT"),
)


def geomean(values: list[float]) -> float:
    return math.exp(statistics.fmean(math.log(v) for v in values))


def summary_rows(label: str, outcomes: list[Outcome]) -> tuple[str, str, str]:
    """Markdown rows (makespan, time, agreement) for one instance set."""
    n = len(outcomes)
    ratios = " | ".join(
        f"{statistics.fmean(o.makespan[a] / o.makespan[b] for o in outcomes):.4f}" for a, b in PAIRS
    )
    with_ref = [o for o in outcomes if o.reference]
    versus_ref = " | ".join(
        f"{statistics.fmean(o.makespan[s] / o.reference for o in with_ref):.4f}"
        if with_ref
        else "-"
        for s in ("raptor HEFT", "raptor PEFT", "saga HEFT", "saga CPoP")
    )
    times = " | ".join(
        f"{geomean([o.seconds[a] / o.seconds[b] for o in outcomes]):.1f}" for a, b in TIME_PAIRS
    )
    totals = " | ".join(
        f"{sum(o.seconds[s] for o in outcomes):.2f}"
        for s in ("raptor HEFT", "raptor PEFT", "saga HEFT", "saga CPoP")
    )
    equal = [
        o for o in outcomes if math.isclose(o.makespan["raptor HEFT"], o.makespan["saga HEFT"])
    ]
    same_ranks = sum(o.same_ranks for o in outcomes)
    same_order = sum(o.same_order for o in outcomes)
    heft_better = sum(o.makespan["raptor HEFT"] < o.makespan["saga HEFT"] for o in outcomes)
    return (
        f"| {label} | {n} | {ratios} | {versus_ref} |",
        f"| {label} | {n} | {times} | {totals} |",
        f"| {label} | {n} | {len(equal)} | {heft_better} | {n - len(equal) - heft_better} "
        f"| {same_ranks} | {same_order} | {sum(o.saga_retimed_ok for o in outcomes)} |",
    )


def stg_sets(limit: int | None) -> list[tuple[str, list[tuple[ComputeGraph, GenericTarget, int]]]]:
    """The STG instance sets, one per core count, with their best known makespans."""
    reference = {}
    with (STG / "reference_makespan.csv").open() as file:
        for row in csv.DictReader(file):
            reference[(row["instance"], int(row["procs"]))] = int(row["upper_bound"])
    files = sorted((STG / "50").glob("*.stg"))[:limit]
    workloads = [(f"50/{path.name}", load_workload(path)) for path in files]
    sets = []
    for cores in (2, 4, 8, 16):
        target = GenericTarget(cores)
        instances = [(lower(w, target), target, reference[(key, cores)]) for key, w in workloads]
        sets.append((f"STG-50, P={cores}", instances))
    return sets


def random_sets(
    sizes: list[int], seeds: int
) -> list[tuple[str, list[tuple[ComputeGraph, GenericTarget, None]]]]:
    """The random layered DAG sets, one per (CCR, P), ``seeds`` graphs per size."""
    sets = []
    for ccr in (0.1, 1.0, 10.0):
        top = max(1, round(2 * ccr * MEAN_COST))
        for cores in (4, 16):
            target = GenericTarget(cores, 1)
            instances = [
                (
                    random_layered_dag(
                        np.random.default_rng([SEED, tasks, seed, int(10 * ccr), cores]),
                        tasks,
                        cost_range=(10, 100),
                        bytes_range=(1, top),
                        name=f"layered{tasks}-{seed}",
                    ),
                    target,
                    None,
                )
                for tasks in sizes
                for seed in range(seeds)
            ]
            sets.append((f"layered {min(sizes)}-{max(sizes)}, CCR={ccr:g}, P={cores}", instances))
    return sets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 300, 500])
    parser.add_argument("--seeds", type=int, default=5, help="random graphs per size and set")
    parser.add_argument("--stg-limit", type=int, default=None, help="use only the first N STGs")
    args = parser.parse_args()
    logging.getLogger().setLevel(logging.ERROR)  # saga warns on every super source/sink
    try:
        import saga.schedulers  # noqa: F401
    except ImportError as error:
        raise SystemExit(
            f"bench_saga needs anrg-saga=={SAGA_VERSION} (see the module docstring): {error}"
        ) from None
    print("# raptor-cp vs SAGA (HEFT, CPoP)\n")
    print(machine_info(("raptor-cp", "anrg-saga", "numpy", "networkx", "pydantic", "pysmt")))
    print(f"- PYTHONHASHSEED={os.environ.get('PYTHONHASHSEED', 'unset')}\n", flush=True)
    rows: tuple[list[str], list[str], list[str]] = ([], [], [])
    flip = False
    for label, instances in [*stg_sets(args.stg_limit), *random_sets(args.sizes, args.seeds)]:
        outcomes = []
        for graph, target, reference in instances:
            outcome = run_instance(graph, target, flip)
            outcome.reference = reference
            outcomes.append(outcome)
            flip = not flip
        for table, row in zip(rows, summary_rows(label, outcomes), strict=True):
            table.append(row)
        print(f"<!-- done: {label} -->", flush=True)
    names = " | ".join(f"{a} / {b}" for a, b in PAIRS)
    print(f"\n## Makespan ratios (mean of per-instance ratios)\n\n| set | n | {names} ", end="")
    print("| rHEFT / best known | rPEFT / best known | sHEFT / best known | sCPoP / best known |")
    print("|---|---:|" + "---:|" * 8)
    print("\n".join(rows[0]))
    names = " | ".join(f"{a} / {b}" for a, b in TIME_PAIRS)
    print(
        f"\n## Wall-time ratios (geometric mean of per-instance ratios)\n\n| set | n | {names} ",
        end="",
    )
    print("| total s rHEFT | total s rPEFT | total s sHEFT | total s sCPoP |")
    print("|---|---:|" + "---:|" * 7)
    print("\n".join(rows[1]))
    print("\n## HEFT agreement\n")
    print(
        "| set | n | same makespan | raptor HEFT shorter | saga HEFT shorter "
        "| same rank values | same priority order | saga schedules re-timed equal |"
    )
    print("|---|---:|" + "---:|" * 6)
    print("\n".join(rows[2]))


if __name__ == "__main__":
    main()
