"""fsyncbench powerloss: recorded SQLite traces, crash states under each persistence model,
the known answers of SQLite's documentation, a planted fault, and a real SIGKILL.

Real SQLite (apsw's build) on real files in pytest's tmp_path; the models are also checked
on small hand-made traces whose every state is known."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import this_platform

from fsyncbench import api, options
from fsyncbench.errors import FsyncbenchError
from fsyncbench.model import Pragmas
from fsyncbench.powerloss import rebase, sqlite
from fsyncbench.powerloss.matrix import evaluate, run_matrix
from fsyncbench.powerloss.models import (
    CrashState,
    crash_points,
    crash_states,
    default_semantics,
    invalid_reason,
)
from fsyncbench.powerloss.plan import PowerlossPlan
from fsyncbench.powerloss.rebase import read_ops
from fsyncbench.powerloss.trace import Op, Trace
from fsyncbench.report import store
from tests.clitools import assert_usage_error, fsb, leftovers

COMMITS = 6
#: The semantics powerloss simulates by default here: linux, macos or windows.
SEMANTICS = default_semantics(sys.platform)
#: A CLI powerloss measures each configuration once (macOS: with fullfsync on).
ONE_FULLFSYNC = this_platform.ONE_FULLFSYNC


def _small_run(tmp_path, synchronous="full", **kw):
    """A short ``run`` of WAL with --powerloss synced-only (one round, 20 samples each)."""
    return api.run(
        tmp_path,
        journal_modes="wal",
        synchronous=synchronous,
        samples=20,
        rounds=1,
        primitives=False,
        powerloss="synced-only",
        **kw,
    )


def _record(tmp_path: Path, mode: str, sync: str, *, psow: bool = True, fullfsync=None, **kw):
    where = tmp_path / f"rec-{mode}-{sync}-{int(psow)}-{fullfsync}"
    where.mkdir()
    return sqlite.record_commits(
        where.resolve(), Pragmas(mode, sync, fullfsync), COMMITS, 200, psow, **kw
    )


def _evaluate(tmp_path: Path, trace: Trace, model: str, semantics: str = "linux", **kw):
    work = tmp_path / f"work-{model}-{semantics}"
    work.mkdir(exist_ok=True)
    return evaluate(
        trace,
        model,
        work,
        semantics=semantics,
        sector_bytes=kw.pop("sector_bytes", 512),
        max_states=kw.pop("max_states", 64),
        samples=kw.pop("samples", 16),
        seed=kw.pop("seed", 0),
        **kw,
    )


# ------------------------------------------------------------------ the recorded trace


def test_the_trace_holds_every_file_operation_of_a_wal_commit(tmp_path):
    trace = _record(tmp_path, "WAL", "FULL")
    after = trace.ops[trace.barrier_index + 1 :]
    assert [op.seq for op in after if op.kind == "ack"] == list(range(1, COMMITS + 1))
    # each WAL/FULL commit appends its frames to the WAL and syncs the WAL before returning
    acks = [i for i, op in enumerate(trace.ops) if op.kind == "ack"]
    for i in acks:
        before = trace.ops[i - 1]
        assert before.kind == "sync" and before.file.endswith("-wal")
    roles = dict(trace.roles)
    assert roles[trace.db_name] == "main-db"
    assert roles[trace.db_name + "-wal"] == "wal"
    assert len(trace.rows) == COMMITS
    # the WAL's first sync also synced the directory (modelled: os_unix.c UNIXFILE_DIRSYNC)
    first_wal_sync = next(
        i for i, op in enumerate(trace.ops) if op.kind == "sync" and op.file.endswith("-wal")
    )
    assert trace.ops[first_wal_sync + 1].kind == "dirsync"


def test_delete_mode_creates_and_unlinks_the_journal_of_each_commit(tmp_path):
    trace = _record(tmp_path, "DELETE", "FULL")
    after = trace.ops[trace.barrier_index + 1 :]
    journal = trace.db_name + "-journal"
    assert [op.kind for op in after if op.file == journal and op.kind in ("create", "delete")] == [
        "create",
        "delete",
    ] * COMMITS
    # FULL never syncs the directory after the unlink; EXTRA does (pragma docs)
    deletes = [i for i, op in enumerate(trace.ops) if op.kind == "delete"]
    assert all(trace.ops[i + 1].kind != "dirsync" for i in deletes if i > trace.barrier_index)
    extra = _record(tmp_path, "DELETE", "EXTRA")
    deletes = [i for i, op in enumerate(extra.ops) if op.kind == "delete"]
    assert deletes and all(extra.ops[i + 1].kind == "dirsync" for i in deletes)


def test_fullfsync_reaches_the_sync_flags(tmp_path):
    plain = _record(tmp_path, "WAL", "FULL", fullfsync=False)
    full = _record(tmp_path, "WAL", "FULL", fullfsync=True)
    flags = {op.flags & 0x0F for op in plain.ops if op.kind == "sync"}
    assert flags == {2}  # SQLITE_SYNC_NORMAL
    assert 3 in {op.flags & 0x0F for op in full.ops if op.kind == "sync"}  # SQLITE_SYNC_FULL


# -------------------------------------------------- known answers (SQLite's documentation)


@pytest.mark.parametrize(
    ("mode", "sync"), [("WAL", "FULL"), ("DELETE", "EXTRA"), ("TRUNCATE", "FULL")]
)
def test_durable_configurations_lose_nothing_and_are_never_corrupt(tmp_path, mode, sync):
    trace = _record(tmp_path, mode, sync)
    for model in ("synced-only", "prefix", "subset"):
        m = _evaluate(tmp_path, trace, model)
        assert (m.worst_lost, m.corrupt_states, m.states_losing) == (0, 0, 0), model
        # the counterpart: the same checker flagged every known-corrupt state of this trace
        assert m.checker_proven and m.known_corrupt == 4, model
        assert m.states >= m.crash_points > COMMITS


@pytest.mark.parametrize("mode", ["WAL", "DELETE", "TRUNCATE"])
def test_synchronous_off_loses_every_commit_since_setup(tmp_path, mode):
    trace = _record(tmp_path, mode, "OFF")
    m = _evaluate(tmp_path, trace, "synced-only")
    assert m.worst_lost == COMMITS
    assert m.corrupt_states == 0 and m.checker_proven


def test_wal_normal_loses_the_last_commits_but_is_never_corrupt(tmp_path):
    trace = _record(tmp_path, "WAL", "NORMAL")
    for model in ("synced-only", "prefix", "subset"):
        m = _evaluate(tmp_path, trace, model)
        assert m.corrupt_states == 0 and m.checker_proven, model
        # nothing syncs the WAL until the checkpoint at close: every commit is at risk
        assert m.worst_lost == COMMITS, model
    # the checkpoint at close syncs: a cut after the last op loses nothing
    last = list(crash_states(trace, "synced-only"))[-1]
    assert last.point == len(trace.ops)
    work = tmp_path / "last"
    work.mkdir()
    for name, data in last.files:
        (work / name).write_bytes(data)
    rows, problem = sqlite.open_state(work, trace.db_name, True)
    assert problem == "" and sorted(rows) == list(range(1, COMMITS + 1))


def test_delete_full_loses_the_last_commit_only_through_the_unsynced_unlink(tmp_path):
    trace = _record(tmp_path, "DELETE", "FULL")
    m = _evaluate(tmp_path, trace, "synced-only")
    assert (m.worst_lost, m.corrupt_states) == (1, 0) and m.checker_proven
    # the losing states hold the committed transaction's journal: hot, so SQLite rolls back
    losing = [
        s
        for s in crash_states(trace, "synced-only")
        if s.acked and trace.db_name + "-journal" in dict(s.files)
    ]
    assert losing
    # the same trace with a directory sync after each unlink (what EXTRA adds) loses nothing
    ops: list[Op] = []
    for op in trace.ops:
        ops.append(op)
        if op.kind == "delete":
            ops.append(Op("dirsync"))
    fixed = dataclasses.replace(trace, ops=tuple(ops))
    assert _evaluate(tmp_path, fixed, "synced-only").worst_lost == 0


def _agreements(result) -> dict[tuple[str, str], tuple[str, int, int]]:
    """(configuration, model) -> (agreement, worst lost, corrupt states) of a matrix whose
    every cell agrees with the documented promise, each proven by the checker."""
    verdicts = {
        (c.pragmas.label, m.model): (c.agreement(m), m.worst_lost, m.corrupt_states)
        for c in result.configs
        for m in c.models
    }
    assert all(v[0] == "agrees" for v in verdicts.values()), verdicts
    assert all(m.checker_proven for c in result.configs for m in c.models)
    return verdicts


@pytest.mark.slow
def test_documented_promise_agrees_for_the_default_matrix(tmp_path):
    configs = tuple(
        Pragmas(j, s) for j in ("DELETE", "TRUNCATE", "WAL") for s in ("OFF", "NORMAL", "FULL")
    )
    result = run_matrix(tmp_path, PowerlossPlan(configs, commits=4))
    assert [c.pragmas for c in result.configs] == list(configs)
    verdicts = _agreements(result)
    assert verdicts["wal/full", "synced-only"] == ("agrees", 0, 0)
    assert verdicts["wal/normal", "synced-only"] == ("agrees", 4, 0)
    assert verdicts["delete/full", "prefix"] == ("agrees", 1, 0)
    assert leftovers(tmp_path) == []


def test_documented_promise_agrees_for_one_configuration_of_each_kind(tmp_path):
    """The twin of the test above on four of its nine configurations, two commits each,
    under synced-only (prefix's states: the known answers above): one durable, one losing
    the commits since the last checkpoint, one losing the last commit through its unsynced
    unlink, one losing everything."""
    configs = (
        Pragmas("WAL", "FULL"),
        Pragmas("WAL", "NORMAL"),
        Pragmas("DELETE", "FULL"),
        Pragmas("TRUNCATE", "OFF"),
    )
    plan = PowerlossPlan(configs, models=("synced-only",), semantics="linux", commits=2)
    result = run_matrix(tmp_path, plan)
    assert [c.pragmas for c in result.configs] == list(configs)
    verdicts = _agreements(result)
    assert verdicts["wal/full", "synced-only"] == ("agrees", 0, 0)
    assert verdicts["wal/normal", "synced-only"] == ("agrees", 2, 0)
    assert verdicts["delete/full", "synced-only"] == ("agrees", 1, 0)
    assert verdicts["truncate/off", "synced-only"] == ("agrees", 2, 0)
    assert leftovers(tmp_path) == []


# ------------------------------------------------------------------ a planted fault


def test_a_vfs_that_skips_one_sync_shows_losses_where_the_real_one_shows_none(tmp_path):
    real = _record(tmp_path, "WAL", "FULL")
    setup_syncs = sum(1 for op in real.ops[: real.barrier_index] if op.kind == "sync")
    assert _evaluate(tmp_path, real, "synced-only").worst_lost == 0
    skip = setup_syncs + 2  # the WAL sync of the third commit
    planted = _record(tmp_path, "WAL", "FULL", fullfsync=False, sync_filter=lambda n: n != skip)
    assert (
        sum(op.kind == "sync" for op in planted.ops)
        == sum(op.kind == "sync" for op in real.ops) - 1
    )
    m = _evaluate(tmp_path, planted, "synced-only")
    assert m.worst_lost >= 1 and m.corrupt_states == 0 and m.checker_proven
    assert "lost 1 of the 3 commits acknowledged before the cut (3)" in m.worst


# ------------------------------------------------------------------ torn and psow


def test_torn_with_powersafe_overwrite_on_is_invalid_not_corrupt(tmp_path):
    trace = _record(tmp_path, "WAL", "FULL", psow=True)
    m = _evaluate(tmp_path, trace, "torn")
    assert m.invalid.startswith("invalid: SQLite was told writes are powersafe overwrites")
    assert (m.states, m.corrupt_states, m.worst_lost, m.known_corrupt) == (0, 0, 0, 0)
    assert invalid_reason("torn", False) == ""
    assert invalid_reason("subset", True) == ""
    plan = PowerlossPlan((Pragmas("WAL", "FULL"),), models=("torn",), commits=3, psow=True)
    result = run_matrix(tmp_path, plan)
    assert result.configs[0].agreement(result.configs[0].models[0]) == ""
    text = api.render(result, "text", verbose=True)
    assert "invalid" in text and "DISAGREES" not in text


def test_torn_with_psow_off_keeps_wal_full_intact(tmp_path):
    trace = _record(tmp_path, "WAL", "FULL", psow=False)
    m = _evaluate(tmp_path, trace, "torn", samples=8)
    assert m.invalid == "" and m.states > 0
    assert (m.worst_lost, m.corrupt_states) == (0, 0) and m.checker_proven


# --------------------------------------------------------------- macOS semantics


def test_macos_semantics_count_only_fullfsync(tmp_path):
    plain = _record(tmp_path, "WAL", "FULL", fullfsync=False)
    full = _record(tmp_path, "WAL", "FULL", fullfsync=True)
    assert _evaluate(tmp_path, plain, "synced-only", "linux").worst_lost == 0
    assert _evaluate(tmp_path, plain, "synced-only", "macos").worst_lost == COMMITS
    assert _evaluate(tmp_path, full, "synced-only", "macos").worst_lost == 0


def test_macos_delete_mode_with_fullfsync_loses_the_last_commit_as_sqlite_does(tmp_path):
    # SQLite's unix VFS syncs the directory after unlinking the journal with a plain fsync
    # (unixDelete: full_fsync(fd, 0, 0)), which stops at the drive's cache on macOS; the
    # journal's creation, plain-synced too, was flushed to stable storage by the database's
    # F_FULLFSYNC. A cut after the last commit leaves the journal hot: it rolls back.
    plan = PowerlossPlan(
        (
            Pragmas("DELETE", "FULL", True),
            Pragmas("DELETE", "EXTRA", True),
            Pragmas("WAL", "FULL", True),
        ),
        models=("synced-only", "subset"),
        semantics="macos",
        commits=3,
        samples=8,
    )
    result = run_matrix(tmp_path, plan)
    lost = {(c.pragmas.label, m.model): m.worst_lost for c in result.configs for m in c.models}
    assert lost == {
        ("delete/full/fullfsync", "synced-only"): 1,
        ("delete/full/fullfsync", "subset"): 1,
        ("delete/extra/fullfsync", "synced-only"): 1,  # linux: 0 (its dirsync is honoured)
        ("delete/extra/fullfsync", "subset"): 1,
        ("wal/full/fullfsync", "synced-only"): 0,
        ("wal/full/fullfsync", "subset"): 0,
    }
    assert all(m.corrupt_states == 0 for c in result.configs for m in c.models)
    assert all(m.checker_proven for c in result.configs for m in c.models)
    # what SQLite promises on macOS: delete/extra is not durable there
    durable = {c.pragmas.label: c.documented_durable for c in result.configs}
    assert durable == {
        "delete/full/fullfsync": False,
        "delete/extra/fullfsync": False,
        "wal/full/fullfsync": True,
    }
    assert all(c.agreement(m) != "DISAGREES" for c in result.configs for m in c.models)
    extra = result.configs[1]
    assert "unixDelete" in extra.documented_why and "plain fsync" in extra.documented_why
    (tmp_path / "linux").mkdir()
    linux = run_matrix(
        tmp_path / "linux",
        dataclasses.replace(
            plan, configs=plan.configs[1:2], models=("synced-only",), semantics="linux"
        ),
    )
    assert linux.configs[0].models[0].worst_lost == 0


def test_windows_semantics_ignore_directory_syncs(tmp_path):
    # winDelete never syncs the directory, so even synchronous=EXTRA can lose the last
    # commit of DELETE mode; TRUNCATE and WAL at FULL commit with a file flush
    plan = PowerlossPlan(
        (Pragmas("DELETE", "EXTRA"), Pragmas("TRUNCATE", "FULL"), Pragmas("WAL", "FULL")),
        models=("synced-only",),
        semantics="windows",
        commits=3,
    )
    (tmp_path / "w").mkdir()
    result = run_matrix(tmp_path / "w", plan)
    assert [c.models[0].worst_lost for c in result.configs] == [1, 0, 0]
    assert [c.documented_durable for c in result.configs] == [False, True, True]
    assert "winDelete" in result.configs[0].documented_why
    assert "windows semantics" in " ".join(api.render(result, "text").split())
    assert "Semantics windows (no directory syncs;" in api.render(result, "markdown")


# ------------------------------------------------------ the models on hand-made traces


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


SETUP = (Op("create", "a"), Op("write", "a", 0, b"old!"), Op("barrier"))


def _files(states: list[CrashState]) -> list[dict[str, bytes]]:
    return [dict(s.files) for s in states]


def test_macos_f_fullfsync_flushes_what_earlier_plain_fsyncs_left_in_the_drive_cache():
    ops = (
        *SETUP,
        Op("write", "a", 0, b"new!"),
        Op("sync", "a", flags=2),  # plain fsync: into the drive's cache only
        Op("write", "a", 0, b"NEW"),  # issued after it: still only in the page cache
        Op("create", "b"),
        Op("write", "b", 0, b"bb"),
        Op("sync", "b", flags=2),
        Op("dirsync"),  # b's entry into the drive's cache
        Op("delete", "b"),
        Op("create", "c"),
        Op("write", "c", 0, b"cc"),
        Op("sync", "c", flags=3),  # F_FULLFSYNC of c: the drive flushes its whole cache
    )
    trace = _trace(*ops)
    before = rebase.state_after_cut(
        dataclasses.replace(trace, ops=ops[:-1]), "synced-only", semantics="macos"
    )
    assert dict(before.files) == {"a": b"old!"}  # nothing reached stable storage yet
    after = rebase.state_after_cut(trace, "synced-only", semantics="macos")
    # a as of its plain fsync, b's entry (its unlink never synced) and c's data, but not c's
    # entry: the directory was synced before c was created
    assert dict(after.files) == {"a": b"new!", "b": b"bb"}
    # linux honours each plain sync at once: the same cut keeps the same, minus nothing
    assert dict(rebase.state_after_cut(trace, "synced-only").files) == {"a": b"new!", "b": b"bb"}
    # under subset the plain-synced items are lost or kept until the F_FULLFSYNC
    subset = _files(
        list(crash_states(dataclasses.replace(trace, ops=ops[:-1]), "subset", semantics="macos"))
    )
    assert {"a": b"old!"} in subset and {"a": b"new!", "b": b"bb"} in subset


def test_windows_a_file_flush_persists_earlier_directory_changes_and_ignores_dirsync():
    ops = (
        *SETUP,
        Op("create", "j"),
        Op("write", "j", 0, b"jj"),
        Op("dirsync"),  # recorded on a POSIX host; SQLite on Windows issues none
        Op("delete", "j"),
        Op("ack", seq=1),
    )
    trace = _trace(*ops)
    assert dict(rebase.state_after_cut(trace, "synced-only", semantics="windows").files) == {
        "a": b"old!"
    }
    assert dict(rebase.state_after_cut(trace, "synced-only").files) == {"a": b"old!", "j": b""}
    # a flush persists its own name's directory changes, not another's: a journal's
    # deletion persists when its name is created and flushed again
    journal = (
        *SETUP,
        Op("create", "j"),
        Op("write", "j", 0, b"j1"),
        Op("sync", "j", flags=2),  # j's creation persists with it
        Op("delete", "j"),
        Op("write", "a", 0, b"new!"),
        Op("sync", "a", flags=2),  # a's flush: j's deletion stays pending
    )
    cut = rebase.state_after_cut(_trace(*journal), "synced-only", semantics="windows")
    assert dict(cut.files) == {"a": b"new!", "j": b"j1"}
    again = (*journal, Op("create", "j"), Op("write", "j", 0, b"j2"), Op("sync", "j", flags=2))
    cut = rebase.state_after_cut(_trace(*again), "synced-only", semantics="windows")
    assert dict(cut.files) == {"a": b"new!", "j": b"j2"}
    flushed = _trace(*ops, Op("write", "a", 0, b"new!"), Op("sync", "a", flags=2))
    # FlushFileBuffers of a: its data; j's entries are not a's, and were never flushed
    assert dict(rebase.state_after_cut(flushed, "synced-only", semantics="windows").files) == {
        "a": b"new!"
    }


def test_synced_only_keeps_synced_data_and_synced_directory_entries_only():
    trace = _trace(
        *SETUP,
        Op("write", "a", 0, b"new!"),
        Op("create", "b"),
        Op("write", "b", 0, b"bb"),
        Op("sync", "b", flags=2),  # b's data is durable, its directory entry is not
        Op("ack", seq=1),
        Op("sync", "a", flags=2),
        Op("dirsync"),
        Op("delete", "b"),
        Op("ack", seq=2),
    )
    states = list(crash_states(trace, "synced-only"))
    assert [s.point for s in states] == crash_points(trace) == [6, 8, 9, 12]
    assert _files(states) == [
        {"a": b"old!"},  # before b's sync
        {"a": b"old!"},  # after ack 1 = before a's sync: b's entry was never synced
        {"a": b"new!"},  # before the directory sync: a synced, b still has no entry
        {"a": b"new!", "b": b"bb"},  # the unlink of b was never synced: b is back
    ]
    assert [s.acked for s in states] == [(), (1,), (1,), (1, 2)]
    # under prefix the same cut can also keep everything issued
    assert {"a": b"new!"} in _files([s for s in crash_states(trace, "prefix") if s.point == 12])


def test_prefix_states_are_every_prefix_after_the_last_sync():
    trace = _trace(
        *SETUP,
        Op("write", "a", 4, b"1"),
        Op("sync", "a", flags=2),
        Op("write", "a", 5, b"2"),
        Op("write", "a", 6, b"3"),
        Op("ack", seq=1),
    )
    last = [s for s in crash_states(trace, "prefix") if s.point == len(trace.ops)]
    assert [dict(s.files)["a"] for s in last] == [b"old!1", b"old!12", b"old!123"]
    first = [s for s in crash_states(trace, "prefix") if s.point == 4]
    assert [dict(s.files)["a"] for s in first] == [b"old!", b"old!1"]


def test_subset_enumerates_every_combination_of_unsynced_writes():
    trace = _trace(
        *SETUP,
        Op("write", "a", 0, b"X"),
        Op("write", "a", 2, b"Y"),
        Op("truncate", "a", size_bytes=3),
        Op("ack", seq=1),
    )
    states = [s for s in crash_states(trace, "subset") if s.point == len(trace.ops)]
    contents = sorted(dict(s.files)["a"] for s in states)
    assert contents == sorted([b"old!", b"Xld!", b"olY!", b"XlY!", b"old", b"Xld", b"olY", b"XlY"])
    assert not any(s.sampled for s in states)


def test_subset_samples_reproducibly_beyond_max_states():
    writes = [Op("write", "a", i, b"Z") for i in range(10)]
    trace = _trace(*SETUP, *writes, Op("ack", seq=1))

    def run(seed):
        return [
            s.files
            for s in crash_states(trace, "subset", max_states=16, samples=5, seed=seed)
            if s.point == len(trace.ops)
        ]

    assert run(7) == run(7)
    assert all(
        s.how.endswith("(seed 7)")
        for s in crash_states(trace, "subset", max_states=16, samples=5, seed=7)
        if s.point == len(trace.ops)
    )
    assert run(7) != run(8)
    states = list(crash_states(trace, "subset", max_states=16, samples=5))
    assert all(s.sampled for s in states if s.point == len(trace.ops))
    assert len([s for s in states if s.point == len(trace.ops)]) == 5 + 2


def test_torn_writes_tear_at_sectors_and_a_torn_partial_sector_is_destroyed():
    trace = _trace(
        Op("create", "a"),
        Op("write", "a", 0, b"o" * 8),
        Op("barrier"),
        Op("write", "a", 2, b"NNNNN"),  # sectors of 4 bytes: [2,4) partial, [4,7) partial
        Op("ack", seq=1),
    )
    got = sorted(
        dict(s.files)["a"]
        for s in crash_states(trace, "torn", sector_bytes=4)
        if s.point == len(trace.ops)
    )
    assert got == sorted(
        [
            b"\0\0\0\0\0\0\0\0",  # both pieces lost: both sectors destroyed
            b"ooNN\0\0\0\0",
            b"\0\0\0\0NNNo",
            b"ooNNNNNo",
        ]
    )
    with pytest.raises(ValueError, match="unknown persistence model"):
        list(crash_states(trace, "everything"))


# ----------------------------------------------- a real crash (process death) cross-check

_WRITER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from fsyncbench.measure.workloads import SCHEMA, step_row
    from fsyncbench.powerloss.rebase import OpStream
    from fsyncbench.powerloss.sqlite import Recorder
    from fsyncbench.powerloss.trace import Op

    directory, log_path, mode, sync, stop_after = (
        Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5]))
    rec = Recorder(directory, sink=OpStream(log_path).write)
    conn = rec.connect(directory / "journal.db")
    conn.execute(f"PRAGMA journal_mode={mode}").fetchall()
    conn.execute(f"PRAGMA synchronous={sync}")
    conn.execute(SCHEMA)
    rec.mark(Op("barrier"))
    for seq in range(1, 1000):
        conn.execute("BEGIN")
        conn.execute("INSERT INTO steps VALUES (?, ?, ?, ?, ?)", step_row("r", seq, 200))
        conn.execute("COMMIT")
        rec.mark(Op("ack", seq=seq))
        if seq == stop_after:
            print("ready", flush=True)
            time.sleep(600)
    """
)


