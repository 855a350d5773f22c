#!/usr/bin/env python3
"""Plot two fsyncbench reports together: the latency CDF of one configuration from each.

An example of reading the report JSON directly (no fsyncbench import needed): every result
keeps its raw samples in ``results[i].samples_ns``; ``results[i].name`` is the configuration
(``wal/full``, ``write+fdatasync``, ...).

    python scripts/plot_reports.py before.json after.json --config wal/full -o cdf.png
"""

from __future__ import annotations

import argparse
import json
import sys

import matplotlib

matplotlib.use("Agg")  # headless: write a file, open no window
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import FuncFormatter, NullFormatter


def samples(path: str, config: str) -> tuple[str, np.ndarray]:
    with open(path, encoding="utf-8") as fh:
        report = json.load(fh)
    for r in report["results"]:
        if r["name"] == config:
            label = f"{report['host']['hostname']} {report['created_utc']} ({r['primitive']})"
            return label, np.sort(np.asarray(r["samples_ns"], dtype=float))
    names = ", ".join(r["name"] for r in report["results"])
    sys.exit(f"{path} has no configuration {config!r} (it has {names})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("reports", nargs=2, help="two report JSON files")
    ap.add_argument("--config", default="wal/full", help="configuration to plot (default wal/full)")
    ap.add_argument("-o", "--output", default="cdf.png", help="image file (default cdf.png)")
    args = ap.parse_args()

    fig, ax = plt.subplots(figsize=(9, 5))
    for path in args.reports:
        label, x = samples(path, args.config)
        y = (np.arange(x.size) + 0.5) / x.size
        ax.plot(
            x / 1e6,
            y,
            label=f"{label}: p50 {np.percentile(x, 50) / 1e6:.3g} ms, "
            f"p99 {np.percentile(x, 99) / 1e6:.3g} ms",
        )
    ax.set_xscale("log")
    ax.set_yscale("logit")  # stretches both tails: p1 ... p50 ... p99 evenly readable
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"p{v * 100:.3g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("commit time (ms, log scale)")
    ax.set_ylabel("percentile (logit scale)")
    ax.set_title(f"{args.config}: latency CDF of two reports")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.output, dpi=120)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
