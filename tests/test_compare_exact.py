"""compare, value by value: every field of the comparisons, regression lines, coverage and
fleet rows checked against figures computed here without fsyncbench (literals worked out
by hand in the comments, numpy percentiles, scipy's Student t, tests/reference.py).

Most results here are summary-only (no raw samples) with the interval records a report
stores, written by hand: compare then uses those intervals as they are, so every standard
error, degree of freedom and estimate entering a test is a number chosen here."""

import dataclasses
import json
import math

import numpy as np
import pytest
import reference
import sampled
from factories import _result, even_slices, summary_at, summary_only
from scipy.stats import mannwhitneyu
from scipy.stats import t as student_t

from fsyncbench import api
from fsyncbench.errors import FsyncbenchError
from fsyncbench.measure import between, intervals, stats
from fsyncbench.model import EarlierRun, Interval, ResultVerdict, Verdict
from fsyncbench.report import compare, fleet, regression
from fsyncbench.report import tables as render
from fsyncbench.report.compare import RankTest

BLOCKS = intervals.METHOD_BLOCKS
NO_SLICES = "has no slices (schema 1 report or no raw samples)"
#: a small report for its host and verdict; the tests put their own results in it
BASE = sampled.report(n=200)


def iv(
    est: float,
    low: float | None,
    high: float | None,
    se: float | None,
    df: float,
    blocks: int = 10,
    method: str = BLOCKS,
    reason: str | None = None,
) -> Interval:
    return Interval(est, low, high, se, df, blocks, method, reason)


def given(
    name: str,
    p99: Interval | None,
    p50: Interval | None = None,
    kind: str = "commit",
    primitive: str = "fdatasync",
    **kw,
):
    """:func:`factories.summary_only`, fdatasync's unless told."""
    return summary_only(name, p99, p50, kind, primitive, **kw)


def report_of(*results, verdict: Verdict | None = None, floors=()):
    return dataclasses.replace(
        BASE, results=tuple(results), verdict=verdict or BASE.verdict, floors=tuple(floors)
    )


def sd_log(values) -> float:
    return float(np.std(np.log(values), ddof=1))


#: Rounds whose log p99s have a standard deviation of 0.05 around 100 ns and 120 ns
ROUNDS_A = tuple(100.0 * math.exp(0.05 * z) for z in (-1.0, 0.0, 1.0))
ROUNDS_B = tuple(120.0 * math.exp(0.1 * z) for z in (-1.0, 0.0, 1.0, 0.0, 0.0))


# --------------------------------------------------------------------------- checks


def test_check_comparable_messages_are_exact():
    a = sampled.report(n=200)
    with pytest.raises(FsyncbenchError) as e:
        compare.check_comparable([a], ["a.json"])
    assert str(e.value) == "compare needs at least two reports"
    other = dataclasses.replace(
        a,
        results=tuple(
            dataclasses.replace(r, kind="flush") if r.name == "wal/full" else r for r in a.results
        ),
    )
    with pytest.raises(FsyncbenchError) as e:
        compare.check_comparable([a, other], ["a.json", "b.json"])
    assert str(e.value) == (
        "wal/full is a commit workload in a.json but a flush workload in "
        "b.json: different workloads cannot be compared"
    )


def test_alpha_is_rounded_to_twelve_decimals():
    # 1 - 0.9500000000001 = 0.0499999999999: 0.05 at 12 decimals (0.0499999999999 at 13)
    assert compare.alpha(0.9500000000001) == 0.05
    assert compare.alpha(0.95) == 0.05


# --------------------------------------------------------------------------- result_interval


def test_result_interval_uses_the_rounds_of_a_multi_round_run():
    """Four rounds at levels 1.0, 1.15, 0.9, 1.05 (three slices of 200 each): the rounds
    disagree more than the slices, so the median's interval is the round jackknife's,
    as tests/reference.py computes it with the slice rounds."""
    rng = np.random.default_rng(7)
    levels = np.repeat([1.0, 1.15, 0.9, 1.05], 600)
    data = [int(v) for v in 100_000 * rng.lognormal(0.0, 0.3, 2400) * levels]
    counts, rounds = (200,) * 12, (0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3)
    r = _result(
        "flush",
        "write+fdatasync",
        "fdatasync",
        0,
        samples=data,
        slice_counts=counts,
        slice_rounds=rounds,
    )
    got = compare.result_interval(r, 50)
    est, se, df, bounds = reference.jackknife(data, counts, 50, rounds)
    assert got.method == intervals.METHOD_ROUNDS and got.blocks == 4
    assert got.estimate_ns == est == 100443.5
    assert got.bounds == pytest.approx(bounds, rel=1e-12)
    assert (got.se_log, got.df) == pytest.approx((se, df), rel=1e-12)
    # the rounds' interval is the wider one: the slices alone give a narrower one
    slices_only = reference.jackknife(data, counts, 50)
    assert slices_only[3][1] / slices_only[3][0] < bounds[1] / bounds[0]


def test_result_interval_returns_the_stored_records_of_a_summary_only_report():
    i50 = iv(100.0, 95.0, 105.0, 0.02, 9.0)
    i99 = iv(300.0, 250.0, 360.0, 0.09, 4.0, blocks=12, method=intervals.METHOD_ROUNDS)
    r = given("wal/full", i99, i50)
    assert compare.result_interval(r, 50) == i50
    assert compare.result_interval(r, 99) == i99


