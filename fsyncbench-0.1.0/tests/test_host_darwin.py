"""Tests of fsyncbench.host on macOS (and the psutil-only fallback), run anywhere: parsers
on recorded ``diskutil info -plist`` outputs (tests/fixtures/host/README.md says where each
came from), command runners replaced by fakes."""

from __future__ import annotations

import ctypes
import plistlib
import sys
from collections import namedtuple
from pathlib import Path

import pytest

from fsyncbench.host import _common, _darwin, _other

FIXTURES = Path(__file__).parent / "fixtures" / "host"
APPLE_FABRIC = (FIXTURES / "diskutil_info_apple_fabric_volume.plist").read_bytes()
VBOX_DISK = (FIXTURES / "diskutil_info_vbox_sata_disk.plist").read_bytes()

Part = namedtuple("Part", "device mountpoint fstype opts")

MAC_PARTITIONS = [
    Part("/dev/disk3s1s1", "/", "apfs", "ro,local,rootfs,dovolfs,journaled,multilabel"),
    Part(
        "/dev/disk3s5",
        "/System/Volumes/Data",
        "apfs",
        "rw,local,dovolfs,dontbrowse,journaled,multilabel",
    ),
    Part("/dev/disk3s7", "/nix", "apfs", "rw,local,nobrowse,journaled"),
    Part("/dev/disk5s1", "/Volumes/Ext SSD", "exfat", "rw,nosuid,local,ignore-ownership"),
]


def synthetic_plist(**keys: object) -> bytes:
    """A diskutil-shaped plist built here (not a recording) for cases with no public one."""
    return plistlib.dumps(keys)


# --------------------------------------------------------------------------- parsing


def test_apple_fabric_volume_fixture() -> None:
    info = _darwin.parse_diskutil_info(APPLE_FABRIC)
    assert info is not None
    assert info["BusProtocol"] == "Apple Fabric"
    assert info["DeviceIdentifier"] == "disk3s7"
    assert info["APFSContainerReference"] == "disk3"
    assert info["APFSPhysicalStores"] == ["disk0s2"]
    assert info["DeviceTreePath"].endswith("AppleANS3NVMeController")
    assert "AESHardware" not in info  # not a kept key
    assert "SolidState" not in info  # not in the (truncated) recording: absent, not guessed


def test_vbox_whole_disk_fixture() -> None:
    info = _darwin.parse_diskutil_info(VBOX_DISK)
    assert info is not None
    assert info["BusProtocol"] == "SATA"
    assert info["MediaName"] == "VBOX HARDDISK"
    assert info["SolidState"] is False
    assert info["Internal"] is True
    assert info["VirtualOrPhysical"] == "Physical"
    assert info["DeviceIdentifier"] == info["ParentWholeDisk"] == "disk0"


@pytest.mark.parametrize(
    "data",
    [
        None,
        b"",
        b"not a plist",
        plistlib.dumps(["a", "list"]),
        synthetic_plist(Error=True, ErrorMessage="Could not find disk: /nope", ExitCode=1),
    ],
)
def test_unusable_diskutil_output_is_none(data: bytes | None) -> None:
    assert _darwin.parse_diskutil_info(data) is None


@pytest.mark.parametrize(
    ("identifier", "whole"),
    [
        ("disk0s2", "disk0"),
        ("disk3s1s1", "disk3"),
        ("disk10s3", "disk10"),
        ("disk4", "disk4"),
        ("", None),
        (None, None),
    ],
)
def test_whole_disk_of(identifier: str | None, whole: str | None) -> None:
    assert _darwin.whole_disk_of(identifier) == whole


def test_chain_of_apfs_volume() -> None:
    volume = _darwin.parse_diskutil_info(APPLE_FABRIC)
    assert volume is not None
    assert _darwin.chain_and_whole_disks(volume) == (
        ("disk3s7", "disk3", "disk0s2", "disk0"),
        ("disk0",),
    )


def test_chain_of_plain_partition_uses_parent_whole_disk() -> None:
    volume = {"DeviceIdentifier": "disk0s2", "ParentWholeDisk": "disk0", "FilesystemType": "hfs"}
    assert _darwin.chain_and_whole_disks(volume) == (("disk0s2", "disk0"), ("disk0",))


# --------------------------------------------------------------------------- storage target


def fake_diskutil(outputs: dict[str, bytes]):
    calls: list[str] = []

    def diskutil(name: str):
        calls.append(name)
        return _darwin.parse_diskutil_info(outputs.get(name))

    return diskutil, calls


