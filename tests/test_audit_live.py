"""`fsyncbench audit` end to end on this machine (Firecracker VM, ext4 on virtio /dev/vda,
tmpfs /dev/shm; eatmydata and strace from .ci/run). No durations are asserted: the verdicts
and the deciding findings are, and each would change if its evidence changed."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from clitools import fsb, leftovers

from fsyncbench import cli
from fsyncbench.jsonable import to_jsonable
from fsyncbench.report import store

FAST = [
    "--samples",
    "60",
    "--compare-syncs",
    "120",
    "--sweep-repeats",
    "2",
    "--trace-commits",
    "5",
    "--quiet",
]
LINUX = sys.platform.startswith("linux")
# the live audits read device-wide flush counters and trace with strace: the system tier
# (each is marked; the fast twins at the end run the CLI in this process on what needs no
# live audit)
REPORTS = Path(__file__).parent / "fixtures" / "reports"


def audit_json(*args, prefix=()):
    proc = fsb("audit", *args, "--json", "--no-report", *FAST, prefix=prefix)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def codes(report):
    return {f["code"] for f in report["verdict"]["findings"]}


def _has_counters(report) -> bool:
    disks = report["host"]["target"]["disks"]
    return bool(disks) and all(d["has_flush_counters"] for d in disks)


@pytest.mark.system
@pytest.mark.skipif(not Path("/dev/shm").is_dir(), reason="no /dev/shm")
def test_dev_shm_is_no_flush():
    report = audit_json("/dev/shm", "--no-trace")
    v = report["verdict"]
    assert v["path_verdict"] == "no_flush"
    assert v["decided_by"] == "no-flush-filesystem"
    assert "flush-counters-unavailable" in codes(report)
    deciding = next(f for f in v["findings"] if f["stance"] == "decides")
    assert (deciding["code"], deciding["evidence"]) == (
        "no-flush-filesystem",
        {"fs_type": "tmpfs", "mount_point": "/dev/shm"},
    )
    assert {r["decided_by"] for r in v["results"]} == {"no-flush-filesystem"}
    ev = report["evidence"]
    assert "no block device" in ev["unavailable"]["flush_counters"]
    assert ev["unavailable"]["sync_traces"] == "skipped (--no-trace)"
    # the sweep was recorded (whether its bandwidth is "impossible" depends on timings; the
    # rule's arithmetic is test_audit_engine.test_sweep_bound_is_the_largest_size_over_...)
    _assert_sweep_recorded(ev["dirty_sweep"])
    assert leftovers(Path("/dev/shm")) == []


def _assert_sweep_recorded(sweep) -> None:
    """fdatasync after 4 KiB, 16 KiB, ... (x4; as many as the free space allows), each size
    --sweep-repeats 2 times."""
    assert sweep["primitive"] == "fdatasync"
    sizes = [p["dirty_bytes"] for p in sweep["points"]]
    distinct = sorted(set(sizes))
    assert distinct == [4096 * 4**k for k in range(len(distinct))] and (1 << 20) in distinct
    assert all(sizes.count(size) == 2 for size in distinct) and len(sizes) == 2 * len(distinct)


@pytest.fixture(scope="module")
def disk_audit(tmp_path_factory):
    """One audit of a directory on this machine's disk, written with --output."""
    target = tmp_path_factory.mktemp("audit-target")
    (target / "keep.txt").write_text("untouched")
    out = tmp_path_factory.mktemp("audit-out")
    proc = fsb("audit", target, "--report-dir", out, "--verbose", *FAST)
    return target, out, proc


def others_flushes(report) -> int:
    """Device flushes the configurations that issue no sync saw: other writers' (the
    counters are device-wide; fsyncbench's own report says so in its counters section)."""
    return sum(
        d.flushes or 0 for r in report.results if r.primitive == "none" for d in r.device_flushes
    )


def on_a_quiet_disk(report, check) -> None:
    """Run ``check``; if it fails while other writers flushed the same disk during the
    audit, skip saying the test needs a quiet disk (the counters are device-wide, so another
    process's flushes, e.g. a second copy of this suite, count as the audit's); if it fails
    on a quiet disk, fail."""
    try:
        check()
    except AssertionError:
        busy = others_flushes(report)
        if busy:
            pytest.skip(
                f"needs a quiet disk: other writers sent {busy} device flushes while the "
                "audit's no-sync configurations ran (run this test alone)"
            )
        raise


