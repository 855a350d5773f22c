"""Is a new run different from the runs before it? The test behind ``compare``'s
"significant" column and its regression gate.

A run's figure (a p50 or p99) moves between runs of an unchanged machine by more than the
run's own samples show: slices and rounds seconds apart share the machine's state at that
time, and a run a minute later meets another state (a shared host busier, a CPU clock
lower, files placed elsewhere). On this project's 2-core Firecracker VM, runs 45 s apart
differed by a standard deviation of 5-13 % at p50 and 8-37 % at p99, 2-4 times what one
run's own jackknife interval says (``scripts/bench_ab.py``, README "Regression gate"), while
the spread between the rounds (worker processes) of one run was about as large as the
spread between runs. So a run's figure is judged as uncertain as one of its rounds, not
as the mean of them, and where earlier runs of the same measurement exist their own spread
is measured and used.

Two bases, always named in the output:

- **history**: the baseline report and at least :data:`MIN_BASELINE_RUNS` - 1 earlier runs
  of the same measurement it recorded (``Result.earlier``). The candidate's figure is
  judged against the distribution of those runs, a prediction built without the candidate
  (as Bencher's thresholds judge a new metric against a window of earlier ones,
  https://bencher.dev/docs/explanation/thresholds/): centre the mean of the baseline runs'
  log figures, variance sigma^2 (1 + 1/k) for one more run like them. Four runs alone know
  sigma^2 on 3 degrees of freedom, too few for a test over a whole table; so sigma^2 is
  read as a ratio to the runs' round variance w, and that ratio is learnt from every
  statistic of the comparison at once and moderated statistic by statistic (:func:`fit_prior`,
  the empirical Bayes of Smyth 2004, used by limma for many tests on few replicates): where
  runs differ far more than their rounds, the ratio says so; where statistics disagree,
  its degrees of freedom shrink. Without rounds or other statistics it is the classic
  prediction interval, mean +- t(k - 1) sd sqrt(1 + 1/k).
- **pair**: fewer earlier runs. The difference of the logs over both runs' own spread w,
  Welch's t (Welch 1947, Biometrika 34:28-35). This assumes runs differ no more than one
  of their rounds does, which one run cannot check; the output says so and names what
  settles it (3 earlier runs). ``tests/test_between.py`` simulates where it holds and where
  it fails.

Three more pieces of evidence enter either basis:

- **A run apart in the history.** A report directory holds whatever ran: a regressed run
  saved beside the clean ones would widen the baseline's spread and move its centre.
  Before the test, each earlier run is predicted from the others as a new run would be,
  and one the prediction rejects at 1 in 1,000 is left out and counted
  (``Shift.left_out``), the baseline report itself never (:func:`steady`). Airspeed
  velocity likewise judges a new result against the steady level of its history, not the
  mean of everything (https://asv.readthedocs.io/en/stable/dev.html, "Regression
  detection"). A strict level, because a run wrongly left out narrows the baseline (false
  alarms) while a regressed run kept only widens it (more "cannot tell"): one run apart by
  10x from calm runs is left out, one apart by 2x is not.
- **Fewer than 3 earlier runs** are still evidence: where A and 1 or 2 earlier runs
  differed more than their rounds, the pair basis uses the prediction variance of those
  runs (s^2 (1 + 1/k), on k - 1 degrees of freedom) when it is the larger.
- **B's own noise.** The history basis predicts B as one more run like the baseline's; a B
  whose rounds spread further than theirs did is less certain than that, and the excess of
  its round variance over theirs is added (degrees of freedom by Welch-Satterthwaite).

The test's power is stated with it (:func:`detectable_ratio`): the smallest slowdown that
would be caught 4 times in 5 at the level the test is held to.

A run's own spread w is the variance of the log of its rounds' figures (at least
:data:`fsyncbench.measure.intervals.MIN_ROUNDS` rounds; degrees of freedom rounds - 1), never
below the variance of its jackknife estimate nor below one clock tick
(:func:`fsyncbench.measure.intervals.clock_tick_ns`): a figure is never more precise than the clock that timed it, so
one tick of difference is never significant.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fsyncbench.measure import intervals, special

#: Fewest baseline runs (the baseline report and its earlier runs) from which the spread
#: between runs is measured and the "history" basis is used: with 4 runs its estimate rests
#: on 3 degrees of freedom. Fewer use the "pair" basis.
MIN_BASELINE_RUNS = 4

BASIS_HISTORY = "history"
BASIS_PAIR = "pair"


@dataclass(frozen=True)
class RunFigure:
    """One run's figure of one percentile as a test between runs needs it: the estimate
    (ns), the standard deviation of the log of each round's figure (``round_sd_log``;
    None with fewer than :data:`fsyncbench.measure.intervals.MIN_ROUNDS` rounds or none
    recorded), the number of ``rounds``, the run's own jackknife SE of the log
    (``own_se_log``, None without one) and the clock's tick (ns) the samples were timed
    with."""

    estimate_ns: float
    round_sd_log: float | None = None
    rounds: int = 0
    own_se_log: float | None = None
    tick_ns: float = 1.0

    def spread(self) -> tuple[float, float] | None:
        """(w, its degrees of freedom): the variance of this run's log figure as one of
        several runs (module text); None where it cannot be estimated (fewer than
        :data:`fsyncbench.measure.intervals.MIN_ROUNDS` rounds, a figure of 0)."""
        if self.round_sd_log is None or self.rounds < intervals.MIN_ROUNDS:
            return None
        if not self.estimate_ns > 0:
            return None
        floor = max(self.tick_ns / self.estimate_ns, self.own_se_log or 0.0)
        return max(self.round_sd_log, floor) ** 2, float(self.rounds - 1)


def _exp(x: float) -> float:
    """exp(x), inf where it overflows (a ratio beyond any float: a corrupt or absurd report)."""
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def round_sd_log(round_values_ns: Sequence[float]) -> float | None:
    """Sample standard deviation (ddof 1) of the logs of the rounds' figures; None with
    fewer than :data:`fsyncbench.measure.intervals.MIN_ROUNDS` rounds or a figure of 0."""
    if len(round_values_ns) < intervals.MIN_ROUNDS or any(not v > 0 for v in round_values_ns):
        return None
    return float(np.std(np.log(np.asarray(round_values_ns, dtype=np.float64)), ddof=1))


@dataclass(frozen=True)
class Shift:
    """The candidate run's figure against the baseline runs' (:func:`shift`).

    ``basis`` is "history" or "pair" (module text); ``baseline_runs`` how many runs the
    baseline holds; ``baseline_ns`` their geometric mean (the baseline report's own figure
    when it is one run); ``ratio`` candidate / baseline and ``ratio_ci`` its interval at
    the confidence asked; ``se_log`` and ``df`` the test's standard error of the log ratio
    and degrees of freedom; ``p_value`` the two-sided p of "no change"; ``tau_log`` the
    spread between runs beyond their own (history basis only). Without a test
    (``p_value`` None) ``reason`` says why and what would settle it."""

    basis: str
    baseline_runs: int
    baseline_ns: float
    candidate_ns: float
    ratio: float | None
    ratio_ci: tuple[float, float] | None = None
    se_log: float | None = None
    df: float | None = None
    p_value: float | None = None
    tau_log: float | None = None
    reason: str | None = None
    left_out: int = 0
    spread: str = "rounds"


@dataclass(frozen=True)
class SpreadPrior:
    """How much more the runs of a table differ than their rounds, learnt from all its
    statistics at once (:func:`fit_prior`): the ratio var(runs' figures) / mean(round
    variance) is ``ratio`` for a typical statistic, with ``df`` degrees of freedom of
    evidence (inf: every statistic shares it)."""

    df: float
    ratio: float


#: The level at which an earlier run is told apart from the others and left out of the
#: baseline (:func:`steady`): two-sided, so an unchanged machine loses a run this way in
#: about 1 of 1,000 runs. A project choice: strict, because leaving out a run that belonged
#: narrows the baseline and makes false alarms, while keeping a regressed one only widens it.
OUTLIER_ALPHA = 0.001


def outlying(baseline: Sequence[RunFigure]) -> frozenset[int]:
    """The indices into ``baseline`` of the earlier runs a prediction from all the other
    runs (those with a figure above 0) rejects at :data:`OUTLIER_ALPHA`: each judged as a
    new run would be against the others, the mean of their logs, variance s^2 (1 + 1/m) of
    their m runs on m - 1 degrees of freedom, s^2 never below their mean round variance.
    The last run (the baseline report, or the run being measured) is never one; with fewer
    than :data:`MIN_BASELINE_RUNS` runs none is (the others are too few to predict from)."""
    idx = [i for i, b in enumerate(baseline) if b.estimate_ns > 0]
    if len(idx) < MIN_BASELINE_RUNS:
        return frozenset()
    runs = [baseline[i] for i in idx]
    ys = np.log([b.estimate_ns for b in runs])
    out = set()
    for j in range(len(runs) - 1):
        others = np.delete(ys, j)
        m = others.size
        s2 = float(np.var(others, ddof=1))
        ws = [sp[0] for i, b in enumerate(runs) if i != j and (sp := b.spread()) is not None]
        if ws:
            s2 = max(s2, float(np.mean(ws)))
        if s2 > 0:
            t = (float(ys[j]) - float(others.mean())) / math.sqrt(s2 * (1.0 + 1.0 / m))
            if intervals.t_two_sided_p(t, float(m - 1)) < OUTLIER_ALPHA:
                out.add(idx[j])
    return frozenset(out)


def steady(baseline: Sequence[RunFigure]) -> tuple[list[RunFigure], int]:
    """(the runs of ``baseline`` with a figure above 0, less those :func:`outlying` names;
    how many were left out)."""
    gone = outlying(baseline)
    kept = [b for i, b in enumerate(baseline) if b.estimate_ns > 0 and i not in gone]
    return kept, len(gone)


def history_ratio(baseline: Sequence[RunFigure]) -> tuple[float, float] | None:
    """(the baseline runs' variance over their mean round variance, its degrees of freedom
    k - 1) for a baseline of at least 2 steady runs (:func:`steady`) that all recorded
    their rounds; None otherwise. (A prior learns from every such statistic; the history
    basis needs :data:`MIN_BASELINE_RUNS`.)"""
    runs, _ = steady(baseline)
    spreads = [b.spread() for b in runs]
    if len(runs) < 2 or any(sp is None for sp in spreads):
        return None
    mean_w = float(np.mean([sp[0] for sp in spreads if sp is not None]))
    vy = float(np.var(np.log([b.estimate_ns for b in runs]), ddof=1))
    if not mean_w > 0 or not vy > 0:
        return None
    return vy / mean_w, float(len(runs) - 1)


#: Fewest statistics :func:`fit_prior` learns a shared ratio from.
MIN_PRIOR_STATISTICS = 4


def fit_prior(ratios: Sequence[tuple[float, float]]) -> SpreadPrior | None:
    """The distribution of the statistics' run-to-round variance ratios (each an estimate on
    its degrees of freedom, :func:`history_ratio`), fitted as limma fits sample variances:
    each true ratio drawn from a scaled inverse chi-square with ``df`` degrees of freedom
    around ``ratio``, their estimates scaled chi-squares around them; moments of the log
    (Smyth 2004, "Linear models and empirical Bayes methods for assessing differential
    expression in microarray experiments", Statistical Applications in Genetics and
    Molecular Biology 3(1), art. 3, sec. 6.2). None from fewer than
    :data:`MIN_PRIOR_STATISTICS` statistics."""
    usable = [(r, d) for r, d in ratios if r > 0 and d > 0]
    if len(usable) < MIN_PRIOR_STATISTICS:
        return None
    r = np.array([u[0] for u in usable])
    d1 = np.array([u[1] for u in usable])
    half = d1 / 2.0
    e = np.log(r) - np.array([special.digamma(h) for h in half]) + np.log(half)
    emean = float(e.mean())
    evar = float(np.var(e, ddof=1)) - float(np.mean([special.polygamma(1, h) for h in half]))
    if evar <= 0:
        return SpreadPrior(math.inf, math.exp(emean))
    d0 = 2.0 * _trigamma_inverse(evar)
    return SpreadPrior(d0, math.exp(emean + special.digamma(d0 / 2.0) - math.log(d0 / 2.0)))


def _trigamma_inverse(x: float) -> float:
    """y with trigamma(y) = x (Newton's method as limma's trigammaInverse)."""
    if x > 1e7:
        return 1.0 / math.sqrt(x)
    if x < 1e-6:
        return 1.0 / x
    y = 0.5 + 1.0 / x
    for _ in range(50):
        tri = special.polygamma(1, y)
        step = tri * (1.0 - tri / x) / special.polygamma(2, y)
        y += step
        if -step / y < 1e-8:
            break
    return y


def shift(
    baseline: Sequence[RunFigure],
    candidate: RunFigure,
    confidence: float = 0.95,
    prior: SpreadPrior | None = None,
) -> Shift:
    """Test ``candidate`` against the ``baseline`` runs (oldest first, the baseline report
    last; at least one), module text. ``prior``: what the other statistics of the same
    comparison show of how much runs differ beyond their rounds (:func:`fit_prior`).
    Raises ValueError for an empty baseline."""
    if not baseline:
        raise ValueError("a baseline of at least one run is required")
    runs, left_out = steady(baseline)
    k = len(runs)
    basis = BASIS_HISTORY if k >= MIN_BASELINE_RUNS else BASIS_PAIR
    ys = np.log([b.estimate_ns for b in runs]) if runs else np.empty(0)
    # one run: its own figure exactly (exp(log(x)) is not always x in floating point)
    centre = runs[0].estimate_ns if k == 1 else float(np.exp(ys.mean())) if k else 0.0
    head = Shift(basis, len(baseline), centre, candidate.estimate_ns, None, left_out=left_out)
    if not k or not candidate.estimate_ns > 0:
        return dataclasses.replace(head, reason="a figure of zero (the clock could not time it)")
    ratio = candidate.estimate_ns / centre
    d = math.log(candidate.estimate_ns) - (math.log(centre) if k == 1 else float(ys.mean()))
    own = [b.spread() for b in runs]
    mine = candidate.spread()
    known = [sp for sp in own if sp is not None]
    # never more precise than one clock tick on either side
    tick = max(
        [candidate.tick_ns / candidate.estimate_ns] + [b.tick_ns / b.estimate_ns for b in runs]
    )
    tau_log = None
    spread = "runs"
    if basis == BASIS_HISTORY:
        vy = float(np.var(ys, ddof=1))
        observed = history_ratio(runs)
        if observed is not None and prior is not None:
            # the runs' variance: this statistic's ratio moderated towards the table's,
            # times its mean round variance (Smyth 2004's posterior variance)
            mean_w = float(np.mean([w for w, _ in known]))
            r_hat, d1 = observed
            df_ratio = math.inf if math.isinf(prior.df) else prior.df + d1
            r_post = (
                prior.ratio
                if math.isinf(prior.df)
                else (prior.df * prior.ratio + d1 * r_hat) / (prior.df + d1)
            )
            # the candidate one more run like them; the variance a product of the ratio
            # and the baseline's round variance, each known on its degrees of freedom
            sigma2 = r_post * mean_w
            var = sigma2 * (1.0 + 1.0 / k)
            df = 1.0 / (1.0 / df_ratio + 1.0 / sum(dd for _, dd in known))
            tau_log = math.sqrt(max(0.0, sigma2 - mean_w))
        else:
            # the classic prediction of one more run: mean +- t(k - 1) sd sqrt(1 + 1/k)
            var, df = (1.0 + 1.0 / k) * vy, float(k - 1)
            mean_w = float(np.mean([w for w, _ in known])) if len(known) == k else math.inf
        if mine is not None and mine[0] > mean_w:
            # B's rounds spread further than the baseline's: it is less certain than one
            # more run like them by the excess (Welch-Satterthwaite degrees of freedom)
            extra, d_new = mine[0] - mean_w, mine[1]
            df = (var + extra) ** 2 / (var * var / df + extra * extra / d_new)
            var += extra
            spread = "runs and B's rounds"
    else:
        missing = ["the baseline"] if len(known) < k else []
        missing += ["B"] if mine is None else []
        if missing and k < 2:
            return dataclasses.replace(
                head,
                ratio=ratio,
                reason=f"{' and '.join(missing)} measured fewer than {intervals.MIN_ROUNDS} rounds, "
                f"so its spread from run to run is unknown: measure with --rounds "
                f"{intervals.MIN_ROUNDS} or more (the default), or keep {MIN_BASELINE_RUNS - 1} "
                "earlier runs in the baseline's report directory",
            )
        var, df = 0.0, math.inf
        if not missing:
            assert mine is not None
            w_new, d_new = mine
            var = sum(w for w, _ in known) / (k * k) + w_new
            terms = [w_new**2 / d_new] + [(w / (k * k)) ** 2 / dd for w, dd in known]
            df = var * var / sum(terms) if sum(terms) > 0 else math.inf
            spread = "rounds"
        if k >= 2:
            # A and its earlier runs differed by more than their rounds: the larger. Their
            # variance moderated towards what the comparison's other statistics show (as
            # the history basis does) where a prior and every run's rounds are known: on
            # k - 1 degrees of freedom alone, 2 or 3 runs would make any test powerless
            observed = history_ratio(runs)
            if observed is not None and prior is not None and len(known) == k:
                mean_w = float(np.mean([w for w, _ in known]))
                r_hat, d1 = observed
                r_post = (
                    prior.ratio
                    if math.isinf(prior.df)
                    else (prior.df * prior.ratio + d1 * r_hat) / (prior.df + d1)
                )
                predicted = r_post * mean_w * (1.0 + 1.0 / k)
                df_ratio = math.inf if math.isinf(prior.df) else prior.df + d1
                df_pred = 1.0 / (1.0 / df_ratio + 1.0 / sum(dd for _, dd in known))
            else:
                predicted, df_pred = (1.0 + 1.0 / k) * float(np.var(ys, ddof=1)), float(k - 1)
            if predicted > var:
                var, df, spread = predicted, df_pred, "runs"
    var = max(var, 2.0 * tick * tick)
    se = math.sqrt(var)
    t = intervals.t_quantile(df, 0.5 + confidence / 2.0)
    return dataclasses.replace(
        head,
        ratio=ratio,
        ratio_ci=(_exp(d - t * se), _exp(d + t * se)),
        se_log=se,
        df=df,
        p_value=intervals.t_two_sided_p(d / se, df),
        tau_log=tau_log,
        spread=spread,
    )


#: The power a stated detectable slowdown is caught with: 4 times in 5, the convention of
#: power analysis (Cohen 1988, "Statistical Power Analysis for the Behavioral Sciences",
#: 2nd ed., sec. 2.4).
POWER = 0.8


def detectable_ratio(
    se_log: float, df: float, alpha_one_sided: float, limit_ratio: float = 1.0
) -> float:
    """The smallest true slowdown (candidate / baseline, > 1) a one-sided test of standard
    error ``se_log`` (of the log ratio) on ``df`` degrees of freedom at level
    ``alpha_one_sided`` catches with probability :data:`POWER`, when a catch also needs the
    estimate above ``limit_ratio``: exp of the larger of (t(1 - alpha) + t(power)) se and
    log(limit) + t(power) se (the normal-approximation power of a t test, Cohen 1988).
    inf where it overflows. Raises ValueError for a level outside (0, 1)."""
    if not 0.0 < alpha_one_sided < 1.0:
        raise ValueError(f"a level in (0, 1) is required, got {alpha_one_sided}")
    z_power = intervals.t_quantile(df, POWER)
    needed = max(
        (intervals.t_quantile(df, 1.0 - alpha_one_sided) + z_power) * se_log,
        math.log(limit_ratio) + z_power * se_log,
    )
    return _exp(needed)
