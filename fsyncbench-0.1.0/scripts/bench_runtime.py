#!/usr/bin/env python3
"""Speed and memory: wall time of the default `run`, of `audit` and of `crash`, and the peak
memory of a million samples taken, summarised and stored.

Usage: python scripts/bench_runtime.py [DIR] [--skip run,audit,crash,rss]

Each subcommand runs as a real `python -m fsyncbench` process on DIR (default: the system
temporary directory) with its default options (reports go to a temporary directory that is
removed afterwards); its wall time is timed around the process. For `run` the report is
read back: per configuration its sample count, phases, and whether the 95 % CI of p99 met
the target. `audit` is skipped with a message when this fsyncbench has no such subcommand.

Peak RSS (target <= 100 MB): a fresh child process imports fsyncbench, fills a timing-loop
sampler (fsyncbench.measure.timing.Sampler) with one million realistic durations (lognormal around
150 us; CPython interns small ints, so timing empty operations would understate the memory
of real samples), turns them into a Result (summary and CIs) as the runner does, builds the
report and writes it durably as JSON; it prints ``ru_maxrss`` after the imports and at the
end. This script reports; it gates nothing.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

RSS_CHILD = r"""
import resource, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from fsyncbench import api
from fsyncbench.measure import timing as measure, runner
from fsyncbench.report import store
from fsyncbench.model import Host, StorageTarget
rss = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
import numpy as np
base = rss()
t0 = time.perf_counter()
# the sampler's array as the timing loop leaves it, holding a million realistic durations
# (lognormal around 150 us: small ints would be interned and understate the memory)
sampler = measure.Sampler(measure.EmptyOp(), max_samples=1_000_000)
rng = np.random.default_rng(1)
for _ in range(100):  # in small pieces, as the loop appends (no large temporary)
    sampler.samples.frombytes(rng.lognormal(11.9, 0.6, 10_000).astype(np.int64).tobytes())
t1 = time.perf_counter()
result = runner.result_from(sampler.measurement(release=True), (), kind="floor", name="1M empty operations",
                        primitive="none", payload_bytes=0)
del sampler
t2 = time.perf_counter()
host = Host(hostname="rss", os_name="Linux", target=StorageTarget(path="/"))
report = api.build_report("run", host, [result], ["bench_runtime"])
with tempfile.TemporaryDirectory() as d:
    path = Path(d) / "r.json"
    store.write_durably(path, store.report_to_json(report))
    size = path.stat().st_size
t3 = time.perf_counter()
print(f"{base:.1f} {rss():.1f} {result.summary.count} {size} {t1 - t0:.2f} {t2 - t1:.2f} {t3 - t2:.2f}")
"""


def fsb(*args: str) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "fsyncbench", *args], capture_output=True, text=True, cwd=ROOT
    )
    return time.perf_counter() - t0, proc


def bench_run(target: Path) -> None:
    from tabulate import tabulate

    from fsyncbench.report import store

    with tempfile.TemporaryDirectory() as out:
        wall, proc = fsb("run", str(target), "--report-dir", out)
        if proc.returncode != 0:
            print(f"run: exit {proc.returncode} after {wall:.1f} s: {proc.stderr.strip()}")
            return
        report = store.load_report(next(Path(out).glob("*.json")))
    rows = []
    for r in report.results:
        half = r.summary.p99_ci_halfwidth_pct
        rows.append(
            [
                r.name,
                r.summary.count,
                r.phases,
                r.stop_reason,
                f"{r.elapsed_ns / 1e9:.2f}",
                "-" if half is None else f"+-{half:.1f} %",
                {True: "yes", False: "NO", None: "-"}[r.ci_target_met],
            ]
        )
    met = sum(1 for r in report.results if r.ci_target_met)
    target = report.results[0].ci_target_pct if report.results else None
    print(
        f"fsyncbench run {target_label(target)}: wall {wall:.1f} s, {len(report.results)} "
        f"workloads, {met} of them met the p99 CI target, {sum(r.summary.count for r in report.results):,} samples"
    )
    print(
        tabulate(
            rows,
            headers=["workload", "n", "slices", "stop", "timed s", "p99 CI", "met"],
            tablefmt="simple",
            disable_numparse=True,
        )
    )
    floors = ", ".join(f"{f.name} {f.summary.p50_ns:,.0f} ns" for f in report.floors)
    print(f"floors (p50): {floors or '-'}")


def target_label(pct: float | None) -> str:
    return f"(default, CI target +-{pct:g} %)" if pct else "(default)"


def bench_audit(target: Path) -> None:
    _, help_proc = fsb("audit", "--help")
    if help_proc.returncode != 0:
        print("audit: this fsyncbench has no `audit` subcommand yet; skipped")
        return
    wall, proc = fsb("audit", str(target), "--no-report")
    print(
        f"fsyncbench audit: wall {wall:.1f} s, exit {proc.returncode}"
        + (
            f" ({proc.stderr.strip().splitlines()[-1]})"
            if proc.returncode not in (0, 1) and proc.stderr
            else ""
        )
    )


def bench_crash(target: Path) -> None:
    wall, proc = fsb("crash", str(target))
    print(f"fsyncbench crash: wall {wall:.1f} s, exit {proc.returncode}")


def bench_rss() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", RSS_CHILD, str(ROOT)], capture_output=True, text=True
    )
    if proc.returncode != 0:
        print(f"peak RSS: child failed: {proc.stderr.strip()}")
        return
    base, peak, n, size, t_measure, t_summary, t_store = proc.stdout.split()
    print(
        f"peak RSS for {int(n):,} samples measured, summarised and stored: {float(peak):.0f} MiB "
        f"(after imports {float(base):.0f} MiB; target <= 100 MB); JSON {int(size) / 2**20:.1f} MiB; "
        f"summary {t_summary} s, report + durable write {t_store} s"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", nargs="?", default=tempfile.gettempdir(), type=Path)
    parser.add_argument("--skip", default="", help="comma list of run, audit, crash, rss")
    args = parser.parse_args()
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    try:
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        load = "?"
    print(f"target {args.dir}, {os.cpu_count()} CPUs, load average {load}\n")
    for name, fn in (
        ("run", lambda: bench_run(args.dir)),
        ("audit", lambda: bench_audit(args.dir)),
        ("crash", lambda: bench_crash(args.dir)),
        ("rss", bench_rss),
    ):
        if name not in skip:
            fn()
            print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
