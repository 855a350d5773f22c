"""Exact figures of fsyncbench.measure.stats and .intervals worked by hand: the one-sided
upper bound of a quantile where the two-sided ranks do not exist (the largest sample, at
exactly the stated confidence too), the bounds of this run's own interval on one degree
of freedom, the CI target's half-width of an interval that earlier runs widened (checked
on this run's own degrees of freedom and at the asked confidence), and a summary's p50
interval widened by earlier runs.
"""

import math

import numpy as np
import pytest
from scipy.stats import t as student_t

from fsyncbench.measure import intervals, stats
from fsyncbench.model import EarlierRun, Interval

# Student's t quantiles in closed form (Wikipedia, "Student's t-distribution", special
# cases, https://en.wikipedia.org/wiki/Student%27s_t-distribution#Special_cases):
# 1 df is the Cauchy, F^-1(p) = tan(pi (p - 1/2)); 2 df, F^-1(p) = a sqrt(2 / (1 - a^2))
# with a = 2p - 1.
T1_975 = math.tan(math.pi * 0.475)  # 12.7062
T2_975 = 0.95 * math.sqrt(2.0 / (1.0 - 0.95**2))  # 4.3027


def test_one_sample_bounds_a_low_percentile_from_above():
    # P(p1 <= x(1)) = 1 - 0.01^1 = 0.99 >= 0.95: the one sample is the bound (order
    # statistics of independent samples, Hahn & Meeker 1991 sec. 5.2: P(quantile <= x(n))
    # = 1 - q^n), though no two-sided interval exists (P(x(1) > p1) = 0.99)
    assert intervals.quantile_ci_ranks(1, 0.01, 0.9) is None
    assert intervals.quantile_upper_bound([7], 0.01) == 7.0
    # a p99 from one sample has no bound: 0.99^1 > 0.05
    assert intervals.quantile_upper_bound([7], 0.99) is None
    assert intervals.quantile_upper_bound([], 0.01) is None


def test_without_a_lower_rank_the_upper_bound_is_the_largest_sample():
    # p30 of 5 samples: 0.7^5 = 0.168 > 0.05 leaves no lower rank (so no ranks), but
    # P(p30 <= x(5)) = 1 - 0.3^5 = 0.99757 >= 0.95: the largest sample bounds it
    assert intervals.quantile_ci_ranks(5, 0.3, 0.9) is None
    assert intervals.quantile_upper_bound([3, 5, 1, 4, 2], 0.3) == 5.0
    # the rounds' own values still raise it
    assert intervals.quantile_upper_bound([3, 5, 1, 4, 2], 0.3, [4.0, 6.5]) == 6.5


def test_an_upper_bound_at_exactly_the_stated_confidence_is_given():
    # one sample, p25 at 75 %: P(p25 <= x(1)) = 1 - 0.25 = 0.75, exactly the level asked
    assert intervals.quantile_upper_bound([7], 0.25, confidence=0.75) == 7.0
    # at 80 % it is not enough (0.25 > 0.2)
    assert intervals.quantile_upper_bound([7], 0.25, confidence=0.8) is None


def _widened(within_se: float, within_df: float) -> Interval:
    """A p99 interval of 100 ns widened by two earlier runs (runs=3, the between-run df
    2), this run's own SE and df as given."""
    return Interval(
        100.0,
        60.0,
        170.0,
        0.2,
        2.0,
        10,
        intervals.METHOD_BLOCKS,
        None,
        runs=3,
        tau_log=0.15,
        within_se_log=within_se,
        within_df=within_df,
    )


def test_own_bounds_on_one_degree_of_freedom():
    # df 1 is what a tail split evenly between two slices gives (Kish's effective count 2,
    # less one): an own interval still exists, t = 12.706
    low, high = intervals.own_bounds(_widened(0.1, 1.0))
    assert low == pytest.approx(100.0 * math.exp(-T1_975 * 0.1), rel=1e-9)
    assert high == pytest.approx(100.0 * math.exp(T1_975 * 0.1), rel=1e-9)
    assert intervals.own_bounds(_widened(None, 0.0)) is None


def test_the_ci_target_of_a_widened_interval_uses_this_runs_own_df_and_level():
    # between runs df 2 (< 4), this run's own df 6: the target is checked on the latter;
    # the half-width is the upper side, 100 (e^(t s) - 1) %
    iv = _widened(0.05, 6.0)
    t95 = float(student_t.ppf(0.975, 6))  # 2.4469
    t90 = float(student_t.ppf(0.95, 6))  # 1.9432
    assert intervals.target_halfwidth_pct(iv) == pytest.approx(
        100.0 * math.expm1(t95 * 0.05), rel=1e-9
    )
    assert intervals.target_halfwidth_pct(iv, 0.9) == pytest.approx(
        100.0 * math.expm1(t90 * 0.05), rel=1e-9
    )
    # on 3 own degrees of freedom the target is never met, whatever the runs' df
    assert intervals.target_halfwidth_pct(_widened(0.05, 3.0)) is None


