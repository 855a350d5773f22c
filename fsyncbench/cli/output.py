"""What the commands print and the codes they exit with: the exit codes, where a command's
text goes (standard output or ``-o FILE``), the report files of run, audit, crash and
powerloss, the gates' lines, notes, and standard output itself (a reader that went away, a
closed or full stdout).

Exit codes: 0 ok; 1 durability risk found (only when a gate option asks); 2 usage or
runtime error (one line on stderr, never a traceback); 3 a bug; 4 a gate could not check
everything it was asked to.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import os
import sys
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from fsyncbench import api
from fsyncbench.errors import FsyncbenchError
from fsyncbench.model import EXPERIMENT_KINDS, Report
from fsyncbench.report.answer import DEFAULT_MODEL_CALL_MS
from fsyncbench.report.layout import wrap

if TYPE_CHECKING:  # for annotations only
    from fsyncbench.crash import CrashExperiment, PowerLossExperiment
    from fsyncbench.model import PowerlossResult

__all__ = [
    "EXIT_OK",
    "EXIT_RISK",
    "EXIT_ERROR",
    "EXIT_BUG",
    "EXIT_CANNOT_TELL",
    "Stdout",
    "encodable_streams",
    "outputs",
    "note",
    "emit",
    "finish_report",
    "finish_experiment",
    "apply_gates",
    "gates_to_stderr",
]

EXIT_OK, EXIT_RISK, EXIT_ERROR = 0, 1, 2
#: A bug in fsyncbench (an exception nothing named): never 1, which only a gate may return.
EXIT_BUG = 3
#: A gate found no risk but could not check everything it was asked to (its "cannot tell"
#: lines say what and what would settle it): never a pass in silence, never 1.
EXIT_CANNOT_TELL = 4


def outputs(args: argparse.Namespace) -> api.Outputs:
    """The files a command's options name (--output, --csv, --prometheus, --report-dir,
    --no-report)."""
    return api.Outputs(
        output=getattr(args, "output", None),
        csv=getattr(args, "csv", None),
        report_dir=getattr(args, "report_dir", None),
        no_report=getattr(args, "no_report", False),
        prometheus=getattr(args, "prometheus", None),
    )


def written(paths: Sequence[object]) -> str:
    """``Report written: A, B`` wrapped to the terminal between paths (a path is never
    broken: it is there to be copied)."""
    line = "Report written: " + ", ".join(str(p) for p in paths)
    return "\n".join(wrap(line, "", "  "))


def note(message: str) -> None:
    """One diagnostic line on stderr, as an error is: kept whole for grep and logs."""
    print(f"fsyncbench: note: {message}", file=sys.stderr)


def emit(args: argparse.Namespace, text: str) -> None:
    """What a command prints: to --output FILE (durably, replacing it) or standard output."""
    if getattr(args, "output", None) is not None:
        api.write_file(args.output, text)
    else:
        print(text, end="", flush=True)


def finish_report(report: Report, args: argparse.Namespace, gates: api.Gates | None) -> int:
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
        outputs(args).save_dir,
        html=args.format == "html" or report.kind in EXPERIMENT_KINDS,
        csv=getattr(args, "csv", None),
        model_call_ms=model_call_ms,
        rendered={args.format: text},
        prometheus=getattr(args, "prometheus", None),
    )
    emit(args, text)
    if paths:
        print(written(paths), file=sys.stderr)
    if gates is None:
        return EXIT_OK
    return apply_gates(api.gate(report, gates), to_stderr=gates_to_stderr(args))


def finish_experiment(
    result: CrashExperiment | PowerLossExperiment | PowerlossResult,
    args: argparse.Namespace,
    argv: list[str],
    started_ns: int,
) -> int:
    """crash and powerloss: the experiment's report (the command line ``argv``, the time
    since ``started_ns``, of :func:`time.monotonic_ns`), finished as
    :func:`finish_report` finishes it, without gates."""
    report = api.experiment_report(
        result,
        args.dir,
        command_line=["fsyncbench", *argv],
        elapsed_ns=time.monotonic_ns() - started_ns,
    )
    return finish_report(report, args, None)


def gates_to_stderr(args: argparse.Namespace) -> bool:
    """Gate lines go to stderr when stdout carries JSON or HTML (they would break it)."""
    return args.output is None and args.format in ("json", "html")


def apply_gates(result: api.GateResult, to_stderr: bool = False) -> int:
    """Print each gate failure, note and "cannot tell" line; EXIT_RISK when a gate failed,
    EXIT_CANNOT_TELL when none failed but one could not check everything, else EXIT_OK
    (nothing printed when no gate was set)."""
    if not result.active:
        return EXIT_OK
    # the gate's verdict must reach someone: stderr when stdout's reader has gone
    out = sys.stderr if to_stderr or getattr(sys.stdout, "closed_by_reader", False) else sys.stdout
    for line in result.notes:
        _say(f"NOTE [max-p99] {line}.", out)
    for line in result.cannot_tell:
        _say(f"CANNOT TELL [max-p99] {line}.", out)
    if result.failures:
        for f in result.failures:
            _say(f"GATE FAILED [{f.gate}] {f.message}", out)
        n = len(result.failures)
        _say(
            f"{n} gate failure{'s' if n != 1 else ''} in {_configurations(result.checked)} "
            "checked: exit 1.",
            out,
        )
        return EXIT_RISK
    if result.cannot_tell:
        n = len(result.cannot_tell)
        # a run that stayed disturbed: one line, and no configuration's p99 was checked
        whole = any(line.startswith("--max-p99 ") for line in result.cannot_tell)
        _say(
            f"No gate failed, but --max-p99 could not be checked on any of the "
            f"{_configurations(result.checked)}: exit 4."
            if whole
            else f"No gate failed, but {n} of {_configurations(result.checked)} could not be "
            "checked: exit 4.",
            out,
        )
        return EXIT_CANNOT_TELL
    if result.unverified:
        names = (
            "every one of them"
            if len(result.unverified) == result.checked > 1
            else ", ".join(result.unverified)
        )
        _say(
            f"Gates passed ({_configurations(result.checked)} checked), but the storage under "
            f"{names} is unverifiable, not verified: --fail-on cannot fail on what was not "
            "judged (add unverifiable to --fail-on to require a verified path).",
            out,
        )
        return EXIT_OK
    _say(f"Gates passed ({_configurations(result.checked)} checked).", out)
    return EXIT_OK


def _say(text: str, out: TextIO) -> None:
    """One gate line, wrapped to the terminal (its tag on the first line, the rest indented)."""
    print("\n".join(wrap(text, "", "  ")), file=out)


def _configurations(n: int) -> str:
    """``1 configuration``, ``3 configurations``."""
    return f"{n} configuration{'' if n == 1 else 's'}"


#: What a character the stream's encoding lacks is written as: the stack's arrow as ASCII;
#: any other (a path's letters) as its escape, ``\\u2192``.
ASCII_FALLBACK = {"\u2192": "->"}
FALLBACK_ERRORS = "fsyncbench.fallback"


def _fallback(err: UnicodeError) -> tuple[str, int]:
    if not isinstance(err, UnicodeEncodeError):
        raise err
    bad = err.object[err.start : err.end]
    return "".join(
        ASCII_FALLBACK.get(c, c.encode("ascii", "backslashreplace").decode()) for c in bad
    ), err.end


codecs.register_error(FALLBACK_ERRORS, _fallback)


@contextlib.contextmanager
def encodable_streams() -> Iterator[None]:
    """Standard output and error write what their encoding lacks as :data:`ASCII_FALLBACK`
    says, never a UnicodeEncodeError. Where it matters: Windows, whose streams encode with
    the ANSI code page (cp1252) when they are a pipe or a file, not a console, before Python
    3.15 (PEP 686); cp1252 has no ``→`` (the storage stack's arrow). UTF-8 streams (Linux,
    macOS, a Windows console) are left as they are."""
    changed = []
    for stream in (sys.stdout, sys.stderr):
        encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "")
        if encoding and encoding != "utf8" and hasattr(stream, "reconfigure"):
            changed.append((stream, stream.errors))
            stream.reconfigure(errors=FALLBACK_ERRORS)
    try:
        yield
    finally:
        for stream, errors in changed:
            with contextlib.suppress(ValueError):  # (closed meanwhile)
                stream.reconfigure(errors=errors)


class Stdout:
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
