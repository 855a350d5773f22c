"""``fsyncbench powercut cycle`` (issue 30, item 7): the whole experiment as one command,
with cheap local commands: a real writer process on a temporary directory, ``kill`` as the
cut, the real ``verify`` (which sees no reboot here: such a cycle proves nothing, and the
cycle says so), and commands that fail or never answer. The real cuts of a guest and its
drive are tests/test_lab_powercut.py's."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

import pytest

from fsyncbench import cli
from fsyncbench.errors import FsyncbenchError
from fsyncbench.powercut.cycle import (
    CycleResult,
    CycleSummary,
    cycle,
    format_summary,
    make_plan,
    parse_command,
    parse_seconds_range,
    summary_json,
)
from fsyncbench.powercut.secret import ENV_VAR

PY = shlex.quote(sys.executable)
FSB = f"{PY} -m fsyncbench"
#: A command that exists everywhere and does nothing (``true`` is not on Windows).
NOOP = f"{PY} -c pass"
#: The cycles below are POSIX shell scripts: ``sh -c``, ``kill -KILL``, ``$$``, ``exec``.
posix_shell = pytest.mark.skipif(
    sys.platform == "win32", reason="the cycles' commands are POSIX shell scripts (sh, kill)"
)


@pytest.fixture(autouse=True)
def _no_inherited_secret(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)


def _writer(tmp_path: Path) -> str:
    """A start command: the writer on tmp_path/data, its pid in tmp_path/pid (for the cut)."""
    (tmp_path / "data").mkdir(exist_ok=True)
    return (
        f"sh -c 'echo $$ > {tmp_path}/pid; exec {FSB} powercut write --to {{address}} "
        f"--secret-file {{secret_file}} {tmp_path}/data'"
    )


def _kill_writer(tmp_path: Path, then: str = "") -> str:
    return f"sh -c 'kill -KILL $(cat {tmp_path}/pid){then}'"


def _verify(tmp_path: Path) -> str:
    return (
        f"{FSB} powercut verify --from {{address}} --secret-file {{secret_file}} "
        f"--run-id {{run_id}} --format json --report-dir {tmp_path}/reports {tmp_path}/data"
    )


def _cycle(tmp_path: Path, *, start=None, cut=None, verify=None, log=None, **plan):
    plan.setdefault("cut_after", "0.2..0.4")
    plan.setdefault("seed", 1)
    plan.setdefault("retry_every_s", 0.1)
    plan.setdefault("start_timeout_s", 60)
    p = make_plan(
        start or _writer(tmp_path),
        cut or _kill_writer(tmp_path),
        verify or _verify(tmp_path),
        **plan,
    )
    lines: list[str] = []
    summary = cycle(
        p,
        bind="127.0.0.1",
        port=0,
        state_path=tmp_path / "state.db",
        secret_file=None,
        environ={},
        log=lines.append if log is None else log,
    )
    return summary, lines


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


# --------------------------------------------------------------------------- the plan


def test_the_seeded_moments_are_reproducible():
    plan = make_plan(NOOP, NOOP, NOOP, cycles=5, cut_after="2..10", seed=7)
    moments = plan.moments_s()
    assert moments == make_plan(NOOP, NOOP, NOOP, cycles=5, cut_after="2..10", seed=7).moments_s()
    assert len(moments) == 5 and all(2 <= m <= 10 for m in moments)
    assert len(set(moments)) == 5
    assert moments != make_plan(NOOP, NOOP, NOOP, cycles=5, seed=8).moments_s()
    # without a seed one is drawn, and it is kept: the same moments again from it
    drawn = make_plan(NOOP, NOOP, NOOP, cycles=3)
    assert drawn.moments_s() == make_plan(NOOP, NOOP, NOOP, cycles=3, seed=drawn.seed).moments_s()
    # a fixed moment
    assert make_plan(NOOP, NOOP, NOOP, cycles=2, cut_after="3", seed=1).moments_s() == [
        3.0,
        3.0,
    ]


@pytest.mark.parametrize(
    "text,expected",
    [("2..10", (2.0, 10.0)), ("0.5", (0.5, 0.5)), ("0..0", (0.0, 0.0)), ("1.5..2", (1.5, 2.0))],
)
def test_cut_after_ranges(text, expected):
    assert parse_seconds_range(text) == expected


@pytest.mark.parametrize("text", ["10..2", "-1..2", "a..b", "", "2..", "1..99999999"])
def test_bad_cut_after_ranges(text):
    with pytest.raises(FsyncbenchError, match="^--cut-after must be"):
        parse_seconds_range(text)


def test_commands_are_split_like_a_shell_and_checked():
    # (the program: this Python, on every platform; ssh in real use)
    c = parse_command(f"{PY} host 'fsyncbench powercut write --to B:{{port}}' {{cycle}}", "--start")
    assert c.argv == (sys.executable, "host", "fsyncbench powercut write --to B:{port}", "{cycle}")
    assert c.expand({"port": "5400", "cycle": "3"}) == [
        sys.executable,
        "host",
        "fsyncbench powercut write --to B:5400",
        "3",
    ]
    # a brace that is no placeholder of ours stays (a shell or JSON may use them)
    assert parse_command(f"{PY} -c 'print({{}})'", "--cut").expand({}) == [
        sys.executable,
        "-c",
        "print({})",
    ]
    bad = {
        "": "--cut: the command is empty",
        "sh -c 'unclosed": '--cut: cannot split "sh -c \'unclosed": No closing quotation',
        f"{PY} {{runid}}": "--cut: unknown placeholder {runid} (known: {port}, {address}, "
        "{cycle}, {secret_file}, {run_id})",
        "no-such-program-fsb --x": "--cut: command not found: no-such-program-fsb",
    }
    for text, message in bad.items():
        with pytest.raises(FsyncbenchError) as err:
            parse_command(text, "--cut")
        assert str(err.value) == message
    with pytest.raises(FsyncbenchError, match=r"^--start: \{run_id\} is not known yet"):
        parse_command(f"{PY} {{run_id}}", "--start", run_id_known=False)


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--cycles", "0"], "fsyncbench: error: --cycles must be from 1 to 10000, got 0"),
        (["--cut-after", "9..3"], "fsyncbench: error: --cut-after must be a range LO..HI"),
        (["--cut-after", "soon"], "fsyncbench: error: --cut-after must be seconds or a range"),
        (["--verify-timeout-seconds", "0"], "fsyncbench: error: --verify-timeout-seconds must"),
        (["--start", f"{PY} {{run_id}}"], "fsyncbench: error: --start: {run_id} is not known yet"),
        (["--cut", "nope-not-here off"], "fsyncbench: error: --cut: command not found: nope"),
        (["--seed", "x"], "fsyncbench: error: argument --seed: invalid int value: 'x'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, argv, message):
    base = {"--start": NOOP, "--cut": NOOP, "--verify": NOOP}
    args = ["powercut", "cycle", "--port", "0", "--state", str(tmp_path / "s.db")]
    for option, value in base.items():
        if option not in argv:
            args += [option, value]
    assert cli.main(args + argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1, err
    assert not (tmp_path / "s.db").exists()  # nothing started


def test_the_summary_exit_code_and_verdict():
    ok = CycleResult(1, 2.0, "pass", "a" * 32, 100, 98, 0)
    lost = CycleResult(2, 3.0, "fail", "b" * 32, 50, 50, 7, ((44, 50),), 1)
    blind = CycleResult(3, 1.0, "inconclusive", "c" * 32, 9, 9, 0, decided_by="powercut-no-reboot")
    broken = CycleResult(4, 1.0, "error", error="the cut command failed (exit 1): no")

    def s(*results, error=None):
        return CycleSummary(4, 1, (1.0, 3.0), "127.0.0.1:5400", tuple(results), error)

    assert s(ok).exit_code == 0 and s(ok).verdict.startswith("PASS: 1 cycles")
    assert s(ok, lost).exit_code == 1
    assert s(ok, lost).verdict.startswith(
        "FAIL: 1 of 2 cycles lost acknowledged commits (7 in all)"
    )
    assert s(ok, lost, broken, error="cycle 4: x").exit_code == 1  # a loss is proof: it wins
    assert s(ok, broken, error="cycle 4: x").exit_code == 2
    assert s(ok, blind).exit_code == 4
    assert "verify saw no reboot" in s(ok, blind).verdict
    assert s(ok, blind, broken, error="cycle 4: x").exit_code == 2
    text = format_summary(s(ok, lost))
    assert (
        "cycle 2: cut at 3.000 s: run "
        + "b" * 32
        + ": 50 acknowledged (50 at the cut), lost 7 (44-50)"
        in text
    )
    assert "Total: 2 cycles, 150 acknowledged, 7 lost; lost per cycle: 0, 7" in text
    data = json.loads(summary_json(s(ok, lost)))
    assert (data["exit_code"], data["lost_cycles"], data["results"][1]["lost_ranges"]) == (
        1,
        1,
        [[44, 50]],
    )


# --------------------------------------------------------------------------- cycles


@posix_shell
def test_cycles_with_a_local_writer_killed_prove_nothing_and_say_so(tmp_path):
    """Two cycles: the writer starts, the listener records, kill -KILL, verify. No reboot
    came between (this machine kept running): verify passes the run as unverifiable, and
    the cycle counts it as proving nothing: exit 4, never a silent 0."""
    log = tmp_path / "placeholders"
    summary, lines = _cycle(
        tmp_path,
        cycles=2,
        restore=f"sh -c 'echo {{cycle}} {{run_id}} {{port}} >> {log}'",
    )
    assert summary.error is None, summary
    assert [r.outcome for r in summary.results] == ["inconclusive", "inconclusive"]
    assert summary.exit_code == 4
    for r in summary.results:
        assert r.acknowledged >= r.acknowledged_at_cut > 0
        assert (r.lost, r.verify_exit, r.decided_by, r.verify_attempts) == (
            0,
            0,
            "powercut-no-reboot",
            1,
        )
    # the restore command saw this cycle's number, run and the listener's port
    port = summary.listener.rsplit(":", 1)[1]
    assert log.read_text().splitlines() == [f"{r.cycle} {r.run_id} {port}" for r in summary.results]
    assert [r.cut_after_s for r in summary.results] == make_plan(
        NOOP, NOOP, NOOP, cycles=2, cut_after="0.2..0.4", seed=1
    ).moments_s()
    assert not any("secret" in line and "made now" not in line for line in lines if ENV_VAR in line)


@posix_shell
def test_a_cycle_that_lost_its_commits_fails_with_exit_1(tmp_path):
    """The cut kills the writer and takes the run's directory with it (as a lying drive's
    cut did in the lab): verify names every acknowledged commit lost; the cycle fails."""
    cut = _kill_writer(tmp_path, then=f"; rm -rf {tmp_path}/data/.fsyncbench-powercut/{{run_id}}")
    summary, _lines = _cycle(tmp_path, cut=cut)
    (r,) = summary.results
    assert (r.outcome, r.verify_exit, r.decided_by) == ("fail", 1, "powercut-acknowledged-lost")
    assert r.lost == r.acknowledged > 0 and r.lost_ranges == ((1, r.acknowledged),)
    assert summary.exit_code == 1
    assert (
        format_summary(summary)
        .splitlines()[-1]
        .startswith("Result: FAIL: 1 of 1 cycles lost acknowledged commits")
    )


@posix_shell
def test_a_failing_cut_command_is_reported_and_ends_the_experiment(tmp_path):
    summary, _lines = _cycle(tmp_path, cycles=3, cut="sh -c 'echo the PDU said no >&2; exit 3'")
    (r,) = summary.results
    assert r.outcome == "error" and r.run_id is not None and r.acknowledged > 0
    assert r.error == "the cut command failed (exit 3): the PDU said no"
    assert summary.error == "cycle 1: the cut command failed (exit 3): the PDU said no"
    assert summary.exit_code == 2
    assert not _alive(int((tmp_path / "pid").read_text()))  # the writer was ended
    assert "ERROR after 0 of 3 cycles" in format_summary(summary)


@posix_shell
def test_a_verify_that_never_succeeds_times_out_with_exit_2(tmp_path):
    summary, _lines = _cycle(
        tmp_path,
        verify="sh -c 'echo ssh: connect to host a: No route to host >&2; exit 255'",
        verify_timeout_s=0.5,
        retry_every_s=0.1,
    )
    (r,) = summary.results
    assert r.outcome == "error" and r.error is not None
    assert r.error.startswith("verify gave no verdict within 0.5 s (")
    assert r.error.endswith(
        "attempts; the last: exit 255: ssh: connect to host a: No route to host)"
    )
    assert int(r.error.split("(")[1].split()[0]) >= 2  # retried
    assert summary.exit_code == 2


@posix_shell
def test_verify_is_retried_until_the_host_is_back(tmp_path):
    tries = tmp_path / "tries"
    verify = (
        f"sh -c 'n=$(cat {tries} 2>/dev/null || echo 0); echo $((n+1)) > {tries}; "
        f'[ $n -ge 2 ] || {{ echo booting >&2; exit 255; }}; exec "$0" "$@"\' ' + _verify(tmp_path)
    )
    summary, _lines = _cycle(tmp_path, verify=verify)
    (r,) = summary.results
    assert (r.verify_attempts, r.verify_exit, r.outcome) == (3, 0, "inconclusive")


@posix_shell
def test_a_start_command_that_fails_is_reported(tmp_path):
    summary, _lines = _cycle(tmp_path, start="sh -c 'echo cannot reach B >&2; exit 2'")
    (r,) = summary.results
    assert r.error == (
        "the start command ended (exit 2) before the listener recorded a commit: cannot reach B"
    )
    assert summary.exit_code == 2 and r.run_id is None


@posix_shell
def test_no_first_commit_in_time_ends_the_start_command(tmp_path):
    start = f"sh -c 'echo $$ > {tmp_path}/pid; exec sleep 60'"
    summary, _lines = _cycle(tmp_path, start=start, start_timeout_s=0.5)
    (r,) = summary.results
    assert r.error is not None and r.error.startswith(
        "the listener recorded no commit of a new run within 0.5 s of the start command"
    )
    assert not _alive(int((tmp_path / "pid").read_text()))


@posix_shell
def test_ctrl_c_ends_the_experiment_and_its_commands(tmp_path, request):
    import signal
    import threading

    if request.config.getoption("--unit-only"):
        # its commands are processes, and a SIGINT to this process would reach whatever
        # runs the tests in process (mutmut's runner) once the refused start ends the cycle
        pytest.skip("starts another process and sends this process SIGINT (--unit-only)")

    start = f"sh -c 'echo $$ > {tmp_path}/pid; exec sleep 60'"
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        summary, _lines = _cycle(tmp_path, start=start, cycles=3)
    finally:
        timer.cancel()
    (r,) = summary.results
    assert (r.outcome, r.error) == ("error", "stopped by Ctrl-C")
    assert summary.error == "cycle 1: stopped by Ctrl-C" and summary.exit_code == 2
    assert not _alive(int((tmp_path / "pid").read_text()))


@posix_shell
def test_a_verify_that_judged_another_run_is_an_error(tmp_path):
    other = "f" * 32
    report = json.dumps({"kind": "powercut", "notes": [f"powercut pass: run {other} (wal/full)"]})
    summary, _lines = _cycle(tmp_path, verify=f"echo {shlex.quote(report)}")
    (r,) = summary.results
    assert r.outcome == "error" and r.error is not None
    assert r.error.startswith(f"verify judged run {other}, not this cycle's run {r.run_id}")
    assert summary.exit_code == 2


@posix_shell
def test_a_verify_without_its_report_counts_by_its_exit_code(tmp_path):
    summary, _lines = _cycle(tmp_path, verify="sh -c 'echo Result: FAIL; exit 1'")
    (r,) = summary.results
    assert (r.outcome, r.lost, r.verify_exit) == ("fail", None, 1)
    assert summary.exit_code == 1
    assert "lost ?" in format_summary(summary)


def test_the_secret_file_placeholder_needs_a_file(tmp_path):
    p = make_plan(NOOP, f"{NOOP} {{secret_file}}", NOOP, seed=1)
    with pytest.raises(FsyncbenchError, match=r"^--cut: \{secret_file\}: the listener's secret"):
        cycle(
            p,
            bind="127.0.0.1",
            port=0,
            state_path=tmp_path / "s.db",
            secret_file=None,
            environ={ENV_VAR: "x" * 20},
            log=lambda _line: None,
        )


@posix_shell
def test_the_cli_prints_the_summary_and_returns_its_exit_code(tmp_path):
    out = tmp_path / "summary.json"
    cut = _kill_writer(tmp_path, then=f"; rm -rf {tmp_path}/data/.fsyncbench-powercut/{{run_id}}")
    argv = [
        "powercut",
        "cycle",
        "--port",
        "0",
        "--state",
        str(tmp_path / "s.db"),
        "--start",
        _writer(tmp_path),
        "--cut",
        cut,
        "--verify",
        _verify(tmp_path),
        "--cut-after",
        "0.2",
        "--seed",
        "3",
        "--format",
        "json",
        "-o",
        str(out),
    ]
    assert cli.main(argv) == 1
    data = json.loads(out.read_text())
    assert (data["planned"], data["seed"], data["exit_code"]) == (1, 3, 1)
    assert data["results"][0]["outcome"] == "fail"
    secret = (tmp_path / "s.db.secret").read_text().strip()
    assert secret not in out.read_text()
