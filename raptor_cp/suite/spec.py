"""A comparison suite: the TOML file ``raptor-cp report`` reads, and its matrix of cells.

A suite names *studies*; each study is a matrix of workloads × targets ×
variants (solvers, pipeline depths, exchange budgets, audits...) run in one
*mode*. `load_suite` validates the file (one-line errors naming the key) and
`Suite.cells` expands every study into `Cell`s in a fixed order with stable
ids, so a rerun (or a resumed run) names the same cells. docs/reports.md
documents the format; in short::

    name = "quick"
    [[study]]
    name = "latency"
    mode = "latency"            # latency, pipeline, exchange, audit, packing, cycle-ratio
    workloads = ["@example", "models/lenet5.onnx", "glob:stg/*.stg"]   # relative paths
    targets = ["arch-a", "generic:4"]
    solvers = ["auto", "heft", { method = "auto", polish = 1 },
               { method = "cpsat", time_limit = 2, workers = 1 }]

Paths in a suite are relative to the suite file; ``@example`` is the bundled
ResNet-18.
"""

from __future__ import annotations

import glob as globbing
import hashlib
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from raptor_cp.errors import InvalidInputError
from raptor_cp.files import read_text

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

MODES = ("latency", "pipeline", "exchange", "audit", "packing", "cycle-ratio")
"""What a study's cells do (docs/reports.md): latency scheduling, pipeline selection,
IPU exchange admission, a ``verify`` audit, bin packing (fewest cores), maximum cycle ratio."""
EXAMPLE = "@example"
"""The bundled ResNet-18 as a workload."""
EXTERNAL = "external"
"""The method of a latency scheduler outside raptor-cp (`raptor_cp.suite.external`)."""

_STUDY_KEYS = {
    "name": str,
    "mode": str,
    "workloads": list,
    "targets": list,
    "solvers": list,
    "depths": list,
    "budgets": list,
    "audits": list,
    "lanes": (int, list),
    "bits": int,
    "references": dict,
    "gantt": bool,
}
_REFERENCE_KEYS = {
    "file": str,
    "instance": str,
    "root": str,
    "cores": str,
    "value": str,
    "status": str,
    "optimal": str,
    "match": str,
}
MATCHES = ("exact", "suffix")
"""How workload keys meet the reference column (`References.match`)."""


@dataclass(frozen=True)
class Variant:
    """One column of a study's matrix: a solver with its settings, a depth, a budget..."""

    method: str
    """Solver method (latency, packing), ``beam``/... (pipeline), audit mode, or ratio method."""
    settings: tuple[tuple[str, Any], ...] = ()
    """Keyword settings (e.g. ``time_limit_s``, ``workers``), sorted by name."""
    depth: int | None = None
    budget: int | None = None

    @property
    def label(self) -> str:
        """A short, unique name of the variant within its study (an external solver's name)."""
        if self.method == EXTERNAL:
            return str(dict(self.settings)["name"])
        parts = [self.method]
        if self.depth is not None:
            parts.append(f"depth {self.depth}")
        if self.budget is not None:
            parts.append(f"{self.budget} B")
        parts += [f"{k}={v}" for k, v in self.settings]
        return " ".join(parts)


