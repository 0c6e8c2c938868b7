"""Optional and test-only dependencies stay out of the package (STYLE.md habit 14).

networkx is a test-only dependency (cross-checks, the import graph) and dask an
optional extra (``raptor-cp report --executor dask``): every module of
``raptor_cp`` must import with neither available.
"""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import importlib, pkgutil, sys
for blocked in ("networkx", "dask", "distributed"):
    sys.modules[blocked] = None  # any import of it now raises ImportError
import raptor_cp
for module in pkgutil.walk_packages(raptor_cp.__path__, "raptor_cp."):
    importlib.import_module(module.name)
print("ok")
"""


def test_every_module_imports_without_networkx_or_dask() -> None:
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "ok\n"
