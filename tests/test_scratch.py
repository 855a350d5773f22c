"""Working directories: owned, and a dead run's leftovers removed by the next run (real
processes and SIGKILL; owner records written by hand for the other cases)."""

import json
import os
import signal
import subprocess
import sys

import psutil
import pytest
from clitools import fsb, leftovers, start_long_run

from fsyncbench.measure import scratch


def _leftover(target, name, record):
    d = target / f".fsyncbench-{name}"
    d.mkdir()
    (d / "journal.db").write_bytes(b"x" * 100)
    if record is not None:
        (d / scratch.OWNER_FILE).write_text(json.dumps(record))
    return d


def _dead_pid():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_owner_record_is_written_and_removed_with_the_directory(tmp_path):
    with scratch.scratch_dir(tmp_path) as work:
        record = json.loads((work / scratch.OWNER_FILE).read_text())
        assert record["pid"] == os.getpid() and record["boot_id"] == scratch.boot_id()
        assert abs(record["started"] - psutil.Process().create_time()) < 1
        assert scratch.find_leftovers(tmp_path) == []  # our own directory is no leftover
    assert list(tmp_path.iterdir()) == []


def test_sweep_removes_dead_owners_and_leaves_live_and_unknown_ones(tmp_path):
    me = psutil.Process()
    (tmp_path / "users-file").write_text("keep")
    (tmp_path / ".fsyncbench-not-a-dir").write_text("a file of the user's")
    dead = _leftover(
        tmp_path, "dead", {"pid": _dead_pid(), "started": 1.0, "boot_id": scratch.boot_id()}
    )
    rebooted = _leftover(
        tmp_path,
        "reboot",
        {"pid": os.getpid(), "started": me.create_time(), "boot_id": "another-boot"},
    )
    reused = _leftover(
        tmp_path,
        "reused",
        {"pid": os.getpid(), "started": me.create_time() - 3600, "boot_id": scratch.boot_id()},
    )
    live = _leftover(
        tmp_path,
        "live",
        {"pid": os.getpid(), "started": me.create_time(), "boot_id": scratch.boot_id()},
    )
    unknown = _leftover(tmp_path, "old", None)
    messages = scratch.sweep_leftovers(tmp_path)
    assert not dead.exists() and not rebooted.exists() and not reused.exists()
    assert live.exists() and unknown.exists()
    assert (tmp_path / "users-file").read_text() == "keep"
    assert (tmp_path / ".fsyncbench-not-a-dir").read_text() == "a file of the user's"
    assert sum(m.startswith("removed ") for m in messages) == 3
    assert any(f"another fsyncbench (pid {os.getpid()})" in m for m in messages)
    assert any(m.startswith(f"left {unknown} alone: it has no owner record") for m in messages)


@pytest.mark.slow
def test_after_sigkill_the_next_run_removes_the_leftover_and_says_so(tmp_path):
    target = tmp_path / "t"
    target.mkdir()
    proc = start_long_run(target, tmp_path / "o1")
    proc.kill()  # SIGKILL; TerminateProcess on Windows: no cleanup either way
    proc.communicate(timeout=60)
    (left,) = leftovers(target)
    nxt = fsb(
        "run",
        target,
        "--report-dir",
        tmp_path / "o2",
        "--samples",
        "20",
        "--quiet",
        "--rounds",
        "1",
        "--no-primitives",
        "--journal-mode",
        "wal",
        "--synchronous",
        "off",
    )
    assert nxt.returncode == 0, nxt.stderr
    flat = " ".join(nxt.stderr.split())  # wrapped to the terminal
    assert f"fsyncbench: note: removed {target / left}, left behind by a run" in flat
    assert f"(pid {proc.pid}, no longer running)" in flat
    assert leftovers(target) == []


@pytest.mark.slow
def test_a_concurrent_run_is_left_alone(tmp_path):
    target = tmp_path / "t"
    target.mkdir()
    proc = start_long_run(target, tmp_path / "o1")
    try:
        (theirs,) = leftovers(target)
        nxt = fsb(
            "run",
            target,
            "--report-dir",
            tmp_path / "o2",
            "--samples",
            "20",
            "--quiet",
            "--rounds",
            "1",
            "--no-primitives",
            "--journal-mode",
            "wal",
            "--synchronous",
            "off",
        )
        assert nxt.returncode == 0, nxt.stderr
        assert f"another fsyncbench (pid {proc.pid}) is working in {target}" in nxt.stderr
        assert (target / theirs).is_dir()
    finally:
        if sys.platform == "win32":  # no Ctrl-C for one process there: ended, then swept
            proc.kill()
            proc.communicate(timeout=60)
            scratch.sweep_leftovers(target)
        else:
            proc.send_signal(signal.SIGINT)
            proc.communicate(timeout=60)
    assert leftovers(target) == []


#: Windows opens no directory (so nothing follows a renamed one), and refuses to rename one
#: while a file in it is open (a run's databases): a target cannot move under a run there.
posix_directories = pytest.mark.skipif(
    sys.platform == "win32", reason="no directory descriptors, no rename under open files"
)


@posix_directories
def test_a_target_renamed_mid_run_is_still_cleaned_and_the_message_is_true(tmp_path):
    """``mv`` of the target during a run: the working directory moved with it and must be
    removed from where it is now (a descriptor of the target follows the rename)."""
    target = tmp_path / "t"
    target.mkdir()
    (target / "users-file").write_text("keep")
    moved = tmp_path / "moved"
    with scratch.scratch_dir(target) as work:
        (work / "data").write_bytes(b"x" * 1000)
        target.rename(moved)
    assert sorted(p.name for p in moved.iterdir()) == ["users-file"]
    assert scratch.scratch_cleanup() == "working directory removed"


