"""Bad input through the real CLI, in a subprocess: exit 2, exactly one stderr line (the one
given here), no traceback, and nothing changed in the working directory, whose files (a
user's file, reports, a FIFO) stay byte-identical. A table of cases; the signal, dead-mount,
full-disk and closed-pipe cases live beside the features they break (test_cli, test_scratch,
test_real_stacks, test_crash, test_powercut)."""

from __future__ import annotations

import hashlib
import io
import json
import os
import socket
import sys
from pathlib import Path

import pytest
import sampled
import this_platform
from clitools import fsb

from fsyncbench.report import store

#: What a default run on Linux measures (elsewhere :func:`_too_many` reads this platform's).
TOO_MANY = (
    "write (no sync), write+fsync, write+fdatasync, write (O_DSYNC), write (O_SYNC), "
    "delete/off, delete/normal, delete/full, truncate/off, truncate/normal, "
    "truncate/full, wal/off, wal/normal, wal/full"
)
SAMPLED = "write (no sync), write+fdatasync, wal/off, wal/normal, wal/full"

CASES = [
    # run: option values
    ("run d --samples 0", "--samples must be at least 1, got 0"),
    ("run d --samples -1", "--samples must be at least 1, got -1"),
    (
        "run d --samples abc",
        "argument --samples: invalid int value: 'abc' (see fsyncbench run --help)",
    ),
    (
        "run d --samples 1.5",
        "argument --samples: invalid int value: '1.5' (see fsyncbench run --help)",
    ),
    (
        "run d --samples 1e3",
        "argument --samples: invalid int value: '1e3' (see fsyncbench run --help)",
    ),
    ("run d --ci-target-pct 0", "--ci-target-pct must be above 0 and below 100, got 0"),
    ("run d --ci-target-pct 100", "--ci-target-pct must be above 0 and below 100, got 100"),
    ("run d --ci-target-pct -1", "--ci-target-pct must be above 0 and below 100, got -1"),
    ("run d --ci-target-pct nan", "--ci-target-pct must be above 0 and below 100, got nan"),
    ("run d --min-samples 0", "--min-samples must be at least 1, got 0"),
    (
        "run d --min-samples 2000000",
        "--min-samples 2000000 is above the most samples one configuration may take (200000)",
    ),
    ("run d --budget-seconds 0", "--budget-seconds must be positive and at most 86400, got 0"),
    ("run d --budget-seconds inf", "--budget-seconds must be positive and at most 86400, got inf"),
    (
        "run d --budget-seconds 1e9",
        "--budget-seconds must be positive and at most 86400, got 1e+09",
    ),
    ("run d --budget-seconds -2", "--budget-seconds must be positive and at most 86400, got -2"),
    (
        "run d --run-budget-seconds 0",
        "--run-budget-seconds must be positive and at most 86400, got 0",
    ),
    (
        "run d --run-budget-seconds -5",
        "--run-budget-seconds must be positive and at most 86400, got -5",
    ),
    (
        "run d --run-budget-seconds nan",
        "--run-budget-seconds must be positive and at most 86400, got nan",
    ),
    ("run d --warmup -1", "--warmup must be 0 or more, got -1"),
    (
        "run d --warmup abc",
        "argument --warmup: invalid int value: 'abc' (see fsyncbench run --help)",
    ),
    ("run d --payload-bytes 0", "--payload-bytes must be between 1 and 67108864, got 0"),
    ("run d --payload-bytes -1", "--payload-bytes must be between 1 and 67108864, got -1"),
    (
        "run d --payload-bytes 100000000",
        "--payload-bytes must be between 1 and 67108864, got 100000000",
    ),
    (
        "run d --journal-mode wal2",
        "invalid journal_mode wal2: allowed values are delete, truncate, persist, memory, wal, off; did you mean wal?",
    ),
    (
        "run d --journal-mode ''",
        "invalid journal_mode '': an empty item (allowed values are delete, "
        "truncate, persist, memory, wal, off)",
    ),
    (
        "run d --journal-mode wal,,delete",
        "invalid journal_mode 'wal,,delete': an empty item (allowed "
        "values are delete, truncate, persist, memory, wal, off)",
    ),
    (
        "run d --synchronous always",
        "invalid synchronous always: allowed values are off, normal, full, extra",
    ),
    (
        "run d --synchronous full,",
        "invalid synchronous 'full,': an empty item (allowed values are off, normal, full, extra)",
    ),
    ("run d --fullfsync maybe", "invalid fullfsync maybe: allowed values are on, off"),
    (
        "run d --fullfsync on,",
        "invalid fullfsync 'on,': an empty item (allowed values are on, off)",
    ),
    ("run d --rounds 0", "--rounds must be between 1 and 50, got 0"),
    ("run d --rounds -2", "--rounds must be between 1 and 50, got -2"),
    ("run d --rounds 51", "--rounds must be between 1 and 50, got 51"),
    (
        "run d --samples 2",
        "--samples 2 is fewer than --rounds 8: every round takes at least one "
        "sample (give --rounds 1)",
    ),
    ("run d --rounds x", "argument --rounds: invalid int value: 'x' (see fsyncbench run --help)"),
    (
        "run d --rounds 1.5",
        "argument --rounds: invalid int value: '1.5' (see fsyncbench run --help)",
    ),
    (
        "run d --format pdf",
        "argument --format: invalid choice: 'pdf' (choose from 'text', 'markdown', "
        "'json', 'html') (see fsyncbench run --help)",
    ),
    (
        "run d --samples 10 --ci-target-pct 5",
        "--samples fixes the sample count; it cannot be combined "
        "with --ci-target-pct or --min-samples",
    ),
    (
        "run d --samples 10 --min-samples 5",
        "--samples fixes the sample count; it cannot be combined "
        "with --ci-target-pct or --min-samples",
    ),
    (
        "run d --assume magic",
        "argument --assume: invalid choice: 'magic' (choose from 'plp', 'protected-cache') "
        "(see fsyncbench run --help)",
    ),
    # run: gates
    (
        "run d --max-p99 10",
        "invalid --max-p99 '10': give a number with a unit, e.g. 10ms, 500us, 2s",
    ),
    (
        "run d --max-p99 10parsecs",
        "invalid --max-p99 '10parsecs': give a number with a unit, e.g. 10ms, 500us, 2s",
    ),
    (
        "run d --max-p99 -5ms",
        "invalid --max-p99 '-5ms': give a number with a unit, e.g. 10ms, 500us, 2s",
    ),
    (
        "run d --fail-on sometimes",
        "invalid --fail-on sometimes: allowed values are no_flush, "
        "volatile_cache, unverifiable, honest_flush",
    ),
    (
        "run d --max-p99 1ms --config wal/fast",
        f"unknown configuration wal/fast: this run measures {TOO_MANY}; did you mean wal/off?",
    ),
    # run: where
    ("run nonexistent", "directory nonexistent does not exist"),
    ("run afile", "afile is not a directory"),
    ("run fifo", "fifo is not a directory"),
    ("run ''", "argument DIR: empty path (see fsyncbench run --help)"),
    ("run d extra-arg", "unrecognized arguments: extra-arg (see fsyncbench run --help)"),
    # near misses: "did you mean" names the command's own option or the listed choice
    (
        "rnu d",
        "argument command: invalid choice: 'rnu' (choose from 'run', 'host', 'crash', 'audit', "
        "'show', 'compare', 'powercut', 'powerloss'); did you mean run? (see fsyncbench --help)",
    ),
    (
        "run d --smaples 3",
        "unrecognized arguments: --smaples 3; did you mean --samples? (see fsyncbench run --help)",
    ),
    (
        "audit d --sampels 3",
        "unrecognized arguments: --sampels 3; did you mean --samples? "
        "(see fsyncbench audit --help)",
    ),
    (
        "run d --format htlm",
        "argument --format: invalid choice: 'htlm' (choose from 'text', 'markdown', 'json', "
        "'html'); did you mean html? (see fsyncbench run --help)",
    ),
    ("audit d --rounds 3", "unrecognized arguments: --rounds 3 (see fsyncbench audit --help)"),
    (
        "run d --journal-mode wall",
        "invalid journal_mode wall: allowed values are delete, truncate, persist, memory, wal, "
        "off; did you mean wal?",
    ),
    (
        "run d --synchronous ful,norma",
        "invalid synchronous ful, norma: allowed values are off, normal, full, extra; did you "
        "mean full for ful, normal for norma?",
    ),
    (
        "show good.json --fail-on volatile_cach",
        "invalid --fail-on volatile_cach: allowed values are no_flush, volatile_cache, "
        "unverifiable, honest_flush; did you mean volatile_cache?",
    ),
    ("run d --report-dir afile", "output afile is not a directory"),
    ("run d --report-dir afile/sub", "output afile/sub is not a directory (afile is a file)"),
    ("run d --report-dir /dev/null", "output /dev/null is not a directory"),
    ("run d --report-dir ''", "argument --report-dir: empty path (see fsyncbench run --help)"),
    # run: --output FILE (a directory before --report-dir: the message says where it went)
    (
        "run d --output d",
        "--output d is a directory: --output takes the FILE to write the "
        "printed result to; to save the report files in it, use --report-dir d",
    ),
    (
        "run d -o d/",
        "argument --output/-o: d/ names a directory: --output takes a FILE (report "
        "files go to --report-dir DIR) (see fsyncbench run --help)",
    ),
    ("run d --output afile/x.txt", "cannot write afile/x.txt: afile is not a directory"),
    ("run d --output missingdir/x.txt", "cannot write missingdir/x.txt: missingdir does not exist"),
    (
        "run d --output sock",
        "cannot write sock: not a regular file (the other files written to are a FIFO, the null device and this session's own terminal)",
    ),
    (
        "run d --csv sock",
        "cannot write sock: not a regular file (the other files written to are a FIFO, the null device and this session's own terminal)",
    ),
    ("run d --output ''", "argument --output/-o: empty path (see fsyncbench run --help)"),
    ("run d --output x.json --csv x.json", "--output and --csv both name x.json: give two files"),
    ("run d --csv afile/x.csv", "cannot write afile/x.csv: afile is not a directory"),
    ("run d --csv missingdir/x.csv", "cannot write missingdir/x.csv: missingdir does not exist"),
    ("run d --csv d", "d is a directory, not a file"),
    ("run d --prometheus d", "d is a directory, not a file"),
    (
        "run d --prometheus d/",
        "argument --prometheus: d/ names a directory: --prometheus takes a FILE, e.g. "
        "d/fsyncbench.prom (see fsyncbench run --help)",
    ),
    ("run d --prometheus ''", "argument --prometheus: empty path (see fsyncbench run --help)"),
    (
        "run d --prometheus -",
        "argument --prometheus: - is not a file: --prometheus writes a FILE for node_exporter's "
        "textfile collector (to print the metrics, write them to a file and cat it) (see "
        "fsyncbench run --help)",
    ),
    (
        "run d --prometheus missingdir/x.prom",
        "cannot write missingdir/x.prom: missingdir does not exist",
    ),
    (
        "run d --prometheus sock",
        "cannot write sock: not a regular file (the other files written to are a FIFO, the null device and this session's own terminal)",
    ),
    (
        "run d -o x.prom --prometheus x.prom",
        "--output and --prometheus both name x.prom: give two files",
    ),
    (
        "audit d --csv x.csv --prometheus x.csv",
        "--csv and --prometheus both name x.csv: give two files",
    ),
    # host, crash, audit
    ("host nonexistent", "directory nonexistent does not exist"),
    ("host afile", "afile is not a directory"),
    (
        "host d --output d",
        "--output d is a directory: --output takes the FILE to write the printed result to",
    ),
    (
        "host d --format html",
        "argument --format: invalid choice: 'html' (choose from 'text', "
        "'markdown', 'json') (see fsyncbench host --help)",
    ),
    (
        "host d --assume magic",
        "argument --assume: invalid choice: 'magic' (choose from 'plp', 'protected-cache') "
        "(see fsyncbench host --help)",
    ),
    ("crash nonexistent", "directory nonexistent does not exist"),
    ("crash afile", "afile is not a directory"),
    ("crash d --journal-mode wal,delete", "crash takes one journal_mode and one synchronous value"),
    (
        "crash d --journal-mode wal2",
        "invalid journal_mode wal2: allowed values are delete, truncate, persist, memory, wal, off; did you mean wal?",
    ),
    (
        "crash d --synchronous sometimes",
        "invalid synchronous sometimes: allowed values are off, normal, full, extra",
    ),
    (
        "crash d -o d",
        "--output d is a directory: --output takes the FILE to write the printed result to; "
        "to save the report files in it, use --report-dir d",
    ),
    (
        "crash d --format pdf",
        "argument --format: invalid choice: 'pdf' (choose from 'text', "
        "'markdown', 'json', 'html') (see fsyncbench crash --help)",
    ),
    ("crash d --report-dir afile", "output afile is not a directory"),
    ("powerloss d --report-dir afile", "output afile is not a directory"),
    ("crash d --model-call-ms 0", "--model-call-ms must be between 0.001 and 3600000, got 0"),
    ("crash d --model-call-ms -1", "--model-call-ms must be between 0.001 and 3600000, got -1"),
    ("crash d --model-call-ms nan", "--model-call-ms must be between 0.001 and 3600000, got nan"),
    (
        "crash d --powerloss bogus",
        "argument --powerloss: invalid choice: 'bogus' (choose from 'synced-only', 'prefix', "
        "'subset', 'torn', 'torn-garbage', 'test6') (see fsyncbench crash --help)",
    ),
    ("crash d --semantics linux", "--semantics applies only with --powerloss"),
    (
        "crash d --powerloss prefix --synchronous full,off",
        "crash takes one journal_mode and one synchronous value",
    ),
    ("audit nonexistent", "directory nonexistent does not exist"),
    ("audit d --samples 0", "--samples must be at least 1, got 0"),
    ("audit d --compare-syncs 1", "--compare-syncs must be at least the number of blocks (4)"),
    ("audit d --sweep-repeats 0", "--sweep-repeats must be at least 1, got 0"),
    ("audit d --sweep-max-mib 0", "--sweep-max-mib must be at least 1"),
    ("audit d --trace-commits 0", "--trace-commits must be at least 1, got 0"),
    ("audit d --from good.json", "give a directory to audit or --from REPORT, not both"),
    ("audit --from nonexistent.json", "report nonexistent.json does not exist"),
    (
        "audit --from corrupt.json",
        "corrupt.json is not valid JSON (Expecting property name enclosed "
        "in double quotes, line 1)",
    ),
    (
        "audit --from newer.json",
        "newer.json uses report schema 99, newer than this fsyncbench reads "
        f"({store.SCHEMA_VERSION}): upgrade fsyncbench",
    ),
    ("audit --from good.json --report-dir afile", "output afile is not a directory"),
    (
        "audit --from good.json --output d",
        "--output d is a directory: --output takes the FILE to "
        "write the printed result to; to save the report files "
        "in it, use --report-dir d",
    ),
    (
        "audit d --output d",
        "--output d is a directory: --output takes the FILE to write the "
        "printed result to; to save the report files in it, use --report-dir d",
    ),
    (
        "audit --from good.json --format pdf",
        "argument --format: invalid choice: 'pdf' (choose from "
        "'text', 'markdown', 'json', 'html') (see fsyncbench "
        "audit --help)",
    ),
    # show
    ("show nonexistent.json", "report nonexistent.json does not exist"),
    (
        "show corrupt.json",
        "corrupt.json is not valid JSON (Expecting property name enclosed in double "
        "quotes, line 1)",
    ),
    ("show list.json", "list.json is not an fsyncbench report (no schema_version)"),
    ("show empty.json", "empty.json is not valid JSON (Expecting value, line 1)"),
    (
        "show newer.json",
        f"newer.json uses report schema 99, newer than this fsyncbench reads "
        f"({store.SCHEMA_VERSION}): upgrade fsyncbench",
    ),
    ("show zero.json", "zero.json has an invalid schema_version 0"),
    ("show boolean.json", "boolean.json has an invalid schema_version True"),
    (
        "show huge-version.json",
        "huge-version.json is not a valid fsyncbench report (Exceeds the limit "
        "(4300 digits) for integer string conversion: value has 5000 digits; "
        "use sys.set_int_max_str_digits() to increase the limit)",
    ),
    ("show dup.json", "dup.json is not a valid fsyncbench report (duplicate key 'schema_version')"),
    ("show fifo", "report fifo is not a regular file"),
    ("show d", "report d is not a regular file"),
    (
        "show good.json --format pdf",
        "argument --format: invalid choice: 'pdf' (choose from 'text', "
        "'markdown', 'json', 'html') (see fsyncbench show --help)",
    ),
    (
        "show good.json -o good.json",
        "good.json is the report being shown: give another output file",
    ),
    (
        "show good.json --csv good.json",
        "good.json is the report being shown: give another output file",
    ),
    (
        "show good.json --prometheus good.json",
        "good.json is the report being shown: give another output file",
    ),
    (
        "show good.json --prometheus afile/x.prom",
        "cannot write afile/x.prom: afile is not a directory",
    ),
    ("show good.json -o afile/x.md", "cannot write afile/x.md: afile is not a directory"),
    (
        "show good.json -o d",
        "--output d is a directory: --output takes the FILE to write the printed result to",
    ),
    (
        "show good.json -o sock",
        "cannot write sock: not a regular file (the other files written to are a FIFO, the null device and this session's own terminal)",
    ),
    (
        "show good.json --csv sock",
        "cannot write sock: not a regular file (the other files written to are a FIFO, the null device and this session's own terminal)",
    ),
    (
        "show good.json --max-p99 fast",
        "invalid --max-p99 'fast': give a number with a unit, e.g. 10ms, 500us, 2s",
    ),
    (
        "show good.json --max-p99 1ms --config nope",
        f"unknown configuration nope: this report has {SAMPLED}",
    ),
    # compare
    ("compare good.json", "compare needs at least two reports"),
    ("compare good.json nonexistent.json", "report nonexistent.json does not exist"),
    (
        "compare good.json corrupt.json",
        "corrupt.json is not valid JSON (Expecting property name "
        "enclosed in double quotes, line 1)",
    ),
    (
        "compare good.json audit.json",
        "good.json is a report of kind 'run' but audit.json of kind 'audit': "
        "they measured different things",
    ),
    (
        "compare good.json other-payload.json",
        "wal/off wrote 512-byte payloads in good.json but "
        "4096-byte payloads in other-payload.json: re-run with "
        "the same --payload-bytes to compare",
    ),
    (
        "compare good.json good.json --fail-on-regression -5",
        "argument --fail-on-regression: invalid "
        "percentage '-5': must be 0 or more (see fsyncbench compare --help)",
    ),
    (
        "compare good.json good.json --fail-on-regression abc",
        "argument --fail-on-regression: invalid "
        "percentage 'abc': give a number such as 20 (see fsyncbench compare --help)",
    ),
    (
        "compare good.json good.json --config nope",
        f"unknown configuration nope: every report has {SAMPLED}",
    ),
    (
        "compare good.json good.json -o d",
        "--output d is a directory: --output takes the FILE to write the printed result to",
    ),
    (
        "compare good.json good.json --format csv",
        "argument --format: invalid choice: 'csv' "
        "(choose from 'text', 'markdown', 'json', 'html') (see fsyncbench compare --help)",
    ),
    ("compare good.json d", "no report (*.json) under d"),
    (
        "compare d --fail-on-regression 20",
        "--fail-on-regression compares against a baseline report, and d is a directory: "
        "give the baseline report file first, then the directory",
    ),
    (
        "compare good.json good.json --group-by rack",
        "--group-by takes a comma list of host, disk, kernel, dir, or report for one row per "
        "report, not rack",
    ),
    (
        "compare good.json good.json good.json --config wal/full,wal/off",
        "a fleet is sorted by one configuration: give one --config",
    ),
    # powercut
    ("powercut", "the following arguments are required: action (see fsyncbench powercut --help)"),
    ("powercut listen --port 70000", "--port must be from 0 to 65535, got 70000"),
    ("powercut listen --port -1", "--port must be from 0 to 65535, got -1"),
    ("powercut write d --to nohost", "invalid --to 'nohost': expected HOST:PORT"),
    (
        "powercut write d --to 127.0.0.1:99999",
        "invalid --to '127.0.0.1:99999': port must be from 1 to 65535",
    ),
    (
        "powercut write d --journal-mode wal,delete --to 127.0.0.1:5400",
        "powercut write takes one journal_mode, synchronous and fullfsync value",
    ),
    ("powercut write nonexistent --to 127.0.0.1:5400", "directory nonexistent does not exist"),
    ("powercut verify d --from nohost", "invalid --from 'nohost': expected HOST:PORT"),
    (
        "powercut verify d --from 127.0.0.1:5400 --output d",
        "--output d is a directory: --output "
        "takes the FILE to write the printed result to; to save the report files in it, use "
        "--report-dir d",
    ),
    (
        "powercut verify d --from 127.0.0.1:5400 --report-dir afile",
        "output afile is not a directory",
    ),
    (
        "powercut verify d --from 127.0.0.1:5400 --format markdown",
        "argument --format: invalid "
        "choice: 'markdown' (choose from 'text', 'json') (see fsyncbench powercut verify --help)",
    ),
    # the command line itself
    (
        "bogus-command",
        "argument command: invalid choice: 'bogus-command' (choose from 'run', 'host', "
        "'crash', 'audit', 'show', 'compare', 'powercut', 'powerloss') (see fsyncbench --help)",
    ),
    ("run --version-typo", "unrecognized arguments: --version-typo (see fsyncbench run --help)"),
    ("", "the following arguments are required: command (see fsyncbench --help)"),
]


