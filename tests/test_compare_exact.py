"""compare, value by value: every field of the comparisons, regression lines, coverage and
fleet rows checked against figures computed here without fsyncbench (literals worked out
by hand in the comments, numpy percentiles, scipy's Student t, tests/reference.py).

Most results here are summary-only (no raw samples) with the interval records a report
stores, written by hand: compare then uses those intervals as they are, so every standard
error, degree of freedom and estimate entering a test is a number chosen here."""

import dataclasses
import math

import numpy as np
import pytest
import reference
import sampled
from factories import _result, even_slices, summary_at
from scipy.stats import mannwhitneyu
from scipy.stats import t as student_t

from fsyncbench.errors import FsyncbenchError
from fsyncbench.measure import stats
from fsyncbench.model import Interval, ResultVerdict, Verdict
from fsyncbench.report import compare, fleet
from fsyncbench.report.compare import RankTest

BLOCKS = stats.METHOD_BLOCKS
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
    count: int = 1000,
    p99_ns: float | None = None,
):
    """A summary-only result (no raw samples) whose summary stores ``p50``/``p99`` as its
    interval records (None: no record, no bounds; the percentile is then ``p99_ns``)."""
    p50 = p50 or iv(100.0, 95.0, 105.0, 0.02, 9.0)
    p99_est = p99.estimate_ns if p99 is not None else p99_ns
    s = dataclasses.replace(
        summary_at(100.0),
        count=count,
        p50_ns=p50.estimate_ns,
        p99_ns=p99_est,
        p50_ci_ns=p50.bounds,
        p99_ci_ns=p99.bounds if p99 is not None else None,
        p50_interval=p50,
        p99_interval=p99,
        ci_method=BLOCKS,
    )
    return dataclasses.replace(
        _result(kind, name, primitive, 100.0),
        summary=s,
        samples_ns=(),
        slice_counts=(),
        payload_bytes=512,
    )


def report_of(*results, verdict: Verdict | None = None, floors=()):
    return dataclasses.replace(
        BASE, results=tuple(results), verdict=verdict or BASE.verdict, floors=tuple(floors)
    )


def welch(a: Interval, b: Interval, confidence: float = 0.95):
    """(ratio, se, df, two-sided p, ratio interval) of B/A from the published formulas."""
    va, vb = a.se_log**2, b.se_log**2
    se = math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / a.df + vb**2 / b.df)
    d = math.log(b.estimate_ns / a.estimate_ns)
    p = reference.welch_p(
        (a.estimate_ns, a.se_log, a.df, None), (b.estimate_ns, b.se_log, b.df, None)
    )
    t = student_t.ppf(0.5 + confidence / 2.0, df)
    return b.estimate_ns / a.estimate_ns, se, df, p, (math.exp(d - t * se), math.exp(d + t * se))


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
    assert got.method == stats.METHOD_ROUNDS and got.blocks == 4
    assert got.estimate_ns == est == 100443.5
    assert got.bounds == pytest.approx(bounds, rel=1e-12)
    assert (got.se_log, got.df) == pytest.approx((se, df), rel=1e-12)
    # the rounds' interval is the wider one: the slices alone give a narrower one
    slices_only = reference.jackknife(data, counts, 50)
    assert slices_only[3][1] / slices_only[3][0] < bounds[1] / bounds[0]


def test_result_interval_returns_the_stored_records_of_a_summary_only_report():
    i50 = iv(100.0, 95.0, 105.0, 0.02, 9.0)
    i99 = iv(300.0, 250.0, 360.0, 0.09, 4.0, blocks=12, method=stats.METHOD_ROUNDS)
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


