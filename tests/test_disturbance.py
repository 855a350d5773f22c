"""Disturbed rounds: what else the machine did while a round measured, judged both ways.

Rules on recorded figures and recorded /proc trees (fast); real runs beside real interferers
(a second process doing write+fsync on the same disk, CPU burners) in the slow tier. No test
asserts a duration.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import factories
import pytest
import sampled
import this_platform
from clitools import fsb
from factories import host

from fsyncbench import api
from fsyncbench.host import _activity
from fsyncbench.measure import disturbance, intervals
from fsyncbench.model import FlushDelta, ProcessActivity, Report, RoundActivity
from fsyncbench.report import disturbed as words

# --------------------------------------------------------------------------- the rule


def _round(**kw) -> RoundActivity:
    base = dict(
        round=1,
        elapsed_ns=4_000_000_000,
        device="vda",
        device_flushes=10_000,
        other_flushes=0.0,
        cpu_wait_pct=0.5,
    )
    base.update(kw)
    return RoundActivity(**base)


@pytest.mark.parametrize(
    "kw, expected",
    [
        ({}, ()),
        # others' flushes: at least MIN_OTHER_FLUSHES and TAIL_SHARE_PCT % of the disk's
        ({"other_flushes": 99.9}, ()),  # 0.999 %
        ({"other_flushes": 100.0}, ("disk",)),  # 1 %
        ({"device_flushes": 500, "other_flushes": 9.0}, ()),  # 1.8 % but only 9
        ({"device_flushes": 500, "other_flushes": 10.0}, ("disk",)),
        ({"other_flushes": None}, ()),  # not measured: never disturbed by guess
        ({"device_flushes": 0, "other_flushes": 10.0}, ()),
        # the measuring thread's wait for a CPU
        ({"cpu_wait_pct": 1.99}, ()),
        ({"cpu_wait_pct": 2.0}, ("cpu",)),
        ({"cpu_wait_pct": 9.0, "elapsed_ns": 500_000_000}, ()),  # 45 ms: a short round's start
        ({"cpu_wait_pct": 10.0, "elapsed_ns": 500_000_000}, ("cpu",)),  # 50 ms
        ({"cpu_wait_pct": None, "cpu_pressure_pct": 90.0}, ()),  # PSI is recorded, not judged
        ({"cpu_steal_pct": 1.99}, ()),
        ({"cpu_steal_pct": 2.0}, ("steal",)),
        (
            {"other_flushes": 5000.0, "cpu_wait_pct": 30.0, "cpu_steal_pct": 5.0},
            ("disk", "cpu", "steal"),
        ),
    ],
)
def test_a_round_is_disturbed_only_at_its_thresholds(kw, expected):
    assert disturbance.disturbances(_round(**kw)) == expected


def _snap(t_s, cpu, psi=None, procs=None, kernel=0.0, reasons=()):
    return _activity.ActivitySnapshot(
        int(t_s * 1e9), cpu, 2, 0.5, psi or {}, procs or {}, tuple(reasons), kernel
    )


CPU0 = {
    "user": 100.0,
    "nice": 0.0,
    "system": 50.0,
    "idle": 800.0,
    "iowait": 10.0,
    "irq": 0.0,
    "softirq": 5.0,
    "steal": 0.0,
}


def _after(**delta):
    return {k: v + delta.get(k, 0.0) for k, v in CPU0.items()}


def test_others_flushes_are_their_rate_in_the_windows_without_a_sync():
    """100 flushes in 1 s of no-sync windows, 5 s of timed windows in all: 500 others';
    the device flushed 2,000 times: 25 %, disturbed; the names come from the writers."""
    results = [
        dataclasses.replace(
            factories.write(1_000),
            elapsed_ns=500_000_000,
            device_flushes=(FlushDelta("vda", 40, 2),),
        ),
        dataclasses.replace(
            factories.flush("fdatasync", 100_000),
            elapsed_ns=4_000_000_000,
            device_flushes=(FlushDelta("vda", 1_900, 90),),
        ),
    ]
    quiet = [disturbance.QuietWindow(500_000_000, (FlushDelta("vda", 60, 3),))]
    # write (no sync) is 0.5 s of the 4.5 s of timed windows: 100 others' flushes in 1 s
    procs0 = {7: _activity.ProcessSample("fio", 1.0, 0)}
    procs1 = {7: _activity.ProcessSample("fio", 1.2, 50 << 20)}
    a = disturbance.round_activity(
        1,
        _snap(0, CPU0, procs=procs0),
        _snap(5, _after(idle=5, user=5), procs=procs1),
        results,
        quiet,
        own_cpu_s=4.0,
        own_pids=[1],
        device="vda",
        waited=disturbance.RunQueueWait(5_000_000_000, 10_000_000),
    )
    assert a.other_flushes == pytest.approx(450.0)  # 100/s x 4.5 s
    assert a.device_flushes == 1_940
    assert a.quiet_s == 1.0
    assert a.disturbed == ("disk",)
    assert a.cpu_wait_pct == pytest.approx(0.2)
    assert [p.name for p in a.processes] == ["fio"]
    assert a.other_writes_bytes == 50 << 20
    # others' CPU: 5 s of user time in 10 s of CPU time, 4 s of it fsyncbench's own
    assert a.cpu_other_pct == pytest.approx(10.0)
    assert "fio (pid 7)" in disturbance.phrase([a])


def test_no_window_without_a_sync_means_not_measured_never_quiet_by_guess():
    results = [
        dataclasses.replace(
            factories.flush("fdatasync", 100_000), device_flushes=(FlushDelta("vda", 900, 9),)
        )
    ]
    a = disturbance.round_activity(
        1, _snap(0, CPU0), _snap(1, _after(idle=2)), results, (), 0.0, [], "vda"
    )
    assert a.other_flushes is None
    assert any("no window without a sync" in m for m in a.not_measured)
    assert any(m.startswith("CPU wait") for m in a.not_measured)


def test_kernel_threads_and_interrupts_are_not_other_processes():
    """CPU busy in irq/softirq and kernel threads (the block layer working for fsyncbench
    too) is not counted as others' use."""
    a = disturbance.round_activity(
        1,
        _snap(0, CPU0, kernel=3.0),
        _snap(2, _after(softirq=1.0, system=1.0, idle=2.0), kernel=4.0),
        (),
        (),
        0.0,
        [],
        None,
    )
    assert a.cpu_other_pct == 0.0


