"""The machinery of the command line's grammar: the argparse parser class every command's
parser is made of (one-line usage errors, exit 2, "did you mean"), the argparse types that
read a value (a path, a percentage, milliseconds) and the gluing of negative values. What
the values mean is checked after parsing, in :mod:`fsyncbench.options` (through
:mod:`fsyncbench.api`)."""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path
from typing import ClassVar, TypeAlias

from fsyncbench import options
from fsyncbench.errors import FsyncbenchError, did_you_mean

__all__ = [
    "Parser",
    "Subparsers",
    "hint_for",
    "glue_negative_values",
    "path",
    "existing_dir",
    "output_file",
    "prometheus_file",
    "percent",
    "model_call",
]


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage dump), exit code 2, and "did you mean" for a
    near miss of a command, an option or a choice (:func:`hint_for`)."""

    #: the innermost parser of the command line being parsed (the command's, once argparse
    #: has dispatched to it): its options are the ones an unknown option is compared with
    innermost: ClassVar[argparse.ArgumentParser | None] = None

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[no-untyped-def]
        Parser.innermost = self
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> None:  # type: ignore[override]
        where = Parser.innermost or self
        hint = hint_for(message, where)
        raise FsyncbenchError(f"{message}{hint} (see {where.prog} --help)")


#: What a command's ``add_parser`` adds its parser to: the subcommands of ``fsyncbench``
#: (or of ``fsyncbench powercut``).
Subparsers: TypeAlias = "argparse._SubParsersAction[Parser]"


def _option_strings(parser: argparse.ArgumentParser) -> list[str]:
    return [o for a in parser._actions for o in a.option_strings if o.startswith("--")]


def hint_for(message: str, parser: argparse.ArgumentParser) -> str:
    """ "; did you mean --rounds?" for an argparse error ``message`` about an unknown option
    (compared with ``parser``'s long options) or an invalid choice (compared with the
    choices the message lists), or "" when nothing is close. Closeness is
    :func:`difflib.get_close_matches` at its default cutoff 0.6 (the ratio of matching
    characters; https://docs.python.org/3/library/difflib.html)."""
    unknown = re.match(r"unrecognized arguments: (.*)", message)
    if unknown:
        words = [w.split("=", 1)[0] for w in unknown.group(1).split() if w.startswith("--")]
        return did_you_mean(words, _option_strings(parser))
    choice = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
    if choice:
        return did_you_mean([choice.group(1)], re.findall(r"'([^']*)'", choice.group(2)))
    return ""


def glue_negative_values(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """``--max-p99 -5ms`` -> ``--max-p99=-5ms``: argparse takes a value starting with "-"
    and a digit for an option of its own and says "expected one argument"; glued, the
    value reaches the option's own check, which names what is wrong with it."""
    takes_value: set[str] = set()
    stack = [parser]
    while stack:
        p = stack.pop()
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                stack.extend(action.choices.values())
            elif action.option_strings and action.nargs is None and action.const is None:
                takes_value.update(action.option_strings)
    out, i = [], 0
    while i < len(argv):
        tok = argv[i]
        nxt = argv[i + 1] if i + 1 < len(argv) else ""
        if (
            tok in takes_value
            and len(nxt) > 1
            and nxt[0] == "-"
            and (nxt[1].isdigit() or nxt[1] == ".")
        ):
            out.append(f"{tok}={nxt}")
            i += 2
            continue
        out.append(tok)
        i += 1
    return out


def path(text: str) -> Path:
    """argparse type for paths: an empty string is an error, not the current directory."""
    if not text:
        raise argparse.ArgumentTypeError("empty path")
    return Path(text)


def existing_dir(text: str) -> Path:
    """argparse type for a directory that must exist (--history)."""
    found = path(text)
    if not found.is_dir():
        raise argparse.ArgumentTypeError(
            f"{text} is not a directory" if found.exists() else f"directory {text} does not exist"
        )
    return found


def output_file(text: str) -> Path | None:
    """argparse type of --output FILE: not empty, and not written as a directory; ``-`` is
    standard output (None), as for most tools that take an output file."""
    if text == "-":
        return None
    if text.endswith(("/", os.sep)) and len(text) > 1:
        raise argparse.ArgumentTypeError(
            f"{text} names a directory: --output takes a FILE (report files go to --report-dir DIR)"
        )
    return path(text)


def prometheus_file(text: str) -> Path:
    """argparse type of --prometheus FILE: not empty, not written as a directory, and not
    ``-`` (which -o reads as standard output: here it would be a file named "-")."""
    if text == "-":
        raise argparse.ArgumentTypeError(
            "- is not a file: --prometheus writes a FILE for node_exporter's textfile "
            "collector (to print the metrics, write them to a file and cat it)"
        )
    if text.endswith(("/", os.sep)) and len(text) > 1:
        example = text.rstrip("/" + os.sep) + "/fsyncbench.prom"
        raise argparse.ArgumentTypeError(
            f"{text} names a directory: --prometheus takes a FILE, e.g. {example}"
        )
    return path(text)


def percent(text: str) -> float:
    """argparse type of a percentage (:func:`fsyncbench.options.percent`)."""
    try:
        return options.percent(text)
    except FsyncbenchError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def model_call(text: str) -> float:
    """--model-call-ms: milliseconds (range: :func:`fsyncbench.options.model_call_ms`)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected milliseconds, got {text!r}") from None
    return options.model_call_ms(value, text)
