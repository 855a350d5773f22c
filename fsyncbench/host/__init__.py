"""The host record: facts about the machine and the storage path under a target directory.

Public API:

- :func:`collect_host` — one :class:`fsyncbench.model.Host` for a target directory.
- :func:`read_flush_counters` — per-disk Linux flush counters, cheap enough to read right
  before and after every timed workload.
- :func:`flush_deltas` — the :class:`fsyncbench.model.FlushDelta` between two readings.
- :func:`counter_devices` — the block devices of a target's stack whose counters to read.
- :func:`activity_snapshot` — what the machine is doing besides fsyncbench (CPU per state,
  load, pressure stall information, every process's CPU and writes), read around a round.

Platform code lives in ``_linux`` (procfs/sysfs, every reader takes a ``root`` so tests
use a fake tree), ``_darwin`` (diskutil, sysctl, dyld), ``_windows`` (DeviceIoControl; the
buffers packed and parsed in ``_winioctl``) and ``_other`` (psutil only).
"""

from __future__ import annotations

import sys

from fsyncbench.model import Host, StorageTarget

from . import known
from ._activity import ActivitySnapshot, ProcessSample, run_queue_wait_ns
from ._activity import snapshot as activity_snapshot
from ._common import PlatformFacts, base_facts
from ._counters import flush_deltas, read_flush_counters

__all__ = [
    "collect_host",
    "read_flush_counters",
    "flush_deltas",
    "counter_devices",
    "activity_snapshot",
    "ActivitySnapshot",
    "ProcessSample",
    "run_queue_wait_ns",
]


def counter_devices(target: StorageTarget) -> list[str]:
    """Kernel names of the block devices of ``target``'s stack that have flush counters,
    top first: the first block layer (what the filesystem sent) down to the disks holding
    the bytes (what reached them). Partitions are left out (their disk counts). Without a
    recorded stack: the recorded disks."""
    names = [
        layer.name
        for layer in target.layers
        if layer.device is not None
        and layer.kind != "partition"
        and layer.device.has_flush_counters
    ]
    if not target.layers:
        names = [d.name for d in target.disks if d.has_flush_counters]
    return list(dict.fromkeys(names))


def _platform_facts(target: str, platform: str) -> PlatformFacts:
    if platform.startswith("linux"):
        from . import _linux

        return _linux.collect(target)
    if platform == "darwin":
        from . import _darwin

        return _darwin.collect(target)
    if platform == "win32":
        from . import _windows

        return _windows.collect(target)
    from . import _other

    return _other.collect(target)


def collect_host(target: str) -> Host:
    """Facts about this machine and the storage path under directory ``target``.

    ``target`` is resolved with :func:`os.path.realpath`; it need not exist yet (the
    mount holding its path is used). Dispatches on :data:`sys.platform`: Linux reads
    ``/proc/self/mountinfo``, ``/sys/block`` and virtualization signs (see
    :mod:`fsyncbench.host._sysblock`, :mod:`fsyncbench.host._virt`); macOS runs
    ``diskutil info -plist`` and ``sysctl -n kern.hv_vmm_present``
    (:mod:`fsyncbench.host._darwin`); Windows asks the target's volume for its disks and each
    disk for its bus, model, seek penalty and write cache (IOCTL_STORAGE_QUERY_PROPERTY,
    :mod:`fsyncbench.host._windows`); anything else records what :mod:`platform` and
    psutil give and leaves the rest None. Every platform's record is then completed with the
    device knowledge table (:func:`fsyncbench.host.known.apply`: emulated disks, RAID volumes
    named by their model string).

    Cost: about a second on first call (py-cpuinfo, cached per process) plus, on Linux,
    up to two ``systemd-detect-virt`` runs (2 s timeout each). Does not raise for missing
    files, tools or permissions: unknown facts are None or empty.
    """
    facts = _platform_facts(target, sys.platform)
    host = Host(
        **base_facts(),
        sqlite_library=facts.sqlite_library,
        virtualization=facts.virtualization,
        target=facts.target,
    )
    return known.apply(host)
