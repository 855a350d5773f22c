import math

import numpy as np
import pytest
import reference
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.signal import lfilter

from fsyncbench import stats


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
    assert s.ci_method == stats.METHOD_BLOCKS
    # the ten samples at or above p99 (991..1000) fall into the slices as the permutation
    # put them; Kish's effective count of those slices, less one, is the df (numpy here)
    where = np.bincount(np.flatnonzero(np.asarray(samples) >= 990.01) // 100, minlength=10)
    assert s.p99_interval.blocks == 10
    assert s.p99_interval.df == pytest.approx(min(9.0, where.sum() ** 2 / np.sum(where ** 2) - 1))
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
    assert s.ci_method == stats.METHOD_INDEPENDENT == "order-statistic"
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
    few_slices = stats.quantile_interval(np.arange(1, 4001), [1000] * 4, 99)
    assert few_slices.bounds is None and few_slices.blocks == 4
    assert few_slices.reason == "4 slice(s): too few for a p99 interval (needs 5)"
    small = stats.quantile_interval(np.arange(1, 601), [60] * 10, 99)
    assert small.bounds is None
    assert small.reason == "n=600 too small for a p99 interval (needs 1000)"
    # the same 600 samples (in no particular order) do support a p50 interval
    shuffled = np.random.default_rng(0).permutation(np.arange(1, 601))
    assert stats.quantile_interval(shuffled, [60] * 10, 50).bounds is not None
    s = stats.summarize(shuffled, [60] * 10)
    assert s.p99_ci_ns is None and s.p99_ci_halfwidth_pct is None and s.p50_ci_ns is not None


def test_a_tail_held_by_one_slice_gives_no_interval():
    """A trend (or one stall): every sample beyond p99 sits in the last slice, so how far
    p99 moves from run to run cannot be seen."""
    iv = stats.quantile_interval(np.arange(1, 10_001), [1000] * 10, 99)
    assert iv.bounds is None and "too few slices (1.00 effective)" in iv.reason
    # and a median from slices that each hold another range cannot have one either
    assert "disagree too much" in stats.quantile_interval(np.arange(1, 10_001), [1000] * 10, 50).reason


def test_one_sample_is_no_interval():
    s = stats.summarize([106_000], [1])
    assert s.p50_ci_ns is None and s.p99_ci_ns is None
    assert s.p99_ns == 106_000


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=10**9), min_size=1, max_size=300),
       st.integers(min_value=1, max_value=12))
def test_percentiles_are_ordered(samples, slices):
    counts = [len(samples) // slices] * slices
    counts[-1] += len(samples) - sum(counts)
    s = stats.summarize(samples, counts)
    assert s.min_ns <= s.p50_ns <= s.p90_ns <= s.p99_ns <= s.p999_ns <= s.max_ns
    if s.p50_ci_ns is not None:
        assert 0 < s.p50_ci_ns[0] <= s.p50_ns <= s.p50_ci_ns[1]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=40), min_size=2, max_size=10),
       st.sampled_from([0.01, 0.5, 0.9, 0.99, 0.999]), st.booleans(), st.integers(0, 2**31))
def test_leave_one_block_out_equals_recomputing_without_the_block(counts, q, ties, seed):
    rng = np.random.default_rng(seed)
    n = sum(counts)
    x = rng.integers(0, 5, n).astype(float) if ties else rng.exponential(size=n)
    got = stats.leave_one_block_out(x, np.array(counts), q)
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
    state = np.repeat(flags, lengths)[rng.integers(0, 1000):][:n]
    base = rng.lognormal(0, 0.2, n) * 100.0
    return np.where(state, base * 10, base)


