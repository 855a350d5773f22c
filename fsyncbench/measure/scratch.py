"""fsyncbench's working directories in the user's target: made fresh, owned, removed.

Every command that measures writes only inside a ``.fsyncbench-*`` subdirectory of the
target made by :func:`scratch_dir` and removes it on every exit it can catch. A run killed
by SIGKILL, a power cut or an OOM kill cannot clean up, so each directory holds an owner
record (``.owner.json``: pid, the process's start time, the boot id); a later run on the
same target finds such leftovers (:func:`sweep_leftovers`), removes those whose owner is
gone and leaves those of a live run alone, saying which.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fsyncbench.errors import FsyncbenchError

PREFIX = ".fsyncbench-"
OWNER_FILE = ".owner.json"
#: Process start times (s since the epoch) closer than this are the same process; psutil
#: derives them from clock ticks since boot, so two readings differ by rounding only.
START_TIME_SLACK_S = 1.0
#: Linux's id of this boot (proc(5)): a pid recorded before a reboot means nothing after it.
BOOT_ID_FILE = "/proc/sys/kernel/random/boot_id"


@contextlib.contextmanager
def scratch_dir(target: Path) -> Iterator[Path]:
    """A fresh ``.fsyncbench-*`` subdirectory of ``target`` holding this process's owner
    record, removed on exit (also on error and KeyboardInterrupt). Raises FsyncbenchError if
    it cannot be made. Every directory made is recorded with whether its removal worked
    (:func:`scratch_cleanup`), so an error message can say what is true."""
    path: Path | None = None
    parent_fd: int | None = None
    try:
        # Ctrl-C must not land between making it and owning it; one that came meanwhile is
        # raised as the signals are let through again, inside this try, so it is removed
        with _signals_held():
            try:
                path = Path(tempfile.mkdtemp(prefix=PREFIX, dir=target))
            except OSError as exc:
                raise FsyncbenchError(
                    f"cannot create a working directory in {target}: {exc.strerror}"
                ) from exc
            _SCRATCH[path] = False
            parent_fd = _open_dir(target)
            with contextlib.suppress(OSError):
                (path / OWNER_FILE).write_text(json.dumps(owner_record()))
        yield path
    finally:
        if path is not None:
            with _signals_held():  # nor in the middle of removing it
                _remove(path, parent_fd)


def _remove(path: Path, parent_fd: int | None) -> None:
    """Remove the working directory ``path`` (made in the directory ``parent_fd`` names)
    and record in :data:`_SCRATCH` whether that worked; closes ``parent_fd``."""
    where = _current_path(path, parent_fd)
    # where it was made and not followed: removed with the target, or still in it where
    # the target was moved (then it is not removed, and the message must not say so)
    lost = _moved_away(where, parent_fd)
    shutil.rmtree(where, ignore_errors=True)
    _SCRATCH[path] = _gone(where) and not lost
    if where != path and not _SCRATCH[path]:
        _SCRATCH.pop(path)
        _SCRATCH[where] = False
    if parent_fd is not None:
        os.close(parent_fd)


#: Signals a terminal or supervisor sends to end a run (they raise KeyboardInterrupt here).
STOP_SIGNALS = frozenset(
    getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT") if hasattr(signal, n)
)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Hold back the stop signals for a few system calls, so a working directory is never
    made without an owner record or left half removed: while held, a stop signal is only
    noted; it is raised again, to the handler that was in place, as the block ends.

    Done with Python-level handlers, not the thread's signal mask: a signal sent to the
    process (Ctrl-C in a terminal, ``kill``) goes to any thread that does not block it, and
    Python then runs its handler in the main thread anyway
    (https://docs.python.org/3/library/signal.html#signals-and-threads). Handlers can only
    be set in the main thread: elsewhere nothing is held (the main thread gets the signal
    and its handler runs there)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noted: list[int] = []
    old = {s: signal.signal(s, lambda signum, _frame: noted.append(signum)) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
        if noted:
            signal.raise_signal(noted[0])


def _open_dir(target: Path) -> int | None:
    """A descriptor of ``target`` (None where directories cannot be opened: Windows): it
    keeps naming the directory if someone renames it during the run."""
    try:
        return os.open(target, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return None


def _current_path(path: Path, parent_fd: int | None) -> Path:
    """Where the working directory ``path`` is now: if its parent was renamed (``mv`` of the
    target during a run), under the parent's new name (:func:`_fd_path`), else ``path`` as
    made."""
    if parent_fd is None or os.path.lexists(path):
        return path
    parent = _fd_path(parent_fd)
    if parent is None:
        return path
    now = parent / path.name
    return now if os.path.lexists(now) else path


#: fcntl command of macOS that returns a descriptor's path (<sys/fcntl.h>), and the size of
#: the buffer it fills (MAXPATHLEN, <sys/param.h>).
F_GETPATH = 50
MAXPATHLEN = 1024


def _fd_path(fd: int) -> Path | None:
    """The path a directory descriptor names now, wherever it was renamed: Linux's
    ``/proc/self/fd`` (proc(5)), macOS's fcntl(F_GETPATH) (fcntl(2)); None elsewhere or
    when neither answers."""
    if sys.platform == "darwin":
        import fcntl

        try:
            raw = fcntl.fcntl(fd, getattr(fcntl, "F_GETPATH", F_GETPATH), bytes(MAXPATHLEN))
        except OSError:
            return None
        name = raw.split(b"\0", 1)[0]
        return Path(os.fsdecode(name)) if name else None
    else:  # an if/else, so that mypy, checking for one platform, sees every branch
        try:
            return Path(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            return None


def _moved_away(path: Path, parent_fd: int | None) -> bool:
    """True when the working directory ``path`` is not where it was made but is still in its
    parent, the target (asked through the target's descriptor, fstatat(2)): the target was
    moved where :func:`_fd_path` could not follow it. False where no descriptor could be
    opened (Windows, which refuses to rename a directory while files in it are open)."""
    if parent_fd is None or os.path.lexists(path) or os.stat not in os.supports_dir_fd:
        return False
    try:
        os.stat(path.name, dir_fd=parent_fd, follow_symlinks=False)
    except OSError:
        return False
    return True


#: Working directories made by this process -> removed (True) or still there/unknown.
_SCRATCH: dict[Path, bool] = {}


def _gone(path: Path) -> bool:
    """True only when the kernel says ``path`` does not exist (ENOENT); any other error (a
    dead FUSE mount: ENOTCONN, EIO) means it may well still be there."""
    try:
        os.lstat(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return False


def scratch_cleanup() -> str:
    """What became of the working directories this process made, as a phrase for messages:
    "no working directory was made", "working directory removed", or "could not remove
    <paths>" (a dead mount, a renamed target, a permission change)."""
    if not _SCRATCH:
        return "no working directory was made"
    left = [str(p) for p, removed in _SCRATCH.items() if not removed]
    if not left:
        return "working directory removed"
    return "could not remove " + ", ".join(left)


def boot_id() -> str | None:
    """This boot's id: Linux's ``boot_id``, else the boot time from psutil; None if neither
    can be read."""
    try:
        return Path(BOOT_ID_FILE).read_text().strip()
    except OSError:
        pass
    try:
        import psutil

        return f"boot-time:{psutil.boot_time():.0f}"
    except Exception:  # psutil cannot read it on this platform
        return None


def owner_record() -> dict[str, Any]:
    """Who owns a working directory: pid, the process's start time (s since the epoch,
    psutil) and the boot id."""
    import psutil

    try:
        started = psutil.Process().create_time()
    except Exception:  # no process table access (a sandbox)
        started = None
    return {"pid": os.getpid(), "started": started, "boot_id": boot_id(), "written": time.time()}


@dataclass(frozen=True)
class Leftover:
    """A ``.fsyncbench-*`` directory found in a target: ``state`` is "dead" (its owner is
    gone: another boot, no such process, or the pid now belongs to another process), "alive"
    (its owner still runs) or "unknown" (no readable owner record: an older fsyncbench, or
    something else)."""

    path: Path
    state: str
    pid: int | None


def find_leftovers(target: Path) -> list[Leftover]:
    """The ``.fsyncbench-*`` directories in ``target`` not made by this process, with the
    state of their owner. Never raises: an unreadable target has none."""
    found = []
    try:
        entries = sorted(target.iterdir())
    except OSError:
        return []
    me = set(_SCRATCH)
    for path in entries:
        if not path.name.startswith(PREFIX) or path in me or not path.is_dir():
            continue
        try:
            record = json.loads((path / OWNER_FILE).read_text())
            pid = int(record["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            found.append(Leftover(path, "unknown", None))
            continue
        found.append(Leftover(path, _owner_state(record, pid), pid))
    return found


def _owner_state(record: dict[str, Any], pid: int) -> str:
    import psutil

    if record.get("boot_id") and boot_id() and record["boot_id"] != boot_id():
        return "dead"
    try:
        proc = psutil.Process(pid)
        started = proc.create_time()
    except psutil.NoSuchProcess:
        return "dead"
    except Exception:  # access denied: it exists, and may well be the owner
        return "alive"
    recorded = record.get("started")
    if isinstance(recorded, (int, float)) and abs(started - recorded) > START_TIME_SLACK_S:
        return "dead"  # the pid was reused
    return "alive"


def sweep_leftovers(target: Path) -> list[str]:
    """Remove the working directories in ``target`` whose owner is gone; one message per
    leftover found (removed, or left alone and why), for the CLI to show."""
    messages = []
    for left in find_leftovers(target):
        if left.state == "dead":
            shutil.rmtree(left.path, ignore_errors=True)
            done = "removed" if _gone(left.path) else "could not remove"
            messages.append(
                f"{done} {left.path}, left behind by a run that ended without "
                f"cleaning up (pid {left.pid}, no longer running)"
            )
        elif left.state == "alive":
            messages.append(
                f"another fsyncbench (pid {left.pid}) is working in {left.path.parent} "
                "now: two runs on one disk disturb each other's figures"
            )
        else:
            messages.append(
                f"left {left.path} alone: it has no owner record (an older "
                "fsyncbench, or not ours); remove it by hand if no run is using it"
            )
    return messages
