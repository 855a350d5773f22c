"""The two columns ``fsyncbench powerloss`` prints beside each configuration, word for word:
what the recording of this SQLite build shows (:func:`fsyncbench.powerloss.promises.observed`:
whether each acknowledged commit's last change was covered by a sync before its ack, under
the linux, macos and windows semantics) and what the figures are compared with
(:func:`fsyncbench.powerloss.promises.expected`: the documentation where it states
durability, else the observation, with the reasons against and their sources).

Real recordings (SQLite through apsw's recording VFS) pin what each configuration's commit
point is and whether it is synced; hand-made traces pin the rules one at a time (a sync of
another file, a directory sync after a creation, F_FULLFSYNC on macOS, changes before the
setup's barrier, files of no known role, several kinds of unsynced change).

The documentation the expectations rest on:

- https://www.sqlite.org/pragma.html#pragma_synchronous (OFF, NORMAL, FULL, EXTRA; WAL with
  NORMAL "might roll back following a power loss"; EXTRA's directory sync after the
  journal's unlink "provides additional durability")
- https://www.sqlite.org/pragma.html#pragma_journal_mode (OFF and MEMORY may corrupt)
- https://www.sqlite.org/c3ref/c_sync_dataonly.html (SQLITE_SYNC_NORMAL 2, FULL 3,
  DATAONLY 0x10: only FULL makes the macOS unix VFS call F_FULLFSYNC)
"""

from __future__ import annotations

import pytest

from fsyncbench.model import PowerlossClaim, Pragmas
from fsyncbench.powerloss import promises
from fsyncbench.powerloss.promises import DURABLE, NOT_DURABLE, NOT_STATED, expected, observed
from fsyncbench.powerloss.sqlite import record_commits
from fsyncbench.powerloss.trace import Op, Trace

SYNC_DOC = "https://www.sqlite.org/pragma.html#pragma_synchronous"
JOURNAL_DOC = "https://www.sqlite.org/pragma.html#pragma_journal_mode"
OS_NAME = {"linux": "Linux", "macos": "Darwin", "windows": "Windows"}

# https://www.sqlite.org/c3ref/c_sync_dataonly.html
SQLITE_SYNC_NORMAL, SQLITE_SYNC_FULL, SQLITE_SYNC_DATAONLY = 0x02, 0x03, 0x10

SYNCED_3 = "each of the 3 commit points was synced before its ack"


def _source(version: str, semantics: str) -> str:
    return f"this recording (SQLite {version} through apsw, {semantics} semantics)"


# ------------------------------------------------------------------- real recordings

#: (pragmas, semantics) -> what the recording shows of 3 commits: the commit point of each
#: journal mode (DELETE: the journal's unlink; TRUNCATE: its truncation; PERSIST: its
#: zeroed header; WAL: the WAL's frames; MEMORY and OFF: the database pages) and whether a
#: sync that covers it comes before the ack.
RECORDED = {
    # linux: a sync of the file covers a write or truncation, a directory sync an unlink
    (Pragmas("DELETE", "FULL"), "linux"): "the journal's unlink not synced before 3 of 3 acks",
    (Pragmas("DELETE", "EXTRA"), "linux"): SYNCED_3,
    (Pragmas("TRUNCATE", "NORMAL"), "linux"): (
        "the journal's truncation not synced before 3 of 3 acks"
    ),
    (Pragmas("TRUNCATE", "FULL"), "linux"): SYNCED_3,
    (Pragmas("PERSIST", "FULL"), "linux"): SYNCED_3,
    (Pragmas("WAL", "NORMAL"), "linux"): "the WAL's write not synced before 3 of 3 acks",
    (Pragmas("WAL", "FULL"), "linux"): SYNCED_3,
    (Pragmas("MEMORY", "FULL"), "linux"): SYNCED_3,
    (Pragmas("OFF", "OFF"), "linux"): "the database's write not synced before 3 of 3 acks",
    # macos: only a sync with SQLITE_SYNC_FULL (fullfsync on) counts, no directory sync does
    (Pragmas("WAL", "FULL", True), "macos"): SYNCED_3,
    (Pragmas("WAL", "FULL", False), "macos"): "the WAL's write not synced before 3 of 3 acks",
    (Pragmas("TRUNCATE", "FULL", True), "macos"): SYNCED_3,
    (Pragmas("TRUNCATE", "FULL", False), "macos"): (
        "the journal's truncation not synced before 3 of 3 acks"
    ),
    (Pragmas("DELETE", "EXTRA", True), "macos"): (
        "the journal's unlink not synced before 3 of 3 acks"
    ),
    # windows: file syncs count, no directory sync is issued
    (Pragmas("DELETE", "EXTRA"), "windows"): "the journal's unlink not synced before 3 of 3 acks",
    (Pragmas("TRUNCATE", "FULL"), "windows"): SYNCED_3,
    (Pragmas("WAL", "FULL"), "windows"): SYNCED_3,
}


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> dict[Pragmas, Trace]:
    """One real recording of 3 commits per configuration of :data:`RECORDED`."""
    out: dict[Pragmas, Trace] = {}
    for pragmas, _semantics in RECORDED:
        if pragmas not in out:
            directory = tmp_path_factory.mktemp(pragmas.label.replace("/", "-"))
            out[pragmas] = record_commits(directory, pragmas, 3, 64, True)
    return out


