"""The Windows readers, run anywhere, where tests/test_host_windows.py leaves them open:

- :func:`fsyncbench.host._winioctl.ctl_code` against control codes winioctl.h and ntddscsi.h
  define, and the edges of the buffer parsers (a buffer of exactly the fixed size, a count
  past 2**31, non-ASCII bytes in a descriptor string);
- the calls into kernel32 (:func:`~fsyncbench.host._winioctl.device_io_control`,
  :func:`~fsyncbench.host._windows.volume_of_path`, :func:`~fsyncbench.host._windows.resolve_path`)
  with ``sys.platform`` set to win32 and kernel32 replaced by a fake that answers as the
  documented functions do: the prototypes declared, the arguments passed, what is returned
  and which Windows error is raised;
- what :func:`fsyncbench.host._windows.collect` writes in the notes of the layers when a
  volume or a disk answers short or not at all, and the output sizes it asks for.

The buffers come from the builders of tests/test_host_windows.py (each cites its layout).
"""

from __future__ import annotations

import ctypes
import ctypes.wintypes
import errno
import os
import struct
import sys

import pytest
from test_host_windows import (
    BUS_NVME,
    SAMSUNG_NVME,
    VHD,
    WIN_PARTITIONS,
    FakeWindows,
    collect_on,
    device_descriptor,
    disk_answers,
    disk_extents,
    nvme_machine,
    property_query,
    seek_penalty,
    volume_answer,
    write_cache_property,
)

from fsyncbench.host import _windows, _winioctl

wintypes = ctypes.wintypes

# --------------------------------------------------------------------------- control codes
# CTL_CODE(DeviceType, Function, Method, Access); METHOD_NEITHER = 3, FILE_READ_ACCESS = 1,
# FILE_WRITE_ACCESS = 2 (https://learn.microsoft.com/en-us/windows-hardware/drivers/kernel/
# defining-i-o-control-codes). The codes are winioctl.h's and ntddscsi.h's, as windows-rs
# lists them (https://microsoft.github.io/windows-docs-rs/doc/windows/Win32/Storage/
# IscsiDisc/constant.IOCTL_SCSI_PASS_THROUGH.html: 315396; .../Win32/System/Ioctl/
# constant.FSCTL_GET_RETRIEVAL_POINTERS.html: 589939).


@pytest.mark.parametrize(
    ("device_type", "function", "method", "access", "code"),
    [
        # IOCTL_STORAGE_QUERY_PROPERTY: IOCTL_STORAGE_BASE, 0x500, METHOD_BUFFERED, any access
        (0x2D, 0x500, 0, 0, 0x002D1400),
        # IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS: IOCTL_VOLUME_BASE ('V'), 0, buffered, any
        (0x56, 0, 0, 0, 0x00560000),
        # IOCTL_SCSI_PASS_THROUGH: IOCTL_SCSI_BASE (4), 0x401, buffered, read | write
        (0x04, 0x401, 0, 1 | 2, 315396),
        # FSCTL_GET_RETRIEVAL_POINTERS: FILE_DEVICE_FILE_SYSTEM (9), 28, METHOD_NEITHER, any
        (0x09, 28, 3, 0, 589939),
    ],
)
def test_ctl_code_gives_the_documented_control_codes(device_type, function, method, access, code):
    assert _winioctl.ctl_code(device_type, function, method, access) == code


# --------------------------------------------------------------------------- parser edges


def test_device_descriptor_of_exactly_the_fixed_part_is_read():
    """36 bytes (through RawPropertiesLength) are a whole descriptor: a disk without strings."""
    fixed = struct.pack("<IIBBBBIIIIII", 36, 36, 0x05, 0, 1, 0, 0, 0, 0, 0, BUS_NVME, 0)
    d = _winioctl.parse_device_descriptor(fixed)
    assert d == _winioctl.DeviceDescriptor(
        device_type=0x05,  # the SCSI peripheral device type (5: CD/DVD)
        removable=True,
        command_queueing=False,
        vendor=None,
        product=None,
        revision=None,
        serial=None,
        bus_type=BUS_NVME,
    )


def test_device_type_is_read():
    assert _winioctl.parse_device_descriptor(SAMSUNG_NVME).device_type == 0  # direct access


def test_descriptor_strings_with_non_ascii_bytes_are_replaced_not_decoded():
    """The strings are ASCII: a byte past 0x7f is U+FFFD each, never an error or a letter
    of another encoding (b"\\xc3\\xa9" is not read as UTF-8's "é")."""
    d = _winioctl.parse_device_descriptor(device_descriptor(b"Caf\xc3\xa9", b"Disk \xff"))
    assert d is not None
    assert (d.vendor, d.product) == ("Caf\ufffd\ufffd", "Disk \ufffd")


