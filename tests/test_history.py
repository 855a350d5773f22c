"""Intervals that include the spread between runs (``run --history``): the statistics on
processes with a known answer, the matching of earlier reports, and the whole path through
real runs, reports and compare."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
import sampled
import this_platform
from clitools import assert_usage_error, fsb
from factories import host

from fsyncbench.measure import intervals, stats
from fsyncbench.model import SCHEMA_VERSION, EarlierRun, Interval
from fsyncbench.report import compare, history, store

# --------------------------------------------------------------------------- statistics


def own(estimate: float, se: float, df: float = 30.0) -> Interval:
    """This run's interval as quantile_interval makes it: estimate x exp(+-t x se)."""
    t = intervals.t_quantile(df, 0.975)
    return Interval(
        estimate, estimate * math.exp(-t * se), estimate * math.exp(t * se), se, df, 31, "x"
    )


def test_coverage_near_95_where_one_run_alone_covers_far_less():
    """Runs differ by a run effect (sd tau) four times this run's own error (sd s): a
    process with a known answer, mu. One run's interval covers mu far less often than 95 %;
    the interval from the spread of 5 runs covers it at least 95 % of the time (about 99 %:
    this run is one of the runs whose spread is measured, which errs on the wide side)."""
    rng = np.random.default_rng(11)
    mu, tau, s = math.log(1e6), 0.2, 0.05
    trials, alone, widened = 4000, 0, 0
    for _ in range(trials):
        ys = mu + rng.normal(0, tau, 5) + rng.normal(0, s, 5)
        current = own(math.exp(ys[-1]), s)
        earlier = [(math.exp(y), s) for y in ys[:-1]]
        alone += current.low_ns <= math.exp(mu) <= current.high_ns
        iv = intervals.between_runs_interval(current, earlier)
        widened += iv.low_ns <= math.exp(mu) <= iv.high_ns
    assert alone / trials < 0.5
    assert 0.95 <= widened / trials <= 0.995


def test_a_shift_in_the_spread_is_followed_by_the_last_runs_only():
    """Runs whose spread grows (an hour of a quiet host, then a busy one): intervals from
    the last MAX_EARLIER_RUNS runs still cover a next run's estimate near 95 % of the time
    once the change is that many runs old, where all runs since the quiet hour would not."""
    rng = np.random.default_rng(5)
    hits = trials = 0
    for _ in range(1500):
        quiet = list(rng.normal(0, 0.02, 20))
        busy = list(rng.normal(0, 0.4, intervals.MAX_EARLIER_RUNS + 2))
        ys = quiet + busy
        current = own(math.exp(ys[-2]), 0.01)
        earlier = [(math.exp(y), 0.01) for y in ys[:-2]]
        iv = intervals.between_runs_interval(current, earlier)
        hits += iv.low_ns <= math.exp(ys[-1]) <= iv.high_ns
        trials += 1
    # a calibrated interval covers another run's estimate less often than the mean (both
    # have the run's error): P(|T_4| < t_4,0.975 / sqrt(2)) = 0.82 for t on 4 df
    assert 0.75 <= hits / trials <= 0.92


def test_no_spread_between_runs_leaves_the_interval_as_it_was():
    """Earlier runs that agree within their own errors add nothing: tau = 0, the same
    bounds, and the interval says it rests on 3 runs."""
    current = own(1000.0, 0.1)
    iv = intervals.between_runs_interval(current, [(1000.0, 0.1), (1000.0, 0.1)])
    assert iv.runs == 3 and iv.tau_log == 0.0
    assert iv.bounds == pytest.approx(current.bounds)
    assert iv.within_se_log == 0.1 and iv.within_df == 30.0


def test_between_runs_interval_by_hand():
    """Logs 0, 1, 2 (this run last) with own SEs 0.1: the runs' sd is 1, t on 2 degrees of
    freedom; tau^2 = var(y) - mean(s^2) = 1 - 0.01 = 0.99 is recorded."""
    current = own(math.exp(2.0), 0.1)
    iv = intervals.between_runs_interval(current, [(1.0, 0.1), (math.e, 0.1)])
    t = intervals.t_quantile(2, 0.975)
    assert iv.se_log == pytest.approx(1.0)
    assert iv.df == 2
    assert iv.tau_log == pytest.approx(math.sqrt(0.99))
    assert iv.bounds == pytest.approx((math.exp(2.0 - t), math.exp(2.0 + t)))


