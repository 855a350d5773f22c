"""A host record completed with the device knowledge table (:mod:`fsyncbench.host.knowledge`):
the one step both the live reader (:func:`fsyncbench.host.collect_host`, every platform)
and the judge re-judging a stored report (:func:`fsyncbench.judge.engine.judge`) take, so a
verdict never depends on which version of fsyncbench read the facts.

What it adds, only where the record lacks it (it never overrides what was read):

- a disk whose model names an emulated disk (``QEMU NVMe Ctrl``) recorded as a bare disk
  becomes a virtual disk (its flush goes to the host: :func:`fsyncbench.host.layers.disk_layer`);
- a guest whose hypervisor was not seen (no flag, no DMI) gets the disk as its tell
  (``Virtualization.virtual_disk_hint``), as the live Linux and Windows readers record it;
- a volume whose model names a hardware RAID controller (``ARC-1882-VOL#000``, ``PERC
  H730P Mini``, ``HP LOGICAL VOLUME``) but has no controller recorded gets one, named by
  the model string, its cache and backup power not read
  (:func:`fsyncbench.host._raid.model_controller`).

Pure functions of the record; idempotent (applying twice changes nothing more).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from fsyncbench.model import (
    FLUSH_TO_HOST,
    BlockDevice,
    Host,
    StorageLayer,
    StorageTarget,
    Virtualization,
)

from . import _raid, layers


def device(d: BlockDevice) -> BlockDevice:
    """``d`` with the RAID controller its model names, where none was recorded."""
    if d.controller is not None:
        return d
    controller = _raid.model_controller(d.vendor, d.model)
    return d if controller is None else dataclasses.replace(d, controller=controller)


def layer(recorded: StorageLayer) -> StorageLayer:
    """``recorded`` with its device completed (:func:`device`); a bare ``disk`` whose model
    names an emulated disk becomes a ``virtual-disk`` that hands the flush to the host."""
    if recorded.device is None:
        return recorded
    completed = device(recorded.device)
    if recorded.kind == "disk" and layers.emulated_by(completed):
        return dataclasses.replace(
            recorded, kind="virtual-disk", flush=FLUSH_TO_HOST, volatile=None, device=completed
        )
    if completed is recorded.device:
        return recorded
    return dataclasses.replace(recorded, device=completed)


def target(recorded: StorageTarget) -> StorageTarget:
    """``recorded`` with every disk and layer completed (:func:`device`, :func:`layer`)."""
    disks = tuple(device(d) for d in recorded.disks)
    stack = tuple(layer(x) for x in recorded.layers)
    if disks == recorded.disks and stack == recorded.layers:
        return recorded
    return dataclasses.replace(recorded, disks=disks, layers=stack)


def virtualization(virt: Virtualization, disks: Sequence[BlockDevice]) -> Virtualization:
    """``virt`` with ``virtual_disk_hint`` set from ``disks`` (the disks under the target)
    where no sign of a hypervisor was seen and no hint was recorded: a guest whose CPUID
    flag and DMI strings are hidden still has a virtio bus or an emulator's model string on
    its disk (:func:`fsyncbench.host.layers.virtual_disk_hint`)."""
    if virt.virtualized is True or virt.virtual_disk_hint:
        return virt
    hint = layers.virtual_disk_hint(disks)
    return dataclasses.replace(virt, virtual_disk_hint=hint) if hint else virt


def apply(host: Host) -> Host:
    """``host`` completed with the device knowledge table (module docstring)."""
    completed = target(host.target)
    virt = virtualization(host.virtualization, completed.disks)
    if completed is host.target and virt is host.virtualization:
        return host
    return dataclasses.replace(host, target=completed, virtualization=virt)
