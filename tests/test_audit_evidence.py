"""The audit's evidence collectors: parsers on recorded output, the sweep fit, the counter
plumbing on fake /sys trees (partition -> disk, md -> leaves, an old kernel without flush
fields), and the raw-syscall and second-descriptor patterns on real files."""

from __future__ import annotations

import dataclasses
import errno
import os
import sys
import types
from pathlib import Path

import pytest
import this_platform
from factories import BARE, VM, WB_SSD, commit, flush, host, write
from test_host_linux import STAT_11, STAT_17, FakeRoot, line

from fsyncbench.errors import FsyncbenchError
from fsyncbench.host import _linux, knowledge, read_flush_counters
from fsyncbench.host.layers import SYNC_DISABLING_LIBS, disk_layer, filesystem_layer
from fsyncbench.judge import (
    commit_rules,
    counter_rules,
    engine,
    evidence_rules,
    path_rules,
    platform_rules,
    rule_facts,
    timing_rules,
)
from fsyncbench.measure import audit_workloads, flush_checks, observations
from fsyncbench.measure.plan import EvidencePlan
from fsyncbench.model import (
    HONEST_FLUSH,
    INFERRED,
    INFO,
    MEASURED,
    NO_FLUSH,
    RISK,
    UNVERIFIABLE,
    VOLATILE_CACHE,
    WARNING,
    BlockDevice,
    DirtySweep,
    EnvironmentFacts,
    Evidence,
    Finding,
    FlushDelta,
    Host,
    Mount,
    Pragmas,
    Report,
    ResultVerdict,
    SecondFdCheck,
    StorageLayer,
    StorageTarget,
    SweepPoint,
    SyncTrace,
    SyscallComparison,
    Verdict,
    Virtualization,
)

FIXTURES = Path(__file__).parent / "fixtures" / "evidence"
LINUX = sys.platform.startswith("linux")
QUICK = EvidencePlan(
    compare_syncs=40, compare_blocks=4, sweep_repeats=1, sweep_max_bytes=1 << 20, trace_commits=3
)


# --------------------------------------------------------------------------- strace


def test_parse_strace_recorded_output():
    """Recorded on the development VM: 2 commits per configuration; setup syncs outside the
    markers are not counted."""
    counts = observations.parse_strace(
        (FIXTURES / "strace_sync_calls_firecracker_vm.txt").read_text()
    )
    assert counts["DELETE/FULL"] == {"fdatasync": 8}
    assert counts["WAL/NORMAL"] == {}
    assert counts["WAL/FULL"] == {"fdatasync": 2}


def test_parse_strace_pid_prefixes_resumed_calls_and_missing_end():
    text = "\n".join(
        [
            '[pid  4242] statfs("/fsyncbench-trace-mark/begin/TRUNCATE/FULL", 0x7ffd) = -1 ENOENT',
            "[pid  4242] fsync(3 <unfinished ...>",
            "4243 fdatasync(4)                      = 0",
            "[pid  4242] <... fsync resumed>)        = 0",
            "4242 sync_file_range(5, 0, 0, 2)      = 0",
            '4242 openat(AT_FDCWD, "x", O_RDONLY) = 3',
            '4242 statfs("/fsyncbench-trace-mark/end/TRUNCATE/FULL", 0x7ffd) = -1 ENOENT',
            '4242 statfs("/fsyncbench-trace-mark/begin/DELETE/EXTRA", 0x7ffd) = -1 ENOENT',
            "4242 fdatasync(3) = 0",
        ]
    )
    counts = observations.parse_strace(text)
    assert counts == {"TRUNCATE/FULL": {"fsync": 1, "fdatasync": 1, "sync_file_range": 1}}


@pytest.mark.skipif(not LINUX, reason="strace is Linux-only")
def test_trace_syncs_live_counts_sqlite_syncs(tmp_path):
    strace = flush_checks.shutil.which("strace")
    if strace is None:
        pytest.skip("strace not installed (.ci/run installs it)")
    configs = (
        Pragmas("DELETE", "FULL"),
        Pragmas("WAL", "NORMAL"),
        Pragmas("WAL", "FULL"),
    )
    try:
        traces = observations.trace_syncs(tmp_path, configs, QUICK, strace, None)
    except FsyncbenchError as exc:
        pytest.skip(f"ptrace not permitted here: {exc}")
    s = {t.pragmas.label: t.syncs_per_commit for t in traces}
    assert s["delete/full"] >= 3 and s["wal/normal"] == 0 and s["wal/full"] >= 1


# --------------------------------------------------------------------------- syscalls


def test_syscall_numbers_per_architecture():
    assert audit_workloads.syscall_number("fdatasync", "x86_64") == 75
    assert audit_workloads.syscall_number("fsync", "x86_64") == 74
    assert audit_workloads.syscall_number("fdatasync", "aarch64") == 83
    assert audit_workloads.syscall_number("fsync", "arm64") == 82
    assert audit_workloads.syscall_number("fsync", "riscv64") is None


@pytest.mark.skipif(not LINUX, reason="raw syscalls are measured on Linux")
def test_raw_syscall_primitive_syncs_and_reports_errors(tmp_path):
    prim = audit_workloads.raw_syscall_primitive("fdatasync")
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
    points = [
        (s, int(500_000 + s / 1e9 * 1e9)) for s in audit_workloads.SWEEP_SIZES for _ in range(3)
    ]
    fit = flush_checks.fit_sweep("fdatasync", points)
    assert fit.flush_cost_ns == pytest.approx(500_000, rel=1e-6)
    assert fit.bandwidth_bytes_per_s == pytest.approx(1e9, rel=1e-6)
    assert fit.r_squared == pytest.approx(1.0)
    assert len(fit.points) == 24


def test_fit_sweep_flat_latency_has_no_bandwidth():
    points = [(s, 2_000 - (s >> 20)) for s in audit_workloads.SWEEP_SIZES]
    assert flush_checks.fit_sweep("fdatasync", points).bandwidth_bytes_per_s is None


def test_sweep_sizes_shrink_on_a_full_disk(monkeypatch, tmp_path):
    free = {"bytes": 5 << 20}  # 5 MiB free

    def usage(_path):
        return types.SimpleNamespace(total=64 << 20, used=0, free=free["bytes"])

    monkeypatch.setattr(flush_checks.shutil, "disk_usage", usage)
    assert flush_checks.sweep_sizes(tmp_path, 64 << 20)[-1] == 1 << 20
    free["bytes"] = 1 << 20
    assert flush_checks.sweep_sizes(tmp_path, 64 << 20) == ()


def test_dirty_sweep_writes_only_in_its_directory(tmp_path):
    points = audit_workloads.dirty_sweep(tmp_path, os.fsync, (4096, 65536), repeats=2)
    assert [s for s, _ in points] == [4096, 65536, 4096, 65536]
    assert all(ns > 0 for _, ns in points)
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- environment


def test_ld_so_preload_and_mapped_libraries():
    assert observations.parse_ld_so_preload(
        "# comment\n/usr/lib/disable-fsync.so\n a.so:b.so \n"
    ) == (
        "/usr/lib/disable-fsync.so",
        "a.so",
        "b.so",
    )
    maps = (FIXTURES / "proc_self_maps_eatmydata.txt").read_text()
    found = observations.preloaded_libraries(maps, ["libeatmydata.so"], SYNC_DISABLING_LIBS)
    assert found == ("/usr/lib/x86_64-linux-gnu/libeatmydata.so.1.3.0",)
    assert observations.preloaded_libraries(maps, ["libc.so.6"], ()) == (
        "/usr/lib/x86_64-linux-gnu/libc.so.6",
    )
    assert observations.preloaded_libraries(maps, [], ()) == ()


def test_parse_zfs_sync():
    assert observations.parse_zfs_sync((0, b"disabled\n")) == "disabled"
    assert observations.parse_zfs_sync((0, b"standard\n")) == "standard"
    assert observations.parse_zfs_sync((1, b"")) is None
    assert observations.parse_zfs_sync((0, b"cannot open 'x': dataset does not exist\n")) is None
    assert observations.parse_zfs_sync(None) is None


def test_environment_facts_on_a_fake_root(tmp_path):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "ld.so.preload").write_text("/usr/lib/disable-fsync.so\n")
    (tmp_path / "proc" / "self").mkdir(parents=True)
    (tmp_path / "proc" / "self" / "maps").write_text(
        "7f00-7f01 r-xp 00000000 fe:00 1 /usr/lib/disable-fsync.so\n"
    )
    h = Host("h", "Linux", StorageTarget("/tank/x", Mount("/tank", "zfs", "tank/x")))
    calls = []

    def runner(argv):
        calls.append(argv)
        return 0, b"disabled\n"

    env = observations.environment_facts(h, root=str(tmp_path), environ={}, runner=runner)
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


@pytest.mark.skipif(not LINUX, reason="raw syscalls are measured on Linux")
@this_platform.linux_trees
def test_md_raid_counts_the_least_flushed_leaf(fake, tmp_path):
    sda1 = fake.partition(fake.sata_disk("sda", "8:0", 0), "sda1", "8:1")
    sdb1 = fake.partition(fake.sata_disk("sdb", "8:16", 1), "sdb1", "8:17")
    fake.stacked("md0", "9:0", [sda1, sdb1])
    fake.mountinfo(line("9:0", "/", "xfs", "/dev/md0"))
    h = _host_from(fake, "/srv")
    disks = [d.name for d in h.target.disks if d.has_flush_counters]
    assert disks == ["sda", "sdb"] and flush_checks.counter_reason(h) is None
    work = tmp_path / "work"
    work.mkdir()
    c = flush_checks.compare_libc_syscall(
        work, "fdatasync", QUICK, disks, BumpingCounters(fake, {"sda": 30, "sdb": 10})
    )
    if c is None:
        pytest.skip("unknown architecture")
    # one bump between each before/after pair: 4 blocks x 10 flushes on the lesser leaf
    assert c.libc_flushes == 40 and c.syscall_flushes == 40
    assert c.syncs == 40


@pytest.mark.skipif(not LINUX, reason="raw syscalls are measured on Linux")
@this_platform.linux_trees
def test_old_kernel_degrades_to_counter_not_available(fake, tmp_path):
    sda = fake.sata_disk("sda", "8:0", 0, stat=STAT_11)
    fake.partition(sda, "sda1", "8:1")
    fake.mountinfo(line("8:1", "/", "ext4", "/dev/sda1"))
    h = _host_from(fake, "/data")
    assert [d.name for d in h.target.disks] == ["sda"]
    reason = flush_checks.counter_reason(h)
    assert reason is not None and "no flush fields" in reason
    counters = lambda disks: read_flush_counters(disks, root=str(fake.root))  # noqa: E731
    work = tmp_path / "work"
    work.mkdir()
    c = flush_checks.compare_libc_syscall(work, "fdatasync", QUICK, ["sda"], counters)
    second = flush_checks.second_fd_check(work, QUICK, ["sda"], counters)
    assert c is None or (c.libc_flushes is None and c.syscall_flushes is None)
    assert second.same_fd_flushes is None and second.second_fd_flushes is None
    ev = Evidence(
        syscall_comparisons=() if c is None else (c,),
        second_fd=second,
        unavailable={"flush_counters": reason},
    )
    v = engine.judge(h, [], ev)
    f = next(f for f in v.findings if f.code == "flush-counters-unavailable")
    assert "counter not available" in f.message and "no flush fields" in f.message


def test_counter_reasons():
    t = StorageTarget("/x", Mount("/x", "tmpfs", "tmpfs"))
    assert "no block device" in flush_checks.counter_reason(Host("h", "Linux", t))
    assert "Darwin" in flush_checks.counter_reason(Host("h", "Darwin", t))
    assert "unknown" in flush_checks.counter_reason(Host("h", "Linux", StorageTarget("/x")))


@this_platform.linux_trees
def test_partition_counters_come_from_the_whole_disk(fake):
    sda = fake.sata_disk("sda", "8:0", 0, stat=STAT_17)
    fake.partition(sda, "sda1", "8:1")
    fake.mountinfo(line("8:1", "/", "ext4", "/dev/sda1"))
    h = _host_from(fake, "/data")
    assert h.target.chain == ("sda1", "sda")
    assert read_flush_counters([d.name for d in h.target.disks], root=str(fake.root)) == {
        "sda": (606, 257, 3221)
    }


# --------------------------------------------------------------------------- second descriptor


def test_second_fd_check_on_a_real_file(tmp_path):
    c = flush_checks.second_fd_check(tmp_path, QUICK, [], lambda d: {})
    assert c.syncs == 40 and c.same_fd_p50_ns > 0 and c.second_fd_p50_ns > 0
    assert c.same_fd_flushes is None


def test_plan_rejects_bad_values():
    with pytest.raises(FsyncbenchError):
        EvidencePlan(sweep_repeats=0)
    with pytest.raises(FsyncbenchError):
        EvidencePlan(compare_syncs=2)
    assert Virtualization().virtualized is None


def test_fit_sweep_flush_cost_follows_the_small_sizes():
    """Large syncs grow faster than linearly on real disks (writeback, journal); the fit is
    weighted by 1/latency so the flush cost still matches what a small sync costs."""
    pts = [
        (s, int(200_000 + s * (1.0 if s < 16 << 20 else 1.3))) for s in audit_workloads.SWEEP_SIZES
    ]
    fit = flush_checks.fit_sweep("fdatasync", pts)
    assert 150_000 < fit.flush_cost_ns < 250_000
    assert 0.5e9 < fit.bandwidth_bytes_per_s < 1.1e9


# --------------------------------------------------------------------------- exact findings
# Whole Finding values and exact helper results, written by hand from each rule's docstring
# and thresholds (mutation testing: a changed level, key or word must fail a test).


def _facts(h=None, results=(), ev=None):
    return rule_facts.Facts(host() if h is None else h, tuple(results), ev)


def test_us_prints_microseconds_below_ten_ms_and_milliseconds_from_it():
    """_us: "A duration in us below 10 ms, else in ms", one decimal."""
    assert rule_facts._us(1_051) == "1.1 us"
    assert rule_facts._us(-2_000) == "-2.0 us"
    assert rule_facts._us(9_999_999) == "10000.0 us"
    assert rule_facts._us(10_000_000) == "10.0 ms"  # 10 ms itself is printed in ms
    assert rule_facts._us(10_050_001) == "10.1 ms"
    assert rule_facts._us(-20_000_000) == "-20.0 ms"


def test_indefinite_article():
    """_a: 'an' before a vowel (a, e, i, o; either case) and before "SSD", else 'a'."""
    assert rule_facts._a("SSD") == "an SSD"
    assert rule_facts._a("SSD with power-loss protection") == "an SSD with power-loss protection"
    assert rule_facts._a("enterprise SSD") == "an enterprise SSD"
    assert rule_facts._a("external disk") == "an external disk"
    assert rule_facts._a("Intel Optane drive") == "an Intel Optane drive"
    assert rule_facts._a("spinning disk") == "a spinning disk"
    assert rule_facts._a("virtual disk") == "a virtual disk"


def test_subject_of_the_path_itself():
    assert rule_facts._subject(None) == "path"
    assert rule_facts._subject(flush("fsync", 1_000_000)) == "write+fsync"


def test_per_sync_needs_counter_min_syncs():
    """_per_sync: None below COUNTER_MIN_SYNCS (50) syncs, a ratio from exactly 50 on."""
    deltas = (FlushDelta("sda", 25, 5, 100),)
    at = dataclasses.replace(flush("fdatasync", 1_000_000, syncs=50), device_flushes=deltas)
    assert rule_facts._per_sync(at, "sda", "flushes") == 0.5
    assert rule_facts._per_sync(at, "sda", "writes") == 2.0
    below = dataclasses.replace(at, syncs_issued=49)
    assert rule_facts._per_sync(below, "sda", "flushes") is None
    assert rule_facts._per_sync(at, None, "flushes") is None
    assert rule_facts._per_sync(at, "sdb", "flushes") is None


def test_flush_ms_per_flush_rounds_to_four_decimals():
    r = dataclasses.replace(
        flush("fdatasync", 1_000_000), device_flushes=(FlushDelta("sda", 3, 1, 3),)
    )
    assert rule_facts._flush_ms_per_flush(r) == 0.3333


def test_commit_reads_the_effective_pragmas():
    """_commit matches ``effective`` pragmas (what SQLite ran), ``requested`` only without."""
    off = dataclasses.replace(commit("WAL", "OFF", 100_000), requested=None)
    like = Pragmas("WAL", "FULL")
    assert rule_facts._commit([off], like, "OFF") is off
    asked = dataclasses.replace(commit("WAL", "OFF", 100_000), requested=Pragmas("DELETE", "OFF"))
    assert rule_facts._commit([asked], like, "OFF") is asked
    assert rule_facts._commit([asked], Pragmas("DELETE", "FULL"), "OFF") is None


def test_interposed_with_and_without_counters():
    """_interposed -> (interposed, decided by counters). Counters on both sides decide
    (REACHED_FLUSH_RATIO 0.5 per call more on the raw side); with one side uncounted, time
    decides (libc < REAL_IO_FLOOR_NS <= raw, raw >= INTERPOSED_RATIO x libc)."""
    by_counter = SyscallComparison("fdatasync", 75, "x86_64", 100, 500.0, 400_000.0, 0, 100)
    assert counter_rules._interposed(by_counter) == (True, True)
    honest = SyscallComparison("fdatasync", 75, "x86_64", 100, 500.0, 400_000.0, 100, 100)
    assert counter_rules._interposed(honest) == (False, True)
    one_side = SyscallComparison("fdatasync", 75, "x86_64", 100, 500.0, 400_000.0, 0, None)
    assert counter_rules._interposed(one_side) == (True, False)
    other_side = SyscallComparison("fdatasync", 75, "x86_64", 100, 500.0, 400_000.0, None, 100)
    assert counter_rules._interposed(other_side) == (True, False)


def test_flush_cost_falls_back_to_the_largest_when_none_reaches_a_device():
    """_flush_cost: the least candidate at or above REAL_IO_FLOOR_NS; when none is, the
    largest one if it is above 0, else None."""
    below = _facts(results=[flush("fdatasync", 5_000)])
    assert commit_rules._flush_cost(below, "fdatasync") == (5_000, "write+fdatasync p50")
    half = _facts(
        ev=Evidence(
            syscall_comparisons=(SyscallComparison("fdatasync", 75, "x86_64", 100, 0.5, 0.25),)
        )
    )
    assert commit_rules._flush_cost(half, "fdatasync") == (0.5, "libc fdatasync p50")
    zero = _facts(
        ev=Evidence(
            syscall_comparisons=(SyscallComparison("fdatasync", 75, "x86_64", 100, 0.0, 0.0),)
        )
    )
    assert commit_rules._flush_cost(zero, "fdatasync") is None
    assert commit_rules._flush_cost(_facts(), "fdatasync") is None
    real = _facts(
        results=[flush("fdatasync", 900_000)],
        ev=Evidence(
            syscall_comparisons=(
                SyscallComparison("fdatasync", 75, "x86_64", 100, 500.0, 800_000.0),
            )
        ),
    )
    assert commit_rules._flush_cost(real, "fdatasync") == (800_000.0, "raw syscall fdatasync p50")


# ---- _not_sent_cause


def test_not_sent_cause_nobarrier_names_the_filesystem_and_option():
    h = host(disks=(WB_SSD,), mount_options=("rw", "nobarrier"))
    assert counter_rules._not_sent_cause(_facts(h)) == (
        "barriers-disabled",
        "the filesystem ext4 /data (nobarrier) is mounted without barriers",
        {"mount_options": ["nobarrier", "rw"]},
    )


def test_not_sent_cause_names_every_nobarrier_filesystem_of_the_stack():
    """An f2fs image on a loop device whose backing file sits on ext4: both mounted without
    barriers, each named with its own no-barrier options."""
    img = Mount("/mnt/img", "f2fs", "/dev/loop0", ("rw", "nobarrier", "fsync_mode=nobarrier"))
    layers = (
        filesystem_layer(img, 0),
        StorageLayer(
            "loop", "loop0", "fsyncs-backing-file", 1, device=BlockDevice("loop0", transport="loop")
        ),
        filesystem_layer(Mount("/", "ext4", "/dev/sda", ("rw", "barrier=0")), 2),
        disk_layer(WB_SSD, 3),
    )
    assert counter_rules._not_sent_cause(_facts(_layered(img, layers))) == (
        "barriers-disabled",
        "the filesystem f2fs /mnt/img (fsync_mode=nobarrier, nobarrier), ext4 / (barrier=0) "
        "is mounted without barriers",
        {"mount_options": ["barrier=0", "fsync_mode=nobarrier", "nobarrier", "rw"]},
    )


