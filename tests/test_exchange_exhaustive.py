"""Admission against exhaustive search over the same candidates (LeNet-5 on 16 IPU tiles).

The property the seed's hard case asks for: at a budget the first-choice plan
does not meet, admission finds a plan whenever some candidate's exact table fits
(its exhaustion fallback guarantees it), and reports none otherwise.
"""

from __future__ import annotations

from pathlib import Path

from raptor_cp.exchange.admission import AdmissionLimits, admit
from raptor_cp.exchange.candidates import CandidateOptions, WorkloadCandidates
from raptor_cp.exchange.exhaustive import exhaustive_search, fitting
from raptor_cp.targets.ipu import IpuTarget
from raptor_cp.workload.load import load_workload

MODELS = Path(__file__).parent / "data" / "models"


def test_admission_finds_a_plan_whenever_exhaustive_search_does() -> None:
    workload = load_workload(MODELS / "lenet5.onnx")
    target = IpuTarget.preset("ipu-mk2").with_tiles(16)
    source = WorkloadCandidates(
        workload, target, CandidateOptions.for_workload(workload, target, batch=2)
    )
    limits = AdmissionLimits()
    every = exhaustive_search(source, limits)
    sizes = sorted({exact.exact_bytes for _, exact in every.values()})
    first = admit(source, 10**9, limits).selected
    assert first is not None
    below = [s for s in sizes if s < every[first][1].exact_bytes]
    assert below, "the first-choice plan is the smallest: no budget to test"
    budgets = sorted({b for s in below for b in (s, s - 8)} | {sizes[0] - 8})
    outcomes = []
    for budget in budgets:
        state = admit(source, budget, limits)
        fits = fitting(every, budget)
        assert (state.selected is not None) == bool(fits), budget
        assert state.selected is None or state.selected in fits
        outcomes.append(state.selected is not None)
    # The budgets must exercise both answers, else the agreement above proves little.
    assert any(outcomes) and not all(outcomes), outcomes
