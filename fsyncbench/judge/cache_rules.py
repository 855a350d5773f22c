"""Path rules on a protected write-back cache in front of the media (a hardware RAID
controller's battery- or flash-backed cache): what its controller reported of it
(fsyncbench.host._raid), or what the user declared, against a flush faster than the media
behind it; and where the user checks a drive's write cache, per transport and layer.

A flush faster than the medium behind a controller cache (about 0.1 ms per commit on
7,200 rpm disks, whose own floor is 2 ms) is answered by that cache. Whether the commit
survives a power cut then rests on the cache's backup power, which only the controller
(or a power pull) tells: read as ready, or declared, the flush is plausible
(``honest_flush``, inferred); read as failed or absent while the volume writes back, or with
the drives' own volatile caches enabled behind it, the cache is volatile
(``volatile_cache``, measured: read on this machine); not read, the fast flush is
``unverifiable`` and the one command that settles it is named. Latency alone never makes
such a cache honest (docs/verdicts.md, "Protected write-back caches").

The order they are weighed in: :data:`fsyncbench.judge.path_rules.PATH_RULES`."""

from __future__ import annotations

from typing import Any

from fsyncbench.judge import devices
from fsyncbench.judge.devices import (
    CONTROLLER_CACHE_DOC,
    DECLARED_PLP,
    DECLARED_PROTECTED_CACHE,
    controller_protection,
    controllers,
    declared_facts,
    device_class,
)
from fsyncbench.judge.rule_facts import (
    LATENCY_BANDS_DOC,
    Facts,
    _a,
    _media_disks,
    _us,
)
from fsyncbench.model import (
    HONEST_FLUSH,
    INFERRED,
    INFO,
    MEASURED,
    PROTECTION_FAILED,
    PROTECTION_OK,
    RISK,
    UNVERIFIABLE,
    VOLATILE_CACHE,
    WARNING,
    BlockDevice,
    Finding,
    Host,
    RaidController,
    Result,
)

#: The least time (ns) a controller's cache takes to acknowledge a flush: the 15 µs of a
#: drive that acknowledges from protected DRAM (fsyncbench.judge.devices.PLP_SSD_FLOOR_NS,
#: LATENCY_BANDS_DOC); faster than this, not even a controller cache answered.
PROTECTED_CACHE_FLOOR_NS = devices.PLP_SSD_FLOOR_NS

_WRITE_BACK = "write back"
_WRITE_THROUGH = "write through"

#: What to read in each family's settling command (the tools' words:
#: fsyncbench.host._raidcli), by kernel driver.
WHAT_TO_READ = {
    "megaraid_sas": "the volume's Cache column (WB/AWB = write back) and the Cachevault_Info "
    "or BBU_Info State (Optimal = protected)",
    "mpi3mr": "the volume's write cache policy and the CacheVault state",
    "hpsa": "Cache Status (OK), Battery/Capacitor Status (OK) and No-Battery Write Cache "
    "(Disabled)",
    "smartpqi": "Cache Status (OK), Battery/Capacitor Status (OK) and No-Battery Write Cache "
    "(Disabled)",
    "aacraid": "the logical drive's Write-cache mode and the battery (or ZMM) Status",
    "arcmsr": "Battery Status",
}

#: The settling command of each family when no tool was found (the tools on PATH are
#: named as found: RaidController.settles).
DEFAULT_SETTLES = {
    "megaraid_sas": "storcli64 /c0 show all",
    "mpi3mr": "storcli2 /c0 show all",
    "hpsa": "ssacli ctrl all show config detail",
    "smartpqi": "ssacli ctrl all show config detail",
    "aacraid": "arcconf GETCONFIG 1 AL",
    "arcmsr": "cli64 hw info",
}


def settles(c: RaidController) -> str:
    """The one command that shows ``c``'s cache policy and backup power."""
    return c.settles or DEFAULT_SETTLES.get(c.driver, "the controller's management tool")


def _volume(d: BlockDevice) -> str:
    c = d.controller
    assert c is not None
    where = ", ".join(x for x in (c.driver, c.host) if x)
    if c.from_model_string:
        return f"{d.name} is a volume of {_a(c.family)} controller (named by its model string)"
    return f"{d.name} is a volume of {_a(c.family)} controller ({where})"


