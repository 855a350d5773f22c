"""fsyncbench powercut: listener and writer as real processes over loopback (127.0.0.1 on an
ephemeral port), real SQLite, real signals; simulated losses; hostile messages. Every wait
is bounded; no durations are asserted."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import clitools
import psutil
import pytest
import this_platform
from factories import host as fake_host

from fsyncbench.errors import FsyncbenchError
from fsyncbench.model import (
    HONEST_FLUSH,
    MEASURED,
    NO_FLUSH,
    NO_STRENGTH,
    PROVEN,
    UNVERIFIABLE,
    VOLATILE_CACHE,
    Pragmas,
)
from fsyncbench.powercut import protocol
from fsyncbench.powercut import ranges as R
from fsyncbench.powercut.journal import JournalState, read_journal
from fsyncbench.powercut.judgement import PowercutFacts, judge
from fsyncbench.powercut.listener import MAX_CONNECTIONS
from fsyncbench.powercut.protocol import MAX_LINE_BYTES, ProtocolError, decode, encode
from fsyncbench.powercut.run import POWERCUT_DIRNAME, make_row
from fsyncbench.powercut.secret import ENV_VAR, Secret, proof, read_secret_file
from fsyncbench.report import store

REPO = Path(__file__).resolve().parents[1]
DEADLINE_S = 60
LOOPBACK = "127.0.0.1"
RUN_A = "a" * 32
RUN_B = "b" * 32

#: What a writer's default configuration is called here: wal/full (wal/full/fullfsync on
#: macOS, where powercut write sets fullfsync on by default).
WAL_FULL = this_platform.label("wal/full")


# --------------------------------------------------------------------------- process helpers


def _env(**extra):
    """The environment of a fsyncbench process: this checkout first on the path, no
    listener secret inherited from the caller's environment, and ``extra``."""
    env = dict(os.environ)
    env.pop(ENV_VAR, None)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def fsb(*args, timeout=120, env=None):
    return clitools.fsb(*args, timeout=timeout, env=env or _env())


def spawn(*args, log: Path, stdout=subprocess.DEVNULL, env=None):
    fh = open(log, "ab")
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "fsyncbench", *map(str, args)],
            stdout=stdout,
            stderr=fh,
            env=env or _env(),
        )
    finally:
        fh.close()


def wait_for(predicate, what: str, timeout: float = DEADLINE_S):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=DEADLINE_S)


class ListenerProc:
    """``powercut listen`` on loopback: its log (stderr) in ``log``, what it prints once
    (stdout: the secret and the command lines) in ``out``; ``secret`` read from the file it
    keeps it in (beside ``state`` unless ``--secret-file`` is among ``extra``)."""

    def __init__(
        self, tmp: Path, state: Path, port: int = 0, name: str = "listener", *extra, env=None
    ) -> None:
        self.log = tmp / f"{name}.log"
        self.out = tmp / f"{name}.out"
        with open(self.out, "wb") as out:
            self.proc = spawn(
                "powercut",
                "listen",
                "--bind",
                LOOPBACK,
                "--port",
                port,
                "--state",
                state,
                *extra,
                log=self.log,
                stdout=out,
                env=env,
            )

        def bound():
            if self.proc.poll() is not None:
                raise AssertionError(f"listener exited: {self.log.read_text()}")
            m = re.search(r"listening on 127\.0\.0\.1:(\d+)", self.log.read_text())
            return int(m.group(1)) if m else None

        self.port = wait_for(bound, "the listener to bind")
        self.address = (LOOPBACK, self.port)
        self.to = f"{LOOPBACK}:{self.port}"
        given = [str(extra[i + 1]) for i, a in enumerate(extra) if a == "--secret-file"]
        self.secret_file = Path(given[0]) if given else Path(f"{state}.secret")
        self.secret = (
            Secret((env or {})[ENV_VAR])
            if env and ENV_VAR in env and not given
            else read_secret_file(self.secret_file)
        )

    def text(self) -> str:
        return self.log.read_text()


@pytest.fixture
def procs():
    started: list[subprocess.Popen] = []
    yield started
    for p in started:
        kill(p)


@pytest.fixture
def listener(tmp_path, procs):
    lst = ListenerProc(tmp_path, tmp_path / "state.db")
    procs.append(lst.proc)
    return lst


def start_writer(procs, lst: ListenerProc, target: Path, *extra, name="writer"):
    target.mkdir(exist_ok=True)
    log = target.parent / f"{name}.log"
    proc = spawn(
        "powercut",
        "write",
        "--to",
        lst.to,
        "--secret-file",
        lst.secret_file,
        target,
        *extra,
        log=log,
        stdout=subprocess.PIPE,
    )
    procs.append(proc)
    return proc, log


def run_dir_of(target: Path) -> Path:
    def found():
        dirs = [d for d in (target / POWERCUT_DIRNAME).glob("*") if (d / "run.json").exists()]
        return dirs[0] if dirs else None

    return wait_for(found, f"a run record in {target}")


def recorded(lst: ListenerProc, run_id: str) -> tuple[int, list[tuple[int, int]]]:
    try:
        info, acked = protocol.fetch_run(lst.address, lst.secret, run_id, 10)
    except FsyncbenchError:
        return 0, []
    return info["count"], acked


def wait_recorded(lst: ListenerProc, run_id: str, at_least: int, proc=None) -> int:
    def enough():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"writer exited early with {proc.returncode}")
        n = recorded(lst, run_id)[0]
        return n if n >= at_least else None

    return wait_for(enough, f"{at_least} recorded commits of run {run_id}")


def verify(lst: ListenerProc, target: Path, out: Path, *extra):
    proc = fsb(
        "powercut",
        "verify",
        "--from",
        lst.to,
        "--secret-file",
        lst.secret_file,
        target,
        "--report-dir",
        out,
        *extra,
    )
    reports = sorted(out.glob("*-powercut.json")) if out.is_dir() else []
    return proc, (store.load_report(reports[-1]) if reports else None)


def evidence(report):
    return report.verdict.findings[0].evidence


def journal_seqs(db: Path) -> list[int]:
    conn = sqlite3.connect(db)
    try:
        return [r[0] for r in conn.execute("SELECT seq FROM steps ORDER BY seq")]
    finally:
        conn.close()


# --------------------------------------------------------------------------- real processes


