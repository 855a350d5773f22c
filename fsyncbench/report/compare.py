"""Comparing reports: two runs side by side with calibrated significance (a fleet of many:
:mod:`fsyncbench.report.fleet`).

Two reports A and B are compared configuration by configuration:

- p50 and p99 of each with the interval the report itself shows
  (:func:`fsyncbench.measure.stats.quantile_interval`, recomputed from the raw samples and slices
  by the same deterministic function, so it is the report's own), and the ratio B/A with
  its interval. Both rest on the jackknife standard errors of log(percentile) over each
  run's slices, which allow for samples that move together in time, widened by the spread
  between earlier runs of the same measurement where the report recorded them
  (``Result.earlier``, :func:`fsyncbench.measure.stats.between_runs_interval`): the difference of the
  logs over the combined standard error is a Welch t statistic (Welch-Satterthwaite degrees
  of freedom; Welch 1947, Biometrika 34:28-35).
- The p-values of every statistic compared at once are adjusted by Holm's step-down method
  (Holm 1979, "A simple sequentially rejective multiple test procedure", Scand. J. Statist.
  6:65-70), which keeps the chance of calling *any* of them significant between two runs of
  an unchanged machine at 5 %. A difference is *significant* when its adjusted p-value is
  below 1 - confidence.
- The common-language effect size P(B > A) (McGraw & Wong 1992) from the Mann-Whitney U
  statistic, as a description only: its p-value would assume independent samples.

Reports of schema 1 have no slice boundaries, so no interval valid for dependent samples
can be computed from them: their statistics are shown, but not called significant.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fsyncbench.errors import FsyncbenchError
from fsyncbench.measure import stats
from fsyncbench.model import Interval, Report, Result

CONFIDENCE = 0.95
#: A floor p50 that moved by more than this factor between two runs means the machine
#: changed: the no-sync write p50 varied by up to 15 % from process to process on this
#: project's 2-core Firecracker VM (2.1-2.5 us in five processes), so a larger move is more
#: than process noise. (On that VM the in-memory commit floor itself moved 1.3-1.5x between
#: back-to-back runs in 10 of 15 A/A pairs: README, "How far to trust the intervals".)
FLOOR_MOVED_RATIO = 1.25
#: The multiple-comparison adjustment, named in the output.
ADJUSTMENT = "Holm"


@dataclass(frozen=True)
class QuantileComparison:
    """One percentile of A and B with their intervals, and the ratio B/A with its interval.

    ``p_value`` is the two-sided Welch t test of log(B) - log(A); ``p_adjusted`` the same
    after the Holm adjustment over every statistic of the comparison; ``significant``
    whether ``p_adjusted`` is below 1 - confidence. They are None, with ``reason`` saying
    why, when a side has no interval valid for dependent samples (no raw samples, no
    slices, too few of them)."""

    percentile: float
    a_ns: float
    a_ci_ns: tuple[float, float] | None
    b_ns: float
    b_ci_ns: tuple[float, float] | None
    ratio: float | None
    ratio_ci: tuple[float, float] | None
    significant: bool | None
    a_interval: Interval | None = None
    b_interval: Interval | None = None
    p_value: float | None = None
    p_adjusted: float | None = None
    reason: str | None = None
    se_log: float | None = None
    df: float | None = None

    @property
    def change_pct(self) -> float | None:
        """(B/A - 1) in percent: positive = B slower."""
        return None if self.ratio is None else (self.ratio - 1.0) * 100.0


@dataclass(frozen=True)
class RankTest:
    """Mann-Whitney U test of A against B: two-sided ``p_value`` and P(B > A)."""

    u_b: float
    z: float
    p_value: float
    prob_b_slower: float


@dataclass(frozen=True)
class ConfigComparison:
    """One configuration (result name) present in both reports."""

    name: str
    kind: str
    primitive_a: str
    primitive_b: str
    n_a: int
    n_b: int
    p50: QuantileComparison
    p99: QuantileComparison
    rank: RankTest | None
    verdict_a: str | None
    verdict_b: str | None


@dataclass(frozen=True)
class PairComparison:
    """A against B: per-configuration comparisons in A's order, and names found in only one."""

    configs: tuple[ConfigComparison, ...]
    only_a: tuple[str, ...]
    only_b: tuple[str, ...]
    confidence: float
    adjustment: str = ADJUSTMENT
    floors: tuple[tuple[str, QuantileComparison], ...] = ()

    @property
    def floor_moved(self) -> tuple[tuple[str, QuantileComparison], ...]:
        """The tool's floors (CPU-only work: the timing loop, an in-memory commit, an
        in-memory write) whose p50 moved by more than :data:`FLOOR_MOVED_RATIO` either way
        between A and B: the machine itself changed (its CPU speed, or its share of a shared
        host), so differences in the storage figures may be the machine's. (A ratio, not a
        test: the floors' own intervals rest on three rounds and are too wide to show it.)"""
        return tuple(
            (n, q)
            for n, q in self.floors
            if q.ratio is not None
            and (q.ratio > FLOOR_MOVED_RATIO or q.ratio < 1.0 / FLOOR_MOVED_RATIO)
        )


