"""The verdict engine: small rules over recorded facts -> findings and verdicts.

Everything here is a pure function of a :class:`~fsyncbench.model.Host`, the results'
summaries and counters, and (for ``fsyncbench audit`` reports) the recorded
:class:`~fsyncbench.model.Evidence`, so a saved or hand-written report is judged exactly like
a live run (``fsyncbench audit --from REPORT.json``; the fields read are listed in
docs/report-schema.md).

Signals are weighed strongest first (../shared/DESIGN.md, "Signals"). A storage path and sync
primitive get the verdict of the first path rule in :data:`PATH_RULES` that returns one, and
``decided_by`` names that rule's finding code:

1. what the filesystem and the storage stack are (tmpfs, overlay ``volatile`` in any layer,
   ZFS ``sync=disabled``, RAM at the bottom of the stack: :mod:`fsyncbench.judge.stack`);
2. the device flush and write counters, judged on the disks holding the bytes (no_flush
   when nothing was written at sync time, volatile_cache when data was written but not
   flushed, with the cause named);
3. libc wrapper vs raw system call (interposition), measured;
4. the dirty-size sweep (a bandwidth no storage bus delivers);
5. a sync-disabling library named in LD_PRELOAD or /etc/ld.so.preload — only where no
   measured signal above covers the primitive;
6. mount options that drop cache flushes (``nobarrier``, ``barrier=0``) on any filesystem
   of the stack;
7. platform semantics (macOS fsync), hypervisor defaults (VirtualBox), identified cloud
   block storage, layers forwarding the flush (network filesystems, FUSE, network disks),
   virtualization, a stack that could not be followed;
8. flushes counted on bare metal, then latency against device-class floors
   (:mod:`fsyncbench.judge.devices`: power-loss protection and write cache decide the floor).

Every verdict carries its strength (measured, inferred; ``proven`` only from a power cut) and
the weaker signals that agree or disagree with it. Latency never decides against a stronger
signal: the latency rules come last. Slowness and tails are separate findings; so are config
durability and the commit checks (syncs per commit, FULL vs OFF, commit vs S x flush).
"""

# ruff: noqa: F401
# Transitional: the names moved out to the modules below are imported back here
# until every importer uses those modules; then this module goes.

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from fsyncbench.judge import devices, stack
from fsyncbench.judge.devices import CLOUD_BLOCK_MODELS, device_class
from fsyncbench.host.layers import NO_BARRIER_OPTIONS, RAM_FILESYSTEMS, SYNC_DISABLING_LIBS
from fsyncbench.model import (
    HONEST_FLUSH,
    INFERRED,
    INFO,
    MEASURED,
    NO_FLUSH,
    NO_STRENGTH,
    RISK,
    UNVERIFIABLE,
    VOLATILE_CACHE,
    WARNING,
    BlockDevice,
    Evidence,
    Finding,
    FlushDelta,
    Host,
    Pragmas,
    Report,
    Result,
    ResultVerdict,
    SyncTrace,
    Verdict,
)
from fsyncbench.fmt import fmt_bandwidth
from fsyncbench.judge.rule_facts import (
    APPLE_BARRIER_DOC, APPLE_FSYNC_DOC, BARRIER_DOC, BLOCK_FLUSH_DOC, CLOUD_BLOCK_DOC,
    COMMIT_VS_FLUSH_MIN_RATIO, COUNTER_MIN_SYNCS, DESIGN_BANDS, DROPPED_FLUSH_RATIO,
    EATMYDATA_DOC, ETCD_GATE_DOC, FIRECRACKER_DOC, GATE_P99_NS, INTERPOSED_RATIO,
    KERNEL_STAT_DOC, MAIN_PRIMITIVES, MAX_LINK_BANDWIDTH, NO_FLUSH_FILESYSTEMS,
    OVERLAY_VOLATILE_DOC, PCIE_DOC, PG_TEST_FSYNC_DOC, RAM_STACK_DOC, REACHED_FLUSH_RATIO,
    REAL_IO_FLOOR_NS, SECOND_FD_MIN_RATIO, SLOW_MEDIAN_NS, SQLITE_SYNC_DOC, SQLITE_WAL_DOC,
    SWEEP_MIN_BYTES, VIRTUALBOX_DOC, ZFS_SYNC_DOC, Facts, _a, _all_ram, _background_flushes,
    _base_primitive, _chain, _commit, _comparison, _counter_ratio, _flush_ms_per_flush,
    _flush_results, _least, _least_flushes, _media_deltas, _media_disks, _models, _per_sync,
    _power_protected_media, _preload_names, _primitive, _ratio, _reached_ratio, _subject,
    _sync_disabling, _us, _write_back,
)


# --------------------------------------------------------------------------- path rules
# Each path rule looks at one flush primitive (r; None = the path with nothing measured)
# and returns (verdict, deciding finding) or None. Strongest signal first. Every finding a
# path rule returns carries its strength: how the verdict it points to is known.

PathRule = Callable[[Facts, "Result | None"], "tuple[str, Finding] | None"]


def rule_no_flush_filesystem(f: Facts, r: Result | None):
    """tmpfs/ramfs hold data in RAM (tmpfs.rst); overlay mounted ``volatile`` (any spelling,
    :func:`fsyncbench.host.layers.overlay_volatile`) omits every sync to the upper layer
    (OVERLAY_VOLATILE_DOC); ZFS ``sync=disabled`` disregards sync requests (ZFS_SYNC_DOC).
    Filesystem facts, measured: nothing below can contradict them."""
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
            "Linux Documentation/filesystems/tmpfs.rst", MEASURED,
        )
    overlays = stack.volatile_overlays(f.host.target)
    if overlays:
        return NO_FLUSH, Finding(
            "overlay-volatile", RISK, _subject(r),
            f"The storage stack has an overlay mounted volatile ({_chain(f)}): {prim} is not "
            "passed to its upper filesystem.",
            "Remove the 'volatile' (fsync=volatile) option, or keep the journal outside the "
            "overlay.",
            {"overlays": [o.name for o in overlays],
             "options": sorted({opt for o in overlays for opt in o.options}),
             "chain": _chain(f)},
            OVERLAY_VOLATILE_DOC, MEASURED,
        )
    zfs_sync = f.evidence.environment.zfs_sync if f.evidence else None
    if mount.fs_type == "zfs" and (zfs_sync or "").lower() == "disabled":
        return NO_FLUSH, Finding(
            "zfs-sync-disabled", RISK, _subject(r),
            f"The ZFS dataset {mount.source} has sync=disabled: {prim} returns at once and "
            "data reaches disk only with the next transaction group.",
            f"zfs set sync=standard {mount.source} (add a SLOG device if sync writes are slow).",
            {"fs_type": "zfs", "dataset": mount.source, "zfs_sync": zfs_sync},
            ZFS_SYNC_DOC, MEASURED,
        )
    return None