@pytest.mark.parametrize(("mode", "sync"), [("WAL", "NORMAL"), ("DELETE", "FULL")])
def test_sigkill_loses_nothing_written_and_matches_the_fullest_prefix_state(tmp_path, mode, sync):
    directory = (tmp_path / "db").resolve()
    directory.mkdir()
    log = tmp_path / "ops.bin"
    child = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(directory), str(log), mode, sync, "5"],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        child.kill()  # SIGKILL; TerminateProcess on Windows (exit code 1)
        code = child.wait(timeout=30)
        assert code != 0 if sys.platform == "win32" else code == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
    ops = read_ops(log)
    trace = Trace(
        Pragmas(mode, sync),
        tuple(ops),
        (),
        "journal.db",
        tuple((s, None) for s in range(1, 6)),
        True,
        True,
        "test",
    )
    # the fullest prefix state (every op issued) is byte for byte what the kill left on disk
    fullest = [s for s in crash_states(trace, "prefix") if s.point == len(ops)][-1]
    on_disk = {p.name: p.read_bytes() for p in directory.iterdir() if not p.name.endswith("-shm")}
    assert dict(fullest.files) == on_disk
    assert fullest.acked == (1, 2, 3, 4, 5)
    # and SQLite finds every acknowledged commit in it: process death loses nothing
    rows, problem = sqlite.open_state(directory, "journal.db", True)
    assert problem == "" and sorted(rows) == [1, 2, 3, 4, 5]
    # while the model's poorest prefix state at that point loses them (wal/normal) or the
    # last one (delete/full: the unlink that commits was not synced)
    poorest = [s for s in crash_states(trace, "prefix") if s.point == len(ops)][0]
    work = tmp_path / "poorest"
    work.mkdir()
    for name, data in poorest.files:
        (work / name).write_bytes(data)
    rows, problem = sqlite.open_state(work, "journal.db", True)
    assert problem == ""
    assert sorted(rows) == ([] if mode == "WAL" else [1, 2, 3, 4])


