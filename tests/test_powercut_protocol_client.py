"""fsyncbench powercut: the client side of the wire protocol, as a writer or verifier sees it
(issue 45: mutation testing).

LineReader's line splitting (empty lines kept, a trailing ``\\r`` dropped, the size limit at
its exact boundary for a line and for an unfinished tail); parse_address's one-line errors
and its port range; the Client's handshake, its socket timeout (10 s unless told), the
listener's "too many connections" (worth retrying) against a refusal, and its one-line
errors when the listener is silent, closes, sends an oversized or invalid reply or is gone;
fetch_run and list_runs against a listener that misbehaves in the ways the verifier must
catch (a reply for another run, overlapping ranges, an incomplete record, an error midway)
and their waits (30 s unless told).

In process: a scripted listener thread on 127.0.0.1 (the real handshake, then the replies a
test gives); no process is started, every wait is bounded and no duration is asserted."""

from __future__ import annotations

import json
import re
import secrets
import socket
import threading
from collections.abc import Callable, Iterator

import pytest

from fsyncbench.errors import FsyncbenchError
from fsyncbench.powercut import protocol
from fsyncbench.powercut.protocol import (
    MAX_LINE_BYTES,
    MAX_REPLY_BYTES,
    TO_VERIFIER,
    TO_WRITER,
    TOO_MANY_CONNECTIONS,
    Client,
    LineReader,
    Refused,
    encode,
    fetch_run,
    list_runs,
    parse_address,
)
from fsyncbench.powercut.secret import Secret, proof_ok

SECRET = Secret("k" * 22)
RUN = "ab" * 16
OTHER_RUN = "cd" * 16
#: How long the scripted listener waits for the client at most (only reached when the
#: client under test misbehaves: the tests never wait for it).
SERVER_WAIT_S = 0.9
#: The client's timeout in tests where nothing should time out.
CLIENT_WAIT_S = 0.5

IDENTITY = {
    "host": "lab-writer-7",
    "dir": "/srv/db",
    "config": "wal/full",
    "pid": 4242,
    "started_utc": "2026-03-01T10:00:00Z",
}


def run_line(run_id: str = RUN, count: int = 0, limit: int = MAX_REPLY_BYTES, **fields) -> bytes:
    """A listener's ``run`` reply (max_seq = count)."""
    record = {
        **IDENTITY,
        "first_seen_utc": "2026-03-01T10:00:01Z",
        "last_seen_utc": "2026-03-01T10:05:00Z",
        "count": count,
        "max_seq": count,
        **fields,
    }
    return encode("run", limit, run_id=run_id, **record)


def ranges_line(*ranges: tuple[int, int], run_id: str = RUN) -> bytes:
    return encode("ranges", MAX_REPLY_BYTES, run_id=run_id, ranges=[list(r) for r in ranges])


def end_line(items: int, total: int) -> bytes:
    return encode("end", items=items, total=total)


def error_line(text: str) -> bytes:
    return encode("error", error=text)


# --------------------------------------------------------------------------- a scripted listener


class Peer:
    """The listener's end of one connection."""

    def __init__(self, conn: socket.socket, over: threading.Event) -> None:
        self.conn = conn
        self.over = over
        self.requests: list[dict] = []

    def request(self) -> dict:
        """The next line the client sent (read a byte at a time: nothing after it is
        consumed)."""
        data = b""
        while not data.endswith(b"\n"):
            chunk = self.conn.recv(1)
            if not chunk:
                raise EOFError(data)
            data += chunk
        msg = json.loads(data)
        self.requests.append(msg)
        return msg

    def reply(self, *lines: bytes) -> None:
        """The lines, in one send (one segment on loopback: the client reads them at once)."""
        self.conn.sendall(b"".join(lines))

    def handshake(self) -> None:
        """The listener's side: start -> challenge, auth -> authenticated (an error for a
        wrong proof)."""
        assert self.request()["type"] == "start"
        nonce = secrets.token_hex(16)
        self.reply(encode("challenge", nonce=nonce))
        auth = self.request()
        if auth.get("type") != "auth" or not proof_ok(SECRET, nonce, auth.get("proof", "")):
            self.reply(error_line("wrong secret"))
            return
        self.reply(encode("authenticated"))

    def wait_for_client(self) -> None:
        """Until the client closes (or the test is over): never close first, so nothing the
        client has not read yet is lost."""
        self.conn.settimeout(0.05)
        while not self.over.is_set():
            try:
                if not self.conn.recv(65536):
                    return
            except TimeoutError:
                continue


