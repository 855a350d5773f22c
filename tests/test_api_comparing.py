"""What fsyncbench.api's comparisons return (:func:`fsyncbench.api.compare`): two reports
head to head (``--vs``), a pair or a fleet between runs with the regression gate's lines
(its answer, each regression, what it cannot tell and why, the advice, disturbed runs,
writers points), the inputs' labels, what a fleet leaves out, and every refusal's message.

Most reports here are summary-only (no raw samples): each configuration's p50 and p99 are
one figure with three rounds spread by a chosen amount in log, so the gate's tests are what
the test sets up; the lines are then checked word for word against the gate's own figures.
"""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
import sampled
from factories import _result, disturbed_by_fio, summary_at

from fsyncbench import api
from fsyncbench.api import comparing
from fsyncbench.errors import FsyncbenchError
from fsyncbench.measure import concurrency, intervals, stats
from fsyncbench.measure.headtohead import unpaired_ratio
from fsyncbench.model import (
    EarlierRun,
    Interval,
    Pragmas,
    WriterLane,
    WritersPoint,
)
from fsyncbench.options import Outputs
from fsyncbench.report import regression, store
from fsyncbench.report import tables as render

BLOCKS = intervals.METHOD_BLOCKS
#: a small report for its host and verdict; the tests put their own results in it
BASE = sampled.report(n=200)
EARLY, LATE, LATER = "2026-12-01T10:00:00Z", "2026-12-01T11:00:00Z", "2026-12-01T12:00:00Z"


def config(
    name: str,
    est: float,
    spread: float = 0.05,
    spread99: float | None = None,
    kind: str = "commit",
    primitive: str = "fdatasync",
    earlier: tuple[EarlierRun, ...] = (),
):
    """A summary-only result whose p50 and p99 are both ``est``, each over three rounds
    ``spread`` apart in log (``spread99``: the p99's, when it differs)."""
    s99 = spread if spread99 is None else spread99
    r50 = tuple(est * math.exp(spread * z) for z in (-1.0, 0.0, 1.0))
    r99 = tuple(est * math.exp(s99 * z) for z in (-1.0, 0.0, 1.0))
    iv = Interval(est, est * 0.9, est * 1.1, 0.01, 9.0, 10, BLOCKS, None)
    summary = dataclasses.replace(
        summary_at(est),
        count=1000,
        p50_ns=est,
        p99_ns=est,
        p50_ci_ns=iv.bounds,
        p99_ci_ns=iv.bounds,
        p50_interval=iv,
        p99_interval=iv,
        ci_method=BLOCKS,
        round_p50_ns=r50,
        round_p99_ns=r99,
    )
    return dataclasses.replace(
        _result(kind, name, primitive, est),
        summary=summary,
        samples_ns=(),
        slice_counts=(),
        payload_bytes=512,
        earlier=earlier,
    )


def report(*results, at: str = EARLY, **kw):
    """BASE with these results, made at ``at`` (its label: host and time)."""
    return dataclasses.replace(BASE, results=tuple(results), created_utc=at, **kw)


def label(rep) -> str:
    return store.report_basename(rep)


def raised(call) -> str:
    with pytest.raises(FsyncbenchError) as e:
        call()
    return str(e.value)


# --------------------------------------------------------------------------- head to head


def _three_configs(scale: float, at: str):
    return report(
        config("write (no sync)", 50.0 * scale, kind="write", primitive="none"),
        config("wal/off", 80.0 * scale, 0.02, primitive="none"),
        config("wal/normal", 90.0 * scale, 0.04),
        config("wal/full", 100.0 * scale, 0.06),
        at=at,
    )


