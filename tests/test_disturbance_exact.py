"""Disturbed rounds, figure by figure: what :func:`disturbance.round_activity` records from
two readings of the machine (others' CPU share, steal, pressure, the run-queue wait, others'
flushes and writes, the busiest processes), the reasons it gives for each figure it cannot
measure, the concurrent writers' rule, and the exact words the screen says about a disturbed
run (who flushed, who used the CPU, who took the CPUs' time).

Fast: recorded-style figures only, every expected number worked out by hand in a comment.
"""

from __future__ import annotations

import dataclasses

import factories
import pytest

from fsyncbench.host import _activity
from fsyncbench.measure import disturbance
from fsyncbench.model import FlushDelta, ProcessActivity, RoundActivity

MiB = 1 << 20


def _snap(t_ns, cpu, *, count=2, load=0.5, psi=None, procs=None, kernel=0.0, reasons=()):
    return _activity.ActivitySnapshot(
        t_ns, cpu, count, load, psi or {}, procs or {}, tuple(reasons), kernel
    )


def _p(name, cpu_s, write_bytes):
    return _activity.ProcessSample(name, cpu_s, write_bytes)


# /proc/stat figures (s, summed over all CPUs), Linux: "user" already includes "guest"
LINUX0 = {
    "user": 100.0,
    "nice": 1.0,
    "system": 50.0,
    "idle": 800.0,
    "iowait": 10.0,
    "irq": 2.0,
    "softirq": 5.0,
    "steal": 3.0,
    "guest": 10.0,
    "guest_nice": 2.0,
}
# 2 s on 2 CPUs: 4 s of CPU time in all (guest and guest_nice are inside user and nice)
LINUX_DELTA = {
    "user": 1.3,
    "nice": 0.2769,
    "system": 0.5,
    "idle": 1.5,
    "iowait": 0.2,
    "irq": 0.1,
    "softirq": 0.05,
    "steal": 0.0731,
    "guest": 0.3,
    "guest_nice": 0.1,
}


def _plus(cpu, delta):
    return {k: v + delta.get(k, 0.0) for k, v in cpu.items()}


def _linux_round() -> RoundActivity:
    before = _snap(
        10_000_000_000,
        LINUX0,
        load=0.7,
        psi={"cpu_some": 1_000_000, "io_some": 5_000_000},
        kernel=3.0,
        procs={
            7: _p("fio", 1.0, 10 * MiB),
            9: _p("sh", 5.0, 4 * MiB),  # its pid is reused by postgres below
            10: _p("sleep", 0.01, 0),
            11: _p("cat", 0.02, None),
        },
    )
    after = _snap(
        12_000_000_000,
        _plus(LINUX0, LINUX_DELTA),
        load=1.25,
        psi={"cpu_some": 1_002_500, "io_some": 5_007_500},
        kernel=3.2,
        procs={
            1: _p("fsyncbench", 9.0, 900 * MiB),  # fsyncbench's own: never counted
            7: _p("fio", 1.2345, 90 * MiB),
            8: _p("python3", 0.05, None),  # started during the round
            9: _p("postgres", 0.5, 2 * MiB),
            10: _p("sleep", 0.01, 0),
            11: _p("cat", 0.02, None),
        },
    )
    results = [
        dataclasses.replace(
            factories.flush("fdatasync", 100_000),
            elapsed_ns=1_500_000_000,
            device_flushes=(FlushDelta("vda", 3_000, 30),),
        ),
        dataclasses.replace(
            factories.write(1_000),
            elapsed_ns=500_000_000,
            device_flushes=(FlushDelta("vda", 40, 1),),
        ),
    ]
    quiet = [disturbance.QuietWindow(500_500_001, (FlushDelta("vda", 60, 2),))]
    timed = [(500_000_000, (FlushDelta("vda", 500, 5),))]
    return disturbance.round_activity(
        3,
        before,
        after,
        results,
        quiet,
        own_cpu_s=0.9,
        own_pids=[1],
        device="vda",
        waited=disturbance.RunQueueWait(2_000_000_000, 24_690_000),
        timed=timed,
    )


