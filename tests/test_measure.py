"""The timing loop's adaptive stop, the tool's floor and their place in reports.

No test asserts a duration: the stop logic runs against a scripted clock, the floor label
against recorded numbers, and real runs are only checked for what they record.
"""

import dataclasses
import json
import re
from array import array

import numpy as np
import pytest
import reference
from clitools import fsb
from factories import ScriptedClock, ScriptedWorkload, _result, commit, flush, host, write

from fsyncbench import api
from fsyncbench import report as report_out
from fsyncbench.measure import intervals, runner, stats, workloads
from fsyncbench.measure import timing as measure
from fsyncbench.measure.plan import RunPlan
from fsyncbench.model import Pragmas
from fsyncbench.report import store


@pytest.fixture
def clock(monkeypatch):
    c = ScriptedClock()
    monkeypatch.setattr(measure.time, "perf_counter_ns", c)
    return c


def _sampler(workload, **kw):
    kw.setdefault("max_samples", 10**6)
    return measure.Sampler(workload, **kw)


def test_fixed_count_times_only_run_and_numbers_operations(clock):
    durations = list(range(1, 200))
    w = ScriptedWorkload(clock, [5, 5, 5] + durations)
    m = measure.measure(w, target_samples=50, budget_s=10, warmup=3)
    assert m.samples_ns == tuple(durations[:50])  # the warmup durations are not samples
    assert m.warmup == 3 and m.target_reached and m.stop_reason == "samples"
    assert w.prepared[:3] == [-1, -2, -3] and w.prepared[3:] == list(range(50))
    assert m.ci_target_pct is None and m.phases == 1


def test_adaptive_stop_needs_an_interval_and_a_confirming_check(clock):
    # identical samples: the p99 interval has zero width as soon as there is one, i.e.
    # from MIN_BLOCKS slices; it must be met at two checks in a row
    w = ScriptedWorkload(clock, [1000] * 10**5)
    s = _sampler(w, min_samples=1000, ci_target_pct=10)
    reasons = [s.run(budget_s=300e-6) for _ in range(intervals.MIN_BLOCKS + 1)]
    assert reasons == [measure.STOP_BUDGET] * intervals.MIN_BLOCKS + [measure.STOP_CI_TARGET]
    m = s.measurement()
    assert m.slice_counts == (300,) * (intervals.MIN_BLOCKS + 1)
    # zero spread: the interval is one clock tick (1 ns of 1000) wide each side, no less
    assert 0.0 < m.p99_ci_halfwidth_pct < 0.5 and m.target_reached and s.done
    assert m.slice_rounds == ()  # one round


def test_adaptive_stop_never_before_min_samples(clock):
    w = ScriptedWorkload(clock, [1000] * 10**5)
    s = _sampler(w, min_samples=5000, ci_target_pct=50)
    while not s.done:
        s.run(budget_s=300e-6)
    assert len(s.samples) >= 5000 and s.stop_reason == measure.STOP_CI_TARGET


def test_wide_tail_runs_to_the_budget_and_records_its_precision(clock):
    rng = np.random.default_rng(7)
    durations = (rng.pareto(1.1, 10**6) * 1e5 + 1e4).astype(int)
    w = ScriptedWorkload(clock, durations)
    s = _sampler(w, min_samples=1000, ci_target_pct=0.5)
    for _ in range(8):
        assert s.run(budget_s=0.25) == measure.STOP_BUDGET
    m = s.measurement()
    assert m.p99_ci_halfwidth_pct > 0.5 and not s.done
    # the last check's half-width is the interval over the 8 phases as blocks, recomputed
    # here by the reference (numpy percentiles without each phase, scipy's t)
    assert len(m.slice_counts) == 8 and sum(m.slice_counts) == len(m.samples_ns)
    assert m.p99_ci_halfwidth_pct == pytest.approx(
        reference.p99_halfwidth_pct(m.samples_ns, m.slice_counts), rel=1e-9
    )
    # nothing but run() was timed: the samples are the scripted durations in order, minus
    # the untimed warmup operations of later phases
    used = list(durations[: len(m.samples_ns) + m.warmup])
    it = iter(used)
    assert all(any(x == d for d in it) for x in m.samples_ns)


