"""Read a pimsim-nn chip configuration (and its network table) into frozen dataclasses.

pimsim-nn (``src/config/Config.hpp``, upstream wangxy-2000/pimsim-nn 0399bc6 and the
HEAPLab fork 9d6b6b3) gives every field a default and ignores unknown fields, so a
partial JSON is a valid config. We parse the fields the cost model reads, with the
simulator's defaults (cited per field below), and ignore the pimsim-nn fields it does
not read (`IGNORED_FIELDS`: power and energy numbers, ``bus_topology``,
``adc_resolution``, ``rob_size``, ``sim_config``). ``memory_size`` is read for the
emitter's local-memory allocation (`raptor_cp.emit.allocate`), although the
simulator itself never checks it.

We are stricter than the simulator where it would silently misbehave: nlohmann/json
truncates ``1.5`` to an int and accepts ``true`` as a number, and pimsim-nn divides by
``data_width``, ``dac_count``, ``adc_count``, ... without checking them. Here a field of
the wrong type or value raises `InvalidConfigError` with one line naming the file and
the JSON path, e.g. ``cfg.json: chip_config.core_cnt: expected a positive integer,
got "abc"``. As for raptor-graph JSON, a field that is neither read nor a known
pimsim-nn field (``core_cnnt``) is an error, with the closest known name; names that
start with ``_`` (comments) and end in ``_power`` or ``_energy`` are accepted. Numbers
lie within ``2^53`` (`raptor_cp.limits`), ``core_cnt`` within
`raptor_cp.limits.MAX_PAIRWISE_CORES`, and the cores fill the ``layout`` grid row-major
with at most the last row partial (PIMCOMP-NN's 136 cores on 12 x 12).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from raptor_cp.errors import InvalidConfigError
from raptor_cp.files import excerpt, read_json
from raptor_cp.limits import MAX_INTEGER, MAX_PAIRWISE_CORES, check_cores

IGNORED_FIELDS: dict[str, frozenset[str]] = {
    "": frozenset({"sim_config"}),
    "chip_config": frozenset(),
    "chip_config.network_config": frozenset({"bus_topology"}),
    "chip_config.global_memory_config": frozenset(),
    "chip_config.core_config": frozenset({"rob_size"}),
    "chip_config.core_config.local_memory_config": frozenset(),
    "chip_config.core_config.matrix_config": frozenset(
        {"adc_resolution", "input_buffer_latency_cycle"}
    ),
}
"""Per config object, the pimsim-nn fields raptor-cp accepts but does not read (power and
energy fields, ``*_power`` / ``*_energy``, and ``_comment``-style names are accepted too)."""


@dataclass(frozen=True)
class MemoryConfig:
    """A local or global memory: ``ceil(bytes / data_width)`` accesses of N cycles each."""

    data_width: int
    """Bytes per access (Config.hpp default 16)."""
    period: float
    """Nanoseconds per cycle (default 1)."""
    read_latency_cycle: int
    """Cycles per read access (default 8)."""
    write_latency_cycle: int
    """Cycles per write access (default 10)."""
    memory_size: int = 1024 * 1024
    """Bytes (default 1 MiB). pimsim-nn never checks it; raptor-cp's emitter allocates
    local-memory buffers within it (`raptor_cp.emit.allocate`)."""


@dataclass(frozen=True)
class MatrixConfig:
    """One core's crossbar arrays and their analog periphery (``MatrixUnitConfig``)."""

    xbar_array_count: int
    """Crossbars per core (default 1)."""
    period: float
    """Matrix clock in ns (default ``1/1.28`` = 0.78125)."""
    pipeline_mode: bool
    """Front and back stages overlap (default true)."""
    dac_resolution: int
    """Input bits per DAC step (default 1)."""
    dac_latency_cycle: int
    """Default 1."""
    dac_count: int
    """Default 128."""
    xbar_size: tuple[int, int]
    """Crossbar (rows, columns) (default 128 x 128)."""
    cell_precision: int
    """Bits per cell (default 2)."""
    xbar_latency: float
    """Analog read of a whole crossbar, ns (default 30)."""
    sample_hold_latency_cycle: int
    """Default 1."""
    adc_latency_cycle: int
    """Default 1."""
    adc_count: int
    """Default 1."""
    shift_adder_latency_cycle: int
    """Default 1."""
    output_buffer_latency_cycle: int
    """Default 1. (``input_buffer_latency_cycle`` has no field: Config.hpp's JSON field
    list omits it, so a config file cannot change its default 0.)"""