def _bad_reports() -> dict[str, str]:
    """Report files that cannot be a measurement, each one field away from a good one."""
    good = json.loads(store.report_to_json(sampled.report(1.0, seed=0, n=1200)))
    out = {}

    def variant(name, path, value):
        data = json.loads(json.dumps(good))
        node = data
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
        out[name] = json.dumps(data)

    variant("nan.json", ("results", 0, "summary", "p50_ns"), float("nan"))
    variant("negative-sample.json", ("results", 1, "samples_ns", 0), -5)
    variant(
        "negative-flushes.json",
        ("results", 1, "device_flushes"),
        [{"device": "sda", "flushes": -3, "flush_time_ms": 0}],
    )
    variant("huge-count.json", ("results", 1, "syncs_issued"), 10**30)
    variant("unknown-kind.json", ("results", 0, "kind"), "benchmark")
    variant("unknown-verdict.json", ("verdict", "path_verdict"), "probably_fine")
    variant("count-mismatch.json", ("results", 2, "summary", "count"), 3)
    variant("slices-mismatch.json", ("results", 2, "slice_counts"), [600, 599])
    variant("rounds-mismatch.json", ("results", 2, "slice_rounds"), [0, 1, 2])
    variant("inverted-ci.json", ("results", 2, "summary", "p99_ci_ns"), [9e6, 1e6])
    variant("ci-off-estimate.json", ("results", 2, "summary", "p99_ci_ns"), [1.0, 2.0])
    variant("string-samples.json", ("results", 2, "samples_ns"), "fast")
    variant("missing-field.json", ("results", 2), {"kind": "commit"})
    return out


