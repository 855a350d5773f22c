"""Commit rules: whether a commit's pragma combination promises durability
(:func:`config_durability`), whether the commit waits for its syncs (syncs per commit
traced, FULL against OFF, the commit against S x one flush), and slowness and tail
findings."""

from __future__ import annotations

from typing import Protocol

from fsyncbench.judge.rule_facts import (
    APPLE_BARRIER_DOC,
    APPLE_FSYNC_DOC,
    COMMIT_VS_FLUSH_MIN_RATIO,
    ETCD_GATE_DOC,
    GATE_P99_NS,
    LATENCY_BANDS_DOC,
    REAL_IO_FLOOR_NS,
    SLOW_MEDIAN_NS,
    SQLITE_FULLFSYNC_FALLBACK_DOC,
    SQLITE_SYNC_DOC,
    SQLITE_WAL_DOC,
    Facts,
    _base_primitive,
    _commit,
    _comparison,
    _flush_results,
    _us,
)
from fsyncbench.model import (
    INFERRED,
    INFO,
    MEASURED,
    RISK,
    WARNING,
    Evidence,
    Finding,
    Host,
    Pragmas,
    Result,
    SyncTrace,
)

# --------------------------------------------------------------------------- commit rules


class CommitConfig(Protocol):
    """What :func:`config_durability` reads of a commit: a commit :class:`Result`, or the
    view powercut's verifier builds of the configuration its writer ran with."""

    @property
    def name(self) -> str: ...
    @property
    def primitive(self) -> str: ...
    @property
    def requested(self) -> Pragmas | None: ...
    @property
    def effective(self) -> Pragmas | None: ...


#: Rollback-journal combinations whose commit point is never synced, so the last commit may
#: roll back after a power loss (a "hot" journal reappears). SQLite's pragma docs: EXTRA
#: "syncs the directory after the rollback journal is unlinked to commit a transaction in
#: DELETE mode"; strace of SQLite 3.40 here shows the commit point of each combination:
#: DELETE ends with an unsynced unlink at NORMAL/FULL, TRUNCATE with an unsynced ftruncate
#: at NORMAL, while PERSIST syncs its zeroed header already at NORMAL.
#: SQLite's Windows VFS: winDelete(pVfs, zFilename, syncDir) with "int syncDir /* Not used on
#: win32 */" and UNUSED_PARAMETER(syncDir): no directory sync after a delete.
SQLITE_WIN_DELETE_DOC = "https://www.sqlite.org/src/file/src/os_win.c (winDelete)"
#: SQLite's unix VFS syncs the directory after deleting a file with full_fsync(fd, 0, 0):
#: a plain fsync whatever PRAGMA fullfsync says, which on macOS stops at the drive's cache;
#: the deletion reaches stable storage only at the next F_FULLFSYNC.
SQLITE_UNIX_DELETE_DOC = (
    "https://www.sqlite.org/src/file/src/os_unix.c (unixDelete: full_fsync(fd,0,0)); "
    + APPLE_FSYNC_DOC
)

UNSYNCED_COMMIT_POINT = {
    (
        "DELETE",
        "NORMAL",
    ): "the journal unlink that commits is not synced (DELETE needs synchronous=EXTRA)",
    (
        "DELETE",
        "FULL",
    ): "the journal unlink that commits is not synced (DELETE needs synchronous=EXTRA)",
    (
        "TRUNCATE",
        "NORMAL",
    ): "the journal truncation that commits is not synced (TRUNCATE needs synchronous=FULL)",
}


