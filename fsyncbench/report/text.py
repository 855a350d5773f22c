"""A :class:`~fsyncbench.report.document.Document` as terminal text: ASCII, running text
wrapped at the terminal's width and tables fitted to it (:mod:`fsyncbench.report.layout`),
figures left out (their facts are in the tables)."""

from __future__ import annotations

from fsyncbench.report import document as dm
from fsyncbench.report.layout import MIN_WIDTH, WIDTH, fit_lines, fit_table, width, wrap, wrap_text

__all__ = ["MIN_WIDTH", "WIDTH", "render_text", "width", "wrap_text"]

_MARK = {"bad": "!! ", "caution": "! "}
_wrap = wrap


def _paragraph(p: dm.Paragraph) -> str:
    lead = f"{p.lead} " if p.lead else ""
    return f"{lead}{p.text}".replace("`", "")


def _table(t: dm.Table) -> list[str]:
    out = fit_table(t.headers, [[c.text for c in row] for row in t.rows], t.numeric, keys=t.keys)
    return (_wrap(t.caption.replace("`", "")) if t.caption else []) + out


def _section(s: dm.Section) -> list[str]:
    title = _wrap(s.title) if s.title else []
    out = [*title, "=" * max(len(t) for t in title)] if title else []
    for b in s.blocks:
        if isinstance(b, dm.Paragraph):
            out += _wrap(_MARK.get(b.tone, "") + _paragraph(b))
        elif isinstance(b, dm.Bullets):
            for item, subs in b.items:
                out += _wrap(_MARK.get(item.tone, "") + _paragraph(item), "- ", "  ")
                for sub in subs:
                    out += _wrap(sub.replace("`", ""), "    - ", "      ")
        elif isinstance(b, dm.Table):
            out += _table(b)
        elif isinstance(b, dm.Preformatted):
            out += fit_lines(["  " + line for line in b.lines])
        elif isinstance(b, dm.Figure):
            continue
        out.append("")
    return out


def render_text(doc: dm.Document) -> str:
    """The whole document as terminal text, ending with a newline."""
    out = [
        *_wrap(doc.title, "", "  "),
        *(_wrap(doc.subtitle, "", "  ") if doc.subtitle else []),
        "",
    ]
    for s in doc.sections:
        out += _section(s)
    return "\n".join(out).rstrip("\n") + "\n"
