"""The CLI's shared conventions (those of fio, hyperfine, pyperf, sqlite-utils), through real
processes and real directories: one ``--format`` on every command that prints a result, one
meaning of ``-o/--output`` (the FILE that gets what would be printed), ``--report-dir DIR``
for the report files of run/audit/powercut verify, help text and consistent metavars on
every argument, the old ``--json`` still accepted, ``show`` of a powercut report, the
progress bar on a terminal, executable scripts, and README commands that parse."""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import sampled
import this_platform
from clitools import fsb, in_process
from factories import host as fake_host
from test_screen_width import Terminal

from fsyncbench import cli
from fsyncbench.model import Pragmas

ROOT = Path(__file__).resolve().parent.parent
QUICK_RUN = [
    "--samples",
    "30",
    "--rounds",
    "1",
    "--warmup",
    "2",
    "--no-primitives",
    "--journal-mode",
    "wal",
    "--synchronous",
    "off,full",
    *this_platform.ONE_FULLFSYNC,  # two workloads everywhere (macOS: with fullfsync on)
    "--quiet",
]
#: Pseudo-terminals (the pty module) are POSIX.
needs_pty = pytest.mark.skipif(sys.platform == "win32", reason="no pseudo-terminals (pty)")


# --------------------------------------------------------------------------- the parser


def _parsers(parser: argparse.ArgumentParser, name: str = "fsyncbench"):
    """(name, parser) of the top-level parser and every subcommand, recursively."""
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                yield from _parsers(sub, f"{name} {sub_name}")


ALL = list(_parsers(cli.build_parser()))
#: commands that print a result, and the formats each offers
PRINTS = {
    "fsyncbench run": ["text", "markdown", "json", "html"],
    "fsyncbench audit": ["text", "markdown", "json", "html"],
    "fsyncbench show": ["text", "markdown", "json", "html"],
    "fsyncbench compare": ["text", "markdown", "json", "html"],
    "fsyncbench host": ["text", "markdown", "json"],
    "fsyncbench crash": ["text", "markdown", "json", "html"],
    "fsyncbench powerloss": ["text", "markdown", "json", "html"],
    "fsyncbench powercut verify": ["text", "json"],
    "fsyncbench powercut write": ["text", "json"],
    "fsyncbench powercut cycle": ["text", "json"],
}
#: metavar by what an option's value is
METAVAR_BY_NAME = [
    (r"-seconds$", "S"),
    (r"-ms$", "MS"),
    (r"-pct$|^--fail-on-regression$", "PCT"),
    (
        r"^--(samples|min-samples|rounds|warmup|payload-bytes|compare-syncs|sweep-repeats|"
        r"sweep-max-mib|trace-commits|max-commits)$",
        "N",
    ),
    (r"^--(output|csv|state|prometheus|secret-file)$", "FILE"),
    (r"^--report-dir$", "DIR"),
]


def _action_name(a: argparse.Action) -> str:
    return a.option_strings[-1] if not a.option_strings else max(a.option_strings, key=len)


@pytest.mark.parametrize("name,parser", ALL, ids=[n for n, _ in ALL])
def test_every_argument_has_help_text(name, parser):
    hidden = []
    for a in parser._actions:
        if a.help == argparse.SUPPRESS:
            hidden.append(_action_name(a))
            continue
        assert a.help and a.help.strip(), f"{name}: {_action_name(a) or a.dest} has no help"
        if isinstance(a, argparse._SubParsersAction):
            for choice in a._choices_actions:
                assert choice.help and choice.help.strip(), f"{name} {choice.dest}: no help"
    # only old spellings are hidden: --json (an alias of --format json), crash's
    # --power-loss (now --powerloss) and powerloss's --samples (now --sampled-states)
    assert set(hidden) <= {"--json", "--power-loss", "--samples"}, (name, hidden)


@pytest.mark.parametrize("name,parser", ALL, ids=[n for n, _ in ALL])
def test_metavars_are_consistent(name, parser):
    for a in parser._actions:
        if not a.option_strings:
            if a.dest == "dir":
                assert a.metavar == "DIR", name
            elif a.dest in ("report", "reports"):
                assert a.metavar == "REPORT", name
            continue
        if a.nargs == 0 or a.choices is not None or a.help == argparse.SUPPRESS:
            continue
        option = _action_name(a)
        for pattern, metavar in METAVAR_BY_NAME:
            if re.search(pattern, option):
                assert a.metavar == metavar, f"{name} {option}: metavar {a.metavar}, want {metavar}"
                break
        else:
            assert a.metavar, f"{name} {option} has no metavar"
        if option == "--from" and name == "fsyncbench audit":
            assert a.metavar == "REPORT"