# ------------------------------------------------------------------ the command


def test_powerloss_command_prints_the_table_and_leaves_nothing(tmp_path):
    argv = ("--journal-mode", "wal", "--synchronous", "normal,full", "--no-report")
    argv += ONE_FULLFSYNC
    proc = fsb("powerloss", tmp_path, *argv, "--verbose", env=dict(os.environ, COLUMNS="400"))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    # in every platform's semantics (linux, macos with fullfsync, windows)
    normal, full = this_platform.label("wal/normal"), this_platform.label("wal/full")
    assert f"{normal}: loses all 10 acknowledged commits recorded" in out
    assert f"{full}: loses 0 (synced-only); documented durable" in out
    header = next(line for line in out.splitlines() if line.startswith("configuration "))
    assert header.split("  ")[0] == "configuration"
    assert "lost, worst" in header and "measured vs expected" in header
    assert leftovers(tmp_path) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.slow
def test_powerloss_json_and_html(tmp_path):
    proc = fsb(
        *("powerloss", tmp_path, "--journal-mode", "wal", "--synchronous", "off"),
        *("--format", "json", "--no-report", *ONE_FULLFSYNC),
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)["powerloss"]  # the report as saved: kind powerloss
    assert json.loads(proc.stdout)["kind"] == "powerloss"
    assert data["models"] == ["synced-only", "prefix"]
    (config,) = data["configs"]
    assert config["pragmas"]["synchronous"] == "OFF"
    assert [m["worst_lost"] for m in config["models"]] == [10, 10]
    loaded = store.report_from_json(proc.stdout).powerloss
    assert loaded is not None
    (c,) = loaded.configs
    assert [c.agreement(m) for m in c.models] == ["agrees", "agrees"]
    html = fsb(
        *("powerloss", tmp_path, "--journal-mode", "wal", "--synchronous", "full"),
        *("--format", "html", "--no-report", *ONE_FULLFSYNC),
    )
    assert html.returncode == 0 and html.stdout.startswith("<!DOCTYPE html>")
    assert "Commits lost per configuration and model" in html.stdout


