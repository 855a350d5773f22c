"""Frozen dataclasses shared by every module; no I/O here.

Units live in field names: ``_ns`` nanoseconds, ``_ms`` milliseconds, ``_bytes`` bytes,
``_s`` seconds. Everything here converts to plain JSON and back with
:mod:`fsyncbench.jsonable`; the report schema (see ``docs/report-schema.md``) is these classes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

#: Path verdicts, strongest claim last (docs/verdicts.md says what each means).
#: Version of the report format written by this fsyncbench (these dataclasses); the store
#: (:mod:`fsyncbench.report.store`) refuses to load a newer one.
#: 5: raw-sample lists of 4,096 samples or more packed into one string each
#: (:func:`fsyncbench.report.store.pack_samples`: a default run's report 1.3 MB, was ~10 MB);
#: 4: what the machine did besides the measurement in each round (``Report.activity``:
#: CPU, pressure, other processes' I/O and flushes) and which rounds were retaken for it;
#: 3: earlier runs of the same measurement per result (``Result.earlier``) and intervals
#: that include the spread between runs (``Interval.runs``); 2: slice boundaries and rounds
#: per result, intervals valid for dependent samples (``Interval``; still read: one run's
#: intervals); 1: intervals that assume independent samples (still read: their
#: ``ci_method`` is "bootstrap" or "order-statistic" and renderers say what that means).
SCHEMA_VERSION = 5

NO_FLUSH = "no_flush"
VOLATILE_CACHE = "volatile_cache"
HONEST_FLUSH = "honest_flush"
UNVERIFIABLE = "unverifiable"
PATH_VERDICTS = (NO_FLUSH, VOLATILE_CACHE, UNVERIFIABLE, HONEST_FLUSH)

#: How a path verdict was established (docs/verdicts.md, "strength"), strongest
#: first: a power cut lost acknowledged commits; measured facts (filesystem and stack facts,
#: device flush/write counters, libc vs raw syscall, the dirty-size sweep); inferred from
#: identity, platform semantics or latency bands; "none" when nothing decided.
PROVEN = "proven"
MEASURED = "measured"
INFERRED = "inferred"
NO_STRENGTH = "none"
STRENGTHS = (PROVEN, MEASURED, INFERRED, NO_STRENGTH)

#: Finding levels, mildest first.
INFO = "info"
WARNING = "warning"
RISK = "risk"


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
class FlushDelta:
    """Change of one disk's flush counters across a workload (``/sys/block/<disk>/stat``
    fields 16-17, kernel >= 5.5; https://www.kernel.org/doc/html/latest/block/stat.html).

    ``flushes``/``flush_time_ms`` are None when the counter is not available. ``writes`` is
    the change of stat field 5 (write I/Os completed): whether the data reached this device
    at all while the syncs ran (None: not read, as in reports written before it existed).
    """

    device: str
    flushes: int | None
    flush_time_ms: int | None
    writes: int | None = None


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


@dataclass(frozen=True)
class Mount:
    """The mount holding the target, from ``/proc/self/mountinfo`` (proc(5)) or psutil.

    ``root`` is the directory of the filesystem mounted here (mountinfo field 4): "/"
    unless this is a bind mount of a subdirectory; None when not known (psutil).
    """

    mount_point: str
    fs_type: str
    source: str
    options: tuple[str, ...] = ()
    super_options: tuple[str, ...] = ()
    device_number: str | None = None
    root: str | None = None


#: ``RaidController.protection``: what the controller reports of the backup power of its
#: write cache (a battery, a supercapacitor with flash: CacheVault, FBWC, ZMM).
PROTECTION_OK = "ok"  # present and ready: the cache survives a power cut
PROTECTION_FAILED = "failed"  # present but failed, or absent: the cache is volatile
PROTECTION_NOT_READY = "not-ready"  # charging, learning, degraded: not (yet) to be relied on


@dataclass(frozen=True)
class RaidController:
    """A hardware RAID controller (or host bus adapter) a disk is a volume of, found in
    ``/sys`` (Linux: the SCSI host's driver, ``/sys/class/scsi_host/hostN/proc_name``, and
    the volume's SCSI vendor/model) and, where its vendor's tool is installed, read with it
    (fsyncbench.host._raid). Only what was read is set; None = not read.

    ``driver`` is the kernel driver (``megaraid_sas``, ``hpsa``...), ``family`` the product
    line it serves, ``host`` the SCSI host (``host0``). ``tool`` names the vendor tool that
    reads it (``storcli64``), ``settles`` the one command that shows its cache policy and
    backup power. ``write_cache`` is the controller's write policy for this volume as read:
    "write back" or "write through"; ``protection`` one of :data:`PROTECTION_OK`,
    :data:`PROTECTION_FAILED`, :data:`PROTECTION_NOT_READY`, with ``protection_detail`` the
    words read (``CacheVault CVPM05 Optimal``); ``drive_cache`` the physical drives' own
    write caches behind it ("enabled"/"disabled"). ``read_by`` is the command that was run
    ("" when none was); ``note`` says why something could not be read. ``has_cache`` False
    marks an adapter without a write cache of its own (a SAS HBA: its disks' caches count).
    """

    driver: str
    family: str
    host: str | None = None
    tool: str | None = None
    settles: str = ""
    has_cache: bool = True
    write_cache: str | None = None
    protection: str | None = None
    protection_detail: str = ""
    drive_cache: str | None = None
    read_by: str = ""
    note: str = ""


@dataclass(frozen=True)
class BlockDevice:
    """A block device behind the target (a layer of the stack, or a disk at its bottom).

    Values come from ``/sys/block/<name>/`` (Documentation/ABI/stable/sysfs-block) on Linux,
    ``diskutil`` on macOS and ``IOCTL_STORAGE_QUERY_PROPERTY`` on Windows
    (:mod:`fsyncbench.host._windows`); ``write_cache`` is "write back" / "write through"
    (Linux's sysfs text; Windows' write-cache property mapped to the same words); None = not
    known. ``removable`` (removable media) and ``flush_supported`` (whether the disk accepts
    a cache flush) are reported by Windows only. ``power_protection`` names who says the
    disk's write cache survives a power cut (:data:`POWER_PROTECTION_NV_CACHE`,
    :data:`POWER_PROTECTION_USER_POLICY`); empty where nothing says so. ``controller`` is the
    RAID controller this disk is a volume of (:class:`RaidController`; None: none found).
    """

    name: str
    model: str | None = None
    vendor: str | None = None
    firmware: str | None = None
    serial: str | None = None
    rotational: bool | None = None
    write_cache: str | None = None
    fua: bool | None = None
    transport: str | None = None
    has_flush_counters: bool = False
    removable: bool | None = None
    flush_supported: bool | None = None
    power_protection: tuple[str, ...] = ()
    controller: RaidController | None = None


#: ``BlockDevice.power_protection``: the disk's driver reports a battery-backed write cache
#: (Windows STORAGE_WRITE_CACHE_PROPERTY ``NVCacheEnabled``).
POWER_PROTECTION_NV_CACHE = "nv-cache"
#: ``BlockDevice.power_protection``: the user marked the write cache power-protected in
#: Windows' disk policy ("Turn off Windows write-cache buffer flushing on the device":
#: STORAGE_WRITE_CACHE_PROPERTY ``UserDefinedPowerProtection``); Windows then sends the disk
#: no flush at all. A declaration, like ``--assume plp``, not a measurement.
POWER_PROTECTION_USER_POLICY = "user-policy"


@dataclass(frozen=True)
class Virtualization:
    """Signs of running under a hypervisor or in a container; None = could not tell.

    ``virtual_disk_hint`` names a disk under the target whose model or bus is an emulated or
    virtual disk's (``PhysicalDrive0 model 'QEMU HARDDISK'``): a guest inferred from the
    disk's identity, not a hypervisor's own flag (recorded on Windows, where no such flag is
    read: :mod:`fsyncbench.host._windows`, and on Linux where no other sign of a hypervisor
    is seen: :mod:`fsyncbench.host._linux`). ``container_evidence`` says what ``container``
    rests on, or why a sign was not taken as a container (a ``/.dockerenv`` nothing else
    confirms): fsyncbench.host._virt; "" where nothing was seen.
    """

    hypervisor_flag: bool | None = None
    dmi_vendor: str | None = None
    dmi_product: str | None = None
    detect_virt: str | None = None
    container: str | None = None
    kernel_hint: str | None = None
    mac_vmm_present: bool | None = None
    virtual_disk_hint: str | None = None
    container_evidence: str = ""

    @property
    def virtualized(self) -> bool | None:
        """True when any sign points to a hypervisor, False when checked and none did."""
        if self.hypervisor_flag or self.mac_vmm_present or self.kernel_hint:
            return True
        if self.virtual_disk_hint:
            return True
        if self.detect_virt and self.detect_virt not in ("none",):
            return True
        if self.hypervisor_flag is False or self.mac_vmm_present is False:
            return False
        return None


#: What a storage layer does with a flush (``StorageLayer.flush``).
FLUSH_PASSES_DOWN = "passes-down"  # partition, dm, md, a filesystem, overlay upper dir
FLUSH_FSYNCS_BACKING_FILE = "fsyncs-backing-file"  # loop: the flush becomes vfs_fsync(backing)
FLUSH_DROPPED = "dropped"  # overlay volatile, a nobarrier/barrier=0 filesystem
FLUSH_NOTHING_TO_FLUSH = "nothing-to-flush"  # RAM holds the bytes: tmpfs, ramfs, zram, brd
FLUSH_FORWARDED = "forwarded"  # FUSE daemon, network filesystem, network disk
FLUSH_TO_HOST = "to-host"  # a virtual disk: the hypervisor gets the flush
FLUSH_TO_DEVICE = "to-device"  # a physical disk: its cache gets a flush command
FLUSH_UNKNOWN = "unknown"


@dataclass(frozen=True)
class StorageLayer:
    """One layer of the storage stack from the target directory down to the media.

    ``kind``: ``filesystem``, ``overlay``, ``fuse``, ``network-fs``, ``loop``, ``dm``, ``md``,
    ``partition``, ``disk``, ``virtual-disk``, ``ram-disk``, ``network-disk``, ``pmem``.
    ``name`` identifies it (a mount point for filesystems, a kernel name for block devices,
    the backing file for a loop device's file). ``flush`` is one of the ``FLUSH_*`` values.
    ``depth`` is 0 for the top; a layer's children follow it with depth + 1 (a walk in
    order, so md/dm with several slaves give several subtrees). ``holds_bytes`` marks the
    media at the bottom: ``volatile`` True for RAM, False for a disk's stable media (its
    write cache is in ``device.write_cache``), None where it cannot be seen (a server, a
    hypervisor). ``note`` says what could not be followed (a relative overlay upper dir, a
    deleted backing file, a ZFS pool). Source of each fact: fsyncbench.host._stack.
    """

    kind: str
    name: str
    flush: str = FLUSH_UNKNOWN
    depth: int = 0
    holds_bytes: bool = False
    volatile: bool | None = None
    fs_type: str | None = None
    options: tuple[str, ...] = ()
    source: str | None = None
    device: BlockDevice | None = None
    note: str = ""


@dataclass(frozen=True)
class StorageTarget:
    """The directory measured and the storage path under it.

    ``chain`` lists the block devices walked from the mount's device down (e.g.
    ``("nvme0n1p2", "nvme0n1")``, ``("loop0", "vda")`` for a loop device whose backing file
    lives on vda); ``disks`` are the block devices at the bottom that hold the bytes (not a
    loop device: its backing file's storage is followed instead); ``layers`` the whole
    stack from the target's filesystem to the media (empty in reports written before it
    existed: the engine then derives a short stack from ``mount`` and ``disks``);
    ``darwin`` holds parsed ``diskutil info -plist`` keys on macOS. ``declared`` holds
    facts the user stated that the machine cannot show (``"plp"``: the drive has power-loss
    protection), recorded as user-declared. ``firmlink`` is the firmlinked directory on the
    macOS system volume through which ``path`` reaches ``mount`` (``/Users``: macOS 10.15+
    keeps it on the Data volume, ``/System/Volumes/Data``; fsyncbench.host._darwin), None
    when ``path`` is under no firmlink (and in reports written before it was recorded).
    """

    path: str
    mount: Mount | None = None
    chain: tuple[str, ...] = ()
    disks: tuple[BlockDevice, ...] = ()
    darwin: dict[str, Any] | None = None
    layers: tuple[StorageLayer, ...] = ()
    declared: tuple[str, ...] = ()
    firmlink: str | None = None


@dataclass(frozen=True)
class Host:
    """Facts about the machine and the target directory, recorded with every report.

    Only ``hostname``, ``os_name`` (``platform.system()``: Linux, Darwin, Windows) and
    ``target`` are required, so a report for a host not at hand can be written by hand.
    """

    hostname: str
    os_name: str
    target: StorageTarget
    virtualization: Virtualization = field(default_factory=Virtualization)
    os_release: str = ""
    os_version: str = ""
    machine: str = ""
    python_version: str = ""
    sqlite_version: str = ""
    sqlite_library: str | None = None
    sqlite_compile_options: tuple[str, ...] = ()
    cpu_brand: str | None = None
    cpu_count_logical: int | None = None
    cpu_count_physical: int | None = None
    memory_total_bytes: int | None = None
    ld_preload: str | None = None


@dataclass(frozen=True)
class Finding:
    """One thing the verdict engine concluded.

    ``code`` is a stable kebab-case id; ``level`` is info/warning/risk; ``subject`` is the
    result name or "path"; ``evidence`` holds the values the rule used; ``source`` cites the
    threshold or platform fact. Path-rule findings also say how they know (``strength``,
    one of ``STRENGTHS``), which path verdict they point to (``points_to``) and their
    ``stance`` towards the verdict given: ``decides``, ``agrees`` or ``disagrees`` (a
    weaker signal pointing elsewhere, shown, never hidden); "" for other findings.
    """

    code: str
    level: str
    subject: str
    message: str
    advice: str
    evidence: dict[str, Any] = field(default_factory=dict)
    source: str = ""
    strength: str = ""
    points_to: str | None = None
    stance: str = ""


@dataclass(frozen=True)
class ResultVerdict:
    """Verdict for one result: is the storage path honest, does the pragma promise durability.

    ``strength`` says how the path verdict was established (``STRENGTHS``; "" in reports
    written before it existed).
    """

    subject: str
    path_verdict: str
    config_durable: bool | None
    decided_by: str
    strength: str = ""


@dataclass(frozen=True)
class Verdict:
    """All verdicts of a report; ``path_verdict`` is the storage path's overall verdict and
    ``strength`` how it was established (``STRENGTHS``; "" in older reports)."""

    path_verdict: str
    decided_by: str
    results: tuple[ResultVerdict, ...] = ()
    findings: tuple[Finding, ...] = ()
    strength: str = ""


@dataclass(frozen=True)
class PowerlossModelOutcome:
    """What one persistence model lost for one configuration (``fsyncbench powerloss``,
    :mod:`fsyncbench.powerloss.matrix`).

    ``states``: crash states checked (a state reached from two crash points counts twice);
    ``distinct_states``: of them, different on disk; ``sampled``: some points had more states
    than were tried (the figures are then lower bounds); ``states_losing``: states missing
    at least one acknowledged commit; ``worst_lost``/``mean_lost``: acknowledged commits
    missing, over the states that are not corrupt; ``corrupt_states``: unopenable or failing
    integrity_check; ``invalid``: why the model does not apply ("" if it does; then every
    figure is 0); ``worst``: how to rebuild the worst state and what it lost; ``psow``: the
    powersafe-overwrite flag of the trace this model was applied to; ``kept_at``: where
    ``--keep-failures`` wrote the worst state ("" if nowhere); ``known_corrupt``: the
    known-corrupt states built from the same trace (:mod:`fsyncbench.powerloss.proofs`)
    that the same checker opened, ``known_corrupt_flagged`` how many of them it called
    corrupt and ``known_corrupt_missed`` the names of the others (0, 0, "" in reports
    written before the proof existed): ``corrupt_states`` 0 is evidence only when every
    known-corrupt state was flagged."""

    model: str
    crash_points: int
    states: int
    distinct_states: int
    sampled: bool
    states_losing: int
    worst_lost: int
    mean_lost: float
    corrupt_states: int
    invalid: str
    worst: str
    psow: bool = True
    kept_at: str = ""
    known_corrupt: int = 0
    known_corrupt_flagged: int = 0
    known_corrupt_missed: str = ""

    @property
    def checker_proven(self) -> bool:
        """True when the checker flagged every known-corrupt state of this trace (and there
        was at least one)."""
        return self.known_corrupt > 0 and self.known_corrupt_flagged == self.known_corrupt

    @property
    def loses(self) -> bool:
        """True when some state lost an acknowledged commit or was corrupt."""
        return self.worst_lost > 0 or self.corrupt_states > 0


@dataclass(frozen=True)
class PowerlossClaim:
    """One source's word on a configuration after a power cut
    (:mod:`fsyncbench.powerloss.promises`): ``durable`` "durable", "not durable" or "not
    stated"; ``consistent`` False where the source says it may corrupt, None where it says
    nothing of it; ``why`` (a quote, or what the recording showed) and ``source`` (a URL,
    or the recording's SQLite)."""

    durable: str
    consistent: bool | None
    why: str
    source: str

    def short(self) -> str:
        """``not durable, may corrupt`` / ``durable``: a table cell."""
        return self.durable + (", may corrupt" if self.consistent is False else "")


#: :meth:`PowerlossConfig.agreement` where a model lost nothing the documentation allows.
NO_LOSS_UNDER_MODEL = "no loss under this model"


@dataclass(frozen=True)
class PowerlossConfig:
    """One configuration: its recorded trace's size, what is expected of it
    (``documented_durable``, ``documented_consistent``, ``documented_why`` with its sources:
    the documentation where it states durability, else what the recording observed; the
    figures are compared with these) and each model's outcome; the two sources apart in
    ``documentation`` and ``observation`` (None in reports written before they were kept
    apart); in WAL mode ``checkpoints`` (the close's included) and ``wal_restarts`` the
    recording crossed (0 in reports written before they were counted)."""

    pragmas: Pragmas
    commits: int
    writes: int
    syncs: int
    dirsyncs: int
    psow: bool
    documented_durable: bool
    documented_consistent: bool
    documented_why: str
    models: tuple[PowerlossModelOutcome, ...]
    checkpoints: int = 0
    wal_restarts: int = 0
    documentation: PowerlossClaim | None = None
    observation: PowerlossClaim | None = None

    def agreement(self, m: PowerlossModelOutcome) -> str:
        """``agrees``; ``DISAGREES`` (documented durable or consistent, and this model
        lost a commit or corrupted the database); ``no loss under this model`` (documented
        not durable, nothing lost here: one model's silence does not show the documentation
        too cautious, a harsher model or real storage may lose); "" for an invalid model."""
        if m.invalid:
            return ""
        if (self.documented_durable and m.worst_lost) or (
            self.documented_consistent and m.corrupt_states
        ):
            return "DISAGREES"
        if not self.documented_durable and not m.loses:
            return NO_LOSS_UNDER_MODEL
        return "agrees"


@dataclass(frozen=True)
class PowerlossResult:
    """Every configuration x model, with how it was made: ``semantics`` (linux/macos),
    ``sector_bytes`` (torn), ``seed``, ``max_states``/``samples`` per crash point, the SQLite
    that recorded (apsw's) and the stdlib's, the wall time, and ``wal_autocheckpoint`` (the
    WAL pages between automatic checkpoints; None: SQLite's default, 1000)."""

    configs: tuple[PowerlossConfig, ...]
    models: tuple[str, ...]
    semantics: str
    commits: int
    payload_bytes: int
    sector_bytes: int
    seed: int
    max_states: int
    samples: int
    sqlite_version: str
    stdlib_sqlite_version: str
    apsw_version: str
    elapsed_ns: int
    wal_autocheckpoint: int | None = None


# --------------------------------------------------------------------------- the kill matrix
# What `fsyncbench crash` counts (:mod:`fsyncbench.crash`, which re-exports these): a report of
# kind "crash" keeps one of the two experiments (``Report.crash``, ``Report.crash_power_loss``).


@dataclass(frozen=True)
class KillOutcome:
    """One kill: where the child died and what the restarted run cost.

    ``seq`` 1-10 and ``step`` name the step, ``window`` is one of :data:`WINDOWS`;
    ``kill_signal`` is the signal ``waitpid`` reported (9 = SIGKILL); ``restarts`` counts the
    runs needed to complete afterwards; ``duplicate_writes`` are outside-world rows beyond a
    clean run's; ``extra_tokens`` are billed tokens beyond a clean run's.
    """

    seq: int
    step: str
    window: str
    kill_signal: int
    restarts: int
    duplicate_writes: int
    extra_tokens: int


@dataclass(frozen=True)
class PolicyRow:
    """One policy's 30 kills and the table row derived from them.

    ``kills_causing_duplicates`` counts kills with at least one duplicate write;
    ``worst_duplicates`` is the most duplicates after one kill; ``mean_extra_tokens`` is the
    mean over all kills (tokens); ``worst_extra_pct`` is the worst as a percentage of
    ``clean_run_tokens``; ``clean_run_writes`` is the number of writes of a clean run.
    """

    policy: str
    label: str
    kills: tuple[KillOutcome, ...]
    kills_causing_duplicates: int
    worst_duplicates: int
    mean_extra_tokens: float
    worst_extra_tokens: int
    worst_extra_pct: float
    clean_run_tokens: int
    clean_run_writes: int


@dataclass(frozen=True)
class KillMatrix:
    """The whole kill matrix.

    ``requested``/``effective`` are the journal's pragmas as asked and as SQLite reports them;
    ``rows`` one per policy in :data:`POLICIES` order; ``journal_commit_ns`` the raw commit
    latencies (ns, ``time.perf_counter_ns`` around BEGIN/INSERT one step row/COMMIT) of every
    step-journal commit the children made, killed children included, in run order;
    ``elapsed_ns`` the wall time of the whole matrix (databases made, 4 clean reference
    runs, 120 kills, their restarts, counting; not the scratch directory's removal);
    ``kill_count`` the SIGKILLs sent; ``model_tokens`` the cost
    model, turn 1 first; ``sqlite_version`` the library the children used.
    """

    requested: Pragmas
    effective: Pragmas
    rows: tuple[PolicyRow, ...]
    journal_commit_ns: tuple[int, ...]
    elapsed_ns: int
    kill_count: int
    model_tokens: tuple[int, ...]
    sqlite_version: str


@dataclass(frozen=True)
class ReplayResult:
    """Replaying a completed run under a journal policy.

    ``first_run_effects``/``first_run_tokens``: outside-world rows (writes and billed model
    calls) and tokens of the first, complete run. ``replay_effects``/``replay_tokens``: the
    same made by the replay (0 when the journal works). ``replay_steps_executed`` and
    ``replay_steps_replayed`` count steps run vs. answered from the journal;
    ``same_conversation`` is True when both runs ended with the same conversation.
    """

    policy: str
    run_id: str
    steps_recorded: int
    first_run_effects: int
    first_run_tokens: int
    replay_effects: int
    replay_tokens: int
    replay_steps_executed: int
    replay_steps_replayed: int
    same_conversation: bool


@dataclass(frozen=True)
class ReorderResult:
    """A crash, then a restart whose code runs two steps in swapped order.

    The first run was SIGKILLed (``kill_signal``) at ``killed_at_seq``/``killed_at_window``;
    the restart ran ``code_order``. ``stopped`` is True when it stopped with
    :class:`NonDeterminismError`, whose ``error_step``, ``recorded_name``,
    ``requested_name`` and ``message`` are copied here; ``restart_effects`` counts
    outside-world rows the restart made before stopping.
    """

    run_id: str
    killed_at_seq: int
    killed_at_window: str
    kill_signal: int
    code_order: tuple[str, ...]
    stopped: bool
    error_step: int | None
    recorded_name: str | None
    requested_name: str | None
    message: str
    restart_effects: int


@dataclass(frozen=True)
class PowerLossExperiment:
    """The kill matrix under simulated power loss (``fsyncbench crash --powerloss``): one
    :class:`KillMatrix` per journal pragma combination, in the order asked.

    ``model``/``semantics``: the persistence model and sync semantics of every cut
    (:data:`fsyncbench.powerloss.models.MODELS`, ``SEMANTICS``); ``choice``: which state a
    cut leaves where the model allows several (:data:`fsyncbench.powerloss.rebase.CUT_CHOICE`);
    ``elapsed_ns``: wall time of all matrices; ``kill_count``: SIGKILLs sent, each followed
    by a cut; ``sqlite_version``: the SQLite the children used (apsw's). The matrices'
    ``journal_commit_ns`` are empty: their commits ran through a recording VFS, so their
    latency is not the journal's."""

    model: str
    semantics: str
    choice: str
    matrices: tuple[KillMatrix, ...]
    elapsed_ns: int
    kill_count: int
    sqlite_version: str


@dataclass(frozen=True)
class CrashExperiment:
    """What ``fsyncbench crash`` shows: the kill matrix and the two hazards."""

    matrix: KillMatrix
    replay: ReplayResult
    reorder: ReorderResult


@dataclass(frozen=True)
class WriterLane:
    """One writer process of a concurrent-writers measurement (``run --writers``): its own
    connection to the shared database, committing step rows until the window closed.

    Per commit, in time order: ``start_samples_ns`` when it began (ns after the window
    opened), ``samples_ns`` its latency from ``BEGIN`` to the end of ``COMMIT`` (every wait
    for the write lock, the busy handler's sleeps and retries after SQLITE_BUSY included) and
    ``lock_wait_samples_ns`` the part spent before the write lock was held. ``busy_errors``
    counts the SQLITE_BUSY errors that reached the writer (each retried; the busy handler's
    own waits raise none); ``abandoned`` the commits still without the lock when the window
    had closed and the busy timeout had run out (at most one: it began
    ``abandoned_start_ns`` after the window opened and waited ``abandoned_wait_ns``);
    ``error`` is "" or why the writer stopped early.
    """

    writer: int
    start_samples_ns: tuple[int, ...]
    samples_ns: tuple[int, ...]
    lock_wait_samples_ns: tuple[int, ...]
    busy_errors: int = 0
    abandoned: int = 0
    abandoned_start_ns: int = 0
    abandoned_wait_ns: int = 0
    error: str = ""


@dataclass(frozen=True)
class WritersSummary:
    """Statistics of one :class:`WritersPoint`, derived from its lanes' raw samples
    (:func:`fsyncbench.measure.concurrency.summarize`).

    Over all commits: ``p50_interval``/``p99_interval`` (95 % intervals, a jackknife over
    time slices of the window), ``p999_ns``, ``max_ns``; ``commits_per_s``/``steps_per_s``
    the commits (steps) finished inside the window per second of it. ``lock_wait_share``:
    the share of all commit time spent waiting for the write lock (0-1). Per writer, in
    writer order: ``writer_commits_per_s`` and ``writer_longest_ns`` (the longest commit,
    an abandoned wait included). ``fairness`` is Jain's index of the writers' commit rates
    (1 = equal shares, 1/N = one writer got everything; Jain, Chiu & Hawe 1984, DEC-TR-301).
    Over time rather than over commits: ``oldest_wait_p99_ns``/``oldest_wait_max_ns`` are
    the p99 and maximum, over 1 ms instants of the window, of how long the oldest commit in
    progress at that instant had been running: a writer starved for seconds makes few
    commits, so it hides in a percentile over commits and not in this one. ``starved`` lists
    the writers that got less than :data:`fsyncbench.measure.concurrency.STARVED_SHARE` of
    an equal share of the commits or waited longer than
    :data:`fsyncbench.measure.concurrency.STARVED_WAIT_SHARE` of the window in one commit.
    """

    commits: int
    steps: int
    window_ns: int
    commits_per_s: float
    steps_per_s: float
    p50_interval: Interval
    p99_interval: Interval
    p999_ns: float
    max_ns: float
    lock_wait_share: float
    busy_errors: int
    abandoned: int
    writer_commits_per_s: tuple[float, ...]
    writer_longest_ns: tuple[float, ...]
    fairness: float
    oldest_wait_p99_ns: float
    oldest_wait_max_ns: float
    starved: tuple[int, ...] = ()


@dataclass(frozen=True)
class WritersPoint:
    """One pragma combination at one number of concurrent writers (``run --writers``):
    ``writers`` processes, each with its own connection to one fresh database, committing
    ``steps_per_commit`` step rows of ``payload_bytes`` per transaction for
    ``window_ns``. ``begin`` is the transaction's start ("immediate": ``BEGIN IMMEDIATE``
    takes the write lock at once; "deferred": at the first INSERT) and ``busy_timeout_ms``
    SQLite's busy timeout (its handler sleeps 1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100
    ms, then 100 ms, between tries: sqliteDefaultBusyCallback in SQLite's main.c).
    ``primitive`` is the sync call behind each commit (as :attr:`Result.primitive`);
    ``requested``/``effective`` the pragmas asked for and read back; ``activity`` what the
    rest of the machine did meanwhile (its CPU share, steal, writes and busiest processes;
    device flushes are not told apart from the writers' own, so it is not judged; None:
    not read).
    """

    requested: Pragmas
    effective: Pragmas
    writers: int
    begin: str
    busy_timeout_ms: int
    steps_per_commit: int
    payload_bytes: int
    window_ns: int
    primitive: str
    lanes: tuple[WriterLane, ...]
    summary: WritersSummary
    activity: RoundActivity | None = None

    @property
    def name(self) -> str:
        """The configuration's label and the writer count, e.g. ``wal/full x4``, with the
        steps per commit when more than one (``wal/full x4, 10 steps``)."""
        steps = f", {self.steps_per_commit} steps" if self.steps_per_commit > 1 else ""
        return f"{self.requested.label} x{self.writers}{steps}"


def recorded_options(command_line: Sequence[str]) -> dict[str, str]:
    """The long options of a recorded ``command_line`` with their values, as argparse
    reads them (``--flag VALUE`` or ``--flag=VALUE``; a repeated one's last value, as
    argparse keeps; "" for a flag that ends the line). Report renderers read what a run was
    asked from here."""
    args = list(command_line)
    out: dict[str, str] = {}
    for i, arg in enumerate(args):
        flag, eq, value = arg.partition("=")
        if flag.startswith("--"):
            out[flag] = value if eq else (args[i + 1] if i + 1 < len(args) else "")
    return out


@dataclass(frozen=True)
class Report:
    """A saved run: the JSON file's top level. ``schema_version`` guards the format.

    ``evidence`` holds what ``fsyncbench audit`` measured beyond the results (None in reports
    written by ``run`` or by fsyncbench versions before the audit; schema 1 either way).
    ``floors`` are the tool's own floor measurements (kind "floor": the empty timing loop,
    an in-memory commit, an in-memory write); results within 2x of theirs are labelled "at
    the tool's floor" (``stats.at_tool_floor``). Empty in older reports. ``elapsed_ns`` is
    the wall time of the whole command (None in reports written before it was recorded).
    ``powerloss`` holds ``run --powerloss``'s simulated power cuts (None without it; older
    fsyncbench versions ignore the field), and the whole result of ``fsyncbench powerloss``
    in a report of kind "powerloss". A report of kind "crash" (``fsyncbench crash``) keeps
    its kill matrix in ``crash``, or with ``--powerloss`` in ``crash_power_loss``. Reports
    of these two kinds hold no ``results`` and judge no storage path (their verdict is
    unverifiable, decided by nothing): ``compare`` and fleets leave them out.
    ``activity`` is what the machine did besides the measurement in each round and each
    retake of a disturbed round (schema 4; empty in older reports and in audits), and
    ``retake_budget_s`` the extra time retakes were allowed (0: ``--no-retake-disturbed``;
    None: not recorded). ``writers`` holds ``run --writers``'s concurrent writers
    (:class:`WritersPoint`; empty without it, and in reports before it existed).
    """

    schema_version: int
    tool_version: str
    kind: str
    created_utc: str
    command_line: tuple[str, ...]
    host: Host
    results: tuple[Result, ...]
    verdict: Verdict
    notes: tuple[str, ...] = ()
    evidence: Evidence | None = None
    floors: tuple[Result, ...] = ()
    elapsed_ns: int | None = None
    powerloss: PowerlossResult | None = None
    crash: CrashExperiment | None = None
    crash_power_loss: PowerLossExperiment | None = None
    activity: tuple[RoundActivity, ...] = ()
    retake_budget_s: float | None = None
    writers: tuple[WritersPoint, ...] = ()


#: Report kinds without latency results: what ``fsyncbench crash`` and ``fsyncbench
#: powerloss`` save (``compare`` and fleets leave them out).
EXPERIMENT_KINDS = ("crash", "powerloss")


# --------------------------------------------------------------------------- audit evidence
# What `fsyncbench audit` measures beyond the results; see docs/report-schema.md. Every class
# here can be written by hand (only the fields without defaults are required).


#: Sync-like system calls that make nothing durable (sync_file_range(2): "This system call
#: does not flush disk write caches").
NON_DURABLE_SYNCS = frozenset({"sync_file_range", "sync_file_range2"})


@dataclass(frozen=True)
class SyncTrace:
    """Sync system calls observed (strace, in a child process) while one pragma combination
    committed ``commits`` transactions: ``syscalls`` maps a call name (fsync, fdatasync,
    sync_file_range, syncfs, sync, msync) to its count over all those commits.

    ``ld_preload`` is the LD_PRELOAD the traced child ran with (None: unset). A trace run
    with the caller's LD_PRELOAD shows what reaches the kernel; one without it shows what
    SQLite itself asks for.
    """

    pragmas: Pragmas
    commits: int
    syscalls: dict[str, int]
    ld_preload: str | None = None
    method: str = "strace"

    @property
    def syncs_per_commit(self) -> float:
        """Sync calls per commit (S) that ask for durability: fsync, fdatasync, syncfs, sync,
        msync. ``sync_file_range`` is recorded but not counted: it "does not flush disk
        write caches" and writes no metadata (sync_file_range(2)), so it makes nothing
        durable."""
        durable = sum(n for name, n in self.syscalls.items() if name not in NON_DURABLE_SYNCS)
        return durable / self.commits if self.commits else 0.0


@dataclass(frozen=True)
class SyscallComparison:
    """The libc wrapper (``os.fdatasync``/``os.fsync``) against the raw system call
    (``syscall(SYS_fdatasync, fd)`` through ctypes) after identical 4 KiB writes, timed in
    interleaved blocks of ``syncs`` calls per side in total.

    ``*_flushes`` are device flushes counted during each side's blocks on the least-flushed
    leaf disk (None: no counter). ``syscall_number`` is the number used on ``machine``.
    """

    primitive: str
    syscall_number: int | None
    machine: str
    syncs: int
    libc_p50_ns: float
    syscall_p50_ns: float
    libc_flushes: int | None = None
    syscall_flushes: int | None = None
    libc_samples_ns: tuple[int, ...] = ()
    syscall_samples_ns: tuple[int, ...] = ()


@dataclass(frozen=True)
class SweepPoint:
    """One sync after writing ``dirty_bytes`` bytes: the sync's own latency."""

    dirty_bytes: int
    latency_ns: int


@dataclass(frozen=True)
class DirtySweep:
    """Sync latency against dirty bytes (4 KiB ... 64 MiB) and its least-squares fit
    latency = ``flush_cost_ns`` + bytes / ``bandwidth_bytes_per_s``.

    ``bandwidth_bytes_per_s`` is None when latency did not grow with the bytes written
    (slope <= 0: nothing was written anywhere); ``r_squared`` is the fit's R^2.
    """

    primitive: str
    flush_cost_ns: float
    bandwidth_bytes_per_s: float | None
    r_squared: float | None = None
    points: tuple[SweepPoint, ...] = ()


@dataclass(frozen=True)
class SecondFdCheck:
    """A write through one file descriptor, then a sync on a second descriptor of the same
    file (pg_test_fsync's "Test if fsync on non-write file descriptor is honored"), against
    write and sync on the same descriptor; ``syncs`` calls per side."""

    primitive: str
    syncs: int
    same_fd_p50_ns: float
    second_fd_p50_ns: float
    same_fd_flushes: int | None = None
    second_fd_flushes: int | None = None


@dataclass(frozen=True)
class EnvironmentFacts:
    """Environment facts the audit adds to the host record.

    ``ld_so_preload``: entries of ``/etc/ld.so.preload`` (preloaded into every process);
    ``preloaded_libraries``: libraries mapped into the measuring process (``/proc/self/maps``)
    that LD_PRELOAD or ld.so.preload named, or whose name is a known sync-disabling library;
    ``zfs_sync``: the ``sync`` property of the ZFS dataset holding the target
    (standard/always/disabled); ``strace``: the strace binary used (None: not found).
    """

    ld_so_preload: tuple[str, ...] = ()
    preloaded_libraries: tuple[str, ...] = ()
    zfs_sync: str | None = None
    strace: str | None = None


@dataclass(frozen=True)
class Evidence:
    """Everything ``fsyncbench audit`` measured beyond the flush and commit results.

    ``unavailable`` maps an evidence name (sync_traces, syscall_comparisons, dirty_sweep,
    second_fd, flush_counters) to the reason it is missing.
    """

    sync_traces: tuple[SyncTrace, ...] = ()
    syscall_comparisons: tuple[SyscallComparison, ...] = ()
    dirty_sweep: DirtySweep | None = None
    second_fd: SecondFdCheck | None = None
    environment: EnvironmentFacts = field(default_factory=EnvironmentFacts)
    unavailable: dict[str, str] = field(default_factory=dict)
