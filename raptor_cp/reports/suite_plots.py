"""The PNG plots of a suite report (matplotlib, imported only here and only when plotting).

Each function draws one kind of figure from a study's rows and returns the
file names it wrote (none when the study has nothing to show in that form):

* `gap_distribution`: the gap to the best proved bound per variant (box plot
  with every cell as a point);
* `objective_curves`: objective against the core count (generic:P targets) or
  the pipeline depth, one line per workload and variant;
* `time_vs_size`: wall time against graph size on log-log axes, with the
  least-squares slope of each variant in the legend;
* `heuristic_vs_exact`: the heuristic's objective against CP-SAT's, per cell of
  an audit study, with the diagonal.

Every figure has labelled axes and names its series (a legend, or the tick labels of
the gap plot, whose legend would hide points); file names are derived from the
study name, so identical runs write identical names.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

Row = dict[str, Any]

MIN_POINTS = 3
"""A distribution or a size trend needs at least this many cells (or distinct sizes) to plot."""


def slug(name: str) -> str:
    """A file-name-safe form of a study name."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "study"


def _figure(width: float = 7.0, height: float = 4.2) -> tuple[Any, Any]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(width, height), dpi=110)


def _save(fig: Any, path: Path) -> str:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)
    return path.name


def _ok(rows: Sequence[Row]) -> list[Row]:
    return [r for r in rows if r.get("status") != "error" and r.get("objective") is not None]


def gap_distribution(study: str, rows: Sequence[Row], folder: Path) -> list[str]:
    """Box plot of the gap to the best proved bound (percent) per variant."""
    by_variant: dict[str, list[float]] = {}
    for row in _ok(rows):
        if row.get("gap") is not None:
            by_variant.setdefault(row["variant"], []).append(100 * row["gap"])
    if not by_variant or max(len(v) for v in by_variant.values()) < MIN_POINTS:
        return []
    fig, ax = _figure()
    names = list(by_variant)
    ax.boxplot([by_variant[n] for n in names], showfliers=False)
    for i, name in enumerate(names, start=1):
        values = by_variant[name]
        offsets = [i + 0.18 * ((k % 7) / 6 - 0.5) for k in range(len(values))]
        ax.scatter(offsets, values, s=8, alpha=0.5)
    # The cell counts go in the tick labels: a legend box would hide the tallest points.
    labels = [f"{n} ({len(by_variant[n])})" for n in names]
    ax.set_xticks(range(1, len(names) + 1), labels, rotation=20, ha="right")
    ax.set_ylabel("gap to best proved bound (%)")
    ax.set_xlabel("solver / variant (cells)")
    ax.set_title(f"{study}: gap to bound per solver")
    return [_save(fig, folder / f"{slug(study)}-gap.png")]


def objective_curves(study: str, rows: Sequence[Row], folder: Path) -> list[str]:
    """Objective against cores (latency on generic:P) or pipeline depth, per workload/variant."""
    ok = _ok(rows)
    depth = [r for r in ok if r.get("details", {}).get("depth") is not None]
    if depth:
        axis, rows_used, x_of = "pipeline depth", depth, (lambda r: r["details"]["depth"])
        key_of = lambda r: f"{r['workload']} on {r['target']}"  # noqa: E731
    else:
        cores = {r.get("cores") for r in ok}
        if len(cores) < 2:
            return []
        axis, rows_used, x_of = "cores", ok, (lambda r: r["cores"])
        key_of = lambda r: f"{r['workload']} ({r['variant']})"  # noqa: E731
    lines: dict[str, list[tuple[int, float]]] = {}
    for row in rows_used:
        lines.setdefault(key_of(row), []).append((x_of(row), row["objective"]))
    if len(lines) > 12 or all(len(points) < 2 for points in lines.values()):
        return []
    fig, ax = _figure()
    for name, points in lines.items():
        points.sort()
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=name)
    unit = rows_used[0].get("unit") or ""
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel(axis)
    ax.set_ylabel(f"{'interval' if depth else 'makespan'} ({unit})")
    ax.set_title(f"{study}: objective vs {axis}")
    ax.legend(fontsize=7)
    return [_save(fig, folder / f"{slug(study)}-vs-{axis.split()[-1]}.png")]


def fitted_slope(points: Sequence[tuple[float, float]]) -> float | None:
    """Least-squares slope of ``log y`` against ``log x`` (None below two distinct sizes)."""
    pairs = [(math.log(x), math.log(y)) for x, y in points if x > 0 and y > 0]
    xs = {x for x, _ in pairs}
    if len(xs) < 2:
        return None
    mean_x = sum(x for x, _ in pairs) / len(pairs)
    mean_y = sum(y for _, y in pairs) / len(pairs)
    num = sum((x - mean_x) * (y - mean_y) for x, y in pairs)
    den = sum((x - mean_x) ** 2 for x, _ in pairs)
    return num / den


def time_vs_size(study: str, rows: Sequence[Row], folder: Path) -> list[str]:
    """Wall time against size on log-log axes, one series per variant with its fitted slope."""
    series: dict[str, list[tuple[float, float]]] = {}
    for row in _ok(rows):
        if row.get("size") and row.get("wall_s"):
            series.setdefault(row["variant"], []).append((row["size"], row["wall_s"]))
    if not series or max(len({x for x, _ in s}) for s in series.values()) < MIN_POINTS:
        return []
    fig, ax = _figure()
    for name, points in series.items():
        slope = fitted_slope(points)
        label = f"{name} (slope {slope:.2f})" if slope is not None else name
        ax.scatter([p[0] for p in points], [p[1] for p in points], s=12, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    from matplotlib.ticker import LogLocator, NullFormatter

    ax.xaxis.set_major_locator(LogLocator(base=10))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("graph size (tasks, items or arcs)")
    ax.set_ylabel("wall time (s)")
    ax.set_title(f"{study}: time vs size (log-log)")
    ax.legend(fontsize=7)
    return [_save(fig, folder / f"{slug(study)}-time.png")]


def heuristic_vs_exact(study: str, rows: Sequence[Row], folder: Path) -> list[str]:
    """Scatter of heuristic objective against CP-SAT's best, per audited cell."""
    points = [
        (r["details"]["cpsat_objective"], r["objective"], r["solver"])
        for r in _ok(rows)
        if r.get("mode") == "audit" and r.get("details", {}).get("cpsat_objective") is not None
    ]
    if not points:
        return []
    fig, ax = _figure(5.5, 5.0)
    for solver in sorted({p[2] for p in points}):
        mine = [p for p in points if p[2] == solver]
        ax.scatter([p[0] for p in mine], [p[1] for p in mine], s=14, label=solver)
    low = min(min(p[0], p[1]) for p in points)
    high = max(max(p[0], p[1]) for p in points)
    ax.plot([low, high], [low, high], color="grey", linewidth=1, label="equal")
    ax.set_xlabel("CP-SAT objective (ns)")
    ax.set_ylabel("heuristic objective (ns)")
    ax.set_title(f"{study}: heuristic vs CP-SAT")
    ax.legend(fontsize=7)
    return [_save(fig, folder / f"{slug(study)}-vs-cpsat.png")]


PLOTS = (gap_distribution, objective_curves, time_vs_size, heuristic_vs_exact)
"""Every figure kind, in the order reports show them."""
