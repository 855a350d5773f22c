"""fsyncbench powercut: only peers holding the listener's secret record or read anything, and
at most one connection records a run at a time (issue 30, item 6).

Real processes over loopback (the helpers of test_powercut): the right secret end to end,
with the secret found in no log line, saved report, verify output or state file; a missing
and a wrong secret refused (one line, exit 2, nothing recorded); peers that skip the
handshake or speak version 1; a second writer on a live run. In process: the writer's
reconnect while the listener still holds its old connection, the secret's sources, its
file, the proof and the lines listen prints. Every wait is bounded; no durations are
asserted."""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import os
import re
import shlex
import signal
import socket
import stat
import sys
import threading
from pathlib import Path

import pytest
from test_powercut import (
    DEADLINE_S,
    HELLO,
    LOOPBACK,
    ListenerProc,
    _env,
    _exchange,
    evidence,
    fsb,
    handshake,
    listener,
    procs,
    recorded,
    run_dir_of,
    start_writer,
    verify,
    wait_for,
    wait_recorded,
)

import fsyncbench
from fsyncbench.errors import FsyncbenchError
from fsyncbench.powercut import protocol
from fsyncbench.powercut.listener import Listener
from fsyncbench.powercut.listener_state import ListenerState
from fsyncbench.powercut.protocol import RUN_BUSY, Client, encode
from fsyncbench.powercut.secret import (
    ENV_VAR,
    ListenerSecret,
    ListenerStart,
    Secret,
    client_secret,
    format_start,
    listener_secret,
    loose_permissions,
    proof,
    proof_ok,
    write_secret_file,
)
from fsyncbench.powercut.writer import _Reporter

REFUSED = (
    "wrong secret: give write and verify the secret this listener printed when it started "
    "(the file it named, or FSYNCBENCH_POWERCUT_SECRET)"
)
MISSING = (
    "no listener secret: give --secret-file FILE (the file powercut listen wrote, copied to "
    "this machine) or set FSYNCBENCH_POWERCUT_SECRET"
)
OTHER = Secret("not-the-listeners-secret-0")


__all__ = ["listener", "procs"]  # test_powercut's fixtures, used here by name


