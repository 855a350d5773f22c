"""The writer: commits step rows in a loop and reports each one to the listener only after
its COMMIT returned, until Ctrl-C, ``--max-commits`` or the power goes.

The main thread only commits and times (``time.perf_counter_ns()`` around BEGIN, INSERT,
COMMIT, as in ``run``); a reporter thread sends ``ack`` ranges for commits already made,
reads ``recorded`` confirmations, pings when idle and reconnects (resending everything not
yet confirmed) if the listener goes away, so a slow or restarting listener never holds up
the disk. A commit is reported late at worst, never early. Every connection proves the
listener's secret first (:class:`~.protocol.Client`); a listener that refuses it, or refuses
the run, stops the writer, except for a refusal that passes (too many connections, or the
run still bound to this writer's old connection, which the listener closes at its idle
timeout): those are retried.
"""

from __future__ import annotations

import datetime as _dt
import os
import select
import shutil
import threading
import time
import uuid
from array import array
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from fsyncbench.errors import FsyncbenchError
from fsyncbench.measure.workloads import JournalCommit, sqlite_sync_primitive
from fsyncbench.model import Pragmas
from fsyncbench.powercut import protocol
from fsyncbench.powercut.protocol import MAX_ACK_SPAN, TO_WRITER, Client, Refused, encode
from fsyncbench.powercut.run import (
    RUN_FORMAT,
    RUN_VERSION,
    RunRecord,
    boot_id,
    install_stop_handlers,
    make_row,
    powercut_root,
    restore_handlers,
    save_run,
    writer_identity,
)
from fsyncbench.powercut.secret import ENV_VAR, Secret
from fsyncbench.report.store import fsync_dir

#: Ping the listener when nothing was reported for this long (connection.IDLE_TIMEOUT_S is 120).
PING_EVERY_S = 10.0
CONNECT_TIMEOUT_S = 5.0
#: At a clean stop, how long to wait for the listener to confirm the last reports.
FINISH_TIMEOUT_S = 10.0
RECONNECT_MAX_S = 2.0

Log = Callable[[str], None]


@dataclass(frozen=True)
class WriterStatus:
    """What the writer shows every interval; latencies cover the last interval only."""

    run_id: str
    config: str
    elapsed_s: float
    commits: int
    rate_per_s: float
    p50_ns: float | None
    p99_ns: float | None
    max_ns: float | None
    recorded: int
    connected: bool


@dataclass(frozen=True)
class WriterSummary:
    """How a writer run ended (clean stops only; a power cut leaves no summary)."""

    run_id: str
    run_dir: Path
    database: Path
    config: str
    commits: int
    recorded: int
    elapsed_s: float
    p50_ns: float | None
    p99_ns: float | None
    max_ns: float | None
    reason: str


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _percentile(sorted_ns: list[int], q: float) -> float | None:
    """Nearest-rank percentile of an already sorted list (None if empty)."""
    if not sorted_ns:
        return None
    return float(sorted_ns[min(len(sorted_ns) - 1, max(0, round(q * len(sorted_ns) + 0.5) - 1))])