def rule_ram_media(f: Facts, r: Result | None):
    """The bytes end in RAM at the bottom of the stack: a loop device whose backing file
    is on tmpfs, a filesystem on zram or brd (``ram*``), null_blk. When only some of the
    media are RAM (a btrfs or md array across both), the redundancy profile decides and is
    not read: unverifiable, with the risk named. Flushes may be counted
    on the layers above; nothing below them is stable (fsyncbench.host.layers: loop turns a flush
    into an fsync of its backing file, which tmpfs has nothing to do for). Stack facts,
    measured."""
    ram = stack.ram_media(f.host.target)
    if not ram:
        return None
    chain = _chain(f)
    stable = [layer for layer in stack.media(f.host.target) if layer.volatile is not True]
    if stable:
        return UNVERIFIABLE, Finding(
            "part-ram-backed-storage", RISK, _subject(r),
            f"Part of the storage holding the bytes is RAM "
            f"({', '.join(layer.name for layer in ram)}) and part is not "
            f"({', '.join(layer.name for layer in stable)}): {chain}. Whether an acknowledged "
            "commit survives a power loss depends on the redundancy profile (a mirror keeps "
            "it on the other device, a stripe or single copy loses it).",
            "Keep RAM devices out of a journal's filesystem.",
            {"chain": chain, "ram_layers": [layer.name for layer in ram],
             "stable_layers": [layer.name for layer in stable]},
            RAM_STACK_DOC, MEASURED,
        )
    return NO_FLUSH, Finding(
        "ram-backed-storage", RISK, _subject(r),
        f"The bytes end in RAM: {chain}. {_primitive(f, r)} is passed down the stack, but "
        "the layer that holds the data is memory, lost with the power.",
        "Benchmark the directory your journal will really live on (a filesystem on a real "
        "disk, not on a loop file in tmpfs or a RAM block device).",
        {"chain": chain, "ram_layers": [layer.name for layer in ram],
         "kinds": [layer.kind for layer in ram]},
        RAM_STACK_DOC, MEASURED,
    )


def _not_sent_cause(f: Facts) -> tuple[str, str, dict]:
    """(code, cause, evidence) for syncs whose data reached a block device without a flush:
    a nobarrier filesystem in the stack, a block layer claiming no write-back cache over a
    disk that has one, or an unknown layer."""
    target = f.host.target
    nobarrier = stack.no_barrier_filesystems(target)
    if nobarrier:
        names = ", ".join(f"{layer.fs_type} {layer.name} "
                          f"({', '.join(sorted(set(layer.options) & NO_BARRIER_OPTIONS))})"
                          for layer in nobarrier)
        return ("barriers-disabled", f"the filesystem {names} is mounted without barriers",
                {"mount_options": sorted({o for layer in nobarrier for o in layer.options})})
    c = _comparison(f, "fdatasync") or _comparison(f, "fsync")
    libs = list(dict.fromkeys(_sync_disabling(_preload_names(f)) or _preload_names(f)))
    if c is not None and _interposed(c)[0]:
        how = (f"it sent {c.libc_flushes} device flushes for {c.syncs} calls where the raw "
               f"system call sent {c.syscall_flushes}"
               if c.libc_flushes is not None and c.syscall_flushes is not None else
               f"its p50 over {c.syncs} calls was {_us(c.libc_p50_ns)} against "
               f"{_us(c.syscall_p50_ns)} for the raw system call")
        return ("preload-skips-flush",
                f"the libc sync call is interposed ({', '.join(libs) or 'a preloaded library'}): "
                + how, {"ld_preload": f.host.ld_preload, "libraries": libs})
    media = set(stack.media_devices(target))
    through = [layer for layer in stack.block_devices(target)
               if layer.name not in media and layer.device is not None
               and (layer.device.write_cache or "").strip() == "write through"]
    if through and _write_back(f.host):
        names = ", ".join(layer.name for layer in through)
        return ("flushes-stripped", f"{names} claims a write-through cache, so the block layer "
                "completes flushes there without passing them to the write-back disk below",
                {"write_through_layers": [layer.name for layer in through]})
    return ("flushes-not-sent", "a layer above the disk sends no flush", {})


#: What to do about each cause of data written but never flushed.
NOT_SENT_ADVICE = {
    "barriers-disabled": "Remount without nobarrier/barrier=0 unless the cache below is "
                         "battery- or capacitor-backed (then say so with --assume plp).",
    "flushes-stripped": "Fix the layer named (its write-cache setting: queue/write_cache), or "
                        "keep the journal on storage without it.",
    "preload-skips-flush": "Unset LD_PRELOAD / clear /etc/ld.so.preload of the library named "
                           "and audit again.",
    "flushes-not-sent": "Find the layer that writes without flushing (mount options, "
                        "LD_PRELOAD, the driver's write-cache setting) and audit again.",
}


