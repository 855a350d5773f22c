"""The command line's grammar: argparse definitions of every command and option, and the
argparse types that read a value (a path, a percentage, milliseconds). What the values mean
is checked after parsing, in :mod:`fsyncbench.options` (through :mod:`fsyncbench.api`)."""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path
from typing import ClassVar

from fsyncbench import __version__, options, powerloss
from fsyncbench.errors import FsyncbenchError, did_you_mean
from fsyncbench.measure import intervals, plan, writers
from fsyncbench.options import COMPARE_FORMATS, REPORT_FORMATS, TABLE_FORMATS, VERIFY_FORMATS
from fsyncbench.report.answer import DEFAULT_MODEL_CALL_MS

__all__ = [
    "build_parser",
    "glue_negative_values",
    "REPORT_FORMATS",
    "TABLE_FORMATS",
    "VERIFY_FORMATS",
]


#: What each powerloss semantics honours (fsyncbench.powerloss.models, SEMANTICS), for the
#: help of crash --semantics and powerloss --semantics.
SEMANTICS_HELP = (
    "linux (every sync), macos (a plain fsync reaches only the drive's cache; F_FULLFSYNC, "
    "i.e. fullfsync=ON, flushes it) or windows (no directory syncs; a file's flush persists "
    "its own name's directory changes)"
)


def _path(text: str) -> Path:
    """argparse type for paths: an empty string is an error, not the current directory."""
    if not text:
        raise argparse.ArgumentTypeError("empty path")
    return Path(text)


