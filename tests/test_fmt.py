"""How intervals are written: exact text, and the same interval in every rendering."""

import json
import re

import pytest
import sampled
from clitools import fsb

from fsyncbench import report as report_out
from fsyncbench.fmt import (
    fmt_bounds,
    fmt_interval,
    fmt_ns,
    fmt_precision,
    fmt_spread,
    short_reason,
)
from fsyncbench.measure import intervals
from fsyncbench.model import Interval
from fsyncbench.report import store
from fsyncbench.report.document import pretty


@pytest.mark.parametrize(
    "bounds,text",
    [
        ((90.0, 110.0), "+-10.0%"),
        ((90.04, 109.96), "+-10.0%"),  # 9.96 % rounds up to 10.0, never down
        ((89.96, 110.04), "+-10.1%"),  # 10.04 % is not shown as 10.0
        ((92.0, 109.0), "+-9.0%"),  # sides 8 and 9: symmetric enough, the larger shown
        ((60.0, 165.0), "+65.0/-40.0%"),  # lopsided: both sides
        ((3.73, 126.0), "+26.0/-96.3%"),
        ((100.0, 100.0), "+-0.0%"),  # zero width: all samples equal
    ],
)
def test_precision_text(bounds, text):
    assert fmt_precision(100.0, bounds) == text


def test_no_interval_is_said_not_printed():
    few = intervals.quantile_interval(list(range(1, 4001)), [1000] * 4, 99)
    small = intervals.quantile_interval(list(range(1, 601)), [60] * 10, 99)
    assert fmt_interval(few.bounds, few) == "none (4 slices)"
    assert fmt_interval(small.bounds, small) == "none (n too small)"
    assert fmt_precision(100.0, None) == "-"
    assert fmt_interval((96_500.0, 3_160_000.0)) == "[96.5 us, 3.16 ms]"
    assert (
        fmt_interval(None, Interval(1.0, None, None, None, 0, 0, "x", "odd"))
        == "none (no interval)"
    )


def test_round_spread_text():
    assert fmt_spread([310_000.0, 612_000.0, 400_000.0]) == "310 us - 612 us (3 rounds)"
    assert fmt_spread([310_000.0]) == "-"


def _one_sample_reports_no_interval_end_to_end(fsb, tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "1000")  # the statistics table's rows whole
    proc = fsb(
        "run",
        tmp_path,
        "--samples",
        "1",
        "--rounds",
        "1",
        "--no-primitives",
        "--journal-mode",
        "wal",
        "--synchronous",
        "off",
        "--quiet",
        "--verbose",
        "--report-dir",
        tmp_path / "out",
    )
    assert proc.returncode == 0, proc.stderr
    # the label may carry " (at the tool's floor)": wal/off commits near the in-memory floor
    row = next(ln for ln in proc.stdout.splitlines() if re.match(r"wal/off\b.* +commit ", ln))
    assert "none (n too small)" in row and "+-0.0%" not in row


@pytest.mark.slow
def test_one_sample_reports_no_interval_end_to_end(tmp_path, monkeypatch):
    _one_sample_reports_no_interval_end_to_end(fsb, tmp_path, monkeypatch)


def test_one_sample_reports_no_interval_end_to_end_in_process(tmp_path, monkeypatch, here):
    _one_sample_reports_no_interval_end_to_end(here, tmp_path, monkeypatch)


def _every_rendering_shows_the_same_interval(fsb, tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "1000")  # the statistics table's rows whole
    report = sampled.report(1.0, seed=3)
    r = next(x for x in report.results if x.name == "wal/full")
    cell = fmt_interval(r.summary.p99_ci_ns, r.summary.p99_interval)
    assert cell.startswith("[") and r.summary.p99_ci_ns is not None
    text = report_out.render(report, "text", verbose=True)
    md = report_out.render(report, "markdown")
    html = report_out.render(report, "html").replace("\u00a0", " ")
    for out, shown in ((text, cell), (md, pretty(cell).replace("[", "\\[").replace("]", "\\]"))):
        row = next(
            ln
            for ln in out.splitlines()
            if "commit" in ln
            and "fdatasync" in ln
            and ln.lstrip("|").lstrip().startswith("wal/full ")
        )
        assert shown in row
    assert pretty(cell) in html
    data = json.loads(store.report_to_json(report))
    got = next(x for x in data["results"] if x["name"] == "wal/full")["summary"]["p99_ci_ns"]
    assert tuple(got) == r.summary.p99_ci_ns
    path = sampled.save(report, tmp_path / "a.json")
    other = sampled.save(sampled.report(1.0, seed=4), tmp_path / "b.json")
    out = fsb("compare", path, other, "--verbose").stdout
    row = next(ln for ln in out.splitlines() if ln.lstrip().startswith("p99") and cell in ln)
    assert cell in row


