"""What every rule reads: :class:`Facts` (the recorded host, results and evidence) and the
helpers over them, with the documents the findings cite (``*_DOC``) and the thresholds the
rules compare against, each with its source or the reason for its value."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fsyncbench.host.layers import RAM_FILESYSTEMS, SYNC_DISABLING_LIBS
from fsyncbench.judge import devices, stack
from fsyncbench.model import (
    BlockDevice,
    Evidence,
    FlushDelta,
    Host,
    Pragmas,
    Result,
    SyscallComparison,
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
LATENCY_BANDS_DOC = devices.LATENCY_BANDS_DOC
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
    "Firecracker docs, block device caching: with the default cache_type Unsafe 'the device "
    "will not advertise the VirtIO flush feature'; with Writeback a flush 'will perform an "
    "fsync syscall on the backing block file' "
    "(https://github.com/firecracker-microvm/firecracker/blob/main/docs/api_requests/"
    "block-caching.md)"
)
VIRTUALBOX_DOC = (
    "VirtualBox manual, 'Responding to Guest IDE/SATA Flush Requests': 'Normally these "
    "requests are ignored for improved performance' (https://www.virtualbox.org/manual/"
    "ch12.html); src/VBox/Devices/Storage/DrvVD.cpp: IgnoreFlush defaults to true"
)
RAM_STACK_DOC = (
    "drivers/block/loop.c lo_req_flush: a flush becomes vfs_fsync() of the backing file; "
    "Documentation/filesystems/tmpfs.rst; Documentation/admin-guide/blockdev/zram.rst"
)
BLOCK_FLUSH_DOC = (
    "block/blk-core.c submit_bio_noacct: a flush sent to a device without a write-back cache "
    "is completed at once, never passed down"
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
#: SQLite's full_fsync() on macOS: "If the FULLFSYNC failed, fall back to attempting an
#: fsync(). [...] failure indicates that FULLFSYNC isn't supported for this file system".
SQLITE_FULLFSYNC_FALLBACK_DOC = "https://www.sqlite.org/src/file/src/os_unix.c (full_fsync)"

#: Filesystems with no block device behind them (fsyncbench.host.layers.RAM_FILESYSTEMS).
NO_FLUSH_FILESYSTEMS = RAM_FILESYSTEMS


#: Least time (ns) one sync that reaches any real block device adds (LATENCY_BANDS_DOC: "anything
#: with real block I/O ~ 10 us"). Two commits differing only in their syncs must differ by
#: at least this much if those syncs reach a device.
REAL_IO_FLOOR_NS = devices.REAL_IO_FLOOR_NS

#: A commit issuing S >= 1 syncs cannot take less than this share of S x one flush measured
#: on the same directory. A project choice with room for noise: the failure it catches is far
#: below it (a journal measured at 0.4 ms per commit on a disk whose flush took 14.5 ms;
#: docs/verdicts.md, "Commit checks").
COMMIT_VS_FLUSH_MIN_RATIO = 0.5

#: Fewer syncs than this make the counter ratio too noisy to use. No external source: a
#: project choice. The ratio must tell DROPPED_FLUSH_RATIO (0.1) from REACHED_FLUSH_RATIO
#: (0.5): with 50 syncs that is under 5 flushes against at least 25, while the filesystem's
#: own periodic journal commits (ext4's default commit interval is 5 s:
#: https://docs.kernel.org/admin-guide/ext4.html, "commit=nrsec") add only a few.
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

#: The sweep must have written at least this much for its bandwidth to mean anything. No
#: external source: a project choice. Below 1 MiB a sync's fixed cost (tens of us on any
#: real device, LATENCY_BANDS_DOC) outweighs the transfer, so a fitted bandwidth is noise.
SWEEP_MIN_BYTES = 1 << 20

#: A second-descriptor sync faster than this share of a same-descriptor sync skipped work.
#: No external source: a project choice. fsync(2) flushes the file's data whatever
#: descriptor it is called on ("all modified in-core data of ... the file referred to by
#: the file descriptor"), so on an honest path both cost the same; 0.2 leaves 5x for noise.
SECOND_FD_MIN_RATIO = 0.2

#: Slowness findings (docs/verdicts.md, "Commit checks": a median above 50 ms is slow, a
#: project choice; etcd's 10 ms p99 gate).
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


# --------------------------------------------------------------------------- fact helpers


def _models(host: Host) -> str:
    return " ".join(f"{d.vendor or ''} {d.model or ''}" for d in _media_disks(host)).lower()


def _media_disks(host: Host) -> list[BlockDevice]:
    """Block devices holding the bytes (from the recorded stack, else the recorded disks)."""
    return [layer.device for layer in stack.media(host.target) if layer.device is not None]


def _flush_results(results: Sequence[Result]) -> list[Result]:
    return [r for r in results if r.kind == "flush"]


def _commit(results: Sequence[Result], like: Pragmas, sync: str) -> Result | None:
    """The commit result with ``like``'s journal_mode and fullfsync at ``sync``."""
    for r in results:
        p = r.effective or r.requested
        if (
            r.kind == "commit"
            and p
            and p.journal_mode == like.journal_mode
            and p.fullfsync == like.fullfsync
            and p.synchronous == sync
        ):
            return r
    return None