@dataclass(frozen=True)
class Regression:
    """A configuration whose p99 got worse by more than the allowed percentage, significantly:
    ``p_adjusted`` is the Holm-adjusted one-sided p-value of "B/A is at most 1 + limit"."""

    name: str
    baseline: str
    candidate: str
    p99: QuantileComparison
    limit_pct: float
    p_adjusted: float = 0.0


# --------------------------------------------------------------------------- checks


def check_comparable(reports: Sequence[Report], labels: Sequence[str]) -> None:
    """Refuse reports that cannot be compared, with one line: different report kinds, or the same configuration measured with a different workload
    (kind or payload size). Raises FsyncbenchError."""
    if len(reports) < 2:
        raise FsyncbenchError("compare needs at least two reports")
    first, first_label = reports[0], labels[0]
    for rep, label in zip(reports[1:], labels[1:]):
        if rep.kind != first.kind:
            raise FsyncbenchError(
                f"{first_label} is a report of kind {first.kind!r} but {label} of kind "
                f"{rep.kind!r}: "
                f"they measured different things"
            )
        theirs = {r.name: r for r in rep.results}
        common = [r for r in first.results if r.name in theirs]
        if not common:
            raise FsyncbenchError(f"{first_label} and {label} have no configuration in common")
        for r in common:
            o = theirs[r.name]
            if r.kind != o.kind:
                raise FsyncbenchError(
                    f"{r.name} is a {r.kind} workload in {first_label} but a {o.kind} workload "
                    f"in {label}: different workloads cannot be compared"
                )
            if r.payload_bytes != o.payload_bytes:
                raise FsyncbenchError(
                    f"{r.name} wrote {r.payload_bytes}-byte payloads in {first_label} but "
                    f"{o.payload_bytes}-byte payloads in {label}: re-run with the same "
                    f"--payload-bytes to compare"
                )


# --------------------------------------------------------------------------- statistics


def alpha(confidence: float) -> float:
    """The significance level 1 - ``confidence``, rounded to 12 decimals so 0.95 gives
    exactly 0.05 (the float 1.0 - 0.95 is 0.050000000000000044, which would call a p-value
    of exactly 0.05 significant)."""
    return round(1.0 - confidence, 12)


def result_interval(r: Result, percentile: float, confidence: float = CONFIDENCE) -> Interval:
    """The interval of ``percentile`` (50 or 99) of ``r`` the report shows: recomputed from
    the raw samples, slices and earlier runs (``Result.earlier``; the same function and data
    give the same numbers), or, for a report without raw samples, the summary's own."""
    if r.samples_ns:
        return stats.quantile_interval(
            r.samples_ns,
            r.slice_counts,
            percentile,
            confidence,
            r.slice_rounds,
            stats.earlier_figures(r.earlier, percentile),
        )
    s = r.summary
    stored = s.p50_interval if percentile == 50 else s.p99_interval
    if stored is not None:
        return stored
    value = s.p50_ns if percentile == 50 else s.p99_ns
    ci = s.p50_ci_ns if percentile == 50 else s.p99_ci_ns
    return Interval(
        value,
        ci[0] if ci else None,
        ci[1] if ci else None,
        None,
        0,
        0,
        s.ci_method,
        None if ci else "no raw samples",
    )


def compare_quantile(
    a: Result, b: Result, percentile: float, confidence: float = CONFIDENCE
) -> QuantileComparison:
    """``percentile`` of A and B with their intervals, the ratio B/A with its interval and
    the unadjusted p-value of the Welch t test on the log scale (module docstring).
    ``significant`` and ``p_adjusted`` are filled in by :func:`compare_pair`; ``se_log`` and
    ``df`` are the test's standard error of log(B/A) and its degrees of freedom."""
    ia, ib = result_interval(a, percentile, confidence), result_interval(b, percentile, confidence)
    pa, pb = ia.estimate_ns, ib.estimate_ns
    ratio = pb / pa if pa > 0 else None
    base: dict[str, Any] = dict(
        percentile=percentile,
        a_ns=pa,
        a_ci_ns=ia.bounds,
        b_ns=pb,
        b_ci_ns=ib.bounds,
        ratio=ratio,
        a_interval=ia,
        b_interval=ib,
    )
    why = _no_test_reason(ia, "A") or _no_test_reason(ib, "B")
    if why or ratio is None or pb <= 0:
        return QuantileComparison(
            **base, ratio_ci=None, significant=None, reason=why or "a percentile of zero"
        )
    assert ia.se_log is not None and ib.se_log is not None
    va, vb = ia.se_log**2, ib.se_log**2
    se = math.sqrt(va + vb)
    d = math.log(ratio)
    df = math.inf
    if se == 0:
        p = 1.0 if d == 0 else 0.0
        ratio_ci = (ratio, ratio)
    else:
        df = (va + vb) ** 2 / ((va**2 / ia.df if va else 0.0) + (vb**2 / ib.df if vb else 0.0))
        t = stats.t_quantile(df, 0.5 + confidence / 2.0)
        ratio_ci = (math.exp(d - t * se), math.exp(d + t * se))
        p = stats.t_two_sided_p(d / se, df)
    return QuantileComparison(
        **base, ratio_ci=ratio_ci, significant=None, p_value=p, se_log=se, df=df
    )


