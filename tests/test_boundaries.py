"""Every threshold of the verdict rules, the statistics and the gates, tested just below,
exactly at and just above it (issue "Tests that catch bugs").

Boundaries are written relative to the constants (``rule_facts.REAL_IO_FLOOR_NS - 1``), so the
tests follow the code; each constant's value is also pinned once, citing its source, so a
changed threshold is caught too. The "at" case is the one that tells ``>`` from ``>=``:
each test asserts on which side of the line the threshold itself falls. Inputs are chosen
so the compared quantity is exactly representable (integer nanoseconds, ratios such as
100 / 1000 == 0.1, powers of two), and where it cannot be a comment says so.

Outcomes are the ones a user sees: the path verdict and the deciding finding code
(``engine.judge``), a finding code present or absent, an interval's "none" reason, a gate's
failure text. Recorded facts only; nothing is measured.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from factories import BARE, VM, WB_SSD, commit, flush, host, write

from fsyncbench import api
from fsyncbench.errors import FsyncbenchError
from fsyncbench.host.layers import disk_layer, filesystem_layer
from fsyncbench.judge import cache_rules, devices, engine, gates, rule_facts
from fsyncbench.measure import intervals, stats
from fsyncbench.model import (
    FLUSH_FSYNCS_BACKING_FILE,
    HONEST_FLUSH,
    NO_FLUSH,
    PATH_VERDICTS,
    POWER_PROTECTION_USER_POLICY,
    PROTECTION_OK,
    UNVERIFIABLE,
    VOLATILE_CACHE,
    BlockDevice,
    DirtySweep,
    Evidence,
    FlushDelta,
    Host,
    Mount,
    Pragmas,
    RaidController,
    ResultVerdict,
    SecondFdCheck,
    StorageLayer,
    StorageTarget,
    SweepPoint,
    SyncTrace,
    SyscallComparison,
    Virtualization,
)
from fsyncbench.report import compare, latency
from fsyncbench.report import tables as render

#: A p50 every device class accepts as a real flush (above the 150 us consumer SSD floor).
SLOW_ENOUGH_NS = 1_000_000

BELOW, AT, ABOVE = "below", "at", "above"
SIDES = (BELOW, AT, ABOVE)


def _step(side: str) -> int:
    return {BELOW: -1, AT: 0, ABOVE: 1}[side]


def codes(v) -> list[str]:
    return [f.code for f in v.findings]


def decision(v) -> tuple[str, str]:
    return v.path_verdict, v.decided_by


def finding(v, code):
    return next(f for f in v.findings if f.code == code)


def subject(v, name) -> ResultVerdict:
    return next(r for r in v.results if r.subject == name)


def with_deltas(r, *deltas):
    return dataclasses.replace(r, device_flushes=tuple(deltas))


def with_p99(r, p99_ns):
    return dataclasses.replace(r, summary=dataclasses.replace(r.summary, p99_ns=p99_ns))


def _cmp(libc, raw, libc_f=None, raw_f=None, syncs=200, primitive="fdatasync"):
    return SyscallComparison(primitive, 75, "x86_64", syncs, libc, raw, libc_f, raw_f)


def _trace(mode, sync, syncs, commits=20):
    return SyncTrace(Pragmas(mode, sync), commits, {"fdatasync": syncs * commits})


# A recorded storage stack (the shape fsyncbench.host records), for the rules that read
# counters on a layer above the disk holding the bytes.
def _stacked(layers, virt=BARE) -> Host:
    disks = tuple(layer.device for layer in layers if layer.holds_bytes and layer.device)
    top = next(layer for layer in layers if layer.fs_type)
    mount = Mount(top.name, top.fs_type, top.source or "/dev/x", top.options)
    return Host(
        hostname="h",
        os_name="Linux",
        virtualization=virt,
        target=StorageTarget(
            path=top.name,
            mount=mount,
            layers=tuple(layers),
            disks=disks,
            chain=tuple(layer.name for layer in layers if layer.device),
        ),
    )


def _loop_on_spinning_disk() -> Host:
    """ext4 on loop0 (a write-back layer holding nothing), its backing file on ext4 on vda
    (a spinning disk, bare metal): loop0's counters show what the filesystem sent."""
    loop0 = BlockDevice(
        "loop0",
        rotational=False,
        write_cache="write back",
        transport="loop",
        has_flush_counters=True,
    )
    vda = BlockDevice("vda", rotational=True, write_cache="write back", has_flush_counters=True)
    return _stacked(
        [
            filesystem_layer(Mount("/mnt", "ext4", "/dev/loop0", ("rw",)), 0),
            StorageLayer(
                "loop",
                "loop0",
                FLUSH_FSYNCS_BACKING_FILE,
                1,
                device=loop0,
                note="backing file /img",
            ),
            filesystem_layer(Mount("/", "ext4", "/dev/vda", ("rw",)), 2),
            disk_layer(vda, 3),
        ]
    )


# =========================================================================== REAL_IO_FLOOR_NS


def test_real_io_floor_value():
    """docs/verdicts.md, latency bands (devices.LATENCY_BANDS_DOC): "anything with real block I/O
    ~ 10 us". The audit uses the device module's constant."""
    assert devices.REAL_IO_FLOOR_NS == 10_000
    assert rule_facts.REAL_IO_FLOOR_NS == devices.REAL_IO_FLOOR_NS
    assert "docs/verdicts.md" in rule_facts.LATENCY_BANDS_DOC


@pytest.mark.parametrize("side", SIDES)
def test_flush_costs_nothing_at_the_real_io_floor(side):
    """rule_flush_costs_nothing: a write+sync less than REAL_IO_FLOOR_NS slower than the
    same write without a sync reaches no device (``gap >= REAL_IO_FLOOR_NS`` is real I/O).
    Source: docs/verdicts.md latency bands (rule_facts.LATENCY_BANDS_DOC), "anything with real block
    I/O ~ 10 us"."""
    base = 20_000
    gap = rule_facts.REAL_IO_FLOOR_NS + _step(side)
    h = host(disks=(BlockDevice("sda"),), virt=BARE)  # device class "block device"
    v = engine.judge(h, [write(base), flush("fdatasync", base + gap)])
    if side == BELOW:
        assert decision(v) == (NO_FLUSH, "flush-costs-nothing")
        assert finding(v, "flush-costs-nothing").evidence["gap_ns"] == gap
    else:
        assert decision(v) == (HONEST_FLUSH, "flush-latency-plausible")
        assert "flush-costs-nothing" not in codes(v)


@pytest.mark.parametrize("side", SIDES)
def test_cloud_block_storage_needs_a_network_round_trip_p50(side):
    """rule_cloud_block_storage: a p50 below NETWORK_BLOCK_FLOOR_NS withholds the cloud
    identity (``p50 < NETWORK_BLOCK_FLOOR_NS``: at the floor the identity decides): a flush
    faster than a round trip to the provider's replicas was answered nearer. Sources:
    CLOUD_BLOCK_DOC (https://docs.aws.amazon.com/ebs/latest/userguide/ebs-volumes.html) and
    docs/verdicts.md latency bands for the 100 us floor of network block storage."""
    h = host(
        disks=(BlockDevice("nvme1n1", model="Amazon Elastic Block Store", rotational=False),),
        virt=VM,
    )
    v = engine.judge(h, [flush("fdatasync", devices.NETWORK_BLOCK_FLOOR_NS + _step(side))])
    if side == BELOW:
        assert decision(v) == (UNVERIFIABLE, "virtualized-storage")
        assert "cloud-block-storage" not in codes(v)
    else:
        assert decision(v) == (HONEST_FLUSH, "cloud-block-storage")


@pytest.mark.parametrize("syncs_traced", [None, 4])
@pytest.mark.parametrize("side", SIDES)
def test_full_commit_must_cost_a_real_io_floor_per_sync_more_than_off(side, syncs_traced):
    """rule_full_equals_off: a FULL commit less than S x REAL_IO_FLOOR_NS slower than the
    same journal at OFF waits for no device (``gap >= floor`` passes); S is the traced syncs
    per commit, else 1. Source: docs/verdicts.md latency bands (rule_facts.LATENCY_BANDS_DOC)."""
    s = syncs_traced or 1
    off_p50 = 30_000
    gap = rule_facts.REAL_IO_FLOOR_NS * s + _step(side)
    h = host(disks=(BlockDevice("sda"),), virt=BARE)
    ev = Evidence(sync_traces=(_trace("WAL", "FULL", s),)) if syncs_traced else None
    v = engine.judge(h, [commit("WAL", "OFF", off_p50), commit("WAL", "FULL", off_p50 + gap)], ev)
    full = subject(v, "wal/full")
    if side == BELOW:
        assert (full.path_verdict, full.decided_by) == (NO_FLUSH, "sync-costs-nothing")
        assert (
            finding(v, "sync-costs-nothing").evidence["floor_ns"] == rule_facts.REAL_IO_FLOOR_NS * s
        )
    else:
        assert "sync-costs-nothing" not in codes(v)
        assert full.decided_by != "sync-costs-nothing"


