"""Child processes: each policy's lane of files, the forked agent run, the pipe protocol
between child and parent, the SIGKILL and the reaping, and one policy's 30 kills."""

from __future__ import annotations

import json
import os
import select
import signal
import sqlite3
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from fsyncbench.crash.agent import _CHECKPOINT_SCHEMA, _Agent
from fsyncbench.crash.journal import StateConnection
from fsyncbench.crash.power import PowerLoss, RecordedState, cut
from fsyncbench.crash.results import (
    _EXIT_ERROR,
    _EXIT_NONDETERMINISM,
    _EXIT_OK,
    CHILD_TIMEOUT_S,
    MAX_RESTARTS,
    STEP_NAMES,
    WINDOWS,
    CrashError,
    CrashUnsupported,
    KillOutcome,
    NonDeterminismError,
    PolicyRow,
    policy_row,
)
from fsyncbench.crash.world import World
from fsyncbench.measure.scratch import STOP_SIGNALS
from fsyncbench.measure.workloads import JOURNAL_MODES, SCHEMA, SYNCHRONOUS, read_pragmas
from fsyncbench.model import Pragmas

# --------------------------------------------------------------------------------------------
# Child processes


@dataclass(frozen=True)
class _Lane:
    """Files of one policy's runs: the agent's state (journal/checkpoints) and the world.

    With ``power`` each kill is a simulated power cut (:mod:`fsyncbench.crash.power`): the
    state database lives alone in ``agent/``, children open it through a recording VFS
    that streams to ``ops.bin``, and :meth:`cut` rebuilds ``agent/`` after a kill."""

    directory: Path
    journal_mode: str
    synchronous: str
    power: PowerLoss | None = None
    fullfsync: bool | None = None

    @property
    def pragmas(self) -> Pragmas:
        """The lane's pragma combination (``fullfsync`` None: not set)."""
        return Pragmas(self.journal_mode, self.synchronous, self.fullfsync)

    @property
    def state_dir(self) -> Path:
        return self.directory if self.power is None else (self.directory / "agent").resolve()

    @property
    def state_path(self) -> Path:
        return self.state_dir / "agent.db"

    @property
    def stream_path(self) -> Path:
        return self.directory / "ops.bin"

    @property
    def world_path(self) -> Path:
        return self.directory / "world.db"

    def connect_state(self) -> StateConnection:
        if self.power is not None:
            return RecordedState(
                self.state_dir, self.state_path.name, self.stream_path, self.pragmas, self.power
            )
        conn = sqlite3.connect(self.state_path, isolation_level=None, timeout=30)
        _set_pragmas(conn, self.pragmas)
        return conn

    def cut(self) -> None:
        """After a kill: with ``power``, the power cut (:func:`fsyncbench.crash.power.cut`);
        without, nothing (a SIGKILL loses nothing handed to the kernel)."""
        if self.power is None:
            return
        try:
            cut(self.state_dir, self.state_path.name, self.stream_path, self.pragmas, self.power)
        except OSError as exc:
            raise CrashError(f"cannot rebuild the agent's files after a power cut: {exc}") from None

    def create(self) -> Pragmas:
        """Make both databases (in the parent, before any fork); returns effective pragmas."""
        self.directory.mkdir()
        self.state_dir.mkdir(exist_ok=True)
        conn = sqlite3.connect(self.state_path, isolation_level=None, timeout=30)
        _set_pragmas(conn, self.pragmas)
        try:
            conn.execute(SCHEMA)
            conn.execute(_CHECKPOINT_SCHEMA)
            effective = read_pragmas(conn, with_fullfsync=self.fullfsync is not None)
        finally:
            conn.close()
        World.create(self.world_path)
        return effective


@dataclass(frozen=True)
class _RunSpec:
    lane: _Lane
    run_id: str
    policy: str
    kill_at: tuple[int, str] | None = None
    order: tuple[str, ...] = STEP_NAMES


@dataclass(frozen=True)
class _ChildReport:
    event: str  # "point" (killed there), "done", "error"
    message: dict[str, Any]
    kill_signal: int


def _send(fd: int, message: dict[str, Any]) -> None:
    data = (json.dumps(message) + "\n").encode()
    while data:
        data = data[os.write(fd, data) :]


