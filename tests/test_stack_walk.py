"""The storage stack walk (fsyncbench.host._stack) in the words a user reads and on the live
machine's paths: the exact note each layer carries where the walk stops or cannot follow
(no block device, a ZFS pool, overlay upper directories, loop backing files deleted,
relative, write-through or out of this mount namespace), stacked devices other than dm/md,
a btrfs filesystem over partitions, and the live-machine half of the loop walk (root "/"),
which asks the kernel for the identity of a loop device's backing file (LOOP_GET_STATUS64)
and compares it with the file found at its path. The kernel's loop driver, block device
nodes and sysfs are faked here, so the tests run where no loop device can be made; real
loop devices are built in test_real_stacks.py (system tier)."""

from __future__ import annotations

import errno
import os
import stat
import struct
import sys
from pathlib import Path

import pytest
import this_platform
from test_host_linux import FakeRoot, line
from test_host_stack import target

from fsyncbench.host import _mountinfo, _stack, _sysblock
from fsyncbench.judge import stack
from fsyncbench.model import (
    FLUSH_DROPPED,
    FLUSH_FSYNCS_BACKING_FILE,
    FLUSH_NOTHING_TO_FLUSH,
    FLUSH_PASSES_DOWN,
    FLUSH_TO_DEVICE,
)

#: Linux's host collector over /proc and /sys trees (this_platform.linux_trees)
pytestmark = this_platform.linux_trees


def rows(layers):
    return [(layer.kind, layer.name, layer.depth, layer.note) for layer in layers]


# --------------------------------------------------------------------------- filesystems


def test_a_filesystem_on_top_carries_no_note(fake):
    fake.sata_disk("sda", "8:0", 0)
    fake.mountinfo(line("8:0", "/", "ext4", "/dev/sda", 20))
    assert [layer.note for layer in target(fake, "/srv/db").layers] == ["", ""]


@pytest.mark.parametrize(
    ("fs_type", "source", "kind"),
    [
        ("tmpfs", "tmpfs", "filesystem-ram"),
        ("fuse.sshfs", "me@host:/srv", "fuse"),
        ("nfs4", "server:/export", "network-fs"),
    ],
)
def test_ram_fuse_and_network_filesystems_end_the_walk_without_a_note(fake, fs_type, source, kind):
    """Nothing below them is looked for: no "no block device found" note."""
    fake.mountinfo(line("0:60", "/data", fs_type, source, 70))
    assert rows(target(fake, "/data/x").layers) == [(kind, "/data", 0, "")]


def test_a_zfs_dataset_says_its_pool_is_not_followed(fake):
    fake.mountinfo(line("0:45", "/tank", "zfs", "tank/data", 30))
    (layer,) = target(fake, "/tank/db").layers
    assert layer.note == "no block device found for tank/data; the pool's devices are not followed"


def test_a_filesystem_whose_device_is_missing_from_sys_names_its_source(fake):
    fake.mountinfo(line("8:99", "/lost", "ext4", "/dev/sdq", 30))
    t = target(fake, "/lost")
    assert rows(t.layers) == [("filesystem", "/lost", 0, "no block device found for /dev/sdq")]
    assert stack.unfollowed(t) == list(t.layers)


def test_an_overlay_without_an_upper_directory_says_nothing_is_written_there(fake):
    fake.mountinfo(line("0:50", "/ro", "overlay", "overlay", 60, super_options="ro,lowerdir=/a:/b"))
    assert rows(target(fake, "/ro").layers) == [
        ("overlay", "/ro", 0, "no upper directory: nothing is written here")
    ]


def test_an_overlay_with_a_relative_upper_directory_says_so_in_full(fake):
    fake.mountinfo(
        line("0:50", "/merged", "overlay", "overlay", 60, super_options="rw,upperdir=up,workdir=w")
    )
    (layer,) = target(fake, "/merged").layers
    assert layer.note == (
        "upper directory 'up' is relative to where it was mounted: "
        "its filesystem cannot be followed"
    )


def test_a_containers_root_overlay_names_a_host_path_it_cannot_follow(fake):
    """Inside a container the root overlay's upperdir is the host's
    /var/lib/docker/overlay2/<id>/diff, which here resolves to the overlay itself."""
    upper = "/var/lib/docker/overlay2/3f9a/diff"
    fake.mountinfo(
        line(
            "0:50",
            "/",
            "overlay",
            "overlay",
            60,
            super_options=f"rw,lowerdir=/var/lib/docker/overlay2/l/AB,upperdir={upper},"
            "workdir=/var/lib/docker/overlay2/3f9a/work",
        )
    )
    assert rows(target(fake, "/app").layers) == [
        (
            "overlay",
            "/",
            0,
            f"upper directory {upper} lies on a filesystem already walked here (a "
            "container's overlay names a path of the host's mount namespace): "
            "its filesystem cannot be followed from here",
        )
    ]