def _existing_dir(text: str) -> Path:
    """argparse type for a directory that must exist (--history)."""
    path = _path(text)
    if not path.is_dir():
        raise argparse.ArgumentTypeError(
            f"{text} is not a directory" if path.exists() else f"directory {text} does not exist"
        )
    return path


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage dump), exit code 2, and "did you mean" for a
    near miss of a command, an option or a choice (:func:`hint_for`)."""

    #: the innermost parser of the command line being parsed (the command's, once argparse
    #: has dispatched to it): its options are the ones an unknown option is compared with
    innermost: ClassVar[argparse.ArgumentParser | None] = None

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[no-untyped-def]
        _Parser.innermost = self
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> None:  # type: ignore[override]
        where = _Parser.innermost or self
        hint = hint_for(message, where)
        raise FsyncbenchError(f"{message}{hint} (see {where.prog} --help)")


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


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
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
        parser_class=_Parser,
        help="the command; fsyncbench COMMAND --help for its options",
    )

    run = sub.add_parser(
        "run",
        help="measure journal-commit latency per SQLite pragma combination",
        description="Measure journal-commit latency per SQLite pragma combination "
        "and the raw sync primitives in DIR, print the report and save it "
        "(JSON + Markdown, + HTML with --format html) in --report-dir.",
    )
    run.add_argument(
        "dir",
        nargs="?",
        default=".",
        type=_path,
        metavar="DIR",
        help="directory on the storage to test (default: current directory)",
    )
    _add_pragma_options(run)
    run.add_argument(
        "--samples",
        type=int,
        metavar="N",
        help="take exactly N samples per configuration (split over the rounds) instead of "
        "sampling for --run-budget-seconds (default; with --rounds 1, until the p99 CI "
        "target is met)",
    )
    run.add_argument(
        "--ci-target-pct",
        type=float,
        metavar="PCT",
        help="the precision asked of each p99: its 95%% CI within +-PCT %% of p99, on "
        "at least 4 degrees of freedom; reported met or not met, and with --rounds 1 "
        f"sampling stops once it is met (default {plan.DEFAULT_CI_TARGET_PCT:g})",
    )
    run.add_argument(
        "--min-samples",
        type=int,
        metavar="N",
        help="fewest samples before the CI target may stop a configuration "
        f"(default {plan.DEFAULT_MIN_SAMPLES:,}, {plan.DARWIN_MIN_SAMPLES:,} on macOS)",
    )
    run.add_argument(
        "--budget-seconds",
        type=float,
        metavar="S",
        help="most time one configuration may take, in seconds "
        f"(default {plan.DEFAULT_BUDGET_S:g}, {plan.DARWIN_BUDGET_S:g} on macOS)",
    )
    run.add_argument(
        "--run-budget-seconds",
        type=float,
        metavar="S",
        help="time all configurations share, in seconds, split over the rounds "
        "(default "
        f"{plan.DEFAULT_RUN_BUDGET_S:g}, {plan.DARWIN_RUN_BUDGET_S:g} on macOS, when adaptive; "
        "none with --samples)",
    )
    run.add_argument(
        "--rounds",
        type=int,
        default=plan.DEFAULT_ROUNDS,
        metavar="N",
        help="repeat the whole measurement N times, each round a fresh process with "
        "fresh files and an equal share of the time; the report shows each round's p99, "
        "widens the intervals where rounds disagree more than slices, and compare judges "
        "a change by the rounds' spread (at least 3 needed; "
        f"default {plan.DEFAULT_ROUNDS})",
    )
    run.add_argument(
        "--warmup",
        type=int,
        default=plan.DEFAULT_WARMUP,
        metavar="N",
        help=f"untimed warmup operations (default {plan.DEFAULT_WARMUP})",
    )
    run.add_argument(
        "--payload-bytes",
        default=str(plan.DEFAULT_PAYLOAD_BYTES),
        metavar="N",
        help="size of each step's JSON output, in bytes; a comma list (e.g. 128,4096,65536) "
        "also measures each size after the rounds, as --writers does (the rounds use the "
        f"first; default {plan.DEFAULT_PAYLOAD_BYTES})",
    )
    run.add_argument(
        "--no-primitives",
        action="store_true",
        help="skip the raw write+sync primitive measurements",
    )
    run.add_argument(
        "--powerloss",
        nargs="?",
        const="synced-only,prefix",
        metavar="MODELS",
        help="after the timing, replay each configuration's commits through simulated "
        "power cuts (as fsyncbench powerloss) and show what each loses beside its latency; "
        f"MODELS a comma list of {','.join(powerloss.MODELS)} (default synced-only,prefix)",
    )
    run.add_argument(
        "--quiet",
        "-q",
        action="store_true",
        help="no progress bar (it is shown on stderr only when stderr is a terminal)",
    )
    _add_format_option(
        run,
        REPORT_FORMATS,
        "html: a self-contained page with plots, also saved as <report>.html in --report-dir",
    )
    _add_output_option(run)
    _add_verbose_option(run)
    _add_report_dir_options(run)
    remember = run.add_mutually_exclusive_group()
    remember.add_argument(
        "--history",
        type=_existing_dir,
        metavar="DIR",
        help="read earlier runs of the same measurement (same host, directory, storage "
        "and workload; redacted reports never match) from the reports in DIR (at most 64 "
        "files, newest first) and, from 2 earlier runs on, widen each interval by the "
        f"spread between this run and the last {intervals.MAX_EARLIER_RUNS}, which one run "
        "cannot see (default: the "
        "--report-dir)",
    )
    remember.add_argument(
        "--no-history",
        action="store_true",
        help="intervals from this run alone (they cannot see how much a run at another "
        "time differs)",
    )
    run.add_argument(
        "--retake-disturbed",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="take again the rounds that other processes disturbed (their flushes on the "
        "same disk, CPU wait or steal could explain the round's p99), within +50%% of the "
        "rounds' time; --no-retake-disturbed only records the disturbance (default: retake)",
    )
    _add_vs_option(run)
    concurrent = run.add_argument_group(
        "concurrent writers and batching (measured after the rounds, each point on a fresh "
        "database; the default run measures one writer only)"
    )
    concurrent.add_argument(
        "--writers",
        metavar="COUNTS",
        help="comma list of writer counts, e.g. 1,2,4,8: each configuration measured again "
        "with that many processes committing into one database at once: p50/p99/p99.9 from "
        "BEGIN to the end of COMMIT (lock waits included), commits/s, SQLITE_BUSY errors, "
        "the share spent waiting for the write lock, each writer's commits/s and longest "
        f"wait (1 to {writers.MAX_WRITERS})",
    )
    concurrent.add_argument(
        "--steps-per-commit",
        metavar="COUNTS",
        help="comma list of step rows per transaction, e.g. 1,10,100: the batching lever, "
        "per commit and per step (one writer unless --writers says otherwise)",
    )
    concurrent.add_argument(
        "--begin",
        choices=writers.BEGIN_MODES,
        default="immediate",
        help="how each writer starts a transaction: BEGIN IMMEDIATE takes the write lock "
        "at once, deferred at the first INSERT (default immediate)",
    )
    concurrent.add_argument(
        "--busy-timeout-ms",
        type=int,
        default=writers.DEFAULT_BUSY_TIMEOUT_MS,
        metavar="MS",
        help="SQLite's busy timeout: how long a writer's busy handler sleeps and retries "
        "(1, 2, 5, 10 ... 100 ms apart) before SQLITE_BUSY reaches it; the writer then "
        f"rolls back and retries (default {writers.DEFAULT_BUSY_TIMEOUT_MS:,}, Python's)",
    )
    concurrent.add_argument(
        "--writers-seconds",
        type=float,
        default=writers.DEFAULT_WINDOW_S,
        metavar="S",
        help=f"how long each point commits (default {writers.DEFAULT_WINDOW_S:g})",
    )
    _add_model_call_option(run)
    _add_assume_option(run)
    _add_sharing_options(run)
    _add_prometheus_option(run)
    _add_gate_options(run)

    host = sub.add_parser(
        "host",
        help="print the host record for DIR without measuring",
        description="Print the host record (OS, SQLite, filesystem, storage "
        "stack, devices, virtualization) for DIR; nothing is measured.",
    )
    host.add_argument(
        "dir",
        nargs="?",
        default=".",
        type=_path,
        metavar="DIR",
        help="directory whose storage to describe (default: current directory)",
    )
    _add_format_option(host, TABLE_FORMATS)
    _add_output_option(host)
    _add_assume_option(host)

    crash = sub.add_parser(
        "crash",
        help="the kill matrix: what a step journal buys an agent that is SIGKILLed",
        description="Kill a scripted 10-step agent with SIGKILL at every "
        "step under four persistence policies, print the duplicate writes "
        "and extra tokens each policy costs (the answer first) and save the report "
        "(JSON + Markdown + HTML) in --report-dir.",
    )
    crash.add_argument(
        "dir",
        nargs="?",
        default=".",
        type=_path,
        metavar="DIR",
        help="directory for the journal and outside-world databases (default: .)",
    )
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
    crash.add_argument(
        "--quiet",
        "-q",
        action="store_true",
        help="no progress bar (it is shown on stderr only when stderr is a terminal)",
    )
    _add_model_call_option(crash)
    _add_format_option(
        crash, REPORT_FORMATS, "the report is saved as JSON, Markdown and HTML in --report-dir"
    )
    _add_output_option(crash)
    _add_report_dir_options(crash)

    aud = sub.add_parser(
        "audit",
        help="the fsync auditor: evidence that a flush really reaches "
        "stable media, and a verdict per storage path and sync primitive",
        description="Measure only what the verdict needs, print the evidence, "
        "the findings and one verdict per storage path and sync primitive, and "
        "save the report (JSON + Markdown) in --report-dir.",
    )
    aud.add_argument(
        "dir",
        nargs="?",
        type=_path,
        metavar="DIR",
        help="directory on the storage to audit (default: current directory)",
    )
    aud.add_argument(
        "--from",
        dest="from_report",
        type=_path,
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
    aud.add_argument(
        "--quiet",
        "-q",
        action="store_true",
        help="no progress bar (it is shown on stderr only when stderr is a terminal)",
    )
    _add_format_option(
        aud,
        REPORT_FORMATS,
        "html: a self-contained page, also saved as <report>.html in --report-dir",
    )
    _add_output_option(aud)
    _add_verbose_option(aud)
    _add_report_dir_options(aud)
    _add_model_call_option(aud)
    _add_assume_option(aud)
    _add_sharing_options(aud)
    _add_prometheus_option(aud)
    _add_gate_options(aud)

    show = sub.add_parser(
        "show",
        help="render a saved report",
        description="Render a saved report (run, audit or powercut) in "
        "--format; nothing is measured.",
    )
    show.add_argument(
        "report",
        type=_path,
        metavar="REPORT",
        help="a report JSON file written by run, audit or powercut verify",
    )
    _add_format_option(show, REPORT_FORMATS, "html: a self-contained page with plots")
    _add_output_option(show)
    _add_verbose_option(show)
    _add_model_call_option(show)
    _add_vs_option(show)
    _add_sharing_options(show)
    _add_prometheus_option(show)
    _add_gate_options(show)

    cmp_ = sub.add_parser(
        "compare",
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
        type=_path,
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
        type=_percent,
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
    _add_format_option(cmp_, COMPARE_FORMATS, "html: a self-contained page")
    _add_output_option(cmp_)

    pc = sub.add_parser(
        "powercut",
        help="power-pull test (diskchecker method): a second machine "
        "records each acknowledged commit; after the reboot verify finds lost ones",
        description="Power-pull test in three steps: listen (on a second "
        "machine), write (on the machine under test; pull its power), verify "
        "(after the reboot).",
    )
    pcs = pc.add_subparsers(
        dest="action",
        required=True,
        parser_class=_Parser,
        help="the step; fsyncbench powercut ACTION --help for its options",
    )
    pcl = pcs.add_parser("listen", help="on the second machine: durably record what writers report")
    pcl.add_argument(
        "--bind",
        default="127.0.0.1",
        metavar="ADDRESS",
        help="address to listen on (default 127.0.0.1; give this machine's LAN "
        "address for a two-machine test)",
    )
    pcl.add_argument(
        "--port",
        type=int,
        default=5400,
        metavar="PORT",
        help="TCP port (default 5400; 0: any free one)",
    )
    pcl.add_argument(
        "--state",
        type=_path,
        default=Path("fsyncbench-powercut-listener.db"),
        metavar="FILE",
        help="the durable record, an SQLite file; a restarted listener continues it "
        "(default ./fsyncbench-powercut-listener.db)",
    )
    pcl.add_argument(
        "--secret-file",
        type=_path,
        metavar="FILE",
        help="the secret writers and verifiers must prove: read from FILE if it exists, "
        "else a new random one is written there (mode 0600) and printed once (default: "
        "the --state file's name + .secret; without --secret-file, "
        f"{_SECRET_ENV} is used when set)",
    )
    pcw = pcs.add_parser(
        "write",
        help="on the machine under test: commit journal rows, report "
        "each to the listener after COMMIT returned; pull the power meanwhile",
    )
    pcw.add_argument(
        "dir",
        nargs="?",
        default=".",
        type=_path,
        metavar="DIR",
        help="directory on the storage to test (default .); the journal is kept in "
        "DIR/.fsyncbench-powercut/<run id>/ for verify (delete it when done)",
    )
    pcw.add_argument("--to", required=True, metavar="HOST:PORT", help="the listener")
    _add_secret_option(pcw)
    pcw.add_argument(
        "--journal-mode",
        default="wal",
        metavar="MODE",
        help="delete, truncate, persist, memory, wal or off (default wal)",
    )
    pcw.add_argument(
        "--synchronous",
        default="full",
        metavar="LEVEL",
        help="off, normal, full or extra (default full)",
    )
    pcw.add_argument(
        "--fullfsync",
        metavar="VALUE",
        help="on or off (macOS only; default on there, unset elsewhere)",
    )
    pcw.add_argument(
        "--payload-bytes",
        type=int,
        default=plan.DEFAULT_PAYLOAD_BYTES,
        metavar="N",
        help=f"size of each step's JSON output, in bytes (default {plan.DEFAULT_PAYLOAD_BYTES})",
    )
    pcw.add_argument(
        "--max-commits",
        type=int,
        metavar="N",
        help="stop cleanly after N commits (default: until Ctrl-C or the power goes)",
    )
    _add_format_option(
        pcw, VERIFY_FORMATS, "the summary printed at a clean stop (status lines go to stderr)"
    )
    _add_output_option(pcw)
    pcv = pcs.add_parser(
        "verify",
        help="after the reboot: is every acknowledged commit in the journal?",
        description="Check every commit the listener recorded against the "
        "journal, print the result and save the report JSON in --report-dir "
        "(read it again with fsyncbench show). Exit 1 when commits were lost.",
    )
    pcv.add_argument(
        "dir",
        nargs="?",
        default=".",
        type=_path,
        metavar="DIR",
        help="the DIR given to write (default .); its .fsyncbench-powercut/ holds the run",
    )
    pcv.add_argument(
        "--from", dest="listener", required=True, metavar="HOST:PORT", help="the listener"
    )
    _add_secret_option(pcv)
    pcv.add_argument("--run-id", metavar="ID", help="the run to check (default: the newest in DIR)")
    _add_format_option(pcv, VERIFY_FORMATS)
    _add_output_option(pcv)
    pcv.add_argument(
        "--report-dir",
        type=_path,
        default=Path("reports"),
        metavar="DIR",
        help="directory to save the report JSON in, created if needed (default ./reports)",
    )
    _add_cycle_parser(pcs)
    _add_powerloss_parser(sub)
    return parser


def _add_cycle_parser(pcs: argparse._SubParsersAction[_Parser]) -> None:
    """powercut cycle: the whole experiment with the user's commands, N times."""
    pcc = pcs.add_parser(
        "cycle",
        help="on the second machine: the whole experiment, N times: start the writer, cut "
        "the power at a seeded random moment, restore it, verify (your commands)",
        description="Start a listener here, then per cycle: run the --start command (the "
        "writer on the machine under test), wait for its first recorded commit, wait a "
        "seeded random moment (--cut-after), run --cut (power off) and --restore (power on), "
        "and run --verify until it gives a verdict (exit 0 or 1) or times out. Commands are "
        "split like a shell's words and run without a shell (ask for one with sh -c '...'); "
        "in each word {port}, {address}, {cycle}, {secret_file} and (not in --start) "
        "{run_id} are replaced. Give verify --run-id {run_id} --format json so the cycle "
        "checks the right run and counts the lost commits. Exit 1 when a cycle lost "
        "acknowledged commits, 2 on an error, 4 when a cycle proved nothing (no reboot).",
    )
    pcc.add_argument(
        "--start",
        required=True,
        metavar="COMMAND",
        help='starts the writer on the machine under test, e.g. "ssh A fsyncbench powercut '
        'write --to B:{port} --secret-file s /data" (may keep running or return at once)',
    )
    pcc.add_argument(
        "--cut",
        required=True,
        metavar="COMMAND",
        help="cuts the machine's power, e.g. \"ipmitool -I lanplus -H bmc -U u -f pw chassis "
        'power off"; must exit 0',
    )
    pcc.add_argument(
        "--restore",
        metavar="COMMAND",
        help="powers it on again (e.g. ipmitool ... chassis power on); must exit 0 (default: "
        "nothing)",
    )
    pcc.add_argument(
        "--verify",
        required=True,
        metavar="COMMAND",
        help='verifies on the rebooted machine, retried until it exits 0 or 1, e.g. "ssh A '
        "fsyncbench powercut verify --from B:{port} --secret-file s --run-id {run_id} "
        '--format json /data"',
    )
    pcc.add_argument(
        "--cycles", type=int, default=1, metavar="N", help="how many cycles (default 1)"
    )
    pcc.add_argument(
        "--cut-after",
        default="2..10",
        metavar="S..S",
        help="the cut comes this many seconds after the run's first recorded commit, drawn "
        "uniformly from the range (default 2..10)",
    )
    pcc.add_argument(
        "--seed",
        type=int,
        metavar="N",
        help="seed of the cut moments (default: a random one, shown in the summary)",
    )
    for option, default, what in (
        ("--start-timeout-seconds", 300, "for the first recorded commit after --start"),
        ("--command-timeout-seconds", 120, "for each --cut, --restore and --verify run"),
        ("--verify-timeout-seconds", 900, "for --verify to give a verdict (retried)"),
        ("--retry-every-seconds", 5, "between --verify attempts"),
    ):
        pcc.add_argument(
            option,
            type=float,
            default=default,
            metavar="S",
            help=f"wait {what} (default {default})",
        )
    pcc.add_argument(
        "--bind",
        default="127.0.0.1",
        metavar="ADDRESS",
        help="the listener's address (default 127.0.0.1; give this machine's LAN address)",
    )
    pcc.add_argument(
        "--port", type=int, default=5400, metavar="PORT", help="TCP port (default 5400; 0: any)"
    )
    pcc.add_argument(
        "--state",
        type=_path,
        default=Path("fsyncbench-powercut-listener.db"),
        metavar="FILE",
        help="the listener's durable record, as for listen "
        "(default ./fsyncbench-powercut-listener.db)",
    )
    pcc.add_argument(
        "--secret-file",
        type=_path,
        metavar="FILE",
        help="the listener's secret, as for listen (default: the --state file's name + "
        f".secret; without --secret-file, {_SECRET_ENV} is used when set)",
    )
    _add_format_option(pcc, VERIFY_FORMATS, "the summary (progress lines go to stderr)")
    _add_output_option(pcc)