def _media_deltas(result: Result, host: Host | None = None) -> list[FlushDelta]:
    """The counter deltas of the devices that hold the bytes: deltas of block devices the
    stack knows to hold nothing (a loop device, dm, md, a partition) are left out, since
    counts there prove nothing about the media; any other recorded delta counts."""
    deltas = list(result.device_flushes)
    if host is None:
        return deltas
    skip = stack.non_media_devices(host.target)
    return [d for d in deltas if d.device not in skip]


def _least(deltas: Sequence[FlushDelta], attr: str = "flushes") -> int | None:
    """The least count of ``attr`` over ``deltas`` (with md/dm each sync flushes every leaf);
    None when any lacks it or there are none."""
    counts: list[int | None] = [getattr(d, attr) for d in deltas]
    known = [c for c in counts if c is not None]
    if not counts or len(known) < len(counts):
        return None
    return min(known)


def _least_flushes(result: Result, host: Host | None = None) -> int | None:
    """Flushes on the least-flushed disk holding the bytes (see :func:`_media_deltas`)."""
    return _least(_media_deltas(result, host))


def _counter_ratio(result: Result | None, host: Host | None = None) -> float | None:
    """Device flushes per sync issued on the media; None if not measurable."""
    if result is None or not result.syncs_issued or result.syncs_issued < COUNTER_MIN_SYNCS:
        return None
    least = _least_flushes(result, host)
    return None if least is None else least / result.syncs_issued


def _background_flushes(f: Facts, result: Result) -> float | None:
    """Flushes other I/O is expected to have added to ``result``'s media counts: the rate
    the no-sync ``write`` baseline saw on the same disks (flushes per ns of its counter
    window: it sends none itself) times ``result``'s window. The counters are device-wide
    (Documentation/block/stat.rst), so another process's fsyncs land in them too. None
    without a baseline with counters."""
    base = next((x for x in f.results if x.kind == "write"), None)
    if base is None or not base.elapsed_ns or not result.elapsed_ns:
        return None
    least = _least(_media_deltas(base, f.host))
    if least is None:
        return None
    return least / base.elapsed_ns * result.elapsed_ns


def _reached_ratio(f: Facts, result: Result | None) -> float | None:
    """Media flushes per sync with the background of other I/O taken out; None when the
    counter cannot say (not measured, or the background alone could explain half of the
    flushes per sync: then no count of "reached" is trusted)."""
    ratio = _counter_ratio(result, f.host)
    if ratio is None or result is None or not result.syncs_issued:
        return None
    return _net_of_background(ratio, _background_flushes(f, result), result.syncs_issued)


