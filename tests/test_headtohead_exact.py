"""Head to head (``fsyncbench.measure.headtohead``) to the figure: the paired and the
unpaired (Welch) intervals worked by hand on small round sets, the degrees of freedom they
print, every reason a ratio has no interval (as the screen words it), the edges of "a round
measured 0 ns" and of too few rounds, and the nearest rival's choice at its edges."""

from __future__ import annotations

import dataclasses
import math

import pytest
from factories import commit

from fsyncbench.measure import headtohead
from fsyncbench.report import headtohead as view

LN2 = math.log(2.0)

#: Student's t, 0.975 quantile (two-sided 95 %). df 2 in closed form: for 2 degrees of
#: freedom t_p = (2p - 1) * sqrt(2 / (4p(1 - p))); df 3 from the table (3.182,
#: https://www.itl.nist.gov/div898/handbook/eda/section3/eda3672.htm), to more digits.
T_975_DF2 = 0.95 * math.sqrt(2.0 / (4 * 0.975 * 0.025))
T_975_DF3 = 3.182446305284263


def _res(mode, rounds, est=None):
    """A commit row of ``mode``/FULL whose p50 and p99 rounds are ``rounds`` (ns) and whose
    whole-run p50 and p99 are ``est`` (the first round when not given)."""
    rounds = tuple(float(x) for x in rounds)
    est = float(est if est is not None else (rounds[0] if rounds else 100.0))
    r = commit(mode, "FULL", 100_000)
    s = dataclasses.replace(
        r.summary, p50_ns=est, p99_ns=est, round_p50_ns=rounds, round_p99_ns=rounds
    )
    return dataclasses.replace(r, summary=s)


# ------------------------------------------------------------------ paired, by hand


def test_the_paired_interval_is_students_t_over_the_logs_of_the_rounds_ratios():
    """Round ratios 1, 2 and 4: logs 0, ln2, 2 ln2; mean ln2 (ratio 2), sample sd ln2
    (n - 1 = 2), se ln2/sqrt(3), df 2: exp(ln2 -+ t * ln2/sqrt(3))."""
    a = _res("WAL", [100.0, 400.0, 1600.0], est=400.0)
    b = _res("TRUNCATE", [100.0, 200.0, 400.0], est=200.0)
    r = headtohead.paired_ratio(a, b, 50.0)
    half = T_975_DF2 * LN2 / math.sqrt(3.0)
    assert r.ratio == pytest.approx(2.0, rel=1e-12)
    assert r.low == pytest.approx(math.exp(LN2 - half), rel=1e-9)
    assert r.high == pytest.approx(math.exp(LN2 + half), rel=1e-9)
    assert r.low == pytest.approx(0.3575, abs=1e-4) and r.high == pytest.approx(11.19, abs=1e-2)
    assert r.df == 2.0 and r.rounds == 3 and r.paired is True
    assert r.confidence == 0.95 and r.reason == ""
    assert (r.a_name, r.b_name, r.percentile) == ("wal/full", "truncate/full", 50.0)
    assert view.ratio_phrase(r) == (
        "not measurably different at p50 (2.00x slower, but [0.36, 11.19] holds 1)"
    )


def test_three_paired_rounds_are_enough_for_an_interval():
    a = _res("WAL", [200.0, 210.0, 190.0])
    b = _res("TRUNCATE", [100.0, 100.0, 100.0])
    r = headtohead.paired_ratio(a, b, 99.0)
    assert r.bounds is not None and r.reason == "" and r.df == 2.0


def test_a_round_of_one_nanosecond_is_a_measurement_not_a_zero():
    a = _res("WAL", [1.0, 2.0, 4.0], est=1.0)
    b = _res("TRUNCATE", [1.0, 1.0, 2.0], est=1.0)
    for r in (headtohead.paired_ratio(a, b, 50.0), headtohead.paired_ratio(b, a, 50.0)):
        assert r.bounds is not None and r.reason == ""
    # round ratios 1, 2, 2: the geometric mean 2^(2/3)
    assert headtohead.paired_ratio(a, b, 50.0).ratio == pytest.approx(2 ** (2 / 3))


