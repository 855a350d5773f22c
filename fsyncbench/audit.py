"""The verdict engine: small rules over recorded facts -> findings and verdicts.

Everything here is a pure function of a :class:`~fsyncbench.model.Host`, the results'
summaries and counters, and (for ``fsyncbench audit`` reports) the recorded
:class:`~fsyncbench.model.Evidence`, so a saved or hand-written report is judged exactly like
a live run (``fsyncbench audit --from REPORT.json``; the fields read are listed in
docs/report-schema.md).

Signals are weighed strongest first (../shared/DESIGN.md, "Signals"). A storage path and sync
primitive get the verdict of the first path rule in :data:`PATH_RULES` that returns one, and
``decided_by`` names that rule's finding code:

1. what the filesystem is (tmpfs, overlay ``volatile``, ZFS ``sync=disabled``);
2. the device flush counters around the workload;
3. libc wrapper vs raw system call (interposition), measured;
4. the dirty-size sweep (a bandwidth no storage bus delivers);
5. a sync-disabling library named in LD_PRELOAD or /etc/ld.so.preload — only where no
   measured signal above covers the primitive;
6. mount options that drop cache flushes (``nobarrier``, ``barrier=0``);
7. platform semantics (macOS fsync), identified cloud block storage, network filesystems,
   virtualization;
8. flushes counted on bare metal, then latency against device-class floors.

Latency never decides against a stronger signal: the latency rules come last, and a latency
below the floor only ever withholds ``honest_flush``. Slowness and tails are separate
findings; so are config durability and the commit checks (syncs per commit, FULL vs OFF,
commit vs S x flush).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from fsyncbench.model import (
    HONEST_FLUSH,
    INFO,
    NO_FLUSH,
    RISK,
    UNVERIFIABLE,
    VOLATILE_CACHE,
    WARNING,
    Evidence,
    Finding,
    Host,
    Pragmas,
    Report,
    Result,
    ResultVerdict,
    SyncTrace,
    Verdict,
)

SQLITE_SYNC_DOC = "https://www.sqlite.org/pragma.html#pragma_synchronous"
SQLITE_WAL_DOC = "https://www.sqlite.org/wal.html#performance_considerations"
APPLE_FSYNC_DOC = (
    "fsync(2) on macOS: 'the disk drive may not have written the data to permanent storage; "
    "use F_FULLFSYNC' (https://developer.apple.com/library/archive/documentation/System/"
    "Conceptual/ManPages_iPhoneOS/man2/fsync.2.html)"
)
APPLE_BARRIER_DOC = (
    "Apple, 'Reducing disk writes': F_BARRIERFSYNC orders writes but does not flush the "
    "drive (https://developer.apple.com/documentation/xcode/reducing-disk-writes)"
)
KERNEL_STAT_DOC = "https://www.kernel.org/doc/html/latest/block/stat.html (fields 16-17)"
DESIGN_BANDS = "../shared/DESIGN.md, signal 7 (latency bands by device class)"
ETCD_GATE_DOC = (
    "etcd hardware guide: p99 of WAL fdatasync should stay below 10 ms "
    "(https://etcd.io/docs/v3.5/op-guide/hardware/)"
)
EATMYDATA_DOC = (
    "eatmydata(1): 'transparently disable fsync and other data-to-disk synchronization "
    "calls' by preloading libeatmydata.so (https://github.com/stewartsmith/libeatmydata)"
)
OVERLAY_VOLATILE_DOC = (
    "Linux Documentation/filesystems/overlayfs.rst, 'Volatile mount': 'all forms of sync "
    "calls to the upper filesystem are omitted'"
)
ZFS_SYNC_DOC = (
    "zfsprops(7), sync=disabled: 'disables synchronous requests. File system transactions "
    "are only committed to stable storage periodically' "
    "(https://openzfs.github.io/openzfs-docs/man/master/7/zfsprops.7.html)"
)
BARRIER_DOC = (
    "Linux Documentation/admin-guide/ext4.rst (barrier=0/nobarrier 'disables the use of "
    "write barriers in the jbd code'); SUSE/Red Hat storage guides: disabling barriers on "
    "a volatile write cache risks data loss on power failure"
)
FIRECRACKER_DOC = (
    "Firecracker docs, block device caching "
    "(https://github.com/firecracker-microvm/firecracker/blob/main/docs/api_requests/"
    "block-caching.md)"
)
CLOUD_BLOCK_DOC = (
    "AWS: EBS volumes are network block storage replicated within an Availability Zone "
    "(https://docs.aws.amazon.com/ebs/latest/userguide/ebs-volumes.html); Google Cloud: "
    "Persistent Disk is durable network storage with redundancy "
    "(https://cloud.google.com/compute/docs/disks/persistent-disks)"
)
PCIE_DOC = (
    "PCI-SIG PCIe 5.0: 32 GT/s per lane, 128b/130b coding -> ~3.94 GB/s per lane, ~15.8 GB/s "
    "for the x4 link of one NVMe drive (https://pcisig.com/specifications); sync 'bandwidths' "
    "near 20 GB/s on an Apple SSD were its cache (https://eclecticlight.co/2022/02/18/"
    "how-can-you-trust-a-disk-to-write-data/)"
)
PG_TEST_FSYNC_DOC = (
    "pg_test_fsync, 'Test if fsync on non-write file descriptor is honored' "
    "(https://www.postgresql.org/docs/current/pgtestfsync.html)"
)

#: Filesystems with no block device behind them: a sync never reaches stable media.
#: tmpfs/ramfs: Documentation/filesystems/tmpfs.rst ("everything is in virtual memory").
NO_FLUSH_FILESYSTEMS = frozenset({"tmpfs", "ramfs", "devtmpfs"})

#: Filesystems whose sync is forwarded to a server or a user-space daemon: nfs(5), cifs,
#: 9p, virtiofs, FUSE. Whether that side persists it cannot be seen from here.
NETWORK_FILESYSTEMS = frozenset({
    "nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "virtiofs", "ceph", "glusterfs",
    "lustre", "afs", "vboxsf", "prl_fs", "vmhgfs",
})

#: Names of libraries that turn sync calls into no-ops: libeatmydata (eatmydata(1)),
#: libnosync (Fedora "nosync"), disable-fsync.so (BigLinux's /etc/ld.so.preload recipe,
#: https://biglinux.blogspot.com/2021/08/disable-fsync-explicacao-de-uso-no.html).
SYNC_DISABLING_LIBS = ("libeatmydata", "eatmydata", "libnosync", "disable-fsync", "nosync.so")

#: Mount options that stop the filesystem from sending cache flushes (ext4/ext3 barrier=0,
#: nobarrier; f2fs fsync_mode=nobarrier; xfs nobarrier before Linux 4.19).
NO_BARRIER_OPTIONS = frozenset({"nobarrier", "barrier=0", "fsync_mode=nobarrier"})

#: Model strings of cloud network block storage whose provider documents durable,
#: replicated writes (CLOUD_BLOCK_DOC): AWS EBS on Nitro NVMe, GCP Persistent Disk (SCSI
#: model "PersistentDisk", NVMe model "nvme_card-pd").
CLOUD_BLOCK_MODELS = ("amazon elastic block store", "persistentdisk", "nvme_card-pd")

#: Least time (ns) one sync that reaches any real block device adds (DESIGN_BANDS: "anything
#: with real block I/O ~ 10 us"). Two commits differing only in their syncs must differ by
#: at least this much if those syncs reach a device.
REAL_IO_FLOOR_NS = 10_000

#: A commit issuing S >= 1 syncs cannot take less than this share of S x one flush measured
#: on the same directory (E3 in ../shared/cases: 0.4 ms commits on a 14.5 ms flush disk).
COMMIT_VS_FLUSH_MIN_RATIO = 0.5

#: Fewer syncs than this make the counter ratio too noisy to use.
COUNTER_MIN_SYNCS = 50

#: Device flushes per sync below which flushes are "dropped", and at or above which they
#: "reach the device" (ext4 sends one to two per fdatasync: journal commit pre-flush, and a
#: post-flush where the disk lacks FUA; other I/O on the disk only adds flushes).
DROPPED_FLUSH_RATIO = 0.1
REACHED_FLUSH_RATIO = 0.5

#: The libc call is interposed when it is this many times faster than the raw system call
#: and the raw call does real I/O (>= REAL_IO_FLOOR_NS). eatmydata measured here: 0.55 us
#: against 385 us (700x); honest paths measure within 2x of each other.
INTERPOSED_RATIO = 10.0

#: Fastest sustained write one storage link delivers, bytes/s, per leaf disk (PCIE_DOC).
MAX_LINK_BANDWIDTH = 16e9

#: The sweep must have written at least this much for its bandwidth to mean anything.
SWEEP_MIN_BYTES = 1 << 20

#: A second-descriptor sync faster than this share of a same-descriptor sync skipped work.
SECOND_FD_MIN_RATIO = 0.2

#: Slowness findings (DESIGN.md: median > 50 ms is slow; etcd's 10 ms p99 gate).
SLOW_MEDIAN_NS = 50_000_000
GATE_P99_NS = 10_000_000

#: Primitives a durable journal relies on, most preferred first (F_FULLFSYNC on macOS,
#: fdatasync on Linux, else fsync / FlushFileBuffers).
MAIN_PRIMITIVES = ("F_FULLFSYNC", "fdatasync", "fsync", "FlushFileBuffers")


@dataclass(frozen=True)
class Facts:
    """Everything a rule may read: the recorded host, results and evidence."""

    host: Host
    results: tuple[Result, ...]
    evidence: Evidence | None = None


@dataclass(frozen=True)
class DeviceClass:
    """What kind of storage the facts say this is, and its honest-flush floor (ns)."""

    name: str
    floor_ns: int
    source: str


def device_class(host: Host, primitive: str) -> DeviceClass:
    """Device class of the target's storage for ``primitive`` and its floor, from
    DESIGN_BANDS: spinning disk 2 ms; Apple SSD with F_FULLFSYNC 1 ms; network block
    storage 100 us; SSD 15 us (a datacenter SSD with PLP, the fastest honest SSD: we
    cannot see PLP, so the lowest floor of the class is used); any block device 10 us."""
    target = host.target
    darwin = target.darwin or {}
    if darwin.get("BusProtocol") == "Apple Fabric" and primitive == "F_FULLFSYNC":
        return DeviceClass("Apple internal SSD (F_FULLFSYNC)", 1_000_000, DESIGN_BANDS)
    disks = target.disks
    models = _models(host)
    if any(s in models for s in CLOUD_BLOCK_MODELS) or "msft virtual disk" in models:
        return DeviceClass("network block storage", 100_000, DESIGN_BANDS)
    if disks and all(d.rotational for d in disks) and not host.virtualization.virtualized:
        return DeviceClass("spinning disk", 2_000_000, DESIGN_BANDS)
    if disks and all(d.rotational is False for d in disks):
        return DeviceClass("SSD", 15_000, DESIGN_BANDS)
    return DeviceClass("block device", REAL_IO_FLOOR_NS, DESIGN_BANDS)


# --------------------------------------------------------------------------- fact helpers


def _models(host: Host) -> str:
    return " ".join(f"{d.vendor or ''} {d.model or ''}" for d in host.target.disks).lower()


def _flush_results(results: Sequence[Result]) -> list[Result]:
    return [r for r in results if r.kind == "flush"]


def _commit(results: Sequence[Result], like: Pragmas, sync: str) -> Result | None:
    """The commit result with ``like``'s journal_mode and fullfsync at ``sync``."""
    for r in results:
        p = r.effective or r.requested
        if (r.kind == "commit" and p and p.journal_mode == like.journal_mode
                and p.fullfsync == like.fullfsync and p.synchronous == sync):
            return r
    return None


