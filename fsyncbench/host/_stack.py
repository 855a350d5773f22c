"""Linux: the storage stack under a directory, followed down to the media holding the bytes.

From the target directory: the mount holding it (``/proc/self/mountinfo``; a bind mount names
the directory of the filesystem it shows), then by filesystem type

- tmpfs/ramfs: RAM holds the bytes; the walk ends;
- overlay: its ``upperdir=`` (where writes land) is walked like a new target, unless it is a
  relative path the kernel printed as given (then the layer says so);
- FUSE and network filesystems: the flush is forwarded to a daemon or server; the walk
  ends (``fuseblk`` continues with its block device);
- a block filesystem: its device in ``/sys`` (:func:`fsyncbench.host._sysblock.device_dir`),
  then partition -> disk, dm/md -> every entry of ``slaves/``, loop ->
  ``loop/backing_file`` walked like a new target (its filesystem, its device, recursively:
  loop-in-loop too), and at the bottom a disk classified by
  :func:`fsyncbench.layers.disk_layer` (physical, virtual, RAM, network).

Every layer records what it does with a flush (:mod:`fsyncbench.layers`). The walk reads only
files (no subprocess), never raises for missing files, cuts cycles and stops at
:data:`MAX_DEPTH` layers deep. Functions take ``root`` so tests use a fake /sys tree.
"""

from __future__ import annotations

import dataclasses
import os

from fsyncbench.layers import disk_layer, filesystem_layer, overlay_upperdir
from fsyncbench.model import (
    FLUSH_FSYNCS_BACKING_FILE,
    FLUSH_PASSES_DOWN,
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

    # ------------------------------------------------------------------ filesystems

    def path(self, path: str, depth: int, note: str = "") -> Mount | None:
        """Layers under a file or directory ``path``; returns the mount holding it."""
        mount = _mountinfo.find_mount(path, self.mounts)
        if mount is None or depth > MAX_DEPTH:
            return mount
        layer = filesystem_layer(mount, depth, note)
        self.layers.append(layer)
        if layer.kind == "filesystem-ram":
            return mount
        if layer.kind == "overlay":
            self._overlay(mount, layer, depth)
            return mount
        if layer.kind in ("fuse", "network-fs") and mount.fs_type != "fuseblk":
            return mount
        start = _sysblock.device_dir(self.root, mount)
        if start is None:
            self._annotate(layer, f"no block device found for {mount.source or mount.fs_type}"
                           + ("; the pool's devices are not followed" if mount.fs_type == "zfs" else ""))
            return mount
        self.block(start, depth + 1)
        return mount

    def _overlay(self, mount: Mount, layer: StorageLayer, depth: int) -> None:
        upper = overlay_upperdir(mount)
        if upper is None:
            self._annotate(layer, "no upper directory: nothing is written here")
        elif not upper.startswith("/"):
            self._annotate(layer, f"upper directory {upper!r} is relative to where it was "
                           "mounted: its filesystem cannot be followed")
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
        if not name or name in self.seen or depth > MAX_DEPTH:
            return
        self.seen.add(name)
        device = _sysblock.block_device(self.root, name)
        if os.path.exists(os.path.join(directory, "partition")):
            self.layers.append(StorageLayer("partition", name, FLUSH_PASSES_DOWN, depth, device=device))
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
                os.path.join(directory, "md", "level"))
            self.layers.append(StorageLayer(kind, name, FLUSH_PASSES_DOWN, depth, device=device,
                                            note=label or ""))
            for slave in slaves:
                self.block(slave, depth + 1)
            return
        self.layers.append(disk_layer(device, depth))

    def _loop(self, name: str, device, backing: str, depth: int) -> None:
        note = f"backing file {backing}"
        path = backing[: -len(_DELETED)] if backing.endswith(_DELETED) else backing
        if path != backing:
            note += " (deleted: still open by the loop device)"
        self.layers.append(StorageLayer("loop", name, FLUSH_FSYNCS_BACKING_FILE, depth,
                                        device=device, note=note))
        if path.startswith("/"):
            self.path(os.path.normpath(path), depth + 1, note=f"holds {path}")


def walk(path: str, mounts: list[Mount], root: str = "/") -> tuple[Mount | None, tuple[StorageLayer, ...]]:
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
