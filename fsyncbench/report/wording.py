"""How a report's facts are said in words: host lines, verdict phrases, findings, the
method paragraph, interval caveats, device flush counters and audit evidence.

Shared by the report description (:mod:`fsyncbench.report.describe`, run and audit
reports in text, Markdown and HTML) and the other renderers (:mod:`fsyncbench.report.tables`:
compare, crash, fleet, host), so a fact reads the same wherever it appears.
"""

from __future__ import annotations

from collections.abc import Sequence

from fsyncbench.fmt import fmt_bandwidth, fmt_ns, fmt_precision
from fsyncbench.judge import stack
from fsyncbench.model import BlockDevice, Finding, Host, Report, Result
from fsyncbench.report.vocabulary import DURABLE, NOT_DURABLE, NOT_STATED, promise_of

#: Fewest samples for which p99.9 is printed: with fewer it is within a sample or two of the
#: maximum (the 99.9th percentile needs 1,000 samples to have one above it).
P999_MIN_SAMPLES = 1000

_LEVEL_MARK = {"risk": "RISK", "warning": "WARN", "info": "info"}


def _fmt_bytes(n: int | None) -> str:
    return "-" if n is None else f"{n / 2**30:.1f} GiB"


def p99_precision(r: Result) -> str:
    """``+-4.2%`` (or ``+25.1/-16.3%`` when lopsided): how far p99's 95 % interval reaches
    from p99, rounded up (:func:`fsyncbench.fmt.fmt_precision`); ``(not met)`` when
    the run's CI target was not reached by its own interval, ``(4 runs)`` when earlier runs
    widened the interval (the target applies to one run's samples; more of them cannot
    narrow the spread between runs)."""
    s = r.summary
    text = fmt_precision(s.p99_ns, s.p99_ci_ns) if s.p99_ci_ns else "none"
    runs = s.p99_interval.runs if s.p99_interval is not None else 1
    marks = ["not met"] if r.ci_target_met is False else []
    if runs > 1:
        marks.append(f"{runs} runs")
    return text + (f" ({', '.join(marks)})" if marks else "")


def floor_line(report: Report) -> str:
    """The tool's floor measurements and what "at the tool's floor" means ("" if none)."""
    from fsyncbench.measure import stats

    if not report.floors:
        return ""
    parts = ", ".join(f"{f.name} {fmt_ns(f.summary.p50_ns)}" for f in report.floors)
    return (
        f"Tool floor (p50): {parts}. A result within {stats.FLOOR_FACTOR:g}x of the floor "
        'for its kind is marked "at the tool\'s floor": it measures Python and SQLite, '
        "not the storage."
    )


def result_label(r: Result) -> str:
    if r.kind != "commit" or r.requested is None:
        return r.name
    label = r.name
    if r.effective and r.effective != r.requested:
        label += f" (effective {r.effective.label})"
    return label


