"""The powercut listener's durable record (fsyncbench.powercut.listener_state), the details
the listener tests left open (issue 45: mutation testing): its times are UTC whatever the
listener host's zone; every commit is synced (synchronous=FULL in WAL mode, EXTRA when the
database cannot be WAL); a database of another program is refused and left untouched, one
of another format or of a newer (or unknown) state version refused, naming why; the record
takes at most 10,000 runs; a conflicting hello names every identity field that differs; a
write that fails part way leaves nothing of itself and the record usable; and the ``run``
body (count and max_seq) of a run with and without recorded commits.

Real SQLite files in a temporary directory; every expected value is written out by hand."""

from __future__ import annotations

import datetime as _dt
import sqlite3
import time
from pathlib import Path

import pytest
from factories import WRITER_HELLO, WRITER_RUN_ID

from fsyncbench.errors import FsyncbenchError
from fsyncbench.powercut import listener_state
from fsyncbench.powercut.listener_state import Conflict, ListenerState, utc_now

RUN_A = WRITER_RUN_ID
RUN_B = "b" * 32
HELLO = WRITER_HELLO
SEEN = "2024-05-01T12:00:05Z"


@pytest.fixture
def state(tmp_path):
    st = ListenerState(tmp_path / "state.db")
    try:
        yield st
    finally:
        st.close()


@pytest.fixture
def fixed_clock(monkeypatch):
    """The record's clock stopped at SEEN."""
    monkeypatch.setattr(listener_state, "utc_now", lambda: SEEN)


# ------------------------------------------------------------------------ UTC times


@pytest.fixture
def zone_five_hours_west(monkeypatch):
    """This process's local time zone is UTC-5 (a POSIX TZ string: no tz database needed)."""
    if not hasattr(time, "tzset"):
        pytest.skip("time.tzset() is POSIX only")
    monkeypatch.setenv("TZ", "XST+05")
    time.tzset()
    try:
        yield
    finally:
        monkeypatch.undo()
        time.tzset()


def _utc_seconds() -> _dt.datetime:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0)


def _parse(stamp: str) -> _dt.datetime:
    return _dt.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=_dt.timezone.utc)


def test_the_record_keeps_utc_times_on_a_host_whose_zone_is_not_utc(zone_five_hours_west, tmp_path):
    """The Z in the record's times means UTC: a listener five hours west of UTC writes the
    UTC time, not its local one (which would be five hours early)."""
    before = _utc_seconds()
    stamp = utc_now()
    st = ListenerState(tmp_path / "state.db")
    try:
        st.register(HELLO, "127.0.0.1:1")
        info = st.run(RUN_A)
    finally:
        st.close()
    after = _utc_seconds()
    for seen in (stamp, info["first_seen_utc"], info["last_seen_utc"]):
        assert before <= _parse(seen) <= after


# ------------------------------------------------------------------------ durability


def test_each_commit_is_synced_in_wal_mode(state):
    """https://www.sqlite.org/pragma.html#pragma_synchronous: in WAL mode FULL (2) syncs
    the WAL at every commit; the record's connection uses it."""
    db = state._db
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL


def test_a_record_that_cannot_be_wal_also_syncs_its_directory():
    """A database that cannot be WAL (here an in-memory one: journal_mode stays 'memory')
    gets EXTRA (3), which also syncs the directory after the rollback journal is deleted
    (https://www.sqlite.org/pragma.html#pragma_synchronous)."""
    st = ListenerState(Path(":memory:"))
    try:
        assert st._db.execute("PRAGMA journal_mode").fetchone()[0] == "memory"
        assert st._db.execute("PRAGMA synchronous").fetchone()[0] == 3  # EXTRA
    finally:
        st.close()


# ------------------------------------------------------------------------ another program's db


