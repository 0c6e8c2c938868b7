"""Queue-aware pipeline selection on the shipped models: initial vs selected interval.

Usage::

    python benchmarks/bench_selection.py run [--cases CASE ...] [--jobs N]
    python benchmarks/bench_selection.py table

``run`` works through the cases (``model:target:depth``; default `CASES`, the
most important first) and appends one CSV row per case to
``results/selection.csv`` as it finishes; a case already in the CSV is
skipped, so an interrupted run resumes. Per model and target it lowers once
(`raptor_cp.flows.prepare`, default lanes), schedules for latency with PEFT
(`compile_latency`, the default ``auto`` portfolio: the makespan of running one
inference at a time), emits that schedule as a program on PIM targets and
records the program's single pass through the queue engine (the figure
pimsim-nn's latency mode matched within 0.2 %, docs/validation.md: back-to-back
latency in the same model as the intervals) and computes the interval lower
bound (`raptor_cp.bounds.interval_lower_bound`);
per depth it runs the default pipeline solver (``beam``, with ``--jobs`` CPUs
evaluating each round's candidates) and records the initialized schedule's,
the latency schedule's as one stage (the selection's second root) and the
selected schedule's queue estimates, the selected plan's program prediction
(`raptor_cp.emit.program.pipeline_prediction`: the program ``--emit`` writes,
with the baseline requests placed, which the selection's estimate leaves
out), the selected analytic proxy, stages and core budgets, queue evaluations and
constructive packings used, the termination, and the solver's wall time
(``time.perf_counter``; the machine is shared, so the 1-minute load average
at the start of each case is recorded beside it).

Targets: ``arch-a`` and ``pimcomp`` are presets; ``pimcomp-chip`` is the chip
PIMCOMP-NN's own program was simulated on (``data/pimcomp-chip``: 144 cores and
its network table), where pimsim-nn measured 25 ms per sample for PIMCOMP-NN's
ResNet-18 pipeline.

``table`` renders ``results/selection.md`` from the CSV.
"""

from __future__ import annotations

import argparse
import csv
import os
import pathlib
import platform
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent
REPO = ROOT.parent
MODELS = REPO / "tests" / "data" / "models"
PIMCOMP = REPO / "tests" / "data" / "pimcomp"
RESULTS = ROOT / "results"
CSV_PATH = RESULTS / "selection.csv"
TARGETS = {
    "arch-a": "arch-a",
    "pimcomp": "pimcomp",
    "pimcomp-chip": str(ROOT / "data" / "pimcomp-chip" / "pimsim_config_latency.json"),
}
MODEL_FILES = {
    "resnet18": MODELS / "resnet18.onnx",
    "resnet50": MODELS / "resnet50.onnx",
    "mobilenetv2": MODELS / "mobilenetv2.onnx",
    "vit_b16_1layer": MODELS / "vit_b16_1layer.onnx",
    "pimcomp-resnet18": PIMCOMP / "resnet18.json",
    "pimcomp-alexnet": PIMCOMP / "alexnet.json",
    "pimcomp-mnist8": PIMCOMP / "mnist8.json",
    "pimcomp-msra_A": PIMCOMP / "pimsyn_msra_A.json",
}
CASES = (
    *(f"{m}:arch-a:8" for m in ("resnet18", "resnet50", "mobilenetv2")),
    "pimcomp-resnet18:pimcomp-chip:8",
    "resnet50:arch-a:4",
    "vit_b16_1layer:arch-a:4",
    *(f"{m}:arch-a:{d}" for m in ("resnet18", "mobilenetv2") for d in (2, 4)),
    "resnet50:arch-a:2",
    *(f"pimcomp-resnet18:pimcomp-chip:{d}" for d in (2, 4)),
    *(f"{m}:pimcomp:{d}" for m in ("resnet18", "mobilenetv2", "resnet50") for d in (2, 4, 8)),
    *(
        f"{m}:{t}:{d}"
        for m in ("pimcomp-mnist8", "pimcomp-alexnet", "pimcomp-msra_A", "pimcomp-resnet18")
        for t in ("arch-a", "pimcomp")
        for d in (2, 4, 8)
    ),
    *(f"vit_b16_1layer:{t}:{d}" for t in ("arch-a", "pimcomp") for d in (2, 4, 8)),
)
"""Cases in the order they run: the issue's targets first."""
FIELDS = [
    "model", "target", "depth", "tasks", "cores", "status", "latency_makespan_ns",
    "latency_pass_ns", "latency_wall_s", "lower_bound_ns", "initial_queue_ns", "latency_root_ns",
    "selected_queue_ns", "program_ns",
    "selected_analytic_ns", "selected", "stages", "core_budgets", "initial_stages",
    "initial_budgets", "queue_evaluations_used", "constructive_packings_used",
    "termination", "rule", "solve_wall_s", "load_1min",
]  # fmt: skip


