#!/usr/bin/env python3
"""Benchmark of the kill matrix: wall time of the 120 SIGKILLs and their restarts.

Usage: python scripts/bench_crash.py [DIR] [--repeat N] [--journal-mode WAL] [--synchronous FULL]

Prints, per repetition, the elapsed wall time, kills/s and the journal's commit latency p50/p99
(fsyncbench.measure.stats), then the table. The issue's budget is 5 s for the 120 kills on a 2-core
machine; this script reports, it does not gate.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tabulate import tabulate

from fsyncbench import crash
from fsyncbench.measure.stats import summarize


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", nargs="?", default=tempfile.gettempdir(), type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--journal-mode", default="WAL")
    parser.add_argument("--synchronous", default="FULL")
    args = parser.parse_args()

    matrix = None
    for i in range(1, args.repeat + 1):
        matrix = crash.run_kill_matrix(args.dir, args.journal_mode, args.synchronous)
        seconds = matrix.elapsed_ns / 1e9
        summary = summarize(matrix.journal_commit_ns)
        print(
            f"run {i}: {matrix.kill_count} kills in {seconds:.2f} s "
            f"({matrix.kill_count / seconds:.1f} kills/s); journal commit "
            f"p50 {summary.p50_ns / 1e3:.0f} µs, p99 {summary.p99_ns / 1e3:.0f} µs "
            f"({summary.count} commits, {matrix.effective.label})"
        )
    assert matrix is not None
    print()
    print(tabulate(crash.kill_matrix_rows(matrix), headers="keys", tablefmt="github"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
