"""What is expected of a pragma combination after a power cut, from two separate sources:
SQLite's documentation (and, where the documentation is silent, the platform's and SQLite's
source that the tool's own rules cite) and what the recorded calls of this SQLite build
show. ``fsyncbench powerloss`` prints them as two columns, each with its source (issue 31
item 6); the figures are compared with :func:`expected`: the documentation where it
states durability, else the observation.

Documentation (https://www.sqlite.org/pragma.html#pragma_synchronous unless said):

- OFF: "the database might become corrupted if the operating system crashes or the
  computer loses power before that data has been written to the disk surface": not
  durable, may corrupt.
- NORMAL in WAL: "A transaction committed in WAL mode with synchronous=NORMAL might roll
  back following a power loss or system crash", and "WAL mode is safe from corruption with
  synchronous=NORMAL": not durable, consistent.
- NORMAL in a rollback mode: "sync at the most critical moments, but less often than in FULL
  mode. There is a very small (though non-zero) chance that a power failure at just the
  wrong time could corrupt the database": durability not stated, may corrupt.
- FULL: "ensures that all content is safely written to the disk surface prior to
  continuing. This ensures that an operating system crash or power failure will not
  corrupt the database": durable, consistent; except DELETE, where EXTRA "provides
  additional durability if the commit is followed closely by a power loss" by syncing the
  directory after the journal's unlink: durability at FULL not stated.
- EXTRA: as FULL, durable, DELETE included.
- journal_mode OFF and MEMORY (https://www.sqlite.org/pragma.html#pragma_journal_mode):
  "If the application crashes in the middle of a transaction when the OFF journaling mode
  is set, then the database file will very likely go corrupt" (MEMORY: likewise): may
  corrupt; durability not stated.
- macOS without fullfsync: Apple's fsync(2), "the disk drive may not have written the data
  to permanent storage": not durable, may corrupt. macOS DELETE with fullfsync: os_unix.c
  unixDelete syncs the directory with a plain fsync (source, not documentation): not
  durable. Windows DELETE: os_win.c winDelete ignores syncDir (source): not durable.

Observed: each acknowledged commit's last change (the commit point: the WAL frames, the
journal's unlink, truncation or zeroed header, the database pages) and whether the
recording shows a sync that covers it before the acknowledgement: a sync of the same file
for a write or truncation, a directory sync for an unlink or creation. Under ``macos``
semantics only a sync with SQLITE_SYNC_FULL (F_FULLFSYNC) counts, and no directory sync
does (unixDelete's is a plain fsync); under ``windows`` no directory sync is issued.
Nothing here prints.
"""

from __future__ import annotations

from fsyncbench.judge.rule_facts import APPLE_FSYNC_DOC, SQLITE_SYNC_DOC
from fsyncbench.model import PowerlossClaim as Claim
from fsyncbench.model import Pragmas
from fsyncbench.powerloss.trace import SQLITE_SYNC_FULL, Trace

SQLITE_JOURNAL_MODE_DOC = "https://www.sqlite.org/pragma.html#pragma_journal_mode"
SQLITE_UNIX_DELETE_SRC = "https://www.sqlite.org/src/file/src/os_unix.c (unixDelete)"
SQLITE_WIN_DELETE_SRC = "https://www.sqlite.org/src/file/src/os_win.c (winDelete)"

#: Documented durability: promised, denied, or left open by the documentation.
DURABLE, NOT_DURABLE, NOT_STATED = "durable", "not durable", "not stated"