def test_keep_failures_writes_the_worst_state(tmp_path):
    keep = tmp_path / "failures"
    target = tmp_path / "t"
    target.mkdir()
    proc = fsb(
        "powerloss",
        target,
        "--journal-mode",
        "delete",
        "--synchronous",
        "full",
        "--model",
        "synced-only",
        "--keep-failures",
        keep,
        "--no-report",
        *ONE_FULLFSYNC,
    )
    assert proc.returncode == 0, proc.stderr
    (state,) = keep.iterdir()
    # DELETE loses the last commit in every platform's semantics (Linux: the unlink is not
    # synced; macOS: the directory's sync is a plain fsync; Windows: never synced)
    base = this_platform.label("delete/full").replace("/", "-")
    assert state.name == f"{base}-synced-only"
    info = json.loads((state / "state.json").read_text())
    assert info["finding"].startswith("lost 1 of the 1 commits acknowledged before the cut (1)")
    assert (state / f"journal-{base}.db-journal").exists()  # the hot journal
    rows, problem = sqlite.open_state(state, f"journal-{base}.db", True)
    assert problem == "" and rows == {}


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ("--model", "bogus"),
            "invalid persistence model bogus: allowed values are synced-only, prefix, subset, torn, "
            "torn-garbage, test6",
        ),
        (("--commits", "0"), "--commits must be 1 to 200, got 0"),
        (("--samples", "0"), "--samples must be 1 to 4096, got 0"),
        (("--seed", "-1"), "--seed must be 0 or more, got -1"),
        (
            ("--journal-mode", "fast"),
            "invalid journal_mode fast: allowed values are delete, truncate, persist, memory, wal, off",
        ),
    ],
)
def test_bad_powerloss_input_is_one_line_and_exit_2(tmp_path, args, line):
    assert_usage_error(fsb("powerloss", tmp_path, *args), line)