@pytest.mark.parametrize("side", SIDES)
def test_interposed_libc_call_must_be_below_the_real_io_floor(side):
    """_interposed without counters: the libc call is faster than any real I/O
    (``libc_p50 < REAL_IO_FLOOR_NS``, strict: a libc call taking exactly the floor did real
    I/O). Sources: EATMYDATA_DOC (https://github.com/stewartsmith/libeatmydata);
    docs/verdicts.md latency bands for the floor."""
    libc = rule_facts.REAL_IO_FLOOR_NS + _step(side)
    raw = 1_000_000  # over INTERPOSED_RATIO x libc on every side
    h = host(disks=(WB_SSD,), virt=BARE)
    v = engine.judge(
        h, [flush("fdatasync", SLOW_ENOUGH_NS)], Evidence(syscall_comparisons=(_cmp(libc, raw),))
    )
    if side == BELOW:
        assert decision(v) == (NO_FLUSH, "libc-sync-interposed")
    else:
        assert decision(v) == (HONEST_FLUSH, "flush-latency-plausible")
        assert "libc-sync-interposed" not in codes(v)


@pytest.mark.parametrize("side", SIDES)
def test_interposed_raw_call_must_reach_the_real_io_floor(side):
    """_interposed without counters: the raw system call does real I/O
    (``REAL_IO_FLOOR_NS <= syscall_p50``: a raw call of exactly the floor counts). Sources:
    EATMYDATA_DOC; docs/verdicts.md latency bands."""
    raw = rule_facts.REAL_IO_FLOOR_NS + _step(side)
    libc = 100  # far under raw / INTERPOSED_RATIO on every side
    h = host(disks=(WB_SSD,), virt=BARE)
    v = engine.judge(
        h, [flush("fdatasync", SLOW_ENOUGH_NS)], Evidence(syscall_comparisons=(_cmp(libc, raw),))
    )
    if side == BELOW:
        assert decision(v) == (HONEST_FLUSH, "flush-latency-plausible")
        assert "libc-sync-interposed" not in codes(v)
    else:
        assert decision(v) == (NO_FLUSH, "libc-sync-interposed")


@pytest.mark.parametrize("side", SIDES)
def test_second_fd_sync_must_be_below_the_real_io_floor(side):
    """_second_fd_finding without counters: the second descriptor's sync did no real I/O
    (``second_fd_p50 < REAL_IO_FLOOR_NS``, strict). Sources: PG_TEST_FSYNC_DOC
    (https://www.postgresql.org/docs/current/pgtestfsync.html); docs/verdicts.md latency bands."""
    check = SecondFdCheck("fsync", 200, 1_000_000, rule_facts.REAL_IO_FLOOR_NS + _step(side))
    found = codes(engine.judge(host(disks=(WB_SSD,), virt=VM), [], Evidence(second_fd=check)))
    if side == BELOW:
        assert "second-fd-sync-ignored" in found and "second-fd-sync-honoured" not in found
    else:
        assert "second-fd-sync-honoured" in found and "second-fd-sync-ignored" not in found


@pytest.mark.parametrize("side", SIDES)
def test_second_fd_same_descriptor_sync_must_reach_the_real_io_floor(side):
    """_second_fd_finding without counters: the writing descriptor's sync did real I/O
    (``REAL_IO_FLOOR_NS <= same_fd_p50``: exactly the floor counts). Sources:
    PG_TEST_FSYNC_DOC; docs/verdicts.md latency bands."""
    check = SecondFdCheck("fsync", 200, rule_facts.REAL_IO_FLOOR_NS + _step(side), 100)
    found = codes(engine.judge(host(disks=(WB_SSD,), virt=VM), [], Evidence(second_fd=check)))
    if side == BELOW:
        assert "second-fd-sync-honoured" in found and "second-fd-sync-ignored" not in found
    else:
        assert "second-fd-sync-ignored" in found and "second-fd-sync-honoured" not in found


@pytest.mark.parametrize("side", SIDES)
def test_flush_cost_leaves_out_estimates_below_the_real_io_floor(side):
    """_flush_cost: the one-flush estimate is the least p50 that did real I/O
    (``>= REAL_IO_FLOOR_NS`` is kept, anything below is left out as an interposed call).
    A write+fdatasync p50 just under the floor is ignored, so the 1 ms raw syscall sets the
    cost and a 100 us commit is too fast for it. Sources: docs/verdicts.md latency bands;
    docs/verdicts.md (commit checks) for the consistency check."""
    flush_p50 = rule_facts.REAL_IO_FLOOR_NS + _step(side)
    h = host(disks=(WB_SSD,), virt=BARE)
    ev = Evidence(syscall_comparisons=(_cmp(2_000_000, 1_000_000),))
    v = engine.judge(h, [flush("fdatasync", flush_p50), commit("WAL", "FULL", 100_000)], ev)
    if side == BELOW:
        f = finding(v, "commit-not-waiting-for-sync")
        assert f.evidence["flush_source"] == "raw syscall fdatasync p50"
        assert f.evidence["flush_p50_ns"] == 1_000_000
        assert subject(v, "wal/full").decided_by == "commit-not-waiting-for-sync"
    else:
        assert "commit-not-waiting-for-sync" not in codes(v)


# =========================================================================== device floors


def _declared(h, *facts):
    """Host ``h`` with the user's declarations ``facts`` (``--assume``)."""
    return dataclasses.replace(h, target=dataclasses.replace(h.target, declared=facts))


#: (device class name, constant name, host) for every class device_class() returns.
DEVICE_CLASSES = [
    (
        "Apple internal SSD (F_FULLFSYNC)",
        "APPLE_FULLFSYNC_FLOOR_NS",
        host(
            os_name="Darwin",
            fs_type="apfs",
            disks=(
                BlockDevice("disk0", model="APPLE SSD", rotational=False, transport="Apple Fabric"),
            ),
            virt=Virtualization(mac_vmm_present=False),
            darwin={"BusProtocol": "Apple Fabric", "Internal": True, "SolidState": True},
        ),
    ),
    (
        "network block storage",
        "NETWORK_BLOCK_FLOOR_NS",
        host(
            disks=(BlockDevice("sdb", vendor="Msft", model="Virtual Disk", rotational=True),),
            virt=BARE,
        ),
    ),
    (
        "spinning disk",
        "SPINNING_FLOOR_NS",
        host(disks=(BlockDevice("sda", rotational=True, write_cache="write back"),), virt=BARE),
    ),
    (
        "SSD with a volatile write cache and no known power-loss protection",
        "CONSUMER_SSD_FLOOR_NS",
        host(disks=(WB_SSD,), virt=BARE),
    ),
    (
        "SSD with power-loss protection or no volatile write cache",
        "PLP_SSD_FLOOR_NS",
        host(
            disks=(BlockDevice("nvme0n1", rotational=False, write_cache="write through"),),
            virt=BARE,
        ),
    ),
    (
        "SSD (write cache not known)",
        "PLP_SSD_FLOOR_NS",
        host(disks=(BlockDevice("sda", rotational=False),), virt=BARE),
    ),
    ("block device", "REAL_IO_FLOOR_NS", host(disks=(BlockDevice("sda"),), virt=BARE)),
    (
        # --assume plp on a spinning disk: its declared power-loss protection need not wait
        # for the platter's 2 ms
        "spinning disk with power-loss protection declared",
        "PLP_SSD_FLOOR_NS",
        _declared(
            host(disks=(BlockDevice("sda", rotational=True, write_cache="write back"),), virt=BARE),
            "plp",
        ),
    ),
    (
        # Windows: the disk policy says the cache is power-protected (a spinning disk, which
        # would otherwise be held to the platter's 2 ms)
        "disk with a write cache reported power-protected",
        "PLP_SSD_FLOOR_NS",
        host(
            os_name="Windows",
            fs_type="NTFS",
            disks=(
                BlockDevice(
                    "PhysicalDrive0",
                    rotational=True,
                    write_cache="write back",
                    transport="sata",
                    power_protection=(POWER_PROTECTION_USER_POLICY,),
                ),
            ),
            virt=Virtualization(),
        ),
    ),
]


def _declared_protected_cache() -> Host:
    """A spinning disk behind a cache the user declared protected (--assume
    protected-cache): held to the cache's 15 us, not the platter's 2 ms."""
    h = host(disks=(BlockDevice("sda", rotational=True, write_cache="write through"),), virt=BARE)
    return dataclasses.replace(
        h, target=dataclasses.replace(h.target, declared=("protected-cache",))
    )


DEVICE_CLASSES.append(
    ("disk behind a protected write-back cache", "PLP_SSD_FLOOR_NS", _declared_protected_cache())
)


