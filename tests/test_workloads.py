"""Real SQLite files and real syncs under tmp_path (ext4 here) and /dev/shm (tmpfs)."""

import errno
import os
import sqlite3
import sys
from pathlib import Path

import pytest

from fsyncbench.errors import FsyncbenchError
from fsyncbench.measure import timing as measure
from fsyncbench.measure import workloads
from fsyncbench.model import Pragmas


def test_scratch_dir_is_fresh_and_removed(tmp_path):
    (tmp_path / "users-file").write_text("keep me")
    with workloads.scratch_dir(tmp_path) as work:
        assert work.parent == tmp_path and work.name.startswith(".fsyncbench-")
        (work / "x").write_text("scratch")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["users-file"]
    assert (tmp_path / "users-file").read_text() == "keep me"


def test_scratch_dir_removed_on_interrupt(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        with workloads.scratch_dir(tmp_path) as work:
            (work / "x").write_text("scratch")
            raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []


def test_journal_commit_writes_step_rows_and_reads_pragmas_back(tmp_path):
    w = workloads.JournalCommit(tmp_path, Pragmas("WAL", "NORMAL"), payload_bytes=512)
    m = measure.measure(w, target_samples=25, budget_s=30, warmup=5)
    w.close()
    assert w.effective == Pragmas("WAL", "NORMAL")
    assert len(m.samples_ns) == 25 and m.target_reached and m.warmup == 5
    db = next(tmp_path.glob("journal-*.db"))
    rows = (
        sqlite3.connect(db)
        .execute(
            "SELECT seq, name, length(input_hash), length(output) FROM steps WHERE seq >= 0 ORDER BY seq"
        )
        .fetchall()
    )
    assert len(rows) == 25
    assert rows[0] == (0, "step-0", 64, 512)


def test_every_journal_mode_and_synchronous_value_is_applied(tmp_path):
    for mode in ("DELETE", "TRUNCATE", "PERSIST", "WAL"):
        for sync in workloads.SYNCHRONOUS:
            w = workloads.JournalCommit(tmp_path, Pragmas(mode, sync), 64)
            w.run(w.prepare(0))
            w.close()
            assert w.effective == Pragmas(mode, sync), (mode, sync)


def test_flush_workload_counts_syncs_and_overwrites_4k(tmp_path):
    # fsync (FlushFileBuffers on Windows): the first primitive called after each write
    prim = next(p for p in workloads.sync_primitives() if p.call is not None)
    w = workloads.FlushWorkload(tmp_path, prim)
    m = measure.measure(w, target_samples=10, budget_s=30, warmup=2)
    w.close()
    assert w.syncs == 12 and len(m.samples_ns) == 10
    assert (tmp_path / f"flush-{prim.name}.dat").stat().st_size == 4096


@pytest.mark.skipif(not hasattr(os, "O_DSYNC"), reason="no O_DSYNC on this platform")
@pytest.mark.parametrize("name", ["O_DSYNC", "O_SYNC"])
def test_sync_write_primitives_open_the_file_with_their_flag(tmp_path, name):
    """pg_test_fsync's open_datasync/open_sync: every write is a sync write, counted as a
    sync, on a descriptor opened with the flag (the kernel reports it back)."""
    import fcntl

    prim = next(p for p in workloads.sync_primitives() if p.name == name)
    assert prim.call is None and prim.syncs and prim.result_name == f"write ({name})"
    w = workloads.FlushWorkload(tmp_path, prim)
    try:
        flags = fcntl.fcntl(w._write_fd, fcntl.F_GETFL)
        assert flags & getattr(os, name) == getattr(os, name)
        assert not fcntl.fcntl(w._fd, fcntl.F_GETFL) & os.O_DSYNC  # preparing was not sync
        m = measure.measure(w, target_samples=10, budget_s=30, warmup=2)
    finally:
        w.close()
    assert w.syncs == 12 and len(m.samples_ns) == 10
    assert (tmp_path / f"flush-{name}.dat").stat().st_size == 4096


def test_linux_primitives_named(monkeypatch):
    names = [p.name for p in workloads.sync_primitives("linux")]
    assert names[:2] == ["none", "fsync"]
    if hasattr(os, "fdatasync"):
        assert "fdatasync" in names
    if hasattr(os, "O_DSYNC"):
        assert names[-2:] == ["O_DSYNC", "O_SYNC"]
    assert [p.name for p in workloads.sync_primitives("win32")] == ["none", "FlushFileBuffers"]


@pytest.mark.skipif(sys.platform == "win32", reason="the fcntl primitives are macOS's (no fcntl)")
def test_a_volume_refusing_f_fullfsync_is_measured_with_sqlites_fsync_fallback(
    tmp_path, monkeypatch
):
    # Linux has no fcntl command 51 or 85, so this machine's ext4 refuses F_FULLFSYNC and
    # F_BARRIERFSYNC (EINVAL) as a macOS network or FUSE volume does: the macOS primitives run
    # here for real. SQLite's full_fsync() then calls fsync(); so must the measurement. On a
    # Mac, whose own volumes take both, the volume refuses them as such a volume does.
    if sys.platform == "darwin":
        import fcntl

        real_fcntl = fcntl.fcntl

        def refusing(fd, cmd, *args):
            if cmd in (workloads.F_FULLFSYNC, workloads.F_BARRIERFSYNC):
                raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))
            return real_fcntl(fd, cmd, *args)

        monkeypatch.setattr(fcntl, "fcntl", refusing)
    assert workloads.fcntl_refusals(tmp_path, "linux") == {}
    refused = workloads.fcntl_refusals(tmp_path, "darwin")
    assert refused == {"F_BARRIERFSYNC": "EINVAL", "F_FULLFSYNC": "EINVAL"}
    assert list(tmp_path.iterdir()) == []  # the probe file is gone
    names = [p.name for p in workloads.sync_primitives("darwin", refused)]
    assert names[-2:] == [
        "fsync (F_BARRIERFSYNC refused: EINVAL)",
        "fsync (F_FULLFSYNC refused: EINVAL)",
    ]
    plain = {p.name: p for p in workloads.sync_primitives("darwin")}["F_FULLFSYNC"]
    w = workloads.FlushWorkload(tmp_path, plain)
    with pytest.raises(FsyncbenchError, match="Invalid argument"):  # before: the run aborted
        w.run(None)
    w.close()
    fsyncs = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (fsyncs.append(fd), real_fsync(fd)))
    fallback = workloads.sync_primitives("darwin", refused)[-1]
    w = workloads.FlushWorkload(tmp_path / "", fallback)
    fsyncs.clear()  # the file's preparation fsyncs once
    for _ in range(3):
        w.run(None)
    w.close()
    assert len(fsyncs) == 3 and w.syncs == 3
    assert fallback.result_name == "write+fsync (F_FULLFSYNC refused: EINVAL)"
    assert (
        workloads.sqlite_sync_primitive("Darwin", Pragmas("WAL", "FULL", True), False, refused)
        == "fsync (F_FULLFSYNC refused: EINVAL)"
    )
    assert (
        workloads.sqlite_sync_primitive("Darwin", Pragmas("WAL", "FULL", False), False, refused)
        == "fsync"
    )