def test_compare_quantile_every_field_of_a_welch_test():
    """A: p99 100 ns, SE(log) 0.03 on 9 df; B: 120 ns, 0.04 on 4 df. SE of log(B/A) =
    sqrt(0.0009 + 0.0016) = 0.05; Welch df = 0.0025^2 / (0.0009^2/9 + 0.0016^2/4) = 625/73."""
    ia, ib = iv(100.0, 90.0, 111.0, 0.03, 9.0), iv(120.0, 100.0, 140.0, 0.04, 4.0)
    q = compare.compare_quantile(given("wal/full", ia), given("wal/full", ib), 99)
    ratio, se, df, p, ci = welch(ia, ib)
    assert ratio == 1.2 and df == pytest.approx(625 / 73, rel=1e-12) and se == pytest.approx(0.05)
    assert (q.percentile, q.a_ns, q.a_ci_ns, q.b_ns, q.b_ci_ns) == (
        99,
        100.0,
        (90.0, 111.0),
        120.0,
        (100.0, 140.0),
    )
    assert (q.a_interval, q.b_interval) == (ia, ib)
    assert q.ratio == 1.2
    assert q.se_log == pytest.approx(se, rel=1e-12) and q.df == pytest.approx(df, rel=1e-12)
    assert q.p_value == pytest.approx(p, rel=1e-9)
    assert q.ratio_ci == pytest.approx(ci, rel=1e-9)
    assert 1.07 < q.ratio_ci[0] < 1.08 and 1.34 < q.ratio_ci[1] < 1.35  # 1.2 exp(-+2.27 x 0.05)
    assert (q.significant, q.p_adjusted, q.reason) == (None, None, None)
    # the p50s: identical intervals, so ratio 1 and p = 1
    q50 = compare.compare_quantile(given("wal/full", ia), given("wal/full", ib), 50)
    assert (q50.percentile, q50.ratio, q50.p_value, q50.a_ns, q50.b_ns) == (
        50,
        1.0,
        1.0,
        100.0,
        100.0,
    )


def test_compare_quantile_confidence_reaches_both_intervals():
    """At 90 % confidence the intervals of A and B are the 90 % jackknife intervals."""
    a = sampled.commit("WAL", "FULL", 1_000_000, seed=4, n=2000)
    b = sampled.commit("WAL", "FULL", 1_300_000, seed=5, n=2000)
    for pct in (50, 99):
        q = compare.compare_quantile(a, b, pct, confidence=0.9)
        ja = reference.jackknife(a.samples_ns, a.slice_counts, pct, confidence=0.9)
        jb = reference.jackknife(b.samples_ns, b.slice_counts, pct, confidence=0.9)
        assert ja[3] is not None and jb[3] is not None
        assert q.a_ci_ns == pytest.approx(ja[3], rel=1e-9)
        assert q.b_ci_ns == pytest.approx(jb[3], rel=1e-9)
        wide = reference.jackknife(a.samples_ns, a.slice_counts, pct)[3]
        assert wide[1] - wide[0] > ja[3][1] - ja[3][0]


def test_compare_quantile_with_no_spread_is_certain():
    """Interval records with SE(log) = 0 (every slice gave the same percentile): the ratio
    is exact, the p-value 0 (or 1 when equal), the degrees of freedom infinite."""
    a = given("write+fdatasync", iv(100.0, 100.0, 100.0, 0.0, 9.0), kind="flush")
    b = given("write+fdatasync", iv(150.0, 150.0, 150.0, 0.0, 9.0), kind="flush")
    q = compare.compare_quantile(a, b, 99)
    assert (q.ratio, q.ratio_ci, q.p_value, q.se_log, q.df, q.reason) == (
        1.5,
        (1.5, 1.5),
        0.0,
        0.0,
        math.inf,
        None,
    )
    same = compare.compare_quantile(a, a, 99)
    assert (same.ratio, same.ratio_ci, same.p_value, same.se_log, same.df) == (
        1.0,
        (1.0, 1.0),
        1.0,
        0.0,
        math.inf,
    )
    # one side exact, the other not: Welch's df is the other side's
    c = given("write+fdatasync", iv(120.0, 100.0, 140.0, 0.04, 4.0), kind="flush")
    q = compare.compare_quantile(a, c, 99)
    assert q.se_log == 0.04 and q.df == pytest.approx(4.0, rel=1e-12)
    assert q.p_value == pytest.approx(2 * student_t.sf(math.log(1.2) / 0.04, 4), rel=1e-9)
    # and mirrored: B exact, A not
    q = compare.compare_quantile(c, a, 99)
    assert q.se_log == 0.04 and q.df == pytest.approx(4.0, rel=1e-12)
    assert q.p_value == pytest.approx(2 * student_t.sf(math.log(1.2) / 0.04, 4), rel=1e-9)


