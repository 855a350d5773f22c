"""The audit's evidence: what ``fsyncbench audit`` measures beyond flush and commit latency.

Orchestration only: every write under the target happens in :mod:`fsyncbench.measure.workloads`
and :mod:`fsyncbench.measure.audit_workloads` (inside a
:func:`~fsyncbench.measure.scratch.scratch_dir`), timing in :mod:`fsyncbench.measure.timing`,
the fit in :mod:`fsyncbench.measure.stats`. Each collector returns a model object from
:mod:`fsyncbench.model` (all recorded in the report's ``evidence``); the verdict engine
(:mod:`fsyncbench.judge.engine`) reads them back without measuring.

Evidence and sources:

1. Device flush counters per sync: ``/sys/block/<disk>/stat`` fields 16-17 read around every
   block of syncs (https://www.kernel.org/doc/html/latest/block/stat.html; partitions walk to
   the disk, dm/md to the leaves: :mod:`fsyncbench.host._sysblock`).
2. Syncs per commit per pragma combination: strace(1) ``-f -e trace=fsync,fdatasync,...`` on
   a child process committing through the same :class:`~fsyncbench.measure.workloads.JournalCommit`,
   cut per configuration by ``statfs`` marker calls (:func:`trace_syncs`).
3. libc vs raw system call: ``os.fdatasync``/``os.fsync`` against ``syscall(SYS_fdatasync)``
   through ctypes (x86_64 75/74, aarch64 83/82), in interleaved blocks with counters
   (:func:`compare_libc_syscall`); plus ``LD_PRELOAD``, ``/etc/ld.so.preload`` and the
   libraries mapped into this process (``/proc/self/maps``, proc(5)).
4. Dirty-size sweep 4 KiB ... 64 MiB, least-squares fit latency = flush cost + bytes /
   bandwidth (:func:`sweep`).
5. A sync on a second descriptor of the written file (pg_test_fsync's check,
   :func:`second_fd_check`).
6. Environment facts (:func:`environment_facts`): ZFS ``sync`` property (zfsprops(7)), the
   preload files; the host record (:mod:`fsyncbench.host`) has filesystem, mount options,
   device facts and virtualization.
7. macOS: plain fsync, F_BARRIERFSYNC and F_FULLFSYNC are timed side by side as flush results
   by :func:`fsyncbench.measure.rounds.run_plan`; diskutil/sysctl/dyld facts are in the host record.
"""

from __future__ import annotations

import collections
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from fsyncbench import host as hostmod
from fsyncbench.errors import FsyncbenchError
from fsyncbench.measure import stats
from fsyncbench.measure.audit_workloads import (
    SWEEP_SIZES,
    TRACE_MARK,
    SecondFdFlush,
    dirty_sweep,
    raw_syscall_primitive,
    syscall_number,
)
from fsyncbench.measure.plan import DEFAULT_PAYLOAD_BYTES
from fsyncbench.measure.timing import Workload, measure
from fsyncbench.measure.workloads import (
    FlushWorkload,
    SyncPrimitive,
    fcntl_refusals,
    refused_name,
    scratch_dir,
    sync_primitives,
)
from fsyncbench.model import (
    DirtySweep,
    EnvironmentFacts,
    Evidence,
    FlushDelta,
    Host,
    Pragmas,
    SecondFdCheck,
    SweepPoint,
    SyncTrace,
    SyscallComparison,
)

#: Pragma combinations whose syncs per commit are traced (cheap: no timing under strace).
TRACE_MODES = ("DELETE", "TRUNCATE", "PERSIST", "WAL")
TRACE_SYNCS = ("OFF", "NORMAL", "FULL", "EXTRA")
TRACE_CONFIGS = tuple(Pragmas(m, s) for m in TRACE_MODES for s in TRACE_SYNCS)

#: Pragma combinations the audit times (FULL vs OFF per journal mode, WAL/NORMAL).
TIMED_CONFIGS = (
    Pragmas("DELETE", "OFF"),
    Pragmas("DELETE", "FULL"),
    Pragmas("WAL", "OFF"),
    Pragmas("WAL", "NORMAL"),
    Pragmas("WAL", "FULL"),
)

