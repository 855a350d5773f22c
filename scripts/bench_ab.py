#!/usr/bin/env python3
"""A/B calibration of the regression gate: planted slowdowns of known size, and A/A calm.

Usage: python scripts/bench_ab.py DIR [--pairs 10] [--levels 1.25,1.5,2,10]
       [--limit-pct 20] [--warmup-runs 3] [--load] [--run-args "ARGS"] [--keep KEEPDIR]
       python scripts/bench_ab.py --reports KEEPDIR [--limit-pct 20] [--gate CONFIGS]
           (analyse kept runs; --gate as compare's, default every configuration)

Every run is a real ``python -m fsyncbench run DIR`` process (default options unless
``--run-args`` says otherwise). The planted regression is an ``LD_PRELOAD`` shim of this
project (``scripts/slowsync.c``, built here with cc) that makes every ``fsync()`` and
``fdatasync()`` slower by a set time, busy-waiting after the real call: a storage path
whose flush got slower. Level L adds (L - 1) x the p50 of ``write+fdatasync`` measured in
the first clean run, so that row's p50 becomes about L times as slow; the commits slow down
by their own number of syncs, O_DSYNC and O_SYNC writes (no fsync call) not at all.

The sequence: ``--warmup-runs`` clean runs, then ``--pairs`` cycles per level, each two
clean runs A and B (one A/A pair: no run is in two pairs) followed by one planted run, the
levels taking turns cycle by cycle (so slow drifts of the machine reach every level alike,
and a third of the runs in the history are planted ones). Every run saves its
report into one history directory and reads its earlier runs from it (the default
``run --history``). A planted run stays there unless the gate caught it (exit 1 against
its cycle's B, with history), as the CI job of ``docs/ci.md`` keeps a run: the planted
runs the gate missed or could not tell are in the baseline of the runs after them, as a
user's would be. With ``--load`` two
interferers run beside the whole batch, as on a shared machine: a process writing 4 KiB and
calling fsync every 10 ms in DIR (the same disk) and one burning a CPU.

Each candidate is compared with a baseline by ``fsyncbench.api.compare(...,
fail_on_regression=LIMIT)``, the function ``fsyncbench compare A B --fail-on-regression
LIMIT`` calls: an A/A pair's B against its A, a planted run against the clean B of its
cycle, twice:

- **with history**: the baseline as saved, with the earlier runs it recorded (from the 4th
  run on it has at least 3);
- **without history**: the baseline with its earlier runs removed.

Printed per level and basis: the pairs, the share the gate caught (exit 1), the share it
could not tell (exit 4), the share it passed (exit 0), each with its 95 % Wilson interval;
for A/A a firing is a false alarm, for a planted run a pass is a miss.

Thresholds fixed before the data (issue "A gate that states its power"): A/A fires in
<= 5 % of pairs; 1.5x caught in >= 80 % of pairs with >= 3 earlier runs, 2x in >= 80 %
without history; a planted run never passes (exit 0).
This script reports; it gates nothing and asserts no duration.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tabulate import tabulate  # noqa: E402

from fsyncbench import api  # noqa: E402
from fsyncbench.errors import FsyncbenchError  # noqa: E402
from fsyncbench.model import Report  # noqa: E402
from fsyncbench.report import store  # noqa: E402

sys.path.insert(0, str(ROOT / "scripts"))
import interferers  # noqa: E402

SHIM_SOURCE = ROOT / "scripts" / "slowsync.c"


def build_shim(where: Path) -> Path:
    """Compile scripts/slowsync.c into ``where``; exits 2 with one line without a compiler."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        sys.exit("bench_ab: needs a C compiler (cc or gcc) to build scripts/slowsync.c")
    lib = where / "slowsync.so"
    subprocess.run(
        [cc, "-O2", "-shared", "-fPIC", "-o", str(lib), str(SHIM_SOURCE), "-ldl"], check=True
    )
    return lib


