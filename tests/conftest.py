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


_REPORT_TO_JSON = None


def _schema_checked(original):
    """``store.report_to_json`` that also validates what it returns against the published
    schema (docs/report.schema.json): every report the suite writes in-process meets it."""
    import json

    from tests.schemacheck import cut_samples, validator

    check = validator()

    def checked(report):
        text = original(report)
        error = next(iter(check.iter_errors(cut_samples(json.loads(text)))), None)
        if error is not None:
            raise AssertionError(
                f"a report does not meet docs/report.schema.json: {error.message} "
                f"at {list(error.path)}"
            )
        return text

    return checked


def pytest_configure(config: pytest.Config) -> None:
    global _REPORT_TO_JSON
    from fsyncbench.report import store

    _REPORT_TO_JSON = store.report_to_json
    store.report_to_json = _schema_checked(store.report_to_json)
    if config.getoption("--unit-only"):
        # for the whole session, module fixtures included (restored when it ends: mutmut
        # runs pytest inside its own process)
        subprocess.Popen.__init__ = _refuse  # type: ignore[method-assign]


def pytest_unconfigure(config: pytest.Config) -> None:
    subprocess.Popen.__init__ = _POPEN_INIT  # type: ignore[method-assign]
    if _REPORT_TO_JSON is not None:
        from fsyncbench.report import store

        store.report_to_json = _REPORT_TO_JSON
