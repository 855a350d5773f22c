"""What the measure stage records (:mod:`fsyncbench.measure`): the :class:`Pragmas` a
configuration runs under; each :class:`Result` with its raw samples, their :class:`Summary`
with an :class:`Interval` per percentile, and the earlier runs that widen those
(:class:`EarlierRun`); what the rest of the machine did during each round
(:class:`RoundActivity`)."""

from __future__ import annotations

from dataclasses import dataclass

from fsyncbench.model.host import FlushDelta


@dataclass(frozen=True)
class Pragmas:
    """One SQLite pragma combination.

    ``fullfsync`` is None where the pragma has no effect (SQLite honours it on macOS only:
    https://www.sqlite.org/pragma.html#pragma_fullfsync).
    """

    journal_mode: str
    synchronous: str
    fullfsync: bool | None = None

    @property
    def label(self) -> str:
        """Short lower-case name such as ``wal/full`` or ``delete/full/fullfsync``."""
        text = f"{self.journal_mode}/{self.synchronous}".lower()
        if self.fullfsync is not None:
            text += "/fullfsync" if self.fullfsync else "/no-fullfsync"
        return text


@dataclass(frozen=True)
class Interval:
    """A confidence interval of one percentile, or the reason there is none
    (:func:`fsyncbench.measure.intervals.quantile_interval` makes them).

    ``estimate_ns`` is the percentile of all samples; ``low_ns``/``high_ns`` the bounds
    (None, with ``reason`` saying why, when the data cannot support an interval);
    ``se_log`` the standard error of log(estimate) and ``df`` its degrees of freedom, which
    tests between runs use; ``blocks`` how many independent blocks (slices or rounds) it
    rests on; ``method`` names how this run's own part was computed ("block-jackknife",
    "round-jackknife", or "order-statistic", which assumes independent samples).

    ``runs`` is how many runs of the same measurement the interval rests on: 1, this run
    alone; more when earlier runs (``Result.earlier``) widened it by the spread between
    runs (:func:`fsyncbench.measure.intervals.between_runs_interval`). Then ``se_log`` and
    ``df`` are the combined ones, ``tau_log`` the estimated between-run standard deviation
    of log(estimate), and ``within_se_log``/``within_df`` this run's own. With ``runs`` > 1
    and ``within_se_log`` None the interval rests on the runs' spread alone (this run had
    none of its own; ``method`` and ``blocks`` then describe that run's own attempt).
    """

    estimate_ns: float
    low_ns: float | None
    high_ns: float | None
    se_log: float | None
    df: float
    blocks: int
    method: str
    reason: str | None = None
    runs: int = 1
    tau_log: float | None = None
    within_se_log: float | None = None
    within_df: float = 0.0

    @property
    def own_se_log(self) -> float | None:
        """This run's own standard error of log(estimate): without the spread between
        runs, None where this run alone supports no interval."""
        if self.runs <= 1:
            return self.se_log if self.bounds is not None else None
        return self.within_se_log

    @property
    def bounds(self) -> tuple[float, float] | None:
        """(low, high) in ns, None when there is no interval."""
        return None if self.low_ns is None or self.high_ns is None else (self.low_ns, self.high_ns)


@dataclass(frozen=True)
class Summary:
    """Statistics derived from one result's raw samples (all times in ns).

    ``p50_ci_ns``/``p99_ci_ns`` are the (low, high) bounds of a ``ci_level`` confidence
    interval, None where the samples cannot support one (``p50_interval``/``p99_interval``
    say why, and how each was made). ``ci_method`` names p99's method: "block-jackknife"
    or "round-jackknife" (valid for samples that move together in time, schema 2), or in
    schema 1 reports "bootstrap"/"order-statistic", which assume independent samples.
    ``p99_ci_halfwidth_pct`` is the larger distance from p99 to a bound of its CI in % of
    p99 (None without an interval). ``round_p50_ns``/``round_p99_ns`` are each round's own
    p50/p99 when the run had several rounds (``run --rounds``): the run-to-run spread.
    """

    count: int
    min_ns: float
    p50_ns: float
    p90_ns: float
    p99_ns: float
    p999_ns: float
    max_ns: float
    mean_ns: float
    stdev_ns: float
    ops_per_s: float
    p50_ci_ns: tuple[float, float] | None
    p99_ci_ns: tuple[float, float] | None
    ci_level: float = 0.95
    ci_method: str = "bootstrap"
    ci_resamples: int = 0
    p99_ci_halfwidth_pct: float | None = None
    p50_interval: Interval | None = None
    p99_interval: Interval | None = None
    round_p50_ns: tuple[float, ...] = ()
    round_p99_ns: tuple[float, ...] = ()


@dataclass(frozen=True)
class EarlierRun:
    """One earlier run of the same measurement, as far as intervals need it: its p50 and p99
    (ns) and its own standard errors of their logs (``*_se_log``, that run's samples alone;
    None where they supported no interval), the standard deviation of the log of its rounds'
    p50 and p99 (``*_round_sd_log``, None below 3 rounds or in reports before it was
    recorded) and its number of ``rounds`` (0: not recorded): what a test between runs
    needs (:mod:`fsyncbench.measure.between`). ``report`` is the report's file name and
    ``created_utc`` when it was made."""

    report: str
    created_utc: str
    p50_ns: float
    p99_ns: float
    p50_se_log: float | None = None
    p99_se_log: float | None = None
    p50_round_sd_log: float | None = None
    p99_round_sd_log: float | None = None
    rounds: int = 0


