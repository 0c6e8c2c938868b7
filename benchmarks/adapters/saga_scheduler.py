"""anrg-saga's schedulers as an external latency scheduler of ``raptor-cp report``.

Runs in saga's own environment (its newest release needs Python 3.12; raptor-cp
is not imported here, only the JSON instance is read)::

    python3.12 -m venv venv-saga
    venv-saga/bin/pip install anrg-saga==2.1.0 --no-deps
    venv-saga/bin/pip install pysmt pydantic networkx numpy scipy pandas matplotlib
    venv-saga/bin/python saga_scheduler.py HeftScheduler INSTANCE.json

``INSTANCE.json`` is raptor-cp's external instance (`raptor_cp.suite.external`):
identical cores, task costs, edge transfer times. The saga network has one node
of speed 1 per core and links of speed 1 between every pair, and each edge
carries its transfer time as data size, so saga's ``size / speed`` is raptor's
transfer time; saga's self-links are free, as in raptor. SAGA's
``TaskGraph.create`` adds zero-cost ``__super_source__``/``__super_sink__`` tasks
to graphs with several entries or exits; they are dropped from the answer.

Prints ``{"cores": [[names in start order], ...], "wall_s": seconds of saga's
schedule call, "makespan": saga's own makespan}``; raptor-cp re-times and checks
the order itself. SAGA is licensed for non-commercial use only: it stays out of
raptor-cp's dependencies.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any


def to_saga(instance: dict[str, Any]) -> tuple[Any, Any]:
    """saga ``(TaskGraph, Network)`` of a raptor-cp external instance (module docstring)."""
    from saga import Network, TaskGraph

    tasks = [(task["name"], float(task["cost_ns"])) for task in instance["tasks"]]
    edges = [(e["src"], e["dst"], float(e["transfer_ns"])) for e in instance["edges"]]
    cores = instance["cores"]
    nodes = [(f"p{p:04d}", 1.0) for p in range(cores)]
    links = [(f"p{a:04d}", f"p{b:04d}", 1.0) for a in range(cores) for b in range(a + 1, cores)]
    return TaskGraph.create(tasks, edges), Network.create(nodes, links)


def core_orders(schedule: Any, cores: int, names: set[str]) -> list[list[str]]:
    """Task names per core in start order, saga's super source/sink left out."""
    order: list[list[str]] = [[] for _ in range(cores)]
    for node, placed in schedule.items():
        for task in sorted(placed, key=lambda item: (item.start, item.end)):
            if task.name in names:
                order[int(node[1:])].append(task.name)
    return order


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit("usage: saga_scheduler.py SCHEDULER_CLASS INSTANCE.json")
    import saga.schedulers

    logging.getLogger().setLevel(logging.ERROR)
    scheduler_class = getattr(saga.schedulers, sys.argv[1], None)
    if scheduler_class is None:
        sys.exit(f"saga has no scheduler {sys.argv[1]!r}")
    with open(sys.argv[2]) as handle:
        instance = json.load(handle)
    task_graph, network = to_saga(instance)
    began = time.perf_counter()
    schedule = scheduler_class().schedule(network, task_graph)
    wall = time.perf_counter() - began
    names = {task["name"] for task in instance["tasks"]}
    answer = {
        "cores": core_orders(schedule, instance["cores"], names),
        "wall_s": wall,
        "makespan": schedule.makespan,
    }
    print(json.dumps(answer))


if __name__ == "__main__":
    main()