@pytest.mark.slow
def test_sigkilled_writer_loses_nothing(tmp_path, listener, procs):
    """Process death does not lose the page cache: every acknowledged commit is there."""
    target = tmp_path / "data"
    writer, log = start_writer(procs, listener, target)
    run_dir = run_dir_of(target)
    wait_recorded(listener, run_dir.name, 200, writer)
    # the writer shows its commit rate and latency as it goes
    wait_for(
        lambda: re.search(
            re.escape(WAL_FULL) + r": [\d,]+ commits, [\d,]+/s, p50 .*, p99 .*listener "
            r"recorded",
            log.read_text(),
        ),
        "a status line",
    )
    writer.kill()
    writer.wait(timeout=DEADLINE_S)
    proc, report = verify(listener, target, tmp_path / "reports")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Result: PASS" in proc.stdout
    assert re.search(r"lost\s+none", proc.stdout)
    ev = evidence(report)
    assert ev["lost"] == 0 and ev["lost_ranges"] == []
    assert ev["acknowledged"] >= 200
    assert ev["integrity_check"] == ["ok"]
    assert ev["clean_stop"] is None
    assert report.kind == "powercut"
    # same boot: a pass proves nothing about power loss and the verdict says so
    assert report.verdict.path_verdict == UNVERIFIABLE
    assert report.verdict.decided_by == "powercut-no-reboot"
    # and the headline says so: a PASS alone read as proof (a new user's review)
    assert "but no power cut came between writing and verifying: this run says nothing" in (
        " ".join(proc.stdout.split())
    )


@pytest.mark.slow
def test_deleted_rows_are_reported_exactly(tmp_path, listener, procs):
    target = tmp_path / "data"
    writer, _log = start_writer(procs, listener, target, "--max-commits", 300)
    out, _ = writer.communicate(timeout=DEADLINE_S)
    assert writer.returncode == 0
    assert "the listener recorded 300" in out.decode()
    run_dir = run_dir_of(target)
    db = next(run_dir.glob("journal-*.db"))
    conn = sqlite3.connect(db)
    conn.execute("DELETE FROM steps WHERE seq BETWEEN 100 AND 102 OR seq > 250")
    conn.commit()
    conn.close()
    proc, report = verify(listener, target, tmp_path / "reports")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert re.search(r"lost\s+53 acknowledged commits: 100-102, 251-300\n", proc.stdout)
    assert "Result: FAIL: 53 of 300 acknowledged commits are lost" in proc.stdout
    assert report.verdict.path_verdict == VOLATILE_CACHE
    assert report.verdict.decided_by == "powercut-acknowledged-lost"
    assert evidence(report)["lost_ranges"] == [[100, 102], [251, 300]]
    assert report.verdict.results[0].subject == WAL_FULL
    assert report.verdict.results[0].config_durable is True
    # the saved report renders like any other
    show = fsb("show", next((tmp_path / "reports").glob("*.json")))
    assert show.returncode == 0 and "powercut-acknowledged-lost" in show.stdout


@pytest.mark.slow
def test_restored_older_copy_is_detected(tmp_path, listener, procs):
    """A crash-consistent copy taken mid-run (writer SIGSTOPped) and restored after more
    commits were acknowledged: exactly those later commits are reported lost."""
    target = tmp_path / "data"
    writer, _log = start_writer(procs, listener, target)
    run_dir = run_dir_of(target)
    run_id = run_dir.name
    wait_recorded(listener, run_id, 150, writer)
    snapshot = tmp_path / "snapshot"
    snapshot.mkdir()
    paused = psutil.Process(writer.pid)
    paused.suspend()  # SIGSTOP; NtSuspendProcess on Windows
    try:
        for f in run_dir.glob("journal-*"):
            shutil.copy2(f, snapshot / f.name)
    finally:
        paused.resume()  # SIGCONT
    probe = tmp_path / "probe"  # open a copy: opening replays the WAL into it
    shutil.copytree(snapshot, probe)
    survived = R.to_ranges(journal_seqs(next(probe.glob("journal-*.db"))))
    assert survived[0][0] == 1 and len(survived) == 1
    wait_recorded(listener, run_id, survived[-1][1] + 300, writer)
    writer.kill()
    writer.wait(timeout=DEADLINE_S)

    for f in run_dir.glob("journal-*"):
        f.unlink()
    for f in snapshot.glob("*"):
        if not f.name.endswith("-shm"):
            shutil.copy2(f, run_dir / f.name)
    _count, acked = recorded(listener, run_id)
    expected = R.subtract(acked, survived)
    assert R.count(expected) >= 300 and expected[0][0] == survived[-1][1] + 1

    proc, report = verify(listener, target, tmp_path / "reports")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert evidence(report)["lost_ranges"] == [list(r) for r in expected]
    assert (
        f"lost       {R.count(expected):,} acknowledged commits: "
        f"{R.format_ranges(expected)}" in proc.stdout
    )
    assert report.verdict.path_verdict == VOLATILE_CACHE


@pytest.mark.slow
def test_listener_restart_keeps_its_record(tmp_path, procs):
    state = tmp_path / "state.db"
    first = ListenerProc(tmp_path, state, name="listener1")
    procs.append(first.proc)
    target = tmp_path / "data"
    writer, log = start_writer(procs, first, target)
    run_id = run_dir_of(target).name
    wait_recorded(first, run_id, 100, writer)
    first.proc.kill()  # SIGKILL: no clean shutdown of the state
    first.proc.wait(timeout=DEADLINE_S)
    before = R.count(protocol_ranges_offline(state, run_id))
    assert before >= 100

    second = ListenerProc(tmp_path, state, port=first.port, name="listener2")
    procs.append(second.proc)
    assert re.search(rf"\(1 runs, {before} commits recorded\)", second.text())
    wait_recorded(second, run_id, before + 200, writer)
    writer.kill()
    writer.wait(timeout=DEADLINE_S)
    assert "reconnected to the listener" in log.read_text()
    assert f"run {run_id}: writer" in second.text() and "resumed" in second.text()

    proc, report = verify(second, target, tmp_path / "reports")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ev = evidence(report)
    assert ev["lost"] == 0
    # commits made while the listener was down were reported late, so no gap
    assert len(ev["acknowledged_ranges"]) == 1 and ev["acknowledged_ranges"][0][0] == 1
    assert ev["acknowledged"] >= before + 200


def protocol_ranges_offline(state: Path, run_id: str):
    conn = sqlite3.connect(state)
    try:
        return R.to_ranges(
            r[0]
            for r in conn.execute("SELECT seq FROM acks WHERE run_id=? ORDER BY seq", (run_id,))
        )
    finally:
        conn.close()


def _try_exchange(address, payload: bytes, secret: Secret | None = None) -> list[dict] | None:
    try:
        return _exchange(address, payload, secret)
    except OSError:
        return None


def handshake(s: socket.socket, secret: Secret) -> None:
    """The peer's side of the handshake on a raw socket: start, challenge, auth, authenticated
    (the replies are read a byte at a time, so nothing after them is consumed)."""

    def line() -> dict:
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(1)
            assert chunk, f"the listener closed the connection after {data!r}"
            data += chunk
        return json.loads(data)

    v = protocol.PROTOCOL_VERSION
    s.sendall(json.dumps({"v": v, "type": "start"}).encode() + b"\n")
    challenge = line()
    assert challenge["type"] == "challenge", challenge
    auth = {"v": v, "type": "auth", "proof": proof(secret, challenge["nonce"])}
    s.sendall(json.dumps(auth).encode() + b"\n")
    assert line() == {"v": v, "type": "authenticated"}