@pytest.mark.parametrize(
    ("pragmas", "semantics"), list(RECORDED), ids=[f"{p.label}-{s}" for p, s in RECORDED]
)
def test_the_recording_shows_whether_each_commit_point_was_synced(traces, pragmas, semantics):
    trace = traces[pragmas]
    why = RECORDED[pragmas, semantics]
    word = DURABLE if why == SYNCED_3 else NOT_DURABLE
    assert observed(trace, semantics) == PowerlossClaim(
        word, None, why, _source(trace.sqlite_version, semantics)
    )


def _expect(trace: Trace, semantics: str) -> tuple[bool, bool, str]:
    docs = promises.documented(trace.pragmas, OS_NAME[semantics])
    return expected(docs, observed(trace, semantics))


def test_what_the_figures_are_compared_with_and_why(traces):
    wal_full = traces[Pragmas("WAL", "FULL")]
    # FULL: "all content is safely written to the disk surface prior to continuing" and the
    # recording agrees: durable, consistent, nothing against
    assert _expect(wal_full, "linux") == (True, True, "")
    assert _expect(wal_full, "windows") == (True, True, "")
    # WAL + NORMAL: the documentation says it "might roll back following a power loss" and
    # "is safe from corruption": its words alone, the observation is not added
    wal_normal = traces[Pragmas("WAL", "NORMAL")]
    durable, consistent, why = _expect(wal_normal, "linux")
    assert (durable, consistent) == (False, True)
    assert why.startswith("'A transaction committed in WAL mode with synchronous=NORMAL")
    assert why.endswith(f"synchronous=NORMAL' ({SYNC_DOC})")
    assert "observed" not in why and why.count(SYNC_DOC) == 1
    # DELETE + FULL: the documentation leaves durability open (only EXTRA syncs the
    # directory), so the recording decides, and says why with its source
    delete_full = traces[Pragmas("DELETE", "FULL")]
    source = _source(delete_full.sqlite_version, "linux")
    assert _expect(delete_full, "linux") == (
        False,
        True,
        f"observed: the journal's unlink not synced before 3 of 3 acks ({source})",
    )
    # EXTRA in DELETE: documented durable, and the directory sync is recorded on linux
    assert _expect(traces[Pragmas("DELETE", "EXTRA")], "linux") == (True, True, "")
    # TRUNCATE + NORMAL: "a very small (though non-zero) chance" of corruption, durability
    # not stated, the truncation unsynced: both reasons, each with its source, in that order
    truncate_normal = traces[Pragmas("TRUNCATE", "NORMAL")]
    durable, consistent, why = _expect(truncate_normal, "linux")
    assert (durable, consistent) == (False, False)
    docs_part, seen_part = why.split("; 'a very small")[0], why.split(f"({SYNC_DOC}); ")[1]
    assert docs_part.startswith("NORMAL syncs 'at the most critical moments")
    assert seen_part == (
        "observed: the journal's truncation not synced before 3 of 3 acks "
        f"({_source(truncate_normal.sqlite_version, 'linux')})"
    )
    # MEMORY: the journal_mode documentation warns of corruption only; durable by the
    # recording, and the recording's "synced" is not a reason against
    memory = traces[Pragmas("MEMORY", "FULL")]
    durable, consistent, why = _expect(memory, "linux")
    assert (durable, consistent) == (True, False)
    assert why.startswith("journal_mode=MEMORY: 'If the application crashes")
    assert why.endswith(f"go corrupt' ({JOURNAL_DOC})") and "observed" not in why


