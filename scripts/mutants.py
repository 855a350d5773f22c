#!/usr/bin/env python3
"""fsyncbench's own mutants: one-line bugs of shapes mutmut does not make, each planted in a
copy of the repository and the fast tier run against it.

    python scripts/mutants.py                 # every mutant; a table of who killed it
    python scripts/mutants.py --list          # the mutants, without running anything
    python scripts/mutants.py NAME...         # only these
    python scripts/mutants.py --focus-only    # a survivor of its focus tests is not re-run
                                              # against the whole fast tier

mutmut (scripts/mutation.py) changes operators and constants one at a time. A real
regression often has another shape, and these are the ones planted here:

- **narrowed set**: a rule over a set of facts narrowed to one member (``RAM_FILESYSTEMS``
  to tmpfs alone): only a test that exercises every member notices;
- **all/any**: a quantifier over the devices of a stack flipped, so that one device with
  the property lends it to the rest (or one without it takes it from all);
- **removed guard**: a guard against pathological input removed (the storage walk's depth
  limit, its cycle guard, a line-length bound): only a test that builds that input notices;
- **knowledge**: a row of the device knowledge table made to match nothing;
- **slow tier only**: a bug only the slow tier caught before (a cut under macOS semantics
  taken as Linux's), which a fast test with an in-process recording must catch now.

Each mutant is a unique snippet of one file and its replacement. The repository (without
.git, .venv, mutants/) is copied once to a temporary directory; for each mutant the snippet
is replaced there, the mutant's focus tests run first (``pytest -x``, fast), and where they
pass the whole fast tier (plain ``pytest -x``) runs too; then the file is put back. The
copy is imported first (``PYTHONPATH``; checked before the first mutant), so the mutant is
what the tests and the CLI's child processes load.

Prints one row per mutant: its shape, where, and the first test that failed (killed), or
SURVIVED. Exits 0 when every mutant was killed, 1 when one survived, 2 when a snippet is not
found exactly once (the code moved: the mutant must be rewritten). Not part of CI: the
fast tier per survivor is minutes; killed mutants take seconds each.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tabulate import tabulate

ROOT = Path(__file__).resolve().parent.parent
SKIP = shutil.ignore_patterns(".git", ".venv", "mutants", "__pycache__", "*.egg-info", "build")


@dataclass(frozen=True)
class Mutant:
    """One planted bug: ``path`` (repository-relative), the unique ``old`` snippet and its
    ``new`` text, the ``shape`` it has, and the ``focus`` tests that should kill it."""

    name: str
    shape: str
    path: str
    old: str
    new: str
    focus: tuple[str, ...]


NARROWED, QUANTIFIER, GUARD, KNOWLEDGE = "narrowed set", "all/any", "removed guard", "knowledge"
SLOW_ONLY = "slow tier only"
LAYERS = "fsyncbench/host/layers.py"
DEVICES = "fsyncbench/judge/devices.py"
STACK_TESTS = (
    "tests/test_fact_tables.py",
    "tests/test_host_stack.py",
    "tests/test_stack_rules.py",
    "tests/test_cases.py",
)
JUDGE_TESTS = (
    "tests/test_fact_tables.py",
    "tests/test_device_quantifiers.py",
    "tests/test_boundaries.py",
    "tests/test_audit_evidence.py",
    "tests/test_protected_cache.py",
    "tests/test_device_knowledge.py",
)

MUTANTS: tuple[Mutant, ...] = (
    # ------------------------------------------------------------------ narrowed sets
    Mutant(
        "ram-filesystems",
        NARROWED,
        LAYERS,
        'RAM_FILESYSTEMS = frozenset({"tmpfs", "ramfs", "devtmpfs"})',
        'RAM_FILESYSTEMS = frozenset({"tmpfs"})',
        STACK_TESTS,
    ),
    Mutant(
        "no-barrier-options",
        NARROWED,
        LAYERS,
        'NO_BARRIER_OPTIONS = frozenset({"nobarrier", "barrier=0", "fsync_mode=nobarrier"})',
        'NO_BARRIER_OPTIONS = frozenset({"nobarrier"})',
        STACK_TESTS,
    ),
    Mutant(
        "sync-disabling-libs",
        NARROWED,
        LAYERS,
        'SYNC_DISABLING_LIBS = ("libeatmydata", "eatmydata", "libnosync", "disable-fsync", '
        '"nosync.so")',
        'SYNC_DISABLING_LIBS = ("libeatmydata",)',
        ("tests/test_fact_tables.py", "tests/test_audit_evidence.py", "tests/test_cases.py"),
    ),
    Mutant(
        "ram-transports",
        NARROWED,
        LAYERS,
        'RAM_TRANSPORTS = frozenset({"zram", "ram", "null_blk"})',
        'RAM_TRANSPORTS = frozenset({"zram"})',
        STACK_TESTS,
    ),
    Mutant(
        "network-transports",
        NARROWED,
        LAYERS,
        'NETWORK_TRANSPORTS = frozenset({"nbd", "rbd", "iscsi", "nvme-fabrics"})',
        'NETWORK_TRANSPORTS = frozenset({"nbd"})',
        STACK_TESTS,
    ),
    Mutant(
        "virtual-transports",
        NARROWED,
        LAYERS,
        'VIRTUAL_TRANSPORTS = frozenset({"virtio", "xen", "hyperv", "uml", "virtual"})',
        'VIRTUAL_TRANSPORTS = frozenset({"virtio"})',
        STACK_TESTS,
    ),
    Mutant(
        "file-backed-transports",
        NARROWED,
        LAYERS,
        'FILE_BACKED_TRANSPORTS = frozenset({"loop", "file-backed-virtual"})',
        'FILE_BACKED_TRANSPORTS = frozenset({"loop"})',
        (*STACK_TESTS, "tests/test_host_windows.py"),
    ),
    Mutant(
        "fua-primitives",
        NARROWED,
        "fsyncbench/judge/counter_rules.py",
        'FUA_PRIMITIVES = frozenset({"O_DSYNC", "O_SYNC"})',
        'FUA_PRIMITIVES = frozenset({"O_DSYNC"})',
        JUDGE_TESTS,
    ),
    Mutant(
        "raid-ok-states",
        NARROWED,
        "fsyncbench/host/_raidcli.py",
        '_OK_STATES = ("optimal", "ok", "okay", "ready", "charged", "zmm optimal")',
        '_OK_STATES = ("optimal",)',
        ("tests/test_fact_tables.py", "tests/test_protected_cache.py"),
    ),
    Mutant(
        "raid-failed-states",
        NARROWED,
        "fsyncbench/host/_raidcli.py",
        '_FAILED_STATES = ("failed", "absent", "not installed", "not present", "missing", '
        '"dead", "replace")',
        '_FAILED_STATES = ("failed",)',
        ("tests/test_protected_cache.py",),
    ),
    # ------------------------------------------------------------------ all <-> any
    Mutant(
        "controllers-every-disk",
        QUANTIFIER,
        DEVICES,
        "if not disks or any(c is None or not c.has_cache for c in found):",
        "if not disks or all(c is None or not c.has_cache for c in found):",
        JUDGE_TESTS,
    ),
    Mutant(
        "controller-protection-every-disk",
        QUANTIFIER,
        DEVICES,
        "    if not found or not all(\n        c.write_cache",
        "    if not found or not any(\n        c.write_cache",
        JUDGE_TESTS,
    ),
    Mutant(
        "reported-protection-every-disk",
        QUANTIFIER,
        DEVICES,
        "if not disks or not all(d.power_protection for d in disks):",
        "if not disks or not any(d.power_protection for d in disks):",
        (*JUDGE_TESTS, "tests/test_host_windows.py"),
    ),
    Mutant(
        "reported-nv-cache-every-disk",
        QUANTIFIER,
        DEVICES,
        "if all(POWER_PROTECTION_NV_CACHE in d.power_protection for d in disks):",
        "if any(POWER_PROTECTION_NV_CACHE in d.power_protection for d in disks):",
        (*JUDGE_TESTS, "tests/test_host_windows.py"),
    ),
    Mutant(
        "write-through-every-disk",
        QUANTIFIER,
        DEVICES,
        'if disks and all((d.write_cache or "").strip() == "write through" for d in disks):',
        'if disks and any((d.write_cache or "").strip() == "write through" for d in disks):',
        JUDGE_TESTS,
    ),
    Mutant(
        "plp-family-every-disk",
        QUANTIFIER,
        DEVICES,
        "    if disks and all(sources):",
        "    if disks and any(sources):",
        JUDGE_TESTS,
    ),
    Mutant(
        "spinning-every-disk",
        QUANTIFIER,
        DEVICES,
        "if disks and all(d.rotational for d in disks) and not host.virtualization.virtualized:",
        "if disks and any(d.rotational for d in disks) and not host.virtualization.virtualized:",
        JUDGE_TESTS,
    ),
    Mutant(
        "ssd-every-disk",
        QUANTIFIER,
        DEVICES,
        "if disks and all(d.rotational is False for d in disks):",
        "if disks and any(d.rotational is False for d in disks):",
        JUDGE_TESTS,
    ),
    Mutant(
        "hybrid-every-disk",
        QUANTIFIER,
        DEVICES,
        "if all(hybrids) and DECLARED_PLP not in declared_facts(host):",
        "if any(hybrids) and DECLARED_PLP not in declared_facts(host):",
        JUDGE_TESTS,
    ),
    Mutant(
        "write-back-any-disk",
        QUANTIFIER,
        "fsyncbench/judge/stack.py",
        'return any("back" in c for c in caches)',
        'return all("back" in c for c in caches)',
        (*STACK_TESTS, *JUDGE_TESTS),
    ),
    Mutant(
        "cloud-every-disk",
        QUANTIFIER,
        "fsyncbench/judge/platform_rules.py",
        "if not disks or not all(cloud_block(d) for d in disks):",
        "if not disks or not any(cloud_block(d) for d in disks):",
        JUDGE_TESTS,
    ),
    Mutant(
        "power-cut-every-disk",
        QUANTIFIER,
        "fsyncbench/judge/platform_rules.py",
        'if not disks or not all(x.startswith("lost") for x in results):',
        'if not disks or not any(x.startswith("lost") for x in results):',
        JUDGE_TESTS,
    ),
    Mutant(
        "all-ram-every-medium",
        QUANTIFIER,
        "fsyncbench/judge/rule_facts.py",
        "return bool(media) and all(layer.volatile is True for layer in media)",
        "return bool(media) and any(layer.volatile is True for layer in media)",
        (*STACK_TESTS, *JUDGE_TESTS),
    ),
    Mutant(
        "controller-write-through-any",
        QUANTIFIER,
        "fsyncbench/judge/cache_rules.py",
        "if any(c.write_cache == _WRITE_THROUGH for c in found):",
        "if all(c.write_cache == _WRITE_THROUGH for c in found):",
        JUDGE_TESTS,
    ),
    # ------------------------------------------------------------------ removed guards
    Mutant(
        "walk-depth-filesystem",
        GUARD,
        "fsyncbench/host/_stack.py",
        '        another one is never looked up again by its path)."""\n'
        "        if depth > MAX_DEPTH:\n            self._cut(depth)\n            return\n",
        '        another one is never looked up again by its path)."""\n',
        STACK_TESTS,
    ),
    Mutant(
        "walk-depth-block",
        GUARD,
        "fsyncbench/host/_stack.py",
        "        name = os.path.basename(directory)\n        if depth > MAX_DEPTH:\n            self._cut(depth)\n            return\n",
        "        name = os.path.basename(directory)\n",
        STACK_TESTS,
    ),
    Mutant(
        "walk-seen-devices",
        GUARD,
        "fsyncbench/host/_stack.py",
        "        if not name or name in self.seen:\n            return\n",
        "        if not name:\n            return\n",
        STACK_TESTS,
    ),
    Mutant(
        "line-length-bound",
        GUARD,
        "fsyncbench/powercut/protocol.py",
        "self._limit = limit",
        "self._limit = 1 << 62",
        ("tests/test_powercut.py", "tests/test_powercut_secret.py"),
    ),
    Mutant(
        "command-timeout",
        GUARD,
        "fsyncbench/host/_common.py",
        "            timeout=timeout_s,\n",
        "            timeout=None,\n",
        ("tests/test_host_linux.py", "tests/test_protected_cache.py"),
    ),
    # ------------------------------------------------------------------ caught by the slow tier alone before
    Mutant(
        "crash-cut-semantics",
        SLOW_ONLY,
        "fsyncbench/crash/power.py",
        "state = state_after_cut(trace, power.model, semantics=power.semantics)",
        'state = state_after_cut(trace, power.model, semantics="linux")',
        ("tests/test_crash_power_segments.py",),
    ),
    # ------------------------------------------------------------------ knowledge rows
    Mutant(
        "knowledge-qemu-nvme",
        KNOWLEDGE,
        "fsyncbench/host/device_knowledge.json",
        '"match": "\\\\bqemu nvme ctrl\\\\b"',
        '"match": "\\\\bqemu nvme ctrl-never\\\\b"',
        ("tests/test_device_knowledge.py",),
    ),
)