def test_checkpoint_fullfsync_is_read_back_and_names_the_wal_rows_checkpoint_sync(tmp_path):
    # read back where fullfsync applies (a macOS configuration), never set: this SQLite's
    # default build has it off; Apple's has it on, and then WAL checkpoints use F_FULLFSYNC
    w = workloads.JournalCommit(tmp_path, Pragmas("WAL", "NORMAL", False), 64)
    assert w.checkpoint_fullfsync is False
    w._conn.execute("PRAGMA checkpoint_fullfsync=ON")
    assert workloads.read_checkpoint_fullfsync(w._conn) is True
    w.close()
    linux = workloads.JournalCommit(tmp_path, Pragmas("WAL", "FULL"), 64)
    assert linux.checkpoint_fullfsync is None
    linux.close()
    name = workloads.sqlite_sync_primitive
    normal, full = Pragmas("WAL", "NORMAL", False), Pragmas("WAL", "FULL", False)
    assert name("Darwin", normal, False, None, False) == "fsync (checkpoints only)"
    assert name("Darwin", normal, False, None, True) == "F_FULLFSYNC (checkpoints only)"
    assert name("Darwin", full, False, None, True) == "fsync (F_FULLFSYNC at checkpoints)"
    assert name("Darwin", Pragmas("WAL", "FULL", True), False, None, True) == "F_FULLFSYNC"
    assert name("Darwin", Pragmas("DELETE", "FULL", False), False, None, True) == "fsync"
    assert name("Linux", Pragmas("WAL", "NORMAL"), False, None, None) == (
        "fdatasync (checkpoints only)"
    )


