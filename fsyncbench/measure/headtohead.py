"""Two configurations of one run head to head: how many times slower one is than the other
at p50 and at p99, with a 95 % interval from the rounds.

Every round of ``run`` measures every configuration in one worker process, their slices
taking turns (:mod:`fsyncbench.measure.runner`), so round k of A and round k of B saw the
same machine at the same time: a paired design. The ratio is the geometric mean of the
rounds' ratios A_k / B_k (it can differ a little from the ratio of the whole run's
percentiles), its interval Student's t over their logs: the rounds' own spread, as
hyperfine's "X ran 3.5 +- 0.2 times faster than Y" is the spread of its runs (centring on
the whole run's ratio instead left 1 out of 14 % of simulated A/A intervals, not 5 %).
Between two reports there is no pairing: the rounds of each are independent samples, and
the interval is Welch's on their log figures (Welch 1947, Biometrika 34:28-35).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fsyncbench.measure.intervals import MIN_ROUNDS, t_quantile
from fsyncbench.model import Result


@dataclass(frozen=True)
class RatioInterval:
    """``a_name``'s percentile over ``b_name``'s (``ratio`` > 1: A is slower), with its
    ``confidence`` interval ``low``..``high`` (None, with ``reason``, when the rounds cannot
    support one), on ``rounds`` paired rounds (or the smaller of the two reports' round
    counts) and ``df`` degrees of freedom; ``paired`` says which test made it."""

    a_name: str
    b_name: str
    percentile: float
    ratio: float
    low: float | None
    high: float | None
    rounds: int
    df: float
    paired: bool
    confidence: float = 0.95
    reason: str = ""

    @property
    def bounds(self) -> tuple[float, float] | None:
        """(low, high), None without an interval."""
        return None if self.low is None or self.high is None else (self.low, self.high)

    @property
    def separated(self) -> bool:
        """The interval lies wholly on one side of 1: one is measurably faster."""
        b = self.bounds
        return b is not None and (b[0] > 1.0 or b[1] < 1.0)


def _figures(r: Result, percentile: float) -> tuple[float, tuple[float, ...]]:
    s = r.summary
    if percentile == 50.0:
        return s.p50_ns, s.round_p50_ns
    if percentile == 99.0:
        return s.p99_ns, s.round_p99_ns
    raise ValueError(f"percentile must be 50 or 99, got {percentile}")


def paired_ratio(
    a: Result, b: Result, percentile: float, confidence: float = 0.95
) -> RatioInterval:
    """A's ``percentile`` (50 or 99) over B's, both from one run: the geometric mean of the
    rounds' ratios with the paired interval
    of the module docstring. No interval below :data:`fsyncbench.measure.intervals.MIN_ROUNDS`
    rounds, with rounds of unequal number, or with a round at 0 ns. Raises ValueError for
    another percentile."""
    est_a, rounds_a = _figures(a, percentile)
    est_b, rounds_b = _figures(b, percentile)
    ratio = est_a / est_b if est_b > 0 else math.inf
    k = min(len(rounds_a), len(rounds_b))

    def none(reason: str) -> RatioInterval:
        return RatioInterval(
            a.name, b.name, percentile, ratio, None, None, k, 0.0, True, confidence, reason
        )

    if len(rounds_a) != len(rounds_b):
        return none("the two rows have different rounds")
    if k < MIN_ROUNDS:
        return none(f"{k} round{'s' if k != 1 else ''}: at least {MIN_ROUNDS} are needed")
    x, y = np.asarray(rounds_a, dtype=float), np.asarray(rounds_b, dtype=float)
    if not (np.all(x > 0) and np.all(y > 0) and est_a > 0 and est_b > 0):
        return none("a round measured 0 ns")
    d = np.log(x) - np.log(y)
    se = float(np.std(d, ddof=1)) / math.sqrt(k)
    t = t_quantile(k - 1, 0.5 + confidence / 2.0)
    centre = float(np.mean(d))
    ratio = math.exp(centre)
    return RatioInterval(
        a.name,
        b.name,
        percentile,
        ratio,
        math.exp(centre - t * se),
        math.exp(centre + t * se),
        k,
        float(k - 1),
        True,
        confidence,
    )


def unpaired_ratio(
    a: Result, b: Result, percentile: float, confidence: float = 0.95
) -> RatioInterval:
    """A's ``percentile`` over B's where A and B come from two runs: the ratio of the
    geometric means of their rounds, with Welch's interval on the log round figures
    (module docstring). No
    interval below :data:`MIN_ROUNDS` rounds on either side."""
    est_a, rounds_a = _figures(a, percentile)
    est_b, rounds_b = _figures(b, percentile)
    ratio = est_a / est_b if est_b > 0 else math.inf
    ka, kb = len(rounds_a), len(rounds_b)

    def none(reason: str) -> RatioInterval:
        return RatioInterval(
            a.name,
            b.name,
            percentile,
            ratio,
            None,
            None,
            min(ka, kb),
            0.0,
            False,
            confidence,
            reason,
        )

    if min(ka, kb) < MIN_ROUNDS:
        return none(f"{min(ka, kb)} rounds: at least {MIN_ROUNDS} are needed on each side")
    x, y = np.asarray(rounds_a, dtype=float), np.asarray(rounds_b, dtype=float)
    if not (np.all(x > 0) and np.all(y > 0) and est_a > 0 and est_b > 0):
        return none("a round measured 0 ns")
    va, vb = float(np.var(np.log(x), ddof=1)) / ka, float(np.var(np.log(y), ddof=1)) / kb
    se = math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (ka - 1) + vb**2 / (kb - 1)) if va + vb > 0 else ka + kb - 2
    t = t_quantile(df, 0.5 + confidence / 2.0)
    centre = float(np.mean(np.log(x)) - np.mean(np.log(y)))
    ratio = math.exp(centre)
    return RatioInterval(
        a.name,
        b.name,
        percentile,
        ratio,
        math.exp(centre - t * se),
        math.exp(centre + t * se),
        min(ka, kb),
        df,
        False,
        confidence,
    )


def rival(chosen: Result, candidates: Sequence[Result]) -> Result | None:
    """The nearest rival of ``chosen`` among ``candidates`` (itself left out): the one
    whose p50 is closest to it on a log scale; None when there is no other."""
    others = [r for r in candidates if r.name != chosen.name and r.summary.p50_ns > 0]
    if not others or chosen.summary.p50_ns <= 0:
        return None
    return min(
        others, key=lambda r: (abs(math.log(r.summary.p50_ns / chosen.summary.p50_ns)), r.name)
    )
