"""Run one cell of a suite through the library API and describe the outcome as rows.

`run_cell` is what every executor calls, in this process, a worker process or a
Dask worker: it loads, lowers and solves exactly as ``compile`` and ``verify``
do (`raptor_cp.flows`, `raptor_cp.audit.verify`), checks every answer with the
problem's own checker, and returns plain JSON-ready rows (one per cell, or one
per audit record). A failure of the cell (bad input, nothing found, a proved
infeasibility) is a row with ``status = "error"`` and the message: one cell
never stops the suite. Wall times are measured here; everything else in a row
is a function of the inputs.

Row fields, whatever the mode: ``cell``, ``study``, ``mode``, ``workload``,
``target``, ``variant``, ``solver``, ``part`` (an audit record's instance),
``size`` (tasks, items or arcs), ``cores``, ``objective`` and ``unit`` (ns, bins, ratio),
``bound`` (the best proved lower bound), ``gap`` (``(objective - bound) /
objective``), ``status``, ``reference`` and ``reference_optimal`` with
``gap_vs_reference``, ``wall_s``, ``deterministic_time``, ``details`` (mode
specific), ``error`` and ``versions``.
"""

from __future__ import annotations

import time
from importlib.resources import as_file, files
from typing import Any

from raptor_cp.errors import RaptorError
from raptor_cp.problems import Status, relative_gap
from raptor_cp.suite.spec import EXAMPLE, EXTERNAL, Cell

Row = dict[str, Any]


def versions() -> dict[str, str]:
    """The versions that decide a row: raptor-cp, Python, OR-Tools, NumPy."""
    import platform

    import numpy

    from raptor_cp import __version__

    try:
        from ortools import __version__ as ortools_version
    except ImportError:  # pragma: no cover - ortools is a dependency
        ortools_version = "absent"
    return {
        "raptor-cp": __version__,
        "python": platform.python_version(),
        "ortools": ortools_version,
        "numpy": numpy.__version__,
    }


def run_cell(cell: Cell) -> tuple[list[Row], dict[str, bytes]]:
    """Run ``cell``; return its rows and its artifacts (file name -> bytes, e.g. a Gantt PNG)."""
    began = time.perf_counter()
    artifacts: dict[str, bytes] = {}
    try:
        if cell.path == EXAMPLE:
            with as_file(files("raptor_cp") / "data" / "resnet18.onnx") as path:
                rows = _RUNNERS[cell.mode](cell, str(path), artifacts)
        else:
            rows = _RUNNERS[cell.mode](cell, cell.path, artifacts)
    except RaptorError as error:
        rows = [{"status": "error", "error": " ".join(str(error).split())}]
    wall = time.perf_counter() - began
    stamped = []
    for row in rows:
        full = _base(cell)
        full.update(row)
        full.setdefault("wall_s", wall)
        full["gap"] = relative_gap(full.get("objective"), full.get("bound"))
        stamped.append(full)
    return stamped, artifacts


def _base(cell: Cell) -> Row:
    return {
        "cell": cell.id,
        "study": cell.study,
        "mode": cell.mode,
        "workload": cell.workload,
        "target": cell.target,
        "variant": cell.variant.label,
        "solver": cell.variant.label if cell.variant.method == EXTERNAL else cell.variant.method,
        "part": None,
        "size": None,
        "cores": None,
        "objective": None,
        "unit": None,
        "bound": None,
        "status": None,
        "reference": None,
        "reference_optimal": None,
        "gap_vs_reference": None,
        "deterministic_time": None,
        "details": {},
        "error": None,
        "versions": versions(),
    }


def _status(objective: int | None, bound: int | None, reported: Status) -> str:
    """``optimal`` whenever the objective meets a proved bound, else the solver's status."""
    if objective is not None and bound is not None and objective <= bound:
        return Status.OPTIMAL.value
    return reported.value


def _latency(cell: Cell, path: str, artifacts: dict[str, bytes]) -> list[Row]:
    from raptor_cp.flows import compile_latency, prepare

    prepared = prepare(path, cell.target, lanes=cell.lanes, bits=cell.bits)
    if cell.variant.method == EXTERNAL:
        return _external_latency(cell, prepared)
    settings = dict(cell.variant.settings)
    polish = settings.pop("polish", None)
    began = time.perf_counter()
    result = compile_latency(prepared, cell.variant.method, settings=settings, polish=polish)
    wall = time.perf_counter() - began
    solution = result.solution
    bound = result.best_bound_ns
    if cell.gantt:
        artifacts[f"gantt-{cell.id}.png"] = _gantt(result)
    facts = result.solver_facts()
    polished = facts.get("polish", {})
    return [
        {
            "size": prepared.graph.num_tasks,
            "cores": prepared.target.cores,
            "objective": result.makespan_ns,
            "unit": "ns",
            "bound": bound,
            "status": _status(result.makespan_ns, bound, solution.status),
            "wall_s": wall,
            "deterministic_time": polished.get(
                "deterministic_time", solution.details.get("deterministic_time")
            ),
            "details": {
                "cores_used": int(result.evaluation.cores_used),
                **{key: facts[key] for key in ("winner", "polish") if key in facts},
            },
        }
    ]