def test_not_sent_cause_interposed_libc_names_the_preloaded_libraries():
    h = dataclasses.replace(host(disks=(WB_SSD,)), ld_preload="liba.so:libb.so")
    c = SyscallComparison("fdatasync", 75, "x86_64", 100, 500.0, 400_000.0, 0, 100)
    assert counter_rules._not_sent_cause(_facts(h, ev=Evidence(syscall_comparisons=(c,)))) == (
        "preload-skips-flush",
        "the libc sync call is interposed (liba.so, libb.so): it sent 0 device flushes for "
        "100 calls where the raw system call sent 100",
        {"ld_preload": "liba.so:libb.so", "libraries": ["liba.so", "libb.so"]},
    )


def test_not_sent_cause_interposed_fsync_without_a_named_library():
    """Without an fdatasync comparison the fsync one is read."""
    c = SyscallComparison("fsync", 74, "x86_64", 100, 500.0, 400_000.0, 0, 100)
    f = _facts(host(disks=(WB_SSD,)), ev=Evidence(syscall_comparisons=(c,)))
    assert counter_rules._not_sent_cause(f) == (
        "preload-skips-flush",
        "the libc sync call is interposed (a preloaded library): it sent 0 device flushes for "
        "100 calls where the raw system call sent 100",
        {"ld_preload": None, "libraries": []},
    )


def test_not_sent_cause_honest_comparison_is_not_the_cause():
    """Counters on both sides showing the libc call flushing as often as the raw call: not
    interposed, so the cause is unknown."""
    c = SyscallComparison("fdatasync", 75, "x86_64", 100, 400_000.0, 400_000.0, 100, 100)
    f = _facts(host(disks=(WB_SSD,)), ev=Evidence(syscall_comparisons=(c,)))
    assert counter_rules._not_sent_cause(f) == (
        "flushes-not-sent",
        "a layer above the disk sends no flush",
        {},
    )


def test_not_sent_cause_write_through_layers_over_a_write_back_disk():
    wt0 = BlockDevice("dm-0", write_cache="write through", has_flush_counters=True)
    wt1 = BlockDevice("dm-1", write_cache="write through ", has_flush_counters=True)
    unknown = BlockDevice("dm-2", write_cache=None, has_flush_counters=True)
    mount = Mount("/data", "ext4", "/dev/dm-0", ("rw",))
    layers = (
        filesystem_layer(mount, 0),
        StorageLayer("dm", "dm-0", "passes-down", 1, device=wt0),
        StorageLayer("dm", "dm-1", "passes-down", 2, device=wt1),
        StorageLayer("dm", "dm-2", "passes-down", 3, device=unknown),
        disk_layer(WB_SSD, 4),
    )
    h = _layered(mount, layers)
    assert counter_rules._not_sent_cause(_facts(h)) == (
        "flushes-stripped",
        "dm-0, dm-1 claims a write-through cache, so the block layer completes flushes there "
        "without passing them to the write-back disk below",
        {"write_through_layers": ["dm-0", "dm-1"]},
    )


def _layered(mount, layers, virt=BARE):
    disks = tuple(layer.device for layer in layers if layer.holds_bytes and layer.device)
    return Host(
        "case-host",
        "Linux",
        StorageTarget(
            "/data",
            mount,
            tuple(layer.name for layer in layers if layer.device),
            disks,
            layers=tuple(layers),
        ),
        virtualization=virt,
    )


# ---- rule_full_equals_off


def _sync_costs_nothing(name, p50, off_name, off_p50, gap_text, gap, floor=10_000.0, syncs=None):
    return Finding(
        "sync-costs-nothing",
        RISK,
        name,
        f"{name} commits take {p50}, {gap_text} {off_name}: its syncs reach no device.",
        "The filesystem or a library drops syncs; benchmark a directory on real storage.",
        {
            "p50_ns": gap + off_p50,
            "off_p50_ns": off_p50,
            "gap_ns": gap,
            "floor_ns": floor,
            "syncs_per_commit": syncs,
        },
        rule_facts.LATENCY_BANDS_DOC,
    )


def test_full_equals_off_exact_finding():
    """rule_full_equals_off: gap < S x REAL_IO_FLOOR_NS (10 us, LATENCY_BANDS_DOC), S = 1 untraced."""
    full, off = commit("WAL", "FULL", 1_000_000), commit("WAL", "OFF", 995_000)
    assert commit_rules.rule_full_equals_off(
        _facts(results=[full, off]), full
    ) == _sync_costs_nothing(
        "wal/full", "1000.0 us", "wal/off", 995_000, "only 5.0 us more than", 5_000
    )


def test_full_equals_off_no_slower_and_half_a_nanosecond():
    full, off = commit("DELETE", "EXTRA", 1_000_000), commit("DELETE", "OFF", 1_000_000)
    assert commit_rules.rule_full_equals_off(
        _facts(results=[full, off]), full
    ) == _sync_costs_nothing(
        "delete/extra", "1000.0 us", "delete/off", 1_000_000, "no slower than", 0
    )
    full = commit("DELETE", "EXTRA", 1_000_000.5)
    assert commit_rules.rule_full_equals_off(
        _facts(results=[full, off]), full
    ) == _sync_costs_nothing(
        "delete/extra", "1000.0 us", "delete/off", 1_000_000, "only 0.0 us more than", 0.5
    )
    faster = commit("DELETE", "EXTRA", 990_000)
    assert commit_rules.rule_full_equals_off(
        _facts(results=[faster, off]), faster
    ) == _sync_costs_nothing(
        "delete/extra", "990.0 us", "delete/off", 1_000_000, "no slower than", -10_000
    )


def test_full_equals_off_traced_syncs_raise_the_floor():
    """S as SQLite issues it (the trace without LD_PRELOAD) multiplies the floor."""
    p = Pragmas("WAL", "FULL")
    ev = Evidence(sync_traces=(SyncTrace(p, 10, {"fdatasync": 30}),))
    full, off = commit("WAL", "FULL", 1_025_000), commit("WAL", "OFF", 1_000_000)
    assert commit_rules.rule_full_equals_off(_facts(results=[full, off], ev=ev), full) == (
        _sync_costs_nothing(
            "wal/full",
            "1025.0 us",
            "wal/off",
            1_000_000,
            "only 25.0 us more than",
            25_000,
            floor=30_000.0,
            syncs=3.0,
        )
    )


def test_full_equals_off_applies_only_to_syncing_commits():
    off = commit("WAL", "OFF", 1_000_000)
    normal = commit("WAL", "NORMAL", 1_000_000)
    assert commit_rules.rule_full_equals_off(_facts(results=[normal, off]), normal) is None
    nosync = commit("WAL", "FULL", 1_000_000, primitive="none")
    assert commit_rules.rule_full_equals_off(_facts(results=[nosync, off]), nosync) is None
    # the effective pragmas decide; a result recording none requested is still judged
    eff = dataclasses.replace(commit("WAL", "FULL", 1_000_000), requested=None)
    assert (
        commit_rules.rule_full_equals_off(_facts(results=[eff, off]), eff).code
        == "sync-costs-nothing"
    )


# ---- rule_commit_faster_than_sync

E3_SOURCE = (
    "fsyncbench docs/verdicts.md (commit checks); SQLite issues >= 1 sync per commit at synchronous=FULL "
    "(https://www.sqlite.org/atomiccommit.html)"
)


def test_commit_faster_than_sync_exact_finding_counts_syncs_sqlite_issues():
    """S is the count traced without LD_PRELOAD (what SQLite asks for) when recorded: 3 x
    1 ms against a 100 us commit is below COMMIT_VS_FLUSH_MIN_RATIO (0.5, cases E3)."""
    p = Pragmas("WAL", "FULL")
    h = dataclasses.replace(host(), ld_preload="libx.so")
    ev = Evidence(
        sync_traces=(
            SyncTrace(p, 10, {"fdatasync": 10}, ld_preload="libx.so"),
            SyncTrace(p, 10, {"fdatasync": 30}),
        )
    )
    r = commit("WAL", "FULL", 100_000)
    f = _facts(h, [flush("fdatasync", 1_000_000), r], ev)
    assert commit_rules.rule_commit_faster_than_sync(f, r) == Finding(
        "commit-not-waiting-for-sync",
        RISK,
        "wal/full",
        "wal/full commits take 100.0 us but 3 x one fdatasync here takes 3000.0 us (30x more): "
        "the commit does not wait for its syncs.",
        "Check the database configuration and LD_PRELOAD for a layer that skips syncs.",
        {
            "commit_p50_ns": 100_000,
            "flush_p50_ns": 1_000_000,
            "flush_source": "write+fdatasync p50",
            "syncs_per_commit": 3.0,
            "syncs_traced": True,
            "ratio": 0.0333,
        },
        E3_SOURCE,
    )


def test_commit_faster_than_sync_uses_the_run_trace_without_a_clean_one():
    p = Pragmas("WAL", "EXTRA")
    h = dataclasses.replace(host(), ld_preload="libx.so")
    ev = Evidence(sync_traces=(SyncTrace(p, 10, {"fdatasync": 20}, ld_preload="libx.so"),))
    r = commit("WAL", "EXTRA", 100_000)
    f = _facts(h, [flush("fdatasync", 1_000_000), r], ev)
    assert commit_rules.rule_commit_faster_than_sync(f, r) == Finding(
        "commit-not-waiting-for-sync",
        RISK,
        "wal/extra",
        "wal/extra commits take 100.0 us but 2 x one fdatasync here takes 2000.0 us (20x more): "
        "the commit does not wait for its syncs.",
        "Check the database configuration and LD_PRELOAD for a layer that skips syncs.",
        {
            "commit_p50_ns": 100_000,
            "flush_p50_ns": 1_000_000,
            "flush_source": "write+fdatasync p50",
            "syncs_per_commit": 2.0,
            "syncs_traced": True,
            "ratio": 0.05,
        },
        E3_SOURCE,
    )


def test_commit_faster_than_sync_applies_only_to_syncing_commits():
    flushes = [flush("fdatasync", 1_000_000), flush("none", 1_000_000)]
    nosync = commit("WAL", "FULL", 100_000, primitive="none")
    assert (
        commit_rules.rule_commit_faster_than_sync(_facts(results=[*flushes, nosync]), nosync)
        is None
    )
    normal = commit("WAL", "NORMAL", 100_000)
    assert (
        commit_rules.rule_commit_faster_than_sync(_facts(results=[*flushes, normal]), normal)
        is None
    )
    eff = dataclasses.replace(commit("WAL", "FULL", 100_000), requested=None)
    hit = commit_rules.rule_commit_faster_than_sync(_facts(results=[*flushes, eff]), eff)
    assert (hit.code, hit.evidence["syncs_per_commit"], hit.evidence["syncs_traced"]) == (
        "commit-not-waiting-for-sync",
        1.0,
        False,
    )


# ---- _second_fd_finding

SECOND_FD_IGNORED_ADVICE = (
    "Sync on the descriptor that wrote (SQLite does), or fix the filesystem layer."
)


def _second_fd_evidence(c):
    return {
        "primitive": c.primitive,
        "same_fd_p50_ns": c.same_fd_p50_ns,
        "second_fd_p50_ns": c.second_fd_p50_ns,
        "same_fd_flushes": c.same_fd_flushes,
        "second_fd_flushes": c.second_fd_flushes,
        "syncs_per_side": c.syncs,
    }


def test_second_fd_ignored_by_counters_exact_finding():
    """Counters: same descriptor >= REACHED_FLUSH_RATIO (0.5) flushes per sync, second one
    < DROPPED_FLUSH_RATIO (0.1): ignored, however long the second sync took."""
    c = SecondFdCheck("fsync", 200, 400_000, 300_000, 200, 0)
    assert evidence_rules._second_fd_finding(c) == Finding(
        "second-fd-sync-ignored",
        RISK,
        "path",
        "fsync on a second descriptor of the written file took 300.0 us against 400.0 us on "
        "the writing one: a sync flushes only what its own descriptor wrote.",
        SECOND_FD_IGNORED_ADVICE,
        {
            "primitive": "fsync",
            "same_fd_p50_ns": 400_000,
            "second_fd_p50_ns": 300_000,
            "same_fd_flushes": 200,
            "second_fd_flushes": 0,
            "syncs_per_side": 200,
        },
        rule_facts.PG_TEST_FSYNC_DOC,
    )


def test_second_fd_ignored_by_time_when_one_side_is_uncounted():
    """Counted only on one side: time decides (second < REAL_IO_FLOOR_NS <= same, and
    second < SECOND_FD_MIN_RATIO x same)."""
    c = SecondFdCheck("fdatasync", 200, 400_000, 3_000, None, 0)
    assert evidence_rules._second_fd_finding(c) == Finding(
        "second-fd-sync-ignored",
        RISK,
        "path",
        "fdatasync on a second descriptor of the written file took 3.0 us against 400.0 us on "
        "the writing one: a sync flushes only what its own descriptor wrote.",
        SECOND_FD_IGNORED_ADVICE,
        _second_fd_evidence(c),
        rule_facts.PG_TEST_FSYNC_DOC,
    )
    c = SecondFdCheck("fdatasync", 200, 400_000, 3_000, 200, None)
    assert evidence_rules._second_fd_finding(c).code == "second-fd-sync-ignored"


def test_second_fd_honoured_exact_finding():
    c = SecondFdCheck("fdatasync", 200, 400_000, 390_000, 200, 190)
    assert evidence_rules._second_fd_finding(c) == Finding(
        "second-fd-sync-honoured",
        INFO,
        "path",
        "fdatasync on a second descriptor costs 390.0 us against 400.0 us on the writing one: "
        "it syncs the file, not the descriptor.",
        "Nothing to do.",
        {
            "primitive": "fdatasync",
            "same_fd_p50_ns": 400_000,
            "second_fd_p50_ns": 390_000,
            "same_fd_flushes": 200,
            "second_fd_flushes": 190,
            "syncs_per_side": 200,
        },
        rule_facts.PG_TEST_FSYNC_DOC,
    )


# ---- rejudge


def test_rejudge_keeps_the_old_notes_and_adds_the_difference():
    """A report recording another verdict than its facts give keeps its notes and gains one
    naming both (tmpfs: no-flush-filesystem decides, rule_no_flush_filesystem)."""
    h = host(fs_type="tmpfs")
    report = Report(
        1,
        "0.0.0",
        "audit",
        "2024-05-01T12:00:00Z",
        ("fsyncbench", "audit"),
        h,
        (),
        Verdict(HONEST_FLUSH, "flush-latency-plausible"),
        notes=("an old note",),
    )
    again = engine.rejudge(report)
    assert (again.verdict.path_verdict, again.verdict.decided_by) == (
        NO_FLUSH,
        "no-flush-filesystem",
    )
    assert again.notes == (
        "an old note",
        "the report recorded honest_flush (decided by flush-latency-plausible); re-derived "
        "from its facts: no_flush (decided by no-flush-filesystem; device knowledge version "
        f"{knowledge.table().version})",
    )


# ---- small fact helpers


def test_base_primitive_is_the_first_word():
    assert rule_facts._base_primitive("fsync (O_DIRECT file)") == "fsync"
    assert rule_facts._base_primitive("F_FULLFSYNC") == "F_FULLFSYNC"


def test_preload_names_from_every_source():
    """LD_PRELOAD (':' or ' ' separated), /etc/ld.so.preload, mapped libraries."""
    assert rule_facts._preload_names(_facts()) == []
    h = dataclasses.replace(host(), ld_preload="a.so:b.so  c.so")
    env = EnvironmentFacts(ld_so_preload=("/etc/d.so",), preloaded_libraries=("/lib/e.so",))
    assert rule_facts._preload_names(_facts(h, ev=Evidence(environment=env))) == [
        "a.so",
        "b.so",
        "c.so",
        "/etc/d.so",
        "/lib/e.so",
    ]


def test_sync_disabling_reads_the_file_name_only():
    """A sync-disabling name (SYNC_DISABLING_LIBS) in a directory name does not count."""
    assert rule_facts._sync_disabling(
        [
            "/opt/eatmydata/lib/libfoo.so",
            "/usr/lib/libeatmydata.so",
            "/usr/lib/libeatmydata.so",
            "/usr/lib/Disable-Fsync.so",
        ]
    ) == ["/usr/lib/libeatmydata.so", "/usr/lib/Disable-Fsync.so"]


def test_primitive_of_the_path_per_platform():
    """With no result: F_FULLFSYNC on macOS, FlushFileBuffers on Windows, else fdatasync."""
    assert rule_facts._primitive(_facts(), None) == "fdatasync"
    assert rule_facts._primitive(_facts(host(os_name="Darwin")), None) == "F_FULLFSYNC"
    assert rule_facts._primitive(_facts(host(os_name="Windows")), None) == "FlushFileBuffers"
    assert rule_facts._primitive(_facts(host(os_name="Darwin")), flush("fsync", 1)) == "fsync"


def test_power_protected_media_declared_or_known_family():
    declared = dataclasses.replace(
        host(disks=(WB_SSD,)),
        target=dataclasses.replace(host(disks=(WB_SSD,)).target, declared=("PLP ",)),
    )
    assert rule_facts._power_protected_media(declared) == (
        "power-loss protection declared by the user (--assume plp), not verified"
    )
    # a hand-written report with the model string in the vendor field still names the family
    micron = BlockDevice(
        "sdb", vendor="Micron_5300_MTFDDAK", model="", rotational=False, write_cache="write back"
    )
    row = knowledge.known(micron.vendor, micron.model, knowledge.PLP)
    assert row is not None and row.id == "plp-micron-5300"
    assert rule_facts._power_protected_media(host(disks=(micron,))) == (
        row.source(knowledge.PLP) + "; 5300"
    )
    assert "https://www.micron.com/" in row.source(knowledge.PLP)
    assert rule_facts._power_protected_media(host(disks=(micron, WB_SSD))) == ""
    assert rule_facts._power_protected_media(host()) == ""


def _partitioned(virt=BARE, disk=WB_SSD, part="sda1"):
    """ext4 on partition ``part`` of ``disk`` (a derived stack: chain part -> disk)."""
    return Host(
        "case-host",
        "Linux",
        StorageTarget(
            "/data",
            Mount("/data", "ext4", f"/dev/{part}", ("rw",)),
            chain=(part, disk.name),
            disks=(disk,),
        ),
        virtualization=virt,
    )


def _counted(p50_ns, deltas, syncs=1000, primitive="fdatasync", **kw):
    return dataclasses.replace(
        flush(primitive, p50_ns, syncs=syncs), device_flushes=tuple(deltas), **kw
    )


# ---- rule_no_flush_filesystem


def test_no_flush_filesystem_tmpfs_exact():
    r = flush("fdatasync", 2_000)
    assert platform_rules.rule_no_flush_filesystem(_facts(host(fs_type="tmpfs")), r) == (
        NO_FLUSH,
        Finding(
            "no-flush-filesystem",
            RISK,
            "write+fdatasync",
            "The target is on tmpfs, which keeps data in RAM: fdatasync never reaches a block device.",
            "Benchmark the directory your journal will really live on.",
            {"fs_type": "tmpfs", "mount_point": "/data"},
            "Linux Documentation/filesystems/tmpfs.rst",
            MEASURED,
        ),
    )


def test_no_flush_filesystem_volatile_overlay_exact():
    h = host(fs_type="overlay", mount_options=("rw", "volatile"))
    r = flush("fdatasync", 2_000)
    assert platform_rules.rule_no_flush_filesystem(_facts(h), r) == (
        NO_FLUSH,
        Finding(
            "overlay-volatile",
            RISK,
            "write+fdatasync",
            "The storage stack has an overlay mounted volatile (overlay /data (volatile)): fdatasync "
            "is not passed to its upper filesystem.",
            "Remove the 'volatile' (fsync=volatile) option, or keep the journal outside the overlay.",
            {
                "overlays": ["/data"],
                "options": ["rw", "volatile"],
                "chain": "overlay /data (volatile)",
            },
            rule_facts.OVERLAY_VOLATILE_DOC,
            MEASURED,
        ),
    )


def test_no_flush_filesystem_zfs_sync_disabled_exact():
    h = Host(
        "case-host",
        "Linux",
        StorageTarget("/tank/db", Mount("/tank/db", "zfs", "tank/db")),
        virtualization=BARE,
    )
    ev = Evidence(environment=EnvironmentFacts(zfs_sync="Disabled"))
    assert platform_rules.rule_no_flush_filesystem(_facts(h, ev=ev), None) == (
        NO_FLUSH,
        Finding(
            "zfs-sync-disabled",
            RISK,
            "path",
            "The ZFS dataset tank/db has sync=disabled: fdatasync returns at once and data reaches "
            "disk only with the next transaction group.",
            "zfs set sync=standard tank/db (add a SLOG device if sync writes are slow).",
            {"fs_type": "zfs", "dataset": "tank/db", "zfs_sync": "Disabled"},
            rule_facts.ZFS_SYNC_DOC,
            MEASURED,
        ),
    )
    standard = Evidence(environment=EnvironmentFacts(zfs_sync="standard"))
    assert platform_rules.rule_no_flush_filesystem(_facts(h, ev=standard), None) is None