class _Reporter(threading.Thread):
    """Reports committed sequence numbers; owns the listener connection."""

    def __init__(
        self,
        client: Client,
        address: tuple[str, int],
        secret: Secret,
        hello: dict[str, Any],
        log: Log,
    ) -> None:
        super().__init__(daemon=True, name="powercut-reporter")
        self._cond = threading.Condition()
        self._client: Client | None = client
        self._address = address
        self._secret = secret
        self._busy_logged = False
        self._hello = hello
        self._log = log
        self.committed = 0
        self.sent = 0
        self.recorded = 0
        self.connected = True
        #: why the listener cannot take this writer's reports any more (one line)
        self.fatal: str | None = None
        self._stopping = False
        self._deadline = 0.0

    def committed_upto(self, seq: int) -> None:
        """Called by the committing thread after COMMIT of ``seq`` returned."""
        with self._cond:
            self.committed = seq
            self._cond.notify()

    def finish(self, timeout_s: float) -> None:
        """Stop after the listener confirmed every commit, or after ``timeout_s``."""
        with self._cond:
            self._stopping = True
            self._deadline = time.monotonic() + timeout_s
            self._cond.notify()
        self.join(timeout_s + CONNECT_TIMEOUT_S + 5)
        if self._client is not None:
            self._client.close()

    def run(self) -> None:
        backoff = 0.2
        last_send = time.monotonic()
        while True:
            with self._cond:
                if self.fatal:
                    return
                if self._stopping and (
                    self.recorded >= self.committed or time.monotonic() >= self._deadline
                ):
                    return
                if self._client is not None and self.committed <= self.sent:
                    self._cond.wait(0.05)
                upto = self.committed
            if self._client is None:
                if not self._reconnect():
                    time.sleep(backoff)
                    backoff = min(RECONNECT_MAX_S, backoff * 2)
                    continue
                backoff = 0.2
                last_send = time.monotonic()
                continue
            try:
                now = time.monotonic()
                if upto > self.sent:
                    self._send_acks(self.sent + 1, upto)
                    self.sent = upto
                    last_send = now
                elif now - last_send >= PING_EVERY_S:
                    self._client.send("ping")
                    last_send = now
                self._drain()
            except FsyncbenchError as exc:
                self._log(f"{utc_now()} {exc}; reconnecting (the writer keeps committing)")
                self._client.close()
                self._client = None
                self.connected = False

    def _send_acks(self, first: int, last: int) -> None:
        assert self._client is not None
        lines = []
        for a in range(first, last + 1, MAX_ACK_SPAN):
            b = min(last, a + MAX_ACK_SPAN - 1)
            lines.append(encode("ack", run_id=self._hello["run_id"], **{"from": a, "to": b}))
        try:
            self._client.sock.sendall(b"".join(lines))
        except OSError as exc:
            raise FsyncbenchError(
                f"lost the listener at {self._client.name}: {exc.strerror or exc}"
            ) from None

    def _drain(self) -> None:
        """Handle every reply already available (no waiting)."""
        client = self._client
        assert client is not None
        while client.pending() or select.select([client.sock], [], [], 0)[0]:
            msg = client.receive(TO_WRITER)
            if msg["type"] == "error":
                self.fatal = f"the listener at {client.name} rejected a report: {msg['error']}"
                return
            if msg["type"] == "recorded" and msg["run_id"] == self._hello["run_id"]:
                with self._cond:
                    if msg["from"] <= self.recorded + 1:
                        self.recorded = max(self.recorded, msg["to"])

    def _reconnect(self) -> bool:
        try:
            client = Client(self._address, self._secret, CONNECT_TIMEOUT_S)
        except Refused as exc:  # a wrong secret (a listener restarted with another one)
            self.fatal = str(exc)
            return False
        except FsyncbenchError:
            return False
        try:
            client.send("hello", **self._hello)
            msg = client.receive(TO_WRITER)
        except FsyncbenchError:
            client.close()
            return False
        if msg["type"] == "error":
            if msg["error"].startswith(protocol.RUN_BUSY):  # our old connection: it passes
                if not self._busy_logged:
                    self._log(
                        f"{utc_now()} the listener still holds this run's previous connection "
                        "(it closes it when it times out); retrying"
                    )
                    self._busy_logged = True
            elif msg["error"] != protocol.TOO_MANY_CONNECTIONS:  # that one passes: retry
                self.fatal = f"the listener at {client.name} refused the run: {msg['error']}"
            client.close()
            return False
        if msg["type"] != "welcome":
            client.close()
            return False
        with self._cond:
            self.sent = self.recorded  # resend everything not confirmed: late, never early
        self._client = client
        self.connected = True
        self._busy_logged = False
        self._log(
            f"{utc_now()} reconnected to the listener at {client.name}; it holds "
            f"{msg['count']} commits of this run; resending from seq {self.sent + 1}"
        )
        return True