@pytest.mark.system
def test_disk_is_unverifiable_in_this_vm_with_counter_evidence(disk_audit):
    target, out, proc = disk_audit
    assert proc.returncode == 0, proc.stderr
    report = store.load_report(next(out.glob("*.json")))
    if not report.host.virtualization.virtualized:
        pytest.skip("not a virtual machine")
    if not all(d.has_flush_counters for d in report.host.target.disks):
        # the verdict is measured with them (Linux's disk statistics; no other system has
        # them, and there a VM's storage is judged on other evidence)
        pytest.skip("no device flush counters here")

    def verdict() -> None:
        assert report.verdict.path_verdict == "unverifiable"
        assert report.verdict.decided_by == "virtualized-storage"

    on_a_quiet_disk(report, verdict)
    flat = " ".join(proc.stdout.split())
    assert "Path verdict: unverifiable (decided by virtualized-storage)" in flat
    assert report.verdict.strength == "measured"
    fdatasync = next(r for r in report.results if r.name == "write+fdatasync")
    least = min(d.flushes for d in fdatasync.device_flushes)
    assert least >= 0.5 * fdatasync.syncs_issued  # the syncs reached the virtual disk
    deciding = next(
        f
        for f in report.verdict.findings
        if f.code == "virtualized-storage" and f.subject == "write+fdatasync"
    )

    def reached() -> None:
        # None where other writers' flushes on the same disk could explain half of them
        # (the counters are device-wide): the quiet-disk guard then skips
        assert (deciding.evidence["flushes_per_sync"] or 0.0) >= 0.5

    on_a_quiet_disk(report, reached)
    assert "Device flush counters" in proc.stdout
    c = next(c for c in report.evidence.syscall_comparisons if c.primitive == "fdatasync")
    assert c.syscall_flushes >= 0.5 * c.syncs and c.libc_flushes >= 0.5 * c.syncs
    assert [p.name for p in target.iterdir()] == ["keep.txt"]


@pytest.mark.system
def test_disk_audit_records_syncs_per_commit_and_sweep(disk_audit):
    _target, out, _proc = disk_audit
    report = store.load_report(next(out.glob("*.json")))
    ev = report.evidence
    if "sync_traces" in ev.unavailable:
        pytest.skip(f"no syscall trace here: {ev.unavailable['sync_traces']}")
    s = {t.pragmas.label: t.syncs_per_commit for t in ev.sync_traces}
    assert len(s) == 16 and {t.commits for t in ev.sync_traces} == {5}  # --trace-commits 5
    # synchronous=OFF never syncs; WAL at NORMAL syncs only at checkpoints, which 5 commits
    # do not reach (https://www.sqlite.org/wal.html)
    assert [s[f"{mode}/off"] for mode in ("delete", "truncate", "persist", "wal")] == [0, 0, 0, 0]
    assert s["wal/normal"] == 0
    # WAL at FULL or EXTRA syncs the WAL once per commit; DELETE at FULL four times: the
    # journal, its directory (the journal was just created), the journal header, the
    # database: strace -y of Python's sqlite3 (SQLite 3.40.1) here shows those four per
    # commit; EXTRA adds the directory after the journal is unlinked (SQLITE_EXTRA_DOC)
    assert s["wal/full"] == s["wal/extra"] == 1
    assert s["delete/full"] == 4 and s["delete/extra"] == 5
    _assert_sweep_recorded(to_jsonable(ev.dirty_sweep))
    # the second-descriptor check, decided by the flush counters where there are some: a
    # sync on either descriptor sent a flush per call
    c = ev.second_fd
    assert (c.primitive, c.syncs) == ("fsync", 120)  # --compare-syncs 120
    if c.same_fd_flushes is not None and c.second_fd_flushes is not None:
        assert c.same_fd_flushes >= 0.5 * c.syncs and c.second_fd_flushes >= 0.5 * c.syncs
        assert "second-fd-sync-honoured" in {f.code for f in report.verdict.findings}