def host_lines(host: Host) -> list[tuple[str, str]]:
    """(field, value) pairs summarising the host record."""
    t = host.target
    m = t.mount
    v = host.virtualization
    virt = "yes" if v.virtualized else ("no" if v.virtualized is False else "unknown")
    signs = [
        s
        for s in (
            "cpuinfo hypervisor flag" if v.hypervisor_flag else "",
            f"DMI {v.dmi_vendor} {v.dmi_product or ''}".strip() if v.dmi_vendor else "",
            f"systemd-detect-virt {v.detect_virt}" if v.detect_virt else "",
            f"container {v.container}"
            + (f" ({v.container_evidence})" if v.container_evidence else "")
            if v.container
            else "",
            f"kernel {v.kernel_hint}" if v.kernel_hint else "",
            "kern.hv_vmm_present=1" if v.mac_vmm_present else "",
            f"emulated disk {v.virtual_disk_hint} (inferred from the model string)"
            if v.virtual_disk_hint
            else "",
        )
        if s
    ]
    lines = [
        ("hostname", host.hostname),
        ("OS", f"{host.os_name} {host.os_release} ({host.machine})"),
        (
            "CPU",
            f"{host.cpu_brand or '?'}, {host.cpu_count_logical or '?'} logical / "
            f"{host.cpu_count_physical or '?'} physical cores",
        ),
        ("memory", _fmt_bytes(host.memory_total_bytes)),
        ("Python", host.python_version),
        ("SQLite", f"{host.sqlite_version} ({host.sqlite_library or 'library path unknown'})"),
        ("target", t.path),
        ("filesystem", f"{m.fs_type} on {m.mount_point} from {m.source}" if m else "unknown"),
        *(
            [("firmlink", f"{t.path} is on {m.mount_point} via firmlink {t.firmlink}")]
            if m and t.firmlink
            else []
        ),
        (
            "mount options",
            f"{','.join(m.options)}; superblock {','.join(m.super_options) or '-'}"
            if m
            else "unknown",
        ),
        ("storage stack", stack.chain_text(t)),
        ("device chain", " -> ".join(t.chain) if t.chain else "no block device"),
    ]
    for layer in t.layers:
        lines.append(
            (
                "layer " + ". " * layer.depth + stack.label(layer),
                f"{layer.kind}, flush {layer.flush}" + (f"; {layer.note}" if layer.note else ""),
            )
        )
    if t.declared:
        lines.append(("user-declared", ", ".join(t.declared) + " (user-declared, not verified)"))
    for d in t.disks:
        lines.append(
            (
                f"disk {d.name}",
                ", ".join(
                    [
                        f"model {d.model or '?'}" + (f" (vendor {d.vendor})" if d.vendor else ""),
                        f"transport {d.transport or '?'}",
                        f"rotational {_yn(d.rotational)}",
                        f"write_cache {d.write_cache or '?'}",
                        f"FUA {_yn(d.fua)}",
                        f"flush counters {'yes' if d.has_flush_counters else 'no'}",
                        *_windows_disk_facts(d),
                        *_controller_facts(d),
                    ]
                ),
            )
        )
    if t.darwin:
        lines.append(("diskutil", ", ".join(f"{k} {v}" for k, v in sorted(t.darwin.items()))))
    lines.append(("virtualized", virt + (f" ({'; '.join(signs)})" if signs else "")))
    if v.container_evidence and not v.container:
        lines.append(("container", f"none taken ({v.container_evidence})"))
    if host.ld_preload:
        lines.append(("LD_PRELOAD", host.ld_preload))
    return lines


def _windows_disk_facts(d: BlockDevice) -> list[str]:
    """What only Windows reports of a disk, where it did (nothing for other systems)."""
    out = []
    if d.flush_supported is not None:
        out.append(f"accepts a cache flush {_yn(d.flush_supported)}")
    if d.power_protection:
        out.append(f"write cache power-protected per {'+'.join(d.power_protection)}")
    if d.removable is not None:
        out.append(f"removable {_yn(d.removable)}")
    return out


def _controller_facts(d: BlockDevice) -> list[str]:
    """The RAID controller a disk is a volume of, what its tool read and what it did not
    (nothing for a disk without one)."""
    c = d.controller
    if c is None:
        return []
    where = ", ".join(x for x in (c.driver, c.host) if x)
    out = [f"volume of {c.family} ({where})"]
    if not c.has_cache:
        return out
    read = [
        f"controller cache {c.write_cache}" if c.write_cache else "",
        f"backup power {c.protection}"
        + (f" ({c.protection_detail})" if c.protection_detail else "")
        if c.protection
        else "",
        f"drive caches {c.drive_cache}" if c.drive_cache else "",
    ]
    out += [x for x in read if x]
    if c.read_by:
        out.append(f"read with {c.read_by}")
    if c.note:
        out.append(c.note)
    if c.settles and not c.read_by:
        out.append(f"settle with {c.settles}")
    return out


def _yn(value: bool | None) -> str:
    return "?" if value is None else ("yes" if value else "no")


def stance_tag(f: Finding) -> str:
    """``[decides: no_flush, measured]``, ``[disagrees: honest_flush, inferred]``; "" for
    findings that are not path signals."""
    if not f.stance:
        return ""
    return f" [{f.stance}: {f.points_to or '?'}, {f.strength or '?'}]"


