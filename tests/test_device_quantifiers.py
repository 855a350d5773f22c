"""Every quantifier over the devices of a stack, tested both ways (issue 45): a stack of two
disks where exactly one has the property. With ``all`` flipped to ``any`` one device lends
the property to the rest (a consumer SSD beside a PLP drive allowed a fast flush); with
``any`` flipped to ``all`` one device takes it from all. Each test holds the mixed stack
and, beside it, the stack where every disk has the property, so both flips fail it."""

from __future__ import annotations

import dataclasses

from factories import flush, host

from fsyncbench.judge import cache_rules, devices, engine, platform_rules, rule_facts, stack
from fsyncbench.model import (
    POWER_PROTECTION_NV_CACHE,
    POWER_PROTECTION_USER_POLICY,
    PROTECTION_NOT_READY,
    PROTECTION_OK,
    BlockDevice,
    Mount,
    RaidController,
    StorageLayer,
    StorageTarget,
    Virtualization,
)

BARE = Virtualization(hypervisor_flag=False)
SSD = BlockDevice("sda", rotational=False, write_cache="write back", model="Samsung SSD 870")
PLP_SSD = dataclasses.replace(SSD, name="sdb", vendor="ATA", model="INTEL SSDSC2KB48")
HDD = BlockDevice("sdc", rotational=True, write_cache="write back", model="WDC WD40EFRX-68N")
SSHD = dataclasses.replace(HDD, name="sdd", vendor="ATA", model="ST1000LM014-1EJ1")
CACHED = RaidController(
    "megaraid_sas",
    "Broadcom/LSI MegaRAID",
    write_cache="write back",
    protection=PROTECTION_OK,
    protection_detail="CacheVault Optimal",
    drive_cache="disabled",
    read_by="storcli64 /call show all",
)


def _class(*disks: BlockDevice) -> devices.DeviceClass:
    return devices.device_class(host(disks=disks, virt=BARE), "fdatasync")


def test_controllers_are_the_ones_in_front_of_every_disk():
    a = dataclasses.replace(HDD, controller=CACHED)
    b = dataclasses.replace(HDD, name="sde", controller=CACHED)
    assert devices.controllers([a, b]) == [CACHED, CACHED]
    assert devices.controllers([a, HDD]) == []  # one disk on its own: judged on its disks
    hba = dataclasses.replace(CACHED, has_cache=False)
    assert devices.controllers([a, dataclasses.replace(HDD, controller=hba)]) == []


def test_a_controller_cache_is_protected_only_when_every_volume_says_so():
    ready = dataclasses.replace(HDD, controller=CACHED)
    learning = dataclasses.replace(
        HDD, name="sde", controller=dataclasses.replace(CACHED, protection=PROTECTION_NOT_READY)
    )
    assert devices.controller_protection([ready, dataclasses.replace(ready, name="sdf")])
    assert devices.controller_protection([ready, learning]) == ""


def test_a_reported_power_protected_cache_needs_every_disk_and_names_the_weaker_report():
    nv = dataclasses.replace(SSD, power_protection=(POWER_PROTECTION_NV_CACHE,))
    policy = dataclasses.replace(SSD, name="sdb", power_protection=(POWER_PROTECTION_USER_POLICY,))
    assert devices.reported_protection([nv, dataclasses.replace(nv, name="sdc")]) == (
        devices.REPORTED_NV_CACHE
    )
    assert devices.reported_protection([nv, SSD]) == ""
    assert devices.reported_protection([nv, policy]) == devices.REPORTED_USER_POLICY


def test_a_fast_flush_is_allowed_only_when_every_disk_allows_it():
    through = dataclasses.replace(SSD, write_cache="write through")
    assert _class(through, dataclasses.replace(through, name="sdb")).floor_ns == (
        devices.PLP_SSD_FLOOR_NS
    )
    assert _class(through, SSD).floor_ns == devices.CONSUMER_SSD_FLOOR_NS
    assert _class(PLP_SSD, dataclasses.replace(PLP_SSD, name="sdc")).floor_ns == (
        devices.PLP_SSD_FLOOR_NS
    )
    assert _class(PLP_SSD, SSD).floor_ns == devices.CONSUMER_SSD_FLOOR_NS


