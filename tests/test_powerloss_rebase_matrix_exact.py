"""Exact behaviour of a power cut's rebuilt state and of the matrix's state checker: the
trace of one segment (:func:`~fsyncbench.powerloss.rebase.segment_trace`: no roles, no
rows, apsw's SQLite and directory-sync build), the one state a cut leaves
(:func:`~fsyncbench.powerloss.rebase.state_after_cut`: 512-byte sectors unless told, the
sector size it is told, at most two states built at each earlier crash point, its error
messages), and :class:`~fsyncbench.powerloss.matrix._Checker`'s two caches (each files
tuple hashed once while it is among the 4096 most recent, each distinct content opened
once) and what it says when the database file is gone."""

from __future__ import annotations

import apsw
import pytest

from fsyncbench.model import Pragmas
from fsyncbench.powerloss import matrix, rebase
from fsyncbench.powerloss.models import CrashState
from fsyncbench.powerloss.trace import Op

# --------------------------------------------------------------------------- segment_trace


@pytest.mark.parametrize("psow", [True, False])
def test_a_segment_trace_has_no_roles_or_rows_and_apsws_sqlite(psow):
    ops = [Op("create", "state.db"), Op("barrier")]
    trace = rebase.segment_trace(iter(ops), Pragmas("WAL", "FULL"), "state.db", psow)
    assert trace.ops == tuple(ops)
    assert trace.pragmas == Pragmas("WAL", "FULL")
    assert trace.roles == ()
    assert trace.rows == ()
    assert trace.db_name == "state.db"
    assert trace.psow is psow
    # apsw's own SQLite build (https://rogerbinns.github.io/apsw/apsw.html#apsw.compile_options)
    assert trace.dirsync_modelled is ("DISABLE_DIRSYNC" not in apsw.compile_options)
    assert trace.sqlite_version == apsw.sqlite_lib_version()


# ------------------------------------------------------------------------- state_after_cut


def _trace(ops: list[Op], psow: bool = True):
    return rebase.segment_trace(ops, Pragmas("DELETE", "FULL"), "f", psow)


#: f holds 1024 durable bytes; then its first 512 bytes are overwritten and never synced:
#: one whole 512-byte sector, or part of a larger one.
HALF_OVERWRITTEN = [
    Op("create", "f"),
    Op("write", "f", offset_bytes=0, data=b"a" * 1024),
    Op("barrier"),
    Op("write", "f", offset_bytes=0, data=b"b" * 512),
]


def test_a_torn_cut_tears_512_byte_sectors_unless_told_otherwise():
    trace = _trace(HALF_OVERWRITTEN, psow=False)
    # the write covered its 512-byte sector whole: nothing is torn, the old bytes stay
    assert dict(rebase.state_after_cut(trace, "torn").files) == {"f": b"a" * 1024}
    # on 4 KiB sectors it covered part of one: that sector (the whole file) is zeroed
    state = rebase.state_after_cut(trace, "torn", sector_bytes=4096)
    assert dict(state.files) == {"f": bytes(1024)}
    state = rebase.state_after_cut(trace, "torn", sector_bytes=513)
    assert dict(state.files) == {"f": bytes(513) + b"a" * 511}


def test_a_cut_builds_at_most_two_states_at_each_earlier_crash_point(monkeypatch):
    # three unsynced writes before an ack: 8 subset states at that point, of which the cut
    # needs none (only the keep-nothing state after the last op)
    ops = [
        Op("create", "f"),
        Op("barrier"),
        Op("write", "f", offset_bytes=0, data=b"1"),
        Op("write", "f", offset_bytes=1, data=b"2"),
        Op("write", "f", offset_bytes=2, data=b"3"),
        Op("ack", seq=1),
        Op("write", "f", offset_bytes=3, data=b"4"),
    ]
    real = rebase.crash_states
    built: list[int] = []

    def counting(*args, **kwargs):
        for state in real(*args, **kwargs):
            built.append(state.point)
            yield state

    monkeypatch.setattr(rebase, "crash_states", counting)
    state = rebase.state_after_cut(_trace(ops), "subset")
    assert (state.point, dict(state.files)) == (len(ops), {"f": b""})
    assert "kept items 0x0 of 4" in state.how
    assert built == [6, 6, 7]  # keep nothing and keep everything after the ack, then the cut