def _exchange(
    address, payload: bytes, secret: Secret | None = None, timeout: float = 10.0
) -> list[dict]:
    """Send raw bytes (after the handshake, given the ``secret``), half-close, read every
    reply line until the listener closes."""
    with socket.create_connection(address, timeout=timeout) as s:
        if secret is not None:
            handshake(s, secret)
        s.sendall(payload)
        s.shutdown(socket.SHUT_WR)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    return [json.loads(line) for line in data.splitlines()]


HELLO = {
    "v": protocol.PROTOCOL_VERSION,
    "type": "hello",
    "run_id": RUN_A,
    "host": "h",
    "dir": "/d",
    "config": "wal/full",
    "pid": 1,
    "started_utc": "2026-01-01T00:00:00Z",
}

BAD_LINES = [
    b"not json",
    b"[1, 2]",
    b"\xff\xfe",
    b"[" * 3000,
    b'{"v": 1, "type": "hello"}',
    b'{"v": true, "type": "ping"}',
    b'{"v": 2, "type": "nope"}',
    b'{"v": 2, "type": "ping", "extra": 1}',
    b'{"v": 2, "type": "ack", "run_id": "' + b"a" * 32 + b'", "from": 1, "to": 1}',  # no hello
    json.dumps({**HELLO, "run_id": "XYZ"}).encode(),
    json.dumps({**HELLO, "dir": "a\nb"}).encode(),
    json.dumps({**HELLO, "pid": "1"}).encode(),
    b'{"v": 2, "type": "query", "run_id": NaN}',
]


def _refuses_malformed_and_oversized(address, secret, log: Callable[[], str]) -> None:
    """Malformed lines, bad acks, oversized messages and one connection too many, each
    refused with an error (``log()``: the listener's log so far), and the listener still
    answering afterwards with none of the bad acks recorded."""
    replies = _exchange(address, b"\n".join(BAD_LINES) + b"\n", secret)
    assert [r["type"] for r in replies] == ["error"] * len(BAD_LINES)
    text = log()
    assert text.count("rejected message from") == len(BAD_LINES)
    assert "unsupported protocol version 1 (this fsyncbench speaks 2)" in text
    assert "without hello" in text

    bad_acks = [
        {"v": 2, "type": "ack", "run_id": RUN_A, "from": 5, "to": 4},
        {"v": 2, "type": "ack", "run_id": RUN_A, "from": 1, "to": 1 + protocol.MAX_ACK_SPAN},
        {"v": 2, "type": "ack", "run_id": RUN_A, "from": True, "to": 1},
        {"v": 2, "type": "ack", "run_id": RUN_A, "from": 0, "to": 1},
        {"v": 2, "type": "ack", "run_id": RUN_A, "from": 1, "to": 2**60},
        {"v": 2, "type": "ack", "run_id": RUN_B, "from": 1, "to": 1},  # another run
    ]
    payload = json.dumps(HELLO).encode() + b"\n"
    payload += b"".join(json.dumps(m).encode() + b"\n" for m in bad_acks)
    replies = _exchange(address, payload, secret)
    assert [r["type"] for r in replies] == ["welcome"] + ["error"] * len(bad_acks)

    # oversized: without a newline, and as one complete line; each closes its connection
    for blob in (
        b"x" * (3 * MAX_LINE_BYTES),
        b'{"v":2,"type":"ping","p":"' + b"y" * MAX_LINE_BYTES + b'"}\n',
    ):
        with socket.create_connection(address, timeout=10) as s:
            s.sendall(blob)
            data = b""
            while chunk := s.recv(65536):
                data += chunk
        assert json.loads(data.splitlines()[-1])["error"].startswith("message too long")
    assert log().count("exceeds the 8192-byte limit") == 2

    # too many connections: the extra one is refused, the listener carries on
    idle = [socket.create_connection(address, timeout=10) for _ in range(MAX_CONNECTIONS)]
    try:
        wait_for(
            lambda: (
                (_try_exchange(address, b"") or [])[0:1]
                == [{"v": 2, "type": "error", "error": "too many connections"}]
            ),
            "a refused connection",
        )
    finally:
        for s in idle:
            s.close()

    pong = [{"v": 2, "type": "pong"}]
    ping = b'{"v":2,"type":"ping"}\n'
    assert wait_for(lambda: _try_exchange(address, ping, secret) == pong, "a pong")
    assert protocol.fetch_run(address, secret, RUN_A)[1] == []  # no bad ack recorded


@pytest.mark.slow
def test_malformed_and_oversized_messages_do_not_crash_the_listener(listener):
    _refuses_malformed_and_oversized(listener.address, listener.secret, listener.text)
    assert listener.proc.poll() is None
    assert "Traceback" not in listener.text()


@pytest.mark.slow
def test_a_second_writer_does_not_corrupt_the_first(tmp_path, listener, procs):
    a_dir, b_dir = tmp_path / "a", tmp_path / "b"
    wa, _ = start_writer(procs, listener, a_dir, name="writer-a")
    wb, _ = start_writer(
        procs,
        listener,
        b_dir,
        "--journal-mode",
        "delete",
        "--synchronous",
        "extra",
        name="writer-b",
    )
    run_a, run_b = run_dir_of(a_dir).name, run_dir_of(b_dir).name
    assert run_a != run_b
    wait_recorded(listener, run_a, 100, wa)
    wait_recorded(listener, run_b, 100, wb)

    # a third party cannot add to A's record: not on its own run, not by claiming A's id
    rogue = {**HELLO, "run_id": "c" * 32}
    forged = {"v": 2, "type": "ack", "run_id": run_a, "from": 10**6, "to": 10**6}
    replies = _exchange(
        listener.address,
        json.dumps(rogue).encode() + b"\n" + json.dumps(forged).encode() + b"\n",
        listener.secret,
    )
    assert [r["type"] for r in replies] == ["welcome", "error"]
    info_a, _ = protocol.fetch_run(listener.address, listener.secret, run_a)
    claim = {**HELLO, "run_id": run_a, "config": info_a["config"], "dir": info_a["dir"]}
    replies = _exchange(
        listener.address,
        json.dumps(claim).encode() + b"\n" + json.dumps(forged).encode() + b"\n",
        listener.secret,
    )
    assert replies[0]["type"] == "error" and "another writer" in replies[0]["error"]

    wa.kill()
    wb.kill()
    for name, target in (("a", a_dir), ("b", b_dir)):
        proc, report = verify(listener, target, tmp_path / f"reports-{name}")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        ev = evidence(report)
        assert ev["lost"] == 0 and ev["run_id"] == (run_a if name == "a" else run_b)
        assert ev["acknowledged_ranges"][-1][1] < 10**6
        assert len(ev["acknowledged_ranges"]) == 1
    assert evidence(report)["config"] == this_platform.label("delete/extra")