def test_result_interval_of_a_summary_without_records():
    """A report with bounds only: the interval is rebuilt from the summary's percentile and
    bounds, with no standard error, no degrees of freedom and no blocks."""
    base = summary_at(1000.0)
    both = dataclasses.replace(
        base,
        p50_ns=1000.0,
        p99_ns=1500.0,
        p50_ci_ns=(980.0, 1020.0),
        p99_ci_ns=(1350.0, 1650.0),
        ci_method="order-statistic",
        p50_interval=None,
        p99_interval=None,
    )
    r = dataclasses.replace(_result("commit", "wal/full", "fdatasync", 1000.0), summary=both)
    assert r.samples_ns == ()
    assert compare.result_interval(r, 50) == Interval(
        1000.0, 980.0, 1020.0, None, 0, 0, "order-statistic", None
    )
    assert compare.result_interval(r, 99) == Interval(
        1500.0, 1350.0, 1650.0, None, 0, 0, "order-statistic", None
    )
    # p99 without bounds: none, and why
    only50 = dataclasses.replace(r, summary=dataclasses.replace(both, p99_ci_ns=None))
    assert compare.result_interval(only50, 50) == Interval(
        1000.0, 980.0, 1020.0, None, 0, 0, "order-statistic", None
    )
    assert compare.result_interval(only50, 99) == Interval(
        1500.0, None, None, None, 0, 0, "order-statistic", "no raw samples"
    )
    # p50 without bounds, p99 with
    only99 = dataclasses.replace(r, summary=dataclasses.replace(both, p50_ci_ns=None))
    assert compare.result_interval(only99, 50) == Interval(
        1000.0, None, None, None, 0, 0, "order-statistic", "no raw samples"
    )
    assert compare.result_interval(only99, 99) == Interval(
        1500.0, 1350.0, 1650.0, None, 0, 0, "order-statistic", None
    )


# --------------------------------------------------------------------------- compare_quantile


def test_compare_quantile_every_field_of_the_pair_basis():
    """A: p99 100 ns, rounds' sd(log) 0.05 (3 rounds, 2 df), own SE 0.03; B: 120 ns, rounds'
    sd(log) 0.1/sqrt(2)... as computed, 5 rounds (4 df). Each run as uncertain as one of its
    rounds: SE(log B/A) = sqrt(w_A + w_B), Welch-Satterthwaite df."""
    ia, ib = iv(100.0, 90.0, 111.0, 0.03, 9.0), iv(120.0, 100.0, 140.0, 0.04, 4.0)
    a = given("wal/full", ia, rounds50=ROUNDS_A, rounds99=ROUNDS_A)
    b = given("wal/full", ib, rounds50=ROUNDS_B, rounds99=ROUNDS_B)
    q = compare.compare_quantile(a, b, 99)
    wa, wb = sd_log(ROUNDS_A) ** 2, sd_log(ROUNDS_B) ** 2
    assert wa == pytest.approx(0.05**2) and wb == pytest.approx(0.005)
    se = math.sqrt(wa + wb)
    df = (wa + wb) ** 2 / (wa**2 / 2 + wb**2 / 4)
    d = math.log(1.2)
    t = student_t.ppf(0.975, df)
    assert (q.percentile, q.a_ns, q.a_ci_ns, q.b_ns, q.b_ci_ns) == (
        99,
        100.0,
        (90.0, 111.0),
        120.0,
        (100.0, 140.0),
    )
    assert (q.a_interval, q.b_interval) == (ia, ib)
    assert (q.basis, q.baseline_runs, q.tau_log) == ("pair", 1, None)
    assert q.baseline_ns == pytest.approx(100.0, rel=1e-12)
    assert q.ratio == pytest.approx(1.2, rel=1e-12)
    assert q.se_log == pytest.approx(se, rel=1e-12) and q.df == pytest.approx(df, rel=1e-12)
    assert q.p_value == pytest.approx(2 * student_t.sf(d / se, df), rel=1e-9)
    assert q.ratio_ci == pytest.approx((math.exp(d - t * se), math.exp(d + t * se)), rel=1e-9)
    assert (q.significant, q.p_adjusted, q.reason) == (None, None, None)


def test_an_own_se_above_the_rounds_spread_is_the_runs():
    """A's jackknife SE (0.08) above its rounds' spread (0.05): w_A = 0.08^2."""
    a = given("wal/full", iv(100.0, 80.0, 125.0, 0.08, 9.0), rounds99=ROUNDS_A)
    b = given("wal/full", iv(120.0, 100.0, 140.0, 0.04, 4.0), rounds99=ROUNDS_B)
    q = compare.compare_quantile(a, b, 99)
    assert q.se_log == pytest.approx(math.sqrt(0.08**2 + 0.005), rel=1e-9)


