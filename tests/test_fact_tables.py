"""Every member of every fact table the verdict rests on, one test each (issue 45): a table
narrowed to one member (``RAM_FILESYSTEMS`` to tmpfs alone) keeps every test that uses only
its first member passing, so each member is named here by hand, from the table's sources
(fsyncbench/host/layers.py, fsyncbench/judge/counter_rules.py, fsyncbench/host/_raidcli.py)
and never read back from the table itself."""

from __future__ import annotations

import pytest
from factories import flush, host

from fsyncbench.host import _raidcli, layers
from fsyncbench.judge import counter_rules, engine, rule_facts
from fsyncbench.model import (
    FLUSH_DROPPED,
    FLUSH_FORWARDED,
    FLUSH_NOTHING_TO_FLUSH,
    FLUSH_PASSES_DOWN,
    FLUSH_TO_HOST,
    NO_FLUSH,
    PROTECTION_FAILED,
    PROTECTION_OK,
    BlockDevice,
    Mount,
)


@pytest.mark.parametrize("fs", ["tmpfs", "ramfs", "devtmpfs"])
def test_every_ram_filesystem_holds_its_bytes_in_ram_and_is_no_flush(fs):
    layer = layers.filesystem_layer(Mount("/data", fs, fs))
    assert (layer.kind, layer.flush, layer.volatile) == (
        "filesystem-ram",
        FLUSH_NOTHING_TO_FLUSH,
        True,
    )
    assert engine.judge(host(fs_type=fs), [flush("fdatasync", 1_000)]).path_verdict == NO_FLUSH


@pytest.mark.parametrize(
    "fs",
    [
        "nfs",
        "nfs4",
        "cifs",
        "smb3",
        "smbfs",
        "9p",
        "virtiofs",
        "ceph",
        "glusterfs",
        "lustre",
        "afs",
        "vboxsf",
        "prl_fs",
        "vmhgfs",
    ],
)
def test_every_network_filesystem_forwards_the_flush(fs):
    layer = layers.filesystem_layer(Mount("/data", fs, "server:/export"))
    assert (layer.kind, layer.flush) == ("network-fs", FLUSH_FORWARDED)


def test_a_local_filesystem_passes_the_flush_down():
    assert layers.filesystem_layer(Mount("/data", "ext4", "/dev/sda1")).flush == FLUSH_PASSES_DOWN


@pytest.mark.parametrize(
    ("fs", "option"),
    [("ext4", "nobarrier"), ("ext4", "barrier=0"), ("f2fs", "fsync_mode=nobarrier")],
)
def test_every_option_that_stops_cache_flushes_drops_them(fs, option):
    layer = layers.filesystem_layer(Mount("/data", fs, "/dev/sda1", ("rw",), (option,)))
    assert layer.flush == FLUSH_DROPPED
    assert layers.filesystem_layer(Mount("/data", fs, "/dev/sda1", ("rw",))).flush != FLUSH_DROPPED


@pytest.mark.parametrize(
    ("transports", "kind", "flush_to"),
    [
        (["zram", "ram", "null_blk"], "ram-disk", FLUSH_NOTHING_TO_FLUSH),
        (["nbd", "rbd", "iscsi", "nvme-fabrics"], "network-disk", FLUSH_FORWARDED),
        (["virtio", "xen", "hyperv", "uml", "virtual"], "virtual-disk", FLUSH_TO_HOST),
        (["loop", "file-backed-virtual"], "loop", None),
    ],
)
def test_every_transport_of_a_kind_makes_that_layer(transports, kind, flush_to):
    for transport in transports:
        layer = layers.disk_layer(BlockDevice("d0", transport=transport))
        assert layer.kind == kind, transport
        if flush_to is not None:
            assert layer.flush == flush_to, transport


@pytest.mark.parametrize(
    "preloaded",
    [
        "/usr/lib/x86_64-linux-gnu/libeatmydata.so",
        "/opt/eatmydata/eatmydata.so",  # no "lib" prefix: the "eatmydata" entry
        "/usr/lib64/nosync/libnosync.so",
        "/usr/lib/disable-fsync.so",
        "/usr/local/lib/nosync.so",  # nosync's own name, no "lib" prefix
    ],
)
def test_every_sync_disabling_library_is_named(preloaded):
    assert rule_facts._sync_disabling([preloaded, "/usr/lib/libjemalloc.so"]) == [preloaded]


@pytest.mark.parametrize("primitive", ["O_DSYNC", "O_SYNC"])
def test_every_sync_write_primitive_may_reach_the_media_as_fua(primitive):
    fua = host(disks=(BlockDevice("sda", fua=True, write_cache="write back"),))
    assert counter_rules._fua_may_carry(flush(primitive, 1_000_000), fua, None)
    assert not counter_rules._fua_may_carry(flush("fdatasync", 1_000_000), fua, None)


@pytest.mark.parametrize("state", ["Optimal", "OK", "Okay", "Ready", "Charged", "ZMM Optimal"])
def test_every_ready_backup_power_word(state):
    assert _raidcli.protection_of(state) == PROTECTION_OK


@pytest.mark.parametrize(
    "state", ["Failed", "Absent", "Not Installed", "Not Present", "Missing", "Dead", "Replace"]
)
def test_every_failed_backup_power_word(state):
    assert _raidcli.protection_of(state) == PROTECTION_FAILED
