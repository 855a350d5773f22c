#!/usr/bin/env python3
"""Speed of ``fsyncbench powerloss``: wall time and crash states checked per second.

Usage: python scripts/bench_powerloss.py DIR [--repeats N] [--models M] [--commits N]

Each repeat is a real ``python -m fsyncbench powerloss DIR --format json`` process, timed
around the process (start-up and imports included, as a user waits for them); the JSON
says how many states each configuration x model checked, how many of them were distinct
(checked once each: identical states are cached) and the tool's own measure of its matrix
time. Target (issue "Simulated power loss"): the default matrix (9 configurations x
synced-only and prefix) in <= 20 s on this VM. Recording never overlaps the timing of a
latency run (``run --powerloss`` records after it). This script reports; it asserts no
duration.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--models", default=None, help="as powerloss --model (default: its own)")
    parser.add_argument("--commits", type=int, default=None)
    args = parser.parse_args()
    cmd = [sys.executable, "-m", "fsyncbench", "powerloss", args.dir, "--format", "json", "-q"]
    if args.models:
        cmd += ["--model", args.models]
    if args.commits:
        cmd += ["--commits", str(args.commits)]
    walls, inner, rates = [], [], []
    for i in range(args.repeats):
        start = time.perf_counter_ns()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        wall = (time.perf_counter_ns() - start) / 1e9
        if proc.returncode != 0:
            print(proc.stderr, file=sys.stderr, end="")
            return 2
        data = json.loads(proc.stdout)
        states = sum(m["states"] for c in data["configs"] for m in c["models"])
        distinct = sum(m["distinct_states"] for c in data["configs"] for m in c["models"])
        matrix_s = data["elapsed_ns"] / 1e9
        walls.append(wall)
        inner.append(matrix_s)
        rates.append(states / matrix_s)
        print(
            f"repeat {i + 1}: {len(data['configs'])} configurations x {len(data['models'])} "
            f"models, {states} states ({distinct} distinct, opened by SQLite), "
            f"matrix {matrix_s:.2f} s, process {wall:.2f} s, {states / matrix_s:,.0f} states/s"
        )
    print(
        f"median of {args.repeats}: process {statistics.median(walls):.2f} s "
        f"(target <= 20 s), matrix {statistics.median(inner):.2f} s, "
        f"{statistics.median(rates):,.0f} states/s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
