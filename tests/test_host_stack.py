"""The storage stack walk (fsyncbench.host._stack) on fake /proc and /sys trees laid out like
the kernel's: every layer down to the medium holding the bytes, and what each does with a
flush. Real stacks built on this machine are in test_real_stacks.py."""

from __future__ import annotations

import pytest
import this_platform
from test_host_linux import FakeRoot, line

from fsyncbench.host import _linux, counter_devices
from fsyncbench.judge import stack
from fsyncbench.model import (
    FLUSH_DROPPED,
    FLUSH_FORWARDED,
    FLUSH_FSYNCS_BACKING_FILE,
    FLUSH_NOTHING_TO_FLUSH,
    FLUSH_PASSES_DOWN,
    FLUSH_TO_DEVICE,
    FLUSH_TO_HOST,
)

#: Linux's host collector over recorded /proc and /sys trees (this_platform.linux_trees)
pytestmark = this_platform.linux_trees


def target(fake: FakeRoot, path: str):
    return _linux.storage_target(path, str(fake.root))


def kinds(t):
    return [(layer.kind, layer.name, layer.flush, layer.depth) for layer in t.layers]


def test_loop_backing_file_on_tmpfs_ends_in_ram(fake):
    fake.virtual("loop0", "7:0", backing_file="/dev/shm/img")
    fake.mountinfo(
        line("0:25", "/dev/shm", "tmpfs", "tmpfs", 20),
        line("7:0", "/mnt/img", "ext4", "/dev/loop0", 40),
    )
    t = target(fake, "/mnt/img/journal")
    assert kinds(t) == [
        ("filesystem", "/mnt/img", FLUSH_PASSES_DOWN, 0),
        ("loop", "loop0", FLUSH_FSYNCS_BACKING_FILE, 1),
        ("filesystem-ram", "/dev/shm", FLUSH_NOTHING_TO_FLUSH, 2),
    ]
    assert t.chain == ("loop0",)
    assert t.disks == ()  # no block device holds the bytes: RAM does
    assert [layer.name for layer in stack.ram_media(t)] == ["/dev/shm"]
    assert stack.chain_text(t) == "ext4 /mnt/img → loop0 → tmpfs /dev/shm (RAM)"
    assert "backing file /dev/shm/img" in t.layers[1].note
    assert counter_devices(t) == ["loop0"]  # counted, but it holds nothing


def test_loop_in_loop_on_a_partition_of_a_sata_disk(fake):
    sda = fake.sata_disk("sda", "8:0", 0)
    fake.partition(sda, "sda1", "8:1")
    fake.virtual("loop0", "7:0", backing_file="/srv/outer.img")
    fake.virtual("loop1", "7:1", backing_file="/mnt/outer/inner.img")
    fake.mountinfo(
        line("8:1", "/", "ext4", "/dev/sda1", 20),
        line("7:0", "/mnt/outer", "xfs", "/dev/loop0", 30),
        line("7:1", "/mnt/inner", "ext4", "/dev/loop1", 40),
    )
    t = target(fake, "/mnt/inner")
    assert kinds(t) == [
        ("filesystem", "/mnt/inner", FLUSH_PASSES_DOWN, 0),
        ("loop", "loop1", FLUSH_FSYNCS_BACKING_FILE, 1),
        ("filesystem", "/mnt/outer", FLUSH_PASSES_DOWN, 2),
        ("loop", "loop0", FLUSH_FSYNCS_BACKING_FILE, 3),
        ("filesystem", "/", FLUSH_PASSES_DOWN, 4),
        ("partition", "sda1", FLUSH_PASSES_DOWN, 5),
        ("disk", "sda", FLUSH_TO_DEVICE, 6),
    ]
    assert t.chain == ("loop1", "loop0", "sda1", "sda")
    assert [d.name for d in t.disks] == ["sda"]
    assert counter_devices(t) == ["loop1", "loop0", "sda"]  # partitions have no counters
    assert stack.top_block_device(t) == "loop1"
    assert stack.media_devices(t) == ["sda"]


def test_a_loop_cycle_is_cut(fake):
    fake.virtual("loop0", "7:0", backing_file="/mnt/self/img")
    fake.mountinfo(line("7:0", "/mnt/self", "ext4", "/dev/loop0", 40))
    t = target(fake, "/mnt/self")
    assert [layer.name for layer in t.layers] == ["/mnt/self", "loop0", "/mnt/self"]
    assert stack.media(t) == []
    assert [layer.name for layer in stack.unfollowed(t)] == ["/mnt/self"]


