"""The gates' decisions and words, line by line: ``--max-p99`` in its default and strict
modes on single-writer results (an interval straddling the limit, a p99 without an
interval judged by its order-statistic upper bound, what would settle a "cannot tell"),
on concurrent-writers points (their p99 over commits, the oldest commit in progress and
the starved writers, ``--config``), runs and points that stayed disturbed
(``--accept-disturbed``), and the bound one sync per commit puts on the writers' commits/s
(:mod:`fsyncbench.judge.writers_rules`).

Every result and point here is written by hand (no measurement): each estimate, interval
bound and limit is a number chosen here, often exactly on a boundary the gates decide at,
and each expected line is the full text a user reads."""

from __future__ import annotations

import dataclasses

import factories
import pytest
from factories import host

from fsyncbench import api
from fsyncbench.errors import FsyncbenchError
from fsyncbench.judge import gates, writers_rules
from fsyncbench.judge.gates import GateFailure
from fsyncbench.model import (
    INFO,
    MEASURED,
    RISK,
    Finding,
    Interval,
    Pragmas,
    RoundActivity,
    WritersPoint,
    WritersSummary,
)

US = 1_000
MS = 1_000_000
S = 1_000_000_000
WAL_FULL = Pragmas("WAL", "FULL")
WAL_NORMAL = Pragmas("WAL", "NORMAL")
MORE_SAMPLES = (
    "more samples would settle it (a longer --run-budget-seconds, or fewer configurations)"
)
STRADDLE_TAIL = (
    "on the estimate, and another run of the same machine may land on the other side "
    "(--max-p99-strict passes only where p99 is shown to be below)"
)


def _flush(p99_ns, ci=None, reason=None, samples=(), round_p99=()):
    """write+fdatasync with p99 ``p99_ns``, its interval ``ci`` (or none, ``reason`` saying
    why), n=1000, and optionally raw samples and the rounds' own p99s."""
    r = factories.flush("fdatasync", p99_ns / 1.5)
    low, high = ci if ci is not None else (None, None)
    iv = Interval(p99_ns, low, high, None, 0.0, 10, "block-jackknife", reason)
    return dataclasses.replace(
        r,
        samples_ns=tuple(samples),
        summary=dataclasses.replace(
            r.summary,
            p99_ns=p99_ns,
            p99_ci_ns=ci,
            p99_interval=iv,
            round_p99_ns=tuple(round_p99),
        ),
    )


def _wsummary(
    p99_ns,
    ci=None,
    reason="n=80 too small (needs 1000)",
    commits=400,
    commits_per_s=400.0,
    oldest_wait_p99_ns=1 * MS,
    max_ns=4 * MS,
    starved=(),
):
    """A concurrent-writers summary: p99 over its ``commits`` and its interval (or none),
    the oldest commit in progress over time, the starved writers."""
    low, high = ci if ci is not None else (None, None)
    p99 = Interval(p99_ns, low, high, None, 0.0, 8, "block-jackknife", None if ci else reason)
    p50 = Interval(p99_ns / 2, None, None, None, 0.0, 8, "block-jackknife", reason)
    return WritersSummary(
        commits=commits,
        steps=commits,
        window_ns=S,
        commits_per_s=commits_per_s,
        steps_per_s=commits_per_s,
        p50_interval=p50,
        p99_interval=p99,
        p999_ns=max_ns,
        max_ns=max_ns,
        lock_wait_share=0.5,
        busy_errors=0,
        abandoned=0,
        writer_commits_per_s=(commits_per_s / 4,) * 4,
        writer_longest_ns=(max_ns,) * 4,
        fairness=1.0,
        oldest_wait_p99_ns=oldest_wait_p99_ns,
        oldest_wait_max_ns=max_ns,
        starved=starved,
    )


def _point(summary, writers=4, pragmas=WAL_FULL, primitive="fdatasync", activity=None):
    return WritersPoint(
        pragmas, pragmas, writers, "immediate", 5000, 1, 512, S, primitive, (), summary, activity
    )


def _report(*results, activity=(), writers=()):
    rep = api.build_report("run", host(), results, ("fsyncbench", "run", "/data"))
    return dataclasses.replace(rep, activity=tuple(activity), writers=tuple(writers))


