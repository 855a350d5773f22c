"""compare, the figures behind each test between runs: which run figures the baseline and
the candidate bring (each percentile's own estimate, rounds, SE and the clock's tick), the
p99 interval of a report that stores no p50 interval, the spread prior learnt from both
percentiles of the gated rows only, the history basis's fields as a row shows them, the
gate's detectable slowdown per row and the floors' family at the comparison's confidence.

Results are summary-only (interval records written here, so every standard error and
degree of freedom entering a test is chosen here) unless raw samples are the point."""

import dataclasses
import math

import numpy as np
import pytest
import reference
import sampled
from factories import _result, even_slices, summary_only
from scipy.stats import t as student_t

from fsyncbench.measure import between, intervals, stats
from fsyncbench.model import EarlierRun, Interval
from fsyncbench.report import compare

BLOCKS = intervals.METHOD_BLOCKS
#: a small report for its host and verdict; the tests put their own results in it
BASE = sampled.report(n=200)
#: three rounds 0.05 apart in log: w = 0.0025 on 2 df
SPREAD = (-0.05, 0.0, 0.05)


def iv(est: float, se: float = 0.01, df: float = 9.0) -> Interval:
    """An interval record of ``est`` (bounds +-10 %) with own SE(log) ``se``."""
    return Interval(est, est * 0.9, est * 1.1, se, df, 10, BLOCKS, None)


def given(
    name: str,
    p50: Interval,
    p99: Interval,
    kind: str = "commit",
    rounds50: tuple[float, ...] = (),
    rounds99: tuple[float, ...] = (),
    earlier: tuple[EarlierRun, ...] = (),
):
    """:func:`factories.summary_only` with ``p50`` first."""
    return summary_only(name, p99, p50, kind, rounds50=rounds50, rounds99=rounds99, earlier=earlier)


def at(name: str, est: float, kind: str = "commit"):
    """p50 and p99 both ``est``, rounds 0.05 apart in log."""
    r = tuple(est * math.exp(z) for z in SPREAD)
    return given(name, iv(est), iv(est), kind, r, r)


def report_of(*results, floors=()):
    return dataclasses.replace(BASE, results=tuple(results), floors=tuple(floors))


def sd_log(values) -> float:
    return float(np.std(np.log(values), ddof=1))


# --------------------------------------------------------------------------- result_interval


def test_a_p99_from_raw_samples_without_a_stored_p50_interval_is_floored_at_the_p50():
    """A report that stores no p50 interval (written before the intervals were) but has its
    raw samples: its p99 interval, widened by earlier p99s of 300 ns, 9 us and 400 ns far
    below the p50, starts at the summary's p50 (p99 >= p50), the high bound kept."""
    data = list(sampled.samples(1000.0, n=600, seed=3))
    r = _result(
        "commit", "wal/full", "fdatasync", 0, samples=data, slice_counts=even_slices(600, 12)
    )
    earlier = tuple(
        EarlierRun(f"e{i}", "2026-01-01T00:00:00Z", 1000.0, p99)
        for i, p99 in enumerate((300.0, 9000.0, 400.0))
    )
    r = dataclasses.replace(
        r, earlier=earlier, summary=dataclasses.replace(r.summary, p50_interval=None)
    )
    raw = intervals.quantile_interval(
        data, r.slice_counts, 99, 0.95, (), ((300.0, None), (9000.0, None), (400.0, None))
    )
    p50 = float(np.percentile(data, 50, method=stats.PERCENTILE_METHOD))
    assert r.summary.p50_ns == p50 == 1023.0
    assert raw.low_ns is not None and raw.low_ns < p50  # the floor matters here
    got = compare.result_interval(r, 99)
    assert got == dataclasses.replace(raw, low_ns=p50)
    assert got.high_ns == raw.high_ns


# --------------------------------------------------------------------------- run figures


def test_run_figure_carries_the_clock_tick_the_samples_show():
    """Samples timed by a clock counting in 100 ns steps (Windows' 10 MHz
    QueryPerformanceCounter) give a tick of 100 ns; a report without raw samples shows no
    tick: 1 ns, a nanosecond clock's."""
    data = [100 * k for k in (30, 31, 33, 30, 35, 32, 31, 34, 30, 36) * 30]
    r = _result("flush", "write+fdatasync", "fdatasync", 0, samples=data)
    fig = compare.run_figure(r, 50)
    assert fig.tick_ns == 100.0 and isinstance(fig.tick_ns, float)
    assert fig.estimate_ns == r.summary.p50_ns
    assert fig.own_se_log == r.summary.p50_interval.own_se_log
    assert compare.run_figure(r, 99).tick_ns == 100.0
    summary_only = at("wal/full", 100.0)
    assert compare.run_figure(summary_only, 50) == between.RunFigure(
        100.0, pytest.approx(0.05), 3, 0.01, 1.0
    )
    assert compare.run_figure(summary_only, 99).tick_ns == 1.0