def test_device_floor_values():
    """docs/verdicts.md latency bands (devices.LATENCY_BANDS_DOC): spinning disk ~ 2 ms; consumer
    SSD without power-loss protection ~ 150 us (Mark Callaghan, fsync near 0.9 ms on a
    Samsung 990 Pro, http://smalldatum.blogspot.com/2026/01/ssds-power-loss-protection-and-
    fsync.html); datacenter SSD with PLP ~ 15 us; network block storage ~ 100 us; Apple SSD
    with F_FULLFSYNC ~ 1 ms; anything with real block I/O ~ 10 us."""
    assert devices.SPINNING_FLOOR_NS == 2_000_000
    assert devices.CONSUMER_SSD_FLOOR_NS == 150_000
    assert devices.PLP_SSD_FLOOR_NS == 15_000
    assert devices.NETWORK_BLOCK_FLOOR_NS == 100_000
    assert devices.APPLE_FULLFSYNC_FLOOR_NS == 1_000_000
    assert devices.REAL_IO_FLOOR_NS == 10_000


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize(
    "cls_name,const,the_host", DEVICE_CLASSES, ids=[c[0].split(" (")[0] for c in DEVICE_CLASSES]
)
def test_latency_floor_of_each_device_class(cls_name, const, the_host, side):
    """rule_latency_floor: a p50 below the device class's floor is acknowledged from a cache
    (``p50 < floor_ns``: a p50 exactly at the floor is plausible). Source: docs/verdicts.md
    signal 7, latency bands by device class (devices.LATENCY_BANDS_DOC)."""
    floor = getattr(devices, const)
    primitive = {"Darwin": "F_FULLFSYNC", "Windows": "FlushFileBuffers"}.get(
        the_host.os_name, "fdatasync"
    )
    v = engine.judge(the_host, [flush(primitive, floor + _step(side))])
    code = "flush-below-device-floor" if side == BELOW else "flush-latency-plausible"
    f = finding(v, code)
    if cls_name == "network block storage":
        # Hyper-V's (and Azure's) disk names a guest whatever the CPU flag says: the VM rule
        # decides, and the floor of its class is a weaker signal beside it
        assert decision(v) == (UNVERIFIABLE, "virtualized-storage")
        assert f.stance == "disagrees"
    else:
        assert decision(v) == (VOLATILE_CACHE if side == BELOW else HONEST_FLUSH, code)
    assert (f.evidence["device_class"], f.evidence["floor_ns"]) == (cls_name, floor)
    assert f.source.startswith(devices.LATENCY_BANDS_DOC)


@pytest.mark.parametrize("side", SIDES)
def test_counted_flushes_still_need_the_device_floor(side):
    """rule_flushes_reach_device: flushes counted on bare metal decide honest only with a p50
    at or above the device-class floor (``p50 < floor_ns`` leaves it to the floor rule).
    Sources: KERNEL_STAT_DOC (https://www.kernel.org/doc/html/latest/block/stat.html) and
    docs/verdicts.md latency bands (CONSUMER_SSD_FLOOR_NS)."""
    p50 = devices.CONSUMER_SSD_FLOOR_NS + _step(side)
    v = engine.judge(
        host(disks=(WB_SSD,), virt=BARE), [flush("fdatasync", p50, flushes=1000, syncs=1000)]
    )
    if side == BELOW:
        assert decision(v) == (VOLATILE_CACHE, "flush-below-device-floor")
    else:
        assert decision(v) == (HONEST_FLUSH, "flushes-reach-device")


# ================================================== controller caches (PROTECTED_CACHE_FLOOR_NS)


def _raid_volume(**controller) -> Host:
    """A spinning volume of a MegaRAID controller (as fsyncbench.host._raid records one);
    ``controller`` sets what its tool read."""
    c = RaidController("megaraid_sas", "Broadcom/LSI MegaRAID", "host0", **controller)
    disk = BlockDevice(
        "sda",
        vendor="AVAGO",
        model="MR9361-8i",
        rotational=True,
        write_cache="write through",
        transport="scsi",
        controller=c,
    )
    return host(disks=(disk,), virt=BARE)


PROTECTED = dict(
    write_cache="write back",
    protection=PROTECTION_OK,
    protection_detail="CacheVault CVPM05 Optimal",
    read_by="storcli64 /call show all",
)


def test_protected_cache_floor_value():
    """A controller cache acknowledges no faster than a drive answering from protected DRAM
    (devices.PLP_SSD_FLOOR_NS, docs/verdicts.md latency bands)."""
    assert cache_rules.PROTECTED_CACHE_FLOOR_NS == devices.PLP_SSD_FLOOR_NS == 15_000


@pytest.mark.parametrize("side", SIDES)
def test_controller_cache_not_read_below_the_media_floor_is_unverifiable(side):
    """rule_controller_cache: a flush below the floor of the medium behind the controller
    (spinning: SPINNING_FLOOR_NS, ``p50 >= floor`` is the medium's own time) is the cache's
    answer, unverifiable while its backup power is not read. Sources: CONTROLLER_CACHE_DOC,
    docs/verdicts.md latency bands."""
    p50 = devices.SPINNING_FLOOR_NS + _step(side)
    v = engine.judge(_raid_volume(settles="storcli64 /c0 show all"), [flush("fdatasync", p50)])
    if side == BELOW:
        assert decision(v) == (UNVERIFIABLE, "controller-cache-unverified")
        assert "storcli64 /c0 show all" in finding(v, "controller-cache-unverified").advice
    else:
        assert decision(v) == (HONEST_FLUSH, "flush-latency-plausible")


@pytest.mark.parametrize("side", SIDES)
def test_controller_cache_not_read_needs_the_protected_cache_floor(side):
    """rule_controller_cache: below PROTECTED_CACHE_FLOOR_NS not even a controller cache
    answered (``p50 < floor`` leaves it to the latency floor, which calls it a cache)."""
    p50 = cache_rules.PROTECTED_CACHE_FLOOR_NS + _step(side)
    v = engine.judge(_raid_volume(), [flush("fdatasync", p50)])
    if side == BELOW:
        assert decision(v) == (VOLATILE_CACHE, "flush-below-device-floor")
    else:
        assert decision(v) == (UNVERIFIABLE, "controller-cache-unverified")


@pytest.mark.parametrize("side", SIDES)
def test_controller_cache_read_protected_at_the_protected_cache_floor(side):
    """rule_controller_cache with the backup power read ready: honest from
    PROTECTED_CACHE_FLOOR_NS (inclusive) up to the medium's floor; below it the disk's class
    (a disk behind a protected write-back cache, 15 us) calls it a cache."""
    p50 = cache_rules.PROTECTED_CACHE_FLOOR_NS + _step(side)
    v = engine.judge(_raid_volume(**PROTECTED), [flush("fdatasync", p50)])
    if side == BELOW:
        assert decision(v) == (VOLATILE_CACHE, "flush-below-device-floor")
        assert finding(v, "flush-below-device-floor").evidence["device_class"] == (
            "disk behind a protected write-back cache"
        )
    else:
        assert decision(v) == (HONEST_FLUSH, "controller-cache-protected")
        assert v.strength == "inferred"


@pytest.mark.parametrize("side", SIDES)
def test_controller_cache_read_protected_up_to_the_media_floor(side):
    """At and above the medium's floor the controller rule stands aside (a flush as slow as
    the platter needs no cache to explain it) and the 15 us class floor agrees."""
    p50 = devices.SPINNING_FLOOR_NS + _step(side)
    v = engine.judge(_raid_volume(**PROTECTED), [flush("fdatasync", p50)])
    if side == BELOW:
        assert decision(v) == (HONEST_FLUSH, "controller-cache-protected")
    else:
        assert decision(v) == (HONEST_FLUSH, "flush-latency-plausible")


# ====================================================================== COMMIT_VS_FLUSH_MIN_RATIO


def test_commit_vs_flush_min_ratio_value():
    """docs/verdicts.md (commit checks): 0.4 ms commits on a 14.5 ms flush disk; SQLite syncs at least once
    per FULL commit (https://www.sqlite.org/atomiccommit.html)."""
    assert rule_facts.COMMIT_VS_FLUSH_MIN_RATIO == 0.5


@pytest.mark.parametrize("side", SIDES)
def test_commit_faster_than_half_a_flush(side):
    """rule_commit_faster_than_sync: a commit under COMMIT_VS_FLUSH_MIN_RATIO x (S x one
    flush) does not wait for its syncs (``ratio >= COMMIT_VS_FLUSH_MIN_RATIO`` passes).
    0.5 x 1 ms = 500 us exactly. Sources: docs/verdicts.md (commit checks);
    https://www.sqlite.org/atomiccommit.html."""
    cost = 1_000_000
    commit_p50 = rule_facts.COMMIT_VS_FLUSH_MIN_RATIO * cost + _step(side)
    v = engine.judge(
        host(disks=(WB_SSD,), virt=BARE),
        [flush("fdatasync", cost), commit("WAL", "FULL", commit_p50)],
    )
    full = subject(v, "wal/full")
    if side == BELOW:
        assert (full.path_verdict, full.decided_by) == (NO_FLUSH, "commit-not-waiting-for-sync")
    else:
        assert (full.path_verdict, full.decided_by) == (HONEST_FLUSH, "flush-latency-plausible")
        assert "commit-not-waiting-for-sync" not in codes(v)


