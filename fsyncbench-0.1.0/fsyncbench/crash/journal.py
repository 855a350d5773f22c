"""Step runners: the step journal with its non-determinism check and idempotency keys, and
the plain runner the other policies use."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from fsyncbench.crash.results import NonDeterminismError

# --------------------------------------------------------------------------------------------
# Step runners: the journal, and the plain runner the other policies use

Point = Callable[[int, str], None]


class StateConnection(Protocol):
    """What the journal and the checkpoints use of a connection to the agent's state
    database: a :class:`sqlite3.Connection` opened with ``isolation_level=None``, or under a
    simulated power loss apsw's through a recording VFS (:mod:`fsyncbench.crash.power`).
    ``execute`` returns a cursor to iterate or ``fetchone``."""

    @property
    def in_transaction(self) -> bool: ...

    def execute(self, sql: str, parameters: Any = ..., /) -> Any: ...

    def close(self) -> None: ...


def _no_point(seq: int, window: str) -> None:
    return None


def input_hash(args: Sequence[Any]) -> str:
    """sha256 hex of a step's arguments as canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(list(args), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


class StepRunner:
    """Runs steps in order without recording them (no persistence, checkpoint per turn).

    ``step(name, fn, *args)`` numbers the step (``start_seq`` + 1, ...), calls ``point(seq,
    window)`` at each kill window and returns ``fn(*args)``. ``executed``/``replayed`` count
    steps run and steps answered from a record.
    """

    def __init__(self, run_id: str, *, start_seq: int = 0, point: Point = _no_point) -> None:
        self.run_id = run_id
        self.seq = start_seq
        self.point = point
        self.executed = 0
        self.replayed = 0
        self._active_seq: int | None = None

    def idempotency_key(self) -> str | None:
        """The key the running step sends with a write; None: this policy sends none."""
        return None

    @property
    def active_seq(self) -> int:
        """Sequence number of the step being executed."""
        if self._active_seq is None:
            raise RuntimeError("no step is executing")
        return self._active_seq

    def step(self, name: str, fn: Callable[..., Any], *args: Any) -> Any:
        self.seq += 1
        return self._execute(self.seq, name, "", fn, args)

    def _execute(self, seq: int, name: str, digest: str, fn: Callable[..., Any], args: Any) -> Any:
        self.point(seq, "before")
        self._active_seq = seq
        try:
            output = fn(*args)
        finally:
            self._active_seq = None
        self.point(seq, "effect")
        self._record(seq, name, digest, output)
        self.executed += 1
        self.point(seq, "recorded")
        return output

    def _record(self, seq: int, name: str, digest: str, output: Any) -> None:
        return None


class Journal(StepRunner):
    """The step journal: ``steps(run_id, seq, name, input_hash, output)`` on ``conn``.

    ``step(name, fn, *args)`` returns the recorded output (JSON) when step ``seq`` of
    ``run_id`` is recorded, and raises :class:`NonDeterminismError` when the recorded name or
    input hash differs from ``name``/``input_hash(args)``. Otherwise it runs ``fn(*args)``
    and commits one row (BEGIN, INSERT, COMMIT; each commit's ``perf_counter_ns`` duration is
    appended to ``commit_ns``). With ``idempotency_keys`` the running step's
    :meth:`idempotency_key` is ``"run_id:seq"``. The table must exist
    (:data:`fsyncbench.measure.workloads.SCHEMA`).
    """

    def __init__(
        self,
        conn: StateConnection,
        run_id: str,
        *,
        idempotency_keys: bool = False,
        point: Point = _no_point,
        commit_ns: list[int] | None = None,
    ) -> None:
        super().__init__(run_id, point=point)
        self.conn = conn
        self.idempotency_keys = idempotency_keys
        self.commit_ns = commit_ns if commit_ns is not None else []
        self._recorded = {
            seq: (name, digest, output)
            for seq, name, digest, output in conn.execute(
                "SELECT seq, name, input_hash, output FROM steps WHERE run_id=?", (run_id,)
            )
        }

    def idempotency_key(self) -> str | None:
        return f"{self.run_id}:{self.active_seq}" if self.idempotency_keys else None

    def step(self, name: str, fn: Callable[..., Any], *args: Any) -> Any:
        self.seq += 1
        seq = self.seq
        digest = input_hash(args)
        recorded = self._recorded.get(seq)
        if recorded is not None:
            rec_name, rec_digest, output = recorded
            if rec_name != name or rec_digest != digest:
                raise NonDeterminismError(seq, rec_name, name, rec_digest, digest)
            self.replayed += 1
            return json.loads(output)
        return self._execute(seq, name, digest, fn, args)

    def _record(self, seq: int, name: str, digest: str, output: Any) -> None:
        row = (self.run_id, seq, name, digest, json.dumps(output, sort_keys=True))
        conn = self.conn
        try:
            start = time.perf_counter_ns()
            conn.execute("BEGIN")
            conn.execute("INSERT INTO steps VALUES (?, ?, ?, ?, ?)", row)
            conn.execute("COMMIT")
            self.commit_ns.append(time.perf_counter_ns() - start)
        except sqlite3.Error:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        self._recorded[seq] = row[2:]