def test_baseline_figures_take_each_percentiles_own_earlier_figures():
    """Earlier runs whose p50 and p99 differ in every field: the p50 baseline holds their
    p50s with the p50 rounds' spread and SE, the p99 baseline their p99s with the p99's,
    oldest first, A's own figure last."""
    earlier = (
        EarlierRun("r1.json", "2026-01-01T00:00:00Z", 50.0, 200.0, 0.011, 0.031, 0.021, 0.041, 5),
        EarlierRun("r2.json", "2026-01-02T00:00:00Z", 52.0, 230.0, 0.012, 0.032, 0.022, 0.042, 3),
    )
    rounds50 = tuple(51.0 * math.exp(z) for z in SPREAD)
    rounds99 = tuple(210.0 * math.exp(2 * z) for z in SPREAD)
    a = given("wal/full", iv(51.0, 0.013), iv(210.0, 0.033), "commit", rounds50, rounds99, earlier)
    assert compare.baseline_figures(a, 50) == [
        between.RunFigure(50.0, 0.021, 5, 0.011),
        between.RunFigure(52.0, 0.022, 3, 0.012),
        between.RunFigure(51.0, pytest.approx(0.05), 3, 0.013, 1.0),
    ]
    assert compare.baseline_figures(a, 99) == [
        between.RunFigure(200.0, 0.041, 5, 0.031),
        between.RunFigure(230.0, 0.042, 3, 0.032),
        between.RunFigure(210.0, pytest.approx(0.1), 3, 0.033, 1.0),
    ]


def _history(name: str, p50s, p99s, sd50: float, sd99: float, kind: str = "commit"):
    """A with the earlier runs' p50s/p99s (all but the last, each 5 rounds of spread
    sd50/sd99 in log) and its own last figures with 5 rounds of the same spread."""
    z = (-1.0, 0.0, 1.0, 0.5, -0.5)
    earlier = tuple(
        EarlierRun(f"e{i}", f"2026-01-0{i + 1}T00:00:00Z", p50, p99, None, None, sd50, sd99, 5)
        for i, (p50, p99) in enumerate(zip(p50s[:-1], p99s[:-1]))
    )
    r50 = tuple(p50s[-1] * math.exp(sd50 / math.sqrt(0.625) * x) for x in z)
    r99 = tuple(p99s[-1] * math.exp(sd99 / math.sqrt(0.625) * x) for x in z)
    return given(name, iv(p50s[-1], 0.0), iv(p99s[-1], 0.0), kind, r50, r99, earlier)


def test_the_spread_prior_learns_from_both_percentiles():
    """Two configurations, 4 runs each (figures of 1-7 us: a 1 ns tick is no floor), whose
    p50s barely move between runs and whose p99s move a lot: the prior is fit_prior of all four ratios var(log runs) / mean round
    variance on 3 df, each worked out here from the runs' figures."""
    p50s = ((1000.0, 1010.0, 990.0, 1005.0), (2000.0, 2030.0, 1980.0, 2010.0))
    p99s = ((3000.0, 3600.0, 2800.0, 3300.0), (6000.0, 5000.0, 6900.0, 6400.0))
    a = [
        _history(n, p50, p99, 0.01, 0.03)
        for n, p50, p99 in zip(("wal/full", "delete/full"), p50s, p99s)
    ]
    ratios = []
    for p50, p99 in zip(p50s, p99s):
        for figures, sd in ((p50, 0.01), (p99, 0.03)):
            ratios.append((float(np.var(np.log(figures), ddof=1)) / sd**2, 3.0))
    assert ratios[0][0] < 1.0 < ratios[1][0]  # the p50s calmer than their rounds, the p99s not
    got = compare.spread_prior([(r, r) for r in a])
    want = between.fit_prior(ratios)
    assert got is not None and want is not None
    assert (got.df, got.ratio) == pytest.approx((want.df, want.ratio), rel=1e-9)


# --------------------------------------------------------------------------- compare_quantile


