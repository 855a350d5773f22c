"""Path rules on the device flush and write counters and on libc interposition (signals
2, 3 and the counted half of 8 of :mod:`fsyncbench.judge.engine`): syncs whose flushes never
reach the disk holding the bytes (dropped above the block layer, or written without a flush,
with the cause named), the libc sync call against the raw system call, and flushes counted
reaching a bare-metal disk.

The order they are weighed in: :data:`fsyncbench.judge.path_rules.PATH_RULES`."""

from __future__ import annotations

from typing import Any

from fsyncbench.fmt import fmt_ns
from fsyncbench.host.layers import NO_BARRIER_OPTIONS
from fsyncbench.judge import stack
from fsyncbench.judge.devices import device_class
from fsyncbench.judge.rule_facts import (
    BARRIER_DOC,
    BLOCK_FLUSH_DOC,
    DROPPED_FLUSH_RATIO,
    EATMYDATA_DOC,
    INTERPOSED_RATIO,
    KERNEL_STAT_DOC,
    REACHED_FLUSH_RATIO,
    REAL_IO_FLOOR_NS,
    Facts,
    _a,
    _background_flushes,
    _chain,
    _comparison,
    _counter_ratio,
    _flush_ms_per_flush,
    _least,
    _least_flushes,
    _media_deltas,
    _media_disks,
    _net_of_background,
    _per_sync,
    _power_protected_media,
    _preload_names,
    _primitive,
    _ratio,
    _reached_ratio,
    _subject,
    _sync_disabling,
    _us,
    _write_back,
    flushes_per_sync_words,
)
from fsyncbench.model import (
    HONEST_FLUSH,
    INFERRED,
    INFO,
    MEASURED,
    NO_FLUSH,
    RISK,
    VOLATILE_CACHE,
    Finding,
    Host,
    Result,
    SyscallComparison,
)


def _not_sent_cause(f: Facts) -> tuple[str, str, dict[str, Any]]:
    """(code, cause, evidence) for syncs whose data reached a block device without a flush:
    a nobarrier filesystem in the stack, a block layer claiming no write-back cache over a
    disk that has one, or an unknown layer."""
    target = f.host.target
    nobarrier = stack.no_barrier_filesystems(target)
    if nobarrier:
        names = ", ".join(
            f"{layer.fs_type} {layer.name} "
            f"({', '.join(sorted(set(layer.options) & NO_BARRIER_OPTIONS))})"
            for layer in nobarrier
        )
        return (
            "barriers-disabled",
            f"the filesystem {names} is mounted without barriers",
            {"mount_options": sorted({o for layer in nobarrier for o in layer.options})},
        )
    c = _comparison(f, "fdatasync") or _comparison(f, "fsync")
    libs = list(dict.fromkeys(_sync_disabling(_preload_names(f)) or _preload_names(f)))
    if c is not None and _interposed(c)[0]:
        how = (
            f"it sent {c.libc_flushes} device flushes for {c.syncs} calls where the raw "
            f"system call sent {c.syscall_flushes}"
            if c.libc_flushes is not None and c.syscall_flushes is not None
            else f"its p50 over {c.syncs} calls was {_us(c.libc_p50_ns)} against "
            f"{_us(c.syscall_p50_ns)} for the raw system call"
        )
        return (
            "preload-skips-flush",
            f"the libc sync call is interposed ({', '.join(libs) or 'a preloaded library'}): "
            + how,
            {"ld_preload": f.host.ld_preload, "libraries": libs},
        )
    media = set(stack.media_devices(target))
    through = [
        layer
        for layer in stack.block_devices(target)
        if layer.name not in media
        and layer.device is not None
        and (layer.device.write_cache or "").strip() == "write through"
    ]
    if through and _write_back(f.host):
        names = ", ".join(layer.name for layer in through)
        return (
            "flushes-stripped",
            f"{names} claims a write-through cache, so the block layer "
            "completes flushes there without passing them to the write-back disk below",
            {"write_through_layers": [layer.name for layer in through]},
        )
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


