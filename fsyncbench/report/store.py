"""Versioned report JSON: durable saving and careful loading.

Saving follows the classic recipe for an atomic, durable replace: write a temp file in the
destination directory, fsync it, rename it over the final name, fsync the directory
(rename(2) is atomic within a filesystem; the directory fsync makes the rename itself
durable: https://lwn.net/Articles/457667/).
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as _dt
import errno
import json
import os
import re
import stat
import sys
import tempfile
import time
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fsyncbench.errors import FsyncbenchError
from fsyncbench.jsonable import from_jsonable, to_jsonable
from fsyncbench.model import EXPERIMENT_KINDS, Report
from fsyncbench.model import SCHEMA_VERSION as SCHEMA_VERSION  # re-exported (store.SCHEMA_VERSION)


def report_to_json(report: Report) -> str:
    """The report as indented JSON text; each raw-sample tuple (fields ending in
    ``samples_ns``) is written compactly: one of at least :data:`PACK_MIN_SAMPLES` samples
    packed into a string (:func:`pack_samples`), a shorter one as a list of numbers on one
    line.

    A default run's million samples took 8.8-10 MB as numbers, heavy to keep in a CI
    cache or attach to a review; packed, its report is about 1.3 MB. json's indenting
    encoder is pure Python and would hold every number as its own string before joining
    (~150 MB per million), so the samples never pass through it."""
    packed: list[tuple[Any, ...]] = []
    data = to_jsonable(_without_samples(report, packed))
    try:
        text = json.dumps(data, indent=1, allow_nan=False)
    except ValueError:
        raise FsyncbenchError(
            "the report holds a NaN or infinite number and cannot be saved as JSON"
        ) from None
    if packed:
        text = _PACKED.sub(lambda m: _samples_json(packed[int(m.group(1))]), text)
    return text + "\n"


#: Fewest samples packed into a string (:func:`pack_samples`); shorter tuples stay lists of
#: numbers a reader can see (a project choice: above it the numbers are unreadable anyway).
PACK_MIN_SAMPLES = 4096
#: How a packed tuple's string starts: the element width, then the encoding (module text of
#: :func:`pack_samples`).
_PACK_PREFIX = {4: "zb85-u32:", 8: "zb85-u64:"}


def _samples_json(values: tuple[Any, ...]) -> str:
    """One raw-sample tuple as JSON: packed (a string) from :data:`PACK_MIN_SAMPLES`
    samples of non-negative integers, else a compact list."""
    if len(values) >= PACK_MIN_SAMPLES:
        packed = pack_samples(values)
        if packed is not None:
            return '"' + packed + '"'
    return json.dumps(values, separators=(",", ":"))


def pack_samples(values: Sequence[int]) -> str | None:
    """Non-negative integer samples (ns) as one string: little-endian unsigned integers of
    4 bytes (8 when one needs it), their bytes regrouped by position (every sample's first
    byte, then every second byte: the blosc "shuffle" filter, which lets the compressor see
    the slowly varying high bytes together), compressed with zlib (RFC 1950) at level 9 and
    written in base85 (RFC 1924 alphabet, Python's ``base64.b85encode``: no character JSON
    must escape), after a prefix naming the width (``zb85-u32:`` or ``zb85-u64:``). Order
    and every value are kept exactly. None for values that are not all integers in
    [0, 2^64)."""
    try:
        a = np.asarray(values)
    except (OverflowError, ValueError):
        return None
    if a.ndim != 1 or a.dtype.kind not in "iu" or (a.size and int(a.min()) < 0):
        return None
    width = 4 if not a.size or int(a.max()) < (1 << 32) else 8
    planes = a.astype(f"<u{width}").view(np.uint8).reshape(-1, width).T.tobytes()
    return _PACK_PREFIX[width] + base64.b85encode(zlib.compress(planes, 9)).decode("ascii")


def unpack_samples(text: str) -> list[int]:
    """The samples :func:`pack_samples` packed. Raises ValueError for a string it did not
    write (unknown prefix, broken base85 or zlib data, a length not a whole number of
    samples)."""
    width = next((w for w, p in _PACK_PREFIX.items() if text.startswith(p)), None)
    if width is None:
        raise ValueError("a packed sample list must start with zb85-u32: or zb85-u64:")
    prefix = _PACK_PREFIX[width]
    try:
        raw = zlib.decompress(base64.b85decode(text[len(prefix) :]))
    except (ValueError, zlib.error) as exc:
        raise ValueError(f"a packed sample list cannot be decoded ({exc})") from None
    if len(raw) % width:
        raise ValueError("a packed sample list does not hold a whole number of samples")
    planes = np.frombuffer(raw, dtype=np.uint8).reshape(width, -1)
    values: list[int] = planes.T.copy().view(f"<u{width}").ravel().tolist()
    return values


def _unpack_all(data: Any) -> Any:
    """``data`` (parsed report JSON) with every packed sample string (a field ending in
    ``samples_ns`` whose value is a string starting "zb85-") replaced by its list, in
    place; any other string is left for the loader to refuse ("expected a list")."""
    if isinstance(data, dict):
        for k, v in data.items():
            if isinstance(v, str) and k.endswith("samples_ns") and v.startswith("zb85-"):
                try:
                    data[k] = unpack_samples(v)
                except ValueError as exc:
                    raise ValueError(f"{k}: {exc}") from None
            elif isinstance(v, (dict, list)):
                _unpack_all(v)
    elif isinstance(data, list):
        for v in data:
            if isinstance(v, (dict, list)):
                _unpack_all(v)
    return data


#: Placeholder of a packed sample tuple in the indented text (NUL cannot occur in a key or
#: value fsyncbench writes, so the pattern cannot match anything else).
_PACKED = re.compile(r'"\\u0000samples(\d+)\\u0000"')


def _without_samples(obj: Any, packed: list[tuple[Any, ...]]) -> Any:
    """``obj`` with every dataclass field ending in ``samples_ns`` (recursively) replaced by a
    placeholder string; the tuples are appended to ``packed``. Untouched parts are shared."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        changes: dict[str, Any] = {}
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name)
            if f.name.endswith("samples_ns") and isinstance(value, tuple):
                changes[f.name] = f"\x00samples{len(packed)}\x00"
                packed.append(value)
            elif isinstance(value, tuple) or dataclasses.is_dataclass(value):
                new = _without_samples(value, packed)
                if new is not value:
                    changes[f.name] = new
        return dataclasses.replace(obj, **changes) if changes else obj
    if isinstance(obj, tuple):
        new = tuple(_without_samples(v, packed) for v in obj)
        return new if any(a is not b for a, b in zip(new, obj)) else obj
    return obj