Script = Callable[[Peer], None]


class ScriptedListener:
    """A listening socket on 127.0.0.1; one thread runs ``script`` on each of the first
    ``connections`` connections in turn."""

    def __init__(self, script: Script, connections: int = 1) -> None:
        self.over = threading.Event()
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(SERVER_WAIT_S)
        self.address: tuple[str, int] = self.sock.getsockname()[:2]
        self.name = f"127.0.0.1:{self.address[1]}"
        self.peers: list[Peer] = []
        self.thread = threading.Thread(target=self._serve, args=(script, connections))
        self.thread.daemon = True
        self.thread.start()

    def _serve(self, script: Script, connections: int) -> None:
        for _ in range(connections):
            try:
                conn, _addr = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(SERVER_WAIT_S)
                peer = Peer(conn, self.over)
                self.peers.append(peer)
                try:
                    script(peer)
                except (OSError, EOFError):
                    pass

    def requests(self) -> list[dict]:
        """What the clients sent after the handshake, in order."""
        return [m for p in self.peers for m in p.requests if m["type"] not in ("start", "auth")]

    def stop(self) -> None:
        self.over.set()
        self.thread.join(timeout=5)
        self.sock.close()


@pytest.fixture
def serve() -> Iterator[Callable[..., ScriptedListener]]:
    started: list[ScriptedListener] = []

    def start(script: Script, connections: int = 1) -> ScriptedListener:
        started.append(ScriptedListener(script, connections))
        return started[-1]

    yield start
    for lst in started:
        lst.stop()


def answering(*replies: bytes) -> Script:
    """Handshake, read one request, send ``replies`` at once, wait for the client to go."""

    def script(peer: Peer) -> None:
        peer.handshake()
        peer.request()
        peer.reply(*replies)
        peer.wait_for_client()

    return script


def after_handshake(then: Script) -> Script:
    def script(peer: Peer) -> None:
        peer.handshake()
        then(peer)

    return script


# --------------------------------------------------------------------------- LineReader


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    a, b = socket.socketpair()
    a.settimeout(CLIENT_WAIT_S)
    b.settimeout(CLIENT_WAIT_S)
    try:
        yield a, b
    finally:
        a.close()
        b.close()


def test_lines_keep_empty_ones_and_lose_a_trailing_carriage_return(pair):
    """Each complete line, empty ones included, without its ``\\n`` or a ``\\r`` before it;
    an unfinished tail waits for the next recv; None at end of stream."""
    a, b = pair
    reader = LineReader(b, 64)
    a.sendall(b"one\r\n\n\r\ntwo\nthr")
    assert reader.recv_lines() == [b"one", b"", b"", b"two"]
    assert reader.oversized == 0
    a.sendall(b"ee\r\r\n")
    assert reader.recv_lines() == [b"three\r"]  # only one \r is the line end's
    a.sendall(b"\n")
    assert reader.recv_lines() == [b""]
    a.close()
    assert reader.recv_lines() is None
    assert reader.oversized == 0


def test_a_line_of_the_limit_without_its_newline_is_kept_one_byte_more_is_oversized(pair):
    a, b = pair
    reader = LineReader(b, 8)
    a.sendall(b"1234567\n")  # 8 bytes with its newline
    assert reader.recv_lines() == [b"1234567"] and reader.oversized == 0
    a.sendall(b"ok\n12345678\nlater\n")  # 9 bytes with its newline
    assert reader.recv_lines() == [b"ok"]  # the lines before it, nothing after it
    assert reader.oversized == 9
    a.sendall(b"more\n")
    assert reader.recv_lines() is None  # reads nothing more


