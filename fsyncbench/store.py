"""Versioned report JSON: durable saving and careful loading.

Saving follows the classic recipe for an atomic, durable replace: write a temp file in the
destination directory, fsync it, rename it over the final name, fsync the directory
(rename(2) is atomic within a filesystem; the directory fsync makes the rename itself
durable: https://lwn.net/Articles/457667/).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

from fsyncbench.errors import FsyncbenchError
from fsyncbench.model import Report, from_jsonable, to_jsonable

#: Version of the report format written by this fsyncbench. Loading a newer one is refused.
SCHEMA_VERSION = 1


def report_to_json(report: Report) -> str:
    """The report as indented JSON text."""
    return json.dumps(to_jsonable(report), indent=1, sort_keys=False) + "\n"


def report_from_json(text: str, source: str = "report") -> Report:
    """Parse report JSON. Raises FsyncbenchError (one line) when it is not JSON, not an
    fsyncbench report, of a newer schema, or missing fields."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FsyncbenchError(f"{source} is not valid JSON ({exc.msg} at line {exc.lineno})")
    if not isinstance(data, dict) or "schema_version" not in data:
        raise FsyncbenchError(f"{source} is not an fsyncbench report (no schema_version)")
    version = data["schema_version"]
    if not isinstance(version, int):
        raise FsyncbenchError(f"{source} has an invalid schema_version {version!r}")
    if version > SCHEMA_VERSION:
        raise FsyncbenchError(
            f"{source} uses report schema {version}, newer than this fsyncbench reads "
            f"({SCHEMA_VERSION}): upgrade fsyncbench"
        )
    try:
        return from_jsonable(Report, data)
    except ValueError as exc:
        raise FsyncbenchError(f"{source} is not a valid fsyncbench report: {exc}")


def load_report(path: Path) -> Report:
    """Read and parse a report file; errors as in :func:`report_from_json`."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FsyncbenchError(f"report {path} does not exist")
    except (OSError, UnicodeDecodeError) as exc:
        raise FsyncbenchError(f"cannot read report {path}: {getattr(exc, 'strerror', None) or exc}")
    return report_from_json(text, str(path))


def write_durably(path: Path, text: str) -> None:
    """Atomically and durably replace ``path`` with ``text`` (temp, fsync, rename, dir
    fsync). The temp file is removed on any error. Raises FsyncbenchError."""
    directory = path.parent
    fd, tmp = None, None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fd = None
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        tmp = None
        _fsync_dir(directory)
    except OSError as exc:
        raise FsyncbenchError(f"cannot write {path}: {exc.strerror or exc}")
    finally:
        if fd is not None:
            os.close(fd)
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _fsync_dir(directory: Path) -> None:
    """fsync a directory so a rename in it is durable (not possible on Windows)."""
    if os.name == "nt":
        return
    dfd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def check_output_dir(directory: Path) -> Path:
    """Check, without creating anything, that reports can be written to ``directory``: it
    is a writable directory, or its nearest existing ancestor is. Raises FsyncbenchError."""
    probe = directory
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if not probe.is_dir():
        raise FsyncbenchError(f"output {directory} is not a directory ({probe} is a file)")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise FsyncbenchError(f"output directory {directory} is not writable")
    return directory


def prepare_output_dir(directory: Path) -> Path:
    """Create ``directory`` (and parents) if needed. Raises FsyncbenchError."""
    check_output_dir(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FsyncbenchError(f"cannot create output directory {directory}: {exc.strerror}")
    return directory


def report_basename(report: Report) -> str:
    """``<host>-<UTC timestamp>`` with characters unsafe in file names replaced."""
    host = re.sub(r"[^A-Za-z0-9._-]+", "_", report.host.hostname) or "host"
    stamp = report.created_utc.replace(":", "").replace("-", "")
    return f"{host}-{stamp}"
