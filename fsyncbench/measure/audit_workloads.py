"""The I/O patterns ``fsyncbench audit`` measures beyond the commit and the raw sync
primitives of :mod:`fsyncbench.measure.workloads`: a sync made as a raw system call
(:func:`raw_syscall_primitive`), a sync on a second descriptor (:class:`SecondFdFlush`), the
dirty-size sweep (:func:`dirty_sweep`) and the child process whose commits strace watches
(:func:`trace_child`). Their collectors are :mod:`fsyncbench.measure.flush_checks` and
:mod:`fsyncbench.measure.observations`. Like every
workload, these write under the user's target only inside a
:func:`fsyncbench.measure.scratch.scratch_dir` directory.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fsyncbench.errors import FsyncbenchError
from fsyncbench.measure.workloads import (
    BLOCK_BYTES,
    FlushWorkload,
    JournalCommit,
    SyncPrimitive,
    io_error,
)
from fsyncbench.model import Pragmas

#: Raw Linux system call numbers of the sync calls, per ``platform.machine()``. x86_64:
#: arch/x86/entry/syscalls/syscall_64.tbl (74 fsync, 75 fdatasync); aarch64/arm64 use the
#: generic table, include/uapi/asm-generic/unistd.h (82 __NR_fsync, 83 __NR_fdatasync).
SYSCALL_NUMBERS: dict[str, dict[str, int]] = {
    "x86_64": {"fsync": 74, "fdatasync": 75},
    "amd64": {"fsync": 74, "fdatasync": 75},
    "aarch64": {"fsync": 82, "fdatasync": 83},
    "arm64": {"fsync": 82, "fdatasync": 83},
}

#: Sizes of the dirty-size sweep: 4 KiB, 16 KiB, ... 64 MiB (powers of 4).
SWEEP_SIZES = tuple(4096 * 4**k for k in range(8))

#: Marker paths the traced child passes to statvfs(3) (one statfs(2) call, which fails with
#: ENOENT) around each configuration's commits, so a trace can be cut per configuration.
TRACE_MARK = "/fsyncbench-trace-mark"


def syscall_number(name: str, machine: str | None = None) -> int | None:
    """Raw system call number of ``name`` (fsync/fdatasync) on ``machine``; None if unknown."""
    import platform

    return SYSCALL_NUMBERS.get((machine or platform.machine()).lower(), {}).get(name)


def raw_syscall_primitive(name: str, machine: str | None = None) -> SyncPrimitive | None:
    """``name`` (fsync/fdatasync) made with ``syscall(2)`` through ctypes, bypassing whatever
    the process's libc symbol resolves to. None off Linux or on an unknown architecture.

    ``syscall`` is looked up in libc's own handle (dlsym on ``libc.so.6``), so a preloaded
    library cannot interpose it; eatmydata wraps fsync, fdatasync, sync, syncfs, msync,
    sync_file_range and open, never syscall (``nm -D libeatmydata.so``;
    https://github.com/stewartsmith/libeatmydata/blob/master/libeatmydata/libeatmydata.c).
    """
    if sys.platform.startswith("linux"):
        return _linux_syscall_primitive(name, machine)
    else:
        return None


def _linux_syscall_primitive(name: str, machine: str | None) -> SyncPrimitive | None:
    number = syscall_number(name, machine)
    if number is None:
        return None
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        fn = libc.syscall
    except (OSError, AttributeError):
        return None
    fn.restype = ctypes.c_long
    fn.argtypes = [ctypes.c_long, ctypes.c_int]

    def call(fd: int) -> None:
        if fn(number, fd) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))

    return SyncPrimitive(f"{name}-syscall", call)


class SecondFdFlush(FlushWorkload):
    """4 KiB overwrite through one descriptor, then the sync primitive on a *second*
    descriptor of the same file (pg_test_fsync, "Test if fsync on non-write file descriptor
    is honored": https://www.postgresql.org/docs/current/pgtestfsync.html). Linux syncs the
    inode whatever descriptor is used (fsync(2)); a layer that tracks dirty data per
    descriptor (some FUSE and network filesystems) does not."""

    FILE_PREFIX = "second-fd"
    WHAT = " on a second descriptor"

    def __init__(self, directory: Path, primitive: SyncPrimitive) -> None:
        assert primitive.call is not None
        super().__init__(directory, primitive)

    def _open_sync_fd(self, path: Path) -> int:
        return os.open(path, os.O_RDWR)


def dirty_sweep(
    directory: Path,
    call: Callable[[int], Any],
    sizes: tuple[int, ...] = SWEEP_SIZES,
    repeats: int = 3,
) -> list[tuple[int, int]]:
    """(dirty bytes, sync latency ns) pairs: write ``size`` bytes at offset 0 of a file
    preallocated to ``max(sizes)`` bytes (written and fsynced once), then time ``call(fd)``
    alone with ``time.perf_counter_ns``. Sizes ascend within each of ``repeats`` rounds.

    The data is pseudo-random (incompressible, so compressing filesystems must write it) and
    shifts by one page each round (so a filesystem that skips rewriting identical blocks,
    ZFS nopwrite, must still write). Raises FsyncbenchError on I/O errors (ENOSPC named).
    """
    import random
    import time

    largest = max(sizes)
    data = memoryview(random.Random(20240601).randbytes(largest + repeats * BLOCK_BYTES))
    path = directory / "dirty-sweep.dat"
    points: list[tuple[int, int]] = []
    clock = time.perf_counter_ns
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_BINARY", 0), 0o600)
    except OSError as exc:
        raise io_error(exc, f"preparing {path.name}") from None
    try:
        _write_all(fd, data[:largest], 0)
        os.fsync(fd)
        for r in range(repeats):
            for size in sorted(sizes):
                _write_all(fd, data[r * BLOCK_BYTES : r * BLOCK_BYTES + size], 0)
                t0 = clock()
                call(fd)
                points.append((size, clock() - t0))
    except OSError as exc:
        raise io_error(exc, "dirty-size sweep") from None
    finally:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(path)
    return points


def _write_all(fd: int, buf: memoryview, offset: int) -> None:
    done = 0
    while done < len(buf):
        if hasattr(os, "pwrite"):
            done += os.pwrite(fd, buf[done:], offset + done)
        else:  # Windows
            os.lseek(fd, offset + done, os.SEEK_SET)
            done += os.write(fd, buf[done:])


def trace_child(argv: list[str]) -> None:
    """Entry point of the child process the audit runs under strace.

    ``argv``: DIRECTORY COMMITS PAYLOAD_BYTES LABEL...; each LABEL is ``MODE/SYNC``
    (e.g. ``DELETE/FULL``). Works in a fresh ``trace-*`` subdirectory of DIRECTORY (a scratch
    directory; several traces may share it). For each label: open a fresh database with those pragmas
    (:class:`JournalCommit`), commit once untraced-in-effect (first commit creates files),
    then statvfs(``TRACE_MARK/begin/LABEL``), COMMITS commits, statvfs(``TRACE_MARK/end/
    LABEL``). Exits with status 3 and one line on stderr on an error.
    """
    commits, payload = int(argv[1]), int(argv[2])
    try:
        directory = Path(tempfile.mkdtemp(prefix="trace-", dir=argv[0]))
    except OSError as exc:
        print(
            f"trace child: cannot create a directory in {argv[0]}: {exc.strerror}", file=sys.stderr
        )
        raise SystemExit(3) from exc
    try:
        for label in argv[3:]:
            mode, sync = label.split("/")
            journal = JournalCommit(directory, Pragmas(mode, sync), payload)
            try:
                journal.run(journal.prepare(-1))
                _mark("begin", label)
                for i in range(commits):
                    journal.run(journal.prepare(i))
                _mark("end", label)
            finally:
                journal.close()
    except (FsyncbenchError, ValueError) as exc:
        print(f"trace child: {exc}", file=sys.stderr)
        raise SystemExit(3) from exc


def _mark(which: str, label: str) -> None:
    if sys.platform != "win32":  # strace runs on Linux only
        with contextlib.suppress(OSError):
            os.statvfs(f"{TRACE_MARK}/{which}/{label}")