#: The sync system calls a trace counts (syscalls(2)); ``?`` lets strace skip a name the
#: architecture lacks instead of failing (strace(1), "-e trace=").
SYNC_SYSCALLS = (
    "fsync",
    "fdatasync",
    "sync_file_range",
    "sync_file_range2",
    "syncfs",
    "sync",
    "msync",
)
STRACE_TIMEOUT_S = 120.0
ZFS_TIMEOUT_S = 5.0

Counters = Callable[[Sequence[str]], Mapping[str, tuple[int | None, ...]]]
Runner = Callable[[list[str]], "tuple[int, bytes] | None"]


@dataclass(frozen=True)
class EvidencePlan:
    """How much evidence to gather (the ``audit`` command's sample options)."""

    compare_syncs: int = 200  # per side of libc vs syscall (and of the second-fd check)
    compare_blocks: int = 4  # interleaved blocks per side
    sweep_repeats: int = 3  # syncs per dirty size
    sweep_max_bytes: int = SWEEP_SIZES[-1]
    trace_commits: int = 20  # commits traced per pragma combination
    payload_bytes: int = DEFAULT_PAYLOAD_BYTES
    trace: bool = True
    budget_s: float = 20.0  # per timed block set

    def __post_init__(self) -> None:
        if self.compare_syncs < self.compare_blocks or self.compare_blocks < 1:
            raise FsyncbenchError("--compare-syncs must be at least the number of blocks (4)")
        if self.sweep_repeats < 1:
            raise FsyncbenchError(f"--sweep-repeats must be at least 1, got {self.sweep_repeats}")
        if self.sweep_max_bytes < SWEEP_SIZES[1]:
            raise FsyncbenchError(
                f"--sweep-max-mib must be at least {max(1, SWEEP_SIZES[1] >> 20)}"
            )
        if self.trace_commits < 1:
            raise FsyncbenchError(f"--trace-commits must be at least 1, got {self.trace_commits}")


# --------------------------------------------------------------------------- counters


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


# --------------------------------------------------------------------------- 2. syncs per commit

_MARK = re.compile(re.escape(TRACE_MARK) + r"/(begin|end)/([A-Z]+/[A-Z]+)")
_CALL = re.compile(r"^(?:\[pid\s+\d+\]\s+|\d+\s+)?([a-z_0-9]+)\(")


def parse_strace(text: str) -> dict[str, collections.Counter[str]]:
    """Sync calls between the ``begin``/``end`` markers of each label in strace output
    (``-f``: lines may start with a pid). ``<... resumed>`` lines are not counted twice.
    Returns {label: Counter(call name -> count)}; a label without its end marker is
    dropped (the child failed there)."""
    counts: dict[str, collections.Counter[str]] = {}
    current: str | None = None
    pending: collections.Counter[str] = collections.Counter()
    for line in text.splitlines():
        mark = _MARK.search(line)
        if mark and "statfs" in line:
            which, label = mark.groups()
            if which == "begin":
                current, pending = label, collections.Counter()
            elif current == label:
                counts[label] = pending
                current = None
            continue
        call = _CALL.match(line)
        if current is not None and call and call.group(1) in SYNC_SYSCALLS:
            pending[call.group(1)] += 1
    return counts


def _child_env(ld_preload: str | None) -> dict[str, str]:
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = package_root + (
        os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else ""
    )
    if ld_preload:
        env["LD_PRELOAD"] = ld_preload
    else:
        env.pop("LD_PRELOAD", None)
    return env