# ------------------------------------------------------------------ unpaired (Welch), by hand


def test_the_unpaired_interval_is_welchs_with_its_degrees_of_freedom():
    """A: 100, 200, 400 (log variance ln2^2, k 3); B: 50, 50, 100, 100 (ln2^2/3, k 4).
    va = ln2^2/3, vb = ln2^2/12; df = (5/12)^2 / ((1/3)^2/2 + (1/12)^2/3) = 3 exactly;
    centre = (ln100 + ln2) - (ln50 + ln2/2) = 1.5 ln2 (ratio 2^1.5); se = ln2 sqrt(5/12)."""
    a = _res("WAL", [100.0, 200.0, 400.0], est=200.0)
    b = _res("TRUNCATE", [50.0, 50.0, 100.0, 100.0], est=75.0)
    half = T_975_DF3 * LN2 * math.sqrt(5.0 / 12.0)
    for r, sign in (
        (headtohead.unpaired_ratio(a, b, 50.0), 1),
        (headtohead.unpaired_ratio(b, a, 50.0), -1),
    ):
        assert r.paired is False and r.reason == "" and r.confidence == 0.95
        assert r.rounds == 3
        assert r.df == pytest.approx(3.0, rel=1e-9)
        centre = sign * 1.5 * LN2
        assert r.ratio == pytest.approx(math.exp(centre), rel=1e-9)
        assert r.low == pytest.approx(math.exp(centre - half), rel=1e-9)
        assert r.high == pytest.approx(math.exp(centre + half), rel=1e-9)
    r = headtohead.unpaired_ratio(a, b, 50.0)
    assert r.low == pytest.approx(0.681, abs=1e-3) and r.high == pytest.approx(11.75, abs=1e-2)


def test_two_reports_of_unequal_round_counts_still_get_an_interval():
    """Unpaired rows need not have as many rounds as each other (paired ones must)."""
    a = _res("WAL", [100.0, 200.0, 400.0], est=200.0)
    b = _res("TRUNCATE", [50.0, 50.0, 100.0, 100.0], est=75.0)
    assert headtohead.unpaired_ratio(a, b, 99.0).bounds is not None
    assert headtohead.paired_ratio(a, b, 99.0).bounds is None


def test_rounds_without_spread_on_both_sides_give_a_point_interval_on_pooled_df():
    """No variance on either side: Welch's df is 0/0, so df is ka + kb - 2 and the
    interval is the ratio itself."""
    a = _res("WAL", [300.0] * 3)
    b = _res("TRUNCATE", [100.0] * 5)
    r = headtohead.unpaired_ratio(a, b, 50.0)
    assert r.df == 6.0
    assert r.ratio == pytest.approx(3.0) and r.bounds == pytest.approx((3.0, 3.0))
    assert r.reason == ""


# ------------------------------------------------------------------ no interval: the reasons


def test_paired_rows_of_different_round_counts_keep_the_whole_runs_ratio_and_say_why():
    a = _res("WAL", [100.0, 200.0, 400.0], est=300.0)
    b = _res("TRUNCATE", [50.0, 50.0, 100.0, 100.0], est=100.0)
    r = headtohead.paired_ratio(a, b, 50.0)
    assert (r.ratio, r.low, r.high, r.df, r.rounds) == (3.0, None, None, 0.0, 3)
    assert r.reason == "the two rows have different rounds"
    assert (
        view.ratio_phrase(r)
        == "3.00x slower at p50 (no interval: the two rows have different rounds)"
    )


