"""One word for one thing: what a configuration promises reads the same in the run table,
the audit's verdict table, the head to head, the fleet and powerloss's "documented" column;
a verdict that cannot tell carries no strength."""

from __future__ import annotations

import dataclasses
import itertools

import pytest
from factories import commit, host

from fsyncbench.judge.commit_rules import config_durability
from fsyncbench.judge.promises import DURABLE, NOT_DURABLE, NOT_STATED, documented
from fsyncbench.model import ResultVerdict
from fsyncbench.report import vocabulary

MODES = ("DELETE", "TRUNCATE", "PERSIST", "MEMORY", "WAL", "OFF")
LEVELS = ("OFF", "NORMAL", "FULL", "EXTRA")
PRIMITIVE = {"Linux": "fdatasync", "Darwin": "F_FULLFSYNC", "Windows": "FlushFileBuffers"}


@pytest.mark.parametrize("os_name", ["Linux", "Darwin", "Windows"])
def test_the_judge_and_the_documentation_agree_on_every_combination(os_name):
    """config_durability (the verdict's boolean) is True exactly where the documentation
    says durable, so a table never says durable where powerloss says not stated."""
    for mode, level, full in itertools.product(MODES, LEVELS, (None, True, False)):
        if os_name != "Darwin" and full is not None:
            continue
        r = commit(mode, level, 1e6, PRIMITIVE[os_name], fullfsync=full)
        durable, _ = config_durability(host(os_name=os_name), r)
        doc = documented(r.effective, os_name).durable
        assert durable == (doc == DURABLE), (os_name, r.name, doc)
        word = vocabulary.promise(durable, r, os_name)
        assert word == doc, (os_name, r.name)


def test_a_promise_the_judge_withdraws_reads_not_durable():
    """macOS fullfsync served by F_BARRIERFSYNC: the documentation's durable does not hold."""
    r = commit("WAL", "FULL", 1e6, "F_BARRIERFSYNC", fullfsync=True)
    durable, finding = config_durability(host(os_name="Darwin"), r)
    assert durable is False and finding is not None
    assert vocabulary.promise(durable, r, "Darwin") == NOT_DURABLE


def test_delete_full_reads_not_stated_and_not_a_commit_reads_a_dash():
    r = commit("DELETE", "FULL", 1e6)
    assert vocabulary.promise(False, r, "Linux") == NOT_STATED
    assert vocabulary.promise(None, None, "Linux") == "-"
    assert {vocabulary.promise_tone(w) for w in (NOT_STATED, NOT_DURABLE)} == {"bad"}


@pytest.mark.parametrize("strength", ["measured", "inferred", "proven", "none", ""])
def test_a_verdict_that_cannot_tell_carries_no_strength(strength):
    phrase = vocabulary.verdict_phrase("unverifiable", strength, "virtualized-storage")
    assert phrase == "unverifiable (decided by virtualized-storage)"
    v = ResultVerdict("wal/full", "unverifiable", "virtualized-storage", True, strength)
    assert vocabulary.verdict_cell(v) == "unverifiable"
    assert vocabulary.strength_word(v) == "-"


def test_a_finding_that_decides_unverifiable_carries_no_strength_in_its_tag():
    from fsyncbench.model import Finding
    from fsyncbench.report.findings_text import stance_tag

    f = Finding("virtualized-storage", "warning", "wal/full", "m", "a", {}, "", "measured")
    f = dataclasses.replace(f, stance="decides", points_to="unverifiable")
    assert stance_tag(f) == " [decides: unverifiable]"
    g = dataclasses.replace(f, points_to="honest_flush", strength="inferred")
    assert stance_tag(g) == " [decides: honest_flush, inferred]"


def test_a_verdict_that_tells_says_how_it_was_established():
    assert (
        vocabulary.verdict_phrase("honest_flush", "inferred", "flush-latency-plausible")
        == "honest_flush, inferred, not measured (decided by flush-latency-plausible)"
    )
    v = ResultVerdict("wal/full", "volatile_cache", "flush-too-fast", True, "measured")
    assert vocabulary.verdict_cell(v) == "volatile_cache (measured)"


def test_on_storage_that_drops_flushes_no_promise_holds_and_no_cost_is_quoted():
    """/dev/shm (tmpfs, no_flush): the audit said 'wal/full and wal/off cannot be told
    apart' as a cost of durability and 'wal/full keeps every acknowledged commit'."""
    from factories import flush

    from fsyncbench import api
    from fsyncbench import report as report_out

    results = [
        flush("fdatasync", 1_500),
        commit("WAL", "OFF", 17_000),
        commit("WAL", "FULL", 17_500),
    ]
    rep = api.build_report("audit", host(fs_type="tmpfs"), results, ("fsyncbench", "audit", "/d"))
    assert rep.verdict.path_verdict == "no_flush"
    text = " ".join(report_out.render(rep, "text").split())
    assert "Cost of durability: none can be measured here: syncs do not reach stable media" in text
    assert "cannot be told apart" not in text
    assert (
        "wal/full would keep every acknowledged commit as its pragmas promise, but syncs " in text
    )
    assert "keeps every acknowledged commit (its pragmas promise it)" not in text
    honest = api.build_report("audit", host(), results, ("fsyncbench", "audit", "/d"))
    assert "none can be measured here" not in " ".join(report_out.render(honest, "text").split())


def test_the_vm_finding_states_one_flushes_per_sync_figure_in_its_text_and_evidence(
    monkeypatch,
):
    """The sentence said 'fdatasync was followed by 1.40 device flushes per sync' while the
    evidence said 'flushes per sync unknown' (it held only the figure net of other I/O,
    unknown when other I/O could explain every flush)."""
    from factories import VM, WB_SSD, flush

    from fsyncbench.judge import engine, platform_rules

    monkeypatch.setattr(platform_rules, "_reached_ratio", lambda f, r: None)  # other I/O
    monkeypatch.setattr(platform_rules, "_counter_ratio", lambda r, h=None: 1.4)
    v = engine.judge(host(disks=(WB_SSD,), virt=VM), [flush("fdatasync", 100_000)])
    finding = next(f for f in v.findings if f.code == "virtualized-storage")
    assert "was followed by 1.40 device flushes per sync" in finding.message
    assert finding.evidence["flushes_per_sync"] == 1.4
    assert finding.evidence["flushes_per_sync_net_of_other_io"] is None
