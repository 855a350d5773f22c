#!/usr/bin/env python3
"""Make examples/report/ again, so it cannot go stale.

    python scripts/example_report.py            # re-render the .md from the JSON there
    python scripts/example_report.py --measure  # a new default run (with earlier runs
                                                # behind its intervals) replaces the JSON

The Markdown is what ``fsyncbench show FILE --format markdown`` renders from the JSON today
(tests/test_example_report.py fails when it is not). Then the blocks of README.md and docs/
rendered from the example (its screen, its Prometheus lines) are made again with
``scripts/docs_sync.py`` (tests/test_docs_sync.py fails when they are stale). ``--measure`` takes ``--earlier N``
default runs of the same measurement in a scratch directory on the disk holding this
checkout, then the one kept, whose intervals include the spread between those runs, and
replaces every report in examples/report/ with it: the host facts a report records are then
read by today's code. Run it on a quiet machine (a disturbed run says so in the example).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "report"


def fsyncbench(*args: object) -> None:
    subprocess.run([sys.executable, "-m", "fsyncbench", *map(str, args)], check=True, cwd=ROOT)


def render(json_path: Path) -> Path:
    """The Markdown beside ``json_path``, rendered from it by the installed code."""
    md = json_path.with_suffix(".md")
    fsyncbench("show", json_path, "--format", "markdown", "--output", md)
    return md


def measure(earlier: int) -> Path:
    """``earlier`` + 1 default runs in a scratch directory beside this checkout; the last
    one's JSON moved into examples/report/ (the reports there before removed)."""
    with tempfile.TemporaryDirectory(dir=ROOT.parent, prefix=".fsyncbench-example-") as tmp:
        target, reports = Path(tmp) / "target", Path(tmp) / "reports"
        target.mkdir()
        for _ in range(earlier + 1):
            fsyncbench("run", target, "--report-dir", reports, "--quiet")
        newest = sorted(reports.glob("*Z.json"))[-1]
        for old in EXAMPLES.glob("*.json"):
            old.unlink()
            old.with_suffix(".md").unlink(missing_ok=True)
        kept = EXAMPLES / newest.name
        kept.write_bytes(newest.read_bytes())
    return kept


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--measure", action="store_true", help="take a new run first")
    parser.add_argument("--earlier", type=int, default=4, help="earlier runs (default 4)")
    args = parser.parse_args()
    if args.measure:
        measure(args.earlier)
    for path in sorted(EXAMPLES.glob("*.json")):
        print(render(path))
    subprocess.run([sys.executable, str(ROOT / "scripts" / "docs_sync.py")], check=True, cwd=ROOT)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
