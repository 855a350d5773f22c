"""The Windows storage IOCTLs fsyncbench sends, as bytes: their control codes, the input
buffers packed and the output buffers parsed with :mod:`struct` following the documented
layouts (little-endian, natural alignment), and the one call that sends them
(:func:`device_io_control`). Pure but for that call, so the parsing runs and is tested on any
system; what the parsed values mean for durability is :mod:`fsyncbench.host._windows`.

Layouts (Microsoft Learn; winioctl.h):

- Control codes: CTL_CODE(DeviceType, Function, Method, Access) = DeviceType << 16 |
  Access << 14 | Function << 2 | Method
  (https://learn.microsoft.com/en-us/windows-hardware/drivers/kernel/defining-i-o-control-codes);
  IOCTL_STORAGE_QUERY_PROPERTY = CTL_CODE(IOCTL_STORAGE_BASE 0x2d, 0x500, METHOD_BUFFERED,
  FILE_ANY_ACCESS)
  (https://learn.microsoft.com/en-us/windows/win32/api/winioctl/ni-winioctl-ioctl_storage_query_property);
  IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS = CTL_CODE(IOCTL_VOLUME_BASE 'V', 0, METHOD_BUFFERED,
  FILE_ANY_ACCESS)
  (https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/ntddvol/ni-ntddvol-ioctl_volume_get_volume_disk_extents).
- VOLUME_DISK_EXTENTS: ULONG NumberOfDiskExtents, then DISK_EXTENT[] at offset 8, each ULONG
  DiskNumber (the N of PhysicalDriveN), LARGE_INTEGER StartingOffset, ExtentLength: 24 bytes
  (https://learn.microsoft.com/en-us/windows/win32/api/winioctl/ns-winioctl-volume_disk_extents,
  https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/ntddvol/ns-ntddvol-_disk_extent).
- STORAGE_PROPERTY_QUERY: STORAGE_PROPERTY_ID PropertyId, STORAGE_QUERY_TYPE QueryType
  (PropertyStandardQuery 0), BYTE AdditionalParameters[1]: 12 bytes with padding
  (https://learn.microsoft.com/en-us/windows/win32/api/winioctl/ns-winioctl-storage_property_query);
  STORAGE_PROPERTY_ID: StorageDeviceProperty 0, StorageDeviceWriteCacheProperty 4,
  StorageDeviceSeekPenaltyProperty 7
  (https://learn.microsoft.com/en-us/windows/win32/api/winioctl/ne-winioctl-storage_property_id).
- STORAGE_DEVICE_DESCRIPTOR: DWORD Version, Size; BYTE DeviceType, DeviceTypeModifier;
  BOOLEAN RemovableMedia, CommandQueueing; DWORD VendorIdOffset, ProductIdOffset,
  ProductRevisionOffset, SerialNumberOffset (byte offsets from the start of NUL-terminated
  ASCII strings, 0 for none); STORAGE_BUS_TYPE BusType; DWORD RawPropertiesLength
  (https://learn.microsoft.com/en-us/windows/win32/api/winioctl/ns-winioctl-storage_device_descriptor).
  SCSI disks give 0xFFFFFFFF for none (Windows' class driver: "SCSI sets offsets to -1,
  ATAPI sets to 0", ClassScanForSpecial in
  https://github.com/microsoft/Windows-driver-samples/blob/main/storage/class/classpnp/src/utils.c).
- STORAGE_WRITE_CACHE_PROPERTY: DWORD Version, Size; WRITE_CACHE_TYPE WriteCacheType (Unknown
  0, None 1, WriteBack 2, WriteThrough 3); WRITE_CACHE_ENABLE WriteCacheEnabled (Unknown 0,
  Disabled 1, Enabled 2); WRITE_CACHE_CHANGE WriteCacheChangeable (Unknown 0, NotChangeable
  1, Changeable 2); WRITE_THROUGH WriteThroughSupported (Unknown 0, NotSupported 1,
  Supported 2); BOOLEAN FlushCacheSupported, UserDefinedPowerProtection, NVCacheEnabled
  (https://learn.microsoft.com/en-us/windows/win32/api/winioctl/ns-winioctl-storage_write_cache_property).
- DEVICE_SEEK_PENALTY_DESCRIPTOR: DWORD Version, Size; BOOLEAN IncursSeekPenalty
  (https://learn.microsoft.com/en-us/windows/win32/api/winioctl/ns-winioctl-device_seek_penalty_descriptor).
- The call: CreateFileW with ``dwDesiredAccess`` 0 "can query certain metadata such as file,
  directory, or device attributes without accessing that file or device"
  (https://learn.microsoft.com/en-us/windows/win32/api/fileapi/nf-fileapi-createfilew), then
  DeviceIoControl
  (https://learn.microsoft.com/en-us/windows/win32/api/ioapiset/nf-ioapiset-deviceiocontrol).
"""

