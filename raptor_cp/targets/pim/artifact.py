"""pimsim-nn instruction artifacts: read them as per-core step programs, priced by the chip.

Two layouts (COST_MODEL.md, "Instruction files"; HEAPLab pimsim-nn f7446df,
``Chip::initializeCores`` and ``Chip::initializeCoresFromDirectory``):

* a single JSON file ``{"config": {"core_cnt": N, "array_group_map": {"coreI":
  [crossbars per array group]}}, "coreI": [instruction, ...]}`` -- a core
  without a key is idle;
* a directory with ``config.json`` (the same ``config`` object) and one file per
  core ``0..core_cnt-1``: ``core_<id>.json`` (a JSON array of instructions) or
  ``core_<id>.pim`` (binary: magic ``PIMB``, u32 version 1, u32 count, then
  20-byte little-endian records ``u8 opcode, u8 rd, u8 r1, u8 flags, i32
  r2_or_imm, i32 generic1, i32 generic2, i32 generic3``). Every file whose name
  starts with ``core_`` must match ``core_<id>.json|pim``.

We are stricter than the simulator where it would silently ignore data: a
``coreI`` key or map entry beyond ``core_cnt`` is an error, and so are trailing
bytes in a ``.pim`` file. Every problem raises `InvalidInputError` with one line
naming the file and the field or instruction.

`PimInstructionFrontend`, a `PimTarget`'s `InstructionFrontend` capability
(`PimTarget.instruction_frontend`), turns the instruction streams into
per-core `Step` lists (`raptor_cp.periodic.steps`) priced by the target, which
`raptor_cp.periodic.events.build_events` realizes as the event graph. Each
file is one physical core's whole work (lanes and loop iterations already
emitted); nothing is expanded. With ROB capacity one every instruction runs
after the previous one completes (scheduling.md, "Post-codegen instruction
diagnostic"):

* ``nop``, scalar ops and ``setbw`` cost one core clock each (serial scalar
  issue); with ``model_issue=False`` (``--no-model-issue``) they cost nothing,
  while SYNC keeps its instruction-defined clock;
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
  emitter has to drop it; the report's effects say so;
* ``lldi`` is a local write of ``len`` bytes, ``lmv`` a local read and write;
* ``ld``/``st``/``send``/``recv``/``sync``/``wait`` become `Load`, `Store`,
  `Send`, `Recv`, `Signal`, `Wait` steps.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from raptor_cp.errors import InvalidInputError
from raptor_cp.files import excerpt, read_json
from raptor_cp.periodic.steps import Compute, Load, Recv, Send, Signal, Step, Store, Wait
from raptor_cp.reports.output import count as plural
from raptor_cp.targets.base import InstructionPrograms, MatrixWork, VectorWork

if TYPE_CHECKING:
    from raptor_cp.targets.pim.target import PimTarget

OPCODES = (
    "nop", "sldi", "sld", "sadd", "ssub", "smul", "saddi", "smuli", "setbw", "mvmul",
    "vvadd", "vvsub", "vvmul", "vvdmul", "vvmax", "vvsll", "vvsra", "vavg", "vrelu",
    "vtanh", "vsigm", "vsoftmax", "vmv", "vrsu", "vrsl", "ld", "st", "lldi", "lmv",
    "send", "recv", "wait", "sync",
)  # fmt: skip
"""Opcode names by binary opcode number."""
UNTIMED = frozenset({"vsoftmax"})
"""Ops the queue model gives no timed work (module docstring)."""
SCALAR = frozenset({"nop", "sldi", "sld", "sadd", "ssub", "smul", "saddi", "smuli", "setbw"})
VECTOR = frozenset(OPCODES[10:25]) - UNTIMED
TWO_OPERANDS = frozenset({"vvadd", "vvsub", "vvmul", "vvdmul", "vvmax", "vvsll", "vvsra"})
WIDENING = frozenset({"vvmul", "vvsll", "vvsra", "vtanh", "vsigm", "vrsu", "vrsl"})
"""Vector ops that write ``len × ceil(obiw/8)`` (``VectorUnit::inst_use_output_byte``)."""
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
_RECORD = struct.Struct("<BBBBiiii")
_HEADER = struct.Struct("<4sII")


@dataclass(frozen=True)
class Instruction:
    """One instruction; fields the op does not use stay 0."""

    op: str
    rd: int = 0
    rs1: int = 0
    rs2: int = 0
    imm: int = 0
    len: int = 0
    size: int = 0
    core: int = 0
    group: int = 0
    mbiw: int = 0
    relu: int = 0
    ibiw: int = 0
    obiw: int = 0
    event_register: int = 0
    wait_value: int = 0


_INT_FIELDS = tuple(f.name for f in fields(Instruction) if f.name != "op")


@dataclass(frozen=True)
class Artifact:
    """A loaded artifact: ``cores`` maps each core with instructions (or an empty file)."""

    source: str
    core_cnt: int
    array_group_map: dict[int, tuple[int, ...]]
    cores: dict[int, tuple[Instruction, ...]]

    @property
    def num_instructions(self) -> int:
        return sum(len(stream) for stream in self.cores.values())


def load_artifact(path: str | Path) -> Artifact:
    """Read a single-file JSON artifact or a per-core directory (module docstring)."""
    path = Path(path)
    if path.is_dir():
        return _load_directory(path)
    if not path.exists():
        raise InvalidInputError(f"{path}: no such file or directory")
    data = read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("config"), dict):
        raise InvalidInputError(
            f"{path}: config: missing; a single-file artifact is an object with "
            '"config": {"core_cnt", "array_group_map"} and "core<id>" instruction arrays'
        )
    source = str(path)
    core_cnt = _core_count(data["config"], source, "config.")
    cores: dict[int, tuple[Instruction, ...]] = {}
    for key, value in data.items():
        if key == "config":
            continue
        core = _core_id(_CORE_KEY, key, core_cnt, f"{source}: {key}")
        if not isinstance(value, list):
            raise InvalidInputError(f"{source}: {key}: expected an array of instructions")
        cores[core] = tuple(
            _json_instruction(item, f"{source}: {key}[{i}]") for i, item in enumerate(value)
        )
    groups = _group_map(data["config"], cores, core_cnt, source, "config.")
    return Artifact(source, core_cnt, groups, dict(sorted(cores.items())))


def _load_directory(directory: Path) -> Artifact:
    config_path = directory / "config.json"
    if not config_path.is_file():
        raise InvalidInputError(f"{directory}: missing config.json (core_cnt, array_group_map)")
    config = read_json(config_path)
    if not isinstance(config, dict):
        raise InvalidInputError(
            f"{config_path}: expected an object with core_cnt and array_group_map"
        )
    core_cnt = _core_count(config, str(config_path), "")
    files: dict[int, Path] = {}
    for entry in sorted(directory.iterdir()):
        if not entry.name.startswith("core_") or not entry.is_file():
            continue
        match = _CORE_FILE.fullmatch(entry.name)
        if match is None:
            raise InvalidInputError(
                f"{directory}: malformed per-core instruction file name '{entry.name}'; "
                "expected core_<id>.json or core_<id>.pim"
            )
        core = _core_id(_CORE_FILE, entry.name, core_cnt, str(entry))
        if core in files:
            raise InvalidInputError(
                f"{directory}: core {core} has two instruction files: "
                f"{files[core].name} and {entry.name}"
            )
        files[core] = entry
    for core in range(core_cnt):
        if core not in files:
            raise InvalidInputError(
                f"{directory}: missing core_{core}.json or core_{core}.pim "
                f"(config.json sets core_cnt {core_cnt})"
            )
    cores = {core: _read_core_file(files[core]) for core in range(core_cnt)}
    groups = _group_map(config, cores, core_cnt, str(config_path), "")
    return Artifact(str(directory), core_cnt, groups, cores)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _core_count(config: dict[str, Any], source: str, prefix: str) -> int:
    value = config.get("core_cnt")
    if value is None:
        raise InvalidInputError(f"{source}: {prefix}core_cnt: missing; expected a positive integer")
    if not _is_int(value) or value < 1:
        raise InvalidInputError(
            f"{source}: {prefix}core_cnt: expected a positive integer, got {excerpt(value)}"
        )
    return value


def _core_id(pattern: re.Pattern[str], name: str, core_cnt: int, where: str) -> int:
    match = pattern.fullmatch(name)
    if match is None:
        raise InvalidInputError(f"{where}: unexpected key; expected core<id> or config")
    core = int(match.group(1))
    if core >= core_cnt:
        raise InvalidInputError(f"{where}: core {core}, but core_cnt is {core_cnt}")
    return core


def _group_map(
    config: dict[str, Any],
    cores: dict[int, tuple[Instruction, ...]],
    core_cnt: int,
    source: str,
    prefix: str,
) -> dict[int, tuple[int, ...]]:
    """Validate ``array_group_map`` and every ``mvmul``'s group against it."""
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
    for core in cores:
        if core not in groups:
            raise InvalidInputError(f"{source}: {field}.core{core}: missing")
        for i, inst in enumerate(cores[core]):
            if inst.op == "mvmul" and not 0 <= inst.group < len(groups[core]):
                raise InvalidInputError(
                    f"{source}: core {core} instruction {i} (mvmul): group {inst.group} outside "
                    f"{field}.core{core} ({plural(len(groups[core]), 'group')})"
                )
    return dict(sorted(groups.items()))