def test_storage_target_apple_silicon_volume_and_internal_disk() -> None:
    internal = synthetic_plist(
        DeviceIdentifier="disk0",
        BusProtocol="Apple Fabric",
        MediaName="APPLE SSD AP0512Q",
        SolidState=True,
        Internal=True,
    )
    diskutil, calls = fake_diskutil({"/nix": APPLE_FABRIC, "disk0": internal})
    target = _darwin.storage_target("/nix/store/x", diskutil, MAC_PARTITIONS)
    assert target.mount is not None and (target.mount.mount_point, target.mount.fs_type) == (
        "/nix",
        "apfs",
    )
    assert "nobrowse" in target.mount.options
    assert calls == ["/nix", "disk0"]
    assert target.chain == ("disk3s7", "disk3", "disk0s2", "disk0")
    (disk,) = target.disks
    assert (disk.name, disk.model, disk.rotational, disk.transport) == (
        "disk0",
        "APPLE SSD AP0512Q",
        False,
        "Apple Fabric",
    )
    assert disk.has_flush_counters is False
    assert target.darwin is not None and target.darwin["BusProtocol"] == "Apple Fabric"


def test_whole_disk_lookup_failure_falls_back_to_volume_keys() -> None:
    diskutil, _ = fake_diskutil({"/nix": APPLE_FABRIC})
    (disk,) = _darwin.storage_target("/nix", diskutil, MAC_PARTITIONS).disks
    assert (disk.name, disk.model, disk.rotational, disk.transport) == (
        "disk0",
        None,
        None,
        "Apple Fabric",
    )


def test_spinning_vbox_disk_under_hfs_volume() -> None:
    volume = synthetic_plist(
        DeviceIdentifier="disk0s2",
        ParentWholeDisk="disk0",
        BusProtocol="SATA",
        FilesystemType="hfs",
    )
    diskutil, _ = fake_diskutil({"/System/Volumes/Data": volume, "disk0": VBOX_DISK})
    target = _darwin.storage_target("/System/Volumes/Data/Users/me", diskutil, MAC_PARTITIONS)
    (disk,) = target.disks
    assert (disk.model, disk.rotational, disk.transport) == ("VBOX HARDDISK", True, "SATA")


def test_usb_volume_without_solid_state_key() -> None:
    # Synthetic: no citable complete USB recording was found (see fixtures README).
    volume = synthetic_plist(
        DeviceIdentifier="disk5s1",
        ParentWholeDisk="disk5",
        BusProtocol="USB",
        Internal=False,
        FilesystemType="exfat",
        FilesystemName="ExFAT",
        MountPoint="/Volumes/Ext SSD",
    )
    whole = synthetic_plist(
        DeviceIdentifier="disk5", BusProtocol="USB", MediaName="SanDisk 3.2Gen1", Internal=False
    )
    diskutil, calls = fake_diskutil({"/Volumes/Ext SSD": volume, "disk5": whole})
    target = _darwin.storage_target("/Volumes/Ext SSD/bench", diskutil, MAC_PARTITIONS)
    assert calls[0] == "/Volumes/Ext SSD"  # the mount point with its space, as one argument
    (disk,) = target.disks
    assert (disk.name, disk.model, disk.rotational, disk.transport) == (
        "disk5",
        "SanDisk 3.2Gen1",
        None,
        "USB",
    )
    assert target.darwin is not None and target.darwin["Internal"] is False


def test_diskutil_failure_keeps_mount_only() -> None:
    diskutil, _ = fake_diskutil({})
    target = _darwin.storage_target("/nix", diskutil, MAC_PARTITIONS)
    assert target.mount is not None and target.mount.mount_point == "/nix"
    assert (target.chain, target.disks, target.darwin) == ((), (), None)


# --------------------------------------------------------------------------- collect, sysctl, dyld


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        ((0, b"1\n"), True),
        ((0, b"0\n"), False),
        ((1, b""), None),
        ((0, b"maybe\n"), None),
        (None, None),
    ],
)
def test_parse_hv_vmm_present(result: tuple[int, bytes] | None, expected: bool | None) -> None:
    assert _darwin.parse_hv_vmm_present(result) is expected


def test_collect_runs_diskutil_and_sysctl_through_the_runner() -> None:
    calls: list[list[str]] = []
    outputs = {
        (_darwin.DISKUTIL, "info", "-plist", "/nix"): (0, APPLE_FABRIC),
        (_darwin.DISKUTIL, "info", "-plist", "disk0"): (1, b""),
        (_darwin.SYSCTL, "-n", "kern.hv_vmm_present"): (0, b"1\n"),
    }

    def runner(argv: list[str]):
        calls.append(argv)
        return outputs.get(tuple(argv))

    facts = _darwin.collect("/nix/store", runner=runner, partitions=MAC_PARTITIONS)
    assert facts.virtualization.mac_vmm_present is True
    assert facts.virtualization.virtualized is True
    assert facts.target.chain[-1] == "disk0"
    assert [_darwin.SYSCTL, "-n", "kern.hv_vmm_present"] in calls