#: The environment variable that holds a powercut listener's secret (powercut.secret.ENV_VAR).
_SECRET_ENV = "FSYNCBENCH_POWERCUT_SECRET"


def _add_secret_option(parser: _Parser) -> None:
    """powercut write and verify: where the listener's secret comes from (never a
    command-line value: ps and the shell history show those)."""
    parser.add_argument(
        "--secret-file",
        type=_path,
        metavar="FILE",
        help="a file holding the listener's secret (the one powercut listen printed and "
        f"wrote, copied to this machine); default: the {_SECRET_ENV} environment variable. "
        "Without either the command refuses to start",
    )


def _add_powerloss_parser(sub: argparse._SubParsersAction[_Parser]) -> None:
    from fsyncbench.powerloss import DEFAULT_COMMITS, MODELS, SECTOR_SIZES, SEMANTICS
    from fsyncbench.powerloss.models import DEFAULT_MAX_STATES, DEFAULT_SAMPLES
    from fsyncbench.powerloss.plan import MAX_COMMITS

    pl = sub.add_parser(
        "powerloss",
        help="simulated power cuts: what each SQLite pragma combination really loses",
        description="Record every file operation SQLite makes while committing the step "
        "journal (run's workload) in DIR, rebuild the on-disk states a power cut could leave "
        "under each persistence model, open each with SQLite and count the acknowledged "
        "commits lost and the corrupt states, beside what SQLite's documentation promises. "
        "Models: synced-only (only synced data and directory entries survive), prefix "
        "(writes persist in issue order), subset (each unsynced write and directory change "
        "kept or lost), torn (subset with sectors torn, zeros), torn-garbage (torn, random "
        "bytes), test6 (SQLite's crash VFS, src/test6.c: each unsynced write written, lost or "
        "its sectors trashed with garbage, directory changes at once); the last three need "
        "--psow off, their default. Storage that lies about flushes is not simulated: "
        "fsyncbench audit.",
    )
    pl.add_argument(
        "dir",
        nargs="?",
        default=".",
        type=_path,
        metavar="DIR",
        help="directory for the recordings (a working directory in it is removed "
        "afterwards; default: current directory)",
    )
    _add_pragma_options(pl)
    pl.add_argument(
        "--model",
        dest="models",
        metavar="MODELS",
        help=f"comma list of {','.join(MODELS)} (default: synced-only,prefix)",
    )
    pl.add_argument(
        "--semantics",
        choices=SEMANTICS,
        help=f"whose syncs count: {SEMANTICS_HELP}; default: this system's",
    )
    pl.add_argument(
        "--commits",
        type=int,
        metavar="N",
        help=f"commits recorded per configuration, 1 to {MAX_COMMITS} (default {DEFAULT_COMMITS})",
    )
    _add_payload_option(pl)
    pl.add_argument(
        "--wal-autocheckpoint",
        type=int,
        metavar="N",
        help="WAL mode: checkpoint when the WAL holds N pages (PRAGMA wal_autocheckpoint; "
        "0: only at the close; default SQLite's, 1000, which the default commits never "
        "reach); a small N makes the recordings cross checkpoints and WAL restarts",
    )
    pl.add_argument(
        "--sector-bytes",
        type=int,
        default=512,
        choices=SECTOR_SIZES,
        metavar="N",
        help="where torn writes break and test6 trashes: 512 or 4096 (default 512)",
    )
    pl.add_argument(
        "--psow",
        choices=("on", "off"),
        help="tell SQLite writes are powersafe overwrites (https://www.sqlite.org/psow.html); "
        "default: SQLite's (on), off for torn, torn-garbage and test6, which are reported "
        "invalid with on",
    )
    pl.add_argument(
        "--max-states",
        type=int,
        metavar="N",
        help="subset, torn, torn-garbage, test6: enumerate every state of a crash point with at most N states "
        f"(default {DEFAULT_MAX_STATES})",
    )
    pl.add_argument(
        "--sampled-states",
        dest="samples",
        type=int,
        metavar="N",
        help="subset, torn, torn-garbage, test6: seeded states drawn where a crash point has more "
        f"(default {DEFAULT_SAMPLES})",
    )
    # its earlier name, still read but not shown: run's and audit's --samples count timings
    pl.add_argument("--samples", dest="samples", type=int, help=argparse.SUPPRESS)
    pl.add_argument(
        "--seed",
        type=int,
        default=0,
        metavar="N",
        help="seed of the sampled states; the same seed gives the same figures (default 0)",
    )
    pl.add_argument(
        "--keep-failures",
        type=_path,
        metavar="DIR",
        help="write the worst state of each configuration x model into DIR (created) with "
        "a state.json saying how it was made",
    )
    pl.add_argument(
        "--quiet",
        "-q",
        action="store_true",
        help="no progress bar (it is shown on stderr only when stderr is a terminal)",
    )
    _add_format_option(
        pl, REPORT_FORMATS, "the report is saved as JSON, Markdown and HTML in --report-dir"
    )
    _add_output_option(pl)
    _add_report_dir_options(pl)