def _external_latency(cell: Cell, prepared: Any) -> list[Row]:
    """A scheduler outside raptor-cp on the same problem, re-timed and checked
    (`raptor_cp.suite.external`); ``wall_s`` is the time the program reports for its
    own scheduling when it does (its start-up and the instance's parsing excluded)."""
    from pathlib import Path

    from raptor_cp.bounds import lower_bounds
    from raptor_cp.problems import LatencyProblem
    from raptor_cp.suite.external import ExternalScheduler

    settings = dict(cell.variant.settings)
    problem = LatencyProblem(prepared.graph, prepared.target)
    scheduler = ExternalScheduler(
        label=cell.variant.label,
        command=tuple(settings["command"]),
        cwd=Path(settings["cwd"]),
        timeout_s=float(settings["timeout_s"]),
    )
    solution = scheduler.solve(problem)
    bound = lower_bounds(problem.graph, problem.target).makespan_ns
    assert solution.schedule is not None and solution.objective is not None
    return [
        {
            "size": problem.graph.num_tasks,
            "cores": problem.target.cores,
            "objective": solution.objective,
            "unit": "ns",
            "bound": bound,
            "status": _status(solution.objective, bound, solution.status),
            "wall_s": solution.wall_s,
            "details": {"cores_used": sum(1 for order in solution.schedule.core_order if order)},
        }
    ]


def _gantt(result: Any) -> bytes:
    """A small Gantt chart of a latency result, as PNG bytes."""
    import tempfile
    from pathlib import Path

    from raptor_cp.reports.gantt import write_gantt

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "gantt.png"
        title = f"{result.prepared.model} on {result.problem.target.name}"
        write_gantt(
            path,
            result.problem,
            result.solution.schedule,
            result.evaluation,
            title,
            result.bounds.makespan_ns,
        )
        return path.read_bytes()


def _pipeline(cell: Cell, path: str, artifacts: dict[str, bytes]) -> list[Row]:
    from raptor_cp.bounds import interval_lower_bound
    from raptor_cp.flows import compile_pipeline, prepare

    prepared = prepare(path, cell.target, lanes=cell.lanes, bits=cell.bits)
    method = None if cell.variant.method == "default" else cell.variant.method
    depth = cell.variant.depth or 4
    began = time.perf_counter()
    result = compile_pipeline(prepared, depth, method=method, settings=dict(cell.variant.settings))
    wall = time.perf_counter() - began
    plan = result.solution.plan
    assert plan is not None
    bound = interval_lower_bound(prepared.graph, prepared.target)["interval_ns"]
    return [
        {
            "size": prepared.graph.num_tasks,
            "cores": prepared.target.cores,
            "objective": result.interval_ns,
            "unit": "ns",
            "bound": bound,
            "status": _status(result.interval_ns, bound, result.solution.status),
            "wall_s": wall,
            "details": {
                "depth": depth,
                "stages": len(plan.stages),
                "core_budgets": list(plan.budgets),
                "cores_used": plan.schedule.cores_used,
                "solver": result.solution.solver,
                "program_interval_ns": result.program_interval_ns,
            },
        }
    ]


def _exchange(cell: Cell, path: str, artifacts: dict[str, bytes]) -> list[Row]:
    from raptor_cp.exchange.admission import AdmissionLimits
    from raptor_cp.flows import compile_exchange, prepare

    prepared = prepare(path, cell.target, lanes=cell.lanes, bits=cell.bits)
    budget = cell.variant.budget or 65536
    began = time.perf_counter()
    result = compile_exchange(prepared, budget, AdmissionLimits(), lanes=cell.lanes)
    wall = time.perf_counter() - began
    admission = result.exchange
    assert admission is not None
    summary = admission.summary()
    return [
        {
            "size": result.problem.graph.num_tasks,
            "cores": result.problem.target.cores,
            "objective": result.makespan_ns,
            "unit": "ns",
            "bound": result.bounds.makespan_ns,
            "status": _status(result.makespan_ns, result.bounds.makespan_ns, Status.FEASIBLE),
            "wall_s": wall,
            "details": {
                "budget_bytes": budget,
                "selected": summary["selected"],
                "estimate_bytes": summary["estimate_bytes"],
                "exact_bytes": summary["exact_bytes"],
                "candidates": summary["candidates"],
            },
        }
    ]


