"""A :class:`~fsyncbench.report.document.Document` as GitHub-flavoured Markdown, for design
documents: units with their signs (``µs``, ``±``), tables by tabulate ("github"), figures
left out (their facts are in the tables, the HTML draws them).

Every string from the report is escaped: a path or hostname holding ``<img src=x
onerror=...>``, ``|`` or ``*`` reads as the characters it is, never as markup.
"""

from __future__ import annotations

import re

from tabulate import tabulate

from fsyncbench.report import document as dm

#: Characters with a meaning in Markdown or inline HTML, escaped with a backslash outside
#: code spans (CommonMark, "Backslash escapes": any ASCII punctuation may be escaped).
_SPECIAL = re.compile(r"([\\*_\[\]<>|#!~])")


def escape(text: str) -> str:
    """``text`` as Markdown showing exactly these characters; backtick spans stay code
    (inside them only ``|`` is escaped, for tables)."""
    parts = re.split(r"(`[^`]*`)", text)
    return "".join(
        p.replace("|", "\\|")
        if p.startswith("`") and p.endswith("`") and len(p) > 1
        else _SPECIAL.sub(r"\\\1", p)
        for p in parts
    )


def _inline(text: str) -> str:
    return escape(dm.pretty(text))


def _paragraph(p: dm.Paragraph) -> str:
    lead = f"**{_inline(p.lead)}** " if p.lead else ""
    return lead + _inline(p.text)


def _table(t: dm.Table) -> list[str]:
    rows = [[_inline(c.text) for c in row] for row in t.rows]
    colalign = ["right" if i in t.numeric else "left" for i in range(len(t.headers))]
    out = tabulate(
        rows,
        headers=[_inline(h) for h in t.headers],
        tablefmt="github",
        disable_numparse=True,
        colalign=colalign if rows else None,
    ).splitlines()
    return ([f"*{_inline(t.caption)}*", ""] if t.caption else []) + out


def _section(s: dm.Section) -> list[str]:
    out = [f"## {_inline(s.title)}", ""] if s.title else []
    for b in s.blocks:
        if isinstance(b, dm.Paragraph):
            out.append(_paragraph(b))
        elif isinstance(b, dm.Bullets):
            for item, subs in b.items:
                out.append("- " + _paragraph(item))
                out += ["  - " + _inline(sub) for sub in subs]
        elif isinstance(b, dm.Table):
            out += _table(b)
        elif isinstance(b, dm.Preformatted):
            out += ["```", *(dm.pretty(line).replace("```", "'''") for line in b.lines), "```"]
        elif isinstance(b, dm.Figure):
            continue
        out.append("")
    return out


def render_markdown(doc: dm.Document) -> str:
    """The whole document as Markdown, ending with a newline."""
    out = [f"# {_inline(doc.title)}", "", f"*{_inline(doc.subtitle)}*", ""]
    for s in doc.sections:
        out += _section(s)
    return "\n".join(out).rstrip("\n") + "\n"
