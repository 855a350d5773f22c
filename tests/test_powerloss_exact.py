"""Exact behaviour of the powerloss building blocks: the op log a recording process streams
to disk (:class:`~fsyncbench.powerloss.rebase.OpStream`: emptied unless appending, private to
its user, closed once), a trace's counts after the barrier and its WAL checkpoints (each run
of database writes, whatever syncs sit inside it), and test6's per-item draw, one random
byte with SQLite's odds (src/test6.c, writeListSync)."""

from __future__ import annotations

import os
import random
import stat

from fsyncbench.model import Pragmas
from fsyncbench.powerloss import models, rebase
from fsyncbench.powerloss.models import crash_states
from fsyncbench.powerloss.trace import Op, Trace

# --- OpStream -------------------------------------------------------------------------


def test_op_stream_empties_an_old_log_unless_asked_to_append(tmp_path):
    log = tmp_path / "ops.bin"
    first, second = Op("create", "a"), Op("ack", seq=7)
    stream = rebase.OpStream(log)
    assert stream.path == log
    stream.write(first)
    stream.close()
    again = rebase.OpStream(log)  # a new run: the old ops are gone
    again.write(second)
    again.close()
    assert rebase.read_ops(log) == [second]
    more = rebase.OpStream(log, append=True)
    more.write(first)
    more.close()
    assert rebase.read_ops(log) == [second, first]


def test_op_stream_log_is_readable_by_its_owner_only(tmp_path):
    log = tmp_path / "ops.bin"
    rebase.OpStream(log).close()
    assert stat.S_IMODE(os.stat(log).st_mode) == 0o600


def test_op_stream_opens_where_there_is_no_o_cloexec(tmp_path, monkeypatch):
    # Windows has no os.O_CLOEXEC (Python's os.open makes descriptors non-inheritable anyway,
    # https://peps.python.org/pep-0446/): the stream must open and record without it
    monkeypatch.delattr(rebase.os, "O_CLOEXEC", raising=False)
    log = tmp_path / "ops.bin"
    stream = rebase.OpStream(log)
    stream.write(Op("barrier"))
    stream.close()
    assert rebase.read_ops(log) == [Op("barrier")]


def test_op_stream_closes_its_descriptor_once_even_when_it_is_zero(tmp_path, monkeypatch):
    closed: list[int] = []
    monkeypatch.setattr(rebase.os, "close", closed.append)
    monkeypatch.setattr(rebase.os, "open", lambda *a: 0)  # stdin was closed: fd 0 is free
    stream = rebase.OpStream(tmp_path / "ops.bin")
    stream.close()
    stream.close()  # a second close closes nothing (not stdout, not someone else's fd)
    assert closed == [0]


def test_op_stream_second_close_touches_no_other_descriptor(tmp_path, monkeypatch):
    stream = rebase.OpStream(tmp_path / "ops.bin")
    stream.close()
    closed: list[int] = []
    monkeypatch.setattr(rebase.os, "close", closed.append)
    stream.close()
    assert closed == []


# --- Trace counts and checkpoints -----------------------------------------------------


def _trace(journal_mode: str, *ops: Op) -> Trace:
    return Trace(
        pragmas=Pragmas(journal_mode, "FULL"),
        ops=ops,
        roles=(("a", "main-db"), ("a-wal", "wal")),
        db_name="a",
        rows=(),
        psow=False,
        dirsync_modelled=True,
        sqlite_version="test",
    )


SETUP = (Op("create", "a"), Op("sync", "a", flags=2), Op("write", "a", 0, b"x"), Op("barrier"))


def test_count_takes_every_op_after_the_barrier_and_none_before():
    trace = _trace("WAL", *SETUP, Op("write", "a", 0, b"y"), Op("sync", "a", flags=2))
    assert trace.count("write") == 1  # the one right after the barrier, not the setup's
    assert trace.count("sync") == 1
    assert trace.count("barrier") == 0


def test_checkpoints_are_zero_outside_wal_mode():
    trace = _trace("DELETE", *SETUP, Op("write", "a", 0, b"y"), Op("ack", seq=1))
    assert trace.checkpoints() == 0