def _add_pragma_options(p: argparse.ArgumentParser) -> None:
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


def _add_payload_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--payload-bytes",
        type=int,
        default=plan.DEFAULT_PAYLOAD_BYTES,
        metavar="N",
        help=f"size of each step's JSON output, in bytes (default {plan.DEFAULT_PAYLOAD_BYTES})",
    )


def _add_format_option(
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


def _add_verbose_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help="with --format text: the whole report (findings with their evidence, device "
        "counters, host, method, glossary) instead of the bottom line and a compact table; "
        "Markdown, HTML and the saved report are always whole",
    )


def _add_json_alias(p: argparse.ArgumentParser) -> None:
    """The --json of earlier versions: the same as --format json (hidden from --help)."""
    p.add_argument(
        "--json", dest="format", action="store_const", const="json", help=argparse.SUPPRESS
    )


def _add_output_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--output",
        "-o",
        type=_file_path,
        metavar="FILE",
        help="write what would be printed (in --format) to FILE instead of standard "
        "output, durably; an existing FILE is replaced (-: standard output)",
    )


def _add_report_dir_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--report-dir",
        type=_path,
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


def _add_sharing_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--redact",
        action="store_true",
        help="remove hostname, serial numbers and user paths from every output",
    )
    p.add_argument(
        "--csv",
        type=_path,
        metavar="FILE",
        help="also write the raw samples as CSV (configuration, primitive, kind, index, "
        "ns, slice, round); an existing FILE is replaced, as fio and hyperfine do",
    )


