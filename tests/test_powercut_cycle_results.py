"""``powercut cycle``'s results, in process (no commands run): how a cycle's outcome is read
from verify's exit code and the report JSON it prints (judge_verify), the summary as the
command prints it (format_summary, every line written out) and as JSON (summary_json).

verify's reports here are real ones: judge() and verify's own report builder on
hand-written facts, serialized as verify prints them; the odd shapes a verify command's
output may take (not JSON, another report kind, another run, findings without evidence)
are hand-written."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from factories import host as fake_host

from fsyncbench.model import Pragmas
from fsyncbench.powercut.cycle_results import (
    CycleResult,
    CycleSummary,
    format_summary,
    judge_verify,
    summary_json,
)
from fsyncbench.powercut.journal import JournalState
from fsyncbench.powercut.judgement import PowercutFacts, judge
from fsyncbench.powercut.verify import _report
from fsyncbench.report import store

RUN = "a" * 32
OTHER = "f" * 32


def _verify_stdout(present=((1, 100),), rebooted=True, clean_stop=None, run_id=RUN) -> str:
    """What ``fsyncbench powercut verify --json`` prints for run ``run_id``: commits 1-100
    acknowledged, ``present`` found in the journal after the cut."""
    facts = PowercutFacts(
        run_id=run_id,
        config=Pragmas("WAL", "FULL"),
        primitive="fdatasync",
        writer_host=fake_host(),
        acknowledged=((1, 100),),
        journal=JournalState("/data/j.db", True, None, tuple(present), (), ("ok",), None),
        rebooted=rebooted,
        clean_stop=clean_stop,
        listener="127.0.0.1:5400",
    )
    info = {"host": "writer", "started_utc": "2026-12-01T10:00:00Z", "last_seen_utc": "-"}
    report = _report(facts, judge(facts), fake_host(), ["fsyncbench"], [], info)
    return store.report_to_json(report)


def _edited(stdout: str, edit) -> str:
    """verify's report ``stdout`` with ``edit`` applied to its dict."""
    data = json.loads(stdout)
    edit(data)
    return json.dumps(data)


def _measured() -> CycleResult:
    """A cycle as cycle() hands it to judge_verify: still the ``error`` placeholder, with
    the run, the counts, verify's exit and attempts filled in."""
    return CycleResult(
        2, 1.5, "error", RUN, 100, 90, verify_exit=1, verify_attempts=2, back_after_s=3.25
    )


# --------------------------------------------------------------------------- judge_verify


def test_a_report_of_lost_commits_fails_the_cycle_with_their_count_and_ranges():
    # acknowledged 1-100, present 1-40, 45-90, 95-100: lost 41-44 and 91-94, 8 commits
    stdout = _verify_stdout(present=((1, 40), (45, 90), (95, 100)))
    assert judge_verify(_measured(), 1, stdout) == replace(
        _measured(),
        outcome="fail",
        decided_by="powercut-acknowledged-lost",
        lost=8,
        lost_ranges=((41, 44), (91, 94)),
    )


def test_a_report_with_every_commit_present_after_a_reboot_passes_the_cycle():
    assert judge_verify(_measured(), 0, _verify_stdout()) == replace(
        _measured(), outcome="pass", decided_by="powercut-survived", lost=0, lost_ranges=()
    )


@pytest.mark.parametrize(
    ("facts", "rule"),
    [
        ({"rebooted": False}, "powercut-no-reboot"),
        ({"clean_stop": "the writer stopped (SIGTERM)"}, "powercut-clean-stop"),
    ],
)
def test_a_pass_without_a_cut_proves_nothing(facts, rule):
    """verify passes a run it could not test (no reboot came, or the writer had stopped
    before the cut): the cycle is inconclusive, never a pass."""
    assert judge_verify(_measured(), 0, _verify_stdout(**facts)) == replace(
        _measured(), outcome="inconclusive", decided_by=rule, lost=0, lost_ranges=()
    )


def test_a_loss_without_a_reboot_still_fails():
    stdout = _verify_stdout(present=((1, 40),), rebooted=False)
    assert judge_verify(_measured(), 1, stdout) == replace(
        _measured(),
        outcome="fail",
        decided_by="powercut-acknowledged-lost",
        lost=60,
        lost_ranges=((41, 100),),
    )


@pytest.mark.parametrize("rule", ["powercut-no-reboot", "powercut-clean-stop"])
def test_a_failed_run_stays_failed_whatever_rule_the_report_names(rule):
    """Only a pass becomes inconclusive: a loss is proof whichever rule decided."""

    def edit(data):
        data["verdict"]["decided_by"] = rule

    stdout = _edited(_verify_stdout(present=((1, 40),)), edit)
    assert judge_verify(_measured(), 1, stdout) == replace(
        _measured(), outcome="fail", decided_by=rule, lost=60, lost_ranges=((41, 100),)
    )


