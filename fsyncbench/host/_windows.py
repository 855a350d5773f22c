"""Windows: the target's volume, the physical disks under it, and what each disk reports about
its bus, model, seek penalty and write cache; the mount from psutil.

The calls into Windows are :func:`fsyncbench.host._winioctl.device_io_control` (the IOCTLs,
whose buffers that module packs and parses) and :func:`volume_of_path` (which volume holds
a path); :func:`collect` takes both as arguments, so tests on any system feed it recorded
answers.

Sources:

- ``\\\\.\\C:`` opens a volume, ``\\\\.\\PhysicalDriveN`` a disk
  (https://learn.microsoft.com/en-us/windows/win32/fileio/naming-a-file, "Win32 Device
  Namespaces"); the volume holding a path is found with GetVolumePathNameW
  (https://learn.microsoft.com/en-us/windows/win32/api/fileapi/nf-fileapi-getvolumepathnamew),
  a volume mounted in a folder is opened by its GUID path from
  GetVolumeNameForVolumeMountPointW
  (https://learn.microsoft.com/en-us/windows/win32/api/fileapi/nf-fileapi-getvolumenameforvolumemountpointw);
  its disks are the DiskNumbers of IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS.
- STORAGE_BUS_TYPE values: :data:`BUS_TRANSPORTS`
  (https://learn.microsoft.com/en-us/windows/win32/api/winioctl/ne-winioctl-storage_bus_type).
- What Windows' disk class driver puts in STORAGE_WRITE_CACHE_PROPERTY (ClasspWriteCacheProperty,
  https://github.com/microsoft/Windows-driver-samples/blob/main/storage/class/classpnp/src/utils.c):
  WriteCacheEnabled from the WCE bit of the disk's caching mode page, WriteThroughSupported
  from its DPOFUA bit (FUA), FlushCacheSupported from whether a SYNCHRONIZE CACHE succeeds,
  NVCacheEnabled always FALSE (Microsoft Learn: "whether the device has a battery backup for
  the write cache"; other drivers may set it), UserDefinedPowerProtection = DEV_POWER_PROTECTED,
  which disk.sys sets from the disk's "CacheIsPowerProtected" parameter (the policy "Turn off
  Windows write-cache buffer flushing on the device") and then completes every flush request
  without sending it: "We've been assured that both the disk and adapter caches are
  battery-backed" (DiskShutdownFlush,
  https://github.com/microsoft/Windows-driver-samples/blob/main/storage/class/disk/src/disk.c).
- DEVICE_SEEK_PENALTY_DESCRIPTOR.IncursSeekPenalty: a seek penalty is a spinning disk.

No hypervisor flag is read: the CPUID "hypervisor present" bit says a hypervisor runs, not
that this is a guest (https://learn.microsoft.com/en-us/virtualization/hyper-v-on-windows/tlfs/feature-discovery),
and Windows with Hyper-V enabled (virtualization-based security, WSL 2) runs its own host in
Hyper-V's root partition above one. A disk whose model or bus is an emulated disk's is
recorded instead (:func:`fsyncbench.host.layers.virtual_disk_hint`), marked as inferred
from the model string.
"""

from __future__ import annotations

import ntpath
import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any

from fsyncbench.model import (
    POWER_PROTECTION_NV_CACHE,
    POWER_PROTECTION_USER_POLICY,
    BlockDevice,
    StorageLayer,
    StorageTarget,
    Virtualization,
)

from . import known
from ._common import PlatformFacts, backslashes_to_slashes, psutil_mount
from ._winioctl import (
    EXTENTS_BUFFER_BYTES,
    IOCTL_STORAGE_QUERY_PROPERTY,
    IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS,
    PROPERTY_BUFFER_BYTES,
    STORAGE_DEVICE_PROPERTY,
    STORAGE_DEVICE_SEEK_PENALTY_PROPERTY,
    STORAGE_DEVICE_WRITE_CACHE_PROPERTY,
    WRITE_CACHE_DISABLED,
    WRITE_CACHE_ENABLED,
    WRITE_CACHE_TYPE_NONE,
    WRITE_CACHE_TYPE_WRITE_THROUGH,
    WRITE_THROUGH_NOT_SUPPORTED,
    WRITE_THROUGH_SUPPORTED,
    DeviceDescriptor,
    WriteCacheProperty,
    device_io_control,
    parse_device_descriptor,
    parse_disk_extents,
    parse_seek_penalty,
    parse_write_cache,
    property_query,
)
from .layers import disk_layer, filesystem_layer

