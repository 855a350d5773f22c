"""What the device and an audit show of a report's syncs, in words and tables: the device
flush counters per result (a run report's own section; an audit's are among its evidence)
and the audit's evidence (libc against the raw system call, the dirty-size sweep, a sync on a
second descriptor, the syncs per commit under strace, the environment) with its verdict per
configuration.
"""

from __future__ import annotations

from fsyncbench.fmt import fmt_bandwidth, fmt_ns
from fsyncbench.judge import stack
from fsyncbench.model import Report
from fsyncbench.report.document import Cell, Paragraph, Preformatted, Section, Table
from fsyncbench.report.vocabulary import PROMISE_HEADER, promise_of, promise_tone, strength_word

__all__ = [
    "SYNC_TRACE_HEADERS",
    "counters_section",
    "counters_table",
    "evidence_lines",
    "evidence_section",
    "flush_counter_lines",
    "others_flushed_text",
    "sync_trace_rows",
]


def counters_table(report: Report) -> Table | None:
    """Device flushes per result: configuration, sync primitive, disk, syncs issued, device
    flushes, flushes per sync and per operation (None when no counter was read)."""
    target = report.host.target
    media = set(stack.media_devices(target)) if target.layers else None
    rows = []
    for r in report.results:
        for d in r.device_flushes:
            disk = (
                d.device if media is None or d.device in media else f"{d.device} (holds no bytes)"
            )
            # a primitive's syncs are counted (warmup ones too): its one figure is per sync;
            # per operation is for commits, whose syncs SQLite issues uncounted
            per_op = (
                "-"
                if d.flushes is None or not r.summary.count or r.syncs_issued is not None
                else f"{d.flushes / r.summary.count:.2f}"
            )
            per_sync = (
                "-"
                if d.flushes is None or not r.syncs_issued
                else f"{d.flushes / r.syncs_issued:.2f}"
            )
            rows.append(
                tuple(
                    Cell(c)
                    for c in (
                        r.name,
                        r.primitive,
                        disk,
                        "-" if r.syncs_issued is None else f"{r.syncs_issued}",
                        "n/a" if d.flushes is None else f"{d.flushes}",
                        per_sync,
                        per_op,
                    )
                )
            )
    if not rows:
        return None
    return Table(
        (
            "configuration",
            "sync primitive",
            "disk",
            "syncs issued",
            "device flushes",
            "flushes per sync",
            "flushes per operation",
        ),
        tuple(rows),
        frozenset({3, 4, 5, 6}),
    )


def others_flushed_text(report: Report) -> str:
    """What the configurations that issue no sync saw of the device's flushes: the
    counters are device-wide, so flushes during them came from elsewhere (other processes,
    the filesystem's own journal)."""
    quiet = [
        (r.name, sum(d.flushes for d in r.device_flushes if d.flushes is not None))
        for r in report.results
        if r.primitive == "none" and any(d.flushes is not None for d in r.device_flushes)
    ]
    if not quiet:
        return ""
    busy = [(n, f) for n, f in quiet if f]
    if not busy:
        return (
            f"The configurations that issue no sync ({', '.join(n for n, _ in quiet)}) saw "
            "no device flush: nothing else flushed the device while they ran."
        )
    return (
        "Other writers flushed the same device during the run: the configurations that "
        "issue no sync still saw "
        + ", ".join(f"{n} {f}" for n, f in busy)
        + " device flushes (other processes, or the filesystem's own journal), so the "
        "per-sync figures may be high by as much."
    )


def counters_section(report: Report) -> Section:
    """The device flush counters of a run report (an audit report has them in its
    evidence): the table, what an honest path shows, and whether others flushed too."""
    table = counters_table(report)
    if table is None or report.evidence is not None:
        return Section("counters", "Device flush counters", ())
    others = others_flushed_text(report)
    return Section(
        "counters",
        "Device flush counters",
        tuple(
            x
            for x in (
                Paragraph(
                    "Flushes the disk itself completed while each workload ran "
                    "(`/sys/block/<disk>/stat` fields 16-17). They count the whole device, "
                    "not fsyncbench alone. On an honest path every sync sends at least one "
                    "flush to a write-back disk; a commit's flushes per operation are its syncs "
                    "per commit as the device saw them."
                ),
                table,
                Paragraph(others) if others else None,
            )
            if x is not None
        ),
    )


def evidence_section(report: Report) -> Section:
    """An audit report's evidence (empty for a run report) and its verdict per subject."""
    lines = evidence_lines(report)
    if not lines:
        return Section("evidence", "Audit evidence", ())
    traces = sync_trace_rows(report)
    ev = report.evidence
    trace_table = (
        Table(
            SYNC_TRACE_HEADERS,
            tuple(tuple(Cell(c) for c in row) for row in traces),
            frozenset({2, 4, 5}),
            f"Syncs per commit (strace, {ev.sync_traces[0].commits} commits each):",
        )
        if traces and ev is not None
        else None
    )
    rows = tuple(
        (
            Cell(v.subject),
            Cell(v.path_verdict),
            Cell(strength_word(v)),
            Cell(v.decided_by),
            Cell(word := promise_of(report, v.subject), promise_tone(word)),
        )
        for v in report.verdict.results
    )
    return Section(
        "evidence",
        "Audit evidence",
        tuple(
            b
            for b in (
                Preformatted(tuple(lines[1:])),
                trace_table,
                Table(("subject", "path verdict", "strength", "decided by", PROMISE_HEADER), rows),
            )
            if b is not None
        ),
    )


