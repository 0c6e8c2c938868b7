"""pimsim-nn instruction artifacts: read them as per-core step programs, priced by the chip.

Layouts, accepted as the HEAPLab fork f7446df accepts them (its ``Chip`` loader;
/work/notes/pimsim-nn.md section 4.1):

* a single JSON file ``{"config": {"core_cnt": N, "array_group_map": {"coreI":
  [crossbars per array group]}}, "coreI": [instruction, ...]}``, plain or gzip
  (detected by content, whatever the name); a core without a key is idle;
* a directory with ``config.json`` (the same ``config`` object) and one file per
  core ``0..core_cnt-1``: ``core_<id>.json`` (a plain JSON array; the simulator
  does not accept gzip here) or ``core_<id>.pim`` (binary, `raptor_cp.targets.pim.isa`);
  ``.pim`` wins when both exist, as in the simulator. Every other file whose name
  starts with ``core_`` is an error.

Numbers in instruction fields may be integral floats (``0.0``): the simulator
reads them with ``get<int>()``. We are stricter than the simulator where it
would silently truncate or ignore data: a non-integral value, a value outside
32 bits, a ``coreI`` key or map entry beyond ``core_cnt`` and trailing bytes in
a ``.pim`` file are errors; so is ``nop``, which crashes the simulator. Only the
fields the timing model reads are decoded and checked (`TIMING_FIELDS`); the
others, like ``offset``, are ignored as unknown keys are. Every problem raises
`InvalidInputError` with one line naming the file and the instruction.

Streaming. The seeds' post-codegen diagnostic builds in ``O(N + (F + S) log(F +
S))`` time and ``O(F + S + P)`` space for ``N`` instructions, ``F`` transfers,
``S`` signals and ``P`` cores, one instruction file at a time. Here a JSON file
is parsed in chunks (`raptor_cp.targets.pim.json_stream`), a ``.pim`` file is
memory-mapped, and each core's instructions are held column-wise
(`CoreProgram`) only until they are turned into steps. When a single-file
artifact lists cores before its ``config``, those cores wait column-wise for it
(raptor-cp and PIMCOMP-NN write ``config`` first).

`PimInstructionFrontend`, a `PimTarget`'s `InstructionFrontend` capability,
turns each core's stream into `Step` lists (`raptor_cp.periodic.steps`) priced by
the target, which `raptor_cp.periodic.events.build_events` realizes. Each file
is one physical core's whole work; nothing is expanded. With ROB capacity one
every instruction runs after the previous one completes (scheduling.md,
"Post-codegen instruction diagnostic"):

* scalar ops and ``setbw`` cost one core clock each (serial scalar issue);
  with ``model_issue=False`` (``--no-model-issue``) they cost nothing, while
  SYNC keeps its instruction-defined clock;
* widths follow the oracle (pimsim-nn ``InstDecode``, ``VectorUnit::process``,
  ``ArrayGroup::th_processMVM``): ``setbw`` sets the input and output widths
  (``ibiw``, ``obiw``; 0 bits before the first ``setbw``, so vector ops there
  move no bytes); a vector op reads ``len × ceil(ibiw/8)`` bytes per operand
  (two for ``vv*`` ops) and writes ``len × ceil(obiw/8)`` for the ops in
  `WIDENING`, ``len × ceil(ibiw/8)`` for the others; ``mvmul`` reads and
  computes at ``ibiw``, writes ``obiw``-wide results over its array group's
  crossbars (``array_group_map``) and takes its weight columns from ``mbiw``;
* ``vsoftmax`` gets no timed work: the seeds say pimsim-nn omits it before
  fetch (scheduling.md, "Default throughput selection"), so its inputs and
  the surrounding instructions keep their costs and it adds none. pimsim-nn
  f7446df in fact *rejects* ``vsoftmax`` (exit 1; ``isa/Instruction.h``), so an
  emitter has to drop it (`raptor_cp.emit` never writes it); the report's
  effects say so;
* ``lldi`` is a local write of ``len`` bytes, ``lmv`` a local read and write;
* ``ld``/``st``/``send``/``recv``/``sync``/``wait`` become `Load`, `Store`,
  `Send`, `Recv`, `Signal`, `Wait` steps; the local work between two of them is
  one `Compute` step.
"""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import numpy as np

