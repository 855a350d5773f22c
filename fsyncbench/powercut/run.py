"""What a power-cut run leaves on the writer's disk, and how verify finds it again.

Unlike ``run``'s scratch directory, this must survive the power cut, so it lives in a fixed
subdirectory of the user's DIR::

    DIR/.fsyncbench-powercut/<run_id>/run.json                 the run record (durable)
    DIR/.fsyncbench-powercut/<run_id>/journal-<mode>-<sync>.db the step journal (+ -wal/-journal)

Nothing is removed automatically: verify needs it after the reboot. Delete the directory
when done.
"""

from __future__ import annotations

import hashlib
import json
import platform
import re
import signal
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fsyncbench.errors import FsyncbenchError
from fsyncbench.jsonable import from_jsonable, to_jsonable
from fsyncbench.measure.workloads import step_output
from fsyncbench.model import Host, Pragmas
from fsyncbench.report.store import write_durably

POWERCUT_DIRNAME = ".fsyncbench-powercut"
#: What a hello's host and dir may not hold (protocol.py checks printable text).
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f\ud800-\udfff]")
RUN_FILE = "run.json"
RUN_FORMAT = "fsyncbench-powercut-run"
RUN_VERSION = 1


@dataclass(frozen=True)
class RunRecord:
    """One writer run, written durably before the first commit and again at a clean stop.

    ``boot_id`` identifies the boot the writer ran in (None where the OS does not tell), so
    verify can say whether a reboot came between writing and verifying. ``stopped_utc`` is
    set only when the writer stopped cleanly (Ctrl-C, --max-commits or an error): then it
    was not running when the power went.
    """

    format: str
    version: int
    run_id: str
    started_utc: str
    pid: int
    boot_id: str | None
    target: str
    database: str
    listener: str
    requested: Pragmas
    effective: Pragmas
    primitive: str
    payload_bytes: int
    host: Host
    stopped_utc: str | None = None
    stop_reason: str | None = None
    last_committed_seq: int | None = None
    last_recorded_seq: int | None = None


def make_row(run_id: str, seq: int, payload_bytes: int) -> tuple[str, int, str, str, str]:
    """The step row of commit ``seq``, in the schema of :class:`workloads.JournalCommit`
    (``steps(run_id, seq, name, input_hash, output)``); verify rebuilds it to spot damage."""
    name = f"step-{seq}"
    input_hash = hashlib.sha256(f"{run_id}:{seq}:{name}".encode()).hexdigest()
    return (run_id, seq, name, input_hash, step_output(seq, payload_bytes))


def printable(text: str, limit: int) -> str:
    """``text`` with control characters as ``?``, cut to ``limit`` characters."""
    text = _UNPRINTABLE.sub("?", text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def writer_identity(hostname: str | None, target: Path) -> tuple[str, str]:
    """(host, dir) as a writer's ``hello`` names them to the listener: the host name
    (``?`` when unknown) and the resolved DIR, each printable and within the protocol's
    limits. verify compares its own with the listener's record of a run."""
    from fsyncbench.powercut import protocol

    return (
        printable(hostname or "?", protocol.MAX_HOST_CHARS),
        printable(str(target), protocol.MAX_DIR_CHARS),
    )


def this_hostname() -> str:
    """This machine's name as host facts give it (fsyncbench/host/_common.py)."""
    return socket.gethostname() or platform.node()


def powercut_root(target: Path) -> Path:
    return target / POWERCUT_DIRNAME


def save_run(run_dir: Path, record: RunRecord) -> None:
    """Write ``run.json`` durably (temp, fsync, rename, dir fsync)."""
    write_durably(run_dir / RUN_FILE, json.dumps(to_jsonable(record), indent=1) + "\n")


def load_run(run_dir: Path) -> RunRecord:
    """Read ``run.json``; FsyncbenchError if missing, unreadable or of a newer version."""
    path = run_dir / RUN_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FsyncbenchError(f"{path} does not exist") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise FsyncbenchError(
            f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}"
        ) from None
    if not isinstance(data, dict) or data.get("format") != RUN_FORMAT:
        raise FsyncbenchError(f"{path} is not an fsyncbench powercut run record")
    if not isinstance(data.get("version"), int) or data["version"] > RUN_VERSION:
        raise FsyncbenchError(f"{path} was written by a newer fsyncbench: upgrade fsyncbench")
    try:
        record: RunRecord = from_jsonable(RunRecord, data)
        return record
    except ValueError as exc:
        raise FsyncbenchError(f"{path} is not a valid run record: {exc}") from None


def find_runs(target: Path) -> list[tuple[Path, RunRecord | None]]:
    """Every run directory under ``target``, oldest first; the record is None when
    ``run.json`` is missing or unreadable."""
    root = powercut_root(target)
    if not root.is_dir():
        return []
    found: list[tuple[str, Path, RunRecord | None]] = []
    for d in root.iterdir():
        if not d.is_dir():
            continue
        try:
            rec: RunRecord | None = load_run(d)
        except FsyncbenchError:
            rec = None
        found.append((rec.started_utc if rec else "", d, rec))
    found.sort(key=lambda t: (t[0], t[1].stat().st_mtime))
    return [(d, rec) for _key, d, rec in found]


def boot_id() -> str | None:
    """An id that changes at every boot: Linux ``/proc/sys/kernel/random/boot_id``
    (proc(5)); macOS ``sysctl -n kern.boottime``; elsewhere (Windows) the boot's time to the
    second as psutil reads it (``boot-time:S``; before, None: verify could not tell that no
    power cut came between a killed writer and itself); None if unreadable."""
    if sys.platform.startswith("linux"):
        try:
            return Path("/proc/sys/kernel/random/boot_id").read_text().strip() or None
        except OSError:
            return None
    elif sys.platform == "darwin":
        try:
            out = subprocess.run(
                ["sysctl", "-n", "kern.boottime"], capture_output=True, text=True, timeout=2
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip() or None if out.returncode == 0 else None
    else:  # an if/elif/else, so that mypy, checking for one platform, sees every branch
        try:
            import psutil

            return f"boot-time:{psutil.boot_time():.0f}"
        except Exception:  # psutil cannot read it on this platform
            return None


def install_stop_handlers(stop: threading.Event) -> dict[int, Any]:
    """SIGINT/SIGTERM set ``stop`` instead of raising (main thread only); returns the
    handlers to give back to :func:`restore_handlers`."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    previous: dict[int, Any] = {}
    sigs = [signal.SIGINT] + ([signal.SIGTERM] if hasattr(signal, "SIGTERM") else [])
    for sig in sigs:
        previous[sig] = signal.signal(sig, lambda *_: stop.set())
    return previous


def restore_handlers(previous: dict[int, Any]) -> None:
    for sig, handler in previous.items():
        signal.signal(sig, handler)
