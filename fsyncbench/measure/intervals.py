"""Confidence intervals of percentiles valid for samples that move together in time (the
block jackknife over slices and rounds, the order-statistic interval of schema 1 reports),
the interval that includes earlier runs of the same measurement, Student's t
(:mod:`fsyncbench.measure.special`),
and the precision check of the adaptive stop. :mod:`fsyncbench.measure.stats` summarizes a
result with these.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Final

import numpy as np

from fsyncbench.measure import special
from fsyncbench.model import Interval

#: Percentile method. "linear" is numpy's default and the same as Excel's PERCENTILE.INC.
PERCENTILE_METHOD: Final = "linear"


@functools.lru_cache(maxsize=256)
def quantile_ci_ranks(n: int, q: float, confidence: float = 0.95) -> tuple[int, int] | None:
    """0-based indexes (lo, hi) into the sorted sample of the distribution-free CI of the
    ``q`` quantile: with B ~ Binomial(n, q), lo is the largest k with P(B <= k) <= alpha/2
    and hi the smallest k with P(B <= k) >= 1 - alpha/2, so P(x[lo] <= quantile <= x[hi])
    >= ``confidence`` for any continuous distribution (Hahn & Meeker 1991, sec. 5.2).

    None where the sample is too small for a bound to exist (no k < n for hi: q**n >
    alpha/2; no k for lo: (1 - q)**n > alpha/2): the smallest or largest sample would cover
    the quantile less often than stated (:func:`order_statistic_min_n`). The binomial is
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
    above = np.nonzero(cdf >= 1.0 - alpha)[0]
    if not below.size or not above.size or int(ks[above[0]]) >= n:
        return None
    return int(ks[below[-1]]), int(ks[above[0]])


def order_statistic_min_n(q: float, confidence: float = 0.95) -> int:
    """Fewest samples for which :func:`quantile_ci_ranks` has both bounds of the ``q``
    quantile: the smallest n with q**n <= alpha/2 and (1 - q)**n <= alpha/2 (368 for p99
    at 95 %)."""
    alpha = (1.0 - confidence) / 2.0
    n = max(1, math.ceil(max(math.log(alpha) / math.log(q), math.log(alpha) / math.log1p(-q))) - 1)
    while q**n > alpha or (1.0 - q) ** n > alpha:
        n += 1
    return n


def quantile_upper_bound(
    samples_ns: Sequence[int] | np.ndarray,
    q: float,
    round_values_ns: Sequence[float] = (),
    confidence: float = 0.95,
) -> float | None:
    """A one-sided ``confidence`` upper bound (ns) of the ``q`` quantile that needs no
    interval: the order statistic x[hi] of :func:`quantile_ci_ranks` at
    2 x confidence - 1 (so that its upper tail alone is 1 - ``confidence``; P(quantile <=
    x[hi]) >= confidence for independent samples, Hahn & Meeker 1991, sec. 5.2), raised to
    the largest of ``round_values_ns`` (each round's own quantile: rounds are separate
    processes, and samples that move together in time make the order statistic alone too
    low). Used where the samples support no interval but a limit far above them can still
    be decided (``--max-p99-strict``). None where the sample is too small for the bound to
    exist (q**n > 1 - confidence)."""
    x = np.asarray(samples_ns, dtype=np.float64)
    if x.size < 1:
        return None
    ranks = quantile_ci_ranks(int(x.size), q, 2.0 * confidence - 1.0)
    if ranks is None:
        if q ** int(x.size) > 1.0 - confidence:
            return None
        hi = int(x.size) - 1
    else:
        hi = ranks[1]
    bound = float(np.partition(x, hi)[hi])
    return max([bound, *[float(v) for v in round_values_ns]])


# --------------------------------------------------------------------------- intervals
#
# Samples close in time move together (storage stalls, background write-back and
# neighbours on a shared host come in bursts of milliseconds to seconds), so an interval
# that treats every sample as independent is several times too narrow. The runner measures
# every configuration in short slices, round-robin, so one configuration's consecutive
# slices lie a whole rotation of the other configurations apart: the slices are the blocks
# whose spread shows the real uncertainty.

