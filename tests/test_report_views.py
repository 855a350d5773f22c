"""The report a design review reads: the bottom line, one description in three formats that
agree, escaping, and the HTML's first screen in headless Chromium.

Expected figures are hand-computed from the fixtures: ``factories.summary_at(p50)`` puts
p99 at 1.5 x p50, ops/s at 1e9 / (1.05 x p50) and the p50 interval at +-2 %."""

from __future__ import annotations

import dataclasses
import html as html_lib
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest
import sampled
from clitools import fsb
from factories import BARE, WB_SSD, commit, flush, host

from fsyncbench import api
from fsyncbench import report as report_out
from fsyncbench.report import answer, describe, findings_text
from fsyncbench.report.document import Paragraph, pretty


def _report(results, the_host=None, **kw):
    h = the_host or host(disks=(WB_SSD,), virt=BARE)
    return api.build_report("run", h, results, ("fsyncbench", "run", "/data"), **kw)


def _honest(*commits):
    return _report([flush("fdatasync", 900_000, flushes=1000, syncs=1000), *commits])


def _para(doc, lead: str) -> Paragraph:
    section = doc.section("answer")
    return next(b for b in section.blocks if isinstance(b, Paragraph) and b.lead == lead)


# --------------------------------------------------------------------------- bottom line


def test_bottom_line_names_the_fastest_durable_configuration_and_its_cost():
    rep = _honest(
        commit("WAL", "OFF", 40_000),
        commit("WAL", "FULL", 1_000_000),
        commit("TRUNCATE", "FULL", 1_500_000),
    )
    b = answer.bottom_line(rep)
    assert (b.durable.name, b.fastest_other.name) == ("wal/full", "wal/off")
    assert b.cost_p50_ns == 960_000 and b.cost_ratio == pytest.approx(25.0)
    assert b.p99_share_of_model_call == pytest.approx(1_500_000 / 1e9)
    assert b.durable.ties == ()  # truncate/full's p50 interval [1.47, 1.53] ms is clear of it
    doc = describe.describe(rep)
    assert _para(doc, "Choose:").text == (
        "wal/full: p50 1 ms, p99 1.5 ms [1.35 ms, 1.65 ms], 952 commits/s. It is the fastest "
        "configuration measured here whose settings promise a durable commit (it waits for "
        "fdatasync). Against truncate/full, its nearest rival: 1.50x faster at p50 and 1.50x "
        "at p99 (no intervals: no rounds recorded: at least 3 are needed)."
    )
    assert _para(doc, "Cost of durability:").text == (
        "960 us more per commit at p50 (25x) than wal/off, the fastest configuration that does "
        "not promise durability (p50 40 us, p99 60 us [54 us, 66 us], 23,810 commits/s). At p99 "
        "a durable commit adds 0.15 % to a 1.00 s model call per step (set yours with "
        "--model-call-ms)."
    )
    trust = _para(doc, "Trust the storage?").text
    # not proven by a power cut: the lab's lying drive got this very verdict
    assert trust.startswith(
        "Probably, not proven: a drive that drops flushes at the pace of real ones looks the "
        "same until a power cut. Path verdict: honest_flush, "
    )
    assert _para(doc, "Next step:").text != ""


def test_a_verdict_a_power_cut_proved_is_trusted_without_a_hedge():
    rep = _honest(commit("WAL", "OFF", 40_000), commit("WAL", "FULL", 1_000_000))
    assert rep.verdict.path_verdict == "honest_flush" and rep.verdict.strength != "proven"
    proven = dataclasses.replace(rep, verdict=dataclasses.replace(rep.verdict, strength="proven"))
    assert answer.bottom_line(proven).trust == "yes"
    trust = _para(describe.describe(proven), "Trust the storage?").text
    assert trust.startswith("Yes. Path verdict: honest_flush, proven by a power cut"), trust


