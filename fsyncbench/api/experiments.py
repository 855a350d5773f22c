"""The experiments of the API (:mod:`fsyncbench.api`): the kill matrix
(:func:`kill_matrix`, ``fsyncbench crash``), the power-loss simulation
(:func:`simulate_power_loss`, ``fsyncbench powerloss``, also what ``run --powerloss`` replays
after its timing: :func:`power_cuts`), and :func:`experiment_report`, which makes a report of
either to save."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from fsyncbench import options
from fsyncbench.api.common import (
    Notes,
    PathLike,
    Progress,
    check_extras,
    command_line_of,
    host_at,
    new_report,
    sweep_leftovers,
)
from fsyncbench.errors import FsyncbenchError, Interrupted
from fsyncbench.measure.plan import DEFAULT_PAYLOAD_BYTES
from fsyncbench.model import Pragmas, Report
from fsyncbench.options import Outputs

if TYPE_CHECKING:  # for annotations only: each is imported where it is used
    from fsyncbench.crash import CrashExperiment, CrashProgress, PowerLossExperiment
    from fsyncbench.model import PowerlossResult
    from fsyncbench.powerloss import PowerlossPlan


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
    sweep_leftovers(path, notes)
    try:
        return power_cuts(path, plan, progress)
    except KeyboardInterrupt:
        raise Interrupted(
            "interrupted during the power-loss simulation; working directory removed"
        ) from None


def power_cuts(path: Path, plan: PowerlossPlan, progress: Progress | None) -> PowerlossResult:
    from fsyncbench.powerloss.matrix import run_matrix

    def step(done: int, total: int, label: str) -> None:
        if progress is not None:
            progress(label, done, total, 0, 1, 0, 0)

    return run_matrix(path, plan, progress=step)


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
    sweep_leftovers(path, notes)
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
    host = host_at(options.target_dir(target))
    kind = "powerloss" if isinstance(result, PowerlossResult) else "crash"
    judged = Verdict(
        UNVERIFIABLE, f"nothing: a {kind} report judges no storage path", strength=NO_STRENGTH
    )
    return dataclasses.replace(
        new_report(kind, host, command_line_of(command_line), (), judged),
        powerloss=result if isinstance(result, PowerlossResult) else None,
        crash=result if isinstance(result, CrashExperiment) else None,
        crash_power_loss=result if isinstance(result, PowerLossExperiment) else None,
        elapsed_ns=elapsed_ns,
    )
