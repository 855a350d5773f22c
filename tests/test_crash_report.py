"""``fsyncbench crash`` and ``powerloss`` as reports (issue 28): the answer before the tables,
progress on stderr like run's, the report saved in --report-dir (JSON + Markdown + HTML)
that ``show`` renders again in every format, a bad --report-dir refused before any work,
and fleets that leave these reports out. Real processes and real kills: one crash run for
the module (about 5 s), the smallest powerloss the other tests use."""

from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path

import pytest
import sampled
from clitools import assert_usage_error, fsb, leftovers
from test_cli_conventions import _stderr_on_a_pty

import fsyncbench
from fsyncbench.report import store

needs_fork = pytest.mark.skipif(
    not hasattr(os, "fork") or not hasattr(signal, "SIGKILL"), reason="needs os.fork and SIGKILL"
)

ANSWER = "Killed at each of its 30 points, the agent with a step journal and idempotency keys"


@pytest.fixture(scope="module")
def crashed(tmp_path_factory):
    """One ``fsyncbench crash`` in a fresh directory, saving in the default reports/."""
    root = tmp_path_factory.mktemp("crash-report")
    target = root / "target"
    target.mkdir()
    proc = fsb("crash", target, cwd=root)
    assert proc.returncode == 0, proc.stderr
    return root, target, proc


@needs_fork
def test_the_answer_comes_before_the_table(crashed):
    _root, _target, proc = crashed
    out = proc.stdout
    lines = out.splitlines()
    assert lines[0].startswith("fsyncbench crash: ")
    answer = " ".join(out.split()).index(ANSWER)
    table = " ".join(out.split()).index("no persistence 20 3 17,967")
    assert answer < table, out
    assert out.index("Bottom line") < out.index("\npolicy ") < out.index("Replay of a completed")
    assert "duplicated no ticket, page or status update" in " ".join(out.split())