def rule_flush_counters(f: Facts, r: Result | None) -> tuple[str, Finding] | None:
    """Counters on the layers that hold the bytes (KERNEL_STAT_DOC). N syncs reaching a disk
    with a write-back cache must send ~N cache flushes; fewer than DROPPED_FLUSH_RATIO per
    sync means they are lost on the way, whatever an intermediate layer claims. The write
    counters tell the two ways (docs/verdicts.md, signal 3):

    - nothing was written at sync time on the first block layer (< DROPPED_FLUSH_RATIO
      writes per sync): the sync was dropped above the block layer -> ``no_flush``
      (``flushes-dropped``: eatmydata, a no-op sync);
    - data was written but no flush followed -> ``volatile_cache``, naming the cause
      (:func:`_not_sent_cause`: a nobarrier mount, a write-through layer stripping flushes);
      when the first block layer got flushes and the media did not, the layers between
      stripped them (``flushes-stripped``).

    Other I/O's flushes (the no-sync baseline's rate, :func:`_background_flushes`) are taken
    out first, but only while they explain fewer than REACHED_FLUSH_RATIO per sync: a larger
    estimate cannot tell a lost flush from a busy neighbour. Reports without write counters
    fall back to ``no_flush`` unless a nobarrier mount names the cause. Measured."""
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
    top_write_back = (
        top_layer is not None
        and top_layer.device is not None
        and "back" in (top_layer.device.write_cache or "")
    )
    not_sent = top_flushes is not None and top_flushes < DROPPED_FLUSH_RATIO and top_write_back
    # other processes' flushes on the same disk only add: take the background out first;
    # where it is too large to trust, only a count low before subtraction is loss
    net = (
        None
        if ratio is None
        else _net_of_background(ratio, _background_flushes(f, r), r.syncs_issued or 0)
    )
    if net is None:
        net = ratio
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
    evidence = {
        "syncs_issued": r.syncs_issued,
        "device_flushes": {d.device: d.flushes for d in r.device_flushes},
        "device_writes": {d.device: d.writes for d in r.device_flushes},
        "flushes_per_sync": round(ratio, 3),
        "chain": _chain(f),
        "write_cache": [d.write_cache for d in _media_disks(host)],
    }
    written = top_writes if top_writes is not None else media_writes
    if written is not None:
        evidence["writes_per_sync"] = round(written, 3)
    if not_sent and top_flushes is not None:  # not_sent implies top_flushes is not None
        evidence["first_block_device_flushes_per_sync"] = round(top_flushes, 3)
    stripped = top_flushes is not None and top_flushes >= REACHED_FLUSH_RATIO
    code, cause, extra = _not_sent_cause(f)
    if (
        stripped
        or (written is not None and written >= REACHED_FLUSH_RATIO)
        or (written is None and code == "barriers-disabled")
    ):
        if stripped and code == "flushes-not-sent":
            code, cause = (
                "flushes-stripped",
                (
                    f"{top} received {top_flushes:.2f} flushes per "
                    "sync but the disk holding the bytes got none"
                ),
            )
        evidence.update(extra)
        return VOLATILE_CACHE, Finding(
            code,
            RISK,
            r.name,
            (
                f"{r.syncs_issued} {r.primitive} calls sent {top_flushes:.2f} flushes per sync "
                f"to {top}, the first block device under the filesystem"
                if not_sent
                else f"{r.syncs_issued} {r.primitive} calls reached the write-back disk holding the "
                f"bytes as {_least_flushes(r, host)} cache flushes"
            )
            + (
                ""
                if written is None
                else f", after writing {written:.2f} requests per sync to {top or 'the disk'}"
            )
            + f": {cause}. The data sits in a volatile cache ({_chain(f)}).",
            NOT_SENT_ADVICE.get(code, NOT_SENT_ADVICE["flushes-not-sent"]),
            evidence,
            KERNEL_STAT_DOC
            + "; "
            + (BARRIER_DOC if code == "barriers-disabled" else BLOCK_FLUSH_DOC),
            MEASURED,
        )
    nothing_written = written is not None and written < DROPPED_FLUSH_RATIO
    return NO_FLUSH, Finding(
        "flushes-dropped",
        RISK,
        r.name,
        (
            f"{r.syncs_issued} {r.primitive} calls sent {top_flushes:.2f} flushes per sync to "
            f"{top}, the first block device under the filesystem"
            if not_sent
            else f"{r.syncs_issued} {r.primitive} calls reached the disk as "
            f"{_least_flushes(r, host)} cache flushes although its write-back cache needs them"
        )
        + ("" if written is None else f", with {written:.2f} writes per sync")
        + (": nothing is written at sync time, so" if nothing_written else ":")
        + " something above the block layer drops the syncs.",
        "Look for eatmydata, an LD_PRELOAD library or a no-op sync layer.",
        evidence,
        KERNEL_STAT_DOC,
        MEASURED,
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


def _interposed(c: SyscallComparison) -> tuple[bool, bool]:
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
    hit = (
        c.libc_p50_ns < REAL_IO_FLOOR_NS <= c.syscall_p50_ns
        and c.libc_p50_ns * INTERPOSED_RATIO <= c.syscall_p50_ns
    )
    return hit, False


def rule_libc_interposed(f: Facts, r: Result | None) -> tuple[str, Finding] | None:
    """The libc wrapper against ``syscall(SYS_fdatasync)`` after identical writes (EATMYDATA_DOC;
    the measurement: fsyncbench.measure.flush_checks.compare_libc_syscall). With counters on both sides
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
    written = None if r is None else (_per_sync(r, stack.top_block_device(f.host.target), "writes"))
    keeps_writing = written is not None and written >= REACHED_FLUSH_RATIO
    return (VOLATILE_CACHE if keeps_writing else NO_FLUSH), Finding(
        "libc-sync-interposed",
        RISK,
        _subject(r),
        f"libc {c.primitive} returns in {c.libc_p50_ns / 1e3:.1f} us but the raw system call "
        f"takes {c.syscall_p50_ns / 1e3:.1f} us"
        + (
            f" and sends {raw_ratio:.2f} device flushes per call against {libc_ratio:.2f}"
            if by_counter
            else ""
        )
        + (
            ": a library interposes the libc call; it writes the data but sends no flush."
            if keeps_writing
            else ": a library interposes the libc call and skips the sync."
        ),
        "Unset LD_PRELOAD / clear /etc/ld.so.preload of "
        + (", ".join(libs) if libs else "the interposing library")
        + " and audit again.",
        {
            "primitive": c.primitive,
            "libc_p50_ns": c.libc_p50_ns,
            "syscall_p50_ns": c.syscall_p50_ns,
            "syscall_number": c.syscall_number,
            "machine": c.machine,
            "syncs_per_side": c.syncs,
            "libc_flushes": c.libc_flushes,
            "syscall_flushes": c.syscall_flushes,
            "ratio": round(c.syscall_p50_ns / max(c.libc_p50_ns, 1.0), 1),
            "ld_preload": f.host.ld_preload,
            "sync_disabling_libraries": libs,
        },
        EATMYDATA_DOC,
        MEASURED,
    )


def rule_flushes_reach_device(f: Facts, r: Result | None) -> tuple[str, Finding] | None:
    """Bare metal, a write-back disk holding the bytes, at least REACHED_FLUSH_RATIO device
    flushes per sync counted on it beyond what other I/O explains (:func:`_reached_ratio`;
    measured), and a p50 at or above the device-class floor
    (fsyncbench.judge.devices): the sync makes the drive flush and the drive takes the time
    a flush costs. Whether the drive honours the flush is inferred from that time, so the
    verdict is inferred (KERNEL_STAT_DOC, LATENCY_BANDS_DOC)."""
    ratio = _reached_ratio(f, r)
    if r is None or ratio is None or ratio < REACHED_FLUSH_RATIO or not _write_back(f.host):
        return None
    if f.host.virtualization.virtualized is not False:
        return None
    cls = device_class(f.host, r.primitive)
    if r.summary.p50_ns < cls.floor_ns:
        return None  # flushes sent, answered too fast: the floor rule speaks
    return HONEST_FLUSH, Finding(
        "flushes-reach-device",
        INFO,
        r.name,
        f"Each {r.primitive} sent cache flushes to the disk holding the bytes "
        f"({flushes_per_sync_words(f, r)}; measured) and took {fmt_ns(r.summary.p50_ns)} "
        f"(p50), as {_a(cls.name)} writing to stable media does (inferred from that time: "
        "not proven).",
        "A power-pull test (fsyncbench powercut) is the only proof beyond this.",
        {
            "flushes_per_sync": None if (c := _counter_ratio(r, f.host)) is None else round(c, 3),
            "flushes_per_sync_net_of_other_io": round(ratio, 3),
            "flush_ms_per_flush": _flush_ms_per_flush(r, f.host),
            "p50_ns": r.summary.p50_ns,
            "device_class": cls.name,
            "floor_ns": cls.floor_ns,
            "fast_flush_allowed_by": cls.plp or None,
        },
        KERNEL_STAT_DOC + "; " + cls.source,
        INFERRED,
    )