def test_judge_primitive_marks_the_deciding_finding():
    """judge_primitive: the finding carries the verdict it points to and stance "decides"."""
    assert path_rules.judge_primitive(host(fs_type="tmpfs"), None, []) == (
        NO_FLUSH,
        "no-flush-filesystem",
        Finding(
            "no-flush-filesystem",
            RISK,
            "path",
            "The target is on tmpfs, which keeps data in RAM: fdatasync never reaches a block "
            "device.",
            "Benchmark the directory your journal will really live on.",
            {"fs_type": "tmpfs", "mount_point": "/data"},
            "Linux Documentation/filesystems/tmpfs.rst",
            MEASURED,
            NO_FLUSH,
            "decides",
        ),
    )


# ---- rule_ram_media

ZRAM0 = BlockDevice("zram0", rotational=False, write_cache="write through", transport="zram")


def test_ram_media_loop_on_tmpfs_exact():
    img = Mount("/mnt/img", "ext4", "/dev/loop0", ("rw",))
    layers = (
        filesystem_layer(img, 0),
        StorageLayer(
            "loop", "loop0", "fsyncs-backing-file", 1, device=BlockDevice("loop0", transport="loop")
        ),
        filesystem_layer(Mount("/dev/shm", "tmpfs", "tmpfs", ("rw",)), 2),
    )
    chain = "ext4 /mnt/img → loop0 → tmpfs /dev/shm (RAM)"
    r = flush("fdatasync", 30_000)
    assert platform_rules.rule_ram_media(_facts(_layered(img, layers)), r) == (
        NO_FLUSH,
        Finding(
            "ram-backed-storage",
            RISK,
            "write+fdatasync",
            f"The bytes end in RAM: {chain}. fdatasync is passed down the stack, but the layer that "
            "holds the data is memory, lost with the power.",
            "Benchmark the directory your journal will really live on (a filesystem on a real disk, "
            "not on a loop file in tmpfs or a RAM block device).",
            {"chain": chain, "ram_layers": ["/dev/shm"], "kinds": ["filesystem-ram"]},
            rule_facts.RAM_STACK_DOC,
            MEASURED,
        ),
    )


def test_ram_media_md_across_zram_and_a_disk_exact():
    mount = Mount("/data", "ext4", "/dev/md0", ("rw",))
    layers = (
        filesystem_layer(mount, 0),
        StorageLayer("md", "md0", "passes-down", 1, device=BlockDevice("md0")),
        disk_layer(ZRAM0, 2),
        disk_layer(WB_SSD, 2),
    )
    chain = "ext4 /data → md0 → zram0 (RAM) + sda"
    assert platform_rules.rule_ram_media(_facts(_layered(mount, layers)), None) == (
        UNVERIFIABLE,
        Finding(
            "part-ram-backed-storage",
            RISK,
            "path",
            f"Part of the storage holding the bytes is RAM (zram0) and part is not (sda): {chain}. "
            "Whether an acknowledged commit survives a power loss depends on the redundancy "
            "profile (a mirror keeps it on the other device, a stripe or single copy loses it).",
            "Keep RAM devices out of a journal's filesystem.",
            {"chain": chain, "ram_layers": ["zram0"], "stable_layers": ["sda"]},
            rule_facts.RAM_STACK_DOC,
            MEASURED,
        ),
    )


# ---- rule_flush_counters

NOT_SENT_ADVICE_UNKNOWN = (
    "Find the layer that writes without flushing (mount options, "
    "LD_PRELOAD, the driver's write-cache setting) and audit again."
)


def test_flush_counters_partition_writes_but_disk_gets_few_flushes_exact():
    """Media counters only (the partition's are left out): 30 flushes for 1000 syncs is
    below DROPPED_FLUSH_RATIO (0.1) on a write-back disk; the disk's writes (1 per sync,
    >= REACHED_FLUSH_RATIO) show the data reached it: volatile_cache, cause unknown."""
    r = _counted(1_000_000, [FlushDelta("sda1", 0, 0, None), FlushDelta("sda", 30, 3, 1000)])
    chain = "ext4 /data → sda1 → sda"
    assert counter_rules.rule_flush_counters(_facts(_partitioned()), r) == (
        VOLATILE_CACHE,
        Finding(
            "flushes-not-sent",
            RISK,
            "write+fdatasync",
            "1000 fdatasync calls reached the write-back disk holding the bytes as 30 cache "
            f"flushes, after writing 1.00 requests per sync to sda1: a layer above the disk sends "
            f"no flush. The data sits in a volatile cache ({chain}).",
            NOT_SENT_ADVICE_UNKNOWN,
            {
                "syncs_issued": 1000,
                "device_flushes": {"sda1": 0, "sda": 30},
                "device_writes": {"sda1": None, "sda": 1000},
                "flushes_per_sync": 0.03,
                "chain": chain,
                "write_cache": ["write back"],
                "writes_per_sync": 1.0,
            },
            rule_facts.KERNEL_STAT_DOC + "; " + rule_facts.BLOCK_FLUSH_DOC,
            MEASURED,
        ),
    )


def test_flush_counters_count_only_the_media():
    """0 flushes on the partition (a layer holding nothing) prove nothing: the disk's 1 per
    sync decides."""
    r = _counted(1_000_000, [FlushDelta("sda1", 0, 0, None), FlushDelta("sda", 1000, 50, 1000)])
    assert counter_rules.rule_flush_counters(_facts(_partitioned()), r) is None


def test_flush_counters_dropped_without_write_counters_exact():
    """An older report without write counters: no_flush (no nobarrier to name)."""
    r = flush("fdatasync", 1_000_000, flushes=0)
    assert counter_rules.rule_flush_counters(_facts(host(disks=(WB_SSD,))), r) == (
        NO_FLUSH,
        Finding(
            "flushes-dropped",
            RISK,
            "write+fdatasync",
            "1000 fdatasync calls reached the disk as 0 cache flushes although its write-back cache "
            "needs them: something above the block layer drops the syncs.",
            "Look for eatmydata, an LD_PRELOAD library or a no-op sync layer.",
            {
                "syncs_issued": 1000,
                "device_flushes": {"sda": 0},
                "device_writes": {"sda": None},
                "flushes_per_sync": 0.0,
                "chain": "ext4 /data → sda",
                "write_cache": ["write back"],
            },
            rule_facts.KERNEL_STAT_DOC,
            MEASURED,
        ),
    )


def test_flush_counters_nothing_written_exact():
    r = _counted(1_000_000, [FlushDelta("sda", 0, 0, 0)])
    assert counter_rules.rule_flush_counters(_facts(host(disks=(WB_SSD,))), r) == (
        NO_FLUSH,
        Finding(
            "flushes-dropped",
            RISK,
            "write+fdatasync",
            "1000 fdatasync calls reached the disk as 0 cache flushes although its write-back cache "
            "needs them, with 0.00 writes per sync: nothing is written at sync time, so something "
            "above the block layer drops the syncs.",
            "Look for eatmydata, an LD_PRELOAD library or a no-op sync layer.",
            {
                "syncs_issued": 1000,
                "device_flushes": {"sda": 0},
                "device_writes": {"sda": 0},
                "flushes_per_sync": 0.0,
                "chain": "ext4 /data → sda",
                "write_cache": ["write back"],
                "writes_per_sync": 0.0,
            },
            rule_facts.KERNEL_STAT_DOC,
            MEASURED,
        ),
    )


# ---- rule_libc_interposed

INTERPOSED = SyscallComparison("fdatasync", 75, "x86_64", 100, 300.0, 400_000.0, 0, 100)


def test_libc_interposed_by_counters_still_writing_exact():
    """Counters on both sides decide; the result's writes (1 per sync, >=
    REACHED_FLUSH_RATIO) show the interposer writes the data: volatile_cache."""
    h = dataclasses.replace(host(disks=(WB_SSD,)), ld_preload="/usr/lib/libeatmydata.so")
    r = _counted(600, [FlushDelta("sda", 0, 0, 1000)])
    f = _facts(h, [r], Evidence(syscall_comparisons=(INTERPOSED,)))
    assert counter_rules.rule_libc_interposed(f, r) == (
        VOLATILE_CACHE,
        Finding(
            "libc-sync-interposed",
            RISK,
            "write+fdatasync",
            "libc fdatasync returns in 0.3 us but the raw system call takes 400.0 us and sends 1.00 "
            "device flushes per call against 0.00: a library interposes the libc call; it writes "
            "the data but sends no flush.",
            "Unset LD_PRELOAD / clear /etc/ld.so.preload of /usr/lib/libeatmydata.so and audit again.",
            {
                "primitive": "fdatasync",
                "libc_p50_ns": 300.0,
                "syscall_p50_ns": 400_000.0,
                "syscall_number": 75,
                "machine": "x86_64",
                "syncs_per_side": 100,
                "libc_flushes": 0,
                "syscall_flushes": 100,
                "ratio": 1333.3,
                "ld_preload": "/usr/lib/libeatmydata.so",
                "sync_disabling_libraries": ["/usr/lib/libeatmydata.so"],
            },
            rule_facts.EATMYDATA_DOC,
            MEASURED,
        ),
    )


def test_libc_interposed_by_time_for_the_path_exact():
    c = SyscallComparison("fdatasync", 75, "x86_64", 100, 300.0, 400_000.0)
    f = _facts(host(disks=(WB_SSD,)), ev=Evidence(syscall_comparisons=(c,)))
    assert counter_rules.rule_libc_interposed(f, None) == (
        NO_FLUSH,
        Finding(
            "libc-sync-interposed",
            RISK,
            "path",
            "libc fdatasync returns in 0.3 us but the raw system call takes 400.0 us: a library "
            "interposes the libc call and skips the sync.",
            "Unset LD_PRELOAD / clear /etc/ld.so.preload of the interposing library and audit again.",
            {
                "primitive": "fdatasync",
                "libc_p50_ns": 300.0,
                "syscall_p50_ns": 400_000.0,
                "syscall_number": 75,
                "machine": "x86_64",
                "syncs_per_side": 100,
                "libc_flushes": None,
                "syscall_flushes": None,
                "ratio": 1333.3,
                "ld_preload": None,
                "sync_disabling_libraries": [],
            },
            rule_facts.EATMYDATA_DOC,
            MEASURED,
        ),
    )


# ---- rule_sweep_bandwidth

SWEEP_ADVICE = (
    "Find the layer that acknowledges syncs from memory (eatmydata, a no-op sync, a "
    "RAM disk) and audit the real storage path."
)


def _sweep_finding(shown, ev):
    return (
        NO_FLUSH,
        Finding(
            "sync-bandwidth-impossible",
            RISK,
            "path",
            f"Dirty-size sweep with fdatasync: {shown}: the data never left RAM.",
            SWEEP_ADVICE,
            ev,
            rule_facts.PCIE_DOC,
            MEASURED,
        ),
    )


def test_sweep_without_growth_exact():
    ev = Evidence(dirty_sweep=DirtySweep("fdatasync", 5_000.0, None))
    assert timing_rules.rule_sweep_bandwidth(_facts(ev=ev), None) == _sweep_finding(
        "latency did not grow with the bytes written",
        {
            "primitive": "fdatasync",
            "flush_cost_ns": 5_000.0,
            "bandwidth_bytes_per_s": None,
            "ceiling_bytes_per_s": 16e9,
            "r_squared": None,
        },
    )


def test_sweep_fitted_bandwidth_above_the_link_exact():
    """MAX_LINK_BANDWIDTH 16 GB/s per leaf disk (PCIE_DOC)."""
    ev = Evidence(dirty_sweep=DirtySweep("fdatasync", 5_000.0, 40e9, 0.99))
    assert timing_rules.rule_sweep_bandwidth(
        _facts(host(disks=(WB_SSD,)), ev=ev), None
    ) == _sweep_finding(
        "the fitted bandwidth 40 GB/s exceeds 16 GB/s, the most the storage links here carry",
        {
            "primitive": "fdatasync",
            "flush_cost_ns": 5_000.0,
            "bandwidth_bytes_per_s": 40e9,
            "ceiling_bytes_per_s": 16e9,
            "r_squared": 0.99,
        },
    )


def test_sweep_largest_size_faster_than_the_link_exact():
    """64 MiB at 16 GB/s need 4194304 ns; a 1 ms median sync after 64 MiB is impossible."""
    pts = (SweepPoint(4096, 900_000),) + (SweepPoint(64 << 20, 1_000_000),) * 3
    ev = Evidence(dirty_sweep=DirtySweep("fdatasync", 900_000.0, 1e12, 0.5, pts))
    assert timing_rules.rule_sweep_bandwidth(_facts(ev=ev), None) == _sweep_finding(
        "a sync after 64 MiB took 1000.0 us, less than the 4194.3 us 64 MiB need at 16 GB/s, "
        "the most the storage links here carry",
        {
            "primitive": "fdatasync",
            "flush_cost_ns": 900_000.0,
            "bandwidth_bytes_per_s": 1e12,
            "ceiling_bytes_per_s": 16e9,
            "r_squared": 0.5,
            "largest_bytes": 64 << 20,
            "largest_p50_ns": 1_000_000,
            "least_possible_ns": 4_194_304,
        },
    )


# ---- rule_flush_costs_nothing


def test_flush_costs_nothing_exact():
    """write+sync less than REAL_IO_FLOOR_NS (10 us) slower than the plain write."""
    r, base = flush("fdatasync", 25_000), write(20_000)
    assert timing_rules.rule_flush_costs_nothing(_facts(results=[base, r]), r) == (
        NO_FLUSH,
        Finding(
            "flush-costs-nothing",
            RISK,
            "write+fdatasync",
            "write+fdatasync p50 25.0 us is only 5.0 us more than the same write without a sync "
            "(20.0 us): the fdatasync reaches no device.",
            "Find the layer that acknowledges syncs from memory (tmpfs, eatmydata, an overlay "
            "mounted volatile) and audit the real storage path.",
            {"p50_ns": 25_000, "write_p50_ns": 20_000, "gap_ns": 5_000, "floor_ns": 10_000},
            rule_facts.LATENCY_BANDS_DOC,
            INFERRED,
        ),
    )


# ---- rule_sync_disabling_preload


def test_sync_disabling_preload_exact():
    h = dataclasses.replace(host(disks=(WB_SSD,)), ld_preload="libeatmydata.so")
    r = flush("fdatasync", 1_000)
    assert platform_rules.rule_sync_disabling_preload(_facts(h, [r]), r) == (
        NO_FLUSH,
        Finding(
            "sync-disabled-by-preload",
            RISK,
            "write+fdatasync",
            "libeatmydata.so is preloaded into this process; it turns fdatasync into a no-op (a name "
            "match: no measurement contradicts it).",
            "Run without eatmydata (unset LD_PRELOAD, clear /etc/ld.so.preload) to measure real "
            "flushes.",
            {"ld_preload": "libeatmydata.so", "libraries": ["libeatmydata.so"]},
            rule_facts.EATMYDATA_DOC,
            INFERRED,
        ),
    )


def test_sync_disabling_preload_yields_to_any_measurement():
    """A comparison alone, or media counters alone, cover the primitive; counters on a layer
    holding nothing (the partition) do not."""
    h = dataclasses.replace(host(disks=(WB_SSD,)), ld_preload="libeatmydata.so")
    r = flush("fdatasync", 1_000)
    c = SyscallComparison("fdatasync", 75, "x86_64", 100, 400_000.0, 400_000.0)
    assert (
        platform_rules.rule_sync_disabling_preload(
            _facts(h, [r], Evidence(syscall_comparisons=(c,))), r
        )
        is None
    )
    counted = flush("fdatasync", 1_000, flushes=1000)
    assert platform_rules.rule_sync_disabling_preload(_facts(h, [counted]), counted) is None
    part = dataclasses.replace(_partitioned(), ld_preload="libeatmydata.so")
    above = _counted(1_000, [FlushDelta("sda1", 1000, 50, 1000)])
    assert platform_rules.rule_sync_disabling_preload(_facts(part, [above]), above)[1].code == (
        "sync-disabled-by-preload"
    )


# ---- rule_barriers_disabled


def test_barriers_disabled_names_every_filesystem_exact():
    img = Mount("/mnt/img", "f2fs", "/dev/loop0", ("rw", "nobarrier", "fsync_mode=nobarrier"))
    layers = (
        filesystem_layer(img, 0),
        StorageLayer(
            "loop", "loop0", "fsyncs-backing-file", 1, device=BlockDevice("loop0", transport="loop")
        ),
        filesystem_layer(Mount("/", "ext4", "/dev/sda", ("rw", "barrier=0")), 2),
        disk_layer(WB_SSD, 3),
    )
    chain = "f2fs /mnt/img (fsync_mode=nobarrier, nobarrier) → loop0 → ext4 / (barrier=0) → sda"
    r = flush("fdatasync", 1_000_000, flushes=3, syncs=1600)  # 0.001875 flushes per sync
    assert platform_rules.rule_barriers_disabled(_facts(_layered(img, layers), [r]), r) == (
        VOLATILE_CACHE,
        Finding(
            "barriers-disabled",
            RISK,
            "write+fdatasync",
            "f2fs /mnt/img, ext4 / is mounted with barrier=0, fsync_mode=nobarrier, nobarrier: "
            "fdatasync writes data to the drive but never asks it to flush its volatile write "
            "cache.",
            "Remount without nobarrier/barrier=0 unless the cache is battery- or capacitor-backed.",
            {
                "mount_options": ["barrier=0", "fsync_mode=nobarrier", "nobarrier", "rw"],
                "filesystems": ["/mnt/img", "/"],
                "chain": chain,
                "write_cache": ["write back"],
                "flushes_per_sync": 0.002,
            },
            rule_facts.BARRIER_DOC,
            MEASURED,
        ),
    )


# ---- rule_macos_plain_fsync


def test_macos_plain_fsync_exact():
    h = host(os_name="Darwin", fs_type="apfs")
    r, full = flush("fsync", 50_000), flush("F_FULLFSYNC", 5_000_000)
    advice = (
        "Use F_FULLFSYNC (SQLite: PRAGMA fullfsync=ON with a SQLite that maps it to "
        "F_FULLFSYNC) for power-loss durability."
    )
    assert platform_rules.rule_macos_plain_fsync(_facts(h, [r, full]), r) == (
        VOLATILE_CACHE,
        Finding(
            "macos-fsync-stops-at-cache",
            RISK,
            "write+fsync",
            "On macOS fsync returns once data reaches the drive's volatile cache.",
            advice,
            {"primitive": "fsync", "p50_ns": 50_000, "fullfsync_ratio": 100},
            rule_facts.APPLE_FSYNC_DOC,
            INFERRED,
        ),
    )
    barrier = flush("F_BARRIERFSYNC", 60_000)
    assert platform_rules.rule_macos_plain_fsync(_facts(h, [barrier]), barrier) == (
        VOLATILE_CACHE,
        Finding(
            "macos-fsync-stops-at-cache",
            RISK,
            "write+F_BARRIERFSYNC",
            "On macOS F_BARRIERFSYNC returns once data reaches the drive's volatile cache.",
            advice,
            {"primitive": "F_BARRIERFSYNC", "p50_ns": 60_000, "fullfsync_ratio": None},
            rule_facts.APPLE_BARRIER_DOC,
            INFERRED,
        ),
    )
    for prim in ("O_DSYNC", "O_SYNC"):
        hit = platform_rules.rule_macos_plain_fsync(_facts(h), flush(prim, 60_000))
        assert (hit[0], hit[1].code, hit[1].source) == (
            VOLATILE_CACHE,
            "macos-fsync-stops-at-cache",
            rule_facts.APPLE_BARRIER_DOC,
        )
    assert platform_rules.rule_macos_plain_fsync(_facts(h), full) is None
    assert platform_rules.rule_macos_plain_fsync(_facts(), r) is None
    # SQLite's fallback where the volume refuses F_FULLFSYNC is a plain fsync too (it was
    # judged on its latency alone: honest_flush at 2 ms on a write-back SSD)
    fallback = flush("fsync (F_FULLFSYNC refused: ENOTSUP)", 2_000_000)
    hit = platform_rules.rule_macos_plain_fsync(_facts(h), fallback)
    assert (hit[0], hit[1].code, hit[1].source) == (
        VOLATILE_CACHE,
        "macos-fsync-stops-at-cache",
        rule_facts.APPLE_FSYNC_DOC,
    )
    assert hit[1].message == (
        "On macOS fsync (F_FULLFSYNC refused: ENOTSUP) returns once data reaches the drive's "
        "volatile cache."
    )


# ---- VirtualBox


