"""What SQLite's documentation promises of a pragma combination after a power cut, in the
three words every report uses for it: ``durable`` (each acknowledged commit survives),
``not durable`` (the documentation, or where it is silent the platform's documentation or
SQLite's source, says it may not) and ``not stated`` (the documentation does not say). The
judge's boolean (:func:`fsyncbench.judge.commit_rules.config_durability`) is True only for
``durable``; ``fsyncbench powerloss`` sets this beside what the recording shows.

Documentation (https://www.sqlite.org/pragma.html#pragma_synchronous unless said):

- OFF: "the database might become corrupted if the operating system crashes or the
  computer loses power before that data has been written to the disk surface": not
  durable, may corrupt.
- NORMAL in WAL: "A transaction committed in WAL mode with synchronous=NORMAL might roll
  back following a power loss or system crash", and "WAL mode is safe from corruption with
  synchronous=NORMAL": not durable, consistent.
- NORMAL in a rollback mode: "sync at the most critical moments, but less often than in FULL
  mode. There is a very small (though non-zero) chance that a power failure at just the
  wrong time could corrupt the database": durability not stated, may corrupt.
- FULL: "ensures that all content is safely written to the disk surface prior to
  continuing. This ensures that an operating system crash or power failure will not
  corrupt the database": durable, consistent; except DELETE, where EXTRA "provides
  additional durability if the commit is followed closely by a power loss" by syncing the
  directory after the journal's unlink: durability at FULL not stated.
- EXTRA: as FULL, durable, DELETE included.
- journal_mode OFF and MEMORY (https://www.sqlite.org/pragma.html#pragma_journal_mode):
  "If the application crashes in the middle of a transaction when the OFF journaling mode
  is set, then the database file will very likely go corrupt" (MEMORY: likewise): may
  corrupt; durability not stated.
- macOS without fullfsync: Apple's fsync(2), "the disk drive may not have written the data
  to permanent storage": not durable, may corrupt. macOS DELETE with fullfsync: os_unix.c
  unixDelete syncs the directory with a plain fsync (source, not documentation): not
  durable. Windows DELETE: os_win.c winDelete ignores syncDir (source): not durable.
"""

from __future__ import annotations

from fsyncbench.judge.rule_facts import APPLE_FSYNC_DOC, SQLITE_SYNC_DOC
from fsyncbench.model import PowerlossClaim as Claim
from fsyncbench.model import Pragmas

SQLITE_JOURNAL_MODE_DOC = "https://www.sqlite.org/pragma.html#pragma_journal_mode"
SQLITE_UNIX_DELETE_SRC = "https://www.sqlite.org/src/file/src/os_unix.c (unixDelete)"
SQLITE_WIN_DELETE_SRC = "https://www.sqlite.org/src/file/src/os_win.c (winDelete)"

#: Documented durability: promised, denied, or left open by the documentation.
DURABLE, NOT_DURABLE, NOT_STATED = "durable", "not durable", "not stated"


def documented(p: Pragmas, os_name: str) -> Claim:
    """What SQLite's documentation (or, where it is silent, the platform's documentation
    and SQLite's source) says of ``p`` on ``os_name`` (``platform.system()``)."""
    if os_name == "Darwin" and not p.fullfsync:
        return Claim(
            NOT_DURABLE,
            False,
            "on macOS without fullfsync SQLite's fsync stops at the drive's cache",
            APPLE_FSYNC_DOC,
        )
    if p.synchronous == "OFF":
        return Claim(
            NOT_DURABLE,
            False,
            "OFF: 'the database might become corrupted if the operating system crashes or the "
            "computer loses power before that data has been written to the disk surface'",
            SQLITE_SYNC_DOC,
        )
    if p.journal_mode in ("OFF", "MEMORY"):
        return Claim(
            NOT_STATED,
            False,
            f"journal_mode={p.journal_mode}: 'If the application crashes in the middle of a "
            "transaction ... the database file will very likely go corrupt'",
            SQLITE_JOURNAL_MODE_DOC,
        )
    if p.synchronous == "NORMAL" and p.journal_mode == "WAL":
        return Claim(
            NOT_DURABLE,
            True,
            "'A transaction committed in WAL mode with synchronous=NORMAL might roll back "
            "following a power loss'; 'WAL mode is safe from corruption with "
            "synchronous=NORMAL'",
            SQLITE_SYNC_DOC,
        )
    if p.synchronous == "NORMAL":
        return Claim(
            NOT_STATED,
            False,
            "NORMAL syncs 'at the most critical moments, but less often than in FULL mode'; "
            "'a very small (though non-zero) chance' of corruption after a power failure",
            SQLITE_SYNC_DOC,
        )
    if os_name == "Windows" and p.journal_mode == "DELETE":
        return Claim(
            NOT_DURABLE,
            True,
            "SQLite's Windows VFS never syncs the directory after deleting the journal "
            "(winDelete ignores syncDir; source, not documentation)",
            SQLITE_WIN_DELETE_SRC,
        )
    if os_name == "Darwin" and p.journal_mode == "DELETE":
        return Claim(
            NOT_DURABLE,
            True,
            "on macOS unixDelete syncs the directory with a plain fsync even with fullfsync "
            "(source, not documentation), which stops at the drive's cache",
            SQLITE_UNIX_DELETE_SRC + "; " + APPLE_FSYNC_DOC,
        )
    if p.synchronous == "FULL" and p.journal_mode == "DELETE":
        return Claim(
            NOT_STATED,
            True,
            "FULL 'will not corrupt the database'; only EXTRA syncs the directory after the "
            "journal's unlink, which 'provides additional durability if the commit is "
            "followed closely by a power loss'",
            SQLITE_SYNC_DOC,
        )
    like = "EXTRA is 'like FULL'; FULL" if p.synchronous == "EXTRA" else "FULL"
    return Claim(
        DURABLE,
        True,
        f"{like}: 'all content is safely written to the disk surface prior to continuing'; "
        "'will not corrupt the database'",
        SQLITE_SYNC_DOC,
    )