def test_a_history_row_shows_the_runs_spread_the_run_left_out_and_its_basis():
    """A recorded 5 earlier p99s, 100, 104, 98, 102 and 300 ns (each 5 rounds, sd(log)
    0.02), and measured 101 ns in 5 rounds of the same spread; B 110 ns in calmer rounds.
    The 300 ns run is left out (a prediction from the others rejects it), so 5 runs make the
    baseline; with a prior of ratio 3 on 8 df the runs' variance is the posterior ratio
    (8 x 3 + 4 r) / 12 times the round variance, tau_log its excess over the rounds, and the
    spread the test used is the runs' (B's rounds spread less than the baseline's)."""
    z = (-1.0, 0.0, 1.0, 0.5, -0.5)
    unit = 0.02 / math.sqrt(0.625)  # sd(z, ddof 1)^2 = 0.625
    earlier = tuple(
        EarlierRun(f"e{i}", f"2026-01-0{i + 1}T00:00:00Z", 50.0, p, None, None, 0.02, 0.02, 5)
        for i, p in enumerate((100.0, 104.0, 98.0, 102.0, 300.0))
    )
    a = given(
        "wal/full",
        iv(50.0),
        iv(101.0, 0.0),
        rounds99=tuple(101.0 * math.exp(unit * x) for x in z),
        earlier=earlier,
    )
    b = given(
        "wal/full",
        iv(55.0),
        iv(110.0, 0.005),
        rounds99=tuple(110.0 * math.exp(unit / 2 * x) for x in z),
    )
    prior = between.SpreadPrior(8.0, 3.0)
    q = compare.compare_quantile(a, b, 99, 0.95, prior)
    kept = np.log([100.0, 104.0, 98.0, 102.0, 101.0])
    w = 0.02**2
    r_hat = float(np.var(kept, ddof=1)) / w
    sigma2 = (8.0 * 3.0 + 4.0 * r_hat) / 12.0 * w
    assert (q.basis, q.baseline_runs, q.left_out, q.spread) == ("history", 6, 1, "runs")
    assert q.baseline_ns == pytest.approx(math.exp(float(kept.mean())), rel=1e-12)
    assert q.tau_log == pytest.approx(math.sqrt(sigma2 - w), rel=1e-9)
    var = sigma2 * (1.0 + 1.0 / 5.0)
    df = 1.0 / (1.0 / 12.0 + 1.0 / 20.0)
    assert q.se_log == pytest.approx(math.sqrt(var), rel=1e-9)
    assert q.df == pytest.approx(df, rel=1e-9)
    d = math.log(110.0) - float(kept.mean())
    assert q.p_value == pytest.approx(2 * student_t.sf(d / math.sqrt(var), df), rel=1e-9)


# --------------------------------------------------------------------------- rank_test


def test_rank_test_compares_b_as_float64_too():
    """B's times are compared as float64 as A's are: an integer B of 2^70 + 1 ns (beyond
    any integer type, as a report's JSON list may hold it) ties with A's 2^70."""
    assert compare.rank_test([2.0**70], [2**70 + 1]) == compare.RankTest(0.5, 0.5)
    assert compare.rank_test([2.0**70, 1.0], [2**70 + 1, 3]) == compare.RankTest(2.5, 2.5 / 4)


# --------------------------------------------------------------------------- compare_pair


def test_the_default_gate_leaves_the_no_sync_writes_history_out_of_the_prior():
    """By default the gate checks every configuration but the no-sync write, so the spread
    prior is learnt from the two commits' p50s and p99s only: the write's earlier runs,
    calm or 3x apart, leave the commits' tests exactly as they were."""

    def result(name, kind, seed, runs=4, wild=False):
        local = np.random.default_rng(seed)
        sd = 1.1 if wild else 0.05
        fig = [100.0 * math.exp(local.normal(0, sd)) for _ in range(runs)]
        z = (-1.0, 0.0, 1.0, 0.5, -0.5)
        rounds = tuple(fig[-1] * math.exp(0.04 * x) for x in z)
        earlier = tuple(
            EarlierRun(f"e{i}", f"2026-01-0{i + 1}T00:00:00Z", f, f, None, None, 0.04, 0.04, 5)
            for i, f in enumerate(fig[:-1])
        )
        i = iv(fig[-1], 0.02)
        return given(name, i, i, kind, rounds, rounds, earlier)

    rows = (("wal/full", "commit"), ("wal/normal", "commit"), ("write (no sync)", "write"))
    b = report_of(*(result(n, k, 20 + j, runs=1) for j, (n, k) in enumerate(rows)))
    calm = report_of(*(result(n, k, 10 + j) for j, (n, k) in enumerate(rows)))
    wild = report_of(*(result(n, k, 10 + j, wild=k == "write") for j, (n, k) in enumerate(rows)))
    tests = [
        [
            (q.se_log, q.p_value)
            for c in compare.compare_pair(a, b).configs[:2]
            for q in (c.p50, c.p99)
        ]
        for a in (calm, wild)
    ]
    assert tests[0] == tests[1]
    assert all(p is not None for _, p in tests[0])
    # the prior is that of the commits alone
    commits = [(ra, rb) for ra, rb in zip(wild.results[:2], b.results[:2])]
    prior = compare.spread_prior(commits)
    assert prior is not None
    want = compare.compare_quantile(wild.results[0], b.results[0], 99, 0.95, prior)
    assert compare.compare_pair(wild, b).configs[0].p99.p_value == want.p_value