def test_checkpoint_right_after_the_barrier_counts_and_setup_writes_do_not():
    trace = _trace("WAL", *SETUP, Op("write", "a", 0, b"y"), Op("ack", seq=1))
    assert trace.checkpoints() == 1


def test_checkpoint_of_truncations_only_counts():
    trace = _trace("WAL", *SETUP, Op("truncate", "a", size_bytes=0), Op("ack", seq=1))
    assert trace.checkpoints() == 1


def test_checkpoint_run_spans_its_syncs_and_ends_at_a_wal_write():
    trace = _trace(
        "WAL",
        *SETUP,
        Op("write", "a-wal", 32, b"frame"),
        Op("write", "a", 0, b"y"),  # checkpoint 1: writes, a sync, a truncation
        Op("sync", "a", flags=2),
        Op("dirsync"),
        Op("truncate", "a", size_bytes=1),
        Op("write", "a-wal", 0, b"header"),  # the WAL starts over: the run ends
        Op("write", "a", 0, b"z"),  # checkpoint 2
        Op("ack", seq=1),
    )
    assert trace.checkpoints() == 2


def test_checkpoint_ends_at_a_create_delete_ack_or_wal_truncation():
    ends = (Op("create", "b"), Op("delete", "b"), Op("ack", seq=1), Op("truncate", "a-wal"))
    for between in ends:
        trace = _trace("WAL", *SETUP, Op("write", "a", 0, b"y"), between, Op("write", "a", 0, b"z"))
        assert trace.checkpoints() == 2, between


def test_wal_restarts_count_each_wal_header_write_after_the_barrier_once():
    trace = _trace(
        "WAL",
        Op("create", "a"),
        Op("create", "a-wal"),
        Op("write", "a-wal", 0, b"setup header"),  # before the barrier: not a restart
        Op("barrier"),
        Op("write", "a-wal", 0, b"header"),  # right after it: a restart
        Op("write", "a-wal", 32, b"frame"),
        Op("write", "a", 0, b"header of the db, not the wal"),
        Op("ack", seq=1),
    )
    assert trace.wal_restarts() == 1


# --- test6 draws ----------------------------------------------------------------------


def _writelistsync(byte: int, truncation: bool) -> int:
    """src/test6.c writeListSync: ``random &= 0x01`` when there is no buffer (a truncation);
    trash when (random & 0x06) == 0x06, else left out when random & 0x01, else written."""
    if truncation:
        byte &= 0x01
    if byte & 0x06 == 0x06:
        return models._TRASHED
    return models._LOST if byte & 0x01 else models._KEPT


def test_test6_draws_one_random_byte_per_item_with_writelistsyncs_rule():
    for seed in range(20):
        for radix in (2, 3):
            rng, ref = random.Random(seed), random.Random(seed)
            got = [models._test6_action(rng, radix) for _ in range(50)]
            want = [_writelistsync(ref.getrandbits(8), radix == 2) for _ in range(50)]
            assert got == want, (seed, radix)


def test_test6_sampled_truncations_are_kept_or_lost_never_trashed():
    truncations = [Op("truncate", "a", size_bytes=i) for i in range(12, 0, -1)]
    trace = _trace("WAL", *SETUP, *truncations, Op("ack", seq=1))
    end = len(trace.ops)
    drawn = [
        s
        for s in crash_states(trace, "test6", sector_bytes=4, max_states=64, samples=200, seed=5)
        if s.point == end
    ]
    assert all(s.sampled for s in drawn)
    letters = "".join(s.how.split("actions ")[1].split(" ")[0] for s in drawn[2:])
    assert "T" not in letters
    assert 0.4 < letters.count("K") / len(letters) < 0.6  # one bit: half kept, half lost


def test_test6_trashes_the_sector_holding_a_writes_last_byte_each_with_its_own_garbage():
    # the write [2, 5) overlaps sector [0, 4) and, by its last byte only, sector [4, 8)
    trace = _trace("WAL", Op("create", "a"), Op("write", "a", 0, b"o" * 12), Op("barrier"))
    trace = _trace("WAL", *trace.ops, Op("write", "a", 2, b"NNN"), Op("ack", seq=1))
    end = len(trace.ops)
    states = [s for s in crash_states(trace, "test6", sector_bytes=4) if s.point == end]
    trashed = next(dict(s.files)["a"] for s in states if "actions T " in s.how)
    assert trashed[8:] == b"oooo"  # the next sector is intact
    first, second = trashed[:4], trashed[4:8]
    assert first not in (b"oooo", b"ooNN") and second not in (b"oooo", b"Nooo")
    assert first != second  # garbage seeded per sector, not one block repeated


