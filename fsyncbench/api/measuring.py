"""The measuring commands of the API (:mod:`fsyncbench.api`): :func:`run` and
:func:`host_record`, and :func:`build_report`, which assembles and judges what ``run`` and
``audit`` (:mod:`fsyncbench.api.auditing`) measured. The kill matrix and the power-loss
simulation are :mod:`fsyncbench.api.experiments`."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from pathlib import Path

from fsyncbench import options
from fsyncbench.api.common import (
    Measuring,
    Notes,
    PathLike,
    Progress,
    check_extras,
    command_line_of,
    declare,
    host_at,
    new_report,
    note,
    redacted,
    sweep_leftovers,
)
from fsyncbench.api.experiments import power_cuts
from fsyncbench.errors import FsyncbenchError
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
    Evidence,
    Host,
    Report,
    Result,
    WritersPoint,
)
from fsyncbench.options import Gates, Outputs
from fsyncbench.report import history as _history


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
    host = declare(host_at(path), facts)
    if fullfsync is not None and host.os_name != "Darwin":
        note(
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
            note(
                notes,
                f"{len(past.unreadable)} file(s) in {history} are not reports this fsyncbench "
                f"reads (not JSON, not a report, or of a newer schema) and give no earlier "
                f"runs: {', '.join(past.unreadable[:3])}"
                + (", ..." if len(past.unreadable) > 3 else ""),
            )
    if past is not None and past.disturbed:
        note(
            notes,
            f"{len(past.disturbed)} earlier run(s) of this measurement in {history} stayed "
            "disturbed by other processes and are not used as history: "
            + ", ".join(past.disturbed[:3])
            + (", ..." if len(past.disturbed) > 3 else ""),
        )
    sweep_leftovers(path, notes)
    if not isinstance(retake_disturbed, bool):
        raise FsyncbenchError(
            f"retake_disturbed must be True or False, got {type(retake_disturbed).__name__}"
        )
    with Measuring(progress) as where:
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
            loss = power_cuts(path, loss_plan, None)
        except KeyboardInterrupt:  # the latency is measured: keep it, say what is missing
            skipped = "interrupted: the power-loss simulation (--powerloss) was skipped"
            note(notes, skipped + "; the latency report is kept")
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
    return redacted(report, redact)


def _concurrent(
    path: Path,
    plan: _writers.WritersPlan,
    measured: _rounds.Measured,
    where: Measuring,
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
    return declare(host_at(path), facts)


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

    return dataclasses.replace(
        new_report(kind, host, command_line, results, engine.judge(host, results, evidence)),
        notes=runner.measurement_notes(host, results),
        evidence=evidence,
        floors=tuple(floors),
        elapsed_ns=elapsed_ns,
    )
