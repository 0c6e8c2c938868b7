"""Run a suite's cells on an executor, write them as they finish, resume what was written.

`run_suite` expands the suite, skips the cells a previous run already wrote
(``resume``), and runs the rest with `raptor_cp.suite.cells.run_cell` on

* ``local``: a process pool of ``workers`` processes (one worker runs in this
  process), or
* ``dask``: a Dask distributed cluster, the one at ``address``
  (``tcp://HOST:PORT``) or a `LocalCluster` of ``workers`` processes started
  here (``pip install raptor-cp[dask]``).

Every finished cell is appended to ``results.jsonl`` at once (rows, artifact
names), so an interrupted run loses at most the cells in flight; artifacts
(Gantt thumbnails) go to ``artifacts/``. The result is ordered by the suite's
cell order, whatever order the executor finished them in, so identical runs
give identical tables whichever executor ran them. A progress bar on stderr
shows cells done, failed and the time left.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from raptor_cp.errors import InvalidInputError
from raptor_cp.suite.cells import Row, run_cell
from raptor_cp.suite.spec import Cell, Study, Suite

EXECUTORS = ("local", "dask")
JOURNAL = "results.jsonl"
ARTIFACTS = "artifacts"


@dataclass(frozen=True)
class SuiteRun:
    """Every row of a suite run, in cell order, with what produced them."""

    suite: Suite
    rows: tuple[Row, ...]
    executor: str
    workers: int
    resumed: int
    """Cells taken from a previous run's journal instead of being run again."""


def run_suite(
    suite: Suite,
    out: Path,
    *,
    executor: str = "local",
    workers: int = 1,
    address: str | None = None,
    resume: bool = False,
    show_progress: bool = True,
) -> SuiteRun:
    """Run every cell of ``suite`` (see the module docstring); write the journal into ``out``."""
    if executor not in EXECUTORS:
        raise InvalidInputError(f"unknown executor {executor!r}; valid: {', '.join(EXECUTORS)}")
    if address is not None and executor != "dask":
        raise InvalidInputError("--address needs --executor dask")
    cells = suite.cells()
    journal = out / JOURNAL
    if journal.exists() and not resume:
        raise InvalidInputError(
            f"{out}: holds a previous run ({JOURNAL}); use --resume to continue it or choose "
            "another --out"
        )
    out.mkdir(parents=True, exist_ok=True)
    (out / ARTIFACTS).mkdir(exist_ok=True)
    done = _read_journal(journal) if resume else {}
    wanted = {cell.id for cell in cells}
    done = {key: rows for key, rows in done.items() if key in wanted}
    todo = [cell for cell in cells if cell.id not in done]
    bar = _progress_bar(len(cells), len(done), show_progress)
    with journal.open("a", encoding="utf-8") as handle:
        for cell, rows, artifacts in _execute(todo, executor, workers, address):
            for name, data in artifacts.items():
                (out / ARTIFACTS / name).write_bytes(data)
            handle.write(json.dumps({"cell": cell.id, "rows": rows}, sort_keys=True) + "\n")
            handle.flush()
            done[cell.id] = rows
            bar.update(1)
            if any(row["status"] == "error" for row in rows):
                bar.failed += 1
                bar.set_postfix(failed=bar.failed)
    bar.close()
    tables = {study.name: _reference_table(study) for study in suite.studies}
    rows = tuple(
        _with_reference(row, cell, tables[cell.study]) for cell in cells for row in done[cell.id]
    )
    return SuiteRun(suite, rows, executor, workers, len(cells) - len(todo))


def _execute(
    cells: Sequence[Cell], executor: str, workers: int, address: str | None
) -> Iterator[tuple[Cell, list[Row], dict[str, bytes]]]:
    """Yield each cell with its rows and artifacts as it finishes."""
    if not cells:
        return
    if executor == "dask":
        yield from _dask(cells, workers, address)
    elif workers <= 1:
        for cell in cells:
            rows, artifacts = run_cell(cell)
            yield cell, rows, artifacts
    else:
        from concurrent.futures import ProcessPoolExecutor, as_completed

        with ProcessPoolExecutor(max_workers=workers) as pool:
            futures = {pool.submit(run_cell, cell): cell for cell in cells}
            for future in as_completed(futures):
                rows, artifacts = future.result()
                yield futures[future], rows, artifacts


def _dask(
    cells: Sequence[Cell], workers: int, address: str | None
) -> Iterator[tuple[Cell, list[Row], dict[str, bytes]]]:
    try:
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise InvalidInputError(
            "--executor dask needs dask[distributed]: pip install 'raptor-cp[dask]'"
        ) from None
    cluster = None
    if address is None:
        cluster = LocalCluster(
            n_workers=max(workers, 1), threads_per_worker=1, processes=True, dashboard_address=None
        )
    try:
        client = Client(address if address is not None else cluster)
    except OSError as error:
        if cluster is not None:
            cluster.close()
        raise InvalidInputError(f"cannot reach the Dask scheduler at {address}: {error}") from None
    try:
        futures = {client.submit(run_cell, cell, pure=False): cell for cell in cells}
        for future in as_completed(futures):
            rows, artifacts = future.result()
            yield futures[future], rows, artifacts
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _read_journal(journal: Path) -> dict[str, list[Row]]:
    """Cells a previous run wrote; a torn last line (an interrupted write) is ignored."""
    if not journal.exists():
        return {}
    done: dict[str, list[Row]] = {}
    for line in journal.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        done[entry["cell"]] = entry["rows"]
    return done


def _reference_table(study: Study) -> dict[tuple[str, int | None], tuple[float, bool]]:
    return {} if study.references is None else study.references.table()


def _with_reference(
    row: Row, cell: Cell, table: dict[tuple[str, int | None], tuple[float, bool]]
) -> Row:
    """``row`` with the published value of its workload (and core count), when known.

    A row of one instance of a multi-instance file (its ``part``) is looked up as
    ``PATH#PART`` first (`raptor_cp.suite.spec.References.table`).
    """
    if cell.reference is None or row.get("objective") is None:
        return row
    keys = [cell.reference]
    if row.get("part") is not None:
        keys.insert(0, f"{cell.reference}#{row['part']}")
    cores = row.get("cores")
    entry = None
    for key in keys:
        entry = table.get((key, cores)) or table.get((key, None))
        if entry is not None:
            break
    if entry is None:
        return row
    value, proved = entry
    objective = row["objective"]
    return {
        **row,
        "reference": value,
        "reference_optimal": proved,
        "gap_vs_reference": None if value == 0 else (objective - value) / value,
    }


class _Bar:
    """A tqdm progress bar, or nothing; counts failed cells in its postfix."""

    def __init__(self, bar: Any) -> None:
        self.bar = bar
        self.failed = 0

    def update(self, n: int) -> None:
        if self.bar is not None:
            self.bar.update(n)

    def set_postfix(self, **values: Any) -> None:
        if self.bar is not None:
            self.bar.set_postfix(**values)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _progress_bar(total: int, done: int, show: bool) -> _Bar:
    if not show:
        return _Bar(None)
    from tqdm import tqdm

    return _Bar(tqdm(total=total, initial=done, unit="cell", desc="cells", leave=True))
