"""pytest options shared by the suite.

``--unit-only`` skips the tests marked ``slow`` (statistical simulations of many runs) and
skips a test at the moment it would start another process (the CLI in a subprocess,
strace, a powercut writer): what is left are the fast in-process unit tests, which
scripts/mutation.py runs against each mutant (issue "Tests that catch bugs": "focusing each
mutant on its module's fast unit tests").
Tiers: plain ``pytest`` is the fast tier. Tests marked ``slow`` (statistical simulations,
many real runs) or ``system`` (storage stacks built for the test, loop devices, FUSE,
headless chromium, package builds, ansible) are left out of it and named in the summary;
``--all-tiers`` runs every tier (the README's test command and CI), ``-m slow`` or
``-m system`` one tier, any ``-m`` expression exactly what it says; test files or tests
named on the command line run whatever their tier.
``--simulate-platform darwin`` (or ``win32``) runs the tests as if on macOS (Windows), as far
as Linux can pretend (tests/simulated_platform.py says how far).
"""

from __future__ import annotations

import os
import subprocess

import pytest

#: the markers of the tiers plain ``pytest`` leaves out (pyproject.toml names them)
SLOW_TIERS = ("slow", "system")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--unit-only",
        action="store_true",
        help="only fast in-process tests: skip slow ones and any that start a "
        "process (mutation runs)",
    )
    parser.addoption(
        "--all-tiers",
        action="store_true",
        help="run every tier: fast, slow and system (what CI runs)",
    )
    parser.addoption(
        "--simulate-platform",
        choices=("darwin", "win32"),
        default=None,
        help="run the tests as if on macOS (darwin) or Windows (win32), as far as Linux can "
        "pretend: tests/simulated_platform.py",
    )


_LEFT_OUT: dict[str, int] = {}


def _named(config: pytest.Config) -> bool:
    """True when the command line names test files or tests (not a directory): those run
    whatever their tier."""
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        return False
    return all("::" in a or a.split("::")[0].endswith(".py") for a in config.args)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--unit-only"):
        skip = pytest.mark.skip(reason="slow (--unit-only)")
        for item in items:
            if item.get_closest_marker("slow"):
                item.add_marker(skip)
    if config.getoption("--all-tiers") or config.getoption("markexpr") or _named(config):
        return
    kept, left = [], []
    for item in items:
        tier = next((t for t in SLOW_TIERS if item.get_closest_marker(t)), None)
        if tier is None:
            kept.append(item)
        else:
            left.append(item)
            _LEFT_OUT[tier] = _LEFT_OUT.get(tier, 0) + 1
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = kept


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # type: ignore[no-untyped-def]
    if _LEFT_OUT:
        counts = ", ".join(f"{n} {tier}" for tier, n in _LEFT_OUT.items())
        terminalreporter.write_line(
            f"fast tier only: {counts} tests not run; pytest --all-tiers runs every tier "
            "(as CI does), pytest -m slow or -m system one of them"
        )


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


#: The terminal width the suite's text renders at, whatever the terminal pytest runs in
#: (the child processes it starts inherit it): tests that want another set their own.
SUITE_COLUMNS = "100"
_COLUMNS_BEFORE: str | None = None


def pytest_configure(config: pytest.Config) -> None:
    global _REPORT_TO_JSON, _COLUMNS_BEFORE
    simulate = config.getoption("--simulate-platform")
    if simulate:  # before fsyncbench and the test modules are imported
        from tests.simulated_platform import apply

        apply(simulate)
    from fsyncbench.report import store

    _COLUMNS_BEFORE = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = SUITE_COLUMNS

    _REPORT_TO_JSON = store.report_to_json
    store.report_to_json = _schema_checked(store.report_to_json)
    if config.getoption("--unit-only"):
        # for the whole session, module fixtures included (restored when it ends: mutmut
        # runs pytest inside its own process)
        subprocess.Popen.__init__ = _refuse  # type: ignore[method-assign]


def pytest_unconfigure(config: pytest.Config) -> None:
    subprocess.Popen.__init__ = _POPEN_INIT  # type: ignore[method-assign]
    if _COLUMNS_BEFORE is None:
        os.environ.pop("COLUMNS", None)
    else:
        os.environ["COLUMNS"] = _COLUMNS_BEFORE
    if _REPORT_TO_JSON is not None:
        from fsyncbench.report import store

        store.report_to_json = _REPORT_TO_JSON
