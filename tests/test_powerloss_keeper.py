"""--keep-failures and the figures of ``fsyncbench powerloss`` (fsyncbench.powerloss.matrix).

What is kept for the worst state of one configuration x model (``_keeper``): the state's
files byte for byte, every field of its state.json, the directory's name (the label with
"/" made "-", then the model; a taken name gets "-2", "-3", ... and nothing already there
is touched), and the refusal when all 999 names are taken. How ``run_matrix`` wires a
matrix: progress, the planted fault, the trace that describes a configuration, the seed,
one proof per trace, what is kept. How ``evaluate`` turns states into figures (on scripted
states: counts, mean, worst with corrupt states first, the proof kept per trace), an
invalid model's empty outcome, the checker's own messages, and the loss ranges. In
process, on hand-made traces and small real recordings in pytest's tmp_path."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import time
from pathlib import Path

import pytest

from fsyncbench.errors import FsyncbenchError
from fsyncbench.model import Pragmas
from fsyncbench.powerloss.matrix import _keeper, run_matrix
from fsyncbench.powerloss.models import CrashState
from fsyncbench.powerloss.plan import PowerlossPlan
from fsyncbench.powerloss.trace import Trace

ROWS = (
    (1, ("step-1", 7, "out-1", "2026-01-01", "ok")),
    (2, ("step-2", 8, "out-2", "2026-01-02", "ok")),
)

#: What state.json tells whoever opens the kept files (words a user reads; the URL is
#: SQLite's page on URI parameters, where psow is documented).
NOTE = (
    "Opening the database changes these files (SQLite rolls a hot journal back and "
    "recovers a WAL): open a copy to keep the evidence. Open with the URI parameter psow "
    "as recorded (https://www.sqlite.org/uri.html)."
)


def _trace(pragmas: Pragmas = Pragmas("WAL", "NORMAL"), psow: bool = True) -> Trace:
    return Trace(
        pragmas=pragmas,
        ops=(),
        roles=(("t.db", "main-db"), ("t.db-wal", "wal")),
        db_name="t.db",
        rows=ROWS,
        psow=psow,
        dirsync_modelled=True,
        sqlite_version="3.45.6-test",
    )


def _state() -> CrashState:
    files = (("t.db", b"SQLite format 3\0" + bytes(range(40))), ("t.db-wal", b"\x37\x7f\x06\x82"))
    return CrashState(5, files, (1, 2), "prefix point 5 (2 of 3 items)")


def _plan(**kw) -> PowerlossPlan:
    return PowerlossPlan((Pragmas("WAL", "NORMAL"),), semantics="macos", seed=42, **kw)


def test_no_keep_directory_means_no_keeper():
    assert _keeper(None, _trace(), "prefix", _plan()) is None


def test_the_state_and_every_field_of_state_json_are_written(tmp_path):
    keep_dir = tmp_path / "failures"  # not there yet: made on the first keep
    keep = _keeper(keep_dir, _trace(), "prefix", _plan(sector_bytes=4096))
    assert keep is not None
    state = _state()
    where = keep(state, "lost 1 of the 2 commits acknowledged before the cut (2)")
    assert where == str(keep_dir / "wal-normal-prefix")
    kept = Path(where)
    assert sorted(p.name for p in kept.iterdir()) == ["state.json", "t.db", "t.db-wal"]
    for name, data in state.files:
        assert (kept / name).read_bytes() == data
    text = (kept / "state.json").read_text()
    # indented two spaces, one key a line, and a final newline: readable and diffable
    assert text.startswith('{\n  "configuration": "wal/normal",\n  "pragmas": {\n    "journal')
    assert text.endswith('\n  "note": ' + json.dumps(NOTE) + "\n}\n")
    assert json.loads(text) == {
        "configuration": "wal/normal",
        "pragmas": {"journal_mode": "WAL", "synchronous": "NORMAL", "fullfsync": None},
        "model": "prefix",
        "semantics": "macos",
        "psow": True,
        "sector_bytes": None,  # prefix writes whole operations: no sector size applies
        "seed": 42,
        "sqlite_version": "3.45.6-test",
        "how": "prefix point 5 (2 of 3 items)",
        "acknowledged_commits": [1, 2],
        "finding": "lost 1 of the 2 commits acknowledged before the cut (2)",
        "expected_rows": {
            "1": ["step-1", 7, "out-1", "2026-01-01", "ok"],
            "2": ["step-2", 8, "out-2", "2026-01-02", "ok"],
        },
        "note": NOTE,
    }


@pytest.mark.parametrize("model", ["torn", "torn-garbage", "test6"])
def test_sector_models_record_the_sector_size(tmp_path, model):
    trace = _trace(Pragmas("DELETE", "FULL", True), psow=False)
    keep = _keeper(tmp_path, trace, model, _plan(sector_bytes=4096))
    assert keep is not None
    where = Path(keep(_state(), "corrupt: integrity_check: page 2"))
    assert where.name == f"delete-full-fullfsync-{model}"
    info = json.loads((where / "state.json").read_text())
    assert info["sector_bytes"] == 4096
    assert info["configuration"] == "delete/full/fullfsync"
    assert info["pragmas"] == {"journal_mode": "DELETE", "synchronous": "FULL", "fullfsync": True}
    assert info["psow"] is False and info["model"] == model


def test_a_taken_name_gets_the_next_number_and_is_left_alone(tmp_path):
    mine = tmp_path / "wal-normal-subset"
    mine.mkdir()
    (mine / "mine.txt").write_text("precious")
    (tmp_path / "wal-normal-subset-2").mkdir()
    keep = _keeper(tmp_path, _trace(), "subset", _plan())
    assert keep is not None
    state = _state()
    assert keep(state, "lost 2") == str(tmp_path / "wal-normal-subset-3")
    assert keep(state, "lost 2 again") == str(tmp_path / "wal-normal-subset-4")
    assert sorted(p.name for p in mine.iterdir()) == ["mine.txt"]
    assert (mine / "mine.txt").read_text() == "precious"
    assert list((tmp_path / "wal-normal-subset-2").iterdir()) == []
    third = tmp_path / "wal-normal-subset-3"
    assert sorted(p.name for p in third.iterdir()) == ["state.json", "t.db", "t.db-wal"]
    assert json.loads((third / "state.json").read_text())["finding"] == "lost 2"


def test_the_999th_name_is_the_last_then_keep_refuses(tmp_path):
    base = "wal-normal-prefix"
    (tmp_path / base).mkdir()
    for n in range(2, 1000):
        (tmp_path / f"{base}-{n}").mkdir()
    keep = _keeper(tmp_path, _trace(), "prefix", _plan())
    assert keep is not None
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(FsyncbenchError) as err:
        keep(_state(), "lost 1")
    assert str(err.value) == f"--keep-failures {tmp_path}: no free name for {base}"
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written
    assert all(not any(p.iterdir()) for p in tmp_path.iterdir())
    # the last name free: it is taken
    (tmp_path / f"{base}-999").rmdir()
    assert keep(_state(), "lost 1") == str(tmp_path / f"{base}-999")


# ------------------------------------------- run_matrix: recordings, progress and keeping


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """One small matrix, every sync skipped (a planted fault: even wal/full loses), its
    progress calls, the proofs run, and what --keep-failures kept."""
    from fsyncbench.powerloss import matrix

    root = tmp_path_factory.mktemp("planted")
    keep_dir = root / "kept"
    work = root / "work"
    work.mkdir()
    plan = PowerlossPlan(
        (Pragmas("WAL", "FULL"), Pragmas("DELETE", "FULL")),
        models=("torn-garbage", "synced-only", "prefix"),
        commits=2,
        seed=7,
        keep_failures=keep_dir,
    )
    progress: list[tuple[int, int, str]] = []
    proved: list[bool] = []
    real = matrix.prove_checker

    def counting(checker, seed):
        proved.append(checker.trace.psow)
        return real(checker, seed)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(matrix, "prove_checker", counting)
        result = matrix.run_matrix(
            work,
            plan,
            progress=lambda done, total, label: progress.append((done, total, label)),
            sync_filter=lambda _n: False,
        )
    return result, progress, proved, keep_dir, work


def test_progress_counts_each_configuration_and_model_then_done(planted):
    _result, progress, _proved, _keep, _work = planted
    assert progress == [
        (0, 6, "wal/full torn-garbage"),
        (1, 6, "wal/full synced-only"),
        (2, 6, "wal/full prefix"),
        (3, 6, "delete/full torn-garbage"),
        (4, 6, "delete/full synced-only"),
        (5, 6, "delete/full prefix"),
        (6, 6, "done"),
    ]
    assert all(type(done) is int and type(total) is int for done, total, _l in progress)


def test_the_planted_fault_reaches_the_recording(planted):
    result, _progress, _proved, _keep, work = planted
    wal = result.configs[0]
    assert wal.pragmas == Pragmas("WAL", "FULL")
    synced_only = wal.models[1]
    assert synced_only.model == "synced-only"
    # no sync reached the disk: a power cut after the last commit loses both
    assert synced_only.worst_lost == 2
    assert list(work.iterdir()) == []  # the scratch directory is gone


def test_the_configuration_is_described_by_its_powersafe_overwrite_trace(planted):
    # torn-garbage is recorded with psow off, the others with it on (SQLite's default):
    # the configuration's counts and psow are the default's, whichever model came first
    result, _progress, proved, _keep, _work = planted
    assert [c.psow for c in result.configs] == [True, True]
    assert [m.psow for m in result.configs[0].models] == [False, True, True]
    # one proof per trace (synced-only and prefix share theirs), not one per model
    assert proved == [False, True, False, True]
    wal = result.configs[0].models
    assert wal[1].known_corrupt == wal[2].known_corrupt > 0


def test_the_seed_reaches_the_drawn_states(planted):
    result, _progress, _proved, _keep, _work = planted
    torn = result.configs[0].models[0]
    assert torn.model == "torn-garbage"
    assert torn.worst.endswith("(seed 7))")


def test_every_losing_configuration_and_model_is_kept(planted):
    result, _progress, _proved, keep_dir, _work = planted
    names = [
        f"{c.pragmas.label.replace('/', '-')}-{m.model}" for c in result.configs for m in c.models
    ]
    assert sorted(p.name for p in keep_dir.iterdir()) == sorted(names)
    for config in result.configs:
        for outcome in config.models:
            where = keep_dir / f"{config.pragmas.label.replace('/', '-')}-{outcome.model}"
            assert outcome.kept_at == str(where)
            info = json.loads((where / "state.json").read_text())
            assert (info["configuration"], info["model"]) == (config.pragmas.label, outcome.model)
            assert info["psow"] is outcome.psow and info["seed"] == 7
            assert info["finding"] == outcome.worst


@pytest.fixture(scope="module")
def torn_only(tmp_path_factory):
    """A matrix of sector models only (every trace recorded with psow off), unfaulted, with
    every knob away from its default; the traces it recorded, as recorded."""
    from fsyncbench.powerloss import sqlite

    root = tmp_path_factory.mktemp("torn")
    plan = PowerlossPlan(
        (Pragmas("WAL", "FULL"), Pragmas("DELETE", "FULL")),
        models=("torn",),
        semantics="linux",
        commits=2,
        payload_bytes=300,
        sector_bytes=1024,
        max_states=50,
        samples=20,
        seed=3,
        wal_autocheckpoint=500,
    )
    recorded: list[tuple[tuple, Trace]] = []
    real = sqlite.record_commits

    def capturing(*args):
        trace = real(*args)
        recorded.append((args[1:], trace))
        return trace

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sqlite, "record_commits", capturing)
        before = time.perf_counter_ns()
        result = run_matrix(root, plan)
        wall = time.perf_counter_ns() - before
    return wall, result, recorded


def test_a_sector_models_only_matrix_is_described_by_its_only_trace(torn_only):
    from fsyncbench.powerloss import promises, sqlite

    wall, result, recorded = torn_only
    assert [args for args, _t in recorded] == [
        (Pragmas("WAL", "FULL"), 2, 300, False, None, 500),
        (Pragmas("DELETE", "FULL"), 2, 300, False, None, 500),
    ]
    for config, (_args, trace) in zip(result.configs, recorded, strict=True):
        assert config.psow is False
        assert (config.writes, config.syncs, config.dirsyncs) == (
            trace.count("write"),
            trace.count("sync"),
            trace.count("dirsync"),
        )
        assert config.writes > config.syncs > 0
        assert (config.checkpoints, config.wal_restarts) == (
            trace.checkpoints(),
            trace.wal_restarts(),
        )
        docs = promises.documented(config.pragmas, "Linux")
        seen = promises.observed(trace, "linux")
        assert (config.documentation, config.observation) == (docs, seen)
        assert (
            config.documented_durable,
            config.documented_consistent,
            config.documented_why,
        ) == promises.expected(docs, seen)
        assert config.commits == 2
    wal, delete = result.configs
    assert wal.checkpoints == 1 and delete.dirsyncs > 0
    assert (result.commits, result.payload_bytes, result.sector_bytes) == (2, 300, 1024)
    assert (result.seed, result.max_states, result.samples) == (3, 50, 20)
    assert (result.models, result.semantics, result.wal_autocheckpoint) == (("torn",), "linux", 500)
    versions = sqlite.versions()
    assert (result.sqlite_version, result.apsw_version) == (versions["sqlite"], versions["apsw"])
    assert result.sqlite_version == recorded[0][1].sqlite_version
    assert result.stdlib_sqlite_version == sqlite3.sqlite_version
    assert 0 < result.elapsed_ns <= wall


def test_a_plan_without_configurations_is_refused_and_leaves_nothing(tmp_path):
    calls: list[tuple[int, int, str]] = []
    with pytest.raises(FsyncbenchError) as err:
        run_matrix(tmp_path, PowerlossPlan(()), progress=lambda *a: calls.append(a))
    assert str(err.value) == "no configuration to test"
    assert calls == [] and list(tmp_path.iterdir()) == []


# ---------------------------------------------- the checker's proof and the loss ranges


class _Spy:
    """A checker that records every state it is asked about and flags it or not."""

    def __init__(self, trace: Trace, flags: str) -> None:
        self.trace = trace
        self.flags = flags
        self.seen: list[CrashState] = []

    def check(self, state: CrashState) -> tuple[frozenset[int], str]:
        self.seen.append(state)
        return frozenset(), self.flags


def test_the_proof_opens_every_known_corrupt_state_drawn_with_its_seed(torn_only):
    from fsyncbench.powerloss.matrix import prove_checker
    from fsyncbench.powerloss.proofs import known_corrupt_states

    _wall, _result, recorded = torn_only
    trace = recorded[0][1]
    known = known_corrupt_states(trace, 7)
    assert len(known) >= 2 and any(k.how.endswith("(seed 7)") for k in known)
    blind = _Spy(trace, "")
    assert prove_checker(blind, 7) == (len(known), 0, ", ".join(k.name for k in known))
    assert [s.files for s in blind.seen] == [k.files for k in known]
    sound = _Spy(trace, "integrity_check: page 2")
    assert prove_checker(sound, 7) == (len(known), len(known), "")


def test_lost_commits_are_listed_as_ranges():
    from fsyncbench.powerloss.matrix import _ranges

    assert _ranges([]) == ""
    assert _ranges([4]) == "4"
    assert _ranges([12, 3, 4, 5, 9, 7, 11]) == "3-5, 7, 9, 11-12"
    assert _ranges([98, 99, 100, 101]) == "98-101"


@pytest.mark.parametrize("model", ["torn", "torn-garbage", "test6"])
def test_a_sector_model_on_a_powersafe_trace_is_invalid_with_nothing_counted(tmp_path, model):
    from fsyncbench.model import PowerlossModelOutcome
    from fsyncbench.powerloss.matrix import evaluate
    from fsyncbench.powerloss.models import crash_points, invalid_reason
    from fsyncbench.powerloss.trace import Op

    ops = (Op("create", "t.db"), Op("write", "t.db", 0, b"old!"), Op("barrier"))
    ops += (Op("write", "t.db", 0, b"new!"), Op("sync", "t.db"), Op("ack", seq=1))
    trace = dataclasses.replace(_trace(), ops=ops, roles=(("t.db", "main-db"),))
    kept: list[str] = []
    outcome = evaluate(
        trace,
        model,
        tmp_path,
        semantics="linux",
        sector_bytes=512,
        max_states=10,
        samples=4,
        seed=0,
        keep=lambda _s, what: kept.append(what) or "kept",
    )
    points = len(crash_points(trace))
    assert points > 0
    assert outcome == PowerlossModelOutcome(
        model=model,
        crash_points=points,
        states=0,
        distinct_states=0,
        sampled=False,
        states_losing=0,
        worst_lost=0,
        mean_lost=0.0,
        corrupt_states=0,
        invalid=invalid_reason(model, True),
        worst="",
        psow=True,
    )
    assert outcome.invalid.startswith("invalid: SQLite was told writes are powersafe")
    assert kept == [] and list(tmp_path.iterdir()) == []


# ------------------------------------------------ evaluate: how states become the figures

#: Hand-made states and what the checker says of each (rows present, or the problem).
_STATES = (
    (CrashState(1, (("t.db", b"1"),), (1, 2), "A"), {1, 2}),  # nothing lost
    (CrashState(2, (("t.db", b"2"),), (1, 2, 3), "B", sampled=True), {1}),  # 2 lost
    (CrashState(3, (("t.db", b"2"),), (1, 2, 3), "C"), {1}),  # B's bytes again: as bad
    (CrashState(4, (("t.db", b"3"),), (1, 2), "D"), "bad page"),  # corrupt: worse than 2
    (CrashState(5, (("t.db", b"4"),), (1, 2, 3, 4, 5), "E"), {3}),  # 4 lost: the worst
    (CrashState(6, (("t.db", b"5"),), (1, 2, 3), "F"), "bad row"),  # as bad as E: not kept
)


class _Scripted:
    """A checker that answers from _STATES, remembering each distinct content once."""

    def __init__(self, workdir: Path, trace: Trace) -> None:
        self.trace = trace
        self.cache: dict[bytes, tuple[frozenset[int], str]] = {}
        self.answers = {s.files: a for s, a in _STATES}

    def check(self, state: CrashState) -> tuple[frozenset[int], str]:
        answer = self.answers[state.files]
        key = state.files[0][1]
        if key not in self.cache:
            self.cache[key] = (
                (frozenset(), answer)
                if isinstance(answer, str)
                else (
                    frozenset(answer),
                    "",
                )
            )
        return self.cache[key]


@pytest.fixture
def scripted(monkeypatch):
    """evaluate on _STATES: the crash points, the states, the checker and its proof
    replaced; what each was asked is recorded."""
    from fsyncbench.powerloss import matrix

    asked: dict[str, list] = {"states": [], "proofs": []}

    def states(trace, model, **kw):
        asked["states"].append((model, kw))
        return iter([s for s, _a in _STATES])

    def prove(checker, seed):
        asked["proofs"].append((checker.trace, seed, len(checker.cache)))
        return 4, 3, "garbage-sector"

    monkeypatch.setattr(matrix, "crash_points", lambda trace: [1, 2, 3, 4, 5, 6, 7])
    monkeypatch.setattr(matrix, "crash_states", states)
    monkeypatch.setattr(matrix, "_Checker", _Scripted)
    monkeypatch.setattr(matrix, "prove_checker", prove)
    return asked


def _evaluate(tmp_path, trace: Trace | None = None, **kw):
    from fsyncbench.powerloss.matrix import evaluate

    return evaluate(
        trace or _trace(psow=False),
        "subset",
        tmp_path,
        semantics="macos",
        sector_bytes=4096,
        max_states=9,
        samples=5,
        seed=11,
        **kw,
    )


def test_the_figures_count_every_state_and_keep_the_worst(tmp_path, scripted):
    from fsyncbench.model import PowerlossModelOutcome

    kept: list[tuple[CrashState, str]] = []
    outcome = _evaluate(tmp_path, keep=lambda s, d: kept.append((s, d)) or "/kept/here")
    worst = "lost 4 of the 5 commits acknowledged before the cut (1-2, 4-5) (E)"
    assert outcome == PowerlossModelOutcome(
        model="subset",
        crash_points=7,
        states=6,
        distinct_states=5,  # C has B's bytes
        sampled=True,
        states_losing=3,  # B, C, E
        worst_lost=4,
        mean_lost=2.0,  # (0 + 2 + 2 + 4) / the 4 sound states
        corrupt_states=2,
        invalid="",
        worst=worst,
        psow=False,
        kept_at="/kept/here",
        known_corrupt=4,
        known_corrupt_flagged=3,
        known_corrupt_missed="garbage-sector",
    )
    assert [(s.how, d) for s, d in kept] == [("E", worst)]
    kw = {"semantics": "macos", "sector_bytes": 4096, "max_states": 9, "samples": 5, "seed": 11}
    assert scripted["states"] == [("subset", kw)]
    (proof,) = scripted["proofs"]
    assert proof[1:] == (11, 5)


def _only(monkeypatch, pick) -> None:
    from fsyncbench.powerloss import matrix

    chosen = [s for s, a in _STATES if pick(s, a)]
    monkeypatch.setattr(matrix, "crash_states", lambda trace, model, **kw: iter(chosen))


def test_a_corrupt_state_is_worse_than_as_many_lost_commits(tmp_path, scripted, monkeypatch):
    # without E and F, D (corrupt, 2 acknowledged) is worse than B and C (2 of 3 lost)
    _only(monkeypatch, lambda s, _a: s.how not in ("E", "F"))
    outcome = _evaluate(tmp_path)
    assert outcome.worst == "corrupt: bad page (D)"
    assert (outcome.worst_lost, outcome.corrupt_states, outcome.kept_at) == (2, 1, "")
    assert outcome.mean_lost == 4 / 3 and outcome.states_losing == 2


def test_no_loss_keeps_nothing_and_says_nothing(tmp_path, scripted, monkeypatch):
    _only(monkeypatch, lambda s, _a: s.how == "A")
    kept: list[str] = []
    outcome = _evaluate(tmp_path, keep=lambda s, d: kept.append(d) or "kept")
    assert (outcome.worst, outcome.kept_at, kept) == ("", "", [])
    assert (outcome.states, outcome.states_losing, outcome.worst_lost) == (1, 0, 0)
    assert (outcome.mean_lost, outcome.sampled, outcome.distinct_states) == (0.0, False, 1)


def test_only_corrupt_states_give_a_mean_of_zero(tmp_path, scripted, monkeypatch):
    _only(monkeypatch, lambda _s, a: isinstance(a, str))
    outcome = _evaluate(tmp_path)
    assert (outcome.mean_lost, outcome.corrupt_states, outcome.states_losing) == (0.0, 2, 0)
    assert outcome.worst == "corrupt: bad row (F)"  # 3 acknowledged: worse than D's 2


def test_the_proof_is_made_once_per_trace(tmp_path, scripted):
    trace = _trace(psow=False)
    proofs: dict[int, tuple[int, int, str]] = {}
    first = _evaluate(tmp_path, trace, proofs=proofs)
    assert proofs == {id(trace): (4, 3, "garbage-sector")}
    proofs[id(trace)] = (9, 1, "half-index, changed-row")
    again = _evaluate(tmp_path, trace, proofs=proofs)  # the next model of the same trace
    assert len(scripted["proofs"]) == 1
    assert (first.known_corrupt, first.known_corrupt_flagged) == (4, 3)
    assert (again.known_corrupt, again.known_corrupt_flagged) == (9, 1)
    assert again.known_corrupt_missed == "half-index, changed-row"
    # a proof kept for another trace is not this one's: made anew
    other = _evaluate(tmp_path, trace, proofs={id(trace) + 1: (9, 1, "x")})
    assert (other.known_corrupt, len(scripted["proofs"])) == (4, 2)


def test_a_model_without_states_is_not_sampled(tmp_path, scripted, monkeypatch):
    _only(monkeypatch, lambda _s, _a: False)
    outcome = _evaluate(tmp_path)
    assert outcome.sampled is False
    assert (outcome.states, outcome.distinct_states, outcome.worst, outcome.mean_lost) == (
        0,
        0,
        "",
        0.0,
    )


# ------------------------------------------------------------ the checker on real states


def test_the_checker_tells_each_distinct_state_apart(tmp_path, torn_only):
    from fsyncbench.powerloss.matrix import _Checker
    from fsyncbench.powerloss.proofs import known_corrupt_states

    _wall, _result, recorded = torn_only
    trace = recorded[0][1]
    checker = _Checker(tmp_path, trace)
    gone = CrashState(1, (), (1,), "no database file")
    assert checker.check(gone) == (
        frozenset(),
        "the database file is gone (its directory entry was never synced)",
    )
    (changed,) = [k for k in known_corrupt_states(trace, 0) if k.caught_by == "rows"]
    present, problem = checker.check(CrashState(-1, changed.files, (), changed.how))
    assert present == frozenset() and problem.endswith("differs from what its commit wrote")
    assert problem.startswith("row ")
    assert checker.check(gone)[1].startswith("the database file is gone")
    assert len(checker.cache) == 2