@dataclass(frozen=True)
class CoreConfig:
    """A core: vector unit, local memory and matrix unit (``CoreConfig``)."""

    period: float
    """Core clock in ns (default 1)."""
    vector_width: int
    """Elements per vector step (default 16)."""
    vector_latency_cycle: int
    """Per vector step (default 8); charged as ns, see `PimTarget`."""
    global_memory_switch_id: int
    """Network node the transfer unit sends ``ld``/``st`` to (default -10)."""
    local_memory: MemoryConfig
    matrix: MatrixConfig


@dataclass(frozen=True)
class NetworkConfig:
    """The on-chip network (``BusConfig``)."""

    bus_width: int
    """Bytes per flit (default 16)."""
    layout: tuple[int, int]
    """Core grid (rows, columns); pimsim-nn's default (0, 0) is invalid, so it is required."""
    net_config_file_path: str
    """Latency/energy table, relative to the config file (default "": none)."""


@dataclass(frozen=True)
class ChipConfig:
    """The whole chip (``ChipConfig``)."""

    core_cnt: int
    """Default 1."""
    global_memory_switch_id: int
    """Node of the global memory (default -10); must equal the cores' id."""
    core: CoreConfig
    global_memory: MemoryConfig
    network: NetworkConfig


@dataclass(frozen=True)
class NetworkTable:
    """``latency[src][dst]`` in integer ns per flit; pairs absent from the file cost 0."""

    source: str
    """The file, as named in messages."""
    latency: Mapping[tuple[int, int], int]


@dataclass(frozen=True)
class PimConfig:
    """A parsed config file plus its network table when one was found."""

    source: str
    """How messages name the config (its path, or ``"<name> preset"``)."""
    path: Path
    """The file the config was read from (instruction emission copies it)."""
    chip: ChipConfig
    network_file: str | None
    """The network file the config names, as written there (None when it names none)."""
    network: NetworkTable | None
    """The loaded table; None when no file is named or the named file does not exist."""


def load_pim_config(path: str | Path, label: str | None = None) -> PimConfig:
    """Parse a pimsim-nn config file and the network table it names.

    Parameters
    ----------
    path:
        The config JSON. ``net_config_file_path`` is resolved against its directory,
        as pimsim-nn's ``Network::readLatencyEnergyFile`` does.
    label:
        Name of the config in messages (default: ``path`` as given).
    """
    path = Path(path)
    source = str(path) if label is None else label
    data = read_json(path, label=source, error=InvalidConfigError)
    chip = parse_chip_config(data, source)
    named = chip.network.net_config_file_path
    if not named:
        return PimConfig(source, path, chip, None, None)
    table_path = path.parent / named
    if not table_path.exists():
        return PimConfig(source, path, chip, named, None)
    table_source = str(table_path) if label is None else f"{label}: {named}"
    table = parse_network_table(
        read_json(table_path, label=table_source, error=InvalidConfigError), table_source
    )
    return PimConfig(source, path, chip, named, table)


def parse_chip_config(data: object, source: str) -> ChipConfig:
    """Build a `ChipConfig` from a decoded config JSON; ``source`` names it in errors."""
    root = _Node(source, "", data)
    if isinstance(data, dict) and "chip_config" not in data:
        raise InvalidConfigError(
            f"{source}: chip_config: missing (a pimsim-nn config needs at least "
            "chip_config.network_config.layout)"
        )
    chip = root.child("chip_config")
    core = chip.child("core_config")
    net = chip.child("network_config")
    config = ChipConfig(
        core_cnt=chip.integer("core_cnt", 1, minimum=1),
        global_memory_switch_id=chip.integer("global_memory_switch_id", -10),
        core=CoreConfig(
            period=core.number("period", 1.0, positive=False),
            vector_width=core.integer("vector_width", 16, minimum=1),
            vector_latency_cycle=core.integer("vector_latency_cycle", 8, minimum=0),
            global_memory_switch_id=core.integer("global_memory_switch_id", -10),
            local_memory=_memory(core.child("local_memory_config")),
            matrix=_matrix(core.child("matrix_config")),
        ),
        global_memory=_memory(chip.child("global_memory_config")),
        network=NetworkConfig(
            bus_width=net.integer("bus_width", 16, minimum=1),
            layout=net.required_pair("layout"),
            net_config_file_path=net.text("net_config_file_path", ""),
        ),
    )
    root.reject_unknown()
    check_chip(config, source)
    return config