def test_vs_sets_the_first_reports_configuration_against_the_seconds_at_p50_and_p99():
    a, b = _three_configs(1.0, EARLY), _three_configs(2.0, LATE)
    a_full, b_normal = a.results[3], b.results[2]
    c = api.compare([a, b], vs="wal/full,wal/normal")
    want = (unpaired_ratio(a_full, b_normal, 50.0), unpaired_ratio(a_full, b_normal, 99.0))
    assert c.head_to_head == want
    assert [(h.a_name, h.b_name, h.percentile) for h in c.head_to_head] == [
        ("wal/full", "wal/normal", 50.0),
        ("wal/full", "wal/normal", 99.0),
    ]
    # 100 ns against 180 ns, both ways round
    assert c.head_to_head[0].ratio == pytest.approx(100.0 / 180.0)
    back = api.compare([a, b], vs=["wal/normal", "wal/full"])
    assert back.head_to_head[1] == unpaired_ratio(a.results[2], b.results[3], 99.0)
    assert back.head_to_head[1].ratio == pytest.approx(90.0 / 200.0)
    # one configuration in both runs (the two runs' wal/full)
    same = api.compare([a, b], vs="wal/full,wal/full")
    assert same.head_to_head == (
        unpaired_ratio(a_full, b.results[3], 50.0),
        unpaired_ratio(a_full, b.results[3], 99.0),
    )
    assert same.pair is not None and api.compare([a, b]).head_to_head == ()


def test_vs_refuses_a_fleet_and_a_configuration_a_report_did_not_measure():
    a, b = _three_configs(1.0, EARLY), _three_configs(2.0, LATE)
    c = _three_configs(3.0, LATER)
    two = "--vs sets a configuration of one report against one of another: give two reports"
    assert raised(lambda: api.compare([a, b, c], vs="wal/full,wal/full")) == two
    assert raised(lambda: api.compare([a, b], group_by="host", vs="wal/full,wal/full")) == two
    # only its commits are named (not the write baseline)
    assert raised(lambda: api.compare([a, b], vs="wal/full,delete/full")) == (
        f"--vs: {label(b)} did not measure delete/full; it measured wal/off, wal/normal, wal/full"
    )
    assert raised(lambda: api.compare([a, b], vs="write (no sync),wal/full")) == (
        f"--vs: {label(a)} did not measure write (no sync); it measured wal/off, wal/normal, "
        "wal/full"
    )


# --------------------------------------------------------------------------- refusals


def test_each_refusal_of_compare_says_what_was_wrong(tmp_path):
    a = report(config("wal/full", 100.0))
    b = report(config("wal/full", 110.0), at=LATE)
    assert raised(lambda: api.compare("ab")) == (
        "reports must be a sequence of paths or Reports, got 'ab'"
    )
    assert raised(lambda: api.compare([a, 3])) == "reports[1] must be a path or a Report, got 3"
    assert raised(lambda: api.compare([a, b], configs=5)) == (
        "configs must be a comma-separated string or a sequence of strings or None, got 5"
    )
    assert raised(lambda: api.compare([a, b], group_by=5)) == (
        "group_by must be a comma-separated string or a sequence of strings or None, got 5"
    )
    assert raised(lambda: api.compare([a, b], outputs="x")) == (
        "outputs must be an Outputs or None, got 'x'"
    )
    assert raised(lambda: api.compare([])) == (
        "compare needs at least two reports, or a directory of them"
    )
    one = sampled.save(sampled.report(), tmp_path / "one.json")
    assert raised(lambda: api.compare([one])) == "compare needs at least two reports"
    missing = tmp_path / "none.json"
    assert raised(lambda: api.compare([one, missing])) == f"report {missing} does not exist"
    assert raised(lambda: api.compare([a, b], fail_on_regression=20, accept_disturbed="yes")) == (
        "accept_disturbed must be True or False, got 'yes'"
    )
    # an Outputs is taken (and checked) as it is
    assert api.compare([a, b], outputs=Outputs()).pair is not None


def test_a_fleet_is_sorted_by_one_configuration():
    reps = [_three_configs(s, at) for s, at in ((1.0, EARLY), (1.1, LATE), (1.2, LATER))]
    assert raised(lambda: api.compare(reps, configs="wal/full,wal/normal")) == (
        "a fleet is sorted by one configuration: give one --config"
    )
    assert api.compare(reps, configs="wal/normal").config == "wal/normal"