def test_an_unfinished_line_of_the_limit_is_oversized(pair):
    a, b = pair
    reader = LineReader(b, 8)
    a.sendall(b"1234567")
    assert reader.recv_lines() == [] and reader.oversized == 0
    a.sendall(b"8")
    assert reader.recv_lines() == [] and reader.oversized == 8
    assert reader.recv_lines() is None


# --------------------------------------------------------------------------- parse_address


def test_parse_address_errors_name_the_option_and_the_text():
    with pytest.raises(FsyncbenchError) as caught:
        parse_address("db2.lan")
    assert str(caught.value) == "invalid address 'db2.lan': expected HOST:PORT"
    with pytest.raises(FsyncbenchError) as caught:
        parse_address("db2.lan:65536", "--to")
    assert str(caught.value) == "invalid --to 'db2.lan:65536': port must be from 1 to 65535"
    with pytest.raises(FsyncbenchError) as caught:
        parse_address("", "--to")
    assert str(caught.value) == "invalid --to '': expected HOST:PORT"


def test_parse_address_takes_the_highest_port_and_v6_scopes():
    assert parse_address("db2.lan:65535") == ("db2.lan", 65535)
    assert parse_address("[FE80::1%eth0]:5400") == ("FE80::1%eth0", 5400)


# --------------------------------------------------------------------------- Client


def test_a_client_proves_the_secret_and_waits_as_long_as_it_is_told(serve):
    lst = serve(after_handshake(Peer.wait_for_client), connections=2)
    with Client(lst.address, SECRET, CLIENT_WAIT_S) as client:
        assert client.name == lst.name
        assert client.sock.gettimeout() == CLIENT_WAIT_S
        assert not client.pending()
    with Client(lst.address, SECRET) as client:
        assert client.sock.gettimeout() == 10.0


def test_too_many_connections_is_an_error_worth_retrying_not_a_refusal(serve):
    def busy(peer: Peer) -> None:
        peer.request()
        peer.reply(error_line(TOO_MANY_CONNECTIONS))
        peer.wait_for_client()

    lst = serve(busy)
    with pytest.raises(FsyncbenchError) as caught:
        Client(lst.address, SECRET, CLIENT_WAIT_S)
    assert type(caught.value) is FsyncbenchError  # not Refused: the writer tries again
    assert str(caught.value) == f"the listener at {lst.name} says: too many connections"


def test_any_other_handshake_error_is_a_refusal(serve):
    def other(peer: Peer) -> None:
        peer.request()
        peer.reply(error_line("wrong secret"))
        peer.wait_for_client()

    lst = serve(other)
    with pytest.raises(Refused) as caught:
        Client(lst.address, SECRET, CLIENT_WAIT_S)
    assert str(caught.value) == f"the listener at {lst.name} refused the connection: wrong secret"


def test_a_silent_listener_is_reported_when_the_timeout_passes(serve):
    lst = serve(after_handshake(Peer.wait_for_client))
    with Client(lst.address, SECRET, 0.1) as client:
        assert client.sock.gettimeout() == 0.1
        with pytest.raises(FsyncbenchError) as caught:
            client.receive(TO_WRITER)
    assert str(caught.value) == f"no answer from the listener at {lst.name}: timed out"


def test_a_listener_that_closes_the_connection(serve):
    lst = serve(after_handshake(lambda peer: None))
    with Client(lst.address, SECRET, CLIENT_WAIT_S) as client:
        with pytest.raises(FsyncbenchError) as caught:
            client.receive(TO_WRITER)
    assert str(caught.value) == f"the listener at {lst.name} closed the connection"