def check_chip(chip: ChipConfig, source: str) -> None:
    """The checks across fields: core limit, global-memory node, cores on the layout grid.

    Raises `InvalidConfigError` naming ``source`` and the field.
    """
    core_cnt, chip_gm, core_gm = (
        chip.core_cnt,
        chip.global_memory_switch_id,
        chip.core.global_memory_switch_id,
    )
    check_cores(core_cnt, f"{source}: chip_config.core_cnt", MAX_PAIRWISE_CORES)
    if core_gm != chip_gm:
        raise InvalidConfigError(
            f"{source}: chip_config.core_config.global_memory_switch_id: expected the chip's "
            f"global_memory_switch_id {chip_gm}, got {_shown(core_gm)}"
        )
    if 0 <= chip_gm < core_cnt:
        raise InvalidConfigError(
            f"{source}: chip_config.global_memory_switch_id: expected an id outside the cores "
            f"0..{core_cnt - 1}, got {_shown(chip_gm)}"
        )
    rows, cols = chip.network.layout
    where = f"{source}: chip_config.network_config.layout"
    if rows * cols < core_cnt:
        raise InvalidConfigError(
            f"{where}: a {rows}x{cols} grid holds {rows * cols} cores, fewer than core_cnt "
            f"{core_cnt}"
        )
    if rows * cols - core_cnt >= cols:
        raise InvalidConfigError(
            f"{where}: a {rows}x{cols} grid for core_cnt {core_cnt} leaves whole rows empty "
            f"(cores fill it row-major; only the last row may be partial, e.g. "
            f"[{-(-core_cnt // cols)}, {cols}])"
        )


def parse_network_table(data: object, source: str) -> NetworkTable:
    """Build a `NetworkTable` from a decoded ``{"latency": {src: {dst: ns}}}`` JSON.

    Node ids are integer strings (-10 is global memory); ``energy`` is ignored.
    Latencies must be whole nanoseconds (raptor-cp keeps time integral).
    """
    root = _Node(source, "", data)
    if isinstance(data, dict) and "latency" not in data:
        raise InvalidConfigError(
            f"{source}: latency: missing (expected {{src: {{dst: ns per flit}}}})"
        )
    latency: dict[tuple[int, int], int] = {}
    table = root.child("latency")
    for src_key in table.data:
        src = table.node_id(src_key)
        row = table.child(src_key)
        for dst_key in row.data:
            ns = row.integer(dst_key, 0, minimum=0, what="a non-negative whole number of ns")
            latency[src, row.node_id(dst_key)] = ns
    return NetworkTable(source, MappingProxyType(latency))


def _memory(node: _Node) -> MemoryConfig:
    # Defaults: Config.hpp ``struct MemoryConfig``.
    return MemoryConfig(
        data_width=node.integer("data_width", 16, minimum=1),
        period=node.number("period", 1.0, positive=False),
        read_latency_cycle=node.integer("read_latency_cycle", 8, minimum=0),
        write_latency_cycle=node.integer("write_latency_cycle", 10, minimum=0),
        memory_size=node.integer("memory_size", 1024 * 1024, minimum=1),
    )


def _matrix(node: _Node) -> MatrixConfig:
    # Defaults: Config.hpp ``struct MatrixUnitConfig``. Divisors (dac_resolution,
    # dac_count, adc_count, period) must be positive: pimsim-nn would divide by zero.
    return MatrixConfig(
        xbar_array_count=node.integer("xbar_array_count", 1, minimum=1),
        period=node.number("period", 1 / 1.28, positive=True),
        pipeline_mode=node.flag("pipeline_mode", True),
        dac_resolution=node.integer("dac_resolution", 1, minimum=1),
        dac_latency_cycle=node.integer("dac_latency_cycle", 1, minimum=0),
        dac_count=node.integer("dac_count", 128, minimum=1),
        xbar_size=node.pair("xbar_size", (128, 128)),
        cell_precision=node.integer("cell_precision", 2, minimum=1),
        xbar_latency=node.number("xbar_latency", 30.0, positive=False),
        sample_hold_latency_cycle=node.integer("sample_hold_latency_cycle", 1, minimum=0),
        adc_latency_cycle=node.integer("adc_latency_cycle", 1, minimum=0),
        adc_count=node.integer("adc_count", 1, minimum=1),
        shift_adder_latency_cycle=node.integer("shift_adder_latency_cycle", 1, minimum=0),
        output_buffer_latency_cycle=node.integer("output_buffer_latency_cycle", 1, minimum=0),
    )


