"""The kill matrix's plan, cells and their outcomes (:mod:`fsyncbench.crash.matrix`): the
arguments each entry point refuses and the words it refuses them with, the pragmas a matrix
asks for and gets, its counts, wall time and SQLite, the progress it reports part by part,
the reordered restart at the first and the last kill point, the replay under either journal
policy, the errors when a child's run goes astray, and the whole experiment with its
pragmas reaching every lane. Real children, real SIGKILLs, real power cuts; each test makes
its own run (mutation testing credits a test only with what it calls itself)."""

from __future__ import annotations

import dataclasses
import os
import signal
import sqlite3
import time
from pathlib import Path

import pytest
from test_crash_powerloss import _everything_lost, _outcomes

from fsyncbench import crash
from fsyncbench.crash import matrix as matrix_module
from fsyncbench.crash.power import PowerLoss
from fsyncbench.crash.power import sqlite_version as apsw_sqlite_version
from fsyncbench.model import Pragmas
from fsyncbench.powerloss.rebase import CUT_CHOICE

needs_fork = pytest.mark.skipif(
    not hasattr(os, "fork") or not hasattr(signal, "SIGKILL"), reason="needs os.fork and SIGKILL"
)

#: The steps' names as the refusals list them.
STEPS = "model1, tool1, model2, tool2, model3, tool3, model4, tool4, model5, tool5"


class Recorder:
    """A :data:`fsyncbench.crash.CrashProgress` that keeps every call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int, int, int, int]] = []

    def __call__(self, label: str, index: int, total: int, done: int, target: int) -> None:
        self.calls.append((label, index, total, done, target))


def _policy_parts(label: str, index0: int, total: int) -> list[tuple[str, int, int, int, int]]:
    """The progress calls of one matrix: a part per policy, 0 then each of its 30 kills."""
    return [
        (f"{label} {crash.POLICY_LABELS[policy]}", index0 + i, total, done, 30)
        for i, policy in enumerate(crash.POLICIES)
        for done in range(31)
    ]


def _rows(matrix: crash.KillMatrix) -> dict[str, crash.PolicyRow]:
    return {row.policy: row for row in matrix.rows}


def _assert_every_sync_was_skipped(matrix: crash.KillMatrix) -> None:
    """Under a planted fault that skips every sync, each cut loses the killed run's journal."""
    rows = _rows(matrix)
    assert _outcomes(rows["step_journal"]) == _everything_lost(keys=False)
    assert _outcomes(rows["journal_idempotency"]) == _everything_lost(keys=True)


def _skip_every_sync(_n: int) -> bool:
    return False


# ------------------------------------------------------------------------------ refusals


@pytest.mark.parametrize("policy", ["no_persistence", "checkpoint_per_turn", "journal"])
def test_replay_refuses_a_policy_without_a_journal(tmp_path: Path, policy: str) -> None:
    with pytest.raises(ValueError) as err:
        crash.replay_completed_run(tmp_path, policy=policy)
    assert str(err.value) == "replay needs a journal policy (step_journal, journal_idempotency)"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "swap", [("tool2", "tool2"), ("nope", "tool3"), ("tool3", "nope"), ("nope", "nada")]
)
def test_reorder_refuses_a_swap_that_is_not_two_different_steps(
    tmp_path: Path, swap: tuple[str, str]
) -> None:
    with pytest.raises(ValueError) as err:
        crash.reordered_steps_after_crash(tmp_path, swap=swap)
    assert str(err.value) == f"swap needs two different steps of {STEPS}"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("kill_at", [(0, "before"), (11, "recorded"), (4, "later"), (0, "x")])
def test_reorder_refuses_a_kill_point_off_the_matrix(
    tmp_path: Path, kill_at: tuple[int, str]
) -> None:
    with pytest.raises(ValueError) as err:
        crash.reordered_steps_after_crash(tmp_path, kill_at=kill_at)
    assert str(err.value) == "kill_at must be (1-10, one of before, effect, recorded)"
    assert list(tmp_path.iterdir()) == []


def test_power_loss_matrix_refuses_no_pragmas_and_unknown_models(tmp_path: Path) -> None:
    with pytest.raises(ValueError) as err:
        crash.run_power_loss_matrix(tmp_path, "synced-only", pragmas=[])
    assert str(err.value) == "no pragma combination to test"
    with pytest.raises(ValueError, match="unknown persistence model 'nope'"):
        crash.run_power_loss_matrix(tmp_path, "nope")
    with pytest.raises(ValueError, match="unknown semantics 'LINUX'"):
        crash.run_power_loss_matrix(tmp_path, "synced-only", "LINUX")
    assert list(tmp_path.iterdir()) == []


# -------------------------------------------------------------- reordered restart, replay


