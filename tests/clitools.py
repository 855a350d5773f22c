"""Running the real CLI in a subprocess, shared by the CLI-level tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def fsb(*args, prefix=(), cwd=None, env=None, timeout=300) -> subprocess.CompletedProcess:
    """``[prefix...] python -m fsyncbench ARGS`` with captured text output."""
    return subprocess.run(
        [*prefix, sys.executable, "-m", "fsyncbench", *map(str, args)],
        capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout,
    )


def leftovers(directory: Path) -> list[str]:
    """fsyncbench scratch directories left in ``directory`` (there must be none)."""
    return [p.name for p in directory.iterdir() if p.name.startswith(".fsyncbench-")]


def assert_usage_error(proc: subprocess.CompletedProcess, line: str) -> None:
    """Exit code 2, exactly one stderr line ``fsyncbench: error: LINE``, no traceback."""
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [f"fsyncbench: error: {line}"]
    assert "Traceback" not in proc.stderr