def test_write_cache_property_of_exactly_27_bytes_is_read():
    """A driver may leave out the trailing padding: the 27 bytes of fields are enough."""
    data = write_cache_property(2, 2, 2, 1, True, False, True)[:27]
    assert _winioctl.parse_write_cache(data) == _winioctl.WriteCacheProperty(
        2, 2, 2, 1, True, False, True
    )
    assert _winioctl.parse_write_cache(data[:26]) is None


def test_seek_penalty_of_exactly_9_bytes_is_read():
    assert _winioctl.parse_seek_penalty(seek_penalty(True)[:9]) is True


def test_extent_count_is_unsigned():
    """NumberOfDiskExtents is a DWORD: a count past 2**31 (more than the buffer holds) still
    gives the extents the buffer does hold."""
    data = struct.pack("<I4x", 0xFFFFFFFF) + disk_extents((7, 0, 1 << 30))[8:]
    assert _winioctl.parse_disk_extents(data) == (7,)


# --------------------------------------------------------------------------- kernel32, faked
# Prototypes: CreateFileW (https://learn.microsoft.com/en-us/windows/win32/api/fileapi/
# nf-fileapi-createfilew), DeviceIoControl (https://learn.microsoft.com/en-us/windows/win32/
# api/ioapiset/nf-ioapiset-deviceiocontrol), CloseHandle (https://learn.microsoft.com/en-us/
# windows/win32/api/handleapi/nf-handleapi-closehandle). FILE_SHARE_READ 1, FILE_SHARE_WRITE
# 2, OPEN_EXISTING 3 are CreateFileW's; INVALID_HANDLE_VALUE is (HANDLE)-1.

INVALID_HANDLE_VALUE = ctypes.c_void_p(-1).value
ERROR_INVALID_FUNCTION, ERROR_ACCESS_DENIED, ERROR_MORE_DATA = 1, 5, 234


class Export:
    """One kernel32 function: keeps the argtypes and restype set on it, records each call."""

    def __init__(self, body):
        self.body = body
        self.argtypes = None
        self.restype = None
        self.calls: list[tuple] = []

    def __call__(self, *args):
        self.calls.append(args)
        return self.body(*args)


class FakeKernel32:
    """kernel32 as ctypes.WinDLL loads it. The thread's last error is kept by ctypes for the
    caller only with ``use_last_error=True`` (https://docs.python.org/3/library/ctypes.html,
    "use_last_error"); :func:`fake_ctypes` reads it the way ctypes.get_last_error does."""

    def __init__(
        self,
        *,
        handle: int | None = 0x1F4,
        answer: bytes = b"",
        control_error: int = 0,
        mounts: dict[str, str | None] | None = None,
    ):
        self.handle = handle
        self.answer = answer
        self.control_error = control_error
        self.mounts = mounts or {}  # mount point (trailing backslash) -> volume GUID path
        self.use_last_error = False
        self.last_error = 0
        self.inputs: list[bytes] = []
        self.CreateFileW = Export(self._create)
        self.DeviceIoControl = Export(self._control)
        self.CloseHandle = Export(lambda handle: 1)
        self.GetVolumePathNameW = Export(self._volume_path)
        self.GetVolumeNameForVolumeMountPointW = Export(self._volume_name)

    def _create(self, name, access, share, security, disposition, flags, template):
        if self.handle in (None, INVALID_HANDLE_VALUE):
            self.last_error = ERROR_ACCESS_DENIED
        return self.handle

    def _control(self, handle, code, source, in_size, out, out_size, returned, overlapped):
        self.inputs.append(ctypes.string_at(source, in_size) if in_size else b"")
        if self.control_error:
            self.last_error = self.control_error
            return 0
        count = min(len(self.answer), out_size)
        ctypes.memmove(out, self.answer, count)
        returned._obj.value = count  # ctypes.byref(returned): the DWORD it points at
        return 1

    def _volume_path(self, path, buffer, size):
        """GetVolumePathNameW: the longest mount point holding ``path``, with its trailing
        backslash; FALSE where none holds it or the buffer is too small."""
        held = [m for m in self.mounts if path.lower().startswith(m.lower())]
        if not held or size < len(max(held, key=len)) + 1:
            return 0
        buffer.value = max(held, key=len)
        return 1

    def _volume_name(self, mount_point, name, size):
        """GetVolumeNameForVolumeMountPointW: the mount point must end in a backslash; the
        buffer is left as it was on failure."""
        guid = self.mounts.get(mount_point) if mount_point.endswith("\\") else None
        if guid is None or size < len(guid) + 1:
            return 0
        name.value = guid
        return 1


