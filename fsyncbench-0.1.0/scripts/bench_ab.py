#!/usr/bin/env python3
"""A/B calibration of the regression gate: planted slowdowns of known size, and A/A calm.

Usage: python scripts/bench_ab.py DIR [--pairs 10] [--levels 1.25,1.5,2,10]
       [--limit-pct 20] [--warmup-runs 3] [--run-args "ARGS"] [--keep KEEPDIR]
       python scripts/bench_ab.py --reports KEEPDIR [--limit-pct 20]   (analyse kept runs)

Every run is a real ``python -m fsyncbench run DIR`` process (default options unless
``--run-args`` says otherwise). The planted regression is an ``LD_PRELOAD`` shim of this
project (``scripts/slowsync.c``, built here with cc) that makes every ``fsync()`` and
``fdatasync()`` slower by a set time, busy-waiting after the real call: a storage path
whose flush got slower. Level L adds (L - 1) x the p50 of ``write+fdatasync`` measured in
the first clean run, so that row's p50 becomes about L times as slow; the commits slow down
by their own number of syncs, O_DSYNC and O_SYNC writes (no fsync call) not at all.

The sequence: ``--warmup-runs`` clean runs, then for each of ``--pairs`` cycles
``--clean-per-cycle`` clean runs (2: the A/A pairs) followed by one planted run of each level (levels in turn, so slow drifts of the machine
reach every level alike). Clean runs save their reports into one history directory and read
their earlier runs from it (the default ``run --history``), as a user's runs accumulate;
planted runs save elsewhere and never enter the history.

Each candidate (a planted run, or a clean run as A/A) is compared with the clean run just
before it as baseline A, twice, with ``fsyncbench.api.compare(..., fail_on_regression=LIMIT)``,
the function ``fsyncbench compare A B --fail-on-regression LIMIT`` calls:

- **with history**: A as saved, with the earlier runs it recorded (from the 4th clean run on
  A has at least 3): the basis "history";
- **without history**: A with its earlier runs removed: the basis "pair".

Printed per level and basis: the pairs, the share the gate caught (exit 1), the share where
it could not test everything it was asked to (exit 4); for A/A the share of pairs with any
"significant" statistic in the table and the share where the gate fired: false alarms.

Targets (issue "A gate that catches real regressions"): A/A false alarms <= 5 % of pairs with
and without history; with >= 3 earlier runs 10x caught in 100 %, 2x >= 95 %, 1.5x >= 80 %;
without history 10x 100 %, 2x >= 80 %; no gate passes (exit 0) with an untested statistic.
This script reports; it gates nothing and asserts no duration.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
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

from fsyncbench import api  # noqa: E402
from fsyncbench.errors import FsyncbenchError  # noqa: E402
from fsyncbench.model import Report  # noqa: E402
from fsyncbench.report import store  # noqa: E402

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
    """One ``fsyncbench run``; the path of the report it saved."""
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


def judge(a: Report, b: Report, limit: float) -> dict[str, object]:
    """compare A B --fail-on-regression LIMIT: what the table and the gate said."""
    try:
        c = api.compare([a, b], fail_on_regression=limit)
    except FsyncbenchError as exc:
        return {"error": str(exc), "exit": 2}
    assert c.pair is not None
    significant = [
        f"{cc.name} p{q.percentile:g} {q.ratio:.2f}x"
        for cc in c.pair.configs
        for q in (cc.p50, cc.p99)
        if q.significant
    ]
    bases = sorted({q.basis for cc in c.pair.configs for q in (cc.p50, cc.p99) if q.p_value})
    return {
        "significant": significant,
        "regressions": [f"{r.name} p{r.statistic.percentile:g}" for r in c.regressions],
        "not_checked": list(c.not_checked),
        "exit": 1 if c.regressions else 4 if c.not_checked else 0,
        "bases": bases,
    }


def analyse(clean: list[Path], planted: list[tuple[float, Path, Path]], limit: float) -> dict:
    """Every comparison (module text); returns the rows and prints the tables."""
    loaded = {p: store.load_report(p) for p in clean}
    rows: list[dict[str, object]] = []
    for j in range(1, len(clean)):
        a, b = loaded[clean[j - 1]], loaded[clean[j]]
        hist = min((len(r.earlier) for r in a.results), default=0) >= 3
        for basis, base in (("history", a), ("none", without_history(a))):
            if basis == "history" and not hist:
                continue
            rows.append({"level": 1.0, "basis": basis, **judge(base, b, limit)})
    for level, a_path, b_path in planted:
        a, b = loaded[a_path], store.load_report(b_path)
        hist = min((len(r.earlier) for r in a.results), default=0) >= 3
        for basis, base in (("history", a), ("none", without_history(a))):
            if basis == "history" and not hist:
                continue
            rows.append({"level": level, "basis": basis, **judge(base, b, limit)})
    table = []
    for level in sorted({float(r["level"]) for r in rows}):  # type: ignore[arg-type]
        for basis in ("history", "none"):
            mine = [r for r in rows if r["level"] == level and r["basis"] == basis]
            if not mine:
                continue
            n = len(mine)
            fired = sum(1 for r in mine if r["exit"] == 1)
            cannot = sum(1 for r in mine if r["exit"] == 4)
            errors = sum(1 for r in mine if r["exit"] == 2)
            anysig = sum(1 for r in mine if r.get("significant"))
            label = "A/A" if level == 1.0 else f"{level:g}x"
            table.append(
                [
                    label,
                    "with >= 3 earlier runs" if basis == "history" else "without history",
                    n,
                    f"{100 * anysig / n:.0f} %" if level == 1.0 else "",
                    f"{100 * fired / n:.0f} %",
                    f"{100 * cannot / n:.0f} %",
                    errors,
                ]
            )
    print(
        tabulate(
            table,
            headers=[
                "planted",
                "baseline",
                "pairs",
                "any significant",
                "gate fired (exit 1)",
                "cannot tell (exit 4)",
                "errors",
            ],
            tablefmt="github",
        )
    )
    alarms = [r for r in rows if r["level"] == 1.0 and (r.get("significant") or r["exit"] == 1)]
    for r in alarms:
        print(f"A/A alarm ({r['basis']}): {r.get('significant')} {r.get('regressions')}")
    return {"rows": rows, "table": table}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", type=Path, nargs="?", help="the directory to measure")
    parser.add_argument("--pairs", type=int, default=10, help="planted runs per level (10)")
    parser.add_argument("--levels", default="1.25,1.5,2,10", help="slowdowns of fdatasync p50")
    parser.add_argument("--limit-pct", type=float, default=20.0, help="--fail-on-regression")
    parser.add_argument(
        "--warmup-runs", type=int, default=3, help="clean runs before the first pair"
    )
    parser.add_argument(
        "--clean-per-cycle", type=int, default=2, help="clean runs per cycle (A/A pairs; 2)"
    )
    parser.add_argument("--run-args", default="", help="extra arguments for fsyncbench run")
    parser.add_argument("--keep", type=Path, help="keep every report in this directory")
    parser.add_argument("--reports", type=Path, help="analyse the runs kept in this directory")
    args = parser.parse_args()
    if args.reports:
        plan = json.loads((args.reports / "plan.json").read_text())
        clean = [args.reports / p for p in plan["clean"]]
        planted = [(lv, args.reports / a, args.reports / b) for lv, a, b in plan["planted"]]
        analyse(clean, planted, args.limit_pct)
        return 0
    if args.dir is None:
        parser.error("DIR or --reports is required")
    levels = [float(x) for x in args.levels.split(",")]
    extra = shlex.split(args.run_args)
    with tempfile.TemporaryDirectory(prefix="bench-ab-") as tmp:
        work = args.keep or Path(tmp)
        (work / "clean").mkdir(parents=True, exist_ok=True)
        (work / "planted").mkdir(parents=True, exist_ok=True)
        lib = build_shim(Path(tmp))
        env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "SLOWSYNC_NS")}
        clean: list[Path] = []
        planted: list[tuple[float, Path, Path]] = []
        t0 = time.monotonic()

        def record() -> None:
            (work / "plan.json").write_text(
                json.dumps(
                    {
                        "clean": [str(p.relative_to(work)) for p in clean],
                        "planted": [
                            (lv, str(a.relative_to(work)), str(b.relative_to(work)))
                            for lv, a, b in planted
                        ],
                    }
                )
            )

        for _ in range(args.warmup_runs):
            clean.append(fsb_run(args.dir, work / "clean", extra, env))
        base = store.load_report(clean[0], samples=False)
        p50 = next(r.summary.p50_ns for r in base.results if r.name == "write+fdatasync")
        print(f"write+fdatasync p50 of the first clean run: {p50 / 1e3:.1f} us", flush=True)
        for k in range(args.pairs):
            for _ in range(args.clean_per_cycle):
                clean.append(fsb_run(args.dir, work / "clean", extra, env))
            for level in levels:
                delay = int(round((level - 1.0) * p50))
                slow = {**env, "LD_PRELOAD": str(lib), "SLOWSYNC_NS": str(delay)}
                b = fsb_run(args.dir, work / "planted", [*extra, "--no-history"], slow)
                planted.append((level, clean[-1], b))
            record()
            print(
                f"cycle {k + 1}/{args.pairs} done after {time.monotonic() - t0:.0f} s", flush=True
            )
        clean.append(fsb_run(args.dir, work / "clean", extra, env))
        record()
        result = analyse(clean, planted, args.limit_pct)
        (work / "result.json").write_text(json.dumps(result, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
