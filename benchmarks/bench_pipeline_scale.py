"""Pipeline-mode compile time and peak memory as graphs grow (chains and shipped models).

Usage::

    python benchmarks/bench_pipeline_scale.py [--sizes 1000 10000 100000]
        [--methods initial beam] [--depth 4] [--timeout-s 3600]

Each case runs ``raptor-cp compile MODEL --pipeline DEPTH --pipeline-method M --json``
as a subprocess (the installed console script) under ``/usr/bin/time -f %M`` and
records its wall time (``time.perf_counter`` around ``subprocess.run``, import
and loading included) and its peak resident memory (GNU time's maximum
resident set size of that process). Cases:

* chains of ``N`` tasks (raptor-graph JSON written to a temporary folder): task
  ``i`` costs ``100 + 37 i mod 200`` ns and holds weight ``i mod 2000`` of
  ``1 + w mod 4`` crossbars, edges of 256 bytes; every task is its own
  operation, so ``N`` groups -- the worst case for the partition DP and the
  neighbourhood;
* the shipped ONNX models at their default lanes.

The target is ``arch-a``. Writes ``results/pipeline_scale.md`` and prints the
rows as they finish; the log-log slope of time against tasks (least squares
over the chain sizes) is 1 for linear growth, 2 for quadratic.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import platform
import signal
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent
MODELS = ROOT.parent / "tests" / "data" / "models"
RESULTS = ROOT / "results"
MODEL_FILES = ("mobilenetv2.onnx", "resnet18.onnx", "resnet50.onnx", "vit_b16_1layer.onnx")


def chain(n: int, folder: pathlib.Path) -> pathlib.Path:
    """A chain of ``n`` one-task operations as raptor-graph JSON (module docstring)."""
    weights = min(n, 2000)
    document = {
        "format": "raptor-graph",
        "version": 1,
        "name": f"chain{n}",
        "weights": [{"name": f"w{w}", "size": 1 + w % 4} for w in range(weights)],
        "tasks": [
            {"name": f"t{i}", "cost": 100 + (i * 37) % 200, "weights": [f"w{i % weights}"]}
            for i in range(n)
        ],
        "edges": [{"src": f"t{i}", "dst": f"t{i + 1}", "bytes": 256} for i in range(n - 1)],
    }
    path = folder / f"chain{n}.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def compile_case(model: pathlib.Path, method: str, depth: int, timeout: float) -> dict[str, object]:
    script = pathlib.Path(sys.executable).with_name("raptor-cp")
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as out:
        rss = pathlib.Path(out) / "rss"
        command = [
            "/usr/bin/time", "-f", "%M", "-o", str(rss),
            str(script), "compile", str(model), "--target", "arch-a", "--pipeline", str(depth),
            "--pipeline-method", method, "--json", "--out", str(pathlib.Path(out) / "o"),
        ]  # fmt: skip
        began = time.perf_counter()
        # A session of its own: on timeout the whole group goes (GNU time and the
        # compile under it), not only GNU time, which would orphan the compile.
        with subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        ) as child:
            try:
                stdout, stderr = child.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
                child.communicate()
                return {"status": f"timeout after {timeout:.0f} s", "load": round(load, 1)}
        done = subprocess.CompletedProcess(command, child.returncode, stdout, stderr)
        wall = time.perf_counter() - began
        peak_kb = int(rss.read_text().split()[-1])
    row: dict[str, object] = {"wall_s": round(wall, 1), "load": round(load, 1)}
    row["peak_mb"] = round(peak_kb / 1024)
    if done.returncode != 0:
        row["status"] = done.stderr.strip().splitlines()[-1] if done.stderr else "failed"
        return row
    summary = json.loads(done.stdout)
    row.update(
        status="ok",
        tasks=summary["tasks"],
        interval_ns=summary["interval_ns"],
        source=summary["interval_source"],
        stages=summary["stages"],
        evaluations=summary["selection"]["queue_evaluations_used"],
    )
    return row


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[1000, 10000, 100000])
    parser.add_argument("--methods", nargs="*", default=["initial", "beam"])
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--timeout-s", type=float, default=3600)
    parser.add_argument("--models", nargs="*", default=list(MODEL_FILES))
    args = parser.parse_args(argv)
    RESULTS.mkdir(exist_ok=True)
    lines = [
        f"# Pipeline-mode scaling (`compile --pipeline {args.depth}`, arch-a)",
        "",
        f"Command: `python benchmarks/bench_pipeline_scale.py {' '.join(argv)}` "
        f"({platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
        "shared machine: the 1-minute load average at each case's start is in the table). "
        "Wall time of the whole command; peak RSS of the child process.",
        "",
        "| case | method | tasks | status | wall s | peak MB | interval ns | source | stages "
        "| queue evals | load |",
        "|" + "---|" * 11,
    ]
    timings: dict[str, list[tuple[int, float]]] = {}
    with tempfile.TemporaryDirectory() as folder:
        cases = [(f"chain {n}", chain(n, pathlib.Path(folder)), n) for n in args.sizes]
        cases += [(name, MODELS / name, None) for name in args.models]
        for label, path, size in cases:
            for method in args.methods:
                row = compile_case(path, method, args.depth, args.timeout_s)
                cells = [
                    label, method, row.get("tasks", size), row["status"], row.get("wall_s"),
                    row.get("peak_mb"), row.get("interval_ns"), row.get("source"),
                    row.get("stages"), row.get("evaluations"), row["load"],
                ]  # fmt: skip
                line = "| " + " | ".join("—" if c is None else str(c) for c in cells) + " |"
                lines.append(line)
                print(line, flush=True)
                if size is not None and row["status"] == "ok":
                    timings.setdefault(method, []).append((size, float(row["wall_s"])))
    lines.append("")
    for method, points in timings.items():
        if len(points) >= 2:
            xs = [math.log(n) for n, _ in points]
            ys = [math.log(t) for _, t in points]
            mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
            slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
                (x - mx) ** 2 for x in xs
            )
            lines.append(f"Chains, `{method}`: log-log slope of wall time vs tasks {slope:.2f}.")
    (RESULTS / "pipeline_scale.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