@pytest.mark.parametrize(
    ("rounds", "ratio", "reason"),
    [
        (
            (),
            headtohead.paired_ratio,
            "no rounds recorded: at least 3 are needed",
        ),
        ((1.0, 2.0), headtohead.paired_ratio, "2 rounds: at least 3 are needed"),
        ((), headtohead.unpaired_ratio, "no rounds recorded: at least 3 are needed on each side"),
        ((1.0, 2.0), headtohead.unpaired_ratio, "2 rounds: at least 3 are needed on each side"),
    ],
)
def test_too_few_rounds_say_how_many_there_were_and_how_many_are_needed(rounds, ratio, reason):
    a = _res("WAL", [x * 3 for x in rounds], est=600.0)
    b = _res("TRUNCATE", rounds, est=200.0)
    r = ratio(a, b, 99.0)
    assert (r.ratio, r.bounds, r.df, r.reason) == (3.0, None, 0.0, reason)
    assert view.ratio_phrase(r) == f"3.00x slower at p99 (no interval: {reason})"


@pytest.mark.parametrize(
    ("a_rounds", "a_est", "b_rounds", "b_est"),
    [
        ((200.0, 0.0, 200.0), 200.0, (100.0, 100.0, 100.0), 100.0),  # a round of A at 0
        ((200.0, 200.0, 200.0), 200.0, (100.0, 0.0, 100.0), 100.0),  # a round of B at 0
        ((200.0, 200.0, 200.0), 0.0, (100.0, 100.0, 100.0), 100.0),  # A's whole-run p50 0
    ],
)
def test_a_zero_figure_leaves_no_interval(a_rounds, a_est, b_rounds, b_est):
    for ratio in (headtohead.paired_ratio, headtohead.unpaired_ratio):
        r = ratio(_res("WAL", a_rounds, a_est), _res("TRUNCATE", b_rounds, b_est), 50.0)
        assert (r.ratio, r.bounds, r.df, r.reason) == (
            a_est / b_est,
            None,
            0.0,
            "a round measured 0 ns",
        )


def test_b_at_zero_is_an_infinite_ratio_not_a_division_error():
    a = _res("WAL", [200.0, 200.0, 200.0])
    b = _res("TRUNCATE", [100.0, 100.0, 100.0], est=0.0)
    for ratio in (headtohead.paired_ratio, headtohead.unpaired_ratio):
        r = ratio(a, b, 50.0)
        assert r.ratio == math.inf and r.bounds is None and r.reason == "a round measured 0 ns"
        assert view.ratio_phrase(r) == "at p50: no ratio (a figure is 0)"


def test_figures_of_one_nanosecond_or_less_are_still_divided():
    a = _res("WAL", [1.0, 2.0, 4.0], est=1.0)
    b = _res("TRUNCATE", [1.0, 1.0, 1.0], est=1.0)
    r = headtohead.paired_ratio(a, b, 50.0)
    assert r.bounds is not None and r.reason == ""
    half = _res("TRUNCATE", [1.0, 2.0], est=0.5)
    r = headtohead.paired_ratio(_res("WAL", [1.0, 2.0], est=1.0), half, 50.0)
    assert r.ratio == 2.0 and r.reason == "2 rounds: at least 3 are needed"


# ------------------------------------------------------------------ the nearest rival


def test_the_rival_is_nearest_by_ratio_not_by_size():
    """100 against 50 (2x) and 150 (1.5x): 150 is nearer, though 50 is the smaller."""
    chosen = commit("WAL", "FULL", 100)
    near, far = commit("TRUNCATE", "FULL", 150), commit("DELETE", "FULL", 50)
    assert headtohead.rival(chosen, [chosen, far, near]).name == "truncate/full"
    assert headtohead.rival(chosen, [chosen, near, far]).name == "truncate/full"


def test_a_rival_at_zero_is_left_out_and_one_at_one_nanosecond_is_not():
    chosen = commit("WAL", "FULL", 100)
    zero, one = _res("TRUNCATE", [], est=0.0), _res("DELETE", [], est=1.0)
    assert headtohead.rival(chosen, [chosen, zero]) is None
    assert headtohead.rival(chosen, [chosen, zero, one]).name == "delete/full"


def test_a_chosen_row_at_zero_has_no_rival_and_one_at_one_nanosecond_has():
    other = commit("TRUNCATE", "FULL", 100)
    assert headtohead.rival(_res("WAL", [], est=0.0), [other]) is None
    assert headtohead.rival(_res("WAL", [], est=1.0), [other]).name == "truncate/full"