def test_compare_quantile_history_basis_by_hand():
    """A recorded 3 earlier runs (p99 90, 110, 105 ns, each 3 rounds of sd 0.05): 4 baseline
    runs, the history basis; without other statistics (compare_quantile alone, no prior)
    the classic prediction, mean +- t(3) sd sqrt(1 + 1/4)."""
    earlier = tuple(
        EarlierRun(f"r{i}.json", f"2026-01-0{i + 1}T00:00:00Z", 50.0, p, None, None, 0.05, 0.05, 3)
        for i, p in enumerate((90.0, 110.0, 105.0))
    )
    a = given("wal/full", iv(100.0, 90.0, 111.0, 0.03, 9.0), rounds99=ROUNDS_A, earlier=earlier)
    b = given("wal/full", iv(180.0, 150.0, 210.0, 0.04, 4.0), rounds99=ROUNDS_B)
    q = compare.compare_quantile(a, b, 99)
    ys = np.log([90.0, 110.0, 105.0, 100.0])
    var = float(np.var(ys, ddof=1)) * 1.25
    # B's rounds (sd 0.1 of logs, 5) spread further than the baseline's (0.05 each): the
    # excess of its round variance is added, df by Welch-Satterthwaite
    w_b = float(np.var(np.log(ROUNDS_B), ddof=1))
    extra = w_b - 0.05**2
    df = (var + extra) ** 2 / (var**2 / 3 + extra**2 / 4)
    se = math.sqrt(var + extra)
    d = math.log(180.0) - float(ys.mean())
    assert (q.basis, q.baseline_runs) == ("history", 4)
    assert q.baseline_ns == pytest.approx(math.exp(float(ys.mean())), rel=1e-12)
    assert q.ratio == pytest.approx(180.0 / q.baseline_ns, rel=1e-12)
    assert q.a_ns == 100.0  # the table still shows A's own figure
    assert q.se_log == pytest.approx(se, rel=1e-12) and q.df == pytest.approx(df, rel=1e-12)
    assert q.p_value == pytest.approx(2 * student_t.sf(d / se, df), rel=1e-9)


def test_compare_pair_moderates_every_statistic_with_the_tables_prior():
    """Four configurations, each with 3 earlier runs: the prior is fit_prior of every p50's
    and p99's history ratio, and each statistic's test is between.shift with it."""
    names = ("wal/full", "wal/normal", "delete/full", "truncate/full")

    def result(name, scale, runs, seed):
        local = np.random.default_rng(seed)
        fig = [100.0 * scale * math.exp(local.normal(0, 0.05)) for _ in range(runs)]
        rounds = tuple(fig[-1] * math.exp(0.04 * z) for z in (-1.0, 0.0, 1.0, 0.5, -0.5))
        earlier = tuple(
            EarlierRun(f"e{i}", f"2026-01-0{i + 1}T00:00:00Z", f, f, None, None, 0.04, 0.04, 5)
            for i, f in enumerate(fig[:-1])
        )
        i = iv(fig[-1], fig[-1] * 0.9, fig[-1] * 1.1, 0.02, 9.0)
        return given(name, i, i, rounds50=rounds, rounds99=rounds, earlier=earlier)

    a = report_of(*(result(n, 1.0, 4, 10 + k) for k, n in enumerate(names)))
    b = report_of(*(result(n, 1.0 + k, 1, 20 + k) for k, n in enumerate(names)))
    pair = compare.compare_pair(a, b)
    ratios: list = [
        between.history_ratio(compare.baseline_figures(r, pct))
        for r in a.results
        for pct in (50, 99)
    ]
    prior = between.fit_prior(ratios)
    assert prior is not None
    for c, ra, rb in zip(pair.configs, a.results, b.results):
        for q, pct in ((c.p50, 50), (c.p99, 99)):
            want = between.shift(
                compare.baseline_figures(ra, pct), compare.run_figure(rb, pct), 0.95, prior
            )
            assert q.basis == "history" and q.baseline_runs == 4
            assert (q.ratio, q.se_log, q.df, q.p_value) == (
                want.ratio,
                want.se_log,
                want.df,
                want.p_value,
            )
    # delete/full (3x) and truncate/full (4x) are significant; wal/full (1x) is not
    assert [c.p50.significant for c in pair.configs] == [False, True, True, True]


def test_the_prior_is_learnt_from_the_gated_statistics_only():
    """The issue's flip: changing only the history of rows the gate does not check moved a
    gated statistic's verdict. With --gate naming two configurations, the other two rows'
    earlier runs (calm, or 3x apart) leave the gated statistics' tests exactly as they were."""
    names = ("wal/full", "wal/normal", "delete/full", "truncate/full")

    def result(name, runs, seed, wild=False):
        local = np.random.default_rng(seed)
        sd = 1.1 if wild else 0.05
        fig = [100.0 * math.exp(local.normal(0, sd)) for _ in range(runs)]
        rounds = tuple(fig[-1] * math.exp(0.04 * z) for z in (-1.0, 0.0, 1.0, 0.5, -0.5))
        earlier = tuple(
            EarlierRun(f"e{i}", f"2026-01-0{i + 1}T00:00:00Z", f, f, None, None, 0.04, 0.04, 5)
            for i, f in enumerate(fig[:-1])
        )
        i = iv(fig[-1], fig[-1] * 0.9, fig[-1] * 1.1, 0.02, 9.0)
        return given(name, i, i, rounds50=rounds, rounds99=rounds, earlier=earlier)

    gate = ["wal/full", "wal/normal"]
    b = report_of(*(result(n, 1, 20 + k) for k, n in enumerate(names)))
    calm = report_of(*(result(n, 5, 10 + k) for k, n in enumerate(names)))
    wild = report_of(*(result(n, 5, 10 + k, wild=n not in gate) for k, n in enumerate(names)))
    tests = [
        [
            (q.se_log, q.p_value)
            for c in compare.compare_pair(a, b, names=gate).configs[:2]
            for q in (c.p50, c.p99)
        ]
        for a in (calm, wild)
    ]
    assert tests[0] == tests[1]
    # learnt from every row (no --gate), the unchecked rows' history does move them
    every = [
        [
            (q.se_log, q.p_value)
            for c in compare.compare_pair(a, b).configs[:2]
            for q in (c.p50, c.p99)
        ]
        for a in (calm, wild)
    ]
    assert every[0] != every[1]


