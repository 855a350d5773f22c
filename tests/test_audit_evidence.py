"""The audit's evidence collectors: parsers on recorded output, the sweep fit, the counter
plumbing on fake /sys trees (partition -> disk, md -> leaves, an old kernel without flush
fields), and the raw-syscall and second-descriptor patterns on real files."""

from __future__ import annotations

import dataclasses
import errno
import os
import sys
from pathlib import Path

import pytest
from factories import BARE, WB_SSD, commit, flush, host
from test_host_linux import STAT_11, STAT_17, FakeRoot, line

from fsyncbench import audit, evidence, workloads
from fsyncbench.errors import FsyncbenchError
from fsyncbench.host import _linux, read_flush_counters
from fsyncbench.layers import disk_layer, filesystem_layer
from fsyncbench.model import (
    HONEST_FLUSH,
    INFO,
    NO_FLUSH,
    RISK,
    BlockDevice,
    Evidence,
    Finding,
    FlushDelta,
    Host,
    Mount,
    Pragmas,
    Report,
    SecondFdCheck,
    StorageLayer,
    StorageTarget,
    SyncTrace,
    SyscallComparison,
    Verdict,
    Virtualization,
)

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


# --------------------------------------------------------------------------- exact findings
# Whole Finding values and exact helper results, written by hand from each rule's docstring
# and thresholds (mutation testing: a changed level, key or word must fail a test).

def _facts(h=None, results=(), ev=None):
    return audit.Facts(host() if h is None else h, tuple(results), ev)


def test_us_prints_microseconds_below_ten_ms_and_milliseconds_from_it():
    """_us: "A duration in us below 10 ms, else in ms", one decimal."""
    assert audit._us(1_051) == "1.1 us"
    assert audit._us(-2_000) == "-2.0 us"
    assert audit._us(9_999_999) == "10000.0 us"
    assert audit._us(10_000_000) == "10.0 ms"  # 10 ms itself is printed in ms
    assert audit._us(10_050_001) == "10.1 ms"
    assert audit._us(-20_000_000) == "-20.0 ms"


def test_indefinite_article():
    """_a: 'an' before a vowel (a, e, i, o; either case) and before "SSD", else 'a'."""
    assert audit._a("SSD") == "an SSD"
    assert audit._a("SSD with power-loss protection") == "an SSD with power-loss protection"
    assert audit._a("enterprise SSD") == "an enterprise SSD"
    assert audit._a("external disk") == "an external disk"
    assert audit._a("Intel Optane drive") == "an Intel Optane drive"
    assert audit._a("spinning disk") == "a spinning disk"
    assert audit._a("virtual disk") == "a virtual disk"


def test_subject_of_the_path_itself():
    assert audit._subject(None) == "path"
    assert audit._subject(flush("fsync", 1_000_000)) == "write+fsync"


def test_per_sync_needs_counter_min_syncs():
    """_per_sync: None below COUNTER_MIN_SYNCS (50) syncs, a ratio from exactly 50 on."""
    deltas = (FlushDelta("sda", 25, 5, 100),)
    at = dataclasses.replace(flush("fdatasync", 1_000_000, syncs=50), device_flushes=deltas)
    assert audit._per_sync(at, "sda", "flushes") == 0.5
    assert audit._per_sync(at, "sda", "writes") == 2.0
    below = dataclasses.replace(at, syncs_issued=49)
    assert audit._per_sync(below, "sda", "flushes") is None
    assert audit._per_sync(at, None, "flushes") is None
    assert audit._per_sync(at, "sdb", "flushes") is None


def test_flush_ms_per_flush_rounds_to_four_decimals():
    r = dataclasses.replace(flush("fdatasync", 1_000_000),
                            device_flushes=(FlushDelta("sda", 3, 1, 3),))
    assert audit._flush_ms_per_flush(r) == 0.3333


def test_commit_reads_the_effective_pragmas():
    """_commit matches ``effective`` pragmas (what SQLite ran), ``requested`` only without."""
    off = dataclasses.replace(commit("WAL", "OFF", 100_000), requested=None)
    like = Pragmas("WAL", "FULL")
    assert audit._commit([off], like, "OFF") is off
    asked = dataclasses.replace(commit("WAL", "OFF", 100_000), requested=Pragmas("DELETE", "OFF"))
    assert audit._commit([asked], like, "OFF") is asked
    assert audit._commit([asked], Pragmas("DELETE", "FULL"), "OFF") is None


