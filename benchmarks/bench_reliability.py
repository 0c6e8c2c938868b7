"""Output sizes and the cost of raptor-cp's documented limits (docs/cli.md, "Limits").

Usage::

    python benchmarks/bench_reliability.py [--trace] [--trace-baseline REV] [--limits]
        [--chain-tasks 200000 1000000]

``--trace``: compiles shipped models and reports ``trace.json``'s size, its
tracks per process (cores, transfers) and its complete events, the figures
that decide whether Perfetto opens it.

``--trace-baseline REV``: the same schedules (ResNet-18 and ViT-B/16 one layer on
arch-a) rendered by ``raptor_cp/reports/trace.py`` as of git revision ``REV``
and by the current one, in process: size, tracks and complete events of each.

``--limits``: runs ``raptor-cp compile`` at each documented limit under
``/usr/bin/time -v`` and reports the peak resident set size and the user CPU
seconds of the whole command: a generic target at the core limit (uniform
transfers, ``O(P)``), a pimsim-nn mesh at the core limit (``P x P`` network
tables), and raptor-graph chains of ``--chain-tasks`` tasks (up to the task
limit) in latency mode. Chain files are generated into a temporary directory.

Every command runs as a subprocess, one at a time; the machine's 1-minute load
average is printed next to each row, because on a shared machine wall time is
noise (CPU seconds and memory are not).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODELS = HERE.parent / "tests" / "data" / "models"
FORK_JOIN = HERE.parent / "tests" / "data" / "raptor" / "fork_join.json"
RAPTOR = [sys.executable, "-c", "from raptor_cp.cli import main; main(prog_name='raptor-cp')"]
TRACE_CASES = [
    ("resnet18.onnx", "arch-a"),
    ("resnet50.onnx", "arch-a"),
    ("vit_b16_1layer.onnx", "arch-a"),
    ("resnet18.onnx", "ipu-mk2"),
]


def run_measured(args: list[str]) -> tuple[int, float, int, str]:
    """``raptor-cp args`` under ``/usr/bin/time -v``: (status, user s, peak KiB, stderr)."""
    done = subprocess.run(
        ["/usr/bin/time", "-v", *RAPTOR, *args], capture_output=True, text=True, check=False
    )
    user = float(re.search(r"User time \(seconds\): ([\d.]+)", done.stderr).group(1))
    peak = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr).group(1))
    return done.returncode, user, peak, done.stderr


def load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


def trace_table(tmp: Path) -> list[str]:
    rows = [
        "| model | target | trace.json MB | core tracks | transfer tracks | events | peak MB | "
        "user s | load |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for model, target in TRACE_CASES:
        out = tmp / f"{model}-{target}"
        status, user, peak, err = run_measured(
            ["compile", str(MODELS / model), "-t", target, "--out", str(out), "--json"]
        )
        if status != 0:
            rows.append(f"| {model} | {target} | failed: {err.strip().splitlines()[-1]} |")
            continue
        path = out / "trace.json"
        events = json.loads(path.read_text())["traceEvents"]
        tracks = {0: 0, 1: 0}
        for e in events:
            if e["ph"] == "M" and e["name"] == "thread_name":
                tracks[e["pid"]] += 1
        complete = sum(e["ph"] == "X" for e in events)
        rows.append(
            f"| {model} | {target} | {path.stat().st_size / 1e6:.2f} | {tracks[0]} | "
            f"{tracks[1]} | {complete:,} | {peak / 1024:.0f} | {user:.1f} | {load()} |"
        )
    return rows


def baseline_table(rev: str) -> list[str]:
    """Trace sizes of one schedule rendered by ``trace.py`` at ``rev`` and by the current one."""
    import importlib.util

    from raptor_cp.flows import compile as compile_model
    from raptor_cp.reports.output import dumps
    from raptor_cp.reports.trace import trace_document

    source = subprocess.run(
        ["git", "show", f"{rev}:raptor_cp/reports/trace.py"],
        capture_output=True, text=True, check=True, cwd=HERE.parent,
    ).stdout  # fmt: skip
    with tempfile.TemporaryDirectory() as name:
        path = Path(name) / "baseline_trace.py"
        path.write_text(source)
        spec = importlib.util.spec_from_file_location("baseline_trace", path)
        assert spec is not None and spec.loader is not None
        baseline = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(baseline)
    rows = [
        "| model | trace.py | MB | tracks | complete events |",
        "|---|---|---:|---:|---:|",
    ]
    for model in ("resnet18.onnx", "vit_b16_1layer.onnx"):
        result = compile_model(MODELS / model, "arch-a")
        schedule = result.solution.schedule
        for label, render in ((rev, baseline.trace_document), ("current", trace_document)):
            events = render(result.problem, schedule, result.evaluation)["traceEvents"]
            size = len(dumps({"traceEvents": events, "displayTimeUnit": "ns"}).encode())
            tracks = sum(e["ph"] == "M" and e["name"] == "thread_name" for e in events)
            complete = sum(e["ph"] == "X" for e in events)
            rows.append(f"| {model} | {label} | {size / 1e6:.2f} | {tracks:,} | {complete:,} |")
    return rows


def chain_file(tmp: Path, tasks: int) -> Path:
    """A raptor-graph chain of ``tasks`` unit tasks with 1-byte edges."""
    path = tmp / f"chain{tasks}.json"
    document = {
        "format": "raptor-graph",
        "version": 1,
        "name": f"chain{tasks}",
        "tasks": [{"name": f"t{i}", "cost": 1} for i in range(tasks)],
        "edges": [{"src": f"t{i}", "dst": f"t{i + 1}", "bytes": 1} for i in range(tasks - 1)],
    }
    path.write_text(json.dumps(document))
    return path


def limits_table(tmp: Path, chains: list[int]) -> list[str]:
    cases = [
        ("cores, uniform", [str(FORK_JOIN), "-t", "generic:65536"]),
        ("cores, uniform", [str(MODELS / "resnet18.onnx"), "-t", "generic:65536"]),
        ("cores, pimsim-nn mesh", [str(FORK_JOIN), "-t", "arch-a", "--cores", "2048"]),
        ("cores, pimsim-nn mesh", [str(MODELS / "resnet18.onnx"), "--cores", "2048"]),
        *(("tasks", [str(chain_file(tmp, n)), "-t", "generic:4"]) for n in chains),
    ]  # fmt: skip
    rows = [
        "| limit | command | exit | peak MB | user s | load |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for what, args in cases:
        command = ["compile", *args, "--out", str(tmp / "out"), "--json"]
        status, user, peak, _ = run_measured(command)
        shown = shlex.join(["raptor-cp", *command]).replace(str(tmp), "$TMP")
        shown = shown.replace(str(HERE.parent) + "/", "")
        rows.append(
            f"| {what} | `{shown}` | {status} | {peak / 1024:.0f} | {user:.1f} | {load()} |"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", action="store_true")
    parser.add_argument("--trace-baseline", metavar="REV")
    parser.add_argument("--limits", action="store_true")
    parser.add_argument("--chain-tasks", type=int, nargs="*", default=[200_000, 1_000_000])
    args = parser.parse_args()
    print(f"`{shlex.join(['python', 'benchmarks/bench_reliability.py', *sys.argv[1:]])}`\n")
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        if args.trace:
            print("\n".join(["## trace.json", "", *trace_table(tmp), ""]))
        if args.trace_baseline:
            rows = baseline_table(args.trace_baseline)
            print("\n".join(["## trace.json before and after", "", *rows, ""]))
        if args.limits:
            print("\n".join(["## Limits", "", *limits_table(tmp, args.chain_tasks), ""]))


if __name__ == "__main__":
    main()
