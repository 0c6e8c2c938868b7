"""Program order of a latency schedule: every cross-core edge a rendezvous, placed by
simulating the program (`raptor_cp.periodic.rendezvous_order`, tasks cut into units of at
most `QUANTUM_NS`).

On ResNet-18 (arch-a), placing each rendezvous where the schedule's timeline has
it took the single pass to 9.88 ms, against 5.09 ms with the simulated order
(docs/emission.md). Time as `simulate_rendezvous`.
"""

from __future__ import annotations

import numpy as np

from raptor_cp.emit.order import CoreItems, Item, ItemKind
from raptor_cp.graph import ComputeGraph
from raptor_cp.periodic.rendezvous_order import (
    Action,
    UnitCuts,
    simulate_rendezvous,
)
from raptor_cp.schedule import Schedule
from raptor_cp.targets.pim.target import PimTarget


def latency_items(
    graph: ComputeGraph,
    target: PimTarget,
    schedule: Schedule,
    start_ns: np.ndarray,
    cuts: UnitCuts,
) -> CoreItems:
    """The per-core programs of a checked latency schedule (module docstring).

    ``start_ns`` are the evaluated starts (`raptor_cp.evaluate`): they rank the
    transfers a core could take; ``cuts`` cut the tasks into units (`UnitCuts`
    with `QUANTUM_NS`). Raises `ScheduleViolationError` when the core orders
    contradict the dependencies (the simulation cannot finish).
    """
    core = schedule.core
    crossing = np.flatnonzero(core[graph.edge_src] != core[graph.edge_dst]).tolist()
    programs = simulate_rendezvous(graph, target.step_timing(), schedule, start_ns, crossing, cuts)
    nbytes = graph.edge_bytes.tolist()
    kinds = {Action.SEND: ItemKind.SEND, Action.RECV: ItemKind.RECV}
    return [
        [
            Item(ItemKind.TASK, task=x.task, part=x.part)
            if x.action is Action.TASK
            else Item(kinds[x.action], edge=x.edge, peer=x.peer, nbytes=nbytes[x.edge])
            for x in program
        ]
        for program in programs.entries()
    ]
