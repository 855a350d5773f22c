"""The whole power-cut experiment as one command, repeated: ``fsyncbench powercut cycle``.

diskchecker and ``powercut listen``/``write``/``verify`` need a person to pull the plug.
Here the listener side runs the experiment itself, with the user's own commands for each
step, ``--cycles`` times:

1. start the listener (in this process; the same record and secret as ``listen``);
2. run the **start** command in the background (e.g. ``ssh host fsyncbench powercut write
   --to B:5400 --secret-file s DIR``; it may keep running or return at once) and wait for
   the first commit the listener records of a new run;
3. wait a seeded random moment, drawn uniformly from ``--cut-after LO..HI`` seconds;
4. run the **cut** command (``ipmitool ... chassis power off``, a switched PDU, a smart
   plug; in the lab a SIGKILL of the guest and its drive), then the **restore** command
   (power on), if any;
5. run the **verify** command (``ssh host fsyncbench powercut verify ... --run-id {run_id}
   --format json DIR``) again and again, every ``retry_every_s``, until it gives a verdict
   (exit 0 or 1: the host is back) or ``verify_timeout_s`` passed;
6. record what the listener acknowledged and what verify found lost.

Commands are argv strings split with :func:`shlex.split` and run without a shell (the
user asks for one with ``sh -c '...'``). These placeholders are replaced in each word:
``{port}`` (the listener's port), ``{address}`` (its HOST:PORT), ``{cycle}`` (1, 2, ...),
``{secret_file}`` (the file holding the listener's secret) and, in the cut, restore and
verify commands, ``{run_id}`` (the run this cycle's writer started). When verify prints
its report JSON (``--format json``) the cycle reads the lost commits from it and checks it
judged this cycle's run; otherwise only its exit code counts.

Exit code of the whole (:attr:`CycleSummary.exit_code`): 1 when a cycle's verify found
lost acknowledged commits (or a damaged journal: its exit 1); else 2 when an error stopped
the experiment (a command failed or timed out); else 4 when a cycle could not tell (verify
saw no reboot: the cut did not cut the power); else 0.

Nothing here prints: progress goes to the ``log`` callback. Times are taken with
:func:`time.perf_counter_ns`.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

from fsyncbench.errors import FsyncbenchError
from fsyncbench.powercut import ranges as R
from fsyncbench.powercut.listener import Listener, ListenerState, utc_now
from fsyncbench.powercut.protocol import format_address
from fsyncbench.powercut.run import install_stop_handlers, restore_handlers
from fsyncbench.powercut.secret import ENV_VAR, listener_secret, write_secret_file

#: The placeholders a command may hold, and the steps that know ``{run_id}``.
PLACEHOLDERS = ("port", "address", "cycle", "secret_file", "run_id")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
#: How often the listener's record is read while waiting for the first commit (s).
POLL_S = 0.05
#: How long a command still running at the end of a cycle gets after SIGTERM (s).
TERM_GRACE_S = 5.0
#: At most this much of a command's output is kept to explain a failure (characters).
TAIL_CHARS = 400
#: What a cycle ended by Ctrl-C (or SIGTERM) says.
STOPPED = "stopped by Ctrl-C"
#: Bounds of the plan's numbers: at most a day per wait, 10,000 cycles.
MAX_SECONDS = 86_400.0
MAX_CYCLES = 10_000

Log = Callable[[str], None]


@dataclass(frozen=True)
class Command:
    """One user command: the text as given (for messages) and its argv template."""

    option: str
    text: str
    argv: tuple[str, ...]

    def expand(self, values: Mapping[str, str]) -> list[str]:
        """The argv with each ``{name}`` of ``values`` replaced (others left as they are)."""
        return [
            _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), word)
            for word in self.argv
        ]


@dataclass(frozen=True)
class CyclePlan:
    """What ``powercut cycle`` does (checked by :func:`make_plan`); times in seconds."""

    start: Command
    cut: Command
    restore: Command | None
    verify: Command
    cycles: int
    cut_after_s: tuple[float, float]
    seed: int
    start_timeout_s: float
    command_timeout_s: float
    verify_timeout_s: float
    retry_every_s: float

    def moments_s(self) -> list[float]:
        """The cut moment of each cycle, seconds after its first acknowledged commit: drawn
        uniformly from ``cut_after_s`` by :class:`random.Random` seeded with ``seed``, so the
        same seed gives the same moments (rounded to the millisecond)."""
        rng = random.Random(self.seed)
        lo, hi = self.cut_after_s
        return [round(rng.uniform(lo, hi), 3) for _ in range(self.cycles)]


def parse_seconds_range(text: str, option: str = "--cut-after") -> tuple[float, float]:
    """``"2..10"`` -> (2.0, 10.0); ``"5"`` -> (5.0, 5.0). Raises FsyncbenchError unless
    0 <= LO <= HI <= one day."""
    lo_text, sep, hi_text = str(text).partition("..")
    try:
        lo = float(lo_text)
        hi = float(hi_text) if sep else lo
    except ValueError:
        raise FsyncbenchError(
            f"{option} must be seconds or a range LO..HI (e.g. 2..10), got {text!r}"
        ) from None
    if not (0 <= lo <= hi <= MAX_SECONDS):
        raise FsyncbenchError(
            f"{option} must be a range LO..HI with 0 <= LO <= HI <= {MAX_SECONDS:g}, got {text!r}"
        )
    return lo, hi


def parse_command(text: str, option: str, *, run_id_known: bool = True) -> Command:
    """A command line (``option``: its CLI option, for messages) split with
    :func:`shlex.split`. Raises FsyncbenchError when it is empty or does not split, holds an
    unknown placeholder (or ``{run_id}`` where no run is known yet), or its program is not
    found (a name on PATH, or a path)."""
    try:
        argv = tuple(shlex.split(text))
    except ValueError as exc:
        raise FsyncbenchError(f"{option}: cannot split {text!r}: {exc}") from None
    if not argv:
        raise FsyncbenchError(f"{option}: the command is empty")
    for word in argv:
        for name in _PLACEHOLDER.findall(word):
            if name not in PLACEHOLDERS:
                raise FsyncbenchError(
                    f"{option}: unknown placeholder {{{name}}} (known: "
                    + ", ".join(f"{{{p}}}" for p in PLACEHOLDERS)
                    + ")"
                )
            if name == "run_id" and not run_id_known:
                raise FsyncbenchError(
                    f"{option}: {{run_id}} is not known yet when this command runs"
                )
    program = argv[0]
    if _PLACEHOLDER.search(program) is None and shutil.which(program) is None:
        raise FsyncbenchError(f"{option}: command not found: {program}")
    return Command(option, text, argv)


def make_plan(
    start: str,
    cut: str,
    verify: str,
    *,
    restore: str | None = None,
    cycles: int = 1,
    cut_after: str = "2..10",
    seed: int | None = None,
    start_timeout_s: float = 300.0,
    command_timeout_s: float = 120.0,
    verify_timeout_s: float = 900.0,
    retry_every_s: float = 5.0,
) -> CyclePlan:
    """The checked plan (FsyncbenchError naming the option otherwise). ``seed`` None: a
    random seed, shown in the summary so the moments can be drawn again."""
    if isinstance(cycles, bool) or not isinstance(cycles, int) or not 1 <= cycles <= MAX_CYCLES:
        raise FsyncbenchError(f"--cycles must be from 1 to {MAX_CYCLES}, got {cycles!r}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise FsyncbenchError(f"--seed must be an integer, got {seed!r}")
    for value, option in (
        (start_timeout_s, "--start-timeout-seconds"),
        (command_timeout_s, "--command-timeout-seconds"),
        (verify_timeout_s, "--verify-timeout-seconds"),
        (retry_every_s, "--retry-every-seconds"),
    ):
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not 0 < value <= MAX_SECONDS
        ):
            raise FsyncbenchError(
                f"{option} must be more than 0 and at most {MAX_SECONDS:g}, got {value!r}"
            )
    return CyclePlan(
        start=parse_command(start, "--start", run_id_known=False),
        cut=parse_command(cut, "--cut"),
        restore=None if restore is None else parse_command(restore, "--restore"),
        verify=parse_command(verify, "--verify"),
        cycles=cycles,
        cut_after_s=parse_seconds_range(cut_after),
        seed=random.SystemRandom().randrange(1 << 31) if seed is None else seed,
        start_timeout_s=float(start_timeout_s),
        command_timeout_s=float(command_timeout_s),
        verify_timeout_s=float(verify_timeout_s),
        retry_every_s=float(retry_every_s),
    )


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class CycleResult:
    """One cycle. ``outcome``: verify's ``pass``, ``fail`` or ``inconclusive``, or
    ``error`` when the cycle could not finish (``error`` says why). ``acknowledged``: the
    commits the listener recorded for the run (``at_cut``: when the cut command started);
    ``lost`` the acknowledged commits verify found missing (None: verify's output was not
    its report JSON, only its exit code counted). Times in seconds: ``cut_after_s`` the
    planned moment after the first acknowledged commit, ``back_after_s`` from the end of the
    restore (or cut) to verify's verdict."""

    cycle: int
    cut_after_s: float
    outcome: str
    run_id: str | None = None
    acknowledged: int = 0
    acknowledged_at_cut: int = 0
    lost: int | None = None
    lost_ranges: tuple[tuple[int, int], ...] = ()
    verify_exit: int | None = None
    decided_by: str | None = None
    verify_attempts: int = 0
    back_after_s: float | None = None
    error: str | None = None