@pytest.mark.parametrize("before", ["error", "pass"])
def test_a_report_of_another_run_is_an_error_that_says_how_to_name_the_run(before):
    """verify judged the newest run it found, not this cycle's: the ``{run_id}``
    placeholder is what the verify command lacks (a literal placeholder in the message).
    The outcome is set, whatever the result held before (cycle() passes ``error``)."""
    stdout = _verify_stdout(present=((1, 40),), run_id=OTHER)
    measured = replace(_measured(), outcome=before)
    assert judge_verify(measured, 1, stdout) == replace(
        measured,
        outcome="error",
        decided_by="powercut-acknowledged-lost",
        error=f"verify judged run {OTHER}, not this cycle's run {RUN}: give it --run-id {{run_id}}",
    )


@pytest.mark.parametrize(
    "stdout",
    [
        "",
        "Result: FAIL: 8 of 100 acknowledged commits lost\n",
        "[1, 2]",
        '"powercut"',
        # another kind of report, even with a verdict line and a rule, is not verify's
        json.dumps(
            {
                "kind": "run",
                "notes": [f"powercut pass: run {RUN} (wal/full)"],
                "verdict": {"decided_by": "powercut-survived", "findings": []},
            }
        ),
    ],
)
@pytest.mark.parametrize(("rc", "outcome"), [(0, "pass"), (1, "fail")])
def test_output_that_is_not_verifys_report_counts_by_the_exit_code(stdout, rc, outcome):
    assert judge_verify(_measured(), rc, stdout) == replace(_measured(), outcome=outcome)


@pytest.mark.parametrize(
    ("report", "decided_by"),
    [
        ({"kind": "powercut"}, None),
        ({"kind": "powercut", "notes": [], "verdict": None}, None),
        (
            {
                "kind": "powercut",
                "notes": ["verified by hand", f"powercut fail: run {RUN} (wal/full) "],
                "verdict": {
                    "decided_by": "powercut-survived",
                    "findings": [{"evidence": {"lost": 5, "acknowledged": 9}}],
                },
            },
            "powercut-survived",
        ),
    ],
)
@pytest.mark.parametrize(("rc", "outcome"), [(0, "pass"), (1, "fail")])
def test_a_report_without_its_verdict_line_counts_by_the_exit_code(report, decided_by, rc, outcome):
    """verify's report whose first note is not ``powercut <outcome>: run <id>``: the exit
    code decides, the report's rule is kept, and no count of lost commits is taken."""
    assert judge_verify(_measured(), rc, json.dumps(report)) == replace(
        _measured(), outcome=outcome, decided_by=decided_by
    )


def test_the_lost_commits_come_from_the_first_finding_that_counts_them():
    """Findings that are not objects, have no evidence, or whose evidence lacks either
    count are passed over."""
    not_counting = [
        "not a finding",
        {"code": "x"},
        {"code": "x", "evidence": None},
        {"code": "x", "evidence": {"acknowledged": 100, "lost_ranges": [[1, 1]]}},
        {"code": "x", "evidence": {"lost": 1, "lost_ranges": [[1, 1]]}},
    ]

    def edit(data):
        data["verdict"]["findings"][:0] = not_counting

    stdout = _edited(_verify_stdout(present=((1, 40), (45, 100))), edit)
    assert judge_verify(_measured(), 1, stdout) == replace(
        _measured(),
        outcome="fail",
        decided_by="powercut-acknowledged-lost",
        lost=4,
        lost_ranges=((41, 44),),
    )


def test_a_report_without_counting_evidence_leaves_the_losses_unknown():
    def edit(data):
        data["verdict"]["findings"] = [{"code": "x", "evidence": {"rebooted": True}}]

    stdout = _edited(_verify_stdout(present=((1, 40),)), edit)
    assert judge_verify(_measured(), 1, stdout) == replace(
        _measured(), outcome="fail", decided_by="powercut-acknowledged-lost"
    )


def test_counts_and_ranges_that_are_not_whole_numbers_are_dropped():
    def edit(data):
        ev = data["verdict"]["findings"][0]["evidence"]
        ev["lost"] = "60"
        ev["lost_ranges"] = [[41, 50], [51, "60"], ["61", 70], [71.0, 80], [81, 100]]

    stdout = _edited(_verify_stdout(present=((1, 40),)), edit)
    assert judge_verify(_measured(), 1, stdout) == replace(
        _measured(),
        outcome="fail",
        decided_by="powercut-acknowledged-lost",
        lost=None,
        lost_ranges=((41, 50), (81, 100)),
    )


# --------------------------------------------------------------------------- the summary


