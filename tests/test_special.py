"""Student's t and the polygamma functions of fsyncbench.measure.special against scipy, the
reference the test extra keeps for this (an independent implementation: scipy's cephes/boost
code, not mpmath), over the degrees of freedom the intervals meet (fractional Satterthwaite
df from 0.3 up, the normal limit) and tails from 1e-12 to the median."""

from __future__ import annotations

import math

import pytest
from scipy.special import digamma, polygamma, stdtr, stdtrit

from fsyncbench.measure import intervals, special

DFS = [0.3, 0.5, 1, 1.5, 2, 3.7, 7, 12.3, 30, 100, 1000, 1e5, 1e7, 1e12]
PS = [1e-12, 1e-9, 1e-6, 0.001, 0.025, 0.05, 0.1, 0.3, 0.49, 0.51, 0.8, 0.95, 0.975, 0.995]
PS += [0.9995, 1 - 1e-6, 1 - 1e-9]


@pytest.mark.parametrize("df", DFS)
def test_t_quantile_matches_scipy(df: float) -> None:
    for p in PS:
        got, want = special.t_quantile(df, p), float(stdtrit(df, p))
        assert got == pytest.approx(want, rel=1e-11), (df, p)
        # and it is the inverse of the CDF
        assert special.t_cdf(got, df) == pytest.approx(p, rel=1e-9), (df, p)


@pytest.mark.parametrize("df", DFS)
def test_t_cdf_matches_scipy_in_both_tails(df: float) -> None:
    for t in (-1e4, -50, -8, -3, -1, -1e-3, 0, 0.5, 2, 10, 1e4):
        assert special.t_cdf(t, df) == pytest.approx(float(stdtr(df, t)), rel=1e-12), (df, t)


def test_edges() -> None:
    assert special.t_quantile(7, 0.5) == 0.0
    assert special.t_quantile(7, 1.0) == math.inf and special.t_quantile(7, 0.0) == -math.inf
    for p in (-0.1, 1.1, math.nan):
        assert math.isnan(special.t_quantile(7, p))
    assert math.isnan(special.t_quantile(0, 0.9)) and math.isnan(special.t_cdf(1.0, -1))
    assert special.t_quantile(math.inf, 0.975) == pytest.approx(1.959963984540054, rel=1e-14)
    assert special.t_cdf(-2, math.inf) == pytest.approx(float(stdtr(math.inf, -2)), rel=1e-12)
    assert special.t_cdf(math.inf, 3) == 1.0 and special.t_cdf(-math.inf, 3) == 0.0
    assert math.isnan(special.t_cdf(math.nan, 3))
    # t^2 beyond the float range (the logarithms never overflow), and the far Cauchy tail
    for df in (0.3, 1.0, 50.0):
        assert special.t_cdf(-1e200, df) == pytest.approx(float(stdtr(df, -1e200)), rel=1e-11)
    assert special.t_cdf(-1e200, 1e6) == 0.0 and special.t_cdf(1e200, 1e6) == 1.0


def test_the_interval_functions_use_it() -> None:
    """intervals' t functions are these (the two-sided p of t = 2.365 on 7 df is 0.05)."""
    assert intervals.t_quantile(7, 0.975) == pytest.approx(2.364624251592785, rel=1e-12)
    assert intervals.t_two_sided_p(2.364624251592785, 7) == pytest.approx(0.05, rel=1e-10)
    assert intervals.t_one_sided_p(-1.0, 4) == pytest.approx(float(stdtr(4, 1.0)), rel=1e-12)


@pytest.mark.parametrize("x", [0.05, 0.5, 1, 3.5, 50, 1e4, 1e7])
def test_digamma_and_polygamma_match_scipy(x: float) -> None:
    assert special.digamma(x) == pytest.approx(float(digamma(x)), rel=1e-12, abs=1e-15)
    for m in (1, 2):
        assert special.polygamma(m, x) == pytest.approx(float(polygamma(m, x)), rel=1e-12)
