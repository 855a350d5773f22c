"""Every durable write, checked from a real system-call trace (strace), and real failures
injected at each step of it (strace ``-e inject``).

The promise (README, store.write_durably): a report file is written to a temporary name in
its own directory, fsync'd, renamed over the final name, and the directory is fsync'd, so a
crash leaves either the old file or the complete new one and the new name survives power
loss (the order ext4's and XFS's documentation ask of applications: rename(2) alone is not
durable until the directory is synced; see fsync(2): "Calling fsync() does not necessarily
ensure that the entry in the directory containing the file has also reached disk. For that
an explicit fsync() on a file descriptor for the directory is also needed").
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import sampled

ROOT = Path(__file__).resolve().parent.parent
TRACED = "openat,write,fsync,fdatasync,rename,renameat,renameat2,unlink,unlinkat,close"
LINE = re.compile(r"^(?P<pid>\d+) +(?P<call>\w+)\((?P<args>.*)\) += (?P<ret>-?\d+)")


def _strace() -> str:
    if not sys.platform.startswith("linux"):
        pytest.skip("strace is Linux-only")
    exe = shutil.which("strace")
    if exe is None:
        pytest.skip("strace not installed (.ci/run installs it)")
    probe = subprocess.run([exe, "-qq", "-o", os.devnull, "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"strace cannot trace here: {probe.stderr.decode().strip()[:80]}")
    return exe


@dataclass(frozen=True)
class Call:
    pid: int
    name: str
    args: str
    ret: int


def trace(
    cmd: list[str], out: Path, *inject: str, env=None
) -> tuple[subprocess.CompletedProcess, list[Call]]:
    """Run ``cmd`` under ``strace -f -y`` (file descriptors shown with their paths); the
    completed process and the calls of :data:`TRACED`, in order."""
    extra = [arg for spec in inject for arg in ("-e", f"inject={spec}")]
    proc = subprocess.run(
        [_strace(), "-f", "-y", "-qq", "-e", f"trace={TRACED}", *extra, "-o", str(out), *cmd],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=300,
    )
    calls = []
    for line in out.read_text().splitlines():
        m = LINE.match(line)
        if m:
            calls.append(Call(int(m["pid"]), m["call"], m["args"], int(m["ret"])))
    return proc, calls


def _quoted(c: Call) -> list[str]:
    return re.findall(r'"([^"]*)"', c.args)


def _fd_path(c: Call) -> str:
    """The path strace -y shows for a call's first argument, a file descriptor."""
    m = re.match(r"\d+<([^>]*)>", c.args)
    return m[1] if m else ""


def durable_sequence(calls: list[Call], final: Path) -> list[str]:
    """The steps that made ``final``, read from the trace, each as a word, in order: the
    temporary file's exclusive creation, its writes (one word), its fsync, the rename onto
    ``final``, the directory's open and fsync. Raises AssertionError when nothing was
    renamed onto ``final``."""
    directory = str(final.parent)
    renames = [
        c
        for c in calls
        if c.name.startswith("rename") and c.ret == 0 and _quoted(c)[-1:] == [str(final)]
    ]
    assert renames, f"nothing was renamed onto {final}"
    rename = renames[-1]
    tmp = _quoted(rename)[0]
    assert str(Path(tmp).parent) == directory, "the temporary file is in another directory"
    steps: list[str] = []
    mine = [c for c in calls if c.pid == rename.pid]
    cut = mine.index(rename)
    for c in mine[:cut]:
        if c.name == "openat" and _quoted(c)[:1] == [tmp] and c.ret >= 0:
            steps.append("create-excl" if "O_CREAT|O_EXCL" in c.args else "open")
        elif c.name == "write" and _fd_path(c) == tmp and steps[-1:] != ["write"]:
            steps.append("write")
        elif c.name in ("fsync", "fdatasync") and _fd_path(c) == tmp:
            steps.append(c.name)
    steps.append("rename")
    for c in mine[cut + 1 :]:
        if c.name == "openat" and _quoted(c)[:1] == [directory] and c.ret >= 0:
            steps.append("open-dir")
        elif c.name == "fsync" and _fd_path(c) == directory:
            steps.append("fsync-dir")
            break
    return steps


def written_bytes(calls: list[Call], tmp_dir: Path, prefix: str) -> int:
    """Bytes written to temporary files named ``prefix*`` in ``tmp_dir``."""
    return sum(
        c.ret for c in calls if c.name == "write" and _fd_path(c).startswith(f"{tmp_dir}/{prefix}")
    )


DURABLE = ["create-excl", "write", "fsync", "rename", "open-dir", "fsync-dir"]


