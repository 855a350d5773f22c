"""The kill matrix under simulated power loss (``crash --powerloss``): real child processes,
real SQLite files, real SIGKILLs, each followed by a rebuilt power-cut state of the agent's
databases. Expected figures are derived from the agent's script and SQLite's documented
syncing, not copied from a run. No assertion here is about how long anything took."""

from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path

import pytest
from clitools import assert_usage_error, fsb
from test_crash_power_segments import _rows_after_cut

import fsyncbench
from fsyncbench import crash
from fsyncbench.crash.results import TOOLS
from fsyncbench.jsonable import from_jsonable
from fsyncbench.model import Pragmas
from fsyncbench.powerloss import rebase
from fsyncbench.powerloss.trace import Op

needs_fork = pytest.mark.skipif(
    not hasattr(os, "fork") or not hasattr(signal, "SIGKILL"), reason="needs os.fork and SIGKILL"
)

# real SIGKILLs of the step journal under every power-loss model: the slow tier, each test
# marked (the cuts, the refusals and the views on recorded matrices below are the fast
# tier's, and so are the in-process cuts of tests/test_crash_power_segments.py)

KILLS = [(seq, window) for seq in range(1, 11) for window in crash.WINDOWS]
WRITE_SEQS = {2 * turn for turn, (_name, writes, _kind) in TOOLS.items() if writes}  # 4, 6, 8
MODEL_SEQ_TOKENS = {2 * turn - 1: tokens for turn, tokens in enumerate(crash.MODEL_TOKENS, 1)}


def _effects_before(seq: int, window: str) -> set[int]:
    """Steps of the killed run whose effect happened before a kill at (seq, window)."""
    return set(range(1, seq)) | ({seq} if window != "before" else set())


def _recorded_before(seq: int, window: str) -> set[int]:
    """Steps the killed run committed to its journal before a kill at (seq, window)."""
    return set(range(1, seq)) | ({seq} if window == "recorded" else set())


def _cost(rerun: set[int], keys: bool) -> tuple[int, int]:
    """(duplicate writes, extra tokens) when the restart runs ``rerun`` again."""
    dups = 0 if keys else len(rerun & WRITE_SEQS)
    return dups, sum(MODEL_SEQ_TOKENS.get(s, 0) for s in rerun)


def _everything_lost(keys: bool) -> dict[tuple[int, str], tuple[int, int]]:
    """A journal that loses every commit of the killed run: the restart runs again every
    step whose effect had happened (no persistence, and idempotency keys dedupe writes)."""
    return {(s, w): _cost(_effects_before(s, w), keys) for s, w in KILLS}


def _last_commit_lost(keys: bool) -> dict[tuple[int, str], tuple[int, int]]:
    """A rollback journal at synchronous=FULL: its unlink is not synced, so a cut brings it
    back as a hot journal and SQLite rolls the last commit back; the restart runs that step
    again and, as after SIGKILL, a step killed between effect and record."""
    out = {}
    for s, w in KILLS:
        recorded = _recorded_before(s, w)
        rerun = ({max(recorded)} if recorded else set()) | ({s} if w == "effect" else set())
        out[(s, w)] = _cost(rerun, keys)
    return out


def _outcomes(row: crash.PolicyRow) -> dict[tuple[int, str], tuple[int, int]]:
    return {(k.seq, k.window): (k.duplicate_writes, k.extra_tokens) for k in row.kills}


def _rows(matrix: crash.KillMatrix) -> dict[str, crash.PolicyRow]:
    return {row.policy: row for row in matrix.rows}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("crash-powerloss")


@pytest.fixture(scope="module")
def sigkill(workdir: Path) -> crash.KillMatrix:
    return crash.run_kill_matrix(workdir)


@pytest.fixture(scope="module")
def powerloss(workdir: Path) -> crash.PowerLossExperiment:
    """The default four pragma combinations under synced-only, through the API."""
    result = fsyncbench.kill_matrix(workdir, power_loss="synced-only", semantics="linux")
    assert isinstance(result, crash.PowerLossExperiment)
    return result


def _by_label(result: crash.PowerLossExperiment) -> dict[str, crash.KillMatrix]:
    return {m.effective.label: m for m in result.matrices}


# --------------------------------------------------------------------------- the matrices


