"""Tests of fsyncbench.host on macOS (and the psutil-only fallback), run anywhere: parsers
on recorded ``diskutil info -plist`` outputs (tests/fixtures/host/README.md says where each
came from), command runners replaced by fakes."""

from __future__ import annotations

import ctypes
import plistlib
import re
import sys
from collections import namedtuple
from pathlib import Path

import pytest

from fsyncbench.host import _common, _darwin, _other
from fsyncbench.jsonable import from_jsonable, to_jsonable
from fsyncbench.model import Host, StorageTarget
from fsyncbench.report.host_text import host_lines

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


def test_on_other_systems_a_backslash_is_part_of_a_name() -> None:
    # a file named "data\\x" in / is on /, not on the mount at /data (POSIX names may hold
    # a backslash; only Windows reads it as a separator, and it has its own module)
    parts = [Part("/dev/ada0p2", "/", "ufs", "rw"), Part("/dev/ada1p1", "/data", "ufs", "rw")]
    target = _other.storage_target("/data\\x", parts)
    assert target.mount is not None and target.mount.mount_point == "/"
    assert _other.storage_target("/data/x", parts).mount.mount_point == "/data"


# --------------------------------------------------------------------------- firmlinks
# macOS 10.15+ boots from a read-only system volume at / and keeps what users write on the
# Data volume at /System/Volumes/Data, joined by firmlinks (/usr/share/firmlinks): a path
# under /Users or /private is on the Data volume though realpath leaves it as it is.
# Recordings (tests/fixtures/host/README.md says where each came from):

FIRMLINKS_FILE = FIXTURES / "firmlinks_catalina_10_15_1.txt"
_SDISKPART = re.compile(
    r"sdiskpart\(device='([^']*)', mountpoint='([^']*)', fstype='([^']*)', opts='([^']*)'\)"
)
_MOUNT_LINE = re.compile(r"^(.+?) on (/.*?) \(([^,)]+)(?:, ([^)]*))?\)$")
_DF_LINE = re.compile(r"^(.+?)\s+\S+\s+\S+\s+\S+\s+\d+%\s+\d+\s+\d+\s+\d+%\s+(/.*)$")


def psutil_recording(name: str) -> list[Part]:
    """A printed ``psutil.disk_partitions()`` list, as psutil's namedtuples."""
    return [Part(*m) for m in _SDISKPART.findall((FIXTURES / name).read_text())]


def mount_recording(name: str) -> list[Part]:
    """``mount`` output as psutil would give it: device, mount point, type, options (the
    words ``mount`` prints, joined by commas)."""
    parts = []
    for line in (FIXTURES / name).read_text().splitlines():
        m = _MOUNT_LINE.match(line)
        if m:
            opts = ",".join(o.strip() for o in (m.group(4) or "").split(","))
            parts.append(Part(m.group(1), m.group(2), m.group(3), opts))
    return parts


def df_recording(name: str) -> list[Part]:
    """``df -h`` output: device and mount point only (df prints no type: apfs is written
    for /dev/disk* volumes, autofs for automounter maps, devfs for devfs; no options)."""
    parts = []
    for line in (FIXTURES / name).read_text().splitlines()[1:]:
        m = _DF_LINE.match(line)
        if m:
            device = m.group(1)
            fstype = "apfs" if device.startswith("/dev/disk") else device.split()[0]
            parts.append(Part(device, m.group(2), {"map": "autofs"}.get(fstype, fstype), ""))
    return parts


