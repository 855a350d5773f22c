"""After the reboot: compare the listener's record with the journal on disk, and judge.

Every commit the listener recorded was reported after its COMMIT returned, so with a
configuration that promises durability each one must still be in the journal. One missing
is proof that something under SQLite acknowledged a flush it had not made durable: the
method of Brad Fitzpatrick's diskchecker.pl (https://brad.livejournal.com/2116715.html,
https://gist.github.com/3172656), applied to a SQLite step journal.

:func:`judge` is a pure function of :class:`PowercutFacts`, so every verdict path is
testable without a power cut.
"""

from __future__ import annotations

import datetime as _dt
import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fsyncbench import __version__
from fsyncbench.errors import FsyncbenchError
from fsyncbench.host.layers import SYNC_DISABLING_LIBS
from fsyncbench.judge import commit_rules, rule_facts, stack
from fsyncbench.model import (
    HONEST_FLUSH,
    INFO,
    MEASURED,
    NO_FLUSH,
    NO_STRENGTH,
    PROVEN,
    RISK,
    UNVERIFIABLE,
    VOLATILE_CACHE,
    WARNING,
    Finding,
    Host,
    Pragmas,
    Report,
    ResultVerdict,
    Verdict,
)
from fsyncbench.powercut import ranges as R
from fsyncbench.powercut.protocol import (
    RUN_ID_RE,
    Refused,
    fetch_run,
    format_address,
    list_runs,
)
from fsyncbench.powercut.run import (
    POWERCUT_DIRNAME,
    RunRecord,
    boot_id,
    find_runs,
    load_run,
    make_row,
    powercut_root,
    this_hostname,
    writer_identity,
)
from fsyncbench.powercut.secret import Secret
from fsyncbench.report import store

DISKCHECKER = (
    "Brad Fitzpatrick, diskchecker.pl (9 May 2005): a second host records every "
    "write the first believes durable; after power loss anything recorded but "
    "missing proves the storage lied (https://brad.livejournal.com/2116715.html, "
    "https://gist.github.com/3172656)"
)
SQLITE_EXTRA_DOC = (
    "https://www.sqlite.org/pragma.html#pragma_synchronous: EXTRA also syncs "
    "the directory after the rollback journal is unlinked to commit in DELETE "
    "mode, 'additional durability if the commit is followed closely by a power "
    "loss'"
)
INTEGRITY_MAX_ERRORS = 100


@dataclass(frozen=True)
class JournalState:
    """What the journal on disk holds for one run (read after SQLite's own recovery)."""

    path: str
    exists: bool
    error: str | None
    present: tuple[tuple[int, int], ...]
    damaged: tuple[tuple[int, int], ...]
    integrity: tuple[str, ...]
    note: str | None = None

    @property
    def intact(self) -> bool:
        return self.exists and self.error is None and self.integrity == ("ok",)


@dataclass(frozen=True)
class PowercutFacts:
    """Everything :func:`judge` needs: the run, the listener's record, the journal."""

    run_id: str
    config: Pragmas
    primitive: str
    writer_host: Host
    acknowledged: tuple[tuple[int, int], ...]
    journal: JournalState
    rebooted: bool | None
    clean_stop: str | None
    listener: str


@dataclass(frozen=True)
class Judgement:
    outcome: str  # "pass", "fail" or "inconclusive"
    path_verdict: str
    decided_by: str
    config_durable: bool
    lost: tuple[tuple[int, int], ...]
    holes: tuple[tuple[int, int], ...]
    unacknowledged: int
    findings: tuple[Finding, ...]
    strength: str = NO_STRENGTH


@dataclass(frozen=True)
class VerifyOutcome:
    report: Report
    judgement: Judgement
    text: str
    path: Path

    @property
    def failed(self) -> bool:
        return self.judgement.outcome == "fail"


# --------------------------------------------------------------------------- journal


