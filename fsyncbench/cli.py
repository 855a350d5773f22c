"""Command line: the only module that prints or exits.

Exit codes: 0 ok; 1 durability risk found (only when a gate option asks); 2 usage or
runtime error (one line on stderr, never a traceback).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

from fsyncbench import __version__, api
from fsyncbench.report import store, tables as render
from fsyncbench.measure import runner, workloads
from fsyncbench import report as report_out
from fsyncbench.errors import FsyncbenchError
from fsyncbench.model import Report, to_jsonable
from fsyncbench.report.answer import DEFAULT_MODEL_CALL_MS

EXIT_OK, EXIT_RISK, EXIT_ERROR = 0, 1, 2


def _path(text: str) -> Path:
    """argparse type for paths: an empty string is an error, not the current directory."""
    if not text:
        raise argparse.ArgumentTypeError("empty path")
    return Path(text)


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage dump) and exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise FsyncbenchError(f"{message} (see {self.prog} --help)")


#: --format choices per command (text is the default everywhere)
REPORT_FORMATS = ("text", "markdown", "json", "html")
TABLE_FORMATS = ("text", "markdown", "json")
VERIFY_FORMATS = ("text", "json")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="fsyncbench",
        description="What a durable SQLite journal commit costs on this machine, and "
        "whether the storage under it keeps what it acknowledges. Every command that prints a "
        "result (run, audit, show, compare, host, crash, powercut verify) takes --format and "
        "-o/--output FILE; run, audit and powercut verify also save report files in "
        "--report-dir DIR (default ./reports).",
    )
    parser.add_argument("--version", action="version", version=f"fsyncbench {__version__}",
                        help="print the version and exit")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser,
                                help="the command; fsyncbench COMMAND --help for its options")

    run = sub.add_parser("run", help="measure journal-commit latency per SQLite pragma combination",
                         description="Measure journal-commit latency per SQLite pragma combination "
                         "and the raw sync primitives in DIR, print the report and save it "
                         "(JSON + Markdown, + HTML with --format html) in --report-dir.")
    run.add_argument("dir", nargs="?", default=".", type=_path, metavar="DIR",
                     help="directory on the storage to test (default: current directory)")
    run.add_argument("--journal-mode", metavar="MODES",
                     help="comma list: delete,truncate,persist,memory,wal,off "
                     "(default: delete,truncate,wal)")
    run.add_argument("--synchronous", metavar="LEVELS",
                     help="comma list: off,normal,full,extra (default: off,normal,full)")
    run.add_argument("--fullfsync", metavar="VALUES",
                     help="comma list: on,off (default on macOS: off,on; elsewhere not set)")
    run.add_argument("--samples", type=int, metavar="N",
                     help="take exactly N samples per configuration instead of sampling "
                     "until the p99 CI target is met (default: adaptive)")
    run.add_argument("--ci-target-pct", type=float, metavar="PCT",
                     help="sample each configuration until the 95%% CI of its p99 is within "
                     f"+-PCT %% of p99 (default {runner.DEFAULT_CI_TARGET_PCT:g})")
    run.add_argument("--min-samples", type=int, metavar="N",
                     help="fewest samples before the CI target may stop a configuration "
                     f"(default {runner.DEFAULT_MIN_SAMPLES})")
    run.add_argument("--budget-seconds", type=float, default=10.0, metavar="S",
                     help="most time one configuration may take, in seconds (default 10)")
    run.add_argument("--run-budget-seconds", type=float, metavar="S",
                     help="time all configurations share, in seconds; time one does not need "
                     "goes to those whose CI is still too wide (default "
                     f"{runner.DEFAULT_RUN_BUDGET_S:g} when adaptive, none with --samples)")
    run.add_argument("--rounds", type=int, default=runner.DEFAULT_ROUNDS, metavar="N",
                     help="repeat the whole measurement N times, each round with fresh files "
                     "and an equal share of the time; the report shows each round's p99 and "
                     "widens the intervals where rounds disagree more than slices "
                     f"(default {runner.DEFAULT_ROUNDS})")
    run.add_argument("--warmup", type=int, default=50, metavar="N",
                     help="untimed warmup operations (default 50)")
    run.add_argument("--payload-bytes", type=int, default=512, metavar="N",
                     help="size of each step's JSON output, in bytes (default 512)")
    run.add_argument("--no-primitives", action="store_true",
                     help="skip the raw write+sync primitive measurements")
    run.add_argument("--quiet", "-q", action="store_true",
                     help="no progress bar (it is shown on stderr only when stderr is a terminal)")
    _add_format_option(run, REPORT_FORMATS, "html: a self-contained page with plots, also saved "
                       "as <report>.html in --report-dir")
    _add_output_option(run)
    _add_report_dir_options(run)
    _add_model_call_option(run)
    _add_assume_option(run)
    _add_sharing_options(run)
    _add_gate_options(run)

    host = sub.add_parser("host", help="print the host record for DIR without measuring",
                          description="Print the host record (OS, SQLite, filesystem, storage "
                          "stack, devices, virtualization) for DIR; nothing is measured.")
    host.add_argument("dir", nargs="?", default=".", type=_path, metavar="DIR",
                      help="directory whose storage to describe (default: current directory)")
    _add_format_option(host, TABLE_FORMATS)
    _add_output_option(host)
    _add_json_alias(host)
    _add_assume_option(host)

    crash = sub.add_parser("crash", help="the kill matrix: what a step journal buys an agent "
                           "that is SIGKILLed",
                           description="Kill a scripted 10-step agent with SIGKILL at every "
                           "step under four persistence policies and print the duplicate writes "
                           "and extra tokens each policy costs.")
    crash.add_argument("dir", nargs="?", default=".", type=_path, metavar="DIR",
                       help="directory for the journal and outside-world databases (default: .)")
    crash.add_argument("--journal-mode", default="wal", metavar="MODE",
                       help="journal_mode of the step journal (default wal)")
    crash.add_argument("--synchronous", default="full", metavar="LEVEL",
                       help="synchronous of the step journal (default full)")
    _add_model_call_option(crash)
    _add_format_option(crash, TABLE_FORMATS)
    _add_output_option(crash)
    _add_json_alias(crash)

    aud = sub.add_parser("audit", help="the fsync auditor: evidence that a flush really reaches "
                         "stable media, and a verdict per storage path and sync primitive",
                         description="Measure only what the verdict needs, print the evidence, "
                         "the findings and one verdict per storage path and sync primitive, and "
                         "save the report (JSON + Markdown) in --report-dir.")
    aud.add_argument("dir", nargs="?", type=_path, metavar="DIR",
                     help="directory on the storage to audit (default: current directory)")
    aud.add_argument("--from", dest="from_report", type=_path, metavar="REPORT",
                     help="re-derive the verdict of a saved report (run or audit) from its "
                     "recorded facts; measures nothing")
    aud.add_argument("--samples", type=int, default=200, metavar="N",
                     help="samples per flush primitive and commit configuration (default 200)")
    aud.add_argument("--budget-seconds", type=float, default=5.0, metavar="S",
                     help="most time one of those may take, in seconds (default 5)")
    aud.add_argument("--compare-syncs", type=int, default=200, metavar="N",
                     help="syncs per side of libc vs raw syscall and of the second-descriptor "
                     "check (default 200)")
    aud.add_argument("--sweep-repeats", type=int, default=3, metavar="N",
                     help="syncs per size of the dirty-size sweep (default 3)")
    aud.add_argument("--sweep-max-mib", type=int, default=64, metavar="N",
                     help="largest dirty size of the sweep, in MiB (default 64)")
    aud.add_argument("--trace-commits", type=int, default=20, metavar="N",
                     help="commits traced with strace per pragma combination (default 20)")
    aud.add_argument("--no-trace", action="store_true", help="do not trace syncs per commit")
    aud.add_argument("--quiet", "-q", action="store_true",
                     help="no progress bar (it is shown on stderr only when stderr is a terminal)")
    _add_format_option(aud, REPORT_FORMATS, "html: a self-contained page, also saved as "
                       "<report>.html in --report-dir")
    _add_output_option(aud)
    _add_json_alias(aud)
    _add_report_dir_options(aud)
    _add_model_call_option(aud)
    _add_assume_option(aud)
    _add_sharing_options(aud)
    _add_gate_options(aud)

    show = sub.add_parser("show", help="render a saved report",
                          description="Render a saved report (run, audit or powercut) in "
                          "--format; nothing is measured.")
    show.add_argument("report", type=_path, metavar="REPORT",
                      help="a report JSON file written by run, audit or powercut verify")
    _add_format_option(show, REPORT_FORMATS, "html: a self-contained page with plots")
    _add_output_option(show)
    _add_model_call_option(show)
    _add_sharing_options(show)
    _add_gate_options(show)

    cmp_ = sub.add_parser("compare", help="compare reports: two side by side with significance, "
                          "or several as a fleet table",
                          description="Two reports: host differences and each configuration's "
                          "p50 and p99 side by side with intervals and Holm-adjusted "
                          "significance. Three or more: a fleet table sorted by p99.")
    cmp_.add_argument("reports", nargs="+", type=_path, metavar="REPORT",
                      help="two or more report JSON files (the first is the baseline)")
    cmp_.add_argument("--config", action="append", metavar="NAME",
                      help="configuration to sort a fleet by (default wal/full), or the "
                      "configurations the regression check looks at (comma list)")
    cmp_.add_argument("--fail-on-regression", type=_percent, metavar="PCT",
                      help="exit 1 when a configuration's p99 is more than PCT %% worse than in "
                      "the first report, and significantly so")
    _add_format_option(cmp_, TABLE_FORMATS)
    _add_output_option(cmp_)

    pc = sub.add_parser("powercut", help="power-pull test (diskchecker method): a second machine "
                        "records each acknowledged commit; after the reboot verify finds lost ones",
                        description="Power-pull test in three steps: listen (on a second "
                        "machine), write (on the machine under test; pull its power), verify "
                        "(after the reboot).")
    pcs = pc.add_subparsers(dest="action", required=True, parser_class=_Parser,
                            help="the step; fsyncbench powercut ACTION --help for its options")
    pcl = pcs.add_parser("listen", help="on the second machine: durably record what writers report")
    pcl.add_argument("--bind", default="127.0.0.1", metavar="ADDRESS",
                     help="address to listen on (default 127.0.0.1; give this machine's LAN "
                     "address for a two-machine test)")
    pcl.add_argument("--port", type=int, default=5400, metavar="PORT",
                     help="TCP port (default 5400; 0: any free one)")
    pcl.add_argument("--state", type=_path, default=Path("fsyncbench-powercut-listener.db"),
                     metavar="FILE",
                     help="the durable record, an SQLite file; a restarted listener continues it "
                     "(default ./fsyncbench-powercut-listener.db)")
    pcw = pcs.add_parser("write", help="on the machine under test: commit journal rows, report "
                         "each to the listener after COMMIT returned; pull the power meanwhile")
    pcw.add_argument("dir", nargs="?", default=".", type=_path, metavar="DIR",
                     help="directory on the storage to test (default .); the journal is kept in "
                     "DIR/.fsyncbench-powercut/<run id>/ for verify (delete it when done)")
    pcw.add_argument("--to", required=True, metavar="HOST:PORT", help="the listener")
    pcw.add_argument("--journal-mode", default="wal", metavar="MODE",
                     help="delete, truncate, persist, memory, wal or off (default wal)")
    pcw.add_argument("--synchronous", default="full", metavar="LEVEL",
                     help="off, normal, full or extra (default full)")
    pcw.add_argument("--fullfsync", metavar="VALUE",
                     help="on or off (macOS only; default on there, unset elsewhere)")
    pcw.add_argument("--payload-bytes", type=int, default=512, metavar="N",
                     help="size of each step's JSON output, in bytes (default 512)")
    pcw.add_argument("--max-commits", type=int, metavar="N",
                     help="stop cleanly after N commits (default: until Ctrl-C or the power goes)")
    _add_format_option(pcw, VERIFY_FORMATS, "the summary printed at a clean stop (status lines "
                       "go to stderr)")
    _add_output_option(pcw)
    pcv = pcs.add_parser("verify", help="after the reboot: is every acknowledged commit in the journal?",
                         description="Check every commit the listener recorded against the "
                         "journal, print the result and save the report JSON in --report-dir "
                         "(read it again with fsyncbench show). Exit 1 when commits were lost.")
    pcv.add_argument("dir", nargs="?", default=".", type=_path, metavar="DIR",
                     help="the DIR given to write (default .); its .fsyncbench-powercut/ holds the run")
    pcv.add_argument("--from", dest="listener", required=True, metavar="HOST:PORT", help="the listener")
    pcv.add_argument("--run-id", metavar="ID", help="the run to check (default: the newest in DIR)")
    _add_format_option(pcv, VERIFY_FORMATS)
    _add_output_option(pcv)
    pcv.add_argument("--report-dir", type=_path, default=Path("reports"), metavar="DIR",
                     help="directory to save the report JSON in, created if needed "
                     "(default ./reports)")
    return parser


def _add_format_option(p: argparse.ArgumentParser, choices: tuple[str, ...], extra: str = "") -> None:
    offered = ", ".join(choices)
    p.add_argument("--format", choices=choices, default="text",
                   help=f"what to print: {offered} (default text)" + (f"; {extra}" if extra else "")
                   + ("" if "html" in choices else "; no html for this command"))


def _add_json_alias(p: argparse.ArgumentParser) -> None:
    """The --json of earlier versions: the same as --format json (hidden from --help)."""
    p.add_argument("--json", dest="format", action="store_const", const="json",
                   help=argparse.SUPPRESS)


def _add_output_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--output", "-o", type=_file_path, metavar="FILE",
                   help="write what would be printed (in --format) to FILE instead of standard "
                   "output, durably; an existing FILE is replaced (-: standard output)")


def _add_report_dir_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--report-dir", type=_path, default=Path("reports"), metavar="DIR",
                   help="directory to save the report files in (<host>-<time>.json and .md), "
                   "created if needed (default ./reports)")
    p.add_argument("--no-report", action="store_true",
                   help="save no report files (only print, or write --output)")


def _add_sharing_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--redact", action="store_true",
                   help="remove hostname, serial numbers and user paths from every output")
    p.add_argument("--csv", type=_path, metavar="FILE",
                   help="also write the raw samples as CSV (configuration, primitive, kind, index, "
                   "ns, slice, round); an existing FILE is replaced, as fio and hyperfine do")


def _add_assume_option(p: argparse.ArgumentParser) -> None:
    from fsyncbench.judge.devices import DECLARABLE

    p.add_argument("--assume", action="append", choices=sorted(DECLARABLE), metavar="FACT",
                   help="state a fact the machine cannot show, recorded in the report as "
                   "user-declared: plp = the drive has power-loss protection, so a fast flush "
                   "on its write-back cache is plausible (repeatable)")


def _declare(host, args: argparse.Namespace):
    """``host`` with the ``--assume`` facts recorded in its target (``declared``)."""
    facts = tuple(dict.fromkeys(getattr(args, "assume", None) or ()))
    if not facts:
        return host
    import dataclasses

    target = dataclasses.replace(host.target, declared=tuple(
        dict.fromkeys((*host.target.declared, *facts))))
    return dataclasses.replace(host, target=target)


def _add_gate_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--max-p99", metavar="DURATION",
                   help="exit 1 when a configuration's p99 is above DURATION (e.g. 10ms, 500us)")
    p.add_argument("--fail-on", metavar="VERDICTS",
                   help="exit 1 when a configuration's path verdict is one of these (comma list "
                   "of no_flush, volatile_cache, unverifiable, honest_flush)")
    p.add_argument("--config", action="append", metavar="NAME",
                   help="configurations the gates look at (comma list or repeated; default: "
                   "all but the no-sync write baseline)")


def _percent(text: str) -> float:
    try:
        value = float(text.strip().rstrip("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid percentage {text!r}: give a number such as 20")
    if value < 0 or value != value:
        raise argparse.ArgumentTypeError(f"invalid percentage {text!r}: must be 0 or more")
    return value


def _terminate(_signum, _frame) -> None:
    raise KeyboardInterrupt


class _Stdout:
    """sys.stdout for a command: a reader that went away (``| head``: EPIPE) is the
    conventional silent end of the output, not an error, so later writes are dropped
    (``closed_by_reader`` tells the gates to report on stderr instead); any other write
    error (a full device: ENOSPC, EIO) is one line and exit 2."""

    def __init__(self, inner) -> None:
        self._inner = inner
        self.closed_by_reader = False

    def write(self, text: str) -> int:
        if self.closed_by_reader:
            return len(text)
        try:
            return self._inner.write(text)
        except BrokenPipeError:
            self._reader_gone()
            return len(text)
        except OSError as exc:
            raise FsyncbenchError(f"cannot write to standard output: {exc.strerror or exc}")

    def flush(self) -> None:
        if self.closed_by_reader:
            return
        try:
            self._inner.flush()
        except BrokenPipeError:
            self._reader_gone()
        except OSError as exc:
            raise FsyncbenchError(f"cannot write to standard output: {exc.strerror or exc}")

    def _reader_gone(self) -> None:
        self.closed_by_reader = True
        try:  # the interpreter's own flush at exit must not fail on the closed pipe either
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._inner.fileno())
            os.close(devnull)
        except (OSError, ValueError):
            pass

    def __getattr__(self, name):
        return getattr(self._inner, name)


def main(argv: list[str] | None = None) -> int:
    stdout = sys.stdout
    sys.stdout = _Stdout(stdout)
    try:
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
        args = parser.parse_args(_glue_negative_values(parser, args_list))
        return _COMMANDS[args.command](args, args_list)
    except FsyncbenchError as exc:
        print(f"fsyncbench: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("fsyncbench: interrupted; nothing was written", file=sys.stderr)
        return EXIT_ERROR
    except OSError as exc:  # an I/O error no layer above named: still one line, exit 2
        where = f": {exc.filename}" if exc.filename else ""
        print(f"fsyncbench: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return EXIT_ERROR


def _glue_negative_values(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """``--max-p99 -5ms`` -> ``--max-p99=-5ms``: argparse takes a value starting with "-"
    and a digit for an option of its own and says "expected one argument"; glued, the
    value reaches the option's own check, which names what is wrong with it."""
    takes_value = set()
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
        if tok in takes_value and len(nxt) > 1 and nxt[0] == "-" and (nxt[1].isdigit() or nxt[1] == "."):
            out.append(f"{tok}={nxt}")
            i += 2
            continue
        out.append(tok)
        i += 1
    return out