def test_virtualbox_signs_each_alone():
    def signs(virt=VM, disks=()):
        return platform_rules._virtualbox(host(disks=disks, virt=virt))

    assert signs(Virtualization(hypervisor_flag=True, dmi_vendor="innotek GmbH")) == [
        "DMI sys_vendor innotek GmbH"
    ]
    assert signs(Virtualization(hypervisor_flag=True, dmi_product="VirtualBox")) == [
        "DMI product_name VirtualBox"
    ]
    assert signs(Virtualization(hypervisor_flag=True, detect_virt="oracle")) == [
        "systemd-detect-virt oracle"
    ]
    vbox = BlockDevice("sda", vendor="ATA", model="VBOX HARDDISK", write_cache="write back")
    assert signs(disks=(vbox,)) == ["disk sda model VBOX HARDDISK"]
    assert (
        signs(
            Virtualization(
                hypervisor_flag=True,
                dmi_vendor="QEMU",
                dmi_product="Standard PC",
                detect_virt="kvm",
            )
        )
        == []
    )


def test_hypervisor_ignores_flush_exact():
    virt = Virtualization(hypervisor_flag=True, dmi_vendor="innotek GmbH", dmi_product="VirtualBox")
    assert platform_rules.rule_hypervisor_ignores_flush(_facts(host(virt=virt)), None) == (
        VOLATILE_CACHE,
        Finding(
            "hypervisor-ignores-flush",
            RISK,
            "path",
            "This is a VirtualBox guest (DMI sys_vendor innotek GmbH; DMI product_name "
            "VirtualBox): by default VirtualBox ignores the guest's flush requests, so fdatasync "
            "ends in the host's cache.",
            "On the host: VBoxManage setextradata VM-name "
            '"VBoxInternal/Devices/ahci/0/LUN#0/Config/IgnoreFlush" 0 (piix3ide for IDE disks; '
            "the VM log then lacks 'Flushes will be ignored'), or run fsyncbench on the host.",
            {
                "signs": ["DMI sys_vendor innotek GmbH", "DMI product_name VirtualBox"],
                "flushes_per_sync": None,
            },
            rule_facts.VIRTUALBOX_DOC,
            INFERRED,
        ),
    )


# ---- rule_cloud_block_storage

EBS = BlockDevice(
    "nvme0n1", model="Amazon Elastic Block Store", rotational=False, write_cache="write back"
)


def test_cloud_block_storage_exact():
    r = flush("fdatasync", 500_000)
    assert platform_rules.rule_cloud_block_storage(_facts(host(disks=(EBS,), virt=VM)), r) == (
        HONEST_FLUSH,
        Finding(
            "cloud-block-storage",
            INFO,
            "write+fdatasync",
            "The target sits on Amazon Elastic Block Store, network block storage whose provider "
            "acknowledges a write only once it is stored redundantly.",
            "Mind the volume's IOPS/latency limits; a local instance-store disk would not be "
            "durable across instance stop.",
            {
                "models": ["Amazon Elastic Block Store"],
                "write_cache": ["write back"],
                "p50_ns": 500_000,
            },
            rule_facts.CLOUD_BLOCK_DOC,
            INFERRED,
        ),
    )


def test_cloud_block_storage_needs_every_disk_and_a_real_io_time():
    r = flush("fdatasync", 500_000)
    assert (
        platform_rules.rule_cloud_block_storage(_facts(host(disks=(EBS, WB_SSD), virt=VM)), r)
        is None
    )
    fast = flush("fdatasync", 5_000)  # below REAL_IO_FLOOR_NS
    assert (
        platform_rules.rule_cloud_block_storage(_facts(host(disks=(EBS,), virt=VM)), fast) is None
    )
    hit = platform_rules.rule_cloud_block_storage(_facts(host(disks=(EBS,), virt=VM)), None)
    assert (hit[1].subject, hit[1].evidence["p50_ns"]) == ("path", None)


# ---- rule_network_filesystem

NETWORK_SOURCE = (
    "nfs(5); Linux Documentation/filesystems/fuse.rst; Documentation/admin-guide/blockdev/nbd.rst"
)


def _network_finding(what, ev, subject="path"):
    return (
        UNVERIFIABLE,
        Finding(
            "network-filesystem",
            WARNING,
            subject,
            f"The target's storage goes through {what}: fdatasync is forwarded to a server or daemon "
            "whose storage cannot be seen from here.",
            "Run fsyncbench audit where the data is stored, or keep the journal on local storage.",
            ev,
            NETWORK_SOURCE,
            MEASURED,
        ),
    )


def _mounted(fs_type, source, disks=(), virt=BARE):
    return Host(
        "case-host",
        "Linux",
        StorageTarget(
            "/data",
            Mount("/data", fs_type, source, ("rw",)),
            tuple(d.name for d in disks),
            tuple(disks),
        ),
        virtualization=virt,
    )


def test_network_filesystem_nfs_fuse_and_network_disk_exact():
    r = flush("fdatasync", 500_000)
    nfs = _mounted("nfs4", "server:/export")
    assert platform_rules.rule_network_filesystem(_facts(nfs), r) == _network_finding(
        "the network filesystem /data (type nfs4, source server:/export)",
        {
            "fs_type": "nfs4",
            "source": "server:/export",
            "layer": "/data",
            "kind": "network-fs",
            "chain": "nfs4 /data",
        },
        "write+fdatasync",
    )
    fuse = _mounted("fuse.sshfs", "me@host:/srv")
    assert platform_rules.rule_network_filesystem(_facts(fuse), None) == _network_finding(
        "the FUSE filesystem /data (type fuse.sshfs, source me@host:/srv)",
        {
            "fs_type": "fuse.sshfs",
            "source": "me@host:/srv",
            "layer": "/data",
            "kind": "fuse",
            "chain": "fuse.sshfs /data",
        },
    )
    nbd = _mounted("ext4", "/dev/nbd0", (BlockDevice("nbd0", transport="nbd"),))
    assert platform_rules.rule_network_filesystem(_facts(nbd), None) == _network_finding(
        "the network block device nbd0",
        {
            "fs_type": None,
            "source": None,
            "layer": "nbd0",
            "kind": "network-disk",
            "chain": "ext4 /data → nbd0",
        },
    )


# ---- rule_virtualized

VDA = BlockDevice(
    "vda", rotational=True, write_cache="write back", transport="virtio", has_flush_counters=True
)
VM_ADVICE = (
    "Check the hypervisor's disk cache mode: Firecracker's default cache_type Unsafe "
    "advertises no flush and never syncs on the host, Writeback fsyncs the backing file "
    "on every guest flush; QEMU cache=unsafe ignores flushes, its other modes honour "
    "them. Or run fsyncbench on the host (or pull the plug: fsyncbench powercut)."
)


def _vm_finding(
    text,
    subject="write+fdatasync",
    virt=VM,
    through=(),
    ratio=None,
    ms=None,
    p50=1_000_000,
    counted=None,
):
    """``ratio``: flushes per sync net of other I/O; ``counted`` (default: the same): as
    counted on the media, the figure the sentence states."""
    return (
        UNVERIFIABLE,
        Finding(
            "virtualized-storage",
            WARNING,
            subject,
            text,
            VM_ADVICE,
            {
                "hypervisor_flag": virt.hypervisor_flag,
                "dmi_vendor": virt.dmi_vendor,
                "detect_virt": virt.detect_virt,
                "kernel_hint": virt.kernel_hint,
                "write_through_disks": list(through),
                "flushes_per_sync": ratio if counted is None else counted,
                "flushes_per_sync_net_of_other_io": ratio,
                "flush_ms_per_flush": ms,
                "p50_ns": p50,
            },
            rule_facts.FIRECRACKER_DOC,
            MEASURED,
        ),
    )


def _vm_text(seen):
    return (
        f"This is a virtual machine: {seen}, and whether the host persists what it gets "
        "cannot be seen from inside."
    )


@this_platform.linux_trees
def test_virtualized_flushes_reach_the_virtual_disk_exact():
    virt = Virtualization(
        hypervisor_flag=True, dmi_vendor="QEMU", detect_virt="kvm", kernel_hint="virtio"
    )
    r = flush("fdatasync", 1_000_000, flushes=1000, device="vda")
    assert platform_rules.rule_virtualized(
        _facts(host(disks=(VDA,), virt=virt), [r]), r
    ) == _vm_finding(
        _vm_text("fdatasync reaches the virtual disk (1.00 device flushes per sync counted)"),
        virt=virt,
        ratio=1.0,
        ms=0.05,
    )


def test_flushes_per_sync_is_one_figure_with_its_correction_named():
    """1,030 flushes for 1,000 fdatasyncs while the no-sync baseline saw other I/O flush at
    a rate worth 30 in this window: the finding states the counted 1.03 (as the counter
    table does) and names the correction to 1.00, never a bare "0.99"."""
    base = dataclasses.replace(
        write(20_000), device_flushes=(FlushDelta("vda", 30, 0),), elapsed_ns=1_000_000_000
    )
    r = dataclasses.replace(
        flush("fdatasync", 1_000_000, flushes=1030, device="vda"), elapsed_ns=1_000_000_000
    )
    facts = _facts(host(disks=(VDA,), virt=VM), [base, r])
    assert rule_facts.flushes_per_sync_words(facts, r) == (
        "1.03 device flushes per sync counted (1.00 net of other I/O's 0.03, estimated from "
        "the no-sync baseline's rate)"
    )
    message = platform_rules.rule_virtualized(facts, r)[1].message
    assert "(1.03 device flushes per sync counted (1.00 net of other I/O's 0.03" in message
    quiet = _facts(host(disks=(VDA,), virt=VM), [r])
    assert rule_facts.flushes_per_sync_words(quiet, r) == "1.03 device flushes per sync counted"


@this_platform.linux_trees
def test_virtualized_kernel_time_per_flush_is_read_on_the_media():
    """flush_ms_per_flush comes from the disk holding the bytes, not the partition above."""
    h = _partitioned(VM, VDA, "vda1")
    r = _counted(1_000_000, [FlushDelta("vda1", 100, 50), FlushDelta("vda", 1000, 20)])
    assert platform_rules.rule_virtualized(_facts(h, [r]), r) == _vm_finding(
        _vm_text("fdatasync reaches the virtual disk (1.00 device flushes per sync counted)"),
        ratio=1.0,
        ms=0.02,
    )


@this_platform.linux_trees
def test_virtualized_flushes_other_io_could_explain_exact():
    """0.5 flushes per sync (REACHED_FLUSH_RATIO, inclusive) of which the no-sync baseline's
    rate explains 0.1: 0.4 reached, below the ratio."""
    base = dataclasses.replace(
        write(20_000), device_flushes=(FlushDelta("vda", 100, 0),), elapsed_ns=1_000_000_000
    )
    r = _counted(1_000_000, [FlushDelta("vda", 500, 25)], elapsed_ns=1_000_000_000)
    assert platform_rules.rule_virtualized(_facts(host(disks=(VDA,), virt=VM), [base, r]), r) == (
        _vm_finding(
            _vm_text(
                "fdatasync was followed by 0.50 device flushes per sync, but other "
                "I/O on the disk could explain them"
            ),
            ratio=0.4,
            ms=0.05,
            counted=0.5,  # the figure the sentence states; 0.4 net of other I/O
        )
    )


@this_platform.linux_trees
def test_virtualized_few_flushes_exact():
    r = flush("fdatasync", 1_000_000, flushes=100, device="vda")
    assert platform_rules.rule_virtualized(
        _facts(host(disks=(VDA,), virt=VM), [r]), r
    ) == _vm_finding(
        _vm_text("only 0.10 device flushes per sync arrived for fdatasync"), ratio=0.1, ms=0.05
    )


@this_platform.linux_trees
def test_virtualized_without_counters_on_a_physical_looking_disk_exact():
    r = flush("fdatasync", 1_000_000)
    assert platform_rules.rule_virtualized(
        _facts(host(disks=(WB_SSD,), virt=VM), [r]), r
    ) == _vm_finding(_vm_text("fdatasync goes to whatever this stack ends in"))


@this_platform.linux_trees
def test_virtualized_path_on_a_virtual_disk_exact():
    assert platform_rules.rule_virtualized(
        _facts(host(disks=(VDA,), virt=VM)), None
    ) == _vm_finding(_vm_text("fdatasync goes to the virtual disk"), subject="path", p50=None)


@this_platform.linux_trees
def test_virtualized_write_through_virtual_disk_exact():
    vda = BlockDevice("vda", write_cache="write through", transport="virtio")
    r = flush("fdatasync", 1_000_000)
    assert platform_rules.rule_virtualized(
        _facts(host(disks=(vda,), virt=VM), [r]), r
    ) == _vm_finding(
        "This is a virtual machine whose disk vda reports a write-through cache: the guest sends "
        "it no flush, and whether the host writes through or keeps the data in its page cache "
        "cannot be seen from inside.",
        through=["vda"],
    )


# ---- rule_stack_not_followed

STACK_ADVICE = (
    "Run fsyncbench on the directory that holds the data, or with absolute overlay "
    "paths; `fsyncbench host DIR` shows the stack."
)


def test_stack_not_followed_loop_without_backing_file_exact():
    h = Host(
        "case-host",
        "Linux",
        StorageTarget("/data", Mount("/data", "ext4", "/dev/loop0", ("rw",)), chain=("loop0",)),
        virtualization=BARE,
    )
    assert platform_rules.rule_stack_not_followed(_facts(h), None) == (
        UNVERIFIABLE,
        Finding(
            "stack-not-followed",
            WARNING,
            "path",
            "The storage under the target could not be followed to the medium holding the bytes "
            "(ext4 /data → loop0; loop0: backing file not recorded: the storage below is unknown): "
            "nothing measured here can be tied to it.",
            STACK_ADVICE,
            {"chain": "ext4 /data → loop0", "stopped_at": ["loop0"]},
            "fsyncbench.host._stack",
            MEASURED,
        ),
    )


def test_stack_not_followed_filesystem_without_devices_exact():
    mount = Mount("/data", "ext4", "/dev/x", ("rw",))
    r = flush("fdatasync", 1_000_000)
    h = _layered(mount, (filesystem_layer(mount, 0),))
    assert platform_rules.rule_stack_not_followed(_facts(h), r) == (
        UNVERIFIABLE,
        Finding(
            "stack-not-followed",
            WARNING,
            "write+fdatasync",
            "The storage under the target could not be followed to the medium holding the bytes "
            "(ext4 /data; ext4 /data): nothing measured here can be tied to it.",
            STACK_ADVICE,
            {"chain": "ext4 /data", "stopped_at": ["/data"]},
            "fsyncbench.host._stack",
            MEASURED,
        ),
    )


# ---- rule_flushes_reach_device and rule_latency_floor

CONSUMER_SSD = "SSD with a volatile write cache and no known power-loss protection"
PLP_SSD = "SSD with power-loss protection or no volatile write cache"
DECLARED = "power-loss protection declared by the user (--assume plp), not verified"


def test_flushes_reach_device_exact():
    """Bare metal, 1 flush per sync counted on the write-back SSD, p50 above its 150 us floor
    (CONSUMER_SSD_FLOOR_NS, LATENCY_BANDS_DOC)."""
    r = flush("fdatasync", 1_000_000, flushes=1000)
    assert counter_rules.rule_flushes_reach_device(_facts(host(disks=(WB_SSD,)), [r]), r) == (
        HONEST_FLUSH,
        Finding(
            "flushes-reach-device",
            INFO,
            "write+fdatasync",
            "Each fdatasync sent cache flushes to the disk holding the bytes (1.00 device "
            "flushes per sync counted; measured) and took 1 ms (p50), as an "
            f"{CONSUMER_SSD} writing to stable media does (inferred from that time: not "
            "proven).",
            "A power-pull test (fsyncbench powercut) is the only proof beyond this.",
            {
                "flushes_per_sync": 1.0,
                "flushes_per_sync_net_of_other_io": 1.0,
                "flush_ms_per_flush": 0.05,
                "p50_ns": 1_000_000,
                "device_class": CONSUMER_SSD,
                "floor_ns": 150_000,
                "fast_flush_allowed_by": None,
            },
            rule_facts.KERNEL_STAT_DOC + "; " + rule_facts.LATENCY_BANDS_DOC,
            INFERRED,
        ),
    )


def test_latency_below_the_device_floor_exact():
    r = flush("fdatasync", 60_000, flushes=1000)
    assert timing_rules.rule_latency_floor(_facts(host(disks=(WB_SSD,)), [r]), r) == (
        VOLATILE_CACHE,
        Finding(
            "flush-below-device-floor",
            RISK,
            "write+fdatasync",
            f"fdatasync p50 60.0 us is below the 150 us a flush to stable media takes on an "
            f"{CONSUMER_SSD}: something acknowledges it from a cache.",
            # sda with no known transport: smartctl, not nvme id-ctrl (issue 32, 4a)
            "Check the drive's write cache and power-loss protection (smartctl -g wcache "
            "/dev/sda; the vendor's data sheet); if the drive has power-loss protection, say so "
            "with --assume plp. A power pull (fsyncbench powercut) settles it.",
            {
                "p50_ns": 60_000,
                "device_class": CONSUMER_SSD,
                "floor_ns": 150_000,
                "flushes_per_sync": 1.0,
                "fast_flush_allowed_by": None,
            },
            rule_facts.LATENCY_BANDS_DOC,
            INFERRED,
        ),
    )


def test_latency_plausible_with_declared_plp_exact():
    """--assume plp: the 15 us floor of a drive with power-loss protection (PLP_SSD_FLOOR_NS)."""
    base = host(disks=(WB_SSD,))
    h = dataclasses.replace(base, target=dataclasses.replace(base.target, declared=("plp",)))
    r = flush("fdatasync", 40_000)
    assert timing_rules.rule_latency_floor(_facts(h, [r]), r) == (
        HONEST_FLUSH,
        Finding(
            "flush-latency-plausible",
            INFO,
            "write+fdatasync",
            f"fdatasync p50 40.0 us is consistent with an {PLP_SSD} writing to stable media: "
            "inferred from latency only, not proven.",
            "Latency alone cannot prove durability; a power-pull test (fsyncbench powercut) can.",
            {
                "p50_ns": 40_000,
                "device_class": PLP_SSD,
                "floor_ns": 15_000,
                "flushes_per_sync": None,
                "fast_flush_allowed_by": DECLARED,
            },
            rule_facts.LATENCY_BANDS_DOC,
            INFERRED,
        ),
    )


def test_declared_plp_lets_a_spinning_disk_flush_faster_than_its_platter():
    """A spinning disk's flush waits for the platter (SPINNING_FLOOR_NS, 2 ms): the lab's
    lying drive presented as a 7,200 rpm SATA disk answered fdatasync in 0.8 ms and was
    called volatile_cache (lab/audits.py). The advice offers --assume plp ("the drive
    holding the bytes has power-loss protection"), and the declaration is honoured: the
    flush need not wait for the platter, as the counter rules already took it."""
    hdd = BlockDevice("sda", rotational=True, write_cache="write back", has_flush_counters=True)
    r = flush("fdatasync", 800_000, flushes=1000)
    verdict, hit = timing_rules.rule_latency_floor(_facts(host(disks=(hdd,)), [r]), r)
    assert (verdict, hit.evidence["device_class"]) == (VOLATILE_CACHE, "spinning disk")
    assert "say so with --assume plp" in hit.advice
    base = host(disks=(hdd,))
    h = dataclasses.replace(base, target=dataclasses.replace(base.target, declared=("plp",)))
    verdict, hit = timing_rules.rule_latency_floor(_facts(h, [r]), r)
    assert (verdict, hit.code, hit.evidence["fast_flush_allowed_by"]) == (
        HONEST_FLUSH,
        "flush-latency-plausible",
        DECLARED,
    )
    assert hit.evidence["device_class"] == "spinning disk with power-loss protection declared"
    # counted flushes and the declaration: the counter rule decides honest_flush, inferred
    v = engine.judge(h, [r])
    assert (v.path_verdict, v.decided_by) == (HONEST_FLUSH, "flushes-reach-device")


# ---- rule_commit_issues_no_sync

NO_SYNC_ADVICE = (
    "Remove the sync-disabling library or SQLite build option (SQLITE_NO_SYNC) and audit again."
)
NO_SYNC_SOURCE = (
    "strace of the commits (fsyncbench.measure.observations.trace_syncs); "
    + rule_facts.SQLITE_SYNC_DOC
)


def test_commit_syncs_intercepted_exact():
    p = Pragmas("WAL", "FULL")
    h = dataclasses.replace(host(), ld_preload="libeatmydata.so")
    ev = Evidence(
        sync_traces=(
            SyncTrace(p, 10, {}, ld_preload="libeatmydata.so"),
            SyncTrace(p, 10, {"fdatasync": 20}),
        )
    )
    r = commit("WAL", "FULL", 50_000)
    assert commit_rules.rule_commit_issues_no_sync(_facts(h, [r], ev), r) == Finding(
        "commit-syncs-intercepted",
        RISK,
        "wal/full",
        "wal/full commits reach the kernel with 0 sync calls although SQLite issues 2 per commit "
        "without LD_PRELOAD (libeatmydata.so): nothing waits for storage.",
        NO_SYNC_ADVICE,
        {
            "syncs_per_commit": 0.0,
            "syncs_per_commit_without_preload": 2.0,
            "ld_preload": "libeatmydata.so",
        },
        NO_SYNC_SOURCE,
    )