def _json_instruction(item: object, where: str) -> Instruction:
    if not isinstance(item, dict):
        raise InvalidInputError(f"{where}: expected an instruction object")
    op = item.get("op")
    if not isinstance(op, str):
        raise InvalidInputError(f"{where}: op: missing or not a string")
    _check_op(op, where)
    values: dict[str, int] = {}
    for name in _INT_FIELDS:
        if name in item:
            value = item[name]
            if not _is_int(value):
                raise InvalidInputError(
                    f"{where}: {name}: expected an integer, got {excerpt(value)}"
                )
            values[name] = value
    return Instruction(op, **values)


def _check_op(op: str, where: str) -> None:
    if op not in OPCODES:
        raise InvalidInputError(f"{where}: unknown op {op!r}")


def _read_core_file(path: Path) -> tuple[Instruction, ...]:
    if path.suffix == ".json":
        data = read_json(path)
        if not isinstance(data, list):
            raise InvalidInputError(f"{path}: expected a JSON array of instructions")
        return tuple(_json_instruction(item, f"{path}: [{i}]") for i, item in enumerate(data))
    return _read_binary(path)


def _read_binary(path: Path) -> tuple[Instruction, ...]:
    """Decode a ``.pim`` file (field layout per opcode: COST_MODEL.md)."""
    data = path.read_bytes()
    if len(data) < _HEADER.size or data[:4] != b"PIMB":
        raise InvalidInputError(f"{path}: not a .pim file (expected the magic bytes PIMB)")
    _, version, count = _HEADER.unpack_from(data)
    if version != 1:
        raise InvalidInputError(f"{path}: .pim version {version}; only version 1 is supported")
    expected = _HEADER.size + _RECORD.size * count
    if len(data) != expected:
        raise InvalidInputError(
            f"{path}: the header announces {plural(count, 'instruction')} ({expected} bytes), "
            f"the file has {len(data)} bytes"
        )
    out = []
    for i, (code, rd, r1, _, r2, g1, g2, g3) in enumerate(
        _RECORD.iter_unpack(data[_HEADER.size :])
    ):
        where = f"{path}: instruction {i}"
        if code >= len(OPCODES):
            raise InvalidInputError(f"{where}: unsupported opcode {code}")
        op = OPCODES[code]
        _check_op(op, where)
        out.append(_decode(op, rd, r1, r2, g1, g2, g3))
    return tuple(out)


