"""A run or audit report as one :class:`~fsyncbench.report.document.Document`: the answer
first, then the numbers, the findings, the evidence, the host, the method and a glossary.

Text, Markdown and HTML are all laid out from this one description
(:func:`fsyncbench.report.render`), so they carry the same facts in the same words. Each
section is said by the module of its job (the answer: :mod:`fsyncbench.report.answer_text`;
the findings: :mod:`fsyncbench.report.findings_text`; device flush counters and audit
evidence: :mod:`fsyncbench.report.flush_evidence`; the host:
:mod:`fsyncbench.report.host_text`; the method: :mod:`fsyncbench.report.method_text`); this
module sets them in order.
"""

from __future__ import annotations

from fsyncbench.model import Report
from fsyncbench.report.answer import DEFAULT_MODEL_CALL_MS, bottom_line
from fsyncbench.report.answer_text import answer_section
from fsyncbench.report.disturbed import machine_paragraph, machine_section
from fsyncbench.report.document import Block, Bullets, Document, Figure, Paragraph, Section
from fsyncbench.report.findings_text import findings_section
from fsyncbench.report.flush_evidence import counters_section, evidence_section
from fsyncbench.report.headtohead import head_to_head_sections, in_answer
from fsyncbench.report.host_text import host_table
from fsyncbench.report.latency import compact_table, results_table
from fsyncbench.report.loss import run_report_sections
from fsyncbench.report.method_text import (
    floor_line,
    interval_caveat,
    method_section,
    no_interval_legend,
)
from fsyncbench.report.writers import writers_sections

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
