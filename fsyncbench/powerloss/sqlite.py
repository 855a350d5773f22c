"""SQLite through apsw: a VFS that records every file operation of a commit, and opening a
rebuilt crash state as an application would. The only module that imports apsw.

apsw (https://rogerbinns.github.io/apsw/vfs.html) exposes SQLite's VFS interface to Python:
:class:`_RecordingFile` inherits every method from the default VFS (the unix VFS on Linux
and macOS, win32 on Windows) and logs writes, truncations, syncs (with their flags),
creations and deletions before passing them on. Shared-memory calls (the WAL index) are not
exposed to Python by apsw and go straight to the default VFS; the -shm file is rebuilt by
WAL recovery and holds nothing durable (https://www.sqlite.org/walformat.html#shm).

Directory syncs the unix VFS makes internally cannot be seen by a Python shim and are
modelled (src/os_unix.c, https://sqlite.org/src/file?name=src/os_unix.c): unixOpen sets
UNIXFILE_DIRSYNC on a rollback journal, super-journal or WAL opened with SQLITE_OPEN_CREATE,
and unixSync fsyncs the directory after the first sync of that file; unixDelete fsyncs the
directory after an unlink when SQLite asks for it (``syncDir``, which the pager sets for the
journal at synchronous=EXTRA: https://www.sqlite.org/pragma.html#pragma_synchronous). None
of it happens when SQLite was built with SQLITE_DISABLE_DIRSYNC (then none is modelled).
"""

from __future__ import annotations

import itertools
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw

from fsyncbench.errors import FsyncbenchError
from fsyncbench.measure.workloads import SCHEMA, step_row
from fsyncbench.model import Pragmas
from fsyncbench.powerloss.trace import Op, Trace

#: Open-flag bits (https://www.sqlite.org/c3ref/c_open_autoproxy.html).
_OPEN_CREATE = 0x00000004
_OPEN_MAIN_DB = 0x00000100
_OPEN_MAIN_JOURNAL = 0x00000800
_OPEN_SUPER_JOURNAL = 0x00004000
_OPEN_WAL = 0x00080000
#: Files whose first sync also syncs their directory (os_unix.c, unixOpen: ``syncDir``).
_DIRSYNC_TYPES = _OPEN_MAIN_JOURNAL | _OPEN_SUPER_JOURNAL | _OPEN_WAL

_names = itertools.count()

#: A planted fault for tests: called with the 0-based number of each sync; False skips it.
SyncFilter = Callable[[int], bool]


def versions() -> dict[str, str]:
    """The SQLite the recordings use (apsw's own build) and apsw's version."""
    return {"sqlite": apsw.sqlite_lib_version(), "apsw": apsw.apsw_version()}


def dirsync_compiled_in() -> bool:
    """False when apsw's SQLite was built with SQLITE_DISABLE_DIRSYNC."""
    return "DISABLE_DIRSYNC" not in apsw.compile_options


def _role(flags: int) -> str:
    if flags & _OPEN_MAIN_DB:
        return "main-db"
    if flags & (_OPEN_MAIN_JOURNAL | _OPEN_SUPER_JOURNAL):
        return "journal"
    if flags & _OPEN_WAL:
        return "wal"
    return "other"


class _Log:
    """What the recording VFS saw, shared by its files."""

    def __init__(
        self, directory: Path, sync_filter: SyncFilter | None, sink: Callable[[Op], None] | None
    ) -> None:
        self.directory = directory
        self.ops: list[Op] = []
        self.roles: dict[str, str] = {}
        self.sync_filter = sync_filter
        self.sink = sink
        self.syncs_seen = 0
        # the directory syncs are the unix VFS's, modelled on every platform so a trace
        # recorded anywhere can be cut under any semantics; win32's VFS makes none
        # (src/os_win.c), which the windows semantics honour by ignoring them
        self.dirsync = dirsync_compiled_in()

    def add(self, op: Op) -> None:
        self.ops.append(op)
        if self.sink is not None:
            self.sink(op)

    def tracked(self, path: str | None) -> str | None:
        """The file's name if it lives in the recorded directory, else None."""
        if path is None or Path(path).parent != self.directory:
            return None
        return Path(path).name


