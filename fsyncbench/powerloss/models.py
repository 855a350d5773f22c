"""Crash states: what a power cut at a given point could leave on disk, under named
persistence models. Pure computation over a recorded :class:`~fsyncbench.powerloss.trace.Trace`.

Crash points (``point`` = index of the first op that did not happen): just before each sync
or directory sync, just after each acknowledged commit, and after the last op. Points
before the trace's ``barrier`` (the end of setup) are not tested.

Models (:data:`MODELS`), from most to least forgiving of the storage:

- ``prefix``: an ordered filesystem: the operations persist in issue order up to some point
  at or after the last honoured sync; every such prefix is one state (ext3/ext4
  ``data=journal``-like ordering; the "prefix" crash-consistency model of Pillai et al.,
  "All File Systems Are Not Created Equal", OSDI 2014,
  https://www.usenix.org/conference/osdi14/technical-sessions/presentation/pillai).
- ``synced-only``: only what was synced survives: a file keeps its content as of its last
  sync, a created or deleted directory entry persists only after a directory sync. The most
  POSIX lets a cut take, though not the most damaging state (``subset`` can corrupt where
  losing every unsynced write does not) (fsync(2): "the call blocks until the device reports that the transfer has
  completed"; nothing is promised for data not synced; the directory needs its own fsync:
  https://man7.org/linux/man-pages/man2/fsync.2.html, NOTES). One state per crash point.
- ``subset``: each write, truncation and directory change since its file's (or the
  directory's) last sync is independently kept or lost. Not SQLite's crash test
  (``test6``): that one never loses a directory change and also trashes sectors.
- ``torn``: as ``subset``, and each write is torn at ``sector_bytes`` boundaries: every
  sector piece is kept or lost on its own, and a lost piece that covered only part of its
  sector destroys that whole sector (zeros) — the damage SQLite guards against only when
  told that powersafe overwrite is off (https://www.sqlite.org/psow.html). With powersafe
  overwrite on the combination is invalid (:func:`invalid_reason`), not a finding.
- ``torn-garbage``: as ``torn``, but a destroyed sector holds random bytes instead of zeros
  (a zeroed rollback-journal page can pass SQLite's sparse journal checksum, which samples
  every 200th byte, pager.c pager_cksum; garbage almost never does).
- ``test6``: SQLite's own crash VFS as src/test6.c does it
  (https://sqlite.org/src/file?name=src/test6.c, writeListSync): at the crash each write
  since its file's last sync is written, left out, or has "all sectors of the file that
  overlap the region" overwritten with random garbage (``sector_bytes`` each); a
  truncation is applied or left out; files are created and deleted at once (cfOpen and
  cfDelete pass straight to the real VFS, so no directory change is ever lost). Sampled
  states draw each action with test6's odds (a random byte r: trash when r & 6 == 6,
  else skip when r & 1: 1/4, 3/8, 3/8; a truncation 1/2, 1/2); enumerated points take every
  combination. test6 crashes inside an xSync (or at sqlite3_crash_now); the crash points
  here are those moments and the ones after each acknowledged commit. Like ``torn`` it
  needs powersafe overwrite off (test6's default device characteristics are 0).

Semantics (:data:`SEMANTICS`), whose syncs make what durable:

- ``linux``: every sync is honoured: fsync(2) of a file makes its content durable, fsync of
  the directory its entries (https://man7.org/linux/man-pages/man2/fsync.2.html).
- ``macos``: two levels below the page cache. A plain fsync (the syncs SQLite issues with
  SQLITE_SYNC_NORMAL, i.e. fullfsync off, and every directory sync: unixSync and unixDelete call ``full_fsync(fd, 0, 0)`` on the
  directory, https://sqlite.org/src/file?name=src/os_unix.c) only moves the file's (or the
  directory's) changes into the drive's volatile cache, where a power cut may still lose
  them; a sync SQLite issues with SQLITE_SYNC_FULL (PRAGMA fullfsync=ON) is
  ``fcntl(F_FULLFSYNC)``, which writes the file and then asks the drive to flush its whole
  cache, so everything an earlier plain fsync handed to the drive becomes durable too
  (Apple's fcntl(2), F_FULLFSYNC: "asks the drive to flush all buffered data to the
  permanent storage device";
  https://developer.apple.com/library/archive/documentation/System/Conceptual/ManPages_iPhoneOS/man2/fcntl.2.html;
  fsync(2): https://developer.apple.com/library/archive/documentation/System/Conceptual/ManPages_iPhoneOS/man2/fsync.2.html).
  So a journal unlink followed by a plain directory sync (DELETE at EXTRA) is durable only
  at the next F_FULLFSYNC: the last commit may roll back.
- ``windows``: SQLite's Windows VFS never syncs a directory (winDelete ignores syncDir;
  https://sqlite.org/src/file?name=src/os_win.c), so recorded directory syncs are ignored;
  FlushFileBuffers of a file writes its data and metadata, "ensures that the directory
  structure is persisted" and flushes the device (MS-FSA 2.1.5.7,
  https://learn.microsoft.com/en-us/openspecs/windows_protocols/ms-fsa/0de7dc40-9627-437e-a4df-c4696cdc3d02).
  So a flush of a file makes its data durable and the directory changes of its name made
  before it (its creation, and the deletion of an earlier file of that name); other
  directory changes stay pending (a deletion persists when the name is flushed again, at
  the next commit's first flush). Inferred: MS-FSA does not say which entries "the
  directory structure" covers, and FAT has no metadata log.
- The ``macos`` semantics take a FULL sync to be F_FULLFSYNC, as in the SQLite that records
  the trace (apsw's, built from source, like Homebrew's); Apple's system SQLite uses
  F_BARRIERFSYNC, which orders writes without flushing the drive, and a volume that
  refuses F_FULLFSYNC gets a plain fsync: neither is modelled here (``fsyncbench run``
  measures which one this machine's SQLite does).

Where a point has at most ``max_states`` states under the drawn models (:data:`DRAWN`; or
not more than ``samples`` + 2) all are enumerated; otherwise ``samples`` are drawn with a
:class:`random.Random` seeded from ``seed``, the configuration and the point (plus the
all-kept and all-lost states), so every figure is reproducible from its seed; the garbage
of ``torn-garbage`` and ``test6`` is seeded the same way, per state and item.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from fsyncbench.powerloss.trace import SQLITE_SYNC_FULL, Op, Trace

MODELS = ("synced-only", "prefix", "subset", "torn", "torn-garbage", "test6")
#: Models that damage bytes a write did not cover (torn or trashed sectors): invalid on a
#: trace recorded with powersafe overwrite on (:func:`invalid_reason`).
SECTOR_MODELS = ("torn", "torn-garbage", "test6")
#: Models whose states are drawn item by item (enumerated or sampled).
DRAWN = ("subset", *SECTOR_MODELS)
#: test6's actions for one item (src/test6.c writeListSync eAction: 1 written, 2 nothing
#: done, 3 trash sectors), as the indices used here.
_LOST, _KEPT, _TRASHED = 0, 1, 2
DEFAULT_MODELS = ("synced-only", "prefix")
SEMANTICS = ("linux", "macos", "windows")
#: The ``platform.system()`` name whose SQLite promises each semantics is compared with.
SEMANTICS_OS = {"linux": "Linux", "macos": "Darwin", "windows": "Windows"}
#: Sector sizes a torn write may break at: 512 B (logical sectors of most disks) or 4 KiB
#: (advanced-format disks and SQLite's default sector size, SQLITE_DEFAULT_SECTOR_SIZE).
SECTOR_SIZES = (512, 4096)
DEFAULT_MAX_STATES = 64
DEFAULT_SAMPLES = 32


@dataclass(frozen=True)
class CrashState:
    """One state a power cut could leave: ``files`` (name, content) sorted by name;
    ``acked``: commits acknowledged before the cut; ``point``: index of the first op that
    did not happen; ``how``: how to rebuild it (model, point, and for the drawn models the
    kept items: bit k of the mask is the k-th operation not yet synced, directory changes
    first, then each file's in issue order; for test6 one letter per item, K kept, L left
    out, T its sectors trashed, and the seed of the garbage); ``sampled``:
    drawn at random because the point had more than ``max_states`` states."""

    point: int
    files: tuple[tuple[str, bytes], ...]
    acked: tuple[int, ...]
    how: str
    sampled: bool = False


def default_semantics(platform: str) -> str:
    """The semantics of ``platform`` (a ``sys.platform`` value): macos on darwin, windows
    on win32, else linux."""
    return {"darwin": "macos", "win32": "windows"}.get(platform, "linux")


def invalid_reason(model: str, psow: bool) -> str:
    """Why ``model`` cannot be applied to a trace recorded with ``psow``; "" if it can."""
    if model in SECTOR_MODELS and psow:
        return (
            "invalid: SQLite was told writes are powersafe overwrites (psow=1), which torn "
            f"sectors break; record with psow off to test {model}"
        )
    return ""


def crash_points(trace: Trace) -> list[int]:
    """Indices (first op not done) tested: before each sync, after each ack, at the end."""
    points = {len(trace.ops)}
    for i in range(trace.barrier_index + 1, len(trace.ops)):
        kind = trace.ops[i].kind
        if kind in ("sync", "dirsync"):
            points.add(i)
        elif kind == "ack":
            points.add(i + 1)
    return sorted(points)


def _apply(buf: bytearray, op: Op) -> None:
    if op.kind == "write":
        end = op.offset_bytes + len(op.data)
        if len(buf) < op.offset_bytes:
            buf.extend(bytes(op.offset_bytes - len(buf)))
        buf[op.offset_bytes : end] = op.data
    elif op.kind == "truncate":
        if op.size_bytes < len(buf):
            del buf[op.size_bytes :]
        else:
            buf.extend(bytes(op.size_bytes - len(buf)))


@dataclass(frozen=True)
class _Piece:
    """One independently lost item: a directory change (``link``: (created?, name,
    inode)), a whole write or truncation (``op``), or a sector piece of a write (``op``
    with ``start``/``end``, and ``damage``: the sector that a loss of this partial piece
    destroys)."""

    ino: int  # -1 for a directory change
    op: Op | None = None
    start: int = 0  # piece of a write: [start, end) in file offsets; end 0: the whole op
    end: int = 0
    damage: tuple[int, int] | None = None
    link: tuple[bool, str, int] | None = None


class _Fs:
    """The files as issued, what is durable, and what is pending since the last sync,
    under ``semantics`` (:data:`SEMANTICS`). On macOS also what a plain fsync handed to the
    drive's cache: ``cached`` (a file's content as of its last plain fsync) covering the
    first ``cached_ops`` of its pending operations, and ``cached_names`` covering the first
    ``cached_dir_ops`` directory changes; an F_FULLFSYNC makes them durable."""

    def __init__(self, semantics: str) -> None:
        self.content: list[bytearray] = []
        self.durable: list[bytes] = []
        self.pending: list[list[Op]] = []
        self.cached: list[bytes] = []
        self.cached_ops: list[int] = []
        self.names: dict[str, int] = {}
        self.durable_names: dict[str, int] = {}
        self.cached_names: dict[str, int] = {}
        self.dir_pending: list[tuple[bool, str, int]] = []
        self.cached_dir_ops = 0
        self.semantics = semantics
        self.floor_changed = False

    def apply(self, op: Op) -> bool:
        """Apply ``op``; True when it changed the files as issued. ``floor_changed`` says
        whether it made something durable that an ordered filesystem would persist with
        everything before it (an honoured sync, or the barrier)."""
        self.floor_changed = False
        kind = op.kind
        if kind == "create":
            ino = len(self.content)
            self.content.append(bytearray())
            self.durable.append(b"")
            self.cached.append(b"")
            self.cached_ops.append(0)
            self.pending.append([])
            self.names[op.file] = ino
            self.dir_pending.append((True, op.file, ino))
            return True
        if kind == "delete":
            ino = self.names.pop(op.file)
            self.dir_pending.append((False, op.file, ino))
            return True
        if kind in ("write", "truncate"):
            ino = self.names[op.file]
            _apply(self.content[ino], op)
            self.pending[ino].append(op)
            return True
        if kind == "sync":
            self._sync(op.file, op.flags & 0x0F == SQLITE_SYNC_FULL)
        elif kind == "dirsync":
            self._dirsync()
        elif kind == "barrier":
            self.durable = [bytes(c) for c in self.content]
            self.cached = list(self.durable)
            self.cached_ops = [0 for _ in self.content]
            self.pending = [[] for _ in self.content]
            self.durable_names = dict(self.names)
            self.cached_names = dict(self.names)
            self.dir_pending = []
            self.cached_dir_ops = 0
            self.floor_changed = True
        return False

    def _make_durable(self, ino: int) -> None:
        self.durable[ino] = self.cached[ino] = bytes(self.content[ino])
        self.pending[ino] = []
        self.cached_ops[ino] = 0

    def _sync(self, name: str, full: bool) -> None:
        ino = self.names[name]
        if self.semantics == "macos" and not full:  # plain fsync: into the drive's cache
            self.cached[ino] = bytes(self.content[ino])
            self.cached_ops[ino] = len(self.pending[ino])
            return
        self._make_durable(ino)
        self.floor_changed = True
        if self.semantics == "windows":  # the directory changes of the flushed file's name
            mine = [c for c in self.dir_pending if c[1] == name or c[2] == ino]
            for created, entry, entry_ino in mine:
                if created:
                    self.durable_names[entry] = entry_ino
                elif self.durable_names.get(entry) == entry_ino:
                    del self.durable_names[entry]
            self.dir_pending = [c for c in self.dir_pending if c not in mine]
            self.cached_names = dict(self.durable_names)
        elif self.semantics == "macos":  # F_FULLFSYNC flushes the whole drive cache
            for other, done in enumerate(self.cached_ops):
                self.durable[other] = self.cached[other]
                self.pending[other] = self.pending[other][done:]
                self.cached_ops[other] = 0
            self.durable_names = dict(self.cached_names)
            self.dir_pending = self.dir_pending[self.cached_dir_ops :]
            self.cached_dir_ops = 0

    def _dirsync(self) -> None:
        if self.semantics == "windows":  # SQLite's Windows VFS issues none
            return
        self.cached_names = dict(self.names)
        if self.semantics == "macos":  # a plain fsync of the directory
            self.cached_dir_ops = len(self.dir_pending)
            return
        self.durable_names = dict(self.names)
        self.dir_pending = []
        self.floor_changed = True

    def issued(self) -> tuple[tuple[str, bytes], ...]:
        return tuple(sorted((n, bytes(self.content[i])) for n, i in self.names.items()))

    def synced(self) -> tuple[tuple[str, bytes], ...]:
        return tuple(sorted((n, self.durable[i]) for n, i in self.durable_names.items()))

    def pieces(self, sector_bytes: int | None, links: bool = True) -> list[_Piece]:
        """Every item that may be lost independently, in issue order per file; writes cut
        at ``sector_bytes`` boundaries when given (torn); without ``links`` no directory
        change (test6 makes them at once)."""
        items = [_Piece(-1, link=link) for link in self.dir_pending] if links else []
        inos = sorted(set(self.durable_names.values()) | {i for _, _, i in self.dir_pending})
        for ino in inos:
            for op in self.pending[ino]:
                if sector_bytes is None or op.kind != "write":
                    items.append(_Piece(ino, op))
                    continue
                start, end = op.offset_bytes, op.offset_bytes + len(op.data)
                while start < end:
                    base = start // sector_bytes * sector_bytes
                    cut = min(end, base + sector_bytes)
                    # a piece as long as a sector is the whole, aligned sector
                    partial = cut - start != sector_bytes
                    damage = (base, base + sector_bytes) if partial else None
                    items.append(_Piece(ino, op, start, cut, damage))
                    start = cut
        return items

    def build(
        self,
        items: list[_Piece],
        actions: list[int],
        garbage: Callable[[int, int], bytes] | None = None,
        sector_bytes: int = 0,
        names_as_issued: bool = False,
    ) -> tuple[tuple[str, bytes], ...]:
        """The state with item ``k`` lost, kept or trashed as ``actions[k]`` says
        (:data:`_LOST`, :data:`_KEPT`, :data:`_TRASHED`). ``garbage(k, n)``: ``n`` random
        bytes for item ``k`` (a destroyed sector holds them instead of zeros; a trashed
        write's sectors of ``sector_bytes``). ``names_as_issued``: every directory change
        made at once (test6), else as the items say."""
        names = dict(self.names if names_as_issued else self.durable_names)
        data = {i: bytearray(self.durable[i]) for i in range(len(self.durable))}
        for k, item in enumerate(items):
            keep = actions[k] == _KEPT
            if actions[k] == _TRASHED:
                assert item.op is not None and garbage is not None
                first = item.op.offset_bytes // sector_bytes
                last = (item.op.offset_bytes + len(item.op.data) - 1) // sector_bytes
                for n in range(first, last + 1):
                    trash = garbage(k * 65536 + n - first, sector_bytes)
                    _apply(data[item.ino], Op("write", offset_bytes=n * sector_bytes, data=trash))
                continue
            if item.link is not None:
                created, name, ino = item.link
                if keep and created:
                    names[name] = ino
                elif keep and names.get(name) == ino:
                    del names[name]
                continue
            assert item.op is not None
            buf = data[item.ino]
            if item.end == 0:  # a whole op
                if keep:
                    _apply(buf, item.op)
            elif keep:
                rel = item.start - item.op.offset_bytes
                piece = item.op.data[rel : rel + item.end - item.start]
                _apply(buf, Op("write", offset_bytes=item.start, data=piece))
            elif item.damage is not None:
                base, stop = item.damage[0], min(item.damage[1], len(buf))
                size = max(0, stop - base)
                buf[base:stop] = bytes(size) if garbage is None else garbage(k, size)
        return tuple(sorted((n, bytes(data[i])) for n, i in names.items()))


def crash_states(
    trace: Trace,
    model: str,
    *,
    semantics: str = "linux",
    sector_bytes: int = 512,
    max_states: int = DEFAULT_MAX_STATES,
    samples: int = DEFAULT_SAMPLES,
    seed: int = 0,
) -> Iterator[CrashState]:
    """Every crash state of ``trace`` under ``model`` (:data:`MODELS`) and ``semantics``
    (:data:`SEMANTICS`), point by point. Raises ValueError for an unknown model or
    semantics; callers check :func:`invalid_reason` first."""
    if model not in MODELS:
        raise ValueError(f"unknown persistence model {model!r}")
    if semantics not in SEMANTICS:
        raise ValueError(f"unknown semantics {semantics!r}")
    fs = _Fs(semantics)
    points = set(crash_points(trace))
    acked: list[int] = []
    prefix: list[tuple[int, tuple[tuple[str, bytes], ...]]] = []
    for i in range(len(trace.ops) + 1):
        if i in points:  # crash_points: none before the barrier
            yield from _states_at(
                trace, model, fs, i, tuple(acked), prefix, sector_bytes, max_states, samples, seed
            )
        if i == len(trace.ops):
            break
        op = trace.ops[i]
        changed = fs.apply(op)
        if op.kind == "ack":
            acked.append(op.seq)
        if fs.floor_changed:
            prefix = [(i + 1, fs.issued())]
        elif changed and prefix:
            prefix.append((i + 1, fs.issued()))


def _states_at(
    trace: Trace,
    model: str,
    fs: _Fs,
    point: int,
    acked: tuple[int, ...],
    prefix: list[tuple[int, tuple[tuple[str, bytes], ...]]],
    sector_bytes: int,
    max_states: int,
    samples: int,
    seed: int,
) -> Iterator[CrashState]:
    where = (
        f"before op {point} ({trace.ops[point].describe()})"
        if point < len(trace.ops)
        else "after the last op"
    )
    if model == "synced-only":
        yield CrashState(point, fs.synced(), acked, f"synced-only, cut {where}")
        return
    if model == "prefix":
        for done, files in prefix:
            yield CrashState(point, files, acked, f"prefix of the first {done} ops, cut {where}")
        return
    test6 = model == "test6"
    torn = model in ("torn", "torn-garbage")
    items = fs.pieces(sector_bytes if torn else None, links=not test6)
    # test6: a write may also be trashed, a truncation only kept or lost
    radix = [
        3 if test6 and item.op is not None and item.op.kind == "write" else 2 for item in items
    ]
    total = 1
    for r in radix:
        total *= r
    sampled = total > max(max_states, samples + 2)  # never more draws than states
    name = f"{seed}/{trace.pragmas.label}/{model}/{point}"
    if not sampled:
        choices = [_digits(n, radix) for n in range(total)]
    else:
        rng = random.Random(name)
        if test6:
            drawn = [[_test6_action(rng, r) for r in radix] for _ in range(samples)]
        else:  # one mask per state, as before test6 existed: a seed keeps its figures
            masks = (rng.getrandbits(len(items)) for _ in range(samples))
            drawn = [[m >> k & 1 for k in range(len(items))] for m in masks]
        choices = [[_LOST] * len(items), [_KEPT] * len(items), *drawn]
    noisy = model in ("torn-garbage", "test6")
    for actions in choices:
        label = _label(actions, test6)
        garbage = _garbage(f"{name}/{label}") if noisy else None
        yield CrashState(
            point,
            fs.build(items, actions, garbage, sector_bytes, names_as_issued=test6),
            acked,
            f"{model}, cut {where}: {label} of {len(items)}"
            + (f" (seed {seed})" if sampled or noisy else ""),
            sampled=sampled,
        )


def _digits(n: int, radix: list[int]) -> list[int]:
    """``n`` in the mixed radix ``radix``, least significant first (item 0 first)."""
    out = []
    for r in radix:
        n, d = divmod(n, r)
        out.append(d)
    return out


def _test6_action(rng: random.Random, radix: int) -> int:
    """One item's action with test6's odds (writeListSync): a random byte r; trash when
    r & 6 == 6 (never for a truncation), else left out when r & 1, else written."""
    r = rng.getrandbits(8)
    if radix == 2:
        r &= 0x01
    if r & 0x06 == 0x06:
        return _TRASHED
    return _LOST if r & 0x01 else _KEPT


def _label(actions: list[int], test6: bool) -> str:
    """How the items were drawn: ``kept items 0x5`` (bit k: item k kept) or, for test6,
    ``actions KLT`` (item 0 first: K kept, L lost, T trashed)."""
    if test6:
        return "actions " + "".join("LKT"[a] for a in actions)
    return f"kept items {sum(1 << k for k, a in enumerate(actions) if a == _KEPT):#x}"


def _garbage(name: str) -> Callable[[int, int], bytes]:
    """Random bytes seeded from ``name`` and the item: the same state gives the same
    garbage."""

    def garbage(k: int, n: int) -> bytes:
        return random.Random(f"{name}/{k}").randbytes(n)

    return garbage