def test_the_earlier_runs_own_errors_change_only_the_recorded_tau():
    current = own(math.exp(2.0), 0.1)
    with_se = intervals.between_runs_interval(current, [(1.0, 0.1), (math.e, 0.1)])
    without = intervals.between_runs_interval(current, [(1.0, None), (math.e, None)])
    assert without.tau_log > with_se.tau_log
    assert without.bounds == pytest.approx(with_se.bounds)


def test_fewer_than_two_earlier_runs_or_a_zero_estimate_change_nothing():
    current = own(1000.0, 0.1)
    assert intervals.between_runs_interval(current, [(5000.0, 0.1)]) is current
    # a zero estimate (a clock too coarse) is no run to compare with
    assert intervals.between_runs_interval(current, [(0.0, 0.1), (5000.0, 0.1)]) is current


def test_only_the_last_max_earlier_runs_are_used():
    current = own(1000.0, 0.05)
    old = [(1e9, 0.05)] * 5  # far off, and older than the window
    recent = [(1000.0 * (1 + 0.01 * k), 0.05) for k in range(intervals.MAX_EARLIER_RUNS)]
    iv = intervals.between_runs_interval(current, old + recent)
    assert iv.runs == intervals.MAX_EARLIER_RUNS + 1
    assert iv.tau_log == 0.0


def test_runs_give_an_interval_where_this_run_alone_has_none():
    """Too few samples beyond p99 for this run's own interval: two earlier runs (three in
    all) give one from their spread, t on 2 degrees of freedom; one earlier run, none."""
    none = Interval(1000.0, None, None, None, 0, 10, "block-jackknife", "n=400 too small")
    two = [(900.0, None), (1200.0, 0.1)]
    iv = intervals.between_runs_interval(none, two)
    se = float(np.std(np.log([900.0, 1200.0, 1000.0]), ddof=1))
    t = intervals.t_quantile(2, 0.975)
    assert iv.reason is None and iv.runs == 3 and iv.df == 2
    assert iv.bounds == pytest.approx((1000.0 * math.exp(-t * se), 1000.0 * math.exp(t * se)))
    assert iv.within_se_log is None
    assert intervals.between_runs_interval(none, two[:1]) is none


def test_own_bounds_recover_this_runs_interval():
    current = own(math.exp(2.0), 0.1)
    iv = intervals.between_runs_interval(current, [(1.0, 0.1), (math.e, 0.1)])
    assert intervals.own_bounds(iv) == pytest.approx(current.bounds)
    assert intervals.own_bounds(current) == current.bounds


def test_quantile_interval_with_earlier_runs_is_the_widened_own_interval():
    """The one function behind every interval: quantile_interval(..., earlier) is
    between_runs_interval of its own interval."""
    data = sampled.samples(1e6, 2000, seed=3)
    slices = tuple([200] * 10)
    mine = intervals.quantile_interval(data, slices, 99)
    earlier = [(1.4e6, 0.05), (2.1e6, 0.06)]
    both = intervals.quantile_interval(data, slices, 99, earlier=earlier)
    assert both == intervals.between_runs_interval(mine, earlier)
    assert both.runs == 3 and both.high_ns > mine.high_ns


# --------------------------------------------------------------------------- reports


def saved_runs(tmp_path, scales, start_hour=10, the_host=None):
    """Reports of the sampled run, one per scale, an hour apart, saved in tmp_path."""
    paths = []
    for k, scale in enumerate(scales):
        rep = dataclasses.replace(
            sampled.report(scale=scale, seed=10 * k, the_host=the_host),
            created_utc=f"2026-11-30T{start_hour + k:02d}:00:00Z",
        )
        paths.append(sampled.save(rep, tmp_path / f"case-host-{k}.json"))
    return paths


def test_light_loading_keeps_every_figure_and_drops_only_the_samples(tmp_path):
    (path,) = saved_runs(tmp_path, [1.0])
    full, light = store.load_report(path), store.load_report(path, samples=False)
    assert all(r.samples_ns == () for r in light.results)
    assert [r.summary for r in light.results] == [r.summary for r in full.results]
    assert light.host == full.host and light.verdict == full.verdict