def test_btrfs_over_partitions_walks_each_partition_to_its_disk(fake):
    """/sys/fs/btrfs/ also holds ``features/`` (no ``devices/``: skipped, not the end of the
    search); the members of ``<fsid>/devices/`` are partitions here, each walked to its disk
    (Documentation/ABI/testing/sysfs-fs-btrfs)."""
    sda = fake.sata_disk("sda", "8:0", 0)
    sdb = fake.sata_disk("sdb", "8:16", 1)
    sda1 = fake.partition(sda, "sda1", "8:1")
    sdb1 = fake.partition(sdb, "sdb1", "8:17")
    btrfs = fake.root / "sys" / "fs" / "btrfs"
    fake.write("sys/fs/btrfs/features/raid1c34", "0\n")
    fake.link(btrfs / "ff3c2b1a-5d6e-4f70-8a9b-0c1d2e3f4a5b" / "devices" / "sda1", sda1)
    fake.link(btrfs / "ff3c2b1a-5d6e-4f70-8a9b-0c1d2e3f4a5b" / "devices" / "sdb1", sdb1)
    fake.mountinfo(line("0:40", "/pool", "btrfs", "/dev/sda1", 30))
    t = target(fake, "/pool")
    assert [(layer.kind, layer.name, layer.depth) for layer in t.layers] == [
        ("filesystem", "/pool", 0),
        ("partition", "sda1", 1),
        ("disk", "sda", 2),
        ("partition", "sdb1", 1),
        ("disk", "sdb", 2),
    ]
    assert [d.name for d in t.disks] == ["sda", "sdb"]


# --------------------------------------------------------------------------- stacked devices


def test_an_md_array_passes_flushes_down_and_is_labelled_with_its_level(fake):
    sda = fake.sata_disk("sda", "8:0", 0)
    sdb = fake.sata_disk("sdb", "8:16", 1)
    md = fake.stacked("md0", "9:0", [sda, sdb])
    fake.write(md.relative_to(fake.root) / "md" / "level", "raid1\n")
    fake.mountinfo(line("9:0", "/data", "xfs", "/dev/md0", 30))
    layer = target(fake, "/data").layers[1]
    assert (layer.kind, layer.name, layer.flush, layer.note) == (
        "md",
        "md0",
        FLUSH_PASSES_DOWN,
        "raid1",
    )


def test_a_stacked_device_neither_dm_nor_md_is_named_stacked(fake):
    """bcache lists its backing device in ``slaves/`` like dm and md, with no dm/name or
    md/level to label it."""
    sdb = fake.sata_disk("sdb", "8:16", 1)
    fake.stacked("bcache0", "252:0", [sdb])
    fake.mountinfo(line("252:0", "/cache", "ext4", "/dev/bcache0", 30))
    assert [
        (layer.kind, layer.name, layer.flush, layer.note) for layer in target(fake, "/cache").layers
    ] == [
        ("filesystem", "/cache", FLUSH_PASSES_DOWN, ""),
        ("stacked", "bcache0", FLUSH_PASSES_DOWN, ""),
        ("disk", "sdb", FLUSH_TO_DEVICE, ""),
    ]


# --------------------------------------------------------------------------- loop devices (a recorded tree)


def test_a_loop_device_names_its_backing_file_and_the_filesystem_holding_it(fake):
    fake.sata_disk("sda", "8:0", 0)
    fake.virtual("loop0", "7:0", backing_file="/srv/disk.img")
    fake.mountinfo(
        line("8:0", "/", "ext4", "/dev/sda", 20), line("7:0", "/mnt", "ext4", "/dev/loop0", 40)
    )
    assert rows(target(fake, "/mnt").layers) == [
        ("filesystem", "/mnt", 0, ""),
        ("loop", "loop0", 1, "backing file /srv/disk.img"),
        ("filesystem", "/", 2, "holds /srv/disk.img"),
        ("disk", "sda", 3, ""),
    ]


