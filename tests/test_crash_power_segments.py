"""``crash --powerloss``: a cut takes what every run since the last cut left unsynced, not only
the killed child's work (runs start milliseconds apart, so nothing but SQLite's own syncs
made the earlier runs durable), and the answer names the one state each cut explored
(issue 31 item 7). In-process recordings through the children's own RecordedState; no fork.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from fsyncbench import crash
from fsyncbench.crash import view
from fsyncbench.crash.power import PowerLoss, RecordedState, cut
from fsyncbench.measure.workloads import SCHEMA, step_row
from fsyncbench.model import KillMatrix, Pragmas
from fsyncbench.powerloss.rebase import OpStream, restore, snapshot_ops


def _lane(tmp_path: Path, pragmas: Pragmas) -> Path:
    """The agent's directory with its database made as the parent makes it (durable)."""
    agent = (tmp_path / "agent").resolve()
    agent.mkdir()
    conn = sqlite3.connect(agent / "agent.db", isolation_level=None)
    conn.execute(f"PRAGMA journal_mode={pragmas.journal_mode}")
    conn.execute(SCHEMA)
    conn.close()
    return agent


def _commit(state: RecordedState, seq: int) -> None:
    state.execute("BEGIN")
    state.execute("INSERT INTO steps VALUES (?, ?, ?, ?, ?)", step_row("r", seq, 100))
    state.execute("COMMIT")


def _rows_after_cut(tmp_path: Path, pragmas: Pragmas, power: PowerLoss | None = None) -> list[int]:
    """A run that completes (seq 1, its connection closed), then a run killed after its own
    commit (seq 2); the cut under ``power`` (synced-only, Linux); the seqs the database holds
    afterwards."""
    power = power or PowerLoss("synced-only")
    agent = _lane(tmp_path, pragmas)
    stream = tmp_path / "ops.bin"
    done = RecordedState(agent, "agent.db", stream, pragmas, power)
    _commit(done, 1)
    done.close()
    killed = RecordedState(agent, "agent.db", stream, pragmas, power)
    _commit(killed, 2)
    state = cut(agent, "agent.db", stream, pragmas, power)  # the SIGKILL's moment
    assert state is not None and not stream.exists()
    after = tmp_path / "after"
    after.mkdir()
    restore(after, state.files)
    conn = sqlite3.connect(after / "agent.db")
    try:
        return [r[0] for r in conn.execute("SELECT seq FROM steps ORDER BY seq")]
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("pragmas", "kept"),
    [
        # nothing synced the completed run's commit: the cut takes it with the killed run's
        # (before, the completed run's files counted as durable "because of the 30 s
        # writeback", and seq 1 survived)
        (Pragmas("WAL", "OFF"), []),
        (Pragmas("DELETE", "OFF"), []),
        # synced by the close's checkpoint (NORMAL) or at commit (FULL; the killed run's
        # commit too); DELETE's last commit rolls back (its journal's unlink is not synced)
        (Pragmas("WAL", "NORMAL"), [1]),
        (Pragmas("WAL", "FULL"), [1, 2]),
        (Pragmas("DELETE", "FULL"), [1]),
    ],
    ids=lambda v: v.label if isinstance(v, Pragmas) else str(v),
)
def test_a_cut_takes_what_the_runs_since_the_last_cut_left_unsynced(tmp_path, pragmas, kept):
    assert _rows_after_cut(tmp_path, pragmas) == kept


@pytest.mark.parametrize(
    ("fullfsync", "kept"),
    [
        # plain fsync reaches only the drive's cache, which a power cut empties: the
        # commits it acknowledged are gone with the segment
        (False, []),
        # F_FULLFSYNC (PRAGMA fullfsync=ON) flushes that cache: both commits stay
        (True, [1, 2]),
    ],
)
def test_a_cut_under_macos_semantics_keeps_only_what_full_syncs_flushed(tmp_path, fullfsync, kept):
    """The fast twin of the slow tier's ``crash --powerloss --semantics macos`` runs
    (tests/test_crash_powerloss.py): the same cut in process, whose semantics must be the
    cut's own (a cut taken under Linux's would keep both commits either way)."""
    pragmas = Pragmas("WAL", "FULL", fullfsync)
    assert _rows_after_cut(tmp_path, pragmas, PowerLoss("synced-only", "macos")) == kept
    (tmp_path / "linux").mkdir()
    assert _rows_after_cut(tmp_path / "linux", pragmas) == [1, 2]


