"""The HTML report, rendered from recorded facts (the screenshot check with headless
Chromium is in tests/test_report_views.py)."""

import re
import subprocess
import sys

import numpy as np
import pytest
import sampled
from factories import host

from fsyncbench import report as report_out
from fsyncbench.report import plots


def test_html_report_has_the_answer_and_table_first_then_charts_findings_and_host():
    page = report_out.render(sampled.report(), "html")
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    svgs = re.findall(r"<svg\b.*?</svg>", page, flags=re.S)
    assert len(svgs) == 3  # configurations, the CDF and the per-primitive histograms
    assert all("<path" in s for s in svgs)
    order = [
        page.index(s)
        for s in (
            '<section id="answer"',
            "<strong>Choose:</strong>",
            '<section id="results"',
            "p99 95% interval",  # the compact table
            "<svg",
            '<section id="statistics"',
            "p99 95% CI",  # every statistic
            '<section id="findings"',
            '<section id="counters"',
            '<section id="host"',
            '<section id="method"',
            '<section id="glossary"',
        )
    ]
    assert order == sorted(order)
    for text in ("wal/full", "write+fdatasync", "Samsung SSD 870", "flushes per sync"):
        assert text in page, text
    # every legend entry of the CDF is there: one line per result
    assert len(re.findall(r'<g id="cdf-line2d_', page)) >= 5


def test_html_is_self_contained():
    page = report_out.render(sampled.report(), "html")
    assert "<script" not in page and "<link" not in page and "@import" not in page
    assert not re.search(r'(src|href)="(https?:)?//', page)
    assert "url(http" not in page
    ids = re.findall(r'\bid="([^"]+)"', page)
    assert len(ids) == len(set(ids))  # inline SVGs must not share an id


@pytest.mark.slow
def test_html_escapes_and_copes_with_no_samples_and_no_primitives():
    rep = sampled.report(the_host=host(fs_type="<b>fs</b>"))
    page = report_out.render(rep, "html")
    assert "<b>fs</b>" not in page and "&lt;b&gt;fs&lt;/b&gt;" in page
    bare = rep.__class__(
        **{
            **rep.__dict__,
            "results": tuple(
                r.__class__(**{**r.__dict__, "samples_ns": ()})
                for r in rep.results
                if r.kind == "commit"
            ),
        }
    )
    page = report_out.render(bare, "html")
    assert page.count("<svg") == 0 and "<figure" not in page


def test_cdf_points_are_thinned_but_keep_the_tail():
    data = np.arange(1, 100_001)
    x, y = plots.cdf_points(data)
    assert len(x) <= plots.CDF_MAX_POINTS + 1
    assert x[-1] == 100_000 and 0 < y[0] < y[-1] < 1
    assert np.all(np.diff(x) >= 0) and np.all(np.diff(y) > 0)


@pytest.mark.slow
def test_cli_show_html_to_a_file(tmp_path):
    report = sampled.save(sampled.report(), tmp_path / "r.json")
    out = tmp_path / "r.html"
    proc = subprocess.run(
        [sys.executable, "-m", "fsyncbench", "show", report, "--format", "html", "--output", out],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and out.read_text().count("<svg") == 3


def test_html_escapes_and_copes_with_no_samples_without_drawing_a_chart():
    """The fast twin of the test above: no samples, so no chart is drawn (matplotlib is
    what takes the time); the hostile filesystem name is still escaped."""
    rep = sampled.report(the_host=host(fs_type="<b>fs</b>"))
    bare = rep.__class__(
        **{
            **rep.__dict__,
            "results": tuple(
                r.__class__(**{**r.__dict__, "samples_ns": ()})
                for r in rep.results
                if r.kind == "commit"
            ),
        }
    )
    page = report_out.render(bare, "html")
    assert "<b>fs</b>" not in page and "&lt;b&gt;fs&lt;/b&gt;" in page
    assert page.count("<svg") == 0 and "<figure" not in page


def test_cli_show_html_to_a_file_in_process(tmp_path, capsys):
    from fsyncbench import cli

    report = sampled.save(sampled.report(), tmp_path / "r.json")
    out = tmp_path / "r.html"
    code = cli.main(["show", str(report), "--format", "html", "--output", str(out)])
    stdout, stderr = capsys.readouterr()
    assert code == 0, stderr
    assert stdout == "" and out.read_text().count("<svg") == 3