@pytest.mark.slow
@needs_fork
def test_default_pragmas_and_real_kills(powerloss: crash.PowerLossExperiment, workdir: Path):
    assert list(_by_label(powerloss)) == ["wal/full", "wal/normal", "wal/off", "delete/full"]
    assert powerloss.kill_count == 4 * 120
    assert (powerloss.model, powerloss.semantics) == ("synced-only", "linux")
    for m in powerloss.matrices:
        assert m.journal_commit_ns == ()  # recorded commits: not the journal's latency
        for row in m.rows:
            assert [(k.seq, k.window) for k in row.kills] == KILLS
            assert all(k.kill_signal == signal.SIGKILL for k in row.kills)
            assert all(k.restarts == 1 for k in row.kills)
            assert (row.clean_run_tokens, row.clean_run_writes) == (37_000, 3)
    assert list(workdir.iterdir()) == []


@pytest.mark.slow
@needs_fork
def test_wal_full_loses_nothing_acknowledged_so_it_is_the_sigkill_table(
    powerloss: crash.PowerLossExperiment, sigkill: crash.KillMatrix
):
    wal_full = _by_label(powerloss)["wal/full"]
    assert crash.kill_matrix_rows(wal_full) == crash.kill_matrix_rows(sigkill)
    for policy, row in _rows(wal_full).items():
        assert _outcomes(row) == _outcomes(_rows(sigkill)[policy]), policy


@pytest.mark.slow
@needs_fork
@pytest.mark.parametrize("label", ["wal/normal", "wal/off"])
def test_an_unsynced_wal_loses_the_whole_killed_run(
    powerloss: crash.PowerLossExperiment, sigkill: crash.KillMatrix, label: str
):
    # NORMAL syncs the WAL only at a checkpoint, OFF never: a cut loses every journal and
    # checkpoint commit of the killed run, which then restarts as if nothing were saved
    rows = _rows(_by_label(powerloss)[label])
    for policy in ("no_persistence", "checkpoint_per_turn", "step_journal"):
        assert _outcomes(rows[policy]) == _everything_lost(keys=False), policy
    assert _outcomes(rows["journal_idempotency"]) == _everything_lost(keys=True)
    journal, keys = rows["step_journal"], rows["journal_idempotency"]
    # duplicates SIGKILL did not cause: 20 kills instead of 3, up to the run's three writes
    assert journal.kills_causing_duplicates == 20
    assert _rows(sigkill)["step_journal"].kills_causing_duplicates == 3
    assert journal.worst_duplicates == 3
    # idempotency keys: no duplicate write in the world, but every lost model call re-billed
    assert keys.kills_causing_duplicates == 0 and keys.worst_duplicates == 0
    assert keys.mean_extra_tokens == pytest.approx(539_000 / 30)  # 17,967 against 1,233
    assert keys.worst_extra_tokens == 37_000


@pytest.mark.slow
@needs_fork
def test_delete_full_loses_the_last_commit(powerloss: crash.PowerLossExperiment):
    rows = _rows(_by_label(powerloss)["delete/full"])
    assert _outcomes(rows["step_journal"]) == _last_commit_lost(keys=False)
    assert _outcomes(rows["journal_idempotency"]) == _last_commit_lost(keys=True)
    assert rows["step_journal"].kills_causing_duplicates == 12
    assert rows["step_journal"].mean_extra_tokens == pytest.approx(4 * 37_000 / 30)
    assert _outcomes(rows["no_persistence"]) == _everything_lost(keys=False)


@pytest.mark.slow
@needs_fork
def test_delete_extra_syncs_the_unlink_and_is_the_sigkill_table(
    tmp_path: Path, sigkill: crash.KillMatrix
):
    result = crash.run_power_loss_matrix(
        tmp_path, "synced-only", pragmas=[Pragmas("DELETE", "EXTRA")]
    )
    (matrix,) = result.matrices
    for policy, row in _rows(matrix).items():
        assert _outcomes(row) == _outcomes(_rows(sigkill)[policy]), policy


