"""``raptor-cp verify``: audit a heuristic against CP-SAT on a batch of models.

``--mode latency`` audits a latency scheduler (here); ``--mode pipeline`` and
``--mode packing`` audit the prefix-DP partition and the stage packer
(`raptor_cp.cli_verify_pipeline`) and print the same table.

The click command itself lives in `raptor_cp.cli` (one command group); this
module does the work: expand the MODEL arguments into files, load and lower
every instance before any solving (so a bad input costs nothing and leaves no
report), run `raptor_cp.audit.audit_latency` on each, and print the report,
optionally also writing it atomically to a file.

The report is a function of the inputs and the settings: CP-SAT runs with a
deterministic-time budget, a fixed seed and, with several workers, interleaved
search (`raptor_cp.models.solve`). The Markdown report holds no wall times, so
two runs on the same inputs give byte-identical reports; the JSON report holds
the measured wall times (``*_wall_s``) and only those differ between runs.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from raptor_cp.audit import AuditRecord, audit_latency, render_markdown, to_json
from raptor_cp.cli import _lower, _Progress
from raptor_cp.cli_pipeline import DEFAULT_PIPELINE_DEPTH
from raptor_cp.errors import InvalidInputError
from raptor_cp.problems import LatencyProblem
from raptor_cp.reports.output import dumps, format_ns
from raptor_cp.solvers import latency_solver
from raptor_cp.targets.registry import resolve_target
from raptor_cp.workload.load import EXTENSIONS, load_workload

if TYPE_CHECKING:
    from raptor_cp.targets.base import SchedulingTarget

VERIFY_MODES = ("latency", "pipeline", "packing")
"""The ``--mode`` values ``verify`` audits: latency schedules, pipeline partitions (prefix DP
against CP-SAT) and stage packings (reuse-first packer against CP-SAT)."""
HEURISTIC = {"pipeline": "prefix-dp", "packing": "stage"}
"""The heuristic audited in each non-latency mode (``--scheduler`` is for latency only)."""


@dataclass(frozen=True)
class VerifySettings:
    """The options of one ``verify`` run (see docs/cli.md)."""

    target: str
    scheduler: str
    time_limit_s: float
    workers: int
    lanes: int | None
    bits: int | None
    mode: str = "latency"
    pipeline: int = DEFAULT_PIPELINE_DEPTH
    """Pipeline depth of the ``pipeline`` and ``packing`` audits."""

    @property
    def heuristic(self) -> str:
        return HEURISTIC.get(self.mode, self.scheduler)

    def to_json(self) -> dict[str, object]:
        settings: dict[str, object] = {
            "mode": self.mode,
            "target": self.target,
            "scheduler": self.heuristic,
            "time_limit": self.time_limit_s,
            "workers": self.workers,
            "lanes": self.lanes,
            "bits": self.bits,
        }
        if self.mode != "latency":
            settings["pipeline"] = self.pipeline
        return settings

    def describe(self) -> str:
        """The settings as one Markdown line under the audit table."""
        depth = "" if self.mode == "latency" else f", pipeline depth {self.pipeline}"
        return (
            f"Settings: mode {self.mode}, target {self.target}, heuristic {self.heuristic}{depth}, "
            f"CP-SAT time limit {self.time_limit_s:g} deterministic-time units per instance, "
            f"workers {self.workers}, lanes {'auto' if self.lanes is None else self.lanes}, bits "
            f"{'of the model' if self.bits is None else self.bits}."
        )


def verify(
    models: Sequence[Path], mode: str, settings: VerifySettings, as_json: bool, out: Path | None
) -> int:
    """Run the audit and print the report; return the exit status (0 agree, 1 disagree).

    Raises `RaptorError` (exit status 2) for a bad mode, input file, target or
    ``--out``, before any instance is solved.
    """
    if mode not in VERIFY_MODES:
        raise InvalidInputError(
            f"verify --mode {mode} is not available; available modes: {', '.join(VERIFY_MODES)}"
        )
    settings = dataclasses.replace(settings, mode=mode)
    progress = _Progress(quiet=as_json)
    paths = expand_models(models)
    with staged_file(out) as staging:
        target = resolve_target(settings.target)
        warnings = list(getattr(target, "warnings", ()))
        for warning in warnings:
            progress.say(f"warning: {warning}")
        extra_json: dict[str, object] = {}
        extra_markdown = ""
        if mode == "latency":
            instances = [(str(path), _problem(path, target, settings)) for path in paths]
            records = audit_instances(instances, settings, progress)
        else:
            from raptor_cp.cli_verify_pipeline import (
                audit_pipeline_instances,
                pipeline_instances,
                render_quantization,
            )
            from raptor_cp.pipeline.audit import render_packing_bounds

            batch = pipeline_instances(paths, target, settings)
            records, details = audit_pipeline_instances(batch, mode, settings, target, progress)
            if mode == "pipeline":
                extra_json["partition_details"] = [d.to_json() for d in details]
                extra_markdown = "\n" + render_quantization(details)
            else:
                extra_json["packing_bounds"] = [d.to_json() for d in details]
                extra_markdown = "\n" + render_packing_bounds(details)
        if as_json:
            report = dumps(
                {
                    **to_json(records),
                    **extra_json,
                    "settings": settings.to_json(),
                    "warnings": warnings,
                }
            )
        else:
            report = render_markdown(records) + extra_markdown + "\n" + settings.describe() + "\n"
        if staging is not None:
            staging.write_text(report, encoding="utf-8")
    click.echo(report, nl=False)
    return 1 if any(record.disagrees for record in records) else 0


def expand_models(models: Sequence[Path]) -> list[Path]:
    """The model files named by ``models``: files as given, directories expanded.

    A directory stands for the files directly inside it whose extension
    `load_workload` accepts (case-insensitive), sorted by name; it is an error
    for it to hold none. A missing path is an error.
    """
    paths: list[Path] = []
    for model in models:
        if model.is_dir():
            found = sorted(
                (p for p in model.iterdir() if p.is_file() and p.suffix.lower() in EXTENSIONS),
                key=lambda p: p.name,
            )
            if not found:
                raise InvalidInputError(
                    f"{model}: directory holds no model file ({', '.join(EXTENSIONS)})"
                )
            paths.extend(found)
        elif model.exists():
            paths.append(model)
        else:
            raise InvalidInputError(f"{model}: no such file or directory")
    return paths


def _problem(path: Path, target: SchedulingTarget, settings: VerifySettings) -> LatencyProblem:
    """Load ``path`` and lower it onto ``target`` as a latency problem (as ``compile`` does)."""
    workload = load_workload(path, bits=settings.bits)
    graph, _ = _lower(workload, target, settings.lanes, _Progress(quiet=True))
    return LatencyProblem(graph, target)


def audit_instances(
    instances: Sequence[tuple[str, LatencyProblem]], settings: VerifySettings, progress: _Progress
) -> list[AuditRecord]:
    """Audit each ``(name, problem)`` in turn, one progress line per instance on stderr."""
    from raptor_cp.models.latency import CpSatLatencyModel

    heuristic = latency_solver(settings.scheduler)
    exact = CpSatLatencyModel(time_limit_s=settings.time_limit_s, workers=settings.workers)
    records = []
    for i, (name, problem) in enumerate(instances, start=1):
        began = time.perf_counter()
        if not progress.quiet:
            line = f"[{i}/{len(instances)}] {name}: {problem.graph.num_tasks} tasks ... "
            click.echo(line, err=True, nl=False)
        record = audit_latency(problem, heuristic, exact, name)
        progress.say(f"{outcome(record)}, {time.perf_counter() - began:.2f} s")
        records.append(record)
    return records


def outcome(record: AuditRecord) -> str:
    """``heft 30 ns, CP-SAT 30 ns (optimal), agree`` for a progress line (every mode)."""
    heuristic = (
        "none" if record.heuristic_makespan is None else format_ns(record.heuristic_makespan)
    )
    if record.cpsat_status is None:
        cpsat = "skipped (too large)"
    elif record.cpsat_objective is None:
        cpsat = record.cpsat_status.value
    else:
        cpsat = f"{format_ns(record.cpsat_objective)} ({record.cpsat_status.value})"
    verdict = "DISAGREE" if record.disagrees else "agree"
    return f"{record.heuristic} {heuristic}, CP-SAT {cpsat}, {verdict}"


@contextmanager
def staged_file(path: Path | None) -> Iterator[Path | None]:
    """Yield a temporary file beside ``path`` that replaces ``path`` if the block succeeds.

    The temporary file is created first, so an unwritable destination fails
    before any work; if the block raises, it is removed and ``path`` is left as
    it was. Yields None (and does nothing) when ``path`` is None.
    """
    if path is None:
        yield None
        return
    if path.is_dir():
        raise InvalidInputError(f"{path}: is a directory; --out takes a file name")
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    staging = Path(name)
    try:
        mask = os.umask(0o022)
        os.umask(mask)
        os.fchmod(handle, 0o666 & ~mask)  # mkstemp makes it private; a report should not be
        os.close(handle)
        yield staging
        staging.replace(path)
    finally:
        staging.unlink(missing_ok=True)