def test_sending_on_a_dead_connection_names_the_listener_and_the_reason(serve):
    """The OS's reason (its text, not ``[Errno 32] ...``); a connection shut for writing
    stands in for one the OS already knows is gone."""
    lst = serve(after_handshake(Peer.wait_for_client))
    with Client(lst.address, SECRET, CLIENT_WAIT_S) as client:
        client.sock.shutdown(socket.SHUT_WR)
        with pytest.raises(FsyncbenchError) as caught:
            client.send("ping")
    assert re.fullmatch(rf"lost the listener at {re.escape(lst.name)}: [^\[\]]+", str(caught.value))


def test_an_oversized_reply_is_refused(serve):
    def flood(peer: Peer) -> None:
        peer.reply(b"x" * (MAX_REPLY_BYTES + 1))
        peer.wait_for_client()

    lst = serve(after_handshake(flood))
    with Client(lst.address, SECRET, CLIENT_WAIT_S) as client:
        with pytest.raises(FsyncbenchError) as caught:
            client.receive(TO_WRITER)
    assert str(caught.value) == f"the listener at {lst.name} sent an oversized reply"


def test_an_invalid_reply_is_a_refusal_saying_why(serve):
    lst = serve(answering(b"not json\n"))
    with Client(lst.address, SECRET, CLIENT_WAIT_S) as client:
        client.send("ping")
        with pytest.raises(Refused) as caught:
            client.receive(TO_WRITER)
    assert str(caught.value).startswith(
        f"the listener at {lst.name} sent an invalid reply: message is not valid JSON ("
    )


def test_replies_already_read_are_pending(serve):
    """The writer drains the replies one recv brought before it waits on the socket."""
    lst = serve(answering(run_line(), end_line(1, 1)))
    with Client(lst.address, SECRET, CLIENT_WAIT_S) as client:
        client.send("list")
        assert not client.pending()
        assert client.receive(TO_VERIFIER)["type"] == "run"
        assert client.pending()
        assert client.receive(TO_VERIFIER)["type"] == "end"
        assert not client.pending()


def _long_dir_run() -> tuple[str, bytes]:
    """A directory whose hello just fits the listener's 8192-byte limit (characters outside
    the BMP take 12 bytes of JSON each): its run line, which adds the listener's fields,
    does not."""
    n = (MAX_LINE_BYTES - len(encode("hello", run_id=RUN, **IDENTITY))) // 12
    directory = "/srv/" + "\U00020000" * n
    assert len(encode("hello", run_id=RUN, **{**IDENTITY, "dir": directory})) <= MAX_LINE_BYTES
    line = run_line(dir=directory)
    assert len(line) > MAX_LINE_BYTES
    return directory, line


# --------------------------------------------------------------------------- list_runs


def test_list_runs_reads_a_run_longer_than_a_request(serve):
    directory, long_run = _long_dir_run()
    lst = serve(answering(long_run, run_line(OTHER_RUN, 3), end_line(2, 2)))
    runs = list_runs(lst.address, SECRET, CLIENT_WAIT_S)
    assert [(r["run_id"], r["dir"], r["count"]) for r in runs] == [
        (RUN, directory, 0),
        (OTHER_RUN, "/srv/db", 3),
    ]
    assert lst.requests() == [{"v": 2, "type": "list"}]


@pytest.mark.parametrize(
    "replies,says",
    [
        ((run_line(), error_line("state database is locked")), "says: state database is locked"),
        ((run_line(), ranges_line((1, 2))), "answered out of order"),
    ],
)
def test_list_runs_stops_at_an_error_or_a_reply_out_of_order(serve, replies, says):
    lst = serve(answering(*replies))
    with pytest.raises(FsyncbenchError) as caught:
        list_runs(lst.address, SECRET, CLIENT_WAIT_S)
    assert type(caught.value) is FsyncbenchError
    assert str(caught.value) == f"the listener at {lst.name} {says}"


# --------------------------------------------------------------------------- fetch_run