# =========================================================================== COUNTER_MIN_SYNCS


def test_counter_min_syncs_value():
    """Unsourced in the code ("fewer syncs than this make the counter ratio too noisy");
    pinned so a change is deliberate."""
    assert rule_facts.COUNTER_MIN_SYNCS == 50


@pytest.mark.parametrize("side", SIDES)
def test_flush_counter_needs_counter_min_syncs(side):
    """_counter_ratio: fewer than COUNTER_MIN_SYNCS syncs give no counter ratio
    (``syncs < COUNTER_MIN_SYNCS``: exactly that many are used). 0 flushes for the syncs on
    a write-back disk are dropped flushes once counted. Source of the counters:
    KERNEL_STAT_DOC (https://www.kernel.org/doc/html/latest/block/stat.html, fields 16-17)."""
    syncs = rule_facts.COUNTER_MIN_SYNCS + _step(side)
    v = engine.judge(
        host(disks=(WB_SSD,), virt=BARE),
        [flush("fdatasync", SLOW_ENOUGH_NS, flushes=0, syncs=syncs)],
    )
    if side == BELOW:
        assert decision(v) == (HONEST_FLUSH, "flush-latency-plausible")
    else:
        assert decision(v) == (NO_FLUSH, "flushes-dropped")


@pytest.mark.parametrize("side", SIDES)
def test_libc_comparison_counters_need_counter_min_syncs(side):
    """_ratio (libc vs raw syscall counters): fewer than COUNTER_MIN_SYNCS calls per side
    leave the decision to time, which here says honest (same 300 us both sides); from
    COUNTER_MIN_SYNCS on, 0 flushes against one per raw call is interposition. Sources:
    EATMYDATA_DOC; KERNEL_STAT_DOC."""
    syncs = rule_facts.COUNTER_MIN_SYNCS + _step(side)
    ev = Evidence(syscall_comparisons=(_cmp(300_000, 300_000, 0, syncs, syncs=syncs),))
    v = engine.judge(host(disks=(WB_SSD,), virt=BARE), [flush("fdatasync", 300_000)], ev)
    if side == BELOW:
        assert decision(v) == (HONEST_FLUSH, "flush-latency-plausible")
    else:
        assert decision(v) == (NO_FLUSH, "libc-sync-interposed")


# =========================================================================== DROPPED_FLUSH_RATIO


def test_flush_ratio_values():
    """ext4 sends one to two flushes per fdatasync (journal commit pre-flush, and a
    post-flush where the disk lacks FUA) — audit's comment; counters per KERNEL_STAT_DOC
    (https://www.kernel.org/doc/html/latest/block/stat.html, fields 16-17)."""
    assert rule_facts.DROPPED_FLUSH_RATIO == 0.1
    assert rule_facts.REACHED_FLUSH_RATIO == 0.5


@pytest.mark.parametrize("side", SIDES)
def test_media_flushes_below_dropped_ratio_are_dropped(side):
    """rule_flush_counters: fewer than DROPPED_FLUSH_RATIO media flushes per sync on a
    write-back disk are lost (``net < DROPPED_FLUSH_RATIO``; 100 / 1000 == 0.1 exactly, and
    is not lost). Source: KERNEL_STAT_DOC (https://www.kernel.org/doc/html/latest/block/
    stat.html, fields 16-17)."""
    syncs = 1000
    flushes = int(rule_facts.DROPPED_FLUSH_RATIO * syncs) + _step(side)
    v = engine.judge(
        host(disks=(WB_SSD,), virt=BARE),
        [flush("fdatasync", SLOW_ENOUGH_NS, flushes=flushes, syncs=syncs)],
    )
    if side == BELOW:
        assert decision(v) == (NO_FLUSH, "flushes-dropped")
    else:  # not dropped, not reached either: latency decides
        assert decision(v) == (HONEST_FLUSH, "flush-latency-plausible")


@pytest.mark.parametrize("side", SIDES)
def test_nothing_written_below_dropped_ratio(side):
    """rule_flush_counters, flushes dropped: fewer than DROPPED_FLUSH_RATIO writes per sync
    means nothing was written at sync time, which the message says
    (``written < DROPPED_FLUSH_RATIO``). Source: KERNEL_STAT_DOC, field 5 (writes)."""
    syncs = 1000
    writes = int(rule_facts.DROPPED_FLUSH_RATIO * syncs) + _step(side)
    r = with_deltas(
        flush("fdatasync", SLOW_ENOUGH_NS, syncs=syncs), FlushDelta("sda", 0, 0, writes)
    )
    v = engine.judge(host(disks=(WB_SSD,), virt=BARE), [r])
    assert decision(v) == (NO_FLUSH, "flushes-dropped")
    message = finding(v, "flushes-dropped").message
    assert ("nothing is written at sync time" in message) == (side == BELOW)


@pytest.mark.parametrize("side", SIDES)
def test_first_block_layer_flushes_below_dropped_ratio_are_not_sent(side):
    """rule_flush_counters, ``not_sent``: the write-back layer right under the filesystem
    (loop0) got fewer than DROPPED_FLUSH_RATIO flushes per sync (``top_flushes <
    DROPPED_FLUSH_RATIO``), while the data was written: a volatile cache. At the ratio the
    disk's own counters (one flush per sync) decide. Sources: KERNEL_STAT_DOC;
    BLOCK_FLUSH_DOC (block/blk-core.c)."""
    syncs = 1000
    loop_flushes = int(rule_facts.DROPPED_FLUSH_RATIO * syncs) + _step(side)
    r = with_deltas(
        flush("fdatasync", 5_000_000, syncs=syncs),
        FlushDelta("loop0", loop_flushes, 0, syncs),
        FlushDelta("vda", syncs, 0, syncs),
    )
    v = engine.judge(_loop_on_spinning_disk(), [r])
    if side == BELOW:
        assert decision(v) == (VOLATILE_CACHE, "flushes-not-sent")
    else:
        assert decision(v) == (HONEST_FLUSH, "flushes-reach-device")


@pytest.mark.parametrize("side", SIDES)
def test_second_fd_flushes_below_dropped_ratio_are_ignored(side):
    """_second_fd_finding with counters: the second descriptor's syncs sent fewer than
    DROPPED_FLUSH_RATIO flushes per call while the writing one's reached the device
    (``second_ratio < DROPPED_FLUSH_RATIO``; 20 / 200 == 0.1 exactly). Sources:
    PG_TEST_FSYNC_DOC (https://www.postgresql.org/docs/current/pgtestfsync.html);
    KERNEL_STAT_DOC."""
    syncs = 200
    second = int(rule_facts.DROPPED_FLUSH_RATIO * syncs) + _step(side)
    check = SecondFdCheck("fsync", syncs, 400_000, 3_000, syncs, second)
    found = codes(engine.judge(host(disks=(WB_SSD,), virt=VM), [], Evidence(second_fd=check)))
    if side == BELOW:
        assert "second-fd-sync-ignored" in found and "second-fd-sync-honoured" not in found
    else:
        assert "second-fd-sync-honoured" in found and "second-fd-sync-ignored" not in found


# =========================================================================== REACHED_FLUSH_RATIO


@pytest.mark.parametrize("side", SIDES)
def test_flushes_reach_device_at_reached_ratio(side):
    """rule_flushes_reach_device: at least REACHED_FLUSH_RATIO media flushes per sync on bare
    metal reach the device (``ratio < REACHED_FLUSH_RATIO`` does not; 500 / 1000 == 0.5).
    Source: KERNEL_STAT_DOC (https://www.kernel.org/doc/html/latest/block/stat.html)."""
    syncs = 1000
    flushes = int(rule_facts.REACHED_FLUSH_RATIO * syncs) + _step(side)
    v = engine.judge(
        host(disks=(WB_SSD,), virt=BARE),
        [flush("fdatasync", SLOW_ENOUGH_NS, flushes=flushes, syncs=syncs)],
    )
    if side == BELOW:
        assert decision(v) == (HONEST_FLUSH, "flush-latency-plausible")
    else:
        assert decision(v) == (HONEST_FLUSH, "flushes-reach-device")


@pytest.mark.parametrize("side", SIDES)
def test_background_flushes_of_half_the_syncs_void_the_counter(side):
    """_reached_ratio: when other I/O alone explains REACHED_FLUSH_RATIO flushes per sync
    (``background >= REACHED_FLUSH_RATIO x syncs``) no count of "reached" is trusted; below
    it the background is subtracted. One flush per sync minus 499 background flushes still
    reaches the device. Windows of 2**30 ns keep the background count exact. Source:
    KERNEL_STAT_DOC (the counters are device-wide)."""
    syncs, window = 1000, 1 << 30
    background = int(rule_facts.REACHED_FLUSH_RATIO * syncs) + _step(side)
    base = dataclasses.replace(
        with_deltas(write(2_000), FlushDelta("sda", background, 0)), elapsed_ns=window
    )
    r = dataclasses.replace(
        flush("fdatasync", SLOW_ENOUGH_NS, flushes=syncs, syncs=syncs), elapsed_ns=window
    )
    v = engine.judge(host(disks=(WB_SSD,), virt=BARE), [base, r])
    if side == BELOW:
        assert decision(v) == (HONEST_FLUSH, "flushes-reach-device")
    else:
        assert decision(v) == (HONEST_FLUSH, "flush-latency-plausible")
        assert "flushes-reach-device" not in codes(v)