#: Fewest blocks (slices, or rounds) from which an interval is given: with fewer, the
#: spread between them is too poorly known to state one (t with 3 degrees of freedom
#: already has a 97.5 % quantile of 3.18).
MIN_BLOCKS = 5
#: Fewest effective blocks holding samples beyond the percentile (see
#: :func:`_jackknife_interval`) for an interval: with the whole tail in one burst, how far
#: it moves from run to run cannot be estimated.
MIN_TAIL_BLOCKS = 2
#: Fewest rounds (``run --rounds``) from which the jackknife over rounds is computed too
#: (t on 2 degrees of freedom: wide, as three runs can only show so much).
MIN_ROUNDS = 3
#: Fewest samples beyond a percentile (n x (1 - q), or n x q for low percentiles) for an
#: interval of it: a p99 from fewer than 1,000 samples is one of its ten largest values,
#: and how far those move from run to run cannot be estimated from inside the run.
MIN_TAIL_SAMPLES = 10

#: Method names (``Summary.ci_method``).
METHOD_BLOCKS = "block-jackknife"  # over the slices of one run (module text)
METHOD_ROUNDS = "round-jackknife"  # over the rounds, where wider than the slices'
METHOD_INDEPENDENT = "order-statistic"  # schema 1 reports: assumes independent samples


def clock_tick_ns(samples_ns: Sequence[int] | np.ndarray) -> int:
    """The clock's tick as the samples show it: the greatest common divisor of the
    differences between sample values (ns), at least 1; 1 where all samples are equal (no
    difference shows a tick); never more than the least positive sample, of which a tick is
    a divisor as well. A clock that counts in 100 ns steps (Windows'
    QueryPerformanceCounter at 10 MHz, https://learn.microsoft.com/en-us/windows/win32/
    sysinfo/acquiring-high-resolution-time-stamps) gives 100; a nanosecond clock almost
    always 1. (The first 1,000 samples are tried first: on a nanosecond clock their
    differences already give 1.)"""
    x = np.asarray(samples_ns)
    if x.size < 2:
        return 1
    ints = x.astype(np.int64)
    base = int(ints.min())
    g = int(np.gcd.reduce(ints[:1000] - base))
    if g != 1:
        g = int(np.gcd.reduce(ints - base))
    if g > 1 and base > 0:  # a duration is a whole number of ticks too: 200 us and 3 s
        g = math.gcd(g, base)  # differ by 2.9998 s, yet the tick divides 200 us
    return max(1, g)


def floored(iv: Interval, floor_ns: float) -> Interval:
    """``iv`` with its low bound raised to ``floor_ns`` where it lay below: a p99 cannot
    be below the p50 (p99 >= p50 for any distribution), so the p99 interval's low end is
    floored at the p50's estimate, far the more precise of the two. The standard error,
    the degrees of freedom and the high bound are kept (tests between runs read those), so
    only what is shown changes. An interval without bounds is returned as it is."""
    if iv.low_ns is None or iv.high_ns is None or iv.low_ns >= floor_ns:
        return iv
    return replace(iv, low_ns=min(floor_ns, iv.high_ns))


def percentile_label(percentile: float) -> str:
    """50 -> "p50", 99.9 -> "p99.9"."""
    return f"p{percentile:g}"


def quantile_interval(
    samples_ns: Sequence[int] | np.ndarray,
    slice_counts: Sequence[int],
    percentile: float,
    confidence: float = 0.95,
    slice_rounds: Sequence[int] = (),
    earlier: Sequence[tuple[float, float | None]] = (),
) -> Interval:
    """The ``confidence`` interval of ``percentile`` of ``samples_ns`` (ns, in time order),
    valid for dependent samples: the one function behind every interval fsyncbench shows
    (reports, the adaptive stop, ``compare``).

    ``slice_counts`` are the sample counts of the consecutive slices the samples were taken
    in (summing to the sample count); ``slice_rounds`` the round of each slice (empty: one
    round). Method: the delete-a-group jackknife over slices (Kuensch 1989, "The jackknife
    and the bootstrap for general stationary observations", Ann. Statist. 17(3):1217-1241;
    unequal group sizes as in Busing, Meijer & van der Leeden 1999, "Delete-m jackknife for
    unequal m", Statistics and Computing 9:3-8), on the log of the percentile, with a
    Student t quantile on blocks - 1 degrees of freedom, so the interval is
    estimate x exp(+-t x SE): positive and asymmetric, as ratios of latencies are. Deleting
    whole blocks makes the jackknife consistent for percentiles, which the delete-one
    jackknife is not (Shao & Wu 1989, Ann. Statist. 17(3):1176-1197). With at least
    :data:`MIN_ROUNDS` rounds the same jackknife over rounds is computed too and the wider
    of the two is given (rounds also differ by fresh files, their own process and warmup).

    No interval (``reason`` set) with fewer than :data:`MIN_BLOCKS` slices or fewer than
    :data:`MIN_TAIL_SAMPLES` samples beyond the percentile. Without ``slice_counts`` (a
    schema 1 report) the order-statistic interval of :func:`quantile_ci_ranks` is given,
    named :data:`METHOD_INDEPENDENT`: it assumes independent samples (none below
    :func:`order_statistic_min_n` samples).

    ``earlier``: (estimate ns, own SE of its log or None) of the same percentile in earlier
    runs of the same measurement; the interval is then widened by the spread between runs
    (:func:`between_runs_interval`). Raises ValueError on an empty sample set, counts that
    do not add up, or a percentile outside (0, 100).
    """
    own = _own_interval(samples_ns, slice_counts, percentile, confidence, slice_rounds)
    return between_runs_interval(own, earlier, confidence)


