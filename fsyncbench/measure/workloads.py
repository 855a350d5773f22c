"""The I/O patterns: a step-journal commit and raw sync primitives.

Workloads write under the user's target directory only inside a fresh subdirectory made by
:func:`fsyncbench.measure.scratch.scratch_dir`, which is removed afterwards. They are this
module, the concurrent writers' commits (:mod:`fsyncbench.measure.lanes`) and the audit's
extra patterns (:mod:`fsyncbench.measure.audit_workloads`): no other code of
:mod:`fsyncbench.measure` writes what is measured.
Each workload has ``prepare(i)`` (untimed: builds the i-th operation's arguments) and
``run(args)`` (the timed operation), so the timing loop in ``measure`` wraps only ``run``.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import sqlite3
import sys
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fsyncbench.errors import FsyncbenchError
from fsyncbench.measure.scratch import scratch_cleanup as scratch_cleanup  # re-exported
from fsyncbench.measure.scratch import scratch_dir as scratch_dir  # (their home is scratch)
from fsyncbench.model import Pragmas

#: Allowed values, from https://www.sqlite.org/pragma.html#pragma_journal_mode and
#: #pragma_synchronous. SQLite silently ignores unknown values, so they are checked here.
JOURNAL_MODES = ("DELETE", "TRUNCATE", "PERSIST", "MEMORY", "WAL", "OFF")
SYNCHRONOUS = ("OFF", "NORMAL", "FULL", "EXTRA")
_SYNCHRONOUS_BY_NUMBER = dict(enumerate(SYNCHRONOUS))

#: fcntl command numbers from macOS <sys/fcntl.h>: F_FULLFSYNC 51, F_BARRIERFSYNC 85
#: (https://developer.apple.com/documentation/xcode/reducing-disk-writes). CPython's fcntl
#: module may lack F_BARRIERFSYNC, hence the fallback number.
F_FULLFSYNC = 51
F_BARRIERFSYNC = 85

#: Size of each raw-primitive overwrite (bytes): one page, as pg_test_fsync and fio's
#: etcd-style check use.
BLOCK_BYTES = 4096

SCHEMA = (
    "CREATE TABLE steps(run_id TEXT, seq INTEGER, name TEXT, input_hash TEXT, output TEXT, "
    "PRIMARY KEY (run_id, seq))"
)
#: One step row into :data:`SCHEMA`'s table (:func:`step_row` builds it).
INSERT_STEP = "INSERT INTO steps VALUES (?, ?, ?, ?, ?)"


def io_error(exc: BaseException, what: str, where: Path | None = None) -> FsyncbenchError:
    """Turn an OSError/sqlite3 error into a one-line FsyncbenchError. ``where`` is the
    working directory the operation wrote in: when it is gone (removed or renamed while
    measuring), that is the cause to name, whatever SQLite calls it ("attempt to write a
    readonly database", SQLITE_READONLY_DBMOVED: https://www.sqlite.org/rescode.html)."""
    text = str(exc)
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC or "disk is full" in text:
        return FsyncbenchError(f"{what}: no space left on the device (ENOSPC)")
    if where is not None and not os.path.isdir(where):
        return FsyncbenchError(
            f"{what}: the working directory {where} is gone (removed or "
            f"renamed while measuring; {text})"
        )
    return FsyncbenchError(f"{what}: {text}")


def settle(directory: Path) -> None:
    """Write back whatever is dirty on ``directory``'s filesystem (untimed, between sampling
    slices), so one workload's unsynced data is not paid for by the next workload's sync.

    Linux: ``syncfs(2)`` on that filesystem only (through ctypes; CPython has no wrapper);
    elsewhere ``sync(2)`` where it exists. Errors are ignored: settling is a courtesy to the
    next measurement, never a reason to fail.
    """
    try:
        if sys.platform.startswith("linux"):
            import ctypes

            fd = os.open(directory, os.O_RDONLY)
            try:
                ctypes.CDLL(None, use_errno=True).syncfs(fd)
            finally:
                os.close(fd)
        elif hasattr(os, "sync"):
            os.sync()
    except (OSError, AttributeError):
        pass


@dataclass(frozen=True)
class SyncPrimitive:
    """A raw sync primitive: its name and the call made on a file descriptor after each
    write, or ``open_flags`` that make every write synchronous itself (O_DSYNC, O_SYNC:
    open(2); pg_test_fsync's open_datasync and open_sync). Neither: the no-sync baseline."""

    name: str
    call: Callable[[int], Any] | None
    open_flags: int = 0

    @property
    def syncs(self) -> bool:
        """True when each operation is a sync (a call after the write, or a sync write)."""
        return self.call is not None or bool(self.open_flags)

    @property
    def result_name(self) -> str:
        """The result's name: ``write+fsync``, ``write (O_DSYNC)``, ``write (no sync)``."""
        if self.call is not None:
            return f"write+{self.name}"
        return f"write ({self.name})" if self.open_flags else "write (no sync)"


def fcntl_refusals(directory: Path, platform: str = sys.platform) -> dict[str, str]:
    """The fcntl sync commands (F_FULLFSYNC, F_BARRIERFSYNC) the volume under ``directory``
    refuses, as {command name: errno name}; {} off macOS or when it accepts both. Some
    network and FUSE filesystems refuse them; SQLite then falls back to fsync
    (full_fsync() in https://www.sqlite.org/src/file/src/os_unix.c: "If the FULLFSYNC
    failed, fall back to attempting an fsync()"). Writes one small probe file inside ``directory`` (a
    scratch directory) and removes it. Raises FsyncbenchError when it cannot (ENOSPC named).
    """
    refused: dict[str, str] = {}
    if platform == "darwin" and sys.platform != "win32":  # (fcntl: the type checker's win32)
        import fcntl

        try:
            fd, path = tempfile.mkstemp(prefix="fcntl-probe-", dir=directory)
            try:
                os.write(fd, b"probe")
                for name, number in _fcntl_commands(fcntl).items():
                    try:
                        fcntl.fcntl(fd, number)
                    except OSError as exc:
                        refused[name] = errno.errorcode.get(exc.errno or 0, str(exc.errno))
            finally:
                os.close(fd)
                os.unlink(path)
        except OSError as exc:
            raise io_error(exc, "probing F_FULLFSYNC", directory) from None
    return refused


def _fcntl_commands(fcntl: Any) -> dict[str, int]:
    return {
        "F_BARRIERFSYNC": getattr(fcntl, "F_BARRIERFSYNC", F_BARRIERFSYNC),
        "F_FULLFSYNC": getattr(fcntl, "F_FULLFSYNC", F_FULLFSYNC),
    }


def refused_name(command: str, errno_name: str) -> str:
    """The primitive measured where the volume refuses ``command``: SQLite's fallback,
    ``fsync (F_FULLFSYNC refused: ENOTSUP)``."""
    return f"fsync ({command} refused: {errno_name})"


def sync_primitives(
    platform: str = sys.platform, refused: dict[str, str] | None = None
) -> tuple[SyncPrimitive, ...]:
    """The raw primitives available on ``platform``, the no-sync baseline first.

    Linux: fsync, fdatasync, and writes on a descriptor opened with O_DSYNC and with O_SYNC
    (open(2): each write returns once the data, and with O_SYNC the metadata, is durable as
    after fdatasync/fsync; the kernel may send it as a FUA write instead of a cache flush).
    macOS: fsync (stops at the drive's cache on Apple SSDs), F_BARRIERFSYNC, F_FULLFSYNC
    (fcntl(2) man page, macOS), O_DSYNC and O_SYNC (which, like fsync, do not flush the
    drive's cache there). Windows: os.fsync is ``_commit`` -> FlushFileBuffers (CPython docs
    for os.fsync). An fcntl command in ``refused`` ({name: errno name},
    :func:`fcntl_refusals`) is measured as SQLite calls it there: the fcntl, and fsync when
    it fails (:func:`refused_name`; SQLite's full_fsync() in src/os_unix.c).
    """
    prims = [SyncPrimitive("none", None)]
    if platform == "win32":
        return (*prims, SyncPrimitive("FlushFileBuffers", os.fsync))
    prims.append(SyncPrimitive("fsync", os.fsync))
    if hasattr(os, "fdatasync"):
        prims.append(SyncPrimitive("fdatasync", os.fdatasync))
    flags = {name: getattr(os, name, 0) for name in ("O_DSYNC", "O_SYNC")}
    for name, flag in flags.items():
        if flag and (name == "O_DSYNC" or flag != flags["O_DSYNC"]):
            prims.append(SyncPrimitive(name, None, flag))
    if platform == "darwin" and sys.platform != "win32":  # (fcntl: the type checker's win32)
        import fcntl

        for name, number in _fcntl_commands(fcntl).items():
            if refused and name in refused:
                call = _fcntl_or_fsync(fcntl.fcntl, number)
                prims.append(SyncPrimitive(refused_name(name, refused[name]), call))
            else:
                prims.append(SyncPrimitive(name, _fcntl_call(fcntl.fcntl, number)))
    return tuple(prims)


def _fcntl_call(fcntl_fn: Callable[[int, int], Any], number: int) -> Callable[[int], Any]:
    return lambda fd: fcntl_fn(fd, number)


def _fcntl_or_fsync(fcntl_fn: Callable[[int, int], Any], number: int) -> Callable[[int], Any]:
    """SQLite's full_fsync(): the fcntl, and fsync when it fails."""

    def call(fd: int) -> None:
        try:
            fcntl_fn(fd, number)
        except OSError:
            os.fsync(fd)

    return call


class FlushWorkload:
    """4 KiB overwrite at offset 0 of one file, then one sync primitive (queue depth 1).

    With ``primitive.call`` None this is the write-only baseline. The file is written and
    fsynced once at open so every timed operation is an overwrite of allocated blocks.
    Raises FsyncbenchError on OS errors (ENOSPC named as such).
    """

    #: File name prefix and the operation's name in error messages (subclasses change them).
    FILE_PREFIX = "flush"
    WHAT = ""

    def __init__(self, directory: Path, primitive: SyncPrimitive) -> None:
        self.primitive = primitive
        self.syncs = 0
        self._buf = os.urandom(BLOCK_BYTES)
        self._dir = directory
        path = directory / f"{self.FILE_PREFIX}-{primitive.name}.dat"
        try:
            self._fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_BINARY", 0), 0o600)
            _pwrite(self._fd, self._buf)
            os.fsync(self._fd)
            self._sync_fd = self._open_sync_fd(path)
            self._write_fd = self._open_write_fd(path)
        except OSError as exc:
            raise io_error(exc, f"preparing {path.name}", directory) from None

    def _open_sync_fd(self, _path: Path) -> int:
        """The descriptor the sync primitive is called on: the writing one."""
        return self._fd

    def _open_write_fd(self, path: Path) -> int:
        """The descriptor timed writes go to: the file opened again with the primitive's
        open flags (O_DSYNC, O_SYNC), or the one it was prepared through."""
        if not self.primitive.open_flags:
            return self._fd
        return os.open(path, os.O_RDWR | self.primitive.open_flags | getattr(os, "O_BINARY", 0))

    def prepare(self, i: int) -> None:
        return None

    def run(self, _args: None) -> None:
        try:
            _pwrite(self._write_fd, self._buf)
            if self.primitive.call is not None:
                self.primitive.call(self._sync_fd)
            if self.primitive.syncs:
                self.syncs += 1
        except OSError as exc:
            raise io_error(exc, f"{self.primitive.result_name}{self.WHAT}", self._dir) from None

    def close(self) -> None:
        for fd in {self._write_fd, self._sync_fd} - {self._fd}:
            os.close(fd)
        os.close(self._fd)


class MemoryFileWrite:
    """4 KiB overwrite at offset 0 of an anonymous in-memory file (``memfd_create(2)``), no
    sync: the same system call as the write baseline with no filesystem or storage behind
    it (the tool's floor for writes and flushes). Linux only: check :meth:`available`."""

    _fd: int

    def __init__(self) -> None:
        self._buf = os.urandom(BLOCK_BYTES)
        if sys.platform == "linux":
            self._fd = os.memfd_create("fsyncbench-floor")
            _pwrite(self._fd, self._buf)
        else:
            raise OSError(errno.ENOSYS, "memfd_create(2) is Linux only")

    @staticmethod
    def available() -> bool:
        return hasattr(os, "memfd_create") and hasattr(os, "pwrite")

    def prepare(self, i: int) -> None:
        return None

    def run(self, _args: None) -> None:
        _pwrite(self._fd, self._buf)  # the write baseline's own call

    def close(self) -> None:
        os.close(self._fd)


def _pwrite(fd: int, buf: bytes) -> None:
    """``buf`` written at offset 0 of ``fd``: pwrite(2), or seek and write on Windows."""
    if sys.platform == "win32":
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, buf)
    else:
        os.pwrite(fd, buf, 0)


