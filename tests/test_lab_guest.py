"""The lab guest (lab/guest.py): QEMU with TCG on this machine's root over 9p, the lab drive
as an NVMe disk with a volatile write cache (issue 30, item 2)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from labtools import load

guest = load("guest")
cuts = load("cuts")
MISSING = guest.missing_parts() or cuts.missing_parts()

pytestmark = [pytest.mark.system, pytest.mark.skipif(bool(MISSING), reason=MISSING or "-")]


@pytest.fixture(scope="module")
def initrd(tmp_path_factory) -> Path:
    return guest.build_initramfs(tmp_path_factory.mktemp("initrd") / "initrd.gz")


def test_a_guest_runs_a_command_on_the_lab_drive_as_an_nvme_disk(initrd, tmp_path):
    results, work = tmp_path / "results", tmp_path / "drive"
    results.mkdir()
    work.mkdir()
    with cuts.drive(work, "honest") as (sock, _image, log):
        got = guest.run(
            "cat /sys/block/nvme0n1/queue/write_cache /sys/block/nvme0n1/queue/fua; "
            "grep -c hypervisor /proc/cpuinfo; "
            "cat /sys/module/nvme_core/parameters/io_timeout; "
            "mkfs.ext4 -q /dev/nvme0n1 && mount /dev/nvme0n1 /srv && "
            "dd if=/dev/zero of=/srv/x bs=4k count=4 conv=fsync 2>/dev/null && echo synced",
            initrd,
            results,
            drive_socket=sock,
        )
    lines = got.output.split("\n")
    assert got.rc == 0, got.output + got.console[-2000:]
    # a volatile write cache with FUA, as a consumer NVMe drive advertises it
    # 0: the hypervisor is hidden; 600: a slow lab drive under load is not failed with EIO
    assert lines[:5] == ["write back", "1", "0", "600", "synced"]
    assert " flush " in log.read_text()  # the guest's fsync reached the drive as a FLUSH
    assert got.took_s < 180


def test_without_hiding_the_guest_sees_the_hypervisor(initrd, tmp_path):
    (tmp_path / "r").mkdir()
    got = guest.run("grep -c hypervisor /proc/cpuinfo", initrd, tmp_path / "r", hide_vm=False)
    assert got.output.strip() == "1"


def test_audit_of_a_lying_drive_with_a_plausible_latency_is_no_clean_bill(initrd, tmp_path):
    # the drive acknowledges every FLUSH and drops it, with the fdatasync latency an honest
    # one has under TCG (~1 ms): counters and latency cannot tell the two apart, so the
    # answer must say a power cut is what settles it (issue 30, item 3)
    results, work = tmp_path / "results", tmp_path / "drive"
    results.mkdir()
    work.mkdir()
    fsb = Path(sys.executable).with_name("fsyncbench")
    with cuts.drive(work, "lying") as (sock, _image, log):
        got = guest.run(
            "mkfs.ext4 -q /dev/nvme0n1 && mount /dev/nvme0n1 /srv && "
            f"{fsb} audit /srv --no-report --format json -o /mnt/audit.json && "
            f"{fsb} show /mnt/audit.json",
            initrd,
            results,
            drive_socket=sock,
            timeout_s=400,
        )
        dropped = log.read_text().count(" dropped ")
    assert got.rc == 0, got.output[-3000:] + got.console[-2000:]
    text = " ".join(got.output.split())
    assert dropped > 100  # the syncs reached the drive, which dropped them
    assert "Path verdict: honest_flush, inferred" in text
    assert "Trust the storage? Probably, not proven:" in text
    assert "Trust the storage? Yes" not in text
    assert "fsyncbench powercut" in text.split("Next step:")[1][:300]