def finding_line(f: Finding) -> str:
    """``[RISK] code (subject) [stance: verdict, strength]: message Advice: ...``"""
    return (
        f"[{_LEVEL_MARK.get(f.level, f.level)}] {f.code} ({f.subject}){stance_tag(f)}: "
        f"{f.message} Advice: {f.advice}"
    )


def durability_line(report: Report) -> str:
    """Which configurations promise power-loss durability of each commit, which do not."""
    words = {v.subject: promise_of(report, v.subject) for v in report.verdict.results}
    yes = [name for name, w in words.items() if w == DURABLE]
    no = [name for name, w in words.items() if w == NOT_DURABLE]
    open_ = [name for name, w in words.items() if w == NOT_STATED]
    if not yes and not no and not open_:
        return ""
    return (
        f"Pragmas that promise a durable commit: {', '.join(yes) or 'none'}. "
        f"Not durable by design: {', '.join(no) or 'none'}."
        + (
            f" Durability not stated by SQLite's documentation: {', '.join(open_)}."
            if open_
            else ""
        )
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


def methodology(report: Report) -> str:
    """A paragraph saying what was timed and how the statistics were made."""
    commits = [r for r in report.results if r.kind == "commit"]
    any_r = report.results[0] if report.results else None
    parts = []
    if commits:
        parts.append(
            "Each commit is one SQLite transaction (BEGIN; INSERT of one row into "
            "`steps(run_id, seq, name, input_hash, output)`; COMMIT) on a fresh database "
            f"file per configuration, with a {commits[0].payload_bytes}-byte JSON output; "
            "`time.perf_counter_ns()` wraps the transaction only."
        )
    if any(r.kind in ("flush", "write") for r in report.results):
        parts.append(
            "Raw primitives overwrite 4 KiB at offset 0 of one preallocated file and then "
            "call the named sync primitive (queue depth 1); `none` is the write alone."
        )
    rounds = max((len(r.summary.round_p99_ns) for r in report.results), default=0)
    if any_r is not None and any_r.ci_target_pct is not None and rounds > 1:
        counts = sorted({r.summary.count for r in report.results})
        met = sum(1 for r in report.results if r.ci_target_met)
        parts.append(
            f"Warmup operations are not counted. The run had {rounds} rounds, one after the "
            "other, each a fresh process with fresh files that sampled every configuration "
            "for its share of the time budget, round-robin in short slices with the "
            "filesystem synced (untimed) between slices: the rounds are the replicates the "
            "run-to-run spread is read from, so none stops early. The p99 precision target "
            f"(+-{any_r.ci_target_pct:g} %) was checked once over all rounds and met by {met} "
            f"of {len(report.results)} configurations (only an interval on at least "
            f"{_min_target_df()} degrees of freedom can meet it). They got "
            f"{counts[0]}-{counts[-1]} samples."
        )
    elif any_r is not None and any_r.ci_target_pct is not None:
        from fsyncbench.measure import plan
        from fsyncbench.measure import timing as measure

        counts = sorted({r.summary.count for r in report.results})
        parts.append(
            "Warmup operations are not counted. Each configuration was sampled until the 95 % "
            f"interval of its p99 (below) lay within +-{any_r.ci_target_pct:g} % of p99 on at "
            f"least {_min_target_df()} degrees of freedom, "
            f"checked outside the timed region after every slice and met at "
            f"{measure.CONFIRM_CHECKS} checks in a row, with at least {any_r.target_samples} "
            f"samples from at least {plan.MIN_PHASES} slices, or its time budget ran out. "
            "Configurations were measured round-robin in short slices, so each one's samples "
            "spread over the whole run, with the filesystem synced (untimed) between slices; "
            "time one did not need went to those still short of the target. "
            f"They got {counts[0]}-{counts[-1]} samples."
        )
    elif any_r is not None:
        counts = sorted({r.summary.count for r in report.results})
        got = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
        parts.append(
            f"Warmup operations are not counted; each configuration aimed at "
            f"{any_r.target_samples} samples within {any_r.budget_s:g} s and got {got}."
        )
    if any_r is not None:
        parts.append(
            "Percentiles use numpy's linear method on the raw samples (kept in the JSON). "
            + interval_method_text(report.results)
        )
    if report.results:
        parts.append(
            "ops/s is 1e9 / mean operation time, the rate of one writer at queue depth 1; "
            f"p99.9 is shown only from {P999_MIN_SAMPLES:,} samples on (below that it is "
            "little more than the maximum)."
        )
    if report.floors:
        parts.append(floor_line(report))
    return " ".join(parts)


#: What each "none (...)" of an interval cell means, in the words :func:`fsyncbench.fmt.short_reason` gives it.
NO_INTERVAL_MEANS = {
    "n too small": "too few samples for an interval of that percentile",
    "tail in too few slices": "the slowest 1 % came from one or two slices of the run, so "
    "how much it varies cannot be estimated",
    "tail in too few rounds": "the slowest 1 % came from one or two of the rounds, so how "
    "much it varies from round to round cannot be estimated",
    "slices disagree": "the slices' own p99s differ so much that an interval would reach "
    "beyond the samples measured",
    "rounds disagree": "the rounds' own p99s differ so much that an interval would reach "
    "beyond the samples measured",
}


def no_interval_legend(results: Sequence[Result], skip: Sequence[str] = ()) -> str:
    """One line saying what each "none (...)" among ``results``' p50 and p99 intervals
    means ("" when there is none), so a reader of the table is not left to guess; the
    reasons in ``skip`` (e.g. the self-explaining "n too small") left out."""
    from fsyncbench.fmt import short_reason

    seen = dict.fromkeys(
        short_reason(iv)
        for r in results
        for iv in (r.summary.p50_interval, r.summary.p99_interval)
        if iv is not None and iv.bounds is None
    )
    said = [
        f"none ({k}): {NO_INTERVAL_MEANS[k]}"
        for k in seen
        if k in NO_INTERVAL_MEANS and k not in skip
    ]
    return ("No interval: " + "; ".join(said) + ".") if said else ""


def interval_caveat(results: Sequence[Result]) -> str:
    """One line for the terminal report on what its intervals cannot see ("" when they
    rest on several rounds): schema 1 intervals assume independent samples; one round
    cannot see run-to-run variation."""
    from fsyncbench.measure import intervals

    methods = {r.summary.ci_method for r in results}
    if not methods:
        return ""
    if not methods & {intervals.METHOD_BLOCKS, intervals.METHOD_ROUNDS}:
        return (
            "Intervals: this report (schema 1) has intervals that assume independent "
            "samples; samples close in time move together, so they are narrower than the "
            "spread from run to run."
        )
    runs = _runs_behind(results)
    if runs:
        widened = sum(1 for r in results if _widened(r))
        return (
            f"Intervals: those of {widened} of {len(results)} configurations include the spread "
            f"between this run and {_count_range(runs)} earlier runs of the same measurement "
            "(same host, directory, storage and workload; their p99 is shown), so they aim "
            "to cover the figure at another time, not only during this run; from that few "
            "runs the spread itself is known only roughly."
        )
    if not any(r.slice_counts for r in results):
        return ""
    if not any(r.summary.round_p99_ns for r in results):
        return (
            "Intervals: one round and this run alone: they rest on its slices and cannot "
            "see how much a separate run (new files, another process, later) would differ "
            "(`fsyncbench run` measures in 8 rounds by default)."
        )
    return (
        f"Intervals: this run alone (fewer than {intervals.MIN_EARLIER_RUNS} earlier runs of the "
        "same measurement were read, or none of its intervals could take them in): its "
        "rounds are seconds apart, and a run at another "
        f"time can differ by more than they show. Once {intervals.MIN_EARLIER_RUNS} earlier runs "
        "are saved in the --report-dir (or --history DIR), intervals include the spread "
        "between runs."
    )


def _widened(r: Result) -> bool:
    """Whether earlier runs entered an interval of ``r`` (p50 or p99)."""
    s = r.summary
    return any(iv is not None and iv.runs > 1 for iv in (s.p50_interval, s.p99_interval))


def _runs_behind(results: Sequence[Result]) -> list[int]:
    """Sorted earlier-run counts of the results whose intervals earlier runs entered."""
    return sorted(len(r.earlier) for r in results if _widened(r))


def _count_range(counts: Sequence[int]) -> str:
    """``5`` or ``5-9``: a count, or the range of counts, of sorted ``counts``; "its" for
    none (a report whose raw samples were left out)."""
    if not counts:
        return "its"
    return str(counts[0]) if counts[0] == counts[-1] else f"{counts[0]}-{counts[-1]}"


def _min_target_df() -> str:
    from fsyncbench.measure import intervals

    return f"{intervals.MIN_TARGET_DF:g}"


def interval_method_text(results: Sequence[Result]) -> str:
    """How the report's 95 % intervals were made, and what they do not cover."""
    from fsyncbench.measure import intervals

    methods = {r.summary.ci_method for r in results}
    if methods & {intervals.METHOD_BLOCKS, intervals.METHOD_ROUNDS}:
        slices = sorted(len(r.slice_counts) for r in results if r.slice_counts)
        rounds = max((len(r.summary.round_p99_ns) for r in results), default=0)
        by_rounds = sum(
            1
            for r in results
            for iv in (r.summary.p50_interval, r.summary.p99_interval)
            if iv is not None and iv.method == intervals.METHOD_ROUNDS and iv.bounds is not None
        )
        shown = sum(
            1
            for r in results
            for iv in (r.summary.p50_interval, r.summary.p99_interval)
            if iv is not None and iv.bounds is not None
        )
        text = (
            "Samples close in time move together (stalls and write-back come in bursts), so "
            "the 95 % intervals of p50 and p99 rest on blocks of samples, not on single "
            f"samples: each configuration's {_count_range(slices)} slices, a rotation of the "
            "others apart"
            + (f", and its {rounds} rounds" if rounds else "")
            + ". An interval is the delete-a-block jackknife of log(percentile) (Kuensch 1989; "
            "Busing et al. 1999), over the slices, or over the rounds where they disagree "
            f"more ({by_rounds} of the {shown} intervals given here), with Student's t on "
            "the effective number of blocks holding samples at or beyond the percentile, "
            "less one (Kish's effective count; for a p50 about blocks - 1, for a p99 often "
            "fewer): as wide as the blocks disagree, wider up than down, and never narrower "
            "than one tick of the clock. No interval is given from fewer than "
            f"{intervals.MIN_BLOCKS} slices, fewer than {intervals.MIN_TAIL_SAMPLES} samples beyond "
            'the percentile, or a tail held by one block ("none").'
        )
        if rounds:
            text += (
                f" Each of the {rounds} rounds had fresh files, its own process and warmup; "
                "each round's p99 is shown."
            )
        else:
            text += (
                " One round: variation between separate runs (new files, another process, "
                "minutes later) is seen only as far as it shows within this run; "
                "`fsyncbench run --rounds N` repeats the measurement to expose it."
            )
        runs = _runs_behind(results)
        if runs:
            text += (
                f" Each interval then includes the spread between this run and the "
                f"{_count_range(runs)} earlier runs of the same measurement recorded with it "
                f"(same host, directory, storage and workload; the last {intervals.MAX_EARLIER_RUNS}): "
                "the interval is the estimate x exp(+-t x sd), sd the standard deviation of "
                "the runs' log(percentile), this run's included, and t on runs - 1 degrees "
                "of freedom, as pyperf spreads over its worker processes; never narrower "
                "than this run's own interval, and given where this run alone has none. It "
                "aims to cover the figure at another time, not only during this run."
            )
        else:
            text += (
                f" Fewer than {intervals.MIN_EARLIER_RUNS} earlier runs of the same measurement "
                "were read (from the report directory, or --history DIR), so a run at another "
                "time (a busier host, another hour) may differ by more than the intervals show."
            )
        return text
    if methods:
        return (
            "The intervals in this report (" + " and ".join(sorted(methods)) + ", report "
            "schema 1) assume independent samples; samples close in time move together, "
            "so they are narrower than the spread from run to run. Re-run with a current "
            "fsyncbench for intervals that allow for it."
        )
    return ""


# --------------------------------------------------------------------------- audit evidence


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
