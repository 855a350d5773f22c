"""What the API's commands share (:mod:`fsyncbench.api`): the types of their arguments
(:data:`PathLike`, the :data:`Progress` and :data:`Notes` callbacks) and the checks of those
most measuring calls take (:func:`check_extras`), the host record of the directory measured
(:func:`host_at`, with the facts the user declares: :func:`declare`), the working
directories dead runs left swept away first (:func:`sweep_leftovers`), the progress callback
that turns Ctrl-C and errors while measuring into one line (:class:`Measuring`), the command
line a report records (:func:`command_line_of`), the fields every report has
(:func:`new_report`) and redaction (:func:`redacted`)."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType

from fsyncbench import __version__, options
from fsyncbench.errors import FsyncbenchError, Interrupted
from fsyncbench.measure import runner
from fsyncbench.model import SCHEMA_VERSION, Host, Report, Result, Verdict
from fsyncbench.options import Outputs

PathLike = str | os.PathLike[str]
#: progress(label, index, total, done, target, elapsed_ns, budget_ns): ``label`` the
#: workload being sampled, ``index`` of ``total`` workloads (a float: the share of the run
#: budget spent, when ``budget_ns`` is 0), ``done`` of ``target`` samples, ``elapsed_ns``
#: of its ``budget_ns``.
Progress = runner.RunProgress
#: notes(message): something worth telling about a run as it happens (a leftover working
#: directory removed, an option without effect); the CLI prints "fsyncbench: note: ...".
Notes = Callable[[str], None]


class Measuring:
    """The progress callback the measurement gets: remembers the workload being measured
    (``label``) and passes each call on; as a context, turns Ctrl-C into
    :class:`Interrupted` and adds to an error where it happened and what was cleaned up."""

    def __init__(self, progress: Progress | None) -> None:
        self.label = ""
        self._progress = progress

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
        self.label = label
        if self._progress is not None:
            self._progress(label, index, total, done, target, elapsed_ns, budget_ns)

    def __enter__(self) -> Measuring:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        _tb: TracebackType | None,
    ) -> None:
        if kind is None or not issubclass(kind, (KeyboardInterrupt, FsyncbenchError)):
            return
        from fsyncbench.measure.scratch import scratch_cleanup

        where = self.label or "setup"
        if issubclass(kind, KeyboardInterrupt):
            raise Interrupted(
                f"interrupted while measuring {where}; {scratch_cleanup()}, no report written"
            )
        raise FsyncbenchError(f"{exc} (while measuring {where}; {scratch_cleanup()})")


def host_at(target: Path) -> Host:
    from fsyncbench.host import collect_host

    return collect_host(str(target))


def declare(host: Host, facts: Sequence[str]) -> Host:
    """``host`` with the ``facts`` recorded in its target (``declared``)."""
    if not facts:
        return host
    target = dataclasses.replace(
        host.target, declared=tuple(dict.fromkeys((*host.target.declared, *facts)))
    )
    return dataclasses.replace(host, target=target)


def check_extras(
    assume: object,
    outputs: object,
    progress: object = None,
    notes: object = None,
    command_line: object = None,
) -> None:
    """The types of the arguments most measuring calls share (:mod:`fsyncbench.options`)."""
    options.check_list(assume, "assume")
    options.check_instance(outputs, Outputs, "outputs")
    options.check_callback(progress, "progress")
    options.check_callback(notes, "notes")
    options.check_list(command_line, "command_line", comma=False)


def sweep_leftovers(target: Path, notes: Notes | None) -> None:
    """Just before measuring: remove the working directories dead runs left in ``target``
    (SIGKILL, a power cut), with a note on each one found."""
    from fsyncbench.measure import scratch

    for message in scratch.sweep_leftovers(target):
        note(notes, message)


def note(notes: Notes | None, message: str) -> None:
    if notes is not None:
        notes(message)


def command_line_of(given: Sequence[str] | None) -> tuple[str, ...]:
    """The command line a report records: ``given`` (the CLI passes its own), else this
    process's ``sys.argv`` (a call from Python)."""
    return tuple(given) if given is not None else (tuple(sys.argv) if sys.argv else ("python",))


def judged_now(report: Report) -> Report:
    """A saved run or audit report with its verdict derived again from its recorded facts
    by this version's judge and device knowledge (:func:`fsyncbench.judge.engine.rejudge`,
    which adds a note where the recorded verdict differs), so ``show``, the gates and the
    fleet view never depend on the version that wrote the report; other kinds as they are."""
    if report.kind not in ("run", "audit"):
        return report
    from fsyncbench.judge import engine

    return engine.rejudge(report)


def redacted(report: Report, redact: bool) -> Report:
    if not redact:
        return report
    from fsyncbench.report import redact as redaction

    return redaction.redact_report(report)


def new_report(
    kind: str,
    host: Host,
    command_line: Sequence[str],
    results: Sequence[Result],
    verdict: Verdict,
) -> Report:
    """A report of ``kind`` made now by this fsyncbench (schema, version, time in UTC to
    the second): the fields every report has; the rest keep their defaults."""
    now = _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0)
    return Report(
        schema_version=SCHEMA_VERSION,
        tool_version=__version__,
        kind=kind,
        created_utc=now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        command_line=tuple(command_line),
        host=host,
        results=tuple(results),
        verdict=verdict,
    )