@dataclass(frozen=True)
class Result:
    """One measured configuration or sync primitive with its raw samples.

    ``kind``: "commit" (one journal transaction), "flush" (4 KiB write + one sync primitive)
    or "write" (4 KiB write, no sync: the baseline). ``primitive`` names the sync call behind
    the number (e.g. "fdatasync", "F_FULLFSYNC", "none"). ``samples_ns`` are the timed
    operations in order, warmup excluded. ``syncs_issued`` counts sync calls this workload
    made itself (flush kinds) while the device flush counters were watched (timed and warmup
    calls alike, so ``device_flushes`` / ``syncs_issued`` is flushes per sync) and is None for
    commits, where SQLite issues them.

    Adaptive sampling: ``ci_target_pct`` is the precision asked for (sample until the 95 %
    CI of p99 is within +-that % of p99; None = a fixed sample count, ``target_samples``);
    ``ci_target_met`` says whether the reported CI met it; ``stop_reason`` is "ci-target",
    "samples" or "budget"; ``phases`` counts the separate sampling phases the samples were
    taken in (a configuration short of its target gets a later phase when time is left).
    ``slice_counts`` are the sample counts of those phases in time order (they add up to
    the sample count) and ``slice_rounds`` the round of each (``run --rounds``); both are
    empty in schema 1 reports, whose intervals therefore assume independent samples.
    In adaptive mode ``target_samples`` is the minimum sample count. Kind "floor" results
    (``Report.floors``) measure the tool itself, not the storage. ``earlier`` holds the
    figures of earlier runs of the same measurement (same host, directory, storage and
    workload; oldest first) whose spread widens this result's intervals (schema 3).
    """

    kind: str
    name: str
    primitive: str
    samples_ns: tuple[int, ...]
    summary: Summary
    warmup: int
    target_samples: int
    budget_s: float
    target_reached: bool
    elapsed_ns: int
    payload_bytes: int
    requested: Pragmas | None = None
    effective: Pragmas | None = None
    device_flushes: tuple[FlushDelta, ...] = ()
    syncs_issued: int | None = None
    ci_target_pct: float | None = None
    ci_target_met: bool | None = None
    stop_reason: str | None = None
    phases: int = 1
    slice_counts: tuple[int, ...] = ()
    slice_rounds: tuple[int, ...] = ()
    earlier: tuple[EarlierRun, ...] = ()


@dataclass(frozen=True)
class ProcessActivity:
    """One other process seen busy during a round: ``pid``, ``name``, the CPU time it used
    (``cpu_s``) and the bytes it caused to be written to storage (``write_bytes``, from
    ``/proc/<pid>/io`` through psutil; None where the platform or permissions do not say)."""

    pid: int
    name: str
    cpu_s: float
    write_bytes: int | None = None


@dataclass(frozen=True)
class RoundActivity:
    """What the machine did besides fsyncbench while one round ran (``run --rounds``), read
    before and after the round (:mod:`fsyncbench.measure.disturbance`).

    ``round`` is 1-based; ``attempt`` 1 the first measurement, 2 and more a retake of that
    round; ``kept`` whether this attempt's samples are in the results (a disturbed round
    that was retaken quietly is recorded, not kept). ``elapsed_ns``: the round's wall time.
    CPU (shares of all CPUs' time over the round, in %): ``cpu_other_pct`` used by processes
    other than fsyncbench's, ``cpu_steal_pct`` taken by the hypervisor (Linux ``/proc/stat``
    steal), ``cpu_pressure_pct`` the share of wall time some runnable task waited for a CPU
    and ``io_pressure_pct`` some task waited for I/O, fsyncbench's own waits included
    (Linux pressure stall information, ``/proc/pressure``), ``cpu_wait_pct`` the share of the
    round's measuring time fsyncbench's measuring thread was ready to run but waited for a
    CPU (its run-queue wait, ``/proc/thread-self/schedstat``); ``load_avg_1m`` the 1-minute
    load average at the round's end and ``cpu_count`` the logical CPUs it compares with.
    Device (``device``, the disk holding the bytes): ``device_flushes`` it completed during
    the round's timed windows, ``other_flushes`` those estimated to be other processes'
    (their rate in ``quiet_s`` seconds in which fsyncbench issued no sync, times the timed
    windows' length), ``other_writes_bytes`` what other processes caused to be written.
    ``processes``: the busiest other processes (CPU or writes). ``not_measured``: each
    figure left None with the reason. ``disturbed``: the disturbances that could explain
    the round's tail ("disk", "cpu", "steal"; empty: quiet), each judged against its
    threshold in :mod:`fsyncbench.measure.disturbance`.
    """

    round: int
    attempt: int = 1
    kept: bool = True
    elapsed_ns: int = 0
    cpu_count: int | None = None
    load_avg_1m: float | None = None
    cpu_other_pct: float | None = None
    cpu_steal_pct: float | None = None
    cpu_pressure_pct: float | None = None
    io_pressure_pct: float | None = None
    cpu_wait_pct: float | None = None
    device: str | None = None
    device_flushes: int | None = None
    other_flushes: float | None = None
    quiet_s: float | None = None
    other_writes_bytes: int | None = None
    processes: tuple[ProcessActivity, ...] = ()
    not_measured: tuple[str, ...] = ()
    disturbed: tuple[str, ...] = ()