def _not_durable_why(p: Pragmas, os_name: str) -> tuple[str | None, str]:
    """Why SQLite's documentation does not promise that a commit under ``p`` survives power
    loss on ``os_name``, and the source; (None, source) when it does."""
    why, source = None, SQLITE_SYNC_DOC
    if p.synchronous == "OFF":
        why = "synchronous=OFF hands data to the OS without any sync"
    elif p.journal_mode in ("OFF", "MEMORY"):
        why = f"journal_mode={p.journal_mode} keeps no rollback journal on disk"
    elif p.journal_mode == "WAL" and p.synchronous == "NORMAL":
        why = "WAL with synchronous=NORMAL syncs only at checkpoints; the last commits may roll back after power loss"
        source = SQLITE_WAL_DOC
    elif (p.journal_mode, p.synchronous) in UNSYNCED_COMMIT_POINT:
        why = (
            UNSYNCED_COMMIT_POINT[p.journal_mode, p.synchronous]
            + "; the last commit may roll back after power loss"
        )
        source = (
            SQLITE_SYNC_DOC + " (EXTRA); strace of SQLite 3.40 (fsyncbench audit traces the calls)"
        )
    elif p.synchronous == "NORMAL" and p.journal_mode != "WAL":
        # PERSIST syncs its zeroed header even at NORMAL (strace above), but the
        # documentation promises nothing at NORMAL in a rollback mode: the promise is its
        why = (
            f"synchronous=NORMAL in {p.journal_mode} mode: SQLite's documentation does not "
            "promise that a commit survives a power failure ('a very small (though non-zero) "
            "chance' of corruption)"
        )
    elif os_name == "Windows" and p.journal_mode == "DELETE":
        why, source = (
            "on Windows SQLite deletes the rollback journal (the commit point) without syncing "
            "its directory, even at synchronous=EXTRA (winDelete ignores syncDir)",
            SQLITE_WIN_DELETE_DOC,
        )
    elif os_name == "Darwin" and not p.fullfsync:
        why, source = (
            "on macOS without fullfsync SQLite's fsync stops at the drive's cache",
            APPLE_FSYNC_DOC,
        )
    elif os_name == "Darwin" and p.journal_mode == "DELETE":
        why, source = (
            "on macOS SQLite syncs the directory after deleting the rollback journal (the "
            "commit point) with a plain fsync even with fullfsync, which stops at the drive's "
            "cache: the deletion is durable only at the next commit's F_FULLFSYNC",
            SQLITE_UNIX_DELETE_DOC,
        )
    return why, source


def documented_promise(p: Pragmas, os_name: str) -> tuple[bool, bool, str]:
    """What SQLite's documentation promises for ``p`` on ``os_name`` after a power loss:
    (durable: every acknowledged commit survives, consistent: the database is never
    corrupt, why: the reason and source of a missing promise, "" when both hold).

    Consistency (https://www.sqlite.org/pragma.html#pragma_synchronous): FULL and EXTRA
    "will not corrupt the database"; "WAL mode is safe from corruption with
    synchronous=NORMAL", while NORMAL in rollback modes has "a very small (though non-zero)
    chance" of corruption on older filesystems; OFF "might become corrupted"; journal_mode
    OFF or MEMORY keeps no on-disk journal to roll back with (https://www.sqlite.org/pragma.html#pragma_journal_mode).
    On macOS without fullfsync nothing is promised (APPLE_FSYNC_DOC)."""
    not_durable, source = _not_durable_why(p, os_name)
    consistent = (
        p.synchronous in ("FULL", "EXTRA")
        or (p.synchronous == "NORMAL" and p.journal_mode == "WAL")
    ) and p.journal_mode not in ("OFF", "MEMORY")
    if os_name == "Darwin" and not p.fullfsync:
        consistent = False
    why = [] if not_durable is None else [f"{not_durable} ({source})"]
    if not consistent and p.synchronous == "NORMAL":
        why.append(
            f"{p.journal_mode}/NORMAL in a rollback journal mode has 'a very small (though "
            f"non-zero) chance' of corruption after a power failure ({SQLITE_SYNC_DOC})"
        )
    return not_durable is None, consistent, "; ".join(why)


