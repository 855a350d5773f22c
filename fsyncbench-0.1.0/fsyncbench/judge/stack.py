"""The recorded storage stack, read for the verdict rules. Pure functions of a
:class:`~fsyncbench.model.StorageTarget`; no I/O.

A report written before stacks were recorded (or by hand) has no ``layers``: a short stack is
derived from its mount and disks (:func:`fsyncbench.host.layers.derived_layers`), so old and
hand-written reports are judged by the same rules.
"""

from __future__ import annotations

from fsyncbench.host.layers import NO_BARRIER_OPTIONS, derived_layers
from fsyncbench.model import (
    FLUSH_DROPPED,
    FLUSH_FORWARDED,
    StorageLayer,
    StorageTarget,
)


def layers(target: StorageTarget) -> tuple[StorageLayer, ...]:
    """Every layer from the target's filesystem to the media, in walk order."""
    return target.layers or derived_layers(target.mount, target.disks, target.chain)


def media(target: StorageTarget) -> list[StorageLayer]:
    """The layers at the bottom that hold the bytes (RAM, disks, servers)."""
    return [layer for layer in layers(target) if layer.holds_bytes]


def ram_media(target: StorageTarget) -> list[StorageLayer]:
    """Media that are RAM: tmpfs/ramfs, zram, brd, null_blk."""
    return [layer for layer in media(target) if layer.volatile is True]


def media_devices(target: StorageTarget) -> list[str]:
    """Kernel names of the block devices that hold the bytes (their counters count)."""
    return [layer.name for layer in media(target) if layer.device is not None]


def top_block_device(target: StorageTarget) -> str | None:
    """The first block device under the target's filesystem: the one the filesystem sends
    its writes and flushes to (None: no block device)."""
    layer = top_block_layer(target)
    return None if layer is None else layer.name


def top_block_layer(target: StorageTarget) -> StorageLayer | None:
    """The first block-device layer under the target's filesystem (None: none)."""
    return next((layer for layer in layers(target) if layer.device is not None), None)


def non_media_devices(target: StorageTarget) -> set[str]:
    """Names of block devices in the stack that hold no bytes (loop, dm, md, partitions):
    counts on them show what was sent, never what reached stable media."""
    return {
        layer.name for layer in layers(target) if layer.device is not None and not layer.holds_bytes
    }


def block_devices(target: StorageTarget) -> list[StorageLayer]:
    """Every block-device layer, in walk order (top first)."""
    return [layer for layer in layers(target) if layer.device is not None]


def no_barrier_filesystems(target: StorageTarget) -> list[StorageLayer]:
    """Filesystem layers mounted ``nobarrier``/``barrier=0``: they send no cache flush."""
    return [
        layer
        for layer in layers(target)
        if layer.kind == "filesystem" and set(layer.options) & NO_BARRIER_OPTIONS
    ]


def volatile_overlays(target: StorageTarget) -> list[StorageLayer]:
    """Overlay layers mounted volatile: they drop every sync to their upper directory."""
    return [
        layer
        for layer in layers(target)
        if layer.kind == "overlay" and layer.flush == FLUSH_DROPPED
    ]


def forwarding_layers(target: StorageTarget) -> list[StorageLayer]:
    """Layers that forward a flush to a daemon or server whose storage cannot be seen."""
    return [layer for layer in layers(target) if layer.flush == FLUSH_FORWARDED]


def write_back_media(target: StorageTarget) -> bool | None:
    """True when a disk holding the bytes has a volatile write cache ("write back"), False
    when every known one writes through, None when none says."""
    caches = [
        layer.device.write_cache
        for layer in media(target)
        if layer.device is not None and layer.device.write_cache
    ]
    if not caches:
        return None
    return any("back" in c for c in caches)


def block_below(target: StorageTarget, above: StorageLayer) -> StorageLayer | None:
    """The first block device below layer ``above`` (partitions skipped: their disk's
    cache is the one that counts), i.e. where ``above`` sends its writes and flushes."""
    all_layers = layers(target)
    for layer in all_layers[all_layers.index(above) + 1 :]:
        if layer.depth <= above.depth:
            break
        if layer.device is not None and layer.kind != "partition":
            return layer
    return None


def cache_below(target: StorageTarget, above: StorageLayer) -> str | None:
    """The ``write_cache`` text of :func:`block_below` (None when none or not known)."""
    layer = block_below(target, above)
    return None if layer is None or layer.device is None else layer.device.write_cache


def device_below(target: StorageTarget, above: StorageLayer) -> str | None:
    """The name of :func:`block_below` (None when there is none)."""
    layer = block_below(target, above)
    return None if layer is None else layer.name


def unfollowed(target: StorageTarget) -> list[StorageLayer]:
    """Layers below which the walk could not go although bytes must be stored below them
    (a relative overlay upper dir, a loop device without its backing file, a filesystem
    whose devices were not found)."""
    all_layers = layers(target)
    out = []
    for i, layer in enumerate(all_layers):
        if layer.holds_bytes or layer.flush == FLUSH_FORWARDED:
            continue
        below = all_layers[i + 1] if i + 1 < len(all_layers) else None
        if below is None or below.depth <= layer.depth:
            out.append(layer)
    return out


def label(layer: StorageLayer) -> str:
    """A layer as one short phrase: ``ext4 /data``, ``loop0``, ``tmpfs /dev/shm (RAM)``."""
    if layer.device is not None and layer.kind != "partition":
        text = layer.name
        if layer.kind == "ram-disk":
            text += " (RAM)"
        return text
    if layer.kind == "partition":
        return layer.name
    text = f"{layer.fs_type or layer.kind} {layer.name}"
    if layer.kind == "filesystem-ram":
        text += " (RAM)"
    elif layer.kind == "overlay" and layer.flush == FLUSH_DROPPED:
        text += " (volatile)"
    elif layer.kind == "filesystem" and layer.flush == FLUSH_DROPPED:
        text += f" ({', '.join(sorted(set(layer.options) & NO_BARRIER_OPTIONS))})"
    return text


def chain_text(target: StorageTarget) -> str:
    """The whole stack as one line, top first: ``ext4 /mnt → loop0 → tmpfs /dev/shm (RAM)``.
    Siblings (dm/md slaves) are joined with ``+``."""
    parts: list[str] = []
    previous: StorageLayer | None = None
    for layer in layers(target):
        if previous is not None:
            parts.append(" + " if layer.depth <= previous.depth else " → ")
        parts.append(label(layer))
        previous = layer
    return "".join(parts) or "unknown"