def fake_ctypes(monkeypatch, kernel32: FakeKernel32) -> None:
    """Windows for the call under test: sys.platform, ctypes.WinDLL (kernel32 only, its name
    in any case, as Windows matches DLL names), ctypes.get_last_error and ctypes.WinError
    (``WinError(None)`` reads GetLastError, which ctypes has restored to 0 around a call made
    with use_last_error)."""

    def win_dll(name, use_last_error=False):
        if name.lower() != "kernel32":
            raise FileNotFoundError(errno.ENOENT, f"Could not find module '{name}'")
        kernel32.use_last_error = use_last_error
        return kernel32

    def get_last_error():
        return kernel32.last_error if kernel32.use_last_error else 0

    def win_error(code=None):
        code = 0 if code is None else code
        return OSError(code, f"[WinError {code}]")

    monkeypatch.setattr(ctypes, "WinDLL", win_dll, raising=False)
    monkeypatch.setattr(ctypes, "get_last_error", get_last_error, raising=False)
    monkeypatch.setattr(ctypes, "WinError", win_error, raising=False)
    monkeypatch.setattr(sys, "platform", "win32")


def test_device_io_control_declares_the_documented_prototypes(monkeypatch):
    kernel32 = FakeKernel32(answer=b"\x01")
    fake_ctypes(monkeypatch, kernel32)
    _winioctl.device_io_control("\\\\.\\C:", 0, b"", 8)
    assert kernel32.CreateFileW.argtypes == (
        wintypes.LPCWSTR,  # lpFileName
        wintypes.DWORD,  # dwDesiredAccess
        wintypes.DWORD,  # dwShareMode
        wintypes.LPVOID,  # lpSecurityAttributes
        wintypes.DWORD,  # dwCreationDisposition
        wintypes.DWORD,  # dwFlagsAndAttributes
        wintypes.HANDLE,  # hTemplateFile
    )
    assert kernel32.CreateFileW.restype is wintypes.HANDLE
    assert kernel32.DeviceIoControl.argtypes == (
        wintypes.HANDLE,  # hDevice
        wintypes.DWORD,  # dwIoControlCode
        wintypes.LPVOID,  # lpInBuffer
        wintypes.DWORD,  # nInBufferSize
        wintypes.LPVOID,  # lpOutBuffer
        wintypes.DWORD,  # nOutBufferSize
        ctypes.POINTER(wintypes.DWORD),  # lpBytesReturned
        wintypes.LPVOID,  # lpOverlapped
    )
    assert kernel32.DeviceIoControl.restype is wintypes.BOOL
    assert kernel32.CloseHandle.argtypes == (wintypes.HANDLE,)
    assert kernel32.CloseHandle.restype is wintypes.BOOL


def test_device_io_control_sends_the_query_and_returns_what_the_driver_wrote(monkeypatch):
    kernel32 = FakeKernel32(answer=SAMSUNG_NVME)
    fake_ctypes(monkeypatch, kernel32)
    query = _winioctl.property_query(_winioctl.STORAGE_DEVICE_WRITE_CACHE_PROPERTY)
    out = _winioctl.device_io_control(
        "\\\\.\\PhysicalDrive0", _winioctl.IOCTL_STORAGE_QUERY_PROPERTY, query, 4096
    )
    assert out == SAMSUNG_NVME  # the bytes returned, not the whole 4096-byte buffer
    # opened for metadata only (access 0), shared for reading and writing, existing only
    assert kernel32.CreateFileW.calls == [("\\\\.\\PhysicalDrive0", 0, 1 | 2, None, 3, 0, None)]
    ((handle, code, _source, in_size, _out, out_size, _returned, overlapped),) = (
        kernel32.DeviceIoControl.calls
    )
    assert (handle, code, in_size, out_size, overlapped) == (0x1F4, 0x2D1400, 12, 4096, None)
    assert kernel32.inputs == [query]
    assert kernel32.CloseHandle.calls == [(0x1F4,)]


def test_device_io_control_returns_no_more_than_the_output_size(monkeypatch):
    kernel32 = FakeKernel32(answer=SAMSUNG_NVME)
    fake_ctypes(monkeypatch, kernel32)
    assert (
        _winioctl.device_io_control("\\\\.\\PhysicalDrive0", 1, b"\x07", 36) == (SAMSUNG_NVME[:36])
    )
    assert kernel32.inputs == [b"\x07"]