def test_a_database_of_another_program_is_refused_and_left_untouched(tmp_path):
    """A --state naming some other SQLite database: refused with one sentence, and neither
    its journal mode nor its tables are changed."""
    path = tmp_path / "notes.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes(body TEXT)")
    conn.execute("INSERT INTO notes VALUES ('keep me')")
    conn.commit()
    conn.close()
    with pytest.raises(FsyncbenchError) as err:
        ListenerState(path)
    assert str(err.value) == (
        f"{path} is not an fsyncbench powercut listener state; not touching it"
    )
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        assert conn.execute("SELECT name FROM sqlite_master").fetchall() == [("notes",)]
        assert conn.execute("SELECT body FROM notes").fetchall() == [("keep me",)]
    finally:
        conn.close()


def _set_meta(path: Path, **meta: str | None) -> None:
    """Rewrite a closed listener state's meta rows (None deletes the key)."""
    conn = sqlite3.connect(path)
    try:
        for key, value in meta.items():
            conn.execute("DELETE FROM meta WHERE key=?", (key,))
            if value is not None:
                conn.execute("INSERT INTO meta VALUES (?, ?)", (key, value))
        conn.commit()
    finally:
        conn.close()


def test_a_database_with_a_meta_table_of_another_format_is_refused(tmp_path):
    path = tmp_path / "state.db"
    ListenerState(path).close()
    _set_meta(path, format="some-other-tool")
    with pytest.raises(FsyncbenchError) as err:
        ListenerState(path)
    assert str(err.value) == f"{path} is not an fsyncbench powercut listener state"


@pytest.mark.parametrize(
    ("version", "shown"), [("2", "2"), ("10", "10"), (None, "None"), ("1.5", "1.5")]
)
def test_a_state_of_a_newer_or_unknown_version_is_refused(tmp_path, version, shown):
    """Version 1 is this fsyncbench's; a higher one, or one that is not a whole number
    (or none at all), is refused with the version it names."""
    path = tmp_path / "state.db"
    ListenerState(path).close()
    _set_meta(path, version=version)
    with pytest.raises(FsyncbenchError) as err:
        ListenerState(path)
    assert str(err.value) == (
        f"{path} was written by a newer fsyncbench (state version {shown}): upgrade fsyncbench"
    )


def test_a_state_of_this_version_is_opened_again_with_its_record(tmp_path):
    path = tmp_path / "state.db"
    st = ListenerState(path)
    st.register(HELLO, "127.0.0.1:1")
    st.close()
    st = ListenerState(path)
    try:
        assert st.run_ids() == [RUN_A]
    finally:
        st.close()
    conn = sqlite3.connect(path)
    try:
        assert sorted(conn.execute("SELECT key, value FROM meta")) == [
            ("format", "fsyncbench-powercut-listener"),
            ("version", "1"),
        ]
    finally:
        conn.close()


# ------------------------------------------------------------------------ at most 10,000 runs


def _add_runs(path: Path, n: int) -> None:
    """n other writers' runs, written straight into the record."""
    conn = sqlite3.connect(path)
    try:
        conn.executemany(
            "INSERT INTO runs VALUES (?, 'h', '/d', 'wal/full', 1, ?, ?, ?, '127.0.0.1:1')",
            ((f"{i:032x}", SEEN, SEEN, SEEN) for i in range(1, n + 1)),
        )
        conn.commit()
    finally:
        conn.close()


def test_the_record_takes_its_ten_thousandth_run_and_refuses_the_next(state):
    """With 9,999 runs recorded a new writer is still admitted (the 10,000th); the next new
    one is refused, saying why; a writer already recorded is still taken back."""
    _add_runs(state.path, 9_999)
    assert state.register(HELLO, "127.0.0.1:1") == (0, 0)
    assert state.summary() == (10_000, 0)
    with pytest.raises(Conflict) as err:
        state.register({**HELLO, "run_id": RUN_B}, "127.0.0.1:2")
    assert str(err.value) == (
        "this listener's record already holds 10000 runs; start one with a new --state file"
    )
    assert state.run(RUN_B) is None
    assert state.register(HELLO, "127.0.0.1:3") == (0, 0)  # A's writer comes back
    assert state.summary() == (10_000, 0)


# ------------------------------------------------------------------------ another writer


