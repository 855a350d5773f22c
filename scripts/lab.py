#!/usr/bin/env python3
"""The proving ground (lab/README.md): drives whose truth is known, cut for real.

Each scenario runs real power cuts of the lab drive (lab/drive.py behind nbdkit; a cut is a
SIGKILL of nbdkit, which loses the drive's volatile cache) and checks what the image kept
against what the drive's mode says must be kept. One line per scenario, then
``lab: N/N agree``; exit 0 when all agree, 1 when one does not, 2 when this machine lacks
a part (named).

The drive scenarios cut the drive directly (issue 30, item 1); the powercut scenarios
(items 4 and 7, lab/powercuts.py) run ``fsyncbench powercut cycle`` with the writer in a
guest on an honest and on a lying drive, ``--powercut-cycles`` real cuts each (about a
minute per cut here).

    python3 scripts/lab.py [--cuts N] [--seed S] [--only drive|powercut] [--powercut-cycles N]
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lab"))

import cuts


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
        "--only", choices=("drive", "powercut"), help="run only these scenarios (default: all)"
    )
    ap.add_argument(
        "--powercut-cycles",
        type=int,
        default=2,
        help="real cuts per powercut scenario (default 2)",
    )
    ap.add_argument(
        "--powercut-nvme-cuts",
        type=int,
        default=0,
        help="also cut an honest drive attached as NVMe this many times (QEMU drops FUA)",
    )
    args = ap.parse_args()
    if args.cuts < 1:
        print("lab: --cuts must be at least 1", file=sys.stderr)
        return 2
    if args.powercut_cycles < 1 or args.powercut_nvme_cuts < 0:
        print(
            "lab: --powercut-cycles must be at least 1, --powercut-nvme-cuts 0 or more",
            file=sys.stderr,
        )
        return 2
    missing = cuts.missing_parts()
    if missing:
        print(f"lab: {missing}", file=sys.stderr)
        return 2
    rng = random.Random(args.seed)
    agree = 0
    scenarios = _scenarios(args.cuts) if args.only in (None, "drive") else []
    total = len(scenarios)
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
    if args.only in (None, "powercut"):
        import powercuts

        missing = powercuts.missing_parts()
        if missing:
            print(f"lab: powercut: {missing}", file=sys.stderr)
            return 2
        for name, truth, said, ok in powercuts.lab_lines(
            args.seed, args.powercut_cycles, args.powercut_nvme_cuts
        ):
            agree += ok
            total += 1
            print(f"{'agree' if ok else 'DISAGREE':8}  {name}: {said}; truth: {truth}")
    print(f"lab: {agree}/{total} agree")
    return 0 if agree == total else 1


if __name__ == "__main__":
    sys.exit(main())