_DRIVE = re.compile(r"^([A-Za-z]):")

#: The note of a virtual hard disk's layer (BusTypeFileBackedVirtual: module docstring of
#: :mod:`fsyncbench.host.layers`).
VHD_NOTE = (
    "a virtual hard disk file (VHD/VHDX) mounted here: the volume holding the file is not followed"
)

#: ``ioctl(device path, control code, input bytes, output size in bytes) -> output bytes``;
#: raises OSError (``winerror`` set on Windows) when the device cannot be opened or the
#: request fails.
Ioctl = Callable[[str, int, bytes, int], bytes]
#: ``volume_of(path) -> device path of the volume holding it`` (``\\.\C:``), None: none.
VolumeOf = Callable[[str], "str | None"]

#: STORAGE_BUS_TYPE value -> ``BlockDevice.transport``: the enum name without ``BusType``,
#: lower case, except where the storage-layer vocabulary (:mod:`fsyncbench.host.layers`)
#: has a name: iSCSI and NVMe over fabrics send the flush over the network
#: (``iscsi``, ``nvme-fabrics``), a virtual hard disk file is ``file-backed-virtual``, and
#: storage class memory (persistent memory) is ``pmem``. 0 (Unknown) and values past the
#: documented ones give None.
BUS_TRANSPORTS: dict[int, str] = {
    1: "scsi",
    2: "atapi",
    3: "ata",
    4: "1394",
    5: "ssa",
    6: "fibre",
    7: "usb",
    8: "raid",
    9: "iscsi",
    10: "sas",
    11: "sata",
    12: "sd",
    13: "mmc",
    14: "virtual",
    15: "file-backed-virtual",
    16: "spaces",
    17: "nvme",
    18: "pmem",
    19: "ufs",
    20: "nvme-fabrics",
}


def bus_transport(bus_type: int) -> str | None:
    """``BlockDevice.transport`` of a STORAGE_BUS_TYPE value (:data:`BUS_TRANSPORTS`)."""
    return BUS_TRANSPORTS.get(bus_type)


def write_cache_text(cache: WriteCacheProperty | None) -> str | None:
    """The cache in the words of Linux's ``queue/write_cache``: "write through" for a disk
    without a write cache, with a write-through one, or with its cache disabled; "write
    back" for an enabled cache of any other type; None when Windows cannot tell."""
    if cache is None:
        return None
    if cache.write_cache_type in (WRITE_CACHE_TYPE_NONE, WRITE_CACHE_TYPE_WRITE_THROUGH):
        return "write through"
    if cache.write_cache_enabled == WRITE_CACHE_ENABLED:
        return "write back"
    if cache.write_cache_enabled == WRITE_CACHE_DISABLED:
        return "write through"
    return None


def power_protection(cache: WriteCacheProperty | None) -> tuple[str, ...]:
    """Who says the write cache survives a power cut: NVCacheEnabled (the driver reports a
    battery-backed cache), UserDefinedPowerProtection (the user's disk policy; Windows then
    sends no flush)."""
    if cache is None:
        return ()
    found = []
    if cache.nv_cache_enabled:
        found.append(POWER_PROTECTION_NV_CACHE)
    if cache.user_defined_power_protection:
        found.append(POWER_PROTECTION_USER_POLICY)
    return tuple(found)


def _write_through_supported(cache: WriteCacheProperty | None) -> bool | None:
    if cache is None:
        return None
    return {WRITE_THROUGH_SUPPORTED: True, WRITE_THROUGH_NOT_SUPPORTED: False}.get(
        cache.write_through_supported
    )


