#!/usr/bin/env python3
"""Side by side: fsyncbench, fio and pg_test_fsync timing the same sync on one directory.

Usage: python scripts/bench_fidelity.py DIR [--rounds 6] [--seconds 2] [--pg-runs 2]
       [--pg-seconds 1]

Interleaved: each round runs fsyncbench (both ways) and fio once, in an order that rotates
from round to round, in short turns (so a drift of the storage, or other load on the
machine, does not favour one tool); pg_test_fsync, which takes ~15 s per run, joins
``--pg-runs`` evenly spaced rounds. All on the same file system, in one fresh
``.fsyncbench-*`` directory of DIR that is removed at the end. Around each tool's
turn the device flush counters are read (``fsyncbench.host.read_flush_counters``, Linux
``/sys/block/<disk>/stat`` fields 16-17), giving device flushes per operation and the
kernel-accounted time per flush (flush ms / flushes: how long the device itself took).

What is compared, and why these settings:

- **fsyncbench write+fdatasync**: its raw primitive, ``pwrite`` of 4 KiB at offset 0 of a
  preallocated file, then ``fdatasync``, timed together (``perf_counter_ns``).
- **fsyncbench fdatasync alone**: the same loop, but the 4 KiB write happens in the untimed
  ``prepare`` step, so only ``fdatasync`` is timed: exactly what fio's ``sync`` latency
  measures.
- **fio** ``--rw=write --ioengine=sync --fdatasync=1 --bs=4k`` (the etcd-style check) with
  ``--size=4k --time_based --runtime=S --invalidate=0``: the file is one 4 KiB block, so
  every write wraps around to offset 0 and overwrites the same allocated block, then
  fdatasyncs. That is the operation fsyncbench times. fio's default (a large ``--size``)
  would instead walk through a fresh region of the file; each fdatasync would then also
  allocate and journal new extents on the first pass, a different operation. With a
  one-block file every write starts a new "loop", and fio by default drops the file's page
  cache at each loop (``posix_fadvise(DONTNEED)``, strace shows one per write), so each
  write would land on an evicted page; ``--invalidate=0`` keeps the page cached, as it is for
  fsyncbench (and for fio's own etcd check with a large file, where it drops it only once). fio reports the fdatasync latency on its own
  (JSON ``sync.lat_ns``) and the write's completion latency separately (``write.clat_ns``);
  its percentiles come from a log-linear histogram (about 1.6 % resolution).
- **pg_test_fsync** (PostgreSQL): "one 8kB write" + ``fdatasync``, 8 KiB at offset 0 of a
  16 MB file; it reports only a mean (ops/sec, usecs/op), so it is compared with fsyncbench's
  mean of write+fdatasync. It runs all of its tests each time (``-s`` seconds each).

Ratios (per round, then the median over rounds): fsyncbench/fio of the medians of
fdatasync alone (the same operation on both sides; target <= 1.05), and of write+fdatasync
against fio's write median + sync median (medians do not add exactly; a cross-check). They
are also given over the *quiet* rounds only: those where every tool's turn saw at most
:data:`QUIET_FLUSHES_PER_OP` device flushes per operation of its own, i.e. where no other
process was flushing the same disk at the same time (the counters tell).

Missing tools are skipped with the install command (Debian packages ``fio``, ``postgresql``).
This script reports; it gates nothing. Other load on the machine shows up in every tool's
figures alike; the load average is printed before and after.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
from tabulate import tabulate

from fsyncbench import host as hostmod
from fsyncbench.fmt import fmt_ns
from fsyncbench.measure.timing import Sampler
from fsyncbench.measure.workloads import BLOCK_BYTES, FlushWorkload, SyncPrimitive, scratch_dir

FIO_INSTALL = "fio not found: install it with `apt-get install -y fio` (Debian/Ubuntu package fio)"
PG_INSTALL = (
    "pg_test_fsync not found: install it with `apt-get install -y postgresql` (Debian/"
    "Ubuntu; it lands in /usr/lib/postgresql/<version>/bin/pg_test_fsync)"
)
#: A turn with more device flushes per own sync than this shared the disk with other writers.
QUIET_FLUSHES_PER_OP = 1.15
#: pg_test_fsync's first section ("Compare file sync methods using one 8kB write"), fdatasync row.
PG_FDATASYNC = re.compile(r"^\s+fdatasync\s+([\d.]+) ops/sec\s+(\d+) usecs/op", re.M)


class SyncAlone:
    """fsyncbench's raw primitive with the 4 KiB write moved into the untimed prepare()."""

    def __init__(self, directory: Path) -> None:
        self._w = FlushWorkload(directory, SyncPrimitive("fdatasync", os.fdatasync))
        self._fd, self._buf = self._w._fd, os.urandom(BLOCK_BYTES)
        self.syncs = 0

    def prepare(self, i: int) -> None:
        os.pwrite(self._fd, self._buf, 0)

    def run(self, _args: None) -> None:
        os.fdatasync(self._fd)
        self.syncs += 1

    def close(self) -> None:
        self._w.close()