def config_durability(host: Host, r: CommitConfig) -> tuple[bool, Finding | None]:
    """Does the commit's pragma combination promise that each acknowledged commit survives
    a power loss?

    synchronous=OFF: no; journal_mode OFF/MEMORY: no; WAL + NORMAL: no (syncs only at
    checkpoints); DELETE below EXTRA and TRUNCATE below FULL: no (UNSYNCED_COMMIT_POINT);
    PERSIST at NORMAL: no (the documentation promises nothing at NORMAL in a rollback mode;
    :func:`fsyncbench.judge.promises.documented` says the same of every combination);
    DELETE on Windows at any level: no (SQLITE_WIN_DELETE_DOC); DELETE on macOS at any
    level, fullfsync or not: no (SQLITE_UNIX_DELETE_DOC);
    macOS without fullfsync: no (plain fsync); Apple's system SQLite maps fullfsync to
    F_BARRIERFSYNC: no; a volume that refuses F_FULLFSYNC, where SQLite falls back to fsync
    (``r.primitive`` "fsync (F_FULLFSYNC refused: ...)"): no. Sources: SQLITE_SYNC_DOC, SQLITE_WAL_DOC, APPLE_FSYNC_DOC,
    APPLE_BARRIER_DOC.
    """
    p = r.effective or r.requested
    assert p is not None
    advice = (
        "For a journal that must survive power loss use WAL or TRUNCATE with synchronous=FULL"
        + ("" if host.os_name in ("Windows", "Darwin") else ", or DELETE with EXTRA")
    )
    why, source = _not_durable_why(p, host.os_name)
    if why is None and host.os_name == "Darwin" and r.primitive == "F_BARRIERFSYNC":
        why, source = (
            "this SQLite implements fullfsync with F_BARRIERFSYNC (ordering, not durability)",
            APPLE_BARRIER_DOC,
        )
    elif why is None and host.os_name == "Darwin" and _base_primitive(r.primitive) == "fsync":
        why, source = (
            f"the volume refused F_FULLFSYNC, so SQLite fell back to fsync ({r.primitive}), "
            "which on macOS stops at the drive's cache",
            SQLITE_FULLFSYNC_FALLBACK_DOC + "; " + APPLE_FSYNC_DOC,
        )
    if why is None:
        return True, None
    return False, Finding(
        "config-not-durable",
        WARNING,
        r.name,
        f"{r.name}: {why}.",
        advice + (", with fullfsync=ON" if host.os_name == "Darwin" else "") + ".",
        {"journal_mode": p.journal_mode, "synchronous": p.synchronous, "fullfsync": p.fullfsync},
        source,
    )


def _traces_for(evidence: Evidence | None, p: Pragmas) -> list[SyncTrace]:
    if evidence is None:
        return []
    return [
        t
        for t in evidence.sync_traces
        if t.pragmas.journal_mode == p.journal_mode
        and t.pragmas.synchronous == p.synchronous
        and (t.pragmas.fullfsync or False) == (p.fullfsync or False)
    ]


def syncs_per_commit(
    host: Host, evidence: Evidence | None, p: Pragmas
) -> tuple[float | None, float | None]:
    """(S as run, S SQLite asks for) for pragmas ``p`` from the recorded traces: the trace
    run with the host's LD_PRELOAD shows what reaches the kernel; one run without LD_PRELOAD
    what SQLite itself issues. Either is None when not traced."""
    traces = _traces_for(evidence, p)
    as_run = next((t for t in traces if (t.ld_preload or None) == (host.ld_preload or None)), None)
    clean = next((t for t in traces if not t.ld_preload), None)
    return (
        None if as_run is None else as_run.syncs_per_commit,
        None if clean is None else clean.syncs_per_commit,
    )


def rule_commit_issues_no_sync(f: Facts, r: Result) -> Finding | None:
    """A commit at synchronous FULL/EXTRA whose traced syscalls include no sync at all does
    not wait for storage: SQLite issues >= 1 sync per such commit (SQLITE_SYNC_DOC). If the
    same commit traced without LD_PRELOAD does sync, the preloaded library swallows them."""
    p = r.effective or r.requested
    if p is None or p.synchronous not in ("FULL", "EXTRA"):
        return None
    as_run, clean = syncs_per_commit(f.host, f.evidence, p)
    if as_run is None or as_run > 0:
        return None
    intercepted = clean is not None and clean > 0
    return Finding(
        "commit-syncs-intercepted" if intercepted else "commit-issues-no-sync",
        RISK,
        r.name,
        f"{r.name} commits reach the kernel with 0 sync calls"
        + (
            f" although SQLite issues {clean:g} per commit without LD_PRELOAD ({f.host.ld_preload})"
            if intercepted
            else ""
        )
        + ": nothing waits for storage.",
        "Remove the sync-disabling library or SQLite build option (SQLITE_NO_SYNC) and "
        "audit again.",
        {
            "syncs_per_commit": as_run,
            "syncs_per_commit_without_preload": clean,
            "ld_preload": f.host.ld_preload,
        },
        "strace of the commits (fsyncbench.measure.observations.trace_syncs); " + SQLITE_SYNC_DOC,
    )


