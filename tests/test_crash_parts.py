"""The kill matrix's parts one by one, in process (no fork): the plain step runner's numbering
and kill windows, the journal's canonical input hash, recorded rows, commit timings and
rollback, the non-determinism error's exact text, the token cost model and a policy row's
figures, and the power-loss pieces (default pragmas, PowerLoss's refusals, the recording
state's setup and cleanup, psow under the sector models, the cut under a sampled model)."""

from __future__ import annotations

import hashlib
import sqlite3
import time
from pathlib import Path

import apsw
import pytest
from test_crash_power_segments import _commit, _lane, _rows_after_cut

from fsyncbench.crash.journal import Journal, StepRunner, input_hash
from fsyncbench.crash.power import (
    DARWIN_POWER_LOSS_PRAGMAS,
    DEFAULT_POWER_LOSS_PRAGMAS,
    PowerLoss,
    RecordedState,
    default_power_loss_pragmas,
    sqlite_version,
)
from fsyncbench.crash.results import (
    KillOutcome,
    NonDeterminismError,
    model_call_tokens,
    policy_row,
)
from fsyncbench.model import Pragmas
from fsyncbench.powerloss.rebase import read_ops


def _windows() -> tuple[list[tuple[int, str]], object]:
    seen: list[tuple[int, str]] = []
    return seen, lambda seq, window: seen.append((seq, window))


# --------------------------------------------------------------------------- the plain runner


def test_the_plain_runner_numbers_steps_from_start_seq_and_passes_every_window():
    """No persistence / checkpoint per turn: steps numbered start_seq + 1, ..., each passing
    the kill windows before, effect, recorded with its own seq, the step's seq readable
    only while it runs."""
    seen, point = _windows()
    runner = StepRunner("r", start_seq=4, point=point)
    active: list[int] = []

    def add(a: int, b: int) -> int:
        active.append(runner.active_seq)
        return a + b

    assert runner.step("model3", add, 1, 2) == 3
    assert runner.step("tool3", add, 3, 4) == 7
    assert active == [5, 6]
    assert seen == [
        (5, "before"),
        (5, "effect"),
        (5, "recorded"),
        (6, "before"),
        (6, "effect"),
        (6, "recorded"),
    ]
    assert (runner.seq, runner.executed, runner.replayed) == (6, 2, 0)
    assert runner.idempotency_key() is None


def test_no_step_is_executing_before_or_after_a_step():
    runner = StepRunner("r")
    with pytest.raises(RuntimeError, match="no step is executing"):
        runner.active_seq  # noqa: B018
    runner.step("model1", lambda: None)
    with pytest.raises(RuntimeError, match="no step is executing"):
        runner.active_seq  # noqa: B018


# --------------------------------------------------------------------------- the journal


def test_the_input_hash_is_sha256_of_canonical_json():
    """Sorted keys, no spaces (the journal's docstring): the same arguments built in another
    key order are the same step, not non-determinism."""
    args = ({"b": 1, "a": [1, 2]}, "x")
    canonical = b'[{"a":[1,2],"b":1},"x"]'
    assert input_hash(args) == hashlib.sha256(canonical).hexdigest()
    assert input_hash(({"a": [1, 2], "b": 1}, "x")) == input_hash(args)


def test_the_journal_passes_every_window_and_a_replay_none(journal_db):
    seen, point = _windows()
    first = Journal(journal_db, "r", point=point)
    first.step("model1", lambda: {"m": 1})
    assert seen == [(1, "before"), (1, "effect"), (1, "recorded")]
    seen.clear()
    again = Journal(journal_db, "r", point=point)
    assert again.step("model1", lambda: {"m": 1}) == {"m": 1}
    assert seen == [] and (again.executed, again.replayed) == (0, 1)


def test_the_journal_records_one_row_of_canonical_output(journal_db):
    j = Journal(journal_db, "r")
    j.step("model1", lambda turn: {"tokens": 4400, "args": {"b": 2, "a": 1}}, 1)
    rows = journal_db.execute("SELECT * FROM steps").fetchall()
    assert rows == [
        (
            "r",
            1,
            "model1",
            input_hash((1,)),
            '{"args": {"a": 1, "b": 2}, "tokens": 4400}',
        )
    ]