@pytest.mark.slow
def test_keep_failures_is_checked_before_any_work(tmp_path):
    bad = tmp_path / "no" / "such"
    assert_usage_error(
        fsb("powerloss", tmp_path, "--keep-failures", bad),
        f"--keep-failures {bad}: {bad.parent} does not exist",
    )
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert_usage_error(
        fsb("powerloss", tmp_path, "--keep-failures", afile / "sub"),
        f"--keep-failures {afile / 'sub'}: {afile} is not a directory",
    )
    link = tmp_path / "link"
    link.symlink_to(tmp_path)
    assert_usage_error(
        fsb("powerloss", tmp_path, "--keep-failures", link),
        f"--keep-failures {link}: not a directory",
    )


def test_keep_failures_is_checked_before_any_work_in_process(tmp_path, monkeypatch, capsys):
    from fsyncbench import cli

    bad = tmp_path / "no" / "such"
    afile = tmp_path / "afile"
    afile.write_text("x")
    link = tmp_path / "link"
    link.symlink_to(tmp_path)
    monkeypatch.chdir(tmp_path)
    for keep, line in (
        (bad, f"--keep-failures {bad}: {bad.parent} does not exist"),
        (afile / "sub", f"--keep-failures {afile / 'sub'}: {afile} is not a directory"),
        (link, f"--keep-failures {link}: not a directory"),
    ):
        with pytest.raises(FsyncbenchError) as err:
            options.powerloss_plan(keep_failures=keep)
        assert str(err.value) == line
        assert cli.main(["powerloss", str(tmp_path), "--keep-failures", str(keep)]) == 2
        assert capsys.readouterr().err == f"fsyncbench: error: {line}\n"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["afile", "link"]