def _no_test_reason(iv: Interval, side: str) -> str | None:
    """Why ``iv`` cannot enter a test (None: it can): a statistic the report shows no
    interval for is not tested either, so the table never calls a difference significant
    beside a "none"."""
    if iv.bounds is not None and iv.se_log is not None and iv.df > 0:
        return None
    if iv.method == stats.METHOD_INDEPENDENT or not iv.blocks:
        return f"{side} has no slices (schema 1 report or no raw samples)"
    return f"{side}: {iv.reason or 'no interval'}"


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values, in the order given (Holm 1979): the i-th smallest of m is
    multiplied by (m - i), made monotone, capped at 1. Rejecting where the adjusted value is
    below alpha keeps the family-wise error rate at alpha."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    out = [1.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        out[i] = running
    return out


def _adjust(
    comparisons: Sequence[QuantileComparison], confidence: float
) -> list[QuantileComparison]:
    """``comparisons`` with Holm-adjusted p-values and significance over those that have a
    p-value (the others unchanged)."""
    tested = [i for i, q in enumerate(comparisons) if q.p_value is not None]
    adjusted = holm([comparisons[i].p_value for i in tested])  # type: ignore[misc]
    out = list(comparisons)
    for i, p in zip(tested, adjusted):
        out[i] = dataclasses.replace(out[i], p_adjusted=p, significant=p < alpha(confidence))
    return out


def rank_test(a: Sequence[float], b: Sequence[float]) -> RankTest | None:
    """Two-sided Mann-Whitney U test (normal approximation, tie and continuity corrected).
    None when a side is empty or every value is tied."""
    xa = np.asarray(a, dtype=np.float64)
    xb = np.asarray(b, dtype=np.float64)
    n1, n2 = xa.size, xb.size
    if n1 == 0 or n2 == 0:
        return None
    both = np.concatenate([xa, xb])
    _, inverse, counts = np.unique(both, return_inverse=True, return_counts=True)
    upper = np.cumsum(counts)
    mid_rank = upper - (counts - 1) / 2.0  # average rank of each distinct value (1-based)
    ranks = mid_rank[inverse]
    u_b = float(ranks[n1:].sum() - n2 * (n2 + 1) / 2.0)  # pairs with b > a (ties count 1/2)
    n = n1 + n2
    tie = float(np.sum(counts.astype(np.float64) ** 3 - counts)) / (n * (n - 1)) if n > 1 else 0.0
    var = n1 * n2 / 12.0 * ((n + 1) - tie)
    if var <= 0:
        return None
    mean = n1 * n2 / 2.0
    diff = u_b - mean
    z = (diff - math.copysign(0.5, diff)) / math.sqrt(var) if diff else 0.0
    p = math.erfc(abs(z) / math.sqrt(2.0))
    return RankTest(u_b, z, min(1.0, p), u_b / (n1 * n2))


