"""The listener's durable record of every commit a writer reports: an SQLite database (WAL,
synchronous=FULL: each recorded batch is synced before the writer hears ``recorded``;
https://www.sqlite.org/pragma.html#pragma_synchronous), so the record survives a listener
crash or restart.

A run is recorded for the one writer identity (host, dir, config, pid, start time) its first
``hello`` named: a ``hello`` reusing the run id with another identity is a
:class:`Conflict`, so one writer cannot add to another's record. The record holds at most
:data:`MAX_RUNS` runs (a hostile peer cannot grow it without bound).
"""

from __future__ import annotations

import datetime as _dt
import sqlite3
import threading
from pathlib import Path
from typing import Any

from fsyncbench.errors import FsyncbenchError

STATE_FORMAT = "fsyncbench-powercut-listener"
STATE_VERSION = 1
#: Most runs one state file takes (a hostile peer cannot grow it without bound).
MAX_RUNS = 10_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs(
    run_id TEXT PRIMARY KEY, host TEXT NOT NULL, dir TEXT NOT NULL, config TEXT NOT NULL,
    pid INTEGER NOT NULL, started_utc TEXT NOT NULL, first_seen_utc TEXT NOT NULL,
    last_seen_utc TEXT NOT NULL, peer TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS acks(
    run_id TEXT NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY (run_id, seq)) WITHOUT ROWID;
"""
_IDENTITY = ("host", "dir", "config", "pid", "started_utc")


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Conflict(Exception):
    """A hello the record cannot take: its run id belongs to another writer, or the
    record is full."""


class ListenerState:
    """The durable record (thread-safe: one connection behind a lock).

    Raises FsyncbenchError when ``path`` cannot be opened or is not a listener state.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA busy_timeout=5000")
            tables = {
                r[0] for r in self._db.execute("SELECT name FROM sqlite_master WHERE type='table'")
            }
            if tables and "meta" not in tables:
                raise FsyncbenchError(
                    f"{path} is not an fsyncbench powercut listener state; not touching it"
                )
            mode = self._db.execute("PRAGMA journal_mode=WAL").fetchone()[0].upper()
            # Without WAL (some network filesystems) EXTRA also syncs the directory after
            # the rollback journal is deleted, which is the commit point in DELETE mode.
            self._db.execute("PRAGMA synchronous=" + ("FULL" if mode == "WAL" else "EXTRA"))
            self._db.executescript(_SCHEMA)
            meta = dict(self._db.execute("SELECT key, value FROM meta"))
            if not meta:
                self._db.execute("BEGIN IMMEDIATE")
                self._db.executemany(
                    "INSERT INTO meta VALUES (?, ?)",
                    [("format", STATE_FORMAT), ("version", str(STATE_VERSION))],
                )
                self._db.execute("COMMIT")
            elif meta.get("format") != STATE_FORMAT:
                raise FsyncbenchError(f"{path} is not an fsyncbench powercut listener state")
            elif not meta.get("version", "").isdigit() or int(meta["version"]) > STATE_VERSION:
                raise FsyncbenchError(
                    f"{path} was written by a newer fsyncbench (state version "
                    f"{meta.get('version')}): upgrade fsyncbench"
                )
        except sqlite3.Error as exc:
            raise FsyncbenchError(f"cannot open listener state {path}: {exc}") from None

    # ---------------------------------------------------------------- writes

    def register(self, hello: dict[str, Any], peer: str) -> tuple[int, int]:
        """Record (or re-admit) the writer of ``hello``; returns (count, max_seq) already
        recorded. Raises Conflict if the run id belongs to another writer."""
        run_id = hello["run_id"]
        now = utc_now()
        with self._lock:
            if self._known(hello):
                self._tx(
                    "UPDATE runs SET last_seen_utc=?, peer=? WHERE run_id=?", (now, peer, run_id)
                )
            else:
                if self._db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] >= MAX_RUNS:
                    raise Conflict(
                        f"this listener's record already holds {MAX_RUNS} runs; "
                        "start one with a new --state file"
                    )
                self._tx(
                    "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (run_id, *(hello[k] for k in _IDENTITY), now, now, peer),
                )
            return self._count(run_id)

    def check_writer(self, hello: dict[str, Any]) -> None:
        """Raises Conflict if ``hello``'s run id is recorded for another writer."""
        with self._lock:
            self._known(hello)

    def _known(self, hello: dict[str, Any]) -> bool:
        """True if the run is recorded for this writer, False if it is new; Conflict if it
        is recorded for another (lock held)."""
        run_id = hello["run_id"]
        row = self._db.execute(
            "SELECT host, dir, config, pid, started_utc FROM runs WHERE run_id=?", (run_id,)
        ).fetchone()
        if row is None:
            return False
        known = dict(zip(_IDENTITY, row))
        differ = [k for k in _IDENTITY if known[k] != hello[k]]
        if differ:
            raise Conflict(
                f"run id {run_id} is recorded for another writer (host {known['host']}, "
                f"dir {known['dir']}, config {known['config']}, pid {known['pid']}); "
                f"{', '.join(differ)} differ"
            )
        return True

    def _tx(self, sql: str, params: tuple[Any, ...]) -> None:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.execute(sql, params)
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    def record(self, run_id: str, spans: list[tuple[int, int]]) -> None:
        """Durably record the commits in ``spans`` (one transaction; duplicates ignored).
        Raises sqlite3.Error; then nothing of ``spans`` is recorded."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany(
                    "INSERT OR IGNORE INTO acks VALUES (?, ?)",
                    ((run_id, s) for a, b in spans for s in range(a, b + 1)),
                )
                self._db.execute(
                    "UPDATE runs SET last_seen_utc=? WHERE run_id=?", (utc_now(), run_id)
                )
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise

    # ---------------------------------------------------------------- reads

    def _count(self, run_id: str) -> tuple[int, int]:
        n, top = self._db.execute(
            "SELECT COUNT(*), COALESCE(MAX(seq), 0) FROM acks WHERE run_id=?", (run_id,)
        ).fetchone()
        return n, top

    def run(self, run_id: str) -> dict[str, Any] | None:
        """The run's record as a ``run`` message body, or None."""
        snap = self.snapshot(run_id)
        return snap[0] if snap else None

    def snapshot(self, run_id: str) -> tuple[dict[str, Any], list[tuple[int, int]]] | None:
        """(``run`` message body, recorded commits as ascending ranges), read under one
        lock hold so the count always matches the ranges; None for an unknown run."""
        with self._lock:
            row = self._db.execute(
                "SELECT run_id, host, dir, config, pid, started_utc, first_seen_utc, "
                "last_seen_utc FROM runs WHERE run_id=?",
                (run_id,),
            ).fetchone()
            if row is None:
                return None
            out: list[tuple[int, int]] = []
            for (s,) in self._db.execute(
                "SELECT seq FROM acks WHERE run_id=? ORDER BY seq", (run_id,)
            ):
                if out and s == out[-1][1] + 1:
                    out[-1] = (out[-1][0], s)
                else:
                    out.append((s, s))
        keys = ("run_id", *_IDENTITY, "first_seen_utc", "last_seen_utc")
        info = {
            **dict(zip(keys, row)),
            "count": sum(b - a + 1 for a, b in out),
            "max_seq": out[-1][1] if out else 0,
        }
        return info, out

    def run_ids(self) -> list[str]:
        with self._lock:
            return [
                r[0] for r in self._db.execute("SELECT run_id FROM runs ORDER BY first_seen_utc")
            ]

    def summary(self) -> tuple[int, int]:
        """(runs, recorded commits) in the whole state."""
        with self._lock:
            runs = self._db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
            acks = self._db.execute("SELECT COUNT(*) FROM acks").fetchone()[0]
        return runs, acks

    def close(self) -> None:
        with self._lock:
            self._db.close()
