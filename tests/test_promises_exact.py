"""What each documented durability promise says, word for word, and when it holds:
:func:`fsyncbench.judge.promises.documented` for every branch of its decision (macOS without
fullfsync, synchronous=OFF, journal_mode OFF/MEMORY, NORMAL in WAL and in a rollback mode,
DELETE on Windows and on macOS, FULL in DELETE, FULL and EXTRA elsewhere), which branch wins
where several apply, and the table cell (``short``) each one becomes.

The ``why`` of a claim is printed beside its ``source`` in ``fsyncbench powerloss`` (the
documentation column, fsyncbench/report/loss.py), so every quote is pinned here against its
primary source, cited in the comments:

- https://www.sqlite.org/pragma.html#pragma_synchronous (OFF, NORMAL, FULL, EXTRA, WAL)
- https://www.sqlite.org/pragma.html#pragma_journal_mode (OFF, MEMORY)
- https://developer.apple.com/library/archive/documentation/System/Conceptual/ManPages_iPhoneOS/man2/fsync.2.html
- https://www.sqlite.org/src/file/src/os_unix.c (unixDelete), os_win.c (winDelete)
"""

import pytest

from fsyncbench.judge import promises
from fsyncbench.judge.promises import DURABLE, NOT_DURABLE, NOT_STATED, documented
from fsyncbench.model import PowerlossClaim, Pragmas

SYNC_DOC = "https://www.sqlite.org/pragma.html#pragma_synchronous"
JOURNAL_DOC = "https://www.sqlite.org/pragma.html#pragma_journal_mode"
# Apple's fsync(2): "the disk drive may not have written the data to permanent storage"
APPLE_DOC = (
    "fsync(2) on macOS: 'the disk drive may not have written the data to permanent storage; "
    "use F_FULLFSYNC' (https://developer.apple.com/library/archive/documentation/System/"
    "Conceptual/ManPages_iPhoneOS/man2/fsync.2.html)"
)
UNIX_DELETE_SRC = "https://www.sqlite.org/src/file/src/os_unix.c (unixDelete)"
WIN_DELETE_SRC = "https://www.sqlite.org/src/file/src/os_win.c (winDelete)"

MACOS_NO_FULLFSYNC = PowerlossClaim(
    NOT_DURABLE,
    False,
    "on macOS without fullfsync SQLite's fsync stops at the drive's cache",
    APPLE_DOC,
)
# pragma_synchronous, OFF: "the database might become corrupted if the operating system
# crashes or the computer loses power before that data has been written to the disk surface"
SYNC_OFF = PowerlossClaim(
    NOT_DURABLE,
    False,
    "OFF: 'the database might become corrupted if the operating system crashes or the "
    "computer loses power before that data has been written to the disk surface'",
    SYNC_DOC,
)


def journal_off(mode: str) -> PowerlossClaim:
    # pragma_journal_mode: "If the application crashes in the middle of a transaction when
    # the OFF journaling mode is set, then the database file will very likely go corrupt"
    return PowerlossClaim(
        NOT_STATED,
        False,
        f"journal_mode={mode}: 'If the application crashes in the middle of a transaction ... "
        "the database file will very likely go corrupt'",
        JOURNAL_DOC,
    )


# pragma_synchronous: "A transaction committed in WAL mode with synchronous=NORMAL might roll
# back following a power loss or system crash"; "WAL mode is safe from corruption with
# synchronous=NORMAL"
WAL_NORMAL = PowerlossClaim(
    NOT_DURABLE,
    True,
    "'A transaction committed in WAL mode with synchronous=NORMAL might roll back following "
    "a power loss'; 'WAL mode is safe from corruption with synchronous=NORMAL'",
    SYNC_DOC,
)
# pragma_synchronous, NORMAL: "sync at the most critical moments, but less often than in
# FULL mode. There is a very small (though non-zero) chance that a power failure at just
# the wrong time could corrupt the database"
ROLLBACK_NORMAL = PowerlossClaim(
    NOT_STATED,
    False,
    "NORMAL syncs 'at the most critical moments, but less often than in FULL mode'; "
    "'a very small (though non-zero) chance' of corruption after a power failure",
    SYNC_DOC,
)
WINDOWS_DELETE = PowerlossClaim(
    NOT_DURABLE,
    True,
    "SQLite's Windows VFS never syncs the directory after deleting the journal "
    "(winDelete ignores syncDir; source, not documentation)",
    WIN_DELETE_SRC,
)
MACOS_DELETE = PowerlossClaim(
    NOT_DURABLE,
    True,
    "on macOS unixDelete syncs the directory with a plain fsync even with fullfsync "
    "(source, not documentation), which stops at the drive's cache",
    UNIX_DELETE_SRC + "; " + APPLE_DOC,
)
# pragma_synchronous, FULL: "will not corrupt the database"; EXTRA: "the directory
# containing a rollback journal is synced after that journal is unlinked ... EXTRA provides
# additional durability if the commit is followed closely by a power loss"
FULL_DELETE = PowerlossClaim(
    NOT_STATED,
    True,
    "FULL 'will not corrupt the database'; only EXTRA syncs the directory after the "
    "journal's unlink, which 'provides additional durability if the commit is followed "
    "closely by a power loss'",
    SYNC_DOC,
)
# pragma_synchronous, FULL: "ensures that all content is safely written to the disk surface
# prior to continuing. This ensures that an operating system crash or power failure will
# not corrupt the database"; EXTRA: "EXTRA synchronous is like FULL with the addition ..."
FULL = PowerlossClaim(
    DURABLE,
    True,
    "FULL: 'all content is safely written to the disk surface prior to continuing'; "
    "'will not corrupt the database'",
    SYNC_DOC,
)
EXTRA = PowerlossClaim(
    DURABLE,
    True,
    "EXTRA is 'like FULL'; FULL: 'all content is safely written to the disk surface prior "
    "to continuing'; 'will not corrupt the database'",
    SYNC_DOC,
)


