#!/usr/bin/env python3
"""The proving ground (lab/README.md): drives whose truth is known, cut for real.

Four groups of scenarios, each line a scenario against its truth, then ``lab: N/N agree``;
exit 0 when all agree, 1 when one does not, 2 when this machine lacks a part (named):

- ``drive`` (issue 30, item 1): real power cuts of the lab drive (lab/drive.py behind
  nbdkit; a cut is a SIGKILL of nbdkit, which loses the drive's volatile cache), the image
  checked against what the drive's mode says must be kept.
- ``audit`` (item 3, lab/audits.py): ``fsyncbench audit`` in a QEMU guest on the drive,
  presented as a spinning disk or an NVMe SSD, its verdict against the drive's mode (about a
  minute and a half each).
- ``powercut`` (items 4 and 7, lab/powercuts.py): ``fsyncbench powercut cycle`` with the
  writer in a guest on an honest and on a lying drive, ``--powercut-cycles`` real cuts each
  (about a minute per cut).
- ``powerloss`` (item 5, lab/simcheck.py): a guest committing the step journal under four
  pragma combinations on four honest drives, cut ``--powerloss-cuts`` times, the real losses
  beside ``fsyncbench powerloss``'s prediction (about 20 s a cut).

The guest groups need root, QEMU, a Debian kernel, busybox and fsyncbench installed in the
Python that runs this script.

    python3 scripts/lab.py [--cuts N] [--seed S] [--only GROUP[,GROUP]]
                           [--powercut-cycles N] [--powerloss-cuts N]
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lab"))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # fsyncbench, for the guests

import cuts

#: The groups of scenarios ``--only`` picks from, in the order they run.
GROUPS = ("drive", "audit", "powercut", "powerloss")

Line = tuple[str, str, str, bool]


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


def _guest_group(group: str, args: argparse.Namespace) -> tuple[str, Callable[[], list[Line]]]:
    """(what is missing for ``group``, or "", and the call that runs it)."""
    if group == "audit":
        import audits

        return audits.missing_parts(), lambda: audits.lab_lines(args.seed)
    if group == "powercut":
        import powercuts

        return powercuts.missing_parts(), lambda: powercuts.lab_lines(
            args.seed, args.powercut_cycles, args.powercut_nvme_cuts
        )
    import simcheck

    return simcheck.missing_parts(), lambda: simcheck.lab_lines(args.seed, args.powerloss_cuts)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cuts", type=int, default=30, help="cuts per drive scenario (default 30)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the cut moments (default 0)")
    ap.add_argument(
        "--only",
        default=",".join(GROUPS),
        help=f"the groups to run, a comma list of {', '.join(GROUPS)} (default: all)",
    )
    ap.add_argument(
        "--powercut-cycles", type=int, default=2, help="real cuts per powercut scenario (default 2)"
    )
    ap.add_argument(
        "--powercut-nvme-cuts",
        type=int,
        default=0,
        help="also cut an honest drive attached as NVMe this many times (QEMU drops FUA)",
    )
    ap.add_argument(
        "--powerloss-cuts",
        type=int,
        default=20,
        help="guest cuts for powerloss vs real cuts, each cutting all four pragmas (default 20)",
    )
    args = ap.parse_args()
    groups = [g.strip() for g in args.only.split(",") if g.strip()]
    unknown = [g for g in groups if g not in GROUPS]
    if unknown or not groups:
        print(f"lab: --only takes a comma list of {', '.join(GROUPS)}", file=sys.stderr)
        return 2
    for flag, value, least in (
        ("--cuts", args.cuts, 1),
        ("--powercut-cycles", args.powercut_cycles, 1),
        ("--powerloss-cuts", args.powerloss_cuts, 1),
        ("--powercut-nvme-cuts", args.powercut_nvme_cuts, 0),
    ):
        if value < least:
            print(f"lab: {flag} must be at least {least}", file=sys.stderr)
            return 2
    missing = cuts.missing_parts()
    runs = []
    for group in (g for g in GROUPS if g in groups and g != "drive"):
        lacking, call = _guest_group(group, args)
        missing = missing or lacking
        runs.append((group, call))
    if missing:
        print(f"lab: {missing}", file=sys.stderr)
        return 2
    agree = total = 0
    if "drive" in groups:
        agree, total = _drive_scenarios(args.cuts, args.seed)
    for group, call in runs:
        start = time.perf_counter_ns()
        try:
            lines = call()
        except (RuntimeError, OSError, subprocess.CalledProcessError) as exc:
            print(f"lab: {group} failed: {' '.join(str(exc).split())[:500]}", file=sys.stderr)
            return 2
        for name, truth, said, ok in lines:
            agree += ok
            total += 1
            print(
                f"{'agree' if ok else 'DISAGREE':8}  {name}: fsyncbench said {said}; truth: {truth}"
            )
        took_s = (time.perf_counter_ns() - start) / 1e9
        print(f"lab: {group} took {took_s:.0f} s", file=sys.stderr)
    print(f"lab: {agree}/{total} agree")
    return 0 if agree == total else 1


def _drive_scenarios(n_cuts: int, seed: int) -> tuple[int, int]:
    """Cut the drive ``n_cuts`` times per scenario, print one line each; (agreeing, all)."""
    rng = random.Random(seed)
    agree = 0
    scenarios = _scenarios(n_cuts)
    for name, mode, options, truth in scenarios:
        done = [cuts.cut(mode, rng, **options) for _ in range(n_cuts)]
        cache_blocks = int(str(options.get("cache_blocks", 1024)))
        ok = all(cuts.truth_holds(mode, c, cache_blocks) for c in done)
        agree += ok
        acked = sum(c.acked for c in done)
        lost = sum(len(c.lost) for c in done)
        print(
            f"{'agree' if ok else 'DISAGREE':8}  {name}: {n_cuts} cuts, {acked} records "
            f"acknowledged, {lost} lost; truth: {truth}"
        )
    return agree, len(scenarios)


if __name__ == "__main__":
    sys.exit(main())
