"""``fsyncbench run``: journal-commit latency per SQLite pragma combination."""

from __future__ import annotations

import argparse

from fsyncbench import api, powerloss
from fsyncbench.cli.output import finish_report, note, outputs
from fsyncbench.cli.parsing import Subparsers, existing_dir
from fsyncbench.cli.progress import Progress
from fsyncbench.cli.shared_options import (
    add_assume_option,
    add_dir_argument,
    add_format_option,
    add_model_call_option,
    add_output_option,
    add_pragma_options,
    add_quiet_option,
    add_report_dir_options,
    add_report_options,
    add_verbose_option,
    add_vs_option,
    gates,
)
from fsyncbench.measure import intervals, plan, writers
from fsyncbench.options import REPORT_FORMATS

NAME = "run"


def add_parser(sub: Subparsers) -> None:
    run = sub.add_parser(
        NAME,
        help="measure journal-commit latency per SQLite pragma combination",
        description="Measure journal-commit latency per SQLite pragma combination "
        "and the raw sync primitives in DIR, print the report and save it "
        "(JSON + Markdown, + HTML with --format html) in --report-dir.",
    )
    add_dir_argument(run, "directory on the storage to test (default: current directory)")
    add_pragma_options(run)
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
    add_quiet_option(run)
    add_format_option(
        run,
        REPORT_FORMATS,
        "html: a self-contained page with plots, also saved as <report>.html in --report-dir",
    )
    add_output_option(run)
    add_verbose_option(run)
    add_report_dir_options(run)
    remember = run.add_mutually_exclusive_group()
    remember.add_argument(
        "--history",
        type=existing_dir,
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
    add_vs_option(run)
    concurrent = run.add_argument_group(
        "concurrent writers and batching",
        "Measured after the rounds, each point on a fresh database; the default run "
        "measures one writer only.",
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
    add_model_call_option(run)
    add_assume_option(run)
    add_report_options(run)


def handle(args: argparse.Namespace, argv: list[str]) -> int:
    run_gates = gates(args)
    with Progress(quiet=args.quiet) as progress:
        report = api.run(
            args.dir,
            journal_modes=args.journal_mode,
            synchronous=args.synchronous,
            fullfsync=args.fullfsync,
            samples=args.samples,
            ci_target_pct=args.ci_target_pct,
            min_samples=args.min_samples,
            budget_seconds=args.budget_seconds,
            run_budget_seconds=args.run_budget_seconds,
            rounds=args.rounds,
            warmup=args.warmup,
            payload_bytes=args.payload_bytes,
            primitives=not args.no_primitives,
            powerloss=args.powerloss,
            assume=args.assume or (),
            redact=args.redact,
            gates=run_gates,
            outputs=outputs(args),
            progress=progress,
            notes=note,
            command_line=["fsyncbench", *argv],
            history=None if args.no_history else (args.history or args.report_dir),
            retake_disturbed=args.retake_disturbed,
            writers=args.writers,
            steps_per_commit=args.steps_per_commit,
            begin=args.begin,
            busy_timeout_ms=args.busy_timeout_ms,
            writers_seconds=args.writers_seconds,
            vs=args.vs,
        )
    return finish_report(report, args, run_gates)
