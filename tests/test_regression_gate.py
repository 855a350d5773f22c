"""The regression gate's decisions (``compare --fail-on-regression``,
:mod:`fsyncbench.report.regression`) and the API's CI gate over a report
(:func:`fsyncbench.api.gate`).

The gate is pure on the comparisons it is given, so most tests here hand it comparisons
written by hand (every p-value, ratio and standard error a number chosen here) and check
what it says of each statistic: the one-sided p and its Holm adjustment, the confidence it
holds itself to, the slowdown each test could have caught (against scipy's Student t), the
boundaries of "passed", the disturbed runs on either side, the configurations a candidate
lacks, and how two runs measured differently are named. The API gate's tests run on
sampled reports (tests/sampled.py): the values a caller passes reach the gates they set."""

from __future__ import annotations

import dataclasses
import math

import pytest
import reference
import sampled
from factories import disturbed_by_fio, host
from scipy.stats import t as student_t

from fsyncbench import api
from fsyncbench.errors import FsyncbenchError
from fsyncbench.measure import between
from fsyncbench.options import Gates
from fsyncbench.report import regression
from fsyncbench.report.compare import ConfigComparison, PairComparison, QuantileComparison

# --------------------------------------------------------------------------- hand-made comparisons


def _q(
    percentile: float,
    ratio: float | None,
    p: float | None,
    se: float | None = 0.05,
    df: float = 10.0,
    ratio_ci: tuple[float, float] | None = None,
    basis: str = between.BASIS_PAIR,
) -> QuantileComparison:
    """B against A at ``percentile``: ``ratio`` B/A, two-sided ``p``, SE(log ratio) ``se``."""
    return QuantileComparison(
        percentile=percentile,
        a_ns=100.0,
        a_ci_ns=None,
        b_ns=100.0 * (ratio or 1.0),
        b_ci_ns=None,
        ratio=ratio,
        ratio_ci=ratio_ci,
        significant=None,
        p_value=p,
        se_log=se,
        df=df,
        basis=basis,
    )


def _config(
    name: str,
    p50: QuantileComparison,
    p99: QuantileComparison,
    kind: str = "commit",
    primitive_a: str = "fdatasync",
    primitive_b: str | None = None,
) -> ConfigComparison:
    return ConfigComparison(
        name=name,
        kind=kind,
        primitive_a=primitive_a,
        primitive_b=primitive_a if primitive_b is None else primitive_b,
        n_a=1000,
        n_b=1000,
        p50=p50,
        p99=p99,
        rank=None,
        verdict_a=None,
        verdict_b=None,
    )


def _pair(*configs: ConfigComparison, confidence: float = 0.95) -> PairComparison:
    return PairComparison(configs=tuple(configs), only_a=(), only_b=(), confidence=confidence)


def _slow_and_same(name: str = "wal/full", **kw) -> ConfigComparison:
    """p50 3x slower (two-sided p 1e-6), p99 unchanged (ratio 1.0, p 1.0); SE 0.05 on 10 df."""
    return _config(name, _q(50, 3.0, 1e-6), _q(99, 1.0, 1.0), **kw)


def _stat(gate: regression.RegressionGate, name: str, percentile: float):
    (s,) = [s for s in gate.statistics if s.name == name and s.percentile == percentile]
    return s


def _detectable(se: float, df: float, level: float) -> float:
    """The slowdown a one-sided t test at ``level`` catches 4 times in 5 (Cohen 1988,
    normal approximation of the power of a t test): exp((t(1 - level) + t(0.8)) se)."""
    return math.exp((student_t.ppf(1.0 - level, df) + student_t.ppf(0.8, df)) * se)


# --------------------------------------------------------------------------- the one-sided test