def rule_flush_counters(f: Facts, r: Result | None):
    """Counters on the layers that hold the bytes (KERNEL_STAT_DOC). N syncs reaching a disk
    with a write-back cache must send ~N cache flushes; fewer than DROPPED_FLUSH_RATIO per
    sync means they are lost on the way, whatever an intermediate layer claims. The write
    counters tell the two ways (DESIGN.md, "no_flush vs volatile_cache"):

    - nothing was written at sync time on the first block layer (< DROPPED_FLUSH_RATIO
      writes per sync): the sync was dropped above the block layer -> ``no_flush``
      (``flushes-dropped``: eatmydata, a no-op sync);
    - data was written but no flush followed -> ``volatile_cache``, naming the cause
      (:func:`_not_sent_cause`: a nobarrier mount, a write-through layer stripping flushes);
      when the first block layer got flushes and the media did not, the layers between
      stripped them (``flushes-stripped``).

    Reports without write counters fall back to ``no_flush`` unless a nobarrier mount names
    the cause. Measured."""
    host = f.host
    if r is None or host.target.mount is None:
        return None
    ratio = _counter_ratio(r, host)
    top_layer = stack.top_block_layer(host.target)
    top = None if top_layer is None else top_layer.name
    media = stack.media_devices(host.target)
    top_flushes = _per_sync(r, top, "flushes") if top not in media else None
    # a layer under the filesystem that nothing else uses (a loop device, dm) sees only what
    # the filesystem sent: 0 flushes there is a measurement no other process can disturb
    top_write_back = (top_layer is not None and top_layer.device is not None
                      and "back" in (top_layer.device.write_cache or ""))
    not_sent = top_flushes is not None and top_flushes < DROPPED_FLUSH_RATIO and top_write_back
    # other processes' flushes on the same disk only add: take the background out first
    background = _background_flushes(f, r)
    net = ratio if ratio is None or background is None or not r.syncs_issued else max(
        0.0, ratio - background / r.syncs_issued)
    lost = net is not None and net < DROPPED_FLUSH_RATIO and bool(_write_back(host))
    if not (not_sent or lost):
        return None
    if ratio is None:
        ratio = top_flushes if top_flushes is not None else 0.0
    if lost and not not_sent and _power_protected_media(host):
        return None  # written into a cache with power-loss protection: no flush needed
    top_writes = _per_sync(r, top, "writes")
    media_writes = None
    least_writes = _least(_media_deltas(r, host), "writes")
    if least_writes is not None and r.syncs_issued:
        media_writes = least_writes / r.syncs_issued
    if _fua_may_carry(r, host, top_writes if top_writes is not None else media_writes):
        return None  # written with FUA: durable without a cache flush, uncounted as one
    evidence = {"syncs_issued": r.syncs_issued,
                "device_flushes": {d.device: d.flushes for d in r.device_flushes},
                "device_writes": {d.device: d.writes for d in r.device_flushes},
                "flushes_per_sync": round(ratio, 3), "chain": _chain(f),
                "write_cache": [d.write_cache for d in _media_disks(host)]}
    written = top_writes if top_writes is not None else media_writes
    if written is not None:
        evidence["writes_per_sync"] = round(written, 3)
    if not_sent:
        evidence["first_block_device_flushes_per_sync"] = round(top_flushes, 3)
    stripped = top_flushes is not None and top_flushes >= REACHED_FLUSH_RATIO
    code, cause, extra = _not_sent_cause(f)
    if stripped or (written is not None and written >= REACHED_FLUSH_RATIO) or (
            written is None and code == "barriers-disabled"):
        if stripped and code == "flushes-not-sent":
            code, cause = "flushes-stripped", (f"{top} received {top_flushes:.2f} flushes per "
                                               "sync but the disk holding the bytes got none")
        evidence.update(extra)
        return VOLATILE_CACHE, Finding(
            code, RISK, r.name,
            (f"{r.syncs_issued} {r.primitive} calls sent {top_flushes:.2f} flushes per sync "
             f"to {top}, the first block device under the filesystem"
             if not_sent else
             f"{r.syncs_issued} {r.primitive} calls reached the write-back disk holding the "
             f"bytes as {_least_flushes(r, host)} cache flushes")
            + ("" if written is None else f", after writing {written:.2f} requests per sync to "
               f"{top or 'the disk'}")
            + f": {cause}. The data sits in a volatile cache ({_chain(f)}).",
            NOT_SENT_ADVICE.get(code, NOT_SENT_ADVICE["flushes-not-sent"]),
            evidence, KERNEL_STAT_DOC + "; " + (BARRIER_DOC if code == "barriers-disabled"
                                                else BLOCK_FLUSH_DOC), MEASURED,
        )
    nothing_written = written is not None and written < DROPPED_FLUSH_RATIO
    return NO_FLUSH, Finding(
        "flushes-dropped", RISK, r.name,
        (f"{r.syncs_issued} {r.primitive} calls sent {top_flushes:.2f} flushes per sync to "
         f"{top}, the first block device under the filesystem" if not_sent else
         f"{r.syncs_issued} {r.primitive} calls reached the disk as "
         f"{_least_flushes(r, host)} cache flushes although its write-back cache needs them")
        + ("" if written is None else f", with {written:.2f} writes per sync")
        + (": nothing is written at sync time, so" if nothing_written else ":")
        + " something above the block layer drops the syncs.",
        "Look for eatmydata, an LD_PRELOAD library or a no-op sync layer.",
        evidence, KERNEL_STAT_DOC, MEASURED,
    )


#: Sync writes the kernel may send as FUA writes (write-through for that one request, no
#: cache flush): O_DSYNC/O_SYNC writes (open(2)); the block layer only sends FUA to a device
#: that declares it (queue/fua = 1), else it emulates it with a flush after the write
#: (https://www.kernel.org/doc/html/latest/block/writeback_cache_control.html).
FUA_PRIMITIVES = frozenset({"O_DSYNC", "O_SYNC"})


def _fua_may_carry(r: Result, host: Host, writes_per_sync: float | None) -> bool:
    """True when ``r``'s syncs may have reached the media as FUA writes rather than cache
    flushes: a sync-write primitive, writes reaching the disk at least once per sync, and
    a media disk that declares FUA. The flush counter then cannot tell (a FUA write counts
    as a write); writes_per_sync None (not read) cannot rule it out either."""
    if r.primitive not in FUA_PRIMITIVES:
        return False
    if not any(d.fua for d in _media_disks(host)):
        return False
    return writes_per_sync is None or writes_per_sync >= REACHED_FLUSH_RATIO


def _interposed(c) -> tuple[bool, bool]:
    """(interposed, decided by counters) for one libc-vs-syscall comparison. With counters
    on both sides: the raw call sends >= REACHED_FLUSH_RATIO flushes per call and at least
    that many more than the libc call; the two sides ran in interleaved blocks, so other
    I/O adds to both alike and cancels in the difference. Without counters: a libc call
    faster than any real I/O against a raw call INTERPOSED_RATIO times slower."""
    libc_ratio = _ratio(c.libc_flushes, c.syncs)
    raw_ratio = _ratio(c.syscall_flushes, c.syncs)
    if libc_ratio is not None and raw_ratio is not None:
        hit = raw_ratio >= REACHED_FLUSH_RATIO and raw_ratio - libc_ratio >= REACHED_FLUSH_RATIO
        return hit, True
    hit = (c.libc_p50_ns < REAL_IO_FLOOR_NS <= c.syscall_p50_ns
           and c.libc_p50_ns * INTERPOSED_RATIO <= c.syscall_p50_ns)
    return hit, False