def test_commit_issues_no_sync_exact():
    p = Pragmas("DELETE", "EXTRA")
    ev = Evidence(sync_traces=(SyncTrace(p, 10, {"sync_file_range": 10}),))
    r = commit("DELETE", "EXTRA", 50_000)
    assert commit_rules.rule_commit_issues_no_sync(_facts(results=[r], ev=ev), r) == Finding(
        "commit-issues-no-sync",
        RISK,
        "delete/extra",
        "delete/extra commits reach the kernel with 0 sync calls: nothing waits for storage.",
        NO_SYNC_ADVICE,
        {"syncs_per_commit": 0.0, "syncs_per_commit_without_preload": 0.0, "ld_preload": None},
        NO_SYNC_SOURCE,
    )


# ---- slowness


def test_slowness_exact():
    """SLOW_MEDIAN_NS 50 ms (DESIGN.md), GATE_P99_NS 10 ms (etcd); p99 here is 1.5 x p50."""
    r = flush("fdatasync", 60_000_000)
    assert commit_rules.slowness(r) == [
        Finding(
            "slow-median",
            WARNING,
            "write+fdatasync",
            "write+fdatasync p50 is 60.0 ms: every durable step waits that long.",
            "Batch several steps per commit, or use faster storage.",
            {"p50_ns": 60_000_000, "threshold_ns": 50_000_000},
            "fsyncbench docs/verdicts.md (commit checks: a project choice)",
        ),
        Finding(
            "p99-above-10ms",
            INFO,
            "write+fdatasync",
            "write+fdatasync p99 is 90.0 ms, above etcd's 10 ms gate.",
            "If you gate on tail latency, compare this against your SLO.",
            {"p99_ns": 90_000_000, "threshold_ns": 10_000_000},
            rule_facts.ETCD_GATE_DOC,
        ),
    ]
    assert [f.code for f in commit_rules.slowness(write(60_000_000))] == ["slow-median"]


# ---- evidence_findings


def test_evidence_findings_syncs_per_commit_exact():
    ev = Evidence(
        sync_traces=(
            SyncTrace(Pragmas("WAL", "FULL"), 3, {"fdatasync": 4}),
            SyncTrace(Pragmas("DELETE", "FULL"), 3, {"fdatasync": 8}, ld_preload="libeatmydata.so"),
        )
    )
    assert evidence_rules.evidence_findings(_facts(ev=ev)) == [
        Finding(
            "syncs-per-commit",
            INFO,
            "path",
            "Sync calls per commit, traced with strace: wal/full 1.33, delete/full "
            "(LD_PRELOAD=libeatmydata.so) 2.67.",
            "Each sync costs one device flush on an honest path; fewer syncs per commit (WAL) cost "
            "less.",
            {
                "syncs_per_commit": {
                    "wal/full": 1.33,
                    "delete/full (LD_PRELOAD=libeatmydata.so)": 2.67,
                }
            },
            "strace(1) of SQLite commits in a child process",
        )
    ]


def _libc_vs_syscall(message, libc_flushes, syscall_flushes):
    return Finding(
        "libc-vs-syscall",
        INFO,
        "fdatasync",
        message,
        "A raw/libc ratio far above 1 means the libc call is interposed.",
        {
            "primitive": "fdatasync",
            "libc_p50_ns": 400_000.0,
            "syscall_p50_ns": 500_000.0,
            "raw_over_libc": 1.25,
            "libc_flushes": libc_flushes,
            "syscall_flushes": syscall_flushes,
            "syncs_per_side": 100,
            "syscall_number": 75,
            "machine": "x86_64",
        },
        rule_facts.EATMYDATA_DOC,
    )


def test_evidence_findings_libc_vs_syscall_exact():
    both = SyscallComparison("fdatasync", 75, "x86_64", 100, 400_000.0, 500_000.0, 100, 101)
    one = SyscallComparison("fdatasync", 75, "x86_64", 100, 400_000.0, 500_000.0, None, 101)
    assert evidence_rules.evidence_findings(
        _facts(ev=Evidence(syscall_comparisons=(both, one)))
    ) == [
        _libc_vs_syscall(
            "libc fdatasync p50 400.0 us, raw syscall 75 p50 500.0 us (raw/libc "
            "1.25); device flushes 100 vs 101 for 100 calls each.",
            100,
            101,
        ),
        _libc_vs_syscall(
            "libc fdatasync p50 400.0 us, raw syscall 75 p50 500.0 us (raw/libc "
            "1.25) for 100 calls each.",
            None,
            101,
        ),
    ]


def test_evidence_findings_sweep_fit_and_second_descriptor_exact():
    sweep = DirtySweep("fdatasync", 150_000.0, 2e9, 0.98765, (SweepPoint(4096, 150_000),))
    second = SecondFdCheck("fdatasync", 200, 400_000, 390_000)
    assert evidence_rules.evidence_findings(
        _facts(ev=Evidence(dirty_sweep=sweep, second_fd=second))
    ) == [
        Finding(
            "sync-size-fit",
            INFO,
            "fdatasync",
            "fdatasync latency = 150.0 us flush cost + bytes at 2.00 GB/s (R^2 0.988).",
            "The flush cost is what every commit pays; the bandwidth, what its size adds.",
            {
                "flush_cost_ns": 150_000.0,
                "bandwidth_bytes_per_s": 2e9,
                "r_squared": 0.98765,
                "points": 1,
            },
            "least-squares fit of the dirty-size sweep (numpy)",
        ),
        Finding(
            "second-fd-sync-honoured",
            INFO,
            "path",
            "fdatasync on a second descriptor costs 390.0 us against 400.0 us on the writing "
            "one: it syncs the file, not the descriptor.",
            "Nothing to do.",
            _second_fd_evidence(second),
            rule_facts.PG_TEST_FSYNC_DOC,
        ),
    ]
    flat = DirtySweep("fsync", 12_000.0, None)
    assert evidence_rules.evidence_findings(_facts(ev=Evidence(dirty_sweep=flat)))[0].message == (
        "fsync latency = 12.0 us flush cost + bytes at unbounded (no growth with size)."
    )


# ---- config_durability

DURABLE_ADVICE = (
    "For a journal that must survive power loss use WAL or TRUNCATE with "
    "synchronous=FULL, or DELETE with EXTRA"
)
UNSYNCED_SOURCE = (
    rule_facts.SQLITE_SYNC_DOC
    + " (EXTRA); strace of SQLite 3.40 (fsyncbench audit traces the calls)"
)


def _not_durable(name, why, p, source, darwin=False):
    return (
        False,
        Finding(
            "config-not-durable",
            WARNING,
            name,
            f"{name}: {why}.",
            # no "or DELETE with EXTRA" on macOS: unixDelete's directory sync is a plain fsync
            (
                DURABLE_ADVICE.removesuffix(", or DELETE with EXTRA") + ", with fullfsync=ON"
                if darwin
                else DURABLE_ADVICE
            )
            + ".",
            {
                "journal_mode": p.journal_mode,
                "synchronous": p.synchronous,
                "fullfsync": p.fullfsync,
            },
            source,
        ),
    )


def test_config_durability_each_reason_exact():
    """config_durability's docstring: OFF, no journal on disk, WAL+NORMAL, DELETE below
    EXTRA / TRUNCATE below FULL (UNSYNCED_COMMIT_POINT), macOS without fullfsync, macOS
    fullfsync through F_BARRIERFSYNC."""
    linux, mac = host(), host(os_name="Darwin", fs_type="apfs")
    cases = [
        (
            linux,
            commit("WAL", "OFF", 1),
            "synchronous=OFF hands data to the OS without any sync",
            rule_facts.SQLITE_SYNC_DOC,
        ),
        (
            linux,
            commit("MEMORY", "FULL", 1),
            "journal_mode=MEMORY keeps no rollback journal on disk",
            rule_facts.SQLITE_SYNC_DOC,
        ),
        (
            linux,
            commit("OFF", "EXTRA", 1),
            "journal_mode=OFF keeps no rollback journal on disk",
            rule_facts.SQLITE_SYNC_DOC,
        ),
        (
            linux,
            commit("WAL", "NORMAL", 1),
            "WAL with synchronous=NORMAL syncs only at checkpoints; the last commits may roll back "
            "after power loss",
            rule_facts.SQLITE_WAL_DOC,
        ),
        (
            linux,
            commit("DELETE", "FULL", 1),
            "the journal unlink that commits is not synced (DELETE needs synchronous=EXTRA); the "
            "last commit may roll back after power loss",
            UNSYNCED_SOURCE,
        ),
        (
            linux,
            commit("DELETE", "NORMAL", 1),
            "the journal unlink that commits is not synced (DELETE needs synchronous=EXTRA); the "
            "last commit may roll back after power loss",
            UNSYNCED_SOURCE,
        ),
        (
            linux,
            commit("TRUNCATE", "NORMAL", 1),
            "the journal truncation that commits is not synced (TRUNCATE needs synchronous=FULL); "
            "the last commit may roll back after power loss",
            UNSYNCED_SOURCE,
        ),
        (
            mac,
            commit("WAL", "FULL", 1, primitive="fsync", fullfsync=False),
            "on macOS without fullfsync SQLite's fsync stops at the drive's cache",
            rule_facts.APPLE_FSYNC_DOC,
        ),
        (
            mac,
            commit("WAL", "FULL", 1, primitive="F_BARRIERFSYNC", fullfsync=True),
            "this SQLite implements fullfsync with F_BARRIERFSYNC (ordering, not durability)",
            rule_facts.APPLE_BARRIER_DOC,
        ),
        (
            mac,
            commit("DELETE", "EXTRA", 1, primitive="F_FULLFSYNC", fullfsync=True),
            "on macOS SQLite syncs the directory after deleting the rollback journal (the commit "
            "point) with a plain fsync even with fullfsync, which stops at the drive's cache: the "
            "deletion is durable only at the next commit's F_FULLFSYNC",
            commit_rules.SQLITE_UNIX_DELETE_DOC,
        ),
        (
            mac,
            commit(
                "WAL", "FULL", 1, primitive="fsync (F_FULLFSYNC refused: ENOTSUP)", fullfsync=True
            ),
            "the volume refused F_FULLFSYNC, so SQLite fell back to fsync (fsync (F_FULLFSYNC "
            "refused: ENOTSUP)), which on macOS stops at the drive's cache",
            rule_facts.SQLITE_FULLFSYNC_FALLBACK_DOC + "; " + rule_facts.APPLE_FSYNC_DOC,
        ),
    ]
    for h, r, why, source in cases:
        assert commit_rules.config_durability(h, r) == _not_durable(
            r.name, why, r.effective, source, darwin=h.os_name == "Darwin"
        ), r.name


def test_config_durability_durable_combinations():
    linux, mac = host(), host(os_name="Darwin", fs_type="apfs")
    for r in (
        commit("WAL", "FULL", 1),
        commit("WAL", "EXTRA", 1),
        commit("DELETE", "EXTRA", 1),
        commit("TRUNCATE", "FULL", 1),
        commit("PERSIST", "FULL", 1),
    ):
        assert commit_rules.config_durability(linux, r) == (True, None), r.name
    # PERSIST syncs its zeroed header at NORMAL, but the documentation promises nothing there
    assert commit_rules.config_durability(linux, commit("PERSIST", "NORMAL", 1))[0] is False
    full = commit("WAL", "FULL", 1, primitive="F_FULLFSYNC", fullfsync=True)
    assert commit_rules.config_durability(mac, full) == (True, None)
    # the effective pragmas are read; a result recording none requested is judged on them
    eff = dataclasses.replace(commit("WAL", "OFF", 1), requested=None)
    assert commit_rules.config_durability(linux, eff)[0] is False
    asked = dataclasses.replace(commit("WAL", "FULL", 1), requested=Pragmas("WAL", "OFF"))
    assert commit_rules.config_durability(linux, asked) == (True, None)


# ---- _counter_findings (through evidence_findings)

COUNTERS_TEXT = "The counters are device-wide: other processes' I/O on the same disk adds to them."


def _unavailable(why):
    return Finding(
        "flush-counters-unavailable",
        INFO,
        "path",
        f"Device flush counter not available: {why}.",
        "Without counters the verdict rests on weaker signals; Linux >= 5.5 has them.",
        {"reason": why},
        rule_facts.KERNEL_STAT_DOC,
    )


def test_counter_findings_unavailable_exact():
    ev = Evidence(unavailable={"flush_counters": "not permitted"})
    r = flush("fdatasync", 1_000_000, flushes=1000)
    assert evidence_rules.evidence_findings(_facts(host(disks=(WB_SSD,)), [r], ev)) == [
        _unavailable("not permitted")
    ]
    old = (
        BlockDevice("sda", write_cache="write back"),
        BlockDevice("sdb", write_cache="write back"),
    )
    assert evidence_rules.evidence_findings(_facts(host(disks=old), [r])) == [
        _unavailable("no flush fields in /sys/block/sda,sdb/stat (kernel < 5.5?)")
    ]
    # one disk with the fields is enough; a non-Linux host has none to miss
    assert evidence_rules.evidence_findings(_facts(host(disks=(old[0], WB_SSD)))) == []
    assert evidence_rules.evidence_findings(_facts(host(os_name="FreeBSD", disks=old))) == []


def test_counter_findings_device_flush_counters_exact():
    r = flush("fdatasync", 1_000_000, flushes=1000)
    base = dataclasses.replace(write(20_000), device_flushes=(FlushDelta("sda", 5, 1),))
    nothing = flush("fsync", 1_000_000)  # no counters: no row
    rows = {
        "write+fdatasync": {
            "device_flushes": 1000,
            "syncs_issued": 1000,
            "flushes_per_sync": 1.0,
            "flushes_per_op": 1.0,
            "flush_ms_per_flush": 0.05,
        },
        "write (no sync)": {
            "device_flushes": 5,
            "syncs_issued": 0,
            "flushes_per_sync": None,
            "flushes_per_op": 0.005,
            "flush_ms_per_flush": 0.2,
        },
    }
    assert evidence_rules.evidence_findings(_facts(host(disks=(WB_SSD,)), [r, base, nothing])) == [
        Finding(
            "device-flush-counters",
            INFO,
            "path",
            "Device flushes counted on sda around each workload: write+fdatasync 1000 flushes for "
            f"1000 syncs; write (no sync) 5 flushes (0.005/op). {COUNTERS_TEXT}",
            "On an honest path every sync sends at least one flush to a write-back disk.",
            {"per_result": rows, "disks": ["sda"]},
            rule_facts.KERNEL_STAT_DOC,
        )
    ]


def test_counter_findings_without_known_disks_say_the_disk():
    r = flush("fdatasync", 1_000_000, flushes=1000)
    found = evidence_rules.evidence_findings(_facts(host(), [r]))
    assert [f.message for f in found] == [
        "Device flushes counted on the disk around each workload: write+fdatasync 1000 flushes "
        f"for 1000 syncs. {COUNTERS_TEXT}"
    ]
    assert found[0].evidence["disks"] == []


def test_counter_findings_flushes_above_the_media_exact():
    img = Mount("/mnt/img", "ext4", "/dev/loop0", ("rw",))
    layers = (
        filesystem_layer(img, 0),
        StorageLayer(
            "loop", "loop0", "fsyncs-backing-file", 1, device=BlockDevice("loop0", transport="loop")
        ),
        StorageLayer("dm", "dm-0", "passes-down", 2, device=BlockDevice("dm-0")),
        filesystem_layer(Mount("/dev/shm", "tmpfs", "tmpfs", ("rw",)), 3),
    )
    chain = "ext4 /mnt/img → loop0 → dm-0 → tmpfs /dev/shm (RAM)"
    a = _counted(
        30_000,
        [FlushDelta("loop0", 1000, 5), FlushDelta("dm-0", 900, 4), FlushDelta("zz", None, None)],
    )
    b = _counted(30_000, [FlushDelta("loop0", 10, 1)], primitive="fsync")
    above = {"write+fdatasync": {"loop0": 1000, "dm-0": 900}, "write+fsync": {"loop0": 10}}
    assert evidence_rules.evidence_findings(_facts(_layered(img, layers), [a, b])) == [
        Finding(
            "flushes-counted-above-media",
            INFO,
            "path",
            "Flushes counted on layers that hold no bytes (write+fdatasync: loop0 1000, dm-0 900; "
            "write+fsync: loop0 10): they show what the filesystem sent, not what reached stable "
            f"media ({chain}).",
            "Only counts on the disk holding the bytes say whether flushes reach it.",
            {"per_result": above, "chain": chain},
            rule_facts.KERNEL_STAT_DOC,
        )
    ]


# ---- judge: verdicts, order, stances, the path-wide findings


def _stances(v):
    return [(f.code, f.subject, f.strength, f.points_to, f.stance) for f in v.findings]


def test_judge_main_primitive_leads_and_commit_rules_agree_with_a_measured_no_flush():
    """tmpfs (measured no_flush): fdatasync is the journal's primitive (MAIN_PRIMITIVES) and
    leads the findings with its weaker signals; the FULL commit no slower than OFF adds an
    agreeing sync-costs-nothing (inferred) without changing the verdict; results keep their
    order."""
    full, off = commit("WAL", "FULL", 3_000), commit("WAL", "OFF", 2_900)
    v = engine.judge(
        host(fs_type="tmpfs"),
        [flush("fsync", 2_000), flush("fdatasync", 1_500), write(1_000), full, off],
    )
    assert (v.path_verdict, v.decided_by, v.strength) == (NO_FLUSH, "no-flush-filesystem", MEASURED)
    assert v.results == (
        ResultVerdict("write+fsync", NO_FLUSH, None, "no-flush-filesystem", MEASURED),
        ResultVerdict("write+fdatasync", NO_FLUSH, None, "no-flush-filesystem", MEASURED),
        ResultVerdict("wal/full", NO_FLUSH, True, "no-flush-filesystem", MEASURED),
        ResultVerdict("wal/off", NO_FLUSH, False, "no-flush-filesystem", MEASURED),
    )
    assert _stances(v) == [
        ("no-flush-filesystem", "write+fdatasync", MEASURED, NO_FLUSH, "decides"),
        ("ram-backed-storage", "write+fdatasync", MEASURED, NO_FLUSH, "agrees"),
        ("flush-costs-nothing", "write+fdatasync", INFERRED, NO_FLUSH, "agrees"),
        ("no-flush-filesystem", "write+fsync", MEASURED, NO_FLUSH, "decides"),
        ("sync-costs-nothing", "wal/full", INFERRED, NO_FLUSH, "agrees"),
        ("config-not-durable", "wal/off", "", None, ""),
    ]
    assert v.findings[4] == Finding(
        "sync-costs-nothing",
        RISK,
        "wal/full",
        "wal/full commits take 3.0 us, only 0.1 us more than wal/off: its syncs reach no device.",
        "The filesystem or a library drops syncs; benchmark a directory on real storage.",
        {
            "p50_ns": 3_000,
            "off_p50_ns": 2_900,
            "gap_ns": 100,
            "floor_ns": 10_000.0,
            "syncs_per_commit": None,
        },
        rule_facts.LATENCY_BANDS_DOC,
        INFERRED,
        NO_FLUSH,
        "agrees",
    )


def test_judge_disagreeing_primitives_a_deciding_commit_rule_and_unknown_declarations():
    """Latency decides both primitives (inferred): fdatasync plausible, fsync below the
    150 us floor; the commit 10x faster than one fdatasync decides its own verdict
    (commit-not-waiting-for-sync, COMMIT_VS_FLUSH_MIN_RATIO); the path keeps fdatasync's."""
    base = host(disks=(WB_SSD,))
    h = dataclasses.replace(base, target=dataclasses.replace(base.target, declared=("bbu",)))
    v = engine.judge(
        h,
        [
            flush("fsync", 60_000),
            flush("fdatasync", 1_000_000),
            write(20_000),
            commit("WAL", "FULL", 100_000),
        ],
    )
    assert (v.path_verdict, v.decided_by, v.strength) == (
        HONEST_FLUSH,
        "flush-latency-plausible",
        INFERRED,
    )
    assert v.results == (
        ResultVerdict("write+fsync", VOLATILE_CACHE, None, "flush-below-device-floor", INFERRED),
        ResultVerdict("write+fdatasync", HONEST_FLUSH, None, "flush-latency-plausible", INFERRED),
        ResultVerdict("wal/full", NO_FLUSH, True, "commit-not-waiting-for-sync", INFERRED),
    )
    assert _stances(v) == [
        ("flush-latency-plausible", "write+fdatasync", INFERRED, HONEST_FLUSH, "decides"),
        ("flush-below-device-floor", "write+fsync", INFERRED, VOLATILE_CACHE, "decides"),
        ("commit-not-waiting-for-sync", "wal/full", INFERRED, NO_FLUSH, "decides"),
        ("primitives-disagree", "path", "", None, ""),
        ("unknown-declaration", "path", "", None, ""),
    ]
    assert v.findings[3:] == (
        Finding(
            "primitives-disagree",
            WARNING,
            "path",
            "The sync primitives on this one path got different verdicts: write+fdatasync "
            "honest_flush (flush-latency-plausible); write+fsync volatile_cache "
            "(flush-below-device-floor). Where one is decided only by latency near a floor, "
            "the line between them is not sharp; where a measurement covers one primitive "
            "only, the other lacks it.",
            "Read each verdict's strength; the path verdict is the one of the primitive the "
            "journal uses.",
            {"verdicts": {"write+fdatasync": HONEST_FLUSH, "write+fsync": VOLATILE_CACHE}},
            rule_facts.LATENCY_BANDS_DOC,
        ),
        Finding(
            "unknown-declaration",
            WARNING,
            "path",
            "Declared facts not understood and ignored: bbu.",
            "Declare only 'plp' (the drive holding the bytes has power-loss protection), "
            "'protected-cache' (the write-back cache in front of the disks holding the bytes, "
            "such as a RAID controller's battery- or flash-backed cache, survives a power cut).",
            {"declared": ["bbu"]},
            "docs/report-schema.md",
        ),
    )


