"""Reference computations for expected values, written from the published definitions with
numpy and scipy.stats only: nothing here calls fsyncbench, so a test comparing fsyncbench
with these functions compares two independent implementations.

The interval is the delete-a-group jackknife of log(percentile) (Kuensch 1989, Ann. Statist.
17(3):1217-1241; unequal groups as in Busing, Meijer & van der Leeden 1999, Statistics and
Computing 9:3-8) with a Student t quantile on Kish's effective number of blocks holding the
tail, less one (Kish 1965, sec. 11.7): the method fsyncbench.measure.stats documents. It is computed
the slow, obvious way: every percentile by ``np.percentile`` (method "linear") on the
samples with the block deleted, the t quantile by ``scipy.stats.t.ppf``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import t as student_t

#: fsyncbench's documented rules for giving no interval (stats module docstring): fewer
#: than 5 blocks, fewer than 10 samples beyond the percentile, the tail in fewer than 2
#: effective blocks, or bounds beyond the smallest/largest sample.
MIN_BLOCKS, MIN_TAIL_SAMPLES, MIN_TAIL_BLOCKS, MIN_ROUNDS = 5, 10, 2, 3


def _jackknife(x: np.ndarray, groups: list[np.ndarray], pct: float, confidence: float):
    """(se of log percentile, df, (low, high) or None) of the jackknife over ``groups``
    (index arrays into ``x``); None when the tail lies in too few groups. The bounds are
    None where they would reach beyond the samples (fsyncbench then gives no interval)."""
    n = x.size
    q = pct / 100.0
    est = float(np.percentile(x, pct, method="linear"))
    b = len(groups)
    m = np.array([g.size for g in groups], dtype=float)
    beyond = np.array(
        [np.sum(x[g] >= est) if q >= 0.5 else np.sum(x[g] <= est) for g in groups], dtype=float
    )
    effective = beyond.sum() ** 2 / np.sum(beyond**2) if beyond.sum() > 0 else 0.0
    if effective < MIN_TAIL_BLOCKS:
        return None
    df = min(b - 1.0, effective - 1.0)
    theta = math.log(est)
    theta_j = np.array(
        [math.log(np.percentile(np.delete(x, g), pct, method="linear")) for g in groups]
    )
    h = n / m
    pseudo = h * theta - (h - 1.0) * theta_j
    theta_jack = b * theta - np.sum((1.0 - m / n) * theta_j)
    se = math.sqrt(np.sum((pseudo - theta_jack) ** 2 / (h - 1.0)) / b)
    t = float(student_t.ppf(0.5 + confidence / 2.0, df))
    low, high = est * math.exp(-t * se), est * math.exp(t * se)
    outside = low < x.min() * (1 - 1e-12) or high > x.max() * (1 + 1e-12)
    se = max(se, tick(x) / est)  # never finer than one tick of the clock
    low, high = est * math.exp(-t * se), est * math.exp(t * se)
    return se, df, None if outside else (low, high)


def tick(x) -> int:
    """The clock's tick: the greatest common divisor of the differences between the values
    (Python integers, one by one), 1 when they are all equal."""
    values = [int(v) for v in np.asarray(x).ravel()]
    low = min(values)
    g = 0
    for v in values:
        g = math.gcd(g, v - low)
    return max(1, g)


def jackknife(samples, slice_counts, pct: float, slice_rounds=(), confidence: float = 0.95):
    """(estimate, se of log estimate or None, df, (low, high) or None) of percentile ``pct``
    of ``samples`` taken in consecutive slices of ``slice_counts`` samples; with at least
    three rounds the wider of the slice and the round interval (no round interval: none at
    all)."""
    x = np.asarray(samples, dtype=float)
    est = float(np.percentile(x, pct, method="linear"))
    counts = [int(c) for c in slice_counts]
    starts = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(int)
    slices = [np.arange(s, s + c) for s, c in zip(starts, counts) if c > 0]
    q = pct / 100.0
    if x.size * min(q, 1 - q) < MIN_TAIL_SAMPLES or len(slices) < MIN_BLOCKS:
        return est, None, 0.0, None
    best = _jackknife(x, slices, pct, confidence)
    rounds = sorted(set(slice_rounds))
    if best is not None and best[2] is not None and len(rounds) >= MIN_ROUNDS:
        by_round = [
            np.concatenate(
                [np.arange(s, s + c) for s, c, r in zip(starts, counts, slice_rounds) if r == k]
            )
            for k in rounds
        ]
        wide = _jackknife(x, by_round, pct, confidence)
        if wide is None or wide[2] is None or wide[2][1] / wide[2][0] > best[2][1] / best[2][0]:
            best = wide
    if best is None:
        return est, None, 0.0, None
    return est, best[0], best[1], best[2]


def interval(samples, slice_counts, pct: float, slice_rounds=(), confidence: float = 0.95):
    """(estimate, (low, high) or None): :func:`jackknife` without the standard error."""
    est, _se, _df, bounds = jackknife(samples, slice_counts, pct, slice_rounds, confidence)
    return est, bounds


def welch_p(a: tuple, b: tuple) -> float:
    """Two-sided p-value of log(B) - log(A) over the combined standard error of two
    :func:`jackknife` results, with Welch-Satterthwaite degrees of freedom (Welch 1947)."""
    (ea, sa, dfa, _), (eb, sb, dfb, _) = a, b
    va, vb = sa**2, sb**2
    df = (va + vb) ** 2 / (va**2 / dfa + vb**2 / dfb)
    return float(2.0 * student_t.sf(abs(math.log(eb / ea)) / math.sqrt(va + vb), df))


def holm(p_values) -> list[float]:
    """Holm's (1979) step-down adjustment: the i-th smallest of m p-values times (m - i),
    0-based, made non-decreasing in that order, at most 1."""
    order = np.argsort(p_values, kind="stable")
    m = len(p_values)
    out = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        out[i] = running
    return out


#: The CI target needs an interval on at least this many degrees of freedom.
MIN_TARGET_DF = 4.0


def p99_halfwidth_pct(samples, slice_counts, slice_rounds=()) -> float | None:
    """The larger distance from p99 to a bound of its interval, in % of p99 (None: no
    interval, or one on fewer than MIN_TARGET_DF degrees of freedom)."""
    est, _se, df, bounds = jackknife(samples, slice_counts, 99, slice_rounds)
    if bounds is None or df < MIN_TARGET_DF:
        return None
    return 100.0 * max(est - bounds[0], bounds[1] - est) / est


def hand_p99_blocks() -> tuple[list[int], list[int]]:
    """1,000 samples in 5 slices of 200, built so that every percentile the jackknife needs
    is known by hand (see test_stats.test_p99_halfwidth_by_hand)."""
    samples: list[int] = []
    for block in range(5):
        tail = 200 if block == 0 else 1100
        samples += [1] + [100] * 197 + [tail, tail]
    return samples, [200] * 5


def run_variance(r, pct: float) -> tuple[float, float]:
    """(w, df) of a result for a test between runs: the variance of the log of its rounds'
    percentiles (numpy on each round's samples), never below the square of its own
    jackknife SE nor of one clock tick relative to the percentile, on rounds - 1 degrees of
    freedom."""
    x = np.asarray(r.samples_ns, dtype=float)
    ends = np.cumsum(r.slice_counts)
    per_round: dict[int, list] = {}
    for start, end, rr in zip(ends - np.asarray(r.slice_counts), ends, r.slice_rounds):
        per_round.setdefault(rr, []).append(x[start:end])
    figures = [np.percentile(np.concatenate(v), pct) for _, v in sorted(per_round.items())]
    est, se, _df, _bounds = jackknife(x, r.slice_counts, pct, r.slice_rounds)
    sd = float(np.std(np.log(figures), ddof=1))
    return max(sd, se or 0.0, tick(x) / est) ** 2, len(figures) - 1.0


def pair_p(a, b, pct: float) -> float:
    """Two-sided p of B against A on the pair basis: log ratio over sqrt(w_A + w_B),
    Welch-Satterthwaite df."""
    (wa, da), (wb, db) = run_variance(a, pct), run_variance(b, pct)
    pa = np.percentile(np.asarray(a.samples_ns, dtype=float), pct)
    pb = np.percentile(np.asarray(b.samples_ns, dtype=float), pct)
    df = (wa + wb) ** 2 / (wa**2 / da + wb**2 / db)
    return float(2.0 * student_t.sf(abs(math.log(pb / pa)) / math.sqrt(wa + wb), df))