def test_the_gate_refuses_reports_with_no_configuration_it_checks():
    a = report(config("write (no sync)", 50.0, kind="write", primitive="none"))
    b = report(config("write (no sync)", 55.0, kind="write", primitive="none"), at=LATE)
    assert raised(lambda: api.compare([a, b], fail_on_regression=20)) == (
        f"--fail-on-regression found no configuration in common with {label(a)} to check: "
        "name the configurations to check with --config"
    )


# --------------------------------------------------------------------------- inputs


def test_labels_are_file_names_report_names_or_full_paths_where_names_repeat(tmp_path):
    rep = sampled.report()
    path = sampled.save(sampled.report(1.1, seed=3), tmp_path / "b.json")
    assert api.compare([rep, path]).labels == (label(rep), "b.json")
    # one report twice (an A/A check): its name twice
    assert api.compare([rep, rep]).labels == (label(rep), label(rep))
    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    x = sampled.save(sampled.report(), tmp_path / "x" / "r.json")
    y = sampled.save(sampled.report(1.1, seed=3), tmp_path / "y" / "r.json")
    assert api.compare([x, y]).labels == (str(x), str(y))


def test_a_directory_named_twice_is_read_once(tmp_path):
    for seed in (0, 1, 2):
        sampled.save(sampled.report(1.0 + seed / 10, seed=seed), tmp_path / f"r{seed}.json")
    c = api.compare([tmp_path, tmp_path])
    assert c.labels == ("r0.json", "r1.json", "r2.json")
    assert c.duplicates == () and len(c.fleet) == 3


def test_a_directory_of_one_report_is_a_fleet_of_one(tmp_path):
    sampled.save(sampled.report(), tmp_path / "only.json")
    c = api.compare([tmp_path])
    assert c.labels == ("only.json",) and len(c.fleet) == 1 and c.pair is None


def test_three_reports_are_a_fleet_two_a_pair():
    reps = [_three_configs(s, at) for s, at in ((1.0, EARLY), (1.1, LATE), (1.2, LATER))]
    three = api.compare(reps)
    assert three.pair is None and len(three.fleet) == 3
    two = api.compare(reps[:2])
    assert two.pair is not None and two.fleet == ()


def test_a_fleet_names_each_saved_report_whose_verdict_this_version_does_not_repeat(tmp_path):
    for seed in (0, 1, 2):
        sampled.save(sampled.report(1.0 + seed / 10, seed=seed), tmp_path / f"r{seed}.json")
    assert api.compare([tmp_path]).rejudged == ()
    saved = json.loads((tmp_path / "r1.json").read_text())
    now = saved["verdict"]["path_verdict"]
    saved["verdict"]["path_verdict"] = "no_flush"
    (tmp_path / "r1.json").write_text(json.dumps(saved))
    c = api.compare([tmp_path])
    assert now != "no_flush"
    assert c.rejudged == (("r1.json", f"no_flush -> {now}"),)


# --------------------------------------------------------------------------- kinds


def _crash(at: str):
    return dataclasses.replace(BASE, kind="crash", results=(), created_utc=at)


def test_a_fleet_leaves_crash_reports_out_and_a_pair_refuses_them():
    runs = [_three_configs(s, at) for s, at in ((1.0, EARLY), (1.1, LATE))]
    crash = _crash("2026-12-01T09:00:00Z")
    for order in ([crash, *runs], [runs[0], crash, runs[1]]):
        c = api.compare(order)
        assert c.left_out == ((label(crash), "crash"),)
        assert c.labels == tuple(label(r) for r in runs)
    # with a gate too: a crash report after the baseline is left out
    gated = api.compare([runs[0], crash, runs[1]], fail_on_regression=20)
    assert gated.left_out == ((label(crash), "crash"),) and gated.gate is not None
    assert raised(lambda: api.compare([runs[0], crash])) == (
        f"{label(crash)} holds no latency results (a crash report): nothing to compare"
    )
    crashes = [_crash(f"2026-12-01T0{h}:00:00Z") for h in (6, 7, 8)]
    assert raised(lambda: api.compare(crashes)) == (
        "no latency report among the 3 given: crash and powerloss reports hold no latency "
        "to compare"
    )