def _child_main(fd: int, spec: _RunSpec, parent: int) -> NoReturn:
    """Body of a forked child: run the agent, report over ``fd``, never return.

    At its kill point the child reports and waits for SIGKILL; should the parent die
    first, the child notices (its parent pid changes) and exits instead of lingering.
    """
    code = _EXIT_ERROR
    commit_ns: list[int] = []
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and cleans up

        def point(seq: int, window: str) -> None:
            if spec.kill_at == (seq, window):
                _send(fd, {"event": "point", "seq": seq, "window": window, "commit_ns": commit_ns})
                while os.getppid() == parent:  # wait here for the parent's SIGKILL
                    time.sleep(0.05)
                os._exit(_EXIT_ERROR)

        message: dict[str, Any]
        world = World(spec.lane.world_path)
        state = spec.lane.connect_state() if spec.policy != "no_persistence" else None
        try:
            agent = _Agent(spec.run_id, spec.policy, world, state, point, commit_ns)
            message = {"event": "done", "result": agent.run(spec.order)}
            code = _EXIT_OK
        except NonDeterminismError as exc:
            message = {
                "event": "error",
                "type": "NonDeterminismError",
                "message": str(exc),
                "step": exc.step,
                "recorded_name": exc.recorded_name,
                "requested_name": exc.requested_name,
            }
            code = _EXIT_NONDETERMINISM
        finally:
            world.close()
            if state is not None:
                state.close()
        # Report after closing, so the parent's waitpid does not wait for SQLite's close.
        _send(fd, {**message, "commit_ns": commit_ns})
    except BaseException as exc:  # report anything, then leave without running parent code
        code = _EXIT_ERROR
        try:
            _send(fd, {"event": "error", "type": type(exc).__name__, "message": str(exc)})
        except BaseException:
            pass
    finally:
        os._exit(code)


def _read_line(fd: int, deadline: float) -> dict[str, Any] | None:
    buf = b""
    while not buf.endswith(b"\n"):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise CrashError(f"a crash-matrix child sent nothing for {CHILD_TIMEOUT_S:.0f} s")
        ready, _, _ = select.select([fd], [], [], remaining)
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            return None
        buf += chunk
    message: dict[str, Any] = json.loads(buf)
    return message


#: Signals held back while a child is forked (see :func:`_run_child`).
_DEFERRED_SIGNALS = STOP_SIGNALS


if sys.platform == "win32":

    def _run_child(spec: _RunSpec) -> _ChildReport:
        """The crash matrix forks its children (fork(2), SIGKILL): not on Windows."""
        raise CrashError("the crash matrix forks and SIGKILLs its children: not on Windows")

else:

    def _run_child(spec: _RunSpec) -> _ChildReport:
        """Fork one agent run; SIGKILL it at ``spec.kill_at`` if it gets there; reap it."""
        read_fd, write_fd = os.pipe()
        parent = os.getpid()
        # Ctrl-C (sent to the whole process group) or SIGTERM arriving while fork runs its
        # after-fork hooks in the child would raise there, before the child can ignore it, and
        # Python prints "Exception ignored in: <function _after_fork>": the signals wait, blocked,
        # until the child has set its own dispositions (and the parent has finished forking).
        old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, _DEFERRED_SIGNALS)
        try:
            pid = os.fork()
        except OSError as exc:
            signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
            os.close(read_fd)
            os.close(write_fd)
            raise CrashError(f"cannot fork a crash-matrix child: {exc.strerror}") from None
        if pid == 0:  # child
            try:
                signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C
                for other in _DEFERRED_SIGNALS - {signal.SIGINT}:
                    signal.signal(other, signal.SIG_DFL)
                signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
                os.close(read_fd)
            finally:
                _child_main(write_fd, spec, parent)
        reaped = False
        try:
            # a signal held during the fork arrives here, inside the try: the child is then
            # killed and reaped below before anyone removes the directory it writes in
            signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
            os.close(write_fd)
            write_fd = -1
            message = _read_line(read_fd, time.monotonic() + CHILD_TIMEOUT_S)
            if message is not None and message.get("event") == "point":
                os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
            reaped = True
        finally:
            if not reaped:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                os.waitpid(pid, 0)
            os.close(read_fd)
            if write_fd >= 0:
                os.close(write_fd)
        killed_by = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
        if message is None:
            how = (
                f"signal {killed_by}"
                if killed_by
                else f"exit code {os.waitstatus_to_exitcode(status)}"
            )
            raise CrashError(f"a crash-matrix child died unreported ({how})")
        event = message["event"]
        if event == "point" and killed_by != signal.SIGKILL:
            raise CrashError(f"a crash-matrix child was to die of SIGKILL but ended with {status}")
        if event == "error" and message.get("type") != "NonDeterminismError":
            raise CrashError(
                f"a crash-matrix child failed: {message['type']}: {message['message']}"
            )
        return _ChildReport(event, message, killed_by)


