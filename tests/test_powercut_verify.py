"""fsyncbench powercut verify, in process: judge() to the last field of every finding,
render_verify() line by line, read_journal() on real SQLite files, select_run() and
verify() on real run directories against an in-process listener (real state database,
loopback socket), save_report() into a temporary directory, and the range arithmetic.

Every expected value is written out by hand (the comments show the arithmetic); none is
computed by the code under test. No durations are asserted."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import importlib
import os
import socket
import sqlite3
import sys
import threading
import time
from pathlib import Path

import pytest
from factories import WRITER_HELLO, WRITER_RUN_ID
from factories import host as fake_host

import fsyncbench
from fsyncbench.errors import FsyncbenchError
from fsyncbench.measure.workloads import SCHEMA, step_output
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
    Pragmas,
    Report,
    ResultVerdict,
    Verdict,
)
from fsyncbench.powercut import ranges as R
from fsyncbench.powercut.journal import JournalState, _is_corruption, read_journal
from fsyncbench.powercut.judgement import Judgement, PowercutFacts, judge
from fsyncbench.powercut.listener import Listener
from fsyncbench.powercut.listener_state import ListenerState
from fsyncbench.powercut.run import (
    POWERCUT_DIRNAME,
    RUN_FORMAT,
    RunRecord,
    make_row,
    save_run,
)
from fsyncbench.powercut.secret import Secret
from fsyncbench.powercut.verify import _label_to_pragmas, save_report, select_run, verify
from fsyncbench.powercut.view import render_verify
from fsyncbench.report import store

RUN_A = WRITER_RUN_ID
SECRET = Secret("test-secret-0123456789")
LISTENER = "127.0.0.1:5400"
DB = "/data/j.db"
DISKCHECKER = (
    "Brad Fitzpatrick, diskchecker.pl (9 May 2005): a second host records every "
    "write the first believes durable; after power loss anything recorded but "
    "missing proves the storage lied (https://brad.livejournal.com/2116715.html, "
    "https://gist.github.com/3172656)"
)
HOWTOCORRUPT = "https://www.sqlite.org/howtocorrupt.html"
BOOT_ID_SOURCE = "proc(5): /proc/sys/kernel/random/boot_id"

ADVICE_LOST = (
    "Do not trust this storage path with a journal: find the volatile cache (drive "
    "write cache without power-loss protection, hypervisor cache mode, RAID "
    "controller) and disable it or fix its flush handling, then test again."
)
ADVICE_CORRUPT = (
    "A durable configuration never leaves a corrupt database on honest storage: "
    "writes were lost or reordered below SQLite."
)
ADVICE_DAMAGED = "Torn or stale pages reached the disk: the storage does not keep writes whole."
ADVICE_HOLES = "The storage reorders writes around flushes; do not trust it with a journal."
ADVICE_SURVIVED = (
    "One pass is not proof of honesty: repeat the pull several times, under "
    "load, and keep the reports."
)
ADVICE_NOTHING = (
    "Start the listener first and let the writer report commits before pulling the power."
)
ADVICE_CONFIG = (
    "For a journal that must survive power loss use WAL or TRUNCATE with "
    "synchronous=FULL, or DELETE with EXTRA."
)
SQLITE_WAL_DOC = "https://www.sqlite.org/wal.html#performance_considerations"
SQLITE_EXTRA_SOURCE = (
    "https://www.sqlite.org/pragma.html#pragma_synchronous (EXTRA); strace "
    "of SQLite 3.40 (fsyncbench audit traces the calls)"
)
APPLE_BARRIER_DOC = (
    "Apple, 'Reducing disk writes': F_BARRIERFSYNC orders writes but does not "
    "flush the drive (https://developer.apple.com/documentation/xcode/"
    "reducing-disk-writes)"
)
WAL_FULL = Pragmas("WAL", "FULL")
EATMYDATA = " The writer ran with LD_PRELOAD=libeatmydata.so, which turns syncs into no-ops."


# --------------------------------------------------------------------------- builders


def _journal(
    present=((1, 100),), integrity=("ok",), error=None, exists=True, damaged=(), note=None, path=DB
):
    return JournalState(path, exists, error, tuple(present), tuple(damaged), tuple(integrity), note)


def _facts(
    acked=((1, 100),),
    journal=None,
    config=WAL_FULL,
    rebooted=True,
    clean_stop=None,
    host=None,
    primitive="fdatasync",
):
    return PowercutFacts(
        run_id=RUN_A,
        config=config,
        primitive=primitive,
        writer_host=host or fake_host(),
        acknowledged=tuple(acked),
        journal=journal or _journal(),
        rebooted=rebooted,
        clean_stop=clean_stop,
        listener=LISTENER,
    )


def _ev(**changes):
    """The evidence of the headline finding for _facts() with its defaults (acknowledged
    1-100, all present, intact, rebooted), with ``changes`` applied."""
    ev = {
        "run_id": RUN_A,
        "config": "wal/full",
        "sync_primitive": "fdatasync",
        "listener": LISTENER,
        "database": DB,
        "acknowledged": 100,
        "acknowledged_ranges": [[1, 100]],
        "present": 100,
        "present_ranges": [[1, 100]],
        "lost": 0,
        "lost_ranges": [],
        "hole_ranges": [],
        "committed_not_acknowledged": 0,
        "integrity_check": ["ok"],
        "journal_error": None,
        "journal_note": None,
        "journal_exists": True,
        "rebooted": True,
        "clean_stop": None,
    }
    assert set(changes) <= set(ev)
    ev.update(changes)
    return ev


def _lost(message, ev, subject="wal/full"):
    return Finding(
        "powercut-acknowledged-lost", RISK, subject, message, ADVICE_LOST, ev, DISKCHECKER
    )


def _corrupt(message, integrity, error=None, subject="wal/full"):
    return Finding(
        "powercut-journal-corrupt",
        RISK,
        subject,
        "The journal is damaged after the power cut: " + message,
        ADVICE_CORRUPT,
        {"integrity_check": list(integrity), "error": error},
        HOWTOCORRUPT,
    )


def _damaged(message, ranges, subject="wal/full"):
    return Finding(
        "powercut-damaged-rows",
        RISK,
        subject,
        message,
        ADVICE_DAMAGED,
        {"damaged_ranges": [list(r) for r in ranges]},
        DISKCHECKER,
    )


def _holes(message, ranges, subject="wal/full"):
    return Finding(
        "powercut-out-of-order",
        RISK,
        subject,
        message,
        ADVICE_HOLES,
        {"hole_ranges": [list(r) for r in ranges]},
        DISKCHECKER,
    )


def _survived(message, ev, subject="wal/full"):
    return Finding("powercut-survived", INFO, subject, message, ADVICE_SURVIVED, ev, DISKCHECKER)


def _nothing(ev, subject="wal/full"):
    return Finding(
        "powercut-nothing-acknowledged",
        WARNING,
        subject,
        "The listener holds no acknowledged commit of this run: there is nothing to check.",
        ADVICE_NOTHING,
        ev,
        DISKCHECKER,
    )


def _clean_stop(reason, subject="wal/full"):
    return Finding(
        "powercut-clean-stop",
        WARNING,
        subject,
        f"The writer stopped cleanly ({reason}) before the verify: it was not "
        "running when the power went, so this run says nothing about power loss.",
        "Pull the power while the writer is committing.",
        {"stop_reason": reason},
        "",
    )


def _no_reboot(subject="wal/full"):
    return Finding(
        "powercut-no-reboot",
        WARNING,
        subject,
        "The machine has not rebooted since the writer started (same boot id): no "
        "power cut came between writing and verifying.",
        "Pull the power cord while the writer runs, boot, then verify.",
        {"rebooted": False},
        BOOT_ID_SOURCE,
    )


def _reboot_unknown(subject="wal/full"):
    return Finding(
        "powercut-reboot-unknown",
        INFO,
        subject,
        "This OS gives no boot id, so verify cannot tell whether a power cut happened.",
        "Make sure the machine really lost power while the writer ran.",
        {"rebooted": None},
        "",
    )


def _loss_without_reboot(subject="wal/full"):
    return Finding(
        "powercut-loss-without-reboot",
        WARNING,
        subject,
        "Commits were lost although this machine did not reboot: a network storage "
        "server, a restored backup or an edited database lost them, not this power "
        "cut.",
        "Check what else writes to or restores this directory.",
        {},
        "",
    )


WAL_NORMAL = Finding(
    "config-not-durable",
    WARNING,
    "wal/normal",
    "wal/normal: WAL with synchronous=NORMAL syncs only at checkpoints; the last commits may "
    "roll back after power loss.",
    ADVICE_CONFIG,
    {"journal_mode": "WAL", "synchronous": "NORMAL", "fullfsync": None},
    SQLITE_WAL_DOC,
)
DELETE_FULL = Finding(
    "config-not-durable",
    WARNING,
    "delete/full",
    "delete/full: the journal unlink that commits is not synced (DELETE needs "
    "synchronous=EXTRA); the last commit may roll back after power loss.",
    ADVICE_CONFIG,
    {"journal_mode": "DELETE", "synchronous": "FULL", "fullfsync": None},
    SQLITE_EXTRA_SOURCE,
)
DARWIN_BARRIER = Finding(
    "config-not-durable",
    WARNING,
    "wal/full/fullfsync",
    "wal/full/fullfsync: this SQLite implements fullfsync with F_BARRIERFSYNC (ordering, not "
    "durability).",
    # no "DELETE with EXTRA" on macOS: unixDelete's directory sync is a plain fsync there
    "For a journal that must survive power loss use WAL or TRUNCATE with synchronous=FULL, "
    "with fullfsync=ON.",
    {"journal_mode": "WAL", "synchronous": "FULL", "fullfsync": True},
    APPLE_BARRIER_DOC,
)

ODDS_1_23 = tuple((s, s) for s in range(1, 24, 2))  # 1, 3, ..., 23: 12 ranges
EVENS_2_24 = tuple((s, s) for s in range(2, 25, 2))  # 2, 4, ..., 24: 12 ranges
ODDS_1_25 = tuple((s, s) for s in range(1, 26, 2))  # 1, 3, ..., 25: 13 ranges
EVENS_2_22 = tuple((s, s) for s in range(2, 23, 2))  # 2, 4, ..., 22: 11 ranges
INTEGRITY_4 = (
    "*** in database main ***",
    "Page 7: never used",
    "Page 8: never used",
    "Page 9: never used",
)
MIXED_PRESENT = ((1, 5), (8, 10), (14, 15))
INDEX_ERROR = ("row 3 missing from index sqlite_autoindex_steps_1",)


def _mixed_facts(**kw):
    """Acknowledged 1-10; present 1-5, 8-10, 14-15 (lost 6-7; 11-13 never acknowledged and
    missing below 14-15: holes; 14-15 committed, not acknowledged); row 3 damaged; the
    integrity check names an index; the writer stopped on an error; boot id unknown."""
    return _facts(
        acked=[(1, 10)],
        journal=_journal(present=MIXED_PRESENT, damaged=[(3, 3)], integrity=INDEX_ERROR),
        rebooted=None,
        clean_stop="stopped by an error",
        **kw,
    )


MIXED_EV = _ev(
    acknowledged=10,
    acknowledged_ranges=[[1, 10]],
    present=10,
    present_ranges=[[1, 5], [8, 10], [14, 15]],
    lost=2,
    lost_ranges=[[6, 7]],
    hole_ranges=[[11, 13]],
    committed_not_acknowledged=2,
    integrity_check=list(INDEX_ERROR),
    rebooted=None,
    clean_stop="stopped by an error",
)


# --------------------------------------------------------------------------- judge


JUDGE_CASES = [
    pytest.param(
        _facts(),
        Judgement(
            "pass",
            HONEST_FLUSH,
            "powercut-survived",
            True,
            (),
            (),
            0,
            (_survived("All 100 acknowledged commits survived and the journal is intact.", _ev()),),
            MEASURED,
        ),
        id="survived",
    ),
    pytest.param(
        # 1,235-2,345 (1,111 commits) were committed but not yet acknowledged
        _facts(acked=[(1, 1234)], journal=_journal(present=[(1, 2345)]), rebooted=None),
        Judgement(
            "pass",
            HONEST_FLUSH,
            "powercut-survived",
            True,
            (),
            (),
            1111,
            (
                _survived(
                    "All 1,234 acknowledged commits survived and the journal is "
                    "intact; 1,111 more were committed but not yet acknowledged.",
                    _ev(
                        acknowledged=1234,
                        acknowledged_ranges=[[1, 1234]],
                        present=2345,
                        present_ranges=[[1, 2345]],
                        committed_not_acknowledged=1111,
                        rebooted=None,
                    ),
                ),
                _reboot_unknown(),
            ),
            MEASURED,
        ),
        id="survived-reboot-unknown",
    ),
    pytest.param(
        # a clean stop decides before the missing reboot; both are reported
        _facts(rebooted=False, clean_stop="stopped by Ctrl-C"),
        Judgement(
            "pass",
            UNVERIFIABLE,
            "powercut-clean-stop",
            True,
            (),
            (),
            0,
            (
                _survived(
                    "All 100 acknowledged commits survived and the journal is intact.",
                    _ev(rebooted=False, clean_stop="stopped by Ctrl-C"),
                ),
                _clean_stop("stopped by Ctrl-C"),
                _no_reboot(),
            ),
            MEASURED,
        ),
        id="survived-clean-stop-no-reboot",
    ),
    pytest.param(
        _facts(rebooted=False),
        Judgement(
            "pass",
            UNVERIFIABLE,
            "powercut-no-reboot",
            True,
            (),
            (),
            0,
            (
                _survived(
                    "All 100 acknowledged commits survived and the journal is intact.",
                    _ev(rebooted=False),
                ),
                _no_reboot(),
            ),
            MEASURED,
        ),
        id="survived-no-reboot",
    ),
    pytest.param(
        # acknowledged 1-10; present 1-10, 15-20: 11-14 missing below 15 (holes), 15-20 (6)
        # not acknowledged; WAL/NORMAL promises nothing, so the holes are no failure
        _facts(
            acked=[(1, 10)],
            journal=_journal(present=[(1, 10), (15, 20)]),
            config=Pragmas("WAL", "NORMAL"),
        ),
        Judgement(
            "pass",
            UNVERIFIABLE,
            "config-not-durable",
            False,
            (),
            ((11, 14),),
            6,
            (
                _survived(
                    "All 10 acknowledged commits survived and the journal is intact; "
                    "6 more were committed but not yet acknowledged.",
                    _ev(
                        config="wal/normal",
                        acknowledged=10,
                        acknowledged_ranges=[[1, 10]],
                        present=16,
                        present_ranges=[[1, 10], [15, 20]],
                        hole_ranges=[[11, 14]],
                        committed_not_acknowledged=6,
                    ),
                    subject="wal/normal",
                ),
                WAL_NORMAL,
            ),
            MEASURED,
        ),
        id="pass-not-durable-with-holes",
    ),
    pytest.param(
        _facts(
            acked=(),
            journal=_journal(present=()),
            rebooted=None,
            clean_stop="reached --max-commits 5",
        ),
        Judgement(
            "inconclusive",
            UNVERIFIABLE,
            "powercut-nothing-acknowledged",
            True,
            (),
            (),
            0,
            (
                _nothing(
                    _ev(
                        acknowledged=0,
                        acknowledged_ranges=[],
                        present=0,
                        present_ranges=[],
                        rebooted=None,
                        clean_stop="reached --max-commits 5",
                    )
                ),
                _clean_stop("reached --max-commits 5"),
                _reboot_unknown(),
            ),
            NO_STRENGTH,
        ),
        id="inconclusive-empty",
    ),
    pytest.param(
        # nothing acknowledged; present 1-2, 5-6: 3-4 missing below 5 (holes), 4 unacknowledged
        _facts(
            acked=(), journal=_journal(present=[(1, 2), (5, 6)]), config=Pragmas("WAL", "NORMAL")
        ),
        Judgement(
            "inconclusive",
            UNVERIFIABLE,
            "powercut-nothing-acknowledged",
            False,
            (),
            ((3, 4),),
            4,
            (
                _nothing(
                    _ev(
                        config="wal/normal",
                        acknowledged=0,
                        acknowledged_ranges=[],
                        present=4,
                        present_ranges=[[1, 2], [5, 6]],
                        hole_ranges=[[3, 4]],
                        committed_not_acknowledged=4,
                    ),
                    subject="wal/normal",
                ),
                WAL_NORMAL,
            ),
        ),
        id="inconclusive-not-durable-holes",
    ),
    pytest.param(
        # acknowledged 1-24, present the odd numbers: the 12 even ones are lost (10 shown)
        _facts(
            acked=[(1, 24)], journal=_journal(present=ODDS_1_23), host=fake_host(fs_type="tmpfs")
        ),
        Judgement(
            "fail",
            NO_FLUSH,
            "powercut-acknowledged-lost",
            True,
            EVENS_2_24,
            (),
            0,
            (
                _lost(
                    "12 of 24 acknowledged commits are missing from the journal: seq 2, 4, "
                    "6, 8, 10, 12, 14, 16, 18, 20, ... (2 more ranges). The journal was "
                    "on tmpfs, which keeps data in RAM.",
                    _ev(
                        acknowledged=24,
                        acknowledged_ranges=[[1, 24]],
                        present=12,
                        present_ranges=[list(r) for r in ODDS_1_23],
                        lost=12,
                        lost_ranges=[list(r) for r in EVENS_2_24],
                    ),
                ),
            ),
            PROVEN,
        ),
        id="lost-12-ranges-on-tmpfs",
    ),
    pytest.param(
        _facts(
            journal=_journal(present=[(1, 90)]),
            rebooted=False,
            host=fake_host(ld_preload="libeatmydata.so"),
        ),
        Judgement(
            "fail",
            NO_FLUSH,
            "powercut-acknowledged-lost",
            True,
            ((91, 100),),
            (),
            0,
            (
                _lost(
                    "10 of 100 acknowledged commits are missing from the journal: seq "
                    "91-100." + EATMYDATA,
                    _ev(
                        present=90,
                        present_ranges=[[1, 90]],
                        lost=10,
                        lost_ranges=[[91, 100]],
                        rebooted=False,
                    ),
                ),
                _no_reboot(),
                _loss_without_reboot(),
            ),
            MEASURED,
        ),
        id="lost-eatmydata-no-reboot",
    ),
    pytest.param(
        _facts(
            journal=_journal(present=[(1, 90)]), rebooted=False, config=Pragmas("DELETE", "FULL")
        ),
        Judgement(
            "fail",
            UNVERIFIABLE,
            "config-not-durable",
            False,
            ((91, 100),),
            (),
            0,
            (
                _lost(
                    "10 of 100 acknowledged commits are missing from the journal: seq 91-100.",
                    _ev(
                        config="delete/full",
                        present=90,
                        present_ranges=[[1, 90]],
                        lost=10,
                        lost_ranges=[[91, 100]],
                        rebooted=False,
                    ),
                    subject="delete/full",
                ),
                DELETE_FULL,
                _no_reboot(subject="delete/full"),
            ),
            MEASURED,
        ),
        id="lost-delete-full-no-reboot",
    ),
    pytest.param(
        _facts(
            journal=_journal(present=[(1, 90)]),
            config=Pragmas("WAL", "FULL", True),
            host=fake_host(os_name="Darwin"),
            primitive="F_BARRIERFSYNC",
        ),
        Judgement(
            "fail",
            UNVERIFIABLE,
            "config-not-durable",
            False,
            ((91, 100),),
            (),
            0,
            (
                _lost(
                    "10 of 100 acknowledged commits are missing from the journal: seq 91-100.",
                    _ev(
                        config="wal/full/fullfsync",
                        sync_primitive="F_BARRIERFSYNC",
                        present=90,
                        present_ranges=[[1, 90]],
                        lost=10,
                        lost_ranges=[[91, 100]],
                    ),
                    subject="wal/full/fullfsync",
                ),
                DARWIN_BARRIER,
            ),
            MEASURED,
        ),
        id="lost-darwin-barrier-fsync",
    ),
    pytest.param(
        _facts(journal=_journal(present=(), integrity=(), exists=False)),
        Judgement(
            "fail",
            VOLATILE_CACHE,
            "powercut-acknowledged-lost",
            True,
            ((1, 100),),
            (),
            0,
            (
                _lost(
                    "100 of 100 acknowledged commits are missing from the journal: seq 1-100.",
                    _ev(
                        present=0,
                        present_ranges=[],
                        lost=100,
                        lost_ranges=[[1, 100]],
                        integrity_check=[],
                        journal_exists=False,
                    ),
                ),
            ),
            PROVEN,
        ),
        id="journal-gone",
    ),
    pytest.param(
        _facts(journal=_journal(present=(), integrity=(), error="file is not a database")),
        Judgement(
            "fail",
            VOLATILE_CACHE,
            "powercut-acknowledged-lost",
            True,
            ((1, 100),),
            (),
            0,
            (
                _lost(
                    "100 of 100 acknowledged commits are missing from the journal: seq 1-100.",
                    _ev(
                        present=0,
                        present_ranges=[],
                        lost=100,
                        lost_ranges=[[1, 100]],
                        integrity_check=[],
                        journal_error="file is not a database",
                    ),
                ),
                _corrupt("file is not a database.", (), "file is not a database"),
            ),
            PROVEN,
        ),
        id="journal-unreadable",
    ),
    pytest.param(
        # only the first three integrity lines go into the message
        _facts(journal=_journal(integrity=INTEGRITY_4)),
        Judgement(
            "fail",
            VOLATILE_CACHE,
            "powercut-journal-corrupt",
            True,
            (),
            (),
            0,
            (
                _corrupt(
                    "PRAGMA integrity_check: *** in database main ***; Page 7: never "
                    "used; Page 8: never used.",
                    INTEGRITY_4,
                ),
            ),
            PROVEN,
        ),
        id="integrity-check-fails",
    ),
    pytest.param(
        _facts(journal=_journal(damaged=ODDS_1_23)),
        Judgement(
            "fail",
            VOLATILE_CACHE,
            "powercut-damaged-rows",
            True,
            (),
            (),
            0,
            (
                _damaged(
                    "12 rows differ from what the writer committed: seq 1, 3, 5, 7, 9, "
                    "11, 13, 15, 17, 19, ... (2 more ranges).",
                    ODDS_1_23,
                ),
            ),
            PROVEN,
        ),
        id="damaged-12-ranges",
    ),
    pytest.param(
        _facts(acked=[(1, 2000)], journal=_journal(present=[(1, 2000)], damaged=[(1, 1234)])),
        Judgement(
            "fail",
            VOLATILE_CACHE,
            "powercut-damaged-rows",
            True,
            (),
            (),
            0,
            (
                _damaged(
                    "1,234 rows differ from what the writer committed: seq 1-1234.", [(1, 1234)]
                ),
            ),
            PROVEN,
        ),
        id="damaged-1234-rows",
    ),
    pytest.param(
        # acknowledged = present = the odd numbers 1-25: the 12 even ones are holes
        _facts(acked=ODDS_1_25, journal=_journal(present=ODDS_1_25)),
        Judgement(
            "fail",
            VOLATILE_CACHE,
            "powercut-out-of-order",
            True,
            (),
            EVENS_2_24,
            0,
            (
                _holes(
                    "Commits 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, ... (2 more ranges) are "
                    "missing although later commits survived: writes reached stable "
                    "media out of order.",
                    EVENS_2_24,
                ),
            ),
            PROVEN,
        ),
        id="holes-12-ranges",
    ),
    pytest.param(
        # acknowledged 3-5, present 2-5: 1 is missing below 2 (a hole); 2 not acknowledged
        _facts(acked=[(3, 5)], journal=_journal(present=[(2, 5)])),
        Judgement(
            "fail",
            VOLATILE_CACHE,
            "powercut-out-of-order",
            True,
            (),
            ((1, 1),),
            1,
            (
                _holes(
                    "Commits 1 are missing although later commits survived: writes "
                    "reached stable media out of order.",
                    [(1, 1)],
                ),
            ),
            PROVEN,
        ),
        id="hole-at-seq-1",
    ),
    pytest.param(
        _mixed_facts(),
        Judgement(
            "fail",
            VOLATILE_CACHE,
            "powercut-acknowledged-lost",
            True,
            ((6, 7),),
            ((11, 13),),
            2,
            (
                _lost(
                    "2 of 10 acknowledged commits are missing from the journal: seq 6-7.", MIXED_EV
                ),
                _corrupt(
                    "PRAGMA integrity_check: row 3 missing from index sqlite_autoindex_steps_1.",
                    INDEX_ERROR,
                ),
                _damaged("1 row differs from what the writer committed: seq 3.", [(3, 3)]),
                _holes(
                    "Commits 11-13 are missing although later commits survived: writes "
                    "reached stable media out of order.",
                    [(11, 13)],
                ),
                _clean_stop("stopped by an error"),
                _reboot_unknown(),
            ),
            PROVEN,
        ),
        id="every-failure-in-order",
    ),
]


@pytest.mark.parametrize("facts,expected", JUDGE_CASES)
def test_judge_gives_the_whole_judgement(facts, expected):
    assert judge(facts) == expected


# --------------------------------------------------------------------------- render_verify

RUN_INFO = {
    **WRITER_HELLO,
    "first_seen_utc": "2024-05-01T12:00:01Z",
    "last_seen_utc": "2024-05-01T12:05:00Z",
    "count": 100,
    "max_seq": 100,
}
WRITER_RUNNING = (
    "  writer     host writer-host, pid 4242, started 2024-05-01T12:00:00Z; no "
    "clean stop (running when it ended)"
)
FAIL_STORAGE = ": the storage acknowledged writes it did not keep."
FAIL_CONFIG = (
    "; this configuration does not promise power-loss durability, so the loss is "
    "the configuration's, not proof against the storage."
)


# rows read whole (tests/test_screen_width.py checks the layout at 80 and 100)
pytestmark = pytest.mark.usefixtures("wide_screen")


def _lines(*lines):
    return "\n".join(lines) + "\n"


def test_render_every_row_of_a_failed_run():
    facts = _mixed_facts()
    text = render_verify(facts, judge(facts), RUN_INFO, ["first note", "second note"])
    assert text == _lines(
        "fsyncbench powercut verify",
        f"  run        {RUN_A} (wal/full, sync primitive fdatasync)",
        "  writer     host writer-host, pid 4242, started 2024-05-01T12:00:00Z; stopped "
        "cleanly: stopped by an error",
        "  rebooted   unknown",
        "  listener   127.0.0.1:5400: 10 acknowledged commits (1-10)",
        "  journal    /data/j.db",
        # 1-5, 8-10, 14-15: 5 + 3 + 2 = 10 present; 14-15 not acknowledged
        "             10 commits present (1-5, 8-10, 14-15); 2 committed but not acknowledged "
        "(normal)",
        "  integrity  row 3 missing from index sqlite_autoindex_steps_1",
        "  lost       2 acknowledged commits: 6-7",
        "  holes      unacknowledged commits missing below later ones: 11-13",
        "",
        "Result: FAIL: 2 of 10 acknowledged commits are lost" + FAIL_STORAGE,
        "Path verdict for wal/full: volatile_cache, proven by a power cut (decided by "
        "powercut-acknowledged-lost)",
        "  [RISK] powercut-acknowledged-lost (wal/full): 2 of 10 acknowledged commits are "
        "missing from the journal: seq 6-7. Advice: " + ADVICE_LOST,
        "  [RISK] powercut-journal-corrupt (wal/full): The journal is damaged after the power "
        "cut: PRAGMA integrity_check: row 3 missing from index sqlite_autoindex_steps_1. "
        "Advice: " + ADVICE_CORRUPT,
        "  [RISK] powercut-damaged-rows (wal/full): 1 row differs from what the writer "
        "committed: seq 3. Advice: " + ADVICE_DAMAGED,
        "  [RISK] powercut-out-of-order (wal/full): Commits 11-13 are missing although later "
        "commits survived: writes reached stable media out of order. Advice: " + ADVICE_HOLES,
        "  [WARN] powercut-clean-stop (wal/full): The writer stopped cleanly (stopped by an "
        "error) before the verify: it was not running when the power went, so this run says "
        "nothing about power loss. Advice: Pull the power while the writer is committing.",
        "  [info] powercut-reboot-unknown (wal/full): This OS gives no boot id, so verify "
        "cannot tell whether a power cut happened. Advice: Make sure the machine really lost "
        "power while the writer ran.",
        "Note: first note",
        "Note: second note",
    )


def test_render_a_missing_journal():
    # acknowledged: the 7 odd numbers 1-13; the listener row shows 5 ranges, the lost row all
    odds = [(s, s) for s in range(1, 14, 2)]
    facts = _facts(acked=odds, journal=_journal(present=(), integrity=(), exists=False))
    text = render_verify(facts, judge(facts), RUN_INFO, [])
    assert text == _lines(
        "fsyncbench powercut verify",
        f"  run        {RUN_A} (wal/full, sync primitive fdatasync)",
        WRITER_RUNNING,
        "  rebooted   yes (the boot id changed since the writer started)",
        "  listener   127.0.0.1:5400: 7 acknowledged commits (1, 3, 5, 7, 9, ... (2 more ranges))",
        "  journal    /data/j.db",
        "             MISSING (the database file is gone)",
        "  integrity  not run",
        "  lost       7 acknowledged commits: 1, 3, 5, 7, 9, 11, 13",
        "",
        "Result: FAIL: 7 of 7 acknowledged commits are lost" + FAIL_STORAGE,
        "Path verdict for wal/full: volatile_cache, proven by a power cut (decided by "
        "powercut-acknowledged-lost)",
        "  [RISK] powercut-acknowledged-lost (wal/full): 7 of 7 acknowledged commits are "
        "missing from the journal: seq 1, 3, 5, 7, 9, 11, 13. Advice: " + ADVICE_LOST,
    )


def test_render_an_unreadable_journal_without_a_reboot():
    facts = _facts(
        journal=_journal(present=(), integrity=(), error="file is not a database"), rebooted=False
    )
    text = render_verify(facts, judge(facts), RUN_INFO, [])
    assert text == _lines(
        "fsyncbench powercut verify",
        f"  run        {RUN_A} (wal/full, sync primitive fdatasync)",
        WRITER_RUNNING,
        "  rebooted   NO (same boot as the writer: no power cut happened)",
        "  listener   127.0.0.1:5400: 100 acknowledged commits (1-100)",
        "  journal    /data/j.db",
        "             unreadable: file is not a database",
        "  integrity  not run",
        "  lost       100 acknowledged commits: 1-100",
        "",
        "Result: FAIL: 100 of 100 acknowledged commits are lost" + FAIL_STORAGE,
        "Path verdict for wal/full: volatile_cache, measured (decided by "
        "powercut-acknowledged-lost)",
        "  [RISK] powercut-acknowledged-lost (wal/full): 100 of 100 acknowledged commits are "
        "missing from the journal: seq 1-100. Advice: " + ADVICE_LOST,
        "  [RISK] powercut-journal-corrupt (wal/full): The journal is damaged after the power "
        "cut: file is not a database. Advice: " + ADVICE_CORRUPT,
        "  [WARN] powercut-no-reboot (wal/full): The machine has not rebooted since the writer "
        "started (same boot id): no power cut came between writing and verifying. Advice: "
        "Pull the power cord while the writer runs, boot, then verify.",
        "  [WARN] powercut-loss-without-reboot (wal/full): Commits were lost although this "
        "machine did not reboot: a network storage server, a restored backup or an edited "
        "database lost them, not this power cut. Advice: Check what else writes to or "
        "restores this directory.",
    )


def test_render_an_empty_database_with_nothing_acknowledged():
    facts = _facts(
        acked=(),
        journal=_journal(present=(), note="the steps table is missing: the database is empty"),
    )
    text = render_verify(facts, judge(facts), RUN_INFO, ["no run record here"])
    assert text == _lines(
        "fsyncbench powercut verify",
        f"  run        {RUN_A} (wal/full, sync primitive fdatasync)",
        WRITER_RUNNING,
        "  rebooted   yes (the boot id changed since the writer started)",
        "  listener   127.0.0.1:5400: 0 acknowledged commits (none)",
        "  journal    /data/j.db",
        "             0 commits present (none); the steps table is missing: the database is empty",
        "  integrity  ok",
        "  lost       none",
        "",
        "Result: INCONCLUSIVE: the listener holds no acknowledged commit of this run.",
        "Path verdict for wal/full: unverifiable (decided by powercut-nothing-acknowledged)",
        "  [WARN] powercut-nothing-acknowledged (wal/full): The listener holds no acknowledged "
        "commit of this run: there is nothing to check. Advice: " + ADVICE_NOTHING,
        "Note: no run record here",
    )


def test_render_a_pass_with_many_ranges():
    # acknowledged 1-1000 and the even numbers 1002-1010 (6 ranges, 1,005 commits); present
    # also 1012-2234 (1,223 more: 2,228 in 7 ranges); the odd numbers 1001-1011 are holes,
    # which WAL/NORMAL does not promise to prevent
    acked = [(1, 1000)] + [(s, s) for s in range(1002, 1011, 2)]
    facts = _facts(
        acked=acked,
        journal=_journal(present=acked + [(1012, 2234)]),
        config=Pragmas("WAL", "NORMAL"),
    )
    text = render_verify(facts, judge(facts), RUN_INFO, [])
    assert text == _lines(
        "fsyncbench powercut verify",
        f"  run        {RUN_A} (wal/normal, sync primitive fdatasync)",
        WRITER_RUNNING,
        "  rebooted   yes (the boot id changed since the writer started)",
        "  listener   127.0.0.1:5400: 1,005 acknowledged commits (1-1000, 1002, 1004, 1006, "
        "1008, ... (1 more ranges))",
        "  journal    /data/j.db",
        "             2,228 commits present (1-1000, 1002, 1004, 1006, 1008, ... (2 more "
        "ranges)); 1,223 committed but not acknowledged (normal)",
        "  integrity  ok",
        "  lost       none",
        "  holes      unacknowledged commits missing below later ones: 1001, 1003, 1005, 1007, "
        "1009, 1011",
        "",
        "Result: PASS: all 1,005 acknowledged commits survived and the journal is intact.",
        "Path verdict for wal/normal: unverifiable (decided by config-not-durable)",
        "  [info] powercut-survived (wal/normal): All 1,005 acknowledged commits survived and "
        "the journal is intact; 1,223 more were committed but not yet acknowledged. Advice: "
        + ADVICE_SURVIVED,
        "  [WARN] config-not-durable (wal/normal): "
        + WAL_NORMAL.message
        + " Advice: "
        + ADVICE_CONFIG,
    )


INTEGRITY_6 = (
    "*** in database main ***",
    "Page 3: never used",
    "Page 4: never used",
    "Page 5: never used",
    "Page 6: never used",
    "Page 7: never used",
)


@pytest.mark.parametrize(
    "config,lost,integrity,headline,integrity_row",
    [
        # the integrity row shows the first five lines, the finding the first three
        (
            Pragmas("WAL", "FULL"),
            False,
            INTEGRITY_6,
            "Result: FAIL: the journal did not survive intact" + FAIL_STORAGE,
            (
                "*** in database main ***; Page 3: never used; Page 4: never used; Page 5: never used; "
                "Page 6: never used"
            ),
        ),
        (
            Pragmas("WAL", "NORMAL"),
            False,
            INTEGRITY_6,
            "Result: FAIL: the journal did not survive intact" + FAIL_CONFIG,
            (
                "*** in database main ***; Page 3: never used; Page 4: never used; Page 5: never used; "
                "Page 6: never used"
            ),
        ),
        (
            Pragmas("WAL", "NORMAL"),
            True,
            ("ok",),
            "Result: FAIL: 10 of 100 acknowledged commits are lost" + FAIL_CONFIG,
            "ok",
        ),
    ],
)
def test_render_headlines_of_failures(config, lost, integrity, headline, integrity_row):
    facts = _facts(
        journal=_journal(present=[(1, 90)] if lost else [(1, 100)], integrity=integrity),
        config=config,
    )
    lines = render_verify(facts, judge(facts), RUN_INFO, []).splitlines()
    assert lines[7] == "  integrity  " + integrity_row
    assert lines[9:11] == ["", headline]


# --------------------------------------------------------------------------- read_journal


def _make_journal(path: Path, rows) -> Path:
    conn = sqlite3.connect(path)
    try:
        conn.execute(SCHEMA)
        conn.executemany("INSERT INTO steps VALUES (?, ?, ?, ?, ?)", rows)
        conn.commit()
    finally:
        conn.close()
    return path


def _odd_rows(run_id=RUN_A):
    """Seq 1-4 as the writer commits them (64-byte outputs), then every way a row can differ
    or not count: seq 5 with a stale input hash, 6 with a 32-byte output (its JSON still
    names seq 6), 7 with output naming seq 8, 8 with output 'torn', 9 with an integer
    output, 10 with a JSON list, 11 as the writer wrote it; seq 0, -1 and 'x' are not commit
    numbers; seq 2 of another run."""
    good = [make_row(run_id, s, 64) for s in (1, 2, 3, 4, 11)]
    r5, r6, r7, r8, r9, r10 = (make_row(run_id, s, 64) for s in (5, 6, 7, 8, 9, 10))
    return good + [
        (run_id, 0, "step-0", "x", "{}"),
        (run_id, -1, "step--1", "x", "{}"),
        (run_id, "x", "step-x", "x", "{}"),
        r5[:3] + ("0" * 64,) + r5[4:],
        r6[:4] + (step_output(6, 32),),
        r7[:4] + (step_output(8, 64),),
        r8[:4] + ("torn",),
        r9[:4] + (9,),
        r10[:4] + ("[10]",),
        make_row("b" * 32, 2, 64),
    ]


def test_read_journal_compares_every_row_with_what_the_writer_committed(tmp_path):
    db = _make_journal(tmp_path / "journal-wal-full.db", _odd_rows())
    # with the payload size known every output must match byte for byte: 5-10 differ
    assert read_journal(db, RUN_A, 64) == JournalState(
        str(db), True, None, ((1, 11),), ((5, 10),), ("ok",), None
    )
    # without it (no run record) an output counts if it is JSON naming its seq: 6 passes
    assert read_journal(db, RUN_A, None) == JournalState(
        str(db), True, None, ((1, 11),), ((5, 5), (7, 10)), ("ok",), None
    )
    # the other run's journal rows are its own
    assert read_journal(db, "b" * 32, 64) == JournalState(
        str(db), True, None, ((2, 2),), (), ("ok",), None
    )


def test_read_journal_of_a_missing_file(tmp_path):
    path = tmp_path / "journal-wal-full.db"
    assert read_journal(path, RUN_A, 64) == JournalState(str(path), False, None, (), (), (), None)
    assert not path.exists()  # never created


def test_read_journal_of_an_empty_file(tmp_path):
    path = tmp_path / "journal-wal-full.db"
    path.write_bytes(b"")
    assert read_journal(path, RUN_A, 64) == JournalState(
        str(path), True, None, (), (), ("ok",), "the steps table is missing: the database is empty"
    )


def test_read_journal_of_a_file_that_is_not_a_database(tmp_path):
    path = tmp_path / "journal-wal-full.db"
    path.write_bytes(b"this is not a database " * 200)
    assert read_journal(path, RUN_A, 64) == JournalState(
        str(path), True, "file is not a database", (), (), (), None
    )


def test_read_journal_of_a_malformed_database(tmp_path):
    path = _make_journal(
        tmp_path / "journal-wal-full.db", [make_row(RUN_A, s, 64) for s in (1, 2, 3)]
    )
    data = bytearray(path.read_bytes())
    data[4096:4104] = b"\xff" * 8  # the header of page 2, the steps table's root page
    path.write_bytes(bytes(data))
    assert read_journal(path, RUN_A, 64) == JournalState(
        str(path), True, "database disk image is malformed", (), (), (), None
    )


def test_read_journal_reports_a_damaged_index(tmp_path):
    path = _make_journal(
        tmp_path / "journal-wal-full.db", [make_row(RUN_A, s, 64) for s in (1, 2, 3)]
    )
    conn = sqlite3.connect(path)
    conn.execute("CREATE INDEX by_name ON steps(name)")
    conn.commit()
    # the index now claims to hold another column than its entries do
    conn.execute("PRAGMA writable_schema=ON")
    conn.execute(
        "UPDATE sqlite_master SET sql='CREATE INDEX by_name ON steps(input_hash)' "
        "WHERE name='by_name'"
    )
    conn.commit()
    conn.close()
    assert read_journal(path, RUN_A, 64) == JournalState(
        str(path),
        True,
        None,
        ((1, 3),),
        (),
        (
            "row 1 missing from index by_name",
            "row 2 missing from index by_name",
            "row 3 missing from index by_name",
        ),
        None,
    )


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_NOFILE is POSIX (resource)")
def test_read_journal_without_a_file_descriptor_left_is_an_error(tmp_path):
    """Not evidence about the power cut: the journal cannot even be opened."""
    import resource

    path = _make_journal(tmp_path / "journal-wal-full.db", [make_row(RUN_A, 1, 64)])
    lowest_free = os.dup(0)
    os.close(lowest_free)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (lowest_free, hard))
    try:
        with pytest.raises(FsyncbenchError) as err:
            read_journal(path, RUN_A, 64)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert str(err.value) == f"cannot read the journal {path}: unable to open database file"


@pytest.mark.slow
def test_read_journal_waits_only_as_long_as_it_is_told(tmp_path):
    """A lock held past the busy timeout is an error (not a verdict): a writer holding it
    for 1 s outlasts a 0.1 s timeout (but not the 5 s default)."""
    path = _make_journal(tmp_path / "journal-wal-full.db", [make_row(RUN_A, 1, 64)])
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")
    release = threading.Timer(1.0, lambda: holder.execute("ROLLBACK"))
    release.start()
    try:
        with pytest.raises(FsyncbenchError) as err:
            read_journal(path, RUN_A, 64, busy_timeout_s=0.1)
    finally:
        release.join()
        holder.close()
    assert str(err.value) == f"cannot read the journal {path}: database is locked"
    # once the lock is gone the same call reads the journal
    assert read_journal(path, RUN_A, 64, busy_timeout_s=0.1).present == ((1, 1),)


def test_read_journal_waits_as_long_as_it_is_told_in_a_fraction_of_a_second(tmp_path):
    """The twin of the test above at a tenth of its waits: a lock held for 0.3 s outlasts a
    0.05 s busy timeout, and a 5 s timeout waits the lock out and reads the journal."""
    path = _make_journal(tmp_path / "journal-wal-full.db", [make_row(RUN_A, 1, 64)])

    def held(busy_timeout_s: float):
        holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        holder.execute("BEGIN EXCLUSIVE")
        release = threading.Timer(0.3, lambda: holder.execute("ROLLBACK"))
        release.start()
        try:
            return read_journal(path, RUN_A, 64, busy_timeout_s=busy_timeout_s)
        finally:
            release.join()
            holder.close()

    with pytest.raises(FsyncbenchError) as err:
        held(0.05)
    assert str(err.value) == f"cannot read the journal {path}: database is locked"
    assert held(5.0).present == ((1, 1),)


def _crafted(text, code=None):
    exc = sqlite3.DatabaseError(text)
    if code is not None:
        exc.sqlite_errorcode = code
    return exc


@pytest.mark.parametrize(
    "exc,corrupt",
    [
        # Python >= 3.11: the primary result code decides, whatever the text
        (_crafted("x", 11), True),  # SQLITE_CORRUPT
        (_crafted("x", 26), True),  # SQLITE_NOTADB
        (_crafted("x", 11 | 1 << 8), True),  # SQLITE_CORRUPT_VTAB (extended code 267)
        (_crafted("database disk image is malformed", 1), False),  # SQLITE_ERROR
        (_crafted("file is not a database", 10), False),  # SQLITE_IOERR
        # older Pythons give no code: the text decides
        (_crafted("database disk image is malformed"), True),
        (_crafted("file is not a database"), True),
        (_crafted("disk I/O error"), False),
    ],
)
def test_is_corruption(exc, corrupt):
    assert _is_corruption(exc) is corrupt


# --------------------------------------------------------------------------- labels


@pytest.mark.parametrize(
    "label,pragmas",
    [
        ("wal/full", Pragmas("WAL", "FULL", None)),
        ("delete/extra/fullfsync", Pragmas("DELETE", "EXTRA", True)),
        ("truncate/normal/no-fullfsync", Pragmas("TRUNCATE", "NORMAL", False)),
        ("wal", Pragmas("WAL", "?", None)),
    ],
)
def test_label_to_pragmas(label, pragmas):
    got = _label_to_pragmas(label)
    assert got == pragmas
    assert got.fullfsync is pragmas.fullfsync  # None, not a falsy stand-in


# --------------------------------------------------------------------------- save_report


def _report(created="2024-05-01T12:00:00Z", hostname="case-host"):
    return Report(
        schema_version=store.SCHEMA_VERSION,
        tool_version="1.2.3",
        kind="powercut",
        created_utc=created,
        command_line=("fsyncbench", "powercut", "verify"),
        host=dataclasses.replace(fake_host(), hostname=hostname),
        results=(),
        verdict=Verdict(
            HONEST_FLUSH,
            "powercut-survived",
            (ResultVerdict("wal/full", HONEST_FLUSH, True, "powercut-survived", MEASURED),),
            (),
            MEASURED,
        ),
        notes=("powercut pass",),
    )


def test_save_report_never_overwrites(tmp_path):
    report = _report()
    names = [
        "case-host-20240501T120000Z-powercut.json",
        "case-host-20240501T120000Z-powercut-2.json",
        "case-host-20240501T120000Z-powercut-3.json",
    ]
    for name in names:  # one at a time: each save must take the next free name
        assert save_report(report, tmp_path) == tmp_path / name
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names)
    for name in names:
        assert store.load_report(tmp_path / name) == report


# --------------------------------------------------------------------------- listener, runs


class _ListenerHandle:
    def __init__(self, state: ListenerState, address: tuple[str, int]) -> None:
        self.state = state
        self.address = address
        self.name = f"{address[0]}:{address[1]}"

    def add_run(
        self,
        run_id,
        target,
        acked,
        *,
        config="wal/full",
        host="writer-host",
        first_seen="2024-05-01T12:00:01Z",
        last_seen="2024-05-01T12:05:00Z",
    ):
        """What a writer's hello and acks leave in the listener's record, with fixed times."""
        hello = {
            "run_id": run_id,
            "host": host,
            "dir": str(target),
            "config": config,
            "pid": 4242,
            "started_utc": "2024-05-01T12:00:00Z",
        }
        self.state.register(hello, "127.0.0.1:1")
        if acked:
            self.state.record(run_id, list(acked))
        conn = sqlite3.connect(self.state.path)
        try:
            conn.execute(
                "UPDATE runs SET first_seen_utc=?, last_seen_utc=? WHERE run_id=?",
                (first_seen, last_seen, run_id),
            )
            conn.commit()
        finally:
            conn.close()


@pytest.fixture(scope="module")
def listener(tmp_path_factory):
    state = ListenerState(tmp_path_factory.mktemp("listener") / "state.db")
    server = Listener(state, "127.0.0.1", 0, lambda _line: None, SECRET)
    stop = threading.Event()
    thread = threading.Thread(target=server.serve, args=(stop,), daemon=True)
    thread.start()
    try:
        yield _ListenerHandle(state, server.address)
    finally:
        stop.set()
        thread.join(timeout=60)
        state.close()


def _closed_port_address() -> tuple[str, int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return ("127.0.0.1", s.getsockname()[1])


WRITER_HOST = dataclasses.replace(fake_host(), hostname="writer-host", ld_preload="libeatmydata.so")
OTHER_BOOT = "00000000-0000-4000-8000-000000000000"


def _record(
    run_id,
    target,
    *,
    started="2024-05-01T12:00:00Z",
    boot=OTHER_BOOT,
    stop_reason=None,
    config=WAL_FULL,
):
    return RunRecord(
        format=RUN_FORMAT,
        version=1,
        run_id=run_id,
        started_utc=started,
        pid=4242,
        boot_id=boot,
        target=str(target),
        database=f"journal-{config.label.replace('/', '-')}.db",
        listener="127.0.0.1:5400",
        requested=config,
        effective=config,
        primitive="fdatasync",
        payload_bytes=64,
        host=WRITER_HOST,
        stopped_utc="2024-05-01T12:04:00Z" if stop_reason else None,
        stop_reason=stop_reason,
    )


def _make_run(
    target: Path,
    run_id: str,
    rows,
    record: RunRecord | None = None,
    journal: str = "journal-wal-full.db",
    dirname: str | None = None,
) -> Path:
    run_dir = target / POWERCUT_DIRNAME / (dirname or run_id)
    run_dir.mkdir(parents=True)
    _make_journal(run_dir / journal, rows)
    if record is not None:
        save_run(run_dir, record)
    return run_dir


def _rows(run_id, seqs):
    return [make_row(run_id, s, 64) for s in seqs]


# --------------------------------------------------------------------------- select_run


def test_select_run_rejects_a_malformed_run_id(tmp_path):
    for bad in ("../x", "A" * 32, "a" * 31):
        with pytest.raises(FsyncbenchError) as err:
            select_run(tmp_path, bad, _closed_port_address(), SECRET)
        assert str(err.value) == f"invalid --run-id {bad!r}: expected 32 lower-case hex digits"


def test_select_run_by_id(tmp_path):
    rid = "1" * 32
    record = _record(rid, tmp_path)
    run_dir = _make_run(tmp_path, rid, _rows(rid, [1]), record)
    assert select_run(tmp_path, rid, _closed_port_address(), SECRET) == (run_dir, record, [])


def test_select_run_by_id_without_its_record(tmp_path):
    rid = "2" * 32
    run_dir = _make_run(tmp_path, rid, _rows(rid, [1]))
    root = tmp_path / POWERCUT_DIRNAME
    got = select_run(tmp_path, rid, _closed_port_address(), SECRET)
    assert got == (
        root / rid,
        None,
        [f"no run record at {root / rid / 'run.json'}: the run's settings come from the listener"],
    )
    assert got[0] == run_dir and got[1] is None


def test_select_run_takes_the_newest_run(tmp_path):
    root = tmp_path / POWERCUT_DIRNAME
    ids = ["3" * 32, "4" * 32, "5" * 32]
    started = ["2024-05-01T12:00:00Z", "2024-05-03T12:00:00Z", "2024-05-02T12:00:00Z"]
    records = [_record(i, tmp_path, started=s) for i, s in zip(ids, started)]
    _make_run(tmp_path, ids[0], _rows(ids[0], [1]), records[0])
    assert select_run(tmp_path, None, _closed_port_address(), SECRET) == (
        root / ids[0],
        records[0],
        [],
    )
    _make_run(tmp_path, ids[1], _rows(ids[1], [1]), records[1])
    assert select_run(tmp_path, None, _closed_port_address(), SECRET) == (
        root / ids[1],
        records[1],
        [f"1 older run(s) in {root}; this is the newest (choose another with --run-id)"],
    )
    # started between the two: not the newest; a directory without a record is not a run
    _make_run(tmp_path, ids[2], _rows(ids[2], [1]), records[2])
    _make_run(tmp_path, "6" * 32, _rows("6" * 32, [1]))
    assert select_run(tmp_path, None, _closed_port_address(), SECRET) == (
        root / ids[1],
        records[1],
        [f"2 older run(s) in {root}; this is the newest (choose another with --run-id)"],
    )


def test_select_run_without_any_run_names_what_the_listener_knows(tmp_path, listener):
    target = tmp_path / "data"
    target.mkdir()
    root = target / POWERCUT_DIRNAME
    # no run here, and the listener knows none from this directory
    listener.add_run("7" * 32, tmp_path / "elsewhere", [(1, 5)])
    with pytest.raises(FsyncbenchError) as err:
        select_run(target, None, listener.address, SECRET)
    assert str(err.value) == f"no powercut run in {root}"
    # the power cut took the run records (a run directory without its run.json is left)
    _make_run(target, "8" * 32, _rows("8" * 32, [1]))
    listener.add_run("8" * 32, target, [(1, 5)], first_seen="2024-05-01T12:00:01Z")
    listener.add_run("9" * 32, target, [], first_seen="2024-05-01T12:00:02Z")
    with pytest.raises(FsyncbenchError) as err:
        select_run(target, None, listener.address, SECRET)
    assert str(err.value) == (
        f"no powercut run in {root}; the listener knows run(s) {'8' * 32}, {'9' * 32} from "
        "this directory: if the power cut lost the run record, pass --run-id"
    )
    # an unreachable listener cannot help
    with pytest.raises(FsyncbenchError) as err:
        select_run(target, None, _closed_port_address(), SECRET)
    assert str(err.value) == f"no powercut run in {root}"


# --------------------------------------------------------------------------- verify


VERIFY_HOST = dataclasses.replace(fake_host(), hostname="verify-host")


@pytest.fixture
def verify_env(monkeypatch):
    """The host facts verify collects (recorded, not measured: VERIFY_HOST), and a local
    clock five hours off UTC, so a report time taken in local time would show (where a
    process can move its own clock: time.tzset is POSIX). Where the OS gives no boot id
    (Windows), verify is given one: these tests are about what it finds in the journal."""
    verify_module = importlib.import_module("fsyncbench.powercut.verify")

    asked: list[str] = []

    def collect_host(path):
        asked.append(path)
        return VERIFY_HOST

    monkeypatch.setattr("fsyncbench.host.collect_host", collect_host)
    if verify_module.boot_id() is None:
        monkeypatch.setattr(verify_module, "boot_id", lambda: "this-boot")
    tzset = getattr(time, "tzset", None)
    if tzset is not None:
        monkeypatch.setenv("TZ", "XST+05")
        tzset()
    yield asked
    monkeypatch.undo()
    if tzset is not None:
        tzset()


def _utc_now():
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0)


def _created(report) -> _dt.datetime:
    return _dt.datetime.strptime(report.created_utc, "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=_dt.timezone.utc
    )


def _this_boot() -> str:
    """The boot id verify reads here (Linux's boot_id, macOS's kern.boottime; verify_env's
    stand-in on Windows)."""
    verify_module = importlib.import_module("fsyncbench.powercut.verify")

    boot = verify_module.boot_id()
    if boot is None:
        pytest.skip("no boot id on this OS")
    return boot


def test_verify_a_lost_run_end_to_end(tmp_path, listener, verify_env):
    """The writer ran under libeatmydata (its record says so); 1-100 were acknowledged, the
    journal holds 1-90 and 101-103, and row 5 has a 32-byte output instead of 64 bytes."""
    target = tmp_path / "data"
    rid = "c" * 32
    rows = _rows(rid, [s for s in range(1, 91) if s != 5] + [101, 102, 103])
    rows.append(make_row(rid, 5, 64)[:4] + (step_output(5, 32),))
    run_dir = _make_run(target, rid, rows, _record(rid, target))
    listener.add_run(rid, target, [(1, 100)])
    out = tmp_path / "reports" / "powercut"
    command = ["fsyncbench", "powercut", "verify", "--from", listener.name, str(target)]
    before = _utc_now()
    outcome = verify(listener.address, SECRET, target, None, out, command)
    after = _utc_now()
    assert verify_env == [str(target)]
    db = str(run_dir / "journal-wal-full.db")

    ev = _ev(
        run_id=rid,
        listener=listener.name,
        database=db,
        present=93,
        present_ranges=[[1, 90], [101, 103]],
        lost=10,
        lost_ranges=[[91, 100]],
        committed_not_acknowledged=3,
    )
    findings = (
        _lost(
            "10 of 100 acknowledged commits are missing from the journal: seq 91-100." + EATMYDATA,
            ev,
        ),
        _damaged("1 row differs from what the writer committed: seq 5.", [(5, 5)]),
    )
    assert outcome.judgement == Judgement(
        "fail", NO_FLUSH, "powercut-acknowledged-lost", True, ((91, 100),), (), 3, findings, PROVEN
    )
    assert outcome.failed is True

    assert before <= _created(outcome.report) <= after
    assert dataclasses.replace(outcome.report, created_utc="-") == Report(
        schema_version=store.SCHEMA_VERSION,
        tool_version=fsyncbench.__version__,
        kind="powercut",
        created_utc="-",
        command_line=tuple(command),
        host=VERIFY_HOST,
        results=(),
        verdict=Verdict(
            NO_FLUSH,
            "powercut-acknowledged-lost",
            (ResultVerdict("wal/full", NO_FLUSH, True, "powercut-acknowledged-lost", PROVEN),),
            findings,
            PROVEN,
        ),
        notes=(
            (
                f"powercut fail: run {rid} (wal/full) from writer host writer-host, started "
                f"2024-05-01T12:00:00Z; listener {listener.name} last heard from it "
                "2024-05-01T12:05:00Z"
            ),
        ),
    )

    stamp = outcome.report.created_utc.replace("-", "").replace(":", "")
    assert outcome.path == out / f"verify-host-{stamp}-powercut.json"
    assert sorted(out.iterdir()) == [outcome.path]
    assert store.load_report(outcome.path) == outcome.report

    assert outcome.text == _lines(
        "fsyncbench powercut verify",
        f"  run        {rid} (wal/full, sync primitive fdatasync)",
        WRITER_RUNNING,
        "  rebooted   yes (the boot id changed since the writer started)",
        f"  listener   {listener.name}: 100 acknowledged commits (1-100)",
        f"  journal    {db}",
        "             93 commits present (1-90, 101-103); 3 committed but not acknowledged "
        "(normal)",
        "  integrity  ok",
        "  lost       10 acknowledged commits: 91-100",
        "",
        "Result: FAIL: 10 of 100 acknowledged commits are lost" + FAIL_STORAGE,
        "Path verdict for wal/full: no_flush, proven by a power cut (decided by "
        "powercut-acknowledged-lost)",
        "  [RISK] powercut-acknowledged-lost (wal/full): 10 of 100 acknowledged commits are "
        "missing from the journal: seq 91-100." + EATMYDATA + " Advice: " + ADVICE_LOST,
        "  [RISK] powercut-damaged-rows (wal/full): 1 row differs from what the writer "
        "committed: seq 5. Advice: " + ADVICE_DAMAGED,
    )


def test_verify_a_clean_stop_in_the_same_boot(tmp_path, listener, verify_env):
    """The newest of two runs: stopped by Ctrl-C, in this very boot; nothing lost."""
    target = tmp_path / "data"
    old, rid = "d0" * 16, "d1" * 16
    _make_run(target, old, _rows(old, [1]), _record(old, target, started="2024-04-30T12:00:00Z"))
    run_dir = _make_run(
        target,
        rid,
        _rows(rid, range(1, 51)),
        _record(rid, target, boot=_this_boot(), stop_reason="stopped by Ctrl-C"),
    )
    listener.add_run(rid, target, [(1, 50)])
    outcome = verify(listener.address, SECRET, target, None, tmp_path / "out", ["fsyncbench"])
    ev = _ev(
        run_id=rid,
        listener=listener.name,
        database=str(run_dir / "journal-wal-full.db"),
        acknowledged=50,
        acknowledged_ranges=[[1, 50]],
        present=50,
        present_ranges=[[1, 50]],
        rebooted=False,
        clean_stop="stopped by Ctrl-C",
    )
    assert outcome.judgement == Judgement(
        "pass",
        UNVERIFIABLE,
        "powercut-clean-stop",
        True,
        (),
        (),
        0,
        (
            _survived("All 50 acknowledged commits survived and the journal is intact.", ev),
            _clean_stop("stopped by Ctrl-C"),
            _no_reboot(),
        ),
        MEASURED,
    )
    assert outcome.failed is False
    assert outcome.report.notes == (
        (
            f"powercut pass: run {rid} (wal/full) from writer host writer-host, started "
            f"2024-05-01T12:00:00Z; listener {listener.name} last heard from it "
            "2024-05-01T12:05:00Z"
        ),
        (
            f"1 older run(s) in {target / POWERCUT_DIRNAME}; this is the newest (choose another "
            "with --run-id)"
        ),
    )
    lines = outcome.text.splitlines()
    assert lines[2:4] == [
        (
            "  writer     host writer-host, pid 4242, started 2024-05-01T12:00:00Z; stopped "
            "cleanly: stopped by Ctrl-C"
        ),
        "  rebooted   NO (same boot as the writer: no power cut happened)",
    ]
    assert lines[-1] == (
        f"Note: 1 older run(s) in {target / POWERCUT_DIRNAME}; this is the "
        "newest (choose another with --run-id)"
    )


def test_verify_a_run_whose_record_has_no_boot_id(tmp_path, listener, verify_env):
    """An explicit --run-id picks an older run; a record without a boot id (this OS gives
    none) leaves the reboot unknown even though this OS has one."""
    target = tmp_path / "data"
    rid, newer = "e0" * 16, "e1" * 16
    _make_run(target, rid, _rows(rid, range(1, 11)), _record(rid, target, boot=None))
    _make_run(
        target, newer, _rows(newer, [1]), _record(newer, target, started="2024-05-09T12:00:00Z")
    )
    listener.add_run(rid, target, [(1, 10)])
    outcome = verify(listener.address, SECRET, target, rid, tmp_path / "out", ["fsyncbench"])
    assert (
        outcome.judgement.outcome,
        outcome.judgement.path_verdict,
        outcome.judgement.decided_by,
    ) == ("pass", HONEST_FLUSH, "powercut-survived")
    assert [f.code for f in outcome.judgement.findings] == [
        "powercut-survived",
        "powercut-reboot-unknown",
    ]
    assert outcome.text.splitlines()[3] == "  rebooted   unknown"
    assert outcome.report.notes[1:] == ()


def test_verify_a_run_directory_renamed_after_the_run(tmp_path, listener, verify_env):
    """The run id comes from the record, not from the directory's name."""
    target = tmp_path / "data"
    rid = "f0" * 16
    _make_run(target, rid, _rows(rid, range(1, 6)), _record(rid, target), dirname="kept-run")
    listener.add_run(rid, target, [(1, 5)])
    outcome = verify(listener.address, SECRET, target, None, tmp_path / "out", ["fsyncbench"])
    assert outcome.judgement.outcome == "pass"
    assert outcome.text.splitlines()[1] == (
        f"  run        {rid} (wal/full, sync primitive fdatasync)"
    )