def test_a_deleted_backing_file_is_named_without_the_kernels_suffix(fake):
    fake.sata_disk("sda", "8:0", 0)
    fake.virtual("loop3", "7:3", backing_file="/var/img (deleted)")
    fake.mountinfo(
        line("8:0", "/", "ext4", "/dev/sda", 20), line("7:3", "/mnt", "ext4", "/dev/loop3", 40)
    )
    assert rows(target(fake, "/mnt").layers)[1:3] == [
        ("loop", "loop3", 1, "backing file /var/img (deleted: still open by the loop device)"),
        ("filesystem", "/", 2, "holds /var/img"),
    ]


def test_a_write_through_loop_device_says_why_its_flushes_are_dropped(fake):
    fake.sata_disk("sda", "8:0", 0)
    fake.virtual("loop0", "7:0", write_cache="write through", backing_file="/img")
    fake.mountinfo(
        line("8:0", "/", "ext4", "/dev/sda", 20), line("7:0", "/mnt", "ext4", "/dev/loop0", 40)
    )
    loop = target(fake, "/mnt").layers[1]
    assert loop.flush == FLUSH_DROPPED
    assert loop.note == (
        "backing file /img; claims a write-through cache, so the block layer completes "
        "flushes without passing them to it (no fsync of the backing file)"
    )


def test_a_relative_backing_file_is_not_followed(fake):
    fake.virtual("loop0", "7:0", backing_file="disk.img")
    fake.mountinfo(
        line("0:25", "/", "tmpfs", "tmpfs", 20), line("7:0", "/mnt", "ext4", "/dev/loop0", 40)
    )
    t = target(fake, "/mnt")
    assert rows(t.layers) == [
        ("filesystem", "/mnt", 0, ""),
        ("loop", "loop0", 1, "backing file disk.img; not an absolute path: not followed"),
    ]
    assert stack.unfollowed(t) == [t.layers[1]]


def test_a_loop_device_on_a_partition_node_follows_the_partition(fake):
    """A partition has no /sys/block entry, only /sys/class/block (like every block device)."""
    sda = fake.sata_disk("sda", "8:0", 0)
    fake.partition(sda, "sda2", "8:2", number=2)
    fake.virtual("loop1", "7:1", backing_file="/dev/sda2")
    fake.mountinfo(
        line("0:5", "/dev", "devtmpfs", "udev", 10),
        line("7:1", "/mnt", "ext4", "/dev/loop1", 40),
    )
    t = target(fake, "/mnt")
    assert [(layer.kind, layer.name, layer.depth) for layer in t.layers] == [
        ("filesystem", "/mnt", 0),
        ("loop", "loop1", 1),
        ("partition", "sda2", 2),
        ("disk", "sda", 3),
    ]
    assert stack.ram_media(t) == []


def test_a_recorded_tree_never_asks_this_machines_kernel_about_its_loop_devices(fake, monkeypatch):
    """loop0 of a tree recorded elsewhere is not this machine's loop0."""
    asked: list[str] = []
    monkeypatch.setattr(_stack, "_loop_identity", lambda name: asked.append(name) or ("0:99", 1))
    fake.virtual("loop0", "7:0", backing_file="/dev/shm/img")
    fake.mountinfo(
        line("0:25", "/dev/shm", "tmpfs", "tmpfs", 20),
        line("7:0", "/mnt/img", "ext4", "/dev/loop0", 40),
    )
    assert rows(target(fake, "/mnt/img").layers)[2] == (
        "filesystem-ram",
        "/dev/shm",
        2,
        "holds /dev/shm/img",
    )
    assert asked == []


# --------------------------------------------------------------------------- loop devices (the live machine)


def dev_text(number: int) -> str:
    return f"{os.major(number)}:{os.minor(number)}"


class Live:
    """The walk with ``root`` "/" (the live machine), its mount table given, sysfs read from
    a fake tree and the kernel's answer to LOOP_GET_STATUS64 given per loop device
    (``identities``; a name missing: the kernel does not tell, e.g. no permission)."""

    def __init__(self, fake: FakeRoot, monkeypatch: pytest.MonkeyPatch) -> None:
        self.fake = fake
        self.identities: dict[str, tuple[str, int]] = {}
        for function in ("device_dir", "block_device"):
            real = getattr(_sysblock, function)
            monkeypatch.setattr(
                _sysblock,
                function,
                lambda root, arg, real=real: real(str(fake.root), arg),
            )
        monkeypatch.setattr(_stack, "_loop_identity", self.identities.get)

    def walk(self, path: str, *lines: str):
        mounts = _mountinfo.parse_mountinfo("".join(text + "\n" for text in lines))
        return _stack.walk(path, mounts)[1]  # root: "/" by default


