"""The simulator against real cuts (lab/simcheck.py, issue 30 item 5): the step journal in a
QEMU guest on four honest lab drives (one per pragma), cut for real, checked on a loop
mount, and set beside ``fsyncbench powerloss``'s prediction. The many-cut experiment is
``scripts/lab.py --only powerloss``; these tests prove the mechanism with two cuts."""

from __future__ import annotations

import os
import random
import sqlite3
import sys
from pathlib import Path

import pytest
from labtools import load

from fsyncbench.measure.workloads import JournalCommit
from fsyncbench.model import Pragmas

guest = load("guest")
simcheck = load("simcheck")


def _tally(label: str, lost_max: int, corrupt: int = 0):
    return simcheck.Tally(label, 20, 500, lost_max, lost_max, int(lost_max > 0), corrupt)


def _prediction(label: str, bound: int | None, corrupt_states: int = 0):
    models = (("synced-only", bound if bound is not None else 10, corrupt_states),)
    return simcheck.Prediction(label, bound, corrupt_states, models, 10)


# ------------------------------------------------------------------ the comparison


def test_a_real_loss_above_the_prediction_is_a_disagreement():
    nothing, last, every = (_prediction("x", b) for b in (0, 1, None))
    assert simcheck.agrees(_tally("x", 0), nothing)
    assert not simcheck.agrees(_tally("x", 1), nothing)  # predicted to lose nothing: lost one
    assert simcheck.agrees(_tally("x", 1), last)
    assert not simcheck.agrees(_tally("x", 2), last)
    assert simcheck.agrees(_tally("x", 400), every)  # every commit since the last sync
    # a corrupt database where no model has a corrupt state
    assert not simcheck.agrees(_tally("x", 0, corrupt=1), every)
    assert simcheck.agrees(_tally("x", 0, corrupt=1), _prediction("x", None, corrupt_states=2))
    scenario, truth, said, ok = simcheck.line(_tally("wal/full", 1), _prediction("wal/full", 0))
    assert not ok and "wal/full" in scenario
    assert "lost max 1" in truth and "lost at most 0" in said


def test_a_tally_counts_losses_and_says_when_one_was_not_the_newest_steps():
    def run(*outcomes):
        return simcheck.CutRun(1.0, outcomes, 20.0, 15.0)

    runs = [
        run(simcheck.Outcome("d", 30, (30,), ""), simcheck.Outcome("w", 9, (), "")),
        run(simcheck.Outcome("d", 12, (), "")),
        run(simcheck.Outcome("d", 40, (38, 39, 40), "")),
    ]
    t = simcheck.tally("d", runs)
    got = (t.cuts, t.acknowledged, t.lost_max, t.lost_total, t.cuts_with_loss)
    assert got == (3, 82, 3, 4, 2)
    assert (t.corrupt, t.not_newest) == (0, 0)
    gap = simcheck.tally("d", [run(simcheck.Outcome("d", 40, (38, 40), "bad"))])
    assert (gap.not_newest, gap.corrupt) == (1, 1)
    assert "1 not the newest" in simcheck.line(gap, _prediction("d", None))[1]


def test_the_prediction_is_read_from_powerloss_json():
    config = {
        "pragmas": {"journal_mode": "DELETE", "synchronous": "FULL", "fullfsync": None},
        "commits": 10,
        "models": [
            {"model": "synced-only", "worst_lost": 1, "corrupt_states": 0, "invalid": ""},
            {"model": "subset", "worst_lost": 1, "corrupt_states": 3, "invalid": ""},
            {"model": "torn", "worst_lost": 9, "corrupt_states": 9, "invalid": "psow on"},
        ],
    }
    wal = {**config, "pragmas": {"journal_mode": "WAL", "synchronous": "NORMAL"}}
    wal["models"] = [{"model": "prefix", "worst_lost": 10, "corrupt_states": 0, "invalid": ""}]
    got = simcheck.parse_prediction({"powerloss": {"configs": [config, wal]}})
    assert got["delete/full"].bound == 1 and got["delete/full"].corrupt_states == 3
    assert [m for m, _, _ in got["delete/full"].by_model] == ["synced-only", "subset"]
    assert got["wal/normal"].bound is None  # 10 of 10: every commit since the last sync


@pytest.fixture(scope="module")
def predictions():
    """``fsyncbench powerloss``'s predictions for the four pragmas, run once here."""
    python = simcheck.fsyncbench_python()
    if python is None:
        pytest.skip("no Python here imports fsyncbench and apsw")
    return simcheck.predict(python, 0)


def test_powerloss_predicts_the_four_pragmas_on_linux(predictions):
    # the model's figures the real cuts are held to (docs/powerloss.md): a run of fsyncbench
    # powerloss here, so a change in the model shows
    got = predictions
    assert list(got) == ["wal/full", "wal/normal", "delete/full", "delete/extra"]
    assert [got[k].bound for k in got] == [0, None, 1, 0]
    assert all(p.corrupt_states == 0 for p in got.values())
    assert all([m for m, _, _ in p.by_model] == list(simcheck.MODELS) for p in got.values())


# ------------------------------------------------------------------ the checker


def _journal(directory: Path, commits: int) -> Path:
    work = JournalCommit(directory, Pragmas("WAL", "FULL"), simcheck.PAYLOAD_BYTES)
    for seq in range(1, commits + 1):
        work.run(work.prepare(seq))
    work.close()
    return directory / "journal-wal-full.db"