@pytest.mark.slow
@pytest.mark.skipif(
    sys.platform == "win32", reason="Ctrl-C for one process: Windows sends it to the console"
)
def test_ctrl_c_stops_the_writer_cleanly(tmp_path, listener, procs):
    target = tmp_path / "data"
    writer, _log = start_writer(procs, listener, target)
    run_dir = run_dir_of(target)
    wait_recorded(listener, run_dir.name, 50, writer)
    writer.send_signal(signal.SIGINT)
    out, _ = writer.communicate(timeout=DEADLINE_S)
    assert writer.returncode == 0
    assert "stopped by Ctrl-C after" in out.decode()
    record = json.loads((run_dir / "run.json").read_text())
    assert record["stop_reason"] == "stopped by Ctrl-C"
    assert record["last_recorded_seq"] == record["last_committed_seq"]
    proc, report = verify(listener, target, tmp_path / "reports")
    assert proc.returncode == 0
    assert report.verdict.decided_by == "powercut-clean-stop"
    assert evidence(report)["acknowledged"] == record["last_committed_seq"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_cli_errors(tmp_path, listener):
    port = _free_port()
    target = tmp_path / "data"
    target.mkdir()
    keyed = _env(**{ENV_VAR: listener.secret.value})  # the secret is not what these test
    proc = fsb("powercut", "write", "--to", f"{LOOPBACK}:{port}", target, env=keyed)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        f"fsyncbench: error: cannot reach the listener at {LOOPBACK}:{port}: Connection refused"
    ]
    assert list(target.iterdir()) == []  # nothing created in DIR

    def err(*args):
        p = fsb(*args, env=keyed)
        assert p.returncode == 2 and len(p.stderr.splitlines()) == 1, p.stderr
        assert "Traceback" not in p.stderr
        return p.stderr.removeprefix("fsyncbench: error: ").rstrip("\n")

    assert (
        err("powercut", "write", "--to", "nohost", tmp_path)
        == "invalid --to 'nohost': expected HOST:PORT"
    )
    assert (
        err("powercut", "write", "--to", listener.to, tmp_path, "--journal-mode", "wal,delete")
        == "powercut write takes one journal_mode, synchronous and fullfsync value"
    )
    assert (
        err("powercut", "write", "--to", listener.to, tmp_path, "--max-commits", "0")
        == "--max-commits must be at least 1, got 0"
    )
    assert (
        err("powercut", "verify", "--from", listener.to, tmp_path)
        == f"no powercut run in {tmp_path / POWERCUT_DIRNAME}"
    )
    assert (
        err("powercut", "verify", "--from", listener.to, tmp_path, "--run-id", "f" * 32)
        == f"the listener at {listener.to} says: no record of run {'f' * 32} here"
    )
    assert (
        err("powercut", "verify", "--from", listener.to, tmp_path, "--run-id", "../x")
        == "invalid --run-id '../x': expected 32 lower-case hex digits"
    )
    assert (
        err("powercut", "listen", "--port", "70000", "--state", tmp_path / "s.db")
        == "--port must be from 0 to 65535, got 70000"
    )
    junk = tmp_path / "junk.db"
    junk.write_text("not a database at all" * 100)
    assert err("powercut", "listen", "--port", "0", "--state", junk).startswith(
        f"cannot open listener state {junk}"
    )


# --------------------------------------------------------------------------- in-process units


def test_ranges():
    assert R.to_ranges([1, 2, 3, 5, 5, 7, 8]) == [(1, 3), (5, 5), (7, 8)]
    assert R.subtract([(1, 10)], [(3, 4), (6, 6), (9, 20)]) == [(1, 2), (5, 5), (7, 8)]
    assert R.subtract([(1, 3), (10, 12)], [(2, 11)]) == [(1, 1), (12, 12)]
    assert R.subtract([(1, 5)], []) == [(1, 5)] and R.subtract([], [(1, 5)]) == []
    assert R.format_ranges([(100, 102), (251, 300), (412, 412)]) == "100-102, 251-300, 412"
    assert (
        R.format_ranges([(i, i) for i in range(1, 100, 2)], limit=2) == "1, 3, ... (48 more ranges)"
    )


def test_protocol_round_trip_and_rejections():
    line = encode("ack", run_id=RUN_A, **{"from": 1, "to": 4096})
    assert line.endswith(b"\n")
    assert decode(line[:-1], protocol.TO_LISTENER)["to"] == 4096
    with pytest.raises(ProtocolError, match="exceeds the 8192-byte limit"):
        decode(b"x" * MAX_LINE_BYTES, protocol.TO_LISTENER)
    with pytest.raises(ProtocolError, match="unexpected message type 'welcome'"):
        decode(encode("welcome", run_id=RUN_A, count=0, max_seq=0)[:-1], protocol.TO_LISTENER)
    with pytest.raises(ProtocolError, match="missing field 'to'"):
        decode(b'{"v":2,"type":"ack","run_id":"' + b"a" * 32 + b'","from":1}', protocol.TO_LISTENER)
    with pytest.raises(ProtocolError, match="ascending, disjoint"):
        encode("ranges", run_id=RUN_A, ranges=[[5, 9], [9, 12]])
    with pytest.raises(ProtocolError, match=r"unknown field\(s\) 'a\\nb'$"):
        decode(b'{"v":2,"type":"ping","a\\nb":1}', protocol.TO_LISTENER)
    with pytest.raises(ProtocolError, match="nested too deeply"):
        decode(b"[" * 5000, protocol.TO_LISTENER)


@pytest.mark.parametrize(
    "text,expected",
    [
        ("127.0.0.1:5400", ("127.0.0.1", 5400)),
        ("db2.lan:1", ("db2.lan", 1)),
        ("[::1]:5400", ("::1", 5400)),
    ],
)
def test_parse_address(text, expected):
    assert protocol.parse_address(text) == expected


@pytest.mark.parametrize("text", ["", "host", "host:", ":80", "host:0", "host:65536", "a:b:1"])
def test_parse_address_rejects(text):
    with pytest.raises(FsyncbenchError):
        protocol.parse_address(text)


def _journal(present=((1, 100),), integrity=("ok",), error=None, exists=True, damaged=()):
    return JournalState(
        "/data/j.db", exists, error, tuple(present), tuple(damaged), tuple(integrity)
    )