def test_interposed_with_and_without_counters():
    """_interposed -> (interposed, decided by counters). Counters on both sides decide
    (REACHED_FLUSH_RATIO 0.5 per call more on the raw side); with one side uncounted, time
    decides (libc < REAL_IO_FLOOR_NS <= raw, raw >= INTERPOSED_RATIO x libc)."""
    by_counter = SyscallComparison("fdatasync", 75, "x86_64", 100, 500.0, 400_000.0, 0, 100)
    assert audit._interposed(by_counter) == (True, True)
    honest = SyscallComparison("fdatasync", 75, "x86_64", 100, 500.0, 400_000.0, 100, 100)
    assert audit._interposed(honest) == (False, True)
    one_side = SyscallComparison("fdatasync", 75, "x86_64", 100, 500.0, 400_000.0, 0, None)
    assert audit._interposed(one_side) == (True, False)
    other_side = SyscallComparison("fdatasync", 75, "x86_64", 100, 500.0, 400_000.0, None, 100)
    assert audit._interposed(other_side) == (True, False)


def test_flush_cost_falls_back_to_the_largest_when_none_reaches_a_device():
    """_flush_cost: the least candidate at or above REAL_IO_FLOOR_NS; when none is, the
    largest one if it is above 0, else None."""
    below = _facts(results=[flush("fdatasync", 5_000)])
    assert audit._flush_cost(below, "fdatasync") == (5_000, "write+fdatasync p50")
    half = _facts(ev=Evidence(syscall_comparisons=(
        SyscallComparison("fdatasync", 75, "x86_64", 100, 0.5, 0.25),)))
    assert audit._flush_cost(half, "fdatasync") == (0.5, "libc fdatasync p50")
    zero = _facts(ev=Evidence(syscall_comparisons=(
        SyscallComparison("fdatasync", 75, "x86_64", 100, 0.0, 0.0),)))
    assert audit._flush_cost(zero, "fdatasync") is None
    assert audit._flush_cost(_facts(), "fdatasync") is None
    real = _facts(results=[flush("fdatasync", 900_000)], ev=Evidence(syscall_comparisons=(
        SyscallComparison("fdatasync", 75, "x86_64", 100, 500.0, 800_000.0),)))
    assert audit._flush_cost(real, "fdatasync") == (800_000.0, "raw syscall fdatasync p50")


# ---- _not_sent_cause


def test_not_sent_cause_nobarrier_names_the_filesystem_and_option():
    h = host(disks=(WB_SSD,), mount_options=("rw", "nobarrier"))
    assert audit._not_sent_cause(_facts(h)) == (
        "barriers-disabled", "the filesystem ext4 /data (nobarrier) is mounted without barriers",
        {"mount_options": ["nobarrier", "rw"]})


def test_not_sent_cause_names_every_nobarrier_filesystem_of_the_stack():
    """An f2fs image on a loop device whose backing file sits on ext4: both mounted without
    barriers, each named with its own no-barrier options."""
    img = Mount("/mnt/img", "f2fs", "/dev/loop0", ("rw", "nobarrier", "fsync_mode=nobarrier"))
    layers = (filesystem_layer(img, 0),
              StorageLayer("loop", "loop0", "fsyncs-backing-file", 1,
                           device=BlockDevice("loop0", transport="loop")),
              filesystem_layer(Mount("/", "ext4", "/dev/sda", ("rw", "barrier=0")), 2),
              disk_layer(WB_SSD, 3))
    assert audit._not_sent_cause(_facts(_layered(img, layers))) == (
        "barriers-disabled",
        "the filesystem f2fs /mnt/img (fsync_mode=nobarrier, nobarrier), ext4 / (barrier=0) "
        "is mounted without barriers",
        {"mount_options": ["barrier=0", "fsync_mode=nobarrier", "nobarrier", "rw"]})


def test_not_sent_cause_interposed_libc_names_the_preloaded_libraries():
    h = dataclasses.replace(host(disks=(WB_SSD,)), ld_preload="liba.so:libb.so")
    c = SyscallComparison("fdatasync", 75, "x86_64", 100, 500.0, 400_000.0, 0, 100)
    assert audit._not_sent_cause(_facts(h, ev=Evidence(syscall_comparisons=(c,)))) == (
        "preload-skips-flush",
        "the libc sync call is interposed (liba.so, libb.so): it sent 0 device flushes for "
        "100 calls where the raw system call sent 100",
        {"ld_preload": "liba.so:libb.so", "libraries": ["liba.so", "libb.so"]})