def block_device(
    name: str,
    descriptor: DeviceDescriptor,
    cache: WriteCacheProperty | None = None,
    seek_penalty: bool | None = None,
) -> BlockDevice:
    """A :class:`BlockDevice` from one disk's answers: model = ProductId, vendor = VendorId,
    firmware = ProductRevision, serial = SerialNumber, transport = :func:`bus_transport`,
    removable = RemovableMedia, rotational = IncursSeekPenalty, write_cache =
    :func:`write_cache_text`, fua = WriteThroughSupported (the class driver sets it from the
    disk's FUA bit), flush_supported = FlushCacheSupported, power_protection =
    :func:`power_protection`. Windows exposes no per-disk flush counters."""
    return BlockDevice(
        name=name,
        model=descriptor.product,
        vendor=descriptor.vendor,
        firmware=descriptor.revision,
        serial=descriptor.serial,
        rotational=seek_penalty,
        write_cache=write_cache_text(cache),
        fua=_write_through_supported(cache),
        transport=bus_transport(descriptor.bus_type),
        has_flush_counters=False,
        removable=descriptor.removable,
        flush_supported=None if cache is None else cache.flush_cache_supported,
        power_protection=power_protection(cache),
    )


def drive_volume(path: str) -> str | None:
    """``\\\\.\\C:`` for a path on drive C: (also ``\\\\?\\C:\\...``); None for a UNC path or
    a path without a drive letter."""
    if path.startswith(("\\\\?\\", "\\\\.\\")) and _DRIVE.match(path[4:]):
        path = path[4:]
    match = _DRIVE.match(path)
    return f"\\\\.\\{match.group(1).upper()}:" if match else None


def volume_device(mount_point: str, volume_name: Callable[[str], str | None]) -> str | None:
    """The device path to open for the volume mounted at ``mount_point``: ``\\\\.\\C:`` for
    a drive's root, else the volume's GUID path (``volume_name(mount_point)``, e.g.
    ``\\\\?\\Volume{…}\\``) without its trailing backslash (CreateFileW opens the volume,
    not its root directory, without it)."""
    if re.fullmatch(r"[A-Za-z]:\\?", mount_point):
        return drive_volume(mount_point)
    name = volume_name(mount_point if mount_point.endswith("\\") else mount_point + "\\")
    return name.rstrip("\\") if name else None


def _query(ioctl: Ioctl, device: str, property_id: int) -> tuple[bytes | None, str]:
    """(the answer, "") to IOCTL_STORAGE_QUERY_PROPERTY for ``property_id``, or (None, why)."""
    query = property_query(property_id)
    try:
        return ioctl(device, IOCTL_STORAGE_QUERY_PROPERTY, query, PROPERTY_BUFFER_BYTES), ""
    except (OSError, ValueError) as exc:
        return None, str(exc)


def read_disk(number: int, ioctl: Ioctl) -> tuple[BlockDevice | None, str]:
    """(the disk, what could not be read) for ``PhysicalDrive<number>``: None when even its
    device descriptor could not be read (then nothing is known about it)."""
    name = f"PhysicalDrive{number}"
    device = f"\\\\.\\{name}"
    raw, error = _query(ioctl, device, STORAGE_DEVICE_PROPERTY)
    descriptor = None if raw is None else parse_device_descriptor(raw)
    if descriptor is None:
        return None, f"{name}: device descriptor not read ({error or 'short answer'})"
    missing = []
    raw, error = _query(ioctl, device, STORAGE_DEVICE_WRITE_CACHE_PROPERTY)
    cache = None if raw is None else parse_write_cache(raw)
    if cache is None:
        missing.append(f"write-cache property not read ({error or 'short answer'})")
    raw, error = _query(ioctl, device, STORAGE_DEVICE_SEEK_PENALTY_PROPERTY)
    seek = None if raw is None else parse_seek_penalty(raw)
    if seek is None:
        missing.append(f"seek penalty not read ({error or 'short answer'})")
    return block_device(name, descriptor, cache, seek), "; ".join(missing)


