import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fsyncbench import stats


def test_summary_matches_numpy_on_known_samples():
    samples = list(range(1, 1001))  # 1..1000 ns
    s = stats.summarize(samples)
    assert s.count == 1000
    assert s.min_ns == 1 and s.max_ns == 1000
    assert s.p50_ns == pytest.approx(np.percentile(samples, 50))
    assert s.p99_ns == pytest.approx(990.01)
    assert s.mean_ns == pytest.approx(500.5)
    assert s.ops_per_s == pytest.approx(1e9 / 500.5)
    assert s.ci_method == "bootstrap"


def test_bootstrap_ci_contains_estimate_and_is_repeatable():
    rng = np.random.default_rng(1)
    samples = rng.lognormal(11, 0.5, 2000).astype(int)
    a, b = stats.summarize(samples), stats.summarize(samples)
    assert a.p50_ci_ns == b.p50_ci_ns
    assert a.p50_ci_ns[0] <= a.p50_ns <= a.p50_ci_ns[1]
    assert a.p99_ci_ns[0] <= a.p99_ns <= a.p99_ci_ns[1]
    assert a.p50_ci_ns[1] - a.p50_ci_ns[0] < a.p99_ci_ns[1] - a.p99_ci_ns[0]


def test_large_sample_sets_use_order_statistic_ci():
    samples = np.arange(100_000)
    s = stats.summarize(samples)
    assert s.ci_method == "order-statistic"
    assert s.p99_ci_ns[0] < s.p99_ns < s.p99_ci_ns[1]


def test_empty_samples_rejected():
    with pytest.raises(ValueError):
        stats.summarize([])


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=10**9), min_size=1, max_size=300))
def test_percentiles_are_ordered(samples):
    s = stats.summarize(samples)
    assert s.min_ns <= s.p50_ns <= s.p90_ns <= s.p99_ns <= s.p999_ns <= s.max_ns
    assert s.p50_ci_ns[0] <= s.p50_ci_ns[1]


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


def test_order_statistic_ci_covers_the_true_p99():
    """Seeded simulation: 95 % intervals from 1,200 samples of Exp(1) contain the true p99
    (ln 100) in at least 94 % of 2,000 data sets."""
    rng = np.random.default_rng(11)
    true_p99 = np.log(100.0)
    hits = 0
    for _ in range(2000):
        lo, hi = stats.order_statistic_ci(rng.exponential(size=1200), 99)
        hits += lo <= true_p99 <= hi
    assert hits / 2000 >= 0.94


def test_small_samples_clamp_the_missing_p99_bound_to_the_maximum():
    data = np.arange(1, 101, dtype=float)
    lo, hi = stats.order_statistic_ci(data, 99)
    assert hi == 100 and lo < 100


def test_p99_halfwidth_check_equals_the_summary_above_the_bootstrap_limit():
    rng = np.random.default_rng(5)
    samples = rng.lognormal(11, 0.7, 5000).astype(int)
    s = stats.summarize(samples)
    assert s.ci_method == "order-statistic"
    assert stats.p99_ci_halfwidth_pct(samples) == pytest.approx(s.p99_ci_halfwidth_pct)
    assert s.p99_ci_halfwidth_pct == pytest.approx(
        100 * max(s.p99_ns - s.p99_ci_ns[0], s.p99_ci_ns[1] - s.p99_ns) / s.p99_ns)


def test_small_sample_sets_keep_the_bootstrap():
    s = stats.summarize(list(range(1, 501)))
    assert s.ci_method == "bootstrap" and s.ci_resamples == stats.BOOTSTRAP_RESAMPLES
    assert s.p99_ci_halfwidth_pct is not None


def test_ci_halfwidth_pct():
    assert stats.ci_halfwidth_pct(100.0, (90.0, 105.0)) == pytest.approx(10.0)
    assert stats.ci_halfwidth_pct(100.0, (98.0, 112.0)) == pytest.approx(12.0)
    assert stats.ci_halfwidth_pct(0.0, (0.0, 1.0)) is None