def _evidence(disks: list[BlockDevice], extra: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "volumes": [d.name for d in disks],
        "controller": [d.controller.family for d in disks if d.controller],
        "driver": [d.controller.driver for d in disks if d.controller],
        "write_cache": [d.controller.write_cache for d in disks if d.controller],
        "protection": [d.controller.protection for d in disks if d.controller],
        "protection_detail": [d.controller.protection_detail for d in disks if d.controller],
        "drive_caches": [d.controller.drive_cache for d in disks if d.controller],
        "read_by": [d.controller.read_by for d in disks if d.controller],
        "not_read": [d.controller.note for d in disks if d.controller],
        "settles": sorted({settles(d.controller) for d in disks if d.controller}),
    }
    out.update(extra)
    return out


def rule_controller_cache(f: Facts, r: Result | None) -> tuple[str, Finding] | None:
    """The RAID controller cache in front of every disk holding the bytes (module
    docstring, CONTROLLER_CACHE_DOC):

    - read as writing back with its backup power failed or absent -> ``volatile_cache``
      (``controller-cache-unprotected``), or writing back onto drives whose own caches are
      enabled -> ``volatile_cache`` (``controller-drive-caches-enabled``): measured (read
      from the controller on this machine), whatever the timing;
    - a flush at least PROTECTED_CACHE_FLOOR_NS but faster than the floor of the medium
      behind it (fsyncbench.judge.devices, the controller ignored): read as protected ->
      ``honest_flush`` (``controller-cache-protected``), declared (``--assume
      protected-cache`` or ``plp``) -> ``honest_flush`` (``controller-cache-declared``),
      both inferred; not read -> ``unverifiable`` (``controller-cache-unverified``,
      measured where the controller was found by its driver in /sys, inferred where only
      the volume's model string names it: :func:`fsyncbench.host._raid.model_controller`),
      naming the command that settles it.

    A volume read as writing through leaves the fast flush to the latency floor (its
    controller's cache holds no writes); a flush as slow as the medium needs no cache."""
    if r is None:
        return None
    disks = _media_disks(f.host)
    found = controllers(disks)
    if not found:
        return None
    first = disks[0]
    lost = [d for d in disks if d.controller and _is_lost(d.controller)]
    if lost:
        c = lost[0].controller
        assert c is not None
        return VOLATILE_CACHE, Finding(
            "controller-cache-unprotected",
            RISK,
            r.name,
            f"{_volume(lost[0])}: it writes back ({c.write_cache}, read with {c.read_by}) "
            f"while its cache's backup power is failed or absent ({c.protection_detail}): "
            f"{r.primitive} is acknowledged from a cache a power cut empties.",
            f"Replace the battery or CacheVault, or set the volume to write through ({settles(c)} "
            "shows both); until then a power cut loses acknowledged commits.",
            _evidence(disks, {"p50_ns": r.summary.p50_ns}),
            CONTROLLER_CACHE_DOC,
            MEASURED,
        )
    drives = [d for d in disks if d.controller and _drives_volatile(d.controller)]
    if drives:
        c = drives[0].controller
        assert c is not None
        return VOLATILE_CACHE, Finding(
            "controller-drive-caches-enabled",
            RISK,
            r.name,
            f"{_volume(drives[0])}: its cache writes back ({c.protection_detail or 'backup power not read'}) "
            f"onto drives whose own write caches are enabled (read with {c.read_by}): what it "
            "hands them sits in caches no battery protects.",
            f"Disable the drives' write caches behind the controller ({settles(c)} shows the "
            "policy), or accept losing what they hold at a power cut.",
            _evidence(disks, {"p50_ns": r.summary.p50_ns}),
            CONTROLLER_CACHE_DOC,
            MEASURED,
        )
    p50 = r.summary.p50_ns
    medium = device_class(f.host, r.primitive, cache_in_front=False)
    if p50 >= medium.floor_ns or p50 < PROTECTED_CACHE_FLOOR_NS:
        return None
    if any(c.write_cache == _WRITE_THROUGH for c in found):
        return None  # its cache holds no writes: the latency floor speaks
    timing = (
        f"{r.primitive} p50 {_us(p50)} is faster than the {_us(medium.floor_ns)} a flush "
        f"takes on {_a(medium.name)}, so the controller's write-back cache answered it"
    )
    extra = {
        "p50_ns": p50,
        "medium_class": medium.name,
        "medium_floor_ns": medium.floor_ns,
        "protected_cache_floor_ns": PROTECTED_CACHE_FLOOR_NS,
    }
    source = CONTROLLER_CACHE_DOC + "; " + LATENCY_BANDS_DOC
    protected = controller_protection(disks)
    if protected:
        return HONEST_FLUSH, Finding(
            "controller-cache-protected",
            INFO,
            r.name,
            f"{_volume(first)}: {timing}, and {protected}.",
            "A power pull (fsyncbench powercut) is the only proof beyond this; keep the "
            "controller's backup power monitored.",
            _evidence(disks, extra),
            source,
            INFERRED,
        )
    declared = declared_facts(f.host) & {DECLARED_PROTECTED_CACHE, DECLARED_PLP}
    if declared:
        return HONEST_FLUSH, Finding(
            "controller-cache-declared",
            INFO,
            r.name,
            f"{_volume(first)}: {timing}; the user declared it protected "
            f"(--assume {', '.join(sorted(declared))}), which is not verified here.",
            f"Verify it once with {settles(found[0])}, or with a power pull (fsyncbench powercut).",
            _evidence(disks, {**extra, "declared": sorted(declared)}),
            source,
            INFERRED,
        )
    c = found[0]
    why = c.note or "its backup power was not read"
    if c.from_model_string and not c.read_by:
        why = "only the volume's model string names the controller"
    if c.protection is not None and c.protection_detail:
        state = {PROTECTION_OK: "reads ready", PROTECTION_FAILED: "has failed"}
        why = f"its backup power {state.get(c.protection, 'is not ready')} ({c.protection_detail})"
        if c.write_cache is None:
            why += ", but the volume's write policy was not read"
    return UNVERIFIABLE, Finding(
        "controller-cache-unverified",
        WARNING,
        r.name,
        f"{_volume(first)}: {timing}. A battery- or flash-backed cache keeps that commit "
        f"through a power cut, an unprotected one loses it, and which this is was not read "
        f"({why}).",
        f"Run `{settles(c)}` as root and read "
        f"{WHAT_TO_READ.get(c.driver, 'the cache policy and battery state')}; if the cache is "
        "protected, say so with --assume protected-cache (or install the tool so fsyncbench "
        "reads it). A power pull (fsyncbench powercut) settles it too.",
        _evidence(disks, extra),
        source,
        # the controller found by its driver in /sys is measured; named by a model string
        # alone (a stored report, macOS, Windows) it is identity: inferred
        INFERRED if any(x.from_model_string for x in found) else MEASURED,
    )


