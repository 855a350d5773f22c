"""Statistics over raw samples: the summary of a result (percentiles, ops/s, with the
intervals of :mod:`fsyncbench.measure.intervals`), the figures of earlier runs, and the
"at the tool's floor" comparison.

Summaries are always derived from the raw samples kept in each result; nothing here
measures or rounds for display.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from fsyncbench.measure.intervals import (
    PERCENTILE_METHOD,
    ci_halfwidth_pct,
    floored,
    quantile_interval,
    round_percentiles,
)
from fsyncbench.model import EarlierRun, Result, Summary

#: A result whose p50 is within this factor of the applicable floor's p50 is "at the
#: tool's floor": it measures the tool (Python, SQLite's CPU work), not the storage.
#: No external source: a project choice. Within 2x the tool's own time is at least half
#: of the figure, so the storage's share cannot be read from it.
FLOOR_FACTOR = 2.0

#: Names of the floor measurements (``Report.floors``, kind "floor") and the result kinds
#: each one is the floor of.
FLOOR_LOOP = "timing loop (empty operation)"
FLOOR_COMMIT = "commit, in-memory database"
FLOOR_WRITE = "4 KiB write, in-memory file"
FLOOR_APPLIES_TO = {
    FLOOR_LOOP: ("write", "flush", "commit"),
    FLOOR_COMMIT: ("commit",),
    FLOOR_WRITE: ("write", "flush"),
}


def summarize(
    samples_ns: Sequence[int],
    slice_counts: Sequence[int] = (),
    slice_rounds: Sequence[int] = (),
    confidence: float = 0.95,
    earlier: Sequence[EarlierRun] = (),
) -> Summary:
    """Summary of ``samples_ns`` (operation times in ns, in time order, at least one).

    ``ops_per_s`` is samples per second of summed operation time (1e9 / mean), i.e. the
    rate at queue depth 1. The p50 and p99 intervals come from :func:`quantile_interval`
    over ``slice_counts``/``slice_rounds`` (see there; without slices they assume
    independent samples and say so), widened by the spread between this run and
    ``earlier`` runs of the same measurement (:func:`between_runs_interval`). With several
    rounds each round's p50 and p99 are kept too. Raises ValueError on an empty sample set
    or slice counts that do not add up.
    """
    data = np.array(samples_ns, dtype=np.float64)
    if data.size == 0:
        raise ValueError("no samples to summarize")
    p50_iv = quantile_interval(
        data, slice_counts, 50, confidence, slice_rounds, earlier_figures(earlier, 50)
    )
    p99_raw = quantile_interval(
        data, slice_counts, 99, confidence, slice_rounds, earlier_figures(earlier, 99)
    )
    p99_iv = floored(p99_raw, p50_iv.estimate_ns)
    round_p50 = round_percentiles(data, slice_counts, slice_rounds, 50)
    round_p99 = round_percentiles(data, slice_counts, slice_rounds, 99)
    # one sorted copy serves the rest (a million samples: 8 MB)
    data.sort()
    n = int(data.size)
    lowest, highest = float(data[0]), float(data[-1])
    mean = float(data.mean())
    stdev = _stdev(data, mean)
    p50, p90, p99, p999 = np.percentile(
        data, [50, 90, 99, 99.9], method=PERCENTILE_METHOD, overwrite_input=True
    )
    return Summary(
        count=n,
        min_ns=lowest,
        p50_ns=float(p50),
        p90_ns=float(p90),
        p99_ns=float(p99),
        p999_ns=float(p999),
        max_ns=highest,
        mean_ns=mean,
        stdev_ns=stdev,
        ops_per_s=1e9 / mean if mean > 0 else float("inf"),
        p50_ci_ns=p50_iv.bounds,
        p99_ci_ns=p99_iv.bounds,
        ci_level=confidence,
        ci_method=p99_iv.method,
        ci_resamples=0,
        p99_ci_halfwidth_pct=None  # the precision of the interval as computed, not floored
        if p99_raw.bounds is None
        else ci_halfwidth_pct(float(p99), p99_raw.bounds),
        p50_interval=p50_iv,
        p99_interval=p99_iv,
        round_p50_ns=round_p50,
        round_p99_ns=round_p99,
    )


def earlier_figures(
    earlier: Sequence[EarlierRun], percentile: float
) -> tuple[tuple[float, float | None], ...]:
    """(estimate ns, own SE of its log) of ``percentile`` (50 or 99) in each earlier run:
    what :func:`quantile_interval` takes as ``earlier``. Raises ValueError for another
    percentile (earlier runs keep only those two)."""
    if percentile == 50:
        return tuple((e.p50_ns, e.p50_se_log) for e in earlier)
    if percentile == 99:
        return tuple((e.p99_ns, e.p99_se_log) for e in earlier)
    raise ValueError("earlier runs keep p50 and p99 only")


def _stdev(data: np.ndarray, mean: float, chunk: int = 65_536) -> float:
    """Sample standard deviation (ddof=1) in chunks: no temporary as large as ``data``."""
    n = data.size
    if n < 2:
        return 0.0
    squares = sum(float(np.sum(np.square(data[i : i + chunk] - mean))) for i in range(0, n, chunk))
    return math.sqrt(squares / (n - 1))


def tool_floor(result: Result, floors: Sequence[Result]) -> Result | None:
    """The floor that applies to ``result`` (:data:`FLOOR_APPLIES_TO`): the one with the
    highest p50 among those for its kind. None when no floor applies."""
    fitting = [f for f in floors if result.kind in FLOOR_APPLIES_TO.get(f.name, ())]
    return max(fitting, key=lambda f: f.summary.p50_ns, default=None)


def at_tool_floor(result: Result, floors: Sequence[Result], factor: float = FLOOR_FACTOR) -> bool:
    """True when ``result``'s p50 is within ``factor`` x its floor's p50 (see
    :data:`FLOOR_FACTOR`): the figure then says nothing about the storage."""
    floor = tool_floor(result, floors)
    return floor is not None and result.summary.p50_ns <= factor * floor.summary.p50_ns


def ratio(numerator_ns: float, denominator_ns: float) -> float | None:
    """numerator / denominator, None when the denominator is zero."""
    return numerator_ns / denominator_ns if denominator_ns else None


def linear_fit(
    x: Sequence[float], y: Sequence[float], weights: Sequence[float] | None = None
) -> tuple[float, float, float | None]:
    """(Weighted) least squares y = intercept + slope * x (numpy.linalg.lstsq on rows scaled
    by ``weights``; weights 1/y minimise relative error, so small x values, whose y is
    small, still pin the intercept).

    Returns (intercept, slope, R^2 of the unweighted residuals); R^2 is None when ``y`` has
    no variance. Used by the audit's dirty-size sweep: latency = flush cost + bytes /
    bandwidth. Raises ValueError with fewer than two distinct x values.
    """
    xs = np.asarray(x, dtype=np.float64)
    ys = np.asarray(y, dtype=np.float64)
    if xs.size != ys.size or np.unique(xs).size < 2:
        raise ValueError("a line needs at least two distinct x values")
    w = np.ones_like(xs) if weights is None else np.asarray(weights, dtype=np.float64)
    design = np.column_stack([np.ones_like(xs), xs]) * w[:, None]
    (intercept, slope), *_ = np.linalg.lstsq(design, ys * w, rcond=None)
    total = float(((ys - ys.mean()) ** 2).sum())
    resid = float(((ys - (intercept + slope * xs)) ** 2).sum())
    return float(intercept), float(slope), (1.0 - resid / total) if total > 0 else None