def rule_libc_interposed(f: Facts, r: Result | None):
    """The libc wrapper against ``syscall(SYS_fdatasync)`` after identical writes (EATMYDATA_DOC;
    the measurement: fsyncbench.measure.evidence.compare_libc_syscall). With counters on both sides
    they decide: the raw blocks sent >= REACHED_FLUSH_RATIO flushes per call more than the
    libc blocks (:func:`_interposed`). Without counters, time
    decides only in the shape interposition has: a libc call faster than any real I/O
    (REAL_IO_FLOOR_NS) against a raw call INTERPOSED_RATIO times slower (a noisy disk shifts
    both, never below the floor). Measured."""
    c = _comparison(f, _primitive(f, r))
    if c is None:
        return None
    interposed, by_counter = _interposed(c)
    if not interposed:
        return None
    libc_ratio = _ratio(c.libc_flushes, c.syncs)
    raw_ratio = _ratio(c.syscall_flushes, c.syncs)
    libs = list(dict.fromkeys(_sync_disabling(_preload_names(f)) or _preload_names(f)))
    # an interposer that still writes the data (sync_file_range) leaves it in a volatile
    # cache; one that skips the sync entirely writes nothing at sync time
    written = None if r is None else (
        _per_sync(r, stack.top_block_device(f.host.target), "writes"))
    keeps_writing = written is not None and written >= REACHED_FLUSH_RATIO
    return (VOLATILE_CACHE if keeps_writing else NO_FLUSH), Finding(
        "libc-sync-interposed", RISK, _subject(r),
        f"libc {c.primitive} returns in {c.libc_p50_ns / 1e3:.1f} us but the raw system call "
        f"takes {c.syscall_p50_ns / 1e3:.1f} us"
        + (f" and sends {raw_ratio:.2f} device flushes per call against {libc_ratio:.2f}"
           if by_counter else "")
        + (": a library interposes the libc call; it writes the data but sends no flush."
           if keeps_writing else ": a library interposes the libc call and skips the sync."),
        "Unset LD_PRELOAD / clear /etc/ld.so.preload of "
        + (", ".join(libs) if libs else "the interposing library") + " and audit again.",
        {"primitive": c.primitive, "libc_p50_ns": c.libc_p50_ns,
         "syscall_p50_ns": c.syscall_p50_ns, "syscall_number": c.syscall_number,
         "machine": c.machine, "syncs_per_side": c.syncs,
         "libc_flushes": c.libc_flushes, "syscall_flushes": c.syscall_flushes,
         "ratio": round(c.syscall_p50_ns / max(c.libc_p50_ns, 1.0), 1),
         "ld_preload": f.host.ld_preload, "sync_disabling_libraries": libs},
        EATMYDATA_DOC, MEASURED,
    )


def _sweep_ceiling(f: Facts) -> float:
    return MAX_LINK_BANDWIDTH * max(1, len(_media_disks(f.host)))


def rule_sweep_bandwidth(f: Facts, r: Result | None):
    """The dirty-size sweep (sync after writing 4 KiB ... 64 MiB): moving the largest size at
    the fastest rate the leaf disks' links carry (MAX_LINK_BANDWIDTH each, PCIE_DOC) takes at
    least bytes / ceiling; a median sync faster than that means the data never left RAM.
    This bound only needs the largest size's latency, so noise (which only adds time) cannot
    fake it. A hand-written sweep without points is judged on its fitted bandwidth.
    Measured."""
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
                 f"{_us(least)} {largest >> 20} MiB need at {ceiling / 1e9:.0f} GB/s, the most "
                 "the storage links here carry")
    else:
        if bw is not None and bw <= ceiling:
            return None
        shown = ("latency did not grow with the bytes written" if bw is None else
                 f"the fitted bandwidth {bw / 1e9:,.0f} GB/s exceeds {ceiling / 1e9:.0f} GB/s, "
                 "the most the storage links here carry")
    return NO_FLUSH, Finding(
        "sync-bandwidth-impossible", RISK, _subject(r),
        f"Dirty-size sweep with {sweep.primitive}: {shown}: the data never left RAM.",
        "Find the layer that acknowledges syncs from memory (eatmydata, a no-op sync, a RAM "
        "disk) and audit the real storage path.",
        evidence, PCIE_DOC, MEASURED,
    )


def rule_flush_costs_nothing(f: Facts, r: Result | None):
    """A write+sync no slower than the same 4 KiB write without a sync, measured in the same
    run and directory, waits for no device: a sync that reaches any real block device adds
    at least REAL_IO_FLOOR_NS (DESIGN_BANDS). A comparison of two timings against a band:
    inferred. Covers every primitive, where the sweep and the libc comparison cover one."""
    if r is None or r.kind != "flush":
        return None
    base = next((x for x in f.results if x.kind == "write"), None)
    if base is None:
        return None
    gap = r.summary.p50_ns - base.summary.p50_ns
    if gap >= REAL_IO_FLOOR_NS:
        return None
    return NO_FLUSH, Finding(
        "flush-costs-nothing", RISK, r.name,
        f"write+{r.primitive} p50 {_us(r.summary.p50_ns)} is "
        + (f"only {_us(gap)} more than" if gap > 0 else "no slower than")
        + f" the same write without a sync ({_us(base.summary.p50_ns)}): the {r.primitive} "
        "reaches no device.",
        "Find the layer that acknowledges syncs from memory (tmpfs, eatmydata, an overlay "
        "mounted volatile) and audit the real storage path.",
        {"p50_ns": r.summary.p50_ns, "write_p50_ns": base.summary.p50_ns, "gap_ns": gap,
         "floor_ns": REAL_IO_FLOOR_NS},
        DESIGN_BANDS, INFERRED,
    )


def rule_sync_disabling_preload(f: Facts, r: Result | None):
    """A sync-disabling library (SYNC_DISABLING_LIBS) named in LD_PRELOAD, /etc/ld.so.preload
    or the mapped libraries. A name alone is weaker than a measurement, so this decides only
    where neither a libc-vs-syscall comparison nor a flush counter covers the primitive.
    Inferred (identity)."""
    libs = _sync_disabling(_preload_names(f))
    if not libs:
        return None
    if _comparison(f, _primitive(f, r)) is not None or _counter_ratio(r, f.host) is not None:
        return None
    return NO_FLUSH, Finding(
        "sync-disabled-by-preload", RISK, _subject(r),
        f"{', '.join(libs)} is preloaded into this process; it turns "
        f"{_primitive(f, r)} into a no-op (a name match: no measurement contradicts it).",
        "Run without eatmydata (unset LD_PRELOAD, clear /etc/ld.so.preload) to measure real "
        "flushes.",
        {"ld_preload": f.host.ld_preload, "libraries": libs},
        EATMYDATA_DOC, INFERRED,
    )


