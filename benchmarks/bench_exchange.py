"""Exchange footprint on IPU Mk2: the seed's validation table, admission time, tight budgets.

Usage::

    python benchmarks/bench_exchange.py [--out benchmarks/results/exchange_footprint_2026-12-01.md]
        [--workloads vit1 vit2 vit4 resnet18 mobilenetv2] [--tight 32768 16384 4096 2048]

Sections of the report (the seed "Exchange footprint model" is the reference):

1. *Validation* per workload -- ViT-B/16 one encoder layer at batch 1, 2 and 4,
   ResNet-18, MobileNetV2 -- on ``ipu-mk2``: admission at 65,536 B with the
   default candidates and limits (as ``compile --exchange-budget 65536``), its
   time per stage (wall and CPU), then, for measurement only, every candidate
   that reached placement encoded exactly, phase by phase: estimate, exact,
   error, estimate ms and encode ms per phase (the seed's table), and the
   busiest tile (with sharing) per candidate. Encoding here ignores the
   fragment limit, which only bounds admission's effort.
2. *Tight budgets*: ViT at batch 2 and 4 (the seed's hard case) admitted again
   at each ``--tight`` budget over the same, memoized candidates (placements and
   encodings already made are reused, so the time is the new work only).
3. *Exhaustive check*: on LeNet-5 (batch 1, 2 and 4, full Mk2) every candidate
   is placed and encoded (`exhaustive_search`); admission runs at every budget
   between the sizes found below the first choice's table and must find a plan
   exactly when one of them fits.

A batch of ``B`` is ``B`` copies of the lowered graph sharing its weights.
Models are the copies under ``tests/data/models`` (see ORIGIN.md there).
"""

from __future__ import annotations

import argparse
import pathlib
import platform
import statistics
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from raptor_cp.exchange.admission import Admission, AdmissionLimits, admit
from raptor_cp.exchange.candidates import (
    CandidateOptions,
    WorkloadCandidates,
    phase_fragments,
)
from raptor_cp.exchange.encoder import encode_exchange, place_allocations
from raptor_cp.exchange.exhaustive import exhaustive_search, fitting
from raptor_cp.exchange.footprint import RouteIds, estimate_footprint, estimate_rows
from raptor_cp.targets.ipu import IpuTarget
from raptor_cp.workload.load import load_workload

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODELS = ROOT / "tests" / "data" / "models"
WORKLOADS = {
    "vit1": ("vit_b16_1layer", 1),
    "vit2": ("vit_b16_1layer", 2),
    "vit4": ("vit_b16_1layer", 4),
    "resnet18": ("resnet18", 1),
    "mobilenetv2": ("mobilenetv2", 1),
}
BUDGET = 65_536
BAND = 0.18
"""The seed's per-phase error band (-13.8 % ... +17.5 %), as the bar."""


@dataclass
class Clock:
    """Wall and CPU seconds per admission stage, from its progress calls."""

    wall: dict[str, float] = field(default_factory=dict)
    cpu: dict[str, float] = field(default_factory=dict)
    last: tuple[float, float] = (0.0, 0.0)

    def start(self) -> None:
        self.last = (time.perf_counter(), time.process_time())

    def __call__(self, stage: str, detail: str) -> None:
        now = (time.perf_counter(), time.process_time())
        self.wall[stage] = self.wall.get(stage, 0.0) + now[0] - self.last[0]
        self.cpu[stage] = self.cpu.get(stage, 0.0) + now[1] - self.last[1]
        self.last = now
        print(f"  {stage:<7} {detail}", file=sys.stderr)


@dataclass
class Phase:
    """One row of the validation table."""

    candidate: str
    phase: int
    fragments: int
    estimate: int
    exact: int
    estimate_ms: float
    encode_ms: float

    @property
    def error(self) -> float | None:
        return None if self.exact == 0 else (self.estimate - self.exact) / self.exact


@dataclass
class Encoded:
    """One candidate encoded for measurement."""

    label: str
    decision: str
    fragments: int
    largest_phase: int
    estimate: int
    exact: int
    estimate_ms: float
    encode_ms: float

    @property
    def error(self) -> float:
        return (self.estimate - self.exact) / self.exact


def percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:+.1f} %"


def measure(source: WorkloadCandidates, state: Admission) -> tuple[list[Encoded], list[Phase]]:
    """Encode every placed candidate phase by phase, timing the estimate and encoder."""
    encoded, phases = [], []
    placed = [k for k in state.records if state.stage.get(k) == "placement"]
    for key in sorted(placed, key=lambda k: state.records[k].label):
        record, plan = state.records[key], source.plan(key)
        print(f"  measure {record.label}", file=sys.stderr)
        began = time.perf_counter()
        estimate = estimate_footprint(plan)
        estimate_s = time.perf_counter() - began
        began = time.perf_counter()
        exact = encode_exchange(plan).footprint
        encode_s = time.perf_counter() - began
        exact_phase = exact.phase_bytes()
        estimate_phase = estimate.phase_bytes()
        bases = place_allocations(plan)
        limit = plan.max_transfer_words
        pieces = phase_fragments(plan)
        for stored, count in plan.stored_phases():
            began = time.perf_counter()
            estimate_rows(stored, limit, count > 1, RouteIds())
            phase_estimate_s = time.perf_counter() - began
            began = time.perf_counter()
            encode_exchange(plan, bases, phases={stored.index})
            phase_encode_s = time.perf_counter() - began
            phases.append(
                Phase(
                    record.label,
                    stored.index,
                    pieces[stored.index],
                    estimate_phase[stored.index],
                    exact_phase[stored.index],
                    1000 * phase_estimate_s,
                    1000 * phase_encode_s,
                )
            )
        decision = state.decision(key) if key in state.exact else "measured only"
        encoded.append(
            Encoded(
                record.label,
                decision,
                record.fragments,
                record.largest_phase[1],
                estimate.busiest(shared=True)[1],
                exact.busiest(shared=True)[1],
                1000 * estimate_s,
                1000 * encode_s,
            )
        )
    return encoded, phases


def admission_lines(
    name: str, state: Admission, clock: Clock, wall: float, cpu: float
) -> list[str]:
    selected = state.selected
    if selected is None:
        closest = state.closest()
        outcome = "**no plan within the budget**" + (
            ""
            if closest is None
            else f"; closest exact table {state.exact[closest].exact_bytes:,} B"
        )
    else:
        record, exact = state.records[selected], state.exact[selected]
        outcome = (
            f"**admitted** `{record.label}`: exact busiest tile {exact.exact_bytes:,} B "
            f"(estimate {record.estimate_bytes:,} B, {percent(state.error(selected))}), "
            f"BSP time {record.execution_ns / 1000:,.1f} µs"
        )
    steps = [*state.attempts, *([state.exhaustion] if state.exhaustion else [])]
    stages = ", ".join(
        f"{stage} {clock.wall[stage]:.1f} s wall / {clock.cpu[stage]:.1f} s CPU"
        for stage in clock.wall
    )
    return [
        f"### {name}",
        "",
        f"- Admission {wall:.1f} s wall, {cpu:.1f} s CPU ({stages}).",
        f"- {len(state.expanded)} expanded plans, {len(state.records)} distinct candidates; "
        f"{len(state.attempts)} attempt(s){', exhaustion' if state.exhaustion else ''}, "
        f"{sum(s.placements_run for s in steps)} placements, "
        f"{sum(s.encodings_run for s in steps)} exact encodings; "
        f"{len(state.reported)} candidates kept from placement or encoding by the fragment limit.",
        f"- Outcome: {outcome}.",
        "",
    ]