def trace_syncs(
    directory: Path,
    configs: Sequence[Pragmas],
    plan: EvidencePlan,
    strace: str,
    ld_preload: str | None,
) -> tuple[SyncTrace, ...]:
    """Sync calls per commit for each of ``configs``, observed by strace on a child Python
    process (with LD_PRELOAD ``ld_preload``) running :func:`fsyncbench.measure.audit_workloads.trace_child`
    in ``directory``. Raises FsyncbenchError with strace's or the child's first error line."""
    labels = [f"{p.journal_mode}/{p.synchronous}" for p in configs]
    with tempfile.NamedTemporaryFile("r", prefix="fsyncbench-strace-", suffix=".txt") as out:
        argv = [
            strace,
            "-f",
            "-qq",
            "-e",
            "signal=none",
            "-e",
            "trace=" + ",".join(["?" + s for s in SYNC_SYSCALLS] + ["statfs"]),
            "-o",
            out.name,
            sys.executable,
            "-c",
            "import sys; from fsyncbench.measure.audit_workloads import trace_child; trace_child(sys.argv[1:])",
            str(directory),
            str(plan.trace_commits),
            str(plan.payload_bytes),
            *labels,
        ]
        try:
            done = subprocess.run(
                argv,
                env=_child_env(ld_preload),
                capture_output=True,
                timeout=STRACE_TIMEOUT_S,
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise FsyncbenchError(f"strace could not run: {exc}") from exc
        if done.returncode != 0:
            lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
            raise FsyncbenchError(f"strace failed: {lines[-1] if lines else done.returncode}")
        counts = parse_strace(out.read())
    traces = []
    for p, label in zip(configs, labels):
        if label in counts:
            traces.append(
                SyncTrace(
                    p,
                    plan.trace_commits,
                    dict(sorted(counts[label].items())),
                    ld_preload=ld_preload or None,
                )
            )
    return tuple(traces)


# --------------------------------------------------------------------------- 6. environment


def parse_ld_so_preload(text: str | None) -> tuple[str, ...]:
    """Entries of /etc/ld.so.preload: separated by whitespace or ':' (ld.so(8)); '#' starts
    a comment."""
    entries = []
    for line in (text or "").splitlines():
        line = line.split("#", 1)[0]
        entries += [e for e in re.split(r"[\s:]+", line) if e]
    return tuple(entries)


def preloaded_libraries(
    maps_text: str, named: Sequence[str], known: Sequence[str]
) -> tuple[str, ...]:
    """Mapped files (``/proc/self/maps``, proc(5): path is the sixth field) whose base name
    matches an entry of ``named`` (LD_PRELOAD, ld.so.preload) or contains one of ``known``."""
    wanted = {os.path.basename(n) for n in named if n}
    found: list[str] = []
    for line in maps_text.splitlines():
        fields = line.split(None, 5)
        if len(fields) < 6 or not fields[5].startswith("/"):
            continue
        path = fields[5].strip().removesuffix(" (deleted)")
        base = os.path.basename(path)
        if (base in wanted or any(k in base.lower() for k in known)) and path not in found:
            found.append(path)
    return tuple(found)


def parse_zfs_sync(result: tuple[int, bytes] | None) -> str | None:
    """``zfs get -H -o value sync DATASET`` output -> standard/always/disabled, else None."""
    if result is None or result[0] != 0:
        return None
    value = result[1].decode("utf-8", "replace").strip().splitlines()
    return (
        value[0].strip()
        if value and value[0].strip() in ("standard", "always", "disabled")
        else None
    )


def _run(argv: list[str]) -> tuple[int, bytes] | None:
    try:
        done = subprocess.run(
            argv, capture_output=True, timeout=ZFS_TIMEOUT_S, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.returncode, done.stdout


def environment_facts(
    host: Host,
    root: str = "/",
    environ: Mapping[str, str] | None = None,
    runner: Runner | None = None,
) -> EnvironmentFacts:
    """The audit's environment facts for ``host`` (see EnvironmentFacts); ``root`` re-bases
    /etc and /proc for tests. Never raises."""
    from fsyncbench.host.layers import SYNC_DISABLING_LIBS

    env = os.environ if environ is None else environ
    ld_so = parse_ld_so_preload(_read(os.path.join(root, "etc/ld.so.preload")))
    named = [p for p in re.split(r"[\s:]+", env.get("LD_PRELOAD", "")) if p] + list(ld_so)
    maps = _read(os.path.join(root, "proc/self/maps")) or ""
    zfs_sync = None
    mount = host.target.mount
    if mount is not None and mount.fs_type == "zfs":
        zfs = shutil.which("zfs") if runner is None else "zfs"
        if zfs:
            zfs_sync = parse_zfs_sync(
                (runner or _run)([zfs, "get", "-H", "-o", "value", "sync", mount.source])
            )
    return EnvironmentFacts(
        ld_so_preload=ld_so,
        preloaded_libraries=preloaded_libraries(maps, named, SYNC_DISABLING_LIBS),
        zfs_sync=zfs_sync,
        strace=shutil.which("strace"),
    )


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return None


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
