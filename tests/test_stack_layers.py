"""How each layer of a storage stack is described and classed (fsyncbench.host.layers): a
mounted filesystem (RAM, overlay, FUSE, network, nobarrier, a bind mount), a block device
at the bottom (physical, virtual or emulated, RAM, persistent memory, network, a loop
device or VHD whose file was not followed), the short stack derived for a report that
recorded no layers, and the virtual-disk hint read from the disks' models and buses. Each
layer is pinned as the whole record a report carries (kind, flush, depth, whether it holds
the bytes and whether they are volatile, the note a user reads), with the stack line
``fsyncbench host`` prints where it shows the difference."""

from __future__ import annotations

import pytest

from fsyncbench.host import layers
from fsyncbench.judge import stack
from fsyncbench.model import (
    FLUSH_DROPPED,
    FLUSH_FORWARDED,
    FLUSH_NOTHING_TO_FLUSH,
    FLUSH_PASSES_DOWN,
    FLUSH_TO_DEVICE,
    FLUSH_TO_HOST,
    FLUSH_UNKNOWN,
    BlockDevice,
    Mount,
    StorageLayer,
    StorageTarget,
)

#: What a user reads when a loop device's (or a VHD's) backing file was not recorded.
LOOP_NOT_FOLLOWED = "backing file not recorded: the storage below is unknown"
#: What a user reads under a persistent-memory device.
PMEM_NOT_JUDGED = "persistent memory: whether a DIMM backs it is not judged"

SSD = BlockDevice("sda", model="Samsung SSD 870 EVO", vendor="ATA", transport="sata")
VDA = BlockDevice("vda", transport="virtio", write_cache="write back")
QEMU_SATA = BlockDevice("sdb", model="QEMU HARDDISK", vendor="QEMU", transport="sata")


def derived(mount, disks, chain=()) -> StorageTarget:
    """A target as an old or hand-written report records it: no ``layers``."""
    return StorageTarget("/data/db", mount=mount, chain=tuple(chain), disks=tuple(disks))


# --------------------------------------------------------------------------- block devices


def test_a_physical_disk_is_stable_media_that_gets_the_flush():
    assert layers.disk_layer(SSD) == StorageLayer(
        "disk", "sda", FLUSH_TO_DEVICE, 0, True, False, device=SSD, note=""
    )
    assert layers.disk_layer(SSD, 3, "seen by its serial") == StorageLayer(
        "disk", "sda", FLUSH_TO_DEVICE, 3, True, False, device=SSD, note="seen by its serial"
    )
    bare = BlockDevice("sdc")  # no transport known: still a disk
    assert layers.disk_layer(bare) == StorageLayer(
        "disk", "sdc", FLUSH_TO_DEVICE, 0, True, False, device=bare
    )


def test_a_paravirtual_or_emulated_disk_hands_the_flush_to_the_host():
    assert layers.disk_layer(VDA, 2, "guest disk") == StorageLayer(
        "virtual-disk", "vda", FLUSH_TO_HOST, 2, True, None, device=VDA, note="guest disk"
    )
    assert layers.disk_layer(VDA) == StorageLayer(
        "virtual-disk", "vda", FLUSH_TO_HOST, 0, True, None, device=VDA, note=""
    )
    # on a SATA bus, but QEMU's model string: an emulated disk (knowledge ``emulated``)
    assert layers.disk_layer(QEMU_SATA).kind == "virtual-disk"
    assert layers.disk_layer(QEMU_SATA).flush == FLUSH_TO_HOST


def test_a_ram_disk_holds_volatile_bytes_with_nothing_to_flush():
    zram = BlockDevice("zram0", transport="zram")
    assert layers.disk_layer(zram, 1, "compressed swap") == StorageLayer(
        "ram-disk",
        "zram0",
        FLUSH_NOTHING_TO_FLUSH,
        1,
        True,
        True,
        device=zram,
        note="compressed swap",
    )
    assert layers.disk_layer(zram).note == ""
    target = StorageTarget("/scratch", chain=("zram0",), disks=(zram,))
    assert stack.chain_text(target) == "zram0 (RAM)"
    assert [layer.name for layer in stack.ram_media(target)] == ["zram0"]


