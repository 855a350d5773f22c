"""Known-corrupt states: what a sound checker must call corrupt, built from a recorded trace.

``corrupt 0`` in a powerloss table means something only if the checker
(:class:`fsyncbench.powerloss.matrix._Checker`: SQLite opens the state, ``PRAGMA
integrity_check``, every row compared with what its commit wrote) flags corruption when
there is some. :func:`known_corrupt_states` builds, from the same trace the models cut,
states whose corruption follows from SQLite's file format and recovery rules alone, one per
branch of the checker; :func:`fsyncbench.powerloss.matrix.evaluate` checks them with the
same checker and reports how many it flagged (``known_corrupt_flagged`` of
``known_corrupt``), so a checker that never detects corruption shows itself in every
report.

The states (each built from the files as SQLite issued them; none is claimed to be what a
given filesystem produces, only what a checker must catch):

- ``half-index``: the last database write batch (the commit's pages in a rollback journal
  mode, the checkpoint's in WAL) kept except its index b-tree pages (page type 0x02 or
  0x0a, https://www.sqlite.org/fileformat.html#b_tree_pages), and the header of the
  journal that would repair it lost (the rollback journal's first sector zeroed: a journal
  whose first byte is 0 is not hot, pager.c hasHotJournal,
  https://www.sqlite.org/atomiccommit.html#hot_journals; the WAL's 32-byte header zeroed: a
  WAL with an invalid header holds no valid frame, https://www.sqlite.org/walformat.html).
  The table holds the newest row, its index does not: ``PRAGMA integrity_check`` reports
  it ("row N missing from index", https://www.sqlite.org/pragma.html#pragma_integrity_check)
  and nothing else does: the rows read back whole. The "dropped journal header write with
  its pages kept" of issue 31.
- ``garbage-sector``: the first sector of the table's root page overwritten with random
  bytes (SQLite's own crash test trashes whole sectors so, src/test6.c, "Garbage data is
  written to all sectors of the file that overlap the region"): the b-tree page header is
  gone.
- ``changed-row``: the newest row's ``"status": "ok"`` rewritten in place as ``"no"``:
  a sound b-tree holding a row its commit did not write, which only the row comparison
  sees (integrity_check does not read record contents it can parse).
- ``empty-database``: the database file with no bytes (a file whose size persisted as 0,
  as ext4 before auto_da_alloc left replaced files,
  https://docs.kernel.org/admin-guide/ext4.html, auto_da_alloc): the steps table, durable
  before the first commit, is gone.

A state is left out when the trace cannot give it (``half-index`` needs a database write
batch after the setup; the others the database as issued at the end). Nothing here
prints; SQLite (:func:`fsyncbench.powerloss.sqlite.root_page`) only reads a root page
number from a copy.
"""

from __future__ import annotations

import random
import tempfile
from dataclasses import dataclass
from pathlib import Path

from fsyncbench.powerloss import sqlite
from fsyncbench.powerloss.models import _apply
from fsyncbench.powerloss.trace import Op, Trace

#: The b-tree page types of an index (https://www.sqlite.org/fileformat.html#b_tree_pages).
_INDEX_PAGE_TYPES = (0x02, 0x0A)
#: Bytes zeroed at the start of a rollback journal: its header sector (SQLite pads the
#: header to the sector size, 512 B at least: pager.c, JOURNAL_HDR_SZ).
_JOURNAL_HEADER_BYTES = 512
#: The WAL header (https://www.sqlite.org/walformat.html#the_wal_header).
_WAL_HEADER_BYTES = 32
_SECTOR_BYTES = 512


@dataclass(frozen=True)
class KnownCorrupt:
    """One known-corrupt state: ``name`` (see the module's list), ``files`` (name,
    content) sorted by name, ``how`` it was built from the trace, ``caught_by``: which
    check of a sound checker flags it first ("integrity_check", "rows", "table")."""

    name: str
    files: tuple[tuple[str, bytes], ...]
    how: str
    caught_by: str


def _issued(ops: tuple[Op, ...]) -> dict[str, bytearray]:
    """The files as issued after ``ops`` (every op applied, in order)."""
    files: dict[str, bytearray] = {}
    for op in ops:
        if op.kind == "create":
            files[op.file] = bytearray()
        elif op.kind == "delete":
            files.pop(op.file, None)
        elif op.kind in ("write", "truncate") and op.file in files:
            _apply(files[op.file], op)
    return files


def _frozen(files: dict[str, bytearray]) -> tuple[tuple[str, bytes], ...]:
    return tuple(sorted((n, bytes(d)) for n, d in files.items()))


def _page_bytes(db: bytes | bytearray) -> int:
    """The page size in the database header (offset 16, big-endian; 1 means 65536:
    https://www.sqlite.org/fileformat.html#page_size)."""
    size = int.from_bytes(db[16:18], "big") if len(db) >= 18 else 0
    return 65536 if size == 1 else size


def _page_type(data: bytes, offset: int) -> int:
    """The b-tree page type byte of the page written at ``offset`` (page 1's header follows
    the 100-byte database header); -1 for a write that is not a whole page's start."""
    at = 100 if offset == 0 else 0
    return data[at] if len(data) > at else -1


