"""Comparing reports: two runs side by side with calibrated significance (a fleet of many:
:mod:`fsyncbench.report.fleet`).

Two reports A and B are compared configuration by configuration:

- p50 and p99 of each with the interval the report itself shows
  (:func:`fsyncbench.measure.intervals.quantile_interval`, recomputed from the raw samples), and
  B against the baseline: A and the earlier runs of the same measurement A recorded
  (``Result.earlier``). With at least 3 earlier runs B is judged against the spread those
  runs really had (a prediction built without B); with fewer, against both runs' own
  spread, that of their rounds (:mod:`fsyncbench.measure.between`). The basis is named on
  every row. B's own interval, widened by earlier runs B itself recorded, is never the test:
  B would then widen the yardstick it is measured with.
- The p-values of every statistic compared at once are adjusted by Holm's step-down method
  (Holm 1979, "A simple sequentially rejective multiple test procedure", Scand. J. Statist.
  6:65-70), which keeps the chance of calling *any* of them significant between two runs of
  an unchanged machine at 5 %. A difference is *significant* when its adjusted p-value is
  below 1 - confidence.
- The common-language effect size P(B > A) (McGraw & Wong 1992) from the Mann-Whitney U
  statistic, as a description only; its p-value is not given: it would assume independent
  samples, and between two runs of an unchanged machine it was below 0.05 in almost every
  pair.

Reports measured in fewer than 3 rounds (``--rounds``, schema 1 reports) have no spread
of their own between processes; with fewer than 3 earlier runs their statistics are shown,
but "cannot tell" whether they changed.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fsyncbench.errors import FsyncbenchError
from fsyncbench.measure import between, intervals, stats
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
    """One percentile of A and B with the intervals their reports show, and B against the
    baseline (:func:`fsyncbench.measure.between.shift`).

    ``basis`` is "history" (A and at least 3 earlier runs A recorded: B judged against
    their distribution) or "pair" (B against A over both runs' own spread);
    ``baseline_runs`` how many runs the baseline holds, ``baseline_ns`` their geometric
    mean (A's figure for one run), ``ratio`` B / baseline with its interval ``ratio_ci``,
    ``tau_log`` the spread between runs beyond their own (history only), ``left_out`` the
    earlier runs too far from the others to be part of the baseline and ``spread`` what
    the test's variance came from (:class:`fsyncbench.measure.between.Shift`);
    ``detectable_ratio`` the slowdown the regression gate's test of this statistic catches
    4 times in 5 (None where the gate does not check it: :mod:`fsyncbench.report.regression`).
    ``p_value`` is the
    two-sided p of "no change"; ``p_adjusted`` the same after the Holm adjustment over every
    statistic of the comparison; ``significant`` whether ``p_adjusted`` is below 1 -
    confidence. They are None, with ``reason`` saying why and what would settle it, when
    the runs' spread cannot be estimated ("cannot tell")."""

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
    basis: str = between.BASIS_PAIR
    baseline_runs: int = 1
    baseline_ns: float | None = None
    tau_log: float | None = None
    left_out: int = 0
    spread: str = "rounds"
    detectable_ratio: float | None = None

    @property
    def change_pct(self) -> float | None:
        """(B/A - 1) in percent: positive = B slower."""
        return None if self.ratio is None else (self.ratio - 1.0) * 100.0


@dataclass(frozen=True)
class RankTest:
    """The Mann-Whitney U statistic of B against A and P(B > A) = U / (n_A n_B), a
    description of how the two sample sets overlap (no p-value: module docstring)."""

    u_b: float
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


# --------------------------------------------------------------------------- checks


def run_key(rep: Report) -> tuple[object, ...]:
    """What makes two reports copies of one run: host name, measured directory, kind,
    creation time and every result's sample count, p50 and p99 (ns)."""
    figures = tuple(
        (r.name, r.summary.count, r.summary.p50_ns, r.summary.p99_ns) for r in rep.results
    )
    return (rep.host.hostname, rep.host.target.path, rep.kind, rep.created_utc, figures)


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
        iv = intervals.quantile_interval(
            r.samples_ns,
            r.slice_counts,
            percentile,
            confidence,
            r.slice_rounds,
            stats.earlier_figures(r.earlier, percentile),
        )
        if percentile != 99:
            return iv
        p50 = r.summary.p50_interval
        return intervals.floored(iv, p50.estimate_ns if p50 is not None else r.summary.p50_ns)
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


def run_figure(r: Result, percentile: float) -> between.RunFigure:
    """``percentile`` (50 or 99) of ``r`` as one run's figure for a test between runs
    (:class:`fsyncbench.measure.between.RunFigure`): the estimate, the spread of its rounds,
    its own jackknife SE (without earlier runs) and the clock tick its samples show."""
    s = r.summary
    if percentile == 50:
        estimate, rounds, stored = s.p50_ns, s.round_p50_ns, s.p50_interval
    else:
        estimate, rounds, stored = s.p99_ns, s.round_p99_ns, s.p99_interval
    own = None if stored is None else stored.own_se_log
    return between.RunFigure(
        estimate_ns=estimate,
        round_sd_log=between.round_sd_log(rounds),
        rounds=len(rounds),
        own_se_log=own,
        tick_ns=float(intervals.clock_tick_ns(r.samples_ns)) if r.samples_ns else 1.0,
    )


def baseline_figures(a: Result, percentile: float) -> list[between.RunFigure]:
    """The baseline runs of ``a``: the earlier runs it recorded (``Result.earlier``, oldest
    first) and ``a`` itself, last."""
    out = []
    for e in a.earlier:
        if percentile == 50:
            out.append(between.RunFigure(e.p50_ns, e.p50_round_sd_log, e.rounds, e.p50_se_log))
        else:
            out.append(between.RunFigure(e.p99_ns, e.p99_round_sd_log, e.rounds, e.p99_se_log))
    return out + [run_figure(a, percentile)]


def spread_prior(
    pairs: Sequence[tuple[Result, Result]],
) -> between.SpreadPrior | None:
    """What every statistic (p50 and p99) of the baselines ``pairs`` hold shows of how much
    their runs differ beyond their rounds (:func:`fsyncbench.measure.between.fit_prior`).
    Give only the pairs of the configurations under test: a prior learnt from others would
    let their history move these statistics' verdicts."""
    ratios = [
        r
        for a, _ in pairs
        for pct in (50, 99)
        if (r := between.history_ratio(baseline_figures(a, pct))) is not None
    ]
    return between.fit_prior(ratios)


def compare_quantile(
    a: Result,
    b: Result,
    percentile: float,
    confidence: float = CONFIDENCE,
    prior: between.SpreadPrior | None = None,
) -> QuantileComparison:
    """``percentile`` of A and B with the intervals their reports show, and B against the
    baseline (A and the earlier runs A recorded): ratio, its interval and the unadjusted
    two-sided p-value of :func:`fsyncbench.measure.between.shift` (module docstring), with
    ``prior`` what the whole comparison shows (:func:`spread_prior`). ``significant`` and
    ``p_adjusted`` are filled in by :func:`compare_pair`."""
    ia, ib = result_interval(a, percentile, confidence), result_interval(b, percentile, confidence)
    sh = between.shift(
        baseline_figures(a, percentile), run_figure(b, percentile), confidence, prior
    )
    return QuantileComparison(
        percentile=percentile,
        a_ns=ia.estimate_ns,
        a_ci_ns=ia.bounds,
        b_ns=ib.estimate_ns,
        b_ci_ns=ib.bounds,
        ratio=sh.ratio,
        ratio_ci=sh.ratio_ci,
        significant=None,
        a_interval=ia,
        b_interval=ib,
        p_value=sh.p_value,
        reason=sh.reason,
        se_log=sh.se_log,
        df=sh.df,
        basis=sh.basis,
        baseline_runs=sh.baseline_runs,
        baseline_ns=sh.baseline_ns,
        tau_log=sh.tau_log,
        left_out=sh.left_out,
        spread=sh.spread,
    )


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
    """U of B against A (ties count 1/2) and P(B > A). None when a side is empty."""
    xa = np.asarray(a, dtype=np.float64)
    xb = np.asarray(b, dtype=np.float64)
    n1, n2 = xa.size, xb.size
    if n1 == 0 or n2 == 0:
        return None
    both = np.concatenate([xa, xb])
    _, inverse, counts = np.unique(both, return_inverse=True, return_counts=True)
    mid_rank = np.cumsum(counts) - (counts - 1) / 2.0  # average rank of each distinct value
    u_b = float(mid_rank[inverse][n1:].sum() - n2 * (n2 + 1) / 2.0)  # pairs with b > a
    return RankTest(u_b, u_b / (n1 * n2))


def in_gate(kind: str, name: str, names: Sequence[str] | None = None) -> bool:
    """Whether the regression gate checks a configuration (:mod:`fsyncbench.report.regression`):
    those ``names`` name (case-insensitive), by default every one but the no-sync write."""
    if names:
        return name.lower() in {n.lower() for n in names}
    return kind != "write"


def compare_pair(
    a: Report, b: Report, confidence: float = CONFIDENCE, names: Sequence[str] | None = None
) -> PairComparison:
    """Compare every configuration present in both reports, p50 and p99, with the
    p-values Holm-adjusted over all of them, and the p50 of the tool's floors both reports
    measured (their own Holm family: :attr:`PairComparison.floor_moved`). The spread
    between runs is learnt from the configurations the gate checks (:func:`in_gate` of
    ``names``) and used for every row. Call :func:`check_comparable` first.
    Deterministic: the same two reports always give the same answer."""
    theirs = {r.name: r for r in b.results}
    va = {v.subject: v.path_verdict for v in a.verdict.results}
    vb = {v.subject: v.path_verdict for v in b.verdict.results}
    pairs = [(ra, theirs[ra.name]) for ra in a.results if ra.name in theirs]
    prior = spread_prior([(ra, rb) for ra, rb in pairs if in_gate(ra.kind, ra.name, names)])
    flat = []
    for ra, rb in pairs:
        flat += [
            compare_quantile(ra, rb, 50, confidence, prior),
            compare_quantile(ra, rb, 99, confidence, prior),
        ]
    flat = _adjust(flat, confidence)
    # the gate's power: one-sided, a lone regression held to alpha over the statistics it tests
    gate = [
        i
        for i, q in enumerate(flat)
        if in_gate(pairs[i // 2][0].kind, pairs[i // 2][0].name, names)
        and q.p_value is not None
        and q.se_log is not None
    ]
    for i in gate:
        q = flat[i]
        lone = alpha(confidence) / len(gate)
        flat[i] = dataclasses.replace(
            q,
            detectable_ratio=between.detectable_ratio(q.se_log, q.df or math.inf, lone),  # type: ignore[arg-type]
        )
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


# --------------------------------------------------------------------------- names


def common_names(reports: Sequence[Report]) -> list[str]:
    """Result names present in every report, in the first report's order."""
    sets = [{r.name for r in rep.results} for rep in reports]
    return [r.name for r in reports[0].results if all(r.name in s for s in sets)]