def test_judge_commit_rule_disagreeing_with_a_measured_volatile_cache():
    """nobarrier (measured volatile_cache) stays the verdict; the fast commit is shown as
    disagreeing (it points to no_flush), as is the plausible latency."""
    h = host(disks=(WB_SSD,), mount_options=("rw", "nobarrier"))
    v = engine.judge(h, [flush("fdatasync", 1_000_000), commit("WAL", "FULL", 100_000)])
    assert (v.path_verdict, v.decided_by, v.strength) == (
        VOLATILE_CACHE,
        "barriers-disabled",
        MEASURED,
    )
    assert v.results == (
        ResultVerdict("write+fdatasync", VOLATILE_CACHE, None, "barriers-disabled", MEASURED),
        ResultVerdict("wal/full", VOLATILE_CACHE, True, "barriers-disabled", MEASURED),
    )
    assert _stances(v) == [
        ("barriers-disabled", "write+fdatasync", MEASURED, VOLATILE_CACHE, "decides"),
        ("flush-latency-plausible", "write+fdatasync", INFERRED, HONEST_FLUSH, "disagrees"),
        ("commit-not-waiting-for-sync", "wal/full", INFERRED, NO_FLUSH, "disagrees"),
    ]


def test_judge_commit_issuing_no_sync_is_measured():
    """commit-issues-no-sync comes from traced system calls: measured (COMMIT_RULE_STRENGTH)."""
    p = Pragmas("WAL", "FULL")
    ev = Evidence(sync_traces=(SyncTrace(p, 10, {}),))
    v = engine.judge(
        host(disks=(WB_SSD,)), [flush("fdatasync", 1_000_000), commit("WAL", "FULL", 1_500_000)], ev
    )
    assert v.results[1] == ResultVerdict(
        "wal/full", NO_FLUSH, True, "commit-issues-no-sync", MEASURED
    )
    assert ("commit-issues-no-sync", "wal/full", MEASURED, NO_FLUSH, "decides") in _stances(v)


def test_judge_without_a_flush_result_a_syncing_commit_stands_in():
    v = engine.judge(
        host(fs_type="tmpfs"), [commit("WAL", "OFF", 2_000), commit("WAL", "FULL", 3_000)]
    )
    assert (v.path_verdict, v.decided_by, v.strength) == (NO_FLUSH, "no-flush-filesystem", MEASURED)
    assert v.results == (
        ResultVerdict("wal/off", NO_FLUSH, False, "no-flush-filesystem", MEASURED),
        ResultVerdict("wal/full", NO_FLUSH, True, "no-flush-filesystem", MEASURED),
    )
    assert _stances(v) == [
        ("no-flush-filesystem", "wal/full", MEASURED, NO_FLUSH, "decides"),
        ("ram-backed-storage", "wal/full", MEASURED, NO_FLUSH, "agrees"),
        ("config-not-durable", "wal/off", "", None, ""),
        ("sync-costs-nothing", "wal/full", INFERRED, NO_FLUSH, "agrees"),
    ]


def test_judge_with_nothing_measured():
    assert engine.judge(host(), []) == Verdict(
        UNVERIFIABLE, "no-evidence", (), (), "none", knowledge.table().version
    )
    v = engine.judge(host(), [commit("WAL", "OFF", 2_000)])
    assert (v.path_verdict, v.decided_by, v.strength, v.results) == (
        UNVERIFIABLE,
        "no-evidence",
        "none",
        (ResultVerdict("wal/off", UNVERIFIABLE, False, "no-evidence", "none"),),
    )


# ---- rule_flush_counters: the first block layer, causes, exceptions

LOOP0_WB = BlockDevice(
    "loop0", rotational=False, write_cache="write back", transport="loop", has_flush_counters=True
)
LOOP_CHAIN = "ext4 /mnt → loop0 → ext4 / → sda"


def _loop_host():
    """ext4 on loop0 (write-back cache: the page cache) whose backing file is on ext4 on sda."""
    mount = Mount("/mnt", "ext4", "/dev/loop0", ("rw",))
    return _layered(
        mount,
        (
            filesystem_layer(mount, 0),
            StorageLayer("loop", "loop0", "fsyncs-backing-file", 1, device=LOOP0_WB),
            filesystem_layer(Mount("/", "ext4", "/dev/sda", ("rw",)), 2),
            disk_layer(WB_SSD, 3),
        ),
    )


def _cache_finding(code, message, ev, advice, doc=None):
    return (
        VOLATILE_CACHE,
        Finding(
            code,
            RISK,
            "write+fdatasync",
            message,
            advice,
            ev,
            rule_facts.KERNEL_STAT_DOC + "; " + (doc or rule_facts.BLOCK_FLUSH_DOC),
            MEASURED,
        ),
    )


def test_flush_counters_flushes_stripped_below_the_loop_device_exact():
    r = _counted(1_000_000, [FlushDelta("loop0", 1000, 0, 1000), FlushDelta("sda", 0, 0, 1000)])
    assert counter_rules.rule_flush_counters(_facts(_loop_host(), [r]), r) == _cache_finding(
        "flushes-stripped",
        "1000 fdatasync calls reached the write-back disk holding the bytes as 0 cache flushes, "
        "after writing 1.00 requests per sync to loop0: loop0 received 1.00 flushes per sync but "
        f"the disk holding the bytes got none. The data sits in a volatile cache ({LOOP_CHAIN}).",
        {
            "syncs_issued": 1000,
            "device_flushes": {"loop0": 1000, "sda": 0},
            "device_writes": {"loop0": 1000, "sda": 1000},
            "flushes_per_sync": 0.0,
            "chain": LOOP_CHAIN,
            "write_cache": ["write back"],
            "writes_per_sync": 1.0,
        },
        "Fix the layer named (its write-cache setting: queue/write_cache), or keep the journal "
        "on storage without it.",
    )


def test_flush_counters_first_block_device_got_no_flush_exact():
    """0 flushes per sync on loop0 (< DROPPED_FLUSH_RATIO) although it has a write-back cache
    and got the writes: volatile_cache, whatever the disk below counted."""
    r = _counted(1_000_000, [FlushDelta("loop0", 0, 0, 1000), FlushDelta("sda", 900, 5, 1000)])
    assert counter_rules.rule_flush_counters(_facts(_loop_host(), [r]), r) == _cache_finding(
        "flushes-not-sent",
        "1000 fdatasync calls sent 0.00 flushes per sync to loop0, the first block device under "
        "the filesystem, after writing 1.00 requests per sync to loop0: a layer above the disk "
        f"sends no flush. The data sits in a volatile cache ({LOOP_CHAIN}).",
        {
            "syncs_issued": 1000,
            "device_flushes": {"loop0": 0, "sda": 900},
            "device_writes": {"loop0": 1000, "sda": 1000},
            "flushes_per_sync": 0.9,
            "chain": LOOP_CHAIN,
            "write_cache": ["write back"],
            "writes_per_sync": 1.0,
            "first_block_device_flushes_per_sync": 0.0,
        },
        NOT_SENT_ADVICE_UNKNOWN,
    )


def test_flush_counters_first_block_device_got_nothing_and_the_disk_no_counter_exact():
    r = _counted(1_000_000, [FlushDelta("loop0", 50, 0, 0), FlushDelta("sda", None, None, None)])
    assert counter_rules.rule_flush_counters(_facts(_loop_host(), [r]), r) == (
        NO_FLUSH,
        Finding(
            "flushes-dropped",
            RISK,
            "write+fdatasync",
            "1000 fdatasync calls sent 0.05 flushes per sync to loop0, the first block device under "
            "the filesystem, with 0.00 writes per sync: nothing is written at sync time, so "
            "something above the block layer drops the syncs.",
            "Look for eatmydata, an LD_PRELOAD library or a no-op sync layer.",
            {
                "syncs_issued": 1000,
                "device_flushes": {"loop0": 50, "sda": None},
                "device_writes": {"loop0": 0, "sda": None},
                "flushes_per_sync": 0.05,
                "chain": LOOP_CHAIN,
                "write_cache": ["write back"],
                "writes_per_sync": 0.0,
                "first_block_device_flushes_per_sync": 0.05,
            },
            rule_facts.KERNEL_STAT_DOC,
            MEASURED,
        ),
    )


def test_flush_counters_nobarrier_names_the_cause_without_write_counters_exact():
    h = host(disks=(WB_SSD,), mount_options=("rw", "nobarrier"))
    r = flush("fdatasync", 1_000_000, flushes=0)
    chain = "ext4 /data (nobarrier) → sda"
    assert counter_rules.rule_flush_counters(_facts(h, [r]), r) == _cache_finding(
        "barriers-disabled",
        "1000 fdatasync calls reached the write-back disk holding the bytes as 0 cache flushes: "
        "the filesystem ext4 /data (nobarrier) is mounted without barriers. The data sits in a "
        f"volatile cache ({chain}).",
        {
            "syncs_issued": 1000,
            "device_flushes": {"sda": 0},
            "device_writes": {"sda": None},
            "flushes_per_sync": 0.0,
            "chain": chain,
            "write_cache": ["write back"],
            "mount_options": ["nobarrier", "rw"],
        },
        "Remount without nobarrier/barrier=0 unless the cache below is battery- or "
        "capacitor-backed (then say so with --assume plp).",
        rule_facts.BARRIER_DOC,
    )


def test_flush_counters_interposed_libc_is_the_cause_exact():
    h = dataclasses.replace(host(disks=(WB_SSD,)), ld_preload="libeatmydata.so")
    r = _counted(1_000_000, [FlushDelta("sda", 0, 0, 1000)])
    f = _facts(h, [r], Evidence(syscall_comparisons=(INTERPOSED,)))
    assert counter_rules.rule_flush_counters(f, r) == _cache_finding(
        "preload-skips-flush",
        "1000 fdatasync calls reached the write-back disk holding the bytes as 0 cache flushes, "
        "after writing 1.00 requests per sync to sda: the libc sync call is interposed "
        "(libeatmydata.so): it sent 0 device flushes for 100 calls where the raw system call "
        "sent 100. The data sits in a volatile cache (ext4 /data → sda).",
        {
            "syncs_issued": 1000,
            "device_flushes": {"sda": 0},
            "device_writes": {"sda": 1000},
            "flushes_per_sync": 0.0,
            "chain": "ext4 /data → sda",
            "write_cache": ["write back"],
            "writes_per_sync": 1.0,
            "ld_preload": "libeatmydata.so",
            "libraries": ["libeatmydata.so"],
        },
        "Unset LD_PRELOAD / clear /etc/ld.so.preload of the library named and audit again.",
    )


def test_flush_counters_background_flushes_are_taken_out():
    """200 flushes for 1000 syncs (0.2, above DROPPED_FLUSH_RATIO) of which the no-sync
    baseline's rate explains 150: 0.05 per sync are the syncs' own: lost. The evidence keeps
    the counted ratio."""
    base = dataclasses.replace(
        write(20_000), device_flushes=(FlushDelta("sda", 150, 0),), elapsed_ns=1_000_000_000
    )
    r = _counted(1_000_000, [FlushDelta("sda", 200, 10, 1000)], elapsed_ns=1_000_000_000)
    h = host(disks=(WB_SSD,))
    assert counter_rules.rule_flush_counters(_facts(h, [r]), r) is None
    assert counter_rules.rule_flush_counters(_facts(h, [base, r]), r) == _cache_finding(
        "flushes-not-sent",
        "1000 fdatasync calls reached the write-back disk holding the bytes as 200 cache "
        "flushes, after writing 1.00 requests per sync to sda: a layer above the disk sends no "
        "flush. The data sits in a volatile cache (ext4 /data → sda).",
        {
            "syncs_issued": 1000,
            "device_flushes": {"sda": 200},
            "device_writes": {"sda": 1000},
            "flushes_per_sync": 0.2,
            "chain": "ext4 /data → sda",
            "write_cache": ["write back"],
            "writes_per_sync": 1.0,
        },
        NOT_SENT_ADVICE_UNKNOWN,
    )


def test_flush_counters_exceptions_power_loss_protection_and_fua():
    """No verdict where no flush is needed: a cache with power-loss protection, or O_DSYNC
    writes that may go as FUA to a disk declaring it (FUA_PRIMITIVES)."""
    plp = BlockDevice(
        "sdb",
        vendor="ATA",
        model="Micron_5300_MTFD",
        rotational=False,
        write_cache="write back",
        has_flush_counters=True,
    )
    r = _counted(1_000_000, [FlushDelta("sdb", 0, 0, 1000)])
    assert counter_rules.rule_flush_counters(_facts(host(disks=(plp,)), [r]), r) is None
    fua = dataclasses.replace(WB_SSD, fua=True)
    h = host(disks=(fua,))
    for writes in (1000, None):
        dsync = _counted(1_000_000, [FlushDelta("sda", 0, 0, writes)], primitive="O_DSYNC")
        assert counter_rules.rule_flush_counters(_facts(h, [dsync]), dsync) is None
    nothing = _counted(1_000_000, [FlushDelta("sda", 0, 0, 0)], primitive="O_DSYNC")
    assert (
        counter_rules.rule_flush_counters(_facts(h, [nothing]), nothing)[1].code
        == "flushes-dropped"
    )
    fdatasync = _counted(1_000_000, [FlushDelta("sda", 0, 0, 1000)])
    assert counter_rules.rule_flush_counters(_facts(h, [fdatasync]), fdatasync)[0] == VOLATILE_CACHE
    assert counter_rules.rule_flush_counters(_facts(h), None) is None
    few = _counted(1_000_000, [FlushDelta("sda", 0, 0, 49)], syncs=49)  # < COUNTER_MIN_SYNCS
    assert counter_rules.rule_flush_counters(_facts(h, [few]), few) is None


# ---- more fact helpers


def test_overall_primitive_prefers_the_journal_primitives_in_order():
    """MAIN_PRIMITIVES: F_FULLFSYNC, fdatasync, fsync, FlushFileBuffers; else the first
    syncing result."""
    fsync, full, fdata = flush("fsync", 1), flush("F_FULLFSYNC", 1), flush("fdatasync", 1)
    assert engine._overall_primitive([fsync, fdata, full]) is full
    assert engine._overall_primitive([fsync, fdata]) is fdata
    assert engine._overall_primitive([flush("O_DSYNC", 1), fsync]) is fsync
    none, other = flush("none", 1), flush("DIOCGFLUSH", 1)
    assert engine._overall_primitive([none, other, flush("O_DSYNC", 1)]) is other
    assert engine._overall_primitive([none]) is None
    assert engine._overall_primitive([]) is None


def test_strength_of_a_finding():
    f = Finding("x", INFO, "path", "m", "a")
    assert engine._strength(None) == "none"
    assert engine._strength(f) == "none"
    assert engine._strength(dataclasses.replace(f, strength=MEASURED)) == MEASURED


def test_models_of_the_media_disks():
    h = host(
        disks=(
            BlockDevice("sda", vendor="ATA", model="Samsung SSD"),
            BlockDevice("sdb", model="X"),
            BlockDevice("sdc", vendor="Y"),
        )
    )
    assert rule_facts._models(h) == "ata samsung ssd  x y "


def test_media_deltas_least_and_counter_ratio():
    h = _partitioned()
    r = _counted(
        1,
        [FlushDelta("sda1", 5, 1, 9), FlushDelta("sda", 70, 2, 80), FlushDelta("sdx", 60, 3, None)],
        syncs=50,
    )
    assert rule_facts._media_deltas(r, h) == [
        FlushDelta("sda", 70, 2, 80),
        FlushDelta("sdx", 60, 3, None),
    ]
    assert rule_facts._media_deltas(r) == list(r.device_flushes)
    assert rule_facts._least(rule_facts._media_deltas(r, h)) == 60
    assert rule_facts._least(rule_facts._media_deltas(r, h), "writes") is None
    assert rule_facts._least([]) is None
    assert rule_facts._least_flushes(r, h) == 60
    assert rule_facts._least_flushes(r) == 5
    assert rule_facts._counter_ratio(r, h) == 1.2  # 60 / 50, COUNTER_MIN_SYNCS is enough
    assert rule_facts._counter_ratio(dataclasses.replace(r, syncs_issued=49), h) is None
    assert rule_facts._counter_ratio(dataclasses.replace(r, syncs_issued=None), h) is None
    assert rule_facts._counter_ratio(None, h) is None
    assert rule_facts._counter_ratio(_counted(1, [FlushDelta("sda", None, None)]), h) is None


def test_background_flushes_scale_the_baseline_rate_to_the_window():
    # powers of two, so the rate is exact: 32 flushes in 2^31 ns, scaled to 2^29 ns
    base = dataclasses.replace(
        write(1),
        device_flushes=(FlushDelta("sda", 32, 0), FlushDelta("sda1", 1, 0)),
        elapsed_ns=1 << 31,
    )
    r = _counted(1, [FlushDelta("sda", 500, 0)], elapsed_ns=1 << 29)
    h = _partitioned()
    assert rule_facts._background_flushes(_facts(h, [base, r]), r) == 8.0
    assert rule_facts._background_flushes(_facts(h, [r]), r) is None
    assert (
        rule_facts._background_flushes(_facts(h, [dataclasses.replace(base, elapsed_ns=0), r]), r)
        is None
    )
    assert (
        rule_facts._background_flushes(_facts(h, [base]), dataclasses.replace(r, elapsed_ns=0))
        is None
    )
    bare = dataclasses.replace(base, device_flushes=())
    assert rule_facts._background_flushes(_facts(h, [bare, r]), r) is None


def test_reached_ratio_with_and_without_background():
    """_reached_ratio: None when the baseline alone explains half a flush per sync
    (REACHED_FLUSH_RATIO), else the ratio less the background, never below 0."""
    h = host(disks=(WB_SSD,))
    r = _counted(1, [FlushDelta("sda", 800, 0)], elapsed_ns=1_000_000_000)

    def base(n):
        return dataclasses.replace(
            write(1), device_flushes=(FlushDelta("sda", n, 0),), elapsed_ns=1_000_000_000
        )

    assert rule_facts._reached_ratio(_facts(h, [r]), r) == 0.8
    assert rule_facts._reached_ratio(_facts(h, [base(300), r]), r) == 0.5
    assert rule_facts._reached_ratio(_facts(h, [base(499), r]), r) == pytest.approx(0.301)
    assert rule_facts._reached_ratio(_facts(h, [base(500), r]), r) is None
    low = _counted(1, [FlushDelta("sda", 100, 0)], elapsed_ns=1_000_000_000)
    assert rule_facts._reached_ratio(_facts(h, [base(300), low]), low) == 0.0
    assert rule_facts._reached_ratio(_facts(h), None) is None


def test_comparison_by_primitive():
    a = SyscallComparison("fdatasync", 75, "x86_64", 100, 1.0, 2.0)
    b = SyscallComparison("fsync", 74, "x86_64", 100, 1.0, 2.0)
    f = _facts(ev=Evidence(syscall_comparisons=(a, b)))
    assert rule_facts._comparison(f, "fsync") is b
    assert rule_facts._comparison(f, "fdatasync") is a
    assert rule_facts._comparison(f, "F_FULLFSYNC") is None
    assert rule_facts._comparison(_facts(), "fsync") is None


def test_weaker_signals_mark_agreement():
    r = flush("fdatasync", 1_500)
    f = _facts(host(fs_type="tmpfs"), [write(1_000), r])
    assert [
        (x.code, x.points_to, x.stance)
        for x in path_rules.weaker_signals(f, r, NO_FLUSH, "no-flush-filesystem")
    ] == [("ram-backed-storage", NO_FLUSH, "agrees"), ("flush-costs-nothing", NO_FLUSH, "agrees")]
    assert [
        (x.code, x.points_to, x.stance)
        for x in path_rules.weaker_signals(f, r, HONEST_FLUSH, "ram-backed-storage")
    ] == [
        ("no-flush-filesystem", NO_FLUSH, "disagrees"),
        ("flush-costs-nothing", NO_FLUSH, "disagrees"),
    ]


