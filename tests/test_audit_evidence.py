"""The audit's evidence collectors: parsers on recorded output, the sweep fit, the counter
plumbing on fake /sys trees (partition -> disk, md -> leaves, an old kernel without flush
fields), and the raw-syscall and second-descriptor patterns on real files."""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path

import pytest
from test_host_linux import STAT_11, STAT_17, FakeRoot, line

from fsyncbench import audit, evidence, workloads
from fsyncbench.errors import FsyncbenchError
from fsyncbench.host import _linux, read_flush_counters
from fsyncbench.model import Host, Mount, StorageTarget, Virtualization

FIXTURES = Path(__file__).parent / "fixtures" / "evidence"
LINUX = sys.platform.startswith("linux")
QUICK = evidence.EvidencePlan(compare_syncs=40, compare_blocks=4, sweep_repeats=1,
                              sweep_max_bytes=1 << 20, trace_commits=3)


# --------------------------------------------------------------------------- strace


def test_parse_strace_recorded_output():
    """Recorded on the development VM: 2 commits per configuration; setup syncs outside the
    markers are not counted."""
    counts = evidence.parse_strace((FIXTURES / "strace_sync_calls_firecracker_vm.txt").read_text())
    assert counts["DELETE/FULL"] == {"fdatasync": 8}
    assert counts["WAL/NORMAL"] == {}
    assert counts["WAL/FULL"] == {"fdatasync": 2}


def test_parse_strace_pid_prefixes_resumed_calls_and_missing_end():
    text = "\n".join([
        '[pid  4242] statfs("/fsyncbench-trace-mark/begin/TRUNCATE/FULL", 0x7ffd) = -1 ENOENT',
        "[pid  4242] fsync(3 <unfinished ...>",
        "4243 fdatasync(4)                      = 0",
        "[pid  4242] <... fsync resumed>)        = 0",
        "4242 sync_file_range(5, 0, 0, 2)      = 0",
        "4242 openat(AT_FDCWD, \"x\", O_RDONLY) = 3",
        '4242 statfs("/fsyncbench-trace-mark/end/TRUNCATE/FULL", 0x7ffd) = -1 ENOENT',
        '4242 statfs("/fsyncbench-trace-mark/begin/DELETE/EXTRA", 0x7ffd) = -1 ENOENT',
        "4242 fdatasync(3) = 0",
    ])
    counts = evidence.parse_strace(text)
    assert counts == {"TRUNCATE/FULL": {"fsync": 1, "fdatasync": 1, "sync_file_range": 1}}


@pytest.mark.skipif(not LINUX, reason="strace is Linux-only")
def test_trace_syncs_live_counts_sqlite_syncs(tmp_path):
    strace = evidence.shutil.which("strace")
    if strace is None:
        pytest.skip("strace not installed (.ci/run installs it)")
    configs = (evidence.Pragmas("DELETE", "FULL"), evidence.Pragmas("WAL", "NORMAL"),
               evidence.Pragmas("WAL", "FULL"))
    try:
        traces = evidence.trace_syncs(tmp_path, configs, QUICK, strace, None)
    except FsyncbenchError as exc:
        pytest.skip(f"ptrace not permitted here: {exc}")
    s = {t.pragmas.label: t.syncs_per_commit for t in traces}
    assert s["delete/full"] >= 3 and s["wal/normal"] == 0 and s["wal/full"] >= 1


# --------------------------------------------------------------------------- syscalls


def test_syscall_numbers_per_architecture():
    assert workloads.syscall_number("fdatasync", "x86_64") == 75
    assert workloads.syscall_number("fsync", "x86_64") == 74
    assert workloads.syscall_number("fdatasync", "aarch64") == 83
    assert workloads.syscall_number("fsync", "arm64") == 82
    assert workloads.syscall_number("fsync", "riscv64") is None