def test_not_sent_cause_interposed_fsync_without_a_named_library():
    """Without an fdatasync comparison the fsync one is read."""
    c = SyscallComparison("fsync", 74, "x86_64", 100, 500.0, 400_000.0, 0, 100)
    f = _facts(host(disks=(WB_SSD,)), ev=Evidence(syscall_comparisons=(c,)))
    assert audit._not_sent_cause(f) == (
        "preload-skips-flush",
        "the libc sync call is interposed (a preloaded library): it sent 0 device flushes for "
        "100 calls where the raw system call sent 100",
        {"ld_preload": None, "libraries": []})


def test_not_sent_cause_honest_comparison_is_not_the_cause():
    """Counters on both sides showing the libc call flushing as often as the raw call: not
    interposed, so the cause is unknown."""
    c = SyscallComparison("fdatasync", 75, "x86_64", 100, 400_000.0, 400_000.0, 100, 100)
    f = _facts(host(disks=(WB_SSD,)), ev=Evidence(syscall_comparisons=(c,)))
    assert audit._not_sent_cause(f) == (
        "flushes-not-sent", "a layer above the disk sends no flush", {})


def test_not_sent_cause_write_through_layers_over_a_write_back_disk():
    wt0 = BlockDevice("dm-0", write_cache="write through", has_flush_counters=True)
    wt1 = BlockDevice("dm-1", write_cache="write through ", has_flush_counters=True)
    unknown = BlockDevice("dm-2", write_cache=None, has_flush_counters=True)
    mount = Mount("/data", "ext4", "/dev/dm-0", ("rw",))
    layers = (filesystem_layer(mount, 0),
              StorageLayer("dm", "dm-0", "passes-down", 1, device=wt0),
              StorageLayer("dm", "dm-1", "passes-down", 2, device=wt1),
              StorageLayer("dm", "dm-2", "passes-down", 3, device=unknown),
              disk_layer(WB_SSD, 4))
    h = _layered(mount, layers)
    assert audit._not_sent_cause(_facts(h)) == (
        "flushes-stripped",
        "dm-0, dm-1 claims a write-through cache, so the block layer completes flushes there "
        "without passing them to the write-back disk below",
        {"write_through_layers": ["dm-0", "dm-1"]})


def _layered(mount, layers, virt=BARE):
    disks = tuple(layer.device for layer in layers if layer.holds_bytes and layer.device)
    return Host("case-host", "Linux", StorageTarget(
        "/data", mount, tuple(layer.name for layer in layers if layer.device), disks,
        layers=tuple(layers)), virtualization=virt)


# ---- rule_full_equals_off


def _sync_costs_nothing(name, p50, off_name, off_p50, gap_text, gap, floor=10_000.0,
                        syncs=None):
    return Finding(
        "sync-costs-nothing", RISK, name,
        f"{name} commits take {p50}, {gap_text} {off_name}: its syncs reach no device.",
        "The filesystem or a library drops syncs; benchmark a directory on real storage.",
        {"p50_ns": gap + off_p50, "off_p50_ns": off_p50, "gap_ns": gap, "floor_ns": floor,
         "syncs_per_commit": syncs},
        audit.DESIGN_BANDS)


def test_full_equals_off_exact_finding():
    """rule_full_equals_off: gap < S x REAL_IO_FLOOR_NS (10 us, DESIGN_BANDS), S = 1 untraced."""
    full, off = commit("WAL", "FULL", 1_000_000), commit("WAL", "OFF", 995_000)
    assert audit.rule_full_equals_off(_facts(results=[full, off]), full) == _sync_costs_nothing(
        "wal/full", "1000.0 us", "wal/off", 995_000, "only 5.0 us more than", 5_000)


def test_full_equals_off_no_slower_and_half_a_nanosecond():
    full, off = commit("DELETE", "EXTRA", 1_000_000), commit("DELETE", "OFF", 1_000_000)
    assert audit.rule_full_equals_off(_facts(results=[full, off]), full) == _sync_costs_nothing(
        "delete/extra", "1000.0 us", "delete/off", 1_000_000, "no slower than", 0)
    full = commit("DELETE", "EXTRA", 1_000_000.5)
    assert audit.rule_full_equals_off(_facts(results=[full, off]), full) == _sync_costs_nothing(
        "delete/extra", "1000.0 us", "delete/off", 1_000_000, "only 0.0 us more than", 0.5)
    faster = commit("DELETE", "EXTRA", 990_000)
    assert audit.rule_full_equals_off(_facts(results=[faster, off]), faster) == _sync_costs_nothing(
        "delete/extra", "990.0 us", "delete/off", 1_000_000, "no slower than", -10_000)


