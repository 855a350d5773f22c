"""Tests of fsyncbench.host on Windows, run anywhere: the answers of DeviceIoControl are byte
buffers built here with struct.pack, field by field, following the layouts Microsoft Learn
documents for winioctl.h (each builder names its page; natural alignment, little-endian, as
on every Windows architecture), and fed to the parsers and to collect() in place of the
real call. No test here ran on Windows: what only a real machine shows is listed in
docs/platforms.md."""

from __future__ import annotations

import errno
import struct
import sys
from collections import namedtuple

import pytest
from factories import flush, write

from fsyncbench import host as host_facade
from fsyncbench.host import _windows, _winioctl
from fsyncbench.judge import devices, engine
from fsyncbench.model import (
    HONEST_FLUSH,
    INFERRED,
    POWER_PROTECTION_NV_CACHE,
    POWER_PROTECTION_USER_POLICY,
    UNVERIFIABLE,
    VOLATILE_CACHE,
    Host,
    Virtualization,
)
from fsyncbench.report import host_text

Part = namedtuple("Part", "device mountpoint fstype opts")

#: psutil.disk_partitions(all=True) as Windows gives it: the drive root as device and mount
#: point, the filesystem, "rw"/"ro" and the drive type (GetDriveType).
WIN_PARTITIONS = [
    Part("C:\\", "C:\\", "NTFS", "rw,fixed"),
    Part("D:\\", "D:\\", "ReFS", "rw,fixed"),
    Part("E:\\", "E:\\", "NTFS", "rw,fixed"),
]

# --------------------------------------------------------------------------- buffers
# STORAGE_BUS_TYPE values (https://learn.microsoft.com/en-us/windows/win32/api/winioctl/
# ne-winioctl-storage_bus_type): the enum counts up from BusTypeUnknown = 0.
BUS_ATA, BUS_SATA, BUS_VIRTUAL, BUS_FILE_BACKED_VIRTUAL, BUS_NVME = 3, 11, 14, 15, 17


def device_descriptor(
    vendor: bytes | None,
    product: bytes | None,
    revision: bytes | None = None,
    serial: bytes | None = None,
    bus: int = BUS_NVME,
    removable: bool = False,
    no_string: int = 0,
) -> bytes:
    """A STORAGE_DEVICE_DESCRIPTOR (https://learn.microsoft.com/en-us/windows/win32/api/
    winioctl/ns-winioctl-storage_device_descriptor): DWORD Version, Size; BYTE DeviceType,
    DeviceTypeModifier; BOOLEAN RemovableMedia, CommandQueueing; DWORD VendorIdOffset,
    ProductIdOffset, ProductRevisionOffset, SerialNumberOffset; STORAGE_BUS_TYPE BusType
    (a 4-byte enum); DWORD RawPropertiesLength; BYTE RawDeviceProperties[1], padded to 40
    bytes; then the NUL-terminated strings the offsets point at. ``no_string`` is the offset
    of a missing string: 0 (documented), or 0xFFFFFFFF (what SCSI disks give)."""
    fixed = 40
    strings = b""
    offsets = []
    for text in (vendor, product, revision, serial):
        if text is None:
            offsets.append(no_string)
        else:
            offsets.append(fixed + len(strings))
            strings += text + b"\0"
    head = struct.pack(
        "<IIBBBBIIIIII", fixed, fixed + len(strings), 0, 0, removable, 1, *offsets, bus, 0
    )
    return head + b"\0" * (fixed - len(head)) + strings


def write_cache_property(
    cache_type: int = 2,
    enabled: int = 2,
    changeable: int = 2,
    write_through: int = 2,
    flush: bool = True,
    user_power_protection: bool = False,
    nv_cache: bool = False,
) -> bytes:
    """A STORAGE_WRITE_CACHE_PROPERTY (https://learn.microsoft.com/en-us/windows/win32/api/
    winioctl/ns-winioctl-storage_write_cache_property): DWORD Version, Size; four 4-byte
    enums WriteCacheType (Unknown 0, None 1, WriteBack 2, WriteThrough 3), WriteCacheEnabled
    (Unknown 0, Disabled 1, Enabled 2), WriteCacheChangeable (Unknown 0, NotChangeable 1,
    Changeable 2), WriteThroughSupported (Unknown 0, NotSupported 1, Supported 2); BOOLEAN
    FlushCacheSupported, UserDefinedPowerProtection, NVCacheEnabled; padded to 28 bytes.
    Defaults: a write-back cache, enabled, the disk takes FUA and flushes."""
    return struct.pack(
        "<IIiiiiBBBx",
        28,
        28,
        cache_type,
        enabled,
        changeable,
        write_through,
        flush,
        user_power_protection,
        nv_cache,
    )