from __future__ import annotations

import errno
import struct
import sys
from typing import NamedTuple

METHOD_BUFFERED = 0
FILE_ANY_ACCESS = 0
IOCTL_STORAGE_BASE = 0x2D  # FILE_DEVICE_MASS_STORAGE
IOCTL_VOLUME_BASE = 0x56  # 'V'


def ctl_code(device_type: int, function: int, method: int, access: int) -> int:
    """CTL_CODE of winioctl.h (module docstring)."""
    return (device_type << 16) | (access << 14) | (function << 2) | method


IOCTL_STORAGE_QUERY_PROPERTY = ctl_code(IOCTL_STORAGE_BASE, 0x500, METHOD_BUFFERED, FILE_ANY_ACCESS)
IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS = ctl_code(
    IOCTL_VOLUME_BASE, 0, METHOD_BUFFERED, FILE_ANY_ACCESS
)

STORAGE_DEVICE_PROPERTY = 0
STORAGE_DEVICE_WRITE_CACHE_PROPERTY = 4
STORAGE_DEVICE_SEEK_PENALTY_PROPERTY = 7
PROPERTY_STANDARD_QUERY = 0

WRITE_CACHE_TYPE_NONE = 1
WRITE_CACHE_TYPE_WRITE_THROUGH = 3
WRITE_CACHE_DISABLED = 1
WRITE_CACHE_ENABLED = 2
WRITE_THROUGH_NOT_SUPPORTED = 1
WRITE_THROUGH_SUPPORTED = 2

#: Output buffer sizes (bytes). A device descriptor holds four short strings and the bus's
#: raw properties; the extents buffer holds the 8-byte header and 32 extents of 24 bytes (a
#: volume on more is reported as not read: ERROR_MORE_DATA).
PROPERTY_BUFFER_BYTES = 4096
MAX_EXTENTS = 32
EXTENTS_BUFFER_BYTES = 8 + 24 * MAX_EXTENTS


_NO_STRING = (0, 0xFFFFFFFF)
_DEVICE_DESCRIPTOR = struct.Struct("<IIBBBBIIIIII")  # up to RawPropertiesLength: 36 bytes
_WRITE_CACHE = struct.Struct("<IIIIIIBBB")  # 27 bytes (28 with the padding)
_EXTENT = struct.Struct("<I4xqq")  # DiskNumber, padding, StartingOffset, ExtentLength


class DeviceDescriptor(NamedTuple):
    """The parsed STORAGE_DEVICE_DESCRIPTOR (module docstring); strings stripped, None where
    the device has none."""

    device_type: int
    removable: bool
    command_queueing: bool
    vendor: str | None
    product: str | None
    revision: str | None
    serial: str | None
    bus_type: int


class WriteCacheProperty(NamedTuple):
    """The parsed STORAGE_WRITE_CACHE_PROPERTY (module docstring): enum values as numbers."""

    write_cache_type: int
    write_cache_enabled: int
    write_cache_changeable: int
    write_through_supported: int
    flush_cache_supported: bool
    user_defined_power_protection: bool
    nv_cache_enabled: bool


def property_query(property_id: int) -> bytes:
    """The STORAGE_PROPERTY_QUERY input buffer asking for ``property_id`` (standard query)."""
    return struct.pack("<II4x", property_id, PROPERTY_STANDARD_QUERY)


def parse_disk_extents(data: bytes) -> tuple[int, ...]:
    """Disk numbers of a VOLUME_DISK_EXTENTS buffer, each once, in extent order; () for a
    buffer too short for its header. Extents the buffer does not hold are left out."""
    if len(data) < 4:
        return ()
    (count,) = struct.unpack_from("<I", data, 0)
    numbers: list[int] = []
    for index in range(count):
        offset = 8 + index * _EXTENT.size
        if offset + _EXTENT.size > len(data):
            break
        number = _EXTENT.unpack_from(data, offset)[0]
        if number not in numbers:
            numbers.append(number)
    return tuple(numbers)