def test_sample_cap_ends_adaptive_sampling(clock):
    rng = np.random.default_rng(3)
    w = ScriptedWorkload(clock, (rng.pareto(1.1, 10**5) * 1e5 + 1e4).astype(int))
    s = _sampler(w, max_samples=2000, min_samples=1000, ci_target_pct=0.1)
    assert s.run(budget_s=1000) == measure.STOP_SAMPLES
    assert len(s.samples) == 2000 and s.done


def test_min_phases_spreads_samples_before_the_target_may_stop(clock):
    w = ScriptedWorkload(clock, [1000] * 10**5)
    s = _sampler(w, min_samples=1000, ci_target_pct=10, min_phases=8, warmup=3)
    for phase in range(1, 9):
        s.run(budget_s=300e-6)
        assert s.done is (phase == 8)
    m = s.measurement()
    assert m.phases == 8 and m.stop_reason == "ci-target"
    # timed indexes continue across phases; untimed ones stay negative and distinct
    timed = [i for i in w.prepared if i >= 0]
    assert timed == list(range(len(m.samples_ns)))
    untimed = [i for i in w.prepared if i < 0]
    assert len(untimed) == len(set(untimed)) == m.warmup


def test_resumed_journal_commits_keep_unique_step_numbers(tmp_path):
    """A real database: later phases and re-warm operations must not reuse a step's key."""
    w = workloads.JournalCommit(tmp_path, Pragmas("WAL", "OFF"), 64)
    s = measure.Sampler(w, max_samples=10**6, min_samples=50, ci_target_pct=1e-9, warmup=5)
    for _ in range(3):
        s.run(budget_s=0.05)
    w.close()
    m = s.measurement()
    assert m.phases == 3 and m.warmup >= 5 + 2 * measure.RESUME_WARMUP
    import sqlite3

    db = sqlite3.connect(next(tmp_path.glob("journal-*.db")))
    assert db.execute("SELECT count(*) FROM steps WHERE seq >= 0").fetchone()[0] == len(
        m.samples_ns
    )
    assert db.execute("SELECT count(*) FROM steps WHERE seq < 0").fetchone()[0] == m.warmup


def test_check_copies_the_live_sample_array():
    """The check must not hold a view of the array the loop keeps appending to, nor reorder
    it: it gives the half-width of the samples as they were, and the loop goes on."""
    hand, counts = reference.hand_p99_blocks()
    samples = array("q", hand)
    # 20.8763 %: worked out by hand in test_stats.test_p99_halfwidth_by_hand
    assert intervals.p99_ci_halfwidth_pct(samples, counts) == pytest.approx(20.876303046, rel=1e-9)
    samples.append(5)  # would raise BufferError if a view were still exported
    assert len(samples) == 1001 and samples[-1] == 5
    assert samples[:1000].tolist() == hand  # not sorted in place
    again = intervals.p99_ci_halfwidth_pct(samples[:1000], counts)
    assert again == pytest.approx(20.876303046, rel=1e-9)


# --------------------------------------------------------------------------- the tool's floor


def _floor(name, p50_ns):
    return _result("floor", name, "none", p50_ns)


FLOORS = (
    _floor(stats.FLOOR_LOOP, 200),
    _floor(stats.FLOOR_COMMIT, 17_000),
    _floor(stats.FLOOR_WRITE, 1_400),
)