BAD_REPORTS = {
    "nan.json": "is not a valid fsyncbench report: Report.results[].summary.p50_ns: not a finite number",
    "negative-sample.json": "is not a valid fsyncbench report: Report.results[].samples_ns[]: negative samples_ns[]",
    "negative-flushes.json": "is not a valid fsyncbench report: Report.results[].device_flushes[].flushes: negative flushes",
    "huge-count.json": "is not a valid fsyncbench report: Report.results[].syncs_issued: number out of range",
    "unknown-kind.json": "is not a valid fsyncbench report: results[0].kind: unknown kind 'benchmark' "
    "(known: commit, flush, write, floor)",
    "unknown-verdict.json": "is not a valid fsyncbench report: verdict: unknown path verdict "
    "'probably_fine' (known: no_flush, volatile_cache, unverifiable, honest_flush)",
    "count-mismatch.json": "is not a valid fsyncbench report: results[2].summary.count: 3, but there "
    "are 1200 samples",
    "slices-mismatch.json": "is not a valid fsyncbench report: results[2].slice_counts: they add up "
    "to 1199, not the 1200 samples",
    "rounds-mismatch.json": "is not a valid fsyncbench report: results[2].slice_rounds: 3 entries for "
    "10 slices",
    "inverted-ci.json": "is not a valid fsyncbench report: results[2].summary.p99_ci_ns: low bound "
    "9e+06 above high bound 1e+06",
    "ci-off-estimate.json": "is not a valid fsyncbench report: results[2].summary.p99_ci_ns: "
    "[1, 2] does not hold the estimate ESTIMATE it is an interval of",
    "string-samples.json": "is not a valid fsyncbench report: Report.results[].samples_ns: expected a list",
    "missing-field.json": "is not a valid fsyncbench report: Report.results[]: missing field 'name'",
}
_ESTIMATE = f"{sampled.report(1.0, seed=0, n=1200).results[2].summary.p99_ns:g}"
BAD_REPORTS = {k: v.replace("ESTIMATE", _ESTIMATE) for k, v in BAD_REPORTS.items()}
for _k, (_name, _tail) in enumerate(BAD_REPORTS.items()):
    CASES.append((f"show {_name}", f"{_name} {_tail}"))
    # every loader runs the same checks: a third of them through compare and audit --from
    if _k % 3 < 2:
        CASES.append(
            ((f"compare good.json {_name}", f"audit --from {_name}")[_k % 3], f"{_name} {_tail}")
        )


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("bad")
    (root / "d").mkdir()
    (root / "d" / "users-file").write_text("the user's own file\n")
    (root / "afile").write_text("not a directory\n")
    if hasattr(os, "mkfifo"):  # not on Windows (the cases that use it skip there)
        os.mkfifo(root / "fifo")
    if hasattr(socket, "AF_UNIX"):
        # a socket file: neither a regular file nor a stream that -o may write to (bound by
        # its relative name: macOS takes at most 104 bytes, and its temporary paths are long)
        sock = socket.socket(socket.AF_UNIX)
        here = os.getcwd()
        os.chdir(root)
        try:
            sock.bind("sock")
        finally:
            os.chdir(here)
            sock.close()
    (root / "corrupt.json").write_text("{oops")
    (root / "list.json").write_text("[]")
    (root / "empty.json").write_text("")
    (root / "newer.json").write_text('{"schema_version": 99}')
    (root / "zero.json").write_text('{"schema_version": 0}')
    (root / "boolean.json").write_text('{"schema_version": true}')
    (root / "huge-version.json").write_text('{"schema_version": ' + "9" * 5000 + "}")
    (root / "dup.json").write_text('{"schema_version": 2, "schema_version": 2}')
    good = sampled.report(1.0, seed=0, n=1200)
    sampled.save(good, root / "good.json")
    import dataclasses

    sampled.save(dataclasses.replace(good, kind="audit"), root / "audit.json")
    sampled.save(
        sampled.report(1.0, seed=1, n=1200, payload_bytes=4096), root / "other-payload.json"
    )
    for name, text in _bad_reports().items():
        (root / name).write_text(text)
    return root


