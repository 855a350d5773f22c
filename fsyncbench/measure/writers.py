"""Concurrent writers (``run --writers``): N processes, each with its own connection to one
step journal, committing at once; the commits themselves are
:func:`fsyncbench.measure.lanes.commit_lane`.

Each writer is a process of its own (``python -m fsyncbench.measure.writers REQUEST
RESULT``), as a journal's workers are: it opens its connection, says ``ready`` on stdout
and waits for ``go START STOP`` on stdin, two readings of time.perf_counter_ns (one clock
for every process of the machine: CLOCK_MONOTONIC on Linux, mach_absolute_time on macOS,
QueryPerformanceCounter on Windows), so every writer starts at the same instant. The parent
waits for the window, the busy timeout and :data:`GRACE_S` at most, then stops a writer
that has not finished (named in its lane's ``error``): never a hang.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from fsyncbench import host as hostmod
from fsyncbench.errors import FsyncbenchError
from fsyncbench.measure import concurrency, disturbance
from fsyncbench.measure.lanes import commit_lane, create_lane_database, open_lane
from fsyncbench.model import Pragmas, WriterLane, WritersPoint

#: Most writer processes one point may start: past this a 2-core machine measures its
#: scheduler, not SQLite's lock, and each process costs about 20 MB.
MAX_WRITERS = 64
#: Time a writer gets to start Python and open its connection (s).
READY_TIMEOUT_S = 60.0
#: Time a writer gets after the window and its busy timeout before it is stopped (s).
GRACE_S = 10.0
#: Time from the go signal to the window's start (s), so every writer is spinning by then.
START_DELAY_S = 0.2
#: The start of a transaction: BEGIN IMMEDIATE takes the write lock at once, BEGIN
#: (deferred) at the first write (https://www.sqlite.org/lang_transaction.html).
BEGIN_MODES = ("immediate", "deferred")
#: Python's sqlite3 default busy timeout (its ``timeout`` argument, 5 s).
DEFAULT_BUSY_TIMEOUT_MS = 5000
#: Each point's window (s): 4 s holds thousands of commits at a few hundred µs each, and a
#: writer starved for seconds shows.
DEFAULT_WINDOW_S = 4.0

#: Called as a point starts: (its name, points done, points in all).
WritersProgress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class WritersPlan:
    """What ``run --writers`` measures: every configuration of ``configs`` at every writer
    count of ``counts``, every steps-per-commit of ``steps_per_commit`` and payload size of
    ``payload_bytes``, each point for ``window_s`` seconds on a fresh database."""

    configs: tuple[Pragmas, ...]
    counts: tuple[int, ...]
    begin: str = "immediate"
    busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS
    steps_per_commit: tuple[int, ...] = (1,)
    payload_bytes: tuple[int, ...] = (512,)
    window_s: float = DEFAULT_WINDOW_S

    @property
    def points(self) -> int:
        """How many points the plan measures."""
        n = len(self.configs) * len(self.counts)
        return n * len(self.steps_per_commit) * len(self.payload_bytes)


def measure_writers(
    plan: WritersPlan,
    directory: Path,
    primitive_of: Callable[[Pragmas], str],
    progress: WritersProgress | None = None,
    disks: Sequence[str] = (),
) -> tuple[WritersPoint, ...]:
    """Every point of ``plan`` in ``directory`` (a scratch directory the caller owns and
    removes), in order: configuration, steps per commit, payload, writer count.
    ``primitive_of`` names a configuration's per-commit sync
    (:func:`fsyncbench.measure.workloads.sqlite_sync_primitive`); ``disks`` the devices
    with flush counters under the directory (:func:`fsyncbench.host.counter_devices`, the
    last the disk holding the bytes), whose flushes while the writers start (they sync
    nothing then) tell others' flushes from theirs. Raises FsyncbenchError when a writer
    cannot start or fails."""
    points: list[WritersPoint] = []
    total = plan.points
    for pragmas in plan.configs:
        for steps in plan.steps_per_commit:
            for payload in plan.payload_bytes:
                for n in plan.counts:
                    name = f"{pragmas.label} x{n}"
                    if progress is not None:
                        progress(name, len(points), total)
                    points.append(
                        measure_point(
                            directory,
                            pragmas,
                            n,
                            plan,
                            steps,
                            payload,
                            primitive_of(pragmas),
                            disks,
                        )
                    )
    return tuple(points)


def measure_point(
    directory: Path,
    pragmas: Pragmas,
    writers: int,
    plan: WritersPlan,
    steps_per_commit: int,
    payload_bytes: int,
    primitive: str,
    disks: Sequence[str] = (),
) -> WritersPoint:
    """``writers`` processes committing into one fresh database in ``directory`` for
    ``plan.window_s`` (module docstring), with what the rest of the machine did meanwhile
    judged (:func:`fsyncbench.measure.disturbance.writers_disturbances`; ``disks`` as
    :func:`measure_writers`). Raises FsyncbenchError."""
    tag = f"{pragmas.label.replace('/', '-')}-{writers}w-{steps_per_commit}s-{payload_bytes}b"
    db = directory / f"writers-{tag}.db"
    effective = create_lane_database(db, pragmas)
    window_ns = int(plan.window_s * 1e9)
    before, cpu0 = hostmod.activity_snapshot(), _cpu_s()
    t_spawn, c_spawn = time.monotonic_ns(), hostmod.read_flush_counters(disks)
    procs: list[subprocess.Popen[str]] = []
    results = [directory / f"writers-{tag}-{i}.json" for i in range(writers)]
    try:
        for i in range(writers):
            request = directory / f"writers-{tag}-{i}-request.json"
            request.write_text(
                json.dumps(
                    {
                        "db": str(db),
                        "journal_mode": pragmas.journal_mode,
                        "synchronous": pragmas.synchronous,
                        "fullfsync": pragmas.fullfsync,
                        "writer": i,
                        "begin": plan.begin,
                        "busy_timeout_ms": plan.busy_timeout_ms,
                        "steps_per_commit": steps_per_commit,
                        "payload_bytes": payload_bytes,
                    }
                )
            )
            procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "fsyncbench.measure.writers",
                        str(request),
                        str(results[i]),
                    ],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
        for i, proc in enumerate(procs):
            _wait_ready(proc, i)
        c_ready, t_ready = hostmod.read_flush_counters(disks), time.monotonic_ns()
        start = time.perf_counter_ns() + int(START_DELAY_S * 1e9)
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write(f"go {start} {start + window_ns}\n")
            proc.stdin.flush()
        deadline = time.monotonic() + START_DELAY_S + plan.window_s
        deadline += plan.busy_timeout_ms / 1000 + GRACE_S
        lanes = tuple(_lane(proc, i, results[i], deadline) for i, proc in enumerate(procs))
        c_end, t_end = hostmod.read_flush_counters(disks), time.monotonic_ns()
        # starting Python and opening a connection syncs nothing: a quiet window
        quiet = disturbance.QuietWindow(
            t_ready - t_spawn, tuple(hostmod.flush_deltas(c_spawn, c_ready))
        )
        activity = disturbance.round_activity(
            1,
            before,
            hostmod.activity_snapshot(),
            (),
            (quiet,),
            _cpu_s() - cpu0,
            {os.getpid(), *(p.pid for p in procs)},
            disks[-1] if disks else None,
            timed=((t_end - t_ready, tuple(hostmod.flush_deltas(c_ready, c_end))),),
        )
        activity = dataclasses.replace(
            activity, disturbed=disturbance.writers_disturbances(activity)
        )
    finally:
        for proc in procs:
            _stop(proc)
        for path in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
            with contextlib.suppress(OSError):
                path.unlink()
    failed = [la.error for la in lanes if la.error and not la.samples_ns]
    if failed and len(failed) == len(lanes):
        raise FsyncbenchError(f"{pragmas.label} with {writers} writers: {failed[0]}")
    return WritersPoint(
        requested=pragmas,
        effective=effective,
        writers=writers,
        begin=plan.begin,
        busy_timeout_ms=plan.busy_timeout_ms,
        steps_per_commit=steps_per_commit,
        payload_bytes=payload_bytes,
        window_ns=window_ns,
        primitive=primitive,
        lanes=lanes,
        summary=concurrency.summarize(lanes, window_ns, steps_per_commit),
        activity=activity,
    )


def _cpu_s() -> float:
    """CPU seconds of this process and its ended children (the writers, once waited for)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _wait_ready(proc: subprocess.Popen[str], i: int) -> None:
    """Until writer ``i`` says ``ready``; FsyncbenchError with its last line if it ends
    first or :data:`READY_TIMEOUT_S` passes."""
    assert proc.stdout is not None
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line.strip() == "ready":
            return
        if not line and proc.poll() is not None:
            break
    _stop(proc)
    err = proc.stderr.read().strip().splitlines() if proc.stderr else []
    why = err[-1].removeprefix("fsyncbench: ") if err else f"exit status {proc.returncode}"
    raise FsyncbenchError(f"writer {i} did not start: {why}")


