"""Linux: the hardware RAID controller (or host bus adapter) a disk is a volume of, from
``/sys``, and its write cache as its vendor's tool reports it (the parsers are
:mod:`fsyncbench.host._raidcli`).

From sysfs (Documentation/ABI/testing/sysfs-class-scsi_host): the disk's resolved directory
runs through its SCSI host (``.../host0/target0:2:0/0:2:0:0/block/sda``), and
``/sys/class/scsi_host/hostN/proc_name`` names the host's driver. The drivers known here,
each the kernel's driver for one product line (drivers/scsi/ in the kernel tree):
``megaraid_sas`` (Broadcom/LSI MegaRAID SAS, which Dell PERC H3xx-H8xx, Intel RAID and
Cisco 12G modular controllers are), ``mpi3mr`` (Broadcom MegaRAID 9600, Dell PERC H965),
``hpsa`` (HP Smart Array P2xx-P8xx), ``smartpqi`` (HPE Smart Array Gen10 and later,
Microchip SmartRAID/SmartHBA), ``aacraid`` (Adaptec/Microchip Series 6-8, IBM ServeRAID),
``arcmsr`` (Areca ARC-1xxx) and ``mpt3sas`` (Broadcom SAS HBAs: integrated RAID without a
write cache of its own). Where no driver name is found, the volume's SCSI vendor/model
names the family: ``ARC-...`` (Areca), ``MegaRAID``/``MR9...`` (Broadcom), ``PERC`` (Dell),
``LOGICAL VOLUME``/``Smart Array`` from HP (HPE), ``ServeRAID``/``Adaptec``.

The vendor tool is run only on the live machine, only when found on PATH, without a shell,
with a timeout of :data:`TOOL_TIMEOUT_S` each; it needs root to see a controller. What it
prints is matched to the disk by the ``/dev/sdX`` name it gives each volume; where it names
none, the answer all volumes agree on is used. Anything not read is said in the
controller's ``note``.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
from collections.abc import Callable
from typing import NamedTuple

from fsyncbench.model import BlockDevice, RaidController, StorageLayer

from . import _raidcli, knowledge
from ._common import read_text, run_command, under_root

#: Seconds one vendor tool may take (storcli's "show all" prints "it may take a while").
TOOL_TIMEOUT_S = 15.0

Runner = Callable[[list[str]], "tuple[int, bytes] | None"]


class Family(NamedTuple):
    """A controller family: what it is, the tools that read it (first found is run), the
    commands run (``{tool}`` replaced), the one command a user runs to settle its cache
    and backup power, and whether it has a write cache of its own."""

    name: str
    tools: tuple[str, ...]
    commands: tuple[str, ...]
    settles: str
    has_cache: bool = True


_STORCLI = ("storcli64", "storcli", "perccli64", "perccli")
_SSACLI = ("ssacli", "hpssacli", "hpacucli")

#: Kernel driver (``proc_name``) -> family (module docstring).
FAMILIES: dict[str, Family] = {
    "megaraid_sas": Family(
        "Broadcom/LSI MegaRAID (also Dell PERC, Intel RAID)",
        _STORCLI,
        ("{tool} /call show all", "{tool} /call/vall show all"),
        "{tool} /c0 show all",
    ),
    "mpi3mr": Family(
        "Broadcom MegaRAID 9600 / Dell PERC 12",
        ("storcli2", "perccli2"),
        (),
        "{tool} /c0 show all",
    ),
    "hpsa": Family(
        "HP Smart Array",
        _SSACLI,
        ("{tool} ctrl all show config detail",),
        "{tool} ctrl all show config detail",
    ),
    "smartpqi": Family(
        "HPE Smart Array / Microchip SmartRAID",
        (*_SSACLI, "arcconf"),
        ("{tool} ctrl all show config detail",),
        "{tool} ctrl all show config detail",
    ),
    "aacraid": Family(
        "Adaptec/Microchip RAID (also IBM ServeRAID)",
        ("arcconf",),
        ("{tool} GETCONFIG 1 AL",),
        "{tool} GETCONFIG 1 AL",
    ),
    "arcmsr": Family("Areca ARC", ("cli64", "cli32"), (), "{tool} hw info"),
    "mpt3sas": Family(
        "Broadcom/LSI SAS host bus adapter (no write cache of its own)",
        (),
        (),
        "",
        has_cache=False,
    ),
}

_HOST = re.compile(r"^host\d+$")


def scsi_host(resolved_dir: str) -> str | None:
    """The ``hostN`` component of a disk's resolved sysfs directory, or None."""
    return next((part for part in resolved_dir.split(os.sep) if _HOST.match(part)), None)