def find_pg_test_fsync() -> str | None:
    found = shutil.which("pg_test_fsync")
    if found:
        return found
    candidates = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/pg_test_fsync"),
        key=lambda p: int(re.search(r"/(\d+)/bin", p).group(1)),
    )
    return candidates[-1] if candidates else None


def counted(disks, fn):
    """Run fn() with the flush counters read around it: (fn's value, flushes, flush ms)."""
    before = hostmod.read_flush_counters(disks)
    value = fn()
    deltas = hostmod.flush_deltas(before, hostmod.read_flush_counters(disks))
    known = [d for d in deltas if d.flushes is not None and d.flush_time_ms is not None]
    if not known:
        return value, None, None
    least = min(known, key=lambda d: d.flushes)  # the leaf disk that saw the fewest
    return value, least.flushes, least.flush_time_ms


def run_fsyncbench(workload, seconds: float) -> dict:
    sampler = Sampler(workload, max_samples=10**7, warmup=50)
    try:
        sampler.run(seconds)
    finally:
        workload.close()
    x = np.asarray(sampler.samples, dtype=np.float64)
    return {
        "n": x.size,
        "p50": float(np.percentile(x, 50)),
        "p99": float(np.percentile(x, 99)),
        "mean": float(x.mean()),
        "ops": x.size + sampler.untimed,
    }