def test_full_equals_off_traced_syncs_raise_the_floor():
    """S as SQLite issues it (the trace without LD_PRELOAD) multiplies the floor."""
    p = Pragmas("WAL", "FULL")
    ev = Evidence(sync_traces=(SyncTrace(p, 10, {"fdatasync": 30}),))
    full, off = commit("WAL", "FULL", 1_025_000), commit("WAL", "OFF", 1_000_000)
    assert audit.rule_full_equals_off(_facts(results=[full, off], ev=ev), full) == (
        _sync_costs_nothing("wal/full", "1025.0 us", "wal/off", 1_000_000,
                            "only 25.0 us more than", 25_000, floor=30_000.0, syncs=3.0))


def test_full_equals_off_applies_only_to_syncing_commits():
    off = commit("WAL", "OFF", 1_000_000)
    normal = commit("WAL", "NORMAL", 1_000_000)
    assert audit.rule_full_equals_off(_facts(results=[normal, off]), normal) is None
    nosync = commit("WAL", "FULL", 1_000_000, primitive="none")
    assert audit.rule_full_equals_off(_facts(results=[nosync, off]), nosync) is None
    # the effective pragmas decide; a result recording none requested is still judged
    eff = dataclasses.replace(commit("WAL", "FULL", 1_000_000), requested=None)
    assert audit.rule_full_equals_off(_facts(results=[eff, off]), eff).code == "sync-costs-nothing"


# ---- rule_commit_faster_than_sync

E3_SOURCE = ("../shared/cases E3; SQLite issues >= 1 sync per commit at synchronous=FULL "
             "(https://www.sqlite.org/atomiccommit.html)")


def test_commit_faster_than_sync_exact_finding_counts_syncs_sqlite_issues():
    """S is the count traced without LD_PRELOAD (what SQLite asks for) when recorded: 3 x
    1 ms against a 100 us commit is below COMMIT_VS_FLUSH_MIN_RATIO (0.5, cases E3)."""
    p = Pragmas("WAL", "FULL")
    h = dataclasses.replace(host(), ld_preload="libx.so")
    ev = Evidence(sync_traces=(SyncTrace(p, 10, {"fdatasync": 10}, ld_preload="libx.so"),
                               SyncTrace(p, 10, {"fdatasync": 30})))
    r = commit("WAL", "FULL", 100_000)
    f = _facts(h, [flush("fdatasync", 1_000_000), r], ev)
    assert audit.rule_commit_faster_than_sync(f, r) == Finding(
        "commit-not-waiting-for-sync", RISK, "wal/full",
        "wal/full commits take 100.0 us but 3 x one fdatasync here takes 3000.0 us (30x more): "
        "the commit does not wait for its syncs.",
        "Check the database configuration and LD_PRELOAD for a layer that skips syncs.",
        {"commit_p50_ns": 100_000, "flush_p50_ns": 1_000_000,
         "flush_source": "write+fdatasync p50", "syncs_per_commit": 3.0, "syncs_traced": True,
         "ratio": 0.0333},
        E3_SOURCE)


def test_commit_faster_than_sync_uses_the_run_trace_without_a_clean_one():
    p = Pragmas("WAL", "EXTRA")
    h = dataclasses.replace(host(), ld_preload="libx.so")
    ev = Evidence(sync_traces=(SyncTrace(p, 10, {"fdatasync": 20}, ld_preload="libx.so"),))
    r = commit("WAL", "EXTRA", 100_000)
    f = _facts(h, [flush("fdatasync", 1_000_000), r], ev)
    assert audit.rule_commit_faster_than_sync(f, r) == Finding(
        "commit-not-waiting-for-sync", RISK, "wal/extra",
        "wal/extra commits take 100.0 us but 2 x one fdatasync here takes 2000.0 us (20x more): "
        "the commit does not wait for its syncs.",
        "Check the database configuration and LD_PRELOAD for a layer that skips syncs.",
        {"commit_p50_ns": 100_000, "flush_p50_ns": 1_000_000,
         "flush_source": "write+fdatasync p50", "syncs_per_commit": 2.0, "syncs_traced": True,
         "ratio": 0.05},
        E3_SOURCE)


