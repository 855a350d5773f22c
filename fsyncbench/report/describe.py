"""A run or audit report as one :class:`~fsyncbench.report.document.Document`: the answer
first, then the numbers, the findings, the evidence, the host, the method and a glossary.

Text, Markdown and HTML are all laid out from this one description
(:func:`fsyncbench.report.render`), so they carry the same facts in the same words.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from fsyncbench.fmt import fmt_bandwidth, fmt_interval, fmt_ns
from fsyncbench.judge import stack
from fsyncbench.model import UNVERIFIABLE, Finding, Report
from fsyncbench.report.answer import (
    DEFAULT_MODEL_CALL_MS,
    PAIRED,
    BottomLine,
    Choice,
    bottom_line,
)
from fsyncbench.report.disturbed import machine_paragraph, machine_section
from fsyncbench.report.document import (
    Block,
    Bullets,
    Cell,
    Document,
    Figure,
    Paragraph,
    Preformatted,
    Section,
    Table,
)
from fsyncbench.report.headtohead import head_to_head_sections, in_answer
from fsyncbench.report.latency import compact_table, results_table
from fsyncbench.report.loss import run_report_sections
from fsyncbench.report.vocabulary import (
    PROMISE_HEADER,
    STRENGTH_MEANING,
    VERDICT_MEANING,
    promise_of,
    promise_tone,
    strength_word,
    verdict_phrase,
)
from fsyncbench.report.wording import (
    SYNC_TRACE_HEADERS,
    evidence_lines,
    floor_line,
    host_lines,
    interval_caveat,
    methodology,
    no_interval_legend,
    stance_tag,
    sync_trace_rows,
)
from fsyncbench.report.writers import writers_sections

_LEVEL_ORDER = {"risk": 0, "warning": 1, "info": 2}
_LEVEL_WORD = {"risk": "RISK", "warning": "Warning", "info": "Info"}

#: The words a reader new to storage needs, in the order they meet them.
GLOSSARY = (
    (
        "commit",
        "one SQLite transaction that records one step of a journal (BEGIN; INSERT; "
        "COMMIT). Its latency is what a workflow pays per durable step.",
    ),
    (
        "sync, flush",
        "asking the operating system (fsync, fdatasync, F_FULLFSYNC on macOS) and "
        "then the disk to put written data on stable media before returning. A "
        "flush is *honoured* when it really does; some layers (VMs, tmpfs, "
        "eatmydata, drives with a volatile write-back cache) return early.",
    ),
    ("durable", "a commit that survives a power cut once it has returned."),
    (
        "journal_mode, synchronous (pragmas)",
        "SQLite settings that decide how a commit is "
        "written and how many syncs it waits for; "
        "e.g. wal/full is journal_mode=WAL with "
        "synchronous=FULL.",
    ),
    (
        "p50, p99",
        "the median and the 99th percentile of commit latency: half of the commits "
        "are faster than p50, 99 in 100 faster than p99 (the tail a busy system "
        "feels).",
    ),
    (
        "95 % interval",
        "the range that holds this measurement's true percentile 95 times in 100, as far "
        "as this run's slices and rounds (and, once saved, the earlier runs of the same "
        "measurement) show how much it moves; a run an hour later on a busy or shared host "
        'can still land outside it. "none" where the data cannot support one.',
    ),
    ("ops/s, commits/s", "1e9 / mean operation time: what one writer achieves back to back."),
    (
        "path verdict",
        "whether syncs on this storage path reach stable media: honest_flush, "
        "volatile_cache, no_flush or unverifiable; with how it is known: "
        "proven (a power cut), measured (counters, traces), inferred (identity, "
        "timings).",
    ),
    (
        "tool's floor",
        "the cost of the timing loop, Python and SQLite without storage; a figure "
        "near it measures the tool, not the disk.",
    ),
)


def describe(
    report: Report, model_call_ms: float = DEFAULT_MODEL_CALL_MS, vs: tuple[str, ...] = ()
) -> Document:
    """The :class:`Document` of a run or audit ``report``; ``model_call_ms`` (> 0) is the
    unit a durable commit's p99 is set against in the bottom line; ``vs`` the two
    configurations set head to head (:func:`fsyncbench.report.headtohead.head_to_head_sections`).
    Raises FsyncbenchError for ``vs`` that are not two measured configurations."""
    title, subtitle = heading(report)
    machine = machine_paragraph(report)
    answer = in_answer(answer_section(report, bottom_line(report, model_call_ms)), report, vs)
    if machine is not None:  # the answer's first words: whether the machine was quiet
        answer = Section(answer.key, answer.title, (machine, *answer.blocks))
    sections = [
        answer,
        results_section(report),
        *head_to_head_sections(report, vs),
        machine_section(report),
        statistics_section(report),
        *run_report_sections(report),
        *writers_sections(report),
        findings_section(report),
        counters_section(report),
        evidence_section(report),
        Section("host", "Host and storage stack", (host_table(report),)),
        method_section(report),
        Section(
            "glossary",
            "Glossary",
            (Bullets(tuple((Paragraph(text, lead=term), ()) for term, text in GLOSSARY)),),
        ),
    ]
    return Document(title, subtitle, tuple(s for s in sections if s.blocks))


def heading(report: Report) -> tuple[str, str]:
    """A report's title (kind, host, time) and subtitle (tool, schema, target)."""
    return (
        f"fsyncbench {report.kind}: {report.host.hostname}, {report.created_utc}",
        f"fsyncbench {report.tool_version}, report schema {report.schema_version}, "
        f"target {report.host.target.path}",
    )


