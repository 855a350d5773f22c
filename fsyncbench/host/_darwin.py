"""macOS: the target's volume and disk from ``diskutil info -plist``, the VMM flag from
``sysctl``, and the SQLite image loaded into this process (dyld).

Sources:

- ``diskutil info -plist <mount point or disk>``: man diskutil(8); keys as macOS prints
  them (recorded outputs in tests/fixtures/host/). ``BusProtocol`` "Apple Fabric" is the
  internal SSD of Apple Silicon Macs; "USB", "PCI-Express", "SATA", "Disk Image" others.
  An APFS volume (``disk3s5``) lives in a container (``APFSContainerReference`` disk3) on
  physical stores (``APFSPhysicalStores``: ``disk0s2``) of a whole disk (``disk0``).
- ``sysctl -n kern.hv_vmm_present``: 1 inside a virtual machine, 0 on hardware (xnu
  bsd/kern/kern_sysctl.c, ``kern.hv_vmm_present``).
- ``_dyld_image_count``/``_dyld_get_image_name``: man dyld(3); Apple's system SQLite is
  ``/usr/lib/libsqlite3.dylib``.
- Firmlinks: since macOS 10.15 Catalina the system runs from a read-only system volume
  mounted at ``/`` (Big Sur and later: a sealed snapshot of it) and what users write lives
  on the Data volume, mounted at ``/System/Volumes/Data``; firmlinks join directories of the
  two ("Bi-directional wormhole in path traversal", WWDC 2019 session 710 "What's New in
  Apple File Systems", https://developer.apple.com/videos/play/wwdc2019/710/ , transcript
  https://asciiwwdc.com/2019/sessions/710 ; Apple, "About the read-only system volume in
  macOS Catalina or later", https://support.apple.com/en-us/101400 ; Apple's
  ``FileFlags.firmlink``: "transparent links between the read-only system volume and
  writable data volume", https://developer.apple.com/documentation/system/fileflags/firmlink ).
  ``realpath`` leaves ``/Users/me`` as it is, so the longest mount prefix is ``/``; the
  list of firmlinks is ``/usr/share/firmlinks``, one per line: the directory on the system
  volume, a TAB, its path relative to the Data volume (``/Users\tUsers``;
  https://superuser.com/questions/1490834 , recorded in tests/fixtures/host/). A Big Sur
  Mac's own df of every entry of ``/`` (https://unix.stackexchange.com/questions/781382)
  shows exactly the firmlinked ones (and the symlinks into ``/private``) on the Data volume.
"""

from __future__ import annotations

import ctypes
import os
import plistlib
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from fsyncbench.model import BlockDevice, Mount, StorageTarget, Virtualization

from ._common import (
    PlatformFacts,
    disk_partitions,
    is_within,
    psutil_mount,
    read_text,
    run_command,
    sqlite_extension_file,
)

DISKUTIL = "/usr/sbin/diskutil"
SYSCTL = "/usr/sbin/sysctl"
DISKUTIL_TIMEOUT_S = 10.0
SYSCTL_TIMEOUT_S = 2.0

#: ``diskutil info -plist`` keys kept in :attr:`StorageTarget.darwin`.
KEPT_KEYS = (
    "DeviceIdentifier",
    "BusProtocol",
    "Internal",
    "SolidState",
    "MediaName",
    "FilesystemType",
    "FilesystemName",
    "VirtualOrPhysical",
    "ParentWholeDisk",
    "APFSContainerReference",
    "APFSPhysicalStores",
    "RemovableMedia",
    "Ejectable",
    "DeviceTreePath",
    "MountPoint",
)

Runner = Callable[[list[str]], "tuple[int, bytes] | None"]

#: Where macOS 10.15+ lists its firmlinks (module docstring).
FIRMLINKS_FILE = "/usr/share/firmlinks"
#: Mount point of the Data volume on macOS 10.15+ (module docstring).
DATA_VOLUME = "/System/Volumes/Data"
#: The firmlinks of macOS 10.15.1 (https://superuser.com/questions/1490834; Monterey's list
#: is the same: https://wiki.burkey.co/doku.php?id=tech:macos:firmlinks), used when
#: :data:`FIRMLINKS_FILE` cannot be read: (directory on the system volume, its path relative
#: to the Data volume).
BUILTIN_FIRMLINKS: tuple[tuple[str, str], ...] = tuple(
    (f"/{rel}", rel)
    for rel in (
        "AppleInternal",
        "Applications",
        "Library",
        "System/Library/Caches",
        "System/Library/Assets",
        "System/Library/PreinstalledAssets",
        "System/Library/AssetsV2",
        "System/Library/PreinstalledAssetsV2",
        "System/Library/CoreServices/CoreTypes.bundle/Contents/Library",
        "System/Library/Speech",
        "Users",
        "Volumes",
        "cores",
        "opt",
        "private",
        "usr/local",
        "usr/libexec/cups",
        "usr/share/snmp",
    )
)

