"""Device classes, the honest-flush floor of each, and drives known to keep acknowledged
writes without a flush to media (power-loss protection, or no volatile write cache).

Floors are the latency bands of docs/verdicts.md ("Latency bands by device class"): spinning disk
about 2 ms; consumer SSD without power-loss protection about 150 µs (it must program NAND
before a flush can return; Mark Callaghan measured fsync near 0.9 ms on a Samsung 990 Pro
against tens of µs on PLP drives, http://smalldatum.blogspot.com/2026/01/
ssds-power-loss-protection-and-fsync.html); datacenter SSD with power-loss protection about 15 µs (its
capacitors let it acknowledge from DRAM); network block storage about 100 µs; Apple SSD with
F_FULLFSYNC about 1 ms; anything with real block I/O about 10 µs. Latency alone never
decides: honest PLP drives (25-40 µs) overlap lying paths (40-90 µs), so a fast flush is
only plausible on a drive that is known, shown or declared not to need the NAND write.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fsyncbench.host import knowledge
from fsyncbench.host.knowledge import KnownDevice
from fsyncbench.judge import stack
from fsyncbench.model import (
    POWER_PROTECTION_NV_CACHE,
    PROTECTION_OK,
    BlockDevice,
    Host,
    RaidController,
)

LATENCY_BANDS_DOC = (
    "latency bands by device class (fsyncbench docs/verdicts.md): a flush programs NAND "
    "on an SSD without power-loss protection "
    "(http://smalldatum.blogspot.com/2026/01/ssds-power-loss-protection-and-fsync.html) "
    "and waits for the platter on a spinning disk (4.2 ms average rotational latency at "
    "7,200 rpm)"
)

#: Least time (ns) one flush that reaches any real block device takes.
REAL_IO_FLOOR_NS = 10_000
#: A flush that programs NAND on a consumer SSD (no power-loss protection) takes at least this.
CONSUMER_SSD_FLOOR_NS = 150_000
#: A drive with power-loss protection or without a volatile cache acknowledges this fast.
PLP_SSD_FLOOR_NS = 15_000
SPINNING_FLOOR_NS = 2_000_000
NETWORK_BLOCK_FLOOR_NS = 100_000
APPLE_FULLFSYNC_FLOOR_NS = 1_000_000

#: The user's word for a fact the machine cannot show (``--assume plp``).
DECLARED_PLP = "plp"
#: Why a fast flush is allowed where the user declared power-loss protection.
DECLARED_PLP_REASON = "power-loss protection declared by the user (--assume plp), not verified"
#: The user's word that the write-back cache in front of the disks (a RAID controller's
#: battery- or flash-backed cache) survives a power cut (``--assume protected-cache``).
DECLARED_PROTECTED_CACHE = "protected-cache"

#: Every fact a user may declare (``StorageTarget.declared``), with its meaning.
DECLARABLE = {
    DECLARED_PLP: "the drive holding the bytes has power-loss protection",
    DECLARED_PROTECTED_CACHE: "the write-back cache in front of the disks holding the bytes, "
    "such as a RAID controller's battery- or flash-backed cache, survives a power cut",
}


def declared_facts(host: Host) -> set[str]:
    """The user's declarations, normalised (lower case, trimmed)."""
    return {d.strip().lower() for d in host.target.declared}


@dataclass(frozen=True)
class DeviceClass:
    """What kind of storage the facts say this is, and its honest-flush floor (ns).

    ``plp`` says why a fast flush is allowed ("" when it is not): a drive family known to
    have power-loss protection, a disk reporting no volatile write cache, or the user's
    declaration; ``source`` cites the floor and that fact.
    """

    name: str
    floor_ns: int
    source: str
    plp: str = ""


def _azure_disk(d: BlockDevice) -> bool:
    """A Hyper-V virtual disk (``Msft Virtual Disk``), Azure's managed disks among them:
    held to the network block floor (fsyncbench.host.knowledge, row msft-virtual-disk)."""
    row = knowledge.known(d.vendor, d.model, knowledge.EMULATED)
    return row is not None and row.id == "msft-virtual-disk"


def plp_source(vendor: str | None, model: str | None) -> str | None:
    """Why the drive family of the disk ``vendor model`` is taken to have power-loss
    protection: its ``plp`` row of the device knowledge table (fsyncbench.host.knowledge:
    model-string prefixes of data-center families whose vendors document it, each row with
    its document), or None. A match is identity, not measurement: verdicts relying on it
    are "inferred". Client drives advertising "power loss protection for data at rest"
    (Micron 1100, Crucial MX) do not protect data in flight and are not listed."""
    row = knowledge.known(vendor, model, knowledge.PLP)
    return None if row is None else f"{row.source(knowledge.PLP)}; {row.fact(knowledge.PLP)}"