def _facts(
    acked=((1, 100),),
    journal=None,
    config=Pragmas("WAL", "FULL"),
    rebooted=True,
    clean_stop=None,
    host=None,
):
    return PowercutFacts(
        run_id=RUN_A,
        config=config,
        primitive="fdatasync",
        writer_host=host or fake_host(),
        acknowledged=tuple(acked),
        journal=journal or _journal(),
        rebooted=rebooted,
        clean_stop=clean_stop,
        listener="127.0.0.1:5400",
    )


LOST_91_100 = "10 of 100 acknowledged commits are missing from the journal: seq 91-100."
SURVIVED_100 = "All 100 acknowledged commits survived and the journal is intact."
CORRUPT = ("*** in database main ***", "Page 7: never used")


# Worked out from judgement.judge: the listener acknowledged 1-100 unless stated; "lost" is
# acknowledged minus present, "holes" are unacknowledged numbers missing below the highest
# present one. A failure leads the findings (in the order lost, corrupt, damaged, holes),
# then the context (config, clean stop, reboot); a pass leads with powercut-survived.
# A loss is proven only with a durable config after a reboot; a pass is one measurement.
@pytest.mark.parametrize(
    "facts,outcome,verdict,decided_by,strength,codes,evidence,says",
    [
        pytest.param(
            _facts(),
            "pass",
            HONEST_FLUSH,
            "powercut-survived",
            MEASURED,
            ["powercut-survived"],
            {
                "config": "wal/full",
                "acknowledged": 100,
                "present": 100,
                "lost": 0,
                "lost_ranges": [],
                "hole_ranges": [],
                "committed_not_acknowledged": 0,
                "rebooted": True,
            },
            SURVIVED_100,
            id="survived",
        ),
        pytest.param(
            _facts(journal=_journal(present=[(1, 120)])),
            "pass",
            HONEST_FLUSH,
            "powercut-survived",
            MEASURED,
            ["powercut-survived"],
            {"present": 120, "lost": 0, "committed_not_acknowledged": 20},  # 101-120
            "the journal is intact; 20 more were committed but not yet acknowledged.",
            id="more-than-acknowledged",
        ),
        pytest.param(
            _facts(rebooted=False),
            "pass",
            UNVERIFIABLE,
            "powercut-no-reboot",
            MEASURED,
            ["powercut-survived", "powercut-no-reboot"],
            {"rebooted": False, "lost": 0},
            SURVIVED_100,
            id="no-reboot",
        ),
        pytest.param(
            _facts(rebooted=None),
            "pass",
            HONEST_FLUSH,
            "powercut-survived",
            MEASURED,
            ["powercut-survived", "powercut-reboot-unknown"],
            {"rebooted": None},
            SURVIVED_100,
            id="reboot-unknown",
        ),
        pytest.param(
            _facts(clean_stop="stopped by Ctrl-C"),
            "pass",
            UNVERIFIABLE,
            "powercut-clean-stop",
            MEASURED,
            ["powercut-survived", "powercut-clean-stop"],
            {"clean_stop": "stopped by Ctrl-C"},
            SURVIVED_100,
            id="clean-stop",
        ),
        pytest.param(
            _facts(config=Pragmas("WAL", "NORMAL")),
            "pass",
            UNVERIFIABLE,
            "config-not-durable",
            MEASURED,
            ["powercut-survived", "config-not-durable"],
            {"config": "wal/normal", "lost": 0},
            SURVIVED_100,
            id="pass-not-durable",
        ),
        pytest.param(
            _facts(acked=()),
            "inconclusive",
            UNVERIFIABLE,
            "powercut-nothing-acknowledged",
            NO_STRENGTH,
            ["powercut-nothing-acknowledged"],
            {
                "acknowledged": 0,
                "acknowledged_ranges": [],
                "lost": 0,
                "committed_not_acknowledged": 100,
            },
            "The listener holds no acknowledged commit of this run: there is nothing to check.",
            id="nothing-acknowledged",
        ),
        pytest.param(
            _facts(journal=_journal(present=[(1, 90)])),
            "fail",
            VOLATILE_CACHE,
            "powercut-acknowledged-lost",
            PROVEN,
            ["powercut-acknowledged-lost"],
            {
                "present": 90,
                "lost": 10,
                "lost_ranges": [[91, 100]],
                "hole_ranges": [],
                "committed_not_acknowledged": 0,
            },
            LOST_91_100,
            id="lost",
        ),
        pytest.param(
            _facts(journal=_journal(present=[(1, 90)]), host=fake_host(fs_type="tmpfs")),
            "fail",
            NO_FLUSH,
            "powercut-acknowledged-lost",
            PROVEN,
            ["powercut-acknowledged-lost"],
            {"lost_ranges": [[91, 100]]},
            LOST_91_100 + " The journal was on tmpfs, which keeps data in RAM.",
            id="lost-on-tmpfs",
        ),
        pytest.param(
            _facts(
                journal=_journal(present=[(1, 90)]), host=fake_host(ld_preload="libeatmydata.so")
            ),
            "fail",
            NO_FLUSH,
            "powercut-acknowledged-lost",
            PROVEN,
            ["powercut-acknowledged-lost"],
            {"lost_ranges": [[91, 100]]},
            LOST_91_100 + " The writer ran with LD_PRELOAD=libeatmydata.so, which turns "
            "syncs into no-ops.",
            id="lost-under-eatmydata",
        ),
        pytest.param(
            _facts(journal=_journal(present=[(1, 90)]), config=Pragmas("WAL", "NORMAL")),
            "fail",
            UNVERIFIABLE,
            "config-not-durable",
            MEASURED,
            ["powercut-acknowledged-lost", "config-not-durable"],
            {"config": "wal/normal", "lost_ranges": [[91, 100]]},
            LOST_91_100,
            id="lost-wal-normal",
        ),
        pytest.param(
            _facts(journal=_journal(present=[(1, 90)]), config=Pragmas("DELETE", "FULL")),
            "fail",
            UNVERIFIABLE,
            "config-not-durable",
            MEASURED,
            ["powercut-acknowledged-lost", "config-not-durable"],
            {"config": "delete/full", "lost_ranges": [[91, 100]]},
            LOST_91_100,
            id="lost-delete-full",
        ),
        pytest.param(
            _facts(journal=_journal(present=[(1, 90)]), config=Pragmas("DELETE", "EXTRA")),
            "fail",
            VOLATILE_CACHE,
            "powercut-acknowledged-lost",
            PROVEN,
            ["powercut-acknowledged-lost"],
            {"config": "delete/extra", "lost": 10},
            LOST_91_100,
            id="lost-delete-extra",
        ),
        pytest.param(
            _facts(journal=_journal(present=[], exists=False)),
            "fail",
            VOLATILE_CACHE,
            "powercut-acknowledged-lost",
            PROVEN,
            ["powercut-acknowledged-lost"],
            {"journal_exists": False, "present": 0, "lost": 100, "lost_ranges": [[1, 100]]},
            "100 of 100 acknowledged commits are missing from the journal: seq 1-100.",
            id="journal-gone",
        ),
        pytest.param(
            _facts(journal=_journal(integrity=CORRUPT)),
            "fail",
            VOLATILE_CACHE,
            "powercut-journal-corrupt",
            PROVEN,
            ["powercut-journal-corrupt"],
            {"integrity_check": list(CORRUPT), "error": None},
            "The journal is damaged after the power cut: PRAGMA integrity_check: *** in "
            "database main ***; Page 7: never used.",
            id="journal-corrupt",
        ),
        pytest.param(
            _facts(journal=_journal(damaged=[(50, 51)])),
            "fail",
            VOLATILE_CACHE,
            "powercut-damaged-rows",
            PROVEN,
            ["powercut-damaged-rows"],
            {"damaged_ranges": [[50, 51]]},
            "2 rows differ from what the writer committed: seq 50-51.",
            id="damaged-rows",
        ),
        pytest.param(
            _facts(journal=_journal(damaged=[(50, 50)])),
            "fail",
            VOLATILE_CACHE,
            "powercut-damaged-rows",
            PROVEN,
            ["powercut-damaged-rows"],
            {"damaged_ranges": [[50, 50]]},
            "1 row differs from what the writer committed: seq 50.",
            id="damaged-row",
        ),
        pytest.param(
            _facts(acked=[(1, 50)], journal=_journal(present=[(1, 50), (60, 70)])),
            "fail",
            VOLATILE_CACHE,
            "powercut-out-of-order",
            PROVEN,
            ["powercut-out-of-order"],
            {"hole_ranges": [[51, 59]]},  # 51-59 missing below the surviving 60-70
            "Commits 51-59 are missing although later commits survived: writes reached "
            "stable media out of order.",
            id="out-of-order",
        ),
        pytest.param(
            _facts(acked=[(1, 55)], journal=_journal(present=[(1, 50), (60, 70)])),
            "fail",
            VOLATILE_CACHE,
            "powercut-acknowledged-lost",
            PROVEN,
            ["powercut-acknowledged-lost", "powercut-out-of-order"],
            # 51-55 acknowledged and gone; 56-59 never acknowledged, missing below 60-70
            {
                "lost_ranges": [[51, 55]],
                "hole_ranges": [[56, 59]],
                "committed_not_acknowledged": 11,
            },  # 60-70
            "5 of 55 acknowledged commits are missing from the journal: seq 51-55.",
            id="lost-and-out-of-order",
        ),
    ],
)
def test_judge(facts, outcome, verdict, decided_by, strength, codes, evidence, says):
    jm = judge(facts)
    assert (jm.outcome, jm.path_verdict, jm.decided_by, jm.strength) == (
        outcome,
        verdict,
        decided_by,
        strength,
    )
    assert [f.code for f in jm.findings] == codes
    first = jm.findings[0]
    assert {k: first.evidence[k] for k in evidence} == evidence
    assert first.message.endswith(says)