@needs_fork
def test_reorder_killed_at_the_first_point_restarts_cleanly_and_counts_its_effects(
    tmp_path: Path,
) -> None:
    # killed before step 1 did anything: the journal is empty, so the swapped code runs to
    # the end and every write and billed call (3 + 5) is the restart's
    result = crash.reordered_steps_after_crash(tmp_path, kill_at=(1, "before"))
    assert (result.run_id, result.killed_at_seq, result.killed_at_window) == (
        "journal_idempotency/reordered",
        1,
        "before",
    )
    assert result.kill_signal == signal.SIGKILL
    assert not result.stopped
    assert (result.error_step, result.recorded_name, result.requested_name) == (None,) * 3
    assert result.message == ""
    assert result.restart_effects == 3 + 5
    assert list(tmp_path.iterdir()) == []


@needs_fork
def test_reorder_killed_at_the_last_point_stops_where_the_journal_differs(
    tmp_path: Path,
) -> None:
    result = crash.reordered_steps_after_crash(tmp_path, kill_at=(10, "recorded"))
    assert (result.killed_at_seq, result.killed_at_window) == (10, "recorded")
    assert result.stopped
    assert (result.error_step, result.recorded_name, result.requested_name) == (4, "tool2", "tool3")
    assert result.message == (
        "non-determinism at step 4: the journal recorded 'tool2' but the code asks for 'tool3'"
    )
    assert result.restart_effects == 0


@needs_fork
def test_reorder_of_a_run_that_never_wrote_counts_no_restart_effects(tmp_path: Path) -> None:
    # killed after model2 was recorded, restarted with model3 in its place: no write was ever
    # made (the world has no row of the run), two calls were billed before the kill, none after
    result = crash.reordered_steps_after_crash(
        tmp_path, swap=("model2", "model3"), kill_at=(3, "recorded")
    )
    assert result.code_order[2] == "model3" and result.code_order[4] == "model2"
    assert result.stopped
    assert (result.error_step, result.recorded_name, result.requested_name) == (
        3,
        "model2",
        "model3",
    )
    assert result.restart_effects == 0


@needs_fork
def test_reorder_whose_first_run_misses_its_kill_point_is_a_crash_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an agent that never reaches the kill point (here: the first child is not told of it)
    real = matrix_module._run_child
    specs = []

    def run_child(spec):  # type: ignore[no-untyped-def]
        specs.append(spec)
        return real(dataclasses.replace(spec, kill_at=None) if len(specs) == 1 else spec)

    monkeypatch.setattr(matrix_module, "_run_child", run_child)
    with pytest.raises(crash.CrashError) as err:
        crash.reordered_steps_after_crash(tmp_path)
    assert str(err.value) == "the first run never reached its kill point"
    assert list(tmp_path.iterdir()) == []


@needs_fork
def test_replay_under_the_step_journal_names_its_policy_and_run(tmp_path: Path) -> None:
    result = crash.replay_completed_run(tmp_path, policy="step_journal")
    assert (result.policy, result.run_id) == ("step_journal", "step_journal/replay")
    assert result.steps_recorded == 10
    assert (result.first_run_effects, result.first_run_tokens) == (3 + 5, 37_000)
    assert (result.replay_effects, result.replay_tokens) == (0, 0)
    assert (result.replay_steps_executed, result.replay_steps_replayed) == (0, 10)
    assert result.same_conversation


@needs_fork
def test_a_replay_that_diverges_from_its_journal_is_a_crash_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the second run's code asks for tool3 where the journal holds tool2: it stops there,
    # and the replay says so rather than reporting a result
    real = matrix_module._run_child
    specs = []
    swapped = ("model1", "tool1", "model2", "tool3", "model3", "tool2") + crash.STEP_NAMES[6:]

    def run_child(spec):  # type: ignore[no-untyped-def]
        specs.append(spec)
        return real(dataclasses.replace(spec, order=swapped) if len(specs) == 2 else spec)

    monkeypatch.setattr(matrix_module, "_run_child", run_child)
    with pytest.raises(crash.CrashError) as err:
        crash.replay_completed_run(tmp_path)
    assert str(err.value) == (
        "replay run failed: non-determinism at step 4: the journal recorded 'tool2' but the "
        "code asks for 'tool3'"
    )
    assert len(specs) == 2
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------- the matrices and the whole experiment