def _decode(op: str, rd: int, r1: int, r2: int, g1: int, g2: int, g3: int) -> Instruction:
    if op == "setbw":
        return Instruction(op, rd, r1, ibiw=g1, obiw=g2)
    if op == "mvmul":
        return Instruction(op, rd, r1, mbiw=r2, relu=g1, group=g2)
    if op in VECTOR:
        return Instruction(op, rd, r1, rs2=r2, len=g3)
    if op in ("sync", "wait"):
        return Instruction(op, rd, r1, core=r2, event_register=g1, wait_value=g2)
    if op in ("ld", "st", "send", "recv"):
        return Instruction(op, rd, r1, size=g3, core=r2 if op in ("send", "recv") else 0)
    if op in ("lldi", "lmv"):
        return Instruction(op, rd, r1, len=g3, imm=r2 if op == "lldi" else 0)
    return Instruction(op, rd, r1, imm=r2)


@dataclass(frozen=True)
class PimInstructionFrontend:
    """The `InstructionFrontend` of a pimsim-nn chip: `load_artifact`, then `programs`."""

    target: PimTarget
    """The chip the artifact was compiled for."""
    crossbar: tuple[int, int]
    """Rows and columns of one crossbar: the shape every ``mvmul`` is priced at."""

    def read(self, path: str | Path, *, model_issue: bool = True) -> InstructionPrograms:
        """`load_artifact`, then `programs`."""
        return self.programs(load_artifact(path), model_issue=model_issue)

    def programs(self, artifact: Artifact, *, model_issue: bool = True) -> InstructionPrograms:
        """``artifact``'s instruction streams as per-core step programs priced by the target.

        Raises `InvalidInputError` when the artifact needs more cores or crossbars
        than the target has, or an ``mvmul`` has ``mbiw`` 0. Time ``O(I)``
        for ``I`` instructions.
        """
        return _programs(artifact, self.target, self.crossbar, model_issue)