APPLE_SILICON = psutil_recording("psutil_disk_partitions_apple_silicon.txt")
BIG_SUR_INTEL = mount_recording("mount_big_sur_intel.txt")
CATALINA = df_recording("df_catalina.txt")
#: psutil.disk_partitions() on macOS 10.14 Mojave (one volume at /, no Data volume), as
#: posted in https://github.com/giampaolo/psutil/issues/1509 (device, mount point, type)
MOJAVE = [
    Part("/dev/disk1s1", "/", "apfs", "rw,local,rootfs,dovolfs,journaled,multilabel"),
    Part("/dev/disk1s4", "/private/var/vm", "apfs", "rw,local,dovolfs,dontbrowse,journaled"),
    Part("/dev/disk2s1", "/Volumes/ssd-t5", "exfat", "rw,local"),
]
#: Synthetic: no public ``diskutil info -plist /System/Volumes/Data`` was found (fixtures README);
#: the identifiers are those of the Apple Silicon recording.
DATA_VOLUME = synthetic_plist(
    DeviceIdentifier="disk3s1",
    APFSContainerReference="disk3",
    APFSPhysicalStores=[{"APFSPhysicalStore": "disk0s2"}],
    BusProtocol="Apple Fabric",
    FilesystemType="apfs",
    MountPoint="/System/Volumes/Data",
)


def test_the_recordings_read_as_recorded() -> None:
    assert [(p.device, p.mountpoint) for p in APPLE_SILICON][::7] == [
        ("/dev/disk3s3s1", "/"),
        ("/dev/disk3s1", "/System/Volumes/Data"),
    ]
    assert len(APPLE_SILICON) == 8 and APPLE_SILICON[0].opts.startswith("ro,")
    assert BIG_SUR_INTEL[0] == Part(
        "/dev/disk1s5s1", "/", "apfs", "sealed,local,read-only,journaled"
    )
    assert BIG_SUR_INTEL[-1].mountpoint == "/Volumes/noether 1 250 Go 1"
    assert [p.mountpoint for p in CATALINA] == [
        "/",
        "/dev",
        "/System/Volumes/Data",
        "/private/var/vm",
        "/System/Volumes/Data/home",
        "/Volumes/Install macOS Catalina",
    ]
    assert CATALINA[4].device == "map auto_home" and CATALINA[4].fstype == "autofs"


def test_firmlinks_file_parses() -> None:
    links = _darwin.parse_firmlinks(FIRMLINKS_FILE.read_text())
    assert len(links) == 18
    assert ("/Users", "Users") in links and ("/private", "private") in links
    assert _darwin.BUILTIN_FIRMLINKS == links  # the built-in list is this recording
    # a line that is not "absolute path TAB relative path" is skipped, not guessed at
    assert _darwin.parse_firmlinks("/Users\tUsers\n\nnot a line\nrel\trel\n/x\t/abs\n") == (
        ("/Users", "Users"),
    )
    assert _darwin.parse_firmlinks(None) == ()


def _target(path: str, parts, realpath=None, firmlinks_file=FIRMLINKS_FILE, volume=DATA_VOLUME):
    diskutil, calls = fake_diskutil({"/System/Volumes/Data": volume})
    target = _darwin.storage_target(
        path,
        diskutil,
        parts,
        firmlinks_file=str(firmlinks_file),
        realpath=realpath or (lambda p: p),
    )
    return target, calls


@pytest.mark.parametrize(
    ("given", "resolved", "firmlink"),
    [
        ("/Users/me/agent/journal", "/Users/me/agent/journal", "/Users"),
        ("/private/tmp/bench", "/private/tmp/bench", "/private"),
        # /tmp is a symlink to private/tmp: realpath on a Mac gives /private/tmp/...
        ("/tmp/bench", "/private/tmp/bench", "/private"),
        ("/var/db/app", "/private/var/db/app", "/private"),
        ("/Applications/App.app/Contents", "/Applications/App.app/Contents", "/Applications"),
        ("/usr/local/var/db", "/usr/local/var/db", "/usr/local"),
        ("/System/Library/Caches/app", "/System/Library/Caches/app", "/System/Library/Caches"),
    ],
)
def test_firmlinked_path_is_on_the_data_volume(given, resolved, firmlink) -> None:
    target, calls = _target(given, APPLE_SILICON, realpath={given: resolved}.get)
    assert target.path == resolved
    assert target.mount is not None
    assert (target.mount.mount_point, target.mount.source, target.mount.fs_type) == (
        "/System/Volumes/Data",
        "/dev/disk3s1",
        "apfs",
    )
    assert target.mount.options == (
        "rw",
        "local",
        "dovolfs",
        "dontbrowse",
        "journaled",
        "multilabel",
    )
    assert target.firmlink == firmlink
    # the diskutil facts are the Data volume's, and down to its physical store
    assert calls[0] == "/System/Volumes/Data"
    assert target.darwin is not None and target.darwin["DeviceIdentifier"] == "disk3s1"
    assert target.chain == ("disk3s1", "disk3", "disk0s2", "disk0")