def storage_target(
    target: str,
    ioctl: Ioctl,
    volume_of: VolumeOf,
    partitions: Sequence[Any] | None = None,
) -> StorageTarget:
    """The psutil mount holding ``target`` (an absolute Windows path), the physical disks of
    its volume (IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS) and what each reports, as a stack:
    the filesystem, then each disk below it. What could not be read is the note of the
    layer above it: a volume whose disks were not found leaves the filesystem as the last
    layer (the stack is then not followed to its media). Never raises."""
    mount = psutil_mount(target, partitions, normalise=backslashes_to_slashes)
    volume = volume_of(target)
    disks: list[BlockDevice] = []
    disk_notes: dict[str, str] = {}
    missing: list[str] = []
    if volume is None:
        missing.append("no local volume holds the path (a network share?)")
    else:
        try:
            raw = ioctl(volume, IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS, b"", EXTENTS_BUFFER_BYTES)
            numbers = parse_disk_extents(raw)
            if not numbers:
                missing.append(f"the volume {volume} reported no disk extents")
        except (OSError, ValueError) as exc:
            numbers = ()
            missing.append(f"the disks of {volume} were not read ({exc})")
        for number in numbers:
            disk, note = read_disk(number, ioctl)
            if disk is None:
                missing.append(note)
            else:
                if disk.transport == "file-backed-virtual":
                    note = "; ".join(x for x in (note, VHD_NOTE) if x)
                disks.append(disk)
                disk_notes[disk.name] = note
    note = "; ".join(missing)
    top: list[StorageLayer] = [] if mount is None else [filesystem_layer(mount, 0, note)]
    layers = top + [disk_layer(d, len(top), disk_notes.get(d.name, "")) for d in disks]
    chain = tuple(x for x in (volume, *(d.name for d in disks)) if x)
    return StorageTarget(
        path=target, mount=mount, chain=chain, disks=tuple(disks), layers=tuple(layers)
    )


def volume_of_path(path: str) -> str | None:
    """The device path of the volume holding ``path``: GetVolumePathNameW gives its mount
    point, :func:`volume_device` the path to open (a folder mount by its GUID path). Falls
    back to the path's drive letter where those calls fail, and on other systems."""
    if sys.platform == "win32":
        import ctypes

        kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
        buffer = ctypes.create_unicode_buffer(32768)
        if not kernel32.GetVolumePathNameW(path, buffer, len(buffer)):
            return drive_volume(path)

        def volume_name(mount_point: str) -> str | None:
            name = ctypes.create_unicode_buffer(64)  # "\\?\Volume{GUID}\" is 49 characters
            ok = kernel32.GetVolumeNameForVolumeMountPointW(mount_point, name, len(name))
            return name.value if ok else None

        return volume_device(buffer.value, volume_name) or drive_volume(path)
    else:
        return drive_volume(path)


def resolve_path(target: str) -> str:
    """``target`` made absolute with links resolved (:func:`os.path.realpath`) on Windows.
    Elsewhere (this module's tests) a Windows path (with a drive or a UNC share) is only
    normalised as one, and any other path is resolved by the system at hand."""
    if sys.platform == "win32":
        return os.path.realpath(target)
    else:
        return ntpath.normpath(target) if ntpath.splitdrive(target)[0] else os.path.realpath(target)


def collect(
    target: str,
    ioctl: Ioctl | None = None,
    volume_of: VolumeOf | None = None,
    partitions: Sequence[Any] | None = None,
) -> PlatformFacts:
    """Windows facts for ``target``; ``ioctl``, ``volume_of`` and ``partitions`` replace
    DeviceIoControl, the volume lookup and psutil in tests. Never raises: what cannot be
    read is None or a layer's note."""
    path = resolve_path(target)
    st = storage_target(path, ioctl or device_io_control, volume_of or volume_of_path, partitions)
    return PlatformFacts(
        target=st,
        virtualization=known.virtualization(Virtualization(), st.disks),
        sqlite_library=None,
    )
