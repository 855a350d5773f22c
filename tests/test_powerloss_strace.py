"""The directory syncs ``fsyncbench powerloss`` models (a Python VFS cannot see them: the unix
VFS makes them inside unixSync and unixDelete) against the real calls of the same SQLite
build: strace(1) of apsw's SQLite on its default VFS, no recording shim, committing the
step journal as the recorder does (issue 31 item 2). Per pragma combination the sequence of
file syncs, directory syncs and unlinks after the setup must be the recording's, the
directory syncs included. System tier: needs strace and ptrace; its fast twin compares the
recording with strace output recorded once (:data:`RECORDED_STRACE`)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fsyncbench.model import Pragmas
from fsyncbench.powerloss import sqlite
from fsyncbench.powerloss.trace import Trace

COMMITS = 3
CONFIGS = tuple(
    Pragmas(mode, sync)
    for mode in ("DELETE", "TRUNCATE", "PERSIST", "WAL")
    for sync in ("OFF", "NORMAL", "FULL", "EXTRA")
)
MARK = "/fsyncbench-powerloss-mark"

#: The step journal on apsw's default VFS, as sqlite.record_commits runs it, with a
#: statfs(2) marker before the first commit, after each acknowledged commit and after the
#: connection closed.
_CHILD = textwrap.dedent(
    f"""
    import os, sys
    import apsw
    from fsyncbench.measure.workloads import SCHEMA, step_row
    base, commits = sys.argv[1], int(sys.argv[2])
    def mark(what):
        try:
            os.statvfs("{MARK}/" + what)
        except OSError:
            pass
    for label in sys.argv[3:]:
        mode, sync = label.split("/")
        where = os.path.join(base, label.replace("/", "-"))
        os.mkdir(where)
        conn = apsw.Connection(os.path.join(where, "journal.db"))
        conn.execute(f"PRAGMA journal_mode={{mode}}").fetchall()
        conn.execute(f"PRAGMA synchronous={{sync}}")
        conn.execute(SCHEMA)
        mark("begin/" + label)
        for seq in range(1, commits + 1):
            conn.execute("BEGIN")
            conn.execute("INSERT INTO steps VALUES (?, ?, ?, ?, ?)", step_row("r", seq, 200))
            conn.execute("COMMIT")
            mark(f"ack/{{seq}}")
        conn.close()
        mark("end/" + label)
    """
)

_MARK_RE = re.compile(re.escape(MARK) + r"/(begin|ack|end)/([^\"]+)")
_SYNC_RE = re.compile(r"\b(?:fsync|fdatasync)\(\d+<([^>]+)>\)\s+=\s+0")
_UNLINK_RE = re.compile(r"\bunlink(?:at)?\((?:AT_FDCWD(?:<[^>]*>)?, )?\"([^\"]+)\"")


def _events_from_strace(text: str, base: Path) -> dict[str, list[tuple[str, ...]]]:
    """Per label: ("sync", file name), ("dirsync",), ("delete", file name), ("ack", seq)
    between its begin and end markers, in order; the -shm index is left out (SQLite
    unlinks it itself, not through xDelete, and the recording never sees it)."""
    out: dict[str, list[tuple[str, ...]]] = {}
    label: str | None = None
    for line in text.splitlines():
        mark = _MARK_RE.search(line)
        if mark:
            which, what = mark.groups()
            if which == "begin":
                label = what
                out[label] = []
            elif which == "end":
                label = None
            elif label is not None:
                out[label].append(("ack", what))
            continue
        if label is None:
            continue
        here = base / label.replace("/", "-")
        sync = _SYNC_RE.search(line)
        if sync:
            path = Path(sync.group(1))
            if path == here:
                out[label].append(("dirsync",))
            elif path.parent == here:
                out[label].append(("sync", path.name.removeprefix("journal.db")))
            continue
        unlink = _UNLINK_RE.search(line)
        if unlink and line.rstrip().endswith("= 0"):
            path = Path(unlink.group(1))
            if path.parent == here and not path.name.endswith("-shm"):
                out[label].append(("delete", path.name.removeprefix("journal.db")))
    return out


def _events_from_recording(trace: Trace) -> list[tuple[str, ...]]:
    """The same events from a recorded trace after its barrier; file names without the
    database's name ("" for the database, "-journal", "-wal")."""
    events: list[tuple[str, ...]] = []
    for op in trace.ops[trace.barrier_index + 1 :]:
        name = op.file.removeprefix(trace.db_name)
        if op.kind in ("sync", "delete"):
            events.append((op.kind, name))
        elif op.kind == "dirsync":
            events.append(("dirsync",))
        elif op.kind == "ack":
            events.append(("ack", str(op.seq)))
    return events