@pytest.fixture
def live(fake, monkeypatch) -> Live:
    return Live(fake, monkeypatch)


@pytest.fixture
def image(tmp_path: Path) -> Path:
    """A loop device's backing file on this machine's filesystem."""
    path = tmp_path / "disk.img"
    path.write_bytes(b"\0" * 4096)
    return path


def loop_over(live: Live, backing: str, root_dev: str = "8:0") -> list[str]:
    """sda holding "/" (device ``root_dev``), /mnt/img on loop250 backed by ``backing``."""
    live.fake.sata_disk("sda", "8:0", 0)
    live.fake.virtual("loop250", "7:250", backing_file=backing)
    return [
        line(root_dev, "/", "ext4", "/dev/sda", 20),
        line("0:5", "/dev", "devtmpfs", "udev", 22),
        line("7:250", "/mnt/img", "ext4", "/dev/loop250", 40),
    ]


def test_live_the_backing_file_the_kernel_names_is_followed_at_its_path(live, image):
    st = image.stat()
    mounts = loop_over(live, str(image), root_dev=dev_text(st.st_dev))
    live.identities["loop250"] = (dev_text(st.st_dev), st.st_ino)
    assert rows(live.walk("/mnt/img/db", *mounts)) == [
        ("filesystem", "/mnt/img", 0, ""),
        ("loop", "loop250", 1, f"backing file {image}"),
        ("filesystem", "/", 2, f"holds {image}"),
        ("disk", "sda", 3, ""),
    ]


def test_live_a_backing_file_replaced_at_its_path_is_found_by_device_number(live, image):
    """The image was rewritten (a new inode at the same path) while the loop device holds
    the old one: the walk goes to the filesystem the kernel names, not to the new file."""
    st = image.stat()
    mounts = loop_over(live, str(image), root_dev=dev_text(st.st_dev))
    live.identities["loop250"] = (dev_text(st.st_dev), st.st_ino + 1)
    assert rows(live.walk("/mnt/img", *mounts))[2] == (
        "filesystem",
        "/",
        2,
        f"holds the backing file (device {dev_text(st.st_dev)}, inode {st.st_ino + 1}; "
        f"not at {image} here)",
    )


def test_live_a_backing_file_outside_this_mount_namespace_is_found_by_device_number(live, image):
    """In a container the path the kernel prints is the host's: the file there is another
    one, but the filesystem holding the real one is mounted here (the top-most such mount),
    even where another mount covers its mount point."""
    mounts = loop_over(live, str(image))
    live.identities["loop250"] = ("0:41", 1234)
    mounts += [
        line("0:41", "/var/lib/images", "tmpfs", "tmpfs", 50),
        line("0:41", "/srv/images", "tmpfs", "tmpfs", 51),
        line("0:42", "/srv", "tmpfs", "tmpfs", 52),
    ]
    layers = live.walk("/mnt/img", *mounts)
    assert rows(layers) == [
        ("filesystem", "/mnt/img", 0, ""),
        ("loop", "loop250", 1, f"backing file {image}"),
        (
            "filesystem-ram",
            "/srv/images",
            2,
            f"holds the backing file (device 0:41, inode 1234; not at {image} here)",
        ),
    ]
    assert layers[2].flush == FLUSH_NOTHING_TO_FLUSH


def test_live_a_backing_file_on_a_filesystem_not_mounted_here_is_not_followed(live, image):
    mounts = loop_over(live, str(image))
    live.identities["loop250"] = ("0:99", 77)
    assert rows(live.walk("/mnt/img", *mounts))[1:] == [
        (
            "loop",
            "loop250",
            1,
            f"backing file {image}; the backing file's filesystem (device 0:99) is not "
            "mounted in this mount namespace: not followed",
        )
    ]


def test_live_without_the_kernels_answer_a_backing_file_found_here_is_followed(live, image):
    mounts = loop_over(live, str(image))
    layers = live.walk("/mnt/img", *mounts)
    assert rows(layers)[2] == ("filesystem", "/", 2, f"holds {image}")
    assert layers[1].flush == FLUSH_FSYNCS_BACKING_FILE


def test_live_without_the_kernels_answer_a_backing_file_not_found_here_is_not_followed(
    live, tmp_path
):
    missing = tmp_path / "gone" / "disk.img"
    mounts = loop_over(live, str(missing))
    assert rows(live.walk("/mnt/img", *mounts))[1:] == [
        (
            "loop",
            "loop250",
            1,
            f"backing file {missing}; the backing file is not found from this mount "
            "namespace: not followed",
        )
    ]