class JournalCommit:
    """One commit = BEGIN; INSERT one step row; COMMIT, on a fresh database file.

    The row is a durable-execution step: sha256 input hash and a JSON output of
    ``payload_bytes`` bytes, built in ``prepare`` (untimed). ``effective`` holds the pragmas
    read back after setting them (WAL can silently stay DELETE on some filesystems:
    https://www.sqlite.org/wal.html#sometimes_queries_return_sqlite_busy_in_wal_mode);
    ``checkpoint_fullfsync`` the SQLite build's own setting, read back where fullfsync
    applies (macOS; None elsewhere): it is not set, so the rows measure what an
    application on this SQLite gets.
    Raises FsyncbenchError on SQLite or OS errors (ENOSPC named as such).

    ``directory`` None opens an in-memory database instead (no file, no I/O: the tool's
    floor for a commit; SQLite keeps its journal in memory there, journal_mode MEMORY).
    """

    def __init__(self, directory: Path | None, pragmas: Pragmas, payload_bytes: int) -> None:
        self.requested = pragmas
        self.payload_bytes = payload_bytes
        self._run_id = uuid.uuid4().hex
        self._db_path = (
            Path(":memory:")
            if directory is None
            else directory / f"journal-{pragmas.label.replace('/', '-')}.db"
        )
        try:
            self._conn = sqlite3.connect(str(self._db_path), isolation_level=None)
            self.effective = create_journal(self._conn, pragmas)
            self.checkpoint_fullfsync = (
                read_checkpoint_fullfsync(self._conn) if pragmas.fullfsync is not None else None
            )
        except (sqlite3.Error, OSError) as exc:
            raise io_error(exc, f"opening {self._db_path.name}", directory) from None

    def prepare(self, i: int) -> tuple[str, int, str, str, str]:
        return step_row(self._run_id, i, self.payload_bytes)

    def run(self, row: tuple[str, int, str, str, str]) -> None:
        conn = self._conn
        try:
            conn.execute("BEGIN")
            conn.execute(INSERT_STEP, row)
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise io_error(exc, f"commit on {self.requested.label}", self._db_path.parent) from None

    def close(self) -> None:
        try:
            self._conn.close()
        except sqlite3.Error:  # closing after a failure (its directory gone): nothing to keep
            pass


