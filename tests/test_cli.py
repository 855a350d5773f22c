"""The CLI end to end through real subprocesses: real directories, real SQLite, real signals."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import this_platform
from clitools import assert_usage_error, fsb, in_process, leftovers, start_long_run

from fsyncbench.measure import timing as measure
from fsyncbench.report import store

QUICK = ["--samples", "30", "--budget-seconds", "5", "--warmup", "2", "--quiet"]

#: Linux's procfs: a directory that refuses new files even to root, and lets root pass
#: access(2); macOS and Windows have no such directory.
needs_proc = pytest.mark.skipif(
    not this_platform.LINUX, reason="/proc (Linux's procfs) exists on Linux only"
)
#: The device whose every write fails with ENOSPC (Linux's null(4) page); not on macOS or
#: Windows.
needs_dev_full = pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
#: A named pipe in the filesystem (os.mkfifo): POSIX only.
needs_fifo = pytest.mark.skipif(
    not hasattr(os, "mkfifo"), reason="no named pipes in the filesystem (os.mkfifo) here"
)
#: The crash matrix forks its children and SIGKILLs them (not on Windows).
needs_fork = pytest.mark.skipif(
    not hasattr(os, "fork") or not hasattr(signal, "SIGKILL"), reason="needs os.fork and SIGKILL"
)
#: Signals sent to one process (Windows can only end one: send_signal takes SIGTERM there).
needs_posix_signals = pytest.mark.skipif(
    sys.platform == "win32", reason="POSIX signals sent to one process"
)


@pytest.fixture(scope="module")
def disk_run(tmp_path_factory):
    """One real run on the ext4 disk (tmp_path lives there on this machine)."""
    target = tmp_path_factory.mktemp("target")
    (target / "users-file.txt").write_text("untouched")
    out = tmp_path_factory.mktemp("out")
    proc = fsb("run", target, "--report-dir", out, *QUICK)
    return target, out, proc


@pytest.mark.slow
def test_run_measures_nine_configs_and_primitives(disk_run):
    target, out, proc = disk_run
    assert proc.returncode == 0, proc.stderr
    for mode in ("delete", "truncate", "wal"):
        for sync in ("off", "normal", "full"):
            assert f"{mode}/{sync}" in proc.stdout
    for name in this_platform.primitive_names(target):
        assert name in proc.stdout
    assert "p50" in proc.stdout and "p99" in proc.stdout and "Path verdict:" in proc.stdout
    assert leftovers(target) == []
    assert [p.name for p in target.iterdir()] == ["users-file.txt"]
    assert (target / "users-file.txt").read_text() == "untouched"


def test_run_writes_json_and_markdown_reports(disk_run):
    _target, out, proc = disk_run
    jsons = list(out.glob("*.json"))
    mds = list(out.glob("*.md"))
    assert len(jsons) == 1 and len(mds) == 1
    assert str(jsons[0]) in proc.stderr  # "Report written: ...": not part of the result
    assert "Report written" not in proc.stdout
    report = store.load_report(jsons[0])
    assert report.schema_version == store.SCHEMA_VERSION
    commits = [r for r in report.results if r.kind == "commit"]
    # DELETE, TRUNCATE, WAL x OFF, NORMAL, FULL (on macOS each with fullfsync off and on)
    assert [r.name for r in commits] == this_platform.labels()
    assert [r.name for r in report.results if r.kind in ("write", "flush")] == (
        this_platform.primitive_names(_target)
    )
    for r in report.results:
        assert len(r.samples_ns) == r.summary.count == 30
        ci = r.summary.p50_ci_ns
        assert ci is None or ci[0] <= r.summary.p50_ns <= ci[1]
        # 8 rounds (the default) of 3-4 samples, each spread over at least 5 slices: one
        # sample per slice
        assert set(r.slice_rounds) == set(range(8)) and r.slice_counts == (1,) * 30
    for r in commits:
        assert r.requested == r.effective
    assert report.command_line[:2] == ("fsyncbench", "run")
    assert mds[0].read_text().splitlines()[4] == "## Bottom line"


def test_run_records_device_flush_counters(disk_run):
    """On this VM's disk each timed fdatasync reaches the virtio disk as a flush (Linux's
    disk statistics; other systems have no flush counters)."""
    _target, out, _proc = disk_run
    report = store.load_report(next(out.glob("*.json")))
    if not report.host.target.disks or not report.host.target.disks[0].has_flush_counters:
        pytest.skip("no device flush counters on this machine")
    sync = this_platform.sync_name()
    fdatasync = next(r for r in report.results if r.primitive == sync and r.kind == "flush")
    # the counters are read around every slice, warmup included, so its syncs count too;
    # each of the 8 rounds (processes) warms up (2) and re-warms each later slice (2 each),
    # at least once a slice: a warmup stops early at a share of the slice's budget (a busy
    # machine's slow syncs)
    per_round = [fdatasync.slice_rounds.count(k) for k in range(8)]
    full = sum(2 + (n - 1) * measure.RESUME_WARMUP for n in per_round)
    assert sum(per_round) <= fdatasync.warmup <= full
    assert fdatasync.syncs_issued == 30 + fdatasync.warmup
    assert min(d.flushes for d in fdatasync.device_flushes) >= fdatasync.syncs_issued


@pytest.mark.slow
def test_show_renders_all_formats(disk_run):
    _target, out, _proc = disk_run
    path = next(out.glob("*.json"))
    text = fsb("show", path)
    assert text.returncode == 0 and "Path verdict:" in text.stdout
    md = fsb("show", path, "--format", "markdown")
    assert md.returncode == 0 and md.stdout.startswith("# fsyncbench run")
    js = fsb("show", path, "--format", "json")
    assert json.loads(js.stdout) == json.loads(path.read_text())


@pytest.mark.slow
def test_run_on_tmpfs_is_no_flush(tmp_path):
    shm = Path("/dev/shm")
    if not shm.is_dir():
        pytest.skip("no /dev/shm")
    proc = fsb(
        "run",
        shm,
        "--report-dir",
        tmp_path,
        "--journal-mode",
        "delete,wal",
        "--synchronous",
        "off,full",
        *QUICK,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Path verdict: no_flush" in proc.stdout
    report = store.load_report(next(tmp_path.glob("*.json")))
    assert report.verdict.path_verdict == "no_flush"
    assert report.host.target.mount.fs_type == "tmpfs"
    assert leftovers(shm) == []


@pytest.mark.slow
def test_host_command(tmp_path):
    proc = fsb("host", tmp_path)
    assert proc.returncode == 0 and "filesystem" in proc.stdout
    data = json.loads(fsb("host", tmp_path, "--format", "json").stdout)
    assert data["target"]["path"] == str(tmp_path)
    assert json.loads(fsb("host", tmp_path, "--json").stdout)["target"] == data["target"]


def test_missing_dir(tmp_path):
    assert_usage_error(
        fsb("run", tmp_path / "nope"), f"directory {tmp_path / 'nope'} does not exist"
    )


def test_dir_is_a_file(tmp_path):
    f = tmp_path / "f"
    f.write_text("")
    assert_usage_error(fsb("run", f), f"{f} is not a directory")


@pytest.mark.slow
@needs_proc
def test_dir_not_writable(tmp_path):
    proc = fsb("run", "/proc", "--report-dir", tmp_path, *QUICK)
    assert proc.returncode == 2
    assert len(proc.stderr.splitlines()) == 1
    assert proc.stderr.startswith("fsyncbench: error: cannot create a working directory in /proc")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "option,value,line",
    [
        (
            "--journal-mode",
            "delete,bogus",
            "invalid journal_mode bogus: allowed values are delete, truncate, persist, memory, wal, off",
        ),
        (
            "--synchronous",
            "fast",
            "invalid synchronous fast: allowed values are off, normal, full, extra",
        ),
        ("--fullfsync", "maybe", "invalid fullfsync maybe: allowed values are on, off"),
        ("--samples", "0", "--samples must be at least 1, got 0"),
        ("--budget-seconds", "-1", "--budget-seconds must be positive and at most 86400, got -1"),
        ("--warmup", "-3", "--warmup must be 0 or more, got -3"),
        ("--payload-bytes", "0", "--payload-bytes must be between 1 and 67108864, got 0"),
        (
            "--payload-bytes",
            "3000000000",
            "--payload-bytes must be between 1 and 67108864, got 3000000000",
        ),
        ("--budget-seconds", "inf", "--budget-seconds must be positive and at most 86400, got inf"),
        ("--budget-seconds", "nan", "--budget-seconds must be positive and at most 86400, got nan"),
        (
            "--journal-mode",
            "",
            "invalid journal_mode '': an empty item (allowed values are delete, truncate, persist, memory, wal, off)",
        ),
        (
            "--samples",
            "many",
            "argument --samples: invalid int value: 'many' (see fsyncbench run --help)",
        ),
    ],
)
def test_bad_values(tmp_path, option, value, line):
    assert_usage_error(fsb("run", tmp_path, option, value, "--report-dir", tmp_path / "out"), line)
    assert list(tmp_path.iterdir()) == []


def test_empty_output_path_is_refused(tmp_path):
    assert_usage_error(
        fsb("run", tmp_path, "-o", ""),
        "argument --output/-o: empty path (see fsyncbench run --help)",
    )
    assert_usage_error(
        fsb("run", tmp_path, "--report-dir", ""),
        "argument --report-dir: empty path (see fsyncbench run --help)",
    )


@needs_proc
def test_output_under_proc_is_refused_before_measuring(tmp_path):
    proc = fsb("run", tmp_path, "--report-dir", "/proc/reports", *QUICK)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1
    assert "output directory /proc/reports is not writable" in proc.stderr
    assert proc.stdout == "" and list(tmp_path.iterdir()) == []


@needs_proc
def test_an_output_file_under_proc_names_what_failed(tmp_path):
    # root passes access(2) on /proc, and creating a file there fails with ENOENT: the
    # message says creating failed, not that the directory is missing
    proc = fsb("run", tmp_path, "-o", "/proc/version", *QUICK)
    assert_usage_error(
        proc,
        "cannot write /proc/version: directory /proc refuses new files (creating one there "
        "failed: No such file or directory)"
        if os.geteuid() == 0
        else "cannot write /proc/version: directory /proc is not writable",
    )


def test_unwritable_output(tmp_path):
    f = tmp_path / "file"
    f.write_text("")
    proc = fsb("run", tmp_path, "--report-dir", f / "reports", *QUICK)
    assert_usage_error(proc, f"output {f / 'reports'} is not a directory ({f} is a file)")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


@pytest.mark.slow
def test_show_missing_corrupt_and_newer(tmp_path):
    missing = tmp_path / "none.json"
    assert_usage_error(fsb("show", missing), f"report {missing} does not exist")
    bad = tmp_path / "bad.json"
    bad.write_text("{oops")
    assert fsb("show", bad).stderr.startswith(f"fsyncbench: error: {bad} is not valid JSON")
    newer = tmp_path / "newer.json"
    newer.write_text(json.dumps({"schema_version": store.SCHEMA_VERSION + 1}))
    proc = fsb("show", newer)
    assert proc.returncode == 2 and proc.stderr.rstrip().endswith("upgrade fsyncbench")


def _workers_of(target) -> list:
    """Live worker processes (``python -m fsyncbench.measure.rounds``) working under ``target``."""
    import psutil

    found = []
    for p in psutil.process_iter(["cmdline"]):
        cmd = " ".join(p.info["cmdline"] or ())
        if "fsyncbench.measure.rounds" in cmd and str(target) in cmd:
            found.append(p)
    return found


@pytest.mark.slow
@pytest.mark.parametrize("rounds", ["1", "3"])
@needs_posix_signals
@pytest.mark.parametrize(
    "signum",
    # names, not attributes: Windows' signal module has no SIGHUP or SIGQUIT
    [getattr(signal, n, None) for n in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT")],
)
def test_ctrl_c_and_sigterm_clean_up_and_say_where(tmp_path, signum, rounds):
    """The signal goes to fsyncbench alone (not its process group): with rounds, the worker
    it started must be stopped and waited for, and nothing left behind."""
    out = tmp_path / "out"
    target = tmp_path / "t"
    target.mkdir()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fsyncbench",
            "run",
            str(target),
            "--report-dir",
            str(out),
            "--samples",
            "100000000",
            "--budget-seconds",
            "60",
            "--quiet",
            "--rounds",
            rounds,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )

    def measuring() -> bool:  # a scratch directory; with rounds, the worker's inside it
        inner = [d for d in target.glob(".fsyncbench-*/.fsyncbench-*")]
        return bool(leftovers(target)) and (rounds == "1" or bool(inner))

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not measuring():
        time.sleep(0.05)
    time.sleep(0.5)
    proc.send_signal(signum)
    _stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 2
    # which workload the signal lands in depends on the machine's speed (0.1 s slices)
    assert stderr.startswith("fsyncbench: interrupted while measuring "), stderr
    assert stderr.rstrip().endswith("no report written"), stderr
    assert len(stderr.splitlines()) == 1
    assert leftovers(target) == []
    assert not out.exists()
    assert _workers_of(target) == []


def _small_tmpfs(mnt: Path, size: str) -> None:
    """Mount a real tmpfs of ``size`` at ``mnt`` (made here), or skip without root."""
    mnt.mkdir()
    if not this_platform.LINUX:
        pytest.skip("a tmpfs of a given size (mount -t tmpfs -o size=) is Linux's")
    if (
        os.geteuid() != 0
        or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)], capture_output=True
        ).returncode
        != 0
    ):
        pytest.skip("needs root to mount a small tmpfs")


@pytest.mark.slow
def test_disk_full_mid_run(tmp_path):
    """A real 256 KiB tmpfs fills up mid-run: ENOSPC named, nothing left behind."""
    mnt = tmp_path / "small"
    _small_tmpfs(mnt, "256k")
    try:
        proc = fsb(
            "run",
            mnt,
            "--report-dir",
            tmp_path / "out",
            "--journal-mode",
            "delete",
            "--synchronous",
            "off",
            "--samples",
            "5000",
            "--payload-bytes",
            "4096",
            "--no-primitives",
            "--quiet",
        )
        assert proc.returncode == 2
        assert len(proc.stderr.splitlines()) == 1
        assert "no space left on the device (ENOSPC)" in proc.stderr
        assert list(mnt.iterdir()) == []
        assert not (tmp_path / "out").exists()
    finally:
        subprocess.run(["umount", str(mnt)])


PUBLISHED = [
    ("no persistence", 20, 3, 17967, 37000, 100),
    ("checkpoint per turn", 6, 1, 6167, 10400, 28),
    ("step journal", 3, 1, 1233, 10400, 28),
    ("journal + idempotency keys", 0, 0, 1233, 10400, 28),
]


@pytest.mark.slow
@needs_fork
def test_crash_json_gives_the_published_table(tmp_path):
    """--format json prints the crash report as saved (kind "crash", the experiment in
    ``crash``)."""
    target = tmp_path / "t"
    target.mkdir()
    proc = fsb("crash", target, "--json", "--report-dir", tmp_path / "saved")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["kind"] == "crash" and data["results"] == []
    got = [
        (
            r["label"],
            r["kills_causing_duplicates"],
            r["worst_duplicates"],
            round(r["mean_extra_tokens"]),
            r["worst_extra_tokens"],
            round(r["worst_extra_pct"]),
        )
        for r in data["crash"]["matrix"]["rows"]
    ]
    assert got == PUBLISHED
    assert data["crash"]["matrix"]["kill_count"] == 120
    assert data["crash"]["replay"]["replay_effects"] == 0
    assert data["crash"]["reorder"]["stopped"] is True
    assert len(data["crash"]["matrix"]["journal_commit_ns"]) > 0
    assert list(target.iterdir()) == []
    (saved,) = (tmp_path / "saved").glob("*-crash.json")
    assert saved.read_text() == proc.stdout


@pytest.mark.slow
@needs_fork
def test_crash_text_table(tmp_path):
    proc = fsb("crash", tmp_path, "--synchronous", "normal", "--no-report")
    assert proc.returncode == 0, proc.stderr
    # text tables are tabulate "simple", as in run's report (Markdown only with --format markdown)
    assert re.search(r"^step journal +3 +1 +1,233 +10,400 \(\+28 %\)$", proc.stdout, re.M), (
        proc.stdout
    )
    assert "|" not in proc.stdout
    assert "37,000 (+100 %)" in proc.stdout and "6,167" in proc.stdout
    assert "journal wal/normal" in proc.stdout
    assert "stopped: non-determinism at step 4" in " ".join(proc.stdout.split())


@pytest.mark.slow
def test_crash_bad_values(tmp_path):
    assert_usage_error(
        fsb("crash", tmp_path, "--journal-mode", "nope"),
        "invalid journal_mode nope: allowed values are delete, truncate, persist, memory, wal, off",
    )
    assert_usage_error(
        fsb("crash", tmp_path, "--synchronous", "full,off"),
        "crash takes one journal_mode and one synchronous value",
    )
    assert_usage_error(
        fsb("crash", tmp_path / "missing"), f"directory {tmp_path / 'missing'} does not exist"
    )


def test_show_refuses_to_overwrite_the_report_it_shows(disk_run):
    _target, out, _proc = disk_run
    path = next(out.glob("*.json"))
    before = path.read_bytes()
    for option in ("-o", "--csv"):
        proc = fsb("show", path, option, path)
        assert proc.returncode == 2 and "is the report being shown" in proc.stderr
    assert path.read_bytes() == before


def test_names_from_report_content_stay_in_the_output_directory(disk_run, tmp_path):
    """The hostname ends up in file names: a crafted report cannot climb out. (created_utc
    does too, but one that is no ISO 8601 time is refused when the report is read.)"""
    _target, out, _proc = disk_run
    data = json.loads(next(out.glob("*.json")).read_text())
    data["host"]["hostname"] = "x/../../K19escaped"
    crafted = tmp_path / "crafted.json"
    crafted.write_text(json.dumps(data))
    dest = tmp_path / "deep" / "O"
    proc = fsb("audit", "--from", crafted, "--report-dir", dest)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.parent for p in tmp_path.rglob("*K19escaped*")) == [dest, dest]
    data["created_utc"] = "x/../../K19escaped"
    crafted.write_text(json.dumps(data))
    assert_usage_error(
        fsb("audit", "--from", crafted, "--report-dir", dest),
        f"{crafted} is not a valid fsyncbench report: created_utc: 'x/../../K19escaped' is "
        "not an ISO 8601 time",
    )


@pytest.mark.slow
def test_a_report_with_a_5000_digit_number_is_one_line(tmp_path):
    bad = tmp_path / "big.json"
    bad.write_text('{"schema_version": ' + "9" * 5000 + "}")
    for argv in (("show", bad), ("audit", "--from", bad), ("compare", bad, bad)):
        proc = fsb(*argv)
        assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, proc.stderr
        assert "Traceback" not in proc.stderr


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX shell closing descriptor 1 (>&-)")
def test_a_closed_stdout_is_one_line_and_exit_2(tmp_path):
    """Started with file descriptor 1 closed (``fsyncbench host >&-``: Python's sys.stdout
    is None): like ``ls >&-``, one error line and exit 2, not a traceback."""
    proc = subprocess.run(
        ["sh", "-c", '"$0" -m fsyncbench host "$1" >&-', sys.executable, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (proc.returncode, proc.stderr) == (
        2,
        "fsyncbench: error: cannot write to standard output: it is closed\n",
    )


@pytest.mark.slow
@needs_dev_full
def test_run_with_stdout_on_a_full_device_keeps_its_report(tmp_path):
    out = tmp_path / "out"
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "fsyncbench",
                "run",
                str(tmp_path),
                "--report-dir",
                str(out),
                "--journal-mode",
                "wal",
                "--synchronous",
                "full",
                *QUICK,
            ],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
        )
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert len(list(out.glob("*.json"))) == 1  # saved before printing


@pytest.mark.slow
def test_a_failing_csv_leaves_no_reports_behind(tmp_path):
    """Outputs are all or nothing: the CSV on a full (real, tiny) tmpfs fails after the JSON
    and Markdown were written, and those are removed again."""
    small = tmp_path / "small"
    _small_tmpfs(small, "64k")
    try:
        (small / "filler").write_bytes(b"\0" * 60_000)
        out = tmp_path / "out"
        proc = fsb(
            "run",
            tmp_path,
            "--report-dir",
            out,
            "--samples",
            "3000",
            "--rounds",
            "1",
            "--no-primitives",
            "--journal-mode",
            "wal",
            "--synchronous",
            "off",
            "--quiet",
            "--csv",
            small / "samples.csv",
        )
        assert proc.returncode == 2, proc.stderr
        assert len(proc.stderr.splitlines()) == 1 and "Traceback" not in proc.stderr
        assert f"cannot write {small / 'samples.csv'}" in proc.stderr
        assert list(out.glob("*")) == [] and not (small / "samples.csv").exists()
        assert sorted(p.name for p in small.iterdir()) == ["filler"]
    finally:
        subprocess.run(["umount", str(small)], capture_output=True)


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_reader_that_goes_away_is_no_error_and_the_gate_still_speaks(tmp_path, fmt):
    """``fsyncbench show R --max-p99 1ns | head -1``: the closed pipe is the conventional
    silent end of the output; the gate's exit 1 and its lines (on stderr) survive."""
    import sampled

    path = sampled.save(sampled.report(1.0, seed=0, n=20_000), tmp_path / "r.json")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fsyncbench",
            "show",
            str(path),
            "--format",
            fmt,
            "--max-p99",
            "1ns",
            "--csv",
            str(tmp_path / "s.csv"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    proc.stdout.close()  # the reader is gone before a byte is read
    stderr = proc.stderr.read()
    proc.wait(timeout=60)
    assert proc.returncode == 1, stderr
    assert "Traceback" not in stderr and "Broken pipe" not in stderr
    assert "GATE FAILED [max-p99] wal/full" in stderr
    assert (tmp_path / "s.csv").exists()


@needs_dev_full
def test_a_full_stdout_is_one_line_and_exit_2(tmp_path):
    import sampled

    path = sampled.save(sampled.report(1.0, seed=0), tmp_path / "r.json")
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "fsyncbench", "show", str(path)],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
        )
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "fsyncbench: error: cannot write to standard output: No space left on device"
    ]


