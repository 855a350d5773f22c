"""The verdict engine: small rules over recorded facts -> findings and verdicts.

Everything here is a pure function of a :class:`~fsyncbench.model.Host` and the results'
summaries and counters, so a saved (or hand-written) report is judged exactly like a live
run. Signals are weighed strongest first (../shared/DESIGN.md, "Signals"): what the
filesystem is, what the device flush counters saw, platform facts, virtualization, and
only then latency against device-class floors. Each finding names the rule that decided.
"""

from __future__ import annotations

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
    Finding,
    Host,
    Pragmas,
    Result,
    ResultVerdict,
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

#: Filesystems with no block device behind them: a sync never reaches stable media.
#: tmpfs/ramfs: Documentation/filesystems/tmpfs.rst ("everything is in virtual memory").
NO_FLUSH_FILESYSTEMS = frozenset({"tmpfs", "ramfs", "devtmpfs"})

#: Shared libraries that turn sync calls into no-ops (eatmydata(1): "transparently
#: disable fsync and other data-to-disk synchronization calls").
SYNC_DISABLING_LIBS = ("libeatmydata", "eatmydata")

#: Least time (ns) one sync that reaches any real block device adds (DESIGN_BANDS: "anything
#: with real block I/O ~ 10 us"). Two commits differing only in their syncs must differ by
#: at least this much if those syncs reach a device.
REAL_IO_FLOOR_NS = 10_000

#: A commit issuing S >= 1 syncs cannot take less than this share of one flush measured on
#: the same directory (E3 in ../shared/cases: 0.4 ms commits on a 14.5 ms flush disk).
COMMIT_VS_FLUSH_MIN_RATIO = 0.5

#: Fewer syncs than this make the counter ratio too noisy to use.
COUNTER_MIN_SYNCS = 50

#: Slowness findings (DESIGN.md: median > 50 ms is slow; etcd's 10 ms p99 gate).
SLOW_MEDIAN_NS = 50_000_000
GATE_P99_NS = 10_000_000


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
    models = " ".join((d.model or "") + " " + (d.vendor or "") for d in disks).lower()
    if any(s in models for s in ("elastic block store", "persistentdisk", "nvme_card-pd")):
        return DeviceClass("network block storage", 100_000, DESIGN_BANDS)
    if disks and all(d.rotational for d in disks) and not host.virtualization.virtualized:
        return DeviceClass("spinning disk", 2_000_000, DESIGN_BANDS)
    if disks and all(d.rotational is False for d in disks):
        return DeviceClass("SSD", 15_000, DESIGN_BANDS)
    return DeviceClass("block device", REAL_IO_FLOOR_NS, DESIGN_BANDS)


# --------------------------------------------------------------------------- facts


def _flush_results(results: Sequence[Result]) -> list[Result]:
    return [r for r in results if r.kind == "flush"]


def _baseline(results: Sequence[Result]) -> Result | None:
    return next((r for r in results if r.kind == "write"), None)


def _commit(results: Sequence[Result], like: Pragmas, sync: str) -> Result | None:
    """The commit result with ``like``'s journal_mode and fullfsync at ``sync``."""
    for r in results:
        p = r.effective or r.requested
        if (r.kind == "commit" and p and p.journal_mode == like.journal_mode
                and p.fullfsync == like.fullfsync and p.synchronous == sync):
            return r
    return None


def _counter_ratio(result: Result) -> float | None:
    """Device flushes per sync issued, summed over leaf disks; None if not measurable."""
    if not result.syncs_issued or result.syncs_issued < COUNTER_MIN_SYNCS:
        return None
    counts = [d.flushes for d in result.device_flushes]
    if not counts or any(c is None for c in counts):
        return None
    # With several leaves (md/dm) each sync flushes every leaf: use the least-flushed one.
    return min(counts) / result.syncs_issued


def _write_back(host: Host) -> bool | None:
    caches = [d.write_cache for d in host.target.disks if d.write_cache]
    if not caches:
        return None
    return any("back" in c for c in caches)


# --------------------------------------------------------------------------- path rules
# Each path rule looks at one flush primitive and returns (verdict, finding) or None.

