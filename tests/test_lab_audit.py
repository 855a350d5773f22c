"""``fsyncbench audit`` against the truth where latency can tell (issue 30, item 3;
lab/audits.py): in a guest with the hypervisor hidden, the lab drive presented as a 7,200 rpm
SATA disk. A lying drive acknowledges FLUSH far faster than a platter can (fsyncbench's
spinning-disk floor, 2 ms: docs/verdicts.md) and must not get a clean bill; a slow honest
drive (10 ms per flush) must be judged honest_flush."""

from __future__ import annotations

import json

import pytest
from labtools import load

audits = load("audits")
guest = audits.guest
MISSING = audits.missing_parts()

needs_guest = pytest.mark.skipif(bool(MISSING), reason=MISSING or "-")
SPINNING_FLOOR_NS = 2_000_000  # fsyncbench.judge.devices.SPINNING_FLOOR_NS
LYING_HDD, SLOW_HDD, HONEST_NVME, LYING_NVME = audits.SCENARIOS
#: Quicker still than the lab's audit (the path verdict needs no commit traces); the
#: fdatasync primitive still issues more than the 50 syncs the counter rules need.
TEST_AUDIT = (*audits.QUICK_AUDIT, "--no-trace")


@pytest.fixture(scope="module")
def initrd(tmp_path_factory):
    return guest.build_initramfs(tmp_path_factory.mktemp("initrd") / "initrd.gz")


def _disk(workdir) -> dict:
    """The drive as the guest's fsyncbench recorded it (the audit report's host facts)."""
    report = json.loads((workdir / "results" / "audit.json").read_text())
    (disk,) = report["host"]["target"]["disks"]
    return disk


# ------------------------------------------------------------------- no guest needed


def _outcome(**kw):
    base = dict(
        verdict="honest_flush",
        strength="inferred",
        decided_by="flushes-reach-device",
        fdatasync_p50_ns=1e6,
        flushes_per_sync=1.0,
        device_class="spinning disk",
        floor_ns=2e6,
        trust="Probably, not proven: a drive that drops flushes at the pace of real ones "
        "looks the same until a power cut",
        next_step="",
        flushes_received=100,
        flushes_dropped=0,
        took_s=1.0,
    )
    return audits.Outcome(**{**base, **kw})


def test_agreement_where_latency_can_tell_and_where_it_cannot():
    unproven = _outcome()
    caught = _outcome(verdict="volatile_cache", decided_by="flush-below-device-floor", trust="No")
    clean = _outcome(trust="Yes")
    # latency can tell: the verdict itself must be right
    assert audits.agrees(SLOW_HDD, unproven) and not audits.agrees(SLOW_HDD, caught)
    assert audits.agrees(LYING_HDD, caught) and not audits.agrees(LYING_HDD, unproven)
    assert not audits.agrees(LYING_HDD, clean)
    # it cannot (1 ms is above an SSD's 150 us floor): a lying drive is matched by an answer
    # that defers to a power cut, never a clean bill; an honest one still needs honest_flush
    ssd = {"device_class": "SSD with a volatile write cache", "floor_ns": 150e3}
    unproven_ssd = _outcome(**ssd)
    caught_ssd = _outcome(**ssd, verdict="volatile_cache", trust="No")
    assert audits.agrees(LYING_NVME, unproven_ssd) and audits.agrees(LYING_NVME, caught_ssd)
    assert not audits.agrees(LYING_NVME, _outcome(**ssd, trust="Yes"))
    assert audits.agrees(HONEST_NVME, unproven_ssd)
    assert not audits.agrees(HONEST_NVME, caught_ssd)
    # latency tells where the liar's median is below the floor it is held to: a spinning disk
    # slowed past its 2 ms by a loaded machine is then judged as the NVMe pair is
    slowed = _outcome(fdatasync_p50_ns=2.5e6)
    assert not audits.latency_told(slowed) and audits.latency_told(unproven)
    assert audits.agrees(LYING_HDD, slowed)
    assert not audits.agrees(LYING_HDD, _outcome(fdatasync_p50_ns=2.5e6, trust="Yes"))
    assert _outcome(verdict="volatile_cache", trust="No", load=5.7, cores=2).said() == (
        "volatile_cache (inferred, flushes-reach-device), fdatasync p50 1.00 ms (spinning disk: "
        "floor 2 ms), trust the storage? No (load 5.7 on 2 cores)"
    )


def test_a_lab_line_says_where_audit_cannot_tell_and_says_so():
    ssd = {"device_class": "SSD with a volatile write cache", "floor_ns": 150e3}
    told = {
        s.name: audits.lab_line(s, o)[2].startswith("cannot tell, and audit says so: ")
        for s, o in (
            (SLOW_HDD, _outcome(fdatasync_p50_ns=14e6)),
            (HONEST_NVME, _outcome(**ssd)),
            (LYING_NVME, _outcome(**ssd, flushes_dropped=100)),
        )
    }
    assert told == {SLOW_HDD.name: False, HONEST_NVME.name: True, LYING_NVME.name: True}
    caught = _outcome(verdict="volatile_cache", trust="No", flushes_dropped=100)
    assert audits.lab_line(LYING_HDD, caught) == (
        "audit: lying drive as a 7,200 rpm disk",
        "lying: every FLUSH dropped (the drive dropped 100 of 100)",
        caught.said(),
        True,
    )
    slowed = audits.lab_line(LYING_HDD, _outcome(fdatasync_p50_ns=2.5e6))
    assert slowed[2].startswith("latency could not tell on this run (a loaded machine); ")
    assert slowed[3] is True