@pytest.mark.slow
def test_target_removed_mid_run_names_the_real_cause(tmp_path):
    """rm -r of the target while measuring: one line, exit 2, nothing left running."""
    target = tmp_path / "t"
    target.mkdir()
    proc = start_long_run(
        target,
        tmp_path / "out",
        "--no-primitives",
        "--journal-mode",
        "delete",
        "--synchronous",
        "off",
        settle_s=0.5,
    )
    while target.exists():  # SQLite creates and deletes its journal meanwhile: retry
        shutil.rmtree(target, ignore_errors=True)
    _out, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 2, stderr
    assert len(stderr.splitlines()) == 1 and "Traceback" not in stderr, stderr
    # which call fails first (and whether the directory is already gone then) is a race;
    # the cause is named whenever it is (tests/test_workloads.py, deterministic)
    assert stderr.startswith("fsyncbench: error: "), stderr


@pytest.mark.parametrize(
    "args,line",
    [
        (
            ("--max-p99", "-5ms"),
            "invalid --max-p99 '-5ms': give a number with a unit, e.g. 10ms, 500us, 2s",
        ),
        (
            ("--synchronous", "full,"),
            "invalid synchronous 'full,': an empty item (allowed values are "
            "off, normal, full, extra)",
        ),
        (
            ("--journal-mode", ",wal"),
            "invalid journal_mode ',wal': an empty item (allowed values are "
            "delete, truncate, persist, memory, wal, off)",
        ),
        (
            ("--fullfsync", "on,"),
            "invalid fullfsync 'on,': an empty item (allowed values are on, off)",
        ),
        (
            ("--min-samples", "2000000"),
            "--min-samples 2000000 is above the most samples one configuration may take (200000)",
        ),
        (("--rounds", "0"), "--rounds must be between 1 and 50, got 0"),
        (("--rounds", "-2"), "--rounds must be between 1 and 50, got -2"),
        pytest.param(
            ("--report-dir", "/dev/null"),
            "output /dev/null is not a directory",
            marks=pytest.mark.skipif(sys.platform == "win32", reason="no /dev/null on Windows"),
        ),
        pytest.param(
            ("--output", "/dev/zero"),
            "cannot write /dev/zero: not a regular file (the other files written to "
            "are a FIFO, the null device and this session's own terminal)",
            marks=pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero"),
        ),
        (
            ("--max-p99", "1ms", "--config", "wal/fast"),
            "unknown configuration wal/fast: this run measures "
            "write (no sync), write+fsync, write+fdatasync, write (O_DSYNC), write (O_SYNC), delete/off, "
            "delete/normal, delete/full, truncate/off, truncate/normal, truncate/full, wal/off, wal/normal, "
            "wal/full; did you mean wal/off?"
            if this_platform.LINUX
            # this platform's primitives and configurations, named before measuring
            else this_platform.unknown_configuration("wal/fast", this_platform.run_names()),
        ),
    ],
)
@pytest.mark.slow
def test_bad_run_options_are_one_line_before_anything_is_done(tmp_path, args, line):
    (tmp_path / "users-file").write_text("keep")
    proc = fsb("run", tmp_path, "--quiet", *args)
    assert_usage_error(proc, line)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["users-file"]