def test_compare_quantile_without_rounds_says_what_would_settle_it():
    tested = iv(100.0, 90.0, 111.0, 0.03, 9.0)
    q = compare.compare_quantile(
        given("wal/full", tested, rounds99=ROUNDS_A), given("wal/full", None, p99_ns=130.0), 99
    )
    assert q.reason == (
        "B measured fewer than 3 rounds, so its spread from run to run is unknown: measure "
        "with --rounds 3 or more (the default), or keep 3 earlier runs in the baseline's "
        "report directory"
    )
    assert (q.b_ns, q.b_ci_ns, q.p_value, q.significant) == (130.0, None, None, None)
    assert q.ratio == pytest.approx(1.3, rel=1e-12)
    q = compare.compare_quantile(given("wal/full", tested), given("wal/full", tested), 99)
    assert q.reason.startswith("the baseline and B measured fewer than 3 rounds")


def test_compare_quantile_with_a_percentile_of_zero():
    zero = iv(0.0, 0.0, 0.0, 0.0, 5.0)
    hundred = iv(100.0, 100.0, 100.0, 0.0, 5.0)
    for a, b in ((zero, hundred), (hundred, zero)):
        q = compare.compare_quantile(
            given("wal/full", a, rounds99=ROUNDS_A), given("wal/full", b, rounds99=ROUNDS_B), 99
        )
        assert q.reason == "a figure of zero (the clock could not time it)"
        assert (q.p_value, q.ratio_ci, q.significant, q.se_log) == (None, None, None, None)


def test_identical_rounds_are_never_more_precise_than_a_tick():
    """Every round gave 2 ns and 3 ns (no spread, SE 0): one nanosecond of tick each side,
    SE(log) at least sqrt(2) x 1/2 of the larger relative tick: a 1.5x change of one tick
    is not significant."""
    exact_a = iv(2.0, 2.0, 2.0, 0.0, 5.0)
    exact_b = iv(3.0, 3.0, 3.0, 0.0, 5.0)
    q = compare.compare_quantile(
        given("wal/full", exact_a, rounds99=(2.0, 2.0, 2.0)),
        given("wal/full", exact_b, rounds99=(3.0, 3.0, 3.0)),
        99,
    )
    assert q.se_log >= math.sqrt(2) * 0.5 and q.p_value > 0.05


# --------------------------------------------------------------------------- rank_test


def test_rank_test_by_hand():
    """A = [1], B = [2]: U_B = 1 (the one pair has B > A), P(B > A) = 1; A = [1, 3], B = [2]:
    ranks 1, 3 | 2, U_B = 2 - 1 = 1, P = 1/2; A = [1, 2, 2, 4], B = [2, 3, 5]: ranks 1, 3,
    3, 6 | 3, 5, 7, U_B = 15 - 6 = 9 (scipy's too), P = 9/12. No p-value: a description."""
    assert compare.rank_test([1.0], [2.0]) == RankTest(1.0, 1.0)
    assert compare.rank_test([2.0], [1.0]) == RankTest(0.0, 0.0)
    assert compare.rank_test([5], [5]) == RankTest(0.5, 0.5)
    assert compare.rank_test([1, 3], [2]) == RankTest(1.0, 0.5)
    r = compare.rank_test([1, 2, 2, 4], [2, 3, 5])
    u = mannwhitneyu([2, 3, 5], [1, 2, 2, 4], method="asymptotic", use_continuity=True)
    assert r == RankTest(9.0, 9 / 12) and u.statistic == 9.0
    assert not hasattr(r, "p_value")


def test_rank_test_compares_values_as_float64():
    """The times are compared as float64: 2^70 + 1 and 2^70 are the same float64: a tie."""
    assert compare.rank_test([2**70 + 1], [2.0**70]) == RankTest(0.5, 0.5)


# --------------------------------------------------------------------------- compare_pair


def _floor(name: str, median: float, seed: int):
    return sampled.result(
        "floor", name, "none", median, n=600, seed=seed, slice_counts=even_slices(600, 12)
    )


def _verdict(path: str, **configs: str) -> Verdict:
    return Verdict(
        path,
        "test",
        tuple(ResultVerdict(k.replace("_", "/"), v, True, "test") for k, v in configs.items()),
    )


