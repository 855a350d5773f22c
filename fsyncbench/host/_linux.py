"""Linux: the storage path of the target (mountinfo -> sysfs), virtualization signs and the
SQLite library actually mapped into this process."""

from __future__ import annotations

import os
from collections.abc import Mapping

from fsyncbench.model import StorageTarget

from . import _mountinfo, _raid, _stack, _virt, known
from ._common import PlatformFacts, sqlite_extension_file, under_root


def parse_maps_for_sqlite(maps_text: str, extension_file: str | None = None) -> str | None:
    """The SQLite library file among the mappings of a ``/proc/<pid>/maps`` text.

    Returns the first mapped file whose name starts with ``libsqlite3`` (the shared library
    ``_sqlite3`` is linked against). When none is mapped, SQLite is statically linked into
    CPython's ``_sqlite3`` extension: return ``extension_file`` (its path). Format of the
    maps file: proc(5), https://man7.org/linux/man-pages/man5/proc_pid_maps.5.html (the
    path is the sixth field and may contain spaces or end in `` (deleted)``).
    """
    for line in maps_text.splitlines():
        fields = line.split(None, 5)
        if len(fields) < 6:
            continue
        path = fields[5].strip()
        if path.endswith(" (deleted)"):
            path = path[: -len(" (deleted)")]
        if path.startswith("/") and os.path.basename(path).startswith("libsqlite3"):
            return path
    return extension_file


def sqlite_library(root: str = "/") -> str | None:
    """Path of the SQLite code this process runs (see :func:`parse_maps_for_sqlite`),
    from ``<root>/proc/self/maps``; None when that file cannot be read."""
    try:
        with open(under_root(root, "/proc/self/maps"), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return None
    return parse_maps_for_sqlite(text, sqlite_extension_file())


def storage_target(
    target: str, root: str = "/", tools: _raid.ToolAccess | None = None
) -> StorageTarget:
    """Mount, storage stack, block device chain and the disks holding the bytes under
    ``target``.

    ``target`` is resolved with :func:`os.path.realpath` (it need not exist); the mount is
    the longest component-wise prefix in ``<root>/proc/self/mountinfo``; the stack is
    followed through overlay upper directories, partitions, dm/md slaves and loop backing
    files down to the media (:mod:`fsyncbench.host._stack`). ``chain`` names every block
    device on the way, ``disks`` the block devices at the bottom (a loop device is never
    one: its backing file's storage is). No mount table gives no layers; a stack ending in
    tmpfs gives no disks. A disk that is a volume of a RAID controller carries it
    (``BlockDevice.controller``), read with its vendor's tool through ``tools``
    (:mod:`fsyncbench.host._raid`; default: the tools on PATH for the real root, none for a
    recorded tree). Never raises on missing files.
    """
    path = os.path.realpath(target)
    mount, layers = _stack.walk(path, _mountinfo.read_mountinfo(root), root)
    if tools is None and root == "/":
        tools = _raid.live_access()
    if tools is not None:
        layers = _raid.with_tool_readings(layers, tools)
    blocks = _stack.block_layers(layers)
    chain = tuple(dict.fromkeys(layer.name for layer in blocks))
    disks = tuple(
        layer.device for layer in blocks if layer.holds_bytes and layer.device is not None
    )
    return StorageTarget(path=path, mount=mount, chain=chain, disks=disks, layers=layers)


def collect(
    target: str,
    root: str = "/",
    environ: Mapping[str, str] | None = None,
    runner: _virt.Runner | None = None,
) -> PlatformFacts:
    """Linux facts for ``target``; ``root`` re-bases every /proc, /sys and /dev read.
    Where no sign of a hypervisor is seen (:mod:`._virt`: its CPUID flag and DMI strings
    can be hidden from a guest), a disk under the target on a virtio bus or with an
    emulator's model string is recorded as the guest's tell
    (``Virtualization.virtual_disk_hint``, :func:`.layers.virtual_disk_hint`): its flush
    goes to a hypervisor whatever the CPU says."""
    storage = storage_target(target, root)
    virt = known.virtualization(_virt.collect_virtualization(root, environ, runner), storage.disks)
    return PlatformFacts(
        target=storage,
        virtualization=virt,
        sqlite_library=sqlite_library(root),
    )