#: strace(1) of _CHILD for delete/extra, delete/full and wal/full (3 commits), recorded on
#: Linux with apsw's SQLite 3.54.1 (pids left out, ``{base}`` for the directory): the fast
#: twin of the live comparison, and of the parser's, below.
RECORDED_STRACE = """\
statfs("/fsyncbench-powerloss-mark/begin/DELETE/EXTRA", 0x7ffc0000) = -1 ENOENT (No such file or directory)
fdatasync(4<{base}/DELETE-EXTRA/journal.db-journal>) = 0
fdatasync(5<{base}/DELETE-EXTRA>) = 0
fdatasync(4<{base}/DELETE-EXTRA/journal.db-journal>) = 0
fdatasync(3<{base}/DELETE-EXTRA/journal.db>) = 0
unlink("{base}/DELETE-EXTRA/journal.db-journal") = 0
fdatasync(4<{base}/DELETE-EXTRA>) = 0
statfs("/fsyncbench-powerloss-mark/ack/1", 0x7ffc0000) = -1 ENOENT (No such file or directory)
fdatasync(4<{base}/DELETE-EXTRA/journal.db-journal>) = 0
fdatasync(5<{base}/DELETE-EXTRA>) = 0
fdatasync(4<{base}/DELETE-EXTRA/journal.db-journal>) = 0
fdatasync(3<{base}/DELETE-EXTRA/journal.db>) = 0
unlink("{base}/DELETE-EXTRA/journal.db-journal") = 0
fdatasync(4<{base}/DELETE-EXTRA>) = 0
statfs("/fsyncbench-powerloss-mark/ack/2", 0x7ffc0000) = -1 ENOENT (No such file or directory)
fdatasync(4<{base}/DELETE-EXTRA/journal.db-journal>) = 0
fdatasync(5<{base}/DELETE-EXTRA>) = 0
fdatasync(4<{base}/DELETE-EXTRA/journal.db-journal>) = 0
fdatasync(3<{base}/DELETE-EXTRA/journal.db>) = 0
unlink("{base}/DELETE-EXTRA/journal.db-journal") = 0
fdatasync(4<{base}/DELETE-EXTRA>) = 0
statfs("/fsyncbench-powerloss-mark/ack/3", 0x7ffc0000) = -1 ENOENT (No such file or directory)
statfs("/fsyncbench-powerloss-mark/end/DELETE/EXTRA", 0x7ffc0000) = -1 ENOENT (No such file or directory)
statfs("/fsyncbench-powerloss-mark/begin/DELETE/FULL", 0x7ffc0000) = -1 ENOENT (No such file or directory)
fdatasync(4<{base}/DELETE-FULL/journal.db-journal>) = 0
fdatasync(5<{base}/DELETE-FULL>) = 0
fdatasync(4<{base}/DELETE-FULL/journal.db-journal>) = 0
fdatasync(3<{base}/DELETE-FULL/journal.db>) = 0
unlink("{base}/DELETE-FULL/journal.db-journal") = 0
statfs("/fsyncbench-powerloss-mark/ack/1", 0x7ffc0000) = -1 ENOENT (No such file or directory)
fdatasync(4<{base}/DELETE-FULL/journal.db-journal>) = 0
fdatasync(5<{base}/DELETE-FULL>) = 0
fdatasync(4<{base}/DELETE-FULL/journal.db-journal>) = 0
fdatasync(3<{base}/DELETE-FULL/journal.db>) = 0
unlink("{base}/DELETE-FULL/journal.db-journal") = 0
statfs("/fsyncbench-powerloss-mark/ack/2", 0x7ffc0000) = -1 ENOENT (No such file or directory)
fdatasync(4<{base}/DELETE-FULL/journal.db-journal>) = 0
fdatasync(5<{base}/DELETE-FULL>) = 0
fdatasync(4<{base}/DELETE-FULL/journal.db-journal>) = 0
fdatasync(3<{base}/DELETE-FULL/journal.db>) = 0
unlink("{base}/DELETE-FULL/journal.db-journal") = 0
statfs("/fsyncbench-powerloss-mark/ack/3", 0x7ffc0000) = -1 ENOENT (No such file or directory)
statfs("/fsyncbench-powerloss-mark/end/DELETE/FULL", 0x7ffc0000) = -1 ENOENT (No such file or directory)
statfs("/fsyncbench-powerloss-mark/begin/WAL/FULL", 0x7ffc0000) = -1 ENOENT (No such file or directory)
fdatasync(4<{base}/WAL-FULL/journal.db-wal>) = 0
statfs("/fsyncbench-powerloss-mark/ack/1", 0x7ffc0000) = -1 ENOENT (No such file or directory)
fdatasync(4<{base}/WAL-FULL/journal.db-wal>) = 0
statfs("/fsyncbench-powerloss-mark/ack/2", 0x7ffc0000) = -1 ENOENT (No such file or directory)
fdatasync(4<{base}/WAL-FULL/journal.db-wal>) = 0
statfs("/fsyncbench-powerloss-mark/ack/3", 0x7ffc0000) = -1 ENOENT (No such file or directory)
fdatasync(4<{base}/WAL-FULL/journal.db-wal>) = 0
fdatasync(3<{base}/WAL-FULL/journal.db>) = 0
unlink("{base}/WAL-FULL/journal.db-shm") = 0
unlink("{base}/WAL-FULL/journal.db-wal") = 0
statfs("/fsyncbench-powerloss-mark/end/WAL/FULL", 0x7ffc0000) = -1 ENOENT (No such file or directory)
"""


