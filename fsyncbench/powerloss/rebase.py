"""Power cuts of a process that keeps running across them: stream a recording out of a
process that may be SIGKILLed, rebase the next recording on the files as they are, pick
one state per cut and put it on disk. What ``fsyncbench crash --powerloss`` needs beyond
one recorded trace (:mod:`fsyncbench.powerloss.models` checks every state of one trace).

A trace segment (one process's life between two cuts) must start from an empty directory
(:func:`~fsyncbench.powerloss.models.crash_states` replays it from nothing):
:func:`snapshot_ops` describes the files as they are now as a ``create`` and one
full-content ``write`` per file, then a ``barrier``, so everything that existed before the
segment counts as durable (the machine came back up with exactly those files) and a cut
loses only what the segment did.

:class:`OpStream` writes each :class:`~fsyncbench.powerloss.trace.Op` with one write(2) as
it happens; a SIGKILL keeps everything written to the kernel (the page cache survives a
process death), so the parent reads the whole trace up to the kill with :func:`read_ops`.

:func:`state_after_cut` picks one state for a cut after the last op: the one in which the
fewest operations since the last honoured sync survive (:data:`CUT_CHOICE`).
:func:`restore` replaces a directory's files with it. Nothing here prints.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable
from pathlib import Path

from fsyncbench.model import Pragmas
from fsyncbench.powerloss import sqlite
from fsyncbench.powerloss.models import MODELS, CrashState, crash_states
from fsyncbench.powerloss.trace import OP_KINDS, Op, Trace

#: Which state a cut leaves where a model allows several, per model: the one in which the
#: fewest operations since the last honoured sync survive.
CUT_CHOICE = {
    "synced-only": "the only state: every file as of its last honoured sync, every directory "
    "entry as of the last honoured directory sync",
    "prefix": "the state right after the last honoured sync (no later operation kept)",
    "subset": "no unsynced operation kept (the synced-only state)",
    "torn": "no unsynced operation kept, and each sector that an unsynced write covered only "
    "in part zeroed",
    "torn-garbage": "no unsynced operation kept, and each sector that an unsynced write "
    "covered only in part filled with random bytes",
    "test6": "every unsynced write and truncation left out (test6's 'nothing done' for each); "
    "files created and deleted as issued",
}

#: What a cut under each model explored, for the answer's label: one state per cut, which
#: under subset is exactly the synced-only state (so it is not called subset alone).
CUT_EXPLORED = {
    "synced-only": "synced-only",
    "prefix": "prefix, its shortest prefix only",
    "subset": "subset, its keep-nothing state only: the synced-only state",
    "torn": "torn, its keep-nothing state only: synced-only with partly written sectors zeroed",
    "torn-garbage": "torn-garbage, its keep-nothing state only: synced-only with partly "
    "written sectors random",
    "test6": "test6, its write-nothing state only: synced data, directory as issued",
}

#: Files :func:`snapshot_ops` leaves out: SQLite's WAL index (-shm), which the recording VFS
#: never sees (apsw does not expose shared memory to Python) and which WAL recovery rebuilds
#: from the WAL (https://www.sqlite.org/walformat.html#shm).
SKIPPED_SUFFIXES = ("-shm",)

# One record: kind (index in OP_KINDS), offset_bytes, size_bytes, flags, seq, name length,
# data length; then the name (UTF-8) and the data.
_HEAD = struct.Struct("<BqqqqHI")


def encode(op: Op) -> bytes:
    """``op`` as one self-delimiting record (:func:`decode` reads a run of them)."""
    name = op.file.encode()
    head = _HEAD.pack(
        OP_KINDS.index(op.kind),
        op.offset_bytes,
        op.size_bytes,
        op.flags,
        op.seq,
        len(name),
        len(op.data),
    )
    return head + name + op.data


def decode(data: bytes) -> list[Op]:
    """The ops of a run of :func:`encode` records; an incomplete last record (a process killed
    inside its write) is left out."""
    ops: list[Op] = []
    at = 0
    while at + _HEAD.size <= len(data):
        kind, offset, size, flags, seq, name_len, data_len = _HEAD.unpack_from(data, at)
        start = at + _HEAD.size
        end = start + name_len + data_len
        if end > len(data):
            break
        name = data[start : start + name_len].decode()
        ops.append(
            Op(
                OP_KINDS[kind],
                name,
                offset_bytes=offset,
                data=bytes(data[start + name_len : end]),
                size_bytes=size,
                flags=flags,
                seq=seq,
            )
        )
        at = end
    return ops


class OpStream:
    """Ops appended to the file ``path`` (created, or emptied; with ``append`` kept and
    added to), each with one write(2) as it happens, so that what a SIGKILLed process
    recorded survives it. Use :meth:`write` as a
    :class:`~fsyncbench.powerloss.sqlite.Recorder` ``sink``. Raises OSError as os.open and
    os.write do."""

    def __init__(self, path: Path, append: bool = False) -> None:
        self.path = path
        keep = os.O_APPEND if append else os.O_TRUNC
        flags = os.O_WRONLY | os.O_CREAT | keep | getattr(os, "O_CLOEXEC", 0)
        self._fd = os.open(path, flags, 0o600)

    def write(self, op: Op) -> None:
        data = memoryview(encode(op))
        while data:
            data = data[os.write(self._fd, data) :]

    def write_all(self, ops: Iterable[Op]) -> None:
        for op in ops:
            self.write(op)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def read_ops(path: Path) -> list[Op]:
    """The ops an :class:`OpStream` wrote to ``path``. Raises OSError when it is unreadable."""
    return decode(path.read_bytes())


def snapshot_ops(directory: Path) -> list[Op]:
    """The files in ``directory`` as a trace's start: for each regular file (by name, but not
    :data:`SKIPPED_SUFFIXES`) a ``create`` and, if it is not empty, one ``write`` of its whole
    content at offset 0; then a ``barrier`` (all of it durable). Raises OSError."""
    ops: list[Op] = []
    for path in sorted(directory.iterdir()):
        if not path.is_file() or path.name.endswith(SKIPPED_SUFFIXES):
            continue
        ops.append(Op("create", path.name))
        data = path.read_bytes()
        if data:
            ops.append(Op("write", path.name, offset_bytes=0, data=data))
    ops.append(Op("barrier"))
    return ops


def segment_trace(ops: Iterable[Op], pragmas: Pragmas, db_name: str, psow: bool) -> Trace:
    """A :class:`~fsyncbench.powerloss.trace.Trace` of one segment (a :func:`snapshot_ops`
    start and what the recording VFS saw after it), without commit rows: it is only rebuilt,
    not checked row by row. The SQLite version and directory-sync modelling are apsw's."""
    return Trace(
        pragmas=pragmas,
        ops=tuple(ops),
        roles=(),
        db_name=db_name,
        rows=(),
        psow=psow,
        dirsync_modelled=sqlite.dirsync_compiled_in(),
        sqlite_version=sqlite.versions()["sqlite"],
    )


