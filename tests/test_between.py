"""The test between runs (fsyncbench.measure.between): exact values by hand, the boundaries
of the regression rule, and simulated runs whose truth is known: how often it cries wolf on
an unchanged machine and how often it catches a planted slowdown, with and without earlier
runs."""

import math

import numpy as np
import pytest
from scipy.stats import t as student_t

from fsyncbench.measure import between, intervals
from fsyncbench.measure.between import RunFigure

# --------------------------------------------------------------------------- by hand


def test_round_sd_log_is_the_sample_sd_of_the_logs():
    v = [100.0, 110.0, 121.0]
    want = float(np.std(np.log(v), ddof=1))
    assert between.round_sd_log(v) == pytest.approx(want, rel=1e-12)
    assert between.round_sd_log([100.0, 110.0]) is None  # fewer than 3 rounds
    assert between.round_sd_log([100.0, 0.0, 5.0]) is None


def test_a_runs_spread_is_its_rounds_never_below_its_own_se_or_a_tick():
    f = RunFigure(100.0, round_sd_log=0.05, rounds=8, own_se_log=0.02, tick_ns=1.0)
    assert f.spread() == pytest.approx((0.05**2, 7.0))
    # the jackknife SE of the whole run above the rounds' spread wins
    assert RunFigure(100.0, 0.01, 8, 0.03).spread() == pytest.approx((0.03**2, 7.0))
    # a 100 ns clock under a 200 ns figure: never below one tick (0.5 of the figure)
    assert RunFigure(200.0, 0.0, 8, None, 100.0).spread() == pytest.approx((0.25, 7.0))
    assert RunFigure(100.0, 0.05, 2).spread() is None  # too few rounds
    assert RunFigure(0.0, 0.05, 8).spread() is None


def test_clock_tick_is_the_divisor_of_the_differences():
    assert intervals.clock_tick_ns([100, 200, 300, 500]) == 100
    assert intervals.clock_tick_ns([1000, 2000, 2000, 7000]) == 1000
    assert intervals.clock_tick_ns([70, 80, 90]) == 10
    assert intervals.clock_tick_ns([101, 200, 300]) == 1
    assert intervals.clock_tick_ns([100] * 5) == 1  # no difference shows a tick
    assert intervals.clock_tick_ns([]) == 1
    # beyond the first 1,000 samples: one odd value late in the run still counts
    assert intervals.clock_tick_ns([100] * 999 + [200] * 1000 + [250]) == 50


def test_pair_basis_by_hand():
    """A alone against B: log ratio over sqrt(w_A + w_B), Welch-Satterthwaite df."""
    a = RunFigure(100.0, 0.05, 8)
    b = RunFigure(150.0, 0.08, 6)
    sh = between.shift([a], b)
    wa, wb = 0.05**2, 0.08**2
    se = math.sqrt(wa + wb)
    df = (wa + wb) ** 2 / (wa**2 / 7 + wb**2 / 5)
    d = math.log(1.5)
    assert sh.basis == "pair" and sh.baseline_runs == 1
    assert sh.baseline_ns == pytest.approx(100.0) and sh.ratio == pytest.approx(1.5)
    assert sh.se_log == pytest.approx(se, rel=1e-12)
    assert sh.df == pytest.approx(df, rel=1e-12)
    assert sh.p_value == pytest.approx(2 * student_t.sf(d / se, df), rel=1e-9)
    t = student_t.ppf(0.975, df)
    assert sh.ratio_ci == pytest.approx((math.exp(d - t * se), math.exp(d + t * se)), rel=1e-9)
    assert sh.tau_log is None


def test_pair_basis_with_two_earlier_runs_centres_on_their_mean():
    base = [RunFigure(99.0, 0.05, 8), RunFigure(100.0, 0.05, 8), RunFigure(101.0, 0.05, 8)]
    sh = between.shift(base, RunFigure(200.0, 0.05, 8))
    centre = math.exp(np.mean(np.log([99.0, 100.0, 101.0])))
    assert sh.basis == "pair" and sh.baseline_runs == 3
    assert sh.baseline_ns == pytest.approx(centre)
    w = 0.05**2
    assert sh.se_log == pytest.approx(math.sqrt(3 * w / 9 + w), rel=1e-12)
    assert sh.spread == "rounds"


