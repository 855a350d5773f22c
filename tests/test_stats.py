import dataclasses
import math

import numpy as np
import pytest
import reference
from factories import _result, write
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.signal import lfilter
from scipy.stats import t as student_t

from fsyncbench.measure import intervals, stats
from fsyncbench.model import Interval


def test_summary_matches_numpy_on_known_samples():
    samples = list(np.random.default_rng(0).permutation(np.arange(1, 1001)))  # 1..1000 ns
    s = stats.summarize(samples, [100] * 10)
    assert s.count == 1000
    assert s.min_ns == 1 and s.max_ns == 1000
    # linear interpolation (Hyndman & Fan type 7) at rank h = (n - 1) q of the sorted
    # 1..1000: p50 at h = 499.5 -> 500.5, p90 at 899.1 -> 900.1, p99 at 989.01 -> 990.01,
    # p99.9 at 998.001 -> 999.001
    assert s.p50_ns == pytest.approx(500.5)
    assert s.p90_ns == pytest.approx(900.1)
    assert s.p99_ns == pytest.approx(990.01)
    assert s.p999_ns == pytest.approx(999.001)
    assert s.mean_ns == pytest.approx(500.5)  # (1 + 1000) / 2
    assert s.stdev_ns == pytest.approx(np.std(np.arange(1, 1001), ddof=1))  # 288.82
    assert s.ops_per_s == pytest.approx(1e9 / 500.5)
    assert s.ci_method == intervals.METHOD_BLOCKS
    # the ten samples at or above p99 (991..1000) fall into the slices as the permutation
    # put them; Kish's effective count of those slices, less one, is the df (numpy here)
    where = np.bincount(np.flatnonzero(np.asarray(samples) >= 990.01) // 100, minlength=10)
    assert s.p99_interval.blocks == 10
    assert s.p99_interval.df == pytest.approx(min(9.0, where.sum() ** 2 / np.sum(where**2) - 1))
    for pct, iv in ((50, s.p50_interval), (99, s.p99_interval)):
        est, bounds = reference.interval(samples, [100] * 10, pct)
        assert iv.estimate_ns == pytest.approx(est)
        assert iv.bounds == pytest.approx(bounds, rel=1e-9)
    assert s.p50_ci_ns == s.p50_interval.bounds and s.p99_ci_ns == s.p99_interval.bounds


def test_intervals_match_the_reference_and_contain_the_estimate():
    rng = np.random.default_rng(1)
    samples = rng.lognormal(11, 0.5, 20_000).astype(int)
    a = stats.summarize(samples, [1000] * 20)
    assert a.p50_ci_ns == pytest.approx(reference.interval(samples, [1000] * 20, 50)[1], rel=1e-9)
    assert a.p99_ci_ns == pytest.approx(reference.interval(samples, [1000] * 20, 99)[1], rel=1e-9)
    assert a.p50_ci_ns[0] <= a.p50_ns <= a.p50_ci_ns[1]
    assert a.p99_ci_ns[0] <= a.p99_ns <= a.p99_ci_ns[1]
    assert a.p50_ci_ns[1] - a.p50_ci_ns[0] < a.p99_ci_ns[1] - a.p99_ci_ns[0]


def test_without_slices_the_interval_assumes_independence_and_says_so():
    s = stats.summarize(np.arange(1, 100_001))
    assert s.ci_method == intervals.METHOD_INDEPENDENT == "order-statistic"
    # the sorted sample is 1..100000, so the value at 0-based rank k is k + 1; the ranks
    # from the exact binomial below (Hahn & Meeker 1991, sec. 5.2)
    lo, hi = _exact_ranks(100_000, 0.99)
    assert s.p99_ci_ns == (lo + 1, hi + 1)
    assert s.p99_ns == pytest.approx(99_000.01)  # h = 99,999 x 0.99 = 98,999.01 -> 99,000.01
    assert s.p99_interval.se_log is None  # nothing to test between runs with


def test_empty_samples_and_counts_that_do_not_add_up_are_rejected():
    with pytest.raises(ValueError):
        stats.summarize([])
    with pytest.raises(ValueError, match="add up"):
        stats.summarize(list(range(100)), [50, 40])


def test_too_few_slices_or_samples_give_no_interval_and_say_why():
    few_slices = intervals.quantile_interval(np.arange(1, 4001), [1000] * 4, 99)
    assert few_slices.bounds is None and few_slices.blocks == 4
    assert few_slices.reason == "4 slice(s): too few for a p99 interval (needs 5)"
    small = intervals.quantile_interval(np.arange(1, 601), [60] * 10, 99)
    assert small.bounds is None
    assert small.reason == "n=600 too small for a p99 interval (needs 1000)"
    # the same 600 samples (in no particular order) do support a p50 interval
    shuffled = np.random.default_rng(0).permutation(np.arange(1, 601))
    assert intervals.quantile_interval(shuffled, [60] * 10, 50).bounds is not None
    s = stats.summarize(shuffled, [60] * 10)
    assert s.p99_ci_ns is None and s.p99_ci_halfwidth_pct is None and s.p50_ci_ns is not None


def test_a_tail_held_by_one_slice_gives_no_interval():
    """A trend (or one stall): every sample beyond p99 sits in the last slice, so how far
    p99 moves from run to run cannot be seen."""
    iv = intervals.quantile_interval(np.arange(1, 10_001), [1000] * 10, 99)
    assert iv.bounds is None and "too few slices (1.00 effective)" in iv.reason
    # and a median from slices that each hold another range cannot have one either
    assert (
        "disagree too much"
        in intervals.quantile_interval(np.arange(1, 10_001), [1000] * 10, 50).reason
    )


def test_one_sample_is_no_interval():
    s = stats.summarize([106_000], [1])
    assert s.p50_ci_ns is None and s.p99_ci_ns is None
    assert s.p99_ns == 106_000


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.integers(min_value=1, max_value=10**9), min_size=1, max_size=300),
    st.integers(min_value=1, max_value=12),
)
def test_percentiles_are_ordered(samples, slices):
    counts = [len(samples) // slices] * slices
    counts[-1] += len(samples) - sum(counts)
    s = stats.summarize(samples, counts)
    assert s.min_ns <= s.p50_ns <= s.p90_ns <= s.p99_ns <= s.p999_ns <= s.max_ns
    if s.p50_ci_ns is not None:
        assert 0 < s.p50_ci_ns[0] <= s.p50_ns <= s.p50_ci_ns[1]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(min_value=1, max_value=40), min_size=2, max_size=10),
    st.sampled_from([0.01, 0.5, 0.9, 0.99, 0.999]),
    st.booleans(),
    st.integers(0, 2**31),
)
def test_leave_one_block_out_equals_recomputing_without_the_block(counts, q, ties, seed):
    rng = np.random.default_rng(seed)
    n = sum(counts)
    x = rng.integers(0, 5, n).astype(float) if ties else rng.exponential(size=n)
    got = intervals.leave_one_block_out(x, np.array(counts), q)
    ends = np.cumsum(counts)
    want = [np.percentile(np.delete(x, np.arange(e - c, e)), 100 * q) for c, e in zip(counts, ends)]
    assert np.allclose(got, want)


