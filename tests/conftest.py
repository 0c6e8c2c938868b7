"""Test options: tests marked ``slow`` run only with ``pytest --runslow``; property tests
draw the same examples on every run (``--hypothesis-profile=explore`` draws fresh ones)."""

from __future__ import annotations

import pytest
from hypothesis import settings

# A suite that passes on one run and fails on the next tells a contributor nothing about
# their change, so CI draws a fixed sequence; exploring new examples is a deliberate act.
settings.register_profile("deterministic", derandomize=True)
settings.register_profile("explore", derandomize=False, max_examples=500)
settings.load_profile("deterministic")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runslow", action="store_true", default=False, help="run slow tests")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--runslow"):
        return
    skip_slow = pytest.mark.skip(reason="slow; run with --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip_slow)