@pytest.mark.parametrize(
    "path", ["/System/Library/Frameworks/x", "/System/Applications/Mail.app", "/usr/bin", "/"]
)
def test_path_on_the_system_volume_stays_on_slash(path) -> None:
    target, calls = _target(path, APPLE_SILICON)
    assert target.mount is not None
    assert (target.mount.mount_point, target.mount.source) == ("/", "/dev/disk3s3s1")
    assert "ro" in target.mount.options
    assert target.firmlink is None
    assert calls[0] == "/"


def test_path_literally_under_the_data_volume_needs_no_firmlink() -> None:
    target, calls = _target("/System/Volumes/Data/Users/me/j", APPLE_SILICON)
    assert target.mount is not None and target.mount.source == "/dev/disk3s1"
    assert target.firmlink is None
    assert calls[0] == "/System/Volumes/Data"


def test_a_mount_inside_a_firmlinked_directory_is_its_own() -> None:
    # Catalina mounted the VM volume on /private/var/vm: the longest prefix decides first
    target, _ = _target("/private/var/vm/swapfile0", CATALINA)
    assert target.mount is not None and target.mount.source == "/dev/disk1s4"
    assert target.firmlink is None
    target, _ = _target("/private/var/db", CATALINA)
    assert target.mount is not None and target.mount.source == "/dev/disk1s1"
    assert target.firmlink == "/private"
    target, _ = _target("/Volumes/Install macOS Catalina/x", CATALINA)
    assert target.mount is not None and target.mount.source == "/dev/disk2s3"
    assert target.firmlink is None


#: Which volume each entry of / is on, as a Big Sur Mac printed it (its owner's script asked
#: df for every entry): https://unix.stackexchange.com/questions/781382 . etc, tmp and var
#: are symlinks into /private there; realpath gives that.
BIG_SUR_VOLUMES = {
    ".file": "/",
    ".vol": "/",
    "Applications": "/System/Volumes/Data",
    "Library": "/System/Volumes/Data",
    "System": "/",
    "Users": "/System/Volumes/Data",
    "Volumes": "/System/Volumes/Data",
    "bin": "/",
    "cores": "/System/Volumes/Data",
    "etc": "/System/Volumes/Data",
    "opt": "/System/Volumes/Data",
    "private": "/System/Volumes/Data",
    "sbin": "/",
    "tmp": "/System/Volumes/Data",
    "usr": "/",
    "var": "/System/Volumes/Data",
}


@pytest.mark.parametrize(("entry", "volume"), sorted(BIG_SUR_VOLUMES.items()))
def test_each_root_entry_is_on_the_volume_a_big_sur_mac_showed(entry, volume) -> None:
    symlinks = {"/etc": "/private/etc", "/tmp": "/private/tmp", "/var": "/private/var"}
    path = "/" + entry
    target, _ = _target(path, BIG_SUR_INTEL, realpath=lambda p: symlinks.get(p, p))
    assert target.mount is not None and target.mount.mount_point == volume


def test_before_catalina_there_is_no_data_volume() -> None:
    target, _ = _target("/Users/me/j", MOJAVE)
    assert target.mount is not None and target.mount.mount_point == "/"
    assert target.firmlink is None