def rule_barriers_disabled(f: Facts, r: Result | None):
    """``nobarrier``/``barrier=0`` on any filesystem of the stack (the target's, or the one
    holding a loop device's backing file) stop it from sending cache flushes: when the block
    device right below it has a write-back (or unknown) cache, a sync ends in that volatile
    cache (BARRIER_DOC) — unless that device is a disk whose cache has power-loss protection
    (known family or declared), the case the option exists for; a loop device's cache (the
    page cache) never has it. Counters that still show flushes reaching the disk the filesystem
    sits on directly (a kernel that ignores the option, as xfs since Linux 4.19) overrule
    the option. A mount fact, measured."""
    # the cache that matters is the one right below each such filesystem: a loop device's
    # (the host page cache) is volatile whatever the disk under its backing file reports
    media = set(stack.media_devices(f.host.target))
    protected = _power_protected_media(f.host)
    layers = [layer for layer in stack.no_barrier_filesystems(f.host.target)
              if "through" not in (stack.cache_below(f.host.target, layer) or "")
              and not (protected and stack.device_below(f.host.target, layer) in media)]
    if not layers:
        return None
    ratio = _reached_ratio(f, r)
    if ratio is not None and ratio >= REACHED_FLUSH_RATIO and \
            stack.top_block_device(f.host.target) in stack.media_devices(f.host.target):
        return None
    opts = sorted({o for layer in layers for o in layer.options} & NO_BARRIER_OPTIONS)
    names = ", ".join(f"{layer.fs_type} {layer.name}" for layer in layers)
    return VOLATILE_CACHE, Finding(
        "barriers-disabled", RISK, _subject(r),
        f"{names} is mounted with {', '.join(opts)}: {_primitive(f, r)} writes data to the "
        "drive but never asks it to flush its volatile write cache.",
        "Remount without nobarrier/barrier=0 unless the cache is battery- or "
        "capacitor-backed.",
        {"mount_options": sorted({o for layer in layers for o in layer.options}),
         "filesystems": [layer.name for layer in layers], "chain": _chain(f),
         "write_cache": [d.write_cache for d in _media_disks(f.host)],
         "flushes_per_sync": None if ratio is None else round(ratio, 3)},
        BARRIER_DOC, MEASURED,
    )


def rule_macos_plain_fsync(f: Facts, r: Result | None):
    """On macOS plain fsync, F_BARRIERFSYNC and O_DSYNC/O_SYNC writes return once data
    reaches the drive, whose cache is volatile (APPLE_FSYNC_DOC, APPLE_BARRIER_DOC: only
    F_FULLFSYNC asks the drive to flush). Platform semantics, inferred."""
    if r is None or f.host.os_name != "Darwin" or r.primitive not in (
            "fsync", "F_BARRIERFSYNC", "O_DSYNC", "O_SYNC"):
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
        APPLE_FSYNC_DOC if r.primitive == "fsync" else APPLE_BARRIER_DOC, INFERRED,
    )


def _virtualbox(host: Host) -> list[str]:
    """The signs naming VirtualBox: DMI vendor/product, disk model (VIRTUALBOX_DOC)."""
    v = host.virtualization
    signs = []
    if (v.dmi_vendor or "").strip().lower() == "innotek gmbh":
        signs.append(f"DMI sys_vendor {v.dmi_vendor}")
    if (v.dmi_product or "").strip().lower() == "virtualbox":
        signs.append(f"DMI product_name {v.dmi_product}")
    if (v.detect_virt or "").strip().lower() == "oracle":
        signs.append("systemd-detect-virt oracle")
    for d in _media_disks(host):
        if "vbox harddisk" in f"{d.vendor or ''} {d.model or ''}".lower():
            signs.append(f"disk {d.name} model {d.model}")
    return signs


def rule_hypervisor_ignores_flush(f: Facts, r: Result | None):
    """A hypervisor whose documented default acknowledges guest flushes without flushing:
    VirtualBox ignores flush requests of IDE/SATA disks unless ``IgnoreFlush`` is set to 0
    (VIRTUALBOX_DOC). The setting lives on the host and cannot be read from the guest, so
    this is the default's consequence, inferred; counters in the guest only show that the
    guest sent the flushes."""
    signs = _virtualbox(f.host)
    if not signs:
        return None
    return VOLATILE_CACHE, Finding(
        "hypervisor-ignores-flush", RISK, _subject(r),
        f"This is a VirtualBox guest ({'; '.join(signs)}): by default VirtualBox ignores the "
        f"guest's flush requests, so {_primitive(f, r)} ends in the host's cache.",
        "On the host: VBoxManage setextradata VM-name "
        "\"VBoxInternal/Devices/ahci/0/LUN#0/Config/IgnoreFlush\" 0 (piix3ide for IDE disks; "
        "the VM log then lacks 'Flushes will be ignored'), or run fsyncbench on the host.",
        {"signs": signs, "flushes_per_sync": _counter_ratio(r, f.host)},
        VIRTUALBOX_DOC, INFERRED,
    )


def rule_cloud_block_storage(f: Facts, r: Result | None):
    """A disk whose model names a cloud block service that documents durable, replicated
    writes (CLOUD_BLOCK_MODELS, CLOUD_BLOCK_DOC). Its identity answers what a guest cannot
    see of a generic virtual disk; a p50 below any real I/O (REAL_IO_FLOOR_NS) withholds it.
    Identity, inferred."""
    models = _models(f.host)
    hit = next((m for m in CLOUD_BLOCK_MODELS if m in models), None)
    disks = _media_disks(f.host)
    if hit is None or not disks:
        return None
    if not all(any(m in f"{d.vendor or ''} {d.model or ''}".lower() for m in CLOUD_BLOCK_MODELS)
               for d in disks):
        return None
    if r is not None and r.summary.p50_ns < REAL_IO_FLOOR_NS:
        return None
    return HONEST_FLUSH, Finding(
        "cloud-block-storage", INFO, _subject(r),
        f"The target sits on {', '.join(sorted({d.model or '?' for d in disks}))}, "
        "network block storage whose provider acknowledges a write only once it is stored "
        "redundantly.",
        "Mind the volume's IOPS/latency limits; a local instance-store disk would not be "
        "durable across instance stop.",
        {"models": [d.model for d in disks],
         "write_cache": [d.write_cache for d in disks],
         "p50_ns": None if r is None else r.summary.p50_ns},
        CLOUD_BLOCK_DOC, INFERRED,
    )


