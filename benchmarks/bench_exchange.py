"""Exchange-table admission on ViT-B/16 (one encoder layer) on IPU Mk2, per batch size.

Usage::

    python benchmarks/bench_exchange.py [--batches 1 2 4] [--budget 65536]
        [--tight 3072 2048] [--out benchmarks/results/exchange_vit_b16_1layer.md]

For every batch it runs the admission ``compile --exchange-budget`` runs (default
candidates and limits, `raptor_cp.exchange.candidates`), then -- for
measurement only, outside admission -- encodes exactly every placed candidate
admission did not encode, and writes a Markdown report: per candidate the
estimated and exact busiest-tile bytes with and without structural sharing,
their error, the estimate's wall time; per phase the estimated and exact
active-row bytes of every encoded plan; and whether admission found a plan
within the budget. On the first batch's candidates admission is then rerun with
the ``--tight`` budgets, which no estimate meets, to show what it does then
(the source reuses every lowering, estimate, placement and encoding it made).
A batch of ``B`` is ``B`` copies of the lowered graph sharing its weights
(`batch_graph`), with the default lane counts divided by ``B``.
The model is ``tests/data/models/vit_b16_1layer.onnx`` (see ORIGIN.md there).
"""

from __future__ import annotations

import argparse
import pathlib
import platform
import statistics
import sys
import time
from dataclasses import dataclass, field

from raptor_cp.exchange.admission import (
    Admission,
    AdmissionLimits,
    ExactRecord,
    PlanRecord,
    admit,
)
from raptor_cp.exchange.candidates import CandidateOptions, WorkloadCandidates
from raptor_cp.targets.ipu import IpuTarget
from raptor_cp.workload.load import load_workload

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODEL = ROOT / "tests" / "data" / "models" / "vit_b16_1layer.onnx"


@dataclass
class Timed:
    """A `CandidateSource` wrapper that times every call of the real one."""

    source: WorkloadCandidates
    expand_s: float = 0.0
    place_s: list[float] = field(default_factory=list)
    encode_s: list[float] = field(default_factory=list)

    def expanded(self) -> list[PlanRecord]:
        began = time.perf_counter()
        records = self.source.expanded()
        self.expand_s = time.perf_counter() - began
        return records

    def place(self, record: PlanRecord) -> PlanRecord | str:
        began = time.perf_counter()
        outcome = self.source.place(record)
        self.place_s.append(time.perf_counter() - began)
        return outcome

    def encode(self, record: PlanRecord) -> ExactRecord:
        began = time.perf_counter()
        exact = self.source.encode(record)
        self.encode_s.append(time.perf_counter() - began)
        return exact


def percent(estimated: int, exact: int) -> str:
    return "n/a" if exact == 0 else f"{100 * (estimated - exact) / exact:+.1f} %"


def run_batch(batch: int, budget: int, tight: list[int]) -> list[str]:
    workload = load_workload(MODEL)
    target = IpuTarget.preset("ipu-mk2")
    options = CandidateOptions.for_workload(workload, target, batch=batch)
    timed = Timed(WorkloadCandidates(workload, target, options))
    began = time.perf_counter()
    state = admit(timed, budget, AdmissionLimits())
    admission_s = time.perf_counter() - began
    measured: dict[str, ExactRecord] = {}
    placed = [k for k, r in state.records.items() if state.stage.get(k) == "placement"]
    for key in sorted(placed, key=lambda k: state.records[k].label):
        if key not in state.exact:
            measured[key] = timed.source.encode(state.records[key])
    exact = {**state.exact, **measured}
    lines = [f"## Batch {batch}", ""]
    lines += summary_lines(state, timed, options, admission_s)
    lines += candidate_lines(state, exact, measured)
    lines += phase_lines(state, exact)
    lines += timing_lines(state)
    for smaller in tight:
        lines += tight_lines(timed.source, smaller)
    return lines


def tight_lines(source: WorkloadCandidates, budget: int) -> list[str]:
    """Admission again over the same (memoized) candidates with a smaller budget."""
    timed = Timed(source)
    began = time.perf_counter()
    state = admit(timed, budget, AdmissionLimits())
    elapsed = time.perf_counter() - began
    lines = [
        f"### Same candidates, budget {budget:,} B",
        "",
        f"Admission {elapsed:.1f} s ({len(timed.place_s)} placements and "
        f"{len(timed.encode_s)} encodings asked for; the source reuses earlier ones).",
        "",
        "| attempt (penalty ns/B) | placement finalists | exactly encoded: estimate -> exact B "
        "| admitted |",
        "|---|---|---|---|",
    ]
    for attempt in state.attempts:
        placed = ", ".join(state.records[k].label for k in attempt.placement_finalists)
        encoded = ", ".join(
            f"{state.records[k].label}: {state.records[k].estimate_bytes:,} -> "
            f"{state.exact[k].exact_bytes:,}"
            for k in attempt.exchange_schedule_finalists
        )
        admitted = state.records[attempt.selected].label if attempt.selected else "none"
        note = f" ({attempt.note})" if attempt.note else ""
        lines.append(
            f"| {attempt.penalty} | {placed or '-'} | {encoded or '-'}{note} | {admitted} |"
        )
    closest = state.closest()
    if state.selected is None and closest is not None:
        lines += [
            "",
            f"No plan within {budget:,} B; the closest exact table is "
            f"{state.exact[closest].exact_bytes:,} B ({state.records[closest].label}).",
        ]
    return [*lines, ""]