def _own_interval(
    samples_ns: Sequence[int] | np.ndarray,
    slice_counts: Sequence[int],
    percentile: float,
    confidence: float,
    slice_rounds: Sequence[int],
) -> Interval:
    """:func:`quantile_interval` from this run's samples alone."""
    x = np.asarray(samples_ns, dtype=np.float64)
    n = int(x.size)
    if n == 0:
        raise ValueError("no samples")
    if not 0 < percentile < 100:
        raise ValueError("the percentile must lie strictly between 0 and 100")
    q = percentile / 100.0
    estimate = float(np.percentile(x, percentile, method=PERCENTILE_METHOD))
    label = percentile_label(percentile)
    if len(slice_counts) == 0:
        ranks = quantile_ci_ranks(n, q, confidence)
        if ranks is None:
            return Interval(
                estimate,
                None,
                None,
                None,
                0,
                0,
                METHOD_INDEPENDENT,
                f"n={n} too small for a {label} interval "
                f"(needs {order_statistic_min_n(q, confidence)})",
            )
        lo, hi = ranks
        part = np.partition(x, (lo, hi))
        return Interval(estimate, float(part[lo]), float(part[hi]), None, 0, 0, METHOD_INDEPENDENT)
    counts = np.asarray(slice_counts, dtype=np.int64)
    if counts.sum() != n or np.any(counts < 0):
        raise ValueError(f"slice counts add up to {int(counts.sum())}, not the {n} samples")
    counts = counts[counts > 0]
    tail = n * min(q, 1.0 - q)
    if tail < MIN_TAIL_SAMPLES:
        need = math.ceil(MIN_TAIL_SAMPLES / min(q, 1.0 - q))
        return Interval(
            estimate,
            None,
            None,
            None,
            0,
            int(counts.size),
            METHOD_BLOCKS,
            f"n={n} too small for a {label} interval (needs {need})",
        )
    if counts.size < MIN_BLOCKS:
        return Interval(
            estimate,
            None,
            None,
            None,
            0,
            int(counts.size),
            METHOD_BLOCKS,
            f"{counts.size} slice(s): too few for a {label} interval (needs {MIN_BLOCKS})",
        )
    best = _jackknife_interval(x, counts, q, estimate, confidence, METHOD_BLOCKS)
    if len(slice_rounds):
        rounds = np.asarray(slice_rounds, dtype=np.int64)
        if rounds.size != len(slice_counts):
            raise ValueError("one round per slice is required")
        per_round = np.bincount(rounds, weights=np.asarray(slice_counts, dtype=np.float64))
        per_round = per_round[per_round > 0].astype(np.int64)
        if per_round.size >= MIN_ROUNDS:
            by_round = _jackknife_interval(x, per_round, q, estimate, confidence, METHOD_ROUNDS)
            # the wider of the two; the tail in one round only (no interval) is the widest
            best_b, round_b = best.bounds, by_round.bounds  # (low_ns, high_ns)
            if best_b is not None and (
                round_b is None or (round_b[1] / round_b[0] > best_b[1] / best_b[0])
            ):
                best = by_round
    return best