def seek_penalty(incurs: bool) -> bytes:
    """A DEVICE_SEEK_PENALTY_DESCRIPTOR (https://learn.microsoft.com/en-us/windows/win32/api/
    winioctl/ns-winioctl-device_seek_penalty_descriptor): DWORD Version, Size; BOOLEAN
    IncursSeekPenalty; padded to 12 bytes."""
    return struct.pack("<IIB3x", 12, 12, incurs)


def disk_extents(*extents: tuple[int, int, int]) -> bytes:
    """A VOLUME_DISK_EXTENTS (https://learn.microsoft.com/en-us/windows/win32/api/winioctl/
    ns-winioctl-volume_disk_extents): DWORD NumberOfDiskExtents, 4 bytes of padding (the
    array's LARGE_INTEGERs align it to 8), then DISK_EXTENT (DiskNumber, padding,
    LARGE_INTEGER StartingOffset, ExtentLength: https://learn.microsoft.com/en-us/
    windows-hardware/drivers/ddi/ntddvol/ns-ntddvol-_disk_extent) per (disk, start, length)."""
    data = struct.pack("<I4x", len(extents))
    for number, start, length in extents:
        data += struct.pack("<I4xqq", number, start, length)
    return data


def property_query(property_id: int) -> bytes:
    """The STORAGE_PROPERTY_QUERY input (https://learn.microsoft.com/en-us/windows/win32/api/
    winioctl/ns-winioctl-storage_property_query): PropertyId, QueryType 0
    (PropertyStandardQuery), AdditionalParameters[1] padded to 12 bytes."""
    return struct.pack("<II4x", property_id, 0)


# STORAGE_PROPERTY_ID values (https://learn.microsoft.com/en-us/windows/win32/api/winioctl/
# ne-winioctl-storage_property_id).
DEVICE, WRITE_CACHE, SEEK_PENALTY = 0, 4, 7

SAMSUNG_NVME = device_descriptor(
    None, b"Samsung SSD 980 PRO 1TB", b"5B2QGXA7", b"0025_38B2_1234_5678.", BUS_NVME
)
#: SCSI-style strings: inquiry fields padded with blanks, a missing serial at 0xFFFFFFFF.
QEMU_SATA = device_descriptor(
    b"QEMU    ", b"QEMU HARDDISK   ", b"2.5+", None, BUS_SATA, no_string=0xFFFFFFFF
)
WD_HDD = device_descriptor(None, b"WDC WD40EFRX-68N32N0", b"82.00A82", b"WD-WCC7K0000000", BUS_SATA)
VHD = device_descriptor(b"Msft    ", b"Virtual Disk    ", b"1.0 ", None, BUS_FILE_BACKED_VIRTUAL)


class FakeWindows:
    """DeviceIoControl replaced: answers by (device, control code, input) from a table; an
    OSError in the table is raised; anything not in it fails as Windows' ERROR_INVALID_FUNCTION
    would. Records every call."""

    def __init__(self, answers: dict[tuple[str, int, bytes], bytes | OSError]):
        self.answers = answers
        self.calls: list[tuple[str, int, bytes, int]] = []

    def __call__(self, device: str, code: int, data: bytes, out_size: int) -> bytes:
        self.calls.append((device, code, data, out_size))
        answer = self.answers.get((device, code, data), OSError(1, "Incorrect function"))
        if isinstance(answer, OSError):
            raise answer
        return answer[:out_size]


def disk_answers(
    number: int,
    descriptor: bytes | OSError,
    cache: bytes | OSError | None = None,
    seek: bytes | OSError | None = None,
) -> dict[tuple[str, int, bytes], bytes | OSError]:
    device = f"\\\\.\\PhysicalDrive{number}"
    code = _winioctl.IOCTL_STORAGE_QUERY_PROPERTY
    out: dict[tuple[str, int, bytes], bytes | OSError] = {
        (device, code, property_query(DEVICE)): descriptor
    }
    if cache is not None:
        out[(device, code, property_query(WRITE_CACHE))] = cache
    if seek is not None:
        out[(device, code, property_query(SEEK_PENALTY))] = seek
    return out