#: a wal/full result far below every limit here: the writers' points are what is judged
QUIET_FULL = factories.commit("WAL", "FULL", 100 * US)  # p99 150 us [135 us, 165 us]
QUIET_NORMAL = factories.commit("WAL", "NORMAL", 100 * US)
#: one of two rounds stayed disturbed by another process's CPU use
BUSY_ROUND = RoundActivity(round=1, cpu_other_pct=74.0, cpu_wait_pct=12.0, disturbed=("cpu",))
DISTURBED_RUN = (BUSY_ROUND, RoundActivity(round=2))
DISTURBED_LINE = (
    "--max-p99 1 ms: cannot tell: 1 of 2 rounds stayed disturbed (fsyncbench waited for a "
    "CPU 12.0 % of the time (other processes used 74 % of the CPUs)): the p99 may be the "
    "other processes', not the storage's; run again on a quiet machine, or give "
    "--accept-disturbed"
)


# ------------------------------------------------------------------ parsing


def test_a_bad_duration_without_an_option_name_is_called_a_duration():
    with pytest.raises(FsyncbenchError) as err:
        gates.parse_duration("fast")
    assert str(err.value) == (
        "invalid duration 'fast': give a number with a unit, e.g. 10ms, 500us, 2s"
    )


# ------------------------------------------------------------------ --max-p99, default mode


def test_a_limit_on_the_interval_s_lower_bound_fails_and_is_named_as_straddling():
    """p99 3 ms [2.5 ms, 3.5 ms]: the low bound itself is inside what may land either side."""
    rep = _report(_flush(3 * MS, (2.5 * MS, 3.5 * MS)))
    shown = "write+fdatasync: p99 3 ms (95% CI [2.5 ms, 3.5 ms], n=1000)"
    assert gates.review(rep, max_p99_ns=2_500_000) == (
        [GateFailure("write+fdatasync", "max-p99", f"{shown} is above --max-p99 2.5 ms")],
        [f"{shown} straddles --max-p99 2.5 ms: it fails {STRADDLE_TAIL}"],
        [],
    )


def test_a_limit_on_the_estimate_passes_it_and_one_on_the_upper_bound_is_no_straddle():
    rep = _report(_flush(3 * MS, (2.5 * MS, 3.5 * MS)))
    shown = "write+fdatasync: p99 3 ms (95% CI [2.5 ms, 3.5 ms], n=1000)"
    # at the estimate: not above it, so it passes there (and may not next time)
    assert gates.review(rep, max_p99_ns=3 * MS) == (
        [],
        [f"{shown} straddles --max-p99 3 ms: it passes {STRADDLE_TAIL}"],
        [],
    )
    # at the upper bound: the whole interval is at or below the limit, in both modes
    assert gates.review(rep, max_p99_ns=3_500_000) == ([], [], [])
    assert gates.review(rep, max_p99_ns=3_500_000, max_p99_strict=True) == ([], [], [])


# ------------------------------------------------------------------ --max-p99-strict


def test_strict_mode_fails_an_interval_reaching_above_the_limit_with_its_gate_named():
    rep = _report(_flush(3 * MS, (2.5 * MS, 3.5 * MS)))
    assert gates.review(rep, max_p99_ns=3_400_000, max_p99_strict=True) == (
        [
            GateFailure(
                "write+fdatasync",
                "max-p99",
                "write+fdatasync: p99 3 ms (95% CI [2.5 ms, 3.5 ms], n=1000) is not shown to be "
                "below --max-p99 3.4 ms (the interval's upper bound is above it; "
                "--max-p99-strict)",
            )
        ],
        [],
        [],
    )


def test_strict_mode_fails_a_p99_without_an_interval_above_the_limit_with_its_gate_named():
    rep = _report(_flush(3 * MS, reason="n=300 too small (needs 1000)"))
    assert gates.review(rep, max_p99_ns=2 * MS, max_p99_strict=True) == (
        [
            GateFailure(
                "write+fdatasync",
                "max-p99",
                "write+fdatasync: p99 3 ms (95% CI none (n too small), n=1000) is above "
                "--max-p99 2 ms (no interval; --max-p99-strict)",
            )
        ],
        [],
        [],
    )


#: 1 us .. 1 ms: the order-statistic upper bound of their p99 is the 996th, 996 us
#: (quantile_ci_ranks(1000, 0.99, 0.90) == (984, 995), 0-based)
SPREAD = [i * US for i in range(1, 1001)]