def one_error_line(proc) -> str:
    """Exit code 2 and exactly one line on stderr, without its prefix."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0].removeprefix("fsyncbench: error: ")


def runs_on_record(lst: ListenerProc) -> list[dict]:
    return protocol.list_runs(lst.address, lst.secret, 10)


def stop(lst: ListenerProc) -> None:
    if sys.platform == "win32":  # no Ctrl-C for one process there: ended instead
        lst.proc.terminate()
        lst.proc.wait(timeout=DEADLINE_S)
        return
    lst.proc.send_signal(signal.SIGINT)
    lst.proc.wait(timeout=DEADLINE_S)
    assert "listener stopped" in lst.text()


def hello_line(**fields) -> bytes:
    return json.dumps({**HELLO, **fields}).encode() + b"\n"


def ack_line(run_id: str, seq: int) -> bytes:
    return encode("ack", run_id=run_id, **{"from": seq, "to": seq})


# --------------------------------------------------------------------------- real processes


@pytest.mark.slow
def test_the_right_secret_works_end_to_end_and_is_shown_only_once(tmp_path, listener, procs):
    """listen prints its secret once, on stdout, with the command lines to copy, and keeps
    it in a 0600 file; write (--secret-file) and verify (the environment variable) prove
    it; it is in no log line, run record, state file, saved report or verify output."""
    value = listener.secret.value
    secret_file = tmp_path / "state.db.secret"
    assert listener.secret_file == secret_file
    assert secret_file.read_text() == value + "\n"
    assert stat.S_IMODE(secret_file.stat().st_mode) == 0o600
    banner = wait_for(
        lambda: (t := listener.out.read_text()).endswith("DIR\n") and t, "the startup lines"
    )
    assert banner.count(value) == 0  # never printed: the file holds it
    # wrapped to the terminal; the command lines continued with " \\" as a shell reads them
    flat = " ".join(banner.replace(" \\\n", " ").split())
    assert flat.startswith(f"This listener's secret: in {secret_file} (not")
    assert f"fsyncbench powercut write --to {listener.to} --secret-file {secret_file} DIR" in flat
    assert (
        f"fsyncbench powercut verify --from {listener.to} --secret-file {secret_file} DIR" in flat
    )

    target = tmp_path / "data"
    writer, writer_log = start_writer(procs, listener, target, "--max-commits", 120)
    out, _ = writer.communicate(timeout=DEADLINE_S)
    assert writer.returncode == 0, writer_log.read_text()
    assert "the listener recorded 120" in out.decode()
    run_dir = run_dir_of(target)

    reports = tmp_path / "reports"
    proc = fsb(
        "powercut",
        "verify",
        "--from",
        listener.to,
        target,
        "--report-dir",
        reports,
        env=_env(**{ENV_VAR: value}),
    )
    assert proc.returncode == 0, proc.stderr
    assert "Result: PASS: all 120 acknowledged commits survived" in proc.stdout
    (saved,) = sorted(reports.glob("*-powercut.json"))
    shown = [
        fsb("show", saved, "--format", fmt, "-o", tmp_path / f"shown.{fmt}")
        for fmt in ("markdown", "html", "json")
    ]
    assert [p.returncode for p in shown] == [0, 0, 0]
    stop(listener)

    places = {
        "listener log": listener.log.read_bytes(),
        "writer output": out,
        "writer log": writer_log.read_bytes(),
        "run record": (run_dir / "run.json").read_bytes(),
        "verify output": (proc.stdout + proc.stderr).encode(),
        "report": saved.read_bytes(),
        **{f"shown {p.suffix}": p.read_bytes() for p in tmp_path.glob("shown.*")},
        **{p.name: p.read_bytes() for p in tmp_path.glob("state.db*") if p != secret_file},
    }
    assert len(places) >= 9
    assert [where for where, data in places.items() if value.encode() in data] == []


@pytest.mark.slow
def test_a_missing_secret_is_refused(tmp_path, listener):
    """write and verify without a secret refuse to start (one line, exit 2); a peer that
    skips the handshake, or speaks version 1, is refused with one error and closed; the
    listener records nothing."""
    target = tmp_path / "data"
    target.mkdir()
    assert one_error_line(fsb("powercut", "write", "--to", listener.to, target)) == MISSING
    assert list(target.iterdir()) == []  # nothing created in DIR
    assert one_error_line(fsb("powercut", "verify", "--from", listener.to, target)) == MISSING
    assert one_error_line(
        fsb("powercut", "write", "--to", listener.to, target, env=_env(**{ENV_VAR: "short"}))
    ) == (
        "FSYNCBENCH_POWERCUT_SECRET: not a powercut secret (16 to 256 printable ASCII "
        "characters without spaces)"
    )

    # no handshake: the hello is refused, the ack after it never read
    replies = _exchange(listener.address, hello_line() + ack_line(HELLO["run_id"], 1))
    assert replies == [
        {
            "v": 2,
            "type": "error",
            "error": "not authenticated: a connection starts with 'start', the handshake "
            "that proves the listener's secret, not 'hello'",
        }
    ]
    # another version: both versions named, to the peer and in the log
    replies = _exchange(listener.address, hello_line(v=1))
    assert replies == [
        {
            "v": 2,
            "type": "error",
            "error": "unsupported protocol version 1 (this fsyncbench speaks 2): run the same "
            "fsyncbench version on both machines",
        }
    ]
    text = listener.text()
    assert text.count("refused 127.0.0.1:") == 2
    assert "unsupported protocol version 1 (this fsyncbench speaks 2)" in text
    assert runs_on_record(listener) == []


@pytest.mark.slow
def test_a_wrong_secret_is_refused(tmp_path, listener):
    """write and verify with another secret: one line, exit 2, nothing created or recorded;
    a wrong proof on a raw connection ends it before its hello is read; the log names the
    refusal, never a secret."""
    target = tmp_path / "data"
    target.mkdir()
    wrong = tmp_path / "wrong.secret"
    wrong.write_text(OTHER.value + "\n")
    line = one_error_line(
        fsb("powercut", "write", "--to", listener.to, "--secret-file", wrong, target)
    )
    assert line == f"the listener at {listener.to} refused the connection: {REFUSED}"
    assert list(target.iterdir()) == []
    line = one_error_line(
        fsb("powercut", "verify", "--from", listener.to, target, env=_env(**{ENV_VAR: OTHER.value}))
    )
    assert line == f"the listener at {listener.to} refused the connection: {REFUSED}"
    junk = tmp_path / "junk.secret"
    junk.write_text("two words that are long enough")
    assert one_error_line(
        fsb("powercut", "write", "--to", listener.to, "--secret-file", junk, target)
    ) == (
        f"--secret-file {junk}: not a powercut secret (16 to 256 printable ASCII characters "
        "without spaces)"
    )

    with socket.create_connection(listener.address, timeout=10) as s:
        s.sendall(b'{"v":2,"type":"start"}\n')
        reader = protocol.LineReader(s, protocol.MAX_REPLY_BYTES)
        challenge = json.loads(wait_for(reader.recv_lines, "the challenge")[0])
        assert challenge["type"] == "challenge"
        auth = encode("auth", proof=proof(OTHER, challenge["nonce"]))
        s.sendall(auth + hello_line() + ack_line(HELLO["run_id"], 1))
        replies = []
        while (lines := reader.recv_lines()) is not None:
            replies += [json.loads(x) for x in lines]
    assert replies == [{"v": 2, "type": "error", "error": REFUSED}]

    assert runs_on_record(listener) == []
    text = listener.text()
    assert text.count("wrong secret: give write and verify") == 3
    assert listener.secret.value not in text and OTHER.value not in text


@pytest.mark.slow
def test_a_second_writer_on_a_live_run_is_refused_until_the_first_is_gone(
    tmp_path, listener, procs
):
    """A second connection with the right secret and the same writer identity cannot say
    hello for a run whose writer is connected, nor ack for it; once that writer's
    connection closed, the same identity may say hello again (a writer reconnects so)."""
    target = tmp_path / "data"
    writer, _log = start_writer(procs, listener, target)
    run_id = run_dir_of(target).name
    wait_recorded(listener, run_id, 50, writer)
    (info,) = runs_on_record(listener)
    identity = {k: info[k] for k in ("host", "dir", "config", "pid", "started_utc")}
    same = hello_line(run_id=run_id, **identity)
    forged = ack_line(run_id, 10**6)
    replies = _exchange(listener.address, same + forged, listener.secret)
    assert [r["type"] for r in replies] == ["error", "error"]
    assert replies[0]["error"].startswith(RUN_BUSY + " (from 127.0.0.1:")
    assert replies[0]["error"].endswith(
        f"a second writer for run {run_id} is refused while it is open"
    )
    assert replies[1]["error"] == f"ack for run {run_id} on a connection without hello"

    before = recorded(listener, run_id)[0]
    wait_recorded(listener, run_id, before + 50, writer)  # the first writer carries on
    writer.kill()
    writer.wait(timeout=DEADLINE_S)
    # the line the listener logs when a writer's connection ends, however it ended
    gone = re.compile(rf"run {run_id}: writer \S+ [^;]+; \d+ commits recorded on this connection")
    wait_for(lambda: gone.search(listener.text()), "the listener to see the writer go")
    count, acked = recorded(listener, run_id)
    assert acked == [(1, count)]  # nothing of the second connection

    replies = _exchange(listener.address, same, listener.secret)
    assert replies == [
        {"v": 2, "type": "welcome", "run_id": run_id, "count": count, "max_seq": count}
    ]
    proc, report = verify(listener, target, tmp_path / "reports")
    assert proc.returncode == 0, proc.stderr
    assert evidence(report)["acknowledged_ranges"] == [[1, count]]


# --------------------------------------------------------------------------- in process


@pytest.fixture
def server(tmp_path):
    """An in-process listener with the secret ``Secret("k" * 22)`` and its log lines."""
    lines: list[str] = []
    state = ListenerState(tmp_path / "state.db")
    srv = Listener(state, LOOPBACK, 0, lines.append, Secret("k" * 22))
    halt = threading.Event()
    thread = threading.Thread(target=srv.serve, args=(halt,), daemon=True)
    thread.start()
    try:
        yield srv, lines
    finally:
        halt.set()
        thread.join(timeout=DEADLINE_S)
        state.close()


def test_a_reconnecting_writer_waits_while_the_listener_holds_its_old_connection(server):
    """The listener has not yet noticed that the writer's old connection is dead: the
    writer's reconnect is refused as busy and retried (not fatal, logged once) until the
    old connection closes."""
    srv, _lines = server
    secret = srv.secret
    hello = {k: v for k, v in HELLO.items() if k not in ("v", "type")}
    old = socket.create_connection(srv.address, timeout=10)
    clients = []
    try:
        handshake(old, secret)
        old.sendall(hello_line())
        assert json.loads(old.recv(65536))["type"] == "welcome"
        logs: list[str] = []
        clients.append(Client(srv.address, secret))
        reporter = _Reporter(clients[-1], srv.address, secret, hello, logs.append)
        assert reporter._reconnect() is False and reporter.fatal is None
        assert reporter._reconnect() is False and reporter.fatal is None
        assert len(logs) == 1 and logs[0].endswith(
            "the listener still holds this run's previous connection (it closes it when it "
            "times out); retrying"
        )
        old.close()
        assert wait_for(reporter._reconnect, "a reconnect once the old connection closed")
        clients.append(reporter._client)
        assert reporter.fatal is None and "reconnected to the listener" in logs[-1]
    finally:
        old.close()
        for c in clients:
            c.close()


def test_a_writer_stops_when_its_listener_no_longer_takes_its_secret(server):
    """A listener restarted with another secret: the writer's reconnect is refused for good
    (fatal, with the listener's line), not retried forever."""
    srv, listener_lines = server
    hello = {k: v for k, v in HELLO.items() if k not in ("v", "type")}
    logs: list[str] = []
    with Client(srv.address, srv.secret) as client:
        reporter = _Reporter(client, srv.address, OTHER, hello, logs.append)
        assert reporter._reconnect() is False
    name = protocol.format_address(*srv.address)
    assert reporter.fatal == f"the listener at {name} refused the connection: {REFUSED}"
    assert logs == []
    assert sum("refused" in line and "wrong secret" in line for line in listener_lines) == 1
    assert not any(srv.secret.value in line or OTHER.value in line for line in listener_lines)


def test_cycle_never_repeats_the_secret_a_command_printed(tmp_path, monkeypatch):
    """powercut cycle quotes a failed command's output in its error, its log and its
    summary: where that output holds the listener's secret (a script that reads the secret
    file, a shell's trace), it shows <secret>."""
    from fsyncbench.powercut.cycle import format_summary, summary_json

    monkeypatch.delenv(ENV_VAR, raising=False)
    lines: list[str] = []
    py = shlex.quote(sys.executable)  # (a shell's cat and echo are not on Windows)
    prints_it = (
        "import sys; sys.stderr.write('using ' + open(sys.argv[1]).read().strip() + '\\n'); "
        "sys.exit(3)"
    )
    summary = fsyncbench.powercut_cycle(
        f"{py} -c {shlex.quote(prints_it)} {{secret_file}}",
        f"{py} -c pass",
        f"{py} -c pass",
        bind=LOOPBACK,
        port=0,
        state=tmp_path / "s.db",
        cut_after="0",
        seed=1,
        start_timeout_s=DEADLINE_S,
        log=lines.append,
    )
    value = (tmp_path / "s.db.secret").read_text().strip()
    assert summary.error == (
        "cycle 1: the start command ended (exit 3) before the listener recorded a commit: "
        "using <secret>"
    )
    assert lines[-1] == f"{summary.error.replace('cycle 1: ', 'cycle 1: error: ', 1)}"
    shown = "\n".join(lines) + format_summary(summary) + summary_json(summary)
    assert value not in shown and "using <secret>" in format_summary(summary)


def test_a_secret_never_shows_itself():
    s = Secret("do-not-print-me-0123456789")
    kept = ListenerSecret(s, Path("/x/state.db.secret"), True)
    start = ListenerStart(("127.0.0.1", 5400), "127.0.0.1", kept)
    for text in (repr(s), str(s), f"{s}", repr(kept), repr(start), str([s])):
        assert s.value not in text, text
    assert str(s) == "<secret>" and repr(s) == "Secret()"
    with pytest.raises(FsyncbenchError) as err:
        fsyncbench.powercut_write(".", to="127.0.0.1:9", secret=s.value.encode())
    assert str(err.value) == "secret must be a string or None, got a bytes"


def test_the_proof_is_an_hmac_of_the_nonce(tmp_path):
    s, nonce = Secret("k" * 22), "0" * 32
    want = hmac.new(b"k" * 22, b"fsyncbench powercut 2 auth\x00" + b"0" * 32, hashlib.sha256)
    assert proof(s, nonce) == want.hexdigest()
    assert proof_ok(s, nonce, want.hexdigest())
    assert not proof_ok(s, "1" * 32, want.hexdigest())
    assert not proof_ok(OTHER, nonce, want.hexdigest())


def test_where_write_and_verify_take_the_secret_from(tmp_path):
    f = tmp_path / "s"
    f.write_text("  from-the-file-0123456789\n")
    env = {ENV_VAR: "from-the-environment-0123"}
    assert client_secret(None, f, env).value == "from-the-file-0123456789"  # the file wins
    assert client_secret(None, None, env).value == "from-the-environment-0123"
    assert client_secret("from-the-api-0123456789", None, env).value == "from-the-api-0123456789"
    cases = [
        (lambda: client_secret(None, None, {}), MISSING),
        (lambda: client_secret(None, None, {ENV_VAR: "  "}), MISSING),
        (lambda: client_secret("x" * 20, f, {}), "give the secret or a --secret-file, not both"),
        (
            lambda: client_secret(None, tmp_path / "none", {}),
            f"cannot read --secret-file {tmp_path / 'none'}: No such file or directory",
        ),
        (
            lambda: client_secret("has a space 0123456789", None, {}),
            "secret: not a powercut secret (16 to 256 printable ASCII characters without spaces)",
        ),
    ]
    for call, message in cases:
        with pytest.raises(FsyncbenchError) as err:
            call()
        assert str(err.value) == message


def test_where_listen_takes_its_secret_from(tmp_path):
    state = tmp_path / "state.db"
    env = {ENV_VAR: "from-the-environment-0123"}
    new = listener_secret(state, None, {})
    assert (new.path, new.created) == (tmp_path / "state.db.secret", True)
    assert not new.path.exists()  # written once the listener is bound
    assert listener_secret(state, None, env) == ListenerSecret(Secret(env[ENV_VAR]), None, False)
    write_secret_file(new.path, new.secret)
    posix = os.name != "nt"  # Windows: no mode bits; the directory's access rules apply
    assert stat.S_IMODE(new.path.stat().st_mode) == 0o600 or not posix
    assert listener_secret(state, None, {}) == ListenerSecret(new.secret, new.path, False)
    named = tmp_path / "named.secret"
    assert listener_secret(state, named, env).path == named  # a named file beats the variable
    with pytest.raises(FsyncbenchError) as err:
        write_secret_file(new.path, Secret("another-secret-012345"))
    assert str(err.value) == f"cannot create the secret file {new.path}: File exists"
    assert loose_permissions(new.path) is None
    os.chmod(new.path, 0o644)
    loose = f"{stat.S_IMODE(new.path.stat().st_mode):04o}"  # 0644
    assert loose_permissions(new.path) == (loose if posix else None)


def test_what_listen_prints_on_startup(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "1000")  # the words; tests/test_screen_width.py the layout
    s = Secret("S3cr3t-0123456789abcdef")
    made = ListenerSecret(s, tmp_path / "state.db.secret", True)
    lan = format_start(ListenerStart(("192.0.2.20", 5400), "192.0.2.20", made))
    assert s.value not in lan
    assert lan == (
        f"This listener's secret: in {tmp_path / 'state.db.secret'} (not shown: a terminal's "
        "scrollback and a shared screen keep what is printed)\n"
        "  (made now; readable by you only; a listener restarted with that file keeps it)\n"
        "Give it to write and verify in a file (--secret-file) or in "
        "FSYNCBENCH_POWERCUT_SECRET, never on a command line (ps and the shell history show "
        "those).\n"
        f"On the machine under test, copy {tmp_path / 'state.db.secret'} there as "
        "powercut.secret, readable by its owner only (e.g. scp it, then chmod 600 "
        "powercut.secret); then run:\n"
        "  fsyncbench powercut write --to 192.0.2.20:5400 --secret-file powercut.secret DIR\n"
        "and after the power cut and the reboot:\n"
        "  fsyncbench powercut verify --from 192.0.2.20:5400 --secret-file powercut.secret DIR\n"
    )
    anywhere = format_start(ListenerStart(("0.0.0.0", 5400), "0.0.0.0", made)).splitlines()
    assert anywhere[-4:] == [
        "  fsyncbench powercut write --to HOST:5400 --secret-file powercut.secret DIR",
        "and after the power cut and the reboot:",
        "  fsyncbench powercut verify --from HOST:5400 --secret-file powercut.secret DIR",
        "(HOST: this machine's address on the network the writer is on)",
    ]
    env = format_start(ListenerStart(("::1", 5400), "::1", ListenerSecret(s, None, False)))
    assert env == (
        "This listener's secret: the one in FSYNCBENCH_POWERCUT_SECRET (not shown).\n"
        "On the machine under test, set the same FSYNCBENCH_POWERCUT_SECRET, then run:\n"
        "  fsyncbench powercut write --to [::1]:5400 DIR\n"
        "and after the power cut and the reboot:\n"
        "  fsyncbench powercut verify --from [::1]:5400 DIR\n"
    )
    assert s.value not in env


def test_the_parser_names_the_same_environment_variable():
    from fsyncbench.cli import shared_options

    assert shared_options.SECRET_ENV == ENV_VAR
    assert dataclasses.is_dataclass(Secret) and Secret.__dataclass_params__.frozen


def test_a_peer_that_never_starts_the_handshake_is_closed(tmp_path):
    """An unauthenticated connection holds a slot only until the handshake timeout."""
    lines: list[str] = []
    state = ListenerState(tmp_path / "state.db")
    srv = Listener(state, LOOPBACK, 0, lines.append, Secret("k" * 22), auth_timeout_s=0.3)
    halt = threading.Event()
    thread = threading.Thread(target=srv.serve, args=(halt,), daemon=True)
    thread.start()
    try:
        with socket.create_connection(srv.address, timeout=DEADLINE_S) as s:
            assert s.recv(1) == b""  # closed by the listener, without a word
        wait_for(lambda: any("no handshake within 0.3 s" in line for line in lines), "the log")
    finally:
        halt.set()
        thread.join(timeout=DEADLINE_S)
        state.close()


def test_peers_without_the_secret_are_refused_in_process(server):
    """The listener's side of test_a_missing_secret_is_refused and test_a_wrong_secret_is_
    refused: a hello without the handshake, a peer of version 1 and a wrong proof are each
    refused with one error, the connection closed before anything after it is read, the
    refusals logged without a secret; nothing recorded."""
    srv, lines = server
    replies = _exchange(srv.address, hello_line() + ack_line(HELLO["run_id"], 1))
    assert replies == [
        {
            "v": 2,
            "type": "error",
            "error": "not authenticated: a connection starts with 'start', the handshake "
            "that proves the listener's secret, not 'hello'",
        }
    ]
    replies = _exchange(srv.address, hello_line(v=1))
    assert replies == [
        {
            "v": 2,
            "type": "error",
            "error": "unsupported protocol version 1 (this fsyncbench speaks 2): run the same "
            "fsyncbench version on both machines",
        }
    ]
    with socket.create_connection(srv.address, timeout=10) as s:
        s.sendall(b'{"v":2,"type":"start"}\n')
        reader = protocol.LineReader(s, protocol.MAX_REPLY_BYTES)
        challenge = json.loads(wait_for(reader.recv_lines, "the challenge")[0])
        auth = encode("auth", proof=proof(OTHER, challenge["nonce"]))
        s.sendall(auth + hello_line() + ack_line(HELLO["run_id"], 1))
        replies = []
        while (got := reader.recv_lines()) is not None:
            replies += [json.loads(x) for x in got]
    assert replies == [{"v": 2, "type": "error", "error": REFUSED}]
    text = "\n".join(lines)
    assert text.count("refused 127.0.0.1:") == 3
    assert "unsupported protocol version 1 (this fsyncbench speaks 2)" in text
    assert text.count("wrong secret: give write and verify") == 1
    assert srv.secret.value not in text and OTHER.value not in text
    assert protocol.list_runs(srv.address, srv.secret, 10) == []


def test_write_and_verify_without_the_right_secret_are_one_line_in_process(
    tmp_path, server, monkeypatch, capsys
):
    """The command lines of test_a_missing_secret_is_refused and test_a_wrong_secret_is_
    refused, through cli.main in this process against the in-process listener: one line,
    exit 2, nothing created in DIR, nothing recorded."""
    from fsyncbench import cli

    srv, _lines = server
    to = protocol.format_address(*srv.address)
    target = tmp_path / "data"
    target.mkdir()
    monkeypatch.delenv(ENV_VAR, raising=False)

    def line(*args) -> str:
        code = cli.main([str(a) for a in args])
        out, err = capsys.readouterr()
        assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
        return err.removeprefix("fsyncbench: error: ").rstrip("\n")

    assert line("powercut", "write", "--to", to, target) == MISSING
    assert line("powercut", "verify", "--from", to, target) == MISSING
    wrong = tmp_path / "wrong.secret"
    wrong.write_text(OTHER.value + "\n")
    refused = f"the listener at {to} refused the connection: {REFUSED}"
    assert line("powercut", "write", "--to", to, "--secret-file", wrong, target) == refused
    monkeypatch.setenv(ENV_VAR, OTHER.value)
    assert line("powercut", "verify", "--from", to, target) == refused
    monkeypatch.setenv(ENV_VAR, "short")
    assert line("powercut", "write", "--to", to, target) == (
        "FSYNCBENCH_POWERCUT_SECRET: not a powercut secret (16 to 256 printable ASCII "
        "characters without spaces)"
    )
    junk = tmp_path / "junk.secret"
    junk.write_text("two words that are long enough")
    assert line("powercut", "write", "--to", to, "--secret-file", junk, target) == (
        f"--secret-file {junk}: not a powercut secret (16 to 256 printable ASCII characters "
        "without spaces)"
    )
    assert list(target.iterdir()) == []
    assert protocol.list_runs(srv.address, srv.secret, 10) == []
