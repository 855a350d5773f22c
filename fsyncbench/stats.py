"""Statistics over raw samples (numpy only): percentiles, ops/s, confidence intervals, the
precision check of the adaptive stop, and the "at the tool's floor" comparison.

Summaries are always derived from the raw samples kept in each result; nothing here
measures or rounds for display.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence

import numpy as np

from fsyncbench.model import Result, Summary

#: Bootstrap resamples for the percentile CIs (Efron & Tibshirani, "An Introduction to the
#: Bootstrap", 1993, ch. 13: 1,000-2,000 resamples suffice for percentile intervals).
BOOTSTRAP_RESAMPLES = 2000

#: Above this many samples the distribution-free order-statistic interval is used instead
#: of the bootstrap (Hahn & Meeker, "Statistical Intervals", 1991, sec. 5.2: CI of a
#: quantile from binomial order statistics). It is exact for any continuous distribution,
#: costs O(n) instead of O(n x resamples) (a 20,000-sample bootstrap takes over a second),
#: and it is the interval the adaptive stop checks, so the reported CI is the one that
#: stopped sampling. Below about 400 samples the p99 interval has no upper order statistic
#: at 95 %, so small sample sets keep the bootstrap.
BOOTSTRAP_MAX_SAMPLES = 1_000

#: A result whose p50 is within this factor of the applicable floor's p50 is "at the
#: tool's floor": it measures the tool (Python, SQLite's CPU work), not the storage.
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

#: Percentile method. "linear" is numpy's default and the same as Excel's PERCENTILE.INC.
PERCENTILE_METHOD = "linear"


def summarize(
    samples_ns: Sequence[int], confidence: float = 0.95, seed: int = 0
) -> Summary:
    """Summary of ``samples_ns`` (operation times in ns, at least one).

    ``ops_per_s`` is samples per second of summed operation time (1e9 / mean), i.e. the
    rate at queue depth 1. CIs are for p50 and p99 at ``confidence``; ``seed`` makes the
    bootstrap repeatable. Raises ValueError on an empty sample set.
    """
    # one sorted float copy serves everything (a million samples: 8 MB and no other large
    # temporary, so summarising stays cheap next to the samples' own tuple)
    data = np.array(samples_ns, dtype=np.float64)
    if data.size == 0:
        raise ValueError("no samples to summarize")
    data.sort()
    n = int(data.size)
    lowest, highest = float(data[0]), float(data[-1])
    mean = float(data.mean())
    stdev = _stdev(data, mean)
    if n <= BOOTSTRAP_MAX_SAMPLES:
        (p50_ci, p99_ci), method, resamples = (
            bootstrap_ci(data, (50, 99), confidence, BOOTSTRAP_RESAMPLES, seed),
            "bootstrap",
            BOOTSTRAP_RESAMPLES,
        )
    else:  # the data are sorted: the interval's order statistics are plain indexes
        p50_ci, p99_ci = ((float(data[lo]), float(data[hi])) for lo, hi in (
            quantile_ci_ranks(n, 0.50, confidence), quantile_ci_ranks(n, 0.99, confidence)))
        method, resamples = "order-statistic", 0
    # last, as it may reorder the array in place (no copy)
    p50, p90, p99, p999 = np.percentile(data, [50, 90, 99, 99.9], method=PERCENTILE_METHOD,
                                        overwrite_input=True)
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
        p50_ci_ns=p50_ci,
        p99_ci_ns=p99_ci,
        ci_level=confidence,
        ci_method=method,
        ci_resamples=resamples,
        p99_ci_halfwidth_pct=ci_halfwidth_pct(float(p99), p99_ci),
    )


def _stdev(data: np.ndarray, mean: float, chunk: int = 65_536) -> float:
    """Sample standard deviation (ddof=1) in chunks: no temporary as large as ``data``."""
    n = data.size
    if n < 2:
        return 0.0
    squares = sum(float(np.sum(np.square(data[i:i + chunk] - mean))) for i in range(0, n, chunk))
    return math.sqrt(squares / (n - 1))


def bootstrap_ci(
    data: np.ndarray,
    percentiles: Sequence[float],
    confidence: float = 0.95,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
) -> list[tuple[float, float]]:
    """Percentile-bootstrap CIs, one (low, high) pair per entry of ``percentiles``.

    Resamples ``data`` with replacement ``resamples`` times (in chunks, so memory stays at
    about 16 MB whatever the sample count). Same unit as ``data``.
    """
    rng = np.random.default_rng(seed)
    n = data.size
    chunk = max(1, 2_000_000 // max(n, 1))
    estimates = []
    done = 0
    while done < resamples:
        take = min(chunk, resamples - done)
        idx = rng.integers(0, n, size=(take, n))
        estimates.append(np.percentile(data[idx], percentiles, axis=1, method=PERCENTILE_METHOD))
        done += take
    est = np.concatenate(estimates, axis=1)
    alpha = (1.0 - confidence) / 2.0
    lows = np.quantile(est, alpha, axis=1)
    highs = np.quantile(est, 1.0 - alpha, axis=1)
    return [(float(lo), float(hi)) for lo, hi in zip(lows, highs)]


def order_statistic_ci(
    data: np.ndarray, percentile: float, confidence: float = 0.95
) -> tuple[float, float]:
    """Distribution-free CI of one percentile from order statistics (exact binomial ranks,
    :func:`quantile_ci_ranks`; Hahn & Meeker 1991, sec. 5.2). Same unit as ``data``."""
    data = np.asarray(data)
    lo, hi = quantile_ci_ranks(int(data.size), percentile / 100.0, confidence)
    ordered = np.partition(data, (lo, hi))
    return float(ordered[lo]), float(ordered[hi])


@functools.lru_cache(maxsize=256)
def quantile_ci_ranks(n: int, q: float, confidence: float = 0.95) -> tuple[int, int]:
    """0-based indexes (lo, hi) into the sorted sample of the distribution-free CI of the
    ``q`` quantile: with B ~ Binomial(n, q), lo is the largest k with P(B <= k) <= alpha/2
    and hi the smallest k with P(B <= k) >= 1 - alpha/2, so P(x[lo] <= quantile <= x[hi])
    >= ``confidence`` for any continuous distribution (Hahn & Meeker 1991, sec. 5.2).

    Where the sample is too small for a bound to exist the index is clamped to the minimum
    or maximum (the interval is then wider than stated, never narrower). The binomial is
    summed over a +-12 standard deviation window (the mass outside is below 1e-30).
    """
    if n < 1 or not 0 < q < 1:
        raise ValueError("n >= 1 and 0 < q < 1 are required")
    alpha = (1.0 - confidence) / 2.0
    mu, sd = n * q, math.sqrt(n * q * (1 - q))
    k0, k1 = max(0, int(mu - 12 * sd) - 10), min(n, int(mu + 12 * sd) + 10)
    ks = np.arange(k0, k1 + 1)
    # log pmf(k+1) - log pmf(k) = log((n-k)/(k+1)) + log(q/(1-q)); normalised over the window
    steps = np.log((n - ks[:-1]) / (ks[:-1] + 1.0)) + math.log(q) - math.log1p(-q)
    log_pmf = np.concatenate(([0.0], np.cumsum(steps)))
    pmf = np.exp(log_pmf - log_pmf.max())
    cdf = np.cumsum(pmf / pmf.sum())
    below = np.nonzero(cdf <= alpha)[0]
    lo = int(ks[below[-1]]) if below.size else 0
    above = np.nonzero(cdf >= 1.0 - alpha)[0]
    hi = int(ks[above[0]]) if above.size else n
    return min(lo, n - 1), min(hi, n - 1)


def ci_halfwidth_pct(estimate: float, ci: Sequence[float]) -> float | None:
    """The larger distance from ``estimate`` to either CI bound, in % of ``estimate``
    ("p99 is known to within +-x %"). None when the estimate is not positive."""
    if not estimate > 0:
        return None
    return 100.0 * max(estimate - ci[0], ci[1] - estimate) / estimate


def p99_ci_halfwidth_pct(samples: Iterable[int] | np.ndarray, confidence: float = 0.95) -> float:
    """Half-width (% of p99) of the order-statistic CI of p99: the adaptive stop's check.

    One O(n) partition; p99 uses numpy's linear method like :func:`summarize`, so above
    :data:`BOOTSTRAP_MAX_SAMPLES` the value equals ``summarize(...).p99_ci_halfwidth_pct``.
    ``samples`` may be an ``array('q')`` (it is copied, so the caller can keep appending).
    """
    data = np.array(samples, dtype=np.float64)
    n = int(data.size)
    if n == 0:
        raise ValueError("no samples")
    lo, hi = quantile_ci_ranks(n, 0.99, confidence)
    pos = (n - 1) * 0.99
    k = int(math.floor(pos))
    k_next = min(k + 1, n - 1)
    part = np.partition(data, sorted({lo, hi, k, k_next}))
    p99 = part[k] + (pos - k) * (part[k_next] - part[k])
    half = ci_halfwidth_pct(float(p99), (float(part[lo]), float(part[hi])))
    return math.inf if half is None else half


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


def linear_fit(x: Sequence[float], y: Sequence[float],
               weights: Sequence[float] | None = None) -> tuple[float, float, float | None]:
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