def validation(args: argparse.Namespace) -> tuple[list[str], list[Encoded], list[Phase], dict]:
    lines = ["## 1. Validation: estimate against the exact encoder", ""]
    all_encoded: list[Encoded] = []
    all_phases: list[Phase] = []
    sources = {}
    for name in args.workloads:
        model, batch = WORKLOADS[name]
        print(f"{name}: admission", file=sys.stderr)
        workload = load_workload(MODELS / f"{model}.onnx")
        target = IpuTarget.preset("ipu-mk2")
        clock = Clock()
        options = CandidateOptions.for_workload(workload, target, batch=batch)
        source = WorkloadCandidates(workload, target, options, clock)
        clock.start()
        began, began_cpu = time.perf_counter(), time.process_time()
        state = admit(source, BUDGET, AdmissionLimits(), clock)
        wall, cpu = time.perf_counter() - began, time.process_time() - began_cpu
        sources[name] = source
        title = f"{model} batch {batch}"
        lines += admission_lines(title, state, clock, wall, cpu)
        encoded, phases = measure(source, state)
        for entry in encoded:
            entry.label = f"{name} {entry.label}"
        for phase in phases:
            phase.candidate = f"{name} {phase.candidate}"
        all_encoded += encoded
        all_phases += phases
    return lines, all_encoded, all_phases, sources


