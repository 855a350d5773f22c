"""The powercut commands of the Python API: ``fsyncbench powercut listen``, ``write`` and
``verify`` (a real power cut between a writer and a listener on another machine), each one
call that checks its arguments, does the work in :mod:`fsyncbench.powercut` and returns its
result or raises :class:`~fsyncbench.errors.FsyncbenchError`."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from fsyncbench import options
from fsyncbench import powercut_defaults as defaults
from fsyncbench.api.common import PathLike, check_extras, command_line_of
from fsyncbench.measure.plan import DEFAULT_PAYLOAD_BYTES
from fsyncbench.options import Outputs

if TYPE_CHECKING:  # for annotations only: each is imported where it is used
    from fsyncbench.powercut.cycle import CycleSummary
    from fsyncbench.powercut.secret import ListenerStart
    from fsyncbench.powercut.verify import VerifyOutcome
    from fsyncbench.powercut.writer import WriterStatus, WriterSummary

__all__ = ["powercut_cycle", "powercut_listen", "powercut_verify", "powercut_write"]


def powercut_listen(
    bind: str = defaults.BIND,
    port: int = defaults.PORT,
    state: PathLike = defaults.STATE,
    *,
    secret_file: PathLike | None = None,
    log: Callable[[str], None] = lambda _line: None,
    ready: Callable[[tuple[str, int]], None] | None = None,
    announce: Callable[[ListenerStart], None] | None = None,
) -> None:
    """``fsyncbench powercut listen``: record what writers report, durably in the SQLite
    file ``state``, until SIGINT/SIGTERM, from peers that prove its secret: the one in
    ``secret_file`` (default ``state`` + ``.secret``) or in FSYNCBENCH_POWERCUT_SECRET, or
    a new one it writes to that file (mode 0600). ``log`` gets each status line (never the
    secret), ``ready`` the bound (address, port), ``announce`` once the
    :class:`fsyncbench.powercut.secret.ListenerStart` to show the user
    (:func:`fsyncbench.powercut.secret.format_start`: the secret and the command lines)
    (:func:`fsyncbench.powercut.listen`)."""
    from fsyncbench import powercut

    options.check_text(bind, "bind")
    options.check_integer(port, "port")
    options.check_path(state, "state")
    options.check_path(secret_file, "secret_file", optional=True)
    options.check_callback(log, "log", optional=False)
    options.check_callback(ready, "ready")
    options.check_callback(announce, "announce")
    powercut.listen(
        bind,
        port,
        Path(state),
        log,
        ready,
        secret_file=None if secret_file is None else Path(secret_file),
        environ=os.environ,
        announce=announce,
    )


def powercut_write(
    target: PathLike = ".",
    *,
    to: str,
    journal_mode: str = "wal",
    synchronous: str = "full",
    fullfsync: str | bool | None = None,
    payload_bytes: int = DEFAULT_PAYLOAD_BYTES,
    max_commits: int | None = None,
    status: Callable[[WriterStatus], None] | None = None,
    log: Callable[[str], None] | None = None,
    outputs: Outputs | None = None,
    secret: str | None = None,
    secret_file: PathLike | None = None,
) -> WriterSummary:
    """``fsyncbench powercut write``: commit journal rows in ``target`` and report each to the
    listener at ``to`` (HOST:PORT) once COMMIT returned, until ``max_commits`` or a stop;
    ``status`` gets a :class:`fsyncbench.powercut.writer.WriterStatus` now and then, ``log``
    each event line. The listener's secret: ``secret``, else the one in ``secret_file``,
    else FSYNCBENCH_POWERCUT_SECRET (:func:`fsyncbench.options.powercut_secret`; none is an
    error). Returns the WriterSummary (render it with :func:`render`)."""
    from fsyncbench import powercut

    options.check_text(to, "to")
    options.check_integer(payload_bytes, "payload_bytes")
    options.check_integer(max_commits, "max_commits", optional=True)
    options.check_callback(status, "status")
    options.check_callback(log, "log")
    check_extras((), outputs)
    address = options.address(to, "--to")
    path = options.target_dir(target)
    pragmas = options.one_pragmas(journal_mode, synchronous, fullfsync, command="powercut write")
    if outputs is not None:
        outputs.check()
    key = options.powercut_secret(secret, secret_file)
    return powercut.write(
        address,
        key,
        path,
        pragmas,
        payload_bytes,
        max_commits,
        status or (lambda _s: None),
        log or (lambda _line: None),
    )


def powercut_verify(
    target: PathLike = ".",
    *,
    listener: str,
    run_id: str | None = None,
    report_dir: PathLike = "reports",
    outputs: Outputs | None = None,
    command_line: Sequence[str] | None = None,
    secret: str | None = None,
    secret_file: PathLike | None = None,
) -> VerifyOutcome:
    """``fsyncbench powercut verify``: check every commit the ``listener`` (HOST:PORT)
    recorded for the run ``run_id`` (default: the newest in ``target``) against its journal,
    and save the report (kind "powercut") in ``report_dir``. The listener's secret as for
    :func:`powercut_write`; it goes into neither the report nor the text. Returns the
    :class:`fsyncbench.powercut.verify.VerifyOutcome` (``report``, ``failed``, ``path``)."""
    from fsyncbench import powercut

    options.check_text(listener, "listener")
    options.check_text(run_id, "run_id", optional=True)
    options.check_path(report_dir, "report_dir")
    check_extras((), outputs, command_line=command_line)
    address = options.address(listener, "--from")
    path = options.target_dir(target)
    if outputs is not None:
        outputs.check()
    key = options.powercut_secret(secret, secret_file)
    return powercut.verify(
        address, key, path, run_id, Path(report_dir), list(command_line_of(command_line))
    )


def powercut_cycle(
    start: str,
    cut: str,
    verify: str,
    *,
    restore: str | None = None,
    cycles: int = defaults.CYCLES,
    cut_after: str = defaults.CUT_AFTER,
    seed: int | None = None,
    bind: str = defaults.BIND,
    port: int = defaults.PORT,
    state: PathLike = defaults.STATE,
    secret_file: PathLike | None = None,
    start_timeout_s: float = defaults.START_TIMEOUT_S,
    command_timeout_s: float = defaults.COMMAND_TIMEOUT_S,
    verify_timeout_s: float = defaults.VERIFY_TIMEOUT_S,
    retry_every_s: float = defaults.RETRY_EVERY_S,
    log: Callable[[str], None] = lambda _line: None,
    outputs: Outputs | None = None,
) -> CycleSummary:
    """``fsyncbench powercut cycle``: the whole experiment ``cycles`` times with a listener
    here (as :func:`powercut_listen`: ``bind``, ``port``, ``state``, ``secret_file``): run
    ``start`` (the writer), wait for its first recorded commit, wait a moment drawn from
    ``cut_after`` (seconds, ``"LO..HI"``) with ``seed``, run ``cut`` and ``restore``, then
    ``verify`` until it gives a verdict. Commands are argv strings (:func:`shlex.split`; no
    shell) with placeholders (:mod:`fsyncbench.powercut.cycle`). ``log`` gets each progress
    line (never the secret). Bad input raises
    FsyncbenchError before anything runs; a failing command ends the experiment, said in
    the returned :class:`fsyncbench.powercut.cycle.CycleSummary` (``exit_code``,
    ``verdict``; render it with :func:`fsyncbench.powercut.cycle.format_summary`)."""
    from fsyncbench.powercut.cycle import cycle

    options.check_text(bind, "bind")
    options.check_integer(port, "port")
    options.check_path(state, "state")
    options.check_path(secret_file, "secret_file", optional=True)
    options.check_callback(log, "log", optional=False)
    check_extras((), outputs)
    plan = options.cycle_plan(
        start,
        cut,
        verify,
        restore,
        cycles,
        cut_after,
        seed,
        (start_timeout_s, command_timeout_s, verify_timeout_s, retry_every_s),
    )
    if outputs is not None:
        outputs.check()
    return cycle(
        plan,
        bind=bind,
        port=port,
        state_path=Path(state),
        secret_file=None if secret_file is None else Path(secret_file),
        environ=os.environ,
        log=log,
    )