# --------------------------------------------------------------------------- the answer


def _figures(c: Choice, unit: str = "commits/s") -> str:
    interval = fmt_interval(c.p99_ci_ns) if c.p99_ci_ns else "(no interval)"
    text = f"p50 {fmt_ns(c.p50_ns)}, p99 {fmt_ns(c.p99_ns)} {interval}, {c.ops_per_s:,.0f} {unit}"
    return text + (" (at the tool's floor)" if c.at_floor else "")


def _ties(c: Choice, brief: bool = False) -> str:
    text = ""
    if c.ties:
        verb = "is" if len(c.ties) == 1 else "are"
        held = "holds 1" if c.tie_basis == PAIRED else "overlap"
        text += f" {', '.join(c.ties)} {verb} not measurably slower at p50 ({c.tie_basis} {held})."
    if c.untold:
        text += (
            f" Cannot tell whether {', '.join(c.untold)} "
            f"{'is' if len(c.untold) == 1 else 'are'} slower at p50: "
            + (
                f"{c.name}'s p50 has no interval"
                if c.p50_ci_ns is None
                else f"{'its' if len(c.untold) == 1 else 'their'} p50 has no interval"
            )
            + (
                " (more samples would settle it)."
                if brief
                else " (more samples would settle it: a longer --run-budget-seconds, or fewer "
                "configurations with --journal-mode/--synchronous)."
            )
        )
    return text


def choice_text(report: Report, b: BottomLine, brief: bool = False) -> Paragraph:
    """What to choose, in one paragraph; ``brief`` (the terminal summary): what would settle
    a "cannot tell" is said in a few words, the full report says how."""
    d = b.durable
    if d is None and not any(r.kind == "commit" for r in report.results):
        return Paragraph(
            "no commit configuration was measured here, only the raw sync primitives below; "
            "`fsyncbench run DIR` measures the commits too.",
            lead="Choose:",
            tone="caution",
        )
    if d is None:
        return Paragraph(
            "no configuration measured here promises a durable commit (each syncs too little "
            "or never); measure one that does, e.g. `fsyncbench run DIR --journal-mode wal "
            "--synchronous full`.",
            lead="Choose:",
            tone="caution",
        )
    text = (
        f"{d.name}: {_figures(d)}. It is the fastest configuration measured here whose "
        f"settings promise a durable commit (it waits for {d.primitive}).{_ties(d, brief)}"
    )
    if report.kind == "audit":
        text += (
            " These figures are the audit's short look at latency (a few seconds per "
            "configuration, taken to judge the storage path, not to size it); for the cost "
            "of a commit to quote, measure it with `fsyncbench run DIR`."
        )
    if d.at_floor:
        text += (
            " Its figures lie at the tool's floor: they measure Python and SQLite, not "
            "the storage, which is implausible for a commit that waits for a disk."
        )
    if b.durable_here is False:
        return Paragraph(
            f"nothing measured here is durable on this storage: syncs do not reach stable "
            f"media (path verdict {b.path_verdict}). Were the storage fixed, the choice "
            f"would be {text[0].lower()}{text[1:]}",
            lead="Choose:",
            tone="bad",
        )
    return Paragraph(text, lead="Choose:", tone="good" if b.durable_here else "")


