"""The test between runs (fsyncbench.measure.between) at its edges: which earlier runs are
left out (worked by hand at the 1 in 1,000 boundary), when the history ratio and the prior
exist, the pair basis with two runs and with a finite prior, the inverse trigamma against
limma's rules, figures below 1 ns (the test is scale-free), a candidate equal to its
baseline, and the messages a caller reads."""

import math

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.special import digamma, polygamma
from scipy.stats import t as student_t

from fsyncbench.measure import between
from fsyncbench.measure.between import RunFigure

CALM = (100.0, 104.0, 97.0, 101.0)


def _outlier_boundary(others, alpha=between.OUTLIER_ALPHA):
    """The figure above which a run is told apart from ``others`` (runs without rounds):
    mean of their logs + t(1 - alpha/2, m - 1) s sqrt(1 + 1/m), by hand."""
    ys = np.log(others)
    m = len(others)
    s2 = float(np.var(ys, ddof=1))
    t = float(student_t.ppf(1 - alpha / 2, m - 1))
    return math.exp(float(ys.mean()) + t * math.sqrt(s2 * (1 + 1 / m)))


# --------------------------------------------------------------------------- left out


def test_an_earlier_run_is_left_out_just_beyond_the_prediction_interval_and_kept_within():
    """Four runs without rounds (100, 110, 95, 105, the last the baseline report) predict a
    new one at mean +- t(0.9995, 3) s sqrt(1 + 1/4); an earlier run 1 % beyond that is left
    out, 1 % within it is kept."""
    others = [100.0, 110.0, 95.0, 105.0]
    edge = _outlier_boundary(others)
    for factor, gone in ((1.01, 1), (0.99, 0)):
        base = [RunFigure(edge * factor), *(RunFigure(v) for v in others)]
        assert between.steady(base)[1] == gone
        assert between.outlying(base) == (frozenset({0}) if gone else frozenset())
    # below the others alike
    low = math.exp(2 * float(np.mean(np.log(others))) - math.log(edge))
    assert between.steady([RunFigure(low * 0.99), *(RunFigure(v) for v in others)])[1] == 1
    assert between.steady([RunFigure(low * 1.01), *(RunFigure(v) for v in others)])[1] == 0


def test_four_runs_are_enough_to_leave_one_out():
    """MIN_BASELINE_RUNS runs (3 to predict from): a 10x run among 3 calm ones is left out."""
    assert between.MIN_BASELINE_RUNS == 4
    base = [RunFigure(1000.0, 0.05, 8), *(RunFigure(v, 0.05, 8) for v in CALM[:3])]
    kept, gone = between.steady(base)
    assert gone == 1 and [b.estimate_ns for b in kept] == list(CALM[:3])
    # three runs: too few to predict from
    assert between.steady(base[:3])[1] == 0


def test_a_run_is_judged_by_the_other_runs_rounds_not_its_own():
    """The others agree exactly but their rounds spread widely (sd 0.5): a run 3x away is
    within their spread (t = log 3 / sqrt(0.25 * 1.25) = 1.97), however calm its own rounds."""
    base = [RunFigure(300.0, 0.01, 8), *[RunFigure(100.0, 0.5, 8)] * 4]
    assert between.steady(base)[1] == 0


def test_runs_that_agree_exactly_without_rounds_leave_nothing_out():
    """No spread to judge by (identical figures, no rounds): no run is told apart."""
    base = [RunFigure(200.0), *[RunFigure(100.0)] * 4]
    kept, gone = between.steady(base)
    assert gone == 0 and len(kept) == 5


def test_a_run_of_zero_is_neither_a_run_to_predict_from_nor_counted_as_left_out():
    planted = RunFigure(1000.0, 0.05, 8)
    calm = [RunFigure(v, 0.05, 8) for v in CALM]
    kept, gone = between.steady([RunFigure(0.0, 0.05, 8), planted, *calm])
    assert gone == 1 and kept == calm
    # three runs above zero: too few to predict from, whatever the zeros
    few = [RunFigure(0.0), RunFigure(0.0), planted, *calm[:2]]
    assert between.steady(few) == ([planted, *calm[:2]], 0)


# --------------------------------------------------------------------------- history ratio


def test_history_ratio_of_two_runs_by_hand():
    a, b = RunFigure(100.0, 0.05, 8), RunFigure(120.0, 0.05, 8)
    vy = float(np.var(np.log([100.0, 120.0]), ddof=1))
    assert between.history_ratio([a, b]) == pytest.approx((vy / 0.05**2, 1.0), rel=1e-12)
    assert between.history_ratio([a]) is None