def test_budget_stops_before_target(tmp_path):
    prim = workloads.SyncPrimitive("none", None)
    w = workloads.FlushWorkload(tmp_path, prim)
    m = measure.measure(w, target_samples=10**9, budget_s=0.05, warmup=0)
    w.close()
    assert not m.target_reached and 0 < len(m.samples_ns) < 10**9


def test_step_output_has_payload_size():
    # the unpadded JSON '{"seq": 3, "status": "ok", "data": ""}' is 38 characters by hand:
    # {=1, "seq"=5, ": "=2, 3=1, ", "=2, "status"=8, ": "=2, "ok"=4, ", "=2, "data"=6,
    # ": "=2, ""=2, }=1; a smaller payload cannot shrink it, a larger one is padded with x
    head, tail = '{"seq": 3, "status": "ok", "data": "', '"}'
    assert workloads.step_output(3, 1) == head + tail
    assert len(head + tail) == 38
    for n in (38, 100, 512, 4096):
        out = workloads.step_output(3, n)
        assert out == head + "x" * (n - 38) + tail and len(out.encode()) == n
    # a five-digit step number takes four characters more of the same payload
    assert workloads.step_output(12345, 100) == (
        '{"seq": 12345, "status": "ok", "data": "' + "x" * 58 + '"}'
    )


def test_sqlite_primitive_names():
    assert workloads.sqlite_sync_primitive("Linux", Pragmas("WAL", "OFF"), False) == "none"
    assert workloads.sqlite_sync_primitive("Linux", Pragmas("WAL", "FULL"), False) == "fdatasync"
    assert (
        workloads.sqlite_sync_primitive("Darwin", Pragmas("WAL", "FULL", True), False)
        == "F_FULLFSYNC"
    )
    assert (
        workloads.sqlite_sync_primitive("Darwin", Pragmas("WAL", "FULL", True), True)
        == "F_BARRIERFSYNC"
    )
    assert (
        workloads.sqlite_sync_primitive("Darwin", Pragmas("WAL", "FULL", False), False) == "fsync"
    )


def test_scratch_dir_in_unwritable_place_is_a_clear_error():
    with pytest.raises(FsyncbenchError, match="cannot create a working directory"):
        with workloads.scratch_dir(Path("/proc")):
            pass


def test_wal_normal_names_checkpoint_only_syncs():
    p = Pragmas("WAL", "NORMAL")
    assert workloads.sqlite_sync_primitive("Linux", p, False) == "fdatasync (checkpoints only)"


@pytest.mark.skipif(
    sys.platform == "win32",
    reason="Windows refuses to remove a directory while a file in it is open",
)
def test_a_working_directory_gone_is_named_as_the_cause(tmp_path):
    """SQLite reports a removed directory as "attempt to write a readonly database" or "disk
    I/O error"; the error names the directory that is gone instead."""
    import shutil

    work = tmp_path / "work"
    work.mkdir()
    w = workloads.JournalCommit(work, Pragmas("DELETE", "OFF"), 64)
    try:
        w.run(w.prepare(0))
        shutil.rmtree(work)
        with pytest.raises(
            FsyncbenchError,
            match=r"the working directory .*work is gone \(removed or "
            r"renamed while measuring",
        ):
            w.run(w.prepare(1))
    finally:
        w.close()