from raptor_cp.errors import InvalidInputError
from raptor_cp.files import excerpt, read_json
from raptor_cp.periodic.steps import Compute, Load, Recv, Send, Signal, Step, Store, Wait
from raptor_cp.reports.output import count as plural
from raptor_cp.targets.base import InstructionPrograms, MatrixWork, VectorWork
from raptor_cp.targets.pim.isa import (
    CODE,
    COLUMN,
    FIELDS,
    HEADER_DTYPE,
    INT32,
    LD,
    LLDI,
    LMV,
    MVMUL,
    NOP,
    OPCODES,
    PIM_MAGIC,
    PIM_VERSION,
    RECORD_DTYPE,
    RECV,
    SCALAR,
    SEND,
    SETBW,
    ST,
    SYNC,
    TWO_OPERANDS,
    VECTOR,
    VSOFTMAX,
    WAIT,
    WIDENING,
    CoreProgram,
    concatenate,
    decode_records,
)

if TYPE_CHECKING:
    from raptor_cp.targets.pim.target import PimTarget

REJECTED = {NOP: "nop crashes pimsim-nn (it enters the reorder buffer with no unit)"}
"""Opcodes the simulator cannot run, with the reason."""
TIMING_FIELDS: dict[str, frozenset[int]] = {
    "ibiw": frozenset({SETBW}),
    "obiw": frozenset({SETBW}),
    "group": frozenset({MVMUL}),
    "mbiw": frozenset({MVMUL}),
    "len": VECTOR | {LLDI, LMV},
    "size": frozenset({LD, ST, SEND, RECV}),
    "core": frozenset({SEND, RECV, SYNC}),
    "event_register": frozenset({SYNC, WAIT}),
    "wait_value": frozenset({WAIT}),
}
"""The fields the timing model reads, and the ops it reads them for."""
NON_NEGATIVE = frozenset({"len", "size"})
SAFE_NS = 2**40
"""Largest per-instruction price summed in 64-bit integers (a million of them fit)."""
SOFTMAX_EFFECT = (
    "vsoftmax is given no timed work, as the seeds say pimsim-nn omits it before fetch; "
    "pimsim-nn f7446df actually rejects vsoftmax (exit 1), so an emitter must drop it"
)
NO_ISSUE_EFFECT = (
    "scalar issue is not modelled (--no-model-issue): scalar ops and setbw take no time; "
    "SYNC keeps its one-clock execution"
)
_CORE_FILE = re.compile(r"core_([0-9]+)\.(json|pim)")
_CORE_KEY = re.compile(r"core([0-9]+)")
_GZIP_MAGIC = b"\x1f\x8b"


@dataclass(frozen=True)
class ArtifactConfig:
    """The ``config`` object of an artifact."""

    source: str
    """Where the config was read (for messages)."""
    prefix: str
    """How messages name the object's fields: ``config.`` in a single file, else empty."""
    core_cnt: int
    array_group_map: dict[int, tuple[int, ...]]


@dataclass(frozen=True)
class Artifact:
    """A loaded artifact: ``cores`` maps each core with instructions (or an empty file)."""

    source: str
    config: ArtifactConfig
    cores: dict[int, CoreProgram]

    @property
    def core_cnt(self) -> int:
        return self.config.core_cnt

    @property
    def array_group_map(self) -> dict[int, tuple[int, ...]]:
        return self.config.array_group_map

    @property
    def num_instructions(self) -> int:
        return sum(len(program) for program in self.cores.values())


@dataclass(frozen=True)
class _CoreItem:
    """One core's stream as it is read."""

    core: int
    program: CoreProgram


def load_artifact(path: str | Path) -> Artifact:
    """Read a whole artifact (module docstring); the cores are held column-wise."""
    source = str(path)
    config: ArtifactConfig | None = None
    cores: dict[int, CoreProgram] = {}
    for item in _read(Path(path)):
        if isinstance(item, ArtifactConfig):
            config = item
        else:
            cores[item.core] = item.program
    assert config is not None  # _read raises when there is none
    for core, program in cores.items():
        _check_groups(program, config, core)
    return Artifact(source, config, dict(sorted(cores.items())))


def _read(path: Path) -> Iterator[ArtifactConfig | _CoreItem]:
    """The artifact's config and core streams in file order (the config at least once)."""
    if path.is_dir():
        yield from _read_directory(path)
        return
    if not path.exists():
        raise InvalidInputError(f"{path}: no such file or directory")
    yield from _read_single(path)


# -- single file ---------------------------------------------------------------


