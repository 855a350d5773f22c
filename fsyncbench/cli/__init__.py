"""Command line: the only package that prints or exits. :func:`main` parses the command
line with :func:`build_parser` and hands it to the command's module in
:mod:`fsyncbench.cli.commands` (one per command: its options, and its handler, which makes
one call into :mod:`fsyncbench.api` that returns the result or raises, prints it or writes
it to ``-o FILE``, saves the report files and returns the exit code). Here: the commands in
order, the top-level parser, signals, and the one line (never a traceback) each error ends
with.

Exit codes (:mod:`fsyncbench.cli.output`): 0 ok; 1 durability risk found (only when a gate
option asks); 2 usage or runtime error (one line on stderr, never a traceback).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Protocol

from fsyncbench import __version__
from fsyncbench.cli.commands import audit, compare, crash, host, powercut, powerloss, run, show
from fsyncbench.cli.output import (
    EXIT_BUG,
    EXIT_CANNOT_TELL,
    EXIT_ERROR,
    EXIT_OK,
    EXIT_RISK,
    Stdout,
    encodable_streams,
)
from fsyncbench.cli.parsing import Parser, Subparsers, glue_negative_values
from fsyncbench.errors import FsyncbenchError, Interrupted

__all__ = ["main", "build_parser", "EXIT_OK", "EXIT_RISK", "EXIT_ERROR", "EXIT_CANNOT_TELL"]


class _Command(Protocol):
    """A module of :mod:`fsyncbench.cli.commands`."""

    NAME: str

    def add_parser(self, sub: Subparsers) -> None: ...

    def handle(self, args: argparse.Namespace, argv: list[str]) -> int: ...


#: The commands, in the order ``fsyncbench --help`` lists them.
_MODULES: tuple[_Command, ...] = (run, host, crash, audit, show, compare, powercut, powerloss)
#: Each command's handler, by name.
_COMMANDS: dict[str, Callable[[argparse.Namespace, list[str]], int]] = {
    command.NAME: command.handle for command in _MODULES
}


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="fsyncbench",
        description="What a durable SQLite journal commit costs on this machine, and "
        "whether the storage under it keeps what it acknowledges. Every command that prints a "
        "result (run, audit, show, compare, host, crash, powerloss, powercut verify) takes --format and "
        "-o/--output FILE; run, audit, crash, powerloss and powercut verify also save report "
        "files in --report-dir DIR (default ./reports).",
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"fsyncbench {__version__}",
        help="print the version and exit",
    )
    sub = parser.add_subparsers(
        dest="command",
        required=True,
        parser_class=Parser,
        help="the command; fsyncbench COMMAND --help for its options",
    )
    for command in _MODULES:
        command.add_parser(sub)
    return parser


def _terminate(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    stdout = sys.stdout
    sys.stdout = Stdout(stdout)
    try:
        with encodable_streams():
            return _main(argv)
    finally:
        try:
            sys.stdout.flush()
        except FsyncbenchError:
            pass
        sys.stdout = stdout


def _main(argv: list[str] | None) -> int:
    args_list = sys.argv[1:] if argv is None else argv
    if threading.current_thread() is threading.main_thread():
        # timeout(1), CI cancels, systemctl stop; a closed terminal or dropped SSH (SIGHUP);
        # Ctrl-\ (SIGQUIT): all end the run the way Ctrl-C does, removing the scratch dir
        for name in ("SIGTERM", "SIGHUP", "SIGQUIT"):
            if hasattr(signal, name):
                signal.signal(getattr(signal, name), _terminate)
    try:
        parser = build_parser()
        args = parser.parse_args(glue_negative_values(parser, args_list))
        return _COMMANDS[args.command](args, args_list)
    except FsyncbenchError as exc:
        print(f"fsyncbench: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except Interrupted as exc:  # while measuring: the message says what was cleaned up
        print(f"fsyncbench: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("fsyncbench: interrupted; nothing was written", file=sys.stderr)
        return EXIT_ERROR
    except OSError as exc:  # an I/O error no layer above named: still one line, exit 2
        where = f": {exc.filename}" if exc.filename else ""
        print(f"fsyncbench: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as exc:  # a bug: its traceback, then one line; not 1 (a gate's code)
        import traceback

        traceback.print_exc()
        print(
            f"fsyncbench: internal error (a bug in fsyncbench {__version__}; please report it "
            f"with the traceback above): {type(exc).__name__}: {exc}",
            file=sys.stderr,
        )
        return EXIT_BUG
