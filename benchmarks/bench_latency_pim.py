"""``auto`` and polish on lowered PIM models: makespan and gap to the lower bound (issue #13).

Usage::

    python benchmarks/bench_latency_pim.py --out benchmarks/results/latency_pim.csv \
        [--budget 60] [--snapshot 10] [--models resnet18 ...] \
        [--pimcomp-models DIR --pimcomp-chip CONFIG.json]

Models: resnet18, resnet50, mobilenetv2 and vit_b16_1layer (``tests/data/models``)
on ``arch-a``; with ``--pimcomp-models``/``--pimcomp-chip``, PIMCOMP-NN's JSON
node lists (16-bit) on that chip config, only those whose weights fit it
(`LatencyProblem` refuses the others with a proof).

Per model: the seeds' PEFT, each other portfolio member and ``auto`` (makespan,
which member won, seconds), then `polish` from ``auto``'s incumbent with a
budget of ``--budget`` CP-SAT deterministic units (1 worker, seed 0). Large
graphs are polished by LNS, whose windows get a fixed share of deterministic
time, so the search of a smaller budget is a prefix of a larger one: the
``--snapshot`` column is the best makespan the run had reached when its
deterministic time passed the snapshot (a separate run of that budget differs
at most in its last window, which it truncates). The wall-clock safeguard is
raised to ``--wall-cap`` seconds so that the runs are deterministic on a loaded
machine; wall seconds are reported. Gap = (makespan - bound) / makespan with
the analytic lower bound (`raptor_cp.bounds`); "gap closed" is the share of
``auto``'s gap that polish removed. Each polished schedule is re-checked.
``--summarize CSV...`` reprints the table of earlier runs with today's bounds.
"""

from __future__ import annotations

import argparse
import csv
import json
import pathlib
import time

from bench_scaling import MODELS, machine_info

from raptor_cp.bounds import lower_bounds
from raptor_cp.errors import RaptorError
from raptor_cp.evaluation import evaluate
from raptor_cp.flows import prepare
from raptor_cp.models.polish import polish
from raptor_cp.models.solve import SolveSettings
from raptor_cp.problems import LatencyProblem
from raptor_cp.problems.latency import check_schedule
from raptor_cp.solvers import solve

ONNX = ("resnet18", "resnet50", "mobilenetv2", "vit_b16_1layer")


def instances(args: argparse.Namespace) -> list[tuple[str, pathlib.Path, str]]:
    """(label, model file, target spec) to run, filtered by ``--models``."""
    chosen = [] if args.skip_onnx else [(f"{m}.onnx", MODELS / f"{m}.onnx", "arch-a") for m in ONNX]
    if args.pimcomp_models is not None:
        chip = str(args.pimcomp_chip)
        chosen += [
            (f"PIMCOMP {p.stem}", p, chip) for p in sorted(args.pimcomp_models.glob("*.json"))
        ]
    if args.models:
        chosen = [c for c in chosen if any(c[1].stem == m for m in args.models)]
    return chosen


def run(
    label: str, path: pathlib.Path, spec: str, args: argparse.Namespace
) -> dict[str, object] | None:
    """One row, or None when the model does not fit the target (printed)."""
    prepared = prepare(path, spec)
    graph, target = prepared.graph, prepared.target
    try:
        problem = LatencyProblem(graph, target)
    except RaptorError as error:
        print(f"<!-- {label}: skipped, {error} -->", flush=True)
        return None
    row: dict[str, object] = {"model": label, "target": target.name, "tasks": graph.num_tasks}
    began = time.perf_counter()
    auto = solve(problem, "auto")
    row["auto_s"] = round(time.perf_counter() - began, 2)
    assert auto.objective is not None and auto.bound is not None
    row["bound"] = auto.bound
    row["members"] = json.dumps(auto.details["members"])
    row["winner"] = auto.details["winner"]
    row["auto"] = auto.objective
    row["auto_cores"] = evaluate(problem, auto.schedule).cores_used  # type: ignore[arg-type]
    began = time.perf_counter()
    polished = polish(problem, auto, SolveSettings(args.budget, 1, wall_cap_s=args.wall_cap))
    row["polish_s"] = round(time.perf_counter() - began, 1)
    assert polished.schedule is not None and polished.objective is not None
    check_schedule(problem, polished.schedule)
    assert evaluate(problem, polished.schedule).makespan_ns == polished.objective
    details = polished.details["polish"]
    assert isinstance(details, dict)
    trajectory = details.get("trajectory", [])
    row["snapshot"] = min([auto.objective] + [m for t, m in trajectory if t <= args.snapshot])
    row["polish"] = polished.objective
    row["polish_bound"] = polished.bound
    row["method"] = details["method"]
    row["windows"] = details.get("windows", "")
    row["accepted"] = details.get("accepted_windows", "")
    row["deterministic_time"] = details.get("deterministic_time", "")
    row["wall_capped"] = details.get("wall_capped", False)
    row["trajectory"] = json.dumps(trajectory)
    return row