def test_bottom_line_says_when_durable_configurations_cannot_be_told_apart():
    rep = _honest(
        commit("WAL", "FULL", 1_000_000),
        commit("TRUNCATE", "FULL", 1_010_000),
        commit("WAL", "NORMAL", 1_005_000),
    )
    b = answer.bottom_line(rep)
    assert b.durable.name == "wal/full" and b.durable.ties == ("truncate/full",)
    doc = describe.describe(rep)
    assert ("truncate/full is not measurably slower at p50 (the 95 % intervals overlap).") in _para(
        doc, "Choose:"
    ).text
    # wal/normal's p50 [0.985, 1.025] ms overlaps wal/full's: no cost is claimed
    assert "cannot be told apart at p50" in _para(doc, "Cost of durability:").text


def test_bottom_line_says_cannot_tell_where_an_interval_is_missing():
    """wal/full without a p50 interval: truncate/full is not called "not measurably
    slower" (it is 3x slower); the bottom line says it cannot tell and what would settle
    it, and the cost against wal/off is the estimates' only."""
    full = commit("WAL", "FULL", 1_000_000)
    full = dataclasses.replace(
        full, summary=dataclasses.replace(full.summary, p50_ci_ns=None, p50_interval=None)
    )
    rep = _honest(full, commit("TRUNCATE", "FULL", 3_000_000), commit("WAL", "OFF", 40_000))
    b = answer.bottom_line(rep)
    assert b.durable.ties == () and b.durable.untold == ("truncate/full",)
    choose = _para(describe.describe(rep), "Choose:").text
    assert "not measurably slower" not in choose
    assert (
        "Cannot tell whether truncate/full is slower at p50: wal/full's p50 has no interval "
        "(more samples would settle it: a longer --run-budget-seconds, or fewer "
        "configurations with --journal-mode/--synchronous)."
    ) in choose
    cost = _para(describe.describe(rep), "Cost of durability:").text
    assert "By the estimates alone: wal/full has no p50 interval" in cost


def test_an_audit_bottom_line_calls_its_latency_a_short_look():
    rep = dataclasses.replace(_honest(commit("WAL", "FULL", 1_000_000)), kind="audit")
    assert "the audit's short look at latency" in _para(describe.describe(rep), "Choose:").text
    run = _para(describe.describe(_honest(commit("WAL", "FULL", 1_000_000))), "Choose:").text
    assert "short look" not in run


def test_bottom_line_without_a_durable_configuration_says_what_to_measure():
    rep = _honest(commit("WAL", "OFF", 40_000), commit("WAL", "NORMAL", 45_000))
    doc = describe.describe(rep)
    assert _para(doc, "Choose:").text.startswith(
        "no configuration measured here promises a durable commit"
    )
    assert all(b.lead != "Cost of durability:" for b in doc.section("answer").blocks)


def test_bottom_line_of_a_report_without_commits_says_so():
    doc = describe.describe(_honest())
    assert _para(doc, "Choose:").text == (
        "no commit configuration was measured here, only the raw sync primitives below; "
        "`fsyncbench run DIR` measures the commits too."
    )


def test_bottom_line_on_storage_that_drops_syncs_says_nothing_is_durable():
    rep = _report(
        [commit("WAL", "FULL", 30_000), commit("WAL", "OFF", 25_000)],
        the_host=host(fs_type="tmpfs", virt=BARE),
    )
    assert rep.verdict.path_verdict == "no_flush"
    b = answer.bottom_line(rep)
    assert b.durable_here is False and b.trust == "no"
    text = _para(describe.describe(rep), "Choose:").text
    assert text.startswith(
        "nothing measured here is durable on this storage: syncs do not "
        "reach stable media (path verdict no_flush)."
    )


