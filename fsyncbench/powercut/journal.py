"""The journal on disk after the reboot, read as the application would read it: SQLite's
own recovery first (a hot rollback journal rolled back, a WAL replayed), then ``PRAGMA
integrity_check`` and the run's rows, each checked against what the writer committed
(:func:`.run.make_row`). What it holds is a :class:`JournalState`, which
:mod:`.judgement` compares with the listener's record.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fsyncbench.errors import FsyncbenchError
from fsyncbench.powercut import ranges as R
from fsyncbench.powercut.run import make_row

INTEGRITY_MAX_ERRORS = 100


@dataclass(frozen=True)
class JournalState:
    """What the journal on disk holds for one run (read after SQLite's own recovery)."""

    path: str
    exists: bool
    error: str | None
    present: tuple[tuple[int, int], ...]
    damaged: tuple[tuple[int, int], ...]
    integrity: tuple[str, ...]
    note: str | None = None

    @property
    def intact(self) -> bool:
        return self.exists and self.error is None and self.integrity == ("ok",)


def read_journal(
    db_path: Path, run_id: str, payload_bytes: int | None, busy_timeout_s: float = 5.0
) -> JournalState:
    """Open the journal as the application would after a reboot (read-write, so SQLite
    rolls back a hot journal or replays its WAL; never creates a missing file), run
    ``PRAGMA integrity_check`` and read the run's rows. Rows whose content is not what the
    writer committed count as damaged (``payload_bytes`` None: the output is not checked).

    A corrupt file (SQLITE_CORRUPT, SQLITE_NOTADB) is a finding, recorded in ``error``; any
    other failure (permissions, a read-only mount, I/O errors) is not evidence about the
    power cut and raises FsyncbenchError.
    """
    if not db_path.is_file():
        return JournalState(str(db_path), False, None, (), (), ())
    present: list[int] = []
    damaged: list[int] = []
    integrity: tuple[str, ...] = ()
    error = note = None
    conn = None
    try:
        conn = sqlite3.connect(
            db_path.resolve().as_uri() + "?mode=rw",
            uri=True,
            isolation_level=None,
            timeout=busy_timeout_s,
        )
        integrity = tuple(
            str(r[0]) for r in conn.execute(f"PRAGMA integrity_check({INTEGRITY_MAX_ERRORS})")
        )
        rows = conn.execute(
            "SELECT seq, name, input_hash, output FROM steps WHERE run_id=? ORDER BY seq", (run_id,)
        )
        for seq, name, input_hash, output in rows:
            if type(seq) is not int or seq < 1:
                continue
            present.append(seq)
            want = make_row(run_id, seq, payload_bytes or 1)
            if (name, input_hash) != want[2:4] or not _output_ok(
                seq, output, payload_bytes, want[4]
            ):
                damaged.append(seq)
    except sqlite3.Error as exc:
        if _is_corruption(exc):
            error = str(exc)
        elif "no such table" in str(exc):
            note = "the steps table is missing: the database is empty"
        else:
            raise FsyncbenchError(f"cannot read the journal {db_path}: {exc}") from None
    finally:
        if conn is not None:
            conn.close()
    return JournalState(
        str(db_path),
        True,
        error,
        tuple(R.to_ranges(present)),
        tuple(R.to_ranges(damaged)),
        integrity,
        note,
    )


#: SQLite result codes that mean the file itself is damaged (https://www.sqlite.org/rescode.html).
_SQLITE_CORRUPT, _SQLITE_NOTADB = 11, 26


def _is_corruption(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)  # Python >= 3.11
    if code is not None:
        return code & 0xFF in (_SQLITE_CORRUPT, _SQLITE_NOTADB)
    text = str(exc)
    return "malformed" in text or "not a database" in text


def _output_ok(seq: int, output: Any, payload_bytes: int | None, want: str) -> bool:
    if payload_bytes is not None:
        return bool(output == want)  # a SQLite column value: == already gives a bool
    try:
        return isinstance(output, str) and json.loads(output).get("seq") == seq
    except (ValueError, AttributeError):
        return False