def _shown(value: object) -> str:
    """A JSON value as the user wrote it, for messages (`raptor_cp.files.excerpt`)."""
    return excerpt(value)


class _Node:
    """One JSON object under a dotted path, with typed field readers that name the path."""

    def __init__(self, source: str, path: str, data: object) -> None:
        if not isinstance(data, dict):
            where = f"{path}: " if path else ""
            raise InvalidConfigError(f"{source}: {where}expected an object, got {_shown(data)}")
        self.source = source
        self.path = path
        self.data: dict[str, object] = data
        self.read: set[str] = set()
        self.children: list[_Node] = []

    def reject_unknown(self) -> None:
        """Raise for a field of this object (or a child read so far) that is not known.

        Known: the fields read, `IGNORED_FIELDS`, and names starting with ``_`` or
        ending in ``_power`` or ``_energy``.
        """
        known = self.read | IGNORED_FIELDS.get(self.path, frozenset())
        for key in self.data:
            if key in known or key.startswith("_") or key.endswith(("_power", "_energy")):
                continue
            close = difflib.get_close_matches(key, sorted(known), n=1)
            hint = (
                f"did you mean {close[0]}?" if close else f"known here: {', '.join(sorted(known))}"
            )
            raise InvalidConfigError(f"{self.source}: {self._field(key)}: unknown field ({hint})")
        for child in self.children:
            child.reject_unknown()

    def _field(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def error(self, key: str, expected: str, value: object) -> InvalidConfigError:
        return InvalidConfigError(
            f"{self.source}: {self._field(key)}: expected {expected}, got {_shown(value)}"
        )

    def child(self, key: str) -> _Node:
        """The object at ``key``; an absent object means all its defaults."""
        self.read.add(key)
        node = _Node(self.source, self._field(key), self.data.get(key, {}))
        self.children.append(node)
        return node

    def node_id(self, key: str) -> int:
        try:
            return int(key)
        except ValueError:
            raise InvalidConfigError(
                f"{self.source}: {self._field(key)}: expected an integer node id"
            ) from None

    def integer(self, key: str, default: int, minimum: int | None = None, what: str = "") -> int:
        self.read.add(key)
        value = self.data.get(key, default)
        expected = what or {None: "an integer", 0: "a non-negative integer"}.get(
            minimum, "a positive integer"
        )
        # nlohmann/json would also take 1.5 (truncated) or true; we accept only whole numbers.
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.error(key, expected, value)
        if minimum is not None and value < minimum:
            raise self.error(key, expected, value)
        if abs(value) > MAX_INTEGER:
            raise self.error(key, f"{expected} within 2^53", value)
        return value

    def number(self, key: str, default: float, *, positive: bool) -> float:
        self.read.add(key)
        value = self.data.get(key, default)
        expected = "a positive number" if positive else "a non-negative number"
        if (
            not isinstance(value, int | float)
            or isinstance(value, bool)
            or not math.isfinite(value)
            or value < 0
            or (positive and value == 0)
        ):
            raise self.error(key, expected, value)
        if value > MAX_INTEGER:
            raise self.error(key, f"{expected} within 2^53", value)
        return float(value)

    def flag(self, key: str, default: bool) -> bool:
        self.read.add(key)
        value = self.data.get(key, default)
        if not isinstance(value, bool):
            raise self.error(key, "true or false", value)
        return value

    def text(self, key: str, default: str) -> str:
        self.read.add(key)
        value = self.data.get(key, default)
        if not isinstance(value, str):
            raise self.error(key, "a string", value)
        return value

    def pair(self, key: str, default: tuple[int, int]) -> tuple[int, int]:
        self.read.add(key)
        value = self.data.get(key, list(default))
        if (
            not isinstance(value, list)
            or len(value) != 2
            or not all(
                isinstance(v, int) and not isinstance(v, bool) and 0 < v <= MAX_INTEGER
                for v in value
            )
        ):
            raise self.error(key, "2 positive integers [rows, cols]", value)
        return (value[0], value[1])

    def required_pair(self, key: str) -> tuple[int, int]:
        self.read.add(key)
        if key not in self.data:
            raise InvalidConfigError(
                f"{self.source}: {self._field(key)}: missing; expected [rows, cols] "
                "(pimsim-nn's default [0, 0] is not a valid grid)"
            )
        return self.pair(key, (0, 0))
