"""A run or audit report as the terminal shows it by default: the bottom line and one
compact latency table, fitting a screen (about 45 lines of at most 120 columns for the
default run). Everything else — findings with their evidence, device counters, the host,
the method, the glossary — is in the full description (:mod:`fsyncbench.report.describe`),
which the saved Markdown and HTML reports and ``--verbose`` show.

The summary says nothing the full report does not: it reuses the full report's answer and
its figures, and counts what it leaves out so that a reader knows it is there.
"""

from __future__ import annotations

import dataclasses

from fsyncbench.judge.engine import rejudged_note
from fsyncbench.model import Report
from fsyncbench.report.answer import DEFAULT_MODEL_CALL_MS, bottom_line
from fsyncbench.report.answer_text import answer_section
from fsyncbench.report.describe import heading
from fsyncbench.report.disturbed import machine_paragraph
from fsyncbench.report.document import Block, Bullets, Document, Paragraph, Section, Table
from fsyncbench.report.findings_text import finding_groups
from fsyncbench.report.headtohead import in_answer
from fsyncbench.report.latency import compact_table
from fsyncbench.report.loss import run_report_sections
from fsyncbench.report.method_text import no_interval_legend
from fsyncbench.report.writers import writers_sections

__all__ = ["summarize"]


def summarize(
    report: Report, model_call_ms: float = DEFAULT_MODEL_CALL_MS, vs: tuple[str, ...] = ()
) -> Document:
    """The terminal summary of a run or audit ``report``: the bottom line (its trust
    paragraph brief) after one line on what else the machine did while it measured (quiet,
    or what disturbed it: :func:`fsyncbench.report.disturbed.machine_paragraph`), the answer
    of a ``--powerloss`` run, the compact latency table and one
    paragraph counting what only the full report shows, with the head-to-head of two
    configurations after the answer. ``model_call_ms`` (> 0), ``vs``: as in
    :func:`fsyncbench.report.describe.describe`."""
    title, _subtitle = heading(report)
    loss = run_report_sections(report)
    answer = answer_section(report, bottom_line(report, model_call_ms), brief=True)
    answer = in_answer(answer, report, vs)  # the screen has no room for its own section
    machine = machine_paragraph(report)
    if machine is not None:
        answer = dataclasses.replace(answer, blocks=(machine, *answer.blocks))
    again = rejudged_note(report)
    if again is not None:  # a saved report judged again: said on the screen, not only counted
        said = Paragraph(again[:1].upper() + again[1:] + ".", lead="Judged again:", tone="caution")
        answer = dataclasses.replace(answer, blocks=(*answer.blocks, said))
    sections = (
        dataclasses.replace(answer, title=""),
        *loss[:1],
        Section(
            "results",
            "",
            tuple(b for b in (compact_table(report), precision_paragraph(report)) if b is not None),
        ),
        *(
            dataclasses.replace(w, blocks=_writers_brief(w.blocks))
            for w in writers_sections(report)
        ),
        Section("more", "", (Paragraph(_left_out(report)),)),
    )
    return Document(
        f"{title}, target {report.host.target.path}", "", tuple(s for s in sections if s.blocks)
    )


def _writers_brief(blocks: tuple[Block, ...]) -> tuple[Block, ...]:
    """Of the concurrent-writers section: the answers, the points table and the
    intervals table (its first two tables) and what the machine did meanwhile."""
    tables = [b for b in blocks if isinstance(b, Table)][:2]
    return tuple(
        b
        for b in blocks
        if isinstance(b, Bullets)
        or any(b is t for t in tables)
        or (isinstance(b, Paragraph) and b.lead == "Machine:")
    )


#: Rows named one by one in the precision line before "and N more" (two lines of 100).
PRECISION_NAMED = 3


def precision_paragraph(report: Report) -> Paragraph | None:
    """Per row, how precise its p99 came out against the run's target: how many met it and,
    by name with their precision, those that did not (None without a target)."""
    from fsyncbench.fmt import fmt_interval, fmt_precision

    rows = [r for r in report.results if r.ci_target_pct is not None]
    if not rows:
        return None
    target = rows[0].ci_target_pct
    met = [r for r in rows if r.ci_target_met]
    missed = [r for r in rows if not r.ci_target_met]
    runs = any(r.summary.p99_interval is not None and r.summary.p99_interval.runs > 1 for r in rows)
    where = "with the spread between runs" if runs else "within this run"
    text = f"p99 precision (95 % interval {where}; target +-{target:g} %): met by {len(met)} of {len(rows)}"
    legend = no_interval_legend(rows, skip=("n too small",))
    if missed:
        named = ", ".join(
            f"{r.name} "
            + (
                fmt_precision(r.summary.p99_ns, r.summary.p99_ci_ns)
                if r.summary.p99_ci_ns
                else fmt_interval(None, r.summary.p99_interval)
            )
            for r in missed[:PRECISION_NAMED]
        )
        more = len(missed) - PRECISION_NAMED
        text += f"; not met: {named}" + (f" and {more} more" if more > 0 else "")
    return Paragraph(text + "." + (f" {legend}" if legend else ""))


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
    return "More: " + "; ".join(parts) + ": --verbose, or --format markdown."
