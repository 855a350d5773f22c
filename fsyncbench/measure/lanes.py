"""The lanes of concurrent writers (``run --writers``): the step journal the writers share,
made once (:func:`create_lane_database`), each writer's own connection to it
(:func:`open_lane`) and its commits, each timed from ``BEGIN`` to the end of ``COMMIT`` with
its wait for the write lock (:func:`commit_lane`).

Each writer is a process of its own (the processes and their barrier:
:mod:`fsyncbench.measure.writers`). Like every workload (:mod:`fsyncbench.measure.workloads`),
a lane writes under the user's target only inside a
:func:`fsyncbench.measure.scratch.scratch_dir` directory.
"""

from __future__ import annotations

import contextlib
import sqlite3
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from fsyncbench.measure.workloads import (
    INSERT_STEP,
    create_journal,
    io_error,
    set_pragmas,
    step_row,
)
from fsyncbench.model import Pragmas

#: SQLite's primary result code for "database is locked" (https://www.sqlite.org/rescode.html#busy).
SQLITE_BUSY = 5


@dataclass
class LaneSamples:
    """What one writer recorded (ns; :class:`fsyncbench.model.WriterLane` is the report's
    form): per commit its start after ``start_ns``, its latency and its wait for the lock."""

    starts: list[int]
    latencies: list[int]
    lock_waits: list[int]
    busy_errors: int = 0
    abandoned: int = 0
    abandoned_start_ns: int = 0
    abandoned_wait_ns: int = 0
    error: str = ""


def _is_busy(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return int(code) & 0xFF == SQLITE_BUSY
    return "locked" in str(exc) or "busy" in str(exc)


def open_lane(db: Path, pragmas: Pragmas, busy_timeout_ms: int) -> sqlite3.Connection:
    """A writer's own connection to the shared step journal ``db`` (made by the caller,
    :func:`create_lane_database`) under ``pragmas``, with SQLite's busy timeout set.
    Raises FsyncbenchError."""
    try:
        conn = sqlite3.connect(str(db), isolation_level=None, timeout=busy_timeout_ms / 1000)
        set_pragmas(conn, pragmas)
        conn.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        return conn
    except (sqlite3.Error, OSError) as exc:
        raise io_error(exc, f"opening {db.name} for a writer", db.parent) from None


def create_lane_database(db: Path, pragmas: Pragmas) -> Pragmas:
    """Make the step journal the writers share (its journal mode set once: WAL is a
    property of the file) and return the pragmas read back. Raises FsyncbenchError."""
    try:
        conn = sqlite3.connect(str(db), isolation_level=None)
        try:
            return create_journal(conn, pragmas)
        finally:
            conn.close()
    except (sqlite3.Error, OSError) as exc:
        raise io_error(exc, f"creating {db.name}", db.parent) from None


def commit_lane(
    conn: sqlite3.Connection,
    writer: int,
    begin: str,
    steps_per_commit: int,
    payload_bytes: int,
    start_ns: int,
    stop_ns: int,
    clock: Callable[[], int],
) -> LaneSamples:
    """Commit ``steps_per_commit`` step rows per transaction on ``conn`` from ``start_ns``
    until ``stop_ns`` (``clock`` readings: time.perf_counter_ns, one clock for every
    process of the machine). Each commit is timed from ``BEGIN`` (``begin``: "immediate"
    or "deferred") to the end of ``COMMIT``; its lock wait runs until the write lock is held
    (``BEGIN IMMEDIATE`` returned, or the first INSERT under ``BEGIN``). An SQLITE_BUSY
    error (the busy timeout ran out, or a deferred transaction could not upgrade) rolls back
    and retries within the same commit; once ``stop_ns`` has passed, a commit that gets
    SQLITE_BUSY is abandoned instead. Raises FsyncbenchError on any other SQLite error."""
    out = LaneSamples([], [], [])
    statement = "BEGIN IMMEDIATE" if begin == "immediate" else "BEGIN"
    run_id = f"writer-{writer}-{uuid.uuid4().hex}"
    seq = 0
    while clock() < start_ns:
        pass
    while True:
        rows = [step_row(run_id, seq + k, payload_bytes) for k in range(steps_per_commit)]
        t0 = clock()
        if t0 >= stop_ns:
            break
        locked = 0
        while True:
            try:
                conn.execute(statement)
                if begin == "immediate":
                    locked = clock()
                for k, row in enumerate(rows):
                    conn.execute(INSERT_STEP, row)
                    if k == 0 and begin != "immediate":
                        locked = clock()
                conn.execute("COMMIT")
                break
            except sqlite3.Error as exc:
                if conn.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        conn.execute("ROLLBACK")
                if not _is_busy(exc):
                    raise io_error(exc, f"writer {writer}'s commit", None) from None
                out.busy_errors += 1
                if clock() >= stop_ns:
                    out.abandoned += 1
                    out.abandoned_start_ns = t0 - start_ns
                    out.abandoned_wait_ns = clock() - t0
                    return out
        t1 = clock()
        out.starts.append(t0 - start_ns)
        out.latencies.append(t1 - t0)
        out.lock_waits.append(locked - t0)
        seq += steps_per_commit
    return out