def test_judge_lists_lost_and_unacknowledged():
    jm = judge(_facts(acked=[(1, 100)], journal=_journal(present=[(1, 9), (13, 80), (90, 95)])))
    assert jm.lost == ((10, 12), (81, 89), (96, 100))
    jm = judge(_facts(acked=[(1, 100)], journal=_journal(present=[(1, 104)])))
    assert jm.unacknowledged == 4 and jm.lost == ()


def test_read_journal_checks_rows_and_integrity(tmp_path):
    db = tmp_path / "journal.db"
    conn = sqlite3.connect(db)
    conn.execute(
        "CREATE TABLE steps(run_id TEXT, seq INTEGER, name TEXT, input_hash TEXT, "
        "output TEXT, PRIMARY KEY (run_id, seq))"
    )
    conn.executemany(
        "INSERT INTO steps VALUES (?, ?, ?, ?, ?)", [make_row(RUN_A, s, 64) for s in (1, 2, 3, 5)]
    )
    conn.execute("INSERT INTO steps VALUES (?, 6, 'step-6', 'bad', 'x')", (RUN_A,))
    conn.execute("INSERT INTO steps VALUES (?, ?, ?, ?, ?)", make_row(RUN_B, 4, 64))
    conn.commit()
    conn.close()
    state = read_journal(db, RUN_A, 64)
    assert state.intact and state.present == ((1, 3), (5, 6)) and state.damaged == ((6, 6),)
    assert read_journal(tmp_path / "none.db", RUN_A, 64).exists is False
    junk = tmp_path / "junk.db"
    junk.write_bytes(os.urandom(8192))
    bad = read_journal(junk, RUN_A, 64)
    assert bad.exists and not bad.intact and bad.error
    assert judge(_facts(journal=bad)).decided_by == "powercut-acknowledged-lost"
    assert "powercut-journal-corrupt" in [f.code for f in judge(_facts(journal=bad)).findings]


def test_read_journal_missing_table_and_unreadable(tmp_path):
    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).close()
    empty.write_bytes(b"")
    state = read_journal(empty, RUN_A, 64)
    assert state.exists and state.present == () and state.error is None and state.note
    jm = judge(_facts(journal=state))
    assert jm.outcome == "fail" and jm.lost == ((1, 100),)
    # a locked database is not evidence about the power cut: an error, not a verdict
    db = tmp_path / "locked.db"
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("CREATE TABLE steps(run_id, seq, name, input_hash, output)")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(FsyncbenchError, match="cannot read the journal .*locked"):
            read_journal(db, RUN_A, 64, busy_timeout_s=0.1)
    finally:
        holder.execute("ROLLBACK")
        holder.close()


@pytest.mark.slow
def test_silent_writer_times_out_and_leaves_its_last_seq_in_the_log(tmp_path):
    """After a real pull the writer's connection just goes quiet: the listener closes it
    after its idle timeout and logs the highest recorded seq (in-process, short timeout)."""
    import threading

    from fsyncbench.powercut.listener import Listener
    from fsyncbench.powercut.listener_state import ListenerState

    lines: list[str] = []
    state = ListenerState(tmp_path / "state.db")
    secret = Secret("k" * 22)
    server = Listener(state, LOOPBACK, 0, lines.append, secret, idle_timeout_s=0.5)
    stop = threading.Event()
    thread = threading.Thread(target=server.serve, args=(stop,), daemon=True)
    thread.start()
    try:
        with socket.create_connection(server.address, timeout=10) as s:
            handshake(s, secret)
            s.sendall(
                json.dumps(HELLO).encode()
                + b"\n"
                + encode("ack", run_id=RUN_A, **{"from": 1, "to": 42})
            )
            wait_for(lambda: any("highest seq 42" in line for line in lines), "the idle close")
        assert any("idle for 0.5 s (power cut?)" in line for line in lines)
        assert protocol.fetch_run(server.address, secret, RUN_A)[1] == [(1, 42)]
    finally:
        stop.set()
        thread.join(timeout=DEADLINE_S)
        state.close()