@pytest.mark.parametrize("name,parser", ALL, ids=[n for n, _ in ALL])
def test_format_and_output_on_every_command_that_prints_a_result(name, parser):
    actions = {s: a for a in parser._actions for s in a.option_strings}
    if name not in PRINTS:
        assert "--format" not in actions, name
        return
    fmt = actions["--format"]
    assert list(fmt.choices) == PRINTS[name] and fmt.default == "text", name
    out = actions["--output"]
    assert out.option_strings == ["--output", "-o"] and out.metavar == "FILE", name
    if name in (
        "fsyncbench run",
        "fsyncbench audit",
        "fsyncbench crash",
        "fsyncbench powerloss",
        "fsyncbench powercut verify",
    ):
        assert actions["--report-dir"].default == Path("reports"), name
    else:
        assert "--report-dir" not in actions, name
    if "html" not in PRINTS[name]:
        assert "no html" in fmt.help, name  # --help says which formats there are


# --------------------------------------------------------------------------- --format json


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A real run saved in reports/, and two synthetic reports with enough samples for a
    regression check."""
    root = tmp_path_factory.mktemp("conventions")
    target = root / "target"
    target.mkdir()
    out = root / "printed.json"
    proc = fsb("run", target, *QUICK_RUN, "--format", "json", "-o", out, cwd=root)
    assert proc.returncode == 0, proc.stderr
    a = sampled.save(sampled.report(1.0, seed=0), root / "a.json")
    b = sampled.save(sampled.report(1.0, seed=1), root / "b.json")
    return root, proc, out, a, b


@pytest.mark.slow
def test_run_saves_in_reports_by_default_and_output_gets_what_would_be_printed(saved):
    root, proc, out, _a, _b = saved
    files = sorted((root / "reports").iterdir())
    assert [p.suffix for p in files] == [".json", ".md"]
    assert proc.stdout == ""  # it went to the file
    assert out.read_bytes() == files[0].read_bytes()  # the report JSON, byte for byte
    assert json.loads(out.read_text())["kind"] == "run"
    assert proc.stderr.startswith(f"Report written: reports{os.sep}")


@pytest.mark.slow
def test_run_markdown_output_is_the_saved_markdown(tmp_path):
    proc = fsb(
        "run",
        tmp_path,
        *QUICK_RUN,
        "--format",
        "markdown",
        "-o",
        tmp_path / "r.md",
        "--report-dir",
        tmp_path / "saved",
    )
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "r.md").read_bytes() == next((tmp_path / "saved").glob("*.md")).read_bytes()


@pytest.mark.slow
def test_run_html_prints_html_and_saves_it(tmp_path):
    proc = fsb("run", tmp_path, *QUICK_RUN, "--format", "html", "--report-dir", tmp_path / "saved")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.lstrip().lower().startswith("<!doctype html")
    assert proc.stdout == next((tmp_path / "saved").glob("*.html")).read_text()


@pytest.mark.slow
def test_no_report_saves_nothing(tmp_path):
    proc = fsb("run", tmp_path, *QUICK_RUN, "--no-report", "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["kind"] == "run"
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    assert "Report written" not in proc.stdout + proc.stderr


@pytest.mark.slow
def test_audit_saves_in_report_dir_by_default(saved, tmp_path):
    """audit used to save nothing without --output; now it saves like run."""
    _root, _proc, _out, a, _b = saved
    proc = fsb(
        "audit", "--from", a, "--format", "json", "-o", tmp_path / "printed.json", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    files = sorted((tmp_path / "reports").iterdir())
    assert [p.suffix for p in files] == [".json", ".md"]
    assert (tmp_path / "printed.json").read_bytes() == files[0].read_bytes()
    assert json.loads(files[0].read_text())["kind"] == "run"  # a re-judged run report
    other = tmp_path / "other"
    proc = fsb("audit", "--from", a, "--report-dir", other, "--format", "markdown", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == next(other.glob("*.md")).read_text()
    assert len(list((tmp_path / "reports").iterdir())) == 2  # the first two, no more


@pytest.mark.slow
@pytest.mark.slow
@pytest.mark.parametrize(
    "old,new",
    [
        (
            ("audit", "--from", "A", "--json", "--no-report"),
            ("audit", "--from", "A", "--format", "json", "--no-report"),
        ),
        (("host", "DIR", "--json"), ("host", "DIR", "--format", "json")),
    ],
)
def test_the_old_json_flag_still_works(saved, tmp_path, old, new):
    _root, _proc, _out, a, _b = saved

    def args(argv):
        return [{"A": a, "DIR": tmp_path}.get(x, x) for x in argv]

    got_old, got_new = fsb(*args(old), cwd=tmp_path), fsb(*args(new), cwd=tmp_path)
    assert got_old.returncode == got_new.returncode == 0, got_old.stderr + got_new.stderr
    old_data, new_data = json.loads(got_old.stdout), json.loads(got_new.stdout)
    for data in (old_data, new_data):  # a report records its own time and command line
        data.pop("created_utc", None)
        data.pop("command_line", None)
    assert old_data == new_data


@pytest.mark.slow
@pytest.mark.slow
@pytest.mark.parametrize(
    "argv",
    [
        ("show", "A"),
        ("compare", "A", "B"),
        ("compare", "A", "B", "A"),
        ("compare", "A", "B", "--fail-on-regression", "20"),
        ("host", "DIR"),
    ],
)
@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_output_file_gets_exactly_what_stdout_shows(saved, tmp_path, argv, fmt):
    _root, _proc, _out, a, b = saved
    argv = [{"A": a, "B": b, "DIR": tmp_path}.get(x, x) for x in argv]
    printed = fsb(*argv, "--format", fmt)
    # one-round reports: the regression gate cannot tell (exit 4), and says so
    expected = 4 if "--fail-on-regression" in argv else 0
    assert printed.returncode == expected, printed.stderr
    out = tmp_path / "out.txt"
    written = fsb(*argv, "--format", fmt, "-o", out)
    assert written.returncode == expected, written.stderr
    text = out.read_text()
    if "--fail-on-regression" in argv:
        # the gate's lines: in text and Markdown part of the result (its answer first); the
        # terminal also gets them when the result goes to a file, and on stderr beside JSON
        gate = written.stdout
        assert gate.startswith("Gate CANNOT TELL at --fail-on-regression 20 % against a.json")
        if fmt == "json":
            assert printed.stderr == gate
            assert json.loads(text)["regression_check"]["verdict"] == "cannot tell"
        else:
            assert printed.stdout == text and printed.stderr == ""
            assert "Gate CANNOT TELL at --fail-on-regression 20 %" in text.splitlines()[0]
    else:
        assert written.stdout == "" and printed.stdout == text
    if fmt == "json":
        json.loads(text)
    elif fmt == "markdown":
        assert text.startswith("# ") or "\n|--" in text or "|---" in text
    else:
        assert "|--" not in text  # text tables are tabulate "simple", not Markdown


def test_output_dash_is_standard_output(saved, tmp_path):
    _root, _proc, _out, a, _b = saved
    proc = fsb("show", a, "--format", "json", "-o", "-", cwd=tmp_path)
    assert proc.returncode == 0 and json.loads(proc.stdout) == json.loads(a.read_text())
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="crash forks and SIGKILLs (no fork here)")
def test_crash_format_json_to_a_file(tmp_path):
    target = tmp_path / "t"
    target.mkdir()
    proc = fsb("crash", target, "--format", "json", "-o", tmp_path / "crash.json", "--no-report")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and proc.stderr == ""
    data = json.loads((tmp_path / "crash.json").read_text())
    matrix = data["crash"]["matrix"]
    assert matrix["kill_count"] == 120 and matrix["rows"][0]["label"] == "no persistence"
    assert list(target.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["crash.json", "t"]


@pytest.mark.slow
@pytest.mark.parametrize("command", ["run", "audit", "show", "host", "compare", "crash"])
def test_output_at_a_directory_is_one_line_naming_report_dir(saved, tmp_path, command):
    _root, _proc, _out, a, b = saved
    argv = {
        "run": ("run", tmp_path, *QUICK_RUN),
        "audit": ("audit", "--from", a),
        "show": ("show", a),
        "host": ("host", tmp_path),
        "compare": ("compare", a, b),
        "crash": ("crash", tmp_path),
    }[command]
    (tmp_path / "reports").mkdir()
    proc = fsb(*argv, "--output", tmp_path / "reports", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    line = (
        f"fsyncbench: error: --output {tmp_path / 'reports'} is a directory: --output takes "
        "the FILE to write the printed result to"
    )
    if command in ("run", "audit", "crash"):
        line += f"; to save the report files in it, use --report-dir {tmp_path / 'reports'}"
    assert proc.stderr.splitlines() == [line]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["reports"]
    assert list((tmp_path / "reports").iterdir()) == []


# --------------------------------------------------------------------------- powercut


def _powercut_report(tmp_path: Path, present, acked=((1, 100),), name="pc.json") -> Path:
    """A saved ``powercut verify`` report, built the way verify builds it (judge and _report
    on facts, as tests/test_powercut.py does), with a reboot between write and verify."""
    from fsyncbench.powercut.verify import JournalState, PowercutFacts, _report, judge

    journal = JournalState("/data/journal-wal-full.db", True, None, tuple(present), (), ("ok",))
    facts = PowercutFacts(
        run_id="a" * 32,
        config=Pragmas("WAL", "FULL"),
        primitive="fdatasync",
        writer_host=fake_host(),
        acknowledged=tuple(acked),
        journal=journal,
        rebooted=True,
        clean_stop=None,
        listener="192.0.2.20:5400",
    )
    info = {
        "host": "case-host",
        "pid": 4242,
        "started_utc": "2026-12-01T10:00:00Z",
        "last_seen_utc": "2026-12-01T10:05:00Z",
    }
    report = _report(
        facts, judge(facts), fake_host(), ["fsyncbench", "powercut", "verify"], [], info
    )
    return sampled.save(report, tmp_path / name)


def test_show_of_a_powercut_report_prints_the_result_and_lost_line(tmp_path):
    failed = _powercut_report(tmp_path, present=[(1, 90)], name="fail.json")
    passed = _powercut_report(tmp_path, present=[(1, 105)], name="pass.json")
    proc = fsb("show", failed)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"^lost +10 acknowledged commits: 91-100$", proc.stdout, re.M), proc.stdout
    flat = " ".join(proc.stdout.split())  # running text is wrapped at 100 columns
    assert (
        "Result: FAIL: 10 of 100 acknowledged commits are lost: the storage acknowledged "
        "writes it did not keep."
    ) in flat
    assert "Path verdict for wal/full: volatile_cache, proven by a power cut" in flat
    assert "Latency per configuration" not in proc.stdout  # no empty results table
    proc = fsb("show", passed)
    assert re.search(r"^lost +none$", proc.stdout, re.M), proc.stdout
    assert (
        "Result: PASS: all 100 acknowledged commits survived and the journal is intact."
        in proc.stdout
    )
    assert "5 committed but not acknowledged (normal)" in proc.stdout
    md = fsb("show", failed, "--format", "markdown")
    assert md.returncode == 0 and md.stdout.startswith("# fsyncbench powercut verify")
    assert re.search(r"^\| lost +\| 10 acknowledged commits: 91-100 +\|$", md.stdout, re.M)
    assert "**Result:** FAIL: 10 of 100 acknowledged commits are lost" in md.stdout
    page = fsb("show", failed, "--format", "html").stdout
    assert "<strong>Result:</strong> FAIL: 10 of 100 acknowledged commits are lost" in page
    assert "Latency per configuration" not in page
    js = fsb("show", failed, "--format", "json")
    assert json.loads(js.stdout) == json.loads(failed.read_text())


@pytest.mark.slow
def test_powercut_verify_format_json_and_report_dir(tmp_path):
    from test_powercut import ListenerProc, kill, run_dir_of

    lst = ListenerProc(tmp_path, tmp_path / "state.db")
    try:
        target = tmp_path / "data"
        target.mkdir()
        summary = tmp_path / "write.json"
        writer = fsb(
            "powercut",
            "write",
            "--to",
            lst.to,
            "--secret-file",
            lst.secret_file,
            target,
            "--max-commits",
            "50",
            "--format",
            "json",
            "-o",
            summary,
            timeout=120,
        )
        assert writer.returncode == 0, writer.stderr
        assert writer.stdout == ""
        written = json.loads(summary.read_text())
        assert (written["commits"], written["recorded"]) == (50, 50) and "--max-commits" in written[
            "reason"
        ]
        assert run_dir_of(target).is_dir()
        out = tmp_path / "verify.json"
        proc = fsb(
            "powercut",
            "verify",
            "--from",
            lst.to,
            "--secret-file",
            lst.secret_file,
            target,
            "--format",
            "json",
            "-o",
            out,
            cwd=tmp_path,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr  # a clean stop: a pass that proves nothing
        saved = sorted((tmp_path / "reports").glob("*-powercut.json"))
        assert len(saved) == 1 and proc.stdout == ""
        assert out.read_bytes() == saved[0].read_bytes()
        assert json.loads(out.read_text())["kind"] == "powercut"
        assert proc.stderr == f"Report written: {Path('reports') / saved[0].name}\n"
        text = fsb(
            "powercut",
            "verify",
            "--from",
            lst.to,
            "--secret-file",
            lst.secret_file,
            target,
            "--report-dir",
            tmp_path / "r2",
            timeout=120,
        )
        assert "Result: PASS: all 50 acknowledged commits survived" in text.stdout
        assert len(list((tmp_path / "r2").glob("*-powercut.json"))) == 1
    finally:
        kill(lst.proc)


# --------------------------------------------------------------------------- progress bar


def _stderr_on_a_pty(argv, cwd) -> tuple[int, bytes]:
    """Run fsyncbench with stderr on a new pseudo-terminal nobody sized (0 columns, 0 rows,
    as a serial console reports): its exit code and what reached the terminal."""
    import pty
    import select

    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "fsyncbench", *map(str, argv)],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=slave,
        env=env,
    )
    os.close(slave)
    seen = b""
    while True:
        ready, _, _ = select.select([master], [], [], 120)
        if not ready:
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    return proc.wait(timeout=120), seen


@pytest.mark.slow
@needs_pty
def test_progress_bar_on_a_terminal_of_unknown_size(tmp_path):
    argv = [
        "run",
        tmp_path,
        *[a for a in QUICK_RUN if a != "--quiet"],
        "--report-dir",
        tmp_path / "o",
    ]
    code, seen = _stderr_on_a_pty(argv, tmp_path)
    assert code == 0, seen
    assert re.search(rb"\d+%\|.*\| [\d.]+/2 workloads", seen), seen
    code, seen = _stderr_on_a_pty([*argv, "--quiet"], tmp_path)
    assert code == 0 and b"workloads" not in seen, seen


@pytest.mark.slow
@needs_pty
def test_progress_never_counts_past_its_total(tmp_path):
    """A run-budgeted run takes as many samples as its time allows, never near its sample
    cap: the bar never passes its total, and the counter shows samples, not n/cap."""
    argv = ["run", tmp_path, "--run-budget-seconds", "3", "--rounds", "2", "--warmup", "2"]
    argv += ["--no-primitives", "--journal-mode", "wal", "--synchronous", "off,full"]
    argv += this_platform.ONE_FULLFSYNC
    code, seen = _stderr_on_a_pty([*argv, "--report-dir", tmp_path / "o"], tmp_path)
    assert code == 0, seen
    bars = re.findall(rb"([\d.]+)/(\d+) workloads", seen)
    counters = re.findall(rb"wal/[\w/-]+ (?:\(round \d/2\) )?(\d+)/(\d+)", seen)
    assert bars and all(float(n) <= float(total) for n, total in bars), seen
    assert all(int(n) <= int(target) for n, target in counters), seen
    # stopped by time, not by a sample count: the samples are counted, not set against a cap
    assert not counters and re.search(rb"wal/[\w/-]+ \(round \d/2\) [\d,]+ samples", seen), seen


@pytest.mark.slow
def test_no_progress_bar_when_stderr_is_not_a_terminal(tmp_path):
    proc = fsb(
        "run", tmp_path, *[a for a in QUICK_RUN if a != "--quiet"], "--report-dir", tmp_path / "o"
    )
    assert proc.returncode == 0, proc.stderr
    assert "workloads" not in proc.stderr and "\r" not in proc.stderr
    assert proc.stderr.startswith("Report written:")


# --------------------------------------------------------------------------- scripts, README


SCRIPTS = sorted((ROOT / "scripts").glob("*.py"))


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_scripts_are_executable(script):
    assert os.access(script, os.X_OK), f"chmod +x {script}"
    assert script.read_text().startswith("#!/usr/bin/env python3\n")


DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _readme_commands() -> list[str]:
    """Every fsyncbench command line in the shell blocks of the README and docs/ (comments
    dropped)."""
    text = "\n".join(p.read_text(encoding="utf-8") for p in DOCUMENTS)
    found = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():  # a continued line is one
            for part in line.split("&&"):
                part = part.split("  #")[0].strip()
                for prefix in ("fsyncbench ", ".venv/bin/fsyncbench"):
                    if part.startswith(prefix):
                        found.append(
                            part.removeprefix(".venv/bin/").removeprefix("fsyncbench").strip()
                        )
    return found


README_COMMANDS = _readme_commands()


def test_readme_says_how_fsyncbench_gets_on_path():
    text = (ROOT / "README.md").read_text()
    # once, right after the two install commands, before any bare `fsyncbench` example
    activate = text.index("\n. .venv/bin/activate   # then fsyncbench is on PATH\n")
    assert text.count(". .venv/bin/activate") == 1
    assert text.index("pip install '.[test]'") < activate < text.index("\nfsyncbench ")
    assert not [c for c in _readme_commands() if "--json" in c]  # the old alias is not taught


@pytest.mark.parametrize("line", README_COMMANDS, ids=README_COMMANDS)
def test_readme_commands_parse(line):
    args = cli.build_parser().parse_args(shlex.split(line))
    output = getattr(args, "output", None)
    if output is not None:  # a FILE now: the README's examples name one with a suffix
        assert output.suffix, line


def test_readme_has_commands():
    assert len(README_COMMANDS) >= 30
    readme = [c for c in README_COMMANDS if c in (ROOT / "README.md").read_text()]
    assert len(readme) >= 10  # the README's own examples are among them


def test_redact_knows_every_option_that_takes_no_value():
    """--redact blanks the value after an option in the recorded command line; an option
    that takes none (a flag) must be known to it, or the next argument is blanked too."""
    from fsyncbench.report import redact

    flags = {
        opt for _name, p in ALL for a in p._actions if a.nargs == 0 for opt in a.option_strings
    }
    assert flags and flags <= redact._FLAGS, sorted(flags - redact._FLAGS)
    assert redact.redact_command_line(
        ("fsyncbench", "run", "--no-report", "--quiet"), "/home/u"
    ) == ("fsyncbench", "run", "--no-report", "--quiet")


def test_a_bug_exits_3_with_its_traceback_never_1(tmp_path):
    """Exit 1 belongs to the gates: an exception nothing named (a bug) prints its traceback,
    then one line, and exits 3. A real process whose command raises ZeroDivisionError."""
    import subprocess
    import sys

    code = (
        "import sys, fsyncbench.cli as c\n"
        "c._COMMANDS['host'] = lambda args, argv: 1 / 0\n"
        "sys.exit(c.main(['host', '.']))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path
    )
    assert proc.returncode == 3, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[0] == "Traceback (most recent call last):"
    assert lines[-1].startswith("fsyncbench: internal error (a bug in fsyncbench ")
    assert lines[-1].endswith("): ZeroDivisionError: division by zero")
    assert proc.stdout == ""


def test_samples_counts_timings_and_powerloss_names_its_states_apart():
    """run's and audit's --samples count timings; powerloss's sampled crash states are
    --sampled-states (its old --samples still reads, unlisted)."""
    from fsyncbench.cli import build_parser

    parser = build_parser()
    assert parser.parse_args(["powerloss", "d", "--sampled-states", "5"]).samples == 5
    assert parser.parse_args(["powerloss", "d", "--samples", "7"]).samples == 7
    sub = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert "--samples" not in sub["powerloss"].format_help()
    for command in ("run", "audit"):
        assert "--samples N" in sub[command].format_help()
        assert "--sampled-states" not in sub[command].format_help()


def test_powerloss_is_one_spelling_in_run_and_crash():
    """run --powerloss and crash --powerloss (the command is powerloss); crash's earlier
    --power-loss still reads, unlisted."""
    from fsyncbench.cli import build_parser

    parser = build_parser()
    sub = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert parser.parse_args(["crash", "d", "--powerloss", "prefix"]).power_loss == "prefix"
    assert parser.parse_args(["crash", "d", "--power-loss", "torn"]).power_loss == "torn"
    for command in ("run", "crash"):
        assert "--powerloss" in sub[command].format_help()
        assert "--power-loss" not in sub[command].format_help()


def test_progress_of_a_workload_without_a_count_shows_its_label_alone(monkeypatch, capsys):
    """powerloss reports each configuration x model with target 1 and no samples: the bar
    names it, never "0 samples"; a run-budgeted run still counts its samples."""
    from fsyncbench.cli import progress as bar

    monkeypatch.setattr(bar, "_isatty", lambda _stream: True)
    with bar.Progress(quiet=False) as progress:
        progress("wal/full prefix", 0, 2, 0, 1, 0, 0)
    err = capsys.readouterr().err
    assert "wal/full prefix" in err and "samples" not in err
    with bar.Progress(quiet=False) as progress:
        progress("wal/full", 0.5, 2, 1234, 1_000_000, 0, 0)
    assert "wal/full 1,234 samples" in capsys.readouterr().err


def test_a_stream_whose_code_page_lacks_a_character_gets_ascii_not_a_crash(monkeypatch, capsys):
    """On Windows (Python before 3.15) standard output that is a pipe or a file encodes with
    the ANSI code page, cp1252, which has no '→': ``show --verbose > file`` of a report whose
    storage stack has two layers ended in a UnicodeEncodeError, exit 3. The arrow is
    written as '->' there (and any other such character escaped); a UTF-8 stream keeps it."""
    import io

    example = sorted((ROOT / "examples" / "report").glob("*.json"))[-1]
    raw = io.BytesIO()
    pipe = io.TextIOWrapper(raw, encoding="cp1252", errors="strict")
    monkeypatch.setattr(sys, "stdout", pipe)
    assert cli.main(["show", str(example), "--verbose"]) == 0, capsys.readouterr().err
    pipe.flush()
    text = raw.getvalue().decode("cp1252")
    stack = next(line for line in text.splitlines() if line.startswith("storage stack "))
    assert " -> " in stack and "→" not in text
    assert pipe.errors == "strict"  # as it was, once the command is done
    monkeypatch.undo()
    assert cli.main(["show", str(example), "--verbose"]) == 0
    assert " → " in capsys.readouterr().out  # UTF-8 (pytest's capture): unchanged
    from fsyncbench.cli.output import FALLBACK_ERRORS

    assert "a\u00e9\u4e2d".encode("cp1252", FALLBACK_ERRORS) == b"a\xe9\\u4e2d"


# --------------------------------------------------------------------------- in process
# Fast twins of the slow tests above: cli.main in this process (capsys for its output), one
# round of a few samples, so no worker process is started.


TINY_RUN = ["--samples", "5", *QUICK_RUN[2:]]


@pytest.mark.parametrize(
    "fmt,to_file",
    [("json", True), ("markdown", True), ("html", False)],
    ids=["json-to-file", "markdown-to-file", "html-printed"],
)
def test_run_in_process_saves_in_reports_and_prints_what_it_saved(
    tmp_path, capsys, monkeypatch, fmt, to_file
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "target").mkdir()
    printed = tmp_path / f"printed.{fmt}"
    where = ("-o", printed) if to_file else ()
    code, out, err = in_process(capsys, "run", "target", *TINY_RUN, "--format", fmt, *where)
    assert code == 0, err
    files = sorted((tmp_path / "reports").iterdir())
    suffixes = [".json", ".md"] + ([".html"] if fmt == "html" else [])
    assert sorted(p.suffix for p in files) == sorted(suffixes)
    saved = next(
        p for p in files if p.suffix == {"json": ".json", "markdown": ".md"}.get(fmt, ".html")
    )
    if to_file:
        assert out == "" and printed.read_bytes() == saved.read_bytes()
    else:
        assert out.lstrip().lower().startswith("<!doctype html") and out == saved.read_text()
    if fmt == "json":
        assert json.loads(printed.read_text())["kind"] == "run"
    assert err.startswith(f"Report written: reports{os.sep}")


def test_run_in_process_with_no_report_saves_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = in_process(
        capsys, "run", tmp_path, *TINY_RUN, "--no-report", "--format", "json"
    )
    assert code == 0, err
    assert json.loads(out)["kind"] == "run"
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    assert "Report written" not in out + err


def test_audit_from_in_process_saves_in_report_dir_and_reads_the_old_json_flag(
    tmp_path, capsys, monkeypatch
):
    a = sampled.save(sampled.report(1.0, seed=0), tmp_path / "a.json")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    code, _out, err = in_process(
        capsys, "audit", "--from", a, "--format", "json", "-o", "printed.json"
    )
    assert code == 0, err
    files = sorted((work / "reports").iterdir())
    assert [p.suffix for p in files] == [".json", ".md"]
    assert (work / "printed.json").read_bytes() == files[0].read_bytes()
    assert json.loads(files[0].read_text())["kind"] == "run"
    code, out, err = in_process(
        capsys, "audit", "--from", a, "--report-dir", "other", "--format", "markdown"
    )
    assert code == 0, err
    assert out == next((work / "other").glob("*.md")).read_text()
    assert len(list((work / "reports").iterdir())) == 2
    old = in_process(capsys, "audit", "--from", a, "--json", "--no-report")
    new = in_process(capsys, "audit", "--from", a, "--format", "json", "--no-report")
    assert old[0] == new[0] == 0
    datas = [json.loads(got[1]) for got in (old, new)]
    for data in datas:
        data.pop("created_utc", None)
        data.pop("command_line", None)
    assert datas[0] == datas[1]


@pytest.mark.parametrize(
    "argv",
    [("show", "A"), ("compare", "A", "B", "--fail-on-regression", "20"), ("host", "DIR")],
)
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_output_file_gets_exactly_what_stdout_shows_in_process(tmp_path, capsys, argv, fmt):
    a = sampled.save(sampled.report(1.0, seed=0), tmp_path / "a.json")
    b = sampled.save(sampled.report(1.0, seed=1), tmp_path / "b.json")
    argv = [{"A": a, "B": b, "DIR": tmp_path}.get(x, x) for x in argv]
    expected = 4 if "--fail-on-regression" in argv else 0
    printed = in_process(capsys, *argv, "--format", fmt)
    assert printed[0] == expected, printed[2]
    out = tmp_path / "out.txt"
    written = in_process(capsys, *argv, "--format", fmt, "-o", out)
    assert written[0] == expected, written[2]
    text = out.read_text()
    if "--fail-on-regression" in argv:
        gate = written[1]
        assert gate.startswith("Gate CANNOT TELL at --fail-on-regression 20 % against a.json")
        if fmt == "json":
            assert printed[2] == gate
            assert json.loads(text)["regression_check"]["verdict"] == "cannot tell"
        else:
            assert printed[1] == text and printed[2] == ""
    else:
        assert written[1] == "" and printed[1] == text
    if fmt == "json":
        json.loads(text)
    else:
        assert "|--" not in text


class _Pty(Terminal):
    """A pseudo-terminal nobody sized, as this process's sys.stderr; what reached it."""

    def __init__(self) -> None:
        super().__init__()
        self.stream = open(self.slave, "w", encoding="utf-8", closefd=True)

    def seen(self) -> bytes:
        self.stream.close()  # the reader then gets EIO
        self.thread.join(10)
        os.close(self.master)
        return b"".join(self.chunks)