def _done() -> set[tuple[str, str, str]]:
    if not CSV_PATH.exists():
        return set()
    with CSV_PATH.open(encoding="utf-8") as handle:
        return {(r["model"], r["target"], r["depth"]) for r in csv.DictReader(handle)}


def _append(row: dict[str, object]) -> None:
    new = not CSV_PATH.exists()
    with CSV_PATH.open("a", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, FIELDS)
        if new:
            writer.writeheader()
        writer.writerow(row)


def _latency(prepared: object, began: float) -> tuple[int | str, int | str, float]:
    """``auto``'s makespan, its emitted program's single pass, seconds; errors as text.

    A program the backend rejects (ViT-B/16: a task larger than local memory)
    keeps the makespan and records the rejection as its pass.
    """
    from raptor_cp.errors import RaptorError
    from raptor_cp.flows import compile_latency

    try:
        result = compile_latency(prepared, emit=True)  # type: ignore[arg-type]
        assert result.program is not None
        single = result.program.prediction["realized_single_pass_ns"]
        return result.makespan_ns, single, time.perf_counter() - began
    except RaptorError as emission:
        try:
            plain = compile_latency(prepared)  # type: ignore[arg-type]
        except RaptorError as error:
            return f"error: {error}", "", time.perf_counter() - began
        return plain.makespan_ns, f"error: {emission}", time.perf_counter() - began


def _program(graph: object, chip: object, plan: object, interval_ns: int | None) -> int | str:
    """The predicted interval of ``plan``'s program (baseline requests placed); the
    reason as text when there is none."""
    from raptor_cp.emit.program import pipeline_prediction
    from raptor_cp.errors import RaptorError

    try:
        prediction = pipeline_prediction(graph, chip, plan, interval_ns)  # type: ignore[arg-type]
    except RaptorError as error:
        return f"error: {error}"
    value = prediction["realized_queue_interval_ns"]
    return f"error: {prediction['realized_queue_reason']}" if value is None else value


def run(cases: list[str], jobs: int) -> None:
    from raptor_cp.bounds import interval_lower_bound
    from raptor_cp.errors import RaptorError
    from raptor_cp.flows import prepare
    from raptor_cp.problems import PipelineProblem, check
    from raptor_cp.solvers import solve

    RESULTS.mkdir(exist_ok=True)
    done = _done()
    prepared: dict[tuple[str, str], object] = {}
    latency: dict[tuple[str, str], tuple[int | str, int | str, float]] = {}
    for case in cases:
        model, target, depth = case.split(":")
        if (model, target, depth) in done:
            continue
        row: dict[str, object] = {"model": model, "target": target, "depth": depth}
        row["load_1min"] = round(os.getloadavg()[0], 1)
        try:
            key = (model, target)
            if key not in prepared:
                prepared[key] = prepare(MODEL_FILES[model], TARGETS[target])
                began = time.perf_counter()
                latency[key] = _latency(prepared[key], began)
            p = prepared[key]
            graph, chip = p.graph, p.target  # type: ignore[attr-defined]
            row.update(tasks=graph.num_tasks, cores=chip.cores)
            row["latency_makespan_ns"], row["latency_pass_ns"], wall = latency[key]
            row["latency_wall_s"] = round(wall, 2)
            row["lower_bound_ns"] = interval_lower_bound(graph, chip)["interval_ns"]
            problem = PipelineProblem(graph, chip, int(depth))
            began = time.perf_counter()
            solution = solve(problem, jobs=jobs)
            row["solve_wall_s"] = round(time.perf_counter() - began, 1)
            check(problem, solution)
            selection = solution.selection
            assert selection is not None and solution.plan is not None
            chosen, initial = selection.selected, selection.candidates[0]
            roots = [c for c in selection.candidates[1:] if c.parent is None]
            row["program_ns"] = _program(graph, chip, solution.plan, chosen.estimate_ns)
            row.update(
                latency_root_ns=roots[0].estimate_ns if roots else selection.latency_root,
                status="ok",
                initial_queue_ns=initial.estimate_ns,
                selected_queue_ns=chosen.estimate_ns,
                selected_analytic_ns=chosen.plan.interval_ns,
                selected=chosen.index,
                stages=len(chosen.stages),
                core_budgets=" ".join(str(s.cores) for s in chosen.stages),
                initial_stages=len(initial.stages),
                initial_budgets=" ".join(str(s.cores) for s in initial.stages),
                queue_evaluations_used=selection.queue_evaluations[0],
                constructive_packings_used=selection.constructive_packings[0],
                termination=selection.termination,
                rule=selection.decision.rule,
            )
        except RaptorError as error:
            row["status"] = f"error: {error}"
        _append(row)
        done.add((model, target, depth))
        summary = {k: row.get(k) for k in ("status", "selected_queue_ns", "solve_wall_s")}
        print(case, summary, flush=True)


