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
    rounds' ratios with the paired interval of the module docstring. No interval below
    :data:`fsyncbench.measure.intervals.MIN_ROUNDS` rounds, with rounds of unequal number,
    or with a round at 0 ns. Raises ValueError for another percentile."""
    return _ratio(a, b, percentile, confidence, paired=True)


def unpaired_ratio(
    a: Result, b: Result, percentile: float, confidence: float = 0.95
) -> RatioInterval:
    """A's ``percentile`` over B's where A and B come from two runs: the ratio of the
    geometric means of their rounds, with Welch's interval on the log round figures
    (module docstring). No interval below :data:`MIN_ROUNDS` rounds on either side or with
    a round at 0 ns. Raises ValueError for another percentile."""
    return _ratio(a, b, percentile, confidence, paired=False)


def _ratio(
    a: Result, b: Result, percentile: float, confidence: float, paired: bool
) -> RatioInterval:
    est_a, rounds_a = _figures(a, percentile)
    est_b, rounds_b = _figures(b, percentile)
    ka, kb = len(rounds_a), len(rounds_b)

    def out(
        ratio: float, low: float | None, high: float | None, df: float, why: str = ""
    ) -> RatioInterval:
        return RatioInterval(
            a.name, b.name, percentile, ratio, low, high, min(ka, kb), df, paired, confidence, why
        )

    whole = est_a / est_b if est_b > 0 else math.inf
    if paired and ka != kb:
        return out(whole, None, None, 0.0, "the two rows have different rounds")
    if min(ka, kb) < MIN_ROUNDS:
        side = "" if paired else " on each side"
        had = f"{min(ka, kb)} rounds" if min(ka, kb) else "no rounds recorded"
        return out(whole, None, None, 0.0, f"{had}: at least {MIN_ROUNDS} are needed{side}")
    x, y = np.asarray(rounds_a, dtype=float), np.asarray(rounds_b, dtype=float)
    if not (np.all(x > 0) and np.all(y > 0) and est_a > 0 and est_b > 0):
        return out(whole, None, None, 0.0, "a round measured 0 ns")
    lx, ly = np.log(x), np.log(y)
    if paired:
        d = lx - ly
        centre, se, df = float(np.mean(d)), float(np.std(d, ddof=1)) / math.sqrt(ka), ka - 1.0
    else:
        va, vb = float(np.var(lx, ddof=1)) / ka, float(np.var(ly, ddof=1)) / kb
        centre, se = float(np.mean(lx) - np.mean(ly)), math.sqrt(va + vb)
        df = (
            (va + vb) ** 2 / (va**2 / (ka - 1) + vb**2 / (kb - 1)) if va + vb > 0 else ka + kb - 2.0
        )
    t = t_quantile(df, 0.5 + confidence / 2.0)
    return out(math.exp(centre), math.exp(centre - t * se), math.exp(centre + t * se), df)


def rival(chosen: Result, candidates: Sequence[Result]) -> Result | None:
    """The nearest rival of ``chosen`` among ``candidates`` (itself left out): the one
    whose p50 is closest to it on a log scale; None when there is no other."""
    others = [r for r in candidates if r.name != chosen.name and r.summary.p50_ns > 0]
    if not others or chosen.summary.p50_ns <= 0:
        return None
    return min(
        others, key=lambda r: (abs(math.log(r.summary.p50_ns / chosen.summary.p50_ns)), r.name)
    )