def test_compare_quantile_with_a_percentile_of_zero_or_below_one_ns():
    zero = iv(0.0, 0.0, 0.0, 0.0, 5.0)
    hundred = iv(100.0, 100.0, 100.0, 0.0, 5.0)
    for a, b, ratio in ((zero, hundred, None), (hundred, zero, 0.0)):
        q = compare.compare_quantile(given("wal/full", a), given("wal/full", b), 99)
        assert (q.ratio, q.reason, q.p_value, q.ratio_ci, q.significant, q.se_log) == (
            ratio,
            "a percentile of zero",
            None,
            None,
            None,
            None,
        )
        assert (q.a_ns, q.b_ns, q.a_interval, q.b_interval) == (a.estimate_ns, b.estimate_ns, a, b)
    # half a nanosecond (an interpolated p50 of 0s and 1s) is not zero: B/A = 1 / 0.5 = 2
    half, one = iv(0.5, 0.5, 0.5, 0.0, 5.0), iv(1.0, 1.0, 1.0, 0.0, 5.0)
    q = compare.compare_quantile(given("wal/full", half), given("wal/full", one), 99)
    assert (q.ratio, q.ratio_ci, q.p_value, q.reason) == (2.0, (2.0, 2.0), 0.0, None)


def test_compare_quantile_names_the_side_without_an_interval():
    tested = iv(100.0, 90.0, 111.0, 0.03, 9.0)
    bare = given("wal/full", None, p99_ns=130.0)
    q = compare.compare_quantile(given("wal/full", tested), bare, 99)
    assert q.reason == "B " + NO_SLICES
    assert (q.ratio, q.b_ns, q.b_ci_ns, q.p_value, q.significant) == (1.3, 130.0, None, None, None)
    q = compare.compare_quantile(bare, given("wal/full", tested), 99)
    assert q.reason == "A " + NO_SLICES


def test_an_interval_on_zero_degrees_of_freedom_is_not_tested():
    """Bounds and a standard error but 0 degrees of freedom: no test ("A: no interval", the
    record giving no reason); 1 degree of freedom is enough for one."""
    b = iv(120.0, 100.0, 140.0, 0.04, 4.0)
    q = compare.compare_quantile(
        given("wal/full", iv(100.0, 90.0, 111.0, 0.03, 0.0)), given("wal/full", b), 99
    )
    assert (q.reason, q.p_value, q.ratio, q.ratio_ci) == ("A: no interval", None, 1.2, None)
    q = compare.compare_quantile(
        given("wal/full", b),
        given("wal/full", iv(100.0, 90.0, 111.0, 0.03, 0.0, reason="made up")),
        99,
    )
    assert q.reason == "B: made up"
    one = iv(100.0, 50.0, 200.0, 0.1, 1.0, blocks=2)
    q = compare.compare_quantile(given("wal/full", one), given("wal/full", b), 99)
    assert q.reason is None and q.p_value == pytest.approx(welch(one, b)[3], rel=1e-9)


# --------------------------------------------------------------------------- rank_test


def test_rank_test_of_single_values_by_hand():
    """A = [1], B = [2]: U_B = 1 (the one pair has B > A), mean 1/2, variance
    1*1/12*(2+1) = 1/4; z = (1/2 - 1/2 continuity) / (1/2) = 0, p = 1, P(B > A) = 1."""
    assert compare.rank_test([1.0], [2.0]) == RankTest(1.0, 0.0, 1.0, 1.0)
    assert compare.rank_test([2.0], [1.0]) == RankTest(0.0, 0.0, 1.0, 0.0)
    # one value each, tied: every value tied, nothing to rank
    assert compare.rank_test([5], [5]) is None