@pytest.fixture(scope="module")
def straced(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[tuple[str, ...]]]:
    if not sys.platform.startswith("linux"):  # (Git for Windows has an MSYS strace.exe)
        pytest.skip("strace(1) traces Linux system calls")
    strace = shutil.which("strace")
    if strace is None:
        pytest.skip("strace is not installed")
    base = tmp_path_factory.mktemp("strace").resolve()
    out = base / "strace.txt"
    argv = [
        strace,
        *("-f", "-qq", "-y", "-o", str(out)),
        *("-e", "signal=none", "-e", "trace=fsync,fdatasync,unlink,unlinkat,statfs"),
        *(sys.executable, "-c", _CHILD, str(base), str(COMMITS)),
        *(p.label.upper() for p in CONFIGS),
    ]
    env_root = str(Path(__file__).resolve().parents[1])
    done = subprocess.run(
        argv,
        capture_output=True,
        timeout=300,
        env={"PYTHONPATH": env_root, "PATH": "/usr/bin:/bin"},
    )
    if done.returncode != 0:
        err = done.stderr.decode(errors="replace").strip().splitlines()
        if err and "ptrace" in err[-1].lower():
            pytest.skip(f"strace cannot trace here: {err[-1]}")
        raise AssertionError(f"strace run failed: {err[-3:]}")
    events = _events_from_strace(out.read_text(), base)
    assert sorted(events) == sorted(p.label.upper() for p in CONFIGS)
    return events


@pytest.mark.system
@pytest.mark.parametrize("pragmas", CONFIGS, ids=lambda p: p.label)
def test_modelled_directory_syncs_are_the_real_calls(tmp_path, straced, pragmas):
    trace = sqlite.record_commits(tmp_path.resolve(), pragmas, COMMITS, 200, True)
    assert trace.dirsync_modelled
    real = straced[pragmas.label.upper()]
    recorded = _events_from_recording(trace)
    assert [e for e in real if e[0] == "ack"] == [("ack", str(s)) for s in range(1, COMMITS + 1)]
    # the whole sequence: every sync, unlink and directory sync in its place
    assert recorded == real
    # and the directory syncs alone, for a readable failure
    assert recorded.count(("dirsync",)) == real.count(("dirsync",))


@pytest.mark.system
def test_the_parser_sees_a_directory_sync_where_a_wrong_model_would_not(straced):
    # delete/extra syncs the directory after each unlink; delete/full never does: the
    # comparison above fails for a model that got either wrong
    extra, full = straced["DELETE/EXTRA"], straced["DELETE/FULL"]
    unlinks = [i for i, e in enumerate(extra) if e == ("delete", "-journal")]
    assert unlinks and all(extra[i + 1] == ("dirsync",) for i in unlinks)
    assert all(
        full[i + 1] != ("dirsync",) for i, e in enumerate(full) if e == ("delete", "-journal")
    )


def _recorded_events(base: Path) -> dict[str, list[tuple[str, ...]]]:
    return _events_from_strace(RECORDED_STRACE.replace("{base}", str(base)), base)


@pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="recorded on Linux (SQLite's unix VFS there)"
)
@pytest.mark.parametrize(
    "pragmas", [Pragmas("DELETE", "EXTRA"), Pragmas("DELETE", "FULL"), Pragmas("WAL", "FULL")],
    ids=lambda p: p.label,
)  # fmt: skip
def test_modelled_directory_syncs_are_the_recorded_real_calls(tmp_path, pragmas):
    """The twin of the two tests above: the recording against strace output recorded
    once, parsed by the same parser."""
    trace = sqlite.record_commits(tmp_path.resolve(), pragmas, COMMITS, 200, True)
    assert trace.dirsync_modelled
    real = _recorded_events(Path("/recorded"))[pragmas.label.upper()]
    assert [e for e in real if e[0] == "ack"] == [("ack", str(s)) for s in range(1, COMMITS + 1)]
    assert _events_from_recording(trace) == real
    if pragmas.journal_mode == "DELETE":  # each unlink, then (EXTRA only) the directory's sync
        unlinks = [i for i, e in enumerate(real) if e == ("delete", "-journal")]
        assert len(unlinks) == COMMITS
        after = {real[i + 1] == ("dirsync",) for i in unlinks}
        assert after == {pragmas.synchronous == "EXTRA"}