def _collect_host(target: Path):
    from fsyncbench.host import collect_host

    return collect_host(str(target))


def _sweep(target: Path) -> None:
    """Just before measuring: remove the working directories dead runs left in ``target``
    (SIGKILL, a power cut) and say on stderr what was found."""
    from fsyncbench.measure import scratch

    for message in scratch.sweep_leftovers(target):
        print(f"fsyncbench: note: {message}", file=sys.stderr)


def _model_call(text: str) -> float:
    """--model-call-ms: milliseconds between 0.001 and 3,600,000 (one hour)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected milliseconds, got {text!r}")
    if not 0.001 <= value <= 3_600_000:  # worded like every other range check
        raise FsyncbenchError(f"--model-call-ms must be between 0.001 and 3600000, got {text}")
    return value


def _add_model_call_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model-call-ms", type=_model_call, default=DEFAULT_MODEL_CALL_MS,
                        metavar="MS", help="duration of one model call (or any unit of work a "
                        "durable commit is set against), in milliseconds "
                        f"(default {DEFAULT_MODEL_CALL_MS:g})")


def cmd_run(args: argparse.Namespace, argv: list[str]) -> int:
    started = time.monotonic_ns()
    gate = _GateArgs.parse(args)
    target = runner.check_target(args.dir)
    if args.samples is not None and (args.ci_target_pct is not None or args.min_samples is not None):
        raise FsyncbenchError("--samples fixes the sample count; it cannot be combined with "
                              "--ci-target-pct or --min-samples")
    adaptive = args.samples is None
    plan = runner.RunPlan(
        target=target,
        configs=runner.build_configs(args.journal_mode, args.synchronous, args.fullfsync),
        samples=args.samples,
        budget_s=args.budget_seconds,
        warmup=args.warmup,
        payload_bytes=args.payload_bytes,
        primitives=not args.no_primitives,
        ci_target_pct=runner.DEFAULT_CI_TARGET_PCT if args.ci_target_pct is None else args.ci_target_pct,
        min_samples=runner.DEFAULT_MIN_SAMPLES if args.min_samples is None else args.min_samples,
        run_budget_s=args.run_budget_seconds if args.run_budget_seconds is not None
        else (runner.DEFAULT_RUN_BUDGET_S if adaptive else None),
        rounds=args.rounds,
    )
    if gate.names:
        from fsyncbench.judge import gates

        gates.check_names(gate.names, runner.result_names(plan), "this run measures")
    _check_outputs(args)
    host = _declare(_collect_host(target), args)
    if args.fullfsync is not None and host.os_name != "Darwin":
        print("fsyncbench: note: fullfsync has no effect outside macOS "
              "(https://www.sqlite.org/pragma.html#pragma_fullfsync): its rows will differ only "
              "by noise", file=sys.stderr)
    progress = _Progress(quiet=args.quiet)
    _sweep(target)
    try:
        results, floors = runner.run_with_floors(plan, host, progress)
    except KeyboardInterrupt:
        progress.close()
        print(f"fsyncbench: interrupted while measuring {progress.label or 'setup'}; "
              f"{workloads.scratch_cleanup()}, no report written", file=sys.stderr)
        return EXIT_ERROR
    except FsyncbenchError as exc:
        progress.close()
        raise FsyncbenchError(f"{exc} (while measuring {progress.label or 'setup'}; "
                              f"{workloads.scratch_cleanup()})")
    progress.close()
    report = _maybe_redact(api.build_report("run", host, results, ["fsyncbench", *argv], floors,
                                               elapsed_ns=time.monotonic_ns() - started), args)
    return _finish_report(report, args, gate)


def _finish_report(report: Report, args: argparse.Namespace, gate: "_GateArgs") -> int:
    """run and audit, once the report exists: save the report files (and --csv) first, so a
    closed pipe or a full stdout cannot lose the measurement, then print it in --format (or
    write it to --output), say on stderr what was saved, and apply the gates."""
    text = _render(report, args.format, args.model_call_ms)
    report_dir = None if args.no_report else store.prepare_output_dir(args.report_dir)
    paths = _save(report, report_dir, html=args.format == "html", csv=args.csv,
                  model_call_ms=args.model_call_ms, rendered={args.format: text})
    _emit(args, text)
    if paths:
        print("Report written: " + ", ".join(str(p) for p in paths), file=sys.stderr)
    return gate.apply(report, to_stderr=_gates_to_stderr(args))


def _configurations(n: int) -> str:
    """``1 configuration``, ``3 configurations``."""
    return f"{n} configuration{'' if n == 1 else 's'}"


def _emit(args: argparse.Namespace, text: str) -> None:
    """What a command prints: to --output FILE (durably, replacing it) or standard output."""
    if getattr(args, "output", None) is not None:
        store.write_durably(args.output, text)
    else:
        print(text, end="", flush=True)


def _gates_to_stderr(args: argparse.Namespace) -> bool:
    """Gate lines go to stderr when stdout carries JSON or HTML (they would break it)."""
    return args.output is None and args.format in ("json", "html")


def _file_path(text: str) -> Path | None:
    """argparse type of --output FILE: not empty, and not written as a directory; ``-`` is
    standard output (None), as for most tools that take an output file."""
    if text == "-":
        return None
    if text.endswith(("/", os.sep)) and len(text) > 1:
        raise argparse.ArgumentTypeError(
            f"{text} names a directory: --output takes a FILE (report files go to --report-dir DIR)")
    return _path(text)


def _check_outputs(args: argparse.Namespace) -> None:
    """Before any work: --output FILE, --csv FILE and --report-dir DIR can be written, and
    --output is not a directory (it was one for run, audit and powercut verify before
    --report-dir: the message says so). Raises FsyncbenchError."""
    out = getattr(args, "output", None)
    csv = getattr(args, "csv", None)
    report_dir = getattr(args, "report_dir", None)
    if report_dir is not None and not getattr(args, "no_report", False):
        store.check_output_dir(report_dir)
    if out is not None:
        if out.is_dir():
            hint = (f"; to save the report files in it, use --report-dir {out}"
                    if report_dir is not None else "")
            raise FsyncbenchError(f"--output {out} is a directory: --output takes the FILE to "
                                  f"write the printed result to{hint}")
        _check_file_dir(out)
    _check_file_dir(csv)
    if out is not None and csv is not None and _same_file(out, csv):
        raise FsyncbenchError(f"--output and --csv both name {out}: give two files")


def _maybe_redact(report: Report, args: argparse.Namespace) -> Report:
    """The report as ``--redact`` asks (the hook for every subcommand that writes reports)."""
    if getattr(args, "redact", False):
        from fsyncbench.report import redact

        return redact.redact_report(report)
    return report


def _render(report: Report, fmt: str, model_call_ms: float = DEFAULT_MODEL_CALL_MS) -> str:
    if fmt == "json":
        return store.report_to_json(report)
    if report.kind == "powercut":
        from fsyncbench.powercut import view

        return view.render(report, fmt)
    return report_out.render(report, fmt, model_call_ms)


def _check_file_dir(path: Path | None) -> None:
    """A file to be written later must have an existing, writable directory (checked before
    measuring, so a typo does not waste the run). Raises FsyncbenchError."""
    if path is None:
        return
    parent = path.parent
    if path.is_dir():
        raise FsyncbenchError(f"{path} is a directory, not a file")
    if path.exists() and not path.is_file():
        # written by rename over it: /dev/null or a FIFO would be replaced, not written to
        raise FsyncbenchError(f"cannot write {path}: not a regular file (output files are "
                              "replaced by rename, so it cannot be a device or a FIFO)")
    if not parent.is_dir():
        why = "is not a directory" if parent.exists() else "does not exist"
        raise FsyncbenchError(f"cannot write {path}: {parent} {why}")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise FsyncbenchError(f"cannot write {path}: directory {parent} is not writable")


class _GateArgs:
    """--max-p99 / --fail-on / --config, parsed before any work is done."""

    def __init__(self, max_p99_ns, fail_on, names) -> None:
        self.max_p99_ns, self.fail_on, self.names = max_p99_ns, fail_on, names

    @classmethod
    def parse(cls, args: argparse.Namespace) -> "_GateArgs":
        from fsyncbench.judge import gates

        max_p99 = gates.parse_duration(args.max_p99, "--max-p99") if args.max_p99 is not None else None
        fail_on = gates.parse_verdicts(args.fail_on) if args.fail_on is not None else ()
        return cls(max_p99, fail_on, gates.parse_names(args.config))

    def apply(self, report: Report, to_stderr: bool = False) -> int:
        """Print each failure and return EXIT_RISK, or EXIT_OK when none failed."""
        if self.max_p99_ns is None and not self.fail_on:
            return EXIT_OK
        from fsyncbench.judge import gates

        failures = gates.check(report, self.max_p99_ns, self.fail_on, self.names)
        # the gate's verdict must reach someone: stderr when stdout's reader has gone
        out = sys.stderr if to_stderr or getattr(sys.stdout, "closed_by_reader", False) else sys.stdout
        checked = len(gates.select(report, self.names))
        if not failures:
            print(f"Gates passed ({_configurations(checked)} checked).", file=out)
            return EXIT_OK
        for f in failures:
            print(f"GATE FAILED [{f.gate}] {f.message}", file=out)
        print(f"{len(failures)} gate failure{'s' if len(failures) != 1 else ''} in "
              f"{_configurations(checked)} checked: exit 1.", file=out)
        return EXIT_RISK


def _same_file(a: Path, b: Path) -> bool:
    """True when ``a`` and ``b`` name the same existing file (or the same path)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def _save(report: Report, out_dir: Path | None, html: bool = False,
          csv: Path | None = None, model_call_ms: float = DEFAULT_MODEL_CALL_MS,
          rendered: dict[str, str] | None = None) -> list[Path]:
    """Write ``<host>-<time>.json`` and ``.md`` (and ``.html``) under a name no other run
    holds in ``out_dir`` (None: no report files), then the raw samples to ``csv`` (replaced
    if it exists, like fio's and hyperfine's output files). All or nothing: on any failure
    (or Ctrl-C) the report files written so far are removed again."""
    suffixes = (".json", ".md") + ((".html",) if html else ()) if out_dir is not None else ()
    paths: list[Path] = []
    if out_dir is not None:
        stem = store.claim_name(out_dir, store.report_basename(report), suffixes)
        paths = [stem.with_name(stem.name + suffix) for suffix in suffixes]
    done = rendered or {}
    texts = {suffix: (lambda fmt=fmt: done[fmt] if fmt in done else _render(report, fmt, model_call_ms))
             for suffix, fmt in ((".json", "json"), (".md", "markdown"), (".html", "html"))}
    written: list[Path] = []
    try:
        for path, suffix in zip(paths, suffixes):
            store.write_durably(path, texts[suffix]())
            written.append(path)
        if csv is not None:
            store.write_durably(csv, render.render_csv(report))
    except BaseException:
        for path in written:
            path.unlink(missing_ok=True)
        for path in paths:  # a name claimed but not yet written
            path.unlink(missing_ok=True)
        raise
    return paths + ([csv] if csv is not None else [])