def test_rank_test_with_u_at_its_mean_by_hand():
    """A = [1, 3], B = [2]: ranks 1, 3 | 2, U_B = 2 - 1 = 1 = n1*n2/2: z = 0 (no continuity
    correction of a zero difference), p = 1, P(B > A) = 1/2."""
    assert compare.rank_test([1, 3], [2]) == RankTest(1.0, 0.0, 1.0, 0.5)


def test_rank_test_z_and_p_match_scipy():
    """A = [1, 2, 2, 4], B = [2, 3, 5]: ranks 1, 3, 3, 6 | 3, 5, 7 -> U_B = 15 - 6 = 9,
    mean 6; ties: one triple, 3^3 - 3 = 24 over 7*6 = 42; var = 12/12 * (8 - 4/7) = 52/7;
    z = (3 - 0.5) / sqrt(52/7)."""
    r = compare.rank_test([1, 2, 2, 4], [2, 3, 5])
    assert r.u_b == 9.0 and r.prob_b_slower == 9 / 12
    assert r.z == pytest.approx(2.5 / math.sqrt(52 / 7), rel=1e-12)
    u = mannwhitneyu([2, 3, 5], [1, 2, 2, 4], method="asymptotic", use_continuity=True)
    assert u.statistic == 9.0 and r.p_value == pytest.approx(u.pvalue, rel=1e-12)


def test_rank_test_compares_values_as_float64():
    """The times are compared as float64: 2^70 + 1 and 2^70 are the same float64, so
    the two samples are one tie and there is nothing to rank."""
    assert compare.rank_test([2**70 + 1], [2.0**70]) is None
    assert compare.rank_test([2.0**70], [2**70 + 1]) is None


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
    a = sampled.report(1.0, seed=0, n=2000)
    b0 = sampled.report(1.3, seed=100, n=1500)
    extra = sampled.commit("DELETE", "FULL", 1_200_000, seed=9, n=1500)
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
            ja = reference.jackknife(ra.samples_ns, ra.slice_counts, pct, confidence=0.9)
            jb = reference.jackknife(rb.samples_ns, rb.slice_counts, pct, confidence=0.9)
            assert q.a_ci_ns == pytest.approx(ja[3], rel=1e-9)
            assert q.b_ci_ns == pytest.approx(jb[3], rel=1e-9)
            p_values.append(reference.welch_p(ja, jb))
    adjusted = reference.holm(p_values)
    assert [q.p_adjusted for c in pair.configs for q in (c.p50, c.p99)] == pytest.approx(
        adjusted, rel=1e-6
    )
    assert [q.significant for c in pair.configs for q in (c.p50, c.p99)] == [
        p < 0.1 for p in adjusted
    ]

    # the floors: A's order, only those both measured, their own Holm family at 90 %
    assert [n for n, _ in pair.floors] == [stats.FLOOR_COMMIT, stats.FLOOR_WRITE]
    fb = {f.name: f for f in b.floors}
    floor_p = []
    for (name, q), fa in zip(pair.floors, a.floors[1:]):
        x, y = fa.samples_ns, fb[name].samples_ns
        assert q.percentile == 50
        assert q.ratio == pytest.approx(np.percentile(y, 50) / np.percentile(x, 50), rel=1e-12)
        ja = reference.jackknife(x, fa.slice_counts, 50, confidence=0.9)
        jb = reference.jackknife(y, fb[name].slice_counts, 50, confidence=0.9)
        assert q.a_ci_ns == pytest.approx(ja[3], rel=1e-9)
        assert q.b_ci_ns == pytest.approx(jb[3], rel=1e-9)
        assert q.p_value == pytest.approx(reference.welch_p(ja, jb), rel=1e-6)
        floor_p.append(reference.welch_p(ja, jb))
    floor_adj = reference.holm(floor_p)
    assert [q.p_adjusted for _, q in pair.floors] == pytest.approx(floor_adj, rel=1e-6)
    assert [q.significant for _, q in pair.floors] == [p < 0.1 for p in floor_adj]
    # write floor 2000 -> 2600 ns (1.3x) moved beyond 1.25; commit 3000 -> 3100 did not
    assert [n for n, _ in pair.floor_moved] == [stats.FLOOR_WRITE]