# --------------------------------------------------------------------------- the order


# strace of every durable write, and errors injected into its system calls: the system tier
# (each such test is marked; the fast twins at the end record the same calls in this process)

SNIPPET = """
import sys
from pathlib import Path
from fsyncbench.report import store
try:
    store.write_durably(Path(sys.argv[1]), sys.argv[2])
except Exception as exc:
    print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
    sys.exit(2)
"""


def _env() -> dict:
    return {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0"}


@pytest.mark.system
def test_write_durably_writes_temp_fsyncs_renames_and_fsyncs_the_directory(tmp_path):
    out = tmp_path / "reports" / "r.json"
    out.parent.mkdir()
    text = "x" * 100_000 + "\n"
    proc, calls = trace(
        [sys.executable, "-c", SNIPPET, str(out), text], tmp_path / "trace", env=_env()
    )
    assert proc.returncode == 0, proc.stderr
    assert durable_sequence(calls, out) == DURABLE
    assert (
        written_bytes(calls, out.parent, ".r.json.") == 100_001
    )  # every byte went to the temp file
    assert out.read_text() == text
    assert [p.name for p in out.parent.iterdir()] == ["r.json"]


@pytest.mark.system
def test_run_report_files_and_csv_are_each_written_durably(tmp_path):
    """JSON, Markdown, HTML and the raw-sample CSV of a real run, traced across the round
    worker processes: each final name is made the durable way."""
    out, csv = tmp_path / "reports", tmp_path / "samples.csv"
    proc, calls = trace(
        [
            sys.executable,
            "-m",
            "fsyncbench",
            "run",
            str(tmp_path),
            "--report-dir",
            str(out),
            "--format",
            "html",
            "--csv",
            str(csv),
            "--journal-mode",
            "wal",
            "--synchronous",
            "full",
            "--no-primitives",
            "--samples",
            "30",
            "--rounds",
            "1",
            "--warmup",
            "2",
            "--quiet",
        ],
        tmp_path / "trace",
    )
    assert proc.returncode in (0, 1), proc.stderr
    finals = sorted(out.iterdir())
    assert [p.suffix for p in finals] == [".html", ".json", ".md"]
    for final in [*finals, csv]:
        assert durable_sequence(calls, final) == DURABLE, final.name
    assert not [p for p in tmp_path.rglob(".*.tmp")]


@pytest.mark.system
def test_show_output_file_is_written_durably(tmp_path):
    report = sampled.save(sampled.report(1.0, seed=3), tmp_path / "r.json")
    for fmt in ("markdown", "html", "json"):
        target = tmp_path / f"out-{fmt}"
        proc, calls = trace(
            [
                sys.executable,
                "-m",
                "fsyncbench",
                "show",
                str(report),
                "--format",
                fmt,
                "-o",
                str(target),
            ],
            tmp_path / "trace",
        )
        assert proc.returncode == 0, proc.stderr
        assert durable_sequence(calls, target) == DURABLE, fmt


@pytest.mark.system
def test_powercut_run_record_is_written_durably(tmp_path):
    """The writer's run record (run.json), saved by the function the writer calls."""
    snippet = "\n".join(
        [
            "import sys",
            "from pathlib import Path",
            f"sys.path.insert(0, {str(ROOT / 'tests')!r})",
            "from factories import host",
            "from fsyncbench.model import Pragmas",
            "from fsyncbench.powercut import run",
            "p = Pragmas('WAL', 'FULL')",
            "run.save_run(Path(sys.argv[1]), run.RunRecord(run.RUN_FORMAT, run.RUN_VERSION, 'abc',"
            " '2026-12-01T00:00:00Z', 1, None, sys.argv[1], 'journal.db', '127.0.0.1:1', p, p,"
            " 'fdatasync', 64, host()))",
        ]
    )
    proc, calls = trace(
        [sys.executable, "-c", snippet, str(tmp_path)], tmp_path / "trace", env=_env()
    )
    assert proc.returncode == 0, proc.stderr
    from fsyncbench.powercut import run

    assert durable_sequence(calls, tmp_path / run.RUN_FILE) == DURABLE
    assert json.loads((tmp_path / run.RUN_FILE).read_text())["run_id"] == "abc"


# --------------------------------------------------------------------------- failures


def _nth(calls: list[Call], name: str, predicate) -> int:
    """1-based index, among the calls named ``name`` of the first process, of the first
    one matching ``predicate`` (strace's ``when=`` counts per process and system call)."""
    pid = calls[0].pid
    same = [c for c in calls if c.pid == pid and c.name == name]
    return next(i for i, c in enumerate(same, 1) if predicate(c))


@pytest.mark.system
@pytest.mark.parametrize("step", ["create", "write", "fsync", "rename", "fsync-dir"])
@pytest.mark.parametrize("existed", [False, True])
def test_a_failure_at_each_step_leaves_no_partial_file(tmp_path, step, existed):
    """A real error injected into one system call of the sequence: the error is raised
    (FsyncbenchError naming the file and the errno's text), no temporary file is left, and
    the final name holds either its old content or, when only the directory fsync failed
    (after the rename), the complete new content — never a part of it."""
    out = tmp_path / "d" / "r.json"
    out.parent.mkdir()
    if existed:
        out.write_text("old\n")
    text = "new content\n" * 1000
    cmd = [sys.executable, "-c", SNIPPET, str(out), text]
    _, clean = trace(cmd, tmp_path / "clean", env=_env())
    if existed:
        out.write_text("old\n")
    else:
        out.unlink()
    tmp_marker = "/d/.r.json."
    which = {
        "create": ("openat", lambda c: tmp_marker in c.args and "O_EXCL" in c.args, "EACCES"),
        "write": ("write", lambda c: tmp_marker in _fd_path(c), "ENOSPC"),
        "fsync": ("fsync", lambda c: tmp_marker in _fd_path(c), "EIO"),
        "rename": ("rename", lambda c: tmp_marker in c.args, "EXDEV"),
        "fsync-dir": ("fsync", lambda c: _fd_path(c) == str(out.parent), "EIO"),
    }[step]
    name, predicate, errno_name = which
    n = _nth(clean, name, predicate)
    proc, calls = trace(cmd, tmp_path / "faulty", f"{name}:error={errno_name}:when={n}", env=_env())
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"FsyncbenchError: cannot write {out}: "), proc.stderr
    assert os.strerror(getattr(__import__("errno"), errno_name)) in proc.stderr
    assert [p.name for p in out.parent.iterdir() if p.name != "r.json"] == []  # no temp left
    if step == "fsync-dir":
        assert out.read_text() == text
    elif existed:
        assert out.read_text() == "old\n"
    else:
        assert not out.exists()


