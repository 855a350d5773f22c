"""The Python API: what each ``fsyncbench`` command does, as one call that returns its
result or raises, and never prints or exits (``fsyncbench.cli`` parses, calls one of these,
prints and exits)::

    import fsyncbench

    report = fsyncbench.run("/var/lib/myapp", samples=300, rounds=1)   # a Report
    fsyncbench.save(report, "reports")                                  # its .json and .md
    print(fsyncbench.render(report, "markdown"))

Measuring: :func:`run`, :func:`audit`, :func:`kill_matrix`, :func:`host_record`,
:func:`powercut_listen`, :func:`powercut_write`, :func:`powercut_verify`. Reports:
:func:`load`, :func:`save`, :func:`render`, :func:`gate`, :func:`compare`. The results are
the frozen dataclasses of :mod:`fsyncbench.model` (durations in ns, in fields named
``*_ns``), JSON as :func:`fsyncbench.report.store.report_to_json` writes it.

Errors: :class:`~fsyncbench.errors.FsyncbenchError` with a one-line message, for bad input
(checked before any work, in :mod:`fsyncbench.options`; the message names the CLI option, so
it reads as the CLI's does) and for failures while working (an I/O error, a listener that
cannot be reached). Ctrl-C (or SIGTERM, where the CLI maps it) while measuring raises
:class:`~fsyncbench.errors.Interrupted`, a KeyboardInterrupt saying what was cleaned up.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from fsyncbench import __version__, options
from fsyncbench.errors import FsyncbenchError, Interrupted
from fsyncbench.measure import runner
from fsyncbench.measure.plan import DEFAULT_ROUNDS
from fsyncbench.model import SCHEMA_VERSION, Evidence, Host, Report, Result, to_jsonable
from fsyncbench.options import Gates, Outputs
from fsyncbench.report import store
from fsyncbench.report.answer import DEFAULT_MODEL_CALL_MS

if TYPE_CHECKING:  # for annotations only: each is imported where it is used
    from fsyncbench.crash import CrashExperiment
    from fsyncbench.judge.gates import GateFailure
    from fsyncbench.powercut.verify import VerifyOutcome
    from fsyncbench.powercut.writer import WriterStatus, WriterSummary
    from fsyncbench.report.compare import FleetRow, PairComparison, Regression

__all__ = [
    "run",
    "audit",
    "host_record",
    "kill_matrix",
    "load",
    "save",
    "render",
    "gate",
    "compare",
    "powercut_listen",
    "powercut_write",
    "powercut_verify",
    "build_report",
    "write_file",
    "Gates",
    "Outputs",
    "GateResult",
    "Comparison",
    "FsyncbenchError",
    "Interrupted",
]

PathLike = str | os.PathLike[str]
#: progress(label, index, total, done, target, elapsed_ns, budget_ns): ``label`` the
#: workload being sampled, ``index`` of ``total`` workloads (a float: the share of the run
#: budget spent, when ``budget_ns`` is 0), ``done`` of ``target`` samples, ``elapsed_ns``
#: of its ``budget_ns``.
Progress = runner.RunProgress
#: notes(message): something worth telling about a run as it happens (a leftover working
#: directory removed, an option without effect); the CLI prints "fsyncbench: note: ...".
Notes = Callable[[str], None]


# --------------------------------------------------------------------------- measuring


def run(
    target: PathLike = ".",
    *,
    journal_modes: str | Sequence[str] | None = None,
    synchronous: str | Sequence[str] | None = None,
    fullfsync: str | bool | Sequence[str | bool] | None = None,
    samples: int | None = None,
    ci_target_pct: float | None = None,
    min_samples: int | None = None,
    budget_seconds: float = 10.0,
    run_budget_seconds: float | None = None,
    rounds: int = DEFAULT_ROUNDS,
    warmup: int = 50,
    payload_bytes: int = 512,
    primitives: bool = True,
    assume: Sequence[str] = (),
    redact: bool = False,
    gates: Gates | None = None,
    outputs: Outputs | None = None,
    progress: Progress | None = None,
    notes: Notes | None = None,
    command_line: Sequence[str] | None = None,
) -> Report:
    """``fsyncbench run``: measure journal-commit latency per pragma combination (and the raw
    sync primitives) in a fresh working directory under the existing directory ``target``,
    removed again, and return the judged report (kind "run"); nothing else is written.

    ``journal_modes`` / ``synchronous`` / ``fullfsync``: comma lists or sequences (default
    delete,truncate,wal x off,normal,full; fullfsync off,on on macOS, unset elsewhere).
    ``samples`` fixes the samples per configuration (split over ``rounds``); without it,
    each is sampled until the 95 % CI of its p99 is within +-``ci_target_pct`` % (default
    10), from ``min_samples`` on (default 1000), all sharing ``run_budget_seconds`` (default
    17; none with ``samples``), none taking more than ``budget_seconds``. ``payload_bytes``:
    each step's output; ``primitives`` False skips the raw write+sync measurements.
    ``assume``: facts the machine cannot show ("plp"). ``redact``: remove hostname, serials
    and user paths. ``gates``: its ``configs`` must be configurations this run measures;
    ``outputs``: files the caller writes afterwards; both checked before anything is
    measured. ``command_line`` is recorded in the report (default ``sys.argv``).
    """
    started = time.monotonic_ns()
    path = options.target_dir(target)
    plan = options.run_plan(
        path,
        journal_modes=journal_modes,
        synchronous=synchronous,
        fullfsync=fullfsync,
        samples=samples,
        ci_target_pct=ci_target_pct,
        min_samples=min_samples,
        budget_seconds=budget_seconds,
        run_budget_seconds=run_budget_seconds,
        rounds=rounds,
        warmup=warmup,
        payload_bytes=payload_bytes,
        primitives=primitives,
    )
    if gates is not None:
        gates.check_configs(runner.result_names(plan), "this run measures")
    facts = options.assumed(assume)
    if outputs is not None:
        outputs.check()
    host = _declare(_collect_host(path), facts)
    if fullfsync is not None and host.os_name != "Darwin":
        _note(
            notes,
            "fullfsync has no effect outside macOS "
            "(https://www.sqlite.org/pragma.html#pragma_fullfsync): its rows will differ "
            "only by noise",
        )
    _sweep(path, notes)
    with _Measuring(progress) as where:
        results, floors = runner.run_with_floors(plan, host, where)
    report = build_report(
        "run",
        host,
        results,
        _command_line(command_line),
        floors,
        elapsed_ns=time.monotonic_ns() - started,
    )
    return _redacted(report, redact)


def audit(
    target: PathLike | None = None,
    *,
    from_report: PathLike | None = None,
    samples: int = 200,
    budget_seconds: float = 5.0,
    compare_syncs: int = 200,
    sweep_repeats: int = 3,
    sweep_max_mib: int = 64,
    trace_commits: int = 20,
    trace: bool = True,
    assume: Sequence[str] = (),
    redact: bool = False,
    outputs: Outputs | None = None,
    progress: Progress | None = None,
    notes: Notes | None = None,
    command_line: Sequence[str] | None = None,
) -> Report:
    """``fsyncbench audit``: measure in ``target`` (default ".") only what the verdict needs
    (``samples`` per flush primitive and commit configuration, at most ``budget_seconds``
    each), gather the evidence (``compare_syncs`` syncs per side of libc vs raw syscall,
    ``sweep_repeats`` syncs per dirty size up to ``sweep_max_mib`` MiB, ``trace_commits``
    commits traced with strace unless ``trace`` is False) and return the judged report
    (kind "audit"). With ``from_report`` (a saved run or audit report, not with ``target``)
    nothing is measured: its verdict is derived again from its recorded facts. Other
    arguments as for :func:`run`."""
    started = time.monotonic_ns()
    if from_report is not None:
        if target is not None:
            raise FsyncbenchError("give a directory to audit or --from REPORT, not both")
        facts = options.assumed(assume)
        if outputs is not None:
            outputs.check()
        loaded = store.load_report(Path(from_report))
        if facts:
            loaded = dataclasses.replace(loaded, host=_declare(loaded.host, facts))
        from fsyncbench.judge import engine

        return _redacted(engine.rejudge(loaded), redact)
    from fsyncbench.measure import evidence

    path = options.target_dir(target if target is not None else ".")
    plan, ev_plan = options.audit_plans(
        path,
        samples=samples,
        budget_seconds=budget_seconds,
        compare_syncs=compare_syncs,
        sweep_repeats=sweep_repeats,
        sweep_max_mib=sweep_max_mib,
        trace_commits=trace_commits,
        trace=trace,
    )
    facts = options.assumed(assume)
    if outputs is not None:
        outputs.check()
    host = _declare(_collect_host(path), facts)
    _sweep(path, notes)
    with _Measuring(progress) as where:
        results = runner.run_plan(plan, host, where)
        where.label = "audit evidence"

        def step(name: str, _index: int, _total: int) -> None:
            where.label = f"audit evidence ({name})"

        ev = evidence.collect(path, host, ev_plan, progress=step)
    report = build_report(
        "audit",
        host,
        results,
        _command_line(command_line),
        evidence=ev,
        elapsed_ns=time.monotonic_ns() - started,
    )
    return _redacted(report, redact)


def host_record(
    target: PathLike = ".", *, assume: Sequence[str] = (), outputs: Outputs | None = None
) -> Host:
    """``fsyncbench host``: the host record (OS, SQLite, filesystem, storage stack, devices,
    virtualization) of the directory ``target``, with the ``assume`` facts declared;
    nothing is measured."""
    path = options.target_dir(target)
    facts = options.assumed(assume)
    if outputs is not None:
        outputs.check()
    return _declare(_collect_host(path), facts)


def kill_matrix(
    target: PathLike = ".",
    *,
    journal_mode: str = "wal",
    synchronous: str = "full",
    outputs: Outputs | None = None,
    notes: Notes | None = None,
) -> CrashExperiment:
    """``fsyncbench crash``: SIGKILL a scripted 10-step agent at every step under four
    persistence policies, its step journal in a working directory under ``target`` with one
    ``journal_mode`` and ``synchronous``; returns the
    :class:`fsyncbench.crash.CrashExperiment` (render it with :func:`render`)."""
    from fsyncbench import crash

    path = options.target_dir(target)
    pragmas = options.one_pragmas(journal_mode, synchronous, command="crash")
    if outputs is not None:
        outputs.check()
    _sweep(path, notes)
    try:
        return crash.run_crash_experiment(path, pragmas.journal_mode, pragmas.synchronous)
    except KeyboardInterrupt:
        raise Interrupted("interrupted during the kill matrix; working directory removed") from None


def powercut_listen(
    bind: str = "127.0.0.1",
    port: int = 5400,
    state: PathLike = "fsyncbench-powercut-listener.db",
    *,
    log: Callable[[str], None] = lambda _line: None,
    ready: Callable[[tuple[str, int]], None] | None = None,
) -> None:
    """``fsyncbench powercut listen``: record what writers report, durably in the SQLite
    file ``state``, until SIGINT/SIGTERM; ``log`` gets each status line, ``ready`` the bound
    (address, port) (:func:`fsyncbench.powercut.listen`)."""
    from fsyncbench import powercut

    powercut.listen(bind, port, Path(state), log, ready)


def powercut_write(
    target: PathLike = ".",
    *,
    to: str,
    journal_mode: str = "wal",
    synchronous: str = "full",
    fullfsync: str | bool | None = None,
    payload_bytes: int = 512,
    max_commits: int | None = None,
    status: Callable[[WriterStatus], None] | None = None,
    log: Callable[[str], None] | None = None,
    outputs: Outputs | None = None,
) -> WriterSummary:
    """``fsyncbench powercut write``: commit journal rows in ``target`` and report each to the
    listener at ``to`` (HOST:PORT) once COMMIT returned, until ``max_commits`` or a stop;
    ``status`` gets a :class:`fsyncbench.powercut.writer.WriterStatus` now and then, ``log``
    each event line. Returns the WriterSummary (render it with :func:`render`)."""
    from fsyncbench import powercut

    address = options.address(to, "--to")
    path = options.target_dir(target)
    pragmas = options.one_pragmas(journal_mode, synchronous, fullfsync, command="powercut write")
    if outputs is not None:
        outputs.check()
    return powercut.write(
        address,
        path,
        pragmas,
        payload_bytes,
        max_commits,
        status or (lambda _s: None),
        log or (lambda _line: None),
    )


def powercut_verify(
    target: PathLike = ".",
    *,
    listener: str,
    run_id: str | None = None,
    report_dir: PathLike = "reports",
    outputs: Outputs | None = None,
    command_line: Sequence[str] | None = None,
) -> VerifyOutcome:
    """``fsyncbench powercut verify``: check every commit the ``listener`` (HOST:PORT)
    recorded for the run ``run_id`` (default: the newest in ``target``) against its journal,
    and save the report (kind "powercut") in ``report_dir``. Returns the
    :class:`fsyncbench.powercut.verify.VerifyOutcome` (``report``, ``failed``, ``path``)."""
    from fsyncbench import powercut

    address = options.address(listener, "--from")
    path = options.target_dir(target)
    if outputs is not None:
        outputs.check()
    return powercut.verify(
        address, path, run_id, Path(report_dir), list(_command_line(command_line))
    )


def build_report(
    kind: str,
    host: Host,
    results: Sequence[Result],
    command_line: Sequence[str],
    floors: Sequence[Result] = (),
    evidence: Evidence | None = None,
    elapsed_ns: int | None = None,
) -> Report:
    """Assemble a report of ``kind`` ("run" or "audit"): the verdict is derived here from
    ``host``, ``results`` and ``evidence`` (what ``fsyncbench audit`` measured,
    :mod:`fsyncbench.measure.evidence`), the notes from the measurement
    (:func:`fsyncbench.measure.runner.measurement_notes`); ``floors``
    (:func:`fsyncbench.measure.runner.measure_floors`) are recorded as they are."""
    from fsyncbench.judge import engine

    now = _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0)
    return Report(
        schema_version=SCHEMA_VERSION,
        tool_version=__version__,
        kind=kind,
        created_utc=now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        command_line=tuple(command_line),
        host=host,
        results=tuple(results),
        verdict=engine.judge(host, results, evidence),
        notes=runner.measurement_notes(host, results),
        evidence=evidence,
        floors=tuple(floors),
        elapsed_ns=elapsed_ns,
    )


class _Measuring:
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

    def __enter__(self) -> _Measuring:
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


def _collect_host(target: Path) -> Host:
    from fsyncbench.host import collect_host

    return collect_host(str(target))


def _declare(host: Host, facts: Sequence[str]) -> Host:
    """``host`` with the ``facts`` recorded in its target (``declared``)."""
    if not facts:
        return host
    target = dataclasses.replace(
        host.target, declared=tuple(dict.fromkeys((*host.target.declared, *facts)))
    )
    return dataclasses.replace(host, target=target)


def _sweep(target: Path, notes: Notes | None) -> None:
    """Just before measuring: remove the working directories dead runs left in ``target``
    (SIGKILL, a power cut), with a note on each one found."""
    from fsyncbench.measure import scratch

    for message in scratch.sweep_leftovers(target):
        _note(notes, message)


def _note(notes: Notes | None, message: str) -> None:
    if notes is not None:
        notes(message)


def _command_line(given: Sequence[str] | None) -> tuple[str, ...]:
    return tuple(given) if given is not None else (tuple(sys.argv) if sys.argv else ("python",))


def _redacted(report: Report, redact: bool) -> Report:
    if not redact:
        return report
    from fsyncbench.report import redact as redaction

    return redaction.redact_report(report)


# --------------------------------------------------------------------------- reports


def load(
    path: PathLike,
    *,
    redact: bool = False,
    gates: Gates | None = None,
    outputs: Outputs | None = None,
) -> Report:
    """``fsyncbench show``'s report: read and check a saved report file (run, audit or
    powercut; a newer schema raises "upgrade fsyncbench"), ``redact``-ed if asked. ``gates``'
    configurations must be in it; ``outputs`` must not overwrite it (both checked)."""
    path = Path(path)
    if outputs is not None:
        outputs.check(source=path)
    report = _redacted(store.load_report(path), redact)
    if gates is not None:
        gates.check_configs([r.name for r in report.results])
    return report


def save(
    report: Report,
    report_dir: PathLike | None,
    *,
    html: bool = False,
    csv: PathLike | None = None,
    model_call_ms: float = DEFAULT_MODEL_CALL_MS,
    rendered: dict[str, str] | None = None,
) -> list[Path]:
    """Write ``<host>-<time>.json`` and ``.md`` (and ``.html``) under a name no other report
    holds in ``report_dir`` (created if needed; None: no report files), then the raw samples
    as CSV to ``csv`` (replaced if it exists, like fio's and hyperfine's output files), all
    durably; returns the paths written. ``rendered``: texts already rendered, by format. All
    or nothing: on any failure (or Ctrl-C) the report files written so far are removed."""
    from fsyncbench.report import tables

    out_dir = None if report_dir is None else store.prepare_output_dir(Path(report_dir))
    csv = None if csv is None else Path(csv)
    suffixes = (".json", ".md") + ((".html",) if html else ()) if out_dir is not None else ()
    paths: list[Path] = []
    if out_dir is not None:
        stem = store.claim_name(out_dir, store.report_basename(report), suffixes)
        paths = [stem.with_name(stem.name + suffix) for suffix in suffixes]
    done = rendered or {}
    texts = {
        suffix: (
            lambda fmt=fmt: (
                done[fmt] if fmt in done else render(report, fmt, model_call_ms=model_call_ms)
            )
        )
        for suffix, fmt in ((".json", "json"), (".md", "markdown"), (".html", "html"))
    }
    written: list[Path] = []
    try:
        for path, suffix in zip(paths, suffixes):
            store.write_durably(path, texts[suffix]())
            written.append(path)
        if csv is not None:
            store.write_durably(csv, tables.render_csv(report))
    except BaseException:
        for path in written:
            path.unlink(missing_ok=True)
        for path in paths:  # a name claimed but not yet written
            path.unlink(missing_ok=True)
        raise
    return paths + ([csv] if csv is not None else [])


def write_file(path: PathLike, text: str) -> None:
    """Atomically and durably replace the file ``path`` with ``text`` (``-o FILE``)."""
    store.write_durably(Path(path), text)


def render(
    result: object, fmt: str = "text", *, model_call_ms: float = DEFAULT_MODEL_CALL_MS
) -> str:
    """``result`` as the CLI prints it in ``fmt``: a Report ("text", "markdown", "json",
    "html"; a powercut report through :func:`fsyncbench.powercut.view.render`, others
    through :func:`fsyncbench.report.render`, JSON as saved); a Host, a CrashExperiment
    (:func:`kill_matrix`) or a :class:`Comparison` ("text", "markdown", "json"); a powercut
    WriterSummary or VerifyOutcome ("text", "json"). ``model_call_ms``: the unit a durable
    commit is set against, in milliseconds."""
    from fsyncbench.report import tables

    options.model_call_ms(model_call_ms)
    if isinstance(result, Report):
        fmt = options.choice(fmt, options.REPORT_FORMATS, "--format")
        if fmt == "json":
            return store.report_to_json(result)
        if result.kind == "powercut":
            from fsyncbench.powercut import view

            return view.render(result, fmt)
        from fsyncbench import report as reporting

        return reporting.render(result, fmt, model_call_ms)
    if isinstance(result, Comparison):
        return _render_comparison(result, options.choice(fmt, options.TABLE_FORMATS, "--format"))
    if isinstance(result, Host):
        if options.choice(fmt, options.TABLE_FORMATS, "--format") == "json":
            return _json(to_jsonable(result))
        return tables.render_host(result, fmt)
    from fsyncbench.powercut.verify import VerifyOutcome
    from fsyncbench.powercut.writer import WriterSummary, format_summary

    if isinstance(result, VerifyOutcome):
        fmt = options.choice(fmt, options.VERIFY_FORMATS, "--format")
        return store.report_to_json(result.report) if fmt == "json" else result.text
    if isinstance(result, WriterSummary):
        if options.choice(fmt, options.VERIFY_FORMATS, "--format") == "json":
            return (
                json.dumps(
                    {
                        k: str(v) if isinstance(v, Path) else v
                        for k, v in to_jsonable(result).items()
                    },
                    indent=1,
                )
                + "\n"
            )
        return format_summary(result) + "\n"
    from fsyncbench.crash import CrashExperiment
    from fsyncbench.crash.view import crash_jsonable, render_crash

    if isinstance(result, CrashExperiment):
        if options.choice(fmt, options.TABLE_FORMATS, "--format") == "json":
            return _json(crash_jsonable(result, model_call_ms))
        return render_crash(result, model_call_ms, fmt)
    raise FsyncbenchError(f"cannot render a {type(result).__name__}")


def _json(data: Any) -> str:
    from fsyncbench.report import tables

    return json.dumps(tables.json_safe(data), indent=1) + "\n"


@dataclass(frozen=True)
class GateResult:
    """What :func:`gate` found: ``failures`` (:class:`fsyncbench.judge.gates.GateFailure`,
    in result order) among ``checked`` configurations; ``active`` False when no gate was
    set (nothing checked)."""

    failures: tuple[GateFailure, ...] = ()
    checked: int = 0
    active: bool = False

    @property
    def failed(self) -> bool:
        return bool(self.failures)


def gate(
    report: Report,
    gates: Gates | None = None,
    *,
    max_p99: str | int | None = None,
    fail_on: str | Sequence[str] | None = None,
    configs: str | Sequence[str] | None = None,
) -> GateResult:
    """The CI gates over ``report``: each configuration (``configs``; default all but the
    no-sync write baseline) whose p99 is above ``max_p99`` ("10ms", or ns) or whose path
    verdict is in ``fail_on`` ("volatile_cache,no_flush") fails. Give ``gates`` (parsed) or
    the three values."""
    from fsyncbench.judge import gates as checks

    if gates is None:
        gates = Gates.parse(max_p99, fail_on, configs)
    if not gates.active:
        return GateResult()
    failures = checks.check(report, gates.max_p99_ns, gates.fail_on, gates.configs)
    return GateResult(tuple(failures), len(checks.select(report, gates.configs)), True)


@dataclass(frozen=True)
class Comparison:
    """What :func:`compare` found. Two reports: ``pair`` (host differences, each
    configuration's p50 and p99 side by side with intervals and Holm-adjusted significance).
    Three or more: ``fleet`` rows sorted by the p99 of ``config``. With a regression check
    (``limit_pct`` set): the ``regressions`` (:class:`fsyncbench.report.compare.Regression`)
    against the first report, the configurations ``not_checked`` and the ``lines`` that say
    so."""

    reports: tuple[Report, ...]
    labels: tuple[str, ...]
    pair: PairComparison | None = None
    fleet: tuple[FleetRow, ...] = ()
    config: str | None = None
    limit_pct: float | None = None
    regressions: tuple[Regression, ...] = ()
    not_checked: tuple[str, ...] = ()
    lines: tuple[str, ...] = ()


def compare(
    reports: Sequence[PathLike | Report],
    *,
    configs: str | Sequence[str] | None = None,
    fail_on_regression: float | None = None,
    outputs: Outputs | None = None,
) -> Comparison:
    """``fsyncbench compare``: two or more reports (files or Report objects; the first is the
    baseline, each labelled by its file name, or its path where names repeat). ``configs``:
    the configuration to sort a fleet by (default wal/full), or those the regression check
    looks at. ``fail_on_regression``: a percentage; a configuration whose p99 is more than
    that much worse than in the baseline, and significantly so, is a regression."""
    from fsyncbench.judge import gates as checks
    from fsyncbench.report import compare as comparing

    if len(reports) < 2:
        raise FsyncbenchError("compare needs at least two reports")
    limit = None if fail_on_regression is None else options.percent(fail_on_regression)
    if outputs is not None:
        outputs.check()
    names = [store.report_basename(r) if isinstance(r, Report) else Path(r).name for r in reports]
    labels = (
        names
        if len(set(names)) == len(names)
        else [store.report_basename(r) if isinstance(r, Report) else str(Path(r)) for r in reports]
    )
    loaded = [r if isinstance(r, Report) else store.load_report(Path(r)) for r in reports]
    comparing.check_comparable(loaded, labels)
    wanted = checks.parse_names([configs] if isinstance(configs, str) else configs)
    if wanted:
        checks.check_names(wanted, comparing.common_names(loaded), "every report has")
    out = Comparison(tuple(loaded), tuple(labels))
    if len(loaded) == 2:
        pair = comparing.compare_pair(loaded[0], loaded[1])
        pairs = [(labels[1], pair)]
        out = dataclasses.replace(out, pair=pair)
    else:
        if len(wanted) > 1:
            raise FsyncbenchError("a fleet is sorted by one configuration: give one --config")
        config = comparing.fleet_config(loaded, wanted[0] if wanted else None)
        out = dataclasses.replace(
            out, fleet=tuple(comparing.fleet(loaded, labels, config)), config=config
        )
        pairs = (
            []
            if limit is None
            else [
                (label, comparing.compare_pair(loaded[0], rep))
                for rep, label in zip(loaded[1:], labels[1:])
            ]
        )
    if limit is None:
        return out
    found, skipped = [], []
    for label, pair in pairs:
        looked, untested = comparing.regression_coverage(pair, wanted)
        if untested and len(untested) == looked:
            raise FsyncbenchError(
                f"--fail-on-regression could test no configuration of {label} against "
                f"{labels[0]}: "
                + "; ".join(untested[:2])
                + (f"; and {len(untested) - 2} more" if len(untested) > 2 else "")
            )
        skipped += [f"{u} in {label}" for u in untested]
        found += comparing.regressions(pair, limit, labels[0], label, wanted)
    return dataclasses.replace(
        out,
        limit_pct=limit,
        regressions=tuple(found),
        not_checked=tuple(skipped),
        lines=tuple(_regression_lines(limit, pairs, labels[0], found, skipped)),
    )


def _regression_lines(
    limit: float,
    pairs: Sequence[tuple[str, PairComparison]],
    baseline: str,
    found: Sequence[Regression],
    skipped: Sequence[str],
) -> list[str]:
    """The regression check's lines: what was not checked, then each regression (or none)."""
    from fsyncbench.fmt import fmt_ns
    from fsyncbench.report import compare as comparing
    from fsyncbench.report import tables

    lines = []
    if skipped:
        lines.append(
            "Not checked for a regression (no p99 interval to test): " + "; ".join(skipped) + "."
        )
    if not found:
        lines.append(f"No p99 regression above {limit:g} % against {baseline}.")
        return lines
    for label, pair in pairs:
        moved = tables.floor_moved_line(pair)
        if moved and any(r.candidate == label for r in found):
            lines.append(f"{label}: {moved}")
    for r in found:
        q = r.p99
        assert q.ratio_ci is not None  # a regression is tested, so it has its interval
        lines.append(
            f"REGRESSION {r.name}: p99 {fmt_ns(q.a_ns)} in {r.baseline} -> "
            f"{fmt_ns(q.b_ns)} in {r.candidate} ({q.change_pct:+.0f} %, ratio 95% CI "
            f"[{q.ratio_ci[0]:.2f}, {q.ratio_ci[1]:.2f}]), more than --fail-on-regression "
            f"{r.limit_pct:g} % worse ({comparing.ADJUSTMENT}-adjusted one-sided p {r.p_adjusted:.2g})"
        )
    return lines


def _render_comparison(c: Comparison, fmt: str) -> str:
    from fsyncbench.report import tables

    if fmt != "json":
        if c.pair is not None:
            return tables.render_compare(
                c.reports[0], c.reports[1], c.pair, c.labels, tables.TABLEFMT[fmt]
            )
        return tables.render_fleet(list(c.fleet), c.config, tables.TABLEFMT[fmt])
    if c.pair is not None:
        data = tables.compare_jsonable(c.reports[0], c.reports[1], c.pair, c.labels)
    else:
        data = tables.fleet_jsonable(list(c.fleet), c.config)
    if c.limit_pct is not None:
        data["regression_check"] = {
            "limit_pct": c.limit_pct,
            "baseline": c.labels[0],
            "not_checked": list(c.not_checked),
            "regressions": [to_jsonable(r) for r in c.regressions],
        }
    return _json(data)
