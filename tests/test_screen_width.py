"""Every command's text output fits the terminal: at ``COLUMNS=80`` and ``100`` no line of
what any command prints (its help, its live output, a saved report of every kind shown
plain and with ``--verbose``, compare and fleet, gates, the powercut protocol's screens) is
longer than the width. Real runs on a real directory; the reports they save are then shown
and compared in process."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
import this_platform

from fsyncbench import cli
from fsyncbench.report.layout import fit_pairs, fit_table

WIDTHS = (80, 100)
REPO = Path(__file__).resolve().parent.parent
FIXTURE_REPORTS = sorted((REPO / "tests" / "fixtures" / "reports").glob("*.json"))
QUICK_RUN = (
    "--samples", "90", "--rounds", "3", "--warmup", "5", "--journal-mode", "wal,truncate",
    "--synchronous", "normal,full", "--writers", "1,2", "--writers-seconds", "0.5",
    "--steps-per-commit", "1,4", "--payload-bytes", "128,4096", "--quiet",
    *this_platform.ONE_FULLFSYNC,
)  # fmt: skip
#: The configurations compared and gated below, as this platform names them
#: (wal/full/fullfsync on macOS).
WAL_FULL, WAL_NORMAL = this_platform.label("wal/full"), this_platform.label("wal/normal")
TRUNCATE_FULL = this_platform.label("truncate/full")


def _status_line(text: str) -> bool:
    """The writer has shown its status: "wal/full: 1,234 commits, ...", or where the
    configuration's name leaves no room for the words (macOS's wal/full/fullfsync at 80
    columns) "36s 92,028 (2,851/s) p99 1.88 ms | 92,023"."""
    return "commits" in text or re.search(r"^\d+s [\d,]+ \([\d,]+/s\)", text, re.M) is not None


def _long_lines(text: str, width: int) -> list[str]:
    """Lines longer than ``width``, but for one holding a path longer than half of it: a
    path is there to be copied and is never broken (the journal the tool makes in a
    user's directory adds some 70 characters to it)."""
    return [
        line
        for line in text.splitlines()
        if len(line) > width and not any(len(w) > width // 2 and os.sep in w for w in line.split())
    ]


def _env(width: int) -> dict[str, str]:
    env = dict(os.environ, COLUMNS=str(width))
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("FSYNCBENCH_POWERCUT_SECRET", None)
    return env


def _fsb(width: int, *args, cwd=None, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fsyncbench", *map(str, args)],
        capture_output=True,
        text=True,
        env=_env(width),
        cwd=cwd,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> dict[str, object]:
    """Live output of the measuring commands at each width, and the reports they saved."""
    root = tmp_path_factory.mktemp("width")
    # a path is printed whole ("Report written: PATH"): a short one, as a user's usually is
    reports = Path(tempfile.mkdtemp(prefix="fw", dir="/tmp" if os.path.isdir("/tmp") else None))
    target = root / "target"
    target.mkdir()
    live: dict[str, str] = {}
    commands = {
        "run": (
            "run",
            target,
            *QUICK_RUN,
            "--vs",
            f"{WAL_FULL},{TRUNCATE_FULL}",
            "--max-p99",
            "1us",
        ),
        "audit": ("audit", target, "--samples", "60", "--quiet"),
        "crash": ("crash", target, "--quiet"),
        "powerloss": ("powerloss", target, "--quiet"),
        "host": ("host", target),
    }
    if not hasattr(os, "fork"):  # crash forks and SIGKILLs its children (not on Windows)
        del commands["crash"]
    for width in WIDTHS:
        for name, argv in commands.items():
            extra = {"run": ("--no-history",), "host": ()}.get(name, ())
            where = () if name == "host" else ("--report-dir", reports)
            proc = _fsb(width, *argv, *where, *extra)
            assert proc.returncode in (0, 1, 4), proc.stderr
            live[f"{name} at {width}"] = proc.stdout + proc.stderr
    runs = [p for p in sorted(reports.glob("*.json")) if json.loads(p.read_text())["kind"] == "run"]
    return {"live": live, "runs": runs, "reports": reports}


@pytest.mark.slow
@pytest.mark.parametrize("width", WIDTHS)
def test_live_output_of_every_measuring_command_fits(made, width):
    live = made["live"]
    assert isinstance(live, dict)
    for name, text in live.items():
        if name.endswith(f"at {width}"):
            assert _long_lines(text, width) == [], name


def _shown(capsys, monkeypatch, width: int, *argv) -> str:
    monkeypatch.setenv("COLUMNS", str(width))
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert code in (0, 1, 4), err
    return out + err


def _views(reports: Path, runs: list[Path]) -> list[tuple[str, ...]]:
    views: list[tuple[str, ...]] = []
    for p in sorted(reports.glob("*.json")):
        views += [("show", str(p)), ("show", str(p), "--verbose")]
    run = str(runs[-1])
    views += [
        ("show", run, "--fail-on", "volatile_cache,no_flush"),
        ("show", run, "--config", WAL_FULL, "--fail-on", "volatile_cache,no_flush"),
        ("show", run, "--max-p99", "1us"),
        ("show", run, "--vs", f"{WAL_NORMAL},{TRUNCATE_FULL}"),
        ("compare", str(runs[0]), str(runs[-1])),
        ("compare", str(runs[0]), str(runs[-1]), "--fail-on-regression", "10"),
        ("compare", str(runs[0]), str(runs[-1]), "--vs", f"{WAL_FULL},{TRUNCATE_FULL}"),
        ("compare", str(reports), "--kind", "run"),
    ]
    return views


@pytest.mark.slow
@pytest.mark.parametrize("width", WIDTHS)
def test_every_saved_report_and_comparison_fits(made, width, capsys, monkeypatch):
    for argv in _views(made["reports"], made["runs"]):
        text = _shown(capsys, monkeypatch, width, *argv)
        assert _long_lines(text, width) == [], " ".join(argv[:1] + argv[2:])


def _subcommands(parser) -> list[tuple[str, ...]]:
    import argparse

    out: list[tuple[str, ...]] = [()]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out += [(name, *rest) for rest in _subcommands(sub)]
    return out


@pytest.mark.parametrize("width", WIDTHS)
def test_every_recorded_report_fits(width, capsys, monkeypatch):
    """The public cases' reports (fast: no measuring), each plain and verbose."""
    views = [("show", str(p), *v) for p in FIXTURE_REPORTS for v in ((), ("--verbose",))]
    for argv in views:
        text = _shown(capsys, monkeypatch, width, *argv)
        assert _long_lines(text, width) == [], " ".join(argv[:1] + argv[2:])


@pytest.mark.parametrize("width", WIDTHS)
def test_every_help_fits(width, monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", str(width))
    for argv in _subcommands(cli.build_parser()):
        with pytest.raises(SystemExit):
            cli.main([*argv, "--help"])
        out, err = capsys.readouterr()
        assert out and _long_lines(out + err, width) == [], argv


class Terminal:
    """A pseudo-terminal for a process's standard error: what a user watching it sees
    (the progress and status lines are written for a terminal only)."""

    def __init__(self) -> None:
        self.master, self.slave = os.openpty()
        self.chunks: list[bytes] = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            self.chunks.append(data)

    def started(self) -> None:
        os.close(self.slave)  # the child holds it now

    def text(self) -> str:
        raw = b"".join(self.chunks).decode(errors="replace").replace("\r\n", "\n")
        raw = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", raw)
        return "\n".join(part for line in raw.split("\n") for part in line.split("\r"))


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "openpty"), reason="no pseudo-terminals on this platform")
@pytest.mark.parametrize("width", WIDTHS)
def test_the_powercut_protocol_screens_fit(tmp_path, width):
    """listen, write (its status lines, on a terminal) and verify, on loopback with a real
    SIGKILL."""
    env = _env(width)
    # a path is printed whole (one to copy is never broken): short ones, as a user's are
    short = Path(tempfile.mkdtemp(prefix="pc", dir="/tmp" if os.path.isdir("/tmp") else None))
    state, target, reports = short / "state.db", short / "data", short / "reports"
    target.mkdir()
    base = [sys.executable, "-m", "fsyncbench", "powercut"]
    listen_tty, write_tty = Terminal(), Terminal()
    with open(tmp_path / "listen.out", "w") as out:
        listener = subprocess.Popen(
            [*base, "listen", "--bind", "127.0.0.1", "--port", "0", "--state", state],
            stdout=out,
            stderr=listen_tty.slave,
            env=env,
        )
    listen_tty.started()
    writer = None
    try:
        deadline = time.monotonic() + 60
        port = None
        while port is None and time.monotonic() < deadline:
            m = re.search(r"listening on 127\.0\.0\.1:(\d+)", listen_tty.text())
            port = m.group(1) if m else None
            time.sleep(0.05)
        assert port, listen_tty.text()
        to = f"127.0.0.1:{port}"
        secret = f"{state}.secret"
        with open(tmp_path / "write.out", "w") as out:
            writer = subprocess.Popen(
                [*base, "write", "--to", to, "--secret-file", secret, target],
                stdout=out,
                stderr=write_tty.slave,
                env=env,
            )
        write_tty.started()
        while time.monotonic() < deadline and not _status_line(write_tty.text()):
            time.sleep(0.1)
        time.sleep(1.5)  # a status line or two
        writer.kill()
        writer.wait(60)
        verify = _fsb(
            width, "powercut", "verify", "--from", to, "--secret-file", secret, target,
            "--report-dir", reports,
        )  # fmt: skip
        shown = subprocess.run(
            [sys.executable, "-m", "fsyncbench", "show", *reports.glob("*.json")],
            capture_output=True,
            text=True,
            env=env,
        )
    finally:
        for p in (writer, listener):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait(60)
        shutil.rmtree(short, ignore_errors=True)
    screens = {
        "listen": (tmp_path / "listen.out").read_text() + listen_tty.text(),
        "write": (tmp_path / "write.out").read_text() + write_tty.text(),
        "verify": verify.stdout + verify.stderr,
        "show": shown.stdout,
    }
    assert _status_line(screens["write"]), screens["write"]
    assert shown.returncode == 0, shown.stderr
    for name, text in screens.items():
        assert _long_lines(text, width) == [], name


# --------------------------------------------------------------------------- the layout


def test_a_table_that_fits_is_laid_out_as_it_is():
    lines = fit_table(["name", "n"], [["a", "1"], ["bb", "22"]], right={1}, cols=40)
    assert lines == ["name   n", "----  --", "a      1", "bb    22"]


def test_a_wide_table_wraps_its_headers_then_its_text_cells():
    headers = ["configuration", "kills causing duplicate writes (of 30)", "sync"]
    rows = [["wal/full", "3", "fdatasync (checkpoints only)"], ["wal/normal", "20", "fdatasync"]]
    lines = fit_table(headers, rows, right={1}, cols=45)
    assert max(map(len, lines)) <= 45 and lines[0].startswith("configuration")
    text = "\n".join(lines)
    assert "kills causing" in text and "30)" in text  # the header on more lines
    assert "fdatasync" in text and "(checkpoints" in text


def test_a_table_too_wide_for_any_wrapping_is_dealt_into_panels_repeating_its_key():
    headers = ["configuration", *(f"statistic {i}" for i in range(8))]
    rows = [["wal/full", *(f"{i}.00 ms" for i in range(8))], ["delete/off", *("-" * 8)]]
    lines = fit_table(headers, rows, right=set(range(1, 9)), cols=50)
    assert max(map(len, lines)) <= 50
    panels = "\n".join(lines).split("\n\n")
    assert len(panels) > 1
    assert all(p.startswith("configuration") and "wal/full" in p for p in panels)
    for i in range(8):
        assert sum(f"{i}.00 ms" in p for p in panels) == 1  # every value, once


def test_a_table_whose_key_and_one_column_cannot_share_a_line_is_stacked():
    headers = ["configuration", "verdict"]
    rows = [["x" * 30, "unverifiable: " + "word " * 12]]
    lines = fit_table(headers, rows, cols=40)
    assert max(map(len, lines)) <= 40
    assert lines[0] == "configuration: " + "x" * 25 or lines[0].startswith("configuration:")
    assert any(line.startswith("    verdict: unverifiable") for line in lines)


def test_key_value_pairs_wrap_their_values_under_the_value_column():
    lines = fit_pairs([("disk vda", "model ? (vendor 0x1af4), transport virtio, " * 3)], cols=50)
    assert max(map(len, lines)) <= 50 and len(lines) > 1
    assert all(line.startswith(" " * 10) for line in lines[1:])


def test_panels_repeat_every_key_column():
    headers = ["configuration", "stat", *(f"column {i}" for i in range(6))]
    rows = [["wal/full", "p50", *("1.00 ms",) * 6], ["", "p99", *("9.99 ms",) * 6]]
    lines = fit_table(headers, rows, right=set(range(2, 8)), cols=45, keys=2)
    panels = "\n".join(lines).split("\n\n")
    assert len(panels) > 1 and all("stat" in p and "p99" in p for p in panels)


# --------------------------------------------------------------------------- in process
# Fast twins of the slow tests above: no measuring; two synthetic run reports of the same
# configurations stand for the runs, and the powercut protocol's screens are made from
# recorded facts (its status line, its listener's start, a verify report).


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory) -> tuple[Path, list[Path]]:
    import sampled

    reports = tmp_path_factory.mktemp("fw")
    runs = [
        sampled.save(sampled.report(1.0, seed=0), reports / "a.json"),
        sampled.save(sampled.report(1.3, seed=1), reports / "b.json"),
    ]
    return reports, runs


@pytest.mark.parametrize("width", WIDTHS)
def test_every_comparison_and_gate_of_recorded_runs_fits(two_runs, width, capsys, monkeypatch):
    reports, runs = two_runs
    wal_full, wal_normal = "wal/full", "wal/normal"
    run = str(runs[-1])
    views = [
        ("show", run, "--fail-on", "volatile_cache,no_flush"),
        ("show", run, "--config", wal_full, "--fail-on", "volatile_cache,no_flush"),
        ("show", run, "--max-p99", "1us"),
        ("show", run, "--vs", f"{wal_normal},{wal_full}"),
        ("compare", str(runs[0]), run),
        ("compare", str(runs[0]), run, "--fail-on-regression", "10"),
        ("compare", str(runs[0]), run, "--vs", f"{wal_full},{wal_normal}"),
        ("compare", str(reports), "--kind", "run"),
    ]
    for argv in views:
        text = _shown(capsys, monkeypatch, width, *argv)
        assert _long_lines(text, width) == [], " ".join(argv[:1] + argv[2:])


@pytest.mark.parametrize("width", WIDTHS)
def test_a_tiny_run_and_powerloss_live_output_fits(tmp_path, width, capsys, monkeypatch):
    """What run prints as it finishes (its gates' lines and the saved files' line too), in
    process: one round of a few samples; and the smallest powerloss. (audit's and crash's
    live output is the slow test's alone: seconds each.)"""
    target = tmp_path / "target"
    target.mkdir()
    argv = (
        "run", target, "--samples", "5", "--rounds", "1", "--warmup", "1", "--no-primitives",
        "--journal-mode", "wal,truncate", "--synchronous", "normal,full",
        *this_platform.ONE_FULLFSYNC, "--vs", f"{WAL_FULL},{TRUNCATE_FULL}",
        "--max-p99", "1us", "--no-history", "--report-dir", tmp_path / "r",
    )  # fmt: skip
    text = _shown(capsys, monkeypatch, width, *argv)
    assert "Report written" in text and _long_lines(text, width) == []
    if width != min(WIDTHS):  # the narrowest is enough for the powerloss (it renders a page)
        return
    argv = (
        "powerloss", target, "--journal-mode", "wal", "--synchronous", "full", "--model",
        "synced-only", "--commits", "2", "--quiet", "--report-dir", tmp_path / "r",
    )  # fmt: skip
    text = _shown(capsys, monkeypatch, width, *argv)
    assert "Report written" in text and _long_lines(text, width) == []


@pytest.mark.parametrize("width", WIDTHS)
def test_the_powercut_screens_fit_in_process(tmp_path, width, capsys, monkeypatch):
    """The writer's status line on a terminal (every form, the longest configuration name,
    large figures, the listener reachable or not), the listener's start, and show of a
    verify report (pass and fail), at each width."""
    from test_cli_conventions import _powercut_report

    from fsyncbench.powercut.secret import ListenerSecret, ListenerStart, format_start
    from fsyncbench.powercut.writer import WriterStatus, format_status

    monkeypatch.setenv("COLUMNS", str(width))
    for config in ("wal/full", "wal/full/fullfsync", "truncate/extra/fullfsync"):
        for connected in (True, False):
            for scale in (1, 10**6):
                s = WriterStatus(
                    "a" * 32, config, 36.0 * scale, 92_028 * scale, 2_851.0 * scale,
                    1_234_567.0, 98_765_432.0, 9_876_543_210.0, 92_023 * scale, connected,
                )  # fmt: skip
                line = format_status(s, width - 1)  # as the writer calls it on a terminal
                assert len(line) <= width - 1 and _status_line(line), line
    short = Path(tempfile.mkdtemp(prefix="pc", dir="/tmp" if os.path.isdir("/tmp") else None))
    try:
        secret = ListenerSecret(None, short / "state.db.secret", True)  # type: ignore[arg-type]
        for bind in ("127.0.0.1", "0.0.0.0", "192.0.2.20"):
            start = ListenerStart((bind if bind != "0.0.0.0" else "0.0.0.0", 5400), bind, secret)
            text = format_start(start)
            assert _long_lines(text, width) == [], bind
    finally:
        shutil.rmtree(short, ignore_errors=True)
    for name, present in (("fail.json", [(1, 90)]), ("pass.json", [(1, 105)])):
        path = _powercut_report(tmp_path, present=present, name=name)
        for argv in (("show", path), ("show", path, "--verbose")):
            text = _shown(capsys, monkeypatch, width, *argv)
            assert _long_lines(text, width) == [], name
