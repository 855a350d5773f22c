"""The powercut commands of the Python API: ``fsyncbench powercut listen``, ``write`` and
``verify`` (a real power cut between a writer and a listener on another machine), each one
call that checks its arguments, does the work in :mod:`fsyncbench.powercut` and returns its
result or raises :class:`~fsyncbench.errors.FsyncbenchError`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from fsyncbench import options
from fsyncbench.api.measuring import PathLike, check_extras, command_line_of
from fsyncbench.measure.plan import DEFAULT_PAYLOAD_BYTES
from fsyncbench.options import Outputs

if TYPE_CHECKING:  # for annotations only: each is imported where it is used
    from fsyncbench.powercut.verify import VerifyOutcome
    from fsyncbench.powercut.writer import WriterStatus, WriterSummary

__all__ = ["powercut_listen", "powercut_verify", "powercut_write"]


def powercut_listen(
    bind: str = "127.0.0.1",
    port: int = 5400,
    state: PathLike = "fsyncbench-powercut-listener.db",
    *,
    log: Callable[[str], None] = lambda _line: None,
    ready: Callable[[tuple[str, int]], None] | None = None,
) -> None:
    """``fsyncbench powercut listen``: record what writers report, durably in the SQLite
    file ``state``, until SIGINT/SIGTERM; ``log`` gets each status line, ``ready`` the bound
    (address, port) (:func:`fsyncbench.powercut.listen`)."""
    from fsyncbench import powercut

    options.check_text(bind, "bind")
    options.check_integer(port, "port")
    options.check_path(state, "state")
    options.check_callback(log, "log", optional=False)
    options.check_callback(ready, "ready")
    powercut.listen(bind, port, Path(state), log, ready)


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
) -> WriterSummary:
    """``fsyncbench powercut write``: commit journal rows in ``target`` and report each to the
    listener at ``to`` (HOST:PORT) once COMMIT returned, until ``max_commits`` or a stop;
    ``status`` gets a :class:`fsyncbench.powercut.writer.WriterStatus` now and then, ``log``
    each event line. Returns the WriterSummary (render it with :func:`render`)."""
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
    return powercut.write(
        address,
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
) -> VerifyOutcome:
    """``fsyncbench powercut verify``: check every commit the ``listener`` (HOST:PORT)
    recorded for the run ``run_id`` (default: the newest in ``target``) against its journal,
    and save the report (kind "powercut") in ``report_dir``. Returns the
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
    return powercut.verify(
        address, path, run_id, Path(report_dir), list(command_line_of(command_line))
    )
