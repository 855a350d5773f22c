"""A :class:`~fsyncbench.report.document.Document` as one self-contained HTML page: no
scripts, no fonts or styles fetched from anywhere, charts as inline SVG
(:mod:`fsyncbench.report.plots`).

The bottom line and the compact latency table come first, so a reader sees at 1400x900
what to choose, what it costs and whether to trust the storage; the charts follow, each at
the full width of the page (its text at its own size up to 1,280 px), then the table of
every statistic, whose cells wrap so that it fits a 1,280 px window. Every string from the
report is HTML-escaped.
"""

from __future__ import annotations

import html
import re

from fsyncbench.model import Report
from fsyncbench.report import document as dm
from fsyncbench.report import plots

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",Arial,sans-serif;
 margin:0 auto;max-width:1380px;padding:.6em 1.4em;color:#1a1a1a;line-height:1.4}
h1{font-size:1.35em;margin:.2em 0}h2{font-size:1.15em;margin:1.4em 0 .4em;border-bottom:1px solid #ddd}
.sub{color:#555;margin:0 0 .6em;font-size:.9em}
.answer{border-left:10px solid #6b5900;background:#f7f7f5;padding:.4em 1em;margin:.4em 0 .8em}
.answer p{margin:.3em 0}
.answer.good{border-color:#1b6e20}.answer.caution{border-color:#b58900}.answer.bad{border-color:#b00020}
table{border-collapse:collapse;margin:.4em 0;font-size:.78em}
th,td{border:1px solid #ccc;padding:.1em .35em;text-align:left;vertical-align:top}
.wide{overflow-x:auto}
th{background:#f0f0f0}td.num{text-align:right;font-variant-numeric:tabular-nums}
td.good{color:#1b6e20;font-weight:600}td.bad{color:#b00020;font-weight:700}td.caution{color:#a15c00}
p.bad,li.bad>strong{color:#b00020}p.caution>strong,li.caution>strong{color:#a15c00}
.figs{display:flex;flex-wrap:wrap;gap:1em;align-items:flex-start}
.figs figure{flex:1 1 100%;margin:.4em 0}
figure{margin:1em 0}figcaption{color:#444;font-size:.85em}
svg{max-width:100%;height:auto}
code,pre{background:#f3f3f3;padding:0 .2em}pre{padding:.5em;overflow-x:auto;font-size:.85em}
li{margin:.25em 0}
"""


def _inline(text: str) -> str:
    """Escaped text with `code` spans as <code> and units with their signs."""
    return re.sub(r"`([^`]*)`", r"<code>\1</code>", html.escape(dm.pretty(text)))


def _paragraph(p: dm.Paragraph, tag: str = "p") -> str:
    lead = f"<strong>{_inline(p.lead)}</strong> " if p.lead else ""
    cls = f' class="{p.tone}"' if p.tone else ""
    return f"<{tag}{cls}>{lead}{_inline(p.text)}"


#: a figure and its unit ("1.27 µs", "5 runs", "20.0 %"): kept on one line where a cell wraps
_FIGURE_UNIT = re.compile(r"(?<=\d) (?=[^\s\d\[\](),;-])")


def _cell(c: dm.Cell, numeric: bool) -> str:
    """One table cell. Cells wrap (so the table fits a 1,280 px window) but never between
    a figure and its unit."""
    classes = " ".join(x for x in ("num" if numeric else "", c.tone) if x)
    text = _FIGURE_UNIT.sub("\u00a0", _inline(c.text)).replace(" - ", "\u00a0- ")
    return f'<td class="{classes}">{text}</td>' if classes else f"<td>{text}</td>"


def _table(t: dm.Table) -> str:
    head = "".join(f"<th>{_inline(h)}</th>" for h in t.headers)
    body = "".join(
        "<tr>" + "".join(_cell(c, i in t.numeric) for i, c in enumerate(row)) + "</tr>"
        for row in t.rows
    )
    caption = f"<caption>{_inline(t.caption)}</caption>" if t.caption else ""
    return f'<div class="wide"><table>{caption}<tr>{head}</tr>{body}</table></div>'


def _figure(f: dm.Figure, svgs: dict[str, str]) -> str:
    """One chart with its caption; without matplotlib, the first figure of the page says
    so (``svgs["missing"]``, said once) and the others are left out."""
    if "missing" in svgs:
        return svgs.pop("missing")
    svg = svgs.get(f.kind, "")
    if not svg:
        return ""
    return f"<figure>{svg}<figcaption>{_inline(f.caption)}</figcaption></figure>"


def _blocks(s: dm.Section, svgs: dict[str, str]) -> list[str]:
    out: list[str] = []
    figs: list[str] = []
    for b in s.blocks:
        if isinstance(b, dm.Figure) and b.kind in ("configurations", "cdf"):
            figs.append(_figure(b, svgs))
            continue
        if figs:
            out.append('<div class="figs">' + "".join(figs) + "</div>")
            figs = []
        if isinstance(b, dm.Paragraph):
            out.append(_paragraph(b) + "</p>")
        elif isinstance(b, dm.Bullets):
            items = []
            for item, subs in b.items:
                sub = (
                    ("<ul>" + "".join(f"<li>{_inline(x)}</li>" for x in subs) + "</ul>")
                    if subs
                    else ""
                )
                items.append(_paragraph(item, "li") + sub + "</li>")
            out.append("<ul>" + "".join(items) + "</ul>")
        elif isinstance(b, dm.Table):
            out.append(_table(b))
        elif isinstance(b, dm.Preformatted):
            out.append("<pre>" + html.escape(dm.pretty("\n".join(b.lines))) + "</pre>")
        elif isinstance(b, dm.Figure):
            out.append(_figure(b, svgs))
    if figs:
        out.append('<div class="figs">' + "".join(figs) + "</div>")
    return out


def render_html(doc: dm.Document, report: Report | None = None) -> str:
    """The whole page; ``report`` supplies the raw samples the charts are drawn from
    (without it the figures are left out)."""
    svgs: dict[str, str] = {}
    kinds = {b.kind for s in doc.sections for b in s.blocks if isinstance(b, dm.Figure)}
    charts = report is not None and plots.available()
    if report is not None and kinds and not charts:
        svgs["missing"] = f'<p class="caution">{html.escape(plots.MISSING)}</p>'
    if report is not None and charts:
        durable = {v.subject: v.config_durable for v in report.verdict.results}
        if "configurations" in kinds:
            svgs["configurations"] = plots.configurations_svg(report, durable)
        if "cdf" in kinds:
            svgs["cdf"] = plots.cdf_svg(report)
        if "histograms" in kinds:
            svgs["histograms"] = plots.histogram_svg(report)
        if "writers" in kinds:
            svgs["writers"] = plots.writers_svg(report)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_inline(doc.title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_inline(doc.title)}</h1>",
        f'<p class="sub">{_inline(doc.subtitle)}</p>',
    ]
    for s in doc.sections:
        body = _blocks(s, svgs)
        if s.key == "answer":
            tone = next(
                (
                    b.tone
                    for b in s.blocks
                    if isinstance(b, dm.Paragraph) and b.lead.startswith("Trust")
                ),
                "",
            )
            parts.append(
                f'<section id="{s.key}" class="answer {tone}">' + "".join(body) + "</section>"
            )
        else:
            parts.append(
                f'<section id="{s.key}"><h2>{_inline(s.title)}</h2>' + "".join(body) + "</section>"
            )
    parts.append("</body></html>\n")
    return "\n".join(parts)