# --------------------------------------------------------------------------- /proc readers


def _tree(root: Path, stat: str, pressure: dict[str, str], schedstat: str | None) -> Path:
    (root / "proc" / "pressure").mkdir(parents=True)
    (root / "proc" / "stat").write_text(stat)
    (root / "proc" / "loadavg").write_text("2.47 1.90 1.20 3/94 25265\n")
    for name, text in pressure.items():
        (root / "proc" / "pressure" / name).write_text(text)
    if schedstat is not None:
        (root / "proc" / "thread-self").mkdir()
        (root / "proc" / "thread-self" / "schedstat").write_text(schedstat)
    return root


# recorded on this project's VM (Linux 6.18) with two CPU burners running
STAT = (
    "cpu  10326 0 4898 964164 1227 0 314 14 0 0\n"
    "cpu0 5163 0 2449 482082 613 0 157 7 0 0\n"
    "cpu1 5163 0 2449 482082 614 0 157 7 0 0\n"
    "intr 1 2 3\n"
)
PSI_CPU = (
    "some avg10=40.05 avg60=11.21 avg300=4.31 total=18339434\n"
    "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
)
PSI_IO = (
    "some avg10=6.45 avg60=7.05 avg300=2.51 total=9414703\n"
    "full avg10=6.18 avg60=5.59 avg300=1.92 total=7362271\n"
)


@this_platform.linux_trees
def test_a_recorded_proc_tree_is_read(tmp_path):
    root = _tree(tmp_path, STAT, {"cpu": PSI_CPU, "io": PSI_IO}, "154782125 60380254 557\n")
    snap = _activity.snapshot(str(root))
    assert snap.cpu_s is not None and snap.cpu_s["steal"] == pytest.approx(0.14)
    assert snap.cpu_s["idle"] == pytest.approx(9641.64)
    assert snap.cpu_count == 2
    assert snap.load_avg_1m == 2.47
    assert snap.psi_us == {
        "cpu_some": 18339434,
        "cpu_full": 0,
        "io_some": 9414703,
        "io_full": 7362271,
    }
    assert _activity.run_queue_wait_ns(str(root)) == 60380254