def cmd_host(args: argparse.Namespace, _argv: list[str]) -> int:
    target = runner.check_target(args.dir)
    _check_outputs(args)
    host = _declare(_collect_host(target), args)
    if args.format == "json":
        _emit(args, json.dumps(render.json_safe(to_jsonable(host)), indent=1) + "\n")
    else:
        _emit(args, render.render_host(host, args.format))
    return EXIT_OK


def cmd_crash(args: argparse.Namespace, _argv: list[str]) -> int:
    from fsyncbench import crash

    target = runner.check_target(args.dir)
    mode = runner.parse_choices(args.journal_mode, crash.JOURNAL_MODES, "journal_mode")
    sync = runner.parse_choices(args.synchronous, crash.SYNCHRONOUS, "synchronous")
    if len(mode) != 1 or len(sync) != 1:
        raise FsyncbenchError("crash takes one journal_mode and one synchronous value")
    _check_outputs(args)
    _sweep(target)
    try:
        outcome = crash.run_crash_experiment(target, mode[0], sync[0])
    except KeyboardInterrupt:
        print("fsyncbench: interrupted during the kill matrix; working directory removed",
              file=sys.stderr)
        return EXIT_ERROR
    if args.format == "json":
        _emit(args, json.dumps(render.json_safe(render.crash_jsonable(outcome, args.model_call_ms)),
                               indent=1) + "\n")
    else:
        _emit(args, render.render_crash(outcome, args.model_call_ms, args.format))
    return EXIT_OK


