#!/usr/bin/env python3
"""Mutation testing of fsyncbench's core with mutmut, and the score per module.

Usage: python scripts/mutation.py [MODULE ...] [--report-only] [--survivors]

MODULE is a dotted name under fsyncbench (``stats``, ``judge.devices``); default: every
module in ``[tool.mutmut] only_mutate`` of pyproject.toml (the verdict rules, statistics,
the durable store, compare, redaction, gates, powercut's ranges and verify with its journal
and judgement, interval formatting). mutmut (https://mutmut.readthedocs.io,
``pip install -e '.[mutation]'``) changes one thing at a time in a copy of the package
under ``mutants/`` (a comparison, a constant, a string, a removed call) and runs, for each
mutant, only the unit tests of ``pytest_add_cli_args_test_selection`` that call the mutated
function (it records which tests call which function first). A mutant the tests do not
notice "survived": a bug of that shape would pass the suite.

Prints one row per module: mutants, killed (a test failed, or the tests timed out),
survived, without a covering test, and the score = killed / (mutants - skipped), against
the target (issue 45, "Tests that catch bugs, round two": >= 90 % per module), then the
wall time.
A survivor listed in ``scripts/mutation_equivalent.txt`` (one per line: the mutant's name,
then why no test can tell it from the original) is counted as equivalent; any other survivor
is unclassed: a test is missing, or the list is.
``--survivors`` also prints each unclassed survivor's diff. mutmut keeps its results in
``mutants/`` (git-ignored): a second run re-tests only mutants of functions whose code
changed.

On this 2-core VM a full run of every configured module (about 21,000 mutants) takes several
hours; host/ alone (4,463) took two (docs/development.md, "Mutation testing", has the last
results). Not part of CI. Exits 0 when every module meets the target and no survivor is
unclassed, 1 otherwise, 2 when mutmut is missing or fails. Python >= 3.11 (tomllib).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import tomllib
from tabulate import tabulate

ROOT = Path(__file__).resolve().parent.parent
TARGET_PCT = 90.0
KILLED = {"killed", "timeout", "caught by type check", "segfault"}
EQUIVALENT_FILE = ROOT / "scripts" / "mutation_equivalent.txt"
RESULT = re.compile(r"^\s+(?P<mutant>(?P<name>[\w.ǁ]+)__mutmut_\d+): (?P<status>.+)$")


def configured_modules() -> list[str]:
    """Dotted module names (``stats``, ``judge.devices``) of pyproject's only_mutate
    globs that exist."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mutmut"]
    modules = []
    for pattern in config["only_mutate"]:
        for path in sorted(ROOT.glob(pattern)):
            if path.suffix == ".py" and path.name != "__init__.py":
                modules.append(
                    ".".join(path.relative_to(ROOT / "fsyncbench").with_suffix("").parts)
                )
    return modules


def equivalents(path: Path = EQUIVALENT_FILE) -> dict[str, str]:
    """Mutant name -> why it is equivalent, from ``path`` (``#`` starts a comment line)."""
    found = {}
    for line in path.read_text().splitlines() if path.exists() else []:
        if line.strip() and not line.startswith("#"):
            name, _, why = line.strip().partition(" ")
            found[name] = why.strip()
    return found


def module_of(mutant: str) -> str:
    """``fsyncbench.judge.devices.x_device_class`` or a method's
    ``fsyncbench.measure.stats.xǁClassǁmethod`` -> ``judge.devices``."""
    head = mutant.split(".x_")[0].split(".xǁ")[0]
    return head.removeprefix("fsyncbench.")


def mutmut(*args: str) -> subprocess.CompletedProcess:
    exe = shutil.which("mutmut") or str(Path(sys.executable).with_name("mutmut"))
    return subprocess.run([exe, *args], cwd=ROOT, capture_output=True, text=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", help="dotted module names (default: all configured)")
    parser.add_argument(
        "--report-only", action="store_true", help="print the last results without running mutmut"
    )
    parser.add_argument("--survivors", action="store_true", help="print each survivor's diff")
    args = parser.parse_args()
    known = configured_modules()
    modules = args.modules or known
    unknown = [m for m in modules if m not in known]
    if unknown:
        parser.error(
            f"not configured in pyproject's [tool.mutmut]: {', '.join(unknown)} "
            f"(configured: {', '.join(known)})"
        )
    if not Path(sys.executable).with_name("mutmut").exists() and shutil.which("mutmut") is None:
        print("mutation.py: mutmut is not installed: pip install -e '.[mutation]'", file=sys.stderr)
        return 2
    start = time.monotonic()
    if not args.report_only:
        patterns = [f"fsyncbench.{m}.*" for m in modules]
        proc = mutmut("run", *patterns)
        if proc.returncode != 0:
            print(proc.stdout[-2000:] + proc.stderr[-2000:], file=sys.stderr)
            return 2
    proc = mutmut("results", "--all", "true")
    by_module: dict[str, Counter] = {m: Counter() for m in modules}
    survivors: list[str] = []
    equivalent = equivalents()
    for line in proc.stdout.splitlines():
        m = RESULT.match(line)
        if not m or module_of(m["name"]) not in by_module:
            continue
        status = m["status"]
        if status == "survived" and m["mutant"] in equivalent:
            status = "equivalent"
        by_module[module_of(m["name"])][status] += 1
        if status == "survived":
            survivors.append(line.strip().split(":")[0])
    rows, met = [], True
    for module, counts in by_module.items():
        total = sum(counts.values()) - counts["skipped"]
        killed = sum(n for s, n in counts.items() if s in KILLED)
        score = 100.0 * killed / total if total else float("nan")
        met &= total > 0 and score >= TARGET_PCT and not counts["survived"]
        rows.append(
            [
                module,
                total,
                killed,
                counts["equivalent"],
                counts["survived"],
                counts["no tests"],
                counts["not checked"] + counts["suspicious"],
                f"{score:.1f} %" if total else "-",
            ]
        )
    print(
        tabulate(
            rows,
            headers=[
                "module",
                "mutants",
                "killed",
                "equivalent",
                "unclassed",
                "no test",
                "other",
                "score",
            ],
            tablefmt="simple",
        )
    )
    print(
        f"target: >= {TARGET_PCT:g} % killed per module and every survivor classed; "
        f"{'met' if met else 'NOT met'}; {len(survivors)} unclassed survivor(s)"
    )
    if args.survivors:
        for name in survivors:
            print()
            print(mutmut("show", name).stdout.rstrip())
    print(f"wall time: {time.monotonic() - start:.0f} s")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
