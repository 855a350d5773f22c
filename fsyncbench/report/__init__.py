"""Turning reports into what people read: one description of a run or audit report
(:mod:`~fsyncbench.report.describe`) laid out as text, Markdown or HTML, with the shared
formatting of durations and intervals (:mod:`~fsyncbench.fmt`).
"""

from __future__ import annotations

from fsyncbench.model import Report
from fsyncbench.report.answer import DEFAULT_MODEL_CALL_MS
from fsyncbench.report.document import Document

#: Formats a run or audit report is rendered in (JSON is the store's, not a rendering).
FORMATS = ("text", "markdown", "html")


def render(
    report: Report,
    fmt: str,
    model_call_ms: float = DEFAULT_MODEL_CALL_MS,
    verbose: bool = False,
    vs: tuple[str, ...] = (),
) -> str:
    """A run or audit ``report`` as ``fmt`` (one of :data:`FORMATS`), from its one
    description (:func:`~fsyncbench.report.describe.describe`); as text without ``verbose``,
    the terminal summary instead (:func:`~fsyncbench.report.summary.summarize`: the bottom
    line and a compact table; Markdown and HTML are always whole). A powercut report has its own
    description, rendered by :func:`fsyncbench.powercut.view.render` (the powercut stage sits
    above this one), a crash report by :func:`fsyncbench.crash.view.describe` (likewise);
    a powerloss report is its simulation's description
    (:func:`~fsyncbench.report.loss.describe_powerloss`). Raises ValueError for another
    format, a powercut or a crash report. ``vs``: the two configurations set head to head
    (:mod:`~fsyncbench.report.headtohead`; default the run's own ``--vs``, else the
    recommended one against its nearest rival)."""
    if report.kind == "powercut":
        raise ValueError("a powercut report is rendered by fsyncbench.powercut.view.render")
    if report.crash is not None or report.crash_power_loss is not None:
        raise ValueError("a crash report is rendered by fsyncbench.crash.view.describe")
    if report.kind == "powerloss" and report.powerloss is not None:
        from fsyncbench.report.loss import describe_powerloss

        return render_document(describe_powerloss(report.powerloss, report.tool_version), fmt)
    if fmt == "text" and not verbose:
        from fsyncbench.report.summary import summarize

        return render_document(summarize(report, model_call_ms, vs), fmt, report)
    from fsyncbench.report.describe import describe

    return render_document(describe(report, model_call_ms, vs), fmt, report)


def render_document(doc: Document, fmt: str, report: Report | None = None) -> str:
    """``doc`` laid out as ``fmt`` (one of :data:`FORMATS`); ``report`` is the report it
    describes, if any (the HTML page draws its charts from the raw samples). Raises ValueError for
    another format."""
    if fmt == "text":
        from fsyncbench.report.text import render_text

        return render_text(doc)
    if fmt == "markdown":
        from fsyncbench.report.markdown import render_markdown

        return render_markdown(doc)
    if fmt == "html":
        from fsyncbench.report.html import render_html

        return render_html(doc, report)
    raise ValueError(f"unknown report format {fmt!r} (known: {', '.join(FORMATS)})")