@pytest.mark.slow
def test_every_rendering_shows_the_same_interval(tmp_path, monkeypatch):
    _every_rendering_shows_the_same_interval(fsb, tmp_path, monkeypatch)


def test_every_rendering_shows_the_same_interval_in_process(tmp_path, monkeypatch, here):
    _every_rendering_shows_the_same_interval(here, tmp_path, monkeypatch)


def test_schema_1_reports_say_their_intervals_assume_independence():
    from pathlib import Path

    fixture = next(
        p
        for p in sorted(Path(__file__).parent.glob("fixtures/reports/*.json"))
        if json.loads(p.read_text())["schema_version"] == 1 and json.loads(p.read_text())["results"]
    )
    proc = fsb("show", fixture, "--format", "markdown")
    assert proc.returncode == 0, proc.stderr
    assert "report schema 1) assume independent samples" in proc.stdout


@pytest.mark.parametrize(
    "ns,text",
    [
        (None, "-"),
        (999, "999 ns"),
        (1_000, "1 us"),  # 1.000 us: the unit changes at 1,000 ns; "g" drops the zeros
        (41_800, "41.8 us"),
        (99_999, "100 us"),  # 99.999 us to 3 significant digits
        (123_456, "123 us"),
        (999_999, "1000 us"),  # 999.999 us to whole us (no "1e+03 us")
        (3_020_000, "3.02 ms"),
        (2_345_001, "2.35 ms"),  # 2.345001 ms rounds up to 2.35
        (250_000_000, "250 ms"),
        (250_500_200, "251 ms"),  # 250.5002 ms to whole ms
        (999_999_999, "1000 ms"),  # 999.999999 ms to whole ms (no "1e+03 ms")
        (1_000_000_000, "1.00 s"),  # the unit changes at 1 s
        (1_200_000_000, "1.20 s"),
        (1_235_000_001, "1.24 s"),  # 1.235000001 s rounds up to 1.24
    ],
)
def test_duration_text(ns, text):
    assert fmt_ns(ns) == text


def test_bounds_text():
    assert fmt_bounds((1_000.0, 2_500_000.0)) == "[1 us, 2.5 ms]"
    assert fmt_bounds(None) == "-"


@pytest.mark.parametrize(
    "reason,blocks,cell",
    [
        ("n=400 too small for a p99 interval (needs 1000)", 10, "none (n too small)"),
        ("1 slice(s): too few for a p99 interval (needs 5)", 1, "none (1 slice)"),
        ("2 slice(s): too few for a p99 interval (needs 5)", 2, "none (2 slices)"),
        (
            "the samples at or beyond p99 lie in too few slices (1.00 effective) for an interval",
            10,
            "none (tail in too few slices)",
        ),
        (
            "the samples at or beyond p99 lie in too few rounds (1.50 effective) for an interval",
            3,
            "none (tail in too few rounds)",
        ),
        (
            (
                "the slices disagree too much for an interval (it would reach beyond the samples "
                "measured; 2.0 effective slices)"
            ),
            10,
            "none (slices disagree)",
        ),
        (
            (
                "the rounds disagree too much for an interval (it would reach beyond the samples "
                "measured; 2.0 effective rounds)"
            ),
            3,
            "none (rounds disagree)",
        ),
        ("the timer could not resolve the operation (zero times)", 10, "none (no interval)"),
        (None, 10, "-"),  # no bounds and no reason: nothing to say
    ],
)
def test_why_there_is_no_interval(reason, blocks, cell):
    iv = Interval(40_000.0, None, None, None, 0.0, blocks, "block-jackknife", reason)
    assert fmt_interval(None, iv) == cell