def flush_counter_lines(report: Report) -> list[str]:
    """``name: N device flushes on disk for M syncs (R per sync)`` per result with counters."""
    out = []
    target = report.host.target
    media = set(stack.media_devices(target)) if target.layers else None
    for r in report.results:
        for d in r.device_flushes:
            if d.flushes is None:
                continue
            where = (
                d.device if media is None or d.device in media else f"{d.device} (holds no bytes)"
            )
            per = (
                f" for {r.syncs_issued} syncs ({d.flushes / r.syncs_issued:.2f} per sync)"
                if r.syncs_issued
                else f" over {r.summary.count} operations ({d.flushes / max(r.summary.count, 1):.2f} each)"
            )
            writes = "" if d.writes is None else f", {d.writes} writes"
            out.append(f"{r.name}: {d.flushes} device flushes{writes} on {where}{per}")
    return out


def _fmt_size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"


def evidence_lines(report: Report) -> list[str]:
    """The audit's evidence as text lines (empty when the report has none): device flush
    counters, libc vs raw syscall, the dirty-size sweep fit, the second-descriptor check,
    environment facts, and what was not collected (syncs per commit per configuration:
    :func:`sync_trace_rows`)."""
    ev = report.evidence
    if ev is None:
        return []
    out = ["Evidence"]
    counters = flush_counter_lines(report)
    if counters:
        out.append("  Device flush counters (/sys/block/<disk>/stat fields 16-17):")
        out += [f"    {c}" for c in counters]
    for c in ev.syscall_comparisons:
        gap = c.syscall_p50_ns / max(c.libc_p50_ns, 1.0)
        flushes = (
            ""
            if c.libc_flushes is None and c.syscall_flushes is None
            else f"; device flushes {c.libc_flushes} vs {c.syscall_flushes}"
        )
        out.append(
            f"  libc vs raw syscall: {c.primitive} libc p50 {fmt_ns(c.libc_p50_ns)}, "
            f"syscall({c.syscall_number}) on {c.machine} p50 {fmt_ns(c.syscall_p50_ns)} "
            f"(raw/libc {gap:.2f}) over {c.syncs} calls each{flushes}"
        )
    if ev.dirty_sweep is not None:
        s = ev.dirty_sweep
        sizes = sorted({p.dirty_bytes for p in s.points})
        span = (
            f" ({_fmt_size(sizes[0])} ... {_fmt_size(sizes[-1])}, {len(s.points)} syncs)"
            if sizes
            else ""
        )
        r2 = "" if s.r_squared is None else f", R^2 {s.r_squared:.3f}"
        out.append(
            f"  Dirty-size sweep{span}: {s.primitive} latency ~ {fmt_ns(s.flush_cost_ns)} "
            f"flush cost + bytes at {fmt_bandwidth(s.bandwidth_bytes_per_s)}{r2}"
        )
    if ev.second_fd is not None:
        fd = ev.second_fd
        flushes = (
            ""
            if fd.same_fd_flushes is None
            else f"; device flushes {fd.same_fd_flushes} vs {fd.second_fd_flushes}"
        )
        out.append(
            f"  Second descriptor: {fd.primitive} on the writing fd p50 {fmt_ns(fd.same_fd_p50_ns)}, "
            f"on a second fd p50 {fmt_ns(fd.second_fd_p50_ns)} over {fd.syncs} calls each{flushes}"
        )
    env = ev.environment
    out.append(
        "  Environment: LD_PRELOAD "
        + (report.host.ld_preload or "-")
        + "; /etc/ld.so.preload "
        + (", ".join(env.ld_so_preload) or "-")
        + "; preloaded libraries mapped "
        + (", ".join(env.preloaded_libraries) or "-")
        + (f"; zfs sync={env.zfs_sync}" if env.zfs_sync else "")
        + f"; strace {env.strace or 'not found'}"
    )
    for name, why in ev.unavailable.items():
        out.append(f"  Not collected: {name}: {why}")
    return out


#: The columns of :func:`sync_trace_rows`.
SYNC_TRACE_HEADERS = (
    "config",
    "LD_PRELOAD",
    "S",
    "syscalls",
    "commit p50",
    "device flushes/commit",
)


def sync_trace_rows(report: Report) -> list[list[str]]:
    """The audit's syscall traces, one row per configuration (:data:`SYNC_TRACE_HEADERS`):
    syncs per commit S as strace counted them, the syscalls by name, the commit's p50 and
    the device flushes per commit (empty when the audit traced nothing)."""
    ev = report.evidence
    if ev is None or not ev.sync_traces:
        return []
    per_op = {r.name: r for r in report.results if r.kind == "commit"}
    rows = []
    for t in ev.sync_traces:
        r = per_op.get(t.pragmas.label)
        per_commit: float | None = None
        if r is not None and r.device_flushes:
            known = [d.flushes for d in r.device_flushes if d.flushes is not None]
            if len(known) == len(r.device_flushes):
                per_commit = min(known) / max(r.summary.count, 1)
        rows.append(
            [
                t.pragmas.label,
                t.ld_preload or "-",
                f"{t.syncs_per_commit:g}",
                ", ".join(f"{k} {v}" for k, v in t.syscalls.items()) or "-",
                "-" if r is None else fmt_ns(r.summary.p50_ns),
                "-" if per_commit is None else f"{per_commit:.2f}",
            ]
        )
    return rows