@pytest.mark.slow
def test_model_call_is_the_users_unit(tmp_path):
    path = sampled.save(sampled.report(), tmp_path / "r.json")
    out = fsb("show", path, "--model-call-ms", "50").stdout
    # wal/full p99 of the sampled report over a 50 ms call
    p99 = next(r for r in sampled.report().results if r.name == "wal/full").summary.p99_ns
    assert f"adds {100 * p99 / 50e6:.2g} % to a 50 ms model call" in out
    bad = fsb("show", path, "--model-call-ms", "0")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--model-call-ms" in bad.stderr


# --------------------------------------------------------------------------- one voice


def _facts(text: str) -> Counter:
    """Numbers with their units and the verdict words, as a multiset, from any format."""
    # the page head repeats the title; figures (and their captions) are the HTML's own
    text = re.sub(r"<head>.*?</head>|<figure>.*?</figure>", "", text, flags=re.S)
    text = html_lib.unescape(re.sub(r"<[^>]+>", " ", text))
    text = (
        text.replace("\u00a0", " ")
        .replace("\\", "")
        .replace("µs", "us")
        .replace("±", "+-")
        .replace("×", "x")
    )
    tokens = re.findall(r"\d[\d,.]*(?: ?(?:ns|us|ms|s|%|x)\b)?", text)
    words = re.findall(r"\b(?:honest_flush|no_flush|volatile_cache|unverifiable|yes|NO)\b", text)
    return Counter(tokens + words)


@pytest.mark.slow
@pytest.mark.parametrize(
    "build",
    [
        lambda: sampled.report(),
        lambda: _honest(commit("WAL", "OFF", 40_000), commit("WAL", "FULL", 1_000_000)),
        lambda: sampled.report(the_host=host(fs_type="tmpfs")),
    ],
    ids=["sampled", "factories", "tmpfs"],
)
def test_text_markdown_and_html_carry_the_same_facts(build):
    rep = build()
    text, md, page = (report_out.render(rep, f, verbose=True) for f in ("text", "markdown", "html"))
    facts = _facts(text)
    assert facts == _facts(md)
    assert facts == _facts(page)
    assert sum(facts.values()) > 50


def test_a_dropped_cell_would_show():
    """The comparison above notices one missing figure (the test can fail)."""
    rep = sampled.report()
    text = report_out.render(rep, "text", verbose=True)
    row = next(ln for ln in text.splitlines() if ln.startswith("wal/full ") and "commit" in ln)
    assert _facts(text) != _facts(text.replace(row, row.rsplit(" ", 1)[0]))


def test_hostile_strings_are_shown_not_interpreted():
    evil = "<img src=x onerror=alert(1)> | *x* [l](http://e)"
    rep = sampled.report()
    rep = dataclasses.replace(
        rep,
        host=dataclasses.replace(
            rep.host, hostname=evil, target=dataclasses.replace(rep.host.target, path="/d/" + evil)
        ),
    )
    md = report_out.render(rep, "markdown")
    assert not re.search(r"(?<!\\)<img", md) and "\\<img src=x onerror=alert(1)\\>" in md
    assert "[l](" not in md and "\\[l\\](http://e)" in md
    page = report_out.render(rep, "html")
    assert "<img" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page


def test_pretty_units_only_after_digits():
    assert (
        pretty("41.8 us +-4.2% 3.1x, tell us, 0x10, p99 +-")
        == "41.8 µs ±4.2% 3.1×, tell us, 0x10, p99 ±"
    )


def test_findings_are_grouped_by_code_with_their_configurations():
    rep = sampled.report()
    doc = describe.describe(rep)
    bullets = doc.section("findings").blocks[0]
    codes = [item.lead for item, _subs in bullets.items]
    assert len(codes) == len(set(codes))
    item, subs = next((i, s) for i, s in bullets.items if "config-not-durable" in i.lead)
    assert subs == (
        "wal/off: synchronous=OFF hands data to the OS without any sync. Evidence: "
        "journal mode WAL; synchronous OFF; fullfsync unknown.",
        "wal/normal: WAL with synchronous=NORMAL syncs only at checkpoints; the last "
        "commits may roll back after power loss. Evidence: journal mode WAL; "
        "synchronous NORMAL; fullfsync unknown.",
    )
    assert item.text.startswith("Advice: For a journal that must survive power loss")


