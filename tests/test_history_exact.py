"""``run --history`` exactly: which earlier runs a run keeps (too few: none; one apart from the
others at its p50 or its p99: left out, unless the runs' own round spread or standard errors
say it is not apart), what an earlier run carries from its report (a real recording and a
schema 1 one), when reading stops (every result this run measures found often enough, and
not one file later), the error for a directory that cannot be listed, and a widened
result's summary (this run's rounds kept; a result without samples left as it was)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest
import sampled

from fsyncbench.errors import FsyncbenchError
from fsyncbench.measure import between, intervals, stats
from fsyncbench.model import EarlierRun
from fsyncbench.report import history, store

FIXTURES = Path(__file__).parent / "fixtures"

#: This run: 2,000 samples in 8 rounds (p50 ~1 us, p99 ~2.3 us).
RUN = sampled.result("commit", "wal/full", "fdatasync", 1000.0, n=2000, seed=1, rounds=8)


def _early(i: int, p50: float, p99: float, se: float = 0.01, sd: float = 0.01) -> EarlierRun:
    """Earlier run ``i``: RUN's p50 and p99 times these factors, 8 rounds whose logs spread
    by ``sd``, own standard errors ``se``."""
    s = RUN.summary
    return EarlierRun(
        f"r{i}.json",
        f"2026-01-0{i + 1}T00:00:00Z",
        s.p50_ns * p50,
        s.p99_ns * p99,
        se,
        se,
        sd,
        sd,
        8,
    )


CALM = [_early(i, f, f) for i, f in enumerate((1.02, 0.97, 1.1))]


# --------------------------------------------------------------------------- steady_earlier


@pytest.mark.parametrize(
    ("p50", "p99"),
    [(10.0, 1.0), (1.0, 10.0)],
    ids=["p50 apart", "p99 apart"],
)
def test_a_run_apart_at_either_percentile_alone_is_left_out(p50, p99):
    """A run 10x slower at one percentile only (its other figure calm) is left out: both
    percentiles are judged, and a run left out at the p50 stays out after the p99."""
    wild = [*CALM, _early(3, p50, p99)]
    assert [e.report for e in history.steady_earlier(RUN, wild)] == [e.report for e in CALM]


@pytest.mark.parametrize("pct", [50, 99])
@pytest.mark.parametrize(
    ("sd", "se", "kept"),
    [(0.3, 0.01, True), (0.01, 0.3, True), (0.01, 0.01, False)],
    ids=["rounds spread", "own errors wide", "both narrow"],
)
def test_a_run_4x_apart_stays_when_the_runs_own_spread_covers_it(pct, sd, se, kept):
    """Four runs, one 4x slower at ``pct``: their rounds spreading by 0.3 in the log, or
    their own standard errors of 0.3, make 4x no surprise and it stays; with both narrow it
    is left out (the spread used is each run's round sd, floored at its own SE)."""
    factors = (1.0, 1.01, 0.99, 4.0)
    runs = [
        _early(i, f if pct == 50 else 1.0, f if pct == 99 else 1.0, se=se, sd=sd)
        for i, f in enumerate(factors)
    ]
    kept_names = [e.report for e in history.steady_earlier(RUN, runs)]
    assert ("r3.json" in kept_names) is kept
    assert kept_names[:3] == ["r0.json", "r1.json", "r2.json"]


def test_fewer_than_two_steady_runs_are_none():
    assert history.steady_earlier(RUN, CALM[:1]) == ()
    assert intervals.MIN_EARLIER_RUNS == 2
    assert history.steady_earlier(RUN, CALM[:2]) == tuple(CALM[:2])


# --------------------------------------------------------------------------- earlier_run


def test_an_earlier_run_carries_its_reports_figures_rounds_and_own_errors():
    """A real recording (schema 2, 3 rounds per result): each figure as the report holds it."""
    name = "vm-20261201T113650Z.json"
    rep = store.load_report(FIXTURES / "runs" / name)
    for r in rep.results:
        s = r.summary
        e = history.earlier_run(rep, r, name)
        assert (e.report, e.created_utc) == (name, rep.created_utc)
        assert (e.p50_ns, e.p99_ns) == (s.p50_ns, s.p99_ns)
        assert e.p50_se_log == s.p50_interval.own_se_log
        assert e.p99_se_log == s.p99_interval.own_se_log
        assert e.p50_round_sd_log == between.round_sd_log(s.round_p50_ns)
        assert e.p99_round_sd_log == between.round_sd_log(s.round_p99_ns)
        assert e.rounds == len(s.round_p50_ns) == 3
    r = rep.results[0]
    e = history.earlier_run(rep, r, name)
    assert e.p50_se_log is not None and e.p50_round_sd_log is not None
    assert e.p99_round_sd_log is not None


def test_a_schema_1_report_gives_runs_without_errors_or_rounds():
    name = "openzfs-2431-zol-r720xd-12-sata.json"
    rep = store.load_report(FIXTURES / "reports" / name)
    assert rep.schema_version == 1 and rep.results
    for r in rep.results:
        e = history.earlier_run(rep, r, name)
        assert (e.p50_se_log, e.p99_se_log) == (None, None)
        assert (e.p50_round_sd_log, e.p99_round_sd_log, e.rounds) == (None, None, 0)
        assert (e.p50_ns, e.p99_ns) == (r.summary.p50_ns, r.summary.p99_ns)


# --------------------------------------------------------------------------- read_history


def _save(path: Path, k: int, mtime_ns: int, only_write: bool = False) -> Path:
    rep = sampled.report(scale=1.0 + k / 20, seed=10 * k)
    if only_write:
        rep = dataclasses.replace(rep, results=rep.results[:1])
    rep = dataclasses.replace(rep, created_utc=f"2026-11-30T{10 + k:02d}:00:00Z")
    sampled.save(rep, path)
    os.utime(path, ns=(mtime_ns, mtime_ns))
    return path


def test_one_earlier_run_is_no_history(tmp_path):
    _save(tmp_path / "only.json", 0, 10**18)
    ours = sampled.report(seed=99)
    past = history.read_history(tmp_path, ours.host)
    assert len(past.reports) == 1
    wal_full = next(r for r in ours.results if r.name == "wal/full")
    assert past.earlier(wal_full) == ()


def test_reading_stops_right_after_each_named_result_has_enough_runs(tmp_path):
    """Newest first: four runs of the write baseline only, then four runs of everything,
    then a file that is not a report. wal/full is in four reports only once the eighth is
    read: reading goes that far, and not one file further."""
    n = intervals.MAX_EARLIER_RUNS
    assert n == 4
    for k in range(n):
        _save(tmp_path / f"write-{k}.json", 4 + k, 10**18 + 10 + k, only_write=True)
    for k in range(n):
        _save(tmp_path / f"full-{k}.json", k, 10**18 + k)
    junk = tmp_path / "old.json"
    junk.write_text("not json")
    os.utime(junk, ns=(1, 1))
    ours = sampled.report(seed=99)
    past = history.read_history(tmp_path, ours.host, ["write (no sync)", "wal/full"])
    assert past.examined == 2 * n and past.unreadable == ()
    wal_full = next(r for r in ours.results if r.name == "wal/full")
    assert [e.report for e in past.earlier(wal_full)] == [f"full-{k}.json" for k in range(n)]


def test_a_directory_that_cannot_be_listed_names_the_way_out(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(FsyncbenchError) as err:
        history.read_history(afile, sampled.report().host)
    assert str(err.value) == (
        f"cannot read earlier runs from {afile}: Not a directory (--history DIR reads them "
        "elsewhere, --no-history measures without)"
    )


def test_a_host_without_a_mount_record_has_a_key():
    """Where the mount could not be read (Mount None) the key holds None in its place."""
    h = sampled.report().host
    bare = dataclasses.replace(h, target=dataclasses.replace(h.target, mount=None))
    key = history.host_key(bare)
    assert None in key and key != history.host_key(h)


# --------------------------------------------------------------------------- with_earlier


def _history_of_runs(tmp_path: Path) -> history.History:
    for k, scale in enumerate((1.0, 1.2, 0.9)):
        rep = sampled.report(scale=scale, seed=10 * k, rounds=4)
        sampled.save(
            dataclasses.replace(rep, created_utc=f"2026-11-30T{10 + k:02d}:00:00Z"),
            tmp_path / f"run-{k}.json",
        )
    return history.read_history(tmp_path, sampled.report().host)


def test_a_widened_summary_is_recomputed_from_this_runs_samples_and_rounds(tmp_path):
    past = _history_of_runs(tmp_path)
    ours = sampled.report(scale=1.1, seed=99, rounds=4)
    before = next(r for r in ours.results if r.name == "wal/full")
    after = next(r for r in history.with_earlier(ours.results, past) if r.name == "wal/full")
    assert len(after.earlier) == 3
    assert after.summary == stats.summarize(
        before.samples_ns, before.slice_counts, before.slice_rounds, earlier=after.earlier
    )
    assert len(after.summary.round_p50_ns) == 4
    assert after.summary.round_p50_ns == before.summary.round_p50_ns


def test_a_result_without_its_samples_is_left_as_it_was(tmp_path):
    """A result loaded without its raw samples has earlier runs but nothing to recompute
    its summary from: it is returned unchanged."""
    past = _history_of_runs(tmp_path)
    light = store.load_report(tmp_path / "run-0.json", samples=False)
    wal_full = next(r for r in light.results if r.name == "wal/full")
    assert wal_full.samples_ns == () and past.earlier(wal_full)
    assert history.with_earlier([wal_full], past) == (wal_full,)