def test_compare_pair_every_field_at_90_percent():
    """B lacks wal/off, adds delete/full, syncs wal/full with F_FULLFSYNC and took 1,500
    samples per result to A's 2,000; the floors both measured are compared as their own
    Holm family. Every figure from numpy percentiles and tests/reference.py at 90 %."""
    a = sampled.report(1.0, seed=0, n=2000, rounds=5)
    b0 = sampled.report(1.3, seed=100, n=1500, rounds=5)
    extra = sampled.commit("DELETE", "FULL", 1_200_000, seed=9, n=1500, rounds=5)
    b_results = tuple(
        dataclasses.replace(r, primitive="F_FULLFSYNC") if r.name == "wal/full" else r
        for r in b0.results
        if r.name != "wal/off"
    ) + (extra,)
    a = dataclasses.replace(
        a,
        verdict=_verdict("honest_flush", wal_full="honest_flush", wal_normal="volatile_cache"),
        floors=(
            _floor(stats.FLOOR_LOOP, 40, 1),
            _floor(stats.FLOOR_COMMIT, 3000, 2),
            _floor(stats.FLOOR_WRITE, 2000, 3),
        ),
    )
    b = dataclasses.replace(
        b0,
        results=b_results,
        verdict=_verdict("no_flush", wal_normal="no_flush", wal_full="unverifiable"),
        floors=(_floor(stats.FLOOR_WRITE, 2600, 13), _floor(stats.FLOOR_COMMIT, 3100, 12)),
    )
    pair = compare.compare_pair(a, b, confidence=0.9)

    assert pair.only_a == ("wal/off",) and pair.only_b == ("delete/full",)
    assert pair.confidence == 0.9 and pair.adjustment == "Holm"
    assert [(c.name, c.kind, c.primitive_a, c.primitive_b, c.n_a, c.n_b) for c in pair.configs] == [
        ("write (no sync)", "write", "none", "none", 2000, 1500),
        ("write+fdatasync", "flush", "fdatasync", "fdatasync", 2000, 1500),
        ("wal/normal", "commit", "fdatasync", "fdatasync", 2000, 1500),
        ("wal/full", "commit", "fdatasync", "F_FULLFSYNC", 2000, 1500),
    ]
    assert [(c.verdict_a, c.verdict_b) for c in pair.configs] == [
        (None, None),
        (None, None),
        ("volatile_cache", "no_flush"),
        ("honest_flush", "unverifiable"),
    ]

    by_name = {r.name: r for r in b.results}
    p_values = []
    for c in pair.configs:
        ra, rb = next(r for r in a.results if r.name == c.name), by_name[c.name]
        for q, pct in ((c.p50, 50), (c.p99, 99)):
            assert q.percentile == pct
            ja = reference.jackknife(ra.samples_ns, ra.slice_counts, pct, ra.slice_rounds, 0.9)
            jb = reference.jackknife(rb.samples_ns, rb.slice_counts, pct, rb.slice_rounds, 0.9)
            assert q.a_ci_ns == pytest.approx(ja[3], rel=1e-9)
            assert q.b_ci_ns == pytest.approx(jb[3], rel=1e-9)
            p_values.append(reference.pair_p(ra, rb, pct))
    adjusted = reference.holm(p_values)
    assert [q.p_adjusted for c in pair.configs for q in (c.p50, c.p99)] == pytest.approx(
        adjusted, rel=1e-6
    )
    assert [q.significant for c in pair.configs for q in (c.p50, c.p99)] == [
        p < 0.1 for p in adjusted
    ]

    # the floors: A's order, only those both measured; one round each, so their ratios
    # only ("cannot tell" whether they changed, tested or not)
    assert [n for n, _ in pair.floors] == [stats.FLOOR_COMMIT, stats.FLOOR_WRITE]
    fb = {f.name: f for f in b.floors}
    for (name, q), fa in zip(pair.floors, a.floors[1:]):
        x, y = fa.samples_ns, fb[name].samples_ns
        assert q.percentile == 50 and q.p_value is None and q.significant is None
        assert q.ratio == pytest.approx(np.percentile(y, 50) / np.percentile(x, 50), rel=1e-12)
    # write floor 2000 -> 2600 ns (1.3x) moved beyond 1.25; commit 3000 -> 3100 did not
    assert [n for n, _ in pair.floor_moved] == [stats.FLOOR_WRITE]


# --------------------------------------------------------------------------- regressions

A99 = iv(100.0, 90.0, 111.0, 0.03, 9.0)
#: three rounds 0.05 apart in log: w = 0.0025 on 2 df
SPREAD = (-0.05, 0.0, 0.05)


def _at(name: str, est: float, kind: str = "commit", primitive: str = "fdatasync", rounds=True):
    """A result whose p50 and p99 are both ``est`` with rounds 0.05 apart (None: none)."""
    i = iv(est, est * 0.9, est * 1.1, 0.01, 9.0)
    r = tuple(est * math.exp(z) for z in SPREAD) if rounds else ()
    return given(name, i, i, kind=kind, primitive=primitive, rounds50=r, rounds99=r)


def _gate_pair(confidence: float = 0.95):
    """A against B, A's order: write baseline (not checked by default) and wal/off (checked,
    no per-commit sync) 3x slower, wal/normal without rounds in B, wal/full 1.5x and write+fdatasync 1.25x
    slower; every tested statistic's SE(log) sqrt(2 x 0.0025), df 4."""
    a = report_of(
        _at("write (no sync)", 100.0, "write", "none"),
        _at("wal/off", 100.0, primitive="none"),
        _at("wal/normal", 100.0),
        _at("wal/full", 100.0),
        _at("write+fdatasync", 100.0, "flush"),
    )
    b = report_of(
        _at("write (no sync)", 300.0, "write", "none"),
        _at("wal/off", 300.0, primitive="none"),
        _at("wal/normal", 150.0, rounds=False),
        _at("wal/full", 150.0),
        _at("write+fdatasync", 125.0, "flush"),
    )
    return compare.compare_pair(a, b, confidence)


def _p(ratio: float) -> float:
    return float(2 * student_t.sf(math.log(ratio) / math.sqrt(0.005), 4.0))


