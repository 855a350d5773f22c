"""What a RAID controller's vendor tool says of its write cache: parsers of recorded text, no
I/O (running the tools is :mod:`fsyncbench.host._raid`).

Each parser takes one tool's text output and returns one :class:`CacheReading` per volume
(logical drive, virtual drive) it names, with the backup power of the controller that volume
is on. Words the tools print and what they mean, with the source of each:

- Broadcom/LSI ``storcli`` (Dell ``perccli``), ``/call show all`` and ``/call/vall show
  all``: the ``VD LIST`` column ``Cache`` holds the volume's current write policy, ``WB``
  (WriteBack), ``AWB`` (Always WriteBack: even without a good battery) or ``WT``
  (WriteThrough), between read-ahead (``R``/``NR``) and I/O (``C``/``D``) letters, as the
  legend under that table spells out; ``VDn Properties`` give ``OS Drive Name = /dev/sdX``
  and ``Disk Cache Policy`` (the drives' own caches: ``Enabled``, ``Disabled``, ``Disk's
  Default``); the ``Cachevault_Info`` or ``BBU_Info`` table's ``State`` (``Optimal``) and
  ``HwCfg``'s ``BBU = Absent`` tell the backup power. By default a volume falls back from
  WriteBack to WriteThrough when its battery is bad ("No Write Cache if Bad BBU"); AWB keeps
  writing back without one (Broadcom, MegaRAID SAS Software User Guide,
  https://docs.broadcom.com/docs/12353236, "Write Policy"). Layouts: recorded outputs in
  tests/fixtures/raid/.
- HPE ``ssacli`` (``hpssacli``, ``hpacucli``) ``ctrl all show config detail``: per
  controller ``Cache Status`` (``OK``; ``Temporarily Disabled``/``Permanently Disabled`` when
  it stopped caching), ``Cache Ratio`` (``x% Read / y% Write``), ``Battery/Capacitor
  Status`` (``OK``, ``Recharging``, ``Failed (Replace Batteries)``), ``Battery/Capacitor
  Count``, ``No-Battery Write Cache`` (``Enabled``: write back even without backup power),
  ``Drive Write Cache`` or ``Configured Drive Write Cache Policy``; per logical drive
  ``Caching: Enabled`` and ``Disk Name: /dev/sdX``; older hpacucli prints ``Accelerator
  Ratio`` for ``Cache Ratio``, ``Array Accelerator`` for ``Caching`` and cciss names
  (``/dev/cciss/c0d0``, the kernel's block device ``cciss!c0d0``). HPE: drive write caches "are not
  protected. If the server loses power ... unwritten data in the physical drives' write
  caches will be lost" (HP ISS Technology Update, Volume 9, Number 3, "Risks of enabling
  physical drive write cache",
  https://www.manualshelf.com/manual/hp/hp-smart-array-e200-64-controller/iss-technology-update-volume-9-number-3/page-3.html);
  a recharging backup power source suspends the battery-backed write cache until charged
  (HP Insight Management Agents User Manual, "Backup Power Status").
- Microchip/Adaptec ``arcconf GETCONFIG n AL``: ``Controller Battery Information`` (or a
  ``ZMM``/``Backup Unit`` section) ``Status`` (``Okay``, ``Optimal``, ``Not Installed``,
  ``Failed``, ``Charging``); per logical drive ``Write-cache mode : Enabled (write-back)``
  or ``Disabled (write-through)``, ``Disk Name : /dev/sdX`` where the tool prints it; per
  physical device ``Write Cache : Enabled (write-back)``. Newer SmartRAID controllers print
  the ssacli words (``Caching``, ``No-Battery Write Cache``) and are read as such. Adaptec:
  a write cache "force-enabled ... accepts write operations even if write data could be lost
  due to no battery present or a bad battery" (Adaptec RAID installation guide, "Values for
  Write Cache Status": Active, not protected).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from fsyncbench.model import PROTECTION_FAILED, PROTECTION_NOT_READY, PROTECTION_OK

WRITE_BACK = "write back"
WRITE_THROUGH = "write through"

#: Backup-power states, lower case, by what they mean (the tools' own words, module docstring).
_OK_STATES = ("optimal", "ok", "okay", "ready", "charged", "zmm optimal")
_FAILED_STATES = ("failed", "absent", "not installed", "not present", "missing", "dead", "replace")


@dataclass(frozen=True)
class CacheReading:
    """One volume as a vendor tool shows it.

    ``disk`` is the kernel name of the block device it names (``sda`` from ``/dev/sda``;
    None where the tool names none), ``write_cache`` the controller's write policy for it
    (:data:`WRITE_BACK`, :data:`WRITE_THROUGH`, None), ``protection`` the backup power of its
    controller (``PROTECTION_*`` of :mod:`fsyncbench.model`, None when the output says
    nothing of it) with the words read in ``detail``, ``drive_cache`` the physical drives'
    own write caches ("enabled", "disabled", None)."""

    disk: str | None
    write_cache: str | None
    protection: str | None
    detail: str
    drive_cache: str | None


def protection_of(state: str) -> str:
    """``PROTECTION_*`` for a backup-power state as a tool prints it (module docstring):
    ok, failed (also absent), anything else not ready (charging, learning, degraded)."""
    text = " ".join(state.lower().split())
    if any(text == s or text.startswith(s + " ") for s in _OK_STATES):
        return PROTECTION_OK
    if any(s in text for s in _FAILED_STATES):
        return PROTECTION_FAILED
    return PROTECTION_NOT_READY


def _disk_name(text: str) -> str | None:
    """``/dev/sda`` -> ``sda``; ``/dev/cciss/c0d0`` -> ``cciss!c0d0`` (the block device's
    name under /sys/block, where the kernel writes ``!`` for the ``/`` of a device path);
    None for anything not under /dev/."""
    text = text.strip()
    if not text.startswith("/dev/") or len(text) <= 5:
        return None
    return text[len("/dev/") :].replace("/", "!")


def _key_values(lines: list[str], sep: str) -> dict[str, str]:
    """``key <sep> value`` lines as a dict, keys and values stripped (first one wins)."""
    out: dict[str, str] = {}
    for line in lines:
        key, found, value = line.partition(sep)
        if found and key.strip() and key.strip() not in out:
            out[key.strip()] = value.strip()
    return out


def agreed(readings: list[CacheReading]) -> CacheReading | None:
    """The one reading all of ``readings`` agree on (cache, protection, drive caches),
    naming no disk; None when they differ or there are none."""
    if not readings:
        return None
    first = readings[0]
    key = (first.write_cache, first.protection, first.drive_cache)
    if any((r.write_cache, r.protection, r.drive_cache) != key for r in readings):
        return None
    return replace(first, disk=None)


# --------------------------------------------------------------------------- storcli

_CONTROLLER_LINE = re.compile(r"^Controller = (\d+)\s*$", re.MULTILINE)
_VD_CODE = re.compile(r"AWB|WB|WT")
_VD_HEADER = re.compile(r"^/c(\d+)/v(\d+) :\s*$")
_PROPS_HEADER = re.compile(r"^VD(\d+) Properties :\s*$")


def _controller_sections(text: str) -> dict[int, str]:
    """storcli output split by its ``Controller = N`` lines (one section per controller;
    output without one is controller 0)."""
    marks = list(_CONTROLLER_LINE.finditer(text))
    if not marks:
        return {0: text}
    out: dict[int, str] = {}
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        out.setdefault(int(m.group(1)), text[m.start() : end])
    return out


def _table(lines: list[str], title: str) -> list[dict[str, str]]:
    """Rows of the storcli table under ``<title> :`` as dicts by column header. The header is
    the first line between the dashed rules; columns are split on whitespace, and the last
    column takes the rest of the line (a name may hold spaces, an empty one is "")."""
    for i, line in enumerate(lines):
        if line.strip().rstrip(":").strip() != title:
            continue
        rules = []
        for j in range(i + 1, len(lines)):
            if lines[j].startswith("---"):
                rules.append(j)
                if len(rules) == 3:
                    break
        if len(rules) < 3:
            return []
        header = lines[rules[0] + 1].split()
        rows = []
        for row in lines[rules[1] + 1 : rules[2]]:
            cells = row.split(None, len(header) - 1)
            if cells:
                cells += [""] * (len(header) - len(cells))
                rows.append(dict(zip(header, cells, strict=True)))
        return rows
    return []


def _cache_code(code: str) -> str | None:
    """``RWBD`` -> write back, ``NRWTD`` -> write through, ``RAWBC`` -> write back."""
    m = _VD_CODE.search(code.upper())
    if m is None:
        return None
    return WRITE_THROUGH if m.group(0) == "WT" else WRITE_BACK


def _property_rows(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """A storcli table as rows by column header, also where it is printed as one
    ``Property Value`` pair per line (``storcli /cx/cv show all`` prints its
    ``Cachevault_Info`` so: ``Type CVPM02``, ``State Optimal``; recorded in Checkmk's
    tests/unit/cmk/base/plugins/agent_based/test_storcli_cache_vault.py,
    https://github.com/Checkmk/checkmk): then one row of those properties."""
    if rows and set(rows[0]) == {"Property", "Value"}:
        # the header splits a line in two at its first space: one-word property names
        # (Type, Temperature, State) come out whole
        return [{r["Property"]: r["Value"].strip() for r in rows}]
    return rows


def storcli_protection(text: str) -> dict[int, tuple[str | None, str]]:
    """Per storcli controller number: (``PROTECTION_*`` or None, the words read), from the
    ``Cachevault_Info``/``BBU_Info`` tables (``State``) or ``BBU = Absent`` of a ``/call show
    all`` output (module docstring)."""
    out: dict[int, tuple[str | None, str]] = {}
    for number, section in _controller_sections(text).items():
        lines = section.splitlines()
        found: tuple[str | None, str] = (None, "")
        for title, what in (("Cachevault_Info", "CacheVault"), ("BBU_Info", "BBU")):
            rows = _property_rows(_table(lines, title))
            if rows:
                states = [r.get("State", "") for r in rows]
                models = " ".join(r.get("Model", r.get("Type", "")) for r in rows).strip()
                worst = sorted({protection_of(s) for s in states}, key=_PROTECTION_ORDER.index)[-1]
                found = (worst, f"{what} {models} {', '.join(states)}".replace("  ", " ").strip())
                break
        if found[0] is None:
            bbu = _key_values(lines, " = ").get("BBU", "")
            if bbu.lower() == "absent":
                found = (PROTECTION_FAILED, "no battery or CacheVault (BBU = Absent)")
        out[number] = found
    return out


_PROTECTION_ORDER = [PROTECTION_OK, PROTECTION_NOT_READY, PROTECTION_FAILED]


def parse_storcli(show_all: str, vall_show_all: str = "") -> list[CacheReading]:
    """Volumes of ``storcli /call show all`` (``show_all``: the ``VD LIST`` and the backup
    power) and ``storcli /call/vall show all`` (``vall_show_all``: each volume's ``OS Drive
    Name``, ``Disk Cache Policy`` and current cache code). A volume named only in
    ``show_all`` names no disk. [] when neither output holds a volume."""
    power = storcli_protection(show_all)
    readings: list[CacheReading] = []
    for number, section in _controller_sections(vall_show_all).items():
        prot, detail = power.get(number, (None, ""))
        lines = section.splitlines()
        codes: dict[int, str | None] = {}
        props: dict[int, dict[str, str]] = {}
        for i, line in enumerate(lines):
            vd = _VD_HEADER.match(line)
            if vd:
                rows = _table(lines[i:], line.strip().rstrip(":").strip())
                if rows:
                    codes[int(vd.group(2))] = _cache_code(rows[0].get("Cache", ""))
            pm = _PROPS_HEADER.match(line)
            if pm:
                block = []
                for follow in lines[i + 2 :]:
                    if not follow.strip():
                        break
                    block.append(follow)
                props[int(pm.group(1))] = _key_values(block, " = ")
        for vd_number in sorted(set(codes) | set(props)):
            p = props.get(vd_number, {})
            policy = p.get("Disk Cache Policy", "").lower()
            readings.append(
                CacheReading(
                    _disk_name(p.get("OS Drive Name", "")),
                    codes.get(vd_number),
                    prot,
                    detail,
                    "enabled"
                    if policy == "enabled"
                    else "disabled"
                    if policy == "disabled"
                    else None,
                )
            )
    if readings:
        return readings
    for number, section in _controller_sections(show_all).items():
        prot, detail = power.get(number, (None, ""))
        for row in _table(section.splitlines(), "VD LIST"):
            readings.append(
                CacheReading(None, _cache_code(row.get("Cache", "")), prot, detail, None)
            )
    return readings


# --------------------------------------------------------------------------- ssacli

_SSA_CONTROLLER = re.compile(r"^\S.* in Slot \S+")
_SSA_LD = re.compile(r"^\s*Logical Drive: \d+\s*$")
_WRITE_RATIO = re.compile(r"(\d+)%\s*Write", re.IGNORECASE)


def _ssa_controller_reading(kv: dict[str, str]) -> tuple[str | None, str | None, str, str | None]:
    """(controller write cache, protection, detail, drive caches) of one ssacli controller's
    ``key: value`` lines (module docstring)."""
    status = kv.get("Battery/Capacitor Status", "")
    count = kv.get("Battery/Capacitor Count", "")
    source = kv.get("Cache Backup Power Source", "")
    prot: str | None = None
    detail = ""
    if status:
        prot = protection_of(status)
        detail = f"Battery/Capacitor Status: {status}" + (f" ({source})" if source else "")
    elif count == "0":
        prot, detail = PROTECTION_FAILED, "no battery or capacitor (Battery/Capacitor Count: 0)"
    elif kv.get("Cache Board Present", "").lower() == "false":
        prot, detail = PROTECTION_FAILED, "no cache module (Cache Board Present: False)"
    cache_status = kv.get("Cache Status", "")
    ratio = _WRITE_RATIO.search(kv.get("Cache Ratio") or kv.get("Accelerator Ratio") or "")
    write: str | None = None
    if kv.get("Cache Board Present", "").lower() == "false":
        write = WRITE_THROUGH
    elif cache_status:
        caching = cache_status.lower() == "ok" and (ratio is None or int(ratio.group(1)) > 0)
        write = WRITE_BACK if caching else WRITE_THROUGH
    drive = (
        kv.get("Drive Write Cache") or kv.get("Configured Drive Write Cache Policy") or ""
    ).lower()
    drive_cache = (
        "enabled"
        if drive.startswith("enable")
        else "disabled"
        if drive.startswith("disable")
        else None
    )
    return write, prot, detail, drive_cache


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _outdented(line: str, depth: int) -> bool:
    """A non-blank ``line`` indented no deeper than ``depth`` spaces."""
    return bool(line.strip()) and _indent(line) <= depth


def parse_ssacli(text: str) -> list[CacheReading]:
    """Logical drives of ``ssacli ctrl all show config detail`` (module docstring): each
    with its controller's cache, backup power and drive caches; a logical drive whose
    ``Caching`` is ``Disabled`` writes through whatever the controller's cache does."""
    readings: list[CacheReading] = []
    blocks: list[list[str]] = []
    for line in text.splitlines():
        if _SSA_CONTROLLER.match(line):
            blocks.append([])
        elif blocks:
            blocks[-1].append(line)
    for block in blocks:
        controller = [ln for ln in block if ln.startswith("   ") and not ln.startswith("    ")]
        write, prot, detail, drive_cache = _ssa_controller_reading(_key_values(controller, ":"))
        starts = [i for i, ln in enumerate(block) if _SSA_LD.match(ln)]
        for k, start in enumerate(starts):
            end = starts[k + 1] if k + 1 < len(starts) else len(block)
            # its keys are indented under it: the next line as far out (the physical drives'
            # sections, the next array) ends it
            depth = _indent(block[start])
            end = next((j for j in range(start + 1, end) if _outdented(block[j], depth)), end)
            ld = _key_values(block[start + 1 : end], ":")
            ld_write = write
            caching = ld.get("Caching") or ld.get("Array Accelerator") or ""
            if caching.lower() == "disabled":
                ld_write = WRITE_THROUGH
            readings.append(
                CacheReading(
                    _disk_name(ld.get("Disk Name", "")), ld_write, prot, detail, drive_cache
                )
            )
        if not starts:
            readings.append(CacheReading(None, write, prot, detail, drive_cache))
    return readings


# --------------------------------------------------------------------------- arcconf

_ARC_LD = re.compile(r"^\s*Logical (?:drive|Device) number \d+\s*$", re.IGNORECASE)
_ARC_POWER_SECTION = re.compile(r"battery|zmm|backup unit", re.IGNORECASE)


def _arc_protection(lines: list[str]) -> tuple[str | None, str]:
    """Backup power from the ``Status`` line of the first battery, ZMM or backup-unit section
    (a title over a dashed rule) of an ``arcconf GETCONFIG n AL`` output; (None, "")
    without one."""
    for i, line in enumerate(lines):
        title = line.strip()
        ruled = i + 1 < len(lines) and lines[i + 1].strip().startswith("---")
        if not ruled or ":" in title or not _ARC_POWER_SECTION.search(title):
            continue
        for follow in lines[i + 1 : i + 12]:
            key, found, value = follow.partition(":")
            if found and "status" in key.lower():
                return protection_of(value), f"{title}: {value.strip()}"
    return None, ""


def _arc_write_cache(text: str) -> str | None:
    low = text.lower()
    if "write-back" in low or "write back" in low:
        return WRITE_BACK
    if "write-through" in low or "write through" in low or low.startswith("disabled"):
        return WRITE_THROUGH
    return None


def parse_arcconf(text: str) -> list[CacheReading]:
    """Logical drives of ``arcconf GETCONFIG n AL`` (module docstring). SmartRAID output,
    which prints ssacli's words, is read as ssacli's; the legacy layout by its battery
    section, each logical drive's ``Write-cache mode`` and the physical devices' ``Write
    Cache`` lines."""
    lines = text.splitlines()
    kv = _key_values(lines, ":")
    if "No-Battery Write Cache" in kv or "Caching" in kv:
        write, prot, detail, drive_cache = _ssa_controller_reading(kv)

        def smart(ld: dict[str, str]) -> str | None:
            return WRITE_THROUGH if ld.get("Caching", "").lower() == "disabled" else write

        return _arc_drives(lines, smart, prot, detail, drive_cache)
    prot, detail = _arc_protection(lines)
    drive_caches = {
        _arc_write_cache(v)
        for k, v in ((ln.partition(":")[0].strip(), ln.partition(":")[2]) for ln in lines)
        if k == "Write Cache"
    }
    drive_cache = (
        "enabled"
        if WRITE_BACK in drive_caches
        else "disabled"
        if drive_caches == {WRITE_THROUGH}
        else None
    )
    return _arc_drives(
        lines,
        lambda ld: _arc_write_cache(ld.get("Write-cache mode", "")),
        prot,
        detail,
        drive_cache,
    )


def _arc_drives(
    lines: list[str],
    write_of: Callable[[dict[str, str]], str | None],
    prot: str | None,
    detail: str,
    drive_cache: str | None,
) -> list[CacheReading]:
    """One reading per ``Logical drive number N`` block of ``lines`` (its keys up to the
    next dashed rule), with ``write_of`` its write policy."""
    starts = [i for i, ln in enumerate(lines) if _ARC_LD.match(ln)]
    out = []
    for k, start in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(lines)
        block: list[str] = []
        for ln in lines[start + 1 : end]:
            if ln.startswith("----") and block:
                break
            block.append(ln)
        ld = _key_values(block, ":")
        out.append(
            CacheReading(
                _disk_name(ld.get("Disk Name", "")), write_of(ld), prot, detail, drive_cache
            )
        )
    return out