# --------------------------------------------------------------------------- dependent samples


def _ar1_latencies(rng, n, phi, burn=5000):
    """Latencies whose log follows an AR(1) with coefficient ``phi``: neighbours move
    together, for about 1 / (1 - phi) samples."""
    e = rng.normal(size=n + burn) * np.sqrt(1 - phi**2) * 0.5
    z = lfilter([1.0], [1.0, -phi], e)[burn:]
    return np.exp(5 + z + rng.exponential(size=n) * 0.3)


def _stall_latencies(rng, n, stay=50, share=0.03):
    """A two-state process: normal operation, and stalls 10x slower lasting ``stay``
    samples on average, ``share`` of the time; p99 falls among the stalls."""
    p_leave = 1.0 / stay
    p_enter = p_leave * share / (1 - share)
    k = int(3 * n * p_enter) + 10  # more sojourns of each state than n samples can hold
    lengths = np.empty(2 * k, dtype=np.int64)
    lengths[0::2] = rng.geometric(p_enter, k)  # normal
    lengths[1::2] = rng.geometric(p_leave, k)  # stalled
    flags = np.tile([False, True], k)
    state = np.repeat(flags, lengths)[rng.integers(0, 1000) :][:n]
    base = rng.lognormal(0, 0.2, n) * 100.0
    return np.where(state, base * 10, base)


def _coverage(make, truth, pct, slices=20, per_slice=1000, runs=200, seed=3):
    """Share of simulated runs whose block interval / independent interval holds ``truth``
    (runs without a block interval are left out; they must be rare)."""
    rng = np.random.default_rng(seed)
    block = independent = given = 0
    for _ in range(runs):
        x = make(rng, slices * per_slice)
        iv = intervals.quantile_interval(x, [per_slice] * slices, pct)
        if iv.bounds is not None:
            given += 1
            block += iv.low_ns <= truth <= iv.high_ns
        ind = intervals.quantile_interval(x, (), pct)
        independent += ind.low_ns <= truth <= ind.high_ns
    assert given >= 0.8 * runs
    return block / given, independent / runs


@pytest.mark.parametrize("pct", [50, 99])
def test_block_interval_covers_near_95_percent_on_an_ar1_series(pct):
    """Known answer: the percentile of a very long series. The block interval covers it
    about as often as it says; the interval that assumes independence far less often."""
    make = lambda rng, n: _ar1_latencies(rng, n, phi=0.99)  # noqa: E731
    truth = np.percentile(make(np.random.default_rng(99), 2_000_000), pct)
    block, independent = _coverage(make, truth, pct)
    assert block >= 0.88
    assert independent <= 0.6


def test_block_interval_covers_the_p99_of_a_stall_process():
    truth = np.percentile(_stall_latencies(np.random.default_rng(98), 2_000_000), 99)
    block, independent = _coverage(_stall_latencies, truth, 99, runs=150)
    assert block >= 0.85
    assert independent <= 0.6


def test_rounds_that_disagree_widen_the_interval_to_their_spread():
    rng = np.random.default_rng(4)
    rounds = 6
    parts, counts, slice_rounds = [], [], []
    for r in range(rounds):
        shift = 1.0 + 0.3 * (r % 3)  # each round's level differs (new files, another time)
        for _ in range(4):
            parts.append(rng.exponential(size=500) * 100 * shift)
            counts.append(500)
            slice_rounds.append(r)
    x = np.concatenate(parts)
    by_slices = intervals.quantile_interval(x, counts, 50)
    with_rounds = intervals.quantile_interval(x, counts, 50, slice_rounds=slice_rounds)
    assert with_rounds.method == intervals.METHOD_ROUNDS and with_rounds.blocks == rounds
    assert with_rounds.high_ns - with_rounds.low_ns > by_slices.high_ns - by_slices.low_ns
    assert with_rounds.bounds == pytest.approx(
        reference.interval(x, counts, 50, slice_rounds)[1], rel=1e-9
    )
    # each round's median, by numpy on that round's 2,000 samples
    assert intervals.round_percentiles(x, counts, slice_rounds, 50) == pytest.approx(
        [np.percentile(x[2000 * r : 2000 * (r + 1)], 50) for r in range(rounds)]
    )