def test_strict_mode_passes_a_p99_without_an_interval_whose_upper_bound_is_at_the_limit():
    rep = _report(_flush(990 * US, reason="n=300 too small (needs 1000)", samples=SPREAD))
    assert gates.review(rep, max_p99_ns=996 * US, max_p99_strict=True) == (
        [],
        [
            "write+fdatasync: p99 990 us (95% CI none (n too small), n=1000) has no interval, "
            "but its order-statistic upper bound 996 us (95 %, one-sided, at least the slowest "
            "round's own p99) is below --max-p99 996 us: passes"
        ],
        [],
    )


def test_strict_mode_neither_fails_nor_passes_a_p99_at_the_limit_whose_bound_is_above():
    """p99 990 us at a limit of 990 us is not above it, so it does not fail; its upper bound
    (996 us) is above, so it cannot be shown below either."""
    rep = _report(_flush(990 * US, reason="n=300 too small (needs 1000)", samples=SPREAD))
    assert gates.review(rep, max_p99_ns=990 * US, max_p99_strict=True) == (
        [],
        [],
        [
            "write+fdatasync: p99 990 us (95% CI none (n too small), n=1000) has no interval, "
            f"so it cannot be shown below --max-p99 990 us: {MORE_SAMPLES}"
        ],
    )


def test_strict_mode_raises_the_upper_bound_to_the_slowest_round_s_own_p99():
    """The samples' bound (996 us) is below 1 ms, but one round's own p99 was 2 ms."""
    r = _flush(
        990 * US,
        reason="n=300 too small (needs 1000)",
        samples=SPREAD,
        round_p99=(900 * US, 2 * MS),
    )
    assert gates.review(_report(r), max_p99_ns=1 * MS, max_p99_strict=True) == (
        [],
        [],
        [
            "write+fdatasync: p99 990 us (95% CI none (n too small), n=1000) has no interval, "
            f"so it cannot be shown below --max-p99 1 ms: {MORE_SAMPLES}"
        ],
    )


def test_strict_mode_says_a_quieter_machine_settles_a_p99_whose_slices_disagree():
    rep = _report(_flush(3 * MS, reason="the slices disagree too much"))
    assert gates.review(rep, max_p99_ns=10 * MS, max_p99_strict=True)[2] == [
        "write+fdatasync: p99 3 ms (95% CI none (slices disagree), n=1000) has no interval, "
        "so it cannot be shown below --max-p99 10 ms: its slices disagree too much, so more "
        "samples alone may not settle it; a quieter machine (nothing else writing to the "
        "disk) would"
    ]


# ------------------------------------------------------------------ check()


def test_check_passes_strict_mode_and_accept_disturbed_on_to_review():
    straddling = _report(_flush(3 * MS, (2.5 * MS, 3.5 * MS)))
    assert gates.check(straddling, max_p99_ns=3_400_000) == []
    assert [f.subject for f in gates.check(straddling, 3_400_000, max_p99_strict=True)] == [
        "write+fdatasync"
    ]
    disturbed = _report(_flush(3 * MS, (2.5 * MS, 3.5 * MS)), activity=DISTURBED_RUN)
    assert gates.check(disturbed, max_p99_ns=1 * MS) == []  # cannot tell: no failure
    above = GateFailure(
        "write+fdatasync",
        "max-p99",
        "write+fdatasync: p99 3 ms (95% CI [2.5 ms, 3.5 ms], n=1000) is above --max-p99 1 ms",
    )
    assert gates.check(disturbed, max_p99_ns=1 * MS, accept_disturbed=True) == [above]


# ------------------------------------------------------------------ disturbed runs


def test_a_run_that_stayed_disturbed_cannot_tell_max_p99_and_says_why_once():
    rep = _report(
        _flush(3 * MS, (2.5 * MS, 3.5 * MS)),
        QUIET_FULL,
        activity=DISTURBED_RUN,
        writers=[_point(_wsummary(5 * MS, (4 * MS, 6 * MS), oldest_wait_p99_ns=9 * MS))],
    )
    assert gates.review(rep, max_p99_ns=1 * MS) == ([], [], [DISTURBED_LINE])
    # --fail-on alone is not about the tail: nothing to say
    assert gates.review(rep, fail_on=("volatile_cache",)) == ([], [], [])