def test_device_io_control_without_input_sends_an_empty_buffer(monkeypatch):
    kernel32 = FakeKernel32(answer=disk_extents((0, 0, 1 << 30)))
    fake_ctypes(monkeypatch, kernel32)
    code = _winioctl.IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS
    out = _winioctl.device_io_control("\\\\.\\C:", code, b"", _winioctl.EXTENTS_BUFFER_BYTES)
    assert _winioctl.parse_disk_extents(out) == (0,)
    assert kernel32.DeviceIoControl.calls[0][3] == 0 and kernel32.inputs == [b""]


def test_device_that_cannot_be_opened_raises_its_windows_error(monkeypatch):
    kernel32 = FakeKernel32(handle=INVALID_HANDLE_VALUE)
    fake_ctypes(monkeypatch, kernel32)
    with pytest.raises(OSError) as err:
        _winioctl.device_io_control("\\\\.\\PhysicalDrive0", 0, b"", 8)
    assert err.value.errno == ERROR_ACCESS_DENIED
    assert kernel32.DeviceIoControl.calls == [] and kernel32.CloseHandle.calls == []


@pytest.mark.parametrize("error", [ERROR_INVALID_FUNCTION, ERROR_MORE_DATA])
def test_failed_request_raises_its_windows_error_and_closes_the_device(monkeypatch, error):
    kernel32 = FakeKernel32(control_error=error)
    fake_ctypes(monkeypatch, kernel32)
    with pytest.raises(OSError) as err:
        _winioctl.device_io_control("\\\\.\\C:", 0x560000, b"", 776)
    assert err.value.errno == error
    assert kernel32.CloseHandle.calls == [(0x1F4,)]


@pytest.mark.skipif(sys.platform == "win32", reason="on Windows the real DeviceIoControl answers")
def test_device_io_control_elsewhere_says_it_is_windows_only():
    with pytest.raises(OSError) as err:
        _winioctl.device_io_control("\\\\.\\C:", 0, b"", 8)
    assert err.value.strerror == "DeviceIoControl is Windows only"


# --------------------------------------------------------------------------- volume lookup

GUID = "\\\\?\\Volume{0d4f1f4c-0000-0000-0000-100000000000}\\"


def test_volume_of_a_path_on_a_drive_root(monkeypatch):
    kernel32 = FakeKernel32(mounts={"C:\\": None})
    fake_ctypes(monkeypatch, kernel32)
    assert _windows.volume_of_path("C:\\data\\bench") == "\\\\.\\C:"
    assert kernel32.GetVolumeNameForVolumeMountPointW.calls == []


def test_volume_mounted_in_a_folder_is_found_by_its_guid_path(monkeypatch):
    kernel32 = FakeKernel32(mounts={"C:\\": None, "C:\\mnt\\fast\\": GUID})
    fake_ctypes(monkeypatch, kernel32)
    assert _windows.volume_of_path("C:\\mnt\\fast\\db") == GUID[:-1]
    assert [c[0] for c in kernel32.GetVolumeNameForVolumeMountPointW.calls] == ["C:\\mnt\\fast\\"]


def test_folder_mount_without_a_volume_name_falls_back_to_the_drive(monkeypatch):
    kernel32 = FakeKernel32(mounts={"C:\\": None, "C:\\mnt\\fast\\": None})
    fake_ctypes(monkeypatch, kernel32)
    assert _windows.volume_of_path("C:\\mnt\\fast\\db") == "\\\\.\\C:"


@pytest.mark.parametrize(
    ("path", "volume"), [("E:\\data", "\\\\.\\E:"), ("\\\\server\\share\\db", None)]
)
def test_volume_path_not_found_falls_back_to_the_drive_letter(monkeypatch, path, volume):
    kernel32 = FakeKernel32(mounts={"C:\\": None})
    fake_ctypes(monkeypatch, kernel32)
    assert _windows.volume_of_path(path) == volume


def test_target_is_resolved_by_realpath_on_windows(monkeypatch):
    """On Windows os.path.realpath follows the links; elsewhere a drive path is only
    normalised (C:\\data\\..\\db -> C:\\db)."""
    target = "C:\\data\\..\\db"
    assert _windows.resolve_path(target) == "C:\\db"
    fake_ctypes(monkeypatch, FakeKernel32())
    assert _windows.resolve_path(target) == os.path.realpath(target)


# --------------------------------------------------------------------------- paths


@pytest.mark.parametrize(
    ("path", "volume"),
    [
        ("\\\\.\\D:\\data", "\\\\.\\D:"),  # the device namespace prefix
        ("C:\\db:stream", "\\\\.\\C:"),  # an NTFS stream name: only a leading letter counts
    ],
)
def test_drive_volume_of_prefixed_and_stream_paths(path, volume):
    assert _windows.drive_volume(path) == volume


