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