@contextmanager
def _open_text(path: Path, allow_gzip: bool) -> Iterator[TextIO]:
    """``path`` as UTF-8 text, decompressed when its content is gzip."""
    try:
        with path.open("rb") as probe:
            compressed = probe.read(2) == _GZIP_MAGIC
        if compressed and not allow_gzip:
            raise InvalidInputError(
                f"{path}: gzip is accepted only for a single-file artifact (as in pimsim-nn)"
            )
        if compressed:
            with gzip.open(path, "rt", encoding="utf-8") as handle:
                yield handle
        else:
            with path.open(encoding="utf-8") as handle:
                yield handle
    except (gzip.BadGzipFile, zlib.error, EOFError) as exc:
        raise InvalidInputError(f"{path}: not a valid gzip file ({exc})") from None
    except OSError as exc:
        raise InvalidInputError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _read_single(path: Path) -> Iterator[ArtifactConfig | _CoreItem]:
    from raptor_cp.targets.pim.json_stream import JsonStream

    source = str(path)
    seen: set[str] = set()
    config: ArtifactConfig | None = None
    with _open_text(path, allow_gzip=True) as handle:
        stream = JsonStream(handle, source)
        if stream.peek() != "{":
            raise _no_config(source)
        stream.expect("{")
        if stream.peek() == "}":
            raise _no_config(source)
        while True:
            key = stream.value()
            if not isinstance(key, str):
                raise InvalidInputError(f"{source}: expected an object key, got {excerpt(key)}")
            if key in seen:
                raise InvalidInputError(f"{source}: {key}: appears twice")
            seen.add(key)
            stream.expect(":")
            if key == "config":
                value = stream.value()
                if not isinstance(value, dict):
                    raise _no_config(source)
                config = _config(value, source, "config.")
                for seen_key in sorted(seen - {"config"}):
                    _core_id(_CORE_KEY, seen_key, config.core_cnt, f"{source}: {seen_key}")
                yield config
            else:
                match = _CORE_KEY.fullmatch(key)
                if match is None:
                    raise InvalidInputError(
                        f"{source}: {key}: unexpected key; expected core<id> or config"
                    )
                if stream.peek() != "[":
                    stream.value()
                    raise InvalidInputError(f"{source}: {key}: expected an array of instructions")
                if config is not None:
                    _core_id(_CORE_KEY, key, config.core_cnt, f"{source}: {key}")
                where = f"{source}: {key}"
                program = _json_program(stream.array_chunks(), lambda i, w=where: f"{w}[{i}]")
                yield _CoreItem(int(match.group(1)), program)
            if stream.expect(",}") == "}":
                break
        if not stream.at_end():
            raise InvalidInputError(f"{source}: extra data after the artifact object")
    if config is None:
        raise _no_config(source)


def _no_config(source: str) -> InvalidInputError:
    return InvalidInputError(
        f"{source}: config: missing; a single-file artifact is an object with "
        '"config": {"core_cnt", "array_group_map"} and "core<id>" instruction arrays'
    )


# -- directory -------------------------------------------------------------------


def _read_directory(directory: Path) -> Iterator[ArtifactConfig | _CoreItem]:
    config_path = directory / "config.json"
    if not config_path.is_file():
        raise InvalidInputError(f"{directory}: missing config.json (core_cnt, array_group_map)")
    data = read_json(config_path)
    if not isinstance(data, dict):
        raise InvalidInputError(
            f"{config_path}: expected an object with core_cnt and array_group_map"
        )
    config = _config(data, str(config_path), "")
    yield config
    files: dict[int, Path] = {}
    for entry in sorted(directory.iterdir()):
        if not entry.name.startswith("core_") or not entry.is_file():
            continue
        if _CORE_FILE.fullmatch(entry.name) is None:
            raise InvalidInputError(
                f"{directory}: malformed per-core instruction file name '{entry.name}'; "
                "expected core_<id>.json or core_<id>.pim"
            )
        core = _core_id(_CORE_FILE, entry.name, config.core_cnt, str(entry))
        if core not in files or entry.suffix == ".pim":
            files[core] = entry  # the simulator prefers core_<id>.pim
    for core in range(config.core_cnt):
        if core not in files:
            raise InvalidInputError(
                f"{directory}: missing core_{core}.json or core_{core}.pim "
                f"(config.json sets core_cnt {config.core_cnt})"
            )
        yield _CoreItem(core, _read_core_file(files[core]))


