"""Findings that report the recorded evidence (counters, syncs per commit, libc vs syscall,
the sweep fit, the second-descriptor check, missing counters), whether or not it decided
the verdict."""

from __future__ import annotations

from fsyncbench.fmt import fmt_bandwidth
from fsyncbench.judge.rule_facts import (
    DROPPED_FLUSH_RATIO,
    EATMYDATA_DOC,
    KERNEL_STAT_DOC,
    PG_TEST_FSYNC_DOC,
    REACHED_FLUSH_RATIO,
    REAL_IO_FLOOR_NS,
    SECOND_FD_MIN_RATIO,
    Facts,
    _chain,
    _flush_ms_per_flush,
    _least_flushes,
    _media_disks,
    _ratio,
    _us,
)
from fsyncbench.model import (
    INFO,
    RISK,
    Finding,
    SecondFdCheck,
)

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
        out.append(
            Finding(
                "syncs-per-commit",
                INFO,
                "path",
                "Sync calls per commit, traced with strace: "
                + ", ".join(f"{k} {v:g}" for k, v in per.items())
                + ".",
                "Each sync costs one device flush on an honest path; fewer syncs per commit "
                "(WAL) cost less.",
                {"syncs_per_commit": per},
                "strace(1) of SQLite commits in a child process",
            )
        )
    for c in ev.syscall_comparisons:
        gap = c.syscall_p50_ns / max(c.libc_p50_ns, 1.0)
        out.append(
            Finding(
                "libc-vs-syscall",
                INFO,
                c.primitive,
                f"libc {c.primitive} p50 {_us(c.libc_p50_ns)}, raw syscall {c.syscall_number} p50 "
                f"{_us(c.syscall_p50_ns)} (raw/libc {gap:.2f})"
                + (
                    ""
                    if c.libc_flushes is None or c.syscall_flushes is None
                    else f"; device flushes {c.libc_flushes} vs {c.syscall_flushes}"
                )
                + f" for {c.syncs} calls each.",
                "A raw/libc ratio far above 1 means the libc call is interposed.",
                {
                    "primitive": c.primitive,
                    "libc_p50_ns": c.libc_p50_ns,
                    "syscall_p50_ns": c.syscall_p50_ns,
                    "raw_over_libc": round(gap, 2),
                    "libc_flushes": c.libc_flushes,
                    "syscall_flushes": c.syscall_flushes,
                    "syncs_per_side": c.syncs,
                    "syscall_number": c.syscall_number,
                    "machine": c.machine,
                },
                EATMYDATA_DOC,
            )
        )
    if ev.dirty_sweep is not None:
        s = ev.dirty_sweep
        bw = fmt_bandwidth(s.bandwidth_bytes_per_s)
        out.append(
            Finding(
                "sync-size-fit",
                INFO,
                s.primitive,
                f"{s.primitive} latency = {_us(s.flush_cost_ns)} flush cost + bytes at "
                f"{bw}" + (f" (R^2 {s.r_squared:.3f})" if s.r_squared is not None else "") + ".",
                "The flush cost is what every commit pays; the bandwidth, what its size adds.",
                {
                    "flush_cost_ns": s.flush_cost_ns,
                    "bandwidth_bytes_per_s": s.bandwidth_bytes_per_s,
                    "r_squared": s.r_squared,
                    "points": len(s.points),
                },
                "least-squares fit of the dirty-size sweep (numpy)",
            )
        )
    if ev.second_fd is not None:
        out.append(_second_fd_finding(ev.second_fd))
    return out


