"""The measuring half of the API (:mod:`fsyncbench.api`): :func:`run`, :func:`audit`,
:func:`host_record`, :func:`kill_matrix`, :func:`simulate_power_loss` and the ``powercut_*`` calls,
:func:`build_report`, which assembles and judges what they measured, and
:func:`experiment_report`, which makes a report of a kill matrix or a power-loss simulation."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from fsyncbench import __version__, options
from fsyncbench.errors import FsyncbenchError, Interrupted
from fsyncbench.measure import rounds as _rounds
from fsyncbench.measure import runner
from fsyncbench.measure import writers as _writers
from fsyncbench.measure.plan import (
    DEFAULT_PAYLOAD_BYTES,
    DEFAULT_ROUNDS,
    DEFAULT_WARMUP,
    MAX_PAYLOAD_BYTES,
)
from fsyncbench.model import (
    EXPERIMENT_KINDS,
    SCHEMA_VERSION,
    Evidence,
    Host,
    Pragmas,
    Report,
    Result,
    WritersPoint,
)
from fsyncbench.options import Gates, Outputs
from fsyncbench.report import history as _history
from fsyncbench.report import store

if TYPE_CHECKING:  # for annotations only: each is imported where it is used
    from fsyncbench.crash import CrashExperiment, CrashProgress, PowerLossExperiment
    from fsyncbench.model import PowerlossResult
    from fsyncbench.powerloss import PowerlossPlan


PathLike = str | os.PathLike[str]
#: progress(label, index, total, done, target, elapsed_ns, budget_ns): ``label`` the
#: workload being sampled, ``index`` of ``total`` workloads (a float: the share of the run
#: budget spent, when ``budget_ns`` is 0), ``done`` of ``target`` samples, ``elapsed_ns``
#: of its ``budget_ns``.
Progress = runner.RunProgress
#: notes(message): something worth telling about a run as it happens (a leftover working
#: directory removed, an option without effect); the CLI prints "fsyncbench: note: ...".
Notes = Callable[[str], None]


def run(
    target: PathLike = ".",
    *,
    journal_modes: str | Sequence[str] | None = None,
    synchronous: str | Sequence[str] | None = None,
    fullfsync: str | bool | Sequence[str | bool] | None = None,
    samples: int | None = None,
    ci_target_pct: float | None = None,
    min_samples: int | None = None,
    budget_seconds: float | None = None,
    run_budget_seconds: float | None = None,
    rounds: int = DEFAULT_ROUNDS,
    warmup: int = DEFAULT_WARMUP,
    payload_bytes: int | str | Sequence[int] = DEFAULT_PAYLOAD_BYTES,
    primitives: bool = True,
    powerloss: str | Sequence[str] | None = None,
    assume: str | Sequence[str] = (),
    redact: bool = False,
    gates: Gates | None = None,
    outputs: Outputs | None = None,
    progress: Progress | None = None,
    notes: Notes | None = None,
    command_line: Sequence[str] | None = None,
    history: PathLike | None = None,
    retake_disturbed: bool = True,
    writers: str | int | Sequence[int] | None = None,
    steps_per_commit: str | int | Sequence[int] | None = None,
    begin: str = "immediate",
    busy_timeout_ms: int = _writers.DEFAULT_BUSY_TIMEOUT_MS,
    writers_seconds: float = _writers.DEFAULT_WINDOW_S,
    vs: str | Sequence[str] | None = None,
) -> Report:
    """``fsyncbench run``: measure journal-commit latency per pragma combination (and the raw
    sync primitives) in a fresh working directory under the existing directory ``target``,
    removed again, and return the judged report (kind "run"); nothing else is written.

    ``journal_modes`` / ``synchronous`` / ``fullfsync``: comma lists or sequences (default
    delete,truncate,wal x off,normal,full; fullfsync off,on on macOS, unset elsewhere).
    ``samples`` fixes the samples per configuration (split over ``rounds``); without it,
    each is sampled until the 95 % CI of its p99 is within +-``ci_target_pct`` % (default
    10), from ``min_samples`` on (default 1000, 1250 on macOS), all sharing ``run_budget_seconds`` (default
    30 s, 90 s on macOS; none with ``samples``), none taking more than ``budget_seconds``
    (default 10 s, 20 s on macOS: :func:`fsyncbench.measure.plan.default_budgets`). ``payload_bytes``:
    each step's output (a comma list or a sequence sweeps the sizes after the rounds, as
    ``writers`` does; the rounds use the first); ``primitives`` False skips the raw
    write+sync measurements.
    ``powerloss``: persistence models (a comma list or a sequence, e.g. "synced-only,prefix")
    under which each measured configuration's commits are then replayed through simulated
    power cuts (:func:`simulate_power_loss`), after the timing has finished; the report's
    ``powerloss`` holds the result, shown beside the latency.
    ``assume``: facts the machine cannot show ("plp"; a comma list or a sequence). ``redact``: remove hostname, serials
    and user paths. ``gates``: its ``configs`` must be configurations this run measures;
    ``outputs``: files the caller writes afterwards; both checked before anything is
    measured. ``command_line`` is recorded in the report (default ``sys.argv``).
    ``history``: a directory of saved reports (the CLI's default: the report directory);
    earlier runs of the same measurement found there
    (:func:`fsyncbench.report.history.read_history`, read before measuring) widen each
    interval by the spread between runs. None, or a directory that does not exist: this
    run's intervals alone, which cannot see how much a run at another time differs.
    ``retake_disturbed``: take the rounds again that other processes disturbed (their
    flushes on the same disk, CPU wait or steal could explain the round's tail,
    :mod:`fsyncbench.measure.disturbance`), within +50 % of the rounds' time; False: record
    the disturbance only. Either way the report's ``activity`` says what each round saw.
    ``writers``: writer counts (a comma list such as "1,4", or a sequence) at which each
    configuration is then measured again with that many processes committing into one
    database at once, each for ``writers_seconds`` (:mod:`fsyncbench.measure.writers`;
    the report's ``writers``); ``steps_per_commit`` (a comma list: step rows per
    transaction) sweeps the batch size the same way (one writer unless ``writers`` says
    otherwise); ``begin`` ("immediate" or "deferred") and ``busy_timeout_ms`` (default
    5,000, Python's) are how each writer waits for the write lock. ``vs``: two
    configurations the report sets head to head (checked here against the plan, before
    anything is measured; :func:`render` takes them).
    """
    started = time.monotonic_ns()
    options.check_instance(gates, Gates, "gates")
    check_extras(assume, outputs, progress, notes, command_line)
    path = options.target_dir(target)
    if isinstance(payload_bytes, (str, list, tuple)):  # a sweep of sizes (or one, as text)
        sizes = options.int_list(payload_bytes, "--payload-bytes", 1, MAX_PAYLOAD_BYTES)
    else:  # one size, checked with the plan
        options.check_integer(payload_bytes, "payload_bytes")
        sizes = (payload_bytes,)  # type: ignore[assignment]
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
        payload_bytes=sizes[0],
        primitives=primitives,
    )
    if gates is not None:
        gates.check_configs(runner.result_names(plan), "this run measures")
    head = options.vs_names(vs)
    missing = [n for n in head if n not in {p.label for p in plan.configs}]
    if missing:
        raise FsyncbenchError(
            f"--vs: {' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not among "
            "the configurations this run measures: " + ", ".join(p.label for p in plan.configs)
        )
    writers_plan = options.writers_plan(
        plan.configs,
        writers=writers,
        steps_per_commit=steps_per_commit,
        payload_bytes=sizes,
        begin=begin,
        busy_timeout_ms=busy_timeout_ms,
        seconds=writers_seconds,
    )
    loss_plan = (
        None
        if powerloss is None
        else dataclasses.replace(
            options.powerloss_plan(models=powerloss, payload_bytes=plan.payload_bytes),
            configs=plan.configs,
        )
    )
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
    past = None
    if history is not None:
        options.check_path(history, "history")
        past = _history.read_history(Path(history), host, runner.result_names(plan))
        if past.unreadable:
            _note(
                notes,
                f"{len(past.unreadable)} file(s) in {history} are not reports this fsyncbench "
                f"reads (not JSON, not a report, or of a newer schema) and give no earlier "
                f"runs: {', '.join(past.unreadable[:3])}"
                + (", ..." if len(past.unreadable) > 3 else ""),
            )
    if past is not None and past.disturbed:
        _note(
            notes,
            f"{len(past.disturbed)} earlier run(s) of this measurement in {history} stayed "
            "disturbed by other processes and are not used as history: "
            + ", ".join(past.disturbed[:3])
            + (", ..." if len(past.disturbed) > 3 else ""),
        )
    _sweep(path, notes)
    if not isinstance(retake_disturbed, bool):
        raise FsyncbenchError(
            f"retake_disturbed must be True or False, got {type(retake_disturbed).__name__}"
        )
    with _Measuring(progress) as where:
        measured = _rounds.measure_rounds(
            plan,
            host,
            where,
            retake_fraction=_rounds.DEFAULT_RETAKE_FRACTION if retake_disturbed else 0.0,
        )
        sweep = (
            () if writers_plan is None else _concurrent(path, writers_plan, measured, where, host)
        )
    results, floors = measured.results, measured.floors
    if past is not None:
        results = _history.with_earlier(results, past)
    loss, skipped = None, ""
    if loss_plan is not None:  # only once every timing has finished
        try:
            loss = _power_cuts(path, loss_plan, None)
        except KeyboardInterrupt:  # the latency is measured: keep it, say what is missing
            skipped = "interrupted: the power-loss simulation (--powerloss) was skipped"
            _note(notes, skipped + "; the latency report is kept")
    report = build_report(
        "run",
        host,
        results,
        command_line_of(command_line),
        floors,
        elapsed_ns=time.monotonic_ns() - started,
    )
    report = dataclasses.replace(
        report,
        activity=measured.activity,
        retake_budget_s=measured.retake_budget_s,
        writers=sweep,
    )
    if loss is not None:
        report = dataclasses.replace(report, powerloss=loss)
    if skipped:
        report = dataclasses.replace(report, notes=(*report.notes, skipped))
    return _redacted(report, redact)


def _concurrent(
    path: Path,
    plan: _writers.WritersPlan,
    measured: _rounds.Measured,
    where: _Measuring,
    host: Host,
) -> tuple[WritersPoint, ...]:
    """``run --writers``: every point of ``plan`` in a working directory of its own under
    ``path``, after the rounds; each configuration's per-commit sync named as its row's."""
    from fsyncbench.host import counter_devices
    from fsyncbench.measure.scratch import scratch_dir

    disks = counter_devices(host.target)
    primitive = {r.name: r.primitive for r in measured.results if r.kind == "commit"}

    def progress(name: str, done: int, total: int) -> None:
        where(f"{name} (writers)", min(total - 0.01, done), total, 0, 0, 0, 0)

    with scratch_dir(path) as work:
        return _writers.measure_writers(
            plan, work, lambda p: primitive.get(p.label, "unknown"), progress, disks
        )


def simulate_power_loss(
    target: PathLike = ".",
    *,
    journal_modes: str | Sequence[str] | None = None,
    synchronous: str | Sequence[str] | None = None,
    fullfsync: str | bool | Sequence[str | bool] | None = None,
    models: str | Sequence[str] | None = None,
    semantics: str | None = None,
    commits: int | None = None,
    payload_bytes: int = DEFAULT_PAYLOAD_BYTES,
    sector_bytes: int = 512,
    psow: bool | None = None,
    max_states: int | None = None,
    samples: int | None = None,
    seed: int = 0,
    keep_failures: PathLike | None = None,
    outputs: Outputs | None = None,
    progress: Progress | None = None,
    notes: Notes | None = None,
    wal_autocheckpoint: int | None = None,
) -> PowerlossResult:
    """``fsyncbench powerloss``: record every file operation SQLite makes while committing
    the step journal under each pragma combination (in a working directory under ``target``,
    removed again), rebuild the states a power cut could leave under each persistence model
    and count the acknowledged commits lost and the corrupt states
    (:mod:`fsyncbench.powerloss`). Pragma lists as :func:`run` takes them; ``models``
    (default synced-only,prefix), ``semantics`` (linux, macos or windows; default this system's),
    ``commits`` per configuration (default 10), ``sector_bytes`` (512 or 4096: torn,
    torn-garbage, test6), ``psow`` (None: SQLite's default, off for those three),
    ``max_states``/``samples``/``seed`` (subset and those three), ``keep_failures`` (a
    directory for the worst state of each), ``wal_autocheckpoint`` (WAL pages between
    automatic checkpoints, 0 none; None: SQLite's default, 1000). Render the result with
    :func:`render`. Raises FsyncbenchError on bad input or a failed
    recording."""
    check_extras((), outputs, progress, notes)
    path = options.target_dir(target)
    plan = options.powerloss_plan(
        journal_modes=journal_modes,
        synchronous=synchronous,
        fullfsync=fullfsync,
        models=models,
        semantics=semantics,
        commits=commits,
        payload_bytes=payload_bytes,
        sector_bytes=sector_bytes,
        psow=psow,
        max_states=max_states,
        samples=samples,
        seed=seed,
        keep_failures=keep_failures,
        wal_autocheckpoint=wal_autocheckpoint,
    )
    if outputs is not None:
        outputs.check()
    _sweep(path, notes)
    try:
        return _power_cuts(path, plan, progress)
    except KeyboardInterrupt:
        raise Interrupted(
            "interrupted during the power-loss simulation; working directory removed"
        ) from None


def _power_cuts(path: Path, plan: PowerlossPlan, progress: Progress | None) -> PowerlossResult:
    from fsyncbench.powerloss.matrix import run_matrix

    def step(done: int, total: int, label: str) -> None:
        if progress is not None:
            progress(label, done, total, 0, 1, 0, 0)

    return run_matrix(path, plan, progress=step)


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
    assume: str | Sequence[str] = (),
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
    options.check_path(target, "target", optional=True)
    options.check_path(from_report, "from_report", optional=True)
    options.audit_types(
        samples, budget_seconds, compare_syncs, sweep_repeats, sweep_max_mib, trace_commits
    )
    check_extras(assume, outputs, progress, notes, command_line)
    if from_report is not None:
        if target is not None:
            raise FsyncbenchError("give a directory to audit or --from REPORT, not both")
        facts = options.assumed(assume)
        if outputs is not None:
            outputs.check()
        loaded = store.load_report(Path(from_report))
        if loaded.kind in (*EXPERIMENT_KINDS, "powercut"):
            # a crash, powerloss or powercut report holds no timings to judge the path from
            raise FsyncbenchError(
                f"{from_report} is a {loaded.kind} report: audit --from re-judges the "
                "timings of a run or audit report (show prints this one)"
            )
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
        results = _rounds.run_plan(plan, host, where)
        where.label = "audit evidence"

        def step(name: str, _index: int, _total: int) -> None:
            where.label = f"audit evidence ({name})"

        ev = evidence.collect(path, host, ev_plan, progress=step)
    report = build_report(
        "audit",
        host,
        results,
        command_line_of(command_line),
        evidence=ev,
        elapsed_ns=time.monotonic_ns() - started,
    )
    return _redacted(report, redact)


def host_record(
    target: PathLike = ".", *, assume: str | Sequence[str] = (), outputs: Outputs | None = None
) -> Host:
    """``fsyncbench host``: the host record (OS, SQLite, filesystem, storage stack, devices,
    virtualization) of the directory ``target``, with the ``assume`` facts declared;
    nothing is measured."""
    check_extras(assume, outputs)
    path = options.target_dir(target)
    facts = options.assumed(assume)
    if outputs is not None:
        outputs.check()
    return _declare(_collect_host(path), facts)


def kill_matrix(
    target: PathLike = ".",
    *,
    journal_mode: str | None = None,
    synchronous: str | None = None,
    power_loss: str | None = None,
    semantics: str | None = None,
    outputs: Outputs | None = None,
    progress: Progress | None = None,
    notes: Notes | None = None,
    fullfsync: str | bool | None = None,
) -> CrashExperiment | PowerLossExperiment:
    """``fsyncbench crash``: SIGKILL a scripted 10-step agent at every step under four
    persistence policies, its step journal in a working directory under ``target`` with one
    ``journal_mode`` and ``synchronous`` (default wal and full); returns the
    :class:`fsyncbench.crash.CrashExperiment` (render it with :func:`render`).

    ``power_loss`` (a model of :data:`fsyncbench.powerloss.MODELS`): each kill is also a
    simulated power cut of the agent's machine under that model and ``semantics`` (linux,
    macos or windows; default this host's); the matrix runs once per pragma combination, by default
    :data:`fsyncbench.crash.DEFAULT_POWER_LOSS_PRAGMAS` (wal/full, wal/normal, wal/off,
    delete/full), the one given when ``journal_mode`` or ``synchronous`` is; returns a
    :class:`fsyncbench.crash.PowerLossExperiment`. Raises FsyncbenchError for bad values,
    ``semantics`` without ``power_loss`` among them. ``progress`` is called as :func:`run`
    calls it, after every kill: ``index`` the part (a policy under one pragma combination,
    then replay and reorder) of ``total``, ``done`` of its ``target`` kills; nothing here
    has a time budget, so ``elapsed_ns`` is 0 of ``budget_ns`` 1. ``fullfsync`` ("on",
    "off" or a bool): PRAGMA fullfsync on the journal (default: not set, except under
    macOS semantics with ``power_loss`` and no pragmas given, where the durable rows are
    measured with it and without: :data:`fsyncbench.crash.DARWIN_POWER_LOSS_PRAGMAS`).
    Save the result with :func:`experiment_report` and :func:`save`."""
    from fsyncbench import crash
    from fsyncbench.powerloss import MODELS, SEMANTICS, default_semantics

    check_extras((), outputs, progress, notes)
    for value, name in (
        (journal_mode, "journal_mode"),
        (synchronous, "synchronous"),
        (power_loss, "power_loss"),
        (semantics, "semantics"),
    ):
        options.check_text(value, name, optional=True)
    path = options.target_dir(target)
    given = journal_mode is not None or synchronous is not None
    pragmas = options.one_pragmas(
        "wal" if journal_mode is None else journal_mode,
        "full" if synchronous is None else synchronous,
        command="crash",
    )
    if fullfsync is not None:
        full = options.fullfsync_value(fullfsync)
        pragmas = Pragmas(pragmas.journal_mode, pragmas.synchronous, full)
        given = True
    if power_loss is not None:
        options.choice(power_loss, MODELS, "--powerloss")
        semantics = options.choice(
            semantics or default_semantics(sys.platform), SEMANTICS, "--semantics"
        )
    elif semantics is not None:
        raise FsyncbenchError("--semantics applies only with --powerloss")
    if outputs is not None:
        outputs.check()
    _sweep(path, notes)
    try:
        if power_loss is not None:
            assert semantics is not None
            combos = (pragmas,) if given else crash.default_power_loss_pragmas(semantics)
            return crash.run_power_loss_matrix(
                path, power_loss, semantics, combos, progress=_kills(progress)
            )
        return crash.run_crash_experiment(
            path,
            pragmas.journal_mode,
            pragmas.synchronous,
            progress=_kills(progress),
            fullfsync=pragmas.fullfsync,
        )
    except KeyboardInterrupt:
        raise Interrupted("interrupted during the kill matrix; working directory removed") from None


def _kills(progress: Progress | None) -> CrashProgress | None:
    """The kill matrix's progress (:data:`fsyncbench.crash.CrashProgress`) told to
    ``progress`` in run's terms: a part's kills are its samples, with no time budget."""
    if progress is None:
        return None

    def tick(label: str, index: int, total: int, done: int, target: int) -> None:
        progress(label, index, total, done, target, 0, 1)

    return tick


def experiment_report(
    result: CrashExperiment | PowerLossExperiment | PowerlossResult,
    target: PathLike = ".",
    *,
    command_line: Sequence[str] | None = None,
    elapsed_ns: int | None = None,
) -> Report:
    """What :func:`kill_matrix` or :func:`simulate_power_loss` returned, as a report to
    :func:`save`, :func:`render` and :func:`load` again: kind "crash" (the experiment in
    ``crash`` or ``crash_power_loss``) or "powerloss" (in ``powerloss``), with the host
    record of the directory ``target`` it ran in and ``command_line`` (default
    ``sys.argv``), and ``elapsed_ns`` the wall time of the whole command (default: the
    experiment's own, without the host record). It holds no latency results and judges no
    storage path (its verdict is unverifiable): ``compare`` and fleets leave it out.
    Raises FsyncbenchError on a result of another type or a negative ``elapsed_ns``."""
    from fsyncbench.crash import CrashExperiment, PowerLossExperiment
    from fsyncbench.model import NO_STRENGTH, UNVERIFIABLE, PowerlossResult, Verdict

    if not isinstance(result, (CrashExperiment, PowerLossExperiment, PowerlossResult)):
        raise FsyncbenchError(
            "result must be what kill_matrix or simulate_power_loss returned, got "
            f"{options.given(result)}"
        )
    check_extras((), None, command_line=command_line)
    options.check_integer(elapsed_ns, "elapsed_ns", optional=True)
    if elapsed_ns is not None and elapsed_ns < 0:
        raise FsyncbenchError(f"elapsed_ns must be 0 or more, got {elapsed_ns}")
    if elapsed_ns is None:
        elapsed_ns = (
            result.matrix.elapsed_ns if isinstance(result, CrashExperiment) else result.elapsed_ns
        )
    host = _collect_host(options.target_dir(target))
    kind = "powerloss" if isinstance(result, PowerlossResult) else "crash"
    now = _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0)
    return Report(
        schema_version=SCHEMA_VERSION,
        tool_version=__version__,
        kind=kind,
        created_utc=now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        command_line=command_line_of(command_line),
        host=host,
        results=(),
        verdict=Verdict(
            UNVERIFIABLE,
            f"nothing: a {kind} report judges no storage path",
            strength=NO_STRENGTH,
        ),
        powerloss=result if isinstance(result, PowerlossResult) else None,
        crash=result if isinstance(result, CrashExperiment) else None,
        crash_power_loss=result if isinstance(result, PowerLossExperiment) else None,
        elapsed_ns=elapsed_ns,
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


def _sweep(target: Path, notes: Notes | None) -> None:
    """Just before measuring: remove the working directories dead runs left in ``target``
    (SIGKILL, a power cut), with a note on each one found."""
    from fsyncbench.measure import scratch

    for message in scratch.sweep_leftovers(target):
        _note(notes, message)


def _note(notes: Notes | None, message: str) -> None:
    if notes is not None:
        notes(message)


def command_line_of(given: Sequence[str] | None) -> tuple[str, ...]:
    """The command line a report records: ``given`` (the CLI passes its own), else this
    process's ``sys.argv`` (a call from Python)."""
    return tuple(given) if given is not None else (tuple(sys.argv) if sys.argv else ("python",))


def _redacted(report: Report, redact: bool) -> Report:
    if not redact:
        return report
    from fsyncbench.report import redact as redaction

    return redaction.redact_report(report)