def read_journal(
    db_path: Path, run_id: str, payload_bytes: int | None, busy_timeout_s: float = 5.0
) -> JournalState:
    """Open the journal as the application would after a reboot (read-write, so SQLite
    rolls back a hot journal or replays its WAL; never creates a missing file), run
    ``PRAGMA integrity_check`` and read the run's rows. Rows whose content is not what the
    writer committed count as damaged (``payload_bytes`` None: the output is not checked).

    A corrupt file (SQLITE_CORRUPT, SQLITE_NOTADB) is a finding, recorded in ``error``; any
    other failure (permissions, a read-only mount, I/O errors) is not evidence about the
    power cut and raises FsyncbenchError.
    """
    if not db_path.is_file():
        return JournalState(str(db_path), False, None, (), (), ())
    present: list[int] = []
    damaged: list[int] = []
    integrity: tuple[str, ...] = ()
    error = note = None
    conn = None
    try:
        conn = sqlite3.connect(
            db_path.resolve().as_uri() + "?mode=rw",
            uri=True,
            isolation_level=None,
            timeout=busy_timeout_s,
        )
        integrity = tuple(
            str(r[0]) for r in conn.execute(f"PRAGMA integrity_check({INTEGRITY_MAX_ERRORS})")
        )
        rows = conn.execute(
            "SELECT seq, name, input_hash, output FROM steps WHERE run_id=? ORDER BY seq", (run_id,)
        )
        for seq, name, input_hash, output in rows:
            if type(seq) is not int or seq < 1:
                continue
            present.append(seq)
            want = make_row(run_id, seq, payload_bytes or 1)
            if (name, input_hash) != want[2:4] or not _output_ok(
                seq, output, payload_bytes, want[4]
            ):
                damaged.append(seq)
    except sqlite3.Error as exc:
        if _is_corruption(exc):
            error = str(exc)
        elif "no such table" in str(exc):
            note = "the steps table is missing: the database is empty"
        else:
            raise FsyncbenchError(f"cannot read the journal {db_path}: {exc}") from None
    finally:
        if conn is not None:
            conn.close()
    return JournalState(
        str(db_path),
        True,
        error,
        tuple(R.to_ranges(present)),
        tuple(R.to_ranges(damaged)),
        integrity,
        note,
    )


#: SQLite result codes that mean the file itself is damaged (https://www.sqlite.org/rescode.html).
_SQLITE_CORRUPT, _SQLITE_NOTADB = 11, 26


def _is_corruption(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)  # Python >= 3.11
    if code is not None:
        return code & 0xFF in (_SQLITE_CORRUPT, _SQLITE_NOTADB)
    text = str(exc)
    return "malformed" in text or "not a database" in text


def _output_ok(seq: int, output: Any, payload_bytes: int | None, want: str) -> bool:
    if payload_bytes is not None:
        return bool(output == want)  # a SQLite column value: == already gives a bool
    try:
        return isinstance(output, str) and json.loads(output).get("seq") == seq
    except (ValueError, AttributeError):
        return False


# --------------------------------------------------------------------------- verdict


@dataclass(frozen=True)
class _CommitView:
    """The fields of a commit Result that :func:`commit_rules.config_durability` reads."""

    name: str
    primitive: str
    requested: Pragmas
    effective: Pragmas


def config_durability(host: Host, config: Pragmas, primitive: str) -> tuple[bool, Finding | None]:
    """Does ``config`` promise that a commit survives power loss? ``commit_rules``' rule (one
    source of truth: e.g. DELETE needs synchronous=EXTRA, because FULL does not sync the
    directory after unlinking the journal, the commit point: SQLITE_EXTRA_DOC)."""
    return commit_rules.config_durability(
        host, _CommitView(config.label, primitive, config, config)
    )


