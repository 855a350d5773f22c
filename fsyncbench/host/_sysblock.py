"""Block-device facts from ``/sys``: the device under a mount, stacked devices' slaves, and each
device's attributes (the walk that uses them is :mod:`fsyncbench.host._stack`).

Kernel sources of every fact here:

- ``/sys/dev/block/MAJ:MIN`` is a symlink to the device's directory under ``/sys/devices``
  (Documentation/ABI/stable/sysfs-dev); ``/sys/class/block/<name>`` links every block
  device and partition, ``/sys/block/<name>`` every whole disk.
- A partition's directory holds a ``partition`` file and sits inside its disk's directory
  (Documentation/ABI/stable/sysfs-block, ``/sys/block/<disk>/<part>/partition``).
- Stacked devices (device-mapper ``dm-*``: LVM, LUKS/dm-crypt, multipath; software RAID
  ``md*``) list the devices they are built on in ``slaves/`` (sysfs-block ``slaves``).
- Disk attributes (Documentation/ABI/stable/sysfs-block): ``queue/rotational``,
  ``queue/write_cache`` ("write back"/"write through"), ``queue/fua``; ``device/model``,
  ``device/vendor``, ``device/rev`` (SCSI) or ``device/firmware_rev`` and ``device/serial``
  (NVMe controller, Documentation/ABI/testing/sysfs-class-nvme); virtio-blk puts ``serial``
  on the disk itself (drivers/block/virtio_blk.c).
- ``stat`` flush fields: see :mod:`fsyncbench.host._counters`.
- The RAID controller a disk is a volume of: :mod:`fsyncbench.host._raid`.
"""

from __future__ import annotations

import os

from fsyncbench.model import BlockDevice, Mount

from ._common import read_text, under_root
from ._counters import stat_has_flush_counters
from ._raid import sysfs_controller

#: Name prefixes of whole-disk drivers, longest first, and the transport they imply.
_NAME_TRANSPORTS = (
    ("nvme", "nvme"),
    ("mmcblk", "mmc"),
    ("xvd", "xen"),
    ("vd", "virtio"),
    ("sd", "scsi"),
    ("sr", "scsi"),
    ("hd", "ide"),
    ("loop", "loop"),
    ("zram", "zram"),
    ("nbd", "nbd"),
    ("rbd", "rbd"),
    ("pmem", "pmem"),
    ("ram", "ram"),
    ("nullb", "null_blk"),
    ("ubd", "uml"),
)

#: Path components of the resolved ``/sys/devices/...`` directory that name the bus; they
#: refine the name prefix (an ``sd*`` disk may be SATA, USB, virtio-scsi, iSCSI, Hyper-V).
_PATH_TRANSPORTS = (
    ("usb", "usb"),
    ("nvme-fabrics", "nvme-fabrics"),
    ("virtio", "virtio"),
    ("ata", "ata"),
    ("session", "iscsi"),
    ("VMBUS", "hyperv"),
    ("vbd-", "xen"),
)


def _class_block(root: str, name: str) -> str:
    return under_root(root, f"/sys/class/block/{name}")


def device_dir(root: str, mount: Mount) -> str | None:
    """Resolved sysfs directory of the block device under ``mount``, or None (tmpfs, nfs,
    overlay without a device...).

    Uses ``/sys/dev/block/MAJ:MIN`` first; when the major is 0 (btrfs, overlay, tmpfs and
    other anonymous devices) or that link is missing, falls back to the source: a
    ``/dev/<name>`` source via ``/sys/class/block/<name>``, a ``/dev/mapper/<name>`` source
    via the dm device whose ``dm/name`` matches.
    """
    number = mount.device_number or ""
    major = number.split(":", 1)[0]
    if major.isdigit() and int(major) != 0:
        link = under_root(root, f"/sys/dev/block/{number}")
        if os.path.isdir(link):
            return os.path.realpath(link)
    source = mount.source or ""
    if not source.startswith("/dev/"):
        return None
    name = os.path.basename(source)
    if name and os.path.isdir(_class_block(root, name)):
        return os.path.realpath(_class_block(root, name))
    if source.startswith("/dev/mapper/"):
        return _dm_by_name(root, name)
    return None


def _dm_by_name(root: str, name: str) -> str | None:
    base = under_root(root, "/sys/class/block")
    try:
        entries = sorted(os.listdir(base))
    except OSError:
        return None
    for entry in entries:
        if entry.startswith("dm-") and read_text(os.path.join(base, entry, "dm", "name")) == name:
            return os.path.realpath(os.path.join(base, entry))
    return None


def slaves(directory: str) -> list[str]:
    """Resolved sysfs directories of the devices a stacked device (dm, md) is built on:
    the entries of its ``slaves/`` in name order; [] for anything else."""
    slaves_dir = os.path.join(directory, "slaves")
    try:
        names = sorted(os.listdir(slaves_dir))
    except OSError:
        return []
    return [os.path.realpath(os.path.join(slaves_dir, n)) for n in names]


def disk_dir(root: str, name: str) -> str:
    """Sysfs directory of whole disk ``name`` (``/sys/block/<name>``, else class/block)."""
    path = under_root(root, f"/sys/block/{name}")
    return path if os.path.isdir(path) else _class_block(root, name)


def infer_transport(name: str, resolved_dir: str) -> str | None:
    """Bus of a whole disk from its resolved sysfs path, else from its name prefix."""
    parts = resolved_dir.split(os.sep)
    for marker, transport in _PATH_TRANSPORTS:
        if any(part == marker or part.startswith(marker) for part in parts):
            return transport
    for prefix, transport in _NAME_TRANSPORTS:
        if name.startswith(prefix):
            return transport
    return None


def _sysfs_relative(root: str, path: str) -> str:
    """Resolved ``path`` relative to ``root`` (so a test tree's own path never matches)."""
    return os.path.relpath(os.path.realpath(path), os.path.realpath(root))


def _flag(text: str | None) -> bool | None:
    if text in ("0", "1"):
        return text == "1"
    return None


def block_device(root: str, name: str) -> BlockDevice:
    """Facts about whole disk ``name`` from sysfs (see the module docstring for each file).

    Missing files give None; values are stripped text. Never raises.
    """
    base = disk_dir(root, name)

    def attr(*relative: str) -> str | None:
        for rel in relative:
            value = read_text(os.path.join(base, rel))
            if value is not None:
                return value
        return None

    relative = _sysfs_relative(root, base)
    model, vendor = attr("device/model"), attr("device/vendor")
    return BlockDevice(
        name=name,
        model=model,
        vendor=vendor,
        firmware=attr("device/firmware_rev", "device/rev"),
        serial=attr("device/serial", "serial"),
        rotational=_flag(attr("queue/rotational")),
        write_cache=attr("queue/write_cache"),
        fua=_flag(attr("queue/fua")),
        transport=infer_transport(name, relative),
        has_flush_counters=stat_has_flush_counters(attr("stat")),
        controller=sysfs_controller(root, relative, vendor, model),
    )