@pytest.mark.parametrize("side", SIDES)
def test_background_flushes_of_half_the_syncs_cannot_make_flushes_lost(side):
    """rule_flush_counters uses the same bound as _reached_ratio: background flushes below
    REACHED_FLUSH_RATIO x syncs are subtracted, and 0.05 flushes per sync of the syncs' own
    is loss; at the bound the estimate is not trusted, and 0.55 counted
    flushes per sync are no loss. (Seen on this project's VM while other work wrote to the
    disk: 463 flushes for 290 fdatasyncs were called "lost" after a background estimate of
    most of them.) Source: KERNEL_STAT_DOC (the counters are device-wide)."""
    syncs, window = 1000, 1 << 30
    background = int(rule_facts.REACHED_FLUSH_RATIO * syncs) + _step(side)
    base = dataclasses.replace(
        with_deltas(write(2_000), FlushDelta("sda", background, 0)), elapsed_ns=window
    )
    r = dataclasses.replace(
        flush("fdatasync", SLOW_ENOUGH_NS, flushes=background + 50, syncs=syncs),
        elapsed_ns=window,
    )
    v = engine.judge(host(disks=(WB_SSD,), virt=BARE), [base, r])
    if side == BELOW:  # no write counters in this result: the rule's "dropped" fallback
        assert decision(v) == (NO_FLUSH, "flushes-dropped")
    else:
        assert v.path_verdict not in (NO_FLUSH, VOLATILE_CACHE)
        assert not {"flushes-dropped", "flushes-not-sent"} & set(codes(v))


@pytest.mark.parametrize("side", SIDES)
def test_nobarrier_overruled_by_flushes_at_reached_ratio(side):
    """rule_barriers_disabled: counters showing at least REACHED_FLUSH_RATIO flushes per sync
    on the disk under the filesystem overrule the nobarrier option (``ratio >=
    REACHED_FLUSH_RATIO``). Sources: BARRIER_DOC (Linux Documentation/admin-guide/ext4.rst);
    KERNEL_STAT_DOC."""
    syncs = 1000
    flushes = int(rule_facts.REACHED_FLUSH_RATIO * syncs) + _step(side)
    h = host(disks=(WB_SSD,), virt=BARE, mount_options=("rw", "nobarrier"))
    v = engine.judge(h, [flush("fdatasync", 1_600_000, flushes=flushes, syncs=syncs)])
    if side == BELOW:
        assert decision(v) == (VOLATILE_CACHE, "barriers-disabled")
    else:
        assert decision(v) == (HONEST_FLUSH, "flushes-reach-device")


@pytest.mark.parametrize("side", SIDES)
def test_data_written_at_reached_ratio_is_volatile_cache_not_no_flush(side):
    """rule_flush_counters: syncs whose flushes were lost wrote data (``written >=
    REACHED_FLUSH_RATIO`` writes per sync) -> volatile_cache; fewer -> no_flush
    (docs/verdicts.md, signal 3). Source: KERNEL_STAT_DOC (field 5
    writes, fields 16-17 flushes)."""
    syncs = 1000
    writes = int(rule_facts.REACHED_FLUSH_RATIO * syncs) + _step(side)
    r = with_deltas(
        flush("fdatasync", SLOW_ENOUGH_NS, syncs=syncs), FlushDelta("sda", 0, 0, writes)
    )
    v = engine.judge(host(disks=(WB_SSD,), virt=BARE), [r])
    if side == BELOW:
        assert decision(v) == (NO_FLUSH, "flushes-dropped")
    else:
        assert decision(v) == (VOLATILE_CACHE, "flushes-not-sent")


@pytest.mark.parametrize("side", SIDES)
def test_flushes_stripped_below_the_disk_at_reached_ratio(side):
    """rule_flush_counters, ``stripped``: the first block layer (loop0) received at least
    REACHED_FLUSH_RATIO flushes per sync and the disk holding the bytes none (``top_flushes
    >= REACHED_FLUSH_RATIO``): the layers between stripped them -> volatile_cache. With
    nothing written and fewer flushes on loop0, the syncs were dropped. Sources:
    KERNEL_STAT_DOC; BLOCK_FLUSH_DOC (block/blk-core.c submit_bio_noacct)."""
    syncs = 1000
    loop_flushes = int(rule_facts.REACHED_FLUSH_RATIO * syncs) + _step(side)
    r = with_deltas(
        flush("fdatasync", 40_000, syncs=syncs),
        FlushDelta("loop0", loop_flushes, 0, 0),
        FlushDelta("vda", 0, 0, 0),
    )
    v = engine.judge(_loop_on_spinning_disk(), [r])
    if side == BELOW:
        assert decision(v) == (NO_FLUSH, "flushes-dropped")
    else:
        assert decision(v) == (VOLATILE_CACHE, "flushes-stripped")


@pytest.mark.parametrize("side", SIDES)
def test_fua_writes_at_reached_ratio_need_no_flush(side):
    """_fua_may_carry: O_DSYNC writes reaching a FUA disk at least REACHED_FLUSH_RATIO times
    per sync (``writes_per_sync >= REACHED_FLUSH_RATIO``) may be durable without a counted
    cache flush, so 0 flushes prove nothing. Source: FUA_PRIMITIVES' comment,
    https://www.kernel.org/doc/html/latest/block/writeback_cache_control.html."""
    syncs = 1000
    writes = int(rule_facts.REACHED_FLUSH_RATIO * syncs) + _step(side)
    fua_ssd = dataclasses.replace(WB_SSD, fua=True)
    r = with_deltas(flush("O_DSYNC", SLOW_ENOUGH_NS, syncs=syncs), FlushDelta("sda", 0, 0, writes))
    v = engine.judge(host(disks=(fua_ssd,), virt=BARE), [r])
    if side == BELOW:
        assert decision(v) == (NO_FLUSH, "flushes-dropped")
    else:
        assert decision(v) == (HONEST_FLUSH, "flush-latency-plausible")


@pytest.mark.parametrize("side", SIDES)
def test_raw_call_flushes_at_reached_ratio_show_interposition(side):
    """_interposed with counters: the raw call sends at least REACHED_FLUSH_RATIO flushes per
    call (``raw_ratio >= REACHED_FLUSH_RATIO``) and that many more than libc (0 here); times
    are equal, so only the counters can decide. 100 / 200 == 0.5 exactly. Sources:
    EATMYDATA_DOC (https://github.com/stewartsmith/libeatmydata); KERNEL_STAT_DOC."""
    syncs = 200
    raw_f = int(rule_facts.REACHED_FLUSH_RATIO * syncs) + _step(side)
    ev = Evidence(syscall_comparisons=(_cmp(300_000, 300_000, 0, raw_f, syncs=syncs),))
    v = engine.judge(host(disks=(WB_SSD,), virt=BARE), [flush("fdatasync", 300_000)], ev)
    if side == BELOW:
        assert decision(v) == (HONEST_FLUSH, "flush-latency-plausible")
    else:
        assert decision(v) == (NO_FLUSH, "libc-sync-interposed")


@pytest.mark.parametrize("side", SIDES)
def test_raw_minus_libc_flushes_at_reached_ratio_show_interposition(side):
    """_interposed with counters: the raw call must send at least REACHED_FLUSH_RATIO
    flushes per call MORE than the libc call (``raw_ratio - libc_ratio >=
    REACHED_FLUSH_RATIO``): 200 - 100 of 200 calls is exactly 0.5. Sources: EATMYDATA_DOC;
    KERNEL_STAT_DOC."""
    syncs = 200
    libc_f = syncs - int(rule_facts.REACHED_FLUSH_RATIO * syncs) - _step(side)
    ev = Evidence(syscall_comparisons=(_cmp(300_000, 300_000, libc_f, syncs, syncs=syncs),))
    v = engine.judge(host(disks=(WB_SSD,), virt=BARE), [flush("fdatasync", 300_000)], ev)
    if side == BELOW:
        assert decision(v) == (HONEST_FLUSH, "flush-latency-plausible")
    else:
        assert decision(v) == (NO_FLUSH, "libc-sync-interposed")


