"""Concurrent writers (``run --writers``, ``--steps-per-commit``): real processes committing
into one real SQLite file, the statistics over their samples, the bound one sync per commit
sets, the report and bad input."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import this_platform

import fsyncbench
from fsyncbench import cli
from fsyncbench.judge import writers_rules
from fsyncbench.measure import concurrency, lanes, workloads, writers
from fsyncbench.model import (
    INFO,
    MEASURED,
    RISK,
    Interval,
    Pragmas,
    Result,
    RoundActivity,
    Summary,
    WriterLane,
    WritersPoint,
)
from fsyncbench.report import store
from fsyncbench.report.schema import report_schema
from fsyncbench.report.writers import points_table, writers_sections

WAL_FULL = Pragmas("WAL", "FULL")
#: wal/full as a run on this platform measures it (macOS: with fullfsync on, as below), and
#: the names of that run's configurations
HERE_FULL = this_platform.configs("wal", "full", "on" if this_platform.MACOS else None)[-1]
FULL_NAME, NORMAL_NAME = this_platform.label("wal/full"), this_platform.label("wal/normal")
MS = 1_000_000
S = 1_000_000_000


def _plan(counts=(1, 3), steps=(1,), window_s=0.4, busy_timeout_ms=5000, begin="immediate"):
    return writers.WritersPlan(
        (WAL_FULL,),
        counts,
        begin=begin,
        busy_timeout_ms=busy_timeout_ms,
        steps_per_commit=steps,
        payload_bytes=(256,),
        window_s=window_s,
    )


def _primitive(p: Pragmas) -> str:
    return workloads.sqlite_sync_primitive("Linux", p, False)


# ------------------------------------------------------------------ real processes


def test_writers_commit_at_once_into_one_database_and_every_commit_is_counted(tmp_path):
    points = writers.measure_writers(_plan(), tmp_path, _primitive)
    assert [(p.writers, len(p.lanes)) for p in points] == [(1, 1), (3, 3)]
    for p in points:
        s = p.summary
        assert p.primitive == "fdatasync" and p.effective.journal_mode == "WAL"
        assert s.commits == sum(len(la.samples_ns) for la in p.lanes) > 0
        for la in p.lanes:
            assert la.error == "" and len(la.start_samples_ns) == len(la.samples_ns)
            assert all(0 <= w <= x for w, x in zip(la.lock_wait_samples_ns, la.samples_ns))
            assert list(la.start_samples_ns) == sorted(la.start_samples_ns)
            # every commit began inside the window
            assert all(0 <= t < p.window_ns for t in la.start_samples_ns)
        # the per-writer rates add up to the total
        assert sum(s.writer_commits_per_s) == pytest.approx(s.commits_per_s)
        assert s.p50_interval.estimate_ns <= s.p99_interval.estimate_ns <= s.max_ns
    # three writers overlap in time: each one's commits interleave with the others'
    three = points[1]
    firsts = [la.start_samples_ns[0] for la in three.lanes if la.samples_ns]
    assert max(firsts) < three.window_ns / 2
    # nothing is left behind but what the caller owns
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".db") == []


def test_a_lane_commits_exactly_the_rows_it_reports(tmp_path):
    db = tmp_path / "j.db"
    lanes.create_lane_database(db, WAL_FULL)
    conn = lanes.open_lane(db, WAL_FULL, 1000)
    now = time.perf_counter_ns()
    lane = lanes.commit_lane(conn, 0, "deferred", 7, 100, now, now + 200 * MS, time.perf_counter_ns)
    conn.close()
    rows = sqlite3.connect(db).execute("SELECT count(*), count(DISTINCT seq) FROM steps").fetchone()
    assert rows == (7 * len(lane.latencies), 7 * len(lane.latencies)) and lane.latencies


def test_a_lock_held_longer_than_the_busy_timeout_is_measured_not_waited_out(tmp_path):
    db = tmp_path / "j.db"
    lanes.create_lane_database(db, WAL_FULL)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys, time\n"
            "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
            "c.execute('BEGIN IMMEDIATE'); print('held', flush=True); time.sleep(30)",
            str(db),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        conn = lanes.open_lane(db, WAL_FULL, 50)
        t0 = time.monotonic()
        now = time.perf_counter_ns()
        lane = lanes.commit_lane(
            conn, 0, "immediate", 1, 100, now, now + 300 * MS, time.perf_counter_ns
        )
        took = time.monotonic() - t0
        conn.close()
    finally:
        holder.kill()
        holder.wait()
    assert lane.latencies == [] and lane.busy_errors >= 2
    assert lane.abandoned == 1 and lane.abandoned_wait_ns >= 300 * MS
    assert took < 5  # the window and one busy timeout, not the holder's 30 s
    point = WritersPoint(
        WAL_FULL,
        WAL_FULL,
        1,
        "immediate",
        50,
        1,
        100,
        300 * MS,
        "fdatasync",
        (
            WriterLane(
                0, (), (), (), lane.busy_errors, 1, lane.abandoned_start_ns, lane.abandoned_wait_ns
            ),
        ),
        concurrency.summarize(
            (
                WriterLane(
                    0,
                    (),
                    (),
                    (),
                    lane.busy_errors,
                    1,
                    lane.abandoned_start_ns,
                    lane.abandoned_wait_ns,
                ),
            ),
            300 * MS,
            1,
        ),
    )
    assert point.summary.commits == 0 and point.summary.abandoned == 1
    assert point.summary.oldest_wait_max_ns >= 250 * MS  # the wait shows over time


def test_a_writer_that_cannot_start_is_one_line(tmp_path):
    plan = _plan(counts=(2,))
    (tmp_path / "sub").mkdir()
    os.chmod(tmp_path / "sub", 0o500)
    if os.access(tmp_path / "sub", os.W_OK):
        # root; and Windows, where a directory's mode does not stop files being made in it
        pytest.skip("the read-only directory cannot refuse here (root, or Windows)")
    with pytest.raises(fsyncbench.FsyncbenchError, match="creating writers-wal-full"):
        writers.measure_writers(plan, tmp_path / "sub", _primitive)


# ------------------------------------------------------------------ statistics


def _lane(writer, starts_ms, latency_ms, waits_ms=None):
    starts = tuple(int(t * MS) for t in starts_ms)
    lat = tuple(int(x * MS) for x in latency_ms)
    waits = tuple(int(x * MS) for x in (waits_ms or [0] * len(lat)))
    return WriterLane(writer, starts, lat, waits)


def _steady(writer, window_ms, every_ms=1.0, latency_ms=0.2, offset=0.0):
    n = int(window_ms / every_ms)
    return _lane(writer, [offset + i * every_ms for i in range(n)], [latency_ms] * n)


def test_a_starved_writer_shows_over_time_and_by_name_though_the_p99_over_commits_hides_it():
    window = 4000  # ms
    busy = [_steady(i, window, offset=0.1 * i) for i in range(3)]
    starved = _lane(3, [10.0], [3000.0], [2999.0])  # one commit that waited 3 s
    s = concurrency.summarize((*busy, starved), window * MS, 1)
    assert s.p99_interval.estimate_ns < 1 * MS  # 12,000 quick commits outweigh the one
    assert s.oldest_wait_p99_ns > 2900 * MS and s.oldest_wait_max_ns >= 2990 * MS
    assert s.starved == (3,)
    assert s.writer_longest_ns[3] == 3000 * MS
    assert s.fairness < 0.8
    # the same writers without the starved one: nobody starved, fair
    calm = concurrency.summarize(tuple(busy), window * MS, 1)
    assert calm.starved == () and calm.fairness == pytest.approx(1.0, abs=1e-3)
    assert calm.oldest_wait_p99_ns <= 0.2 * MS


def test_the_starvation_thresholds_hold_at_their_edges():
    window = 1000
    fair = [_steady(i, window) for i in range(3)]  # 1,000 commits each
    share = concurrency.STARVED_SHARE
    # a writer at just above / just below a quarter of an equal share of the commits
    for n, expect in ((int(1000 * share * 1.2), ()), (int(1000 * share * 0.5), (3,))):
        slow = _lane(3, [i * (window / n) for i in range(n)], [0.2] * n)
        s = concurrency.summarize((*fair, slow), window * MS, 1)
        assert s.starved == expect, (n, s.writer_commits_per_s)
    # one commit longer than a quarter of the window starves its writer
    wait = window * concurrency.STARVED_WAIT_SHARE
    for ms, expect in ((wait * 0.9, ()), (wait * 1.1, (0,))):
        lanes = (_lane(0, [i * 1.0 for i in range(1000)], [0.2] * 999 + [ms]), *fair[1:])
        s = concurrency.summarize(lanes, window * MS, 1)
        assert (0 in s.starved) == bool(expect), ms
    # one writer alone is never starved
    assert concurrency.summarize((_lane(0, [0.0], [900.0]),), window * MS, 1).starved == ()


def test_jain_index_is_one_for_equal_shares_and_one_over_n_for_one_winner():
    assert concurrency.jain_index([5, 5, 5, 5]) == pytest.approx(1.0)
    assert concurrency.jain_index([8, 0, 0, 0]) == pytest.approx(0.25)
    assert concurrency.jain_index([]) == 1.0 and concurrency.jain_index([0, 0]) == 1.0


def test_commits_finishing_after_the_window_count_in_latency_not_in_the_rate():
    lanes = (_lane(0, [0.0, 500.0, 990.0], [1.0, 1.0, 50.0]),)
    s = concurrency.summarize(lanes, 1000 * MS, 10)
    assert s.commits == 3 and s.commits_per_s == pytest.approx(2.0)
    assert s.steps_per_s == pytest.approx(20.0) and s.steps == 30


def test_the_oldest_wait_reads_an_open_commit_at_every_millisecond():
    # writer 0 inside a commit from 100 ms to 400 ms; writer 1 from 300 ms to 350 ms
    lanes = (_lane(0, [100.0], [300.0]), _lane(1, [300.0], [50.0]))
    ages = concurrency.oldest_wait(lanes, 1000 * MS)
    assert ages.shape == (1000,)
    assert ages[99] == 0 and ages[100] == 0 and ages[101] == 1 * MS
    assert ages[320] == 220 * MS  # the oldest of the two, not the newest
    assert ages[399] == 299 * MS and ages[400] == 0


# ------------------------------------------------------------------ the bound


def _summary(p50_ns):
    iv = Interval(p50_ns, None, None, None, 0.0, 0, "block-jackknife", "test")
    return Summary(
        1000,
        p50_ns,
        p50_ns,
        p50_ns,
        p50_ns,
        p50_ns,
        p50_ns,
        p50_ns,
        0.0,
        1e9 / p50_ns,
        None,
        None,
        p50_interval=iv,
        p99_interval=iv,
    )


def _flush(primitive, p50_ns):
    return Result(
        "flush", f"write+{primitive}", primitive, (), _summary(p50_ns), 0, 0, 0.0, True, 0, 4096
    )


def _point(rate, primitive="fdatasync", writers_n=4, pragmas=WAL_FULL):
    window = 1000
    n = int(rate)
    lanes = tuple(
        _lane(
            i,
            [k * window / (n / writers_n) for k in range(n // writers_n)],
            [0.01] * (n // writers_n),
        )
        for i in range(writers_n)
    )
    return WritersPoint(
        pragmas,
        pragmas,
        writers_n,
        "immediate",
        5000,
        1,
        512,
        window * MS,
        primitive,
        lanes,
        concurrency.summarize(lanes, window * MS, 1),
    )


@pytest.mark.parametrize(
    ("rate", "sync_p50_us", "code"),
    [
        (6_000, 90, "writers-within-sync-bound"),  # this VM: 6,000/s under 11,100/s
        (16_000, 90, "writers-within-sync-bound"),  # above the bound, within its slack (1.5x)
        (17_000, 90, "writers-beyond-sync-bound"),  # beyond 1.5 x 11,111/s
        (40_000, 10.0, "writers-within-sync-bound"),  # at the real-I/O floor: a PLP drive
        (40_000, 9.9, "writers-sync-reaches-no-device"),  # just below it
        (37_000, 1.2, "writers-sync-reaches-no-device"),  # tmpfs, eatmydata: ~1 us "syncs"
    ],
)
def test_the_bound_one_sync_per_commit_sets_fires_only_beyond_it(rate, sync_p50_us, code):
    f = writers_rules.sync_bound(_point(rate), [_flush("fdatasync", sync_p50_us * 1000)])
    assert f is not None and f.code == code
    assert f.level == (INFO if code == "writers-within-sync-bound" else RISK)
    assert f.evidence["bound_commits_per_s"] == pytest.approx(1e6 / sync_p50_us, rel=1e-3)


#: A round (or a writers point) other processes disturbed: their flushes on the disk.
FLUSHED = RoundActivity(
    round=1, device="vda", device_flushes=1_000, other_flushes=400.0, disturbed=("disk",)
)


@pytest.mark.parametrize("where", ["point", "rounds"])
def test_beyond_the_bound_on_a_disturbed_machine_cannot_tell(where):
    """A flush waits for what other processes wrote: the primitive timed in disturbed rounds,
    or commits counted while the machine was disturbed, are no bound on each other (seen on
    this VM: fdatasync p50 3.7 ms in the rounds, one writer at 1,086/s, 4x the bound)."""
    point = _point(17_000)
    if where == "point":
        point = dataclasses.replace(point, activity=FLUSHED)
    rounds = (FLUSHED, RoundActivity(round=2)) if where == "rounds" else ()
    f = writers_rules.sync_bound(point, [_flush("fdatasync", 90_000)], rounds)
    assert f is not None and (f.code, f.level) == ("writers-bound-untold", INFO)
    assert "1.5x the 11,111/s that one fdatasync of p50 90 us per commit allows, but " in (
        f.message
    )
    assert "the machine was disturbed (other processes flushed vda about 400 times" in f.message
    assert f.evidence["disturbed"] is True


def test_the_cannot_tell_finding_names_its_point_source_and_advice():
    """The whole finding, beyond its words: the point it is about, the bound's source, how it
    was established, and what to do; a rate exactly at 1.5x the bound is within it, disturbed
    or not."""
    point = dataclasses.replace(_point(17_000), activity=FLUSHED)
    f = writers_rules.sync_bound(point, [_flush("fdatasync", 90_000)])
    assert f is not None and f.code == writers_rules.UNTOLD_CODE
    assert (f.subject, f.source, f.strength) == (point.name, writers_rules.SOURCE, MEASURED)
    assert f.advice == (
        "Run again on a quiet machine, or trace the commits' syncs (fsyncbench audit)."
    )
    at_slack = dataclasses.replace(_point(15_000), activity=FLUSHED)
    f = writers_rules.sync_bound(at_slack, [_flush("fdatasync", 100_000)])
    assert f is not None and f.code == "writers-within-sync-bound"


def test_a_disturbed_machine_changes_neither_a_rate_within_the_bound_nor_a_sync_of_no_device():
    """Disturbance slows a flush down: it explains commits beyond the bound, never a rate
    within it nor a sync faster than any device (those keep their codes)."""
    busy = dataclasses.replace(_point(6_000), activity=FLUSHED)
    assert writers_rules.sync_bound(busy, [_flush("fdatasync", 90_000)], (FLUSHED,)).code == (
        "writers-within-sync-bound"
    )
    fast = dataclasses.replace(_point(37_000), activity=FLUSHED)
    f = writers_rules.sync_bound(fast, [_flush("fdatasync", 1_200)], (FLUSHED,))
    assert (f.code, f.level) == ("writers-sync-reaches-no-device", RISK)
    # a retaken round's disturbed attempt is not the one whose samples were kept
    retaken = (dataclasses.replace(FLUSHED, kept=False), RoundActivity(round=1, attempt=2))
    f = writers_rules.sync_bound(_point(17_000), [_flush("fdatasync", 90_000)], retaken)
    assert (f.code, f.level) == ("writers-beyond-sync-bound", RISK)


def test_no_bound_without_a_per_commit_sync_or_without_the_primitive():
    normal = Pragmas("WAL", "NORMAL")
    assert (
        writers_rules.sync_bound(
            _point(30_000, "fdatasync (checkpoints only)", pragmas=normal),
            [_flush("fdatasync", 90_000)],
        )
        is None
    )
    f = writers_rules.sync_bound(_point(6_000), [_flush("fsync", 90_000)])  # another primitive
    assert f is not None and f.code == "writers-bound-unknown" and f.level == INFO


# ------------------------------------------------------------------ run, report, bad input


@pytest.fixture(scope="module")
def run_report(tmp_path_factory):
    target = tmp_path_factory.mktemp("writers-target")
    report = fsyncbench.run(
        target,
        journal_modes="wal",
        synchronous="full,normal",
        fullfsync="on" if this_platform.MACOS else None,
        samples=300,
        rounds=3,
        writers="1,2",
        steps_per_commit="1,10",
        writers_seconds=0.5,
        command_line=["fsyncbench", "run", "--writers", "1,2"],
    )
    return target, report


def test_run_with_writers_measures_every_point_and_leaves_nothing_behind(run_report):
    target, report = run_report
    names = [(p.requested.label, p.steps_per_commit, p.writers) for p in report.writers]
    configs = (FULL_NAME, NORMAL_NAME)
    assert names == [(c, s, n) for c in configs for s in (1, 10) for n in (1, 2)]
    sync = this_platform.sync_name()  # fdatasync; F_FULLFSYNC on macOS; FlushFileBuffers
    assert {p.primitive for p in report.writers} == {sync, f"{sync} (checkpoints only)"}
    assert list(target.iterdir()) == []
    # ten steps per commit: more steps per second than one, fewer commits
    by = {(p.requested.label, p.steps_per_commit, p.writers): p.summary for p in report.writers}
    one, ten = by[(FULL_NAME, 1, 1)], by[(FULL_NAME, 10, 1)]
    assert ten.steps_per_s > one.steps_per_s and ten.commits_per_s < one.commits_per_s


def test_a_writers_report_round_trips_and_matches_the_schema(run_report, tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    _target, report = run_report
    path = tmp_path / "r.json"
    path.write_text(store.report_to_json(report))
    again = store.load_report(path)
    assert again.writers == report.writers
    jsonschema.validate(json.loads(path.read_text()), report_schema())


def test_the_writers_section_fits_100_columns_in_every_view(run_report):
    import dataclasses

    _target, report = run_report
    # the widest it gets: writers, steps and payloads swept, long names and intervals
    wide = []
    for i, p in enumerate(report.writers):
        s = p.summary
        p99 = (
            dataclasses.replace(
                s.p99_interval,
                low_ns=None,
                high_ns=None,
                reason="the slices disagree too much: 10 slices",
            )
            if i % 2
            else dataclasses.replace(
                s.p99_interval, estimate_ns=8.69e6, low_ns=1.47e6, high_ns=51.3e6
            )
        )
        summary = dataclasses.replace(
            s,
            p99_interval=p99,
            p50_interval=p99,
            max_ns=3.23e9,
            oldest_wait_p99_ns=3.19e9,
            busy_errors=12345,
            commits_per_s=123456.0,
            steps_per_s=1234567.0,
        )
        wide.append(
            dataclasses.replace(
                p, writers=8 * (i % 2 + 1), payload_bytes=65536 * (i % 2) + 128, summary=summary
            )
        )
    rep = dataclasses.replace(report, writers=tuple(wide))
    for view in ("text", "verbose", "markdown"):
        text = (
            fsyncbench.render(rep, "text", verbose=view == "verbose")
            if view != "markdown"
            else fsyncbench.render(rep, "markdown")
        )
        assert "Concurrent writers and batching" in text
        if view != "markdown":
            lines = text[text.index("Concurrent writers and batching") :].splitlines()
            end = next((k - 1 for k in range(2, len(lines)) if set(lines[k]) == {"="}), len(lines))
            long = [line for line in lines[:end] if len(line) > 100]
            assert not long, long
    table = points_table(report.writers)
    assert table.headers[:3] == ("configuration", "steps", "steps/s")
    (section,) = writers_sections(report)
    assert "1 writer" in fsyncbench.render(report, "text")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--writers", "0"], "--writers must be between 1 and 64, got 0"),
        (["--writers", "100000"], "--writers must be between 1 and 64, got 100000"),
        (["--writers", "two"], "--writers must be whole numbers, got 'two'"),
        (["--writers", ","], "--writers must be whole numbers, got ''"),
        (["--steps-per-commit", "0"], "--steps-per-commit must be between 1 and 10000, got 0"),
        (["--writers", "2", "--busy-timeout-ms", "-1"], "--busy-timeout-ms must be between 0"),
        (["--writers", "2", "--writers-seconds", "0"], "--writers-seconds must be between 0.5"),
        (["--writers", "2", "--writers-seconds", "nan"], "--writers-seconds must be between 0.5"),
        # refused though nothing would use them: no --writers, --steps-per-commit or sweep
        (["--writers-seconds", "0.1"], "--writers-seconds must be between 0.5"),
        (["--busy-timeout-ms", "-5"], "--busy-timeout-ms must be between 0"),
        (["--writers", "2", "--begin", "exclusive"], "invalid choice: 'exclusive'"),
    ],
)
def test_bad_writers_input_is_one_line_and_exit_2_before_anything_is_measured(
    argv, message, tmp_path, capsys
):
    assert cli.main(["run", str(tmp_path), "--no-report", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------ the bound on real stacks


def _cli_run(target: Path, extra_env: dict[str, str] | None = None) -> str:
    """``fsyncbench run TARGET --writers 1,2`` (WAL/FULL, small) as a user runs it; its JSON."""
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "fsyncbench",
            "run",
            str(target),
            "--journal-mode",
            "wal",
            "--synchronous",
            "full",
            "--samples",
            "300",
            "--rounds",
            "3",
            "--writers",
            "1,2",
            "--writers-seconds",
            "1",
            "--no-report",
            "--no-history",
            "-q",
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, **(extra_env or {})},
        check=False,
        timeout=300,
    )
    assert out.returncode in (0, 1), out.stderr
    return out.stdout


def _bound_codes(report_json: str) -> set[str]:
    from fsyncbench.report.store import report_from_json

    rep = report_from_json(report_json)
    return {
        f.code
        for f in (writers_rules.sync_bound(p, rep.results, rep.activity) for p in rep.writers)
        if f is not None
    }


@pytest.mark.system
def test_on_this_disk_the_writers_stay_within_the_bound(tmp_path):
    target = (
        Path(os.environ.get("FSYNCBENCH_DISK_DIR", str(Path.cwd()))) / f".writers-{os.getpid()}"
    )
    target.mkdir()
    try:
        from fsyncbench.host import collect_host

        mount = collect_host(str(target)).target.mount  # (GNU stat -f is Linux's)
        fs = mount.fs_type if mount is not None else ""
        if fs in ("tmpfs", "ramfs"):
            pytest.skip(f"{target} is on {fs}, not a disk")
        # never beyond the bound: within it, or, on a machine disturbed while it ran (a
        # shared runner), cannot tell
        codes = _bound_codes(_cli_run(target))
        assert codes and codes <= {"writers-within-sync-bound", "writers-bound-untold"}, codes
    finally:
        shutil.rmtree(target, ignore_errors=True)


@pytest.mark.system
def test_on_tmpfs_the_bound_says_no_sync_reaches_a_device():
    shm = Path("/dev/shm")
    if not shm.is_dir() or not os.access(shm, os.W_OK):
        pytest.skip("no writable /dev/shm (tmpfs) here")
    target = shm / f"fsb-writers-{os.getpid()}"
    target.mkdir()
    try:
        assert _bound_codes(_cli_run(target)) == {"writers-sync-reaches-no-device"}
    finally:
        shutil.rmtree(target, ignore_errors=True)


@pytest.mark.system
def test_under_eatmydata_the_bound_says_no_sync_reaches_a_device(tmp_path):
    lib = next(
        (
            p
            for p in (
                "/usr/lib/x86_64-linux-gnu/libeatmydata.so",
                "/usr/lib/aarch64-linux-gnu/libeatmydata.so",
                "/usr/lib/libeatmydata.so",
            )
            if os.path.exists(p)
        ),
        None,
    )
    if lib is None:
        pytest.skip("libeatmydata is not installed (apt install eatmydata)")
    target = Path.cwd() / f".writers-emd-{os.getpid()}"
    target.mkdir()
    try:
        assert _bound_codes(_cli_run(target, {"LD_PRELOAD": lib})) == {
            "writers-sync-reaches-no-device"
        }
    finally:
        shutil.rmtree(target, ignore_errors=True)


def test_the_knee_is_the_most_writers_up_to_which_every_count_stays_under_max_p99():
    from fsyncbench.report.writers import _knee, max_p99_of

    def point(n, longest_ms):
        lanes = tuple(_lane(i, [0.0, 10.0], [0.1, longest_ms if i == 0 else 0.1]) for i in range(n))
        return WritersPoint(
            WAL_FULL,
            WAL_FULL,
            n,
            "immediate",
            5000,
            1,
            512,
            1000 * MS,
            "fdatasync",
            lanes,
            concurrency.summarize(lanes, 1000 * MS, 1),
        )

    points = [point(1, 1), point(2, 5), point(4, 50), point(8, 5)]  # 8 is fine again: no knee there
    assert "up to 2 writers" in _knee(points, 10 * MS)
    assert "At no writer count" in _knee(points, 0.5 * MS)
    assert "up to 8 writers" in _knee(points, 100 * MS)
    assert _knee(points, None) == "" and _knee(points[:1], 10 * MS) == ""
    assert max_p99_of(["fsyncbench", "run", "--max-p99", "10ms"]) == 10 * MS
    assert max_p99_of(["fsyncbench", "run", "--max-p99=500us"]) == 500_000
    assert max_p99_of(["fsyncbench", "run"]) is None
    assert max_p99_of(["fsyncbench", "run", "--max-p99", "soon"]) is None


def test_payload_sizes_and_steps_alone_sweep_one_writer_and_one_size_is_the_default_run():
    from fsyncbench import options

    cfg = (WAL_FULL,)
    assert options.writers_plan(cfg, writers=None) is None  # the default run: no sweep
    assert options.writers_plan(cfg, writers=None, payload_bytes=(512,)) is None
    plan = options.writers_plan(cfg, writers=None, payload_bytes=(128, 4096))
    assert plan is not None and plan.counts == (1,) and plan.payload_bytes == (128, 4096)
    plan = options.writers_plan(cfg, writers=None, steps_per_commit="1,10")
    assert plan is not None and plan.counts == (1,) and plan.steps_per_commit == (1, 10)
    assert plan.points == 2


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--payload-bytes", "128,0"], "--payload-bytes must be between 1 and 67108864, got 0"),
        (["--payload-bytes", "128,big"], "--payload-bytes must be whole numbers, got 'big'"),
    ],
)
def test_a_bad_payload_sweep_is_one_line(argv, message, tmp_path, capsys):
    assert cli.main(["run", str(tmp_path), "--no-report", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(sys.platform == "win32", reason="Ctrl-C for one process (POSIX SIGINT)")
def test_ctrl_c_while_writers_commit_stops_every_writer_and_leaves_nothing(tmp_path):
    import signal

    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fsyncbench",
            "run",
            str(tmp_path),
            "--journal-mode",
            "wal",
            "--synchronous",
            "full",
            "--samples",
            "60",
            "--rounds",
            "3",
            "--no-primitives",
            "--writers",
            "3",
            "--writers-seconds",
            "60",
            "--no-report",
            "-q",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while not list(tmp_path.glob(".fsyncbench-*/writers-*-2.json")) and not list(
        tmp_path.glob(".fsyncbench-*/writers-*-2-request.json")
    ):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    time.sleep(1.0)  # the writers are committing
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, err
    assert len(err.strip().splitlines()) == 1 and "interrupted" in err, err
    assert list(tmp_path.iterdir()) == []
    # no writer outlived it
    import psutil

    alive = [
        p.info["cmdline"]
        for p in psutil.process_iter(["cmdline"])
        if any(str(tmp_path) in part for part in (p.info["cmdline"] or []))
    ]
    assert alive == []


def test_the_html_page_draws_the_writers_chart(run_report):
    from fsyncbench.report import plots

    if not plots.available():
        pytest.skip("matplotlib is not installed (pip install matplotlib)")
    _target, report = run_report
    page = fsyncbench.render(report, "html")
    section = page[page.index('id="writers"') :]
    assert "<svg" in section[: section.index("</section>")]
    assert 'id="writers-' in page  # its ids salted apart from the other charts


def test_max_p99_gates_each_writers_point_and_names_a_starved_one(run_report):
    import dataclasses

    from fsyncbench.judge import gates

    _target, report = run_report
    window = 1000
    fast = [_steady(i, window) for i in range(3)]  # 0.2 ms commits
    starved = _lane(3, [10.0], [600.0], [599.0])  # one commit that waited 0.6 s
    lanes = (*fast, starved)
    point = WritersPoint(
        HERE_FULL,
        HERE_FULL,
        4,
        "immediate",
        5000,
        1,
        512,
        window * MS,
        "fdatasync",
        lanes,
        concurrency.summarize(lanes, window * MS, 1),
    )
    rep = dataclasses.replace(report, writers=(point,))
    # the p99 over commits (0.2 ms) passes 10 ms; the oldest wait over time is named (the
    # fixture's run may have stayed disturbed on a busy machine: this is about the points)
    failures, notes, _untold = gates.review(
        rep, max_p99_ns=10 * MS, names=(FULL_NAME,), accept_disturbed=True
    )
    assert not [f for f in failures if f.subject == f"{FULL_NAME} x4"]
    assert any(
        n.startswith(f"{FULL_NAME} x4: over time") and "writer 3 starved" in n for n in notes
    )
    # a limit below the p99 over commits fails the point by name
    failures, _notes, _untold = gates.review(
        rep, max_p99_ns=100_000, names=(FULL_NAME,), accept_disturbed=True
    )
    assert any(f.subject == f"{FULL_NAME} x4" and "above --max-p99" in f.message for f in failures)
    # points of a configuration the gate does not look at are left alone
    failures, notes, _untold = gates.review(rep, max_p99_ns=100_000, names=(NORMAL_NAME,))
    assert not [f for f in failures if f.subject.startswith(f"{FULL_NAME} x")]


def test_compare_shows_two_runs_writers_side_by_side_and_says_they_are_not_gated(
    run_report, tmp_path, capsys
):
    _target, report = run_report
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(store.report_to_json(report))
    data = json.loads(a.read_text())
    data["created_utc"] = "2026-12-06T09:00:00Z"
    data["writers"] = data["writers"][:-1]  # B lacks the last point
    b.write_text(json.dumps(data))
    assert cli.main(["compare", str(a), str(b), "--verbose"]) == 0
    out = capsys.readouterr().out
    section = out[out.index("Concurrent writers (") :]
    assert "not gated" in section.split("\n\n")[0]
    last = report.writers[-1].name
    assert f"Writers points only in A: {last}" in section
    assert f"{FULL_NAME} x2" in section and "1.00x" in section
    code = cli.main(["compare", str(a), str(b), "--format", "json"])
    got = json.loads(capsys.readouterr().out)["writers"]
    assert code == 0 and got["gated"] is False and got["only_a"] == [last]
    # the gate names them as not gated; they do not change its exit code
    with_gate = cli.main(["compare", str(a), str(b), "--fail-on-regression", "1000"])
    out = capsys.readouterr().out
    assert "Concurrent-writers points are shown, not gated" in out.replace("\n  ", " ")
    data["writers"] = []
    b.write_text(json.dumps(data))
    assert cli.main(["compare", str(a), str(b), "--fail-on-regression", "1000"]) == with_gate


def _disks(directory):
    from fsyncbench.host import collect_host, counter_devices

    return counter_devices(collect_host(str(directory)).target)


def test_a_cpu_burner_beside_the_writers_disturbs_the_point_and_is_named(tmp_path):
    from fsyncbench.report.writers import machine_text

    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)
        (point,) = writers.measure_writers(
            _plan(counts=(1,), window_s=1.5), tmp_path, _primitive, disks=_disks(tmp_path)
        )
    finally:
        burner.kill()
        burner.wait()
    a = point.activity
    assert a is not None and a.cpu_other_pct is not None
    # one of this machine's CPUs burnt by another process the whole time
    assert a.cpu_other_pct >= 25 and "cpu" in a.disturbed, a
    text = machine_text([point])
    assert text.startswith("Disturbed while 1 of 1 points ran (wal/full x1): other processes ")
    # the two busiest are named: the burner, unless busier ones took both places (a loaded
    # machine: seen beside a mutation run)
    ranked = [p.pid for p in sorted(a.processes, key=lambda p: -p.cpu_s)]
    if burner.pid in ranked[:2]:
        assert f"pid {burner.pid}" in text
    else:
        assert len(ranked) >= 2 and all(f"pid {pid}" in text for pid in ranked[:2]), text


def test_a_process_fsyncing_on_the_same_disk_disturbs_the_point(tmp_path):
    disks = _disks(tmp_path)
    if not disks:
        pytest.skip(f"no device flush counters under {tmp_path} (Linux >= 5.5, a real disk)")
    loop = (
        "import os, sys\n"
        "fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o600)\n"
        "while True:\n    os.pwrite(fd, b'x' * 4096, 0); os.fsync(fd)"
    )
    syncer = subprocess.Popen([sys.executable, "-c", loop, str(tmp_path / "other")])
    try:
        time.sleep(0.3)
        (point,) = writers.measure_writers(
            _plan(counts=(1,), window_s=1.5), tmp_path, _primitive, disks=disks
        )
    finally:
        syncer.kill()
        syncer.wait()
    a = point.activity
    assert a is not None and a.other_flushes is not None and a.other_flushes > 0, a
    assert "disk" in a.disturbed, a


def test_a_quiet_point_is_not_disturbed_and_says_what_it_saw(tmp_path):
    from fsyncbench.report.writers import machine_text

    (point,) = writers.measure_writers(
        _plan(counts=(2,), window_s=1.0), tmp_path, _primitive, disks=_disks(tmp_path)
    )
    a = point.activity
    assert a is not None
    if a.disturbed:  # something else on this machine was busy: say so rather than fail
        pytest.skip(f"the machine was busy during the test: {a.disturbed}")
    assert machine_text([point]).startswith("Quiet while the writers ran: other processes ")


def test_max_p99_cannot_tell_from_a_disturbed_point_unless_accepted(run_report):
    import dataclasses

    from fsyncbench.judge import gates
    from fsyncbench.model import RoundActivity

    _target, report = run_report
    # the rounds quiet, so that only the point's own activity can make it 'cannot tell'
    report = dataclasses.replace(
        report, activity=tuple(dataclasses.replace(a, disturbed=()) for a in report.activity)
    )
    point = report.writers[0]
    busy = RoundActivity(
        round=1, attempt=1, elapsed_ns=10**9, cpu_other_pct=74.0, disturbed=("cpu",)
    )
    rep = dataclasses.replace(report, writers=(dataclasses.replace(point, activity=busy),))
    failures, _notes, untold = gates.review(rep, max_p99_ns=1, names=(FULL_NAME,))
    assert not [f for f in failures if f.subject == point.name]
    assert any(u.startswith(f"{point.name}: --max-p99 1 ns: cannot tell") for u in untold)
    failures, _notes, untold = gates.review(
        rep, max_p99_ns=1, names=(FULL_NAME,), accept_disturbed=True
    )
    assert any(f.subject == point.name for f in failures) and not untold


def test_the_writers_text_says_a_disturbed_point_beyond_its_bound_cannot_tell():
    """The paragraph says what the check found: beyond the bound on a disturbed machine is
    neither "within the bound" nor a risk (marked as a bad sign)."""
    import sampled

    from fsyncbench.report.writers import config_paragraph

    point = dataclasses.replace(_point(17_000), activity=FLUSHED)
    rep = dataclasses.replace(
        sampled.report(n=200), results=(_flush("fdatasync", 90_000),), writers=(point,)
    )
    para = config_paragraph([point], rep)
    assert "1.5x the 11,111/s that one fdatasync of p50 90 us per commit allows, but " in (
        para.text
    )
    assert "cannot tell whether the commits skipped their syncs" in para.text
    assert "Within the bound" not in para.text and para.tone == ""