def report_from_json(text: str, source: str = "report") -> Report:
    """Parse report JSON. Raises FsyncbenchError (one line) when it is not JSON, not an
    fsyncbench report, of a newer schema, or missing fields."""
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as exc:
        raise FsyncbenchError(f"{source} is not valid JSON ({exc.msg}, line {exc.lineno})") from exc
    except ValueError as exc:  # e.g. an integer longer than Python's 4,300-digit limit
        raise FsyncbenchError(f"{source} is not a valid fsyncbench report ({exc})") from exc
    except RecursionError:
        raise FsyncbenchError(
            f"{source} is not a valid fsyncbench report (nested too deeply)"
        ) from None
    if not isinstance(data, dict) or "schema_version" not in data:
        raise FsyncbenchError(f"{source} is not an fsyncbench report (no schema_version)")
    version = data["schema_version"]
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise FsyncbenchError(f"{source} has an invalid schema_version {version!r}")
    if version > SCHEMA_VERSION:
        raise FsyncbenchError(
            f"{source} uses report schema {version}, newer than this fsyncbench reads "
            f"({SCHEMA_VERSION}): upgrade fsyncbench"
        )
    try:
        report: Report = from_jsonable(Report, _unpack_all(data))
        check_consistent(report)
    except ValueError as exc:
        raise FsyncbenchError(f"{source} is not a valid fsyncbench report: {exc}") from exc
    return report


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """json object hook: a key given twice is an error (which one would count?)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


#: Result kinds fsyncbench writes and reads (``Result.kind``).
RESULT_KINDS = ("commit", "flush", "write", "floor")


def check_consistent(report: Report) -> None:
    """Refuse what cannot be a measurement, beyond the types the loader checks: an unknown
    result kind or verdict word, summary counts that disagree with the raw samples, slices
    that do not add up to them, rounds not one per slice, an interval whose low bound lies
    above its high one, a creation time that is not ISO 8601, two results of one name.
    Raises ValueError naming the result and field."""
    from fsyncbench.model import PATH_VERDICTS

    try:  # Python 3.10's fromisoformat takes no "Z"
        _dt.datetime.fromisoformat(report.created_utc.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"created_utc: {report.created_utc!r} is not an ISO 8601 time") from None
    names = [r.name for r in report.results]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"results: {', '.join(twice)} measured twice in one report")
    verdicts = [report.verdict.path_verdict, *(v.path_verdict for v in report.verdict.results)]
    for word in verdicts:
        if word not in PATH_VERDICTS:
            raise ValueError(
                f"verdict: unknown path verdict {word!r} (known: {', '.join(PATH_VERDICTS)})"
            )
    for where, r in [
        *((f"results[{i}]", r) for i, r in enumerate(report.results)),
        *((f"floors[{i}]", r) for i, r in enumerate(report.floors)),
    ]:
        if r.kind not in RESULT_KINDS:
            raise ValueError(
                f"{where}.kind: unknown kind {r.kind!r} (known: {', '.join(RESULT_KINDS)})"
            )
        n = len(r.samples_ns)
        if n and r.summary.count != n:
            raise ValueError(f"{where}.summary.count: {r.summary.count}, but there are {n} samples")
        if n and r.slice_counts and sum(r.slice_counts) != n:
            raise ValueError(
                f"{where}.slice_counts: they add up to {sum(r.slice_counts)}, not the {n} samples"
            )
        if r.slice_rounds and len(r.slice_rounds) != len(r.slice_counts):
            raise ValueError(
                f"{where}.slice_rounds: {len(r.slice_rounds)} entries for "
                f"{len(r.slice_counts)} slices"
            )
        s = r.summary
        for name, ci, value in (
            ("p50_ci_ns", s.p50_ci_ns, s.p50_ns),
            ("p99_ci_ns", s.p99_ci_ns, s.p99_ns),
        ):
            if ci is not None and ci[0] > ci[1]:
                raise ValueError(
                    f"{where}.summary.{name}: low bound {ci[0]:g} above high bound {ci[1]:g}"
                )
            if ci is not None and not ci[0] * (1 - 1e-9) <= value <= ci[1] * (1 + 1e-9):
                raise ValueError(
                    f"{where}.summary.{name}: [{ci[0]:g}, {ci[1]:g}] does not hold "
                    f"the estimate {value:g} it is an interval of"
                )
        for name, iv in (("p50_interval", s.p50_interval), ("p99_interval", s.p99_interval)):
            if iv is not None and iv.bounds is not None and iv.bounds[0] > iv.bounds[1]:
                raise ValueError(f"{where}.summary.{name}: low bound above high bound")
            if iv is not None and iv.se_log is not None and iv.se_log < 0:
                raise ValueError(f"{where}.summary.{name}.se_log: negative")


#: Largest report file read (bytes): a million raw samples take about 8 MB of JSON as
#: numbers (reports of schema 4 and before), about 1.3 MB packed. A run stores at most
#: 200,000 samples per configuration (``measure.timing.MAX_SAMPLES``). Larger files are
#: refused rather than parsed into gigabytes of memory.
MAX_REPORT_BYTES = 256 << 20


#: A raw-sample list in report JSON (a field ending in ``samples_ns``: numbers only, so the
#: first "]" ends it; or a packed string, whose base85 alphabet has no quote or backslash;
#: inside a JSON string the quotes would be escaped and cannot match).
_SAMPLE_LIST = re.compile(r'("[A-Za-z_]*samples_ns"\s*:\s*)(?:\[[^\]]*\]|"zb85-u[0-9]+:[^"]*")')


def load_report(path: Path, samples: bool = True) -> Report:
    """Read and parse a report file (a regular file of at most MAX_REPORT_BYTES); errors
    as in :func:`report_from_json`. ``samples`` False leaves every raw-sample list empty
    (the summaries stay): about 8x faster on a report of a million samples, for reading
    its figures only."""
    text = _read_report_text(path)
    if not samples:
        text = _SAMPLE_LIST.sub(r"\1[]", text)
    return report_from_json(text, str(path))


def load_figures_if(path: Path, pattern: re.Pattern[str]) -> Report | None:
    """:func:`load_report` without the raw samples, or None, without parsing, when the
    file's text has no match of ``pattern`` (a search costs a few ms where parsing takes
    ~0.1 s: a filter for reading many reports, e.g. on the hostname). Errors as in
    :func:`load_report`."""
    text = _read_report_text(path)
    if not pattern.search(text):
        return None
    return report_from_json(_SAMPLE_LIST.sub(r"\1[]", text), str(path))


def _read_report_text(path: Path) -> str:
    """The text of report file ``path``: a regular file of at most MAX_REPORT_BYTES, in
    UTF-8. Raises FsyncbenchError (one line)."""
    try:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode):
            raise FsyncbenchError(f"report {path} is not a regular file")
        if st.st_size > MAX_REPORT_BYTES:
            raise FsyncbenchError(f"report {path} is larger than {MAX_REPORT_BYTES >> 20} MiB")
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FsyncbenchError(f"report {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise FsyncbenchError(
            f"cannot read report {path}: {getattr(exc, 'strerror', None) or exc}"
        ) from exc


def find_reports(directory: Path) -> list[Path]:
    """The report files under ``directory``: every ``*.json`` at any depth (symlinked
    directories are not followed), in path order. Raises FsyncbenchError when the directory
    cannot be read or holds none."""
    found: list[Path] = []

    def fail(exc: OSError) -> None:
        raise FsyncbenchError(f"cannot read directory {exc.filename or directory}: {exc.strerror}")

    for root, dirs, files in os.walk(directory, onerror=fail):
        dirs.sort()
        found += [Path(root) / f for f in sorted(files) if f.lower().endswith(".json")]
    if not found:
        raise FsyncbenchError(f"no report (*.json) under {directory}")
    return found


def is_stream(path: Path) -> bool:
    """True when ``path`` is a stream to write to in place, never to replace: a FIFO (a
    named pipe, ``-o >(gzip > r.gz)``), the null device (``-o /dev/null``), or the terminal or
    device this process already has as its standard input, output or error
    (``-o /dev/stderr``). Another character device (``/dev/mem``, ``/dev/nvme0``, a
    watchdog) is none: opening one can act on hardware."""
    try:
        st = path.stat()
    except OSError:
        return False
    if stat.S_ISFIFO(st.st_mode):
        return True
    if not stat.S_ISCHR(st.st_mode):
        return False
    if sys.platform == "win32":  # no st_rdev there: the null device by its name
        return path.name.lower() == os.devnull.lower()
    else:
        known = []
        for opened in (os.devnull, 0, 1, 2):
            try:
                known.append(os.stat(opened) if isinstance(opened, str) else os.fstat(opened))
            except OSError:
                continue
        return any(stat.S_ISCHR(k.st_mode) and k.st_rdev == st.st_rdev for k in known)


def write_durably(path: Path, text: str) -> None:
    """Atomically and durably replace ``path`` with ``text`` (temp, flush, rename, directory
    flush; each flush :func:`durable_sync`: F_FULLFSYNC on macOS, fsync elsewhere). The file gets mode 0666 less the umask (mkstemp's 0600 would hide a report meant
    for sharing); characters that cannot be encoded (undecodable file names) are written as
    backslash escapes. The temp file, ``.<name>.<random>.tmp`` beside ``path``, never ends
    in ``path``'s own suffix: a reader that picks files by suffix (node_exporter's textfile
    collector reads ``*.prom``) never sees it half-written. It is removed on any error.
    A stream (:func:`is_stream`: ``-o /dev/null``, ``-o /dev/stderr``, a named pipe) is not
    a file to replace: ``text`` is written to it as it is (never renamed over).
    Raises FsyncbenchError."""
    if is_stream(path):
        try:
            with open(path, "w", encoding="utf-8", errors="backslashreplace") as stream:
                stream.write(text)
        except OSError as exc:
            raise FsyncbenchError(f"cannot write {path}: {exc.strerror or exc}") from exc
        return
    directory = path.parent
    fd, tmp = None, None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
        if hasattr(os, "fchmod"):
            os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as fh:
            fd = None
            fh.write(text)
            fh.flush()
            durable_sync(fh.fileno())
        replace_durably(Path(tmp), path)
        tmp = None
        fsync_dir(directory)
    except OSError as exc:
        raise FsyncbenchError(f"cannot write {path}: {exc.strerror or exc}") from exc
    finally:
        if fd is not None:
            os.close(fd)
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def claim_name(directory: Path, base: str, suffixes: tuple[str, ...]) -> Path:
    """Reserve ``directory/<stem><suffix>`` for every suffix, where stem is ``base`` or
    ``base-2``, ``base-3``…: the first stem whose files could all be created exclusively
    (O_EXCL), so two runs finishing in the same second never overwrite each other. Returns
    ``directory/stem`` (no suffix); the placeholders are replaced by :func:`write_durably`.
    Raises FsyncbenchError."""
    for n in range(1, 10_000):
        stem = base if n == 1 else f"{base}-{n}"
        made = []
        try:
            for suffix in suffixes:
                target = directory / f"{stem}{suffix}"
                os.close(os.open(target, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
                made.append(target)
            return directory / stem
        except FileExistsError:
            for target in made:
                target.unlink(missing_ok=True)
        except OSError as exc:
            for target in made:
                target.unlink(missing_ok=True)
            raise FsyncbenchError(f"cannot write to {directory}: {exc.strerror or exc}") from exc
    raise FsyncbenchError(f"too many reports named {base}* in {directory}")


def fsync_dir(directory: Path) -> None:
    """Flush a directory (:func:`durable_sync`) so a rename or a new entry in it is durable
    (not possible on Windows). Raises OSError."""
    if os.name == "nt":
        return
    dfd = os.open(directory, os.O_RDONLY)
    try:
        durable_sync(dfd)
    finally:
        os.close(dfd)


#: Attempts of a rename on Windows while another process (an antivirus scanner, a search
#: indexer) holds the file open without FILE_SHARE_DELETE, and the wait before the n-th
#: retry (n x this, seconds): about 1.5 s in all. A project choice.
RENAME_ATTEMPTS = 6
RENAME_RETRY_S = 0.1
#: MoveFileExW flags (winbase.h): replace an existing file; return only once the move is
#: on the disk (https://learn.microsoft.com/en-us/windows/win32/api/winbase/nf-winbase-movefileexw).
MOVEFILE_REPLACE_EXISTING = 0x1
MOVEFILE_WRITE_THROUGH = 0x8


def replace_durably(src: Path, dst: Path) -> None:
    """Rename ``src`` over ``dst`` (same directory). POSIX: rename(2), atomic; the caller
    flushes the directory. Windows, which cannot flush a directory: MoveFileExW with
    MOVEFILE_WRITE_THROUGH, retried :data:`RENAME_ATTEMPTS` times while the file is held
    open by another process (PermissionError: ERROR_SHARING_VIOLATION, ERROR_ACCESS_DENIED).
    Raises OSError."""
    if sys.platform == "win32":
        for attempt in range(1, RENAME_ATTEMPTS + 1):
            try:
                _move_file_ex(src, dst)
                return
            except PermissionError:
                if attempt == RENAME_ATTEMPTS:
                    raise
                time.sleep(RENAME_RETRY_S * attempt)
    else:
        os.replace(src, dst)


def _move_file_ex(src: Path, dst: Path) -> None:
    """MoveFileExW(src, dst, REPLACE_EXISTING | WRITE_THROUGH); OSError (with winerror) on
    failure. Windows only."""
    if sys.platform == "win32":
        import ctypes

        kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
        flags = MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH
        if not kernel32.MoveFileExW(str(src), str(dst), flags):
            raise ctypes.WinError(ctypes.get_last_error())
    else:
        raise OSError(errno.ENOSYS, "MoveFileExW is Windows only")


#: fcntl command of macOS's full flush (<sys/fcntl.h>), where the fcntl module lacks it.
F_FULLFSYNC = 51


def durable_sync(fd: int) -> None:
    """Flush ``fd`` to stable media, as far as the platform lets a program ask: on macOS
    fcntl(F_FULLFSYNC), because a plain fsync there stops at the drive's write-back cache
    (Apple's fsync(2): "for applications that require tighter guarantees about the
    integrity of their data, Mac OS X provides the F_FULLFSYNC fcntl",
    https://developer.apple.com/library/archive/documentation/System/Conceptual/ManPages_iPhoneOS/man2/fsync.2.html),
    falling back to fsync where the volume refuses it, as SQLite's unixSync does
    (https://www.sqlite.org/src/file/src/os_unix.c, full_fsync); fsync elsewhere (Linux's
    fsync(2) flushes the device cache). Raises OSError."""
    if sys.platform == "darwin":
        import fcntl

        try:
            fcntl.fcntl(fd, getattr(fcntl, "F_FULLFSYNC", F_FULLFSYNC))
            return
        except OSError:
            pass  # a volume without F_FULLFSYNC (some network and FUSE filesystems)
    os.fsync(fd)


def check_output_dir(directory: Path) -> Path:
    """Check, before measuring, that reports can be written to ``directory``: it is a
    directory, or its nearest existing ancestor is, and a file can really be created there
    (an unnamed temporary file, so nothing appears; root passes permission checks even on
    /proc, hence the real attempt). Raises FsyncbenchError."""
    probe = directory
    while not probe.exists():
        if probe.is_symlink():
            raise FsyncbenchError(f"output {directory}: {probe} is a dangling symbolic link")
        if probe.parent == probe:
            break
        probe = probe.parent
    if not probe.is_dir():
        if probe == directory:
            raise FsyncbenchError(f"output {directory} is not a directory")
        what = "is a file" if probe.is_file() else "is not a directory"
        raise FsyncbenchError(f"output {directory} is not a directory ({probe} {what})")
    why = cannot_create_in(probe)
    if why:
        raise FsyncbenchError(f"output directory {directory} is not writable ({why})")
    return directory


def cannot_create_in(directory: Path) -> str | None:
    """Why a file cannot be created in ``directory`` (the error's text), or None when it
    can: found by creating (and at once removing) an unnamed temporary file there, since
    access(2) lets root through where the filesystem refuses (/proc, a read-only mount)."""
    try:
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as exc:
        return str(exc.strerror or exc)
    return None


def prepare_output_dir(directory: Path) -> Path:
    """Create ``directory`` (and parents) if needed. Raises FsyncbenchError."""
    check_output_dir(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FsyncbenchError(
            f"cannot create output directory {directory}: {exc.strerror}"
        ) from exc
    return directory


def report_basename(report: Report) -> str:
    """``<host>-<UTC timestamp>`` with characters unsafe in file names replaced; a report
    of kind crash or powerloss (:data:`fsyncbench.model.EXPERIMENT_KINDS`) ends in
    ``-crash`` or ``-powerloss``, so it is told from a run's at a glance."""
    kind = f"-{report.kind}" if report.kind in EXPERIMENT_KINDS else ""
    return (
        f"{_name_part(report.host.hostname, 'host')}-"
        f"{_name_part(report.created_utc.replace(':', '').replace('-', ''), 'time')}{kind}"
    )


def _name_part(text: str, fallback: str) -> str:
    """``text`` made safe as part of one file name: only letters, digits, ``.``, ``_`` and
    ``-`` (``/`` and ``..`` from a crafted report cannot leave the output directory), no
    leading dot, at most 100 characters."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", text).lstrip(".")[:100]
    return cleaned or fallback