# --------------------------------------------------------------------------- in this process

#: The fast twins: the same calls recorded here by wrapping os.open, os.fsync, os.replace and
#: os.unlink (the temporary file's creation, flush, rename, the directory's open and flush),
#: each file descriptor named by /proc/self/fd; errors injected by raising from a wrapper.
linux_fds = pytest.mark.skipif(
    not Path("/proc/self/fd").is_dir() or sys.platform != "linux",
    reason="names descriptors by /proc/self/fd; fsync is the flush (macOS: F_FULLFSYNC)",
)


class Recorder:
    def __init__(self, monkeypatch, fail: tuple[str, object] | None = None) -> None:
        self.calls: list[tuple[str, str, str]] = []  # (call, path, detail)
        self.fail = fail
        real_open, real_fsync, real_replace = os.open, os.fsync, os.replace

        def name(fd: int) -> str:
            return os.readlink(f"/proc/self/fd/{fd}")

        def check(call: str, path: str) -> None:
            if self.fail and self.fail[0] == call and self.fail[1](path):
                self.fail = None
                raise OSError(5, os.strerror(5))  # EIO

        def rec_open(path, flags, *args, **kw):
            excl = bool(flags & os.O_EXCL)
            check("create" if excl else "open", os.fspath(path))
            fd = real_open(path, flags, *args, **kw)
            self.calls.append(("create-excl" if excl else "open", os.fspath(path), ""))
            return fd

        def rec_fsync(fd):
            where = name(fd)
            check("fsync", where)
            real_fsync(fd)
            self.calls.append(("fsync", where, str(os.fstat(fd).st_size)))

        def rec_replace(src, dst):
            check("rename", os.fspath(src))
            real_replace(src, dst)
            self.calls.append(("rename", os.fspath(src), os.fspath(dst)))

        monkeypatch.setattr(os, "open", rec_open)
        monkeypatch.setattr(os, "fsync", rec_fsync)
        monkeypatch.setattr(os, "replace", rec_replace)

    def sequence(self, final: Path, size: int | None = None) -> list[str]:
        """The steps that made ``final``, as durable_sequence reads them from strace."""
        renames = [c for c in self.calls if c[0] == "rename" and c[2] == str(final)]
        assert renames, f"nothing was renamed onto {final}"
        tmp = renames[-1][1]
        assert str(Path(tmp).parent) == str(final.parent), "the temporary file is elsewhere"
        cut = self.calls.index(renames[-1])
        steps = []
        for call, path, detail in self.calls[:cut]:
            if path == tmp and call in ("create-excl", "open"):
                steps.append(call)
            elif path == tmp and call == "fsync":
                # every byte was in the file when it was flushed
                assert size is None or int(detail) == size, (detail, size)
                steps += ["write", "fsync"]
        steps.append("rename")
        for call, path, _ in self.calls[cut + 1 :]:
            if path == str(final.parent) and call == "open":
                steps.append("open-dir")
            elif path == str(final.parent) and call == "fsync":
                steps.append("fsync-dir")
                break
        return steps