def _snapshot(root: Path) -> dict[str, str]:
    out = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        if p.is_fifo() or p.is_socket():
            out[rel] = "fifo" if p.is_fifo() else "socket"
        elif p.is_dir():
            out[rel] = "dir"
        else:
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def _this_platform(command: str, line: str) -> str:
    """``line`` as this platform says it: the configurations a run measures are the
    platform's own (macOS: fullfsync off and on, its fcntl primitives; Windows:
    FlushFileBuffers), and the one closest to a misspelt name among them."""
    if this_platform.LINUX or TOO_MANY not in line:
        return line
    word = command.split("--config ")[1].split()[0]
    # named before measuring: no fcntl has been probed yet
    return this_platform.unknown_configuration(word, this_platform.run_names())


#: Cases that need what Windows has not: a named pipe (os.mkfifo), a Unix socket file
#: (socket.AF_UNIX), the POSIX null device's path.
POSIX_ONLY = ("fifo", "sock", "/dev/null")


def _windows_lacks(command: str) -> str | None:
    """Why ``command`` cannot be run on Windows, or None."""
    if sys.platform != "win32":
        return None
    words = command.split()
    missing = [w for w in POSIX_ONLY if w in words]
    return f"no {missing[0]} on Windows" if missing else None


def test_there_are_enough_cases():
    assert len(CASES) >= 120