def test_fewer_rounds_than_blocks_keep_the_slice_interval():
    x = np.arange(1, 10_001, dtype=float)
    counts, slice_rounds = [1000] * 10, [0] * 5 + [1] * 5
    iv = intervals.quantile_interval(x, counts, 50, slice_rounds=slice_rounds)
    assert iv.method == intervals.METHOD_BLOCKS and iv.blocks == 10
    assert intervals.round_percentiles(x, counts, slice_rounds, 50) == (
        np.percentile(x[:5000], 50),
        np.percentile(x[5000:], 50),
    )


# --------------------------------------------------------------------------- order-statistic CIs


def _exact_ranks(n, q, confidence=0.95):
    import math

    pmf = [
        math.exp(
            math.lgamma(n + 1)
            - math.lgamma(k + 1)
            - math.lgamma(n - k + 1)
            + k * math.log(q)
            + (n - k) * math.log1p(-q)
        )
        for k in range(n + 1)
    ]
    cdf = np.cumsum(pmf)
    a = (1 - confidence) / 2
    lows = [k for k in range(n + 1) if cdf[k] <= a]
    hi = min(k for k in range(n + 1) if cdf[k] >= 1 - a)
    return None if not lows or hi >= n else (max(lows), hi)


@pytest.mark.parametrize(
    "n,q",
    [
        (50, 0.5),
        (400, 0.99),
        (1000, 0.99),
        (1000, 0.5),
        (3000, 0.99),
        (367, 0.99),
        (368, 0.99),
        (5, 0.5),
        (6, 0.5),
        (100, 0.01),
    ],
)
def test_quantile_ci_ranks_match_the_exact_binomial(n, q):
    assert intervals.quantile_ci_ranks(n, q) == _exact_ranks(n, q)


def test_order_statistic_interval_is_refused_where_a_bound_does_not_exist():
    """Below 368 samples (0.99**368 = 0.0248 <= 0.025 < 0.99**367 = 0.0250) the largest
    sample covers the true p99 less often than 97.5 %: no interval rather than one that is
    narrower than stated; 6 samples for the median (0.5**6 = 0.0156 <= 0.025 < 0.5**5)."""
    iv = intervals.quantile_interval([100, 300], (), 99)
    assert (iv.low_ns, iv.high_ns, iv.method) == (None, None, intervals.METHOD_INDEPENDENT)
    assert iv.reason == "n=2 too small for a p99 interval (needs 368)"
    assert (
        intervals.order_statistic_min_n(0.99) == 368 and intervals.order_statistic_min_n(0.5) == 6
    )
    assert intervals.order_statistic_min_n(0.01) == 368
    assert intervals.quantile_interval(np.arange(1, 368), (), 99).bounds is None
    assert intervals.quantile_interval(np.arange(1, 369), (), 99).bounds is not None
    assert intervals.quantile_interval([1, 2, 3, 4, 5], (), 50).bounds is None
    assert intervals.quantile_interval([1, 2, 3, 4, 5, 6], (), 50).bounds == (1.0, 6.0)


def test_a_refused_interval_keeps_the_estimate_and_says_what_its_level_needs():
    """The refusal is a whole Interval: the p99 itself (linear interpolation, numpy's
    default: 100..109 -> 108 + 0.91 = 108.91), no bounds, no blocks, and the sample count
    the *asked* level needs: at 90 % the smallest n with 0.99**n <= 0.05 is 299
    (ln 0.05 / ln 0.99 = 298.07)."""
    iv = intervals.quantile_interval(list(range(100, 110)), (), 99, 0.9)
    assert iv == Interval(
        108.91,
        None,
        None,
        None,
        0,
        0,
        intervals.METHOD_INDEPENDENT,
        "n=10 too small for a p99 interval (needs 299)",
    )


def test_order_statistic_min_n_counts_an_exact_tie_as_enough():
    """ "The smallest n with q**n <= alpha/2": at q = 0.5 and 75 % (alpha/2 = 0.125 = 0.5**3
    exactly, a binary fraction) 3 samples are enough, and quantile_ci_ranks agrees."""
    assert intervals.order_statistic_min_n(0.5, 0.75) == 3
    assert intervals.quantile_ci_ranks(3, 0.5, 0.75) == (0, 2)
    assert intervals.quantile_ci_ranks(2, 0.5, 0.75) is None


def test_p99_halfwidth_by_hand():
    """Five slices of 200: each holds one 1 ns sample, 197 of 100 ns and two tail samples,
    200 ns in slice 0 and 1,100 ns in the others. By hand (numpy "linear": rank
    h = (n - 1) q of the sorted samples):

    - all 1,000: h = 989.01 falls between the last 100 (rank 989) and the smallest tail
      sample, 200 (rank 990): p99 = 100 + 0.01 x 100 = 101;
    - without slice 0 (800 left): h = 791.01 between 100 and 1,100: p99 = 110;
    - without any other slice: between 100 and 200 again: p99 = 101.

    With five equal slices the jackknife variance of log p99 is (4/5) sum (theta_j - mean)^2
    = (4/5) x 0.8 d^2 with d = ln(110/101), so SE = 0.8 d; every slice holds two tail
    samples, so t has 4 degrees of freedom: t(0.975, 4) = 2.7764 (any Student t table).
    Half-width: 100 x (exp(t SE) - 1) = 100 x ((110/101)^(0.8 t) - 1) = 20.8763 %, the
    upper bound being the farther one."""
    samples, counts = reference.hand_p99_blocks()
    t_975_4 = 2.7764451051977934
    se = 0.8 * math.log(110 / 101)
    assert intervals.p99_ci_halfwidth_pct(samples, counts) == pytest.approx(20.876303046, rel=1e-9)
    s = stats.summarize(samples, counts)
    assert s.p99_ns == pytest.approx(101.0)
    assert s.p99_ci_halfwidth_pct == pytest.approx(20.876303046, rel=1e-9)
    # (83.556, 122.085) as computed; its low end below the p50 (100) is floored there
    assert s.p50_ns == 100.0
    assert s.p99_ci_ns == pytest.approx((100.0, 101 * math.exp(t_975_4 * se)), rel=1e-9)
    assert s.p99_interval.se_log == pytest.approx(se) and s.p99_interval.df == 4.0
    # two slices: fewer than the five an interval needs
    assert intervals.p99_ci_halfwidth_pct(samples, [500, 500]) is None