def cmd_audit(args: argparse.Namespace, argv: list[str]) -> int:
    from fsyncbench.judge import audit
    from fsyncbench.measure import evidence

    started = time.monotonic_ns()
    gate = _GateArgs.parse(args)
    if args.from_report is not None:
        if args.dir is not None:
            raise FsyncbenchError("give a directory to audit or --from REPORT, not both")
        _check_outputs(args)
        loaded = store.load_report(args.from_report)
        if args.assume:
            import dataclasses

            loaded = dataclasses.replace(loaded, host=_declare(loaded.host, args))
        report = audit.rejudge(loaded)
    else:
        target = runner.check_target(args.dir if args.dir is not None else Path("."))
        if args.samples < 1:
            raise FsyncbenchError(f"--samples must be at least 1, got {args.samples}")
        plan = runner.RunPlan(target=target, configs=evidence.TIMED_CONFIGS, samples=args.samples,
                              budget_s=args.budget_seconds, warmup=10, run_budget_s=None)
        ev_plan = evidence.EvidencePlan(
            compare_syncs=args.compare_syncs, sweep_repeats=args.sweep_repeats,
            sweep_max_bytes=args.sweep_max_mib << 20, trace_commits=args.trace_commits,
            trace=not args.no_trace)
        _check_outputs(args)
        host = _declare(_collect_host(target), args)
        progress = _Progress(quiet=args.quiet)
        _sweep(target)
        try:
            results = runner.run_plan(plan, host, progress)
            progress.label = "audit evidence"

            def step(name: str, _index: int, _total: int) -> None:
                progress.label = f"audit evidence ({name})"

            ev = evidence.collect(target, host, ev_plan, progress=step)
        except KeyboardInterrupt:
            progress.close()
            print(f"fsyncbench: interrupted while measuring {progress.label or 'setup'}; "
                  f"{workloads.scratch_cleanup()}, no report written", file=sys.stderr)
            return EXIT_ERROR
        except FsyncbenchError as exc:
            progress.close()
            raise FsyncbenchError(f"{exc} (while measuring {progress.label or 'setup'}; "
                                  f"{workloads.scratch_cleanup()})")
        progress.close()
        report = api.build_report("audit", host, results, ["fsyncbench", *argv], evidence=ev,
                                     elapsed_ns=time.monotonic_ns() - started)
    return _finish_report(_maybe_redact(report, args), args, gate)