def _least_flushes(result: Result) -> int | None:
    """Flushes on the least-flushed leaf disk (with md/dm each sync flushes every leaf);
    None when any leaf lacks a counter or none was read."""
    counts = [d.flushes for d in result.device_flushes]
    if not counts or any(c is None for c in counts):
        return None
    return min(counts)  # type: ignore[type-var]


def _counter_ratio(result: Result | None) -> float | None:
    """Device flushes per sync issued (least-flushed leaf); None if not measurable."""
    if result is None or not result.syncs_issued or result.syncs_issued < COUNTER_MIN_SYNCS:
        return None
    least = _least_flushes(result)
    return None if least is None else least / result.syncs_issued


def _flush_ms_per_flush(result: Result) -> float | None:
    """Kernel-accounted ms per flush (stat field 17 / field 16) on the first leaf."""
    for d in result.device_flushes:
        if d.flushes and d.flush_time_ms is not None:
            return round(d.flush_time_ms / d.flushes, 4)
    return None


def _write_back(host: Host) -> bool | None:
    caches = [d.write_cache for d in host.target.disks if d.write_cache]
    if not caches:
        return None
    return any("back" in c for c in caches)


def _us(ns: float) -> str:
    """A duration in us below 10 ms, else in ms."""
    return f"{ns / 1e3:.1f} us" if abs(ns) < 10_000_000 else f"{ns / 1e6:.1f} ms"


def _base_primitive(name: str) -> str:
    return name.split(" ")[0]


def _comparison(f: Facts, primitive: str):
    if f.evidence is None:
        return None
    return next((c for c in f.evidence.syscall_comparisons if c.primitive == primitive), None)


def _ratio(flushes: int | None, syncs: int) -> float | None:
    if flushes is None or syncs < COUNTER_MIN_SYNCS:
        return None
    return flushes / syncs


def _mount_options(host: Host) -> set[str]:
    m = host.target.mount
    return set() if m is None else {o.strip().lower() for o in (*m.options, *m.super_options)}


def _preload_names(f: Facts) -> list[str]:
    """LD_PRELOAD entries, /etc/ld.so.preload entries and mapped preloaded libraries."""
    names = [p for p in (f.host.ld_preload or "").replace(":", " ").split() if p]
    if f.evidence is not None:
        names += list(f.evidence.environment.ld_so_preload)
        names += list(f.evidence.environment.preloaded_libraries)
    return names