def _string_at(data: bytes, offset: int) -> str | None:
    if offset in _NO_STRING or offset >= len(data):
        return None
    end = data.find(b"\0", offset)
    raw = data[offset:] if end < 0 else data[offset:end]
    return raw.decode("ascii", errors="replace").strip() or None


def parse_device_descriptor(data: bytes) -> DeviceDescriptor | None:
    """A STORAGE_DEVICE_DESCRIPTOR buffer, or None when it is shorter than the fixed part
    (36 bytes). String offsets outside the buffer read as no string. Never raises."""
    if len(data) < _DEVICE_DESCRIPTOR.size:
        return None
    (
        _version,
        _size,
        device_type,
        _modifier,
        removable,
        queueing,
        vendor,
        product,
        revision,
        serial,
        bus_type,
        _raw_length,
    ) = _DEVICE_DESCRIPTOR.unpack_from(data, 0)
    return DeviceDescriptor(
        device_type=device_type,
        removable=bool(removable),
        command_queueing=bool(queueing),
        vendor=_string_at(data, vendor),
        product=_string_at(data, product),
        revision=_string_at(data, revision),
        serial=_string_at(data, serial),
        bus_type=bus_type,
    )


def parse_write_cache(data: bytes) -> WriteCacheProperty | None:
    """A STORAGE_WRITE_CACHE_PROPERTY buffer, or None when it is shorter than its 27 bytes
    (a driver that answers with the header alone). Never raises."""
    if len(data) < _WRITE_CACHE.size:
        return None
    values = _WRITE_CACHE.unpack_from(data, 0)
    return WriteCacheProperty(*values[2:6], *(bool(v) for v in values[6:9]))


def parse_seek_penalty(data: bytes) -> bool | None:
    """IncursSeekPenalty of a DEVICE_SEEK_PENALTY_DESCRIPTOR buffer; None when too short."""
    if len(data) < 9:
        return None
    return data[8] != 0


def device_io_control(device: str, code: int, in_buffer: bytes, out_size: int) -> bytes:
    """Open ``device`` with CreateFileW (access 0, sharing read and write), send one
    DeviceIoControl and return the bytes it wrote. Raises OSError (the Windows error) on
    failure, and ENOSYS on any other system."""
    if sys.platform == "win32":
        import ctypes
        from ctypes import wintypes

        kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
        create = kernel32.CreateFileW
        create.argtypes = (
            wintypes.LPCWSTR,
            wintypes.DWORD,
            wintypes.DWORD,
            wintypes.LPVOID,
            wintypes.DWORD,
            wintypes.DWORD,
            wintypes.HANDLE,
        )
        create.restype = wintypes.HANDLE
        control = kernel32.DeviceIoControl
        control.argtypes = (
            wintypes.HANDLE,
            wintypes.DWORD,
            wintypes.LPVOID,
            wintypes.DWORD,
            wintypes.LPVOID,
            wintypes.DWORD,
            ctypes.POINTER(wintypes.DWORD),
            wintypes.LPVOID,
        )
        control.restype = wintypes.BOOL
        kernel32.CloseHandle.argtypes = (wintypes.HANDLE,)
        kernel32.CloseHandle.restype = wintypes.BOOL
        file_share_read_write = 0x1 | 0x2  # FILE_SHARE_READ | FILE_SHARE_WRITE
        open_existing = 3
        handle = create(device, 0, file_share_read_write, None, open_existing, 0, None)
        if handle is None or handle == ctypes.c_void_p(-1).value:  # INVALID_HANDLE_VALUE
            raise ctypes.WinError(ctypes.get_last_error())
        try:
            source = ctypes.create_string_buffer(in_buffer, len(in_buffer)) if in_buffer else None
            out = ctypes.create_string_buffer(out_size)
            returned = wintypes.DWORD(0)
            if not control(
                handle, code, source, len(in_buffer), out, out_size, ctypes.byref(returned), None
            ):
                raise ctypes.WinError(ctypes.get_last_error())
            return out.raw[: returned.value]
        finally:
            kernel32.CloseHandle(handle)
    else:
        raise OSError(errno.ENOSYS, "DeviceIoControl is Windows only")