def _programs(
    artifact: Artifact, target: PimTarget, crossbar: tuple[int, int], model_issue: bool
) -> InstructionPrograms:
    name = artifact.source
    if artifact.core_cnt > target.cores:
        raise InvalidInputError(
            f"{name}: core_cnt is {artifact.core_cnt}, but target {target.name} has "
            f"{plural(target.cores, 'core')}"
        )
    for core, groups in artifact.array_group_map.items():
        if sum(groups) > target.capacity(core):
            raise InvalidInputError(
                f"{name}: array_group_map.core{core} assigns {sum(groups)} crossbars, but "
                f"target {target.name} has {target.capacity(core)} per core"
            )
    cores: list[list[Step]] = []
    origin: list[list[int]] = []
    for c in range(artifact.core_cnt):
        steps, first = _steps(
            artifact.cores.get(c, ()),
            artifact.array_group_map.get(c, ()),
            _Pricing(target, crossbar, model_issue),
            name,
            c,
        )
        cores.append(steps)
        origin.append(first)
    softmax = sum(inst.op in UNTIMED for stream in artifact.cores.values() for inst in stream)
    effects = (
        *((f"{softmax} vsoftmax instruction(s): {SOFTMAX_EFFECT}",) if softmax else ()),
        *(() if model_issue else (NO_ISSUE_EFFECT,)),
    )
    return InstructionPrograms(name, artifact.num_instructions, cores, origin, effects)


@dataclass(frozen=True)
class _Pricing:
    """What `_steps` prices instructions with."""

    target: PimTarget
    crossbar: tuple[int, int]
    model_issue: bool


def _steps(
    stream: tuple[Instruction, ...],
    groups: tuple[int, ...],
    pricing: _Pricing,
    name: str,
    core: int,
) -> tuple[list[Step], list[int]]:
    """One core's instructions as steps, consecutive local work merged into one `Compute`.

    Also returns the index of each step's (first) instruction.
    """
    target = pricing.target
    timing = target.step_timing()
    scalar = timing.cycle_ns() if pricing.model_issue else 0
    rows, cols = pricing.crossbar
    steps: list[Step] = []
    first: list[int] = []
    local, start = 0, 0
    ibiw = obiw = 0  # pimsim-nn's width register before the first setbw
    for i, inst in enumerate(stream):
        op = inst.op
        step: Step | None = None
        if op in SCALAR:
            local += scalar
            if op == "setbw":
                ibiw, obiw = inst.ibiw, inst.obiw
        elif op == "mvmul":
            if inst.mbiw < 1:
                raise InvalidInputError(f"{name}: core {core} instruction {i} (mvmul): mbiw 0")
            work = MatrixWork(1, rows, cols, groups[inst.group], inst.mbiw, ibiw, obiw)
            local += target.execution_ns(work)
        elif op in VECTOR:
            operands = 2 if op in TWO_OPERANDS else 1
            written = obiw if op in WIDENING else ibiw
            local += target.execution_ns(VectorWork(inst.len, operands, ibiw, written))
        elif op == "lldi":
            local += timing.local_write_ns(inst.len)
        elif op == "lmv":
            local += timing.local_read_ns(inst.len) + timing.local_write_ns(inst.len)
        elif op == "ld":
            step = Load(inst.size)
        elif op == "st":
            step = Store(inst.size)
        elif op == "send":
            step = Send(inst.core, inst.size)
        elif op == "recv":
            step = Recv(inst.core, inst.size)
        elif op == "sync":
            step = Signal(inst.core, inst.event_register)
        elif op == "wait":
            step = Wait(inst.event_register, inst.wait_value)
        if step is None:
            continue
        if local:
            steps.append(Compute(local))
            first.append(start)
            local = 0
        steps.append(step)
        first.append(i)
        start = i + 1
    if local:
        steps.append(Compute(local))
        first.append(start)
    return steps, first