def test_a_faster_statistic_is_tested_on_its_lower_tail_before_holm():
    """p50 0.8x (two-sided p 0.5) is not slower: its one-sided p is 1 - 0.5/2 = 0.75; the
    p99 2x (p 0.02) is half that, 0.01. Holm over the two: 0.01 x 2 = 0.02, then
    max(0.02, 0.75 x 1) = 0.75 (by hand)."""
    pair = _pair(_config("wal/full", _q(50, 0.8, 0.5), _q(99, 2.0, 0.02)))
    gate = regression.check([("B", pair)], 20, "A")
    assert [s.p_adjusted for s in gate.statistics] == pytest.approx([0.75, 0.02], rel=1e-12)
    assert [s.p_adjusted for s in gate.statistics] == pytest.approx(
        reference.holm([1 - 0.5 / 2, 0.02 / 2]), rel=1e-12
    )
    assert [(r.name, r.statistic.percentile, r.p_adjusted) for r in gate.regressions] == [
        ("wal/full", 99, pytest.approx(0.02, rel=1e-12))
    ]
    assert [s.outcome for s in gate.statistics] == [regression.PASSED, regression.REGRESSION]


def test_a_statistic_exactly_as_fast_as_the_baseline_is_not_slower():
    """Only a ratio above 1 is tested on its upper tail (module text): at exactly 1.0 the
    one-sided p of a two-sided 0.2 is 1 - 0.1 = 0.9, not 0.1 (the p99 has no test)."""
    pair = _pair(_config("wal/full", _q(50, 1.0, 0.2), _q(99, 1.0, None)))
    gate = regression.check([("B", pair)], 0, "A")
    assert gate.statistics[0].p_adjusted == pytest.approx(0.9, rel=1e-12)
    assert gate.regressions == ()


def test_the_gate_holds_itself_to_the_comparisons_confidence():
    """One statistic tested (the p50 has no test): p99 2x, two-sided p 0.03, one-sided
    0.015, alone in its Holm family. At 95 % confidence it is a regression; at 99 % it is
    not (0.015 is not below 0.01), and the slowdown it could have caught is the one a
    lone test at level 0.01 catches 4 times in 5, not at 0.05 or 0.005."""
    se, df = 0.05, 10.0

    def config():
        return _config("wal/full", _q(50, 2.0, None, se=None), _q(99, 2.0, 0.03, se=se, df=df))

    loose = regression.check([("B", _pair(config()))], 20, "A")
    assert [(r.name, r.statistic.percentile) for r in loose.regressions] == [("wal/full", 99)]
    assert _stat(loose, "wal/full", 99).detectable_ratio == pytest.approx(
        _detectable(se, df, 0.05), rel=1e-9
    )
    strict = regression.check([("B", _pair(config(), confidence=0.99))], 20, "A")
    assert strict.regressions == ()
    p99 = _stat(strict, "wal/full", 99)
    assert p99.p_adjusted == pytest.approx(0.015, rel=1e-12)
    assert p99.detectable_ratio == pytest.approx(_detectable(se, df, 0.01), rel=1e-9)
    # it could have caught a 20 % slowdown even at 0.01: not a regression, so it passed
    assert p99.outcome == regression.PASSED and p99.detectable_ratio <= 1.2
    assert _stat(strict, "wal/full", 50).reason == "no test"


def test_no_candidate_gates_nothing():
    gate = regression.check([], 20, "A")
    assert gate == regression.RegressionGate("A", 20, (), ())
    assert gate.detectable_range() is None


# --------------------------------------------------------------------------- what each statistic carries


def test_each_statistic_carries_its_interval_basis_and_the_gates_baseline():
    history = _q(50, 1.5, 1e-6, ratio_ci=(1.3, 1.7), basis=between.BASIS_HISTORY)
    pair = _pair(_config("wal/full", history, _q(99, 1.0, 1.0, ratio_ci=(0.9, 1.1))))
    gate = regression.check([("after.json", pair)], 20, "before.json")
    assert (gate.baseline, gate.limit_pct) == ("before.json", 20)
    assert [(s.candidate, s.ratio, s.ratio_ci, s.basis) for s in gate.statistics] == [
        ("after.json", 1.5, (1.3, 1.7), between.BASIS_HISTORY),
        ("after.json", 1.0, (0.9, 1.1), between.BASIS_PAIR),
    ]
    (r,) = gate.regressions
    assert (r.baseline, r.candidate, r.name) == ("before.json", "after.json", "wal/full")


