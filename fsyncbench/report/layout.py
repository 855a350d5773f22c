"""Laying text out for a terminal of a given width: running text wrapped, tables fitted.

Every text output of fsyncbench goes through here, so no line is longer than :func:`width`
(``COLUMNS``, else the terminal, else :data:`WIDTH`). A table that is too wide is not cut:
its headers wrap first, then its columns are dealt into panels that each repeat the first
(key) column — as R prints a wide data frame and pandas' ``to_string(line_width=…)`` does —
and only a table whose key column and one other cannot share a line is written as one
block of ``header: value`` lines per row. Nothing a table holds is left out at any width.
"""

from __future__ import annotations

import math
import os
import re
import sys
import textwrap
from collections.abc import Collection, Sequence

import tabulate as _tabulate

#: Running text is wrapped here when neither ``COLUMNS`` nor a terminal says otherwise: a
#: terminal of 100 columns or more shows every output without folding.
WIDTH = 100
#: The narrowest text is laid out for, whatever ``COLUMNS`` says.
MIN_WIDTH = 40
#: Space between two columns of a table (tabulate's "simple" layout).
GAP = 2


def width() -> int:
    """The columns text is laid out for: ``COLUMNS`` (a positive whole number, as POSIX
    shells and ``shutil.get_terminal_size`` read it), else the width of the terminal
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


def wrap(
    text: str, first: str = "", rest: str = "", cols: int | None = None, break_words: bool = False
) -> list[str]:
    """``text`` wrapped at ``cols`` (default :func:`width`), the first line led by
    ``first`` and the others indented by ``rest``; a figure is never split from its unit.
    A word longer than the line (a path, a URL) is kept whole on a line of its own: it is
    there to be copied (``break_words`` True breaks it, for a cell that must fit)."""
    cols = cols or width()
    lines = textwrap.wrap(
        _FIGURE_UNIT.sub(_GLUE, text),
        cols,
        initial_indent=first,
        subsequent_indent=rest,
        break_long_words=break_words,
        break_on_hyphens=False,
    ) or [first.rstrip()]
    return [line.replace(_GLUE, " ") for line in lines]


def wrap_text(text: str, rest: str = "") -> str:
    """``text`` wrapped at :func:`width` (:func:`wrap`), lines after the first indented by
    ``rest``."""
    return "\n".join(wrap(text, "", rest))


def fit_lines(lines: Sequence[str], cols: int | None = None) -> list[str]:
    """Pre-laid-out ``lines`` (an indented list, a sub-table's rows) kept as they are where
    they fit; a longer one wrapped under its own indent plus four columns."""
    cols = cols or width()
    out: list[str] = []
    for line in lines:
        if len(line) <= cols:
            out.append(line)
            continue
        lead = line[: len(line) - len(line.lstrip())]
        hang = lead + "    " if len(lead) + 4 < cols // 2 else ""
        out += wrap(line.strip(), lead, hang, cols)
    return out


def _render(
    headers: Sequence[str], rows: Sequence[Sequence[str]], right: Collection[int]
) -> list[str]:
    n = len(headers)
    saved = _tabulate.MIN_PADDING
    _tabulate.MIN_PADDING = 0  # a column as wide as its widest header line or cell, no wider
    try:
        text = _tabulate.tabulate(
            [list(r) for r in rows],
            headers=list(headers),
            tablefmt="simple",
            disable_numparse=True,
            colalign=["right" if i in right else "left" for i in range(n)] if rows else None,
        )
    finally:
        _tabulate.MIN_PADDING = saved
    return str(text).splitlines()


def _cell_width(rows: Sequence[Sequence[str]], i: int) -> int:
    return max((len(line) for r in rows for line in str(r[i]).splitlines()), default=0)


def _wrapped_header(header: str, cells: int, lines: int | None) -> str:
    """``header`` on as few lines as fit its column: no wider than its widest cell, its
    longest word, or (``lines`` given) the width that puts it on that many lines."""
    if "\n" in header:
        return header
    longest_word = max((len(w) for w in header.split()), default=0)
    target = max(cells, longest_word, math.ceil(len(header) / lines) if lines else 0)
    return "\n".join(textwrap.wrap(header, target, break_long_words=False)) or header


def _headers_fitted(
    headers: Sequence[str], rows: Sequence[Sequence[str]], lines: int | None
) -> list[str]:
    return [_wrapped_header(h, _cell_width(rows, i), lines) for i, h in enumerate(headers)]


def _width_of(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[int]:
    return [
        max(_cell_width(rows, i), max(len(x) for x in h.splitlines()) if h else 0)
        for i, h in enumerate(headers)
    ]


def _fits(lines: list[str], cols: int) -> bool:
    return all(len(line) <= cols for line in lines)


def _cells_wrapped(
    headers: Sequence[str],
    rows: list[list[str]],
    right: Collection[int],
    cols: int,
) -> list[list[str]] | None:
    """``rows`` with the cells of the widest text columns (left-aligned, after the first)
    wrapped onto more lines, widest column first, until the table fits ``cols``; a figure
    stays with its unit. None when wrapping cannot make it fit."""
    rows = [list(r) for r in rows]
    for _ in range(4 * len(headers)):
        hs = _headers_fitted(headers, rows, 3)
        widths = _width_of(hs, rows)
        over = sum(widths) + GAP * (len(widths) - 1) - cols
        if over <= 0:
            return rows
        shrinkable = []
        for i in range(1, len(headers)):
            if i in right:
                continue
            words = [len(w) for r in rows for w in _FIGURE_UNIT.sub(_GLUE, r[i]).split()]
            floor = max([max(words, default=0), len(max(hs[i].split(), key=len, default=""))])
            if widths[i] > floor:
                shrinkable.append((widths[i], i, floor))
        if not shrinkable:
            return None
        current, i, floor = max(shrinkable)
        target = max(floor, current - over)
        for r in rows:
            glued = " ".join(r[i].split("\n")) if "\n" in r[i] else r[i]
            lines = textwrap.wrap(_FIGURE_UNIT.sub(_GLUE, glued), target, break_long_words=False)
            r[i] = "\n".join(line.replace(_GLUE, " ") for line in lines) or r[i]
    return None


def _panels(
    headers: list[str],
    rows: Sequence[Sequence[str]],
    right: Collection[int],
    cols: int,
    keys: int = 1,
) -> list[str] | None:
    """The columns after the first ``keys`` dealt, in order, into panels that each fit
    ``cols`` and repeat the key columns (a configuration, and what tells its rows apart:
    p50/p99, a model); None when the keys and some other column cannot share a line."""
    widths = _width_of(headers, rows)
    key = sum(widths[:keys]) + GAP * (keys - 1)
    groups: list[list[int]] = []
    used = key
    for i in range(keys, len(headers)):
        if key + GAP + widths[i] > cols:
            return None
        if groups and used + GAP + widths[i] <= cols:
            groups[-1].append(i)
            used += GAP + widths[i]
        else:
            groups.append([i])
            used = key + GAP + widths[i]
    out: list[str] = []
    for k, group in enumerate(groups):
        keep = [*range(keys), *group]
        sub_right = {j for j, i in enumerate(keep) if i in right}
        if k:
            out.append("")
        out += _render([headers[i] for i in keep], [[r[i] for i in keep] for r in rows], sub_right)
    return out


def _stacked(headers: Sequence[str], rows: Sequence[Sequence[str]], cols: int) -> list[str]:
    """Each row as its key cell on a line, then ``header: value`` pairs wrapped under it."""
    out: list[str] = []
    for r in rows:
        key = " ".join(str(r[0]).split()) or "-"
        label = " ".join(headers[0].split())
        out += wrap(f"{label}: {key}" if label else key, "", "    ", cols)
        pairs = "; ".join(
            f"{' '.join(h.split())}: {' '.join(str(v).split()) or '-'}"
            for h, v in zip(headers[1:], r[1:])
        )
        if pairs:
            out += wrap(pairs, "    ", "      ", cols)
    return out


def fit_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    right: Collection[int] = (),
    cols: int | None = None,
    indent: int = 0,
    keys: int = 1,
) -> list[str]:
    """A table laid out in tabulate's "simple" layout within ``cols`` columns (default
    :func:`width`), each line led by ``indent`` spaces: as it is if it fits; else its
    headers wrapped (onto three lines, then as many as needed); else in panels that repeat
    the first ``keys`` columns; else one block per row. ``right`` names the columns aligned
    right.
    Returns the lines; every value of every row is in them."""
    cols = (cols or width()) - indent
    cells = [[str(c) for c in r] for r in rows]
    pad = " " * indent
    attempts = [
        list(headers),
        _headers_fitted(headers, cells, 3),
        _headers_fitted(headers, cells, None),
    ]
    for hs in attempts:
        lines = _render(hs, cells, right)
        if _fits(lines, cols):
            return [pad + line for line in lines]
    wrapped = _cells_wrapped(headers, cells, right, cols)
    if wrapped is not None:
        lines = _render(_headers_fitted(headers, wrapped, 3), wrapped, right)
        if _fits(lines, cols):
            return [pad + line for line in lines]
    keys = max(1, min(keys, len(headers) - 1))
    panels = _panels(attempts[1], cells, right, cols, keys)
    if panels is None or not _fits(panels, cols):
        panels = _panels(attempts[2], cells, right, cols, keys)
    if panels is not None and _fits(panels, cols):
        return [pad + line if line else line for line in panels]
    return [pad + line for line in _stacked(headers, cells, cols)]


def fit_pairs(pairs: Sequence[tuple[str, str]], cols: int | None = None) -> list[str]:
    """``key  value`` lines, keys in one column (tabulate's "plain" layout), a value too
    long for its line wrapped under the values' column (or, when the keys take half the
    line, under the key indented by four)."""
    cols = cols or width()
    keys = max((len(k) for k, _ in pairs), default=0)
    out: list[str] = []
    for key, value in pairs:
        if not key and not value:
            continue
        if keys + GAP + 10 <= cols:
            lead = key.ljust(keys + GAP)
            out += wrap(str(value), lead, " " * (keys + GAP), cols)
        else:
            out += wrap(key, "", "", cols) + wrap(str(value), "    ", "    ", cols)
    return out