def test_verify_without_a_run_record_takes_the_settings_from_the_listener(
    tmp_path, listener, verify_env
):
    """The power cut took run.json: the configuration is the listener's label, the sync
    primitive unknown, the output size unknown (any JSON output naming its seq counts), the
    host facts those of the verifying host; the first journal-*.db by name is read."""
    target = tmp_path / "data"
    rid = "f1" * 16
    rows = _rows(rid, range(1, 9)) + [make_row(rid, 9, 64)[:4] + (step_output(9, 32),)]
    run_dir = _make_run(target, rid, rows, journal="journal-delete-extra-fullfsync.db")
    _make_journal(run_dir / "journal-wal-full.db", _rows(rid, [1]))
    listener.add_run(rid, target, [(1, 9)], config="delete/extra/fullfsync")
    outcome = verify(listener.address, SECRET, target, rid, tmp_path / "out", ["fsyncbench"])
    db = str(run_dir / "journal-delete-extra-fullfsync.db")
    ev = _ev(
        run_id=rid,
        config="delete/extra/fullfsync",
        sync_primitive="unknown",
        listener=listener.name,
        database=db,
        acknowledged=9,
        acknowledged_ranges=[[1, 9]],
        present=9,
        present_ranges=[[1, 9]],
        rebooted=None,
    )
    assert outcome.judgement == Judgement(
        "pass",
        HONEST_FLUSH,
        "powercut-survived",
        True,
        (),
        (),
        0,
        (
            _survived(
                "All 9 acknowledged commits survived and the journal is intact.",
                ev,
                subject="delete/extra/fullfsync",
            ),
            _reboot_unknown(subject="delete/extra/fullfsync"),
        ),
        MEASURED,
    )
    note = f"no run record at {run_dir / 'run.json'}: the run's settings come from the listener"
    assert outcome.report.notes[1:] == (note,)
    assert outcome.text.splitlines()[1:6] == [
        f"  run        {rid} (delete/extra/fullfsync, sync primitive unknown)",
        WRITER_RUNNING,
        "  rebooted   unknown",
        f"  listener   {listener.name}: 9 acknowledged commits (1-9)",
        f"  journal    {db}",
    ]
    assert outcome.text.endswith(f"\nNote: {note}\n")