def _sync_disabling(names: Sequence[str]) -> list[str]:
    out = []
    for n in names:
        base = n.rsplit("/", 1)[-1].lower()
        if any(lib in base for lib in SYNC_DISABLING_LIBS) and n not in out:
            out.append(n)
    return out


def _subject(r: Result | None) -> str:
    return "path" if r is None else r.name


def _primitive(f: Facts, r: Result | None) -> str:
    if r is not None:
        return _base_primitive(r.primitive)
    if f.host.os_name == "Darwin":
        return "F_FULLFSYNC"
    return "FlushFileBuffers" if f.host.os_name == "Windows" else "fdatasync"


# --------------------------------------------------------------------------- path rules
# Each path rule looks at one flush primitive (r; None = the path with nothing measured)
# and returns (verdict, deciding finding) or None. Strongest signal first.

PathRule = Callable[[Facts, "Result | None"], "tuple[str, Finding] | None"]


def rule_no_flush_filesystem(f: Facts, r: Result | None):
    """tmpfs/ramfs hold data in RAM (tmpfs.rst); overlay mounted ``volatile`` omits every
    sync to the upper layer (OVERLAY_VOLATILE_DOC); ZFS ``sync=disabled`` disregards sync
    requests (ZFS_SYNC_DOC). Filesystem facts: nothing below can contradict them."""
    mount = f.host.target.mount
    prim = _primitive(f, r)
    if mount is None:
        return None
    if mount.fs_type in NO_FLUSH_FILESYSTEMS:
        return NO_FLUSH, Finding(
            "no-flush-filesystem", RISK, _subject(r),
            f"The target is on {mount.fs_type}, which keeps data in RAM: {prim} "
            "never reaches a block device.",
            "Benchmark the directory your journal will really live on.",
            {"fs_type": mount.fs_type, "mount_point": mount.mount_point},
            "Linux Documentation/filesystems/tmpfs.rst",
        )
    if mount.fs_type == "overlay" and "volatile" in _mount_options(f.host):
        return NO_FLUSH, Finding(
            "overlay-volatile", RISK, _subject(r),
            f"The target is an overlay mounted with 'volatile': {prim} is not passed to "
            "the upper filesystem.",
            "Remove the 'volatile' option (or keep the journal outside the overlay).",
            {"fs_type": mount.fs_type, "options": sorted(_mount_options(f.host))},
            OVERLAY_VOLATILE_DOC,
        )
    zfs_sync = f.evidence.environment.zfs_sync if f.evidence else None
    if mount.fs_type == "zfs" and (zfs_sync or "").lower() == "disabled":
        return NO_FLUSH, Finding(
            "zfs-sync-disabled", RISK, _subject(r),
            f"The ZFS dataset {mount.source} has sync=disabled: {prim} returns at once and "
            "data reaches disk only with the next transaction group.",
            f"zfs set sync=standard {mount.source} (add a SLOG device if sync writes are slow).",
            {"fs_type": "zfs", "dataset": mount.source, "zfs_sync": zfs_sync},
            ZFS_SYNC_DOC,
        )
    return None


def rule_flush_counters(f: Facts, r: Result | None):
    """N syncs reaching a disk with a write-back cache must send ~N cache flushes; fewer
    than DROPPED_FLUSH_RATIO per sync means a layer above the device drops them
    (KERNEL_STAT_DOC). A write-through disk needs no flushes, so it is not judged here."""
    ratio = _counter_ratio(r)
    if ratio is None or r is None or f.host.target.mount is None:
        return None
    if ratio < DROPPED_FLUSH_RATIO and _write_back(f.host):
        return NO_FLUSH, Finding(
            "flushes-dropped", RISK, r.name,
            f"{r.syncs_issued} {r.primitive} calls reached the disk as "
            f"{_least_flushes(r)} cache flushes although its write-back cache needs them: "
            "something above the device drops them.",
            "Look for eatmydata, nobarrier/barrier=0 mounts or a no-op sync layer.",
            {"syncs_issued": r.syncs_issued,
             "device_flushes": {d.device: d.flushes for d in r.device_flushes},
             "flushes_per_sync": round(ratio, 3),
             "write_cache": [d.write_cache for d in f.host.target.disks]},
            KERNEL_STAT_DOC,
        )
    return None


def rule_libc_interposed(f: Facts, r: Result | None):
    """The libc wrapper against ``syscall(SYS_fdatasync)`` after identical writes (EATMYDATA_DOC;
    the measurement: fsyncbench.evidence.compare_libc_syscall). With counters on both sides
    they decide: the libc blocks sent < DROPPED_FLUSH_RATIO flushes per call while the raw
    blocks sent >= REACHED_FLUSH_RATIO. Without counters, time decides only in the shape
    interposition has: a libc call faster than any real I/O (REAL_IO_FLOOR_NS) against a raw
    call INTERPOSED_RATIO times slower (a noisy disk shifts both, never below the floor)."""
    c = _comparison(f, _primitive(f, r))
    if c is None:
        return None
    libc_ratio = _ratio(c.libc_flushes, c.syncs)
    raw_ratio = _ratio(c.syscall_flushes, c.syncs)
    if libc_ratio is not None and raw_ratio is not None:
        by_counter = libc_ratio < DROPPED_FLUSH_RATIO and raw_ratio >= REACHED_FLUSH_RATIO
        by_time = False
    else:
        by_counter = False
        by_time = (c.libc_p50_ns < REAL_IO_FLOOR_NS <= c.syscall_p50_ns
                   and c.libc_p50_ns * INTERPOSED_RATIO <= c.syscall_p50_ns)
    if not (by_time or by_counter):
        return None
    libs = _sync_disabling(_preload_names(f))
    return NO_FLUSH, Finding(
        "libc-sync-interposed", RISK, _subject(r),
        f"libc {c.primitive} returns in {c.libc_p50_ns / 1e3:.1f} us but the raw system call "
        f"takes {c.syscall_p50_ns / 1e3:.1f} us"
        + (f" and sends {raw_ratio:.2f} device flushes per call against {libc_ratio:.2f}"
           if by_counter else "")
        + ": a library interposes the libc call and skips the sync.",
        "Unset LD_PRELOAD / clear /etc/ld.so.preload of "
        + (", ".join(libs) if libs else "the interposing library") + " and audit again.",
        {"primitive": c.primitive, "libc_p50_ns": c.libc_p50_ns,
         "syscall_p50_ns": c.syscall_p50_ns, "syscall_number": c.syscall_number,
         "machine": c.machine, "syncs_per_side": c.syncs,
         "libc_flushes": c.libc_flushes, "syscall_flushes": c.syscall_flushes,
         "ratio": round(c.syscall_p50_ns / max(c.libc_p50_ns, 1.0), 1),
         "ld_preload": f.host.ld_preload, "sync_disabling_libraries": libs},
        EATMYDATA_DOC,
    )


def _sweep_ceiling(f: Facts) -> float:
    return MAX_LINK_BANDWIDTH * max(1, len(f.host.target.disks))