def documented(p: Pragmas, os_name: str) -> Claim:
    """What SQLite's documentation (or, where it is silent, the platform's documentation
    and SQLite's source) says of ``p`` on ``os_name`` (``platform.system()``)."""
    if os_name == "Darwin" and not p.fullfsync:
        return Claim(
            NOT_DURABLE,
            False,
            "on macOS without fullfsync SQLite's fsync stops at the drive's cache",
            APPLE_FSYNC_DOC,
        )
    if p.synchronous == "OFF":
        return Claim(
            NOT_DURABLE,
            False,
            "OFF: 'the database might become corrupted if the operating system crashes or the "
            "computer loses power before that data has been written to the disk surface'",
            SQLITE_SYNC_DOC,
        )
    if p.journal_mode in ("OFF", "MEMORY"):
        return Claim(
            NOT_STATED,
            False,
            f"journal_mode={p.journal_mode}: 'If the application crashes in the middle of a "
            "transaction ... the database file will very likely go corrupt'",
            SQLITE_JOURNAL_MODE_DOC,
        )
    if p.synchronous == "NORMAL" and p.journal_mode == "WAL":
        return Claim(
            NOT_DURABLE,
            True,
            "'A transaction committed in WAL mode with synchronous=NORMAL might roll back "
            "following a power loss'; 'WAL mode is safe from corruption with "
            "synchronous=NORMAL'",
            SQLITE_SYNC_DOC,
        )
    if p.synchronous == "NORMAL":
        return Claim(
            NOT_STATED,
            False,
            "NORMAL syncs 'at the most critical moments, but less often than in FULL mode'; "
            "'a very small (though non-zero) chance' of corruption after a power failure",
            SQLITE_SYNC_DOC,
        )
    if os_name == "Windows" and p.journal_mode == "DELETE":
        return Claim(
            NOT_DURABLE,
            True,
            "SQLite's Windows VFS never syncs the directory after deleting the journal "
            "(winDelete ignores syncDir; source, not documentation)",
            SQLITE_WIN_DELETE_SRC,
        )
    if os_name == "Darwin" and p.journal_mode == "DELETE":
        return Claim(
            NOT_DURABLE,
            True,
            "on macOS unixDelete syncs the directory with a plain fsync even with fullfsync "
            "(source, not documentation), which stops at the drive's cache",
            SQLITE_UNIX_DELETE_SRC + "; " + APPLE_FSYNC_DOC,
        )
    if p.synchronous == "FULL" and p.journal_mode == "DELETE":
        return Claim(
            NOT_STATED,
            True,
            "FULL 'will not corrupt the database'; only EXTRA syncs the directory after the "
            "journal's unlink, which 'provides additional durability if the commit is "
            "followed closely by a power loss'",
            SQLITE_SYNC_DOC,
        )
    like = "EXTRA is 'like FULL'; FULL" if p.synchronous == "EXTRA" else "FULL"
    return Claim(
        DURABLE,
        True,
        f"{like}: 'all content is safely written to the disk surface prior to continuing'; "
        "'will not corrupt the database'",
        SQLITE_SYNC_DOC,
    )


_WHAT = {"write": "write", "truncate": "truncation", "delete": "unlink", "create": "creation"}
_ROLE = {"main-db": "database", "journal": "journal", "wal": "WAL"}


def observed(trace: Trace, semantics: str) -> Claim:
    """What the recording shows: whether each acknowledged commit's last change is covered
    by a sync before its acknowledgement, under ``semantics`` (module docstring). Durable
    when every one is; the consistency is not observed (None)."""
    roles = dict(trace.roles)
    unsynced: dict[str, int] = {}
    commits = 0
    last: tuple[str, str] | None = None  # (kind, file) of the latest change
    covered = True
    for op in trace.ops[trace.barrier_index + 1 :]:
        if op.kind in _WHAT:
            last, covered = (op.kind, op.file), False
        elif op.kind == "sync" and last is not None and last[1] == op.file:
            if last[0] in ("write", "truncate"):
                full = op.flags & 0x0F == SQLITE_SYNC_FULL
                covered = covered or semantics != "macos" or full
        elif op.kind == "dirsync" and last is not None and last[0] in ("delete", "create"):
            covered = covered or semantics == "linux"
        elif op.kind == "ack":
            commits += 1
            if last is not None and not covered:
                kind, name = last
                role = _ROLE.get(roles.get(name, ""), "file")
                what = f"the {role}'s {_WHAT[kind]}"
                unsynced[what] = unsynced.get(what, 0) + 1
    source = f"this recording (SQLite {trace.sqlite_version} through apsw, {semantics} semantics)"
    if not commits:
        return Claim(NOT_STATED, None, "no commit was acknowledged", source)
    if not unsynced:
        return Claim(
            DURABLE, None, f"each of the {commits} commit points was synced before its ack", source
        )
    told = "; ".join(
        f"{what} not synced before {n} of {commits} acks" for what, n in unsynced.items()
    )
    return Claim(NOT_DURABLE, None, told, source)


def expected(docs: Claim, seen: Claim) -> tuple[bool, bool, str]:
    """(durable, consistent, why) the figures are compared with: durable where the
    documentation says so, or says nothing and the recording shows every commit point
    synced; consistent unless the documentation says it may corrupt; ``why`` the reasons
    against, each with its source ("" when durable and consistent)."""
    durable = docs.durable == DURABLE or (docs.durable == NOT_STATED and seen.durable == DURABLE)
    consistent = docs.consistent is not False
    why = []
    if docs.durable == NOT_DURABLE or docs.consistent is False:
        why.append(f"{docs.why} ({docs.source})")
    if not durable and docs.durable == NOT_STATED:
        why.append(f"observed: {seen.why} ({seen.source})")
    return durable, consistent, "; ".join(why)
