"""The listener: the second machine's durable record of every commit a writer reports.

State is an SQLite database (WAL, synchronous=FULL: each recorded batch is synced before
the writer hears ``recorded``; https://www.sqlite.org/pragma.html#pragma_synchronous), so
the record survives a listener crash or restart. A connection is served only once its
peer proved the listener's secret (the handshake of :mod:`.protocol`, checked in constant
time by :func:`.secret.proof_ok`); a wrong or missing proof is refused with one ``error``, a
log line without the secret, and the connection closed. Each connection is bound to the one
run its ``hello`` named; an ``ack`` for any other run is rejected; a ``hello`` reusing a
recorded run id with a different writer identity (host, dir, config, pid, start time) is
rejected, so one writer cannot add to another's record; and a ``hello`` for a run still
bound to another open connection is rejected (:data:`~.protocol.RUN_BUSY`), so at most one
connection records a run at a time. Once that connection has closed, the same writer may
say ``hello`` again: a writer reconnects after a network failure or a listener restart.

Bounded everywhere: lines (:data:`~protocol.MAX_LINE_BYTES`), commits per ack, connections
(:data:`MAX_CONNECTIONS`), time to the end of the handshake (:data:`AUTH_TIMEOUT_S`), idle
time per connection (:data:`IDLE_TIMEOUT_S`), rejected messages per connection
(:data:`MAX_REJECTS`). A bad message is answered with ``error`` and
a log line; nothing a peer sends ends the listener.
"""

from __future__ import annotations

import datetime as _dt
import ipaddress
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from fsyncbench.errors import FsyncbenchError
from fsyncbench.powercut import protocol
from fsyncbench.powercut.protocol import MAX_RANGES_PER_LINE, ProtocolError, encode
from fsyncbench.powercut.run import install_stop_handlers, restore_handlers
from fsyncbench.powercut.secret import (
    ENV_VAR,
    ListenerStart,
    Secret,
    listener_secret,
    loose_permissions,
    new_nonce,
    proof_ok,
    write_secret_file,
)

STATE_FORMAT = "fsyncbench-powercut-listener"
STATE_VERSION = 1
MAX_CONNECTIONS = 32
#: Most runs one state file takes (a hostile peer cannot grow it without bound).
MAX_RUNS = 10_000
#: A writer pings every few seconds when it has nothing to report (writer.PING_EVERY_S).
IDLE_TIMEOUT_S = 120.0
#: A peer that has not proven the secret by then is closed (it holds a connection slot).
AUTH_TIMEOUT_S = 30.0
MAX_REJECTS = 20
#: Bounded lingering close after a protocol violation.
LINGER_S = 1.0
LINGER_BYTES = 1 << 20
#: Connections over the limit being told so at once; beyond that they are just closed.
MAX_REFUSING = 4
#: How often a connection logs its progress when new commits arrived.
PROGRESS_EVERY_S = 10.0

Log = Callable[[str], None]

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


def _linger_close(sock: socket.socket) -> None:
    """Half-close, then discard what the peer still sends (at most LINGER_BYTES, for at
    most LINGER_S): closing with unread data would reset the connection and could destroy
    the error reply before the peer reads it."""
    try:
        sock.shutdown(socket.SHUT_WR)
        sock.settimeout(LINGER_S)
        deadline = time.monotonic() + LINGER_S
        drained = 0
        while drained < LINGER_BYTES and time.monotonic() < deadline:
            chunk = sock.recv(65536)
            if not chunk:
                break
            drained += len(chunk)
    except OSError:
        pass


