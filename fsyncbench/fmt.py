"""How durations, intervals and their precision are written, in every renderer alike.

One interval, one text: the terminal table, Markdown, HTML, ``compare`` and the gates all
format a :class:`fsyncbench.model.Interval` through these functions, so the same result
never reads differently in two places.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from fsyncbench.model import Interval

#: An interval is written as "+-x%" only when its two sides differ by at most this factor;
#: otherwise both sides are given ("+25.1/-16.3%"): a single +-x would hide that the
#: interval reaches further up than down (intervals of latencies are asymmetric, as
#: ratios are).
SYMMETRIC_ENOUGH = 1.25


def fmt_ns(ns: float | None) -> str:
    """A duration with a readable unit: ``850 ns``, ``41.8 us``, ``3.02 ms``, ``1.20 s``."""
    if ns is None:
        return "-"
    if ns < 1_000:
        return f"{ns:.0f} ns"
    if ns < 1_000_000:
        return f"{ns / 1e3:.3g} us" if ns < 100_000 else f"{ns / 1e3:.0f} us"
    if ns < 1_000_000_000:
        return f"{ns / 1e6:.3g} ms" if ns < 100_000_000 else f"{ns / 1e6:.0f} ms"
    return f"{ns / 1e9:.2f} s"


def fmt_bandwidth(bytes_per_s: float | None) -> str:
    """A bandwidth: ``16.39 GB/s`` from 1e9 bytes/s on, else ``850 MB/s`` (decimal units,
    as drive makers quote them); ``unbounded (no growth with size)`` for None (a fit whose
    time did not grow with size)."""
    if bytes_per_s is None:
        return "unbounded (no growth with size)"
    if bytes_per_s >= 1e9:
        return f"{bytes_per_s / 1e9:,.2f} GB/s"
    return f"{bytes_per_s / 1e6:,.0f} MB/s"


def fmt_bounds(bounds: Sequence[float] | None, sep: str = ", ") -> str:
    """``[96.5 us, 3.16 ms]``; "-" without bounds."""
    if bounds is None:
        return "-"
    return f"[{fmt_ns(bounds[0])}{sep}{fmt_ns(bounds[1])}]"


def short_reason(iv: Interval | None) -> str:
    """Why there is no interval, in a few words for a table cell ("n too small",
    "3 slices"); "" when there is one or nothing is known."""
    if iv is None or iv.reason is None:
        return ""
    if iv.reason.startswith("n="):
        return "n too small"
    if "lie in too few" in iv.reason:
        return "tail in too few " + ("rounds" if "rounds" in iv.reason else "slices")
    if "disagree too much" in iv.reason:
        return ("rounds" if "rounds" in iv.reason else "slices") + " disagree"
    if "slice" in iv.reason:
        return f"{iv.blocks} slice{'s' if iv.blocks != 1 else ''}"
    return "no interval"


def fmt_interval(bounds: Sequence[float] | None, iv: Interval | None = None) -> str:
    """The interval cell: ``[low, high]``, or ``none (n too small)`` when the samples
    support no interval (``iv`` says why)."""
    if bounds is not None:
        return fmt_bounds(bounds)
    why = short_reason(iv)
    return f"none ({why})" if why else "-"


def _ceil1(x: float) -> float:
    """Round up to one decimal: a precision is never printed better than computed."""
    return math.ceil(x * 10 - 1e-9) / 10


def fmt_precision(estimate: float, bounds: Sequence[float] | None) -> str:
    """How far the interval reaches from the estimate, in % of it, rounded up:
    ``+-4.2%`` when both sides are within :data:`SYMMETRIC_ENOUGH` of each other, else
    ``+25.1/-16.3%``; "-" without an interval or a positive estimate."""
    if bounds is None or not estimate > 0:
        return "-"
    up = 100.0 * (bounds[1] - estimate) / estimate
    down = 100.0 * (estimate - bounds[0]) / estimate
    big, small = max(up, down), min(up, down)
    if small > 0 and big / small <= SYMMETRIC_ENOUGH or big == 0:
        return f"+-{_ceil1(big):.1f}%"
    return f"+{_ceil1(max(up, 0.0)):.1f}/-{_ceil1(max(down, 0.0)):.1f}%"


def fmt_spread(values_ns: Sequence[float], unit: str = "rounds") -> str:
    """Between-round (or between-run: ``unit`` "runs") spread: ``310 us - 612 us (3
    rounds)``; "-" with fewer than two values."""
    if len(values_ns) < 2:
        return "-"
    return f"{fmt_ns(min(values_ns))} - {fmt_ns(max(values_ns))} ({len(values_ns)} {unit})"