def _end_states(trace: Trace, model: str, **kw) -> dict[str, bytes]:
    """label (``actions LT``, ``kept items 0x1``) -> file ``a`` after the last op."""
    end = len(trace.ops)
    return {
        s.how.split(": ")[1].split(" of ")[0]: dict(s.files)["a"]
        for s in crash_states(trace, model, **kw)
        if s.point == end
    }


OLD12 = (Op("create", "a"), Op("write", "a", 0, b"o" * 12), Op("barrier"))


def test_test6_trashed_sectors_rebuild_byte_for_byte_from_the_states_name():
    # garbage for item k's j-th sector comes from random.Random("<seed>/<pragmas>/<model>/
    # <point>/<label>/<k * 65536 + j>"): the seed and label a report prints rebuild it
    trace = _trace("WAL", *OLD12, Op("write", "a", 0, b"A"), Op("write", "a", 5, b"BBBBB"))
    states = _end_states(trace, "test6", sector_bytes=4)
    name = f"0/{trace.pragmas.label}/test6/{len(trace.ops)}/actions LT"
    want = b"".join(random.Random(f"{name}/{65536 + j}").randbytes(4) for j in range(2))
    assert states["actions LT"] == b"oooo" + want
    # an item after a trashed one is still applied
    trace = _trace("WAL", *OLD12, Op("write", "a", 0, b"A"), Op("write", "a", 9, b"B"))
    trashed_then_kept = _end_states(trace, "test6", sector_bytes=4)["actions TK"]
    assert trashed_then_kept[4:] == b"oooooBoo" and trashed_then_kept[:4] != b"oooo"


def test_torn_keeps_a_piece_without_spilling_into_a_lost_whole_sector():
    # [2, 11) on 4-byte sectors: pieces [2, 4) (partial), [4, 8) (whole), [8, 11) (partial)
    trace = _trace("WAL", *OLD12, Op("write", "a", 2, b"NNNNNNNNN"))
    states = _end_states(trace, "torn", sector_bytes=4)
    assert states["kept items 0x1"] == b"ooNN" + b"oooo" + bytes(4)
    assert states["kept items 0x2"] == bytes(4) + b"NNNN" + bytes(4)
    assert states["kept items 0x7"] == b"ooNNNNNNNNNo"


def test_a_lost_append_past_the_end_does_not_grow_the_file():
    trace = _trace("WAL", *OLD12, Op("write", "a", 13, b"NN"))  # sector [12, 16), past the end
    for model in ("torn", "torn-garbage"):
        states = _end_states(trace, model, sector_bytes=4)
        assert states["kept items 0x0"] == b"o" * 12, model


def test_torn_garbage_gives_each_destroyed_sector_its_own_bytes():
    trace = _trace("WAL", *OLD12, Op("write", "a", 2, b"NNNNN"))  # [2, 4) and [4, 7): partial
    lost = _end_states(trace, "torn-garbage", sector_bytes=4)["kept items 0x0"]
    assert lost[8:] == b"oooo"
    assert lost[:4] != lost[4:8]
    assert b"oooo" not in (lost[:4], lost[4:8])


def test_subset_labels_each_state_by_the_bit_of_every_kept_item():
    trace = _trace("WAL", *OLD12, Op("write", "a", 0, b"A"), Op("write", "a", 1, b"B"))
    states = _end_states(trace, "subset")
    assert states == {
        "kept items 0x0": b"oooooooooooo",
        "kept items 0x1": b"Aooooooooooo",
        "kept items 0x2": b"oBoooooooooo",
        "kept items 0x3": b"ABoooooooooo",
    }