PathRule = Callable[[Host, Result, Sequence[Result]], "tuple[str, Finding] | None"]


def rule_no_flush_filesystem(host: Host, r: Result, _all: Sequence[Result]):
    mount = host.target.mount
    if mount and mount.fs_type in NO_FLUSH_FILESYSTEMS:
        return NO_FLUSH, Finding(
            "no-flush-filesystem", RISK, r.name,
            f"The target is on {mount.fs_type}, which keeps data in RAM: {r.primitive} "
            "never reaches a block device.",
            "Benchmark the directory your journal will really live on.",
            {"fs_type": mount.fs_type, "mount_point": mount.mount_point},
            "Linux Documentation/filesystems/tmpfs.rst",
        )
    return None


def rule_sync_disabling_preload(host: Host, r: Result, _all: Sequence[Result]):
    preload = host.ld_preload or ""
    if any(lib in preload for lib in SYNC_DISABLING_LIBS):
        return NO_FLUSH, Finding(
            "sync-disabled-by-preload", RISK, r.name,
            f"LD_PRELOAD loads {preload!r}, which turns {r.primitive} into a no-op.",
            "Run without eatmydata (unset LD_PRELOAD) to measure real flushes.",
            {"ld_preload": preload},
            "eatmydata(1): 'transparently disable fsync and other data-to-disk calls'",
        )
    return None


def rule_flush_counters(host: Host, r: Result, _all: Sequence[Result]):
    ratio = _counter_ratio(r)
    if ratio is None or host.target.mount is None:
        return None
    evidence = {
        "syncs_issued": r.syncs_issued,
        "device_flushes": {d.device: d.flushes for d in r.device_flushes},
        "flushes_per_sync": round(ratio, 3),
        "write_cache": [d.write_cache for d in host.target.disks],
    }
    if ratio < 0.1 and _write_back(host):
        return NO_FLUSH, Finding(
            "flushes-dropped", RISK, r.name,
            f"{r.syncs_issued} {r.primitive} calls reached the disk as "
            f"{min(d.flushes or 0 for d in r.device_flushes)} cache flushes although its "
            "write-back cache needs them: something above the device drops them.",
            "Look for eatmydata, nobarrier/barrier=0 mounts or a no-op sync layer.",
            evidence, KERNEL_STAT_DOC,
        )
    return None  # flushes reach the device; later rules decide what the device does with them


def rule_macos_plain_fsync(host: Host, r: Result, results: Sequence[Result]):
    if host.os_name != "Darwin" or r.primitive not in ("fsync", "F_BARRIERFSYNC"):
        return None
    full = next((f for f in _flush_results(results) if f.primitive == "F_FULLFSYNC"), None)
    return VOLATILE_CACHE, Finding(
        "macos-fsync-stops-at-cache", RISK, r.name,
        f"On macOS {r.primitive} returns once data reaches the drive's volatile cache.",
        "Use F_FULLFSYNC (SQLite: PRAGMA fullfsync=ON with a SQLite that maps it to "
        "F_FULLFSYNC) for power-loss durability.",
        {"primitive": r.primitive, "p50_ns": r.summary.p50_ns,
         "fullfsync_ratio": None if full is None else round(full.summary.p50_ns / r.summary.p50_ns)},
        APPLE_FSYNC_DOC if r.primitive == "fsync" else APPLE_BARRIER_DOC,
    )


def rule_virtualized(host: Host, r: Result, _all: Sequence[Result]):
    virt = host.virtualization
    if not virt.virtualized:
        return None
    ratio = _counter_ratio(r)
    reached = "" if ratio is None else f" ({ratio:.2f} device flushes per sync)"
    return UNVERIFIABLE, Finding(
        "virtualized-storage", WARNING, r.name,
        f"This is a virtual machine: {r.primitive} reaches the virtual disk{reached}, but "
        "whether the host persists it cannot be seen from inside.",
        "Check the hypervisor's disk cache mode (e.g. QEMU cache=none/directsync, "
        "Firecracker cache_type=Writeback) or run fsyncbench on the host.",
        {
            "hypervisor_flag": virt.hypervisor_flag,
            "dmi_vendor": virt.dmi_vendor,
            "detect_virt": virt.detect_virt,
            "flushes_per_sync": None if ratio is None else round(ratio, 3),
            "p50_ns": r.summary.p50_ns,
        },
        "Firecracker docs, block device caching "
        "(https://github.com/firecracker-microvm/firecracker/blob/main/docs/api_requests/"
        "block-caching.md)",
    )