def cmd_show(args: argparse.Namespace, _argv: list[str]) -> int:
    gate = _GateArgs.parse(args)
    _check_outputs(args)
    for out in (args.output, args.csv):
        if out is not None and _same_file(out, args.report):
            raise FsyncbenchError(f"{out} is the report being shown: give another output file")
    report = _maybe_redact(store.load_report(args.report), args)
    if gate.names:
        from fsyncbench.judge import gates

        gates.check_names(gate.names, [r.name for r in report.results])
    text = _render(report, args.format, args.model_call_ms)
    if args.csv:  # first: a failure leaves nothing half-done
        store.write_durably(args.csv, render.render_csv(report))
    try:
        _emit(args, text)
    except BaseException:
        if args.csv and args.output:
            args.csv.unlink(missing_ok=True)
        raise
    return gate.apply(report, to_stderr=_gates_to_stderr(args))


def cmd_compare(args: argparse.Namespace, _argv: list[str]) -> int:
    from fsyncbench.report import compare
    from fsyncbench.judge import gates

    if len(args.reports) < 2:
        raise FsyncbenchError("compare needs at least two reports")
    _check_outputs(args)
    names = [p.name for p in args.reports]
    labels = names if len(set(names)) == len(names) else [str(p) for p in args.reports]
    reports = [store.load_report(p) for p in args.reports]
    compare.check_comparable(reports, labels)
    wanted = gates.parse_names(args.config)
    common = compare.common_names(reports)
    if wanted:
        gates.check_names(wanted, common, "every report has")
    pairs = []
    if len(reports) == 2:
        pair = compare.compare_pair(reports[0], reports[1])
        pairs.append((labels[1], pair))
        if args.format == "json":
            data = render.compare_jsonable(reports[0], reports[1], pair, labels)
        else:
            text = render.render_compare(reports[0], reports[1], pair, labels,
                                         render.TABLEFMT[args.format])
    else:
        if len(wanted) > 1:
            raise FsyncbenchError("a fleet is sorted by one configuration: give one --config")
        config = compare.fleet_config(reports, wanted[0] if wanted else None)
        rows = compare.fleet(reports, labels, config)
        if args.format == "json":
            data = render.fleet_jsonable(rows, config)
        else:
            text = render.render_fleet(rows, config, render.TABLEFMT[args.format])
        if args.fail_on_regression is not None:
            pairs += [(label, compare.compare_pair(reports[0], rep))
                      for rep, label in zip(reports[1:], labels[1:])]
    lines, found = [], []
    if args.fail_on_regression is not None:
        lines, found, skipped = _regression_lines(args, pairs, labels, wanted)
        if args.format == "json":
            data["regression_check"] = {
                "limit_pct": args.fail_on_regression, "baseline": labels[0],
                "not_checked": skipped, "regressions": [to_jsonable(r) for r in found]}
    if args.format == "json":
        text = json.dumps(render.json_safe(data), indent=1) + "\n"
    _emit(args, text)
    if args.fail_on_regression is None:
        return EXIT_OK
    # the regression gate's lines: after the table, or on stderr when stdout carries JSON
    to_stderr = (args.output is None and args.format == "json") or getattr(
        sys.stdout, "closed_by_reader", False)
    out = sys.stderr if to_stderr else sys.stdout
    if out is sys.stdout and args.output is None:
        print()
    for line in lines:
        print(line, file=out)
    return EXIT_RISK if found else EXIT_OK