def test_persistent_memory_holds_the_bytes_but_is_not_judged():
    pmem = BlockDevice("pmem0", transport="pmem")
    assert layers.disk_layer(pmem, 2) == StorageLayer(
        "pmem", "pmem0", FLUSH_UNKNOWN, 2, True, None, device=pmem, note=PMEM_NOT_JUDGED
    )
    assert layers.disk_layer(pmem, 0, "fsdax namespace0.0").note == "fsdax namespace0.0"
    # the transport is the lower-case word the readers record (fsyncbench.host._sysblock)
    assert layers.disk_layer(BlockDevice("pmem1", transport="PMEM")).kind == "disk"


def test_a_network_disk_forwards_the_flush_to_a_server_not_seen():
    nbd = BlockDevice("nbd0", transport="nbd")
    assert layers.disk_layer(nbd, 1, "server 10.0.0.2") == StorageLayer(
        "network-disk", "nbd0", FLUSH_FORWARDED, 1, True, None, device=nbd, note="server 10.0.0.2"
    )
    assert layers.disk_layer(nbd).note == ""


@pytest.mark.parametrize(
    ("name", "transport"), [("loop3", "loop"), ("PhysicalDrive2", "file-backed-virtual")]
)
def test_a_file_backed_disk_whose_file_was_not_followed_says_so(name, transport):
    device = BlockDevice(name, transport=transport)
    assert layers.disk_layer(device, 1) == StorageLayer(
        "loop", name, FLUSH_UNKNOWN, 1, False, None, device=device, note=LOOP_NOT_FOLLOWED
    )
    assert layers.disk_layer(device, 1, "VHD on D:").note == "VHD on D:"
    target = StorageTarget(
        "/mnt/img", chain=(name,), disks=(device,), layers=(layers.disk_layer(device),)
    )
    assert [layer.note for layer in stack.unfollowed(target)] == [LOOP_NOT_FOLLOWED]


# --------------------------------------------------------------------------- filesystems


def test_a_block_filesystem_records_its_options_lower_case_and_sorted():
    mount = Mount(
        "/data", "ext4", "/dev/sda1", (" RW ", "", "noatime"), ("Errors=remount-ro",), root="/"
    )
    assert layers.mount_options(mount) == {"rw", "noatime", "errors=remount-ro"}
    assert layers.mount_options(None) == set()
    assert layers.filesystem_layer(mount) == StorageLayer(
        "filesystem",
        "/data",
        FLUSH_PASSES_DOWN,
        0,
        False,
        None,
        fs_type="ext4",
        options=("errors=remount-ro", "noatime", "rw"),
        source="/dev/sda1",
        note="",
    )
    assert layers.filesystem_layer(mount, 2, "found by its device number").depth == 2
    assert layers.filesystem_layer(mount, 2, "found by its device number").note == (
        "found by its device number"
    )


def test_nobarrier_as_a_per_mount_option_drops_the_flush_too():
    mount = Mount("/data", "ext3", "/dev/sda1", ("rw", "NoBarrier"))
    layer = layers.filesystem_layer(mount)
    assert (layer.kind, layer.flush) == ("filesystem", FLUSH_DROPPED)
    assert stack.label(layer) == "ext3 /data (nobarrier)"


def test_a_bind_mount_says_which_directory_of_which_source_it_shows():
    bind = Mount("/srv/db", "xfs", "/dev/vdb1", root="/volumes/db")
    assert layers.filesystem_layer(bind).note == "bind mount of /volumes/db of /dev/vdb1"
    assert layers.filesystem_layer(bind, 0, "container volume").note == (
        "container volume; bind mount of /volumes/db of /dev/vdb1"
    )
    for root in ("/", None):  # the whole filesystem, or not known (psutil)
        whole = Mount("/srv/db", "xfs", "/dev/vdb1", root=root)
        assert layers.filesystem_layer(whole).note == ""
        assert layers.filesystem_layer(whole, 0, "n").note == "n"


@pytest.mark.parametrize("fs", ["tmpfs", "ramfs", "devtmpfs"])
def test_a_ram_filesystem_is_the_volatile_medium_itself(fs):
    mount = Mount("/dev/shm", fs, fs, ("rw", "nosuid"), root="/")
    assert layers.filesystem_layer(mount, 1, "backing file's filesystem") == StorageLayer(
        "filesystem-ram",
        "/dev/shm",
        FLUSH_NOTHING_TO_FLUSH,
        1,
        True,
        True,
        fs_type=fs,
        options=("nosuid", "rw"),
        source=fs,
        note="backing file's filesystem",
    )