def rule_network_filesystem(f: Facts, r: Result | None):
    """A layer of the stack forwards the flush to a daemon or server whose storage cannot be
    seen from here: NFS, SMB, 9p, virtiofs, FUSE (which daemon: the mount source and
    subtype), nbd, rbd, iSCSI, NVMe over fabrics (fsyncbench.host.layers). Stack facts, measured;
    what the far side does is unverifiable."""
    forwarding = stack.forwarding_layers(f.host.target)
    if not forwarding:
        return None
    first = forwarding[0]
    kind = {"fuse": "the FUSE filesystem", "network-fs": "the network filesystem"}.get(
        first.kind, "the network block device")
    what = (f"{kind} {first.name} (type {first.fs_type}, source {first.source})"
            if first.fs_type else f"{kind} {first.name}")
    return UNVERIFIABLE, Finding(
        "network-filesystem", WARNING, _subject(r),
        f"The target's storage goes through {what}: {_primitive(f, r)} is "
        "forwarded to a server or daemon whose storage cannot be seen from here.",
        "Run fsyncbench audit where the data is stored, or keep the journal on local storage.",
        {"fs_type": first.fs_type, "source": first.source, "layer": first.name,
         "kind": first.kind, "chain": _chain(f)},
        "nfs(5); Linux Documentation/filesystems/fuse.rst; "
        "Documentation/admin-guide/blockdev/nbd.rst", MEASURED,
    )


def rule_virtualized(f: Facts, r: Result | None):
    """Inside a VM the guest sees only that flushes reach the virtual disk; the host's
    cache mode decides the rest (FIRECRACKER_DOC, ../shared/cases E5). A virtual disk that
    reports "write through" gets no flush from the guest at all: the host either writes
    through (QEMU cache=writethrough/directsync) or never flushes (Firecracker's default
    Unsafe, QEMU cache=unsafe), which the guest cannot tell apart. The VM is a measured
    fact; the verdict says what cannot be measured from inside."""
    virt = f.host.virtualization
    if not virt.virtualized or _all_ram(f.host):
        return None
    ratio = _reached_ratio(f, r) if r is not None else None
    raw = _counter_ratio(r, f.host)
    virtual = [layer for layer in stack.media(f.host.target) if layer.kind == "virtual-disk"]
    through = [layer.name for layer in virtual if layer.device is not None
               and (layer.device.write_cache or "").strip() == "write through"]
    where = "the virtual disk" if virtual else "whatever this stack ends in"
    if ratio is not None and ratio >= REACHED_FLUSH_RATIO:
        seen = f"{_primitive(f, r)} reaches {where} ({ratio:.2f} device flushes per sync)"
    elif raw is not None and raw >= REACHED_FLUSH_RATIO:
        seen = (f"{_primitive(f, r)} was followed by {raw:.2f} device flushes per sync, but "
                "other I/O on the disk could explain them")
    elif raw is not None:
        seen = f"only {raw:.2f} device flushes per sync arrived for {_primitive(f, r)}"
    else:
        seen = f"{_primitive(f, r)} goes to {where}"
    text = (f"This is a virtual machine: {seen}, and whether the host persists what it gets "
            "cannot be seen from inside.")
    if through:
        text = (f"This is a virtual machine whose disk {', '.join(through)} reports a "
                "write-through cache: the guest sends it no flush, and whether the host "
                "writes through or keeps the data in its page cache cannot be seen from inside.")
    return UNVERIFIABLE, Finding(
        "virtualized-storage", WARNING, _subject(r), text,
        "Check the hypervisor's disk cache mode: Firecracker's default cache_type Unsafe "
        "advertises no flush and never syncs on the host, Writeback fsyncs the backing file "
        "on every guest flush; QEMU cache=unsafe ignores flushes, its other modes honour "
        "them. Or run fsyncbench on the host (or pull the plug: fsyncbench powercut).",
        {
            "hypervisor_flag": virt.hypervisor_flag,
            "dmi_vendor": virt.dmi_vendor,
            "detect_virt": virt.detect_virt,
            "kernel_hint": virt.kernel_hint,
            "write_through_disks": through,
            "flushes_per_sync": None if ratio is None else round(ratio, 3),
            "flush_ms_per_flush": None if r is None else _flush_ms_per_flush(r, f.host),
            "p50_ns": None if r is None else r.summary.p50_ns,
        },
        FIRECRACKER_DOC, MEASURED,
    )


def rule_stack_not_followed(f: Facts, r: Result | None):
    """The walk could not reach the layer holding the bytes (a relative overlay upper
    directory, a loop device whose backing file was not recorded, a filesystem whose
    devices were not found): counters and latencies cannot be tied to any medium. Comes
    before the bare-metal rules, which need to know the medium."""
    target = f.host.target
    stuck = stack.unfollowed(target)
    if not target.layers:  # a derived stack: only a recorded block device left dangling counts
        stuck = [layer for layer in stuck if layer.device is not None]
    if not stuck or stack.media(target):
        return None
    notes = [f"{stack.label(layer)}: {layer.note}" if layer.note else stack.label(layer)
             for layer in stuck]
    return UNVERIFIABLE, Finding(
        "stack-not-followed", WARNING, _subject(r),
        f"The storage under the target could not be followed to the medium holding the "
        f"bytes ({_chain(f)}; {'; '.join(notes)}): nothing measured here can be tied to it.",
        "Run fsyncbench on the directory that holds the data, or with absolute overlay "
        "paths; `fsyncbench host DIR` shows the stack.",
        {"chain": _chain(f), "stopped_at": [layer.name for layer in stuck]},
        "fsyncbench.host._stack", MEASURED,
    )


def rule_flushes_reach_device(f: Facts, r: Result | None):
    """Bare metal, a write-back disk holding the bytes, at least REACHED_FLUSH_RATIO device
    flushes per sync counted on it beyond what other I/O explains (:func:`_reached_ratio`;
    measured), and a p50 at or above the device-class floor
    (fsyncbench.judge.devices): the sync makes the drive flush and the drive takes the time
    a flush costs. Whether the drive honours the flush is inferred from that time, so the
    verdict is inferred (KERNEL_STAT_DOC, DESIGN_BANDS)."""
    ratio = _reached_ratio(f, r)
    if r is None or ratio is None or ratio < REACHED_FLUSH_RATIO or not _write_back(f.host):
        return None
    if f.host.virtualization.virtualized is not False:
        return None
    cls = device_class(f.host, r.primitive)
    if r.summary.p50_ns < cls.floor_ns:
        return None  # flushes sent, answered too fast: the floor rule speaks
    return HONEST_FLUSH, Finding(
        "flushes-reach-device", INFO, r.name,
        f"Each {r.primitive} sent {ratio:.2f} cache flushes to the disk holding the bytes "
        f"(measured) and took {r.summary.p50_ns / 1e3:.1f} us (p50), as {_a(cls.name)} writing "
        "to stable media does (inferred from that time: not proven).",
        "A power-pull test (fsyncbench powercut) is the only proof beyond this.",
        {"flushes_per_sync": round(ratio, 3), "flush_ms_per_flush": _flush_ms_per_flush(r, f.host),
         "p50_ns": r.summary.p50_ns, "device_class": cls.name, "floor_ns": cls.floor_ns,
         "fast_flush_allowed_by": cls.plp or None},
        KERNEL_STAT_DOC + "; " + cls.source, INFERRED,
    )