def test_ci_halfwidth_pct():
    assert intervals.ci_halfwidth_pct(100.0, (90.0, 105.0)) == pytest.approx(10.0)
    assert intervals.ci_halfwidth_pct(100.0, (98.0, 112.0)) == pytest.approx(12.0)
    assert intervals.ci_halfwidth_pct(0.0, (0.0, 1.0)) is None


def test_identical_samples_give_an_interval_of_one_tick_not_none():
    """1,000 samples of exactly 100 ns in 10 slices: every slice agrees, so there is an
    interval, not "the slices disagree"; no difference shows the clock's tick, so it is
    taken as 1 ns and the interval is 100 x exp(+-t9 x 1/100)."""
    iv = intervals.quantile_interval([100] * 1000, [100] * 10, 50)
    t = float(student_t.ppf(0.975, 9))
    assert iv.reason is None and iv.se_log == pytest.approx(0.01)
    assert iv.bounds == pytest.approx((100 * math.exp(-t / 100), 100 * math.exp(t / 100)))


def test_a_coarse_clock_widens_an_interval_to_its_tick():
    """Times rounded to 1 us where every slice's p50 is 3 us: the jackknife's SE is 0, the
    interval is one tick wide on either side of the figure (SE 1/3), never [3, 3]."""
    x = np.array(([2000] * 20 + [3000] * 60 + [4000] * 20) * 10)
    iv = intervals.quantile_interval(x, [100] * 10, 50)
    assert intervals.clock_tick_ns(x) == 1000
    assert iv.se_log == pytest.approx(1 / 3) and iv.low_ns < 3000 < iv.high_ns


# --------------------------------------------------------------------------- exact fields
#
# Every expected value below is a hand computation (shown), numpy/scipy on the samples, the
# exact binomial of _exact_ranks, or tests/reference.py: never fsyncbench itself.


def _disagreeing_rounds():
    """Six rounds of four 500-sample slices whose levels differ by round (x1, x1.3, x1.6):
    the round jackknife is wider than the slice one for p50 and p99."""
    rng = np.random.default_rng(4)
    parts, counts, slice_rounds = [], [], []
    for r in range(6):
        shift = 1.0 + 0.3 * (r % 3)
        for _ in range(4):
            parts.append(rng.exponential(size=500) * 100 * shift)
            counts.append(500)
            slice_rounds.append(r)
    return np.concatenate(parts), counts, slice_rounds


def _same_interval(iv, est, se, df, bounds):
    """``iv`` against reference.jackknife's (estimate, se, df, bounds)."""
    assert iv.estimate_ns == pytest.approx(est, rel=1e-12)
    assert iv.se_log == pytest.approx(se, rel=1e-9)
    assert iv.df == pytest.approx(df, rel=1e-12)
    assert iv.bounds == pytest.approx(bounds, rel=1e-9)


def test_empty_input_errors_name_the_problem():
    with pytest.raises(ValueError, match=r"^no samples to summarize$"):
        stats.summarize([])
    with pytest.raises(ValueError, match=r"^no samples$"):
        intervals.quantile_interval([], [], 50)


@pytest.mark.parametrize("pct", [0, 100, 100.5, -1])
def test_percentiles_outside_the_open_range_are_rejected(pct):
    with pytest.raises(ValueError, match=r"^the percentile must lie strictly between 0 and 100$"):
        intervals.quantile_interval(np.arange(1, 1001), [100] * 10, pct)
    with pytest.raises(ValueError, match=r"^the percentile must lie strictly between 0 and 100$"):
        intervals.quantile_interval(np.arange(1, 1001), (), pct)


def test_negative_slice_counts_are_rejected_even_when_they_add_up():
    with pytest.raises(ValueError, match=r"^slice counts add up to 1000, not the 1000 samples$"):
        intervals.quantile_interval(np.arange(1, 1001), [-100, 300, 200, 200, 200, 200], 50)


def test_one_round_per_slice_is_required():
    x = np.random.default_rng(0).permutation(np.arange(1, 1001))
    with pytest.raises(ValueError, match=r"^one round per slice is required$"):
        intervals.quantile_interval(x, [100] * 10, 50, slice_rounds=[0, 1])


def test_independent_interval_of_a_low_percentile_at_90_percent():
    """p1 of 1..1000 without slices: numpy "linear" rank h = 999 x 0.01 = 9.99, so
    10 + 0.99 = 10.99; the bounds are the sorted values (k + 1 at 0-based rank k) at the
    ranks of the exact binomial at 90 %."""
    lo, hi = _exact_ranks(1000, 0.01, 0.90)
    assert (lo, hi) != _exact_ranks(1000, 0.01, 0.95)  # the level matters here
    iv = intervals.quantile_interval(np.arange(1, 1001)[::-1], (), 1, confidence=0.90)
    assert iv == Interval(
        pytest.approx(10.99), lo + 1.0, hi + 1.0, None, 0, 0, "order-statistic", None
    )
    assert iv.df == 0 and iv.blocks == 0 and iv.se_log is None
    # a percentile below 1 is as valid
    half = intervals.quantile_interval(np.arange(1, 1001), (), 0.5)
    lo, hi = _exact_ranks(1000, 0.005)
    assert (half.estimate_ns, half.bounds) == (pytest.approx(5.995), (lo + 1.0, hi + 1.0))


