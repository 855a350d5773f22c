"""The public entry points: the kill matrix, its published table, replay of a completed run,
a reordered restart after a crash, and all three together."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from fsyncbench.crash.child import (
    _create_lane,
    _pragmas,
    _require_fork,
    _run_child,
    _run_policy,
    _RunSpec,
    _world_counts,
)
from fsyncbench.crash.power import DEFAULT_POWER_LOSS_PRAGMAS, PowerLoss
from fsyncbench.crash.power import sqlite_version as power_sqlite_version
from fsyncbench.crash.results import (
    _JOURNAL_POLICIES,
    MODEL_TOKENS,
    POLICIES,
    POLICY_LABELS,
    STEP_NAMES,
    WINDOWS,
    CrashError,
    CrashExperiment,
    CrashProgress,
    KillMatrix,
    PolicyRow,
    PowerLossExperiment,
    ReorderResult,
    ReplayResult,
)
from fsyncbench.measure.workloads import scratch_dir
from fsyncbench.model import Pragmas
from fsyncbench.powerloss.rebase import CUT_CHOICE
from fsyncbench.powerloss.sqlite import SyncFilter

#: Kills of each policy: every step's every window.
_KILLS = len(STEP_NAMES) * len(WINDOWS)

# --------------------------------------------------------------------------------------------
# Public API


class _Parts:
    """Progress part by part (:data:`CrashProgress`): ``total`` parts, each begun by
    :meth:`begin`, which returns the part's ``tick(done)``."""

    def __init__(self, progress: CrashProgress | None, total: int) -> None:
        self._progress = progress
        self._total = total
        self._index = -1

    def begin(self, label: str, target: int) -> Callable[[int], None]:
        self._index += 1
        index, total, progress = self._index, self._total, self._progress

        def tick(done: int) -> None:
            if progress is not None:
                progress(label, index, total, done, target)

        tick(0)
        return tick


def run_kill_matrix(
    workdir: Path,
    journal_mode: str = "WAL",
    synchronous: str = "FULL",
    *,
    power: PowerLoss | None = None,
    progress: CrashProgress | None = None,
    fullfsync: bool | None = None,
) -> KillMatrix:
    """Run the 120-kill matrix (4 policies x 10 steps x 3 windows) under ``workdir``.

    For each policy: one clean reference run, then for each (step, window) a fresh run id,
    a child killed there with SIGKILL and restarts (children too) until the run completes.
    The journal (and the checkpoints) use ``journal_mode``/``synchronous`` (case-insensitive,
    :data:`fsyncbench.measure.workloads.JOURNAL_MODES`/``SYNCHRONOUS``). Runs go one at a time, so
    the journal's commit latency is measured without the matrix competing with itself
    (about 2 s for the 120 kills on a 2-core VM with ext4 on virtio; most of it is fork and
    process teardown, not commits). With ``power`` every kill is also a simulated power cut
    of the agent's machine (:mod:`fsyncbench.crash.power`); the children then use apsw's
    SQLite through a recording VFS and ``journal_commit_ns`` is empty. Returns a
    :class:`KillMatrix`. Raises ValueError for unknown pragma values, CrashUnsupported
    without fork/SIGKILL, CrashError when the directory is unusable or a child fails or hangs.
    ``progress`` (:data:`CrashProgress`) is told of every kill, one part per policy.
    ``fullfsync``: PRAGMA fullfsync on the journal (None: not set; SQLite acts on it on
    macOS, and a recorded power cut under macOS semantics honours its F_FULLFSYNC).
    """
    return _kill_matrix(
        workdir, journal_mode, synchronous, power, _Parts(progress, len(POLICIES)), fullfsync
    )


def _kill_matrix(
    workdir: Path,
    journal_mode: str,
    synchronous: str,
    power: PowerLoss | None,
    parts: _Parts,
    fullfsync: bool | None = None,
) -> KillMatrix:
    _require_fork()
    requested = _pragmas(journal_mode, synchronous, fullfsync)
    with scratch_dir(Path(workdir)) as base:
        rows: list[PolicyRow] = []
        commit_ns: list[int] = []
        effective: Pragmas | None = None
        start = time.perf_counter_ns()
        for policy in POLICIES:
            lane, lane_pragmas = _create_lane(base, policy, requested, power)
            effective = effective or lane_pragmas
            tick = parts.begin(f"{requested.label} {POLICY_LABELS[policy]}", _KILLS)
            rows.append(_run_policy(lane, policy, commit_ns, tick))
        elapsed = time.perf_counter_ns() - start
    assert effective is not None
    return KillMatrix(
        requested=requested,
        effective=effective,
        rows=tuple(rows),
        journal_commit_ns=tuple(commit_ns) if power is None else (),
        elapsed_ns=elapsed,
        kill_count=sum(1 for row in rows for kill in row.kills if kill.kill_signal),
        model_tokens=MODEL_TOKENS,
        sqlite_version=sqlite3.sqlite_version if power is None else power_sqlite_version(),
    )