def test_a_spinning_or_solid_state_class_needs_every_disk_to_be_one():
    assert _class(HDD, dataclasses.replace(HDD, name="sde")).floor_ns == devices.SPINNING_FLOOR_NS
    mixed = _class(HDD, SSD)
    assert mixed.floor_ns == devices.REAL_IO_FLOOR_NS and mixed.name == "block device"
    assert _class(SSD, dataclasses.replace(SSD, name="sdb")).floor_ns == (
        devices.CONSUMER_SSD_FLOOR_NS
    )


def test_a_hybrid_floor_needs_every_disk_to_be_a_hybrid():
    assert _class(SSHD, dataclasses.replace(SSHD, name="sdf")).floor_ns == (
        devices.CONSUMER_SSD_FLOOR_NS
    )
    assert _class(SSHD, HDD).floor_ns == devices.SPINNING_FLOOR_NS


def _target(*disks: BlockDevice) -> StorageTarget:
    mount = Mount("/data", "btrfs", "/dev/sda")
    return StorageTarget(
        "/data",
        mount,
        disks=disks,
        layers=(
            StorageLayer("filesystem", "/data", "passes-down", 0, fs_type="btrfs"),
            *(StorageLayer("disk", d.name, "to-device", 1, True, False, device=d) for d in disks),
        ),
    )


def test_a_write_back_cache_on_any_disk_holding_the_bytes_counts():
    through = dataclasses.replace(SSD, name="sdb", write_cache="write through")
    assert stack.write_back_media(_target(SSD, through)) is True
    assert (
        stack.write_back_media(_target(through, dataclasses.replace(through, name="sdc"))) is False
    )


def test_cloud_block_storage_needs_every_disk_to_be_one():
    ebs = BlockDevice("nvme1n1", model="Amazon Elastic Block Store", rotational=False)
    both = host(disks=(ebs, dataclasses.replace(ebs, name="nvme2n1")), virt=BARE)
    r = flush("fdatasync", 1_000_000)
    assert platform_rules.rule_cloud_block_storage(rule_facts.Facts(both, (r,)), r) is not None
    mixed = host(disks=(ebs, SSD), virt=BARE)
    assert platform_rules.rule_cloud_block_storage(rule_facts.Facts(mixed, (r,)), r) is None


def test_a_published_loss_needs_every_disk_to_be_that_model():
    lost = BlockDevice("sda", vendor="ATA", model="TOSHIBA THNSNH06", rotational=False)
    r = flush("fdatasync", 1_000_000)
    both = host(disks=(lost, dataclasses.replace(lost, name="sdb")), virt=BARE)
    assert engine.judge(both, [r]).decided_by == "published-power-cut-loss"
    mixed = host(disks=(lost, SSD), virt=BARE)
    assert engine.judge(mixed, [r]).decided_by != "published-power-cut-loss"


def test_ram_media_are_all_the_media_or_the_device_classes_still_apply():
    zram = BlockDevice("zram0", transport="zram")
    only_ram = host(disks=(zram, BlockDevice("zram1", transport="zram")), virt=BARE)
    assert rule_facts._all_ram(only_ram) is True
    assert rule_facts._all_ram(host(disks=(zram, SSD), virt=BARE)) is False


def test_a_controller_writing_through_for_any_volume_leaves_the_fast_flush_to_the_floor():
    wb = dataclasses.replace(HDD, controller=dataclasses.replace(CACHED, protection=None))
    wt = dataclasses.replace(
        HDD,
        name="sde",
        controller=dataclasses.replace(CACHED, write_cache="write through", protection=None),
    )
    r = flush("fdatasync", 100_000)

    def rule(*disks: BlockDevice):
        h = host(disks=disks, virt=BARE)
        return cache_rules.rule_controller_cache(rule_facts.Facts(h, (r,)), r)

    assert rule(wb, dataclasses.replace(wb, name="sdf"))[1].code == "controller-cache-unverified"
    assert rule(wb, wt) is None
