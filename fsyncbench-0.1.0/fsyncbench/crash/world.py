"""The outside world the agent acts on, as one SQLite database."""

from __future__ import annotations

import sqlite3
from pathlib import Path

# --------------------------------------------------------------------------------------------
# Outside world


class World:
    """The outside world (ticketing, paging, status page and the model provider's meter) as
    one SQLite database.

    ``write`` with a key deduplicates on it (the first row with that key wins and its id is
    returned again); without a key every call is a new row. The world's own durability is
    not under test (a SIGKILL of the agent keeps the page cache), so it runs WAL with
    ``synchronous=OFF``.
    """

    SCHEMA = (
        "CREATE TABLE IF NOT EXISTS billing(id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, "
        "seq INTEGER NOT NULL, model TEXT NOT NULL, tokens INTEGER NOT NULL)",
        "CREATE TABLE IF NOT EXISTS effects(id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, "
        "seq INTEGER NOT NULL, kind TEXT NOT NULL, payload TEXT NOT NULL, "
        "idempotency_key TEXT UNIQUE)",
        "CREATE TABLE IF NOT EXISTS alerts(service TEXT, signal TEXT, since TEXT)",
    )

    def __init__(self, path: Path) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None, timeout=30)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=OFF")

    @classmethod
    def create(cls, path: Path) -> None:
        """Make the world's tables and seed the alert the agent investigates."""
        world = cls(path)
        try:
            for statement in cls.SCHEMA:
                world.conn.execute(statement)
            world.conn.execute(
                "INSERT INTO alerts VALUES ('checkout', 'p99 latency 2.3 s', '2024-05-01T09:12Z')"
            )
        finally:
            world.close()

    def close(self) -> None:
        self.conn.close()

    def bill(self, run_id: str, seq: int, model: str, tokens: int) -> None:
        """Meter one model call (never deduplicated: tokens spent are spent)."""
        self.conn.execute(
            "INSERT INTO billing(run_id, seq, model, tokens) VALUES (?, ?, ?, ?)",
            (run_id, seq, model, tokens),
        )

    def write(self, run_id: str, seq: int, kind: str, payload: str, key: str | None) -> int:
        """One write (ticket, page, status); returns its id, the existing one for a known key."""
        if key is None:
            cur = self.conn.execute(
                "INSERT INTO effects(run_id, seq, kind, payload) VALUES (?, ?, ?, ?)",
                (run_id, seq, kind, payload),
            )
            rowid = cur.lastrowid
            assert rowid is not None  # set by every successful INSERT
            return int(rowid)
        self.conn.execute(
            "INSERT OR IGNORE INTO effects(run_id, seq, kind, payload, idempotency_key) "
            "VALUES (?, ?, ?, ?, ?)",
            (run_id, seq, kind, payload, key),
        )
        return int(
            self.conn.execute("SELECT id FROM effects WHERE idempotency_key=?", (key,)).fetchone()[
                0
            ]
        )

    def alerts(self, service: str) -> list[dict[str, str]]:
        rows = self.conn.execute(
            "SELECT service, signal, since FROM alerts WHERE service=? ORDER BY rowid", (service,)
        )
        return [{"service": a, "signal": b, "since": c} for a, b, c in rows]

    def latest_status(self, run_id: str) -> str | None:
        row = self.conn.execute(
            "SELECT payload FROM effects WHERE run_id=? AND kind='status' ORDER BY id DESC LIMIT 1",
            (run_id,),
        ).fetchone()
        return row[0] if row else None

    def writes_by_run(self) -> dict[str, int]:
        return dict(self.conn.execute("SELECT run_id, COUNT(*) FROM effects GROUP BY run_id"))

    def tokens_by_run(self) -> dict[str, int]:
        return dict(self.conn.execute("SELECT run_id, SUM(tokens) FROM billing GROUP BY run_id"))

    def calls_by_run(self) -> dict[str, int]:
        return dict(self.conn.execute("SELECT run_id, COUNT(*) FROM billing GROUP BY run_id"))
