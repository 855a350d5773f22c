"""Builders of recorded facts (Host, Result) for verdict tests: no measurement here."""

from __future__ import annotations

import dataclasses

from fsyncbench.measure import stats
from fsyncbench.measure.intervals import METHOD_BLOCKS
from fsyncbench.model import (
    PROTECTION_OK,
    BlockDevice,
    FlushDelta,
    Host,
    Interval,
    Mount,
    Pragmas,
    ProcessActivity,
    RaidController,
    Report,
    Result,
    RoundActivity,
    StorageTarget,
    Summary,
    Virtualization,
)

#: Bare metal and a VM, as the cpuinfo hypervisor flag shows them.
BARE = Virtualization(hypervisor_flag=False)
VM = Virtualization(hypervisor_flag=True)
#: A consumer SSD with a volatile write cache and no known power-loss protection.
WB_SSD = BlockDevice("sda", rotational=False, write_cache="write back", has_flush_counters=True)


def host(
    os_name="Linux",
    fs_type="ext4",
    disks=(),
    virt=Virtualization(hypervisor_flag=False),
    darwin=None,
    ld_preload=None,
    mount_options=("rw", "relatime"),
) -> Host:
    return Host(
        hostname="case-host",
        os_name=os_name,
        target=StorageTarget(
            path="/data",
            mount=Mount("/data", fs_type, "/dev/x", tuple(mount_options)),
            chain=tuple(d.name for d in disks),
            disks=tuple(disks),
            darwin=darwin,
        ),
        virtualization=virt,
        ld_preload=ld_preload,
    )


def summary_at(p50_ns: float, spread: float = 1.5) -> Summary:
    """A summary whose percentiles sit around ``p50_ns`` (as recorded facts would)."""
    return Summary(
        count=1000,
        min_ns=p50_ns * 0.8,
        p50_ns=p50_ns,
        p90_ns=p50_ns * 1.2,
        p99_ns=p50_ns * spread,
        p999_ns=p50_ns * spread * 1.2,
        max_ns=p50_ns * 3,
        mean_ns=p50_ns * 1.05,
        stdev_ns=p50_ns * 0.1,
        ops_per_s=1e9 / (p50_ns * 1.05),
        p50_ci_ns=(p50_ns * 0.98, p50_ns * 1.02),
        p99_ci_ns=(p50_ns * spread * 0.9, p50_ns * spread * 1.1),
    )


