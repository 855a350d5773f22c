"""``fsyncbench host``: the host record for DIR, without measuring."""

from __future__ import annotations

import argparse

from fsyncbench import api
from fsyncbench.cli.output import EXIT_OK, emit, outputs
from fsyncbench.cli.parsing import Subparsers
from fsyncbench.cli.shared_options import (
    add_assume_option,
    add_dir_argument,
    add_format_option,
    add_output_option,
)
from fsyncbench.options import TABLE_FORMATS

NAME = "host"


def add_parser(sub: Subparsers) -> None:
    host = sub.add_parser(
        NAME,
        help="print the host record for DIR without measuring",
        description="Print the host record (OS, SQLite, filesystem, storage "
        "stack, devices, virtualization) for DIR; nothing is measured.",
    )
    add_dir_argument(host, "directory whose storage to describe (default: current directory)")
    add_format_option(host, TABLE_FORMATS)
    add_output_option(host)
    add_assume_option(host)


def handle(args: argparse.Namespace, _argv: list[str]) -> int:
    host = api.host_record(args.dir, assume=args.assume or (), outputs=outputs(args))
    emit(args, api.render(host, args.format))
    return EXIT_OK
