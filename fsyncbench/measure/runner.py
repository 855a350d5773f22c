"""Orchestrates a measurement: execute a run plan (:mod:`fsyncbench.measure.plan`),
measuring each configuration with device flush counters read around it, summarise, and
note what the measurement fell short of. The verdict and the report are assembled a layer
up (:func:`fsyncbench.api.build_report`)."""

from __future__ import annotations

import contextlib
import errno
import math
import os
import stat
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from fsyncbench import host as hostmod
from fsyncbench.errors import FsyncbenchError
from fsyncbench.fmt import fmt_precision
from fsyncbench.measure import intervals, stats
from fsyncbench.measure.plan import MIN_PHASES, RunPlan
from fsyncbench.measure.timing import (
    EmptyOp,
    Measurement,
    Progress,
    Sampler,
    Workload,
)
from fsyncbench.measure.workloads import (
    BLOCK_BYTES,
    FlushWorkload,
    JournalCommit,
    MemoryFileWrite,
    SyncPrimitive,
    fcntl_refusals,
    scratch_dir,
    settle,
    sqlite_sync_primitive,
    sync_primitives,
)
from fsyncbench.model import FlushDelta, Host, Pragmas, Result

#: Configurations are measured round-robin in slices of at most this many seconds, so each
#: one's samples spread over the whole run: the storage's slow drifts and periodic stalls
#: (this VM's disk has 15-25 ms stalls that come and go within seconds) reach every
#: configuration alike instead of whichever one happened to run at the time. One
#: configuration's slices are the blocks its intervals rest on, a rotation of the others
#: apart: short slices give more of them (a default round of 4.5 s over 14 workloads gives
#: each about three).
SLICE_S = 0.1
#: No slice is shorter than this (s), whatever the run budget says.
MIN_SLICE_S = 0.05
#: Samples (times the minimum) beyond which a workload yields the rest of a run's time to
#: those with fewer (:func:`_minimum_first`): 4,000 samples put 40 beyond a p99, so its
#: interval's width (which shrinks as 1/sqrt(n)) is half that at the minimum's 10. A
#: project choice, checked by simulating the seed Mac's default run (tests/test_macos_schedule.py).
PLENTY_FACTOR = 4
#: Time budget (s) of each floor measurement, shared by a run's rounds (alone they stop
#: earlier on their CI target): 0.25 s of a sub-microsecond loop is 1e5 samples or more.
FLOOR_BUDGET_S = 0.25
#: Slice (s) of the floor measurements.
FLOOR_SLICE_S = 0.05


#: progress(label, index, total, done, target, elapsed_ns, budget_ns); ``index`` is a float:
#: the workload's position, or with a run budget the share of it spent, in workloads
RunProgress = Callable[[str, float, int, int, int, int, int], None]


class _ClosableWorkload(Workload, Protocol):
    """A workload the runner closes when done with it (its file, its connection)."""

    def close(self) -> None: ...


#: errno values of a mount that cannot be read: a FUSE daemon gone (ENOTCONN), a network
#: filesystem's server gone (ESTALE, EHOSTDOWN...), a failing device (EIO).
_DEAD_MOUNT_ERRNOS = {
    errno.ENOTCONN,
    errno.ESTALE,
    errno.EIO,
    errno.EHOSTDOWN,
    errno.EHOSTUNREACH,
    errno.ETIMEDOUT,
}


def check_target(target: Path) -> Path:
    """Resolve DIR and check it is an existing directory. Raises FsyncbenchError (one line)
    when it is missing, not a directory, or cannot be read at all (a dead FUSE mount:
    ENOTCONN; a stale NFS handle: ESTALE; EIO)."""
    try:
        st = os.stat(target)
    except FileNotFoundError:
        raise FsyncbenchError(f"directory {target} does not exist") from None
    except OSError as exc:
        hint = (
            (
                " (a FUSE daemon that died, a network filesystem whose server is gone, or a "
                "failing disk: check the mount)"
            )
            if exc.errno in _DEAD_MOUNT_ERRNOS
            else ""
        )
        raise FsyncbenchError(f"cannot read {target}: {exc.strerror}{hint}") from exc
    if not stat.S_ISDIR(st.st_mode):
        raise FsyncbenchError(f"{target} is not a directory")
    try:
        return target.resolve()
    except OSError as exc:
        raise FsyncbenchError(f"cannot resolve {target}: {exc.strerror}") from exc


