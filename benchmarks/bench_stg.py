"""PEFT, HEFT and CP-SAT on the Kasahara STG 50-task graphs against the published makespans.

Usage::

    python benchmarks/bench_stg.py [--procs 2,4,8,16] [--cpsat | --no-cpsat]
        [--time-limit 10] [--workers 2] [--wall-clock] [--limit N] [--out rows.csv]

Instances are the 180 random 50-task graphs of the Standard Task Graph Set
(Tobita & Kasahara, J. Scheduling 5(5):379-394, 2002), scheduled on
``generic:P`` (P identical cores, no communication cost: the problem
P | prec | Cmax the set was published for). Reference values come from
``benchmarks/data/stg-kasahara/reference_makespan.csv`` (see PROVENANCE.md
there): a published optimum, or a proved lower bound and the best known length.

For PEFT and HEFT the script counts the instances solved optimally (makespan
equal to the published lower bound, which is the optimum where one is known)
and reports the gaps ``(makespan - bound) / bound`` in percent to the published
lower bound and to the best known upper bound, and the total wall time.

With ``--cpsat`` (the default) each instance is also given to `CpSatLatencyModel`
in deterministic mode (``--time-limit`` deterministic units, no wall-clock cap;
``--wall-clock`` for the old load-dependent budget), hinted with
the better heuristic schedule, unless a heuristic already reached the library's
own lower bound max(critical path, ceil(work / P)): that instance is proved
optimal without search and counted as such (column ``cpsat_note``). Meeting only
a published bound is not used as a proof here, because it is second-hand.
Instances whose heuristics did not close them are solved first, those with only
bounds published leading, so that a partial run covers the interesting cases;
each finished instance is appended to ``--out`` at once. SIGTERM or Ctrl-C stops
the run after the instance being solved and the
summary then covers exactly the finished instances.

Every claim that improves on a published value (a makespan below the best known
length, or a CP-SAT bound above the published lower bound) is listed by name.
A makespan claim is backed by a schedule that is re-checked here with
`raptor_cp.problems.check` and re-timed with `raptor_cp.evaluation.evaluate`; a bound
claim rests on CP-SAT's proof of the model in `raptor_cp.models.latency`.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import itertools
import os
import pathlib
import platform
import shlex
import signal
import statistics
import sys
import time
from dataclasses import dataclass, field
from types import FrameType

from raptor_cp.evaluation import evaluate
from raptor_cp.flows import prepare
from raptor_cp.heuristics.heft import HeftScheduler
from raptor_cp.heuristics.peft import PeftScheduler
from raptor_cp.models.solve import SolveSettings
from raptor_cp.problems import LatencyProblem, LatencySolution
from raptor_cp.problems.latency import check_schedule
from raptor_cp.targets.generic import GenericTarget

DATA = pathlib.Path(__file__).resolve().parent / "data" / "stg-kasahara"
HEURISTICS = (PeftScheduler(), HeftScheduler())
FIELDS = (
    "instance",
    "procs",
    "published_status",
    "published_lb",
    "published_ub",
    "library_lb",
    "peft",
    "peft_s",
    "heft",
    "heft_s",
    "cpsat_status",
    "cpsat_objective",
    "cpsat_bound",
    "cpsat_s",
    "cpsat_note",
)


@dataclass(frozen=True)
class Reference:
    """One row of reference_makespan.csv: published bounds of one instance on ``procs`` cores."""

    instance: str
    procs: int
    status: str
    lower: int
    upper: int
    trivial: int


@dataclass
class Row:
    """Everything measured on one (instance, procs) pair; CP-SAT fields stay empty if not run."""

    ref: Reference
    library_lb: int
    heuristic: dict[str, LatencySolution]
    cpsat: LatencySolution | None = None
    cpsat_note: str = ""
    claims: list[str] = field(default_factory=list)

    def best_heuristic(self) -> LatencySolution:
        """The shorter heuristic schedule; ties go to the first of `HEURISTICS` (PEFT)."""
        return min(self.heuristic.values(), key=lambda s: s.objective or 0)

    def as_csv(self) -> dict[str, object]:
        cpsat = self.cpsat
        return {
            "instance": self.ref.instance,
            "procs": self.ref.procs,
            "published_status": self.ref.status,
            "published_lb": self.ref.lower,
            "published_ub": self.ref.upper,
            "library_lb": self.library_lb,
            **{name: sol.objective for name, sol in self.heuristic.items()},
            **{f"{name}_s": f"{sol.wall_s:.4f}" for name, sol in self.heuristic.items()},
            "cpsat_status": "" if cpsat is None else cpsat.status.value,
            "cpsat_objective": "" if cpsat is None else cpsat.objective,
            "cpsat_bound": "" if cpsat is None else cpsat.bound,
            "cpsat_s": "" if cpsat is None else f"{cpsat.wall_s:.2f}",
            "cpsat_note": self.cpsat_note,
        }


class Stop:
    """Set by SIGTERM/SIGINT; the CP-SAT loop ends after the instance being solved."""

    requested = False

    @classmethod
    def handle(cls, signum: int, frame: FrameType | None) -> None:
        cls.requested = True


def read_references(procs: list[int], limit: int | None) -> list[Reference]:
    """The reference rows for ``procs`` of the first ``limit`` instances (all when None)."""
    with (DATA / "reference_makespan.csv").open(newline="") as handle:
        rows = [
            Reference(
                r["instance"],
                int(r["procs"]),
                r["status"],
                int(r["lower_bound"]),
                int(r["upper_bound"]),
                int(r["trivial_lb"]),
            )
            for r in csv.DictReader(handle)
        ]
    instances = sorted({r.instance for r in rows})[:limit]
    chosen = set(instances)
    wanted = [r for r in rows if r.instance in chosen and r.procs in procs]
    missing = len(instances) * len(procs) - len(wanted)
    if missing:
        sys.exit(f"error: reference_makespan.csv lacks {missing} of the requested rows")
    return sorted(wanted, key=lambda r: (r.instance, r.procs))


def confirm(problem: LatencyProblem, solution: LatencySolution, ref: Reference) -> int:
    """Re-check ``solution``'s schedule twice and return its makespan.

    First with the library (`check`, `evaluate`), then independently of the
    reader and lowering: task costs and predecessors are parsed again from the
    raw STG file (task names are the STG ids) and the evaluated starts must
    respect every precedence, never overlap on a core, and end by the makespan.
    """
    assert solution.schedule is not None
    check_schedule(problem, solution.schedule)
    timing = evaluate(problem, solution.schedule)
    makespan = timing.makespan_ns
    if makespan != solution.objective:
        raise AssertionError(f"{ref.instance}: objective {solution.objective} != {makespan}")
    lines = [
        line.split()
        for line in (DATA / ref.instance).read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    cost = {int(f[0]): int(f[1]) for f in lines[1:]}
    preds = {int(f[0]): [int(x) for x in f[3:]] for f in lines[1:]}
    names = [int(n) for n in problem.graph.names]
    start = dict(zip(names, timing.start_ns.tolist(), strict=True))
    core = dict(zip(names, solution.schedule.core.tolist(), strict=True))
    if sorted(names) != sorted(cost) or max(start[t] + cost[t] for t in cost) != makespan:
        raise AssertionError(f"{ref.instance}: schedule does not match the STG file")
    for task, before in preds.items():
        if any(start[task] < start[p] + cost[p] for p in before):
            raise AssertionError(f"{ref.instance}: task {task} starts before a predecessor ends")
    for p in range(ref.procs):
        busy = sorted((start[t], start[t] + cost[t]) for t in cost if core[t] == p and cost[t])
        if any(b[0] < a[1] for a, b in itertools.pairwise(busy)):
            raise AssertionError(f"{ref.instance}: overlapping tasks on core {p}")
    return makespan


def claims_of(ref: Reference, who: str, makespan: int | None, bound: int | None) -> list[str]:
    """Markdown rows for improvements on (or contradictions of) the published values."""
    better = makespan is not None and makespan < ref.upper
    raised = bound is not None and bound > ref.lower
    if not (better or raised):
        return []
    notes = []
    if better:
        notes.append("shorter than the best known")
    if raised:
        notes.append("bound above the published lower bound")
    if makespan is not None and bound is not None and makespan == bound:
        notes.append(f"optimum {makespan} proved")
    if (makespan is not None and makespan < ref.lower) or (bound is not None and bound > ref.upper):
        notes.append("CONTRADICTS the published values")
    return [
        f"| {ref.instance} | {ref.procs} | {ref.status} | {ref.lower} | {ref.upper} | {who} "
        f"| {'' if makespan is None else makespan} | {'' if bound is None else bound} "
        f"| {'; '.join(notes)} |"
    ]


def run_heuristics(ref: Reference) -> tuple[Row, LatencyProblem]:
    prepared = prepare(DATA / ref.instance, GenericTarget(ref.procs))
    problem = LatencyProblem(prepared.graph, prepared.target)
    solutions = {s.name: s.solve(problem) for s in HEURISTICS}
    row = Row(ref, next(iter(solutions.values())).bound or 0, solutions)
    for name, solution in solutions.items():
        row.claims += claims_of(ref, name, confirm(problem, solution, ref), None)
    return row, problem


def run_cpsat(row: Row, problem: LatencyProblem, args: argparse.Namespace) -> None:
    from raptor_cp.models.latency import CpSatLatencyModel  # lazy: imports ortools

    best = row.best_heuristic()
    if best.objective == row.library_lb:
        row.cpsat_note = f"{best.solver} reached the library lower bound: optimal, no search"
        return
    settings = SolveSettings(args.time_limit, args.workers, deterministic=args.deterministic)
    model = CpSatLatencyModel(settings, hint_with=None)
    solution = model.solve(problem, hint=best.schedule)
    row.cpsat = solution
    row.cpsat_note = f"hint {solution.details.get('hint')}"
    makespan = confirm(problem, solution, row.ref) if solution.schedule is not None else None
    row.claims += claims_of(row.ref, "cpsat", makespan, solution.bound)


def cpsat_order(rows: list[Row]) -> list[Row]:
    """Open instances first (bounds-only ones leading), then those a heuristic closed."""

    def key(row: Row) -> tuple[int, int, str, int]:
        closed = row.best_heuristic().objective == row.library_lb
        return (int(closed), int(row.ref.status != "bounds"), row.ref.instance, row.ref.procs)

    return sorted(rows, key=key)


def pct(value: int, reference: int) -> float:
    return 100.0 * (value - reference) / reference


def heuristic_table(rows: list[Row], procs: list[int]) -> list[str]:
    lines = [
        "| heuristic | procs | instances | optimal | mean gap to LB % | max gap to LB % "
        "| mean gap to best known % | wall total s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for solver in HEURISTICS:
        for group in [*procs, None]:
            chosen = [r for r in rows if group is None or r.ref.procs == group]
            made = [r.heuristic[solver.name].objective or 0 for r in chosen]
            lb = [pct(m, r.ref.lower) for m, r in zip(made, chosen, strict=True)]
            ub = [pct(m, r.ref.upper) for m, r in zip(made, chosen, strict=True)]
            optimal = sum(m == r.ref.lower for m, r in zip(made, chosen, strict=True))
            wall = sum(r.heuristic[solver.name].wall_s for r in chosen)
            lines.append(
                f"| {solver.name} | {'all' if group is None else group} | {len(chosen)} "
                f"| {optimal} | {statistics.fmean(lb):.2f} | {max(lb):.2f} "
                f"| {statistics.fmean(ub):.2f} | {wall:.2f} |"
            )
    return lines


def cpsat_table(rows: list[Row], procs: list[int]) -> list[str]:
    lines = [
        "| procs | covered | closed by heuristic (no search) | CP-SAT proved optimal "
        "| feasible, not proved | no solution | proved optimal in total | CP-SAT wall total s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for group in [*procs, None]:
        chosen = [r for r in rows if group is None or r.ref.procs == group]
        solved = [r.cpsat for r in chosen if r.cpsat is not None]
        closed = len(chosen) - len(solved)
        counts = {s: sum(x.status.value == s for x in solved) for s in ("optimal", "feasible")}
        nothing = len(solved) - counts["optimal"] - counts["feasible"]
        wall = sum(x.wall_s for x in solved)
        lines.append(
            f"| {'all' if group is None else group} | {len(chosen)} | {closed} "
            f"| {counts['optimal']} | {counts['feasible']} | {nothing} "
            f"| {closed + counts['optimal']} | {wall:.1f} |"
        )
    return lines


def machine_info() -> str:
    import ortools

    return (
        f"{datetime.datetime.now(datetime.UTC).strftime('%Y-%m-%d %H:%M UTC')}; "
        f"{platform.platform()}; {os.cpu_count()} CPUs; Python {platform.python_version()}; "
        f"OR-Tools {ortools.__version__}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--procs", default="2,4,8,16", help="comma-separated core counts")
    parser.add_argument("--cpsat", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--time-limit", type=float, default=10.0, help="CP-SAT limit per instance")
    parser.add_argument("--workers", type=int, default=min(8, os.cpu_count() or 1))
    parser.add_argument(
        "--wall-clock",
        dest="deterministic",
        action="store_false",
        help="budget in wall-clock seconds with free-running workers (load-dependent) instead "
        "of the default, CP-SAT deterministic units (reproducible, and stronger: see "
        "docs/benchmarks.md)",
    )
    parser.add_argument("--limit", type=int, default=None, help="only the first N instances")
    parser.add_argument("--out", type=pathlib.Path, default=None, help="per-instance CSV")
    args = parser.parse_args()
    procs = [int(p) for p in args.procs.split(",")]
    references = read_references(procs, args.limit)
    signal.signal(signal.SIGTERM, Stop.handle)
    signal.signal(signal.SIGINT, Stop.handle)

    began = time.perf_counter()
    pending = [run_heuristics(ref) for ref in references]
    heuristic_s = time.perf_counter() - began
    rows = [row for row, _ in pending]
    handle = args.out.open("w", newline="") if args.out else None
    writer = csv.DictWriter(handle, FIELDS) if handle else None
    if writer:
        writer.writeheader()
    finished: list[Row] = []
    if args.cpsat:
        problems = {id(row): problem for row, problem in pending}
        for row in cpsat_order(rows):
            if Stop.requested:
                break
            run_cpsat(row, problems[id(row)], args)
            finished.append(row)
            if writer and handle:
                writer.writerow(row.as_csv())
                handle.flush()
    elif writer:
        writer.writerows(row.as_csv() for row in rows)
    if handle:
        handle.close()

    command = shlex.join(["python", "benchmarks/bench_stg.py", *sys.argv[1:]])
    library_mismatch = sum(r.library_lb != r.ref.trivial for r in rows)
    print(f"# Kasahara STG, 50 tasks, generic:P (no communication)\n\n`{command}`\n")
    print(f"{machine_info()}\n")
    print(
        f"## PEFT and HEFT ({len(rows)} instance-processor pairs; heuristic phase "
        f"{heuristic_s:.1f} s)\n"
    )
    print("\n".join(heuristic_table(rows, procs)))
    print(
        "\noptimal: makespan equal to the published lower bound (the optimum where known). "
        "Gaps: (makespan - reference) / reference. Library lower bound "
        "differs from the reference's trivial_lb = max(critical path, ceil(work / P)) on "
        f"{library_mismatch} pairs."
    )
    if args.cpsat:
        limit = (
            f"{args.time_limit:g} deterministic units (CP-SAT work counter, reproducible)"
            if args.deterministic
            else f"{args.time_limit:g} s wall clock (free-running workers, load-dependent)"
        )
        print(
            f"\n## CP-SAT ({len(finished)} of {len(rows)} pairs covered; limit {limit} per "
            f"instance, {args.workers} workers, seed 0, hinted with the better heuristic)\n"
        )
        print("\n".join(cpsat_table(finished, procs)))
        if len(finished) < len(rows):
            print(f"\nStopped early: {len(rows) - len(finished)} pairs not covered by CP-SAT.")
    claims = [c for r in rows for c in r.claims]
    print("\n## Improvements on published values\n")
    if not claims:
        print("None.")
        return
    print(
        "Makespans are of schedules re-checked by `check`/`evaluate` and again against the raw "
        "STG file; a bound rests on CP-SAT's proof (heuristics report none).\n"
    )
    print(
        "| instance | procs | published | published LB | best known | solver | makespan "
        "| proved bound | what is new |"
    )
    print("|---|---:|---|---:|---:|---|---:|---:|---|")
    print("\n".join(claims))


if __name__ == "__main__":
    main()