def test_history_finds_runs_of_the_same_measurement_only(tmp_path):
    saved_runs(tmp_path, [1.0, 1.3, 0.9])
    # another directory of the same host is another measurement
    other = host()
    other = dataclasses.replace(other, target=dataclasses.replace(other.target, path="/elsewhere"))
    rep = sampled.report(scale=5.0, the_host=other)
    sampled.save(dataclasses.replace(rep, created_utc="2026-11-30T13:00:00Z"), tmp_path / "o.json")
    (tmp_path / "notes.json").write_text('{"not": "a report"}')  # not of this host: skipped
    (tmp_path / "broken.json").write_text('{"hostname": "case-host", "cut off')
    ours = sampled.report(scale=1.0, seed=99)
    past = history.read_history(tmp_path, ours.host)
    assert [name for name, _ in past.reports] == [f"case-host-{k}.json" for k in range(3)]
    assert past.unreadable == ("broken.json",)
    wal_full = next(r for r in ours.results if r.name == "wal/full")
    runs = past.earlier(wal_full)
    assert [e.created_utc for e in runs] == [f"2026-11-30T{h}:00:00Z" for h in (10, 11, 12)]
    assert (
        runs[1].p99_ns
        == next(
            r
            for r in store.load_report(tmp_path / "case-host-1.json").results
            if r.name == "wal/full"
        ).summary.p99_ns
    )
    # another payload size is another workload
    changed = dataclasses.replace(wal_full, payload_bytes=4096)
    assert past.earlier(changed) == ()


def test_a_missing_history_directory_has_no_runs(tmp_path):
    past = history.read_history(tmp_path / "none", host())
    assert past.reports == () and past.examined == 0


def test_earlier_runs_widen_the_report_and_compare_shows_the_same_interval(tmp_path):
    """Runs 1.5x apart: the new run's p99 interval includes that spread, its report says
    on how many runs it rests, and compare recomputes exactly the report's interval."""
    saved_runs(tmp_path, [1.0, 1.5, 0.7])
    ours = sampled.report(scale=1.1, seed=99)
    past = history.read_history(tmp_path, ours.host)
    results = history.with_earlier(ours.results, past)
    r = next(r for r in results if r.name == "wal/full")
    before = next(r for r in ours.results if r.name == "wal/full")
    iv = r.summary.p99_interval
    assert len(r.earlier) == 3 and iv.runs == 4 and iv.tau_log > 0
    assert iv.low_ns < before.summary.p99_ci_ns[0] and iv.high_ns > before.summary.p99_ci_ns[1]
    assert r.summary.p99_ci_ns == iv.bounds
    assert compare.result_interval(r, 99) == iv
    # saved and read back: the same interval, and the current schema
    rep = dataclasses.replace(ours, results=results)
    back = store.load_report(sampled.save(rep, tmp_path / "new.json"))
    assert back.schema_version == SCHEMA_VERSION >= 3
    assert compare.result_interval(back.results[-1], 99) == back.results[-1].summary.p99_interval
    assert back.results[-1].earlier == r.earlier


def test_an_earlier_widened_report_gives_its_own_se_not_the_widened_one(tmp_path):
    runs = (
        EarlierRun("a.json", "2026-11-30T10:00:00Z", 1e6, 1.2e6, 0.05, 0.05),
        EarlierRun("b.json", "2026-11-30T11:00:00Z", 1.5e6, 2e6, 0.05, 0.05),
    )
    data = sampled.samples(1e6, 2000, seed=4)
    s = stats.summarize(data, tuple([200] * 10), earlier=runs)
    assert s.p99_interval.runs == 3
    rep = sampled.report()
    r = dataclasses.replace(rep.results[-1], summary=s, earlier=runs)
    e = history.earlier_run(rep, r, "c.json")
    assert e.p99_se_log == s.p99_interval.within_se_log != s.p99_interval.se_log


# --------------------------------------------------------------------------- real runs

