"""Record each configuration, rebuild its crash states under each model, open every state
with SQLite and count what was lost: the figures of ``fsyncbench powerloss``.

Checking a state: its files are written into a scratch directory, SQLite opens it as an
application would (hot-journal rollback, WAL recovery), ``PRAGMA integrity_check`` runs and
every row is compared with what its commit wrote (:func:`fsyncbench.powerloss.sqlite.open_state`).
A state is *corrupt* when SQLite cannot open it, integrity_check fails, the table is gone,
or a row differs from what was committed; corrupt states are counted apart and left out of
the loss figures. A commit is *lost* when it was acknowledged before the cut and its row is
not in the database afterwards. Identical states are checked once (keyed by their bytes).

Recording never runs while latency is timed: ``run --powerloss`` calls this after its own
measurement finished.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fsyncbench.errors import FsyncbenchError
from fsyncbench.jsonable import to_jsonable
from fsyncbench.model import PowerlossConfig, PowerlossModelOutcome, PowerlossResult
from fsyncbench.powerloss import promises, sqlite
from fsyncbench.powerloss.models import (
    SECTOR_MODELS,
    SEMANTICS_OS,
    CrashState,
    crash_points,
    crash_states,
    invalid_reason,
)
from fsyncbench.powerloss.plan import PowerlossPlan
from fsyncbench.powerloss.rebase import restore
from fsyncbench.powerloss.trace import Trace


def _key(files: tuple[tuple[str, bytes], ...]) -> bytes:
    h = hashlib.sha256()
    for name, data in files:
        h.update(name.encode() + b"\0" + len(data).to_bytes(8, "little"))
        h.update(data)
    return h.digest()


class _Checker:
    """Opens states in one scratch directory; remembers each distinct state's result."""

    def __init__(self, workdir: Path, trace: Trace) -> None:
        self.workdir = workdir
        self.trace = trace
        self.expected = dict(trace.rows)
        self.cache: dict[bytes, tuple[frozenset[int], str]] = {}
        self.keys: dict[int, tuple[tuple[tuple[str, bytes], ...], bytes]] = {}

    def check(self, state: CrashState) -> tuple[frozenset[int], str]:
        # prefix yields the same files tuple at many crash points: hash each object once
        # (the tuple is kept with its key, so its id cannot be reused meanwhile)
        known = self.keys.get(id(state.files))
        if known is None or known[0] is not state.files:
            known = (state.files, _key(state.files))
            if len(self.keys) >= 4096:  # bounded: only recent snapshots come back
                self.keys.clear()
            self.keys[id(state.files)] = known
        key = known[1]
        if key not in self.cache:
            self.cache[key] = self._open(state)
        return self.cache[key]

    def _open(self, state: CrashState) -> tuple[frozenset[int], str]:
        restore(self.workdir, state.files)
        if not (self.workdir / self.trace.db_name).exists():
            return frozenset(), "the database file is gone (its directory entry was never synced)"
        rows, problem = sqlite.open_state(self.workdir, self.trace.db_name, self.trace.psow)
        if problem:
            return frozenset(), problem
        problem = first_difference(rows, self.expected)
        if problem:
            return frozenset(), problem
        return frozenset(rows), ""


def first_difference(
    rows: dict[int, tuple[Any, ...]], expected: dict[int, tuple[str, int, str, str, str]]
) -> str:
    """Why ``rows`` (seq -> row read back) hold something no commit wrote: "row N differs
    from what its commit wrote" for the first such row, "" when every row is a committed
    one (a missing row is a loss, not corruption)."""
    for seq, row in rows.items():
        if expected.get(seq) != row:
            return f"row {seq} differs from what its commit wrote"
    return ""


def prove_checker(checker: _Checker, seed: int) -> tuple[int, int, str]:
    """Open every known-corrupt state of the checker's trace
    (:func:`fsyncbench.powerloss.proofs.known_corrupt_states`) with ``checker``: (states,
    flagged corrupt, comma list of the names not flagged)."""
    from fsyncbench.powerloss.proofs import known_corrupt_states

    known = known_corrupt_states(checker.trace, seed)
    missed = [k.name for k in known if not checker.check(CrashState(-1, k.files, (), k.how))[1]]
    return len(known), len(known) - len(missed), ", ".join(missed)


