"""The round trip: ``raptor-cp periodic DIR`` on an emitted program against the compile.

``compile --emit DIR`` records two predictions in ``DIR/emission.json``
(`raptor_cp.emit.program`): the schedule's own (latency: the evaluated
makespan; pipeline: the interval the compile reports, the selection's queue
estimate) and the periodic model's prediction of
the realized schedule before lowering (latency: the single pass; pipeline: the
queue interval). ``raptor-cp periodic DIR`` reads the written program back
and computes the same figure from the instructions (`round_trip`):

* **round trip**: the program's figure against the compile's prediction of
  that program; it holds within `ROUND_TRIP_PERCENT`. What can differ is what
  lowering adds: one clock per ``sldi``/``setbw`` and per-instruction rounding;
* **schedule fidelity**: the program's figure against the schedule's own
  prediction, with the difference split over the prediction ladder, each rung
  adding one modeled effect the schedule's model leaves out (`LADDERS`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from raptor_cp.errors import InvalidInputError
from raptor_cp.files import read_json

EMISSION_REPORT = "emission.json"

ROUND_TRIP_PERCENT = 2
"""The round trip holds when the program's figure is within this of the compile's."""
ISSUE = "instruction issue (sldi, setbw: one clock each) and per-instruction rounding"
LADDERS: dict[str, tuple[str, str, tuple[tuple[str, str], ...]]] = {
    "latency": (
        "schedule_makespan_ns",
        "realized_single_pass_ns",
        (
            (
                "realized_unqueued_ns",
                "the realized program instead of the schedule's timeline: blocking send/recv "
                "rendezvous (each transfer occupies both cores' in-order streams; the "
                "schedule overlaps transfers with compute), the baseline loads and stores "
                "(network input, constants, outputs) the schedule does not place, and no "
                "time for operators pimsim-nn does not run (Softmax)",
            ),
            (
                "realized_single_pass_ns",
                "queueing at the cores' source switches and the global-memory port",
            ),
            ("program_ns", ISSUE),
        ),
    ),
    "pipeline": (
        "schedule_interval_ns",
        "realized_queue_interval_ns",
        (
            (
                "realized_queue_interval_ns",
                "the emitted program's recurrence and queues (READY/FREE waits, blocking "
                "rendezvous, switches, the memory port, the baseline loads and stores placed) "
                "instead of the schedule's interval (the selection's queue estimate of the "
                "realized schedule, baseline service as one aggregate term; or, without queue "
                "comparison, the analytic proxy: per-core work, stage span, memory service)",
            ),
            ("program_ns", ISSUE),
        ),
    ),
}
"""Per mode: the schedule's figure, the compile's prediction of the program, and the
ladder of (figure, effect it adds) from the schedule's figure to the program's."""


def emission_directory(path: Path) -> tuple[Path, Path, dict[str, Any]] | None:
    """For a ``compile --emit`` directory: its program, chip config and report; else None."""
    report = path / EMISSION_REPORT
    if not (path.is_dir() and report.is_file()):
        return None
    emission = read_json(report)
    files = emission.get("files") if isinstance(emission, dict) else None
    if not isinstance(files, dict) or emission.get("mode") not in LADDERS:
        raise InvalidInputError(f"{report}: not a raptor-cp emission report (files, mode)")
    return path / str(files.get("program")), path / str(files.get("config")), emission


def program_figure(mode: str, document: dict[str, Any], generations: int = 1) -> float | None:
    """The periodic report's figure that pimsim-nn measures in ``mode``, per inference.

    Pipeline mode reads the ``memory_controller`` estimate (the queues pimsim-nn
    has: switches and the controller's FIFO), which ``periodic`` turns on for an
    emission directory: the larger of its two tie orders, as the compile predicts
    (`QueueEstimate.larger_interval_ns`), None unless both converged; a round of
    the streams runs ``generations`` inferences (the emission report's
    ``generations_per_round``: two for double-buffered publications), so the
    figure is the round's interval divided by it.
    """
    if mode == "latency":
        return document["single_pass"]["latency_ns"]
    estimate = document.get("memory_controller") or {}
    both = (estimate.get("interval_ns"), estimate.get("alternative_tie_interval_ns"))
    return None if None in both else max(both) / generations


def _percent(value: float | None, base: float | None) -> float | None:
    if value is None or not base:
        return None
    return round(100 * (value - base) / base, 3)


def round_trip(emission: dict[str, Any], document: dict[str, Any]) -> dict[str, Any]:
    """The round-trip verdict and schedule fidelity of a periodic ``document`` (module doc)."""
    mode = emission["mode"]
    scheduled, predicted, ladder = LADDERS[mode]
    generations = int(emission.get("generations_per_round", 1))
    figures = {
        **emission["prediction"],
        "program_ns": program_figure(mode, document, generations),
    }
    program = figures["program_ns"]
    effects = []
    previous = figures[scheduled]
    for key, effect in ladder:
        value = figures[key]
        if value is not None and previous is not None:
            effects.append({"rung": key, "effect": effect, "change_ns": value - previous})
        previous = value
    difference = _percent(program, figures[predicted])
    return {
        "mode": mode,
        "generations_per_round": generations,
        "program_ns": program,
        "compile_figure": predicted,
        "compile_ns": figures[predicted],
        "difference_percent": difference,
        "within_percent": ROUND_TRIP_PERCENT,
        "holds": difference is not None and abs(difference) <= ROUND_TRIP_PERCENT,
        "schedule_figure": scheduled,
        "schedule_ns": figures[scheduled],
        "schedule_difference_percent": _percent(program, figures[scheduled]),
        "effects": effects,
    }