def write(
    address: tuple[str, int],
    secret: Secret,
    target: Path,
    pragmas: Pragmas,
    payload_bytes: int,
    max_commits: int | None,
    status: Callable[[WriterStatus], None],
    log: Log,
    interval_s: float = 1.0,
) -> WriterSummary:
    """Run the writer in ``target`` (an existing directory), reporting to the listener at
    ``address``, which must accept ``secret``. Raises FsyncbenchError when the listener
    cannot be reached or refuses (the secret or the run: then nothing is left in
    ``target``), or on a disk error (after recording the stop in ``run.json``)."""
    if payload_bytes < 1:
        raise FsyncbenchError(f"--payload-bytes must be at least 1, got {payload_bytes}")
    if max_commits is not None and max_commits < 1:
        raise FsyncbenchError(f"--max-commits must be at least 1, got {max_commits}")
    from fsyncbench.host import collect_host

    # reachable, and the secret accepted, before anything is created
    client = Client(address, secret, CONNECT_TIMEOUT_S)
    run_dir: Path | None = None
    journal: JournalCommit | None = None
    try:
        host = collect_host(str(target))
        run_id = uuid.uuid4().hex
        started = utc_now()
        root = powercut_root(target)
        try:
            root.mkdir(exist_ok=True)
            fsync_dir(target)
            run_dir = root / run_id
            run_dir.mkdir()
            fsync_dir(root)
        except OSError as exc:
            raise FsyncbenchError(f"cannot create {root / run_id}: {exc.strerror or exc}") from None
        journal = JournalCommit(run_dir, pragmas, payload_bytes)
        database = next(run_dir.glob("journal-*.db"))
        fsync_dir(run_dir)  # the database (and a WAL file) now exist durably
        apple_sqlite = host.os_name == "Darwin" and (host.sqlite_library or "").startswith(
            "/usr/lib/"
        )
        record = RunRecord(
            format=RUN_FORMAT,
            version=RUN_VERSION,
            run_id=run_id,
            started_utc=started,
            pid=os.getpid(),
            boot_id=boot_id(),
            target=str(target),
            database=database.name,
            listener=client.name,
            requested=pragmas,
            effective=journal.effective,
            primitive=sqlite_sync_primitive(host.os_name, journal.effective, apple_sqlite),
            payload_bytes=payload_bytes,
            host=host,
        )
        save_run(run_dir, record)
        host_text, dir_text = writer_identity(host.hostname, target)
        hello = {
            "run_id": run_id,
            "host": host_text,
            "dir": dir_text,
            "config": journal.effective.label,
            "pid": os.getpid(),
            "started_utc": started,
        }
        client.send("hello", **hello)
        msg = client.receive(TO_WRITER)
        if msg["type"] != "welcome":
            raise FsyncbenchError(
                f"the listener at {client.name} refused the run: {msg.get('error', msg['type'])}"
            )
    except BaseException:
        client.close()
        if journal is not None:
            journal.close()
        if run_dir is not None:
            shutil.rmtree(run_dir, ignore_errors=True)
        raise
    log(
        f"{started} run {run_id}: committing {journal.effective.label} step rows to {database}; "
        f"reporting each commit to {client.name} after COMMIT returns."
    )
    log(
        "Pull the power cord while this runs. After the reboot run: fsyncbench powercut verify "
        f"--from {client.name} {target} (with the same --secret-file or {ENV_VAR})"
    )
    if journal.effective != pragmas:
        log(f"note: SQLite ran {pragmas.label} as {journal.effective.label}")

    reporter = _Reporter(client, address, secret, hello, log)
    reporter.start()
    stop = threading.Event()
    previous = install_stop_handlers(stop)
    samples = array("q")
    interval: list[int] = []
    seq = 0
    error: FsyncbenchError | None = None
    reason = "stopped by Ctrl-C"
    t_start = time.monotonic()
    t_interval, next_status = t_start, t_start + interval_s
    label = journal.effective.label
    try:
        try:
            while not stop.is_set():
                if max_commits is not None and seq >= max_commits:
                    reason = f"--max-commits {max_commits} reached"
                    break
                if reporter.fatal:
                    raise FsyncbenchError(reporter.fatal)
                row = make_row(run_id, seq + 1, payload_bytes)
                t0 = time.perf_counter_ns()
                journal.run(row)
                dt = time.perf_counter_ns() - t0
                seq += 1
                reporter.committed_upto(seq)  # only now: COMMIT has returned
                samples.append(dt)
                interval.append(dt)
                now = time.monotonic()
                if now >= next_status:
                    status(
                        _status(
                            run_id, label, now - t_start, seq, interval, now - t_interval, reporter
                        )
                    )
                    interval, t_interval, next_status = [], now, now + interval_s
        except FsyncbenchError as exc:
            error = exc
            reason = f"error: {exc}"
        finally:
            journal.close()
        reporter.finish(FINISH_TIMEOUT_S)
        elapsed = time.monotonic() - t_start
        record = replace(
            record,
            stopped_utc=utc_now(),
            stop_reason=reason,
            last_committed_seq=seq,
            last_recorded_seq=reporter.recorded,
        )
        save_run(run_dir, record)
    finally:
        restore_handlers(previous)
    if error is not None:
        raise FsyncbenchError(
            f"{error} (after {seq} commits; the listener recorded {reporter.recorded})"
        )
    ordered = sorted(samples)
    return WriterSummary(
        run_id=run_id,
        run_dir=run_dir,
        database=database,
        config=label,
        commits=seq,
        recorded=reporter.recorded,
        elapsed_s=elapsed,
        p50_ns=_percentile(ordered, 0.5),
        p99_ns=_percentile(ordered, 0.99),
        max_ns=float(ordered[-1]) if ordered else None,
        reason=reason,
    )