def test_judge_says_how_it_knows():
    """A loss after a reboot is proof; one survived cut is a measurement, never proof."""
    lost = _journal(present=[(1, 90)])
    assert judge(_facts(journal=lost)).strength == "proven"
    assert judge(_facts(journal=lost, rebooted=False)).strength == "measured"
    assert judge(_facts()).strength == "measured"
    assert judge(_facts(acked=())).strength == "none"


def test_a_writer_whose_stack_ends_in_ram_lost_to_no_flush():
    """ext4 on a loop device backed by tmpfs: the writer host's recorded stack says so."""
    import dataclasses

    from fsyncbench.model import StorageLayer

    h = fake_host()
    layers = (
        StorageLayer("filesystem", "/data", "passes-down", 0, fs_type="ext4"),
        StorageLayer("loop", "loop0", "fsyncs-backing-file", 1),
        StorageLayer(
            "filesystem-ram", "/dev/shm", "nothing-to-flush", 2, True, True, fs_type="tmpfs"
        ),
    )
    h = dataclasses.replace(h, target=dataclasses.replace(h.target, layers=layers))
    jm = judge(_facts(journal=_journal(present=[(1, 90)]), host=h))
    assert (jm.outcome, jm.path_verdict) == ("fail", NO_FLUSH)
    assert "ended in RAM" in jm.findings[0].message


@pytest.mark.slow
def test_a_listener_that_cannot_bind_leaves_no_state_file(tmp_path):
    """Port in use (a real socket holds it) or an address not on this host: one line, exit 2,
    and the state database it would have used is not left behind; an existing one is kept."""
    import socket as _socket

    holder = _socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    port = holder.getsockname()[1]
    try:
        state = tmp_path / "state.db"
        proc = fsb("powercut", "listen", "--port", port, "--state", state)
        assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, proc.stderr
        assert "Traceback" not in proc.stderr
        assert list(tmp_path.iterdir()) == []
        foreign = fsb("powercut", "listen", "--bind", "192.0.2.1", "--port", "0", "--state", state)
        assert foreign.returncode == 2 and list(tmp_path.iterdir()) == []
    finally:
        holder.close()


# ------------------------------------------- the fast tier: the listener and writer in process
# The twins of the real processes above: the same listener code in a thread of this process
# (fsyncbench.powercut.listener.Listener, as listen and cycle run it), fed the same messages
# on the same loopback sockets; the writer's own write() in this process.


@pytest.fixture
def inproc(tmp_path):
    """An in-process listener on loopback with the secret ``Secret("k" * 22)``: (listener,
    its log lines)."""
    import threading

    from fsyncbench.powercut.listener import Listener
    from fsyncbench.powercut.listener_state import ListenerState

    lines: list[str] = []
    state = ListenerState(tmp_path / "state.db")
    server = Listener(state, LOOPBACK, 0, lines.append, Secret("k" * 22))
    halt = threading.Event()
    thread = threading.Thread(target=server.serve, args=(halt,), daemon=True)
    thread.start()
    try:
        yield server, lines
    finally:
        halt.set()
        thread.join(timeout=DEADLINE_S)
        state.close()


def test_malformed_and_oversized_messages_are_refused_in_process(inproc):
    server, lines = inproc
    _refuses_malformed_and_oversized(server.address, server.secret, lambda: "\n".join(lines))


def test_a_live_run_cannot_be_claimed_or_added_to_by_another_connection(inproc):
    """The twin of the second-writer tests (here and in test_powercut_secret.py): while a
    writer's connection holds run A, a third party's run cannot ack for A, and the same
    identity on a second connection is refused; once the first connection is gone, the
    identity may say hello again and carries on from A's record."""
    server, lines = inproc
    secret = server.secret
    holder = socket.create_connection(server.address, timeout=10)
    try:
        handshake(holder, secret)
        holder.sendall(json.dumps(HELLO).encode() + b"\n")
        holder.sendall(encode("ack", run_id=RUN_A, **{"from": 1, "to": 5}))
        wait_for(lambda: recorded_in(server, RUN_A) == [(1, 5)], "A's five commits")
        rogue = {**HELLO, "run_id": "c" * 32}
        forged = encode("ack", run_id=RUN_A, **{"from": 10**6, "to": 10**6})
        replies = _exchange(server.address, json.dumps(rogue).encode() + b"\n" + forged, secret)
        assert [r["type"] for r in replies] == ["welcome", "error"]
        same = json.dumps(HELLO).encode() + b"\n"
        replies = _exchange(server.address, same + forged, secret)
        assert [r["type"] for r in replies] == ["error", "error"]
        assert replies[0]["error"].startswith(protocol.RUN_BUSY + " (from 127.0.0.1:")
        assert replies[0]["error"].endswith(
            f"a second writer for run {RUN_A} is refused while it is open"
        )
        assert replies[1]["error"] == f"ack for run {RUN_A} on a connection without hello"
        claim = {**HELLO, "run_id": RUN_A, "host": "elsewhere"}  # not A's writer at all
        replies = _exchange(server.address, json.dumps(claim).encode() + b"\n" + forged, secret)
        assert replies[0]["type"] == "error" and "another writer" in replies[0]["error"]
    finally:
        holder.close()
    gone = re.compile(rf"run {RUN_A}: writer \S+ [^;]+; \d+ commits recorded on this connection")
    wait_for(lambda: any(gone.search(line) for line in lines), "the listener to see it go")
    assert recorded_in(server, RUN_A) == [(1, 5)]  # nothing of the other connections
    replies = _exchange(server.address, json.dumps(HELLO).encode() + b"\n", secret)
    assert replies == [{"v": 2, "type": "welcome", "run_id": RUN_A, "count": 5, "max_seq": 5}]


def recorded_in(server, run_id: str) -> list[tuple[int, int]]:
    try:
        return protocol.fetch_run(server.address, server.secret, run_id, 10)[1]
    except FsyncbenchError:
        return []


def test_a_silent_writer_is_closed_after_a_short_idle_timeout(tmp_path):
    """test_silent_writer_times_out_and_leaves_its_last_seq_in_the_log with a 0.05 s idle
    timeout."""
    import threading

    from fsyncbench.powercut.listener import Listener
    from fsyncbench.powercut.listener_state import ListenerState

    lines: list[str] = []
    state = ListenerState(tmp_path / "state.db")
    secret = Secret("k" * 22)
    server = Listener(state, LOOPBACK, 0, lines.append, secret, idle_timeout_s=0.05)
    stop = threading.Event()
    thread = threading.Thread(target=server.serve, args=(stop,), daemon=True)
    thread.start()
    try:
        with socket.create_connection(server.address, timeout=10) as s:
            handshake(s, secret)
            s.sendall(json.dumps(HELLO).encode() + b"\n")
            s.sendall(encode("ack", run_id=RUN_A, **{"from": 1, "to": 42}))
            wait_for(lambda: any("highest seq 42" in line for line in lines), "the idle close")
        assert any("idle for 0.05 s (power cut?)" in line for line in lines)
        assert protocol.fetch_run(server.address, secret, RUN_A)[1] == [(1, 42)]
    finally:
        stop.set()
        thread.join(timeout=DEADLINE_S)
        state.close()


