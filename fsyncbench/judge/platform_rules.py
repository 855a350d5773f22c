"""Path rules on what the storage path is made of (signals 1 and 5-7 of
:mod:`fsyncbench.judge.engine`): the filesystem and the stack under it (tmpfs, an overlay
mounted volatile, ZFS sync=disabled, RAM at the bottom, nobarrier mounts, layers that
forward the flush, a stack that could not be followed; read by :mod:`fsyncbench.judge.stack`),
a sync-disabling library named in the preload, and the platform (macOS fsync semantics,
VirtualBox's default, identified cloud block storage, a virtual machine).

The order they are weighed in: :data:`fsyncbench.judge.path_rules.PATH_RULES`."""

from __future__ import annotations

import dataclasses
from typing import Any

from fsyncbench.host import knowledge, layers
from fsyncbench.host.layers import NO_BARRIER_OPTIONS
from fsyncbench.judge import stack
from fsyncbench.judge.devices import NETWORK_BLOCK_FLOOR_NS, cloud_block
from fsyncbench.judge.rule_facts import (
    APPLE_BARRIER_DOC,
    APPLE_FSYNC_DOC,
    BARRIER_DOC,
    CLOUD_BLOCK_DOC,
    EATMYDATA_DOC,
    FIRECRACKER_DOC,
    NO_FLUSH_FILESYSTEMS,
    OVERLAY_VOLATILE_DOC,
    RAM_STACK_DOC,
    REACHED_FLUSH_RATIO,
    VIRTUALBOX_DOC,
    ZFS_SYNC_DOC,
    Facts,
    _all_ram,
    _base_primitive,
    _chain,
    _comparison,
    _counter_ratio,
    _flush_ms_per_flush,
    _flush_results,
    _media_disks,
    _power_protected_media,
    _preload_names,
    _primitive,
    _reached_ratio,
    _subject,
    _sync_disabling,
    flushes_per_sync_words,
)
from fsyncbench.model import (
    HONEST_FLUSH,
    INFERRED,
    INFO,
    MEASURED,
    NO_FLUSH,
    RISK,
    UNVERIFIABLE,
    VOLATILE_CACHE,
    WARNING,
    Finding,
    Host,
    Result,
)


def rule_no_flush_filesystem(f: Facts, r: Result | None) -> tuple[str, Finding] | None:
    """tmpfs/ramfs hold data in RAM (tmpfs.rst); overlay mounted ``volatile`` (any spelling,
    :func:`fsyncbench.host.layers.overlay_volatile`) omits every sync to the upper layer
    (OVERLAY_VOLATILE_DOC); ZFS ``sync=disabled`` disregards sync requests (ZFS_SYNC_DOC).
    Filesystem facts, measured: nothing below can contradict them."""
    mount = f.host.target.mount
    prim = _primitive(f, r)
    if mount is None:
        return None
    if mount.fs_type in NO_FLUSH_FILESYSTEMS:
        return NO_FLUSH, Finding(
            "no-flush-filesystem",
            RISK,
            _subject(r),
            f"The target is on {mount.fs_type}, which keeps data in RAM: {prim} "
            "never reaches a block device.",
            "Benchmark the directory your journal will really live on.",
            {"fs_type": mount.fs_type, "mount_point": mount.mount_point},
            "Linux Documentation/filesystems/tmpfs.rst",
            MEASURED,
        )
    overlays = stack.volatile_overlays(f.host.target)
    if overlays:
        return NO_FLUSH, Finding(
            "overlay-volatile",
            RISK,
            _subject(r),
            f"The storage stack has an overlay mounted volatile ({_chain(f)}): {prim} is not "
            "passed to its upper filesystem.",
            "Remove the 'volatile' (fsync=volatile) option, or keep the journal outside the "
            "overlay.",
            {
                "overlays": [o.name for o in overlays],
                "options": sorted({opt for o in overlays for opt in o.options}),
                "chain": _chain(f),
            },
            OVERLAY_VOLATILE_DOC,
            MEASURED,
        )
    zfs_sync = f.evidence.environment.zfs_sync if f.evidence else None
    if mount.fs_type == "zfs" and (zfs_sync or "").lower() == "disabled":
        return NO_FLUSH, Finding(
            "zfs-sync-disabled",
            RISK,
            _subject(r),
            f"The ZFS dataset {mount.source} has sync=disabled: {prim} returns at once and "
            "data reaches disk only with the next transaction group.",
            f"zfs set sync=standard {mount.source} (add a SLOG device if sync writes are slow).",
            {"fs_type": "zfs", "dataset": mount.source, "zfs_sync": zfs_sync},
            ZFS_SYNC_DOC,
            MEASURED,
        )
    return None


