"""Gates: duration and verdict parsing, the pure checks, and exit code 1 from the CLI."""

import dataclasses
from pathlib import Path

import factories
import pytest
import sampled
import this_platform
from clitools import fsb
from factories import host

from fsyncbench import api, cli
from fsyncbench.errors import FsyncbenchError
from fsyncbench.judge import gates
from fsyncbench.judge.gates import GateFailure
from fsyncbench.model import Interval, ResultVerdict, Verdict

ALLOWED = "allowed values are no_flush, volatile_cache, unverifiable, honest_flush"

QUICK = ["--samples", "30", "--budget-seconds", "5", "--warmup", "2", "--quiet"]


@pytest.mark.parametrize(
    "text,ns",
    [
        ("10ms", 10_000_000),
        ("500us", 500_000),
        ("500µs", 500_000),
        ("2s", 2_000_000_000),
        ("1.5ms", 1_500_000),
        ("250ns", 250),
        (" 3 MS ", 3_000_000),
        (".5s", 500_000_000),
    ],
)
def test_parse_duration(text, ns):
    assert gates.parse_duration(text) == ns


@pytest.mark.parametrize(
    "text,message",
    [
        ("10", "invalid --max-p99 '10': give a number with a unit, e.g. 10ms, 500us, 2s"),
        ("ten ms", "invalid --max-p99 'ten ms': give a number with a unit, e.g. 10ms, 500us, 2s"),
        ("10 m", "invalid --max-p99 '10 m': give a number with a unit, e.g. 10ms, 500us, 2s"),
        ("-1ms", "invalid --max-p99 '-1ms': give a number with a unit, e.g. 10ms, 500us, 2s"),
        ("", "invalid --max-p99 '': give a number with a unit, e.g. 10ms, 500us, 2s"),
        ("0ms", "invalid --max-p99 '0ms': must be at least 1 ns"),
        ("0.4ns", "invalid --max-p99 '0.4ns': must be at least 1 ns"),  # rounds to 0 ns
    ],
)
def test_parse_duration_rejects(text, message):
    with pytest.raises(FsyncbenchError) as err:
        gates.parse_duration(text, "--max-p99")
    assert str(err.value) == message


def test_parse_verdicts():
    assert gates.parse_verdicts("volatile_cache, no-flush") == ("volatile_cache", "no_flush")
    assert gates.parse_verdicts("NO_FLUSH,no-flush") == ("no_flush",)
    assert gates.parse_names(["wal/full,delete/full", "wal/full"]) == ("wal/full", "delete/full")


@pytest.mark.parametrize(
    "text,message",
    [
        ("no_flush,slow", f"invalid --fail-on slow: {ALLOWED}"),
        ("slow,fast", f"invalid --fail-on slow, fast: {ALLOWED}"),
        ("Slow-Disk", f"invalid --fail-on slow_disk: {ALLOWED}"),  # named as normalized
        ("", f"invalid --fail-on '': {ALLOWED}"),  # nothing given: the text itself
        (" , ", f"invalid --fail-on ' , ': {ALLOWED}"),
    ],
)
def test_parse_verdicts_rejects(text, message):
    with pytest.raises(FsyncbenchError) as err:
        gates.parse_verdicts(text)
    assert str(err.value) == message


@pytest.mark.parametrize(
    "names,known,where,message",
    [
        (
            ["wal/fast"],
            ["wal/off", "wal/full"],
            None,
            "unknown configuration wal/fast: this report has wal/off, wal/full; did you mean wal/off?",
        ),
        (
            ["a", "wal/full", "b"],
            ["wal/full"],
            None,
            "unknown configuration a, b: this report has wal/full",
        ),
        (["x"], [], None, "unknown configuration x: this report has none"),
        (
            ["x"],
            ["wal/full"],
            "every report has",
            "unknown configuration x: every report has wal/full",
        ),
    ],
)
def test_check_names_rejects(names, known, where, message):
    with pytest.raises(FsyncbenchError) as err:
        if where is None:
            gates.check_names(names, known)
        else:
            gates.check_names(names, known, where)
    assert str(err.value) == message


def test_check_names_ignores_case():
    assert gates.check_names(["WAL/Full"], ["wal/full"]) is None


def gate_report(*results, verdicts=()):
    """A report of hand-made results and (when given) hand-made per-result verdicts."""
    rep = api.build_report("run", host(), results, ("fsyncbench", "run", "/data"))
    if verdicts:
        rep = dataclasses.replace(rep, verdict=Verdict("no_flush", "hand-made", results=verdicts))
    return rep