def test_a_kernel_without_psi_or_schedstat_is_named_not_guessed(tmp_path):
    root = _tree(tmp_path, STAT, {}, None)
    snap = _activity.snapshot(str(root))
    assert snap.psi_us == {}
    assert any("no /proc/pressure" in m for m in snap.not_measured)
    assert _activity.run_queue_wait_ns(str(root)) is None
    assert _activity.parse_psi("some avg10=1 total=x\nbogus\n", "cpu") == {}
    assert _activity.parse_proc_stat_cpu("cpu a b c") is None
    assert _activity.parse_proc_stat_cpu(None) is None


def test_this_machine_is_read_live():
    snap = _activity.snapshot()
    assert snap.cpu_s is not None and snap.cpu_count
    assert os.getpid() in snap.processes
    if sys.platform.startswith("linux"):
        assert (
            _activity.run_queue_wait_ns() is not None
            or os.path.exists("/proc/thread-self/schedstat") is False
        )


# --------------------------------------------------------------------------- words and gates


def _with_activity(rep: Report, rounds: list[RoundActivity], budget: float = 10.0) -> Report:
    return dataclasses.replace(rep, activity=tuple(rounds), retake_budget_s=budget)


FIO = ProcessActivity(812, "fio", 0.4, 80 << 20)


def test_the_screen_says_quiet_retaken_or_disturbed_first(tmp_path):
    rep = sampled.report()
    quiet = _with_activity(rep, [_round(round=k) for k in range(1, 4)])
    loud = dict(other_flushes=4000.0, processes=(FIO,), disturbed=("disk",))
    retaken = _with_activity(
        rep,
        [
            _round(round=1, kept=False, **loud),
            _round(round=2),
            _round(round=3),
            _round(round=1, attempt=2),
        ],
    )
    stayed = _with_activity(
        rep,
        [_round(round=k, **loud) for k in range(1, 4)]
        + [_round(round=1, attempt=2, kept=False, **loud)],
    )
    screens = {}
    for name, r in (("quiet", quiet), ("retaken", retaken), ("stayed", stayed)):
        screens[name] = api.render(r, "text").splitlines()[:10]
    assert any("Machine: quiet in all 3 rounds" in line for line in screens["quiet"])
    assert any("taken again" in line for line in screens["retaken"]), screens["retaken"]
    first = " ".join(screens["stayed"])
    assert "Disturbed: 3 rounds of 3 stayed disturbed" in first
    assert "fio (pid 812)" in first and "40 % of its flushes" in first
    assert "--accept-disturbed" in first
    # old reports: nothing said
    assert "Machine:" not in api.render(rep, "text")
    # the full report has one row per attempt
    md = api.render(stayed, "markdown")
    assert "The machine during the run" in md and "1 (retake 1)" in md