_WHOLE_DISK = re.compile(r"^(disk\d+)")


def parse_diskutil_info(data: bytes | None) -> dict[str, Any] | None:
    """The :data:`KEPT_KEYS` of one ``diskutil info -plist`` output, JSON-ready.

    ``APFSPhysicalStores`` becomes a list of identifiers (``["disk0s2"]``). Returns None
    for no data, data that is not a plist dict, or diskutil's error document
    (``<key>Error</key><true/>``). Never raises.
    """
    if not data:
        return None
    try:
        info = plistlib.loads(data)
    except Exception:  # plistlib raises InvalidFileException, ExpatError, ValueError...
        return None
    if not isinstance(info, dict) or info.get("Error") is True:
        return None
    kept: dict[str, Any] = {}
    for key in KEPT_KEYS:
        if key not in info:
            continue
        value = info[key]
        if key == "APFSPhysicalStores":
            value = [
                str(store.get("APFSPhysicalStore") or store.get("DeviceIdentifier"))
                for store in value
                if isinstance(store, dict)
                and (store.get("APFSPhysicalStore") or store.get("DeviceIdentifier"))
            ]
        if isinstance(value, (str, bool, int, float, list)):
            kept[key] = value
    return kept


def whole_disk_of(identifier: str | None) -> str | None:
    """``disk0s2`` -> ``disk0``; ``disk3s1s1`` -> ``disk3``; anything else -> None."""
    match = _WHOLE_DISK.match(identifier or "")
    return match.group(1) if match else None