def test_regressions_by_default_and_their_exact_lines():
    """The table: Holm over the 8 tested statistics, two-sided (wal/normal has no rounds in
    B). The gate: one-sided, Holm over the 6 it checks and can test (p50 and p99 of wal/off,
    3x, wal/full, 1.5x, and of write+fdatasync, 1.25x); a regression is significant and
    slower by more than 20 %."""
    pair = _gate_pair()
    ps = [_p(3.0), _p(3.0), _p(3.0), _p(3.0), _p(1.5), _p(1.5), _p(1.25), _p(1.25)]
    adj = reference.holm(ps)
    assert [q.p_adjusted for c in pair.configs for q in (c.p50, c.p99) if q.p_value] == (
        pytest.approx(adj, rel=1e-9)
    )
    assert [c.p99.significant for c in pair.configs] == [True, True, None, True, False]
    gate = reference.holm(
        [_p(3.0) / 2] * 2 + [_p(1.5) / 2, _p(1.5) / 2, _p(1.25) / 2, _p(1.25) / 2]
    )
    got = regression.regressions(pair, 20, "before.json", "after.json")
    # write+fdatasync's 1.25x: not significant in the two-sided table over 8, but the gate's
    # one-sided question over the 6 it checks finds it (adjusted 2 x p/2 = p = 0.034)
    assert [(r.name, r.statistic.percentile) for r in got] == [
        ("wal/off", 50),
        ("wal/off", 99),
        ("wal/full", 50),
        ("wal/full", 99),
        ("write+fdatasync", 50),
        ("write+fdatasync", 99),
    ]
    assert gate[4] == pytest.approx(_p(1.25)) and gate[4] < 0.05
    r = got[2]
    assert (r.baseline, r.candidate, r.limit_pct) == ("before.json", "after.json", 20)
    assert r.statistic == pair.configs[3].p50 and r.statistic.ratio == pytest.approx(1.5)
    assert r.p_adjusted == pytest.approx(gate[2], rel=1e-9)
    # named: the no-sync write is checked too, and only the named
    named = regression.regressions(pair, 20, "A", "B", ["WAL/OFF", "write (no sync)"])
    assert [(r.name, r.statistic.percentile) for r in named] == [
        ("write (no sync)", 50),
        ("write (no sync)", 99),
        ("wal/off", 50),
        ("wal/off", 99),
    ]
    assert [r.p_adjusted for r in named] == pytest.approx(
        reference.holm([_p(3.0) / 2] * 4), rel=1e-9
    )
    # the limit is a bound on the estimate: 1.25x is not beyond 25 %, 1.5x not beyond 50 %
    assert {r.name for r in regression.regressions(pair, 25, "A", "B")} == {"wal/full", "wal/off"}
    assert {r.name for r in regression.regressions(pair, 50, "A", "B")} == {"wal/off"}


def test_the_gate_names_every_statistic_it_checks_and_what_it_cannot_tell():
    """Every gated statistic has an outcome: wal/normal (no rounds in B) cannot tell with the
    reason; the tested ones a detectable slowdown; nothing passes in silence."""
    pair = _gate_pair()
    why = (
        "B measured fewer than 3 rounds, so its spread from run to run is unknown: measure "
        "with --rounds 3 or more (the default), or keep 3 earlier runs in the baseline's "
        "report directory"
    )
    gate = regression.check([("B", pair)], 20, "A")
    assert [(s.name, s.percentile) for s in gate.statistics] == [
        (n, p) for n in ("wal/off", "wal/normal", "wal/full", "write+fdatasync") for p in (50, 99)
    ]
    assert [s.reason for s in gate.untold if s.name == "wal/normal"] == [why, why]
    tested = [s for s in gate.statistics if s.name != "wal/normal"]
    assert all(s.detectable_ratio is not None and s.detectable_ratio > 1 for s in tested)
    assert len(regression.check([("B", pair)], 20, "A", ["WAL/OFF", "wal/normal"]).statistics) == 4
    assert len(regression.check([("B", pair)], 20, "A", ["delete/full"]).statistics) == 0
    bare = dataclasses.replace(
        pair,
        configs=tuple(
            dataclasses.replace(c, p99=dataclasses.replace(c.p99, reason=None))
            for c in pair.configs
        ),
    )
    assert regression.check([("B", bare)], 20, "A").untold[-1].reason == "no test"
    assert (
        regression.check([("B", dataclasses.replace(pair, configs=()))], 20, "A").statistics == ()
    )


def test_a_statistic_whose_test_could_not_see_the_limit_cannot_tell_never_passes():
    """Each tested statistic's SE(log) is sqrt(0.005) on 4 df: over the family of 2 (wal/full
    alone) a lone regression is held to 0.025, and the slowdown caught 4 times in 5 is
    exp((t4(0.975) + t4(0.8)) 0.0707) = 1.49x. A gate at 20 %: a p99 not slower than A is
    'cannot tell', never a pass; at 60 %: it passes."""
    a = report_of(_at("wal/full", 100.0))
    b = report_of(_at("wal/full", 101.0))
    pair = compare.compare_pair(a, b)
    want = math.exp((student_t.ppf(0.975, 4) + student_t.ppf(0.8, 4)) * math.sqrt(0.005))
    gate = regression.check([("B", pair)], 20, "A")
    assert [s.detectable_ratio for s in gate.statistics] == pytest.approx([want, want])
    assert {s.outcome for s in gate.statistics} == {regression.CANNOT_TELL}
    assert "not one of 1.20x" in (gate.untold[0].reason or "")
    wide = regression.check([("B", pair)], 60, "A")
    assert {s.outcome for s in wide.statistics} == {regression.PASSED}
    # the table shows the same detectable slowdown
    assert pair.configs[0].p99.detectable_ratio == pytest.approx(want)
    text = " ".join(render.render_compare(a, b, pair, ("A", "B")).split())
    assert f"could each have caught a slowdown of {want:.2f}x to {want:.2f}x" in text


def test_a_configuration_missing_from_b_cannot_tell():
    """The issue's silent pass: B lacking wal/full and delete/full exited 0 with nothing
    untested. Now each is two 'cannot tell' statistics, exit 4, named in the JSON."""
    a = report_of(_at("wal/full", 100.0), _at("delete/full", 100.0), _at("wal/normal", 100.0))
    b = report_of(_at("wal/normal", 100.0))
    c = api.compare([a, b], fail_on_regression=100)
    assert c.gate is not None
    missing = [s for s in c.gate.untold if "missing from" in (s.reason or "")]
    assert [(s.name, s.percentile) for s in missing] == [
        ("wal/full", 50),
        ("wal/full", 99),
        ("delete/full", 50),
        ("delete/full", 99),
    ]
    assert c.not_checked and not c.regressions  # the CLI's exit 4
    data = json.loads(api.render(c, "json"))["regression_check"]
    assert data["verdict"] == "cannot tell" and data["cannot_tell"] >= 4
    assert data["slower"] == []
    slow = report_of(_at("wal/normal", 300.0))
    told = json.loads(api.render(api.compare([a, slow], fail_on_regression=100), "json"))
    assert told["regression_check"]["slower"] == ["wal/normal p50", "wal/normal p99"]


