"""``compile --pipeline N --pipeline-sweep``: one selection per depth, the lowest interval kept.

PIMCOMP-NN's mnist8 on the `pimcomp` preset is a real case where a larger depth selects
a higher interval (depth 8: 92.9 µs, depths 2 and 4: 92.5 µs; docs/benchmarks.md), so the
sweep must keep a smaller depth there.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import raptor_cp
from raptor_cp.cli import main
from raptor_cp.errors import InvalidConfigError, NotFoundWithinBudgetError
from raptor_cp.pipeline.sweep import sweep_depths

MNIST8 = Path(__file__).parent / "data" / "pimcomp" / "mnist8.json"


def _run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def _compile(out: Path, depth: int, *extra: str) -> dict:
    args = ("--target", "pimcomp", "--pipeline", depth, "--out", out, "--json", *extra)
    result = _run("compile", MNIST8, *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize(
    ("depth", "depths"),
    [(2, (2,)), (3, (2, 3)), (4, (2, 4)), (6, (2, 4, 6)), (8, (2, 4, 8)), (9, (2, 4, 8, 9))],
)
def test_a_sweep_runs_the_powers_of_two_below_the_depth_and_the_depth(
    depth: int, depths: tuple[int, ...]
) -> None:
    assert sweep_depths(depth) == depths


def test_a_sweep_needs_a_pipeline_depth() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        sweep_depths(1)


def test_the_sweep_keeps_the_lowest_interval_and_its_depths_own_schedule(tmp_path: Path) -> None:
    single = {d: _compile(tmp_path / f"d{d}", d) for d in (2, 4, 8)}
    swept = _compile(tmp_path / "sweep", 8, "--pipeline-sweep")
    intervals = {d: s["interval_ns"] for d, s in single.items()}
    # The case the sweep is for: depth 8 alone is worse than depth 2.
    assert intervals[8] > intervals[2]
    kept = min(intervals, key=lambda d: (intervals[d], d))
    assert swept["interval_ns"] == intervals[kept]
    assert swept["pipeline"] == kept
    sweep = swept["sweep"]
    assert (sweep["requested_depth"], sweep["selected_depth"]) == (8, kept)
    assert [d["depth"] for d in sweep["depths"]] == [2, 4, 8]
    for entry in sweep["depths"]:
        alone = single[entry["depth"]]
        assert entry["interval_ns"] == alone["interval_ns"]
        assert entry["stages"] == alone["stages"]
        assert entry["core_budgets"] == alone["core_budgets"]
    report = json.loads((tmp_path / "sweep" / "reports" / "pipeline_sweep.json").read_text())
    assert report == sweep
    # The kept schedule is the one that depth's own compile writes, byte for byte.
    kept_schedule = (tmp_path / f"d{kept}" / "schedule.json").read_bytes()
    assert (tmp_path / "sweep" / "schedule.json").read_bytes() == kept_schedule
    assert "reports/pipeline_sweep.json" in swept["files"]
    assert (
        "sweep" not in single[8]
        and not (tmp_path / "d8" / "reports" / "pipeline_sweep.json").exists()
    )


def test_a_larger_sweep_is_never_worse(tmp_path: Path) -> None:
    found = [_compile(tmp_path / f"s{d}", d, "--pipeline-sweep")["interval_ns"] for d in (2, 4, 8)]
    assert found == sorted(found, reverse=True)


def test_the_summary_line_names_the_kept_depth(tmp_path: Path) -> None:
    args = ("compile", MNIST8, "--target", "pimcomp", "--pipeline", 4, "--pipeline-sweep")
    result = _run(*args, "--out", tmp_path / "o")
    assert result.exit_code == 0, result.output
    assert "(kept from a sweep to 4)" in result.stdout.splitlines()[-1]


def test_a_sweep_in_latency_mode_is_a_one_line_error(tmp_path: Path) -> None:
    result = _run("compile", MNIST8, "--pipeline-sweep", "--out", tmp_path / "o")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "error: --pipeline-sweep needs pipeline mode (--pipeline N > 1)"
    ]
    assert not (tmp_path / "o").exists()
    with pytest.raises(InvalidConfigError, match="a depth sweep needs pipeline mode"):
        raptor_cp.compile(MNIST8, "pimcomp", pipeline_sweep=True)


def test_a_depth_whose_search_finds_nothing_is_recorded_and_skipped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from raptor_cp import flows

    select = flows._select_pipeline

    def fail_at_two(prepared, depth, *rest):  # type: ignore[no-untyped-def]
        if depth == 2:
            raise NotFoundWithinBudgetError("no stage packing found at depth 2")
        return select(prepared, depth, *rest)

    monkeypatch.setattr(flows, "_select_pipeline", fail_at_two)
    prepared = raptor_cp.prepare(MNIST8, "pimcomp")
    result = flows.compile_pipeline(prepared, 4, sweep=True)
    assert result.problem.depth == 4
    document = result.sweep_document()
    assert document["depths"][0] == {"depth": 2, "not_found": "no stage packing found at depth 2"}
    assert document["depths"][1]["interval_ns"] == result.interval_ns


def test_a_sweep_that_finds_nothing_raises_the_last_depths_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from raptor_cp import flows

    def fail(prepared, depth, *rest):  # type: ignore[no-untyped-def]
        raise NotFoundWithinBudgetError(f"nothing at depth {depth}")

    monkeypatch.setattr(flows, "_select_pipeline", fail)
    prepared = raptor_cp.prepare(MNIST8, "pimcomp")
    with pytest.raises(NotFoundWithinBudgetError, match="nothing at depth 4"):
        flows.compile_pipeline(prepared, 4, sweep=True)