def _last_batch(trace: Trace) -> tuple[int, int] | None:
    """[start, end) of the last run of consecutive database writes/truncations after the
    barrier that contains an index page, or None."""
    ops, db = trace.ops, trace.db_name
    best = None
    i = trace.barrier_index + 1
    while i < len(ops):
        if ops[i].file == db and ops[i].kind in ("write", "truncate"):
            j = i
            while j < len(ops) and ops[j].file == db and ops[j].kind in ("write", "truncate"):
                j += 1
            if any(
                op.kind == "write" and _page_type(op.data, op.offset_bytes) in _INDEX_PAGE_TYPES
                for op in ops[i:j]
            ):
                best = (i, j)
            i = j
        else:
            i += 1
    return best


def half_index(trace: Trace, lose_header: bool = True) -> KnownCorrupt | None:
    """The ``half-index`` state of ``trace`` (module docstring); None when the trace has no
    database write batch with an index page after its setup. ``lose_header`` False keeps
    the journal's header: the control state, which SQLite's recovery repairs (a hot
    rollback journal is played back, a WAL's frames are replayed), so a sound checker must
    not flag it."""
    batch = _last_batch(trace)
    if batch is None:
        return None
    start, end = batch
    files = _issued(trace.ops[:start])
    kept = [
        op
        for op in trace.ops[start:end]
        if not (op.kind == "write" and _page_type(op.data, op.offset_bytes) in _INDEX_PAGE_TYPES)
    ]
    for op in kept:
        _apply(files[trace.db_name], op)
    roles = dict(trace.roles)
    lost_header = []
    for name, data in files.items():
        size = {"journal": _JOURNAL_HEADER_BYTES, "wal": _WAL_HEADER_BYTES}.get(roles.get(name, ""))
        if size and data and lose_header:
            data[: min(size, len(data))] = bytes(min(size, len(data)))
            lost_header.append(name)
    return KnownCorrupt(
        "half-index",
        _frozen(files),
        f"ops up to {start} as issued, then the database writes {start}-{end - 1} except "
        f"those of index pages ({end - start - len(kept)} lost)"
        + (f"; the header of {', '.join(lost_header)} lost" if lost_header else ""),
        "integrity_check",
    )


def _root_page(files: dict[str, bytearray], db_name: str) -> int:
    """The steps table's root page number, read by SQLite from a copy of the database
    alone (nothing to roll back or recover); 0 when it cannot be read."""
    with tempfile.TemporaryDirectory(prefix="fsyncbench-proof-") as where:
        (Path(where) / db_name).write_bytes(files[db_name])
        return sqlite.root_page(Path(where) / db_name, "steps")


def _final(trace: Trace) -> dict[str, bytearray] | None:
    """The files as issued after the last op, with the database only (the end of a trace
    is a closed connection: no journal, the WAL checkpointed); None without a database."""
    files = _issued(trace.ops)
    db = files.get(trace.db_name)
    if not db or _page_bytes(db) == 0:
        return None
    return {trace.db_name: db}


def _garbage_sector(trace: Trace, seed: int) -> KnownCorrupt | None:
    files = _final(trace)
    if files is None:
        return None
    db = files[trace.db_name]
    root = _root_page(files, trace.db_name)
    page = _page_bytes(db)
    if root < 2 or root * page > len(db):
        return None
    at = (root - 1) * page
    garbage = random.Random(f"{seed}/{trace.pragmas.label}/garbage-sector").randbytes(_SECTOR_BYTES)
    db[at : at + _SECTOR_BYTES] = garbage
    return KnownCorrupt(
        "garbage-sector",
        _frozen(files),
        f"the database as issued at the end, the first {_SECTOR_BYTES} B of the steps "
        f"table's root page (page {root}) random (seed {seed})",
        "integrity_check",
    )


def _changed_row(trace: Trace) -> KnownCorrupt | None:
    files = _final(trace)
    if files is None or not trace.rows:
        return None
    seq = trace.rows[-1][0]
    needle = f'{{"seq": {seq}, "status": "ok"'.encode()
    db = files[trace.db_name]
    if needle not in db:
        return None
    files[trace.db_name] = bytearray(
        bytes(db).replace(needle, f'{{"seq": {seq}, "status": "no"'.encode())
    )
    return KnownCorrupt(
        "changed-row",
        _frozen(files),
        f"the database as issued at the end, row {seq}'s status 'ok' rewritten as 'no' in place",
        "rows",
    )


def _empty_database(trace: Trace) -> KnownCorrupt | None:
    if _final(trace) is None:
        return None
    return KnownCorrupt(
        "empty-database",
        ((trace.db_name, b""),),
        "the database file with no bytes",
        "table",
    )


def known_corrupt_states(trace: Trace, seed: int = 0) -> tuple[KnownCorrupt, ...]:
    """The known-corrupt states (module docstring) ``trace`` can give, in a fixed order;
    ``seed`` seeds the garbage. Raises nothing for a trace that gives none (an empty
    tuple)."""
    made = (
        half_index(trace),
        _garbage_sector(trace, seed),
        _changed_row(trace),
        _empty_database(trace),
    )
    return tuple(k for k in made if k is not None)