def sysfs_controller(
    root: str, resolved_dir: str, vendor: str | None, model: str | None
) -> RaidController | None:
    """The controller a whole disk is a volume of, from its SCSI host's driver (module
    docstring), else from its vendor/model (:func:`model_controller`); None for anything
    else (a disk on AHCI, NVMe, virtio...). The vendor tool is not run here
    (:func:`with_tool_readings`)."""
    host = scsi_host(resolved_dir)
    driver = None
    if host is not None:
        driver = read_text(under_root(root, f"/sys/class/scsi_host/{host}/proc_name"))
    if driver not in FAMILIES:
        return model_controller(vendor, model, host)
    return _controller(driver, vendor, host)


def model_controller(
    vendor: str | None, model: str | None, host: str | None = None
) -> RaidController | None:
    """The controller a disk is a volume of, by its vendor/model alone (the ``raid`` rows
    of :mod:`fsyncbench.host.knowledge`: ``ARC-1882-VOL#000``, ``PERC H730P Mini``, ``HP
    LOGICAL VOLUME``), marked ``from_model_string``; None when no row names one. Used where
    no driver was read: a missing ``proc_name``, macOS and Windows, a stored report that
    recorded no controller."""
    row = knowledge.known(vendor, model, knowledge.RAID)
    driver = None if row is None else row.fact(knowledge.RAID)
    if row is None or driver not in FAMILIES:
        return None
    return dataclasses.replace(
        _controller(driver, vendor, host),
        from_model_string=True,
        note=f"driver inferred from the volume's vendor/model ({knowledge.identity(vendor, model)}; "
        f"{row.name})",
    )


def _controller(driver: str, vendor: str | None, host: str | None) -> RaidController:
    family = FAMILIES[driver]
    tool = family.tools[0] if family.tools else None
    if driver == "megaraid_sas" and (vendor or "").strip().upper() == "DELL":
        tool = "perccli64"
    return RaidController(
        driver=driver,
        family=family.name,
        host=host,
        tool=tool,
        settles=family.settles.format(tool=tool) if tool else "",
        has_cache=family.has_cache,
    )


class ToolAccess(NamedTuple):
    """How vendor tools are found (``which``: name -> path or None) and run (``run``:
    argv -> (exit code, stdout) or None); tests pass recorded ones."""

    which: Callable[[str], str | None]
    run: Runner


def live_access() -> ToolAccess:
    """PATH lookup and :func:`fsyncbench.host._common.run_command` with TOOL_TIMEOUT_S."""
    return ToolAccess(shutil.which, lambda argv: run_command(argv, TOOL_TIMEOUT_S))


_PARSERS: dict[str, Callable[[list[str]], list[_raidcli.CacheReading]]] = {
    "storcli": lambda outs: _raidcli.parse_storcli(outs[0], outs[1] if len(outs) > 1 else ""),
    "perccli": lambda outs: _raidcli.parse_storcli(outs[0], outs[1] if len(outs) > 1 else ""),
    "ssacli": lambda outs: _raidcli.parse_ssacli(outs[0]),
    "hpssacli": lambda outs: _raidcli.parse_ssacli(outs[0]),
    "hpacucli": lambda outs: _raidcli.parse_ssacli(outs[0]),
    "arcconf": lambda outs: _raidcli.parse_arcconf(outs[0]),
}