def test_earlier_runs_widen_the_p50_interval_of_a_summary():
    samples = list(np.random.default_rng(0).permutation(np.arange(1, 1001)))  # 1..1000 ns
    earlier = [
        EarlierRun("a.json", "2026-11-20T10:00:00Z", 400.0, 900.0, 0.01, 0.02),
        EarlierRun("b.json", "2026-11-21T10:00:00Z", 600.0, 1100.0, 0.01, 0.02),
    ]
    s = stats.summarize(samples, [100] * 10, earlier=earlier)
    # p50 500.5 (linear, h = 499.5); three runs: 400, 600, 500.5 -> sd of the logs on
    # 2 df, t = 4.3027; the spread is far wider than this run's own interval
    sd = float(np.std(np.log([400.0, 600.0, 500.5]), ddof=1))
    assert s.p50_interval.runs == 3
    assert s.p50_interval.df == 2.0
    assert s.p50_ci_ns == pytest.approx(
        (500.5 * math.exp(-T2_975 * sd), 500.5 * math.exp(T2_975 * sd)), rel=1e-9
    )
    assert s.p99_interval.runs == 3


def test_two_samples_show_the_clock_tick():
    # a 100 ns clock (Windows' QueryPerformanceCounter at 10 MHz): 200 and 300 ns differ
    # by one tick, which divides both
    assert intervals.clock_tick_ns([200, 300]) == 100
    assert intervals.clock_tick_ns([300]) == 1


def test_a_tick_seen_in_the_first_thousand_samples_is_checked_on_the_rest():
    # the first 1,000 samples step by 2 ns; one later sample is odd: the tick is 1
    even = [1000 + 2 * i for i in range(1000)]
    assert intervals.clock_tick_ns(even) == 2
    assert intervals.clock_tick_ns([*even, 1001]) == 1


def test_a_tick_is_checked_against_the_fastest_sample_too():
    # differences of 2 ns, but a 3 ns or a 1 ns sample is no whole number of 2 ns ticks
    assert intervals.clock_tick_ns([3, 5]) == 1
    assert intervals.clock_tick_ns([1, 3]) == 1
    assert intervals.clock_tick_ns([4, 6]) == 2


def test_earlier_runs_that_agree_keep_an_own_interval_on_one_degree_of_freedom():
    # p99 of 1,000 samples in 10 slices: the 200 at 1,001 ns fill slices 0 and 1, so the
    # samples at or beyond p99 lie evenly in two slices (Kish's effective count 2, df 1);
    # every slice dropped leaves p99 at 1,001, so the SE is the clock's tick, 1/1001
    samples = [1001] * 200 + [1000] * 800
    iv = intervals.quantile_interval(samples, [100] * 10, 99, earlier=[(1001.0, None)] * 2)
    se = 1.0 / 1001.0
    assert iv.runs == 3
    assert iv.df == 1.0 and iv.within_df == 1.0
    assert iv.within_se_log == pytest.approx(se, rel=1e-12)
    # the earlier runs show no spread, so this run's own interval (t = 12.706) is kept
    assert iv.bounds == pytest.approx(
        (1001.0 * math.exp(-T1_975 * se), 1001.0 * math.exp(T1_975 * se)), rel=1e-9
    )


def test_earlier_runs_do_not_touch_a_zero_estimate():
    own = Interval(0.0, None, None, None, 0.0, 10, intervals.METHOD_BLOCKS, "zero times")
    assert intervals.between_runs_interval(own, [(5.0, None), (6.0, None)]) is own


def test_earlier_runs_widen_at_the_confidence_asked():
    samples = list(np.random.default_rng(0).permutation(np.arange(1, 1001)))  # 1..1000 ns
    iv = intervals.quantile_interval(
        samples, [100] * 10, 50, confidence=0.9, earlier=[(400.0, None), (600.0, None)]
    )
    # t on 2 df at 0.95: a = 0.9, 0.9 sqrt(2 / 0.19) = 2.920
    t2_95 = 0.9 * math.sqrt(2.0 / (1.0 - 0.9**2))
    sd = float(np.std(np.log([400.0, 600.0, 500.5]), ddof=1))
    assert iv.bounds == pytest.approx(
        (500.5 * math.exp(-t2_95 * sd), 500.5 * math.exp(t2_95 * sd)), rel=1e-9
    )


def test_a_run_without_an_own_interval_records_no_own_df_when_widened():
    # slices that disagree: no bounds, though the SE and df (1.5) were computed
    own = Interval(100.0, None, None, 0.3, 1.5, 10, intervals.METHOD_BLOCKS, "disagree")
    iv = intervals.between_runs_interval(own, [(90.0, None), (110.0, None)])
    assert iv.runs == 3
    assert iv.within_se_log is None and iv.within_df == 0.0
    assert intervals.own_bounds(iv) is None


def test_tau_counts_this_runs_own_se_among_the_runs_errors():
    # Hedges' method of moments: tau^2 = var(log estimates) - mean(own SE^2), this run's
    # SE (0.05) included, an earlier run without one counted as 0
    own = Interval(100.0, 90.0, 111.0, 0.05, 9.0, 10, intervals.METHOD_BLOCKS)
    iv = intervals.between_runs_interval(own, [(80.0, 0.04), (125.0, None)])
    spread = float(np.var(np.log([80.0, 125.0, 100.0]), ddof=1))
    assert iv.tau_log == pytest.approx(math.sqrt(spread - (0.04**2 + 0.05**2) / 3), rel=1e-9)
    assert iv.within_se_log == 0.05 and iv.within_df == 9.0