def rule_ram_media(f: Facts, r: Result | None) -> tuple[str, Finding] | None:
    """The bytes end in RAM at the bottom of the stack: a loop device whose backing file
    is on tmpfs, a filesystem on zram or brd (``ram*``), null_blk. When only some of the
    media are RAM (a btrfs or md array across both), the redundancy profile decides and is
    not read: unverifiable, with the risk named. Flushes may be counted
    on the layers above; nothing below them is stable (fsyncbench.host.layers: loop turns a flush
    into an fsync of its backing file, which tmpfs has nothing to do for). Stack facts,
    measured."""
    ram = stack.ram_media(f.host.target)
    if not ram:
        return None
    chain = _chain(f)
    stable = [layer for layer in stack.media(f.host.target) if layer.volatile is not True]
    if stable:
        return UNVERIFIABLE, Finding(
            "part-ram-backed-storage",
            RISK,
            _subject(r),
            f"Part of the storage holding the bytes is RAM "
            f"({', '.join(layer.name for layer in ram)}) and part is not "
            f"({', '.join(layer.name for layer in stable)}): {chain}. Whether an acknowledged "
            "commit survives a power loss depends on the redundancy profile (a mirror keeps "
            "it on the other device, a stripe or single copy loses it).",
            "Keep RAM devices out of a journal's filesystem.",
            {
                "chain": chain,
                "ram_layers": [layer.name for layer in ram],
                "stable_layers": [layer.name for layer in stable],
            },
            RAM_STACK_DOC,
            MEASURED,
        )
    return NO_FLUSH, Finding(
        "ram-backed-storage",
        RISK,
        _subject(r),
        f"The bytes end in RAM: {chain}. {_primitive(f, r)} is passed down the stack, but "
        "the layer that holds the data is memory, lost with the power.",
        "Benchmark the directory your journal will really live on (a filesystem on a real "
        "disk, not on a loop file in tmpfs or a RAM block device).",
        {
            "chain": chain,
            "ram_layers": [layer.name for layer in ram],
            "kinds": [layer.kind for layer in ram],
        },
        RAM_STACK_DOC,
        MEASURED,
    )


def rule_sync_disabling_preload(f: Facts, r: Result | None) -> tuple[str, Finding] | None:
    """A sync-disabling library (SYNC_DISABLING_LIBS) named in LD_PRELOAD, /etc/ld.so.preload
    or the mapped libraries. A name alone is weaker than a measurement, so this decides only
    where neither a libc-vs-syscall comparison nor a flush counter covers the primitive.
    Inferred (identity)."""
    libs = _sync_disabling(_preload_names(f))
    if not libs:
        return None
    if _comparison(f, _primitive(f, r)) is not None or _counter_ratio(r, f.host) is not None:
        return None
    return NO_FLUSH, Finding(
        "sync-disabled-by-preload",
        RISK,
        _subject(r),
        f"{', '.join(libs)} is preloaded into this process; it turns "
        f"{_primitive(f, r)} into a no-op (a name match: no measurement contradicts it).",
        "Run without eatmydata (unset LD_PRELOAD, clear /etc/ld.so.preload) to measure real "
        "flushes.",
        {"ld_preload": f.host.ld_preload, "libraries": libs},
        EATMYDATA_DOC,
        INFERRED,
    )