def _lane(proc: subprocess.Popen[str], i: int, result: Path, deadline: float) -> WriterLane:
    """Writer ``i``'s lane once it ends; stopped at ``deadline`` (its lane then says so)."""
    try:
        proc.wait(max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        _stop(proc)
        return WriterLane(i, (), (), (), error="did not finish in time: stopped")
    if proc.returncode != 0:
        err = proc.stderr.read().strip().splitlines() if proc.stderr else []
        why = err[-1].removeprefix("fsyncbench: ") if err else f"exit status {proc.returncode}"
        return WriterLane(i, (), (), (), error=why)
    try:
        data = json.loads(result.read_text())
    except (OSError, ValueError) as exc:
        return WriterLane(i, (), (), (), error=f"left no readable samples ({exc})")
    return WriterLane(
        writer=i,
        start_samples_ns=tuple(data["starts"]),
        samples_ns=tuple(data["latencies"]),
        lock_wait_samples_ns=tuple(data["lock_waits"]),
        busy_errors=int(data["busy_errors"]),
        abandoned=int(data["abandoned"]),
        abandoned_start_ns=int(data["abandoned_start_ns"]),
        abandoned_wait_ns=int(data["abandoned_wait_ns"]),
        error=str(data.get("error", "")),
    )


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(2.0)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()


def _interrupted(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def writer_main(argv: Sequence[str]) -> int:
    """``python -m fsyncbench.measure.writers REQUEST RESULT``: one writer (module
    docstring); exit 0, 2 with one line on stderr on an error, 3 when stopped."""
    signal.signal(signal.SIGTERM, _interrupted)
    if len(argv) != 2:
        print(
            "fsyncbench: usage: python -m fsyncbench.measure.writers REQUEST RESULT",
            file=sys.stderr,
        )
        return 2
    try:
        req = json.loads(Path(argv[0]).read_text())
        pragmas = Pragmas(req["journal_mode"], req["synchronous"], req["fullfsync"])
        conn = open_lane(Path(req["db"]), pragmas, int(req["busy_timeout_ms"]))
        print("ready", flush=True)
        words = sys.stdin.readline().split()
        if len(words) != 3 or words[0] != "go":
            return 3
        lane = commit_lane(
            conn,
            int(req["writer"]),
            str(req["begin"]),
            int(req["steps_per_commit"]),
            int(req["payload_bytes"]),
            int(words[1]),
            int(words[2]),
            time.perf_counter_ns,
        )
        conn.close()
        Path(argv[1]).write_text(json.dumps(lane.__dict__))
    except KeyboardInterrupt:
        return 3
    except BrokenPipeError:
        return 3
    except (FsyncbenchError, OSError, ValueError, KeyError) as exc:
        print(f"fsyncbench: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(writer_main(sys.argv[1:]))
