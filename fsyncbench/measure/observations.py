"""What the audit observes without timing it (evidence 2 and 6 of
:mod:`fsyncbench.measure.evidence`): the sync calls each commit makes under every pragma
combination, seen by strace on a child process committing
(:func:`trace_syncs`, the child :func:`fsyncbench.measure.audit_workloads.trace_child`), and
the environment facts: what is preloaded into processes, ZFS's ``sync`` property, whether
strace is installed (:func:`environment_facts`). Each returns a model object of
:mod:`fsyncbench.model` for the report's ``evidence``.
"""

from __future__ import annotations

import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from fsyncbench.errors import FsyncbenchError
from fsyncbench.measure.audit_workloads import TRACE_MARK
from fsyncbench.measure.plan import EvidencePlan
from fsyncbench.model import EnvironmentFacts, Host, Pragmas, SyncTrace

#: Pragma combinations whose syncs per commit are traced (cheap: no timing under strace).
TRACE_MODES = ("DELETE", "TRUNCATE", "PERSIST", "WAL")
TRACE_SYNCS = ("OFF", "NORMAL", "FULL", "EXTRA")
TRACE_CONFIGS = tuple(Pragmas(m, s) for m in TRACE_MODES for s in TRACE_SYNCS)

#: The sync system calls a trace counts (syscalls(2)); ``?`` lets strace skip a name the
#: architecture lacks instead of failing (strace(1), "-e trace=").
SYNC_SYSCALLS = (
    "fsync",
    "fdatasync",
    "sync_file_range",
    "sync_file_range2",
    "syncfs",
    "sync",
    "msync",
)
STRACE_TIMEOUT_S = 120.0
ZFS_TIMEOUT_S = 5.0

#: Runs a command: (exit status, standard output), None when it could not run.
Runner = Callable[[list[str]], "tuple[int, bytes] | None"]


# --------------------------------------------------------------------------- 2. syncs per commit

_MARK = re.compile(re.escape(TRACE_MARK) + r"/(begin|end)/([A-Z]+/[A-Z]+)")
_CALL = re.compile(r"^(?:\[pid\s+\d+\]\s+|\d+\s+)?([a-z_0-9]+)\(")


def parse_strace(text: str) -> dict[str, collections.Counter[str]]:
    """Sync calls between the ``begin``/``end`` markers of each label in strace output
    (``-f``: lines may start with a pid). ``<... resumed>`` lines are not counted twice.
    Returns {label: Counter(call name -> count)}; a label without its end marker is
    dropped (the child failed there)."""
    counts: dict[str, collections.Counter[str]] = {}
    current: str | None = None
    pending: collections.Counter[str] = collections.Counter()
    for line in text.splitlines():
        mark = _MARK.search(line)
        if mark and "statfs" in line:
            which, label = mark.groups()
            if which == "begin":
                current, pending = label, collections.Counter()
            elif current == label:
                counts[label] = pending
                current = None
            continue
        call = _CALL.match(line)
        if current is not None and call and call.group(1) in SYNC_SYSCALLS:
            pending[call.group(1)] += 1
    return counts


def _child_env(ld_preload: str | None) -> dict[str, str]:
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parents[2])  # the folder holding fsyncbench/
    env["PYTHONPATH"] = package_root + (
        os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else ""
    )
    if ld_preload:
        env["LD_PRELOAD"] = ld_preload
    else:
        env.pop("LD_PRELOAD", None)
    return env