def test_a_linux_round_is_recorded_figure_by_figure():
    a = _linux_round()
    postgres = ProcessActivity(9, "postgres", 0.5, 2 * MiB)  # a new process on a reused pid
    fio = ProcessActivity(7, "fio", 0.234, 80 * MiB)  # 0.2345 s of CPU, to the ms
    python3 = ProcessActivity(8, "python3", 0.05, None)  # exactly MIN_PROCESS_CPU_S
    assert a == RoundActivity(
        round=3,
        attempt=1,
        kept=True,
        elapsed_ns=2_000_000_000,
        cpu_count=2,
        load_avg_1m=1.25,  # the reading at the round's end
        # busy = 4 - idle/iowait 1.7 - steal 0.0731 - irq/softirq 0.15 - kernel threads 0.2
        #        - own 0.9 = 0.9769 s of 4 s
        cpu_other_pct=24.42,
        cpu_steal_pct=1.83,  # 0.0731 of 4 s
        cpu_pressure_pct=0.12,  # 2,500 us in 2 s: 0.125 %, half to even
        cpu_wait_pct=1.23,  # 24.69 ms of 2 s
        io_pressure_pct=0.38,  # 7,500 us in 2 s: 0.375 %
        device="vda",
        device_flushes=3_540,  # 3,000 + 40 in the results, 500 in the writers' window
        # 100 flushes in 1.000500001 s without a sync, times 2.5 s of timed windows
        other_flushes=249.9,
        quiet_s=1.001,
        other_writes_bytes=82 * MiB,  # fio 80 MiB + postgres 2 MiB; sleep 0, cat unknown
        processes=(postgres, fio, python3),  # by CPU, then any heavier writer
        not_measured=(),
        disturbed=("disk",),  # 249.9 others' of 3,540: 7 %
    )


def test_a_round_without_steal_pressure_counters_or_schedstat_says_why_each_is_missing():
    """A macOS-like reading: no iowait, irq, softirq or steal states, no pressure files,
    no flush counters, no run-queue wait; the CPU count read at the start only."""
    mac0 = {"user": 10.0, "nice": 0.0, "system": 5.0, "idle": 100.0}
    # 0.8 s of CPU time in all (a short round): 0.3 user + 0.1 system busy, 0.1 of it own
    mac1 = {"user": 10.3, "nice": 0.0, "system": 5.1, "idle": 100.4}
    a = disturbance.round_activity(
        2,
        _snap(5_000_000_000, mac0, count=8, reasons=("pressure: no /proc/pressure",)),
        _snap(5_400_000_000, mac1, count=None, load=None, reasons=("pressure: no /proc/pressure",)),
        (),
        (),
        own_cpu_s=0.1,
        own_pids=[],
        device=None,
    )
    assert a == RoundActivity(
        round=2,
        attempt=1,
        elapsed_ns=400_000_000,
        cpu_count=8,
        load_avg_1m=None,
        cpu_other_pct=37.5,  # 0.3 of 0.8 s
        cpu_steal_pct=None,
        cpu_pressure_pct=None,
        io_pressure_pct=None,
        cpu_wait_pct=None,
        device=None,
        device_flushes=None,
        other_flushes=None,
        quiet_s=None,
        other_writes_bytes=None,  # no process readable at all
        processes=(),
        not_measured=(
            "pressure: no /proc/pressure",
            "steal: this platform reports no steal time",
            "device flushes: no flush counters on this platform or disk",
            "CPU wait: no /proc/thread-self/schedstat (Linux with CONFIG_SCHED_INFO)",
        ),
        disturbed=(),
    )


def test_a_cpu_state_first_seen_in_the_second_reading_counts_from_zero():
    a = disturbance.round_activity(
        1,
        _snap(0, {"user": 10.0, "idle": 100.0}),
        _snap(1_000_000_000, {"user": 10.5, "idle": 101.0, "steal": 0.5}),
        (),
        (),
        0.0,
        [],
        None,
    )
    assert (a.cpu_other_pct, a.cpu_steal_pct) == (25.0, 25.0)  # 0.5 of 2 s each


def test_no_cpu_figures_when_either_reading_has_none():
    for before, after in (({"user": 1.0, "idle": 2.0}, None), (None, {"user": 1.0, "idle": 2.0})):
        a = disturbance.round_activity(
            1, _snap(0, before), _snap(10**9, after), (), (), 0.0, [], None
        )
        assert (a.cpu_other_pct, a.cpu_steal_pct) == (None, None)
        assert not any(m.startswith("steal") for m in a.not_measured)


