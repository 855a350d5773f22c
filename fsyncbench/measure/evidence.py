"""The audit's evidence: what ``fsyncbench audit`` measures beyond flush and commit latency.

Orchestration only (:func:`collect`): the collectors are :mod:`fsyncbench.measure.flush_checks`
(what is timed: 3, 4, 5, with the counters of 1) and :mod:`fsyncbench.measure.observations`
(what is observed: 2, 6); every write under the target happens in
:mod:`fsyncbench.measure.workloads` and :mod:`fsyncbench.measure.audit_workloads` (inside a
:func:`~fsyncbench.measure.scratch.scratch_dir`), timing in :mod:`fsyncbench.measure.timing`,
the fit in :mod:`fsyncbench.measure.stats`; how much to gather is
:class:`~fsyncbench.measure.plan.EvidencePlan`. Each collector returns a model object from
:mod:`fsyncbench.model` (all recorded in the report's ``evidence``); the verdict engine
(:mod:`fsyncbench.judge.engine`) reads them back without measuring.

Evidence and sources:

1. Device flush counters per sync: ``/sys/block/<disk>/stat`` fields 16-17 read around every
   block of syncs (https://www.kernel.org/doc/html/latest/block/stat.html; partitions walk to
   the disk, dm/md to the leaves: :mod:`fsyncbench.host._sysblock`).
2. Syncs per commit per pragma combination: strace(1) ``-f -e trace=fsync,fdatasync,...`` on
   a child process committing through the same :class:`~fsyncbench.measure.workloads.JournalCommit`,
   cut per configuration by ``statfs`` marker calls
   (:func:`~fsyncbench.measure.observations.trace_syncs`).
3. libc vs raw system call: ``os.fdatasync``/``os.fsync`` against ``syscall(SYS_fdatasync)``
   through ctypes (x86_64 75/74, aarch64 83/82), in interleaved blocks with counters
   (:func:`~fsyncbench.measure.flush_checks.compare_libc_syscall`); plus ``LD_PRELOAD``, ``/etc/ld.so.preload`` and the
   libraries mapped into this process (``/proc/self/maps``, proc(5)).
4. Dirty-size sweep 4 KiB ... 64 MiB, least-squares fit latency = flush cost + bytes /
   bandwidth (:func:`~fsyncbench.measure.flush_checks.sweep`).
5. A sync on a second descriptor of the written file (pg_test_fsync's check,
   :func:`~fsyncbench.measure.flush_checks.second_fd_check`).
6. Environment facts (:func:`~fsyncbench.measure.observations.environment_facts`): ZFS ``sync`` property (zfsprops(7)), the
   preload files; the host record (:mod:`fsyncbench.host`) has filesystem, mount options,
   device facts and virtualization.
7. macOS: plain fsync, F_BARRIERFSYNC and F_FULLFSYNC are timed side by side as flush results
   by :func:`fsyncbench.measure.rounds.run_plan`; diskutil/sysctl/dyld facts are in the host record.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Callable
from pathlib import Path

from fsyncbench import host as hostmod
from fsyncbench.errors import FsyncbenchError
from fsyncbench.measure.flush_checks import (
    Counters,
    compare_libc_syscall,
    counter_reason,
    second_fd_check,
    sweep,
    sweep_primitive,
)
from fsyncbench.measure.observations import TRACE_CONFIGS, environment_facts, trace_syncs
from fsyncbench.measure.plan import EvidencePlan as EvidencePlan  # re-exported (options)
from fsyncbench.measure.workloads import fcntl_refusals, scratch_dir
from fsyncbench.model import Evidence, Host, Pragmas, SyncTrace

#: Pragma combinations the audit times (FULL vs OFF per journal mode, WAL/NORMAL).
TIMED_CONFIGS = (
    Pragmas("DELETE", "OFF"),
    Pragmas("DELETE", "FULL"),
    Pragmas("WAL", "OFF"),
    Pragmas("WAL", "NORMAL"),
    Pragmas("WAL", "FULL"),
)

# --------------------------------------------------------------------------- all of it


#: progress(label, index, total)
Progress = Callable[[str, int, int], None]


def collect(
    target: Path,
    host: Host,
    plan: EvidencePlan,
    counters: Counters = hostmod.read_flush_counters,
    progress: Progress | None = None,
) -> Evidence:
    """Gather evidence 2-6 for ``target`` (evidence 1, counters around the flush and commit
    results, is read by :func:`fsyncbench.measure.rounds.run_plan`). Runs inside a fresh scratch
    directory of ``target``, removed afterwards. Raises FsyncbenchError on I/O errors;
    evidence that cannot be gathered here is named in ``Evidence.unavailable``."""
    unavailable: dict[str, str] = {}
    disks = [d.name for d in host.target.disks if d.has_flush_counters]
    reason = counter_reason(host)
    if reason:
        unavailable["flush_counters"] = reason
    env = environment_facts(host)
    linux = host.os_name == "Linux"
    steps = ["libc vs syscall", "dirty-size sweep", "second descriptor", "syncs per commit"]

    def step(i: int) -> None:
        if progress is not None:
            progress(steps[i], i, len(steps))

    comparisons = []
    traces: tuple[SyncTrace, ...] = ()
    with scratch_dir(target) as work:
        step(0)
        if linux:
            for prim in ("fdatasync", "fsync"):
                c = compare_libc_syscall(work, prim, plan, disks, counters)
                if c is not None:
                    comparisons.append(c)
            if not comparisons:
                unavailable["syscall_comparisons"] = (
                    f"no raw syscall numbers for {platform.machine()}"
                )
        else:
            unavailable["syscall_comparisons"] = "raw sync system calls are measured on Linux only"
        step(1)
        swept = sweep(work, sweep_primitive(fcntl_refusals(work)), plan)
        if swept is None:
            unavailable["dirty_sweep"] = "less than 4 MiB free on the target"
        step(2)
        second = second_fd_check(work, plan, disks, counters)
        step(3)
        if not plan.trace:
            unavailable["sync_traces"] = "skipped (--no-trace)"
        elif not linux:
            unavailable["sync_traces"] = "syscall tracing needs strace (Linux)"
        elif env.strace is None:
            unavailable["sync_traces"] = "strace is not installed (apt-get install strace)"
        else:
            preload = os.environ.get("LD_PRELOAD") or None
            try:
                traces = trace_syncs(work, TRACE_CONFIGS, plan, env.strace, preload)
                if preload:
                    traces += trace_syncs(work, TRACE_CONFIGS, plan, env.strace, None)
            except FsyncbenchError as exc:
                unavailable["sync_traces"] = str(exc)
    return Evidence(
        sync_traces=traces,
        syscall_comparisons=tuple(comparisons),
        dirty_sweep=swept,
        second_fd=second,
        environment=env,
        unavailable=unavailable,
    )
