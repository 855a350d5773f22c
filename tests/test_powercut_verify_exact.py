"""powercut verify, the details the other verify tests left open (issue 45: mutation
testing): how read_journal() opens the journal (a ``file:`` URI in read-write mode, SQLite's
busy timeout of 5 s), how long select_run() gives the listener to list its runs (10 s),
which of several runs select_run() checks (the host it is given, the newest start by the
writer's clock, a run with its record here never taken for lost, a tie left to the run
found here) and the notes verify() and select_run() write when a run's directory or its
record is gone.

Real run directories and SQLite files, against an in-process listener (the fixtures of
test_powercut_verify); every expected value is written out by hand."""

from __future__ import annotations

import importlib
import inspect
import sqlite3

import test_powercut_verify as tpv
from test_powercut_verify import (
    RUN_A,
    SECRET,
    _closed_port_address,
    _make_journal,
    _make_run,
    _record,
    _rows,
)

from fsyncbench.powercut import protocol
from fsyncbench.powercut.journal import JournalState, read_journal
from fsyncbench.powercut.run import POWERCUT_DIRNAME, this_hostname
from fsyncbench.powercut.verify import select_run, verify

listener, verify_env = tpv.listener, tpv.verify_env  # the fixtures of test_powercut_verify
# the module (fsyncbench.powercut.verify is also the name of its verify function)
verify_module = importlib.import_module("fsyncbench.powercut.verify")

WRITER = "lab-writer-7"


def _add_run(handle, run_id, target, *, host, started, first_seen):
    """A writer's hello in the listener's record, with its start (the writer's clock) and
    the listener's first sight of it (the listener's clock) as given."""
    hello = {
        "run_id": run_id,
        "host": host,
        "dir": str(target),
        "config": "wal/full",
        "pid": 4242,
        "started_utc": started,
    }
    handle.state.register(hello, "127.0.0.1:1")
    conn = sqlite3.connect(handle.state.path)
    try:
        conn.execute(
            "UPDATE runs SET first_seen_utc=?, last_seen_utc=? WHERE run_id=?",
            (first_seen, first_seen, run_id),
        )
        conn.commit()
    finally:
        conn.close()


def _lost_note(run_id, gone):
    return (
        f"the newest run the listener recorded from this host and directory is {run_id}, and "
        f"{gone} gone (the writer had made and synced it before its first commit): its "
        "settings come from the listener"
    )


# --------------------------------------------------------------------------- read_journal


def test_read_journal_opens_a_read_write_uri_with_a_5_s_busy_timeout(tmp_path, monkeypatch):
    """``?mode=rw`` is a URI parameter: SQLite reads it only when asked to parse the name as
    a URI (https://www.sqlite.org/uri.html: URI names are off by default, SQLITE_USE_URI=0),
    otherwise ``file:...?mode=rw`` is a file name. The busy timeout is SQLite's own
    (``PRAGMA busy_timeout``, https://www.sqlite.org/pragma.html#pragma_busy_timeout)."""
    db = _make_journal(tmp_path / "journal-wal-full.db", _rows(RUN_A, [1, 2, 3]))
    real_connect = sqlite3.connect
    opened = []

    def connect(database, *args, **kwargs):
        conn = real_connect(database, *args, **kwargs)
        busy_ms = conn.execute("PRAGMA busy_timeout").fetchone()[0]
        opened.append((database, args, kwargs.get("uri"), busy_ms))
        return conn

    monkeypatch.setattr(sqlite3, "connect", connect)
    state = read_journal(db, RUN_A, 64)
    assert state == JournalState(str(db), True, None, ((1, 3),), (), ("ok",), None)
    assert opened == [(db.resolve().as_uri() + "?mode=rw", (), True, 5000)]


# --------------------------------------------------------------------------- select_run


def test_select_run_gives_the_listener_10_s_to_list_its_runs(tmp_path, monkeypatch):
    rid = "3" * 32
    record = _record(rid, tmp_path)
    run_dir = _make_run(tmp_path, rid, _rows(rid, [1]), record)
    asked = []

    def list_runs(*args, **kwargs):
        bound = inspect.signature(protocol.list_runs).bind(*args, **kwargs)
        bound.apply_defaults()
        asked.append(bound.arguments["timeout_s"])
        return []

    monkeypatch.setattr(verify_module, "list_runs", list_runs)
    assert select_run(tmp_path, None, _closed_port_address(), SECRET) == (run_dir, record, [])
    assert asked == [10.0]