def test_pressure_is_read_only_for_the_kinds_both_readings_have():
    a = disturbance.round_activity(
        1,
        _snap(0, None, psi={"io_some": 100}),
        _snap(2_000_000_000, None, psi={"cpu_some": 9_000_000, "io_some": 100}),
        (),
        (),
        0.0,
        [],
        None,
    )
    assert (a.cpu_pressure_pct, a.io_pressure_pct) == (None, 0.0)
    # a short round (1 ms) whose counters did not move: 0 %, not a part of a microsecond
    short = disturbance.round_activity(
        1,
        _snap(0, None, psi={"cpu_some": 5, "io_some": 7}),
        _snap(1_000_000, None, psi={"cpu_some": 5, "io_some": 6}),
        (),
        (),
        0.0,
        [],
        None,
    )
    assert (short.cpu_pressure_pct, short.io_pressure_pct) == (0.0, 0.0)


def test_a_round_of_no_measurable_length_lasts_one_nanosecond():
    a = disturbance.round_activity(1, _snap(7, None), _snap(7, None), (), (), 0.0, [], None)
    assert a.elapsed_ns == 1


def _flush_round(quiet, *, results=None, waited=None) -> RoundActivity:
    if results is None:
        results = [
            dataclasses.replace(
                factories.flush("fdatasync", 100_000),
                elapsed_ns=250_000_000,
                device_flushes=(FlushDelta("vda", 100, 1),),
            )
        ]
    return disturbance.round_activity(
        1, _snap(0, None), _snap(10**9, None), results, quiet, 0.0, [], "vda", waited=waited
    )


def test_others_flushes_are_rounded_to_a_tenth_half_to_even():
    # 9 flushes in 1 s without a sync, times 0.25 s timed: 2.25, recorded 2.2
    a = _flush_round([disturbance.QuietWindow(10**9, (FlushDelta("vda", 9, 0),))])
    assert (a.other_flushes, a.quiet_s, a.device_flushes) == (2.2, 1.0, 100)
    # 11 flushes: 2.75, recorded 2.8
    b = _flush_round([disturbance.QuietWindow(10**9, (FlushDelta("vda", 11, 0),))])
    assert b.other_flushes == 2.8


def test_only_windows_with_a_length_and_the_disks_counter_give_others_rate():
    a = _flush_round(
        [
            disturbance.QuietWindow(10**9, (FlushDelta("vda", 8, 0),)),
            disturbance.QuietWindow(0, (FlushDelta("vda", 50, 0),)),  # no length
            disturbance.QuietWindow(10**9, (FlushDelta("vdb", 70, 0),)),  # another disk
        ]
    )
    assert (a.other_flushes, a.quiet_s) == (2.0, 1.0)  # 8/s x 0.25 s
    # however short, a window that has a length counts
    b = _flush_round([disturbance.QuietWindow(1, (FlushDelta("vda", 0, 0),))])
    assert (b.other_flushes, b.quiet_s) == (0.0, 0.0)
    assert not any(m.startswith("others' flushes") for m in b.not_measured)


def test_no_window_without_a_sync_is_named_in_full():
    a = _flush_round([])
    assert a.other_flushes is None and a.quiet_s is None
    assert a.not_measured == (
        "others' flushes: no window without a sync in this round (no workload with "
        "synchronous=OFF or without a sync primitive)",
        "CPU wait: no /proc/thread-self/schedstat (Linux with CONFIG_SCHED_INFO)",
    )


@pytest.mark.parametrize(
    "deltas",
    [(FlushDelta("vda", None, None),), (FlushDelta("vdb", 100, 1),)],
    ids=["counter-unreadable", "other-disk-only"],
)
def test_a_disk_without_flush_counters_is_named_not_counted_as_zero(deltas):
    results = [dataclasses.replace(factories.flush("fdatasync", 100_000), device_flushes=deltas)]
    a = _flush_round([], results=results)
    assert a.device_flushes is None and a.other_flushes is None
    assert a.not_measured[0] == "device flushes: vda has no flush counters (Linux >= 5.5)"


@pytest.mark.parametrize(
    "waited, pct, missing",
    [
        (disturbance.RunQueueWait(1_000_000_000, None), None, True),
        (disturbance.RunQueueWait(0, 5), None, True),
        (disturbance.RunQueueWait(1, 0), 0.0, False),
        (disturbance.RunQueueWait(1_000_000_000, 12_345_678), 1.23, False),
    ],
)
def test_the_run_queue_wait_is_a_share_of_the_measuring_time(waited, pct, missing):
    a = _flush_round([], waited=waited)
    assert a.cpu_wait_pct == pct
    assert any(
        m.startswith("CPU wait: no /proc/thread-self/schedstat") for m in a.not_measured
    ) is (missing)


