"""What is expected of a pragma combination after a power cut, from two separate sources:
SQLite's documentation (and, where the documentation is silent, the platform's and SQLite's
source that the tool's own rules cite) and what the recorded calls of this SQLite build
show. ``fsyncbench powerloss`` prints them as two columns, each with its source (issue 31
item 6); the figures are compared with :func:`expected`: the documentation where it
states durability, else the observation.

Documentation: :func:`fsyncbench.judge.promises.documented` (the judge and every report
use the same words).

Observed: each acknowledged commit's last change (the commit point: the WAL frames, the
journal's unlink, truncation or zeroed header, the database pages) and whether the
recording shows a sync that covers it before the acknowledgement: a sync of the same file
for a write or truncation, a directory sync for an unlink or creation. Under ``macos``
semantics only a sync with SQLITE_SYNC_FULL (F_FULLFSYNC) counts, and no directory sync
does (unixDelete's is a plain fsync); under ``windows`` no directory sync is issued.
Nothing here prints.
"""

from __future__ import annotations

from fsyncbench.judge.promises import (
    DURABLE,
    NOT_DURABLE,
    NOT_STATED,
    SQLITE_JOURNAL_MODE_DOC,
    SQLITE_UNIX_DELETE_SRC,
    SQLITE_WIN_DELETE_SRC,
    documented,
)
from fsyncbench.model import PowerlossClaim as Claim
from fsyncbench.powerloss.trace import SQLITE_SYNC_FULL, Trace

__all__ = [
    "DURABLE",
    "NOT_DURABLE",
    "NOT_STATED",
    "SQLITE_JOURNAL_MODE_DOC",
    "SQLITE_UNIX_DELETE_SRC",
    "SQLITE_WIN_DELETE_SRC",
    "documented",
    "expected",
    "observed",
]

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