def test_evidence_reads_as_sentences_with_units():
    assert findings_text.evidence_text(
        {
            "p50_ns": 45_270.0,
            "hypervisor_flag": True,
            "dmi_vendor": None,
            "flush_ms": 0.1141,
            "dirty_bytes": 4096,
            "bandwidth_bytes_per_s": 5.665e8,
            "elapsed_s": 2.5,
            "ops_per_s": 1234.4,
            "lost_ranges": [[91, 100], [120, 120]],
            "flush_ms_per_flush": 0.047,
        }
    ) == (
        "p50 45.3 us; hypervisor flag yes; dmi vendor unknown; flush 0.1141 ms; "
        "dirty 4,096 bytes; bandwidth 566 MB/s; elapsed 2.5 s; ops 1,234/s; lost ranges 91-100, "
        "120-120; flush time per flush 0.047 ms"
    )


# --------------------------------------------------------------------------- first screen


def _layout(page: str, tmp_path: Path, width: int = 1400) -> dict:
    """At ``width`` x 900, measured by headless Chromium on a copy of the page with a probe
    script added (the report itself has none): the bottom edges (CSS px) of the answer box
    and the first results table, the viewport's height, how far each table overflows its
    box and the page its window (px), and each chart's scale (rendered width over its own
    width, pt as 4/3 px)."""
    probe = (
        "<script>window.addEventListener('load',()=>{const b=s=>document.querySelector(s)"
        ".getBoundingClientRect().bottom;const over=[...document.querySelectorAll('.wide')]"
        ".map(w=>w.scrollWidth-w.clientWidth);const scale=[...document.querySelectorAll("
        "'figure svg')].map(s=>s.getBoundingClientRect().width/(parseFloat(s.getAttribute"
        "('width'))*4/3));document.title=JSON.stringify({answer:b('#answer'),"
        "table:b('#results table'),viewport:window.innerHeight,overflow:over,scale:scale,"
        "page:document.documentElement.scrollWidth-window.innerWidth})})</script>"
    )
    path = tmp_path / "probe.html"
    path.write_text(page.replace("</body>", probe + "</body>"))
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    proc = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--window-size={width},900",
            "--dump-dom",
            path.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    import json

    title = re.search(r"<title>(\{.*?\})</title>", proc.stdout)
    assert title, proc.stderr[-500:]
    return json.loads(html_lib.unescape(title.group(1)))


_CHROMIUM = pytest.mark.skipif(
    not (shutil.which("chromium") or shutil.which("chromium-browser")),
    reason="headless Chromium not installed (apt-get install chromium)",
)


def _page(which: str) -> str:
    """The committed example (a default run of this VM: 14 rows, 8 rounds, 4 earlier runs)
    or a small sampled report, as HTML."""
    from fsyncbench.report import store

    root = Path(__file__).resolve().parent.parent
    examples = sorted((root / "examples" / "report").glob("*.json"))
    rep = store.load_report(examples[-1]) if which == "example" else sampled.report()
    return report_out.render(rep, "html")


@pytest.mark.system
@_CHROMIUM
@pytest.mark.parametrize("which", ["example", "sampled"])
def test_html_first_screen_holds_the_answer_and_the_latency_table(tmp_path, which):
    box = _layout(_page(which), tmp_path)
    assert box["viewport"] > 800
    assert box["answer"] < box["table"] <= 900