def test_fetch_run_joins_the_ranges_of_every_line(serve):
    lst = serve(
        answering(
            run_line(count=7),
            ranges_line((1, 3)),
            ranges_line((5, 6), (8, 8)),
            ranges_line((10, 10)),
            end_line(4, 7),
        )
    )
    info, ranges = fetch_run(lst.address, SECRET, RUN, CLIENT_WAIT_S)
    assert ranges == [(1, 3), (5, 6), (8, 8), (10, 10)]
    assert info["run_id"] == RUN and info["count"] == 7 and info["dir"] == "/srv/db"
    assert lst.requests() == [{"v": 2, "type": "query", "run_id": RUN}]


def test_fetch_run_reads_a_run_longer_than_a_request(serve):
    directory, long_run = _long_dir_run()
    lst = serve(answering(long_run, end_line(0, 0)))
    info, ranges = fetch_run(lst.address, SECRET, RUN, CLIENT_WAIT_S)
    assert info["dir"] == directory and ranges == []


@pytest.mark.parametrize(
    "replies,says",
    [
        ((error_line("no run " + RUN),), f"says: no run {RUN}"),
        ((run_line(OTHER_RUN), end_line(0, 0)), "answered out of order"),
        ((ranges_line((1, 2)), end_line(1, 2)), "answered out of order"),
        (
            (run_line(count=2), ranges_line((1, 2), run_id=OTHER_RUN), end_line(1, 2)),
            "answered out of order",
        ),
        (
            (run_line(count=4), ranges_line((1, 2)), error_line("state database is locked")),
            "says: state database is locked",
        ),
        (  # each line is ascending and disjoint, the two together are not
            (run_line(count=8), ranges_line((1, 5)), ranges_line((5, 7)), end_line(2, 8)),
            "sent overlapping ranges",
        ),
        (  # the end agrees with the ranges, the run's count does not
            (run_line(count=10), ranges_line((1, 8)), end_line(1, 8)),
            "sent an incomplete record (8 of 10 commits)",
        ),
        (  # the totals agree, the number of ranges does not
            (run_line(count=8), ranges_line((1, 8)), end_line(2, 8)),
            "sent an incomplete record (8 of 8 commits)",
        ),
        (
            (run_line(count=8), ranges_line((1, 8)), end_line(1, 9)),
            "sent an incomplete record (8 of 8 commits)",
        ),
    ],
)
def test_fetch_run_refuses_an_error_or_a_record_it_cannot_trust(serve, replies, says):
    lst = serve(answering(*replies))
    with pytest.raises(FsyncbenchError) as caught:
        fetch_run(lst.address, SECRET, RUN, CLIENT_WAIT_S)
    assert type(caught.value) is FsyncbenchError
    assert str(caught.value) == f"the listener at {lst.name} {says}"


# --------------------------------------------------------------------------- waits


def test_fetch_and_list_wait_30_s_unless_told(serve, monkeypatch):
    """The socket timeout each connection is opened with (verify's fetch_run takes the
    default)."""

    def answer(peer: Peer) -> None:
        peer.handshake()
        kind = peer.request()["type"]
        peer.reply(*([run_line()] if kind == "query" else []), end_line(0, 0))
        peer.wait_for_client()

    lst = serve(answer, connections=4)
    timeouts: list[float | None] = []
    real = socket.create_connection

    def recording(address, timeout=None, *args, **kwargs):
        timeouts.append(timeout)
        return real(address, timeout, *args, **kwargs)

    monkeypatch.setattr(socket, "create_connection", recording)
    assert fetch_run(lst.address, SECRET, RUN) == (
        protocol.decode(run_line()[:-1], TO_VERIFIER),
        [],
    )
    assert fetch_run(lst.address, SECRET, RUN, CLIENT_WAIT_S)[1] == []
    assert list_runs(lst.address, SECRET) == []
    assert list_runs(lst.address, SECRET, CLIENT_WAIT_S) == []
    assert timeouts == [30.0, CLIENT_WAIT_S, 30.0, CLIENT_WAIT_S]
