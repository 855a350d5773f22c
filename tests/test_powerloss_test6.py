"""The test6 model is SQLite's crash VFS (src/test6.c, writeListSync) where its name says so,
torn-garbage fills destroyed sectors with random bytes, and subset no longer claims to be
test6 (issue 31 item 4). Hand-made traces whose every state is known, and real traces."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from fsyncbench import api
from fsyncbench.model import Pragmas
from fsyncbench.powerloss import sqlite
from fsyncbench.powerloss.matrix import evaluate, run_matrix
from fsyncbench.powerloss.models import crash_states, invalid_reason
from fsyncbench.powerloss.plan import PowerlossPlan
from fsyncbench.powerloss.trace import Op, Trace


def _trace(*ops: Op) -> Trace:
    return Trace(
        pragmas=Pragmas("WAL", "FULL"),
        ops=ops,
        roles=(("a", "main-db"),),
        db_name="a",
        rows=(),
        psow=False,
        dirsync_modelled=True,
        sqlite_version="test",
    )


OLD = (Op("create", "a"), Op("write", "a", 0, b"o" * 8), Op("barrier"))


def _at_end(trace: Trace, model: str, **kw) -> list:
    return [s for s in crash_states(trace, model, **kw) if s.point == len(trace.ops)]


def test_test6_writes_skips_or_trashes_every_sector_a_write_overlaps():
    trace = _trace(*OLD, Op("write", "a", 2, b"NN"), Op("ack", seq=1))
    states = _at_end(trace, "test6", sector_bytes=4)
    got = {s.how.split(": ")[1].split(" of")[0]: dict(s.files)["a"] for s in states}
    assert set(got) == {"actions L", "actions K", "actions T"}
    assert got["actions L"] == b"oooooooo"
    assert got["actions K"] == b"ooNNoooo"
    trashed = got["actions T"]
    # the whole sector [0, 4) is garbage, not only the two bytes written; the next is intact
    assert trashed[4:] == b"oooo" and trashed[:4] not in (b"oooo", b"ooNN", bytes(4))
    # seeded: the same state again has the same garbage
    assert _at_end(trace, "test6", sector_bytes=4)[2].files == states[2].files


def test_test6_never_loses_a_directory_change_and_subset_does():
    trace = _trace(
        *OLD, Op("create", "b"), Op("write", "b", 0, b"bb"), Op("delete", "a"), Op("ack", seq=1)
    )
    test6 = [dict(s.files) for s in _at_end(trace, "test6", sector_bytes=4)]
    # cfOpen and cfDelete go straight to the real VFS: b exists and a is gone in every state
    assert all(set(files) == {"b"} for files in test6)
    assert sorted(files["b"] for files in test6) == sorted([b"", b"bb", test6[2]["b"]])
    subset = [dict(s.files) for s in _at_end(trace, "subset")]
    assert {"a": b"oooooooo"} in subset  # both directory changes lost


def test_test6_applies_a_truncation_or_not_and_never_trashes_it():
    trace = _trace(*OLD, Op("truncate", "a", size_bytes=3), Op("ack", seq=1))
    got = sorted(dict(s.files)["a"] for s in _at_end(trace, "test6", sector_bytes=4))
    assert got == [b"ooo", b"oooooooo"]


def test_test6_samples_with_test6s_odds():
    # writeListSync: a random byte r; trash when r & 6 == 6 (1/4), else left out when r & 1
    # (3/8), else written (3/8)
    writes = [Op("write", "a", i, b"Z") for i in range(40)]
    trace = _trace(*OLD, *writes, Op("ack", seq=1))
    drawn = _at_end(trace, "test6", sector_bytes=4, max_states=64, samples=400, seed=3)
    assert all(s.sampled for s in drawn) and len(drawn) == 402
    counts = Counter("".join(s.how.split("actions ")[1].split(" ")[0] for s in drawn[2:]))
    total = sum(counts.values())
    assert counts["T"] / total == pytest.approx(1 / 4, abs=0.02)
    assert counts["K"] / total == pytest.approx(3 / 8, abs=0.02)
    assert counts["L"] / total == pytest.approx(3 / 8, abs=0.02)


def test_torn_garbage_fills_destroyed_sectors_with_random_bytes_torn_with_zeros():
    trace = _trace(*OLD, Op("write", "a", 2, b"NNNNN"), Op("ack", seq=1))
    zeros = [dict(s.files)["a"] for s in _at_end(trace, "torn", sector_bytes=4)]
    noise = [dict(s.files)["a"] for s in _at_end(trace, "torn-garbage", sector_bytes=4)]
    assert len(zeros) == len(noise) == 4
    assert zeros[0] == bytes(8)  # both pieces lost: both sectors zeroed
    assert noise[0] != bytes(8) and noise[0] != b"oooooooo"
    assert noise[3] == zeros[3] == b"ooNNNNNo"  # all kept: nothing destroyed
    again = [dict(s.files)["a"] for s in _at_end(trace, "torn-garbage", sector_bytes=4)]
    other = [dict(s.files)["a"] for s in _at_end(trace, "torn-garbage", sector_bytes=4, seed=1)]
    assert again == noise and other[0] != noise[0]


@pytest.mark.parametrize("model", ["torn-garbage", "test6"])
def test_sector_models_need_powersafe_overwrite_off(model):
    assert invalid_reason(model, True).startswith("invalid: SQLite was told")
    assert invalid_reason(model, False) == ""


def _record(tmp_path: Path, pragmas: Pragmas, commits: int) -> Trace:
    where = tmp_path / f"rec-{pragmas.label.replace('/', '-')}"
    where.mkdir()
    return sqlite.record_commits(where.resolve(), pragmas, commits, 200, False)


@pytest.mark.parametrize("model", ["torn-garbage", "test6"])
def test_wal_full_survives_garbage_and_the_checker_is_proven(tmp_path, model):
    trace = _record(tmp_path, Pragmas("WAL", "FULL"), 3)
    work = tmp_path / "work"
    work.mkdir()
    m = evaluate(
        trace, model, work, semantics="linux", sector_bytes=512, max_states=64, samples=8, seed=0
    )
    assert m.invalid == "" and m.states > 0
    assert (m.worst_lost, m.corrupt_states) == (0, 0) and m.checker_proven


def test_garbage_finds_what_zeros_hide_in_wal_normal(tmp_path):
    # WAL/NORMAL does not pad a commit to a sector boundary (it pads only when it syncs at
    # commit, wal.c sqlite3WalFrames), so with powersafe overwrite off the next
    # transaction's first frame shares a sector with the setup's last frame, which only
    # writeback made durable. A torn sector of zeros leaves that frame's checksum intact
    # (its page's tail was zeros already); garbage breaks it, and WAL recovery drops the
    # CREATE TABLE: the table is gone.
    trace = _record(tmp_path, Pragmas("WAL", "NORMAL"), 2)
    outcomes = {}
    for model in ("torn", "torn-garbage"):
        work = tmp_path / model
        work.mkdir()
        outcomes[model] = evaluate(
            trace,
            model,
            work,
            semantics="linux",
            sector_bytes=512,
            max_states=64,
            samples=8,
            seed=0,
        )
    assert outcomes["torn"].corrupt_states == 0
    garbage = outcomes["torn-garbage"]
    assert garbage.corrupt_states > 0
    assert garbage.worst.startswith("corrupt: the steps table is gone")


def test_subset_is_not_called_test6_and_test6_says_what_it_is(tmp_path):
    plan = PowerlossPlan((Pragmas("WAL", "FULL"),), models=("subset", "test6"), commits=2)
    text = " ".join(api.render(run_matrix(tmp_path, plan), "text", verbose=True).split())
    assert "- subset: each write, truncation and directory change" in text
    assert "(not SQLite's crash test: test6 never loses a directory change" in text
    assert (
        "- test6: SQLite's crash VFS (src/test6.c): each unsynced write written, left out" in text
    )