def even_slices(n: int, slices: int = 10) -> tuple[int, ...]:
    """``n`` samples cut into ``slices`` consecutive slices of (nearly) equal size."""
    slices = max(1, min(slices, n))
    return tuple(n * (i + 1) // slices - n * i // slices for i in range(slices))


def _result(kind, name, primitive, p50_ns, samples=None, **kw) -> Result:
    if samples:
        kw.setdefault("slice_counts", even_slices(len(samples)))
        summary = stats.summarize(samples, kw["slice_counts"], kw.get("slice_rounds", ()))
    else:
        summary = summary_at(p50_ns)
    return Result(
        kind=kind,
        name=name,
        primitive=primitive,
        samples_ns=tuple(samples or ()),
        summary=summary,
        warmup=0,
        target_samples=1000,
        budget_s=10.0,
        target_reached=True,
        elapsed_ns=int(summary.mean_ns * summary.count),
        payload_bytes=kw.pop("payload_bytes", 4096),
        **kw,
    )


def flush(
    primitive: str,
    p50_ns: float,
    flushes: int | None = None,
    syncs: int = 1000,
    device: str = "sda",
) -> Result:
    deltas = () if flushes is None else (FlushDelta(device, flushes, flushes // 20),)
    return _result(
        "flush", f"write+{primitive}", primitive, p50_ns, device_flushes=deltas, syncs_issued=syncs
    )


def write(p50_ns: float) -> Result:
    return _result("write", "write (no sync)", "none", p50_ns, syncs_issued=0)


def commit(
    mode: str, sync: str, p50_ns: float, primitive: str = "fdatasync", fullfsync: bool | None = None
) -> Result:
    p = Pragmas(mode, sync, fullfsync)
    prim = "none" if sync == "OFF" else primitive
    return _result("commit", p.label, prim, p50_ns, requested=p, effective=p, payload_bytes=512)


#: fio writing beside a run (pid 812, 0.4 CPU seconds, 80 MiB written).
FIO = ProcessActivity(812, "fio", 0.4, 80 << 20)


def disturbed_by_fio(rep: Report) -> Report:
    """``rep`` as if its 3 rounds all stayed disturbed by fio's flushes on vda (4,000 of
    10,000), with a retake budget of 10 s spent."""
    rounds = tuple(
        RoundActivity(
            round=k,
            elapsed_ns=4_000_000_000,
            device="vda",
            device_flushes=10_000,
            other_flushes=4000.0,
            cpu_wait_pct=0.5,
            processes=(FIO,),
            disturbed=("disk",),
        )
        for k in range(1, 4)
    )
    return dataclasses.replace(rep, activity=rounds, retake_budget_s=10.0)


#: A MegaRAID controller whose write-back cache reads protected (CacheVault optimal).
PROTECTED = RaidController(
    "megaraid_sas",
    "Broadcom/LSI MegaRAID (also Dell PERC, Intel RAID)",
    host="host0",
    tool="storcli64",
    write_cache="write back",
    protection=PROTECTION_OK,
    protection_detail="CacheVault CVPM05 Optimal",
    drive_cache="disabled",
    read_by="storcli64 /call show all",
)


class ScriptedClock:
    """Stands in for time.perf_counter_ns: only the workload's run() moves it, by the next
    scripted duration, so every timed sample must equal exactly one scripted duration."""

    def __init__(self):
        self.now = 0

    def __call__(self):
        return self.now


class ScriptedWorkload:
    """Each run() (timed or not) advances the clock by the next scripted duration."""

    def __init__(self, clock, durations):
        self.clock = clock
        self.durations = iter(durations)
        self.prepared = []

    def prepare(self, i):
        self.prepared.append(i)
        return i

    def run(self, i):
        self.clock.now += next(self.durations)

    def close(self):
        pass


#: A powercut writer's run id and its HELLO (what it tells the listener when it connects).
WRITER_RUN_ID = "a" * 32
WRITER_HELLO = {
    "run_id": WRITER_RUN_ID,
    "host": "writer-host",
    "dir": "/data",
    "config": "wal/full",
    "pid": 4242,
    "started_utc": "2024-05-01T12:00:00Z",
}


def summary_only(
    name: str,
    p99,
    p50=None,
    kind: str = "commit",
    primitive: str | None = None,
    count: int = 1000,
    p99_ns: float | None = None,
    rounds50: tuple[float, ...] = (),
    rounds99: tuple[float, ...] = (),
    earlier: tuple = (),
) -> Result:
    """A summary-only result (no raw samples, as an old report holds it) whose summary stores
    ``p50``/``p99`` as its interval records (``p50`` None: 100 ns, 95-105; ``p99`` None: no
    record and no bounds, the percentile then ``p99_ns``), each round's p50/p99
    (``rounds50``/``rounds99``) and ``earlier`` runs; ``primitive`` None: ``none`` for a
    write, else fdatasync."""
    p50 = p50 or Interval(100.0, 95.0, 105.0, 0.02, 9.0, 10, METHOD_BLOCKS, None)
    s = dataclasses.replace(
        summary_at(100.0),
        count=count,
        p50_ns=p50.estimate_ns,
        p99_ns=p99.estimate_ns if p99 is not None else p99_ns,
        p50_ci_ns=p50.bounds,
        p99_ci_ns=p99.bounds if p99 is not None else None,
        p50_interval=p50,
        p99_interval=p99,
        ci_method=METHOD_BLOCKS,
        round_p50_ns=rounds50,
        round_p99_ns=rounds99,
    )
    if primitive is None:
        primitive = "none" if kind == "write" else "fdatasync"
    return dataclasses.replace(
        _result(kind, name, primitive, 100.0),
        summary=s,
        samples_ns=(),
        slice_counts=(),
        payload_bytes=512,
        earlier=earlier,
    )
