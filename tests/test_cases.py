"""Five public cases of the tool's kind (an Apple laptop with and without F_FULLFSYNC, a VM, and others), their recorded facts written here, judged from facts alone."""

from factories import commit, flush, host, write

from fsyncbench.judge import engine
from fsyncbench.model import (
    HONEST_FLUSH,
    NO_FLUSH,
    UNVERIFIABLE,
    VOLATILE_CACHE,
    BlockDevice,
    Virtualization,
)


def _verdicts(v):
    return {r.subject: r for r in v.results}


def _codes(v, subject=None):
    return {f.code for f in v.findings if subject is None or f.subject == subject}


def test_e1_apple_m1_fsync_volatile_fullfsync_honest():
    h = host(
        os_name="Darwin",
        fs_type="apfs",
        disks=(BlockDevice("disk0", model="APPLE SSD AP0512Q", rotational=False),),
        virt=Virtualization(mac_vmm_present=False),
        darwin={"BusProtocol": "Apple Fabric", "Internal": True, "SolidState": True},
    )
    results = [write(2_000), flush("fsync", 40_000), flush("F_FULLFSYNC", 18_000_000)]
    v = engine.judge(h, results)
    by = _verdicts(v)
    assert by["write+fsync"].path_verdict == VOLATILE_CACHE
    assert by["write+fsync"].decided_by == "macos-fsync-stops-at-cache"
    assert by["write+F_FULLFSYNC"].path_verdict == HONEST_FLUSH
    assert v.path_verdict == HONEST_FLUSH
    gap = next(f for f in v.findings if f.code == "macos-fsync-stops-at-cache").evidence
    assert gap["fullfsync_ratio"] == 450


def test_e2_consumer_nvme_bare_metal_honest():
    h = host(
        fs_type="xfs",
        disks=(
            BlockDevice(
                "nvme0n1",
                model="Samsung SSD 990 PRO 2TB",
                rotational=False,
                write_cache="write back",
                fua=True,
            ),
        ),
    )
    results = [write(3_000), flush("fdatasync", 1_600_000), flush("fsync", 5_600_000)]
    v = engine.judge(h, results)
    assert v.path_verdict == HONEST_FLUSH
    assert v.decided_by == "flush-latency-plausible"
    assert _verdicts(v)["write+fsync"].path_verdict == HONEST_FLUSH


def test_e3_commit_not_waiting_for_its_syncs_on_an_honest_disk():
    h = host(
        disks=(
            BlockDevice(
                "sda", model="ST2000DM008", rotational=True, write_cache="write back", fua=False
            ),
        )
    )
    results = [flush("fdatasync", 14_500_000), commit("WAL", "FULL", 400_000)]
    v = engine.judge(h, results)
    assert v.path_verdict == HONEST_FLUSH
    by = _verdicts(v)
    assert by["wal/full"].path_verdict == NO_FLUSH
    assert by["wal/full"].decided_by == "commit-not-waiting-for-sync"
    ev = next(f for f in v.findings if f.code == "commit-not-waiting-for-sync").evidence
    assert round(1 / ev["ratio"]) == 36


def test_e4_tmpfs_no_flush():
    h = host(fs_type="tmpfs")
    results = [
        flush("fdatasync", 500),
        commit("DELETE", "FULL", 84_000),
        commit("DELETE", "OFF", 83_000),
    ]
    v = engine.judge(h, results)
    assert v.path_verdict == NO_FLUSH
    assert v.decided_by == "no-flush-filesystem"
    assert _verdicts(v)["delete/full"].path_verdict == NO_FLUSH
    assert "sync-costs-nothing" in _codes(v, "delete/full")


def test_e5_firecracker_unverifiable_and_wal_normal_not_durable():
    h = host(
        disks=(
            BlockDevice(
                "vda",
                rotational=True,
                write_cache="write back",
                fua=False,
                transport="virtio",
                has_flush_counters=True,
            ),
        ),
        virt=Virtualization(hypervisor_flag=True),
    )
    results = [
        flush("fdatasync", 200_000, flushes=500, syncs=500, device="vda"),
        commit("DELETE", "FULL", 1_000_000),
        commit("WAL", "FULL", 270_000),
        commit("WAL", "NORMAL", 19_000),
    ]
    v = engine.judge(h, results)
    assert v.path_verdict == UNVERIFIABLE
    assert v.decided_by == "virtualized-storage"
    finding = next(f for f in v.findings if f.code == "virtualized-storage")
    assert finding.evidence["flushes_per_sync"] == 1.0
    by = _verdicts(v)
    assert by["wal/normal"].config_durable is False
    assert by["wal/full"].config_durable is True
    assert by["delete/full"].config_durable is False  # unlink not synced below EXTRA
    assert "config-not-durable" in _codes(v, "wal/normal")