@pytest.mark.system
@_CHROMIUM
def test_html_fits_1280_px_and_its_charts_keep_their_text_size(tmp_path):
    """Every table fits a 1,280 px window without scrolling sideways; each chart is drawn at
    least at 90 % of its own size, so the CDF's legend (plots.LEGEND_PT) reads at >= 10 px."""
    from fsyncbench.report import plots

    box = _layout(_page("example"), tmp_path, width=1280)
    assert len(box["overflow"]) >= 2 and max(box["overflow"]) <= 0, box
    assert box["page"] <= 0, box
    assert box["scale"] and min(box["scale"]) >= 0.9, box
    assert plots.LEGEND_PT * 4 / 3 * min(box["scale"]) >= 10


def test_text_never_wraps_a_figure_away_from_its_unit():
    from fsyncbench.report import text as text_out

    for pad in range(text_out.WIDTH - 12, text_out.WIDTH + 2):
        lines = text_out._wrap("x" * pad + " took 893 us (p50) and 1.00 s at most")
        assert not any(ln.endswith(("893", "1.00")) for ln in lines), lines
        assert " ".join(lines).endswith("took 893 us (p50) and 1.00 s at most")


def test_without_matplotlib_the_page_says_its_charts_were_left_out(monkeypatch):
    """matplotlib is the optional extra ``plots``: a page rendered without it has no chart,
    says so once, and keeps every table."""
    import sys

    from fsyncbench.report import plots

    rep = sampled.report()
    with_charts = report_out.render(rep, "html")
    assert "<svg" in with_charts and plots.MISSING not in with_charts
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now fails
    assert not plots.available()
    page = report_out.render(rep, "html")
    assert "<svg" not in page
    assert page.count(html_lib.escape(plots.MISSING)) == 1
    assert page.count("<table") == with_charts.count("<table")


@pytest.mark.parametrize("columns", ["80", "60"])
def test_running_text_wraps_to_columns(columns, monkeypatch):
    """COLUMNS (else the terminal, else 100) sets where running text wraps: every line of
    the example's screen that is not a table row fits. (Tables keep their rows whole.)"""
    import re
    from pathlib import Path

    from fsyncbench.report import store
    from fsyncbench.report import text as text_out

    monkeypatch.setenv("COLUMNS", columns)
    assert text_out.width() == int(columns)
    example = sorted(
        (Path(__file__).resolve().parent.parent / "examples" / "report").glob("*.json")
    )[-1]
    out = report_out.render(store.load_report(example), "text")
    table = re.compile(r"\S  +\S|^-+( +-+)+$")  # columns set apart by runs of spaces, rules
    prose = [line for line in out.splitlines() if not table.search(line)]
    assert prose and max(len(line) for line in prose) <= int(columns), [
        line for line in prose if len(line) > int(columns)
    ]
    monkeypatch.setenv("COLUMNS", "7")  # nonsense: never below 40
    assert text_out.width() == text_out.MIN_WIDTH
    monkeypatch.setenv("COLUMNS", "wide")
    assert text_out.width() == text_out.WIDTH  # not a terminal here: the default


def test_model_call_is_the_users_unit_in_process(tmp_path, capsys):
    from fsyncbench import cli

    rep = sampled.report()
    path = sampled.save(rep, tmp_path / "r.json")
    assert cli.main(["show", str(path), "--model-call-ms", "50"]) == 0
    out = capsys.readouterr().out
    p99 = next(r for r in rep.results if r.name == "wal/full").summary.p99_ns
    assert f"adds {100 * p99 / 50e6:.2g} % to a 50 ms model call" in out
    assert cli.main(["show", str(path), "--model-call-ms", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--model-call-ms" in err


def test_text_markdown_and_html_carry_the_same_facts_of_a_small_report():
    """One build of the slow test above (the factories' two commits and a flush)."""
    rep = _honest(commit("WAL", "OFF", 40_000), commit("WAL", "FULL", 1_000_000))
    text, md, page = (report_out.render(rep, f, verbose=True) for f in ("text", "markdown", "html"))
    facts = _facts(text)
    assert facts == _facts(md)
    assert facts == _facts(page)
    assert sum(facts.values()) > 50
