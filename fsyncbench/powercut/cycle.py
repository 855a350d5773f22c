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

Nothing here prints: progress goes to the ``log`` callback. The listener's secret is in
nothing it logs or returns: where a command's output it quotes (to explain a failure) holds
it, it shows ``<secret>``. Times are taken with :func:`time.perf_counter_ns`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import IO

from fsyncbench.errors import FsyncbenchError
from fsyncbench.powercut.cycle_plan import (
    PLACEHOLDERS,
    Command,
    CyclePlan,
    make_plan,
    parse_command,
    parse_seconds_range,
)
from fsyncbench.powercut.cycle_results import (
    CycleResult,
    CycleSummary,
    format_summary,
    judge_verify,
    summary_json,
)
from fsyncbench.powercut.listener import Listener, opened
from fsyncbench.powercut.listener_state import ListenerState, utc_now
from fsyncbench.powercut.protocol import format_address
from fsyncbench.powercut.run import install_stop_handlers, restore_handlers
from fsyncbench.powercut.secret import ENV_VAR, ListenerSecret, masked

#: How often the listener's record is read while waiting for the first commit (s).
POLL_S = 0.05
#: How long a command still running at the end of a cycle gets after SIGTERM (s).
TERM_GRACE_S = 5.0
#: At most this much of a command's output is kept to explain a failure (characters).
TAIL_CHARS = 400
#: What a cycle ended by Ctrl-C (or SIGTERM) says.
STOPPED = "stopped by Ctrl-C"
Log = Callable[[str], None]

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
            return replace(partial[-1], outcome="error", error=STOPPED)

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
                    return replace(result, error=str(exc))
                values["run_id"] = run_id
                result = replace(result, run_id=run_id)
                partial.append(result)
                self.log(
                    f"cycle {n}: run {run_id}: first commit recorded; cutting in {moment_s:.3f} s"
                )
                self._sleep(moment_s)
                at_cut = self._count(run_id)
                result = replace(result, acknowledged_at_cut=at_cut, acknowledged=at_cut)
                partial.append(result)
                try:
                    self._step(self.plan.cut, values, "cut")
                    if self.plan.restore is not None:
                        self._step(self.plan.restore, values, "restore")
                    back = time.perf_counter_ns()
                    self.log(f"cycle {n}: cut after {at_cut:,} acknowledged commits; verifying")
                    rc, stdout, attempts = self._verify(values)
                except _CycleError as exc:
                    return replace(result, acknowledged=self._count(run_id), error=str(exc))
                result = replace(
                    result,
                    acknowledged=self._count(run_id),
                    verify_exit=rc,
                    verify_attempts=attempts,
                    back_after_s=round((time.perf_counter_ns() - back) / 1e9, 3),
                )
                return judge_verify(result, rc, stdout)
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


@contextlib.contextmanager
def _listener(
    bind: str,
    port: int,
    state_path: Path,
    secret_file: Path | None,
    environ: Mapping[str, str],
    log: Log,
) -> Iterator[tuple[ListenerState, Listener, ListenerSecret]]:
    """The listener of :func:`fsyncbench.powercut.listener.listen` (started as it is:
    :func:`~fsyncbench.powercut.listener.opened`), serving in a thread while the block
    runs; ``log`` is told where its secret is (never the secret)."""
    with opened(
        bind,
        port,
        state_path,
        secret_file,
        environ,
        lambda line: log(f"{utc_now()} listener: {line}"),
    ) as (state, server, keys):
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
            yield state, server, keys
        finally:
            stop.set()
            thread.join(timeout=10)


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
    with _listener(bind, port, state_path, secret_file, environ, log) as (state, server, keys):
        # the commands' output, quoted in errors and log lines, may hold the secret (a
        # script that reads the secret file, a shell's trace): shown as <secret>
        def hide(text: str) -> str:
            return masked(text, keys.secret)

        def shown(line: str) -> None:
            log(hide(line))

        host, bound = server.address
        values = {
            "port": str(bound),
            "address": format_address(host, bound),
        }
        if keys.path is not None:
            values["secret_file"] = str(keys.path.resolve())
        runner = _Runner(plan, state, values, shown)
        previous = install_stop_handlers(runner.stop)
        try:
            for n, moment in enumerate(plan.moments_s(), start=1):
                try:
                    r = runner.cycle(n, moment)
                except _CycleError as exc:
                    r = CycleResult(n, moment, "error", error=str(exc))
                if r.error:
                    r = replace(r, error=hide(r.error))
                results.append(r)
                shown(f"cycle {n}: {r.outcome}" + (f": {r.error}" if r.error else ""))
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
