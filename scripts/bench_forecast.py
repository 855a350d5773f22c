#!/usr/bin/env python3
"""Forecast coverage: how often the next run's p99 falls inside this run's p99 interval,
over back-to-back default runs saving into one report directory (so every run after the
first reads the earlier ones as history, as a user's would).

    python3 scripts/bench_forecast.py DIR [--runs 20] [--machine quiet|disturbed] [--seed 0]
        [--keep-last FILE]

``--machine disturbed`` keeps a second process beside the runs that does 4 KiB write + fsync
on the same disk (in DIR) for a random 5-30 s, then pauses for a random 5-30 s, and so on
(seeded): a shared machine whose neighbour comes and goes. The thresholds of the disturbed
rule are the package's, fixed before any of these runs.

Prints one line per pair (run i's interval, run i+1's p99, per row: in or out) and the
totals: coverage over every row with an interval, and on a disturbed machine also over the
pairs whose first run did not say it stayed disturbed. Writes only inside DIR (a scratch
directory of its own, removed at the end, reports included).
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

DISK_LOOP = """
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o600)
while True:
    os.pwrite(fd, b"x" * 4096, 0)
    os.fsync(fd)
"""


class Neighbour:
    """The disk interferer that comes and goes (seeded on/off periods of 5-30 s)."""

    def __init__(self, work: Path, seed: int) -> None:
        self.work, self.rng = work, random.Random(seed)
        self.stop = threading.Event()
        self.proc: subprocess.Popen[bytes] | None = None
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self.stop.is_set():
            self.proc = subprocess.Popen([sys.executable, "-c", DISK_LOOP, str(self.work / "n")])
            self.stop.wait(self.rng.uniform(5, 30))
            self._kill()
            self.stop.wait(self.rng.uniform(5, 30))

    def _kill(self) -> None:
        if self.proc is not None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
            self.proc = None

    def __enter__(self) -> Neighbour:
        self.thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop.set()
        self.thread.join()
        self._kill()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("dir", type=Path)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--machine", choices=("quiet", "disturbed"), default="quiet")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--keep-last", type=Path, metavar="FILE", help="copy the last run's report to FILE"
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=args.dir, prefix=".fsyncbench-forecast-") as tmp:
        work = Path(tmp)
        reports = work / "reports"
        runs = []

        def one(n: int) -> None:
            out = work / f"run-{n:02d}.json"
            cmd = [sys.executable, "-m", "fsyncbench", "run", str(work), "-q"]
            cmd += ["--report-dir", str(reports), "--format", "json", "-o", str(out)]
            proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            if proc.returncode != 0:
                raise SystemExit(f"run {n} failed: {proc.stderr.decode().strip()}")
            runs.append(json.loads(out.read_text()))
            rep = runs[-1]
            still = [a for a in rep.get("activity", ()) if a["kept"] and a["disturbed"]]
            print(f"run {n:2d}: {len(still)} of 8 rounds stayed disturbed", flush=True)

        if args.machine == "disturbed":
            with Neighbour(work, args.seed):
                for n in range(args.runs):
                    one(n)
        else:
            for n in range(args.runs):
                one(n)
        total = inside = told_total = told_inside = flagged = 0
        for n, (a, b) in enumerate(zip(runs, runs[1:])):
            said = any(x["kept"] and x["disturbed"] for x in a.get("activity", ()))
            flagged += said
            nxt = {r["name"]: r["summary"]["p99_ns"] for r in b["results"]}
            marks = []
            for r in a["results"]:
                ci = r["summary"].get("p99_ci_ns")
                if ci is None or r["name"] not in nxt:
                    continue
                hit = ci[0] <= nxt[r["name"]] <= ci[1]
                total += 1
                inside += hit
                if not said:
                    told_total += 1
                    told_inside += hit
                marks.append(("in " if hit else "OUT ") + r["name"])
            print(
                f"pair {n:2d}->{n + 1:2d}{' (disturbed)' if said else ''}: "
                + ", ".join(m for m in marks if m.startswith("OUT")),
                flush=True,
            )
        if args.keep_last is not None:
            args.keep_last.write_text((work / f"run-{len(runs) - 1:02d}.json").read_text())
        print(
            f"coverage: {inside} of {total} rows ({100 * inside / max(total, 1):.1f} %) over "
            f"{len(runs) - 1} pairs"
        )
        if args.machine == "disturbed":
            print(
                f"first run said it stayed disturbed: {flagged} of {len(runs) - 1} pairs; "
                f"coverage over the others: {told_inside} of {told_total} "
                f"({100 * told_inside / max(told_total, 1):.1f} %)"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