def test_select_run_looks_for_lost_runs_of_the_host_it_is_given(tmp_path, listener):
    target = tmp_path / "data"
    target.mkdir()
    rid = "f1" * 16
    _add_run(
        listener,
        rid,
        target,
        host=WRITER,
        started="2024-05-01T12:00:00Z",
        first_seen="2024-05-01T12:00:01Z",
    )
    got = select_run(target, None, listener.address, SECRET, hostname=WRITER)
    assert got == (
        target / POWERCUT_DIRNAME / rid,
        None,
        [_lost_note(rid, "its directory is")],
    )


def test_the_newest_lost_run_is_the_latest_started_even_if_the_listener_heard_it_first(
    tmp_path, listener
):
    """The writer's clock decides (as it does against the runs found here): a writer whose
    clock was set back before its second run is heard later but started "earlier"."""
    target = tmp_path / "data"
    target.mkdir()
    late, early = "f2" * 16, "f3" * 16
    host = this_hostname()
    # the listener lists runs in the order it first heard of them: late, then early
    _add_run(
        listener,
        late,
        target,
        host=host,
        started="2024-05-01T13:00:00Z",
        first_seen="2024-05-01T12:00:05Z",
    )
    _add_run(
        listener,
        early,
        target,
        host=host,
        started="2024-05-01T12:30:00Z",
        first_seen="2024-05-01T12:00:10Z",
    )
    run_dir, record, notes = select_run(target, None, listener.address, SECRET)
    assert (run_dir.name, record, notes) == (late, None, [_lost_note(late, "its directory is")])


def test_a_run_with_its_record_here_is_never_taken_for_lost(tmp_path, listener):
    """Even when the listener's start time for it is later than the run.json's (a listener
    record that disagrees with the writer's): the record here is what verify checks."""
    target = tmp_path / "data"
    rid = "f4" * 16
    record = _record(rid, target, started="2024-05-01T11:00:00Z")
    run_dir = _make_run(target, rid, _rows(rid, range(1, 4)), record)
    _add_run(
        listener,
        rid,
        target,
        host=this_hostname(),
        started="2024-05-01T13:00:00Z",
        first_seen="2024-05-01T11:00:01Z",
    )
    assert select_run(target, None, listener.address, SECRET) == (run_dir, record, [])


def test_a_lost_run_that_started_in_the_same_second_as_the_newest_here_does_not_displace_it(
    tmp_path, listener
):
    """select_run takes the listener's run only "when newer" than the newest run here."""
    target = tmp_path / "data"
    here, lost = "f5" * 16, "f6" * 16
    record = _record(here, target, started="2024-05-01T12:00:00Z")
    run_dir = _make_run(target, here, _rows(here, range(1, 4)), record)
    for rid, first_seen in ((here, "2024-05-01T12:00:01Z"), (lost, "2024-05-01T12:00:02Z")):
        _add_run(
            listener,
            rid,
            target,
            host=this_hostname(),
            started="2024-05-01T12:00:00Z",
            first_seen=first_seen,
        )
    assert select_run(target, None, listener.address, SECRET) == (run_dir, record, [])


def test_a_lost_run_whose_directory_survived_without_its_record_says_the_record_is_gone(
    tmp_path, listener
):
    target = tmp_path / "data"
    rid = "f7" * 16
    run_dir = _make_run(target, rid, _rows(rid, range(1, 4)))  # no run.json
    _add_run(
        listener,
        rid,
        target,
        host=this_hostname(),
        started="2024-05-01T12:00:00Z",
        first_seen="2024-05-01T12:00:01Z",
    )
    assert select_run(target, None, listener.address, SECRET) == (
        run_dir,
        None,
        [_lost_note(rid, "its run record is")],
    )


# --------------------------------------------------------------------------- verify


def test_verify_of_a_named_run_whose_directory_is_gone_notes_every_commit_lost(
    tmp_path, listener, verify_env
):
    target = tmp_path / "data"
    (target / POWERCUT_DIRNAME).mkdir(parents=True)
    rid = "f8" * 16
    run_dir = target / POWERCUT_DIRNAME / rid
    listener.add_run(rid, target, [(1, 5)], host=this_hostname())
    named = verify(listener.address, SECRET, target, rid, tmp_path / "out", ["fsb"])
    assert named.report.notes[1:] == (
        f"the run's directory {run_dir} is gone, though the writer had made and synced it "
        "before its first commit, on this host and in this directory as the listener "
        "recorded: every acknowledged commit of the run is lost",
    )
    # found without --run-id, select_run's note says it (once)
    found = verify(listener.address, SECRET, target, None, tmp_path / "out", ["fsb"])
    assert found.report.notes[1:] == (_lost_note(rid, "its directory is"),)