def cost_text(b: BottomLine, brief: bool = False) -> Paragraph | None:
    """What durability costs: against the fastest non-durable configuration and against a
    model call; ``brief``: a missing p50 interval is named in a few words."""
    d, o = b.durable, b.fastest_other
    if d is None:
        return None
    if b.durable_here is False:
        return Paragraph(
            f"none can be measured here: syncs do not reach stable media (path verdict "
            f"{b.path_verdict}), so {d.name}'s p50 of {fmt_ns(d.p50_ns)} is not what a durable "
            "commit costs. Measure the storage the journal will live on.",
            lead="Cost of durability:",
        )
    parts = []
    if o is not None and b.cost_p50_ns is not None:
        ratio = "" if b.cost_ratio is None else f" ({b.cost_ratio:.3g}x)"
        if b.cost_apart is False:
            held = "holds 1" if b.cost_basis == PAIRED else "overlap"
            parts.append(
                f"{d.name} and {o.name}, the fastest configuration that does not "
                f"promise durability ({_figures(o)}), cannot be told apart at p50 "
                f"({b.cost_basis} {held})."
            )
        else:
            untested = (
                ""
                if b.cost_apart is not None
                else (" Estimates only: " if brief else " By the estimates alone: ")
                + " and ".join(c.name for c in (d, o) if c.p50_ci_ns is None)
                + (
                    (" has" if (d.p50_ci_ns is None) != (o.p50_ci_ns is None) else " have")
                    + " no p50 interval."
                    if brief
                    else " has no p50 interval, so how sure the difference is cannot be told."
                )
            )
            more = "more" if b.cost_p50_ns >= 0 else "less"
            parts.append(
                f"{fmt_ns(abs(b.cost_p50_ns))} {more} per commit at p50{ratio} than {o.name}, "
                f"the fastest configuration that does not promise durability "
                f"({_figures(o)}).{untested}"
            )
    if b.p99_share_of_model_call is not None:
        pct = 100 * b.p99_share_of_model_call
        parts.append(
            f"At p99 a durable commit adds {pct:.2g} % to a "
            f"{fmt_ns(b.model_call_ms * 1e6)} model call per step"
            + ("." if brief else " (set yours with --model-call-ms).")
        )
    return Paragraph(" ".join(parts), lead="Cost of durability:") if parts else None


def trust_text(report: Report, b: BottomLine, brief: bool = False) -> Paragraph:
    """Whether to trust the storage: the verdict, how it is known, the deciding finding's
    message, and how many weaker signals point elsewhere. ``brief`` (the terminal summary):
    the deciding message is left out, the disagreeing signals are counted, not named, and
    the meaning of "unverifiable" is not repeated after "cannot tell from here"."""
    v = report.verdict
    deciding = next((f for f in v.findings if f.code == v.decided_by), None)
    # brief: "cannot tell from here" already is what unverifiable means
    meaning = (
        "" if brief and v.path_verdict == UNVERIFIABLE else VERDICT_MEANING.get(v.path_verdict, "")
    )
    text = (
        f"{b.trust[0].upper()}{b.trust[1:]}. Path verdict: {verdict_phrase(v.path_verdict, v.strength, v.decided_by)}."
        + (f" {meaning}" if meaning else "")
    )
    if deciding is not None and not brief:
        text += f" {deciding.message}"
    against = [f for f in v.findings if f.stance == "disagrees"]
    if against and brief:
        text += (
            f" {len(against)} weaker signal{'s' if len(against) > 1 else ''} "
            f"point{'' if len(against) > 1 else 's'} elsewhere (named in the full report)."
        )
    elif against:
        text += (
            f" {len(against)} weaker signal{'s' if len(against) > 1 else ''} "
            f"point{'' if len(against) > 1 else 's'} elsewhere: "
            + "; ".join(f"{f.code} ({f.points_to}, {f.strength})" for f in against)
            + "."
        )
    tone = {"honest_flush": "good", "unverifiable": "caution"}.get(v.path_verdict, "bad")
    return Paragraph(text.strip(), lead="Trust the storage?", tone=tone)