def state_after_cut(
    trace: Trace, model: str, *, semantics: str = "linux", sector_bytes: int = 512
) -> CrashState:
    """The state a power cut right after ``trace``'s last op leaves under ``model``
    (:data:`~fsyncbench.powerloss.models.MODELS`) and ``semantics``, where the model allows
    several the one in which the fewest operations since the last honoured sync survive
    (:data:`CUT_CHOICE`): the first state :func:`~fsyncbench.powerloss.models.crash_states`
    gives at that point (for prefix the shortest prefix, for subset and torn the mask that
    keeps nothing). The trace must start from an empty directory (:func:`snapshot_ops`).
    Raises ValueError for an unknown model or semantics."""
    if model not in MODELS:
        raise ValueError(f"unknown persistence model {model!r}")
    end = len(trace.ops)
    # max_states=1, samples=0: every crash point before the end costs at most two states
    # (keep nothing, keep everything), and the keep-nothing one comes first at the end too
    for state in crash_states(
        trace, model, semantics=semantics, sector_bytes=sector_bytes, max_states=1, samples=0
    ):
        if state.point == end:
            return state
    raise RuntimeError("crash_states gave no state after the last op")


def restore(directory: Path, files: Iterable[tuple[str, bytes]]) -> None:
    """Make ``directory`` hold exactly ``files`` ((name, content) pairs): every other file in
    it is removed, including files the trace never saw (:data:`SKIPPED_SUFFIXES`). Not
    synced: it stands for what the disk holds when the machine comes back. Raises OSError."""
    for path in directory.iterdir():
        if path.is_file() or path.is_symlink():
            path.unlink()
    for name, data in files:
        (directory / name).write_bytes(data)
