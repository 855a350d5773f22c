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
  https://bencher.dev/docs/explanation/thresholds/): the random-effects prediction of a new
  run (Higgins, Thompson & Spiegelhalter 2009, "A re-evaluation of random-effects
  meta-analysis", J. R. Statist. Soc. A 172:137-159, sec. 3.4): centre the mean of the
  baseline runs' log figures, variance tau^2 + w_new + var(mean), where w is a run's own
  spread (below) and tau^2 the spread between runs beyond it (the method-of-moments
  estimate, never below 0).
- **pair**: fewer earlier runs. The difference of the logs over both runs' own spread,
  Welch's t (Welch 1947, Biometrika 34:28-35). The spread between runs beyond that of the
  rounds cannot be seen; the output says so and names what settles it (3 earlier runs).

A run's own spread w is the variance of the log of its rounds' figures (at least
:data:`fsyncbench.measure.stats.MIN_ROUNDS` rounds; degrees of freedom rounds - 1), never
below the variance of its jackknife estimate nor below one clock tick
(:func:`clock_tick_ns`): a figure is never more precise than the clock that timed it, so
one tick of difference is never significant.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fsyncbench.measure import stats

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
    None with fewer than :data:`fsyncbench.measure.stats.MIN_ROUNDS` rounds or none
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
        :data:`fsyncbench.measure.stats.MIN_ROUNDS` rounds, a figure of 0)."""
        if self.round_sd_log is None or self.rounds < stats.MIN_ROUNDS:
            return None
        if not self.estimate_ns > 0:
            return None
        floor = max(self.tick_ns / self.estimate_ns, self.own_se_log or 0.0)
        return max(self.round_sd_log, floor) ** 2, float(self.rounds - 1)


def round_sd_log(round_values_ns: Sequence[float]) -> float | None:
    """Sample standard deviation (ddof 1) of the logs of the rounds' figures; None with
    fewer than :data:`fsyncbench.measure.stats.MIN_ROUNDS` rounds or a figure of 0."""
    if len(round_values_ns) < stats.MIN_ROUNDS or any(not v > 0 for v in round_values_ns):
        return None
    return float(np.std(np.log(np.asarray(round_values_ns, dtype=np.float64)), ddof=1))


def clock_tick_ns(samples_ns: Sequence[int] | np.ndarray) -> int:
    """The clock's tick as the samples show it: the greatest common divisor of every
    sample (ns), at least 1. A clock that counts in 100 ns steps (Windows'
    QueryPerformanceCounter at 10 MHz, https://learn.microsoft.com/en-us/windows/win32/
    sysinfo/acquiring-high-resolution-time-stamps) gives 100; a nanosecond clock almost
    always 1. 1 for no samples."""
    x = np.asarray(samples_ns, dtype=np.int64)
    if x.size == 0:
        return 1
    g = int(np.gcd.reduce(np.abs(x)))
    return max(1, g)


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


def shift(baseline: Sequence[RunFigure], candidate: RunFigure, confidence: float = 0.95) -> Shift:
    """Test ``candidate`` against the ``baseline`` runs (oldest first, the baseline report
    last; at least one), module text. Raises ValueError for an empty baseline."""
    if not baseline:
        raise ValueError("a baseline of at least one run is required")
    runs = [b for b in baseline if b.estimate_ns > 0]
    k = len(runs)
    basis = BASIS_HISTORY if k >= MIN_BASELINE_RUNS else BASIS_PAIR
    ys = np.log([b.estimate_ns for b in runs]) if runs else np.empty(0)
    centre = float(np.exp(ys.mean())) if k else 0.0
    head = Shift(basis, len(baseline), centre, candidate.estimate_ns, None)
    if not k or not candidate.estimate_ns > 0:
        return dataclasses.replace(head, reason="a figure of zero (the clock could not time it)")
    ratio = candidate.estimate_ns / centre
    y_new = math.log(candidate.estimate_ns)
    own = [b.spread() for b in runs]
    mine = candidate.spread()
    known = [s for s in own if s is not None]
    tau_log = None
    if basis == BASIS_HISTORY:
        vy = float(np.var(ys, ddof=1))
        mean_w = float(np.mean([w for w, _ in known])) if known else 0.0
        tau2 = max(0.0, vy - mean_w)
        tau_log = math.sqrt(tau2)
        c = 1.0 + 1.0 / k
        if tau2 > 0 or not known:
            # tau^2 (1 + 1/k) + mean(w)/k + w_new, tau^2 = var(y) - mean(w); a candidate
            # without a spread of its own is taken as one more run like the others
            w_new, d_new = mine if mine is not None else (mean_w, float(k - 1))
            var = c * vy - mean_w + w_new
            terms = [(c * vy) ** 2 / (k - 1), w_new**2 / d_new]
            terms += [(w / len(known)) ** 2 / d for w, d in known]
        else:  # the runs agree within their own spread (and each has one: known)
            w_new, d_new = mine if mine is not None else (mean_w, known[0][1])
            var = mean_w / k + w_new
            terms = [w_new**2 / d_new] + [(w / (k * len(known))) ** 2 / d for w, d in known]
    else:
        missing = ["the baseline"] if len(known) < k else []
        missing += ["B"] if mine is None else []
        if missing:
            return dataclasses.replace(
                head,
                ratio=ratio,
                reason=f"{' and '.join(missing)} measured fewer than {stats.MIN_ROUNDS} rounds, "
                f"so its spread from run to run is unknown: measure with --rounds "
                f"{stats.MIN_ROUNDS} or more (the default), or keep {MIN_BASELINE_RUNS - 1} "
                "earlier runs in the baseline's report directory",
            )
        assert mine is not None
        w_new, d_new = mine
        var = sum(w for w, _ in known) / (k * k) + w_new
        terms = [w_new**2 / d_new] + [(w / (k * k)) ** 2 / d for w, d in known]
    # never more precise than one clock tick on either side
    tick = max(
        [candidate.tick_ns / candidate.estimate_ns] + [b.tick_ns / b.estimate_ns for b in runs]
    )
    var = max(var, 2.0 * tick * tick)
    se = math.sqrt(var)
    denominator = sum(terms)
    df = var * var / denominator if denominator > 0 else math.inf
    d = y_new - float(ys.mean())
    t = stats.t_quantile(df, 0.5 + confidence / 2.0)
    return dataclasses.replace(
        head,
        ratio=ratio,
        ratio_ci=(math.exp(d - t * se), math.exp(d + t * se)),
        se_log=se,
        df=df,
        p_value=stats.t_two_sided_p(d / se, df),
        tau_log=tau_log,
    )
