"""A run or audit report as the terminal shows it by default: the bottom line and one
compact latency table, fitting a screen (about 40 lines of at most 120 columns for the
default run). Everything else — findings with their evidence, device counters, the host,
the method, the glossary — is in the full description (:mod:`fsyncbench.report.describe`),
which the saved Markdown and HTML reports and ``--verbose`` show.

The summary says nothing the full report does not: it reuses the full report's answer and
its figures, and counts what it leaves out so that a reader knows it is there.
"""

from __future__ import annotations

import dataclasses

from fsyncbench.fmt import fmt_interval, fmt_ns
from fsyncbench.measure import stats
from fsyncbench.model import Report
from fsyncbench.report.answer import DEFAULT_MODEL_CALL_MS, bottom_line
from fsyncbench.report.describe import answer_section, finding_groups, heading
from fsyncbench.report.document import Cell, Document, Paragraph, Section, Table
from fsyncbench.report.loss import run_report_sections
from fsyncbench.report.wording import result_label

__all__ = ["summarize", "compact_table"]

_FLOOR_MARK = " *"


def summarize(report: Report, model_call_ms: float = DEFAULT_MODEL_CALL_MS) -> Document:
    """The terminal summary of a run or audit ``report``: the bottom line (its trust
    paragraph brief), the answer of a ``--powerloss`` run, the compact latency table and one
    paragraph counting what only the full report shows. ``model_call_ms`` (> 0): as in
    :func:`fsyncbench.report.describe.describe`."""
    title, _subtitle = heading(report)
    loss = run_report_sections(report)
    answer = answer_section(report, bottom_line(report, model_call_ms), brief=True)
    sections = (
        dataclasses.replace(answer, title=""),
        *loss[:1],
        Section("results", "", (compact_table(report),)),
        Section("more", "", (Paragraph(_left_out(report)),)),
    )
    return Document(
        f"{title}, target {report.host.target.path}", "", tuple(s for s in sections if s.blocks)
    )


def compact_table(report: Report) -> Table:
    """One row per result: configuration (``*`` at the tool's floor), whether its pragmas
    promise a durable commit, sync primitive, p50, p99 with its 95 % interval, ops/s; a
    path-verdict column only where the results' verdicts differ."""
    verdicts = {v.subject: v for v in report.verdict.results}
    shown = {
        verdicts[r.name].path_verdict
        for r in report.results
        if r.name in verdicts and r.primitive != "none"
    }
    with_verdict = len(shown) > 1
    headers = (
        "configuration",
        "durable",
        *(("path verdict",) if with_verdict else ()),
        "sync",
        "p50",
        "p99",
        "p99 95% interval",
        "ops/s",
    )
    rows = []
    floor = False
    for r in report.results:
        s = r.summary
        v = verdicts.get(r.name)
        at_floor = stats.at_tool_floor(r, report.floors)
        floor = floor or at_floor
        durable = (
            Cell("-")
            if v is None or v.config_durable is None
            else Cell("yes", "good")
            if v.config_durable
            else Cell("NO", "bad")
        )
        verdict = Cell("-" if v is None or r.primitive == "none" else v.path_verdict)
        rows.append(
            (
                Cell(result_label(r) + (_FLOOR_MARK if at_floor else "")),
                durable,
                *((verdict,) if with_verdict else ()),
                Cell(r.primitive),
                Cell(fmt_ns(s.p50_ns)),
                Cell(fmt_ns(s.p99_ns)),
                Cell(fmt_interval(s.p99_ci_ns, s.p99_interval)),
                Cell(f"{s.ops_per_s:,.0f}"),
            )
        )
    numeric = frozenset(
        i for i, h in enumerate(headers) if h in ("p50", "p99", "p99 95% interval", "ops/s")
    )
    caption = (
        "Latency per configuration (durable: the pragmas promise a durable commit; sync: the "
        "primitive timed" + ("; * at the tool's floor" if floor else "") + "):"
    )
    return Table(headers, tuple(rows), numeric, caption)


def _left_out(report: Report) -> str:
    """What only the full report shows, counted, and where to find it."""
    groups = finding_groups(report.verdict.findings)  # most severe first
    levels = [level for level, _code, _fs in groups]
    counts = ", ".join(
        f"{levels.count(level)} {level}{'s' if levels.count(level) > 1 and level != 'info' else ''}"
        for level in dict.fromkeys(levels)
    )
    parts = [f"{len(groups)} findings ({counts})"] if groups else []
    if report.notes:
        parts.append(f"{len(report.notes)} note{'s' if len(report.notes) > 1 else ''}")
    parts.append("p50 intervals, p90, p99.9, counts")
    if any(r.device_flushes for r in report.results):
        parts.append("device flush counters")
    parts.append("host, method, glossary")
    return "More: " + "; ".join(parts) + ": --verbose, or the saved .md and .html report."