def test_bad_audit_sweep_size_names_its_own_option(tmp_path):
    assert_usage_error(
        fsb("audit", tmp_path, "--sweep-max-mib", "0"), "--sweep-max-mib must be at least 1"
    )


@pytest.mark.slow
@needs_posix_signals
def test_ctrl_c_while_starting_up_is_one_line_not_a_traceback(tmp_path):
    """Ctrl-C in the first second lands in the middle of importing numpy: still one line."""
    for delay in (0.05, 0.1, 0.15, 0.2, 0.3, 0.45):
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "fsyncbench",
                "run",
                str(tmp_path),
                "--quiet",
                "--report-dir",
                str(tmp_path / "out"),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=120)
        if "Traceback" in err or err.startswith("Fatal Python error"):
            # only CPython's own start-up (site, runpy finding the package) may be hit
            # before any fsyncbench code runs: no frame of fsyncbench (or of what it imports)
            assert "fsyncbench" + os.sep not in err and "numpy" not in err, (delay, err)
            continue
        # before Python installs its own handler the signal simply ends the process
        assert proc.returncode in (2, -signal.SIGINT), (delay, proc.returncode, err)
        assert len(err.splitlines()) <= 1, err
        assert leftovers(tmp_path) == []


def test_the_default_text_output_fits_a_screen_and_says_where_the_rest_is(disk_run):
    """A run's terminal output is the bottom line and a compact table: at most 47 lines of at
    most 100 columns (with the "Report written" line on stderr), every configuration in it;
    findings, counters, host, method and glossary only in the saved report and --verbose."""
    target, out, proc = disk_run
    lines = proc.stdout.splitlines() + proc.stderr.splitlines()
    # this quick run (30 samples) has no intervals, so its bottom line carries caveats a
    # default run's does not; the default run itself is the example report, below. Linux
    # measures 14 workloads; where a platform measures more (macOS: 24, with fullfsync off
    # and on), each one more is a line more in each part of the table (its column groups)
    names = this_platform.run_names(target)
    parts = len(re.findall(r"^configuration ", proc.stdout, re.M))
    # 47: the table wraps its interval header and a long sync cell to fit 100 columns; a
    # busy machine adds the paragraph that says what disturbed the run (up to 6 lines)
    busy = 6 if "Disturbed:" in proc.stdout else 0
    budget = 47 + busy + max(0, len(names) - 14) * parts
    assert len(proc.stdout.splitlines()) <= budget, proc.stdout
    example = sorted(
        (Path(__file__).resolve().parent.parent / "examples" / "report").glob("*.json")
    )
    default = fsb("show", example[-1])
    # + "Report written"; 47: the machine's line and the precision line joined the 40, the
    # table's wrapped header and sync cell the 45
    assert len(default.stdout.splitlines()) <= 47 - 1, default.stdout
    assert max(map(len, lines)) <= 100  # COLUMNS=100 (conftest): "Report written" wraps too
    # the machine's line first (quiet, or what disturbed the run), then the answer
    assert proc.stdout.splitlines()[2].startswith(("Machine:", "Disturbed:", "!! Disturbed:"))
    assert any(line.startswith("Choose:") for line in proc.stdout.splitlines()[3 : 10 + busy])
    for name in names:
        assert re.search(rf"^{re.escape(name)} ", proc.stdout, re.M), name
    for heading in ("Findings", "Host and storage stack", "Glossary"):
        assert heading not in proc.stdout
    assert "--verbose, or --format markdown." in " ".join(proc.stdout.split())
    report = next(out.glob("*.json"))
    whole = fsb("show", report, "--verbose")
    assert whole.returncode == 0, whole.stderr
    for heading in ("Bottom line", "Findings", "Host and storage stack", "Glossary"):
        assert f"\n{heading}\n===" in whole.stdout
    assert fsb("show", report).stdout == proc.stdout  # show prints what run printed


