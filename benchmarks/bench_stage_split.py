"""The queue interval of a pipeline partition given by hand: stage ranges and core budgets.

Usage::

    python benchmarks/bench_stage_split.py MODEL TARGET FIRST:STOP:CORES ...

Each ``FIRST:STOP:CORES`` is one stage: the operation groups ``[FIRST, STOP)``
(`raptor_cp.pipeline.groups`, in the selection's order; ``--groups`` lists
them) on ``CORES`` cores. The stages are packed, placed and realized exactly
as pipeline selection builds a candidate (`raptor_cp.pipeline.beam.realized_cost`)
and evaluated by the queue engine in both tie orders; the script prints the
larger (the candidate's estimate), each order's, the busiest core's work and
the memory controller's service, with the command that reproduces them. It
answers "what would this split cost?" without a selection, e.g. for a split
the search never proposes; docs/benchmarks.md ("Tenth pass") used it to
compare three stages of ResNet-50 under single and double buffering (run it
from each commit's tree).
"""

from __future__ import annotations

import argparse
import pathlib
import sys

import raptor_cp
from raptor_cp.pipeline.beam import realized_cost
from raptor_cp.pipeline.initial import initial_pipeline
from raptor_cp.problems import PipelineProblem, Stage

MODELS = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "models"


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model", help="a model name in tests/data/models or a path")
    parser.add_argument("target")
    parser.add_argument("stages", nargs="*", help="FIRST:STOP:CORES per stage")
    parser.add_argument("--groups", action="store_true", help="list the operation groups")
    args = parser.parse_args(argv)
    shipped = MODELS / f"{args.model}.onnx"
    prepared = raptor_cp.prepare(shipped if shipped.exists() else args.model, args.target)
    problem = PipelineProblem(prepared.graph, prepared.target, max(1, len(args.stages)))
    costs = initial_pipeline(problem.graph, problem.target, problem.depth).costs
    if args.groups:
        for index, name in enumerate(costs.groups.names):
            print(index, name)
        return
    stages = [Stage(*(int(x) for x in text.split(":"))) for text in args.stages]
    _, cost = realized_cost(problem, costs, stages, "hand-made split")
    print(f"python benchmarks/bench_stage_split.py {' '.join(argv)}")
    if cost.index_interval_ns is None or cost.reversed_interval_ns is None:
        print(f"unavailable: {'; '.join(cost.reasons)}")
        return
    larger = max(cost.index_interval_ns, cost.reversed_interval_ns)
    memory = "n/a" if cost.memory_service_ns is None else f"{cost.memory_service_ns / 1e6:.3f} ms"
    print(
        f"queue interval {larger / 1e6:.3f} ms (index ties {cost.index_interval_ns / 1e6:.3f}, "
        f"reversed {cost.reversed_interval_ns / 1e6:.3f}); busiest core "
        f"{max(cost.core_work_ns) / 1e6:.3f} ms; memory controller {memory}"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