def test_commit_durations_go_to_the_list_given_and_are_each_commits_own(journal_db):
    """The children hand the journal their list (their reports carry it); each entry is
    one BEGIN/INSERT/COMMIT's perf_counter_ns duration, within the step around it."""
    samples: list[int] = []
    j = Journal(journal_db, "r", commit_ns=samples)
    spans = []
    for name in ("model1", "tool1"):
        t0 = time.perf_counter_ns()
        j.step(name, lambda: None)
        spans.append(time.perf_counter_ns() - t0)
    assert j.commit_ns is samples and len(samples) == 2
    assert all(isinstance(d, int) and 0 <= d <= span for d, span in zip(samples, spans))


def test_a_failed_record_rolls_back_and_raises_the_sqlite_error(journal_db):
    """The INSERT fails (the row is already there: another writer got in after the journal
    read its steps): the transaction is rolled back, the error is SQLite's own, and the
    connection is usable."""
    j = Journal(journal_db, "r")
    journal_db.execute("INSERT INTO steps VALUES ('r', 1, 'model1', '', 'null')")
    with pytest.raises(sqlite3.IntegrityError):
        j.step("model1", lambda: None)
    assert not journal_db.in_transaction
    assert j.commit_ns == [] and j.executed == 0
    assert journal_db.execute("SELECT count(*) FROM steps").fetchone() == (1,)


def test_a_changed_input_names_both_hashes(journal_db):
    Journal(journal_db, "r").step("model1", lambda p: p, "prompt v1")
    with pytest.raises(NonDeterminismError) as err:
        Journal(journal_db, "r").step("model1", lambda p: p, "prompt v2")
    old, new = input_hash(("prompt v1",)), input_hash(("prompt v2",))
    assert (err.value.recorded_hash, err.value.requested_hash) == (old, new)
    assert str(err.value) == (
        f"non-determinism at step 1: the journal recorded 'model1' with input hash {old[:12]} "
        f"but the code asks for 'model1' with input hash {new[:12]}"
    )


def test_a_renamed_step_names_both_names_and_no_hash():
    err = NonDeterminismError(4, "tool2", "tool3")
    assert str(err) == (
        "non-determinism at step 4: the journal recorded 'tool2' but the code asks for 'tool3'"
    )
    assert (err.recorded_hash, err.requested_hash) == ("", "")
    with_hashes = NonDeterminismError(4, "tool2", "tool3", "a" * 64, "b" * 64)
    assert str(with_hashes) == str(err)


# --------------------------------------------------------------------------- results


def test_each_model_call_costs_the_prompt_plus_the_context_of_its_turn():
    """The docstring's figures: 2,900 prompt tokens + 1,500 per turn."""
    assert [model_call_tokens(t) for t in range(1, 6)] == [4_400, 5_900, 7_400, 8_900, 10_400]


def _kill(seq: int, dup: int, extra: int) -> KillOutcome:
    return KillOutcome(seq, f"tool{seq}", "effect", 9, 1, dup, extra)


def test_a_policy_row_keeps_the_clean_run_and_states_the_worst_as_a_share_of_it():
    row = policy_row("step_journal", [_kill(1, 0, 0), _kill(2, 1, 10_400)], 37_000, 3)
    assert (row.label, row.clean_run_tokens, row.clean_run_writes) == ("step journal", 37_000, 3)
    assert (row.kills_causing_duplicates, row.worst_duplicates) == (1, 1)
    assert row.mean_extra_tokens == 5_200 and row.worst_extra_tokens == 10_400
    assert row.worst_extra_pct == pytest.approx(100 * 10_400 / 37_000)


def test_a_clean_run_of_no_tokens_gives_a_worst_share_of_zero():
    row = policy_row("no_persistence", [_kill(1, 0, 0)], 0, 0)
    assert row.worst_extra_pct == 0.0
    assert (row.clean_run_tokens, row.clean_run_writes) == (0, 0)