def test_unreadable_firmlinks_file_falls_back_to_the_built_in_list(tmp_path) -> None:
    missing = tmp_path / "no-such-file"
    target, _ = _target("/Users/me/j", APPLE_SILICON, firmlinks_file=missing)
    assert target.mount is not None and target.mount.mount_point == "/System/Volumes/Data"
    assert target.firmlink == "/Users"


def test_the_firmlinks_file_is_read_not_assumed(tmp_path) -> None:
    only_users = tmp_path / "firmlinks"
    only_users.write_text("/Users\tUsers\n")
    target, _ = _target("/Applications/App.app", APPLE_SILICON, firmlinks_file=only_users)
    assert target.mount is not None and target.mount.mount_point == "/"
    target, _ = _target("/Users/me", APPLE_SILICON, firmlinks_file=only_users)
    assert target.firmlink == "/Users"


def test_collect_records_the_firmlink() -> None:
    outputs = {(_darwin.DISKUTIL, "info", "-plist", "/System/Volumes/Data"): (0, DATA_VOLUME)}
    facts = _darwin.collect(
        "/Users/me",
        runner=lambda argv: outputs.get(tuple(argv)),
        partitions=APPLE_SILICON,
        firmlinks_file=str(FIRMLINKS_FILE),
    )
    assert facts.target.mount is not None
    assert facts.target.mount.mount_point == "/System/Volumes/Data"
    assert facts.target.firmlink == "/Users"


def test_the_report_records_and_shows_the_firmlink() -> None:
    target, _ = _target("/Users/me/j", APPLE_SILICON)
    host = Host(hostname="mac", os_name="Darwin", target=target)
    lines = dict(host_lines(host))
    assert lines["filesystem"] == "apfs on /System/Volumes/Data from /dev/disk3s1"
    assert lines["firmlink"] == "/Users/me/j is on /System/Volumes/Data via firmlink /Users"
    data = to_jsonable(target)
    assert data["firmlink"] == "/Users"
    assert from_jsonable(StorageTarget, data) == target
    # a target recorded before the field existed still loads, with no firmlink
    del data["firmlink"]
    assert from_jsonable(StorageTarget, data).firmlink is None
    on_slash, _ = _target("/usr/bin", APPLE_SILICON)
    assert "firmlink" not in dict(host_lines(Host("mac", "Darwin", on_slash)))


# --------------------------------------------------------------------------- mutation gaps
# (issue 45: each test below fails on a change mutmut made that the tests above let pass)


def test_physical_stores_named_by_device_identifier_count_and_junk_is_skipped() -> None:
    info = _darwin.parse_diskutil_info(
        synthetic_plist(
            APFSPhysicalStores=[
                {"DeviceIdentifier": "disk1s2"},
                {"APFSPhysicalStore": "disk0s2", "DeviceIdentifier": "disk9"},
                {"Size": 1},
            ]
        )
    )
    assert info is not None and info["APFSPhysicalStores"] == ["disk1s2", "disk0s2"]


def test_a_fusion_drive_has_both_whole_disks_once_each() -> None:
    # a Fusion drive's container spans an SSD and a hard disk; two stores on one disk too
    volume = {
        "DeviceIdentifier": "disk2s1",
        "APFSContainerReference": "disk2",
        "APFSPhysicalStores": ["disk0s2", "disk1s2", "disk1s3", "notadisk"],
    }
    chain, wholes = _darwin.chain_and_whole_disks(volume)
    assert wholes == ("disk0", "disk1")
    assert chain == (
        "disk2s1",
        "disk2",
        "disk0s2",
        "disk1s2",
        "disk1s3",
        "notadisk",
        "disk0",
        "disk1",
    )


def test_a_partition_goes_to_its_parent_whole_disk_first_else_its_own_prefix() -> None:
    parent = {"DeviceIdentifier": "disk2s1", "ParentWholeDisk": "disk0"}
    assert _darwin.chain_and_whole_disks(parent)[1] == ("disk0",)
    assert _darwin.chain_and_whole_disks({"DeviceIdentifier": "disk4s1"})[1] == ("disk4",)