def test_no_report_of_the_kind_asked_names_the_kinds_found():
    runs = [_three_configs(s, at) for s, at in ((1.0, EARLY), (1.1, LATE))]
    audit = dataclasses.replace(_three_configs(1.2, LATER), kind="audit")
    assert raised(lambda: api.compare([*runs, audit], kind="powerloss")) == (
        "no report of kind 'powerloss' (found: audit, run)"
    )


def test_a_pair_of_which_the_kind_asked_keeps_one_is_refused_by_name():
    """Two reports and ``kind`` matching only one: refused with the one left out named (it
    ran off the end of the pair, an IndexError, before)."""
    run = _three_configs(1.0, EARLY)
    audit = dataclasses.replace(_three_configs(1.1, LATE), kind="audit")
    for pair in ([run, audit], [audit, run]):
        assert raised(lambda pair=pair: api.compare(pair, kind="run")) == (
            f"compare needs two reports of kind run, and {label(audit)} is not one"
        )


# --------------------------------------------------------------------------- the gate's lines


def _answer(verdict, c, n, failed, passed, untold, limit=20):
    """The gate's first line, the slowdowns it could have caught from its statistics."""
    ds = [s.detectable_ratio for s in c.gate.statistics if s.detectable_ratio is not None]
    power = (
        f"; the slowdowns it could have caught (4 times in 5): {min(ds):.2f}x to {max(ds):.2f}x"
        if ds
        else ""
    )
    return (
        f"Gate {verdict} at --fail-on-regression {limit} % against {c.labels[0]}: {n} "
        f"statistic{'s' if n != 1 else ''} gated (p50 and p99), {failed} failed, {passed} "
        f"passed, {untold} cannot tell{power}."
    )


def _regression_line(r, tested, words="pair: rounds' spread", base=None):
    q = r.statistic
    base = base or f"{q.a_ns:.0f} ns in {r.baseline}"
    return (
        f"REGRESSION {r.name} p{q.percentile:g}: {base} -> {q.b_ns:.0f} ns in "
        f"{r.candidate}: {q.ratio:.2f}x (95% CI [{q.ratio_ci[0]:.2f}, {q.ratio_ci[1]:.2f}], "
        f"{words}), slower by more than {r.limit_pct:g} % and significantly (one-sided, "
        f"Holm-adjusted over the {tested} statistics tested: p {r.p_adjusted:.2g})"
    )


REACHES = (
    "; its interval reaches below {:.2f}x: that it is slower is shown, that it is slower by "
    "more than the limit is the estimate's"
)


def test_a_regression_is_named_with_its_figures_and_whether_its_interval_reaches_the_limit():
    """wal/full 1.5x slower; its p50 over rounds 0.03 apart (interval above 1.20x), its p99
    over rounds 0.07 apart (significant, but its interval reaches below 1.20x)."""
    a = report(config("wal/full", 100.0, 0.03, 0.07))
    b = report(config("wal/full", 150.0, 0.03, 0.07), at=LATE)
    c = api.compare([a, b], fail_on_regression=20)
    p50, p99 = c.regressions
    assert 1.2 < p50.statistic.ratio_ci[0] <= 2.2 and 0.8 < p99.statistic.ratio_ci[0] <= 1.2
    assert c.lines == (
        _answer("REGRESSION", c, 2, 2, 0, 0),
        _regression_line(p50, 2),
        _regression_line(p99, 2) + REACHES.format(1.2),
    )
    assert c.not_checked == ()