def _drops_syncs(host: Host) -> str | None:
    """Why syncs never reached a device when the writer ran, if host facts say so."""
    mount = host.target.mount
    if mount and mount.fs_type in rule_facts.NO_FLUSH_FILESYSTEMS:
        return f"the journal was on {mount.fs_type}, which keeps data in RAM"
    if stack.ram_media(host.target):
        return f"the journal's bytes ended in RAM ({stack.chain_text(host.target)})"
    preload = host.ld_preload or ""
    if any(lib in preload for lib in SYNC_DISABLING_LIBS):
        return f"the writer ran with LD_PRELOAD={preload}, which turns syncs into no-ops"
    return None


def judge(f: PowercutFacts) -> Judgement:
    """The outcome and verdict of a power-cut run (pure function of ``f``)."""
    label = f.config.label
    j = f.journal
    acked = list(f.acknowledged)
    n_acked = R.count(acked)
    present = list(j.present)
    lost = R.subtract(acked, present) if n_acked else []
    top = present[-1][1] if present else 0
    holes = R.subtract(R.subtract([(1, top)], present), acked) if top else []
    unacked = R.count(R.subtract(present, acked))
    durable, config_finding = config_durability(f.writer_host, f.config, f.primitive)
    ev = _evidence(f, lost, holes, unacked)

    failures: list[Finding] = []
    if n_acked and lost:
        failures.append(
            Finding(
                "powercut-acknowledged-lost",
                RISK,
                label,
                f"{R.count(lost):,} of {n_acked:,} acknowledged commits are missing from the "
                f"journal: seq {R.format_ranges(lost, 10)}.",
                "Do not trust this storage path with a journal: find the volatile cache (drive "
                "write cache without power-loss protection, hypervisor cache mode, RAID "
                "controller) and disable it or fix its flush handling, then test again.",
                ev,
                DISKCHECKER,
            )
        )
    if j.exists and not j.intact:
        failures.append(
            Finding(
                "powercut-journal-corrupt",
                RISK,
                label,
                "The journal is damaged after the power cut: "
                + (j.error or "PRAGMA integrity_check: " + "; ".join(j.integrity[:3]))
                + ".",
                "A durable configuration never leaves a corrupt database on honest storage: "
                "writes were lost or reordered below SQLite.",
                {"integrity_check": list(j.integrity), "error": j.error},
                "https://www.sqlite.org/howtocorrupt.html",
            )
        )
    if j.damaged:
        failures.append(
            Finding(
                "powercut-damaged-rows",
                RISK,
                label,
                f"{R.count(list(j.damaged)):,} "
                f"{'row differs' if R.count(list(j.damaged)) == 1 else 'rows differ'} from what the writer committed: "
                f"seq {R.format_ranges(list(j.damaged), 10)}.",
                "Torn or stale pages reached the disk: the storage does not keep writes whole.",
                {"damaged_ranges": [list(r) for r in j.damaged]},
                DISKCHECKER,
            )
        )
    if holes and durable:
        failures.append(
            Finding(
                "powercut-out-of-order",
                RISK,
                label,
                f"Commits {R.format_ranges(holes, 10)} are missing although later commits "
                "survived: writes reached stable media out of order.",
                "The storage reorders writes around flushes; do not trust it with a journal.",
                {"hole_ranges": [list(r) for r in holes]},
                DISKCHECKER,
            )
        )

    context: list[Finding] = []
    if config_finding is not None:
        context.append(config_finding)
    if f.clean_stop:
        context.append(
            Finding(
                "powercut-clean-stop",
                WARNING,
                label,
                f"The writer stopped cleanly ({f.clean_stop}) before the verify: it was not "
                "running when the power went, so this run says nothing about power loss.",
                "Pull the power while the writer is committing.",
                {"stop_reason": f.clean_stop},
                "",
            )
        )
    if f.rebooted is False:
        context.append(
            Finding(
                "powercut-no-reboot",
                WARNING,
                label,
                "The machine has not rebooted since the writer started (same boot id): no power "
                "cut came between writing and verifying.",
                "Pull the power cord while the writer runs, boot, then verify.",
                {"rebooted": False},
                "proc(5): /proc/sys/kernel/random/boot_id",
            )
        )
    elif f.rebooted is None:
        context.append(
            Finding(
                "powercut-reboot-unknown",
                INFO,
                label,
                "This OS gives no boot id, so verify cannot tell whether a power cut happened.",
                "Make sure the machine really lost power while the writer ran.",
                {"rebooted": None},
                "",
            )
        )

    if failures:
        if not durable:
            verdict, code = (
                UNVERIFIABLE,
                config_finding.code if config_finding else "config-not-durable",
            )
        else:
            why = _drops_syncs(f.writer_host)
            verdict = NO_FLUSH if why else VOLATILE_CACHE
            code = failures[0].code
            if why:
                first = failures[0]
                failures[0] = Finding(
                    first.code,
                    first.level,
                    first.subject,
                    f"{first.message} {why[0].upper()}{why[1:]}.",
                    first.advice,
                    first.evidence,
                    first.source,
                )
        if f.rebooted is False and durable:
            context.append(
                Finding(
                    "powercut-loss-without-reboot",
                    WARNING,
                    label,
                    "Commits were lost although this machine did not reboot: a network storage "
                    "server, a restored backup or an edited database lost them, not this power cut.",
                    "Check what else writes to or restores this directory.",
                    {},
                    "",
                )
            )
        findings = (*failures, *context)
        # a loss after a reboot proves the path lies; without one it is a measured loss only
        strength = PROVEN if durable and f.rebooted is not False else MEASURED
        return Judgement(
            "fail", verdict, code, durable, tuple(lost), tuple(holes), unacked, findings, strength
        )

    if not n_acked:
        finding = Finding(
            "powercut-nothing-acknowledged",
            WARNING,
            label,
            "The listener holds no acknowledged commit of this run: there is nothing to check.",
            "Start the listener first and let the writer report commits before pulling the power.",
            ev,
            DISKCHECKER,
        )
        return Judgement(
            "inconclusive",
            UNVERIFIABLE,
            finding.code,
            durable,
            (),
            tuple(holes),
            unacked,
            (finding, *context),
        )

    survived = Finding(
        "powercut-survived",
        INFO,
        label,
        f"All {n_acked:,} acknowledged commits survived and the journal is intact"
        + (f"; {unacked:,} more were committed but not yet acknowledged." if unacked else "."),
        "One pass is not proof of honesty: repeat the pull several times, under load, and "
        "keep the reports.",
        ev,
        DISKCHECKER,
    )
    if not durable:
        verdict, code = (
            UNVERIFIABLE,
            config_finding.code if config_finding else "config-not-durable",
        )
    elif f.clean_stop:
        verdict, code = UNVERIFIABLE, "powercut-clean-stop"
    elif f.rebooted is False:
        verdict, code = UNVERIFIABLE, "powercut-no-reboot"
    else:
        verdict, code = HONEST_FLUSH, survived.code
    # one survived power cut is a measurement, not proof: a lying cache may have drained
    return Judgement(
        "pass", verdict, code, durable, (), tuple(holes), unacked, (survived, *context), MEASURED
    )