def trace_syncs(
    directory: Path,
    configs: Sequence[Pragmas],
    plan: EvidencePlan,
    strace: str,
    ld_preload: str | None,
) -> tuple[SyncTrace, ...]:
    """Sync calls per commit for each of ``configs``, observed by strace on a child Python
    process (with LD_PRELOAD ``ld_preload``) running :func:`fsyncbench.measure.audit_workloads.trace_child`
    in ``directory``. Raises FsyncbenchError with strace's or the child's first error line."""
    labels = [f"{p.journal_mode}/{p.synchronous}" for p in configs]
    with tempfile.NamedTemporaryFile("r", prefix="fsyncbench-strace-", suffix=".txt") as out:
        argv = [
            strace,
            "-f",
            "-qq",
            "-e",
            "signal=none",
            "-e",
            "trace=" + ",".join(["?" + s for s in SYNC_SYSCALLS] + ["statfs"]),
            "-o",
            out.name,
            sys.executable,
            "-c",
            "import sys; from fsyncbench.measure.audit_workloads import trace_child; trace_child(sys.argv[1:])",
            str(directory),
            str(plan.trace_commits),
            str(plan.payload_bytes),
            *labels,
        ]
        try:
            done = subprocess.run(
                argv,
                env=_child_env(ld_preload),
                capture_output=True,
                timeout=STRACE_TIMEOUT_S,
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise FsyncbenchError(f"strace could not run: {exc}") from exc
        if done.returncode != 0:
            lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
            raise FsyncbenchError(f"strace failed: {lines[-1] if lines else done.returncode}")
        counts = parse_strace(out.read())
    traces = []
    for p, label in zip(configs, labels):
        if label in counts:
            traces.append(
                SyncTrace(
                    p,
                    plan.trace_commits,
                    dict(sorted(counts[label].items())),
                    ld_preload=ld_preload or None,
                )
            )
    return tuple(traces)


# --------------------------------------------------------------------------- 6. environment


def parse_ld_so_preload(text: str | None) -> tuple[str, ...]:
    """Entries of /etc/ld.so.preload: separated by whitespace or ':' (ld.so(8)); '#' starts
    a comment."""
    entries = []
    for line in (text or "").splitlines():
        line = line.split("#", 1)[0]
        entries += [e for e in re.split(r"[\s:]+", line) if e]
    return tuple(entries)


def preloaded_libraries(
    maps_text: str, named: Sequence[str], known: Sequence[str]
) -> tuple[str, ...]:
    """Mapped files (``/proc/self/maps``, proc(5): path is the sixth field) whose base name
    matches an entry of ``named`` (LD_PRELOAD, ld.so.preload) or contains one of ``known``."""
    wanted = {os.path.basename(n) for n in named if n}
    found: list[str] = []
    for line in maps_text.splitlines():
        fields = line.split(None, 5)
        if len(fields) < 6 or not fields[5].startswith("/"):
            continue
        path = fields[5].strip().removesuffix(" (deleted)")
        base = os.path.basename(path)
        if (base in wanted or any(k in base.lower() for k in known)) and path not in found:
            found.append(path)
    return tuple(found)


def parse_zfs_sync(result: tuple[int, bytes] | None) -> str | None:
    """``zfs get -H -o value sync DATASET`` output -> standard/always/disabled, else None."""
    if result is None or result[0] != 0:
        return None
    value = result[1].decode("utf-8", "replace").strip().splitlines()
    return (
        value[0].strip()
        if value and value[0].strip() in ("standard", "always", "disabled")
        else None
    )


def _run(argv: list[str]) -> tuple[int, bytes] | None:
    try:
        done = subprocess.run(
            argv, capture_output=True, timeout=ZFS_TIMEOUT_S, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.returncode, done.stdout


def environment_facts(
    host: Host,
    root: str = "/",
    environ: Mapping[str, str] | None = None,
    runner: Runner | None = None,
) -> EnvironmentFacts:
    """The audit's environment facts for ``host`` (see EnvironmentFacts); ``root`` re-bases
    /etc and /proc for tests. Never raises."""
    from fsyncbench.host.layers import SYNC_DISABLING_LIBS

    env = os.environ if environ is None else environ
    ld_so = parse_ld_so_preload(_read(os.path.join(root, "etc/ld.so.preload")))
    named = [p for p in re.split(r"[\s:]+", env.get("LD_PRELOAD", "")) if p] + list(ld_so)
    maps = _read(os.path.join(root, "proc/self/maps")) or ""
    zfs_sync = None
    mount = host.target.mount
    if mount is not None and mount.fs_type == "zfs":
        zfs = shutil.which("zfs") if runner is None else "zfs"
        if zfs:
            zfs_sync = parse_zfs_sync(
                (runner or _run)([zfs, "get", "-H", "-o", "value", "sync", mount.source])
            )
    return EnvironmentFacts(
        ld_so_preload=ld_so,
        preloaded_libraries=preloaded_libraries(maps, named, SYNC_DISABLING_LIBS),
        zfs_sync=zfs_sync,
        strace=shutil.which("strace"),
    )


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return None