def _regression_lines(args: argparse.Namespace, pairs, labels: list[str], wanted
                      ) -> tuple[list[str], list, list[str]]:
    """compare --fail-on-regression: (lines to print, regressions found, configurations not
    checked). Raises FsyncbenchError when a report has no configuration it could test."""
    from fsyncbench.report import compare

    found, skipped = [], []
    for label, pair in pairs:
        looked, untested = compare.regression_coverage(pair, wanted)
        if untested and len(untested) == looked:
            raise FsyncbenchError(
                f"--fail-on-regression could test no configuration of {label} against "
                f"{labels[0]}: " + "; ".join(untested[:2])
                + (f"; and {len(untested) - 2} more" if len(untested) > 2 else ""))
        skipped += [f"{u} in {label}" for u in untested]
        found += compare.regressions(pair, args.fail_on_regression, labels[0], label, wanted)
    lines = []
    if skipped:
        lines.append("Not checked for a regression (no p99 interval to test): "
                     + "; ".join(skipped) + ".")
    if not found:
        lines.append(f"No p99 regression above {args.fail_on_regression:g} % against {labels[0]}.")
        return lines, found, skipped
    for label, pair in pairs:
        moved = render.floor_moved_line(pair)
        if moved and any(r.candidate == label for r in found):
            lines.append(f"{label}: {moved}")
    for r in found:
        q = r.p99
        lines.append(
            f"REGRESSION {r.name}: p99 {render.fmt_ns(q.a_ns)} in {r.baseline} -> "
            f"{render.fmt_ns(q.b_ns)} in {r.candidate} ({q.change_pct:+.0f} %, ratio 95% CI "
            f"[{q.ratio_ci[0]:.2f}, {q.ratio_ci[1]:.2f}]), more than --fail-on-regression "
            f"{r.limit_pct:g} % worse ({compare.ADJUSTMENT}-adjusted one-sided p {r.p_adjusted:.2g})")
    return lines, found, skipped