def test_the_detectable_range_spans_the_statistics_tested():
    """SE 0.02 and 0.1 on 10 df, four statistics tested: a lone one held to 0.05 / 4."""
    pair = _pair(
        _config("wal/full", _q(50, 1.0, 1.0, se=0.02), _q(99, 1.0, 1.0, se=0.1)),
        _config("wal/normal", _q(50, 1.0, 1.0, se=0.05), _q(99, 1.0, 1.0, se=0.05)),
        _config("wal/off", _q(50, None, None, se=None), _q(99, None, None, se=None)),
    )
    gate = regression.check([("B", pair)], 20, "A")
    low, high = gate.detectable_range() or (0.0, 0.0)
    assert low == pytest.approx(_detectable(0.02, 10.0, 0.05 / 4), rel=1e-9)
    assert high == pytest.approx(_detectable(0.1, 10.0, 0.05 / 4), rel=1e-9)
    untested = _pair(_config("wal/off", _q(50, 2.0, None), _q(99, 2.0, None)))
    assert regression.check([("B", untested)], 20, "A").detectable_range() is None


def test_a_configuration_that_stopped_syncing_in_either_run_is_labelled_without_a_sync():
    """wal/full synced in A but not in B (or the other way): it has no per-commit sync in
    both runs, so its slowdown is not labelled as a syncing one."""
    for a, b in (("fdatasync", "none"), ("none", "fdatasync")):
        pair = _pair(_slow_and_same(primitive_a=a, primitive_b=b))
        gate = regression.check([("B", pair)], 20, "A")
        assert {s.label for s in gate.statistics} == {regression.NO_SYNC}
    both = regression.check([("B", _pair(_slow_and_same()))], 20, "A")
    assert {s.label for s in both.statistics} == {regression.SYNCS}


# --------------------------------------------------------------------------- passing at the limit


def _at_the_limit(limit: float, df: float, level: float) -> float:
    """An SE(log) whose detectable slowdown at ``level`` is exactly ``limit`` (float)."""
    k = math.log(between.detectable_ratio(1.0, df, level))
    se = math.log(limit) / k
    for _ in range(100):
        got = between.detectable_ratio(se, df, level)
        if got == limit:
            return se
        se = math.nextafter(se, 0.0 if got > limit else 1.0)
    raise AssertionError("no SE gives exactly the limit")


def test_a_statistic_that_could_just_catch_the_limits_slowdown_passes():
    """'Passes only when that is at most 1 + PCT/100' (module text): a detectable slowdown
    of exactly 1.5x passes a 50 % gate, however close; with a disturbed baseline the same
    statistic is not shown to be as fast."""
    se = _at_the_limit(1.5, 10.0, 0.05 / 2)
    pair = _pair(_config("wal/full", _q(50, 1.0, 1.0, se=se), _q(99, 1.0, 1.0, se=se)))
    gate = regression.check([("B", pair)], 50, "A")
    assert [s.detectable_ratio for s in gate.statistics] == [1.5, 1.5]
    assert [s.outcome for s in gate.statistics] == [regression.PASSED] * 2
    loud = regression.check([("B", pair)], 50, "A", baseline_disturbed="stayed disturbed")
    assert [s.outcome for s in loud.statistics] == [regression.CANNOT_TELL] * 2
    assert all(s.reason_other for s in loud.statistics)


# --------------------------------------------------------------------------- disturbed runs

STAYED = "stayed disturbed in 3 of 3 rounds (disk: fio (pid 812))"


