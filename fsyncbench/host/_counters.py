"""Linux block-layer flush counters: ``/sys/block/<disk>/stat`` fields 16 and 17.

Source: https://www.kernel.org/doc/html/latest/block/stat.html — the stat file holds 17
decimal fields since Linux 5.5 (11 before 4.18, 15 from 4.18 with the discard fields);
field 16 is "flush I/Os" (requests completed) and field 17 "flush ticks" (milliseconds
spent on them). Partitions do not count flushes of their own: read the whole disk.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence

from fsyncbench.model import FlushDelta

from ._common import under_root

#: 1-based positions in the stat file (see the module docstring).
FLUSH_IOS_FIELD = 16
FLUSH_TICKS_FIELD = 17

Counters = tuple[int | None, int | None]


def parse_stat(text: str | None) -> Counters:
    """(flushes completed, ms spent flushing) from the text of a ``stat`` file.

    Fewer than 17 fields (kernel < 5.5), non-numeric fields or no text -> (None, None).
    """
    fields = (text or "").split()
    if len(fields) < FLUSH_TICKS_FIELD:
        return None, None
    try:
        return int(fields[FLUSH_IOS_FIELD - 1]), int(fields[FLUSH_TICKS_FIELD - 1])
    except ValueError:
        return None, None


def stat_has_flush_counters(text: str | None) -> bool:
    """True when a ``stat`` file's text carries the flush fields (kernel >= 5.5)."""
    return parse_stat(text) != (None, None)


def _valid_disk_name(name: str) -> bool:
    return bool(name) and "/" not in name and name not in (".", "..") and "\0" not in name


def read_flush_counters(disks: Sequence[str], root: str = "/") -> dict[str, Counters]:
    """Current flush counters of whole disks.

    ``disks``: kernel names such as ``"vda"``, ``"nvme0n1"`` (leaves of
    :class:`fsyncbench.model.StorageTarget`). Returns ``{disk: (flushes, flush_ms)}`` where
    ``flushes`` counts flush requests completed and ``flush_ms`` is the total time spent on
    them in milliseconds, both since boot, from ``<root>/sys/block/<disk>/stat`` fields 16
    and 17 (https://www.kernel.org/doc/html/latest/block/stat.html, kernel >= 5.5).

    Never raises: a missing or unreadable file, an old kernel (fewer fields), a name that is
    not a plain disk name, or a non-Linux system give ``(None, None)`` for that disk. Cost:
    one small read per disk, no subprocess — cheap enough to call around every workload.
    """
    result: dict[str, Counters] = {}
    skip = root == "/" and not sys.platform.startswith("linux")
    for disk in disks:
        if skip or not _valid_disk_name(disk):
            result[disk] = (None, None)
            continue
        try:
            with open(under_root(root, f"/sys/block/{disk}/stat"), "rb") as handle:
                text = handle.read(4096).decode("ascii", errors="replace")
        except OSError:
            text = None
        result[disk] = parse_stat(text)
    return result


def flush_deltas(
    before: Mapping[str, Counters], after: Mapping[str, Counters]
) -> tuple[FlushDelta, ...]:
    """Per-disk change of the counters between two :func:`read_flush_counters` snapshots.

    One :class:`FlushDelta` per disk named in either snapshot (order: ``before``'s, then new
    ones from ``after``). A value is None when either side lacks it or when it went down
    (counters only grow; a drop means the device was replaced or the counter wrapped).
    """
    names = list(before) + [name for name in after if name not in before]
    deltas = []
    for name in names:
        old = before.get(name, (None, None))
        new = after.get(name, (None, None))
        deltas.append(
            FlushDelta(device=name, flushes=_diff(old[0], new[0]), flush_time_ms=_diff(old[1], new[1]))
        )
    return tuple(deltas)


def _diff(old: int | None, new: int | None) -> int | None:
    if old is None or new is None or new < old:
        return None
    return new - old