@needs_pty
@pytest.mark.parametrize("quiet", [False, True])
def test_progress_bar_in_process_on_a_terminal_of_unknown_size(tmp_path, monkeypatch, quiet):
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)
    terminal = _Pty()
    monkeypatch.setattr(sys, "stderr", terminal.stream)
    argv = [
        "run",
        tmp_path,
        *[a for a in TINY_RUN if a != "--quiet"],
        "--report-dir",
        tmp_path / "o",
    ]
    code = cli.main([str(a) for a in argv] + (["--quiet"] if quiet else []))
    monkeypatch.undo()
    seen = terminal.seen()
    assert code == 0, seen
    if quiet:
        assert b"workloads" not in seen, seen
    else:
        assert re.search(rb"\d+%\|.*\| [\d.]+/2 workloads", seen), seen


def test_progress_in_process_never_counts_past_its_total(monkeypatch, capsys):
    """A run-budgeted run (budget_ns 0: the index is the time spent) may run past its
    workloads' share of the time: the bar stops at its total, and the counter shows the
    samples taken, not n/cap."""
    from fsyncbench.cli import progress as bar

    monkeypatch.setattr(bar, "_isatty", lambda _stream: True)
    with bar.Progress(quiet=False) as progress:
        for index, done in ((0.5, 1_000), (1.4, 4_000), (2.3, 9_000), (2.9, 12_345)):
            progress("wal/full (round 1/2)", index, 2, done, 200_000, 0, 0)
    seen = capsys.readouterr().err.encode()
    bars = re.findall(rb"([\d.]+)/(\d+) workloads", seen)
    counters = re.findall(rb"wal/[\w/-]+ (?:\(round \d/2\) )?(\d+)/(\d+)", seen)
    assert bars and all(float(n) <= float(total) for n, total in bars), seen
    assert not counters and re.search(rb"wal/[\w/-]+ \(round \d/2\) [\d,]+ samples", seen), seen


def test_no_progress_bar_in_process_when_stderr_is_not_a_terminal(tmp_path, capsys):
    argv = [
        "run",
        tmp_path,
        *[a for a in TINY_RUN if a != "--quiet"],
        "--report-dir",
        tmp_path / "o",
    ]
    code, _out, err = in_process(capsys, *argv)
    assert code == 0, err
    assert "workloads" not in err and "\r" not in err
    assert err.startswith("Report written:")