def test_commit_faster_than_sync_applies_only_to_syncing_commits():
    flushes = [flush("fdatasync", 1_000_000), flush("none", 1_000_000)]
    nosync = commit("WAL", "FULL", 100_000, primitive="none")
    assert audit.rule_commit_faster_than_sync(_facts(results=[*flushes, nosync]), nosync) is None
    normal = commit("WAL", "NORMAL", 100_000)
    assert audit.rule_commit_faster_than_sync(_facts(results=[*flushes, normal]), normal) is None
    eff = dataclasses.replace(commit("WAL", "FULL", 100_000), requested=None)
    hit = audit.rule_commit_faster_than_sync(_facts(results=[*flushes, eff]), eff)
    assert (hit.code, hit.evidence["syncs_per_commit"], hit.evidence["syncs_traced"]) == (
        "commit-not-waiting-for-sync", 1.0, False)


# ---- _second_fd_finding

SECOND_FD_IGNORED_ADVICE = "Sync on the descriptor that wrote (SQLite does), or fix the filesystem layer."


def _second_fd_evidence(c):
    return {"primitive": c.primitive, "same_fd_p50_ns": c.same_fd_p50_ns,
            "second_fd_p50_ns": c.second_fd_p50_ns, "same_fd_flushes": c.same_fd_flushes,
            "second_fd_flushes": c.second_fd_flushes, "syncs_per_side": c.syncs}


def test_second_fd_ignored_by_counters_exact_finding():
    """Counters: same descriptor >= REACHED_FLUSH_RATIO (0.5) flushes per sync, second one
    < DROPPED_FLUSH_RATIO (0.1): ignored, however long the second sync took."""
    c = SecondFdCheck("fsync", 200, 400_000, 300_000, 200, 0)
    assert audit._second_fd_finding(c) == Finding(
        "second-fd-sync-ignored", RISK, "path",
        "fsync on a second descriptor of the written file took 300.0 us against 400.0 us on "
        "the writing one: a sync flushes only what its own descriptor wrote.",
        SECOND_FD_IGNORED_ADVICE,
        {"primitive": "fsync", "same_fd_p50_ns": 400_000, "second_fd_p50_ns": 300_000,
         "same_fd_flushes": 200, "second_fd_flushes": 0, "syncs_per_side": 200},
        audit.PG_TEST_FSYNC_DOC)


def test_second_fd_ignored_by_time_when_one_side_is_uncounted():
    """Counted only on one side: time decides (second < REAL_IO_FLOOR_NS <= same, and
    second < SECOND_FD_MIN_RATIO x same)."""
    c = SecondFdCheck("fdatasync", 200, 400_000, 3_000, None, 0)
    assert audit._second_fd_finding(c) == Finding(
        "second-fd-sync-ignored", RISK, "path",
        "fdatasync on a second descriptor of the written file took 3.0 us against 400.0 us on "
        "the writing one: a sync flushes only what its own descriptor wrote.",
        SECOND_FD_IGNORED_ADVICE, _second_fd_evidence(c), audit.PG_TEST_FSYNC_DOC)
    c = SecondFdCheck("fdatasync", 200, 400_000, 3_000, 200, None)
    assert audit._second_fd_finding(c).code == "second-fd-sync-ignored"


def test_second_fd_honoured_exact_finding():
    c = SecondFdCheck("fdatasync", 200, 400_000, 390_000, 200, 190)
    assert audit._second_fd_finding(c) == Finding(
        "second-fd-sync-honoured", INFO, "path",
        "fdatasync on a second descriptor costs 390.0 us against 400.0 us on the writing one: "
        "it syncs the file, not the descriptor.",
        "Nothing to do.",
        {"primitive": "fdatasync", "same_fd_p50_ns": 400_000, "second_fd_p50_ns": 390_000,
         "same_fd_flushes": 200, "second_fd_flushes": 190, "syncs_per_side": 200},
        audit.PG_TEST_FSYNC_DOC)


# ---- rejudge


def test_rejudge_keeps_the_old_notes_and_adds_the_difference():
    """A report recording another verdict than its facts give keeps its notes and gains one
    naming both (tmpfs: no-flush-filesystem decides, rule_no_flush_filesystem)."""
    h = host(fs_type="tmpfs")
    report = Report(1, "0.0.0", "audit", "2024-05-01T12:00:00Z", ("fsyncbench", "audit"), h, (),
                    Verdict(HONEST_FLUSH, "flush-latency-plausible"), notes=("an old note",))
    again = audit.rejudge(report)
    assert (again.verdict.path_verdict, again.verdict.decided_by) == (NO_FLUSH,
                                                                     "no-flush-filesystem")
    assert again.notes == (
        "an old note",
        "the report recorded honest_flush (decided by flush-latency-plausible); re-derived "
        "from its facts: no_flush (decided by no-flush-filesystem)")