def test_op_describe_lines_name_each_kind_as_reports_print_them():
    # flags: SQLITE_SYNC_NORMAL 2, FULL 3, DATAONLY 0x10 on top
    # (https://www.sqlite.org/c3ref/c_sync_dataonly.html)
    assert Op("write", "x.db-wal", 8272, b"w" * 24).describe() == "write x.db-wal @8272 +24 B"
    assert Op("truncate", "x.db", size_bytes=3).describe() == "truncate x.db to 3 B"
    assert Op("sync", "x.db", flags=3).describe() == "sync x.db (FULL)"
    assert Op("sync", "x.db", flags=0x13).describe() == "sync x.db (FULL)"
    assert Op("sync", "x.db", flags=2).describe() == "sync x.db (NORMAL)"
    assert Op("sync", "x.db", flags=0x12).describe() == "sync x.db (NORMAL)"
    assert Op("ack", seq=4).describe() == "commit 4 acknowledged"
    assert Op("create", "x.db").describe() == "create x.db"
    assert Op("dirsync").describe() == "dirsync"
    assert Op("barrier").describe() == "barrier"


def test_macos_full_fsync_of_one_file_leaves_later_changes_to_others_pending():
    # F_FULLFSYNC flushes the drive cache; what another file did after it (never fsynced)
    # stays pending and may or may not survive the next F_FULLFSYNC's cut
    trace = _trace(
        "WAL",
        Op("create", "a"),
        Op("create", "b"),
        Op("barrier"),
        Op("sync", "b", flags=3),
        Op("write", "a", 0, b"X"),
        Op("create", "c"),
        Op("sync", "b", flags=3),
    )
    end = len(trace.ops)
    states = [
        dict(s.files) for s in crash_states(trace, "subset", semantics="macos") if s.point == end
    ]
    assert len(states) == 4
    assert {"a": b"X", "b": b"", "c": b""} in states
    assert {"a": b"", "b": b""} in states


# --- the filesystem model's sync rules, state by state ------------------------------------

SYNC_FULL, SYNC_NORMAL = 3, 2


def _fs(semantics: str, *ops: Op) -> models._Fs:
    fs = models._Fs(semantics)
    for op in ops:
        fs.apply(op)
    return fs


def test_macos_plain_fsync_caches_the_ops_so_far_and_full_fsync_of_another_file_keeps_the_rest():
    # a plain fsync of "a" hands its first write to the drive's cache; F_FULLFSYNC of "b"
    # makes that durable and leaves only the write after the plain fsync pending
    first, second = Op("write", "a", 0, b"AA"), Op("write", "a", 4, b"BB")
    fs = _fs(
        "macos",
        Op("create", "a"),
        Op("create", "b"),
        Op("barrier"),
        first,
        Op("sync", "a", flags=SYNC_NORMAL),
        second,
    )
    assert fs.cached_ops == [1, 0] and fs.cached[0] == b"AA"
    assert fs.durable[0] == b"" and fs.pending[0] == [first, second]
    fs.apply(Op("sync", "b", flags=SYNC_FULL))
    assert fs.durable[0] == b"AA" and fs.pending[0] == [second]
    assert fs.cached_ops == [0, 0]


def test_windows_flush_makes_every_directory_change_of_its_name_durable_and_no_other():
    fs = _fs(
        "windows",
        Op("create", "a"),
        Op("barrier"),
        Op("delete", "a"),  # (False, "a", 0)
        Op("create", "b"),  # (True, "b", 1): another name, left pending
        Op("create", "a"),  # (True, "a", 2): "a" again, a new file
        Op("write", "a", 0, b"new"),
        Op("sync", "a", flags=SYNC_FULL),
    )
    assert fs.durable_names == {"a": 2}
    assert fs.dir_pending == [(True, "b", 1)]
    assert fs.cached_names == {"a": 2}
    assert fs.durable[2] == b"new" and fs.pending[2] == []
    fs.apply(Op("sync", "b", flags=SYNC_FULL))
    assert fs.durable_names == {"a": 2, "b": 1} and fs.dir_pending == []