def test_flushes_dropped_above_write_back_disk_is_no_flush():
    """Counters: 1000 fdatasyncs, 0 device flushes on a write-back disk (eatmydata-like)."""
    h = host(
        disks=(
            BlockDevice("sda", rotational=False, write_cache="write back", has_flush_counters=True),
        )
    )
    v = engine.judge(h, [flush("fdatasync", 60_000, flushes=0, syncs=1000)])
    assert v.path_verdict == NO_FLUSH
    assert v.decided_by == "flushes-dropped"


def test_write_through_disk_without_flushes_is_not_called_dropped():
    h = host(
        disks=(
            BlockDevice(
                "sda", rotational=False, write_cache="write through", has_flush_counters=True
            ),
        )
    )
    v = engine.judge(h, [flush("fdatasync", 60_000, flushes=0, syncs=1000)])
    assert v.path_verdict == HONEST_FLUSH


def test_fast_flush_on_bare_metal_ssd_is_volatile_cache():
    h = host(disks=(BlockDevice("sda", rotational=False, write_cache="write back"),))
    v = engine.judge(h, [flush("fdatasync", 3_000)])
    assert v.path_verdict == VOLATILE_CACHE
    assert v.decided_by == "flush-below-device-floor"


def test_fast_flush_in_vm_is_unverifiable_not_volatile():
    h = host(
        disks=(BlockDevice("vda", rotational=True, write_cache="write back"),),
        virt=Virtualization(hypervisor_flag=True),
    )
    assert engine.judge(h, [flush("fdatasync", 3_000)]).path_verdict == UNVERIFIABLE


def test_eatmydata_preload_is_no_flush():
    h = host(
        disks=(BlockDevice("sda", rotational=False),),
        ld_preload="/usr/lib/x86_64-linux-gnu/libeatmydata.so",
    )
    v = engine.judge(h, [flush("fdatasync", 400_000)])
    assert (v.path_verdict, v.decided_by) == (NO_FLUSH, "sync-disabled-by-preload")


def test_config_durability_rules():
    h = host(disks=(BlockDevice("sda", rotational=False),))
    cases = {
        ("DELETE", "OFF"): False,
        ("DELETE", "NORMAL"): False,
        ("DELETE", "FULL"): False,
        ("DELETE", "EXTRA"): True,
        ("TRUNCATE", "NORMAL"): False,
        ("TRUNCATE", "FULL"): True,
        ("PERSIST", "NORMAL"): False,  # the documentation promises nothing at NORMAL
        ("WAL", "EXTRA"): True,
        ("WAL", "NORMAL"): False,
        ("WAL", "FULL"): True,
        ("MEMORY", "FULL"): False,
    }
    results = [commit(m, s, 2_000_000) for m, s in cases]
    by = _verdicts(engine.judge(h, results))
    for (m, s), durable in cases.items():
        assert by[f"{m}/{s}".lower()].config_durable is durable, (m, s)


def test_macos_without_fullfsync_not_durable_and_apple_barrier_not_durable():
    h = host(os_name="Darwin", fs_type="apfs", darwin={"BusProtocol": "Apple Fabric"})
    results = [
        commit("WAL", "FULL", 40_000, primitive="fsync", fullfsync=False),
        commit("WAL", "FULL", 3_000_000, primitive="F_FULLFSYNC", fullfsync=True),
    ]
    by = _verdicts(engine.judge(h, results))
    assert by["wal/full/no-fullfsync"].config_durable is False
    assert by["wal/full/fullfsync"].config_durable is True
    barrier = commit("WAL", "FULL", 3_000_000, primitive="F_BARRIERFSYNC", fullfsync=True)
    assert _verdicts(engine.judge(h, [barrier]))["wal/full/fullfsync"].config_durable is False


def test_slow_median_and_tail_findings():
    h = host(disks=(BlockDevice("sda", rotational=True),))
    v = engine.judge(h, [flush("fsync", 60_000_000)])
    assert {"slow-median", "p99-above-10ms"} <= _codes(v)


# --------------------------------------------------------------------------- with audit evidence
# The same cases with what `fsyncbench audit` adds: the verdicts stand, and where the new
# evidence is a stronger signal it is the one that decides or corroborates.