#: One configuration, wal/full (with fullfsync on on macOS, its one durable wal/full)
RUN = ("--no-primitives", "--journal-mode", "wal", "--synchronous", "full", "--samples", "400")
RUN += this_platform.ONE_FULLFSYNC


@pytest.mark.slow
def test_three_real_runs_the_third_includes_the_spread_of_the_first_two(tmp_path):
    reports = tmp_path / "reports"
    for _ in range(3):
        proc = fsb("run", str(tmp_path), *RUN, "--report-dir", str(reports), "--quiet")
        assert proc.returncode == 0, proc.stderr
    paths = sorted(reports.glob("*.json"), key=lambda p: store.load_report(p).created_utc)
    first, third = store.load_report(paths[0]), store.load_report(paths[-1])
    assert first.results[0].earlier == ()
    assert first.results[0].summary.p50_interval.runs == 1
    (r,) = third.results
    assert [e.report for e in r.earlier] == [paths[0].name, paths[1].name]
    for iv in (r.summary.p50_interval, r.summary.p99_interval):
        # widened by the two earlier runs, unless this run alone had no interval (with 3
        # runs the runs' spread gives none either)
        assert iv.runs == 3 if iv.bounds is not None else iv.runs == 1
    text = (paths[-1].with_suffix(".md")).read_text()
    assert "p99 of earlier runs" in text and "earlier runs of the same measurement" in text
    # the terminal's compact table says its intervals rest on 3 runs (a wide one has a why)
    if r.summary.p99_interval.runs == 3:
        assert "p99 95% interval (3 runs)" in proc.stdout, proc.stdout
    # --no-history: this run alone, and the report says what it cannot see
    proc = fsb("run", str(tmp_path), *RUN, "--report-dir", str(reports), "--no-history", "-q", "-v")
    assert proc.returncode == 0, proc.stderr
    flat = " ".join(proc.stdout.split())  # running text is wrapped at 100 columns
    assert "this run alone (fewer than 2 earlier runs of the same measurement" in flat
    assert "p99 of earlier runs" not in flat
    assert "p99 95% CI" in flat  # the full table is there to not have that column


def _a_history_directory_with_other_files_still_runs_and_says_so(fsb, tmp_path, *rounds):
    hist = tmp_path / "hist"
    hist.mkdir()
    import socket

    (hist / "fleet.json").write_text(json.dumps({"rows": []}))  # not of this host: skipped
    # of this host, but of a newer schema: named
    newer = {"schema_version": 99, "host": {"hostname": socket.gethostname()}}
    (hist / "newer.json").write_text(json.dumps(newer))
    proc = fsb("run", str(tmp_path), *RUN, *rounds, "--history", str(hist), "--no-report", "-q")
    assert proc.returncode == 0, proc.stderr
    assert (
        f"fsyncbench: note: 1 file(s) in {hist} are not reports this fsyncbench reads (not "
        "JSON, not a report, or of a newer schema) and give no earlier runs: newer.json"
    ) in " ".join(proc.stderr.split())  # wrapped to the terminal


@pytest.mark.slow
def test_a_history_directory_with_other_files_still_runs_and_says_so(tmp_path):
    _a_history_directory_with_other_files_still_runs_and_says_so(fsb, tmp_path)


def test_a_history_directory_with_other_files_still_runs_and_says_so_in_process(tmp_path, here):
    _a_history_directory_with_other_files_still_runs_and_says_so(
        here, tmp_path, "--rounds", "1", "--samples", "30"
    )


@pytest.mark.parametrize(
    "args, line",
    [
        (
            ("--history", "{tmp}/absent"),
            "argument --history: directory {tmp}/absent does not exist (see fsyncbench run --help)",
        ),
        (
            ("--history", "{tmp}", "--no-history"),
            "argument --no-history: not allowed with argument --history (see fsyncbench run --help)",
        ),
    ],
)
def test_bad_history_options_are_one_line_and_exit_2(tmp_path, args, line):
    proc = fsb("run", str(tmp_path), *RUN, *(a.format(tmp=tmp_path) for a in args))
    assert_usage_error(proc, line.format(tmp=tmp_path))


