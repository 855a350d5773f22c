"""A/A calibration: K back-to-back `fsyncbench run`s of the same configurations on the same
directory, and how often their intervals and `compare` claim a difference that is not there.

Usage: python scripts/bench_aa.py DIR [--runs K] [--run-args "ARGS"] [--limit-pct 20]

Each run is a real `python -m fsyncbench run DIR` process (default options unless
``--run-args`` says otherwise; reports go to a temporary directory removed afterwards) whose
wall time is timed around the process. For every pair of runs (i < j) and every configuration
both measured, it counts, for p50 and p99:

- coverage: whether run j's estimate lies inside run i's 95 % interval, and the other way
  round (two checks per pair and statistic). Intervals that hold from one run to the next
  cover the other run's estimate about 95 % of the time or more;
- significance: the share of those statistics `compare` (fsyncbench.compare.compare_pair,
  seeded as the CLI is) calls significant — on an unchanged machine it should be about the
  error rate (5 %);
- the exit code of `fsyncbench compare A B --fail-on-regression LIMIT` (1 = a regression was
  reported between two runs of the same machine).

Targets (issue "Honest precision"): coverage >= 90 %, significant <= 5 % of statistics,
`--fail-on-regression 20` never exits 1 on an A/A pair, a default run <= 30 s. This script
reports; it gates nothing and asserts no duration.
"""

from __future__ import annotations

import argparse
import itertools
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tabulate import tabulate  # noqa: E402

from fsyncbench import compare, store  # noqa: E402


def fsb(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fsyncbench", *args], capture_output=True,
                          text=True, cwd=ROOT)


def inside(value: float, ci) -> bool:
    return ci[0] <= value <= ci[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", type=Path)
    parser.add_argument("--runs", type=int, default=4, help="back-to-back runs (default 4)")
    parser.add_argument("--run-args", default="", help="extra arguments for fsyncbench run")
    parser.add_argument("--limit-pct", type=float, default=20.0,
                        help="--fail-on-regression percentage to try on each pair (default 20)")
    args = parser.parse_args()
    if args.runs < 2:
        parser.error("--runs must be at least 2")
    with tempfile.TemporaryDirectory(prefix="bench-aa-") as tmp:
        paths, walls = [], []
        for k in range(args.runs):
            out = Path(tmp) / f"run{k}"
            t0 = time.perf_counter()
            proc = fsb("run", str(args.dir), "--output", str(out), "--quiet",
                       *shlex.split(args.run_args))
            walls.append(time.perf_counter() - t0)
            if proc.returncode not in (0, 1):
                print(proc.stderr, file=sys.stderr)
                return 2
            paths.append(next(out.glob("*.json")))
            print(f"run {k + 1}/{args.runs}: {walls[-1]:.1f} s", file=sys.stderr)
        reports = [store.load_report(p) for p in paths]
        rows = []
        covered = checks = significant = stats_compared = 0
        per_config: dict[str, list[int]] = {}
        for i, j in itertools.combinations(range(len(reports)), 2):
            a, b = reports[i], reports[j]
            rb = {r.name: r for r in b.results}
            for ra in a.results:
                other = rb.get(ra.name)
                if other is None:
                    continue
                for est_a, ci_a, est_b, ci_b in (
                        (ra.summary.p50_ns, ra.summary.p50_ci_ns, other.summary.p50_ns, other.summary.p50_ci_ns),
                        (ra.summary.p99_ns, ra.summary.p99_ci_ns, other.summary.p99_ns, other.summary.p99_ci_ns)):
                    hits = int(inside(est_b, ci_a)) + int(inside(est_a, ci_b))
                    covered += hits
                    checks += 2
                    tally = per_config.setdefault(ra.name, [0, 0])
                    tally[0] += hits
                    tally[1] += 2
            pair = compare.compare_pair(a, b)
            sig = sum(1 for c in pair.configs for q in (c.p50, c.p99) if q.significant)
            n = sum(2 for _ in pair.configs)
            significant += sig
            stats_compared += n
            gate = fsb("compare", str(paths[i]), str(paths[j]), "--fail-on-regression",
                       f"{args.limit_pct:g}")
            flagged = [line for line in gate.stdout.splitlines() if "REGRESSION" in line]
            rows.append([f"{i + 1} vs {j + 1}", f"{sig}/{n}", gate.returncode,
                         "; ".join(line.strip()[:60] for line in flagged) or "-"])
    print(tabulate(rows, headers=["pair", "significant", f"--fail-on-regression {args.limit_pct:g} exit",
                                  "regressions reported"], tablefmt="simple"))
    print()
    print(tabulate([[name, f"{h}/{n}", f"{100 * h / n:.0f} %"] for name, (h, n) in per_config.items()],
                   headers=["configuration", "estimates inside the other run's 95 % CI", "coverage"],
                   tablefmt="simple"))
    print()
    print(f"coverage (p50 and p99, both directions): {covered}/{checks} = "
          f"{100 * covered / max(checks, 1):.1f} %  (target >= 90 %)")
    print(f"compare 'significant': {significant}/{stats_compared} = "
          f"{100 * significant / max(stats_compared, 1):.1f} % of statistics  (target <= 5 %)")
    print("wall time per run: " + ", ".join(f"{w:.1f} s" for w in walls) + "  (target <= 30 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