def test_the_busiest_are_the_top_three_by_cpu_then_the_top_three_writers():
    after = {
        1: _p("a", 0.9, 0),
        2: _p("b", 0.8, 0),
        3: _p("c", 0.7, 0),
        4: _p("d", 0.0, 2 * MiB),
        5: _p("e", 0.06, 5 * MiB),
        6: _p("f", 0.0, MiB),  # exactly MIN_PROCESS_WRITE_BYTES
        7: _p("g", 0.0, MiB - 1),
        8: _p("h", 0.049, 0),
    }
    a = disturbance.round_activity(
        1, _snap(0, None, procs={}), _snap(10**9, None, procs=after), (), (), 0.0, [], None
    )
    assert [p.name for p in a.processes] == ["a", "b", "c", "e", "d", "f"]
    assert a.other_writes_bytes == 9 * MiB - 1


def test_a_writer_of_any_bytes_ranks_above_those_that_wrote_nothing():
    after = {
        1: _p("a", 0.9, 0),
        2: _p("b", 0.8, 0),
        3: _p("c", 0.7, None),
        4: _p("d", 0.6, 0),
        5: _p("x", 0.06, 1),
    }
    a = disturbance.round_activity(
        1, _snap(0, None), _snap(10**9, None, procs=after), (), (), 0.0, [], None
    )
    assert [p.name for p in a.processes] == ["a", "b", "c", "x"]


def test_others_writes_are_unknown_when_no_process_says():
    after = {3: _p("c", 0.7, None), 4: _p("d", 0.6, None)}
    a = disturbance.round_activity(
        1, _snap(0, None), _snap(10**9, None, procs=after), (), (), 0.0, [], None
    )
    assert a.other_writes_bytes is None
    assert a.processes == (ProcessActivity(3, "c", 0.7, None), ProcessActivity(4, "d", 0.6, None))


# --------------------------------------------------------------------------- concurrent writers


def _act(**kw) -> RoundActivity:
    base = dict(round=1, elapsed_ns=4_000_000_000, device="vda", device_flushes=10_000)
    base.update(kw)
    return RoundActivity(**base)


@pytest.mark.parametrize(
    "kw, expected",
    [
        ({}, ()),
        ({"cpu_other_pct": 19.99}, ()),
        # docstring: "cpu" when other processes used WRITERS_CPU_OTHER_PCT % of the CPUs
        ({"cpu_other_pct": 20.0}, ("cpu",)),
        # the rounds' run-queue rule is not the writers' (no thread of fsyncbench measures)
        ({"cpu_wait_pct": 30.0, "cpu_other_pct": 5.0}, ()),
        ({"other_flushes": 500.0}, ("disk",)),
        ({"other_flushes": 500.0, "cpu_other_pct": 50.0}, ("disk", "cpu")),
        ({"cpu_steal_pct": 3.0, "cpu_other_pct": 50.0}, ("cpu", "steal")),
        (
            {"other_flushes": 500.0, "cpu_steal_pct": 3.0, "cpu_other_pct": 50.0},
            ("disk", "cpu", "steal"),
        ),
        ({"other_flushes": 500.0, "cpu_steal_pct": 3.0}, ("disk", "steal")),
    ],
)
def test_a_writers_point_is_disturbed_by_others_cpu_share(kw, expected):
    assert disturbance.writers_disturbances(_act(**kw)) == expected


def test_the_writers_cpu_threshold_is_the_share_at_which_processes_are_named():
    assert disturbance.WRITERS_CPU_OTHER_PCT == disturbance.CPU_OTHER_NAMED_PCT == 20.0


@pytest.mark.parametrize(
    "other, device, share",
    [
        (40.0, 1_000, 4.0),
        (0.0, 1_000, 0.0),
        (None, 1_000, None),
        (40.0, 0, None),
        (40.0, None, None),
    ],
)
def test_others_share_of_the_disks_flushes(other, device, share):
    a = _act(other_flushes=other, device_flushes=device)
    assert disturbance.other_share_pct(a) == share


# --------------------------------------------------------------------------- names and words