def test_the_checker_finds_each_acknowledged_step_and_names_the_missing(tmp_path):
    db = _journal(tmp_path, 5)
    rows, problem = simcheck.open_steps(db)
    assert problem == "" and sorted(rows) == [1, 2, 3, 4, 5]
    assert simcheck.lost_steps(rows, 5) == ()
    assert simcheck.lost_steps(rows, 7) == (6, 7)  # acknowledged, not in the database
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("UPDATE steps SET output = '{}' WHERE seq = 2")
    conn.execute("DELETE FROM steps WHERE seq = 4")
    conn.close()
    rows, problem = simcheck.open_steps(db)
    assert problem == "" and simcheck.lost_steps(rows, 5) == (2, 4)  # damaged, gone


def test_the_checker_says_when_the_database_is_not_sound(tmp_path):
    assert simcheck.open_steps(tmp_path / "none.db") == ({}, "no database file")
    db = _journal(tmp_path, 50)
    with db.open("r+b") as f:  # the second page (the table's root) overwritten
        f.seek(4096)
        f.write(b"\xff" * 4096)
    rows, problem = simcheck.open_steps(db)
    assert problem != "" and simcheck.lost_steps(rows, 50) == tuple(range(1, 51))


def test_acknowledgements_count_whole_lines_in_order(tmp_path):
    acks = tmp_path / "acks"
    acks.write_text("PRAGMAS wal/full\nACK 1\nACK 2\nACK 3")  # the cut left ACK 3 unfinished
    assert simcheck.read_acks(acks) == ("wal/full", 2)
    assert simcheck.read_acks(tmp_path / "none") == ("", 0)
    acks.write_text("PRAGMAS wal/full\nACK 1\nACK 3\n")
    with pytest.raises(ValueError, match="out of order"):
        simcheck.read_acks(acks)


def test_several_drives_attach_each_with_its_serial_and_the_old_form_is_unchanged(tmp_path):
    one = guest.qemu_argv(tmp_path, tmp_path, tmp_path / "s0", True)
    assert one[-2:] == ["-device", "nvme,serial=fsblab0,drive=lab0"]
    assert sum(a == "-drive" for a in one) == 1
    many = guest.qemu_argv(
        tmp_path, tmp_path, None, True, [tmp_path / "a", tmp_path / "b"], "virtio-blk"
    )
    devices = [many[i + 1] for i, a in enumerate(many) if a == "-device"]
    assert devices == [
        "virtio-blk-pci,serial=fsblab0,drive=lab0",
        "virtio-blk-pci,serial=fsblab1,drive=lab1",
    ]
    assert f"server.path={tmp_path / 'b'},if=none,id=lab1" in " ".join(many)
    with pytest.raises(ValueError, match="drive_bus must be one of"):
        guest.qemu_argv(tmp_path, tmp_path, None, True, (), "scsi")


# ------------------------------------------------------------------ real cuts

MISSING = simcheck.missing_parts()


@pytest.mark.system
@pytest.mark.skipif(bool(MISSING), reason=MISSING or "-")
def test_two_real_cuts_of_the_four_drive_guest_agree_with_powerloss(tmp_path, predictions):
    python = simcheck.fsyncbench_python()
    initrd = guest.build_initramfs(tmp_path / "initrd.gz")
    rng = random.Random(11)
    runs = []
    for i in range(2):
        (tmp_path / f"cut{i}").mkdir()
        runs.append(simcheck.cut_once(initrd, rng, python, tmp_path / f"cut{i}"))
    for run in runs:
        assert [o.label for o in run.outcomes] == [simcheck.label(p) for p in simcheck.PRAGMAS]
        # every drive was committing when the cut came, and every database is sound
        assert all(o.acked >= 1 and o.problem == "" for o in run.outcomes), run
        by = {o.label: o for o in run.outcomes}
        # an honest drive and synced commits: nothing acknowledged lost (powerloss: 0)
        assert by["wal/full"].lost == () and by["delete/extra"].lost == (), run
        # DELETE/FULL can lose only the last acknowledged commit (its journal's unlink)
        assert by["delete/full"].lost in ((), (by["delete/full"].acked,)), run
    # the checker finds the acknowledged steps: steps claimed beyond what was committed
    # are named missing, exactly those. The one commit in flight at the cut (acked + 1) may
    # have reached the disk before its ACK reached the host; a second one cannot have begun.
    image = tmp_path / "cut1" / "drive0" / "image"
    acked = runs[1].outcomes[0].acked
    again = simcheck.check_image(image, "wal/full", acked + 3, tmp_path / "cut1")
    assert again.problem == ""
    assert again.lost in ((acked + 1, acked + 2, acked + 3), (acked + 2, acked + 3)), again
    assert not os.path.ismount(tmp_path / "cut1" / "check.mnt")
    # set beside the model: agreement, and a planted loss above the prediction is not
    tallies = [simcheck.tally(simcheck.label(p), runs) for p in simcheck.PRAGMAS]
    assert [simcheck.agrees(t, predictions[t.label]) for t in tallies] == [True] * 4
    planted = simcheck.Outcome("wal/full", acked, (acked,), "")
    worse = [*runs, simcheck.CutRun(1.0, (planted,), 0.0, 0.0)]
    assert not simcheck.agrees(simcheck.tally("wal/full", worse), predictions["wal/full"])


def test_the_lab_script_refuses_bad_powerloss_cuts():
    import subprocess

    bad = subprocess.run(
        [sys.executable, str(simcheck.ROOT / "scripts" / "lab.py"), "--powerloss-cuts", "0"],
        capture_output=True,
        text=True,
    )
    assert (bad.returncode, bad.stderr) == (2, "lab: --powerloss-cuts must be at least 1\n")