def _evidence(f: PowercutFacts, lost: R.Ranges, holes: R.Ranges, unacked: int) -> dict[str, Any]:
    j = f.journal
    return {
        "run_id": f.run_id,
        "config": f.config.label,
        "sync_primitive": f.primitive,
        "listener": f.listener,
        "database": j.path,
        "acknowledged": R.count(list(f.acknowledged)),
        "acknowledged_ranges": [list(r) for r in f.acknowledged],
        "present": R.count(list(j.present)),
        "present_ranges": [list(r) for r in j.present],
        "lost": R.count(lost),
        "lost_ranges": [list(r) for r in lost],
        "hole_ranges": [list(r) for r in holes],
        "committed_not_acknowledged": unacked,
        "integrity_check": list(j.integrity),
        "journal_error": j.error,
        "journal_note": j.note,
        "journal_exists": j.exists,
        "rebooted": f.rebooted,
        "clean_stop": f.clean_stop,
    }


# --------------------------------------------------------------------------- the command


def _label_to_pragmas(label: str) -> Pragmas:
    """``wal/full[/fullfsync|/no-fullfsync]`` -> Pragmas (the listener's config label)."""
    parts = label.split("/")
    full = None
    if len(parts) == 3:
        full = parts[2] == "fullfsync"
    return Pragmas(parts[0].upper(), parts[1].upper() if len(parts) > 1 else "?", full)


