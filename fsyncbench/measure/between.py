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


@dataclass(frozen=True)
class SpreadPrior:
    """How much more the runs of a table differ than their rounds, learnt from all its
    statistics at once (:func:`fit_prior`): the ratio var(runs' figures) / mean(round
    variance) is ``ratio`` for a typical statistic, with ``df`` degrees of freedom of
    evidence (inf: every statistic shares it)."""

    df: float
    ratio: float


def history_ratio(baseline: Sequence[RunFigure]) -> tuple[float, float] | None:
    """(the baseline runs' variance over their mean round variance, its degrees of freedom
    k - 1) for a baseline of at least :data:`MIN_BASELINE_RUNS` runs that all recorded
    their rounds; None otherwise."""
    runs = [b for b in baseline if b.estimate_ns > 0]
    spreads = [b.spread() for b in runs]
    if len(runs) < MIN_BASELINE_RUNS or any(sp is None for sp in spreads):
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
    runs = [b for b in baseline if b.estimate_ns > 0]
    k = len(runs)
    basis = BASIS_HISTORY if k >= MIN_BASELINE_RUNS else BASIS_PAIR
    ys = np.log([b.estimate_ns for b in runs]) if runs else np.empty(0)
    # one run: its own figure exactly (exp(log(x)) is not always x in floating point)
    centre = runs[0].estimate_ns if k == 1 else float(np.exp(ys.mean())) if k else 0.0
    head = Shift(basis, len(baseline), centre, candidate.estimate_ns, None)
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
    else:
        missing = ["the baseline"] if len(known) < k else []
        missing += ["B"] if mine is None else []
        if missing:
            return dataclasses.replace(
                head,
                ratio=ratio,
                reason=f"{' and '.join(missing)} measured fewer than {intervals.MIN_ROUNDS} rounds, "
                f"so its spread from run to run is unknown: measure with --rounds "
                f"{intervals.MIN_ROUNDS} or more (the default), or keep {MIN_BASELINE_RUNS - 1} "
                "earlier runs in the baseline's report directory",
            )
        assert mine is not None
        w_new, d_new = mine
        var = sum(w for w, _ in known) / (k * k) + w_new
        terms = [w_new**2 / d_new] + [(w / (k * k)) ** 2 / dd for w, dd in known]
        df = var * var / sum(terms) if sum(terms) > 0 else math.inf
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
    )
