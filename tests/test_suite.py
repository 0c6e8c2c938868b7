"""``raptor-cp report``: suite files, the cell runner, executors, resume, reports and the gate."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from raptor_cp.cli import main
from raptor_cp.errors import InvalidInputError
from raptor_cp.reports.suite_plots import fitted_slope
from raptor_cp.reports.suite_report import write_suite_report
from raptor_cp.suite.gate import compare, metrics
from raptor_cp.suite.runner import JOURNAL, run_suite
from raptor_cp.suite.spec import load_suite

DATA = Path(__file__).parent / "data"

SUITE = """
name = "tiny"

[[study]]
name = "stg"
mode = "latency"
workloads = ["stg/rand0000.stg", "raptor/fork_join.json"]
targets = ["generic:2", "generic:4"]
solvers = ["peft", "heft", {{ method = "cpsat", time_limit = 2, workers = 1 }}]

[study.references]
file = "refs.csv"
instance = "instance"
cores = "procs"
value = "best"
status = "status"

[[study]]
name = "pipes"
mode = "pipeline"
workloads = ["models/lenet5.onnx"]
targets = ["arch-a"]
depths = [2, 3]

[[study]]
name = "broken"
mode = "latency"
workloads = ["models/vgg16.onnx"]
targets = ["arch-a"]
"""


@pytest.fixture(scope="module")
def suite_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A suite next to copies of the data it names, with a reference table."""
    root = tmp_path_factory.mktemp("suite")
    for sub in ("stg", "raptor", "models"):
        shutil.copytree(DATA / sub, root / sub)
    (root / "refs.csv").write_text(
        "instance,procs,best,status\nstg/rand0000.stg,2,131,optimal\nstg/rand0000.stg,4,66,optimal\n"
    )
    (root / "tiny.toml").write_text(SUITE.format())
    return root