def rule_full_equals_off(f: Facts, r: Result) -> Finding | None:
    """A syncing commit no slower than the same journal_mode at synchronous=OFF waits for
    no device: each real sync adds at least REAL_IO_FLOOR_NS, so S syncs per commit (as
    SQLite issues them, when traced; else 1) add at least S times that."""
    p = r.effective or r.requested
    if p is None or p.synchronous not in ("FULL", "EXTRA") or r.primitive == "none":
        return None
    off = _commit(f.results, p, "OFF")
    if off is None:
        return None
    gap = r.summary.p50_ns - off.summary.p50_ns
    issued = syncs_per_commit(f.host, f.evidence, p)[1]
    floor = REAL_IO_FLOOR_NS * max(1.0, issued or 1.0)
    if gap >= floor:
        return None
    return Finding(
        "sync-costs-nothing",
        RISK,
        r.name,
        f"{r.name} commits take {r.summary.p50_ns / 1e3:.1f} us, "
        + (f"only {_us(gap)} more than" if gap > 0 else "no slower than")
        + f" {off.name}: its syncs reach no device.",
        "The filesystem or a library drops syncs; benchmark a directory on real storage.",
        {
            "p50_ns": r.summary.p50_ns,
            "off_p50_ns": off.summary.p50_ns,
            "gap_ns": gap,
            "floor_ns": floor,
            "syncs_per_commit": issued,
        },
        LATENCY_BANDS_DOC,
    )


def _flush_cost(f: Facts, primitive: str) -> tuple[float, str] | None:
    """One flush of ``primitive`` on this path (ns) and where the number comes from: the
    least of the write+sync result's p50 and the libc and raw-syscall p50s of the
    comparison, leaving out any below REAL_IO_FLOOR_NS (no device was involved: an
    interposed call). The least, because a busy disk only ever adds time."""
    candidates = []
    flush = next((x for x in _flush_results(f.results) if x.primitive == primitive), None)
    if flush is not None:
        candidates.append((flush.summary.p50_ns, f"write+{primitive} p50"))
    c = _comparison(f, primitive)
    if c is not None:
        candidates.append((c.libc_p50_ns, f"libc {primitive} p50"))
        candidates.append((c.syscall_p50_ns, f"raw syscall {primitive} p50"))
    real = [x for x in candidates if x[0] >= REAL_IO_FLOOR_NS]
    if real:
        return min(real)
    # nothing reached a device: keep the old single-flush comparison (S >= 1) meaningful
    return max(candidates) if candidates and max(candidates)[0] > 0 else None


def rule_commit_faster_than_sync(f: Facts, r: Result) -> Finding | None:
    """A commit issuing S >= 1 syncs cannot take less than COMMIT_VS_FLUSH_MIN_RATIO of S x
    one flush measured in the same directory (docs/verdicts.md, "Commit checks"). S is the traced count
    SQLite asks for when recorded, else 1 (SQLite syncs at least once per FULL commit)."""
    p = r.effective or r.requested
    if p is None or p.synchronous not in ("FULL", "EXTRA") or r.primitive == "none":
        return None
    cost = _flush_cost(f, _base_primitive(r.primitive))
    if cost is None:
        return None
    as_run, clean = syncs_per_commit(f.host, f.evidence, p)
    traced = clean if clean is not None else as_run
    s = traced if traced else 1.0
    expected = s * cost[0]
    ratio = r.summary.p50_ns / expected
    if ratio >= COMMIT_VS_FLUSH_MIN_RATIO:
        return None
    return Finding(
        "commit-not-waiting-for-sync",
        RISK,
        r.name,
        f"{r.name} commits take {r.summary.p50_ns / 1e3:.1f} us but "
        f"{s:g} x one {_base_primitive(r.primitive)} here takes {expected / 1e3:.1f} us "
        f"({1 / ratio:.0f}x more): the commit does not wait for its syncs.",
        "Check the database configuration and LD_PRELOAD for a layer that skips syncs.",
        {
            "commit_p50_ns": r.summary.p50_ns,
            "flush_p50_ns": cost[0],
            "flush_source": cost[1],
            "syncs_per_commit": s,
            "syncs_traced": traced is not None,
            "ratio": round(ratio, 4),
        },
        "fsyncbench docs/verdicts.md (commit checks); SQLite issues >= 1 sync per commit at synchronous=FULL "
        "(https://www.sqlite.org/atomiccommit.html)",
    )