def rule_latency_floor(host: Host, r: Result, _all: Sequence[Result]):
    if not host.target.disks and not host.target.darwin:
        return None
    cls = device_class(host, r.primitive)
    p50 = r.summary.p50_ns
    evidence = {"p50_ns": p50, "device_class": cls.name, "floor_ns": cls.floor_ns}
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
    rule_sync_disabling_preload,
    rule_flush_counters,
    rule_macos_plain_fsync,
    rule_virtualized,
    rule_latency_floor,
)


def judge_primitive(host: Host, r: Result, results: Sequence[Result]) -> tuple[str, str, Finding | None]:
    """(path verdict, deciding rule code, its finding) for one flush result."""
    for rule in PATH_RULES:
        hit = rule(host, r, results)
        if hit:
            return hit[0], hit[1].code, hit[1]
    return UNVERIFIABLE, "no-evidence", None


# --------------------------------------------------------------------------- commit rules


def config_durability(host: Host, r: Result) -> tuple[bool, Finding | None]:
    """Does the commit's pragma combination promise power-loss durability of each commit?

    synchronous=OFF: no; WAL + NORMAL: no (commits may roll back after power loss);
    journal_mode OFF/MEMORY: no; macOS without fullfsync: no (plain fsync); Apple's
    system SQLite maps fullfsync to F_BARRIERFSYNC: no. Sources: SQLITE_SYNC_DOC,
    SQLITE_WAL_DOC, APPLE_FSYNC_DOC, APPLE_BARRIER_DOC.
    """
    p = r.effective or r.requested
    assert p is not None
    why, source = None, SQLITE_SYNC_DOC
    if p.synchronous == "OFF":
        why = "synchronous=OFF hands data to the OS without any sync"
    elif p.journal_mode in ("OFF", "MEMORY"):
        why = f"journal_mode={p.journal_mode} keeps no rollback journal on disk"
    elif p.journal_mode == "WAL" and p.synchronous == "NORMAL":
        why = "WAL with synchronous=NORMAL syncs only at checkpoints; the last commits may roll back after power loss"
        source = SQLITE_WAL_DOC
    elif host.os_name == "Darwin" and not p.fullfsync:
        why, source = "on macOS without fullfsync SQLite's fsync stops at the drive's cache", APPLE_FSYNC_DOC
    elif host.os_name == "Darwin" and r.primitive == "F_BARRIERFSYNC":
        why, source = "this SQLite implements fullfsync with F_BARRIERFSYNC (ordering, not durability)", APPLE_BARRIER_DOC
    if why is None:
        return True, None
    return False, Finding(
        "config-not-durable", WARNING, r.name,
        f"{r.name}: {why}.",
        "For a journal that must survive power loss use synchronous=FULL (or EXTRA)"
        + (" with fullfsync=ON" if host.os_name == "Darwin" else "") + ".",
        {"journal_mode": p.journal_mode, "synchronous": p.synchronous, "fullfsync": p.fullfsync},
        source,
    )


def rule_full_equals_off(host: Host, r: Result, results: Sequence[Result]) -> Finding | None:
    """A syncing commit no slower than the same journal_mode at synchronous=OFF waits for
    no device: each real sync adds at least REAL_IO_FLOOR_NS."""
    p = r.effective or r.requested
    if p is None or p.synchronous not in ("FULL", "EXTRA") or r.primitive == "none":
        return None
    off = _commit(results, p, "OFF")
    if off is None:
        return None
    gap = r.summary.p50_ns - off.summary.p50_ns
    if gap >= REAL_IO_FLOOR_NS:
        return None
    return Finding(
        "sync-costs-nothing", RISK, r.name,
        f"{r.name} commits take {r.summary.p50_ns / 1e3:.1f} us, only {gap / 1e3:.1f} us more "
        f"than {off.name}: its syncs reach no device.",
        "The filesystem or a library drops syncs; benchmark a directory on real storage.",
        {"p50_ns": r.summary.p50_ns, "off_p50_ns": off.summary.p50_ns, "gap_ns": gap,
         "floor_ns": REAL_IO_FLOOR_NS},
        DESIGN_BANDS,
    )