def run_power_loss_matrix(
    workdir: Path,
    model: str,
    semantics: str = "linux",
    pragmas: Sequence[Pragmas] = DEFAULT_POWER_LOSS_PRAGMAS,
    *,
    sync_filter: SyncFilter | None = None,
    progress: CrashProgress | None = None,
) -> PowerLossExperiment:
    """The kill matrix once per pragma combination in ``pragmas``, each kill a simulated power
    cut of the agent's machine under persistence ``model`` and ``semantics``
    (:class:`fsyncbench.crash.power.PowerLoss`; ``sync_filter`` plants a fault, for tests).
    The default four combinations take about 17 s on a 2-core VM with ext4 on virtio
    (976 children, each recording through apsw; delete/full, with the most syncs, is the
    slowest). Returns a
    :class:`PowerLossExperiment`. Raises ValueError for an unknown model, semantics or
    pragma value or no pragmas; otherwise as :func:`run_kill_matrix`. ``progress``: one
    part per pragma combination and policy."""
    power = PowerLoss(model, semantics, sync_filter)
    if not pragmas:
        raise ValueError("no pragma combination to test")
    start = time.perf_counter_ns()
    parts = _Parts(progress, len(pragmas) * len(POLICIES))
    matrices = tuple(
        _kill_matrix(workdir, p.journal_mode, p.synchronous, power, parts, p.fullfsync)
        for p in pragmas
    )
    return PowerLossExperiment(
        model=model,
        semantics=semantics,
        choice=CUT_CHOICE[model],
        matrices=matrices,
        elapsed_ns=time.perf_counter_ns() - start,
        kill_count=sum(m.kill_count for m in matrices),
        sqlite_version=power_sqlite_version(),
    )


def kill_matrix_rows(matrix: KillMatrix) -> list[dict[str, Any]]:
    """The published table as a list of dicts, one per policy, for ``tabulate(rows,
    headers="keys")``: policy label, kills causing duplicate writes (of N), worst duplicates
    in one run, mean extra tokens ("17,967"), worst extra tokens ("37,000 (+100 %)")."""
    out = []
    for row in matrix.rows:
        out.append(
            {
                "policy": row.label,
                f"kills causing duplicate writes (of {len(row.kills)})": row.kills_causing_duplicates,
                "worst duplicates in one run": row.worst_duplicates,
                "mean extra tokens": f"{round(row.mean_extra_tokens):,}",
                "worst extra tokens": (
                    f"{row.worst_extra_tokens:,} (+{round(row.worst_extra_pct)} %)"
                ),
            }
        )
    return out


def replay_completed_run(
    workdir: Path,
    journal_mode: str = "WAL",
    synchronous: str = "FULL",
    policy: str = "journal_idempotency",
) -> ReplayResult:
    """Run the agent to completion in a child, then run it again with the same run id.

    ``policy`` must be a journal policy (``step_journal`` or ``journal_idempotency``).
    Returns a :class:`ReplayResult`; with a working journal the replay makes zero
    outside-world effects and bills zero tokens. Raises ValueError for other policies or
    pragma values, CrashUnsupported/CrashError as :func:`run_kill_matrix`.
    """
    if policy not in _JOURNAL_POLICIES:
        raise ValueError(f"replay needs a journal policy ({', '.join(_JOURNAL_POLICIES)})")
    _require_fork()
    pragmas = _pragmas(journal_mode, synchronous)
    with scratch_dir(Path(workdir)) as base:
        lane, _ = _create_lane(base, policy, pragmas)
        run_id = f"{policy}/replay"
        first = _run_child(_RunSpec(lane, run_id, policy))
        before = _world_counts(lane)
        second = _run_child(_RunSpec(lane, run_id, policy))
        after = _world_counts(lane)
        conn = lane.connect_state()
        try:
            recorded = conn.execute("SELECT COUNT(*) FROM steps WHERE run_id=?", (run_id,))
            steps_recorded = int(recorded.fetchone()[0])
        finally:
            conn.close()
    if first.event != "done" or second.event != "done":
        raise CrashError(f"replay run failed: {second.message.get('message', '')}")
    writes, tokens, calls = (d.get(run_id, 0) for d in before)
    writes2, tokens2, calls2 = (d.get(run_id, 0) for d in after)
    return ReplayResult(
        policy=policy,
        run_id=run_id,
        steps_recorded=steps_recorded,
        first_run_effects=writes + calls,
        first_run_tokens=tokens,
        replay_effects=(writes2 + calls2) - (writes + calls),
        replay_tokens=tokens2 - tokens,
        replay_steps_executed=second.message["result"]["executed"],
        replay_steps_replayed=second.message["result"]["replayed"],
        same_conversation=(
            first.message["result"]["conversation_sha256"]
            == second.message["result"]["conversation_sha256"]
        ),
    )


