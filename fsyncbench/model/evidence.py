"""What ``fsyncbench audit`` measures beyond the results (:mod:`fsyncbench.measure.evidence`),
recorded in ``Report.evidence``; see docs/report-schema.md. Every class here can be written
by hand (only the fields without defaults are required)."""

from __future__ import annotations

from dataclasses import dataclass, field

from fsyncbench.model.results import Pragmas

#: Sync-like system calls that make nothing durable (sync_file_range(2): "This system call
#: does not flush disk write caches").
NON_DURABLE_SYNCS = frozenset({"sync_file_range", "sync_file_range2"})


@dataclass(frozen=True)
class SyncTrace:
    """Sync system calls observed (strace, in a child process) while one pragma combination
    committed ``commits`` transactions: ``syscalls`` maps a call name (fsync, fdatasync,
    sync_file_range, syncfs, sync, msync) to its count over all those commits.

    ``ld_preload`` is the LD_PRELOAD the traced child ran with (None: unset). A trace run
    with the caller's LD_PRELOAD shows what reaches the kernel; one without it shows what
    SQLite itself asks for.
    """

    pragmas: Pragmas
    commits: int
    syscalls: dict[str, int]
    ld_preload: str | None = None
    method: str = "strace"

    @property
    def syncs_per_commit(self) -> float:
        """Sync calls per commit (S) that ask for durability: fsync, fdatasync, syncfs, sync,
        msync. ``sync_file_range`` is recorded but not counted: it "does not flush disk
        write caches" and writes no metadata (sync_file_range(2)), so it makes nothing
        durable."""
        durable = sum(n for name, n in self.syscalls.items() if name not in NON_DURABLE_SYNCS)
        return durable / self.commits if self.commits else 0.0


@dataclass(frozen=True)
class SyscallComparison:
    """The libc wrapper (``os.fdatasync``/``os.fsync``) against the raw system call
    (``syscall(SYS_fdatasync, fd)`` through ctypes) after identical 4 KiB writes, timed in
    interleaved blocks of ``syncs`` calls per side in total.

    ``*_flushes`` are device flushes counted during each side's blocks on the least-flushed
    leaf disk (None: no counter). ``syscall_number`` is the number used on ``machine``.
    """

    primitive: str
    syscall_number: int | None
    machine: str
    syncs: int
    libc_p50_ns: float
    syscall_p50_ns: float
    libc_flushes: int | None = None
    syscall_flushes: int | None = None
    libc_samples_ns: tuple[int, ...] = ()
    syscall_samples_ns: tuple[int, ...] = ()


@dataclass(frozen=True)
class SweepPoint:
    """One sync after writing ``dirty_bytes`` bytes: the sync's own latency."""

    dirty_bytes: int
    latency_ns: int


@dataclass(frozen=True)
class DirtySweep:
    """Sync latency against dirty bytes (4 KiB ... 64 MiB) and its least-squares fit
    latency = ``flush_cost_ns`` + bytes / ``bandwidth_bytes_per_s``.

    ``bandwidth_bytes_per_s`` is None when latency did not grow with the bytes written
    (slope <= 0: nothing was written anywhere); ``r_squared`` is the fit's R^2.
    """

    primitive: str
    flush_cost_ns: float
    bandwidth_bytes_per_s: float | None
    r_squared: float | None = None
    points: tuple[SweepPoint, ...] = ()


@dataclass(frozen=True)
class SecondFdCheck:
    """A write through one file descriptor, then a sync on a second descriptor of the same
    file (pg_test_fsync's "Test if fsync on non-write file descriptor is honored"), against
    write and sync on the same descriptor; ``syncs`` calls per side."""

    primitive: str
    syncs: int
    same_fd_p50_ns: float
    second_fd_p50_ns: float
    same_fd_flushes: int | None = None
    second_fd_flushes: int | None = None


@dataclass(frozen=True)
class EnvironmentFacts:
    """Environment facts the audit adds to the host record.

    ``ld_so_preload``: entries of ``/etc/ld.so.preload`` (preloaded into every process);
    ``preloaded_libraries``: libraries mapped into the measuring process (``/proc/self/maps``)
    that LD_PRELOAD or ld.so.preload named, or whose name is a known sync-disabling library;
    ``zfs_sync``: the ``sync`` property of the ZFS dataset holding the target
    (standard/always/disabled); ``strace``: the strace binary used (None: not found).
    """

    ld_so_preload: tuple[str, ...] = ()
    preloaded_libraries: tuple[str, ...] = ()
    zfs_sync: str | None = None
    strace: str | None = None


@dataclass(frozen=True)
class Evidence:
    """Everything ``fsyncbench audit`` measured beyond the flush and commit results.

    ``unavailable`` maps an evidence name (sync_traces, syscall_comparisons, dirty_sweep,
    second_fd, flush_counters) to the reason it is missing.
    """

    sync_traces: tuple[SyncTrace, ...] = ()
    syscall_comparisons: tuple[SyscallComparison, ...] = ()
    dirty_sweep: DirtySweep | None = None
    second_fd: SecondFdCheck | None = None
    environment: EnvironmentFacts = field(default_factory=EnvironmentFacts)
    unavailable: dict[str, str] = field(default_factory=dict)