class DeviceNodes:
    """Block device nodes under /dev and their /sys/dev/block/MAJ:MIN links, as the live
    machine would have them, that this machine may lack: os.stat and os.path.realpath
    answer for the paths given and leave every other path to the real calls."""

    def __init__(self, fake: FakeRoot, monkeypatch: pytest.MonkeyPatch) -> None:
        self.fake = fake
        self.nodes: dict[str, os.stat_result] = {}
        real_stat, real_realpath = os.stat, os.path.realpath

        def fake_stat(path, *args, **kwargs):
            if isinstance(path, str) and path in self.nodes:
                return self.nodes[path]
            if isinstance(path, str) and path.startswith("/sys/dev/block/"):
                return real_stat(self._sys(path), *args, **kwargs)
            return real_stat(path, *args, **kwargs)

        def fake_realpath(path, *args, **kwargs):
            if isinstance(path, str) and path.startswith("/sys/dev/block/"):
                return real_realpath(self._sys(path), *args, **kwargs)
            return real_realpath(path, *args, **kwargs)

        monkeypatch.setattr(os, "stat", fake_stat)
        monkeypatch.setattr(os.path, "realpath", fake_realpath)

    def _sys(self, path: str) -> str:
        return str(self.fake.root / path.lstrip("/"))

    def add(self, path: str, major: int, minor: int) -> None:
        self.nodes[path] = os.stat_result(
            (stat.S_IFBLK | 0o660, 401, os.makedev(0, 5), 1, 0, 6, 0, 0, 0, 0),
            {"st_rdev": os.makedev(major, minor)},
        )


def test_live_a_loop_device_on_a_block_device_node_follows_that_device(live, fake, monkeypatch):
    """losetup on a device node: the node's device number (st_rdev, not the st_dev of
    devtmpfs holding the node) leads to /sys/dev/block/MAJ:MIN."""
    nodes = DeviceNodes(fake, monkeypatch)
    nodes.add("/dev/fsb-test-sdc", 8, 32)
    fake.sata_disk("sdc", "8:32", 2)
    mounts = loop_over(live, "/dev/fsb-test-sdc")
    layers = live.walk("/mnt/img", *mounts)
    assert [(layer.kind, layer.name, layer.depth) for layer in layers] == [
        ("filesystem", "/mnt/img", 0),
        ("loop", "loop250", 1),
        ("disk", "sdc", 2),
    ]


def test_live_a_device_node_missing_from_sys_invents_no_block_device(live, fake, monkeypatch):
    nodes = DeviceNodes(fake, monkeypatch)
    nodes.add("/dev/fsb-test-sdd", 8, 48)  # no /sys/dev/block/8:48
    mounts = loop_over(live, "/dev/fsb-test-sdd")
    layers = live.walk("/mnt/img", *mounts)
    assert [layer.name for layer in _stack.block_layers(layers)] == ["loop250"]


# --------------------------------------------------------------------------- the kernel's answer

#: include/uapi/linux/loop.h
#: (https://github.com/torvalds/linux/blob/master/include/uapi/linux/loop.h):
#: ``#define LOOP_GET_STATUS64 0x4C05`` fills ``struct loop_info64``: lo_device, lo_inode,
#: lo_rdevice, lo_offset, lo_sizelimit (__u64), lo_number, lo_encrypt_type,
#: lo_encrypt_key_size, lo_flags (__u32), lo_file_name[64], lo_crypt_name[64],
#: lo_encrypt_key[32] (__u8), lo_init[2] (__u64): 232 bytes.
LOOP_GET_STATUS64 = 0x4C05
LOOP_INFO64 = struct.Struct("=QQQQQIIII64s64s32sQQ")


def new_encode_dev(major: int, minor: int) -> int:
    """include/linux/kdev_t.h (https://github.com/torvalds/linux/blob/master/include/linux/kdev_t.h):
    ``(minor & 0xff) | (major << 8) | ((minor & ~0xff) << 12)``."""
    return (minor & 0xFF) | (major << 8) | ((minor & ~0xFF) << 12)