class _Bindings:
    """Which open connection records each run (at most one per run)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.holders: dict[str, _Connection] = {}

    def release(self, run_id: str, conn: _Connection) -> None:
        with self.lock:
            if self.holders.get(run_id) is conn:
                del self.holders[run_id]


class _Connection:
    """One peer: the handshake first, then reads bounded lines, answers each message,
    records acks durably."""

    def __init__(
        self,
        sock: socket.socket,
        peer: str,
        state: ListenerState,
        log: Log,
        secret: Secret,
        bindings: _Bindings,
        idle_timeout_s: float = IDLE_TIMEOUT_S,
        auth_timeout_s: float = AUTH_TIMEOUT_S,
    ) -> None:
        self.sock = sock
        self.idle_timeout_s = idle_timeout_s
        self.auth_timeout_s = auth_timeout_s
        self.peer = peer
        self.state = state
        self.log = log
        self.secret = secret
        self.bindings = bindings
        self.nonce: str | None = None
        self.authenticated = False
        self.run_id: str | None = None
        self.rejects = 0
        self.recorded_here = 0
        self.top = 0
        self._logged_at = time.monotonic()
        self._logged_top = 0

    def serve(self) -> None:
        why = "disconnected"
        try:
            self.sock.settimeout(self.auth_timeout_s)
            why = self._serve()
        finally:
            if self.run_id:
                self.bindings.release(self.run_id, self)
                self.log(
                    f"run {self.run_id}: writer {self.peer} {why}; {self.recorded_here} "
                    f"commits recorded on this connection, highest seq {self.top}"
                )

    def _serve(self) -> str:
        """Answer until the peer leaves; returns how the connection ended."""
        reader = protocol.LineReader(self.sock, protocol.MAX_LINE_BYTES)
        while True:
            try:
                lines = reader.recv_lines()
            except TimeoutError:
                if not self.authenticated:
                    self.log(
                        f"refused {self.peer}: no handshake within {self.auth_timeout_s:g} s; "
                        "connection closed"
                    )
                    return "closed before the handshake"
                return f"idle for {self.idle_timeout_s:g} s (power cut?), connection closed"
            except OSError as exc:
                return f"connection lost ({exc.strerror or exc})"
            if lines is None:
                return "disconnected"
            if not self._answer(lines):
                return "connection closed after an error"
            if reader.oversized:
                self.log(
                    f"rejected message from {self.peer}: a message of {reader.oversized}+ "
                    f"bytes exceeds the {protocol.MAX_LINE_BYTES}-byte limit; closing the "
                    "connection"
                )
                self._send([self._error("message too long; closing the connection")])
                self._linger_close()
                return "connection closed after an oversized message"
            if self.rejects >= MAX_REJECTS:
                self.log(f"{self.peer}: {self.rejects} rejected messages; closing the connection")
                self._linger_close()
                return "connection closed after too many rejected messages"
            self._maybe_log_progress()

    def _linger_close(self) -> None:
        _linger_close(self.sock)

    def _error(self, text: str) -> bytes:
        return encode("error", protocol.MAX_REPLY_BYTES, error=text[: protocol.MAX_ERROR_CHARS])

    def _reject(self, text: str) -> bytes:
        self.rejects += 1
        self.log(f"rejected message from {self.peer}: {text}")
        return self._error(text)

    def _answer(self, lines: list[bytes]) -> bool:
        """Handle one batch of lines; acks are recorded in one transaction before any
        reply is sent. False when the connection should close."""
        replies: list[bytes | tuple[int, int]] = []
        spans: list[tuple[int, int]] = []
        for line in lines:
            if not line.strip():
                continue
            if not self.authenticated:
                reply, ok = self._handshake(line)
                replies.append(reply)
                if not ok:
                    self._send(replies)  # type: ignore[arg-type]  # no span before auth
                    self._linger_close()
                    return False
                continue
            try:
                msg = protocol.decode(line, protocol.TO_LISTENER)
            except ProtocolError as exc:
                replies.append(self._reject(str(exc)))
                continue
            kind = msg["type"]
            if kind == "ack":
                if msg["run_id"] != self.run_id:
                    replies.append(
                        self._reject(
                            f"ack for run {msg['run_id']} on a connection "
                            + (f"bound to run {self.run_id}" if self.run_id else "without hello")
                        )
                    )
                    continue
                span = (msg["from"], msg["to"])
                spans.append(span)
                replies.append(span)
            elif kind in ("start", "auth"):
                replies.append(self._reject(f"{kind}: this connection is already authenticated"))
            elif kind == "hello":
                replies.append(self._hello(msg))
            elif kind == "ping":
                replies.append(encode("pong"))
            elif kind == "query":
                replies.extend(self._query(msg["run_id"]))
            elif kind == "list":
                ids = self.state.run_ids()
                infos = [self.state.run(i) for i in ids]
                replies.extend(encode("run", protocol.MAX_REPLY_BYTES, **i) for i in infos if i)
                replies.append(encode("end", items=len(infos), total=len(infos)))
        if spans:
            assert self.run_id is not None
            try:
                self.state.record(self.run_id, spans)
            except sqlite3.Error as exc:
                self.log(f"run {self.run_id}: CANNOT RECORD commits from {self.peer}: {exc}")
                replies = [r for r in replies if not isinstance(r, tuple)]
                replies.append(self._error(f"the listener cannot record: {exc}"))
                self._send(replies)  # type: ignore[arg-type]
                return False
            for a, b in spans:
                self.recorded_here += b - a + 1
                self.top = max(self.top, b)
        out = [
            encode("recorded", run_id=self.run_id, **{"from": r[0], "to": r[1]})
            if isinstance(r, tuple)
            else r
            for r in replies
        ]
        return self._send(out)

    def _handshake(self, line: bytes) -> tuple[bytes, bool]:
        """One line before the peer is authenticated: (reply, False to close)."""
        try:
            msg = protocol.decode(line, protocol.TO_LISTENER)
        except ProtocolError as exc:
            return self._refuse(str(exc)), False
        want = "start" if self.nonce is None else "auth"
        if msg["type"] != want:
            return self._refuse(
                f"not authenticated: a connection starts with {want!r}, the handshake that "
                f"proves the listener's secret, not {msg['type']!r}"
            ), False
        if self.nonce is None:
            self.nonce = new_nonce()
            return encode("challenge", nonce=self.nonce), True
        if not proof_ok(self.secret, self.nonce, msg["proof"]):
            return self._refuse(
                "wrong secret: give write and verify the secret this listener printed "
                "when it started (the file it named, or FSYNCBENCH_POWERCUT_SECRET)"
            ), False
        self.authenticated = True
        self.sock.settimeout(self.idle_timeout_s)
        return encode("authenticated"), True

    def _refuse(self, text: str) -> bytes:
        """The error that ends an unauthenticated connection, logged (the text never holds
        the secret or the peer's proof)."""
        self.log(f"refused {self.peer}: {text}; connection closed")
        return self._error(text)

    def _hello(self, msg: dict[str, Any]) -> bytes:
        if self.run_id and self.run_id != msg["run_id"]:
            return self._reject(f"this connection already said hello for run {self.run_id}")
        with self.bindings.lock:
            try:
                self.state.check_writer(msg)  # another writer's run: say so first
                other = self.bindings.holders.get(msg["run_id"])
                if other is not None and other is not self:
                    return self._reject(
                        f"{protocol.RUN_BUSY} (from {other.peer}); a second writer for run "
                        f"{msg['run_id']} is refused while it is open"
                    )
                count, top = self.state.register(msg, self.peer)
            except Conflict as exc:
                return self._reject(str(exc))
            self.bindings.holders[msg["run_id"]] = self
        if self.run_id is None:
            what = "resumed" if count else "started"
            self.log(
                f"run {msg['run_id']}: writer {self.peer} {what} (host {msg['host']}, dir "
                f"{msg['dir']}, {msg['config']}, pid {msg['pid']}); {count} commits on "
                "record"
            )
        self.run_id = msg["run_id"]
        self.top = max(self.top, top)
        self._logged_top = self.top
        return encode("welcome", run_id=msg["run_id"], count=count, max_seq=top)

    def _query(self, run_id: str) -> Iterator[bytes]:
        snap = self.state.snapshot(run_id)
        if snap is None:
            yield self._error(f"no record of run {run_id} here")
            return
        info, ranges = snap
        yield encode("run", protocol.MAX_REPLY_BYTES, **info)
        for i in range(0, len(ranges), MAX_RANGES_PER_LINE):
            chunk = [list(r) for r in ranges[i : i + MAX_RANGES_PER_LINE]]
            yield encode("ranges", protocol.MAX_REPLY_BYTES, run_id=run_id, ranges=chunk)
        yield encode("end", items=len(ranges), total=sum(b - a + 1 for a, b in ranges))

    def _send(self, replies: list[bytes]) -> bool:
        if not replies:
            return True
        try:
            self.sock.sendall(b"".join(replies))
            return True
        except OSError as exc:
            self.log(f"{self.peer}: cannot answer ({exc.strerror or exc}); closing the connection")
            return False

    def _maybe_log_progress(self) -> None:
        now = time.monotonic()
        if (
            self.run_id
            and self.top > self._logged_top
            and now - self._logged_at >= PROGRESS_EVERY_S
        ):
            self.log(f"run {self.run_id}: recorded up to seq {self.top}")
            self._logged_at, self._logged_top = now, self.top


class Listener:
    """Accepts writers and verifiers; one thread per connection (at most MAX_CONNECTIONS)."""

    def __init__(
        self,
        state: ListenerState,
        bind: str,
        port: int,
        log: Log,
        secret: Secret,
        idle_timeout_s: float = IDLE_TIMEOUT_S,
        auth_timeout_s: float = AUTH_TIMEOUT_S,
    ) -> None:
        self.state = state
        self.log = log
        self.secret = secret
        self.idle_timeout_s = idle_timeout_s
        self.auth_timeout_s = auth_timeout_s
        self._bindings = _Bindings()
        family = socket.AF_INET6 if ":" in bind else socket.AF_INET
        try:
            self.sock = socket.create_server((bind, port), family=family, backlog=16)
        except OSError as exc:
            raise FsyncbenchError(
                f"cannot listen on {protocol.format_address(bind, port)}: {exc.strerror or exc}"
            ) from None
        self.sock.settimeout(0.5)
        self.address = self.sock.getsockname()[:2]
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self._refusals = threading.BoundedSemaphore(MAX_REFUSING)
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        self._threads: list[threading.Thread] = []

    def serve(self, stop: threading.Event) -> None:
        """Accept until ``stop`` is set; then close every connection."""
        try:
            while not stop.is_set():
                try:
                    conn, addr = self.sock.accept()
                except TimeoutError:
                    continue
                except OSError as exc:  # e.g. EMFILE: keep serving the others
                    self.log(f"accept failed: {exc.strerror or exc}")
                    time.sleep(0.1)
                    continue
                peer = protocol.format_address(addr[0], addr[1])
                if not self._slots.acquire(blocking=False):
                    self.log(f"refused {peer}: {MAX_CONNECTIONS} connections already open")
                    if self._refusals.acquire(blocking=False):
                        threading.Thread(target=self._refuse, args=(conn,), daemon=True).start()
                    else:
                        conn.close()
                    continue
                thread = threading.Thread(
                    target=self._run, args=(conn, peer), daemon=True, name=f"powercut-{peer}"
                )
                self._threads = [t for t in self._threads if t.is_alive()]
                self._threads.append(thread)
                thread.start()
        finally:
            self.close()

    def _refuse(self, conn: socket.socket) -> None:
        """Tell a peer over the connection limit, then close it without a reset."""
        try:
            conn.settimeout(LINGER_S)
            conn.sendall(encode("error", error=protocol.TOO_MANY_CONNECTIONS))
            _linger_close(conn)
        except OSError:
            pass
        finally:
            conn.close()
            self._refusals.release()

    def _run(self, conn: socket.socket, peer: str) -> None:
        with self._open_lock:
            self._open.add(conn)
        try:
            _Connection(
                conn,
                peer,
                self.state,
                self.log,
                self.secret,
                self._bindings,
                self.idle_timeout_s,
                self.auth_timeout_s,
            ).serve()
        except Exception as exc:  # never let one peer end the listener
            self.log(f"{peer}: internal error {type(exc).__name__}: {exc}; closing the connection")
        finally:
            with self._open_lock:
                self._open.discard(conn)
            try:
                conn.close()
            except OSError:
                pass
            self._slots.release()

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
        with self._open_lock:
            for conn in list(self._open):
                try:
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        for t in self._threads:
            t.join(timeout=2.0)


def _is_loopback(bind: str) -> bool:
    try:
        return ipaddress.ip_address(bind).is_loopback
    except ValueError:
        return bind == "localhost"


def _timestamped(log: Log) -> Log:
    return lambda line: log(f"{utc_now()} {line}")


def listen(
    bind: str,
    port: int,
    state_path: Path,
    log: Log,
    ready: Callable[[tuple[str, int]], None] | None = None,
    *,
    secret_file: Path | None = None,
    environ: Mapping[str, str] | None = None,
    announce: Callable[[ListenerStart], None] | None = None,
) -> None:
    """Run the listener until SIGINT/SIGTERM (a clean stop). Its secret: the one in
    ``secret_file`` (default: the state's name + ``.secret``), or in ``environ``'s
    FSYNCBENCH_POWERCUT_SECRET (default ``os.environ``; not read when ``secret_file`` is
    named), or a new one written to that file (mode 0600) once the address is bound
    (:func:`.secret.listener_secret`). ``announce`` gets it, once, with the bound address,
    for the user; ``log`` never does. Raises FsyncbenchError if the secret file cannot be
    read or written, the state cannot be opened or the address cannot be bound; a state
    file this call created is then removed again (one that existed is kept as it was)."""
    if not 0 <= port <= 65535:
        raise FsyncbenchError(f"--port must be from 0 to 65535, got {port}")
    log = _timestamped(log)
    keys = listener_secret(state_path, secret_file, os.environ if environ is None else environ)
    existed = state_path.exists()
    state = ListenerState(state_path)
    try:
        server: Listener | None = None
        try:
            server = Listener(state, bind, port, log, keys.secret)
            if keys.created and keys.path is not None:
                write_secret_file(keys.path, keys.secret)
        except BaseException:
            if server is not None:
                server.close()
            if not existed:  # a listener that never listened leaves no state behind
                state.close()
                for suffix in ("", "-wal", "-shm", "-journal"):
                    Path(f"{state_path}{suffix}").unlink(missing_ok=True)
            raise
        runs, acks = state.summary()
        host, bound_port = server.address
        log(
            f"listening on {protocol.format_address(host, bound_port)}; state "
            f"{state_path} ({runs} runs, {acks} commits recorded); Ctrl-C stops"
        )
        if keys.path is None:
            log(f"peers must prove the secret in {ENV_VAR}")
        else:
            made = "made now" if keys.created else "kept from an earlier start"
            log(f"peers must prove the secret in {keys.path} ({made})")
            loose = None if keys.created else loose_permissions(keys.path)
            if loose:
                log(
                    f"warning: {keys.path} may be read by other users (mode {loose}): "
                    f"chmod 600 {keys.path}"
                )
        if not _is_loopback(bind):
            log(
                "note: the connections are not encrypted: the secret keeps out other "
                "clients, not someone who can read or alter this network's traffic"
            )
        if announce:
            announce(ListenerStart((host, bound_port), bind, keys))
        if ready:
            ready((host, bound_port))
        stop = threading.Event()
        previous = install_stop_handlers(stop)
        try:
            server.serve(stop)
        finally:
            restore_handlers(previous)
        log(f"listener stopped; the record is in {state_path}")
    finally:
        state.close()