def run_fio(fio: str, work: Path, seconds: float) -> dict:
    cmd = [
        fio,
        "--name=fidelity",
        f"--directory={work}",
        "--filename=fio-4k.dat",
        "--rw=write",
        "--ioengine=sync",
        "--fdatasync=1",
        "--bs=4k",
        "--size=4k",
        "--invalidate=0",
        "--time_based",
        f"--runtime={seconds:g}",
        "--output-format=json",
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    job = json.loads(out[out.index("{") :])["jobs"][0]
    sync, wr = job["sync"]["lat_ns"], job["write"]["clat_ns"]
    return {
        "n": sync["N"],
        "p50": sync["percentile"]["50.000000"],
        "p99": sync["percentile"]["99.000000"],
        "mean": sync["mean"],
        "write_p50": wr["percentile"]["50.000000"],
        "write_p99": wr["percentile"]["99.000000"],
        "ops": sync["N"],
    }


def run_pg(pg: str, work: Path, seconds: int) -> dict:
    out = subprocess.run(
        [pg, "-f", str(work / "pg_test_fsync.dat"), "-s", str(seconds)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    m = PG_FDATASYNC.search(out)
    if not m:
        raise RuntimeError("could not find the fdatasync line in pg_test_fsync's output:\n" + out)
    ops_per_s = float(m.group(1))
    # every one of its ~14 tests syncs; the counters cannot isolate the fdatasync test
    return {"ops_per_s": ops_per_s, "mean": float(m.group(2)) * 1e3, "ops": None}


def loadavg() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", type=Path)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument(
        "--seconds", type=float, default=2.0, help="time per fsyncbench and fio turn (default 2)"
    )
    parser.add_argument(
        "--pg-runs",
        type=int,
        default=2,
        help="pg_test_fsync runs, in evenly spaced rounds (default 2)",
    )
    parser.add_argument(
        "--pg-seconds",
        type=int,
        default=1,
        help="pg_test_fsync -s: seconds per each of its tests (default 1)",
    )
    args = parser.parse_args()
    if not args.dir.is_dir():
        print(f"bench_fidelity: {args.dir} is not a directory", file=sys.stderr)
        return 2

    fio = shutil.which("fio")
    pg = find_pg_test_fsync()
    for missing, text in ((fio, FIO_INSTALL), (pg, PG_INSTALL)):
        if missing is None:
            print(text)
    host = hostmod.collect_host(str(args.dir))
    disks = [d.name for d in host.target.disks if d.has_flush_counters]
    m = host.target.mount
    print(
        f"Directory {host.target.path}: {m.fs_type if m else '?'} on "
        f"{' -> '.join(host.target.chain) or 'no block device'}; flush counters on "
        f"{', '.join(disks) or 'none'}; load average {loadavg()}"
    )
    print(
        f"fio: {fio or 'missing'}; pg_test_fsync: {pg or 'missing'}; {args.rounds} rounds, "
        f"{args.seconds:g} s per fsyncbench/fio turn, pg_test_fsync -s {args.pg_seconds}\n"
    )

    tools = ["fsyncbench write+fdatasync", "fsyncbench fdatasync alone"]
    if fio:
        tools.append("fio")
    if pg:
        tools.append("pg_test_fsync")
    pg_rounds = {round(i * args.rounds / args.pg_runs) for i in range(args.pg_runs)}
    rows, per_round = [], []
    with scratch_dir(args.dir) as work:
        for rnd in range(args.rounds):
            here = [t for t in tools if t != "pg_test_fsync" or rnd in pg_rounds]
            order = here[rnd % len(here) :] + here[: rnd % len(here)]
            got = {}
            for tool in order:
                if tool == "fsyncbench write+fdatasync":
                    fn = lambda: run_fsyncbench(  # noqa: E731
                        FlushWorkload(work, SyncPrimitive("fdatasync", os.fdatasync)), args.seconds
                    )
                elif tool == "fsyncbench fdatasync alone":
                    fn = lambda: run_fsyncbench(SyncAlone(work), args.seconds)  # noqa: E731
                elif tool == "fio":
                    fn = lambda: run_fio(fio, work, args.seconds)  # noqa: E731
                else:
                    fn = lambda: run_pg(pg, work, args.pg_seconds)  # noqa: E731
                r, flushes, flush_ms = counted(disks, fn)
                r["flushes"], r["flush_ms"] = flushes, flush_ms
                got[tool] = r
                rows.append(_row(rnd + 1, tool, r))
            per_round.append(got)

    print(
        tabulate(
            rows,
            headers=[
                "round",
                "tool",
                "operation",
                "n",
                "median",
                "p99",
                "mean",
                "device flushes/op",
                "kernel time/flush",
            ],
            tablefmt="simple",
            disable_numparse=True,
        )
    )
    print()
    summary = []
    for tool in tools:
        vals = [g[tool] for g in per_round if tool in g]
        med = lambda k, vals=vals: statistics.median(v[k] for v in vals) if k in vals[0] else None  # noqa: E731
        summary.append([tool, fmt_ns(med("p50")), fmt_ns(med("p99")), fmt_ns(med("mean"))])
    print("Median over rounds:")
    print(
        tabulate(
            summary,
            headers=["tool", "median", "p99", "mean"],
            tablefmt="simple",
            disable_numparse=True,
        )
    )
    print()
    if fio:
        alone = [g["fsyncbench fdatasync alone"]["p50"] / g["fio"]["p50"] for g in per_round]
        both = [
            g["fsyncbench write+fdatasync"]["p50"] / (g["fio"]["p50"] + g["fio"]["write_p50"])
            for g in per_round
        ]
        print(
            "Ratio fsyncbench/fio of medians, fdatasync alone (same operation; target <= 1.05): "
            + ", ".join(f"{x:.3f}" for x in alone)
            + f"; median {statistics.median(alone):.3f}"
        )
        print(
            "Ratio fsyncbench write+fdatasync / (fio write median + fio sync median): "
            + ", ".join(f"{x:.3f}" for x in both)
            + f"; median {statistics.median(both):.3f}"
        )
        quiet = [
            i
            for i, g in enumerate(per_round)
            if all(
                g[t].get("flushes") is not None
                and g[t].get("ops")
                and g[t]["flushes"] / g[t]["ops"] <= QUIET_FLUSHES_PER_OP
                for t in g
                if t != "pg_test_fsync"
            )
        ]
        if quiet:
            print(
                f"Quiet rounds (no other flushes on the disk during any turn: "
                f"{', '.join(str(i + 1) for i in quiet)}): fdatasync-alone ratio median "
                f"{statistics.median(alone[i] for i in quiet):.3f}, write+fdatasync ratio median "
                f"{statistics.median(both[i] for i in quiet):.3f}"
            )
        else:
            print("No quiet round: other processes flushed the same disk during every round.")
    if pg:
        ratio = [
            g["fsyncbench write+fdatasync"]["mean"] / g["pg_test_fsync"]["mean"]
            for g in per_round
            if "pg_test_fsync" in g
        ]
        print(
            "Ratio fsyncbench write+fdatasync (4 KiB) / pg_test_fsync one 8kB write + fdatasync, "
            "of means: "
            + ", ".join(f"{x:.3f}" for x in ratio)
            + f"; median {statistics.median(ratio):.3f}"
        )
    flush_ms = [
        (g[t]["flush_ms"], g[t]["flushes"]) for g in per_round for t in g if g[t]["flushes"]
    ]
    if flush_ms:
        total_ms = sum(a for a, _ in flush_ms)
        total = sum(b for _, b in flush_ms)
        print(
            f"Kernel-accounted device flush time over all turns: {total} flushes, "
            f"{total_ms} ms, {1e3 * total_ms / total:.0f} us per flush "
            "(block layer's time from flush issue to completion)"
        )
    print(f"Load average at the end: {loadavg()}")
    return 0


def _row(rnd: int, tool: str, r: dict) -> list:
    if tool == "pg_test_fsync":
        op = "8 KiB pwrite@0 + fdatasync (mean only)"
    elif tool == "fio":
        op = "fdatasync after 4 KiB write@0 (sync lat)"
    elif tool.endswith("alone"):
        op = "fdatasync after untimed 4 KiB pwrite@0"
    else:
        op = "4 KiB pwrite@0 + fdatasync"
    per_op = (
        f"{r['flushes'] / r['ops']:.2f}"
        if r.get("flushes") is not None and r.get("ops")
        else "-"
        if r.get("flushes") is None
        else f"{r['flushes']} in all its tests"
    )
    per_flush = f"{1e3 * r['flush_ms'] / r['flushes']:.0f} us" if r.get("flushes") else "-"
    n = r.get("n", "-")
    row = [
        rnd,
        tool,
        op,
        n,
        fmt_ns(r.get("p50")),
        fmt_ns(r.get("p99")),
        fmt_ns(r.get("mean")),
        per_op,
        per_flush,
    ]
    if tool == "fio":
        row[2] += f"; write clat p50 {fmt_ns(r['write_p50'])}"
    return row


if __name__ == "__main__":
    raise SystemExit(main())
