"""Statistics of concurrent writers (``run --writers``): latency over commits and over time,
throughput, lock waits and fairness, derived from each writer's raw samples.

A percentile over commits weighs each commit once, so a writer that waits seconds for the
write lock while the others commit thousands of times barely moves it (it makes few
commits). Two views here cannot be fooled that way: each writer's own commit rate and
longest commit, and the oldest commit in progress read at every millisecond of the window
(a percentile over time).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fsyncbench.measure import intervals
from fsyncbench.model import Interval, WriterLane, WritersSummary

#: A writer that made less than this share of an equal split of the commits is starved.
#: This tool's own threshold: Jain's index alone cannot name the writer.
STARVED_SHARE = 0.25
#: A writer whose one commit took longer than this share of the window is starved too.
STARVED_WAIT_SHARE = 0.25
#: Time slices the window is cut into for the percentiles' intervals (a jackknife over
#: them, :func:`fsyncbench.measure.intervals.quantile_interval`).
TIME_SLICES = 10
#: Spacing of the instants at which the oldest commit in progress is read (ns).
INSTANT_NS = 1_000_000


def _arrays(lane: WriterLane) -> tuple[np.ndarray, np.ndarray]:
    starts = np.asarray(lane.start_samples_ns, dtype=np.int64)
    latencies = np.asarray(lane.samples_ns, dtype=np.int64)
    if lane.abandoned:
        starts = np.append(starts, lane.abandoned_start_ns)
        latencies = np.append(latencies, lane.abandoned_wait_ns)
    return starts, latencies


def oldest_wait(lanes: Sequence[WriterLane], window_ns: int) -> np.ndarray:
    """At every :data:`INSTANT_NS` of ``[0, window_ns)``: how long (ns) the oldest commit in
    progress then had been running (0 where no writer was inside a commit). An abandoned
    wait counts as a commit in progress. Shape: (window_ns // INSTANT_NS,)."""
    instants = np.arange(0, max(window_ns, 1), INSTANT_NS, dtype=np.int64)
    oldest = np.zeros(instants.shape, dtype=np.int64)
    for lane in lanes:
        starts, latencies = _arrays(lane)
        if starts.size == 0:
            continue
        order = np.argsort(starts, kind="stable")
        starts, ends = starts[order], starts[order] + latencies[order]
        idx = np.searchsorted(starts, instants, side="right") - 1
        inside = (idx >= 0) & (instants < ends[np.maximum(idx, 0)])
        age = np.where(inside, instants - starts[np.maximum(idx, 0)], 0)
        np.maximum(oldest, age, out=oldest)
    return oldest


def jain_index(rates: Sequence[float]) -> float:
    """Jain's fairness index of ``rates``: (sum x)^2 / (n sum x^2), 1 when all are equal,
    1/n when one has everything (Jain, Chiu & Hawe 1984, "A Quantitative Measure of
    Fairness and Discrimination for Resource Allocation in Shared Computer Systems",
    DEC-TR-301). 1.0 for no rates or all zero."""
    x = np.asarray(rates, dtype=float)
    square = float(np.sum(x * x))
    return 1.0 if x.size == 0 or square == 0 else float(np.sum(x) ** 2 / (x.size * square))


def summarize(lanes: Sequence[WriterLane], window_ns: int, steps_per_commit: int) -> WritersSummary:
    """:class:`fsyncbench.model.WritersSummary` of one point's ``lanes`` over a window of
    ``window_ns`` (ns). Percentile intervals come from the jackknife over
    :data:`TIME_SLICES` slices of the window (commits in order of their start), so commits
    that move together in time widen them; a point with too few commits has none (the
    interval's ``reason`` says why)."""
    starts = np.concatenate([np.asarray(la.start_samples_ns, dtype=np.int64) for la in lanes])
    latencies = np.concatenate([np.asarray(la.samples_ns, dtype=np.int64) for la in lanes])
    waits = np.concatenate([np.asarray(la.lock_wait_samples_ns, dtype=np.int64) for la in lanes])
    order = np.argsort(starts, kind="stable")
    starts, latencies = starts[order], latencies[order]
    window_s = window_ns / 1e9
    edges = np.linspace(0, window_ns, TIME_SLICES + 1)
    counts = np.histogram(starts, bins=edges)[0] if starts.size else np.zeros(TIME_SLICES)
    slice_counts = [int(c) for c in counts if c > 0]
    p50 = _interval(latencies, slice_counts, 50.0)
    p99 = intervals.floored(_interval(latencies, slice_counts, 99.0), p50.estimate_ns)
    finished = int(np.count_nonzero(starts + latencies <= window_ns))
    per_writer = [
        sum(1 for s, x in zip(la.start_samples_ns, la.samples_ns) if s + x <= window_ns) / window_s
        for la in lanes
    ]
    longest = [
        float(max([*la.samples_ns, la.abandoned_wait_ns if la.abandoned else 0], default=0))
        for la in lanes
    ]
    fair = sum(per_writer) / len(lanes) if lanes else 0.0
    starved = tuple(
        la.writer
        for la, rate, long in zip(lanes, per_writer, longest)
        if len(lanes) > 1 and (rate < STARVED_SHARE * fair or long > STARVED_WAIT_SHARE * window_ns)
    )
    oldest = oldest_wait(lanes, window_ns)
    total = float(latencies.sum()) if latencies.size else 0.0
    return WritersSummary(
        commits=int(latencies.size),
        steps=int(latencies.size) * steps_per_commit,
        window_ns=window_ns,
        commits_per_s=finished / window_s,
        steps_per_s=finished * steps_per_commit / window_s,
        p50_interval=p50,
        p99_interval=p99,
        p999_ns=float(np.percentile(latencies, 99.9)) if latencies.size else 0.0,
        max_ns=float(latencies.max()) if latencies.size else 0.0,
        lock_wait_share=float(waits.sum()) / total if total else 0.0,
        busy_errors=sum(la.busy_errors for la in lanes),
        abandoned=sum(la.abandoned for la in lanes),
        writer_commits_per_s=tuple(per_writer),
        writer_longest_ns=tuple(longest),
        fairness=jain_index(per_writer),
        oldest_wait_p99_ns=float(np.percentile(oldest, 99)) if oldest.size else 0.0,
        oldest_wait_max_ns=float(oldest.max()) if oldest.size else 0.0,
        starved=starved,
    )


def _interval(latencies: np.ndarray, slice_counts: Sequence[int], percentile: float) -> Interval:
    if latencies.size == 0:
        return Interval(0.0, None, None, None, 0.0, 0, "block-jackknife", "no commits")
    return intervals.quantile_interval(latencies, slice_counts, percentile)
