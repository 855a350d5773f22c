"""The I/O patterns: a step-journal commit and raw sync primitives.

This is the only module that writes under the user's target directory, and it writes only
inside a fresh subdirectory made by :func:`scratch_dir`, which it removes afterwards.
Each workload has ``prepare(i)`` (untimed: builds the i-th operation's arguments) and
``run(args)`` (the timed operation), so the timing loop in ``measure`` wraps only ``run``.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
import sqlite3
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fsyncbench.errors import FsyncbenchError
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


def _io_error(exc: BaseException, what: str) -> FsyncbenchError:
    """Turn an OSError/sqlite3 error into a one-line FsyncbenchError."""
    text = str(exc)
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC or "disk is full" in text:
        return FsyncbenchError(f"{what}: no space left on the device (ENOSPC)")
    return FsyncbenchError(f"{what}: {text}")


@contextlib.contextmanager
def scratch_dir(target: Path) -> Iterator[Path]:
    """A fresh ``.fsyncbench-*`` subdirectory of ``target``, removed on exit (also on error
    and KeyboardInterrupt). Raises FsyncbenchError if it cannot be made."""
    try:
        path = Path(tempfile.mkdtemp(prefix=".fsyncbench-", dir=target))
    except OSError as exc:
        raise FsyncbenchError(f"cannot create a working directory in {target}: {exc.strerror}")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@dataclass(frozen=True)
class SyncPrimitive:
    """A raw sync primitive: its name and the call made on a file descriptor."""

    name: str
    call: Callable[[int], Any] | None


def sync_primitives(platform: str = sys.platform) -> tuple[SyncPrimitive, ...]:
    """The raw primitives available on ``platform``, the no-sync baseline first.

    Linux: fsync, fdatasync. macOS: fsync (stops at the drive's cache on Apple SSDs),
    F_BARRIERFSYNC, F_FULLFSYNC (fcntl(2) man page, macOS). Windows: os.fsync is
    ``_commit`` -> FlushFileBuffers (CPython docs for os.fsync).
    """
    prims = [SyncPrimitive("none", None)]
    if platform == "win32":
        return (*prims, SyncPrimitive("FlushFileBuffers", os.fsync))
    prims.append(SyncPrimitive("fsync", os.fsync))
    if hasattr(os, "fdatasync"):
        prims.append(SyncPrimitive("fdatasync", os.fdatasync))
    if platform == "darwin":
        import fcntl

        full = getattr(fcntl, "F_FULLFSYNC", F_FULLFSYNC)
        barrier = getattr(fcntl, "F_BARRIERFSYNC", F_BARRIERFSYNC)
        prims.append(SyncPrimitive("F_BARRIERFSYNC", lambda fd: fcntl.fcntl(fd, barrier)))
        prims.append(SyncPrimitive("F_FULLFSYNC", lambda fd: fcntl.fcntl(fd, full)))
    return tuple(prims)


class FlushWorkload:
    """4 KiB overwrite at offset 0 of one file, then one sync primitive (queue depth 1).

    With ``primitive.call`` None this is the write-only baseline. The file is written and
    fsynced once at open so every timed operation is an overwrite of allocated blocks.
    """

    def __init__(self, directory: Path, primitive: SyncPrimitive) -> None:
        self.primitive = primitive
        self.syncs = 0
        self._buf = os.urandom(BLOCK_BYTES)
        path = directory / f"flush-{primitive.name}.dat"
        try:
            self._fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_BINARY", 0), 0o600)
            _pwrite(self._fd, self._buf)
            os.fsync(self._fd)
        except OSError as exc:
            raise _io_error(exc, f"preparing {path.name}") from None

    def prepare(self, i: int) -> None:
        return None

    def run(self, _args: None) -> None:
        try:
            _pwrite(self._fd, self._buf)
            if self.primitive.call is not None:
                self.primitive.call(self._fd)
                self.syncs += 1
        except OSError as exc:
            raise _io_error(exc, f"write+{self.primitive.name}") from None

    def close(self) -> None:
        os.close(self._fd)


def _pwrite(fd: int, buf: bytes) -> None:
    if hasattr(os, "pwrite"):
        os.pwrite(fd, buf, 0)
    else:  # Windows
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, buf)


class JournalCommit:
    """One commit = BEGIN; INSERT one step row; COMMIT, on a fresh database file.

    The row is a durable-execution step: sha256 input hash and a JSON output of
    ``payload_bytes`` bytes, built in ``prepare`` (untimed). ``effective`` holds the pragmas
    read back after setting them (WAL can silently stay DELETE on some filesystems:
    https://www.sqlite.org/wal.html#sometimes_queries_return_sqlite_busy_in_wal_mode).
    Raises FsyncbenchError on SQLite or OS errors (ENOSPC named as such).
    """

    def __init__(self, directory: Path, pragmas: Pragmas, payload_bytes: int) -> None:
        self.requested = pragmas
        self.payload_bytes = payload_bytes
        self._run_id = uuid.uuid4().hex
        self._db_path = directory / f"journal-{pragmas.label.replace('/', '-')}.db"
        try:
            self._conn = sqlite3.connect(self._db_path, isolation_level=None)
            if pragmas.fullfsync is not None:
                self._conn.execute(f"PRAGMA fullfsync={'ON' if pragmas.fullfsync else 'OFF'}")
            self._conn.execute(f"PRAGMA journal_mode={pragmas.journal_mode}")
            self._conn.execute(f"PRAGMA synchronous={pragmas.synchronous}")
            self._conn.execute(SCHEMA)
            self.effective = read_pragmas(self._conn, pragmas.fullfsync is not None)
            self._insert = "INSERT INTO steps VALUES (?, ?, ?, ?, ?)"
        except (sqlite3.Error, OSError) as exc:
            raise _io_error(exc, f"opening {self._db_path.name}") from None

    def prepare(self, i: int) -> tuple[str, int, str, str, str]:
        name = f"step-{i}"
        input_hash = hashlib.sha256(f"{self._run_id}:{i}:{name}".encode()).hexdigest()
        return (self._run_id, i, name, input_hash, step_output(i, self.payload_bytes))

    def run(self, row: tuple[str, int, str, str, str]) -> None:
        conn = self._conn
        try:
            conn.execute("BEGIN")
            conn.execute(self._insert, row)
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise _io_error(exc, f"commit on {self.requested.label}") from None

    def close(self) -> None:
        self._conn.close()


def step_output(seq: int, payload_bytes: int) -> str:
    """A JSON step output padded to ``payload_bytes`` characters (ASCII, so bytes)."""
    head = json.dumps({"seq": seq, "status": "ok", "data": ""})
    pad = max(0, payload_bytes - len(head))
    return json.dumps({"seq": seq, "status": "ok", "data": "x" * pad})


def read_pragmas(conn: sqlite3.Connection, with_fullfsync: bool) -> Pragmas:
    """The pragmas in force on ``conn``, upper-case names as in :data:`JOURNAL_MODES`."""
    mode = conn.execute("PRAGMA journal_mode").fetchone()[0].upper()
    sync = _SYNCHRONOUS_BY_NUMBER.get(conn.execute("PRAGMA synchronous").fetchone()[0], "?")
    full = bool(conn.execute("PRAGMA fullfsync").fetchone()[0]) if with_fullfsync else None
    return Pragmas(mode, sync, full)


def sqlite_sync_primitive(os_name: str, pragmas: Pragmas, apple_system_sqlite: bool) -> str:
    """The sync call SQLite's VFS makes for a commit under ``pragmas`` on ``os_name``.

    From SQLite's os_unix.c/os_win.c (https://www.sqlite.org/src/file/src/os_unix.c):
    synchronous=OFF syncs nothing; on Linux unixSync uses fdatasync (strace of SQLite 3.40
    here shows only fdatasync calls); on macOS fullfsync=ON uses F_FULLFSYNC, except Apple's
    system SQLite, which uses F_BARRIERFSYNC; otherwise fsync; Windows: FlushFileBuffers.
    WAL with synchronous=NORMAL syncs only when it checkpoints, not at each commit.
    """
    if pragmas.synchronous == "OFF":
        return "none"
    if os_name == "Darwin":
        name = ("F_BARRIERFSYNC" if apple_system_sqlite else "F_FULLFSYNC") if pragmas.fullfsync else "fsync"
    elif os_name == "Windows":
        name = "FlushFileBuffers"
    else:
        name = "fdatasync"
    if pragmas.journal_mode == "WAL" and pragmas.synchronous == "NORMAL":
        return f"{name} (checkpoints only)"  # https://www.sqlite.org/pragma.html#pragma_synchronous
    return name
