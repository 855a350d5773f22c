"""verify when the power cut took the run's directory itself (found in the lab, issue 30
item 4): a lying drive that dropped every flush lost the writer's run directory along with
its journal; verify said "no powercut run" (exit 2) instead of naming the lost commits.

The writer makes and syncs the run's directory (and its parent) before its ``hello``, so
when the listener recorded the run from this host and this directory, a missing directory
is a loss, not a wrong DIR; a run from another host or another directory still is an
error, never "every commit lost, proven"."""

from __future__ import annotations

import pytest
import test_powercut_verify as tpv
from test_powercut_verify import SECRET, _make_run, _record, _rows

from fsyncbench.errors import FsyncbenchError
from fsyncbench.model import VOLATILE_CACHE
from fsyncbench.powercut.run import POWERCUT_DIRNAME, this_hostname
from fsyncbench.powercut.verify import select_run, verify

listener, verify_env = tpv.listener, tpv.verify_env  # the fixtures of test_powercut_verify


def test_a_run_whose_directory_the_cut_took_is_lost_not_an_error(tmp_path, listener, verify_env):
    target = tmp_path / "data"
    (target / POWERCUT_DIRNAME).mkdir(parents=True)  # an earlier run made it; this one is gone
    rid = "b7" * 16
    listener.add_run(rid, target, [(1, 50)], host=this_hostname())
    for run_id in (rid, None):  # named, and found as the newest run the listener knows
        outcome = verify(listener.address, SECRET, target, run_id, tmp_path / "out", ["fsb"])
        jm = outcome.judgement
        assert (jm.outcome, jm.path_verdict, jm.decided_by, jm.lost) == (
            "fail",
            VOLATILE_CACHE,
            "powercut-acknowledged-lost",
            ((1, 50),),
        )
        assert outcome.failed
        assert "MISSING" in outcome.text
        assert f"{target / POWERCUT_DIRNAME / rid}" in outcome.text.replace("\n ", "")
        assert "50 of 50 acknowledged commits are missing" in outcome.text


def test_target_itself_missing_the_powercut_folder_is_a_loss_too(tmp_path, listener, verify_env):
    target = tmp_path / "fresh"
    target.mkdir()  # the cut took .fsyncbench-powercut/ as well
    rid = "b8" * 16
    listener.add_run(rid, target, [(1, 3)], host=this_hostname())
    outcome = verify(listener.address, SECRET, target, None, tmp_path / "out", ["fsb"])
    assert outcome.judgement.lost == ((1, 3),)
    assert any("its directory is gone" in n for n in outcome.report.notes)


def test_a_lost_newer_run_is_checked_not_an_older_one_that_survived(tmp_path, listener, verify_env):
    """Cycles in one DIR: run 1 survived, the cut of run 2 took its directory. Before the
    fix verify checked run 1 (the newest it found here) and passed."""
    target = tmp_path / "data"
    old, new = "c1" * 16, "c2" * 16
    _make_run(
        target, old, _rows(old, range(1, 11)), _record(old, target, started="2024-05-01T11:00:00Z")
    )
    listener.add_run(old, target, [(1, 10)], host=this_hostname())
    listener.add_run(new, target, [(1, 40)], host=this_hostname())  # started 12:00:00
    run_dir, record, notes = select_run(target, None, listener.address, SECRET)
    assert (run_dir.name, record) == (new, None)
    assert notes == [
        f"the newest run the listener recorded from this host and directory is {new}, and its "
        "directory is gone (the writer had made and synced it before its first commit): its "
        "settings come from the listener"
    ]
    outcome = verify(listener.address, SECRET, target, None, tmp_path / "out", ["fsb"])
    assert (outcome.judgement.outcome, outcome.judgement.lost) == ("fail", ((1, 40),))
    # the older run is still there to check by name, and it passes
    named = verify(listener.address, SECRET, target, old, tmp_path / "out", ["fsb"])
    assert named.judgement.outcome == "pass"


def test_a_newer_run_still_here_is_the_one_checked(tmp_path, listener, verify_env):
    target = tmp_path / "data"
    old, new = "d1" * 16, "d2" * 16
    listener.add_run(old, target, [(1, 5)], host=this_hostname())  # started 12:00:00
    _make_run(
        target, new, _rows(new, range(1, 6)), _record(new, target, started="2024-05-01T13:00:00Z")
    )
    listener.add_run(new, target, [(1, 5)], host=this_hostname())
    run_dir, record, notes = select_run(target, None, listener.address, SECRET)
    assert (run_dir.name, record is not None, notes) == (new, True, [])


@pytest.mark.parametrize("where", ["other-host", "other-dir"])
def test_a_missing_run_of_another_host_or_directory_is_still_an_error(
    tmp_path, listener, verify_env, where
):
    target = tmp_path / "data"
    target.mkdir()
    rid = ("e1" if where == "other-host" else "e2") * 16
    recorded_dir = target if where == "other-host" else tmp_path / "elsewhere"
    host = "another-machine" if where == "other-host" else this_hostname()
    listener.add_run(rid, recorded_dir, [(1, 5)], host=host)
    with pytest.raises(FsyncbenchError) as err:
        verify(listener.address, SECRET, target, rid, tmp_path / "out", ["fsb"])
    shown = (
        f"it from host another-machine, this is {this_hostname()}"
        if where == "other-host"
        else str(recorded_dir)
    )
    assert str(err.value) == (
        f"no run {rid} in {target / POWERCUT_DIRNAME}: is {target} the directory the writer "
        f"used? (the listener records {shown}; the writer made and fsync'd the run's "
        "directory before its first commit)"
    )
    assert verify_env == []  # nothing collected
    # and without --run-id: not chosen (another host's or directory's run), so the hint
    with pytest.raises(FsyncbenchError, match="^no powercut run in"):
        verify(listener.address, SECRET, target, None, tmp_path / "out", ["fsb"])
