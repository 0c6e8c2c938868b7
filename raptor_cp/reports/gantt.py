"""``gantt.png``: one row per used core, one bar per task, coloured by operation.

matplotlib is imported inside `write_gantt` (Agg canvas, no pyplot state) so the
CLI pays for it only with ``--plot``. For hundreds of cores the figure grows to
a capped height, bars have no outline so thin rows stay visible, and only about
40 core labels are printed.
"""

from __future__ import annotations

import math
from pathlib import Path

from raptor_cp.evaluation import Evaluation
from raptor_cp.problems import LatencyProblem
from raptor_cp.reports.output import time_unit
from raptor_cp.schedule import Schedule

MAX_LABELS = 40
"""At most this many core labels on the y axis."""


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

    figure = Figure(figsize=(12, min(max(3.0, 1.5 + 0.15 * len(used)), 24.0)))
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    palette = _tab20()
    for row, core in enumerate(used):
        order = schedule.core_order[core]
        axes.broken_barh(
            [(start[t] / divisor, (finish[t] - start[t]) / divisor) for t in order],
            (row - 0.4, 0.8),
            facecolors=[palette[operation[t] % len(palette)] for t in order],
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
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def _tab20() -> list[tuple[float, float, float, float]]:
    """The 20 colours of matplotlib's ``tab20`` map, in order."""
    from matplotlib import colormaps

    cmap = colormaps["tab20"]
    return [cmap(i) for i in range(cmap.N)]