def step_row(run_id: str, seq: int, payload_bytes: int) -> tuple[str, int, str, str, str]:
    """The ``steps`` row (:data:`SCHEMA`) of commit ``seq``: run id, seq, name, the sha256
    input hash (hex) and :func:`step_output` of ``payload_bytes`` characters."""
    name = f"step-{seq}"
    input_hash = hashlib.sha256(f"{run_id}:{seq}:{name}".encode()).hexdigest()
    return (run_id, seq, name, input_hash, step_output(seq, payload_bytes))


def step_output(seq: int, payload_bytes: int) -> str:
    """A JSON step output padded to ``payload_bytes`` characters (ASCII, so bytes)."""
    head = json.dumps({"seq": seq, "status": "ok", "data": ""})
    pad = max(0, payload_bytes - len(head))
    return json.dumps({"seq": seq, "status": "ok", "data": "x" * pad})


def set_pragmas(conn: sqlite3.Connection, pragmas: Pragmas) -> None:
    """Set ``pragmas`` on ``conn``: fullfsync only where it is given (unset, the SQLite
    build's own setting stands), then the journal mode and synchronous."""
    if pragmas.fullfsync is not None:
        conn.execute(f"PRAGMA fullfsync={'ON' if pragmas.fullfsync else 'OFF'}")
    conn.execute(f"PRAGMA journal_mode={pragmas.journal_mode}")
    conn.execute(f"PRAGMA synchronous={pragmas.synchronous}")