def test_select_skips_the_no_sync_baseline_unless_named():
    rep = gate_report(
        factories.write(2_000),
        factories.flush("fdatasync", 900_000),
        factories.commit("WAL", "FULL", 1_000_000),
    )
    assert [r.name for r in gates.select(rep)] == ["write+fdatasync", "wal/full"]
    assert [r.name for r in gates.select(rep, ["WAL/FULL", "write (no sync)"])] == [
        "write (no sync)",
        "wal/full",
    ]  # in report order


def test_max_p99_failure_message():
    # factories: p99 = 1.5 x p50 = 3 ms, its CI 0.9 x and 1.1 x that, n = 1000
    rep = gate_report(factories.write(2_000), factories.flush("fdatasync", 2_000_000))
    assert gates.check(rep, max_p99_ns=1_000_000) == [
        GateFailure(
            "write+fdatasync",
            "max-p99",
            "write+fdatasync: p99 3 ms (95% CI [2.7 ms, 3.3 ms], n=1000) is above --max-p99 1 ms",
        )
    ]
    assert gates.check(rep, max_p99_ns=3_000_000) == []  # at the limit is not above it


def test_max_p99_failure_message_without_an_interval():
    flush = factories.flush("fdatasync", 2_000_000)
    why = Interval(
        3_000_000.0,
        None,
        None,
        None,
        0.0,
        2,
        "block-jackknife",
        "2 slice(s): too few for a p99 interval (needs 5)",
    )
    flush = dataclasses.replace(
        flush, summary=dataclasses.replace(flush.summary, p99_ci_ns=None, p99_interval=why)
    )
    assert gates.check(gate_report(flush), max_p99_ns=2_500_000) == [
        GateFailure(
            "write+fdatasync",
            "max-p99",
            "write+fdatasync: p99 3 ms (95% CI none (2 slices), n=1000) is above --max-p99 2.5 ms",
        )
    ]


def test_max_p99_straddling_its_interval_is_named_and_strict_mode_judges_the_bound():
    """p99 3 ms [2.7 ms, 3.3 ms]: a limit of 3.1 ms passes on the estimate with a note (the
    next run may fail), 2.9 ms fails with a note; strict mode fails both (not shown
    below), passes 3.4 ms, and says "cannot tell" for a p99 without an interval."""
    rep = gate_report(factories.write(2_000), factories.flush("fdatasync", 2_000_000))
    failures, notes, untold = gates.review(rep, max_p99_ns=3_100_000)
    assert failures == [] and untold == []
    assert notes == [
        "write+fdatasync: p99 3 ms (95% CI [2.7 ms, 3.3 ms], n=1000) straddles --max-p99 3.1 ms: "
        "it passes on the estimate, and another run of the same machine may land on the other "
        "side (--max-p99-strict passes only where p99 is shown to be below)"
    ]
    failures, notes, _ = gates.review(rep, max_p99_ns=2_900_000)
    assert [f.subject for f in failures] == ["write+fdatasync"] and "it fails" in notes[0]
    # outside the interval: nothing to note
    assert gates.review(rep, max_p99_ns=3_400_000)[1] == []
    assert gates.review(rep, max_p99_ns=2_600_000)[1] == []
    strict = gates.review(rep, max_p99_ns=3_100_000, max_p99_strict=True)
    assert [f.message for f in strict[0]] == [
        "write+fdatasync: p99 3 ms (95% CI [2.7 ms, 3.3 ms], n=1000) is not shown to be below "
        "--max-p99 3.1 ms (the interval's upper bound is above it; --max-p99-strict)"
    ]
    assert gates.review(rep, max_p99_ns=3_400_000, max_p99_strict=True) == ([], [], [])
    bare = factories.flush("fdatasync", 2_000_000)
    bare = dataclasses.replace(
        bare, summary=dataclasses.replace(bare.summary, p99_ci_ns=None, p99_interval=None)
    )
    failures, notes, untold = gates.review(gate_report(bare), 9_000_000, max_p99_strict=True)
    assert failures == [] and notes == [] and len(untold) == 1
    assert "cannot be shown below --max-p99 9 ms" in untold[0]
    assert "--run-budget-seconds" in untold[0]