@pytest.mark.parametrize(
    "how",
    [
        # cli.main in this process: the whole table in the fast tier
        "in-process",
        # the real command in a process of its own (the interpreter's own exit path and
        # stderr included): 183 processes, the slow tier
        pytest.param("subprocess", marks=pytest.mark.slow),
    ],
)
@pytest.mark.parametrize("command,line", CASES, ids=[c for c, _ in CASES])
def test_bad_input_is_one_line_exit_2_and_changes_nothing(
    workdir, command, line, how, monkeypatch, capsys
):
    import shlex

    from fsyncbench import cli

    lacks = _windows_lacks(command)
    if lacks:
        pytest.skip(lacks)
    line = _this_platform(command, line)
    before = _snapshot(workdir)
    if how == "subprocess":
        proc = fsb(*shlex.split(command), cwd=workdir, timeout=60)
        code, out, err = proc.returncode, proc.stdout, proc.stderr
    else:
        monkeypatch.chdir(workdir)
        monkeypatch.setattr("sys.stdin", io.StringIO(""))
        code = cli.main(shlex.split(command))
        out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert "Traceback" not in err + out
    if sys.platform == "win32":  # a path in the message is written with backslashes there
        err = err.replace("\\", "/")
    assert err.splitlines() == [f"fsyncbench: error: {line}"]
    assert _snapshot(workdir) == before
