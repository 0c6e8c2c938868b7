"""The ``raptor-cp pack`` command: summaries, JSON, both solvers, one-line errors."""

from __future__ import annotations

import json
import pathlib

import pytest
from click.testing import CliRunner, Result

from raptor_cp.cli import main

BPP = pathlib.Path(__file__).parent / "data" / "bpp"


def _run(*args: str | pathlib.Path) -> Result:
    return CliRunner().invoke(main, ["pack", *[str(a) for a in args]])


def test_summary_line_of_a_bpplib_file() -> None:
    result = _run(BPP / "N1C1W1_A.BPP")
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        f"{BPP / 'N1C1W1_A.BPP'} (N1C1W1_A): 50 items, capacity 100: 25 bins, lower bound 25, "
        "optimal (fewest-cores)\n"
    )


def test_json_holds_bins_bound_status_and_a_checked_assignment() -> None:
    result = _run(BPP / "Falkenauer_t120_00.txt", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert set(report) == {
        "name", "items", "capacity", "solver", "bins", "lower_bound", "status", "assignment",
        "loads", "best_known",
    }  # fmt: skip
    assert (report["bins"], report["lower_bound"], report["status"]) == (41, 40, "feasible")
    sizes = [int(x) for x in (BPP / "Falkenauer_t120_00.txt").read_text().split()[2:]]
    loads = [0] * report["bins"]
    for size, b in zip(sizes, report["assignment"], strict=True):
        loads[b] += size
    assert loads == report["loads"] and max(loads) <= 1000


def test_identical_runs_print_identical_output() -> None:
    assert (
        _run(BPP / "N1C1W1_C.BPP", "--json").stdout == _run(BPP / "N1C1W1_C.BPP", "--json").stdout
    )


def test_cpsat_proves_what_the_heuristic_bound_cannot(tmp_path: pathlib.Path) -> None:
    # Bounds 3, optimum 4 (see test_cpsat_packing): CP-SAT's arc-flow LP proves 4.
    path = tmp_path / "small.txt"
    path.write_text("7\n10\n9\n4\n4\n4\n4\n3\n1\n")
    heuristic = json.loads(_run(path, "--json").stdout)
    assert (heuristic["bins"], heuristic["lower_bound"], heuristic["status"]) == (4, 3, "feasible")
    exact = json.loads(_run(path, "--solver", "cpsat", "--time-limit", "2", "--json").stdout)
    assert (exact["bins"], exact["lower_bound"], exact["status"]) == (4, 4, "optimal")
    assert exact["solver"] == "cpsat"


def test_or_library_file_packs_every_instance(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "binpack.txt"
    path.write_text("2\nu_a\n10 3 2\n6\n5\n4\nu_b\n8 2 1\n4\n4\n")
    text = _run(path)
    assert text.stdout.splitlines() == [
        f"{path} (u_a): 3 items, capacity 10: 2 bins, lower bound 2, optimal (fewest-cores)",
        f"{path} (u_b): 2 items, capacity 8: 1 bins, lower bound 1, optimal (fewest-cores)",
    ]
    report = json.loads(_run(path, "--json").stdout)
    assert report["file"] == str(path)
    assert [(r["name"], r["bins"], r["best_known"]) for r in report["instances"]] == [
        ("u_a", 2, 2),
        ("u_b", 1, 1),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty file (expected the item count on line 1)"),
        ("3\n10\n4\n5\n", "line 4: file ends before the size of item 3 of 3"),
        ("2\n10\n4\n11\n", "line 4: item 2 has size 11, larger than the capacity 10"),
        ("2\nten\n4\n5\n", "line 2: expected an integer capacity, found 'ten'"),
    ],
)
def test_malformed_file_is_one_error_line(tmp_path: pathlib.Path, text: str, message: str) -> None:
    path = tmp_path / "bad.txt"
    path.write_text(text)
    result = _run(path, "--json")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == f"error: {path}: {message}\n"


def test_missing_file_and_bad_options_exit_2(tmp_path: pathlib.Path) -> None:
    missing = _run(tmp_path / "none.txt")
    assert (missing.exit_code, missing.stderr) == (
        2,
        f"error: {tmp_path / 'none.txt'}: no such file\n",
    )
    assert _run(BPP / "N1C1W1_A.BPP", "--solver", "magic").exit_code == 2
    assert _run(BPP / "N1C1W1_A.BPP", "--time-limit", "0").exit_code == 2
