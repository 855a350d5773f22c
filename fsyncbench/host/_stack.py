"""Linux: the storage stack under a directory, followed down to the media holding the bytes.

From the target directory: the mount holding it (``/proc/self/mountinfo``; a bind mount names
the directory of the filesystem it shows), then by filesystem type

- tmpfs/ramfs: RAM holds the bytes; the walk ends;
- overlay: its ``upperdir=`` (where writes land) is walked like a new target, unless it is a
  relative path the kernel printed as given, or a path that resolves here to a filesystem
  already on the walk (a container's root overlay names a host path, which inside the
  container is the overlay itself): then the layer says so, once;
- FUSE and network filesystems: the flush is forwarded to a daemon or server; the walk
  ends (``fuseblk`` continues with its block device);
- a block filesystem: its device in ``/sys`` (:func:`fsyncbench.host._sysblock.device_dir`),
  then partition -> disk, dm/md -> every entry of ``slaves/``, loop ->
  ``loop/backing_file`` walked like a new target (its filesystem, its device, recursively:
  loop-in-loop too), and at the bottom a disk classified by
  :func:`fsyncbench.host.layers.disk_layer` (physical, virtual, RAM, network).

Every layer records what it does with a flush (:mod:`fsyncbench.host.layers`). The walk reads only
files (no subprocess), never raises for missing files, cuts cycles and stops at
:data:`MAX_DEPTH` layers deep. Functions take ``root`` so tests use a fake /sys tree.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import stat
import struct
import sys

from fsyncbench.host.layers import disk_layer, filesystem_layer, overlay_upperdir
from fsyncbench.model import (
    FLUSH_DROPPED,
    FLUSH_FSYNCS_BACKING_FILE,
    FLUSH_PASSES_DOWN,
    BlockDevice,
    Mount,
    StorageLayer,
)

from . import _mountinfo, _sysblock
from ._common import read_text

#: Deepest layer followed (a loop in a loop in a loop ... is cut here).
MAX_DEPTH = 16

_DELETED = " (deleted)"


class _Walk:
    """One walk: the layers found in order, the block device names seen (cycle guard)."""

    def __init__(self, root: str, mounts: list[Mount]) -> None:
        self.root = root
        self.mounts = mounts
        self.layers: list[StorageLayer] = []
        self.seen: set[str] = set()
        self.walked: list[Mount] = []  # filesystems on this walk (an overlay's cycle guard)

    # ------------------------------------------------------------------ filesystems

    def path(self, path: str, depth: int, note: str = "") -> Mount | None:
        """Layers under a file or directory ``path``; returns the mount holding it."""
        mount = _mountinfo.find_mount(path, self.mounts)
        if mount is not None:
            self.filesystem(mount, depth, note)
        return mount

    def filesystem(self, mount: Mount, depth: int, note: str = "") -> None:
        """Layers from mounted filesystem ``mount`` down (given as found: a mount covered by
        another one is never looked up again by its path)."""
        if depth > MAX_DEPTH:
            self._cut(depth)
            return
        layer = filesystem_layer(mount, depth, note)
        self.layers.append(layer)
        self.walked.append(mount)
        if layer.kind == "filesystem-ram":
            return
        if layer.kind == "overlay":
            self._overlay(mount, layer, depth)
            return
        if layer.kind in ("fuse", "network-fs") and mount.fs_type != "fuseblk":
            return
        start = _sysblock.device_dir(self.root, mount)
        if start is None:
            self._annotate(
                layer,
                f"no block device found for {mount.source or mount.fs_type}"
                + ("; the pool's devices are not followed" if mount.fs_type == "zfs" else ""),
            )
            return
        for device_dir in self._filesystem_devices(mount, start):
            self.block(device_dir, depth + 1)

    def _cut(self, depth: int) -> None:
        """Say on the last layer that the walk stopped at :data:`MAX_DEPTH`."""
        if self.layers:
            self._annotate(
                self.layers[-1], f"the walk stopped here: more than {MAX_DEPTH} layers deep"
            )

    def _filesystem_devices(self, mount: Mount, start: str) -> list[str]:
        """Every block device a filesystem spans: btrfs lists its members in
        ``/sys/fs/btrfs/<fsid>/devices/`` (Documentation/ABI/testing/sysfs-fs-btrfs); any
        other filesystem has the one device it is mounted from."""
        if mount.fs_type != "btrfs":
            return [start]
        base = os.path.join(self.root, "sys", "fs", "btrfs")
        name = os.path.basename(start)
        try:
            fsids = sorted(os.listdir(base))
        except OSError:
            return [start]
        for fsid in fsids:
            devices = os.path.join(base, fsid, "devices")
            try:
                members = sorted(os.listdir(devices))
            except OSError:
                continue
            if name in members:
                return [os.path.realpath(os.path.join(devices, m)) for m in members]
        return [start]

    def _overlay(self, mount: Mount, layer: StorageLayer, depth: int) -> None:
        upper = overlay_upperdir(mount)
        if upper is None:
            self._annotate(layer, "no upper directory: nothing is written here")
        elif not upper.startswith("/"):
            self._annotate(
                layer,
                f"upper directory {upper!r} is relative to where it was "
                "mounted: its filesystem cannot be followed",
            )
        elif _mountinfo.find_mount(os.path.normpath(upper), self.mounts) in self.walked:
            # a container's root: the upper directory is a host path (Docker's
            # /var/lib/docker/overlay2/<id>/diff) that this mount namespace resolves to
            # the overlay itself, or to a filesystem already on this walk
            self._annotate(
                layer,
                f"upper directory {upper} lies on a filesystem already walked here (a "
                "container's overlay names a path of the host's mount namespace): "
                "its filesystem cannot be followed from here",
            )
        else:
            self.path(os.path.normpath(upper), depth + 1, note=f"overlay upper directory {upper}")

    def _annotate(self, layer: StorageLayer, text: str) -> None:
        index = self.layers.index(layer)
        note = (layer.note + "; " if layer.note else "") + text
        self.layers[index] = dataclasses.replace(layer, note=note)

    # ------------------------------------------------------------------ block devices

    def block(self, directory: str, depth: int) -> None:
        """Layers from the resolved sysfs directory of a block device down."""
        name = os.path.basename(directory)
        if depth > MAX_DEPTH:
            self._cut(depth)
            return
        if not name or name in self.seen:
            return
        self.seen.add(name)
        device = _sysblock.block_device(self.root, name)
        if os.path.exists(os.path.join(directory, "partition")):
            self.layers.append(
                StorageLayer("partition", name, FLUSH_PASSES_DOWN, depth, device=device)
            )
            self.block(os.path.dirname(directory), depth + 1)
            return
        backing = read_text(os.path.join(directory, "loop", "backing_file"))
        if backing is not None:
            self._loop(name, device, backing, depth)
            return
        slaves = _sysblock.slaves(directory)
        if slaves:
            kind = "dm" if name.startswith("dm-") else "md" if name.startswith("md") else "stacked"
            label = read_text(os.path.join(directory, "dm", "name")) or read_text(
                os.path.join(directory, "md", "level")
            )
            self.layers.append(
                StorageLayer(kind, name, FLUSH_PASSES_DOWN, depth, device=device, note=label or "")
            )
            for slave in slaves:
                self.block(slave, depth + 1)
            return
        self.layers.append(disk_layer(device, depth))

    def _loop(self, name: str, device: BlockDevice, backing: str, depth: int) -> None:
        path = backing[: -len(_DELETED)] if backing.endswith(_DELETED) else backing
        note = f"backing file {path}" + (
            " (deleted: still open by the loop device)" if path != backing else ""
        )
        flush = FLUSH_FSYNCS_BACKING_FILE
        if (device.write_cache or "").strip() == "write through":
            flush = FLUSH_DROPPED
            note += (
                "; claims a write-through cache, so the block layer completes flushes "
                "without passing them to it (no fsync of the backing file)"
            )
        layer = StorageLayer("loop", name, flush, depth, device=device, note=note)
        self.layers.append(layer)
        if not path.startswith("/"):
            self._annotate(layer, "not an absolute path: not followed")
            return
        blockdev = self._block_device_node(path)
        if blockdev is not None:  # losetup on a block device: follow the device itself
            self.block(blockdev, depth + 1)
            return
        held_by = _mountinfo.find_mount(os.path.normpath(path), self.mounts)
        if held_by is not None and held_by.fs_type == "devtmpfs":
            # devtmpfs holds device nodes: one whose block device is not under /sys is no
            # file in RAM (following it would find devtmpfs's RAM medium)
            self._annotate(
                layer, f"{path} is a device node whose block device is not found: not followed"
            )
            return
        identity = _loop_identity(name) if self.root == "/" else None
        if identity is None:
            if self.root == "/" and not os.path.exists(path):
                self._annotate(
                    layer, "the backing file is not found from this mount namespace: not followed"
                )
                return
            self.path(os.path.normpath(path), depth + 1, note=f"holds {path}")
            return
        dev, ino = identity
        if _same_file(path, dev, ino):
            self.path(os.path.normpath(path), depth + 1, note=f"holds {path}")
            return
        mount = next((m for m in reversed(self.mounts) if m.device_number == dev), None)
        if mount is None:
            self._annotate(
                layer,
                f"the backing file's filesystem (device {dev}) is not mounted "
                "in this mount namespace: not followed",
            )
            return
        # the filesystem itself, even where another mount covers its mount point
        self.filesystem(
            mount,
            depth + 1,
            note=f"holds the backing file (device {dev}, inode {ino}; not at {path} here)",
        )

    def _block_device_node(self, path: str) -> str | None:
        """Resolved sysfs directory when ``path`` is a block device node, else None."""
        if self.root == "/":
            try:
                st = os.stat(path)
            except OSError:
                return None
            if not stat.S_ISBLK(st.st_mode):
                return None
            link = f"/sys/dev/block/{_major_minor(st, 'st_rdev')}"
            return os.path.realpath(link) if os.path.isdir(link) else None
        if not path.startswith("/dev/"):
            return None
        directory = os.path.join(self.root, "sys", "class", "block", os.path.basename(path))
        return os.path.realpath(directory) if os.path.isdir(directory) else None


#: LOOP_GET_STATUS64 (include/uapi/linux/loop.h): fills struct loop_info64, whose first two
#: fields are lo_device and lo_inode (u64 each) of the backing file; 232 bytes in all.
_LOOP_GET_STATUS64 = 0x4C05
_LOOP_INFO64_SIZE = 232


def _loop_identity(name: str) -> tuple[str, int] | None:
    """("major:minor", inode) of loop device ``name``'s backing file from the kernel
    (LOOP_GET_STATUS64 on /dev/<name>); None without permission or on other errors. The
    kernel encodes lo_device with new_encode_dev (include/linux/kdev_t.h)."""
    try:
        fd = os.open(f"/dev/{name}", os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        buf = bytearray(_LOOP_INFO64_SIZE)
        _ioctl(fd, _LOOP_GET_STATUS64, buf)
    except OSError:
        return None
    finally:
        os.close(fd)
    device, inode = struct.unpack_from("=QQ", buf)
    major = (device & 0xFFF00) >> 8
    minor = (device & 0xFF) | ((device >> 12) & 0xFFF00)
    return f"{major}:{minor}", inode


def _same_file(path: str, dev: str, ino: int) -> bool:
    try:
        st = os.stat(path)
    except OSError:
        return False
    return _major_minor(st, "st_dev") == dev and st.st_ino == ino


# This module reads Linux's /proc and /sys (fsyncbench.host imports it on Linux only); the
# two helpers below keep the type checker's other platforms, which lack these calls, apart.


def _major_minor(st: os.stat_result, field: str) -> str:
    """ "major:minor" of the device number ``st.<field>`` (st_dev or st_rdev)."""
    if sys.platform == "win32":
        raise OSError(errno.ENOSYS, "no device numbers on Windows")
    else:
        number = getattr(st, field)
        return f"{os.major(number)}:{os.minor(number)}"


def _ioctl(fd: int, request: int, buf: bytearray) -> None:
    """ioctl(2) on ``fd`` filling ``buf``; OSError where there is none (Windows)."""
    if sys.platform == "win32":
        raise OSError(errno.ENOSYS, "no ioctl on Windows")
    else:
        import fcntl

        fcntl.ioctl(fd, request, buf)


def walk(
    path: str, mounts: list[Mount], root: str = "/"
) -> tuple[Mount | None, tuple[StorageLayer, ...]]:
    """(the mount holding ``path``, every layer under it in walk order).

    ``path`` must be absolute and resolved; ``mounts`` the parsed mount table; ``root``
    re-bases every /sys read. An empty layer tuple means no mount holds ``path``.
    """
    w = _Walk(root, mounts)
    mount = w.path(path, 0)
    return mount, tuple(w.layers)


def block_layers(layers: tuple[StorageLayer, ...]) -> tuple[StorageLayer, ...]:
    """The layers that are block devices (they have sysfs counters), in walk order."""
    return tuple(layer for layer in layers if layer.device is not None)