@pytest.mark.slow
def test_the_summary_says_nothing_the_whole_report_does_not(disk_run):
    """Every figure with a unit in the summary is also in the whole report (--verbose)."""
    _target, out, _proc = disk_run
    report = next(out.glob("*.json"))
    brief, whole = fsb("show", report).stdout, fsb("show", report, "--verbose").stdout
    figure = re.compile(r"\d[\d.,]* (?:ns|us|ms|s)\b|\d[\d.,]*x\b|\d[\d,]* commits/s")
    missing = set(figure.findall(brief)) - set(figure.findall(whole))
    assert figure.findall(brief) and not missing


@pytest.mark.slow
def test_output_to_dev_null_keeps_only_the_exit_code(disk_run):
    """-o /dev/null prints nothing, leaves /dev/null the null device, and a gate still
    decides the exit code (its lines go to stdout, as without -o)."""
    import stat as stat_mod

    _target, out, _proc = disk_run
    report = next(out.glob("*.json"))
    proc = fsb("show", report, "-o", os.devnull)  # /dev/null; nul on Windows
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    # (a busy machine's run would be 'cannot tell', exit 4: this test is about the output)
    gated = fsb("show", report, "-o", os.devnull, "--max-p99", "1ns", "--accept-disturbed")
    assert gated.returncode == 1 and gated.stdout.startswith("GATE FAILED [max-p99]")
    assert stat_mod.S_ISCHR(os.stat(os.devnull).st_mode)