def test_redaction_removes_the_hostname_from_earlier_report_names(tmp_path):
    from fsyncbench.report import redact

    saved_runs(tmp_path, [1.0, 1.2])
    ours = sampled.report(scale=1.1, seed=99)
    results = history.with_earlier(ours.results, history.read_history(tmp_path, ours.host))
    rep = dataclasses.replace(ours, results=results)
    assert "case-host" in store.report_to_json(rep)
    clean = redact.redact_report(rep)
    assert "case-host" not in store.report_to_json(clean)
    assert clean.results[-1].earlier[0].p99_ns == rep.results[-1].earlier[0].p99_ns


def test_copies_of_one_run_count_once(tmp_path):
    """A report copied under another name is one run, not two that agree."""
    _, second = saved_runs(tmp_path, [1.0, 1.4])
    (tmp_path / "copy.json").write_bytes(second.read_bytes())
    past = history.read_history(tmp_path, sampled.report().host)
    assert [rep.created_utc for _, rep in past.reports] == [
        "2026-11-30T10:00:00Z",
        "2026-11-30T11:00:00Z",
    ]


def test_compare_says_which_statistics_rest_on_earlier_runs(tmp_path):
    """A baseline that recorded 3 earlier runs is judged on their spread ("against 4 runs"),
    and the table says so; without them the pair basis, and what would settle it."""
    from fsyncbench import api

    (tmp_path / "h").mkdir()
    saved_runs(tmp_path / "h", [1.0, 1.5, 0.8])
    ours = sampled.report(scale=1.1, seed=99)
    results = history.with_earlier(ours.results, history.read_history(tmp_path / "h", ours.host))
    a = sampled.save(dataclasses.replace(ours, results=results), tmp_path / "a.json")
    b = sampled.save(sampled.report(scale=1.0, seed=5), tmp_path / "b.json")
    text = api.render(api.compare([a, b]), "text", verbose=True)
    flat = " ".join(text.split())  # running text is wrapped at 100 columns
    assert "statistics were judged against the baseline's runs" in flat
    assert "against 4 runs" in text
    plain = " ".join(api.render(api.compare([b, a]), "text", verbose=True).split())
    assert "No statistic had 3 earlier runs behind A" in plain


def test_reading_stops_once_enough_runs_are_found(tmp_path):
    """Newest first, and no more files than needed: with 8 runs found the 9th oldest is
    never opened (here: it is not even a report, and is not named as unreadable)."""
    import os

    paths = saved_runs(tmp_path, [1.0 + k / 10 for k in range(intervals.MAX_EARLIER_RUNS)])
    junk = tmp_path / "old.json"
    junk.write_text("not json")
    os.utime(junk, ns=(1, 1))
    for k, p in enumerate(paths):
        os.utime(p, ns=(10**18 + k, 10**18 + k))
    past = history.read_history(tmp_path, sampled.report().host)
    assert len(past.reports) == intervals.MAX_EARLIER_RUNS
    assert past.examined == intervals.MAX_EARLIER_RUNS and past.unreadable == ()


def test_a_schema_2_report_is_read_and_says_its_intervals_rest_on_one_run():
    from pathlib import Path

    from fsyncbench import api

    path = Path(__file__).parent / "fixtures" / "runs" / "vm-20261201T113650Z.json"
    rep = store.load_report(path)
    assert rep.schema_version == 2 and all(r.earlier == () for r in rep.results)
    text = api.render(rep, "markdown")
    assert "Fewer than 2 earlier runs of the same measurement were read" in text
    assert "p99 of earlier runs" not in text
    iv = compare.result_interval(rep.results[0], 99)
    stored = rep.results[0].summary.p99_interval
    assert stored is not None and iv.runs == 1
    # the same interval, its bounds to the last bits of Student's t (scipy's then, ours now)
    assert (iv.low_ns, iv.high_ns) == pytest.approx((stored.low_ns, stored.high_ns), rel=1e-12)
    assert dataclasses.replace(iv, low_ns=stored.low_ns, high_ns=stored.high_ns) == stored


def test_never_narrower_than_this_runs_own_interval():
    """Own df 2 (t = 4.3, SE 0.1) and runs a little further apart than that SE: their t on
    4 degrees of freedom times their sd is the shorter; the interval stays this run's own."""
    current = own(1000.0, 0.1, df=2.0)
    spread = [(1000.0 * math.exp(0.12 * (-1) ** k), 0.1) for k in range(4)]
    iv = intervals.between_runs_interval(current, spread)
    assert iv.runs == 5 and iv.tau_log > 0
    assert iv.bounds == pytest.approx(current.bounds)
    assert iv.se_log == current.se_log and iv.df == current.df


