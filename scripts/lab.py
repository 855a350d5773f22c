#!/usr/bin/env python3
"""The proving ground (lab/README.md): drives whose truth is known, cut for real.

Each scenario runs real power cuts of the lab drive (lab/drive.py behind nbdkit; a cut is a
SIGKILL of nbdkit, which loses the drive's volatile cache) and checks what the image kept
against what the drive's mode says must be kept. One line per scenario, then
``lab: N/N agree``; exit 0 when all agree, 1 when one does not, 2 when this machine lacks
a part (named).

The drive scenarios cut the drive directly (issue 30, item 1). ``powerloss`` (item 5,
lab/simcheck.py) cuts a guest committing the step journal under four pragma combinations
and sets the real losses beside ``fsyncbench powerloss``'s prediction, one line per pragma
(root, QEMU and a Python with fsyncbench and apsw needed; about 20 s a cut here).

    python3 scripts/lab.py [--cuts N] [--seed S] [--only drive|powerloss] [--powerloss-cuts N]
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lab"))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # fsyncbench, for simcheck

import cuts
import simcheck


def _scenarios(n: int) -> list[tuple[str, str, dict[str, object], str]]:
    """(name, mode, cut options, the truth) per scenario."""
    return [
        ("honest drive, flush per record", "honest", {}, "nothing acknowledged lost"),
        (
            "honest drive, FUA writes, batches of 4",
            "honest",
            {"sync": "fua", "batch": 4},
            "nothing acknowledged lost",
        ),
        (
            "honest drive, 8-block cache (evicting)",
            "honest",
            {"cache_blocks": 8},
            "nothing acknowledged lost",
        ),
        ("write-through drive", "write-through", {}, "nothing acknowledged lost"),
        (
            "slow honest drive (2 ms flush)",
            "slow",
            {"flush_latency_ms": 2},
            "nothing acknowledged lost",
        ),
        (
            "lying drive (every FLUSH dropped)",
            "lying",
            {},
            "the acknowledged records still in its 1,024-block cache lost",
        ),
        (
            "sometimes-lying drive (every 2nd FLUSH)",
            "lying-sometimes",
            {"lie_every": 2},
            "only a record whose own flush was dropped",
        ),
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cuts", type=int, default=30, help="cuts per scenario (default 30)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the cut moments (default 0)")
    ap.add_argument(
        "--only", choices=("drive", "powerloss"), help="run only these scenarios (default: all)"
    )
    ap.add_argument(
        "--powerloss-cuts",
        type=int,
        default=20,
        help="guest cuts for powerloss vs real cuts, each cutting all four pragmas (default 20)",
    )
    args = ap.parse_args()
    for flag, value in (("--cuts", args.cuts), ("--powerloss-cuts", args.powerloss_cuts)):
        if value < 1:
            print(f"lab: {flag} must be at least 1", file=sys.stderr)
            return 2
    missing = cuts.missing_parts()
    if not missing and args.only != "drive":
        missing = simcheck.missing_parts()
    if missing:
        print(f"lab: {missing}", file=sys.stderr)
        return 2
    rng = random.Random(args.seed)
    agree = total = 0
    scenarios = _scenarios(args.cuts) if args.only != "powerloss" else []
    for name, mode, options, truth in scenarios:
        done = [cuts.cut(mode, rng, **options) for _ in range(args.cuts)]
        cache_blocks = int(str(options.get("cache_blocks", 1024)))
        ok = all(cuts.truth_holds(mode, c, cache_blocks) for c in done)
        agree += ok
        acked = sum(c.acked for c in done)
        lost = sum(len(c.lost) for c in done)
        print(
            f"{'agree' if ok else 'DISAGREE':8}  {name}: {args.cuts} cuts, {acked} records "
            f"acknowledged, {lost} lost; truth: {truth}"
        )
    total += len(scenarios)
    if args.only != "drive":
        start = time.perf_counter_ns()
        try:
            lines = simcheck.lab_lines(args.seed, args.powerloss_cuts)
        except (RuntimeError, OSError, subprocess.CalledProcessError) as exc:
            print(f"lab: powerloss vs real cuts failed: {exc}", file=sys.stderr)
            return 2
        took_s = (time.perf_counter_ns() - start) / 1e9
        for scenario, truth, said, ok in lines:
            agree += ok
            print(f"{'agree' if ok else 'DISAGREE':8}  {scenario}: {truth}; powerloss: {said}")
        total += len(lines)
        print(f"lab: powerloss vs real cuts took {took_s:.0f} s", file=sys.stderr)
    print(f"lab: {agree}/{total} agree")
    return 0 if agree == total else 1


if __name__ == "__main__":
    sys.exit(main())
