"""The lab guest (lab/guest.py): QEMU with TCG on this machine's root over 9p, the lab drive
as an NVMe disk with a volatile write cache (issue 30, item 2)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from labtools import load

guest = load("guest")
cuts = load("cuts")
#: the first audit only needs to show who decides: the lab's short budgets (lab/audits.py)
QUICK = load("audits").QUICK_AUDIT
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


def test_audit_of_a_lying_drive_as_qemus_nvme_is_unverifiable_then_with_its_model_hidden_no_clean_bill(
    initrd, tmp_path
):
    # the drive acknowledges every FLUSH and drops it, with the fdatasync latency an honest
    # one has under TCG (~1 ms). The hypervisor is hidden (no CPUID flag, bare-metal DMI),
    # but QEMU's NVMe controller names itself "QEMU NVMe Ctrl": an emulated disk, so the
    # VM rule decides, inferred from the model (issue 44). With the model hidden too
    # (guest.HIDE_NVME_MODEL), counters and latency cannot tell the drive from an honest
    # one, so the answer must say a power cut is what settles it (issue 30, item 3)
    results, work = tmp_path / "results", tmp_path / "drive"
    results.mkdir()
    work.mkdir()
    fsb = Path(sys.executable).with_name("fsyncbench")
    audit = f"{fsb} audit /srv --no-report --format json"
    with cuts.drive(work, "lying") as (sock, _image, log):
        got = guest.run(
            "mkfs.ext4 -q /dev/nvme0n1 && mount /dev/nvme0n1 /srv && "
            "cat /sys/block/nvme0n1/device/model && grep -c hypervisor /proc/cpuinfo; "
            f"{audit} -o /mnt/shown.json {' '.join(QUICK)} && {fsb} show /mnt/shown.json && "
            "echo ==== && "
            f"{guest.HIDE_NVME_MODEL}cat /sys/block/nvme0n1/device/model && "
            f"{audit} -o /mnt/hidden.json && {fsb} show /mnt/hidden.json",
            initrd,
            results,
            drive_socket=sock,
            timeout_s=600,
        )
        dropped = log.read_text().count(" dropped ")
    assert got.rc == 0, got.output[-3000:] + got.console[-2000:]
    shown, hidden = (" ".join(part.split()) for part in got.output.split("====", 1))
    assert dropped > 100  # the syncs reached the drive, which dropped them
    assert shown.startswith("QEMU NVMe Ctrl 0 ")  # QEMU's model; the hypervisor flag hidden
    assert "Path verdict: unverifiable (decided by virtualized-storage)" in shown
    verdict = json.loads((results / "shown.json").read_text())["verdict"]
    deciding = next(f for f in verdict["findings"] if f["stance"] == "decides")
    assert (verdict["strength"], deciding["code"]) == ("inferred", "virtualized-storage")
    assert deciding["evidence"]["virtual_disk_hint"] == "nvme0n1 model 'QEMU NVMe Ctrl'"
    assert deciding["evidence"]["hypervisor_flag"] is False
    assert "Trust the storage? Yes" not in shown
    assert hidden.startswith("LAB NVME SSD ")
    assert "Path verdict: honest_flush, inferred" in hidden
    assert "Trust the storage? Probably, not proven:" in hidden
    assert "Trust the storage? Yes" not in hidden
    assert "fsyncbench powercut" in hidden.split("Next step:")[1][:300]