def test_pair_basis_takes_the_earlier_runs_spread_when_it_is_the_larger():
    """Runs 90, 100, 110 differ more (sd of the logs 0.1) than their rounds (0.05): the
    prediction variance of those runs, s^2 (1 + 1/k) on k - 1 df, is used."""
    ys = np.log([90.0, 100.0, 110.0])
    base = [RunFigure(float(math.exp(y)), 0.05, 8) for y in ys]
    sh = between.shift(base, RunFigure(200.0, 0.05, 8))
    assert sh.basis == "pair" and sh.spread == "runs"
    assert sh.se_log == pytest.approx(math.sqrt(np.var(ys, ddof=1) * (1 + 1 / 3)), rel=1e-12)
    assert sh.df == 2.0


def test_two_earlier_runs_four_times_apart_do_not_make_a_regression_of_16x():
    """The issue's case: earlier p99s at 0.5x and 2x of A, B at 1.6x of A. Each run's rounds
    are calm (sd 0.05), so the pair basis alone called it significant; the runs' own spread
    says a 1.6x is nothing unusual."""
    base = [RunFigure(50.0, 0.05, 8), RunFigure(200.0, 0.05, 8), RunFigure(100.0, 0.05, 8)]
    sh = between.shift(base, RunFigure(160.0, 0.05, 8))
    assert sh.p_value is not None and sh.p_value > 0.3
    calm = [RunFigure(100.0, 0.05, 8)] * 3
    assert between.shift(calm, RunFigure(160.0, 0.05, 8)).p_value < 1e-4  # type: ignore[operator]


def test_an_earlier_run_far_from_the_others_is_left_out_of_the_baseline():
    """A regressed run (10x) saved in the history among calm ones: it is left out, the
    baseline's centre and spread are the calm runs', and a calm B is not a change."""
    calm = [RunFigure(v, 0.05, 8) for v in (100.0, 104.0, 97.0, 101.0)]
    planted = RunFigure(1000.0, 0.05, 8)
    base = [calm[0], planted, *calm[1:]]
    sh = between.shift(base, RunFigure(103.0, 0.05, 8))
    assert sh.left_out == 1 and sh.basis == "history"
    assert sh.baseline_ns == pytest.approx(math.exp(np.mean(np.log([100, 104, 97, 101]))))
    assert between.steady(calm)[1] == 0
    # the baseline report itself is never left out, however far it lies
    assert between.steady([*calm, planted])[1] == 0
    # judged by the others' spread, never below their rounds': 2x away from runs that agree
    # exactly, with rounds of sd 0.05: 3x away is told apart, 2x (p 0.0011) and 1.1x are not
    same = [RunFigure(100.0, 0.05, 8)] * 4
    assert between.steady([RunFigure(110.0, 0.05, 8), *same])[1] == 0
    assert between.steady([RunFigure(200.0, 0.05, 8), *same])[1] == 0
    assert between.steady([RunFigure(300.0, 0.05, 8), *same])[1] == 1


def test_a_noisy_b_is_less_certain_than_one_more_calm_run():
    """History basis: B whose rounds spread 0.4x-4x (sd of logs ~0.8) gets a wider test than
    a calm B with the same figure."""
    base = [RunFigure(v, 0.05, 8) for v in (100.0, 104.0, 97.0, 101.0, 99.0)]
    calm = between.shift(base, RunFigure(150.0, 0.05, 8))
    noisy = between.shift(base, RunFigure(150.0, 0.8, 8))
    assert noisy.se_log > 5 * calm.se_log  # type: ignore[operator]
    assert noisy.spread == "runs and B's rounds" and calm.spread == "runs"
    assert calm.p_value < 0.001 < 0.05 < noisy.p_value  # type: ignore[operator]


def test_detectable_ratio_by_hand():
    """exp((t(1 - alpha) + t(0.8)) se), or the limit plus t(0.8) se where that is larger."""
    se, df = 0.1, 20.0
    want = math.exp((student_t.ppf(0.995, df) + student_t.ppf(0.8, df)) * se)
    assert between.detectable_ratio(se, df, 0.005) == pytest.approx(want, rel=1e-9)
    near_limit = math.exp(math.log(2.0) + student_t.ppf(0.8, df) * se)
    assert between.detectable_ratio(se, df, 0.005, 2.0) == pytest.approx(near_limit, rel=1e-9)
    assert between.detectable_ratio(1e6, 5.0, 0.05) == math.inf
    with pytest.raises(ValueError):
        between.detectable_ratio(se, df, 0.0)