def test_no_interval_results_carry_every_field():
    """n=600 and p99: 6 samples beyond it, fewer than 10, so n must reach 10 / 0.01 = 1000.
    p99 by hand: h = 599 x 0.99 = 593.01 -> 594.01."""
    small = intervals.quantile_interval(np.arange(1, 601), [60] * 10, 99)
    assert small == Interval(
        pytest.approx(594.01),
        None,
        None,
        None,
        0,
        10,
        "block-jackknife",
        "n=600 too small for a p99 interval (needs 1000)",
    )
    assert small.df == 0 and small.blocks == 10
    # a slice of no samples is no block: four slices hold the 1,000 samples
    x = np.random.default_rng(0).permutation(np.arange(1, 1001))
    few = intervals.quantile_interval(x, [250, 0, 250, 250, 250], 50)
    assert few == Interval(
        500.5,
        None,
        None,
        None,
        0,
        4,
        "block-jackknife",
        "4 slice(s): too few for a p50 interval (needs 5)",
    )
    assert few.df == 0 and few.blocks == 4


def test_empty_and_single_sample_slices():
    """Empty slices are left out; a slice of one sample is a block like any other
    (reference: slices with samples only)."""
    x, counts, _ = _disagreeing_rounds()
    with_empty = [500, 0] + counts[1:12] + [0, 0] + counts[12:]
    for pct in (50, 99):
        est, se, df, bounds = reference.jackknife(x, counts, pct)
        iv = intervals.quantile_interval(x, with_empty, pct)
        assert iv.blocks == 24
        _same_interval(iv, est, se, df, bounds)
    one = [1, 499] + counts[1:]
    est, se, df, bounds = reference.jackknife(x, one, 50)
    iv = intervals.quantile_interval(x, one, 50)
    assert iv.blocks == 25 and bounds is not None
    _same_interval(iv, est, se, df, bounds)


def test_low_percentile_tail_in_one_slice_gives_no_interval():
    """1..10000 in ten slices of 1000: the samples at or below p1 (h = 9999 x 0.01 = 99.99
    -> 100.99) are 1..100, all in slice 0: one effective slice, so df = 0."""
    iv = intervals.quantile_interval(np.arange(1, 10_001), [1000] * 10, 1)
    assert iv == Interval(
        pytest.approx(100.99),
        None,
        None,
        None,
        0.0,
        10,
        "block-jackknife",
        "the samples at or beyond p1 lie in too few slices (1.00 effective) for an interval",
    )
    assert iv.df == 0.0
    high = intervals.quantile_interval(np.arange(1, 10_001), [1000] * 10, 99)
    assert high == Interval(
        pytest.approx(9900.01),
        None,
        None,
        None,
        0.0,
        10,
        "block-jackknife",
        "the samples at or beyond p99 lie in too few slices (1.00 effective) for an interval",
    )


def test_slices_that_disagree_give_no_interval_but_keep_the_se():
    """1..10000 in ten slices, p50 (5000.5): the samples at or above it fill slices 5-9,
    five effective slices (df 4), and the leave-one-out medians spread so far that the
    interval would pass the samples."""
    x = np.arange(1, 10_001)
    est, se, df, bounds = reference.jackknife(x, [1000] * 10, 50)
    assert bounds is None and df == 4.0
    iv = intervals.quantile_interval(x, [1000] * 10, 50)
    assert iv == Interval(
        5000.5,
        None,
        None,
        pytest.approx(se, rel=1e-9),
        4.0,
        10,
        "block-jackknife",
        "the slices disagree too much for an interval (it would reach beyond "
        "the samples measured; 5.0 effective slices)",
    )


def test_a_coarse_clock_counts_samples_equal_to_the_percentile_as_beyond_it():
    """A 100 ns timer: many samples tie with the percentile; Kish's effective count (so
    df) counts those at or beyond it, as reference.jackknife does. Unequal slices, so
    counting at-or-above and at-or-below the median differ."""
    rng = np.random.default_rng(0)
    x = np.round(rng.lognormal(0, 0.3, 3000) * 10) * 100.0
    counts = [150, 300, 450, 200, 350, 250, 400, 300, 600]
    for pct in (1, 50, 99):
        est, se, df, bounds = reference.jackknife(x, counts, pct)
        iv = intervals.quantile_interval(x, counts, pct)
        assert np.sum(x == est) > 10  # ties at the percentile
        assert iv.estimate_ns == est and iv.blocks == 9 and iv.reason is None
        assert iv.df == pytest.approx(df, rel=1e-12)
        assert iv.se_log == pytest.approx(se, rel=1e-6, abs=1e-13)
        assert iv.low_ns <= est <= iv.high_ns
    # p99 = 2000 has a real spread
    _same_interval(intervals.quantile_interval(x, counts, 99), *reference.jackknife(x, counts, 99))


def _coarse_zero_clock(ticks_per_slice):
    """Ten slices of 100 samples from a clock of 1,000 ns resolution: each slice holds
    ``ticks_per_slice[i]`` samples of 1000 ns and the rest 0 ns."""
    x = []
    for ticks in ticks_per_slice:
        x += [0] * (100 - ticks) + [1000] * ticks
    return np.array(x)


