"""Orchestrates a run: plan the configurations, measure each one with device flush
counters read around it, summarise, judge, and assemble the report."""

from __future__ import annotations

import datetime as _dt
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from fsyncbench import __version__, audit, host as hostmod, stats
from fsyncbench.errors import FsyncbenchError
from fsyncbench.measure import measure
from fsyncbench.model import Host, Pragmas, Report, Result
from fsyncbench.store import SCHEMA_VERSION
from fsyncbench.workloads import (
    BLOCK_BYTES,
    JOURNAL_MODES,
    SYNCHRONOUS,
    FlushWorkload,
    JournalCommit,
    SyncPrimitive,
    scratch_dir,
    sqlite_sync_primitive,
    sync_primitives,
)

DEFAULT_JOURNAL_MODES = ("DELETE", "TRUNCATE", "WAL")
DEFAULT_SYNCHRONOUS = ("OFF", "NORMAL", "FULL")
FULLFSYNC_VALUES = {"on": True, "off": False, "1": True, "0": False, "true": True,
                    "false": False, "yes": True, "no": False}


def parse_choices(text: str, allowed: Sequence[str], what: str) -> tuple[str, ...]:
    """``"delete,wal"`` -> ``("DELETE", "WAL")``, checked against ``allowed``.
    Raises FsyncbenchError listing the allowed values."""
    values = tuple(v.strip().upper() for v in text.split(",") if v.strip())
    bad = [v for v in values if v not in allowed]
    if bad or not values:
        raise FsyncbenchError(
            f"invalid {what} {', '.join(bad) or repr(text)}: allowed values are "
            f"{', '.join(a.lower() for a in allowed)}"
        )
    return tuple(dict.fromkeys(values))


def parse_fullfsync(text: str) -> tuple[bool, ...]:
    """``"on,off"`` -> ``(True, False)``. Raises FsyncbenchError listing allowed values."""
    values = [v.strip().lower() for v in text.split(",") if v.strip()]
    bad = [v for v in values if v not in FULLFSYNC_VALUES]
    if bad or not values:
        raise FsyncbenchError(
            f"invalid fullfsync {', '.join(bad) or repr(text)}: allowed values are on, off"
        )
    return tuple(dict.fromkeys(FULLFSYNC_VALUES[v] for v in values))


def build_configs(
    journal_modes: str | None = None,
    synchronous: str | None = None,
    fullfsync: str | None = None,
    platform: str = sys.platform,
) -> tuple[Pragmas, ...]:
    """The pragma combinations to measure: journal_mode x synchronous (x fullfsync).

    Defaults: DELETE, TRUNCATE, WAL x OFF, NORMAL, FULL; on macOS each with fullfsync OFF
    and ON (SQLite honours fullfsync only there: https://www.sqlite.org/pragma.html).
    """
    modes = parse_choices(journal_modes, JOURNAL_MODES, "journal_mode") if journal_modes else DEFAULT_JOURNAL_MODES
    syncs = parse_choices(synchronous, SYNCHRONOUS, "synchronous") if synchronous else DEFAULT_SYNCHRONOUS
    if fullfsync:
        fulls: tuple[bool | None, ...] = parse_fullfsync(fullfsync)
    else:
        fulls = (False, True) if platform == "darwin" else (None,)
    return tuple(Pragmas(m, s, f) for m in modes for s in syncs for f in fulls)


@dataclass(frozen=True)
class RunPlan:
    """What to measure: ``samples`` per configuration within ``budget_s`` seconds each."""

    target: Path
    configs: tuple[Pragmas, ...]
    samples: int = 1000
    budget_s: float = 10.0
    warmup: int = 50
    payload_bytes: int = 512
    primitives: bool = True

    def __post_init__(self) -> None:
        if self.samples < 1:
            raise FsyncbenchError(f"--samples must be at least 1, got {self.samples}")
        if not self.budget_s > 0:
            raise FsyncbenchError(f"--budget-seconds must be positive, got {self.budget_s:g}")
        if self.warmup < 0:
            raise FsyncbenchError(f"--warmup must be 0 or more, got {self.warmup}")
        if self.payload_bytes < 1:
            raise FsyncbenchError(f"--payload-bytes must be at least 1, got {self.payload_bytes}")


#: progress(label, index, total, done, target, elapsed_ns, budget_ns)
RunProgress = Callable[[str, int, int, int, int, int, int], None]


def check_target(target: Path) -> Path:
    """Resolve DIR and check it is an existing, writable directory (FsyncbenchError)."""
    if not target.exists():
        raise FsyncbenchError(f"directory {target} does not exist")
    if not target.is_dir():
        raise FsyncbenchError(f"{target} is not a directory")
    return target.resolve()