def test_macos_full_fsync_leaves_what_no_plain_fsync_cached_pending():
    # after the barrier nothing is cached: F_FULLFSYNC of "a" leaves "b"'s write, and the
    # create and write of "c" (never fsynced, never dirsynced) pending, "c" durable as empty
    write_b, write_c = Op("write", "b", 0, b"B"), Op("write", "c", 0, b"C")
    fs = _fs(
        "macos",
        Op("create", "a"),
        Op("create", "b"),
        Op("barrier"),
        write_b,
        Op("create", "c"),
        write_c,
        Op("sync", "a", flags=SYNC_FULL),
    )
    assert fs.pending[1] == [write_b] and fs.durable[1] == b""
    assert fs.dir_pending == [(True, "c", 2)]
    assert fs.durable[2] == b"" and fs.pending[2] == [write_c]
    assert fs.durable_names == {"a": 0, "b": 1}


def test_a_sync_right_after_the_barrier_is_a_crash_point():
    trace = _trace("WAL", Op("create", "a"), Op("barrier"), Op("sync", "a", flags=SYNC_FULL))
    assert models.crash_points(trace) == [2, 3]
    acked = _trace("WAL", Op("create", "a"), Op("barrier"), Op("ack", seq=1), Op("dirsync"))
    assert models.crash_points(acked) == [3, 4]


def test_prefix_states_include_the_one_right_after_a_create():
    trace = _trace(
        "WAL",
        Op("create", "a"),
        Op("barrier"),
        Op("create", "b"),
        Op("write", "b", 0, b"x"),
        Op("sync", "b", flags=SYNC_FULL),
    )
    states = [dict(s.files) for s in crash_states(trace, "prefix") if s.point == 4]
    assert states == [{"a": b""}, {"a": b"", "b": b""}, {"a": b"", "b": b"x"}]


def test_torn_cuts_at_512_byte_sectors_by_default():
    big = Op("write", "a", 0, b"y" * 1024)
    trace = _trace("WAL", *SETUP, big, Op("ack", seq=1))
    default = [s.files for s in crash_states(trace, "torn")]
    assert default == [s.files for s in crash_states(trace, "torn", sector_bytes=512)]
    assert default != [s.files for s in crash_states(trace, "torn", sector_bytes=513)]


def _at_end(trace: Trace, **kw) -> list:
    end = len(trace.ops)
    return [s for s in crash_states(trace, "subset", **kw) if s.point == end]


def test_subset_enumerates_up_to_max_states_or_samples_plus_two_and_samples_beyond():
    # two pending writes: 4 subsets
    trace = _trace(
        "WAL", *SETUP, Op("write", "a", 0, b"1"), Op("write", "a", 1, b"2"), Op("ack", seq=1)
    )
    exactly = _at_end(trace, max_states=4, samples=0)
    assert len(exactly) == 4 and not any(s.sampled for s in exactly)
    # max_states below 4, but samples + 2 reaches it: still every subset, once each
    by_samples = _at_end(trace, max_states=1, samples=2)
    assert len(by_samples) == 4 and not any(s.sampled for s in by_samples)
    by_more_samples = _at_end(trace, max_states=1, samples=3)
    assert len(by_more_samples) == 4 and not any(s.sampled for s in by_more_samples)
    # beyond both: nothing kept, everything kept, then the draws
    drawn = _at_end(trace, max_states=1, samples=1)
    assert len(drawn) == 3 and all(s.sampled for s in drawn)


def test_subset_draws_one_random_mask_per_state_seeded_by_the_cut():
    # a seed keeps its figures: state k beyond the two fixed ones keeps exactly the items
    # whose bits are set in the k-th getrandbits(items) of Random("seed/label/subset/point")
    writes = [Op("write", "a", i, b"w") for i in range(4)]
    trace = _trace("WAL", *SETUP, *writes, Op("ack", seq=1))
    end = len(trace.ops)
    drawn = _at_end(trace, max_states=1, samples=8, seed=3)
    rng = random.Random(f"3/{trace.pragmas.label}/subset/{end}")
    masks = [rng.getrandbits(4) for _ in range(8)]
    assert [s.how.split(": ")[1].split(" of ")[0] for s in drawn] == [
        "kept items 0x0",
        "kept items 0xf",
        *(f"kept items {m:#x}" for m in masks),
    ]


def test_macos_full_fsync_before_any_barrier_leaves_undirsynced_creates_pending():
    fs = _fs("macos", Op("create", "a"), Op("sync", "a", flags=SYNC_FULL))
    assert fs.dir_pending == [(True, "a", 0)] and fs.durable_names == {}