def test_history_basis_by_hand_with_a_prior():
    """Four baseline runs with rounds, and what the table's other statistics say (a prior
    of ratio 2 on 6 df): the runs' variance is the moderated ratio times the mean round
    variance, the candidate one more run (1 + 1/k), df from the ratio's and the rounds'.
    (B's rounds as calm as theirs: nothing of its own is added.)"""
    ys = [100.0, 130.0, 90.0, 120.0]
    base = [RunFigure(y, 0.04, 8) for y in ys]
    prior = between.SpreadPrior(6.0, 2.0)
    sh = between.shift(base, RunFigure(300.0, 0.04, 8), prior=prior)
    ly = np.log(ys)
    vy = float(np.var(ly, ddof=1))
    w, k = 0.04**2, 4
    r_hat = vy / w
    assert between.history_ratio(base) == pytest.approx((r_hat, 3.0))
    r_post = (6.0 * 2.0 + 3.0 * r_hat) / 9.0
    var = r_post * w * (1 + 1 / k)
    df = 1 / (1 / 9.0 + 1 / 28.0)
    d = math.log(300.0) - float(ly.mean())
    assert sh.basis == "history" and sh.baseline_runs == 4
    assert sh.se_log == pytest.approx(math.sqrt(var), rel=1e-12)
    assert sh.df == pytest.approx(df, rel=1e-12)
    assert sh.p_value == pytest.approx(2 * student_t.sf(d / math.sqrt(var), df), rel=1e-9)
    assert sh.tau_log == pytest.approx(math.sqrt(r_post * w - w), rel=1e-12)
    # a prior every statistic shares exactly: the ratio is the prior's, df the rounds'
    same = between.shift(base, RunFigure(300.0, 0.04, 8), prior=between.SpreadPrior(math.inf, 2.0))
    assert same.se_log == pytest.approx(math.sqrt(2.0 * w * 1.25)) and same.df == pytest.approx(
        28.0
    )


def test_history_basis_without_a_prior_is_the_classic_prediction():
    """No other statistic to learn from (prior None): mean +- t(k - 1) sd sqrt(1 + 1/k)."""
    base = [RunFigure(100.0 + 3 * i, 0.10, 8) for i in range(5)]
    sh = between.shift(base, RunFigure(100.0, 0.10, 8))
    vy = float(np.var(np.log([100.0 + 3 * i for i in range(5)]), ddof=1))
    assert sh.se_log == pytest.approx(math.sqrt(vy * 1.2), rel=1e-12) and sh.df == 4.0
    assert sh.tau_log is None


def test_history_without_any_rounds_is_the_classic_prediction_interval():
    """Old reports (no rounds recorded): mean +- t(k-1) sd sqrt(1 + 1/k)."""
    ys = [100.0, 110.0, 95.0, 105.0]
    sh = between.shift([RunFigure(y) for y in ys], RunFigure(150.0))
    ly = np.log(ys)
    se = float(np.std(ly, ddof=1)) * math.sqrt(1 + 1 / 4)
    assert sh.basis == "history" and sh.df == pytest.approx(3.0)
    assert sh.se_log == pytest.approx(se, rel=1e-12)
    d = math.log(150.0) - ly.mean()
    assert sh.p_value == pytest.approx(2 * student_t.sf(d / se, 3), rel=1e-9)


def test_the_candidate_never_enters_its_own_baseline():
    """The baseline's spread is the same whatever the candidate: B cannot widen the yardstick
    it is judged by (the flaw of the earlier method)."""
    base = [RunFigure(100.0 + 5 * i, 0.03, 8) for i in range(4)]
    prior = between.SpreadPrior(10.0, 1.0)
    near = between.shift(base, RunFigure(110.0, 0.03, 8), prior=prior)
    far = between.shift(base, RunFigure(1100.0, 0.03, 8), prior=prior)
    assert near.tau_log == far.tau_log
    assert near.se_log == pytest.approx(far.se_log)
    assert far.p_value < 1e-4 < near.p_value


