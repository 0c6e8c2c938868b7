"""Queue-engine time and generations to converge against V + E on pipeline-shaped event graphs.

Usage::

    python benchmarks/bench_queue.py [--sizes 1000 4000 16000 64000] [--repeat 3]
        [--out benchmarks/results/queue_engine_<date>.md]

Each graph is built with `build_events` from a seeded synthetic pipeline, the
shape the pipeline realization produces: 4 stages of ``L`` lanes (one core
each); a core of stage ``s > 0`` signals FREE at its entry to the core of the
same lane in stage ``s - 1``, receives its input from it (direct SEND/RECV of 4
KiB), runs ``K`` load / compute(/ store) chunks, waits for FREE from stage ``s + 1``
and sends its output on. ``L = sqrt(steps / 8) / 4`` rounded to a power of two,
``K = steps / (4 L)``;
the target is the shipped ``pimsim-64`` preset (mesh network, pimsim-nn memory
timings). Two families: ``compute`` chunks are ``Load(256 B) -> Compute(500..2000
ns) -> Store(256 B)`` (each core's own chain dominates); ``memory`` chunks are
``Load(16 KiB) -> Compute(50..200 ns)`` (the shared memory controller dominates).

For each graph: the queue engine in both tie orders (`queue_estimate`),
timed with ``time.perf_counter`` (median of ``--repeat`` runs; one run when
``V + E`` exceeds 100,000), the generations it needed, the processed events,
its interval, and Howard's recurrence and the aggregate memory service for
comparison. The log-log slope of time against ``V + E`` is fitted per family
(1 is linear growth). The machine may be shared: compare rows of one run.
"""

from __future__ import annotations

import argparse
import datetime
import pathlib
import statistics
import time

import numpy as np
from bench_scaling import machine_info

from raptor_cp.periodic import maximum_cycle_ratio
from raptor_cp.periodic.events import (
    Compute,
    EventGraph,
    Load,
    Recv,
    Send,
    Signal,
    Step,
    Store,
    Wait,
    build_events,
)
from raptor_cp.periodic.queue_engine import QueueEstimate, queue_estimate
from raptor_cp.targets.registry import resolve_target

HERE = pathlib.Path(__file__).resolve().parent
SEED = 20261130
FREE = 0
STAGES = 4
"""Pipeline depth of the synthetic graphs (stages of ``lanes`` cores each)."""
FAMILIES = {"compute": ((500, 2000), 256, 256), "memory": ((50, 200), 16384, 0)}
"""Per family: compute chunk range (ns), bytes loaded and stored per chunk (0: no store)."""


def pipeline_events(
    rng: np.random.Generator, steps: int, compute: tuple[int, int], load: int, store: int
) -> EventGraph:
    """A seeded `STAGES`-deep pipeline of about ``steps`` load/compute(/store) chunks."""
    lanes = 1 << max(0, round(np.log2(np.sqrt(steps / 8) / STAGES)))
    cores = STAGES * lanes
    chunks = max(1, steps // cores)
    program: list[list[Step]] = []
    for c in range(cores):
        stage: list[Step] = []
        if c >= lanes:
            stage += [Signal(c - lanes, FREE), Recv(c - lanes, 4096)]
        for ns in rng.integers(compute[0], compute[1] + 1, size=chunks).tolist():
            stage += [Load(load), Compute(ns), *([Store(store)] if store else [])]
        if c < cores - lanes:
            stage += [Wait(FREE, 1), Send(c + lanes, 4096)]
        program.append(stage)
    target = resolve_target("pimsim-64")
    return build_events(program, target.step_timing(), name=f"pipeline-{steps}")


def timed(events: EventGraph, repeat: int) -> tuple[float, QueueEstimate]:
    runs = 1 if events.num_events + events.num_edges > 100_000 else repeat
    seconds, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = queue_estimate(events)
        seconds.append(time.perf_counter() - start)
    assert result is not None
    return statistics.median(seconds), result


def measure(sizes: list[int], repeat: int) -> list[str]:
    lines = [
        "| family | steps | cores | V | E | V + E | time (s) | generations | processed events "
        "| queue interval (ns) | reversed ties (ns) | recurrence (ns) | memory service (ns) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    slopes = []
    for family, (compute, load, store) in FAMILIES.items():
        rng = np.random.default_rng(SEED)
        scale, seconds = [], []
        for steps in sizes:
            events = pipeline_events(rng, steps, compute, load, store)
            elapsed, estimate = timed(events, repeat)
            run = estimate.run
            recurrence = maximum_cycle_ratio(events.recurrence_graph)
            size = events.num_events + events.num_edges
            interval = "unavailable" if run.interval_ns is None else f"{run.interval_ns:.1f}"
            alternative = estimate.alternative_tie_interval_ns
            lines.append(
                f"| {family} | {steps} | {events.num_cores} | {events.num_events} | "
                f"{events.num_edges} | {size} | {elapsed:.3f} | {run.generations} | "
                f"{run.processed_events} | {interval} | "
                f"{'unavailable' if alternative is None else f'{alternative:.1f}'} | "
                f"{float(recurrence.ratio):.1f} | {events.memory_service_ns} |"
            )
            print(lines[-1], flush=True)
            scale.append(size)
            seconds.append(elapsed)
        slope = np.polyfit(np.log10(scale), np.log10(seconds), 1)[0]
        slopes.append(f"| {family} | {slope:.2f} |")
    return [*lines, "", "| family | log-log slope of time vs V + E |", "|---|---:|", *slopes]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 4000, 16000, 64000])
    parser.add_argument("--repeat", type=int, default=3)
    today = datetime.date.today().isoformat()
    parser.add_argument(
        "--out", type=pathlib.Path, default=HERE / "results" / f"queue_engine_{today}.md"
    )
    args = parser.parse_args()
    lines = ["# Queue engine: time and generations to converge vs V + E", "", machine_info(), ""]
    lines += measure(args.sizes, args.repeat)
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