def _ms(value: str) -> str:
    return f"{int(value) / 1e6:.3f}" if value and value.lstrip("-").isdigit() else (value or "—")


def table() -> None:
    with CSV_PATH.open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    lines = [
        "# Queue-aware pipeline selection (`beam`)",
        "",
        "Command: `python benchmarks/bench_selection.py run` then `... table` "
        f"({platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
        "shared machine: the 1-minute load average at the start of each case is in the "
        "last column). Intervals in ms; *initial* is the initialized schedule's queue "
        "estimate (candidate 0), *1-stage* the latency schedule's as one stage (the "
        "second root), *selected* the selected candidate's (the reported "
        "interval), *program* the selected plan's program with the baseline requests "
        "placed (what `--emit` writes; the selection's estimate leaves their positions "
        "out); *latency* is `auto`'s makespan of one inference and *pass* its "
        "emitted program's single pass through the same queue engine (back-to-back "
        "latency schedules give one result per pass), so *prog/pass* compares two "
        "programs; *bound* the interval lower bound (largest task, work / cores, "
        "baseline memory service with each constant loaded once).",
        "",
        "| model | target | depth | tasks | latency | pass | bound | initial | 1-stage "
        "| selected | program | sel/bound | sel/pass | prog/pass | stages (budgets) | evals "
        "| packings | solve s | load | termination |",
        "|" + "---|" * 20,
    ]
    for r in rows:
        if not r["status"].startswith("ok"):
            head = f"| {r['model']} | {r['target']} | {r['depth']} | {r['tasks']} | "
            lines.append(head + f"{r['status']} |" + " |" * 15)
            continue
        sel = int(r["selected_queue_ns"] or r["selected_analytic_ns"])
        bound = int(r["lower_bound_ns"])
        lat, single, program = r["latency_makespan_ns"], r["latency_pass_ns"], r["program_ns"]
        ratio = f"{sel / int(single):.2f}" if single.isdigit() else "—"
        both = single.isdigit() and program.isdigit()
        programs = f"{int(program) / int(single):.2f}" if both else "—"
        lines.append(
            f"| {r['model']} | {r['target']} | {r['depth']} | {r['tasks']} | {_ms(lat)} | "
            f"{_ms(single)} | {_ms(r['lower_bound_ns'])} | {_ms(r['initial_queue_ns'])} | "
            f"{_ms(r['latency_root_ns'])} | {_ms(r['selected_queue_ns'])} | {_ms(program)} | "
            f"{sel / bound:.2f} | {ratio} | {programs} | "
            f"{r['stages']} ({r['core_budgets']}) | {r['queue_evaluations_used']} | "
            f"{r['constructive_packings_used']} | {r['solve_wall_s']} | {r['load_1min']} | "
            f"{r['termination']} |"
        )
    (RESULTS / "selection.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    runner = sub.add_parser("run")
    runner.add_argument("--cases", nargs="*", default=list(CASES))
    runner.add_argument("--jobs", type=int, default=1, help="CPUs per selection round")
    sub.add_parser("table")
    args = parser.parse_args(argv)
    if args.command == "run":
        run(args.cases, args.jobs)
    else:
        table()


if __name__ == "__main__":
    main(sys.argv[1:])