def test_at_a_limit_of_100_the_interval_is_held_to_2x():
    """3x slower; the p99's interval (rounds 0.12 apart) reaches below 1 + 100/100 = 2.00x."""
    a = report(config("wal/full", 100.0, 0.03, 0.12))
    b = report(config("wal/full", 300.0, 0.03, 0.12), at=LATE)
    c = api.compare([a, b], fail_on_regression=100)
    p50, p99 = c.regressions
    assert p50.statistic.ratio_ci[0] > 2.0 >= p99.statistic.ratio_ci[0]
    assert c.lines == (
        _answer("REGRESSION", c, 2, 2, 0, 0, limit=100),
        _regression_line(p50, 2),
        _regression_line(p99, 2) + REACHES.format(2.0),
    )
    assert "reaches below 2.00x" in c.lines[2]


def test_a_baseline_with_an_earlier_run_is_named_with_their_mean():
    """A recorded one earlier run (104 ns): the baseline is the two runs' geometric mean."""
    earlier = (
        EarlierRun("e.json", "2026-11-30T10:00:00Z", 104.0, 104.0, None, None, 0.03, 0.03, 3),
    )
    a = report(config("wal/full", 100.0, 0.03, earlier=earlier))
    b = report(config("wal/full", 400.0, 0.03), at=LATE)
    c = api.compare([a, b], fail_on_regression=20)
    p50, p99 = c.regressions
    q = p50.statistic
    assert (q.baseline_runs, q.baseline_ns) == (2, pytest.approx(math.sqrt(104.0 * 100.0)))
    assert c.lines[1] == _regression_line(
        p50,
        2,
        "pair: 2 runs, own spread",
        f"{q.baseline_ns:.0f} ns over {label(a)} and its 1 earlier runs",
    )
    assert f"over {label(a)} and its 1 earlier runs" in c.lines[2]


def test_a_regression_beside_a_moved_floor_says_the_machine_changed():
    floor_a = sampled.result("floor", stats.FLOOR_WRITE, "none", 2000, n=600, seed=3)
    floor_b = sampled.result("floor", stats.FLOOR_WRITE, "none", 3000, n=600, seed=13)
    a = report(config("wal/full", 100.0, 0.03), floors=(floor_a,))
    b = report(config("wal/full", 150.0, 0.03), at=LATE, floors=(floor_b,))
    c = api.compare([a, b], fail_on_regression=20)
    moved = render.floor_moved_line(c.pair)
    assert moved.startswith("The machine itself changed")
    assert c.lines[1] == f"{label(b)}: {moved}"
    assert [line.split(" ")[0] for line in c.lines[2:]] == ["REGRESSION", "REGRESSION"]
    # a moved floor alone is said in the table, not by the gate
    same = report(config("wal/full", 100.0, 0.03), at=LATE, floors=(floor_b,))
    quiet = api.compare([a, same], fail_on_regression=20)
    assert not any(line.startswith(label(same)) for line in quiet.lines)


def test_a_gate_that_passes_says_so_in_one_line():
    a = report(config("wal/full", 100.0, 0.02))
    b = report(config("wal/full", 100.0, 0.02), at=LATE)
    c = api.compare([a, b], fail_on_regression=20)
    assert c.lines == (_answer("PASSED", c, 2, 0, 2, 0),)
    assert c.regressions == () and c.not_checked == ()
    # accepting disturbed runs where none stayed disturbed changes nothing
    assert api.compare([a, b], fail_on_regression=20, accept_disturbed=True).lines == c.lines


def test_the_same_run_twice_cannot_tell(tmp_path):
    rep = sampled.report()
    a = sampled.save(rep, tmp_path / "a.json")
    b = sampled.save(rep, tmp_path / "b.json")
    c = api.compare([a, b], fail_on_regression=20, configs="wal/full")
    why = "b.json is the same run as a.json: compare two runs"
    assert c.lines == (
        "Gate CANNOT TELL at --fail-on-regression 20 % against a.json: 2 statistics gated "
        "(p50 and p99), 0 failed, 0 passed, 2 cannot tell.",
        f"CANNOT TELL wal/full p50, wal/full p99: {why}.",
        "Not a pass (exit 4): each reason above says what is missing.",
    )
    assert c.not_checked == (f"wal/full p50 ({why})", f"wal/full p99 ({why})")