def test_a_run_that_stayed_disturbed_cannot_pass_max_p99_unless_accepted(tmp_path):
    rep = sampled.report()
    loud = dict(other_flushes=4000.0, processes=(FIO,), disturbed=("disk",))
    stayed = _with_activity(rep, [_round(round=k, **loud) for k in range(1, 4)])
    path = sampled.save(stayed, tmp_path / "stayed.json")
    proc = fsb("show", path, "--max-p99", "10s")
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "stayed disturbed" in proc.stdout and "fio (pid 812)" in proc.stdout
    assert fsb("show", path, "--max-p99", "10s", "--accept-disturbed").returncode == 0
    assert fsb("show", path, "--max-p99", "1ns", "--accept-disturbed").returncode == 1
    # the quiet twin passes without the flag
    quiet = sampled.save(
        _with_activity(rep, [_round(round=k) for k in range(1, 4)]), tmp_path / "quiet.json"
    )
    assert fsb("show", quiet, "--max-p99", "10s").returncode == 0
    # compare: a disturbed candidate that is slower "cannot tell" (the slowdown may be the
    # other processes'); a disturbed baseline cannot hide a regression (it could only have
    # been slowed by them)
    slow = sampled.report(1.6, seed=100, rounds=5)
    base = sampled.report(1.0, seed=0, rounds=5)
    loud_slow = sampled.save(
        _with_activity(slow, [_round(round=k, **loud) for k in range(1, 4)]), tmp_path / "ls.json"
    )
    quiet_base = sampled.save(
        _with_activity(base, [_round(round=k) for k in range(1, 4)]), tmp_path / "qb.json"
    )
    cmp_ = fsb("compare", quiet_base, loud_slow, "--fail-on-regression", "20")
    assert cmp_.returncode == 4, cmp_.stdout + cmp_.stderr
    flat = " ".join(cmp_.stdout.split())
    assert "stayed disturbed" in flat and "may be the other processes'" in flat
    accepted = fsb(
        "compare", quiet_base, loud_slow, "--fail-on-regression", "20", "--accept-disturbed"
    )
    assert accepted.returncode == 1 and "Judged although disturbed" in accepted.stdout
    loud_base = sampled.save(
        _with_activity(base, [_round(round=k, **loud) for k in range(1, 4)]), tmp_path / "lb.json"
    )
    quiet_slow = sampled.save(
        _with_activity(slow, [_round(round=k) for k in range(1, 4)]), tmp_path / "qs.json"
    )
    still = fsb("compare", loud_base, quiet_slow, "--fail-on-regression", "20")
    assert still.returncode == 1, still.stdout + still.stderr
    # a disturbed baseline and a candidate not slower: not shown to be as fast
    calm = sampled.save(
        _with_activity(
            sampled.report(1.0, seed=7, rounds=5), [_round(round=k) for k in range(1, 4)]
        ),
        tmp_path / "calm.json",
    )
    same = fsb("compare", loud_base, calm, "--fail-on-regression", "300")
    assert same.returncode == 4 and "is not shown to be as fast" in " ".join(same.stdout.split())


def test_strict_max_p99_decides_a_far_limit_by_the_order_statistic_bound():
    """A p99 without an interval (its slices disagree) but far below the limit passes in
    strict mode on a bound the samples support; near the limit it still cannot tell."""
    from fsyncbench.judge import gates

    samples = [100_000] * 4950 + [3_000_000] * 50  # p99 at the boundary of the tail
    r = factories._result(
        "flush", "write+fdatasync", "fdatasync", 100_000, samples=samples, syncs_issued=5000
    )
    r = dataclasses.replace(
        r, summary=dataclasses.replace(r.summary, p99_ci_ns=None, p99_interval=None)
    )
    rep = api.build_report("run", host(), (r,), ("fsyncbench",))
    bound = intervals.quantile_upper_bound(samples, 0.99)
    assert bound == 3_000_000
    failures, notes, untold = gates.review(rep, 10_000_000, max_p99_strict=True)
    assert failures == [] and untold == [] and "order-statistic upper bound" in notes[0]
    failures, notes, untold = gates.review(rep, 2_000_000, max_p99_strict=True)
    assert untold and not notes


def test_the_order_statistic_bound_covers_the_quantile_and_respects_rounds():
    import numpy as np

    rng = np.random.default_rng(0)
    misses = 0
    for _ in range(400):
        x = rng.exponential(1.0, 2000)
        misses += intervals.quantile_upper_bound(x, 0.99) < np.log(100)  # true p99
    assert misses / 400 <= 0.08  # stated 5 %, binomial noise of 400 draws
    assert intervals.quantile_upper_bound([1.0] * 1000, 0.99, (7.0,)) == 7.0
    assert intervals.quantile_upper_bound([1.0] * 10, 0.99) is None  # 0.99**10 > 5 %


# --------------------------------------------------------------------------- real interferers

DISK_LOOP = (
    "import os, sys\n"
    "fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o600)\n"
    "while True:\n"
    "    os.pwrite(fd, b'x' * 4096, 0)\n"
    "    os.fsync(fd)\n"
)
CPU_LOOP = "while True: pass"


def _start(code: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code, *args])


def _stop(procs):
    for p in procs:
        p.kill()
        p.wait()


def _has_flush_counters(directory: Path) -> bool:
    from fsyncbench.host import collect_host, counter_devices

    return bool(counter_devices(collect_host(str(directory)).target))