def run_round(plan: RunPlan, host: Host, progress: RunProgress | None = None) -> tuple[Result, ...]:
    """One round of ``plan`` in this process, inside a fresh scratch directory of
    ``plan.target``.

    All workloads are opened first, then sampled round-robin in slices (:data:`SLICE_S`):
    each slice gets at most its fair share of what is left of ``plan.run_budget_s``, and
    a workload leaves the rotation when it is done (CI target met over at least
    :data:`MIN_PHASES` slices, or its sample count reached) or has used ``plan.budget_s``.
    Time one workload does not need goes to the others; after :data:`MIN_PHASES` rotations
    only the workloads that can still reach the target in the time left are given slices
    (:func:`_within_reach`). The device flush counters are read around every slice and
    summed; after each slice the target filesystem is settled
    (:func:`fsyncbench.measure.workloads.settle`, untimed, outside the counter window).
    """
    disks = hostmod.counter_devices(host.target)
    # Apple's system SQLite (/usr/lib/libsqlite3.dylib) maps fullfsync to F_BARRIERFSYNC.
    apple_sqlite = host.os_name == "Darwin" and (host.sqlite_library or "").startswith("/usr/lib/")
    start = time.monotonic()
    deadline = None if plan.run_budget_s is None else start + plan.run_budget_s
    with scratch_dir(plan.target) as work, contextlib.ExitStack() as stack:
        refused = fcntl_refusals(work)
        prims = sync_primitives(refused=refused) if plan.primitives else ()
        jobs: list[_Job] = []
        for prim in prims:
            jobs.append(_primitive_job(plan, FlushWorkload(work, prim), prim, disks))
            stack.callback(jobs[-1].workload.close)
        for pragmas in plan.configs:
            commit = JournalCommit(work, pragmas, plan.payload_bytes)
            stack.callback(commit.close)
            primitive = sqlite_sync_primitive(
                host.os_name, pragmas, apple_sqlite, refused, commit.checkpoint_fullfsync
            )
            jobs.append(_commit_job(plan, commit, pragmas, primitive, disks))
        _sample_round(plan, jobs, work, start, deadline, progress)
        return tuple(job.result() for job in jobs)


def _sample_round(
    plan: RunPlan,
    jobs: list[_Job],
    work: Path,
    start: float,
    deadline: float | None,
    progress: RunProgress | None,
) -> None:
    """The slices of :func:`run_round`: round-robin until every job is done, out of
    ``plan.budget_s``, or ``deadline`` (monotonic seconds) has passed. While some jobs lack
    ``plan.min_samples`` and the time left barely covers them, only they are sampled
    (:func:`_minimum_first`)."""
    budget_s = plan.budget_s
    rotations = 0
    while True:
        active = [j for j in jobs if not j.finished(budget_s)]
        if not active:
            break
        if (
            plan.adaptive
            and plan.stop_on_target
            and deadline is not None
            and rotations >= MIN_PHASES
        ):
            active = _within_reach(active, deadline - time.monotonic(), plan.ci_target_pct)
        if deadline is not None and plan.adaptive:
            active = _minimum_first(active, deadline - time.monotonic(), plan.min_samples)
        rotations += 1
        for k, job in enumerate(active):
            now = time.monotonic()
            if deadline is not None and now >= deadline and job.sampler.phases:
                continue  # out of time: only workloads never sampled still get a slice
            slice_s = min(SLICE_S, budget_s - job.sampler.elapsed_ns / 1e9)
            if deadline is not None:
                slice_s = min(slice_s, (deadline - now) / (len(active) - k))
            began_ns = time.monotonic_ns()
            job.phase(
                max(MIN_SLICE_S, slice_s),
                _bind(progress, job.label, jobs.index(job), len(jobs), start, deadline),
            )
            settle(work)  # the next slice does not pay for this one's dirty data
            job.wall_ns += time.monotonic_ns() - began_ns
        if deadline is not None and time.monotonic() >= deadline:
            break


