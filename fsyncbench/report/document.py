"""One description of a report, rendered three ways.

A :class:`Document` is what a report says — its sections, paragraphs, lists, tables and
figures — with every figure already written as text (:mod:`fsyncbench.fmt`). The
text, Markdown and HTML renderers (:mod:`fsyncbench.report.text`,
:mod:`fsyncbench.report.markdown`, :mod:`fsyncbench.report.html`) only lay it out, so the
three formats cannot disagree about a fact. Strings may hold inline code in backticks; they
are ASCII as a terminal prints them (``41.8 us``, ``+-4.2%``, ``3.1x``), and Markdown and
HTML write the units with the proper signs (:func:`pretty`: ``41.8 µs``, ``±4.2%``, ``3.1×``).

No I/O, no formatting decisions beyond layout: the builder
(:mod:`fsyncbench.report.describe`) decides what is said.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Tones a block or cell may carry; renderers may colour them (HTML) or ignore them.
TONES = ("", "good", "caution", "bad")


@dataclass(frozen=True)
class Cell:
    """A table cell: its ``text`` and a ``tone`` (one of :data:`TONES`)."""

    text: str
    tone: str = ""


@dataclass(frozen=True)
class Paragraph:
    """Running text. ``lead`` is a short bold opener ("Choose:"), ``tone`` one of
    :data:`TONES`."""

    text: str
    lead: str = ""
    tone: str = ""


@dataclass(frozen=True)
class Bullets:
    """A list; each item is a :class:`Paragraph` (its ``lead`` bold) with optional
    sub-items (plain strings)."""

    items: tuple[tuple[Paragraph, tuple[str, ...]], ...]


@dataclass(frozen=True)
class Table:
    """A table: ``headers`` and ``rows`` of :class:`Cell`; ``numeric`` names the columns
    (by index) aligned right; ``caption`` says what it shows ("" for none); ``keys``: how
    many leading columns name a row (a narrow terminal repeats them in every panel)."""

    headers: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    numeric: frozenset[int] = frozenset()
    caption: str = ""
    keys: int = 1


@dataclass(frozen=True)
class Preformatted:
    """Lines kept as they are (an aligned sub-table of audit evidence): a code block."""

    lines: tuple[str, ...]


@dataclass(frozen=True)
class Figure:
    """A chart only the HTML can draw: ``kind`` names it ("configurations", "cdf",
    "histograms") and ``caption`` says what it shows. Text and Markdown leave it out; every
    fact a figure shows is also in a table."""

    kind: str
    caption: str


Block = Paragraph | Bullets | Table | Preformatted | Figure


@dataclass(frozen=True)
class Section:
    """A part of the report under its ``title`` ("": untitled, laid out without a heading);
    ``key`` is a stable id (HTML anchor, tests)."""

    key: str
    title: str
    blocks: tuple[Block, ...]


@dataclass(frozen=True)
class Document:
    """A whole report: ``title``, a one-line ``subtitle`` (tool, schema, target) and its
    sections, the answer first."""

    title: str
    subtitle: str
    sections: tuple[Section, ...]

    def section(self, key: str) -> Section | None:
        """The section with ``key``, or None."""
        return next((s for s in self.sections if s.key == key), None)


_MICRO = re.compile(r"(?<=\d) us\b")
_TIMES = re.compile(r"(?<=\d)x\b")
_PLUS_MINUS = re.compile(r"\+-(?=\d|$)")


def pretty(text: str) -> str:
    """``text`` with the signs of print: ``41.8 us`` -> ``41.8 µs``, ``+-4.2%`` -> ``±4.2%``,
    ``3.1x`` -> ``3.1×``; only after a digit, so words are left alone."""
    return _PLUS_MINUS.sub("±", _TIMES.sub("×", _MICRO.sub(" µs", text)))