def test_zero_times_give_no_interval():
    """501 of 1,000 samples are 1000 ns, 499 are 0: p50 (h = 499.5) is 1000. Without slice 0
    (60 ticks) 441 ticks and 459 zeros are left: p50 (h = 449.5) is 0, log 0 undefined.
    df: Kish over the ticks per slice, 501^2 / (60^2 + 9 x 49^2) - 1 = 251001 / 25209 - 1."""
    x = _coarse_zero_clock([60] + [49] * 9)
    iv = intervals.quantile_interval(x, [100] * 10, 50)
    assert iv == Interval(
        1000.0,
        None,
        None,
        None,
        pytest.approx(251001 / 25209 - 1),
        10,
        "block-jackknife",
        "the timer could not resolve the operation (zero times)",
    )
    # all zero at the median: p50 = 0, all 1,000 samples at or above it, df 9
    zero = intervals.quantile_interval(_coarse_zero_clock([40] * 10), [100] * 10, 50)
    assert zero == Interval(
        0.0,
        None,
        None,
        None,
        9.0,
        10,
        "block-jackknife",
        "the timer could not resolve the operation (zero times)",
    )


def test_one_nanosecond_is_a_resolved_time():
    """600 samples of 1 ns and 400 of 2 ns, 60/40 in each of ten slices: p50 is 1 without
    any slice too, so log p50 is 0 throughout: the jackknife's SE is 0, but never finer
    than one tick of the clock (1 ns of 1 ns: SE 1), so the interval is 1 x exp(+-t9)."""
    x = np.array(([1] * 60 + [2] * 40) * 10)
    iv = intervals.quantile_interval(x, [100] * 10, 50)
    t = float(student_t.ppf(0.975, 9))
    # t agrees with scipy's to ~1e-15 (fsyncbench.measure.special), not to the last bit
    assert (iv.low_ns, iv.high_ns) == pytest.approx((math.exp(-t), math.exp(t)), rel=1e-13)
    iv = dataclasses.replace(iv, low_ns=math.exp(-t), high_ns=math.exp(t))
    assert iv == Interval(1.0, math.exp(-t), math.exp(t), 1.0, 9.0, 10, "block-jackknife", None)


def test_rounds_with_gaps_in_their_numbers_and_a_one_sample_round():
    x, counts, slice_rounds = _disagreeing_rounds()
    want = reference.interval(x, counts, 50, slice_rounds)[1]
    gaps = intervals.quantile_interval(
        x, counts, 50, slice_rounds=[3 * r + 2 for r in slice_rounds]
    )
    assert gaps.method == "round-jackknife" and gaps.blocks == 6
    assert gaps.bounds == pytest.approx(want, rel=1e-9)
    # a seventh round that got one sample only
    x1, counts1, rounds1 = np.append(x, 130.0), counts + [1], slice_rounds + [6]
    est, se, df, bounds = reference.jackknife(x1, counts1, 50, rounds1)
    iv = intervals.quantile_interval(x1, counts1, 50, slice_rounds=rounds1)
    assert iv.method == "round-jackknife" and iv.blocks == 7
    _same_interval(iv, est, se, df, bounds)


