"""``fsyncbench show``: a saved report rendered in --format, gated as run and audit gate."""

from __future__ import annotations

import argparse

from fsyncbench import api
from fsyncbench.cli.output import apply_gates, emit, gates_to_stderr, outputs
from fsyncbench.cli.parsing import Subparsers, path
from fsyncbench.cli.shared_options import (
    add_format_option,
    add_model_call_option,
    add_output_option,
    add_report_options,
    add_verbose_option,
    add_vs_option,
    gates,
)
from fsyncbench.options import REPORT_FORMATS

NAME = "show"


def add_parser(sub: Subparsers) -> None:
    show = sub.add_parser(
        NAME,
        help="render a saved report",
        description="Render a saved report (run, audit or powercut) in "
        "--format; nothing is measured.",
    )
    show.add_argument(
        "report",
        type=path,
        metavar="REPORT",
        help="a report JSON file written by run, audit or powercut verify",
    )
    add_format_option(show, REPORT_FORMATS, "html: a self-contained page with plots")
    add_output_option(show)
    add_verbose_option(show)
    add_model_call_option(show)
    add_vs_option(show)
    add_report_options(show)


def handle(args: argparse.Namespace, _argv: list[str]) -> int:
    show_gates = gates(args)
    report = api.load(args.report, redact=args.redact, gates=show_gates, outputs=outputs(args))
    text = api.render(
        report, args.format, model_call_ms=args.model_call_ms, verbose=args.verbose, vs=args.vs
    )
    if args.csv or args.prometheus:  # first: a failure leaves nothing half-done
        api.save(report, None, csv=args.csv, prometheus=args.prometheus)
    try:
        emit(args, text)
    except BaseException:
        if args.output:
            for written in (args.csv, args.prometheus):
                if written:
                    written.unlink(missing_ok=True)
        raise
    return apply_gates(api.gate(report, show_gates), to_stderr=gates_to_stderr(args))
