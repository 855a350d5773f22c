"""``fsyncbench audit``: the fsync auditor, evidence that a flush reaches stable media and a
verdict per storage path and sync primitive."""

from __future__ import annotations

import argparse

from fsyncbench import api
from fsyncbench.cli.output import finish_report, note, outputs
from fsyncbench.cli.parsing import Subparsers, path
from fsyncbench.cli.progress import Progress
from fsyncbench.cli.shared_options import (
    add_assume_option,
    add_dir_argument,
    add_format_option,
    add_model_call_option,
    add_output_option,
    add_quiet_option,
    add_report_dir_options,
    add_report_options,
    add_verbose_option,
    gates,
)
from fsyncbench.options import REPORT_FORMATS

NAME = "audit"


def add_parser(sub: Subparsers) -> None:
    aud = sub.add_parser(
        NAME,
        help="the fsync auditor: evidence that a flush really reaches "
        "stable media, and a verdict per storage path and sync primitive",
        description="Measure only what the verdict needs, print the evidence, "
        "the findings and one verdict per storage path and sync primitive, and "
        "save the report (JSON + Markdown) in --report-dir.",
    )
    add_dir_argument(
        aud, "directory on the storage to audit (default: current directory)", default=None
    )
    aud.add_argument(
        "--from",
        dest="from_report",
        type=path,
        metavar="REPORT",
        help="re-derive the verdict of a saved report (run or audit) from its "
        "recorded facts; measures nothing",
    )
    aud.add_argument(
        "--samples",
        type=int,
        default=200,
        metavar="N",
        help="samples per flush primitive and commit configuration (default 200)",
    )
    aud.add_argument(
        "--budget-seconds",
        type=float,
        default=5.0,
        metavar="S",
        help="most time one of those may take, in seconds (default 5)",
    )
    aud.add_argument(
        "--compare-syncs",
        type=int,
        default=200,
        metavar="N",
        help="syncs per side of libc vs raw syscall and of the second-descriptor "
        "check (default 200)",
    )
    aud.add_argument(
        "--sweep-repeats",
        type=int,
        default=3,
        metavar="N",
        help="syncs per size of the dirty-size sweep (default 3)",
    )
    aud.add_argument(
        "--sweep-max-mib",
        type=int,
        default=64,
        metavar="N",
        help="largest dirty size of the sweep, in MiB (default 64)",
    )
    aud.add_argument(
        "--trace-commits",
        type=int,
        default=20,
        metavar="N",
        help="commits traced with strace per pragma combination (default 20)",
    )
    aud.add_argument("--no-trace", action="store_true", help="do not trace syncs per commit")
    add_quiet_option(aud)
    add_format_option(
        aud,
        REPORT_FORMATS,
        "html: a self-contained page, also saved as <report>.html in --report-dir",
    )
    add_output_option(aud)
    add_verbose_option(aud)
    add_report_dir_options(aud)
    add_model_call_option(aud)
    add_assume_option(aud)
    add_report_options(aud)


def handle(args: argparse.Namespace, argv: list[str]) -> int:
    audit_gates = gates(args)
    with Progress(quiet=args.quiet) as progress:
        report = api.audit(
            args.dir,
            from_report=args.from_report,
            samples=args.samples,
            budget_seconds=args.budget_seconds,
            compare_syncs=args.compare_syncs,
            sweep_repeats=args.sweep_repeats,
            sweep_max_mib=args.sweep_max_mib,
            trace_commits=args.trace_commits,
            trace=not args.no_trace,
            assume=args.assume or (),
            redact=args.redact,
            outputs=outputs(args),
            progress=progress,
            notes=note,
            command_line=["fsyncbench", *argv],
        )
    return finish_report(report, args, audit_gates)