@needs_fork
def test_the_report_is_saved_and_show_renders_it_again(crashed, tmp_path):
    root, target, proc = crashed
    files = sorted((root / "reports").iterdir())
    assert [p.suffix for p in files] == [".html", ".json", ".md"]
    assert all(p.name.endswith("-crash" + p.suffix) for p in files)
    written = ", ".join(str(Path("reports") / p.name) for p in (files[1], files[2], files[0]))
    assert " ".join(proc.stderr.split()) == f"Report written: {written}"  # wrapped between paths
    assert leftovers(target) == [] and list(target.iterdir()) == []
    saved = files[1]
    report = store.load_report(saved)
    assert report.kind == "crash" and report.results == () and report.crash is not None
    assert report.crash.matrix.kill_count == 120
    # the whole command's wall time: at least the kill matrix's own
    assert report.elapsed_ns is not None and report.elapsed_ns >= report.crash.matrix.elapsed_ns > 0
    for fmt in ("text", "markdown", "json", "html"):
        shown = fsb("show", saved, "--format", fmt)
        assert shown.returncode == 0 and shown.stderr == "", (fmt, shown.stderr)
        if fmt == "text":  # the terminal's text, as crash printed it
            assert shown.stdout == proc.stdout
        else:
            suffix = {"markdown": ".md", "json": ".json", "html": ".html"}[fmt]
            assert shown.stdout == saved.with_suffix(suffix).read_text(), fmt
    md = saved.with_suffix(".md").read_text()
    assert md.index("## Bottom line") < md.index("| policy") < md.index("## Host")
    page = saved.with_suffix(".html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "journal + idempotency keys" in page
    assert page.index(ANSWER) < page.index("<table")


@needs_fork
@pytest.mark.slow
def test_progress_on_a_terminal_and_never_past_its_total(tmp_path):
    argv = ["crash", tmp_path, "--report-dir", tmp_path / "o"]
    code, seen = _stderr_on_a_pty(argv, tmp_path)
    assert code == 0, seen
    bars = re.findall(rb"([\d.]+)/(\d+) parts", seen)
    counters = re.findall(rb"(?:step journal|replay and reorder) (\d+)/(\d+)", seen)
    assert bars and {total for _n, total in bars} == {b"5"}, seen
    assert all(float(n) <= float(total) for n, total in bars), seen
    assert bars[-1][0] == b"5.0" and counters, seen
    assert all(int(n) <= int(target) for n, target in counters), seen
    assert b"Report written:" in seen
    code, seen = _stderr_on_a_pty([*argv, "--quiet"], tmp_path)
    assert code == 0 and b"parts" not in seen, seen


@needs_fork
def test_no_progress_when_stderr_is_not_a_terminal(crashed):
    _root, _target, proc = crashed
    assert "parts" not in proc.stderr and "\r" not in proc.stderr
    assert proc.stderr.startswith("Report written:")


@pytest.mark.parametrize("command", ["crash", "powerloss"])
def test_a_report_dir_that_is_a_file_is_one_line_before_any_work(tmp_path, command):
    afile = tmp_path / "afile"
    afile.write_text("")
    target = tmp_path / "t"
    target.mkdir()
    proc = fsb(command, target, "--report-dir", afile)
    assert_usage_error(proc, f"output {afile} is not a directory")
    assert proc.stdout == "" and list(target.iterdir()) == []


def test_powerloss_saves_a_report_show_renders(tmp_path):
    target = tmp_path / "t"
    target.mkdir()
    argv = ["powerloss", target, "--journal-mode", "wal", "--synchronous", "full"]
    proc = fsb(*argv, "--model", "synced-only", "--commits", "2", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    files = sorted((tmp_path / "reports").iterdir())
    assert [p.suffix for p in files] == [".html", ".json", ".md"]
    assert proc.stderr.startswith("Report written: reports") and "-powerloss.json" in proc.stderr
    saved = files[1]
    data = json.loads(saved.read_text())
    assert data["kind"] == "powerloss"
    assert data["elapsed_ns"] >= data["powerloss"]["elapsed_ns"] > 0
    for fmt in ("text", "markdown", "json", "html"):
        shown = fsb("show", saved, "--format", fmt)
        assert shown.returncode == 0, (fmt, shown.stderr)
        if fmt == "text":
            assert shown.stdout == proc.stdout
        else:
            suffix = {"markdown": ".md", "json": ".json", "html": ".html"}[fmt]
            assert shown.stdout == saved.with_suffix(suffix).read_text(), fmt
    assert list(target.iterdir()) == []


@needs_fork
def test_fleets_leave_crash_reports_out_and_pairs_refuse_them(crashed, tmp_path):
    root, _target, _proc = crashed
    (crash_json,) = (root / "reports").glob("*.json")
    fleet_dir = tmp_path / "reports"
    fleet_dir.mkdir()
    for seed in (0, 1):
        sampled.save(sampled.report(1.0, seed=seed), fleet_dir / f"run{seed}.json")
    (fleet_dir / crash_json.name).write_text(crash_json.read_text())
    c = fsyncbench.compare([fleet_dir])
    assert c.labels == ("run0.json", "run1.json")
    assert c.left_out == ((crash_json.name, "crash"),)
    text = fsyncbench.render(c, "text")
    assert f"Left out: {crash_json.name} (crash)" in " ".join(text.split())
    data = json.loads(fsyncbench.render(c, "json"))
    assert data["left_out"] == [{"label": crash_json.name, "kind": "crash"}]
    proc = fsb("compare", fleet_dir / "run0.json", crash_json)
    assert_usage_error(
        proc,
        f"{crash_json.name} holds no latency results (a crash report): nothing to compare",
    )


def test_crash_progress_on_a_terminal_never_passes_its_total(monkeypatch, capsys):
    """The twin of the test above in this process: the parts and kills the crash experiment
    reports (crash.matrix._Parts: one part per policy, 30 kills each, then the replay and
    reorder part), through the API's adapter (_kills) to the terminal's bar."""
    from fsyncbench import crash
    from fsyncbench.api.experiments import _kills
    from fsyncbench.cli import progress as bar
    from fsyncbench.crash.matrix import _Parts

    monkeypatch.setattr(bar, "_isatty", lambda _stream: True)
    with bar.Progress(quiet=False, unit="parts") as progress:
        parts = _Parts(_kills(progress), len(crash.POLICIES) + 1)
        for policy in crash.POLICIES:
            tick = parts.begin(f"wal/full {crash.POLICY_LABELS[policy]}", 30)
            for done in range(1, 31):
                tick(done)
        tick = parts.begin("replay and reorder", 2)
        tick(1)
        tick(2)
    seen = capsys.readouterr().err.encode()
    bars = re.findall(rb"([\d.]+)/(\S+) parts", seen)  # (tqdm shows n/None past its total)
    counters = re.findall(rb"(?:step journal|replay and reorder) (\d+)/(\d+)", seen)
    assert bars and {total for _n, total in bars} == {b"5"}, seen
    assert all(float(n) <= float(total) for n, total in bars), seen
    assert bars[-1][0] == b"5.0" and counters, seen
    assert all(int(n) <= int(target) for n, target in counters), seen
    with bar.Progress(quiet=True, unit="parts") as progress:
        _Parts(_kills(progress), 5).begin("wal/full step journal", 30)(1)
    assert "parts" not in capsys.readouterr().err