def rule_barriers_disabled(f: Facts, r: Result | None) -> tuple[str, Finding] | None:
    """``nobarrier``/``barrier=0`` on any filesystem of the stack (the target's, or the one
    holding a loop device's backing file) stop it from sending cache flushes: when the block
    device right below it has a write-back (or unknown) cache, a sync ends in that volatile
    cache (BARRIER_DOC) — unless that device is a disk whose cache has power-loss protection
    (known family or declared), the case the option exists for; a loop device's cache (the
    page cache) never has it. Counters that still show flushes reaching the disk the filesystem
    sits on directly (a kernel that ignores the option, as xfs since Linux 4.19) overrule
    the option. A mount fact, measured."""
    # the cache that matters is the one right below each such filesystem: a loop device's
    # (the host page cache) is volatile whatever the disk under its backing file reports
    media = set(stack.media_devices(f.host.target))
    protected = _power_protected_media(f.host)
    layers = [
        layer
        for layer in stack.no_barrier_filesystems(f.host.target)
        if "through" not in (stack.cache_below(f.host.target, layer) or "")
        and not (protected and stack.device_below(f.host.target, layer) in media)
    ]
    if not layers:
        return None
    ratio = _reached_ratio(f, r)
    if (
        ratio is not None
        and ratio >= REACHED_FLUSH_RATIO
        and stack.top_block_device(f.host.target) in stack.media_devices(f.host.target)
    ):
        return None
    opts = sorted({o for layer in layers for o in layer.options} & NO_BARRIER_OPTIONS)
    names = ", ".join(f"{layer.fs_type} {layer.name}" for layer in layers)
    return VOLATILE_CACHE, Finding(
        "barriers-disabled",
        RISK,
        _subject(r),
        f"{names} is mounted with {', '.join(opts)}: {_primitive(f, r)} writes data to the "
        "drive but never asks it to flush its volatile write cache.",
        "Remount without nobarrier/barrier=0 unless the cache is battery- or capacitor-backed.",
        {
            "mount_options": sorted({o for layer in layers for o in layer.options}),
            "filesystems": [layer.name for layer in layers],
            "chain": _chain(f),
            "write_cache": [d.write_cache for d in _media_disks(f.host)],
            "flushes_per_sync": None if ratio is None else round(ratio, 3),
        },
        BARRIER_DOC,
        MEASURED,
    )


#: The macOS syncs that stop at the drive's cache (rule_macos_plain_fsync).
PLAIN_MACOS_SYNCS = ("fsync", "F_BARRIERFSYNC", "O_DSYNC", "O_SYNC")


def rule_macos_plain_fsync(f: Facts, r: Result | None) -> tuple[str, Finding] | None:
    """On macOS plain fsync, F_BARRIERFSYNC and O_DSYNC/O_SYNC writes return once data
    reaches the drive, whose cache is volatile (APPLE_FSYNC_DOC, APPLE_BARRIER_DOC: only
    F_FULLFSYNC asks the drive to flush). Platform semantics, inferred."""
    # a commit's primitive may carry a note: "fsync (F_FULLFSYNC refused: ENOTSUP)" is SQLite's
    # fallback to plain fsync on a volume that refuses F_FULLFSYNC
    base = _base_primitive(r.primitive) if r is not None else ""
    if r is None or f.host.os_name != "Darwin" or base not in PLAIN_MACOS_SYNCS:
        return None
    full = next((x for x in _flush_results(f.results) if x.primitive == "F_FULLFSYNC"), None)
    return VOLATILE_CACHE, Finding(
        "macos-fsync-stops-at-cache",
        RISK,
        r.name,
        f"On macOS {r.primitive} returns once data reaches the drive's volatile cache.",
        "Use F_FULLFSYNC (SQLite: PRAGMA fullfsync=ON with a SQLite that maps it to "
        "F_FULLFSYNC) for power-loss durability.",
        {
            "primitive": r.primitive,
            "p50_ns": r.summary.p50_ns,
            "fullfsync_ratio": None
            if full is None
            else round(full.summary.p50_ns / r.summary.p50_ns),
        },
        APPLE_FSYNC_DOC if base == "fsync" else APPLE_BARRIER_DOC,
        INFERRED,
    )


def _virtualbox(host: Host) -> list[str]:
    """The signs naming VirtualBox: DMI vendor/product, a disk whose model the device
    knowledge table says VirtualBox acknowledges flushes of without flushing
    (``ignores_flush``: its IDE/SATA disk, VIRTUALBOX_DOC)."""
    v = host.virtualization
    signs = []
    if (v.dmi_vendor or "").strip().lower() == "innotek gmbh":
        signs.append(f"DMI sys_vendor {v.dmi_vendor}")
    if (v.dmi_product or "").strip().lower() == "virtualbox":
        signs.append(f"DMI product_name {v.dmi_product}")
    if (v.detect_virt or "").strip().lower() == "oracle":
        signs.append("systemd-detect-virt oracle")
    for d in _media_disks(host):
        if knowledge.known(d.vendor, d.model, knowledge.IGNORES_FLUSH):  # VBOX HARDDISK
            signs.append(f"disk {d.name} model {d.model}")
    return signs


