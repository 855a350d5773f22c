"""Linux block-layer flush counters: ``/sys/block/<disk>/stat`` fields 16 and 17.

Source: https://www.kernel.org/doc/html/latest/block/stat.html — the stat file holds 17
decimal fields since Linux 5.5 (11 before 4.18, 15 from 4.18 with the discard fields);
field 16 is "flush I/Os" (requests completed) and field 17 "flush ticks" (milliseconds
spent on them); field 5 is "write I/Os" (requests completed). Partitions do not count flushes
of their own: read the whole disk. Every layer of a block stack has its own counters (a loop
device counts the flushes it turns into fsyncs of its backing file; the disk under that file
counts what reached it), so they are read on each block layer and judged on the media.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence

from fsyncbench.model import FlushDelta

from ._common import under_root

#: 1-based positions in the stat file (see the module docstring).
WRITE_IOS_FIELD = 5
FLUSH_IOS_FIELD = 16
FLUSH_TICKS_FIELD = 17

#: (flushes completed, ms spent flushing, write I/Os completed); the write count may be
#: missing (None) from counters recorded or faked as a pair.
Counters = tuple[int | None, ...]


def parse_stat(text: str | None) -> tuple[int | None, int | None, int | None]:
    """(flushes completed, ms spent flushing, write I/Os completed) from a ``stat`` text.

    Fewer than 17 fields (kernel < 5.5) give None for the flush fields; non-numeric fields
    or no text give None for all three.
    """
    fields = (text or "").split()
    try:
        writes = int(fields[WRITE_IOS_FIELD - 1]) if len(fields) >= WRITE_IOS_FIELD else None
    except ValueError:
        return None, None, None
    if len(fields) < FLUSH_TICKS_FIELD:
        return None, None, writes
    try:
        return int(fields[FLUSH_IOS_FIELD - 1]), int(fields[FLUSH_TICKS_FIELD - 1]), writes
    except ValueError:
        return None, None, None


def stat_has_flush_counters(text: str | None) -> bool:
    """True when a ``stat`` file's text carries the flush fields (kernel >= 5.5)."""
    return parse_stat(text)[:2] != (None, None)


def _valid_disk_name(name: str) -> bool:
    return bool(name) and "/" not in name and name not in (".", "..") and "\0" not in name


def read_flush_counters(disks: Sequence[str], root: str = "/") -> dict[str, Counters]:
    """Current flush counters of whole disks.

    ``disks``: kernel names such as ``"vda"``, ``"nvme0n1"``, ``"loop0"`` (block layers of
    :class:`fsyncbench.model.StorageTarget`). Returns ``{disk: (flushes, flush_ms, writes)}``
    where ``flushes`` counts flush requests completed, ``flush_ms`` is the total time spent
    on them in milliseconds and ``writes`` counts write requests completed, all since boot,
    from ``<root>/sys/block/<disk>/stat`` fields 16, 17 and 5
    (https://www.kernel.org/doc/html/latest/block/stat.html, flush fields: kernel >= 5.5).

    Never raises: a missing or unreadable file, an old kernel (fewer fields), a name that is
    not a plain disk name, or a non-Linux system give None in place of what is missing. Cost:
    one small read per disk, no subprocess — cheap enough to call around every workload.
    """
    result: dict[str, Counters] = {}
    skip = root == "/" and not sys.platform.startswith("linux")
    for disk in disks:
        if skip or not _valid_disk_name(disk):
            result[disk] = (None, None, None)
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
    Snapshots may hold pairs (no write count) or triples.
    """
    names = list(before) + [name for name in after if name not in before]
    deltas = []
    for name in names:
        old = tuple(before.get(name, ())) + (None, None, None)
        new = tuple(after.get(name, ())) + (None, None, None)
        deltas.append(
            FlushDelta(
                device=name,
                flushes=_diff(old[0], new[0]),
                flush_time_ms=_diff(old[1], new[1]),
                writes=_diff(old[2], new[2]),
            )
        )
    return tuple(deltas)


def _diff(old: int | None, new: int | None) -> int | None:
    if old is None or new is None or new < old:
        return None
    return new - old