def test_a_hello_for_another_writers_run_names_every_field_that_differs(state):
    state.register(HELLO, "127.0.0.1:1")
    claim = {**HELLO, "host": "elsewhere", "pid": 7}
    with pytest.raises(Conflict) as err:
        state.register(claim, "127.0.0.1:2")
    assert str(err.value) == (
        f"run id {RUN_A} is recorded for another writer (host writer-host, dir /data, "
        "config wal/full, pid 4242); host, pid differ"
    )
    with pytest.raises(Conflict) as err:
        state.check_writer(claim)
    assert str(err.value).endswith("; host, pid differ")


# ------------------------------------------------------------------------ failed writes


def _fail_inserts(path: Path, table: str, when: str) -> None:
    """Make SQLite refuse some inserts into ``table`` (a trigger, from another connection):
    a write that fails part way, as a full disk would."""
    conn = sqlite3.connect(path)
    try:
        conn.execute(
            f"CREATE TRIGGER refuse BEFORE INSERT ON {table} WHEN {when} "
            "BEGIN SELECT RAISE(ABORT, 'simulated write failure'); END"
        )
        conn.commit()
    finally:
        conn.close()


def _drop_trigger(path: Path) -> None:
    conn = sqlite3.connect(path)
    try:
        conn.execute("DROP TRIGGER refuse")
        conn.commit()
    finally:
        conn.close()


def test_a_batch_that_fails_part_way_records_none_of_itself(state, fixed_clock):
    """Seqs 1-3 are inserted before seq 4 fails: the sqlite3.Error reaches the caller (the
    connection tells the writer it cannot record), none of 1-5 stays recorded, and the
    record takes the next batch."""
    state.register(HELLO, "127.0.0.1:1")
    _fail_inserts(state.path, "acks", "NEW.seq = 4")
    with pytest.raises(sqlite3.Error, match="^simulated write failure$"):
        state.record(RUN_A, [(1, 5)])
    assert state.snapshot(RUN_A)[1] == []
    assert state.summary() == (1, 0)
    _drop_trigger(state.path)
    state.record(RUN_A, [(1, 5)])
    assert state.snapshot(RUN_A)[1] == [(1, 5)]


def test_a_hello_that_cannot_be_recorded_leaves_the_record_usable(state, fixed_clock):
    """Recording a new run fails: the sqlite3.Error reaches the caller, the run is not
    recorded, and the next hello is taken."""
    _fail_inserts(state.path, "runs", "1")
    with pytest.raises(sqlite3.Error, match="^simulated write failure$"):
        state.register(HELLO, "127.0.0.1:1")
    assert state.run(RUN_A) is None
    _drop_trigger(state.path)
    assert state.register(HELLO, "127.0.0.1:1") == (0, 0)
    assert state.run_ids() == [RUN_A]


# ------------------------------------------------------------------------ the run body


def test_the_run_body_of_a_run_without_commits_and_of_an_unknown_run(state, fixed_clock):
    state.register(HELLO, "127.0.0.1:1")
    assert state.run(RUN_A) == {
        "run_id": RUN_A,
        "host": "writer-host",
        "dir": "/data",
        "config": "wal/full",
        "pid": 4242,
        "started_utc": "2024-05-01T12:00:00Z",
        "first_seen_utc": SEEN,
        "last_seen_utc": SEEN,
        "count": 0,
        "max_seq": 0,
    }
    assert state.run(RUN_B) is None
    assert state.snapshot(RUN_B) is None


def test_the_run_body_counts_recorded_commits_and_names_the_highest(state, fixed_clock):
    """Commits 1-3 and 7 (one duplicate): count 4, max_seq 7, ranges [1-3, 7]."""
    state.register(HELLO, "127.0.0.1:1")
    state.record(RUN_A, [(1, 3), (7, 7)])
    state.record(RUN_A, [(3, 3)])
    info, ranges = state.snapshot(RUN_A)
    assert (info["count"], info["max_seq"], ranges) == (4, 7, [(1, 3), (7, 7)])
    assert state.run(RUN_A) == info
    assert state.register(HELLO, "127.0.0.1:2") == (4, 7)