@needs_fork
def test_kill_matrix_states_its_pragmas_counts_time_and_progress(tmp_path: Path) -> None:
    progress = Recorder()
    before = time.perf_counter_ns()
    matrix = crash.run_kill_matrix(tmp_path, "delete", "off", fullfsync=True, progress=progress)
    wall = time.perf_counter_ns() - before
    assert matrix.requested == Pragmas("DELETE", "OFF", True)
    assert matrix.effective == Pragmas("DELETE", "OFF", True)
    assert matrix.kill_count == 120
    # 10 commits per clean run and per kill, for the two journal policies
    assert len(matrix.journal_commit_ns) == 2 * (30 * 10 + 10)
    assert matrix.model_tokens == (4_400, 5_900, 7_400, 8_900, 10_400)
    assert matrix.sqlite_version == sqlite3.sqlite_version
    assert 0 < matrix.elapsed_ns <= wall
    assert progress.calls == _policy_parts("delete/off/fullfsync", 0, 4)
    assert all(type(total) is int for _l, _i, total, _d, _t in progress.calls)
    assert list(tmp_path.iterdir()) == []


@needs_fork
def test_crash_experiment_takes_its_pragmas_to_every_lane_and_reports_each_part(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = matrix_module._create_lane
    lanes: list[tuple[str, Pragmas]] = []

    def create_lane(base, name, pragmas, power=None):  # type: ignore[no-untyped-def]
        lanes.append((name, pragmas))
        return real(base, name, pragmas, power)

    monkeypatch.setattr(matrix_module, "_create_lane", create_lane)
    progress = Recorder()
    result = crash.run_crash_experiment(
        tmp_path, "delete", "off", fullfsync=True, progress=progress
    )
    # fullfsync is the matrix's journal's only; replay and reorder use the journal pragmas
    plain = Pragmas("DELETE", "OFF")
    assert lanes == [(policy, Pragmas("DELETE", "OFF", True)) for policy in crash.POLICIES] + [
        ("journal_idempotency", plain),
        ("journal_idempotency", plain),
    ]
    assert result.matrix.requested == Pragmas("DELETE", "OFF", True)
    assert result.matrix.kill_count == 120
    assert result.replay.run_id == "journal_idempotency/replay"
    assert result.replay.replay_effects == 0
    assert result.reorder.run_id == "journal_idempotency/reordered"
    assert result.reorder.stopped
    assert progress.calls == _policy_parts("delete/off/fullfsync", 0, 5) + [
        ("replay and reorder", 4, 5, done, 2) for done in range(3)
    ]
    assert list(tmp_path.iterdir()) == []


@needs_fork
def test_kill_matrix_under_power_loss_cuts_each_kill_with_apsw_sqlite(tmp_path: Path) -> None:
    power = PowerLoss("synced-only", "linux", _skip_every_sync)
    matrix = crash.run_kill_matrix(tmp_path, power=power)
    assert matrix.kill_count == 120
    assert matrix.journal_commit_ns == ()  # recorded commits: not the journal's latency
    assert matrix.sqlite_version == apsw_sqlite_version() != sqlite3.sqlite_version
    _assert_every_sync_was_skipped(matrix)
    assert list(tmp_path.iterdir()) == []


@needs_fork
def test_power_loss_matrix_states_its_model_pragmas_counts_and_progress(tmp_path: Path) -> None:
    progress = Recorder()
    before = time.perf_counter_ns()
    result = crash.run_power_loss_matrix(
        tmp_path,
        "synced-only",
        pragmas=[Pragmas("WAL", "FULL", True)],
        sync_filter=_skip_every_sync,
        progress=progress,
    )
    wall = time.perf_counter_ns() - before
    assert (result.model, result.semantics) == ("synced-only", "linux")
    assert result.choice == CUT_CHOICE["synced-only"]
    (matrix,) = result.matrices
    assert matrix.requested == Pragmas("WAL", "FULL", True)
    assert matrix.effective.fullfsync is True
    assert matrix.journal_commit_ns == ()
    assert result.kill_count == matrix.kill_count == 120
    assert result.sqlite_version == matrix.sqlite_version == apsw_sqlite_version()
    assert 0 < matrix.elapsed_ns <= result.elapsed_ns <= wall
    # the planted fault reaches the children: even wal/full loses the killed run
    _assert_every_sync_was_skipped(matrix)
    assert progress.calls == _policy_parts("wal/full/fullfsync", 0, 4)
    assert all(type(total) is int for _l, _i, total, _d, _t in progress.calls)
    assert list(tmp_path.iterdir()) == []


@needs_fork
def test_crash_experiment_defaults_to_wal_full(tmp_path: Path) -> None:
    result = crash.run_crash_experiment(tmp_path)
    assert result.matrix.requested == Pragmas("WAL", "FULL")
    assert result.matrix.effective == Pragmas("WAL", "FULL")
    assert crash.kill_matrix_rows(result.matrix)[3]["kills causing duplicate writes (of 30)"] == 0
    assert result.replay.policy == "journal_idempotency"
    assert result.replay.replay_effects == 0
    assert (result.reorder.error_step, result.reorder.restart_effects) == (4, 0)
    assert list(tmp_path.iterdir()) == []