def compare_pair(a: Report, b: Report, confidence: float = CONFIDENCE) -> PairComparison:
    """Compare every configuration present in both reports, p50 and p99, with the
    p-values Holm-adjusted over all of them, and the p50 of the tool's floors both reports
    measured (their own Holm family: :attr:`PairComparison.floor_moved`). Call
    :func:`check_comparable` first. Deterministic: the same two reports always give the
    same answer."""
    theirs = {r.name: r for r in b.results}
    va = {v.subject: v.path_verdict for v in a.verdict.results}
    vb = {v.subject: v.path_verdict for v in b.verdict.results}
    pairs = [(ra, theirs[ra.name]) for ra in a.results if ra.name in theirs]
    flat = []
    for ra, rb in pairs:
        flat += [compare_quantile(ra, rb, 50, confidence), compare_quantile(ra, rb, 99, confidence)]
    flat = _adjust(flat, confidence)
    rows = []
    for k, (ra, rb) in enumerate(pairs):
        rows.append(
            ConfigComparison(
                name=ra.name,
                kind=ra.kind,
                primitive_a=ra.primitive,
                primitive_b=rb.primitive,
                n_a=ra.summary.count,
                n_b=rb.summary.count,
                p50=flat[2 * k],
                p99=flat[2 * k + 1],
                rank=rank_test(ra.samples_ns, rb.samples_ns),
                verdict_a=va.get(ra.name),
                verdict_b=vb.get(ra.name),
            )
        )
    mine = {r.name for r in a.results}
    floors_b = {f.name: f for f in b.floors}
    shared = [(f, floors_b[f.name]) for f in a.floors if f.name in floors_b]
    floor_rows = _adjust(
        [compare_quantile(fa, fb, 50, confidence) for fa, fb in shared], confidence
    )
    return PairComparison(
        configs=tuple(rows),
        only_a=tuple(r.name for r in a.results if r.name not in theirs),
        only_b=tuple(r.name for r in b.results if r.name not in mine),
        confidence=confidence,
        floors=tuple((fa.name, q) for (fa, _), q in zip(shared, floor_rows)),
    )


def regressions(
    pair: PairComparison,
    limit_pct: float,
    baseline: str,
    candidate: str,
    names: Sequence[str] | None = None,
) -> list[Regression]:
    """Configurations whose p99 is significantly more than ``limit_pct`` % worse in B than
    in A: the one-sided Welch t test of log(B/A) against log(1 + limit/100), not against 0,
    Holm-adjusted over the p99s this check looks at, is below 1 - confidence. "Worse by more
    than 20 %" must be shown, not merely "worse": between two runs of an unchanged machine
    (true ratio 1) it fires far less often than the 5 % a test against 1 would, and a wide
    interval cannot fail a build on a guess. The row must also be significant in the table
    (:func:`compare_pair`'s Holm over every statistic). ``names`` limits the check; by default every
    compared configuration that syncs: the no-sync write baseline and commits at
    synchronous=OFF (primitive "none") measure Python and the page cache, not the storage
    a durability gate is about, so they are checked only when named."""
    return fleet_regressions([(candidate, pair)], limit_pct, baseline, names)


def fleet_regressions(
    pairs: Sequence[tuple[str, PairComparison]],
    limit_pct: float,
    baseline: str,
    names: Sequence[str] | None = None,
) -> list[Regression]:
    """:func:`regressions` of several candidates against one baseline, ``pairs`` of
    (candidate label, its comparison with the baseline), with Holm's adjustment over every
    p99 tested in all of them at once: the chance that a gate over a fleet of unchanged
    machines fires anywhere stays at 1 - confidence however many reports it holds."""
    wanted = {n.lower() for n in names} if names else None
    checked = []
    for candidate, pair in pairs:
        for c in pair.configs:
            if wanted is not None and c.name.lower() not in wanted:
                continue
            if wanted is None and (c.kind == "write" or "none" in (c.primitive_a, c.primitive_b)):
                continue
            q = c.p99
            if q.ratio is None or q.se_log is None or q.df is None:
                continue
            excess = math.log(q.ratio) - math.log1p(limit_pct / 100.0)
            if q.se_log == 0:
                p = 0.0 if excess > 0 else 1.0
            else:
                p = stats.t_one_sided_p(excess / q.se_log, q.df)
            checked.append((candidate, pair, c, p))
    adjusted = holm([p for *_, p in checked])
    # and the table's own call: a REGRESSION line never stands beside "significant: no"
    return [
        Regression(c.name, baseline, candidate, c.p99, limit_pct, pa)
        for (candidate, pair, c, _), pa in zip(checked, adjusted)
        if pa < alpha(pair.confidence) and c.p99.significant
    ]


def regression_coverage(
    pair: PairComparison, names: Sequence[str] | None = None
) -> tuple[int, list[str]]:
    """(how many p99s a regression check looks at, why each one it cannot test cannot be
    tested): a check must say what it skipped, and one that tested nothing must not pass."""
    wanted = {n.lower() for n in names} if names else None
    looked, out = 0, []
    for c in pair.configs:
        if wanted is not None and c.name.lower() not in wanted:
            continue
        if wanted is None and (c.kind == "write" or "none" in (c.primitive_a, c.primitive_b)):
            continue
        looked += 1
        if c.p99.se_log is None:
            out.append(f"{c.name} ({c.p99.reason or 'no interval'})")
    return looked, out


# --------------------------------------------------------------------------- names


def common_names(reports: Sequence[Report]) -> list[str]:
    """Result names present in every report, in the first report's order."""
    sets = [{r.name for r in rep.results} for rep in reports]
    return [r.name for r in reports[0].results if all(r.name in s for s in sets)]