def rule_hypervisor_ignores_flush(f: Facts, r: Result | None) -> tuple[str, Finding] | None:
    """A hypervisor whose documented default acknowledges guest flushes without flushing:
    VirtualBox ignores flush requests of IDE/SATA disks unless ``IgnoreFlush`` is set to 0
    (VIRTUALBOX_DOC). The setting lives on the host and cannot be read from the guest, so
    this is the default's consequence, inferred; counters in the guest only show that the
    guest sent the flushes."""
    signs = _virtualbox(f.host)
    if not signs:
        return None
    return VOLATILE_CACHE, Finding(
        "hypervisor-ignores-flush",
        RISK,
        _subject(r),
        f"This is a VirtualBox guest ({'; '.join(signs)}): by default VirtualBox ignores the "
        f"guest's flush requests, so {_primitive(f, r)} ends in the host's cache.",
        "On the host: VBoxManage setextradata VM-name "
        '"VBoxInternal/Devices/ahci/0/LUN#0/Config/IgnoreFlush" 0 (piix3ide for IDE disks; '
        "the VM log then lacks 'Flushes will be ignored'), or run fsyncbench on the host.",
        {"signs": signs, "flushes_per_sync": _counter_ratio(r, f.host)},
        VIRTUALBOX_DOC,
        INFERRED,
    )


def rule_cloud_block_storage(f: Facts, r: Result | None) -> tuple[str, Finding] | None:
    """A disk whose model names a cloud block service that documents durable, replicated
    writes (its ``cloud_block`` row of the device knowledge table, fsyncbench.host.knowledge;
    CLOUD_BLOCK_DOC). Its identity answers what a guest cannot
    see of a generic virtual disk; a p50 below a network round trip (NETWORK_BLOCK_FLOOR_NS,
    the floor of network block storage: fsyncbench.judge.devices) withholds it, since
    something nearer than the provider's replicas acknowledged that flush.
    Identity, inferred: every disk holding the bytes must be one."""
    disks = _media_disks(f.host)
    if not disks or not all(cloud_block(d) for d in disks):
        return None
    if r is not None and r.summary.p50_ns < NETWORK_BLOCK_FLOOR_NS:
        return None
    return HONEST_FLUSH, Finding(
        "cloud-block-storage",
        INFO,
        _subject(r),
        f"The target sits on {', '.join(sorted({d.model or '?' for d in disks}))}, "
        "network block storage whose provider acknowledges a write only once it is stored "
        "redundantly.",
        "Mind the volume's IOPS/latency limits; a local instance-store disk would not be "
        "durable across instance stop.",
        {
            "models": [d.model for d in disks],
            "write_cache": [d.write_cache for d in disks],
            "p50_ns": None if r is None else r.summary.p50_ns,
        },
        CLOUD_BLOCK_DOC,
        INFERRED,
    )


def rule_published_power_cut(f: Facts, r: Result | None) -> tuple[str, Finding] | None:
    """Every disk holding the bytes is a model a published power-cut test saw lose
    acknowledged writes (the ``power_cut`` rows of the device knowledge table whose result
    begins ``lost``, each with its source): ``volatile_cache``, inferred from the model
    string and that test, whatever the flush's latency, which cannot tell a drive that
    keeps its flushes from one that acknowledges them early. The firmware tested may not be
    this one's, so the finding says what settles it. A published pass proves less (one
    sample kept its data) and decides nothing."""
    disks = _media_disks(f.host)
    rows = [knowledge.known(d.vendor, d.model, knowledge.POWER_CUT) for d in disks]
    results = [row.fact(knowledge.POWER_CUT) or "" if row else "" for row in rows]
    if not disks or not all(x.startswith("lost") for x in results):
        return None
    first = rows[0]
    assert first is not None
    return VOLATILE_CACHE, Finding(
        "published-power-cut-loss",
        RISK,
        _subject(r),
        f"The target's bytes are on {first.name} ({', '.join(d.name for d in disks)}): a "
        f"published power-cut test of this model lost acknowledged writes ({results[0]}).",
        "Check the drive's firmware against the one tested, or pull the plug yourself "
        "(fsyncbench powercut); until then keep the journal on another drive.",
        {
            "models": [d.model for d in disks],
            "knowledge_rows": [row.id for row in rows if row],
            "p50_ns": None if r is None else r.summary.p50_ns,
        },
        first.source(knowledge.POWER_CUT),
        INFERRED,
    )