def test_verify_without_a_run_record_or_a_named_journal(tmp_path, listener, verify_env):
    """Without run.json and without journal-*.db, verify reads journal.db; a WAL/FULL
    journal whose writer host is unknown is judged with the verifying host's facts."""
    target = tmp_path / "data"
    rid = "f2" * 16
    run_dir = _make_run(target, rid, _rows(rid, range(1, 4)), journal="journal.db")
    listener.add_run(rid, target, [(1, 5)])
    outcome = verify(listener.address, SECRET, target, rid, tmp_path / "out", ["fsyncbench"])
    assert (
        outcome.judgement.outcome,
        outcome.judgement.path_verdict,
        outcome.judgement.decided_by,
        outcome.judgement.lost,
    ) == ("fail", VOLATILE_CACHE, "powercut-acknowledged-lost", ((4, 5),))
    assert outcome.text.splitlines()[5:7] == [
        f"  journal    {run_dir / 'journal.db'}",
        "             3 commits present (1-3)",
    ]


def test_verify_errors(tmp_path, listener, verify_env):
    target = tmp_path / "data"
    target.mkdir()
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    with pytest.raises(FsyncbenchError) as err:
        verify(listener.address, SECRET, target, None, not_a_dir, ["fsyncbench"])
    assert str(err.value) == f"output {not_a_dir} is not a directory"
    # no run here; the listener knows one from this directory
    rid = "f3" * 16
    listener.add_run(rid, target, [(1, 5)])
    with pytest.raises(FsyncbenchError) as err:
        verify(listener.address, SECRET, target, None, tmp_path / "out", ["fsyncbench"])
    assert str(err.value) == (
        f"no powercut run in {target / POWERCUT_DIRNAME}; the listener knows run(s) {rid} from "
        "this directory: if the power cut lost the run record, pass --run-id"
    )
    assert not (tmp_path / "out").exists()
    assert verify_env == []  # nothing collected before the run is found