def select_run(
    target: Path,
    run_id: str | None,
    address: tuple[str, int],
    secret: Secret,
    hostname: str | None = None,
) -> tuple[Path, RunRecord | None, list[str]]:
    """(run directory, its record or None, notes). Without ``run_id``: the newest run,
    either the newest with a record here or, when newer, the newest the listener recorded
    from this host (``hostname``, default this machine's name) and this directory, even if
    its directory is gone: the writer made and synced the run's directory before the
    listener heard of the run, so a power cut that took it lost that run (verify judges
    its commits lost) and must not leave an older run to pass in its place. Raises
    FsyncbenchError naming what the listener knows when nothing is found (an unreachable
    listener is not asked; one that refuses the secret is the error)."""
    root = powercut_root(target)
    notes: list[str] = []
    if run_id is not None and not RUN_ID_RE.fullmatch(run_id):
        raise FsyncbenchError(f"invalid --run-id {run_id!r}: expected 32 lower-case hex digits")
    if run_id is not None:
        run_dir = root / run_id
        record = None
        if (run_dir / "run.json").exists():
            record = load_run(run_dir)
        elif run_dir.is_dir():
            notes.append(
                f"no run record at {run_dir / 'run.json'}: the run's settings come from "
                "the listener"
            )
        return run_dir, record, notes
    runs = [(d, rec) for d, rec in find_runs(target) if rec is not None]
    try:
        known = [r for r in list_runs(address, secret, 10.0) if r["dir"] == str(target)]
    except Refused:
        raise
    except FsyncbenchError:
        known = []
    here = writer_identity(this_hostname() if hostname is None else hostname, target)
    mine = [r for r in known if (r["host"], r["dir"]) == here]
    recorded = {rec.run_id for _d, rec in runs if rec is not None}
    newest_local = runs[-1][1].started_utc if runs and runs[-1][1] else ""
    lost = sorted(
        (r for r in mine if r["run_id"] not in recorded and r["started_utc"] > newest_local),
        key=lambda r: (r["started_utc"], r["first_seen_utc"]),
    )
    if lost:
        run_dir = root / lost[-1]["run_id"]
        gone = "its run record is" if run_dir.is_dir() else "its directory is"
        notes.append(
            f"the newest run the listener recorded from this host and directory is "
            f"{lost[-1]['run_id']}, and {gone} gone (the writer had made and synced it before "
            "its first commit): its settings come from the listener"
        )
        return run_dir, None, notes
    if not runs:
        hint = ""
        if known:
            hint = (
                "; the listener knows run(s) "
                + ", ".join(r["run_id"] for r in known)
                + " from this directory: if the power cut lost the run record, pass --run-id"
            )
        raise FsyncbenchError(f"no powercut run in {root}{hint}")
    run_dir, record = runs[-1]
    if len(runs) > 1:
        notes.append(
            f"{len(runs) - 1} older run(s) in {root}; this is the newest (choose "
            "another with --run-id)"
        )
    return run_dir, record, notes