def rule_network_filesystem(f: Facts, r: Result | None) -> tuple[str, Finding] | None:
    """A layer of the stack forwards the flush to a daemon or server whose storage cannot be
    seen from here: NFS, SMB, 9p, virtiofs, FUSE (which daemon: the mount source and
    subtype), nbd, rbd, iSCSI, NVMe over fabrics (fsyncbench.host.layers). Stack facts, measured;
    what the far side does is unverifiable."""
    forwarding = stack.forwarding_layers(f.host.target)
    if not forwarding:
        return None
    first = forwarding[0]
    kind = {"fuse": "the FUSE filesystem", "network-fs": "the network filesystem"}.get(
        first.kind, "the network block device"
    )
    what = (
        f"{kind} {first.name} (type {first.fs_type}, source {first.source})"
        if first.fs_type
        else f"{kind} {first.name}"
    )
    return UNVERIFIABLE, Finding(
        "network-filesystem",
        WARNING,
        _subject(r),
        f"The target's storage goes through {what}: {_primitive(f, r)} is "
        "forwarded to a server or daemon whose storage cannot be seen from here.",
        "Run fsyncbench audit where the data is stored, or keep the journal on local storage.",
        {
            "fs_type": first.fs_type,
            "source": first.source,
            "layer": first.name,
            "kind": first.kind,
            "chain": _chain(f),
        },
        "nfs(5); Linux Documentation/filesystems/fuse.rst; "
        "Documentation/admin-guide/blockdev/nbd.rst",
        MEASURED,
    )


def _virtual_disk_advice(host: Host) -> str:
    """Where to look on the host: the cache mode of the emulator the disk's model names
    (the device knowledge table's ``emulated`` fact) first, else Firecracker's and QEMU's."""
    names = {layers.emulated_by(d) for d in _media_disks(host)} - {None}
    tail = " Or run fsyncbench on the host (or pull the plug: fsyncbench powercut)."
    if names == {"QEMU"}:
        return (
            "Check the disk's cache mode in QEMU's command line on the host: cache=unsafe "
            "ignores the guest's flushes, writeback, none, writethrough and directsync honour "
            "them." + tail
        )
    return (
        "Check the hypervisor's disk cache mode: Firecracker's default cache_type Unsafe "
        "advertises no flush and never syncs on the host, Writeback fsyncs the backing file "
        "on every guest flush; QEMU cache=unsafe ignores flushes, its other modes honour "
        "them." + tail
    )


