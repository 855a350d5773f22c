"""The machine and the storage path under the target, as the host stage records them
(:mod:`fsyncbench.host`): :class:`Host` with its :class:`StorageTarget` (mount, disks,
RAID controllers, the :class:`StorageLayer` stack) and :class:`Virtualization`, and the
:class:`FlushDelta` of a disk's flush counters around a measurement."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Mount:
    """The mount holding the target, from ``/proc/self/mountinfo`` (proc(5)) or psutil.

    ``root`` is the directory of the filesystem mounted here (mountinfo field 4): "/"
    unless this is a bind mount of a subdirectory; None when not known (psutil).
    """

    mount_point: str
    fs_type: str
    source: str
    options: tuple[str, ...] = ()
    super_options: tuple[str, ...] = ()
    device_number: str | None = None
    root: str | None = None


#: ``RaidController.protection``: what the controller reports of the backup power of its
#: write cache (a battery, a supercapacitor with flash: CacheVault, FBWC, ZMM).
PROTECTION_OK = "ok"  # present and ready: the cache survives a power cut
PROTECTION_FAILED = "failed"  # present but failed, or absent: the cache is volatile
PROTECTION_NOT_READY = "not-ready"  # charging, learning, degraded: not (yet) to be relied on


@dataclass(frozen=True)
class RaidController:
    """A hardware RAID controller (or host bus adapter) a disk is a volume of, found in
    ``/sys`` (Linux: the SCSI host's driver, ``/sys/class/scsi_host/hostN/proc_name``, and
    the volume's SCSI vendor/model) and, where its vendor's tool is installed, read with it
    (fsyncbench.host._raid). Only what was read is set; None = not read.

    ``driver`` is the kernel driver (``megaraid_sas``, ``hpsa``...), ``family`` the product
    line it serves, ``host`` the SCSI host (``host0``). ``tool`` names the vendor tool that
    reads it (``storcli64``), ``settles`` the one command that shows its cache policy and
    backup power. ``write_cache`` is the controller's write policy for this volume as read:
    "write back" or "write through"; ``protection`` one of :data:`PROTECTION_OK`,
    :data:`PROTECTION_FAILED`, :data:`PROTECTION_NOT_READY`, with ``protection_detail`` the
    words read (``CacheVault CVPM05 Optimal``); ``drive_cache`` the physical drives' own
    write caches behind it ("enabled"/"disabled"). ``read_by`` is the command that was run
    ("" when none was); ``note`` says why something could not be read. ``has_cache`` False
    marks an adapter without a write cache of its own (a SAS HBA: its disks' caches count).
    ``from_model_string`` is True where the controller was named by the volume's vendor and
    model alone (fsyncbench.host.knowledge), not by its kernel driver.
    """

    driver: str
    family: str
    host: str | None = None
    tool: str | None = None
    settles: str = ""
    has_cache: bool = True
    write_cache: str | None = None
    protection: str | None = None
    protection_detail: str = ""
    drive_cache: str | None = None
    read_by: str = ""
    note: str = ""
    from_model_string: bool = False


@dataclass(frozen=True)
class BlockDevice:
    """A block device behind the target (a layer of the stack, or a disk at its bottom).

    Values come from ``/sys/block/<name>/`` (Documentation/ABI/stable/sysfs-block) on Linux,
    ``diskutil`` on macOS and ``IOCTL_STORAGE_QUERY_PROPERTY`` on Windows
    (:mod:`fsyncbench.host._windows`); ``write_cache`` is "write back" / "write through"
    (Linux's sysfs text; Windows' write-cache property mapped to the same words); None = not
    known. ``removable`` (removable media) and ``flush_supported`` (whether the disk accepts
    a cache flush) are reported by Windows only. ``power_protection`` names who says the
    disk's write cache survives a power cut (:data:`POWER_PROTECTION_NV_CACHE`,
    :data:`POWER_PROTECTION_USER_POLICY`); empty where nothing says so. ``controller`` is the
    RAID controller this disk is a volume of (:class:`RaidController`; None: none found).
    """

    name: str
    model: str | None = None
    vendor: str | None = None
    firmware: str | None = None
    serial: str | None = None
    rotational: bool | None = None
    write_cache: str | None = None
    fua: bool | None = None
    transport: str | None = None
    has_flush_counters: bool = False
    removable: bool | None = None
    flush_supported: bool | None = None
    power_protection: tuple[str, ...] = ()
    controller: RaidController | None = None


#: ``BlockDevice.power_protection``: the disk's driver reports a battery-backed write cache
#: (Windows STORAGE_WRITE_CACHE_PROPERTY ``NVCacheEnabled``).
POWER_PROTECTION_NV_CACHE = "nv-cache"
#: ``BlockDevice.power_protection``: the user marked the write cache power-protected in
#: Windows' disk policy ("Turn off Windows write-cache buffer flushing on the device":
#: STORAGE_WRITE_CACHE_PROPERTY ``UserDefinedPowerProtection``); Windows then sends the disk
#: no flush at all. A declaration, like ``--assume plp``, not a measurement.
POWER_PROTECTION_USER_POLICY = "user-policy"


@dataclass(frozen=True)
class Virtualization:
    """Signs of running under a hypervisor or in a container; None = could not tell.

    ``virtual_disk_hint`` names a disk under the target whose model or bus is an emulated or
    virtual disk's (``PhysicalDrive0 model 'QEMU HARDDISK'``): a guest inferred from the
    disk's identity, not a hypervisor's own flag (recorded on Windows, where no such flag is
    read: :mod:`fsyncbench.host._windows`, and on Linux where no other sign of a hypervisor
    is seen: :mod:`fsyncbench.host._linux`). ``container_evidence`` says what ``container``
    rests on, or why a sign was not taken as a container (a ``/.dockerenv`` nothing else
    confirms): fsyncbench.host._virt; "" where nothing was seen.
    """

    hypervisor_flag: bool | None = None
    dmi_vendor: str | None = None
    dmi_product: str | None = None
    detect_virt: str | None = None
    container: str | None = None
    kernel_hint: str | None = None
    mac_vmm_present: bool | None = None
    virtual_disk_hint: str | None = None
    container_evidence: str = ""

    @property
    def virtualized(self) -> bool | None:
        """True when any sign points to a hypervisor, False when checked and none did."""
        if self.hypervisor_flag or self.mac_vmm_present or self.kernel_hint:
            return True
        if self.virtual_disk_hint:
            return True
        if self.detect_virt and self.detect_virt not in ("none",):
            return True
        if self.hypervisor_flag is False or self.mac_vmm_present is False:
            return False
        return None


#: What a storage layer does with a flush (``StorageLayer.flush``).
FLUSH_PASSES_DOWN = "passes-down"  # partition, dm, md, a filesystem, overlay upper dir
FLUSH_FSYNCS_BACKING_FILE = "fsyncs-backing-file"  # loop: the flush becomes vfs_fsync(backing)
FLUSH_DROPPED = "dropped"  # overlay volatile, a nobarrier/barrier=0 filesystem
FLUSH_NOTHING_TO_FLUSH = "nothing-to-flush"  # RAM holds the bytes: tmpfs, ramfs, zram, brd
FLUSH_FORWARDED = "forwarded"  # FUSE daemon, network filesystem, network disk
FLUSH_TO_HOST = "to-host"  # a virtual disk: the hypervisor gets the flush
FLUSH_TO_DEVICE = "to-device"  # a physical disk: its cache gets a flush command
FLUSH_UNKNOWN = "unknown"


@dataclass(frozen=True)
class StorageLayer:
    """One layer of the storage stack from the target directory down to the media.

    ``kind``: ``filesystem``, ``overlay``, ``fuse``, ``network-fs``, ``loop``, ``dm``, ``md``,
    ``partition``, ``disk``, ``virtual-disk``, ``ram-disk``, ``network-disk``, ``pmem``.
    ``name`` identifies it (a mount point for filesystems, a kernel name for block devices,
    the backing file for a loop device's file). ``flush`` is one of the ``FLUSH_*`` values.
    ``depth`` is 0 for the top; a layer's children follow it with depth + 1 (a walk in
    order, so md/dm with several slaves give several subtrees). ``holds_bytes`` marks the
    media at the bottom: ``volatile`` True for RAM, False for a disk's stable media (its
    write cache is in ``device.write_cache``), None where it cannot be seen (a server, a
    hypervisor). ``note`` says what could not be followed (a relative overlay upper dir, a
    deleted backing file, a ZFS pool). Source of each fact: fsyncbench.host._stack.
    """

    kind: str
    name: str
    flush: str = FLUSH_UNKNOWN
    depth: int = 0
    holds_bytes: bool = False
    volatile: bool | None = None
    fs_type: str | None = None
    options: tuple[str, ...] = ()
    source: str | None = None
    device: BlockDevice | None = None
    note: str = ""


@dataclass(frozen=True)
class StorageTarget:
    """The directory measured and the storage path under it.

    ``chain`` lists the block devices walked from the mount's device down (e.g.
    ``("nvme0n1p2", "nvme0n1")``, ``("loop0", "vda")`` for a loop device whose backing file
    lives on vda); ``disks`` are the block devices at the bottom that hold the bytes (not a
    loop device: its backing file's storage is followed instead); ``layers`` the whole
    stack from the target's filesystem to the media (empty in reports written before it
    existed: the engine then derives a short stack from ``mount`` and ``disks``);
    ``darwin`` holds parsed ``diskutil info -plist`` keys on macOS. ``declared`` holds
    facts the user stated that the machine cannot show (``"plp"``: the drive has power-loss
    protection), recorded as user-declared. ``firmlink`` is the firmlinked directory on the
    macOS system volume through which ``path`` reaches ``mount`` (``/Users``: macOS 10.15+
    keeps it on the Data volume, ``/System/Volumes/Data``; fsyncbench.host._darwin), None
    when ``path`` is under no firmlink (and in reports written before it was recorded).
    """

    path: str
    mount: Mount | None = None
    chain: tuple[str, ...] = ()
    disks: tuple[BlockDevice, ...] = ()
    darwin: dict[str, Any] | None = None
    layers: tuple[StorageLayer, ...] = ()
    declared: tuple[str, ...] = ()
    firmlink: str | None = None


@dataclass(frozen=True)
class Host:
    """Facts about the machine and the target directory, recorded with every report.

    Only ``hostname``, ``os_name`` (``platform.system()``: Linux, Darwin, Windows) and
    ``target`` are required, so a report for a host not at hand can be written by hand.
    """

    hostname: str
    os_name: str
    target: StorageTarget
    virtualization: Virtualization = field(default_factory=Virtualization)
    os_release: str = ""
    os_version: str = ""
    machine: str = ""
    python_version: str = ""
    sqlite_version: str = ""
    sqlite_library: str | None = None
    sqlite_compile_options: tuple[str, ...] = ()
    cpu_brand: str | None = None
    cpu_count_logical: int | None = None
    cpu_count_physical: int | None = None
    memory_total_bytes: int | None = None
    ld_preload: str | None = None


@dataclass(frozen=True)
class FlushDelta:
    """Change of one disk's flush counters across a workload (``/sys/block/<disk>/stat``
    fields 16-17, kernel >= 5.5; https://www.kernel.org/doc/html/latest/block/stat.html).

    ``flushes``/``flush_time_ms`` are None when the counter is not available. ``writes`` is
    the change of stat field 5 (write I/Os completed): whether the data reached this device
    at all while the syncs ran (None: not read, as in reports written before it existed).
    """

    device: str
    flushes: int | None
    flush_time_ms: int | None
    writes: int | None = None