@dataclass(frozen=True)
class References:
    """Published values a study's rows are judged against (a CSV next to the data)."""

    file: Path
    instance: str
    """Column holding each workload's path relative to ``root``."""
    root: Path
    value: str
    """Column of the reference value (best known or optimal)."""
    cores: str | None = None
    """Column matched against the target's core count, when values depend on it."""
    status: str | None = None
    """Column saying whether the value is proved optimal; ``optimal`` is that column's word."""
    optimal: str = "optimal"
    match: str = "exact"
    """``exact``: the column holds the workload paths relative to ``root``. ``suffix``: it
    may hold longer paths (e.g. the source's own folder layout, as BPPLIB's tables), and
    a workload also matches the one row whose path ends with its own (``/``-separated
    components; a suffix shared by two rows matches none)."""

    def table(self) -> dict[tuple[str, int | None], tuple[float, bool]]:
        """``(relative path, cores) -> (value, proved optimal)``.

        Values are read exactly (``"15065/139"`` is a fraction) and kept as
        integers when integral. A workload file holding several instances (an
        OR-Library bin-packing file) names each as ``PATH#INSTANCE``, BPPLIB's
        convention; rows of a cell are looked up under that key first.
        """
        import csv
        from fractions import Fraction

        rows = csv.DictReader(read_text(self.file).splitlines())
        table: dict[tuple[str, int | None], tuple[float, bool]] = {}
        for number, row in enumerate(rows, start=2):
            if not (row.get(self.value) or "").strip():
                continue  # no published value (e.g. an acyclic graph has no ratio)
            try:
                key = row[self.instance]
                cores = None if self.cores is None else int(row[self.cores])
                exact = Fraction(row[self.value])
                value = int(exact) if exact.denominator == 1 else float(exact)
            except (KeyError, ValueError, TypeError, ZeroDivisionError) as error:
                raise InvalidInputError(f"{self.file}: line {number}: {error}") from None
            proved = self.status is None or row.get(self.status) == self.optimal
            table[(key, cores)] = (value, proved)
        if self.match == "suffix":
            table.update(_suffixes(table))
        return table


def _suffixes(
    table: dict[tuple[str, int | None], tuple[float, bool]],
) -> dict[tuple[str, int | None], tuple[float, bool]]:
    """Every proper ``/``-suffix of the table's paths that only one row has and no row is."""
    found: dict[tuple[str, int | None], list[tuple[float, bool]]] = {}
    for (key, cores), entry in table.items():
        parts = key.split("/")
        for i in range(1, len(parts)):
            found.setdefault(("/".join(parts[i:]), cores), []).append(entry)
    return {k: v[0] for k, v in found.items() if len(v) == 1 and k not in table}


