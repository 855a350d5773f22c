"""Special functions the intervals and the tests between runs need: Student's t distribution
(tail probability and quantile) and the digamma and polygamma functions.

These replaced scipy.special (about 140 MB and 6 s of a fresh ``pip install .``, for four
functions). They agree with scipy's ``stdtr``, ``stdtrit``, ``digamma`` and ``polygamma`` to
1e-11 relative over df 0.3 to 1e12 and tails down to 1e-12 (tests/test_special.py checks
them against scipy, which the test extra keeps as the independent reference).

- The t distribution's tail through the regularized incomplete beta function,
  P(T >= t) = I_x(df/2, 1/2) / 2 with x = df/(df+t^2) (Abramowitz and Stegun, "Handbook of
  Mathematical Functions", 26.7.1 with 26.5.27; https://dlmf.nist.gov/8.17 for I_x). Up to
  :data:`CF_MAX_DF` degrees of freedom I_x is the continued fraction of DLMF 8.17.22
  evaluated in floats by the modified Lentz method (Press et al., "Numerical Recipes",
  3rd ed., 6.4 and 5.2), about 50 us a call; the tests between runs of a simulation make
  10^5 such calls. Above it, where that fraction needs ~sqrt(df) terms, mpmath's
  ``betainc`` (https://mpmath.org/doc/current/functions/expintegrals.html#betainc).
- The quantile by Newton's method on the density inside a bracket.
- df = inf is the standard normal (:class:`statistics.NormalDist`).
- digamma and polygamma from mpmath (a handful of calls per comparison). mpmath is pure
  Python, 6 MB, imported on first use.
"""

from __future__ import annotations

import functools
import math
from statistics import NormalDist
from typing import Any

__all__ = ["digamma", "polygamma", "t_cdf", "t_quantile"]


def _mp() -> Any:
    import mpmath

    return mpmath