@needs_fifo
def test_output_to_a_named_pipe_is_written_not_replaced(disk_run, tmp_path):
    import threading

    _target, out, _proc = disk_run
    report = next(out.glob("*.json"))
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    proc = fsb("show", report, "-o", fifo, timeout=60)
    reader.join(60)
    assert proc.returncode == 0, proc.stderr
    assert got == [fsb("show", report).stdout]
    assert fifo.is_fifo()


# --------------------------------------------------------------------------- in process
# Fast twins of the slow tests above: cli.main in this process, tiny runs of one round (no
# worker process), the failures planted where no small real one can be had here.

TINY = [
    "--samples",
    "5",
    "--rounds",
    "1",
    "--warmup",
    "1",
    "--no-primitives",
    "--journal-mode",
    "wal",
    "--synchronous",
    "off,full",
    *this_platform.ONE_FULLFSYNC,
    "--quiet",
]


def test_host_in_process_prints_text_json_and_the_old_json_flag(tmp_path, capsys):
    code, out, _err = in_process(capsys, "host", tmp_path)
    assert code == 0 and "filesystem" in out
    code, out, _err = in_process(capsys, "host", tmp_path, "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["target"]["path"] == str(tmp_path)
    code, out, _err = in_process(capsys, "host", tmp_path, "--json")
    assert code == 0 and json.loads(out)["target"] == data["target"]


def test_show_in_process_renders_text_markdown_and_json(tmp_path, capsys):
    import sampled

    path = sampled.save(sampled.report(), tmp_path / "r.json")
    code, out, _err = in_process(capsys, "show", path)
    assert code == 0 and "Path verdict:" in out
    code, out, _err = in_process(capsys, "show", path, "--format", "markdown")
    assert code == 0 and out.startswith("# fsyncbench run")
    code, out, _err = in_process(capsys, "show", path, "--format", "json")
    assert code == 0 and json.loads(out) == json.loads(path.read_text())


def test_a_tiny_run_on_tmpfs_is_no_flush(tmp_path, capsys):
    shm = Path("/dev/shm")
    if not shm.is_dir():
        pytest.skip("no /dev/shm")
    before = set(leftovers(shm))
    code, out, err = in_process(capsys, "run", shm, "--report-dir", tmp_path, *TINY)
    assert code == 0, err
    assert "Path verdict: no_flush" in out
    report = store.load_report(next(tmp_path.glob("*.json")))
    assert report.verdict.path_verdict == "no_flush"
    assert report.host.target.mount.fs_type == "tmpfs"
    assert set(leftovers(shm)) <= before


@needs_proc
def test_a_run_in_proc_is_one_line_in_process_and_writes_nothing(tmp_path, capsys):
    code, out, err = in_process(capsys, "run", "/proc", "--report-dir", tmp_path / "out", *TINY)
    assert code == 2 and out == "" and len(err.splitlines()) == 1, err
    assert err.startswith("fsyncbench: error: cannot create a working directory in /proc")
    assert list(tmp_path.iterdir()) == []


@needs_posix_signals
@pytest.mark.parametrize("rounds", ["1", "3"])
def test_sigterm_in_process_cleans_up_and_says_where(tmp_path, capsys, rounds):
    """SIGTERM to this process while cli.main measures (its handler raises
    KeyboardInterrupt, as Ctrl-C does): one line naming the workload, the working
    directory (and with rounds the worker and its directory) gone, no report."""
    import threading

    target, out = tmp_path / "t", tmp_path / "out"
    target.mkdir()

    def measuring() -> bool:
        inner = list(target.glob(".fsyncbench-*/.fsyncbench-*"))
        return bool(leftovers(target)) and (rounds == "1" or bool(inner))

    done = threading.Event()  # cli.main returned (or raised): never signal after that

    def interrupt() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not done.is_set() and not measuring():
            time.sleep(0.01)
        if not done.wait(0.1):
            os.kill(os.getpid(), signal.SIGTERM)

    sender = threading.Thread(target=interrupt)
    sender.start()
    try:
        code, _out, err = in_process(
            capsys,
            "run",
            target,
            "--report-dir",
            out,
            "--samples",
            "100000000",
            "--budget-seconds",
            "60",
            "--rounds",
            rounds,
            "--no-primitives",
            "--journal-mode",
            "wal",
            "--synchronous",
            "off",
            "--quiet",
        )
    finally:
        done.set()
        sender.join(60)
    assert code == 2, err
    assert err.startswith("fsyncbench: interrupted while measuring "), err
    assert err.rstrip().endswith("no report written") and len(err.splitlines()) == 1, err
    assert leftovers(target) == [] and not out.exists()
    assert _workers_of(target) == []


def test_a_full_disk_mid_run_is_named_in_process(tmp_path, capsys, monkeypatch):
    """SQLite's own "database or disk is full" (SQLITE_FULL, here from a page limit set on
    each journal the run opens): ENOSPC named in one line, nothing left behind."""
    import sqlite3

    target = tmp_path / "t"
    target.mkdir()
    real_connect = sqlite3.connect

    def small(path, *args, **kwargs):
        conn = real_connect(path, *args, **kwargs)
        if str(path).startswith(str(target)):
            conn.execute("PRAGMA max_page_count = 16")
        return conn

    monkeypatch.setattr(sqlite3, "connect", small)
    code, out, err = in_process(
        capsys,
        "run",
        target,
        "--report-dir",
        tmp_path / "out",
        "--journal-mode",
        "delete",
        "--synchronous",
        "off",
        "--samples",
        "5000",
        "--rounds",
        "1",
        "--payload-bytes",
        "4096",
        "--no-primitives",
        "--quiet",
    )
    assert code == 2 and out == "" and len(err.splitlines()) == 1, err
    assert "no space left on the device (ENOSPC)" in err
    assert list(target.iterdir()) == [] and not (tmp_path / "out").exists()


def test_a_closed_stdout_in_process_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch):
    """sys.stdout is None (``>&-``): the line test_a_closed_stdout_is_one_line_and_exit_2
    expects, from cli.main in this process."""
    monkeypatch.setattr(sys, "stdout", None)
    code, _out, err = in_process(capsys, "host", tmp_path)
    assert (code, err) == (2, "fsyncbench: error: cannot write to standard output: it is closed\n")


