"""The audit's timed flush checks (evidence 1, 3, 4 and 5 of :mod:`fsyncbench.measure.evidence`):
a sync through libc against the same sync as a raw system call (:func:`compare_libc_syscall`),
a sync on a second descriptor of the written file (:func:`second_fd_check`), both in
interleaved blocks with the device flush counters read around every block, and the
dirty-size sweep with its least-squares fit (:func:`sweep`). The I/O itself is
:mod:`fsyncbench.measure.audit_workloads` and :mod:`fsyncbench.measure.workloads`, timed by
:mod:`fsyncbench.measure.timing`; each check returns a model object of
:mod:`fsyncbench.model` for the report's ``evidence``.
"""

from __future__ import annotations

import collections
import os
import platform
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from fsyncbench import host as hostmod
from fsyncbench.errors import FsyncbenchError
from fsyncbench.measure import stats
from fsyncbench.measure.audit_workloads import (
    SWEEP_SIZES,
    SecondFdFlush,
    dirty_sweep,
    raw_syscall_primitive,
    syscall_number,
)
from fsyncbench.measure.plan import EvidencePlan
from fsyncbench.measure.timing import Workload, measure
from fsyncbench.measure.workloads import (
    FlushWorkload,
    SyncPrimitive,
    refused_name,
    sync_primitives,
)
from fsyncbench.model import (
    DirtySweep,
    FlushDelta,
    Host,
    SecondFdCheck,
    SweepPoint,
    SyscallComparison,
)

#: Reads the flush counters of some disks: :func:`fsyncbench.host.read_flush_counters`.
Counters = Callable[[Sequence[str]], Mapping[str, tuple[int | None, ...]]]


# --------------------------------------------------------------------------- 1. counters


def _least(deltas: Sequence[FlushDelta]) -> int | None:
    counts = [d.flushes for d in deltas]
    known = [c for c in counts if c is not None]
    if not counts or len(known) < len(counts):
        return None
    return min(known)


def counter_reason(host: Host) -> str | None:
    """Why device flush counters cannot be read for ``host``'s target; None if they can."""
    if host.os_name != "Linux":
        return f"{host.os_name} exposes no per-disk flush counters"
    if host.target.mount is None:
        return "the mount holding the target is unknown"
    if not host.target.disks:
        return f"no block device holds the bytes under the target ({host.target.mount.fs_type})"
    missing = [d.name for d in host.target.disks if not d.has_flush_counters]
    if missing:
        return (
            f"/sys/block/{','.join(missing)}/stat has no flush fields 16-17 "
            "(Linux < 5.5 or an unusual driver)"
        )
    return None


