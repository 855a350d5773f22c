"""The powercut wire protocol, version 2: line-delimited JSON over TCP.

Every message is one JSON object, UTF-8, on one line ending in ``\\n`` (a trailing ``\\r``
is tolerated). A message to the listener is at most :data:`MAX_LINE_BYTES` bytes with its
newline, a reply at most :data:`MAX_REPLY_BYTES`. Each carries ``"v"``
(:data:`PROTOCOL_VERSION`) and ``"type"``; the other fields are exactly those listed for its
type (no extra ones), each checked for type and range. A peer speaking another version is
told both versions (by the listener's ``error``, or by the peer's own check of a reply).

Every connection opens with a handshake, in which the peer proves that it holds the
listener's secret without sending it (:mod:`.secret`)::

    peer -> listener      start         {}
    listener -> peer      challenge     {nonce}   32 lower-case hex digits, new each time
    peer -> listener      auth          {proof}   64 lower-case hex digits: HMAC-SHA256
                                                  keyed with the secret over a fixed label
                                                  and the nonce (secret.proof)
    listener -> peer      authenticated {}

Until then the listener answers anything else (another version, another message, a wrong
proof) with one ``error`` and closes the connection. Version 1 had no handshake.

Writer -> listener (the connection is bound to one run by its ``hello``)::

    hello    {run_id, host, dir, config, pid, started_utc}
    ack      {run_id, from, to}   commits from..to (inclusive) have returned from COMMIT;
                                  to - from < MAX_ACK_SPAN
    ping     {}

Verifier -> listener::

    query    {run_id}             -> run, ranges..., end   (or error)
    list     {}                   -> run..., end

Listener -> peer::

    welcome  {run_id, count, max_seq}   hello accepted; what is already recorded for the run
    recorded {run_id, from, to}         durably recorded (sent after the listener's COMMIT)
    pong     {}
    run      {run_id, host, dir, config, pid, started_utc, first_seen_utc, last_seen_utc,
              count, max_seq}
    ranges   {run_id, ranges}           [[first, last], ...] ascending, disjoint,
                                        at most MAX_RANGES_PER_LINE
    end      {items, total}             query: ranges sent, seqs in them; list: runs, runs
    error    {error}

``run_id`` is 32 lower-case hex digits (a uuid4 hex); sequence numbers are 1 to
:data:`MAX_SEQ`; times are ``YYYY-MM-DDTHH:MM:SSZ``.
"""

from __future__ import annotations

import json
import re
import socket
from collections import deque
from collections.abc import Callable
from typing import Any

from fsyncbench.errors import FsyncbenchError
from fsyncbench.powercut.secret import Secret, proof

PROTOCOL_VERSION = 2

#: Longest message the listener accepts, newline included. A hello with a 1,024-character
#: directory fits even when every character needs a 6-byte JSON escape.
MAX_LINE_BYTES = 8192
#: Longest reply a writer or verifier accepts (a ``ranges`` line is about 7 KB).
MAX_REPLY_BYTES = 65536
#: Most commits one ``ack`` may cover, so one message costs the listener bounded work.
MAX_ACK_SPAN = 4096
#: Largest sequence number: 2**53 - 1, exact in every JSON implementation.
MAX_SEQ = 2**53 - 1
MAX_RANGES_PER_LINE = 256
MAX_HOST_CHARS = 255
MAX_DIR_CHARS = 1024
MAX_ERROR_CHARS = 500

RUN_ID_RE = re.compile(r"[0-9a-f]{32}")
NONCE_RE = re.compile(r"[0-9a-f]{32}")
PROOF_RE = re.compile(r"[0-9a-f]{64}")
UTC_RE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
CONFIG_RE = re.compile(r"[a-z]{2,10}/[a-z]{2,10}(/[a-z-]{2,16})?")
_BAD_CHARS = re.compile(r"[\x00-\x1f\x7f\ud800-\udfff]")

_RECV_BYTES = 65536

#: The error a listener at its connection limit answers with; a writer retries after it.
TOO_MANY_CONNECTIONS = "too many connections"
#: How the listener's error for a hello begins when the run is still bound to another open
#: connection (its writer's old connection, not yet timed out): a reconnecting writer
#: retries after it.
RUN_BUSY = "this run is being recorded on another open connection"


class ProtocolError(Exception):
    """A message that is not valid protocol; the text says why in one line."""


class Refused(FsyncbenchError):
    """The listener turned the connection down for good (a wrong secret, another protocol
    version, not an fsyncbench listener): trying again will not help."""


# --------------------------------------------------------------------------- validation

Check = Callable[[Any], "str | None"]