def cmd_powercut(args: argparse.Namespace, argv: list[str]) -> int:
    from fsyncbench import powercut
    from fsyncbench.model import Pragmas
    from fsyncbench.measure.workloads import JOURNAL_MODES, SYNCHRONOUS

    tty = sys.stderr.isatty()

    def log(line: str) -> None:
        print(("\r\033[K" if tty else "") + line, file=sys.stderr, flush=True)

    if args.action == "listen":
        powercut.listen(args.bind, args.port, args.state, log)
        return EXIT_OK
    if args.action == "verify":
        address = powercut.parse_address(args.listener, "--from")
        target = runner.check_target(args.dir)
        _check_outputs(args)
        outcome = powercut.verify(address, target, args.run_id, args.report_dir,
                                  ["fsyncbench", *argv])
        _emit(args, store.report_to_json(outcome.report) if args.format == "json" else outcome.text)
        print(f"Report written: {outcome.path}", file=sys.stderr)
        return EXIT_RISK if outcome.failed else EXIT_OK
    address = powercut.parse_address(args.to, "--to")
    target = runner.check_target(args.dir)
    mode = runner.parse_choices(args.journal_mode, JOURNAL_MODES, "journal_mode")
    sync = runner.parse_choices(args.synchronous, SYNCHRONOUS, "synchronous")
    full = (runner.parse_fullfsync(args.fullfsync) if args.fullfsync
            else (True,) if sys.platform == "darwin" else (None,))
    if len(mode) != 1 or len(sync) != 1 or len(full) != 1:
        raise FsyncbenchError("powercut write takes one journal_mode, synchronous and fullfsync value")

    def status(s) -> None:
        line = powercut.format_status(s)
        print("\r\033[K" + line if tty else line, end="" if tty else "\n", file=sys.stderr, flush=True)

    _check_outputs(args)
    summary = powercut.write(address, target, Pragmas(mode[0], sync[0], full[0]),
                             args.payload_bytes, args.max_commits, status, log)
    if tty:
        print(file=sys.stderr)
    if args.format == "json":
        text = json.dumps({k: str(v) if isinstance(v, Path) else v
                           for k, v in to_jsonable(summary).items()}, indent=1) + "\n"
    else:
        text = powercut.format_summary(summary) + "\n"
    _emit(args, text)
    return EXIT_OK