def test_keep_failures_never_touches_what_is_already_there(tmp_path):
    keep = tmp_path / "keep"
    name = this_platform.label("wal/normal").replace("/", "-") + "-synced-only"
    mine = keep / name
    mine.mkdir(parents=True)
    (mine / "mine.txt").write_text("precious")
    target = tmp_path / "t"
    target.mkdir()
    args = ("--journal-mode", "wal", "--synchronous", "normal", "--model", "synced-only")
    args += ONE_FULLFSYNC
    proc = fsb("powerloss", target, *args, "--keep-failures", keep, "--no-report", "--verbose")
    assert proc.returncode == 0, proc.stderr
    assert (mine / "mine.txt").read_text() == "precious"
    assert sorted(p.name for p in mine.iterdir()) == ["mine.txt"]
    state = keep / f"{name}-2"
    info = json.loads((state / "state.json").read_text())
    assert info["semantics"] == SEMANTICS and info["psow"] is True
    assert info["model"] == "synced-only"
    assert sorted(info["expected_rows"], key=int) == [str(n) for n in range(1, 11)]
    assert f"Kept in {state}." in " ".join(proc.stdout.split())


def test_macos_semantics_are_judged_against_the_macos_promise(tmp_path):
    # on any host: macOS semantics compare with what SQLite promises on macOS, where
    # plain fsync is not durable (no false "DISAGREES" for wal/full without fullfsync)
    plan = PowerlossPlan(
        (Pragmas("WAL", "FULL", False), Pragmas("WAL", "FULL", True)),
        models=("synced-only",),
        semantics="macos",
        commits=3,
    )
    result = run_matrix(tmp_path, plan)
    plain, full = result.configs
    assert (plain.documented_durable, full.documented_durable) == (False, True)
    assert plain.agreement(plain.models[0]) == "agrees"
    assert full.agreement(full.models[0]) == "agrees"
    assert "DISAGREES" not in api.render(result, "text")


