"""`load_workload`: pick the reader for a workload file by extension and content.

``.onnx`` goes to the ONNX reader, ``.stg`` to the Kasahara STG reader, and a
``.json`` file is recognised by its content: ``"format": "raptor-graph"`` is
raptor-cp's own task-graph format, a ``node_list`` object or an array of
objects with an ``operation`` field is a PIMCOMP-NN / PIMSYN-NN model. The
JSON is parsed once and handed to the chosen reader. docs/formats.md describes
each format.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from raptor_cp.errors import InvalidInputError
from raptor_cp.files import read_json
from raptor_cp.workload.model import Workload
from raptor_cp.workload.pimcomp_reader import pimcomp_workload
from raptor_cp.workload.raptor_json import FORMAT, raptor_graph_workload
from raptor_cp.workload.stg_reader import read_stg

EXTENSIONS = (".json", ".onnx", ".stg")
"""File extensions `load_workload` accepts (case-insensitive)."""


def load_workload(path: str | Path, bits: int | None = None) -> Workload:
    """Read the workload in ``path`` with the reader its format needs.

    Parameters
    ----------
    path:
        A ``.onnx``, ``.stg`` or ``.json`` file.
    bits:
        Activation/weight precision. ONNX defaults to 8 and PIMCOMP-NN to each
        node's ``bitwidth``; task graphs (STG, raptor-graph) have no precision
        and ignore it.
    """
    file = Path(path)
    if not file.exists():
        raise InvalidInputError(f"{path}: no such file")
    suffix = file.suffix.lower()
    if suffix == ".onnx":
        from raptor_cp.workload.onnx_reader import read_onnx  # lazy: imports onnx

        return read_onnx(file, bits=8 if bits is None else bits)
    if suffix == ".stg":
        return read_stg(file)
    if suffix == ".json":
        return _load_json(read_json(file), str(path), bits)
    raise InvalidInputError(
        f"{path}: unknown workload format {suffix or '(no extension)'!r} "
        f"(accepted: {', '.join(EXTENSIONS)})"
    )


def _load_json(document: Any, source: str, bits: int | None) -> Workload:
    if isinstance(document, dict) and "format" in document:
        if document["format"] == FORMAT:
            return raptor_graph_workload(document, source)
        raise InvalidInputError(
            f"{source}: unknown JSON workload format {document['format']!r} (expected {FORMAT!r})"
        )
    is_node_list = isinstance(document, dict) and "node_list" in document
    is_node_array = (
        isinstance(document, list)
        and bool(document)
        and isinstance(document[0], dict)
        and "operation" in document[0]
    )
    if is_node_list or is_node_array:
        return pimcomp_workload(document, source, bits)
    raise InvalidInputError(
        f'{source}: unrecognised JSON workload: expected a raptor-graph document ("format": '
        '"raptor-graph"), a PIMCOMP-NN model ({"node_list": [...]}) or an array of '
        "PIMCOMP-NN nodes"
    )
