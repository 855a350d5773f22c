"""The options several commands share, each defined once: the directory argument, --quiet,
--format (and the old --json), -o/--output, --verbose, --report-dir and --no-report, the
pragma lists, --payload-bytes, --redact and --csv, --prometheus, the gates (--max-p99 and
the rest) and reading them, --assume, --vs, --model-call-ms, --secret-file."""

from __future__ import annotations

import argparse
from pathlib import Path

from fsyncbench import api
from fsyncbench.cli.parsing import model_call, output_file, path, prometheus_file
from fsyncbench.measure import plan
from fsyncbench.report.answer import DEFAULT_MODEL_CALL_MS

#: What each powerloss semantics honours (fsyncbench.powerloss.models, SEMANTICS), for the
#: help of crash --semantics and powerloss --semantics.
SEMANTICS_HELP = (
    "linux (every sync), macos (a plain fsync reaches only the drive's cache; F_FULLFSYNC, "
    "i.e. fullfsync=ON, flushes it) or windows (no directory syncs; a file's flush persists "
    "its own name's directory changes)"
)

#: The environment variable that holds a powercut listener's secret (powercut.secret.ENV_VAR).
SECRET_ENV = "FSYNCBENCH_POWERCUT_SECRET"


def add_dir_argument(p: argparse.ArgumentParser, what: str, default: str | None = ".") -> None:
    """The directory a command works in, DIR (optional; ``default`` when not given), whose
    help says ``what`` it is."""
    p.add_argument("dir", nargs="?", default=default, type=path, metavar="DIR", help=what)


def add_quiet_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--quiet",
        "-q",
        action="store_true",
        help="no progress bar (it is shown on stderr only when stderr is a terminal)",
    )


def add_pragma_options(p: argparse.ArgumentParser) -> None:
    """--journal-mode, --synchronous, --fullfsync as comma lists (run, powerloss)."""
    p.add_argument(
        "--journal-mode",
        metavar="MODES",
        help="comma list: delete,truncate,persist,memory,wal,off (default: delete,truncate,wal)",
    )
    p.add_argument(
        "--synchronous",
        metavar="LEVELS",
        help="comma list: off,normal,full,extra (default: off,normal,full)",
    )
    p.add_argument(
        "--fullfsync",
        metavar="VALUES",
        help="comma list: on,off (default on macOS: off,on; elsewhere not set)",
    )


def add_payload_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--payload-bytes",
        type=int,
        default=plan.DEFAULT_PAYLOAD_BYTES,
        metavar="N",
        help=f"size of each step's JSON output, in bytes (default {plan.DEFAULT_PAYLOAD_BYTES})",
    )


def add_format_option(
    p: argparse.ArgumentParser, choices: tuple[str, ...], extra: str = ""
) -> None:
    offered = ", ".join(choices)
    p.add_argument(
        "--format",
        choices=choices,
        default="text",
        help=f"what to print: {offered} (default text)"
        + (f"; {extra}" if extra else "")
        + ("" if "html" in choices else "; no html for this command"),
    )
    if "json" in choices:
        _add_json_alias(p)


def _add_json_alias(p: argparse.ArgumentParser) -> None:
    """The --json of earlier versions: the same as --format json (hidden from --help)."""
    p.add_argument(
        "--json", dest="format", action="store_const", const="json", help=argparse.SUPPRESS
    )


def add_verbose_option(
    p: argparse.ArgumentParser,
    whole: str = "the whole report (findings with their evidence, device counters, host, "
    "method, glossary) instead of the bottom line and a compact table",
    always: str = "Markdown, HTML and the saved report are always whole",
) -> None:
    p.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help=f"with --format text: {whole}; {always}",
    )


def add_output_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--output",
        "-o",
        type=output_file,
        metavar="FILE",
        help="write what would be printed (in --format) to FILE instead of standard "
        "output, durably; an existing FILE is replaced (-: standard output)",
    )


def add_report_dir_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--report-dir",
        type=path,
        default=Path("reports"),
        metavar="DIR",
        help="directory to save the report files in (<host>-<time>.json and .md; crash and "
        "powerloss: <host>-<time>-crash or -powerloss .json, .md and .html), created if "
        "needed (default ./reports)",
    )
    p.add_argument(
        "--no-report",
        action="store_true",
        help="save no report files (only print, or write --output)",
    )