@posix_directories
def test_a_target_moved_where_it_cannot_be_followed_is_not_said_removed(tmp_path, monkeypatch):
    """Where the system cannot say where the target's descriptor went (before macOS support,
    the run was told nothing; so would any system without /proc/self/fd or F_GETPATH), the
    working directory is still there: the message says it could not be removed, never that
    it was."""
    monkeypatch.setattr(scratch, "_fd_path", lambda fd: None)
    monkeypatch.setattr(scratch, "_SCRATCH", {})
    target = tmp_path / "t"
    target.mkdir()
    with scratch.scratch_dir(target) as work:
        target.rename(tmp_path / "moved")
    assert [p.name for p in (tmp_path / "moved").iterdir()] == [work.name]
    assert scratch.scratch_cleanup() == f"could not remove {work}"
    # removed with the target: nothing is left anywhere, and the message says so
    monkeypatch.setattr(scratch, "_SCRATCH", {})
    again = tmp_path / "again"
    again.mkdir()
    with scratch.scratch_dir(again):
        import shutil

        shutil.rmtree(again)
    assert scratch.scratch_cleanup() == "working directory removed"


@pytest.mark.skipif(sys.platform == "win32", reason="fcntl(F_GETPATH) is macOS's (no fcntl)")
def test_macos_follows_a_moved_target_with_f_getpath(tmp_path, monkeypatch):
    """On macOS the target's descriptor names its new place through fcntl(F_GETPATH) (50, a
    MAXPATHLEN buffer filled with the path and NULs; Apple's fcntl(2)): recorded calls."""
    import fcntl

    calls = []
    moved = tmp_path / "moved"

    def fake_fcntl(fd, cmd, arg=0):
        calls.append((cmd, len(arg)))
        if fail:
            raise OSError(9, "Bad file descriptor")
        return os.fsencode(moved) + bytes(len(arg) - len(os.fsencode(moved)))

    monkeypatch.setattr(scratch, "sys", type("Darwin", (), {"platform": "darwin"}))
    monkeypatch.setattr(fcntl, "fcntl", fake_fcntl)
    fail = False
    assert scratch._fd_path(3) == moved
    assert calls == [(scratch.F_GETPATH, scratch.MAXPATHLEN)] and scratch.F_GETPATH == 50
    fail = True
    assert scratch._fd_path(3) is None


# --------------------------------------------------------------------------- in process
# Fast twins of the two real-process tests above: the leftover's owner record written by
# hand (a dead process's, or this live one's), then a tiny run through cli.main.

TINY_RUN = ["--samples", "5", "--quiet", "--rounds", "1", "--no-primitives"]
TINY_RUN += ["--journal-mode", "wal", "--synchronous", "off"]


def _run_in_process(capsys, target, out) -> tuple[int, str]:
    from fsyncbench import cli

    code = cli.main(["run", str(target), "--report-dir", str(out), *TINY_RUN])
    return code, capsys.readouterr().err


def test_a_dead_runs_leftover_is_removed_by_the_next_run_which_says_so(tmp_path, capsys):
    target = tmp_path / "t"
    target.mkdir()
    pid = _dead_pid()
    left = _leftover(target, "dead", {"pid": pid, "started": 1.0, "boot_id": scratch.boot_id()})
    code, err = _run_in_process(capsys, target, tmp_path / "o")
    assert code == 0, err
    flat = " ".join(err.split())
    assert f"fsyncbench: note: removed {left}, left behind by a run" in flat
    assert f"(pid {pid}, no longer running)" in flat
    assert leftovers(target) == []


def test_a_live_runs_directory_is_left_alone_by_a_run_in_process(tmp_path, capsys):
    target = tmp_path / "t"
    target.mkdir()
    me = psutil.Process()
    theirs = _leftover(
        target,
        "live",
        {"pid": os.getpid(), "started": me.create_time(), "boot_id": scratch.boot_id()},
    )
    code, err = _run_in_process(capsys, target, tmp_path / "o")
    assert code == 0, err
    assert f"another fsyncbench (pid {os.getpid()}) is working in {target}" in err
    assert theirs.is_dir() and leftovers(target) == [theirs.name]


def test_ctrl_c_held_while_the_directory_is_made_still_removes_it(tmp_path, monkeypatch):
    """Ctrl-C arriving while the directory is being made (sent to the process, as a terminal
    does, while other threads run) is held back, then raised as the hold ends: the directory
    must be removed then too, and the message say so."""
    made = scratch.tempfile.mkdtemp

    def mkdtemp_then_ctrl_c(*args, **kwargs):
        path = made(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGINT)  # pending: held until the owner record is in
        return path

    monkeypatch.setattr(scratch.tempfile, "mkdtemp", mkdtemp_then_ctrl_c)
    # as in a terminal, whatever this process inherited (a job started in the background by
    # a non-interactive shell ignores SIGINT: Python then installs no handler of its own)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt) as caught, scratch.scratch_dir(tmp_path):
            pytest.fail("the held Ctrl-C must end the run before it starts")
    finally:
        signal.signal(signal.SIGINT, previous)
    # raised as the hold ended, not where the signal came in
    assert caught.traceback[-1].name != "mkdtemp_then_ctrl_c"
    assert leftovers(tmp_path) == []
    ours = {p: removed for p, removed in scratch._SCRATCH.items() if p.parent == tmp_path}
    assert len(ours) == 1 and all(ours.values())  # what the error message says is true
