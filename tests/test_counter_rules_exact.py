"""The device-counter rule (:func:`fsyncbench.judge.counter_rules.rule_flush_counters`)
where the broader evidence tests leave it loose: a background estimate too large to
subtract (the no-sync baseline's rate explains half a flush per sync or more) leaves the
count before subtraction to decide, so a count that is low even with the neighbours' flushes
in it is still loss; a result with fewer syncs than COUNTER_MIN_SYNCS beside a baseline
that counted is not judged on its counters (and does not trip over the missing ratio); and
flushes that never reach a write cache that survives a power cut (reported by the disk, read
from the RAID controller, or declared by the user) are no loss.

Every fact here is written by hand (tests/factories.py): no measurement, no I/O."""

from __future__ import annotations

import dataclasses

from factories import BARE, PROTECTED, WB_SSD, flush, host, write

from fsyncbench.judge import counter_rules, rule_facts
from fsyncbench.model import (
    MEASURED,
    RISK,
    VOLATILE_CACHE,
    BlockDevice,
    Finding,
    FlushDelta,
    RaidController,
)

#: 1 s counter windows for the baseline and the sync run alike.
WINDOW_NS = 1_000_000_000


def _facts(h, results):
    return rule_facts.Facts(h, tuple(results), None)


def _counted(deltas, syncs=1000):
    """1000 fdatasync calls at 1 ms with the counter deltas ``deltas`` over WINDOW_NS."""
    return dataclasses.replace(
        flush("fdatasync", 1_000_000, syncs=syncs),
        device_flushes=tuple(deltas),
        elapsed_ns=WINDOW_NS,
    )


def _baseline(flushes):
    """The no-sync ``write`` baseline: ``flushes`` other I/O sent to sda in WINDOW_NS."""
    return dataclasses.replace(
        write(20_000), device_flushes=(FlushDelta("sda", flushes, 0),), elapsed_ns=WINDOW_NS
    )


def test_a_background_too_large_to_subtract_leaves_a_low_count_as_loss_exact():
    """The baseline's rate puts 600 of other I/O's flushes in the run's window: 0.6 per sync,
    over REACHED_FLUSH_RATIO (0.5), too large to subtract. The count before subtraction then
    decides alone: 50 flushes for 1000 syncs (0.05, below DROPPED_FLUSH_RATIO) is low even
    with any neighbour's flushes in it, so the syncs' flushes are lost; 100 (0.1, not below)
    cannot be told from a busy neighbour's and says nothing."""
    h = host(disks=(WB_SSD,))
    r = _counted([FlushDelta("sda", 50, 5, 1000)])
    assert counter_rules.rule_flush_counters(_facts(h, [_baseline(600), r]), r) == (
        VOLATILE_CACHE,
        Finding(
            "flushes-not-sent",
            RISK,
            "write+fdatasync",
            "1000 fdatasync calls reached the write-back disk holding the bytes as 50 cache "
            "flushes, after writing 1.00 requests per sync to sda: a layer above the disk sends "
            "no flush. The data sits in a volatile cache (ext4 /data → sda).",
            "Find the layer that writes without flushing (mount options, LD_PRELOAD, the "
            "driver's write-cache setting) and audit again.",
            {
                "syncs_issued": 1000,
                "device_flushes": {"sda": 50},
                "device_writes": {"sda": 1000},
                "flushes_per_sync": 0.05,
                "chain": "ext4 /data → sda",
                "write_cache": ["write back"],
                "writes_per_sync": 1.0,
            },
            rule_facts.KERNEL_STAT_DOC + "; " + rule_facts.BLOCK_FLUSH_DOC,
            MEASURED,
        ),
    )
    at_the_ratio = _counted([FlushDelta("sda", 100, 5, 1000)])
    facts = _facts(h, [_baseline(600), at_the_ratio])
    assert counter_rules.rule_flush_counters(facts, at_the_ratio) is None


def test_too_few_syncs_beside_a_counted_baseline_are_not_judged_on_counters():
    """49 syncs (< COUNTER_MIN_SYNCS, 50) give no flushes-per-sync figure, even with 0 flushes
    counted and a baseline that counted other I/O's flushes (none here): no counter verdict
    (the background is only ever taken out of a figure that exists)."""
    h = host(disks=(WB_SSD,))
    few = _counted([FlushDelta("sda", 0, 0, 49)], syncs=49)
    assert counter_rules.rule_flush_counters(_facts(h, [_baseline(0), few]), few) is None
    assert counter_rules.rule_flush_counters(_facts(h, [_baseline(10), few]), few) is None


#: The same controller with its backup power not read.
UNREAD = RaidController("megaraid_sas", "Broadcom/LSI MegaRAID (also Dell PERC, Intel RAID)")


def _disk(**kw):
    return BlockDevice(
        "sda", rotational=True, write_cache="write back", has_flush_counters=True, **kw
    )


def test_flushes_lost_into_a_power_protected_cache_are_no_loss():
    """0 flushes for 1000 syncs that wrote 1000 requests: loss on a plain write-back disk,
    none where the cache that took the writes survives a power cut, whichever way that is
    known: the disk's own report (Windows NVCacheEnabled, as a hand-written report records
    it), the RAID controller's cache read protected, or the user's ``--assume
    protected-cache`` for a controller whose backup power was not read."""
    r = _counted([FlushDelta("sda", 0, 0, 1000)])
    cases = {
        "plain": (_disk(), ()),
        "reported": (_disk(power_protection=("nv-cache",)), ()),
        "read": (_disk(vendor="AVAGO", model="MR9361-8i", controller=PROTECTED), ()),
        "declared": (
            _disk(vendor="AVAGO", model="MR9361-8i", controller=UNREAD),
            ("protected-cache",),
        ),
        "unread, undeclared": (_disk(vendor="AVAGO", model="MR9361-8i", controller=UNREAD), ()),
    }
    decided = {}
    for name, (disk, declared) in cases.items():
        h = host(disks=(disk,), virt=BARE)
        h = dataclasses.replace(h, target=dataclasses.replace(h.target, declared=declared))
        hit = counter_rules.rule_flush_counters(_facts(h, [r]), r)
        decided[name] = None if hit is None else (hit[0], hit[1].code)
    assert decided == {
        "plain": (VOLATILE_CACHE, "flushes-not-sent"),
        "reported": None,
        "read": None,
        "declared": None,
        "unread, undeclared": (VOLATILE_CACHE, "flushes-not-sent"),
    }