def _int(lo: int, hi: int) -> Check:
    def check(v: Any) -> str | None:
        if type(v) is not int:
            return "must be an integer"
        if not lo <= v <= hi:
            return f"must be from {lo} to {hi}"
        return None

    return check


def _text(max_chars: int, pattern: re.Pattern[str] | None = None, what: str = "") -> Check:
    def check(v: Any) -> str | None:
        if not isinstance(v, str):
            return "must be a string"
        if pattern is not None:
            return None if pattern.fullmatch(v) else f"must be {what}"
        if not 1 <= len(v) <= max_chars:
            return f"must be 1 to {max_chars} characters"
        if _BAD_CHARS.search(v):
            return "must not contain control characters"
        return None

    return check


def _ranges(v: Any) -> str | None:
    if not isinstance(v, list) or not 1 <= len(v) <= MAX_RANGES_PER_LINE:
        return f"must be a list of 1 to {MAX_RANGES_PER_LINE} ranges"
    prev = 0
    for item in v:
        if not isinstance(item, list) or len(item) != 2 or any(type(x) is not int for x in item):
            return "must hold [first, last] integer pairs"
        a, b = item
        if not (1 <= a <= b <= MAX_SEQ) or a <= prev:
            return "must be ascending, disjoint ranges of sequence numbers"
        prev = b
    return None


_RUN_ID = _text(32, RUN_ID_RE, "32 lower-case hex digits")
_SEQ = _int(1, MAX_SEQ)
_COUNT = _int(0, MAX_SEQ)
_UTC = _text(20, UTC_RE, "a UTC time YYYY-MM-DDTHH:MM:SSZ")
_IDENTITY = {
    "host": _text(MAX_HOST_CHARS),
    "dir": _text(MAX_DIR_CHARS),
    "config": _text(40, CONFIG_RE, "a configuration label such as wal/full"),
    "pid": _int(1, 2**31 - 1),
    "started_utc": _UTC,
}

#: Fields of each message type (besides "v" and "type").
SPECS: dict[str, dict[str, Check]] = {
    "start": {},
    "challenge": {"nonce": _text(32, NONCE_RE, "32 lower-case hex digits")},
    "auth": {"proof": _text(64, PROOF_RE, "64 lower-case hex digits")},
    "authenticated": {},
    "hello": {"run_id": _RUN_ID, **_IDENTITY},
    "ack": {"run_id": _RUN_ID, "from": _SEQ, "to": _SEQ},
    "ping": {},
    "query": {"run_id": _RUN_ID},
    "list": {},
    "welcome": {"run_id": _RUN_ID, "count": _COUNT, "max_seq": _COUNT},
    "recorded": {"run_id": _RUN_ID, "from": _SEQ, "to": _SEQ},
    "pong": {},
    "run": {
        "run_id": _RUN_ID,
        **_IDENTITY,
        "first_seen_utc": _UTC,
        "last_seen_utc": _UTC,
        "count": _COUNT,
        "max_seq": _COUNT,
    },
    "ranges": {"run_id": _RUN_ID, "ranges": _ranges},
    "end": {"items": _COUNT, "total": _COUNT},
    "error": {"error": _text(MAX_ERROR_CHARS)},
}

#: What each side may receive.
TO_LISTENER = frozenset({"start", "auth", "hello", "ack", "ping", "query", "list"})
#: The handshake's replies, in order.
CHALLENGE = frozenset({"challenge", "error"})
AUTHENTICATED = frozenset({"authenticated", "error"})
TO_WRITER = frozenset({"welcome", "recorded", "pong", "error"})
TO_VERIFIER = frozenset({"run", "ranges", "end", "error"})


def _span_check(msg: dict[str, Any]) -> str | None:
    if msg["type"] in ("ack", "recorded"):
        if msg["to"] < msg["from"]:
            return "'to' must not be below 'from'"
        if msg["to"] - msg["from"] >= MAX_ACK_SPAN:
            return f"an ack covers at most {MAX_ACK_SPAN} commits"
    return None