STRESS = ProcessActivity(90, "stress", 2.0, None)
FIO = ProcessActivity(812, "fio", 0.4, 80 * MiB)
STRESS2 = ProcessActivity(91, "stress", 1.5, 0)
RSYNC = ProcessActivity(700, "rsync", 0.5, 1)
IDLE = ProcessActivity(5, "idle", 0.0, 0)
PY = ProcessActivity(6, "python3", 0.9, 3 * MiB)
MIXED = [FIO, IDLE, RSYNC, STRESS, STRESS2, PY]


@pytest.mark.parametrize(
    "processes, key, names",
    [
        (MIXED, "cpu", "stress (pid 90), python3 (pid 6)"),  # one name once, at most two
        (MIXED, "write", "fio (pid 812), python3 (pid 6)"),
        ([IDLE, ProcessActivity(6, "python3", 0.3, None)], "cpu", "python3 (pid 6)"),
        ([STRESS, STRESS2, RSYNC], "write", "rsync (pid 700)"),  # 1 byte is a write
        ([IDLE], "cpu", ""),
    ],
)
def test_the_processes_named_are_those_that_did_most(processes, key, names):
    assert disturbance.process_names(processes, key) == names


def test_the_busiest_writers_over_rounds_are_named():
    rounds = [_act(processes=(STRESS, FIO)), _act(processes=(PY,))]
    assert disturbance.busiest_names(rounds, "write") == "fio (pid 812), python3 (pid 6)"
    assert disturbance.busiest_names(rounds, "cpu") == "stress (pid 90), python3 (pid 6)"


def test_the_words_for_a_disk_a_cpu_and_a_steal_disturbance():
    disk = [
        _act(
            other_flushes=1_500.0,
            device_flushes=2_000,
            processes=(STRESS, FIO),
            disturbed=("disk",),
        ),
        _act(other_flushes=1_200.0, device_flushes=1_200, disturbed=("disk",)),
    ]
    # 2,700 of 3,200 flushes: 84 %
    assert disturbance.phrase(disk) == (
        "other processes flushed vda about 2,700 times, 84 % of its flushes while fsyncbench "
        "measured (fio (pid 812) wrote the most)"
    )
    assert disturbance.phrase(disk[1:]) == (
        "other processes flushed vda about 1,200 times, 100 % of its flushes while fsyncbench "
        "measured"
    )
    cpu = _act(cpu_wait_pct=12.0, cpu_other_pct=None, processes=(STRESS,), disturbed=("cpu",))
    assert disturbance.phrase([cpu]) == (
        "fsyncbench waited for a CPU 12.0 % of the time (other processes used 0 % of the CPUs; "
        "stress (pid 90) the most)"
    )
    writers = _act(cpu_other_pct=55.0, processes=(STRESS, FIO), disturbed=("cpu",))
    assert disturbance.phrase([writers]) == (
        "other processes used 55 % of the CPUs (stress (pid 90), fio (pid 812) the most)"
    )
    steal = _act(cpu_steal_pct=3.04, other_flushes=1_200.0, disturbed=("disk", "steal"))
    assert disturbance.phrase([steal]) == (
        "other processes flushed vda about 1,200 times, 12 % of its flushes while fsyncbench "
        "measured; the hypervisor took 3.0 % of the CPUs' time (steal)"
    )


def test_a_run_that_stayed_disturbed_is_told_in_kept_rounds_only():
    loud = dict(other_flushes=1_200.0, device_flushes=1_200, disturbed=("disk",))
    activity = [
        _act(round=1, kept=False, **loud),  # retaken quietly: recorded, not kept
        _act(round=1, attempt=2),
        _act(round=2, **loud),
        _act(round=3),
    ]
    what = (
        "other processes flushed vda about 1,200 times, 100 % of its flushes while "
        "fsyncbench measured"
    )
    assert disturbance.kept(activity) == tuple(activity[1:])
    assert disturbance.stayed_disturbed(activity) == (activity[2],)
    assert disturbance.stayed_phrase(activity) == f"stayed disturbed in 1 of 3 rounds ({what})"
    assert disturbance.cannot_tell_reason(activity) == (
        f"1 of 3 rounds stayed disturbed ({what}): the p99 may be the other processes', not "
        "the storage's; run again on a quiet machine, or give --accept-disturbed"
    )
    quiet = activity[1:2] + activity[3:]
    assert disturbance.stayed_phrase(quiet) == disturbance.cannot_tell_reason(quiet) == ""
