"""A :class:`~fsyncbench.report.document.Document` as terminal text: ASCII, running text
wrapped at the terminal's width (:func:`width`: ``COLUMNS``, else the terminal, else
:data:`WIDTH`), tables by tabulate ("simple"), figures left out (their facts are in the
tables)."""

from __future__ import annotations

import os
import re
import sys
import textwrap

from tabulate import tabulate

from fsyncbench.report import document as dm

_MARK = {"bad": "!! ", "caution": "! "}

#: Running text is wrapped here when neither ``COLUMNS`` nor a terminal says otherwise: a
#: terminal of 100 columns or more shows it without folding (tables keep their rows whole;
#: the compact summary's table fits 120 columns).
WIDTH = 100
#: The narrowest running text is wrapped to, whatever ``COLUMNS`` says.
MIN_WIDTH = 40


def width() -> int:
    """The columns running text is wrapped to: ``COLUMNS`` (a positive whole number, as
    POSIX shells and ``shutil.get_terminal_size`` read it), else the width of the terminal
    standard output writes to, else :data:`WIDTH`; never below :data:`MIN_WIDTH`."""
    env = os.environ.get("COLUMNS", "").strip()
    if env.isdigit() and int(env) > 0:
        return max(MIN_WIDTH, int(env))
    try:
        if sys.stdout.isatty():
            return max(MIN_WIDTH, os.get_terminal_size(sys.stdout.fileno()).columns)
    except (OSError, ValueError, AttributeError):  # no terminal, or a replaced stdout
        pass
    return WIDTH


#: a figure and its unit ("893 us", "1.00 s", "5 runs"): one word for wrapping
_FIGURE_UNIT = re.compile(r"(?<=\d) (?=[A-Za-z%])")
_GLUE = "\u00a0"  # not whitespace to textwrap, which splits on ASCII whitespace only


def _wrap(text: str, first: str = "", rest: str = "") -> list[str]:
    """``text`` wrapped at :func:`width`, the first line led by ``first`` and the others
    indented by ``rest``; words (a path, a URL) are never broken, nor a figure from its unit."""
    lines = textwrap.wrap(
        _FIGURE_UNIT.sub(_GLUE, text),
        width(),
        initial_indent=first,
        subsequent_indent=rest,
        break_long_words=False,
        break_on_hyphens=False,
    ) or [first.rstrip()]
    return [line.replace(_GLUE, " ") for line in lines]


def wrap_text(text: str, rest: str = "") -> str:
    """``text`` wrapped at :func:`width` as running text is (:func:`_wrap`), lines after the
    first indented by ``rest``."""
    return "\n".join(_wrap(text, "", rest))


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
            out += ["  " + line for line in b.lines]
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