def fsb_run(target: Path, report_dir: Path, extra: list[str], env: dict[str, str]) -> Path:
    """One ``fsyncbench run`` saving into ``report_dir`` (its history); the report's path."""
    before = set(report_dir.glob("*.json"))
    proc = subprocess.run(
        [sys.executable, "-m", "fsyncbench", "run", str(target), "--report-dir", str(report_dir)]
        + ["--quiet", *extra],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
    )
    if proc.returncode != 0:
        sys.exit(f"bench_ab: fsyncbench run failed: {proc.stderr.strip().splitlines()[-1:]}")
    (new,) = set(report_dir.glob("*.json")) - before
    return new


def without_history(rep: Report) -> Report:
    """``rep`` as if it had read no earlier runs (the "pair" basis)."""
    return dataclasses.replace(
        rep, results=tuple(dataclasses.replace(r, earlier=()) for r in rep.results)
    )


def judge(
    a: Report, b: Report, limit: float, accept: bool, gate: str | None = None
) -> dict[str, object]:
    """compare A B --fail-on-regression LIMIT [--accept-disturbed] [--gate GATE]: what the
    gate said."""
    try:
        c = api.compare([a, b], configs=gate, fail_on_regression=limit, accept_disturbed=accept)
    except FsyncbenchError as exc:
        return {"error": str(exc), "exit": 2}
    told = [] if c.gate is None else [s for s in c.gate.statistics if s.detectable_ratio]
    return {
        "regressions": [f"{r.name} p{r.statistic.percentile:g}" for r in c.regressions],
        "not_checked": list(c.not_checked),
        "exit": 1 if c.regressions else 4 if c.not_checked else 0,
        "detectable": {f"{s.name} p{s.percentile:g}": s.detectable_ratio for s in told},
    }