def create_journal(conn: sqlite3.Connection, pragmas: Pragmas) -> Pragmas:
    """A fresh step journal on ``conn``: ``pragmas`` set (:func:`set_pragmas`), the
    ``steps`` table (:data:`SCHEMA`) made; returns the pragmas read back
    (:func:`read_pragmas`: WAL can silently stay DELETE)."""
    set_pragmas(conn, pragmas)
    conn.execute(SCHEMA)
    return read_pragmas(conn, pragmas.fullfsync is not None)


def read_pragmas(conn: sqlite3.Connection, with_fullfsync: bool) -> Pragmas:
    """The pragmas in force on ``conn``, upper-case names as in :data:`JOURNAL_MODES`."""
    mode = conn.execute("PRAGMA journal_mode").fetchone()[0].upper()
    sync = _SYNCHRONOUS_BY_NUMBER.get(conn.execute("PRAGMA synchronous").fetchone()[0], "?")
    full = bool(conn.execute("PRAGMA fullfsync").fetchone()[0]) if with_fullfsync else None
    return Pragmas(mode, sync, full)


def read_checkpoint_fullfsync(conn: sqlite3.Connection) -> bool:
    """``PRAGMA checkpoint_fullfsync`` on ``conn``: whether WAL checkpoints use F_FULLFSYNC
    even with fullfsync off. Off in SQLite's default build, on in Apple's
    (SQLITE_DEFAULT_CKPTFULLFSYNC; https://www.sqlite.org/pragma.html#pragma_checkpoint_fullfsync:
    "F_FULLFSYNC is always used during checkpoint operations if PRAGMA fullfsync is set")."""
    return bool(conn.execute("PRAGMA checkpoint_fullfsync").fetchone()[0])