@pytest.mark.slow
@needs_fork
def test_each_platform_semantics_cuts_as_that_platform(tmp_path: Path, sigkill: crash.KillMatrix):
    # the same kills, cut as on macOS and Windows: macOS's plain fsync (these journals set no
    # fullfsync) stops at the drive's cache, so wal/full loses the whole killed run there;
    # SQLite on Windows never syncs the directory, so delete/extra loses the last commit
    mac = crash.run_power_loss_matrix(tmp_path, "synced-only", "macos", [Pragmas("WAL", "FULL")])
    rows = _rows(mac.matrices[0])
    assert _outcomes(rows["step_journal"]) == _everything_lost(keys=False)
    assert _outcomes(rows["journal_idempotency"]) == _everything_lost(keys=True)
    assert mac.semantics == "macos"
    win = crash.run_power_loss_matrix(
        tmp_path, "synced-only", "windows", [Pragmas("DELETE", "EXTRA")]
    )
    rows = _rows(win.matrices[0])
    assert _outcomes(rows["step_journal"]) == _last_commit_lost(keys=False)
    assert _outcomes(rows["journal_idempotency"]) == _last_commit_lost(keys=True)


@pytest.mark.slow
@needs_fork
def test_fullfsync_makes_wal_full_the_sigkill_table_under_macos_semantics(
    tmp_path: Path, sigkill: crash.KillMatrix
):
    # the Mac's durable setting: with PRAGMA fullfsync SQLite asks for F_FULLFSYNC, which the
    # macOS semantics honour, so a power cut loses no more than a SIGKILL does
    mac = crash.run_power_loss_matrix(
        tmp_path, "synced-only", "macos", [Pragmas("WAL", "FULL", True)]
    )
    (matrix,) = mac.matrices
    assert matrix.requested.label == "wal/full/fullfsync" and matrix.effective.fullfsync is True
    for policy, row in _rows(matrix).items():
        assert _outcomes(row) == _outcomes(_rows(sigkill)[policy]), policy


def test_the_macos_default_sets_each_durable_row_with_fullfsync_and_without():
    mac = crash.default_power_loss_pragmas("macos")
    assert {p.label for p in mac} >= {
        "wal/full/fullfsync",
        "wal/full/no-fullfsync",
        "delete/full/fullfsync",
        "delete/full/no-fullfsync",
    }
    assert crash.default_power_loss_pragmas("linux") == crash.DEFAULT_POWER_LOSS_PRAGMAS
    assert all(p.fullfsync is None for p in crash.DEFAULT_POWER_LOSS_PRAGMAS)