def test_history_ratio_needs_every_run_s_rounds_and_a_spread_between_runs():
    with_rounds = [RunFigure(v, 0.05, 8) for v in CALM]
    assert between.history_ratio(with_rounds) is not None
    # one run without rounds: no ratio
    assert between.history_ratio([*with_rounds[:3], RunFigure(101.0)]) is None
    # runs that agree exactly: no ratio (0 would claim runs never differ)
    assert between.history_ratio([RunFigure(100.0, 0.05, 8)] * 4) is None


# --------------------------------------------------------------------------- prior


def _trigamma_inverse_by_hand(x):
    return brentq(lambda y: float(polygamma(1, y)) - x, 1e-12, 1e12, xtol=1e-300, rtol=1e-15)


@pytest.mark.parametrize(
    "ratios",
    [
        [(0.3, 3.0), (2.5, 3.0), (0.6, 5.0), (6.0, 3.0), (1.5, 7.0)],  # evar 0.72
        [(0.1, 3.0), (2.5, 3.0), (0.6, 5.0), (10.0, 3.0), (1.5, 7.0)],  # evar 2.2
    ],
)
def test_fit_prior_by_hand_with_statistics_that_disagree(ratios):
    """Smyth 2004 sec. 6.2: e = log r - digamma(d/2) + log(d/2); d0 = 2 trigamma^-1(var(e)
    - mean trigamma(d/2)); ratio = exp(mean e + digamma(d0/2) - log(d0/2))."""
    r = np.array([u[0] for u in ratios])
    half = np.array([u[1] for u in ratios]) / 2
    e = np.log(r) - digamma(half) + np.log(half)
    evar = float(np.var(e, ddof=1)) - float(np.mean(polygamma(1, half)))
    assert evar > 0  # the case under test: statistics disagree beyond chance
    d0 = 2 * _trigamma_inverse_by_hand(evar)
    want = math.exp(float(e.mean()) + float(digamma(d0 / 2)) - math.log(d0 / 2))
    got = between.fit_prior(ratios)
    assert got.df == pytest.approx(d0, rel=1e-9)
    assert got.ratio == pytest.approx(want, rel=1e-9)


def test_fit_prior_ignores_statistics_without_evidence_and_learns_from_one_df():
    good = [(1.0, 3.0), (2.5, 3.0), (0.6, 5.0), (4.0, 3.0)]
    base = between.fit_prior(good)
    for bad in ((0.0, 3.0), (-1.0, 3.0), (1.0, 0.0), (1.0, -2.0)):
        assert between.fit_prior([bad, *good]) == base
    # statistics of two runs each (1 degree of freedom) are evidence too
    one_df = between.fit_prior([(0.5, 1.0), (1.0, 1.0), (2.0, 1.0), (30.0, 1.0)])
    assert one_df is not None and one_df.ratio > 0


def test_fit_prior_where_the_ratios_spread_exactly_as_chance_shares_one_ratio():
    """Log ratios whose sample variance equals the chance part (trigamma(d/2)) to the last
    bit on this platform: evar = 0, one shared ratio (df inf, or at worst enormous where the
    platform's last bit differs), never a division by zero."""
    a = 1.1841466551137232
    got = between.fit_prior([(math.exp(-a), 3.0), (math.exp(a), 3.0), (1.0, 3.0), (1.0, 3.0)])
    assert got.df > 1e15


@pytest.mark.parametrize("x", [1e-6, 2e-6, 1e-3, 0.01, 0.5, 1.0, 3.0, 10.0, 1e3, 1e6, 1e7])
def test_trigamma_inverse_solves_trigamma(x):
    y = between._trigamma_inverse(x)
    assert float(polygamma(1, y)) == pytest.approx(x, rel=1e-10, abs=0)


def test_trigamma_inverse_uses_limmas_asymptotes_beyond_its_limits():
    """limma's trigammaInverse (Bioconductor limma, R/fitFDist.R): x > 1e7 -> 1/sqrt(x),
    x < 1e-6 -> 1/x; Newton's method from 0.5 + 1/x in between, the limits themselves
    included."""
    x = 1e7 + 0.5
    assert between._trigamma_inverse(x) == 1.0 / math.sqrt(x)
    assert between._trigamma_inverse(4e8) == 1.0 / math.sqrt(4e8)
    assert between._trigamma_inverse(5e-7) == 1.0 / 5e-7
    assert between._trigamma_inverse(2.5e-7) == 4e6
    for edge in (1e7, 1e-6):
        y = between._trigamma_inverse(edge)
        assert float(polygamma(1, y)) == pytest.approx(edge, rel=1e-12, abs=0)