# ------------------------------------------------------------- hand-made traces


def _trace(*ops: Op, roles: dict[str, str] | None = None) -> Trace:
    roles = {"db": "main-db", "db-journal": "journal", "db-wal": "wal"} if roles is None else roles
    return Trace(
        pragmas=Pragmas("WAL", "FULL"),
        ops=ops,
        roles=tuple(sorted(roles.items())),
        db_name="db",
        rows=(),
        psow=True,
        dirsync_modelled=True,
        sqlite_version="3.0.0-test",
    )


BARRIER, ACK = Op("barrier"), Op("ack", seq=1)


def _write(name: str) -> Op:
    return Op("write", name, 0, b"x")


def _sync(name: str, flags: int = SQLITE_SYNC_NORMAL) -> Op:
    return Op("sync", name, flags=flags)


def test_a_recording_without_an_acknowledged_commit_states_nothing():
    trace = _trace(BARRIER, _write("db"), _sync("db"))
    assert observed(trace, "linux") == PowerlossClaim(
        NOT_STATED, None, "no commit was acknowledged", _source("3.0.0-test", "linux")
    )


def test_a_commit_that_changed_nothing_counts_as_synced():
    assert observed(_trace(BARRIER, ACK), "macos") == PowerlossClaim(
        DURABLE,
        None,
        "each of the 1 commit points was synced before its ack",
        _source("3.0.0-test", "macos"),
    )


def test_a_sync_or_directory_sync_before_any_change_is_harmless():
    trace = _trace(BARRIER, _sync("db"), Op("dirsync"), _write("db"), _sync("db"), ACK)
    assert observed(trace, "linux").durable == DURABLE


def test_only_a_sync_of_the_changed_file_covers_it():
    trace = _trace(BARRIER, _write("db-journal"), _sync("db"), ACK)
    claim = observed(trace, "linux")
    assert (claim.durable, claim.why) == (
        NOT_DURABLE,
        "the journal's write not synced before 1 of 1 acks",
    )
    assert observed(_trace(BARRIER, _write("db-wal"), _sync("db-wal"), ACK), "linux").durable == (
        DURABLE
    )


def test_a_sync_after_a_truncation_covers_it():
    truncate = Op("truncate", "db-journal", size_bytes=0)
    assert observed(_trace(BARRIER, truncate, _sync("db-journal"), ACK), "linux").why == (
        "each of the 1 commit points was synced before its ack"
    )
    assert observed(_trace(BARRIER, truncate, ACK), "windows").why == (
        "the journal's truncation not synced before 1 of 1 acks"
    )


def test_what_the_setup_changed_before_the_barrier_is_settled():
    # everything before the barrier is durable: an unsynced write there is not counted
    before = _trace(_write("db"), _sync("db-wal"), BARRIER, ACK)
    assert observed(before, "linux").durable == DURABLE
    # the first change after the barrier is counted
    after = _trace(BARRIER, _write("db"), ACK, Op("ack", seq=2))
    assert observed(after, "linux").why == "the database's write not synced before 2 of 2 acks"
    # without a barrier every op counts
    assert observed(_trace(_write("db"), ACK), "linux").durable == NOT_DURABLE


@pytest.mark.parametrize(
    ("flags", "durable_on_macos"),
    [
        (SQLITE_SYNC_NORMAL, False),
        (SQLITE_SYNC_FULL, True),
        (SQLITE_SYNC_FULL | SQLITE_SYNC_DATAONLY, True),
        (SQLITE_SYNC_NORMAL | SQLITE_SYNC_DATAONLY, False),
    ],
)
def test_on_macos_only_a_full_sync_covers_a_write(flags, durable_on_macos):
    trace = _trace(BARRIER, _write("db-wal"), _sync("db-wal", flags), ACK)
    assert observed(trace, "linux").durable == DURABLE
    assert observed(trace, "windows").durable == DURABLE
    macos = observed(trace, "macos")
    if durable_on_macos:
        assert macos.durable == DURABLE
    else:
        assert (macos.durable, macos.why) == (
            NOT_DURABLE,
            "the WAL's write not synced before 1 of 1 acks",
        )


