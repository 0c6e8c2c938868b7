"""Latency schedulers outside raptor-cp as suite cells: a subprocess on a JSON instance.

A baseline that is not raptor-cp (anrg-saga's HEFT or CPoP, a colleague's
prototype) becomes a column of a comparison report through a small adapter
program, run in whatever environment the baseline needs (saga's newest release
wants Python 3.12; raptor-cp never imports it). The protocol:

1. raptor-cp writes the instance (`instance_json`) to a temporary file and runs
   ``command + [INSTANCE]`` with the suite's folder as working directory;
2. the adapter prints one JSON object on stdout::

       {"cores": [["t3", "t0", ...], [...], ...],   # task names per core, in order
        "wall_s": 0.0123}                            # optional: its own solve time

3. raptor-cp re-times that per-core order with `raptor_cp.evaluation.evaluate`
   and checks it with the problem's checker (`check_latency`), so an external
   schedule is judged exactly like raptor-cp's own; a schedule that misses a
   task, names an unknown one or deadlocks is the cell's error.

The instance is the classic homogeneous model the list-scheduling literature
(and saga) uses: ``P`` identical cores, a cost per task, and for each edge its
bytes and the transfer time between two distinct cores. Targets whose transfers
depend on the endpoints (PIM meshes) or whose cores differ are refused with one
line: their semantics cannot be stated in that format.

``benchmarks/adapters/saga_scheduler.py`` is the adapter for anrg-saga.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from raptor_cp.errors import InvalidInputError, RaptorError, ScheduleViolationError
from raptor_cp.problems import LatencyProblem, LatencySolution, Status, check
from raptor_cp.schedule import Schedule

FORMAT = "raptor-cp external latency instance 1"
"""The ``format`` field of every instance raptor-cp writes."""


class ExternalSchedulerError(RaptorError):
    """The external program failed, timed out or answered something that is not a schedule."""


def instance_json(problem: LatencyProblem) -> dict[str, Any]:
    """``problem`` in the external format (module docstring).

    Raises `InvalidInputError` when the target's cores are not identical or its
    transfers depend on the endpoints. O(T + E).
    """
    graph, target = problem.graph, problem.target
    if graph.core_cost is not None or not target.uniform_transfers:
        raise InvalidInputError(
            f"external schedulers take identical cores with uniform transfers (generic:P[:ns]); "
            f"target {target.name} is not such a target"
        )
    other = 1 if target.cores > 1 else 0
    return {
        "format": FORMAT,
        "name": graph.name,
        "cores": target.cores,
        "tasks": [
            {"name": name, "cost_ns": cost}
            for name, cost in zip(graph.names, graph.cost.tolist(), strict=True)
        ],
        "edges": [
            {
                "src": graph.names[src],
                "dst": graph.names[dst],
                "bytes": nbytes,
                "transfer_ns": target.transfer_ns(0, other, nbytes, bool(direct)),
            }
            for src, dst, nbytes, direct in zip(
                graph.edge_src.tolist(),
                graph.edge_dst.tolist(),
                graph.edge_bytes.tolist(),
                graph.edge_direct.tolist(),
                strict=True,
            )
        ],
    }


@dataclass(frozen=True)
class ExternalScheduler:
    """Run ``command`` on an instance file and judge its answer with raptor-cp's checker.

    ``command`` items may name environment variables (``$SAGA_PYTHON``); an unset one
    is an error, never an empty argument. ``timeout_s`` bounds the subprocess.
    """

    label: str
    command: tuple[str, ...]
    cwd: Path
    timeout_s: float = 600.0

    def argv(self) -> list[str]:
        """``command`` with environment variables expanded (`InvalidInputError` if unset)."""
        expanded = [os.path.expandvars(item) for item in self.command]
        for item, value in zip(self.command, expanded, strict=True):
            if "$" in value:
                raise InvalidInputError(
                    f"solver {self.label}: {item!r} names an environment variable that is not set"
                )
        return expanded

    def solve(self, problem: LatencyProblem) -> LatencySolution:
        """The external program's schedule of ``problem``, re-timed and checked."""
        argv = self.argv()
        with tempfile.TemporaryDirectory(prefix="raptor-external-") as folder:
            path = Path(folder) / "instance.json"
            path.write_text(json.dumps(instance_json(problem)))
            began = time.perf_counter()
            try:
                done = subprocess.run(
                    [*argv, str(path)],
                    cwd=self.cwd,
                    capture_output=True,
                    text=True,
                    timeout=self.timeout_s,
                    check=False,
                )
            except FileNotFoundError as error:
                raise ExternalSchedulerError(f"{self.label}: cannot run {argv[0]!r}") from error
            except subprocess.TimeoutExpired as error:
                raise ExternalSchedulerError(
                    f"{self.label}: no answer within {self.timeout_s:g} s"
                ) from error
            wall = time.perf_counter() - began
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
            raise ExternalSchedulerError(f"{self.label}: exit {done.returncode}: {last}")
        try:
            schedule, makespan, own_wall = self._read_answer(problem, done.stdout)
            solution = LatencySolution(
                schedule,
                status=Status.FEASIBLE,
                solver=self.label,
                objective=makespan,
                wall_s=own_wall if own_wall is not None else wall,
            )
            check(problem, solution)
        except ScheduleViolationError as error:
            raise ExternalSchedulerError(f"{self.label}: {error}") from error
        return solution

    def _read_answer(
        self, problem: LatencyProblem, text: str
    ) -> tuple[Schedule, int, float | None]:
        """The adapter's per-core order, re-timed by `evaluate`: schedule, makespan, own wall."""
        try:
            answer = json.loads(text)
            cores = answer["cores"]
            if not isinstance(cores, list) or not all(isinstance(c, list) for c in cores):
                raise TypeError("'cores' is not a list of lists")
        except (ValueError, KeyError, TypeError) as error:
            raise ExternalSchedulerError(
                f"{self.label}: answer is not {{'cores': [[task names], ...]}}: {error}"
            ) from error
        graph = problem.graph
        if len(cores) > problem.target.cores:
            raise ExternalSchedulerError(
                f"{self.label}: answer uses {len(cores)} cores, target has {problem.target.cores}"
            )
        index = {name: task for task, name in enumerate(graph.names)}
        order: list[tuple[int, ...]] = []
        for core, names in enumerate(cores):
            unknown = [n for n in names if n not in index]
            if unknown:
                raise ExternalSchedulerError(
                    f"{self.label}: core {core} names unknown task {unknown[0]!r}"
                )
            order.append(tuple(index[n] for n in names))
        order += [()] * (problem.target.cores - len(order))
        from raptor_cp.evaluation import evaluate

        provisional = Schedule(tuple(order), np.zeros(graph.num_tasks, np.int64), self.label)
        timing = evaluate(problem, provisional)
        wall = answer.get("wall_s")
        own_wall = float(wall) if isinstance(wall, int | float) else None
        schedule = Schedule(tuple(order), timing.start_ns, self.label)
        return schedule, int(timing.makespan_ns), own_wall