def _parser(tool: str) -> Callable[[list[str]], list[_raidcli.CacheReading]] | None:
    name = tool.rstrip("0123456789")
    return _PARSERS.get(name)


def _commands(family: Family, tool: str) -> list[list[str]]:
    if tool == "arcconf" and family is FAMILIES["smartpqi"]:
        return [[tool, "GETCONFIG", "1", "AL"]]
    return [c.format(tool=tool).split() for c in family.commands]


def _read(
    controller: RaidController, access: ToolAccess, cache: dict[tuple[str, ...], str | None]
) -> tuple[RaidController, list[_raidcli.CacheReading]]:
    """Run the first of the family's tools found (each command once per walk: ``cache``)
    and parse it; the controller with ``tool``, ``settles``, ``read_by`` or ``note`` set."""
    family = FAMILIES[controller.driver]
    found = next((t for t in family.tools if access.which(t)), None)
    if found is None:
        names = ", ".join(family.tools) or "no tool"
        return dataclasses.replace(
            controller, note=_join(controller.note, f"not read: none of {names} is on PATH")
        ), []
    settles = family.settles.format(tool=found) if family.settles else ""
    controller = dataclasses.replace(controller, tool=found, settles=settles)
    parse = _parser(found)
    commands = _commands(family, found)
    if parse is None or not commands:
        return dataclasses.replace(
            controller,
            note=_join(controller.note, f"not read: {found}'s output is not parsed here"),
        ), []
    outs = []
    for argv in commands:
        key = tuple(argv)
        if key not in cache:
            result = access.run(argv)
            ok = result is not None and result[0] == 0
            cache[key] = result[1].decode("utf-8", "replace") if ok and result else None
        text = cache[key]
        if text is None:
            return dataclasses.replace(
                controller,
                note=_join(
                    controller.note,
                    f"not read: {' '.join(argv)} failed or took over {TOOL_TIMEOUT_S:g} s "
                    "(it needs root)",
                ),
            ), []
        outs.append(text)
    controller = dataclasses.replace(controller, read_by="; ".join(" ".join(c) for c in commands))
    readings = parse(outs)
    if not readings:
        controller = dataclasses.replace(
            controller, note=_join(controller.note, f"{found} showed no volume")
        )
    return controller, readings


def _join(a: str, b: str) -> str:
    return f"{a}; {b}" if a else b


def _apply(
    controller: RaidController, name: str, readings: list[_raidcli.CacheReading]
) -> RaidController:
    """``controller`` with the reading of volume ``name`` (or the one all agree on)."""
    reading = next((r for r in readings if r.disk == name), None)
    if reading is None and readings:
        reading = _raidcli.agreed(readings)
        if reading is None:
            return dataclasses.replace(
                controller,
                note=_join(
                    controller.note,
                    f"the tool names no volume /dev/{name} and its volumes differ",
                ),
            )
    if reading is None:
        return controller
    return dataclasses.replace(
        controller,
        write_cache=reading.write_cache,
        protection=reading.protection,
        protection_detail=reading.detail,
        drive_cache=reading.drive_cache,
    )


def with_tool_readings(
    layers: tuple[StorageLayer, ...], access: ToolAccess
) -> tuple[StorageLayer, ...]:
    """``layers`` with each controller that has a write cache read by its vendor's tool
    (module docstring); layers without a controller unchanged. Never raises."""
    cache: dict[tuple[str, ...], str | None] = {}
    out = []
    for layer in layers:
        device = layer.device
        controller = None if device is None else device.controller
        if device is None or controller is None or not controller.has_cache:
            out.append(layer)
            continue
        try:
            read, readings = _read(controller, access, cache)
            read = _apply(read, device.name, readings)
        except Exception as exc:  # a tool's output must never stop the host record
            read = dataclasses.replace(controller, note=_join(controller.note, f"not read: {exc}"))
        new_device: BlockDevice = dataclasses.replace(device, controller=read)
        out.append(dataclasses.replace(layer, device=new_device))
    return tuple(out)