def add_report_options(p: argparse.ArgumentParser) -> None:
    """What run, audit and show offer on the report they print: --redact and --csv,
    --prometheus, and the gates (:func:`gates` reads them)."""
    _add_sharing_options(p)
    _add_prometheus_option(p)
    _add_gate_options(p)


def _add_sharing_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--redact",
        action="store_true",
        help="remove hostname, serial numbers and user paths from every output",
    )
    p.add_argument(
        "--csv",
        type=path,
        metavar="FILE",
        help="also write the raw samples as CSV (configuration, primitive, kind, index, "
        "ns, slice, round); an existing FILE is replaced, as fio and hyperfine do",
    )


def _add_prometheus_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--prometheus",
        type=prometheus_file,
        metavar="FILE",
        help="also write the report's metrics (latency quantiles in seconds, verdicts) in "
        "the Prometheus text format for node_exporter's textfile collector, to FILE "
        "(name it *.prom in the collector's directory); replaced atomically by rename",
    )


def add_assume_option(p: argparse.ArgumentParser) -> None:
    from fsyncbench.judge.devices import DECLARABLE

    p.add_argument(
        "--assume",
        action="append",
        choices=sorted(DECLARABLE),
        metavar="FACT",
        help="state a fact the machine cannot show, recorded in the report as "
        "user-declared: plp = the drive has power-loss protection, so a fast flush "
        "on its write-back cache is plausible; protected-cache = the write-back cache in "
        "front of the disks (a RAID controller's battery- or flash-backed cache) survives "
        "a power cut (repeatable)",
    )


def _add_gate_options(p: argparse.ArgumentParser) -> None:
    """--max-p99, --max-p99-strict, --accept-disturbed, --fail-on, --config; :func:`gates`
    reads them."""
    p.add_argument(
        "--max-p99",
        metavar="DURATION",
        help="exit 1 when a configuration's p99 is above DURATION (e.g. 10ms, 500us); "
        "a p99 whose 95%% interval straddles DURATION is named (the next run may decide "
        "otherwise)",
    )
    p.add_argument(
        "--max-p99-strict",
        action="store_true",
        help="judge --max-p99 by the upper bound of p99's 95%% interval: pass only where "
        "p99 is shown to be below DURATION; exit 4 (cannot tell) where there is no interval",
    )
    p.add_argument(
        "--accept-disturbed",
        action="store_true",
        help="judge --max-p99 on a run whose rounds stayed disturbed by other processes "
        "(their flushes on the same disk, CPU wait, steal); without it such a run is "
        "'cannot tell' (exit 4)",
    )
    p.add_argument(
        "--fail-on",
        metavar="VERDICTS",
        help="exit 1 when a configuration's path verdict is one of these (comma list "
        "of no_flush, volatile_cache, unverifiable, honest_flush)",
    )
    p.add_argument(
        "--config",
        action="append",
        metavar="NAME",
        help="configurations the gates look at (comma list or repeated; default: "
        "all but the no-sync write baseline)",
    )


def gates(args: argparse.Namespace) -> api.Gates:
    """The gates the options of :func:`add_gate_options` ask for."""
    return api.Gates.parse(
        args.max_p99, args.fail_on, args.config, args.max_p99_strict, args.accept_disturbed
    )


def add_vs_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--vs",
        metavar="A,B",
        help="two configurations head to head, e.g. wal/full,truncate/full: how many times "
        "faster one ran at p50 and p99 (95%% intervals over the paired rounds) and what each "
        "loses in a power cut (default: the recommended one against its nearest rival)",
    )


def add_model_call_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model-call-ms",
        type=model_call,
        default=DEFAULT_MODEL_CALL_MS,
        metavar="MS",
        help="duration of one model call (or any unit of work a "
        "durable commit is set against), in milliseconds "
        f"(default {DEFAULT_MODEL_CALL_MS:g})",
    )


def add_secret_option(parser: argparse.ArgumentParser) -> None:
    """powercut write and verify: where the listener's secret comes from (never a
    command-line value: ps and the shell history show those)."""
    parser.add_argument(
        "--secret-file",
        type=path,
        metavar="FILE",
        help="a file holding the listener's secret (the one powercut listen printed and "
        f"wrote, copied to this machine); default: the {SECRET_ENV} environment variable. "
        "Without either the command refuses to start",
    )