def _coverage(make, truth, pct, slices=20, per_slice=1000, runs=200, seed=3):
    """Share of simulated runs whose block interval / independent interval holds ``truth``
    (runs without a block interval are left out; they must be rare)."""
    rng = np.random.default_rng(seed)
    block = independent = given = 0
    for _ in range(runs):
        x = make(rng, slices * per_slice)
        iv = stats.quantile_interval(x, [per_slice] * slices, pct)
        if iv.bounds is not None:
            given += 1
            block += iv.low_ns <= truth <= iv.high_ns
        ind = stats.quantile_interval(x, (), pct)
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
    by_slices = stats.quantile_interval(x, counts, 50)
    with_rounds = stats.quantile_interval(x, counts, 50, slice_rounds=slice_rounds)
    assert with_rounds.method == stats.METHOD_ROUNDS and with_rounds.blocks == rounds
    assert with_rounds.high_ns - with_rounds.low_ns > by_slices.high_ns - by_slices.low_ns
    assert with_rounds.bounds == pytest.approx(
        reference.interval(x, counts, 50, slice_rounds)[1], rel=1e-9)
    # each round's median, by numpy on that round's 2,000 samples
    assert stats.round_percentiles(x, counts, slice_rounds, 50) == pytest.approx(
        [np.percentile(x[2000 * r:2000 * (r + 1)], 50) for r in range(rounds)])


def test_fewer_rounds_than_blocks_keep_the_slice_interval():
    x = np.arange(1, 10_001, dtype=float)
    counts, slice_rounds = [1000] * 10, [0] * 5 + [1] * 5
    iv = stats.quantile_interval(x, counts, 50, slice_rounds=slice_rounds)
    assert iv.method == stats.METHOD_BLOCKS and iv.blocks == 10
    assert stats.round_percentiles(x, counts, slice_rounds, 50) == (
        np.percentile(x[:5000], 50), np.percentile(x[5000:], 50))


# --------------------------------------------------------------------------- order-statistic CIs


def _exact_ranks(n, q, confidence=0.95):
    import math

    pmf = [math.exp(math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
                    + k * math.log(q) + (n - k) * math.log1p(-q)) for k in range(n + 1)]
    cdf = np.cumsum(pmf)
    a = (1 - confidence) / 2
    lo = max([k for k in range(n + 1) if cdf[k] <= a], default=0)
    hi = min(k for k in range(n + 1) if cdf[k] >= 1 - a)
    return min(lo, n - 1), min(hi, n - 1)


@pytest.mark.parametrize("n,q", [(50, 0.5), (400, 0.99), (1000, 0.99), (1000, 0.5), (3000, 0.99)])
def test_quantile_ci_ranks_match_the_exact_binomial(n, q):
    assert stats.quantile_ci_ranks(n, q) == _exact_ranks(n, q)


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
    assert stats.p99_ci_halfwidth_pct(samples, counts) == pytest.approx(20.876303046, rel=1e-9)
    s = stats.summarize(samples, counts)
    assert s.p99_ns == pytest.approx(101.0)
    assert s.p99_ci_halfwidth_pct == pytest.approx(20.876303046, rel=1e-9)
    assert s.p99_ci_ns == pytest.approx(  # (83.556, 122.085)
        (101 * math.exp(-t_975_4 * se), 101 * math.exp(t_975_4 * se)), rel=1e-9)
    assert s.p99_interval.se_log == pytest.approx(se) and s.p99_interval.df == 4.0
    # two slices: fewer than the five an interval needs
    assert stats.p99_ci_halfwidth_pct(samples, [500, 500]) is None


def test_ci_halfwidth_pct():
    assert stats.ci_halfwidth_pct(100.0, (90.0, 105.0)) == pytest.approx(10.0)
    assert stats.ci_halfwidth_pct(100.0, (98.0, 112.0)) == pytest.approx(12.0)
    assert stats.ci_halfwidth_pct(0.0, (0.0, 1.0)) is None


def test_identical_samples_give_a_point_interval_not_none():
    """1,000 samples of exactly 100 ns in 10 slices: every slice agrees, so the interval is
    [100, 100] (up to rounding), not "the slices disagree"."""
    iv = stats.quantile_interval([100] * 1000, [100] * 10, 50)
    assert iv.reason is None
    assert iv.low_ns == pytest.approx(100, rel=1e-12) and iv.high_ns == pytest.approx(100, rel=1e-12)