def wilson(k: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """The 95 % Wilson score interval of a share k of n (Wilson 1927, JASA 22:209-212)."""
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def share(k: int, n: int) -> str:
    """k of n with its percentage and 95 % interval."""
    lo, hi = wilson(k, n)
    return f"{k}/{n} {100 * k / n:.0f} % [{100 * lo:.0f}, {100 * hi:.0f}]" if n else "-"


def analyse(plan: dict, work: Path, limit: float, gate: str | None = None) -> dict:
    """Every comparison of a kept batch (module text); returns the rows, prints the table."""
    cache: dict[str, Report] = {}

    def load(name: str) -> Report:
        if name not in cache:
            cache[name] = store.load_report(work / name)
        return cache[name]

    comparisons = [(1.0, a, b) for a, b in plan["pairs"]] + [
        (float(lv), a, b) for lv, a, b in plan["planted"]
    ]
    rows: list[dict[str, object]] = []
    for level, a_name, b_name in comparisons:
        a, b = load(a_name), load(b_name)
        hist = min((len(r.earlier) for r in a.results), default=0) >= 3
        for basis, base in (("history", a), ("none", without_history(a))):
            if basis == "history" and not hist:
                continue
            for accept in (False, True):
                verdict = judge(base, b, limit, accept, gate)
                rows.append({"level": level, "basis": basis, "accept": accept, **verdict})
    table = []
    for level in sorted({float(r["level"]) for r in rows}):  # type: ignore[arg-type]
        for basis in ("history", "none"):
            for accept in (False, True):
                mine = [
                    r
                    for r in rows
                    if r["level"] == level and r["basis"] == basis and r["accept"] == accept
                ]
                if not mine:
                    continue
                n = len(mine)
                count = {e: sum(1 for r in mine if r["exit"] == e) for e in (0, 1, 2, 4)}
                powers = [
                    statistics.median(r["detectable"].values())  # type: ignore[union-attr]
                    for r in mine
                    if r.get("detectable")
                ]
                table.append(
                    [
                        "A/A" if level == 1.0 else f"{level:g}x",
                        ">= 3 earlier runs" if basis == "history" else "none",
                        "--accept-disturbed" if accept else "as gated",
                        share(count[1], n),
                        share(count[4], n),
                        share(count[0], n),
                        f"{statistics.median(powers):.2f}x" if powers else "-",
                        count[2],
                    ]
                )
    print(
        tabulate(
            table,
            headers=[
                "planted",
                "history",
                "disturbed runs",
                "fired (exit 1)",
                "cannot tell (exit 4)",
                "passed (exit 0)",
                "detectable (median)",
                "errors",
            ],
            tablefmt="github",
        )
    )
    for r in rows:
        if r["level"] == 1.0 and r["exit"] == 1:
            print(f"A/A alarm ({r['basis']}, accept={r['accept']}): {r.get('regressions')}")
        if r["level"] != 1.0 and r["exit"] == 0:
            print(f"{r['level']:g}x passed ({r['basis']}, accept={r['accept']})")
    return {"rows": rows, "table": table}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", type=Path, nargs="?", help="the directory to measure")
    parser.add_argument("--pairs", type=int, default=10, help="planted runs per level (10)")
    parser.add_argument("--levels", default="1.25,1.5,2,10", help="slowdowns of fdatasync p50")
    parser.add_argument("--limit-pct", type=float, default=20.0, help="--fail-on-regression")
    parser.add_argument(
        "--warmup-runs", type=int, default=3, help="clean runs before the first cycle"
    )
    parser.add_argument("--load", action="store_true", help="a disk and a CPU interferer")
    parser.add_argument("--run-args", default="", help="extra arguments for fsyncbench run")
    parser.add_argument("--keep", type=Path, help="keep every report in this directory")
    parser.add_argument("--reports", type=Path, help="analyse the runs kept in this directory")
    parser.add_argument(
        "--gate", help="with --reports: the configurations gated (compare --gate; default all)"
    )
    args = parser.parse_args()
    if args.reports:
        plan = json.loads((args.reports / "plan.json").read_text())
        analyse(plan, args.reports, args.limit_pct, args.gate)
        return 0
    if args.dir is None:
        parser.error("DIR or --reports is required")
    levels = [float(x) for x in args.levels.split(",")]
    extra = shlex.split(args.run_args)
    with tempfile.TemporaryDirectory(prefix="bench-ab-") as tmp:
        work = args.keep or Path(tmp)
        reports = work / "reports"
        reports.mkdir(parents=True, exist_ok=True)
        lib = build_shim(Path(tmp))
        env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "SLOWSYNC_NS")}
        plan: dict = {"load": args.load, "runs": [], "pairs": [], "planted": []}
        t0 = time.monotonic()
        busy: list[subprocess.Popen[bytes]] = []
        if args.load:
            busy = [
                interferers.disk(args.dir / ".ab-load", pause_s=0.01),
                *interferers.cpu(1),
            ]

        def run(environ: dict[str, str]) -> str:
            name = str(fsb_run(args.dir, reports, extra, environ).relative_to(work))
            plan["runs"].append(name)
            (work / "plan.json").write_text(json.dumps(plan, indent=1))
            return name

        try:
            first = [run(env) for _ in range(max(1, args.warmup_runs))]
            base = store.load_report(work / first[0], samples=False)
            p50 = next(r.summary.p50_ns for r in base.results if r.name == "write+fdatasync")
            print(f"write+fdatasync p50 of the first clean run: {p50 / 1e3:.1f} us", flush=True)
            cycles = [level for _ in range(args.pairs) for level in levels]
            for k, level in enumerate(cycles):
                a, b = run(env), run(env)
                plan["pairs"].append((a, b))
                delay = int(round((level - 1.0) * p50))
                slow = {**env, "LD_PRELOAD": str(lib), "SLOWSYNC_NS": str(delay)}
                p = run(slow)
                # as docs/ci.md's job keeps it: out of the history if the gate caught it
                said = judge(
                    store.load_report(work / b), store.load_report(work / p), args.limit_pct, False
                )
                if said["exit"] == 1:
                    (work / "caught").mkdir(exist_ok=True)
                    for f in (work / p, (work / p).with_suffix(".md")):
                        if f.exists():
                            f.rename(work / "caught" / f.name)
                    p = str(Path("caught") / Path(p).name)
                plan["planted"].append((level, b, p))
                (work / "plan.json").write_text(json.dumps(plan, indent=1))
                print(
                    f"cycle {k + 1}/{len(cycles)} done after {time.monotonic() - t0:.0f} s",
                    flush=True,
                )
        finally:
            interferers.stop(busy)
            (args.dir / ".ab-load").unlink(missing_ok=True)
        result = analyse(plan, work, args.limit_pct)
        (work / "result.json").write_text(json.dumps(result, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
