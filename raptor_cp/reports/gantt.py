"""``gantt.png``: one row per used core, one bar per task, coloured by operation.

Colours: the `MAX_COLOURED` operations with the most busy time (ties by
operation id) each get their own colour, darker shades first, and every other
operation is drawn in one grey; a legend beside the chart names each coloured
operation with its share of the total busy time, and the grey group with its
count and share. (Cycling one palette made ResNet-18's 50 operations share 20
colours with no way to tell them apart.)

matplotlib is imported inside `write_gantt` (Agg canvas, no pyplot state) so the
CLI pays for it only with ``--plot``. For hundreds of cores the figure grows to
a capped height, bars have no outline so thin rows stay visible, and only about
40 core labels are printed.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from raptor_cp.evaluation import Evaluation
from raptor_cp.problems import LatencyProblem
from raptor_cp.reports.output import time_unit
from raptor_cp.schedule import Schedule

if TYPE_CHECKING:
    from matplotlib.axes import Axes

MAX_LABELS = 40
"""At most this many core labels on the y axis."""
MAX_COLOURED = 18
"""Operations drawn in their own colour (tab20 without its two greys); the rest are grey."""
OTHER_COLOUR = (0.78, 0.78, 0.78, 1.0)
LABEL_CHARS = 32
"""Longer operation names are shortened in the legend (the start and end are kept)."""


def write_gantt(
    path: Path,
    problem: LatencyProblem,
    schedule: Schedule,
    evaluation: Evaluation,
    title: str,
    lower_bound_ns: int | None = None,
) -> None:
    """Draw ``schedule`` timed by ``evaluation`` into the PNG file ``path``.

    A dashed vertical line marks ``lower_bound_ns`` when given, so the gap
    between the schedule and the bound is visible at a glance.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    used = [p for p, order in enumerate(schedule.core_order) if order]
    makespan = int(evaluation.makespan_ns)
    divisor, unit = time_unit(max(makespan, 1))
    start = [int(t) for t in evaluation.start_ns]
    finish = [int(t) for t in evaluation.finish_ns]
    operation = problem.graph.operation.tolist()

    busy: dict[int, int] = {}
    for t, op in enumerate(operation):
        busy[op] = busy.get(op, 0) + finish[t] - start[t]
    total = max(sum(busy.values()), 1)
    ranked = sorted(busy, key=lambda op: (-busy[op], op))
    palette = _palette()
    colour = {op: palette[i] for i, op in enumerate(ranked[:MAX_COLOURED])}

    legend_rows = min(len(ranked), MAX_COLOURED + 1) + 2
    height = min(max(3.0, 1.5 + 0.15 * len(used), 0.2 * legend_rows), 24.0)
    figure = Figure(figsize=(15, height))
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    for row, core in enumerate(used):
        order = schedule.core_order[core]
        axes.broken_barh(
            [(start[t] / divisor, (finish[t] - start[t]) / divisor) for t in order],
            (row - 0.4, 0.8),
            facecolors=[colour.get(operation[t], OTHER_COLOUR) for t in order],
            linewidth=0,
        )
    if lower_bound_ns is not None:
        axes.axvline(lower_bound_ns / divisor, color="black", linestyle="--", linewidth=1)
        axes.text(
            lower_bound_ns / divisor, -0.6, "lower bound ", ha="right", va="bottom", fontsize=8
        )
    step = max(1, math.ceil(len(used) / MAX_LABELS))
    axes.set_yticks(range(0, len(used), step))
    axes.set_yticklabels([f"core {used[r]}" for r in range(0, len(used), step)], fontsize=8)
    axes.set_ylim(len(used) - 0.5, -0.5)
    axes.set_xlim(0, max(makespan, 1) / divisor)
    axes.set_xlabel(f"time ({unit})")
    axes.set_title(title, fontsize=10)
    names = problem.graph.operation_names
    entries = [
        (colour[op], f"{_short(names[op])}  {100 * busy[op] / total:.1f} %") for op in colour
    ]
    rest = ranked[MAX_COLOURED:]
    if rest:
        share = 100 * sum(busy[op] for op in rest) / total
        entries.append((OTHER_COLOUR, f"{len(rest)} other operations  {share:.1f} %"))
    _legend(axes, entries)
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def _legend(axes: Axes, entries: list[tuple[tuple[float, ...], str]]) -> None:
    """A legend of coloured patches to the right of ``axes``, titled by what it measures."""
    from matplotlib.patches import Patch

    handles = [Patch(facecolor=c, label=label) for c, label in entries]
    axes.legend(
        handles=handles,
        title="operation, share of busy time",
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        borderaxespad=0.0,
        fontsize=8,
        title_fontsize=8,
        frameon=False,
    )


def _short(name: str) -> str:
    """``name`` within `LABEL_CHARS`, keeping its start and end."""
    if len(name) <= LABEL_CHARS:
        return name
    keep = (LABEL_CHARS - 1) // 2
    return f"{name[:keep]}…{name[-keep:]}"


def _palette() -> list[tuple[float, float, float, float]]:
    """`MAX_COLOURED` colours: tab20's dark shades, then its light ones, without the greys."""
    from matplotlib import colormaps

    cmap = colormaps["tab20"]
    greys = {14, 15}
    order = [i for i in range(0, 20, 2) if i not in greys] + [
        i for i in range(1, 20, 2) if i not in greys
    ]
    return [cmap(i) for i in order][:MAX_COLOURED]