def test_an_unknown_model_is_refused_by_name():
    with pytest.raises(ValueError, match=r"^unknown persistence model 'nope'$"):
        rebase.state_after_cut(_trace(HALF_OVERWRITTEN), "nope")


def test_a_prefix_cut_of_a_segment_without_its_durable_start_says_it_found_no_state():
    # no barrier (the stream lost its snapshot_ops start): prefix has no honoured floor to
    # cut back to, so there is no state after the last op
    with pytest.raises(RuntimeError, match=r"^crash_states gave no state after the last op$"):
        rebase.state_after_cut(_trace(HALF_OVERWRITTEN[:2]), "prefix")


# ------------------------------------------------------------------------ the checker


def _checker(tmp_path, monkeypatch):
    """A checker whose opens and hashes are counted (the opens pretend every state sound)."""
    opened: list[tuple[tuple[str, bytes], ...]] = []
    hashed: list[tuple[tuple[str, bytes], ...]] = []
    real_key = matrix._key

    def counting_key(files):
        hashed.append(files)
        return real_key(files)

    def counting_open(self, state):
        opened.append(state.files)
        return frozenset({1}), ""

    monkeypatch.setattr(matrix, "_key", counting_key)
    monkeypatch.setattr(matrix._Checker, "_open", counting_open)
    return matrix._Checker(tmp_path, _trace([Op("barrier")])), opened, hashed


def _files(data: bytes) -> tuple[tuple[str, bytes], ...]:
    return tuple([("f", data)])  # a new tuple object each call


def test_the_checker_hashes_a_files_tuple_once_and_opens_equal_content_once(tmp_path, monkeypatch):
    checker, opened, hashed = _checker(tmp_path, monkeypatch)
    files = _files(b"x")
    for point in range(3):  # prefix: one tuple at many crash points
        assert checker.check(CrashState(point, files, (), "p")) == (frozenset({1}), "")
    assert hashed == [files] and opened == [files]
    same = _files(b"x")  # equal, but another object: hashed, not opened again
    assert same is not files
    assert checker.check(CrashState(3, same, (), "p")) == (frozenset({1}), "")
    assert len(hashed) == 2 and hashed[1] is same
    assert opened == [files]
    other = _files(b"y")
    checker.check(CrashState(4, other, (), "p"))
    assert len(hashed) == 3 and opened == [files, other]
    checker.check(CrashState(5, files, (), "p"))  # still remembered
    assert len(hashed) == 3 and len(opened) == 2


def test_the_checker_remembers_the_4096_most_recent_files_tuples(tmp_path, monkeypatch):
    checker, opened, hashed = _checker(tmp_path, monkeypatch)
    tuples = [_files(b"x") for _ in range(4097)]  # all kept alive: no id is reused
    for files in tuples[:4096]:
        checker.check(CrashState(0, files, (), "p"))
    assert len(hashed) == 4096 and len(opened) == 1
    checker.check(CrashState(0, tuples[0], (), "p"))  # 4096 remembered: the first too
    assert len(hashed) == 4096
    checker.check(CrashState(0, tuples[4096], (), "p"))  # the 4097th: the old ones forgotten
    assert len(hashed) == 4097
    checker.check(CrashState(0, tuples[0], (), "p"))
    assert len(hashed) == 4098 and hashed[-1] is tuples[0]
    assert len(opened) == 1  # the content itself stays known


def test_the_checker_says_the_database_file_is_gone_when_no_state_file_is_it(tmp_path):
    trace = rebase.segment_trace([Op("barrier")], Pragmas("WAL", "FULL"), "state.db", True)
    checker = matrix._Checker(tmp_path, trace)
    state = CrashState(1, (("state.db-wal", b"w"),), (1,), "no database file")
    assert checker.check(state) == (
        frozenset(),
        "the database file is gone (its directory entry was never synced)",
    )