def test_floor_label_on_recorded_numbers():
    wal_off = commit("WAL", "OFF", 30_000)  # 1.8x the in-memory commit
    wal_full = commit("WAL", "FULL", 260_000)  # 15x
    cached_write = write(1_750)  # 1.25x the in-memory write
    fdatasync = flush("fdatasync", 150_000)
    tmpfs_flush = flush("fdatasync", 2_700)  # 1.9x: a "sync" that costs nothing
    assert stats.tool_floor(wal_off, FLOORS).name == stats.FLOOR_COMMIT
    assert stats.tool_floor(fdatasync, FLOORS).name == stats.FLOOR_WRITE
    assert stats.at_tool_floor(wal_off, FLOORS)
    assert not stats.at_tool_floor(wal_full, FLOORS)
    assert stats.at_tool_floor(cached_write, FLOORS)
    assert not stats.at_tool_floor(fdatasync, FLOORS)
    assert stats.at_tool_floor(tmpfs_flush, FLOORS)
    # exactly 2x is still at the floor, just above is not
    assert stats.at_tool_floor(commit("WAL", "OFF", 34_000), FLOORS)
    assert not stats.at_tool_floor(commit("WAL", "OFF", 34_001), FLOORS)


def test_only_the_loop_floor_applies_when_the_others_are_missing():
    loop_only = (_floor(stats.FLOOR_LOOP, 200),)
    assert stats.tool_floor(commit("WAL", "OFF", 30_000), loop_only).name == stats.FLOOR_LOOP
    assert not stats.at_tool_floor(commit("WAL", "OFF", 30_000), loop_only)
    assert stats.tool_floor(commit("WAL", "OFF", 300), ()) is None
    assert not stats.at_tool_floor(commit("WAL", "OFF", 300), ())


def _report(results, floors=FLOORS):
    return api.build_report("run", host(), results, ["fsyncbench", "run", "/data"], floors)


def test_render_labels_results_at_the_floor_in_text_and_markdown():
    report = _report(
        [
            write(1_750),
            flush("fdatasync", 150_000),
            commit("WAL", "OFF", 30_000),
            commit("WAL", "FULL", 260_000),
        ]
    )
    text, md = (
        report_out.render(report, "text", verbose=True),
        report_out.render(report, "markdown"),
    )
    for out in (text, md):
        rows = [
            line
            for line in out.splitlines()
            if line.lstrip("| ").startswith(("wal/", "write", "delete/", "truncate/"))
        ]
        # the configuration leads each row (and each panel of a wide table: counted once)
        labelled = {
            re.split(r"\s{2,}|\s\|", line.lstrip("| "))[0]
            for line in rows
            if "at the tool's floor)" in line
        }
        assert len(labelled) == 2
        assert any("wal/off" in line for line in labelled)
        assert any("write (no sync)" in line for line in labelled)
        assert not any("wal/full" in line or "write+fdatasync" in line for line in labelled)
        assert "Tool floor (p50): timing loop (empty operation) 200 ns" in out


def test_floors_round_trip_and_old_reports_still_load():
    report = _report([commit("WAL", "FULL", 260_000)])
    again = store.report_from_json(store.report_to_json(report))
    assert again.floors == report.floors
    data = json.loads(store.report_to_json(report))
    del data["floors"]
    for r in data["results"]:
        for key in ("ci_target_pct", "ci_target_met", "stop_reason", "phases"):
            del r[key]
        del r["summary"]["p99_ci_halfwidth_pct"]
    old = store.report_from_json(json.dumps(data))
    assert old.floors == () and old.results[0].ci_target_met is None
    assert "+-10.0%" in report_out.render(old, "text", verbose=True)  # derived from the recorded CI


def test_unmet_ci_target_is_said_in_notes_and_table():
    r = commit("WAL", "FULL", 260_000)
    wide = dataclasses.replace(
        r,
        ci_target_pct=10.0,
        ci_target_met=False,
        stop_reason="budget",
        summary=dataclasses.replace(
            r.summary,
            p99_ci_halfwidth_pct=23.5,
            p99_ci_ns=(r.summary.p99_ns * 0.8, r.summary.p99_ns * 1.235),
        ),
    )
    met = dataclasses.replace(
        commit("WAL", "NORMAL", 30_000), ci_target_pct=10.0, ci_target_met=True
    )
    report = _report([wide, met])
    assert any("NOT met" in n and "wal/full (+-23.5%, n=1000)" in n for n in report.notes)
    assert "wal/normal" not in " ".join(report.notes)
    text = report_out.render(report, "text", verbose=True)
    assert "+-23.5% (not met)" in text


