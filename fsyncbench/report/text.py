"""A :class:`~fsyncbench.report.document.Document` as terminal text: ASCII, tables by
tabulate ("simple"), figures left out (their facts are in the tables)."""

from __future__ import annotations

from tabulate import tabulate

from fsyncbench.report import document as dm

_MARK = {"bad": "!! ", "caution": "! "}


def _paragraph(p: dm.Paragraph) -> str:
    lead = f"{p.lead} " if p.lead else ""
    return f"{lead}{p.text}".replace("`", "")


def _table(t: dm.Table) -> list[str]:
    rows = [[c.text for c in row] for row in t.rows]
    colalign = ["right" if i in t.numeric else "left" for i in range(len(t.headers))]
    out = tabulate(
        rows,
        headers=list(t.headers),
        tablefmt="simple",
        disable_numparse=True,
        colalign=colalign if rows else None,
    ).splitlines()
    return ([t.caption] if t.caption else []) + out


def _section(s: dm.Section) -> list[str]:
    out = [s.title, "=" * len(s.title)]
    for b in s.blocks:
        if isinstance(b, dm.Paragraph):
            out.append(_MARK.get(b.tone, "") + _paragraph(b))
        elif isinstance(b, dm.Bullets):
            for item, subs in b.items:
                out.append("- " + _MARK.get(item.tone, "") + _paragraph(item))
                out += ["    - " + sub.replace("`", "") for sub in subs]
        elif isinstance(b, dm.Table):
            out += _table(b)
        elif isinstance(b, dm.Preformatted):
            out += ["  " + line for line in b.lines]
        elif isinstance(b, dm.Figure):
            continue
        out.append("")
    return out


def render_text(doc: dm.Document) -> str:
    """The whole document as terminal text, ending with a newline."""
    out = [doc.title, doc.subtitle, ""]
    for s in doc.sections:
        out += _section(s)
    return "\n".join(out).rstrip("\n") + "\n"