def test_counter_findings_name_every_media_disk_and_the_least_count():
    """With two disks holding the bytes (md/dm: each sync flushes every leaf) the row shows
    the least-flushed one."""
    sdb = dataclasses.replace(WB_SSD, name="sdb")
    r = _counted(1_000_000, [FlushDelta("sdb", 900, 40), FlushDelta("sda", 1000, 50)])
    assert evidence_rules.evidence_findings(_facts(host(disks=(sdb, WB_SSD)), [r])) == [
        Finding(
            "device-flush-counters",
            INFO,
            "path",
            "Device flushes counted on sda, sdb around each workload: write+fdatasync 900 flushes "
            f"for 1000 syncs. {COUNTERS_TEXT}",
            "On an honest path every sync sends at least one flush to a write-back disk.",
            {
                "per_result": {
                    "write+fdatasync": {
                        "device_flushes": 900,
                        "syncs_issued": 1000,
                        "flushes_per_sync": 0.9,
                        "flushes_per_op": 0.9,
                        "flush_ms_per_flush": 0.0444,
                    }
                },
                "disks": ["sda", "sdb"],
            },
            rule_facts.KERNEL_STAT_DOC,
        )
    ]


# ---- second pass: branches, boundaries and the primitive each rule names


def test_reached_ratio_without_counters_is_none_even_with_a_baseline():
    base = dataclasses.replace(
        write(1), device_flushes=(FlushDelta("sda", 10, 0),), elapsed_ns=1_000_000_000
    )
    r = dataclasses.replace(flush("fdatasync", 1), elapsed_ns=1_000_000_000)
    assert rule_facts._reached_ratio(_facts(host(disks=(WB_SSD,)), [base, r]), r) is None


def test_rules_name_the_primitive_of_the_result():
    """Each path rule speaks of the result's own primitive (fsync here), not the path's
    default (fdatasync on Linux)."""
    r = flush("fsync", 2_000)
    assert platform_rules.rule_no_flush_filesystem(_facts(host(fs_type="tmpfs")), r)[1].message == (
        "The target is on tmpfs, which keeps data in RAM: fsync never reaches a block device."
    )
    nfs = _mounted("nfs4", "server:/export")
    assert platform_rules.rule_network_filesystem(_facts(nfs), r)[1].message == (
        "The target's storage goes through the network filesystem /data (type nfs4, source "
        "server:/export): fsync is forwarded to a server or daemon whose storage cannot be seen "
        "from here."
    )
    virt = Virtualization(hypervisor_flag=True, dmi_product="VirtualBox")
    assert platform_rules.rule_hypervisor_ignores_flush(_facts(host(virt=virt)), r)[1] == Finding(
        "hypervisor-ignores-flush",
        RISK,
        "write+fsync",
        "This is a VirtualBox guest (DMI product_name VirtualBox): by default VirtualBox "
        "ignores the guest's flush requests, so fsync ends in the host's cache.",
        "On the host: VBoxManage setextradata VM-name "
        '"VBoxInternal/Devices/ahci/0/LUN#0/Config/IgnoreFlush" 0 (piix3ide for IDE disks; '
        "the VM log then lacks 'Flushes will be ignored'), or run fsyncbench on the host.",
        {"signs": ["DMI product_name VirtualBox"], "flushes_per_sync": None},
        rule_facts.VIRTUALBOX_DOC,
        INFERRED,
    )
    h = dataclasses.replace(host(disks=(WB_SSD,)), ld_preload="libeatmydata.so:libnosync.so")
    assert platform_rules.rule_sync_disabling_preload(_facts(h, [r]), r)[1].message == (
        "libeatmydata.so, libnosync.so is preloaded into this process; it turns fsync into a "
        "no-op (a name match: no measurement contradicts it)."
    )
    c = SyscallComparison("fsync", 74, "x86_64", 100, 400_000.0, 400_000.0)
    assert (
        platform_rules.rule_sync_disabling_preload(
            _facts(h, [r], Evidence(syscall_comparisons=(c,))), r
        )
        is None
    )
    nobarrier = host(disks=(WB_SSD,), mount_options=("rw", "nobarrier"))
    assert platform_rules.rule_barriers_disabled(_facts(nobarrier, [r]), r)[1].message == (
        "ext4 /data is mounted with nobarrier: fsync writes data to the drive but never asks it "
        "to flush its volatile write cache."
    )


def test_zfs_and_part_ram_findings_name_the_result():
    h = Host(
        "case-host",
        "Linux",
        StorageTarget("/tank/db", Mount("/tank/db", "zfs", "tank/db")),
        virtualization=BARE,
    )
    ev = Evidence(environment=EnvironmentFacts(zfs_sync="disabled"))
    r = flush("fsync", 2_000)
    hit = platform_rules.rule_no_flush_filesystem(_facts(h, ev=ev), r)[1]
    assert (hit.subject, hit.message) == (
        "write+fsync",
        (
            "The ZFS dataset tank/db has sync=disabled: fsync returns at once and data reaches disk "
            "only with the next transaction group."
        ),
    )


def test_ram_media_names_every_ram_and_stable_layer():
    zram1 = dataclasses.replace(ZRAM0, name="zram1")
    sdb = dataclasses.replace(WB_SSD, name="sdb")
    mount = Mount("/data", "btrfs", "/dev/zram0", ("rw",))
    layers = (
        filesystem_layer(mount, 0),
        disk_layer(ZRAM0, 1),
        disk_layer(zram1, 1),
        disk_layer(WB_SSD, 1),
        disk_layer(sdb, 1),
    )
    r = flush("fsync", 30_000)
    hit = platform_rules.rule_ram_media(_facts(_layered(mount, layers)), r)[1]
    assert (hit.subject, hit.message.split(":")[0]) == (
        "write+fsync",
        "Part of the storage holding the bytes is RAM (zram0, zram1) and part is not (sda, sdb)",
    )
    img = Mount("/mnt/img", "ext4", "/dev/loop0", ("rw",))
    loop_on_tmpfs = (
        filesystem_layer(img, 0),
        StorageLayer(
            "loop", "loop0", "fsyncs-backing-file", 1, device=BlockDevice("loop0", transport="loop")
        ),
        filesystem_layer(Mount("/dev/shm", "tmpfs", "tmpfs", ("rw",)), 2),
    )
    assert platform_rules.rule_ram_media(_facts(_layered(img, loop_on_tmpfs)), r)[1].message == (
        "The bytes end in RAM: ext4 /mnt/img → loop0 → tmpfs /dev/shm (RAM). fsync is passed "
        "down the stack, but the layer that holds the data is memory, lost with the power."
    )


def test_flush_counters_first_block_device_at_the_dropped_ratio_is_not_dropped():
    """DROPPED_FLUSH_RATIO is exclusive: 0.1 flushes per sync on loop0 is not 'no flush'."""
    r = _counted(1_000_000, [FlushDelta("loop0", 100, 0, 1000), FlushDelta("sda", 1000, 5, 1000)])
    assert counter_rules.rule_flush_counters(_facts(_loop_host(), [r]), r) is None


def test_flush_counters_background_is_per_sync():
    """0.2 flushes per sync less 50 background flushes over 1000 syncs is 0.15: reached."""
    base = dataclasses.replace(
        write(20_000), device_flushes=(FlushDelta("sda", 50, 0),), elapsed_ns=1_000_000_000
    )
    r = _counted(1_000_000, [FlushDelta("sda", 200, 10, 1000)], elapsed_ns=1_000_000_000)
    assert counter_rules.rule_flush_counters(_facts(host(disks=(WB_SSD,)), [base, r]), r) is None


def test_flush_counters_fua_reads_the_first_block_device_writes_first():
    """FUA: the writes per sync on the first block device decide when counted, else the
    media's."""
    fua = dataclasses.replace(WB_SSD, fua=True)
    mount = Mount("/mnt", "ext4", "/dev/loop0", ("rw",))
    h = _layered(
        mount,
        (
            filesystem_layer(mount, 0),
            StorageLayer("loop", "loop0", "fsyncs-backing-file", 1, device=LOOP0_WB),
            filesystem_layer(Mount("/", "ext4", "/dev/sda", ("rw",)), 2),
            disk_layer(fua, 3),
        ),
    )
    r = _counted(
        1_000_000,
        [FlushDelta("loop0", 1000, 0, 1000), FlushDelta("sda", 0, 0, 0)],
        primitive="O_DSYNC",
    )
    assert counter_rules.rule_flush_counters(_facts(h, [r]), r) is None
    part = _partitioned(disk=fua)
    r = _counted(1_000_000, [FlushDelta("sda", 0, 0, 0)], primitive="O_DSYNC")
    assert counter_rules.rule_flush_counters(_facts(part, [r]), r)[1].code == "flushes-dropped"


def test_flush_counters_rounds_ratios_to_three_decimals_exact():
    r = _counted(
        1_000_000, [FlushDelta("loop0", 10, 0, 200), FlushDelta("sda", 10, 0, 200)], syncs=300
    )
    assert counter_rules.rule_flush_counters(_facts(_loop_host(), [r]), r) == _cache_finding(
        "flushes-not-sent",
        "300 fdatasync calls sent 0.03 flushes per sync to loop0, the first block device under "
        "the filesystem, after writing 0.67 requests per sync to loop0: a layer above the disk "
        f"sends no flush. The data sits in a volatile cache ({LOOP_CHAIN}).",
        {
            "syncs_issued": 300,
            "device_flushes": {"loop0": 10, "sda": 10},
            "device_writes": {"loop0": 200, "sda": 200},
            "flushes_per_sync": 0.033,
            "chain": LOOP_CHAIN,
            "write_cache": ["write back"],
            "writes_per_sync": 0.667,
            "first_block_device_flushes_per_sync": 0.033,
        },
        NOT_SENT_ADVICE_UNKNOWN,
    )


def test_flush_counters_stripped_from_half_a_flush_per_sync():
    """REACHED_FLUSH_RATIO is inclusive: 0.5 flushes per sync on loop0 'received'."""
    r = _counted(1_000_000, [FlushDelta("loop0", 500, 0, 1000), FlushDelta("sda", 0, 0, 1000)])
    hit = counter_rules.rule_flush_counters(_facts(_loop_host(), [r]), r)[1]
    assert (hit.code, hit.message.split(": ")[1]) == (
        "flushes-stripped",
        "loop0 received 0.50 flushes per sync but the disk holding the bytes got none. The data "
        f"sits in a volatile cache ({LOOP_CHAIN}).",
    )


def test_flush_counters_dropped_at_a_tenth_of_a_write_per_sync_exact():
    """0.1 writes per sync is not < DROPPED_FLUSH_RATIO: not 'nothing written'."""
    r = _counted(1_000_000, [FlushDelta("sda", 0, 0, 100)])
    hit = counter_rules.rule_flush_counters(_facts(host(disks=(WB_SSD,)), [r]), r)[1]
    assert hit.message == (
        "1000 fdatasync calls reached the disk as 0 cache flushes although its write-back cache "
        "needs them, with 0.10 writes per sync: something above the block layer drops the syncs."
    )


def test_flush_counters_dropped_counts_flushes_on_the_media_only():
    r = _counted(1_000_000, [FlushDelta("sda1", 0, 0, None), FlushDelta("sda", 30, 3, 0)])
    hit = counter_rules.rule_flush_counters(_facts(_partitioned(), [r]), r)[1]
    assert hit.message == (
        "1000 fdatasync calls reached the disk as 30 cache flushes although its write-back cache "
        "needs them, with 0.00 writes per sync: nothing is written at sync time, so something "
        "above the block layer drops the syncs."
    )


def test_libc_interposed_details():
    """Only the sync-disabling libraries are named when any is preloaded; the comparison of
    the result's own primitive is read; REACHED_FLUSH_RATIO (inclusive) of writes per sync
    means it keeps writing; the ratio guards a libc p50 below 1 ns."""
    h = dataclasses.replace(
        host(disks=(WB_SSD,)), ld_preload="libfoo.so:libeatmydata.so:libnosync.so"
    )
    c = SyscallComparison("fsync", 74, "x86_64", 100, 200_000.0, 400_000.0, 0, 100)
    r = _counted(600, [FlushDelta("sda", 0, 0, 500)], primitive="fsync")
    verdict, hit = counter_rules.rule_libc_interposed(
        _facts(h, [r], Evidence(syscall_comparisons=(c,))), r
    )
    assert verdict == VOLATILE_CACHE
    assert hit.message == (
        "libc fsync returns in 200.0 us but the raw system call takes 400.0 us and sends 1.00 "
        "device flushes per call against 0.00: a library interposes the libc call; it writes "
        "the data but sends no flush."
    )
    assert hit.advice == (
        "Unset LD_PRELOAD / clear /etc/ld.so.preload of libeatmydata.so, "
        "libnosync.so and audit again."
    )
    assert hit.evidence["sync_disabling_libraries"] == ["libeatmydata.so", "libnosync.so"]
    tiny = SyscallComparison("fdatasync", 75, "x86_64", 100, 0.5, 400_000.0)
    assert (
        counter_rules.rule_libc_interposed(_facts(ev=Evidence(syscall_comparisons=(tiny,))), None)[
            1
        ].evidence["ratio"]
        == 400_000.0
    )


def test_sweep_median_and_least_time_boundaries():
    """The median of the largest size's syncs (the middle of the sorted times) against
    largest / ceiling: a median exactly at the least possible time is possible."""
    big = 64 << 20  # 64 MiB at 16 GB/s: 4194304 ns exactly
    four = tuple(SweepPoint(big, t) for t in (1_000_000, 1_000_000, 5_000_000, 5_000_000))
    ev = Evidence(dirty_sweep=DirtySweep("fdatasync", 1.0, 1e12, None, four))
    assert timing_rules.rule_sweep_bandwidth(_facts(ev=ev), None) is None
    at = (SweepPoint(big, 4_194_304),)
    ev = Evidence(dirty_sweep=DirtySweep("fdatasync", 1.0, 1e12, None, at))
    assert timing_rules.rule_sweep_bandwidth(_facts(ev=ev), None) is None
    ev = Evidence(dirty_sweep=DirtySweep("fdatasync", 1.0, 16e9, None))  # the ceiling itself
    assert timing_rules.rule_sweep_bandwidth(_facts(ev=ev), None) is None
    ev = Evidence(dirty_sweep=DirtySweep("fsync", 1.0, 40_500_000_020.0, None))
    r = flush("fsync", 1_000_000)
    hit = timing_rules.rule_sweep_bandwidth(_facts(ev=ev), r)[1]
    assert (hit.subject, hit.message) == (
        "write+fsync",
        (
            "Dirty-size sweep with fsync: the fitted bandwidth 41 GB/s exceeds 16 GB/s, the most the "
            "storage links here carry: the data never left RAM."
        ),
    )
    assert timing_rules.rule_sweep_bandwidth(_facts(ev=ev), flush("fdatasync", 1)) is None


def test_flush_costs_nothing_no_slower():
    base = write(20_000)
    for p50, text in (
        (20_000, "no slower than"),
        (19_000, "no slower than"),
        (20_000.5, "only 0.0 us more than"),
    ):
        r = flush("fdatasync", p50)
        assert timing_rules.rule_flush_costs_nothing(_facts(results=[base, r]), r)[1].message == (
            f"write+fdatasync p50 {p50 / 1e3:.1f} us is {text} the same write without a sync "
            "(20.0 us): the fdatasync reaches no device."
        ), p50


def test_preload_and_barriers_for_the_path_itself():
    h = dataclasses.replace(
        host(disks=(WB_SSD,), mount_options=("rw", "nobarrier")), ld_preload="libeatmydata.so"
    )
    assert platform_rules.rule_sync_disabling_preload(_facts(h), None)[1].message == (
        "libeatmydata.so is preloaded into this process; it turns fdatasync into a no-op (a name "
        "match: no measurement contradicts it)."
    )
    assert platform_rules.rule_barriers_disabled(_facts(h), None)[1].message == (
        "ext4 /data is mounted with nobarrier: fdatasync writes data to the drive but never "
        "asks it to flush its volatile write cache."
    )


def test_barriers_disabled_exceptions():
    """No verdict when the device right below has no volatile cache ('write through'), when
    the disk directly below has power-loss protection, or when counters show at least
    REACHED_FLUSH_RATIO (inclusive) flushes per sync reaching that disk."""
    wt = BlockDevice("sda", rotational=False, write_cache="write through", has_flush_counters=True)
    r = flush("fdatasync", 1_000_000)
    assert (
        platform_rules.rule_barriers_disabled(
            _facts(host(disks=(wt,), mount_options=("rw", "nobarrier")), [r]), r
        )
        is None
    )
    plp = BlockDevice(
        "sda",
        vendor="ATA",
        model="Micron_5300_MTFD",
        rotational=False,
        write_cache="write back",
        has_flush_counters=True,
    )
    assert (
        platform_rules.rule_barriers_disabled(
            _facts(host(disks=(plp,), mount_options=("rw", "nobarrier")), [r]), r
        )
        is None
    )
    half = flush("fdatasync", 1_000_000, flushes=500)
    h = host(disks=(WB_SSD,), mount_options=("rw", "nobarrier"))
    assert platform_rules.rule_barriers_disabled(_facts(h, [half]), half) is None
    # a loop device's cache (the page cache) has no power-loss protection
    img = Mount("/mnt", "ext4", "/dev/loop0", ("rw", "nobarrier"))
    loop_host = _layered(
        img,
        (
            filesystem_layer(img, 0),
            StorageLayer("loop", "loop0", "fsyncs-backing-file", 1, device=LOOP0_WB),
            filesystem_layer(Mount("/", "ext4", "/dev/sda", ("rw",)), 2),
            disk_layer(plp, 3),
        ),
    )
    assert platform_rules.rule_barriers_disabled(_facts(loop_host, [r]), r)[1].evidence[
        "filesystems"
    ] == ["/mnt"]


def test_virtualbox_disk_named_by_vendor_and_model_together():
    vbox = BlockDevice("sda", vendor="VBOX", model="HARDDISK", write_cache="write back")
    assert platform_rules._virtualbox(host(disks=(vbox,), virt=VM)) == ["disk sda model HARDDISK"]


def test_hypervisor_finding_counts_flushes_on_the_media():
    virt = Virtualization(hypervisor_flag=True, detect_virt="oracle")
    r = _counted(1_000_000, [FlushDelta("sda1", 100, 5), FlushDelta("sda", 300, 5)])
    hit = platform_rules.rule_hypervisor_ignores_flush(_facts(_partitioned(virt), [r]), r)[1]
    assert (hit.subject, hit.evidence) == (
        "write+fdatasync",
        {"signs": ["systemd-detect-virt oracle"], "flushes_per_sync": 0.3},
    )


def test_cloud_block_storage_more_disks_and_names():
    pd = BlockDevice("sdb", vendor="Google", model="PersistentDisk", write_cache="write back")
    nvme_pd = BlockDevice("nvme0n1", model="nvme_card-pd", write_cache="write back")
    r = flush("fdatasync", 100_000)  # NETWORK_BLOCK_FLOOR_NS itself is a round trip
    hit = platform_rules.rule_cloud_block_storage(
        _facts(host(disks=(EBS, pd, nvme_pd), virt=VM)), r
    )[1]
    assert hit.message == (
        "The target sits on Amazon Elastic Block Store, PersistentDisk, nvme_card-pd, network "
        "block storage whose provider acknowledges a write only once it is stored redundantly."
    )
    by_vendor = BlockDevice("sdc", vendor="PersistentDisk", model=None, write_cache="write back")
    hit = platform_rules.rule_cloud_block_storage(_facts(host(disks=(by_vendor,), virt=VM)), r)[1]
    assert (hit.message.split(",")[0], hit.evidence["models"]) == ("The target sits on ?", [None])