def verify(
    address: tuple[str, int],
    secret: Secret,
    target: Path,
    run_id: str | None,
    out_dir: Path,
    command_line: list[str],
) -> VerifyOutcome:
    """Check one run against the listener at ``address`` (which must accept ``secret``;
    neither the secret nor its proof goes into the report or the text) and write its report
    (JSON, durably) to ``out_dir``. Raises FsyncbenchError (no run, unreachable listener,
    wrong secret, unknown run, unwritable output)."""
    from fsyncbench.host import collect_host

    store.check_output_dir(out_dir)
    run_dir, record, notes = select_run(target, run_id, address, secret)
    rid = record.run_id if record else run_dir.name
    info, acknowledged = fetch_run(address, secret, rid)
    if not run_dir.is_dir():
        # a wrong directory must not read as "every commit lost, proven by a power cut";
        # the writer's own host and directory, as the listener recorded them, are not wrong:
        # the writer made and synced the run's directory before its hello, so it was lost
        here = writer_identity(this_hostname(), target)
        if (info["host"], info["dir"]) != here:
            other = (
                f"it from host {info['host']}, this is {here[0]}"
                if info["dir"] == here[1]
                else info.get("dir", "another directory")
            )
            raise FsyncbenchError(
                f"no run {rid} in {run_dir.parent}: is {target} the directory the writer used? "
                f"(the listener records {other}; the writer made and fsync'd the run's "
                "directory before its first commit)"
            )
        if run_id is not None:
            notes.append(
                f"the run's directory {run_dir} is gone, though the writer had made and synced "
                "it before its first commit, on this host and in this directory as the "
                "listener recorded: every acknowledged commit of the run is lost"
            )
    host = collect_host(str(target))
    if record is not None:
        config, primitive, payload = record.effective, record.primitive, record.payload_bytes
        db_path = run_dir / record.database
        writer_host = record.host
        now_boot = boot_id()
        rebooted = None if not (record.boot_id and now_boot) else record.boot_id != now_boot
        clean_stop = record.stop_reason
    else:
        config, primitive, payload = _label_to_pragmas(info["config"]), "unknown", None
        db_path = next(iter(sorted(run_dir.glob("journal-*.db"))), run_dir / "journal.db")
        writer_host, rebooted, clean_stop = None, None, None
    facts = PowercutFacts(
        run_id=rid,
        config=config,
        primitive=primitive,
        writer_host=writer_host or host,
        acknowledged=tuple(acknowledged),
        journal=read_journal(db_path, rid, payload),
        rebooted=rebooted,
        clean_stop=clean_stop,
        listener=format_address(*address),
    )
    judgement = judge(facts)
    report = _report(facts, judgement, host, command_line, notes, info)
    from fsyncbench.powercut.view import render_verify

    text = render_verify(facts, judgement, info, notes)
    path = save_report(report, store.prepare_output_dir(out_dir))
    return VerifyOutcome(report, judgement, text, path)


def _report(
    f: PowercutFacts,
    jm: Judgement,
    host: Host,
    command_line: list[str],
    notes: list[str],
    info: dict[str, Any],
) -> Report:
    now = _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0)
    return Report(
        schema_version=store.SCHEMA_VERSION,
        tool_version=__version__,
        kind="powercut",
        created_utc=now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        command_line=tuple(command_line),
        host=host,
        results=(),
        verdict=Verdict(
            jm.path_verdict,
            jm.decided_by,
            (
                ResultVerdict(
                    f.config.label, jm.path_verdict, jm.config_durable, jm.decided_by, jm.strength
                ),
            ),
            jm.findings,
            jm.strength,
        ),
        notes=(
            f"powercut {jm.outcome}: run {f.run_id} ({f.config.label}) from writer host "
            f"{info['host']}, started {info['started_utc']}; listener {f.listener} last "
            f"heard from it {info['last_seen_utc']}",
            *notes,
        ),
    )


def save_report(report: Report, out_dir: Path) -> Path:
    """``<host>-<UTC time>-powercut.json`` in ``out_dir``, written durably."""
    base = store.report_basename(report) + "-powercut"
    stem, n = base, 1
    while (out_dir / f"{stem}.json").exists():
        n += 1
        stem = f"{base}-{n}"
    path = out_dir / f"{stem}.json"
    store.write_durably(path, store.report_to_json(report))
    return path


__all__ = [
    "POWERCUT_DIRNAME",
    "verify",
    "judge",
    "read_journal",
    "PowercutFacts",
    "JournalState",
    "Judgement",
    "VerifyOutcome",
    "config_durability",
]