def test_pick_sqlite_image() -> None:
    images = ["/usr/lib/dyld", "/usr/lib/libSystem.B.dylib", "/usr/lib/libsqlite3.dylib"]
    assert _darwin.pick_sqlite_image(images, "/x/_sqlite3.so") == "/usr/lib/libsqlite3.dylib"
    assert _darwin.pick_sqlite_image(images[:2], "/x/_sqlite3.so") == "/x/_sqlite3.so"


@pytest.mark.skipif(sys.platform == "darwin", reason="dyld exists on macOS")
def test_loaded_images_is_empty_without_dyld() -> None:
    # the C library here has no _dyld_image_count: the lookup fails, and the answer is []
    assert _darwin.loaded_images() == []


class FakeCFunction:
    """Stands in for a ctypes foreign function: callable, with settable restype/argtypes."""

    def __init__(self, fn):
        self.fn = fn
        self.calls: list[tuple] = []

    def __call__(self, *args):
        self.calls.append(args)
        return self.fn(*args)


class FakeDyld:
    """The two dyld(3) calls loaded_images makes, over a fixed image table."""

    def __init__(self, names: list[bytes | None]):
        self._dyld_image_count = FakeCFunction(lambda: len(names))
        self._dyld_get_image_name = FakeCFunction(lambda i: names[i])


def test_loaded_images_reads_every_dyld_image(monkeypatch) -> None:
    names = [
        b"/usr/lib/dyld",
        b"/usr/lib/libSystem.B.dylib",
        None,
        b"/usr/lib/libsqlite3.dylib",
        b"/Users/j\xc3\xb6rg/lib/caf\xe9.dylib",
    ]
    lib = FakeDyld(names)
    opened: list[object] = []

    def cdll(name):
        opened.append(name)
        return lib

    monkeypatch.setattr(_darwin.ctypes, "CDLL", cdll)
    images = _darwin.loaded_images()
    # a NULL name is skipped; UTF-8 is decoded, an undecodable byte kept as a surrogate
    assert images == [
        "/usr/lib/dyld",
        "/usr/lib/libSystem.B.dylib",
        "/usr/lib/libsqlite3.dylib",
        "/Users/j\u00f6rg/lib/caf\udce9.dylib",
    ]
    assert opened == [None]  # the process's own images (dlopen(NULL))
    assert lib._dyld_get_image_name.calls == [(0,), (1,), (2,), (3,), (4,)]
    assert lib._dyld_get_image_name.restype is ctypes.c_char_p
    assert lib._dyld_get_image_name.argtypes == [ctypes.c_uint32]
    assert lib._dyld_image_count.restype is ctypes.c_uint32
    assert _darwin.pick_sqlite_image(images, "/x/_sqlite3.so") == "/usr/lib/libsqlite3.dylib"


def test_loaded_images_is_empty_when_dyld_cannot_be_opened(monkeypatch) -> None:
    def cdll(name):
        raise OSError("dlopen failed")

    monkeypatch.setattr(_darwin.ctypes, "CDLL", cdll)
    assert _darwin.loaded_images() == []


# --------------------------------------------------------------------------- psutil fallback


def test_windows_paths_match_drive_mounts() -> None:
    parts = [Part("C:\\", "C:\\", "NTFS", "rw,fixed"), Part("D:\\", "D:\\data", "ReFS", "rw,fixed")]
    mount = _common.psutil_mount("D:\\data\\bench", parts, normalise=lambda p: p.replace("\\", "/"))
    assert mount is not None and (mount.mount_point, mount.fs_type) == ("D:\\data", "ReFS")
    mount = _common.psutil_mount("D:\\database", parts, normalise=lambda p: p.replace("\\", "/"))
    assert mount is None  # D:\data is not a prefix of D:\database, and C:\ does not hold it


def test_other_platform_target_has_mount_only() -> None:
    parts = [
        Part("/dev/ada0p2", "/", "ufs", "rw"),
        Part("zroot/home", "/usr/home", "zfs", "rw,nfsv4acls"),
    ]
    facts = _other.collect("/usr/home/me", partitions=parts)
    assert facts.target.mount is not None and facts.target.mount.fs_type == "zfs"
    assert (facts.target.chain, facts.target.disks) == ((), ())
    assert facts.sqlite_library is None
    assert facts.virtualization.virtualized is None