def _is_lost(c: RaidController) -> bool:
    return c.has_cache and c.write_cache == _WRITE_BACK and c.protection == PROTECTION_FAILED


def _drives_volatile(c: RaidController) -> bool:
    return c.has_cache and c.write_cache == _WRITE_BACK and c.drive_cache == "enabled"


# --------------------------------------------------------------------------- advice


def _nvme_controller(name: str) -> str:
    """``nvme0n1`` -> ``nvme0`` (the controller of a namespace), else ``name``."""
    head, sep, _ = name.rpartition("n")
    return head if sep and head.startswith("nvme") and head[4:].isdigit() else name


def write_cache_check(host: Host) -> str:
    """Where the user reads the write cache of each disk holding the bytes, per transport
    and layer: the controller's tool for a RAID volume (:func:`settles`); ``nvme id-ctrl``
    (the VWC field: a volatile write cache is present) and ``nvme get-feature -f 6``
    (NVMe Base Specification, Feature Identifier 06h, Volatile Write Cache: enabled or not)
    for NVMe; ``hdparm -W`` or ``smartctl -g wcache`` for SATA; ``sdparm --get=WCE`` (the WCE bit
    of the SCSI Caching mode page) or ``smartctl -g wcache`` for SAS/SCSI; Windows' device
    policy. "" when nothing is known of the disks (macOS: its own floors speak)."""
    if host.os_name == "Windows":
        return "Device Manager, the disk's Policies tab: 'Enable write caching on the device'"
    if host.os_name == "Darwin":
        return ""
    checks = []
    for d in _media_disks(host):
        c = d.controller
        transport = d.transport or ""
        if c is not None and c.has_cache:
            checks.append(f"{settles(c)} (the RAID controller behind {d.name})")
        elif transport == "nvme":
            ctrl = _nvme_controller(d.name)
            checks.append(
                f"nvme id-ctrl /dev/{ctrl} -H (vwc), nvme get-feature /dev/{ctrl} -f 6 -H"
            )
        elif transport == "ata" or (d.vendor or "").strip().upper() == "ATA":
            checks.append(f"hdparm -W /dev/{d.name} or smartctl -g wcache /dev/{d.name}")
        elif transport == "scsi":
            checks.append(f"sdparm --get=WCE /dev/{d.name} or smartctl -g wcache /dev/{d.name}")
        else:
            checks.append(f"smartctl -g wcache /dev/{d.name}")
    return "; ".join(dict.fromkeys(checks))