@pytest.mark.slow
def test_a_second_process_fsyncing_on_the_same_disk_is_named_then_quiet_after(tmp_path):
    work = Path(os.environ.get("FSYNCBENCH_DISK_TMP", "/var/tmp"))
    target = Path(tempfile_dir(work))
    try:
        if not _has_flush_counters(target):
            pytest.skip(f"{target} sits on no disk with flush counters (Linux >= 5.5)")
        noisy = _start(DISK_LOOP, str(target / "interferer"))
        time.sleep(0.5)
        try:
            out = tmp_path / "loud.json"
            proc = _short_run(target, out)
            text = fsb("show", out).stdout.splitlines()[:10]
        finally:
            _stop([noisy])
        assert proc.returncode == 0, proc.stderr
        loud = json.loads(out.read_text())
        rounds = loud["activity"]
        assert len(rounds) == 3 and all("disk" in a["disturbed"] for a in rounds), rounds
        assert any(p["pid"] == noisy.pid for a in rounds for p in a["processes"])
        first = " ".join(text)
        assert "Disturbed:" in first and f"pid {noisy.pid}" in first, first
        # the interferer gone: no round names it, and the disk is not disturbed
        out2 = tmp_path / "after.json"
        assert _short_run(target, out2).returncode == 0
        after = json.loads(out2.read_text())["activity"]
        loud_after = [a for a in after if "disk" in a["disturbed"]]
        writers = {p["name"] for a in loud_after for p in a["processes"] if p["write_bytes"]}
        if loud_after and writers:  # a busy machine: someone else wrote meanwhile
            pytest.skip(f"another process wrote to the disk after the interferer: {writers}")
        assert not loud_after, after
        assert not any(p["pid"] == noisy.pid for a in after for p in a["processes"])
    finally:
        import shutil

        shutil.rmtree(target, ignore_errors=True)


def _short_run(target: Path, out: Path) -> subprocess.CompletedProcess:
    """A 3-round, 4 s run of wal/off and wal/full that only records disturbances, as JSON."""
    return fsb(
        *("run", target, "--rounds", "3", "--run-budget-seconds", "4", "--no-report"),
        *("--journal-mode", "wal", "--synchronous", "off,full", "--no-retake-disturbed"),
        *("--format", "json", "-o", out),
    )


def tempfile_dir(base: Path) -> str:
    import tempfile

    return tempfile.mkdtemp(prefix="fsyncbench-test-disturb-", dir=base)


@pytest.mark.slow
def test_cpu_burners_beside_the_run_are_seen_and_named(tmp_path):
    if (os.cpu_count() or 1) > 8:
        pytest.skip("burning every CPU of a large machine for a test is too much")
    burners = [_start(CPU_LOOP) for _ in range(os.cpu_count() or 1)]
    time.sleep(0.5)
    try:
        out = tmp_path / "cpu.json"
        proc = _short_run(tmp_path, out)
    finally:
        _stop(burners)
    assert proc.returncode == 0, proc.stderr
    rounds = json.loads(out.read_text())["activity"]
    if not sys.platform.startswith("linux") or rounds[0]["cpu_wait_pct"] is None:
        pytest.skip("no run-queue wait on this system")
    assert sum("cpu" in a["disturbed"] for a in rounds) >= 2, rounds
    pids = {b.pid for b in burners}
    assert any(p["pid"] in pids for a in rounds for p in a["processes"])
    first = " ".join(fsb("show", out).stdout.splitlines()[:10])
    assert "Disturbed:" in first and "waited for a CPU" in first, first


