"""``fsyncbench powerloss``: simulated power cuts, what each SQLite pragma combination
really loses."""

from __future__ import annotations

import argparse
import time

from fsyncbench import api
from fsyncbench.cli.output import finish_experiment, note, outputs
from fsyncbench.cli.parsing import Subparsers, path
from fsyncbench.cli.progress import Progress
from fsyncbench.cli.shared_options import (
    SEMANTICS_HELP,
    add_dir_argument,
    add_format_option,
    add_output_option,
    add_payload_option,
    add_pragma_options,
    add_quiet_option,
    add_report_dir_options,
    add_verbose_option,
)
from fsyncbench.options import REPORT_FORMATS

NAME = "powerloss"


def add_parser(sub: Subparsers) -> None:
    from fsyncbench.powerloss import DEFAULT_COMMITS, MODELS, SECTOR_SIZES, SEMANTICS
    from fsyncbench.powerloss.models import DEFAULT_MAX_STATES, DEFAULT_SAMPLES
    from fsyncbench.powerloss.plan import MAX_COMMITS

    pl = sub.add_parser(
        NAME,
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
    add_dir_argument(
        pl,
        "directory for the recordings (a working directory in it is removed "
        "afterwards; default: current directory)",
    )
    add_pragma_options(pl)
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
    add_payload_option(pl)
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
        type=path,
        metavar="DIR",
        help="write the worst state of each configuration x model into DIR (created) with "
        "a state.json saying how it was made",
    )
    add_quiet_option(pl)
    add_format_option(
        pl, REPORT_FORMATS, "the report is saved as JSON, Markdown and HTML in --report-dir"
    )
    add_output_option(pl)
    add_verbose_option(
        pl,
        "the whole report (every column of the table, which filesystems leave each "
        "model's states, the worst state of each, the method) instead of the answer and the "
        "table's main columns",
    )
    add_report_dir_options(pl)


def handle(args: argparse.Namespace, argv: list[str]) -> int:
    started = time.monotonic_ns()
    with Progress(quiet=args.quiet) as progress:
        result = api.simulate_power_loss(
            args.dir,
            journal_modes=args.journal_mode,
            synchronous=args.synchronous,
            fullfsync=args.fullfsync,
            models=args.models,
            semantics=args.semantics,
            commits=args.commits,
            payload_bytes=args.payload_bytes,
            sector_bytes=args.sector_bytes,
            psow=None if args.psow is None else args.psow == "on",
            max_states=args.max_states,
            samples=args.samples,
            seed=args.seed,
            keep_failures=args.keep_failures,
            wal_autocheckpoint=args.wal_autocheckpoint,
            outputs=outputs(args),
            progress=progress,
            notes=note,
        )
    return finish_experiment(result, args, argv, started)