def test_a_restarted_listener_keeps_its_record_and_the_writer_resumes(tmp_path):
    """The listener's record survives its end (its state database), the restarted one says
    what it holds and takes the same writer back where its record stops."""
    import threading

    from fsyncbench.powercut.listener import opened

    state_path = tmp_path / "state.db"
    env = {ENV_VAR: "k" * 22}
    secret = Secret("k" * 22)
    lines: list[str] = []
    for first, acks in ((True, (1, 100)), (False, (101, 150))):
        with opened(LOOPBACK, 0, state_path, None, env, lines.append) as (state, server, _k):
            stop = threading.Event()
            thread = threading.Thread(target=server.serve, args=(stop,), daemon=True)
            thread.start()
            try:
                assert state.summary() == ((0, 0) if first else (1, 100))
                with socket.create_connection(server.address, timeout=10) as s:
                    handshake(s, secret)
                    s.sendall(json.dumps(HELLO).encode() + b"\n")
                    s.sendall(encode("ack", run_id=RUN_A, **{"from": acks[0], "to": acks[1]}))
                    want = [(1, acks[1])]
                    wait_for(lambda: recorded_in(server, RUN_A) == want, "the acks")  # noqa: B023
            finally:
                stop.set()
                thread.join(timeout=DEADLINE_S)
    assert sum(f"run {RUN_A}: writer" in line and "started" in line for line in lines) == 1
    assert sum(f"run {RUN_A}: writer" in line and "resumed" in line for line in lines) == 1
    assert "; 100 commits on record" in next(line for line in lines if "resumed" in line)
    assert protocol_ranges_offline(state_path, RUN_A) == [(1, 150)]


def test_a_listener_that_cannot_bind_leaves_no_state_file_in_process(tmp_path):
    from fsyncbench.powercut.listener import opened

    holder = socket.socket()
    holder.bind((LOOPBACK, 0))
    holder.listen()
    try:
        state = tmp_path / "state.db"
        env = {ENV_VAR: "k" * 22}
        for bind, port in ((LOOPBACK, holder.getsockname()[1]), ("192.0.2.1", 0)):
            with pytest.raises(FsyncbenchError):
                with opened(bind, port, state, None, env, lambda _line: None):
                    pass
            assert list(tmp_path.iterdir()) == []
        sqlite3.connect(state).close()  # an existing state is kept
        with pytest.raises(FsyncbenchError):
            with opened(LOOPBACK, holder.getsockname()[1], state, None, env, lambda _l: None):
                pass
        assert state.exists()
    finally:
        holder.close()


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to this process (POSIX)")
def test_ctrl_c_stops_the_in_process_writer_cleanly(tmp_path, inproc):
    """The writer's own write() in this process, Ctrl-C (SIGINT to this process) after its
    first status line: a clean stop, every commit recorded by the listener, the run record
    saying so, and verify judging it a clean stop; the secret in none of it."""
    from fsyncbench.powercut.verify import verify as verify_run
    from fsyncbench.powercut.writer import write

    server, listener_lines = inproc
    target = tmp_path / "data"
    target.mkdir()
    logs: list[str] = []

    def status(_s) -> None:
        if not logs or logs[-1] != "status":
            logs.append("status")
            signal.raise_signal(signal.SIGINT)

    summary = write(
        server.address, server.secret, target, Pragmas("WAL", "FULL"), 64, None, status,
        logs.append, interval_s=0.0,
    )  # fmt: skip
    assert summary.reason == "stopped by Ctrl-C" and summary.commits >= 1
    assert summary.recorded == summary.commits
    record = json.loads((summary.run_dir / "run.json").read_text())
    assert record["stop_reason"] == "stopped by Ctrl-C"
    assert record["last_recorded_seq"] == record["last_committed_seq"] == summary.commits
    outcome = verify_run(server.address, server.secret, target, None, tmp_path / "out", ["fsb"])
    assert outcome.judgement.decided_by == "powercut-clean-stop"
    assert outcome.judgement.path_verdict == UNVERIFIABLE
    assert "but no power cut came between writing and verifying: this run says nothing" in (
        " ".join(outcome.text.split())
    )
    (saved,) = (tmp_path / "out").glob("*-powercut.json")
    places = [*logs, *listener_lines, outcome.text, saved.read_text(), json.dumps(record)]
    assert not [p for p in places if server.secret.value in p]


def test_cli_errors_in_process(tmp_path, inproc, monkeypatch, capsys):
    """The lines of test_cli_errors that tests/test_bad_inputs.py's table does not hold:
    cli.main in this process, against the in-process listener."""
    from fsyncbench import cli

    server, _lines = inproc
    monkeypatch.setenv(ENV_VAR, server.secret.value)
    monkeypatch.chdir(tmp_path)
    to = f"{LOOPBACK}:{server.address[1]}"

    def err(*args) -> str:
        code = cli.main([str(a) for a in args])
        out, text = capsys.readouterr()
        assert code == 2 and len(text.splitlines()) == 1 and "Traceback" not in text, text
        return text.removeprefix("fsyncbench: error: ").rstrip("\n")

    port = _free_port()
    target = tmp_path / "data"
    target.mkdir()
    unreachable = err("powercut", "write", "--to", f"{LOOPBACK}:{port}", target)
    assert unreachable.startswith(f"cannot reach the listener at {LOOPBACK}:{port}: ")
    if sys.platform != "win32":  # (Windows words it its own way)
        assert unreachable.endswith(": Connection refused")
    assert list(target.iterdir()) == []  # nothing created in DIR
    assert (
        err("powercut", "write", "--to", to, target, "--max-commits", "0")
        == "--max-commits must be at least 1, got 0"
    )
    assert list(target.iterdir()) == []
    assert (
        err("powercut", "verify", "--from", to, target)
        == f"no powercut run in {target / POWERCUT_DIRNAME}"
    )
    assert (
        err("powercut", "verify", "--from", to, target, "--run-id", "f" * 32)
        == f"the listener at {to} says: no record of run {'f' * 32} here"
    )
    junk = tmp_path / "junk.db"
    junk.write_text("not a database at all" * 100)
    assert err("powercut", "listen", "--port", "0", "--state", junk).startswith(
        f"cannot open listener state {junk}"
    )