def test_a_disturbed_candidate_that_is_slower_cannot_tell_and_is_not_a_regression():
    """The candidate's slowdown may be the other processes': 'cannot tell', said as such
    (not a power problem: more samples would not settle it); its unchanged p99 passed."""
    pair = _pair(_slow_and_same())
    plain = regression.check([("B", pair)], 20, "A")
    assert [r.statistic.percentile for r in plain.regressions] == [50]
    gate = regression.check([("B", pair)], 20, "A", disturbed={"B": STAYED})
    assert gate.regressions == ()
    p50 = _stat(gate, "wal/full", 50)
    assert p50.outcome == regression.CANNOT_TELL
    assert p50.reason == (f"B is slower, but {STAYED}: the slowdown may be the other processes'")
    assert p50.reason_other is True and not p50.too_uncertain
    assert p50.p_adjusted == _stat(plain, "wal/full", 50).p_adjusted
    assert p50.detectable_ratio == _stat(plain, "wal/full", 50).detectable_ratio
    assert _stat(gate, "wal/full", 99).outcome == regression.PASSED
    # another candidate's disturbance says nothing of this one
    other = regression.check([("B", pair)], 20, "A", disturbed={"C": STAYED})
    assert other.regressions == plain.regressions


def test_a_disturbed_baseline_cannot_show_a_candidate_as_fast_but_still_finds_a_slowdown():
    pair = _pair(_slow_and_same())
    gate = regression.check([("B", pair)], 20, "A", baseline_disturbed=STAYED)
    assert [(r.name, r.statistic.percentile) for r in gate.regressions] == [("wal/full", 50)]
    p99 = _stat(gate, "wal/full", 99)
    assert p99.outcome == regression.CANNOT_TELL
    assert p99.reason == (
        f"A {STAYED}: its figures may be slower than its storage's, so B is not shown to be as fast"
    )
    assert p99.reason_other is True and not p99.too_uncertain
    assert p99.detectable_ratio is not None and p99.detectable_ratio <= 1.2


# --------------------------------------------------------------------------- missing configurations

MISSING = [
    ("write", "write (no sync)", "none"),
    ("commit", "wal/off", "none"),
    ("commit", "wal/full", "fdatasync"),
]


def test_configurations_the_candidate_lacks_cannot_tell_by_default_but_the_write_baseline():
    pair = _pair(_slow_and_same("wal/normal"))
    gate = regression.check([("B", pair)], 20, "A", missing={"B": MISSING})
    lacking = [s for s in gate.statistics if s.name != "wal/normal"]
    assert [(s.candidate, s.name, s.percentile, s.label, s.outcome) for s in lacking] == [
        ("B", "wal/off", 50.0, regression.NO_SYNC, regression.CANNOT_TELL),
        ("B", "wal/off", 99.0, regression.NO_SYNC, regression.CANNOT_TELL),
        ("B", "wal/full", 50.0, regression.SYNCS, regression.CANNOT_TELL),
        ("B", "wal/full", 99.0, regression.SYNCS, regression.CANNOT_TELL),
    ]
    assert [s.reason for s in lacking[::2]] == [
        "wal/off is in A but missing from B",
        "wal/full is in A but missing from B",
    ]
    assert all(s.ratio is None and s.detectable_ratio is None for s in lacking)


def test_configurations_the_candidate_lacks_are_gated_only_when_named():
    pair = _pair(_slow_and_same("wal/normal"))
    named = regression.check(
        [("B", pair)], 20, "A", ["WAL/FULL", "write (no sync)"], missing={"B": MISSING}
    )
    assert [(s.name, s.percentile, s.label) for s in named.statistics] == [
        ("write (no sync)", 50.0, regression.NO_SYNC),
        ("write (no sync)", 99.0, regression.NO_SYNC),
        ("wal/full", 50.0, regression.SYNCS),
        ("wal/full", 99.0, regression.SYNCS),
    ]


def test_fleet_regressions_name_the_baseline_and_check_only_the_named():
    pairs = [
        ("x", _pair(_slow_and_same("wal/off", primitive_a="none"), _slow_and_same())),
        ("y", _pair(_slow_and_same("wal/off", primitive_a="none"), _slow_and_same())),
    ]
    every = regression.fleet_regressions(pairs, 20.0, "base")
    assert [(r.candidate, r.name) for r in every] == [
        ("x", "wal/off"),
        ("x", "wal/full"),
        ("y", "wal/off"),
        ("y", "wal/full"),
    ]
    named = regression.fleet_regressions(pairs, 20.0, "base", ["wal/off"])
    assert [(r.baseline, r.candidate, r.name, r.statistic.percentile) for r in named] == [
        ("base", "x", "wal/off", 50),
        ("base", "y", "wal/off", 50),
    ]