def evaluate(
    trace: Trace,
    model: str,
    workdir: Path,
    *,
    semantics: str,
    sector_bytes: int,
    max_states: int,
    samples: int,
    seed: int,
    keep: Callable[[CrashState, str], str] | None = None,
    proofs: dict[int, tuple[int, int, str]] | None = None,
) -> PowerlossModelOutcome:
    """Check every crash state of ``trace`` under ``model``; ``workdir`` is an empty scratch
    directory. ``keep`` receives the worst state (most commits lost; a corrupt one first)
    and its description, if any state lost something. Then the same checker opens the
    trace's known-corrupt states (:func:`prove_checker`); the outcome says how many it
    flagged. ``proofs`` (keyed by ``id(trace)``) keeps that result for the next model of
    the same trace: the states and the checker are the same, and each open of a WAL
    state fsyncs (its checkpoint at close), which a loaded disk makes slow."""
    points = len(crash_points(trace))
    why = invalid_reason(model, trace.psow)
    if why:
        return PowerlossModelOutcome(
            model, points, 0, 0, False, 0, 0, 0.0, 0, why, "", psow=trace.psow
        )
    checker = _Checker(workdir, trace)
    states = losing = corrupt = worst_lost = lost_sum = sound = 0
    sampled = False
    worst: tuple[int, CrashState, str] | None = None
    for state in crash_states(
        trace,
        model,
        semantics=semantics,
        sector_bytes=sector_bytes,
        max_states=max_states,
        samples=samples,
        seed=seed,
    ):
        states += 1
        sampled = sampled or state.sampled
        present, problem = checker.check(state)
        if problem:
            corrupt += 1
            score, what = len(state.acked) + 1, f"corrupt: {problem}"
        else:
            lost = [s for s in state.acked if s not in present]
            sound += 1
            lost_sum += len(lost)
            losing += bool(lost)
            worst_lost = max(worst_lost, len(lost))
            score = len(lost)
            what = (
                f"lost {len(lost)} of the {len(state.acked)} commits acknowledged before "
                f"the cut ({_ranges(lost)})"
            )
        if score and (worst is None or score > worst[0]):
            worst = (score, state, what)
    described = f"{worst[2]} ({worst[1].how})" if worst else ""
    kept_at = keep(worst[1], described) if worst and keep is not None else ""
    distinct = len(checker.cache)  # the model's states only, before the proof's
    if proofs is None:
        proofs = {}
    if id(trace) not in proofs:
        proofs[id(trace)] = prove_checker(checker, seed)
    known, flagged, missed = proofs[id(trace)]
    return PowerlossModelOutcome(
        model,
        points,
        states,
        distinct,
        sampled,
        losing,
        worst_lost,
        lost_sum / sound if sound else 0.0,
        corrupt,
        "",
        described,
        psow=trace.psow,
        kept_at=kept_at,
        known_corrupt=known,
        known_corrupt_flagged=flagged,
        known_corrupt_missed=missed,
    )


def _ranges(seqs: list[int]) -> str:
    """``[3, 4, 5, 9]`` -> ``3-5, 9``."""
    out: list[str] = []
    for s in sorted(seqs):
        if out and out[-1].split("-")[-1] == str(s - 1):
            out[-1] = f"{out[-1].split('-')[0]}-{s}"
        else:
            out.append(str(s))
    return ", ".join(out)


def _keeper(
    keep_dir: Path | None, trace: Trace, model: str, plan: PowerlossPlan
) -> Callable[[CrashState, str], str] | None:
    if keep_dir is None:
        return None
    label = trace.pragmas.label

    def keep(state: CrashState, described: str) -> str:
        """Write ``state`` into a new subdirectory of ``keep_dir`` (never over anything
        there: a taken name gets a number) with a state.json; returns its path."""
        from fsyncbench.report.store import fsync_dir, write_durably

        keep_dir.mkdir(exist_ok=True)
        base = f"{label.replace('/', '-')}-{model}"
        for n in range(1, 1000):
            where = keep_dir / (base if n == 1 else f"{base}-{n}")
            try:
                where.mkdir()
                break
            except FileExistsError:
                continue
        else:
            raise FsyncbenchError(f"--keep-failures {keep_dir}: no free name for {base}")
        for name, data in state.files:
            with open(where / name, "wb") as f:
                f.write(data)
                os.fsync(f.fileno())
        info: dict[str, Any] = {
            "configuration": label,
            "pragmas": to_jsonable(trace.pragmas),
            "model": model,
            "semantics": plan.semantics,
            "psow": trace.psow,
            "sector_bytes": plan.sector_bytes if model in SECTOR_MODELS else None,
            "seed": plan.seed,
            "sqlite_version": trace.sqlite_version,
            "how": state.how,
            "acknowledged_commits": list(state.acked),
            "finding": described,
            "expected_rows": {str(seq): list(row) for seq, row in trace.rows},
            "note": "Opening the database changes these files (SQLite rolls a hot journal "
            "back and recovers a WAL): open a copy to keep the evidence. Open with the "
            "URI parameter psow as recorded (https://www.sqlite.org/uri.html).",
        }
        write_durably(where / "state.json", json.dumps(info, indent=2) + "\n")
        fsync_dir(where)
        fsync_dir(keep_dir)
        return str(where)

    return keep