# --------------------------------------------------------------------------- regressions

A99 = iv(100.0, 90.0, 111.0, 0.03, 9.0)


def _b99(est: float) -> Interval:
    return iv(est, est * 0.8, est * 1.25, 0.04, 4.0)


def _gate_pair(confidence: float = 0.95):
    """A against B, A's order: write baseline and wal/off 3x slower (not checked by
    default), wal/normal without an interval in B, wal/full 1.5x and write+fdatasync 1.25x
    slower; SE(log B/A) = 0.05 on 625/73 df each."""
    a = report_of(
        given("write (no sync)", A99, kind="write", primitive="none"),
        given("wal/off", A99, primitive="none"),
        given("wal/normal", A99),
        given("wal/full", A99),
        given("write+fdatasync", A99, kind="flush"),
    )
    b = report_of(
        given("write (no sync)", _b99(300.0), kind="write", primitive="none"),
        given("wal/off", _b99(300.0), primitive="none"),
        given("wal/normal", None, p99_ns=150.0),
        given("wal/full", _b99(150.0)),
        given("write+fdatasync", _b99(125.0), kind="flush"),
    )
    return compare.compare_pair(a, b, confidence)


def _one_sided(ratio: float, limit_pct: float) -> float:
    """P(T >= (log ratio - log(1 + limit)) / 0.05) on 625/73 df."""
    return float(student_t.sf((math.log(ratio) - math.log(1 + limit_pct / 100)) / 0.05, 625 / 73))


def test_regressions_by_default_and_their_exact_lines():
    pair = _gate_pair()
    assert [c.p99.significant for c in pair.configs] == [True, True, None, True, True]
    # wal/full: (log 1.5 - log 1.2) / 0.05 = 4.46; write+fdatasync: (log 1.25 - log 1.2)
    # / 0.05 = 0.82; Holm over these two
    p_full, p_flush = _one_sided(1.5, 20), _one_sided(1.25, 20)
    adj = reference.holm([p_full, p_flush])
    assert p_full < 0.01 and p_flush > 0.1 and adj[0] == 2 * p_full
    got = compare.regressions(pair, 20, "before.json", "after.json")
    assert len(got) == 1
    r = got[0]
    assert (r.name, r.baseline, r.candidate, r.limit_pct) == (
        "wal/full",
        "before.json",
        "after.json",
        20,
    )
    assert r.p99 == pair.configs[3].p99 and r.p99.ratio == 1.5
    assert r.p_adjusted == pytest.approx(adj[0], rel=1e-9)
    # named: the no-sync configurations are checked too (Holm over the two named)
    named = compare.regressions(pair, 20, "A", "B", ["WAL/OFF", "write (no sync)"])
    p3 = _one_sided(3.0, 20)
    assert [(r.name, r.p99.ratio) for r in named] == [("write (no sync)", 3.0), ("wal/off", 3.0)]
    assert [r.p_adjusted for r in named] == pytest.approx([2 * p3, 2 * p3], rel=1e-9)


def test_regression_coverage_counts_and_names_what_it_cannot_test():
    pair = _gate_pair()
    assert compare.regression_coverage(pair) == (3, ["wal/normal (B " + NO_SLICES + ")"])
    assert compare.regression_coverage(pair, ["WAL/OFF", "wal/normal"]) == (
        2,
        ["wal/normal (B " + NO_SLICES + ")"],
    )
    assert compare.regression_coverage(pair, ["wal/full"]) == (1, [])
    assert compare.regression_coverage(pair, ["delete/full"]) == (0, [])
    # a p99 comparison without a reason (a hand-made one): "no interval"
    bare = dataclasses.replace(
        pair,
        configs=tuple(
            dataclasses.replace(c, p99=dataclasses.replace(c.p99, reason=None))
            for c in pair.configs
        ),
    )
    assert compare.regression_coverage(bare) == (3, ["wal/normal (no interval)"])
    # nothing compared: nothing looked at
    assert compare.regression_coverage(dataclasses.replace(pair, configs=())) == (0, [])


