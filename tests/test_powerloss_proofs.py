"""The powerloss checker detects corruption: known-corrupt states built from real traces are
flagged (and a second SQLite build agrees), the control states SQLite repairs are not, the
models themselves find states SQLite's recovery cannot repair, and a planted checker bug
(an integrity check that always passes, a row comparison that never differs, a checker
that passes everything) is caught. The counterpart of every ``corrupt_states == 0`` in
tests/test_powerloss.py (issue 31 item 1)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from fsyncbench import api
from fsyncbench.model import Pragmas
from fsyncbench.powerloss import matrix, sqlite
from fsyncbench.powerloss.matrix import evaluate, run_matrix
from fsyncbench.powerloss.models import CrashState
from fsyncbench.powerloss.plan import PowerlossPlan
from fsyncbench.powerloss.proofs import half_index, known_corrupt_states
from fsyncbench.powerloss.rebase import restore
from fsyncbench.powerloss.trace import Trace

COMMITS = 4
#: What the checker says for each kind of known-corrupt state: the first line of its
#: problem (integrity_check reports, or SQLite raises SQLITE_CORRUPT while checking).
CAUGHT_BY = {
    "integrity_check": ("integrity_check: ", "CorruptError: database disk image is malformed"),
    "rows": (f"row {COMMITS} differs from what its commit wrote",),
    "table": ("the steps table is gone",),
}


def _record(tmp_path: Path, pragmas: Pragmas, psow: bool = True) -> Trace:
    where = tmp_path / f"rec-{pragmas.label.replace('/', '-')}-{int(psow)}"
    where.mkdir()
    return sqlite.record_commits(where.resolve(), pragmas, COMMITS, 200, psow)


def _check(tmp_path: Path, trace: Trace, files: tuple[tuple[str, bytes], ...]):
    work = tmp_path / "check"
    work.mkdir(exist_ok=True)
    return matrix._Checker(work, trace).check(CrashState(-1, files, (), "test"))


def _stdlib_opinion(tmp_path: Path, trace: Trace, files: tuple[tuple[str, bytes], ...]) -> str:
    """Python's sqlite3 (another SQLite build) on a copy: "" when it finds the database
    sound and every row one a commit wrote, else what it found."""
    where = tmp_path / "stdlib"
    where.mkdir(exist_ok=True)
    restore(where, files)
    conn = sqlite3.connect(where / trace.db_name)
    try:
        check = conn.execute("PRAGMA integrity_check").fetchall()
        if check != [("ok",)]:
            return f"integrity_check: {check[0][0]}"
        rows = conn.execute("SELECT run_id, seq, name, input_hash, output FROM steps").fetchall()
        expected = dict(trace.rows)
        bad = [r for r in rows if expected.get(r[1]) != r]
        return f"row {bad[0][1]} differs" if bad else ""
    except sqlite3.DatabaseError as exc:
        return str(exc)
    finally:
        conn.close()


@pytest.mark.parametrize(
    "pragmas",
    [
        Pragmas("DELETE", "FULL"),
        Pragmas("TRUNCATE", "NORMAL"),
        Pragmas("PERSIST", "FULL"),
        Pragmas("WAL", "FULL"),
        Pragmas("WAL", "NORMAL"),
        Pragmas("MEMORY", "FULL"),
    ],
    ids=lambda p: p.label,
)
def test_every_known_corrupt_state_is_flagged_and_a_second_sqlite_agrees(tmp_path, pragmas):
    trace = _record(tmp_path, pragmas)
    known = known_corrupt_states(trace)
    assert [k.name for k in known] == [
        "half-index",
        "garbage-sector",
        "changed-row",
        "empty-database",
    ]
    for k in known:
        present, problem = _check(tmp_path, trace, k.files)
        assert problem.startswith(CAUGHT_BY[k.caught_by]), (k.name, problem)
        assert present == frozenset()
        # not an artefact of the checker: Python's own SQLite finds the same damage
        assert _stdlib_opinion(tmp_path, trace, k.files) != "", k.name


@pytest.mark.parametrize(
    "pragmas",
    [Pragmas("DELETE", "FULL"), Pragmas("TRUNCATE", "NORMAL"), Pragmas("WAL", "FULL")],
    ids=lambda p: p.label,
)
def test_the_same_half_written_state_with_its_journal_header_is_repaired(tmp_path, pragmas):
    # the half-index state is corrupt because the journal's header is lost: with the
    # header, SQLite plays the hot journal back (or replays the WAL) and the database is
    # sound, so the checker must not flag it
    trace = _record(tmp_path, pragmas)
    control = half_index(trace, lose_header=False)
    assert control is not None and "header" not in control.how
    present, problem = _check(tmp_path, trace, control.files)
    assert problem == ""
    committed = set(range(1, COMMITS + 1))
    # a rollback journal undoes the half-written commit; the WAL redoes the checkpoint
    assert present == (committed if pragmas.journal_mode == "WAL" else committed - {COMMITS})
    assert _stdlib_opinion(tmp_path, trace, control.files) == ""
    lost = half_index(trace)
    assert lost is not None and _check(tmp_path, trace, lost.files)[1] != ""


def test_the_subset_model_finds_states_sqlite_cannot_repair(tmp_path):
    # truncate/normal: a power cut that keeps some of the journal's unsynced writes and
    # not others leaves a journal that rolls back part of a transaction (the "very small
    # (though non-zero) chance" of https://www.sqlite.org/pragma.html#pragma_synchronous)
    trace = _record(tmp_path, Pragmas("TRUNCATE", "NORMAL"))
    kept: list[CrashState] = []

    def keep(state: CrashState, _described: str) -> str:
        kept.append(state)
        return "kept"

    work = tmp_path / "work"
    work.mkdir()
    m = evaluate(
        trace,
        "subset",
        work,
        semantics="linux",
        sector_bytes=512,
        max_states=64,
        samples=16,
        seed=0,
        keep=keep,
    )
    assert m.corrupt_states >= 1 and m.worst.startswith("corrupt: ")
    (worst,) = kept
    assert _stdlib_opinion(tmp_path, trace, worst.files) != ""
    assert m.checker_proven


def _planted_matrix(tmp_path: Path) -> tuple[api.PowerlossResult, str]:
    plan = PowerlossPlan((Pragmas("WAL", "FULL"), Pragmas("DELETE", "FULL")), commits=3)
    result = run_matrix(tmp_path, plan)
    return result, " ".join(api.render(result, "text", verbose=True).split())


def test_the_real_checker_is_proven_in_every_report(tmp_path):
    result, text = _planted_matrix(tmp_path)
    assert all(m.checker_proven and m.known_corrupt == 4 for c in result.configs for m in c.models)
    assert "Checker proof: the checker flagged 16 of 16 known-corrupt states" in text
    assert "checker missed" not in text


def test_a_planted_integrity_check_that_always_passes_is_caught(tmp_path, monkeypatch):
    monkeypatch.setattr(sqlite, "INTEGRITY_CHECK", "SELECT 'ok'")
    result, text = _planted_matrix(tmp_path)
    for c in result.configs:
        for m in c.models:
            assert not m.checker_proven
            assert (m.known_corrupt_flagged, m.known_corrupt_missed) == (3, "half-index")
    assert "Checker proof: the checker flagged 12 of 16 known-corrupt states" in text
    assert "It missed wal/full synced-only: half-index" in text
    assert "a corrupt count of 0 here is no evidence" in text
    assert "0 (checker missed half-index)" in text


def test_a_planted_row_comparison_that_never_differs_is_caught(tmp_path, monkeypatch):
    monkeypatch.setattr(matrix, "first_difference", lambda rows, expected: "")
    result, _text = _planted_matrix(tmp_path)
    assert {m.known_corrupt_missed for c in result.configs for m in c.models} == {"changed-row"}


def test_a_planted_checker_that_passes_everything_is_caught(tmp_path, monkeypatch):
    def everything_sound(directory, db_name, psow):
        return {}, ""

    monkeypatch.setattr(sqlite, "open_state", everything_sound)
    monkeypatch.setattr(matrix, "first_difference", lambda rows, expected: "")
    result, _text = _planted_matrix(tmp_path)
    for c in result.configs:
        for m in c.models:
            assert (m.known_corrupt, m.known_corrupt_flagged) == (4, 0)
            assert m.corrupt_states == 0 and not m.checker_proven