def test_runs_measured_with_other_options_name_each_difference():
    a = report(config("wal/full", 100.0), command_line=("fsyncbench", "run", "/x"))
    b = report(
        config("wal/full", 300.0),
        at=LATE,
        command_line=("fsyncbench", "run", "/x", "--rounds", "3", "--samples", "500"),
    )
    c = api.compare([a, b], fail_on_regression=20)
    why = (
        f"{label(b)} was measured otherwise than {label(a)} (--rounds: A default, B 3; "
        "--samples: A default, B 500): re-run it with the baseline's options"
    )
    assert c.not_checked == (f"wal/full p50 ({why})", f"wal/full p99 ({why})")
    assert c.lines[1] == f"CANNOT TELL wal/full p50, wal/full p99: {why}."


WEAK_PAIR_ADVICE = (
    ", or narrow them: keep 3 earlier runs of the same measurement in the report directory "
    "the baseline is run from (it then records them)."
)


def test_too_uncertain_statistics_say_what_they_could_have_caught_and_what_would_pass():
    """1 % slower over rounds 0.05 apart: each could have caught 1.30x, not 1.20x."""
    a = report(config("wal/full", 100.0))
    b = report(config("wal/full", 101.0), at=LATE)
    c = api.compare([a, b], fail_on_regression=20)
    d = [s.detectable_ratio for s in c.gate.statistics]
    assert d[0] == d[1] and 1.2 < d[0] < 1.6
    assert c.lines == (
        _answer("CANNOT TELL", c, 2, 0, 0, 2),
        "CANNOT TELL, too uncertain to see 20 % (the slowdown each could have caught): "
        f"wal/full p50 {d[0]:.2f}x, wal/full p99 {d[1]:.2f}x.",
        "Not a pass (exit 4): each reason above says what is missing; the uncertain ones would "
        f"pass at --fail-on-regression {math.ceil(100 * (d[0] - 1))} or more" + WEAK_PAIR_ADVICE,
    )


def test_hopelessly_uncertain_statistics_are_shown_in_two_digits_and_no_limit_passes_them():
    a = report(config("wal/full", 100.0, 1.0))
    b = report(config("wal/full", 101.0, 1.0), at=LATE)
    c = api.compare([a, b], fail_on_regression=20)
    d = [s.detectable_ratio for s in c.gate.statistics]
    assert d[0] > 100 and d[1] > 100
    assert c.lines[1:] == (
        "CANNOT TELL, too uncertain to see 20 % (the slowdown each could have caught): "
        f"wal/full p50 {d[0]:.2g}x, wal/full p99 {d[1]:.2g}x.",
        "Not a pass (exit 4): each reason above says what is missing; no limit below 900 % "
        "would pass the uncertain ones" + WEAK_PAIR_ADVICE,
    )


def test_uncertain_against_earlier_runs_asks_for_a_quiet_machine():
    """A recorded 3 earlier runs far apart: the history basis, too uncertain to see 20 %."""
    earlier = tuple(
        EarlierRun(f"e{i}.json", f"2026-11-2{i}T10:00:00Z", f, f, None, None, 0.05, 0.05, 3)
        for i, f in enumerate((60.0, 170.0, 90.0))
    )
    a = report(config("wal/full", 100.0, earlier=earlier))
    b = report(config("wal/full", 101.0), at=LATE)
    c = api.compare([a, b], fail_on_regression=20)
    assert {(s.basis, s.too_uncertain) for s in c.gate.statistics} == {("history", True)}
    assert c.lines[-1].endswith(", or narrow them: measure both runs when the machine is quiet.")
    assert c.lines[-1].startswith("Not a pass (exit 4): each reason above says what is missing; ")