def _lone_detectable(gated: int) -> float:
    """The slowdown a one-sided test of SE(log) sqrt(0.005) on 4 df catches 4 times in 5,
    held to 0.05 / ``gated``."""
    t = student_t.ppf(1 - 0.05 / gated, 4) + student_t.ppf(0.8, 4)
    return math.exp(t * math.sqrt(0.005))


def test_the_detectable_slowdown_is_given_for_the_rows_the_gate_checks_only():
    """wal/full (a commit) and the no-sync write, both 1.5x slower and tested: by default
    the gate checks wal/full's p50 and p99, a family of 2, and the write's statistics have
    no detectable slowdown. Naming wal/full alone does the same beside wal/normal."""
    a = report_of(at("wal/full", 100.0), at("write (no sync)", 100.0, "write"))
    b = report_of(at("wal/full", 150.0), at("write (no sync)", 150.0, "write"))
    full, write = compare.compare_pair(a, b).configs
    assert [q.p_value is not None for q in (full.p50, full.p99, write.p50, write.p99)] == [True] * 4
    assert full.p50.se_log == pytest.approx(math.sqrt(0.005), rel=1e-9)
    assert full.p50.df == pytest.approx(4.0, rel=1e-9)
    assert [full.p50.detectable_ratio, full.p99.detectable_ratio] == pytest.approx(
        [_lone_detectable(2)] * 2, rel=1e-9
    )
    assert (write.p50.detectable_ratio, write.p99.detectable_ratio) == (None, None)

    a = report_of(at("wal/full", 100.0), at("wal/normal", 100.0))
    b = report_of(at("wal/full", 150.0), at("wal/normal", 150.0))
    full, normal = compare.compare_pair(a, b, names=["WAL/FULL"]).configs
    assert [full.p50.detectable_ratio, full.p99.detectable_ratio] == pytest.approx(
        [_lone_detectable(2)] * 2, rel=1e-9
    )
    assert (normal.p50.detectable_ratio, normal.p99.detectable_ratio) == (None, None)
    # no names: both commits checked, a family of 4
    both = compare.compare_pair(a, b).configs
    assert [q.detectable_ratio for c in both for q in (c.p50, c.p99)] == pytest.approx(
        [_lone_detectable(4)] * 4, rel=1e-9
    )


def test_the_floors_are_compared_at_the_comparisons_confidence():
    """The commit floor doubled and the timing loop stayed, each measured in 3 rounds: at
    99 % their ratios' intervals use t(0.995) on 4 df, their p-values are Holm-adjusted as
    their own family of 2 and significant below 0.01."""
    loop, commit = stats.FLOOR_LOOP, stats.FLOOR_COMMIT
    a = report_of(
        at("wal/full", 100.0), floors=(at(loop, 40.0, "floor"), at(commit, 3000.0, "floor"))
    )
    b = report_of(
        at("wal/full", 100.0), floors=(at(loop, 40.0, "floor"), at(commit, 6000.0, "floor"))
    )
    pair = compare.compare_pair(a, b, confidence=0.99)
    assert [n for n, _ in pair.floors] == [loop, commit]
    se, t = math.sqrt(0.005), student_t.ppf(0.995, 4)
    ps = [float(2 * student_t.sf(math.log(r) / se, 4)) for r in (1.0, 2.0)]
    adjusted = reference.holm(ps)
    for (_, q), ratio, p, p_adj in zip(pair.floors, (1.0, 2.0), ps, adjusted):
        assert q.ratio == pytest.approx(ratio, rel=1e-12)
        assert q.ratio_ci == pytest.approx(
            (ratio * math.exp(-t * se), ratio * math.exp(t * se)), rel=1e-9
        )
        assert q.p_value == pytest.approx(p, rel=1e-9)
        assert q.p_adjusted == pytest.approx(p_adj, rel=1e-9)
        assert q.significant is (p_adj < 0.01)
    assert [q.significant for _, q in pair.floors] == [False, True]
    assert [n for n, _ in pair.floor_moved] == [commit]