COMMIT_RULES = (rule_commit_issues_no_sync, rule_full_equals_off, rule_commit_faster_than_sync)

#: F_FULLFSYNC (a flush of the drive's cache) and F_BARRIERFSYNC (an ordering barrier) are
#: told apart by latency only where F_FULLFSYNC's p50 is at least this many times
#: F_BARRIERFSYNC's on the same volume: on the public Apple SSD cases F_FULLFSYNC costs
#: milliseconds and F_BARRIERFSYNC tens to hundreds of microseconds (LATENCY_BANDS_DOC).
FULLFSYNC_SEPARATION_RATIO = 3.0
#: A fullfsync commit is taken to be F_FULLFSYNC only when its sync costs at least this
#: share of the F_FULLFSYNC primitive's p50 (the drive-cache flush is the bulk of both);
#: below the geometric midpoint of the two primitives it is F_BARRIERFSYNC; in between
#: the latency does not tell.
FULLFSYNC_BAND = 0.8


def fullfsync_mapping(f: Facts) -> tuple[str | None, Finding | None]:
    """Which primitive this SQLite's fullfsync really is on macOS, from latency. A WAL
    commit with fullfsync=ON at synchronous FULL or EXTRA syncs the WAL once (twice on the
    first commit after a WAL reset, which syncs its header too, and more when it runs the
    auto-checkpoint: rare enough to leave the p50 alone; https://www.sqlite.org/wal.html,
    src/wal.c). Its p50, less the commit's own cost without the sync (the same commit with
    fullfsync off less the plain fsync primitive's p50, when both were measured), is the
    sync's: F_FULLFSYNC at FULLFSYNC_BAND of that primitive's p50 or more, F_BARRIERFSYNC
    below the geometric midpoint of the two primitives' p50s, where those are at least
    FULLFSYNC_SEPARATION_RATIO apart; else the latency does not tell. Returns (the
    measured primitive or None, a finding saying how it compares with the label the run
    gave from the library's path: Apple's /usr/lib/libsqlite3.dylib is taken to use
    F_BARRIERFSYNC, APPLE_BARRIER_DOC). (None, None) off macOS or without such a commit
    and both primitives."""
    if f.host.os_name != "Darwin":
        return None, None
    prims = {r.primitive: r for r in _flush_results(f.results)}
    full, barrier, plain = (prims.get(n) for n in ("F_FULLFSYNC", "F_BARRIERFSYNC", "fsync"))
    wal = _commit(f.results, Pragmas("WAL", "FULL", True), "FULL") or _commit(
        f.results, Pragmas("WAL", "EXTRA", True), "EXTRA"
    )
    if (
        wal is None
        or full is None
        or barrier is None
        or _base_primitive(wal.primitive) not in ("F_FULLFSYNC", "F_BARRIERFSYNC")
    ):
        return None, None
    p = wal.effective or wal.requested
    assert p is not None
    without = _commit(f.results, Pragmas("WAL", p.synchronous, False), p.synchronous)
    overhead = (
        max(0.0, without.summary.p50_ns - plain.summary.p50_ns)
        if without is not None and plain is not None
        else 0.0
    )
    sync_ns = wal.summary.p50_ns - overhead
    labelled = _base_primitive(wal.primitive)
    full_ns, barrier_ns = full.summary.p50_ns, barrier.summary.p50_ns
    evidence = {
        "commit_p50_ns": wal.summary.p50_ns,
        "commit_overhead_ns": overhead,
        "f_fullfsync_p50_ns": full_ns,
        "f_barrierfsync_p50_ns": barrier_ns,
        "labelled": labelled,
    }
    measured = None
    if full_ns >= FULLFSYNC_SEPARATION_RATIO * barrier_ns:
        if sync_ns >= FULLFSYNC_BAND * full_ns:
            measured = "F_FULLFSYNC"
        elif sync_ns < (full_ns * barrier_ns) ** 0.5:
            measured = "F_BARRIERFSYNC"
    if measured is None:
        return None, Finding(
            "fullfsync-mapping-unverifiable",
            INFO,
            wal.name,
            f"{wal.name}: its sync ({_us(sync_ns)} p50 without the commit's own "
            f"{_us(overhead)}) cannot be told apart between F_FULLFSYNC "
            f"({_us(full_ns)}) and F_BARRIERFSYNC ({_us(barrier_ns)}) here, so {labelled} "
            "is inferred from the library's path.",
            "dtruss or Instruments' File Activity on a commit shows the fcntl command "
            "(51 F_FULLFSYNC, 85 F_BARRIERFSYNC).",
            evidence,
            APPLE_BARRIER_DOC,
            strength=INFERRED,
        )
    agrees = measured == labelled
    other = "F_BARRIERFSYNC" if measured == "F_FULLFSYNC" else "F_FULLFSYNC"
    like_ns, unlike_ns = (
        (full_ns, barrier_ns) if measured == "F_FULLFSYNC" else (barrier_ns, full_ns)
    )
    return measured, Finding(
        "fullfsync-mapping" if agrees else "fullfsync-mapping-contradicts-label",
        INFO if agrees else WARNING,
        wal.name,
        f"{wal.name} commits sync in {_us(sync_ns)} p50 (the commit {_us(wal.summary.p50_ns)} "
        f"less its own {_us(overhead)}), like {measured} ({_us(like_ns)}) and not {other} "
        f"({_us(unlike_ns)}): this SQLite's fullfsync is {measured}"
        + (
            ", as its library's path suggested."
            if agrees
            else f", not {labelled} as inferred from its library's path; the verdicts use "
            "the measured one."
        ),
        "" if agrees else "Trust the measurement over the path; dtruss on a commit settles it.",
        evidence,
        APPLE_BARRIER_DOC,
        strength=MEASURED,
    )