# --------------------------------------------------------------------------- ranges


def test_to_ranges():
    assert R.to_ranges([]) == []
    assert R.to_ranges([1, 2, 3, 5, 5, 7, 8]) == [(1, 3), (5, 5), (7, 8)]
    assert R.to_ranges([4, 4]) == [(4, 4)]
    # a number already inside the last range adds nothing
    assert R.to_ranges([1, 2, 3, 2]) == [(1, 3)]
    for descending in ([1, 5, 9, 7], [5, 4], [1, 2, 3, 5, 6, 4]):
        with pytest.raises(ValueError) as err:
            R.to_ranges(descending)
        assert str(err.value) == "sequence numbers must ascend"


def test_count():
    assert R.count([]) == 0
    assert R.count([(1, 3), (5, 5), (10, 20)]) == 15  # 3 + 1 + 11


@pytest.mark.parametrize(
    "a,b,expected",
    [
        ([(5, 10)], [(1, 5)], [(6, 10)]),
        ([(10, 10)], [(1, 1), (10, 10)], []),
        ([(1, 5)], [(5, 5)], [(1, 4)]),
        ([(1, 5)], [(1, 4), (5, 5)], []),
        ([(1, 1), (10, 10), (20, 20)], [(1, 1), (2, 2), (3, 3), (20, 20)], [(10, 10)]),
        (
            [(1, 10), (12, 20)],
            [(2, 2), (4, 4), (6, 6), (11, 13), (15, 15)],
            [(1, 1), (3, 3), (5, 5), (7, 10), (14, 14), (16, 20)],
        ),
        ([(1, 3), (10, 12)], [(2, 11)], [(1, 1), (12, 12)]),
        ([(1, 5)], [], [(1, 5)]),
        ([], [(1, 5)], []),
    ],
)
def test_subtract(a, b, expected):
    assert R.subtract(a, b) == expected