@pytest.mark.parametrize("side", SIDES)
def test_interposer_that_writes_at_reached_ratio_leaves_a_volatile_cache(side):
    """rule_libc_interposed: an interposer whose syncs still write at least
    REACHED_FLUSH_RATIO requests per sync (``written >= REACHED_FLUSH_RATIO``, e.g.
    sync_file_range) leaves the data in a volatile cache; fewer -> no_flush. Sources:
    EATMYDATA_DOC; KERNEL_STAT_DOC (field 5)."""
    syncs = 1000
    writes = int(rule_facts.REACHED_FLUSH_RATIO * syncs) + _step(side)
    r = with_deltas(flush("fdatasync", 2_000, syncs=syncs), FlushDelta("sda", syncs, 0, writes))
    v = engine.judge(
        host(disks=(WB_SSD,), virt=BARE), [r], Evidence(syscall_comparisons=(_cmp(2_000, 400_000),))
    )
    if side == BELOW:
        assert decision(v) == (NO_FLUSH, "libc-sync-interposed")
    else:
        assert decision(v) == (VOLATILE_CACHE, "libc-sync-interposed")


@pytest.mark.parametrize("side", SIDES)
def test_vm_says_flushes_reach_the_disk_at_reached_ratio(side):
    """rule_virtualized: at least REACHED_FLUSH_RATIO flushes per sync "reach" the virtual
    disk; fewer "arrived" only (``ratio >= REACHED_FLUSH_RATIO``). The verdict is
    unverifiable either way; the message differs. Sources: FIRECRACKER_DOC
    (https://github.com/firecracker-microvm/firecracker/blob/main/docs/api_requests/
    block-caching.md); KERNEL_STAT_DOC."""
    syncs = 1000
    flushes = int(rule_facts.REACHED_FLUSH_RATIO * syncs) + _step(side)
    v = engine.judge(
        host(disks=(WB_SSD,), virt=VM),
        [flush("fdatasync", SLOW_ENOUGH_NS, flushes=flushes, syncs=syncs)],
    )
    assert decision(v) == (UNVERIFIABLE, "virtualized-storage")
    message = finding(v, "virtualized-storage").message
    if side == BELOW:
        assert "device flushes per sync arrived" in message and " reaches " not in message
    else:
        assert " reaches " in message and "arrived" not in message


@pytest.mark.parametrize("side", SIDES)
def test_second_fd_same_descriptor_flushes_at_reached_ratio(side):
    """_second_fd_finding with counters: the writing descriptor's syncs must reach the device
    (``same_ratio >= REACHED_FLUSH_RATIO``, 100 / 200 == 0.5) for 0 flushes on the second
    one to mean it was ignored. Sources: PG_TEST_FSYNC_DOC; KERNEL_STAT_DOC."""
    syncs = 200
    same = int(rule_facts.REACHED_FLUSH_RATIO * syncs) + _step(side)
    check = SecondFdCheck("fsync", syncs, 400_000, 3_000, same, 0)
    found = codes(engine.judge(host(disks=(WB_SSD,), virt=VM), [], Evidence(second_fd=check)))
    if side == BELOW:
        assert "second-fd-sync-honoured" in found and "second-fd-sync-ignored" not in found
    else:
        assert "second-fd-sync-ignored" in found and "second-fd-sync-honoured" not in found


# =========================================================================== INTERPOSED_RATIO


def test_interposed_ratio_value():
    """audit's comment: eatmydata measured 0.55 us against 385 us (700x); honest paths
    within 2x of each other. EATMYDATA_DOC (https://github.com/stewartsmith/libeatmydata)."""
    assert rule_facts.INTERPOSED_RATIO == 10.0


@pytest.mark.parametrize("side", SIDES)
def test_raw_call_interposed_ratio_times_slower(side):
    """_interposed without counters: the raw call must be at least INTERPOSED_RATIO times
    the libc call (``libc x INTERPOSED_RATIO <= syscall``: exactly 10x counts). Source:
    EATMYDATA_DOC."""
    libc = 2_000
    raw = int(libc * rule_facts.INTERPOSED_RATIO) + _step(side)
    assert raw >= rule_facts.REAL_IO_FLOOR_NS  # only the ratio is at its edge
    v = engine.judge(
        host(disks=(WB_SSD,), virt=BARE),
        [flush("fdatasync", SLOW_ENOUGH_NS)],
        Evidence(syscall_comparisons=(_cmp(libc, raw),)),
    )
    if side == BELOW:
        assert decision(v) == (HONEST_FLUSH, "flush-latency-plausible")
    else:
        assert decision(v) == (NO_FLUSH, "libc-sync-interposed")


# =========================================================================== sweep


def _sweep(largest, latency_ns, bandwidth=None):
    points = () if largest is None else (SweepPoint(4096, 1_000), SweepPoint(largest, latency_ns))
    return DirtySweep("fdatasync", 1_000.0, bandwidth, 0.99, points)


def _ssds(n):
    return tuple(
        BlockDevice(f"nvme{i}n1", rotational=False, write_cache="write back") for i in range(n)
    )


def test_sweep_constant_values():
    """PCIE_DOC: PCIe 5.0 x4 ~ 15.8 GB/s for one NVMe drive (https://pcisig.com/
    specifications), so 16e9 bytes/s per leaf disk; SWEEP_MIN_BYTES (1 MiB) is unsourced in
    the code ("must have written at least this much"), pinned so a change is deliberate."""
    assert rule_facts.MAX_LINK_BANDWIDTH == 16e9
    assert rule_facts.SWEEP_MIN_BYTES == 1 << 20


@pytest.mark.parametrize("disks", [1, 2])
@pytest.mark.parametrize("side", SIDES)
def test_sweep_faster_than_the_links_allow(side, disks):
    """rule_sweep_bandwidth: the largest size's median sync taking less than largest /
    (MAX_LINK_BANDWIDTH x leaf disks) never left RAM (``median >= least`` is possible:
    exactly the link's time is allowed). 16 MiB at 16 GB/s is 1,048,576 ns exactly, half
    that over two disks. Source: PCIE_DOC (https://pcisig.com/specifications)."""
    largest = 16 << 20
    ceiling = rule_facts.MAX_LINK_BANDWIDTH * disks
    least = largest / ceiling * 1e9
    assert least == int(least)  # representable: the "at" case is exact
    v = engine.judge(
        host(disks=_ssds(disks), virt=BARE),
        [flush("fdatasync", SLOW_ENOUGH_NS)],
        Evidence(dirty_sweep=_sweep(largest, int(least) + _step(side))),
    )
    if side == BELOW:
        assert decision(v) == (NO_FLUSH, "sync-bandwidth-impossible")
        f = finding(v, "sync-bandwidth-impossible")
        assert f.evidence["ceiling_bytes_per_s"] == ceiling
        assert f.evidence["least_possible_ns"] == int(least)
    else:
        assert decision(v) == (HONEST_FLUSH, "flush-latency-plausible")
        assert "sync-bandwidth-impossible" not in codes(v)


@pytest.mark.parametrize("side", SIDES)
def test_fitted_sweep_bandwidth_above_the_link(side):
    """rule_sweep_bandwidth without points: a fitted bandwidth above MAX_LINK_BANDWIDTH x
    leaf disks is impossible (``bw <= ceiling`` is plausible: exactly the link's rate is
    allowed). Source: PCIE_DOC."""
    bw = rule_facts.MAX_LINK_BANDWIDTH + _step(side)
    v = engine.judge(
        host(disks=_ssds(1), virt=BARE),
        [flush("fdatasync", SLOW_ENOUGH_NS)],
        Evidence(dirty_sweep=_sweep(None, 0, bandwidth=bw)),
    )
    if side == ABOVE:
        assert decision(v) == (NO_FLUSH, "sync-bandwidth-impossible")
    else:
        assert decision(v) == (HONEST_FLUSH, "flush-latency-plausible")


@pytest.mark.parametrize("side", SIDES)
def test_sweep_must_reach_sweep_min_bytes(side):
    """rule_sweep_bandwidth: a sweep whose largest size is under SWEEP_MIN_BYTES decides
    nothing (``largest < SWEEP_MIN_BYTES``: exactly 1 MiB counts). A 1 ns sync is
    impossible for any size that counts. Source: PCIE_DOC for the bandwidth bound;
    SWEEP_MIN_BYTES itself has none in the code."""
    largest = rule_facts.SWEEP_MIN_BYTES + _step(side)
    v = engine.judge(
        host(disks=_ssds(1), virt=BARE),
        [flush("fdatasync", SLOW_ENOUGH_NS)],
        Evidence(dirty_sweep=_sweep(largest, 1)),
    )
    if side == BELOW:
        assert decision(v) == (HONEST_FLUSH, "flush-latency-plausible")
    else:
        assert decision(v) == (NO_FLUSH, "sync-bandwidth-impossible")


# =========================================================================== SECOND_FD_MIN_RATIO


def test_second_fd_min_ratio_value():
    """Unsourced in the code beyond the check itself (pg_test_fsync, PG_TEST_FSYNC_DOC:
    https://www.postgresql.org/docs/current/pgtestfsync.html); pinned."""
    assert rule_facts.SECOND_FD_MIN_RATIO == 0.2


