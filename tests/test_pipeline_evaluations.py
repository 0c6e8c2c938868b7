"""``compile --pipeline N --pipeline-evaluations K``: the beam's queue evaluation budget.

The seeds fix 32 queue evaluations and 128 constructive packings; a user may ask for
a longer search. It must be the same search run longer (the first candidates do not
depend on the budget), reported as such, and refused where it means nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import raptor_cp
from raptor_cp.cli import main
from raptor_cp.errors import InvalidConfigError
from raptor_cp.flows import compile_pipeline, prepare
from raptor_cp.pipeline.beam import SelectionStoppedError
from raptor_cp.targets.base import RealizedScheduleCost

DATA = Path(__file__).parent / "data"
MNIST8 = DATA / "pimcomp" / "mnist8.json"
LENET = DATA / "models" / "lenet5.onnx"


def _run(*args: str | Path | int) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def _selection(out: Path, evaluations: int) -> dict:
    args = ("--target", "pimcomp", "--pipeline", 4, "--out", out, "--json")
    result = _run("compile", MNIST8, *args, "--pipeline-evaluations", evaluations)
    assert result.exit_code == 0, result.output
    return json.loads((out / "reports" / "pipeline_selection.json").read_text())


def _candidates(report: dict) -> list[tuple]:
    return [
        (tuple(c["core_budgets"]), c["move"], c["queue_estimate_ns"]) for c in report["candidates"]
    ]


def test_a_longer_search_continues_the_same_search(tmp_path: Path) -> None:
    short = _selection(tmp_path / "short", 3)
    longer = _selection(tmp_path / "longer", 7)
    for report, evaluations in ((short, 3), (longer, 7)):
        budget = report["queue_budget"]
        assert (budget["queue_evaluations"], budget["queue_evaluations_used"]) == (
            evaluations,
            evaluations,
        )
        assert budget["constructive_packings"] == 4 * evaluations
    assert len(_candidates(short)) == 3
    assert len(_candidates(longer)) == 7
    assert _candidates(longer)[:3] == _candidates(short)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ("--pipeline-evaluations", "8"),
            "error: --pipeline-evaluations needs pipeline mode (--pipeline N > 1)",
        ),
        (
            ("--pipeline", "4", "--pipeline-method", "initial", "--pipeline-evaluations", "8"),
            "error: --pipeline-evaluations is the beam's budget; --pipeline-method initial "
            "evaluates no candidates",
        ),
    ],
)
def test_a_budget_where_no_search_runs_is_refused(
    tmp_path: Path, extra: tuple[str, ...], message: str
) -> None:
    result = _run("compile", MNIST8, "--target", "pimcomp", "--out", tmp_path / "o", *extra)
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [message]
    assert not (tmp_path / "o").exists()


def test_a_budget_below_the_two_roots_is_refused(tmp_path: Path) -> None:
    args = ("--pipeline", "4", "--pipeline-evaluations", "1", "--out", tmp_path / "o")
    result = _run("compile", MNIST8, "--target", "pimcomp", *args)
    assert result.exit_code == 2
    assert "1 is not in the range x>=2" in result.output
    with pytest.raises(InvalidConfigError, match="at least 2"):
        raptor_cp.compile(MNIST8, "pimcomp", pipeline=4, pipeline_evaluations=1)
    with pytest.raises(InvalidConfigError, match="needs pipeline mode"):
        raptor_cp.compile(MNIST8, "pimcomp", pipeline_evaluations=8)
    with pytest.raises(InvalidConfigError, match="evaluates no candidates"):
        raptor_cp.compile(
            MNIST8, "pimcomp", pipeline=4, pipeline_method="initial", pipeline_evaluations=8
        )


def test_a_stopped_search_names_the_budget_that_ends_before_the_candidate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A candidate the queue engine cannot cost stops the search (the seeds); the same
    # search with fewer evaluations never builds it, and the error says how few.
    prepared = prepare(LENET, "arch-a")
    kind = type(prepared.target)
    estimate = kind.estimate_realized_schedule_cost

    def failing(self: Any, programs: Any, name: str, *args: Any) -> RealizedScheduleCost:
        if name.endswith("candidate 3"):
            return RealizedScheduleCost.unavailable(f"{name}: no convergence (test)")
        return estimate(self, programs, name, *args)

    monkeypatch.setattr(kind, "estimate_realized_schedule_cost", failing)
    with pytest.raises(SelectionStoppedError) as stopped:
        compile_pipeline(prepared, 2)
    assert stopped.value.candidate == 3
    assert str(stopped.value).endswith(
        "(--pipeline-method initial keeps the initialized schedule without comparing "
        "candidates; --pipeline-evaluations 3 ends the search before it)"
    )
    shorter = compile_pipeline(prepared, 2, evaluations=3)
    assert shorter.solution.selection is not None
    assert shorter.solution.selection.queue_evaluations == (3, 3)


def test_a_sweep_gives_every_depth_the_budget(tmp_path: Path) -> None:
    args = ("--target", "pimcomp", "--pipeline", 4, "--pipeline-sweep", "--json")
    result = _run("compile", MNIST8, *args, "--pipeline-evaluations", 3, "--out", tmp_path)
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "reports" / "pipeline_sweep.json").read_text())
    assert [(d["depth"], d["queue_evaluations_used"]) for d in report["depths"]] == [
        (2, 3),
        (4, 3),
    ]