def rule_virtualized(f: Facts, r: Result | None) -> tuple[str, Finding] | None:
    """Inside a VM the guest sees only that flushes reach the virtual disk; the host's
    cache mode decides the rest (FIRECRACKER_DOC). A virtual disk that
    reports "write through" gets no flush from the guest at all: the host either writes
    through (QEMU cache=writethrough/directsync) or never flushes (Firecracker's default
    Unsafe, QEMU cache=unsafe), which the guest cannot tell apart. The VM is a measured
    fact (a hypervisor flag, DMI, systemd-detect-virt), or, where only a disk's model names an
    emulated disk (``Virtualization.virtual_disk_hint``: Windows, or Linux with the
    hypervisor hidden), inferred from that model or bus;
    the verdict says what cannot be measured from inside."""
    virt = f.host.virtualization
    if not virt.virtualized or _all_ram(f.host):
        return None
    # a guest known only from its disk's model string: inferred, and said so
    by_model = dataclasses.replace(virt, virtual_disk_hint=None).virtualized is not True
    ratio = _reached_ratio(f, r) if r is not None else None
    raw = _counter_ratio(r, f.host)
    virtual = [layer for layer in stack.media(f.host.target) if layer.kind == "virtual-disk"]
    through = [
        layer.name
        for layer in virtual
        if layer.device is not None and (layer.device.write_cache or "").strip() == "write through"
    ]
    where = "the virtual disk" if virtual else "whatever this stack ends in"
    if ratio is not None and ratio >= REACHED_FLUSH_RATIO and r is not None:
        seen = f"{_primitive(f, r)} reaches {where} ({flushes_per_sync_words(f, r)})"
    elif raw is not None and raw >= REACHED_FLUSH_RATIO:
        seen = (
            f"{_primitive(f, r)} was followed by {raw:.2f} device flushes per sync, but "
            "other I/O on the disk could explain them"
        )
    elif raw is not None:
        seen = f"only {raw:.2f} device flushes per sync arrived for {_primitive(f, r)}"
    else:
        seen = f"{_primitive(f, r)} goes to {where}"
    text = (
        f"This is a virtual machine: {seen}, and whether the host persists what it gets "
        "cannot be seen from inside."
    )
    if by_model:
        text = (
            f"This looks like a virtual machine (inferred from the model string: "
            f"{virt.virtual_disk_hint} is an emulated disk's): {seen}, and whether the host "
            "persists what it gets cannot be seen from inside."
        )
    if through:
        text = (
            f"This is a virtual machine whose disk {', '.join(through)} reports a "
            "write-through cache: the guest sends it no flush, and whether the host "
            "writes through or keeps the data in its page cache cannot be seen from inside."
        )
    evidence: dict[str, Any] = {
        "hypervisor_flag": virt.hypervisor_flag,
        "dmi_vendor": virt.dmi_vendor,
        "detect_virt": virt.detect_virt,
        "kernel_hint": virt.kernel_hint,
        "write_through_disks": through,
        # the figure the sentence states (counted on the media), and what is left of it
        # net of other I/O's flushes (None: other I/O could explain them all)
        "flushes_per_sync": None if raw is None else round(raw, 3),
        "flushes_per_sync_net_of_other_io": None if ratio is None else round(ratio, 3),
        "flush_ms_per_flush": None if r is None else _flush_ms_per_flush(r, f.host),
        "p50_ns": None if r is None else r.summary.p50_ns,
    }
    if virt.virtual_disk_hint:
        evidence["virtual_disk_hint"] = virt.virtual_disk_hint
    return UNVERIFIABLE, Finding(
        "virtualized-storage",
        WARNING,
        _subject(r),
        text,
        _virtual_disk_advice(f.host),
        evidence,
        FIRECRACKER_DOC,
        INFERRED if by_model else MEASURED,
    )


def rule_stack_not_followed(f: Facts, r: Result | None) -> tuple[str, Finding] | None:
    """The walk could not reach the layer holding the bytes (a relative overlay upper
    directory, a loop device whose backing file was not recorded, a filesystem whose
    devices were not found): counters and latencies cannot be tied to any medium. Comes
    before the bare-metal rules, which need to know the medium."""
    target = f.host.target
    stuck = stack.unfollowed(target)
    if not target.layers:  # a derived stack: only a recorded block device left dangling counts
        stuck = [layer for layer in stuck if layer.device is not None]
    if not stuck or stack.media(target):
        return None
    notes = [
        f"{stack.label(layer)}: {layer.note}" if layer.note else stack.label(layer)
        for layer in stuck
    ]
    advice = (
        "Run fsyncbench on the directory that holds the data, or with absolute overlay "
        "paths; `fsyncbench host DIR` shows the stack."
    )
    if f.host.os_name == "Windows":
        advice = (
            "Run fsyncbench where the volume's disks answer IOCTL_STORAGE_QUERY_PROPERTY (a "
            "local disk; for a virtual hard disk, the volume holding its file); `fsyncbench "
            "host DIR` shows what was read. Or pull the plug: fsyncbench powercut."
        )
    return UNVERIFIABLE, Finding(
        "stack-not-followed",
        WARNING,
        _subject(r),
        f"The storage under the target could not be followed to the medium holding the "
        f"bytes ({_chain(f)}; {'; '.join(notes)}): nothing measured here can be tied to it.",
        advice,
        {"chain": _chain(f), "stopped_at": [layer.name for layer in stuck]},
        "fsyncbench.host._stack",
        MEASURED,
    )
