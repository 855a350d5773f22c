"""The statistics of concurrent writers (``run --writers``) exactly: the commit and step rates
(commits finished inside the window, one ending on its last nanosecond included, per second of
it, overall and per writer), the latency percentiles and the time slices their intervals rest
on, the lock-wait share, the busy errors and abandoned commits added up, a point whose writers
made no commit, an abandoned wait read as a commit in progress and as a writer's longest, the
oldest commit in progress over time (whole nanoseconds, every writer's every commit), the
starvation thresholds at their exact edges with two writers, and Jain's index of large
integer shares."""

from __future__ import annotations

import numpy as np
import pytest

from fsyncbench.measure import concurrency
from fsyncbench.model import Interval, WriterLane

MS = 1_000_000
S = 1_000_000_000


def _lane(writer, starts_ns, latencies_ns, waits_ns=None, **kw):
    waits = tuple(waits_ns) if waits_ns is not None else (0,) * len(latencies_ns)
    return WriterLane(writer, tuple(starts_ns), tuple(latencies_ns), waits, **kw)


def _every(n, window_ns, latency_ns=100_000, offset_ns=0):
    """``n`` commits spread evenly over the window."""
    step = window_ns // n
    return [offset_ns + i * step for i in range(n)], [latency_ns] * n


def test_rates_count_commits_finished_inside_the_window_per_second_of_it():
    window = 2 * S
    # writer 0: three commits, the last ending on the window's last nanosecond (counted)
    w0 = _lane(0, [0, 1 * S, 1900 * MS], [10 * MS, 10 * MS, 100 * MS])
    # writer 1: two commits, the last ending after the window (latency only, not in the rate)
    w1 = _lane(1, [500 * MS, 1950 * MS], [10 * MS, 100 * MS])
    s = concurrency.summarize((w0, w1), window, 3)
    assert s.window_ns == window
    assert s.commits == 5 and s.steps == 15
    assert s.commits_per_s == 2.0  # 4 finished in 2 s
    assert s.steps_per_s == 6.0
    assert s.writer_commits_per_s == (1.5, 0.5)
    assert isinstance(s.writer_commits_per_s, tuple)


def test_latency_over_commits_p50_p999_and_max():
    window = 1 * S
    starts, _ = _every(101, window)
    lane = _lane(0, starts, [(i + 1) * MS for i in range(101)])
    s = concurrency.summarize((lane,), window, 1)
    assert s.p50_interval.estimate_ns == 51 * MS  # the middle of 1..101 ms
    # numpy's linear interpolation: rank 0.999 x 100 = 99.9, between 100 ms and 101 ms
    assert s.p999_ns == pytest.approx(100.9 * MS)
    assert s.max_ns == 101 * MS


