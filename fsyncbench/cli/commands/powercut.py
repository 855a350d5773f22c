"""``fsyncbench powercut``: the power-pull test (diskchecker method) in its steps, each a
subcommand: listen (on a second machine), write (on the machine under test; pull its power),
verify (after the reboot), and cycle (the whole experiment with the user's commands, N
times)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from fsyncbench import api
from fsyncbench import powercut_defaults as defaults
from fsyncbench.cli.output import EXIT_OK, EXIT_RISK, emit, outputs, written
from fsyncbench.cli.parsing import Parser, Subparsers, path
from fsyncbench.cli.shared_options import (
    SECRET_ENV,
    add_dir_argument,
    add_format_option,
    add_output_option,
    add_payload_option,
    add_secret_option,
)
from fsyncbench.options import VERIFY_FORMATS
from fsyncbench.report.layout import width, wrap

if TYPE_CHECKING:  # for annotations only: both are imported where they are used
    from fsyncbench.powercut.secret import ListenerStart
    from fsyncbench.powercut.writer import WriterStatus

NAME = "powercut"


def add_parser(sub: Subparsers) -> None:
    pc = sub.add_parser(
        NAME,
        help="power-pull test (diskchecker method): a second machine "
        "records each acknowledged commit; after the reboot verify finds lost ones",
        description="Power-pull test in three steps: listen (on a second "
        "machine), write (on the machine under test; pull its power), verify "
        "(after the reboot).",
    )
    pcs = pc.add_subparsers(
        dest="action",
        required=True,
        parser_class=Parser,
        help="the step; fsyncbench powercut ACTION --help for its options",
    )
    _add_listen_parser(pcs)
    _add_write_parser(pcs)
    _add_verify_parser(pcs)
    _add_cycle_parser(pcs)


def _add_listen_parser(pcs: Subparsers) -> None:
    pcl = pcs.add_parser("listen", help="on the second machine: durably record what writers report")
    _add_listener_options(
        pcl,
        bind=f"address to listen on (default {defaults.BIND}; give this machine's LAN "
        "address for a two-machine test)",
        port=f"TCP port (default {defaults.PORT}; 0: any free one)",
        state="the durable record, an SQLite file; a restarted listener continues it "
        f"(default ./{defaults.STATE})",
        secret="the secret writers and verifiers must prove: read from FILE if it exists, "
        "else a new random one is written there (mode 0600) and printed once (default: "
        "the --state file's name + .secret; without --secret-file, "
        f"{SECRET_ENV} is used when set)",
    )


def _add_listener_options(
    p: argparse.ArgumentParser, bind: str, port: str, state: str, secret: str
) -> None:
    """--bind, --port, --state and --secret-file, the listener of listen and of cycle, each
    with the help given."""
    p.add_argument("--bind", default=defaults.BIND, metavar="ADDRESS", help=bind)
    p.add_argument("--port", type=int, default=defaults.PORT, metavar="PORT", help=port)
    p.add_argument("--state", type=path, default=Path(defaults.STATE), metavar="FILE", help=state)
    p.add_argument("--secret-file", type=path, metavar="FILE", help=secret)


def _add_write_parser(pcs: Subparsers) -> None:
    pcw = pcs.add_parser(
        "write",
        help="on the machine under test: commit journal rows, report "
        "each to the listener after COMMIT returned; pull the power meanwhile",
    )
    add_dir_argument(
        pcw,
        "directory on the storage to test (default .); the journal is kept in "
        "DIR/.fsyncbench-powercut/<run id>/ for verify (delete it when done)",
    )
    pcw.add_argument("--to", required=True, metavar="HOST:PORT", help="the listener")
    add_secret_option(pcw)
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
    add_payload_option(pcw)
    pcw.add_argument(
        "--max-commits",
        type=int,
        metavar="N",
        help="stop cleanly after N commits (default: until Ctrl-C or the power goes)",
    )
    add_format_option(
        pcw, VERIFY_FORMATS, "the summary printed at a clean stop (status lines go to stderr)"
    )
    add_output_option(pcw)


def _add_verify_parser(pcs: Subparsers) -> None:
    pcv = pcs.add_parser(
        "verify",
        help="after the reboot: is every acknowledged commit in the journal?",
        description="Check every commit the listener recorded against the "
        "journal, print the result and save the report JSON in --report-dir "
        "(read it again with fsyncbench show). Exit 1 when commits were lost.",
    )
    add_dir_argument(
        pcv, "the DIR given to write (default .); its .fsyncbench-powercut/ holds the run"
    )
    pcv.add_argument(
        "--from", dest="listener", required=True, metavar="HOST:PORT", help="the listener"
    )
    add_secret_option(pcv)
    pcv.add_argument("--run-id", metavar="ID", help="the run to check (default: the newest in DIR)")
    add_format_option(pcv, VERIFY_FORMATS)
    add_output_option(pcv)
    pcv.add_argument(
        "--report-dir",
        type=path,
        default=Path("reports"),
        metavar="DIR",
        help="directory to save the report JSON in, created if needed (default ./reports)",
    )


def _add_cycle_parser(pcs: Subparsers) -> None:
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
        "--cycles",
        type=int,
        default=defaults.CYCLES,
        metavar="N",
        help=f"how many cycles (default {defaults.CYCLES})",
    )
    pcc.add_argument(
        "--cut-after",
        default=defaults.CUT_AFTER,
        metavar="S..S",
        help="the cut comes this many seconds after the run's first recorded commit, drawn "
        f"uniformly from the range (default {defaults.CUT_AFTER})",
    )
    pcc.add_argument(
        "--seed",
        type=int,
        metavar="N",
        help="seed of the cut moments (default: a random one, shown in the summary)",
    )
    for option, default, what in (
        (
            "--start-timeout-seconds",
            defaults.START_TIMEOUT_S,
            "for the first recorded commit after --start",
        ),
        (
            "--command-timeout-seconds",
            defaults.COMMAND_TIMEOUT_S,
            "for each --cut, --restore and --verify run",
        ),
        (
            "--verify-timeout-seconds",
            defaults.VERIFY_TIMEOUT_S,
            "for --verify to give a verdict (retried)",
        ),
        ("--retry-every-seconds", defaults.RETRY_EVERY_S, "between --verify attempts"),
    ):
        pcc.add_argument(
            option,
            type=float,
            default=default,
            metavar="S",
            help=f"wait {what} (default {default:g})",
        )
    _add_listener_options(
        pcc,
        bind=f"the listener's address (default {defaults.BIND}; give this machine's LAN address)",
        port=f"TCP port (default {defaults.PORT}; 0: any)",
        state=f"the listener's durable record, as for listen (default ./{defaults.STATE})",
        secret="the listener's secret, as for listen (default: the --state file's name + "
        f".secret; without --secret-file, {SECRET_ENV} is used when set)",
    )
    add_format_option(pcc, VERIFY_FORMATS, "the summary (progress lines go to stderr)")
    add_output_option(pcc)


def handle(args: argparse.Namespace, argv: list[str]) -> int:
    tty = sys.stderr.isatty()

    def log(line: str) -> None:
        # a file keeps one event a line (grep reads it); a terminal gets it wrapped, a
        # timestamped line under its first word
        if tty:
            hang = " " * (line.index(" ") + 1) if line[:4].isdigit() and " " in line else "  "
            lines = wrap(line, "", hang if len(hang) < 30 else "  ")
            if max(map(len, lines)) > width():  # a path too long to sit under the time
                lines = wrap(line, "", "  ")
            line = "\n".join(lines)
        print(("\r\033[K" if tty else "") + line, file=sys.stderr, flush=True)

    if args.action == "listen":
        return _listen(args, log)
    if args.action == "cycle":
        return _cycle(args, log)
    if args.action == "verify":
        return _verify(args, argv)
    return _write(args, log, tty)


def _listen(args: argparse.Namespace, log: Callable[[str], None]) -> int:
    def announce(start: ListenerStart) -> None:
        # the secret and the command lines, once, on standard output (the log lines on
        # stderr never hold the secret)
        from fsyncbench.powercut.secret import format_start

        print(format_start(start), end="", flush=True)

    api.powercut_listen(
        args.bind,
        args.port,
        args.state,
        secret_file=args.secret_file,
        log=log,
        announce=announce,
    )
    return EXIT_OK


def _verify(args: argparse.Namespace, argv: list[str]) -> int:
    outcome = api.powercut_verify(
        args.dir,
        listener=args.listener,
        run_id=args.run_id,
        report_dir=args.report_dir,
        outputs=outputs(args),
        command_line=["fsyncbench", *argv],
        secret_file=args.secret_file,
    )
    emit(args, api.render(outcome, args.format))
    print(written([outcome.path]), file=sys.stderr)
    return EXIT_RISK if outcome.failed else EXIT_OK


def _write(args: argparse.Namespace, log: Callable[[str], None], tty: bool) -> int:
    def status(s: WriterStatus) -> None:
        from fsyncbench.powercut import format_status

        line = format_status(s, width() - 1 if tty else None)
        print(
            "\r\033[K" + line if tty else line, end="" if tty else "\n", file=sys.stderr, flush=True
        )

    summary = api.powercut_write(
        args.dir,
        to=args.to,
        journal_mode=args.journal_mode,
        synchronous=args.synchronous,
        fullfsync=args.fullfsync,
        payload_bytes=args.payload_bytes,
        max_commits=args.max_commits,
        status=status,
        log=log,
        outputs=outputs(args),
        secret_file=args.secret_file,
    )
    if tty:
        print(file=sys.stderr)
    emit(args, api.render(summary, args.format))
    return EXIT_OK


def _cycle(args: argparse.Namespace, log: Callable[[str], None]) -> int:
    """powercut cycle: progress on stderr (never the secret: its file is named), the
    summary (--format) at the end; its exit code (cycle.CycleSummary.exit_code)."""
    summary = api.powercut_cycle(
        args.start,
        args.cut,
        args.verify,
        restore=args.restore,
        cycles=args.cycles,
        cut_after=args.cut_after,
        seed=args.seed,
        bind=args.bind,
        port=args.port,
        state=args.state,
        secret_file=args.secret_file,
        start_timeout_s=args.start_timeout_seconds,
        command_timeout_s=args.command_timeout_seconds,
        verify_timeout_s=args.verify_timeout_seconds,
        retry_every_s=args.retry_every_seconds,
        log=log,
        outputs=outputs(args),
    )
    from fsyncbench.powercut.cycle import format_summary, summary_json

    emit(args, summary_json(summary) if args.format == "json" else format_summary(summary))
    return summary.exit_code
