"""``powercut verify``, after the reboot: find the run (:func:`select_run`), fetch what the
listener recorded of it, read the journal on disk (:mod:`.journal`), judge the two
(:mod:`.judgement`), write the report and the text (:mod:`.view`).

The names of the judgement (:func:`judge`, :class:`PowercutFacts`, :class:`Judgement`,
:func:`config_durability`) and of the journal (:func:`read_journal`,
:class:`JournalState`) are re-exported here, beside the command that rests on them.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fsyncbench import __version__
from fsyncbench.errors import FsyncbenchError
from fsyncbench.model import Host, Pragmas, Report, ResultVerdict, Verdict
from fsyncbench.powercut.journal import JournalState, read_journal
from fsyncbench.powercut.judgement import (
    Judgement,
    PowercutFacts,
    config_durability,
    judge,
)
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
    powercut_root,
    this_hostname,
    writer_identity,
)
from fsyncbench.powercut.secret import Secret
from fsyncbench.powercut.view import render_verify
from fsyncbench.report import store


@dataclass(frozen=True)
class VerifyOutcome:
    report: Report
    judgement: Judgement
    text: str
    path: Path

    @property
    def failed(self) -> bool:
        return self.judgement.outcome == "fail"


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