#: Fewest earlier runs whose spread widens an interval: with one, the spread rests on one
#: difference (t on 1 degree of freedom is 12.7); two give t on 2 (4.3), as for
#: :data:`MIN_ROUNDS`. A project choice, as :data:`MAX_EARLIER_RUNS`.
MIN_EARLIER_RUNS = 2
#: Most earlier runs used, the most recent: the spread between runs is itself not steady (on
#: this project's VM it changed from hour to hour), so the last few runs tell the next
#: one's spread best. Chosen on this project's five A/A windows of 6-8 runs (README "How far
#: to trust the intervals"): with the last 3, 4, 5, 6, 8 and 16 runs the intervals covered
#: 92.8-98.1, 91.8-98.8, 89.2-98.2, 87.0-97.3, 81.4-96.1 and 74.8-96.7 % of other runs'
#: estimates per window; 4 is the largest whose worst window stayed above 90 %.
MAX_EARLIER_RUNS = 4


def between_runs_interval(
    own: Interval, earlier: Sequence[tuple[float, float | None]], confidence: float = 0.95
) -> Interval:
    """``own`` (this run's interval, :func:`quantile_interval` without ``earlier``) widened
    to the spread of the percentile between runs: what an interval from one run of ~30 s
    cannot see (a shared host busier at another hour, write-back, a CPU clock).

    ``earlier``: (estimate ns, that run's own SE of log(estimate) or None) per earlier run
    of the same measurement; the last :data:`MAX_EARLIER_RUNS` are used. With R runs (this
    one included) the interval is this run's estimate x exp(+-t x sd), sd the sample
    standard deviation of the R runs' log estimates and t Student's on R - 1 degrees of
    freedom: each run's estimate deviates from the percentile of this measurement at a
    random time by its run's own error plus what differs between runs, and the runs' spread
    measures both at once, as pyperf's spread between worker processes does
    (https://pyperf.readthedocs.io/en/latest/run_benchmark.html). It is an interval for the
    percentile at another time, not only for this run's stretch of it; since this run is
    one of the runs whose spread is measured it errs on the wide side (for normal run
    effects and 5 runs it covers that percentile ~99 % of the time, not 95 %: the test
    suite simulates it). It is never narrower
    than ``own`` (where this run's own interval is the wider, it is kept, with its SE and
    df), and it exists where this run alone has none (too few samples beyond the
    percentile).

    ``tau_log`` records the between-run standard deviation beyond the runs' own errors,
    sqrt(max(0, var(y) - mean(s_k^2))) (the method-of-moments estimate of the
    random-effects model, Hedges 1983, Psychological Bulletin 93:388-395; an earlier run
    without an SE counts as 0): what the runs showed, not used for the bounds.

    Returned unchanged with fewer than :data:`MIN_EARLIER_RUNS` usable earlier runs or a
    zero estimate. ``runs``, ``tau_log``, ``within_se_log`` and ``within_df`` of the result
    say what it rests on.
    """
    usable = [(e, s) for e, s in earlier if e > 0][-MAX_EARLIER_RUNS:]
    if len(usable) < MIN_EARLIER_RUNS or not own.estimate_ns > 0:
        return own
    runs = len(usable) + 1
    ys = np.log([e for e, _ in usable] + [own.estimate_ns])
    spread = float(np.var(ys, ddof=1))
    s0 = own.own_se_log if own.df > 0 else None
    squares = [(s or 0.0) ** 2 for _, s in usable] + ([s0 * s0] if s0 is not None else [])
    tau2 = max(0.0, spread - float(np.mean(squares)))
    se, df = math.sqrt(spread), float(runs - 1)
    t = t_quantile(df, 0.5 + confidence / 2.0)
    if s0 is not None:
        t_own = t_quantile(own.df, 0.5 + confidence / 2.0)
        if t * se < t_own * s0:
            se, df, t = s0, own.df, t_own
    return Interval(
        own.estimate_ns,
        own.estimate_ns * math.exp(-t * se),
        own.estimate_ns * math.exp(t * se),
        se,
        df,
        own.blocks,
        own.method,
        None,
        runs=runs,
        tau_log=math.sqrt(tau2),
        within_se_log=s0,
        within_df=own.df if s0 is not None else 0.0,
    )


def own_bounds(iv: Interval, confidence: float = 0.95) -> tuple[float, float] | None:
    """The bounds of the interval this run alone gives (estimate x exp(+-t x own SE), t on
    its own degrees of freedom, as :func:`quantile_interval` makes them) of an interval
    that earlier runs widened; ``iv.bounds`` when none did; None without an own interval."""
    if iv.runs <= 1:
        return iv.bounds
    if iv.within_se_log is None or not iv.within_df > 0:
        return None
    t = t_quantile(iv.within_df, 0.5 + confidence / 2.0)
    return (
        iv.estimate_ns * math.exp(-t * iv.within_se_log),
        iv.estimate_ns * math.exp(t * iv.within_se_log),
    )