def test_no_interval_and_nothing_known():
    assert fmt_interval(None) == "-"
    assert short_reason(None) == ""


@pytest.mark.parametrize(
    "estimate,bounds,text",
    [
        (100.0, (99.5, 100.5), "+-0.5%"),  # sides below 1 %: still symmetric
        (100.0, (80.0, 125.0), "+-25.0%"),  # 25 / 20 = 1.25 exactly: still symmetric enough
        (100.0, (80.0, 125.5), "+25.5/-20.0%"),  # 25.5 / 20 = 1.275: both sides
        (100.0, (60.0, 100.5), "+0.5/-40.0%"),  # a lopsided side below 1 % is shown as it is
        (100.0, (99.5, 150.0), "+50.0/-0.5%"),
        (100.0, (101.0, 110.0), "+10.0/-0.0%"),  # the estimate below the interval: no negative side
        (0.5, (0.25, 0.75), "+-50.0%"),  # an estimate below 1 ns is still an estimate
        (0.0, (0.0, 1.0), "-"),  # no positive estimate: no percentage
        (-1.0, (-2.0, 1.0), "-"),
    ],
)
def test_precision_edges(estimate, bounds, text):
    assert fmt_precision(estimate, bounds) == text


def test_round_spread_needs_two_rounds():
    assert fmt_spread([612_000.0, 310_000.0]) == "310 us - 612 us (2 rounds)"
    assert fmt_spread([]) == "-"


def test_bandwidth_reads_the_same_in_every_place():
    """One formatter for the dirty-size sweep's bandwidth (audit finding and evidence lines):
    decimal units as drive makers quote them; GB/s from 1e9 bytes/s on."""
    from fsyncbench.fmt import fmt_bandwidth

    assert fmt_bandwidth(16_388_059_000.0) == "16.39 GB/s"
    assert fmt_bandwidth(1e9) == "1.00 GB/s"
    assert fmt_bandwidth(999_400_000.0) == "999 MB/s"
    assert fmt_bandwidth(850e6) == "850 MB/s"
    assert fmt_bandwidth(None) == "unbounded (no growth with size)"
    # exact decimal units at a rounding edge (1.375 and 3.5 are exact binary fractions,
    # rounded half to even): a divisor off by one byte would print 1.37 GB/s and 3 MB/s
    assert fmt_bandwidth(1_375_000_000.0) == "1.38 GB/s"
    assert fmt_bandwidth(3_500_000.0) == "4 MB/s"


def test_the_method_names_the_slice_count_once_when_every_configuration_has_the_same():
    """ "each configuration's 5 slices", not "5-5"; a range only where the counts differ."""
    import dataclasses

    from fsyncbench.report.method_text import interval_method_text

    rep = sampled.report(1.0, seed=0)
    same = [dataclasses.replace(r, slice_counts=(400,) * 5) for r in rep.results]
    assert "each configuration's 5 slices, a rotation" in interval_method_text(same)
    mixed = [same[0], dataclasses.replace(same[1], slice_counts=(100,) * 4 + (50,) * 4)]
    assert "each configuration's 5-8 slices, a rotation" in interval_method_text(mixed)


def test_every_no_interval_reason_the_table_can_show_is_explained():
    """Each short reason a "none (...)" cell can carry has a sentence in the legend the
    screen and the report print under the table (they were never explained before)."""
    from fsyncbench.report.method_text import NO_INTERVAL_MEANS

    reasons = [
        "n=12 too small for a p99 interval (needs 1000)",
        "the samples at or beyond p99 lie in too few slices (1.00 effective) for an interval",
        "the samples at or beyond p99 lie in too few rounds (1.50 effective) for an interval",
        "the slices disagree too much for an interval (it would reach beyond the samples "
        "measured; 4.6 effective slices)",
        "the rounds disagree too much for an interval (it would reach beyond the samples "
        "measured; 2.2 effective rounds)",
    ]
    for reason in reasons:
        iv = Interval(1.0, None, None, None, 0.0, 5, "block-jackknife", reason)
        short = short_reason(iv)
        assert short in NO_INTERVAL_MEANS, (reason, short)