@dataclass(frozen=True)
class CycleSummary:
    """The experiment: the plan's seed, cycle count and moments range, and each cycle run
    (fewer than planned when an error or Ctrl-C stopped it: ``error``)."""

    planned: int
    seed: int
    cut_after_s: tuple[float, float]
    listener: str
    results: tuple[CycleResult, ...]
    error: str | None = None
    started_utc: str = ""
    elapsed_s: float = 0.0
    notes: tuple[str, ...] = field(default=())

    @property
    def lost_cycles(self) -> int:
        return sum(r.outcome == "fail" for r in self.results)

    @property
    def exit_code(self) -> int:
        """1 a cycle failed; 2 an error stopped it; 4 a cycle could not tell; else 0."""
        if self.lost_cycles:
            return 1
        if self.error:
            return 2
        if any(r.outcome == "inconclusive" for r in self.results):
            return 4
        return 0

    @property
    def verdict(self) -> str:
        n = len(self.results)
        done = sum(r.outcome != "error" for r in self.results)
        if self.lost_cycles:
            lost = sum(r.lost or 0 for r in self.results)
            return (
                f"FAIL: {self.lost_cycles} of {done} cycles lost acknowledged commits"
                + (f" ({lost:,} in all)" if lost else "")
                + ": the storage acknowledged writes it did not keep"
            )
        if self.error:
            return f"ERROR after {done} of {self.planned} cycles: {self.error}"
        blind = [r for r in self.results if r.outcome == "inconclusive"]
        if blind:
            why = {
                "powercut-no-reboot": "verify saw no reboot: the cut did not cut the writer's power",
                "powercut-clean-stop": "the writer had stopped before the cut",
            }
            reasons = sorted({why.get(r.decided_by or "", r.decided_by or "?") for r in blind})
            return (
                f"CANNOT TELL: {len(blind)} of {n} cycles proved nothing ({'; '.join(reasons)})"
                + (", the others lost nothing" if len(blind) < n else "")
            )
        return (
            f"PASS: {n} cycles, no acknowledged commit lost (a pass is evidence, not proof: "
            "a lying cache may drain in time; repeat)"
        )