def _add_prometheus_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--prometheus",
        type=_prometheus_file,
        metavar="FILE",
        help="also write the report's metrics (latency quantiles in seconds, verdicts) in "
        "the Prometheus text format for node_exporter's textfile collector, to FILE "
        "(name it *.prom in the collector's directory); replaced atomically by rename",
    )


def _prometheus_file(text: str) -> Path:
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
    return _path(text)


def _add_assume_option(p: argparse.ArgumentParser) -> None:
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


def _percent(text: str) -> float:
    try:
        return options.percent(text)
    except FsyncbenchError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


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


def _model_call(text: str) -> float:
    """--model-call-ms: milliseconds (range: :func:`fsyncbench.options.model_call_ms`)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected milliseconds, got {text!r}") from None
    return options.model_call_ms(value, text)


def _add_vs_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--vs",
        metavar="A,B",
        help="two configurations head to head, e.g. wal/full,truncate/full: how many times "
        "faster one ran at p50 and p99 (95%% intervals over the paired rounds) and what each "
        "loses in a power cut (default: the recommended one against its nearest rival)",
    )


def _add_model_call_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model-call-ms",
        type=_model_call,
        default=DEFAULT_MODEL_CALL_MS,
        metavar="MS",
        help="duration of one model call (or any unit of work a "
        "durable commit is set against), in milliseconds "
        f"(default {DEFAULT_MODEL_CALL_MS:g})",
    )


def _file_path(text: str) -> Path | None:
    """argparse type of --output FILE: not empty, and not written as a directory; ``-`` is
    standard output (None), as for most tools that take an output file."""
    if text == "-":
        return None
    if text.endswith(("/", os.sep)) and len(text) > 1:
        raise argparse.ArgumentTypeError(
            f"{text} names a directory: --output takes a FILE (report files go to --report-dir DIR)"
        )
    return _path(text)