def validate(msg: Any, allowed: frozenset[str]) -> dict[str, Any]:
    """Check a decoded message; returns it or raises ProtocolError."""
    if not isinstance(msg, dict):
        raise ProtocolError("a message must be a JSON object")
    version = msg.get("v")
    if type(version) is not int:
        raise ProtocolError("missing or invalid protocol version 'v'")
    if version != PROTOCOL_VERSION:
        raise ProtocolError(
            f"unsupported protocol version {version} (this fsyncbench speaks "
            f"{PROTOCOL_VERSION}): run the same fsyncbench version on both machines"
        )
    kind = msg.get("type")
    if not isinstance(kind, str) or kind not in allowed:
        shown = kind if isinstance(kind, str) and len(kind) <= 20 else "?"
        raise ProtocolError(
            f"unexpected message type {shown!r} (expected one of {', '.join(sorted(allowed))})"
        )
    spec = SPECS[kind]
    extra = set(msg) - set(spec) - {"v", "type"}
    if extra:
        shown = ", ".join(repr(str(k)[:20]) for k in sorted(extra)[:5])
        raise ProtocolError(f"{kind}: unknown field(s) {shown}")
    for name, check in spec.items():
        if name not in msg:
            raise ProtocolError(f"{kind}: missing field {name!r}")
        problem = check(msg[name])
        if problem:
            raise ProtocolError(f"{kind}: {name} {problem}")
    problem = _span_check(msg)
    if problem:
        raise ProtocolError(f"{kind}: {problem}")
    return msg


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not allowed")


def decode(line: bytes, allowed: frozenset[str], limit: int = MAX_LINE_BYTES) -> dict[str, Any]:
    """One line (without its newline) -> a validated message. Raises ProtocolError."""
    if len(line) + 1 > limit:
        raise ProtocolError(f"message of {len(line) + 1} bytes exceeds the {limit}-byte limit")
    try:
        text = line.decode("utf-8")
        msg = json.loads(text, parse_constant=_no_constants)
    except UnicodeDecodeError:
        raise ProtocolError("message is not valid UTF-8") from None
    except RecursionError:
        raise ProtocolError("message is nested too deeply") from None
    except ValueError as exc:
        raise ProtocolError(f"message is not valid JSON ({str(exc)[:80]})") from None
    return validate(msg, allowed)


def encode(kind: str, limit: int = MAX_LINE_BYTES, **fields: Any) -> bytes:
    """A message as one line of bytes; checked like an incoming one (ProtocolError)."""
    msg = {"v": PROTOCOL_VERSION, "type": kind, **fields}
    validate(msg, frozenset({kind}))
    data = (json.dumps(msg, separators=(",", ":")) + "\n").encode("utf-8")
    if len(data) > limit:
        raise ProtocolError(f"{kind} message of {len(data)} bytes exceeds the {limit}-byte limit")
    return data


# --------------------------------------------------------------------------- line reading


class LineReader:
    """Bounded line reading from a socket (the socket's own timeout applies to each recv).

    :meth:`recv_lines` returns the complete lines one ``recv`` made available, ``None`` at
    end of stream. A line (or unfinished tail) of ``limit`` bytes or more sets
    ``oversized`` to its size; the lines before it are still returned, nothing after it.
    """

    def __init__(self, sock: socket.socket, limit: int) -> None:
        self._sock = sock
        self._limit = limit
        self._buf = bytearray()
        self.oversized = 0

    def recv_lines(self) -> list[bytes] | None:
        if self.oversized:
            return None
        data = self._sock.recv(_RECV_BYTES)
        if not data:
            return None
        self._buf += data
        lines: list[bytes] = []
        while True:
            i = self._buf.find(b"\n")
            if i < 0:
                break
            if i + 1 > self._limit:
                self.oversized = i + 1
                self._buf.clear()
                return lines
            line = bytes(self._buf[:i])
            del self._buf[: i + 1]
            lines.append(line[:-1] if line.endswith(b"\r") else line)
        if len(self._buf) >= self._limit:
            self.oversized = len(self._buf)
            self._buf.clear()
        return lines


# --------------------------------------------------------------------------- addresses


def parse_address(text: str, what: str = "address") -> tuple[str, int]:
    """``"host:port"`` or ``"[v6addr]:port"`` -> (host, port). Raises FsyncbenchError."""
    match = re.fullmatch(r"\[([0-9A-Fa-f:.%\w]+)\]:(\d{1,5})|([^\s:\[\]]+):(\d{1,5})", text or "")
    if not match:
        raise FsyncbenchError(f"invalid {what} {text!r}: expected HOST:PORT")
    host = match.group(1) or match.group(3)
    port = int(match.group(2) or match.group(4))
    if not 1 <= port <= 65535:
        raise FsyncbenchError(f"invalid {what} {text!r}: port must be from 1 to 65535")
    return host, port


def format_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


# --------------------------------------------------------------------------- client side


