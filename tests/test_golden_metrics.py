"""The quality regression gate: ``benchmarks/suites/gate.toml`` against its golden metrics.

A change that makes any figure worse (fewer proved optima, a larger mean gap, a
larger objective on a fixed instance, a failing cell) fails here with the list;
a change that improves a figure must record it in the same commit:

    raptor-cp report benchmarks/suites/gate.toml --out gate \\
        --golden benchmarks/golden_metrics.json --update-golden
"""

from __future__ import annotations

from pathlib import Path

from raptor_cp.suite.gate import compare, load_golden, metrics
from raptor_cp.suite.runner import run_suite
from raptor_cp.suite.spec import load_suite

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def test_no_figure_of_the_gate_suite_changed(tmp_path: Path) -> None:
    run = run_suite(load_suite(BENCHMARKS / "suites" / "gate.toml"), tmp_path, show_progress=False)
    verdict = compare(metrics(run.rows), load_golden(BENCHMARKS / "golden_metrics.json"))
    assert verdict.regressions == [], "figures got worse:\n" + "\n".join(verdict.regressions)
    assert verdict.improvements == [], (
        "figures improved; record them with --update-golden (see this test's docstring):\n"
        + "\n".join(verdict.improvements)
    )
