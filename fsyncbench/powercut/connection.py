"""One peer of the listener, from the handshake to the close.

A connection is served only once its peer proved the listener's secret (the handshake of
:mod:`.protocol`, checked in constant time by :func:`.secret.proof_ok`); a wrong or missing
proof is refused with one ``error``, a log line without the secret, and the connection
closed. Each connection is bound to the one run its ``hello`` named; an ``ack`` for any
other run is rejected; a ``hello`` reusing a recorded run id with a different writer
identity is rejected (:class:`~.listener_state.Conflict`); and a ``hello`` for a run still
bound to another open connection is rejected (:data:`~.protocol.RUN_BUSY`), so at most one
connection records a run at a time (:class:`Bindings`). Once that connection has closed,
the same writer may say ``hello`` again: a writer reconnects after a network failure or a
listener restart. The acks of one batch of lines are recorded in one transaction before
any reply is sent.

Bounded everywhere: lines (:data:`~.protocol.MAX_LINE_BYTES`), commits per ack, time to
the end of the handshake (:data:`AUTH_TIMEOUT_S`), idle time (:data:`IDLE_TIMEOUT_S`),
rejected messages (:data:`MAX_REJECTS`). A bad message is answered with ``error`` and a
log line; nothing a peer sends ends the listener.
"""

from __future__ import annotations

import socket
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from fsyncbench.powercut import protocol
from fsyncbench.powercut.listener_state import Conflict, ListenerState
from fsyncbench.powercut.protocol import MAX_RANGES_PER_LINE, ProtocolError, encode
from fsyncbench.powercut.secret import Secret, new_nonce, proof_ok

#: A writer pings every few seconds when it has nothing to report (writer.PING_EVERY_S).
IDLE_TIMEOUT_S = 120.0
#: A peer that has not proven the secret by then is closed (it holds a connection slot).
AUTH_TIMEOUT_S = 30.0
MAX_REJECTS = 20
#: Bounded lingering close after a protocol violation.
LINGER_S = 1.0
LINGER_BYTES = 1 << 20
#: How often a connection logs its progress when new commits arrived.
PROGRESS_EVERY_S = 10.0

Log = Callable[[str], None]


def linger_close(sock: socket.socket) -> None:
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


class Bindings:
    """Which open connection records each run (at most one per run)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.holders: dict[str, Connection] = {}

    def release(self, run_id: str, conn: Connection) -> None:
        with self.lock:
            if self.holders.get(run_id) is conn:
                del self.holders[run_id]


class Connection:
    """One peer: the handshake first, then reads bounded lines, answers each message,
    records acks durably."""

    def __init__(
        self,
        sock: socket.socket,
        peer: str,
        state: ListenerState,
        log: Log,
        secret: Secret,
        bindings: Bindings,
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
        linger_close(self.sock)

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