def volume_answer(volume: str, extents: bytes | OSError) -> dict:
    return {(volume, _winioctl.IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS, b""): extents}


def nvme_machine(**cache: object) -> FakeWindows:
    """C: on one NVMe SSD (PhysicalDrive0) whose write-cache property is ``cache``."""
    return FakeWindows(
        {
            **volume_answer("\\\\.\\C:", disk_extents((0, 1 << 20, 500 << 30))),
            **disk_answers(0, SAMSUNG_NVME, write_cache_property(**cache), seek_penalty(False)),
        }
    )


def collect_on(machine: FakeWindows, target: str = "C:\\data\\bench"):
    return _windows.collect(
        target, ioctl=machine, volume_of=_windows.drive_volume, partitions=WIN_PARTITIONS
    )


# --------------------------------------------------------------------------- layouts


def test_control_codes_are_winioctl_h_values():
    # CTL_CODE(0x2d, 0x500, 0, 0) and CTL_CODE(0x56, 0, 0, 0), as winioctl.h defines them
    # (windows-rs and winapi list 2_954_240 and 5_636_096)
    assert _winioctl.IOCTL_STORAGE_QUERY_PROPERTY == 0x2D1400 == 2_954_240
    assert _winioctl.IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS == 0x560000 == 5_636_096


def test_property_query_input_buffer():
    assert _winioctl.property_query(_winioctl.STORAGE_DEVICE_WRITE_CACHE_PROPERTY) == (
        property_query(WRITE_CACHE)
    )
    assert len(property_query(DEVICE)) == 12


def test_nvme_device_descriptor():
    d = _winioctl.parse_device_descriptor(SAMSUNG_NVME)
    assert d is not None
    assert (d.vendor, d.product, d.revision, d.serial) == (
        None,
        "Samsung SSD 980 PRO 1TB",
        "5B2QGXA7",
        "0025_38B2_1234_5678.",
    )
    assert (d.bus_type, d.removable, d.command_queueing) == (BUS_NVME, False, True)


def test_scsi_descriptor_with_blank_padding_and_minus_one_offsets():
    d = _winioctl.parse_device_descriptor(QEMU_SATA)
    assert d is not None
    assert (d.vendor, d.product, d.revision, d.serial, d.bus_type) == (
        "QEMU",
        "QEMU HARDDISK",
        "2.5+",
        None,
        BUS_SATA,
    )


def test_descriptor_strings_outside_the_buffer_or_unterminated():
    whole = device_descriptor(b"ACME", b"Disk", None, None, BUS_ATA, removable=True)
    assert len(whole) == 40 + len(b"ACME\0Disk\0")
    d = _winioctl.parse_device_descriptor(whole[:-2])  # the product loses its "k" and NUL
    assert d is not None and (d.vendor, d.product, d.removable) == ("ACME", "Dis", True)
    d = _winioctl.parse_device_descriptor(whole[:41])  # the product's offset is past the end
    assert d is not None and (d.vendor, d.product) == ("A", None)


@pytest.mark.parametrize("data", [b"", b"\x28\0\0\0", SAMSUNG_NVME[:35]])
def test_short_descriptor_is_none(data):
    assert _winioctl.parse_device_descriptor(data) is None


def test_write_cache_property_fields():
    c = _winioctl.parse_write_cache(
        write_cache_property(2, 2, 1, 2, True, user_power_protection=True, nv_cache=False)
    )
    assert c == _winioctl.WriteCacheProperty(2, 2, 1, 2, True, True, False)
    assert _winioctl.parse_write_cache(write_cache_property()[:8]) is None  # header only


@pytest.mark.parametrize(
    ("cache_type", "enabled", "text"),
    [
        (2, 2, "write back"),  # WriteBack, Enabled
        (0, 2, "write back"),  # type Unknown, Enabled: what classpnp reports for WCE=1 ...
        (0, 1, "write through"),  # ... and for WCE=0: Disabled
        (1, 0, "write through"),  # None: no write cache
        (3, 2, "write through"),  # a write-through cache, enabled
        (2, 0, None),  # write-back type, enabled not known
        (0, 0, None),
    ],
)
def test_write_cache_text(cache_type, enabled, text):
    c = _winioctl.parse_write_cache(write_cache_property(cache_type, enabled))
    assert _windows.write_cache_text(c) == text


