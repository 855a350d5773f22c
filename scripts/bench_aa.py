#!/usr/bin/env python3
"""A/A calibration: K back-to-back `fsyncbench run`s of the same configurations on the same
directory, and how often their intervals and `compare` claim a difference that is not there.

Usage: python scripts/bench_aa.py DIR [--runs K] [--run-args "ARGS"] [--limit-pct 20]
       [--keep DIR2]   (keep the reports)  [--seed SEEDDIR]  (earlier reports to start from)
       python scripts/bench_aa.py --reports A.json B.json ...   (analyse saved reports)

The runs save their reports in one directory, as a user's runs do in ``reports/``, so from
the third run on each run's intervals include the spread between it and the earlier runs
(``run --history``, the default); ``--seed SEEDDIR`` copies earlier reports of the same
measurement (e.g. an earlier ``--keep``) there first, ``--run-args --no-history`` measures
without. Coverage is printed for intervals of one run alone and for those that include
earlier runs, and, of the latter, for later runs' estimates only (a forecast: the interval
was made before that run existed).

Each run is a real `python -m fsyncbench run DIR` process (default options unless
``--run-args`` says otherwise; reports go to a temporary directory removed afterwards) whose
wall time is timed around the process. For every pair of runs (i < j) and every configuration
both measured, it counts, for p50 and p99:

- coverage: whether run j's estimate lies inside run i's 95 % interval, and the other way
  round (two checks per pair and statistic; a statistic without an interval, "n too
  small", is counted apart). Even a perfectly calibrated 95 % interval covers *another
  run's estimate* less often than the true value, since that estimate has its own error:
  for a t interval on df degrees of freedom the expected share is
  P(|T_df| < t_df,0.975 / sqrt(2)), 83 % for large df and about 90 % at df = 2; the script
  prints that reference next to the figure;
- significance: the share of those statistics `compare` (fsyncbench.report.compare.compare_pair,
  seeded as the CLI is) calls significant — on an unchanged machine it should be about the
  error rate (5 %);
- the exit code of `fsyncbench compare A B --fail-on-regression LIMIT` (1 = a regression was
  reported between two runs of the same machine).

Pairs are reported in two groups: those whose tool floors (CPU-only work measured by every
run) did not move significantly — an unchanged machine, which the targets are about — and
those whose floors moved: there the machine itself changed between the runs (a shared host
got busier, the CPU clock changed), and a difference is real, if not the storage's.

Targets (issue "Honest precision"): coverage >= 90 %, significant <= 5 % of statistics,
`--fail-on-regression 20` never exits 1 on an A/A pair, a default run <= 30 s. This script
reports; it gates nothing and asserts no duration.
"""

from __future__ import annotations

import argparse
import itertools
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tabulate import tabulate  # noqa: E402

from fsyncbench.report import compare, store  # noqa: E402


def fsb(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fsyncbench", *args], capture_output=True, text=True, cwd=ROOT
    )


def inside(value: float, ci) -> bool:
    return ci[0] <= value <= ci[1]


def expected_coverage(df: int) -> float:
    """Share of another run's estimates a calibrated 95 % t interval on ``df`` degrees of
    freedom covers, both runs alike (module docstring)."""
    from fsyncbench.measure.special import t_cdf, t_quantile

    if df < 1:
        return float("nan")
    half = t_quantile(df, 0.975) / 2**0.5
    return 1 - 2 * t_cdf(-half, df)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", type=Path, nargs="?")
    parser.add_argument("--runs", type=int, default=4, help="back-to-back runs (default 4)")
    parser.add_argument("--run-args", default="", help="extra arguments for fsyncbench run")
    parser.add_argument(
        "--limit-pct",
        type=float,
        default=20.0,
        help="--fail-on-regression percentage to try on each pair (default 20)",
    )
    parser.add_argument("--keep", type=Path, help="copy the reports into this directory")
    parser.add_argument("--reports", type=Path, nargs="+", help="analyse these saved reports")
    parser.add_argument(
        "--seed", type=Path, help="copy these earlier reports (*.json) in before the first run"
    )
    args = parser.parse_args()
    if args.reports:
        return analyse(args.reports, [], args.limit_pct)
    if args.dir is None:
        parser.error("DIR or --reports is required")
    if args.runs < 2:
        parser.error("--runs must be at least 2")
    with tempfile.TemporaryDirectory(prefix="bench-aa-") as tmp:
        out = Path(tmp) / "reports"
        out.mkdir()
        for seed in sorted(args.seed.glob("*.json")) if args.seed else ():
            shutil.copy2(seed, out / seed.name)  # keeps the time: newest are read first
        paths, walls = [], []
        for k in range(args.runs):
            before = set(out.glob("*.json"))
            t0 = time.perf_counter()
            proc = fsb(
                "run",
                str(args.dir),
                "--report-dir",
                str(out),
                "--quiet",
                *shlex.split(args.run_args),
            )
            walls.append(time.perf_counter() - t0)
            if proc.returncode not in (0, 1):
                print(proc.stderr, file=sys.stderr)
                return 2
            (new,) = set(out.glob("*.json")) - before
            paths.append(new)
            print(f"run {k + 1}/{args.runs}: {walls[-1]:.1f} s", file=sys.stderr)
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
            kept = []
            for k, p in enumerate(paths):
                kept.append(args.keep / f"run{k + 1}-{p.name}")
                shutil.copyfile(p, kept[-1])
            paths = kept
        return analyse(paths, walls, args.limit_pct)


