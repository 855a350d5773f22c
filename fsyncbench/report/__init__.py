"""Turning reports into what people read: one description of a run or audit report
(:mod:`~fsyncbench.report.describe`) laid out as text, Markdown or HTML, with the shared
formatting of durations and intervals (:mod:`~fsyncbench.report.fmt`).
"""

from __future__ import annotations

from fsyncbench.model import Report
from fsyncbench.report.answer import DEFAULT_MODEL_CALL_MS

#: Formats a run or audit report is rendered in (JSON is the store's, not a rendering).
FORMATS = ("text", "markdown", "html")


def render(report: Report, fmt: str, model_call_ms: float = DEFAULT_MODEL_CALL_MS) -> str:
    """``report`` as ``fmt`` (one of :data:`FORMATS`), all from one description (a powercut
    report's own: :mod:`fsyncbench.report.powercut_view`). Raises ValueError for another
    format."""
    if report.kind == "powercut":
        from fsyncbench.report.powercut_view import describe_powercut

        doc = describe_powercut(report)
    else:
        from fsyncbench.report.describe import describe

        doc = describe(report, model_call_ms)
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
