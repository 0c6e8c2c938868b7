"""pimsim-nn's instruction set: opcodes, fields, and one core's stream held column-wise.

Facts from the HEAPLab fork f7446df (``isa/ISA.h``, ``isa/Instruction.{h,cpp}``;
/work/shared/data/pim/COST_MODEL.md, "Instruction files"). Opcode numbers are the
binary ``.pim`` numbers: nop=0 ... mvmul=9, vvadd=10 ... vsigm=20, vsoftmax=21
(rejected by the simulator: the whole run fails), vmv=22 ... sync=32.

`CoreProgram` is one core's instructions as a ``uint8`` opcode column and an
``int64`` matrix with one column per JSON field (`FIELDS`): the one in-memory form
that the artifact reader produces, the emitter (`raptor_cp.emit`) builds, the
writers serialize and the rendezvous check reads. A million instructions take
about 100 MB this way instead of gigabytes of Python objects.

The binary record (`RECORD_DTYPE`) is ``u8 op, u8 rd, u8 rs1, u8 flags, i32
r2_or_imm, i32 g1, i32 g2, i32 g3`` little-endian after a 12-byte header
(``PIMB``, u32 version 1, u32 count). Which field goes where depends on the op
(``Instruction::fromBinaryRecord``): `encode_records` and `decode_records` apply
that mapping both ways, column-wise. A scalar op's ``rs2`` has no binary slot
(pimsim-nn drops it too).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

OPCODES = (
    "nop", "sldi", "sld", "sadd", "ssub", "smul", "saddi", "smuli", "setbw", "mvmul",
    "vvadd", "vvsub", "vvmul", "vvdmul", "vvmax", "vvsll", "vvsra", "vavg", "vrelu",
    "vtanh", "vsigm", "vsoftmax", "vmv", "vrsu", "vrsl", "ld", "st", "lldi", "lmv",
    "send", "recv", "wait", "sync",
)  # fmt: skip
"""Opcode names by binary opcode number."""
CODE = {name: code for code, name in enumerate(OPCODES)}
"""Opcode number of every name."""

NOP, SLDI, SETBW, MVMUL = CODE["nop"], CODE["sldi"], CODE["setbw"], CODE["mvmul"]
VSOFTMAX = CODE["vsoftmax"]
LD, ST, LLDI, LMV = CODE["ld"], CODE["st"], CODE["lldi"], CODE["lmv"]
SEND, RECV, WAIT, SYNC = CODE["send"], CODE["recv"], CODE["wait"], CODE["sync"]

SCALAR = frozenset(range(NOP, SETBW + 1))
"""nop, the scalar unit's ops and setbw: executed in decode, never in the reorder buffer."""
VECTOR = frozenset(range(CODE["vvadd"], CODE["vrsl"] + 1)) - {VSOFTMAX}
TWO_OPERANDS = frozenset(
    CODE[op] for op in ("vvadd", "vvsub", "vvmul", "vvdmul", "vvmax", "vvsll", "vvsra")
)
"""Vector ops that read two operands (COST_MODEL.md, vector op)."""
WIDENING = frozenset(
    CODE[op] for op in ("vvmul", "vvsll", "vvsra", "vtanh", "vsigm", "vrsu", "vrsl")
)
"""Vector ops that write ``len × out_B`` (COST_MODEL.md, vector op)."""
COMMUNICATION = frozenset({LD, ST, SEND, RECV, SYNC, WAIT})
"""Ops of the transfer unit that become events of the periodic model."""

FIELDS = (
    "rd", "rs1", "rs2", "imm", "len", "size", "core", "group", "mbiw", "relu", "ibiw",
    "obiw", "event_register", "wait_value",
)  # fmt: skip
"""The integer JSON fields of an instruction (``offset`` is not kept: it only moves
hazard ranges, which a ROB of one never consults)."""
COLUMN = {name: k for k, name in enumerate(FIELDS)}
"""Column of each field in `CoreProgram.values`."""

OP_FIELDS: dict[int, tuple[str, ...]] = {
    **{code: ("rd", "imm") for code in SCALAR - {NOP, SETBW}},
    NOP: (),
    SETBW: ("ibiw", "obiw"),
    MVMUL: ("rd", "rs1", "group", "mbiw", "relu"),
    **{code: ("rd", "rs1", "rs2", "len") for code in VECTOR},
    LD: ("rd", "rs1", "size"),
    ST: ("rd", "rs1", "size"),
    LLDI: ("rd", "imm", "len"),
    LMV: ("rd", "rs1", "len"),
    SEND: ("rd", "rs1", "core", "size"),
    RECV: ("rd", "core", "size"),
    SYNC: ("core", "event_register"),
    WAIT: ("event_register", "wait_value"),
}
"""Fields an emitter writes for each op (the rest default to 0 in pimsim-nn)."""

REGISTERS = 32
"""General registers and event registers of a core (``RegFile``, ``TransferUnit``)."""
INT32 = (-(2**31), 2**31 - 1)
"""Range of every instruction field (pimsim-nn reads them as ``int``)."""

RECORD_DTYPE = np.dtype(
    [
        ("op", "u1"),
        ("rd", "u1"),
        ("rs1", "u1"),
        ("flags", "u1"),
        ("r2", "<i4"),
        ("g1", "<i4"),
        ("g2", "<i4"),
        ("g3", "<i4"),
    ]
)
"""One 20-byte ``.pim`` record."""
PIM_MAGIC = b"PIMB"
PIM_VERSION = 1
HEADER_DTYPE = np.dtype([("magic", "S4"), ("version", "<u4"), ("count", "<u4")])


