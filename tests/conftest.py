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

import builtins
import io
import os
import signal
import subprocess
import sys
from typing import Any

import pytest

# pytest started with SIGINT ignored (a background job of a shell without job control, as
# `(pytest &)` makes it) hands that on to every process a test starts, and Python there then
# never raises KeyboardInterrupt: the tests that send Ctrl-C to fsyncbench would see it
# ignored (the run completes, or never stops). The processes the tests start get Ctrl-C as
# a terminal gives it.
if hasattr(signal, "SIGINT") and signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

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


_OPEN_BEFORE: Any = None


def _utf8_text_files() -> None:
    """Windows before Python 3.15 reads and writes a text file opened without an encoding in
    the ANSI code page (cp1252, which cannot even decode the docs); the suite's files (docs,
    fixtures, the reports fsyncbench writes) are UTF-8, so in this process a text file
    without an encoding is UTF-8, as Python 3.15 makes it everywhere (PEP 686). The processes
    the tests start keep their system's default (clitools.fsb asks for UTF-8 itself)."""
    global _OPEN_BEFORE
    if sys.platform != "win32" or sys.version_info >= (3, 15) or sys.flags.utf8_mode:
        return
    _OPEN_BEFORE = (io.text_encoding, builtins.open, io.open)
    text_encoding, real_open = io.text_encoding, builtins.open

    def utf8_text_encoding(encoding: Any, stacklevel: int = 2) -> Any:
        return "utf-8" if encoding is None else text_encoding(encoding, stacklevel + 1)

    def utf8_open(
        file: Any,
        mode: str = "r",
        buffering: int = -1,
        encoding: Any = None,
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        if encoding is None and "b" not in mode:
            encoding = "utf-8"
        return real_open(file, mode, buffering, encoding, *args, **kwargs)

    io.text_encoding = utf8_text_encoding
    builtins.open = io.open = utf8_open


def pytest_configure(config: pytest.Config) -> None:
    global _REPORT_TO_JSON, _COLUMNS_BEFORE
    simulate = config.getoption("--simulate-platform")
    if simulate:  # before fsyncbench and the test modules are imported
        from tests.simulated_platform import apply

        apply(simulate)
    _utf8_text_files()
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
    global _OPEN_BEFORE
    subprocess.Popen.__init__ = _POPEN_INIT  # type: ignore[method-assign]
    if _OPEN_BEFORE is not None:
        io.text_encoding, builtins.open, io.open = _OPEN_BEFORE
        _OPEN_BEFORE = None
    if _COLUMNS_BEFORE is None:
        os.environ.pop("COLUMNS", None)
    else:
        os.environ["COLUMNS"] = _COLUMNS_BEFORE
    if _REPORT_TO_JSON is not None:
        from fsyncbench.report import store

        store.report_to_json = _REPORT_TO_JSON


@pytest.fixture
def wide_screen(monkeypatch: pytest.MonkeyPatch) -> None:
    """A terminal wide enough that no table is dealt into panels: for tests that read a
    table's rows whole (tests/test_screen_width.py checks the layout at 80 and 100)."""
    monkeypatch.setenv("COLUMNS", "1000")


@pytest.fixture()
def here(capsys):
    """``clitools.fsb`` run as ``cli.main`` in this process (:func:`clitools.in_process`),
    returning the same ``CompletedProcess``; keyword arguments of ``fsb`` are ignored."""
    from clitools import in_process

    def run(*args, **_kw) -> subprocess.CompletedProcess:
        code, out, err = in_process(capsys, *args)
        return subprocess.CompletedProcess(list(args), code, out, err)

    return run


@pytest.fixture()
def fake(tmp_path):
    """An empty recorded root (``/proc``, ``/sys``) under ``tmp_path`` that a test fills:
    ``test_host_linux.FakeRoot``, the Linux readers' tests' shared tree."""
    from test_host_linux import FakeRoot

    return FakeRoot(tmp_path / "root")


@pytest.fixture()
def journal_db():
    """An in-memory SQLite database with the step journal's schema (autocommit)."""
    import sqlite3

    from fsyncbench.measure.workloads import SCHEMA

    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute(SCHEMA)
    yield conn
    conn.close()