def test_format_ranges():
    assert R.format_ranges([]) == "none"
    assert R.format_ranges([(100, 102), (251, 300), (412, 412)]) == "100-102, 251-300, 412"
    forty = [(s, s) for s in range(1, 80, 2)]  # 1, 3, ..., 79: 40 ranges
    assert R.format_ranges(forty) == ", ".join(str(s) for s in range(1, 80, 2))
    assert R.format_ranges(forty + [(81, 90)]) == (
        ", ".join(str(s) for s in range(1, 80, 2)) + ", ... (1 more ranges)"
    )
    assert R.format_ranges(forty[:3], limit=3) == "1, 3, 5"
    assert R.format_ranges(forty[:5], limit=3) == "1, 3, 5, ... (2 more ranges)"


def test_a_run_id_in_the_wrong_directory_is_refused_not_proven_lost(tmp_path, listener, verify_env):
    """The listener knows the run, but verify is pointed at a directory the writer never
    used: one clear error and no report, never "every commit lost, proven by a power cut"."""
    rid = "e" * 32
    listener.add_run(rid, tmp_path / "real-data", [(1, 500)])
    wrong, out = tmp_path / "typo-dir", tmp_path / "reports"
    wrong.mkdir()
    with pytest.raises(
        FsyncbenchError,
        match=rf"^no run {rid} in {wrong}/\.fsyncbench-powercut: "
        rf"is {wrong} the directory the writer used\?",
    ):
        verify(listener.address, SECRET, wrong, rid, out, ["fsyncbench"])
    assert not out.exists() or list(out.iterdir()) == []