def _audit(cell: Cell, path: str, artifacts: dict[str, bytes]) -> list[Row]:
    from pathlib import Path

    from raptor_cp.audit.verify import VerifySettings, verify

    options = dict(cell.variant.settings)
    settings = VerifySettings(
        target=cell.target,
        time_limit_s=float(options.get("time_limit_s", 10.0)),
        workers=int(options.get("workers", 8)),
        lanes=cell.lanes,
        bits=cell.bits,
        mode=cell.variant.method,
        pipeline=int(options.get("pipeline", cell.variant.depth or 4)),
        scheduler=str(options.get("scheduler", "peft")),
    )
    report = verify([Path(path)], settings)
    names = [record.instance for record in report.records]
    rows = []
    for record in report.records:
        # Stage audits name their stage; the pipeline audit's two records (partition,
        # selection) share the model's name and are told apart by their heuristic.
        part = record.instance if len(set(names)) == len(names) else record.heuristic
        rows.append(
            {
                "part": part if len(report.records) > 1 else None,
                "solver": record.heuristic,
                "size": record.tasks,
                "objective": record.heuristic_objective,
                "unit": "ns",
                "bound": record.best_bound,
                "status": "disagree" if record.disagrees else _audit_status(record),
                "wall_s": record.heuristic_wall_s + record.cpsat_wall_s,
                "details": {
                    "cpsat_status": None
                    if record.cpsat_status is None
                    else record.cpsat_status.value,
                    "cpsat_objective": record.cpsat_objective,
                    "cpsat_bound": record.cpsat_bound,
                    "cpsat_skipped": record.cpsat_skipped,
                    "gap_vs_cpsat_pct": record.gap_vs_cpsat_pct,
                    "disagreements": list(record.disagreements),
                },
            }
        )
    return rows


def _audit_status(record: Any) -> str:
    """The heuristic's status judged by the audit: optimal when it meets the best proved bound."""
    objective = record.heuristic_objective
    if objective is None:
        return Status.NOT_FOUND.value
    return Status.OPTIMAL.value if objective <= record.best_bound else Status.FEASIBLE.value


def _packing(cell: Cell, path: str, artifacts: dict[str, bytes]) -> list[Row]:
    """Bin packing: each instance of a BPPLIB or OR-Library file as a `FewestCoresProblem`.

    One row per instance (``part`` names it when the file holds several), solved by
    the registered method and checked; ``bound`` is the strongest proved lower bound:
    L1, L2, the DFF bound (`raptor_cp.heuristics.packing_bounds`), the rounded
    arc-flow LP bound (`raptor_cp.models.arc_flow`) and the solver's own.
    """
    from raptor_cp.heuristics.packing_bounds import bin_bounds
    from raptor_cp.models.arc_flow import arc_flow_graph, arc_flow_lp_bound
    from raptor_cp.problems import FewestCoresProblem, check
    from raptor_cp.solvers import solve
    from raptor_cp.workload.bpp_reader import read_bin_packing

    instances = read_bin_packing(path)
    rows = []
    for instance in instances:
        problem = FewestCoresProblem.bin_packing(instance.sizes, instance.capacity, instance.name)
        began = time.perf_counter()
        solution = solve(problem, cell.variant.method, **dict(cell.variant.settings))
        wall = time.perf_counter() - began
        check(problem, solution)
        bounds = bin_bounds(instance.sizes, instance.capacity)
        lp = arc_flow_lp_bound(arc_flow_graph(instance.sizes, instance.capacity))
        bound = max(bounds.best, lp or 0, solution.bound or 0)
        rows.append(
            {
                "part": instance.name if len(instances) > 1 else None,
                "size": len(instance.sizes),
                "objective": solution.objective,
                "unit": "bins",
                "bound": bound,
                "status": _status(solution.objective, bound, solution.status),
                "wall_s": wall,
                "deterministic_time": solution.details.get("deterministic_time"),
                "details": {
                    "capacity": instance.capacity,
                    "l1": bounds.l1,
                    "l2": bounds.l2,
                    "dff": bounds.dff,
                    "lp": lp,
                    "solver_bound": solution.bound,
                    "solver_status": solution.status.value,
                },
            }
        )
    return rows


def _cycle_ratio(cell: Cell, path: str, artifacts: dict[str, bytes]) -> list[Row]:
    from pathlib import Path

    from raptor_cp.periodic.cycle_ratio import maximum_cycle_ratio
    from raptor_cp.periodic.dasdan import read_dasdan

    parsed = read_dasdan(Path(path))
    began = time.perf_counter()
    result = maximum_cycle_ratio(parsed.graph, cell.variant.method)
    wall = time.perf_counter() - began
    if result is None:
        return [{"size": parsed.graph.num_edges, "status": "acyclic", "wall_s": wall}]
    return [
        {
            "size": parsed.graph.num_edges,
            "objective": float(result.ratio),
            "unit": "ratio",
            "bound": float(result.bound),
            "status": Status.OPTIMAL.value if result.exact else Status.FEASIBLE.value,
            "wall_s": wall,
            "details": {
                "ratio": f"{result.ratio.numerator}/{result.ratio.denominator}",
                "iterations": result.iterations,
            },
        }
    ]


_RUNNERS = {
    "latency": _latency,
    "pipeline": _pipeline,
    "exchange": _exchange,
    "audit": _audit,
    "packing": _packing,
    "cycle-ratio": _cycle_ratio,
}