def run_matrix(
    directory: Path,
    plan: PowerlossPlan,
    *,
    progress: Callable[[int, int, str], None] | None = None,
    sync_filter: sqlite.SyncFilter | None = None,
) -> PowerlossResult:
    """Record each configuration of ``plan`` in a scratch subdirectory of ``directory``
    (removed afterwards) and evaluate every model. What is expected of each configuration
    (:func:`fsyncbench.powerloss.promises.expected`) joins the documentation of the platform
    whose semantics are simulated (:data:`~fsyncbench.powerloss.models.SEMANTICS_OS`) and what
    the recording observed under them. ``progress(done, total, label)`` is called before
    each configuration x model. ``sync_filter`` plants a fault in the recording (tests).
    Raises FsyncbenchError when recording fails."""
    import sqlite3

    from fsyncbench.measure.scratch import scratch_dir

    started = time.perf_counter_ns()
    outcomes: list[PowerlossConfig] = []
    with scratch_dir(directory) as scratch:
        for index, pragmas in enumerate(plan.configs):
            traces: dict[bool, Trace] = {}
            proofs: dict[int, tuple[int, int, str]] = {}  # per trace, while it is alive
            results = []
            for model in plan.models:
                want = plan.psow if plan.psow is not None else model not in SECTOR_MODELS
                if want not in traces:
                    rec = scratch / f"record-{index}-{int(want)}"
                    rec.mkdir()
                    traces[want] = sqlite.record_commits(
                        rec.resolve(),
                        pragmas,
                        plan.commits,
                        plan.payload_bytes,
                        want,
                        sync_filter,
                        plan.wal_autocheckpoint,
                    )
                if progress is not None:
                    progress(
                        index * len(plan.models) + plan.models.index(model),
                        len(plan.configs) * len(plan.models),
                        f"{pragmas.label} {model}",
                    )
                work = scratch / "state"
                work.mkdir(exist_ok=True)
                results.append(
                    evaluate(
                        traces[want],
                        model,
                        work,
                        semantics=plan.semantics,
                        sector_bytes=plan.sector_bytes,
                        max_states=plan.max_states,
                        samples=plan.samples,
                        seed=plan.seed,
                        keep=_keeper(plan.keep_failures, traces[want], model, plan),
                        proofs=proofs,
                    )
                )
            main = traces.get(True if plan.psow is None else plan.psow) or next(
                iter(traces.values())
            )
            platform = SEMANTICS_OS[plan.semantics]
            docs = promises.documented(pragmas, platform)
            seen = promises.observed(main, plan.semantics)
            durable, consistent, why = promises.expected(docs, seen)
            outcomes.append(
                PowerlossConfig(
                    pragmas,
                    plan.commits,
                    main.count("write"),
                    main.count("sync"),
                    main.count("dirsync"),
                    main.psow,
                    durable,
                    consistent,
                    why,
                    tuple(results),
                    main.checkpoints(),
                    main.wal_restarts(),
                    docs,
                    seen,
                )
            )
    if not outcomes:
        raise FsyncbenchError("no configuration to test")
    if progress is not None:
        total = len(plan.configs) * len(plan.models)
        progress(total, total, "done")
    v = sqlite.versions()
    return PowerlossResult(
        tuple(outcomes),
        plan.models,
        plan.semantics,
        plan.commits,
        plan.payload_bytes,
        plan.sector_bytes,
        plan.seed,
        plan.max_states,
        plan.samples,
        v["sqlite"],
        sqlite3.sqlite_version,
        v["apsw"],
        time.perf_counter_ns() - started,
        plan.wal_autocheckpoint,
    )
