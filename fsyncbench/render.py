"""Reports as text (terminal) and Markdown (design documents), tables by tabulate."""

from __future__ import annotations

from collections.abc import Sequence

from tabulate import tabulate

from fsyncbench.model import Finding, Host, Report, Result, to_jsonable

_LEVEL_MARK = {"risk": "RISK", "warning": "WARN", "info": "info"}


def fmt_ns(ns: float | None) -> str:
    """A duration with a readable unit: ``850 ns``, ``41.8 us``, ``3.02 ms``, ``1.20 s``."""
    if ns is None:
        return "-"
    if ns < 1_000:
        return f"{ns:.0f} ns"
    if ns < 1_000_000:
        return f"{ns / 1e3:.3g} us" if ns < 100_000 else f"{ns / 1e3:.0f} us"
    if ns < 1_000_000_000:
        return f"{ns / 1e6:.3g} ms" if ns < 100_000_000 else f"{ns / 1e6:.0f} ms"
    return f"{ns / 1e9:.2f} s"


def _fmt_ci(ci: Sequence[float]) -> str:
    return f"[{fmt_ns(ci[0])}, {fmt_ns(ci[1])}]"


def _fmt_bytes(n: int | None) -> str:
    return "-" if n is None else f"{n / 2**30:.1f} GiB"


def results_table(report: Report, tablefmt: str) -> str:
    """One row per result: what was timed, the sync primitive, n, p50/p99 with 95 % CIs,
    p90, p99.9, max, ops/s, the path verdict and whether the pragma is durable."""
    verdicts = {v.subject: v for v in report.verdict.results}
    rows = []
    for r in report.results:
        s = r.summary
        v = verdicts.get(r.name)
        durable = "-" if v is None or v.config_durable is None else ("yes" if v.config_durable else "NO")
        count = f"{s.count}" + ("" if r.target_reached else f" (<{r.target_samples})")
        rows.append([
            r.kind, _result_label(r), r.primitive, count,
            fmt_ns(s.p50_ns), _fmt_ci(s.p50_ci_ns), fmt_ns(s.p90_ns),
            fmt_ns(s.p99_ns), _fmt_ci(s.p99_ci_ns), fmt_ns(s.p999_ns), fmt_ns(s.max_ns),
            f"{s.ops_per_s:,.0f}", v.path_verdict if v else "-", durable,
        ])
    headers = ["kind", "configuration", "sync primitive", "n", "p50", "p50 95% CI", "p90",
               "p99", "p99 95% CI", "p99.9", "max", "ops/s", "path verdict", "durable config"]
    return tabulate(rows, headers=headers, tablefmt=tablefmt, disable_numparse=True)


def _result_label(r: Result) -> str:
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
    signs = [s for s in (
        "cpuinfo hypervisor flag" if v.hypervisor_flag else "",
        f"DMI {v.dmi_vendor} {v.dmi_product or ''}".strip() if v.dmi_vendor else "",
        f"systemd-detect-virt {v.detect_virt}" if v.detect_virt else "",
        f"container {v.container}" if v.container else "",
        f"kernel {v.kernel_hint}" if v.kernel_hint else "",
        "kern.hv_vmm_present=1" if v.mac_vmm_present else "",
    ) if s]
    lines = [
        ("host", host.hostname),
        ("OS", f"{host.os_name} {host.os_release} ({host.machine})"),
        ("CPU", f"{host.cpu_brand or '?'}, {host.cpu_count_logical or '?'} logical / "
                f"{host.cpu_count_physical or '?'} physical cores"),
        ("memory", _fmt_bytes(host.memory_total_bytes)),
        ("Python", host.python_version),
        ("SQLite", f"{host.sqlite_version} ({host.sqlite_library or 'library path unknown'})"),
        ("target", t.path),
        ("filesystem", f"{m.fs_type} on {m.mount_point} from {m.source}" if m else "unknown"),
        ("mount options", f"{','.join(m.options)}; superblock {','.join(m.super_options) or '-'}"
         if m else "unknown"),
        ("device chain", " -> ".join(t.chain) if t.chain else "no block device"),
    ]
    for d in t.disks:
        lines.append((f"disk {d.name}", ", ".join([
            f"model {d.model or '?'}",
            f"rotational {_yn(d.rotational)}",
            f"write_cache {d.write_cache or '?'}",
            f"FUA {_yn(d.fua)}",
            f"flush counters {'yes' if d.has_flush_counters else 'no'}",
        ])))
    if t.darwin:
        lines.append(("diskutil", ", ".join(f"{k} {v}" for k, v in sorted(t.darwin.items()))))
    lines.append(("virtualized", virt + (f" ({'; '.join(signs)})" if signs else "")))
    if host.ld_preload:
        lines.append(("LD_PRELOAD", host.ld_preload))
    return lines


def render_host(host: Host) -> str:
    """The host record as aligned ``field value`` lines."""
    return tabulate(host_lines(host), tablefmt="plain") + "\n"


def _yn(value: bool | None) -> str:
    return "?" if value is None else ("yes" if value else "no")