def test_accept_disturbed_gates_a_disturbed_run_s_results_and_points():
    rep = _report(
        _flush(3 * MS, (2.5 * MS, 3.5 * MS)),
        QUIET_FULL,
        activity=DISTURBED_RUN,
        writers=[_point(_wsummary(5 * MS, (4 * MS, 6 * MS), oldest_wait_p99_ns=900 * US))],
    )
    failures, notes, untold = gates.review(rep, max_p99_ns=1 * MS, accept_disturbed=True)
    assert [f.message for f in failures] == [
        "write+fdatasync: p99 3 ms (95% CI [2.5 ms, 3.5 ms], n=1000) is above --max-p99 1 ms",
        "wal/full x4: p99 5 ms (95% CI [4 ms, 6 ms], n=400) is above --max-p99 1 ms",
    ]
    assert notes == [] and untold == []
    # a quiet run needs no acceptance
    quiet = dataclasses.replace(rep, activity=(RoundActivity(round=1),))
    assert gates.review(quiet, max_p99_ns=1 * MS) == (failures, [], [])


# ------------------------------------------------------------------ concurrent writers


def _writers_report(*points, results=(QUIET_FULL,), activity=()):
    return _report(*results, activity=activity, writers=points)


def test_each_writers_point_is_gated_by_its_p99_over_commits_like_a_result():
    rep = _writers_report(
        _point(_wsummary(12 * MS, (11 * MS, 13 * MS)), writers=1),
        _point(_wsummary(9 * MS, (8 * MS, 11 * MS)), writers=2),
        _point(_wsummary(5 * MS), writers=4),  # no interval: the estimate is below
    )
    assert gates.review(rep, max_p99_ns=10 * MS) == (
        [
            GateFailure(
                "wal/full x1",
                "max-p99",
                "wal/full x1: p99 12 ms (95% CI [11 ms, 13 ms], n=400) is above --max-p99 10 ms",
            )
        ],
        [
            "wal/full x2: p99 9 ms (95% CI [8 ms, 11 ms], n=400) straddles --max-p99 10 ms: "
            f"it passes {STRADDLE_TAIL}"
        ],
        [],
    )


def test_strict_mode_judges_each_writers_point_s_interval_and_cannot_tell_without_one():
    """A point has no order-statistic bound to fall back on (its commits overlap in time):
    without an interval, strict mode cannot tell even far below the limit."""
    rep = _writers_report(
        _point(_wsummary(12 * MS, (11 * MS, 13 * MS)), writers=1),
        _point(_wsummary(9 * MS, (8 * MS, 11 * MS)), writers=2),
        _point(_wsummary(5 * MS), writers=4),
    )
    assert gates.review(rep, max_p99_ns=10 * MS, max_p99_strict=True) == (
        [
            GateFailure(
                "wal/full x1",
                "max-p99",
                "wal/full x1: p99 12 ms (95% CI [11 ms, 13 ms], n=400) is not shown to be below "
                "--max-p99 10 ms (the interval's upper bound is above it; --max-p99-strict)",
            ),
            GateFailure(
                "wal/full x2",
                "max-p99",
                "wal/full x2: p99 9 ms (95% CI [8 ms, 11 ms], n=400) is not shown to be below "
                "--max-p99 10 ms (the interval's upper bound is above it; --max-p99-strict)",
            ),
        ],
        [],
        [
            "wal/full x4: p99 5 ms (95% CI none (n too small), n=400) has no interval, so it "
            f"cannot be shown below --max-p99 10 ms: {MORE_SAMPLES}"
        ],
    )


def test_config_picks_the_writers_points_of_the_configurations_named_and_no_others():
    normal = _point(_wsummary(12 * MS, (11 * MS, 13 * MS)), writers=2, pragmas=WAL_NORMAL)
    full = _point(_wsummary(12 * MS, (11 * MS, 13 * MS)), writers=2)
    rep = _writers_report(normal, full, results=(QUIET_FULL, QUIET_NORMAL))
    assert [f.subject for f in gates.check(rep, 10 * MS)] == ["wal/normal x2", "wal/full x2"]
    assert [f.subject for f in gates.check(rep, 10 * MS, names=("wal/full",))] == ["wal/full x2"]
    assert [f.subject for f in gates.check(rep, 10 * MS, names=("wal/normal",))] == [
        "wal/normal x2"
    ]
    # names are matched as select() matches results: whatever their case (a point that
    # fails was skipped by --config WAL/FULL, and the gate passed)
    assert [f.subject for f in gates.check(rep, 10 * MS, names=("WAL/Full",))] == ["wal/full x2"]