def test_power_protection_names_who_says_so():
    nv = _winioctl.parse_write_cache(write_cache_property(nv_cache=True))
    user = _winioctl.parse_write_cache(write_cache_property(user_power_protection=True))
    both = _winioctl.parse_write_cache(
        write_cache_property(user_power_protection=True, nv_cache=True)
    )
    assert _windows.power_protection(nv) == (POWER_PROTECTION_NV_CACHE,)
    assert _windows.power_protection(user) == (POWER_PROTECTION_USER_POLICY,)
    assert _windows.power_protection(both) == (
        POWER_PROTECTION_NV_CACHE,
        POWER_PROTECTION_USER_POLICY,
    )
    assert _windows.power_protection(_winioctl.parse_write_cache(write_cache_property())) == ()
    assert _windows.power_protection(None) == ()


def test_seek_penalty():
    assert _winioctl.parse_seek_penalty(seek_penalty(True)) is True
    assert _winioctl.parse_seek_penalty(seek_penalty(False)) is False
    assert _winioctl.parse_seek_penalty(seek_penalty(True)[:8]) is None


def test_disk_extents():
    striped = disk_extents((1, 1 << 20, 1 << 30), (2, 1 << 20, 1 << 30), (1, 2 << 30, 1 << 30))
    assert _winioctl.parse_disk_extents(striped) == (1, 2)  # each disk once, in order
    assert _winioctl.parse_disk_extents(striped[: 8 + 24 + 10]) == (1,)  # what the buffer holds
    assert _winioctl.parse_disk_extents(b"") == ()


@pytest.mark.parametrize(
    ("bus", "transport"),
    [
        (BUS_NVME, "nvme"),
        (BUS_SATA, "sata"),
        (9, "iscsi"),
        (20, "nvme-fabrics"),
        (18, "pmem"),
        (BUS_FILE_BACKED_VIRTUAL, "file-backed-virtual"),
        (0, None),
        (99, None),
    ],
)
def test_bus_transport(bus, transport):
    assert _windows.bus_transport(bus) == transport


@pytest.mark.parametrize(
    ("path", "volume"),
    [
        ("C:\\data\\bench", "\\\\.\\C:"),
        ("d:\\", "\\\\.\\D:"),
        ("\\\\?\\E:\\long\\path", "\\\\.\\E:"),
        ("\\\\server\\share\\dir", None),
        ("relative\\dir", None),
    ],
)
def test_drive_volume(path, volume):
    assert _windows.drive_volume(path) == volume


def test_volume_mounted_in_a_folder_is_opened_by_its_guid_path():
    guid = "\\\\?\\Volume{0d4f1f4c-0000-0000-0000-100000000000}\\"
    asked: list[str] = []

    def volume_name(mount_point):
        asked.append(mount_point)
        return guid

    assert _windows.volume_device("C:\\", volume_name) == "\\\\.\\C:"
    assert _windows.volume_device("C:\\mnt\\fast", volume_name) == guid[:-1]
    assert asked == ["C:\\mnt\\fast\\"]
    assert _windows.volume_device("C:\\mnt\\gone\\", lambda _: None) is None


# --------------------------------------------------------------------------- collect


def test_collect_nvme_ssd_with_a_write_back_cache():
    machine = nvme_machine()
    facts = collect_on(machine)
    t = facts.target
    assert t.path == "C:\\data\\bench"
    assert t.mount is not None and (t.mount.mount_point, t.mount.fs_type) == ("C:\\", "NTFS")
    (disk,) = t.disks
    assert disk.name == "PhysicalDrive0"
    assert (disk.model, disk.vendor, disk.firmware, disk.transport) == (
        "Samsung SSD 980 PRO 1TB",
        None,
        "5B2QGXA7",
        "nvme",
    )
    assert (disk.rotational, disk.write_cache, disk.fua, disk.flush_supported) == (
        False,
        "write back",
        True,
        True,
    )
    assert (disk.removable, disk.power_protection, disk.has_flush_counters) == (False, (), False)
    assert t.chain == ("\\\\.\\C:", "PhysicalDrive0")
    assert [(layer.kind, layer.name, layer.depth) for layer in t.layers] == [
        ("filesystem", "C:\\", 0),
        ("disk", "PhysicalDrive0", 1),
    ]
    assert t.layers[0].note == "" and t.layers[1].holds_bytes
    assert facts.virtualization == Virtualization()
    assert facts.virtualization.virtualized is None  # no hypervisor flag is read
    # the volume asked for its disks once, the disk for each of its three properties
    assert [(c[0], c[1]) for c in machine.calls] == [
        ("\\\\.\\C:", _winioctl.IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS),
        *[("\\\\.\\PhysicalDrive0", _winioctl.IOCTL_STORAGE_QUERY_PROPERTY)] * 3,
    ]