def test_deleted_backing_file_is_followed_and_named(fake):
    fake.sata_disk("sda", "8:0", 0)
    fake.virtual("loop3", "7:3", backing_file="/var/img (deleted)")
    fake.mountinfo(
        line("8:0", "/", "ext4", "/dev/sda", 20), line("7:3", "/mnt", "ext4", "/dev/loop3", 40)
    )
    t = target(fake, "/mnt")
    assert "deleted" in t.layers[1].note
    assert [d.name for d in t.disks] == ["sda"]


def test_zram_and_brd_are_ram_media(fake):
    fake.virtual("zram0", "253:0", write_cache="write through")
    fake.virtual("ram0", "1:0", write_cache="write through")
    fake.mountinfo(
        line("253:0", "/z", "ext4", "/dev/zram0", 30), line("1:0", "/r", "ext2", "/dev/ram0", 31)
    )
    for path, name in (("/z", "zram0"), ("/r", "ram0")):
        t = target(fake, path)
        assert kinds(t)[1] == ("ram-disk", name, FLUSH_NOTHING_TO_FLUSH, 1)
        assert t.layers[1].volatile is True
        assert [d.name for d in t.disks] == [name]
        assert stack.chain_text(t).endswith(f"{name} (RAM)")


def test_nbd_forwards_flushes_to_a_server(fake):
    fake.virtual("nbd0", "43:0")
    fake.mountinfo(line("43:0", "/n", "ext4", "/dev/nbd0", 30))
    t = target(fake, "/n")
    assert kinds(t)[1] == ("network-disk", "nbd0", FLUSH_FORWARDED, 1)
    assert stack.forwarding_layers(t)[0].name == "nbd0"


def test_dm_over_md_over_two_disks(fake):
    sda = fake.sata_disk("sda", "8:0", 0)
    sdb = fake.sata_disk("sdb", "8:16", 1)
    md = fake.stacked("md0", "9:0", [sda, sdb])
    fake.stacked("dm-0", "254:0", [md], dm_name="vg-data")
    fake.mountinfo(line("254:0", "/data", "xfs", "/dev/mapper/vg-data", 30))
    t = target(fake, "/data")
    assert [(layer.kind, layer.name, layer.depth) for layer in t.layers] == [
        ("filesystem", "/data", 0),
        ("dm", "dm-0", 1),
        ("md", "md0", 2),
        ("disk", "sda", 3),
        ("disk", "sdb", 3),
    ]
    assert t.layers[1].note == "vg-data"
    assert [d.name for d in t.disks] == ["sda", "sdb"]
    assert stack.chain_text(t) == "xfs /data → dm-0 → md0 → sda + sdb"


def test_virtio_disk_hands_the_flush_to_the_host(fake):
    fake.disk(
        "vda",
        "pci0000:00/0000:00:05.0/virtio2",
        "254:0",
        queue={"rotational": "1", "write_cache": "write back"},
    )
    fake.mountinfo(line("254:0", "/", "ext4", "/dev/vda", 20))
    t = target(fake, "/srv")
    assert kinds(t)[1] == ("virtual-disk", "vda", FLUSH_TO_HOST, 1)


@pytest.mark.parametrize("spelling", ["volatile", "fsync=volatile"])
def test_overlay_upper_dir_is_followed_and_volatile_in_every_spelling(fake, spelling):
    fake.nvme_disk()
    fake.mountinfo(
        line("259:0", "/", "ext4", "/dev/nvme0n1", 20),
        line(
            "0:50",
            "/merged",
            "overlay",
            "overlay",
            60,
            super_options=f"rw,lowerdir=/l,upperdir=/var/up/u,workdir=/var/up/w,{spelling}",
        ),
    )
    t = target(fake, "/merged/app")
    assert kinds(t) == [
        ("overlay", "/merged", FLUSH_DROPPED, 0),
        ("filesystem", "/", FLUSH_PASSES_DOWN, 1),
        ("disk", "nvme0n1", FLUSH_TO_DEVICE, 2),
    ]
    assert "overlay upper directory /var/up/u" in t.layers[1].note
    assert stack.volatile_overlays(t)[0].name == "/merged"


def test_overlay_with_a_relative_upper_dir_says_it_cannot_follow(fake):
    fake.mountinfo(
        line(
            "0:50",
            "/merged",
            "overlay",
            "overlay",
            60,
            super_options="rw,lowerdir=l,upperdir=up,workdir=w",
        )
    )
    t = target(fake, "/merged")
    assert kinds(t) == [("overlay", "/merged", FLUSH_PASSES_DOWN, 0)]
    assert "relative" in t.layers[0].note
    assert stack.unfollowed(t) == list(t.layers)