def test_the_three_promise_words_are_the_ones_reports_print():
    assert (DURABLE, NOT_DURABLE, NOT_STATED) == ("durable", "not durable", "not stated")


def test_sources_name_sqlites_documentation_and_source_files():
    assert promises.SQLITE_JOURNAL_MODE_DOC == JOURNAL_DOC
    assert promises.SQLITE_UNIX_DELETE_SRC == UNIX_DELETE_SRC
    assert promises.SQLITE_WIN_DELETE_SRC == WIN_DELETE_SRC


@pytest.mark.parametrize(
    ("journal_mode", "synchronous", "fullfsync", "os_name", "claim"),
    [
        # macOS without fullfsync: Apple's fsync(2) stops at the drive's cache, whatever
        # the pragmas (it wins over every other branch)
        ("WAL", "FULL", False, "Darwin", MACOS_NO_FULLFSYNC),
        ("WAL", "EXTRA", None, "Darwin", MACOS_NO_FULLFSYNC),
        ("DELETE", "OFF", False, "Darwin", MACOS_NO_FULLFSYNC),
        ("MEMORY", "NORMAL", False, "Darwin", MACOS_NO_FULLFSYNC),
        # synchronous=OFF, before the journal mode is looked at
        ("WAL", "OFF", None, "Linux", SYNC_OFF),
        ("OFF", "OFF", None, "Linux", SYNC_OFF),
        ("DELETE", "OFF", None, "Windows", SYNC_OFF),
        ("DELETE", "OFF", True, "Darwin", SYNC_OFF),
        # journal_mode OFF or MEMORY at any synchronous but OFF
        ("OFF", "FULL", None, "Linux", journal_off("OFF")),
        ("OFF", "EXTRA", None, "Windows", journal_off("OFF")),
        ("MEMORY", "FULL", None, "Linux", journal_off("MEMORY")),
        ("MEMORY", "NORMAL", True, "Darwin", journal_off("MEMORY")),
        # NORMAL in WAL: may roll back, never corrupts
        ("WAL", "NORMAL", None, "Linux", WAL_NORMAL),
        ("WAL", "NORMAL", True, "Darwin", WAL_NORMAL),
        ("WAL", "NORMAL", None, "Windows", WAL_NORMAL),
        # NORMAL in a rollback mode: durability not stated, may corrupt (before the
        # platforms' DELETE branches)
        ("DELETE", "NORMAL", None, "Linux", ROLLBACK_NORMAL),
        ("DELETE", "NORMAL", None, "Windows", ROLLBACK_NORMAL),
        ("DELETE", "NORMAL", True, "Darwin", ROLLBACK_NORMAL),
        ("TRUNCATE", "NORMAL", None, "Linux", ROLLBACK_NORMAL),
        ("PERSIST", "NORMAL", None, "Linux", ROLLBACK_NORMAL),
        # DELETE on Windows and on macOS (with fullfsync), FULL and EXTRA alike
        ("DELETE", "FULL", None, "Windows", WINDOWS_DELETE),
        ("DELETE", "EXTRA", None, "Windows", WINDOWS_DELETE),
        ("DELETE", "FULL", True, "Darwin", MACOS_DELETE),
        ("DELETE", "EXTRA", True, "Darwin", MACOS_DELETE),
        # FULL in DELETE elsewhere: durability not stated (only EXTRA syncs the directory)
        ("DELETE", "FULL", None, "Linux", FULL_DELETE),
        ("DELETE", "FULL", None, "FreeBSD", FULL_DELETE),
        # FULL and EXTRA in every other case: durable
        ("WAL", "FULL", None, "Linux", FULL),
        ("TRUNCATE", "FULL", None, "Linux", FULL),
        ("PERSIST", "FULL", None, "Windows", FULL),
        ("WAL", "FULL", True, "Darwin", FULL),
        ("TRUNCATE", "FULL", True, "Darwin", FULL),
        ("DELETE", "EXTRA", None, "Linux", EXTRA),
        ("WAL", "EXTRA", None, "Linux", EXTRA),
        ("WAL", "EXTRA", None, "Windows", EXTRA),
        ("TRUNCATE", "EXTRA", True, "Darwin", EXTRA),
    ],
)
def test_documented_claim_word_for_word(journal_mode, synchronous, fullfsync, os_name, claim):
    p = Pragmas(journal_mode, synchronous, fullfsync)
    assert documented(p, os_name) == claim


@pytest.mark.parametrize(
    ("claim", "cell"),
    [
        (MACOS_NO_FULLFSYNC, "not durable, may corrupt"),
        (SYNC_OFF, "not durable, may corrupt"),
        (journal_off("OFF"), "not stated, may corrupt"),
        (WAL_NORMAL, "not durable"),
        (ROLLBACK_NORMAL, "not stated, may corrupt"),
        (WINDOWS_DELETE, "not durable"),
        (MACOS_DELETE, "not durable"),
        (FULL_DELETE, "not stated"),
        (FULL, "durable"),
        (EXTRA, "durable"),
    ],
)
def test_each_claim_reads_as_its_table_cell(claim, cell):
    assert claim.short() == cell