def _minimum_first(active: list[_Job], remaining_s: float, min_samples: int) -> list[_Job]:
    """The workloads to give the next rotation so that every one can reach ``min_samples``
    (the fewest a p99 interval rests on, split over the rounds): when the time the ones still
    short of it need plus one more slice of each of the others no longer fits in
    ``remaining_s``, only the short ones. Both are costed at what their slices have cost
    the round so far (:attr:`_Job.wall_ns`: the timed samples, the re-warm operations of
    each slice and the settling after it; a 9 ms commit re-warms 2 operations in an 11-sample
    slice, so its timed mean alone undercounts it by about a fifth); a workload never
    sampled needs an unknown time. Where the equal share of the time gives every workload
    its minimum anyway (a Linux default run) this changes nothing; where a few are slow
    (F_FULLFSYNC commits on a Mac, 3 ms and more) their minimum is paid for by the fast
    ones' surplus."""
    short = [j for j in active if len(j.sampler.samples) < min_samples]
    if not short:
        lean = [j for j in active if len(j.sampler.samples) < PLENTY_FACTOR * min_samples]
        return lean or active
    if len(short) == len(active):
        return active
    need = sum(
        (min_samples - len(j.sampler.samples)) * j.seconds_per_sample
        if j.sampler.samples
        else math.inf
        for j in short
    )
    others = sum(j.seconds_per_slice for j in active if j not in short)
    return short if need + others >= remaining_s else active


def _within_reach(active: list[_Job], remaining_s: float, target_pct: float) -> list[_Job]:
    """The workloads to give the next round: once every workload has had its first
    :data:`MIN_PHASES` slices, those whose estimated time to the CI target fits, together,
    in the time left (cheapest first), so a hopeless one (say a p99 straddling a 1 % tail
    of checkpoint stalls) does not starve several that are nearly there. When none fits,
    all of them."""
    chosen, need_total = [], 0.0
    for need, job in sorted(
        ((j.seconds_to_target(target_pct), j) for j in active), key=lambda t: t[0]
    ):
        if need_total + need <= remaining_s:
            chosen.append(job)
            need_total += need
    return [j for j in active if j in chosen] or active


class _Job:
    """One workload being sampled: its sampler, the flush counters summed over its phases,
    and how to turn it into a Result."""

    def __init__(
        self,
        label: str,
        workload: _ClosableWorkload,
        sampler: Sampler,
        disks: Sequence[str],
        fields: dict[str, Any],
    ) -> None:
        self.label = label
        self.workload = workload
        self.sampler = sampler
        self.disks = disks
        self.fields = fields
        self.deltas: dict[str, FlushDelta] = {}
        self.syncs = 0
        #: monotonic ns the round has spent on this job's slices: sampling, re-warming and
        #: the settling after each (set by :func:`_sample_round`)
        self.wall_ns = 0

    @property
    def seconds_per_sample(self) -> float:
        """What one more sample costs the round (s), slice overheads included: the wall
        time of its slices per sample, or the timed mean before any slice was costed."""
        s = self.sampler
        if not s.samples:
            return 0.0
        return max(self.wall_ns, s.elapsed_ns) / len(s.samples) / 1e9

    @property
    def seconds_per_slice(self) -> float:
        """What one more slice costs the round (s): the mean so far, or :data:`SLICE_S`
        before the first."""
        return (
            self.wall_ns / self.sampler.phases / 1e9
            if self.sampler.phases and self.wall_ns
            else SLICE_S
        )

    def phase(self, budget_s: float, cb: Progress | None) -> None:
        before = hostmod.read_flush_counters(self.disks)
        syncs_before = getattr(self.workload, "syncs", 0)
        self.sampler.run(budget_s, cb)
        after = hostmod.read_flush_counters(self.disks)
        # warmup and re-warm syncs fall inside the counter window too, so count them all
        self.syncs += getattr(self.workload, "syncs", 0) - syncs_before
        for d in hostmod.flush_deltas(before, after):
            old = self.deltas.get(d.device)
            self.deltas[d.device] = (
                d
                if old is None
                else FlushDelta(
                    d.device,
                    _add(old.flushes, d.flushes),
                    _add(old.flush_time_ms, d.flush_time_ms),
                    _add(old.writes, d.writes),
                )
            )

    def seconds_to_target(self, target_pct: float) -> float:
        """Estimated extra sampling time to the CI target (CI width ~ 1/sqrt(n), plus 15 %
        for the confirming check and the check interval); inf before any estimate."""
        s = self.sampler
        h = s.halfwidth_pct
        if h is None or not math.isfinite(h) or not s.samples:
            return math.inf
        needed = max(len(s.samples) * (h / target_pct) ** 2 * 1.15, s.min_samples)
        return max(0.0, needed - len(s.samples)) * s.mean_ns / 1e9

    def finished(self, budget_s: float) -> bool:
        """Done sampling, or out of its time budget."""
        return self.sampler.done or self.sampler.elapsed_ns >= budget_s * 1e9

    def result(self) -> Result:
        m = self.sampler.measurement(release=True)
        fields = dict(self.fields)
        if fields.get("syncs_issued") is not None:
            fields["syncs_issued"] = self.syncs
        if fields.get("kind") == "commit":
            assert isinstance(self.workload, JournalCommit)  # as _commit_job builds it
            fields["effective"] = self.workload.effective
        return result_from(m, tuple(self.deltas.values()), **fields)


