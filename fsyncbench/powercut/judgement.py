"""The judgement after the reboot: compare the listener's record with the journal on disk.

Every commit the listener recorded was reported after its COMMIT returned, so with a
configuration that promises durability each one must still be in the journal. One missing
is proof that something under SQLite acknowledged a flush it had not made durable: the
method of Brad Fitzpatrick's diskchecker.pl (https://brad.livejournal.com/2116715.html,
https://gist.github.com/3172656), applied to a SQLite step journal.

:func:`judge` is a pure function of :class:`PowercutFacts`, so every verdict path is
testable without a power cut.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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
)
from fsyncbench.powercut import ranges as R
from fsyncbench.powercut.journal import JournalState

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