@pytest.mark.parametrize("kind", ["create", "delete"])
def test_a_directory_sync_covers_a_creation_or_unlink_on_linux_only(kind):
    trace = _trace(BARRIER, Op(kind, "db-wal"), Op("dirsync"), ACK)
    assert observed(trace, "linux").durable == DURABLE
    what = {"create": "creation", "delete": "unlink"}[kind]
    for semantics in ("macos", "windows"):
        assert observed(trace, semantics).why == f"the WAL's {what} not synced before 1 of 1 acks"
    # a file sync does not cover a directory change
    synced_file = _trace(BARRIER, Op(kind, "db-wal"), _sync("db-wal", SQLITE_SYNC_FULL), ACK)
    assert observed(synced_file, "linux").durable == NOT_DURABLE


def test_a_file_of_no_known_role_is_called_the_file():
    roles = {"db": "main-db", "notes": "other"}
    for name in ("notes", "stray"):
        trace = _trace(BARRIER, _write(name), ACK, roles=roles)
        assert observed(trace, "linux").why == "the file's write not synced before 1 of 1 acks"


def test_each_kind_of_unsynced_commit_point_is_told_with_its_count():
    trace = _trace(
        BARRIER,
        Op("delete", "db-journal"),
        ACK,
        _write("db"),
        Op("ack", seq=2),
        Op("delete", "db-journal"),
        Op("ack", seq=3),
    )
    assert observed(trace, "linux") == PowerlossClaim(
        NOT_DURABLE,
        None,
        "the journal's unlink not synced before 2 of 3 acks; "
        "the database's write not synced before 1 of 3 acks",
        _source("3.0.0-test", "linux"),
    )


# ------------------------------------------------------------ expected, by its rules

DOC_DURABLE = PowerlossClaim(DURABLE, True, "FULL: 'safely written'", SYNC_DOC)
DOC_LOSSY = PowerlossClaim(NOT_DURABLE, True, "NORMAL in WAL 'might roll back'", SYNC_DOC)
DOC_OPEN = PowerlossClaim(NOT_STATED, True, "EXTRA 'provides additional durability'", SYNC_DOC)
DOC_CORRUPT = PowerlossClaim(NOT_STATED, False, "MEMORY 'will very likely go corrupt'", JOURNAL_DOC)
SEEN_SYNCED = PowerlossClaim(DURABLE, None, SYNCED_3, "this recording")
SEEN_UNSYNCED = PowerlossClaim(NOT_DURABLE, None, "the WAL's write not synced", "this recording")


@pytest.mark.parametrize(
    ("docs", "seen", "want"),
    [
        # the documentation's durable wins over any observation, and gives no reason against
        (DOC_DURABLE, SEEN_SYNCED, (True, True, "")),
        (DOC_DURABLE, SEEN_UNSYNCED, (True, True, "")),
        # the documentation's "not durable": its words only, whatever the recording shows
        (DOC_LOSSY, SEEN_SYNCED, (False, True, f"NORMAL in WAL 'might roll back' ({SYNC_DOC})")),
        (DOC_LOSSY, SEEN_UNSYNCED, (False, True, f"NORMAL in WAL 'might roll back' ({SYNC_DOC})")),
        # not stated: the recording decides, and its reason is told when it says not durable
        (DOC_OPEN, SEEN_SYNCED, (True, True, "")),
        (
            DOC_OPEN,
            SEEN_UNSYNCED,
            (False, True, "observed: the WAL's write not synced (this recording)"),
        ),
        # may corrupt: the documentation's warning, then the observation's, joined by "; "
        (
            DOC_CORRUPT,
            SEEN_SYNCED,
            (True, False, f"MEMORY 'will very likely go corrupt' ({JOURNAL_DOC})"),
        ),
        (
            DOC_CORRUPT,
            SEEN_UNSYNCED,
            (
                False,
                False,
                f"MEMORY 'will very likely go corrupt' ({JOURNAL_DOC}); "
                "observed: the WAL's write not synced (this recording)",
            ),
        ),
    ],
)
def test_expected_takes_the_documentation_where_it_states_durability(docs, seen, want):
    assert expected(docs, seen) == want
