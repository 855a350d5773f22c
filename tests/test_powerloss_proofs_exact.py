"""The known-corrupt states' building blocks, exactly: the files as issued, the page size and
b-tree page type read from the bytes SQLite wrote, the last database write batch holding an
index page, and each state's bytes and wording (fsyncbench.powerloss.proofs). The end-to-end
proof that the checker flags them is tests/test_powerloss_proofs.py; these pin the parts a
wrong-but-plausible edit would change without that test noticing."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest

from fsyncbench.model import Pragmas
from fsyncbench.powerloss import proofs, sqlite
from fsyncbench.powerloss.trace import Op, Trace

DB = "journal.db"
ROW = ("run-1", 1, "step", "h", '{"seq": 1, "status": "ok"}')


def _trace(ops: tuple[Op, ...], rows=((1, ROW),), label=("DELETE", "FULL")) -> Trace:
    return Trace(
        Pragmas(*label),
        ops,
        ((DB, "db"), (DB + "-journal", "journal")),
        DB,
        rows,
        True,
        True,
        "3.45.0",
    )


def _header(page_bytes: int, size: int | None = None) -> bytes:
    """A database header: 16 bytes of magic, then the page size field (big-endian)."""
    field = page_bytes if size is None else size
    return b"SQLite format 3\x00" + field.to_bytes(2, "big")


def _index_page(at: int) -> Op:
    return Op("write", DB, at, bytes([0x02]) + bytes(4095))


def _table_page(at: int) -> Op:
    return Op("write", DB, at, bytes([0x0D]) + bytes(4095))


# --- the files as issued ------------------------------------------------------------------


def test_issued_ignores_deleting_a_file_never_created_and_writes_to_one():
    ops = (
        Op("delete", "gone"),
        Op("write", "never-created", 0, b"abc"),
        Op("truncate", "never-created", size_bytes=9),
        Op("create", "a"),
        Op("write", "a", 2, b"xy"),
    )
    assert proofs._issued(ops) == {"a": bytearray(b"\x00\x00xy")}


def test_issued_applies_truncations():
    ops = (
        Op("create", "a"),
        Op("write", "a", 0, b"abcdef"),
        Op("truncate", "a", size_bytes=2),
        Op("create", "b"),
        Op("truncate", "b", size_bytes=3),
    )
    assert proofs._issued(ops) == {"a": bytearray(b"ab"), "b": bytearray(3)}


# --- the page size and the page type ------------------------------------------------------


def test_page_bytes_reads_the_header_field_from_exactly_18_bytes():
    assert proofs._page_bytes(_header(4096)) == 4096
    assert proofs._page_bytes(_header(512) + bytes(100)) == 512


@pytest.mark.parametrize("short", [b"", bytes(16), b"SQLite format 3\x00\x10"])
def test_page_bytes_is_zero_for_a_file_too_short_to_hold_it(short):
    assert proofs._page_bytes(short) == 0


def test_page_bytes_field_1_means_65536():
    assert proofs._page_bytes(_header(0, size=1)) == 65536
    assert proofs._page_bytes(_header(0, size=2)) == 2


def test_page_type_of_page_1_follows_the_100_byte_database_header():
    page1 = bytearray(4096)
    page1[0], page1[100], page1[101] = 0x53, 0x0D, 0x02
    assert proofs._page_type(bytes(page1), 0) == 0x0D
    assert proofs._page_type(bytes(page1), 4096) == 0x53


@pytest.mark.parametrize(("data", "offset"), [(b"", 4096), (bytes(100), 0), (bytes(99), 0)])
def test_page_type_is_minus_one_for_a_write_too_short_to_hold_it(data, offset):
    assert proofs._page_type(data, offset) == -1


# --- the last database write batch with an index page --------------------------------------


def _setup(*before_barrier: Op) -> tuple[Op, ...]:
    return (Op("create", DB), _table_page(0), *before_barrier, Op("barrier"))


def test_last_batch_is_none_without_one_after_the_barrier():
    # an index page written just before the barrier is setup, not a commit
    trace = _trace((*_setup(_index_page(4096)), Op("sync", DB), Op("ack", seq=1)))
    assert proofs._last_batch(trace) is None


def test_last_batch_starts_at_the_op_right_after_the_barrier_and_may_end_the_trace():
    ops = (*_setup(), _index_page(4096))
    b = len(ops) - 1
    assert proofs._last_batch(_trace(ops)) == (b, b + 1)
    ops2 = (*_setup(), _index_page(4096), _table_page(8192))
    assert proofs._last_batch(_trace(ops2)) == (b, b + 2)


def test_last_batch_holds_truncations_and_is_the_last_of_several():
    setup = _setup()
    b = len(setup)
    ops = (
        *setup,
        Op("truncate", DB, size_bytes=8192),
        _index_page(4096),
        Op("sync", DB),
        _table_page(8192),  # a batch without an index page: not the answer
        Op("sync", DB),
        Op("truncate", DB, size_bytes=12288),
        _index_page(12288),
        Op("truncate", DB, size_bytes=16384),
        Op("sync", DB),
    )
    assert proofs._last_batch(_trace(ops)) == (b + 5, b + 8)
    assert proofs._last_batch(_trace(ops[: b + 3])) == (b, b + 2)


# --- the states built from a real trace ---------------------------------------------------


@pytest.fixture
def recorded(tmp_path: Path) -> Trace:
    where = tmp_path / "rec"
    where.mkdir()
    return sqlite.record_commits(where.resolve(), Pragmas("DELETE", "FULL"), 4, 200, True)


def test_root_page_is_read_from_a_copy_in_the_tools_own_scratch_directory(recorded, monkeypatch):
    seen = []

    def fake_root_page(db: Path, table: str) -> int:
        seen.append((db.parent.name, db.name, db.read_bytes(), table))
        return 2

    monkeypatch.setattr(proofs.sqlite, "root_page", fake_root_page)
    files = {DB: bytearray(b"bytes")}
    assert proofs._root_page(files, DB) == 2
    ((parent, name, data, table),) = seen
    assert parent.startswith("fsyncbench-proof-") and (name, data, table) == (DB, b"bytes", "steps")


def test_final_is_none_for_a_database_too_short_for_a_page_size():
    ops = (Op("create", DB), Op("write", DB, 0, b"SQLite"), Op("barrier"))
    trace = _trace(ops)
    assert proofs._final(trace) is None
    assert proofs.known_corrupt_states(trace) == ()


def test_garbage_sector_overwrites_the_root_pages_first_sector_in_place(recorded):
    final = proofs._final(recorded)
    assert final is not None
    db = bytes(final[recorded.db_name])
    page = proofs._page_bytes(db)
    root = proofs._root_page(dict(final), recorded.db_name)
    state = proofs._garbage_sector(recorded, 7)
    assert state is not None
    ((name, got),) = state.files
    at = (root - 1) * page
    garbage = random.Random(f"7/{recorded.pragmas.label}/garbage-sector").randbytes(512)
    assert name == recorded.db_name and len(got) == len(db)
    assert got == db[:at] + garbage + db[at + 512 :]
    assert state.how == (
        "the database as issued at the end, the first 512 B of the steps table's root page "
        f"(page {root}) random (seed 7)"
    )
    assert (state.name, state.caught_by) == ("garbage-sector", "integrity_check")
    assert proofs._garbage_sector(recorded, 7) == state
    assert proofs._garbage_sector(recorded, 8) != state


@pytest.mark.parametrize("root", [0, 1])
def test_garbage_sector_needs_a_root_page_after_page_1(recorded, monkeypatch, root):
    monkeypatch.setattr(proofs, "_root_page", lambda files, name: root)
    assert proofs._garbage_sector(recorded, 0) is None


def test_garbage_sector_root_page_may_be_the_last_page_but_not_past_it(recorded, monkeypatch):
    final = proofs._final(recorded)
    assert final is not None
    db = final[recorded.db_name]
    pages = len(db) // proofs._page_bytes(db)
    monkeypatch.setattr(proofs, "_root_page", lambda files, name: pages)
    state = proofs._garbage_sector(recorded, 0)
    assert state is not None and f"(page {pages})" in state.how
    monkeypatch.setattr(proofs, "_root_page", lambda files, name: pages + 1)
    assert proofs._garbage_sector(recorded, 0) is None


def test_changed_row_and_its_wording(recorded):
    state = proofs._changed_row(recorded)
    assert state is not None
    seq = recorded.rows[-1][0]
    assert state.how == (
        f"the database as issued at the end, row {seq}'s status 'ok' rewritten as 'no' in place"
    )
    assert (state.name, state.caught_by) == ("changed-row", "rows")
    ((_, got),) = state.files
    assert f'{{"seq": {seq}, "status": "no"'.encode() in got


def test_changed_row_needs_both_a_database_and_a_row(recorded):
    no_rows = dataclasses.replace(recorded, rows=())
    assert proofs._changed_row(no_rows) is None
    no_db = _trace((Op("create", "other"),))
    assert proofs._changed_row(no_db) is None


def test_empty_database_and_its_wording(recorded):
    state = proofs._empty_database(recorded)
    assert state == proofs.KnownCorrupt(
        "empty-database", ((recorded.db_name, b""),), "the database file with no bytes", "table"
    )


def test_known_corrupt_states_default_seed_is_0_and_the_seed_reaches_the_garbage(recorded):
    states = proofs.known_corrupt_states(recorded)
    assert [s.name for s in states] == [
        "half-index",
        "garbage-sector",
        "changed-row",
        "empty-database",
    ]
    assert states == proofs.known_corrupt_states(recorded, 0)
    seeded = {s.name: s for s in proofs.known_corrupt_states(recorded, 5)}
    assert seeded["garbage-sector"] == proofs._garbage_sector(recorded, 5)
    assert seeded["garbage-sector"].how.endswith("(seed 5)")


def test_last_batch_is_the_last_one_holding_an_index_page_not_merely_the_last():
    setup = _setup()
    b = len(setup)
    ops = (*setup, _index_page(4096), Op("sync", DB), _table_page(8192), Op("sync", DB))
    assert proofs._last_batch(_trace(ops)) == (b, b + 1)
    # a batch right after a sync starts at its first write
    ops2 = (*setup, Op("sync", DB), _index_page(4096), _table_page(8192))
    assert proofs._last_batch(_trace(ops2)) == (b + 1, b + 3)


def test_half_index_drops_the_index_pages_and_both_journal_headers_and_says_so():
    wal, journal = DB + "-wal", DB + "-journal"
    setup = (
        Op("create", DB),
        _table_page(0),
        Op("create", journal),
        Op("write", journal, 0, b"J" * 600),
        Op("create", wal),
        Op("write", wal, 0, b"W" * 40),
        Op("barrier"),
    )
    b = len(setup)
    ops = (*setup, _index_page(4096), _table_page(8192), _index_page(12288), Op("sync", DB))
    trace = dataclasses.replace(_trace(ops), roles=((DB, "db"), (journal, "journal"), (wal, "wal")))
    state = proofs.half_index(trace)
    assert state is not None
    assert state.how == (
        f"ops up to {b} as issued, then the database writes {b}-{b + 2} except those of index "
        f"pages (2 lost); the header of {journal}, {wal} lost"
    )
    files = dict(state.files)
    assert files[journal] == bytes(512) + b"J" * 88 and files[wal] == bytes(32) + b"W" * 8
    assert files[DB] == bytes([0x0D]) + bytes(4095) + bytes(4096) + bytes([0x0D]) + bytes(4095)
    control = proofs.half_index(trace, lose_header=False)
    assert control is not None
    assert control.how == (
        f"ops up to {b} as issued, then the database writes {b}-{b + 2} except those of index "
        "pages (2 lost)"
    )
    assert dict(control.files)[journal] == b"J" * 600