def test_a_disturbed_writers_point_cannot_tell_and_the_points_after_it_are_still_gated():
    busy = RoundActivity(round=1, elapsed_ns=S, cpu_other_pct=74.0, disturbed=("cpu",))
    rep = _writers_report(
        _point(_wsummary(12 * MS, (11 * MS, 13 * MS)), writers=1, activity=busy),
        _point(_wsummary(12 * MS, (11 * MS, 13 * MS)), writers=2, activity=RoundActivity(1)),
        _point(_wsummary(12 * MS, (11 * MS, 13 * MS)), writers=4),  # activity not read
    )
    failures, notes, untold = gates.review(rep, max_p99_ns=10 * MS)
    assert [f.subject for f in failures] == ["wal/full x2", "wal/full x4"]
    assert notes == []
    assert untold == [
        "wal/full x1: --max-p99 10 ms: cannot tell: the machine was disturbed while it ran "
        "(other processes used 74 % of the CPUs); run again on a quiet machine, or give "
        "--accept-disturbed"
    ]
    failures, _notes, untold = gates.review(rep, max_p99_ns=10 * MS, accept_disturbed=True)
    assert [f.subject for f in failures] == ["wal/full x1", "wal/full x2", "wal/full x4"]
    assert untold == []


@pytest.mark.parametrize(
    ("oldest_wait_p99_ns", "starved", "tail"),
    [
        (10 * MS, (), None),  # at the limit is not longer than it
        (12 * MS, (), ""),
        (12 * MS, (3,), ": writer 3 starved"),
        (12 * MS, (1, 3), ": writers 1, 3 starved"),
    ],
)
def test_a_point_whose_oldest_commit_waited_past_the_limit_is_noted_with_its_starved_writers(
    oldest_wait_p99_ns, starved, tail
):
    point = _point(
        _wsummary(5 * MS, (4 * MS, 6 * MS), oldest_wait_p99_ns=oldest_wait_p99_ns, starved=starved)
    )
    failures, notes, untold = gates.review(_writers_report(point), max_p99_ns=10 * MS)
    assert failures == [] and untold == []
    assert notes == (
        []
        if tail is None
        else [
            "wal/full x4: over time a commit in progress had waited longer than --max-p99 10 ms "
            "1 % of the time or more (oldest commit, p99 over time 12 ms; longest 4 ms)" + tail
        ]
    )


# ------------------------------------------------------------------ the writers' sync bound


def _zero_p50_row():
    """write+fdatasync whose p50 came out as 0 ns (a clock too coarse for it)."""
    r = factories.flush("fdatasync", 100 * US)
    return dataclasses.replace(r, summary=dataclasses.replace(r.summary, p50_ns=0.0))


def _rate_point(commits_per_s, primitive="fdatasync", pragmas=WAL_FULL):
    return _point(
        _wsummary(5 * MS, commits_per_s=commits_per_s), pragmas=pragmas, primitive=primitive
    )


def test_the_bound_is_one_commit_per_sync_of_the_primitive_s_p50():
    rows = [factories.flush("fsync", 80 * US), factories.flush("fdatasync", 100 * US)]
    assert writers_rules.bound_commits_per_s(_rate_point(900.0), rows) == 10_000.0  # 1 s/100 us
    # a 1 ns sync still bounds (at a billion commits/s)
    assert (
        writers_rules.bound_commits_per_s(_rate_point(900.0), [factories.flush("fdatasync", 1)])
        == 1e9
    )
    # macOS WAL without fullfsync: fsync at each commit, F_FULLFSYNC at checkpoints
    mac = _rate_point(900.0, primitive="fsync (F_FULLFSYNC at checkpoints)")
    assert writers_rules.bound_commits_per_s(mac, rows) == 12_500.0


@pytest.mark.parametrize(
    ("primitive", "rows"),
    [
        ("fdatasync", [factories.flush("fsync", 80 * US)]),  # its row was not timed
        ("fdatasync", [_zero_p50_row()]),  # a p50 of 0 ns bounds nothing
        ("fdatasync (checkpoints only)", [factories.flush("fdatasync", 100 * US)]),  # NORMAL
        ("none", [factories.flush("fdatasync", 100 * US)]),  # synchronous=OFF
    ],
)
def test_no_bound_without_a_per_commit_sync_or_its_timed_row(primitive, rows):
    assert writers_rules.bound_commits_per_s(_rate_point(900.0, primitive), rows) is None


