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

#: Model strings of cloud network block storage whose provider documents durable,
#: replicated writes (fsyncbench.judge.rule_facts.CLOUD_BLOCK_DOC): AWS EBS on Nitro NVMe, GCP
#: Persistent Disk (SCSI model "PersistentDisk", NVMe model "nvme_card-pd").
CLOUD_BLOCK_MODELS = ("amazon elastic block store", "persistentdisk", "nvme_card-pd")

#: The user's word for a fact the machine cannot show (``--assume plp``).
DECLARED_PLP = "plp"
#: Why a fast flush is allowed where the user declared power-loss protection.
DECLARED_PLP_REASON = "power-loss protection declared by the user (--assume plp), not verified"
#: The user's word that the write-back cache in front of the disks (a RAID controller's
#: battery- or flash-backed cache) survives a power cut (``--assume protected-cache``).
DECLARED_PROTECTED_CACHE = "protected-cache"

_INTEL_DC = (
    "https://www.intel.com/content/www/us/en/products/details/memory-storage/"
    "data-center-ssds.html (Intel/Solidigm data center SSD product briefs: 'enhanced "
    "power-loss data protection')"
)
_INTEL_DC_OLD = (
    _INTEL_DC + "; Intel SSD DC S3500/S3610/S3700 Series product specifications: 'Enhanced "
    "power-loss data protection'; model strings SSDSC2BA = S3700/S3710, SSDSC2BX = S3610, "
    "SSDSC2BB = S3500/S3510/S3520 per smartmontools drivedb.h ('Intel 730 and DC "
    "S35x0/3610/3700 Series SSDs')"
)
_SAMSUNG_DC = (
    "https://semiconductor.samsung.com/ssd/datacenter-ssd/ (Samsung PM883/PM893/"
    "PM983/PM9A3 data sheets: 'Power Loss Protection')"
)
_MICRON_DC = (
    "https://www.micron.com/products/storage/ssd/data-center-ssd (Micron 5300/5400/"
    "7450 product briefs: 'power-loss protection')"
)
_KIOXIA_DC = (
    "https://americas.kioxia.com/en-us/business/ssd/data-center-ssd.html (KIOXIA "
    "CD6/CM6: 'power loss protection')"
)

#: Model-string prefixes of data-center drive families whose vendors document power-loss
#: protection, lower case, matched against the start of any word of ``vendor model`` as
#: Linux shows it (``device/model``; SATA keeps only the first 16 characters of the ATA
#: model, drivers/ata/libata-scsi.c, so prefixes are short). Model strings per smartmontools
#: drivedb.h where it lists the family (S4510/S4610, PM883/PM893, Micron 5300/5400) and the
#: kernel's NVMe quirk table (Kioxia CD6); the PLP claims are the vendors' (URLs, not
#: fetched from this machine). A match is identity, not measurement: verdicts relying on it
#: are "inferred". Client drives advertising "power loss protection for data at rest"
#: (Micron 1100, Crucial MX) do not protect data in flight and are not listed.
PLP_MODELS: tuple[tuple[str, str], ...] = (
    ("ssdsc2ba", _INTEL_DC_OLD + "; DC S3700/S3710"),
    ("ssdsc2bx", _INTEL_DC_OLD + "; DC S3610"),
    ("ssdsc2bb", _INTEL_DC_OLD + "; DC S3500/S3510/S3520"),
    ("ssdsc2kb", _INTEL_DC + "; D3-S4510"),
    ("ssdsc2kg", _INTEL_DC + "; D3-S4610"),
    ("ssdpe2kx", _INTEL_DC + "; DC P4510"),
    ("ssdpe2ke", _INTEL_DC + "; DC P4610"),
    ("ssdpf2kx", _INTEL_DC + "; D7-P5510/P5520"),
    ("ssdpe21k", _INTEL_DC + "; Optane DC P4800X"),
    ("ssdpf21q", _INTEL_DC + "; Optane DC P5800X"),
    ("mz7lh", _SAMSUNG_DC + "; PM883"),
    ("mz7l3", _SAMSUNG_DC + "; PM893"),
    ("mzqlb", _SAMSUNG_DC + "; PM983"),
    ("mzql2", _SAMSUNG_DC + "; PM9A3"),
    ("micron_5300", _MICRON_DC + "; 5300"),
    ("micron_5400", _MICRON_DC + "; 5400"),
    ("mtfddak", _MICRON_DC + "; 5100/5200/5300 (Dell OEM model strings)"),
    ("micron_7450", _MICRON_DC + "; 7450"),
    ("kcd6", _KIOXIA_DC + "; CD6"),
    ("kcm6", _KIOXIA_DC + "; CM6"),
)


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


def _model(device: BlockDevice) -> str:
    return " ".join(f"{device.vendor or ''} {device.model or ''}".lower().split())


def plp_source(model: str) -> str | None:
    """The document saying the drive family of ``model`` (``vendor model``, any case) has
    power-loss protection (:data:`PLP_MODELS`), or None."""
    words = model.lower().split()
    for prefix, source in PLP_MODELS:
        if any(word.startswith(prefix) for word in words):
            return source
    return None


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
    sources = [plp_source(_model(d)) for d in disks]
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
    models = " ".join(_model(d) for d in disks)
    if any(s in models for s in CLOUD_BLOCK_MODELS) or "msft virtual disk" in models:
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