def encoded_lines(encoded: list[Encoded]) -> list[str]:
    errors = [e.error for e in encoded]
    lines = [
        "### Busiest tile (with sharing), every encoded candidate",
        "",
        f"Over {len(errors)} candidates: mean error {percent(statistics.fmean(errors))}, mean "
        f"|error| {100 * statistics.fmean(abs(e) for e in errors):.1f} %, worst "
        f"{percent(max(errors, key=abs))}; within ±10 %: {sum(abs(e) <= 0.10 for e in errors)}, "
        f"within ±20 %: {sum(abs(e) <= 0.20 for e in errors)}.",
        "",
        "| candidate | fragments | largest phase | estimate B | exact B | error | estimate ms "
        "| encode ms | decision |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for e in encoded:
        lines.append(
            f"| {e.label} | {e.fragments:,} | {e.largest_phase:,} | {e.estimate:,} | {e.exact:,} "
            f"| {percent(e.error)} | {e.estimate_ms:,.1f} | {e.encode_ms:,.1f} | {e.decision} |"
        )
    return [*lines, ""]


def phase_lines(phases: list[Phase]) -> list[str]:
    measured = [p for p in phases if p.exact]
    errors = np.array([p.error for p in measured])
    exact = np.array([p.exact for p in measured])
    inside = np.abs(errors) <= BAND
    quantiles = np.percentile(errors, [0, 10, 25, 50, 75, 90, 100])
    large = exact >= 1024
    lines = [
        "### Per phase (active-row bytes summed over tiles, no sharing)",
        "",
        f"{len(measured)} phases with encoded bytes: error min / p10 / p25 / median / p75 / p90 / "
        "max = " + " / ".join(percent(q) for q in quantiles) + ".",
        f"Within the seed's ±{100 * BAND:.0f} % band: {int(inside.sum())} of {len(measured)} "
        f"phases ({100 * inside.mean():.0f} %), holding "
        f"{100 * exact[inside].sum() / exact.sum():.0f} % of the exact bytes; phases of at "
        f"least 1 KiB: {int(inside[large].sum())} of "
        f"{int(large.sum())}.",
        "",
        "| candidate | phase | fragments | estimate B | exact B | error | estimate ms "
        "| encode ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for p in phases:
        lines.append(
            f"| {p.candidate} | {p.phase} | {p.fragments:,} | {p.estimate:,} | {p.exact:,} "
            f"| {percent(p.error)} | {p.estimate_ms:,.2f} | {p.encode_ms:,.1f} |"
        )
    return [*lines, ""]


def tight_lines(sources: dict, budgets: list[int]) -> list[str]:
    lines = ["## 2. Tight budgets (ViT-B/16 one layer, the same memoized candidates)", ""]
    lines += [
        "| batch | budget B | outcome | exact B | estimate B | found in | placements / "
        "encodings asked (memoized) | wall s |",
        "|---:|---:|---|---:|---:|---|---|---:|",
    ]
    for name, batch in (("vit2", 2), ("vit4", 4)):
        source = sources.get(name)
        if source is None:
            continue
        for budget in budgets:
            print(f"{name}: budget {budget}", file=sys.stderr)
            began = time.perf_counter()
            state = admit(source, budget, AdmissionLimits())
            wall = time.perf_counter() - began
            steps = [*state.attempts, *([state.exhaustion] if state.exhaustion else [])]
            work = f"{sum(s.placements_run for s in steps)} / {sum(s.encodings_run for s in steps)}"
            if state.selected is None:
                closest = state.closest()
                exact = (
                    "-" if closest is None else f"{state.exact[closest].exact_bytes:,} (closest)"
                )
                lines.append(
                    f"| {batch} | {budget:,} | not found within budget | {exact} | - | - "
                    f"| {work} | {wall:.1f} |"
                )
                continue
            record = state.records[state.selected]
            where = "exhaustion" if state.exhaustion else f"attempt {len(state.attempts)}"
            lines.append(
                f"| {batch} | {budget:,} | `{record.label}` | "
                f"{state.exact[state.selected].exact_bytes:,} | {record.estimate_bytes:,} "
                f"| {where} | {work} | {wall:.1f} |"
            )
    return [*lines, ""]


def exhaustive_lines() -> list[str]:
    lines = [
        "## 3. Admission against exhaustive search (LeNet-5, full Mk2)",
        "",
        "| batch | candidates | distinct exact sizes B | first choice (exact B) | budgets tried "
        "| admitted / exhaustive finds | agree |",
        "|---:|---:|---|---|---:|---|---|",
    ]
    workload = load_workload(MODELS / "lenet5.onnx")
    target = IpuTarget.preset("ipu-mk2")
    limits = AdmissionLimits()
    for batch in (1, 2, 4):
        print(f"lenet5 batch {batch}: exhaustive", file=sys.stderr)
        options = CandidateOptions.for_workload(workload, target, batch=batch)
        source = WorkloadCandidates(workload, target, options)
        every = exhaustive_search(source, limits)
        sizes = sorted({exact.exact_bytes for _, exact in every.values()})
        first = admit(source, 10**9, limits).selected
        assert first is not None
        first_size = every[first][1].exact_bytes
        candidates = {b for s in sizes if s < first_size for b in (s, s - 8)} | {sizes[0] - 8}
        budgets = sorted(b for b in candidates if b >= 1)
        admitted = found = 0
        agree = True
        for budget in budgets:
            state = admit(source, budget, limits)
            fits = fitting(every, budget)
            admitted += state.selected is not None
            found += bool(fits)
            agree &= (state.selected is not None) == bool(fits) and (
                state.selected is None or state.selected in fits
            )
        lines.append(
            f"| {batch} | {len(every)} | {', '.join(map(str, sizes))} | "
            f"`{every[first][0].label}` ({first_size}) | {len(budgets)} | {admitted} / {found} "
            f"| {'yes' if agree else '**no**'} |"
        )
    return [*lines, ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", nargs="+", default=list(WORKLOADS), choices=WORKLOADS)
    parser.add_argument("--tight", type=int, nargs="*", default=[32_768, 16_384, 4_096, 2_048])
    parser.add_argument(
        "--out",
        type=pathlib.Path,
        default=ROOT / "benchmarks/results/exchange_footprint_2026-12-01.md",
    )
    args = parser.parse_args()
    began = time.perf_counter()
    with open("/proc/loadavg") as handle:
        load = handle.read().split()[:3]
    header = [
        "# Exchange footprint on IPU Mk2: estimate vs exact encoder, admission, tight budgets",
        "",
        f"Command: `python {' '.join(sys.argv)}` ({platform.machine()}, Python "
        f"{platform.python_version()}; load average at start {' '.join(load)} on 2 cores).",
        f"Budget {BUDGET:,} B per tile; default limits: expanded 16, placement 4, exchange "
        "schedule 1 (each + the minimum-storage alternative), fragment limit 16,384 pieces per "
        "phase, storage penalties 0, 16, 256 ns/B, exhaustion on.",
        "",
    ]
    lines, encoded, phases, sources = validation(args)
    body = [*lines, *encoded_lines(encoded), *phase_lines(phases)]
    body += tight_lines(sources, args.tight)
    body += exhaustive_lines()
    body.append(f"Total wall time {time.perf_counter() - began:.0f} s.")
    args.out.write_text("\n".join(header + body) + "\n", encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