def _summary() -> CycleSummary:
    """Four cycles of six planned: a pass, a loss in seven ranges, a verify that printed no
    report, and a cut command that failed (which ended the experiment)."""
    return CycleSummary(
        planned=6,
        seed=7,
        cut_after_s=(0.5, 2.25),
        listener="192.0.2.1:5400",
        results=(
            CycleResult(
                1, 0.5, "pass", "a" * 32, 1234, 1200, 0, (), 0, "powercut-survived", 1, 12.34
            ),
            CycleResult(
                2,
                1.875,
                "fail",
                "b" * 32,
                20,
                20,
                13,
                ((2, 2), (4, 5), (7, 7), (9, 10), (12, 12), (14, 14), (16, 20)),
                1,
                "powercut-acknowledged-lost",
                3,
                61.0,
            ),
            CycleResult(3, 2.25, "pass", "c" * 32, 5, 4, None, (), 0, None, 2, None),
            CycleResult(
                4, 1.0, "error", "d" * 32, 7, 7, error="the cut command failed (exit 3): no"
            ),
        ),
        error="cycle 4: the cut command failed (exit 3): no",
        started_utc="2026-12-01T10:00:00Z",
        elapsed_s=95.5,
        notes=("the restore command took 40 s",),
    )


def test_the_summary_text_line_by_line():
    assert format_summary(_summary()) == (
        "fsyncbench powercut cycle: 4 of 6 cycles, seed 7, cut 0.5..2.25 s after the first "
        "acknowledged commit; listener 192.0.2.1:5400\n"
        "  cycle 1: cut at 0.500 s: run " + "a" * 32 + ": 1,234 acknowledged (1,200 at the "
        "cut), lost 0; verify exit 0 (pass, powercut-survived), 1 attempt, back after 12.3 s\n"
        "  cycle 2: cut at 1.875 s: run " + "b" * 32 + ": 20 acknowledged (20 at the cut), "
        "lost 13 (2, 4-5, 7, 9-10, 12, ... (2 more ranges)); verify exit 1 (fail, "
        "powercut-acknowledged-lost), 3 attempts, back after 61.0 s\n"
        "  cycle 3: cut at 2.250 s: run " + "c" * 32 + ": 5 acknowledged (4 at the cut), "
        "lost ?; verify exit 0 (pass), 2 attempts\n"
        "  cycle 4: cut at 1.000 s: ERROR: the cut command failed (exit 3): no\n"
        "Total: 4 cycles, 1,266 acknowledged, 13 lost; lost per cycle: 0, 13, ?, ?\n"
        "note: the restore command took 40 s\n"
        "Result: FAIL: 1 of 3 cycles lost acknowledged commits (13 in all): the storage "
        "acknowledged writes it did not keep\n"
    )


def test_the_summary_of_an_experiment_stopped_before_its_first_cycle():
    s = CycleSummary(3, 1, (1.0, 3.0), "127.0.0.1:5400", (), error="stopped by Ctrl-C")
    assert format_summary(s) == (
        "fsyncbench powercut cycle: 0 of 3 cycles, seed 1, cut 1..3 s after the first "
        "acknowledged commit; listener 127.0.0.1:5400\n"
        "Total: 0 cycles, 0 acknowledged, 0 lost\n"
        "Result: ERROR after 0 of 3 cycles: stopped by Ctrl-C\n"
    )


def test_the_summary_json_holds_every_field_and_the_verdict():
    s = replace(_summary(), results=_summary().results[2:3], error=None, notes=())
    text = summary_json(s)
    # one space a level, as verify's reports (store.report_to_json)
    assert text.startswith('{\n "planned": 6,\n "seed": 7,\n "cut_after_s": [\n  0.5,\n')
    assert text.endswith("\n}\n")
    assert json.loads(text) == {
        "planned": 6,
        "seed": 7,
        "cut_after_s": [0.5, 2.25],
        "listener": "192.0.2.1:5400",
        "results": [
            {
                "cycle": 3,
                "cut_after_s": 2.25,
                "outcome": "pass",
                "run_id": "c" * 32,
                "acknowledged": 5,
                "acknowledged_at_cut": 4,
                "lost": None,
                "lost_ranges": [],
                "verify_exit": 0,
                "decided_by": None,
                "verify_attempts": 2,
                "back_after_s": None,
                "error": None,
            }
        ],
        "error": None,
        "started_utc": "2026-12-01T10:00:00Z",
        "elapsed_s": 95.5,
        "notes": [],
        "exit_code": 0,
        "verdict": "PASS: 1 cycles, no acknowledged commit lost (a pass is evidence, not "
        "proof: a lying cache may drain in time; repeat)",
        "lost_cycles": 0,
    }
