"""Sets of sequence numbers as sorted, disjoint, inclusive ranges ``[(first, last), ...]``.

A power-cut run acknowledges commits 1..N almost contiguously, so ranges keep even millions
of sequence numbers small on the wire, in reports and in memory.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

Ranges = list[tuple[int, int]]


def to_ranges(seqs: Iterable[int]) -> Ranges:
    """Ascending integers (duplicates allowed) -> ranges."""
    out: Ranges = []
    for s in seqs:
        if out and s <= out[-1][1] + 1:
            if s > out[-1][1]:
                out[-1] = (out[-1][0], s)
            elif s < out[-1][0]:
                raise ValueError("sequence numbers must ascend")
        else:
            out.append((s, s))
    return out


def count(ranges: Sequence[tuple[int, int]]) -> int:
    """How many numbers the ranges hold."""
    return sum(b - a + 1 for a, b in ranges)


def subtract(a: Sequence[tuple[int, int]], b: Sequence[tuple[int, int]]) -> Ranges:
    """The numbers in ``a`` that are not in ``b`` (both sorted and disjoint)."""
    out: Ranges = []
    j = 0
    for lo, hi in a:
        cur = lo
        while j < len(b) and b[j][1] < cur:
            j += 1
        k = j
        while k < len(b) and b[k][0] <= hi and cur <= hi:
            if b[k][0] > cur:
                out.append((cur, b[k][0] - 1))
            cur = max(cur, b[k][1] + 1)
            k += 1
        if cur <= hi:
            out.append((cur, hi))
    return out


def format_ranges(ranges: Sequence[tuple[int, int]], limit: int = 40) -> str:
    """``"100-102, 251-300, 412"``; after ``limit`` ranges ``", ... (N more ranges)"``."""
    parts = [str(a) if a == b else f"{a}-{b}" for a, b in ranges[:limit]]
    if len(ranges) > limit:
        parts.append(f"... ({len(ranges) - limit} more ranges)")
    return ", ".join(parts) if parts else "none"
