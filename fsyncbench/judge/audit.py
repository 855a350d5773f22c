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
from fsyncbench.judge.platform_rules import (
    _virtualbox, rule_barriers_disabled, rule_cloud_block_storage,
    rule_hypervisor_ignores_flush, rule_macos_plain_fsync, rule_network_filesystem,
    rule_no_flush_filesystem, rule_ram_media, rule_stack_not_followed,
    rule_sync_disabling_preload, rule_virtualized,
)
from fsyncbench.judge.counter_rules import (
    FUA_PRIMITIVES, NOT_SENT_ADVICE, _fua_may_carry, _interposed, _not_sent_cause,
    rule_flush_counters, rule_flushes_reach_device, rule_libc_interposed,
)
from fsyncbench.judge.timing_rules import (
    _sweep_ceiling, rule_flush_costs_nothing, rule_latency_floor, rule_sweep_bandwidth,
)
from fsyncbench.judge.path_rules import PATH_RULES, PathRule, judge_primitive, weaker_signals


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