def test_the_intervals_rest_on_the_ten_time_slices_that_hold_commits():
    window = 1 * S
    everywhere = _lane(0, *_every(1000, window))
    s = concurrency.summarize((everywhere,), window, 1)
    assert concurrency.TIME_SLICES == 10
    assert s.p50_interval.blocks == 10 and s.p50_interval.bounds is not None
    assert s.p99_interval.blocks == 10
    # commits in the first half of the window only: five slices hold them
    first_half = _lane(0, *_every(1000, window // 2))
    assert concurrency.summarize((first_half,), window, 1).p50_interval.blocks == 5


def test_a_slice_with_one_commit_is_a_slice():
    window = 1 * S
    starts, lats = _every(500, window // 2)
    lane = _lane(0, [*starts, 950 * MS], [*lats, 100_000])  # one commit in the last slice
    s = concurrency.summarize((lane,), window, 1)
    assert s.commits == 501 and s.p50_interval.blocks == 6


def test_one_commit_has_its_latency_as_every_percentile():
    s = concurrency.summarize((_lane(0, [10 * MS], [7 * MS]),), 1 * S, 1)
    assert s.p50_interval.estimate_ns == 7 * MS and s.p50_interval.reason != "no commits"
    assert s.max_ns == 7 * MS and s.p999_ns == 7 * MS


def test_the_lock_wait_share_busy_errors_and_abandoned_commits_add_up_over_writers():
    w0 = _lane(0, [0, 100 * MS], [300 * MS, 100 * MS], [100 * MS, 0], busy_errors=2)
    w1 = _lane(
        1,
        [50 * MS],
        [600 * MS],
        [150 * MS],
        busy_errors=3,
        abandoned=1,
        abandoned_start_ns=700 * MS,
        abandoned_wait_ns=400 * MS,
    )
    s = concurrency.summarize((w0, w1), 1 * S, 1)
    assert s.lock_wait_share == 0.25  # 250 ms of 1,000 ms of commits
    assert s.busy_errors == 5 and s.abandoned == 1


def test_a_point_whose_writers_made_no_commit_is_all_zero_with_no_interval():
    s = concurrency.summarize((_lane(0, [], []), _lane(1, [], [])), 1 * S, 4)
    none = Interval(0.0, None, None, None, 0.0, 0, "block-jackknife", "no commits")
    assert s.p50_interval == none and s.p99_interval == none
    assert s.commits == 0 and s.steps == 0
    assert s.commits_per_s == 0.0 and s.steps_per_s == 0.0
    assert s.p999_ns == 0.0 and s.max_ns == 0.0 and s.lock_wait_share == 0.0
    assert s.writer_commits_per_s == (0.0, 0.0) and s.writer_longest_ns == (0.0, 0.0)
    assert s.starved == () and s.fairness == 1.0


def test_an_abandoned_wait_is_a_commit_in_progress_and_the_writers_longest():
    window = 1 * S
    # writer 0 never got the lock: its one wait began at 600 ms and lasted 500 ms
    stuck = _lane(0, [], [], abandoned=1, abandoned_start_ns=600 * MS, abandoned_wait_ns=500 * MS)
    ages = concurrency.oldest_wait((stuck,), window)
    assert ages[599] == 0 and ages[600] == 0 and ages[601] == 1 * MS and ages[999] == 399 * MS
    # writer 1 committed twice, then abandoned a wait from 800 ms on
    late = _lane(
        1,
        [0, 100 * MS],
        [10 * MS, 20 * MS],
        abandoned=1,
        abandoned_start_ns=800 * MS,
        abandoned_wait_ns=300 * MS,
    )
    ages = concurrency.oldest_wait((late,), window)
    assert ages[5] == 5 * MS and ages[110] == 10 * MS and ages[500] == 0
    assert ages[900] == 100 * MS
    s = concurrency.summarize((stuck, late), window, 1)
    assert s.writer_longest_ns == (500.0 * MS, 300.0 * MS)
    assert s.oldest_wait_max_ns == 399 * MS


def test_the_oldest_wait_is_whole_nanoseconds_over_every_commit_of_every_writer():
    # writer 0 made no commit; writer 1 two, from 100 to 150 ms and from 300 to 400 ms
    lanes = (_lane(0, [], []), _lane(1, [100 * MS, 300 * MS], [50 * MS, 100 * MS]))
    ages = concurrency.oldest_wait(lanes, 1 * S)
    assert np.issubdtype(ages.dtype, np.integer)
    assert ages[120] == 20 * MS and ages[150] == 0
    assert ages[350] == 50 * MS and ages[399] == 99 * MS and ages[400] == 0


def test_the_oldest_wait_p99_is_over_the_window_s_milliseconds():
    # one commit open the whole window: the oldest wait at instant i ms is i ms
    s = concurrency.summarize((_lane(0, [0], [1 * S]),), 1 * S, 1)
    assert s.oldest_wait_max_ns == 999 * MS
    assert s.oldest_wait_p99_ns == pytest.approx(989.01 * MS)  # 0.99 x 999 ms, linear


def test_of_two_writers_the_one_with_few_commits_is_starved():
    busy = _lane(0, *_every(100, 1 * S))
    slow = _lane(1, [0], [1 * MS])
    assert concurrency.summarize((busy, slow), 1 * S, 1).starved == (1,)


def test_a_writer_at_exactly_a_quarter_of_an_equal_share_is_not_starved():
    # rates 7/s and 1/s: an equal share is 4/s, a quarter of it exactly 1/s
    seven = _lane(0, *_every(7, 1 * S))
    one = _lane(1, [0], [1 * MS])
    s = concurrency.summarize((seven, one), 1 * S, 1)
    assert s.writer_commits_per_s == (7.0, 1.0)
    assert concurrency.STARVED_SHARE * sum(s.writer_commits_per_s) / 2 == 1.0
    assert s.starved == ()


def test_a_commit_of_exactly_a_quarter_of_the_window_does_not_starve_its_writer():
    window = 1 * S
    assert concurrency.STARVED_WAIT_SHARE * window == 250 * MS
    w0 = _lane(0, [0, 300 * MS, 500 * MS, 700 * MS], [250 * MS, MS, MS, MS])
    w1 = _lane(1, [0, 300 * MS, 500 * MS, 700 * MS], [MS, MS, MS, MS])
    s = concurrency.summarize((w0, w1), window, 1)
    assert s.writer_longest_ns[0] == 250 * MS and s.starved == ()


def test_jain_index_of_large_integer_shares_does_not_overflow():
    # shares of 3e9 and 1e9 (say bytes written): (4e9)^2 / (2 x 1e19) = 0.8
    assert concurrency.jain_index([3_000_000_000, 1_000_000_000]) == pytest.approx(0.8)