def test_sampled_figures_are_stated_as_lower_bounds(tmp_path):
    plan = PowerlossPlan(
        (Pragmas("WAL", "NORMAL"), Pragmas("WAL", "FULL")),
        models=("subset",),
        commits=4,
        max_states=2,
        samples=2,
    )
    text = api.render(run_matrix(tmp_path, plan), "text", verbose=True)
    assert "wal/normal: loses all 4 acknowledged commits recorded" in text
    assert "(subset, sampled)" in text
    assert "wal/full: no loss seen in" in text and "sampled states (subset, sampled)" in text
    assert "agrees (sampled states)" in text


def test_api_refuses_wrong_types():
    with pytest.raises(FsyncbenchError, match="commits must be an integer"):
        api.simulate_power_loss(".", commits="3")  # type: ignore[arg-type]
    with pytest.raises(FsyncbenchError, match="psow must be a bool or None"):
        api.simulate_power_loss(".", psow="on")  # type: ignore[arg-type]


def test_run_with_powerloss_saves_it_beside_the_latency(tmp_path):
    fullfsync = "on" if this_platform.MACOS else None
    report = _small_run(tmp_path, synchronous="normal,full", fullfsync=fullfsync)
    assert report.powerloss is not None
    normal, full = this_platform.configs("wal", "normal,full", fullfsync)
    assert [c.pragmas.label for c in report.powerloss.configs] == [normal.label, full.label]
    text = api.render(report, "text", verbose=True)
    p50 = next(r for r in report.results if r.requested == full).summary.p50_ns
    from fsyncbench.fmt import fmt_ns

    assert f"{full.label}: {fmt_ns(p50)} p50, loses 0 (synced-only)" in text
    if report.verdict.path_verdict != "honest_flush":  # this VM: unverifiable
        assert f"This storage path's verdict is {report.verdict.path_verdict}" in text
    saved = api.save(report, tmp_path / "reports")
    loaded = api.load(next(p for p in saved if p.suffix == ".json"))
    assert loaded.powerloss == report.powerloss


def test_run_records_power_loss_only_after_every_timing(tmp_path, monkeypatch):
    from fsyncbench.measure import rounds
    from fsyncbench.powerloss import matrix

    events = []
    timed = rounds.measure_rounds
    recorder = matrix.run_matrix

    def timing(*args, **kwargs):
        events.append("timing starts")
        out = timed(*args, **kwargs)
        events.append("timing ends")
        return out

    def recording(*args, **kwargs):
        events.append("recording")
        return recorder(*args, **kwargs)

    monkeypatch.setattr(rounds, "measure_rounds", timing)
    monkeypatch.setattr(matrix, "run_matrix", recording)
    _small_run(tmp_path, synchronous="full")
    assert events == ["timing starts", "timing ends", "recording"]


def test_a_recording_that_saw_nothing_is_refused_not_simulated(tmp_path, monkeypatch):
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    # a directory reached through a symlink is recorded under its resolved path
    trace = sqlite.record_commits(link, Pragmas("WAL", "FULL"), 2, 100, True)
    assert trace.count("ack") == 2 and trace.db_name in dict(trace.roles)
    # a VFS whose paths the recorder does not recognise (Windows path forms cannot be made
    # here): nothing recorded, so nothing is simulated
    monkeypatch.setattr(sqlite._Log, "tracked", lambda self, path: None)
    other = tmp_path / "other"
    other.mkdir()
    with pytest.raises(FsyncbenchError, match="the recording VFS saw none of SQLite's writes"):
        sqlite.record_commits(other, Pragmas("WAL", "FULL"), 2, 100, True)


# ------------------------------------------- the models' details, state by state


def test_crash_points_skip_setup_and_follow_every_ack():
    trace = _trace(
        Op("create", "a"),
        Op("sync", "a", flags=2),  # 1: before the barrier: not a crash point
        Op("barrier"),
        Op("write", "a", 0, b"x"),
        Op("ack", seq=1),  # 4: the point after it is 5, a write, not a sync
        Op("write", "a", 1, b"y"),
        Op("dirsync"),  # 6
        Op("ack", seq=2),
    )
    assert crash_points(trace) == [5, 6, 8]
    assert [s.point for s in crash_states(trace, "synced-only")] == [5, 6, 8]
    with pytest.raises(ValueError, match="unknown semantics 'bsd'"):
        list(crash_states(trace, "synced-only", semantics="bsd"))


def test_writes_past_the_end_and_growing_truncations_fill_with_zeros():
    trace = _trace(
        *SETUP,
        Op("write", "a", 6, b"Z"),  # 2 bytes past the end of "old!"
        Op("truncate", "a", size_bytes=9),
        Op("ack", seq=1),
    )
    at_end = [
        dict(s.files)["a"] for s in crash_states(trace, "prefix") if s.point == len(trace.ops)
    ]
    assert at_end == [b"old!", b"old!\0\0Z", b"old!\0\0Z\0\0"]
    same = _trace(*SETUP, Op("truncate", "a", size_bytes=4), Op("ack", seq=1))
    assert dict(list(crash_states(same, "prefix"))[-1].files)["a"] == b"old!"


def test_a_synced_directory_entry_of_an_unsynced_file_is_an_empty_file():
    trace = _trace(
        *SETUP, Op("create", "b"), Op("write", "b", 0, b"data"), Op("dirsync"), Op("ack", seq=1)
    )
    last = list(crash_states(trace, "synced-only"))[-1]
    assert dict(last.files) == {"a": b"old!", "b": b""}