def chain_and_whole_disks(volume: dict[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(chain, whole disks) of a parsed volume: volume -> APFS container -> physical
    stores -> their whole disks; a non-APFS volume goes to ``ParentWholeDisk``."""
    chain: list[str] = []

    def add(name: str | None) -> None:
        if name and name not in chain:
            chain.append(name)

    add(volume.get("DeviceIdentifier"))
    add(volume.get("APFSContainerReference"))
    stores = [s for s in volume.get("APFSPhysicalStores") or [] if isinstance(s, str)]
    wholes: list[str] = []
    for store in stores:
        add(store)
        whole = whole_disk_of(store)
        if whole and whole not in wholes:
            wholes.append(whole)
    if not wholes:
        whole = volume.get("ParentWholeDisk") or whole_disk_of(volume.get("DeviceIdentifier"))
        if whole:
            wholes.append(whole)
    for whole in wholes:
        add(whole)
    return tuple(chain), tuple(wholes)


def block_device(name: str, info: dict[str, Any]) -> BlockDevice:
    """A :class:`BlockDevice` from parsed diskutil keys: model = MediaName, rotational =
    not SolidState (None when the key is absent: USB sticks often omit it), transport =
    BusProtocol. macOS exposes no flush counters."""
    solid = info.get("SolidState")
    return BlockDevice(
        name=name,
        model=(info.get("MediaName") or None),
        rotational=(not solid) if isinstance(solid, bool) else None,
        transport=(info.get("BusProtocol") or None),
        has_flush_counters=False,
    )


def parse_firmlinks(text: str | None) -> tuple[tuple[str, str], ...]:
    """The lines of a ``/usr/share/firmlinks`` text as (directory on the system volume,
    its path relative to the Data volume): ``/Users\tUsers`` -> ``("/Users", "Users")``.
    Lines that are not an absolute path, a TAB and a relative path are skipped. () for
    None or no such line. Never raises."""
    links = []
    for line in (text or "").splitlines():
        system, tab, data = line.strip().partition("\t")
        if tab and system.startswith("/") and data and not data.startswith("/"):
            links.append((system.rstrip("/") or "/", data))
    return tuple(links)


def read_firmlinks(path: str = FIRMLINKS_FILE) -> tuple[tuple[str, str], ...]:
    """The firmlinks listed in ``path`` (:func:`parse_firmlinks`), or
    :data:`BUILTIN_FIRMLINKS` when it is missing, unreadable or lists none."""
    return parse_firmlinks(read_text(path)) or BUILTIN_FIRMLINKS


def firmlink_of(path: str, firmlinks: Sequence[tuple[str, str]]) -> str | None:
    """The firmlinked directory holding ``path`` (component-wise, the longest when one lies
    under another), or None."""
    holders = [system for system, _ in firmlinks if system != "/" and is_within(path, system)]
    return max(holders, key=len) if holders else None


def firmlinked_mount(
    path: str, mount: Mount, partitions: Sequence[Any], firmlinks_file: str = FIRMLINKS_FILE
) -> tuple[Mount, str | None]:
    """(the mount that holds ``path``, the firmlink it is reached through or None).

    ``mount`` is the longest-prefix mount of ``path``. When that is ``/`` and a Data
    volume is mounted at :data:`DATA_VOLUME` (macOS 10.15+), a path under a firmlinked
    directory (``firmlinks_file``, else :data:`BUILTIN_FIRMLINKS`) is on the Data volume:
    its mount is returned. Otherwise ``mount`` as it is (macOS 10.14 and earlier have no
    Data volume; a volume mounted inside a firmlinked directory, such as Catalina's
    ``/private/var/vm``, is its own longest prefix already)."""
    if mount.mount_point != "/":
        return mount, None
    data = psutil_mount(DATA_VOLUME, partitions)
    if data is None or data.mount_point != DATA_VOLUME:
        return mount, None
    link = firmlink_of(path, read_firmlinks(firmlinks_file))
    return (data, link) if link else (mount, None)


def storage_target(
    target: str,
    diskutil: Callable[[str], dict[str, Any] | None],
    partitions: Sequence[Any] | None = None,
    firmlinks_file: str = FIRMLINKS_FILE,
    realpath: Callable[[str], str] = os.path.realpath,
) -> StorageTarget:
    """Mount (psutil, longest prefix; through a firmlink, the Data volume:
    :func:`firmlinked_mount`), diskutil facts and whole disks for ``target``.

    ``diskutil(id_or_mount_point)`` returns :func:`parse_diskutil_info` output or None.
    Each whole disk is asked for separately (its MediaName/SolidState), falling back to
    the volume's own keys when that fails. ``partitions`` (psutil's, default: read now),
    ``firmlinks_file`` and ``realpath`` (``/tmp`` -> ``/private/tmp`` on a Mac) are
    replaced in tests.
    """
    path = realpath(target)
    if partitions is None:
        partitions = disk_partitions() or []
    mount = psutil_mount(path, partitions)
    if mount is None:
        return StorageTarget(path=path)
    mount, firmlink = firmlinked_mount(path, mount, partitions, firmlinks_file)
    volume = diskutil(mount.mount_point)
    if volume is None:
        return StorageTarget(path=path, mount=mount, firmlink=firmlink)
    chain, wholes = chain_and_whole_disks(volume)
    disks = []
    for whole in wholes:
        info = volume if whole == volume.get("DeviceIdentifier") else diskutil(whole)
        disks.append(block_device(whole, info if info is not None else volume))
    return StorageTarget(
        path=path,
        mount=mount,
        chain=chain,
        disks=tuple(disks),
        darwin=volume,
        firmlink=firmlink,
    )


def parse_hv_vmm_present(result: tuple[int, bytes] | None) -> bool | None:
    """``sysctl -n kern.hv_vmm_present`` -> True ("1"), False ("0"), None otherwise."""
    if result is None or result[0] != 0:
        return None
    text = result[1].decode("ascii", errors="replace").strip()
    return {"1": True, "0": False}.get(text)


def pick_sqlite_image(images: Iterable[str], extension_file: str | None = None) -> str | None:
    """First loaded image whose file name starts with ``libsqlite3``; else the ``_sqlite3``
    extension file (SQLite linked statically into it)."""
    for image in images:
        if os.path.basename(image).startswith("libsqlite3"):
            return image
    return extension_file


def loaded_images() -> list[str]:
    """Paths of the images dyld has loaded into this process (man dyld(3)); [] on failure."""
    try:
        libc = ctypes.CDLL(None)
        count = libc._dyld_image_count
        count.restype = ctypes.c_uint32
        name = libc._dyld_get_image_name
        name.restype = ctypes.c_char_p
        name.argtypes = [ctypes.c_uint32]
        images = []
        for index in range(count()):
            raw = name(index)
            if raw:
                images.append(os.fsdecode(raw))
        return images
    except (OSError, AttributeError):
        return []


def _default_runner(argv: list[str]) -> tuple[int, bytes] | None:
    timeout = DISKUTIL_TIMEOUT_S if argv and argv[0] == DISKUTIL else SYSCTL_TIMEOUT_S
    return run_command(argv, timeout)


def collect(
    target: str,
    runner: Runner | None = None,
    partitions: Sequence[Any] | None = None,
    firmlinks_file: str = FIRMLINKS_FILE,
) -> PlatformFacts:
    """macOS facts for ``target``; ``runner``/``partitions``/``firmlinks_file`` replace
    diskutil/sysctl, psutil and /usr/share/firmlinks in tests. Never raises on tool
    failures (the facts become None)."""
    run = runner or _default_runner

    def diskutil(name: str) -> dict[str, Any] | None:
        result = run([DISKUTIL, "info", "-plist", name])
        return parse_diskutil_info(result[1]) if result and result[0] == 0 else None

    return PlatformFacts(
        target=storage_target(target, diskutil, partitions, firmlinks_file),
        virtualization=Virtualization(
            mac_vmm_present=parse_hv_vmm_present(run([SYSCTL, "-n", "kern.hv_vmm_present"]))
        ),
        sqlite_library=pick_sqlite_image(loaded_images(), sqlite_extension_file()),
    )