def rule_latency_floor(f: Facts, r: Result | None):
    """Latency against the device-class floor (fsyncbench.judge.devices), the weakest
    signal: below the floor the device acknowledges from cache (a write-back SSD without
    known power-loss protection below 150 µs, anything below 10 µs); above it nothing
    stronger said otherwise. Inferred either way."""
    host = f.host
    if r is None or (not _media_disks(host) and not host.target.darwin) or _all_ram(host):
        return None
    cls = device_class(host, r.primitive)
    p50 = r.summary.p50_ns
    evidence = {"p50_ns": p50, "device_class": cls.name, "floor_ns": cls.floor_ns,
                "flushes_per_sync": _counter_ratio(r, host),
                "fast_flush_allowed_by": cls.plp or None}
    if p50 < cls.floor_ns:
        return VOLATILE_CACHE, Finding(
            "flush-below-device-floor", RISK, r.name,
            f"{r.primitive} p50 {p50 / 1e3:.1f} us is below the {cls.floor_ns / 1e3:.0f} us "
            f"a flush to stable media takes on {_a(cls.name)}: something acknowledges it from "
            "a cache.",
            "Check the drive's write cache and power-loss protection (nvme id-ctrl: vwc; "
            "the vendor's data sheet); if the drive has power-loss protection, say so with "
            "--assume plp. A power pull (fsyncbench powercut) settles it.",
            evidence, cls.source, INFERRED,
        )
    return HONEST_FLUSH, Finding(
        "flush-latency-plausible", INFO, r.name,
        f"{r.primitive} p50 {p50 / 1e3:.1f} us is consistent with {_a(cls.name)} writing "
        "to stable media: inferred from latency only, not proven.",
        "Latency alone cannot prove durability; a power-pull test (fsyncbench powercut) can.",
        evidence, cls.source, INFERRED,
    )


#: Path rules, strongest signal first; the first that returns a verdict decides.
PATH_RULES: tuple[PathRule, ...] = (
    rule_no_flush_filesystem,
    rule_ram_media,
    rule_flush_counters,
    rule_libc_interposed,
    rule_sweep_bandwidth,
    rule_sync_disabling_preload,
    rule_barriers_disabled,
    rule_flush_costs_nothing,
    rule_macos_plain_fsync,
    rule_hypervisor_ignores_flush,
    rule_cloud_block_storage,
    rule_network_filesystem,
    rule_stack_not_followed,
    rule_virtualized,
    rule_flushes_reach_device,
    rule_latency_floor,
)


def judge_primitive(host: Host, r: Result | None, results: Sequence[Result],
                    evidence: Evidence | None = None) -> tuple[str, str, Finding | None]:
    """(path verdict, deciding finding code, its finding) for one flush result, or for the
    path itself (``r`` None) when no primitive was measured. The finding carries its
    strength, ``points_to`` the verdict and ``stance`` "decides"."""
    facts = Facts(host, tuple(results), evidence)
    for rule in PATH_RULES:
        hit = rule(facts, r)
        if hit:
            finding = dataclasses.replace(hit[1], points_to=hit[0], stance="decides")
            return hit[0], finding.code, finding
    return UNVERIFIABLE, "no-evidence", None


def weaker_signals(f: Facts, r: Result | None, verdict: str, code: str) -> list[Finding]:
    """Findings of the rules after the deciding one, each marked with the verdict it points
    to and whether it ``agrees`` or ``disagrees`` with ``verdict``: a report shows every
    signal, the disagreeing ones too (a fast latency under a VM verdict, counters that look
    honest above a RAM-backed loop device). Rules before the deciding one found nothing."""
    out = []
    for rule in PATH_RULES:
        hit = rule(f, r)
        if hit and hit[1].code != code:
            stance = "agrees" if hit[0] == verdict else "disagrees"
            out.append(dataclasses.replace(hit[1], points_to=hit[0], stance=stance))
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
        "strace of the commits (fsyncbench.measure.evidence.trace_syncs); " + SQLITE_SYNC_DOC,
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
        f"{r.name} commits take {r.summary.p50_ns / 1e3:.1f} us, "
        + (f"only {_us(gap)} more than" if gap > 0 else "no slower than")
        + f" {off.name}: its syncs reach no device.",
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

#: How each commit rule knows: traced system calls are measured; timing comparisons against
#: a band (REAL_IO_FLOOR_NS, COMMIT_VS_FLUSH_MIN_RATIO) are inferred.
COMMIT_RULE_STRENGTH = {
    "commit-issues-no-sync": MEASURED,
    "commit-syncs-intercepted": MEASURED,
    "sync-costs-nothing": INFERRED,
    "commit-not-waiting-for-sync": INFERRED,
}


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
        bw = fmt_bandwidth(s.bandwidth_bytes_per_s)
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
    """The counters as findings: per result, flushes on the disks holding the bytes (the
    least-flushed one), and what layers that hold nothing counted (never taken as proof).
    Counters are device-wide: other processes' I/O on the same disk adds to them."""
    host = f.host
    media = _media_disks(host)
    why = (f.evidence.unavailable.get("flush_counters") if f.evidence else None)
    if why is None and host.os_name == "Linux" and media \
            and not any(d.has_flush_counters for d in media):
        why = ("no flush fields in /sys/block/"
               f"{','.join(d.name for d in media)}/stat (kernel < 5.5?)")
    out: list[Finding] = []
    media_names = {d.name for d in media}
    above: dict[str, dict[str, int | None]] = {}
    for r in f.results:
        for d in r.device_flushes:
            if host.target.layers and d.device not in media_names and d.flushes is not None:
                above.setdefault(r.name, {})[d.device] = d.flushes
    if above:
        out.append(Finding(
            "flushes-counted-above-media", INFO, "path",
            "Flushes counted on layers that hold no bytes ("
            + "; ".join(f"{name}: " + ", ".join(f"{dev} {n}" for dev, n in devs.items())
                        for name, devs in above.items())
            + f"): they show what the filesystem sent, not what reached stable media "
            f"({_chain(f)}).",
            "Only counts on the disk holding the bytes say whether flushes reach it.",
            {"per_result": above, "chain": _chain(f)}, KERNEL_STAT_DOC,
        ))
    if why is not None:
        return out + [Finding(
            "flush-counters-unavailable", INFO, "path",
            f"Device flush counter not available: {why}.",
            "Without counters the verdict rests on weaker signals; Linux >= 5.5 has them.",
            {"reason": why}, KERNEL_STAT_DOC,
        )]
    rows = {}
    for r in f.results:
        least = _least_flushes(r, host)
        if least is None or not r.device_flushes:
            continue
        rows[r.name] = {
            "device_flushes": least,
            "syncs_issued": r.syncs_issued,
            "flushes_per_sync": None if not r.syncs_issued else round(least / r.syncs_issued, 3),
            "flushes_per_op": round(least / max(r.summary.count, 1), 3),
            "flush_ms_per_flush": _flush_ms_per_flush(r, host),
        }
    if not rows:
        return out
    text = "; ".join(
        f"{name} {v['device_flushes']} flushes"
        + (f" for {v['syncs_issued']} syncs" if v["syncs_issued"] else f" ({v['flushes_per_op']}/op)")
        for name, v in rows.items())
    return out + [Finding(
        "device-flush-counters", INFO, "path",
        f"Device flushes counted on {', '.join(sorted(media_names)) or 'the disk'} around each "
        f"workload: {text}. The counters are device-wide: other processes' I/O on the same "
        "disk adds to them.",
        "On an honest path every sync sends at least one flush to a write-back disk.",
        {"per_result": rows, "disks": sorted(media_names)}, KERNEL_STAT_DOC,
    )]