def test_a_tenfold_slowdown_of_a_commit_without_a_sync_fails_the_gate():
    """The issue's other silent pass: wal/normal (primitive none) 10x slower showed 'yes,
    slower' and exited 0, skipped by its kind. It is gated by default, labelled."""
    a = report_of(_at("wal/normal", 100.0, primitive="none"), _at("wal/full", 100.0))
    b = report_of(_at("wal/normal", 1000.0, primitive="none"), _at("wal/full", 100.0))
    c = api.compare([a, b], fail_on_regression=20)
    assert [(r.name, r.statistic.percentile) for r in c.regressions] == [
        ("wal/normal", 50),
        ("wal/normal", 99),
    ]
    assert c.gate is not None
    assert {s.label for s in c.gate.statistics if s.name == "wal/normal"} == {regression.NO_SYNC}


def test_runs_measured_with_other_options_cannot_tell():
    """B measured with --rounds 3 against A's default: every statistic cannot tell, naming it."""
    a = dataclasses.replace(
        report_of(_at("wal/full", 100.0)), command_line=("fsyncbench", "run", "/x")
    )
    b = dataclasses.replace(
        report_of(_at("wal/full", 300.0)),
        command_line=("fsyncbench", "run", "/x", "--rounds", "3"),
    )
    assert regression.run_differences(a, b) == ["--rounds: A default, B 3"]
    c = api.compare([a, b], fail_on_regression=20)
    assert not c.regressions and c.gate is not None
    assert all("--rounds: A default, B 3" in (s.reason or "") for s in c.gate.statistics)
    same = dataclasses.replace(b, command_line=("fsyncbench", "run", "/x", "--rounds=3"))
    assert regression.run_differences(b, same) == []


def test_a_write_baseline_is_skipped_by_its_kind_alone():
    """A hand-edited report naming the no-sync write baseline's primitive "write": still the
    write baseline, checked only when named."""
    a = report_of(_at("write (no sync)", 100.0, "write", "write"))
    b = report_of(_at("write (no sync)", 300.0, "write", "write"))
    pair = compare.compare_pair(a, b)
    assert pair.configs[0].p99.significant is True
    assert regression.regressions(pair, 20, "A", "B") == []
    assert regression.check([("B", pair)], 20, "A").statistics == ()
    assert len(regression.regressions(pair, 20, "A", "B", ["write (no sync)"])) == 2
    assert len(regression.check([("B", pair)], 20, "A", ["write (no sync)"]).statistics) == 2


def test_a_faster_statistic_is_never_a_regression():
    a = report_of(_at("wal/full", 300.0))
    b = report_of(_at("wal/full", 100.0))
    pair = compare.compare_pair(a, b)
    assert pair.configs[0].p50.significant is True  # significantly faster
    assert regression.regressions(pair, 0, "A", "B") == []


def test_boundaries_of_the_rule():
    """One configuration, its p99 not slower: the gate's family is its two statistics, the
    p50 one-sided half its two-sided p; Holm over 2 doubles it back. An adjusted p of
    exactly alpha is not significant; a ratio of exactly 1 + limit is not beyond it; a
    faster statistic is never a regression however small its p (hand-made comparisons)."""
    pair = _gate_pair()
    full = pair.configs[3]

    def with_(p50_p, ratio, p99_ratio=0.9):
        c = dataclasses.replace(
            full,
            p50=dataclasses.replace(full.p50, p_value=p50_p, ratio=ratio),
            p99=dataclasses.replace(full.p99, p_value=1.0, ratio=p99_ratio),
        )
        return dataclasses.replace(pair, configs=(c,))

    # p50 two-sided 0.05: one-sided 0.025, x 2 = 0.05, not below 0.05; 0.0499 is
    assert regression.regressions(with_(0.05, 2.0), 20, "A", "B") == []
    got = regression.regressions(with_(0.0499, 2.0), 20, "A", "B")
    assert [(r.statistic.percentile, r.p_adjusted) for r in got] == [(50, pytest.approx(0.0499))]
    # ratio 1.2 is not more than 20 % slower; 1.2000001 is
    assert regression.regressions(with_(1e-9, 1.2), 20, "A", "B") == []
    assert len(regression.regressions(with_(1e-9, 1.2000001), 20, "A", "B")) == 1
    # faster, however significant: one-sided p near 1
    assert regression.regressions(with_(1e-9, 0.5), 0, "A", "B") == []
    # untested statistics are skipped (and leave the family), the others still checked
    untested = dataclasses.replace(
        full, name="wal/bad", p50=dataclasses.replace(full.p50, p_value=None)
    )
    got = regression.regressions(dataclasses.replace(pair, configs=(untested, full)), 20, "A", "B")
    assert [(r.name, r.statistic.percentile) for r in got] == [
        ("wal/bad", 99),
        ("wal/full", 50),
        ("wal/full", 99),
    ]


# --------------------------------------------------------------------------- fleet


def _named(names_kinds):
    return report_of(*(given(n, A99, kind=k, primitive=p) for n, k, p in names_kinds))