def _read_core_file(path: Path) -> CoreProgram:
    if path.suffix == ".pim":
        return _read_binary(path)
    from raptor_cp.targets.pim.json_stream import JsonStream

    with _open_text(path, allow_gzip=False) as handle:
        stream = JsonStream(handle, str(path))
        if stream.peek() != "[":
            raise InvalidInputError(f"{path}: expected a JSON array of instructions")
        program = _json_program(stream.array_chunks(), lambda i: f"{path}: [{i}]")
        if not stream.at_end():
            raise InvalidInputError(f"{path}: extra data after the instruction array")
    return program


def _read_binary(path: Path) -> CoreProgram:
    """Decode a ``.pim`` file (memory-mapped; field layout: `raptor_cp.targets.pim.isa`)."""
    size = path.stat().st_size
    if size < HEADER_DTYPE.itemsize:
        raise InvalidInputError(f"{path}: not a .pim file (expected the magic bytes PIMB)")
    header = np.fromfile(path, dtype=HEADER_DTYPE, count=1)[0]
    if bytes(header["magic"]) != PIM_MAGIC:
        raise InvalidInputError(f"{path}: not a .pim file (expected the magic bytes PIMB)")
    if int(header["version"]) != PIM_VERSION:
        raise InvalidInputError(
            f"{path}: .pim version {int(header['version'])}; only version 1 is supported"
        )
    count = int(header["count"])
    expected = HEADER_DTYPE.itemsize + RECORD_DTYPE.itemsize * count
    if size != expected:
        raise InvalidInputError(
            f"{path}: the header announces {plural(count, 'instruction')} ({expected} bytes), "
            f"the file has {size} bytes"
        )
    if count == 0:
        return CoreProgram.empty()
    records = np.memmap(path, dtype=RECORD_DTYPE, mode="r", offset=HEADER_DTYPE.itemsize)
    bad = np.flatnonzero(records["op"] >= len(OPCODES))
    if bad.size:
        i = int(bad[0])
        raise InvalidInputError(
            f"{path}: instruction {i}: unsupported opcode {int(records['op'][i])}"
        )
    program = decode_records(records)
    _check_opcodes(program.op, lambda i: f"{path}: instruction {i}")
    return program


# -- JSON instructions ---------------------------------------------------------------


def _json_program(chunks: Iterator[list[Any]], where: Any) -> CoreProgram:
    """One core's JSON instructions, chunk by chunk, as a `CoreProgram`.

    ``where(i)`` names instruction ``i`` in messages. Only `TIMING_FIELDS` are read.
    """
    parts: list[CoreProgram] = []
    offset = 0
    for items in chunks:
        parts.append(_json_chunk(items, offset, where))
        offset += len(items)
    return concatenate(parts)


def _json_chunk(items: list[Any], offset: int, where: Any) -> CoreProgram:
    try:
        codes = np.fromiter((CODE[d["op"]] for d in items), dtype=np.uint8, count=len(items))
    except (KeyError, TypeError):
        _raise_bad_op(items, offset, where)
    _check_opcodes(codes, lambda i: where(offset + i))
    values = np.zeros((len(items), len(FIELDS)), dtype=np.int64)
    for field, ops in TIMING_FIELDS.items():
        index = np.flatnonzero(np.isin(codes, list(ops)))
        if index.size:
            column = [items[i].get(field, 0) for i in index.tolist()]
            values[index, COLUMN[field]] = _integers(column, field, index, offset, where)
    return CoreProgram(codes, values)


def _raise_bad_op(items: list[Any], offset: int, where: Any) -> None:
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise InvalidInputError(f"{where(offset + i)}: expected an instruction object")
        op = item.get("op")
        if not isinstance(op, str):
            raise InvalidInputError(f"{where(offset + i)}: op: missing or not a string")
        if op not in CODE:
            raise InvalidInputError(f"{where(offset + i)}: unknown op {op!r}")
    raise AssertionError("a chunk failed to decode but every instruction is valid")


def _check_opcodes(codes: np.ndarray, where: Any) -> None:
    for code, reason in REJECTED.items():
        bad = np.flatnonzero(codes == code)
        if bad.size:
            raise InvalidInputError(f"{where(int(bad[0]))}: op {OPCODES[code]}: {reason}")