def _measure_floors_records_each_floor(tmp_path, *budget_s):
    plan = RunPlan(target=tmp_path, configs=(), min_samples=200, ci_target_pct=50)
    floors = runner.measure_floors(plan, *budget_s)
    names = [f.name for f in floors]
    assert names[:2] == [stats.FLOOR_LOOP, stats.FLOOR_COMMIT]
    if workloads.MemoryFileWrite.available():
        assert names[2] == stats.FLOOR_WRITE
    for f in floors:
        assert f.kind == "floor" and f.summary.count == len(f.samples_ns) >= 1
    assert list(tmp_path.iterdir()) == []  # nothing written under the target


@pytest.mark.slow
def test_measure_floors_records_each_floor(tmp_path):
    _measure_floors_records_each_floor(tmp_path)


def test_measure_floors_records_each_floor_in_a_short_budget(tmp_path):
    """The same, each floor given 20 ms instead of runner.FLOOR_BUDGET_S (the fast tier's)."""
    _measure_floors_records_each_floor(tmp_path, 0.02)


# --------------------------------------------------------------------------- end to end


@pytest.mark.slow
def test_adaptive_run_records_precision_and_floors(tmp_path):
    out = tmp_path / "out"
    proc = fsb(
        "run",
        tmp_path,
        "--report-dir",
        out,
        "--quiet",
        "--verbose",
        "--journal-mode",
        "wal",
        "--synchronous",
        "off,full",
        "--no-primitives",
        "--min-samples",
        "200",
        "--ci-target-pct",
        "25",
        "--run-budget-seconds",
        "3",
        "--warmup",
        "5",
    )
    assert proc.returncode == 0, proc.stderr
    report = store.load_report(next(out.glob("*.json")))
    assert [f.name for f in report.floors][:2] == [stats.FLOOR_LOOP, stats.FLOOR_COMMIT]
    for r in report.results:
        assert r.ci_target_pct == 25.0 and isinstance(r.ci_target_met, bool)
        # the half-width recomputed by the reference from the raw samples, slices and rounds
        # (None: no interval, "n too small", ...), and the target judged on it
        est, _se, _df, bounds = reference.jackknife(
            r.samples_ns, r.slice_counts, 99, r.slice_rounds
        )
        if bounds is None:
            assert r.summary.p99_ci_halfwidth_pct is None
        else:
            shown = 100.0 * max(est - bounds[0], bounds[1] - est) / est
            assert r.summary.p99_ci_halfwidth_pct == pytest.approx(shown, rel=1e-9)
        # the target: that interval, on at least 4 degrees of freedom
        half = reference.p99_halfwidth_pct(r.samples_ns, r.slice_counts, r.slice_rounds)
        assert r.ci_target_met == (half is not None and half <= 25.0 and r.target_reached)
        assert len(set(r.slice_rounds)) == 8 and len(r.summary.round_p99_ns) == 8
        assert r.stop_reason in ("ci-target", "samples", "budget") and r.phases >= 1
        assert r.target_samples == 200
    assert "p99 +-" in proc.stdout and "Tool floor (p50)" in proc.stdout


@pytest.mark.slow
def test_impossible_ci_target_is_reported_not_met(tmp_path):
    proc = fsb(
        "run",
        tmp_path,
        "--report-dir",
        tmp_path / "out",
        "--quiet",
        "--verbose",
        "--journal-mode",
        "wal",
        "--synchronous",
        "off",
        "--no-primitives",
        "--min-samples",
        "100",
        "--ci-target-pct",
        "0.0001",
        "--run-budget-seconds",
        "1",
    )
    assert proc.returncode == 0, proc.stderr
    assert "(not met)" in proc.stdout
    assert "p99 CI target (+-0.0001 %) was NOT met" in proc.stdout


def test_samples_and_ci_target_are_exclusive(tmp_path):
    proc = fsb("run", tmp_path, "--samples", "10", "--ci-target-pct", "5")
    assert proc.returncode == 2
    assert "--samples fixes the sample count" in proc.stderr