#: From this t on, where t^2 <= df, P(T >= t) is below the smallest double (5e-324), and is
#: returned as 0 without a series whose length grows with t^2 (mpmath's betainc took 0.3 s
#: at df 1e5, t 300). The bound: for u = t^2/df <= 1, log1p(u) >= u ln 2 (concavity), so
#: the density is at most exp(-ln 2 / 2 * t^2) = 1e-376 at t = 50, and so is the tail.
UNDERFLOW_T = 50.0
#: Most degrees of freedom the float continued fraction serves; above, mpmath. Bounded by
#: the front factor, not the fraction: lgamma(df/2 + 1/2) - lgamma(df/2) cancels the digits of
#: lgamma(5000) = 3.8e4, leaving ~4e-12 relative (at df 1e5 it was 5e-11).
CF_MAX_DF = 1e4
#: Relative step at which the continued fraction is converged (a few ulps).
_CF_EPS = 1e-16
_TINY = 1e-300


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of I_x(a, b) (DLMF 8.17.22) by the modified Lentz method
    (Numerical Recipes 3rd ed., routine ``betacf``); converges fast for x < (a+1)/(a+b+2)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, 100_000):
        m2 = 2 * m
        for aa in (
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + aa / c
            c = c if abs(c) > _TINY else _TINY
            h *= d * c
        if abs(d * c - 1.0) < _CF_EPS:
            break
    return h


def _upper_tail(t: float, df: float) -> float:
    """P(T >= t) for t >= 0 and finite df > 0. x = df/(df+t^2) and 1 - x = t^2/(df+t^2) enter
    as logarithms formed without cancellation; the smaller of I_x(a, b) and
    I_{1-x}(b, a) = 1 - I_x(a, b) is the one the fraction computes (DLMF 8.17.4)."""
    if t >= UNDERFLOW_T and t * t <= df:
        return 0.0
    if t == 0:
        return 0.5
    if df > CF_MAX_DF:
        mp = _mp()
        tt = mp.mpf(t) ** 2
        with mp.workprec(160):  # 1 - I cancels as many digits as the tail is small
            if df / (df + tt) < 0.5:
                return float(mp.betainc(df / 2.0, 0.5, 0, df / (df + tt), regularized=True) / 2)
            return float((1 - mp.betainc(0.5, df / 2.0, 0, tt / (df + tt), regularized=True)) / 2)
    a, b = df / 2.0, 0.5
    log_u = 2.0 * math.log(t) - math.log(df)  # u = t^2/df = (1 - x)/x, never overflowing
    if log_u <= 0.0:
        log1p_u = math.log1p(math.exp(log_u))
        log_x, log_1mx = -log1p_u, log_u - log1p_u
    else:
        log1p_inv = math.log1p(math.exp(-log_u))
        log_x, log_1mx = -log_u - log1p_inv, -log1p_inv
    x = math.exp(log_x)
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * log_x + b * log_1mx
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _betacf(a, b, x) / a / 2.0
    one_minus_x = math.exp(log_1mx)
    return (1.0 - math.exp(log_front) * _betacf(b, a, one_minus_x) / b) / 2.0


def _density(t: float, df: float) -> float:
    """The t distribution's density at t (Abramowitz and Stegun 26.7.1)."""
    log_norm = math.lgamma((df + 1) / 2.0) - math.lgamma(df / 2.0) - 0.5 * math.log(df * math.pi)
    if t == 0:
        return math.exp(log_norm)
    log_u = 2.0 * math.log(abs(t)) - math.log(df)
    log1p_u = math.log1p(math.exp(log_u)) if log_u <= 0 else log_u + math.log1p(math.exp(-log_u))
    return math.exp(log_norm - (df + 1) / 2.0 * log1p_u)


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with ``df`` > 0 degrees of freedom (inf: the normal); nan
    for a nan argument or df <= 0."""
    if math.isnan(t) or not df > 0:
        return math.nan
    if math.isinf(df):
        return NormalDist().cdf(t)
    if math.isinf(t):
        return 1.0 if t > 0 else 0.0
    upper = _upper_tail(abs(t), df)
    return 1.0 - upper if t > 0 else upper


@functools.lru_cache(maxsize=1024)
def t_quantile(df: float, p: float) -> float:
    """The ``p`` quantile (0 < p < 1) of Student's t with ``df`` > 0 degrees of freedom (inf:
    the normal): the t with :func:`t_cdf` (t, df) = p, to about 1e-12 relative; +-inf at p 1
    and 0, nan outside [0, 1] or for df <= 0. Cached: a run asks for the same few (df, p).

    Solved on the upper tail (1 - p, without cancellation) by Newton's method on the
    density, kept inside a bracket that halves whenever a step would leave it, so the heavy
    tails of small df cannot throw it off."""
    if math.isnan(p) or not 0 <= p <= 1 or not df > 0:
        return math.nan
    if p in (0.0, 1.0):
        return math.inf if p == 1 else -math.inf
    if p == 0.5:
        return 0.0
    if math.isinf(df):
        return NormalDist().inv_cdf(p)
    # the tail wanted: the lower tail p below 0.5 is, by symmetry, the upper tail of -t;
    # 1 - p is exact in floats for p in [0.5, 1] (Sterbenz)
    sign, q = (-1.0, p) if p < 0.5 else (1.0, 1.0 - p)
    return sign * _upper_quantile(q, df, NormalDist().inv_cdf(max(p, 1.0 - p)))


def _upper_quantile(q: float, df: float, start: float) -> float:
    """The t >= 0 with P(T >= t) = q (0 < q < 1/2), starting from ``start``."""
    lo, hi = 0.0, max(1.0, start)
    while _upper_tail(hi, df) > q:  # widen until the bracket holds the root
        lo, hi = hi, hi * 4.0
        if hi > 1e300:
            return math.inf
    t = start if lo < start < hi else (lo + hi) / 2.0
    for _ in range(200):
        excess = _upper_tail(t, df) - q  # decreasing in t
        if excess > 0:
            lo = t
        else:
            hi = t
        density = _density(t, df)
        nxt = t + excess / density if density > 0 else math.nan
        if not lo < nxt < hi:  # (nan included)
            nxt = (lo + hi) / 2.0
        if abs(nxt - t) <= 1e-13 * max(abs(nxt), 1e-300) or hi - lo <= 1e-13 * hi:
            return nxt
        t = nxt
    return t


def digamma(x: float) -> float:
    """The digamma function psi(x) = d/dx ln Gamma(x) (https://dlmf.nist.gov/5.2#E2)."""
    return float(_mp().digamma(x))


def polygamma(m: int, x: float) -> float:
    """The m-th derivative of :func:`digamma` at x (m = 1: trigamma;
    https://dlmf.nist.gov/5.15)."""
    return float(_mp().polygamma(m, x))
