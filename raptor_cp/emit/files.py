"""Write an emitted program: instructions, pimsim-nn chip config, network table, report.

The emission directory (``compile --emit DIR``) holds

* ``program.json.gz`` (`FORMATS` ``json``): the single-file program, gzip;
  or ``program/`` (``dir``: ``config.json`` and ``core_<id>.json`` for every
  core ``0..core_cnt-1``, idle ones empty; ``pim``: the same with binary
  ``core_<id>.pim``) -- pimsim-nn's three input forms;
* ``config.json``: the chip config the target was built from, with
  ``net_config_file_path`` pointing at ``network.json`` and ``sim_config`` set
  for the mode (latency: one pass; pipeline: throughput mode looping every
  core's stream for `SIMULATED_ROUNDS` predicted rounds of the streams, each
  `EmittedProgram.generations_per_round` predicted intervals), per-core
  results (``report_verbose_level`` 1) and a latency timeout of
  `TIMEOUT_FACTOR` times the prediction;
* ``network.json``: ns per flit between every pair of cores and the global
  memory as the target resolved them (its table, or the 2·hops+2 mesh model
  when the config names none: pimsim-nn would otherwise read 0), with the
  original table's energies when it has them (else none: energy reports 0);
* ``emission.json``: `raptor_cp.emit.program.EmittedProgram.report` plus file
  names and the command that runs the program.

So ``ChipTest DIR/program.json.gz DIR/config.json`` runs it, and ``raptor-cp
periodic DIR`` analyses it against the compile's prediction. Outputs are
byte-identical for identical inputs (gzip without a time stamp, sorted JSON).
Time ``O(N)`` for ``N`` instructions.
"""

from __future__ import annotations

import copy
import gzip
import json
import math
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from raptor_cp.emit.program import EmittedProgram
from raptor_cp.files import read_json
from raptor_cp.limits import MAX_PAIRWISE_CORES
from raptor_cp.reports.output import check_destination, dumps, staged_directory
from raptor_cp.targets.pim.isa import (
    COLUMN,
    HEADER_DTYPE,
    OP_FIELDS,
    OPCODES,
    PIM_MAGIC,
    PIM_VERSION,
    CoreProgram,
    encode_records,
)
from raptor_cp.targets.pim.target import PimTarget

FORMATS = ("json", "dir", "pim")
"""``--emit-format`` values: single gzip file, per-core JSON directory, per-core binary."""
PROGRAM_FILE = "program.json.gz"
PROGRAM_DIR = "program"
CONFIG_FILE = "config.json"
NETWORK_FILE = "network.json"
REPORT_FILE = "emission.json"
EMISSION_FILES = frozenset(
    {PROGRAM_FILE, PROGRAM_DIR, CONFIG_FILE, NETWORK_FILE, REPORT_FILE}
    | {f"{PROGRAM_DIR}/{CONFIG_FILE}"}
    | {
        f"{PROGRAM_DIR}/core_{c}.{kind}"
        for c in range(MAX_PAIRWISE_CORES)
        for kind in ("json", "pim")
    }
)
"""Every path an emission directory may hold (cores up to the PIM core limit); a directory
holding anything else is never replaced."""
SIMULATED_ROUNDS = 8.5
"""Throughput runs last this many predicted rounds of the streams (8 complete ones)."""
TIMEOUT_FACTOR = 10
"""Latency timeout: this many times the predicted single pass (simulated ms)."""


def check_emission(directory: Path) -> None:
    """Fail now, before any work, if ``directory`` could not take an emission."""
    check_destination(directory, EMISSION_FILES)


def write_emission(
    emitted: EmittedProgram, directory: Path, fmt: str, source: dict[str, Any]
) -> list[str]:
    """Write ``emitted`` into ``directory`` (replaced as a whole); the files written.

    ``source`` (model, compile options) is recorded in ``emission.json``.
    """
    program_name = PROGRAM_FILE if fmt == "json" else PROGRAM_DIR
    with staged_directory(directory, EMISSION_FILES) as staging:
        _write_program(emitted, staging, fmt)
        config, network = chip_files(emitted)
        (staging / CONFIG_FILE).write_text(dumps(config), encoding="utf-8")
        (staging / NETWORK_FILE).write_text(json.dumps(network, sort_keys=True), encoding="utf-8")
        report = {
            **source,
            **emitted.report(),
            "format": fmt,
            "files": {"program": program_name, "config": CONFIG_FILE, "network": NETWORK_FILE},
            "run": f"ChipTest {program_name} {CONFIG_FILE}",
        }
        (staging / REPORT_FILE).write_text(dumps(report), encoding="utf-8")
    return [program_name, CONFIG_FILE, NETWORK_FILE, REPORT_FILE]