def _integers(
    column: list[Any], field: str, index: np.ndarray, offset: int, where: Any
) -> np.ndarray:
    """``column`` as int64, after checking it holds whole numbers within 32 bits.

    Whole numbers may be written as floats; booleans count as 0 and 1, as
    nlohmann's ``get<int>()`` reads them in pimsim-nn.
    """
    low = 0 if field in NON_NEGATIVE else INT32[0]
    expected = "a non-negative 32-bit integer" if low == 0 else "a 32-bit integer"
    array = np.array(column)
    if array.dtype.kind == "f":
        exact = np.isfinite(array) & (np.floor(array) == array) & (np.abs(array) < 2**62)
        if exact.all():
            array = array.astype(np.int64)
    if array.dtype.kind not in "iub":
        for j, value in enumerate(column):
            whole = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
            text = excerpt(value)
            if whole and low <= int(value) <= INT32[1]:
                continue
            problem = f"expected {expected}" if whole else "expected an integer"
            raise InvalidInputError(
                f"{where(offset + int(index[j]))}: {field}: {problem}, got {text}"
            )
    array = array.astype(np.int64)
    bad = np.flatnonzero((array < low) | (array > INT32[1]))
    if bad.size:
        j = int(bad[0])
        raise InvalidInputError(
            f"{where(offset + int(index[j]))}: {field}: expected {expected}, got {int(array[j])}"
        )
    return array


# -- config ----------------------------------------------------------------------------


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _config(config: dict[str, Any], source: str, prefix: str) -> ArtifactConfig:
    """``core_cnt`` and ``array_group_map``; both must be JSON integers (pimsim-nn's rule)."""
    value = config.get("core_cnt")
    if value is None:
        raise InvalidInputError(f"{source}: {prefix}core_cnt: missing; expected a positive integer")
    if not _is_int(value) or value < 1:
        raise InvalidInputError(
            f"{source}: {prefix}core_cnt: expected a positive integer, got {excerpt(value)}"
        )
    core_cnt = value
    field = f"{prefix}array_group_map"
    table = config.get("array_group_map")
    if table is None:
        raise InvalidInputError(
            f'{source}: {field}: missing; expected {{"core<id>": [crossbars per array group]}}'
        )
    if not isinstance(table, dict):
        raise InvalidInputError(
            f'{source}: {field}: expected {{"core<id>": [crossbars per array group]}}, '
            f"got {excerpt(table)}"
        )
    groups: dict[int, tuple[int, ...]] = {}
    for key, entry in table.items():
        core = _core_id(_CORE_KEY, key, core_cnt, f"{source}: {field}.{key}")
        if not isinstance(entry, list):
            raise InvalidInputError(
                f"{source}: {field}.{key}: expected an array of crossbar counts, "
                f"got {excerpt(entry)}"
            )
        for i, count in enumerate(entry):
            if not _is_int(count) or count < 1:
                raise InvalidInputError(
                    f"{source}: {field}.{key}[{i}]: expected a positive crossbar count, "
                    f"got {excerpt(count)}"
                )
        groups[core] = tuple(entry)
    return ArtifactConfig(source, prefix, core_cnt, dict(sorted(groups.items())))


def _core_id(pattern: re.Pattern[str], name: str, core_cnt: int, where: str) -> int:
    match = pattern.fullmatch(name)
    if match is None:
        raise InvalidInputError(f"{where}: unexpected key; expected core<id> or config")
    core = int(match.group(1))
    if core >= core_cnt:
        raise InvalidInputError(f"{where}: core {core}, but core_cnt is {core_cnt}")
    return core


def _check_groups(program: CoreProgram, config: ArtifactConfig, core: int) -> None:
    """Every ``mvmul``'s group must index ``core``'s entry of ``array_group_map``."""
    source = config.source
    field = f"{config.prefix}array_group_map.core{core}"
    groups = config.array_group_map.get(core)
    if groups is None:
        raise InvalidInputError(f"{config.source}: {field}: missing")
    mvmul = program.op == MVMUL
    group = program.column("group")
    bad = np.flatnonzero(mvmul & ((group < 0) | (group >= len(groups))))
    if bad.size:
        i = int(bad[0])
        raise InvalidInputError(
            f"{source}: core {core} instruction {i} (mvmul): group {int(group[i])} outside "
            f"{field} ({plural(len(groups), 'group')})"
        )


# -- steps -----------------------------------------------------------------------------