def test_strict_mode_never_passes_or_doubts_what_the_default_mode_fails():
    """A p99 above the limit fails in both modes, with or without an interval (strict once
    called a p99 twice the limit without an interval "cannot tell"); without an interval
    below the limit, strict cannot tell and says what would settle it by the reason."""
    from fsyncbench.model import Interval

    for reason, hint in (
        ("n=300 too small (needs 1000)", "more samples would settle it"),
        ("the slices disagree too much", "its slices disagree too much"),
    ):
        r = factories.flush("fdatasync", 2_000_000)
        iv = Interval(r.summary.p99_ns, None, None, None, 0.0, 3, "block-jackknife", reason)
        r = dataclasses.replace(
            r, summary=dataclasses.replace(r.summary, p99_ci_ns=None, p99_interval=iv)
        )
        p99 = r.summary.p99_ns
        for limit in (int(p99 * 0.5), int(p99 * 0.99)):
            default = gates.review(gate_report(r), limit)[0]
            strict = gates.review(gate_report(r), limit, max_p99_strict=True)[0]
            assert [f.subject for f in default] == [f.subject for f in strict] == [r.name]
        failures, _notes, untold = gates.review(gate_report(r), int(p99 * 2), max_p99_strict=True)
        assert failures == [] and len(untold) == 1 and hint in untold[0], untold


def _cli_strict_max_p99_without_an_interval_exits_4(fsb, tmp_path):
    """show of a report whose p99s have no interval: strict mode cannot tell (exit 4), the
    default mode judges the estimate (exit 0); --max-p99-strict alone is refused."""
    rep = sampled.report()
    bare = dataclasses.replace(
        rep,
        results=tuple(
            dataclasses.replace(
                r,
                samples_ns=(),
                slice_counts=(),
                summary=dataclasses.replace(r.summary, p99_ci_ns=None, p99_interval=None),
            )
            for r in rep.results
        ),
    )
    path = sampled.save(bare, tmp_path / "bare.json")
    proc = fsb("show", path, "--max-p99", "10s", "--max-p99-strict")
    assert proc.returncode == 4, proc.stderr
    assert "CANNOT TELL [max-p99] write+fdatasync: p99" in proc.stdout
    assert "could not be checked: exit 4." in proc.stdout
    assert fsb("show", path, "--max-p99", "10s").returncode == 0
    alone = fsb("show", path, "--max-p99-strict")
    assert alone.returncode == 2
    assert alone.stderr.strip() == "fsyncbench: error: --max-p99-strict needs --max-p99 DURATION"


@pytest.mark.slow
def test_cli_strict_max_p99_without_an_interval_exits_4(tmp_path):
    _cli_strict_max_p99_without_an_interval_exits_4(fsb, tmp_path)


def test_cli_strict_max_p99_without_an_interval_exits_4_in_process(tmp_path, here):
    _cli_strict_max_p99_without_an_interval_exits_4(here, tmp_path)


def test_fail_on_failure_message():
    rep = gate_report(
        factories.flush("fdatasync", 2_000_000),
        factories.commit("WAL", "FULL", 1_000_000),
        verdicts=(
            ResultVerdict("write+fdatasync", "no_flush", False, "tmpfs keeps data in RAM"),
            ResultVerdict("wal/full", "honest_flush", True, "flush counters"),
        ),
    )
    assert gates.check(rep, fail_on=("volatile_cache", "no_flush")) == [
        GateFailure(
            "write+fdatasync",
            "fail-on",
            "write+fdatasync: path verdict no_flush (decided by tmpfs keeps data in RAM) is in "
            "--fail-on volatile_cache,no_flush",
        )
    ]


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
    assert failures and all(
        f.gate == "fail-on" and "path verdict no_flush" in f.message for f in failures
    )
    assert "write+fdatasync" in {f.subject for f in failures}
    assert gates.check(tmpfs, fail_on=("volatile_cache",)) == []


def _cli_gate_fails_with_exit_1_and_the_reason(fsb, tmp_path, *rounds):
    """A real run on tmpfs: every sync is dropped, so --fail-on no_flush fails (``rounds``:
    ``--rounds 1`` measures in this process, without the round workers)."""
    out = tmp_path / "out"
    proc = fsb(
        "run",
        "/dev/shm",
        "--report-dir",
        out,
        "--journal-mode",
        "wal",
        "--synchronous",
        "off,full",
        *QUICK,
        "--fail-on",
        "volatile_cache,no_flush",
        "--config",
        "wal/full",
        *rounds,
    )
    assert proc.returncode == 1, proc.stderr
    assert "GATE FAILED [fail-on] wal/full: path verdict no_flush" in proc.stdout, proc.stdout
    assert "1 gate failure in 1 configuration checked" in proc.stdout
    report = next(out.glob("*.json"))  # the report is still written
    # show gates the saved report the same way; a generous p99 limit passes
    shown = fsb("show", report, "--max-p99", "1ns", "--config", "write+fsync", "--accept-disturbed")
    assert shown.returncode == 1 and "GATE FAILED [max-p99] write+fsync: p99" in shown.stdout
    ok = fsb("show", report, "--max-p99", "10s", "--accept-disturbed")
    assert ok.returncode == 0 and "Gates passed" in ok.stdout


