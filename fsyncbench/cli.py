"""Command line: the only module that prints or exits.

Exit codes: 0 ok; 1 durability risk found (only when a gate option asks); 2 usage or
runtime error (one line on stderr, never a traceback).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from fsyncbench import __version__, render, runner, store
from fsyncbench.errors import FsyncbenchError
from fsyncbench.model import Report, to_jsonable

EXIT_OK, EXIT_RISK, EXIT_ERROR = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage dump) and exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise FsyncbenchError(f"{message} (see {self.prog} --help)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="fsyncbench",
        description="What a durable SQLite journal commit costs on this machine, and "
        "whether the storage under it keeps what it acknowledges.",
    )
    parser.add_argument("--version", action="version", version=f"fsyncbench {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = sub.add_parser("run", help="measure journal-commit latency per SQLite pragma combination")
    run.add_argument("dir", nargs="?", default=".", type=Path,
                     help="directory on the storage to test (default: current directory)")
    run.add_argument("--output", "-o", type=Path, default=Path("reports"),
                     help="where to write the JSON and Markdown report (default: ./reports)")
    run.add_argument("--journal-mode", help="comma list: delete,truncate,persist,memory,wal,off "
                     "(default: delete,truncate,wal)")
    run.add_argument("--synchronous", help="comma list: off,normal,full,extra (default: off,normal,full)")
    run.add_argument("--fullfsync", help="comma list: on,off (default on macOS: off,on; elsewhere not set)")
    run.add_argument("--samples", type=int, default=1000,
                     help="samples per configuration (default 1000)")
    run.add_argument("--budget-seconds", type=float, default=10.0,
                     help="time budget per configuration in seconds (default 10)")
    run.add_argument("--warmup", type=int, default=50, help="untimed warmup operations (default 50)")
    run.add_argument("--payload-bytes", type=int, default=512,
                     help="size of each step's JSON output (default 512)")
    run.add_argument("--no-primitives", action="store_true",
                     help="skip the raw write+sync primitive measurements")
    run.add_argument("--quiet", "-q", action="store_true", help="no progress bar")

    host = sub.add_parser("host", help="print the host record for DIR without measuring")
    host.add_argument("dir", nargs="?", default=".", type=Path)
    host.add_argument("--json", action="store_true", help="print JSON")

    crash = sub.add_parser("crash", help="the kill matrix: what a step journal buys an agent that is SIGKILLed")
    crash.add_argument("dir", nargs="?", default=".", type=Path,
                       help="directory for the journal and outside-world databases (default: .)")
    crash.add_argument("--journal-mode", default="wal", help="journal_mode of the step journal (default wal)")
    crash.add_argument("--synchronous", default="full", help="synchronous of the step journal (default full)")
    crash.add_argument("--model-call-ms", type=float, default=1000.0,
                       help="assumed duration of one model call, to compare the journal against (default 1000)")
    crash.add_argument("--json", action="store_true", help="print the figures as JSON")

    show = sub.add_parser("show", help="render a saved report")
    show.add_argument("report", type=Path)
    show.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    return parser


def main(argv: list[str] | None = None) -> int:
    args_list = sys.argv[1:] if argv is None else argv
    try:
        args = build_parser().parse_args(args_list)
        return _COMMANDS[args.command](args, args_list)
    except FsyncbenchError as exc:
        print(f"fsyncbench: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("fsyncbench: interrupted; nothing was written", file=sys.stderr)
        return EXIT_ERROR


def _collect_host(target: Path):
    from fsyncbench.host import collect_host

    return collect_host(str(target))


def cmd_run(args: argparse.Namespace, argv: list[str]) -> int:
    target = runner.check_target(args.dir)
    plan = runner.RunPlan(
        target=target,
        configs=runner.build_configs(args.journal_mode, args.synchronous, args.fullfsync),
        samples=args.samples,
        budget_s=args.budget_seconds,
        warmup=args.warmup,
        payload_bytes=args.payload_bytes,
        primitives=not args.no_primitives,
    )
    store.check_output_dir(args.output)
    host = _collect_host(target)
    progress = _Progress(quiet=args.quiet)
    try:
        results = runner.run_plan(plan, host, progress)
    except KeyboardInterrupt:
        progress.close()
        print(f"fsyncbench: interrupted while measuring {progress.label or 'setup'}; "
              f"working directory removed, no report written", file=sys.stderr)
        return EXIT_ERROR
    except FsyncbenchError as exc:
        progress.close()
        raise FsyncbenchError(f"{exc} (while measuring {progress.label}; working directory removed)")
    progress.close()
    report = runner.build_report("run", host, results, ["fsyncbench", *argv])
    paths = _save(report, store.prepare_output_dir(args.output))
    print(render.render_text(report), end="")
    print("Report written: " + ", ".join(str(p) for p in paths))
    return EXIT_OK


def _save(report: Report, out_dir: Path) -> list[Path]:
    base = store.report_basename(report)
    stem, n = base, 1
    while (out_dir / f"{stem}.json").exists():
        n += 1
        stem = f"{base}-{n}"
    json_path, md_path = out_dir / f"{stem}.json", out_dir / f"{stem}.md"
    store.write_durably(json_path, store.report_to_json(report))
    store.write_durably(md_path, render.render_markdown(report))
    return [json_path, md_path]


def cmd_host(args: argparse.Namespace, _argv: list[str]) -> int:
    target = runner.check_target(args.dir)
    host = _collect_host(target)
    if args.json:
        print(json.dumps(to_jsonable(host), indent=1))
    else:
        print(render.render_host(host), end="")
    return EXIT_OK


def cmd_crash(args: argparse.Namespace, _argv: list[str]) -> int:
    from fsyncbench import crash

    target = runner.check_target(args.dir)
    mode = runner.parse_choices(args.journal_mode, crash.JOURNAL_MODES, "journal_mode")
    sync = runner.parse_choices(args.synchronous, crash.SYNCHRONOUS, "synchronous")
    if len(mode) != 1 or len(sync) != 1:
        raise FsyncbenchError("crash takes one journal_mode and one synchronous value")
    if not args.model_call_ms > 0:
        raise FsyncbenchError(f"--model-call-ms must be positive, got {args.model_call_ms:g}")
    try:
        outcome = crash.run_crash_experiment(target, mode[0], sync[0])
    except KeyboardInterrupt:
        print("fsyncbench: interrupted during the kill matrix; working directory removed",
              file=sys.stderr)
        return EXIT_ERROR
    if args.json:
        print(json.dumps(render.crash_jsonable(outcome, args.model_call_ms), indent=1))
    else:
        print(render.render_crash(outcome, args.model_call_ms), end="")
    return EXIT_OK


def cmd_show(args: argparse.Namespace, _argv: list[str]) -> int:
    report = store.load_report(args.report)
    if args.format == "json":
        print(store.report_to_json(report), end="")
    elif args.format == "markdown":
        print(render.render_markdown(report), end="")
    else:
        print(render.render_text(report), end="")
    return EXIT_OK


class _Progress:
    """tqdm progress on stderr (only when stderr is a terminal): one unit per workload,
    fractional within it, so tqdm's ETA covers the whole run."""

    def __init__(self, quiet: bool) -> None:
        self.label = ""
        self._bar = None
        self._quiet = quiet

    def __call__(self, label, index, total, done, target, elapsed_ns, budget_ns) -> None:
        self.label = label
        if self._quiet:
            return
        if self._bar is None:
            from tqdm import tqdm

            self._bar = tqdm(total=total, unit="config", file=sys.stderr, disable=None,
                             bar_format="{l_bar}{bar}| {n:.1f}/{total} workloads [{elapsed}<{remaining}]{postfix}")
        frac = min(1.0, max(done / target, elapsed_ns / budget_ns))
        self._bar.n = index + frac
        self._bar.set_postfix_str(f"{label} {done}/{target}", refresh=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


_COMMANDS = {"run": cmd_run, "host": cmd_host, "crash": cmd_crash, "show": cmd_show}
