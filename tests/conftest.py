"""pytest options shared by the suite.

``--unit-only`` skips the tests marked ``slow`` (statistical simulations of many runs) and
skips a test at the moment it would start another process (the CLI in a subprocess,
strace, a powercut writer): what is left are the fast in-process unit tests, which
scripts/mutation.py runs against each mutant (issue "Tests that catch bugs": "focusing each
mutant on its module's fast unit tests"). The normal suite runs everything.
"""

from __future__ import annotations

import subprocess

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--unit-only",
        action="store_true",
        help="only fast in-process tests: skip slow ones and any that start a "
        "process (mutation runs)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--unit-only"):
        skip = pytest.mark.skip(reason="slow (--unit-only)")
        for item in items:
            if item.get_closest_marker("slow"):
                item.add_marker(skip)


_POPEN_INIT = subprocess.Popen.__init__


def _refuse(*_args, **_kwargs):
    pytest.skip("starts another process (--unit-only)")


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--unit-only"):
        # for the whole session, module fixtures included (restored when it ends: mutmut
        # runs pytest inside its own process)
        subprocess.Popen.__init__ = _refuse  # type: ignore[method-assign]


def pytest_unconfigure(config: pytest.Config) -> None:
    subprocess.Popen.__init__ = _POPEN_INIT  # type: ignore[method-assign]