def answer_section(report: Report, b: BottomLine, brief: bool = False) -> Section:
    """The bottom line: choose, cost, trust, next step (``brief``: the terminal summary's
    shorter wording, see :func:`choice_text`, :func:`cost_text`, :func:`trust_text`)."""
    blocks = [
        choice_text(report, b, brief),
        cost_text(b, brief),
        trust_text(report, b, brief),
        Paragraph(b.next_step, lead="Next step:"),
    ]
    return Section("answer", "Bottom line", tuple(x for x in blocks if x is not None))


# --------------------------------------------------------------------------- results


def results_section(report: Report) -> Section:
    """The compact latency table, what the intervals can and cannot see, the tool's floor,
    the run's notes and the charts (HTML); every statistic is in :func:`statistics_section`."""
    blocks: list[Block] = [compact_table(report)]
    caveat = interval_caveat(report.results)
    if caveat:
        blocks.append(Paragraph(caveat))
    legend = no_interval_legend(report.results)
    if legend:
        blocks.append(Paragraph(legend))
    if report.floors:
        blocks.append(Paragraph(floor_line(report)))
    blocks += [Paragraph(n, lead="Note:", tone="caution") for n in report.notes]
    if any(r.samples_ns for r in report.results):
        blocks += [
            Figure(
                "configurations",
                "p50 (dot) and p99 (bar) of each configuration with "
                "their 95 % intervals (whiskers), durable configurations apart from the "
                "rest (log scale).",
            ),
            Figure(
                "cdf",
                "Cumulative distribution of every configuration's operation time "
                "(log scale). Colour is the journal mode; solid lines sync at every commit "
                "(synchronous=FULL), dashed at NORMAL, dotted never (OFF); the raw "
                "write+sync primitives are black and grey with their own markers.",
            ),
        ]
        if any(r.kind in ("flush", "write") and r.samples_ns for r in report.results):
            blocks.append(
                Figure(
                    "histograms",
                    "One histogram per raw sync primitive "
                    "(log-spaced bins); solid line p50, dashed line p99.",
                )
            )
    return Section("results", "Latency per configuration", tuple(blocks))


def statistics_section(report: Report) -> Section:
    """Every statistic of every result (:func:`fsyncbench.report.latency.results_table`)."""
    return Section("statistics", "Every statistic per configuration", (results_table(report),))


# --------------------------------------------------------------------------- findings


def _strip_subject(f: Finding) -> str:
    prefix = f"{f.subject}: "
    return f.message[len(prefix) :] if f.message.startswith(prefix) else f.message


def evidence_text(evidence: Mapping[str, Any]) -> str:
    """A finding's evidence values as a sentence with units: ``p50_ns=45270.0`` reads
    ``p50 45.3 us``; booleans yes/no, None "unknown", pairs as ranges (``91-100``), a
    mapping in parentheses; per-result
    tables (mappings of mappings) are left out: the report's tables and the JSON have them."""
    return "; ".join(
        f"{_evidence_name(_unit_last(k))} {_evidence_value(_unit_last(k), v)}"
        for k, v in evidence.items()
        if not _nested(v)
    )


_UNIT_INSIDE = re.compile(r"^(?P<what>.+)_(?P<unit>ns|ms|s)_per_(?P<per>.+)$")


def _unit_last(key: str) -> str:
    """A key with its unit inside (``flush_ms_per_flush``) as one with the unit last
    (``flush_time_per_flush_ms``: "flush time per flush 0.047 ms")."""
    m = _UNIT_INSIDE.match(key)
    return f"{m['what']}_time_per_{m['per']}_{m['unit']}" if m else key


def _nested(value: Any) -> bool:
    """Per-result tables inside a finding's evidence (said elsewhere in the report, kept
    whole in the JSON)."""
    return isinstance(value, Mapping) and any(isinstance(v, Mapping) for v in value.values())


_UNIT_SUFFIXES = ("_ns", "_ms", "_bytes_per_s", "_bytes", "_pct", "_per_s", "_s")


def _evidence_name(key: str) -> str:
    for suffix in _UNIT_SUFFIXES:
        if key.endswith(suffix):
            key = key[: -len(suffix)]
            break
    return key.replace("_", " ")