class LoopDriver:
    """The kernel's loop driver behind /dev/loopN: ``bound`` maps a name to the
    (major, minor, inode) of its backing file, None for a loop device with no file (the
    kernel answers ENXIO). Opening a name not listed fails as the real open does."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.bound: dict[str, tuple[int, int, int] | None] = {}
        self.opened: dict[int, str] = {}
        real_open = os.open

        def fake_open(path, flags, *args, **kwargs):
            name = path[len("/dev/") :] if isinstance(path, str) else ""
            if name in self.bound:
                fd = real_open(os.devnull, flags)
                self.opened[fd] = name
                return fd
            return real_open(path, flags, *args, **kwargs)

        monkeypatch.setattr(os, "open", fake_open)
        monkeypatch.setattr(_stack, "_ioctl", self.ioctl)

    def ioctl(self, fd: int, request: int, buf: bytearray) -> None:
        os.fstat(fd)  # an open descriptor
        if request != LOOP_GET_STATUS64:
            raise OSError(errno.ENOTTY, "Inappropriate ioctl for device")
        backing = self.bound[self.opened[fd]]
        if backing is None:
            raise OSError(errno.ENXIO, "No such device or address")
        major, minor, inode = backing
        LOOP_INFO64.pack_into(
            buf, 0, new_encode_dev(major, minor), inode, 0, 0, 0, 3, 0, 0, 0, b"", b"", b"", 0, 0
        )


def test_loop_info64_is_the_size_the_walk_hands_the_kernel():
    assert LOOP_INFO64.size == 232


@pytest.mark.parametrize(
    ("major", "minor", "inode"),
    [
        (7, 3, 12),
        (253, 2, 131073),  # a major with bit 4 set, an even minor
        (259, 0x12344, 2**40 + 5),  # a minor above 255: its high bits sit above the major's
        (4095, 0xFFFFF, 2**63 + 42),  # the largest numbers; an inode with the top bit set
    ],
)
def test_a_loop_devices_backing_file_identity_is_decoded_from_the_kernels_answer(
    monkeypatch, major, minor, inode
):
    driver = LoopDriver(monkeypatch)
    driver.bound["loop5"] = (major, minor, inode)
    assert _stack._loop_identity("loop5") == (f"{major}:{minor}", inode)
    for fd in driver.opened:  # nothing left open
        with pytest.raises(OSError):
            os.fstat(fd)


def test_a_loop_device_the_kernel_does_not_describe_gives_no_identity(monkeypatch):
    driver = LoopDriver(monkeypatch)
    driver.bound["loop6"] = None  # no backing file: ENXIO
    assert _stack._loop_identity("loop6") is None
    assert _stack._loop_identity("fsyncbench-no-such-loop") is None  # open fails
    for fd in driver.opened:
        with pytest.raises(OSError):
            os.fstat(fd)


def test_same_file_compares_device_and_inode(tmp_path):
    path = tmp_path / "disk.img"
    path.write_bytes(b"x")
    st = path.stat()
    dev = dev_text(st.st_dev)
    assert _stack._same_file(str(path), dev, st.st_ino) is True
    assert _stack._same_file(str(path), dev, st.st_ino + 1) is False
    assert _stack._same_file(str(path), "0:999", st.st_ino) is False
    assert _stack._same_file(str(tmp_path / "missing"), dev, st.st_ino) is False


def test_major_minor_reads_the_field_asked_for():
    st = os.stat_result(
        (stat.S_IFBLK | 0o660, 401, os.makedev(0, 5), 1, 0, 6, 0, 0, 0, 0),
        {"st_rdev": os.makedev(259, 300)},
    )
    assert _stack._major_minor(st, "st_dev") == "0:5"
    assert _stack._major_minor(st, "st_rdev") == "259:300"


def test_ioctl_fills_the_buffer_it_is_given():
    """FIONREAD on a pipe: the bytes waiting to be read, written into the buffer."""
    termios = pytest.importorskip("termios", reason="no termios (Windows)")
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, b"hello")
        buf = bytearray(4)
        _stack._ioctl(read_end, termios.FIONREAD, buf)
        assert struct.unpack("=i", buf) == (5,)
    finally:
        os.close(read_end)
        os.close(write_end)


def test_without_device_numbers_or_ioctl_the_helpers_raise_oserror(monkeypatch):
    """Windows has neither: OSError(ENOSYS), which _loop_identity turns into None."""
    monkeypatch.setattr(sys, "platform", "win32")
    with pytest.raises(OSError) as excinfo:
        _stack._ioctl(0, LOOP_GET_STATUS64, bytearray(232))
    assert excinfo.value.errno == errno.ENOSYS
    with pytest.raises(OSError) as excinfo:
        _stack._major_minor(os.stat_result((0,) * 10), "st_dev")
    assert excinfo.value.errno == errno.ENOSYS