def finding_line(f: Finding) -> str:
    """``[RISK] code (subject): message Advice: ...``"""
    return f"[{_LEVEL_MARK.get(f.level, f.level)}] {f.code} ({f.subject}): {f.message} Advice: {f.advice}"


def render_text(report: Report) -> str:
    """The terminal report: host summary, results table, verdict and findings."""
    out = [f"fsyncbench {report.tool_version} {report.kind} report, {report.created_utc}", ""]
    out.append(render_host(report.host).rstrip("\n"))
    out += ["", results_table(report, "simple"), ""]
    out.append(f"Path verdict: {report.verdict.path_verdict} (decided by {report.verdict.decided_by})")
    for f in report.verdict.findings:
        out.append("  " + finding_line(f))
    for note in report.notes:
        out.append(f"Note: {note}")
    return "\n".join(out) + "\n"


def render_markdown(report: Report) -> str:
    """The Markdown report: verdict first, then results, host and methodology."""
    v = report.verdict
    out = [
        f"# fsyncbench {report.kind}: {report.host.hostname}, {report.created_utc}",
        "",
        f"**Storage path verdict: `{v.path_verdict}`** (decided by `{v.decided_by}`).",
        "",
    ]
    for f in v.findings:
        out.append(f"- **{f.level}** `{f.code}` ({f.subject}): {f.message} *{f.advice}*")
    out += ["", "## Results", "", results_table(report, "github"), ""]
    out += ["## Host", "", tabulate(host_lines(report.host), headers=["field", "value"],
                                    tablefmt="github"), ""]
    out += ["## Method", "", methodology(report), ""]
    for note in report.notes:
        out.append(f"> Note: {note}")
    return "\n".join(out) + "\n"


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
    if any_r is not None:
        parts.append(
            f"Warmup operations are not counted; each configuration aimed at "
            f"{any_r.target_samples} samples within {any_r.budget_s:g} s. Percentiles use "
            f"numpy's linear method on the raw samples (kept in the JSON); 95 % confidence "
            f"intervals for p50 and p99 are {any_r.summary.ci_method} intervals"
            + (f" ({any_r.summary.ci_resamples} resamples)." if any_r.summary.ci_resamples else ".")
        )
    return " ".join(parts)


def crash_jsonable(outcome, model_call_ms: float) -> dict:
    """The crash experiment as JSON-ready data: the table rows, journal commit latency
    summary (ns) against the assumed model-call time, the hazards, and the raw matrix."""
    from fsyncbench import crash, stats

    m = outcome.matrix
    s = stats.summarize(m.journal_commit_ns)
    return {
        "table": [
            {"policy": r.label, "kills": len(r.kills),
             "kills_causing_duplicates": r.kills_causing_duplicates,
             "worst_duplicates": r.worst_duplicates,
             "mean_extra_tokens": round(r.mean_extra_tokens),
             "worst_extra_tokens": r.worst_extra_tokens,
             "worst_extra_pct": round(r.worst_extra_pct)}
            for r in m.rows
        ],
        "journal_commit": {
            "primitive_config": m.effective.label,
            "count": s.count, "p50_ns": s.p50_ns, "p99_ns": s.p99_ns,
            "p50_ci_ns": s.p50_ci_ns, "p99_ci_ns": s.p99_ci_ns,
            "model_call_ms_assumed": model_call_ms,
            "p99_share_of_model_call": s.p99_ns / (model_call_ms * 1e6),
        },
        "kills": m.kill_count,
        "elapsed_ns": m.elapsed_ns,
        "replay": to_jsonable(outcome.replay),
        "reorder": to_jsonable(outcome.reorder),
        "matrix": to_jsonable(m),
    }


def render_crash(outcome, model_call_ms: float) -> str:
    """The kill-matrix table, the journal's commit cost beside a model call, the hazards."""
    from fsyncbench import crash, stats

    m = outcome.matrix
    s = stats.summarize(m.journal_commit_ns)
    rows = crash.kill_matrix_rows(m)
    out = [
        f"Kill matrix: {m.kill_count} real SIGKILLs of a 10-step agent "
        f"(journal {m.effective.label}, SQLite {m.sqlite_version}), {m.elapsed_ns / 1e9:.2f} s",
        "",
        tabulate(rows, headers="keys", tablefmt="github", disable_numparse=True),
        "",
        f"Journal commit (BEGIN; INSERT step; COMMIT, {m.effective.label}): "
        f"p50 {fmt_ns(s.p50_ns)}, p99 {fmt_ns(s.p99_ns)} over {s.count} commits; "
        f"an assumed {model_call_ms:g} ms model call is {model_call_ms * 1e6 / s.p99_ns:,.0f}x "
        f"the p99 commit ({100 * s.p99_ns / (model_call_ms * 1e6):.2f} % overhead per step).",
        "",
        f"Replay of a completed run: {outcome.replay.replay_effects} effects, "
        f"{outcome.replay.replay_tokens} tokens, {outcome.replay.replay_steps_replayed} of "
        f"{outcome.replay.steps_recorded} steps answered from the journal.",
        f"Reordered code after a crash: "
        + (f"stopped: {outcome.reorder.message}" if outcome.reorder.stopped
           else "did NOT stop (non-determinism went undetected)"),
    ]
    return "\n".join(out) + "\n"
