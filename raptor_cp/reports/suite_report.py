"""The files of a suite report: report.md, report.html, results.csv, results.json, plots.

`write_suite_report` formats a `SuiteRun` (nothing is computed here but the
per-variant summaries of `raptor_cp.suite.summary` and the plots):

* ``results.csv`` / ``results.json``: one row per cell (per audit record), in
  cell order; ``results.json`` also holds the suite file's text, the versions,
  the machine and the summaries;
* ``plots/*.png``: the figures of `raptor_cp.reports.suite_plots`, and
  ``artifacts/gantt-*.png`` thumbnails of studies with ``gantt = true``;
* ``report.md``: per study a summary table per variant, the cells (up to
  `ROW_LIMIT` per study; all of them are in results.csv), failures, and links
  to the plots; timing is in its own table, so two identical runs differ only
  there;
* ``report.html``: the same, self-contained (plots embedded as data URIs).
"""

from __future__ import annotations

import base64
import csv
import html
import io
import json
import os
import platform
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from raptor_cp.reports.suite_plots import PLOTS
from raptor_cp.suite.cells import versions
from raptor_cp.suite.runner import ARTIFACTS, SuiteRun
from raptor_cp.suite.summary import Summary, summarize

ROW_LIMIT = 60
"""Studies with more rows show only their summary in the report (all rows are in the CSV)."""
COLUMNS = (
    "study", "mode", "workload", "target", "variant", "solver", "part", "size", "cores",
    "objective", "unit", "bound", "gap", "status", "reference", "reference_optimal",
    "gap_vs_reference", "wall_s", "deterministic_time", "error", "details", "cell",
)  # fmt: skip
"""Columns of results.csv, in order (``details`` as JSON)."""


def machine() -> dict[str, object]:
    """Where the run happened: platform, processor, CPU count."""
    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
    }


def write_suite_report(run: SuiteRun, out: Path, command: str) -> list[str]:
    """Write every report file into ``out``; return their names (relative to ``out``)."""
    rows = list(run.rows)
    summaries = summarize(rows)
    plots_dir = out / "plots"
    plots_dir.mkdir(exist_ok=True)
    plots: dict[str, list[str]] = {}
    for study in run.suite.studies:
        mine = [r for r in rows if r["study"] == study.name]
        plots[study.name] = [
            f"plots/{n}" for plot in PLOTS for n in plot(study.name, mine, plots_dir)
        ]
    gantts = sorted(p.name for p in (out / ARTIFACTS).glob("gantt-*.png"))
    facts = {
        "suite": run.suite.name,
        "suite_file": run.suite.path.name,
        "command": command,
        "executor": run.executor,
        "workers": run.workers,
        "versions": versions(),
        "machine": machine(),
    }
    _write_csv(out / "results.csv", rows)
    document = {
        **facts,
        "suite_text": run.suite.text,
        "summaries": [s.to_json() for s in summaries],
        "rows": rows,
    }
    (out / "results.json").write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")
    markdown = _markdown(run, rows, summaries, plots, gantts, facts)
    (out / "report.md").write_text(markdown, encoding="utf-8")
    (out / "report.html").write_text(
        _html(run, rows, summaries, plots, gantts, facts, out), encoding="utf-8"
    )
    names = ["report.md", "report.html", "results.csv", "results.json"]
    return names + [p for study in plots.values() for p in study]


def _write_csv(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, COLUMNS, lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    for row in rows:
        writer.writerow({**row, "details": json.dumps(row.get("details"), sort_keys=True)})
    path.write_text(buffer.getvalue(), encoding="utf-8")


def _fmt(value: object, digits: int = 2) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _summary_table(summaries: Sequence[Summary]) -> list[list[str]]:
    header = [
        "variant", "cells", "errors", "optimal", "at reference", "mean gap %", "max gap %",
        "mean gap vs reference %",
    ]  # fmt: skip
    table = [header]
    for s in summaries:
        reference = f"{s.at_reference}/{s.with_reference}" if s.with_reference else "—"
        table.append(
            [
                s.variant,
                str(s.rows),
                str(s.errors),
                str(s.optimal),
                reference,
                _fmt(s.mean_gap_pct),
                _fmt(s.max_gap_pct),
                _fmt(s.mean_gap_vs_reference_pct),
            ]
        )
    return table


def _cell_table(rows: Sequence[dict[str, Any]]) -> list[list[str]]:
    table = [
        ["workload", "target", "variant", "objective", "bound", "gap %", "status", "reference"]
    ]
    for r in rows:
        gap = None if r.get("gap") is None else 100 * r["gap"]
        name = r["workload"] if r.get("part") is None else f"{r['workload']} [{r['part']}]"
        table.append(
            [
                name,
                r["target"],
                r["variant"],
                _fmt(r.get("objective")),
                _fmt(r.get("bound")),
                _fmt(gap),
                r["status"],
                _fmt(r.get("reference")),
            ]
        )
    return table


def _timing_table(summaries: Sequence[Summary]) -> list[list[str]]:
    table = [["study", "variant", "mean wall s"]]
    for s in summaries:
        table.append([s.study, s.variant, _fmt(s.mean_wall_s, 3)])
    return table


def _md_table(table: list[list[str]]) -> list[str]:
    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    lines = ["| " + " | ".join(cell(c) for c in table[0]) + " |", "|" + "---|" * len(table[0])]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in table[1:]]
    return lines