def test_collect_volume_across_two_disks():
    machine = FakeWindows(
        {
            **volume_answer("\\\\.\\D:", disk_extents((1, 0, 1 << 30), (2, 0, 1 << 30))),
            **disk_answers(1, SAMSUNG_NVME, write_cache_property(), seek_penalty(False)),
            **disk_answers(2, WD_HDD, write_cache_property(), seek_penalty(True)),
        }
    )
    t = collect_on(machine, "D:\\db").target
    assert [(d.name, d.rotational) for d in t.disks] == [
        ("PhysicalDrive1", False),
        ("PhysicalDrive2", True),
    ]
    assert [(layer.name, layer.depth) for layer in t.layers] == [
        ("D:\\", 0),
        ("PhysicalDrive1", 1),
        ("PhysicalDrive2", 1),
    ]


def test_collect_emulated_disk_records_a_virtualization_hint():
    machine = FakeWindows(
        {
            **volume_answer("\\\\.\\C:", disk_extents((0, 0, 1 << 30))),
            **disk_answers(0, QEMU_SATA, write_cache_property(), seek_penalty(True)),
        }
    )
    facts = collect_on(machine)
    assert facts.virtualization.virtual_disk_hint == "PhysicalDrive0 model 'QEMU QEMU HARDDISK'"
    assert facts.virtualization.virtualized is True
    assert facts.target.layers[-1].kind == "virtual-disk"


def test_collect_disk_on_a_virtual_bus_records_the_bus():
    machine = FakeWindows(
        {
            **volume_answer("\\\\.\\C:", disk_extents((0, 0, 1 << 30))),
            **disk_answers(0, device_descriptor(b"ACME", b"Disk", bus=BUS_VIRTUAL)),
        }
    )
    assert collect_on(machine).virtualization.virtual_disk_hint == "PhysicalDrive0 bus virtual"


def test_collect_virtual_hard_disk_file_is_not_followed_and_no_guest_hint():
    machine = FakeWindows(
        {
            **volume_answer("\\\\.\\E:", disk_extents((3, 0, 1 << 30))),
            **disk_answers(3, VHD, write_cache_property(), seek_penalty(False)),
        }
    )
    facts = collect_on(machine, "E:\\vm")
    (layer,) = [x for x in facts.target.layers if x.device is not None]
    assert (layer.kind, layer.holds_bytes, layer.device.transport) == (
        "loop",
        False,
        "file-backed-virtual",
    )
    assert _windows.VHD_NOTE in layer.note
    assert facts.virtualization.virtual_disk_hint is None


def test_collect_disk_that_answers_only_its_descriptor():
    machine = FakeWindows(
        {
            **volume_answer("\\\\.\\C:", disk_extents((0, 0, 1 << 30))),
            **disk_answers(0, SAMSUNG_NVME, write_cache_property()[:8]),
        }
    )
    t = collect_on(machine).target
    (disk,) = t.disks
    assert (disk.model, disk.write_cache, disk.rotational, disk.flush_supported) == (
        "Samsung SSD 980 PRO 1TB",
        None,
        None,
        None,
    )
    assert t.layers[1].note == (
        "write-cache property not read (short answer); "
        "seek penalty not read ([Errno 1] Incorrect function)"
    )


def test_collect_volume_whose_disks_cannot_be_read():
    denied = OSError(errno.EACCES, "Access is denied")
    machine = FakeWindows(volume_answer("\\\\.\\C:", denied))
    t = collect_on(machine).target
    assert t.disks == () and t.chain == ("\\\\.\\C:",)
    ((layer),) = t.layers
    assert layer.kind == "filesystem"
    assert layer.note == "the disks of \\\\.\\C: were not read ([Errno 13] Access is denied)"