def _second_fd_finding(c: SecondFdCheck) -> Finding:
    same_ratio = _ratio(c.same_fd_flushes, c.syncs)
    second_ratio = _ratio(c.second_fd_flushes, c.syncs)
    evidence = {
        "primitive": c.primitive,
        "same_fd_p50_ns": c.same_fd_p50_ns,
        "second_fd_p50_ns": c.second_fd_p50_ns,
        "same_fd_flushes": c.same_fd_flushes,
        "second_fd_flushes": c.second_fd_flushes,
        "syncs_per_side": c.syncs,
    }
    counted = same_ratio is not None and second_ratio is not None
    ignored_by_counter = (
        same_ratio is not None
        and second_ratio is not None
        and same_ratio >= REACHED_FLUSH_RATIO
        and second_ratio < DROPPED_FLUSH_RATIO
    )
    # without counters: the second descriptor's sync did no real I/O while the first did
    ignored_by_time = (
        not counted
        and c.second_fd_p50_ns < REAL_IO_FLOOR_NS <= c.same_fd_p50_ns
        and c.second_fd_p50_ns < SECOND_FD_MIN_RATIO * c.same_fd_p50_ns
    )
    if ignored_by_counter or ignored_by_time:
        return Finding(
            "second-fd-sync-ignored",
            RISK,
            "path",
            f"{c.primitive} on a second descriptor of the written file took "
            f"{c.second_fd_p50_ns / 1e3:.1f} us against {c.same_fd_p50_ns / 1e3:.1f} us on "
            "the writing one: a sync flushes only what its own descriptor wrote.",
            "Sync on the descriptor that wrote (SQLite does), or fix the filesystem layer.",
            evidence,
            PG_TEST_FSYNC_DOC,
        )
    return Finding(
        "second-fd-sync-honoured",
        INFO,
        "path",
        f"{c.primitive} on a second descriptor costs {c.second_fd_p50_ns / 1e3:.1f} us against "
        f"{c.same_fd_p50_ns / 1e3:.1f} us on the writing one: it syncs the file, not the "
        "descriptor.",
        "Nothing to do.",
        evidence,
        PG_TEST_FSYNC_DOC,
    )


def _counter_findings(f: Facts) -> list[Finding]:
    """The counters as findings: per result, flushes on the disks holding the bytes (the
    least-flushed one), and what layers that hold nothing counted (never taken as proof).
    Counters are device-wide: other processes' I/O on the same disk adds to them."""
    host = f.host
    media = _media_disks(host)
    why = f.evidence.unavailable.get("flush_counters") if f.evidence else None
    if (
        why is None
        and host.os_name == "Linux"
        and media
        and not any(d.has_flush_counters for d in media)
    ):
        why = (
            f"no flush fields in /sys/block/{','.join(d.name for d in media)}/stat (kernel < 5.5?)"
        )
    out: list[Finding] = []
    media_names = {d.name for d in media}
    above: dict[str, dict[str, int | None]] = {}
    for r in f.results:
        for d in r.device_flushes:
            if host.target.layers and d.device not in media_names and d.flushes is not None:
                above.setdefault(r.name, {})[d.device] = d.flushes
    if above:
        out.append(
            Finding(
                "flushes-counted-above-media",
                INFO,
                "path",
                "Flushes counted on layers that hold no bytes ("
                + "; ".join(
                    f"{name}: " + ", ".join(f"{dev} {n}" for dev, n in devs.items())
                    for name, devs in above.items()
                )
                + f"): they show what the filesystem sent, not what reached stable media "
                f"({_chain(f)}).",
                "Only counts on the disk holding the bytes say whether flushes reach it.",
                {"per_result": above, "chain": _chain(f)},
                KERNEL_STAT_DOC,
            )
        )
    if why is not None:
        return out + [
            Finding(
                "flush-counters-unavailable",
                INFO,
                "path",
                f"Device flush counter not available: {why}.",
                "Without counters the verdict rests on weaker signals; Linux >= 5.5 has them.",
                {"reason": why},
                KERNEL_STAT_DOC,
            )
        ]
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
        + (
            f" for {v['syncs_issued']} syncs"
            if v["syncs_issued"]
            else f" ({v['flushes_per_op']}/op)"
        )
        for name, v in rows.items()
    )
    return out + [
        Finding(
            "device-flush-counters",
            INFO,
            "path",
            f"Device flushes counted on {', '.join(sorted(media_names)) or 'the disk'} around each "
            f"workload: {text}. The counters are device-wide: other processes' I/O on the same "
            "disk adds to them.",
            "On an honest path every sync sends at least one flush to a write-back disk.",
            {"per_result": rows, "disks": sorted(media_names)},
            KERNEL_STAT_DOC,
        )
    ]