def test_a_fleets_gate_names_the_candidate_of_each_statistic():
    base = report(config("wal/full", 100.0))
    near = report(config("wal/full", 101.0), at=LATE)
    wild = report(config("wal/full", 101.0, 1.0), at=LATER)
    c = api.compare([base, near, wild], fail_on_regression=20)
    d = [s.detectable_ratio for s in c.gate.statistics]
    assert d[0] < 100 < d[2]
    n, w = label(near), label(wild)
    assert c.lines[1] == (
        "CANNOT TELL, too uncertain to see 20 % (the slowdown each could have caught): "
        f"wal/full p50 in {n} {d[0]:.2f}x, wal/full p99 in {n} {d[1]:.2f}x, "
        f"wal/full p50 in {w} {d[2]:.2g}x, wal/full p99 in {w} {d[3]:.2g}x."
    )
    reasons = [s.reason for s in c.gate.statistics]
    assert c.not_checked == (
        f"wal/full p50 ({reasons[0]}) in {n}",
        f"wal/full p99 ({reasons[1]}) in {n}",
        f"wal/full p50 ({reasons[2]}) in {w}",
        f"wal/full p99 ({reasons[3]}) in {w}",
    )


def test_the_lines_at_the_boundaries_of_their_wording():
    """At exactly 100x a detectable slowdown is shown in two digits; a worst of exactly 10x
    still names the limit that would pass; an interval reaching exactly 1 + limit reaches
    it (the gate's statistics from compare, their figures set here)."""
    a = report(config("wal/full", 100.0))
    b = report(config("wal/full", 101.0), at=LATE)
    c = api.compare([a, b], fail_on_regression=20)
    pairs = [(c.labels[1], c.pair)]

    def lines(*ratios):
        stats = tuple(
            dataclasses.replace(s, detectable_ratio=r) for s, r in zip(c.gate.statistics, ratios)
        )
        return comparing._regression_lines(dataclasses.replace(c.gate, statistics=stats), pairs)

    assert lines(100.0, 100.5)[1].endswith("wal/full p50 1e+02x, wal/full p99 1e+02x.")
    assert lines(99.99, 1.5)[1].endswith("wal/full p50 99.99x, wal/full p99 1.50x.")
    assert "would pass at --fail-on-regression 900 or more" in lines(10.0, 1.5)[2]
    assert "no limit below 900 %" in lines(10.5, 1.5)[2]
    # a regression whose interval's low end is exactly 1.20x at 20 %
    r = regression.Regression(
        "wal/full",
        c.labels[0],
        c.labels[1],
        dataclasses.replace(c.pair.configs[0].p50, ratio=1.5, ratio_ci=(1.2, 1.8)),
        20,
        0.01,
    )
    gate = dataclasses.replace(c.gate, statistics=(), regressions=(r,))
    assert comparing._regression_lines(gate, pairs)[1].endswith(REACHES.format(1.2))


# --------------------------------------------------------------------------- disturbed runs

STAYED = "stayed disturbed in 3 of 3 rounds"


def test_a_disturbed_candidate_that_is_slower_cannot_tell_unless_accepted():
    a = report(config("wal/full", 100.0, 0.03))
    b = disturbed_by_fio(report(config("wal/full", 150.0, 0.03), at=LATE))
    c = api.compare([a, b], fail_on_regression=20)
    assert c.regressions == ()
    (reason,) = {s.reason for s in c.gate.statistics}
    assert reason.startswith(f"{label(b)} is slower, but {STAYED} (")
    assert reason.endswith("): the slowdown may be the other processes'")
    accepted = api.compare([a, b], fail_on_regression=20, accept_disturbed=True)
    assert len(accepted.regressions) == 2
    phrase = reason[
        len(f"{label(b)} is slower, but ") : -len(": the slowdown may be the other processes'")
    ]
    assert accepted.lines[-1] == (
        f"Judged although disturbed (--accept-disturbed): {label(b)} {phrase}."
    )