@pytest.mark.parametrize("side", SIDES)
def test_second_fd_sync_below_min_ratio_of_the_first(side):
    """_second_fd_finding without counters: the second descriptor's sync is faster than
    SECOND_FD_MIN_RATIO of the writing one's (``second < SECOND_FD_MIN_RATIO x same``,
    strict). same = 40 us so 0.2 x same = 8,000 ns (exact in floats) lies under the real-I/O
    floor and the ratio is the binding condition. Source: PG_TEST_FSYNC_DOC."""
    same = 40_000
    limit = rule_facts.SECOND_FD_MIN_RATIO * same
    assert limit == int(limit) and limit < rule_facts.REAL_IO_FLOOR_NS <= same
    check = SecondFdCheck("fsync", 200, same, int(limit) + _step(side))
    found = codes(engine.judge(host(disks=(WB_SSD,), virt=VM), [], Evidence(second_fd=check)))
    if side == BELOW:
        assert "second-fd-sync-ignored" in found and "second-fd-sync-honoured" not in found
    else:
        assert "second-fd-sync-honoured" in found and "second-fd-sync-ignored" not in found


# =========================================================================== slowness


def test_slowness_values():
    """docs/verdicts.md ("Commit checks": slowness, median > 50 ms, p99 beyond etcd's
    10 ms)"; ETCD_GATE_DOC (https://etcd.io/docs/v3.5/op-guide/hardware/)."""
    assert rule_facts.SLOW_MEDIAN_NS == 50_000_000
    assert rule_facts.GATE_P99_NS == 10_000_000


@pytest.mark.parametrize("side", SIDES)
def test_slow_median_strictly_above_50ms(side):
    """slowness: a p50 above SLOW_MEDIAN_NS is slow (``p50 > SLOW_MEDIAN_NS``: exactly 50 ms
    is not). Source: docs/verdicts.md ("Commit checks")."""
    r = flush("fdatasync", rule_facts.SLOW_MEDIAN_NS + _step(side))
    v = engine.judge(host(disks=(WB_SSD,), virt=BARE), [r])
    assert ("slow-median" in codes(v)) == (side == ABOVE)


@pytest.mark.parametrize("primitive", ["fdatasync", "none"])
@pytest.mark.parametrize("side", SIDES)
def test_p99_strictly_above_the_etcd_gate(side, primitive):
    """slowness: a p99 above GATE_P99_NS is reported (``p99 > GATE_P99_NS``: exactly 10 ms
    is not), for syncing results only. Source: ETCD_GATE_DOC
    (https://etcd.io/docs/v3.5/op-guide/hardware/: p99 WAL fdatasync below 10 ms)."""
    p99 = rule_facts.GATE_P99_NS + _step(side)
    r = with_p99(commit("WAL", "FULL" if primitive != "none" else "OFF", 1_000_000), p99)
    v = engine.judge(host(disks=(WB_SSD,), virt=BARE), [r])
    assert ("p99-above-10ms" in codes(v)) == (side == ABOVE and primitive != "none")


# =========================================================================== stats


def test_stats_threshold_values():
    """stats.py comments: MIN_BLOCKS 5 (t with 3 degrees of freedom already has a 97.5 %
    quantile of 3.18); MIN_TAIL_SAMPLES 10 (a p99 from fewer than 1,000 samples is one of
    its ten largest values); MIN_TAIL_BLOCKS 2 (the whole tail in one burst); MIN_ROUNDS 3
    (t on 2 degrees of freedom); FLOOR_FACTOR 2 has no source beyond its comment."""
    assert intervals.MIN_BLOCKS == 5
    assert intervals.MIN_TAIL_SAMPLES == 10
    assert intervals.MIN_TAIL_BLOCKS == 2
    assert intervals.MIN_ROUNDS == 3
    assert stats.FLOOR_FACTOR == 2.0


def _shuffled(n, seed=0):
    return np.random.default_rng(seed).permutation(np.arange(1, n + 1)).astype(float) * 1000


