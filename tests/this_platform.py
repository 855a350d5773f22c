"""What fsyncbench measures and promises on the platform the tests run on, read from its
own tables (issue 43, item 5): the tests that measure on this machine expect these, so the
suite holds on Linux, macOS and Windows alike (CI runs it on all three; here
``pytest --simulate-platform darwin|win32`` checks it, tests/simulated_platform.py).

- sync primitives: :func:`fsyncbench.measure.workloads.sync_primitives` (Linux: fsync,
  fdatasync, O_DSYNC, O_SYNC; macOS: fsync, O_DSYNC, O_SYNC, F_BARRIERFSYNC, F_FULLFSYNC,
  each fcntl named for SQLite's fallback where the volume refuses it; Windows:
  FlushFileBuffers);
- configurations: :func:`fsyncbench.measure.plan.build_configs` (macOS measures each with
  fullfsync off and on, so ``wal/full`` is ``wal/full/no-fullfsync`` and
  ``wal/full/fullfsync`` there);
- promises: :func:`fsyncbench.judge.promises.documented` for ``platform.system()``.
"""

from __future__ import annotations

import platform
import sys
from pathlib import Path

import pytest

from fsyncbench.judge.promises import DURABLE, documented
from fsyncbench.measure import plan, workloads
from fsyncbench.model import Pragmas

LINUX = sys.platform.startswith("linux")
MACOS = sys.platform == "darwin"
WINDOWS = sys.platform == "win32"

#: For tests that drive Linux's host collector (fsyncbench.host._linux, _sysblock, _stack,
#: _raid, ...) over /proc and /sys trees recorded from Linux: it runs on Linux only and reads
#: those paths with os.path, which on Windows is ntpath (backslashes, drive letters), so
#: there the trees' paths are not the ones it would meet. macOS runs them as Linux does.
linux_trees = pytest.mark.skipif(
    WINDOWS,
    reason="Linux's /proc and /sys trees, read with os.path: the Linux collector runs on Linux",
)


def os_name() -> str:
    """``platform.system()``: what a report's host records and the judge reads."""
    return platform.system()


def primitive_names(target: Path | None = None) -> list[str]:
    """The raw primitives' result names a run measures (``write (no sync)``,
    ``write+fsync``, ...), in its order; on macOS as the volume under ``target`` takes
    F_FULLFSYNC and F_BARRIERFSYNC (each refused one named for SQLite's fallback)."""
    refused = workloads.fcntl_refusals(target) if target is not None else None
    return [p.result_name for p in workloads.sync_primitives(refused=refused)]


def sync_name() -> str:
    """The primitive a durable commit's sync is measured against: the last plain call after
    a write (fdatasync on Linux, F_FULLFSYNC on macOS, FlushFileBuffers on Windows)."""
    return [p.name for p in workloads.sync_primitives() if p.call is not None][-1]


def configs(
    journal_modes: str | None = None,
    synchronous: str | None = None,
    fullfsync: str | None = None,
) -> tuple[Pragmas, ...]:
    """The pragma combinations a run measures (comma lists as on the command line)."""
    return plan.build_configs(journal_modes, synchronous, fullfsync)


def labels(
    journal_modes: str | None = None,
    synchronous: str | None = None,
    fullfsync: str | None = None,
) -> list[str]:
    """The configurations' names a run reports: ``wal/full`` (Linux, Windows), or
    ``wal/full/no-fullfsync`` and ``wal/full/fullfsync`` (macOS)."""
    return [p.label for p in configs(journal_modes, synchronous, fullfsync)]


def label(name: str) -> str:
    """The name this platform's run gives ``journal_mode/synchronous`` (``wal/full``): itself,
    or on macOS the one with fullfsync on (``wal/full/fullfsync``), SQLite's durable one."""
    mode, sync = name.split("/")
    return labels(mode, sync)[-1]


def run_names(
    target: Path | None = None,
    journal_modes: str | None = None,
    synchronous: str | None = None,
    primitives: bool = True,
) -> list[str]:
    """Every result's name of a run, in the order it reports them: the primitives, then
    the configurations."""
    return (primitive_names(target) if primitives else []) + labels(journal_modes, synchronous)


def promised_durable(p: Pragmas) -> bool:
    """What SQLite's documentation promises of ``p`` here (the judge's ``config_durable``
    on storage that honours flushes)."""
    return documented(p, os_name()).durable == DURABLE


def unknown_configuration(word: str, known: list[str], where: str = "this run measures") -> str:
    """The error line for a ``--config`` name not among ``known`` (fsyncbench.judge.gates'
    wording, and its "did you mean" among this platform's names)."""
    from fsyncbench.errors import did_you_mean

    return f"unknown configuration {word}: {where} {', '.join(known)}" + did_you_mean([word], known)


#: Command-line options that make a run or powerloss measure each journal_mode/synchronous
#: once: with fullfsync on where it applies (macOS, whose names then end /fullfsync, as
#: :func:`label` gives them); nothing elsewhere.
ONE_FULLFSYNC: tuple[str, ...] = ("--fullfsync", "on") if MACOS else ()