@pytest.mark.slow
@pytest.mark.skipif(not Path("/dev/shm").is_dir(), reason="no /dev/shm (Linux's tmpfs)")
def test_cli_gate_fails_with_exit_1_and_the_reason(tmp_path):
    _cli_gate_fails_with_exit_1_and_the_reason(fsb, tmp_path)


@pytest.mark.skipif(not Path("/dev/shm").is_dir(), reason="no /dev/shm (Linux's tmpfs)")
def test_cli_gate_fails_with_exit_1_and_the_reason_in_process(tmp_path, here):
    _cli_gate_fails_with_exit_1_and_the_reason(here, tmp_path, "--rounds", "1")


@pytest.mark.parametrize(
    "args,line",
    [
        (
            ("--max-p99", "10"),
            "invalid --max-p99 '10': give a number with a unit, e.g. 10ms, 500us, 2s",
        ),
        (
            ("--max-p99", "fast"),
            "invalid --max-p99 'fast': give a number with a unit, e.g. 10ms, 500us, 2s",
        ),
        (("--fail-on", "bogus"), f"invalid --fail-on bogus: {ALLOWED}"),
        (
            ("--max-p99", "10ms", "--config", "wal/fast"),
            (
                "unknown configuration wal/fast: this run measures write (no sync), write+fsync, "
                "write+fdatasync, write (O_DSYNC), write (O_SYNC), wal/off, wal/full; did you mean wal/off?"
                if this_platform.LINUX
                # this platform's primitives and configurations (named before measuring)
                else this_platform.unknown_configuration(
                    "wal/fast", this_platform.run_names(None, "wal", "off,full")
                )
            ),
        ),
    ],
)
def test_cli_bad_gate_values_fail_before_measuring(tmp_path, args, line):
    proc = fsb(
        "run",
        tmp_path,
        "--report-dir",
        tmp_path / "out",
        "--journal-mode",
        "wal",
        "--synchronous",
        "off,full",
        *QUICK,
        *args,
    )
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [f"fsyncbench: error: {line}"]
    assert list(tmp_path.iterdir()) == []  # nothing measured, nothing written


def test_a_verdict_gate_that_passes_names_the_storage_it_could_not_verify(capsys):
    """The example report's path is unverifiable (a VM): --fail-on volatile_cache,no_flush
    passes it, and says the storage was not verified rather than a bare "Gates passed"."""
    from pathlib import Path

    example = sorted(
        (Path(__file__).resolve().parent.parent / "examples" / "report").glob("*.json")
    )[-1]
    argv = ["show", str(example), "--config", "wal/full"]
    assert cli.main([*argv, "--fail-on", "volatile_cache,no_flush"]) == 0
    out = capsys.readouterr().out.strip()
    last = " ".join(out[out.rindex("Gates passed") :].split())  # wrapped to the terminal
    assert last.startswith("Gates passed (1 configuration checked), but the storage under wal/full")
    assert "is unverifiable, not verified" in last
    assert cli.main([*argv, "--fail-on", "volatile_cache,no_flush,unverifiable"]) == 1
    capsys.readouterr()
    assert cli.main([*argv, "--max-p99", "1000ms"]) == 0  # no verdict gate: nothing to add
    assert capsys.readouterr().out.strip().splitlines()[-1] == (
        "Gates passed (1 configuration checked)."
    )


def test_a_disturbed_run_says_no_configuration_was_checked_by_max_p99(capsys):
    """It said '1 of 13 configurations could not be checked' when the whole run was."""
    from fsyncbench.api.gating import GateResult
    from fsyncbench.cli.output import apply_gates

    whole = GateResult((), 13, True, (), ("--max-p99 1 ms: cannot tell: 3 of 3 rounds ...",))
    assert apply_gates(whole) == 4
    out = " ".join(capsys.readouterr().out.split())
    assert "--max-p99 could not be checked on any of the 13 configurations: exit 4." in out
    one = GateResult((), 13, True, (), ("wal/full: p99 ... cannot tell",))
    assert apply_gates(one) == 4
    assert "1 of 13 configurations could not be checked" in capsys.readouterr().out