def sqlite_sync_primitive(
    os_name: str,
    pragmas: Pragmas,
    apple_system_sqlite: bool,
    refused: dict[str, str] | None = None,
    checkpoint_fullfsync: bool | None = None,
) -> str:
    """The sync call SQLite's VFS makes for a commit under ``pragmas`` on ``os_name``.

    From SQLite's os_unix.c/os_win.c (https://www.sqlite.org/src/file/src/os_unix.c):
    synchronous=OFF syncs nothing; on Linux unixSync uses fdatasync (strace of SQLite 3.40
    here shows only fdatasync calls); on macOS fullfsync=ON uses F_FULLFSYNC, except Apple's
    system SQLite, which uses F_BARRIERFSYNC; otherwise fsync; Windows: FlushFileBuffers.
    A command the volume refuses (``refused``, :func:`fcntl_refusals`) is followed by
    SQLite's fsync fallback (:func:`refused_name`).
    WAL with synchronous=NORMAL syncs only when it checkpoints, not at each commit. On macOS
    a WAL checkpoint uses F_FULLFSYNC when fullfsync or ``checkpoint_fullfsync`` (read back,
    :func:`read_checkpoint_fullfsync`) is on: "F_FULLFSYNC (checkpoints only)" for
    WAL/NORMAL, "fsync (F_FULLFSYNC at checkpoints)" for other WAL rows without fullfsync.
    """
    if pragmas.synchronous == "OFF":
        return "none"
    at_checkpoints = ""
    if os_name == "Darwin":
        full = "F_BARRIERFSYNC" if apple_system_sqlite else "F_FULLFSYNC"
        if refused and full in refused:
            full = refused_name(full, refused[full])
        name = full if pragmas.fullfsync else "fsync"
        if pragmas.journal_mode == "WAL" and checkpoint_fullfsync and not pragmas.fullfsync:
            at_checkpoints = full
    elif os_name == "Windows":
        name = "FlushFileBuffers"
    else:
        name = "fdatasync"
    if pragmas.journal_mode == "WAL" and pragmas.synchronous == "NORMAL":
        # https://www.sqlite.org/pragma.html#pragma_synchronous
        return f"{at_checkpoints or name} (checkpoints only)"
    return f"{name} ({at_checkpoints} at checkpoints)" if at_checkpoints else name


def per_commit_sync(primitive: str) -> bool:
    """Whether a commit's sync primitive (:func:`sqlite_sync_primitive`) runs on every
    commit: not "none", and not one that runs only at checkpoints (WAL at
    synchronous=NORMAL: "fdatasync (checkpoints only)")."""
    return primitive != "none" and "checkpoints only" not in primitive