def test_subset_keeps_or_loses_each_directory_change():
    # b (durable) is unlinked and created again (a new file): four combinations
    trace = _trace(
        Op("create", "a"),
        Op("create", "b"),
        Op("write", "b", 0, b"B1"),
        Op("barrier"),
        Op("delete", "b"),
        Op("create", "b"),
        Op("ack", seq=1),
    )
    states = [dict(s.files) for s in crash_states(trace, "subset") if s.point == len(trace.ops)]
    assert states == [
        {"a": b"", "b": b"B1"},  # both lost: the old b
        {"a": b""},  # the unlink kept, the creation lost
        {"a": b"", "b": b""},  # the creation kept: the new, empty b
        {"a": b"", "b": b""},
    ]
    # an unlink of a file the directory no longer names there is a no-op
    odd = _trace(
        Op("create", "a"), Op("barrier"), Op("create", "c"), Op("delete", "c"), Op("ack", seq=1)
    )
    got = [dict(s.files) for s in crash_states(odd, "subset") if s.point == len(odd.ops)]
    assert got == [{"a": b""}, {"a": b"", "c": b""}, {"a": b""}, {"a": b""}]


def test_state_descriptions_say_how_to_rebuild_each_state():
    trace = _trace(*SETUP, Op("write", "a", 0, b"N"), Op("sync", "a", flags=2), Op("ack", seq=1))
    assert [s.how for s in crash_states(trace, "synced-only")] == [
        "synced-only, cut before op 4 (sync a (NORMAL))",
        "synced-only, cut after the last op",
    ]
    assert [s.how for s in crash_states(trace, "prefix")][:2] == [
        "prefix of the first 3 ops, cut before op 4 (sync a (NORMAL))",
        "prefix of the first 4 ops, cut before op 4 (sync a (NORMAL))",
    ]
    assert [s.how for s in crash_states(trace, "subset", seed=5)][:2] == [
        "subset, cut before op 4 (sync a (NORMAL)): kept items 0x0 of 1",
        "subset, cut before op 4 (sync a (NORMAL)): kept items 0x1 of 1",
    ]


def test_sampled_points_always_hold_the_all_lost_and_all_kept_states():
    writes = [Op("write", "a", i, b"Z") for i in range(4)]  # 16 states at the last point
    trace = _trace(*SETUP, *writes, Op("ack", seq=1))
    at_end = [s for s in crash_states(trace, "subset", max_states=16) if s.point == len(trace.ops)]
    assert len(at_end) == 16 and not any(s.sampled for s in at_end)
    drawn = [
        s
        for s in crash_states(trace, "subset", max_states=15, samples=3, seed=1)
        if s.point == len(trace.ops)
    ]
    assert all(s.sampled for s in drawn) and len(drawn) == 5
    assert dict(drawn[0].files)["a"] == b"old!"  # every write lost
    assert dict(drawn[1].files)["a"] == b"ZZZZ"  # every write kept


def test_torn_keeps_a_lost_whole_sector_as_it_was():
    trace = _trace(
        Op("create", "a"),
        Op("write", "a", 0, b"o" * 12),
        Op("barrier"),
        Op("write", "a", 4, b"NNNNNN"),  # [4,8) a whole sector, [8,10) part of one
        Op("ack", seq=1),
    )
    got = [
        dict(s.files)["a"]
        for s in crash_states(trace, "torn", sector_bytes=4)
        if s.point == len(trace.ops)
    ]
    assert got == [
        b"oooooooo\0\0\0\0",  # both lost: the whole sector keeps its old bytes
        b"ooooNNNN\0\0\0\0",
        b"ooooooooNNoo",
        b"ooooNNNNNNoo",
    ]


def test_a_directory_after_run_powerloss_gets_a_hint(tmp_path):
    assert_usage_error(
        fsb("run", "--powerloss", tmp_path),
        f"invalid persistence model {tmp_path}: allowed values are synced-only, prefix, "
        "subset, torn, torn-garbage, test6 (a directory? write DIR before --powerloss, or --powerloss "
        "synced-only,prefix DIR)",
    )


def test_documented_promise_separates_durability_from_consistency():
    from fsyncbench.judge.commit_rules import documented_promise

    assert documented_promise(Pragmas("WAL", "FULL"), "Linux") == (True, True, "")
    durable, consistent, why = documented_promise(Pragmas("PERSIST", "NORMAL"), "Linux")
    assert (durable, consistent) == (False, False) and "non-zero) chance" in why
    durable, consistent, why = documented_promise(Pragmas("WAL", "NORMAL"), "Linux")
    assert (durable, consistent) == (False, True) and "checkpoints" in why
    assert documented_promise(Pragmas("WAL", "FULL", False), "Darwin")[:2] == (False, False)
    assert documented_promise(Pragmas("WAL", "FULL", True), "Darwin")[:2] == (True, True)


def test_interrupting_the_simulation_keeps_the_measured_latency(tmp_path, monkeypatch):
    from fsyncbench.powerloss import matrix

    def interrupted(*_args, **_kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(matrix, "run_matrix", interrupted)
    notes = []
    report = _small_run(tmp_path, synchronous="full", notes=notes.append)
    assert report.powerloss is None and report.results
    skipped = "interrupted: the power-loss simulation (--powerloss) was skipped"
    assert report.notes[-1] == skipped
    assert notes == [skipped + "; the latency report is kept"]


def test_each_platform_simulates_its_own_semantics_by_default():
    # before, Windows fell through to "linux" (issue 29 item 13)
    plans = {p: options.powerloss_plan(platform=p) for p in ("linux", "darwin", "win32")}
    assert {p: plan.semantics for p, plan in plans.items()} == {
        "linux": "linux",
        "darwin": "macos",
        "win32": "windows",
    }
    assert options.powerloss_plan(platform="win32", semantics="linux").semantics == "linux"