# --------------------------------------------------------------------------- verdict


def _overall_primitive(flushes: Sequence[Result]) -> Result | None:
    """The primitive a durable journal would rely on (MAIN_PRIMITIVES order); a report
    whose flush results carry other names (FreeBSD ``DIOCGFLUSH``, a hand-written
    ``O_DSYNC`` write) falls back to its first syncing flush result."""
    for name in MAIN_PRIMITIVES:
        for r in flushes:
            if r.primitive == name:
                return r
    return next((r for r in flushes if r.primitive != "none"), None)


def _strength(finding: Finding | None) -> str:
    return finding.strength if finding is not None and finding.strength else NO_STRENGTH


def judge(host: Host, results: Sequence[Result], evidence: Evidence | None = None) -> Verdict:
    """The verdict of a report: pure function of ``host``, ``results`` (summaries, syncs
    issued, device flush deltas; raw samples are not needed) and ``evidence``.

    Every path verdict names its deciding finding and its strength (measured, inferred; see
    :data:`fsyncbench.model.STRENGTHS`); for the primitive the journal relies on, every
    weaker signal follows, marked as agreeing or disagreeing (:func:`weaker_signals`)."""
    facts = Facts(host, tuple(results), evidence)
    findings: list[Finding] = []
    verdicts: list[ResultVerdict] = []
    by_primitive: dict[str, tuple[str, str, str]] = {}
    flushes = _flush_results(results)
    main = _overall_primitive(flushes)
    # The primitive the journal relies on first: its deciding finding leads the list.
    for r in sorted(flushes, key=lambda x: x is not main):
        verdict, code, finding = judge_primitive(host, r, results, evidence)
        by_primitive.setdefault(r.primitive, (verdict, code, _strength(finding)))
        verdicts.append(ResultVerdict(r.name, verdict, None, code, _strength(finding)))
        if finding:
            findings.append(finding)
        if r is main:
            findings.extend(weaker_signals(facts, r, verdict, code))
        findings.extend(slowness(r))

    if main is None:  # no raw primitive measured: a syncing commit (S >= 1 syncs) stands in
        main = next((r for r in results if r.kind == "commit" and r.primitive != "none"), None)
        verdict, code, finding = judge_primitive(host, main, results, evidence)
        if main is not None:
            by_primitive[main.primitive] = (verdict, code, _strength(finding))
        if finding:
            findings.append(finding)
            findings.extend(weaker_signals(facts, main, verdict, code))
        path = (verdict, code, _strength(finding))
    else:
        path = by_primitive[main.primitive]

    for r in results:
        if r.kind != "commit":
            continue
        durable, finding = config_durability(host, r)
        if finding:
            findings.append(finding)
        verdict, code, strength = by_primitive.get(r.primitive) or by_primitive.get(
            _base_primitive(r.primitive), path)
        for rule in COMMIT_RULES:
            hit = rule(facts, r)
            if hit:
                hit_strength = COMMIT_RULE_STRENGTH[hit.code]
                if verdict in (NO_FLUSH, VOLATILE_CACHE) and strength == MEASURED:
                    # a measured signal already found the risk: keep it, show this one too
                    findings.append(dataclasses.replace(
                        hit, strength=hit_strength, points_to=NO_FLUSH,
                        stance="agrees" if verdict == NO_FLUSH else "disagrees"))
                else:
                    findings.append(dataclasses.replace(
                        hit, strength=hit_strength, points_to=NO_FLUSH, stance="decides"))
                    verdict, code, strength = NO_FLUSH, hit.code, hit_strength
                break
        findings.extend(slowness(r))
        verdicts.append(ResultVerdict(r.name, verdict, durable, code, strength))
    findings.extend(evidence_findings(facts))
    split = {v.subject: (v.path_verdict, v.decided_by) for v in verdicts
             if v.config_durable is None and v.subject != "path"}
    if len({verdict for verdict, _ in split.values()}) > 1:
        findings.append(Finding(
            "primitives-disagree", WARNING, "path",
            "The sync primitives on this one path got different verdicts: "
            + "; ".join(f"{name} {verdict} ({code})" for name, (verdict, code) in split.items())
            + ". Where one is decided only by latency near a floor, the line between them is "
            "not sharp; where a measurement covers one primitive only, the other lacks it.",
            "Read each verdict's strength; the path verdict is the one of the primitive the "
            "journal uses.", {"verdicts": {k: v[0] for k, v in split.items()}}, DESIGN_BANDS))
    unknown = sorted(devices.declared_facts(host) - set(devices.DECLARABLE))
    if unknown:
        findings.append(Finding(
            "unknown-declaration", WARNING, "path",
            f"Declared facts not understood and ignored: {', '.join(unknown)}.",
            "Declare only " + ", ".join(f"'{k}' ({v})" for k, v in devices.DECLARABLE.items())
            + ".", {"declared": list(host.target.declared)}, "docs/report-schema.md"))
    order = {r.name: i for i, r in enumerate(results)}
    verdicts.sort(key=lambda v: order.get(v.subject, len(order)))
    return Verdict(path[0], path[1], tuple(verdicts), tuple(findings), path[2])


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
