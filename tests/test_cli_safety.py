"""Never lose a user's files, never show a traceback: output safety and the last-resort handler."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from raptor_cp.cli import main
from raptor_cp.cli.common import INTERNAL_ERROR_STATUS

FORK_JOIN = Path(__file__).parent / "data" / "raptor" / "fork_join.json"


def _run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def _compile(out: Path, *extra: str) -> Result:
    return _run("compile", FORK_JOIN, "-t", "generic:2", "--out", out, *extra)


def _only_error(result: Result, status: int = 2) -> str:
    assert result.exit_code == status, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and result.stderr.splitlines()[-1] == errors[0]
    return errors[0]


def test_a_foreign_file_deep_inside_out_is_never_deleted(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert _compile(out).exit_code == 0
    (out / "reports" / "deeper").mkdir(parents=True)
    (out / "reports" / "deeper" / "notes.txt").write_text("mine")
    assert _only_error(_compile(out)) == (
        f"error: {out}: refusing to replace a directory holding files raptor-cp did not write "
        "(reports/deeper); choose another --out"
    )
    assert (out / "reports" / "deeper" / "notes.txt").read_text() == "mine"


def test_a_directory_named_like_an_output_file_is_foreign_inside(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "schedule.json").mkdir(parents=True)
    (out / "schedule.json" / "keep.txt").write_text("mine")
    assert "(schedule.json/keep.txt)" in _only_error(_compile(out))


def test_out_naming_the_current_directory_is_refused_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for out in ("", ".", "..", "/"):
        result = _compile(Path(out))
        assert _only_error(result) == (
            f"error: {Path(out)}: is the current directory or one of its parents; --out needs "
            "a directory of its own"
        )
        assert "load" not in result.stderr  # nothing was computed
    assert list(tmp_path.iterdir()) == []


def test_out_below_a_file_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    out = tmp_path / "afile" / "sub" / "deeper"
    assert _only_error(_compile(out)) == f"error: {out}: {tmp_path / 'afile'} is not a directory"


def test_out_in_an_unwritable_place_names_the_place_not_a_temporary() -> None:
    if not Path("/proc/self").exists():
        pytest.skip("needs Linux /proc, where nobody may create directories")
    message = _only_error(_compile(Path("/proc/raptor-out")))
    assert message.startswith("error: /proc/raptor-out: cannot write in /proc: ")
    assert ".raptor-out." not in message


def test_out_that_is_a_symbolic_link_is_refused(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert _only_error(_compile(tmp_path / "link")) == (
        f"error: {tmp_path / 'link'}: is a symbolic link; choose another --out"
    )


def test_report_out_below_a_file_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    out = tmp_path / "afile" / "report.md"
    result = _run("verify", FORK_JOIN, "-t", "generic:2", "--out", out)
    assert _only_error(result) == f"error: {out}: {tmp_path / 'afile'} is not a directory"


SIGTERM_DURING_WRITE = """
import os, signal, sys
from raptor_cp.reports import trace
from raptor_cp.cli import main

real = trace.trace_document

def interrupted(*args, **kwargs):
    document = real(*args, **kwargs)
    os.kill(os.getpid(), signal.SIGTERM)
    return document

trace.trace_document = interrupted
main(sys.argv[1:])
"""


def test_sigterm_while_writing_leaves_no_debris_and_keeps_the_old_output(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert _compile(out).exit_code == 0
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    args = ["compile", str(FORK_JOIN), "-t", "generic:3", "--out", str(out)]
    done = subprocess.run(
        [sys.executable, "-c", SIGTERM_DURING_WRITE, *args], capture_output=True, text=True
    )
    assert done.returncode == 128 + signal.SIGTERM, done.stderr
    assert "Traceback" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before


def test_an_internal_error_is_one_line_with_exit_3(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise ValueError("a bug\nover two lines")

    monkeypatch.setattr("raptor_cp.flows.compile", broken)
    result = _run("compile", FORK_JOIN, "-t", "generic:2", "--out", "never")
    message = _only_error(result, INTERNAL_ERROR_STATUS)
    assert message.startswith("error: internal error: ValueError: a bug over two lines. This is ")
    assert message.endswith("the command line and the traceback that raptor-cp --debug ... prints")
    assert "Traceback" not in result.output


def test_debug_shows_the_traceback_of_an_internal_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise ValueError("a bug")

    monkeypatch.setattr("raptor_cp.flows.compile", broken)
    result = _run("--debug", "compile", FORK_JOIN, "-t", "generic:2", "--out", "never")
    assert isinstance(result.exception, ValueError)
    assert result.exit_code == 1