def _jackknife_interval(
    x: np.ndarray, counts: np.ndarray, q: float, estimate: float, confidence: float, method: str
) -> Interval:
    """The delete-a-group jackknife interval of the ``q`` quantile on the log scale, the
    groups being consecutive runs of ``counts`` samples of ``x`` (see
    :func:`quantile_interval`).

    Degrees of freedom: a tail percentile is informed only by the blocks that hold samples
    at or beyond it, so t uses the effective number of blocks, Kish's (sum w)^2 / sum w^2
    (Kish 1965, "Survey Sampling", sec. 11.7) over each block's count of such samples, less
    one (a fractional df); with equal shares that is blocks - 1. Below
    :data:`MIN_TAIL_BLOCKS` effective blocks (the whole tail in one burst) there is no
    interval. The SE is never below one clock tick (:func:`clock_tick_ns`) relative to the
    estimate."""
    b = int(counts.size)
    n = int(x.size)
    ids = np.repeat(np.arange(b), counts)
    beyond = np.bincount(ids, weights=(x >= estimate) if q >= 0.5 else (x <= estimate), minlength=b)
    total = float(beyond.sum())
    effective = total * total / float(np.sum(beyond * beyond)) if total > 0 else 0.0
    df = min(b - 1.0, effective - 1.0)
    unit = "slices" if method == METHOD_BLOCKS else "rounds"
    if effective < MIN_TAIL_BLOCKS:
        return Interval(
            estimate,
            None,
            None,
            None,
            max(df, 0.0),
            b,
            method,
            f"the samples at or beyond {percentile_label(100 * q)} lie in too few "
            f"{unit} ({math.floor(effective * 100) / 100:.2f} effective) for an interval",
        )
    dropped = leave_one_block_out(x, counts, q)
    if estimate <= 0 or np.any(dropped <= 0):  # a clock too coarse to time the operation
        return Interval(
            estimate,
            None,
            None,
            None,
            df,
            b,
            method,
            "the timer could not resolve the operation (zero times)",
        )
    theta = math.log(estimate)
    theta_j = np.log(dropped)
    h = n / counts.astype(np.float64)
    pseudo = h * theta - (h - 1.0) * theta_j
    theta_jack = b * theta - float(np.sum((1.0 - counts / n) * theta_j))
    var = float(np.sum((pseudo - theta_jack) ** 2 / (h - 1.0))) / b
    se = math.sqrt(max(var, 0.0))
    t = t_quantile(df, 0.5 + confidence / 2.0)
    low, high = estimate * math.exp(-t * se), estimate * math.exp(t * se)
    # (a relative 1e-12 spares identical samples, whose rounding leaves an SE of ~1e-15)
    reaches_out = low < float(x.min()) * (1 - 1e-12) or high > float(x.max()) * (1 + 1e-12)
    # never more precise than one tick of the clock: a figure of 2 ticks cannot be known to
    # better than 1 of them, and a one-tick difference must never test as significant
    se = max(se, clock_tick_ns(x) / estimate)
    low, high = estimate * math.exp(-t * se), estimate * math.exp(t * se)
    if reaches_out:
        # an interval reaching beyond every sample measured: the few blocks disagree too much
        # for the t approximation to mean anything (with 1 degree of freedom t is 12.7)
        return Interval(
            estimate,
            None,
            None,
            se,
            df,
            b,
            method,
            f"the {unit} disagree too much for an interval (it would reach beyond "
            f"the samples measured; {df + 1:.1f} effective {unit})",
        )
    return Interval(estimate, low, high, se, df, b, method)


def leave_one_block_out(x: np.ndarray, counts: np.ndarray, q: float) -> np.ndarray:
    """The ``q`` quantile (numpy "linear") of ``x`` without each block in turn: one value
    per entry of ``counts`` (consecutive blocks of ``x``; every count positive, at least
    two blocks).

    Deleting m values moves any order statistic by at most m ranks, so only a window of
    the sorted sample around the quantile is needed: one O(n) partition and, per block,
    O(window) work, instead of sorting n values once per block.
    """
    n = int(x.size)
    b = int(counts.size)
    ids = np.repeat(np.arange(b), counts)
    n_j = n - counts
    h = (n_j - 1) * q
    k = np.floor(h).astype(np.int64)
    frac = h - k
    lo = int(k.min())
    hi = int(min(n - 1, int((k + 1 + counts).max())))
    order = np.argpartition(x, (lo, hi)) if hi > lo else np.argsort(x, kind="stable")
    below = np.bincount(ids[order[:lo]], minlength=b)
    window = order[lo : hi + 1]
    window = window[np.argsort(x[window], kind="stable")]
    wx, wb = x[window], ids[window]
    out = np.empty(b)
    for j in range(b):
        kept = wx[wb != j]
        first_rank = lo - int(below[j])  # rank, among the kept values, of kept[0]
        i = int(k[j]) - first_rank
        i1 = min(i + 1, kept.size - 1, int(n_j[j]) - 1 - first_rank)
        out[j] = kept[i] + frac[j] * (kept[i1] - kept[i])
    return out