def test_the_wrong_directory_error_names_the_listeners_directory(tmp_path, listener, verify_env):
    """The whole message: where verify looked, and the directory the listener recorded."""
    rid = "a1" * 16
    real = tmp_path / "real-data"
    listener.add_run(rid, real, [(1, 3)])
    wrong = tmp_path / "typo-dir"
    wrong.mkdir()
    with pytest.raises(FsyncbenchError) as err:
        verify(listener.address, SECRET, wrong, rid, tmp_path / "reports", ["fsyncbench"])
    assert str(err.value) == (
        f"no run {rid} in {wrong}/.fsyncbench-powercut: is {wrong} the directory the writer "
        f"used? (the listener records {real}; the writer made and fsync'd the run's directory "
        "before its first commit)"
    )
    assert verify_env == []


class _VanishedPath(type(Path())):
    """A journal path that was a file when read_journal looked and is gone when it opens it
    (removed in between)."""

    def is_file(self):
        return True


def test_read_journal_never_creates_a_journal_that_vanished(tmp_path):
    """The journal is opened read-write but never created: a file removed between the check
    and the open is an error, not an empty database (mode=rw)."""
    path = _VanishedPath(tmp_path / "journal-wal-full.db")
    with pytest.raises(FsyncbenchError) as err:
        read_journal(path, RUN_A, 64)
    assert str(err.value) == f"cannot read the journal {path}: unable to open database file"
    assert sorted(tmp_path.iterdir()) == []


def test_windows_gives_the_boots_time_as_its_boot_id(monkeypatch):
    """Windows has neither Linux's boot_id nor macOS's kern.boottime: the boot's time (psutil,
    to the second) tells one boot from the next, so verify can say that no power cut came
    between a killed writer and itself (it had no boot id there, and passed such a run as
    honest_flush)."""
    import types

    import psutil

    from fsyncbench.powercut import run

    monkeypatch.setattr(run, "sys", types.SimpleNamespace(platform="win32"))
    monkeypatch.setattr(psutil, "boot_time", lambda: 1_765_000_000.4)
    assert run.boot_id() == "boot-time:1765000000"

    def unreadable() -> float:
        raise OSError("no boot time here")

    monkeypatch.setattr(psutil, "boot_time", unreadable)
    assert run.boot_id() is None
