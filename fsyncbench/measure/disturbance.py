"""Whether the machine disturbed a round: what else ran while it measured, and whether that
could explain the round's tail.

A round (:mod:`fsyncbench.measure.rounds`) is bracketed by two
:class:`fsyncbench.host.ActivitySnapshot` readings; :func:`round_activity` turns them, the
round's results and its quiet window into a :class:`fsyncbench.model.RoundActivity`, and
:func:`disturbances` judges it. The rule rests on what a p99 is: the slowest 1 % of the
operations. A disturbance that touches at least 1 % of a round's time, or of the flushes
the disk served while it measured, can by itself put every sample beyond the p99; below that
it cannot explain the tail alone. The thresholds below were calibrated both ways on this
project's 2-core VM (docs/method.md, "Disturbed rounds"): quiet repeats came out quiet, and a
second process doing write+fsync on the same disk, or burning CPU, was seen.

Other processes' flushes cannot be told from fsyncbench's own by the device counters, which
count every flush of the disk. fsyncbench issues no sync at all in two kinds of window: the
floors (in-memory, at each round's start) and the workloads whose primitive is "none"
(writes and commits with synchronous=OFF); the flushes the disk completed in those windows
came from elsewhere, and their rate over the timed windows is the estimate of others'.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from fsyncbench.host import ActivitySnapshot
from fsyncbench.model import FlushDelta, ProcessActivity, Result, RoundActivity

#: The tail a p99 describes: 1 % of the operations. A disturbance above this share of the
#: round's time (CPU) or of the disk's flushes (disk) can explain the whole tail.
TAIL_SHARE_PCT = 1.0
#: Fewest other flushes in a round before the disk counts as disturbed: the filesystem's own
#: periodic journal commit (ext4 commits every 5 s by default, ext4(5) "commit=nrsec") and the
#: write-back of fsyncbench's own unsynced writes send a flush or two per round on a quiet
#: disk; the quiet repeats here saw at most 4 per round (docs/method.md).
MIN_OTHER_FLUSHES = 10
#: Share of all CPUs' time (%) other processes may use before they are named on the screen
#: as CPU load; whether it disturbed the tail is the pressure (run queue) figure's to say.
CPU_OTHER_NAMED_PCT = 20.0
#: Share (%) of a round's measuring time in which fsyncbench's measuring thread was ready to
#: run but waited for a CPU (its run-queue wait), or the hypervisor ran something else
#: (steal), from which a round is disturbed: twice the p99's 1 %, because every wake-up
#: after a sync waits a little even on an idle machine (0.51-0.88 % in the 16 quiet rounds
#: of the calibration on this project's 2-core VM, against 24-28 % with two CPU burners and
#: 0.9-10.5 % with one; docs/method.md "Disturbed rounds"). The machine-wide pressure (PSI
#: cpu "some") is recorded but not judged: fsyncbench's own I/O completions kept it at
#: 6-8 % on the idle VM, and it fell to 4 % with one CPU burner beside it.
CPU_WAIT_PCT = 2 * TAIL_SHARE_PCT
#: Least run-queue wait (ms) in a round for "cpu": a round of a fraction of a second (a test's
#: or a tiny --samples run) waits a few ms at its start (opening its databases, the first
#: wake-ups) which is several % of it on an idle machine; a default round of about 4 s
#: reaches CPU_WAIT_PCT at 80 ms.
MIN_CPU_WAIT_MS = 50.0
#: Processes recorded per round: the busiest by CPU time and by bytes written.
TOP_PROCESSES = 3
#: Least CPU time (s) or bytes written for a process to be named.
MIN_PROCESS_CPU_S = 0.05
MIN_PROCESS_WRITE_BYTES = 1 << 20

DISK = "disk"
CPU = "cpu"
STEAL = "steal"


@dataclass(frozen=True)
class QuietWindow:
    """Device counters over a window in which fsyncbench issued no sync: ``flushes`` per
    device (None: not counted) over ``elapsed_ns``."""

    elapsed_ns: int
    deltas: tuple[FlushDelta, ...] = ()


@dataclass(frozen=True)
class RunQueueWait:
    """How long the measuring thread waited for a CPU (``wait_ns``, None: not readable)
    while it measured for ``wall_ns`` (:func:`fsyncbench.host.run_queue_wait_ns`)."""

    wall_ns: int
    wait_ns: int | None


def _delta(after: dict[str, float], before: dict[str, float], key: str) -> float:
    return max(0.0, after.get(key, 0.0) - before.get(key, 0.0))


def _flushes(deltas: Iterable[FlushDelta], device: str) -> int | None:
    found = [d.flushes for d in deltas if d.device == device]
    if not found or any(f is None for f in found):
        return None
    return sum(f for f in found if f is not None)


def round_activity(
    number: int,
    before: ActivitySnapshot,
    after: ActivitySnapshot,
    results: Sequence[Result],
    quiet: Sequence[QuietWindow],
    own_cpu_s: float,
    own_pids: Iterable[int],
    device: str | None,
    attempt: int = 1,
    waited: RunQueueWait | None = None,
    timed: Sequence[tuple[int, Sequence[FlushDelta]]] = (),
) -> RoundActivity:
    """What happened besides round ``number`` (1-based) between ``before`` and ``after``:
    ``results`` are the round's own (their device counters and timed lengths), ``quiet``
    its windows without a sync besides those of results whose primitive is "none",
    ``own_cpu_s`` the CPU seconds fsyncbench's processes used meanwhile (parent and worker),
    ``own_pids`` those processes, ``device`` the disk holding the bytes (None: no counters),
    ``waited`` how long the measuring thread waited for a CPU, ``timed`` other windows in
    which fsyncbench synced, as (ns, device counters) (the concurrent writers of ``run
    --writers``, which are no Result). The returned record is judged (``disturbed``)."""
    elapsed_ns = max(1, after.t_ns - before.t_ns)
    wall_s = elapsed_ns / 1e9
    missing = list(dict.fromkeys((*before.not_measured, *after.not_measured)))
    other_pct = steal_pct = None
    count = after.cpu_count or before.cpu_count
    if before.cpu_s is not None and after.cpu_s is not None:
        deltas = {k: _delta(after.cpu_s, before.cpu_s, k) for k in after.cpu_s}
        total = sum(v for k, v in deltas.items() if k not in ("guest", "guest_nice"))
        if total > 0:
            idle = sum(deltas.get(k, 0.0) for k in ("idle", "iowait"))
            steal = deltas.get("steal", 0.0)
            # the kernel's work for every process (interrupts, kernel threads) is not others'
            kernel = sum(deltas.get(k, 0.0) for k in ("irq", "softirq"))
            kernel += max(0.0, after.kernel_cpu_s - before.kernel_cpu_s)
            busy = max(0.0, total - idle - steal - kernel - own_cpu_s)
            other_pct = round(100.0 * busy / total, 2)
            if "steal" in after.cpu_s:
                steal_pct = round(100.0 * steal / total, 2)
            else:
                missing.append("steal: this platform reports no steal time")
    cpu_pressure = io_pressure = None
    if before.psi_us and after.psi_us:

        def pct(key: str) -> float | None:
            if key not in before.psi_us or key not in after.psi_us:
                return None
            return round(100.0 * max(0, after.psi_us[key] - before.psi_us[key]) / 1e6 / wall_s, 2)

        cpu_pressure, io_pressure = pct("cpu_some"), pct("io_some")
    changes = _process_changes(before, after, set(own_pids))
    processes = _busiest(changes)
    other_writes = None
    if after.processes and any(c.write_bytes is not None for c in changes):
        other_writes = sum(max(0, c.write_bytes or 0) for c in changes)
    device_flushes = other = quiet_s = None
    if device is None:
        missing.append("device flushes: no flush counters on this platform or disk")
    else:
        device_flushes = _flushes(
            (*(d for r in results for d in r.device_flushes), *(d for _, ds in timed for d in ds)),
            device,
        )
        windows = [
            (r.elapsed_ns, _flushes(r.device_flushes, device))
            for r in results
            if r.primitive == "none"
        ] + [(w.elapsed_ns, _flushes(w.deltas, device)) for w in quiet]
        counted = [(ns, f) for ns, f in windows if f is not None and ns > 0]
        quiet_ns = sum(ns for ns, _ in counted)
        timed_ns = sum(r.elapsed_ns for r in results) + sum(ns for ns, _ in timed)
        if device_flushes is None:
            missing.append(f"device flushes: {device} has no flush counters (Linux >= 5.5)")
        elif quiet_ns <= 0:
            missing.append(
                "others' flushes: no window without a sync in this round (no workload "
                "with synchronous=OFF or without a sync primitive)"
            )
        else:
            quiet_s = round(quiet_ns / 1e9, 3)
            rate = sum(f for _, f in counted) / (quiet_ns / 1e9)
            other = round(min(float(device_flushes), rate * timed_ns / 1e9), 1)
    wait_pct = None
    if waited is None or waited.wait_ns is None or waited.wall_ns <= 0:
        missing.append("CPU wait: no /proc/thread-self/schedstat (Linux with CONFIG_SCHED_INFO)")
    else:
        wait_pct = round(100.0 * waited.wait_ns / waited.wall_ns, 2)
    record = RoundActivity(
        round=number,
        attempt=attempt,
        elapsed_ns=elapsed_ns,
        cpu_count=count,
        load_avg_1m=after.load_avg_1m,
        cpu_other_pct=other_pct,
        cpu_steal_pct=steal_pct,
        cpu_pressure_pct=cpu_pressure,
        cpu_wait_pct=wait_pct,
        io_pressure_pct=io_pressure,
        device=device,
        device_flushes=device_flushes,
        other_flushes=other,
        quiet_s=quiet_s,
        other_writes_bytes=other_writes,
        processes=processes,
        not_measured=tuple(dict.fromkeys(missing)),
    )
    return _judged(record)


def _process_changes(
    before: ActivitySnapshot, after: ActivitySnapshot, own: set[int]
) -> list[ProcessActivity]:
    """Every other process's CPU time and bytes written between the two snapshots (a
    process started in between counts from zero; a reused pid is a new process)."""
    out = []
    for pid, p in after.processes.items():
        if pid in own:
            continue
        old = before.processes.get(pid)
        if old is not None and old.name != p.name:
            old = None
        cpu = p.cpu_s - (old.cpu_s if old else 0.0)
        written = None
        if p.write_bytes is not None:
            written = p.write_bytes - ((old.write_bytes or 0) if old else 0)
        out.append(ProcessActivity(pid, p.name, round(max(0.0, cpu), 3), written))
    return out


def _busiest(changes: Sequence[ProcessActivity]) -> tuple[ProcessActivity, ...]:
    """The other processes that used the most CPU or wrote the most in the window."""
    seen = [
        c
        for c in changes
        if c.cpu_s >= MIN_PROCESS_CPU_S or (c.write_bytes or 0) >= MIN_PROCESS_WRITE_BYTES
    ]
    by_cpu = sorted(seen, key=lambda p: -p.cpu_s)[:TOP_PROCESSES]
    by_io = sorted(seen, key=lambda p: -(p.write_bytes or 0))[:TOP_PROCESSES]
    return tuple(dict.fromkeys((*by_cpu, *by_io)))


def disturbances(a: RoundActivity) -> tuple[str, ...]:
    """What could explain round ``a``'s tail: "disk" when other processes' flushes were at
    least :data:`MIN_OTHER_FLUSHES` and :data:`TAIL_SHARE_PCT` % of the disk's; "cpu" when
    the measuring thread waited for a CPU :data:`CPU_WAIT_PCT` % of the time or more (and
    :data:`MIN_CPU_WAIT_MS` in all); "steal"
    when the hypervisor took that share. Empty: quiet (or not measured: see
    ``a.not_measured``)."""
    out = []
    if (
        a.other_flushes is not None
        and a.device_flushes
        and a.other_flushes >= MIN_OTHER_FLUSHES
        and 100.0 * a.other_flushes / a.device_flushes >= TAIL_SHARE_PCT
    ):
        out.append(DISK)
    if (
        a.cpu_wait_pct is not None
        and a.cpu_wait_pct >= CPU_WAIT_PCT
        and a.cpu_wait_pct / 100 * a.elapsed_ns / 1e6 >= MIN_CPU_WAIT_MS
    ):
        out.append(CPU)
    if a.cpu_steal_pct is not None and a.cpu_steal_pct >= CPU_WAIT_PCT:
        out.append(STEAL)
    return tuple(out)


#: Share (%) of all CPUs other processes used while concurrent writers committed (``run
#: --writers``) from which a writers point is disturbed: no thread of fsyncbench measures
#: there, so its own run-queue wait (the rounds' signal) is not read, and N writers wait
#: for the cores among themselves anyway. This tool's threshold, the share at which it
#: names the busiest processes (:data:`CPU_OTHER_NAMED_PCT`): one process burning one of
#: this project's 2 cores shows as 50 %, an idle machine 0-5 %.
WRITERS_CPU_OTHER_PCT = CPU_OTHER_NAMED_PCT


def writers_disturbances(a: RoundActivity) -> tuple[str, ...]:
    """What could explain a concurrent-writers point's figures: the rounds' disk and steal
    rules (:func:`disturbances`), and "cpu" when other processes used
    :data:`WRITERS_CPU_OTHER_PCT` % of the CPUs or more."""
    out = [d for d in disturbances(a) if d != CPU]
    if a.cpu_other_pct is not None and a.cpu_other_pct >= WRITERS_CPU_OTHER_PCT:
        out.insert(1 if DISK in out else 0, CPU)
    return tuple(out)


def _judged(a: RoundActivity) -> RoundActivity:
    return replace(a, disturbed=disturbances(a))


def other_share_pct(a: RoundActivity) -> float | None:
    """Other processes' share (%) of the disk's flushes in round ``a``, None when either
    count is missing."""
    if a.other_flushes is None or not a.device_flushes:
        return None
    return 100.0 * a.other_flushes / a.device_flushes


def kept(activity: Sequence[RoundActivity]) -> tuple[RoundActivity, ...]:
    """The attempts whose samples are in the results (one per round)."""
    return tuple(a for a in activity if a.kept)


def stayed_disturbed(activity: Sequence[RoundActivity]) -> tuple[RoundActivity, ...]:
    """The kept rounds still disturbed after their retakes."""
    return tuple(a for a in kept(activity) if a.disturbed)


def process_names(processes: Sequence[ProcessActivity], key: str) -> str:
    """'fio (pid 812), python3 (pid 90)': at most two processes that did most of ``key``
    ("write": bytes written; else CPU time)."""
    if key == "write":
        ranked = sorted(
            (p for p in processes if (p.write_bytes or 0) > 0), key=lambda p: -(p.write_bytes or 0)
        )
    else:
        ranked = sorted((p for p in processes if p.cpu_s > 0), key=lambda p: -p.cpu_s)
    seen: dict[str, int] = {}
    for p in ranked:
        seen.setdefault(p.name, p.pid)
    return ", ".join(f"{n} (pid {pid})" for n, pid in list(seen.items())[:2])


def busiest_names(rounds: Sequence[RoundActivity], key: str) -> str:
    """The other processes that wrote (``key`` "write") or used the CPU most in ``rounds``."""
    return process_names([p for a in rounds for p in a.processes], key)


def phrase(rounds: Sequence[RoundActivity]) -> str:
    """What disturbed ``rounds``, with its figures: 'other processes flushed vda about 1,800
    times, 40 % of its flushes while fsyncbench measured (python3 (pid 812) wrote the
    most)'; 'fsyncbench waited for a CPU 12 % of the time (other processes used 74 % of the
    CPUs; ...)'; 'the hypervisor took 3 % of the CPUs' time (steal)'."""
    import statistics

    parts = []
    disk = [a for a in rounds if DISK in a.disturbed]
    if disk:
        other = sum(a.other_flushes or 0 for a in disk)
        total = sum(a.device_flushes or 0 for a in disk)
        who = busiest_names(disk, "write")
        parts.append(
            f"other processes flushed {disk[0].device} about {other:,.0f} times, "
            f"{100 * other / max(total, 1):.0f} % of its flushes while fsyncbench measured"
            + (f" ({who} wrote the most)" if who else "")
        )
    cpu = [a for a in rounds if CPU in a.disturbed]
    if cpu:
        busy = statistics.median(a.cpu_other_pct or 0.0 for a in cpu)
        who = busiest_names(cpu, "cpu")
        if all(a.cpu_wait_pct is None for a in cpu):  # concurrent writers: others' share
            parts.append(
                f"other processes used {busy:.0f} % of the CPUs"
                + (f" ({who} the most)" if who else "")
            )
        else:
            wait = statistics.median(a.cpu_wait_pct or 0.0 for a in cpu)
            parts.append(
                f"fsyncbench waited for a CPU {wait:.1f} % of the time (other processes used "
                f"{busy:.0f} % of the CPUs" + (f"; {who} the most" if who else "") + ")"
            )
    steal = [a for a in rounds if STEAL in a.disturbed]
    if steal:
        took = statistics.median(a.cpu_steal_pct or 0.0 for a in steal)
        parts.append(f"the hypervisor took {took:.1f} % of the CPUs' time (steal)")
    return "; ".join(parts)


def stayed_phrase(activity: Sequence[RoundActivity]) -> str:
    """ "stayed disturbed in N of M rounds (what disturbed them)", or "" for a run that did
    not stay disturbed."""
    still = stayed_disturbed(activity)
    if not still:
        return ""
    return f"stayed disturbed in {len(still)} of {len(kept(activity))} rounds ({phrase(still)})"


def cannot_tell_reason(activity: Sequence[RoundActivity]) -> str:
    """Why a gate cannot tell from a run that stayed disturbed ("" when it did not)."""
    still = stayed_disturbed(activity)
    if not still:
        return ""
    rounds = len(kept(activity))
    return (
        f"{len(still)} of {rounds} rounds stayed disturbed ({phrase(still)}): the p99 may "
        "be the other processes', not the storage's; run again on a quiet machine, or give "
        "--accept-disturbed"
    )