# --------------------------------------------------------------------------- measured differently


def test_run_differences_name_each_option_rounds_and_payload_both_ways():
    a = dataclasses.replace(
        sampled.report(n=200, rounds=3),
        command_line=("fsyncbench", "run", "/x", "--rounds", "3", "--samples", "100"),
    )
    b = dataclasses.replace(
        sampled.report(n=200, rounds=5, payload_bytes=4096),
        command_line=("fsyncbench", "run", "/x", "--rounds", "5", "--warmup", "7"),
    )
    assert regression.run_differences(a, b) == [
        "--rounds: A 3, B 5",
        "--samples: A 100, B default",
        "rounds measured: A 3, B 5",
        "--warmup: A default, B 7",
        "wal/off payload: A 512 B, B 4096 B",
        "wal/normal payload: A 512 B, B 4096 B",
        "wal/full payload: A 512 B, B 4096 B",
    ]


def test_a_report_without_results_measured_no_rounds():
    rep = sampled.report(n=200, rounds=5)
    empty = dataclasses.replace(rep, results=())
    assert regression.run_differences(empty, rep) == ["rounds measured: A 0, B 5"]
    assert regression.run_differences(empty, empty) == []


# --------------------------------------------------------------------------- the API gate


def test_the_api_gate_refuses_gates_that_are_not_gates():
    with pytest.raises(FsyncbenchError) as e:
        api.gate(sampled.report(n=200), "10ms")  # type: ignore[arg-type]
    assert str(e.value) == "gates must be a Gates or None, got '10ms'"


def test_the_api_gate_is_not_strict_unless_asked():
    """wal/full's p99 is 2.19 ms, its interval up to 2.31 ms: a 2.25 ms limit passes on the
    estimate (with a note that it straddles) and fails only in strict mode."""
    rep = sampled.report(n=2000)
    assert rep.results[4].summary.p99_ci_ns is not None
    low, high = rep.results[4].summary.p99_ci_ns
    assert rep.results[4].summary.p99_ns < 2_250_000 < high
    plain = api.gate(rep, max_p99="2.25ms", configs="wal/full")
    assert (plain.failed, plain.checked, len(plain.notes)) == (False, 1, 1)
    assert "straddles --max-p99" in plain.notes[0]
    strict = api.gate(rep, max_p99="2.25ms", configs="wal/full", max_p99_strict=True)
    assert [(f.subject, f.gate) for f in strict.failures] == [("wal/full", "max-p99")]
    assert "--max-p99-strict" in strict.failures[0].message and strict.notes == ()
    # a verdict gate alone needs no p99 limit (strict is off by default)
    assert api.gate(rep, fail_on="no_flush") == api.GateResult((), 4, True)


def test_the_api_gate_looks_only_at_the_configurations_named():
    rep = sampled.report(n=200, the_host=host(fs_type="tmpfs"))
    for result in (
        api.gate(rep, max_p99=1, fail_on="no_flush", configs="wal/full"),
        api.gate(rep, Gates.parse(1, "no_flush", "wal/full")),
    ):
        assert result.checked == 1
        assert [(f.subject, f.gate) for f in result.failures] == [
            ("wal/full", "max-p99"),
            ("wal/full", "fail-on"),
        ]


def test_the_api_gate_judges_a_disturbed_run_only_when_accepted():
    rep = disturbed_by_fio(sampled.report(n=200))
    told = api.gate(rep, Gates.parse("1ns"))
    assert told.failures == () and len(told.cannot_tell) == 1
    assert told.cannot_tell[0].startswith("--max-p99 1 ns: cannot tell: 3 of 3 rounds stayed")
    accepted = api.gate(rep, Gates.parse("1ns", accept_disturbed=True))
    assert accepted.cannot_tell == () and accepted.checked == 4
    assert {f.subject for f in accepted.failures} == {
        "write+fdatasync",
        "wal/off",
        "wal/normal",
        "wal/full",
    }