@pytest.mark.slow
def test_an_interferer_present_for_part_of_a_run_is_retaken_away(tmp_path):
    """The disk interferer runs during the first part of round 1 only (stopped from round
    1's progress a second in): the disturbed round is taken again on the quiet machine, and
    the report says so."""
    work = Path(tempfile_dir(Path("/var/tmp")))
    try:
        if not _has_flush_counters(work):
            pytest.skip(f"{work} sits on no disk with flush counters (Linux >= 5.5)")
        noisy = [_start(DISK_LOOP, str(work / "interferer"))]
        time.sleep(0.5)

        began = time.monotonic()

        def progress(label, *_args):
            if noisy and time.monotonic() - began > 1.5:
                _stop(noisy)
                noisy.clear()

        try:
            rep = api.run(
                work,
                rounds=3,
                run_budget_seconds=4,
                journal_modes="wal",
                synchronous="off,full",
                progress=progress,
                history=None,
            )
        finally:
            _stop(noisy)
        first = [a for a in rep.activity if a.round == 1]
        assert first[0].disturbed and not first[0].kept, rep.activity
        assert first[-1].kept and not first[-1].disturbed and first[-1].attempt > 1
        assert not words.stayed_disturbed(rep)
        assert "taken again" in api.render(rep, "text")
    finally:
        import shutil

        shutil.rmtree(work, ignore_errors=True)


def test_a_round_disturbed_at_first_is_retaken_and_the_quiet_retake_kept(tmp_path, monkeypatch):
    """measure_rounds' retakes without an interferer: recorded readings of the machine (the
    hypervisor took 10 % of the CPUs during round 1's first attempt only), rounds that
    measure recorded results and a clock that advances a second a round. Round 1 is taken
    again within the retake budget, its quiet retake's samples replace the first's, and the
    activity records both attempts, the first as not kept."""
    from types import SimpleNamespace

    from fsyncbench.measure import rounds
    from fsyncbench.measure.plan import RunPlan, build_configs

    now = [0.0]
    monkeypatch.setattr(rounds, "time", SimpleNamespace(monotonic=lambda: now[0]))
    # (before, after) per attempt, in the order they run: rounds 1, 2, 3, then round 1 again
    steal = [10.0, 0.0, 0.0, 0.0]
    readings = iter(
        snap for extra in steal for snap in (_snap(0, CPU0), _snap(1, _after(steal=extra)))
    )
    monkeypatch.setattr(rounds.hostmod, "activity_snapshot", lambda: next(readings))
    measured = []

    def one_round(plan, host, work, k, number, progress, floors):
        now[0] += 1.0
        seed = 10 * k + number
        measured.append((k + 1, number))
        results = sampled.report(seed=seed, n=200).results
        return results, (), (), [], None

    monkeypatch.setattr(rounds, "_worker_round", one_round)
    plan = RunPlan(target=tmp_path, configs=build_configs("wal", "full"), rounds=3)
    got = rounds.measure_rounds(plan, host(), floors=False, retake_fraction=0.5)
    assert measured == [(1, 1), (2, 1), (3, 1), (1, 2)]
    assert [(a.round, a.attempt, a.kept, a.disturbed) for a in got.activity] == [
        (1, 1, False, ("steal",)),
        (2, 1, True, ()),
        (3, 1, True, ()),
        (1, 2, True, ()),
    ]
    assert got.retake_budget_s == 1.5  # half of the three rounds' 3 s
    # the kept samples are the retake's (seed 2), then rounds 2 and 3 (11, 21)
    kept = [sampled.report(seed=seed, n=200).results[0].samples_ns for seed in (2, 11, 21)]
    assert got.results[0].samples_ns == sum(kept, ())
    assert list(tmp_path.iterdir()) == []


def test_a_run_that_stayed_disturbed_is_no_history_for_the_next(tmp_path):
    """Its spread is the neighbours', not the storage's: read_history leaves it out and
    names it; the quiet and the retaken-quietly runs are used."""
    from fsyncbench.report import history

    rep = sampled.report()
    loud = dict(other_flushes=4000.0, processes=(FIO,), disturbed=("disk",))
    kinds = {
        "a-quiet.json": [_round(round=1)],
        "b-retaken.json": [_round(round=1, kept=False, **loud), _round(round=1, attempt=2)],
        "c-stayed.json": [_round(round=1, **loud)],
    }
    for k, (name, rounds) in enumerate(kinds.items()):
        one = dataclasses.replace(
            _with_activity(rep, rounds), created_utc=f"2026-12-0{k + 1}T00:00:00Z"
        )
        sampled.save(one, tmp_path / name)
    found = history.read_history(tmp_path, rep.host)
    assert [name for name, _ in found.reports] == ["a-quiet.json", "b-retaken.json"]
    assert found.disturbed == ("c-stayed.json",)