def test_a_disturbed_baseline_shows_no_candidate_as_fast_unless_accepted():
    a = disturbed_by_fio(report(config("wal/full", 100.0, 0.02)))
    b = report(config("wal/full", 100.0, 0.02), at=LATE)
    c = api.compare([a, b], fail_on_regression=20)
    assert {s.outcome for s in c.gate.statistics} == {regression.CANNOT_TELL}
    (reason,) = {s.reason for s in c.gate.statistics}
    assert reason.startswith(f"{label(a)} {STAYED} (")
    assert reason.endswith(
        f"): its figures may be slower than its storage's, so {label(b)} is not shown to be as fast"
    )
    accepted = api.compare([a, b], fail_on_regression=20, accept_disturbed=True)
    assert {s.outcome for s in accepted.gate.statistics} == {regression.PASSED}
    phrase = reason[len(f"{label(a)} ") : reason.index(": its figures")]
    assert accepted.lines == (
        _answer("PASSED", accepted, 2, 0, 2, 0),
        f"Judged although disturbed (--accept-disturbed): {label(a)} {phrase}.",
    )
    # both disturbed, both accepted: each named, the baseline first
    both = disturbed_by_fio(b)
    c2 = api.compare([a, both], fail_on_regression=20, accept_disturbed=True)
    assert c2.lines[-1] == (
        f"Judged although disturbed (--accept-disturbed): {label(a)} {phrase}; "
        f"{label(both)} {phrase}."
    )


# --------------------------------------------------------------------------- what is gated


def _lane(writer: int) -> WriterLane:
    ms = 1_000_000
    return WriterLane(writer, tuple(k * ms for k in range(10)), (200_000,) * 10, (0,) * 10)


def test_the_gate_says_writers_points_are_not_gated():
    full = Pragmas("WAL", "FULL")
    lanes = (_lane(0), _lane(1))
    window = 1000 * 1_000_000
    point = WritersPoint(
        full, full, 2, "immediate", 5000, 1, 512, window, "fdatasync", lanes,
        concurrency.summarize(lanes, window, 1),
    )  # fmt: skip
    a = report(config("wal/full", 100.0, 0.02), writers=(point,))
    b = report(config("wal/full", 100.0, 0.02), at=LATE)
    c = api.compare([a, b], fail_on_regression=20)
    assert c.lines[-1] == (
        "Concurrent-writers points are shown, not gated: each is one window of one run, with "
        "no rounds to judge a change by."
    )
    assert len(c.lines) == 2


def test_configs_name_what_the_pair_tests_for_the_gate():
    """Only the named configuration gets the gate's detectable slowdown, over its own two
    statistics; the write baseline is checked when named."""
    a, b = _three_configs(1.0, EARLY), _three_configs(1.0, LATE)
    named = api.compare([a, b], configs="write (no sync)").pair
    assert [c.p99.detectable_ratio is not None for c in named.configs] == [
        True,
        False,
        False,
        False,
    ]
    every = api.compare([a, b]).pair
    assert [c.p99.detectable_ratio is not None for c in every.configs] == [
        False,
        True,
        True,
        True,
    ]


def test_a_fleets_gate_learns_the_spread_between_runs_from_the_checked_configuration_only():
    """Three earlier runs of each configuration in the baseline; those of wal/normal (not
    checked) calm or far apart leave the checked wal/full's statistics as they were."""

    def history(spread):
        figs = [100.0 * math.exp(spread * z) for z in (-1.0, 0.5, 1.0)]
        return tuple(
            EarlierRun(f"e{i}.json", f"2026-11-2{i}T10:00:00Z", f, f, None, None, 0.04, 0.04, 3)
            for i, f in enumerate(figs)
        )

    def base(wild):
        return report(
            config("wal/full", 100.0, 0.04, earlier=history(0.05)),
            config("wal/normal", 100.0, 0.04, earlier=history(1.5 if wild else 0.05)),
        )

    b = report(config("wal/full", 120.0, 0.04), config("wal/normal", 100.0, 0.04), at=LATE)
    gates = [
        api.compare([base(w), b], fail_on_regression=20, configs="wal/full", group_by="report")
        for w in (False, True)
    ]
    assert gates[0].gate.statistics == gates[1].gate.statistics
    # the pair's table learns it from every configuration
    pairs = [
        api.compare([base(w), b]).pair.configs[0].p50.se_log for w in (False, True)
    ]  # fmt: skip
    assert pairs[0] != pairs[1]
