"""The stage packer of a revision against this tree's: the same packings, in how much time.

Usage::

    python benchmarks/bench_stage_packing_speed.py REV [--model resnet50] [--target arch-a]
        [--depth 4] [--random 300] [--seed 0]

``REV`` is a git revision whose ``raptor_cp/heuristics/stage_packing.py`` is
loaded beside this tree's (the rest of the package is this tree's, so the two
modules must share their imports). The script

1. captures every `pack_stage` problem a pipeline selection of ``--model`` on
   ``--target`` at ``--depth`` solves (one compile in this process, ``--jobs 1``),
2. draws ``--random`` random problems (multi-weight tasks, transfers, capacity
   at most one above the widest task: tight, so swaps are often refused),

packs each with both modules, one after the other, stops with the first
problem whose cores or details differ, and prints both totals with the
command that reproduces them. docs/benchmarks.md ("Sixteenth pass") records
its figures.
"""

from __future__ import annotations

import argparse
import importlib.util
import pathlib
import random
import subprocess
import sys
import time
from types import ModuleType

from raptor_cp.problems import PackingProblem, PackingSolution

REPO = pathlib.Path(__file__).resolve().parent.parent
MODULE = "raptor_cp/heuristics/stage_packing.py"


def _module_at(revision: str) -> ModuleType:
    """``stage_packing`` as it is at ``revision``, loaded under another name."""
    source = subprocess.run(
        ["git", "show", f"{revision}:{MODULE}"], cwd=REPO, check=True, capture_output=True,
        text=True,
    ).stdout  # fmt: skip
    spec = importlib.util.spec_from_loader("stage_packing_at_revision", loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    exec(compile(source, f"{revision}:{MODULE}", "exec"), module.__dict__)
    return module


def _captured(model: str, target: str, depth: int) -> list[PackingProblem]:
    """Every problem `pack_stage` solves in one pipeline selection."""
    import raptor_cp.heuristics.stage_packing as stage_packing
    from raptor_cp.flows import compile_pipeline, prepare

    problems: list[PackingProblem] = []
    pack = stage_packing.pack_stage

    def recording(problem: PackingProblem) -> PackingSolution:
        problems.append(problem)
        return pack(problem)

    stage_packing.pack_stage = recording
    try:
        prepared = prepare(REPO / "tests" / "data" / "models" / f"{model}.onnx", target)
        compile_pipeline(prepared, depth, jobs=1)
    finally:
        stage_packing.pack_stage = pack
    return problems


def _random(rng: random.Random) -> PackingProblem:
    n, kinds, cores = rng.randint(2, 120), rng.randint(3, 40), rng.randint(1, 12)
    size = tuple(rng.randint(0, 6) for _ in range(kinds))
    weights = tuple(
        tuple(rng.sample(range(kinds), rng.choice([0, 1, 1, 1, 2, 3]))) for _ in range(n)
    )
    loads = tuple(rng.randint(1, 1000) for _ in range(n))
    edges = tuple(
        (rng.randrange(n), rng.randrange(n), rng.randint(0, 300))
        for _ in range(rng.randint(0, 2 * n))
    )
    widest = max(sum(size[w] for w in set(ws)) for ws in weights)
    return PackingProblem(loads, weights, size, cores, widest + rng.randint(0, 12), edges)


def _compare(name: str, problems: list[PackingProblem], before: ModuleType) -> None:
    from raptor_cp.heuristics.stage_packing import pack_stage

    if not problems:
        print(f"{name}: no stage packing to compare (order alone held every stage)")
        return
    spent = [0.0, 0.0]
    for i, problem in enumerate(problems):
        began = time.perf_counter()
        old = before.pack_stage(problem)
        middle = time.perf_counter()
        new = pack_stage(problem)
        spent[0] += middle - began
        spent[1] += time.perf_counter() - middle
        if (old.core, old.details, old.objective) != (new.core, new.details, new.objective):
            sys.exit(f"{name} problem {i}: the packings differ")
    print(
        f"{name}: {len(problems)} problems, the same packings; revision {spent[0]:.2f} s, "
        f"this tree {spent[1]:.2f} s ({spent[0] / max(spent[1], 1e-9):.1f}x)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("revision")
    parser.add_argument("--model", default="resnet50")
    parser.add_argument("--target", default="arch-a")
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--random", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    before = _module_at(args.revision)
    captured = _captured(args.model, args.target, args.depth)
    _compare(f"{args.model} on {args.target}, depth {args.depth}", captured, before)
    rng = random.Random(args.seed)
    _compare(f"random (seed {args.seed})", [_random(rng) for _ in range(args.random)], before)
    print("command: python benchmarks/bench_stage_packing_speed.py " + " ".join(sys.argv[1:]))


if __name__ == "__main__":
    main()