def run_plan(plan: RunPlan, host: Host, progress: RunProgress | None = None) -> tuple[Result, ...]:
    """Measure every raw primitive (first) and every configuration of ``plan`` inside a
    fresh scratch directory of ``plan.target``. Raises FsyncbenchError on I/O errors;
    KeyboardInterrupt propagates after the scratch directory is removed."""
    disks = [d.name for d in host.target.disks if d.has_flush_counters]
    # Apple's system SQLite (/usr/lib/libsqlite3.dylib) maps fullfsync to F_BARRIERFSYNC.
    apple_sqlite = host.os_name == "Darwin" and (host.sqlite_library or "").startswith("/usr/lib/")
    prims = sync_primitives() if plan.primitives else ()
    total = len(prims) + len(plan.configs)
    results: list[Result] = []
    with scratch_dir(plan.target) as work:
        for i, prim in enumerate(prims):
            cb = _bind(progress, f"write+{prim.name}" if prim.call else "write", i, total)
            results.append(_measure_primitive(plan, work, prim, disks, cb))
        for j, pragmas in enumerate(plan.configs, start=len(prims)):
            cb = _bind(progress, pragmas.label, j, total)
            primitive = sqlite_sync_primitive(host.os_name, pragmas, apple_sqlite)
            results.append(_measure_commit(plan, work, pragmas, primitive, disks, cb))
    return tuple(results)


def _bind(progress: RunProgress | None, label: str, index: int, total: int):
    if progress is None:
        return None
    return lambda done, target, elapsed, budget: progress(label, index, total, done, target, elapsed, budget)


def _run_workload(plan: RunPlan, workload, disks: Sequence[str], cb):
    """Measure ``workload`` with the disks' flush counters read right around the timed
    phase; returns (Measurement, flush deltas). Closes the workload."""
    try:
        before = hostmod.read_flush_counters(disks)
        m = measure(workload, plan.samples, plan.budget_s, plan.warmup, cb)
        after = hostmod.read_flush_counters(disks)
    finally:
        workload.close()
    return m, hostmod.flush_deltas(before, after)


def _result(m, deltas, **fields) -> Result:
    return Result(
        samples_ns=m.samples_ns,
        summary=stats.summarize(m.samples_ns),
        warmup=m.warmup,
        target_samples=m.target_samples,
        budget_s=m.budget_s,
        target_reached=m.target_reached,
        elapsed_ns=m.elapsed_ns,
        device_flushes=deltas,
        **fields,
    )


def _measure_primitive(plan: RunPlan, work: Path, prim: SyncPrimitive, disks, cb) -> Result:
    m, deltas = _run_workload(plan, FlushWorkload(work, prim), disks, cb)
    return _result(
        m, deltas,
        kind="flush" if prim.call else "write",
        name=f"write+{prim.name}" if prim.call else "write (no sync)",
        primitive=prim.name,
        payload_bytes=BLOCK_BYTES,
        # warmup syncs happen before the counters are read, so only timed ones count
        syncs_issued=len(m.samples_ns) if prim.call else 0,
    )


def _measure_commit(plan: RunPlan, work: Path, pragmas: Pragmas, primitive: str, disks, cb) -> Result:
    workload = JournalCommit(work, pragmas, plan.payload_bytes)
    m, deltas = _run_workload(plan, workload, disks, cb)
    return _result(
        m, deltas,
        kind="commit",
        name=pragmas.label,
        primitive=primitive,
        payload_bytes=plan.payload_bytes,
        requested=pragmas,
        effective=workload.effective,
    )


def build_report(kind: str, host: Host, results: Sequence[Result], command_line: Sequence[str]) -> Report:
    """Assemble a report; the verdict is derived here from host and results."""
    notes = []
    short = [r.name for r in results if not r.target_reached]
    if short:
        notes.append(
            "the sample target was not reached within the time budget for: " + ", ".join(short)
        )
    changed = [f"{r.requested.label} ran as {r.effective.label}" for r in results
               if r.requested and r.effective and r.requested != r.effective]
    if changed:
        notes.append("SQLite did not apply every pragma: " + "; ".join(changed))
    now = _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0)
    return Report(
        schema_version=SCHEMA_VERSION,
        tool_version=__version__,
        kind=kind,
        created_utc=now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        command_line=tuple(command_line),
        host=host,
        results=tuple(results),
        verdict=audit.judge(host, results),
        notes=tuple(notes),
    )