def _sections(
    run: SuiteRun, rows: list[dict[str, Any]], summaries: list[Summary]
) -> list[tuple[str, str, list[list[str]] | None, list[list[str]] | None, list[dict[str, Any]]]]:
    """Per study: (name, mode, summary table, cell table or None, failed rows)."""
    sections = []
    for study in run.suite.studies:
        mine = [r for r in rows if r["study"] == study.name]
        cells = _cell_table(mine) if len(mine) <= ROW_LIMIT else None
        failures = [r for r in mine if r["status"] == "error"]
        table = _summary_table([s for s in summaries if s.study == study.name])
        sections.append((study.name, study.mode, table, cells, failures))
    return sections


def _markdown(
    run: SuiteRun,
    rows: list[dict[str, Any]],
    summaries: list[Summary],
    plots: dict[str, list[str]],
    gantts: list[str],
    facts: dict[str, Any],
) -> str:
    lines = [f"# Suite report: {run.suite.name}", "", f"Reproduce: `{facts['command']}`", ""]
    lines += [
        f"Suite file `{facts['suite_file']}` (its text is in results.json); "
        f"{len(rows)} rows from {len(run.suite.cells())} cells; versions "
        + ", ".join(f"{k} {v}" for k, v in facts["versions"].items())
        + f"; machine {facts['machine']['platform']}, {facts['machine']['cpus']} CPUs.",
        "",
    ]
    for name, mode, summary, cells, failures in _sections(run, rows, summaries):
        lines += [f"## {name} ({mode})", ""]
        lines += [*_md_table(summary), ""]
        if cells is None:
            lines += [f"{sum(r['study'] == name for r in rows)} rows: see results.csv.", ""]
        else:
            lines += [*_md_table(cells), ""]
        for failure in failures:
            lines.append(f"- failed: {failure['workload']} on {failure['target']} "
                         f"({failure['variant']}): {failure['error']}")  # fmt: skip
        if failures:
            lines.append("")
        lines += [f"![{p}]({p})" for p in plots[name]]
        if plots[name]:
            lines.append("")
    if gantts:
        lines += ["## Gantt thumbnails", ""]
        lines += [f"![{g}]({ARTIFACTS}/{g})" for g in gantts] + [""]
    lines += ["## Timing (differs between runs)", "", *_md_table(_timing_table(summaries))]
    return "\n".join(lines) + "\n"


def _html_table(table: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in table[0])
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in table[1:]
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _image(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img alt="{html.escape(path.name)}" src="data:image/png;base64,{data}">'


def _html(
    run: SuiteRun,
    rows: list[dict[str, Any]],
    summaries: list[Summary],
    plots: dict[str, list[str]],
    gantts: list[str],
    facts: dict[str, Any],
    out: Path,
) -> str:
    style = (
        "body{font-family:sans-serif;margin:2em;max-width:1100px}"
        "table{border-collapse:collapse;margin:1em 0;font-size:13px}"
        "td,th{border:1px solid #bbb;padding:3px 8px;text-align:right}"
        "td:first-child,th:first-child{text-align:left}"
        "img{max-width:100%;margin:0.5em 0;border:1px solid #eee}"
        ".thumbs img{width:48%}"
    )
    parts = [
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(run.suite.name)}"
        f"</title><style>{style}</style></head><body>",
        f"<h1>Suite report: {html.escape(run.suite.name)}</h1>",
        f"<p>Reproduce: <code>{html.escape(facts['command'])}</code></p>",
        "<p>Versions: "
        + html.escape(", ".join(f"{k} {v}" for k, v in facts["versions"].items()))
        + f"; machine {html.escape(str(facts['machine']['platform']))}, "
        f"{facts['machine']['cpus']} CPUs.</p>",
    ]
    for name, mode, summary, cells, failures in _sections(run, rows, summaries):
        parts.append(f"<h2>{html.escape(name)} ({html.escape(mode)})</h2>")
        parts.append(_html_table(summary))
        if cells is not None:
            parts.append(_html_table(cells))
        else:
            parts.append("<p>All rows are in results.csv.</p>")
        for failure in failures:
            parts.append(f"<p>failed: {html.escape(str(failure['workload']))}: "
                         f"{html.escape(str(failure['error']))}</p>")  # fmt: skip
        parts += [_image(out / p) for p in plots[name]]
    if gantts:
        parts.append("<h2>Gantt thumbnails</h2><div class='thumbs'>")
        parts += [_image(out / ARTIFACTS / g) for g in gantts]
        parts.append("</div>")
    parts.append("<h2>Timing (differs between runs)</h2>")
    parts.append(_html_table(_timing_table(summaries)))
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