def cloud_block(d: BlockDevice) -> KnownDevice | None:
    """The device knowledge row naming ``d`` network block storage of a cloud provider that
    documents durable, replicated writes (AWS EBS, Google Cloud Persistent Disk), or None."""
    return knowledge.known(d.vendor, d.model, knowledge.CLOUD_BLOCK)


def hybrid(d: BlockDevice) -> KnownDevice | None:
    """The device knowledge row naming ``d`` a hybrid drive (SSHD), or None."""
    return knowledge.known(d.vendor, d.model, knowledge.HYBRID)


#: Why a disk's write cache reported power-protected may acknowledge a flush from its cache
#: (``BlockDevice.power_protection``, read on Windows: fsyncbench.host._windows).
REPORTED_NV_CACHE = (
    "the disk reports a battery-backed write cache (Windows NVCacheEnabled, "
    "https://learn.microsoft.com/en-us/windows/win32/api/winioctl/"
    "ns-winioctl-storage_write_cache_property), not verified"
)
REPORTED_USER_POLICY = (
    "the disk's write cache is declared power-protected in Windows' disk policy ('Turn off "
    "Windows write-cache buffer flushing on the device': UserDefinedPowerProtection), so "
    "Windows sends it no flush at all (disk.sys DiskShutdownFlush, "
    "https://github.com/microsoft/Windows-driver-samples/blob/main/storage/class/disk/src/"
    "disk.c): a declaration, not verified"
)


def reported_protection(disks: Sequence[BlockDevice]) -> str:
    """Why every disk of ``disks`` has a write cache reported to survive a power cut
    (``BlockDevice.power_protection``), or "" when any disk does not: the driver's report of a
    battery-backed cache where every disk has one, else the user's disk policy."""
    if not disks or not all(d.power_protection for d in disks):
        return ""
    if all(POWER_PROTECTION_NV_CACHE in d.power_protection for d in disks):
        return REPORTED_NV_CACHE
    return REPORTED_USER_POLICY


#: Why a RAID controller's write-back cache may acknowledge a flush (fsyncbench.judge.
#: cache_rules has the rule; the tools' words: fsyncbench.host._raidcli).
CONTROLLER_CACHE_DOC = (
    "a RAID controller with a battery- or flash-backed cache keeps what it acknowledged "
    "across a power cut, and by default writes back only while that backup is good "
    "(Broadcom MegaRAID SAS Software User Guide, 'Write Policy', "
    "https://docs.broadcom.com/docs/12353236; HPE Smart Array 'No-Battery Write Cache'; "
    "Adaptec 'write-back when protected by battery'); the drives' own caches behind it "
    "are not protected (HP ISS Technology Update, Volume 9, Number 3)"
)


def controllers(disks: Sequence[BlockDevice]) -> list[RaidController]:
    """The RAID controllers with a write cache in front of ``disks``: every disk's, or []
    when any disk has none (a mixed stack is judged on its disks)."""
    found = [d.controller for d in disks]
    if not disks or any(c is None or not c.has_cache for c in found):
        return []
    return [c for c in found if c is not None]


def controller_protection(disks: Sequence[BlockDevice]) -> str:
    """Why the controller cache in front of every disk of ``disks`` keeps acknowledged
    writes, as read from the controller ("" when not read so for every disk): write back,
    backup power ready, and the drives' own caches not enabled."""
    found = controllers(disks)
    if not found or not all(
        c.write_cache == "write back"
        and c.protection == PROTECTION_OK
        and c.drive_cache != "enabled"
        for c in found
    ):
        return ""
    c = found[0]
    return (
        f"the RAID controller's write-back cache has its backup power ready "
        f"({c.protection_detail}; read with {c.read_by}): read, not verified by a power cut"
    )


def declared_cache_protection(host: Host) -> str:
    """The user's declaration that the cache in front of the disks is protected, or "":
    ``--assume protected-cache``, or ``--assume plp`` for disks that are volumes of a RAID
    controller (the "drive" the system sees is the controller's volume)."""
    declared = declared_facts(host)
    disks = [layer.device for layer in stack.media(host.target) if layer.device is not None]
    word = (
        DECLARED_PROTECTED_CACHE
        if DECLARED_PROTECTED_CACHE in declared
        else DECLARED_PLP
        if DECLARED_PLP in declared and controllers(disks)
        else ""
    )
    if not word:
        return ""
    return (
        "the write-back cache in front of the disks is declared protected by the user "
        f"(--assume {word}), not verified"
    )


