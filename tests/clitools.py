"""Running the real CLI, in a subprocess or in this process, shared by the CLI-level tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def in_process(capsys, *argv) -> tuple[int, str, str]:
    """``fsyncbench ARGV`` through ``cli.main`` in this process: (exit code, stdout,
    stderr), read with pytest's ``capsys`` (output before the call is discarded). The fast
    tier's twin of :func:`fsb`: the same argv and exit code without an interpreter of its
    own."""
    from fsyncbench import cli

    capsys.readouterr()
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def fsb(*args, prefix=(), cwd=None, env=None, timeout=300) -> subprocess.CompletedProcess:
    """``[prefix...] python -m fsyncbench ARGS`` with captured text output, in UTF-8 as the
    report files are: on Windows, before Python 3.15, a pipe is otherwise written in the
    ANSI code page (cp1252; tests/test_cli_conventions.py checks that case)."""
    return subprocess.run(
        [*prefix, sys.executable, "-m", "fsyncbench", *map(str, args)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=cwd,
        env={**(os.environ if env is None else env), "PYTHONIOENCODING": "utf-8"},
        timeout=timeout,
    )


def leftovers(directory: Path) -> list[str]:
    """fsyncbench scratch directories left in ``directory`` (there must be none)."""
    return [p.name for p in directory.iterdir() if p.name.startswith(".fsyncbench-")]


def assert_usage_error(proc: subprocess.CompletedProcess, line: str) -> None:
    """Exit code 2, exactly one stderr line ``fsyncbench: error: LINE``, no traceback."""
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [f"fsyncbench: error: {line}"]
    assert "Traceback" not in proc.stderr


def start_long_run(target: Path, output: Path, *extra, settle_s: float = 0.3):
    """A ``fsyncbench run`` on ``target`` that would take minutes (one round, a huge fixed
    sample count), returned once its working directory exists and ``settle_s`` more have
    passed, i.e. while it is measuring: for signal, leftover and removal tests."""
    import time

    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fsyncbench",
            "run",
            str(target),
            "--report-dir",
            str(output),
            "--samples",
            "100000000",
            "--budget-seconds",
            "60",
            "--quiet",
            "--rounds",
            "1",
            *map(str, extra),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not leftovers(target) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(settle_s)
    return proc