def test_volume_device_of_a_lower_case_drive_root_and_a_mount_point_with_its_backslash():
    asked: list[str] = []

    def volume_name(mount_point):
        asked.append(mount_point)
        return GUID

    assert _windows.volume_device("c:\\", volume_name) == "\\\\.\\C:"
    assert asked == []
    # GetVolumePathNameW gives the mount point with its trailing backslash: not doubled
    assert _windows.volume_device("C:\\mnt\\fast\\", volume_name) == GUID[:-1]
    assert asked == ["C:\\mnt\\fast\\"]


# --------------------------------------------------------------------------- collect


def test_collect_asks_for_the_documented_output_sizes():
    """8 + 24 * 32 bytes of VOLUME_DISK_EXTENTS (header, 32 DISK_EXTENTs), 4096 for each
    property of the disk."""
    assert _winioctl.EXTENTS_BUFFER_BYTES == 8 + 24 * 32 == 776
    machine = nvme_machine()
    collect_on(machine)
    assert [(c[1], c[3]) for c in machine.calls] == [
        (_winioctl.IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS, 776),
        *[(_winioctl.IOCTL_STORAGE_QUERY_PROPERTY, 4096)] * 3,
    ]


def test_collect_reads_serial_and_fua():
    (disk,) = collect_on(nvme_machine()).target.disks
    assert (disk.serial, disk.fua) == ("0025_38B2_1234_5678.", True)
    (disk,) = collect_on(nvme_machine(write_through=1)).target.disks  # NotSupported
    assert disk.fua is False
    (disk,) = collect_on(nvme_machine(write_through=0)).target.disks  # Unknown
    assert disk.fua is None


def test_collect_notes_a_short_descriptor():
    machine = FakeWindows(
        {
            **volume_answer("\\\\.\\C:", disk_extents((0, 0, 1 << 30))),
            **disk_answers(0, SAMSUNG_NVME[:35]),
        }
    )
    t = collect_on(machine).target
    assert t.disks == ()
    assert t.layers[0].note == "PhysicalDrive0: device descriptor not read (short answer)"


def test_collect_notes_a_short_seek_penalty():
    machine = FakeWindows(
        {
            **volume_answer("\\\\.\\C:", disk_extents((0, 0, 1 << 30))),
            **disk_answers(0, SAMSUNG_NVME, write_cache_property(), seek_penalty(True)[:8]),
        }
    )
    t = collect_on(machine).target
    assert t.disks[0].rotational is None
    assert t.layers[1].note == "seek penalty not read (short answer)"


def test_collect_notes_each_disk_not_read():
    machine = FakeWindows(
        {
            **volume_answer("\\\\.\\D:", disk_extents((1, 0, 1 << 30), (2, 0, 1 << 30))),
            **disk_answers(1, SAMSUNG_NVME[:8]),
            **disk_answers(2, OSError(errno.EIO, "The device is not ready")),
        }
    )
    t = collect_on(machine, "D:\\db").target
    assert t.layers[0].note == (
        "PhysicalDrive1: device descriptor not read (short answer); "
        "PhysicalDrive2: device descriptor not read ([Errno 5] The device is not ready)"
    )


def test_collect_notes_a_volume_without_extents():
    machine = FakeWindows(volume_answer("\\\\.\\C:", disk_extents()))
    t = collect_on(machine).target
    assert t.disks == () and t.chain == ("\\\\.\\C:",)
    assert t.layers[0].note == "the volume \\\\.\\C: reported no disk extents"


def test_collect_notes_a_path_on_no_local_volume():
    facts = _windows.collect(
        "C:\\data", ioctl=FakeWindows({}), volume_of=lambda path: None, partitions=WIN_PARTITIONS
    )
    assert facts.target.layers[0].note == "no local volume holds the path (a network share?)"


def test_collect_virtual_hard_disk_note_follows_what_was_not_read():
    machine = FakeWindows(
        {
            **volume_answer("\\\\.\\E:", disk_extents((3, 0, 1 << 30))),
            **disk_answers(3, VHD, write_cache_property(), seek_penalty(False)[:4]),
        }
    )
    t = collect_on(machine, "E:\\vm").target
    assert t.layers[1].note == f"seek penalty not read (short answer); {_windows.VHD_NOTE}"


def test_property_queries_are_the_documented_input():
    machine = nvme_machine()
    collect_on(machine)
    assert [c[2] for c in machine.calls[1:]] == [property_query(p) for p in (0, 4, 7)]