def reordered_steps_after_crash(
    workdir: Path,
    journal_mode: str = "WAL",
    synchronous: str = "FULL",
    swap: tuple[str, str] = ("tool2", "tool3"),
    kill_at: tuple[int, str] = (4, "recorded"),
) -> ReorderResult:
    """Kill a journaled run at ``kill_at`` (seq, window) with SIGKILL, then restart it with
    code that runs the two steps named in ``swap`` in each other's place.

    The default kills after tool2 (open the ticket) is recorded and restarts with code that
    pages on-call first: the journal holds 'tool2' at step 4 where the code asks for
    'tool3', so the restart stops with :class:`NonDeterminismError` before any effect.
    Returns a :class:`ReorderResult`. Raises ValueError for unknown step names, windows or
    pragma values; CrashUnsupported/CrashError as :func:`run_kill_matrix`.
    """
    a, b = swap
    if a not in STEP_NAMES or b not in STEP_NAMES or a == b:
        raise ValueError(f"swap needs two different steps of {', '.join(STEP_NAMES)}")
    seq, window = kill_at
    if not 1 <= seq <= len(STEP_NAMES) or window not in WINDOWS:
        raise ValueError(f"kill_at must be (1-{len(STEP_NAMES)}, one of {', '.join(WINDOWS)})")
    _require_fork()
    pragmas = _pragmas(journal_mode, synchronous)
    order = list(STEP_NAMES)
    i, j = order.index(a), order.index(b)
    order[i], order[j] = order[j], order[i]
    policy = "journal_idempotency"
    with scratch_dir(Path(workdir)) as base:
        lane, _ = _create_lane(base, policy, pragmas)
        run_id = f"{policy}/reordered"
        killed = _run_child(_RunSpec(lane, run_id, policy, kill_at=kill_at))
        before = _world_counts(lane)
        restart = _run_child(_RunSpec(lane, run_id, policy, order=tuple(order)))
        after = _world_counts(lane)
    if killed.event != "point":
        raise CrashError("the first run never reached its kill point")
    made = sum(d.get(run_id, 0) for d in (after[0], after[2])) - sum(
        d.get(run_id, 0) for d in (before[0], before[2])
    )
    msg = restart.message
    stopped = restart.event == "error"
    return ReorderResult(
        run_id=run_id,
        killed_at_seq=seq,
        killed_at_window=window,
        kill_signal=killed.kill_signal,
        code_order=tuple(order),
        stopped=stopped,
        error_step=msg.get("step") if stopped else None,
        recorded_name=msg.get("recorded_name") if stopped else None,
        requested_name=msg.get("requested_name") if stopped else None,
        message=msg.get("message", "") if stopped else "",
        restart_effects=made,
    )


def run_crash_experiment(
    workdir: Path,
    journal_mode: str = "WAL",
    synchronous: str = "FULL",
    *,
    progress: CrashProgress | None = None,
    fullfsync: bool | None = None,
) -> CrashExperiment:
    """The kill matrix, then replay of a completed run and a reordered restart, all under
    ``workdir`` with the given journal pragmas (``fullfsync`` as :func:`run_kill_matrix`:
    the matrix's journal only; replay and reorder lose nothing to a SIGKILL either way).
    Errors as :func:`run_kill_matrix`. ``progress``: one part per policy, then one for the
    replay and the reorder."""
    parts = _Parts(progress, len(POLICIES) + 1)
    matrix = _kill_matrix(workdir, journal_mode, synchronous, None, parts, fullfsync)
    tick = parts.begin("replay and reorder", 2)
    replay = replay_completed_run(workdir, journal_mode, synchronous)
    tick(1)
    reorder = reordered_steps_after_crash(workdir, journal_mode, synchronous)
    tick(2)
    return CrashExperiment(matrix=matrix, replay=replay, reorder=reorder)