@dataclass(frozen=True, eq=False)
class CoreProgram:
    """One core's instruction stream, column-wise (module docstring).

    ``op[i]`` is instruction ``i``'s opcode number, ``values[i, COLUMN[f]]`` its field
    ``f`` (0 when absent). The artifact reader fills only the fields the timing model
    reads (`raptor_cp.targets.pim.artifact`); an emitter fills every field it writes.
    """

    op: np.ndarray
    values: np.ndarray

    def __post_init__(self) -> None:
        op = np.ascontiguousarray(self.op, dtype=np.uint8).reshape(-1)
        values = np.ascontiguousarray(self.values, dtype=np.int64).reshape(op.size, len(FIELDS))
        op.setflags(write=False)
        values.setflags(write=False)
        object.__setattr__(self, "op", op)
        object.__setattr__(self, "values", values)

    @classmethod
    def empty(cls) -> CoreProgram:
        return cls(np.zeros(0, dtype=np.uint8), np.zeros((0, len(FIELDS)), dtype=np.int64))

    def __len__(self) -> int:
        return int(self.op.size)

    def column(self, name: str) -> np.ndarray:
        """Field ``name`` of every instruction."""
        return self.values[:, COLUMN[name]]

    def instruction(self, i: int) -> dict[str, int | str]:
        """Instruction ``i`` as JSON: its op and the fields `OP_FIELDS` lists for it."""
        code = int(self.op[i])
        row = self.values[i]
        return {"op": OPCODES[code], **{f: int(row[COLUMN[f]]) for f in OP_FIELDS[code]}}

    def describe(self, i: int) -> str:
        """Instruction ``i`` in a few words, for diagnostics (``send to core 5``)."""
        code = int(self.op[i])
        row = self.values[i]
        peer = int(row[COLUMN["core"]])
        register = int(row[COLUMN["event_register"]])
        if code == SEND:
            return f"send to core {peer}"
        if code == RECV:
            return f"recv from core {peer}"
        if code == SYNC:
            return f"sync core {peer} register {register}"
        if code == WAIT:
            return f"wait register {register} for {int(row[COLUMN['wait_value']])}"
        return OPCODES[code]


def concatenate(parts: list[CoreProgram]) -> CoreProgram:
    """One program of ``parts`` in order."""
    if not parts:
        return CoreProgram.empty()
    return CoreProgram(
        np.concatenate([p.op for p in parts]), np.concatenate([p.values for p in parts])
    )


def _masks(op: np.ndarray) -> dict[str, np.ndarray]:
    """Which instructions use which binary layout (``Instruction::fromBinaryRecord``)."""
    vector = np.isin(op, list(VECTOR))
    transfer = np.isin(op, [LD, ST, SEND, RECV])
    peer = np.isin(op, [SEND, RECV])
    events = np.isin(op, [SYNC, WAIT])
    local = np.isin(op, [LLDI, LMV])
    scalar = ~(vector | transfer | events | local | np.isin(op, [SETBW, MVMUL]))
    return {
        "vector": vector,
        "transfer": transfer,
        "peer": peer,
        "events": events,
        "local": local,
        "scalar": scalar,
        "setbw": op == SETBW,
        "mvmul": op == MVMUL,
        "lldi": op == LLDI,
        "sync": op == SYNC,
        "wait": op == WAIT,
    }


RECORD_SLOTS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("r2", ("scalar",), "imm"),
    ("g1", ("setbw",), "ibiw"),
    ("g2", ("setbw",), "obiw"),
    ("r2", ("mvmul",), "mbiw"),
    ("g1", ("mvmul",), "relu"),
    ("g2", ("mvmul",), "group"),
    ("r2", ("vector",), "rs2"),
    ("g3", ("vector",), "len"),
    ("g3", ("transfer",), "size"),
    ("r2", ("peer", "sync"), "core"),
    ("g3", ("local",), "len"),
    ("r2", ("lldi",), "imm"),
    ("g1", ("events",), "event_register"),
    ("g2", ("wait",), "wait_value"),
)
"""Which ``.pim`` record slot holds which field, for which kinds of instruction: one
table, so `encode_records` and `decode_records` are each other's inverse by construction."""


def _any(masks: dict[str, np.ndarray], kinds: tuple[str, ...]) -> np.ndarray:
    """The instructions of any of ``kinds``."""
    mask = masks[kinds[0]]
    for kind in kinds[1:]:
        mask = mask | masks[kind]
    return mask


def encode_records(program: CoreProgram) -> np.ndarray:
    """``program`` as ``.pim`` records (`RECORD_DTYPE`); registers must be 0..255."""
    op = program.op
    v = program.values
    m = _masks(op)
    records = np.zeros(op.size, dtype=RECORD_DTYPE)
    records["op"] = op
    records["rd"] = v[:, COLUMN["rd"]]
    records["rs1"] = v[:, COLUMN["rs1"]]

    for slot, kinds, field in RECORD_SLOTS:
        mask = _any(m, kinds)
        records[slot][mask] = v[mask, COLUMN[field]]
    return records


def decode_records(records: np.ndarray) -> CoreProgram:
    """``.pim`` records as a `CoreProgram` (the inverse of `encode_records`)."""
    op = records["op"].astype(np.uint8)
    m = _masks(op)
    values = np.zeros((op.size, len(FIELDS)), dtype=np.int64)
    values[:, COLUMN["rd"]] = records["rd"]
    values[:, COLUMN["rs1"]] = records["rs1"]

    for slot, kinds, field in RECORD_SLOTS:
        mask = _any(m, kinds)
        values[mask, COLUMN[field]] = records[slot][mask]
    return CoreProgram(op, values)