def _status(
    run_id: str,
    label: str,
    elapsed_s: float,
    seq: int,
    interval: list[int],
    span_s: float,
    reporter: _Reporter,
) -> WriterStatus:
    ordered = sorted(interval)
    return WriterStatus(
        run_id=run_id,
        config=label,
        elapsed_s=elapsed_s,
        commits=seq,
        rate_per_s=len(interval) / span_s if span_s > 0 else 0.0,
        p50_ns=_percentile(ordered, 0.5),
        p99_ns=_percentile(ordered, 0.99),
        max_ns=float(ordered[-1]) if ordered else None,
        recorded=reporter.recorded,
        connected=reporter.connected,
    )


def format_status(s: WriterStatus, cols: int | None = None) -> str:
    """One status line: commits, rate and latency of the last interval, listener state;
    within ``cols`` columns where given (a status line rewritten in place on a terminal
    must stay one line): the longest maximum, then the words around the figures, are left
    out first."""
    from fsyncbench.fmt import fmt_ns

    recorded = f"{s.recorded:,}"
    forms = [
        (
            f"{s.elapsed_s:7.0f} s  {s.config}: {s.commits:,} commits, {s.rate_per_s:,.0f}/s, "
            f"p50 {fmt_ns(s.p50_ns)}, p99 {fmt_ns(s.p99_ns)}, max {fmt_ns(s.max_ns)} | "
            + (
                f"listener recorded {recorded}"
                if s.connected
                else f"listener UNREACHABLE, retrying (recorded {recorded})"
            )
        ),
        (
            f"{s.elapsed_s:.0f} s {s.config}: {s.commits:,} commits, {s.rate_per_s:,.0f}/s, "
            f"p50 {fmt_ns(s.p50_ns)}, p99 {fmt_ns(s.p99_ns)} | "
            + (f"recorded {recorded}" if s.connected else f"UNREACHABLE (recorded {recorded})")
        ),
        (
            f"{s.elapsed_s:.0f}s {s.commits:,} ({s.rate_per_s:,.0f}/s) p99 {fmt_ns(s.p99_ns)} | "
            + (recorded if s.connected else f"UNREACHABLE {recorded}")
        ),
    ]
    if cols is None:
        return forms[0]
    return next((f for f in forms if len(f) <= cols), forms[-1][:cols])


def format_summary(s: WriterSummary) -> str:
    """What the writer says at a clean stop."""
    from fsyncbench.fmt import fmt_ns

    lines = [
        f"run {s.run_id}: {s.reason} after {s.commits:,} commits in {s.elapsed_s:.1f} s "
        f"({s.commits / s.elapsed_s if s.elapsed_s else 0:,.0f}/s; p50 {fmt_ns(s.p50_ns)}, "
        f"p99 {fmt_ns(s.p99_ns)}, max {fmt_ns(s.max_ns)}); the listener recorded {s.recorded:,}.",
        f"journal: {s.database}",
        "This was a clean stop, not a power cut: verify will say the run proves nothing about "
        "power loss. For a real test pull the power while the writer runs.",
    ]
    if s.recorded < s.commits:
        lines.insert(
            1,
            f"{s.commits - s.recorded:,} commits were not confirmed by the listener "
            "(it was unreachable or slow); they are simply not counted.",
        )
    return "\n".join(lines)
