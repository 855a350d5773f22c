"""Each kill a simulated power cut of the agent's machine (``fsyncbench crash --powerloss``).

The agent child opens its state database (the step journal or the checkpoints) through a
recording VFS (:class:`fsyncbench.powerloss.sqlite.Recorder`, apsw's SQLite) that streams
every file operation to a file beside it (:class:`fsyncbench.powerloss.rebase.OpStream`),
the stream starting with the database's files as they were when the child started
(:func:`fsyncbench.powerloss.rebase.snapshot_ops`: all of it durable). After the SIGKILL the
parent reads the stream, rebuilds the one state a power cut at that moment leaves under the
persistence model (:func:`fsyncbench.powerloss.rebase.state_after_cut`: where the model
allows several, the one in which the fewest operations since the last honoured sync
survive) and puts exactly those files in the agent's directory (a -shm, -wal or -journal
the state does not hold is removed); then the agent restarts as after a plain kill.

The outside world (:class:`fsyncbench.crash.world.World`, a remote service) is another
machine: it keeps every write it acknowledged, so it is never cut.

A segment runs from one cut to the next, not from one child to the next. After a cut the
files are what the disk holds when the machine comes back up, so the next child starts
from them as durable (the stream's barrier); the lane's databases, made by the parent
before the first child, count as durable the same way (a journal that has existed for a
while). A child that completes does not end the segment: the next child appends to the same
stream (:class:`RecordedState`), so a cut also takes what the completed runs since the last
cut left unsynced. Nothing else would have made it durable: the runs start milliseconds
apart, far inside Linux's writeback delay (vm.dirty_expire_centisecs, 30 s by default:
https://docs.kernel.org/admin-guide/sysctl/vm.html#dirty-expire-centisecs), so only
SQLite's own syncs count (at synchronous=OFF a closing WAL connection's checkpoint syncs
nothing either).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fsyncbench.model import Pragmas
from fsyncbench.powerloss.models import MODELS, SECTOR_MODELS, SEMANTICS, CrashState
from fsyncbench.powerloss.rebase import (
    OpStream,
    read_ops,
    restore,
    segment_trace,
    snapshot_ops,
    state_after_cut,
)
from fsyncbench.powerloss.sqlite import Recorder, SyncFilter, versions

#: The pragma combinations ``crash --powerloss`` compares unless one is given: the WAL
#: journal at each synchronous level a journal is likely to run at, and the rollback
#: journal at FULL.
DEFAULT_POWER_LOSS_PRAGMAS = (
    Pragmas("WAL", "FULL"),
    Pragmas("WAL", "NORMAL"),
    Pragmas("WAL", "OFF"),
    Pragmas("DELETE", "FULL"),
)
#: The same under macOS semantics, each durable row with PRAGMA fullfsync=ON beside it:
#: there a plain fsync stops at the drive's cache and only F_FULLFSYNC, which SQLite asks
#: for only under fullfsync, flushes it (https://www.sqlite.org/pragma.html#pragma_fullfsync),
#: so the setting a Mac needs is the one to see.
DARWIN_POWER_LOSS_PRAGMAS = (
    Pragmas("WAL", "FULL", True),
    Pragmas("WAL", "FULL", False),
    Pragmas("WAL", "NORMAL", False),
    Pragmas("WAL", "OFF", False),
    Pragmas("DELETE", "FULL", True),
    Pragmas("DELETE", "FULL", False),
)


def default_power_loss_pragmas(semantics: str) -> tuple[Pragmas, ...]:
    """The pragma combinations ``crash --powerloss`` compares under ``semantics`` when none
    is given: :data:`DARWIN_POWER_LOSS_PRAGMAS` for "macos", else
    :data:`DEFAULT_POWER_LOSS_PRAGMAS`."""
    return DARWIN_POWER_LOSS_PRAGMAS if semantics == "macos" else DEFAULT_POWER_LOSS_PRAGMAS


@dataclass(frozen=True)
class PowerLoss:
    """How each kill becomes a power cut: ``model`` one of
    :data:`fsyncbench.powerloss.models.MODELS`, ``semantics`` one of
    :data:`~fsyncbench.powerloss.models.SEMANTICS` (linux: every sync honoured; macos: plain
    fsync reaches only the drive cache, which only F_FULLFSYNC flushes, and the journal,
    without PRAGMA fullfsync, never asks for it; windows: no directory syncs).
    ``sync_filter``: a planted fault for tests, given to every child's Recorder (called with
    the 0-based number of each sync; False skips it). Raises ValueError for an unknown
    model or semantics."""

    model: str
    semantics: str = "linux"
    sync_filter: SyncFilter | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.model not in MODELS:
            raise ValueError(f"unknown persistence model {self.model!r}")
        if self.semantics not in SEMANTICS:
            raise ValueError(f"unknown semantics {self.semantics!r}")

    @property
    def psow(self) -> bool:
        """SQLite's powersafe-overwrite flag for the journal: off only for the models that
        tear or trash sectors (:data:`~fsyncbench.powerloss.models.SECTOR_MODELS`), which it
        forbids (https://www.sqlite.org/psow.html)."""
        return self.model not in SECTOR_MODELS


def sqlite_version() -> str:
    """The SQLite the recorded children use (apsw's build)."""
    return versions()["sqlite"]


class RecordedState:
    """The agent's state database ``directory/db_name`` (``directory`` absolute and resolved)
    through a recording VFS, every op streamed to ``stream_path``: the connection
    :class:`fsyncbench.crash.journal.StateConnection` describes, plus :meth:`close`.

    A stream that does not exist yet starts with the directory's files (a barrier: the
    files after a cut, or the lane's new databases, are durable); one that exists holds
    what earlier children did since the last cut, and this child appends to it (their
    unsynced writes are not durable: the module docstring). ``pragmas`` are set as the
    stdlib connection sets them. :meth:`close` closes the connection and keeps the stream
    for the next child; :func:`cut` reads and removes it. Raises OSError, or apsw's errors
    from SQLite."""

    def __init__(
        self, directory: Path, db_name: str, stream_path: Path, pragmas: Pragmas, power: PowerLoss
    ) -> None:
        segment_started = stream_path.exists()
        self._stream = OpStream(stream_path, append=segment_started)
        self._recorder: Recorder | None = None
        self._conn: Any = None
        try:
            if not segment_started:
                self._stream.write_all(snapshot_ops(directory))
            self._recorder = Recorder(directory, power.sync_filter, self._stream.write)
            self._conn = self._recorder.connect(directory / db_name, power.psow)
            if pragmas.fullfsync is not None:  # the recorder sees SQLITE_SYNC_FULL syncs
                on = "ON" if pragmas.fullfsync else "OFF"
                self._conn.execute(f"PRAGMA fullfsync={on}").fetchall()
            self._conn.execute(f"PRAGMA journal_mode={pragmas.journal_mode}").fetchall()
            self._conn.execute(f"PRAGMA synchronous={pragmas.synchronous}").fetchall()
        except BaseException:
            self.close()
            raise

    @property
    def in_transaction(self) -> bool:
        return bool(self._conn.in_transaction)

    def execute(self, sql: str, parameters: Any = (), /) -> Any:
        return self._conn.execute(sql, parameters)

    def close(self) -> None:
        try:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            if self._recorder is not None:
                self._recorder.close()
                self._recorder = None
        finally:
            self._stream.close()


def cut(
    directory: Path, db_name: str, stream_path: Path, pragmas: Pragmas, power: PowerLoss
) -> CrashState | None:
    """A power cut of the agent's machine right after a SIGKILL: read the segment's stream
    at ``stream_path`` (the killed child's operations, after those of the children that
    completed since the last cut), rebuild the state ``power`` leaves
    (:func:`fsyncbench.powerloss.rebase.state_after_cut`) and make ``directory`` hold exactly
    its files; the stream is removed, so the next child starts a new segment. Returns the
    state (its ``files`` and ``how``), or None when the child changed nothing: there is no
    stream (no child held a state database open), or it ends before its start's barrier (the
    child was killed while writing :func:`fsyncbench.powerloss.rebase.snapshot_ops`; the
    recorder opens only after it, so the files are as durable as they were and stay as they
    are). Raises OSError."""
    if not stream_path.exists():
        return None
    ops = read_ops(stream_path)
    if not any(op.kind == "barrier" for op in ops):
        stream_path.unlink()
        return None
    trace = segment_trace(ops, pragmas, db_name, power.psow)
    state = state_after_cut(trace, power.model, semantics=power.semantics)
    restore(directory, state.files)
    stream_path.unlink()
    return state