def test_collect_disk_whose_descriptor_cannot_be_read():
    machine = FakeWindows(
        {
            **volume_answer("\\\\.\\C:", disk_extents((0, 0, 1 << 30))),
            **disk_answers(0, OSError(errno.EIO, "The device is not ready")),
        }
    )
    t = collect_on(machine).target
    assert t.disks == ()
    assert t.layers[0].note == (
        "PhysicalDrive0: device descriptor not read ([Errno 5] The device is not ready)"
    )


def test_collect_network_share_has_no_volume():
    machine = FakeWindows({})
    t = collect_on(machine, "\\\\server\\share\\db").target
    assert machine.calls == [] and t.disks == () and t.mount is None


def test_collect_host_dispatches_win32_to_the_windows_module(monkeypatch):
    machine = nvme_machine()
    monkeypatch.setattr(_windows, "device_io_control", machine)
    facts = host_facade._platform_facts("C:\\data", "win32")
    assert [d.name for d in facts.target.disks] == ["PhysicalDrive0"]
    assert machine.calls[0][0] == "\\\\.\\C:"  # the drive letter, where the lookup is not Windows'


@pytest.mark.skipif(sys.platform == "win32", reason="on Windows the real DeviceIoControl answers")
def test_device_io_control_is_windows_only():
    with pytest.raises(OSError) as err:
        _winioctl.device_io_control("\\\\.\\C:", 0, b"", 8)
    assert err.value.errno == errno.ENOSYS


# --------------------------------------------------------------------------- judged


def windows_host(facts) -> Host:
    """A Windows host record around collected facts, as collect_host would assemble it."""
    return Host(
        hostname="win-host",
        os_name="Windows",
        target=facts.target,
        virtualization=facts.virtualization,
    )


def judged(machine: FakeWindows, p50_ns: float, target: str = "C:\\data\\bench"):
    """The verdict of a FlushFileBuffers p50 (the primitive measure/workloads.py names on
    win32) next to a no-sync write of 4 us, on the host collected from ``machine``."""
    h = windows_host(collect_on(machine, target))
    return engine.judge(h, [write(4_000), flush("FlushFileBuffers", p50_ns)])


def deciding(v):
    return next(f for f in v.findings if f.code == v.decided_by)


def test_fast_flush_on_a_write_back_ssd_is_a_volatile_cache():
    """Like fdatasync on Linux: 40 us is below the 150 us a consumer SSD needs to program
    NAND, on a disk that reports its volatile cache enabled and no power protection."""
    v = judged(nvme_machine(), 40_000)
    assert (v.path_verdict, v.decided_by, v.strength) == (
        VOLATILE_CACHE,
        "flush-below-device-floor",
        INFERRED,
    )
    f = deciding(v)
    assert f.evidence["device_class"] == (
        "SSD with a volatile write cache and no known power-loss protection"
    )
    assert f.evidence["floor_ns"] == devices.CONSUMER_SSD_FLOOR_NS
    assert f.message.startswith("FlushFileBuffers p50 40.0 us is below the 150 us")
    assert "Device Manager" in f.advice and "nvme id-ctrl" not in f.advice


def test_slow_flush_on_a_write_back_ssd_is_plausible():
    v = judged(nvme_machine(), 900_000)
    assert (v.path_verdict, v.decided_by) == (HONEST_FLUSH, "flush-latency-plausible")
    assert deciding(v).evidence["fast_flush_allowed_by"] is None


def test_ssd_without_a_volatile_cache_may_flush_fast():
    v = judged(nvme_machine(enabled=1), 40_000)  # WriteCacheDisabled
    assert (v.path_verdict, v.decided_by) == (HONEST_FLUSH, "flush-latency-plausible")
    assert "no volatile write cache" in deciding(v).evidence["fast_flush_allowed_by"]