def _fast_flush_allowed(host: Host, disks: Sequence[BlockDevice]) -> str:
    """Why these SSDs may acknowledge a flush without programming NAND, or ""."""
    if DECLARED_PLP in declared_facts(host):
        return DECLARED_PLP_REASON
    if disks and all((d.write_cache or "").strip() == "write through" for d in disks):
        return (
            "the disk reports no volatile write cache (queue/write_cache 'write through'; "
            "for NVMe the kernel sets it from the controller's VWC bit)"
        )
    sources = [plp_source(d.vendor, d.model) for d in disks]
    if disks and all(sources):
        return "a drive family documented with power-loss protection: " + str(sources[0])
    return ""


def device_class(host: Host, primitive: str, *, cache_in_front: bool = True) -> DeviceClass:
    """Device class of the storage holding the target's bytes for ``primitive``, and its
    floor (module docstring): Apple SSD with F_FULLFSYNC 1 ms; cloud network block storage
    100 µs; 15 µs for disks whose write cache is reported power-protected
    (:func:`reported_protection`: what --assume plp declares, reported by Windows), spinning
    or not, and, unless ``cache_in_front`` is False (the medium itself), for disks behind a
    RAID controller cache read as protected (:func:`controller_protection`) or declared so
    (``--assume protected-cache``); spinning disk on bare metal 2 ms, 15 µs with
    ``--assume plp``; an SSD 15 µs when it has power-loss protection
    (known family or ``--assume plp``) or no volatile write cache, else 150 µs with a
    write-back cache, 15 µs when its cache is unknown; anything else 10 µs."""
    target = host.target
    darwin = target.darwin or {}
    if darwin.get("BusProtocol") == "Apple Fabric" and primitive == "F_FULLFSYNC":
        return DeviceClass(
            "Apple internal SSD (F_FULLFSYNC)", APPLE_FULLFSYNC_FLOOR_NS, LATENCY_BANDS_DOC
        )
    disks = [layer.device for layer in stack.media(target) if layer.device is not None]
    if any(cloud_block(d) or _azure_disk(d) for d in disks):
        return DeviceClass("network block storage", NETWORK_BLOCK_FLOOR_NS, LATENCY_BANDS_DOC)
    reported = reported_protection(disks)
    if reported:
        return DeviceClass(
            "disk with a write cache reported power-protected",
            PLP_SSD_FLOOR_NS,
            LATENCY_BANDS_DOC,
            reported,
        )
    in_front = (
        (controller_protection(disks) or declared_cache_protection(host)) if cache_in_front else ""
    )
    if in_front:
        return DeviceClass(
            "disk behind a protected write-back cache",
            PLP_SSD_FLOOR_NS,
            LATENCY_BANDS_DOC,
            in_front,
        )
    if disks and all(d.rotational for d in disks) and not host.virtualization.virtualized:
        hybrids = [hybrid(d) for d in disks]
        if all(hybrids) and DECLARED_PLP not in declared_facts(host):
            # its NAND cache, not the platter, may answer a flush: a flush that programs
            # NAND takes what one on a consumer SSD does, so that is its floor
            row = hybrids[0]
            assert row is not None
            return DeviceClass(
                "hybrid drive (SSHD) whose NAND cache may answer a flush",
                CONSUMER_SSD_FLOOR_NS,
                f"{LATENCY_BANDS_DOC}; {row.name}: {row.source(knowledge.HYBRID)}",
            )
        if DECLARED_PLP in declared_facts(host) and not controllers(disks):
            # "the drive holding the bytes has power-loss protection" (DECLARABLE), said of
            # a spinning disk: its cache survives a power cut, so a flush need not wait for
            # the platter, as the counter rules already take it
            # (rule_facts._power_protected_media) and the floor rule's advice offers it. On
            # a RAID controller's volume the word is the controller cache's
            # (declared_cache_protection), and the platters behind it keep their floor.
            return DeviceClass(
                "spinning disk with power-loss protection declared",
                PLP_SSD_FLOOR_NS,
                LATENCY_BANDS_DOC,
                DECLARED_PLP_REASON,
            )
        return DeviceClass("spinning disk", SPINNING_FLOOR_NS, LATENCY_BANDS_DOC)
    if disks and all(d.rotational is False for d in disks):
        allowed = _fast_flush_allowed(host, disks)
        if allowed:
            return DeviceClass(
                "SSD with power-loss protection or no volatile write cache",
                PLP_SSD_FLOOR_NS,
                LATENCY_BANDS_DOC,
                allowed,
            )
        if any("back" in (d.write_cache or "") for d in disks):
            return DeviceClass(
                "SSD with a volatile write cache and no known power-loss protection",
                CONSUMER_SSD_FLOOR_NS,
                LATENCY_BANDS_DOC,
            )
        return DeviceClass("SSD (write cache not known)", PLP_SSD_FLOOR_NS, LATENCY_BANDS_DOC)
    return DeviceClass("block device", REAL_IO_FLOOR_NS, LATENCY_BANDS_DOC)
