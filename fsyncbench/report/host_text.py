"""The host record in words: (field, value) lines of the machine, its storage stack, disks
and controllers, and whether it is virtualized (:func:`host_lines`, also ``fsyncbench
host``'s and compare's), and the table a description shows them in (:func:`host_table`,
also crash's and powercut's).
"""

from __future__ import annotations

from fsyncbench.judge import stack
from fsyncbench.model import BlockDevice, Host, Report
from fsyncbench.report.document import Cell, Table

__all__ = ["host_lines", "host_table"]


def _fmt_bytes(n: int | None) -> str:
    return "-" if n is None else f"{n / 2**30:.1f} GiB"


def host_lines(host: Host) -> list[tuple[str, str]]:
    """(field, value) pairs summarising the host record."""
    t = host.target
    m = t.mount
    v = host.virtualization
    virt = "yes" if v.virtualized else ("no" if v.virtualized is False else "unknown")
    signs = [
        s
        for s in (
            "cpuinfo hypervisor flag" if v.hypervisor_flag else "",
            f"DMI {v.dmi_vendor} {v.dmi_product or ''}".strip() if v.dmi_vendor else "",
            f"systemd-detect-virt {v.detect_virt}" if v.detect_virt else "",
            f"container {v.container}"
            + (f" ({v.container_evidence})" if v.container_evidence else "")
            if v.container
            else "",
            f"kernel {v.kernel_hint}" if v.kernel_hint else "",
            "kern.hv_vmm_present=1" if v.mac_vmm_present else "",
            f"emulated disk {v.virtual_disk_hint} (inferred from the model string)"
            if v.virtual_disk_hint
            else "",
        )
        if s
    ]
    lines = [
        ("hostname", host.hostname),
        ("OS", f"{host.os_name} {host.os_release} ({host.machine})"),
        (
            "CPU",
            f"{host.cpu_brand or '?'}, {host.cpu_count_logical or '?'} logical / "
            f"{host.cpu_count_physical or '?'} physical cores",
        ),
        ("memory", _fmt_bytes(host.memory_total_bytes)),
        ("Python", host.python_version),
        ("SQLite", f"{host.sqlite_version} ({host.sqlite_library or 'library path unknown'})"),
        ("target", t.path),
        ("filesystem", f"{m.fs_type} on {m.mount_point} from {m.source}" if m else "unknown"),
        *(
            [("firmlink", f"{t.path} is on {m.mount_point} via firmlink {t.firmlink}")]
            if m and t.firmlink
            else []
        ),
        (
            "mount options",
            f"{','.join(m.options)}; superblock {','.join(m.super_options) or '-'}"
            if m
            else "unknown",
        ),
        ("storage stack", stack.chain_text(t)),
        ("device chain", " -> ".join(t.chain) if t.chain else "no block device"),
    ]
    for layer in t.layers:
        lines.append(
            (
                "layer " + ". " * layer.depth + stack.label(layer),
                f"{layer.kind}, flush {layer.flush}" + (f"; {layer.note}" if layer.note else ""),
            )
        )
    if t.declared:
        lines.append(("user-declared", ", ".join(t.declared) + " (user-declared, not verified)"))
    for d in t.disks:
        lines.append(
            (
                f"disk {d.name}",
                ", ".join(
                    [
                        f"model {d.model or '?'}" + (f" (vendor {d.vendor})" if d.vendor else ""),
                        f"transport {d.transport or '?'}",
                        f"rotational {_yn(d.rotational)}",
                        f"write_cache {d.write_cache or '?'}",
                        f"FUA {_yn(d.fua)}",
                        f"flush counters {'yes' if d.has_flush_counters else 'no'}",
                        *_windows_disk_facts(d),
                        *_controller_facts(d),
                    ]
                ),
            )
        )
    if t.darwin:
        lines.append(("diskutil", ", ".join(f"{k} {v}" for k, v in sorted(t.darwin.items()))))
    lines.append(("virtualized", virt + (f" ({'; '.join(signs)})" if signs else "")))
    if v.container_evidence and not v.container:
        lines.append(("container", f"none taken ({v.container_evidence})"))
    if host.ld_preload:
        lines.append(("LD_PRELOAD", host.ld_preload))
    return lines


def _windows_disk_facts(d: BlockDevice) -> list[str]:
    """What only Windows reports of a disk, where it did (nothing for other systems)."""
    out = []
    if d.flush_supported is not None:
        out.append(f"accepts a cache flush {_yn(d.flush_supported)}")
    if d.power_protection:
        out.append(f"write cache power-protected per {'+'.join(d.power_protection)}")
    if d.removable is not None:
        out.append(f"removable {_yn(d.removable)}")
    return out


def _controller_facts(d: BlockDevice) -> list[str]:
    """The RAID controller a disk is a volume of, what its tool read and what it did not
    (nothing for a disk without one)."""
    c = d.controller
    if c is None:
        return []
    where = ", ".join(x for x in (c.driver, c.host) if x)
    out = [f"volume of {c.family} ({where})"]
    if not c.has_cache:
        return out
    read = [
        f"controller cache {c.write_cache}" if c.write_cache else "",
        f"backup power {c.protection}"
        + (f" ({c.protection_detail})" if c.protection_detail else "")
        if c.protection
        else "",
        f"drive caches {c.drive_cache}" if c.drive_cache else "",
    ]
    out += [x for x in read if x]
    if c.read_by:
        out.append(f"read with {c.read_by}")
    if c.note:
        out.append(c.note)
    if c.settles and not c.read_by:
        out.append(f"settle with {c.settles}")
    return out


def _yn(value: bool | None) -> str:
    return "?" if value is None else ("yes" if value else "no")


def host_table(report: Report) -> Table:
    """The host record as a field/value table."""
    return Table(("field", "value"), tuple((Cell(k), Cell(v)) for k, v in host_lines(report.host)))