def _blocks(
    workloads: Sequence[Workload],
    syncs: int,
    blocks: int,
    disks: Sequence[str],
    counters: Counters,
    budget_s: float,
) -> list[tuple[list[int], int | None]]:
    """Run each workload in turn, ``blocks`` times, ``syncs // blocks`` timed operations per
    block, reading the counters around every block. Per workload: (samples, flushes)."""
    per = max(1, syncs // blocks)
    out: list[tuple[list[int], int | None]] = [([], 0) for _ in workloads]
    for b in range(blocks):
        for i, w in enumerate(workloads):
            before = counters(disks)
            m = measure(w, per, budget_s / (blocks * len(workloads)), 5 if b == 0 else 0)
            after = counters(disks)
            samples, flushes = out[i]
            samples.extend(m.samples_ns)
            least = _least(hostmod.flush_deltas(before, after)) if disks else None
            out[i] = (samples, None if flushes is None or least is None else flushes + least)
    return out


def _p50(samples: Sequence[int]) -> float:
    ordered = sorted(samples)
    n = len(ordered)
    return float(ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2)


# --------------------------------------------------------------------------- 3. libc vs syscall


def compare_libc_syscall(
    directory: Path,
    primitive: str,
    plan: EvidencePlan,
    disks: Sequence[str],
    counters: Counters = hostmod.read_flush_counters,
    machine: str | None = None,
) -> SyscallComparison | None:
    """``os.<primitive>`` against ``syscall(SYS_<primitive>)`` after identical 4 KiB writes,
    interleaved in ``plan.compare_blocks`` blocks per side with the flush counters read
    around each block. None when the raw call is unavailable (not Linux, unknown arch)."""
    machine = machine or platform.machine()
    raw = raw_syscall_primitive(primitive, machine)
    libc_call = getattr(os, primitive, None)
    if raw is None or libc_call is None:
        return None
    (libc_s, libc_f), (raw_s, raw_f) = _paired(
        lambda: FlushWorkload(directory, SyncPrimitive(primitive, libc_call)),
        lambda: FlushWorkload(directory, raw),
        plan,
        disks,
        counters,
    )
    return SyscallComparison(
        primitive=primitive,
        syscall_number=syscall_number(primitive, machine),
        machine=machine,
        syncs=min(len(libc_s), len(raw_s)),
        libc_p50_ns=_p50(libc_s),
        syscall_p50_ns=_p50(raw_s),
        libc_flushes=libc_f,
        syscall_flushes=raw_f,
        libc_samples_ns=tuple(libc_s),
        syscall_samples_ns=tuple(raw_s),
    )


def _paired(
    make_a: Callable[[], FlushWorkload],
    make_b: Callable[[], FlushWorkload],
    plan: EvidencePlan,
    disks: Sequence[str],
    counters: Counters,
) -> list[tuple[list[int], int | None]]:
    """Open two workloads, time them in interleaved blocks with counters (:func:`_blocks`)
    and close both; returns ((samples_a, flushes_a), (samples_b, flushes_b))."""
    a = make_a()
    try:
        b = make_b()
        try:
            return _blocks(
                (a, b), plan.compare_syncs, plan.compare_blocks, disks, counters, plan.budget_s
            )
        finally:
            b.close()
    finally:
        a.close()


# --------------------------------------------------------------------------- 5. second fd


def second_fd_check(
    directory: Path,
    plan: EvidencePlan,
    disks: Sequence[str],
    counters: Counters = hostmod.read_flush_counters,
    primitive: str = "fsync",
) -> SecondFdCheck:
    """Write through one descriptor and ``primitive`` on a second one, against write and
    sync on the same descriptor, interleaved blocks with counters (pg_test_fsync's check)."""
    prim = SyncPrimitive(primitive, getattr(os, primitive))
    (same_s, same_f), (second_s, second_f) = _paired(
        lambda: FlushWorkload(directory, prim),
        lambda: SecondFdFlush(directory, prim),
        plan,
        disks,
        counters,
    )
    return SecondFdCheck(
        primitive=primitive,
        syncs=min(len(same_s), len(second_s)),
        same_fd_p50_ns=_p50(same_s),
        second_fd_p50_ns=_p50(second_s),
        same_fd_flushes=same_f,
        second_fd_flushes=second_f,
    )


# --------------------------------------------------------------------------- 4. sweep


def fit_sweep(primitive: str, points: Sequence[tuple[int, int]]) -> DirtySweep:
    """Least-squares fit of the per-size median latencies: latency = flush cost + bytes /
    bandwidth (``stats.linear_fit``), weighted by 1/latency so the relative error counts: the
    64 MiB point sets the bandwidth, the small sizes the flush cost. Medians keep one slow
    outlier from tilting the line; all raw points are kept. Slope <= 0 gives bandwidth None
    (no growth with size)."""
    by_size: dict[int, list[int]] = collections.defaultdict(list)
    for size, ns in points:
        by_size[size].append(ns)
    xs = sorted(by_size)
    ys = [_p50(by_size[x]) for x in xs]
    intercept, slope, r2 = stats.linear_fit(xs, ys, [1.0 / max(y, 1.0) for y in ys])
    return DirtySweep(
        primitive=primitive,
        flush_cost_ns=round(intercept, 1),
        bandwidth_bytes_per_s=(1e9 / slope) if slope > 0 else None,
        r_squared=None if r2 is None else round(r2, 4),
        points=tuple(SweepPoint(size, ns) for size, ns in points),
    )


def sweep_sizes(directory: Path, max_bytes: int) -> tuple[int, ...]:
    """Sweep sizes up to ``max_bytes``, trimmed so the file takes at most a quarter of the
    free space (:func:`shutil.disk_usage`: statvfs(3) f_bavail x f_frsize, or
    GetDiskFreeSpaceExW); () when not even 1 MiB fits."""
    try:
        free = shutil.disk_usage(directory).free
    except OSError:
        free = max_bytes * 4
    sizes = tuple(s for s in SWEEP_SIZES if s <= max_bytes and s * 4 <= free)
    return sizes if sizes and sizes[-1] >= (1 << 20) else ()


def sweep_primitive(refused: dict[str, str] | None = None) -> SyncPrimitive:
    """The primitive a durable journal relies on here, as applications call it (through
    libc, so an interposed no-op shows as unbounded bandwidth): F_FULLFSYNC on macOS (plain
    fsync stops at the drive's cache there; where the volume refuses it, ``refused`` from
    :func:`fcntl_refusals`, SQLite's fsync fallback), fdatasync on Linux, else
    fsync/FlushFileBuffers."""
    refused = refused or {}
    prims = {p.name: p for p in sync_primitives(refused=refused) if p.call is not None}
    for name in ("F_FULLFSYNC", "fdatasync", "fsync", "FlushFileBuffers"):
        name = refused_name(name, refused[name]) if name in refused else name
        if name in prims:
            return prims[name]
    raise FsyncbenchError("no sync primitive on this platform")


def sweep(directory: Path, primitive: SyncPrimitive, plan: EvidencePlan) -> DirtySweep | None:
    """The dirty-size sweep with ``primitive``. None when the disk is too full."""
    sizes = sweep_sizes(directory, plan.sweep_max_bytes)
    if not sizes or primitive.call is None:
        return None
    return fit_sweep(
        primitive.name, dirty_sweep(directory, primitive.call, sizes, plan.sweep_repeats)
    )