def rule_sweep_bandwidth(f: Facts, r: Result | None):
    """The dirty-size sweep (sync after writing 4 KiB ... 64 MiB): moving the largest size at
    the fastest rate the leaf disks' links carry (MAX_LINK_BANDWIDTH each, PCIE_DOC) takes at
    least bytes / ceiling; a median sync faster than that means the data never left RAM.
    This bound only needs the largest size's latency, so noise (which only adds time) cannot
    fake it. A hand-written sweep without points is judged on its fitted bandwidth."""
    sweep = f.evidence.dirty_sweep if f.evidence else None
    if sweep is None or sweep.primitive != _primitive(f, r):
        return None
    ceiling = _sweep_ceiling(f)
    bw = sweep.bandwidth_bytes_per_s
    evidence = {"primitive": sweep.primitive, "flush_cost_ns": sweep.flush_cost_ns,
                "bandwidth_bytes_per_s": bw, "ceiling_bytes_per_s": ceiling,
                "r_squared": sweep.r_squared}
    if sweep.points:
        largest = max(p.dirty_bytes for p in sweep.points)
        if largest < SWEEP_MIN_BYTES:
            return None
        times = sorted(p.latency_ns for p in sweep.points if p.dirty_bytes == largest)
        median = times[len(times) // 2]
        least = largest / ceiling * 1e9
        if median >= least:
            return None
        evidence.update(largest_bytes=largest, largest_p50_ns=median, least_possible_ns=round(least))
        shown = (f"a sync after {largest >> 20} MiB took {_us(median)}, less than the "
                 f"{_us(least)} {largest >> 20} MiB need at {ceiling / 1e9:.0f} GB/s")
    else:
        if bw is not None and bw <= ceiling:
            return None
        shown = ("latency did not grow with the bytes written" if bw is None else
                 f"the fitted bandwidth {bw / 1e9:,.0f} GB/s exceeds {ceiling / 1e9:.0f} GB/s")
    return NO_FLUSH, Finding(
        "sync-bandwidth-impossible", RISK, _subject(r),
        f"Dirty-size sweep with {sweep.primitive}: {shown}, the most the storage links here "
        "carry: the data never left RAM.",
        "Find the layer that acknowledges syncs from memory (eatmydata, a no-op sync, a RAM "
        "disk) and audit the real storage path.",
        evidence, PCIE_DOC,
    )


def rule_sync_disabling_preload(f: Facts, r: Result | None):
    """A sync-disabling library (SYNC_DISABLING_LIBS) named in LD_PRELOAD, /etc/ld.so.preload
    or the mapped libraries. A name alone is weaker than a measurement, so this decides only
    where neither a libc-vs-syscall comparison nor a flush counter covers the primitive."""
    libs = _sync_disabling(_preload_names(f))
    if not libs:
        return None
    if _comparison(f, _primitive(f, r)) is not None or _counter_ratio(r) is not None:
        return None
    return NO_FLUSH, Finding(
        "sync-disabled-by-preload", RISK, _subject(r),
        f"{', '.join(libs)} is preloaded into this process; it turns "
        f"{_primitive(f, r)} into a no-op (a name match: no measurement contradicts it).",
        "Run without eatmydata (unset LD_PRELOAD, clear /etc/ld.so.preload) to measure real "
        "flushes.",
        {"ld_preload": f.host.ld_preload, "libraries": libs},
        EATMYDATA_DOC,
    )


def rule_barriers_disabled(f: Facts, r: Result | None):
    """``nobarrier``/``barrier=0`` stop the filesystem from sending cache flushes: on a
    write-back (or unknown) cache a sync ends in the drive's volatile cache (BARRIER_DOC).
    Counters that still show flushes reaching the device (a kernel that ignores the option,
    as xfs since Linux 4.19) overrule the option."""
    opts = _mount_options(f.host) & NO_BARRIER_OPTIONS
    if not opts or _write_back(f.host) is False:
        return None
    ratio = _counter_ratio(r)
    if ratio is not None and ratio >= REACHED_FLUSH_RATIO:
        return None
    mount = f.host.target.mount
    return VOLATILE_CACHE, Finding(
        "barriers-disabled", RISK, _subject(r),
        f"{mount.fs_type if mount else 'The filesystem'} is mounted with "
        f"{', '.join(sorted(opts))}: {_primitive(f, r)} writes data to the drive but never "
        "asks it to flush its volatile write cache.",
        "Remount without nobarrier/barrier=0 unless the cache is battery- or "
        "capacitor-backed.",
        {"mount_options": sorted(_mount_options(f.host)),
         "write_cache": [d.write_cache for d in f.host.target.disks],
         "flushes_per_sync": None if ratio is None else round(ratio, 3)},
        BARRIER_DOC,
    )


def rule_macos_plain_fsync(f: Facts, r: Result | None):
    """On macOS plain fsync and F_BARRIERFSYNC return once data reaches the drive, whose
    cache is volatile (APPLE_FSYNC_DOC, APPLE_BARRIER_DOC); only F_FULLFSYNC flushes it."""
    if r is None or f.host.os_name != "Darwin" or r.primitive not in ("fsync", "F_BARRIERFSYNC"):
        return None
    full = next((x for x in _flush_results(f.results) if x.primitive == "F_FULLFSYNC"), None)
    return VOLATILE_CACHE, Finding(
        "macos-fsync-stops-at-cache", RISK, r.name,
        f"On macOS {r.primitive} returns once data reaches the drive's volatile cache.",
        "Use F_FULLFSYNC (SQLite: PRAGMA fullfsync=ON with a SQLite that maps it to "
        "F_FULLFSYNC) for power-loss durability.",
        {"primitive": r.primitive, "p50_ns": r.summary.p50_ns,
         "fullfsync_ratio": None if full is None
         else round(full.summary.p50_ns / r.summary.p50_ns)},
        APPLE_FSYNC_DOC if r.primitive == "fsync" else APPLE_BARRIER_DOC,
    )


def rule_cloud_block_storage(f: Facts, r: Result | None):
    """A disk whose model names a cloud block service that documents durable, replicated
    writes (CLOUD_BLOCK_MODELS, CLOUD_BLOCK_DOC). Its identity answers what a guest cannot
    see of a generic virtual disk; a p50 below any real I/O (REAL_IO_FLOOR_NS) withholds it."""
    models = _models(f.host)
    hit = next((m for m in CLOUD_BLOCK_MODELS if m in models), None)
    if hit is None or not f.host.target.disks:
        return None
    if not all(any(m in f"{d.vendor or ''} {d.model or ''}".lower() for m in CLOUD_BLOCK_MODELS)
               for d in f.host.target.disks):
        return None
    if r is not None and r.summary.p50_ns < REAL_IO_FLOOR_NS:
        return None
    return HONEST_FLUSH, Finding(
        "cloud-block-storage", INFO, _subject(r),
        f"The target sits on {', '.join(sorted({d.model or '?' for d in f.host.target.disks}))}, "
        "network block storage whose provider acknowledges a write only once it is stored "
        "redundantly.",
        "Mind the volume's IOPS/latency limits; a local instance-store disk would not be "
        "durable across instance stop.",
        {"models": [d.model for d in f.host.target.disks],
         "write_cache": [d.write_cache for d in f.host.target.disks],
         "p50_ns": None if r is None else r.summary.p50_ns},
        CLOUD_BLOCK_DOC,
    )


def rule_network_filesystem(f: Facts, r: Result | None):
    """NFS, SMB, 9p, virtiofs, FUSE: the sync is forwarded to a server or daemon whose own
    storage path cannot be seen from this machine (nfs(5) 'sync'; fuse(4) FSYNC)."""
    mount = f.host.target.mount
    if mount is None:
        return None
    fs = mount.fs_type
    if fs not in NETWORK_FILESYSTEMS and not fs.startswith("fuse"):
        return None
    return UNVERIFIABLE, Finding(
        "network-filesystem", WARNING, _subject(r),
        f"The target is on {fs} ({mount.source}): {_primitive(f, r)} is forwarded to a server "
        "or daemon whose storage cannot be seen from here.",
        "Run fsyncbench audit where the data is stored, or keep the journal on local storage.",
        {"fs_type": fs, "source": mount.source},
        "nfs(5); Linux Documentation/filesystems/fuse.rst",
    )


def rule_virtualized(f: Facts, r: Result | None):
    """Inside a VM the guest sees only that flushes reach the virtual disk; the host's
    cache mode decides the rest (FIRECRACKER_DOC, ../shared/cases E5)."""
    virt = f.host.virtualization
    if not virt.virtualized:
        return None
    ratio = _counter_ratio(r)
    reached = "" if ratio is None else f" ({ratio:.2f} device flushes per sync)"
    return UNVERIFIABLE, Finding(
        "virtualized-storage", WARNING, _subject(r),
        f"This is a virtual machine: {_primitive(f, r)} reaches the virtual disk{reached}, but "
        "whether the host persists it cannot be seen from inside.",
        "Check the hypervisor's disk cache mode: QEMU cache=unsafe and Firecracker's "
        "default cache_type Unsafe acknowledge guest flushes without syncing; QEMU's other "
        "modes and Firecracker Writeback pass them to the host. Or run fsyncbench on the host.",
        {
            "hypervisor_flag": virt.hypervisor_flag,
            "dmi_vendor": virt.dmi_vendor,
            "detect_virt": virt.detect_virt,
            "kernel_hint": virt.kernel_hint,
            "flushes_per_sync": None if ratio is None else round(ratio, 3),
            "flush_ms_per_flush": None if r is None else _flush_ms_per_flush(r),
            "p50_ns": None if r is None else r.summary.p50_ns,
        },
        FIRECRACKER_DOC,
    )


def rule_flushes_reach_device(f: Facts, r: Result | None):
    """Bare metal, a write-back disk, at least REACHED_FLUSH_RATIO device flushes per sync
    and a p50 at or above the device-class floor: the sync makes the drive flush and the
    drive takes the time a flush costs (KERNEL_STAT_DOC, DESIGN_BANDS)."""
    ratio = _counter_ratio(r)
    if r is None or ratio is None or ratio < REACHED_FLUSH_RATIO or not _write_back(f.host):
        return None
    if f.host.virtualization.virtualized is not False:
        return None
    cls = device_class(f.host, r.primitive)
    if r.summary.p50_ns < cls.floor_ns:
        return None  # flushes sent, answered too fast: the floor rule speaks
    return HONEST_FLUSH, Finding(
        "flushes-reach-device", INFO, r.name,
        f"Each {r.primitive} sent {ratio:.2f} cache flushes to the disk and took "
        f"{r.summary.p50_ns / 1e3:.1f} us (p50), as a {cls.name} writing to stable media does.",
        "A power-pull test is the only proof beyond this.",
        {"flushes_per_sync": round(ratio, 3), "flush_ms_per_flush": _flush_ms_per_flush(r),
         "p50_ns": r.summary.p50_ns, "device_class": cls.name, "floor_ns": cls.floor_ns},
        KERNEL_STAT_DOC + "; " + cls.source,
    )


def rule_latency_floor(f: Facts, r: Result | None):
    """Latency against the device-class floor (DESIGN_BANDS), the weakest signal: below the
    floor the device acknowledges from cache; above it nothing stronger said otherwise."""
    host = f.host
    if r is None or (not host.target.disks and not host.target.darwin):
        return None
    cls = device_class(host, r.primitive)
    p50 = r.summary.p50_ns
    evidence = {"p50_ns": p50, "device_class": cls.name, "floor_ns": cls.floor_ns,
                "flushes_per_sync": _counter_ratio(r)}
    if p50 < cls.floor_ns:
        return VOLATILE_CACHE, Finding(
            "flush-below-device-floor", RISK, r.name,
            f"{r.primitive} p50 {p50 / 1e3:.1f} us is below the {cls.floor_ns / 1e3:.0f} us "
            f"an honest flush takes on a {cls.name}: the device acknowledges from cache.",
            "Check the drive's write cache and power-loss protection; run `fsyncbench audit`.",
            evidence, cls.source,
        )
    return HONEST_FLUSH, Finding(
        "flush-latency-plausible", INFO, r.name,
        f"{r.primitive} p50 {p50 / 1e3:.1f} us is consistent with a {cls.name} writing "
        "to stable media, and no stronger signal says otherwise.",
        "Latency alone cannot prove durability; a power-pull test can.",
        evidence, cls.source,
    )


#: Path rules, strongest signal first; the first that returns a verdict decides.
PATH_RULES: tuple[PathRule, ...] = (
    rule_no_flush_filesystem,
    rule_flush_counters,
    rule_libc_interposed,
    rule_sweep_bandwidth,
    rule_sync_disabling_preload,
    rule_barriers_disabled,
    rule_macos_plain_fsync,
    rule_cloud_block_storage,
    rule_network_filesystem,
    rule_virtualized,
    rule_flushes_reach_device,
    rule_latency_floor,
)


def judge_primitive(host: Host, r: Result | None, results: Sequence[Result],
                    evidence: Evidence | None = None) -> tuple[str, str, Finding | None]:
    """(path verdict, deciding finding code, its finding) for one flush result, or for the
    path itself (``r`` None) when no primitive was measured."""
    facts = Facts(host, tuple(results), evidence)
    for rule in PATH_RULES:
        hit = rule(facts, r)
        if hit:
            return hit[0], hit[1].code, hit[1]
    return UNVERIFIABLE, "no-evidence", None


def corroborating(f: Facts, r: Result | None, verdict: str, code: str) -> list[Finding]:
    """Findings of the weaker rules that reach the same verdict as the deciding one, so a
    report shows every signal that agrees (e.g. counters decide, libc vs syscall and the
    sweep agree). Rules that reach another verdict stay silent: they did not decide."""
    out = []
    for rule in PATH_RULES:
        hit = rule(f, r)
        if hit and hit[0] == verdict and hit[1].code != code:
            out.append(hit[1])
    return out


# --------------------------------------------------------------------------- commit rules


#: Rollback-journal combinations whose commit point is never synced, so the last commit may
#: roll back after a power loss (a "hot" journal reappears). SQLite's pragma docs: EXTRA
#: "syncs the directory after the rollback journal is unlinked to commit a transaction in
#: DELETE mode"; strace of SQLite 3.40 here shows the commit point of each combination:
#: DELETE ends with an unsynced unlink at NORMAL/FULL, TRUNCATE with an unsynced ftruncate
#: at NORMAL, while PERSIST syncs its zeroed header already at NORMAL.
UNSYNCED_COMMIT_POINT = {
    ("DELETE", "NORMAL"): "the journal unlink that commits is not synced (DELETE needs synchronous=EXTRA)",
    ("DELETE", "FULL"): "the journal unlink that commits is not synced (DELETE needs synchronous=EXTRA)",
    ("TRUNCATE", "NORMAL"): "the journal truncation that commits is not synced (TRUNCATE needs synchronous=FULL)",
}


def config_durability(host: Host, r: Result) -> tuple[bool, Finding | None]:
    """Does the commit's pragma combination promise that each acknowledged commit survives
    a power loss?

    synchronous=OFF: no; journal_mode OFF/MEMORY: no; WAL + NORMAL: no (syncs only at
    checkpoints); DELETE below EXTRA and TRUNCATE below FULL: no (UNSYNCED_COMMIT_POINT);
    macOS without fullfsync: no (plain fsync); Apple's system SQLite maps fullfsync to
    F_BARRIERFSYNC: no. Sources: SQLITE_SYNC_DOC, SQLITE_WAL_DOC, APPLE_FSYNC_DOC,
    APPLE_BARRIER_DOC.
    """
    p = r.effective or r.requested
    assert p is not None
    why, source = None, SQLITE_SYNC_DOC
    advice = "For a journal that must survive power loss use WAL or TRUNCATE with synchronous=FULL, or DELETE with EXTRA"
    if p.synchronous == "OFF":
        why = "synchronous=OFF hands data to the OS without any sync"
    elif p.journal_mode in ("OFF", "MEMORY"):
        why = f"journal_mode={p.journal_mode} keeps no rollback journal on disk"
    elif p.journal_mode == "WAL" and p.synchronous == "NORMAL":
        why = "WAL with synchronous=NORMAL syncs only at checkpoints; the last commits may roll back after power loss"
        source = SQLITE_WAL_DOC
    elif (p.journal_mode, p.synchronous) in UNSYNCED_COMMIT_POINT:
        why = UNSYNCED_COMMIT_POINT[p.journal_mode, p.synchronous] + "; the last commit may roll back after power loss"
        source = SQLITE_SYNC_DOC + " (EXTRA); strace of SQLite 3.40 (fsyncbench audit traces the calls)"
    elif host.os_name == "Darwin" and not p.fullfsync:
        why, source = "on macOS without fullfsync SQLite's fsync stops at the drive's cache", APPLE_FSYNC_DOC
    elif host.os_name == "Darwin" and r.primitive == "F_BARRIERFSYNC":
        why, source = "this SQLite implements fullfsync with F_BARRIERFSYNC (ordering, not durability)", APPLE_BARRIER_DOC
    if why is None:
        return True, None
    return False, Finding(
        "config-not-durable", WARNING, r.name,
        f"{r.name}: {why}.",
        advice + (", with fullfsync=ON" if host.os_name == "Darwin" else "") + ".",
        {"journal_mode": p.journal_mode, "synchronous": p.synchronous, "fullfsync": p.fullfsync},
        source,
    )


def _traces_for(evidence: Evidence | None, p: Pragmas) -> list[SyncTrace]:
    if evidence is None:
        return []
    return [t for t in evidence.sync_traces
            if t.pragmas.journal_mode == p.journal_mode and t.pragmas.synchronous == p.synchronous
            and (t.pragmas.fullfsync or False) == (p.fullfsync or False)]


def syncs_per_commit(host: Host, evidence: Evidence | None, p: Pragmas) -> tuple[float | None, float | None]:
    """(S as run, S SQLite asks for) for pragmas ``p`` from the recorded traces: the trace
    run with the host's LD_PRELOAD shows what reaches the kernel; one run without LD_PRELOAD
    what SQLite itself issues. Either is None when not traced."""
    traces = _traces_for(evidence, p)
    as_run = next((t for t in traces if (t.ld_preload or None) == (host.ld_preload or None)), None)
    clean = next((t for t in traces if not t.ld_preload), None)
    return (None if as_run is None else as_run.syncs_per_commit,
            None if clean is None else clean.syncs_per_commit)


def rule_commit_issues_no_sync(f: Facts, r: Result) -> Finding | None:
    """A commit at synchronous FULL/EXTRA whose traced syscalls include no sync at all does
    not wait for storage: SQLite issues >= 1 sync per such commit (SQLITE_SYNC_DOC). If the
    same commit traced without LD_PRELOAD does sync, the preloaded library swallows them."""
    p = r.effective or r.requested
    if p is None or p.synchronous not in ("FULL", "EXTRA"):
        return None
    as_run, clean = syncs_per_commit(f.host, f.evidence, p)
    if as_run is None or as_run > 0:
        return None
    intercepted = clean is not None and clean > 0
    return Finding(
        "commit-syncs-intercepted" if intercepted else "commit-issues-no-sync", RISK, r.name,
        f"{r.name} commits reach the kernel with 0 sync calls"
        + (f" although SQLite issues {clean:g} per commit without LD_PRELOAD "
           f"({f.host.ld_preload})" if intercepted else "")
        + ": nothing waits for storage.",
        "Remove the sync-disabling library or SQLite build option (SQLITE_NO_SYNC) and "
        "audit again.",
        {"syncs_per_commit": as_run, "syncs_per_commit_without_preload": clean,
         "ld_preload": f.host.ld_preload},
        "strace of the commits (fsyncbench.evidence.trace_syncs); " + SQLITE_SYNC_DOC,
    )


def rule_full_equals_off(f: Facts, r: Result) -> Finding | None:
    """A syncing commit no slower than the same journal_mode at synchronous=OFF waits for
    no device: each real sync adds at least REAL_IO_FLOOR_NS, so S syncs per commit (as
    SQLite issues them, when traced; else 1) add at least S times that."""
    p = r.effective or r.requested
    if p is None or p.synchronous not in ("FULL", "EXTRA") or r.primitive == "none":
        return None
    off = _commit(f.results, p, "OFF")
    if off is None:
        return None
    gap = r.summary.p50_ns - off.summary.p50_ns
    issued = syncs_per_commit(f.host, f.evidence, p)[1]
    floor = REAL_IO_FLOOR_NS * max(1.0, issued or 1.0)
    if gap >= floor:
        return None
    return Finding(
        "sync-costs-nothing", RISK, r.name,
        f"{r.name} commits take {r.summary.p50_ns / 1e3:.1f} us, only {gap / 1e3:.1f} us more "
        f"than {off.name}: its syncs reach no device.",
        "The filesystem or a library drops syncs; benchmark a directory on real storage.",
        {"p50_ns": r.summary.p50_ns, "off_p50_ns": off.summary.p50_ns, "gap_ns": gap,
         "floor_ns": floor, "syncs_per_commit": issued},
        DESIGN_BANDS,
    )


def _flush_cost(f: Facts, primitive: str) -> tuple[float, str] | None:
    """One flush of ``primitive`` on this path (ns) and where the number comes from: the
    least of the write+sync result's p50 and the libc and raw-syscall p50s of the
    comparison, leaving out any below REAL_IO_FLOOR_NS (no device was involved: an
    interposed call). The least, because a busy disk only ever adds time."""
    candidates = []
    flush = next((x for x in _flush_results(f.results) if x.primitive == primitive), None)
    if flush is not None:
        candidates.append((flush.summary.p50_ns, f"write+{primitive} p50"))
    c = _comparison(f, primitive)
    if c is not None:
        candidates.append((c.libc_p50_ns, f"libc {primitive} p50"))
        candidates.append((c.syscall_p50_ns, f"raw syscall {primitive} p50"))
    real = [x for x in candidates if x[0] >= REAL_IO_FLOOR_NS]
    if real:
        return min(real)
    # nothing reached a device: keep the old single-flush comparison (S >= 1) meaningful
    return max(candidates) if candidates and max(candidates)[0] > 0 else None


def rule_commit_faster_than_sync(f: Facts, r: Result) -> Finding | None:
    """A commit issuing S >= 1 syncs cannot take less than COMMIT_VS_FLUSH_MIN_RATIO of S x
    one flush measured in the same directory (../shared/cases E3). S is the traced count
    SQLite asks for when recorded, else 1 (SQLite syncs at least once per FULL commit)."""
    p = r.effective or r.requested
    if p is None or p.synchronous not in ("FULL", "EXTRA") or r.primitive == "none":
        return None
    cost = _flush_cost(f, _base_primitive(r.primitive))
    if cost is None:
        return None
    as_run, clean = syncs_per_commit(f.host, f.evidence, p)
    traced = clean if clean is not None else as_run
    s = traced if traced else 1.0
    expected = s * cost[0]
    ratio = r.summary.p50_ns / expected
    if ratio >= COMMIT_VS_FLUSH_MIN_RATIO:
        return None
    return Finding(
        "commit-not-waiting-for-sync", RISK, r.name,
        f"{r.name} commits take {r.summary.p50_ns / 1e3:.1f} us but "
        f"{s:g} x one {_base_primitive(r.primitive)} here takes {expected / 1e3:.1f} us "
        f"({1 / ratio:.0f}x more): the commit does not wait for its syncs.",
        "Check the database configuration and LD_PRELOAD for a layer that skips syncs.",
        {"commit_p50_ns": r.summary.p50_ns, "flush_p50_ns": cost[0], "flush_source": cost[1],
         "syncs_per_commit": s, "syncs_traced": traced is not None,
         "ratio": round(ratio, 4)},
        "../shared/cases E3; SQLite issues >= 1 sync per commit at synchronous=FULL "
        "(https://www.sqlite.org/atomiccommit.html)",
    )


COMMIT_RULES = (rule_commit_issues_no_sync, rule_full_equals_off, rule_commit_faster_than_sync)


def slowness(r: Result) -> list[Finding]:
    """Slow-median and tail findings (separate from the path verdict)."""
    out = []
    s = r.summary
    if s.p50_ns > SLOW_MEDIAN_NS:
        out.append(Finding(
            "slow-median", WARNING, r.name,
            f"{r.name} p50 is {s.p50_ns / 1e6:.1f} ms: every durable step waits that long.",
            "Batch several steps per commit, or use faster storage.",
            {"p50_ns": s.p50_ns, "threshold_ns": SLOW_MEDIAN_NS}, "../shared/DESIGN.md",
        ))
    if s.p99_ns > GATE_P99_NS and r.primitive != "none":
        out.append(Finding(
            "p99-above-10ms", INFO, r.name,
            f"{r.name} p99 is {s.p99_ns / 1e6:.1f} ms, above etcd's 10 ms gate.",
            "If you gate on tail latency, compare this against your SLO.",
            {"p99_ns": s.p99_ns, "threshold_ns": GATE_P99_NS}, ETCD_GATE_DOC,
        ))
    return out


# --------------------------------------------------------------------------- evidence findings
# Informational findings that show the evidence even where it decided nothing.


def evidence_findings(f: Facts) -> list[Finding]:
    """Findings that report the recorded evidence: counters, syncs per commit, libc vs
    syscall, the sweep fit, the second-descriptor check, missing counters."""
    out: list[Finding] = []
    out += _counter_findings(f)
    ev = f.evidence
    if ev is None:
        return out
    if ev.sync_traces:
        per = {}
        for t in ev.sync_traces:
            key = t.pragmas.label + (f" (LD_PRELOAD={t.ld_preload})" if t.ld_preload else "")
            per[key] = round(t.syncs_per_commit, 2)
        out.append(Finding(
            "syncs-per-commit", INFO, "path",
            "Sync calls per commit, traced with strace: "
            + ", ".join(f"{k} {v:g}" for k, v in per.items()) + ".",
            "Each sync costs one device flush on an honest path; fewer syncs per commit "
            "(WAL) cost less.",
            {"syncs_per_commit": per}, "strace(1) of SQLite commits in a child process",
        ))
    for c in ev.syscall_comparisons:
        gap = c.syscall_p50_ns / max(c.libc_p50_ns, 1.0)
        out.append(Finding(
            "libc-vs-syscall", INFO, c.primitive,
            f"libc {c.primitive} p50 {_us(c.libc_p50_ns)}, raw syscall {c.syscall_number} p50 "
            f"{_us(c.syscall_p50_ns)} (raw/libc {gap:.2f})"
            + ("" if c.libc_flushes is None or c.syscall_flushes is None else
               f"; device flushes {c.libc_flushes} vs {c.syscall_flushes}")
            + f" for {c.syncs} calls each.",
            "A raw/libc ratio far above 1 means the libc call is interposed.",
            {"primitive": c.primitive, "libc_p50_ns": c.libc_p50_ns,
             "syscall_p50_ns": c.syscall_p50_ns, "raw_over_libc": round(gap, 2),
             "libc_flushes": c.libc_flushes, "syscall_flushes": c.syscall_flushes,
             "syncs_per_side": c.syncs, "syscall_number": c.syscall_number,
             "machine": c.machine},
            EATMYDATA_DOC,
        ))
    if ev.dirty_sweep is not None:
        s = ev.dirty_sweep
        bw = "unbounded (no growth with size)" if s.bandwidth_bytes_per_s is None else \
            f"{s.bandwidth_bytes_per_s / 1e6:,.0f} MB/s"
        out.append(Finding(
            "sync-size-fit", INFO, s.primitive,
            f"{s.primitive} latency = {_us(s.flush_cost_ns)} flush cost + bytes at "
            f"{bw}" + (f" (R^2 {s.r_squared:.3f})" if s.r_squared is not None else "") + ".",
            "The flush cost is what every commit pays; the bandwidth, what its size adds.",
            {"flush_cost_ns": s.flush_cost_ns, "bandwidth_bytes_per_s": s.bandwidth_bytes_per_s,
             "r_squared": s.r_squared, "points": len(s.points)},
            "least-squares fit of the dirty-size sweep (numpy)",
        ))
    if ev.second_fd is not None:
        out.append(_second_fd_finding(ev.second_fd))
    return out


def _second_fd_finding(c) -> Finding:
    same_ratio = _ratio(c.same_fd_flushes, c.syncs)
    second_ratio = _ratio(c.second_fd_flushes, c.syncs)
    evidence = {"primitive": c.primitive, "same_fd_p50_ns": c.same_fd_p50_ns,
                "second_fd_p50_ns": c.second_fd_p50_ns, "same_fd_flushes": c.same_fd_flushes,
                "second_fd_flushes": c.second_fd_flushes, "syncs_per_side": c.syncs}
    counted = same_ratio is not None and second_ratio is not None
    ignored_by_counter = (counted and same_ratio >= REACHED_FLUSH_RATIO
                          and second_ratio < DROPPED_FLUSH_RATIO)
    # without counters: the second descriptor's sync did no real I/O while the first did
    ignored_by_time = (not counted and c.second_fd_p50_ns < REAL_IO_FLOOR_NS <= c.same_fd_p50_ns
                       and c.second_fd_p50_ns < SECOND_FD_MIN_RATIO * c.same_fd_p50_ns)
    if ignored_by_counter or ignored_by_time:
        return Finding(
            "second-fd-sync-ignored", RISK, "path",
            f"{c.primitive} on a second descriptor of the written file took "
            f"{c.second_fd_p50_ns / 1e3:.1f} us against {c.same_fd_p50_ns / 1e3:.1f} us on "
            "the writing one: a sync flushes only what its own descriptor wrote.",
            "Sync on the descriptor that wrote (SQLite does), or fix the filesystem layer.",
            evidence, PG_TEST_FSYNC_DOC,
        )
    return Finding(
        "second-fd-sync-honoured", INFO, "path",
        f"{c.primitive} on a second descriptor costs {c.second_fd_p50_ns / 1e3:.1f} us against "
        f"{c.same_fd_p50_ns / 1e3:.1f} us on the writing one: it syncs the file, not the "
        "descriptor.",
        "Nothing to do.", evidence, PG_TEST_FSYNC_DOC,
    )


def _counter_findings(f: Facts) -> list[Finding]:
    host = f.host
    why = (f.evidence.unavailable.get("flush_counters") if f.evidence else None)
    if why is None and host.os_name == "Linux" and host.target.disks \
            and not any(d.has_flush_counters for d in host.target.disks):
        why = ("no flush fields in /sys/block/"
               f"{','.join(d.name for d in host.target.disks)}/stat (kernel < 5.5?)")
    if why is not None:
        return [Finding(
            "flush-counters-unavailable", INFO, "path",
            f"Device flush counter not available: {why}.",
            "Without counters the verdict rests on weaker signals; Linux >= 5.5 has them.",
            {"reason": why}, KERNEL_STAT_DOC,
        )]
    rows = {}
    for r in f.results:
        least = _least_flushes(r)
        if least is None or not r.device_flushes:
            continue
        rows[r.name] = {
            "device_flushes": least,
            "syncs_issued": r.syncs_issued,
            "flushes_per_sync": None if not r.syncs_issued else round(least / r.syncs_issued, 3),
            "flushes_per_op": round(least / max(r.summary.count, 1), 3),
            "flush_ms_per_flush": _flush_ms_per_flush(r),
        }
    if not rows:
        return []
    text = "; ".join(
        f"{name} {v['device_flushes']} flushes"
        + (f" for {v['syncs_issued']} syncs" if v["syncs_issued"] else f" ({v['flushes_per_op']}/op)")
        for name, v in rows.items())
    return [Finding(
        "device-flush-counters", INFO, "path",
        f"Device flushes counted around each workload: {text}.",
        "On an honest path every sync sends at least one flush to a write-back disk.",
        {"per_result": rows, "disks": [d.name for d in host.target.disks]}, KERNEL_STAT_DOC,
    )]


# --------------------------------------------------------------------------- verdict


def _overall_primitive(flushes: Sequence[Result]) -> Result | None:
    """The primitive a durable journal would rely on (MAIN_PRIMITIVES order)."""
    for name in MAIN_PRIMITIVES:
        for r in flushes:
            if r.primitive == name:
                return r
    return None


def judge(host: Host, results: Sequence[Result], evidence: Evidence | None = None) -> Verdict:
    """The verdict of a report: pure function of ``host``, ``results`` (summaries, syncs
    issued, device flush deltas; raw samples are not needed) and ``evidence``."""
    facts = Facts(host, tuple(results), evidence)
    findings: list[Finding] = []
    verdicts: list[ResultVerdict] = []
    by_primitive: dict[str, tuple[str, str]] = {}
    flushes = _flush_results(results)
    main = _overall_primitive(flushes)
    # The primitive the journal relies on first: its deciding finding leads the list.
    for r in sorted(flushes, key=lambda x: x is not main):
        verdict, code, finding = judge_primitive(host, r, results, evidence)
        by_primitive.setdefault(r.primitive, (verdict, code))
        verdicts.append(ResultVerdict(r.name, verdict, None, code))
        if finding:
            findings.append(finding)
        if r is main:
            findings.extend(corroborating(facts, r, verdict, code))
        findings.extend(slowness(r))

    if main is None:  # no raw primitive measured: a syncing commit (S >= 1 syncs) stands in
        main = next((r for r in results if r.kind == "commit" and r.primitive != "none"), None)
        verdict, code, finding = judge_primitive(host, main, results, evidence)
        if main is not None:
            by_primitive[main.primitive] = (verdict, code)
        if finding:
            findings.append(finding)
            findings.extend(corroborating(facts, main, verdict, code))
        path_verdict, path_code = verdict, code
    else:
        path_verdict, path_code = by_primitive[main.primitive]

    for r in results:
        if r.kind != "commit":
            continue
        durable, finding = config_durability(host, r)
        if finding:
            findings.append(finding)
        verdict, code = by_primitive.get(r.primitive) or by_primitive.get(
            _base_primitive(r.primitive), (path_verdict, path_code))
        for rule in COMMIT_RULES:
            hit = rule(facts, r)
            if hit:
                findings.append(hit)
                verdict, code = NO_FLUSH, hit.code
                break
        findings.extend(slowness(r))
        verdicts.append(ResultVerdict(r.name, verdict, durable, code))
    findings.extend(evidence_findings(facts))
    order = {r.name: i for i, r in enumerate(results)}
    verdicts.sort(key=lambda v: order.get(v.subject, len(order)))
    return Verdict(path_verdict, path_code, tuple(verdicts), tuple(findings))


def rejudge(report: Report) -> Report:
    """``report`` with its verdict derived again from its recorded facts alone (host,
    results, evidence): ``fsyncbench audit --from``. When the recorded verdict differs (a
    report by an older engine, or edited by hand) a note says so."""
    verdict = judge(report.host, report.results, report.evidence)
    notes = tuple(report.notes)
    old = report.verdict
    if (old.path_verdict, old.decided_by) != (verdict.path_verdict, verdict.decided_by):
        notes += (f"the report recorded {old.path_verdict} (decided by {old.decided_by}); "
                  f"re-derived from its facts: {verdict.path_verdict} (decided by "
                  f"{verdict.decided_by})",)
    return dataclasses.replace(report, verdict=verdict, notes=notes)
