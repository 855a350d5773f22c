"""``fsyncbench compare``: two reports side by side with significance, or a fleet table; the
regression gate."""

from __future__ import annotations

import argparse
import sys

from fsyncbench import api
from fsyncbench.cli.output import (
    EXIT_CANNOT_TELL,
    EXIT_OK,
    EXIT_RISK,
    emit,
    gates_to_stderr,
    outputs,
)
from fsyncbench.cli.parsing import Subparsers, path, percent
from fsyncbench.cli.shared_options import (
    add_format_option,
    add_output_option,
    add_verbose_option,
)
from fsyncbench.options import COMPARE_FORMATS

NAME = "compare"


def add_parser(sub: Subparsers) -> None:
    cmp_ = sub.add_parser(
        NAME,
        help="compare reports: two side by side with significance, or a fleet table",
        description="Two reports: host differences and each configuration's "
        "p50 and p99 side by side with intervals and Holm-adjusted "
        "significance. A directory of reports (searched recursively for *.json), three or "
        "more reports, or --group-by: a fleet table grouped by host, disk model and kernel, "
        "sorted by one configuration's p99.",
    )
    cmp_.add_argument(
        "reports",
        nargs="+",
        type=path,
        metavar="REPORT",
        help="report JSON files, or directories of them (the first file is the baseline "
        "of --fail-on-regression)",
    )
    cmp_.add_argument(
        "--config",
        "--gate",
        action="append",
        metavar="NAME",
        dest="config",
        help="configuration to sort a fleet by (default wal/full), or the "
        "configurations --fail-on-regression gates (comma list or repeated; default: every "
        "one a journal could use, those without a per-commit sync included, all but the "
        "no-sync write)",
    )
    cmp_.add_argument(
        "--group-by",
        metavar="FIELDS",
        help="a fleet's rows: reports sharing these fields (comma list of host, disk, "
        "kernel, dir; default host,disk,kernel; dir: the directory a report lies in), or "
        "'report' for one row per report",
    )
    cmp_.add_argument(
        "--kind",
        choices=("run", "audit"),
        help="only reports of this kind (run and audit both save into reports/ by default)",
    )
    cmp_.add_argument(
        "--fail-on-regression",
        type=percent,
        metavar="PCT",
        help="exit 1 when a gated configuration's p50 or p99 is more than PCT %% slower "
        "than in the first report, and significantly so; exit 4 (cannot tell) for a "
        "statistic whose test could not have caught a slowdown of PCT %% (each one's "
        "detectable slowdown is shown), a configuration missing from a report, or runs "
        "measured with other options; exit 0 only when every gated statistic passed",
    )
    cmp_.add_argument(
        "--accept-disturbed",
        action="store_true",
        help="let --fail-on-regression judge reports whose rounds stayed disturbed by other "
        "processes; without it their statistics are 'cannot tell' (exit 4)",
    )
    cmp_.add_argument(
        "--vs",
        metavar="A,B",
        help="two reports only: the first's configuration A against the second's B head to "
        "head (how many times faster at p50 and p99, Welch's 95%% intervals over the two "
        "runs' rounds), e.g. --vs wal/full,truncate/full",
    )
    add_format_option(cmp_, COMPARE_FORMATS, "html: a self-contained page")
    add_output_option(cmp_)
    add_verbose_option(
        cmp_,
        "two reports in the whole table (each report's interval, n, p-values, the "
        "detectable slowdown, P(B>A)) with its notes, instead of the compact one",
        "Markdown, HTML and JSON are always whole",
    )


def handle(args: argparse.Namespace, _argv: list[str]) -> int:
    result = api.compare(
        args.reports,
        configs=args.config,
        fail_on_regression=args.fail_on_regression,
        outputs=outputs(args),
        group_by=args.group_by,
        kind=args.kind,
        accept_disturbed=args.accept_disturbed,
        vs=args.vs,
    )
    emit(args, api.render(result, args.format, verbose=args.verbose))
    if args.fail_on_regression is None:
        return EXIT_OK
    # the regression gate's lines: after the table, or on stderr when stdout carries JSON
    # or a page
    to_stderr = gates_to_stderr(args) or getattr(sys.stdout, "closed_by_reader", False)
    # text and Markdown carry the gate's lines (its answer first); a file written with
    # --output, JSON and HTML leave them to the terminal
    if to_stderr or args.output is not None:
        out = sys.stderr if to_stderr else sys.stdout
        for line in result.lines:
            print(line, file=out)
    if result.regressions:
        return EXIT_RISK
    return EXIT_CANNOT_TELL if result.not_checked else EXIT_OK