def test_pair_without_rounds_is_cannot_tell_with_what_would_settle_it():
    sh = between.shift([RunFigure(100.0, None, 1)], RunFigure(300.0, 0.05, 8))
    assert sh.p_value is None and sh.ratio == pytest.approx(3.0)
    assert sh.reason.startswith("the baseline measured fewer than 3 rounds")
    assert "--rounds 3 or more" in sh.reason and "3 earlier runs" in sh.reason
    both = between.shift([RunFigure(100.0)], RunFigure(300.0))
    assert both.reason.startswith("the baseline and B measured fewer than 3 rounds")


def test_one_tick_of_difference_is_never_significant():
    """A 100 ns clock: every sample 100 or 200 ns; A's p50 100 ns, B's 200 ns, rounds all
    agreeing. Without the tick floor w = 0 and p = 0."""
    a = RunFigure(100.0, 0.0, 8, 0.0, tick_ns=100.0)
    b = RunFigure(200.0, 0.0, 8, 0.0, tick_ns=100.0)
    sh = between.shift([a], b)
    assert sh.p_value > 0.05
    assert sh.se_log >= math.sqrt(2) * 0.5


def test_a_figure_of_zero_is_not_tested():
    assert between.shift([RunFigure(0.0, 0.1, 8)], RunFigure(5.0, 0.1, 8)).p_value is None
    assert between.shift([RunFigure(5.0, 0.1, 8)], RunFigure(0.0, 0.1, 8)).reason
    with pytest.raises(ValueError):
        between.shift([], RunFigure(5.0))


# --------------------------------------------------------------------------- simulated runs


def _figures(rng, mu, sd_round, tau, rounds=8, shift_log=0.0):
    """One simulated run's figures for every statistic of a table: each round's log figure
    is mu + the run's effect (sd ``tau``: what differs between runs beyond the rounds) +
    the round's own (sd ``sd_round``); the run's figure is the mean of its rounds (the
    pooled percentile, to first order). Arrays broadcast over the statistics."""
    n = np.broadcast(mu, sd_round, tau, shift_log).shape or (1,)
    u = rng.normal(0.0, 1.0, n) * tau
    y = (mu + u + shift_log)[:, None] + rng.normal(0.0, 1.0, n + (rounds,)) * np.asarray(
        sd_round
    ).reshape(-1, 1)
    return [RunFigure(float(np.exp(row.mean())), float(np.std(row, ddof=1)), rounds) for row in y]


#: The spread of this VM's table (rounds' sd of log p50 and p99 of 14 configurations,
#: bench runs of 2026-12-02): 0.03-0.2.
SD_ROUND = np.linspace(0.03, 0.2, 28)


def _table_alarms(rng, trials, k, tau, shift_log=0.0, level=0.05):
    """Share of simulated comparisons (a table of 28 statistics, k baseline runs) where any
    statistic is significant after Holm's adjustment: the false-alarm rate per pair, or
    with ``shift_log`` (an array: the planted change per statistic) the detection rate."""
    from fsyncbench.report.compare import holm

    hits = 0
    for _ in range(trials):
        base = [_figures(rng, 5.0, SD_ROUND, tau) for _ in range(k)]
        new = _figures(rng, 5.0, SD_ROUND, tau, shift_log=shift_log)
        cols = [[run[s] for run in base] for s in range(len(SD_ROUND))]
        prior = between.fit_prior([r for c in cols if (r := between.history_ratio(c)) is not None])
        ps = [between.shift(c, new[s], prior=prior).p_value for s, c in enumerate(cols)]
        hits += min(holm(ps)) < level
    return hits / trials


@pytest.mark.slow
@pytest.mark.parametrize("tau_over_round", [0.0, 0.5, 1.0, 2.0, 4.0])
def test_history_calibrated_whatever_the_spread_between_runs(tau_over_round):
    """With 4 baseline runs, a table of unchanged figures shows any 'significant' statistic
    in at most ~5 % of comparisons (400 trials: a binomial bound of 8.5 %), whether runs
    differ as their rounds do or four times more: the table's ratio is learnt, not
    assumed."""
    rng = np.random.default_rng(11)
    rate = _table_alarms(rng, 400, 4, tau_over_round * SD_ROUND)
    assert rate <= 0.085, rate


@pytest.mark.slow
def test_history_calibrated_when_statistics_differ_in_their_spread_between_runs():
    """Runs differing beyond their rounds by 0 to 3 times, statistic by statistic: the
    shared ratio's degrees of freedom shrink, and the rate stays near 5 %."""
    rng = np.random.default_rng(12)
    tau = np.linspace(0.0, 3.0, 28)[::-1] * SD_ROUND
    assert _table_alarms(rng, 400, 4, tau) <= 0.085