@pytest.mark.system
def test_from_reproduces_the_audit_verdict(disk_audit):
    _target, out, _proc = disk_audit
    path = next(out.glob("*.json"))
    saved = store.load_report(path)
    again = json.loads(fsb("audit", "--from", path, "--json", "--no-report").stdout)
    assert again["verdict"]["path_verdict"] == saved.verdict.path_verdict
    assert again["verdict"]["decided_by"] == saved.verdict.decided_by
    assert [r["decided_by"] for r in again["verdict"]["results"]] == [
        r.decided_by for r in saved.verdict.results
    ]
    text = fsb("audit", "--from", path, "--no-report")
    assert text.returncode == 0 and "re-derived" not in text.stdout


@pytest.mark.system
def test_from_reproduces_a_run_report(tmp_path):
    out = tmp_path / "out"
    run = fsb(
        "run",
        tmp_path,
        "--report-dir",
        out,
        "--journal-mode",
        "wal",
        "--synchronous",
        "off,full",
        "--samples",
        "20",
        "--warmup",
        "2",
        "--quiet",
    )
    assert run.returncode == 0, run.stderr
    path = next(out.glob("*.json"))
    saved = store.load_report(path)
    assert saved.evidence is None
    again = json.loads(fsb("audit", "--from", path, "--json", "--no-report").stdout)
    assert (again["verdict"]["path_verdict"], again["verdict"]["decided_by"]) == (
        saved.verdict.path_verdict,
        saved.verdict.decided_by,
    )


@pytest.mark.system
@pytest.mark.skipif(
    not LINUX or shutil.which("eatmydata") is None,
    reason="needs eatmydata (apt-get install eatmydata; .ci/run does)",
)
def test_eatmydata_is_no_flush_by_measurement_not_by_name(tmp_path):
    report = audit_json(tmp_path, prefix=("eatmydata",))
    assert "eatmydata" in (report["host"]["ld_preload"] or "")
    assert any(
        "libeatmydata" in p for p in report["evidence"]["environment"]["preloaded_libraries"]
    )
    v = report["verdict"]
    # the name alone never decides where a libc-vs-syscall comparison was measured
    assert "sync-disabled-by-preload" not in codes(report)
    c = next(c for c in report["evidence"]["syscall_comparisons"] if c["primitive"] == "fdatasync")
    assert c["syncs"] == 120  # --compare-syncs 120
    traces = report["evidence"]["sync_traces"]
    if traces:
        full = {
            (t["ld_preload"] is not None): t
            for t in traces
            if t["pragmas"]["journal_mode"] == "DELETE" and t["pragmas"]["synchronous"] == "FULL"
        }
        # SQLite asks for 4 fdatasyncs per DELETE/FULL commit (strace of SQLite 3.40.1; see
        # test_disk_audit_records_syncs_per_commit_and_sweep), 5 commits traced; eatmydata
        # lets none of them reach the kernel
        assert full[False]["syscalls"] == {"fdatasync": 20}
        assert full[True]["syscalls"] == {}
        assert full[True]["ld_preload"] == report["host"]["ld_preload"]
    if not _has_counters(report):
        pytest.skip("no device flush counters here: the rest would rest on timings")
    # the counters decide: the fdatasync result's syncs sent no flushes (flushes-dropped),
    # or, if other processes' flushes on the same disk hid that, the comparison's libc side
    # sent (almost) none where the raw system call sent about one per call
    assert v["path_verdict"] == "no_flush" and v["strength"] == "measured"
    assert v["decided_by"] in ("flushes-dropped", "libc-sync-interposed")
    assert c["libc_flushes"] < 0.1 * c["syncs"] <= c["syscall_flushes"]
    interposed = next(
        f
        for f in v["findings"]
        if f["code"] == "libc-sync-interposed" and f["subject"] == "write+fdatasync"
    )
    assert interposed["strength"] == "measured"
    assert interposed["stance"] == (
        "decides" if v["decided_by"] == "libc-sync-interposed" else "agrees"
    )
    if traces:
        by = {r["subject"]: r for r in v["results"]}
        # the measured path signal keeps deciding the row; the trace agrees, shown as such
        assert (by["delete/full"]["path_verdict"], by["delete/full"]["decided_by"]) == (
            "no_flush",
            v["decided_by"],
        )
        agreeing = [
            f
            for f in v["findings"]
            if f["code"] == "commit-syncs-intercepted" and f["subject"] == "delete/full"
        ]
        assert [(f["stance"], f["strength"]) for f in agreeing] == [("agrees", "measured")]