@pytest.mark.skipif(not LINUX, reason="raw syscalls are measured on Linux")
def test_raw_syscall_primitive_syncs_and_reports_errors(tmp_path):
    prim = workloads.raw_syscall_primitive("fdatasync")
    if prim is None:
        pytest.skip("unknown architecture")
    fd = os.open(tmp_path / "f", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        os.write(fd, b"x")
        prim.call(fd)
    finally:
        os.close(fd)
    with pytest.raises(OSError) as info:
        prim.call(fd)  # closed
    assert info.value.errno == errno.EBADF


# --------------------------------------------------------------------------- sweep


def test_fit_sweep_recovers_flush_cost_and_bandwidth():
    points = [(s, int(500_000 + s / 1e9 * 1e9)) for s in workloads.SWEEP_SIZES for _ in range(3)]
    fit = evidence.fit_sweep("fdatasync", points)
    assert fit.flush_cost_ns == pytest.approx(500_000, rel=1e-6)
    assert fit.bandwidth_bytes_per_s == pytest.approx(1e9, rel=1e-6)
    assert fit.r_squared == pytest.approx(1.0)
    assert len(fit.points) == 24


def test_fit_sweep_flat_latency_has_no_bandwidth():
    points = [(s, 2_000 - (s >> 20)) for s in workloads.SWEEP_SIZES]
    assert evidence.fit_sweep("fdatasync", points).bandwidth_bytes_per_s is None


def test_sweep_sizes_shrink_on_a_full_disk(monkeypatch, tmp_path):
    class St:
        f_bavail, f_frsize = 5 << 20, 1  # 5 MiB free

    monkeypatch.setattr(evidence.os, "statvfs", lambda _p: St)
    assert evidence.sweep_sizes(tmp_path, 64 << 20)[-1] == 1 << 20
    St.f_bavail = 1 << 20
    assert evidence.sweep_sizes(tmp_path, 64 << 20) == ()


def test_dirty_sweep_writes_only_in_its_directory(tmp_path):
    points = workloads.dirty_sweep(tmp_path, os.fsync, (4096, 65536), repeats=2)
    assert [s for s, _ in points] == [4096, 65536, 4096, 65536]
    assert all(ns > 0 for _, ns in points)
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- environment


def test_ld_so_preload_and_mapped_libraries():
    assert evidence.parse_ld_so_preload("# comment\n/usr/lib/disable-fsync.so\n a.so:b.so \n") == (
        "/usr/lib/disable-fsync.so", "a.so", "b.so")
    maps = (FIXTURES / "proc_self_maps_eatmydata.txt").read_text()
    found = evidence.preloaded_libraries(maps, ["libeatmydata.so"], audit.SYNC_DISABLING_LIBS)
    assert found == ("/usr/lib/x86_64-linux-gnu/libeatmydata.so.1.3.0",)
    assert evidence.preloaded_libraries(maps, ["libc.so.6"], ()) == (
        "/usr/lib/x86_64-linux-gnu/libc.so.6",)
    assert evidence.preloaded_libraries(maps, [], ()) == ()


def test_parse_zfs_sync():
    assert evidence.parse_zfs_sync((0, b"disabled\n")) == "disabled"
    assert evidence.parse_zfs_sync((0, b"standard\n")) == "standard"
    assert evidence.parse_zfs_sync((1, b"")) is None
    assert evidence.parse_zfs_sync((0, b"cannot open 'x': dataset does not exist\n")) is None
    assert evidence.parse_zfs_sync(None) is None


def test_environment_facts_on_a_fake_root(tmp_path):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "ld.so.preload").write_text("/usr/lib/disable-fsync.so\n")
    (tmp_path / "proc" / "self").mkdir(parents=True)
    (tmp_path / "proc" / "self" / "maps").write_text(
        "7f00-7f01 r-xp 00000000 fe:00 1 /usr/lib/disable-fsync.so\n")
    h = Host("h", "Linux", StorageTarget("/tank/x", Mount("/tank", "zfs", "tank/x")))
    calls = []

    def runner(argv):
        calls.append(argv)
        return 0, b"disabled\n"

    env = evidence.environment_facts(h, root=str(tmp_path), environ={}, runner=runner)
    assert env.ld_so_preload == ("/usr/lib/disable-fsync.so",)
    assert env.preloaded_libraries == ("/usr/lib/disable-fsync.so",)
    assert env.zfs_sync == "disabled"
    assert calls == [["zfs", "get", "-H", "-o", "value", "sync", "tank/x"]]


# --------------------------------------------------------------------------- counters


def _host_from(fake: FakeRoot, target: str) -> Host:
    facts = _linux.collect(target, root=str(fake.root), environ={}, runner=lambda argv: None)
    return Host("fake", "Linux", facts.target, facts.virtualization)


class BumpingCounters:
    """Reads a fake tree's counters, then adds ``step[disk]`` flushes to each disk's stat
    file, so each block of syncs sees exactly that many flushes per leaf."""

    def __init__(self, fake: FakeRoot, step: dict[str, int]) -> None:
        self.fake, self.step = fake, step

    def __call__(self, disks):
        now = read_flush_counters(disks, root=str(self.fake.root))
        for disk, add in self.step.items():
            stat = self.fake.root / "sys" / "block" / disk / "stat"
            fields = stat.read_text().split()
            fields[15] = str(int(fields[15]) + add)
            stat.write_text(" ".join(fields) + "\n")
        return now


@pytest.fixture
def fake(tmp_path: Path) -> FakeRoot:
    return FakeRoot(tmp_path / "root")