def format_summary(s: CycleSummary) -> str:
    """The summary as ``powercut cycle`` prints it: one line per cycle, then totals and the
    verdict."""
    lo, hi = s.cut_after_s
    lines = [
        f"fsyncbench powercut cycle: {len(s.results)} of {s.planned} cycles, seed {s.seed}, "
        f"cut {lo:g}..{hi:g} s after the first acknowledged commit; listener {s.listener}",
    ]
    for r in s.results:
        head = f"  cycle {r.cycle}: cut at {r.cut_after_s:.3f} s"
        if r.outcome == "error":
            lines.append(f"{head}: ERROR: {r.error}")
            continue
        lost = (
            "lost ?"
            if r.lost is None
            else f"lost {r.lost:,}"
            + (f" ({R.format_ranges(list(r.lost_ranges), 5)})" if r.lost else "")
        )
        back = "" if r.back_after_s is None else f", back after {r.back_after_s:.1f} s"
        lines.append(
            f"{head}: run {r.run_id}: {r.acknowledged:,} acknowledged "
            f"({r.acknowledged_at_cut:,} at the cut), {lost}; verify exit {r.verify_exit}"
            f" ({r.outcome}{', ' + r.decided_by if r.decided_by else ''}), "
            f"{r.verify_attempts} attempt{'s' if r.verify_attempts != 1 else ''}{back}"
        )
    acked = sum(r.acknowledged for r in s.results)
    lost_total = sum(r.lost or 0 for r in s.results)
    lines.append(
        f"Total: {len(s.results)} cycles, {acked:,} acknowledged, {lost_total:,} lost"
        + (
            f"; lost per cycle: {', '.join('?' if r.lost is None else str(r.lost) for r in s.results)}"
            if s.results
            else ""
        )
    )
    lines.extend(f"note: {n}" for n in s.notes)
    lines.append(f"Result: {s.verdict}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- running


class _Stopped(Exception):
    """Ctrl-C (or SIGTERM) while cycling."""


class _CycleError(Exception):
    """What ends a cycle early (one line)."""


def _tail(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= TAIL_CHARS else "..." + text[-TAIL_CHARS:]


def _read_tail(f: IO[bytes]) -> str:
    f.flush()
    f.seek(0)
    return _tail(f.read().decode(errors="replace"))


def _exit_text(rc: int) -> str:
    if rc < 0:
        try:
            return f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exit {rc}"


def _end(proc: subprocess.Popen[bytes]) -> None:
    """End a command this cycle started, and its process group (it was started in a new
    session, so the group is its own): SIGTERM, then SIGKILL after TERM_GRACE_S."""
    if proc.poll() is not None:
        return
    _signal_group(proc, signal.SIGTERM)
    try:
        proc.wait(TERM_GRACE_S)
    except subprocess.TimeoutExpired:
        _signal_group(proc, getattr(signal, "SIGKILL", signal.SIGTERM))
        proc.wait()


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    try:
        if sys.platform == "win32":  # no process groups of this kind
            proc.send_signal(sig)
        else:
            os.killpg(proc.pid, sig)
    except OSError:
        pass


def _popen(argv: list[str], out: IO[bytes]) -> subprocess.Popen[bytes]:
    try:
        return subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as exc:
        raise _CycleError(f"cannot run {argv[0]}: {exc.strerror or exc}") from None


class _Runner:
    """Runs the plan against a listener serving ``state``."""

    def __init__(
        self, plan: CyclePlan, state: ListenerState, values: dict[str, str], log: Log
    ) -> None:
        self.plan = plan
        self.state = state
        self.values = values
        self.log = log
        self.stop = threading.Event()

    def _sleep(self, seconds: float) -> None:
        if self.stop.wait(max(0.0, seconds)):
            raise _Stopped

    def _run(
        self, command: Command, values: Mapping[str, str], timeout_s: float
    ) -> tuple[int, str, str]:
        """(exit code, stdout, stderr tail) of a command run to its end; _CycleError when it
        cannot start or outlives ``timeout_s`` (then it is ended)."""
        argv = command.expand(values)
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            try:
                proc = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    start_new_session=True,
                )
            except OSError as exc:
                raise _CycleError(
                    f"{command.option}: cannot run {argv[0]}: {exc.strerror or exc}"
                ) from None
            deadline = time.perf_counter_ns() + int(timeout_s * 1e9)
            try:
                while proc.poll() is None:
                    if time.perf_counter_ns() > deadline:
                        raise _CycleError(
                            f"{command.option} did not finish within {timeout_s:g} s "
                            f"({_read_tail(err) or 'no output'})"
                        )
                    self._sleep(POLL_S)
            finally:
                _end(proc)
            out.seek(0)
            stdout = out.read().decode(errors="replace")
            return proc.returncode, stdout, _read_tail(err)

    def _first_ack(self, known: set[str], start: subprocess.Popen[bytes], out: IO[bytes]) -> str:
        """The new run's id once the listener recorded its first commit."""
        deadline = time.perf_counter_ns() + int(self.plan.start_timeout_s * 1e9)
        while True:
            for run_id in self.state.run_ids():
                if run_id in known:
                    continue
                info = self.state.run(run_id)
                if info and info["count"] > 0:
                    return run_id
            rc = start.poll()
            if rc is not None and rc != 0:
                raise _CycleError(
                    f"the start command ended ({_exit_text(rc)}) before the listener recorded "
                    f"a commit: {_read_tail(out) or 'no output'}"
                )
            if time.perf_counter_ns() > deadline:
                raise _CycleError(
                    f"the listener recorded no commit of a new run within "
                    f"{self.plan.start_timeout_s:g} s of the start command "
                    f"({_read_tail(out) or 'no output'})"
                )
            self._sleep(POLL_S)

    def _count(self, run_id: str) -> int:
        info = self.state.run(run_id)
        return int(info["count"]) if info else 0

    def cycle(self, n: int, moment_s: float) -> CycleResult:
        """Cycle ``n``; a Ctrl-C ends it as an error saying so (and sets ``stop``)."""
        partial: list[CycleResult] = [CycleResult(n, moment_s, "error")]
        try:
            return self._cycle(n, moment_s, partial)
        except _Stopped:
            return _replace(partial[-1], outcome="error", error=STOPPED)

    def _cycle(self, n: int, moment_s: float, partial: list[CycleResult]) -> CycleResult:
        values = {**self.values, "cycle": str(n)}
        known = set(self.state.run_ids())
        result = partial[-1]
        with tempfile.TemporaryFile() as start_out:
            start = _popen(self.plan.start.expand(values), start_out)
            try:
                self.log(f"cycle {n}: started {self.plan.start.text!r} (pid {start.pid})")
                try:
                    run_id = self._first_ack(known, start, start_out)
                except _CycleError as exc:
                    return _replace(result, error=str(exc))
                values["run_id"] = run_id
                result = _replace(result, run_id=run_id)
                partial.append(result)
                self.log(
                    f"cycle {n}: run {run_id}: first commit recorded; cutting in {moment_s:.3f} s"
                )
                self._sleep(moment_s)
                at_cut = self._count(run_id)
                result = _replace(result, acknowledged_at_cut=at_cut, acknowledged=at_cut)
                partial.append(result)
                try:
                    self._step(self.plan.cut, values, "cut")
                    if self.plan.restore is not None:
                        self._step(self.plan.restore, values, "restore")
                    back = time.perf_counter_ns()
                    self.log(f"cycle {n}: cut after {at_cut:,} acknowledged commits; verifying")
                    rc, stdout, attempts = self._verify(values)
                except _CycleError as exc:
                    return _replace(result, acknowledged=self._count(run_id), error=str(exc))
                result = _replace(
                    result,
                    acknowledged=self._count(run_id),
                    verify_exit=rc,
                    verify_attempts=attempts,
                    back_after_s=round((time.perf_counter_ns() - back) / 1e9, 3),
                )
                return _judged(result, rc, stdout)
            finally:
                _end(start)

    def _step(self, command: Command, values: Mapping[str, str], what: str) -> None:
        rc, stdout, err = self._run(command, values, self.plan.command_timeout_s)
        if rc != 0:
            said = _tail(err or stdout) or "no output"
            raise _CycleError(f"the {what} command failed ({_exit_text(rc)}): {said}")

    def _verify(self, values: Mapping[str, str]) -> tuple[int, str, int]:
        """Run verify until it gives a verdict (exit 0 or 1): (exit, stdout, attempts)."""
        plan = self.plan
        deadline = time.perf_counter_ns() + int(plan.verify_timeout_s * 1e9)
        attempts, last = 0, ""
        while True:
            attempts += 1
            remaining = (deadline - time.perf_counter_ns()) / 1e9
            try:
                rc, stdout, err = self._run(
                    plan.verify, values, max(0.001, min(plan.command_timeout_s, remaining))
                )
            except _CycleError as exc:
                rc, stdout, err = -1, "", str(exc)
            if rc in (0, 1):
                return rc, stdout, attempts
            last = f"{_exit_text(rc)}: {_tail(err or stdout) or 'no output'}" if rc != -1 else err
            if time.perf_counter_ns() + plan.retry_every_s * 1e9 > deadline:
                raise _CycleError(
                    f"verify gave no verdict within {plan.verify_timeout_s:g} s ({attempts} "
                    f"attempts; the last: {last})"
                )
            self._sleep(plan.retry_every_s)


def _replace(r: CycleResult, **changes: Any) -> CycleResult:
    return replace(r, **changes)


_NOTE = re.compile(r"^powercut (pass|fail|inconclusive): run ([0-9a-f]{32}) ")


def _judged(r: CycleResult, rc: int, stdout: str) -> CycleResult:
    """The cycle's outcome from verify's exit code and, when it printed its report JSON,
    the report: the run it judged (must be this cycle's), the lost commits, the deciding
    rule. A verify that saw no reboot or a clean stop proved nothing: inconclusive."""
    outcome = "fail" if rc == 1 else "pass"
    try:
        report = json.loads(stdout)
    except ValueError:
        report = None
    if not isinstance(report, dict) or report.get("kind") != "powercut":
        return _replace(r, outcome=outcome)
    notes = report.get("notes") or [""]
    m = _NOTE.match(str(notes[0]))
    verdict = report.get("verdict") or {}
    decided = verdict.get("decided_by")
    if m is None:
        return _replace(r, outcome=outcome, decided_by=decided)
    if m.group(2) != r.run_id:
        return _replace(
            r,
            outcome="error",
            decided_by=decided,
            error=f"verify judged run {m.group(2)}, not this cycle's run {r.run_id}: give it "
            "--run-id {run_id}",
        )
    evidence: dict[str, Any] = {}
    for finding in verdict.get("findings") or []:
        ev = finding.get("evidence") if isinstance(finding, dict) else None
        if isinstance(ev, dict) and "lost" in ev and "acknowledged" in ev:
            evidence = ev
            break
    lost = evidence.get("lost")
    spans = tuple(
        (int(a), int(b))
        for a, b in (evidence.get("lost_ranges") or [])
        if isinstance(a, int) and isinstance(b, int)
    )
    outcome = m.group(1)
    if outcome == "pass" and decided in ("powercut-no-reboot", "powercut-clean-stop"):
        outcome = "inconclusive"
    return _replace(
        r,
        outcome=outcome,
        decided_by=decided,
        lost=lost if isinstance(lost, int) else None,
        lost_ranges=spans,
    )


@contextlib.contextmanager
def _listener(
    bind: str,
    port: int,
    state_path: Path,
    secret_file: Path | None,
    environ: Mapping[str, str],
    log: Log,
) -> Iterator[tuple[ListenerState, Listener, Path | None]]:
    """The listener of :func:`fsyncbench.powercut.listener.listen`, serving in a thread
    while the block runs; ``log`` is told where its secret is (never the secret)."""
    keys = listener_secret(state_path, secret_file, environ)
    existed = state_path.exists()
    state = ListenerState(state_path)
    try:
        try:
            server = Listener(
                state, bind, port, lambda line: log(f"{utc_now()} listener: {line}"), keys.secret
            )
        except BaseException:
            if not existed:
                state.close()
                for suffix in ("", "-wal", "-shm", "-journal"):
                    Path(f"{state_path}{suffix}").unlink(missing_ok=True)
            raise
        try:
            if keys.created and keys.path is not None:
                write_secret_file(keys.path, keys.secret)
            host, port = server.address
            where = (
                f"the secret in {ENV_VAR}"
                if keys.path is None
                else f"the secret in {keys.path} ("
                + ("made now: copy it to the machine under test" if keys.created else "kept")
                + ")"
            )
            log(
                f"{utc_now()} listening on {format_address(host, port)}, state {state_path}; "
                f"peers must prove {where}"
            )
            stop = threading.Event()
            thread = threading.Thread(target=server.serve, args=(stop,), daemon=True)
            thread.start()
            try:
                yield state, server, keys.path
            finally:
                stop.set()
                thread.join(timeout=10)
        finally:
            server.close()
    finally:
        state.close()


def cycle(
    plan: CyclePlan,
    *,
    bind: str,
    port: int,
    state_path: Path,
    secret_file: Path | None,
    environ: Mapping[str, str],
    log: Log,
) -> CycleSummary:
    """Run ``plan`` (module docstring) with a listener on ``bind``:``port`` recording in
    ``state_path``, with the secret of :func:`fsyncbench.powercut.listen`. Raises
    FsyncbenchError when the listener cannot start (state, secret, address); an error in a
    cycle ends the experiment and is in the summary's ``error``, with the cycles before."""
    if not 0 <= port <= 65535:
        raise FsyncbenchError(f"--port must be from 0 to 65535, got {port}")
    if secret_file is None and environ.get(ENV_VAR, "").strip():
        for c in (plan.start, plan.cut, plan.verify, plan.restore):
            if c is not None and any("{secret_file}" in w for w in c.argv):
                raise FsyncbenchError(
                    f"{c.option}: {{secret_file}}: the listener's secret comes from {ENV_VAR} "
                    "here, not from a file (give --secret-file FILE)"
                )
    started, t0 = utc_now(), time.perf_counter_ns()
    results: list[CycleResult] = []
    error: str | None = None
    with _listener(bind, port, state_path, secret_file, environ, log) as (
        state,
        server,
        key_path,
    ):
        host, bound = server.address
        values = {
            "port": str(bound),
            "address": format_address(host, bound),
        }
        if key_path is not None:
            values["secret_file"] = str(key_path.resolve())
        runner = _Runner(plan, state, values, log)
        previous = install_stop_handlers(runner.stop)
        try:
            for n, moment in enumerate(plan.moments_s(), start=1):
                try:
                    r = runner.cycle(n, moment)
                except _CycleError as exc:
                    r = CycleResult(n, moment, "error", error=str(exc))
                results.append(r)
                log(f"cycle {n}: {r.outcome}" + (f": {r.error}" if r.error else ""))
                if r.outcome == "error":
                    error = f"cycle {n}: {r.error}"
                    break
        finally:
            restore_handlers(previous)
        listener_name = format_address(host, bound)
    return CycleSummary(
        planned=plan.cycles,
        seed=plan.seed,
        cut_after_s=plan.cut_after_s,
        listener=listener_name,
        results=tuple(results),
        error=error,
        started_utc=started,
        elapsed_s=round((time.perf_counter_ns() - t0) / 1e9, 3),
    )


def summary_json(s: CycleSummary) -> str:
    """The summary as JSON (the dataclass's fields, with ``exit_code`` and ``verdict``)."""
    from fsyncbench.jsonable import to_jsonable

    data = to_jsonable(s)
    data.update(exit_code=s.exit_code, verdict=s.verdict, lost_cycles=s.lost_cycles)
    return json.dumps(data, indent=1) + "\n"


__all__ = [
    "CyclePlan",
    "CycleResult",
    "CycleSummary",
    "Command",
    "make_plan",
    "parse_command",
    "parse_seconds_range",
    "cycle",
    "format_summary",
    "summary_json",
    "PLACEHOLDERS",
]