def _evidence_value(key: str, value: Any) -> str:
    if value is None:
        return "unknown"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Mapping):
        return "(" + evidence_text(value) + ")"
    if isinstance(value, (list, tuple)):
        if value and all(isinstance(v, (list, tuple)) and len(v) == 2 for v in value):
            return ", ".join(f"{v[0]}-{v[1]}" for v in value)  # ranges of sequence numbers
        return ", ".join(_evidence_value(key, v) for v in value) or "none"
    if isinstance(value, (int, float)):
        if key.endswith("_ns"):
            return fmt_ns(value)
        if key.endswith("_bytes_per_s"):
            return fmt_bandwidth(value)
        if key.endswith("_per_s"):
            return f"{value:,.0f}/s"
        if key.endswith("_ms"):
            return f"{value:.4g} ms"
        if key.endswith("_s"):
            return f"{value:.4g} s"
        if key.endswith("_bytes"):
            return f"{value:,.0f} bytes"
        if key.endswith("_pct"):
            return f"{value:.3g} %"
        return f"{value:,}" if isinstance(value, int) else f"{value:.4g}"
    return str(value)


def finding_groups(findings: Sequence[Finding]) -> list[tuple[str, str, list[Finding]]]:
    """Findings grouped by code, most severe first: (level, code, findings) in order of
    first appearance within a level."""
    groups: dict[str, list[Finding]] = {}
    for f in findings:
        groups.setdefault(f.code, []).append(f)
    ordered = sorted(
        groups.items(), key=lambda kv: min(_LEVEL_ORDER.get(f.level, 3) for f in kv[1])
    )
    return [
        (min((f.level for f in fs), key=lambda lv: _LEVEL_ORDER.get(lv, 3)), code, fs)
        for code, fs in ordered
    ]


def findings_section(report: Report) -> Section:
    """One item per finding code, with the configurations it applies to: identical
    messages are said once for all their subjects, the advice once per code, the evidence
    as sentences with units, the source of a threshold where there is one."""
    items = []
    for level, code, fs in finding_groups(report.verdict.findings):
        by_message: dict[str, list[Finding]] = {}
        for f in fs:
            by_message.setdefault(_strip_subject(f) + stance_tag(f), []).append(f)
        subs = []
        for message, same in by_message.items():
            subjects = ", ".join(f.subject for f in same)
            line = f"{subjects}: {message}"
            if len(same) == 1 and same[0].evidence:
                line += f" Evidence: {evidence_text(same[0].evidence)}."
            subs.append(line)
        advice = sorted({f.advice for f in fs if f.advice})
        sources = sorted({f.source for f in fs if f.source})
        text = ("Advice: " + " ".join(advice) if advice else "") + (
            f" Source: {'; '.join(sources)}." if sources else ""
        )
        tone = {"risk": "bad", "warning": "caution"}.get(level, "")
        items.append(
            (
                Paragraph(
                    text.strip(), lead=f"{_LEVEL_WORD.get(level, level)} `{code}`:", tone=tone
                ),
                tuple(subs),
            )
        )
    if not items:
        return Section("findings", "Findings", (Paragraph("No findings."),))
    return Section("findings", "Findings", (Bullets(tuple(items)),))


# --------------------------------------------------------------------------- counters


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


# --------------------------------------------------------------------------- host, method


def host_table(report: Report) -> Table:
    """The host record as a field/value table."""
    return Table(("field", "value"), tuple((Cell(k), Cell(v)) for k, v in host_lines(report.host)))


def provenance_table(report: Report) -> Table:
    """Tool version, report schema, command line, creation time, run duration, Python and
    SQLite versions."""
    h = report.host
    rows = [
        ("fsyncbench", report.tool_version),
        ("report schema", f"{report.schema_version}"),
        ("command line", " ".join(report.command_line) or "-"),
        ("created (UTC)", report.created_utc),
        ("duration", "not recorded" if report.elapsed_ns is None else fmt_ns(report.elapsed_ns)),
        ("Python", h.python_version),
        ("SQLite", h.sqlite_version),
    ]
    return Table(("field", "value"), tuple((Cell(k), Cell(v)) for k, v in rows))


def method_section(report: Report) -> Section:
    """Provenance and the method paragraph."""
    blocks: list[Block] = [provenance_table(report)]
    text = methodology(report)
    if text:
        blocks.append(Paragraph(text))
    blocks.append(
        Paragraph(
            "Verdict strengths: "
            + "; ".join(f"{k}: {v}" for k, v in STRENGTH_MEANING.items() if k != "none")
            + "."
        )
    )
    return Section("method", "Method and provenance", tuple(blocks))