WRITE = ("write (no sync)", "write", "none")
FLUSH = ("write+fdatasync", "flush", "fdatasync")
OFF = ("wal/off", "commit", "none")
NORMAL = ("wal/normal", "commit", "fdatasync")


def test_common_names_in_the_first_reports_order():
    a, b = _named([WRITE, FLUSH, OFF]), _named([OFF, NORMAL, WRITE, FLUSH])
    assert compare.common_names([a, b]) == ["write (no sync)", "write+fdatasync", "wal/off"]
    assert compare.common_names([b, a]) == ["wal/off", "write (no sync)", "write+fdatasync"]


def test_fleet_config_choices():
    # no wal/full: the first syncing commit, not wal/off (synchronous=OFF), not the flush
    reps = [_named([WRITE, FLUSH, OFF, NORMAL]), _named([NORMAL, OFF, FLUSH, WRITE])]
    assert fleet.fleet_config(reps, None) == "wal/normal"
    # the kind and primitive are the first report's
    other = _named([WRITE, FLUSH, OFF, ("wal/normal", "commit", "none")])
    assert fleet.fleet_config([reps[0], other], None) == "wal/normal"
    assert fleet.fleet_config([other, reps[0]], None) == "write+fdatasync"
    # no syncing commit: the flush
    assert fleet.fleet_config([_named([WRITE, OFF, FLUSH])] * 2, None) == "write+fdatasync"
    # nothing syncs: the first shared name
    assert fleet.fleet_config([_named([WRITE, OFF])] * 2, None) == "write (no sync)"
    with pytest.raises(FsyncbenchError) as e:
        fleet.fleet_config([_named([WRITE]), _named([OFF])], None)
    assert str(e.value) == "the reports have no configuration in common"


def test_fleet_config_refusal_lists_the_shared_names():
    reps = [_named([WRITE, FLUSH, OFF]), _named([OFF, WRITE, FLUSH])]
    with pytest.raises(FsyncbenchError) as e:
        fleet.fleet_config(reps, "delete/full")
    assert str(e.value) == (
        "configuration 'delete/full' is not in every report (in all of "
        "them: write (no sync), write+fdatasync, wal/off)"
    )
    with pytest.raises(FsyncbenchError) as e:
        fleet.fleet_config([_named([WRITE]), _named([OFF])], "wal/off")
    assert str(e.value) == ("configuration 'wal/off' is not in every report (in all of them: none)")


def test_fleet_rows_carry_each_reports_own_result_and_verdicts():
    def rep(p99_wal_normal: float, path: str, normal: str, durable: bool):
        verdict = Verdict(
            path,
            "test",
            (
                ResultVerdict("write+fdatasync", "honest_flush", None, "test"),
                ResultVerdict("wal/normal", normal, durable, "test"),
            ),
        )
        return report_of(
            given("write (no sync)", A99, kind="write", primitive="none"),
            given("wal/normal", iv(p99_wal_normal, None, None, None, 0.0)),
            verdict=verdict,
        )

    reps = [
        rep(300.0, "no_flush", "no_flush", False),
        rep(100.0, "volatile_cache", "volatile_cache", True),
        rep(200.0, "unverifiable", "unverifiable", False),
    ]
    rows = fleet.fleet(reps, ["x", "y", "z"], "wal/normal")
    assert [(r.label, r.path_verdict, r.config_verdict, r.config_durable) for r in rows] == [
        ("y", "volatile_cache", "volatile_cache", True),
        ("z", "unverifiable", "unverifiable", False),
        ("x", "no_flush", "no_flush", False),
    ]
    assert [r.report for r in rows] == [reps[1], reps[2], reps[0]]
    assert [r.result for r in rows] == [reps[1].results[1], reps[2].results[1], reps[0].results[1]]
    # a configuration without a verdict of its own: none shown
    rows = fleet.fleet(reps, ["x", "y", "z"], "write (no sync)")
    assert [
        (r.label, r.result.name, r.path_verdict, r.config_verdict, r.config_durable) for r in rows
    ] == [
        ("x", "write (no sync)", "no_flush", None, None),
        ("y", "write (no sync)", "volatile_cache", None, None),
        ("z", "write (no sync)", "unverifiable", None, None),
    ]


def test_compare_help_says_what_the_gate_checks():
    """--help said the gate checked p99 only; it checks p50 and p99, and says when it
    cannot tell."""
    import argparse

    from fsyncbench.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    text = " ".join(sub.choices["compare"].format_help().split())
    assert "p50 or p99" in text and "exit 4 (cannot tell)" in text and "--gate" in text


def test_wal_normal_syncs_at_checkpoints_only_and_is_labelled_so():
    a = report_of(_at("wal/normal", 100.0, primitive="fdatasync (checkpoints only)"))
    b = report_of(_at("wal/normal", 100.0, primitive="fdatasync (checkpoints only)"))
    gate = regression.check([("B", compare.compare_pair(a, b))], 20, "A")
    assert {s.label for s in gate.statistics} == {regression.NO_SYNC}


def test_a_report_against_itself_cannot_tell_and_an_infinite_limit_is_refused():
    a = report_of(_at("wal/full", 100.0))
    c = api.compare([a, a], fail_on_regression=600)
    assert c.gate is not None and not c.regressions and c.not_checked
    assert all("is the same run as" in (s.reason or "") for s in c.gate.statistics)
    for bad in ("inf", float("inf"), "nan"):
        with pytest.raises(FsyncbenchError, match="finite number"):
            api.compare([a, a], fail_on_regression=bad)