def test_no_slice_interval_stays_none_whatever_the_rounds():
    """The tail in one slice (and so in one round): the slice result is given, not the
    round one."""
    iv = intervals.quantile_interval(
        np.arange(1, 10_001), [1000] * 10, 99, slice_rounds=[0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    )
    assert iv == Interval(
        pytest.approx(9900.01),
        None,
        None,
        None,
        0.0,
        10,
        "block-jackknife",
        "the samples at or beyond p99 lie in too few slices (1.00 effective) for an interval",
    )


def test_a_tail_in_one_round_only_removes_the_interval():
    """30 slices of 100 in three rounds; the round 2 slices each hold four slow samples
    (40 in all, above p99's 30): the slices give an interval, the rounds have the whole
    tail in one, which is the widest answer (no interval)."""
    rng = np.random.default_rng(1)
    x = rng.lognormal(5, 0.3, 3000)
    for s in range(20, 30):
        x[s * 100 + rng.choice(100, 4, replace=False)] = rng.lognormal(6.5, 0.2, 4)
    counts, rounds = [100] * 30, [i // 10 for i in range(30)]
    assert reference.interval(x, counts, 99)[1] is not None
    assert reference.interval(x, counts, 99, rounds)[1] is None
    iv = intervals.quantile_interval(x, counts, 99, slice_rounds=rounds)
    assert iv == Interval(
        pytest.approx(np.percentile(x, 99)),
        None,
        None,
        None,
        0.0,
        3,
        "round-jackknife",
        "the samples at or beyond p99 lie in too few rounds (1.00 effective) for an interval",
    )


def test_rounds_narrower_than_the_slices_keep_the_slice_interval():
    rng = np.random.default_rng(1)
    x = rng.exponential(size=12_000) * 100_000  # (tens of us: one ns tick is no floor here)
    counts, rounds = [500] * 24, [i // 4 for i in range(24)]
    by_slices = reference.jackknife(x, counts, 50)
    by_rounds = reference.jackknife(x, [2000] * 6, 50)
    assert by_rounds[3][1] / by_rounds[3][0] < by_slices[3][1] / by_slices[3][0]
    iv = intervals.quantile_interval(x, counts, 50, slice_rounds=rounds)
    assert iv.method == "block-jackknife" and iv.blocks == 24
    _same_interval(iv, *by_slices)
    # one round per slice: the two jackknifes are the same, the slices' is kept
    same = intervals.quantile_interval(x, counts, 50, slice_rounds=list(range(24)))
    assert same.method == "block-jackknife" and same.blocks == 24
    _same_interval(same, *by_slices)


def test_summarize_uses_the_rounds_for_both_intervals_and_per_round_percentiles():
    x, counts, slice_rounds = _disagreeing_rounds()
    s = stats.summarize(x, counts, slice_rounds)
    for pct, iv in ((50, s.p50_interval), (99, s.p99_interval)):
        assert iv.method == "round-jackknife" and iv.blocks == 6
        assert iv.bounds == pytest.approx(
            reference.interval(x, counts, pct, slice_rounds)[1], rel=1e-9
        )
    assert s.ci_method == "round-jackknife"
    assert s.p50_ci_ns == s.p50_interval.bounds and s.p99_ci_ns == s.p99_interval.bounds
    rounds = [x[2000 * r : 2000 * (r + 1)] for r in range(6)]
    assert s.round_p50_ns == pytest.approx([np.percentile(r, 50) for r in rounds], rel=1e-12)
    assert s.round_p99_ns == pytest.approx([np.percentile(r, 99) for r in rounds], rel=1e-12)
    assert len(s.round_p50_ns) == len(s.round_p99_ns) == 6
    want = reference.p99_halfwidth_pct(x, counts, slice_rounds)
    got = intervals.p99_ci_halfwidth_pct(x, counts, slice_rounds)
    assert (got is None and want is None) or got == pytest.approx(want, rel=1e-9)


def test_the_ci_target_needs_four_degrees_of_freedom():
    """An interval on 3 degrees of freedom (4 rounds) never meets the CI target however
    narrow; on 5 rounds (4 df) it can."""
    rng = np.random.default_rng(9)
    for rounds, met in ((4, False), (5, True)):
        x = rng.normal(1e6, 1e3, rounds * 4000)  # a tight, well-behaved operation
        counts = [1000] * (4 * rounds)
        slice_rounds = [i // 4 for i in range(4 * rounds)]
        iv = intervals.quantile_interval(x, counts, 99, slice_rounds=slice_rounds)
        assert iv.bounds is not None and intervals.ci_halfwidth_pct(iv.estimate_ns, iv.bounds) < 1
        half = intervals.target_halfwidth_pct(iv)
        assert (half is not None) == met, (rounds, iv.df, iv.method)


def test_summarize_at_another_confidence_level():
    x, counts, _ = _disagreeing_rounds()
    s = stats.summarize(x, counts, confidence=0.90)
    assert s.ci_level == 0.90 and s.ci_resamples == 0
    assert s.p50_ci_ns == pytest.approx(
        reference.interval(x, counts, 50, confidence=0.90)[1], rel=1e-9
    )
    assert s.p99_ci_ns == pytest.approx(
        reference.interval(x, counts, 99, confidence=0.90)[1], rel=1e-9
    )


def test_summary_of_tiny_and_zero_samples_by_hand():
    """Two samples 100 and 300: mean 200, stdev sqrt((100^2 + 100^2) / 1) = 141.42...,
    5e6 ops/s; one sample: stdev 0; mean 0.5 ns: 2e9 ops/s; all zero: infinitely many."""
    two = stats.summarize([100, 300])
    assert (two.count, two.min_ns, two.max_ns, two.mean_ns) == (2, 100.0, 300.0, 200.0)
    assert two.p50_ns == 200.0 and two.p90_ns == pytest.approx(280.0)
    assert two.stdev_ns == pytest.approx(100 * math.sqrt(2), rel=1e-15)
    assert two.ops_per_s == 5e6 and two.ci_resamples == 0 and two.ci_level == 0.95
    three = stats.summarize([100, 300, 800])  # mean 400, squares 90000 + 10000 + 160000
    assert three.stdev_ns == pytest.approx(math.sqrt(260_000 / 2), rel=1e-15)
    one = stats.summarize([1000])
    assert one.stdev_ns == 0.0 and one.ops_per_s == 1e6 and one.mean_ns == 1000.0
    assert stats.summarize([1000] * 7, [1] * 7).ops_per_s == 1e6
    assert stats.summarize([0, 1]).ops_per_s == 2e9
    zeros = stats.summarize([0, 0, 0])
    assert zeros.ops_per_s == float("inf") and zeros.mean_ns == 0.0 and zeros.stdev_ns == 0.0


def test_round_percentiles_of_one_round_are_empty():
    x = np.arange(1, 501)
    assert intervals.round_percentiles(x, [100] * 5, [0] * 5, 50) == ()
    assert intervals.round_percentiles(x, [100] * 5, (), 50) == ()
    assert intervals.round_percentiles(x, [100] * 5, [0, 0, 0, 1, 1], 50) == (150.5, 400.5)


def test_ci_halfwidth_of_estimates_at_or_below_one_ns():
    assert intervals.ci_halfwidth_pct(0.5, (0.25, 1.0)) == 100.0  # (1 - 0.5) / 0.5
    assert intervals.ci_halfwidth_pct(1.0, (0.5, 1.25)) == 50.0  # (1 - 0.5) / 1
    assert intervals.ci_halfwidth_pct(-1.0, (-2.0, 0.0)) is None


def test_tool_floor_ignores_unknown_floors_and_takes_the_highest():
    """A "write" result: the loop floor (200 ns) and the write floor (1400 ns) apply, the
    highest p50 wins; a floor of a name this version does not know applies to nothing."""
    unknown = _result("floor", "some future floor", "none", 50_000)
    loop = _result("floor", stats.FLOOR_LOOP, "none", 200)
    wfloor = _result("floor", stats.FLOOR_WRITE, "none", 1400)
    commit_floor = _result("floor", stats.FLOOR_COMMIT, "none", 17_000)
    cached = write(2_000)
    assert stats.tool_floor(cached, (unknown, loop, wfloor, commit_floor)) is wfloor
    assert stats.tool_floor(cached, (wfloor, unknown, commit_floor, loop)) is wfloor
    assert stats.tool_floor(cached, (unknown,)) is None
    assert stats.at_tool_floor(cached, (loop, unknown, wfloor))  # 2000 <= 2 x 1400
    assert not stats.at_tool_floor(cached, (loop, unknown))  # 2000 > 2 x 200


def test_ratio():
    assert stats.ratio(6.0, 3.0) == 2.0
    assert stats.ratio(1.0, 4.0) == 0.25
    assert stats.ratio(5.0, 0.0) is None and stats.ratio(0.0, 0) is None


def test_linear_fit_by_hand():
    """x = 0..3, y = 1, 3, 2, 5: mean x 1.5, mean y 2.75, Sxy = 5.5, Sxx = 5, so slope 1.1
    and intercept 2.75 - 1.65 = 1.1; residuals -0.1, 0.8, -1.3, 0.6 (SS 2.7) of a total
    SS of 8.75: R^2 = 1 - 2.7 / 8.75 = 0.691428..."""
    b, m, r2 = stats.linear_fit([0, 1, 2, 3], [1, 3, 2, 5])
    assert (b, m) == (pytest.approx(1.1, rel=1e-12), pytest.approx(1.1, rel=1e-12))
    assert r2 == pytest.approx(1 - 2.7 / 8.75, rel=1e-12)
    # the same tenfold smaller: a total SS of 0.0875, the same R^2
    b, m, r2 = stats.linear_fit([0, 1, 2, 3], [0.1, 0.3, 0.2, 0.5])
    assert (b, m, r2) == (pytest.approx(0.11), pytest.approx(0.11), pytest.approx(1 - 2.7 / 8.75))
    # two points: the line through them, R^2 1
    assert stats.linear_fit([1, 2], [3, 5]) == (
        pytest.approx(1.0),
        pytest.approx(2.0),
        pytest.approx(1.0),
    )
    # no variance in y: no R^2
    b, m, r2 = stats.linear_fit([1, 2, 3], [5, 5, 5])
    assert (b, m, r2) == (pytest.approx(5.0), pytest.approx(0.0, abs=1e-12), None)


def test_linear_fit_needs_two_distinct_x_of_matching_length():
    for x, y in (([2, 2, 2], [1, 2, 3]), ([1, 2, 3], [1, 2]), ([1], [1])):
        with pytest.raises(ValueError, match=r"^a line needs at least two distinct x values$"):
            stats.linear_fit(x, y)


def test_an_interval_reaching_below_the_fastest_sample_is_not_given():
    """22 fast samples (10-10.4 ns) in five of ten slices, the rest 20-1000 ns. p1 (h = 1999
    x 0.01 = 19.99) is 10.3 + 0.99 x 0.1 = 10.399, but without a slice holding fast samples
    it is about 20 ns: the interval would start near 0.7 ns, below every sample, while its
    top (about 160 ns) stays inside them. The 20 samples at or below p1 lie four in each of
    five slices: df 4."""
    x = []
    for nfast in (5, 5, 4, 4, 4, 0, 0, 0, 0, 0):
        x += [10 + 0.1 * k for k in range(nfast)] + list(np.linspace(20, 1000, 200 - nfast))
    est, se, df, bounds = reference.jackknife(x, [200] * 10, 1)
    assert bounds is None and df == 4.0
    iv = intervals.quantile_interval(x, [200] * 10, 1)
    assert iv == Interval(
        pytest.approx(10.399),
        None,
        None,
        pytest.approx(se, rel=1e-9),
        4.0,
        10,
        "block-jackknife",
        "the slices disagree too much for an interval (it would reach beyond "
        "the samples measured; 5.0 effective slices)",
    )


def test_a_p99_interval_never_reaches_below_the_p50(monkeypatch):
    """p99 >= p50 for any distribution: a p99 interval whose low end (log-symmetric, from a
    jackknife over rounds that disagree) falls below the p50 is floored there, as a run of
    this VM showed (p50 131 us, p99 [104 us, 770 us]); its SE and high bound are kept."""
    import dataclasses

    from fsyncbench.measure import intervals, stats

    real = intervals.quantile_interval

    def wide(data, counts, percentile, *args, **kw):
        iv = real(data, counts, percentile, *args, **kw)
        if percentile == 99 and iv.bounds is not None:  # as wide as that run's
            return dataclasses.replace(
                iv, low_ns=iv.estimate_ns / 2.7, high_ns=iv.estimate_ns * 2.7
            )
        return iv

    monkeypatch.setattr(stats, "quantile_interval", wide)
    rng = np.random.default_rng(3)
    data = (100_000 * np.exp(rng.normal(0, 0.2, 4_000))).astype(np.int64)
    counts = [400] * 10
    s = stats.summarize(data.tolist(), counts)
    raw = wide(np.asarray(data, dtype=float), counts, 99)
    assert raw.low_ns < s.p50_ns  # what the run showed
    assert s.p99_ci_ns is not None and s.p99_ci_ns[0] == s.p50_ns
    assert s.p99_interval.low_ns == s.p50_ns and s.p99_interval.high_ns == raw.high_ns
    assert s.p99_interval.se_log == raw.se_log
    # the precision reported is the interval's as computed, not the floored one's
    assert s.p99_ci_halfwidth_pct == intervals.ci_halfwidth_pct(s.p99_ns, raw.bounds)
    # an interval already above the floor is left alone; one without bounds too
    assert intervals.floored(raw, 1.0) == raw
    none = dataclasses.replace(raw, low_ns=None, high_ns=None)
    assert intervals.floored(none, 1e12) == none