@linux_fds
def test_write_durably_in_this_process_temp_fsync_rename_directory_fsync(tmp_path, monkeypatch):
    from fsyncbench.report import store

    out = tmp_path / "reports" / "r.json"
    out.parent.mkdir()
    text = "x" * 100_000 + "\n"
    rec = Recorder(monkeypatch)
    store.write_durably(out, text)
    assert rec.sequence(out, len(text)) == DURABLE
    assert out.read_text() == text
    assert [p.name for p in out.parent.iterdir()] == ["r.json"]


@linux_fds
@pytest.mark.parametrize("step", ["create", "fsync", "rename", "fsync-dir"])
@pytest.mark.parametrize("existed", [False, True])
def test_a_failure_at_each_step_in_this_process_leaves_no_partial_file(
    tmp_path, monkeypatch, step, existed
):
    """An error raised at one step (the write's own failure is the fsync's here: Python's
    buffered write reaches the file at the flush before it)."""
    from fsyncbench.errors import FsyncbenchError
    from fsyncbench.report import store

    out = tmp_path / "d" / "r.json"
    out.parent.mkdir()
    if existed:
        out.write_text("old\n")
    text = "new content\n" * 1000
    tmp_marker = "/d/.r.json."
    call, predicate = {
        "create": ("create", lambda p: tmp_marker in p),
        "fsync": ("fsync", lambda p: tmp_marker in p),
        "rename": ("rename", lambda p: tmp_marker in p),
        "fsync-dir": ("fsync", lambda p: p == str(out.parent)),
    }[step]
    Recorder(monkeypatch, (call, predicate))
    with pytest.raises(FsyncbenchError, match=f"^cannot write {out}: {os.strerror(5)}"):
        store.write_durably(out, text)
    assert [p.name for p in out.parent.iterdir() if p.name != "r.json"] == []  # no temp left
    if step == "fsync-dir":
        assert out.read_text() == text
    elif existed:
        assert out.read_text() == "old\n"
    else:
        assert not out.exists()


@linux_fds
def test_show_output_and_the_powercut_run_record_in_this_process_are_written_durably(
    tmp_path, monkeypatch
):
    from fsyncbench import cli
    from fsyncbench.model import Pragmas
    from fsyncbench.powercut import run

    report = sampled.save(sampled.report(1.0, seed=3), tmp_path / "r.json")
    rec = Recorder(monkeypatch)
    for fmt in ("markdown", "json"):
        target = tmp_path / f"out-{fmt}"
        assert cli.main(["show", str(report), "--format", fmt, "-o", str(target)]) == 0
        assert rec.sequence(target, target.stat().st_size) == DURABLE, fmt
    p = Pragmas("WAL", "FULL")
    from factories import host

    record = run.RunRecord(
        *(run.RUN_FORMAT, run.RUN_VERSION, "abc", "2026-12-01T00:00:00Z", 1, None),
        *(str(tmp_path), "journal.db", "127.0.0.1:1", p, p, "fdatasync", 64, host()),
    )
    run.save_run(tmp_path, record)
    final = tmp_path / run.RUN_FILE
    assert rec.sequence(final, final.stat().st_size) == DURABLE


@linux_fds
def test_run_report_files_and_csv_in_this_process_are_each_written_durably(tmp_path, monkeypatch):
    """The run of test_run_report_files_and_csv_are_each_written_durably, in one round in
    this process."""
    from fsyncbench import cli

    out, csv = tmp_path / "reports", tmp_path / "samples.csv"
    rec = Recorder(monkeypatch)
    argv = ["run", str(tmp_path), "--report-dir", str(out), "--format", "html"]
    argv += ["--csv", str(csv), "--journal-mode", "wal", "--synchronous", "full"]
    argv += ["--no-primitives", "--samples", "30", "--rounds", "1", "--warmup", "2", "--quiet"]
    assert cli.main(argv) in (0, 1)
    finals = sorted(out.iterdir())
    assert [p.suffix for p in finals] == [".html", ".json", ".md"]
    for final in [*finals, csv]:
        assert rec.sequence(final, final.stat().st_size) == DURABLE, final.name
    assert not [p for p in tmp_path.rglob(".*.tmp")]