@pytest.mark.parametrize("volatile", ["volatile", "fsync=volatile", "VOLATILE"])
def test_a_volatile_overlay_drops_every_sync(volatile):
    mount = Mount("/", "overlay", "overlay", ("rw",), ("lowerdir=/l", "upperdir=/u", volatile))
    layer = layers.filesystem_layer(mount, 0, "container root")
    assert (layer.kind, layer.flush, layer.note, layer.holds_bytes) == (
        "overlay",
        FLUSH_DROPPED,
        "container root",
        False,
    )
    assert stack.label(layer) == "overlay / (volatile)"


def test_an_overlay_passes_syncs_to_its_upper_directory():
    mount = Mount("/", "overlay", "overlay", ("rw",), ("lowerdir=/l", "upperdir=/var/u"))
    assert layers.overlay_volatile(layers.mount_options(mount)) is False
    assert layers.overlay_volatile({"fsync=volatile"}) is True
    assert layers.overlay_volatile({"volatile"}) is True
    assert layers.overlay_volatile({"fsync=strict"}) is False
    layer = layers.filesystem_layer(mount)
    assert (layer.kind, layer.flush, layer.fs_type, layer.source) == (
        "overlay",
        FLUSH_PASSES_DOWN,
        "overlay",
        "overlay",
    )
    assert layers.overlay_upperdir(mount) == "/var/u"


def test_the_upper_directory_of_an_overlay_as_the_kernel_prints_it():
    assert layers.overlay_upperdir(Mount("/", "overlay", "overlay", ("upperdir=/a",))) == "/a"
    assert layers.overlay_upperdir(Mount("/", "overlay", "overlay", ("upperdir=",))) is None
    assert layers.overlay_upperdir(Mount("/", "overlay", "overlay", ("lowerdir=/l",))) is None
    # the superblock options (mountinfo's last field) are read first
    both = Mount("/", "overlay", "overlay", ("upperdir=/per-mount",), ("upperdir=/super",))
    assert layers.overlay_upperdir(both) == "/super"


@pytest.mark.parametrize("fs", ["fuse", "fuse.sshfs", "fuseblk"])
def test_a_fuse_filesystem_forwards_syncs_to_its_daemon(fs):
    mount = Mount("/mnt/remote", fs, "user@host:", ("rw",))
    assert layers.filesystem_layer(mount, 0, "sshfs") == StorageLayer(
        "fuse",
        "/mnt/remote",
        FLUSH_FORWARDED,
        0,
        False,
        None,
        fs_type=fs,
        options=("rw",),
        source="user@host:",
        note="sshfs",
    )


def test_a_network_filesystem_forwards_syncs_to_its_server():
    mount = Mount("/mnt/nfs", "nfs4", "server:/export", ("rw", "hard"))
    assert layers.filesystem_layer(mount, 1, "automounted") == StorageLayer(
        "network-fs",
        "/mnt/nfs",
        FLUSH_FORWARDED,
        1,
        False,
        None,
        fs_type="nfs4",
        options=("hard", "rw"),
        source="server:/export",
        note="automounted",
    )


# --------------------------------------------------------------------------- derived stacks


def test_an_old_report_gets_its_chain_of_block_layers_back_by_name():
    """dm, md and partitions named in ``chain`` sit between the filesystem and the disk,
    each one level deeper, and pass the flush down; the disk is the media."""
    mount = Mount("/data", "ext4", "/dev/mapper/vg-data")
    derived_stack = layers.derived_layers(mount, (SSD,), ("dm-0", "md127", "sda2", "sda"))
    assert derived_stack == (
        layers.filesystem_layer(mount, 0),
        StorageLayer("dm", "dm-0", FLUSH_PASSES_DOWN, 1, device=BlockDevice("dm-0")),
        StorageLayer("md", "md127", FLUSH_PASSES_DOWN, 2, device=BlockDevice("md127")),
        StorageLayer("partition", "sda2", FLUSH_PASSES_DOWN, 3, device=BlockDevice("sda2")),
        layers.disk_layer(SSD, 4),
    )
    target = derived(mount, (SSD,), ("dm-0", "md127", "sda2", "sda"))
    assert stack.chain_text(target) == "ext4 /data → dm-0 → md127 → sda2 → sda"
    assert stack.non_media_devices(target) == {"dm-0", "md127", "sda2"}
    assert stack.media_devices(target) == ["sda"]


