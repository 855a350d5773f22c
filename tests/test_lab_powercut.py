"""``fsyncbench powercut`` end to end with real power cuts (issue 30, items 4 and 7): the
listener on this machine, the writer in a QEMU guest on ext4 on the lab drive, reaching
the listener through virtio-serial ports (lab/bridge.py; no guest network), a SIGKILL of
QEMU and nbdkit together, then verify in a second guest booted from the cut image.

A lying drive (every FLUSH acknowledged and dropped) must have its lost acknowledged
commits named, with exit 1; an honest one must lose none, exit 0. One cut each (a guest
boot, the writer, the cut and a verify boot take about a minute here): the lying drive
step by step (``listen``, ``write``, ``verify``), the honest one through ``powercut cycle``
with the lab's commands. The many-cut runs are scripts/lab.py's (lab/powercuts.py)."""

from __future__ import annotations

import pytest
from labtools import load

powercuts = load("powercuts")
MISSING = powercuts.missing_parts()

#: the real cuts need QEMU guests on the lab drive (the system tier); the verdicts on
#: recorded outcomes at the end are the fast tier's
needs_guests = pytest.mark.skipif(bool(MISSING), reason=MISSING or "-")


@pytest.fixture(scope="module")
def initrd(tmp_path_factory):
    return powercuts.guest.build_initramfs(tmp_path_factory.mktemp("initrd") / "initrd.gz")


@pytest.mark.system
@needs_guests
def test_a_lying_drive_loses_acknowledged_commits_and_verify_names_them(initrd, tmp_path):
    c = powercuts.cut_once("lying", 11, tmp_path / "lying", initrd)
    assert c.acknowledged > 0, c
    assert c.dropped_flushes > 0  # the guest's syncs reached the drive, which dropped them
    # the newest acknowledged commits were still in the drive's cache (1,024 blocks of
    # 4 KiB, oldest evicted to the image first): verify names them, up to the last one;
    # a short run loses them all, its directory with them
    assert c.verify_exit == 1, c.said[-2000:]
    assert c.lost and len(c.lost_ranges) == 1 and c.lost_ranges[0][1] == c.acknowledged, c
    assert c.lost == c.lost_ranges[0][1] - c.lost_ranges[0][0] + 1
    assert powercuts.cut_agrees(c)


@pytest.mark.system
@needs_guests
def test_an_honest_drive_loses_nothing_through_the_cycle_command(initrd, tmp_path):
    got = powercuts.cycles("honest", 1, 12, tmp_path / "honest", initrd)
    assert got.exit_code == 0, got.stderr[-3000:]
    (r,) = got.summary["results"]
    assert (r["outcome"], r["lost"], r["verify_exit"], r["decided_by"]) == (
        "pass",
        0,
        0,
        "powercut-survived",  # verify saw the reboot: the guest that wrote is gone
    )
    assert r["acknowledged"] >= r["acknowledged_at_cut"] > 0
    assert powercuts.cycles_agree(got)


def _cut(mode: str, verify_exit: int | None, acknowledged: int, lost_ranges=()) -> object:
    lost = sum(b - a + 1 for a, b in lost_ranges) if verify_exit is not None else None
    return powercuts.Cut(mode, 0.3, "a" * 32, acknowledged, verify_exit, lost, lost_ranges, 0, "")


def _cycles(mode: str, exit_code: int, *results: dict) -> object:
    summary = {"planned": len(results), "results": list(results)}
    return powercuts.Cycles(mode, exit_code, summary, "")


def test_the_lab_verdicts_on_recorded_cuts_and_cycles():
    """The verdicts the real cuts above end in (powercuts.cut_agrees, cycles_agree), on
    outcomes as they record them: a lying drive must have lost acknowledged commits named
    (exit 1), an honest one none (exit 0); a cycle of a lying drive must lose the newest."""
    lying, honest = powercuts.LYING, powercuts.HONEST
    assert powercuts.cut_agrees(_cut(lying, 1, 900, ((300, 900),)))
    assert not powercuts.cut_agrees(_cut(lying, 0, 900))  # a lying drive that lost nothing
    assert not powercuts.cut_agrees(_cut(lying, 2, 900))  # verify gave no verdict
    assert powercuts.cut_agrees(_cut(honest, 0, 900))
    assert not powercuts.cut_agrees(_cut(honest, 1, 900, ((900, 900),)))
    assert not powercuts.cut_agrees(_cut(honest, 0, 0))  # nothing acknowledged: no test
    passed = {"outcome": "pass", "lost": 0, "lost_ranges": [], "acknowledged": 50}
    failed = {"outcome": "fail", "lost": 20, "lost_ranges": [[31, 50]], "acknowledged": 50}
    assert powercuts.cycles_agree(_cycles(honest, 0, passed))
    assert not powercuts.cycles_agree(_cycles(honest, 1, failed))
    assert powercuts.cycles_agree(_cycles(lying, 1, failed, failed))
    # not the newest commits lost, or a cycle missing from the summary: no agreement
    older = {**failed, "lost_ranges": [[11, 30]]}
    assert not powercuts.cycles_agree(_cycles(lying, 1, failed, older))
    short = powercuts.Cycles(lying, 1, {"planned": 2, "results": [failed]}, "")
    assert not powercuts.cycles_agree(short)
    assert not powercuts.cycles_agree(_cycles(lying, 0, passed))
