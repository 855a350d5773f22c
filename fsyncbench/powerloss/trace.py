"""What SQLite did to its files while committing: the recorded trace of one configuration.

A :class:`Trace` is the ordered list of :class:`Op` a recording VFS saw (plus the directory
syncs SQLite's unix VFS makes internally, modelled explicitly), and the rows each commit
wrote, so a crash state can be rebuilt and checked without SQLite's help. Pure data: the
recorder (:mod:`fsyncbench.powerloss.sqlite`) builds it, the persistence models
(:mod:`fsyncbench.powerloss.models`) read it.
"""

from __future__ import annotations

from dataclasses import dataclass

from fsyncbench.model import Pragmas

#: Op kinds. ``create``/``delete`` change the directory; ``write``/``truncate`` a file;
#: ``sync`` is SQLite's xSync of one file (``flags``: SQLITE_SYNC_NORMAL 2 or FULL 3, plus
#: DATAONLY 0x10: https://www.sqlite.org/c3ref/c_sync_dataonly.html); ``dirsync`` is the
#: fsync of the database's directory; ``ack`` marks a COMMIT that returned (an acknowledged
#: commit, ``seq`` its step); ``barrier`` ends the setup: everything before it is durable
#: (as if the database had been created long ago and the machine had synced since).
OP_KINDS = ("create", "delete", "write", "truncate", "sync", "dirsync", "ack", "barrier")

#: SQLITE_SYNC_FULL (https://www.sqlite.org/c3ref/c_sync_dataonly.html): SQLite passes it
#: when PRAGMA fullfsync (or checkpoint_fullfsync) is on; on macOS only this flag makes the
#: unix VFS call fcntl(F_FULLFSYNC) (src/os_unix.c, full_fsync()).
SQLITE_SYNC_FULL = 3

#: File roles from SQLite's open flags (https://www.sqlite.org/c3ref/c_open_autoproxy.html).
ROLES = ("main-db", "journal", "wal", "other")


@dataclass(frozen=True)
class Op:
    """One file operation, in issue order.

    ``file`` is the file's name inside the database's directory ("" for ``dirsync``,
    ``ack`` and ``barrier``); ``offset_bytes``/``data`` for ``write``; ``size_bytes`` for
    ``truncate``; ``flags`` for ``sync``; ``seq`` for ``ack``."""

    kind: str
    file: str = ""
    offset_bytes: int = 0
    data: bytes = b""
    size_bytes: int = 0
    flags: int = 0
    seq: int = -1

    def describe(self) -> str:
        """A short human line: ``write journal-x.db-wal @8272 +24 B``."""
        if self.kind == "write":
            return f"write {self.file} @{self.offset_bytes} +{len(self.data)} B"
        if self.kind == "truncate":
            return f"truncate {self.file} to {self.size_bytes} B"
        if self.kind == "sync":
            full = "FULL" if self.flags & 0x0F == SQLITE_SYNC_FULL else "NORMAL"
            return f"sync {self.file} ({full})"
        if self.kind == "ack":
            return f"commit {self.seq} acknowledged"
        return f"{self.kind} {self.file}".rstrip()


@dataclass(frozen=True)
class Trace:
    """The recorded trace of one configuration.

    ``ops``: every operation in order; ``roles``: file name -> one of :data:`ROLES`;
    ``db_name``: the database file's name; ``rows``: commit seq -> the row it inserted (the
    ``steps`` table's columns, :data:`fsyncbench.measure.workloads.SCHEMA`); ``psow``:
    whether SQLite was told that writes are powersafe overwrites
    (https://www.sqlite.org/psow.html); ``dirsync_modelled``: False where SQLite was built
    with SQLITE_DISABLE_DIRSYNC (no directory syncs to model); ``sqlite_version``: the
    SQLite that made the trace (apsw's)."""

    pragmas: Pragmas
    ops: tuple[Op, ...]
    roles: tuple[tuple[str, str], ...]
    db_name: str
    rows: tuple[tuple[int, tuple[str, int, str, str, str]], ...]
    psow: bool
    dirsync_modelled: bool
    sqlite_version: str

    @property
    def barrier_index(self) -> int:
        """Index of the ``barrier`` op (the end of setup); -1 if none."""
        for i, op in enumerate(self.ops):
            if op.kind == "barrier":
                return i
        return -1

    def count(self, kind: str) -> int:
        """How many ops of ``kind`` after the barrier."""
        return sum(1 for op in self.ops[self.barrier_index + 1 :] if op.kind == kind)

    def checkpoints(self) -> int:
        """WAL mode: the checkpoints after the barrier, the close's included: each run of
        writes to the database file (in WAL mode only a checkpoint writes it,
        https://www.sqlite.org/wal.html#checkpointing); 0 in the other journal modes."""
        if self.pragmas.journal_mode != "WAL":
            return 0
        runs, inside = 0, False
        for op in self.ops[self.barrier_index + 1 :]:
            if op.kind in ("write", "truncate") and op.file == self.db_name:
                runs += not inside
                inside = True
            elif op.kind in ("write", "truncate", "create", "delete", "ack"):
                inside = False
        return runs

    def wal_restarts(self) -> int:
        """WAL mode: the times the WAL started over after the barrier: its header
        rewritten at offset 0 (a WAL reset after a complete checkpoint,
        https://www.sqlite.org/walformat.html#the_wal_header)."""
        wal = {name for name, role in self.roles if role == "wal"}
        return sum(
            1
            for op in self.ops[self.barrier_index + 1 :]
            if op.kind == "write" and op.file in wal and op.offset_bytes == 0
        )