def strongest_bound(row: dict[str, str], args: argparse.Namespace) -> int:
    """`lower_bounds` of the row's model now (it may be stronger than at run time)."""
    label = row["model"]
    if label.startswith("PIMCOMP "):
        path = args.pimcomp_models / f"{label.removeprefix('PIMCOMP ')}.json"
    else:
        path = MODELS / label
    prepared = prepare(path, row["target"])
    graph, target = prepared.graph, prepared.target
    return max(int(row["bound"]), lower_bounds(graph, target).makespan_ns)


def table(rows: list[dict[str, str]], args: argparse.Namespace) -> str:
    """Markdown table of makespans (ms) and gaps (makespan - bound) / makespan (%)."""

    def ms(ns: object) -> str:
        return f"{int(str(ns)) / 1e6:.3f}"

    lines = [
        "| model | target | tasks | bound ms | peft ms | auto ms (winner) | auto gap % "
        "| polish-prefix ms | gap % | polish ms (det. units) | gap % | gap closed % "
        "| auto s | polish s |",
        "|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        bound = strongest_bound(r, args) if args.summarize else int(r["bound"])
        auto, snap, final = int(r["auto"]), int(r["snapshot"]), int(r["polish"])
        members = json.loads(r["members"])
        peft = members.get("peft")

        def gap(ns: int, bound: int = bound) -> str:
            return f"{100.0 * (ns - bound) / ns:.1f}"

        closed = 100.0 * (auto - final) / max(1, auto - bound)
        lines.append(
            f"| {r['model']} | {pathlib.Path(r['target']).name} | {r['tasks']} | {ms(bound)} "
            f"| {ms(peft) if isinstance(peft, int) else peft} | {ms(auto)} ({r['winner']}) "
            f"| {gap(auto)} | {ms(snap)} | {gap(snap)} | {ms(final)} "
            f"({float(r['deterministic_time'] or 0):.1f}) | {gap(final)} | {closed:.1f} "
            f"| {r['auto_s']} | {r['polish_s']} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, required=True)
    parser.add_argument("--budget", type=float, default=60.0)
    parser.add_argument("--snapshot", type=float, default=10.0)
    parser.add_argument("--wall-cap", type=float, default=7200.0)
    parser.add_argument("--models", nargs="*", default=None, help="model file stems to run")
    parser.add_argument("--skip-onnx", action="store_true", help="only the PIMCOMP-NN models")
    parser.add_argument(
        "--summarize",
        nargs="*",
        type=pathlib.Path,
        default=None,
        help="only print the table of these CSVs, with today's lower bounds",
    )
    parser.add_argument("--pimcomp-models", type=pathlib.Path, default=None)
    parser.add_argument("--pimcomp-chip", type=pathlib.Path, default=None)
    args = parser.parse_args()
    if args.summarize is not None:
        summarized = []
        for path in args.summarize:
            with path.open(newline="") as handle:
                summarized += list(csv.DictReader(handle))
        print(table(summarized, args))
        return
    print("# auto and polish on PIM models\n")
    print(machine_info(("raptor-cp", "ortools", "onnx")) + "\n", flush=True)
    rows = []
    with args.out.open("w", newline="") as handle:
        writer: csv.DictWriter[str] | None = None
        for label, path, spec in instances(args):
            row = run(label, path, spec, args)
            if row is None:
                continue
            if writer is None:
                writer = csv.DictWriter(handle, list(row))
                writer.writeheader()
            writer.writerow(row)
            handle.flush()
            rows.append({k: str(v) for k, v in row.items()})
            print(f"<!-- done: {label} -->", flush=True)
    print(table(rows, args))


if __name__ == "__main__":
    main()