def chip_files(emitted: EmittedProgram) -> tuple[dict[str, Any], dict[str, Any]]:
    """The pimsim-nn chip config and network table of ``emitted`` (module docstring)."""
    target = emitted.target
    config = copy.deepcopy(read_json(target.config.path))
    chip = config.setdefault("chip_config", {})
    chip.setdefault("network_config", {})["net_config_file_path"] = NETWORK_FILE
    prediction = emitted.prediction
    sim: dict[str, Any] = {"report_verbose_level": 1}
    if emitted.mode == "pipeline":
        interval = prediction["realized_queue_interval_ns"] or prediction["schedule_interval_ns"]
        rounds = SIMULATED_ROUNDS * emitted.generations_per_round
        sim_time_us = math.ceil(rounds * interval / 1e3)
        sim |= {"sim_mode": 0, "sim_time": sim_time_us / 1e3}
    else:
        sim |= {"sim_mode": 1}
    single = prediction.get("realized_single_pass_ns") or 0
    sim["latency_timeout_ms"] = max(1, math.ceil(TIMEOUT_FACTOR * single / 1e6))
    config["sim_config"] = {**config.get("sim_config", {}), **sim}
    return config, network_table(target)


def network_table(target: PimTarget) -> dict[str, Any]:
    """ns per flit for every ordered pair of cores and to/from the global memory."""
    timing = target.step_timing()
    memory = str(target.config.chip.global_memory_switch_id)
    latency: dict[str, dict[str, int]] = {}
    for src in range(target.cores):
        row = {str(dst): int(ns) for dst, ns in enumerate(timing.latency[src]) if dst != src}
        row[memory] = int(timing.memory_latency[src])
        latency[str(src)] = row
    latency[memory] = {str(c): int(ns) for c, ns in enumerate(timing.memory_latency)}
    energy: Any = {}
    named = target.config.network_file
    original = target.config.path.parent / named if named else None
    if original is not None and original.is_file():
        energy = read_json(original).get("energy", {})
    # pimsim-nn reads "energy" unconditionally (a missing key is undefined behaviour there).
    return {"latency": latency, "energy": energy if isinstance(energy, dict) else {}}


# -- instructions ------------------------------------------------------------------


def _templates() -> dict[int, tuple[str, list[int]]]:
    """Per opcode, the JSON text of an instruction with ``%d`` for each field, and its columns."""
    out = {}
    for code, fields in OP_FIELDS.items():
        text = '{"op":"' + OPCODES[code] + '"' + "".join(f',"{f}":%d' for f in fields) + "}"
        out[code] = (text, [COLUMN[f] for f in fields])
    return out


_TEMPLATES = _templates()


def instruction_lines(program: CoreProgram) -> list[str]:
    """Each instruction of ``program`` as one JSON object (its op's `OP_FIELDS`)."""
    lines: list[str] = [""] * len(program)
    for code in np.unique(program.op).tolist():
        index = np.flatnonzero(program.op == code)
        text, columns = _TEMPLATES[code]
        values = program.values[np.ix_(index, columns)].tolist()
        for i, row in zip(index.tolist(), values, strict=True):
            lines[i] = text % tuple(row)
    return lines


def _array(program: CoreProgram) -> str:
    return "[" + ",\n".join(instruction_lines(program)) + "]"


def _program_config(emitted: EmittedProgram, every_core: bool) -> dict[str, Any]:
    lowered = emitted.lowered
    cores = range(lowered.core_cnt) if every_core else sorted(lowered.cores)
    return {
        "core_cnt": lowered.core_cnt,
        "array_group_map": {f"core{c}": list(lowered.array_group_map.get(c, ())) for c in cores},
    }


def _write_program(emitted: EmittedProgram, staging: Path, fmt: str) -> None:
    if fmt == "json":
        with (staging / PROGRAM_FILE).open("wb") as raw:
            _write_gzip(emitted, raw)
        return
    folder = staging / PROGRAM_DIR
    folder.mkdir()
    config = _program_config(emitted, every_core=True)
    (folder / CONFIG_FILE).write_text(json.dumps(config, sort_keys=True), encoding="utf-8")
    empty = CoreProgram.empty()
    for c in range(emitted.lowered.core_cnt):
        program = emitted.lowered.cores.get(c, empty)
        if fmt == "dir":
            (folder / f"core_{c}.json").write_text(_array(program), encoding="utf-8")
        else:
            header = np.array([(PIM_MAGIC, PIM_VERSION, len(program))], dtype=HEADER_DTYPE)
            (folder / f"core_{c}.pim").write_bytes(
                header.tobytes() + encode_records(program).tobytes()
            )


def _write_gzip(emitted: EmittedProgram, raw: BinaryIO) -> None:
    """``{"config": ..., "core<i>": [...], ...}`` streamed through gzip (no time stamp)."""
    with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as out:
        config = json.dumps(_program_config(emitted, every_core=False), sort_keys=True)
        out.write(('{"config":' + config).encode())
        for c, program in sorted(emitted.lowered.cores.items()):
            out.write(f',\n"core{c}":'.encode())
            out.write(_array(program).encode())
        out.write(b"}\n")