@dataclass(frozen=True)
class Cell:
    """One unit of work: a workload on a target under one variant of one study."""

    study: str
    mode: str
    workload: str
    """The workload's name in reports: its path relative to the suite (or `EXAMPLE`)."""
    path: str
    """Where the workload is read from (or `EXAMPLE`)."""
    target: str
    variant: Variant
    lanes: int | None = None
    bits: int | None = None
    reference: str | None = None
    """Path of the workload relative to its references' root (its key in the table)."""
    gantt: bool = False

    @property
    def id(self) -> str:
        """A stable identifier of the cell (a hash of everything that defines it)."""
        payload = json.dumps(
            [
                self.study,
                self.mode,
                self.workload,
                self.target,
                self.variant.label,
                self.lanes,
                self.bits,
            ]
        )
        return hashlib.sha256(payload.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Study:
    """One matrix of cells (see the module docstring)."""

    name: str
    mode: str
    workloads: tuple[tuple[str, str], ...]
    """``(name, path)`` of each workload."""
    targets: tuple[str, ...]
    variants: tuple[Variant, ...]
    lanes: tuple[int | None, ...] = (None,)
    """Lane counts to lower with (None: chosen per model); a list adds a dimension."""
    bits: int | None = None
    references: References | None = None
    gantt: bool = False

    def cells(self) -> list[Cell]:
        """Workload-major, then lanes, target, variant: the order rows appear in reports."""
        return [
            Cell(
                self.name,
                self.mode,
                name,
                path,
                target,
                variant,
                lanes,
                self.bits,
                self._key(path),
                self.gantt,
            )
            for name, path in self.workloads
            for lanes in self.lanes
            for target in self.targets
            for variant in self.variants
        ]

    def _key(self, workload: str) -> str | None:
        if self.references is None or workload == EXAMPLE:
            return None
        try:
            return Path(workload).resolve().relative_to(self.references.root.resolve()).as_posix()
        except ValueError:
            return Path(workload).name


@dataclass(frozen=True)
class Suite:
    """A parsed suite file."""

    name: str
    path: Path
    text: str
    """The suite file as read, recorded in the report for reproducibility."""
    studies: tuple[Study, ...] = field(default_factory=tuple)

    def cells(self) -> list[Cell]:
        return [cell for study in self.studies for cell in study.cells()]


def load_suite(path: str | Path) -> Suite:
    """Read and validate a suite file; every mistake is one line naming the key."""
    file = Path(path)
    text = read_text(file)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise InvalidInputError(f"{file}: invalid TOML: {error}") from None
    base = file.resolve().parent
    unknown = sorted(set(data) - {"name", "description", "study"})
    if unknown:
        raise InvalidInputError(f"{file}: unknown key {unknown[0]!r} (expected name, study)")
    studies = data.get("study")
    if not isinstance(studies, list) or not studies:
        raise InvalidInputError(f"{file}: no [[study]] tables")
    parsed = tuple(_study(entry, i, file, base) for i, entry in enumerate(studies))
    names = [s.name for s in parsed]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate is not None:
        raise InvalidInputError(f"{file}: two studies are named {duplicate!r}")
    return Suite(str(data.get("name", file.stem)), file, text, parsed)


def _study(entry: Any, index: int, file: Path, base: Path) -> Study:
    where = f"{file}: study[{index}]"
    if not isinstance(entry, dict):
        raise InvalidInputError(f"{where}: expected a table")
    for key, value in entry.items():
        kind = _STUDY_KEYS.get(key)
        if kind is None:
            raise InvalidInputError(f"{where}: unknown key {key!r}")
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
            kinds = kind if isinstance(kind, tuple) else (kind,)
            expected = " or ".join(k.__name__ for k in kinds)
            raise InvalidInputError(f"{where}.{key}: expected {expected}")
    name = entry.get("name", f"study {index}")
    where = f"{file}: study {name!r}"
    mode = entry.get("mode", "latency")
    if mode not in MODES:
        raise InvalidInputError(f"{where}: unknown mode {mode!r} (expected {', '.join(MODES)})")
    workloads = tuple(
        w for spec in _strings(entry, "workloads", where) for w in _expand(spec, base, where)
    )
    if not workloads:
        raise InvalidInputError(f"{where}: workloads is empty")
    targets = (
        _strings(entry, "targets", where) if mode not in ("packing", "cycle-ratio") else ("-",)
    )
    references = None
    if "references" in entry:
        references = _references(entry["references"], base, where)
    return Study(
        name=name,
        mode=mode,
        workloads=workloads,
        targets=tuple(targets),
        variants=_variants(entry, mode, base, where),
        lanes=_lanes(entry.get("lanes"), where),
        bits=entry.get("bits"),
        references=references,
        gantt=bool(entry.get("gantt", False)),
    )


def _lanes(value: int | list[Any] | None, where: str) -> tuple[int | None, ...]:
    values = value if isinstance(value, list) else [value]
    if not values or any(v is not None and (not isinstance(v, int) or v < 1) for v in values):
        raise InvalidInputError(f"{where}: lanes must be a positive integer or a list of them")
    return tuple(values)


def _strings(entry: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    values = entry.get(key)
    if not values or not all(isinstance(v, str) for v in values):
        raise InvalidInputError(f"{where}: {key} must be a non-empty list of strings")
    return tuple(values)


def _expand(spec: str, base: Path, where: str) -> list[tuple[str, str]]:
    """One workload entry: ``@example``, a path, or ``glob:PATTERN`` (sorted matches).

    Returns ``(name, path)`` pairs; a name is the path relative to the suite.
    """
    if spec == EXAMPLE:
        return [(EXAMPLE, EXAMPLE)]
    if spec.startswith("glob:"):
        matches = sorted(globbing.glob(str(base / spec[5:])))
        if not matches:
            raise InvalidInputError(f"{where}: {spec!r} matches no file")
        return [(_name(Path(m), base), str(Path(m))) for m in matches]
    path = base / spec
    if not path.is_file():
        raise InvalidInputError(f"{where}: workload {spec!r}: no such file ({path})")
    return [(_name(path, base), str(path))]


def _name(path: Path, base: Path) -> str:
    """``path`` relative to the suite's folder, in POSIX form (as the suite wrote it)."""
    import os

    return Path(os.path.relpath(path, base)).as_posix()


def _variants(entry: dict[str, Any], mode: str, base: Path, where: str) -> tuple[Variant, ...]:
    """The study's columns: solvers, or depths (pipeline), budgets (exchange), audits."""
    if mode == "pipeline":
        depths = entry.get("depths", [4])
        if not all(isinstance(d, int) and d > 1 for d in depths):
            raise InvalidInputError(f"{where}: depths must be integers > 1")
        methods = [_variant(s, where) for s in entry.get("solvers", ["default"])]
        return tuple(Variant(m.method, m.settings, depth=d) for d in depths for m in methods)
    if mode == "exchange":
        budgets = entry.get("budgets", [65536])
        if not all(isinstance(b, int) and b > 0 for b in budgets):
            raise InvalidInputError(f"{where}: budgets must be positive integers (bytes)")
        return tuple(Variant("admission", budget=b) for b in budgets)
    if mode == "audit":
        audits = entry.get("audits", ["latency"])
        return tuple(_variant(a, where) for a in audits)
    default = {"latency": "auto", "packing": "fewest-cores", "cycle-ratio": "howard"}[mode]
    solvers = entry.get("solvers", [default])
    if mode == "latency":
        return tuple(
            _external(s, base, where) if _is_external(s) else _variant(s, where) for s in solvers
        )
    if any(_is_external(s) for s in solvers):
        raise InvalidInputError(f"{where}: external solvers run in latency studies only")
    return tuple(_variant(s, where) for s in solvers)


def _is_external(spec: Any) -> bool:
    return isinstance(spec, dict) and spec.get("method") == EXTERNAL


def _external(spec: dict[str, Any], base: Path, where: str) -> Variant:
    """``{ method = "external", name = "saga-heft", command = [...], timeout = 600 }``.

    The command runs with the suite's folder as working directory
    (`raptor_cp.suite.external`); ``name`` is the column's label.
    """
    unknown = set(spec) - {"method", "name", "command", "timeout"}
    if unknown:
        raise InvalidInputError(f"{where}: external solver: unknown key {sorted(unknown)[0]!r}")
    name, command = spec.get("name"), spec.get("command")
    if not isinstance(name, str) or not name:
        raise InvalidInputError(f"{where}: an external solver needs a 'name'")
    if not command or not isinstance(command, list) or not all(isinstance(c, str) for c in command):
        raise InvalidInputError(
            f"{where}: external solver {name!r}: command must be a list of strings"
        )
    timeout = spec.get("timeout", 600)
    if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0:
        raise InvalidInputError(
            f"{where}: external solver {name!r}: timeout must be positive seconds"
        )
    settings = {"name": name, "command": tuple(command), "cwd": str(base), "timeout_s": timeout}
    return Variant(EXTERNAL, tuple(sorted(settings.items())))


def _variant(spec: Any, where: str) -> Variant:
    """``"peft"`` or ``{ method = "cpsat", time_limit = 2, workers = 1, ... }``.

    A latency method's ``polish = SECONDS`` polishes its schedule with CP-SAT
    (`raptor_cp.flows.compile_latency`); the other keys are the solver's settings.
    """
    if isinstance(spec, str):
        return Variant(spec)
    if not isinstance(spec, dict) or not isinstance(spec.get("method"), str):
        raise InvalidInputError(f"{where}: a solver is a name or a table with a 'method'")
    settings = {k: v for k, v in spec.items() if k != "method"}
    if "time_limit" in settings:
        settings["time_limit_s"] = settings.pop("time_limit")
    depth = settings.pop("depth", None)
    return Variant(spec["method"], tuple(sorted(settings.items())), depth=depth)


def _references(entry: dict[str, Any], base: Path, where: str) -> References:
    for key, value in entry.items():
        if key not in _REFERENCE_KEYS or not isinstance(value, _REFERENCE_KEYS[key]):
            raise InvalidInputError(f"{where}: references.{key}: unknown key or not a string")
    for key in ("file", "instance", "value"):
        if key not in entry:
            raise InvalidInputError(f"{where}: references needs {key!r}")
    if entry.get("match", "exact") not in MATCHES:
        raise InvalidInputError(
            f"{where}: references.match must be one of {', '.join(MATCHES)}, not {entry['match']!r}"
        )
    file = base / entry["file"]
    if not file.is_file():
        raise InvalidInputError(f"{where}: references file {entry['file']!r} not found")
    return References(
        file=file,
        instance=entry["instance"],
        root=base / entry.get("root", str(Path(entry["file"]).parent)),
        value=entry["value"],
        cores=entry.get("cores"),
        status=entry.get("status"),
        optimal=entry.get("optimal", "optimal"),
        match=entry.get("match", "exact"),
    )