# --------------------------------------------------------------------------- power loss


def test_macos_semantics_default_to_the_fullfsync_rows_and_the_others_not():
    assert default_power_loss_pragmas("macos") == DARWIN_POWER_LOSS_PRAGMAS
    assert default_power_loss_pragmas("linux") == DEFAULT_POWER_LOSS_PRAGMAS
    assert default_power_loss_pragmas("windows") == DEFAULT_POWER_LOSS_PRAGMAS
    assert DARWIN_POWER_LOSS_PRAGMAS != DEFAULT_POWER_LOSS_PRAGMAS


def test_an_unknown_model_or_semantics_is_named_in_the_error():
    with pytest.raises(ValueError, match=r"^unknown persistence model 'bogus'$"):
        PowerLoss("bogus")
    with pytest.raises(ValueError, match=r"^unknown semantics 'bsd'$"):
        PowerLoss("prefix", "bsd")


def test_the_recordings_sqlite_is_apsws():
    assert sqlite_version() == apsw.sqlite_lib_version()


def test_a_missing_agent_directory_is_an_os_error_and_leaves_nothing_open(tmp_path):
    before = set(apsw.vfs_names())
    with pytest.raises(FileNotFoundError):
        RecordedState(
            tmp_path / "absent",
            "agent.db",
            tmp_path / "ops.bin",
            Pragmas("WAL", "FULL"),
            PowerLoss("synced-only"),
        )
    assert set(apsw.vfs_names()) == before


def test_close_unregisters_the_recording_vfs_and_may_be_called_again(tmp_path):
    pragmas = Pragmas("WAL", "FULL")
    agent = _lane(tmp_path, pragmas)
    before = set(apsw.vfs_names())
    state = RecordedState(agent, "agent.db", tmp_path / "ops.bin", pragmas, PowerLoss("prefix"))
    assert set(apsw.vfs_names()) > before
    _commit(state, 1)
    state.close()
    assert set(apsw.vfs_names()) == before
    state.close()  # a second close (the child's cleanup after an error) is harmless


def test_a_planted_fault_reaches_the_recording(tmp_path):
    """A sync filter that skips every sync: WAL/FULL's commits were never synced, and a cut
    takes both runs (without it both stay: tests/test_crash_power_segments.py)."""
    planted = PowerLoss("synced-only", sync_filter=lambda _n: False)
    assert _rows_after_cut(tmp_path, Pragmas("WAL", "FULL"), planted) == []


def _journal_header_bytes(tmp_path: Path, model: str) -> int:
    pragmas = Pragmas("DELETE", "FULL")
    agent = _lane(tmp_path, pragmas)
    stream = tmp_path / "ops.bin"
    state = RecordedState(agent, "agent.db", stream, pragmas, PowerLoss(model))
    _commit(state, 1)
    state.close()
    ops = read_ops(stream)
    first = next(op for op in ops if op.kind == "write" and op.file == "agent.db-journal")
    return first.offset_bytes + len(first.data)


def test_a_sector_model_records_with_powersafe_overwrite_off(tmp_path):
    """Torn sectors are what psow=1 promises never happen, so the journal is opened with
    psow off (https://www.sqlite.org/psow.html): SQLite then journals whole sectors, and
    the rollback journal's header fills the device's sector instead of 512 bytes."""
    (tmp_path / "psow").mkdir()
    (tmp_path / "torn").mkdir()
    assert _journal_header_bytes(tmp_path / "psow", "synced-only") == 512
    assert _journal_header_bytes(tmp_path / "torn", "torn") > 512


def test_a_cut_under_subset_keeps_nothing_unsynced(tmp_path):
    """subset's first state keeps none of the unsynced pieces (many at WAL/OFF, so its
    states are drawn, named after the pragmas): the same rows as synced-only."""
    assert _rows_after_cut(tmp_path, Pragmas("WAL", "OFF"), PowerLoss("subset")) == []
