"""``fsyncbench crash``: the kill matrix, what a step journal buys an agent that is
SIGKILLed."""

from __future__ import annotations

import argparse
import time

from fsyncbench import api, powerloss
from fsyncbench.cli.output import finish_experiment, note, outputs
from fsyncbench.cli.parsing import Subparsers
from fsyncbench.cli.progress import Progress
from fsyncbench.cli.shared_options import (
    SEMANTICS_HELP,
    add_dir_argument,
    add_format_option,
    add_model_call_option,
    add_output_option,
    add_quiet_option,
    add_report_dir_options,
)
from fsyncbench.options import REPORT_FORMATS

NAME = "crash"


def add_parser(sub: Subparsers) -> None:
    crash = sub.add_parser(
        NAME,
        help="the kill matrix: what a step journal buys an agent that is SIGKILLed",
        description="Kill a scripted 10-step agent with SIGKILL at every "
        "step under four persistence policies, print the duplicate writes "
        "and extra tokens each policy costs (the answer first) and save the report "
        "(JSON + Markdown + HTML) in --report-dir.",
    )
    add_dir_argument(crash, "directory for the journal and outside-world databases (default: .)")
    crash.add_argument(
        "--journal-mode",
        metavar="MODE",
        help="journal_mode of the step journal (default wal; with --powerloss and neither "
        "this nor --synchronous: wal/full, wal/normal, wal/off and delete/full)",
    )
    crash.add_argument(
        "--synchronous",
        metavar="LEVEL",
        help="synchronous of the step journal (default full)",
    )
    crash.add_argument(
        "--fullfsync",
        metavar="VALUE",
        help="PRAGMA fullfsync of the step journal, on or off (default not set; with "
        "--powerloss under macOS semantics and no pragmas given, the durable rows with it "
        "and without: on a Mac only F_FULLFSYNC reaches past the drive's cache)",
    )
    # its earlier spelling, still read but not shown (run and the command are "powerloss")
    crash.add_argument(
        "--power-loss", dest="power_loss", choices=powerloss.MODELS, help=argparse.SUPPRESS
    )
    crash.add_argument(
        "--powerloss",
        dest="power_loss",
        choices=powerloss.MODELS,
        metavar="MODEL",
        help="make each kill also a simulated power cut of the agent's machine: its journal "
        "and checkpoint databases keep what the persistence model MODEL says survives "
        f"({', '.join(powerloss.MODELS)}; fsyncbench/powerloss/models.py), the outside world "
        "keeps everything",
    )
    crash.add_argument(
        "--semantics",
        choices=powerloss.SEMANTICS,
        help=f"which syncs the power cuts honour: {SEMANTICS_HELP}; default: this host's",
    )
    add_quiet_option(crash)
    add_model_call_option(crash)
    add_format_option(
        crash, REPORT_FORMATS, "the report is saved as JSON, Markdown and HTML in --report-dir"
    )
    add_output_option(crash)
    add_report_dir_options(crash)


def handle(args: argparse.Namespace, argv: list[str]) -> int:
    started = time.monotonic_ns()
    with Progress(quiet=args.quiet, unit="parts") as progress:
        outcome = api.kill_matrix(
            args.dir,
            journal_mode=args.journal_mode,
            synchronous=args.synchronous,
            power_loss=args.power_loss,
            semantics=args.semantics,
            outputs=outputs(args),
            fullfsync=args.fullfsync,
            progress=progress,
            notes=note,
        )
    return finish_experiment(outcome, args, argv, started)