def test_trailing_slashes_and_the_root_in_the_firmlinks_file() -> None:
    assert _darwin.parse_firmlinks("/Users/\tUsers\n/\tRoot\n") == (
        ("/Users", "Users"),
        ("/", "Root"),
    )


def test_the_root_is_never_the_firmlink_of_a_path() -> None:
    links = (("/", "Root"), ("/Users", "Users"))
    assert _darwin.firmlink_of("/etc/hosts", links) is None
    assert _darwin.firmlink_of("/Users/me", links) == "/Users"


def test_a_volume_that_is_its_whole_disk_is_asked_for_once() -> None:
    whole = synthetic_plist(
        DeviceIdentifier="disk5", BusProtocol="USB", MediaName="Stick", FilesystemType="msdos"
    )
    diskutil, calls = fake_diskutil({"/Volumes/Ext SSD": whole, "disk5": VBOX_DISK})
    target = _darwin.storage_target("/Volumes/Ext SSD", diskutil, MAC_PARTITIONS)
    assert calls == ["/Volumes/Ext SSD"]
    assert [d.model for d in target.disks] == ["Stick"]


def test_no_mount_or_no_diskutil_keeps_the_path_and_the_firmlink(tmp_path) -> None:
    assert _darwin.storage_target("/x/y", fake_diskutil({})[0], []).path == "/x/y"
    links = tmp_path / "firmlinks"
    links.write_text("/Special\tSpecial\n")
    target, _ = _target("/Special/j", APPLE_SILICON, firmlinks_file=links, volume=b"")
    assert (target.path, target.firmlink) == ("/Special/j", "/Special")
    assert target.mount is not None and target.mount.mount_point == "/System/Volumes/Data"


def test_without_partitions_given_the_live_ones_are_read(tmp_path) -> None:
    target = _darwin.storage_target(str(tmp_path), fake_diskutil({})[0])
    assert target.mount is not None


def test_sysctl_output_that_is_not_ascii_is_no_answer() -> None:
    assert _darwin.parse_hv_vmm_present((0, b"\xff1\n")) is None


@pytest.mark.parametrize(
    ("argv", "timeout"),
    [
        ([_darwin.DISKUTIL, "info", "-plist", "/"], _darwin.DISKUTIL_TIMEOUT_S),
        ([_darwin.SYSCTL, "-n", "kern.hv_vmm_present"], _darwin.SYSCTL_TIMEOUT_S),
        (["/usr/bin/true", _darwin.DISKUTIL], _darwin.SYSCTL_TIMEOUT_S),
        ([], _darwin.SYSCTL_TIMEOUT_S),
    ],
)
def test_diskutil_gets_its_own_timeout(monkeypatch, argv, timeout) -> None:
    seen = []
    monkeypatch.setattr(_darwin, "run_command", lambda a, t: seen.append(t) or (0, b""))
    _darwin._default_runner(argv)
    assert seen == [timeout] and _darwin.DISKUTIL_TIMEOUT_S != _darwin.SYSCTL_TIMEOUT_S


def test_collect_names_the_sqlite_library_and_reads_the_given_firmlinks(tmp_path) -> None:
    links = tmp_path / "firmlinks"
    links.write_text("/Special\tSpecial\n")
    outputs = {(_darwin.DISKUTIL, "info", "-plist", "/System/Volumes/Data"): (0, DATA_VOLUME)}
    facts = _darwin.collect(
        "/Special/j",
        runner=lambda argv: outputs.get(tuple(argv)),
        partitions=APPLE_SILICON,
        firmlinks_file=str(links),
    )
    assert facts.target.firmlink == "/Special"
    assert facts.sqlite_library == _darwin.pick_sqlite_image(
        _darwin.loaded_images(), _common.sqlite_extension_file()
    )
    assert facts.sqlite_library is not None