@pytest.mark.system
def test_public_case_from_the_command_line():
    proc = fsb("audit", "--from", REPORTS / "zfs-on-debian-sync-disabled.json", "--no-report")
    assert proc.returncode == 0
    flat = " ".join(proc.stdout.split())  # running text is wrapped at 100 columns
    assert "Path verdict: no_flush, measured (decided by zfs-sync-disabled)" in flat


def _usage_error(capsys, argv, text):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert err.startswith("fsyncbench: error: ") and text in err


@pytest.mark.system
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    d = str(tmp_path)
    _usage_error(capsys, ["audit", str(tmp_path / "nope")], "does not exist")
    _usage_error(capsys, ["audit", "--from", str(tmp_path / "none.json")], "does not exist")
    _usage_error(capsys, ["audit", d, "--from", str(REPORTS / "aws-ebs-nvme.json")], "not both")
    _usage_error(capsys, ["audit", d, "--samples", "0"], "--samples must be at least 1")
    _usage_error(capsys, ["audit", d, "--sweep-repeats", "0"], "--sweep-repeats")
    _usage_error(capsys, ["audit", d, "--samples", "x"], "invalid int value")
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema_version": 1, "host": {}}')
    _usage_error(capsys, ["audit", "--from", str(bad)], "not a valid fsyncbench report")
    newer = tmp_path / "newer.json"
    newer.write_text(json.dumps({"schema_version": store.SCHEMA_VERSION + 1}))
    _usage_error(capsys, ["audit", "--from", str(newer)], "upgrade fsyncbench")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.json", "newer.json"]
    proc = fsb("audit", tmp_path / "nope")  # and through a real process
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1


@pytest.mark.system
@pytest.mark.skipif(
    sys.platform == "win32", reason="a directory's mode does not stop files being made (Windows)"
)
def test_unwritable_target_is_one_line(tmp_path):
    if LINUX and os.geteuid() == 0:  # root writes anywhere a mode forbids, but not in /proc
        proc = fsb("audit", "/proc", "--quiet")
    elif os.geteuid() == 0:
        pytest.skip("root writes anywhere a mode forbids, and there is no /proc here")
    else:  # pragma: no cover - CI runs as root on Linux
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o500)
        proc = fsb("audit", ro, "--quiet")
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1
    assert "cannot create a working directory" in proc.stderr


# --------------------------------------------------------------------------- in this process


def test_public_case_from_the_command_line_in_process(capsys):
    assert (
        cli.main(
            ["audit", "--from", str(REPORTS / "zfs-on-debian-sync-disabled.json"), "--no-report"]
        )
        == 0
    )
    flat = " ".join(capsys.readouterr().out.split())
    assert "Path verdict: no_flush, measured (decided by zfs-sync-disabled)" in flat


@pytest.mark.skipif(
    sys.platform == "win32", reason="a directory's mode does not stop files being made (Windows)"
)
def test_unwritable_target_is_one_line_in_process(tmp_path, capsys):
    """The audit's working directory cannot be made: exit 2, one line, before measuring."""
    if LINUX and os.geteuid() == 0:
        target = "/proc"
    elif os.geteuid() == 0:
        pytest.skip("root writes anywhere a mode forbids, and there is no /proc here")
    else:  # pragma: no cover - CI runs as root on Linux
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o500)
        target = str(ro)
    assert cli.main(["audit", target, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "cannot create a working directory" in err


def test_from_reproduces_a_run_report_in_process(tmp_path, capsys):
    """A run of one round in this process, then audit --from on its report."""
    out = tmp_path / "out"
    argv = ["run", str(tmp_path), "--report-dir", str(out), "--journal-mode", "wal"]
    argv += ["--synchronous", "off,full", "--samples", "20", "--warmup", "2", "--quiet"]
    assert cli.main([*argv, "--rounds", "1", "--no-primitives"]) == 0
    path = next(out.glob("*.json"))
    saved = store.load_report(path)
    assert saved.evidence is None
    capsys.readouterr()
    assert cli.main(["audit", "--from", str(path), "--json", "--no-report"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert (again["verdict"]["path_verdict"], again["verdict"]["decided_by"]) == (
        saved.verdict.path_verdict,
        saved.verdict.decided_by,
    )