@pytest.mark.slow
@pytest.mark.parametrize("tau_over_round", [0.0, 0.5, 1.0])
def test_pair_calibrated_while_runs_differ_no_more_than_rounds(tau_over_round):
    """Without history the pair rests on each run being as uncertain as one of its rounds:
    calibrated while runs differ by no more than that."""
    rng = np.random.default_rng(13)
    assert _table_alarms(rng, 400, 1, tau_over_round * SD_ROUND) <= 0.085


@pytest.mark.slow
def test_pair_cries_wolf_when_runs_differ_far_more_than_rounds():
    """The limit the output names: runs 3x more apart than their rounds fool the pair test,
    not the history test (why 3 earlier runs are asked for)."""
    rng = np.random.default_rng(14)
    assert _table_alarms(rng, 200, 1, 3.0 * SD_ROUND) > 0.3
    assert _table_alarms(rng, 200, 4, 3.0 * SD_ROUND) <= 0.085


#: A planted fsync slowdown reaches the statistics that sync (here 12 of 28), each by the
#: ratio; the rest are unchanged.
SYNCING = np.array([1.0] * 12 + [0.0] * 16)


@pytest.mark.slow
@pytest.mark.slow
@pytest.mark.parametrize(
    ("k", "ratio", "at_least"),
    [(4, 10.0, 1.0), (4, 2.0, 0.95), (4, 1.5, 0.80), (1, 10.0, 1.0), (1, 2.0, 0.80)],
)
def test_planted_slowdowns_are_caught(k, ratio, at_least):
    """Runs differing as this VM's (beyond the rounds: half their spread): a planted
    slowdown of the syncing statistics is caught as often as the issue asks, with 3 earlier
    runs and without."""
    rng = np.random.default_rng(15)
    rate = _table_alarms(rng, 200, k, 0.5 * SD_ROUND, math.log(ratio) * SYNCING)
    assert rate >= at_least, rate


@pytest.mark.slow
def test_a_smaller_shift_is_caught_less_often_than_a_larger_one():
    """Power rises with the size of the change (a rule that cannot fire would fail this)."""
    rng = np.random.default_rng(16)
    rates = [
        _table_alarms(rng, 100, 4, 0.5 * SD_ROUND, math.log(r) * SYNCING) for r in (1.0, 1.05, 1.5)
    ]
    assert rates[0] < rates[1] < rates[2]


def test_fit_prior_by_hand():
    """Equal ratios: no spread beyond the chi-square's own, so one shared ratio (df inf)."""
    same = between.fit_prior([(1.0, 3.0)] * 4)
    assert same.df == math.inf
    # exp(mean(log r - digamma(d/2) + log(d/2))) with every r = 1 and d = 3
    from scipy.special import digamma

    assert same.ratio == pytest.approx(math.exp(-float(digamma(1.5)) + math.log(1.5)))
    assert between.fit_prior([(1.0, 3.0)] * 3) is None
    spread = between.fit_prior([(0.1, 3.0), (10.0, 3.0), (0.2, 3.0), (20.0, 3.0)])
    assert spread.df < 10


def test_pair_basis_with_two_earlier_runs_moderates_their_spread_with_the_prior():
    """Three runs (A and 2 earlier) learn their spread on 2 degrees of freedom alone: with a
    prior (what the comparison's other statistics show: runs differ 4x their round variance,
    shared exactly), the prediction variance is 4 w (1 + 1/k) on the rounds' df, not the
    runs' own s^2 on 2 df, which made detectable slowdowns of thousands."""
    base = [RunFigure(v, 0.05, 8) for v in (99.0, 100.0, 101.0)]
    prior = between.SpreadPrior(math.inf, 4.0)
    sh = between.shift(base, RunFigure(150.0, 0.05, 8), prior=prior)
    w = 0.05**2
    assert sh.spread == "runs"
    assert sh.se_log == pytest.approx(math.sqrt(4.0 * w * (1 + 1 / 3)), rel=1e-12)
    assert sh.df == pytest.approx(21.0)
    assert between.detectable_ratio(sh.se_log, sh.df, 0.05 / 26) < 1.7  # type: ignore[arg-type]