def test_virtualized_counts_rounding_primitive_and_disks():
    h = _partitioned(VM, VDA, "vda1")
    r = _counted(1_000_000, [FlushDelta("vda1", 100, 5), FlushDelta("vda", 300, 30)])
    assert platform_rules.rule_virtualized(_facts(h, [r]), r)[1].message == _vm_text(
        "only 0.30 device flushes per sync arrived for fdatasync"
    )
    third = _counted(1_000_000, [FlushDelta("vda", 200, 30)], syncs=300, primitive="fsync")
    hit = platform_rules.rule_virtualized(_facts(host(disks=(VDA,), virt=VM), [third]), third)[1]
    assert (hit.message, hit.evidence["flushes_per_sync"]) == (
        _vm_text("fsync reaches the virtual disk (0.67 device flushes per sync counted)"),
        0.667,
    )
    base = dataclasses.replace(
        write(20_000), device_flushes=(FlushDelta("vda", 100, 0),), elapsed_ns=1_000_000_000
    )
    half = _counted(
        1_000_000, [FlushDelta("vda", 500, 25)], primitive="fsync", elapsed_ns=1_000_000_000
    )
    assert platform_rules.rule_virtualized(_facts(host(disks=(VDA,), virt=VM), [base, half]), half)[
        1
    ].message == _vm_text(
        "fsync was followed by 0.50 device flushes per sync, but other "
        "I/O on the disk could explain them"
    )
    few = flush("fsync", 1_000_000, flushes=100, device="vda")
    assert platform_rules.rule_virtualized(_facts(host(disks=(VDA,), virt=VM), [few]), few)[
        1
    ].message == (_vm_text("only 0.10 device flushes per sync arrived for fsync"))
    plain = flush("fsync", 1_000_000)
    assert platform_rules.rule_virtualized(_facts(host(disks=(VDA,), virt=VM), [plain]), plain)[
        1
    ].message == _vm_text("fsync goes to the virtual disk")
    vda = BlockDevice("vda", write_cache="write through", transport="virtio")
    vdb = BlockDevice("vdb", write_cache="write through", transport="virtio")
    assert platform_rules.rule_virtualized(_facts(host(disks=(vda, vdb), virt=VM)), None)[
        1
    ].message == (
        "This is a virtual machine whose disk vda, vdb reports a write-through cache: the guest "
        "sends it no flush, and whether the host writes through or keeps the data in its page "
        "cache cannot be seen from inside."
    )


def test_stack_not_followed_lists_every_stuck_layer():
    mount = Mount("/data", "ext4", "/dev/md0", ("rw",))
    layers = (
        filesystem_layer(mount, 0),
        StorageLayer("md", "md0", "passes-down", 1, device=BlockDevice("md0")),
        StorageLayer("loop", "loop0", "unknown", 2, device=BlockDevice("loop0"), note="n0"),
        StorageLayer("loop", "loop1", "unknown", 2, device=BlockDevice("loop1"), note="n1"),
    )
    hit = platform_rules.rule_stack_not_followed(_facts(_layered(mount, layers)), None)[1]
    assert (hit.message, hit.evidence["stopped_at"]) == (
        "The storage under the target could not be followed to the medium holding the bytes "
        "(ext4 /data → md0 → loop0 + loop1; loop0: n0; loop1: n1): nothing measured here can be "
        "tied to it.",
        ["loop0", "loop1"],
    )


def test_flushes_reach_device_needs_a_write_back_disk_and_half_a_flush_per_sync():
    wt = BlockDevice("sda", rotational=False, write_cache="write through", has_flush_counters=True)
    r = flush("fdatasync", 1_000_000, flushes=1000)
    assert counter_rules.rule_flushes_reach_device(_facts(host(disks=(wt,)), [r]), r) is None
    half = flush("fdatasync", 1_000_000, flushes=500)
    assert (
        counter_rules.rule_flushes_reach_device(_facts(host(disks=(WB_SSD,)), [half]), half)[
            1
        ].evidence["flushes_per_sync"]
        == 0.5
    )
    third = _counted(
        1_000_000, [FlushDelta("sda1", 100, 50), FlushDelta("sda", 200, 20)], syncs=300
    )
    assert counter_rules.rule_flushes_reach_device(_facts(_partitioned(), [third]), third)[
        1
    ].evidence == {
        "flushes_per_sync": 0.667,
        "flushes_per_sync_net_of_other_io": 0.667,
        "flush_ms_per_flush": 0.1,
        "p50_ns": 1_000_000,
        "device_class": CONSUMER_SSD,
        "floor_ns": 150_000,
        "fast_flush_allowed_by": None,
    }


def test_device_class_follows_the_result_primitive_on_apple_silicon():
    """F_FULLFSYNC on an Apple Fabric SSD has its own 1 ms floor (APPLE_FULLFSYNC_FLOOR_NS)."""
    apple = host(
        os_name="Darwin", fs_type="apfs", disks=(WB_SSD,), darwin={"BusProtocol": "Apple Fabric"}
    )
    r = flush("F_FULLFSYNC", 2_000_000, flushes=1000)
    assert counter_rules.rule_flushes_reach_device(_facts(apple, [r]), r)[1].evidence[
        "device_class"
    ] == ("Apple internal SSD (F_FULLFSYNC)")
    no_disks = host(os_name="Darwin", fs_type="apfs", darwin={"BusProtocol": "Apple Fabric"})
    fast = flush("F_FULLFSYNC", 500_000)
    assert timing_rules.rule_latency_floor(_facts(no_disks, [fast]), fast) == (
        VOLATILE_CACHE,
        Finding(
            "flush-below-device-floor",
            RISK,
            "write+F_FULLFSYNC",
            "F_FULLFSYNC p50 500.0 us is below the 1000 us a flush to stable media takes on an Apple "
            "internal SSD (F_FULLFSYNC): something acknowledges it from a cache.",
            # macOS: no Linux tool to name (nvme id-ctrl was named before: issue 32, 4a)
            "Check the drive's write cache and power-loss protection (the vendor's data "
            "sheet); if the drive has power-loss protection, say so with --assume plp. A power "
            "pull (fsyncbench powercut) settles it.",
            {
                "p50_ns": 500_000,
                "device_class": "Apple internal SSD (F_FULLFSYNC)",
                "floor_ns": 1_000_000,
                "flushes_per_sync": None,
                "fast_flush_allowed_by": None,
            },
            rule_facts.LATENCY_BANDS_DOC,
            INFERRED,
        ),
    )


def test_latency_floor_needs_a_known_medium_and_a_result():
    r = flush("fdatasync", 5_000)
    assert timing_rules.rule_latency_floor(_facts(host(), [r]), r) is None
    assert timing_rules.rule_latency_floor(_facts(host(disks=(WB_SSD,))), None) is None


def test_latency_floor_boundaries_and_numbers():
    """The floor itself is plausible (p50 < floor is below it); a spinning disk's floor is
    2000 us (SPINNING_FLOOR_NS); counters come from the media."""
    at = flush("fdatasync", 150_000)
    assert (
        timing_rules.rule_latency_floor(_facts(host(disks=(WB_SSD,)), [at]), at)[0] == HONEST_FLUSH
    )
    hdd = BlockDevice("sda", rotational=True, write_cache="write back", has_flush_counters=True)
    r = _counted(1_234_567, [FlushDelta("sda1", 0, 0), FlushDelta("sda", 300, 5)])
    verdict, hit = timing_rules.rule_latency_floor(_facts(_partitioned(disk=hdd), [r]), r)
    assert (verdict, hit.message, hit.evidence["flushes_per_sync"]) == (
        VOLATILE_CACHE,
        "fdatasync p50 1234.6 us is below the 2000 us a flush to stable media "
        "takes on a spinning disk: something acknowledges it from a cache.",
        0.3,
    )
    ok = flush("fdatasync", 1_234_567)
    assert timing_rules.rule_latency_floor(_facts(host(disks=(WB_SSD,)), [ok]), ok)[1].message == (
        f"fdatasync p50 1234.6 us is consistent with an {CONSUMER_SSD} writing to stable media: "
        "inferred from latency only, not proven."
    )


def test_judge_primitive_reads_the_evidence():
    c = SyscallComparison("fdatasync", 75, "x86_64", 100, 300.0, 400_000.0)
    verdict, code, hit = path_rules.judge_primitive(
        host(disks=(WB_SSD,)), None, [], Evidence(syscall_comparisons=(c,))
    )
    assert (verdict, code, hit.stance) == (NO_FLUSH, "libc-sync-interposed", "decides")


def test_commit_issues_no_sync_scope():
    """FULL/EXTRA commits only (effective pragmas); 'no sync' means 0 per commit, not fewer
    than one."""
    p = Pragmas("WAL", "NORMAL")
    ev = Evidence(
        sync_traces=(SyncTrace(p, 10, {}), SyncTrace(Pragmas("WAL", "FULL"), 10, {"fdatasync": 5}))
    )
    normal = commit("WAL", "NORMAL", 50_000)
    assert commit_rules.rule_commit_issues_no_sync(_facts(results=[normal], ev=ev), normal) is None
    half = commit("WAL", "FULL", 50_000)
    assert commit_rules.rule_commit_issues_no_sync(_facts(results=[half], ev=ev), half) is None
    zero = Evidence(sync_traces=(SyncTrace(Pragmas("WAL", "FULL"), 10, {}),))
    eff = dataclasses.replace(commit("WAL", "FULL", 50_000), requested=None)
    assert commit_rules.rule_commit_issues_no_sync(_facts(results=[eff], ev=zero), eff).code == (
        "commit-issues-no-sync"
    )


def test_slowness_boundaries_and_digits():
    at = flush("fdatasync", 50_000_000)
    assert [f.code for f in commit_rules.slowness(at)] == ["p99-above-10ms"]
    r = dataclasses.replace(
        flush("fdatasync", 50_050_001),
        summary=dataclasses.replace(flush("fdatasync", 50_050_001).summary, p99_ns=10_050_001),
    )
    assert [f.message for f in commit_rules.slowness(r)] == [
        "write+fdatasync p50 is 50.1 ms: every durable step waits that long.",
        "write+fdatasync p99 is 10.1 ms, above etcd's 10 ms gate.",
    ]


def test_libc_vs_syscall_ratio_digits_and_tiny_libc():
    c = SyscallComparison("fdatasync", 75, "x86_64", 100, 300_000.0, 400_000.0)
    tiny = SyscallComparison("fsync", 74, "x86_64", 100, 1.0, 3.0)
    found = evidence_rules.evidence_findings(_facts(ev=Evidence(syscall_comparisons=(c, tiny))))
    assert [f.evidence["raw_over_libc"] for f in found] == [1.33, 3.0]
    assert found[1].message == (
        "libc fsync p50 0.0 us, raw syscall 74 p50 0.0 us (raw/libc 3.00) for 100 calls each."
    )


def test_counter_findings_rows_skip_results_without_counters_and_round():
    """A result without counters is skipped, not the end of the rows; ratios have three
    decimals; per-op counts divide by the sample count; ms per flush is read on the media."""
    summary = flush("fdatasync", 1).summary
    r = dataclasses.replace(
        _counted(1_000_000, [FlushDelta("sda1", 1, 1), FlushDelta("sda", 100, 30)], syncs=300),
        summary=dataclasses.replace(summary, count=300),
    )
    one = dataclasses.replace(
        _counted(1, [FlushDelta("sda", 3, 0)], syncs=None),
        name="one op",
        summary=dataclasses.replace(summary, count=1),
    )
    found = evidence_rules.evidence_findings(_facts(_partitioned(), [flush("fsync", 1), r, one]))
    assert [f.code for f in found] == ["device-flush-counters"]
    assert found[0].evidence["per_result"] == {
        "write+fdatasync": {
            "device_flushes": 100,
            "syncs_issued": 300,
            "flushes_per_sync": 0.333,
            "flushes_per_op": 0.333,
            "flush_ms_per_flush": 0.3,
        },
        "one op": {
            "device_flushes": 3,
            "syncs_issued": None,
            "flushes_per_sync": None,
            "flushes_per_op": 3.0,
            "flush_ms_per_flush": 0.0,
        },
    }


def test_judge_passes_the_evidence_to_every_primitive_and_the_stand_in_commit():
    c = SyscallComparison("fdatasync", 75, "x86_64", 100, 300.0, 400_000.0)
    ev = Evidence(syscall_comparisons=(c,))
    h = host(disks=(WB_SSD,))
    v = engine.judge(h, [flush("fdatasync", 600)], ev)
    assert (v.path_verdict, v.decided_by) == (NO_FLUSH, "libc-sync-interposed")
    v = engine.judge(h, [commit("WAL", "FULL", 50_000)], ev)
    assert (v.path_verdict, v.decided_by) == (NO_FLUSH, "libc-sync-interposed")


def test_judge_checkpoint_only_commit_takes_its_base_primitive_verdict():
    """WAL+NORMAL commits run "fsync (checkpoints only)" on macOS: they get fsync's verdict
    (macos-fsync-stops-at-cache), not the path's (F_FULLFSYNC)."""
    h = host(os_name="Darwin", fs_type="apfs", disks=(WB_SSD,))
    normal = commit("WAL", "NORMAL", 30_000, primitive="fsync (checkpoints only)", fullfsync=False)
    v = engine.judge(h, [flush("F_FULLFSYNC", 2_000_000), flush("fsync", 50_000), normal])
    assert (v.path_verdict, v.decided_by) == (HONEST_FLUSH, "flush-latency-plausible")
    assert v.results[2] == ResultVerdict(
        "wal/normal/no-fullfsync", VOLATILE_CACHE, False, "macos-fsync-stops-at-cache", INFERRED
    )


def test_judge_commit_rule_decides_over_an_inferred_no_flush():
    """Only a measured no_flush/volatile_cache keeps its verdict against a commit rule; an
    inferred one (flush-costs-nothing) is replaced by the commit rule's."""
    v = engine.judge(
        host(disks=(WB_SSD,)),
        [write(20_000), flush("fdatasync", 25_000), commit("WAL", "FULL", 1_000)],
    )
    assert v.results == (
        ResultVerdict("write+fdatasync", NO_FLUSH, None, "flush-costs-nothing", INFERRED),
        ResultVerdict("wal/full", NO_FLUSH, True, "commit-not-waiting-for-sync", INFERRED),
    )
    assert ("commit-not-waiting-for-sync", "wal/full", INFERRED, NO_FLUSH, "decides") in _stances(v)


def test_judge_disagreement_ignores_a_result_named_path_and_lists_every_unknown_declaration():
    base = host(disks=(WB_SSD,))
    h = dataclasses.replace(base, target=dataclasses.replace(base.target, declared=("ups", "bbu")))
    odd = dataclasses.replace(flush("fsync", 60_000), name="path")
    v = engine.judge(h, [flush("fdatasync", 1_000_000), odd])
    assert [f.code for f in v.findings if f.subject == "path" and not f.stance] == [
        "unknown-declaration"
    ]
    assert v.findings[-1].message == "Declared facts not understood and ignored: bbu, ups."
    assert v.findings[-1].evidence == {"declared": ["ups", "bbu"]}


def test_interposed_cause_without_counters_says_the_times_not_none():
    """Interposition decided by timing alone (no flush counters in the comparison): the
    cause names the two p50s, never 'None device flushes'."""
    h = dataclasses.replace(host(disks=(WB_SSD,)), ld_preload="libeatmydata.so")
    r = _counted(1_000_000, [FlushDelta("sda", 0, 0, 1000)])
    timed = SyscallComparison("fsync", 74, "x86_64", 100, 500.0, 400_000.0)
    cause = counter_rules._not_sent_cause(_facts(h, [r], Evidence(syscall_comparisons=(timed,))))
    assert cause[0] == "preload-skips-flush"
    assert cause[1] == (
        "the libc sync call is interposed (libeatmydata.so): its p50 over 100 "
        "calls was 0.5 us against 400.0 us for the raw system call"
    )


def test_interposed_cause_with_one_counter_missing_says_the_times():
    """Counts are said only when both sides of the comparison were counted."""
    h = dataclasses.replace(host(disks=(WB_SSD,)), ld_preload="libeatmydata.so")
    r = _counted(1_000_000, [FlushDelta("sda", 0, 0, 1000)])
    half = SyscallComparison("fsync", 74, "x86_64", 100, 500.0, 400_000.0, 0, None)
    cause = counter_rules._not_sent_cause(_facts(h, [r], Evidence(syscall_comparisons=(half,))))
    assert cause[1] == (
        "the libc sync call is interposed (libeatmydata.so): its p50 over 100 "
        "calls was 0.5 us against 400.0 us for the raw system call"
    )


def test_delete_mode_on_windows_is_never_promised_durable():
    """SQLite's winDelete ignores syncDir, so EXTRA's directory sync after the journal's
    delete (DELETE's commit point) never happens on Windows: delete/extra is durable on Linux
    and not on Windows; WAL and TRUNCATE with FULL stay durable there; the advice there
    leaves DELETE out."""
    windows = host(os_name="Windows", fs_type="NTFS")
    extra = commit("DELETE", "EXTRA", 1, primitive="FlushFileBuffers")
    assert commit_rules.config_durability(host(), commit("DELETE", "EXTRA", 1)) == (True, None)
    durable, finding = commit_rules.config_durability(windows, extra)
    assert durable is False and finding is not None
    assert "winDelete ignores syncDir" in finding.message
    assert finding.source == commit_rules.SQLITE_WIN_DELETE_DOC
    assert "DELETE with EXTRA" not in finding.advice
    for r in (commit("WAL", "FULL", 1), commit("TRUNCATE", "FULL", 1)):
        assert commit_rules.config_durability(windows, r) == (True, None), r.name


# ---- which primitive Apple's fullfsync is, from latency (issue 29 item 9)


def _mapping_case(commit_p50_ns, labelled, full_ns=3_000_000, barrier_ns=100_000, baseline=None):
    mac = host(os_name="Darwin", fs_type="apfs")
    results = [
        flush("F_FULLFSYNC", full_ns),
        flush("F_BARRIERFSYNC", barrier_ns),
        commit("WAL", "FULL", commit_p50_ns, primitive=labelled, fullfsync=True),
    ]
    if baseline is not None:  # (plain fsync p50, the same commit without fullfsync)
        results += [
            flush("fsync", baseline[0]),
            commit("WAL", "FULL", baseline[1], primitive="fsync", fullfsync=False),
        ]
    verdict = engine.judge(mac, results)
    by_code = {f.code: f for f in verdict.findings}
    (row,) = [v for v in verdict.results if v.subject == "wal/full/fullfsync"]
    return by_code, row


def test_a_fullfsync_commit_as_slow_as_f_fullfsync_is_not_f_barrierfsync_whatever_the_path():
    # labelled F_BARRIERFSYNC from /usr/lib/libsqlite3.dylib, but 3.1 ms is F_FULLFSYNC's cost
    codes, row = _mapping_case(3_100_000, "F_BARRIERFSYNC")
    found = codes["fullfsync-mapping-contradicts-label"]
    assert (found.level, found.strength) == (WARNING, "measured")
    assert "not F_BARRIERFSYNC as inferred from its library's path" in found.message
    assert row.config_durable is True and "config-not-durable" not in codes
    # as cheap as the barrier: the label stands, measured now, and the commit is not durable
    codes, row = _mapping_case(150_000, "F_BARRIERFSYNC")
    assert codes["fullfsync-mapping"].strength == "measured"
    assert row.config_durable is False and "config-not-durable" in codes
    # a Homebrew SQLite labelled F_FULLFSYNC whose commits cost a barrier's: not durable
    codes, row = _mapping_case(150_000, "F_FULLFSYNC")
    assert "fullfsync-mapping-contradicts-label" in codes and row.config_durable is False
    # a barrier commit whose own cost (frames, B-tree, Python: 0.4 ms) lifts it above the
    # midpoint (387 us for 3 ms and 50 us) is a barrier once that cost is taken off...
    codes, row = _mapping_case(
        450_000, "F_BARRIERFSYNC", barrier_ns=50_000, baseline=(40_000, 440_000)
    )
    assert codes["fullfsync-mapping"].evidence["commit_overhead_ns"] == 400_000
    assert row.config_durable is False
    # ...and without that baseline it is between the two: never called F_FULLFSYNC
    codes, row = _mapping_case(450_000, "F_BARRIERFSYNC", barrier_ns=50_000)
    assert "fullfsync-mapping-unverifiable" in codes and row.config_durable is False
    # the two primitives cost the same here: latency cannot tell; the label is inferred
    codes, row = _mapping_case(1_000_000, "F_BARRIERFSYNC", full_ns=1_000_000, barrier_ns=900_000)
    assert codes["fullfsync-mapping-unverifiable"].strength == "inferred"
    assert row.config_durable is False
    # off macOS: nothing
    assert commit_rules.fullfsync_mapping(
        rule_facts.Facts(host(), (flush("fdatasync", 1e5),), None)
    ) == (None, None)


def test_rejudge_names_configurations_whose_recorded_verdict_differs():
    """A report whose overall verdict stands but one configuration's recorded verdict does
    not (edited, or an older engine) gets a note naming that configuration."""
    h = host(fs_type="tmpfs")
    results = (flush("fdatasync", 1_000), commit("WAL", "FULL", 2_000))
    judged = engine.judge(h, results)
    edited = tuple(
        dataclasses.replace(v, path_verdict=HONEST_FLUSH) if v.subject == "wal/full" else v
        for v in judged.results
    )
    report = Report(
        1,
        "0.0.0",
        "audit",
        "2024-05-01T12:00:00Z",
        ("fsyncbench", "audit"),
        h,
        results,
        dataclasses.replace(judged, results=edited),
    )
    again = engine.rejudge(report)
    assert again.verdict == judged
    (note,) = again.notes
    assert note.startswith(engine.REJUDGED) and note.endswith("wal/full honest_flush -> no_flush")
    assert engine.rejudged_note(again) == note
    assert engine.rejudge(again).notes == again.notes  # the same facts: nothing more to say