@dataclass(frozen=True)
class PimInstructionFrontend:
    """The `InstructionFrontend` of a pimsim-nn chip: artifacts as priced step programs."""

    target: PimTarget
    """The chip the artifact was compiled for."""
    crossbar: tuple[int, int]
    """Rows and columns of one crossbar: the shape every ``mvmul`` is priced at."""

    def read(self, path: str | Path, *, model_issue: bool = True) -> InstructionPrograms:
        """Stream the artifact at ``path`` into step programs, one core at a time.

        Time ``O(N)`` for ``N`` instructions plus the target's prices of distinct
        operations; memory ``O(F + S + L + P)`` steps (transfers, signals, global
        requests, cores) plus one core's instructions. ``model_issue=False`` omits
        scalar issue time.
        """
        source = str(path)
        config: ArtifactConfig | None = None
        pending: list[_CoreItem] = []
        steps: dict[int, tuple[list[Step], list[int]]] = {}
        instructions = softmax = 0
        for item in _read(Path(path)):
            if isinstance(item, ArtifactConfig):
                config = item
                self._check_config(config, source)
                continue
            instructions += len(item.program)
            softmax += int(np.count_nonzero(item.program.op == VSOFTMAX))
            if config is None:
                pending.append(item)
                continue
            for ready in (*pending, item):
                steps[ready.core] = self._core_steps(ready, config, source, model_issue)
            pending = []
        assert config is not None
        for ready in pending:
            steps[ready.core] = self._core_steps(ready, config, source, model_issue)
        return _programs(source, config.core_cnt, steps, instructions, softmax, model_issue)

    def programs(self, artifact: Artifact, *, model_issue: bool = True) -> InstructionPrograms:
        """A loaded artifact's streams as step programs priced by the target."""
        self._check_config(artifact.config, artifact.source)
        steps = {
            core: self._core_steps(
                _CoreItem(core, program), artifact.config, artifact.source, model_issue
            )
            for core, program in artifact.cores.items()
        }
        softmax = sum(int(np.count_nonzero(p.op == VSOFTMAX)) for p in artifact.cores.values())
        return _programs(
            artifact.source,
            artifact.core_cnt,
            steps,
            artifact.num_instructions,
            softmax,
            model_issue,
        )

    def _check_config(self, config: ArtifactConfig, source: str) -> None:
        target = self.target
        if config.core_cnt > target.cores:
            raise InvalidInputError(
                f"{source}: core_cnt is {config.core_cnt}, but target {target.name} has "
                f"{plural(target.cores, 'core')}"
            )
        for core, groups in config.array_group_map.items():
            if sum(groups) > target.capacity(core):
                raise InvalidInputError(
                    f"{source}: array_group_map.core{core} assigns {sum(groups)} crossbars, "
                    f"but target {target.name} has {target.capacity(core)} per core"
                )

    def _core_steps(
        self, item: _CoreItem, config: ArtifactConfig, source: str, model_issue: bool
    ) -> tuple[list[Step], list[int]]:
        _check_groups(item.program, config, item.core)
        groups = config.array_group_map.get(item.core, ())
        name = f"{source}: core {item.core}"
        return _steps(item.program, self._local_ns(item.program, groups, name, model_issue))

    def _local_ns(
        self, program: CoreProgram, groups: tuple[int, ...], name: str, model_issue: bool
    ) -> np.ndarray:
        """Per instruction, the ns it keeps its core busy (0 for transfer-unit ops).

        Each distinct (op, widths, size) is priced once by the target.
        """
        target = self.target
        timing = target.step_timing()
        rows, cols = self.crossbar
        op = program.op
        ns: np.ndarray = np.zeros(op.size, dtype=np.int64)

        def put(index: np.ndarray, prices: np.ndarray) -> None:
            nonlocal ns
            if prices.dtype == object and ns.dtype != object:
                ns = ns.astype(object)
            ns[index] = prices

        if model_issue:
            ns[np.isin(op, list(SCALAR))] = timing.cycle_ns()
        setbw = np.where(op == SETBW, np.arange(op.size), -1)
        last = np.maximum.accumulate(setbw) if op.size else setbw
        # pimsim-nn's width register holds 0 bits before the first setbw.
        ibiw = np.where(last >= 0, program.column("ibiw")[np.maximum(last, 0)], 0)
        obiw = np.where(last >= 0, program.column("obiw")[np.maximum(last, 0)], 0)

        mvmul = np.flatnonzero(op == MVMUL)
        if mvmul.size:
            mbiw = program.column("mbiw")[mvmul]
            if (mbiw < 1).any():
                i = int(mvmul[np.argmax(mbiw < 1)])
                raise InvalidInputError(f"{name} instruction {i} (mvmul): mbiw 0")
            crossbars = np.asarray(groups, dtype=np.int64)[program.column("group")[mvmul]]
            put(
                mvmul,
                _priced(
                    (mbiw, crossbars, ibiw[mvmul], obiw[mvmul]),
                    lambda b, x, i, o: target.execution_ns(MatrixWork(1, rows, cols, x, b, i, o)),
                ),
            )
        vector = np.flatnonzero(np.isin(op, list(VECTOR)))
        if vector.size:
            codes = op[vector]
            written = np.where(np.isin(codes, list(WIDENING)), obiw[vector], ibiw[vector])
            put(
                vector,
                _priced(
                    (codes, program.column("len")[vector], ibiw[vector], written),
                    lambda code, n, b, w: target.execution_ns(
                        VectorWork(n, 2 if code in TWO_OPERANDS else 1, b, w)
                    ),
                ),
            )
        length = program.column("len")
        lldi = np.flatnonzero(op == LLDI)
        if lldi.size:
            put(lldi, _priced((length[lldi],), timing.local_write_ns))
        lmv = np.flatnonzero(op == LMV)
        if lmv.size:
            put(
                lmv,
                _priced(
                    (length[lmv],), lambda n: timing.local_read_ns(n) + timing.local_write_ns(n)
                ),
            )
        return ns