def flushes_per_sync_words(f: Facts, result: Result) -> str:
    """The one "flushes per sync" figure of ``result`` as every finding states it: the ratio
    counted on the media (the report's counter table shows the same), and, where other I/O
    on the disk is estimated to account for some of it, that correction named, e.g.
    "1.03 device flushes per sync counted (0.99 net of other I/O's 0.04, estimated from the
    no-sync baseline's rate)". "" without a counted ratio."""
    counted = _counter_ratio(result, f.host)
    if counted is None:
        return ""
    text = f"{counted:.2f} device flushes per sync counted"
    background = _background_flushes(f, result)
    if background and result.syncs_issued:
        per_sync = background / result.syncs_issued
        net = _net_of_background(counted, background, result.syncs_issued)
        if net is None:
            text += (
                f" (other I/O's flushes, estimated at {per_sync:.2f} per sync from the no-sync "
                "baseline's rate, could explain most of them)"
            )
        elif per_sync >= 0.005:
            text += (
                f" ({net:.2f} net of other I/O's {per_sync:.2f}, estimated from the no-sync "
                "baseline's rate)"
            )
    return text


def _net_of_background(ratio: float, background: float | None, syncs: int) -> float | None:
    """Device flushes per sync (``ratio``) less ``background`` flushes of other I/O spread
    over ``syncs`` (never below 0); ``ratio`` itself without a background estimate or syncs;
    None when the background alone could explain REACHED_FLUSH_RATIO flushes per sync: an
    estimate that large (a busy disk, a rate from another window) cannot tell the syncs'
    own flushes from a busy neighbour's, so the counter says nothing about them."""
    if background is None or not syncs:
        return ratio
    if background >= REACHED_FLUSH_RATIO * syncs:
        return None
    return max(0.0, ratio - background / syncs)


def _per_sync(result: Result, device: str | None, attr: str) -> float | None:
    """``attr`` (flushes or writes) per sync issued on block device ``device``."""
    if device is None or not result.syncs_issued or result.syncs_issued < COUNTER_MIN_SYNCS:
        return None
    delta = next((d for d in result.device_flushes if d.device == device), None)
    value = None if delta is None else getattr(delta, attr)
    return None if value is None else value / result.syncs_issued


def _flush_ms_per_flush(result: Result, host: Host | None = None) -> float | None:
    """Kernel-accounted ms per flush (stat field 17 / field 16) on the first medium."""
    for d in _media_deltas(result, host):
        if d.flushes and d.flush_time_ms is not None:
            return round(d.flush_time_ms / d.flushes, 4)
    return None


def _write_back(host: Host) -> bool | None:
    return stack.write_back_media(host.target)


def _us(ns: float) -> str:
    """A duration in us below 10 ms, else in ms."""
    return f"{ns / 1e3:.1f} us" if abs(ns) < 10_000_000 else f"{ns / 1e6:.1f} ms"


def _base_primitive(name: str) -> str:
    return name.split(" ")[0]


def _comparison(f: Facts, primitive: str) -> SyscallComparison | None:
    if f.evidence is None:
        return None
    return next((c for c in f.evidence.syscall_comparisons if c.primitive == primitive), None)


def _ratio(flushes: int | None, syncs: int) -> float | None:
    if flushes is None or syncs < COUNTER_MIN_SYNCS:
        return None
    return flushes / syncs


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


def _power_protected_media(host: Host) -> str:
    """Why the write cache of every disk holding the bytes survives a power loss ("" when
    not known to): a drive family documented with power-loss protection, the user's
    declaration, the disks' own report (Windows), or a RAID controller's cache in front of
    them read or declared protected (fsyncbench.judge.devices)."""
    disks = _media_disks(host)
    if not disks:
        return ""
    if devices.DECLARED_PLP in devices.declared_facts(host):
        return devices.DECLARED_PLP_REASON
    reported = devices.reported_protection(disks)
    if reported:
        return reported
    in_front = devices.controller_protection(disks) or devices.declared_cache_protection(host)
    if in_front:
        return in_front
    sources = [devices.plp_source(d.vendor, d.model) for d in disks]
    return str(sources[0]) if all(sources) else ""


def _all_ram(host: Host) -> bool:
    """True when every medium holding the bytes is RAM (device classes do not apply)."""
    media = stack.media(host.target)
    return bool(media) and all(layer.volatile is True for layer in media)


def _a(noun: str) -> str:
    """``noun`` with its indefinite article (``an SSD``, ``a spinning disk``)."""
    return ("an " if noun[:1].lower() in "aeio" or noun.startswith("SSD") else "a ") + noun


def _chain(f: Facts) -> str:
    return stack.chain_text(f.host.target)