def test_a_run_whose_stdout_fails_keeps_its_report_in_process(tmp_path, capsys, monkeypatch):
    """Standard output on a full device (every write ENOSPC): one line, exit 2, and the
    report is saved all the same (before printing)."""
    import errno
    import io

    class Full(io.TextIOBase):
        def write(self, text):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(sys, "stdout", Full())
    out = tmp_path / "out"
    code, _out, err = in_process(capsys, "run", tmp_path, "--report-dir", out, *TINY)
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "cannot write to standard output" in err
    assert len(list(out.glob("*.json"))) == 1


def test_a_failing_csv_leaves_no_reports_behind_in_process(tmp_path, capsys, monkeypatch):
    """The CSV's write fails (a full device, planted) after the JSON and Markdown were
    written: those are removed again, one line, exit 2."""
    from fsyncbench.errors import FsyncbenchError

    real_write = store.write_durably

    def full_for_csv(path, text):
        if Path(path).suffix == ".csv":
            raise FsyncbenchError(f"cannot write {path}: No space left on device")
        real_write(path, text)

    monkeypatch.setattr(store, "write_durably", full_for_csv)
    target, out, csv = tmp_path / "t", tmp_path / "out", tmp_path / "samples.csv"
    target.mkdir()
    code, _out, err = in_process(capsys, "run", target, "--report-dir", out, "--csv", csv, *TINY)
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert f"cannot write {csv}" in err
    assert list(out.glob("*")) == [] and not csv.exists()