def round_percentiles(
    samples_ns: Sequence[int] | np.ndarray,
    slice_counts: Sequence[int],
    slice_rounds: Sequence[int],
    percentile: float,
) -> tuple[float, ...]:
    """``percentile`` (ns) of each round's samples, in round order: the between-round
    spread shown beside a figure. Empty with fewer than two rounds."""
    if len(slice_rounds) == 0 or len(set(slice_rounds)) < 2:
        return ()
    x = np.asarray(samples_ns, dtype=np.float64)
    ends = np.cumsum(slice_counts)
    starts = ends - np.asarray(slice_counts)
    out = []
    for r in sorted(set(slice_rounds)):
        parts = [x[s:e] for s, e, rr in zip(starts, ends, slice_rounds) if rr == r]
        joined = np.concatenate(parts) if parts else np.empty(0)
        if joined.size:
            out.append(float(np.percentile(joined, percentile, method=PERCENTILE_METHOD)))
    return tuple(out)


def t_quantile(df: float, p: float) -> float:
    """The p quantile of Student's t with ``df`` degrees of freedom
    (:func:`fsyncbench.measure.special.t_quantile`)."""
    return special.t_quantile(df, p)


def t_two_sided_p(t: float, df: float) -> float:
    """Two-sided p-value of a t statistic with ``df`` degrees of freedom."""
    return 2.0 * special.t_cdf(-abs(t), df)


def t_one_sided_p(t: float, df: float) -> float:
    """P(T >= t) for Student's t with ``df`` degrees of freedom (inf: the normal)."""
    return special.t_cdf(-t, df)


def ci_halfwidth_pct(estimate: float, ci: Sequence[float]) -> float | None:
    """The larger distance from ``estimate`` to either CI bound, in % of ``estimate``
    ("p99 is known to within +-x %"). None when the estimate is not positive."""
    if not estimate > 0:
        return None
    return 100.0 * max(estimate - ci[0], ci[1] - estimate) / estimate


#: Fewest degrees of freedom of an interval that may meet the CI target (``--ci-target-pct``):
#: t on 4 degrees of freedom is 2.78. On fewer the interval's width is itself too
#: uncertain (its SE rests on three or fewer independent blocks) for "within +-10 %" to
#: hold in the next run: with under 2 degrees of freedom another run fell inside such an
#: interval 34 % of the time on this project's VM. A project choice.
MIN_TARGET_DF = 4.0


def target_halfwidth_pct(iv: Interval | None, confidence: float = 0.95) -> float | None:
    """The half-width (% of the estimate) of this run's own interval ``iv``
    (:func:`own_bounds`) that the CI target is checked against; None without one or with
    fewer than :data:`MIN_TARGET_DF` degrees of freedom."""
    if iv is None:
        return None
    bounds = own_bounds(iv, confidence)
    df = iv.df if iv.runs <= 1 else iv.within_df
    if bounds is None or df < MIN_TARGET_DF:
        return None
    return ci_halfwidth_pct(iv.estimate_ns, bounds)


def p99_ci_halfwidth_pct(
    samples_ns: Iterable[int] | np.ndarray,
    slice_counts: Sequence[int],
    slice_rounds: Sequence[int] = (),
    confidence: float = 0.95,
) -> float | None:
    """The adaptive stop's check: the larger distance from p99 to a bound of this run's
    own interval (:func:`quantile_interval` without earlier runs: more samples cannot narrow
    the spread between runs), in % of p99 (:func:`target_halfwidth_pct`); None while the
    samples support no interval on at least :data:`MIN_TARGET_DF` degrees of freedom.
    ``samples_ns`` may be an ``array('q')``."""
    data = np.array(samples_ns, dtype=np.float64)
    return target_halfwidth_pct(quantile_interval(data, slice_counts, 99, confidence, slice_rounds))