def test_fuse_forwards_and_names_its_source(fake):
    fake.mountinfo(line("0:60", "/remote", "fuse.sshfs", "me@host:/srv", 70))
    t = target(fake, "/remote/x")
    (layer,) = t.layers
    assert (layer.kind, layer.flush, layer.fs_type, layer.source) == (
        "fuse",
        FLUSH_FORWARDED,
        "fuse.sshfs",
        "me@host:/srv",
    )


def test_fuseblk_continues_to_its_block_device(fake):
    sdb = fake.sata_disk("sdb", "8:16", 1)
    fake.partition(sdb, "sdb1", "8:17")
    fake.mountinfo(line("8:17", "/win", "fuseblk", "/dev/sdb1", 70))
    t = target(fake, "/win")
    assert [layer.kind for layer in t.layers] == ["fuse", "partition", "disk"]


def test_bind_mount_names_its_source_directory(fake):
    fake.sata_disk("sda", "8:0", 0)
    fake.mountinfo(
        line("8:0", "/", "ext4", "/dev/sda", 20),
        line("8:0", "/jail/data", "ext4", "/dev/sda", 50, root="/srv/data"),
    )
    t = target(fake, "/jail/data")
    assert "bind mount of /srv/data of /dev/sda" in t.layers[0].note
    assert [d.name for d in t.disks] == ["sda"]


def test_nobarrier_filesystem_drops_flushes(fake):
    fake.sata_disk("sda", "8:0", 0)
    fake.mountinfo(line("8:0", "/", "ext4", "/dev/sda", 20, super_options="rw,nobarrier"))
    t = target(fake, "/")
    assert t.layers[0].flush == FLUSH_DROPPED
    assert stack.chain_text(t) == "ext4 / (nobarrier) → sda"


def test_a_loop_device_on_a_block_device_follows_the_device_not_devtmpfs(fake):
    """losetup /dev/loop2: the backing 'file' is a device node on devtmpfs; the bytes are
    wherever loop2 keeps them, not in RAM."""
    sda = fake.sata_disk("sda", "8:0", 0)
    fake.virtual("loop2", "7:2", backing_file="/srv/disk.img")
    fake.virtual("loop3", "7:3", backing_file="/dev/loop2")
    fake.mountinfo(
        line("0:5", "/dev", "devtmpfs", "udev", 10),
        line("8:0", "/", "ext4", "/dev/sda", 20),
        line("7:3", "/mnt", "ext4", "/dev/loop3", 40),
    )
    t = target(fake, "/mnt")
    assert [layer.name for layer in t.layers] == ["/mnt", "loop3", "loop2", "/", "sda"]
    assert stack.ram_media(t) == []
    assert [d.name for d in t.disks] == [sda.name]


def test_a_loop_device_on_a_device_node_missing_from_sys_is_not_taken_for_ram(fake):
    """losetup /dev/mapper/vg-lv where device-mapper's block device is not under /sys (a
    stale node, a recording without it): the node is on devtmpfs, but the bytes are not in
    RAM; the walk stops there and says so instead of finding devtmpfs's RAM medium."""
    fake.sata_disk("sda", "8:0", 0)
    fake.virtual("loop3", "7:3", backing_file="/dev/mapper/vg-lv")
    fake.mountinfo(
        line("0:5", "/dev", "devtmpfs", "udev", 10),
        line("8:0", "/", "ext4", "/dev/sda", 20),
        line("7:3", "/mnt", "ext4", "/dev/loop3", 40),
    )
    t = target(fake, "/mnt")
    assert [layer.name for layer in t.layers] == ["/mnt", "loop3"]
    assert stack.ram_media(t) == []
    assert "/dev/mapper/vg-lv is a device node whose block device is not found" in t.layers[1].note
    # a file on a RAM filesystem under /dev (not devtmpfs) is still in RAM
    fake.virtual("loop4", "7:4", backing_file="/dev/shm/img")
    fake.mountinfo(
        line("0:5", "/dev", "devtmpfs", "udev", 10),
        line("0:6", "/dev/shm", "tmpfs", "tmpfs", 11),
        line("8:0", "/", "ext4", "/dev/sda", 20),
        line("7:4", "/mnt", "ext4", "/dev/loop4", 40),
    )
    assert [m.name for m in stack.ram_media(target(fake, "/mnt"))] == ["/dev/shm"]


