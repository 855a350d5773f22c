#!/usr/bin/env python3
"""Calibrate the disturbed-round rule both ways: default runs on a quiet machine, and with a
planted interferer beside them, each round's activity printed side by side.

    python3 scripts/disturbance.py DIR [--runs N] [--interferer none,disk,cpu1,cpu2]
        [--run-budget-seconds S]

Interferers (each started before the run and stopped after it):
  none   nothing besides the run
  disk   a second process writing 4 KiB and calling fsync in a loop, in DIR (the same disk)
  cpu1   one process burning a CPU;  cpu2: two
Prints one line per round: the interferer, the round, whether it was judged disturbed and
why, others' flushes and their share of the device's, others' CPU, CPU pressure, steal; then
per run the p99 of write+fdatasync and wal/full. Writes only inside DIR (a scratch directory
of its own, removed at the end).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import interferers as planted


def interferers(kind: str, work: Path) -> list[subprocess.Popen[bytes]]:
    """Start the processes of ``kind`` (none, disk, cpu1, cpu2): scripts/interferers.py."""
    if kind == "none":
        return []
    if kind == "disk":
        return [planted.disk(work / "interferer")]
    return planted.cpu(int(kind.removeprefix("cpu")))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", type=Path)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--interferer", default="none,disk,cpu1,cpu2")
    parser.add_argument("--run-budget-seconds", type=float, default=None)
    parser.add_argument("--no-retake", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=args.dir, prefix=".fsyncbench-calibrate-") as tmp:
        work = Path(tmp)
        for kind in args.interferer.split(","):
            for n in range(args.runs):
                procs = interferers(kind, work)
                time.sleep(1.0 if procs else 0.0)
                out = work / f"{kind}-{n}.json"
                cmd = [sys.executable, "-m", "fsyncbench", "run", str(work), "-q", "--no-report"]
                cmd += ["--format", "json", "-o", str(out)]
                if args.run_budget_seconds:
                    cmd += ["--run-budget-seconds", str(args.run_budget_seconds)]
                if args.no_retake:
                    cmd.append("--no-retake-disturbed")
                try:
                    subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL)
                finally:
                    planted.stop(procs)
                report = json.loads(out.read_text())
                for a in report.get("activity", ()):
                    share = (
                        100 * a["other_flushes"] / a["device_flushes"]
                        if a.get("other_flushes") is not None and a.get("device_flushes")
                        else None
                    )
                    names = ",".join(p["name"] for p in a["processes"][:2])
                    print(
                        f"{kind:5} run {n} round {a['round']}.{a['attempt']} "
                        f"kept={int(a['kept'])} disturbed={'+'.join(a['disturbed']) or '-':9} "
                        f"other_flushes={a['other_flushes']} ({share and round(share, 1)} %) "
                        f"cpu_other={a['cpu_other_pct']} wait={a.get('cpu_wait_pct')} psi={a['cpu_pressure_pct']} "
                        f"steal={a['cpu_steal_pct']} load={a['load_avg_1m']:.2f} [{names}]",
                        flush=True,
                    )
                p99 = {
                    r["name"]: round(r["summary"]["p99_ns"] / 1e3)
                    for r in report["results"]
                    if r["name"] in ("write+fdatasync", "wal/full", "truncate/full")
                }
                print(f"{kind:5} run {n} p99 us {p99}", flush=True)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