def test_the_files_after_a_cut_start_a_new_durable_segment(tmp_path):
    pragmas = Pragmas("WAL", "OFF")
    agent = _lane(tmp_path, pragmas)
    stream = tmp_path / "ops.bin"
    power = PowerLoss("synced-only")
    first = RecordedState(agent, "agent.db", stream, pragmas, power)
    _commit(first, 1)
    first.close()
    cut(agent, "agent.db", stream, pragmas, power)
    # the machine came back with exactly these files: the next child's stream starts with
    # them as durable (a barrier) and a second cut with nothing done since keeps them
    again = RecordedState(agent, "agent.db", stream, pragmas, power)
    ops = crash.power.read_ops(stream)
    barrier = [op.kind for op in ops].index("barrier")
    assert {op.kind for op in ops[:barrier]} == {"create", "write"}
    assert {op.file for op in ops[:barrier]} == {"agent.db"}  # the cut left no WAL
    again.close()
    assert cut(agent, "agent.db", stream, pragmas, power) is not None
    conn = sqlite3.connect(agent / "agent.db")
    assert [r[0] for r in conn.execute("SELECT seq FROM steps")] == []
    conn.close()


def _experiment(model: str) -> crash.PowerLossExperiment:
    from fsyncbench.crash.results import POLICIES, WINDOWS, KillOutcome, policy_row
    from fsyncbench.powerloss.rebase import CUT_CHOICE

    kill = KillOutcome(1, "plan", WINDOWS[0], 9, 1, 0, 0)
    matrix = KillMatrix(
        requested=Pragmas("WAL", "FULL"),
        effective=Pragmas("WAL", "FULL"),
        rows=tuple(policy_row(p, [kill], 1000, 3) for p in POLICIES),
        journal_commit_ns=(),
        elapsed_ns=1,
        kill_count=0,
        model_tokens=(),
        sqlite_version="test",
    )
    return crash.PowerLossExperiment(model, "linux", CUT_CHOICE[model], (matrix,), 1, 0, "test")


def test_subset_is_labelled_as_the_one_state_it_explored():
    # one state per cut: under subset it is exactly the synced-only state, and the answer
    # says so instead of "subset" alone
    subset = _experiment("subset")
    label = "subset, its keep-nothing state only: the synced-only state"
    assert view.power_loss_answer(subset).startswith(f"After a power cut ({label}, linux),")
    assert f"({label} model, linux semantics" in view.describe_power_loss(subset).sections[1].title
    plain = view.power_loss_answer(_experiment("synced-only"))
    assert plain.startswith("After a power cut (synced-only, linux),")


@pytest.mark.parametrize("model", ["synced-only", "prefix", "subset"])
@pytest.mark.parametrize("recorded", [0, 1, 2], ids=["empty-stream", "create-only", "no-barrier"])
def test_a_child_killed_while_its_stream_starts_leaves_the_files_as_they_were(
    tmp_path, model, recorded
):
    # the kill lands after the stream file exists but before snapshot_ops' barrier is in it:
    # the recorder was not open yet, so nothing changed and every file stays
    pragmas = Pragmas("WAL", "FULL")
    agent = _lane(tmp_path, pragmas)
    before = {p.name: p.read_bytes() for p in agent.iterdir()}
    stream = tmp_path / "ops.bin"
    start = OpStream(stream)
    start.write_all(snapshot_ops(agent)[:recorded])
    start.close()
    assert cut(agent, "agent.db", stream, pragmas, PowerLoss(model)) is None
    assert not stream.exists()
    assert {p.name: p.read_bytes() for p in agent.iterdir()} == before