def test_a_loop_device_claiming_write_through_drops_flushes(fake):
    fake.sata_disk("sda", "8:0", 0)
    fake.virtual("loop0", "7:0", write_cache="write through", backing_file="/img")
    fake.mountinfo(
        line("8:0", "/", "ext4", "/dev/sda", 20), line("7:0", "/mnt", "ext4", "/dev/loop0", 40)
    )
    loop = target(fake, "/mnt").layers[1]
    assert loop.flush == FLUSH_DROPPED and "write-through" in loop.note


def test_btrfs_spanning_several_devices_lists_them_all(fake):
    """Documentation/ABI/testing/sysfs-fs-btrfs: /sys/fs/btrfs/<fsid>/devices/ links every
    member; a raid0 across a disk and a RAM-backed loop keeps half of each file in RAM."""
    sda = fake.sata_disk("sda", "8:0", 0)
    zram = fake.virtual("zram0", "253:0", write_cache="write through")
    devices = fake.root / "sys" / "fs" / "btrfs" / "0f0e-fsid" / "devices"
    fake.link(devices / "sda", sda)
    fake.link(devices / "zram0", zram)
    fake.mountinfo(line("0:40", "/pool", "btrfs", "/dev/sda", 30))
    t = target(fake, "/pool")
    assert [layer.name for layer in t.layers] == ["/pool", "sda", "zram0"]
    assert [layer.name for layer in stack.ram_media(t)] == ["zram0"]


def test_a_chain_deeper_than_the_limit_says_where_it_stopped(fake):
    from fsyncbench.host import _stack

    lines = [line("0:25", "/dev/shm", "tmpfs", "tmpfs", 20)]
    backing = "/dev/shm/img"
    for i in range(_stack.MAX_DEPTH + 2):
        fake.virtual(f"loop{i}", f"7:{i}", backing_file=backing)
        backing = f"/dev/loop{i}"
    top = _stack.MAX_DEPTH + 1
    lines.append(line(f"7:{top}", "/deep", "ext4", f"/dev/loop{top}", 40))
    fake.mountinfo(*lines)
    t = target(fake, "/deep")
    assert "more than 16 layers deep" in t.layers[-1].note
    assert stack.ram_media(t) == []


def test_a_chain_of_block_devices_deeper_than_the_limit_stops_at_the_limit(fake):
    """The block half of the walk's depth guard on its own: loop devices backed by loop
    devices (losetup on a device node), the last on a disk, so no filesystem lies below
    where the other half of the guard would stop the walk instead."""
    from fsyncbench.host import _stack

    fake.sata_disk("sda", "8:0", 0)
    backing = "/dev/sda"
    for i in range(_stack.MAX_DEPTH + 2):
        fake.virtual(f"loop{i}", f"7:{i}", backing_file=backing)
        backing = f"/dev/loop{i}"
    top = _stack.MAX_DEPTH + 1
    fake.mountinfo(
        line("0:5", "/dev", "devtmpfs", "udev", 10),
        line(f"7:{top}", "/deep", "ext4", f"/dev/loop{top}", 40),
    )
    t = target(fake, "/deep")
    assert "more than 16 layers deep" in t.layers[-1].note
    assert max(layer.depth for layer in t.layers) == _stack.MAX_DEPTH
    assert "sda" not in [layer.name for layer in t.layers]


def test_a_chain_of_overlays_deeper_than_the_limit_stops_at_the_limit(fake):
    """The filesystem half of the depth guard on its own: overlays whose upper directories
    lie on further overlays, one filesystem a layer with no block device between them."""
    from fsyncbench.host import _stack

    fake.nvme_disk()
    n = _stack.MAX_DEPTH + 3
    lines = [line("259:0", "/", "ext4", "/dev/nvme0n1", 20)]
    for i in range(n):
        upper = f"/o{i + 1}/up" if i + 1 < n else "/var/up"
        lines.append(
            line(
                f"0:{60 + i}",
                f"/o{i}",
                "overlay",
                "overlay",
                60 + i,
                super_options=f"rw,lowerdir=/l,upperdir={upper},workdir={upper}w",
            )
        )
    fake.mountinfo(*lines)
    t = target(fake, "/o0/app")
    assert "more than 16 layers deep" in t.layers[-1].note
    assert max(layer.depth for layer in t.layers) == _stack.MAX_DEPTH
    assert "nvme0n1" not in [layer.name for layer in t.layers]