#: How each commit rule knows: traced system calls are measured; timing comparisons against
#: a band (REAL_IO_FLOOR_NS, COMMIT_VS_FLUSH_MIN_RATIO) are inferred.
COMMIT_RULE_STRENGTH = {
    "commit-issues-no-sync": MEASURED,
    "commit-syncs-intercepted": MEASURED,
    "sync-costs-nothing": INFERRED,
    "commit-not-waiting-for-sync": INFERRED,
}


def slowness(r: Result) -> list[Finding]:
    """Slow-median and tail findings (separate from the path verdict)."""
    out = []
    s = r.summary
    if s.p50_ns > SLOW_MEDIAN_NS:
        out.append(
            Finding(
                "slow-median",
                WARNING,
                r.name,
                f"{r.name} p50 is {s.p50_ns / 1e6:.1f} ms: every durable step waits that long.",
                "Batch several steps per commit, or use faster storage.",
                {"p50_ns": s.p50_ns, "threshold_ns": SLOW_MEDIAN_NS},
                "fsyncbench docs/verdicts.md (commit checks: a project choice)",
            )
        )
    if s.p99_ns > GATE_P99_NS and r.primitive != "none":
        out.append(
            Finding(
                "p99-above-10ms",
                INFO,
                r.name,
                f"{r.name} p99 is {s.p99_ns / 1e6:.1f} ms, above etcd's 10 ms gate.",
                "If you gate on tail latency, compare this against your SLO.",
                {"p99_ns": s.p99_ns, "threshold_ns": GATE_P99_NS},
                ETCD_GATE_DOC,
            )
        )
    return out
