"""Statistics over raw samples (numpy only): percentiles, ops/s and confidence intervals.

Summaries are always derived from the raw samples kept in each result; nothing here
measures or rounds for display.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fsyncbench.model import Summary

#: Bootstrap resamples for the percentile CIs (Efron & Tibshirani, "An Introduction to the
#: Bootstrap", 1993, ch. 13: 1,000-2,000 resamples suffice for percentile intervals).
BOOTSTRAP_RESAMPLES = 2000

#: Above this many samples a bootstrap costs more than it tells; the distribution-free
#: order-statistic interval is used instead (Hahn & Meeker, "Statistical Intervals", 1991,
#: sec. 5.2: CI of a quantile from binomial order statistics).
BOOTSTRAP_MAX_SAMPLES = 50_000

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
    data = np.asarray(samples_ns, dtype=np.float64)
    if data.size == 0:
        raise ValueError("no samples to summarize")
    p50, p90, p99, p999 = np.percentile(data, [50, 90, 99, 99.9], method=PERCENTILE_METHOD)
    mean = float(data.mean())
    if data.size <= BOOTSTRAP_MAX_SAMPLES:
        (p50_ci, p99_ci), method, resamples = (
            bootstrap_ci(data, (50, 99), confidence, BOOTSTRAP_RESAMPLES, seed),
            "bootstrap",
            BOOTSTRAP_RESAMPLES,
        )
    else:
        p50_ci = order_statistic_ci(data, 50, confidence)
        p99_ci = order_statistic_ci(data, 99, confidence)
        method, resamples = "order-statistic", 0
    return Summary(
        count=int(data.size),
        min_ns=float(data.min()),
        p50_ns=float(p50),
        p90_ns=float(p90),
        p99_ns=float(p99),
        p999_ns=float(p999),
        max_ns=float(data.max()),
        mean_ns=mean,
        stdev_ns=float(data.std(ddof=1)) if data.size > 1 else 0.0,
        ops_per_s=1e9 / mean if mean > 0 else float("inf"),
        p50_ci_ns=p50_ci,
        p99_ci_ns=p99_ci,
        ci_level=confidence,
        ci_method=method,
        ci_resamples=resamples,
    )


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
    """Distribution-free CI of one percentile from order statistics (normal approximation
    to the binomial; Hahn & Meeker 1991, sec. 5.2). Same unit as ``data``."""
    n = data.size
    q = percentile / 100.0
    z = {0.90: 1.6449, 0.95: 1.96, 0.99: 2.5758}.get(round(confidence, 2), 1.96)
    half = z * np.sqrt(n * q * (1 - q))
    lo = int(max(0, np.floor(n * q - half)))
    hi = int(min(n - 1, np.ceil(n * q + half)))
    ordered = np.partition(data, (lo, hi))
    return float(ordered[lo]), float(ordered[hi])


def ratio(numerator_ns: float, denominator_ns: float) -> float | None:
    """numerator / denominator, None when the denominator is zero."""
    return numerator_ns / denominator_ns if denominator_ns else None