class _RecordingFile(apsw.VFSFile):
    def __init__(self, log: _Log, name: Any, flags: list[int]) -> None:
        path = name.filename() if name is not None and hasattr(name, "filename") else name
        self._log = log
        self._name = log.tracked(path)
        existed = path is not None and os.path.exists(path)
        super().__init__("", name, flags)
        self._dirsync_pending = False
        if self._name is not None:
            log.roles[self._name] = _role(flags[0])
            if not existed:
                log.add(Op("create", self._name))
            self._dirsync_pending = bool(
                log.dirsync and flags[0] & _OPEN_CREATE and flags[0] & _DIRSYNC_TYPES
            )

    def xWrite(self, data: bytes, offset: int) -> None:
        super().xWrite(data, offset)
        if self._name is not None:
            self._log.add(Op("write", self._name, offset_bytes=offset, data=bytes(data)))

    def xTruncate(self, newsize: int) -> None:
        super().xTruncate(newsize)
        if self._name is not None:
            self._log.add(Op("truncate", self._name, size_bytes=newsize))

    def xSync(self, flags: int) -> None:
        log = self._log
        number = log.syncs_seen
        log.syncs_seen += 1
        if log.sync_filter is not None and not log.sync_filter(number):
            return  # the planted fault: acknowledged, never issued
        super().xSync(flags)
        if self._name is not None:
            log.add(Op("sync", self._name, flags=flags))
            if self._dirsync_pending:
                log.add(Op("dirsync"))
        self._dirsync_pending = False


class _RecordingVFS(apsw.VFS):
    def __init__(self, log: _Log) -> None:
        self.log = log
        self.vfs_name = f"fsyncbench-record-{os.getpid()}-{next(_names)}"
        super().__init__(self.vfs_name, "")

    def xOpen(self, name: Any, flags: list[int]) -> _RecordingFile:
        return _RecordingFile(self.log, name, flags)

    def xDelete(self, filename: str, syncdir: bool) -> None:
        super().xDelete(filename, syncdir)
        name = self.log.tracked(filename)
        if name is not None:
            self.log.add(Op("delete", name))
            if syncdir and self.log.dirsync:
                self.log.add(Op("dirsync"))


def _uri(path: Path, psow: bool) -> str:
    """A file: URI with SQLite's ``psow`` parameter (https://www.sqlite.org/uri.html)."""
    from urllib.parse import quote

    return f"file:{quote(str(path))}?psow={int(psow)}"


def _connect(path: Path, psow: bool, vfs: str = "") -> apsw.Connection:
    flags = apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE | apsw.SQLITE_OPEN_URI
    if vfs:
        return apsw.Connection(_uri(path, psow), flags=flags, vfs=vfs)
    return apsw.Connection(_uri(path, psow), flags=flags)


class Recorder:
    """A recording VFS over the default one, for SQLite files in ``directory`` (resolved,
    absolute). Use as a context manager (the VFS is unregistered on exit).

    ``ops``: the operations so far (:class:`~fsyncbench.powerloss.trace.Op`, in issue
    order); :meth:`mark` adds an ``ack`` or ``barrier``; ``sink`` (optional) receives every
    op as it happens, e.g. to stream it out of a process that may be killed;
    ``sync_filter`` plants a fault: it is called with the 0-based number of each sync and a
    False skips that sync (it is then neither issued nor recorded)."""

    def __init__(
        self,
        directory: Path,
        sync_filter: SyncFilter | None = None,
        sink: Callable[[Op], None] | None = None,
    ) -> None:
        self._log = _Log(directory, sync_filter, sink)
        self._vfs = _RecordingVFS(self._log)

    @property
    def ops(self) -> list[Op]:
        return self._log.ops

    @property
    def roles(self) -> dict[str, str]:
        """File name -> role (:data:`~fsyncbench.powerloss.trace.ROLES`)."""
        return self._log.roles

    @property
    def dirsync_modelled(self) -> bool:
        return self._log.dirsync

    def mark(self, op: Op) -> None:
        """Add a marker op (``ack``, ``barrier``) at this point of the trace."""
        self._log.add(op)

    def connect(self, path: Path, psow: bool = True) -> apsw.Connection:
        """An apsw connection to ``path`` through the recording VFS."""
        return _connect(path, psow, self._vfs.vfs_name)

    def close(self) -> None:
        self._vfs.unregister()

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def record_commits(
    directory: Path,
    pragmas: Pragmas,
    commits: int,
    payload_bytes: int,
    psow: bool,
    sync_filter: SyncFilter | None = None,
    wal_autocheckpoint: int | None = None,
) -> Trace:
    """Record the step journal's commits (``run``'s workload: BEGIN; INSERT one step row;
    COMMIT) on a new database in ``directory`` (an empty scratch directory).

    Setup (pragmas, CREATE TABLE) is recorded and closed by a ``barrier``; then ``commits``
    commits, each followed by an ``ack``; then the connection closes (a WAL checkpoint).
    ``psow``: SQLite's powersafe-overwrite assumption (https://www.sqlite.org/psow.html).
    ``sync_filter`` plants a fault (tests). ``wal_autocheckpoint``: PRAGMA
    wal_autocheckpoint in WAL pages (None: SQLite's default; it is set before the setup,
    so the setup's frames count too). Raises FsyncbenchError when SQLite fails or
    keeps another journal_mode than asked (WAL needs shared memory)."""
    # SQLite names files by their resolved path; apsw also fails on the unix VFS's
    # SQLITE_OK_SYMLINK from xFullPathname, so a symlinked path must never reach it
    directory = directory.resolve()
    db = directory / f"journal-{pragmas.label.replace('/', '-')}.db"
    run_id = uuid.uuid4().hex
    rows: list[tuple[int, tuple[str, int, str, str, str]]] = []
    with Recorder(directory, sync_filter) as rec:
        try:
            conn = rec.connect(db, psow)
            try:
                if pragmas.fullfsync is not None:
                    conn.execute(f"PRAGMA fullfsync={'ON' if pragmas.fullfsync else 'OFF'}")
                mode = conn.execute(f"PRAGMA journal_mode={pragmas.journal_mode}").fetchall()
                if str(mode[0][0]).upper() != pragmas.journal_mode:
                    raise FsyncbenchError(
                        f"SQLite kept journal_mode {mode[0][0]} when asked for "
                        f"{pragmas.journal_mode} in {directory}"
                    )
                conn.execute(f"PRAGMA synchronous={pragmas.synchronous}")
                if wal_autocheckpoint is not None:
                    conn.execute(f"PRAGMA wal_autocheckpoint={int(wal_autocheckpoint)}")
                conn.execute(SCHEMA)
                rec.mark(Op("barrier"))
                for seq in range(1, commits + 1):
                    row = step_row(run_id, seq, payload_bytes)
                    conn.execute("BEGIN")
                    conn.execute("INSERT INTO steps VALUES (?, ?, ?, ?, ?)", row)
                    conn.execute("COMMIT")
                    rec.mark(Op("ack", seq=seq))
                    rows.append((seq, row))
            finally:
                conn.close()
        except apsw.Error as exc:
            raise FsyncbenchError(f"recording {pragmas.label} in {directory}: {exc}") from None
    if db.name not in rec.roles or not any(op.kind == "write" for op in rec.ops):
        raise FsyncbenchError(
            f"the recording VFS saw none of SQLite's writes to {db} (paths it reported: "
            f"{', '.join(sorted(rec.roles)) or 'none'}); nothing can be simulated from it"
        )
    return Trace(
        pragmas=pragmas,
        ops=tuple(rec.ops),
        roles=tuple(sorted(rec.roles.items())),
        db_name=db.name,
        rows=tuple(rows),
        psow=psow,
        dirsync_modelled=rec.dirsync_modelled,
        sqlite_version=apsw.sqlite_lib_version(),
    )