def test_parse_reads_the_verdict_its_evidence_and_the_answer():
    report = {
        "verdict": {
            "path_verdict": "volatile_cache",
            "strength": "inferred",
            "decided_by": "flush-below-device-floor",
            "findings": [
                {"code": "flushes-reach-device", "stance": "disagrees", "evidence": {}},
                {
                    "code": "flush-below-device-floor",
                    "stance": "decides",
                    "evidence": {
                        "device_class": "spinning disk",
                        "floor_ns": 2_000_000,
                        "flushes_per_sync": 1.02,
                    },
                },
            ],
        },
        "results": [{"name": "write+fdatasync", "summary": {"p50_ns": 784_099.5}}],
    }
    shown = (
        "Choose: ...\n\n!! Trust the storage? No. Path verdict: volatile_cache, inferred\n"
        "(decided by flush-below-device-floor).\n\nNext step: Check the drive's write\n"
        "cache.\n\nLatency (durable: ...)"
    )
    got = audits.parse(report, shown)
    assert got == {
        "verdict": "volatile_cache",
        "strength": "inferred",
        "decided_by": "flush-below-device-floor",
        "fdatasync_p50_ns": 784_099.5,
        "flushes_per_sync": 1.02,
        "device_class": "spinning disk",
        "floor_ns": 2_000_000,
        "trust": "No",
        "next_step": "Check the drive's write cache.",
    }


def test_the_guest_sees_the_drive_as_a_spinning_sata_disk_or_an_nvme_ssd(tmp_path):
    sock = tmp_path / "sock"
    hdd = guest.qemu_argv(tmp_path, tmp_path, sock, True, (sock,), drive_bus="sata-hdd")
    assert hdd.count("ahci,id=ahci0") == 1  # one controller, a port per drive
    ide = [a for a in hdd if a.startswith("ide-hd,")]
    assert [a.split(",")[1] for a in ide] == ["bus=ahci0.0", "bus=ahci0.1"]
    assert all("rotation_rate=7200" in a and f"model={guest.HDD_MODEL}" in a for a in ide)
    scsi = guest.qemu_argv(tmp_path, tmp_path, sock, True, drive_bus="virtio-scsi-hdd")
    assert "virtio-scsi-pci,id=scsi0" in scsi and any(a.startswith("scsi-hd,") for a in scsi)
    nvme = guest.qemu_argv(tmp_path, tmp_path, sock, True)
    assert "nvme,serial=fsblab0,drive=lab0" in nvme and not any("ide-hd" in a for a in nvme)
    with pytest.raises(ValueError, match="drive_bus must be one of"):
        guest.qemu_argv(tmp_path, tmp_path, None, True, drive_bus="floppy")


# ------------------------------------------------------------------- real guests


@pytest.mark.system
@needs_guest
def test_a_lying_drive_faster_than_a_platter_is_caught(initrd, tmp_path):
    """Every FLUSH dropped, acknowledged at TCG's pace (well under a millisecond here),
    on a disk that says it spins at 7,200 rpm: audit must say volatile_cache (or no_flush),
    never honest_flush."""
    o = audits.run_audit(LYING_HDD, initrd, tmp_path, TEST_AUDIT)
    if not audits.latency_told(o):  # the precondition, not the verdict: see latency_told
        pytest.skip(
            f"the lying drive's fdatasync p50 {o.fdatasync_p50_ns / 1e6:.2f} ms was no faster "
            f"than a platter on this machine (load {o.load:.1f} on {o.cores} cores)"
        )
    disk = _disk(tmp_path)
    # what the guest recorded: a spinning SATA disk with a volatile write cache, bare metal
    assert (disk["rotational"], disk["write_cache"], disk["transport"], disk["fua"]) == (
        True,
        "write back",
        "ata",
        False,
    )
    # the truth: the syncs reached the drive, which dropped every one of them
    assert o.flushes_received > 100 and o.flushes_dropped == o.flushes_received
    assert o.verdict in audits.RISK_VERDICTS, o
    assert (o.decided_by, o.device_class, o.floor_ns) == (
        "flush-below-device-floor",
        "spinning disk",
        SPINNING_FLOOR_NS,
    )
    assert o.fdatasync_p50_ns < SPINNING_FLOOR_NS
    assert o.trust == "No"
    assert audits.agrees(LYING_HDD, o)


@pytest.mark.system
@needs_guest
def test_a_slow_honest_drive_is_honest_flush(initrd, tmp_path):
    """Every FLUSH written back and fdatasync'd on the image, 10 ms later, like a platter:
    audit must say honest_flush (inferred: only a power cut proves), never volatile_cache."""
    o = audits.run_audit(SLOW_HDD, initrd, tmp_path, TEST_AUDIT)
    assert _disk(tmp_path)["rotational"] is True
    assert o.flushes_received > 100 and o.flushes_dropped == 0
    assert (o.verdict, o.strength, o.decided_by) == (
        "honest_flush",
        "inferred",
        "flushes-reach-device",
    ), o
    assert o.fdatasync_p50_ns >= 10_000_000 and o.flushes_per_sync >= 0.5
    assert "power cut" in o.trust and not o.trust.startswith("Yes")
    assert audits.agrees(SLOW_HDD, o)