def test_chain_devices_are_classed_by_their_kernel_name_prefix():
    """``dm-N`` is device-mapper, ``mdN`` software RAID; any other name is a partition."""
    mount = Mount("/data", "ext4", "/dev/x")
    kinds = [layer.kind for layer in layers.derived_layers(mount, (), ("dmz0", "mdx", "nvme0n1p1"))]
    assert kinds == ["filesystem", "partition", "md", "partition"]


def test_a_loop_device_in_an_old_chain_is_an_unfollowed_file():
    mount = Mount("/mnt/img", "ext4", "/dev/loop0")
    derived_stack = layers.derived_layers(mount, (VDA,), ("loop0", "vda"))
    loop0 = BlockDevice("loop0", transport="loop")
    assert derived_stack == (
        layers.filesystem_layer(mount, 0),
        StorageLayer("loop", "loop0", FLUSH_UNKNOWN, 1, device=loop0, note=LOOP_NOT_FOLLOWED),
        layers.disk_layer(VDA, 2),
    )
    assert stack.chain_text(derived(mount, (VDA,), ("loop0", "vda"))) == (
        "ext4 /mnt/img → loop0 → vda"
    )


def test_a_loop_device_recorded_as_the_disk_holds_nothing():
    """Older walks stopped at the loop device and recorded it as the disk."""
    mount = Mount("/mnt/img", "ext4", "/dev/loop0")
    loop0 = BlockDevice("loop0", transport="loop")
    target = derived(mount, (loop0,), ("loop0",))
    assert stack.layers(target) == (
        layers.filesystem_layer(mount, 0),
        StorageLayer("loop", "loop0", FLUSH_UNKNOWN, 1, device=loop0, note=LOOP_NOT_FOLLOWED),
    )
    assert stack.media(target) == []


def test_a_derived_stack_without_a_mount_starts_at_its_first_device():
    assert layers.derived_layers(None, (SSD,), ("sda1", "sda")) == (
        StorageLayer("partition", "sda1", FLUSH_PASSES_DOWN, 0, device=BlockDevice("sda1")),
        layers.disk_layer(SSD, 1),
    )
    assert layers.derived_layers(None, (SSD, VDA)) == (
        layers.disk_layer(SSD, 0),
        layers.disk_layer(VDA, 0),
    )
    assert layers.derived_layers(None, ()) == ()


def test_a_ram_filesystem_ends_a_derived_stack():
    mount = Mount("/dev/shm", "tmpfs", "tmpfs")
    assert layers.derived_layers(mount, (SSD,), ("sda",)) == (layers.filesystem_layer(mount),)
    assert stack.chain_text(derived(mount, (SSD,), ("sda",))) == "tmpfs /dev/shm (RAM)"


# --------------------------------------------------------------------------- virtual disks


def test_emulated_disks_are_named_by_their_emulator():
    assert layers.emulated_by(QEMU_SATA) == "QEMU"
    assert layers.emulated_by(BlockDevice("nvme0n1", model="QEMU NVMe Ctrl")) == "QEMU"
    assert layers.emulated_by(BlockDevice("sda", model="VBOX HARDDISK")) == "VirtualBox"
    assert layers.emulated_by(SSD) is None
    assert layers.emulated_by(BlockDevice("sda")) is None


def test_the_virtual_disk_hint_names_each_virtual_disk_and_why():
    vbox = BlockDevice("sdc", model="VBOX HARDDISK", transport="sata")
    both = BlockDevice("vdb", model="QEMU HARDDISK", vendor="QEMU", transport="virtio")
    assert layers.virtual_disk_hint([SSD, vbox, VDA, both]) == (
        "sdc model 'VBOX HARDDISK'; vda bus virtio; vdb model 'QEMU QEMU HARDDISK' and bus virtio"
    )
    assert layers.virtual_disk_hint((QEMU_SATA,)) == "sdb model 'QEMU QEMU HARDDISK'"
    windows = BlockDevice("PhysicalDrive0", transport="virtual")
    assert layers.virtual_disk_hint([windows]) == "PhysicalDrive0 bus virtual"


def test_no_virtual_disk_hint_from_physical_disks_or_a_mounted_vhd():
    vhd = BlockDevice("PhysicalDrive1", model="Msft Virtual Disk", transport="file-backed-virtual")
    assert layers.virtual_disk_hint([SSD, vhd]) is None
    assert layers.virtual_disk_hint([]) is None
    assert (
        layers.virtual_disk_hint([BlockDevice("sda"), BlockDevice("zram0", transport="zram")])
        is None
    )
