"""What each kind of storage layer does with a flush: filesystems and block devices turned
into :class:`~fsyncbench.model.StorageLayer` records. Pure functions, no I/O; the Linux walk
that finds the layers is :mod:`fsyncbench.host._stack`, the rules that read them are in
:mod:`fsyncbench.judge.stack`.

Sources of the facts encoded here:

- tmpfs/ramfs keep every page in memory: Linux Documentation/filesystems/tmpfs.rst
  ("everything in tmpfs is temporary ... no files will be created on your hard drive").
- overlayfs ``volatile`` (shown as ``volatile`` before Linux 6.12 and as ``fsync=volatile``
  since the ``fsync=`` option replaced it): "all forms of sync calls to the upper filesystem
  are omitted" (Documentation/filesystems/overlayfs.rst, "Volatile mount").
- ``nobarrier``/``barrier=0`` (ext3/ext4, xfs before 4.19) and ``fsync_mode=nobarrier``
  (f2fs): the filesystem sends no cache flush (Documentation/admin-guide/ext4.rst,
  Documentation/filesystems/f2fs.rst).
- loop: a flush request on a loop device becomes ``vfs_fsync()`` of its backing file
  (drivers/block/loop.c, ``lo_req_flush``); the backing file is
  ``/sys/block/loopN/loop/backing_file``.
- zram and brd (``ram*``) are RAM block devices (Documentation/admin-guide/blockdev/
  zram.rst, drivers/block/brd.c); null_blk discards what it is given
  (Documentation/block/null_blk.rst).
- nbd, rbd, iSCSI and NVMe over fabrics send the flush over the network to a server
  (Documentation/admin-guide/blockdev/nbd.rst, NBD_CMD_FLUSH; the Ceph RBD and NVMe-oF
  specifications); FUSE forwards fsync to its daemon (FUSE_FSYNC,
  Documentation/filesystems/fuse.rst); network filesystems to their server (nfs(5)).
- virtio-blk, Xen blkfront, Hyper-V storvsc and emulated VMware/VirtualBox/QEMU disks hand
  the flush to the hypervisor (VIRTIO_BLK_T_FLUSH, virtio 1.2 spec section 5.2.6; Xen
  BLKIF_OP_FLUSH_DISKCACHE). Windows names a disk on a virtual bus ``BusTypeVirtual``
  (https://learn.microsoft.com/en-us/windows/win32/api/winioctl/ne-winioctl-storage_bus_type;
  transport ``virtual``, :mod:`fsyncbench.host._windows`).
- A Windows disk on ``BusTypeFileBackedVirtual`` is a virtual hard disk file (VHD/VHDX)
  mounted on this machine: Windows' own class driver treats that bus type as "VHDs"
  (https://github.com/microsoft/Windows-driver-samples/blob/main/storage/class/classpnp/src/class.c,
  ClassDispatchPnp: "Don't log an event for VHDs"). Like a loop device, its bytes live in a
  file on another volume, which is not followed there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fsyncbench.host import knowledge
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
)

#: Filesystems that keep their data in RAM: a sync has nothing to write to stable media.
RAM_FILESYSTEMS = frozenset({"tmpfs", "ramfs", "devtmpfs"})

#: Filesystems whose sync is forwarded to a server or a user-space daemon: nfs(5), cifs,
#: 9p, virtiofs, FUSE. Whether that side persists it cannot be seen from here.
NETWORK_FILESYSTEMS = frozenset(
    {
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
    }
)

#: Mount options that stop the filesystem from sending cache flushes (ext4/ext3 barrier=0,
#: nobarrier; f2fs fsync_mode=nobarrier; xfs nobarrier before Linux 4.19).
NO_BARRIER_OPTIONS = frozenset({"nobarrier", "barrier=0", "fsync_mode=nobarrier"})

#: Names of libraries that turn sync calls into no-ops: libeatmydata (eatmydata(1)),
#: libnosync (Fedora "nosync"), disable-fsync.so (BigLinux's /etc/ld.so.preload recipe,
#: https://biglinux.blogspot.com/2021/08/disable-fsync-explicacao-de-uso-no.html).
SYNC_DISABLING_LIBS = ("libeatmydata", "eatmydata", "libnosync", "disable-fsync", "nosync.so")

#: Block transports whose media is RAM (or nothing at all: null_blk).
RAM_TRANSPORTS = frozenset({"zram", "ram", "null_blk"})
#: Block transports that send the flush to a server over the network.
NETWORK_TRANSPORTS = frozenset({"nbd", "rbd", "iscsi", "nvme-fabrics"})
#: Block transports of paravirtual disks: the flush goes to the hypervisor (``virtual``:
#: Windows' BusTypeVirtual).
VIRTUAL_TRANSPORTS = frozenset({"virtio", "xen", "hyperv", "uml", "virtual"})
#: Block transports whose bytes live in a file on another filesystem: a Linux loop device
#: (followed to its backing file by the Linux walk), a Windows virtual hard disk file
#: (``file-backed-virtual``: BusTypeFileBackedVirtual, not followed).
FILE_BACKED_TRANSPORTS = frozenset({"loop", "file-backed-virtual"})

#: Layer kinds that hold the bytes at the bottom of a stack.
MEDIA_KINDS = frozenset(
    {"disk", "virtual-disk", "ram-disk", "network-disk", "pmem", "filesystem-ram"}
)


def mount_options(mount: Mount | None) -> set[str]:
    """Per-mount and superblock options of ``mount``, lower case (empty for None)."""
    if mount is None:
        return set()
    return {o.strip().lower() for o in (*mount.options, *mount.super_options) if o.strip()}


def overlay_volatile(options: set[str]) -> bool:
    """True for an overlay mounted volatile, in every spelling the kernel prints
    (``volatile``; ``fsync=volatile`` since the ``fsync=`` option, Linux 6.12)."""
    return "volatile" in options or "fsync=volatile" in options


def overlay_upperdir(mount: Mount) -> str | None:
    """The ``upperdir=`` option of an overlay mount (as the kernel prints it), or None."""
    for option in (*mount.super_options, *mount.options):
        if option.startswith("upperdir="):
            return option[len("upperdir=") :] or None
    return None


def filesystem_layer(mount: Mount, depth: int = 0, note: str = "") -> StorageLayer:
    """The layer of a mounted filesystem: what it does with a flush (module docstring).

    tmpfs/ramfs hold the bytes in RAM (kind ``filesystem-ram``); overlay passes flushes to
    its upper directory unless mounted volatile; FUSE and network filesystems forward them;
    a ``nobarrier`` block filesystem drops them; any other filesystem passes them down.
    """
    fs = mount.fs_type
    opts = mount_options(mount)
    name = mount.mount_point
    kwargs: dict[str, Any] = dict(
        name=name, depth=depth, fs_type=fs, source=mount.source, options=tuple(sorted(opts))
    )
    if mount.root not in (None, "/"):
        note = (note + "; " if note else "") + f"bind mount of {mount.root} of {mount.source}"
    if fs in RAM_FILESYSTEMS:
        return StorageLayer(
            kind="filesystem-ram",
            flush=FLUSH_NOTHING_TO_FLUSH,
            holds_bytes=True,
            volatile=True,
            note=note,
            **kwargs,
        )
    if fs == "overlay":
        flush = FLUSH_DROPPED if overlay_volatile(opts) else FLUSH_PASSES_DOWN
        return StorageLayer(kind="overlay", flush=flush, note=note, **kwargs)
    if fs.startswith("fuse") or fs in NETWORK_FILESYSTEMS:
        kind = "fuse" if fs.startswith("fuse") else "network-fs"
        return StorageLayer(kind=kind, flush=FLUSH_FORWARDED, note=note, **kwargs)
    flush = FLUSH_DROPPED if opts & NO_BARRIER_OPTIONS else FLUSH_PASSES_DOWN
    return StorageLayer(kind="filesystem", flush=flush, note=note, **kwargs)


def disk_layer(device: BlockDevice, depth: int = 0, note: str = "") -> StorageLayer:
    """The layer of a block device at the bottom of a stack (no partition, no slaves, no
    backing file), by transport and model: RAM, network, a file not followed (kind
    ``loop``: a Linux loop device, a Windows VHD), virtual or physical disk."""
    transport = device.transport or ""
    if transport in RAM_TRANSPORTS:
        return StorageLayer(
            "ram-disk",
            device.name,
            FLUSH_NOTHING_TO_FLUSH,
            depth,
            True,
            True,
            device=device,
            note=note,
        )
    if transport == "pmem":
        return StorageLayer(
            "pmem",
            device.name,
            FLUSH_UNKNOWN,
            depth,
            True,
            None,
            device=device,
            note=note or "persistent memory: whether a DIMM backs it is not judged",
        )
    if transport in NETWORK_TRANSPORTS:
        return StorageLayer(
            "network-disk",
            device.name,
            FLUSH_FORWARDED,
            depth,
            True,
            None,
            device=device,
            note=note,
        )
    if transport in FILE_BACKED_TRANSPORTS:  # a loop device or VHD whose file was not followed
        return StorageLayer(
            "loop",
            device.name,
            FLUSH_UNKNOWN,
            depth,
            False,
            None,
            device=device,
            note=note or "backing file not recorded: the storage below is unknown",
        )
    if transport in VIRTUAL_TRANSPORTS or emulated_by(device):
        return StorageLayer(
            "virtual-disk", device.name, FLUSH_TO_HOST, depth, True, None, device=device, note=note
        )
    return StorageLayer(
        "disk", device.name, FLUSH_TO_DEVICE, depth, True, False, device=device, note=note
    )


def _chain_layer(name: str, depth: int) -> StorageLayer:
    """A block device named in a recorded ``chain`` but not among its disks, by name."""
    device = BlockDevice(name, transport="loop" if name.startswith("loop") else None)
    if name.startswith("loop"):
        return StorageLayer(
            "loop",
            name,
            FLUSH_UNKNOWN,
            depth,
            device=device,
            note="backing file not recorded: the storage below is unknown",
        )
    kind = "dm" if name.startswith("dm-") else "md" if name.startswith("md") else "partition"
    return StorageLayer(kind, name, FLUSH_PASSES_DOWN, depth, device=device)


def derived_layers(
    mount: Mount | None, disks: tuple[BlockDevice, ...], chain: tuple[str, ...] = ()
) -> tuple[StorageLayer, ...]:
    """A short stack for a report that recorded no ``layers`` (written before they existed,
    or by hand): the mount's filesystem, the block devices of ``chain`` that are not disks
    (a loop device, dm, md, a partition: by name), then each recorded disk as its media. A
    loop device among the disks (the walk of older versions stopped there) holds nothing."""
    disk_names = {d.name for d in disks}
    middle = [name for name in chain if name not in disk_names]
    if mount is None:
        top: tuple[StorageLayer, ...] = ()
    else:
        fs = filesystem_layer(mount, 0)
        if fs.kind == "filesystem-ram":
            return (fs,)
        top = (fs,)
    depth = len(top)
    out = list(top)
    for name in middle:
        out.append(_chain_layer(name, depth))
        depth += 1
    out += [disk_layer(d, depth) for d in disks]
    return tuple(out)


def emulated_by(device: BlockDevice) -> str | None:
    """The hypervisor or emulator whose emulated disk ``device`` is by its model string
    (the ``emulated`` fact of :mod:`fsyncbench.host.knowledge`: ``QEMU`` for ``QEMU
    HARDDISK`` and ``QEMU NVMe Ctrl``), or None."""
    row = knowledge.known(device.vendor, device.model, knowledge.EMULATED)
    return None if row is None else row.fact(knowledge.EMULATED)


def virtual_disk_hint(disks: Sequence[BlockDevice]) -> str | None:
    """The disks whose model names an emulated or virtual disk (``QEMU HARDDISK``, ``QEMU
    NVMe Ctrl``, ``VBOX HARDDISK``, ``VMware Virtual disk``, ``Msft Virtual Disk``: the
    ``emulated`` rows of :mod:`fsyncbench.host.knowledge`) or whose bus is virtual
    (BusTypeVirtual), as one text (``PhysicalDrive0 model 'QEMU QEMU HARDDISK'``), or None.
    A virtual hard disk file mounted here (BusTypeFileBackedVirtual) is not one: it tells
    nothing about this machine being a guest. Recorded on Windows, which reads no
    hypervisor flag (fsyncbench.host._windows), and on Linux when no other sign of a
    hypervisor is seen (fsyncbench.host._linux: a guest whose CPUID flag and DMI strings
    are hidden still has a virtio bus or an emulator's model string on its disk)."""
    hints = []
    for d in disks:
        if disk_layer(d).kind != "virtual-disk":
            continue
        ident = " ".join(x for x in (d.vendor, d.model) if x)
        why = []
        if emulated_by(d):
            why.append(f"model '{ident}'")
        if (d.transport or "") in VIRTUAL_TRANSPORTS:
            why.append(f"bus {d.transport}")
        hints.append(f"{d.name} {' and '.join(why)}")
    return "; ".join(hints) or None