#: The statement :func:`open_state` checks a state with (a module constant so a test can
#: plant a checker that never finds corruption and see the known-corrupt states catch it).
INTEGRITY_CHECK = "PRAGMA integrity_check"


def open_state(directory: Path, db_name: str, psow: bool) -> tuple[dict[int, tuple[Any, ...]], str]:
    """Open a rebuilt crash state in ``directory`` as an application would: SQLite rolls
    back a hot journal or recovers the WAL on first access (https://www.sqlite.org/
    atomiccommit.html#hot_journals, https://www.sqlite.org/wal.html#recovery), then
    ``PRAGMA integrity_check`` and read every ``steps`` row.

    Returns (seq -> row, problem): problem is "" for a sound database, else why it is
    corrupt or unopenable (integrity_check's first line, SQLite's error, a missing table)."""
    try:
        conn = _connect(directory / db_name, psow)
    except apsw.Error as exc:
        return {}, f"cannot open: {exc}"
    try:
        check = [str(r[0]) for r in conn.execute(INTEGRITY_CHECK)]
        if check != ["ok"]:
            return {}, f"integrity_check: {check[0]}"
        if not conn.execute("SELECT 1 FROM sqlite_schema WHERE name = 'steps'").fetchall():
            return {}, "the steps table is gone (it was durable before the first commit)"
        rows = conn.execute("SELECT run_id, seq, name, input_hash, output FROM steps")
        return {int(r[1]): tuple(r) for r in rows}, ""
    except apsw.Error as exc:
        return {}, f"{type(exc).__name__}: {exc}"
    finally:
        conn.close()


def root_page(db: Path, table: str) -> int:
    """The root page number of ``table`` in the database file ``db``, opened read-only
    (``sqlite_schema.rootpage``, https://www.sqlite.org/schematab.html); 0 when the file
    cannot be read or has no such table."""
    try:
        conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    except apsw.Error:
        return 0
    try:
        rows = conn.execute("SELECT rootpage FROM sqlite_schema WHERE name = ?", (table,))
        found = [r[0] for r in rows.fetchall()]
        return found[0] if found and isinstance(found[0], int) else 0
    except apsw.Error:
        return 0
    finally:
        conn.close()
