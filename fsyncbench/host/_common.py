"""Facts every platform shares, plus small I/O helpers used by the platform modules.

This and ``_activity`` (the machine's load, read around each round) are the only modules of
the package that import the third-party packages ``psutil`` and ``cpuinfo`` (py-cpuinfo).
"""

from __future__ import annotations

import functools
import os
import platform
import socket
import sqlite3
import subprocess
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

from fsyncbench.model import Mount, StorageTarget, Virtualization

try:  # psutil is a project dependency; a broken install must still not crash collect_host.
    import psutil
except ImportError:  # pragma: no cover - exercised only without psutil
    psutil = None  # type: ignore[assignment]


class PlatformFacts(NamedTuple):
    """What a platform module (``_linux``, ``_darwin``, ``_windows``, ``_other``) adds to the
    common facts."""

    target: StorageTarget
    virtualization: Virtualization
    sqlite_library: str | None


def read_text(path: str) -> str | None:
    """Whole file as stripped text, or None when it is missing, unreadable or empty.

    Sysfs/procfs attribute files are small; undecodable bytes are replaced, never raised.
    """
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read().strip()
    except (OSError, ValueError):
        return None
    return text or None


def under_root(root: str, path: str) -> str:
    """``path`` (absolute, e.g. ``/sys/block``) re-based under ``root`` (``/`` = the real one)."""
    return os.path.join(root, path.lstrip("/"))


def run_command(argv: Sequence[str], timeout_s: float) -> tuple[int, bytes] | None:
    """Run ``argv`` without a shell; (exit code, stdout bytes), or None if it could not run
    or did not finish within ``timeout_s`` seconds. Never raises."""
    try:
        done = subprocess.run(
            list(argv),
            capture_output=True,
            timeout=timeout_s,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    return done.returncode, done.stdout


def is_within(path: str, mount_point: str) -> bool:
    """True when ``path`` is ``mount_point`` or below it, comparing whole path components
    (``/data`` contains ``/data/x`` but not ``/database``)."""
    if mount_point in ("/", ""):
        return path.startswith("/")
    mount_point = mount_point.rstrip("/")
    return path == mount_point or path.startswith(mount_point + "/")


def longest_prefix(path: str, mount_points: Iterable[str]) -> int | None:
    """Index of the mount point holding ``path`` (longest component-wise prefix).

    Ties (the same directory mounted twice) go to the later entry: mount tables list mounts
    in the order they were made, and the last one is on top.
    """
    best: int | None = None
    best_len = -1
    for index, mount_point in enumerate(mount_points):
        if is_within(path, mount_point) and len(mount_point) >= best_len:
            best, best_len = index, len(mount_point)
    return best


def disk_partitions() -> list[Any] | None:
    """``psutil.disk_partitions(all=True)``, or None when psutil is missing or fails.

    Source: https://psutil.readthedocs.io/en/latest/#psutil.disk_partitions
    """
    if psutil is None:
        # mypy types the name as the module; it is None when the import above failed
        return None  # type: ignore[unreachable]
    try:
        return list(psutil.disk_partitions(all=True))
    except Exception:  # psutil raises OSError subclasses and RuntimeError on odd systems
        return None


def backslashes_to_slashes(path: str) -> str:
    """``C:\\data`` -> ``C:/data``, so Windows paths compare component-wise like POSIX ones
    (:func:`psutil_mount`'s ``normalise``)."""
    return path.replace("\\", "/")


def psutil_mount(
    path: str,
    partitions: Sequence[Any] | None = None,
    normalise: Callable[[str], str] | None = None,
) -> Mount | None:
    """The mount holding ``path`` (longest component-wise prefix) among ``partitions``:
    objects with ``device``, ``mountpoint``, ``fstype``, ``opts`` as psutil returns them
    (default: :func:`disk_partitions`). ``normalise`` maps both sides before comparing
    (e.g. backslashes to slashes on Windows). None when nothing matches.
    """
    if partitions is None:
        partitions = disk_partitions()
    if not partitions:
        return None
    norm = normalise or (lambda text: text)
    index = longest_prefix(norm(path), [norm(p.mountpoint) for p in partitions])
    if index is None:
        return None
    part = partitions[index]
    return Mount(
        mount_point=part.mountpoint,
        fs_type=part.fstype or "",
        source=part.device or "",
        options=tuple(o for o in (part.opts or "").split(",") if o),
    )


@functools.lru_cache(maxsize=1)
def cpu_brand(proc_cpuinfo: str = "/proc/cpuinfo") -> str | None:
    """CPU brand string, computed once per process: the ``model name`` line of Linux's
    ``proc_cpuinfo`` where it has one (x86 and some ARM kernels print the brand there:
    https://www.kernel.org/doc/html/latest/filesystems/proc.html, "cpuinfo"), else
    py-cpuinfo's ``brand_raw``.

    ``cpuinfo.get_cpu_info()`` takes about a second (it runs itself in a subprocess), which
    the file read avoids on Linux. Source: https://github.com/workhorsy/py-cpuinfo#run-as-a-library
    """
    brand = proc_model_name(read_text(proc_cpuinfo))
    if brand:
        return brand
    try:
        import cpuinfo

        info = cpuinfo.get_cpu_info()
    except Exception:  # py-cpuinfo can fail in many platform-specific ways
        return None
    brand = str(info.get("brand_raw") or info.get("brand") or "").strip()
    return brand or None


def proc_model_name(cpuinfo_text: str | None) -> str | None:
    """The value of the first ``model name`` line of a /proc/cpuinfo text; None without one."""
    for line in (cpuinfo_text or "").splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() == "model name" and value.strip():
            return value.strip()
    return None


def sqlite_compile_options() -> tuple[str, ...]:
    """``PRAGMA compile_options`` of the SQLite library Python is linked with
    (https://www.sqlite.org/pragma.html#pragma_compile_options); () if it cannot be read."""
    try:
        conn = sqlite3.connect(":memory:")
        try:
            rows = conn.execute("PRAGMA compile_options").fetchall()
        finally:
            conn.close()
    except sqlite3.Error:
        return ()
    return tuple(str(row[0]) for row in rows)


def sqlite_extension_file() -> str | None:
    """Path of CPython's ``_sqlite3`` extension module (holds SQLite when statically linked)."""
    try:
        import _sqlite3
    except ImportError:
        return None
    return getattr(_sqlite3, "__file__", None)


def base_facts() -> dict[str, Any]:
    """Host facts that need no platform-specific code, as ``Host`` keyword arguments.

    Sources: :mod:`platform`, :mod:`socket`, :data:`sqlite3.sqlite_version`, psutil
    (``cpu_count``, ``virtual_memory().total`` in bytes), py-cpuinfo. Unknown values are None.
    """
    logical = physical = memory = None
    if psutil is not None:
        try:
            logical = psutil.cpu_count(logical=True)
            physical = psutil.cpu_count(logical=False)
        except Exception:
            pass
        try:
            memory = int(psutil.virtual_memory().total)
        except Exception:
            pass
    return {
        "hostname": socket.gethostname() or platform.node(),
        "os_name": platform.system(),
        "os_release": platform.release(),
        "os_version": platform.version(),
        "machine": platform.machine(),
        "python_version": platform.python_version(),
        "sqlite_version": sqlite3.sqlite_version,
        "sqlite_compile_options": sqlite_compile_options(),
        "cpu_brand": cpu_brand(),
        "cpu_count_logical": logical,
        "cpu_count_physical": physical,
        "memory_total_bytes": memory,
        "ld_preload": os.environ.get("LD_PRELOAD"),
    }