from fsyncbench.model import (  # noqa: E402
    DirtySweep,
    Evidence,
    Pragmas,
    SweepPoint,
    SyncTrace,
    SyscallComparison,
)


def _trace(mode, sync, s, commits=20):
    return SyncTrace(Pragmas(mode, sync), commits, {"fdatasync": s * commits} if s else {})


def test_e3_with_traced_syncs_per_commit():
    h = host(
        disks=(
            BlockDevice(
                "sda", model="ST2000DM008", rotational=True, write_cache="write back", fua=False
            ),
        )
    )
    ev = Evidence(sync_traces=(_trace("WAL", "FULL", 1),))
    v = engine.judge(h, [flush("fdatasync", 14_500_000), commit("WAL", "FULL", 400_000)], ev)
    f = next(f for f in v.findings if f.code == "commit-not-waiting-for-sync")
    assert f.evidence["syncs_traced"] is True and f.evidence["syncs_per_commit"] == 1
    assert _verdicts(v)["wal/full"].decided_by == "commit-not-waiting-for-sync"


def test_e4_tmpfs_sweep_corroborates_the_filesystem_fact():
    h = host(fs_type="tmpfs")
    sweep = DirtySweep(
        "fdatasync", 1_400.0, None, 0.7, (SweepPoint(4096, 1_300), SweepPoint(64 << 20, 1_500))
    )
    ev = Evidence(
        dirty_sweep=sweep,
        syscall_comparisons=(SyscallComparison("fdatasync", 75, "x86_64", 200, 2_200, 3_900),),
    )
    v = engine.judge(
        h,
        [
            flush("fdatasync", 500),
            commit("DELETE", "FULL", 84_000),
            commit("DELETE", "OFF", 83_000),
        ],
        ev,
    )
    assert (v.path_verdict, v.decided_by) == (NO_FLUSH, "no-flush-filesystem")
    assert "sync-bandwidth-impossible" in _codes(v)
    assert "libc-sync-interposed" not in _codes(v)  # raw and libc agree: nothing interposed


def test_e5_with_full_audit_evidence_stays_unverifiable():
    h = host(
        disks=(
            BlockDevice(
                "vda",
                rotational=True,
                write_cache="write back",
                fua=False,
                transport="virtio",
                has_flush_counters=True,
            ),
        ),
        virt=Virtualization(hypervisor_flag=True),
    )
    ev = Evidence(
        sync_traces=(
            _trace("DELETE", "FULL", 4),
            _trace("WAL", "FULL", 1),
            _trace("WAL", "NORMAL", 0),
        ),
        syscall_comparisons=(
            SyscallComparison("fdatasync", 75, "x86_64", 500, 200_000, 205_000, 510, 505),
        ),
        dirty_sweep=DirtySweep(
            "fdatasync",
            250_000.0,
            900e6,
            0.999,
            (SweepPoint(4096, 250_000), SweepPoint(64 << 20, 75_000_000)),
        ),
    )
    results = [
        flush("fdatasync", 200_000, flushes=500, syncs=500, device="vda"),
        commit("DELETE", "FULL", 1_000_000),
        commit("WAL", "FULL", 270_000),
        commit("WAL", "NORMAL", 19_000),
    ]
    v = engine.judge(h, results, ev)
    assert (v.path_verdict, v.decided_by) == (UNVERIFIABLE, "virtualized-storage")
    codes = _codes(v)
    assert (
        not {
            "commit-not-waiting-for-sync",
            "libc-sync-interposed",
            "sync-bandwidth-impossible",
            "commit-issues-no-sync",
        }
        & codes
    )
    assert {"syncs-per-commit", "libc-vs-syscall", "sync-size-fit"} <= codes
    assert _verdicts(v)["wal/normal"].config_durable is False


def test_sync_costs_nothing_floor_scales_with_traced_syncs_per_commit():
    """truncate/full issues 5 syncs: 20 us over truncate/off cannot include 5 real flushes
    (each >= 10 us), while one untraced sync's floor alone would let it pass."""
    h = host(fs_type="tmpfs")
    results = [commit("TRUNCATE", "FULL", 110_000), commit("TRUNCATE", "OFF", 90_000)]
    untraced = engine.judge(h, results)
    assert "sync-costs-nothing" not in _codes(untraced, "truncate/full")
    traced = engine.judge(h, results, Evidence(sync_traces=(_trace("TRUNCATE", "FULL", 5),)))
    finding = next(f for f in traced.findings if f.code == "sync-costs-nothing")
    assert finding.evidence["floor_ns"] == 50_000 and finding.evidence["syncs_per_commit"] == 5