@pytest.mark.parametrize("which", ["sampled", "example"])
def test_the_summary_says_nothing_the_whole_report_does_not_in_process(which):
    import sampled

    from fsyncbench import report as report_out

    if which == "sampled":
        rep = sampled.report()
    else:
        root = Path(__file__).resolve().parent.parent
        rep = store.load_report(sorted((root / "examples" / "report").glob("*.json"))[-1])
    brief, whole = report_out.render(rep, "text"), report_out.render(rep, "text", verbose=True)
    figure = re.compile(r"\d[\d.,]* (?:ns|us|ms|s)\b|\d[\d.,]*x\b|\d[\d,]* commits/s")
    missing = set(figure.findall(brief)) - set(figure.findall(whole))
    assert figure.findall(brief) and not missing


def test_output_to_dev_null_in_process_keeps_only_the_exit_code(tmp_path, capsys):
    import stat as stat_mod

    import sampled

    path = sampled.save(sampled.report(1.0, seed=0, n=20_000), tmp_path / "r.json")
    assert in_process(capsys, "show", path, "-o", os.devnull) == (0, "", "")
    code, out, _err = in_process(
        capsys, "show", path, "-o", os.devnull, "--max-p99", "1ns", "--accept-disturbed"
    )
    assert code == 1 and out.startswith("GATE FAILED [max-p99]")
    assert stat_mod.S_ISCHR(os.stat(os.devnull).st_mode)


def test_ctrl_c_while_importing_the_cli_is_one_line_in_process(monkeypatch, capsys):
    """The entry point's guard around its imports (numpy and the rest: most of a second)
    turns a Ctrl-C there into the one line and exit 2, in this process: the import of
    fsyncbench.cli is interrupted."""
    import builtins

    from fsyncbench import entry

    real_import = builtins.__import__

    def interrupted(name, *args, **kwargs):
        if name == "fsyncbench.cli":
            raise KeyboardInterrupt
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", interrupted)
    assert entry.main() == 2
    assert capsys.readouterr().err == "fsyncbench: interrupted; nothing was written\n"