@pytest.mark.parametrize("side", SIDES)
def test_interval_needs_min_tail_samples(side):
    """quantile_interval: fewer than MIN_TAIL_SAMPLES samples beyond the percentile give no
    interval (``tail < MIN_TAIL_SAMPLES``). For p50 the tail n x 0.5 is exact, so n = 20 is
    exactly at it. (For p99 the tail n x (1 - 0.99) is not exact: 1000 x 0.01 is
    10.000000000000009 in floats, so p99 cannot sit exactly at the threshold.) Source:
    intervals.MIN_TAIL_SAMPLES' comment; Kuensch 1989 for the block jackknife."""
    n = int(intervals.MIN_TAIL_SAMPLES / 0.5) + _step(side)
    iv = intervals.quantile_interval(_shuffled(n), [n // 5] * 4 + [n - 4 * (n // 5)], 50)
    if side == BELOW:
        assert iv.bounds is None
        assert iv.reason == f"n={n} too small for a p50 interval (needs 20)"
    else:
        assert iv.bounds is not None and iv.reason is None


@pytest.mark.parametrize("side", SIDES)
def test_p99_interval_needs_a_thousand_samples(side):
    """quantile_interval for p99: MIN_TAIL_SAMPLES beyond p99 need n >= 1000 (999 x 0.01 <
    10 <= 1000 x 0.01, the latter by float rounding, see above). Source: intervals.MIN_TAIL_SAMPLES
    ("a p99 from fewer than 1,000 samples is one of its ten largest values")."""
    n = 1000 + _step(side)
    iv = intervals.quantile_interval(_shuffled(n), [n // 10] * 9 + [n - 9 * (n // 10)], 99)
    if side == BELOW:
        assert iv.reason == f"n={n} too small for a p99 interval (needs 1000)"
    else:
        assert "too small" not in (iv.reason or "")


@pytest.mark.parametrize("side", SIDES)
def test_interval_needs_min_blocks(side):
    """quantile_interval: fewer than MIN_BLOCKS slices give no interval (``counts.size <
    MIN_BLOCKS``: exactly 5 slices do). Source: intervals.MIN_BLOCKS' comment (Student t's
    97.5 % quantile on 3 degrees of freedom is 3.18)."""
    slices = intervals.MIN_BLOCKS + _step(side)
    n = 120 * slices
    iv = intervals.quantile_interval(_shuffled(n), [120] * slices, 50)
    if side == BELOW:
        assert iv.bounds is None
        assert iv.reason == f"{slices} slice(s): too few for a p50 interval (needs 5)"
    else:
        assert iv.bounds is not None and iv.blocks == slices


#: How the ten samples at or beyond p99 (of 1000, in ten slices of 100) are spread over
#: the slices, and Kish's effective number of slices (sum w)^2 / sum w^2 they give.
TAIL_SPREADS = {BELOW: ((6, 4), 100 / 52), AT: ((5, 5), 2.0), ABOVE: ((5, 4, 1), 100 / 42)}


@pytest.mark.parametrize("side", SIDES)
def test_interval_needs_min_tail_blocks(side):
    """_jackknife_interval: a tail held by fewer than MIN_TAIL_BLOCKS effective slices gives
    no interval (``effective < MIN_TAIL_BLOCKS``): two slices holding five each are exactly
    2.0 effective. Sources: intervals.MIN_TAIL_BLOCKS' comment; Kish 1965, "Survey Sampling",
    sec. 11.7 for the effective count."""
    spread, effective = TAIL_SPREADS[side]
    rng = np.random.default_rng(3)
    x = rng.uniform(1_000, 2_000, 1000)
    top = iter(rng.uniform(10_000, 10_010, 10))
    for block, k in enumerate(spread):
        for i in range(k):
            x[100 * block + i] = next(top)
    iv = intervals.quantile_interval(x, [100] * 10, 99)
    if side == BELOW:
        assert iv.bounds is None
        assert f"too few slices ({math.floor(effective * 100) / 100:.2f} effective)" in iv.reason
    else:
        assert "too few slices" not in (iv.reason or "")
        assert iv.df == pytest.approx(effective - 1)


def _rounds_data(rounds, per_round_slices=4):
    rng = np.random.default_rng(4)
    parts, counts, slice_rounds = [], [], []
    for r in range(rounds):
        shift = 1.0 + 0.5 * r  # each round's level differs (new files, another time)
        for _ in range(per_round_slices):
            parts.append(rng.exponential(size=500) * 100 * shift)
            counts.append(500)
            slice_rounds.append(r)
    return np.concatenate(parts), counts, slice_rounds


@pytest.mark.parametrize("side", SIDES)
def test_round_jackknife_needs_min_rounds(side):
    """quantile_interval: the jackknife over rounds is computed from MIN_ROUNDS rounds on
    (``per_round.size >= MIN_ROUNDS``); with fewer the slices' interval stands however much
    the rounds disagree. Source: intervals.MIN_ROUNDS' comment (t on 2 degrees of freedom)."""
    rounds = intervals.MIN_ROUNDS + _step(side)
    x, counts, slice_rounds = _rounds_data(rounds)
    iv = intervals.quantile_interval(x, counts, 50, slice_rounds=slice_rounds)
    if side == BELOW:
        assert iv.method == intervals.METHOD_BLOCKS and iv.blocks == len(counts)
    else:
        assert iv.method == intervals.METHOD_ROUNDS and iv.blocks == rounds


def _floor(p50_ns):
    return dataclasses.replace(write(p50_ns), kind="floor", name=stats.FLOOR_WRITE)


@pytest.mark.parametrize("side", SIDES)
def test_at_tool_floor_within_floor_factor(side):
    """at_tool_floor: a p50 within FLOOR_FACTOR x the applicable floor's p50 measures the
    tool (``p50 <= FLOOR_FACTOR x floor``: exactly 2x is still at the floor), and the results
    table marks it. FLOOR_FACTOR has no cited source (stats.py comment only)."""
    floor = 1_000
    r = flush("fdatasync", stats.FLOOR_FACTOR * floor + _step(side))
    report = api.build_report(
        "run",
        host(disks=(WB_SSD,), virt=BARE),
        [r],
        ("fsyncbench", "run", "/data"),
        floors=(_floor(floor),),
    )
    at = side != ABOVE
    assert stats.at_tool_floor(r, report.floors) is at
    label = latency.results_table(report).rows[0][0].text
    assert label == "write+fdatasync" + (" (at the tool's floor)" if at else "")


# =========================================================================== compare


def _floor_comparison(ratio):
    return compare.QuantileComparison(50, 1_000.0, None, 1_000.0 * ratio, None, ratio, None, None)


def _pair(ratio):
    return compare.PairComparison(
        (), (), (), compare.CONFIDENCE, floors=((stats.FLOOR_WRITE, _floor_comparison(ratio)),)
    )


def test_compare_constant_values():
    """FLOOR_MOVED_RATIO: the no-sync write p50 varied by up to 15 % between processes on
    this project's 2-core Firecracker VM (compare.py comment; README, "How far to trust the
    intervals"). CONFIDENCE: Holm 1979 (Scand. J. Statist. 6:65-70) at a 5 % family-wise
    error rate (compare.py module docstring)."""
    assert compare.FLOOR_MOVED_RATIO == 1.25
    assert compare.CONFIDENCE == 0.95


@pytest.mark.parametrize("side", SIDES)
def test_floor_moved_strictly_beyond_the_ratio_up(side):
    """PairComparison.floor_moved: a floor p50 that moved by more than FLOOR_MOVED_RATIO
    (``ratio > FLOOR_MOVED_RATIO``: exactly 1.25x has not moved) says the machine changed,
    and compare prints it. Neighbouring floats are the nearest representable "just below"
    and "just above". Source: compare.py comment (up to 15 % process-to-process spread on
    this project's VM; README "How far to trust the intervals")."""
    ratio = {
        BELOW: math.nextafter(compare.FLOOR_MOVED_RATIO, 0),
        AT: compare.FLOOR_MOVED_RATIO,
        ABOVE: math.nextafter(compare.FLOOR_MOVED_RATIO, 2),
    }[side]
    pair = _pair(ratio)
    line = render.floor_moved_line(pair)
    if side == ABOVE:
        assert [name for name, _ in pair.floor_moved] == [stats.FLOOR_WRITE]
        assert line.startswith("The machine itself changed between the runs")
    else:
        assert pair.floor_moved == () and line == ""


@pytest.mark.parametrize("side", SIDES)
def test_floor_moved_strictly_beyond_the_ratio_down(side):
    """PairComparison.floor_moved, faster side: ``ratio < 1 / FLOOR_MOVED_RATIO`` (1 / 1.25
    is 0.8, the same double as the literal; exactly 0.8x has not moved). Source: as above."""
    edge = 1.0 / compare.FLOOR_MOVED_RATIO
    assert edge == 0.8
    ratio = {BELOW: math.nextafter(edge, 0), AT: edge, ABOVE: math.nextafter(edge, 1)}[side]
    moved = bool(_pair(ratio).floor_moved)
    assert moved is (side == BELOW)


def _tested(p):
    return dataclasses.replace(_floor_comparison(1.0), p_value=p)


@pytest.mark.parametrize("side", SIDES)
def test_significant_strictly_below_one_minus_confidence(side):
    """compare._adjust: a difference is significant when its Holm-adjusted p-value is below
    1 - CONFIDENCE (``p < 1 - confidence``, strict: exactly at it is not significant). One
    statistic, so Holm leaves p unchanged. The level is compare.alpha(0.95) == 0.05 exactly
    (the float 1 - 0.95 would be 0.050000000000000044; see the test below).
    Source: Holm 1979, Scand. J. Statist. 6:65-70 (compare.py module docstring)."""
    alpha = 0.05
    assert compare.alpha(compare.CONFIDENCE) == alpha
    p = {BELOW: math.nextafter(alpha, 0), AT: alpha, ABOVE: math.nextafter(alpha, 1)}[side]
    (q,) = compare._adjust([_tested(p)], compare.CONFIDENCE)
    assert q.p_adjusted == p
    assert q.significant is (side == BELOW)


def test_p_value_of_exactly_five_percent_is_not_significant():
    """The documented rule (compare.py: "significant when its adjusted p-value is below
    1 - confidence") at the conventional 5 %: p = 0.05 is not below 0.05. Source: Holm 1979."""
    (q,) = compare._adjust([_tested(0.05)], compare.CONFIDENCE)
    assert q.significant is False


# =========================================================================== gates


def _gate_report(p99_ns):
    r = with_p99(flush("fdatasync", SLOW_ENOUGH_NS), p99_ns)
    return api.build_report(
        "run", host(disks=(WB_SSD,), virt=BARE), [write(2_000), r], ("fsyncbench", "run", "/data")
    )


def test_gate_example_limit_is_etcds():
    """gates.py docstring: etcd's hardware guide asks for p99 WAL fdatasync below 10 ms
    (https://etcd.io/docs/v3.5/op-guide/hardware/), the same line as rule_facts.GATE_P99_NS."""
    assert gates.parse_duration("10ms", "--max-p99") == rule_facts.GATE_P99_NS == 10_000_000


@pytest.mark.parametrize("side", SIDES)
def test_max_p99_fails_strictly_above_the_limit(side):
    """gates.check --max-p99: a p99 above the limit fails (``p99 > max_p99_ns``: a p99 of
    exactly the limit passes). Source: gates.py docstring, etcd's 10 ms p99 gate
    (https://etcd.io/docs/v3.5/op-guide/hardware/)."""
    limit = gates.parse_duration("10ms", "--max-p99")
    failures = gates.check(_gate_report(limit + _step(side)), max_p99_ns=limit)
    if side == ABOVE:
        assert [(f.subject, f.gate) for f in failures] == [("write+fdatasync", "max-p99")]
        assert failures[0].message.startswith("write+fdatasync: p99 ")
        assert failures[0].message.endswith("is above --max-p99 10 ms")
    else:
        assert failures == []


@pytest.mark.parametrize("verdict", PATH_VERDICTS)
def test_fail_on_is_exact_membership(verdict):
    """gates.check --fail-on: a configuration fails exactly when its path verdict is one of
    those listed, whatever the others. Source: gates.py docstring (the set boundary has no
    "at"; each verdict is checked in and out of the list)."""
    report = _gate_report(1_000_000)
    rv = ResultVerdict("write+fdatasync", verdict, None, "made-up-code")
    report = dataclasses.replace(report, verdict=dataclasses.replace(report.verdict, results=(rv,)))
    others = tuple(x for x in PATH_VERDICTS if x != verdict)
    assert gates.check(report, fail_on=others) == []
    (failure,) = gates.check(report, fail_on=(verdict,))
    assert failure.gate == "fail-on"
    assert failure.message == (
        f"write+fdatasync: path verdict {verdict} (decided by "
        f"made-up-code) is in --fail-on {verdict}"
    )


@pytest.mark.parametrize("text,side", [("-1ns", BELOW), ("0ns", AT), ("0.0ns", AT), ("1ns", ABOVE)])
def test_parse_duration_must_be_more_than_zero(text, side):
    """parse_duration: a duration must be more than zero (``ns <= 0`` after rounding to whole ns is refused: exactly 0
    is refused; a minus sign is not a number the pattern takes). Source: gates.py
    (--max-p99 needs a positive limit; etcd's example is 10ms)."""
    if side == ABOVE:
        assert gates.parse_duration(text, "--max-p99") == 1
    else:
        why = "must be at least 1 ns" if side == AT else "give a number with a unit"
        with pytest.raises(FsyncbenchError, match=f"invalid --max-p99 '{text}': {why}"):
            gates.parse_duration(text, "--max-p99")


def test_parse_duration_refuses_what_rounds_to_zero():
    """parse_duration for sub-nanosecond input: the returned integer limit must be
    positive, so what rounds to 0 ns is refused."""
    with pytest.raises(FsyncbenchError, match="must be at least 1 ns"):
        gates.parse_duration("0.4ns", "--max-p99")