def _checks(a, b):
    """(name, hit, df, runs, later) per check of one run's estimate against the other's
    interval, both ways, for p50 and p99 of every configuration both measured (a is the
    earlier run); hit None = no interval, runs = the runs that interval rests on, later =
    the estimate is of the later run (the interval is of the earlier one)."""
    rb = {r.name: r for r in b.results}
    for ra in a.results:
        other = rb.get(ra.name)
        if other is None:
            continue
        sa, sb = ra.summary, other.summary
        for est_a, ci_a, iv_a, est_b, ci_b, iv_b in (
            (sa.p50_ns, sa.p50_ci_ns, sa.p50_interval, sb.p50_ns, sb.p50_ci_ns, sb.p50_interval),
            (sa.p99_ns, sa.p99_ci_ns, sa.p99_interval, sb.p99_ns, sb.p99_ci_ns, sb.p99_interval),
        ):
            for est, ci, iv, later in ((est_b, ci_a, iv_a, True), (est_a, ci_b, iv_b, False)):
                yield (
                    ra.name,
                    (None if ci is None else inside(est, ci)),
                    (iv.df if iv else 0),
                    (iv.runs if iv else 1),
                    later,
                )


def analyse(paths: list[Path], walls: list[float], limit_pct: float) -> int:
    reports = [store.load_report(p) for p in paths]
    rows = []
    groups = {False: _Tally(), True: _Tally()}  # by "the tool's floor moved"
    per_config: dict[str, list[int]] = {}
    for i, j in itertools.combinations(range(len(reports)), 2):
        a, b = reports[i], reports[j]
        pair = compare.compare_pair(a, b)
        moved = bool(pair.floor_moved)
        tally = groups[moved]
        for name, hit, df, runs, later in _checks(a, b):
            row = per_config.setdefault(name, [0, 0, 0])
            if hit is None:
                tally.no_interval += 1
                row[2] += 1
                continue
            tally.checks += 1
            tally.covered += hit
            kinds = ("alone",) if runs <= 1 else ("earlier", "forecast") if later else ("earlier",)
            for kind in kinds:
                got = tally.by_runs.setdefault(kind, [0, 0])
                got[0] += hit
                got[1] += 1
            row[0] += hit
            row[1] += 1
            if df:
                tally.expected.append(expected_coverage(df))
        sig = sum(1 for c in pair.configs for q in (c.p50, c.p99) if q.significant)
        n = sum(2 for _ in pair.configs)
        tally.significant += sig
        tally.compared += n
        gate = fsb(
            "compare", str(paths[i]), str(paths[j]), "--fail-on-regression", f"{limit_pct:g}"
        )
        tally.pairs += 1
        tally.gates += gate.returncode == 1
        flagged = [line for line in gate.stdout.splitlines() if line.startswith("REGRESSION")]
        floor = (
            "; ".join(
                f"{name.split(' (')[0].split(',')[0]} {q.ratio:.2f}x"
                for name, q in pair.floor_moved
            )
            or "no"
        )
        rows.append(
            [
                f"{i + 1} vs {j + 1}",
                floor,
                f"{sig}/{n}",
                gate.returncode,
                "; ".join(line.strip()[:48] for line in flagged) or "-",
            ]
        )
    print(
        tabulate(
            rows,
            headers=[
                "pair",
                "tool's floor moved",
                "significant",
                f"--fail-on-regression {limit_pct:g} exit",
                "regressions reported",
            ],
            tablefmt="simple",
        )
    )
    print()
    print(
        tabulate(
            [
                [name, f"{h}/{n}", f"{100 * h / n:.0f} %" if n else "-", none]
                for name, (h, n, none) in per_config.items()
            ],
            headers=[
                "configuration",
                "estimates inside the other run's 95 % CI",
                "coverage",
                "no interval",
            ],
            tablefmt="simple",
        )
    )
    print()
    for moved, label in (
        (False, "pairs whose floor did not move (an unchanged machine)"),
        (True, "pairs whose floor moved (the machine changed)"),
    ):
        t = groups[moved]
        if not t.pairs:
            continue
        ref = f"{100 * sum(t.expected) / len(t.expected):.1f} %" if t.expected else "-"
        print(f"{label}: {t.pairs}")
        print(
            f"  coverage (p50 and p99, both directions): {t.covered}/{t.checks} = "
            f"{100 * t.covered / max(t.checks, 1):.1f} %  (target >= 90 %; a calibrated 95 % "
            f"interval with these degrees of freedom: {ref}); {t.no_interval} without an interval"
        )
        for kind, label in (
            ("alone", "intervals of one run alone"),
            ("earlier", "intervals that include earlier runs"),
            ("forecast", "  of these, against a later run's estimate"),
        ):
            if kind in t.by_runs:
                h, n = t.by_runs[kind]
                print(f"    {label}: {h}/{n} = {100 * h / n:.1f} %")
        print(
            f"  compare 'significant': {t.significant}/{t.compared} = "
            f"{100 * t.significant / max(t.compared, 1):.1f} % of statistics  (target <= 5 %)"
        )
        print(
            f"  --fail-on-regression {limit_pct:g} exited 1 on {t.gates} of {t.pairs} pairs (target: 0)"
        )
    if walls:
        print("wall time per run: " + ", ".join(f"{w:.1f} s" for w in walls) + "  (target <= 30 s)")
    return 0


class _Tally:
    def __init__(self) -> None:
        self.pairs = self.gates = self.covered = self.checks = self.no_interval = 0
        self.significant = self.compared = 0
        self.expected: list[float] = []
        self.by_runs: dict[str, list[int]] = {}


if __name__ == "__main__":
    sys.exit(main())
