"""How intervals are written: exact text, and the same interval in every rendering."""

import json

import pytest
import sampled
from clitools import fsb

from fsyncbench import render, render_html, stats, store
from fsyncbench.model import Interval
from fsyncbench.report.fmt import fmt_interval, fmt_precision, fmt_spread


@pytest.mark.parametrize("bounds,text", [
    ((90.0, 110.0), "+-10.0%"),
    ((90.04, 109.96), "+-10.0%"),     # 9.96 % rounds up to 10.0, never down
    ((89.96, 110.04), "+-10.1%"),     # 10.04 % is not shown as 10.0
    ((92.0, 109.0), "+-9.0%"),        # sides 8 and 9: symmetric enough, the larger shown
    ((60.0, 165.0), "+65.0/-40.0%"),  # lopsided: both sides
    ((3.73, 126.0), "+26.0/-96.3%"),
    ((100.0, 100.0), "+-0.0%"),       # zero width: all samples equal
])
def test_precision_text(bounds, text):
    assert fmt_precision(100.0, bounds) == text


def test_no_interval_is_said_not_printed():
    few = stats.quantile_interval(list(range(1, 4001)), [1000] * 4, 99)
    small = stats.quantile_interval(list(range(1, 601)), [60] * 10, 99)
    assert fmt_interval(few.bounds, few) == "none (4 slices)"
    assert fmt_interval(small.bounds, small) == "none (n too small)"
    assert fmt_precision(100.0, None) == "-"
    assert fmt_interval((96_500.0, 3_160_000.0)) == "[96.5 us, 3.16 ms]"
    assert fmt_interval(None, Interval(1.0, None, None, None, 0, 0, "x", "odd")) == "none (no interval)"


def test_round_spread_text():
    assert fmt_spread([310_000.0, 612_000.0, 400_000.0]) == "310 us - 612 us (3 rounds)"
    assert fmt_spread([310_000.0]) == "-"


def test_one_sample_reports_no_interval_end_to_end(tmp_path):
    proc = fsb("run", tmp_path, "--samples", "1", "--rounds", "1", "--no-primitives",
               "--journal-mode", "wal", "--synchronous", "off", "--quiet", "-o", tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    row = next(ln for ln in proc.stdout.splitlines() if ln.startswith("commit"))
    assert "none (n too small)" in row and "+-0.0%" not in row


def test_every_rendering_shows_the_same_interval(tmp_path):
    report = sampled.report(1.0, seed=3)
    r = next(x for x in report.results if x.name == "wal/full")
    cell = fmt_interval(r.summary.p99_ci_ns, r.summary.p99_interval)
    assert cell.startswith("[") and r.summary.p99_ci_ns is not None
    text, md = render.render_text(report), render.render_markdown(report)
    html = render_html.render_html(report)
    for out in (text, md):
        row = next(ln for ln in out.splitlines() if "wal/full" in ln and "fdatasync" in ln)
        assert cell in row
    assert cell in html
    data = json.loads(store.report_to_json(report))
    got = next(x for x in data["results"] if x["name"] == "wal/full")["summary"]["p99_ci_ns"]
    assert tuple(got) == r.summary.p99_ci_ns
    path = sampled.save(report, tmp_path / "a.json")
    other = sampled.save(sampled.report(1.0, seed=4), tmp_path / "b.json")
    out = fsb("compare", path, other).stdout
    row = next(ln for ln in out.splitlines() if ln.lstrip().startswith("p99") and cell in ln)
    assert cell in row


def test_schema_1_reports_say_their_intervals_assume_independence():
    from pathlib import Path

    fixture = next(p for p in sorted(Path(__file__).parent.glob("fixtures/reports/*.json"))
                   if json.loads(p.read_text())["schema_version"] == 1
                   and json.loads(p.read_text())["results"])
    proc = fsb("show", fixture, "--format", "markdown")
    assert proc.returncode == 0, proc.stderr
    assert "report schema 1) assume independent samples" in proc.stdout
