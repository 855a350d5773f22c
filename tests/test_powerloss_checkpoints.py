"""Recordings that cross WAL checkpoints and WAL restarts (``--wal-autocheckpoint``): WAL/NORMAL
loses only the commits since the last checkpoint, however many were recorded, WAL/FULL
loses nothing and is never corrupt across restarts, and the output says that "more commits
lose more" holds only up to the next checkpoint (issue 31 item 3). Real SQLite (apsw's
build); expected figures derived from the trace's own checkpoints, not copied from a run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import this_platform

from fsyncbench import api
from fsyncbench.model import Pragmas
from fsyncbench.powerloss import sqlite
from fsyncbench.powerloss.matrix import evaluate, run_matrix
from fsyncbench.powerloss.plan import PowerlossPlan
from fsyncbench.powerloss.trace import Trace
from tests.clitools import assert_usage_error, fsb

PAGES = 4  # a checkpoint every 4 WAL pages: every second commit or so


def _record(tmp_path: Path, sync: str, commits: int, pages: int | None, psow: bool = True):
    where = tmp_path / f"rec-{sync}-{commits}-{pages}-{int(psow)}"
    where.mkdir()
    return sqlite.record_commits(
        where.resolve(), Pragmas("WAL", sync), commits, 200, psow, wal_autocheckpoint=pages
    )


def _evaluate(tmp_path: Path, trace: Trace, model: str):
    work = tmp_path / f"work-{model}"
    work.mkdir(exist_ok=True)
    return evaluate(
        trace, model, work, semantics="linux", sector_bytes=512, max_states=64, samples=8, seed=0
    )


def _most_acks_between_syncs(trace: Trace) -> int:
    """The most commits acknowledged between two syncs (in WAL/NORMAL only a checkpoint
    syncs: first the WAL, then the database): what a cut can lose at most."""
    most = run = 0
    for op in trace.ops[trace.barrier_index + 1 :]:
        if op.kind == "ack":
            run += 1
            most = max(most, run)
        elif op.kind == "sync":
            run = 0
    return most


def test_a_small_autocheckpoint_crosses_checkpoints_and_wal_restarts(tmp_path):
    default = _record(tmp_path, "FULL", 8, None)
    assert (default.checkpoints(), default.wal_restarts()) == (1, 0)  # the close's only
    small = _record(tmp_path, "FULL", 8, PAGES)
    assert small.checkpoints() >= 3 and small.wal_restarts() >= 2
    assert _record(tmp_path, "FULL", 8, 0).checkpoints() == 1  # 0: automatic ones off


def test_wal_normal_loses_only_the_commits_since_the_last_checkpoint(tmp_path):
    short = _record(tmp_path, "NORMAL", 8, PAGES)
    long = _record(tmp_path, "NORMAL", 16, PAGES)
    bound = _most_acks_between_syncs(long)
    assert 1 <= bound < 8 and long.checkpoints() >= 6
    for trace in (short, long):
        m = _evaluate(tmp_path, trace, "synced-only")
        assert m.worst_lost == _most_acks_between_syncs(trace) <= bound
        assert m.corrupt_states == 0 and m.checker_proven
    # without checkpoints in between every commit is at risk: more commits lose more
    unbounded = _record(tmp_path, "NORMAL", 8, None)
    assert _evaluate(tmp_path, unbounded, "synced-only").worst_lost == 8


@pytest.mark.parametrize("model", ["synced-only", "prefix", "subset", "torn-garbage"])
def test_wal_full_loses_nothing_across_checkpoints_and_restarts(tmp_path, model):
    trace = _record(tmp_path, "FULL", 8, PAGES, psow=model != "torn-garbage")
    assert trace.wal_restarts() >= 2
    m = _evaluate(tmp_path, trace, model)
    assert (m.worst_lost, m.corrupt_states) == (0, 0), m.worst
    assert m.checker_proven


def test_the_output_bounds_more_commits_lose_more_at_the_next_checkpoint(tmp_path):
    plan = PowerlossPlan((Pragmas("WAL", "NORMAL"),), models=("synced-only",), commits=3)
    (tmp_path / "a").mkdir()
    text = " ".join(api.render(run_matrix(tmp_path / "a", plan), "text", verbose=True).split())
    assert (
        "loses all 3 acknowledged commits recorded (every commit since the last sync: more "
        "commits would lose more, but only up to the next checkpoint, every 1,000 WAL pages "
        "(PRAGMA wal_autocheckpoint; --wal-autocheckpoint), which syncs)"
    ) in text
    assert "WAL autocheckpoint: SQLite's default, 1,000 pages." in text
    crossing = PowerlossPlan(
        (Pragmas("WAL", "NORMAL"),), models=("synced-only",), commits=8, wal_autocheckpoint=PAGES
    )
    (tmp_path / "b").mkdir()
    result = run_matrix(tmp_path / "b", crossing)
    (c,) = result.configs
    text = " ".join(api.render(result, "text", verbose=True).split())
    assert result.wal_autocheckpoint == PAGES and c.checkpoints >= 3
    assert (
        f"the recording crossed {c.checkpoints} checkpoints (the close's included) and "
        f"{c.wal_restarts} WAL restarts, so a cut loses at most the commits since the last "
        "checkpoint"
    ) in text
    assert f"WAL autocheckpoint: {PAGES} pages." in text


def test_cli_takes_wal_autocheckpoint_and_refuses_a_bad_one(tmp_path):
    assert_usage_error(
        fsb("powerloss", tmp_path, "--wal-autocheckpoint", "-1"),
        "--wal-autocheckpoint must be 0 to 1,000,000, got -1",
    )
    proc = fsb(
        *("powerloss", tmp_path, "--journal-mode", "wal", "--synchronous", "normal"),
        *("--model", "synced-only", "--commits", "8", "--wal-autocheckpoint", str(PAGES)),
        *("--format", "json", "--no-report", *this_platform.ONE_FULLFSYNC),
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)["powerloss"]
    assert data["wal_autocheckpoint"] == PAGES
    (config,) = data["configs"]
    assert config["checkpoints"] >= 3 and config["wal_restarts"] >= 2
    assert config["models"][0]["worst_lost"] < 8