def rule_commit_faster_than_sync(host: Host, r: Result, results: Sequence[Result]) -> Finding | None:
    """A commit issuing S >= 1 syncs cannot beat one flush of the same primitive measured
    in the same directory (../shared/cases E3)."""
    p = r.effective or r.requested
    if p is None or p.synchronous not in ("FULL", "EXTRA") or r.primitive == "none":
        return None
    flush = next((f for f in _flush_results(results) if f.primitive == r.primitive), None)
    if flush is None or flush.summary.p50_ns <= 0:
        return None
    ratio = r.summary.p50_ns / flush.summary.p50_ns
    if ratio >= COMMIT_VS_FLUSH_MIN_RATIO:
        return None
    return Finding(
        "commit-not-waiting-for-sync", RISK, r.name,
        f"{r.name} commits take {r.summary.p50_ns / 1e3:.1f} us but one {r.primitive} here "
        f"takes {flush.summary.p50_ns / 1e3:.1f} us ({1 / ratio:.0f}x more): the commit does "
        "not wait for its syncs.",
        "Check the database configuration and LD_PRELOAD for a layer that skips syncs.",
        {"commit_p50_ns": r.summary.p50_ns, "flush_p50_ns": flush.summary.p50_ns,
         "ratio": round(ratio, 4)},
        "../shared/cases E3; SQLite issues >= 1 sync per commit at synchronous=FULL "
        "(https://www.sqlite.org/atomiccommit.html)",
    )


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


# --------------------------------------------------------------------------- verdict


def _overall_primitive(host: Host, flushes: Sequence[Result]) -> Result | None:
    """The primitive a durable journal would rely on: F_FULLFSYNC on macOS, fdatasync on
    Linux, else fsync / FlushFileBuffers."""
    for name in ("F_FULLFSYNC", "fdatasync", "fsync", "FlushFileBuffers"):
        for r in flushes:
            if r.primitive == name:
                return r
    return None


def judge(host: Host, results: Sequence[Result]) -> Verdict:
    """The verdict of a report: pure function of ``host`` and ``results`` (summaries,
    syncs issued and device flush deltas; raw samples are not needed)."""
    findings: list[Finding] = []
    verdicts: list[ResultVerdict] = []
    by_primitive: dict[str, tuple[str, str]] = {}
    for r in _flush_results(results):
        verdict, code, finding = judge_primitive(host, r, results)
        by_primitive[r.primitive] = (verdict, code)
        verdicts.append(ResultVerdict(r.name, verdict, None, code))
        if finding:
            findings.append(finding)
        findings.extend(slowness(r))

    main = _overall_primitive(host, _flush_results(results))
    if main is None:  # no raw primitive measured: a syncing commit (S >= 1 syncs) stands in
        main = next((r for r in results if r.kind == "commit" and r.primitive != "none"), None)
        if main is not None:
            verdict, code, finding = judge_primitive(host, main, results)
            by_primitive[main.primitive] = (verdict, code)
            if finding:
                findings.append(finding)
    path_verdict, path_code = (
        by_primitive[main.primitive] if main is not None else (UNVERIFIABLE, "no-evidence")
    )

    for r in results:
        if r.kind != "commit":
            continue
        durable, finding = config_durability(host, r)
        if finding:
            findings.append(finding)
        verdict, code = by_primitive.get(r.primitive, (path_verdict, path_code))
        for rule in (rule_full_equals_off, rule_commit_faster_than_sync):
            hit = rule(host, r, results)
            if hit:
                findings.append(hit)
                verdict, code = NO_FLUSH, hit.code
                break
        findings.extend(slowness(r))
        verdicts.append(ResultVerdict(r.name, verdict, durable, code))
    return Verdict(path_verdict, path_code, tuple(verdicts), tuple(findings))