def test_cli_refuses_a_bad_fullfsync(tmp_path: Path):
    assert_usage_error(
        fsb("crash", tmp_path, "--fullfsync", "maybe"),
        "invalid fullfsync maybe: allowed values are on, off",
    )
    assert_usage_error(
        fsb("crash", tmp_path, "--fullfsync", "on,off"),
        "fullfsync takes one value, on or off; got 'on,off'",
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
@needs_fork
def test_a_planted_fault_that_skips_every_sync_breaks_wal_full(
    tmp_path: Path, sigkill: crash.KillMatrix
):
    # the same measurement must see it when the storage acknowledges syncs it never made
    result = crash.run_power_loss_matrix(
        tmp_path, "synced-only", pragmas=[Pragmas("WAL", "FULL")], sync_filter=lambda _n: False
    )
    rows = _rows(result.matrices[0])
    assert _outcomes(rows["step_journal"]) == _everything_lost(keys=False)
    assert _outcomes(rows["step_journal"]) != _outcomes(_rows(sigkill)["step_journal"])
    assert _outcomes(rows["journal_idempotency"]) == _everything_lost(keys=True)


@pytest.mark.slow
@needs_fork
def test_the_answer_states_the_measured_numbers(powerloss: crash.PowerLossExperiment):
    from fsyncbench.crash.view import power_loss_answer

    assert power_loss_answer(powerloss) == (
        "After a power cut (synced-only, linux), synchronous=NORMAL (wal/normal) made the step "
        "journal duplicate a ticket, page or status update in 20 of 30 kills (worst 3 in one "
        "run) against 3 with wal/full; with idempotency keys 0 kills caused a duplicate (0 with "
        "wal/full), but the agent re-billed a mean 17,967 extra tokens per kill (worst 37,000, "
        "+100 %), as many as with no persistence, against 1,233 with wal/full."
    )


@pytest.mark.slow
@needs_fork
def test_json_and_markdown_have_a_table_per_pragma(powerloss: crash.PowerLossExperiment):
    data = json.loads(fsyncbench.render(powerloss, "json"))
    assert list(data["tables"]) == ["wal/full", "wal/normal", "wal/off", "delete/full"]
    journal = {r["policy"]: r for r in data["tables"]["wal/normal"]}["step journal"]
    assert (journal["kills_causing_duplicates"], journal["mean_extra_tokens"]) == (20, 17_967)
    assert data["power_loss"]["model"] == "synced-only"
    assert data["answer"].startswith("After a power cut (synced-only, linux)")
    matrices = [from_jsonable(crash.KillMatrix, m) for m in data["matrices"]]
    assert matrices == list(powerloss.matrices)
    md = fsyncbench.render(powerloss, "markdown")
    assert md.count("| policy") == 4 and "## journal delete/full" in md


# ------------------------------------------------- the fast tier: in-process cuts, recorded matrices
# The cuts above in process (a completed run, then a killed one, then the cut: the children's
# own RecordedState, no fork), and the views of an experiment recorded as the matrices above
# must measure it (each kill's outcome from the expectations at the top of this file).


def _cut_rows(where: Path, pragmas: Pragmas, power: crash.PowerLoss | None = None) -> list[int]:
    where.mkdir()
    return _rows_after_cut(where, pragmas, power)


def test_delete_extra_keeps_both_runs_but_not_under_windows_semantics(tmp_path: Path):
    # EXTRA syncs the directory after the journal's unlink: a cut keeps the killed run's
    # commit as a SIGKILL does; SQLite on Windows never syncs a directory, so there the
    # unlink is lost and the hot journal rolls the last commit back
    extra = Pragmas("DELETE", "EXTRA")
    assert _cut_rows(tmp_path / "linux", extra) == [1, 2]
    win = crash.PowerLoss("synced-only", "windows")
    assert _cut_rows(tmp_path / "windows", extra, win) == [1]


def test_a_planted_fault_that_skips_every_sync_loses_both_runs_in_process(tmp_path: Path):
    planted = crash.PowerLoss("synced-only", sync_filter=lambda _n: False)
    assert _cut_rows(tmp_path / "planted", Pragmas("WAL", "FULL"), planted) == []
    assert _cut_rows(tmp_path / "real", Pragmas("WAL", "FULL")) == [1, 2]


def _sigkill_lost(keys: bool) -> dict[tuple[int, str], tuple[int, int]]:
    """What a SIGKILL alone costs the journal: the step killed between effect and record."""
    return {(s, w): _cost({s} if w == "effect" else set(), keys) for s, w in KILLS}


def _recorded_matrix(pragmas: Pragmas, outcomes: dict[str, dict]) -> crash.KillMatrix:
    from fsyncbench.crash.results import STEP_NAMES, policy_row

    rows = []
    for policy in crash.POLICIES:
        kills = [
            crash.KillOutcome(s, STEP_NAMES[s - 1], w, signal.SIGKILL, 1, *outcomes[policy][s, w])
            for s, w in KILLS
        ]
        rows.append(policy_row(policy, kills, 37_000, 3))
    return crash.KillMatrix(
        requested=pragmas,
        effective=pragmas,
        rows=tuple(rows),
        journal_commit_ns=(),
        elapsed_ns=1,
        kill_count=120,
        model_tokens=crash.MODEL_TOKENS,
        sqlite_version="test",
    )


def _recorded_experiment() -> crash.PowerLossExperiment:
    """The default experiment (synced-only, linux) as the slow tier measures it."""
    lost, last = _everything_lost(False), _last_commit_lost(False)
    gone = {p: lost for p in crash.POLICIES} | {"journal_idempotency": _everything_lost(True)}
    matrices = (
        _recorded_matrix(
            Pragmas("WAL", "FULL"),
            {p: lost for p in crash.POLICIES[:2]}
            | {"step_journal": _sigkill_lost(False), "journal_idempotency": _sigkill_lost(True)},
        ),
        _recorded_matrix(Pragmas("WAL", "NORMAL"), gone),
        _recorded_matrix(Pragmas("WAL", "OFF"), gone),
        _recorded_matrix(
            Pragmas("DELETE", "FULL"),
            {p: lost for p in crash.POLICIES[:2]}
            | {"step_journal": last, "journal_idempotency": _last_commit_lost(True)},
        ),
    )
    return crash.PowerLossExperiment("synced-only", "linux", "", matrices, 1, 480, "test")


def test_the_views_of_a_recorded_experiment_state_its_numbers():
    from fsyncbench.crash.view import power_loss_answer

    recorded = _recorded_experiment()
    assert power_loss_answer(recorded) == (
        "After a power cut (synced-only, linux), synchronous=NORMAL (wal/normal) made the step "
        "journal duplicate a ticket, page or status update in 20 of 30 kills (worst 3 in one "
        "run) against 3 with wal/full; with idempotency keys 0 kills caused a duplicate (0 with "
        "wal/full), but the agent re-billed a mean 17,967 extra tokens per kill (worst 37,000, "
        "+100 %), as many as with no persistence, against 1,233 with wal/full."
    )
    data = json.loads(fsyncbench.render(recorded, "json"))
    assert list(data["tables"]) == ["wal/full", "wal/normal", "wal/off", "delete/full"]
    journal = {r["policy"]: r for r in data["tables"]["wal/normal"]}["step journal"]
    assert (journal["kills_causing_duplicates"], journal["mean_extra_tokens"]) == (20, 17_967)
    assert data["power_loss"]["model"] == "synced-only"
    assert data["answer"].startswith("After a power cut (synced-only, linux)")
    matrices = [from_jsonable(crash.KillMatrix, m) for m in data["matrices"]]
    assert matrices == list(recorded.matrices)
    md = fsyncbench.render(recorded, "markdown")
    assert md.count("| policy") == 4 and "## journal delete/full" in md
    # the text crash --powerloss prints: the answer, then a table per combination
    out = fsyncbench.render(recorded, "text")
    headings = re.findall(r"^journal (\S+)$", out, re.M)
    assert headings == ["wal/full", "wal/normal", "wal/off", "delete/full"]
    assert len(re.findall(r"^journal \+ idempotency keys +0 +0 ", out, re.M)) == 4
    assert re.search(r"^step journal +20 +3 +17,967 +37,000 \(\+100 %\)$", out, re.M), out
    answer = out.index("After a power cut (synced-only, ")
    assert answer < out.index("synchronous=NORMAL (wal/normal)") < out.index("\npolicy ")


# --------------------------------------------------------------------------- the CLI


@pytest.mark.slow
@needs_fork
def test_cli_prints_a_table_per_pragma(tmp_path: Path):
    # Linux's semantics and pragmas on every platform (macOS's default: its own, each durable
    # one with fullfsync and without: test_the_macos_default_sets_each_durable_row_...)
    argv = ("--powerloss", "synced-only", "--semantics", "linux", "--no-report")
    proc = fsb("crash", tmp_path, *argv)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    out = proc.stdout
    headings = re.findall(r"^journal (\S+)$", out, re.M)
    assert headings == ["wal/full", "wal/normal", "wal/off", "delete/full"]
    assert len(re.findall(r"^journal \+ idempotency keys +0 +0 ", out, re.M)) == 4
    assert re.search(r"^step journal +20 +3 +17,967 +37,000 \(\+100 %\)$", out, re.M), out
    # the answer first, before the first table
    answer = out.index("After a power cut (synced-only, ")
    assert answer < out.index("synchronous=NORMAL (wal/normal)") < out.index("\npolicy ")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
@needs_fork
def test_cli_json_with_one_pragma(tmp_path: Path):
    target = tmp_path / "t"
    target.mkdir()
    argv = ["crash", target, "--powerloss", "synced-only", "--synchronous", "off"]
    proc = fsb(*argv, "--format", "json", "--report-dir", tmp_path / "saved")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["kind"] == "crash" and data["crash"] is None
    (matrix,) = data["crash_power_loss"]["matrices"]
    assert matrix["effective"] == {"journal_mode": "WAL", "synchronous": "OFF", "fullfsync": None}
    rows = {r["label"]: r for r in matrix["rows"]}
    assert rows["step journal"]["kills_causing_duplicates"] == 20
    assert rows["journal + idempotency keys"]["worst_duplicates"] == 0
    (saved,) = (tmp_path / "saved").glob("*-crash.json")
    assert saved.read_text() == proc.stdout
    shown = fsb("show", saved)
    assert shown.returncode == 0, shown.stderr
    assert "Run without --journal-mode and --synchronous" in " ".join(shown.stdout.split())


def test_cli_refuses_an_unknown_model(tmp_path: Path):
    assert_usage_error(
        fsb("crash", tmp_path, "--powerloss", "bogus"),
        "argument --powerloss: invalid choice: 'bogus' (choose from 'synced-only', 'prefix', "
        "'subset', 'torn', 'torn-garbage', 'test6') (see fsyncbench crash --help)",
    )
    assert_usage_error(
        fsb("crash", tmp_path, "--semantics", "macos"),
        "--semantics applies only with --powerloss",
    )
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- rebase


def _trace(ops: list[Op], psow: bool = True):
    return rebase.segment_trace(ops, Pragmas("WAL", "FULL"), "f", psow)


#: f and g exist (durable); then g is written (never synced), f is written and synced, and f
#: is written again after its sync.
SEGMENT = [
    Op("create", "f"),
    Op("write", "f", offset_bytes=0, data=b"AAAA"),
    Op("create", "g"),
    Op("write", "g", offset_bytes=0, data=b"gggg"),
    Op("barrier"),
    Op("write", "g", offset_bytes=0, data=b"hh"),
    Op("write", "f", offset_bytes=0, data=b"BB"),
    Op("sync", "f", flags=2),
    Op("write", "f", offset_bytes=2, data=b"CC"),
]


@pytest.mark.parametrize(
    "model,files",
    [
        ("synced-only", {"f": b"BBAA", "g": b"gggg"}),
        ("prefix", {"f": b"BBAA", "g": b"hhgg"}),  # everything issued up to f's sync
        ("subset", {"f": b"BBAA", "g": b"gggg"}),  # nothing unsynced kept
        ("torn", {"f": bytes(4), "g": bytes(4)}),  # and partly written sectors zeroed
        ("test6", {"f": b"BBAA", "g": b"gggg"}),  # every unsynced write left out
    ],
)
def test_the_cut_keeps_the_fewest_operations_since_the_last_sync(model, files):
    state = rebase.state_after_cut(_trace(SEGMENT, psow=model not in ("torn", "test6")), model)
    assert dict(state.files) == files
    assert state.point == len(SEGMENT)


def test_macos_semantics_honour_only_full_syncs():
    state = rebase.state_after_cut(_trace(SEGMENT), "synced-only", semantics="macos")
    assert dict(state.files) == {"f": b"AAAA", "g": b"gggg"}
    full = [*SEGMENT[:7], Op("sync", "f", flags=3), SEGMENT[8]]
    state = rebase.state_after_cut(_trace(full), "synced-only", semantics="macos")
    assert dict(state.files)["f"] == b"BBAA"


def test_a_file_created_after_the_last_directory_sync_is_gone():
    ops = [*SEGMENT, Op("create", "h"), Op("write", "h", data=b"x"), Op("sync", "h", flags=2)]
    assert "h" not in dict(rebase.state_after_cut(_trace(ops), "synced-only").files)
    ops.append(Op("dirsync"))
    assert dict(rebase.state_after_cut(_trace(ops), "synced-only").files)["h"] == b"x"


def test_stream_snapshot_and_restore(tmp_path: Path):
    db = tmp_path / "db"
    db.mkdir()
    (db / "a.db").write_bytes(b"\x01" * 10)
    (db / "a.db-wal").write_bytes(b"")
    (db / "a.db-shm").write_bytes(b"index")
    snap = rebase.snapshot_ops(db)
    assert snap == [
        Op("create", "a.db"),
        Op("write", "a.db", data=b"\x01" * 10),
        Op("create", "a.db-wal"),
        Op("barrier"),
    ]
    stream = rebase.OpStream(tmp_path / "ops.bin")
    stream.write_all([*snap, Op("ack", seq=3), Op("sync", "a.db", flags=0x13)])
    stream.close()
    ops = rebase.read_ops(tmp_path / "ops.bin")
    assert ops == [*snap, Op("ack", seq=3), Op("sync", "a.db", flags=0x13)]
    torn = (tmp_path / "ops.bin").read_bytes()[:-3]  # a record cut short: left out
    assert rebase.decode(torn) == ops[:-1]
    rebase.restore(db, [("a.db", b"kept")])
    assert {p.name: p.read_bytes() for p in db.iterdir()} == {"a.db": b"kept"}


def test_power_loss_refuses_unknown_models():
    with pytest.raises(ValueError, match="unknown persistence model 'bogus'"):
        crash.PowerLoss("bogus")
    with pytest.raises(ValueError, match="unknown semantics 'bsd'"):
        crash.PowerLoss("prefix", "bsd")
    assert crash.PowerLoss("torn").psow is False and crash.PowerLoss("subset").psow is True