@pytest.mark.skipif(not LINUX, reason="raw syscalls are measured on Linux")
def test_md_raid_counts_the_least_flushed_leaf(fake, tmp_path):
    sda1 = fake.partition(fake.sata_disk("sda", "8:0", 0), "sda1", "8:1")
    sdb1 = fake.partition(fake.sata_disk("sdb", "8:16", 1), "sdb1", "8:17")
    fake.stacked("md0", "9:0", [sda1, sdb1])
    fake.mountinfo(line("9:0", "/", "xfs", "/dev/md0"))
    h = _host_from(fake, "/srv")
    disks = [d.name for d in h.target.disks if d.has_flush_counters]
    assert disks == ["sda", "sdb"] and evidence.counter_reason(h) is None
    work = tmp_path / "work"
    work.mkdir()
    c = evidence.compare_libc_syscall(work, "fdatasync", QUICK, disks,
                                      BumpingCounters(fake, {"sda": 30, "sdb": 10}))
    if c is None:
        pytest.skip("unknown architecture")
    # one bump between each before/after pair: 4 blocks x 10 flushes on the lesser leaf
    assert c.libc_flushes == 40 and c.syscall_flushes == 40
    assert c.syncs == 40


@pytest.mark.skipif(not LINUX, reason="raw syscalls are measured on Linux")
def test_old_kernel_degrades_to_counter_not_available(fake, tmp_path):
    sda = fake.sata_disk("sda", "8:0", 0, stat=STAT_11)
    fake.partition(sda, "sda1", "8:1")
    fake.mountinfo(line("8:1", "/", "ext4", "/dev/sda1"))
    h = _host_from(fake, "/data")
    assert [d.name for d in h.target.disks] == ["sda"]
    reason = evidence.counter_reason(h)
    assert reason is not None and "no flush fields" in reason
    counters = lambda disks: read_flush_counters(disks, root=str(fake.root))  # noqa: E731
    work = tmp_path / "work"
    work.mkdir()
    c = evidence.compare_libc_syscall(work, "fdatasync", QUICK, ["sda"], counters)
    second = evidence.second_fd_check(work, QUICK, ["sda"], counters)
    assert c is None or (c.libc_flushes is None and c.syscall_flushes is None)
    assert second.same_fd_flushes is None and second.second_fd_flushes is None
    ev = evidence.Evidence(syscall_comparisons=() if c is None else (c,), second_fd=second,
                           unavailable={"flush_counters": reason})
    v = audit.judge(h, [], ev)
    f = next(f for f in v.findings if f.code == "flush-counters-unavailable")
    assert "counter not available" in f.message and "no flush fields" in f.message


def test_counter_reasons():
    t = StorageTarget("/x", Mount("/x", "tmpfs", "tmpfs"))
    assert "no block device" in evidence.counter_reason(Host("h", "Linux", t))
    assert "Darwin" in evidence.counter_reason(Host("h", "Darwin", t))
    assert "unknown" in evidence.counter_reason(Host("h", "Linux", StorageTarget("/x")))


def test_partition_counters_come_from_the_whole_disk(fake):
    sda = fake.sata_disk("sda", "8:0", 0, stat=STAT_17)
    fake.partition(sda, "sda1", "8:1")
    fake.mountinfo(line("8:1", "/", "ext4", "/dev/sda1"))
    h = _host_from(fake, "/data")
    assert h.target.chain == ("sda1", "sda")
    assert read_flush_counters([d.name for d in h.target.disks], root=str(fake.root)) == {
        "sda": (606, 257, 3221)}


# --------------------------------------------------------------------------- second descriptor


def test_second_fd_check_on_a_real_file(tmp_path):
    c = evidence.second_fd_check(tmp_path, QUICK, [], lambda d: {})
    assert c.syncs == 40 and c.same_fd_p50_ns > 0 and c.second_fd_p50_ns > 0
    assert c.same_fd_flushes is None


def test_plan_rejects_bad_values():
    with pytest.raises(FsyncbenchError):
        evidence.EvidencePlan(sweep_repeats=0)
    with pytest.raises(FsyncbenchError):
        evidence.EvidencePlan(compare_syncs=2)
    assert Virtualization().virtualized is None


def test_fit_sweep_flush_cost_follows_the_small_sizes():
    """Large syncs grow faster than linearly on real disks (writeback, journal); the fit is
    weighted by 1/latency so the flush cost still matches what a small sync costs."""
    pts = [(s, int(200_000 + s * (1.0 if s < 16 << 20 else 1.3))) for s in workloads.SWEEP_SIZES]
    fit = evidence.fit_sweep("fdatasync", pts)
    assert 150_000 < fit.flush_cost_ns < 250_000
    assert 0.5e9 < fit.bandwidth_bytes_per_s < 1.1e9