# --------------------------------------------------------------------------- shift


def test_pair_basis_with_two_runs_uses_their_spread_when_larger():
    """A and one earlier run (k = 2), rounds calm: their prediction variance s^2 (1 + 1/2) on
    1 degree of freedom."""
    ys = np.log([80.0, 120.0])
    base = [RunFigure(80.0, 0.02, 8), RunFigure(120.0, 0.02, 8)]
    sh = between.shift(base, RunFigure(300.0, 0.02, 8))
    assert sh.basis == "pair" and sh.spread == "runs" and sh.df == 1.0
    assert sh.se_log == pytest.approx(math.sqrt(float(np.var(ys, ddof=1)) * 1.5), rel=1e-12)


def test_pair_basis_with_two_runs_without_rounds_is_still_a_test():
    """Two runs are evidence of their spread even without rounds: a test on 1 df, not
    "cannot tell"."""
    ys = np.log([99.0, 101.0])
    sh = between.shift([RunFigure(99.0), RunFigure(101.0)], RunFigure(150.0))
    assert sh.reason is None and sh.spread == "runs" and sh.df == 1.0
    assert sh.se_log == pytest.approx(math.sqrt(float(np.var(ys, ddof=1)) * 1.5), rel=1e-12)
    one = between.shift([RunFigure(101.0)], RunFigure(150.0))
    assert one.p_value is None and one.reason


def test_pair_basis_moderated_by_a_finite_prior_by_hand():
    """Three runs with rounds and a prior of ratio 4 on 6 df: r_post = (6 * 4 + 2 r_hat) / 8,
    variance r_post w (1 + 1/3), df 1 / (1 / 8 + 1 / 21)."""
    vals = [99.0, 100.0, 101.0]
    base = [RunFigure(v, 0.05, 8) for v in vals]
    w = 0.05**2
    r_hat = float(np.var(np.log(vals), ddof=1)) / w
    r_post = (6.0 * 4.0 + 2.0 * r_hat) / 8.0
    sh = between.shift(base, RunFigure(150.0, 0.05, 8), prior=between.SpreadPrior(6.0, 4.0))
    assert sh.spread == "runs"
    assert sh.se_log == pytest.approx(math.sqrt(r_post * w * (1 + 1 / 3)), rel=1e-12)
    assert sh.df == pytest.approx(1 / (1 / 8 + 1 / 21), rel=1e-12)


def test_pair_keeps_the_rounds_test_where_the_runs_predict_no_more():
    """The runs' prediction replaces the rounds' only when it is the larger: equal (a prior
    of ratio 1 shared exactly, rounds alike) keeps the rounds' Welch df, 12."""
    base = [RunFigure(v, 0.25, 8) for v in (99.0, 100.0, 101.0)]
    sh = between.shift(base, RunFigure(150.0, 0.25, 8), prior=between.SpreadPrior(math.inf, 1.0))
    assert sh.spread == "rounds" and sh.df == pytest.approx(12.0)


def test_history_basis_adds_b_s_noise_only_against_a_known_round_variance():
    """Some baseline runs recorded no rounds: their round variance is unknown, so a noisy B
    is judged as one more run like them (classic prediction), nothing added."""
    vals = [100.0, 110.0, 95.0, 105.0]
    base = [RunFigure(vals[0]), RunFigure(vals[1]), *(RunFigure(v, 0.01, 8) for v in vals[2:])]
    sh = between.shift(base, RunFigure(150.0, 0.8, 8))
    assert sh.spread == "runs" and sh.df == 3.0
    vy = float(np.var(np.log(vals), ddof=1))
    assert sh.se_log == pytest.approx(math.sqrt(vy * 1.25), rel=1e-12)


def test_one_tick_of_difference_is_exactly_two_ticks_variance():
    """The floor is 2 tick^2 (one tick on either side) of the coarser figure: 100 ns clock,
    figures 100 and 200, so the tick is the whole of A's figure: se sqrt(2), above the
    rounds' floors (1 + 0.25)."""
    a = RunFigure(100.0, 0.0, 8, 0.0, tick_ns=100.0)
    b = RunFigure(200.0, 0.0, 8, 0.0, tick_ns=100.0)
    assert between.shift([a], b).se_log == pytest.approx(math.sqrt(2.0), rel=1e-12)