class _Progress:
    """tqdm progress on stderr whenever stderr is a terminal (never otherwise; --quiet: never):
    one unit per workload, fractional within it, so tqdm's ETA covers the whole run. A
    terminal that does not say how large it is (a serial console, a pty nobody sized) gets
    :data:`FALLBACK_SIZE`; tqdm itself prints nothing when told 0 columns or rows."""

    FALLBACK_SIZE = (80, 24)

    def __init__(self, quiet: bool) -> None:
        self.label = ""
        self._bar = None
        self._quiet = quiet or not _isatty(sys.stderr)

    def __call__(self, label, index, total, done, target, elapsed_ns, budget_ns) -> None:
        self.label = label
        if self._quiet:
            return
        if self._bar is None:
            from tqdm import tqdm

            columns, rows = _terminal_size(sys.stderr, self.FALLBACK_SIZE)
            self._bar = tqdm(total=total, unit="config", file=sys.stderr, disable=False,
                             ncols=columns, nrows=rows,
                             bar_format="{l_bar}{bar}| {n:.1f}/{total} workloads [{elapsed}<{remaining}]{postfix}")
        # budget_ns 0: a run-budgeted run, where index already is the time spent, in workloads
        frac = min(1.0, max(done / target, elapsed_ns / budget_ns)) if budget_ns else 0.0
        self._bar.n = index + frac
        self._bar.set_postfix_str(f"{label} {done}/{target}", refresh=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def _terminal_size(stream, fallback: tuple[int, int]) -> tuple[int, int]:
    """(columns, rows) of the terminal ``stream`` writes to; each from $COLUMNS / $LINES,
    then ``fallback``, where the terminal reports 0 or cannot be asked."""
    try:
        size = tuple(os.get_terminal_size(stream.fileno()))
    except (AttributeError, ValueError, OSError):
        size = (0, 0)
    out = []
    for got, env, default in zip(size, ("COLUMNS", "LINES"), fallback):
        if got <= 0:
            try:
                got = int(os.environ.get(env, ""))
            except ValueError:
                got = 0
        out.append(got if got > 0 else default)
    return out[0], out[1]


_COMMANDS = {"run": cmd_run, "host": cmd_host, "crash": cmd_crash, "show": cmd_show,
             "compare": cmd_compare, "audit": cmd_audit, "powercut": cmd_powercut}