def _pytest(copy: Path, args: list[str]) -> tuple[bool, str]:
    """Run pytest in ``copy`` (its package first on the path); (passed, first failure)."""
    env = {**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *args],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
    )
    failed = re.search(r"^(?:FAILED|ERROR) (\S+)", proc.stdout, re.M)
    return proc.returncode == 0, failed.group(1) if failed else proc.stdout[-200:].strip()


def run(mutants: tuple[Mutant, ...], focus_only: bool) -> list[list[str]]:
    """Every mutant against a copy of the repository; one row per mutant."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="fsb-mutants-") as tmp:
        copy = Path(tmp) / "repo"
        shutil.copytree(ROOT, copy, ignore=SKIP, symlinks=True)
        probe = subprocess.run(
            [sys.executable, "-c", "import fsyncbench; print(fsyncbench.__file__)"],
            env={**os.environ, "PYTHONPATH": str(copy)},
            cwd=copy,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        if not probe.startswith(str(copy)):
            raise SystemExit(f"mutants: the copy is not imported first ({probe})")
        for m in mutants:
            target = copy / m.path
            original = target.read_text(encoding="utf-8")
            if original.count(m.old) != 1:
                raise SystemExit(
                    f"mutants: {m.name}: its snippet is in {m.path} "
                    f"{original.count(m.old)} times, not once: rewrite the mutant"
                )
            target.write_text(original.replace(m.old, m.new), encoding="utf-8")
            start = time.monotonic()
            try:
                passed, first = _pytest(copy, list(m.focus))
                where = "focus"
                if passed and not focus_only:
                    passed, first = _pytest(copy, [])
                    where = "fast tier"
            finally:
                target.write_text(original, encoding="utf-8")
            said = "SURVIVED" if passed else f"killed ({where}): {first}"
            rows.append([m.name, m.shape, m.path, said, f"{time.monotonic() - start:.0f} s"])
            print(" | ".join(rows[-1]), flush=True)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="only these mutants (default: all)")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument(
        "--focus-only", action="store_true", help="do not run the fast tier for survivors"
    )
    args = parser.parse_args()
    mutants = MUTANTS
    unknown = set(args.names) - {m.name for m in mutants}
    if unknown:
        parser.error(f"unknown mutants: {', '.join(sorted(unknown))}")
    chosen = tuple(m for m in mutants if not args.names or m.name in args.names)
    if args.list:
        print(tabulate([[m.name, m.shape, m.path] for m in chosen], ["mutant", "shape", "file"]))
        return 0
    rows = run(chosen, args.focus_only)
    print()
    print(tabulate(rows, ["mutant", "shape", "file", "result", "time"]))
    survived = sum(r[3] == "SURVIVED" for r in rows)
    print(f"\n{len(rows) - survived} of {len(rows)} killed")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