@pytest.fixture(scope="module")
def local_run(suite_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    out = tmp_path_factory.mktemp("out")
    run = run_suite(load_suite(suite_dir / "tiny.toml"), out, show_progress=False)
    write_suite_report(run, out, "raptor-cp report tiny.toml --out out")
    return out, run


def test_cells_expand_in_a_fixed_order_with_stable_ids(suite_dir: Path) -> None:
    suite = load_suite(suite_dir / "tiny.toml")
    cells = suite.cells()
    assert len(cells) == 2 * 2 * 3 + 2 + 1
    assert [c.variant.label for c in cells[:3]] == [
        "peft",
        "heft",
        "cpsat time_limit_s=2 workers=1",
    ]
    assert cells[0].workload == "stg/rand0000.stg" and cells[0].target == "generic:2"
    assert [c.id for c in cells] == [c.id for c in load_suite(suite_dir / "tiny.toml").cells()]
    assert len({c.id for c in cells}) == len(cells)


def test_every_cell_is_checked_and_judged_against_its_bound(local_run: tuple) -> None:
    _, run = local_run
    rows = [r for r in run.rows if r["study"] == "stg"]
    assert all(r["status"] in ("optimal", "feasible") for r in rows)
    assert all(r["objective"] >= r["bound"] for r in rows)
    cpsat = [r for r in rows if r["solver"] == "cpsat" and r["workload"].startswith("stg")]
    assert [r["objective"] for r in cpsat] == [131, 66]  # the published optima
    assert all(r["reference_optimal"] and r["gap_vs_reference"] == 0 for r in cpsat)


def test_a_failing_cell_is_recorded_and_the_suite_goes_on(local_run: tuple) -> None:
    _, run = local_run
    (broken,) = [r for r in run.rows if r["study"] == "broken"]
    assert broken["status"] == "error"
    assert "one copy of every resident weight needs" in broken["error"]
    assert sum(r["study"] == "pipes" for r in run.rows) == 2


def test_report_files_are_written_and_name_every_study(local_run: tuple) -> None:
    out, run = local_run
    for name in ("report.md", "report.html", "results.csv", "results.json", JOURNAL):
        assert (out / name).is_file(), name
    markdown = (out / "report.md").read_text()
    for study in ("## stg (latency)", "## pipes (pipeline)", "## broken (latency)"):
        assert study in markdown
    assert "failed: models/vgg16.onnx" in markdown
    html = (out / "report.html").read_text()
    assert html.count("data:image/png;base64,") >= 2  # plots embedded, self-contained
    document = json.loads((out / "results.json").read_text())
    assert len(document["rows"]) == len(run.rows) and "versions" in document
    lines = (out / "results.csv").read_text().splitlines()
    assert len(lines) == len(run.rows) + 1


def _tables(markdown: str) -> str:
    """The report without its timing section (the one part that differs between runs)."""
    return markdown.split("## Timing")[0]


def test_a_resumed_run_reuses_what_was_written(suite_dir: Path, local_run: tuple) -> None:
    out, run = local_run
    copy = out.parent / "resumed"
    shutil.copytree(out, copy)
    journal = (copy / JOURNAL).read_text().splitlines()
    (copy / JOURNAL).write_text("\n".join(journal[:5]) + "\n" + journal[5][:20])  # torn last line
    again = run_suite(load_suite(suite_dir / "tiny.toml"), copy, resume=True, show_progress=False)
    assert again.resumed == 5
    assert [r["objective"] for r in again.rows] == [r["objective"] for r in run.rows]


def test_a_previous_run_is_not_overwritten_without_resume(
    suite_dir: Path, local_run: tuple
) -> None:
    out, _ = local_run
    with pytest.raises(InvalidInputError, match="holds a previous run"):
        run_suite(load_suite(suite_dir / "tiny.toml"), out, show_progress=False)


def test_the_process_pool_gives_identical_tables(suite_dir: Path, local_run: tuple) -> None:
    out, _ = local_run
    pooled = out.parent / "pooled"
    again = run_suite(load_suite(suite_dir / "tiny.toml"), pooled, workers=2, show_progress=False)
    write_suite_report(again, pooled, "raptor-cp report tiny.toml --out out")
    assert _tables((pooled / "report.md").read_text()) == _tables((out / "report.md").read_text())


def test_the_dask_executor_gives_identical_tables(suite_dir: Path, local_run: tuple) -> None:
    pytest.importorskip("dask.distributed")
    out, _ = local_run
    dasked = out.parent / "dask"
    again = run_suite(
        load_suite(suite_dir / "tiny.toml"), dasked, executor="dask", workers=2, show_progress=False
    )
    write_suite_report(again, dasked, "raptor-cp report tiny.toml --out out")
    assert _tables((dasked / "report.md").read_text()) == _tables((out / "report.md").read_text())


def test_the_gate_flags_worse_figures_and_welcomes_better_ones(local_run: tuple) -> None:
    _, run = local_run
    current = metrics(run.rows)
    assert compare(current, current).passed
    worse = json.loads(json.dumps(current))
    key = next(k for k, v in worse["objectives"].items() if v is not None)
    worse["objectives"][key] -= 1  # the golden file claims a better objective than this run
    verdict = compare(current, worse)
    assert not verdict.passed and key in verdict.regressions[0]
    better = json.loads(json.dumps(current))
    better["objectives"][key] += 1
    verdict = compare(current, better)
    assert verdict.passed and key in verdict.improvements[0]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name = 1\n[[study]]\nmode = 'latency'\nworkloads = ['x']", "workload 'x': no such file"),
        ("[[study]]\nmode = 'fast'", "unknown mode 'fast'"),
        ("[[study]]\ncolour = 'blue'", "unknown key 'colour'"),
        ("[[study]]\nworkloads = ['glob:none/*.stg']", "'glob:none/*.stg' matches no file"),
        ("[[study]]\nworkloads = 3", "workloads: expected list"),
        ("rubbish = [", "invalid TOML"),
        ("name = 'x'", "no [[study]] tables"),
    ],
)
def test_a_bad_suite_is_one_line_naming_the_key(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    result = CliRunner().invoke(main, ["report", str(path), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert result.output.startswith("error: ") and message in result.output
    assert result.output.count("\n") == 1
    assert not (tmp_path / "o").exists()


def test_the_fitted_slope_of_a_power_law() -> None:
    assert fitted_slope([(10, 2.0), (100, 200.0), (1000, 20000.0)]) == pytest.approx(2.0)
    assert fitted_slope([(10, 1.0), (10, 2.0)]) is None


PACKING = """
[[study]]
name = "bins"
mode = "packing"
workloads = ["binpack.txt", "N1C1W1_A.BPP"]
solvers = ["fewest-cores", {{ method = "cpsat", time_limit = 2, workers = 1 }}]

[study.references]
file = "refs.csv"
instance = "file"
value = "bins"
match = "{match}"
"""


def _packing_suite(folder: Path, match: str) -> Path:
    """An OR-Library file of two instances and a BPPLIB file, with references whose paths
    carry a longer prefix (the source's folder), as BPPLIB's tables do."""
    shutil.copy(DATA / "bpp" / "N1C1W1_A.BPP", folder / "N1C1W1_A.BPP")
    (folder / "binpack.txt").write_text("2\nu_a\n10 7 4\n9\n4\n4\n4\n4\n3\n1\nu_b\n8 2 1\n4\n4\n")
    (folder / "refs.csv").write_text(
        "file,bins\nsrc/N1C1W1_A.BPP,25\nsrc/binpack.txt#u_a,4\nsrc/binpack.txt#u_b,1\n"
    )
    (folder / "bins.toml").write_text(PACKING.format(match=match))
    return folder / "bins.toml"


def test_packing_rows_meet_the_strongest_bound_and_their_reference(tmp_path: Path) -> None:
    suite = load_suite(_packing_suite(tmp_path, "suffix"))
    run = run_suite(suite, tmp_path / "out", show_progress=False)
    found = {(r["workload"], r["part"], r["solver"]): r for r in run.rows}
    assert len(found) == len(run.rows) == 6
    # u_a: bounds L2 = DFF = 3, optimum 4; the arc-flow LP bound proves the heuristic's 4.
    heuristic = found["binpack.txt", "u_a", "fewest-cores"]
    assert (heuristic["objective"], heuristic["bound"], heuristic["status"]) == (4, 4, "optimal")
    assert (heuristic["details"]["l2"], heuristic["details"]["lp"]) == (3, 4)
    assert heuristic["details"]["solver_bound"] == 3
    for row in run.rows:
        assert row["unit"] == "bins" and row["status"] == "optimal"
        assert row["objective"] == row["reference"] and row["gap_vs_reference"] == 0
    assert found["N1C1W1_A.BPP", None, "cpsat"]["objective"] == 25
    assert found["binpack.txt", "u_b", "cpsat"]["size"] == 2


def test_exact_references_do_not_match_longer_paths(tmp_path: Path) -> None:
    suite = load_suite(_packing_suite(tmp_path, "exact"))
    run = run_suite(suite, tmp_path / "out", show_progress=False)
    assert all(row["reference"] is None for row in run.rows)
    (tmp_path / "bins.toml").write_text(PACKING.format(match="fuzzy"))
    message = (
        r"bins\.toml: study 'bins': references\.match must be one of exact, suffix, not 'fuzzy'$"
    )
    with pytest.raises(InvalidInputError, match=message):
        load_suite(tmp_path / "bins.toml")


def test_latency_cells_run_the_portfolio_and_its_polish(tmp_path: Path) -> None:
    shutil.copytree(DATA / "stg", tmp_path / "stg")
    (tmp_path / "auto.toml").write_text(
        '[[study]]\nname = "auto"\nmode = "latency"\nworkloads = ["stg/rand0090.stg"]\n'
        'targets = ["generic:4"]\n'
        'solvers = ["auto", { method = "auto", polish = 0.3 }, { method = "cpsat", polish = 1 }]\n'
    )
    suite = load_suite(tmp_path / "auto.toml")
    assert [c.variant.label for c in suite.cells()] == ["auto", "auto polish=0.3", "cpsat polish=1"]
    plain, polished, refused = run_suite(suite, tmp_path / "out", show_progress=False).rows
    assert (plain["objective"], plain["bound"], plain["status"]) == (78, 72, "feasible")
    assert plain["details"]["winner"] == "heft"
    assert "polish" not in plain["details"]
    assert polished["details"]["polish"]["start_makespan_ns"] == 78
    assert polished["details"]["polish"]["method"] == "exact"
    assert polished["objective"] < 78
    assert 0 < polished["deterministic_time"] < 0.4  # the budget; CP-SAT overshoots a little
    assert refused["status"] == "error"
    assert refused["error"] == (
        "polish improves a heuristic's schedule; cpsat's budget is its time_limit_s"
    )
