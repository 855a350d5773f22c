"""Path rules on timings (signal 4 and the latency half of 8 of
:mod:`fsyncbench.judge.engine`): the dirty-size sweep against the most the storage links
carry, a sync that costs nothing over the same write without it, and latency against the
device-class floors (:mod:`fsyncbench.judge.devices`), the weakest signal.

The order they are weighed in: :data:`fsyncbench.judge.path_rules.PATH_RULES`."""

from __future__ import annotations

from fsyncbench.judge.cache_rules import write_cache_check
from fsyncbench.judge.devices import controllers, device_class
from fsyncbench.judge.rule_facts import (
    LATENCY_BANDS_DOC,
    MAX_LINK_BANDWIDTH,
    PCIE_DOC,
    REAL_IO_FLOOR_NS,
    SWEEP_MIN_BYTES,
    Facts,
    _a,
    _all_ram,
    _counter_ratio,
    _media_disks,
    _primitive,
    _subject,
    _us,
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
)


def _sweep_ceiling(f: Facts) -> float:
    return MAX_LINK_BANDWIDTH * max(1, len(_media_disks(f.host)))


def rule_sweep_bandwidth(f: Facts, r: Result | None) -> tuple[str, Finding] | None:
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
    evidence = {
        "primitive": sweep.primitive,
        "flush_cost_ns": sweep.flush_cost_ns,
        "bandwidth_bytes_per_s": bw,
        "ceiling_bytes_per_s": ceiling,
        "r_squared": sweep.r_squared,
    }
    if sweep.points:
        largest = max(p.dirty_bytes for p in sweep.points)
        if largest < SWEEP_MIN_BYTES:
            return None
        times = sorted(p.latency_ns for p in sweep.points if p.dirty_bytes == largest)
        median = times[len(times) // 2]
        least = largest / ceiling * 1e9
        if median >= least:
            return None
        evidence.update(
            largest_bytes=largest, largest_p50_ns=median, least_possible_ns=round(least)
        )
        shown = (
            f"a sync after {largest >> 20} MiB took {_us(median)}, less than the "
            f"{_us(least)} {largest >> 20} MiB need at {ceiling / 1e9:.0f} GB/s, the most "
            "the storage links here carry"
        )
    else:
        if bw is not None and bw <= ceiling:
            return None
        shown = (
            "latency did not grow with the bytes written"
            if bw is None
            else f"the fitted bandwidth {bw / 1e9:,.0f} GB/s exceeds {ceiling / 1e9:.0f} GB/s, "
            "the most the storage links here carry"
        )
    return NO_FLUSH, Finding(
        "sync-bandwidth-impossible",
        RISK,
        _subject(r),
        f"Dirty-size sweep with {sweep.primitive}: {shown}: the data never left RAM.",
        "Find the layer that acknowledges syncs from memory (eatmydata, a no-op sync, a RAM "
        "disk) and audit the real storage path.",
        evidence,
        PCIE_DOC,
        MEASURED,
    )


def rule_flush_costs_nothing(f: Facts, r: Result | None) -> tuple[str, Finding] | None:
    """A write+sync no slower than the same 4 KiB write without a sync, measured in the same
    run and directory, waits for no device: a sync that reaches any real block device adds
    at least REAL_IO_FLOOR_NS (LATENCY_BANDS_DOC). A comparison of two timings against a band:
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
        "flush-costs-nothing",
        RISK,
        r.name,
        f"write+{r.primitive} p50 {_us(r.summary.p50_ns)} is "
        + (f"only {_us(gap)} more than" if gap > 0 else "no slower than")
        + f" the same write without a sync ({_us(base.summary.p50_ns)}): the {r.primitive} "
        "reaches no device.",
        "Find the layer that acknowledges syncs from memory (tmpfs, eatmydata, an overlay "
        "mounted volatile) and audit the real storage path.",
        {
            "p50_ns": r.summary.p50_ns,
            "write_p50_ns": base.summary.p50_ns,
            "gap_ns": gap,
            "floor_ns": REAL_IO_FLOOR_NS,
        },
        LATENCY_BANDS_DOC,
        INFERRED,
    )


def _floor_advice(host: Host) -> str:
    """What to check after a flush below its floor: each disk's write cache where its
    transport or layer shows it (fsyncbench.judge.cache_rules.write_cache_check), and the
    declaration that fits (a protected controller cache, or a drive's PLP)."""
    check = write_cache_check(host)
    where = f"{check}; the vendor's data sheet" if check else "the vendor's data sheet"
    declare = (
        "if the controller's cache is battery- or flash-backed, say so with --assume "
        "protected-cache"
        if controllers(_media_disks(host))
        else "if the drive has power-loss protection, say so with --assume plp"
    )
    return (
        f"Check the drive's write cache and power-loss protection ({where}); {declare}. A "
        "power pull (fsyncbench powercut) settles it."
    )


def rule_latency_floor(f: Facts, r: Result | None) -> tuple[str, Finding] | None:
    """Latency against the device-class floor (fsyncbench.judge.devices), the weakest
    signal: below the floor the device acknowledges from cache (a write-back SSD without
    known power-loss protection below 150 µs, anything below 10 µs); above it nothing
    stronger said otherwise. Inferred either way."""
    host = f.host
    if r is None or (not _media_disks(host) and not host.target.darwin) or _all_ram(host):
        return None
    cls = device_class(host, r.primitive)
    p50 = r.summary.p50_ns
    evidence = {
        "p50_ns": p50,
        "device_class": cls.name,
        "floor_ns": cls.floor_ns,
        "flushes_per_sync": _counter_ratio(r, host),
        "fast_flush_allowed_by": cls.plp or None,
    }
    if p50 < cls.floor_ns:
        return VOLATILE_CACHE, Finding(
            "flush-below-device-floor",
            RISK,
            r.name,
            f"{r.primitive} p50 {p50 / 1e3:.1f} us is below the {cls.floor_ns / 1e3:.0f} us "
            f"a flush to stable media takes on {_a(cls.name)}: something acknowledges it from "
            "a cache.",
            _floor_advice(host),
            evidence,
            cls.source,
            INFERRED,
        )
    return HONEST_FLUSH, Finding(
        "flush-latency-plausible",
        INFO,
        r.name,
        f"{r.primitive} p50 {p50 / 1e3:.1f} us is consistent with {_a(cls.name)} writing "
        "to stable media: inferred from latency only, not proven.",
        "Latency alone cannot prove durability; a power-pull test (fsyncbench powercut) can.",
        evidence,
        cls.source,
        INFERRED,
    )