@pytest.mark.parametrize(
    ("cache", "why"),
    [
        ({"user_power_protection": True}, devices.REPORTED_USER_POLICY),
        ({"nv_cache": True}, devices.REPORTED_NV_CACHE),
    ],
)
def test_power_protected_cache_is_not_called_lying(cache, why):
    v = judged(nvme_machine(**cache), 40_000)
    assert (v.path_verdict, v.decided_by, v.strength) == (
        HONEST_FLUSH,
        "flush-latency-plausible",
        INFERRED,
    )
    f = deciding(v)
    assert f.evidence["device_class"] == "disk with a write cache reported power-protected"
    assert (f.evidence["floor_ns"], f.evidence["fast_flush_allowed_by"]) == (
        devices.PLP_SSD_FLOOR_NS,
        why,
    )


def test_power_protected_spinning_disk_is_not_held_to_the_platter():
    """With the disk policy set, Windows sends a spinning disk no flush either: 200 us is
    what the policy makes it, not a lie about the platter's 2 ms."""
    machine = FakeWindows(
        {
            **volume_answer("\\\\.\\C:", disk_extents((0, 0, 1 << 30))),
            **disk_answers(
                0, WD_HDD, write_cache_property(user_power_protection=True), seek_penalty(True)
            ),
        }
    )
    assert judged(machine, 200_000).path_verdict == HONEST_FLUSH
    unprotected = FakeWindows(
        {
            **volume_answer("\\\\.\\C:", disk_extents((0, 0, 1 << 30))),
            **disk_answers(0, WD_HDD, write_cache_property(), seek_penalty(True)),
        }
    )
    v = judged(unprotected, 200_000)
    assert (v.path_verdict, deciding(v).evidence["device_class"]) == (
        VOLATILE_CACHE,
        "spinning disk",
    )


def test_emulated_disk_is_unverifiable_inferred_from_its_model():
    machine = FakeWindows(
        {
            **volume_answer("\\\\.\\C:", disk_extents((0, 0, 1 << 30))),
            **disk_answers(0, QEMU_SATA, write_cache_property(), seek_penalty(True)),
        }
    )
    v = judged(machine, 200_000)  # a guest's flush, faster than the platter it claims
    assert (v.path_verdict, v.decided_by, v.strength) == (
        UNVERIFIABLE,
        "virtualized-storage",
        INFERRED,
    )
    f = deciding(v)
    assert f.message.startswith(
        "This looks like a virtual machine (inferred from the model string: PhysicalDrive0 "
        "model 'QEMU QEMU HARDDISK' is an emulated disk's): FlushFileBuffers goes to the "
        "virtual disk"
    )
    assert f.evidence["virtual_disk_hint"] == "PhysicalDrive0 model 'QEMU QEMU HARDDISK'"


def test_unreadable_disks_stay_unverifiable_with_what_would_settle_it():
    machine = FakeWindows(volume_answer("\\\\.\\C:", OSError(errno.EACCES, "Access is denied")))
    v = judged(machine, 40_000)
    assert (v.path_verdict, v.decided_by) == (UNVERIFIABLE, "stack-not-followed")
    f = deciding(v)
    assert "the disks of \\\\.\\C: were not read ([Errno 13] Access is denied)" in f.message
    assert "IOCTL_STORAGE_QUERY_PROPERTY" in f.advice and "fsyncbench powercut" in f.advice


def test_virtual_hard_disk_file_stays_unverifiable():
    machine = FakeWindows(
        {
            **volume_answer("\\\\.\\E:", disk_extents((3, 0, 1 << 30))),
            **disk_answers(3, VHD, write_cache_property(), seek_penalty(False)),
        }
    )
    v = judged(machine, 40_000, "E:\\vm")
    assert (v.path_verdict, v.decided_by) == (UNVERIFIABLE, "stack-not-followed")
    assert _windows.VHD_NOTE in deciding(v).message


def test_host_lines_show_what_windows_reported():
    machine = FakeWindows(
        {
            **volume_answer("\\\\.\\C:", disk_extents((0, 0, 1 << 30))),
            **disk_answers(
                0, QEMU_SATA, write_cache_property(user_power_protection=True), seek_penalty(True)
            ),
        }
    )
    lines = dict(host_text.host_lines(windows_host(collect_on(machine))))
    assert lines["disk PhysicalDrive0"].endswith(
        "accepts a cache flush yes, write cache power-protected per user-policy, removable no"
    )
    assert lines["virtualized"] == (
        "yes (emulated disk PhysicalDrive0 model 'QEMU QEMU HARDDISK' (inferred from the "
        "model string))"
    )
