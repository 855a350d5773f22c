"""Command line: the only module that prints or exits. Each command parses its options
(:mod:`fsyncbench.cli_parser`), makes one call into :mod:`fsyncbench.api` that returns the
result or raises, prints it (or writes it to ``-o FILE``, saves the report files) and
returns the exit code.

Exit codes: 0 ok; 1 durability risk found (only when a gate option asks); 2 usage or
runtime error (one line on stderr, never a traceback).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from types import FrameType
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

from fsyncbench import api
from fsyncbench.cli_parser import build_parser, glue_negative_values
from fsyncbench.errors import FsyncbenchError, Interrupted
from fsyncbench.model import EXPERIMENT_KINDS, Report
from fsyncbench.report.answer import DEFAULT_MODEL_CALL_MS

if TYPE_CHECKING:  # for annotations only: both are imported where they are used
    from tqdm import tqdm

    from fsyncbench.powercut.secret import ListenerStart
    from fsyncbench.powercut.writer import WriterStatus

__all__ = ["main", "build_parser", "EXIT_OK", "EXIT_RISK", "EXIT_ERROR", "EXIT_CANNOT_TELL"]

EXIT_OK, EXIT_RISK, EXIT_ERROR = 0, 1, 2
#: A bug in fsyncbench (an exception nothing named): never 1, which only a gate may return.
EXIT_BUG = 3
#: A gate found no risk but could not check everything it was asked to (its "cannot tell"
#: lines say what and what would settle it): never a pass in silence, never 1.
EXIT_CANNOT_TELL = 4


def cmd_run(args: argparse.Namespace, argv: list[str]) -> int:
    gates = api.Gates.parse(
        args.max_p99, args.fail_on, args.config, args.max_p99_strict, args.accept_disturbed
    )
    with _Progress(quiet=args.quiet) as progress:
        report = api.run(
            args.dir,
            journal_modes=args.journal_mode,
            synchronous=args.synchronous,
            fullfsync=args.fullfsync,
            samples=args.samples,
            ci_target_pct=args.ci_target_pct,
            min_samples=args.min_samples,
            budget_seconds=args.budget_seconds,
            run_budget_seconds=args.run_budget_seconds,
            rounds=args.rounds,
            warmup=args.warmup,
            payload_bytes=args.payload_bytes,
            primitives=not args.no_primitives,
            powerloss=args.powerloss,
            assume=args.assume or (),
            redact=args.redact,
            gates=gates,
            outputs=_outputs(args),
            progress=progress,
            notes=_note,
            command_line=["fsyncbench", *argv],
            history=None if args.no_history else (args.history or args.report_dir),
            retake_disturbed=args.retake_disturbed,
            writers=args.writers,
            steps_per_commit=args.steps_per_commit,
            begin=args.begin,
            busy_timeout_ms=args.busy_timeout_ms,
            writers_seconds=args.writers_seconds,
            vs=args.vs,
        )
    return _finish_report(report, args, gates)


def cmd_audit(args: argparse.Namespace, argv: list[str]) -> int:
    gates = api.Gates.parse(
        args.max_p99, args.fail_on, args.config, args.max_p99_strict, args.accept_disturbed
    )
    with _Progress(quiet=args.quiet) as progress:
        report = api.audit(
            args.dir,
            from_report=args.from_report,
            samples=args.samples,
            budget_seconds=args.budget_seconds,
            compare_syncs=args.compare_syncs,
            sweep_repeats=args.sweep_repeats,
            sweep_max_mib=args.sweep_max_mib,
            trace_commits=args.trace_commits,
            trace=not args.no_trace,
            assume=args.assume or (),
            redact=args.redact,
            outputs=_outputs(args),
            progress=progress,
            notes=_note,
            command_line=["fsyncbench", *argv],
        )
    return _finish_report(report, args, gates)


def _finish_report(report: Report, args: argparse.Namespace, gates: api.Gates | None) -> int:
    """run, audit, crash and powerloss, once the report exists: save the report files (and
    --csv) first, so a closed pipe or a full stdout cannot lose the measurement, then print
    it in --format (or write it to --output), say on stderr what was saved, and apply the
    gates (None: the command has none). A run or audit report is saved as HTML too with
    --format html, a crash or powerloss report always (it is small)."""
    model_call_ms = getattr(args, "model_call_ms", DEFAULT_MODEL_CALL_MS)
    verbose = getattr(args, "verbose", False)
    text = api.render(report, args.format, model_call_ms=model_call_ms, verbose=verbose)
    paths = api.save(
        report,
        _outputs(args).save_dir,
        html=args.format == "html" or report.kind in EXPERIMENT_KINDS,
        csv=getattr(args, "csv", None),
        model_call_ms=model_call_ms,
        rendered={args.format: text},
        prometheus=getattr(args, "prometheus", None),
    )
    _emit(args, text)
    if paths:
        print("Report written: " + ", ".join(str(p) for p in paths), file=sys.stderr)
    if gates is None:
        return EXIT_OK
    return _apply_gates(api.gate(report, gates), to_stderr=_gates_to_stderr(args))


def cmd_show(args: argparse.Namespace, _argv: list[str]) -> int:
    gates = api.Gates.parse(
        args.max_p99, args.fail_on, args.config, args.max_p99_strict, args.accept_disturbed
    )
    report = api.load(args.report, redact=args.redact, gates=gates, outputs=_outputs(args))
    text = api.render(
        report, args.format, model_call_ms=args.model_call_ms, verbose=args.verbose, vs=args.vs
    )
    if args.csv or args.prometheus:  # first: a failure leaves nothing half-done
        api.save(report, None, csv=args.csv, prometheus=args.prometheus)
    try:
        _emit(args, text)
    except BaseException:
        if args.output:
            for path in (args.csv, args.prometheus):
                if path:
                    path.unlink(missing_ok=True)
        raise
    return _apply_gates(api.gate(report, gates), to_stderr=_gates_to_stderr(args))


def cmd_host(args: argparse.Namespace, _argv: list[str]) -> int:
    host = api.host_record(args.dir, assume=args.assume or (), outputs=_outputs(args))
    _emit(args, api.render(host, args.format))
    return EXIT_OK


def cmd_powerloss(args: argparse.Namespace, argv: list[str]) -> int:
    started = time.monotonic_ns()
    with _Progress(quiet=args.quiet) as progress:
        result = api.simulate_power_loss(
            args.dir,
            journal_modes=args.journal_mode,
            synchronous=args.synchronous,
            fullfsync=args.fullfsync,
            models=args.models,
            semantics=args.semantics,
            commits=args.commits,
            payload_bytes=args.payload_bytes,
            sector_bytes=args.sector_bytes,
            psow=None if args.psow is None else args.psow == "on",
            max_states=args.max_states,
            samples=args.samples,
            seed=args.seed,
            keep_failures=args.keep_failures,
            wal_autocheckpoint=args.wal_autocheckpoint,
            outputs=_outputs(args),
            progress=progress,
            notes=_note,
        )
    report = api.experiment_report(
        result,
        args.dir,
        command_line=["fsyncbench", *argv],
        elapsed_ns=time.monotonic_ns() - started,
    )
    return _finish_report(report, args, None)


def cmd_crash(args: argparse.Namespace, argv: list[str]) -> int:
    started = time.monotonic_ns()
    with _Progress(quiet=args.quiet, unit="parts") as progress:
        outcome = api.kill_matrix(
            args.dir,
            journal_mode=args.journal_mode,
            synchronous=args.synchronous,
            power_loss=args.power_loss,
            semantics=args.semantics,
            outputs=_outputs(args),
            fullfsync=args.fullfsync,
            progress=progress,
            notes=_note,
        )
    report = api.experiment_report(
        outcome,
        args.dir,
        command_line=["fsyncbench", *argv],
        elapsed_ns=time.monotonic_ns() - started,
    )
    return _finish_report(report, args, None)


def cmd_compare(args: argparse.Namespace, _argv: list[str]) -> int:
    result = api.compare(
        args.reports,
        configs=args.config,
        fail_on_regression=args.fail_on_regression,
        outputs=_outputs(args),
        group_by=args.group_by,
        kind=args.kind,
        accept_disturbed=args.accept_disturbed,
        vs=args.vs,
    )
    _emit(args, api.render(result, args.format))
    if args.fail_on_regression is None:
        return EXIT_OK
    # the regression gate's lines: after the table, or on stderr when stdout carries JSON
    # or a page
    to_stderr = (args.output is None and args.format in ("json", "html")) or getattr(
        sys.stdout, "closed_by_reader", False
    )
    # text and Markdown carry the gate's lines (its answer first); a file written with
    # --output, JSON and HTML leave them to the terminal
    if to_stderr or args.output is not None:
        out = sys.stderr if to_stderr else sys.stdout
        for line in result.lines:
            print(line, file=out)
    if result.regressions:
        return EXIT_RISK
    return EXIT_CANNOT_TELL if result.not_checked else EXIT_OK


def cmd_powercut(args: argparse.Namespace, argv: list[str]) -> int:
    tty = sys.stderr.isatty()

    def log(line: str) -> None:
        print(("\r\033[K" if tty else "") + line, file=sys.stderr, flush=True)

    if args.action == "listen":

        def announce(start: ListenerStart) -> None:
            # the secret and the command lines, once, on standard output (the log lines on
            # stderr never hold the secret)
            from fsyncbench.powercut.secret import format_start

            print(format_start(start), end="", flush=True)

        api.powercut_listen(
            args.bind,
            args.port,
            args.state,
            secret_file=args.secret_file,
            log=log,
            announce=announce,
        )
        return EXIT_OK
    if args.action == "cycle":
        return _powercut_cycle(args, log)
    if args.action == "verify":
        outcome = api.powercut_verify(
            args.dir,
            listener=args.listener,
            run_id=args.run_id,
            report_dir=args.report_dir,
            outputs=_outputs(args),
            command_line=["fsyncbench", *argv],
            secret_file=args.secret_file,
        )
        _emit(args, api.render(outcome, args.format))
        print(f"Report written: {outcome.path}", file=sys.stderr)
        return EXIT_RISK if outcome.failed else EXIT_OK

    def status(s: WriterStatus) -> None:
        from fsyncbench.powercut import format_status

        line = format_status(s)
        print(
            "\r\033[K" + line if tty else line, end="" if tty else "\n", file=sys.stderr, flush=True
        )

    summary = api.powercut_write(
        args.dir,
        to=args.to,
        journal_mode=args.journal_mode,
        synchronous=args.synchronous,
        fullfsync=args.fullfsync,
        payload_bytes=args.payload_bytes,
        max_commits=args.max_commits,
        status=status,
        log=log,
        outputs=_outputs(args),
        secret_file=args.secret_file,
    )
    if tty:
        print(file=sys.stderr)
    _emit(args, api.render(summary, args.format))
    return EXIT_OK


def _powercut_cycle(args: argparse.Namespace, log: Any) -> int:
    """powercut cycle: progress on stderr (never the secret: its file is named), the
    summary (--format) at the end; its exit code (cycle.CycleSummary.exit_code)."""
    summary = api.powercut_cycle(
        args.start,
        args.cut,
        args.verify,
        restore=args.restore,
        cycles=args.cycles,
        cut_after=args.cut_after,
        seed=args.seed,
        bind=args.bind,
        port=args.port,
        state=args.state,
        secret_file=args.secret_file,
        start_timeout_s=args.start_timeout_seconds,
        command_timeout_s=args.command_timeout_seconds,
        verify_timeout_s=args.verify_timeout_seconds,
        retry_every_s=args.retry_every_seconds,
        log=log,
        outputs=_outputs(args),
    )
    from fsyncbench.powercut.cycle import format_summary, summary_json

    _emit(args, summary_json(summary) if args.format == "json" else format_summary(summary))
    return summary.exit_code


_COMMANDS = {
    "run": cmd_run,
    "host": cmd_host,
    "crash": cmd_crash,
    "show": cmd_show,
    "compare": cmd_compare,
    "audit": cmd_audit,
    "powercut": cmd_powercut,
    "powerloss": cmd_powerloss,
}


def _outputs(args: argparse.Namespace) -> api.Outputs:
    """The files a command's options name (--output, --csv, --prometheus, --report-dir,
    --no-report)."""
    return api.Outputs(
        output=getattr(args, "output", None),
        csv=getattr(args, "csv", None),
        report_dir=getattr(args, "report_dir", None),
        no_report=getattr(args, "no_report", False),
        prometheus=getattr(args, "prometheus", None),
    )


def _note(message: str) -> None:
    print(f"fsyncbench: note: {message}", file=sys.stderr)


def _emit(args: argparse.Namespace, text: str) -> None:
    """What a command prints: to --output FILE (durably, replacing it) or standard output."""
    if getattr(args, "output", None) is not None:
        api.write_file(args.output, text)
    else:
        print(text, end="", flush=True)


def _gates_to_stderr(args: argparse.Namespace) -> bool:
    """Gate lines go to stderr when stdout carries JSON or HTML (they would break it)."""
    return args.output is None and args.format in ("json", "html")


def _apply_gates(result: api.GateResult, to_stderr: bool = False) -> int:
    """Print each gate failure, note and "cannot tell" line; EXIT_RISK when a gate failed,
    EXIT_CANNOT_TELL when none failed but one could not check everything, else EXIT_OK
    (nothing printed when no gate was set)."""
    if not result.active:
        return EXIT_OK
    # the gate's verdict must reach someone: stderr when stdout's reader has gone
    out = sys.stderr if to_stderr or getattr(sys.stdout, "closed_by_reader", False) else sys.stdout
    for note in result.notes:
        print(f"NOTE [max-p99] {note}.", file=out)
    for line in result.cannot_tell:
        print(f"CANNOT TELL [max-p99] {line}.", file=out)
    if result.failures:
        for f in result.failures:
            print(f"GATE FAILED [{f.gate}] {f.message}", file=out)
        n = len(result.failures)
        print(
            f"{n} gate failure{'s' if n != 1 else ''} in {_configurations(result.checked)} "
            "checked: exit 1.",
            file=out,
        )
        return EXIT_RISK
    if result.cannot_tell:
        n = len(result.cannot_tell)
        print(
            f"No gate failed, but {n} of {_configurations(result.checked)} could not be "
            "checked: exit 4.",
            file=out,
        )
        return EXIT_CANNOT_TELL
    if result.unverified:
        names = ", ".join(result.unverified)
        print(
            f"Gates passed ({_configurations(result.checked)} checked), but the storage under "
            f"{names} is unverifiable, not verified: --fail-on cannot fail on what was not "
            "judged (add unverifiable to --fail-on to require a verified path).",
            file=out,
        )
        return EXIT_OK
    print(f"Gates passed ({_configurations(result.checked)} checked).", file=out)
    return EXIT_OK


def _configurations(n: int) -> str:
    """``1 configuration``, ``3 configurations``."""
    return f"{n} configuration{'' if n == 1 else 's'}"


def _terminate(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


class _Stdout:
    """sys.stdout for a command: a reader that went away (``| head``: EPIPE) is the
    conventional silent end of the output, not an error, so later writes are dropped
    (``closed_by_reader`` tells the gates to report on stderr instead); any other write
    error (a full device: ENOSPC, EIO) is one line and exit 2."""

    def __init__(self, inner: TextIO | None) -> None:
        self._inner = inner  # None: started with file descriptor 1 closed (``>&-``)
        self.closed_by_reader = False

    def write(self, text: str) -> int:
        if self.closed_by_reader:
            return len(text)
        if self._inner is None:
            raise FsyncbenchError("cannot write to standard output: it is closed")
        try:
            return self._inner.write(text)
        except BrokenPipeError:
            self._reader_gone()
            return len(text)
        except OSError as exc:
            raise FsyncbenchError(
                f"cannot write to standard output: {exc.strerror or exc}"
            ) from exc

    def flush(self) -> None:
        if self.closed_by_reader or self._inner is None:
            return
        try:
            self._inner.flush()
        except BrokenPipeError:
            self._reader_gone()
        except OSError as exc:
            raise FsyncbenchError(
                f"cannot write to standard output: {exc.strerror or exc}"
            ) from exc

    def _reader_gone(self) -> None:
        self.closed_by_reader = True
        if self._inner is None:  # only a write to a real stream finds its reader gone
            return
        try:  # the interpreter's own flush at exit must not fail on the closed pipe either
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._inner.fileno())
            os.close(devnull)
        except (OSError, ValueError):
            pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def main(argv: list[str] | None = None) -> int:
    stdout = sys.stdout
    sys.stdout = _Stdout(stdout)
    try:
        return _main(argv)
    finally:
        try:
            sys.stdout.flush()
        except FsyncbenchError:
            pass
        sys.stdout = stdout


def _main(argv: list[str] | None) -> int:
    args_list = sys.argv[1:] if argv is None else argv
    if threading.current_thread() is threading.main_thread():
        # timeout(1), CI cancels, systemctl stop; a closed terminal or dropped SSH (SIGHUP);
        # Ctrl-\ (SIGQUIT): all end the run the way Ctrl-C does, removing the scratch dir
        for name in ("SIGTERM", "SIGHUP", "SIGQUIT"):
            if hasattr(signal, name):
                signal.signal(getattr(signal, name), _terminate)
    try:
        parser = build_parser()
        args = parser.parse_args(glue_negative_values(parser, args_list))
        return _COMMANDS[args.command](args, args_list)
    except FsyncbenchError as exc:
        print(f"fsyncbench: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except Interrupted as exc:  # while measuring: the message says what was cleaned up
        print(f"fsyncbench: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("fsyncbench: interrupted; nothing was written", file=sys.stderr)
        return EXIT_ERROR
    except OSError as exc:  # an I/O error no layer above named: still one line, exit 2
        where = f": {exc.filename}" if exc.filename else ""
        print(f"fsyncbench: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as exc:  # a bug: its traceback, then one line; not 1 (a gate's code)
        import traceback

        from fsyncbench import __version__

        traceback.print_exc()
        print(
            f"fsyncbench: internal error (a bug in fsyncbench {__version__}; please report it "
            f"with the traceback above): {type(exc).__name__}: {exc}",
            file=sys.stderr,
        )
        return EXIT_BUG


class _Progress:
    """tqdm progress on stderr whenever stderr is a terminal (never otherwise; --quiet: never):
    one unit per workload (``unit``: what the bar counts; crash's parts), fractional within
    it, so tqdm's ETA covers the whole run. A terminal that does not say how large it is (a
    serial console, a pty nobody sized) gets :data:`FALLBACK_SIZE`; tqdm itself prints
    nothing when told 0 columns or rows. No tqdm monitor thread: crash forks its children,
    and a fork while another thread runs may deadlock the child (and is deprecated from
    Python 3.12 on); every update here redraws the bar anyway."""

    FALLBACK_SIZE = (80, 24)

    def __init__(self, quiet: bool, unit: str = "workloads") -> None:
        self._bar: tqdm[NoReturn] | None = None
        self._quiet = quiet or not _isatty(sys.stderr)
        self._unit = unit

    def __call__(
        self,
        label: str,
        index: float,
        total: int,
        done: int,
        target: int,
        elapsed_ns: int,
        budget_ns: int,
    ) -> None:
        if self._quiet:
            return
        if self._bar is None:
            from tqdm import tqdm

            columns, rows = _terminal_size(sys.stderr, self.FALLBACK_SIZE)
            tqdm.monitor_interval = 0  # no monitor thread (see the class docstring)
            self._bar = tqdm(
                total=total,
                unit="config",
                file=sys.stderr,
                disable=False,
                ncols=columns,
                nrows=rows,
                bar_format="{l_bar}{bar}| {n:.1f}/{total} "
                + self._unit
                + " [{elapsed}<{remaining}]{postfix}",
            )
        # budget_ns 0: a run-budgeted run, where index already is the time spent, in workloads
        frac = min(1.0, max(done / target, elapsed_ns / budget_ns)) if budget_ns else 0.0
        # never past the total; a run-budgeted run stops on time, not at its sample cap, so
        # its count is not a fraction of that cap
        self._bar.n = min(float(total), index + frac)
        # a workload with no count of its own (powerloss: target 1): its label alone
        count = (
            ""
            if target <= 1 and not budget_ns
            else f" {done}/{target}"
            if budget_ns and done <= target
            else f" {done:,} samples"
        )
        self._bar.set_postfix_str(f"{label}{count}", refresh=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()

    def __enter__(self) -> _Progress:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def _isatty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def _terminal_size(stream: TextIO, fallback: tuple[int, int]) -> tuple[int, int]:
    """(columns, rows) of the terminal ``stream`` writes to; each from $COLUMNS / $LINES,
    then ``fallback``, where the terminal reports 0 or cannot be asked."""
    try:
        size = tuple(os.get_terminal_size(stream.fileno()))
    except (AttributeError, ValueError, OSError):
        size = (0, 0)
    out = []
    for got, env, default in zip(size, ("COLUMNS", "LINES"), fallback):
        if got <= 0:
            try:
                got = int(os.environ.get(env, ""))
            except ValueError:
                got = 0
        out.append(got if got > 0 else default)
    return out[0], out[1]