def test_a_point_whose_primitive_was_not_timed_says_the_bound_is_unknown():
    f = writers_rules.sync_bound(_rate_point(900.25), [factories.flush("fsync", 80 * US)])
    assert f == Finding(
        "writers-bound-unknown",
        INFO,
        "wal/full x4",
        "wal/full x4: no fdatasync row was timed (--no-primitives), so the bound one sync per "
        "commit puts on commits/s is not known.",
        "Run without --no-primitives to check the commits against their sync.",
        {"writers": 4, "commits_per_s": 900.2},
        writers_rules.SOURCE,
    )


def test_a_point_within_its_bound_says_so_with_the_bound_and_the_sync():
    # 1 s / 996.9 us = 1003.11/s
    f = writers_rules.sync_bound(_rate_point(900.25), [factories.flush("fdatasync", 996_900)])
    assert f == Finding(
        "writers-within-sync-bound",
        INFO,
        "wal/full x4",
        "wal/full x4: 900 commits/s, within the 1,003/s one fdatasync of p50 997 us per commit "
        "allows.",
        "",
        {
            "writers": 4,
            "commits_per_s": 900.2,
            "sync_p50_ns": 996_900,
            "bound_commits_per_s": 1003.1,
        },
        writers_rules.SOURCE,
        MEASURED,
    )


def test_a_point_beyond_its_bound_is_a_risk_saying_how_far_beyond():
    f = writers_rules.sync_bound(_rate_point(2006.22), [factories.flush("fdatasync", 996_900)])
    assert f == Finding(
        "writers-beyond-sync-bound",
        RISK,
        "wal/full x4",
        "wal/full x4: 2,006 commits/s, 2x the 1,003/s that one fdatasync of p50 997 us per "
        "commit allows: these commits did not wait for the sync the primitive waited for.",
        "Trace the commits' syncs (fsyncbench audit) and find the layer that skips them.",
        {
            "writers": 4,
            "commits_per_s": 2006.2,
            "sync_p50_ns": 996_900,
            "bound_commits_per_s": 1003.1,
        },
        writers_rules.SOURCE,
        MEASURED,
    )


def test_a_sync_faster_than_any_block_device_is_a_risk_whatever_the_rate():
    f = writers_rules.sync_bound(_rate_point(40_000.0), [factories.flush("fdatasync", 9_990)])
    assert f == Finding(
        "writers-sync-reaches-no-device",
        RISK,
        "wal/full x4",
        "wal/full x4: 40,000 commits/s, bounded by no sync: write+fdatasync took p50 9.99 us, "
        "less than the 10 us any flush that reaches a block device takes; these commits wait "
        "for the CPU and the lock, not for the disk.",
        "Find the layer that acknowledges syncs from memory (tmpfs, eatmydata, a no-op sync) "
        "before reading these rates as durable commits.",
        {
            "writers": 4,
            "commits_per_s": 40_000.0,
            "sync_p50_ns": 9_990,
            "bound_commits_per_s": 100_100.1,
        },
        writers_rules.SOURCE,
        MEASURED,
    )


@pytest.mark.parametrize(
    ("rate", "code"),
    [
        (15_000.0, "writers-within-sync-bound"),  # exactly 1.5 x 10,000/s: not beyond
        (15_000.00001, "writers-beyond-sync-bound"),  # the least bit beyond
    ],
)
def test_the_slack_is_exactly_one_and_a_half_times_the_bound(rate, code):
    f = writers_rules.sync_bound(_rate_point(rate), [factories.flush("fdatasync", 100 * US)])
    assert f is not None and f.code == code


def test_a_macos_point_finds_its_per_commit_sync_s_row_by_the_primitive_s_first_word():
    mac = _rate_point(900.0, primitive="fsync (F_FULLFSYNC at checkpoints)")
    f = writers_rules.sync_bound(mac, [factories.flush("fsync", 100 * US)])
    assert f is not None and f.code == "writers-within-sync-bound"
    assert f.evidence["bound_commits_per_s"] == 10_000.0