def test_newer_reports_of_other_configurations_do_not_hide_the_matching_ones(tmp_path):
    """Two runs of wal/full, then eight newer runs of only write (no sync): a run of
    wal/full still finds its two (reading stops only once every result it will measure
    has enough)."""
    import os

    base = sampled.report()
    paths = saved_runs(tmp_path, [1.0, 1.3])
    for k in range(intervals.MAX_EARLIER_RUNS):
        rep = dataclasses.replace(
            base, results=base.results[:1], created_utc=f"2026-11-30T{14 + k:02d}:00:00Z"
        )
        newer = sampled.save(rep, tmp_path / f"write-{k}.json")
        os.utime(newer, ns=(10**18 + k, 10**18 + k))
    for k, p in enumerate(paths):
        os.utime(p, ns=(10**17 + k, 10**17 + k))
    past = history.read_history(tmp_path, base.host, ["write (no sync)", "wal/full"])
    wal_full = next(r for r in base.results if r.name == "wal/full")
    assert len(past.earlier(wal_full)) == 2
    # without the names it stops at the eight newest, as before
    assert history.read_history(tmp_path, base.host).earlier(wal_full) == ()


def _a_report_dir_that_is_a_file_names_the_way_out(fsb, tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    proc = fsb("run", str(tmp_path), *RUN, "--report-dir", str(afile), "--no-report")
    assert_usage_error(
        proc,
        f"cannot read earlier runs from {afile}: Not a directory (--history DIR reads them "
        "elsewhere, --no-history measures without)",
    )


@pytest.mark.slow
def test_a_report_dir_that_is_a_file_names_the_way_out(tmp_path):
    _a_report_dir_that_is_a_file_names_the_way_out(fsb, tmp_path)


def test_a_report_dir_that_is_a_file_names_the_way_out_in_process(tmp_path, here):
    _a_report_dir_that_is_a_file_names_the_way_out(here, tmp_path)


def test_the_caveat_names_only_intervals_that_earlier_runs_entered():
    """Earlier runs attached but no interval could take them in: the report says the
    intervals are this run's alone."""
    from fsyncbench.report import method_text

    runs = (  # estimates of zero (a clock too coarse) are no runs to compare with
        EarlierRun("a.json", "2026-11-30T10:00:00Z", 0.0, 0.0),
        EarlierRun("b.json", "2026-11-30T11:00:00Z", 0.0, 0.0),
    )
    data = sampled.samples(1e6, 15, seed=4)  # too few for an interval of its own
    s = stats.summarize(data, tuple([3] * 5), (0, 0, 1, 1, 2), earlier=runs)
    assert s.p50_interval.runs == 1 and s.p99_interval.runs == 1
    r = dataclasses.replace(
        sampled.report().results[-1],
        samples_ns=data,
        slice_counts=(3,) * 5,
        slice_rounds=(0, 0, 1, 1, 2),
        summary=s,
        earlier=runs,
    )
    text = method_text.interval_caveat([r])
    assert text.startswith("Intervals: this run alone (fewer than 2 earlier runs")


# --------------------------------------------------------------------------- the key, field by field


def _host_with(**changes):
    """sampled.report's host with one fact changed (a dotted path: target.mount.options)."""
    h = sampled.report().host
    for path, value in changes.items():
        parts = path.split(".")
        if parts[0] == "disk":
            disk = dataclasses.replace(h.target.disks[0], **{parts[1]: value})
            h = dataclasses.replace(
                h, target=dataclasses.replace(h.target, disks=(disk, *h.target.disks[1:]))
            )
        elif parts[0] == "mount":
            mount = dataclasses.replace(h.target.mount, **{parts[1]: value})
            h = dataclasses.replace(h, target=dataclasses.replace(h.target, mount=mount))
        elif parts[0] == "target":
            h = dataclasses.replace(h, target=dataclasses.replace(h.target, **{parts[1]: value}))
        else:
            h = dataclasses.replace(h, **{path: value})
    return h


HOST_FIELDS = [
    ("hostname", "other-host"),
    ("os_name", "Darwin"),
    ("os_release", "6.1.0-99-amd64"),  # a kernel update
    ("machine", "aarch64"),
    ("sqlite_version", "3.99.0"),
    ("target.path", "/elsewhere"),
    ("target.declared", ("plp",)),
    ("mount.fs_type", "xfs"),
    ("mount.source", "/dev/sdb1"),
    ("mount.options", ("rw", "nobarrier")),
    ("mount.super_options", ("rw", "data=writeback")),
    ("disk.name", "sdb"),
    ("disk.model", "Another SSD"),
    ("disk.serial", "S6PNNS0T999999"),
    ("disk.write_cache", "write through"),
]


@pytest.mark.parametrize(("field", "value"), HOST_FIELDS, ids=[f for f, _ in HOST_FIELDS])
def test_each_host_fact_of_the_key_starts_a_new_history(tmp_path, field, value):
    """Runs saved on one host and storage; a run differing in this one fact (keeping the
    hostname in its file, so the file is parsed) finds none of them: one test per field of
    history.host_key, so a field dropped from the key fails exactly one of these."""
    saved_runs(tmp_path, [1.0, 1.2, 0.9])
    same = history.read_history(tmp_path, sampled.report().host)
    assert len(same.reports) == 3
    changed = _host_with(**{field: value})
    assert history.host_key(changed) != history.host_key(sampled.report().host)
    if field != "hostname":
        assert history.read_history(tmp_path, changed).reports == ()
    else:  # another hostname: its files are not even parsed
        past = history.read_history(tmp_path, changed)
        assert past.reports == () and past.unreadable == ()


RESULT_FIELDS = [
    ("name", "wal/FULL2"),
    ("kind", "flush"),
    ("primitive", "F_FULLFSYNC"),
    ("payload_bytes", 4096),
]


@pytest.mark.parametrize(("field", "value"), RESULT_FIELDS, ids=[f for f, _ in RESULT_FIELDS])
def test_each_workload_fact_of_the_key_starts_a_new_history(tmp_path, field, value):
    """The same host and storage, one workload fact changed: no earlier run of it."""
    saved_runs(tmp_path, [1.0, 1.2, 0.9])
    ours = sampled.report(seed=99)
    past = history.read_history(tmp_path, ours.host)
    wal_full = next(r for r in ours.results if r.name == "wal/full")
    assert len(past.earlier(wal_full)) == 3
    assert past.earlier(dataclasses.replace(wal_full, **{field: value})) == ()


def test_the_pragmas_asked_for_are_part_of_the_workload(tmp_path):
    from fsyncbench.model import Pragmas

    saved_runs(tmp_path, [1.0, 1.2, 0.9])
    ours = sampled.report(seed=99)
    past = history.read_history(tmp_path, ours.host)
    wal_full = next(r for r in ours.results if r.name == "wal/full")
    asked = dataclasses.replace(wal_full, requested=Pragmas("WAL", "FULL", True))
    assert past.earlier(asked) == ()


def test_a_regressed_run_in_the_history_does_not_widen_the_next_runs_intervals():
    """Four calm earlier runs and one 10x slower (a regressed run saved in the same report
    directory): it is left out of the next run's earlier runs, whose interval then rests on
    the calm ones; a run 1.1x apart stays."""
    from fsyncbench.report import history

    def early(i, p):
        return EarlierRun(
            f"r{i}.json", f"2026-01-0{i + 1}T00:00:00Z", p, 2 * p, 0.01, 0.01, 0.05, 0.05, 8
        )

    r = sampled.result("commit", "wal/full", "fdatasync", 1000.0, n=2000, seed=1, rounds=8)
    p50 = r.summary.p50_ns
    calm = [early(i, p50 * f) for i, f in enumerate((1.02, 0.97, 1.1))]
    wild = [calm[0], early(3, p50 * 10), *calm[1:]]
    kept = history.steady_earlier(r, wild)
    assert [e.report for e in kept] == ["r0.json", "r1.json", "r2.json"]
    assert history.steady_earlier(r, calm) == tuple(calm)