def _add(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b


def _primitive_job(
    plan: RunPlan, workload: FlushWorkload, prim: SyncPrimitive, disks: Sequence[str]
) -> _Job:
    return _Job(
        prim.result_name,
        workload,
        plan.sampler(workload),
        disks,
        dict(
            kind="flush" if prim.syncs else "write",
            name=prim.result_name,
            primitive=prim.name,
            payload_bytes=BLOCK_BYTES,
            syncs_issued=0,
        ),
    )


def _commit_job(
    plan: RunPlan,
    workload: JournalCommit,
    pragmas: Pragmas,
    primitive: str,
    disks: Sequence[str],
) -> _Job:
    return _Job(
        pragmas.label,
        workload,
        plan.sampler(workload),
        disks,
        dict(
            kind="commit",
            name=pragmas.label,
            primitive=primitive,
            payload_bytes=plan.payload_bytes,
            requested=pragmas,
        ),
    )


def measure_floors(plan: RunPlan, budget_s: float = FLOOR_BUDGET_S) -> tuple[Result, ...]:
    """The tool's floor (kind "floor"; names in :data:`fsyncbench.measure.stats.FLOOR_APPLIES_TO`):
    the empty timing loop, the same commit on an in-memory database, and the 4 KiB write on
    an in-memory file (Linux), each with the plan's stop rule within ``budget_s`` seconds,
    in slices of :data:`FLOOR_SLICE_S` (the blocks of their intervals). Nothing is written
    under the target."""
    floors = []
    makers: list[tuple[str, Callable[[], _ClosableWorkload], int]] = [
        (stats.FLOOR_LOOP, EmptyOp, 0),
        (
            stats.FLOOR_COMMIT,
            lambda: JournalCommit(None, Pragmas("MEMORY", "OFF"), plan.payload_bytes),
            plan.payload_bytes,
        ),
    ]
    if MemoryFileWrite.available():
        makers.append((stats.FLOOR_WRITE, MemoryFileWrite, BLOCK_BYTES))
    for name, make, payload in makers:
        workload = make()
        try:
            sampler = plan.sampler(workload)
            while not sampler.done and sampler.elapsed_ns < budget_s * 1e9:
                sampler.run(FLOOR_SLICE_S)
        finally:
            workload.close()
        floors.append(
            result_from(
                sampler.measurement(),
                (),
                kind="floor",
                name=name,
                primitive="none",
                payload_bytes=payload,
            )
        )
    return tuple(floors)


def result_names(plan: RunPlan) -> tuple[str, ...]:
    """The names the results of ``plan`` will have, in measuring order (to check a
    ``--config`` before measuring)."""
    prims = sync_primitives() if plan.primitives else ()
    return (*(p.result_name for p in prims), *(p.label for p in plan.configs))


def _bind(
    progress: RunProgress | None,
    label: str,
    index: int,
    total: int,
    start: float,
    deadline: float | None,
) -> Progress | None:
    """The sampler's progress callback for one slice, as a RunProgress call.

    With a run budget the bar follows the clock: ``index`` is the share of the run budget
    spent, in workloads (a float), and ``budget_ns`` is 0 (nothing to add within a unit)."""
    if progress is None:
        return None
    if deadline is None:
        return lambda done, target, elapsed, budget: progress(
            label, index, total, done, target, elapsed, budget
        )

    def report(done: int, target: int, _elapsed: int, _budget: int) -> None:
        spent = (time.monotonic() - start) / (deadline - start)
        progress(label, min(total - 0.01, spent * total), total, done, target, 0, 0)

    return report


def result_from(m: Measurement, deltas: tuple[FlushDelta, ...], **fields: Any) -> Result:
    """A Result from a :class:`fsyncbench.measure.timing.Measurement`, the summed flush counter
    changes and the remaining fields; the summary and the CI-target check are derived from
    the samples and slices here."""
    summary = stats.summarize(m.samples_ns, m.slice_counts, m.slice_rounds)
    half = intervals.target_halfwidth_pct(summary.p99_interval)
    return Result(
        samples_ns=m.samples_ns,
        summary=summary,
        warmup=m.warmup,
        target_samples=m.target_samples,
        budget_s=m.budget_s,
        target_reached=m.target_reached,
        elapsed_ns=m.elapsed_ns,
        device_flushes=deltas,
        ci_target_pct=m.ci_target_pct,
        # the same interval the adaptive stop checked; below the minimum sample count the
        # target counts as not met
        ci_target_met=None
        if m.ci_target_pct is None
        else (m.target_reached and half is not None and half <= m.ci_target_pct),
        stop_reason=m.stop_reason,
        phases=m.phases,
        slice_counts=m.slice_counts,
        slice_rounds=m.slice_rounds,
        **fields,
    )


def _own_p99_bounds(r: Result) -> tuple[float, float] | None:
    """The bounds of ``r``'s p99 interval from its own samples (the CI target's), without
    the spread between runs."""
    iv = r.summary.p99_interval
    return r.summary.p99_ci_ns if iv is None else intervals.own_bounds(iv, r.summary.ci_level)


def _why(r: Result) -> str:
    iv = r.summary.p99_interval
    return iv.reason if iv is not None and iv.reason else "no interval"


def measurement_notes(host: Host, results: Sequence[Result]) -> tuple[str, ...]:
    """The report's notes on the measurement itself: sample targets not reached, p99 CI
    targets not met, pragmas SQLite did not apply, fullfsync outside macOS."""
    notes = []
    short = [r.name for r in results if not r.target_reached]
    if short:
        notes.append(
            "the sample target was not reached within the time budget for: " + ", ".join(short)
        )
    wide = [r for r in results if r.ci_target_met is False]
    if wide:
        notes.append(
            f"the p99 CI target (+-{wide[0].ci_target_pct:g} %) was NOT met within the time "
            + (
                "budget by this run's own interval (before earlier runs widened it) for: "
                if any(r.earlier for r in wide)
                else "budget for: "
            )
            + ", ".join(
                f"{r.name} ({fmt_precision(r.summary.p99_ns, own)}, n={r.summary.count})"
                if (own := _own_p99_bounds(r)) is not None
                else f"{r.name} ({_why(r)})"
                for r in wide
            )
            + "; give them more time (--budget-seconds, --run-budget-seconds) or accept a "
            "wider --ci-target-pct"
        )
    changed = [
        f"{r.requested.label} ran as {r.effective.label}"
        for r in results
        if r.requested and r.effective and r.requested != r.effective
    ]
    if changed:
        notes.append("SQLite did not apply every pragma: " + "; ".join(changed))
    if host.os_name != "Darwin" and any(
        r.requested and r.requested.fullfsync is not None for r in results
    ):
        notes.append(
            "fullfsync has no effect outside macOS (https://www.sqlite.org/pragma.html"
            "#pragma_fullfsync): the fullfsync rows differ only by noise"
        )
    return tuple(notes)