def _programs(
    source: str,
    core_cnt: int,
    steps: dict[int, tuple[list[Step], list[int]]],
    instructions: int,
    softmax: int,
    model_issue: bool,
) -> InstructionPrograms:
    cores = [steps.get(c, ([], []))[0] for c in range(core_cnt)]
    origin = [steps.get(c, ([], []))[1] for c in range(core_cnt)]
    effects = (
        *((f"{softmax} vsoftmax instruction(s): {SOFTMAX_EFFECT}",) if softmax else ()),
        *(() if model_issue else (NO_ISSUE_EFFECT,)),
    )
    return InstructionPrograms(source, instructions, cores, origin, effects)


def _priced(keys: tuple[np.ndarray, ...], price: Any) -> np.ndarray:
    """``price(*key)`` for every row of ``keys``, calling ``price`` once per distinct key.

    Prices beyond `SAFE_NS` come back as Python integers (an object array), so that
    timing outside the supported range reaches the analysis's range check instead of
    overflowing.
    """
    stacked = np.stack([np.asarray(k, dtype=np.int64) for k in keys], axis=1)
    distinct, inverse = np.unique(stacked, axis=0, return_inverse=True)
    prices = [price(*map(int, row)) for row in distinct]
    dtype = np.int64 if max(prices, default=0) <= SAFE_NS else object
    return np.array(prices, dtype=dtype)[inverse.reshape(-1)]


def _steps(program: CoreProgram, local: np.ndarray) -> tuple[list[Step], list[int]]:
    """The steps of one core: local work between transfer-unit ops merged into `Compute`.

    Also returns the index of each step's (first) instruction. ``O(n)`` with a
    Python loop over the transfer-unit ops only.
    """
    op = program.op
    events = np.flatnonzero(np.isin(op, [LD, ST, SEND, RECV, SYNC, WAIT])).tolist()
    total = np.concatenate(([0], np.cumsum(local)))  # object dtype: Python integers
    size = program.column("size").tolist()
    peer = program.column("core").tolist()
    register = program.column("event_register").tolist()
    count = program.column("wait_value").tolist()
    codes = op.tolist()
    steps: list[Step] = []
    first: list[int] = []
    start = 0
    for i in events:
        run = int(total[i] - total[start])
        if run:
            steps.append(Compute(run))
            first.append(start)
        code = codes[i]
        if code == LD:
            steps.append(Load(size[i]))
        elif code == ST:
            steps.append(Store(size[i]))
        elif code == SEND:
            steps.append(Send(peer[i], size[i]))
        elif code == RECV:
            steps.append(Recv(peer[i], size[i]))
        elif code == SYNC:
            steps.append(Signal(peer[i], register[i]))
        else:
            steps.append(Wait(register[i], count[i]))
        first.append(i)
        start = i + 1
    run = int(total[-1] - total[start])
    if run:
        steps.append(Compute(run))
        first.append(start)
    return steps, first