def test_a_write_baseline_is_skipped_by_its_kind_alone():
    """A hand-edited report naming the no-sync write baseline's primitive "write": still the
    write baseline, checked only when named."""
    a = report_of(given("write (no sync)", A99, kind="write", primitive="write"))
    b = report_of(given("write (no sync)", _b99(300.0), kind="write", primitive="write"))
    pair = compare.compare_pair(a, b)
    assert pair.configs[0].p99.significant is True
    assert compare.regressions(pair, 20, "A", "B") == []
    assert compare.regression_coverage(pair) == (0, [])
    assert [r.name for r in compare.regressions(pair, 20, "A", "B", ["write (no sync)"])] == [
        "write (no sync)"
    ]
    assert compare.regression_coverage(pair, ["write (no sync)"]) == (1, [])


def test_regressions_with_no_spread():
    """SE(log) = 0 on both sides: B/A is known exactly, so the one-sided p is 0 when the
    ratio exceeds 1 + limit and 1 when it does not (exactly 2x is not more than 100 % worse)."""
    exact = iv(100.0, 100.0, 100.0, 0.0, 5.0)

    def pair(b_est):
        return compare.compare_pair(
            report_of(given("wal/full", exact)),
            report_of(given("wal/full", iv(b_est, b_est, b_est, 0.0, 5.0))),
        )

    twice = pair(200.0)
    assert twice.configs[0].p99.significant is True and twice.configs[0].p99.se_log == 0.0
    got = compare.regressions(twice, 20, "A", "B")
    assert [(r.name, r.p_adjusted, r.limit_pct) for r in got] == [("wal/full", 0.0, 20)]
    assert compare.regressions(twice, 100, "A", "B") == []  # log 2 - log1p(1) = 0
    assert [r.name for r in compare.regressions(twice, 99, "A", "B")] == ["wal/full"]
    half = pair(50.0)
    assert half.configs[0].p99.significant is True  # significantly faster
    assert compare.regressions(half, 20, "A", "B") == []
    assert compare.regressions(half, 0, "A", "B") == []


def test_a_p_value_equal_to_alpha_is_not_a_regression():
    """At 50 % confidence alpha = 0.5, and B/A = 2 against a limit of 100 % gives t = 0,
    a one-sided p of exactly 0.5: not below alpha."""
    pair = _gate_pair(confidence=0.5)
    wal_full_twice = dataclasses.replace(
        pair,
        configs=(
            dataclasses.replace(
                pair.configs[3], p99=dataclasses.replace(pair.configs[3].p99, ratio=2.0)
            ),
        ),
    )
    assert wal_full_twice.configs[0].p99.significant is True
    assert compare.regressions(wal_full_twice, 100, "A", "B") == []
    # just below 100 %: t > 0, p < 0.5
    got = compare.regressions(wal_full_twice, 99.9, "A", "B")
    assert [r.name for r in got] == ["wal/full"]
    assert got[0].p_adjusted == pytest.approx(
        student_t.sf((math.log(2.0) - math.log(1.999)) / 0.05, 625 / 73), rel=1e-9
    )


def test_regressions_skip_a_p99_missing_any_part_of_its_test():
    """Each of ratio, standard error and degrees of freedom missing on its own (hand-made
    comparisons) skips the row, and the rows after it are still checked."""
    pair = _gate_pair()
    full = pair.configs[3]
    for broken in ({"ratio": None}, {"se_log": None}, {"df": None}):
        bad = dataclasses.replace(full, name="wal/bad", p99=dataclasses.replace(full.p99, **broken))
        p = dataclasses.replace(pair, configs=(bad, full))
        got = compare.regressions(p, 20, "A", "B")
        assert [(r.name, r.p_adjusted) for r in got] == [
            ("wal/full", pytest.approx(_one_sided(1.5, 20), rel=1e-9))
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