def _require_fork() -> None:
    if not hasattr(os, "fork") or not hasattr(signal, "SIGKILL"):
        raise CrashUnsupported(
            f"fsyncbench crash needs os.fork and SIGKILL (Linux, macOS, BSD); {sys.platform} has "
            "no fork"
        )


def _set_pragmas(conn: Any, pragmas: Pragmas) -> None:
    """``pragmas`` on ``conn`` (sqlite3 or apsw), fullfsync first when it is set."""
    if pragmas.fullfsync is not None:
        conn.execute(f"PRAGMA fullfsync={'ON' if pragmas.fullfsync else 'OFF'}").fetchall()
    conn.execute(f"PRAGMA journal_mode={pragmas.journal_mode}").fetchall()
    conn.execute(f"PRAGMA synchronous={pragmas.synchronous}").fetchall()


def _pragmas(journal_mode: str, synchronous: str, fullfsync: bool | None = None) -> Pragmas:
    mode, sync = journal_mode.upper(), synchronous.upper()
    if mode not in JOURNAL_MODES:
        raise ValueError(f"journal mode {journal_mode!r} is not one of {', '.join(JOURNAL_MODES)}")
    if sync not in SYNCHRONOUS:
        raise ValueError(f"synchronous {synchronous!r} is not one of {', '.join(SYNCHRONOUS)}")
    return Pragmas(mode, sync, fullfsync)


def _world_counts(lane: _Lane) -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
    world = World(lane.world_path)
    try:
        return world.writes_by_run(), world.tokens_by_run(), world.calls_by_run()
    finally:
        world.close()


def _create_lane(
    base: Path, name: str, pragmas: Pragmas, power: PowerLoss | None = None
) -> tuple[_Lane, Pragmas]:
    lane = _Lane(base / name, pragmas.journal_mode, pragmas.synchronous, power, pragmas.fullfsync)
    try:
        return lane, lane.create()
    except (OSError, sqlite3.Error) as exc:
        raise CrashError(f"cannot create the crash-matrix databases in {base}: {exc}") from None


def _restart_until_complete(lane: _Lane, run_id: str, policy: str) -> list[_ChildReport]:
    """Restart a killed run from the top (each time in a new child) until it completes."""
    reports: list[_ChildReport] = []
    while len(reports) < MAX_RESTARTS:
        reports.append(_run_child(_RunSpec(lane, run_id, policy)))
        if reports[-1].event == "done":
            return reports
    raise CrashError(f"{run_id}: no completed run after {MAX_RESTARTS} restarts")


def _run_policy(
    lane: _Lane, policy: str, commit_ns: list[int], tick: Callable[[int], None]
) -> PolicyRow:
    """One policy's clean reference run and 30 kills; appends journal commit samples;
    ``tick(kills)`` after each kill's run has completed."""
    clean_id = f"{policy}/clean"
    reports = [_run_child(_RunSpec(lane, clean_id, policy))]
    runs = []
    for seq in range(1, len(STEP_NAMES) + 1):
        for window in WINDOWS:
            run_id = f"{policy}/{seq}/{window}"
            killed = _run_child(_RunSpec(lane, run_id, policy, kill_at=(seq, window)))
            if killed.event != "point":
                raise CrashError(f"{run_id}: the run never reached its kill point")
            lane.cut()
            restarts = _restart_until_complete(lane, run_id, policy)
            reports += [killed, *restarts]
            runs.append((seq, window, run_id, killed.kill_signal, len(restarts)))
            tick(len(runs))
    for report in reports:
        commit_ns.extend(report.message.get("commit_ns", ()))
    writes, tokens, _ = _world_counts(lane)
    clean_writes, clean_tokens = writes.get(clean_id, 0), tokens.get(clean_id, 0)
    outcomes = [
        KillOutcome(
            seq=seq,
            step=STEP_NAMES[seq - 1],
            window=window,
            kill_signal=kill_signal,
            restarts=restarts,
            duplicate_writes=writes.get(run_id, 0) - clean_writes,
            extra_tokens=tokens.get(run_id, 0) - clean_tokens,
        )
        for seq, window, run_id, kill_signal, restarts in runs
    ]
    return policy_row(policy, outcomes, clean_tokens, clean_writes)