def summary_lines(
    state: Admission, timed: Timed, options: CandidateOptions, admission_s: float
) -> list[str]:
    selected = state.selected
    if selected is None:
        closest = state.closest()
        outcome = "**no plan within the budget**" + (
            ""
            if closest is None
            else f"; smallest exact table {state.exact[closest].exact_bytes:,} B"
        )
    else:
        record, exact = state.records[selected], state.exact[selected]
        outcome = (
            f"**admitted** `{record.label}`: exact busiest tile {exact.exact_bytes:,} B of "
            f"{state.budget:,} B (estimate {record.estimate_bytes:,} B, "
            f"{percent(record.estimate_bytes, exact.exact_bytes)}), BSP time "
            f"{record.execution_ns / 1000:,.1f} µs"
        )
    aliases = sum(len(v) for v in state.aliases.values())
    lanes = dict(zip(options.weight_block_bytes, options.block_lanes, strict=True))
    return [
        f"- Options: lanes per block {lanes}, tile budgets {list(options.tile_budgets)}, "
        f"scheduler {options.scheduler}.",
        f"- {len(state.expanded)} distinct expanded plans, {len(state.records)} distinct "
        f"candidates in all, {aliases} further labels found equivalent and not rebuilt; "
        f"{len(state.attempts)} attempt(s), {sum(a.placements_run for a in state.attempts)} "
        f"placements, {sum(a.encodings_run for a in state.attempts)} exact encodings in admission.",
        f"- Admission {admission_s:.1f} s: expansion {timed.expand_s:.1f} s (lowering, spread "
        f"placement, plan building, estimates), placement {sum(timed.place_s):.1f} s "
        f"({len(timed.place_s)} scheduler runs with plans), exact encoding "
        f"{sum(timed.encode_s):.1f} s.",
        f"- Outcome: {outcome}.",
        "",
    ]


def candidate_lines(
    state: Admission, exact: dict[str, ExactRecord], measured: dict[str, ExactRecord]
) -> list[str]:
    lines = [
        "| candidate | tasks | BSP µs | fragments | est. shared B | exact shared B | error "
        "| est. unshared B | exact unshared B | error | decision |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for key in sorted(exact, key=lambda k: state.records[k].label):
        r, e = state.records[key], exact[key]
        decision = "measured only" if key in measured else state.decision(key)
        lines.append(
            f"| {r.label} | {r.details['tasks']:,} | {r.execution_ns / 1000:,.1f} "
            f"| {r.fragments:,} | {r.estimate_bytes:,} | {e.exact_bytes:,} "
            f"| {percent(r.estimate_bytes, e.exact_bytes)} | {r.estimate_unshared_bytes:,} "
            f"| {e.exact_unshared_bytes:,} "
            f"| {percent(r.estimate_unshared_bytes, e.exact_unshared_bytes)} | {decision} |"
        )
    return [*lines, ""]


def phase_lines(state: Admission, exact: dict[str, ExactRecord]) -> list[str]:
    errors: list[float] = []
    lines = [
        "Per phase (active-row bytes summed over tiles, no sharing), every encoded plan:",
        "",
        "| candidate | phase | estimate B | exact B | error |",
        "|---|---:|---:|---:|---:|",
    ]
    for key in sorted(exact, key=lambda k: state.records[k].label):
        estimated = dict(state.records[key].phase_estimates)
        for phase, encoded in exact[key].phase_bytes:
            if encoded:
                errors.append((estimated[phase] - encoded) / encoded)
            lines.append(
                f"| {state.records[key].label} | {phase} | {estimated[phase]:,} "
                f"| {encoded:,} | {percent(estimated[phase], encoded)} |"
            )
    if errors:
        lines += [
            "",
            f"Phase errors over {len(errors)} phases: min {100 * min(errors):+.1f} %, median "
            f"{100 * statistics.median(errors):+.1f} %, max {100 * max(errors):+.1f} %.",
        ]
    return [*lines, ""]


def timing_lines(state: Admission) -> list[str]:
    lines = [
        "Estimation time per candidate (footprint estimate only; plan building excluded):",
        "",
        "| candidate | fragments | estimate ms | µs per fragment |",
        "|---|---:|---:|---:|",
    ]
    for key in sorted(state.records, key=lambda k: state.records[k].label):
        r = state.records[key]
        lines.append(
            f"| {r.label} | {r.fragments:,} | {1000 * r.estimate_s:,.1f} "
            f"| {1e6 * r.estimate_s / max(1, r.fragments):.2f} |"
        )
    return [*lines, ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--budget", type=int, default=65536)
    parser.add_argument(
        "--tight",
        type=int,
        nargs="*",
        default=[3072, 2048],
        help="Smaller budgets to rerun admission with on the first batch's candidates.",
    )
    parser.add_argument(
        "--out", type=pathlib.Path, default=ROOT / "benchmarks/results/exchange_vit_b16_1layer.md"
    )
    args = parser.parse_args()
    began = time.perf_counter()
    lines = [
        "# Exchange-table admission: ViT-B/16 one encoder layer on IPU Mk2",
        "",
        f"Command: `python {' '.join(sys.argv)}` "
        f"({platform.processor() or platform.machine()}, Python {platform.python_version()}).",
        f"Budget {args.budget:,} B per tile; limits: expanded 16, placement 4, exchange "
        "schedule 1 (each + the minimum-storage alternative), fragment limit 1,000,000, "
        "storage penalties 0, 16, 256 ns/B.",
        "",
    ]
    for k, batch in enumerate(args.batches):
        lines += run_batch(batch, args.budget, args.tight if k == 0 else [])
        print(f"batch {batch} done at {time.perf_counter() - began:.0f} s", file=sys.stderr)
    lines.append(f"Total wall time {time.perf_counter() - began:.0f} s.")
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
