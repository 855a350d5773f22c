"""Gates: duration and verdict parsing, the pure checks, and exit code 1 from the CLI."""


import pytest
import sampled
from clitools import fsb
from factories import host

from fsyncbench import gates
from fsyncbench.errors import FsyncbenchError

QUICK = ["--samples", "30", "--budget-seconds", "5", "--warmup", "2", "--quiet"]


@pytest.mark.parametrize("text,ns", [
    ("10ms", 10_000_000), ("500us", 500_000), ("500µs", 500_000), ("2s", 2_000_000_000),
    ("1.5ms", 1_500_000), ("250ns", 250), (" 3 MS ", 3_000_000), (".5s", 500_000_000),
])
def test_parse_duration(text, ns):
    assert gates.parse_duration(text) == ns


@pytest.mark.parametrize("text,why", [
    ("10", "give a number with a unit"), ("ten ms", "give a number with a unit"),
    ("10 m", "give a number with a unit"), ("-1ms", "give a number with a unit"),
    ("0ms", "must be at least 1 ns"), ("0.4ns", "must be at least 1 ns"), ("", "give a number with a unit"),
])
def test_parse_duration_rejects(text, why):
    with pytest.raises(FsyncbenchError, match=why):
        gates.parse_duration(text, "--max-p99")


def test_parse_verdicts():
    assert gates.parse_verdicts("volatile_cache, no-flush") == ("volatile_cache", "no_flush")
    with pytest.raises(FsyncbenchError, match="invalid --fail-on slow: allowed values are no_flush"):
        gates.parse_verdicts("no_flush,slow")
    assert gates.parse_names(["wal/full,delete/full", "wal/full"]) == ("wal/full", "delete/full")


def test_max_p99_names_each_failing_configuration():
    rep = sampled.report()  # wal/full around 1 ms, p99 a few ms; fdatasync 0.9 ms
    failures = gates.check(rep, max_p99_ns=gates.parse_duration("1ms"))
    subjects = [f.subject for f in failures]
    assert subjects == ["write+fdatasync", "wal/full"]
    assert all(f.gate == "max-p99" and "above --max-p99 1 ms" in f.message for f in failures)
    assert gates.check(rep, max_p99_ns=gates.parse_duration("1s")) == []
    only = gates.check(rep, max_p99_ns=1_000_000, names=["WAL/FULL"])
    assert [f.subject for f in only] == ["wal/full"]
    with pytest.raises(FsyncbenchError, match="unknown configuration delete/full: this report has"):
        gates.check(rep, max_p99_ns=1_000_000, names=["delete/full"])


def test_fail_on_verdicts():
    tmpfs = sampled.report(the_host=host(fs_type="tmpfs"))
    failures = gates.check(tmpfs, fail_on=("volatile_cache", "no_flush"))
    assert failures and all(f.gate == "fail-on" and "path verdict no_flush" in f.message
                            for f in failures)
    assert "write+fdatasync" in {f.subject for f in failures}
    assert gates.check(tmpfs, fail_on=("volatile_cache",)) == []


def test_cli_gate_fails_with_exit_1_and_the_reason(tmp_path):
    """A real run on tmpfs: every sync is dropped, so --fail-on no_flush fails."""
    out = tmp_path / "out"
    proc = fsb("run", "/dev/shm", "--output", out, "--journal-mode", "wal", "--synchronous",
               "off,full", *QUICK, "--fail-on", "volatile_cache,no_flush", "--config", "wal/full")
    assert proc.returncode == 1, proc.stderr
    assert "GATE FAILED [fail-on] wal/full: path verdict no_flush" in proc.stdout, proc.stdout
    assert "1 gate failure(s) in 1 configurations checked" in proc.stdout
    report = next(out.glob("*.json"))  # the report is still written
    # show gates the saved report the same way; a generous p99 limit passes
    shown = fsb("show", report, "--max-p99", "1ns", "--config", "write+fsync")
    assert shown.returncode == 1 and "GATE FAILED [max-p99] write+fsync: p99" in shown.stdout
    ok = fsb("show", report, "--max-p99", "10s")
    assert ok.returncode == 0 and "Gates passed" in ok.stdout


@pytest.mark.parametrize("args,line", [
    (("--max-p99", "10"), "invalid --max-p99 '10': give a number with a unit, e.g. 10ms, 500us, 2s"),
    (("--max-p99", "fast"), "invalid --max-p99 'fast': give a number with a unit, e.g. 10ms, 500us, 2s"),
    (("--fail-on", "bogus"), "invalid --fail-on bogus: allowed values are no_flush, "
                             "volatile_cache, unverifiable, honest_flush"),
    (("--max-p99", "10ms", "--config", "wal/fast"), "unknown configuration wal/fast: this run "
     "measures write (no sync), write+fsync, write+fdatasync, write (O_DSYNC), write (O_SYNC), "
     "wal/off, wal/full"),
])
def test_cli_bad_gate_values_fail_before_measuring(tmp_path, args, line):
    proc = fsb("run", tmp_path, "--output", tmp_path / "out", "--journal-mode", "wal",
               "--synchronous", "off,full", *QUICK, *args)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [f"fsyncbench: error: {line}"]
    assert list(tmp_path.iterdir()) == []  # nothing measured, nothing written