def test_a_candidate_equal_to_its_one_run_baseline_is_no_change_at_all():
    """B's figure the same as A's: ratio 1, p exactly 1, a symmetric interval (a figure
    whose numpy and libm logs differ in the last bit: the one run's own figure is used)."""
    x = 633250.7874023849
    sh = between.shift([RunFigure(x, 0.05, 8)], RunFigure(x, 0.05, 8))
    assert sh.ratio == 1.0 and sh.p_value == 1.0
    lo, hi = sh.ratio_ci
    assert lo * hi == pytest.approx(1.0, rel=1e-15)
    assert sh.baseline_ns == x and sh.candidate_ns == x


def test_the_shift_names_both_figures():
    base = [RunFigure(v, 0.05, 8) for v in CALM]
    sh = between.shift(base, RunFigure(150.0, 0.05, 8))
    assert sh.candidate_ns == 150.0
    assert sh.baseline_ns == pytest.approx(math.exp(float(np.mean(np.log(CALM)))), rel=1e-12)
    zero = between.shift([RunFigure(5.0)], RunFigure(0.0))
    assert zero.candidate_ns == 0.0 and zero.baseline_ns == 5.0


def test_a_baseline_of_zeros_has_a_baseline_figure_of_zero():
    sh = between.shift([RunFigure(0.0), RunFigure(0.0)], RunFigure(5.0, 0.1, 8))
    assert sh.baseline_ns == 0.0 and sh.p_value is None and sh.ratio is None
    assert sh.reason == "a figure of zero (the clock could not time it)"


def test_the_test_is_scale_free_figures_below_one_ns_included():
    """Every figure and tick scaled by 1/1000 (a figure below 1 ns): the same left out, the
    same standard error and p."""

    def runs(scale):
        planted = RunFigure(1000.0 * scale, 0.05, 8, tick_ns=scale)
        calm = [RunFigure(v * scale, 0.05, 8, tick_ns=scale) for v in CALM]
        return [calm[0], planted, *calm[1:]]

    cands = [(0.5, 0.05), (0.9, 0.3)]
    for cand, sd in cands:
        for prior in (None, between.SpreadPrior(6.0, 2.0)):
            ns = between.shift(runs(1.0), RunFigure(cand * 200, sd, 8), prior=prior)
            sub = between.shift(runs(1e-3), RunFigure(cand * 0.2, sd, 8, tick_ns=1e-3), prior=prior)
            assert sub.left_out == ns.left_out == 1
            assert sub.se_log == pytest.approx(ns.se_log, rel=1e-9)
            assert sub.p_value == pytest.approx(ns.p_value, rel=1e-9)
            assert sub.spread == ns.spread
    # the pair basis: one run each
    a = RunFigure(0.1, between.round_sd_log([0.09, 0.1, 0.11]), 3, tick_ns=1e-4)
    b = RunFigure(0.2, 0.05, 8, tick_ns=1e-4)
    sh = between.shift([a], b)
    assert sh.p_value is not None and sh.spread == "rounds"
    assert a.spread() == pytest.approx((float(np.var(np.log([0.09, 0.1, 0.11]), ddof=1)), 2.0))


def test_round_sd_log_computes_in_double_precision_whatever_it_is_given():
    v32 = np.array([100.0, 110.0, 121.0, 97.0], dtype=np.float32)
    want = float(np.std(np.log(v32.astype(np.float64)), ddof=1))
    assert between.round_sd_log(v32) == pytest.approx(want, rel=1e-12)
    ints = [10**20, 2 * 10**20, 3 * 10**20]  # beyond int64: still numbers
    assert between.round_sd_log(ints) == pytest.approx(
        float(np.std(np.log([1e20, 2e20, 3e20]), ddof=1)), rel=1e-12
    )


# --------------------------------------------------------------------------- messages


def test_an_empty_baseline_is_refused_with_a_reason():
    with pytest.raises(ValueError, match="^a baseline of at least one run is required$"):
        between.shift([], RunFigure(5.0))


@pytest.mark.parametrize("alpha", [0.0, 1.0, 1.5, -0.1])
def test_detectable_ratio_refuses_a_level_outside_0_1(alpha):
    with pytest.raises(ValueError, match=rf"^a level in \(0, 1\) is required, got {alpha}$"):
        between.detectable_ratio(0.1, 10.0, alpha)