class Client:
    """A writer's or verifier's connection to the listener, through the handshake (the
    proof of ``secret``). Every error is a one-line FsyncbenchError naming the listener;
    :class:`Refused` when trying again will not help."""

    def __init__(self, address: tuple[str, int], secret: Secret, timeout_s: float = 10.0) -> None:
        self.name = format_address(*address)
        try:
            self.sock = socket.create_connection(address, timeout=timeout_s)
        except OSError as exc:
            raise FsyncbenchError(
                f"cannot reach the listener at {self.name}: {exc.strerror or exc}"
            ) from None
        self._reader = LineReader(self.sock, MAX_REPLY_BYTES)
        self._lines: deque[bytes] = deque()
        try:
            self.send("start")
            nonce = self._handshake_reply(CHALLENGE)["nonce"]
            self.send("auth", proof=proof(secret, nonce))
            self._handshake_reply(AUTHENTICATED)
        except BaseException:
            self.close()
            raise

    def _handshake_reply(self, allowed: frozenset[str]) -> dict[str, Any]:
        msg = self.receive(allowed)
        if msg["type"] != "error":
            return msg
        if msg["error"] == TOO_MANY_CONNECTIONS:  # passes: the caller may retry
            raise FsyncbenchError(f"the listener at {self.name} says: {msg['error']}")
        raise Refused(f"the listener at {self.name} refused the connection: {msg['error']}")

    def send(self, kind: str, **fields: Any) -> None:
        try:
            self.sock.sendall(encode(kind, **fields))
        except OSError as exc:
            raise FsyncbenchError(
                f"lost the listener at {self.name}: {exc.strerror or exc}"
            ) from None

    def pending(self) -> bool:
        """True if a complete reply is already buffered."""
        return bool(self._lines)

    def receive(self, allowed: frozenset[str]) -> dict[str, Any]:
        """The next reply (waits up to the socket timeout)."""
        while not self._lines:
            try:
                lines = self._reader.recv_lines()
            except OSError as exc:
                raise FsyncbenchError(
                    f"no answer from the listener at {self.name}: {exc.strerror or exc}"
                ) from None
            if self._reader.oversized:
                raise FsyncbenchError(f"the listener at {self.name} sent an oversized reply")
            if lines is None:
                raise FsyncbenchError(f"the listener at {self.name} closed the connection")
            self._lines.extend(lines)
        try:
            return decode(self._lines.popleft(), allowed, MAX_REPLY_BYTES)
        except ProtocolError as exc:
            raise Refused(f"the listener at {self.name} sent an invalid reply: {exc}") from None

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def _error(client: Client, msg: dict[str, Any]) -> FsyncbenchError:
    return FsyncbenchError(f"the listener at {client.name} says: {msg['error']}")


def fetch_run(
    address: tuple[str, int], secret: Secret, run_id: str, timeout_s: float = 30.0
) -> tuple[dict[str, Any], list[tuple[int, int]]]:
    """(run record, acknowledged ranges) the listener holds for ``run_id``.
    Raises FsyncbenchError (unreachable listener, wrong secret, unknown run, invalid reply)."""
    with Client(address, secret, timeout_s) as client:
        client.send("query", run_id=run_id)
        msg = client.receive(TO_VERIFIER)
        if msg["type"] == "error":
            raise _error(client, msg)
        if msg["type"] != "run" or msg["run_id"] != run_id:
            raise FsyncbenchError(f"the listener at {client.name} answered out of order")
        info = msg
        ranges: list[tuple[int, int]] = []
        while True:
            msg = client.receive(TO_VERIFIER)
            if msg["type"] == "error":
                raise _error(client, msg)
            if msg["type"] == "end":
                break
            if msg["type"] != "ranges" or msg["run_id"] != run_id:
                raise FsyncbenchError(f"the listener at {client.name} answered out of order")
            for a, b in msg["ranges"]:
                if ranges and a <= ranges[-1][1]:
                    raise FsyncbenchError(f"the listener at {client.name} sent overlapping ranges")
                ranges.append((a, b))
        total = sum(b - a + 1 for a, b in ranges)
        if msg["items"] != len(ranges) or msg["total"] != total or total != info["count"]:
            raise FsyncbenchError(
                f"the listener at {client.name} sent an incomplete record "
                f"({total} of {info['count']} commits)"
            )
        return info, ranges


def list_runs(
    address: tuple[str, int], secret: Secret, timeout_s: float = 30.0
) -> list[dict[str, Any]]:
    """Every run the listener holds (FsyncbenchError on failure; :class:`Refused` when the
    listener turned the secret down)."""
    with Client(address, secret, timeout_s) as client:
        client.send("list")
        runs: list[dict[str, Any]] = []
        while True:
            msg = client.receive(TO_VERIFIER)
            if msg["type"] == "error":
                raise _error(client, msg)
            if msg["type"] == "end":
                return runs
            if msg["type"] != "run":
                raise FsyncbenchError(f"the listener at {client.name} answered out of order")
            runs.append(msg)
